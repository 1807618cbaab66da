//! `eiffel bench policy`: the Eiffel paper's policy measurements (NSDI'19,
//! section 5.1, Figs. 11 and 15 and the Carousel use case), on one core, every
//! variant measured in the same run.
//!
//! - **pfabric**: a per-flow pFabric leaf (Fig. 10) of N flows, its flow queue a
//!   cFFS (the paper's choice) or a binary heap (the paper's baseline), and hFFS
//!   (what the Fig. 16 decision tree picks for pFabric's fixed range) for
//!   reference. The flows start with 4 packets each; each step dequeues the
//!   packet pFabric picks and enqueues the next packet of a flow drawn uniformly
//!   at random (a flow that ends restarts with a new size of 1 to 1000 packets),
//!   so the backlog stays at 4N packets and ranks move on both enqueue (the
//!   random flow's rank falls) and dequeue (the served flow leaves when empty).
//! - **pfabric-module**: the same pFabric workload in a bare queue module, as the
//!   paper measured it (Fig. 11, a BESS module): per-flow FIFOs and one flow queue
//!   keyed by each flow's smallest remaining size, three flow queues side by side:
//!   a cFFS, our binary heap (an indexed heap: O(log n) re-ranking through
//!   handles), and the paper's baseline, a binary heap without handles that is
//!   re-heapified whenever a flow's rank changes ("an overhead of O(n) as it
//!   requires reheapifying the heap every time", section 5.1.2).
//! - **hclock**: an hClock root over N leaves, each with a reservation (half the
//!   link split evenly), a weight (1 to 4) and a limit (4 times its even share,
//!   in the tree's shaper); both of the root's queues are bucketed (cFFS, the
//!   automatic choice) or binary heaps. Every leaf keeps 4 packets queued; time
//!   advances by one 1500-byte packet time at 10 Gbit/s per packet sent.
//! - **pacing**: 20,000 flows each paced to 400 kbit/s (8 Gbit/s in all), 2
//!   packets queued per flow, time advancing per packet as above (or jumping to
//!   the next release). Three implementations: the policy tree of
//!   `examples/policies/pacing-20k-flows.toml` (its one shaper, a timing wheel of
//!   20,000 slots over 2 s), and a minimal pacer (per-flow FIFOs in a packet
//!   pool, per-flow GCRA, a FIFO of eligible flows) whose release queue is
//!   either the same timing wheel (`eiffel_queue::TimingWheel`, the shaper's
//!   geometry) or a comparison heap (`eiffel_queue::BinaryHeapQueue` keyed by
//!   release time): the two pacers differ only in the release queue.
//!
//! - **expr**: each built-in rank function (WFQ over 64 children and over 1024
//!   flows, strict priority, EDF, SRPT, pFabric) and the built-in per-flow token
//!   bucket against the same policy written as rank or release expressions, same
//!   queue and packets ([`exprs`]); the report gives the expression's cost per
//!   packet as a multiple of the built-in's.
//!
//! The workloads are [`workload`], shared with the criterion bench
//! (`cargo bench -p eiffel-bench --bench policy`).
//!
//! The cost of one packet is the wall time of a run divided by the packets sent,
//! the packet generation included; the fastest of three repetitions is
//! reported. A core sustains 10 Gbit/s of 1500-byte packets (833 kpps) when a
//! packet costs at most 1200 ns; for pfabric and hclock the largest N measured
//! within that budget is reported for each queue.

use std::time::Instant;

use eiffel_queue::{BinaryHeapQueue, QueueConfig, QueueKind};
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};
use workload::{
    paced_limit, pacing_tree, pacing_wheel, Handled, Hclock, Pacer, Pacing, Pfabric, PfabricModule,
    RebuiltHeap, PACED_FLOWS,
};

pub mod exprs;
pub mod workload;

/// The per-packet budget of one core at 10 Gbit/s of 1500-byte packets.
const BUDGET_NS: f64 = 1e9 / 833_333.0;

/// One measurement, or one summary row.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `pfabric`, `hclock` or `pacing`.
    case: &'static str,
    /// Queue (and for pacing, implementation).
    queue: String,
    /// Flows (pfabric, pacing) or hClock leaves.
    flows: u32,
    /// Nanoseconds per packet.
    ns_per_packet: f64,
    /// Millions of packets per second one core sustains at that cost.
    mpps: f64,
    /// Whether the cost fits the 833 kpps budget.
    sustains_10g: bool,
    /// `sweep` for a measurement, `largest_at_10g` for the largest N measured
    /// within the budget.
    row: &'static str,
    /// Packets timed.
    packets: u64,
}

