//! `eiffel bench hqos`: hierarchical QoS, Eiffel against DPDK's `rte_sched`,
//! the same hierarchy and the same packets, side by side in one run.
//!
//! The hierarchy is `examples/policies/hqos.toml` (or `--policy`): a port, a
//! subport with a rate limit, pipes with rate limits, each with 13 traffic
//! classes in strict priority (12 one-queue classes, each capped, and best
//! effort), the best-effort class's 4 queues by weight: rte_sched's fixed
//! hierarchy, mirrored exactly. Eiffel runs it with the executor its shape
//! allows, the pipe executor (`PipeTree`; row `eiffel`), and with the general
//! policy tree (row `eiffel-tree`), both with one shaper and the same order
//! of packets; rte_sched (DPDK 22.11, built with the `dpdk` feature) gets the
//! file's limits as its subport profile and pipe profiles (one per pipe of the
//! file), its queue sizes as qsize, its weights as WRR weights.
//!
//! - **Throughput**: 4 subports of 16, 64 and 1024 pipes (1K, 4K and 64K
//!   queues), pipe `p` of a subport taking the file's pipe `p % 4` as its
//!   profile. Every rate is lifted to the port's so that no limit binds (the
//!   checks still run on every packet) and both run on the port's byte clock,
//!   never idle. One packet is queued per queue on average; then each step
//!   dequeues a burst of up to 32 and enqueues as many new packets, spread
//!   uniformly over the pipes and the queues of a pipe, 64 to 1500 bytes, from
//!   one precomputed stream both read in the same order. The cost of a packet
//!   (its enqueue and its dequeue) is the benchmark thread's CPU time over a
//!   run divided by its packets (time other processes hold the core is not
//!   counted; wall-clock time is shown beside it); the median of the
//!   repetitions is reported, as Mpps per core and ns per packet. The
//!   schedulers are built and warmed up side by side and their repetitions
//!   timed in rounds, one of each, the order rotating, so that a drift of the
//!   machine's speed moves the figures of a round alike; each Eiffel row's
//!   ratio to rte_sched is the median of its rounds' ratios.
//! - **Same work**: the file's hierarchy as written (one subport) under
//!   overload, for a warm-up and a measured window (its edges tapered over one
//!   200 ms class period, see [`shares::Window`]) of a virtual clock advanced
//!   in steps of 1 ms: every step offers bursts of 32 at 4 Mpps, then dequeues
//!   bursts of up to 32 until nothing more is eligible, so every queue stays
//!   backlogged and the limits decide. Both schedulers run on that clock
//!   (rte_sched through a virtual timestamp counter, `eiffel_dpdk::VirtualTsc`),
//!   so a run does not depend on when the machine lets the thread run: on a
//!   loaded machine, late wake-ups of a wall-clock loop shifted rte_sched's
//!   class periods and moved its class shares by up to 2.4%. The bytes each pipe, traffic class and best-effort
//!   queue sent must be the same share of the total in both schedulers, within
//!   2% (of the larger share, floored at 1%); the fluid reference is printed
//!   alongside. Without the `dpdk` feature Eiffel is compared with the fluid
//!   reference instead.

mod eiffel;
pub mod hierarchy;
pub mod pages;
pub mod shares;
pub mod stream;

#[cfg(feature = "dpdk")]
mod dpdk;

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use eiffel_policy::Policy;
use serde::Serialize;

use crate::clock::{ClockAround, CpuInstant};
use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};
use eiffel::Executor;
use hierarchy::Hierarchy;
pub use pages::Pages;
use shares::{Served, ShareRow, Window, TOLERANCE};

/// Packets per dequeue and enqueue call.
pub const BURST: usize = 32;

/// Packets per second offered under overload: 4 Mpps spread over the 64 queues
/// of the share check's hierarchy is 4 to 40 times what any queue may send, so
/// every queue stays backlogged.
pub const OFFERED_PPS: f64 = 4e6;

