//! Exact running minimum of each flow's queued ranks, for pFabric's flow rank
//! ("the smallest rank among the flow's packets", updated on enqueue and dequeue).
//!
//! Each flow keeps a monotone deque of candidate minima (the classic sliding-window
//! minimum): appending rank `r` first drops every candidate greater than `r` from the
//! back, since they can never be the minimum again while the packet with `r` is
//! queued; when the flow's head packet leaves, it is the deque's front if its rank
//! equals the front's. The front is always the minimum. Every packet enters and
//! leaves the deque at most once: amortized O(1), and the deques of all flows share
//! one preallocated node pool sized to the tree's packet capacity.

const NIL: u32 = u32::MAX;

/// The ends of one flow's deque.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MinDeque {
    head: u32,
    tail: u32,
}

impl Default for MinDeque {
    fn default() -> Self {
        MinDeque {
            head: NIL,
            tail: NIL,
        }
    }
}

/// Node storage shared by every flow's deque.
#[derive(Clone, Debug)]
pub(crate) struct MinPool {
    value: Vec<u64>,
    next: Vec<u32>,
    prev: Vec<u32>,
    free: u32,
}

impl MinPool {
    pub(crate) fn new(capacity: usize) -> Self {
        MinPool {
            value: vec![0; capacity],
            next: (0..capacity)
                .map(|i| if i + 1 < capacity { i as u32 + 1 } else { NIL })
                .collect(),
            prev: vec![NIL; capacity],
            free: if capacity == 0 { NIL } else { 0 },
        }
    }

    /// The flow's minimum queued rank.
    pub(crate) fn min(&self, d: &MinDeque) -> Option<u64> {
        (d.head != NIL).then(|| self.value[d.head as usize])
    }

    fn release(&mut self, i: u32) {
        self.next[i as usize] = self.free;
        self.free = i;
    }

    /// A packet of rank `r` joined the flow's tail.
    pub(crate) fn push(&mut self, d: &mut MinDeque, r: u64) {
        while d.tail != NIL && self.value[d.tail as usize] > r {
            let t = d.tail;
            d.tail = self.prev[t as usize];
            if d.tail == NIL {
                d.head = NIL;
            } else {
                self.next[d.tail as usize] = NIL;
            }
            self.release(t);
        }
        let i = self.free;
        assert!(i != NIL, "min pool sized to the packet capacity");
        self.free = self.next[i as usize];
        self.value[i as usize] = r;
        self.next[i as usize] = NIL;
        self.prev[i as usize] = d.tail;
        if d.tail == NIL {
            d.head = i;
        } else {
            self.next[d.tail as usize] = i;
        }
        d.tail = i;
    }

    /// The flow's head packet, of rank `r`, left.
    pub(crate) fn pop(&mut self, d: &mut MinDeque, r: u64) {
        if d.head != NIL && self.value[d.head as usize] == r {
            let h = d.head;
            d.head = self.next[h as usize];
            if d.head == NIL {
                d.tail = NIL;
            } else {
                self.prev[d.head as usize] = NIL;
            }
            self.release(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn tracks_the_minimum_of_a_fifo() {
        let mut pool = MinPool::new(64);
        let mut d = MinDeque::default();
        let mut fifo: VecDeque<u64> = VecDeque::new();
        let mut x = 0x1234_5678u64;
        for step in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if fifo.len() < 64 && (x % 3 != 0 || fifo.is_empty()) {
                let r = x % 10;
                fifo.push_back(r);
                pool.push(&mut d, r);
            } else {
                let r = fifo.pop_front().unwrap();
                pool.pop(&mut d, r);
            }
            assert_eq!(pool.min(&d), fifo.iter().min().copied(), "step {step}");
        }
    }
}
