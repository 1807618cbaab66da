//! The priority queues a Rust user would pick instead of Eiffel's, behind one small
//! interface shared with Eiffel's queues: [`MinQueue`] is what the fill-then-drain
//! and hold-model workloads need (insert with a rank, pop the minimum).
//!
//! - [`StdHeap`]: `std::collections::BinaryHeap` of `(rank, seq)` (reversed into a
//!   min-heap), the sequence number making equal ranks leave in insertion order as
//!   a bucket does.
//! - [`RadixHeap`]: the `radix-heap` crate's monotone radix heap, the fastest
//!   general-purpose integer priority queue on crates.io for ranks that never go
//!   below the last minimum (true of both workloads). It keeps no FIFO order among
//!   equal ranks.
//! - [`BTree`]: `BTreeMap` keyed by `(rank, seq)`.
//! - [`Eiffel`]: any [`PriorityQueue`] of this project, including the indexed
//!   binary heap (`binary_heap`), the baseline that also offers handles.
//!
//! None of the three std/crates.io structures can remove or re-rank an element by
//! handle, which is what a scheduler's flows need; they are measured on what they
//! can do.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

use eiffel_queue::PriorityQueue;
use radix_heap::RadixHeapMap;

/// Insert and pop-min: what the queue workloads drive.
///
/// Every implementation here is `#[inline(always)]`: a thin wrapper that would
/// otherwise stay a call in the workload's loop for some queues and not others,
/// depending on the size of what it wraps. What each wraps is left to the
/// compiler.
pub trait MinQueue {
    /// Inserts `item` with `rank`. The workloads size every queue for their
    /// largest backlog, so an insert cannot fail.
    fn push(&mut self, rank: u64, item: u32);
    /// Removes the minimum and returns it with its rank.
    fn pop(&mut self) -> Option<(u64, u32)>;
}

/// `std::collections::BinaryHeap<Reverse<(rank, seq, item)>>`.
#[derive(Debug, Default)]
pub struct StdHeap {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    seq: u32,
}

impl StdHeap {
    /// A heap with room for `capacity` elements.
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        StdHeap {
            heap: BinaryHeap::with_capacity(capacity),
            seq: 0,
        }
    }
}

impl MinQueue for StdHeap {
    #[inline(always)]
    fn push(&mut self, rank: u64, item: u32) {
        self.seq = self.seq.wrapping_add(1);
        self.heap.push(Reverse((rank, self.seq, item)));
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<(u64, u32)> {
        self.heap.pop().map(|Reverse((r, _, v))| (r, v))
    }
}

/// The `radix-heap` crate's `RadixHeapMap`, keyed by `Reverse(rank)` (it is a
/// max-heap whose keys never exceed the last popped one). Emptied, it starts
/// afresh.
#[derive(Debug, Default)]
pub struct RadixHeap(RadixHeapMap<Reverse<u64>, u32>);

impl RadixHeap {
    /// An empty radix heap.
    #[must_use]
    pub fn new() -> Self {
        RadixHeap(RadixHeapMap::new())
    }
}

impl MinQueue for RadixHeap {
    #[inline(always)]
    fn push(&mut self, rank: u64, item: u32) {
        self.0.push(Reverse(rank), item);
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<(u64, u32)> {
        let popped = self.0.pop();
        if popped.is_none() {
            // Empty: forget the last minimum, so that the next fill may start
            // anywhere (the buckets keep their memory).
            self.0.clear();
        }
        popped.map(|(Reverse(r), v)| (r, v))
    }
}

/// `BTreeMap<(rank, seq), item>`.
#[derive(Debug, Default)]
pub struct BTree {
    map: BTreeMap<(u64, u32), u32>,
    seq: u32,
}

impl MinQueue for BTree {
    #[inline(always)]
    fn push(&mut self, rank: u64, item: u32) {
        self.seq = self.seq.wrapping_add(1);
        self.map.insert((rank, self.seq), item);
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<(u64, u32)> {
        self.map.pop_first().map(|((r, _), v)| (r, v))
    }
}

/// An Eiffel queue driven through [`MinQueue`].
#[derive(Debug)]
pub struct Eiffel<Q>(pub Q);

impl<Q: PriorityQueue<u32>> MinQueue for Eiffel<Q> {
    #[inline(always)]
    fn push(&mut self, rank: u64, item: u32) {
        if self.0.insert(rank, item).is_err() {
            unreachable!("the workloads size every queue for their largest backlog");
        }
    }
    #[inline(always)]
    fn pop(&mut self) -> Option<(u64, u32)> {
        self.0.pop_min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_queue::{Cffs, QueueConfig};

    fn drain(q: &mut impl MinQueue) -> Vec<u64> {
        for (i, r) in [5u64, 1, 9, 1, 3].into_iter().enumerate() {
            q.push(r, i as u32);
        }
        std::iter::from_fn(|| q.pop().map(|(r, _)| r)).collect()
    }

    #[test]
    fn every_baseline_pops_in_rank_order() {
        let want = vec![1, 1, 3, 5, 9];
        assert_eq!(drain(&mut StdHeap::with_capacity(8)), want);
        assert_eq!(drain(&mut RadixHeap::new()), want);
        assert_eq!(drain(&mut BTree::default()), want);
        let cffs = Cffs::new(QueueConfig::new(16, 8)).unwrap();
        assert_eq!(drain(&mut Eiffel(cffs)), want);
    }

    #[test]
    fn std_heap_and_btree_keep_fifo_among_equal_ranks() {
        let mut h = StdHeap::with_capacity(4);
        let mut b = BTree::default();
        for item in 0..4 {
            h.push(7, item);
            b.push(7, item);
        }
        let h: Vec<u32> = std::iter::from_fn(|| h.pop().map(|(_, v)| v)).collect();
        let b: Vec<u32> = std::iter::from_fn(|| b.pop().map(|(_, v)| v)).collect();
        assert_eq!((h.clone(), b), (vec![0, 1, 2, 3], vec![0, 1, 2, 3]));
    }
}
