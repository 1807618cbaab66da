//! Circular bucketed queues over a moving range, for any [`BucketIndex`]: the
//! approximate gradient queue's circular form. `cffs` (Eiffel, NSDI'19, section
//! 3.1.1, Fig. 4) follows the same rules on one ring of buckets and its own slab
//! ([`Cffs`](crate::Cffs)); this generic form keeps one index per half, since an
//! approximate index estimates within a fixed range.
//!
//! Two fixed-range halves of `N` buckets each cover consecutive ranges: the
//! *primary* covers `[base, base + N g)` and the *secondary* the next `N g` ranks
//! (`g` the granularity). When the minimum moves past the primary's range the
//! halves swap roles: the secondary becomes the primary, `base` advances by `N g`,
//! and the emptied half starts covering the range after it. No element moves and no
//! bitmap is rebuilt; the swap is an index flip.
//!
//! ## When the halves swap
//! Lazily: a pop that finds the primary empty swaps before serving from the new
//! primary, and an insert that finds the primary empty swaps first if its rank
//! would otherwise be clamped. (Swapping as soon as the primary empties, the eager
//! reading of the paper, moves the base past the rank just served, so the next
//! ranks a scheduler computes, typically just above it, would fall below the base
//! and lose their order. With the lazy swap the base never passes the last rank
//! served from the halves.)
//!
//! ## Where a rank goes
//! - `base <= r < base + 2 N g`: its bucket, in the primary or the secondary half.
//! - `r >= base + 2 N g`: the secondary's last bucket, counted in
//!   [`QueueStats::clamped_high`] (the paper's rule).
//! - `r < base`: a separate FIFO that is served before everything else, counted in
//!   [`QueueStats::underflow`] (a rank in the past is the most urgent).
//! - With [`OutOfRange::Reject`] the last two cases are refused instead.
//!
//! When neither half holds anything, an insert whose rank would be clamped (at or
//! beyond `base + 2 N g`), or would go to an empty served-first list (below `base`),
//! re-anchors the range instead: `base` becomes the rank rounded down to a multiple
//! of `g` (counted in [`QueueStats::rebases`]). So an idle queue never clamps the
//! first rank it sees, and a rank within the current window keeps the window.
//!
//! ## Ordering guarantee
//! `pop_min` serves (1) the served-first list in FIFO order, then (2) the lowest
//! non-empty bucket of the primary, or of the secondary when the primary is empty,
//! FIFO within a bucket. Bucket boundaries are absolute (multiples of `g`, since the
//! base is aligned), so all elements whose ranks were within the window when they
//! were inserted or re-ranked leave in non-decreasing `rank / g` order, FIFO among
//! equal `rank / g`; a rank at or above the last rank served from the halves is
//! never below the base. A clamped element leaves from the bucket it was clamped
//! into: after the next swap that bucket is the primary's last, so it leaves after
//! the primary's other elements and before anything in the new secondary, whatever
//! its rank. Nothing is ever dropped by the queue; only `Full` refuses an insert.
//!
//! Costs: as for the fixed-range queue of the same index, plus one comparison for
//! the served-first list; a swap is O(1). `remove` never swaps.

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueStats, RankError,
};
use crate::bucketed::Granularity;
use crate::index::BucketIndex;
use crate::store::{BucketStore, NIL};

/// A circular queue of two halves indexed by `I`.
///
/// Use the alias [`CircularApproxGradient`](crate::CircularApproxGradient).
#[derive(Clone, Debug)]
pub struct Circular<T, I> {
    /// Lists `0..N` are half 0, `N..2N` half 1, list `2N` the served-first list.
    store: BucketStore<T>,
    halves: [I; 2],
    /// Elements in each half.
    counts: [u32; 2],
    /// Which half is the primary.
    primary: usize,
    base: u64,
    n: usize,
    /// Index of the served-first list, `2 n`.
    past: usize,
    gran: Granularity,
    out_of_range: OutOfRange,
    stats: QueueStats,
}

/// Where a rank belongs relative to the current range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Half-relative `(half, bucket)`.
    Bucket(usize, usize),
    /// Below the base.
    Past,
}

impl<T, I: BucketIndex> Circular<T, I> {
    /// A circular queue of two halves of `cfg.buckets` buckets, starting at
    /// `cfg.base`.
    pub fn new(cfg: QueueConfig) -> Result<Self, ConfigError> {
        if cfg.buckets == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        check_capacity(cfg.capacity)?;
        let gran = Granularity::new(cfg.granularity)?;
        let span = (cfg.buckets as u64).checked_mul(gran.ranks());
        if span.and_then(|s| s.checked_mul(2)).is_none() {
            return Err(ConfigError::HorizonTooLarge);
        }
        let halves = [I::build(cfg.buckets, &cfg)?, I::build(cfg.buckets, &cfg)?];
        Ok(Circular {
            store: BucketStore::new(cfg.capacity, 2 * cfg.buckets + 1),
            halves,
            counts: [0, 0],
            primary: 0,
            base: gran.align_down(cfg.base),
            n: cfg.buckets,
            past: 2 * cfg.buckets,
            gran,
            out_of_range: cfg.out_of_range,
            stats: QueueStats::default(),
        })
    }