/// Bursts of 32 to offer in a step of the overload run that comes `since` after
/// the previous one: [`OFFERED_PPS`] over that time (at least one burst, at
/// most a second's worth).
#[must_use]
pub fn bursts_due(since: Duration) -> usize {
    let due = since.as_secs_f64().min(1.0) * OFFERED_PPS / BURST as f64;
    (due.ceil() as usize).max(1)
}

/// One step of the overload run's virtual clock: arrivals for this long, then
/// everything eligible is sent (rte_sched's qos_sched example polls about as
/// often).
pub const STEP: Duration = Duration::from_millis(1);

/// The instants of the overload run's steps over `window`: one [`STEP`]
/// apart from the first to the end of the window.
pub fn steps(window: Window) -> impl Iterator<Item = Duration> {
    let n = (window.end().as_nanos() / STEP.as_nanos()) as u32;
    (1..=n).map(|k| STEP * k)
}

/// Arrivals in the precomputed stream.
const STREAM_LEN: usize = 1 << 20;

/// Subports of the throughput hierarchies.
const SUBPORTS: u32 = 4;

/// Options of `eiffel bench hqos`.
#[derive(Debug, Clone, Args)]
pub struct HqosOpts {
    #[command(flatten)]
    common: CommonOpts,
    /// The hierarchy, a policy file shaped like rte_sched's.
    #[arg(long, default_value = "examples/policies/hqos.toml")]
    policy: PathBuf,
    /// Timed repetitions per size (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Sizes to measure, in queues (1024, 4096 or 65536; default all three).
    #[arg(long, value_delimiter = ',')]
    queues: Vec<usize>,
    /// Measure one scheduler only, without the share check (for profiling).
    #[arg(long, value_enum)]
    only: Option<Arch>,
    /// Pages of both schedulers' memory in the timed runs: as allocated (4 KB)
    /// or rebuilt on 2 MB pages (`MADV_COLLAPSE`, no hugetlbfs needed; where
    /// the kernel refuses, the run stays on 4 KB pages and says so).
    #[arg(long, value_enum, default_value_t = Pages::Small)]
    pages: Pages,
}

/// A scheduler of the comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Arch {
    /// Eiffel: the policy run by its pipe executor (`PipeTree`), which the
    /// hierarchy's shape allows (by the general tree where it does not).
    Eiffel,
    /// Eiffel's general policy tree on the same policy.
    EiffelTree,
    /// DPDK's rte_sched.
    RteSched,
}

/// Timings of one scheduler at one size.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// CPU ns of the benchmark thread per packet (enqueue + dequeue), each
    /// repetition.
    pub ns_per_packet: Vec<f64>,
    /// Wall-clock ns per packet, each repetition.
    pub wall_ns_per_packet: Vec<f64>,
    /// Packets dropped (a queue full).
    pub drops: u64,
    /// Bytes of the process on 2 MB pages during the timed runs (0 on 4 KB
    /// pages).
    pub huge_bytes: u64,
}

/// One scheduler's port of a throughput measurement, built, filled and
/// warmed up.
pub trait Repeat {
    /// Times one repetition of `packets` packets: CPU and wall-clock ns a
    /// packet.
    fn rep(&mut self, packets: u64) -> (f64, f64);
    /// Packets dropped so far (a queue full).
    fn drops(&self) -> u64;
}

/// `run.reps` timed repetitions of one scheduler's port, on `run.pages`: the
/// CPU and wall-clock ns a packet of each, and the bytes on 2 MB pages.
fn repeat(side: &mut dyn Repeat, run: Run) -> (Vec<f64>, Vec<f64>, u64) {
    let huge_bytes = run.pages.apply();
    let (mut cpu, mut wall) = (Vec::new(), Vec::new());
    for _ in 0..run.reps {
        let (c, w) = side.rep(run.packets);
        cpu.push(c);
        wall.push(w);
    }
    (cpu, wall, huge_bytes)
}

