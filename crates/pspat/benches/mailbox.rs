//! Mailbox transfer cost: the FastForward mailbox against `std::sync::mpsc`'s
//! bounded channel (the standard library's lock-free baseline), moving packet
//! descriptors from a producer thread pinned to CPU 0 to a consumer pinned to
//! CPU 1. Waiting sides spin briefly and then yield, so that a machine with other
//! load (both threads on one CPU) degrades instead of stalling a time slice per
//! handoff.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use eiffel_pspat::affinity::pin_current_thread;
use eiffel_pspat::mailbox::{mailbox, PushError};
use eiffel_sched::Packet;
use std::hint::black_box;

const BATCH: u64 = 100_000;

/// Waits one step: spins, and yields every 64th call.
fn backoff(step: &mut u32) {
    *step = step.wrapping_add(1);
    if *step % 64 == 0 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

fn transfer(c: &mut Criterion) {
    let _ = pin_current_thread(1);
    let mut g = c.benchmark_group("mailbox_transfer");
    g.throughput(Throughput::Elements(BATCH));
    g.bench_function("fastforward", |b| {
        b.iter_batched(
            || mailbox::<Packet>(1022).unwrap(),
            |(mut tx, mut rx)| {
                let producer = std::thread::spawn(move || {
                    let _ = pin_current_thread(0);
                    let mut step = 0;
                    for i in 0..BATCH {
                        let mut p = Packet::new(0, 60).buffer(i as u32);
                        while let Err(PushError::Full(back)) = tx.push(p) {
                            p = back;
                            backoff(&mut step);
                        }
                    }
                });
                let mut got = 0;
                let mut step = 0;
                while got < BATCH {
                    if let Some(p) = rx.pop() {
                        black_box(p);
                        got += 1;
                    } else {
                        backoff(&mut step);
                    }
                }
                producer.join().unwrap();
            },
            BatchSize::PerIteration,
        );
    });
    g.bench_function("std_sync_channel", |b| {
        b.iter_batched(
            || std::sync::mpsc::sync_channel::<Packet>(1022),
            |(tx, rx)| {
                let producer = std::thread::spawn(move || {
                    let _ = pin_current_thread(0);
                    for i in 0..BATCH {
                        tx.send(Packet::new(0, 60).buffer(i as u32)).unwrap();
                    }
                });
                for _ in 0..BATCH {
                    black_box(rx.recv().unwrap());
                }
                producer.join().unwrap();
            },
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = transfer
}
criterion_main!(benches);
