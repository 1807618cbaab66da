//! Criterion benches of the policy workloads of `eiffel bench policy`
//! (`eiffel_bench::policy::workload`): nanoseconds per packet of a pFabric
//! per-flow leaf and of an hClock root over 4096 flows or leaves, each on a cffs
//! and on a binary heap side by side, and of pacing 20,000 flows with the policy
//! tree's one shaper against a minimal pacer on a timing wheel or a heap.
//!
//! `cargo bench -p eiffel-bench --bench policy`; the sweep with the largest
//! number of flows one core schedules at 10 Gbit/s is `eiffel bench policy`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use eiffel_bench::policy::workload::{
    paced_limit, pacing_tree, pacing_wheel, Hclock, Pacer, Pacing, Pfabric, PACED_FLOWS,
};
use eiffel_queue::{BinaryHeapQueue, QueueConfig, QueueKind};

const FLOWS: u32 = 4096;

fn pfabric(c: &mut Criterion) {
    for kind in [QueueKind::Cffs, QueueKind::BinaryHeap] {
        let mut w = Pfabric::new(FLOWS, kind).expect("valid pfabric tree");
        let id = BenchmarkId::new(format!("pfabric/{}", kind.name()), FLOWS);
        c.bench_with_input(id, &FLOWS, |b, _| b.iter(|| w.step()));
    }
}

fn hclock(c: &mut Criterion) {
    for (name, kind) in [("cffs", None), ("binary_heap", Some(QueueKind::BinaryHeap))] {
        let mut w = Hclock::new(FLOWS, kind).expect("valid hclock tree");
        let id = BenchmarkId::new(format!("hclock/{name}"), FLOWS);
        c.bench_with_input(id, &FLOWS, |b, _| b.iter(|| w.step()));
    }
}

fn pacing(c: &mut Criterion) {
    let capacity = (PACED_FLOWS * 2) as usize;
    let mut tree = Pacing::new(pacing_tree().expect("valid pacing tree"));
    let id = BenchmarkId::new("pacing/policy-tree", PACED_FLOWS);
    c.bench_with_input(id, &PACED_FLOWS, |b, _| b.iter(|| tree.step()));
    let wheel = pacing_wheel().expect("valid wheel");
    let mut wheel = Pacing::new(Pacer::new(PACED_FLOWS, capacity, paced_limit(), wheel));
    let id = BenchmarkId::new("pacing/pacer-wheel", PACED_FLOWS);
    c.bench_with_input(id, &PACED_FLOWS, |b, _| b.iter(|| wheel.step()));
    let heap =
        BinaryHeapQueue::<u32>::new(QueueConfig::new(1, PACED_FLOWS as usize)).expect("valid heap");
    let mut heap = Pacing::new(Pacer::new(PACED_FLOWS, capacity, paced_limit(), heap));
    let id = BenchmarkId::new("pacing/pacer-heap", PACED_FLOWS);
    c.bench_with_input(id, &PACED_FLOWS, |b, _| b.iter(|| heap.step()));
}

criterion_group!(benches, pfabric, hclock, pacing);
criterion_main!(benches);
