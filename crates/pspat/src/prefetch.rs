//! Cache prefetch hints for lines another core wrote, or last read.

/// Asks the CPU to start loading the cache line at `ptr` into every cache level.
/// A hint only: it reads and writes nothing the program can observe, and does
/// nothing under miri and loom or on other targets.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn prefetch<T>(ptr: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    // SAFETY: `_mm_prefetch` needs SSE, part of the x86-64 baseline, and never
    // faults, whatever the address: it only hints the cache.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(ptr.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = ptr;
}

/// Asks the CPU to take the cache line at `ptr` for writing (`prefetchw`): the
/// line's ownership moves from the core that last read it while this one goes
/// on, instead of when a store reaches the head of the store queue. A hint
/// only, as [`prefetch`]; CPUs without `prefetchw` decode it as a no-op.
#[inline(always)]
#[allow(unsafe_code)]
pub(crate) fn prefetch_write<T>(ptr: *const T) {
    #[cfg(all(target_arch = "x86_64", not(miri), not(loom)))]
    // SAFETY: `prefetchw` reads and writes no memory the program can observe and
    // never faults, whatever the address; it touches no register but its
    // operand's and leaves the flags alone. (`_mm_prefetch` with `_MM_HINT_ET0`
    // would compile to `prefetcht0` without the `prfchw` target feature, which
    // the x86-64 baseline lacks though every x86-64 CPU since 2013 has it.)
    unsafe {
        core::arch::asm!(
            "prefetchw [{p}]",
            p = in(reg) ptr,
            options(nostack, preserves_flags, readonly)
        );
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri), not(loom))))]
    let _ = ptr;
}
