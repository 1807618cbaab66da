//! The tree's node store: a [`Store`] of its nodes, looked up by the ids
//! the tree holds.
//!
//! Every node id the tree keeps is below the node count: the root, each node's
//! parent and children (the build checks each parent against the count and
//! derives the children from the parents), the leaf a packet names once the
//! enqueue has checked it, the leaf a descent reached and the node a throttle
//! filed. Nodes are never added or removed after the build, so the hot paths
//! look them up unchecked ([`Store::at`]).

use super::node::Node;
use super::store::Store;

/// The nodes of one tree, indexed by node id; fixed after the build.
pub(super) type Nodes = Store<Node>;

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
