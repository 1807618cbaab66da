//! `binary_heap`: a comparison-based binary min-heap of elements, the baseline the
//! bucketed queues are measured against (the `O(log n)` structure the Eiffel paper
//! replaces, section 2).
//!
//! Elements are ordered by exact rank, FIFO among equal ranks (each insertion takes a
//! sequence number that breaks ties). Heap entries carry their key inline so sifting
//! compares without indirection; each element's slot records its heap position so
//! that `remove` and `set_rank` by handle are O(log n).
//!
//! Costs for `n` elements: `insert`, `pop_min`, `remove`, `set_rank` O(log n);
//! `peek` O(1). There is no range: every `u64` rank is exact.

use alloc::vec::Vec;

use crate::api::{
    check_capacity, ConfigError, Handle, InsertError, PriorityQueue, QueueConfig, QueueStats,
    RankError,
};
use crate::store::NIL;

#[derive(Clone, Copy, Debug)]
struct Entry {
    rank: u64,
    seq: u64,
    slot: u32,
}

impl Entry {
    #[inline]
    fn before(&self, other: &Entry) -> bool {
        (self.rank, self.seq) < (other.rank, other.seq)
    }
}

#[derive(Clone, Debug)]
struct Slot<T> {
    /// Position in the heap while live; next free slot while free.
    pos: u32,
    gen: u32,
    item: Option<T>,
}

/// A binary min-heap of elements with handles.
#[derive(Clone, Debug)]
pub struct BinaryHeapQueue<T> {
    heap: Vec<Entry>,
    slots: Vec<Slot<T>>,
    free: u32,
    seq: u64,
}

impl<T> BinaryHeapQueue<T> {
    /// A heap holding up to `cfg.capacity` elements (bucket settings are ignored).
    pub fn new(cfg: QueueConfig) -> Result<Self, ConfigError> {
        check_capacity(cfg.capacity)?;
        let capacity = cfg.capacity;
        let slots = (0..capacity)
            .map(|i| Slot {
                pos: if i + 1 < capacity { i as u32 + 1 } else { NIL },
                gen: 0,
                item: None,
            })
            .collect();
        Ok(BinaryHeapQueue {
            heap: Vec::with_capacity(capacity),
            slots,
            free: if capacity == 0 { NIL } else { 0 },
            seq: 0,
        })
    }

    #[inline]
    fn resolve(&self, handle: Handle) -> Option<u32> {
        let slot = self.slots.get(handle.index as usize)?;
        (slot.gen == handle.gen && slot.item.is_some()).then_some(handle.index)
    }

    #[inline]
    fn put(&mut self, i: usize, e: Entry) {
        self.slots[e.slot as usize].pos = i as u32;
        self.heap[i] = e;
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let e = self.heap[i];
        while i > 0 {
            let parent = (i - 1) / 2;
            if !e.before(&self.heap[parent]) {
                break;
            }
            let p = self.heap[parent];
            self.put(i, p);
            i = parent;
        }
        self.put(i, e);
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let e = self.heap[i];
        loop {
            let left = 2 * i + 1;
            if left >= n {
                break;
            }
            let right = left + 1;
            let child = if right < n && self.heap[right].before(&self.heap[left]) {
                right
            } else {
                left
            };
            if !self.heap[child].before(&e) {
                break;
            }
            let c = self.heap[child];
            self.put(i, c);
            i = child;
        }
        self.put(i, e);
    }

    /// Takes heap position `i` out and restores the heap; returns the entry.
    #[inline]
    fn take_at(&mut self, i: usize) -> Entry {
        let e = self.heap[i];
        let last = self.heap.pop().expect("position is in the heap");
        if i < self.heap.len() {
            self.put(i, last);
            self.sift_down(i);
            self.sift_up(self.slots[last.slot as usize].pos as usize);
        }
        e
    }

    #[inline]
    fn free_slot(&mut self, slot: u32) -> T {
        let free = self.free;
        let s = &mut self.slots[slot as usize];
        let item = s.item.take().expect("freeing a live slot");
        s.gen = s.gen.wrapping_add(1);
        s.pos = free;
        self.free = slot;
        item
    }

    /// Checks the heap order and the slot positions.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        for (i, e) in self.heap.iter().enumerate() {
            assert_eq!(
                self.slots[e.slot as usize].pos as usize, i,
                "slot {} position",
                e.slot
            );
            assert!(
                self.slots[e.slot as usize].item.is_some(),
                "heap entry on a free slot"
            );
            if i > 0 {
                assert!(!e.before(&self.heap[(i - 1) / 2]), "heap order at {i}");
            }
        }
    }
}

impl<T> PriorityQueue<T> for BinaryHeapQueue<T> {
    #[inline]
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        let slot = self.free;
        if slot == NIL {
            return Err(InsertError::Full(item));
        }
        let s = &mut self.slots[slot as usize];
        self.free = s.pos;
        s.item = Some(item);
        let handle = Handle {
            index: slot,
            gen: s.gen,
        };
        self.seq += 1;
        self.heap.push(Entry {
            rank,
            seq: self.seq,
            slot,
        });
        self.sift_up(self.heap.len() - 1);
        Ok(handle)
    }

    #[inline]
    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let e = self.heap.first()?;
        let s = &self.slots[e.slot as usize];
        Some((
            Handle {
                index: e.slot,
                gen: s.gen,
            },
            e.rank,
            s.item.as_ref().expect("heap entry is live"),
        ))
    }

    #[inline]
    fn pop_min(&mut self) -> Option<(u64, T)> {
        if self.heap.is_empty() {
            return None;
        }
        let e = self.take_at(0);
        Some((e.rank, self.free_slot(e.slot)))
    }

    #[inline]
    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        let slot = self.resolve(handle)?;
        let e = self.take_at(self.slots[slot as usize].pos as usize);
        Some((e.rank, self.free_slot(slot)))
    }

    #[inline]
    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let slot = self.resolve(handle).ok_or(RankError::StaleHandle)?;
        let i = self.slots[slot as usize].pos as usize;
        if self.heap[i].rank == rank {
            return Ok(());
        }
        self.seq += 1;
        self.heap[i].rank = rank;
        self.heap[i].seq = self.seq;
        self.sift_down(i);
        self.sift_up(self.slots[slot as usize].pos as usize);
        Ok(())
    }

    #[inline]
    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        let slot = self.resolve(handle)?;
        let s = &self.slots[slot as usize];
        Some((self.heap[s.pos as usize].rank, s.item.as_ref()?))
    }

    #[inline]
    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let slot = self.resolve(handle)?;
        self.slots[slot as usize].item.as_mut()
    }

    #[inline]
    fn len(&self) -> usize {
        self.heap.len()
    }

    #[inline]
    fn capacity(&self) -> usize {
        self.slots.len()
    }

    fn stats(&self) -> QueueStats {
        QueueStats::default()
    }
}
