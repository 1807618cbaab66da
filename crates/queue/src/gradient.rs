//! The exact gradient queue's index (Eiffel, NSDI'19, section 3.1.2 and Appendix A).
//!
//! The gradient queue finds the first non-empty bucket algebraically instead of with
//! a bit scan. Each non-empty child `j` of a node contributes the weight function
//! `2^j (x - j)^2`; the node's curvature is `a x^2 - 2 b x + c` with
//!
//! ```text
//! a = sum of 2^j,  b = sum of j * 2^j   over non-empty children j,
//! ```
//!
//! and the index of the largest non-empty child is exactly `ceil(b / a)` (the
//! paper's Theorem 1: `b / a` is a weighted mean of the indices, at most the largest
//! index `M`, and even with every child below `M` present it exceeds `M - 1`, since
//! `sum_{j<=M} j 2^j / sum_{j<=M} 2^j = M - 1 + (M + 1) / (2^(M+1) - 1)`).
//! Maintaining the curvature is one add to `a` and `b` when a child becomes
//! non-empty, one subtraction when it empties.
//!
//! The paper states the gradient queue as a *maximum* queue. We want the lowest
//! bucket, so child `c` (0..32) of a node is given index `j = 31 - c`: the lowest
//! non-empty child has the largest `j`.
//!
//! Constants: a node covers [`FANOUT`] = 32 children so that every quantity fits one
//! 64-bit word: `a < 2^32` and `b <= sum_{j<32} j 2^j = 30 * 2^32 + 2 < 2^37`.
//! A single curvature covers only 32 buckets, so, as the paper suggests, larger
//! queues stack curvatures hierarchically: a child of a level-`k + 1` node is a
//! level-`k` node, non-empty when its `a` is non-zero. Costs for `N` buckets, with
//! `d = ceil(log32 N)`: `first` is `d` integer divisions; `set`/`clear` update at most
//! `d` nodes (usually one).
//!
//! Deviation: none in the algorithm; the only choice beyond the paper is the fan-out
//! of 32 that keeps the arithmetic in 64 bits. Compared with the FFS index the
//! gradient index does the same job with a division instead of a bit scan, which is
//! why the paper presents it as the stepping stone to the approximate queue.

use alloc::vec;
use alloc::vec::Vec;

use crate::api::{ConfigError, QueueConfig};
use crate::index::BucketIndex;

/// Children per curvature node.
pub const FANOUT: usize = 32;

/// Levels supported: 32^6 = 2^30 buckets.
const MAX_DEPTH: usize = 6;

/// Most buckets a [`GradientIndex`] supports.
pub const MAX_GRADIENT_BUCKETS: usize = 1 << 30;

/// Hierarchical exact gradient index over `N` buckets.
#[derive(Clone, Debug)]
pub struct GradientIndex {
    /// Per node: sum of `2^j` over non-empty children (`j = 31 - child`).
    a: Vec<u64>,
    /// Per node: sum of `j * 2^j` over non-empty children.
    b: Vec<u64>,
    offsets: [usize; MAX_DEPTH],
    depth: usize,
    len: usize,
}

/// The largest non-empty child index `j` of a node with curvature `(a, b)`, `a > 0`:
/// `ceil(b / a)` (Theorem 1).
#[inline]
const fn critical_point(a: u64, b: u64) -> usize {
    b.div_ceil(a) as usize
}

/// The weight index of child `c`.
#[inline]
const fn weight_index(c: usize) -> u32 {
    (FANOUT - 1 - c) as u32
}

impl GradientIndex {
    fn new(len: usize) -> Self {
        let mut offsets = [0usize; MAX_DEPTH];
        let (mut total, mut depth, mut n) = (0, 0, len);
        loop {
            offsets[depth] = total;
            let nodes = n.div_ceil(FANOUT);
            total += nodes;
            depth += 1;
            if nodes == 1 {
                break;
            }
            n = nodes;
        }
        GradientIndex {
            a: vec![0; total],
            b: vec![0; total],
            offsets,
            depth,
            len,
        }
    }

    /// Number of curvature levels.
    #[must_use]
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Child `c` of `node` at `level` is non-empty.
    #[inline]
    fn contains(&self, level: usize, node: usize, c: usize) -> bool {
        self.a[self.offsets[level] + node] >> weight_index(c) & 1 == 1
    }
}

impl BucketIndex for GradientIndex {
    fn build(buckets: usize, _cfg: &QueueConfig) -> Result<Self, ConfigError> {
        ConfigError::at_most_buckets(buckets, MAX_GRADIENT_BUCKETS)?;
        Ok(GradientIndex::new(buckets))
    }

    #[inline]
    fn set(&mut self, bucket: usize) {
        debug_assert!(bucket < self.len);
        debug_assert!(
            !self.contains(0, bucket / FANOUT, bucket % FANOUT),
            "bucket {bucket} set twice"
        );
        let mut pos = bucket;
        for level in 0..self.depth {
            let (node, c) = (pos / FANOUT, pos % FANOUT);
            let i = self.offsets[level] + node;
            let j = weight_index(c);
            let was_empty = self.a[i] == 0;
            self.a[i] += 1 << j;
            self.b[i] += u64::from(j) << j;
            if !was_empty {
                return;
            }
            pos = node;
        }
    }

    #[inline]
    fn clear(&mut self, bucket: usize) {
        debug_assert!(
            self.contains(0, bucket / FANOUT, bucket % FANOUT),
            "bucket {bucket} cleared twice"
        );
        let mut pos = bucket;
        for level in 0..self.depth {
            let (node, c) = (pos / FANOUT, pos % FANOUT);
            let i = self.offsets[level] + node;
            let j = weight_index(c);
            self.a[i] -= 1 << j;
            self.b[i] -= u64::from(j) << j;
            if self.a[i] != 0 {
                return;
            }
            pos = node;
        }
    }

    #[inline]
    fn first(&self) -> Option<usize> {
        let top = self.offsets[self.depth - 1];
        if self.a[top] == 0 {
            return None;
        }
        let mut pos = FANOUT - 1 - critical_point(self.a[top], self.b[top]);
        for level in (0..self.depth - 1).rev() {
            let i = self.offsets[level] + pos;
            debug_assert!(
                self.a[i] != 0,
                "empty node {pos} at level {level} under a set parent"
            );
            pos = pos * FANOUT + FANOUT - 1 - critical_point(self.a[i], self.b[i]);
        }
        Some(pos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn critical_point_is_the_largest_index_for_every_pattern_of_a_small_node() {
        // Exhaustive over all 2^12 - 1 non-empty patterns of 12 children, and the
        // extreme patterns of 32.
        for pattern in 1u64..1 << 12 {
            let (mut a, mut b) = (0u64, 0u64);
            for j in 0..12 {
                if pattern >> j & 1 == 1 {
                    a += 1 << j;
                    b += j << j;
                }
            }
            assert_eq!(
                critical_point(a, b),
                63 - pattern.leading_zeros() as usize,
                "pattern {pattern:#b}"
            );
        }
        let all = (0..32u64).fold((0, 0), |(a, b), j| (a + (1 << j), b + (j << j)));
        assert_eq!(critical_point(all.0, all.1), 31);
        assert_eq!(critical_point(1, 0), 0);
    }

    #[test]
    fn depth_follows_log32() {
        assert_eq!(GradientIndex::new(32).depth(), 1);
        assert_eq!(GradientIndex::new(33).depth(), 2);
        assert_eq!(GradientIndex::new(1024).depth(), 2);
        assert_eq!(GradientIndex::new(1 << 24).depth(), 5);
    }
}
