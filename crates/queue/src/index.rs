//! Bucket indexes: the structures that find the lowest non-empty bucket.
//!
//! A bucketed queue keeps its elements in per-bucket FIFO lists and delegates one
//! question to its index: which bucket is first? The index is told when a bucket
//! becomes non-empty ([`BucketIndex::set`]) and when it becomes empty
//! ([`BucketIndex::clear`]), never otherwise, so every index sees each transition
//! exactly once.
//!
//! | index | structure | `first` cost | queue |
//! |---|---|---|---|
//! | [`WordIndex`] | one 64-bit word | one find-first-set | `ffs` |
//! | [`HierBitmap`] | bitmap per level | `ceil(log64 N)` find-first-sets | `hffs`, `cffs` |
//! | [`GradientIndex`](crate::GradientIndex) | curvature sums per level | `ceil(log32 N)` divisions | `gradient` |
//! | [`ApproxIndex`](crate::ApproxIndex) | one curvature | one division, then a search if the estimate missed | `approx_gradient` |
//! | [`HeapIndex`] | binary heap of bucket numbers | O(1) read, O(log N) update | `bucket_heap` |

use alloc::vec;
use alloc::vec::Vec;

use crate::api::{ApproxStats, ConfigError, QueueConfig};
use crate::bits::{first_set, mask_after};
use crate::hbitmap::HierBitmap;
use crate::store::NIL;

/// Finds the first non-empty bucket among `buckets()` buckets.
pub trait BucketIndex: Sized {
    /// Builds an index over `buckets` buckets (validated against the type's limits).
    fn build(buckets: usize, cfg: &QueueConfig) -> Result<Self, ConfigError>;

    /// Bucket `b` went from empty to non-empty.
    fn set(&mut self, b: usize);

    /// Bucket `b` went from non-empty to empty.
    fn clear(&mut self, b: usize);

    /// The first non-empty bucket (for approximate indexes, the bucket the estimate
    /// selects; always a non-empty one).
    fn first(&self) -> Option<usize>;

    /// [`first`](Self::first) for a pop: indexes that keep statistics record this
    /// lookup.
    #[inline]
    fn first_for_pop(&mut self) -> Option<usize> {
        self.first()
    }

    /// A non-empty bucket after `b` that costs almost nothing to find (for the
    /// bitmaps, one in the same word as `b`), if any: where a queue that just
    /// emptied `b` prefetches its next pop. The default finds none.
    #[inline]
    fn next_in_word(&self, b: usize) -> Option<usize> {
        let _ = b;
        None
    }

    /// Estimate statistics, for approximate indexes.
    fn approx_stats(&self) -> ApproxStats {
        ApproxStats::default()
    }
}

/// One machine word of buckets: the `ffs` queue's index (Eiffel Fig. 2).
#[derive(Clone, Copy, Debug, Default)]
pub struct WordIndex {
    /// Bit `b` is set iff bucket `b` is non-empty.
    occupied: u64,
}

impl WordIndex {
    /// Most buckets one word indexes.
    pub const MAX_BUCKETS: usize = 64;
}

impl BucketIndex for WordIndex {
    fn build(buckets: usize, _cfg: &QueueConfig) -> Result<Self, ConfigError> {
        ConfigError::at_most_buckets(buckets, Self::MAX_BUCKETS)?;
        Ok(WordIndex::default())
    }

    #[inline]
    fn set(&mut self, b: usize) {
        debug_assert!(
            self.occupied & (1 << b) == 0,
            "bucket {b} set twice: occupied={:#b}",
            self.occupied
        );
        self.occupied |= 1 << b;
    }

    #[inline]
    fn clear(&mut self, b: usize) {
        debug_assert!(
            self.occupied & (1 << b) != 0,
            "bucket {b} cleared twice: occupied={:#b}",
            self.occupied
        );
        self.occupied &= !(1 << b);
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        first_set(self.occupied)
    }

    #[inline]
    fn next_in_word(&self, b: usize) -> Option<usize> {
        first_set(mask_after(self.occupied, b))
    }
}

/// Most buckets of a hierarchical bitmap index: 2^30, far beyond the 2^24 a queue
/// needs, and small enough that the level arrays stay addressable.
pub const MAX_HIER_BUCKETS: usize = 1 << 30;

