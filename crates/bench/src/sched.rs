//! `eiffel bench sched`: qfq.txt Table 4, the cost of an enqueue/dequeue pair.
//!
//! As in the paper (section 7.1), a controller generates packets and drives the
//! scheduler with a programmed sequence of requests; the time of a whole run divided
//! by the number of pairs gives the cost of one pair, generator included. The NONE
//! row is the generator alone, its packets stored in and taken from a plain ring
//! (`VecDeque`), measured in the same run: subtracting it gives the schedulers' own
//! cost ("net"), and the ratios are taken on net costs.
//!
//! - Schedulers: NONE, FIFO, DRR (quantum 1500 bytes), QFQ (`L` = 1500), WF²Q+.
//! - Flows: 1, 8, 64, 512, 4096, 32768 of weight 1, and the mixed set
//!   (weight:flows) 1:32768, 2:4096, 4:2048, 8:1024, 128:16, 1024:1 (39953 flows).
//!   The generator picks the flow of each packet uniformly at random and its
//!   length from 64 to 1500 bytes.
//! - Patterns with N flows: SMALL enqueues bursts of 5N packets, then drains the
//!   scheduler; LARGE the same with 30N; FULL keeps the backlog between 3N and 30N,
//!   enqueueing or dequeueing at random (forced at the limits).
//! - Each configuration runs an untimed warm-up (FULL first fills the scheduler to
//!   the middle of its range, untimed), then three timed repetitions of at least a
//!   third of 5 million pairs (150 thousand with `--quick`), SMALL and LARGE in
//!   whole cycles; the fastest repetition is reported, since other work on the
//!   machine only ever adds time. A burst cycle longer than all the pairs (LARGE
//!   with 32768 flows: 983040 pairs) is timed once.

use std::collections::VecDeque;
use std::hint::black_box;
use std::time::Instant;

use eiffel_sched::{
    Drr, Fifo, FlowConfig, FlowScheduler, Packet, PerFlow, Qfq, Scheduler, Wf2qPlus,
};
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `none`, `fifo`, `drr`, `qfq` or `wf2q+`.
    scheduler: &'static str,
    /// Number of flows.
    flows: u32,
    /// `small`, `large`, `full`, or `mixed` for the mixed-weight flow set.
    pattern: &'static str,
    /// For the mixed set, the load pattern (`small`, `large`, `full`).
    load: &'static str,
    /// Nanoseconds per enqueue/dequeue pair, generator included.
    ns_per_pair: f64,
    /// `ns_per_pair` minus the NONE row of the same configuration.
    net_ns_per_pair: f64,
    /// Pairs timed.
    pairs: u64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Load {
    Small,
    Large,
    Full,
}

impl Load {
    const ALL: [Load; 3] = [Load::Small, Load::Large, Load::Full];

    fn name(self) -> &'static str {
        match self {
            Load::Small => "small",
            Load::Large => "large",
            Load::Full => "full",
        }
    }
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

/// The controller's packet source: xorshift64* picks flows and lengths.
struct Generator {
    state: u64,
    flows: u64,
    lens: [u32; 256],
    seq: u32,
}

