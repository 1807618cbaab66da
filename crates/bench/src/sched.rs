//! `eiffel bench sched`: qfq.txt Table 4, the cost of an enqueue/dequeue pair, and
//! the QFQ authors' balanced controller workload.
//!
//! As in the paper (section 7.1), a controller generates packets and drives the
//! scheduler with a programmed sequence of requests ([`workload`]); the time of a
//! whole run divided by the number of pairs gives the cost of one pair, generator
//! included. The NONE row is the generator alone, its packets stored in and taken
//! from a plain ring (`VecDeque`), measured in the same run: subtracting it gives
//! the schedulers' own cost ("net"), and the ratios are taken on net costs.
//!
//! - Schedulers: NONE, FIFO, DRR (quantum 1500 bytes), QFQ (`L` = 1500), WF²Q+.
//! - Flows: 1, 8, 64, 512, 4096, 32768 of weight 1, and the mixed set
//!   (weight:flows) 1:32768, 2:4096, 4:2048, 8:1024, 128:16, 1024:1 (39953 flows).
//! - Patterns: SMALL, LARGE, FULL (packets of random flows and lengths) and
//!   BALANCED (1000-byte packets to the least-backlogged flow, hysteresis between
//!   0 and 20N queued), described in [`workload`].
//! - Each configuration builds every scheduler, runs an untimed warm-up on each
//!   (FULL first fills the scheduler to the middle of its range, untimed), then
//!   three rounds in which each scheduler in turn runs one timed repetition of at
//!   least a third of 5 million pairs (150 thousand with `--quick`), burst
//!   patterns in whole cycles; each scheduler's fastest repetition is reported,
//!   since other work on the machine only ever adds time, and the rounds spread
//!   that work's bursts over all the schedulers alike. A burst cycle longer than
//!   all the pairs (LARGE with 32768 flows: 983040 pairs) is timed once. Times
//!   are the thread's CPU time ([`crate::clock`]).
//! - `--c-harness PATH` adds, for BALANCED, the QFQ authors' C schedulers run by
//!   their own test program in the same run ([`authors`]).

pub mod authors;
pub mod workload;

use std::path::PathBuf;

use clap::Args;
use eiffel_sched::{Drr, Fifo, FlowConfig, FlowScheduler, PerFlow, Qfq, Wf2qPlus};
use serde::Serialize;

use self::workload::{drive, fill, Generator, Load, Ring, Sched, Target};
use crate::clock::{ClockAround, CpuInstant};

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// Whose code a record measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Implementation {
    /// Eiffel's schedulers.
    Eiffel,
    /// The QFQ authors' C schedulers and test program ([`authors`]).
    AuthorsC,
}

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `eiffel` or `authors_c`.
    implementation: Implementation,
    /// `none`, `fifo`, `drr`, `qfq` or `wf2q+`.
    scheduler: &'static str,
    /// Number of flows.
    flows: u32,
    /// `small`, `large`, `full`, `balanced`, or `mixed` for the mixed-weight flow
    /// set.
    pattern: &'static str,
    /// For the mixed set, the load pattern (`small`, `large`, `full`, `balanced`).
    load: &'static str,
    /// Nanoseconds per enqueue/dequeue pair, generator included.
    ns_per_pair: f64,
    /// `ns_per_pair` minus the NONE row of the same configuration.
    net_ns_per_pair: f64,
    /// Pairs timed.
    pairs: u64,
    /// The core's clock in GHz ([`crate::clock::core_ghz`]), the mean of its
    /// measurements before and after the run; `None` off x86-64.
    core_ghz: Option<f64>,
}

/// The flow set of a configuration: `(weight, flows)` classes.
#[derive(Clone, Debug)]
struct FlowSet {
    classes: Vec<(u32, u32)>,
    mixed: bool,
}

impl FlowSet {
    fn uniform(n: u32) -> Self {
        FlowSet {
            classes: vec![(1, n)],
            mixed: false,
        }
    }

    fn mixed() -> Self {
        FlowSet {
            classes: vec![
                (1, 32768),
                (2, 4096),
                (4, 2048),
                (8, 1024),
                (128, 16),
                (1024, 1),
            ],
            mixed: true,
        }
    }

    fn flows(&self) -> u32 {
        self.classes.iter().map(|&(_, n)| n).sum()
    }

    fn weights(&self) -> impl Iterator<Item = u32> + '_ {
        self.classes
            .iter()
            .flat_map(|&(w, n)| std::iter::repeat_n(w, n as usize))
    }
}

/// Timed repetitions per configuration; the fastest is kept, to shed the noise of
/// other work on the machine.
const REPS: u64 = 3;

/// One scheduler of a configuration, warmed up, timed one repetition at a time.
trait Timed {
    /// Times one repetition of about `pairs` pairs: ns per pair and pairs done.
    fn rep(&mut self, pairs: u64) -> (f64, u64);
}

