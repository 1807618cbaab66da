//! The reference row of the hold model: a plain bucket queue, what a C programmer
//! writes for integer ranks in a window that moves with the minimum, and nothing
//! more. It bounds from below what a bucketed queue costs on this machine, so that
//! `cffs` can be read against it in the same run.
//!
//! One ring of `2^15` buckets indexed by `rank mod 2^15` (so ranks must not go below
//! the last one popped, nor below `2^15` before the first pop, and stay within
//! `2^15 - 1` of the minimum: the hold model keeps them within
//! [`HOLD_SPAN`](super::workload::HOLD_SPAN)); a two-level occupancy bitmap (512
//! words, and 512 bits above them); per bucket a FIFO list of node indices with a
//! head and a tail array; per node its link, rank and item in three arrays; a
//! stack of free nodes; the bucket of the last pop, where the next search starts.
//!
//! What it leaves out, and `cffs` has: handles (a generation per node, a `prev`
//! link and the node's bucket, for O(1) remove and re-rank), any number of
//! buckets and any granularity, a base that moves lazily by halves, ranks below
//! the window (a list served first) and beyond it (clamped), and checks of the
//! ranks it is given.

/// Buckets of the ring.
const BUCKETS: usize = 1 << 15;
/// Level-0 bitmap words.
const WORDS: usize = BUCKETS / 64;
/// Level-1 bitmap words.
const TOP: usize = WORDS / 64;
/// End of a list.
const NIL: u32 = u32::MAX;

/// The plain bucket queue.
#[derive(Debug)]
pub struct PlainBuckets {
    heads: Box<[u32; BUCKETS]>,
    tails: Box<[u32; BUCKETS]>,
    words: Box<[u64; WORDS]>,
    top: [u64; TOP],
    next: Vec<u32>,
    ranks: Vec<u64>,
    items: Vec<u32>,
    free: Vec<u32>,
    /// The bucket of the last pop (0 before the first): no bucket is non-empty
    /// going round the ring from it to the minimum's.
    cursor: usize,
}

impl PlainBuckets {
    /// A queue of `capacity` nodes.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        let capacity = u32::try_from(capacity).expect("capacity fits u32");
        PlainBuckets {
            heads: Box::new([NIL; BUCKETS]),
            tails: Box::new([NIL; BUCKETS]),
            words: Box::new([0; WORDS]),
            top: [0; TOP],
            next: vec![NIL; capacity as usize],
            ranks: vec![0; capacity as usize],
            items: vec![0; capacity as usize],
            free: (0..capacity).rev().collect(),
            cursor: 0,
        }
    }

    /// The first non-empty bucket going round the ring from the cursor.
    #[inline]
    fn first(&self) -> Option<usize> {
        let w = self.cursor / 64;
        let here = self.words[w] & (u64::MAX << (self.cursor % 64));
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        // The words after the cursor's, round the ring, through the top level;
        // last the cursor's own word below the cursor.
        let from = (w + 1) % WORDS;
        for k in 0..=TOP {
            let t = (from / 64 + k) % TOP;
            let mut bits = self.top[t];
            if k == 0 {
                bits &= u64::MAX << (from % 64);
            }
            if bits != 0 {
                let word = t * 64 + bits.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
        }
        let below = self.words[w];
        (below != 0).then(|| w * 64 + below.trailing_zeros() as usize)
    }
}

impl super::baselines::MinQueue for PlainBuckets {
    #[inline(always)]
    fn push(&mut self, rank: u64, item: u32) {
        let b = (rank % BUCKETS as u64) as usize;
        let Some(i) = self.free.pop() else {
            unreachable!("the workloads size every queue for their largest backlog");
        };
        let n = i as usize;
        self.ranks[n] = rank;
        self.items[n] = item;
        self.next[n] = NIL;
        let tail = self.tails[b];
        if tail == NIL {
            self.heads[b] = i;
            let w = b / 64;
            if self.words[w] == 0 {
                self.top[w / 64] |= 1 << (w % 64);
            }
            self.words[w] |= 1 << (b % 64);
        } else {
            self.next[tail as usize] = i;
        }
        self.tails[b] = i;
    }

    #[inline(always)]
    fn pop(&mut self) -> Option<(u64, u32)> {
        let b = self.first()?;
        let i = self.heads[b];
        let n = i as usize;
        let next = self.next[n];
        self.heads[b] = next;
        if next == NIL {
            self.tails[b] = NIL;
            let w = b / 64;
            self.words[w] &= !(1 << (b % 64));
            if self.words[w] == 0 {
                self.top[w / 64] &= !(1 << (w % 64));
            }
        }
        self.free.push(i);
        self.cursor = b;
        Some((self.ranks[n], self.items[n]))
    }
}

#[cfg(test)]
mod tests {
    use super::super::baselines::{MinQueue, StdHeap};
    use super::super::workload::Hold;
    use super::*;

    #[test]
    fn pops_what_std_heap_pops_in_the_hold_model() {
        let mut plain = PlainBuckets::new(3_000);
        let mut heap = StdHeap::with_capacity(3_000);
        let (mut a, mut b) = (Hold::new(9), Hold::new(9));
        a.fill(&mut plain, 3_000);
        b.fill(&mut heap, 3_000);
        for _ in 0..50_000 {
            assert_eq!(a.step(&mut plain), b.step(&mut heap));
        }
    }

    #[test]
    fn keeps_fifo_order_and_wraps_round_the_ring() {
        let mut q = PlainBuckets::new(8);
        let base = 3 * BUCKETS as u64 - 2;
        q.push(base - 1, 9);
        assert_eq!(q.pop(), Some((base - 1, 9)));
        for (item, rank) in [(0, base + 3), (1, base), (2, base + 3), (3, base + 1)] {
            q.push(rank, item);
        }
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, v)| v)).collect();
        assert_eq!(order, [1, 3, 0, 2]);
        assert_eq!(q.pop(), None);
    }
}
