//! The tree's nodes as the scheduler keeps them: an internal node ordering its
//! children, a FIFO leaf or a per-flow leaf, each with its limit, its place in
//! its parent's queue and its accounting.

use super::minq::{MinDeque, MinPool};
use super::program::Pacer;
use super::sched::NodeSched;
use super::shaper::Gcra;
use crate::pool::Fifo as List;
use crate::scheduler::Backlog;
use crate::Nanos;

/// "No node": the root's parent.
pub(super) const NONE: u32 = u32::MAX;

/// One flow of a per-flow leaf.
#[derive(Debug)]
pub(super) struct Flow {
    pub(super) fifo: List,
    pub(super) gcra: Option<Gcra>,
    pub(super) throttled: bool,
    pub(super) min: MinDeque,
    /// The release time the leaf's pacer gave the flow's head (0 without one).
    pub(super) due: Nanos,
}

/// A per-flow leaf: one FIFO per flow, the flows ordered by the leaf's discipline.
#[derive(Debug)]
pub(super) struct FlowLeaf {
    pub(super) flows: Vec<Flow>,
    pub(super) sched: NodeSched,
    pub(super) flow_queue_limit: u32,
    /// Tracks each flow's smallest queued `remaining` (pfabric only).
    pub(super) minima: Option<MinPool>,
    /// The flows' release-time program and its per-flow state, if any.
    pub(super) pacer: Option<Pacer>,
}

// NB: an internal node's discipline (a queue, several hundred bytes) is boxed so
// that leaves stay small: a policy may have a million leaves (hClock over many
// VMs), and the box is one pointer to a stable allocation that stays in cache
// for the few internal nodes a packet's path visits. Children are a boxed slice
// (two words, not a vector's three) so that the kind fits the node's first line.
#[derive(Debug)]
pub(super) enum Kind {
    Internal {
        children: Box<[u32]>,
        sched: Box<NodeSched>,
    },
    Leaf {
        fifo: List,
    },
    Flows(Box<FlowLeaf>),
}

impl Kind {
    /// The discipline ordering the node's units (`None` for a FIFO leaf).
    #[inline]
    pub(super) fn sched(&self) -> Option<&NodeSched> {
        match self {
            Kind::Internal { sched, .. } => Some(sched),
            Kind::Flows(fl) => Some(&fl.sched),
            Kind::Leaf { .. } => None,
        }
    }

    /// The same, mutable.
    #[inline]
    pub(super) fn sched_mut(&mut self) -> Option<&mut NodeSched> {
        match self {
            Kind::Internal { sched, .. } => Some(sched),
            Kind::Flows(fl) => Some(&mut fl.sched),
            Kind::Leaf { .. } => None,
        }
    }

    /// Whether the node has children.
    #[inline]
    pub(super) fn is_internal(&self) -> bool {
        matches!(self, Kind::Internal { .. })
    }
}

/// What left a node's subtree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Sent {
    pub(super) packets: u64,
    pub(super) bytes: u64,
}

/// One node of the tree: what a packet's path reads and writes, in two cache
/// lines. What is rare (drop counts, the shaper entry of a throttled node) is
/// kept by the tree in arrays of its own, indexed like the nodes.
// NB: laid out by hand. The first line holds everything an enqueue reads and
// writes (links, flags, backlog, the kind with the leaf FIFO or the discipline's
// box), the second what a dequeue adds (the rate limit and the sent counts).
// Arrivals are not counted apart: a node's arrivals are what left it, what was
// dropped in it and what it still holds (`PolicyTree::node` adds them up), so an
// enqueue writes one line per node of its path, not two. At 64K queues of
// `eiffel bench hqos` this halved the cold lines of an enqueue.
#[derive(Debug)]
#[repr(C, align(64))]
pub(super) struct Node {
    /// Parent node, or `NONE` for the root.
    pub(super) parent: u32,
    /// This node's unit index at its parent.
    pub(super) slot: u32,
    /// Most packets queued in this subtree (leaves), `u32::MAX` if unlimited.
    pub(super) capacity: u32,
    /// Queued in its parent's discipline.
    pub(super) active: bool,
    /// Filed in the shaper, out of its parent's queue.
    pub(super) throttled: bool,
    /// Whether `limit` applies (the node has a rate limit).
    pub(super) limited: bool,
    /// Whether its discipline may hold queued units back (`cq-policer`).
    pub(super) holds: bool,
    pub(super) backlog: Backlog,
    pub(super) kind: Kind,
    /// The rate limit, meaningful when `limited`.
    pub(super) limit: Gcra,
    /// Packets and bytes that left the subtree.
    pub(super) sent: Sent,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_node_is_two_cache_lines() {
        assert_eq!(core::mem::size_of::<Kind>(), 32);
        assert_eq!(core::mem::size_of::<Node>(), 128);
        assert_eq!(core::mem::offset_of!(Node, limit), 64);
    }

    #[test]
    fn a_discipline_is_no_bigger_than_a_fair_queueing_core() {
        // Every internal node's discipline box takes the enum's size.
        assert!(core::mem::size_of::<NodeSched>() <= 224);
    }
}
