//! `eiffel bench cq`: the calendar-queue disciplines against their bucketed
//! counterparts on the same workloads, in nanoseconds per packet through one
//! per-flow leaf of the policy tree (an enqueue and a dequeue, the tree's
//! bookkeeping included).
//!
//! - Cases: `wfq` compares `cq-wfq` (calendar queue, one day per round of 1500
//!   bytes, Sharma et al. NSDI'20 Fig. 2) with the tree's `wfq` (start-time fair
//!   queueing on a cffs); `edf` compares `cq-edf` (calendar of 10 us days
//!   following the clock) with the tree's `edf` on a cffs of 10 us buckets.
//!   Baseline and calendar run in the same invocation, one after the other, on
//!   the same packet sequence; the ratio is calendar / cffs.
//! - Flows: 16, 256, 4096, 32768, 8 packets queued per flow.
//! - Workload: [`workload`], shared with the criterion bench
//!   (`cargo bench -p eiffel-bench --bench cq`).
//! - Each configuration fills the tree (untimed), warms up with a tenth of the
//!   packets, then runs three timed repetitions of a third each (5 million
//!   packets in all, 300 thousand with `--quick`); the fastest repetition is
//!   reported, since other work on the machine only ever adds time.

use std::time::Instant;

use eiffel_sched::tree::Discipline;
use eiffel_sched::Scheduler;
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};
use workload::{Steady, BACKLOG_PER_FLOW};

pub mod workload;

/// Timed repetitions per configuration; the fastest is kept.
const REPS: u64 = 3;

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `wfq` or `edf`.
    case: &'static str,
    /// `calendar` or `cffs`.
    queue: &'static str,
    /// The node's discipline (`cq-wfq`, `wfq`, `cq-edf`, `edf`).
    discipline: &'static str,
    /// Flows of the per-flow leaf.
    flows: u32,
    /// Nanoseconds per packet (one enqueue and one dequeue).
    ns_per_packet: f64,
    /// `ns_per_packet` over the cffs baseline's of the same case and flows.
    ratio: f64,
    /// Packets timed.
    packets: u64,
}

/// The fastest ns per packet over the repetitions, and the packets timed.
fn measure(d: &Discipline, flows: u32, packets: u64) -> Result<(f64, u64), BenchError> {
    let mut w = Steady::new(d, flows)?;
    w.steps(packets / 10);
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let start = Instant::now();
        w.steps(packets / REPS);
        best = best.min(start.elapsed().as_nanos() as f64 / (packets / REPS) as f64);
    }
    if w.tree.counters().dropped_total() > 0 {
        return Err(format!("{} dropped packets in steady state", d.name()).into());
    }
    Ok((best, packets / REPS * REPS))
}

fn print_table(records: &[Record]) -> std::io::Result<()> {
    crate::outln!("ns per packet (enqueue + dequeue) through one per-flow leaf, {BACKLOG_PER_FLOW} packets queued per flow");
    crate::outln!("calendar = the cq-* discipline on a calendar queue; cffs = its counterpart on a cffs, same run");
    let mut t = Table::new(["case", "flows", "cffs", "calendar", "calendar/cffs"]);
    for pair in records.chunks(2) {
        let (base, cal) = (&pair[0], &pair[1]);
        t.row([
            format!("{} vs {}", cal.discipline, base.discipline),
            base.flows.to_string(),
            fmt_f(base.ns_per_packet, 1),
            fmt_f(cal.ns_per_packet, 1),
            fmt_f(cal.ratio, 2),
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

/// Runs the benchmark.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let packets = if opts.quick { 300_000 } else { 5_000_000 };
    let mut records = Vec::new();
    for (case, base, cal) in &workload::cases() {
        for flows in [16u32, 256, 4096, 32768] {
            let (base_ns, base_n) = measure(base, flows, packets)?;
            let (cal_ns, cal_n) = measure(cal, flows, packets)?;
            for (d, ns, n, queue) in [
                (base, base_ns, base_n, "cffs"),
                (cal, cal_ns, cal_n, "calendar"),
            ] {
                records.push(Record {
                    case,
                    queue,
                    discipline: d.name(),
                    flows,
                    ns_per_packet: ns,
                    ratio: ns / base_ns,
                    packets: n,
                });
            }
        }
    }
    if opts.json {
        print_results(&records)?;
    } else {
        print_table(&records)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_discipline_runs_the_workload_without_drops() {
        for d in [
            Discipline::WFQ,
            workload::cq_wfq(),
            Discipline::EDF,
            workload::cq_edf(),
        ] {
            let (ns, n) = measure(&d, 16, 3_000).unwrap();
            assert!(ns > 0.0 && n == 3_000, "{}", d.name());
        }
    }
}
