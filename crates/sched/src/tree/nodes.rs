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

#[cfg(test)]
mod tests {
    use super::super::{Discipline, NodeSpec, PolicyTree, RateLimit, TreeSpec};
    use crate::time::Rate;
    use crate::{Packet, Scheduler};

    /// Every lookup path of a dequeue and an enqueue, through ids the tree
    /// holds (miri runs this test too): a burst enqueue with its prefetch
    /// stages, descents and remembered leaves, a rate limit that throttles a
    /// node and the shaper's release of it; every packet leaves once.
    #[test]
    fn every_packet_in_leaves_once_through_every_path() {
        let mut spec = TreeSpec::new(256);
        let mut root = NodeSpec::new("root", None);
        root.discipline = Discipline::DRR;
        let root = spec.add(root);
        let mut leaves = Vec::new();
        for p in 0..3u32 {
            let mut pipe = NodeSpec::new(format!("p{p}"), Some(root));
            pipe.discipline = Discipline::STRICT;
            if p == 0 {
                pipe.limit = Some(RateLimit {
                    rate: Rate::from_mbps(100),
                    burst: 3_000,
                });
            }
            let pipe = spec.add(pipe);
            for c in 0..3 {
                let mut class = NodeSpec::new(format!("p{p}c{c}"), Some(pipe));
                class.priority = c;
                leaves.push(spec.add(class) as u32);
            }
        }
        let mut tree = PolicyTree::new(spec).expect("a valid tree");
        tree.prefetching = true;
        let (mut now, mut sent, mut seen) = (0u64, 0u32, vec![false; 120]);
        for round in 0..10u32 {
            let burst: Vec<Packet> = (0..12)
                .map(|i| {
                    let n = round * 12 + i;
                    Packet::new(0, 500 + n % 1000)
                        .class(leaves[(n * 7 % 9) as usize])
                        .buffer(n)
                })
                .collect();
            assert_eq!(tree.enqueue_burst(&burst, now, |_| unreachable!()), 12);
            sent += 12;
            now += 20_000;
            while let Some(p) = tree.dequeue(now) {
                assert!(!std::mem::replace(&mut seen[p.buffer as usize], true));
            }
            tree.check_invariants();
        }
        // The limit's backlog leaves at 100 Mbit/s: well within 1,000 steps.
        for _ in 0..1_000 {
            now += 100_000;
            while let Some(p) = tree.dequeue(now) {
                assert!(!std::mem::replace(&mut seen[p.buffer as usize], true));
            }
        }
        assert_eq!(tree.backlog().packets, 0);
        assert_eq!(seen.iter().filter(|&&s| s).count() as u32, sent);
    }
}
