//! `cffs`: circular hierarchical FFS over a moving range (Eiffel, NSDI'19, section
//! 3.1.1, Fig. 4).
//!
//! Two halves of `N` buckets each cover consecutive ranges: the *primary* covers
//! `[base, base + N g)` and the *secondary* the next `N g` ranks (`g` the
//! granularity). When the minimum moves past the primary's range the halves swap
//! roles: the secondary becomes the primary, `base` advances by `N g`, and the
//! emptied half starts covering the range after it. No element moves.
//!
//! ## One ring of `2 N` buckets
//! The two halves are one circular array of `2 N` buckets with one hierarchical
//! bitmap over it: bucket `b` of the window (`0 <= b < 2 N`, counted from the base)
//! is position `(start + b) mod 2 N`, where `start` is 0 or `N`, the primary's
//! first position. A swap flips `start` and advances `base`; the lowest non-empty
//! bucket is the first set position met going round the ring from `start`. So
//! there are no per-half counts to keep: a half is empty when the search from
//! `start` finds nothing before `start + N`.
//!
//! A pop searches from a *hint*, the offset from the base of a bucket at or below
//! the lowest non-empty one (always in the primary: below `N`). It looks first in
//! the hint's bitmap word, one load; a scheduler's minimum moves up a few buckets
//! at a time, so that word usually holds it. An insert lowers the hint to its own
//! bucket, a pop raises it to the bucket it served, a swap lowers it by `N`.
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
//! its rank. A re-rank (`set_rank`) that stays in its bucket keeps the element's
//! place, except a rank beyond the window: that one goes through the insert's
//! rules, so it swaps past an empty primary instead of staying ahead of elements it
//! now ranks behind. Nothing is ever dropped by the queue; only `Full` refuses an
//! insert.
//!
//! ## Costs
//! An insert within the window: a subtraction, a shift (a division when `g` is not
//! a power of two), a free node, an append ([`slab`](crate::slab) says what it
//! touches) and, if the bucket was empty, a bitmap `set`. A pop: one bitmap word
//! (more only when the minimum leaves the hint's word: `log64 2N` levels), the
//! bucket's head and its link, and a bitmap `clear` if the bucket empties. A swap
//! is O(1); `remove` never swaps.

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, OutOfRange, PriorityQueue, QueueConfig,
    QueueStats, RankError,
};
use crate::bucketed::Granularity;
use crate::hbitmap::HierBitmap;
use crate::index::MAX_HIER_BUCKETS;
use crate::slab::{Slab, NIL};

/// `cffs`: the circular hierarchical FFS queue (Eiffel Fig. 4).
///
/// Two halves of `buckets` buckets of `granularity` ranks cover `[base, base + 2 N
/// g)`; when the primary half is empty and the secondary is not, the halves swap
/// and the base advances by `N g`. Ranks beyond the window go to its last bucket
/// (counted in [`QueueStats::clamped_high`]), ranks below the base to a list served
/// first ([`QueueStats::underflow`]), unless the queue is configured with
/// [`OutOfRange::Reject`]; an empty queue re-anchors its window at a rank that
/// would be clamped. Pops are in bucket order, FIFO within a bucket.
#[derive(Clone, Debug)]
pub struct Cffs<T> {
    /// Lists `0..2N` are the ring's buckets, list `2N` the served-first list.
    slab: Slab<T>,
    /// Bit `p` set iff ring bucket `p` is non-empty.
    bitmap: HierBitmap,
    /// No bucket of the window below this offset from the base is non-empty;
    /// always below `n`.
    hint: usize,
    /// Ring position of the primary half's first bucket: 0 or `n`.
    start: usize,
    /// Elements on the served-first list (a pop asks this, not the list).
    in_past: u32,
    base: u64,
    /// Buckets per half.
    n: usize,
    gran: Granularity,
    out_of_range: OutOfRange,
    stats: QueueStats,
}

