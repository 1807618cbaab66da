//! Word-level bit helpers: the find-first-set primitives every bucketed queue is
//! built from, kept small and unit-tested on their own.
//!
//! Bucket `i` of a word is bit `i` (bit 0 = least significant = lowest bucket), so
//! "first non-empty bucket" is a trailing-zero count and "last" a leading-zero count.
//! Each compiles to one instruction (`tzcnt`/`lzcnt` or `bsf`/`bsr`) on x86-64.

/// Bits per bitmap word.
pub(crate) const WORD_BITS: usize = 64;

/// Index of the lowest set bit of `word`, or `None` if it is zero.
#[inline]
pub(crate) const fn first_set(word: u64) -> Option<usize> {
    if word == 0 {
        None
    } else {
        Some(word.trailing_zeros() as usize)
    }
}

/// Index of the highest set bit of `word`, or `None` if it is zero.
#[inline]
pub(crate) const fn last_set(word: u64) -> Option<usize> {
    if word == 0 {
        None
    } else {
        Some(63 - word.leading_zeros() as usize)
    }
}

/// `word` with every bit below `bit` cleared (`bit < 64`).
#[inline]
pub(crate) const fn mask_from(word: u64, bit: usize) -> u64 {
    word & (u64::MAX << bit)
}

/// `word` with every bit above `bit` cleared (`bit < 64`).
#[inline]
pub(crate) const fn mask_through(word: u64, bit: usize) -> u64 {
    word & (u64::MAX >> (63 - bit))
}

/// `word` with every bit at or below `bit` cleared (`bit < 64`): the bits strictly
/// after it.
#[inline]
pub(crate) const fn mask_after(word: u64, bit: usize) -> u64 {
    word & ((u64::MAX << bit) << 1)
}

/// Splits a bit position into (word index, bit within the word).
#[inline]
pub(crate) const fn split(pos: usize) -> (usize, usize) {
    (pos / WORD_BITS, pos % WORD_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_last_set() {
        assert_eq!(first_set(0), None);
        assert_eq!(last_set(0), None);
        assert_eq!(first_set(1), Some(0));
        assert_eq!(last_set(1), Some(0));
        assert_eq!(first_set(0b1011_0000), Some(4));
        assert_eq!(last_set(0b1011_0000), Some(7));
        assert_eq!(first_set(1 << 63), Some(63));
        assert_eq!(last_set(u64::MAX), Some(63));
    }

    #[test]
    fn masks_keep_the_named_side_inclusive() {
        let w = 0b1010_1010u64;
        assert_eq!(mask_from(w, 0), w);
        assert_eq!(mask_from(w, 2), 0b1010_1000);
        assert_eq!(mask_from(w, 63), 0);
        assert_eq!(mask_through(w, 63), w);
        assert_eq!(mask_through(w, 3), 0b1010);
        assert_eq!(mask_through(w, 0), 0);
        assert_eq!(mask_through(u64::MAX, 0), 1);
        assert_eq!(mask_after(w, 0), w);
        assert_eq!(mask_after(w, 1), 0b1010_1000);
        assert_eq!(mask_after(u64::MAX, 63), 0);
    }

    #[test]
    fn split_positions() {
        assert_eq!(split(0), (0, 0));
        assert_eq!(split(63), (0, 63));
        assert_eq!(split(64), (1, 0));
        assert_eq!(split(130), (2, 2));
    }
}
