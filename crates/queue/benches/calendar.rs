//! Criterion benchmarks of the calendar queue against `cffs`, the baseline measured
//! in the same run, on the same workload: the cost of one enqueue + dequeue pair in
//! steady state. The queue holds a fixed backlog spread over its range; each
//! iteration serves the minimum and files one element a pseudo-random number of
//! days (buckets) after it, as a fair-queueing or deadline scheduler does with its
//! rounds and deadlines. Every queue gets the same sequence of offsets.
//!
//! Rows: `cffs` (two halves of `N` buckets), `calendar` through the
//! `PriorityQueue` trait (`N` days, logical), `calendar_direct` through
//! `enqueue(n)`/`dequeue()`, and `calendar_2level` (a hierarchical calendar of
//! `100 x N/100` days, the same reach, moving far elements down once).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eiffel_queue::{Calendar, CalendarConfig, Cffs, PriorityQueue, QueueConfig};
use std::hint::black_box;

const DAYS: usize = 10_000;

/// Xorshift offsets in `0..span`, identical for every queue.
struct Offsets(u64);

impl Offsets {
    fn next(&mut self, span: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % span
    }
}

/// Fills `q` with `backlog` elements and measures pop-min + insert(min + offset).
fn trait_pairs<Q: PriorityQueue<u32>>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    q: &mut Q,
    backlog: usize,
) {
    let span = DAYS as u64;
    let mut x = Offsets(1);
    for _ in 0..backlog {
        q.insert(x.next(span), 0).expect("capacity");
    }
    c.bench_with_input(BenchmarkId::new(name, backlog), &backlog, |b, _| {
        b.iter(|| {
            let (rank, v) = q.pop_min().expect("backlogged");
            q.insert(black_box(rank + x.next(span)), v)
                .expect("capacity");
        });
    });
}

fn pairs(c: &mut Criterion) {
    let mut group = c.benchmark_group("calendar_vs_cffs");
    group.throughput(Throughput::Elements(1));
    for backlog in [1_000usize, 10_000] {
        let cfg = QueueConfig::new(DAYS, backlog + 1);
        trait_pairs(
            &mut group,
            "cffs",
            &mut Cffs::<u32>::new(cfg).expect("valid"),
            backlog,
        );
        trait_pairs(
            &mut group,
            "calendar",
            &mut Calendar::<u32>::new(cfg.into()).expect("valid"),
            backlog,
        );
        trait_pairs(
            &mut group,
            "calendar_2level",
            &mut Calendar::<u32>::new(CalendarConfig::hierarchical(
                &[100, DAYS / 100],
                backlog + 1,
            ))
            .expect("valid"),
            backlog,
        );

        let mut q = Calendar::<u32>::new(CalendarConfig::new(DAYS, backlog + 1)).expect("valid");
        let mut x = Offsets(1);
        for _ in 0..backlog {
            q.enqueue(x.next(DAYS as u64), 0).expect("capacity");
        }
        group.bench_with_input(
            BenchmarkId::new("calendar_direct", backlog),
            &backlog,
            |b, _| {
                b.iter(|| {
                    let (_, v) = q.dequeue().expect("backlogged");
                    q.enqueue(black_box(x.next(DAYS as u64)), v)
                        .expect("capacity");
                });
            },
        );
    }
    group.finish();
}

criterion_group!(benches, pairs);
criterion_main!(benches);
