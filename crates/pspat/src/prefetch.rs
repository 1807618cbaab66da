//! A cache prefetch hint for lines another core wrote.

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