impl Generator {
    fn new(flows: u32, seed: u64) -> Self {
        let mut g = Generator {
            state: seed | 1,
            flows: u64::from(flows),
            lens: [0; 256],
            seq: 0,
        };
        for i in 0..256 {
            g.lens[i] = 64 + (g.next() % (1500 - 64 + 1)) as u32;
        }
        g
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    #[inline]
    fn packet(&mut self) -> Packet {
        let r = self.next();
        // Multiply-shift maps 32 random bits onto 0..flows without a division.
        let flow = (((r >> 32) * self.flows) >> 32) as u32;
        self.seq = self.seq.wrapping_add(1);
        Packet::new(flow, self.lens[(r & 0xff) as usize]).buffer(self.seq)
    }

    #[inline]
    fn coin(&mut self) -> bool {
        self.next() >> 63 == 1
    }
}

/// What the controller drives: a scheduler, or the NONE ring.
trait Target {
    fn push(&mut self, pkt: Packet);
    fn pop(&mut self) -> Option<Packet>;
}

struct Ring(VecDeque<Packet>);

impl Ring {
    /// A ring for `cap` packets, its memory written once (as the schedulers'
    /// pools are when built) so that page faults stay out of the timing.
    fn new(cap: usize) -> Self {
        let mut q = VecDeque::with_capacity(cap);
        q.resize(cap, Packet::default());
        q.clear();
        Ring(q)
    }
}

impl Target for Ring {
    #[inline]
    fn push(&mut self, pkt: Packet) {
        self.0.push_back(pkt);
    }
    #[inline]
    fn pop(&mut self) -> Option<Packet> {
        self.0.pop_front()
    }
}

struct Sched<S>(S);

impl<S: Scheduler> Target for Sched<S> {
    #[inline]
    fn push(&mut self, pkt: Packet) {
        if let Err(d) = self.0.enqueue(pkt, 0) {
            black_box(d.packet);
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<Packet> {
        self.0.dequeue(0)
    }
}

/// Fills a FULL-pattern target to the middle of its backlog range (untimed).
fn fill<T: Target>(t: &mut T, g: &mut Generator, n: u64) -> u64 {
    let backlog = (3 * n + 30 * n) / 2;
    for _ in 0..backlog {
        t.push(g.packet());
    }
    backlog
}

/// Runs `load` for at least `pairs` pairs, returning the pairs done. SMALL and
/// LARGE run whole burst-and-drain cycles; FULL runs the steady state from
/// `backlog` (see [`fill`]) and leaves the target filled. `n` is the number of
/// flows (it scales the bursts and the backlog range).
fn drive<T: Target>(
    t: &mut T,
    g: &mut Generator,
    load: Load,
    n: u64,
    pairs: u64,
    backlog: &mut u64,
) -> u64 {
    let mut done = 0u64;
    let mut sink = 0u64;
    match load {
        Load::Small | Load::Large => {
            let burst = if load == Load::Small { 5 * n } else { 30 * n };
            while done < pairs {
                for _ in 0..burst {
                    t.push(g.packet());
                }
                while let Some(p) = t.pop() {
                    sink = sink.wrapping_add(u64::from(p.len));
                }
                done += burst;
            }
        }
        Load::Full => {
            let (low, high) = (3 * n, 30 * n);
            while done < pairs {
                let enqueue = if *backlog <= low {
                    true
                } else if *backlog >= high {
                    false
                } else {
                    g.coin()
                };
                if enqueue {
                    t.push(g.packet());
                    *backlog += 1;
                } else if let Some(p) = t.pop() {
                    sink = sink.wrapping_add(u64::from(p.len));
                    *backlog -= 1;
                    done += 1;
                }
            }
        }
    }
    black_box(sink);
    done
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
    let cycle = match load {
        Load::Small => 5 * n,
        Load::Large => 30 * n,
        Load::Full => 0,
    };
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
        let start = Instant::now();
        let done = drive(&mut t, &mut g, load, n, pairs / reps, &mut backlog);
        best = best.min(start.elapsed().as_nanos() as f64 / done as f64);
        total += done;
    }
    (best, total)
}

fn configured<C: eiffel_sched::FlowCore>(
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

/// Runs the benchmark.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let pairs = if opts.quick { 150_000 } else { 5_000_000 };
    let mut records = Vec::new();
    let mut sets: Vec<FlowSet> = [1, 8, 64, 512, 4096, 32768]
        .into_iter()
        .map(FlowSet::uniform)
        .collect();
    sets.push(FlowSet::mixed());
    for set in &sets {
        for load in Load::ALL {
            configuration(set, load, pairs, &mut records)?;
        }
    }
    if opts.json {
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
    fn generator_spreads_flows_and_lengths() {
        let mut g = Generator::new(8, 1);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let p = g.packet();
            seen[p.flow as usize] += 1;
            assert!((64..=1500).contains(&p.len));
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn patterns_count_pairs_and_drain() {
        let set = FlowSet::uniform(4);
        for load in Load::ALL {
            let mut ring = Ring::new(0);
            let mut g = Generator::new(4, 3);
            let mut backlog = if load == Load::Full {
                fill(&mut ring, &mut g, 4)
            } else {
                0
            };
            let done = drive(&mut ring, &mut g, load, 4, 100, &mut backlog);
            assert!(done >= 100);
            assert_eq!(ring.0.len() as u64, backlog, "{load:?}");
            assert!(
                load == Load::Full || backlog == 0,
                "bursts drain the scheduler"
            );
        }
        assert_eq!(FlowSet::mixed().flows(), 39953);
        assert_eq!(set.weights().count(), 4);
    }
}