/// Times `run` (which returns the packets it moved): CPU and wall ns per packet.
/// CPU time is the thread's own (`CLOCK_THREAD_CPUTIME_ID`), so that time
/// other processes hold the core is not counted. (The kernel's schedstat,
/// read before, advances a running thread's time only at scheduler ticks:
/// 4 ms on a 250 Hz kernel, 5-10% of a `--quick` repetition.) Never inlined,
/// once a repetition: a profiler can collect the timed loops alone
/// (`valgrind --tool=callgrind --toggle-collect='eiffel_bench::hqos::timed*'`).
#[inline(never)]
fn timed(mut run: impl FnMut() -> u64) -> (f64, f64) {
    let wall = std::time::Instant::now();
    let cpu = CpuInstant::now();
    let sent = run().max(1) as f64;
    let cpu_ns = cpu.elapsed().as_nanos() as f64;
    let wall_ns = wall.elapsed().as_nanos() as f64;
    (cpu_ns / sent, wall_ns / sent)
}

/// One JSON record.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `eiffel` or `rte_sched`.
    arch: &'static str,
    /// Queues in the hierarchy.
    queues: usize,
    /// Pipes in the hierarchy.
    pipes: u32,
    /// Subports.
    subports: u32,
    /// Millions of packets per second of one core's CPU time (median).
    mpps: f64,
    /// CPU ns per packet, enqueue plus dequeue (median).
    ns_per_packet: f64,
    /// Every repetition's CPU ns per packet.
    reps_ns: Vec<f64>,
    /// Wall-clock ns per packet (median).
    wall_ns_per_packet: f64,
    /// Packets per repetition.
    packets: u64,
    /// Packets queued throughout.
    backlog: usize,
    /// Packets dropped because a queue was full.
    drops: u64,
    /// The pages the timed runs were on: `4k`, or `2m` when some memory was
    /// on 2 MB pages.
    pages: &'static str,
    /// MB of the process on 2 MB pages during the timed runs.
    huge_mb: f64,
    /// Eiffel's Mpps over rte_sched's (Eiffel's records, with DPDK): the
    /// median over the interleaved repetitions of each pair's ratio.
    speedup: Option<f64>,
    /// The core's clock in GHz ([`crate::clock::core_ghz`]), the mean of its
    /// measurements before and after the throughput runs; `None` off x86-64.
    core_ghz: Option<f64>,
}

/// The outcome of the share comparison.
#[derive(Debug, Clone, Serialize)]
pub struct ShareCheck {
    /// Every share compared.
    pub rows: Vec<ShareRow>,
    /// Whether the comparison was with rte_sched (else with the fluid reference).
    pub against_rte_sched: bool,
    /// The largest difference of a share.
    pub worst: f64,
    /// Eiffel's output over the window, bits per second.
    pub eiffel_bps: f64,
    /// rte_sched's output over the window, bits per second.
    pub rte_sched_bps: Option<f64>,
    /// The fluid reference's output, bits per second.
    pub fluid_bps: f64,
}

impl ShareCheck {
    /// Whether every share is within [`TOLERANCE`].
    #[must_use]
    pub fn passes(&self) -> bool {
        self.worst <= TOLERANCE
    }
}

/// Period over which rte_sched enforces the traffic classes' caps. Its credits
/// are reset, not accumulated, when a pipe is first visited after its period
/// ends, so a capped class loses what is left (up to a packet) and the time
/// until that visit, every period: 200 ms keeps that under 1% for caps of 5
/// Mbit/s and more on a loop visiting every pipe every [`STEP`] (DPDK's
/// qos_sched example uses 10 ms). The share window's edges taper over one period.
pub const TC_PERIOD: Duration = Duration::from_millis(200);