    /// The lowest rank of the primary half's first bucket.
    #[must_use]
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Buckets per half.
    #[must_use]
    pub fn buckets_per_half(&self) -> usize {
        self.n
    }

    #[inline]
    fn past_list(&self) -> usize {
        self.past
    }

    #[inline]
    fn list(&self, half: usize, bucket: usize) -> usize {
        half * self.n + bucket
    }

    /// Where `rank` goes under the current base. `None` when the queue rejects it.
    #[inline]
    fn slot_of(&mut self, rank: u64, count: bool) -> Option<Slot> {
        let inc = u64::from(count);
        if rank < self.base {
            if self.out_of_range == OutOfRange::Reject {
                self.stats.rejected += inc;
                return None;
            }
            self.stats.underflow += inc;
            return Some(Slot::Past);
        }
        let n = self.n as u64;
        let b = self.gran.buckets_between(self.base, rank);
        let secondary = 1 - self.primary;
        if b < n {
            Some(Slot::Bucket(self.primary, b as usize))
        } else if b < 2 * n {
            Some(Slot::Bucket(secondary, (b - n) as usize))
        } else if self.out_of_range == OutOfRange::Reject {
            self.stats.rejected += inc;
            None
        } else {
            self.stats.clamped_high += inc;
            Some(Slot::Bucket(secondary, self.n - 1))
        }
    }

    /// Re-anchors the range at `rank` when neither half holds anything and the rank
    /// would otherwise be clamped or go to the served-first list.
    #[inline]
    fn maybe_rebase(&mut self, rank: u64) {
        if self.counts[0] != 0 || self.counts[1] != 0 {
            return;
        }
        let outside = if rank >= self.base {
            self.gran.buckets_between(self.base, rank) >= 2 * self.n as u64
        } else {
            self.store.list_is_empty(self.past_list())
        };
        if outside {
            self.base = self.gran.align_down(rank);
            self.stats.rebases += 1;
        }
    }

    /// Swaps the halves if the primary is empty and the secondary is not.
    #[inline]
    fn rotate_if_primary_empty(&mut self) {
        let secondary = 1 - self.primary;
        if self.counts[self.primary] == 0 && self.counts[secondary] > 0 {
            self.primary = secondary;
            self.base += self.n as u64 * self.gran.ranks();
            self.stats.rotations += 1;
        }
    }

    #[inline]
    fn list_of_slot(&self, slot: Slot) -> usize {
        match slot {
            Slot::Bucket(h, b) => self.list(h, b),
            Slot::Past => self.past_list(),
        }
    }

    /// `(half, bucket)` of a half's list: a comparison, not a division, since there
    /// are only two halves.
    #[inline]
    fn split_list(&self, list: usize) -> (usize, usize) {
        let half = usize::from(list >= self.n);
        (half, list - half * self.n)
    }

    /// Bookkeeping after list `list` lost an element and became empty or not.
    #[inline]
    fn after_unlink(&mut self, list: usize, now_empty: bool) {
        if list == self.past_list() {
            return;
        }
        let (half, bucket) = self.split_list(list);
        self.counts[half] -= 1;
        if now_empty {
            self.halves[half].clear(bucket);
        }
    }

    /// Bookkeeping after list `list` gained an element.
    #[inline]
    fn after_link(&mut self, list: usize, was_empty: bool) {
        if list == self.past_list() {
            return;
        }
        let (half, bucket) = self.split_list(list);
        self.counts[half] += 1;
        if was_empty {
            self.halves[half].set(bucket);
        }
    }

    /// The list `pop_min` serves next.
    #[inline]
    fn first_list(&self) -> Option<usize> {
        if !self.store.list_is_empty(self.past_list()) {
            return Some(self.past_list());
        }
        if let Some(b) = self.halves[self.primary].first() {
            return Some(self.list(self.primary, b));
        }
        let secondary = 1 - self.primary;
        let b = self.halves[secondary].first()?;
        Some(self.list(secondary, b))
    }

    /// Where an insert (or a re-rank that leaves its bucket) of `rank` goes:
    /// re-anchors an empty window or swaps past an empty primary when the rank
    /// would otherwise be clamped or fall in an empty past, then places it.
    #[inline]
    fn enter(&mut self, rank: u64) -> Option<Slot> {
        if self.counts[0] == 0 && self.counts[1] == 0 {
            self.maybe_rebase(rank);
        } else if self.counts[self.primary] == 0
            && rank >= self.base
            && self.gran.buckets_between(self.base, rank) >= 2 * self.n as u64
        {
            self.rotate_if_primary_empty();
        }
        self.slot_of(rank, true)
    }

