//! What a tree shows of itself: a [`NodeView`] of each node, for reports and
//! `eiffel check`.

use eiffel_queue::{CalendarStats, PriorityQueue, QueueKind, QueueStats};

use super::node::NONE;
use super::sched::NodeSched;
use super::select::QueuePlan;
use super::spec::NodeSpec;
use super::PolicyTree;
use crate::scheduler::{Backlog, Counters, DropCounts};

/// A read-only view of one node, for reports and `eiffel check`.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    /// Index (leaf ids are node indices).
    pub index: usize,
    /// The node's specification.
    pub spec: &'a NodeSpec,
    /// Names from the root down to this node, joined by `/`.
    pub path: String,
    /// Depth (root 0).
    pub depth: usize,
    /// Whether it has no children.
    pub is_leaf: bool,
    /// Name of the transaction or core ordering its units (`None` for FIFO leaves).
    pub discipline: Option<String>,
    /// Queue plans of its ranked queues (hClock has two: reservations, shares).
    pub queues: Vec<QueuePlan>,
    /// Counters of its subtree.
    pub counters: Counters,
    /// Packets and bytes queued in its subtree.
    pub backlog: Backlog,
    /// Whether its output is currently held by the shaper.
    pub throttled: bool,
    /// Statistics of its queues (same order as `queues`).
    pub queue_stats: Vec<QueueStats>,
    /// Rotations, out-of-range days and level moves of its calendar (`cq-*`).
    pub calendar_stats: Option<CalendarStats>,
}

/// The counters of a subtree from what left it, what it holds and what was
/// dropped in it: what entered it is their sum.
pub(super) fn subtree_counters(sent: Backlog, backlog: Backlog, dropped: DropCounts) -> Counters {
    Counters {
        enqueued: sent.packets + dropped.total() + backlog.packets,
        enqueued_bytes: sent.bytes + dropped.total_bytes() + backlog.bytes,
        dequeued: sent.packets,
        dequeued_bytes: sent.bytes,
        dropped,
    }
}

impl PolicyTree {
    fn depth(&self, i: usize) -> usize {
        let mut d = 0;
        let mut cur = self.nodes[i].parent;
        while cur != NONE {
            d += 1;
            cur = self.nodes[cur as usize].parent;
        }
        d
    }

    /// The counters of node `i`'s subtree. A node counts what left it and what
    /// was dropped in it; what entered it is their sum with what it still holds.
    pub(super) fn node_counters(&self, i: usize) -> Counters {
        let (sent, backlog) = self.settled(i);
        let left = Backlog {
            packets: sent.packets,
            bytes: sent.bytes,
        };
        subtree_counters(left, backlog, self.drops[i])
    }

    /// A view of node `i`.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node(&self, i: usize) -> NodeView<'_> {
        let node = &self.nodes[i];
        let sched = node.kind.sched();
        let discipline = sched.map(sched_name);
        let queue_stats = sched.map_or_else(Vec::new, sched_stats);
        let calendar_stats = match sched {
            Some(NodeSched::Calendar(c)) => Some(c.calendar_stats()),
            _ => None,
        };
        NodeView {
            index: i,
            spec: &self.spec.nodes[i],
            path: self.spec.path(i),
            depth: self.depth(i),
            is_leaf: !node.kind.is_internal(),
            discipline,
            queues: self.plans[i].clone(),
            counters: self.node_counters(i),
            backlog: self.settled(i).1,
            throttled: node.throttled,
            queue_stats,
            calendar_stats,
        }
    }

    /// Views of every node, in specification order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeView<'_>> {
        (0..self.nodes.len()).map(|i| self.node(i))
    }
}

fn sched_name(s: &NodeSched) -> String {
    match s {
        NodeSched::Ranked(r) => r.txn.name().to_string(),
        NodeSched::Levels(_) => "strict".to_string(),
        NodeSched::Ets(_) => "ets".to_string(),
        NodeSched::Hclock(_) => "hclock".to_string(),
        NodeSched::Core(c, _) => c.name().to_string(),
        NodeSched::Calendar(c) => c.name().to_string(),
    }
}

fn sched_stats(s: &NodeSched) -> Vec<QueueStats> {
    match s {
        NodeSched::Ranked(r) => vec![r.queue().stats()],
        NodeSched::Hclock(h) => {
            let (a, b) = h.queues();
            vec![a.stats(), b.stats()]
        }
        NodeSched::Core(..) | NodeSched::Levels(_) | NodeSched::Ets(_) => Vec::new(),
        NodeSched::Calendar(c) => vec![c.stats()],
    }
}

/// The queue kind a ranked node ended up with (for tests and reports).
#[must_use]
pub fn node_queue_kind(tree: &PolicyTree, i: usize) -> Option<QueueKind> {
    match tree.nodes[i].kind.sched()? {
        NodeSched::Ranked(r) => Some(r.kind()),
        // A one-word bitmap: what `ffs` is.
        NodeSched::Levels(_) => Some(QueueKind::Ffs),
        NodeSched::Calendar(_) => Some(QueueKind::Calendar),
        _ => None,
    }
}
