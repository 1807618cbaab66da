//! `eiffel bench mailbox`: PSPAT's FastForward mailbox against the single-producer
//! single-consumer rings a user would pick instead (`rtrb`, `ringbuf`, and
//! `crossbeam`'s `ArrayQueue`), in the same run: a producer thread on one CPU moves
//! values to a consumer on the other, one at a time (each ring's single-value
//! push and pop) and in batches (each ring's slice or chunk calls; ours writes
//! in place with `push_iter` and reads in place with `read_with`, as rtrb's
//! chunks do), for a
//! pointer-sized value (what the paper's mailboxes carry) and for a packet
//! descriptor (what the PSPAT runtime carries). Each figure is the median of
//! several runs with its spread, next to the cross-CPU round trip measured before
//! the runs (see [`crate::probe`]).
//!
//! The transfer functions are public: the criterion bench `benches/mailbox.rs`
//! measures the same code.

use crate::probe::round_trip_ns;
use crate::report::{fmt_f, print_results, Table};
use crate::summary::Summary;
use crate::{BenchError, CommonOpts};
use clap::Args;
use crossbeam_queue::ArrayQueue;
use eiffel_pspat::affinity::{cpu_count, pin_current_thread};
use eiffel_pspat::mailbox::{mailbox, PushError};
use eiffel_sched::Packet;
use ringbuf::traits::{Consumer as _, Producer as _, Split as _};
use serde::Serialize;
use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Options of `eiffel bench mailbox`.
#[derive(Debug, Clone, Args)]
pub struct MailboxOpts {
    #[command(flatten)]
    /// Options every benchmark accepts.
    pub common: CommonOpts,
    /// Values a ring holds (each ring gets at least this many slots).
    #[arg(long, default_value_t = 1024)]
    pub capacity: usize,
    /// Values per batched push and read.
    #[arg(long, default_value_t = 32)]
    pub batch: usize,
    /// Runs of each measurement (median and spread reported). Default 3 with
    /// --quick, 5 otherwise.
    #[arg(long)]
    pub repeat: Option<usize>,
    /// CPU of the producer.
    #[arg(long, default_value_t = 0)]
    pub producer_cpu: usize,
    /// CPU of the consumer.
    #[arg(long, default_value_t = 1)]
    pub consumer_cpu: usize,
}

/// The rings compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ring {
    /// PSPAT's FastForward mailbox (`eiffel_pspat::mailbox`).
    FastForward,
    /// `rtrb::RingBuffer`: Lamport indices, each side caching the other's.
    Rtrb,
    /// `ringbuf::HeapRb`.
    Ringbuf,
    /// `crossbeam_queue::ArrayQueue`: bounded multi-producer multi-consumer; no
    /// batch operations, so its batched runs move one value at a time.
    CrossbeamArrayQueue,
}

impl Ring {
    /// Every ring, ours first.
    pub const ALL: [Ring; 4] = [
        Ring::FastForward,
        Ring::Rtrb,
        Ring::Ringbuf,
        Ring::CrossbeamArrayQueue,
    ];

    /// Name in tables and JSON.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Ring::FastForward => "fastforward",
            Ring::Rtrb => "rtrb",
            Ring::Ringbuf => "ringbuf",
            Ring::CrossbeamArrayQueue => "crossbeam-arrayqueue",
        }
    }
}

/// A value to move: made from a sequence number, which the consumer checks.
pub trait Item: Copy + Send + Sync + Default + 'static {
    /// Name in tables.
    const NAME: &'static str;
    /// The `i`-th value.
    fn make(i: u64) -> Self;
    /// The sequence number carried.
    fn seq(&self) -> u64;
}

impl Item for u64 {
    const NAME: &'static str = "u64";
    fn make(i: u64) -> Self {
        i
    }
    fn seq(&self) -> u64 {
        *self
    }
}