    /// Checks the invariants: store links, per-half counts and index agreement.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        self.store.check_invariants();
        for half in 0..2 {
            let count: usize = (0..self.n)
                .map(|b| self.store.iter_list(self.list(half, b)).count())
                .sum();
            assert_eq!(count, self.counts[half] as usize, "half {half} count");
            match self.halves[half].first() {
                None => assert_eq!(count, 0, "index of half {half} lost its buckets"),
                Some(b) => assert!(
                    !self.store.list_is_empty(self.list(half, b)),
                    "half {half} chose empty bucket {b}"
                ),
            }
        }
    }
}

impl<T, I: BucketIndex> PriorityQueue<T> for Circular<T, I> {
    #[inline]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        // The common case first: a rank within the window of a queue whose primary
        // half holds something, which neither re-anchors nor swaps (`enter` would
        // do nothing) and lands in a bucket of either half.
        let p = self.primary;
        if self.counts[p] != 0 && rank >= self.base {
            let n = self.n as u64;
            let b = self.gran.buckets_between(self.base, rank);
            if b < 2 * n {
                // Bucket `b` of the window is list `p n + b` taken mod `2 n`:
                // computed, not branched on (which half a rank falls in is random).
                let x = p * self.n + b as usize;
                let list = if x >= 2 * self.n { x - 2 * self.n } else { x };
                let (half, bucket) = self.split_list(list);
                let (handle, was_empty) = self
                    .store
                    .push_back(list, rank, item)
                    .map_err(InsertError::Full)?;
                self.counts[half] += 1;
                if was_empty {
                    self.halves[half].set(bucket);
                }
                return Ok(handle);
            }
        }
        // Checked first so that a refused insert cannot move the window.
        if self.store.is_full() {
            return Err(InsertError::Full(item));
        }
        let Some(slot) = self.enter(rank) else {
            return Err(InsertError::OutOfRange(item));
        };
        let list = self.list_of_slot(slot);
        let (handle, was_empty) = self
            .store
            .push_back(list, rank, item)
            .map_err(InsertError::Full)?;
        if let Slot::Bucket(half, bucket) = slot {
            self.counts[half] += 1;
            if was_empty {
                self.halves[half].set(bucket);
            }
        }
        Ok(handle)
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let list = self.first_list()?;
        let idx = self.store.front(list).expect("first list is non-empty");
        Some((
            self.store.handle(idx),
            self.store.rank(idx),
            self.store.item(idx),
        ))
    }

    #[inline]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        let past = self.past_list();
        if !self.store.list_is_empty(past) {
            let (rank, item, _) = self.store.pop_front(past).expect("past list is non-empty");
            return Some((rank, item));
        }
        self.rotate_if_primary_empty();
        let p = self.primary;
        let b = self.halves[p].first_for_pop()?;
        let (rank, item, next) = self
            .store
            .pop_front(self.list(p, b))
            .expect("index points at a non-empty bucket");
        self.counts[p] -= 1;
        if next == NIL {
            self.halves[p].clear(b);
        }
        // Start loading what the next pop will most likely want: the next element
        // of this bucket (no branch: `NIL` prefetches the scratch node). NB:
        // prefetching the head of the next non-empty bucket as well cost more than
        // it saved, in the hold model and in fill-then-drain.
        self.store.prefetch_node(next);
        Some((rank, item))
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let idx = self.store.resolve(handle)?;
        let (rank, item, list, now_empty) = self.store.remove(idx);
        self.after_unlink(list, now_empty);
        Some((rank, item))
    }

    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let idx = self.store.resolve(handle).ok_or(RankError::StaleHandle)?;
        let old = self.store.list_of(idx);
        let Some(slot) = self.slot_of(rank, false) else {
            self.stats.rejected += 1;
            return Err(RankError::OutOfRange);
        };
        self.store.set_rank(idx, rank);
        if self.list_of_slot(slot) == old {
            // Same bucket under the current range: keep the element's place.
            return Ok(());
        }
        // Leave the old bucket, then enter as an insert would (which may re-anchor
        // an emptied window or swap past an empty primary).
        let (_, now_empty) = self.store.unlink(idx);
        self.after_unlink(old, now_empty);
        // `enter` only re-anchors or swaps towards the rank, so a rank accepted
        // above stays accepted; the fallback keeps the element queued regardless.
        let slot = self.enter(rank).unwrap_or(slot);
        let target = self.list_of_slot(slot);
        let was_empty = self.store.link_back(target, idx);
        self.after_link(target, was_empty);
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
        let a = self.halves[0].approx_stats();
        let b = self.halves[1].approx_stats();
        let mut stats = self.stats;
        stats.approx.lookups = a.lookups + b.lookups;
        stats.approx.misses = a.misses + b.misses;
        stats.approx.miss_distance = a.miss_distance + b.miss_distance;
        stats.approx.max_miss_distance = a.max_miss_distance.max(b.max_miss_distance);
        stats
    }
}
