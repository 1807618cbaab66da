//! `eiffel bench pspat`: PSPAT section 6 on this machine, PSPAT against the same
//! scheduler behind one lock (the tc architecture), measured in the same run.
//!
//! - `throughput` (Fig. 9, 10): scheduling decisions per second for 1..100 greedy
//!   client threads, 60-byte packets, a link fast enough never to limit (500
//!   Gbit/s), a no-op transmit.
//! - `stability` (section 6.5): two greedy clients with weights 10:1 sending above
//!   the link rate; the shares each architecture delivers.
//! - `latency` (Table 3, Fig. 11): one client sending 4000 packets/s with 50 times
//!   the weight of greedy clients; the victim's one-way latency percentiles.
//!
//! Placement: PSPAT's arbiter is pinned to one CPU and its clients share the other
//! (`--arbiter-cpu`, `--client-cpu`); the locked clients are spread over all CPUs,
//! since that architecture has no arbiter and every sender runs the scheduler.

mod latency;
mod stability;
mod throughput;

use crate::report::print_results;
use crate::{BenchError, CommonOpts};
use clap::{Args, ValueEnum};
use eiffel_pspat::affinity::{cpu_count, pin_current_thread};
use eiffel_pspat::{BatchError, Config, Locked, Pspat, SendError, Transmit};
use eiffel_sched::{Fifo, FlowId, Packet, Scheduler};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Options of `eiffel bench pspat`.
#[derive(Debug, Clone, Args)]
pub struct PspatOpts {
    #[command(flatten)]
    pub common: CommonOpts,
    /// Cases to run.
    #[arg(long, value_delimiter = ',', default_values = ["throughput", "stability", "latency"])]
    pub cases: Vec<CaseKind>,
    /// Client thread counts for the throughput sweep (default 1,2,4,8,16,32,64,100).
    #[arg(long, value_delimiter = ',')]
    pub clients: Option<Vec<usize>>,
    /// Scheduling algorithm for every case.
    #[arg(long, value_enum, default_value_t = SchedKind::Qfq)]
    pub sched: SchedKind,
    /// CPU the PSPAT arbiter is pinned to.
    #[arg(long, default_value_t = 1)]
    pub arbiter_cpu: usize,
    /// CPU the PSPAT clients share.
    #[arg(long, default_value_t = 0)]
    pub client_cpu: usize,
    /// Arbiter round interval (Delta_A) in nanoseconds.
    #[arg(long, default_value_t = 1000)]
    pub round_ns: u64,
    /// Packets each PSPAT client mailbox holds: the most a client has inside the
    /// runtime, hence how long a link-limited run stays busy while the arbiter or
    /// the clients are descheduled. Default per case: 254 for throughput (the link
    /// never limits; a small footprint), 4094 for stability, 1022 for latency.
    #[arg(long)]
    pub mailbox: Option<usize>,
    /// Real-time FIFO priority for the PSPAT arbiter (0: ordinary scheduling).
    /// PSPAT assumes the arbiter owns its core. In the ordinary class it does not
    /// on a shared machine: Linux gives each session (autogroup) a share of the
    /// machine and splits it over CPUs by load, so with 100 clients on one CPU the
    /// arbiter's CPU gets a sliver of the share when another session runs there.
    /// The cost: Linux stops a real-time thread that never sleeps for 50 ms every
    /// second (RT throttling), visible in the latency tail (p99, max).
    #[arg(long, default_value_t = 1)]
    pub arbiter_rt: i32,
    /// Nice value for this process's scheduling group (Linux autogroup) during the
    /// run, restored afterwards; 0 leaves it. With autogroups, processes of other
    /// sessions get an equal share of each CPU whatever the threads' own nice
    /// values, so on a shared machine the arbiter would own only part of its core.
    /// Needs CAP_SYS_NICE for negative values; refused is a warning.
    #[arg(long, default_value_t = -10, allow_hyphen_values = true)]
    pub group_nice: i32,
    /// Runs of each point; the table shows their median and spread, and a spread
    /// over 10% is warned about. Default 3 with --quick, 5 otherwise.
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Packets a greedy client hands over per call (`Client::send_batch`, and one
    /// lock acquisition for the locked baseline); 1 sends one by one.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Throughput: link time in nanoseconds one aggregated decision may stand for
    /// (PSPAT section 6.3.1; the paper suggests 500 to 1000); 0 skips the
    /// aggregated runs.
    #[arg(long, default_value_t = 1000)]
    pub aggregate_ns: u64,
    /// Prints the arbiter's counters for every run (time in rounds, packets per
    /// round, empty rounds, mailbox visits and occupancy, sleeps) on stderr.
    #[arg(long)]
    pub diagnose: bool,
    /// Tw: microseconds the arbiter spins without work before it sleeps. The
    /// default outlasts the victim's 250 us gaps, so the arbiter busy-waits as in
    /// the paper's measurements.
    #[arg(long, default_value_t = 1000)]
    pub idle_spin_us: u64,
}

/// The experiments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CaseKind {
    /// Decisions per second against the number of clients.
    Throughput,
    /// 10:1 shares under overload.
    Stability,
    /// Latency of a high-weight low-rate client among greedy ones.
    Latency,
}

