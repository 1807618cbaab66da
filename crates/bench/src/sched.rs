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
//! - Each configuration runs an untimed warm-up (FULL first fills the scheduler to
//!   the middle of its range, untimed), then three timed repetitions of at least a
//!   third of 5 million pairs (150 thousand with `--quick`), burst patterns in
//!   whole cycles; the fastest repetition is reported, since other work on the
//!   machine only ever adds time. A burst cycle longer than all the pairs (LARGE
//!   with 32768 flows: 983040 pairs) is timed once. Times are the thread's CPU
//!   time ([`crate::clock`]).

pub mod workload;

use clap::Args;
use eiffel_sched::{Drr, Fifo, FlowConfig, FlowScheduler, PerFlow, Qfq, Wf2qPlus};
use serde::Serialize;

use self::workload::{drive, fill, Generator, Load, Ring, Sched, Target};
use crate::clock::CpuInstant;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
struct Record {
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

/// Times `load` on `t`: the lowest ns per pair over the repetitions, and the pairs
/// timed in all. A configuration whose burst cycle alone exceeds `pairs` runs one
/// repetition of one cycle and no warm-up (its memory was written when the
/// scheduler was built); the others warm up with a cycle (or, for FULL, a tenth of
/// the pairs after the untimed fill) and run `REPS` repetitions of `pairs / REPS`.
fn measure<T: Target>(mut t: T, set: &FlowSet, load: Load, pairs: u64) -> (f64, u64) {
    let n = u64::from(set.flows());
    let mut g = Generator::new(set.flows(), 0x9e37_79b9_7f4a_7c15 ^ n);
    let cycle = load.cycle(n);
    let reps = if cycle >= pairs { 1 } else { REPS };
    let mut backlog = 0;
    if load == Load::Full {
        backlog = fill(&mut t, &mut g, n);
        drive(&mut t, &mut g, load, n, pairs / 10, &mut backlog);
    } else if reps > 1 {
        drive(&mut t, &mut g, load, n, 1, &mut backlog);
    }
    let (mut best, mut total) = (f64::INFINITY, 0);
    for _ in 0..reps {
        let start = CpuInstant::now();
        let done = drive(&mut t, &mut g, load, n, pairs / reps, &mut backlog);
        best = best.min(start.elapsed().as_nanos() as f64 / done as f64);
        total += done;
    }
    (best, total)
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

/// Measures every scheduler on one flow set and load.
fn configuration(
    set: &FlowSet,
    load: Load,
    pairs: u64,
    out: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let n = set.flows();
    // Room for the largest backlog (30N) plus one burst in flight.
    let cap = 30 * n as usize + 16;
    let mut results: Vec<(&'static str, f64, u64)> = Vec::new();
    let (ns, done) = measure(Ring::new(cap), set, load, pairs);
    results.push(("none", ns, done));
    let (ns, done) = measure(Sched(Fifo::new(cap)), set, load, pairs);
    results.push(("fifo", ns, done));
    let (ns, done) = measure(Sched(configured(Drr::new(n, cap)?, set)?), set, load, pairs);
    results.push(("drr", ns, done));
    let (ns, done) = measure(
        Sched(configured(Qfq::with_max_packet(n, cap, 1500)?, set)?),
        set,
        load,
        pairs,
    );
    results.push(("qfq", ns, done));
    let (ns, done) = measure(
        Sched(configured(Wf2qPlus::new(n, cap)?, set)?),
        set,
        load,
        pairs,
    );
    results.push(("wf2q+", ns, done));
    let none = results[0].1;
    for (name, ns, done) in results {
        out.push(Record {
            scheduler: name,
            flows: n,
            pattern: if set.mixed { "mixed" } else { load.name() },
            load: load.name(),
            ns_per_pair: ns,
            net_ns_per_pair: ns - none,
            pairs: done,
        });
    }
    Ok(())
}

fn print_table(records: &[Record]) {
    println!("qfq.txt Table 4: ns per enqueue/dequeue pair, generator included (NONE = generator alone, same run)");
    println!("net = minus NONE; ratios on net costs");
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
        let pattern = if first.pattern == "mixed" {
            format!("mixed/{}", first.load)
        } else {
            first.pattern.to_string()
        };
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
    println!("{}", t.render());
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
    for set in &sets {
        for &load in &loads {
            configuration(set, load, pairs, &mut records)?;
        }
    }
    if opts.common.json {
        print_results(&records)?;
    } else {
        print_table(&records);
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
