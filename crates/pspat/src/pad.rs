//! Cache-line padding for data shared between cores.
//!
//! A value written by one core and read by another should own its cache line, so
//! that unrelated writes nearby do not invalidate it (false sharing). x86-64 and
//! aarch64 prefetch lines in adjacent pairs, so two neighbouring 64-byte lines behave
//! as one 128-byte unit for sharing purposes: we align to 128 bytes there and to 64
//! elsewhere.

use core::ops::{Deref, DerefMut};

/// Size in bytes of a cache line, the unit of coherence traffic.
pub const CACHE_LINE: usize = 64;

/// Pads and aligns a value to its own cache line (pair).
#[cfg_attr(any(target_arch = "x86_64", target_arch = "aarch64"), repr(align(128)))]
#[cfg_attr(
    not(any(target_arch = "x86_64", target_arch = "aarch64")),
    repr(align(64))
)]
#[derive(Debug, Default)]
pub struct CachePadded<T>(T);

impl<T> CachePadded<T> {
    /// Wraps `value`.
    pub const fn new(value: T) -> Self {
        CachePadded(value)
    }
}

impl<T> Deref for CachePadded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for CachePadded<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_values_do_not_share_lines() {
        let pair = [CachePadded::new(1u8), CachePadded::new(2u8)];
        let a = core::ptr::from_ref(&pair[0]) as usize;
        let b = core::ptr::from_ref(&pair[1]) as usize;
        assert!(b - a >= CACHE_LINE);
        assert_eq!(a % CACHE_LINE, 0);
        assert_eq!(*pair[1], 2);
    }
}
