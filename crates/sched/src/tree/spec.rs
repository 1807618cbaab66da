//! The in-memory description of a policy tree: what a policy file compiles to and
//! what a Rust user can build directly. [`TreeSpec::validate`] checks it and
//! [`PolicyTree::new`](super::PolicyTree::new) instantiates it.

use std::sync::Arc;

use super::discipline::Discipline;
use super::program::RankProgram;
use crate::time::{Duration, Rate};

/// A rate limit with a burst allowance, enforced by the tree's one shaper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Long-run rate (at least 1 bit/s).
    pub rate: Rate,
    /// Bytes that may leave back to back after an idle period (at least one
    /// packet's worth is always allowed).
    pub burst: u64,
}

/// A leaf that keeps one FIFO per flow and orders the flows (Eiffel's per-flow
/// primitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerFlow {
    /// Flow ids accepted: `0..max_flows` (a packet's `flow` indexes the table).
    pub max_flows: u32,
    /// A rate limit applied to every flow separately (per-flow pacing).
    pub flow_limit: Option<RateLimit>,
    /// Most packets one flow may queue.
    pub flow_queue_limit: Option<u32>,
}

/// One node of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Index of the parent in [`TreeSpec::nodes`]; `None` for the root.
    pub parent: Option<usize>,
    /// How the node orders its units, with the discipline's own parameters (its
    /// queue, or its calendar). Leaves without `per_flow` hold one FIFO and
    /// ignore it.
    pub discipline: Discipline,
    /// Share at a weighted parent (wfq, qfq, drr, wf2q+, hclock); at least 1.
    pub weight: u32,
    /// Level at a strict-priority parent (0 is served first).
    pub priority: u32,
    /// Guaranteed rate at an hClock parent.
    pub reservation: Option<Rate>,
    /// Rate limit on this node's output.
    pub limit: Option<RateLimit>,
    /// Per-flow leaf settings.
    pub per_flow: Option<PerFlow>,
    /// Most packets queued at this leaf (all its flows together).
    pub capacity: Option<u32>,
    /// Per-flow leaves: each flow's release times computed by a program (the
    /// policy file's `release` and `release_on_dequeue`), enforced by the tree's
    /// shaper like `flow_limit` (see [`PolicyTree`](super::PolicyTree)'s
    /// "Shaping by program").
    pub flow_release: Option<Arc<RankProgram>>,
    /// The node's own release times computed by a program (the policy file's
    /// `release` and `release_on_dequeue` on a node without flows): when the
    /// node's output may next send, enforced by the tree's shaper like `limit`
    /// (with both, the later time holds; see [`PolicyTree`](super::PolicyTree)'s
    /// "Shaping by program").
    pub release: Option<Arc<RankProgram>>,
}

impl NodeSpec {
    /// A node with defaults: FIFO, weight 1, priority 0, no limit, automatic queue.
    #[must_use]
    pub fn new(name: impl Into<String>, parent: Option<usize>) -> Self {
        NodeSpec {
            name: name.into(),
            parent,
            discipline: Discipline::FIFO,
            weight: 1,
            priority: 0,
            reservation: None,
            limit: None,
            per_flow: None,
            capacity: None,
            flow_release: None,
            release: None,
        }
    }
}

/// The shaper's geometry: a timing wheel of `slots` slots covering `horizon`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperSpec {
    /// Time covered ahead of now.
    pub horizon: Duration,
    /// Number of slots; the granularity is `horizon / slots`.
    pub slots: usize,
}

impl Default for ShaperSpec {
    fn default() -> Self {
        // 1 s in 2^16 slots of about 15 us: finer than one 1500-byte packet at
        // 1 Gbit/s, 512 KiB of slot lists.
        ShaperSpec {
            horizon: Duration::from_secs(1),
            slots: 1 << 16,
        }
    }
}

/// A whole policy: nodes (the root first or anywhere, exactly one without a
/// parent), the packet capacity, the link MTU and the shaper.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
    /// Packets the tree can hold in total (one preallocated pool).
    pub capacity: u32,
    /// Largest packet accepted, in bytes.
    pub mtu: u32,
    /// The shaper's geometry.
    pub shaper: ShaperSpec,
}

/// Largest weight accepted (matches the fair-queueing cores' range).
pub const MAX_WEIGHT: u32 = 1 << 16;

impl TreeSpec {
    /// An empty spec with the given capacity, 1500-byte MTU and default shaper.
    #[must_use]
    pub fn new(capacity: u32) -> Self {
        TreeSpec {
            nodes: Vec::new(),
            capacity,
            mtu: 1500,
            shaper: ShaperSpec::default(),
        }
    }

    /// Adds a node and returns its index.
    pub fn add(&mut self, node: NodeSpec) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Index of the node called `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The children of every node, in declaration order: one O(n) pass (the way
    /// to walk the whole tree; [`Self::children`] scans all nodes per call).
    /// Parents out of range are ignored (see [`Self::validate`]).
    #[must_use]
    pub fn child_lists(&self) -> Vec<Vec<usize>> {
        let mut kids = vec![Vec::new(); self.nodes.len()];
        for (c, n) in self.nodes.iter().enumerate() {
            if let Some(p) = n.parent.filter(|&p| p < kids.len()) {
                kids[p].push(c);
            }
        }
        kids
    }

    /// Children of node `i`, in declaration order (O(n): scans every node).
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.parent == Some(i))
            .map(|(c, _)| c)
    }

    /// Whether node `i` has no children (O(n): scans every node).
    #[must_use]
    pub fn is_leaf(&self, i: usize) -> bool {
        self.children(i).next().is_none()
    }

    /// Node `i`'s path from the root, names joined by `/` (`root/tenants/a`).
    ///
    /// # Panics
    /// If `i` or a parent on its way up is not a node index.
    #[must_use]
    pub fn path(&self, i: usize) -> String {
        let mut names = vec![self.nodes[i].name.as_str()];
        let mut cur = self.nodes[i].parent;
        while let Some(p) = cur {
            names.push(self.nodes[p].name.as_str());
            cur = self.nodes[p].parent;
        }
        names.reverse();
        names.join("/")
    }

    /// The root's index (validated specs have exactly one).
    #[must_use]
    pub fn root(&self) -> Option<usize> {
        self.nodes.iter().position(|n| n.parent.is_none())
    }

    /// The smallest weight among the units of node `i`: its children's, or 1 for
    /// the flows of a per-flow leaf.
    #[must_use]
    pub fn min_unit_weight(&self, i: usize) -> u32 {
        self.children(i)
            .map(|c| self.nodes[c].weight)
            .min()
            .unwrap_or(1)
    }
}
