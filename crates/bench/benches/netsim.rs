//! Criterion benchmarks of the simulator's event list: Eiffel's timing wheel
//! with a heap beyond its horizon ([`WheelQueue`]) against `std`'s binary heap
//! ([`HeapQueue`]), the baseline measured in the same run, on the same hold
//! model: with `n` events pending, pop the earliest and push one at a
//! pseudo-random offset, 90% within 5 us (the hops of a data-centre fabric)
//! and 10% within 1 ms (timers, arrivals). `eiffel bench netsim` measures the
//! same lists inside whole simulations.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use eiffel_netsim::event::{Event, EventKind, EventQueue, HeapQueue, WheelQueue};
use eiffel_netsim::time::{Duration, Time};
use std::hint::black_box;

/// Xorshift offsets, identical for both lists.
struct Offsets(u64);

impl Offsets {
    fn next(&mut self) -> Duration {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        let r = self.0;
        Duration::from_nanos(if r % 10 == 0 {
            r % 1_000_000
        } else {
            r % 5_000
        })
    }
}

fn hold<Q: EventQueue>(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    pending: usize,
) {
    let mut q = Q::with_capacity(pending + 16, Duration::from_micros(8));
    let mut x = Offsets(0x2545_f491_4f6c_dd1d);
    for i in 0..pending {
        q.push(
            Time::ZERO,
            Time::ZERO + x.next(),
            Event::new(EventKind::Arrive, i as u32, 0),
        );
    }
    g.bench_with_input(BenchmarkId::new(name, pending), &pending, |b, _| {
        b.iter(|| {
            let (now, ev) = q.pop().expect("n events stay pending");
            q.push(now, now + x.next(), black_box(ev));
        });
    });
}

fn events(c: &mut Criterion) {
    let mut g = c.benchmark_group("event_list_hold");
    g.throughput(Throughput::Elements(1));
    for pending in [1_000, 10_000, 100_000] {
        hold::<WheelQueue>(&mut g, "timing_wheel", pending);
        hold::<HeapQueue>(&mut g, "binary_heap", pending);
    }
    g.finish();
}

criterion_group!(benches, events);
criterion_main!(benches);
