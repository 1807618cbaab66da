//! Enqueueing a burst of packets with the cache misses of the next packets
//! overlapped with the work on this one: DPDK `rte_sched`'s enqueue pipeline,
//! applied to the policy tree.
//!
//! A tree larger than the cache (64K queues of `eiffel bench hqos`: tens of MB
//! of nodes) spends an enqueue waiting for memory: the packet's leaf, the
//! pool slot its FIFO links from, the leaf's parent and the parent's
//! discipline, each named by the one before, so each miss waits for the last.
//! With the whole burst in hand the tree asks for them ahead, one level per
//! packet of distance: the leaf of the packet three ahead, the parent and the
//! FIFO's tail slot of the packet two ahead (their addresses are in the leaf,
//! fetched a packet ago), and the parent's discipline and the unit's state at
//! it of the next packet. Then it enqueues the packet exactly as
//! [`Scheduler::enqueue`] does, so a burst is the same as its packets one by
//! one: prefetches are hints and change nothing but timing.

use eiffel_queue::prefetch;

use super::node::{Kind, NONE};
use super::PolicyTree;
use crate::packet::{Nanos, Packet};
use crate::scheduler::{Dropped, Scheduler};

impl PolicyTree {
    /// Enqueues `pkts` in order at `now`, as many calls of
    /// [`Scheduler::enqueue`] would, prefetching the tree's state for the
    /// packets ahead (see the [module docs](self)). Each packet refused is
    /// handed to `dropped`; returns how many were queued.
    ///
    /// ```
    /// use eiffel_sched::tree::{NodeSpec, TreeSpec};
    /// use eiffel_sched::{Packet, PolicyTree, Scheduler};
    ///
    /// let mut spec = TreeSpec::new(2);
    /// spec.add(NodeSpec::new("all", None));
    /// let mut tree = PolicyTree::new(spec).unwrap();
    /// let leaf = tree.leaf("all").unwrap();
    /// let burst = [Packet::new(0, 100).class(leaf); 3];
    /// let mut drops = Vec::new();
    /// assert_eq!(tree.enqueue_burst(&burst, 0, |d| drops.push(d.reason)), 2);
    /// assert_eq!(drops, [eiffel_sched::DropReason::QueueFull]);
    /// ```
    pub fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        mut dropped: impl FnMut(Dropped),
    ) -> usize {
        for p in pkts.iter().take(LEAF_AHEAD) {
            self.prefetch_leaf(p);
        }
        for p in pkts.iter().take(LEAF_AHEAD - 1) {
            self.prefetch_parent(p);
        }
        let mut queued = 0;
        for (i, pkt) in pkts.iter().enumerate() {
            if let Some(p) = pkts.get(i + LEAF_AHEAD) {
                self.prefetch_leaf(p);
            }
            if let Some(p) = pkts.get(i + LEAF_AHEAD - 1) {
                self.prefetch_parent(p);
            }
            if let Some(p) = pkts.get(i + 1) {
                self.prefetch_discipline(p);
            }
            match self.enqueue(*pkt, now) {
                Ok(()) => queued += 1,
                Err(d) => dropped(d),
            }
        }
        queued
    }

    /// First stage: the leaf `pkt` names (its first line: links, FIFO, kind).
    #[inline]
    fn prefetch_leaf(&self, pkt: &Packet) {
        if let Some(leaf) = self.nodes.get(pkt.class as usize) {
            prefetch(leaf);
        }
    }

    /// Second stage: the pool slot the leaf's FIFO links from and the leaf's
    /// parent.
    #[inline]
    fn prefetch_parent(&self, pkt: &Packet) {
        let Some(leaf) = self.nodes.get(pkt.class as usize) else {
            return;
        };
        match &leaf.kind {
            Kind::Leaf { fifo } => self.pool.prefetch_tail(fifo),
            Kind::Flows(fl) => {
                if let Some(flow) = fl.flows.get(pkt.flow as usize) {
                    prefetch(flow);
                }
            }
            Kind::Internal { .. } => return,
        }
        if leaf.parent != NONE {
            prefetch(&self.nodes[leaf.parent as usize]);
        }
    }

    /// Third stage: the parent's discipline and the leaf's unit state at it.
    #[inline]
    fn prefetch_discipline(&self, pkt: &Packet) {
        let Some(leaf) = self.nodes.get(pkt.class as usize) else {
            return;
        };
        if leaf.parent == NONE || leaf.kind.is_internal() {
            return;
        }
        if let Kind::Internal { sched, .. } = &self.nodes[leaf.parent as usize].kind {
            sched.prefetch_unit(leaf.slot);
        }
    }
}

