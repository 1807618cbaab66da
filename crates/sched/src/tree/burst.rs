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
