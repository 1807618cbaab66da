//! A port whose policy is one FIFO leaf: a ring of packet ids.
//!
//! The policy tree of such a policy (one node, no rate limit, no release
//! program) serves packets in arrival order and refuses one only by its
//! limits; this queue applies the same limits in the same order (the leaf's
//! `capacity`, then the tree's packet capacity) and refuses with the same
//! reasons, without the tree's node bookkeeping, shaper check and packet copy.

use std::collections::VecDeque;

use eiffel_sched::tree::TreeSpec;
use eiffel_sched::DropReason;

use super::{Arrival, Departure, QueueCounters};

/// One FIFO of packet ids.
#[derive(Debug)]
pub struct FifoQueue {
    ids: VecDeque<u32>,
    /// The leaf's own packet limit (`u32::MAX` when the policy sets none).
    leaf_capacity: u32,
    /// The tree's packet capacity.
    capacity: u32,
    mtu: u32,
    counters: QueueCounters,
}

impl FifoQueue {
    /// The queue equivalent to `spec`'s tree, if `spec` is one plain FIFO leaf.
    #[must_use]
    pub fn for_spec(spec: &TreeSpec) -> Option<FifoQueue> {
        let [node] = spec.nodes.as_slice() else {
            return None;
        };
        let plain = node.per_flow.is_none()
            && node.limit.is_none()
            && node.release.is_none()
            && node.flow_release.is_none()
            && node.discipline.is_work_conserving();
        plain.then(|| FifoQueue {
            ids: VecDeque::with_capacity(spec.capacity as usize),
            leaf_capacity: node.capacity.unwrap_or(u32::MAX),
            capacity: spec.capacity,
            mtu: spec.mtu,
            counters: QueueCounters::default(),
        })
    }

    /// A new, empty queue with the same limits.
    #[must_use]
    pub fn empty_copy(&self) -> FifoQueue {
        FifoQueue {
            ids: VecDeque::with_capacity(self.ids.capacity()),
            counters: QueueCounters::default(),
            ..*self
        }
    }

    /// The tree's packet capacity.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Appends a packet, or refuses it as the tree would.
    ///
    /// # Errors
    /// The tree's reason for refusing it.
    #[inline]
    pub fn enqueue(&mut self, a: &Arrival) -> Result<(), DropReason> {
        self.counters.enqueued += 1;
        let queued = self.ids.len() as u64;
        let refused = if a.leaf != 0 {
            Some(DropReason::Unclassified)
        } else if a.len > self.mtu {
            Some(DropReason::TooLarge)
        } else if queued >= u64::from(self.leaf_capacity) {
            Some(DropReason::LeafFull)
        } else if queued >= u64::from(self.capacity) {
            Some(DropReason::QueueFull)
        } else {
            None
        };
        if let Some(r) = refused {
            self.counters.dropped += 1;
            return Err(r);
        }
        self.ids.push_back(a.id);
        Ok(())
    }

    /// The oldest packet.
    #[inline]
    pub fn dequeue(&mut self) -> Option<Departure> {
        let id = self.ids.pop_front()?;
        self.counters.dequeued += 1;
        Some(Departure { id, slot: 0 })
    }

    /// Packets queued.
    #[must_use]
    pub fn backlog(&self) -> u64 {
        self.ids.len() as u64
    }

    /// Offered, served and refused packets.
    #[must_use]
    pub fn counters(&self) -> QueueCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_policy::Policy;
    use eiffel_sched::{Packet, PolicyTree, Scheduler};
    use rand::{Rng, SeedableRng};

    /// Random arrivals (some too long, some to another leaf) and departures
    /// against the tree of the same policy, with the leaf's limit below the
    /// tree's capacity and above it.
    #[test]
    fn serves_and_refuses_as_the_tree() {
        for (text, capacity) in [
            ("[[node]]\nname = \"q\"\n", 30),
            ("[[node]]\nname = \"q\"\ncapacity = 12\n", 30),
            ("[[node]]\nname = \"q\"\ncapacity = 50\n", 30),
        ] {
            let mut spec = Policy::parse(text, "t.toml").unwrap().spec().clone();
            spec.capacity = capacity;
            let mut q = FifoQueue::for_spec(&spec).expect("one FIFO leaf");
            let mut t = PolicyTree::new(spec).unwrap();
            let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
            for id in 0..5_000u32 {
                if rng.gen_bool(0.55) {
                    let len = if rng.gen_range(0..50) == 0 {
                        1600
                    } else {
                        1500
                    };
                    let leaf = u32::from(rng.gen_range(0..50) == 0);
                    let a = Arrival {
                        id,
                        len,
                        slot: 0,
                        leaf,
                        remaining: 0,
                        rank: 0,
                        deadline: eiffel_sched::NO_DEADLINE,
                    };
                    let mut p = Packet::new(0, len);
                    p.buffer = id;
                    p.class = leaf;
                    let want = t.enqueue(p, 0).map_err(|d| d.reason);
                    assert_eq!(q.enqueue(&a), want, "{text}: arrival {id}");
                } else {
                    let want = t.dequeue(0).map(|d| d.buffer);
                    assert_eq!(q.dequeue().map(|d| d.id), want, "{text}: step {id}");
                }
            }
            assert_eq!(q.backlog(), t.backlog().packets);
            let c = t.counters();
            assert_eq!(
                q.counters(),
                QueueCounters {
                    enqueued: c.enqueued,
                    dequeued: c.dequeued,
                    dropped: c.dropped_total(),
                }
            );
        }
    }

    #[test]
    fn only_a_plain_fifo_leaf_qualifies() {
        for text in [
            "[[node]]\nname = \"q\"\nlimit = \"1Gbit\"\n",
            "[[node]]\nname = \"q\"\nflows = 4\n",
            "[[node]]\nname = \"r\"\n[[node]]\nname = \"a\"\nparent = \"r\"\n",
        ] {
            let spec = Policy::parse(text, "t.toml").unwrap().spec().clone();
            assert!(FifoQueue::for_spec(&spec).is_none(), "{text}");
        }
    }
}