/// Scheduling algorithms the benchmark can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchedKind {
    /// Quick Fair Queueing (the paper's scheduler).
    Qfq,
    /// Deficit round robin.
    Drr,
    /// First in, first out: ignores weights.
    Fifo,
}

impl SchedKind {
    fn name(self) -> &'static str {
        match self {
            SchedKind::Qfq => "qfq",
            SchedKind::Drr => "drr",
            SchedKind::Fifo => "fifo",
        }
    }

    fn weighted(self) -> bool {
        match self {
            SchedKind::Qfq | SchedKind::Drr => true,
            SchedKind::Fifo => false,
        }
    }
}

/// A scheduler the benchmark can build for a set of weighted flows.
trait BenchSched: Scheduler + Send + 'static {
    /// A scheduler for `flows` (id, weight), each flow holding at most
    /// `per_flow` packets (a per-flow limit where the algorithm has one, as a tc
    /// class has; otherwise a total of `flows.len() * per_flow`). PSPAT's mailboxes
    /// bound each client to the same number, so neither architecture lets one
    /// client take another's buffer space.
    fn build(flows: &[(FlowId, u32)], per_flow: usize) -> Result<Self, BenchError>
    where
        Self: Sized;

    /// Largest packet each flow accepts: room for an aggregated decision of
    /// [`AGGREGATE_MAX_BYTES`] (the benchmarks' packets are 60 and 1500 bytes).
    fn max_packet() -> u32 {
        AGGREGATE_MAX_BYTES
    }
}

/// Most bytes one aggregated decision stands for (the largest packet QFQ takes).
const AGGREGATE_MAX_BYTES: u32 = 1 << 16;

impl BenchSched for Fifo {
    fn build(flows: &[(FlowId, u32)], per_flow: usize) -> Result<Self, BenchError> {
        Ok(Fifo::new(flows.len() * per_flow))
    }
}

/// Builds a weighted per-flow scheduler with a per-flow packet limit.
macro_rules! weighted_bench_sched {
    ($t:ty) => {
        impl BenchSched for $t {
            fn build(flows: &[(FlowId, u32)], per_flow: usize) -> Result<Self, BenchError> {
                use eiffel_sched::FlowScheduler;
                let mut q = <$t>::new(flows.len() as u32, flows.len() * per_flow)?;
                for &(f, w) in flows {
                    let mut cfg = eiffel_sched::FlowConfig::weight(w).limit(per_flow as u32);
                    cfg.max_packet = Self::max_packet();
                    q.add_flow(f, cfg)?;
                }
                Ok(q)
            }
        }
    };
}

weighted_bench_sched!(eiffel_sched::Qfq);
weighted_bench_sched!(eiffel_sched::Drr);

/// Runs `$body` with `$s` bound to the scheduler type chosen by `$kind`.
macro_rules! with_sched {
    ($kind:expr, $s:ident => $body:expr) => {
        match $kind {
            SchedKind::Qfq => {
                type $s = eiffel_sched::Qfq;
                $body
            }
            SchedKind::Drr => {
                type $s = eiffel_sched::Drr;
                $body
            }
            SchedKind::Fifo => {
                type $s = Fifo;
                $body
            }
        }
    };
}

/// One result record (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    case: &'static str,
    arch: &'static str,
    clients: usize,
    sched: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mdps: Option<f64>,
    /// Packets per second, where it differs from decisions (aggregation).
    #[serde(skip_serializing_if = "Option::is_none")]
    mpps: Option<f64>,
    /// (max - min) / median of the runs, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    spread_pct: Option<f64>,
    /// Every run's figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<Vec<f64>>,
    /// Median cross-CPU round trip between the arbiter's and the clients' CPUs.
    #[serde(skip_serializing_if = "Option::is_none")]
    rtt_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    link_gbps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    delivered_mpps: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_heavy: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_expected: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    share_error_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    latency_us: Option<Percentiles>,
}

