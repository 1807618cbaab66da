//! Criterion benches of the calendar-queue disciplines against their bucketed
//! counterparts, through one per-flow leaf of the policy tree: nanoseconds per
//! packet (one enqueue and one dequeue) in steady state, 16 packets queued per
//! flow, for 64 and 4096 flows. `cq-wfq` runs against the tree's `wfq` on a cffs,
//! `cq-edf` against `edf` on a cffs, measured side by side.
//!
//! `cargo bench -p eiffel-sched --bench cq`; the sweep with ratios is
//! `eiffel bench cq`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use eiffel_queue::QueueKind;
use eiffel_sched::tree::{
    CalendarPolicy, Discipline, EdfRotation, NodeSpec, PerFlow, QueueChoice, TreeSpec,
};
use eiffel_sched::{Nanos, Packet, PolicyTree, Scheduler};
use std::hint::black_box;

const BACKLOG_PER_FLOW: u32 = 16;

fn tree(d: &Discipline, flows: u32) -> PolicyTree {
    let mut spec = TreeSpec::new(flows * BACKLOG_PER_FLOW + 64);
    let mut leaf = NodeSpec::new("flows", None);
    leaf.discipline = d.clone().on(QueueChoice::kind(QueueKind::Cffs));
    leaf.per_flow = Some(PerFlow {
        max_flows: flows,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    PolicyTree::new(spec).expect("valid bench policy")
}

/// A fixed pseudo-random sequence: flow, length, slack (10 us to 1 ms).
fn packets(flows: u32) -> Vec<(u32, u32, u64)> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..4096)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let flow = (x % u64::from(flows)) as u32;
            let len = 64 + (x >> 32) as u32 % 1437;
            let slack = 10_000 + (x >> 40) % 990_000;
            (flow, len, slack)
        })
        .collect()
}

fn steady(c: &mut Criterion, case: &str, d: &Discipline, flows: u32) {
    let mut t = tree(d, flows);
    let class = t.leaf("flows").expect("leaf");
    let pkts = packets(flows);
    let mut now: Nanos = 0;
    let mk = |i: usize, now: Nanos| {
        let (flow, len, slack) = pkts[i % pkts.len()];
        let mut p = Packet::new(flow, len).class(class).at(now);
        p.deadline = now + slack;
        p
    };
    for i in 0..(flows * BACKLOG_PER_FLOW) as usize {
        t.enqueue(mk(i, now), now).expect("room");
    }
    let mut i = (flows * BACKLOG_PER_FLOW) as usize;
    let name = format!(
        "{case}/{}",
        if matches!(d, Discipline::Calendar(_)) {
            "calendar"
        } else {
            "cffs"
        }
    );
    c.bench_with_input(BenchmarkId::new(name, flows), &flows, |b, _| {
        b.iter(|| {
            if t.enqueue(mk(i, now), now).is_err() {
                unreachable!("steady state keeps room");
            }
            i += 1;
            let p = t.dequeue(now).expect("backlogged");
            // 10 Gbit/s: 0.8 ns per byte.
            now += u64::from(p.len) * 4 / 5;
            black_box(p)
        });
    });
}

fn pairs(c: &mut Criterion) {
    for flows in [64u32, 4096] {
        let cq_wfq = Discipline::calendar(CalendarPolicy::Wfq { quantum: None });
        let cq_edf = Discipline::calendar(CalendarPolicy::Edf {
            period: None,
            rotation: EdfRotation::Clock,
        });
        steady(c, "wfq", &Discipline::WFQ, flows);
        steady(c, "wfq", &cq_wfq, flows);
        steady(c, "edf", &Discipline::EDF, flows);
        steady(c, "edf", &cq_edf, flows);
    }
}

criterion_group!(benches, pairs);
criterion_main!(benches);
