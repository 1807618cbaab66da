//! [`AutoTree`]: a policy tree run by the fastest executor its shape allows.

use super::{PipeError, PipeTree, PolicyTree, TreeSpec};
use crate::packet::{ClassId, Nanos, Packet};
use crate::scheduler::{Backlog, ConfigError, Counters, Dropped, Scheduler};

/// Which executor runs an [`AutoTree`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Executor {
    /// The general policy tree ([`PolicyTree`]).
    General,
    /// The pipe executor ([`PipeTree`]).
    Pipes,
}

impl Executor {
    /// The executor's name: `policy-tree` or `pipe-tree`, as its
    /// [`Scheduler::name`].
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Executor::General => "policy-tree",
            Executor::Pipes => "pipe-tree",
        }
    }
}

impl core::fmt::Display for Executor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A policy tree run by [`PipeTree`] when its shape allows (`drr` levels
/// over `ets` pipes over FIFO leaves: DPDK `rte_sched`'s hierarchy and its
/// relatives), by [`PolicyTree`] otherwise.
///
/// The two send the same packets in the same order with the same drops and
/// counts (the pipe executor is checked in lockstep against the general
/// tree), so a caller that only enqueues, dequeues and reads counters gets
/// the faster one without asking. What only the general tree offers (rank
/// transactions set after construction, node views with queue statistics)
/// stays on [`PolicyTree`], which a caller needing it builds directly.
#[derive(Debug)]
pub enum AutoTree {
    /// Run by the general tree.
    General(Box<PolicyTree>),
    /// Run by the pipe executor.
    Pipes(Box<PipeTree>),
}

impl AutoTree {
    /// Builds the tree `spec` describes, by the pipe executor if the tree
    /// has its shape.
    ///
    /// # Errors
    /// What [`PolicyTree::new`] refuses (the general tree's error is the one
    /// reported whenever the pipe executor refuses the tree).
    pub fn new(spec: TreeSpec) -> Result<Self, ConfigError> {
        match PipeTree::new(spec.clone()) {
            Ok(t) => Ok(AutoTree::Pipes(Box::new(t))),
            Err(PipeError::Shape(_) | PipeError::Config(_)) => {
                Ok(AutoTree::General(Box::new(PolicyTree::new(spec)?)))
            }
        }
    }

    /// Which executor runs the tree.
    #[must_use]
    pub fn executor(&self) -> Executor {
        match self {
            AutoTree::General(_) => Executor::General,
            AutoTree::Pipes(_) => Executor::Pipes,
        }
    }

    /// The specification the tree was built from.
    #[must_use]
    pub fn spec(&self) -> &TreeSpec {
        match self {
            AutoTree::General(t) => t.spec(),
            AutoTree::Pipes(t) => t.spec(),
        }
    }

    /// The class id of the leaf called `name`.
    #[must_use]
    pub fn leaf(&self, name: &str) -> Option<ClassId> {
        match self {
            AutoTree::General(t) => t.leaf(name),
            AutoTree::Pipes(t) => t.leaf(name),
        }
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.spec().nodes.len()
    }

    /// Whether the tree has no nodes (never, once built).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.spec().nodes.is_empty()
    }

    /// Node `i`'s path from the root, names joined by `/`, as
    /// [`NodeView::path`](super::NodeView::path).
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn path(&self, i: usize) -> String {
        self.spec().path(i)
    }

    /// The counters of node `i`'s subtree, as
    /// [`NodeView::counters`](super::NodeView::counters).
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node_counters(&self, i: usize) -> Counters {
        match self {
            AutoTree::General(t) => t.node_counters(i),
            AutoTree::Pipes(t) => t.node_counters(i),
        }
    }

    /// Packets and bytes queued in node `i`'s subtree.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node_backlog(&self, i: usize) -> Backlog {
        match self {
            AutoTree::General(t) => t.settled(i).1,
            AutoTree::Pipes(t) => t.node_backlog(i),
        }
    }

    /// [`Scheduler::enqueue`] of many packets at `now`: each dropped one is
    /// passed to `dropped`; returns how many were queued.
    pub fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        dropped: impl FnMut(Dropped),
    ) -> usize {
        match self {
            AutoTree::General(t) => t.enqueue_burst(pkts, now, dropped),
            AutoTree::Pipes(t) => t.enqueue_burst(pkts, now, dropped),
        }
    }

    /// Checks the executor's invariants.
    ///
    /// # Panics
    /// On the first that does not hold.
    pub fn check_invariants(&self) {
        match self {
            AutoTree::General(t) => t.check_invariants(),
            AutoTree::Pipes(t) => t.check_invariants(),
        }
    }
}

