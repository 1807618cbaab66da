//! Enqueueing a burst of packets with the cache misses of the next packets
//! overlapped with the work on this one: DPDK `rte_sched`'s enqueue pipeline,
//! applied to the policy tree.
//!
//! A tree larger than the cache (64K queues of `eiffel bench hqos`: about 10
//! MB of nodes, 4 MB of packet slots) spends an enqueue waiting for memory:
//! the packet's leaf, the pool slot its FIFO links from, the leaf's parent,
//! the parent's discipline and the unit's state in it, each named by the one
//! before, so each miss waits for the last. With the whole burst in hand the
//! tree asks for them ahead in four stages, [`STAGE_GAP`] packets apart: the
//! leaf; its FIFO's tail slot and its parent (their addresses are in the
//! leaf, fetched a stage ago); the grandparent (whose count the enqueue
//! raises too) and the parent's discipline; the unit's state in it. The
//! discipline and the unit (and the parent's limit) only for a leaf not yet
//! queued in its parent: an arrival behind a queued leaf's head reads none of
//! them when the disciplines above ignore arrivals, and hints of lines nobody
//! reads still hold the memory system's slots (5% of the time at 64K queues
//! of `eiffel bench hqos`). A packet is enqueued a stage after its last prefetch, exactly as
//! [`Scheduler::enqueue`] does, so a burst is the same as its packets one by
//! one: prefetches are hints and change nothing but timing.
//!
//! A tree that fits in the cache gains nothing from the hints and pays their
//! instructions (a tenth of an enqueue at 1K queues), so only trees whose
//! nodes exceed [`PREFETCH_ABOVE`] bytes issue them.

use eiffel_queue::{prefetch, prefetch_lines};

use super::node::{Kind, Node, NONE};
use super::PolicyTree;
use crate::packet::{Nanos, Packet};
use crate::scheduler::{Dropped, Scheduler};

/// Packets between two stages of one packet's prefetches: enough work (about
/// two enqueues) to cover a miss to memory.
pub(super) const STAGE_GAP: usize = 2;

/// Stages of prefetches before a packet is enqueued.
const STAGES: usize = 4;

/// Node bytes above which a tree prefetches: four times a core's 1 MB L2
/// cache. Measured with `eiffel bench hqos`: at 4K queues (0.6 MB of nodes)
/// the hints cost 10-40% more time than they save; at 64K (9.4 MB) the
/// dequeue's family prefetch alone saves about 15%.
pub(super) const PREFETCH_ABOVE: usize = 4 << 20;

/// Whether a tree of `nodes` nodes prefetches in bursts.
pub(super) fn prefetches(nodes: usize) -> bool {
    nodes.saturating_mul(core::mem::size_of::<Node>()) > PREFETCH_ABOVE
}

impl PolicyTree {
    /// Enqueues `pkts` in order at `now`, as many calls of
    /// [`Scheduler::enqueue`] would. In a tree larger than the cache (nodes
    /// over 4 MB) it prefetches, in four stages two packets apart, the leaf of
    /// each packet ahead, then its FIFO's tail slot and its parent, then its
    /// grandparent and (when the leaf is not yet queued in its parent) the
    /// parent's discipline, then the leaf's state in it, so that the misses of
    /// the packets ahead overlap the work on this one, as DPDK's
    /// `rte_sched_port_enqueue` does. Each packet refused is handed to
    /// `dropped`; returns how many were queued.
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
        let mut queued = 0;
        let mut offer = |tree: &mut PolicyTree, pkt: &Packet| match tree.enqueue(*pkt, now) {
            Ok(()) => queued += 1,
            Err(d) => dropped(d),
        };
        if !self.prefetching {
            for pkt in pkts {
                offer(self, pkt);
            }
            return queued;
        }
        // Step `k` runs stage `s` for packet `k - s * STAGE_GAP`, and enqueues
        // packet `k - STAGES * STAGE_GAP`.
        for k in 0..pkts.len() + STAGES * STAGE_GAP {
            let at = |s: usize| k.checked_sub(s * STAGE_GAP).and_then(|i| pkts.get(i));
            if let Some(p) = at(0) {
                self.prefetch_leaf(p);
            }
            if let Some(p) = at(1) {
                self.prefetch_parent(p);
            }
            if let Some(p) = at(2) {
                self.prefetch_discipline(p);
            }
            if let Some(p) = at(3) {
                self.prefetch_unit(p);
            }
            if let Some(p) = at(STAGES) {
                offer(self, p);
            }
        }
        queued
    }

    /// The leaf `pkt` names, if it is one, and its parent.
    #[inline]
    fn leaf_of(&self, pkt: &Packet) -> Option<(&Node, u32)> {
        let leaf = self.nodes.get(pkt.class as usize)?;
        (!leaf.kind.is_internal() && leaf.parent != NONE).then_some((leaf, leaf.parent))
    }

    /// Stage 1: the leaf `pkt` names (its first line: links, FIFO, kind).
    #[inline]
    fn prefetch_leaf(&self, pkt: &Packet) {
        if let Some(leaf) = self.nodes.get(pkt.class as usize) {
            prefetch_lines(leaf, 2);
        }
    }

    /// Stage 2: the pool slot the leaf's FIFO links from, and the leaf's
    /// parent.
    #[inline]
    fn prefetch_parent(&self, pkt: &Packet) {
        let Some((leaf, parent)) = self.leaf_of(pkt) else {
            return;
        };
        match &leaf.kind {
            Kind::Leaf { fifo } => self.pool.prefetch_tail(fifo),
            Kind::Flows(fl) => {
                if let Some(flow) = fl.flows.get(pkt.flow as usize) {
                    prefetch(flow);
                }
            }
            Kind::Internal { .. } => {}
        }
        prefetch(self.nodes.at(parent));
    }

    /// Stage 3: the leaf's grandparent (counting the packet reads every
    /// ancestor), and what activating the leaf in its parent reads, if the
    /// leaf is not queued there (a queued leaf's arrival leaves the parent's
    /// discipline and limit alone when the parent ignores arrivals): the
    /// parent's discipline, and the parent's limit if its subtree is empty
    /// (it is then activated in turn, after its limit is checked).
    #[inline]
    fn prefetch_discipline(&self, pkt: &Packet) {
        let Some((leaf, p)) = self.leaf_of(pkt) else {
            return;
        };
        let parent = self.nodes.at(p);
        if let Some(grandparent) = self.nodes.get(parent.parent as usize) {
            prefetch(grandparent);
        }
        if leaf.active && self.quiet[p as usize] {
            return;
        }
        if let Kind::Internal { sched, .. } = &parent.kind {
            prefetch_lines(&**sched, DISCIPLINE_LINES);
        }
        if parent.backlog.packets == 0 {
            prefetch(&parent.limit);
        }
    }

    /// Stage 4: the leaf's state as a unit of its parent's discipline, if
    /// the leaf is not queued there.
    #[inline]
    fn prefetch_unit(&self, pkt: &Packet) {
        let Some((leaf, parent)) = self.leaf_of(pkt) else {
            return;
        };
        if leaf.active && self.quiet[parent as usize] {
            return;
        }
        if let Kind::Internal { sched, .. } = &self.nodes.at(parent).kind {
            sched.prefetch_unit(leaf.slot);
        }
    }
}

