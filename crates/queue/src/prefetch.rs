//! Cache prefetch hints: the only `unsafe` of the crate.
//!
//! Bucketed queues spend most of a pop waiting for the head node of the first
//! bucket to arrive from memory, and they know which node the next pop will want
//! before they return from this one. Prefetching it overlaps that miss with the
//! caller's work. A prefetch has no effect on memory contents or on the program's
//! meaning; on targets without the x86 instruction, and under miri (which has no
//! caches), it does nothing.

/// Asks the CPU to bring the cache line holding `value` into every cache level.
///
/// Public so that users of the queues (the policy tree's burst enqueue) hint
/// their own structures through this one `unsafe` block.
///
/// ```
/// let v = [1u64, 2, 3];
/// eiffel_queue::prefetch(&v[2]);
/// assert_eq!(v, [1, 2, 3]);
/// ```
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch<T>(value: &T) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: `_mm_prefetch` needs SSE, part of the x86-64 baseline, and only
    // hints the cache: it never faults and reads or writes nothing the program
    // can observe. The pointer comes from a live reference anyway.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = value;
}

/// Asks the CPU to bring the first `lines` cache lines of `value` (at most
/// all of it) into every cache level: a structure larger than a line whose
/// first part a caller is about to read.
///
/// ```
/// let v = [0u64; 32];
/// eiffel_queue::prefetch_lines(&v, 3);
/// ```
#[inline(always)]
pub fn prefetch_lines<T>(value: &T, lines: usize) {
    let start = (value as *const T).cast::<u8>();
    let size = core::mem::size_of::<T>();
    let mut offset = 0;
    while offset < size && offset < lines * 64 {
        // Plain address arithmetic: nothing is dereferenced but by the hint.
        let at = start.wrapping_add(offset);
        prefetch_address(at);
        offset += 64;
    }
}

/// Asks the CPU to bring the cache line at address `at` into every cache
/// level: for memory reached through raw pointers (a frame in a buffer shared
/// with a device). Any address is allowed; nothing is dereferenced.
///
/// ```
/// let v = [7u8; 64];
/// eiffel_queue::prefetch_address(v.as_ptr().wrapping_add(1 << 40));
/// ```
#[inline(always)]
#[allow(unsafe_code)]
pub fn prefetch_address(at: *const u8) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: as in `prefetch`: a hint that never faults, whatever the
    // address, and reads or writes nothing the program can observe. The
    // address lies inside a live value.
    unsafe {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>());
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    #[test]
    fn prefetch_is_only_a_hint() {
        let v = [1u64, 2, 3];
        super::prefetch(&v[1]);
        assert_eq!(v, [1, 2, 3]);
    }
}
