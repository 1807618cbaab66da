//! Mailbox transfer cost under criterion: the same transfer code as
//! `eiffel bench mailbox` (`eiffel_bench::mailbox`), PSPAT's mailbox against
//! rtrb, ringbuf and crossbeam's ArrayQueue, moving packet descriptors and
//! pointer-sized values from a producer pinned to CPU 0 to a consumer pinned to
//! CPU 1, one at a time and 32 at a time.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use eiffel_bench::mailbox::{transfer, Item, Ring, Setup};
use eiffel_sched::Packet;

const COUNT: u64 = 200_000;

fn group<T: Item>(c: &mut Criterion) {
    let mut g = c.benchmark_group(format!("mailbox_transfer_{}", T::NAME));
    g.throughput(Throughput::Elements(COUNT));
    for batch in [1, 32] {
        for ring in Ring::ALL {
            let setup = Setup {
                count: COUNT,
                capacity: 1024,
                batch,
                producer_cpu: 0,
                consumer_cpu: 1,
            };
            g.bench_function(format!("{}/batch{batch}", ring.name()), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| transfer::<T>(ring, setup)).sum());
            });
        }
    }
    g.finish();
}

fn transfers(c: &mut Criterion) {
    group::<u64>(c);
    group::<Packet>(c);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = transfers
}
criterion_main!(benches);
