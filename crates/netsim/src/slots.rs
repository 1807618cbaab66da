//! Port-local flow slots for per-flow leaves.
//!
//! A per-flow leaf of a policy tree keeps one FIFO per flow id in `0..flows`,
//! preallocated. A run has far more flows than any port sees at once, so each
//! port maps the flows it currently queues onto its own slots: a flow takes a
//! slot when its first packet arrives and gives it back when its last queued
//! packet leaves. Freed slots are reused oldest first, and a flow that returns
//! before its slot is reused gets the same one back (its cached index is still
//! valid), so a flow that pauses briefly keeps its per-flow scheduling state
//! (a WFQ finish tag, a DRR deficit). A slot reused by another flow carries the
//! previous owner's state into the new one: at most one packet's worth of
//! unfairness, as when a scheduler recycles flow-table entries.
//!
//! Cost: O(1) per packet (a cache check, or a pop from the free ring that skips
//! slots reclaimed by their owner); no allocation after construction.

use std::collections::VecDeque;

/// An invalid slot index: what a flow's cache holds before it has a slot.
pub const NO_SLOT: u32 = u32::MAX;

/// One slot: the flow key holding it (or the last one that did) and its
/// queued packets, side by side so that a lookup touches one cache line.
#[derive(Debug, Clone, Copy)]
struct Slot {
    owner: u64,
    refs: u32,
}

/// The slots of one port.
#[derive(Debug, Clone)]
pub struct SlotTable {
    slots: Vec<Slot>,
    /// Slots with no queued packet, oldest first; may also hold slots their
    /// owner took back (skipped when popped).
    free: VecDeque<u32>,
    in_free: Vec<bool>,
}

impl SlotTable {
    /// `n` slots, all free.
    #[must_use]
    pub fn new(n: u32) -> SlotTable {
        SlotTable {
            slots: vec![
                Slot {
                    owner: u64::MAX,
                    refs: 0
                };
                n as usize
            ],
            free: (0..n).collect(),
            in_free: vec![true; n as usize],
        }
    }

    /// A slot for one more packet of flow `key`, trying the flow's cached slot
    /// first and updating the cache; `None` when every slot has packets queued.
    #[inline]
    pub fn acquire(&mut self, key: u64, cache: &mut u32) -> Option<u32> {
        if let Some(slot) = self.slots.get_mut(*cache as usize) {
            if slot.owner == key {
                slot.refs += 1;
                return Some(*cache);
            }
        }
        while let Some(s) = self.free.pop_front() {
            let i = s as usize;
            self.in_free[i] = false;
            let slot = &mut self.slots[i];
            if slot.refs == 0 {
                *slot = Slot {
                    owner: key,
                    refs: 1,
                };
                *cache = s;
                return Some(s);
            }
        }
        None
    }

    /// One packet of slot `s` left.
    #[inline]
    pub fn release(&mut self, s: u32) {
        let i = s as usize;
        let slot = &mut self.slots[i];
        debug_assert!(slot.refs > 0, "slot {s} released more than acquired");
        slot.refs -= 1;
        if slot.refs == 0 && !self.in_free[i] {
            self.in_free[i] = true;
            self.free.push_back(s);
        }
    }

    /// Packets queued across all slots.
    #[must_use]
    pub fn queued(&self) -> u64 {
        self.slots.iter().map(|s| u64::from(s.refs)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_returning_flow_keeps_its_slot() {
        let mut t = SlotTable::new(3);
        let (mut a, mut b) = (NO_SLOT, NO_SLOT);
        let sa = t.acquire(1, &mut a).unwrap();
        t.release(sa);
        let sb = t.acquire(2, &mut b).unwrap();
        assert_ne!(sa, sb, "the oldest free slot is reused first");
        assert_eq!(t.acquire(1, &mut a), Some(sa), "flow 1 gets its slot back");
        assert_eq!(t.queued(), 2);
    }

    #[test]
    fn slots_run_out_only_when_all_hold_packets() {
        let mut t = SlotTable::new(2);
        let mut c = [NO_SLOT; 3];
        let s0 = t.acquire(0, &mut c[0]).unwrap();
        let s1 = t.acquire(1, &mut c[1]).unwrap();
        assert_eq!(t.acquire(2, &mut c[2]), None);
        t.release(s0);
        assert_eq!(t.acquire(2, &mut c[2]), Some(s0));
        // Flow 0's cache is stale now: it gets whatever is free.
        t.release(s1);
        assert_eq!(t.acquire(0, &mut c[0]), Some(s1));
    }
}
