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
//! - Workload: a fixed pseudo-random sequence of flows (uniform), lengths (64 to
//!   1500 bytes) and EDF slacks (10 us to 1 ms); time advances by each packet's
//!   transmission at 10 Gbit/s, so deadlines and rounds move as on a link. Each
//!   step enqueues one packet and dequeues one (steady state).
//! - Each configuration fills the tree (untimed), warms up with a tenth of the
//!   packets, then runs three timed repetitions of a third each (5 million
//!   packets in all, 300 thousand with `--quick`); the fastest repetition is
//!   reported, since other work on the machine only ever adds time.

use std::hint::black_box;
use std::time::Instant;

use eiffel_queue::QueueKind;
use eiffel_sched::tree::{
    CalendarPolicy, Discipline, EdfRotation, NodeSpec, PerFlow, QueueChoice, TreeSpec,
};
use eiffel_sched::{Nanos, Packet, PolicyTree, Scheduler};
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// Packets queued per flow in steady state.
const BACKLOG_PER_FLOW: u32 = 8;

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

/// The packet source: xorshift64* picks flows, lengths and slacks.
struct Generator {
    state: u64,
    flows: u64,
    class: u32,
}

impl Generator {
    fn new(flows: u32, class: u32) -> Self {
        Generator {
            state: 0x9e37_79b9_7f4a_7c15 ^ u64::from(flows),
            flows: u64::from(flows),
            class,
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    #[inline]
    fn packet(&mut self, now: Nanos) -> Packet {
        let r = self.next();
        let flow = (((r >> 32) * self.flows) >> 32) as u32;
        let len = 64 + ((r & 0xffff) % 1437) as u32;
        let mut p = Packet::new(flow, len).class(self.class).at(now);
        p.deadline = now + 10_000 + (r >> 16 & 0xffff) * 15;
        p
    }
}

fn tree(d: &Discipline, flows: u32) -> Result<PolicyTree, BenchError> {
    let mut spec = TreeSpec::new(flows * BACKLOG_PER_FLOW + 64);
    let mut leaf = NodeSpec::new("flows", None);
    // The ranked baselines on a cffs; the calendars keep their calendar.
    leaf.discipline = d.clone().on(QueueChoice::kind(QueueKind::Cffs));
    leaf.per_flow = Some(PerFlow {
        max_flows: flows,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    Ok(PolicyTree::new(spec)?)
}

/// `n` steady-state steps; returns the time advanced.
#[inline]
fn steps(t: &mut PolicyTree, g: &mut Generator, now: &mut Nanos, n: u64) {
    let mut sink = 0u64;
    for _ in 0..n {
        if let Err(d) = t.enqueue(g.packet(*now), *now) {
            black_box(d.packet);
        }
        if let Some(p) = t.dequeue(*now) {
            sink = sink.wrapping_add(u64::from(p.len));
            // 10 Gbit/s: 0.8 ns per byte.
            *now += u64::from(p.len) * 4 / 5;
        }
    }
    black_box(sink);
}

/// The fastest ns per packet over the repetitions, and the packets timed.
fn measure(d: &Discipline, flows: u32, packets: u64) -> Result<(f64, u64), BenchError> {
    let mut t = tree(d, flows)?;
    let class = t.leaf("flows").ok_or("the bench policy has no leaf")?;
    let mut g = Generator::new(flows, class);
    let mut now: Nanos = 0;
    for _ in 0..flows * BACKLOG_PER_FLOW {
        if t.enqueue(g.packet(now), now).is_err() {
            return Err("the bench policy refused a packet while filling".into());
        }
    }
    steps(&mut t, &mut g, &mut now, packets / 10);
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let start = Instant::now();
        steps(&mut t, &mut g, &mut now, packets / REPS);
        best = best.min(start.elapsed().as_nanos() as f64 / (packets / REPS) as f64);
    }
    if t.counters().dropped_total() > 0 {
        return Err(format!("{} dropped packets in steady state", d.name()).into());
    }
    Ok((best, packets / REPS * REPS))
}

fn print_table(records: &[Record]) {
    println!("ns per packet (enqueue + dequeue) through one per-flow leaf, {BACKLOG_PER_FLOW} packets queued per flow");
    println!("calendar = the cq-* discipline on a calendar queue; cffs = its counterpart on a cffs, same run");
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
    println!("{}", t.render());
}

/// Runs the benchmark.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let packets = if opts.quick { 300_000 } else { 5_000_000 };
    let mut records = Vec::new();
    let cq_wfq = Discipline::calendar(CalendarPolicy::Wfq { quantum: None });
    let cq_edf = Discipline::calendar(CalendarPolicy::Edf {
        period: None,
        rotation: EdfRotation::Clock,
    });
    let cases = [
        ("wfq", Discipline::WFQ, cq_wfq),
        ("edf", Discipline::EDF, cq_edf),
    ];
    for (case, base, cal) in &cases {
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
        print_table(&records);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_discipline_runs_the_workload_without_drops() {
        let cq_wfq = Discipline::calendar(CalendarPolicy::Wfq { quantum: None });
        let cq_edf = Discipline::calendar(CalendarPolicy::Edf {
            period: None,
            rotation: EdfRotation::Clock,
        });
        for d in [Discipline::WFQ, cq_wfq, Discipline::EDF, cq_edf] {
            let (ns, n) = measure(&d, 16, 3_000).unwrap();
            assert!(ns > 0.0 && n == 3_000, "{}", d.name());
        }
    }

    #[test]
    fn generator_spreads_flows_and_deadlines() {
        let mut g = Generator::new(4, 0);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let p = g.packet(1_000);
            seen[p.flow as usize] += 1;
            assert!((64..=1500).contains(&p.len));
            assert!(
                (11_000..=1_000_000 + 1_000).contains(&p.deadline),
                "{}",
                p.deadline
            );
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
