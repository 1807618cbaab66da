//! The tree's invariants, checked by tests after every operation: per-node
//! accounting, queued units flagged active, throttled units absent from their
//! parents, per-flow leaves consistent with their flows, the pool's lists.

use super::node::{FlowLeaf, Kind, Node, Sent, NONE};
use super::sched::NodeSched;
use super::PolicyTree;
use crate::pool::Fifo as List;
use crate::scheduler::{Backlog, DropCounts, DropReason};

impl PolicyTree {
    /// Checks every invariant: per-node accounting, queued units flagged active,
    /// throttled units absent from their parents, the pool's lists.
    ///
    /// # Panics
    /// On a violated invariant, naming the node.
    pub fn check_invariants(&self) {
        let mut fifos: Vec<&List> = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let name = &self.spec.nodes[i].name;
            self.check_links(i, node, name);
            match &node.kind {
                Kind::Leaf { fifo } => {
                    assert_eq!(
                        u64::from(fifo.len()),
                        node.backlog.packets,
                        "leaf {name}: backlog"
                    );
                    fifos.push(fifo);
                }
                Kind::Internal { sched, children } => {
                    sched.check_invariants();
                    self.check_children(i, children, name);
                }
                Kind::Flows(fl) => {
                    check_flows(fl, node, name);
                    fifos.extend(fl.flows.iter().map(|f| &f.fifo));
                }
            }
        }
        self.pool.check_invariants(fifos);
        let (_, root_backlog) = self.settled(self.root as usize);
        assert_eq!(root_backlog, self.backlog, "root backlog vs tree backlog");
        // The tree counts every offer itself; all but the unclassified ones
        // (which name no leaf) entered the root.
        let c = self.node_counters(self.root as usize);
        let unclassified = self.counters.dropped.get(DropReason::Unclassified);
        assert_eq!(
            c.enqueued + unclassified,
            self.counters.enqueued,
            "root arrivals vs offers"
        );
        assert_eq!(c.dequeued, self.counters.dequeued, "root vs tree sent");
        assert_eq!(
            self.counters.implied_backlog(),
            self.backlog.packets,
            "tree accounting"
        );
    }

    /// Internal node `i`'s accounting against its children's: every packet
    /// queued, sent or dropped in its subtree was so in exactly one child's.
    fn check_children(&self, i: usize, children: &[u32], name: &str) {
        let (node_sent, node_backlog) = self.settled(i);
        let (mut backlog, mut sent) = (Backlog::default(), Sent::default());
        let mut drops = DropCounts::default();
        for &c in children {
            let (child_sent, child_backlog) = self.settled(c as usize);
            backlog.packets += child_backlog.packets;
            backlog.bytes += child_backlog.bytes;
            sent.packets += child_sent.packets;
            sent.bytes += child_sent.bytes;
            for r in 0..DropReason::COUNT {
                drops.packets[r] += self.drops[c as usize].packets[r];
                drops.bytes[r] += self.drops[c as usize].bytes[r];
            }
        }
        assert_eq!(backlog, node_backlog, "node {name}: backlog vs children");
        assert_eq!(sent, node_sent, "node {name}: sent vs children");
        assert_eq!(drops, self.drops[i], "node {name}: drops vs children");
    }

    /// Node `i`'s place at its parent and in the shaper.
    fn check_links(&self, i: usize, node: &Node, name: &str) {
        if node.throttled {
            assert!(
                !node.active,
                "node {name}: throttled but queued at its parent"
            );
        }
        assert_eq!(
            node.throttled,
            self.filed[i].is_some(),
            "node {name}: throttled without a shaper entry, or the reverse"
        );
        if node.parent == NONE {
            return;
        }
        if self.has_head(i as u32) {
            assert!(
                node.active || node.throttled,
                "node {name}: has a unit to send, but neither queued at its parent nor throttled"
            );
        }
        if let Kind::Internal { sched, .. } = &self.nodes[node.parent as usize].kind {
            assert_eq!(
                sched.is_active(node.slot),
                node.active,
                "node {name}: active flag"
            );
        }
    }
}

/// A per-flow leaf's flows: queued exactly when backlogged and not throttled,
/// day tags matching the packets (pFabric-fair), backlog matching the flows.
fn check_flows(fl: &FlowLeaf, node: &Node, name: &str) {
    fl.sched.check_invariants();
    let mut sum = 0u64;
    for (f, flow) in fl.flows.iter().enumerate() {
        sum += u64::from(flow.fifo.len());
        let active = fl.sched.is_active(f as u32);
        assert!(
            !(active && flow.throttled),
            "leaf {name} flow {f}: throttled but queued"
        );
        if active {
            assert!(
                !flow.fifo.is_empty(),
                "leaf {name} flow {f}: queued while empty"
            );
        } else if !flow.fifo.is_empty() {
            assert!(
                flow.throttled,
                "leaf {name} flow {f}: backlogged, neither queued nor throttled"
            );
        }
        let tagged = match &fl.sched {
            NodeSched::Calendar(c) => c.tagged(f as u32),
            _ => None,
        };
        if let Some(tags) = tagged {
            assert_eq!(tags, flow.fifo.len(), "leaf {name} flow {f}: day tags");
        }
    }
    assert_eq!(sum, node.backlog.packets, "leaf {name}: backlog vs flows");
}