/// A packet descriptor, as the PSPAT runtime moves them (56 bytes).
impl Item for Packet {
    const NAME: &'static str = "packet";
    fn make(i: u64) -> Self {
        Packet::new(0, 60).buffer(i as u32).at(i)
    }
    fn seq(&self) -> u64 {
        self.arrival
    }
}

/// Spin hints between two looks at a full or empty ring: a side that finds
/// nothing to do leaves the ring alone for a moment instead of pulling the line
/// the other side is writing (PSPAT's arbiter reads each mailbox once per round
/// for the same reason). The same for every ring.
const IDLE_SPINS: u32 = 32;

/// Waits one step on a full or empty ring: spins [`IDLE_SPINS`] times, and yields
/// every 64th call, so that on a machine with other load a side whose partner was
/// descheduled gives its CPU away instead of spinning through a time slice.
#[inline]
fn backoff(step: &mut u32) {
    *step = step.wrapping_add(1);
    if *step % 64 == 0 {
        std::thread::yield_now();
    } else {
        for _ in 0..IDLE_SPINS {
            std::hint::spin_loop();
        }
    }
}

/// Where the two threads run and what they move.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Values to move.
    pub count: u64,
    /// Values a ring holds at least.
    pub capacity: usize,
    /// Values per batched operation; 1 moves values one at a time.
    pub batch: usize,
    /// CPU of the producer.
    pub producer_cpu: usize,
    /// CPU of the consumer.
    pub consumer_cpu: usize,
}

/// The producer's and the consumer's loops for one ring, started together.
fn run_pair<P, C>(setup: Setup, produce: P, consume: C) -> Duration
where
    P: FnOnce() + Send,
    C: FnOnce() -> u64 + Send,
{
    let start = Barrier::new(2);
    std::thread::scope(|s| {
        let start_p = &start;
        let producer = s.spawn(move || {
            let _ = pin_current_thread(setup.producer_cpu);
            start_p.wait();
            produce();
        });
        let consumer = s.spawn(|| {
            let _ = pin_current_thread(setup.consumer_cpu);
            start.wait();
            let t0 = Instant::now();
            let sum = consume();
            let elapsed = t0.elapsed();
            let n = setup.count;
            assert_eq!(sum, n * (n - 1) / 2, "values lost or reordered");
            elapsed
        });
        producer.join().expect("producer panicked");
        consumer.join().expect("consumer panicked")
    })
}

/// Moves `setup.count` values of `T` through `ring`; the consumer's elapsed time.
/// A batch of one moves values through each ring's single-value calls, as a user
/// moving one value at a time would write it.
#[must_use]
pub fn transfer<T: Item>(ring: Ring, setup: Setup) -> Duration {
    match (ring, setup.batch <= 1) {
        (Ring::FastForward, true) => fastforward_single::<T>(setup),
        (Ring::FastForward, false) => fastforward::<T>(setup),
        (Ring::Rtrb, true) => rtrb_single::<T>(setup),
        (Ring::Rtrb, false) => rtrb_ring::<T>(setup),
        (Ring::Ringbuf, true) => ringbuf_single::<T>(setup),
        (Ring::Ringbuf, false) => ringbuf_ring::<T>(setup),
        (Ring::CrossbeamArrayQueue, _) => arrayqueue::<T>(setup),
    }
}

/// Moves `$setup.count` values of `T` one at a time and returns the consumer's
/// elapsed time. `$push` is an expression of the value `$v` that is `Err(value)`
/// when the ring is full; `$pop` is `Some(value)` or `None` when it is empty. A
/// macro rather than a function taking closures: the closure form made packets
/// one at a time 1.8-3.5x slower (measured), this expands to the loops in place.
macro_rules! one_at_a_time {
    ($setup:expr, |$v:ident| $push:expr, $pop:expr) => {{
        let setup: Setup = $setup;
        let n = setup.count;
        let produce = move || {
            let mut step = 0;
            for i in 0..n {
                let mut $v = T::make(i);
                while let Err(back) = $push {
                    $v = back;
                    backoff(&mut step);
                }
            }
        };
        let consume = move || {
            let (mut got, mut sum, mut step) = (0, 0u64, 0);
            while got < n {
                match $pop {
                    Some(v) => {
                        sum += black_box(&v).seq();
                        got += 1;
                    }
                    None => backoff(&mut step),
                }
            }
            sum
        };
        run_pair(setup, produce, consume)
    }};
}

