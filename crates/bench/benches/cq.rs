//! Criterion benches of the calendar-queue disciplines against their bucketed
//! counterparts, through one per-flow leaf of the policy tree: nanoseconds per
//! packet (one enqueue and one dequeue) in steady state on the workload of
//! `eiffel bench cq` (`eiffel_bench::cq::workload`), for 64 and 4096 flows.
//! `cq-wfq` runs against the tree's `wfq` on a cffs, `cq-edf` against `edf` on a
//! cffs, measured side by side.
//!
//! `cargo bench -p eiffel-bench --bench cq`; the sweep with ratios is
//! `eiffel bench cq`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use eiffel_bench::cq::workload::{cases, Steady};
use eiffel_sched::tree::Discipline;
use std::hint::black_box;

fn steady(c: &mut Criterion, case: &str, d: &Discipline, flows: u32) {
    let mut w = Steady::new(d, flows).expect("valid bench policy");
    let queue = if matches!(d, Discipline::Calendar(_)) {
        "calendar"
    } else {
        "cffs"
    };
    let id = BenchmarkId::new(format!("{case}/{queue}"), flows);
    c.bench_with_input(id, &flows, |b, _| b.iter(|| black_box(w.step())));
}

fn pairs(c: &mut Criterion) {
    for flows in [64u32, 4096] {
        for (case, base, cal) in &cases() {
            steady(c, case, base, flows);
            steady(c, case, cal, flows);
        }
    }
}

criterion_group!(benches, pairs);
criterion_main!(benches);