/// A target with its own generator and backlog.
struct Runner<T> {
    t: T,
    g: Generator,
    load: Load,
    n: u64,
    backlog: u64,
}

impl<T: Target> Runner<T> {
    /// Builds the runner and warms it up: FULL fills to the middle of its range
    /// and runs a tenth of the pairs, the burst patterns one cycle (none when one
    /// cycle exceeds the pairs: its memory was written when the scheduler was
    /// built).
    fn new(mut t: T, set: &FlowSet, load: Load, pairs: u64) -> Self {
        let n = u64::from(set.flows());
        let mut g = Generator::new(set.flows(), 0x9e37_79b9_7f4a_7c15 ^ n);
        let mut backlog = 0;
        if load == Load::Full {
            backlog = fill(&mut t, &mut g, n);
            drive(&mut t, &mut g, load, n, pairs / 10, &mut backlog);
        } else if load.cycle(n) < pairs {
            drive(&mut t, &mut g, load, n, 1, &mut backlog);
        }
        Runner {
            t,
            g,
            load,
            n,
            backlog,
        }
    }
}

impl<T: Target> Timed for Runner<T> {
    fn rep(&mut self, pairs: u64) -> (f64, u64) {
        let start = CpuInstant::now();
        let done = drive(
            &mut self.t,
            &mut self.g,
            self.load,
            self.n,
            pairs,
            &mut self.backlog,
        );
        (start.elapsed().as_nanos() as f64 / done as f64, done)
    }
}

