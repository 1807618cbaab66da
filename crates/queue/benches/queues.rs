//! Criterion benchmarks: the cost of one insert + pop-min pair on every queue kind,
//! in steady state (the queue holds a fixed backlog spread over its buckets; each
//! iteration inserts one element a little ahead of the minimum and pops the
//! minimum). The comparison heap is the baseline measured in the same run.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eiffel_queue::{AnyQueue, PriorityQueue, QueueConfig, QueueKind};
use std::hint::black_box;

const BUCKETS: usize = 10_000;

fn pairs(c: &mut Criterion) {
    let mut group = c.benchmark_group("insert_pop_pair");
    group.throughput(Throughput::Elements(1));
    for backlog in [1_000usize, 10_000] {
        for kind in QueueKind::ALL {
            if kind == QueueKind::Ffs {
                continue;
            }
            let buckets = BUCKETS;
            let cfg = QueueConfig::new(buckets, backlog + 1);
            let mut q: AnyQueue<u32> = AnyQueue::new(kind, cfg).expect("valid configuration");
            // A moving workload for circular queues, a wrapping one for fixed ranges.
            let span = if kind.is_circular() {
                buckets as u64
            } else {
                buckets as u64 / 2
            };
            let mut x: u64 = 1;
            let mut next = |min: u64| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if kind.is_circular() {
                    min + x % span
                } else {
                    x % span
                }
            };
            for _ in 0..backlog {
                let r = next(0);
                q.insert(r, 0).expect("capacity");
            }
            group.bench_with_input(BenchmarkId::new(kind.name(), backlog), &backlog, |b, _| {
                b.iter(|| {
                    let (rank, v) = q.pop_min().expect("backlogged");
                    let r = next(rank);
                    q.insert(black_box(r), v).expect("capacity");
                });
            });
        }
    }
    group.finish();

    let mut group = c.benchmark_group("insert_pop_pair_ffs");
    group.throughput(Throughput::Elements(1));
    let mut q: AnyQueue<u32> =
        AnyQueue::new(QueueKind::Ffs, QueueConfig::new(64, 257)).expect("valid");
    for i in 0..256u64 {
        q.insert(i % 64, 0).expect("capacity");
    }
    let mut x = 7u64;
    group.bench_function("ffs/256", |b| {
        b.iter(|| {
            let (_, v) = q.pop_min().expect("backlogged");
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            q.insert(black_box((x >> 58) & 63), v).expect("capacity");
        });
    });
    group.finish();
}

criterion_group!(benches, pairs);
criterion_main!(benches);