impl Record {
    fn new(case: &'static str, arch: &'static str, clients: usize, sched: SchedKind) -> Self {
        Record {
            case,
            arch,
            clients,
            sched: sched.name(),
            mdps: None,
            mpps: None,
            spread_pct: None,
            runs: None,
            rtt_ns: None,
            link_gbps: None,
            delivered_mpps: None,
            share_heavy: None,
            share_expected: None,
            share_error_pct: None,
            latency_us: None,
        }
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Serialize)]
struct Percentiles {
    samples: u64,
    min: f64,
    p10: f64,
    p50: f64,
    p90: f64,
    p99: f64,
    max: f64,
}

/// Durations of one run.
#[derive(Debug, Clone, Copy)]
struct Timing {
    warmup: Duration,
    window: Duration,
}

/// Where threads go.
#[derive(Debug, Clone, Copy)]
struct Placement {
    arbiter_cpu: usize,
    client_cpu: usize,
    cpus: usize,
}

impl Timing {
    /// Warm-up and window of one run of `case`.
    fn of(case: CaseKind, quick: bool) -> Self {
        let ms = Duration::from_millis;
        let (warmup, window) = match (case, quick) {
            (CaseKind::Throughput, true) => (ms(100), ms(300)),
            (CaseKind::Stability, true) => (ms(100), ms(400)),
            (CaseKind::Latency, true) => (ms(100), ms(500)),
            (CaseKind::Throughput | CaseKind::Stability, false) => (ms(300), ms(2000)),
            (CaseKind::Latency, false) => (ms(300), ms(3000)),
        };
        Timing { warmup, window }
    }
}

/// Refuses option values the benchmark cannot run with.
fn check(opts: &PspatOpts) -> Result<(), BenchError> {
    if opts.mailbox.is_some_and(|m| m == 0 || m > 1 << 16) {
        return Err("--mailbox: must be in 1..=65536".into());
    }
    if opts.batch == 0 || opts.batch > 4096 {
        return Err("--batch: must be in 1..=4096".into());
    }
    if opts.repeat.is_some_and(|r| r == 0 || r > 100) {
        return Err("--repeat: must be in 1..=100".into());
    }
    if opts.aggregate_ns > 1_000_000_000 {
        return Err("--aggregate-ns: at most 1 s (1000000000)".into());
    }
    if opts
        .clients
        .as_ref()
        .is_some_and(|c| c.iter().any(|&n| n == 0 || n > 4096))
    {
        return Err("--clients: each count must be in 1..=4096".into());
    }
    Ok(())
}

/// Warns when other processes load the machine before the run.
fn note_load(cpus: usize) {
    let Ok(load) = std::fs::read_to_string("/proc/loadavg") else {
        return;
    };
    let one: f64 = load
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    if one > 0.5 {
        eprintln!(
            "note: load average {one:.2} on {cpus} cpus before the run: other processes share \
             the cpus the arbiter and the clients are pinned to, and the figures suffer"
        );
    }
}

/// Runs the benchmark.
pub fn run(mut opts: PspatOpts) -> Result<(), BenchError> {
    check(&opts)?;
    let cpus = cpu_count();
    if cpus < 2 {
        eprintln!(
            "warning: {cpus} CPU: the arbiter and the clients share it; figures are not meaningful"
        );
    }
    let place = Placement {
        arbiter_cpu: opts.arbiter_cpu,
        client_cpu: opts.client_cpu,
        cpus,
    };
    let quick = opts.common.quick;
    opts.repeat = Some(opts.repeat.unwrap_or(if quick { 3 } else { 5 }));
    note_load(cpus);
    let _group = GroupNice::set(opts.group_nice);
    let mut records = Vec::new();
    for &case in &opts.cases {
        let timing = Timing::of(case, quick);
        match case {
            CaseKind::Throughput => {
                let clients = opts.clients.clone().unwrap_or_else(|| {
                    if quick {
                        vec![1, 4, 16, 32, 100]
                    } else {
                        vec![1, 2, 4, 8, 16, 32, 64, 100]
                    }
                });
                with_sched!(opts.sched, S => throughput::throughput::<S>(&opts, place, timing, &clients, &mut records)?);
            }
            CaseKind::Stability => {
                with_sched!(opts.sched, S => stability::stability::<S>(&opts, place, timing, &mut records)?);
            }
            CaseKind::Latency => {
                with_sched!(opts.sched, S => latency::latency::<S>(&opts, place, timing, &mut records)?);
            }
        }
    }
    if opts.common.json {
        print_results(&records)?;
    }
    Ok(())
}

/// This process's autogroup nice value, raised for the run and restored on drop.
struct GroupNice {
    previous: Option<i32>,
}

impl GroupNice {
    const PATH: &'static str = "/proc/self/autogroup";

    fn read() -> Option<i32> {
        // "/autogroup-5 nice 0"
        let text = std::fs::read_to_string(Self::PATH).ok()?;
        text.split_whitespace().last()?.parse().ok()
    }