impl BucketIndex for HierBitmap {
    fn build(buckets: usize, _cfg: &QueueConfig) -> Result<Self, ConfigError> {
        ConfigError::at_most_buckets(buckets, MAX_HIER_BUCKETS)?;
        Ok(HierBitmap::new(buckets))
    }

    #[inline(always)]
    fn set(&mut self, b: usize) {
        debug_assert!(!self.contains(b), "bucket {b} set twice");
        HierBitmap::set(self, b);
    }

    #[inline(always)]
    fn clear(&mut self, b: usize) {
        debug_assert!(self.contains(b), "bucket {b} cleared twice");
        HierBitmap::clear(self, b);
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        HierBitmap::first(self)
    }

    #[inline]
    fn first_for_pop(&mut self) -> Option<usize> {
        self.first_from_hint()
    }

    #[inline]
    fn next_in_word(&self, b: usize) -> Option<usize> {
        HierBitmap::next_in_word(self, b)
    }
}

/// The non-empty bucket numbers kept in a binary min-heap: the baseline the Eiffel
/// paper calls BH (section 5.2). `first` reads the root; a bucket changing state
/// costs O(log k) for k non-empty buckets. `pos` makes removal of an arbitrary
/// bucket (a bucket emptied by `remove`) O(log k) too.
#[derive(Clone, Debug)]
pub struct HeapIndex {
    heap: Vec<u32>,
    /// Position of each bucket in `heap`, or `NIL` when the bucket is empty.
    pos: Vec<u32>,
}

impl HeapIndex {
    #[inline]
    fn place(&mut self, i: usize, b: u32) {
        self.heap[i] = b;
        self.pos[b as usize] = i as u32;
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let b = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            let pb = self.heap[parent];
            if pb <= b {
                break;
            }
            self.place(i, pb);
            i = parent;
        }
        self.place(i, b);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let b = self.heap[i];
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right] < self.heap[left] {
                right
            } else {
                left
            };
            let cb = self.heap[child];
            if b <= cb {
                break;
            }
            self.place(i, cb);
            i = child;
        }
        self.place(i, b);
    }
}

impl BucketIndex for HeapIndex {
    fn build(buckets: usize, _cfg: &QueueConfig) -> Result<Self, ConfigError> {
        let max = NIL as usize;
        ConfigError::at_most_buckets(buckets, max)?;
        Ok(HeapIndex {
            heap: Vec::with_capacity(buckets),
            pos: vec![NIL; buckets],
        })
    }

    #[inline]
    fn set(&mut self, b: usize) {
        debug_assert_eq!(self.pos[b], NIL, "bucket {b} set twice");
        self.heap.push(b as u32);
        self.sift_up(self.heap.len() - 1);
    }

    #[inline]
    fn clear(&mut self, b: usize) {
        let i = self.pos[b] as usize;
        debug_assert_ne!(self.pos[b], NIL, "bucket {b} cleared twice");
        self.pos[b] = NIL;
        let last = self.heap.pop().expect("heap holds the cleared bucket");
        if i < self.heap.len() {
            self.place(i, last);
            self.sift_down(i);
            self.sift_up(self.pos[last as usize] as usize);
        }
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        self.heap.first().map(|&b| b as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;

    fn exercise<I: BucketIndex>(buckets: usize) {
        let mut idx = I::build(buckets, &QueueConfig::new(buckets, 0)).unwrap();
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let b = (x % buckets as u64) as usize;
            if model.contains(&b) {
                idx.clear(b);
                model.remove(&b);
            } else {
                idx.set(b);
                model.insert(b);
            }
            assert_eq!(idx.first(), model.first().copied());
        }
    }

    #[test]
    fn exact_indexes_agree_with_a_set() {
        exercise::<WordIndex>(64);
        exercise::<WordIndex>(1);
        exercise::<HierBitmap>(5000);
        exercise::<HeapIndex>(5000);
        exercise::<HeapIndex>(1);
    }

    #[test]
    fn word_index_limits_its_size() {
        let cfg = QueueConfig::new(65, 0);
        assert_eq!(
            WordIndex::build(65, &cfg).unwrap_err(),
            ConfigError::TooManyBuckets {
                requested: 65,
                max: 64
            }
        );
    }
}