impl Scheduler for AutoTree {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        match self {
            AutoTree::General(t) => t.enqueue(pkt, now),
            AutoTree::Pipes(t) => t.enqueue(pkt, now),
        }
    }

    #[inline]
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        match self {
            AutoTree::General(t) => t.dequeue(now),
            AutoTree::Pipes(t) => t.dequeue(now),
        }
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        match self {
            AutoTree::General(t) => t.next_ready(now),
            AutoTree::Pipes(t) => t.next_ready(now),
        }
    }

    fn backlog(&self) -> Backlog {
        match self {
            AutoTree::General(t) => t.backlog(),
            AutoTree::Pipes(t) => t.backlog(),
        }
    }

    fn counters(&self) -> &Counters {
        match self {
            AutoTree::General(t) => t.counters(),
            AutoTree::Pipes(t) => t.counters(),
        }
    }

    fn name(&self) -> &'static str {
        self.executor().name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{Discipline, NodeSpec};

    /// A `drr` root over one pipe of three leaves, or a `strict` root over
    /// the same leaves.
    fn spec(root: Discipline) -> TreeSpec {
        let mut spec = TreeSpec::new(64);
        let mut r = NodeSpec::new("root", None);
        r.discipline = root;
        let r = spec.add(r);
        let mut pipe = NodeSpec::new("pipe", Some(r));
        pipe.discipline = Discipline::Ets;
        let pipe = spec.add(pipe);
        for (name, priority) in [("a", 0), ("b", 0), ("c", 1)] {
            let mut leaf = NodeSpec::new(name, Some(pipe));
            leaf.priority = priority;
            leaf.capacity = Some(4);
            spec.add(leaf);
        }
        spec
    }

    /// The same packets through `t` and the general tree, then every node's
    /// counts compared.
    fn same_as_general(mut t: AutoTree) {
        let mut g = PolicyTree::new(t.spec().clone()).unwrap();
        for i in 0..30u32 {
            let leaf = t.leaf(["a", "b", "c"][i as usize % 3]).unwrap();
            let p = Packet::new(i, 100 + i * 10).class(leaf);
            assert_eq!(t.enqueue(p, 0).is_ok(), g.enqueue(p, 0).is_ok());
        }
        for now in 0..10 {
            assert_eq!(t.dequeue(now), g.dequeue(now));
        }
        t.check_invariants();
        assert_eq!(t.counters(), g.counters());
        assert_eq!(t.backlog(), g.backlog());
        for i in 0..t.len() {
            let v = g.node(i);
            assert_eq!(t.path(i), v.path);
            assert_eq!(t.node_counters(i), v.counters, "{}", v.path);
            assert_eq!(t.node_backlog(i), v.backlog, "{}", v.path);
        }
    }

    #[test]
    fn a_tree_of_the_shape_runs_on_the_pipe_executor() {
        let t = AutoTree::new(spec(Discipline::DRR)).unwrap();
        assert_eq!(t.executor(), Executor::Pipes);
        assert_eq!(t.name(), "pipe-tree");
        assert_eq!(t.path(4), "root/pipe/c");
        same_as_general(t);
    }

    #[test]
    fn another_tree_runs_on_the_general_tree() {
        let t = AutoTree::new(spec(Discipline::STRICT)).unwrap();
        assert_eq!(t.executor(), Executor::General);
        assert_eq!(t.name(), "policy-tree");
        same_as_general(t);
    }

    #[test]
    fn an_invalid_tree_gets_the_general_trees_error() {
        let mut bad = spec(Discipline::DRR);
        bad.nodes[2].parent = Some(7);
        let err = AutoTree::new(bad.clone()).unwrap_err();
        assert_eq!(err, PolicyTree::new(bad).unwrap_err());
    }
}
