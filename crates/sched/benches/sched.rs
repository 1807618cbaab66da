//! Criterion benches of the schedulers: nanoseconds per enqueue/dequeue pair in
//! steady state (a backlog of 16 packets per flow, one packet in, one out), for
//! 8 and 1024 flows of weight 1 and packets of 64 to 1500 bytes. The baseline
//! `none` moves the same packets through a plain ring, measured alongside.
//!
//! `cargo bench -p eiffel-sched --bench sched`; the full sweep of qfq.txt Table 4
//! is `eiffel bench sched`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use eiffel_sched::{
    Drr, Fifo, FlowConfig, FlowCore, FlowScheduler, Packet, PerFlow, Prio, Qfq, Scheduler, Stfq,
    Wf2qPlus,
};
use std::collections::VecDeque;
use std::hint::black_box;

const BACKLOG_PER_FLOW: usize = 16;

/// A fixed pseudo-random sequence of packets over `flows` flows.
fn packets(flows: u32) -> Vec<Packet> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..4096)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let flow = (x % u64::from(flows)) as u32;
            Packet::new(flow, 64 + (x >> 32) as u32 % 1437)
                .class(flow % 8)
                .buffer(i)
        })
        .collect()
}

fn steady<S: Scheduler>(c: &mut Criterion, name: &str, flows: u32, mut s: S) {
    let pkts = packets(flows);
    for p in pkts.iter().cycle().take(flows as usize * BACKLOG_PER_FLOW) {
        s.enqueue(*p, 0).unwrap();
    }
    let mut i = 0;
    c.bench_with_input(BenchmarkId::new(name, flows), &flows, |b, _| {
        b.iter(|| {
            s.enqueue(pkts[i % pkts.len()], 0).unwrap();
            i += 1;
            black_box(s.dequeue(0))
        });
    });
}

fn per_flow<C: FlowCore>(s: PerFlow<C>, flows: u32) -> PerFlow<C> {
    let mut s = s;
    for f in 0..flows {
        s.add_flow(f, FlowConfig::weight(1).max_packet(1500))
            .unwrap();
    }
    s
}

fn pairs(c: &mut Criterion) {
    for flows in [8u32, 1024] {
        let cap = flows as usize * BACKLOG_PER_FLOW + 16;
        let pkts = packets(flows);
        let mut ring: VecDeque<Packet> = pkts.iter().cycle().take(cap - 16).copied().collect();
        let mut i = 0;
        c.bench_with_input(BenchmarkId::new("none", flows), &flows, |b, _| {
            b.iter(|| {
                ring.push_back(pkts[i % pkts.len()]);
                i += 1;
                black_box(ring.pop_front())
            });
        });
        steady(c, "fifo", flows, Fifo::new(cap));
        steady(c, "prio", flows, Prio::new(8, cap).unwrap());
        steady(
            c,
            "drr",
            flows,
            per_flow(Drr::new(flows, cap).unwrap(), flows),
        );
        steady(
            c,
            "qfq",
            flows,
            per_flow(Qfq::with_max_packet(flows, cap, 1500).unwrap(), flows),
        );
        steady(
            c,
            "wf2q+",
            flows,
            per_flow(Wf2qPlus::new(flows, cap).unwrap(), flows),
        );
        steady(
            c,
            "stfq",
            flows,
            per_flow(Stfq::new(flows, cap).unwrap(), flows),
        );
    }
}

criterion_group!(benches, pairs);
criterion_main!(benches);