/// Where a rank belongs relative to the current window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Bucket of the window, counted from the base (`0..2N`).
    Bucket(usize),
    /// Below the base: the served-first list.
    Past,
}

impl<T> Cffs<T> {
    /// A circular queue of two halves of `cfg.buckets` buckets, starting at
    /// `cfg.base`.
    pub fn new(cfg: QueueConfig) -> Result<Self, ConfigError> {
        let n = cfg.buckets;
        if n == 0 {
            return Err(ConfigError::ZeroBuckets);
        }
        ConfigError::at_most_buckets(n, MAX_HIER_BUCKETS)?;
        check_capacity(cfg.capacity)?;
        let gran = Granularity::new(cfg.granularity)?;
        let span = (n as u64).checked_mul(gran.ranks());
        if span.and_then(|s| s.checked_mul(2)).is_none() {
            return Err(ConfigError::HorizonTooLarge);
        }
        Ok(Cffs {
            slab: Slab::new(cfg.capacity, 2 * n + 1)?,
            bitmap: HierBitmap::new(2 * n),
            hint: 0,
            start: 0,
            in_past: 0,
            base: gran.align_down(cfg.base),
            n,
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

    /// The served-first list.
    #[inline]
    fn past(&self) -> usize {
        2 * self.n
    }

    /// The ring position of window bucket `b` (`b < 2N`).
    #[inline]
    fn position(&self, b: usize) -> usize {
        let p = self.start + b;
        if p >= 2 * self.n {
            p - 2 * self.n
        } else {
            p
        }
    }

    /// The first non-empty bucket of the ring: its position and its offset from the
    /// base (at or above `n` when the primary is empty).
    #[inline]
    fn first_bucket(&self) -> Option<(usize, usize)> {
        let from = self.start + self.hint;
        match self.bitmap.first_in_word_from(from) {
            // `from <= pos < 2N`, and `start <= from`: no wrap.
            Some(pos) => Some((pos, pos - self.start)),
            None => self.search_from(from),
        }
    }

    /// [`first_bucket`](Self::first_bucket) beyond the hint's word: going round the
    /// ring from `from`.
    #[cold]
    #[inline(never)]
    fn search_from(&self, from: usize) -> Option<(usize, usize)> {
        let pos = self
            .bitmap
            .next_set(from)
            .or_else(|| self.bitmap.next_set(0))?;
        let off = if pos >= self.start {
            pos - self.start
        } else {
            pos + 2 * self.n - self.start
        };
        debug_assert!(off >= self.hint, "hint {} above bucket {off}", self.hint);
        Some((pos, off))
    }

    /// The secondary becomes the primary (the primary is empty).
    #[inline]
    fn swap_halves(&mut self) {
        self.start = self.n - self.start;
        self.base += self.n as u64 * self.gran.ranks();
        self.stats.rotations += 1;
    }

    /// Where `rank` goes under the current base; `None` when the queue rejects it.
    /// Counts clamps and underflows when `count` is set.
    fn place(&mut self, rank: u64, count: bool) -> Option<Place> {
        let inc = u64::from(count);
        if rank < self.base {
            if self.out_of_range == OutOfRange::Reject {
                self.stats.rejected += inc;
                return None;
            }
            self.stats.underflow += inc;
            return Some(Place::Past);
        }
        let b = self.gran.buckets_between(self.base, rank);
        if b < 2 * self.n as u64 {
            Some(Place::Bucket(b as usize))
        } else if self.out_of_range == OutOfRange::Reject {
            self.stats.rejected += inc;
            None
        } else {
            self.stats.clamped_high += inc;
            Some(Place::Bucket(2 * self.n - 1))
        }
    }

    /// Whether `rank`, placed at `place`, is exactly its bucket's lowest rank (so
    /// that a pop can take it from the bucket instead of the node).
    fn exact(&self, place: Place, rank: u64) -> bool {
        match place {
            Place::Bucket(b) => {
                let (buckets, aligned) = self.gran.split(rank.wrapping_sub(self.base));
                rank >= self.base && aligned && buckets == b as u64
            }
            Place::Past => false,
        }
    }

    fn list_of(&self, place: Place) -> usize {
        match place {
            Place::Bucket(b) => self.position(b),
            Place::Past => self.past(),
        }
    }

    /// Where an insert (or a re-rank that leaves its bucket) of `rank` goes:
    /// re-anchors an empty window, or swaps past an empty primary, when the rank
    /// would otherwise be clamped (or fall in an empty past), then places it.
    fn enter(&mut self, rank: u64) -> Option<Place> {
        let beyond =
            rank >= self.base && self.gran.buckets_between(self.base, rank) >= 2 * self.n as u64;
        if self.bitmap.is_empty() {
            let outside = if rank >= self.base {
                beyond
            } else {
                self.in_past == 0
            };
            if outside {
                self.base = self.gran.align_down(rank);
                self.hint = 0;
                self.stats.rebases += 1;
            }
        } else if beyond && self.first_bucket().is_some_and(|(_, off)| off >= self.n) {
            self.swap_halves();
            self.hint = 0;
        }
        self.place(rank, true)
    }

    /// Links live, unlinked node `idx` of rank `rank` into `place`'s list.
    fn link(&mut self, place: Place, idx: u32, rank: u64) {
        let list = self.list_of(place);
        self.slab.link_back(list, idx, self.exact(place, rank));
        self.after_link(place, list);
    }

    /// Bookkeeping after an element joined `place`, list `list`.
    fn after_link(&mut self, place: Place, list: usize) {
        match place {
            Place::Bucket(b) => {
                self.bitmap.mark(list);
                self.hint = self.hint.min(b);
            }
            Place::Past => self.in_past += 1,
        }
    }

    /// Bookkeeping after list `list` lost an element and became empty or not.
    #[inline]
    fn after_unlink(&mut self, list: usize, now_empty: bool) {
        if list == self.past() {
            self.in_past -= 1;
        } else if now_empty {
            self.bitmap.clear(list);
        }
    }

    /// An insert outside the window's fast path: re-anchoring, swapping, clamping,
    /// the served-first list, refusals.
    #[cold]
    #[inline(never)]
    fn insert_slow(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        // Checked first so that a refused insert cannot move the window.
        if self.slab.is_full() {
            return Err(InsertError::Full(item));
        }
        let Some(place) = self.enter(rank) else {
            return Err(InsertError::OutOfRange(item));
        };
        let list = self.list_of(place);
        let exact = self.exact(place, rank);
        let (handle, _) = self
            .slab
            .push_back(list, rank, item, exact)
            .map_err(InsertError::Full)?;
        self.after_link(place, list);
        Ok(handle)
    }

    /// Checks the invariants: the slab's links, the bitmap against the lists, the
    /// hint.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        self.slab.check_invariants();
        self.bitmap.check_invariants();
        assert!(self.hint < self.n, "hint {} beyond the primary", self.hint);
        assert!(
            self.start == 0 || self.start == self.n,
            "start {}",
            self.start
        );
        for pos in 0..2 * self.n {
            assert_eq!(
                self.bitmap.contains(pos),
                !self.slab.list_is_empty(pos),
                "bitmap and list disagree at ring position {pos}"
            );
            let off = (pos + 2 * self.n - self.start) % (2 * self.n);
            let lowest = self.base.wrapping_add(self.gran.ranks_in(off as u64));
            for idx in self.slab.iter_list(pos) {
                if self.slab.linked_exact(idx) {
                    assert_eq!(self.slab.rank(idx), lowest, "node {idx} linked as exact");
                }
            }
        }
        for idx in self.slab.iter_list(self.past()) {
            assert!(
                !self.slab.linked_exact(idx),
                "node {idx} of the past list exact"
            );
        }
        let past = (0..self.slab.capacity() as u32)
            .filter(|&i| self.slab.resolve(self.slab.handle(i)).is_some())
            .filter(|&i| self.slab.list_of(i) == self.past())
            .count();
        assert_eq!(past, self.in_past as usize, "served-first list length");
        for b in 0..self.hint {
            assert!(
                self.slab.list_is_empty(self.position(b)),
                "bucket {b} below the hint {} is non-empty",
                self.hint
            );
        }
    }
}

impl<T> PriorityQueue<T> for Cffs<T> {
    #[inline(always)]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        // The common case: a rank within the window, which neither re-anchors nor
        // swaps (`enter` would do nothing) and lands in a bucket of either half.
        if rank >= self.base {
            let (b, exact) = self.gran.split(rank - self.base);
            if b < 2 * self.n as u64 {
                let b = b as usize;
                let pos = self.position(b);
                let (handle, _) = self
                    .slab
                    .push_back(pos, rank, item, exact)
                    .map_err(InsertError::Full)?;
                // Whether the bucket was empty is not asked: marking it again costs
                // less than a branch that half the inserts mispredict.
                self.bitmap.mark(pos);
                self.hint = self.hint.min(b);
                return Ok(handle);
            }
        }
        self.insert_slow(rank, item)
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let list = if self.in_past == 0 {
            self.first_bucket()?.0
        } else {
            self.past()
        };
        let idx = self.slab.head(list);
        Some((
            self.slab.handle(idx),
            self.slab.rank(idx),
            self.slab.item(idx),
        ))
    }

    // NB: always inlined, as `insert` is: left to the inliner, a caller's loop
    // around pop and insert kept a call to each, 15% of fill-then-drain.
    #[inline(always)]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        if self.in_past != 0 {
            let (rank, item, _) = self.slab.pop_front(self.past(), 0);
            self.in_past -= 1;
            return Some((rank, item));
        }
        let (pos, mut off) = self.first_bucket()?;
        if off >= self.n {
            self.swap_halves();
            off -= self.n;
        }
        self.hint = off;
        let bucket_rank = self.base.wrapping_add(self.gran.ranks_in(off as u64));
        let (rank, item, next) = self.slab.pop_front(pos, bucket_rank);
        if next == NIL {
            self.bitmap.clear(pos);
        } else {
            // Start loading what the next pops most likely return. NB: prefetching
            // the head of the next non-empty bucket when this one empties saved 2-4%
            // in the hold model and cost 7-10% in fill-then-drain.
            self.slab.prefetch(next);
        }
        Some((rank, item))
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let idx = self.slab.resolve(handle)?;
        let (rank, item, list, now_empty) = self.slab.remove(idx);
        self.after_unlink(list, now_empty);
        Some((rank, item))
    }

    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let idx = self.slab.resolve(handle).ok_or(RankError::StaleHandle)?;
        let old = self.slab.list_of(idx);
        let Some(place) = self.place(rank, false) else {
            self.stats.rejected += 1;
            return Err(RankError::OutOfRange);
        };
        self.slab.set_rank(idx, rank);
        // A rank beyond the window is clamped into the ring's last bucket; if the
        // element already sat there it must still go through `enter`, which swaps
        // past an empty primary, or it would stay ahead of elements it now ranks
        // behind (a scheduler that only peeks and re-ranks moves the window
        // through re-ranks alone).
        let beyond =
            rank >= self.base && self.gran.buckets_between(self.base, rank) >= 2 * self.n as u64;
        if self.list_of(place) == old && !beyond {
            // Same bucket under the current range: keep the element's place.
            self.slab.set_exact(idx, self.exact(place, rank));
            return Ok(());
        }
        // Leave the old bucket, then enter as an insert would (which may re-anchor
        // an emptied window or swap past an empty primary).
        let (_, now_empty) = self.slab.unlink(idx);
        self.after_unlink(old, now_empty);
        // `enter` only re-anchors or swaps towards the rank, so a rank accepted
        // above stays accepted; the fallback keeps the element queued regardless.
        let place = self.enter(rank).unwrap_or(place);
        self.link(place, idx, rank);
        Ok(())
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        let idx = self.slab.resolve(handle)?;
        Some((self.slab.rank(idx), self.slab.item(idx)))
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let idx = self.slab.resolve(handle)?;
        Some(self.slab.item_mut(idx))
    }

    #[inline]
    fn len(&self) -> usize {
        self.slab.len()
    }

    #[inline]
    fn capacity(&self) -> usize {
        self.slab.capacity()
    }

    fn stats(&self) -> QueueStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeMap;
    use alloc::rc::Rc;
    use alloc::vec::Vec;

    /// A scheduler's steady state, small enough for miri: pop the minimum and put
    /// it back a little later, many times round the ring, against an ordered map.
    #[test]
    fn hold_model_matches_an_ordered_map_round_the_ring() {
        let (n, g) = (8usize, 4u64);
        let mut q: Cffs<u32> = Cffs::new(QueueConfig::new(n, 64).granularity(g)).unwrap();
        let mut model: BTreeMap<(u64, u32), u64> = BTreeMap::new();
        let mut seq = 0u32;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for i in 0..40 {
            let rank = next() % (n as u64 * g);
            q.insert(rank, i).unwrap();
            model.insert((rank / g, seq), rank);
            seq += 1;
        }
        let steps = if cfg!(miri) { 300 } else { 20_000 };
        for _ in 0..steps {
            let (rank, item) = q.pop_min().unwrap();
            let ((bucket, _), want) = model.pop_first().unwrap();
            assert_eq!((rank / g, rank), (bucket, want));
            let later = rank + next() % (n as u64 * g);
            q.insert(later, item).unwrap();
            model.insert((later / g, seq), later);
            seq += 1;
        }
        q.check_invariants();
        assert!(q.stats().rotations > steps / 200, "the window moved");
        assert_eq!(q.stats().clamped_high + q.stats().underflow, 0);
    }

    #[test]
    fn handles_go_stale_and_re_ranks_keep_fifo_places() {
        let mut q: Cffs<char> = Cffs::new(QueueConfig::new(16, 4)).unwrap();
        let a = q.insert(3, 'a').unwrap();
        let b = q.insert(3, 'b').unwrap();
        let c = q.insert(9, 'c').unwrap();
        q.set_rank(a, 3).unwrap();
        assert_eq!(q.peek().map(|(h, r, &i)| (h, r, i)), Some((a, 3, 'a')));
        q.set_rank(c, 2).unwrap();
        assert_eq!(q.pop_min(), Some((2, 'c')));
        assert_eq!(q.get(c), None, "popped");
        assert_eq!(q.set_rank(c, 5), Err(RankError::StaleHandle));
        assert_eq!(q.remove(b), Some((3, 'b')));
        assert_eq!(q.remove(b), None, "removed");
        let d = q.insert(1, 'd').unwrap();
        assert_eq!(d.index(), b.index(), "the freed node is reused first");
        assert_eq!(q.get(b), None, "an old handle to a reused node");
        *q.get_mut(d).unwrap() = 'e';
        let order: Vec<char> = core::iter::from_fn(|| q.pop_min().map(|(_, i)| i)).collect();
        assert_eq!(order, ['e', 'a']);
        q.check_invariants();
    }

    #[test]
    fn items_are_cloned_and_dropped_with_the_queue() {
        let token = Rc::new(());
        let mut q: Cffs<Rc<()>> = Cffs::new(QueueConfig::new(4, 8)).unwrap();
        for rank in [0, 1, 1, 30, 2] {
            q.insert(rank, Rc::clone(&token)).unwrap();
        }
        q.insert(0, Rc::clone(&token)).unwrap();
        drop(q.pop_min());
        let copy = q.clone();
        copy.check_invariants();
        assert_eq!(Rc::strong_count(&token), 11);
        drop(q);
        drop(copy);
        assert_eq!(Rc::strong_count(&token), 1);
    }
}