/// Most leaves [`PolicyTree::prefetch_family`] fetches for: a pipe of
/// `rte_sched`'s shape has 16, and a larger node is served over a longer time
/// than a prefetch lasts.
const FAMILY: usize = 32;

impl PolicyTree {
    /// Hints the CPU to fetch the next packet of every leaf among the
    /// children and grandchildren of node `n`, which its parent just turned
    /// to, and the second line of each such leaf (its limit and counts). A
    /// dequeue then finds the packet a descent picks already on its way, as
    /// `rte_sched`'s grinders prefetch a pipe's queues when they take it up:
    /// the loads of the leaves are independent, so their misses overlap
    /// instead of each dequeue waiting for one. Only hints: nothing changes
    /// but timing.
    pub(super) fn prefetch_family(&self, n: u32) {
        let Some(Kind::Internal { children, .. }) = self.nodes.get(n as usize).map(|x| &x.kind)
        else {
            return;
        };
        if children.len() > FAMILY {
            return;
        }
        let mut budget = FAMILY;
        for &c in children.iter() {
            match &self.nodes.at(c).kind {
                Kind::Leaf { fifo } => {
                    self.prefetch_leaf_head(c, fifo);
                    budget = budget.saturating_sub(1);
                }
                Kind::Internal { children, .. } if children.len() <= budget => {
                    for &g in children.iter() {
                        if let Kind::Leaf { fifo } = &self.nodes.at(g).kind {
                            self.prefetch_leaf_head(g, fifo);
                        }
                    }
                    budget -= children.len();
                }
                _ => {}
            }
            if budget == 0 {
                return;
            }
        }
    }

    #[inline]
    fn prefetch_leaf_head(&self, leaf: u32, fifo: &crate::pool::Fifo) {
        if !fifo.is_empty() {
            self.pool.prefetch_head(fifo);
            prefetch(&self.nodes.at(leaf).limit);
        }
    }
}

/// Lines of a discipline prefetched: a ranked node's unit tables and the
/// first part of its queue (the whole of a one-word `ffs` queue).
const DISCIPLINE_LINES: usize = 5;

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{NodeSpec, RateLimit, TreeSpec};
    use super::*;
    use crate::time::Rate;
    use crate::tree::testing::add_pipe_children;
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
            let mut sub = NodeSpec::new(format!("s{s}"), Some(port));
            sub.discipline = Discipline::DRR;
            let sub = spec.add(sub);
            for p in 0..3 {
                let mut pipe = NodeSpec::new(format!("s{s}p{p}"), Some(sub));
                pipe.discipline = Discipline::STRICT;
                pipe.weight = 1 + p;
                if p == 1 {
                    pipe.limit = Some(RateLimit {
                        rate: Rate::from_mbps(200),
                        burst: 3_000,
                    });
                }
                let pipe = spec.add(pipe);
                add_pipe_children(&mut spec, pipe, &format!("s{s}p{p}"), 6, &mut leaves);
            }
        }
        (spec, leaves)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// A burst enqueue (prefetching) is its packets one by one, and a dequeue that goes
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
            // Small as it is, the tree runs the prefetch pipeline.
            fast.prefetching = true;
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