/// How many packets ahead the first stage runs (one stage per packet of
/// distance after it).
const LEAF_AHEAD: usize = 3;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{NodeSpec, RateLimit, TreeSpec};
    use super::*;
    use crate::time::Rate;
    use crate::tree::Discipline;

    /// rte_sched's shape in small: DRR over two subports, DRR over their pipes
    /// (some rate-limited), strict priority over three classes, the last a DRR
    /// over two queues; every node of it selects purely.
    fn hqos_like() -> (TreeSpec, Vec<u32>) {
        let mut spec = TreeSpec::new(64);
        let mut port = NodeSpec::new("port", None);
        port.discipline = Discipline::DRR;
        let port = spec.add(port);
        let mut leaves = Vec::new();
        for s in 0..2 {
            let mut sub = NodeSpec::new(&format!("s{s}"), Some(port));
            sub.discipline = Discipline::DRR;
            let sub = spec.add(sub);
            for p in 0..3 {
                let mut pipe = NodeSpec::new(&format!("s{s}p{p}"), Some(sub));
                pipe.discipline = Discipline::STRICT;
                pipe.weight = 1 + p;
                if p == 1 {
                    pipe.limit = Some(RateLimit {
                        rate: Rate::from_mbps(200),
                        burst: 3_000,
                    });
                }
                let pipe = spec.add(pipe);
                for c in 0..2 {
                    let mut class = NodeSpec::new(&format!("s{s}p{p}c{c}"), Some(pipe));
                    class.priority = c;
                    class.capacity = Some(6);
                    leaves.push(spec.add(class) as u32);
                }
                let mut be = NodeSpec::new(&format!("s{s}p{p}be"), Some(pipe));
                be.discipline = Discipline::DRR;
                be.priority = 2;
                let be = spec.add(be);
                for q in 0..2 {
                    let mut queue = NodeSpec::new(&format!("s{s}p{p}be{q}"), Some(be));
                    queue.weight = 1 + q;
                    leaves.push(spec.add(queue) as u32);
                }
            }
        }
        (spec, leaves)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// A burst enqueue is its packets one by one, and a dequeue that goes
        /// straight to the remembered leaf takes the packet a descent from the
        /// root would: the same departures, drops and state as a twin tree
        /// enqueueing one by one and forgetting the path before every dequeue.
        #[test]
        fn bursts_and_remembered_paths_change_nothing(
            steps in proptest::collection::vec(
                (proptest::collection::vec((any::<u32>(), 64u32..1500), 0..12), 0usize..12, 0u64..20_000),
                1..80,
            )
        ) {
            let (spec, leaves) = hqos_like();
            let mut fast = PolicyTree::new(spec.clone()).unwrap();
            let mut slow = PolicyTree::new(spec).unwrap();
            let (mut now, mut seq) = (0u64, 0u32);
            for (arrivals, dequeues, dt) in steps {
                now += dt;
                let burst: Vec<Packet> = arrivals
                    .iter()
                    .map(|&(x, len)| {
                        seq += 1;
                        Packet::new(x % 4, len)
                            .class(leaves[x as usize % leaves.len()])
                            .buffer(seq)
                    })
                    .collect();
                let mut fast_drops = Vec::new();
                let queued = fast.enqueue_burst(&burst, now, |d| fast_drops.push(d));
                let mut slow_drops = Vec::new();
                for &p in &burst {
                    if let Err(d) = slow.enqueue(p, now) {
                        slow_drops.push(d);
                    }
                }
                prop_assert_eq!(queued, burst.len() - slow_drops.len());
                prop_assert_eq!(&fast_drops, &slow_drops);
                for _ in 0..dequeues {
                    slow.ahead = NONE;
                    let (a, b) = (fast.dequeue(now), slow.dequeue(now));
                    prop_assert_eq!(a, b);
                }
                fast.check_invariants();
                slow.check_invariants();
            }
            prop_assert_eq!(fast.backlog(), slow.backlog());
        }
    }
}