/// Times every runner in rounds: each runs one repetition per round. Per runner,
/// the lowest ns per pair and the pairs timed in all. A configuration whose burst
/// cycle alone exceeds `pairs` runs one round of one cycle.
fn measure_all(
    runners: &mut [Box<dyn Timed + '_>],
    load: Load,
    n: u64,
    pairs: u64,
) -> Vec<(f64, u64)> {
    let reps = if load.cycle(n) >= pairs { 1 } else { REPS };
    let mut out = vec![(f64::INFINITY, 0); runners.len()];
    for _ in 0..reps {
        for (r, o) in runners.iter_mut().zip(out.iter_mut()) {
            let (ns, done) = r.rep(pairs / reps);
            *o = (o.0.min(ns), o.1 + done);
        }
    }
    out
}

fn configured<C: eiffel_sched::PacketCore>(
    mut s: PerFlow<C>,
    set: &FlowSet,
) -> Result<PerFlow<C>, BenchError> {
    for (f, w) in set.weights().enumerate() {
        s.add_flow(
            f as u32,
            FlowConfig::weight(w).max_packet(1500).quantum(1500 * w),
        )?;
    }
    Ok(s)
}

/// Measures every scheduler on one flow set and load, in rounds.
fn configuration(
    set: &FlowSet,
    load: Load,
    pairs: u64,
    out: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let n = set.flows();
    // Room for the largest backlog (30N) plus one burst in flight.
    let cap = 30 * n as usize + 16;
    let names = ["none", "fifo", "drr", "qfq", "wf2q+"];
    let mut runners: Vec<Box<dyn Timed>> = vec![
        Box::new(Runner::new(Ring::new(cap), set, load, pairs)),
        Box::new(Runner::new(Sched(Fifo::new(cap)), set, load, pairs)),
        Box::new(Runner::new(
            Sched(configured(Drr::new(n, cap)?, set)?),
            set,
            load,
            pairs,
        )),
        Box::new(Runner::new(
            Sched(configured(Qfq::with_max_packet(n, cap, 1500)?, set)?),
            set,
            load,
            pairs,
        )),
        Box::new(Runner::new(
            Sched(configured(Wf2qPlus::new(n, cap)?, set)?),
            set,
            load,
            pairs,
        )),
    ];
    let results = measure_all(&mut runners, load, u64::from(n), pairs);
    drop(runners);
    push_records(out, Implementation::Eiffel, set, load, &names, &results);
    Ok(())
}

/// The authors' C schedulers on BALANCED with `n` flows ([`authors`]).
fn authors_configuration(
    path: &std::path::Path,
    n: u32,
    pairs: u64,
    out: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let mut names = Vec::new();
    let mut results = Vec::new();
    for alg in authors::ALGS {
        names.push(alg.ours);
        results.push(authors::measure(path, alg, n, pairs)?);
    }
    push_records(
        out,
        Implementation::AuthorsC,
        &FlowSet::uniform(n),
        Load::Balanced,
        &names,
        &results,
    );
    Ok(())
}

/// Appends one record per scheduler; `results[0]` is NONE.
fn push_records(
    out: &mut Vec<Record>,
    implementation: Implementation,
    set: &FlowSet,
    load: Load,
    names: &[&'static str],
    results: &[(f64, u64)],
) {
    let none = results[0].0;
    for (&name, &(ns, done)) in names.iter().zip(results) {
        out.push(Record {
            implementation,
            scheduler: name,
            flows: set.flows(),
            pattern: if set.mixed { "mixed" } else { load.name() },
            load: load.name(),
            ns_per_pair: ns,
            net_ns_per_pair: ns - none,
            pairs: done,
            core_ghz: None,
        });
    }
}

fn print_table(records: &[Record], clock: &ClockAround) -> std::io::Result<()> {
    crate::outln!("qfq.txt Table 4: ns per enqueue/dequeue pair, generator included (NONE = generator alone, same run)");
    crate::outln!("net = minus NONE; ratios on net costs");
    clock.print()?;
    let mut t = Table::new([
        "flows",
        "pattern",
        "none",
        "fifo",
        "drr",
        "qfq",
        "wf2q+",
        "qfq net",
        "drr net",
        "qfq/drr",
        "qfq/wf2q+",
    ]);
    for chunk in records.chunks(5) {
        let get = |name: &str| {
            chunk
                .iter()
                .find(|r| r.scheduler == name)
                .expect("every scheduler")
        };
        let (qfq, drr, wf2q) = (get("qfq"), get("drr"), get("wf2q+"));
        let first = &chunk[0];
        let mut pattern = if first.pattern == "mixed" {
            format!("mixed/{}", first.load)
        } else {
            first.pattern.to_string()
        };
        if first.implementation == Implementation::AuthorsC {
            pattern.push_str(" (authors' C)");
        }
        t.row([
            first.flows.to_string(),
            pattern,
            fmt_f(get("none").ns_per_pair, 1),
            fmt_f(get("fifo").ns_per_pair, 1),
            fmt_f(drr.ns_per_pair, 1),
            fmt_f(qfq.ns_per_pair, 1),
            fmt_f(wf2q.ns_per_pair, 1),
            fmt_f(qfq.net_ns_per_pair, 1),
            fmt_f(drr.net_ns_per_pair, 1),
            fmt_f(qfq.net_ns_per_pair / drr.net_ns_per_pair, 2),
            fmt_f(qfq.net_ns_per_pair / wf2q.net_ns_per_pair, 2),
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

/// Options of `eiffel bench sched`.
#[derive(Debug, Clone, Args)]
pub struct SchedOpts {
    /// `--quick` and `--json`.
    #[command(flatten)]
    pub common: CommonOpts,
    /// Uniform flow counts to run (default 1,8,64,512,4096,32768).
    #[arg(long, value_delimiter = ',')]
    pub flows: Option<Vec<u32>>,
    /// Skip the mixed-weight flow set.
    #[arg(long)]
    pub no_mixed: bool,
    /// Patterns to run (default all: small,large,full,balanced).
    #[arg(long, value_delimiter = ',', value_parser = parse_load)]
    pub patterns: Option<Vec<Load>>,
    /// A build of the QFQ authors' test program (`test_sched` of FreeBSD's
    /// `sys/netpfil/ipfw/test`, not shipped here): with BALANCED, their FIFO, DRR,
    /// QFQ and WF2Q+ are measured by it in the same run, after ours at each flow
    /// count.
    #[arg(long, value_name = "PATH")]
    pub c_harness: Option<PathBuf>,
}

fn parse_load(s: &str) -> Result<Load, String> {
    Load::ALL
        .into_iter()
        .find(|l| l.name() == s)
        .ok_or_else(|| format!("unknown pattern `{s}` (small, large, full, balanced)"))
}

/// Runs the benchmark.
pub fn run(opts: &SchedOpts) -> Result<(), BenchError> {
    let pairs = if opts.common.quick {
        150_000
    } else {
        5_000_000
    };
    let mut records = Vec::new();
    let flows = opts
        .flows
        .clone()
        .unwrap_or_else(|| vec![1, 8, 64, 512, 4096, 32768]);
    let mut sets: Vec<FlowSet> = flows.into_iter().map(FlowSet::uniform).collect();
    if !opts.no_mixed {
        sets.push(FlowSet::mixed());
    }
    let loads = opts.patterns.clone().unwrap_or_else(|| Load::ALL.to_vec());
    if let Some(path) = &opts.c_harness {
        authors::check(path)?;
    }
    let mut clock = ClockAround::start();
    for set in &sets {
        for &load in &loads {
            configuration(set, load, pairs, &mut records)?;
            if let (Some(path), Load::Balanced, false) = (&opts.c_harness, load, set.mixed) {
                authors_configuration(path, set.flows(), pairs, &mut records)?;
            }
        }
    }
    clock.finish();
    for r in &mut records {
        r.core_ghz = clock.mean();
    }
    if opts.common.json {
        print_results(&records)?;
    } else {
        print_table(&records, &clock)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixed_set_has_the_papers_flows() {
        assert_eq!(FlowSet::mixed().flows(), 39953);
        assert_eq!(FlowSet::uniform(4).weights().count(), 4);
    }
}
