//! Criterion benchmarks of the integer priority queues against the queues a Rust
//! user would pick instead, on the workloads of `eiffel bench queues` (the same
//! generators, `eiffel_bench::queues::workload`):
//!
//! - `hold/<queue>/<live>`: one pop-min + insert pair of the hold model (each
//!   element re-inserted 1..=10,000 ranks after the minimum it replaced) with 1k
//!   and 10k live elements: cffs, the logical calendar queue (flat and two-level)
//!   and the baselines std_binary_heap, radix_heap, btreemap and binary_heap, and
//!   plain_buckets, the floor (a bucket queue without handles).
//! - `fill_drain/<queue>`: fill 10,000 buckets with one element each in random
//!   order, then drain (Eiffel Fig. 12's first point), per element.
//!
//! `cargo bench -p eiffel-bench --bench queues`; the full sweeps with ratios are
//! `eiffel bench queues`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eiffel_bench::queues::baselines::{BTree, Eiffel, MinQueue, RadixHeap, StdHeap};
use eiffel_bench::queues::plain::PlainBuckets;
use eiffel_bench::queues::workload::{fill_drain, fill_drain_ranks, Hold};
use eiffel_queue::{BinaryHeapQueue, Calendar, CalendarConfig, Cffs, Hffs, QueueConfig};
use rand::rngs::SmallRng;
use rand::SeedableRng;
use std::hint::black_box;

/// Buckets per half of cffs, days of the calendars: beyond the hold model's span.
const BUCKETS: usize = 16_384;

fn hold_one<Q: MinQueue>(c: &mut Criterion, name: &str, live: usize, mut q: Q) {
    let mut hold = Hold::new(0x401d);
    hold.fill(&mut q, live);
    hold.run(&mut q, 4 * live as u64);
    let mut group = c.benchmark_group("hold");
    group.throughput(Throughput::Elements(1));
    group.bench_with_input(BenchmarkId::new(name, live), &live, |b, _| {
        b.iter(|| black_box(hold.step(&mut q)));
    });
    group.finish();
}

fn hold(c: &mut Criterion) {
    for live in [1_000usize, 10_000] {
        let cfg = QueueConfig::new(BUCKETS, live);
        hold_one(
            c,
            "cffs",
            live,
            Eiffel(Cffs::<u32>::new(cfg).expect("valid")),
        );
        hold_one(
            c,
            "calendar",
            live,
            Eiffel(Calendar::<u32>::new(cfg.into()).expect("valid")),
        );
        let two_level = CalendarConfig::hierarchical(&[128, BUCKETS / 128], live);
        hold_one(
            c,
            "calendar_2level",
            live,
            Eiffel(Calendar::<u32>::new(two_level).expect("valid")),
        );
        hold_one(c, "std_binary_heap", live, StdHeap::with_capacity(live));
        hold_one(c, "radix_heap", live, RadixHeap::new());
        hold_one(c, "btreemap", live, BTree::default());
        hold_one(
            c,
            "binary_heap",
            live,
            Eiffel(BinaryHeapQueue::<u32>::new(cfg).expect("valid")),
        );
        hold_one(c, "plain_buckets", live, PlainBuckets::new(live));
    }
}

fn fill_drain_one<Q: MinQueue>(c: &mut Criterion, name: &str, ranks: &[u64], mut q: Q) {
    let mut group = c.benchmark_group("fill_drain");
    group.throughput(Throughput::Elements(ranks.len() as u64));
    group.bench_function(name, |b| b.iter(|| black_box(fill_drain(&mut q, ranks))));
    group.finish();
}

fn fill_then_drain(c: &mut Criterion) {
    let buckets = 10_000;
    let all: Vec<usize> = (0..buckets).collect();
    let ranks = fill_drain_ranks(&all, 1, &mut SmallRng::seed_from_u64(12));
    let cfg = QueueConfig::new(buckets, ranks.len());
    fill_drain_one(
        c,
        "cffs",
        &ranks,
        Eiffel(Cffs::<u32>::new(cfg).expect("valid")),
    );
    fill_drain_one(
        c,
        "hffs",
        &ranks,
        Eiffel(Hffs::<u32>::new(cfg).expect("valid")),
    );
    fill_drain_one(
        c,
        "std_binary_heap",
        &ranks,
        StdHeap::with_capacity(buckets),
    );
    fill_drain_one(c, "radix_heap", &ranks, RadixHeap::new());
    fill_drain_one(c, "btreemap", &ranks, BTree::default());
    fill_drain_one(
        c,
        "binary_heap",
        &ranks,
        Eiffel(BinaryHeapQueue::<u32>::new(cfg).expect("valid")),
    );
}

criterion_group!(benches, hold, fill_then_drain);
criterion_main!(benches);
