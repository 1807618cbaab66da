//! What the C API costs over calling the policy tree from Rust: nanoseconds per
//! enqueue/dequeue pair through `eiffel_scheduler_enqueue` and
//! `eiffel_scheduler_dequeue` (pointer checks, the panic guard, descriptor
//! conversion) against `PolicyTree::enqueue`/`dequeue` on the same policy,
//! measured alongside. The policy is the shipped `live-uplink.toml` (strict
//! priority, a shaped voice leaf, two per-flow WFQ tenants); packets go to the
//! tenants' flows round-robin, 64 queued at a time. A last group runs the
//! shipped `hqos.toml` (`rte_sched`'s hierarchy) through the C API, which
//! picks the pipe executor for it, against the general tree from Rust.
//!
//! `cargo bench -p eiffel-capi --bench ffi`

#![allow(unsafe_code)]

use std::ffi::CString;
use std::path::Path;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use eiffel_capi::ffi::{
    eiffel_scheduler_counters, eiffel_scheduler_dequeue, eiffel_scheduler_dequeue_burst,
    eiffel_scheduler_enqueue, eiffel_scheduler_executor, eiffel_scheduler_free,
    eiffel_scheduler_leaf, eiffel_scheduler_load, EiffelScheduler,
};
use eiffel_capi::{EiffelCounters, EiffelPacket, EiffelStatus};
use eiffel_policy::Policy;
use eiffel_sched::{Packet, Scheduler};

const BATCH: u32 = 64;

fn policy_path() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/policies/live-uplink.toml")
        .display()
        .to_string()
}

fn direct(c: &mut Criterion) {
    let policy = Policy::load(policy_path()).expect("policy");
    let mut tree = policy.build();
    let leaves = [
        tree.leaf("tenant_a").unwrap(),
        tree.leaf("tenant_b").unwrap(),
    ];
    let mut now = 0u64;
    let mut g = c.benchmark_group("enqueue_dequeue");
    g.throughput(Throughput::Elements(u64::from(BATCH)));
    g.bench_function("rust", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                let p = Packet::new(i % 32, 1000)
                    .class(leaves[(i % 2) as usize])
                    .at(now);
                let _ = tree.enqueue(p, now);
            }
            for _ in 0..BATCH {
                now += 80_000;
                std::hint::black_box(tree.dequeue(now));
            }
        });
    });
    g.finish();
}

/// The shipped policy through the C API, and its two tenants' leaves.
fn load() -> (*mut EiffelScheduler, [u32; 2]) {
    let path = CString::new(policy_path()).expect("path");
    let mut s = std::ptr::null_mut();
    // SAFETY: a NUL-terminated path and a writable out pointer.
    let st = unsafe { eiffel_scheduler_load(path.as_ptr(), &mut s) };
    assert_eq!(st, EiffelStatus::Ok);
    let mut leaves = [0u32; 2];
    for (l, name) in leaves.iter_mut().zip([c"tenant_a", c"tenant_b"]) {
        // SAFETY: a live scheduler, a NUL-terminated name, a writable out.
        let st = unsafe { eiffel_scheduler_leaf(s, name.as_ptr(), l) };
        assert_eq!(st, EiffelStatus::Ok);
    }
    (s, leaves)
}

/// Offers `BATCH` 1000-byte packets at `now` through the C API, round-robin
/// over 32 flows of the two tenants (inlined: the timed loops stay as written
/// in place).
#[inline(always)]
fn enqueue_batch(s: *mut EiffelScheduler, leaves: [u32; 2], now: u64) {
    for i in 0..BATCH {
        let p = EiffelPacket {
            flow: i % 32,
            len: 1000,
            leaf: leaves[(i % 2) as usize],
            arrival_ns: now,
            deadline_ns: u64::MAX,
            ..EiffelPacket::default()
        };
        // SAFETY: a live scheduler, a readable packet, no drop record.
        let _ = unsafe { eiffel_scheduler_enqueue(s, &p, now, std::ptr::null_mut()) };
    }
}

fn capi(c: &mut Criterion) {
    let (s, leaves) = load();
    let mut now = 0u64;
    let mut out = EiffelPacket::default();
    let mut g = c.benchmark_group("enqueue_dequeue");
    g.throughput(Throughput::Elements(u64::from(BATCH)));
    g.bench_function("c_api", |b| {
        b.iter(|| {
            enqueue_batch(s, leaves, now);
            for _ in 0..BATCH {
                now += 80_000;
                // SAFETY: a live scheduler and a writable out.
                std::hint::black_box(unsafe { eiffel_scheduler_dequeue(s, now, &mut out) });
            }
        });
    });
    g.finish();
    // SAFETY: the scheduler is freed once.
    unsafe { eiffel_scheduler_free(s) };
}

