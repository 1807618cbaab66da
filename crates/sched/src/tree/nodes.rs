//! The tree's node store, and its access by an id the tree itself holds.
//!
//! Every node id the tree keeps is below the node count: the root, each node's
//! parent and children (the build checks each parent against the count and
//! derives the children from the parents), the leaf a packet names once the
//! enqueue has checked it, the leaf a descent reached and the node a throttle
//! filed. Nodes are never added or removed after the build. The hot paths of
//! a dequeue or an enqueue look a node up at each level, a dozen to thirty
//! times per packet in `eiffel bench hqos`; their bounds checks were 7% of the
//! instructions of a packet there (callgrind: 1,193 against 1,107 a packet at
//! 1K queues). [`Nodes::at`] and [`Nodes::at_mut`] skip the check for such
//! ids, and every other lookup (an id from outside the tree, a view, the
//! invariant checks) goes through the slice, checked. Builds with debug
//! assertions (the tests) check every id all the same.

use core::ops::{Deref, DerefMut};

use super::node::Node;

/// The nodes of one tree, indexed by node id; fixed after the build.
#[derive(Debug)]
pub(super) struct Nodes {
    all: Box<[Node]>,
}

impl Nodes {
    /// The store of `nodes`, node id `i` at index `i`.
    pub(super) fn new(nodes: Vec<Node>) -> Nodes {
        Nodes {
            all: nodes.into_boxed_slice(),
        }
    }

    /// Node `id`, without a bounds check in release builds. Only for ids the
    /// tree holds (see the module documentation) or has checked against the
    /// node count: the tree's code passes no other.
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(super) fn at(&self, id: u32) -> &Node {
        debug_assert!(
            (id as usize) < self.all.len(),
            "node {id} of {}",
            self.all.len()
        );
        // SAFETY: `id` is below the node count: the tree passes only the ids
        // it holds, each below the count of a store that never shrinks (see
        // the module documentation); debug builds check it above.
        unsafe { self.all.get_unchecked(id as usize) }
    }

    /// Node `id`, mutable, without a bounds check in release builds; the same
    /// ids as [`Nodes::at`].
    #[inline(always)]
    #[allow(unsafe_code)]
    pub(super) fn at_mut(&mut self, id: u32) -> &mut Node {
        debug_assert!(
            (id as usize) < self.all.len(),
            "node {id} of {}",
            self.all.len()
        );
        // SAFETY: as in `at`.
        unsafe { self.all.get_unchecked_mut(id as usize) }
    }
}

impl Deref for Nodes {
    type Target = [Node];

    fn deref(&self) -> &[Node] {
        &self.all
    }
}

impl DerefMut for Nodes {
    fn deref_mut(&mut self) -> &mut [Node] {
        &mut self.all
    }
}
