//! The tree's nodes as the scheduler keeps them: an internal node ordering its
//! children, a FIFO leaf or a per-flow leaf, each with its limit, its place in
//! its parent's queue and its accounting.

use eiffel_queue::Handle;

use super::minq::{MinDeque, MinPool};
use super::program::Pacer;
use super::sched::NodeSched;
use super::shaper::Gcra;
use crate::packet::Nanos;
use crate::pool::Fifo as List;
use crate::scheduler::{Backlog, Counters};

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
// for the few internal nodes a packet's path visits.
#[derive(Debug)]
pub(super) enum Kind {
    Internal {
        children: Vec<u32>,
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

/// One node of the tree.
// NB: laid out by hand so that a packet's path touches few cache lines per node:
// the first line holds what every enqueue and dequeue reads and writes, the
// second the rate limit, the third the packet and byte counts; drop counts and
// the shaper entry follow.
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
    pub(super) backlog: Backlog,
    pub(super) kind: Kind,
    pub(super) limit: Option<Gcra>,
    pub(super) counters: Counters,
    /// While throttled: the shaper entry and the release time it was filed for.
    pub(super) filed: Option<(Handle, Nanos)>,
}
