//! Fixed-range bucketed queues: `ffs`, `hffs`, `gradient`, `approx_gradient` and
//! `bucket_heap` are all this one structure with a different [`BucketIndex`].
//!
//! Rank `r` maps to bucket `(r - base) / granularity` of `N` buckets; elements of a
//! bucket form a FIFO list in a preallocated slab ([`store`](crate::store)); the
//! index finds the lowest non-empty bucket.
//!
//! Costs: `insert` is a subtraction, a shift (or a division when the granularity is
//! not a power of two), an append and, if the bucket was empty, an index `set`;
//! `pop_min` is an index lookup and an unlink, plus an index `clear` when the bucket
//! empties; `remove` and `set_rank` are O(1) unlinks and appends plus index updates.
//!
//! Ordering guarantee: elements leave in non-decreasing bucket order, FIFO within a
//! bucket (the approximate index may pick a bucket above the lowest one; see
//! [`ApproxIndex`](crate::ApproxIndex)). Ranks below `base` go to the first bucket
//! and ranks beyond the last bucket to the last one, counted in
//! [`QueueStats::clamped_low`] / [`QueueStats::clamped_high`], unless the queue is
//! configured with [`OutOfRange::Reject`]. Re-ranking within the same bucket keeps
//! the element's place; to another bucket moves it to that bucket's tail.

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueStats, RankError,
};
use crate::index::BucketIndex;
use crate::store::{BucketStore, NIL};

/// Maps ranks to bucket offsets from a base: `(rank - base) / granularity`, with a
/// shift when the granularity is a power of two.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Granularity {
    ranks: u64,
    /// `log2(ranks)` when `ranks` is a power of two, else `u32::MAX`.
    shift: u32,
}

impl Granularity {
    pub(crate) fn new(ranks: u64) -> Result<Self, ConfigError> {
        if ranks == 0 {
            return Err(ConfigError::ZeroGranularity);
        }
        let shift = if ranks.is_power_of_two() {
            ranks.trailing_zeros()
        } else {
            u32::MAX
        };
        Ok(Granularity { ranks, shift })
    }

    /// Buckets between `base` and `rank` (`rank >= base`).
    #[inline]
    pub(crate) fn buckets_between(self, base: u64, rank: u64) -> u64 {
        let off = rank - base;
        if self.shift != u32::MAX {
            off >> self.shift
        } else {
            off / self.ranks
        }
    }

    /// Buckets in `off` ranks, and whether `off` is a whole number of buckets.
    #[inline]
    pub(crate) fn split(self, off: u64) -> (u64, bool) {
        if self.shift != u32::MAX {
            (off >> self.shift, off & (self.ranks - 1) == 0)
        } else {
            (off / self.ranks, off % self.ranks == 0)
        }
    }

    /// Ranks in `buckets` buckets (wrapping: callers use it only where it fits).
    #[inline]
    pub(crate) fn ranks_in(self, buckets: u64) -> u64 {
        if self.shift != u32::MAX {
            buckets << self.shift
        } else {
            buckets.wrapping_mul(self.ranks)
        }
    }

    /// Ranks per bucket.
    #[inline]
    pub(crate) fn ranks(self) -> u64 {
        self.ranks
    }

    /// `rank` rounded down to a multiple of the granularity.
    #[inline]
    pub(crate) fn align_down(self, rank: u64) -> u64 {
        if self.shift != u32::MAX {
            rank & !(self.ranks - 1)
        } else {
            rank - rank % self.ranks
        }
    }
}

/// A fixed-range bucketed queue with index `I`.
///
/// Use the aliases: [`Ffs`](crate::Ffs), [`Hffs`](crate::Hffs),
/// [`Gradient`](crate::Gradient), [`ApproxGradient`](crate::ApproxGradient),
/// [`BucketHeap`](crate::BucketHeap).
#[derive(Clone, Debug)]
pub struct Bucketed<T, I> {
    store: BucketStore<T>,
    index: I,
    base: u64,
    gran: Granularity,
    buckets: u64,
    out_of_range: OutOfRange,
    stats: QueueStats,
}

impl<T, I: BucketIndex> Bucketed<T, I> {
    /// A queue of `cfg.buckets` buckets holding up to `cfg.capacity` elements.
    pub fn new(cfg: QueueConfig) -> Result<Self, ConfigError> {
        if cfg.buckets == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        check_capacity(cfg.capacity)?;
        let gran = Granularity::new(cfg.granularity)?;
        let index = I::build(cfg.buckets, &cfg)?;
        Ok(Bucketed {
            store: BucketStore::new(cfg.capacity, cfg.buckets),
            index,
            base: cfg.base,
            gran,
            buckets: cfg.buckets as u64,
            out_of_range: cfg.out_of_range,
            stats: QueueStats::default(),
        })
    }

