//! The memory estimate of a run is an upper bound on what the run allocates,
//! measured by a counting global allocator.

// A counting global allocator needs `unsafe impl GlobalAlloc`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::setup::{build_ports, estimate_memory};
use eiffel_netsim::sweep;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call forwards to the system allocator with the same layout;
// the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let now = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                - layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn scenario(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios")
        .join(name);
    let mut s = Scenario::load(&path).expect("shipped scenario loads");
    s.make_quick();
    s
}

/// Peak bytes allocated by `f` above what was live before it.
fn peak_of<R>(f: impl FnOnce() -> R) -> (usize, R) {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let r = f();
    (PEAK.load(Ordering::Relaxed) - base, r)
}

#[test]
fn estimate_bounds_the_allocation_of_every_scheme() {
    for name in ["qfq-delay.toml", "pfabric-fanin.toml"] {
        let s = scenario(name);
        let loads = sweep::workloads(&s);
        let keys = sweep::plan(&s);
        let flows = loads.iter().map(|w| w.flows.len()).max().unwrap_or(0);
        for key in keys
            .iter()
            .filter(|k| k.seed_index == 0 && k.load_index == 0)
        {
            let scheme = &s.schemes[key.scheme];
            let est = estimate_memory(&s.topology, &s.routes, scheme, flows);
            let (ports, _) = peak_of(|| build_ports(&s.topology, scheme, &s.extras));
            let w = &loads[0];
            let (run, _) = peak_of(|| sweep::run_one(&s, key, w, false, |_, _| {}));
            eprintln!(
                "{name} {}: estimate {est}, ports {ports}, run {run}",
                scheme.name
            );
            assert!(
                est >= run as u64,
                "{name} {}: estimate {est} below the run's peak {run}",
                scheme.name
            );
        }
    }
}