fn fastforward_single<T: Item>(setup: Setup) -> Duration {
    let (mut tx, mut rx) = mailbox::<T>(setup.capacity).expect("capacity in range");
    one_at_a_time!(
        setup,
        |v| tx.push(v).map_err(PushError::into_inner),
        rx.pop()
    )
}

fn rtrb_single<T: Item>(setup: Setup) -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<T>::new(setup.capacity);
    one_at_a_time!(
        setup,
        |v| tx.push(v).map_err(|rtrb::PushError::Full(back)| back),
        rx.pop().ok()
    )
}

fn ringbuf_single<T: Item>(setup: Setup) -> Duration {
    let (mut tx, mut rx) = ringbuf::HeapRb::<T>::new(setup.capacity).split();
    one_at_a_time!(setup, |v| tx.try_push(v), rx.try_pop())
}

fn fastforward<T: Item>(setup: Setup) -> Duration {
    let (mut tx, mut rx) = mailbox::<T>(setup.capacity).expect("capacity in range");
    let (n, batch) = (setup.count, setup.batch.max(1));
    let produce = move || {
        let (mut i, mut step) = (0, 0);
        while i < n {
            let end = n.min(i + batch as u64);
            let k = tx.push_iter((i..end).map(T::make));
            if k == 0 {
                backoff(&mut step);
            }
            i += k as u64;
        }
    };
    let consume = move || {
        let (mut got, mut sum, mut step) = (0, 0u64, 0);
        while got < n {
            let k = rx.read_with(batch, |v| sum += black_box(v).seq());
            if k == 0 {
                backoff(&mut step);
                continue;
            }
            rx.release(k);
            got += k as u64;
        }
        sum
    };
    run_pair(setup, produce, consume)
}

fn rtrb_ring<T: Item>(setup: Setup) -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<T>::new(setup.capacity);
    let (n, batch) = (setup.count, setup.batch.max(1));
    let produce = move || {
        let (mut i, mut step) = (0, 0);
        while i < n {
            let want = batch.min((n - i) as usize).min(tx.slots());
            if want == 0 {
                backoff(&mut step);
                continue;
            }
            let chunk = tx.write_chunk_uninit(want).expect("slots checked");
            let written = chunk.fill_from_iter((i..i + want as u64).map(T::make));
            i += written as u64;
        }
    };
    let consume = move || {
        let (mut got, mut sum, mut step) = (0, 0u64, 0);
        while got < n {
            let k = batch.min(rx.slots());
            if k == 0 {
                backoff(&mut step);
                continue;
            }
            let chunk = rx.read_chunk(k).expect("slots checked");
            let (a, b) = chunk.as_slices();
            for v in a.iter().chain(b) {
                sum += black_box(v).seq();
            }
            chunk.commit_all();
            got += k as u64;
        }
        sum
    };
    run_pair(setup, produce, consume)
}

fn ringbuf_ring<T: Item>(setup: Setup) -> Duration {
    let rb = ringbuf::HeapRb::<T>::new(setup.capacity);
    let (mut tx, mut rx) = rb.split();
    let (n, batch) = (setup.count, setup.batch.max(1));
    let produce = move || {
        let mut step = 0;
        let mut buf: Vec<T> = Vec::with_capacity(batch);
        let mut i = 0;
        while i < n {
            buf.clear();
            buf.extend((i..n.min(i + batch as u64)).map(T::make));
            let mut sent = 0;
            while sent < buf.len() {
                let k = tx.push_slice(&buf[sent..]);
                if k == 0 {
                    backoff(&mut step);
                }
                sent += k;
            }
            i += buf.len() as u64;
        }
    };
    let consume = move || {
        let (mut got, mut sum, mut step) = (0, 0u64, 0);
        let mut buf: Vec<T> = vec![T::default(); batch];
        while got < n {
            let k = rx.pop_slice(&mut buf);
            if k == 0 {
                backoff(&mut step);
                continue;
            }
            for v in &buf[..k] {
                sum += black_box(v).seq();
            }
            got += k as u64;
        }
        sum
    };
    run_pair(setup, produce, consume)
}