/// The overload run of the share check: 0.3 s of warm-up, then 3 s measured
/// (6 s without `quick`), edges tapered over one class period, on the virtual
/// clock.
#[must_use]
pub fn share_window(quick: bool) -> Window {
    Window {
        warmup: Duration::from_millis(300),
        length: Duration::from_secs(if quick { 3 } else { 6 }),
        ramp: TC_PERIOD,
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Loads the hierarchy of a policy file.
pub fn load(path: &Path) -> Result<Hierarchy, BenchError> {
    let policy = Policy::load(path)?;
    Ok(Hierarchy::from_policy(&policy)?)
}

/// Eiffel's bytes per queue on `h` under overload for `window` (the share
/// check's Eiffel side).
pub fn eiffel_shares(h: &Hierarchy, window: Window) -> Result<Served, BenchError> {
    eiffel::shares(h, window)
}

/// One scheduler's throughput on `subports` x `pipes` of `h` with every rate
/// lifted, one packet queued per queue: `reps` runs of `packets` (`None` for
/// rte_sched without the `dpdk` feature), on 4 KB pages.
pub fn throughput(
    arch: Arch,
    h: &Hierarchy,
    pipes: u32,
    packets: u64,
    reps: usize,
) -> Result<Option<Outcome>, BenchError> {
    throughput_on(arch, h, pipes, packets, reps, Pages::Small)
}

/// [`throughput`] with the timed runs on `pages`.
pub fn throughput_on(
    arch: Arch,
    h: &Hierarchy,
    pipes: u32,
    packets: u64,
    reps: usize,
    pages: Pages,
) -> Result<Option<Outcome>, BenchError> {
    let lifted = h.lifted();
    let backlog = Hierarchy::queues(SUBPORTS, pipes);
    let run = Run {
        backlog,
        packets,
        reps,
        pages,
    };
    match arch {
        Arch::Eiffel => {
            eiffel::throughput(&lifted, SUBPORTS, pipes, run, Executor::Chosen).map(Some)
        }
        Arch::EiffelTree => {
            eiffel::throughput(&lifted, SUBPORTS, pipes, run, Executor::Tree).map(Some)
        }
        Arch::RteSched => rte_sched_throughput(&lifted, pipes, run),
    }
}

/// What a throughput measurement runs: packets queued throughout, packets
/// per repetition, repetitions, and the pages of the timed runs.
#[derive(Debug, Clone, Copy)]
pub struct Run {
    /// Packets queued throughout.
    pub backlog: usize,
    /// Packets per timed repetition.
    pub packets: u64,
    /// Timed repetitions.
    pub reps: usize,
    /// Pages of the timed runs.
    pub pages: Pages,
}

/// Runs the share comparison: Eiffel and (with the `dpdk` feature) rte_sched on
/// `h` under overload for `window` each.
pub fn check_shares(h: &Hierarchy, window: Window) -> Result<ShareCheck, BenchError> {
    let e = eiffel::shares(h, window)?;
    let d: Option<Served> = on_own_thread(|| rte_sched_shares(h, window))?;
    let rows = shares::compare(&e, d.as_ref(), &shares::fluid(h));
    let worst = rows.iter().map(|r| r.difference).fold(0.0, f64::max);
    let bps = |s: &Served| s.total() * 8.0 / window.effective().as_secs_f64();
    Ok(ShareCheck {
        rows,
        against_rte_sched: d.is_some(),
        worst,
        eiffel_bps: bps(&e),
        rte_sched_bps: d.as_ref().map(bps),
        fluid_bps: shares::fluid(h).total() * 8.0,
    })
}

/// Runs `f` on a thread of its own: rte_sched's overload run virtualises the
/// timestamp counter of the thread it runs on, which the caller's thread then
/// never sees.
fn on_own_thread<T: Send>(
    f: impl FnOnce() -> Result<T, BenchError> + Send,
) -> Result<T, BenchError> {
    std::thread::scope(|s| {
        s.spawn(|| f().map_err(|e| e.to_string()))
            .join()
            .unwrap_or_else(|_| Err("the overload run panicked".to_string()))
    })
    .map_err(Into::into)
}

#[cfg(feature = "dpdk")]
fn rte_sched_shares(h: &Hierarchy, window: Window) -> Result<Option<Served>, BenchError> {
    dpdk::shares(h, window).map(Some)
}

#[cfg(not(feature = "dpdk"))]
fn rte_sched_shares(_: &Hierarchy, _: Window) -> Result<Option<Served>, BenchError> {
    Ok(None)
}

#[cfg(feature = "dpdk")]
fn rte_sched_throughput(
    h: &Hierarchy,
    pipes: u32,
    run: Run,
) -> Result<Option<Outcome>, BenchError> {
    dpdk::throughput(h, SUBPORTS, pipes, run).map(Some)
}

#[cfg(not(feature = "dpdk"))]
fn rte_sched_throughput(_: &Hierarchy, _: u32, _: Run) -> Result<Option<Outcome>, BenchError> {
    Ok(None)
}

/// The throughput of one size: each scheduler's timings, and each Eiffel
/// executor's Mpps over rte_sched's when both ran.
#[derive(Debug, Clone)]
pub struct Measured {
    /// rte_sched's timings, if it ran.
    pub rte_sched: Option<Outcome>,
    /// Eiffel's timings (its chosen executor), if it ran.
    pub eiffel: Option<Outcome>,
    /// The general tree's timings, if it ran.
    pub eiffel_tree: Option<Outcome>,
    /// The median over the interleaved repetitions of rte_sched's ns a packet
    /// over Eiffel's, when both ran.
    pub speedup: Option<f64>,
    /// The same for the general tree.
    pub tree_speedup: Option<f64>,
}

/// Both schedulers' throughput on `pipes` pipes per subport of `h` with every
/// rate lifted, built side by side and their `reps` repetitions of `packets`
/// timed in turns, the first of each pair alternating (Eiffel alone without
/// the `dpdk` feature), on 4 KB pages.
pub fn throughput_paired(
    h: &Hierarchy,
    pipes: u32,
    packets: u64,
    reps: usize,
) -> Result<Measured, BenchError> {
    let run = Run {
        backlog: Hierarchy::queues(SUBPORTS, pipes),
        packets,
        reps,
        pages: Pages::Small,
    };
    paired(&h.lifted(), pipes, run)
}

/// Measures `only` one scheduler, or all: with the `dpdk` feature, all in
/// the same process with their repetitions interleaved ([`paired`]).
fn measure(
    only: Option<Arch>,
    h: &Hierarchy,
    pipes: u32,
    run: Run,
) -> Result<Measured, BenchError> {
    let mut m = Measured {
        rte_sched: None,
        eiffel: None,
        eiffel_tree: None,
        speedup: None,
        tree_speedup: None,
    };
    match only {
        Some(Arch::Eiffel) => {
            m.eiffel = Some(eiffel::throughput(
                h,
                SUBPORTS,
                pipes,
                run,
                Executor::Chosen,
            )?);
        }
        Some(Arch::EiffelTree) => {
            m.eiffel_tree = Some(eiffel::throughput(h, SUBPORTS, pipes, run, Executor::Tree)?);
        }
        Some(Arch::RteSched) => m.rte_sched = rte_sched_throughput(h, pipes, run)?,
        None => return paired(h, pipes, run),
    }
    Ok(m)
}

/// The schedulers at one size, built and warmed up side by side, then timed
/// in turns: repetition `i` of each right after repetition `i` of the
/// others, the order rotating. A machine whose speed drifts (other work,
/// frequency, the placement of a virtual CPU) then moves the figures of one
/// round alike, where timing all of one scheduler's repetitions before the
/// other's put the drift into their ratio. Each Eiffel executor's speed-up is
/// the median of its rounds' ratios to rte_sched.
#[cfg(feature = "dpdk")]
fn paired(h: &Hierarchy, pipes: u32, run: Run) -> Result<Measured, BenchError> {
    let mut chosen = eiffel::Bench::new(h, SUBPORTS, pipes, run.backlog, Executor::Chosen)?;
    let mut tree = eiffel::Bench::new(h, SUBPORTS, pipes, run.backlog, Executor::Tree)?;
    dpdk::with_port(h, SUBPORTS, pipes, run.backlog, |rte| {
        let huge_bytes = run.pages.apply();
        let mut sides: [&mut dyn Repeat; 3] = [rte, &mut chosen, &mut tree];
        let times = interleave(&mut sides, run);
        let drops = sides[0].drops();
        let ratio = |k: usize| {
            let r: Vec<f64> = times[0]
                .0
                .iter()
                .zip(&times[k].0)
                .map(|(r, e)| r / e)
                .collect();
            Some(median(&r))
        };
        let (speedup, tree_speedup) = (ratio(1), ratio(2));
        let [(rc, rw), (ec, ew), (tc, tw)] = times;
        Measured {
            rte_sched: Some(Outcome {
                ns_per_packet: rc,
                wall_ns_per_packet: rw,
                drops,
                huge_bytes,
            }),
            eiffel: Some(chosen.outcome(ec, ew, huge_bytes)),
            eiffel_tree: Some(tree.outcome(tc, tw, huge_bytes)),
            speedup,
            tree_speedup,
        }
    })
}

/// Times `run.reps` rounds of one repetition of each side, each round
/// starting one side further along; CPU and wall ns a packet per side.
fn interleave<const N: usize>(
    sides: &mut [&mut dyn Repeat; N],
    run: Run,
) -> [(Vec<f64>, Vec<f64>); N] {
    let mut times: [(Vec<f64>, Vec<f64>); N] = std::array::from_fn(|_| (Vec::new(), Vec::new()));
    for i in 0..run.reps {
        for j in 0..N {
            let k = (i + j) % N;
            let (cpu, wall) = sides[k].rep(run.packets);
            times[k].0.push(cpu);
            times[k].1.push(wall);
        }
    }
    times
}

/// Without the `dpdk` feature: Eiffel's two executors, interleaved.
#[cfg(not(feature = "dpdk"))]
fn paired(h: &Hierarchy, pipes: u32, run: Run) -> Result<Measured, BenchError> {
    let mut chosen = eiffel::Bench::new(h, SUBPORTS, pipes, run.backlog, Executor::Chosen)?;
    let mut tree = eiffel::Bench::new(h, SUBPORTS, pipes, run.backlog, Executor::Tree)?;
    let huge_bytes = run.pages.apply();
    let mut sides: [&mut dyn Repeat; 2] = [&mut chosen, &mut tree];
    let [(ec, ew), (tc, tw)] = interleave(&mut sides, run);
    Ok(Measured {
        rte_sched: None,
        eiffel: Some(chosen.outcome(ec, ew, huge_bytes)),
        eiffel_tree: Some(tree.outcome(tc, tw, huge_bytes)),
        speedup: None,
        tree_speedup: None,
    })
}

fn record(arch: &'static str, pipes: u32, o: &Outcome, packets: u64, backlog: usize) -> Record {
    let ns = median(&o.ns_per_packet);
    Record {
        arch,
        queues: Hierarchy::queues(SUBPORTS, pipes),
        pipes: SUBPORTS * pipes,
        subports: SUBPORTS,
        mpps: 1e3 / ns,
        ns_per_packet: ns,
        reps_ns: o.ns_per_packet.clone(),
        wall_ns_per_packet: median(&o.wall_ns_per_packet),
        packets,
        backlog,
        drops: o.drops,
        pages: if o.huge_bytes > 0 { "2m" } else { "4k" },
        huge_mb: o.huge_bytes as f64 / f64::from(1u32 << 20),
        speedup: None,
        core_ghz: None,
    }
}

/// Runs `eiffel bench hqos`.
pub fn run(opts: &HqosOpts) -> Result<(), BenchError> {
    let h = load(&opts.policy)?;
    let lifted = h.lifted();
    let quick = opts.common.quick;
    let packets: u64 = if quick { 300_000 } else { 3_000_000 };
    let reps = opts.reps.max(1);
    let mut records = Vec::new();
    let sizes = [16u32, 64, 1024].into_iter().filter(|&p| {
        opts.queues.is_empty() || opts.queues.contains(&Hierarchy::queues(SUBPORTS, p))
    });
    let mut clock = ClockAround::start();
    for pipes in sizes {
        let backlog = Hierarchy::queues(SUBPORTS, pipes);
        let run = Run {
            backlog,
            packets,
            reps,
            pages: opts.pages,
        };
        let m = measure(opts.only, &lifted, pipes, run)?;
        let dr = m
            .rte_sched
            .as_ref()
            .map(|d| record("rte_sched", pipes, d, packets, backlog));
        records.extend(dr);
        if let Some(e) = &m.eiffel {
            let mut er = record("eiffel", pipes, e, packets, backlog);
            er.speedup = m.speedup;
            records.push(er);
        }
        if let Some(e) = &m.eiffel_tree {
            let mut er = record("eiffel-tree", pipes, e, packets, backlog);
            er.speedup = m.tree_speedup;
            records.push(er);
        }
    }
    clock.finish();
    for r in &mut records {
        r.core_ghz = clock.mean();
    }
    if opts.only.is_some() {
        if opts.common.json {
            print_results(&records)?;
        } else {
            clock.print()?;
            crate::out!("{}", throughput_table(&records).render());
        }
        return Ok(());
    }
    let check = check_shares(&h, share_window(quick))?;
    if opts.common.json {
        #[derive(Serialize)]
        struct Out<'a> {
            throughput: &'a [Record],
            shares: &'a ShareCheck,
        }
        print_results(&[Out {
            throughput: &records,
            shares: &check,
        }])?;
    } else {
        print_tables(&opts.policy, &records, &check, &clock)?;
    }
    if !check.passes() {
        return Err(format!(
            "shares differ by {:.2}% (more than {:.0}%)",
            check.worst * 100.0,
            TOLERANCE * 100.0
        )
        .into());
    }
    Ok(())
}

fn print_tables(
    policy: &Path,
    records: &[Record],
    check: &ShareCheck,
    clock: &ClockAround,
) -> std::io::Result<()> {
    crate::outln!(
        "hierarchical QoS: {} (4 subports; rates lifted to the port's), bursts of {BURST}, 64-1500 B",
        policy.display()
    );
    clock.print()?;
    crate::out!("{}", throughput_table(records).render());
    crate::outln!();
    print_share_table(check)?;
    Ok(())
}

fn throughput_table(records: &[Record]) -> Table {
    let mut t = Table::new([
        "arch",
        "queues",
        "pipes",
        "Mpps",
        "ns/pkt",
        "wall ns",
        "drops",
        "pages (MB on 2M)",
        "vs rte_sched",
    ]);
    for r in records {
        t.row([
            r.arch.to_string(),
            r.queues.to_string(),
            r.pipes.to_string(),
            fmt_f(r.mpps, 2),
            fmt_f(r.ns_per_packet, 1),
            fmt_f(r.wall_ns_per_packet, 1),
            r.drops.to_string(),
            format!("{} ({:.0})", r.pages, r.huge_mb),
            r.speedup.map_or(String::new(), |s| format!("{s:.2}x")),
        ]);
    }
    t
}

fn print_share_table(check: &ShareCheck) -> std::io::Result<()> {
    let other = if check.against_rte_sched {
        "rte_sched"
    } else {
        "fluid (no DPDK)"
    };
    crate::outln!(
        "same work under overload: shares of the bytes sent, eiffel vs {other}; output eiffel {:.1} Mbit/s, rte_sched {}, fluid {:.1} Mbit/s",
        check.eiffel_bps / 1e6,
        check.rte_sched_bps.map_or("-".into(), |b| format!("{:.1} Mbit/s", b / 1e6)),
        check.fluid_bps / 1e6
    );
    let mut t = Table::new(["share", "eiffel %", "rte_sched %", "fluid %", "diff %"]);
    for r in &check.rows {
        t.row([
            r.what.clone(),
            fmt_f(r.eiffel * 100.0, 2),
            r.rte_sched.map_or("-".into(), |d| fmt_f(d * 100.0, 2)),
            fmt_f(r.fluid * 100.0, 2),
            fmt_f(r.difference * 100.0, 2),
        ]);
    }
    crate::out!("{}", t.render());
    crate::outln!(
        "worst difference {:.2}% (tolerance {:.0}%)",
        check.worst * 100.0,
        TOLERANCE * 100.0
    );
    Ok(())
}
