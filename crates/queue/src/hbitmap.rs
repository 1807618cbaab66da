//! Hierarchical occupancy bitmap: the index of the hierarchical FFS queue
//! (Eiffel, NSDI'19, section 3.1.1 and Fig. 3).
//!
//! Level 0 has one bit per bucket. Bit `j` of level `k + 1` is set iff word `j` of
//! level `k` is non-zero. The top level is a single word, so the lowest non-empty
//! bucket is found with one find-first-set per level: `depth = ceil(log64 N)` steps,
//! a constant once `N` is configured (3 levels for up to 2^18 buckets, 4 for 2^24).
//!
//! Costs, with `d` the depth:
//! - `set`, `clear`: at most `d` word updates, usually one (a parent changes only when
//!   a word goes from zero to non-zero or back);
//! - `first`, `last`: exactly `d` dependent word loads and bit scans;
//! - `next_set(from)`, `prev_set(from)`: at most `2d` word loads.
//!
//! All levels live in one `Vec<u64>` (level 0 first) so the structure is a single
//! allocation made at construction.
//!
//! Invariant (checked by [`HierBitmap::check_invariants`]): for every level `k > 0`,
//! bit `j` is set iff word `j` of level `k - 1` is non-zero, and no bit at or beyond
//! the configured size is set.

use alloc::vec;
use alloc::vec::Vec;

use crate::bits::{first_set, last_set, mask_after, mask_from, mask_through, split, WORD_BITS};

/// Maximum depth supported: 64^6 = 2^36 buckets, far beyond any useful queue.
const MAX_DEPTH: usize = 6;

/// A hierarchical bitmap over `len` positions.
#[derive(Clone, Debug)]
pub struct HierBitmap {
    /// No position below `hint` is set: [`first_from_hint`](Self::first_from_hint)
    /// looks in `hint`'s level-0 word before descending from the top. `set` lowers
    /// it; a search moves it up to what it found.
    hint: usize,
    words: Vec<u64>,
    /// Offset of each level's first word in `words`; `levels[0] == 0`.
    offsets: [usize; MAX_DEPTH],
    /// Number of levels; the last one is a single word.
    depth: usize,
    len: usize,
}

impl HierBitmap {
    /// A bitmap over `len` positions, all clear. `len` must be at least 1 and at
    /// most 2^36.
    ///
    /// # Panics
    /// If `len` is zero or too large (callers validate sizes first).
    #[must_use]
    pub fn new(len: usize) -> Self {
        assert!(len >= 1, "a bitmap needs at least one position");
        let mut offsets = [0usize; MAX_DEPTH];
        let mut total = 0;
        let mut depth = 0;
        let mut n = len;
        loop {
            assert!(depth < MAX_DEPTH, "bitmap of {len} positions is too deep");
            offsets[depth] = total;
            let words = n.div_ceil(WORD_BITS);
            total += words;
            depth += 1;
            if words == 1 {
                break;
            }
            n = words;
        }
        HierBitmap {
            hint: 0,
            words: vec![0; total],
            offsets,
            depth,
            len,
        }
    }