fn arrayqueue<T: Item>(setup: Setup) -> Duration {
    let q = ArrayQueue::<T>::new(setup.capacity);
    let q = &q;
    one_at_a_time!(setup, |v| q.push(v), q.pop())
}

/// One result (`--json`).
#[derive(Debug, Clone, Serialize)]
struct Record {
    ring: &'static str,
    item: &'static str,
    batch: usize,
    mpps: Summary,
    ns_per_transfer: f64,
    rtt_ns: Option<f64>,
}

/// Runs the benchmark.
pub fn run(opts: &MailboxOpts) -> Result<(), BenchError> {
    if opts.batch == 0 || opts.batch > opts.capacity {
        return Err("--batch: must be in 1..=capacity".into());
    }
    if opts.capacity < 2 || opts.capacity > 1 << 20 {
        return Err("--capacity: must be in 2..=1048576".into());
    }
    let cpus = cpu_count();
    if opts.producer_cpu >= cpus || opts.consumer_cpu >= cpus {
        return Err(format!("--producer-cpu/--consumer-cpu: this machine has {cpus} cpus").into());
    }
    let quick = opts.common.quick;
    let repeat = opts.repeat.unwrap_or(if quick { 3 } else { 5 }).max(1);
    let rtt = round_trip_ns(opts.producer_cpu, opts.consumer_cpu, 500);
    let mut records = Vec::new();
    let mut table = Table::new(["item", "ring", "batch", "Mpps", "±", "ns/transfer"]);
    for (item, count) in [("u64", 20_000_000u64), ("packet", 10_000_000)] {
        let count = if quick { count / 5 } else { count };
        for batch in [1, opts.batch] {
            for ring in Ring::ALL {
                let setup = Setup {
                    count,
                    capacity: opts.capacity,
                    batch,
                    producer_cpu: opts.producer_cpu,
                    consumer_cpu: opts.consumer_cpu,
                };
                let runs: Vec<f64> = (0..repeat)
                    .map(|_| {
                        let d = match item {
                            "u64" => transfer::<u64>(ring, setup),
                            _ => transfer::<Packet>(ring, setup),
                        };
                        count as f64 / d.as_secs_f64() / 1e6
                    })
                    .collect();
                let mpps = Summary::of(&runs);
                table.row([
                    item.to_string(),
                    ring.name().to_string(),
                    batch.to_string(),
                    fmt_f(mpps.median, 1),
                    mpps.spread_cell(),
                    fmt_f(1e3 / mpps.median, 2),
                ]);
                if mpps.too_wide() {
                    eprintln!(
                        "warning: {item} {} batch {batch}: runs spread {:.0}% (> 10%)",
                        ring.name(),
                        mpps.spread * 100.0
                    );
                }
                records.push(Record {
                    ring: ring.name(),
                    item,
                    batch,
                    ns_per_transfer: 1e3 / mpps.median,
                    mpps,
                    rtt_ns: rtt,
                });
            }
        }
    }
    if opts.common.json {
        print_results(&records)?;
    } else {
        crate::outln!(
            "SPSC transfer, producer on cpu {} and consumer on cpu {}, {} values per ring, \
             median of {repeat} runs; cross-cpu round trip {} \
             (crossbeam's ArrayQueue has no batch operations: its batched rows move one value at a time)",
            opts.producer_cpu,
            opts.consumer_cpu,
            opts.capacity,
            rtt.map_or("unknown".into(), |r| format!("{r:.0} ns"))
        );
        crate::out!("{}", table.render());
    }
    Ok(())
}
