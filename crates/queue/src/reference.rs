//! The reference model: a plain ordered map, used by tests to check the real queues.
//!
//! Elements are keyed by `(rank / granularity, insertion sequence)` in a `BTreeMap`,
//! so the map pops exactly what a bucketed queue with unbounded range must pop:
//! lowest bucket first, FIFO within a bucket. Re-ranking within the same bucket keeps
//! the sequence number (the element's place); to another bucket takes a new one (the
//! tail). With granularity 1 it models the comparison heap. It is `O(log n)` per
//! operation and allocates per element: a reference, not a scheduler queue.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::api::{Handle, InsertError, PriorityQueue, QueueStats, RankError};

#[derive(Clone, Debug)]
struct Entry<T> {
    rank: u64,
    key: (u64, u64),
    item: T,
}

/// An ordered-map priority queue with bucket granularity.
#[derive(Clone, Debug)]
pub struct OrderedMapQueue<T> {
    map: BTreeMap<(u64, u64), u32>,
    slots: Vec<(u32, Option<Entry<T>>)>,
    free: Vec<u32>,
    granularity: u64,
    capacity: usize,
    seq: u64,
}

impl<T> OrderedMapQueue<T> {
    /// A reference queue of `granularity` ranks per bucket holding up to `capacity`
    /// elements.
    ///
    /// # Panics
    /// If `granularity` is zero.
    #[must_use]
    pub fn new(granularity: u64, capacity: usize) -> Self {
        assert!(granularity > 0, "granularity must be positive");
        OrderedMapQueue {
            map: BTreeMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            granularity,
            capacity,
            seq: 0,
        }
    }

    fn entry(&self, handle: Handle) -> Option<&Entry<T>> {
        let (gen, entry) = self.slots.get(handle.index as usize)?;
        if *gen == handle.gen {
            entry.as_ref()
        } else {
            None
        }
    }

    fn take(&mut self, slot: u32) -> (u64, T) {
        let (gen, entry) = &mut self.slots[slot as usize];
        let entry = entry.take().expect("live slot");
        *gen = gen.wrapping_add(1);
        self.free.push(slot);
        self.map.remove(&entry.key);
        (entry.rank, entry.item)
    }
}

impl<T> PriorityQueue<T> for OrderedMapQueue<T> {
    fn insert(&mut self, rank: u64, item: T) -> Result<Handle, InsertError<T>> {
        if self.map.len() >= self.capacity {
            return Err(InsertError::Full(item));
        }
        self.seq += 1;
        let key = (rank / self.granularity, self.seq);
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push((0, None));
            self.slots.len() as u32 - 1
        });
        let (gen, entry) = &mut self.slots[slot as usize];
        *entry = Some(Entry { rank, key, item });
        self.map.insert(key, slot);
        Ok(Handle {
            index: slot,
            gen: *gen,
        })
    }

    fn peek(&self) -> Option<(Handle, u64, &T)> {
        let (_, &slot) = self.map.iter().next()?;
        let (gen, entry) = &self.slots[slot as usize];
        let entry = entry.as_ref()?;
        Some((
            Handle {
                index: slot,
                gen: *gen,
            },
            entry.rank,
            &entry.item,
        ))
    }

    fn pop_min(&mut self) -> Option<(u64, T)> {
        let (_, &slot) = self.map.iter().next()?;
        Some(self.take(slot))
    }

    fn remove(&mut self, handle: Handle) -> Option<(u64, T)> {
        self.entry(handle)?;
        Some(self.take(handle.index))
    }

    fn set_rank(&mut self, handle: Handle, rank: u64) -> Result<(), RankError> {
        let old_key = self.entry(handle).ok_or(RankError::StaleHandle)?.key;
        let granularity = self.granularity;
        let new_key = if rank / granularity == old_key.0 {
            old_key
        } else {
            self.seq += 1;
            (rank / granularity, self.seq)
        };
        let entry = self.slots[handle.index as usize]
            .1
            .as_mut()
            .expect("live slot");
        entry.rank = rank;
        entry.key = new_key;
        if new_key != old_key {
            self.map.remove(&old_key);
            self.map.insert(new_key, handle.index);
        }
        Ok(())
    }

    fn get(&self, handle: Handle) -> Option<(u64, &T)> {
        self.entry(handle).map(|e| (e.rank, &e.item))
    }

    fn get_mut(&mut self, handle: Handle) -> Option<&mut T> {
        let (gen, entry) = self.slots.get_mut(handle.index as usize)?;
        if *gen != handle.gen {
            return None;
        }
        entry.as_mut().map(|e| &mut e.item)
    }

    fn len(&self) -> usize {
        self.map.len()
    }

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn stats(&self) -> QueueStats {
        QueueStats::default()
    }
}
