//! Strict priority over up to 64 levels.
//!
//! The level of a packet is its [`Packet::class`]; level 0 is served first. Each
//! level is a FIFO in one shared [`PacketPool`]; a 64-bit word has bit `l` set
//! while level `l` holds packets, so `dequeue` finds the most urgent non-empty
//! level with one count-trailing-zeros instruction ([`first_set`]).
//!
//! Cost: O(1) enqueue and dequeue. Drops: [`DropReason::Unclassified`] for a class
//! outside `0..levels` (no level exists for it), [`DropReason::QueueFull`] when the
//! shared storage is full (tail drop).
//!
//! Invariant: bit `l` of the occupancy word is set iff level `l` is non-empty.

use crate::packet::{Nanos, Packet};
use crate::pool::{Fifo as List, PacketPool};
use crate::scheduler::{Backlog, ConfigError, Counters, DropReason, Dropped, Scheduler};

/// Most levels a [`Prio`] can have: one bit of a `u64` each.
pub const MAX_LEVELS: u32 = 64;

/// Index of the lowest set bit of a non-zero word.
#[inline]
#[must_use]
pub const fn first_set(word: u64) -> u32 {
    debug_assert!(word != 0);
    word.trailing_zeros()
}

/// A strict-priority scheduler; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Prio {
    /// Bit `l` set iff `levels[l]` is non-empty.
    occupied: u64,
    levels: Vec<List>,
    pool: PacketPool,
    bytes: u64,
    counters: Counters,
}

impl Prio {
    /// A scheduler with `levels` priority levels (1 to 64) holding at most
    /// `capacity` packets in total.
    pub fn new(levels: u32, capacity: usize) -> Result<Self, ConfigError> {
        if levels == 0 || levels > MAX_LEVELS {
            return Err(ConfigError::OutOfRange {
                what: "strict priority levels",
                value: u64::from(levels),
                range: "1..=64",
            });
        }
        Ok(Prio {
            occupied: 0,
            levels: vec![List::new(); levels as usize],
            pool: PacketPool::with_capacity(capacity),
            bytes: 0,
            counters: Counters::default(),
        })
    }

    /// Number of levels.
    #[must_use]
    pub fn levels(&self) -> u32 {
        self.levels.len() as u32
    }

    /// Packets and bytes queued at one level.
    #[must_use]
    pub fn level_backlog(&self, level: u32) -> Backlog {
        self.levels
            .get(level as usize)
            .map_or(Backlog::default(), |l| Backlog {
                packets: u64::from(l.len()),
                bytes: l.bytes(),
            })
    }

    /// Checks the occupancy word against the levels and the pool.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self) {
        self.pool.check_invariants(self.levels.iter());
        for (l, list) in self.levels.iter().enumerate() {
            assert_eq!(
                self.occupied >> l & 1 == 1,
                !list.is_empty(),
                "occupied={:#b}: bit {l} disagrees with the level",
                self.occupied
            );
        }
        assert_eq!(self.counters.implied_backlog(), self.pool.len() as u64);
    }
}

impl Scheduler for Prio {
    fn enqueue(&mut self, pkt: Packet, _now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        let Some(level) = self.levels.get_mut(pkt.class as usize) else {
            return Err(self.counters.drop_packet(pkt, DropReason::Unclassified));
        };
        if let Err(pkt) = self.pool.push_back(level, pkt) {
            return Err(self.counters.drop_packet(pkt, DropReason::QueueFull));
        }
        self.occupied |= 1 << pkt.class;
        self.bytes += u64::from(pkt.len);
        Ok(())
    }

    fn dequeue(&mut self, _now: Nanos) -> Option<Packet> {
        if self.occupied == 0 {
            return None;
        }
        let l = first_set(self.occupied);
        let level = &mut self.levels[l as usize];
        let pkt = self.pool.pop_front(level)?;
        if level.is_empty() {
            self.occupied &= !(1 << l);
        }
        self.bytes -= u64::from(pkt.len);
        self.counters.on_dequeue(pkt.len);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        Backlog {
            packets: self.pool.len() as u64,
            bytes: self.bytes,
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn name(&self) -> &'static str {
        "prio"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn most_urgent_level_first_and_fifo_within() {
        let mut p = Prio::new(64, 8).unwrap();
        p.enqueue(Packet::new(1, 100).class(63), 0).unwrap();
        p.enqueue(Packet::new(2, 100).class(5), 0).unwrap();
        p.enqueue(Packet::new(3, 100).class(5), 0).unwrap();
        p.enqueue(Packet::new(4, 100).class(0), 0).unwrap();
        let order: Vec<u32> = std::iter::from_fn(|| p.dequeue(0))
            .map(|p| p.flow)
            .collect();
        assert_eq!(order, [4, 2, 3, 1]);
        p.check_invariants();
    }

    #[test]
    fn rejects_bad_levels_and_unknown_classes() {
        assert!(Prio::new(0, 1).is_err());
        assert!(Prio::new(65, 1).is_err());
        let mut p = Prio::new(4, 1).unwrap();
        let d = p.enqueue(Packet::new(0, 10).class(4), 0).unwrap_err();
        assert_eq!(d.reason, DropReason::Unclassified);
        p.enqueue(Packet::new(0, 10).class(3), 0).unwrap();
        let d = p.enqueue(Packet::new(0, 10).class(3), 0).unwrap_err();
        assert_eq!(d.reason, DropReason::QueueFull);
        p.check_invariants();
    }

    proptest! {
        #[test]
        fn matches_a_reference_of_fifos(ops in proptest::collection::vec((any::<bool>(), 0u32..10, 1u32..100), 1..300)) {
            let mut p = Prio::new(8, 16).unwrap();
            let mut model: Vec<VecDeque<Packet>> = vec![VecDeque::new(); 8];
            for (i, (enq, class, len)) in ops.into_iter().enumerate() {
                if enq {
                    let pkt = Packet::new(0, len).class(class).buffer(i as u32);
                    let queued: usize = model.iter().map(VecDeque::len).sum();
                    match p.enqueue(pkt, 0) {
                        Ok(()) => model[class as usize].push_back(pkt),
                        Err(d) => prop_assert!(class >= 8 || queued == 16, "{d}"),
                    }
                } else {
                    let want = model.iter_mut().find(|q| !q.is_empty()).and_then(VecDeque::pop_front);
                    prop_assert_eq!(p.dequeue(0), want);
                }
                p.check_invariants();
            }
        }
    }
}