/// Runs `step` `packets / 4` times untimed, then `packets` times, three times;
/// returns the fastest ns per step.
fn time(packets: u64, mut step: impl FnMut()) -> f64 {
    for _ in 0..packets / 4 {
        step();
    }
    (0..3)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..packets {
                step();
            }
            t.elapsed().as_nanos() as f64 / packets as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn record(case: &'static str, queue: String, flows: u32, ns: f64, packets: u64) -> Record {
    Record {
        case,
        queue,
        flows,
        ns_per_packet: ns,
        mpps: 1e3 / ns,
        sustains_10g: ns <= BUDGET_NS,
        row: "sweep",
        packets,
    }
}

/// The largest N of `case`/`queue` within the budget, as a summary row.
fn largest(records: &[Record], case: &'static str, queue: &str) -> Option<Record> {
    records
        .iter()
        .filter(|r| r.case == case && r.queue == queue && r.sustains_10g && r.row == "sweep")
        .max_by_key(|r| r.flows)
        .map(|r| Record {
            row: "largest_at_10g",
            ..r.clone()
        })
}

/// The sweep's sizes: packets timed, pFabric flows, hClock leaves.
fn sizes(quick: bool) -> (u64, &'static [u32], &'static [u32]) {
    if quick {
        (
            300_000,
            &[256, 4_096, 65_536, 262_144],
            &[64, 512, 4_096, 32_768],
        )
    } else {
        (
            2_000_000,
            &[
                64, 256, 1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576, 2_097_152,
            ],
            &[64, 256, 1_024, 4_096, 16_384, 65_536, 262_144, 1_048_576],
        )
    }
}

/// Measures every case, calling `progress` after each measurement.
fn measure_all(quick: bool, mut progress: impl FnMut(&Record)) -> Result<Vec<Record>, BenchError> {
    let (packets, pf_flows, hc_leaves) = sizes(quick);
    let mut records = Vec::new();
    let mut push = |r: Record| {
        progress(&r);
        records.push(r);
    };
    for &n in pf_flows {
        for kind in [QueueKind::Cffs, QueueKind::BinaryHeap, QueueKind::Hffs] {
            let mut w = Pfabric::new(n, kind)?;
            let ns = time(packets, || w.step());
            push(record("pfabric", kind.name().to_string(), n, ns, packets));
        }
    }
    for &n in pf_flows {
        for (name, kind) in [
            ("cffs", QueueKind::Cffs),
            ("binary_heap", QueueKind::BinaryHeap),
        ] {
            let mut w = PfabricModule::new(n, Handled::new(kind, n)?);
            let ns = time(packets, || w.step());
            push(record("pfabric-module", name.to_string(), n, ns, packets));
        }
        // The re-heapified heap costs O(n) per rank change: measure it while it
        // still fits the budget (beyond, it is only slower), with fewer packets.
        let rebuilt_packets = (packets / u64::from(n)).clamp(1_000, packets);
        if n <= 16_384 {
            let mut w = PfabricModule::new(n, RebuiltHeap::default());
            let ns = time(rebuilt_packets, || w.step());
            let r = record(
                "pfabric-module",
                "heap_rebuilt".into(),
                n,
                ns,
                rebuilt_packets,
            );
            push(r);
        }
    }
    for &n in hc_leaves {
        for (name, kind) in [("cffs", None), ("binary_heap", Some(QueueKind::BinaryHeap))] {
            let mut w = Hclock::new(n, kind)?;
            let ns = time(packets, || w.step());
            push(record("hclock", name.to_string(), n, ns, packets));
        }
    }
    for (name, ns) in pacing(packets)? {
        push(record("pacing", name.to_string(), PACED_FLOWS, ns, packets));
    }
    for case in &exprs::CASES {
        for (variant, expr) in [("builtin", false), ("expr", true)] {
            let policy = case.policy(expr)?;
            let mut w = exprs::ExprWorkload::new(case, &policy);
            let ns = time(packets, || w.step());
            let units = if case.name.contains("flows") {
                exprs::FLOWS
            } else {
                exprs::LEAVES
            };
            push(record(
                "expr",
                format!("{} {variant}", case.name),
                units,
                ns,
                packets,
            ));
        }
    }
    Ok(records)
}

/// The three pacing implementations, in ns per packet.
fn pacing(packets: u64) -> Result<[(&'static str, f64); 3], BenchError> {
    let capacity = (PACED_FLOWS * 2) as usize;
    let mut tree = Pacing::new(pacing_tree()?);
    let tree_ns = time(packets, || tree.step());
    let wheel = Pacer::new(PACED_FLOWS, capacity, paced_limit(), pacing_wheel()?);
    let mut wheel = Pacing::new(wheel);
    let wheel_ns = time(packets, || wheel.step());
    let heap = BinaryHeapQueue::<u32>::new(QueueConfig::new(1, PACED_FLOWS as usize))?;
    let mut heap = Pacing::new(Pacer::new(PACED_FLOWS, capacity, paced_limit(), heap));
    let heap_ns = time(packets, || heap.step());
    Ok([
        ("policy tree, timing wheel", tree_ns),
        ("pacer, timing wheel", wheel_ns),
        ("pacer, binary heap", heap_ns),
    ])
}

/// The summary rows: the largest N within the budget of each case and queue.
fn summary(records: &[Record]) -> Vec<Record> {
    [
        ("pfabric", "cffs"),
        ("pfabric", "binary_heap"),
        ("pfabric", "hffs"),
        ("pfabric-module", "cffs"),
        ("pfabric-module", "binary_heap"),
        ("pfabric-module", "heap_rebuilt"),
        ("hclock", "cffs"),
        ("hclock", "binary_heap"),
    ]
    .iter()
    .filter_map(|&(c, q)| largest(records, c, q))
    .collect()
}

/// Prints the sweep's table.
fn print_sweep(records: &[Record]) -> std::io::Result<()> {
    let mut t = Table::new(["case", "queue", "flows", "ns/packet", "Mpps", "833 kpps"]);
    for r in records.iter().filter(|r| r.row == "sweep") {
        t.row([
            r.case.to_string(),
            r.queue.clone(),
            r.flows.to_string(),
            fmt_f(r.ns_per_packet, 1),
            fmt_f(r.mpps, 2),
            if r.sustains_10g { "yes" } else { "no" }.to_string(),
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

/// The largest N measured of `case`.
fn max_n(records: &[Record], case: &str) -> u32 {
    records
        .iter()
        .filter(|r| r.case == case)
        .map(|r| r.flows)
        .max()
        .unwrap_or(0)
}

/// The cost measured for `case`, `queue` and `n`.
fn cost(records: &[Record], case: &str, queue: &str, n: u32) -> Option<f64> {
    records
        .iter()
        .find(|r| r.case == case && r.queue == queue && r.flows == n && r.row == "sweep")
        .map(|r| r.ns_per_packet)
}

/// Prints the largest N per case and the ratios the README quotes.
fn print_summary(records: &[Record], summary: &[Record]) -> std::io::Result<()> {
    crate::outln!("largest N measured within 1200 ns/packet (one core, 10 Gbit/s of 1500 B):");
    for s in summary {
        let bound = if s.flows == max_n(records, s.case) {
            " (the largest measured: the limit lies beyond)"
        } else {
            ""
        };
        crate::outln!("  {:8} {:12} {}{bound}", s.case, s.queue, s.flows);
    }
    for case in ["pfabric", "pfabric-module", "hclock"] {
        let n = max_n(records, case);
        let base = cost(records, case, "cffs", n);
        if let (Some(b), Some(h)) = (base, cost(records, case, "binary_heap", n)) {
            let ratio = fmt_f(h / b, 2);
            crate::outln!("{case} at {n}: binary heap / cffs = {ratio}x per packet");
        }
    }
    let largest_of = |queue: &str| {
        summary
            .iter()
            .find(|r| r.case == "pfabric-module" && r.queue == queue)
            .map(|r| r.flows)
    };
    if let (Some(c), Some(h)) = (largest_of("cffs"), largest_of("heap_rebuilt")) {
        crate::outln!(
            "pfabric module: the paper's re-heapified heap sustains 833 kpps up to {h} flows, cffs beyond {c} ({}x more flows)",
            fmt_f(f64::from(c) / f64::from(h), 0)
        );
    }
    for case in &exprs::CASES {
        let find = |v: &str| {
            records
                .iter()
                .find(|r| r.case == "expr" && r.queue == format!("{} {v}", case.name))
                .map(|r| r.ns_per_packet)
        };
        if let (Some(b), Some(e)) = (find("builtin"), find("expr")) {
            crate::outln!(
                "rank expressions, {}: expr / built-in = {}x per packet ({} vs {} ns)",
                case.name,
                fmt_f(e / b, 2),
                fmt_f(e, 1),
                fmt_f(b, 1)
            );
        }
    }
    let wheel = cost(records, "pacing", "pacer, timing wheel", PACED_FLOWS);
    if let (Some(w), Some(h)) = (
        wheel,
        cost(records, "pacing", "pacer, binary heap", PACED_FLOWS),
    ) {
        crate::outln!(
            "pacing 20k flows: heap shaper / timing-wheel shaper = {}x per packet",
            fmt_f(h / w, 2)
        );
    }
    Ok(())
}

/// Runs the benchmark.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let progress = |r: &Record| {
        if !opts.json {
            eprintln!(
                "  {} {} {}: {} ns/packet",
                r.case,
                r.queue,
                r.flows,
                fmt_f(r.ns_per_packet, 1)
            );
        }
    };
    let mut records = measure_all(opts.quick, progress)?;
    let summary = summary(&records);
    records.extend(summary.iter().cloned());
    if opts.json {
        return print_results(&records);
    }
    print_sweep(&records)?;
    print_summary(&records, &summary)?;
    Ok(())
}