    /// The bucket index (for inspection, e.g. the approximate index's estimate).
    pub fn index(&self) -> &I {
        &self.index
    }

    /// The bucket `rank` maps to, or `None` if it is out of range and the queue
    /// rejects such ranks. Counts clamps when `count` is set.
    #[inline]
    fn bucket_of(&mut self, rank: u64, count: bool) -> Option<usize> {
        if rank < self.base {
            if self.out_of_range == OutOfRange::Reject {
                self.stats.rejected += u64::from(count);
                return None;
            }
            self.stats.clamped_low += u64::from(count);
            return Some(0);
        }
        let b = self.gran.buckets_between(self.base, rank);
        if b < self.buckets {
            return Some(b as usize);
        }
        if self.out_of_range == OutOfRange::Reject {
            self.stats.rejected += u64::from(count);
            return None;
        }
        self.stats.clamped_high += u64::from(count);
        Some(self.buckets as usize - 1)
    }

    /// Checks the store's and the index's agreement on which buckets are non-empty.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        self.store.check_invariants();
        let first_nonempty = (0..self.store.lists()).find(|&b| !self.store.list_is_empty(b));
        match first_nonempty {
            None => assert!(
                self.index.first().is_none(),
                "index reports a bucket of an empty queue"
            ),
            Some(_) => {
                let b = self
                    .index
                    .first()
                    .expect("index finds a bucket of a non-empty queue");
                assert!(!self.store.list_is_empty(b), "index chose empty bucket {b}");
            }
        }
    }
}

impl<T, I: BucketIndex> PriorityQueue<T> for Bucketed<T, I> {
    #[inline]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        let Some(b) = self.bucket_of(rank, true) else {
            return Err(InsertError::OutOfRange(item));
        };
        let (handle, was_empty) = self
            .store
            .push_back(b, rank, item)
            .map_err(InsertError::Full)?;
        if was_empty {
            self.index.set(b);
        }
        Ok(handle)
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let b = self.index.first()?;
        let idx = self
            .store
            .front(b)
            .expect("index points at a non-empty bucket");
        Some((
            self.store.handle(idx),
            self.store.rank(idx),
            self.store.item(idx),
        ))
    }

    #[inline]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        let b = self.index.first_for_pop()?;
        let (rank, item, next) = self
            .store
            .pop_front(b)
            .expect("index points at a non-empty bucket");
        if next == NIL {
            self.index.clear(b);
        }
        self.store.prefetch_node(next);
        Some((rank, item))
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let idx = self.store.resolve(handle)?;
        let (rank, item, b, now_empty) = self.store.remove(idx);
        if now_empty {
            self.index.clear(b);
        }
        Some((rank, item))
    }

    #[inline]
    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let idx = self.store.resolve(handle).ok_or(RankError::StaleHandle)?;
        let b = self.bucket_of(rank, true).ok_or(RankError::OutOfRange)?;
        self.store.set_rank(idx, rank);
        if self.store.list_of(idx) != b {
            let (old, old_empty, new_was_empty) = self.store.move_back(idx, b);
            if old_empty {
                self.index.clear(old);
            }
            if new_was_empty {
                self.index.set(b);
            }
        }
        Ok(())
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        self.store.get(handle)
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        self.store.get_mut(handle)
    }

    #[inline]
    fn len(&self) -> usize {
        self.store.len()
    }

    #[inline]
    fn capacity(&self) -> usize {
        self.store.capacity()
    }

    fn stats(&self) -> QueueStats {
        QueueStats {
            approx: self.index.approx_stats(),
            ..self.stats
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn granularity_maps_with_shift_or_division() {
        let g = Granularity::new(8).unwrap();
        assert_eq!(g.buckets_between(100, 100), 0);
        assert_eq!(g.buckets_between(100, 115), 1);
        assert_eq!(g.align_down(23), 16);
        let g = Granularity::new(10).unwrap();
        assert_eq!(g.buckets_between(0, 99), 9);
        assert_eq!(g.align_down(123), 120);
        assert!(Granularity::new(0).is_err());
        let g = Granularity::new(1).unwrap();
        assert_eq!(g.buckets_between(0, u64::MAX), u64::MAX);
        assert_eq!(g.split(5), (5, true));
        let g = Granularity::new(8).unwrap();
        assert_eq!(
            (g.split(17), g.split(16), g.ranks_in(3)),
            ((2, false), (2, true), 24)
        );
        let g = Granularity::new(10).unwrap();
        assert_eq!(
            (g.split(25), g.split(30), g.ranks_in(3)),
            ((2, false), (3, true), 30)
        );
    }
}