    /// Number of positions.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Number of levels.
    #[must_use]
    #[inline]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Whether no position is set.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.top() == 0
    }

    #[inline]
    fn top(&self) -> u64 {
        self.words[self.offsets[self.depth - 1]]
    }

    /// Whether position `pos` is set.
    #[must_use]
    #[inline]
    pub fn contains(&self, pos: usize) -> bool {
        let (w, b) = split(pos);
        self.words[w] & (1 << b) != 0
    }

    /// Sets position `pos` (`pos < len`).
    #[inline(always)]
    pub fn set(&mut self, pos: usize) {
        self.hint = self.hint.min(pos);
        self.mark(pos);
    }

    /// [`set`](Self::set) without lowering the hint of
    /// [`first_from_hint`](Self::first_from_hint), for owners that keep their own.
    #[inline(always)]
    pub(crate) fn mark(&mut self, pos: usize) {
        debug_assert!(pos < self.len, "set({pos}) beyond {} positions", self.len);
        let (w, b) = split(pos);
        let word = &mut self.words[w];
        let was = *word;
        *word = was | 1 << b;
        if was == 0 {
            self.mark_above(w);
        }
    }

    /// The levels above 0, if any, after level-0 word `w` became non-zero: rare, so
    /// kept out of line to keep the inlined `set` small.
    #[cold]
    #[inline(never)]
    fn mark_above(&mut self, w: usize) {
        let mut pos = w;
        for level in 1..self.depth {
            let (w, b) = split(pos);
            let word = &mut self.words[self.offsets[level] + w];
            let was = *word;
            *word |= 1 << b;
            if was != 0 {
                return;
            }
            pos = w;
        }
    }

    /// Clears position `pos` (`pos < len`).
    #[inline(always)]
    pub fn clear(&mut self, pos: usize) {
        debug_assert!(pos < self.len, "clear({pos}) beyond {} positions", self.len);
        let (w, b) = split(pos);
        let word = &mut self.words[w];
        *word &= !(1 << b);
        if *word == 0 {
            self.clear_above(w);
        }
    }

    /// The levels above 0, if any, after level-0 word `w` became zero.
    #[cold]
    #[inline(never)]
    fn clear_above(&mut self, w: usize) {
        let mut pos = w;
        for level in 1..self.depth {
            let (w, b) = split(pos);
            let word = &mut self.words[self.offsets[level] + w];
            *word &= !(1 << b);
            if *word != 0 {
                return;
            }
            pos = w;
        }
    }

    /// Clears every position.
    pub fn clear_all(&mut self) {
        self.words.fill(0);
        self.hint = 0;
    }

    /// The lowest set position.
    #[must_use]
    #[inline]
    pub fn first(&self) -> Option<usize> {
        // NB: the common depths unrolled: a third fewer instructions per pop than
        // the loop below, measured on the hold model.
        match self.depth {
            1 => return first_set(self.words[0]),
            2 => {
                let top = first_set(self.words[self.offsets[1]])?;
                return Some(top * WORD_BITS + self.words[top].trailing_zeros() as usize);
            }
            3 => {
                let top = first_set(self.words[self.offsets[2]])?;
                let mid =
                    top * WORD_BITS + self.words[self.offsets[1] + top].trailing_zeros() as usize;
                return Some(mid * WORD_BITS + self.words[mid].trailing_zeros() as usize);
            }
            _ => {}
        }
        let mut pos = first_set(self.top())?;
        for level in (0..self.depth - 1).rev() {
            let word = self.words[self.offsets[level] + pos];
            debug_assert!(
                word != 0,
                "level {level} word {pos} empty under a set parent bit"
            );
            pos = pos * WORD_BITS + word.trailing_zeros() as usize;
        }
        Some(pos)
    }

    /// [`first`](Self::first), looking first in the level-0 word of the lowest
    /// position that may be set, and remembering what it found. A queue whose
    /// minimum moves up a few buckets at a time, as a scheduler's does, finds it
    /// with one load instead of one per level.
    #[must_use]
    #[inline]
    pub fn first_from_hint(&mut self) -> Option<usize> {
        let (w, b) = split(self.hint);
        let word = self.words.get(w).map_or(0, |&word| mask_from(word, b));
        let found = if word != 0 {
            w * WORD_BITS + word.trailing_zeros() as usize
        } else {
            self.first()?
        };
        debug_assert_eq!(
            Some(found),
            self.first(),
            "hint {} skipped a set position",
            self.hint
        );
        self.hint = found;
        Some(found)
    }

    /// The lowest set position at or after `pos` within `pos`'s level-0 word (one
    /// load), if any: where a search that starts at `pos` usually ends.
    #[must_use]
    #[inline(always)]
    pub fn first_in_word_from(&self, pos: usize) -> Option<usize> {
        let (w, b) = split(pos);
        first_set(mask_from(self.words[w], b)).map(|bit| w * WORD_BITS + bit)
    }

    /// The lowest set position after `pos` within `pos`'s level-0 word (one load):
    /// a cheap guess at the next position, for prefetching.
    #[must_use]
    #[inline]
    pub fn next_in_word(&self, pos: usize) -> Option<usize> {
        let (w, b) = split(pos);
        first_set(mask_after(self.words[w], b)).map(|bit| w * WORD_BITS + bit)
    }

    /// The highest set position.
    #[must_use]
    #[inline]
    pub fn last(&self) -> Option<usize> {
        let mut pos = last_set(self.top())?;
        for level in (0..self.depth - 1).rev() {
            let word = self.words[self.offsets[level] + pos];
            debug_assert!(
                word != 0,
                "level {level} word {pos} empty under a set parent bit"
            );
            pos = pos * WORD_BITS + 63 - word.leading_zeros() as usize;
        }
        Some(pos)
    }

    /// The lowest set position at or after `from`.
    #[must_use]
    pub fn next_set(&self, from: usize) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        // Climb until some level has a set bit at or after the current position,
        // then descend taking the lowest set bit at each level.
        let mut pos = from;
        let mut level = 0;
        let found = loop {
            let (w, b) = split(pos);
            let level_words = self.level_words(level);
            if w >= level_words {
                return None;
            }
            if let Some(bit) = first_set(mask_from(self.words[self.offsets[level] + w], b)) {
                break w * WORD_BITS + bit;
            }
            if level + 1 == self.depth {
                return None;
            }
            pos = w + 1;
            level += 1;
        };
        Some(self.descend_first(level, found))
    }

    /// The first set position met going up from `from` and wrapping past the end to
    /// position 0 (`from < len`): the search of a circular array of buckets whose
    /// logical start is `from`. At most two [`next_set`](Self::next_set) searches.
    #[must_use]
    #[inline]
    pub fn next_set_wrapping(&self, from: usize) -> Option<usize> {
        self.next_set(from).or_else(|| self.next_set(0))
    }

    /// The highest set position at or before `from` (positions beyond `len` are
    /// treated as `len - 1`).
    #[must_use]
    pub fn prev_set(&self, from: usize) -> Option<usize> {
        let mut pos = from.min(self.len - 1);
        let mut level = 0;
        let found = loop {
            let (w, b) = split(pos);
            if let Some(bit) = last_set(mask_through(self.words[self.offsets[level] + w], b)) {
                break w * WORD_BITS + bit;
            }
            if level + 1 == self.depth || w == 0 {
                return None;
            }
            pos = w - 1;
            level += 1;
        };
        Some(self.descend_last(level, found))
    }

    /// From a set bit at `(level, pos)`, the lowest set leaf below it.
    #[inline]
    fn descend_first(&self, level: usize, mut pos: usize) -> usize {
        for l in (0..level).rev() {
            pos = pos * WORD_BITS + self.words[self.offsets[l] + pos].trailing_zeros() as usize;
        }
        pos
    }

    /// From a set bit at `(level, pos)`, the highest set leaf below it.
    #[inline]
    fn descend_last(&self, level: usize, mut pos: usize) -> usize {
        for l in (0..level).rev() {
            pos = pos * WORD_BITS + 63 - self.words[self.offsets[l] + pos].leading_zeros() as usize;
        }
        pos
    }

    fn level_words(&self, level: usize) -> usize {
        let end = if level + 1 < self.depth {
            self.offsets[level + 1]
        } else {
            self.words.len()
        };
        end - self.offsets[level]
    }

    /// Checks the structural invariant described in the module documentation.
    ///
    /// # Panics
    /// On a violation, naming the level and word.
    pub fn check_invariants(&self) {
        if let Some(first) = self.first() {
            assert!(
                self.hint <= first,
                "hint {} above the first set position {first}",
                self.hint
            );
        }
        let (w, b) = split(self.len);
        if b != 0 {
            assert_eq!(
                self.words[w] & (u64::MAX << b),
                0,
                "bits set beyond {} positions: word {w} = {:#b}",
                self.len,
                self.words[w]
            );
        }
        for level in 1..self.depth {
            for j in 0..self.level_words(level - 1) {
                let child = self.words[self.offsets[level - 1] + j];
                let (pw, pb) = split(j);
                let parent_bit = self.words[self.offsets[level] + pw] & (1 << pb) != 0;
                assert_eq!(
                    parent_bit,
                    child != 0,
                    "level {level} bit {j} disagrees with child word {child:#x}"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::collections::BTreeSet;

    #[test]
    fn depth_follows_log64() {
        assert_eq!(HierBitmap::new(1).depth(), 1);
        assert_eq!(HierBitmap::new(64).depth(), 1);
        assert_eq!(HierBitmap::new(65).depth(), 2);
        assert_eq!(HierBitmap::new(4096).depth(), 2);
        assert_eq!(HierBitmap::new(4097).depth(), 3);
        assert_eq!(HierBitmap::new(1 << 24).depth(), 4);
    }

    #[test]
    fn first_last_next_prev_against_a_set() {
        let mut bm = HierBitmap::new(5000);
        let mut model = BTreeSet::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for step in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let pos = (x % 5000) as usize;
            if step % 3 == 0 {
                bm.clear(pos);
                model.remove(&pos);
            } else {
                bm.set(pos);
                model.insert(pos);
            }
            if step % 97 == 0 {
                bm.check_invariants();
            }
            assert_eq!(bm.first(), model.first().copied());
            assert_eq!(bm.last(), model.last().copied());
            let probe = ((x >> 20) % 5100) as usize;
            assert_eq!(bm.next_set(probe), model.range(probe..).next().copied());
            if probe < 5000 {
                let in_word = model
                    .range(probe + 1..)
                    .next()
                    .filter(|&&p| p / 64 == probe / 64);
                assert_eq!(bm.next_in_word(probe), in_word.copied());
                let from_word = model
                    .range(probe..)
                    .next()
                    .filter(|&&p| p / 64 == probe / 64);
                assert_eq!(bm.first_in_word_from(probe), from_word.copied());
            }
            if probe < 5000 {
                assert_eq!(
                    bm.next_set_wrapping(probe),
                    model
                        .range(probe..)
                        .next()
                        .or_else(|| model.first())
                        .copied()
                );
            }
            assert_eq!(
                bm.prev_set(probe),
                model.range(..=probe.min(4999)).next_back().copied()
            );
        }
    }

    #[test]
    fn edges_of_the_range() {
        let mut bm = HierBitmap::new(4097);
        assert!(bm.is_empty());
        assert_eq!((bm.first(), bm.last()), (None, None));
        bm.set(4096);
        bm.set(0);
        assert_eq!((bm.first(), bm.last()), (Some(0), Some(4096)));
        assert_eq!(bm.next_set(1), Some(4096));
        assert_eq!(bm.prev_set(4095), Some(0));
        assert_eq!(bm.next_set(4097), None);
        bm.clear(0);
        bm.clear(4096);
        assert!(bm.is_empty());
        bm.check_invariants();
    }
}
