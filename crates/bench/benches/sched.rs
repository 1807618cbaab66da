//! Criterion benches of the schedulers: nanoseconds per enqueue/dequeue pair on
//! the controller workloads of `eiffel bench sched` (the same generator,
//! `eiffel_bench::sched::workload`), for 64 and 4096 flows of weight 1:
//! `balanced` (1000-byte packets to the least-backlogged flow, between 0 and 20N
//! queued) and `full` (random flows and lengths, 3N to 30N queued). The baseline
//! `none` moves the same packets through a plain ring, measured alongside; FIFO,
//! DRR, QFQ, WF²Q+ and STFQ follow.
//!
//! `cargo bench -p eiffel-bench --bench sched`; the full sweep of qfq.txt Table 4
//! is `eiffel bench sched`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eiffel_bench::sched::workload::{drive, fill, Generator, Load, Ring, Sched, Target};
use eiffel_sched::{
    Drr, Fifo, FlowConfig, FlowScheduler, PacketCore, PerFlow, Qfq, Stfq, Wf2qPlus,
};

/// Pairs per criterion iteration: whole balanced cycles for every flow count.
fn batch(load: Load, flows: u32) -> u64 {
    load.cycle(u64::from(flows)).max(1024)
}

fn one<T: Target>(c: &mut Criterion, load: Load, name: &str, flows: u32, mut t: T) {
    let n = u64::from(flows);
    let mut g = Generator::new(flows, 0x9e37_79b9_7f4a_7c15 ^ n);
    let mut backlog = 0;
    if load == Load::Full {
        backlog = fill(&mut t, &mut g, n);
    }
    let pairs = batch(load, flows);
    let mut group = c.benchmark_group(load.name());
    group.throughput(Throughput::Elements(pairs));
    group.bench_with_input(BenchmarkId::new(name, flows), &flows, |b, _| {
        b.iter(|| drive(&mut t, &mut g, load, n, pairs, &mut backlog));
    });
    group.finish();
}

fn per_flow<C: PacketCore>(mut s: PerFlow<C>, flows: u32) -> Sched<PerFlow<C>> {
    for f in 0..flows {
        s.add_flow(f, FlowConfig::weight(1).max_packet(1500).quantum(1500))
            .expect("valid flow");
    }
    Sched(s)
}

fn pairs(c: &mut Criterion) {
    for load in [Load::Balanced, Load::Full] {
        for flows in [64u32, 4096] {
            let cap = load.max_backlog(u64::from(flows)) as usize + 2048;
            one(c, load, "none", flows, Ring::new(cap));
            one(c, load, "fifo", flows, Sched(Fifo::new(cap)));
            let drr = Drr::new(flows, cap).expect("valid");
            one(c, load, "drr", flows, per_flow(drr, flows));
            let qfq = Qfq::with_max_packet(flows, cap, 1500).expect("valid");
            one(c, load, "qfq", flows, per_flow(qfq, flows));
            let wf2q = Wf2qPlus::new(flows, cap).expect("valid");
            one(c, load, "wf2q+", flows, per_flow(wf2q, flows));
            let stfq = Stfq::new(flows, cap).expect("valid");
            one(c, load, "stfq", flows, per_flow(stfq, flows));
        }
    }
}

criterion_group!(benches, pairs);
criterion_main!(benches);