/// Single dequeues against one burst dequeue through the C API, both taking
/// `BATCH` packets at one time (advanced by `BATCH` packet times at the
/// root's 100 Mbit/s, within its 125 KB burst): whether a transmit loop
/// filling a NIC's burst gains by crossing the boundary once.
fn capi_burst(c: &mut Criterion) {
    let (s, leaves) = load();
    let mut now = 0u64;
    let mut out = [EiffelPacket::default(); BATCH as usize];
    let mut g = c.benchmark_group("dequeue_at_once");
    g.throughput(Throughput::Elements(u64::from(BATCH)));
    g.bench_function("c_api_single", |b| {
        b.iter(|| {
            enqueue_batch(s, leaves, now);
            now += 80_000 * u64::from(BATCH);
            for o in out.iter_mut() {
                // SAFETY: a live scheduler and a writable out.
                std::hint::black_box(unsafe { eiffel_scheduler_dequeue(s, now, o) });
            }
        });
    });
    g.bench_function("c_api_burst", |b| {
        b.iter(|| {
            enqueue_batch(s, leaves, now);
            now += 80_000 * u64::from(BATCH);
            let mut n = 0;
            // SAFETY: a live scheduler, `out` writable for `BATCH` packets.
            let st = unsafe {
                eiffel_scheduler_dequeue_burst(s, now, out.as_mut_ptr(), out.len(), &mut n)
            };
            std::hint::black_box((st, n));
        });
    });
    g.finish();
    let mut c = EiffelCounters::default();
    // SAFETY: a live scheduler and a writable out.
    let st = unsafe { eiffel_scheduler_counters(s, &mut c) };
    assert_eq!(st, EiffelStatus::Ok);
    assert_eq!(c.dropped, 0, "every packet offered fits");
    assert_eq!(c.backlog_packets, 0, "every batch left in its own dequeues");
    // SAFETY: the scheduler is freed once.
    unsafe { eiffel_scheduler_free(s) };
}

/// `examples/policies/hqos.toml` (DPDK `rte_sched`'s hierarchy: one subport,
/// four pipes of 16 queues) and its 64 leaves' class ids.
fn hqos() -> (String, Vec<u32>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/policies/hqos.toml")
        .display()
        .to_string();
    let policy = Policy::load(&path).expect("policy");
    let spec = policy.spec();
    let leaves = (0..spec.nodes.len())
        .filter(|&i| spec.is_leaf(i))
        .map(|i| i as u32)
        .collect();
    (path, leaves)
}

/// The `rte_sched`-shaped policy through the C API, which runs it on the
/// pipe executor, against the general tree called from Rust: `BATCH` packets
/// of 1000 bytes over the 64 queues in turn, then as many dequeues 100 us
/// apart (80 Mbit/s, under every limit of the hierarchy).
fn capi_hqos(c: &mut Criterion) {
    let (path, leaves) = hqos();
    let mut g = c.benchmark_group("hqos_enqueue_dequeue");
    g.throughput(Throughput::Elements(u64::from(BATCH)));
    let mut tree = Policy::load(&path).expect("policy").build();
    let mut now = 0u64;
    g.bench_function("rust_policy_tree", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                let p = Packet::new(i, 1000).class(leaves[i as usize % leaves.len()]);
                let _ = tree.enqueue(p, now);
            }
            for _ in 0..BATCH {
                now += 100_000;
                std::hint::black_box(tree.dequeue(now));
            }
        });
    });
    let cpath = CString::new(path).expect("path");
    let mut s = std::ptr::null_mut();
    // SAFETY: a NUL-terminated path and a writable out pointer.
    let st = unsafe { eiffel_scheduler_load(cpath.as_ptr(), &mut s) };
    assert_eq!(st, EiffelStatus::Ok);
    // SAFETY: a live scheduler; the name is a static NUL-terminated string.
    let executor = unsafe { std::ffi::CStr::from_ptr(eiffel_scheduler_executor(s)) };
    assert_eq!(executor, c"pipe-tree");
    let mut out = EiffelPacket::default();
    let mut now = 0u64;
    g.bench_function("c_api_pipe_tree", |b| {
        b.iter(|| {
            for i in 0..BATCH {
                let p = EiffelPacket {
                    flow: i,
                    len: 1000,
                    leaf: leaves[i as usize % leaves.len()],
                    deadline_ns: u64::MAX,
                    ..EiffelPacket::default()
                };
                // SAFETY: a live scheduler, a readable packet, no drop record.
                let _ = unsafe { eiffel_scheduler_enqueue(s, &p, now, std::ptr::null_mut()) };
            }
            for _ in 0..BATCH {
                now += 100_000;
                // SAFETY: a live scheduler and a writable out.
                std::hint::black_box(unsafe { eiffel_scheduler_dequeue(s, now, &mut out) });
            }
        });
    });
    g.finish();
    let mut c = EiffelCounters::default();
    // SAFETY: a live scheduler and a writable out.
    let st = unsafe { eiffel_scheduler_counters(s, &mut c) };
    assert_eq!(st, EiffelStatus::Ok);
    assert_eq!((c.dropped, c.backlog_packets), (0, 0), "every packet sent");
    assert_eq!(tree.backlog().packets, 0, "every packet sent");
    // SAFETY: the scheduler is freed once.
    unsafe { eiffel_scheduler_free(s) };
}

criterion_group!(benches, direct, capi, capi_burst, capi_hqos);
criterion_main!(benches);