    fn set(nice: i32) -> Self {
        if nice == 0 {
            return GroupNice { previous: None };
        }
        let previous = Self::read();
        match std::fs::write(Self::PATH, nice.to_string()) {
            Ok(()) => GroupNice { previous },
            Err(e) => {
                eprintln!("warning: cannot set the scheduling group's nice to {nice}: {e}");
                GroupNice { previous: None }
            }
        }
    }
}

impl Drop for GroupNice {
    fn drop(&mut self) {
        if let Some(prev) = self.previous {
            let _ = std::fs::write(Self::PATH, prev.to_string());
        }
    }
}

fn pspat_config(
    opts: &PspatOpts,
    place: Placement,
    clients: usize,
    link_bps: u64,
    mailbox: usize,
) -> Config {
    Config {
        link_rate_bps: link_bps,
        round_interval: Duration::from_nanos(opts.round_ns),
        idle_spin: Duration::from_micros(opts.idle_spin_us),
        max_clients: clients,
        mailbox_capacity: mailbox,
        arbiter_cpu: Some(place.arbiter_cpu),
        arbiter_realtime: (opts.arbiter_rt != 0).then_some(opts.arbiter_rt),
        ..Config::default()
    }
}

/// Pins the calling thread, warning once per run if it cannot.
fn pin(cpu: usize, warned: &AtomicBool) {
    if let Err(e) = pin_current_thread(cpu) {
        if !warned.swap(true, Ordering::Relaxed) {
            eprintln!("warning: cannot pin to cpu {cpu}: {e}; threads float");
        }
    }
}

fn warn_placement<S, X>(rt: &Pspat<S, X>) {
    let placement = rt.placement();
    if let Some(e) = placement.arbiter {
        eprintln!("warning: {e}; the arbiter floats");
    }
    if let Some(e) = placement.arbiter_priority {
        eprintln!("warning: {e}; the arbiter shares its cpu with whatever runs there");
    }
}

/// How long a PSPAT client with a full mailbox spins before it yields the CPU.
/// Long enough for the arbiter to release a line even on a slow link (a 60-byte
/// packet takes 1 us at 480 Mbit/s), so a client does not hand its CPU to an
/// unrelated process for a whole time slice while its mailbox is about to drain;
/// short against a time slice, so clients sharing a CPU still take turns.
const FULL_SPIN: Duration = Duration::from_micros(20);

/// Waiting on a full mailbox: spins, and yields once it has spun for
/// [`FULL_SPIN`]. The clock is read every 64 spins only.
#[derive(Default)]
struct FullWait {
    since: Option<Instant>,
    spins: u32,
}

impl FullWait {
    fn wait(&mut self) {
        std::hint::spin_loop();
        self.spins = self.spins.wrapping_add(1);
        if self.spins % 64 == 0 {
            let since = *self.since.get_or_insert_with(Instant::now);
            if since.elapsed() >= FULL_SPIN {
                self.since = None;
                thread::yield_now();
            }
        }
    }

    fn sent(&mut self) {
        self.since = None;
    }
}

/// Greedy PSPAT client: sends copies of `pkt`, `batch` at a time (one by one for
/// 1), until `stop`; on a full mailbox it spins for up to [`FULL_SPIN`], then
/// yields.
fn pspat_greedy(mut client: eiffel_pspat::Client, pkt: Packet, batch: usize, stop: &AtomicBool) {
    let mut wait = FullWait::default();
    if batch <= 1 {
        while !stop.load(Ordering::Relaxed) {
            for _ in 0..64 {
                match client.send(pkt) {
                    Ok(()) | Err(SendError::PolicyDrops { .. }) => wait.sent(),
                    Err(SendError::Full(_)) => wait.wait(),
                    Err(SendError::Closed(_)) => return,
                }
            }
        }
        return;
    }
    let pkts = vec![pkt; batch];
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..8 {
            match client.send_batch(&pkts) {
                Ok(0) => wait.wait(),
                Ok(_) | Err(BatchError::PolicyDrops { .. }) => wait.sent(),
                Err(BatchError::Closed) => return,
            }
        }
    }
}

/// Greedy locked client: sends copies of `pkt`, `batch` per acquisition of the
/// lock, until `stop`; drops are ignored (the queue is full, which is the point).
fn locked_greedy<S: Scheduler, X: Transmit>(
    locked: &Locked<S, X>,
    pkt: Packet,
    batch: usize,
    stop: &AtomicBool,
) {
    let pkts = vec![pkt; batch.max(1)];
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..8 {
            if batch <= 1 {
                let _ = locked.send(pkt);
            } else {
                let _ = locked.send_batch(&pkts);
            }
        }
    }
}
