//! The tree's invariants, checked by tests after every operation: per-node
//! accounting, queued units flagged active, throttled units absent from their
//! parents, per-flow leaves consistent with their flows, the pool's lists.

use super::node::{FlowLeaf, Kind, Node, NONE};
use super::sched::NodeSched;
use super::PolicyTree;
use crate::pool::Fifo as List;

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
                    let sum: u64 = children
                        .iter()
                        .map(|&c| self.nodes[c as usize].backlog.packets)
                        .sum();
                    assert_eq!(
                        sum, node.backlog.packets,
                        "node {name}: backlog vs children"
                    );
                }
                Kind::Flows(fl) => {
                    check_flows(fl, node, name);
                    fifos.extend(fl.flows.iter().map(|f| &f.fifo));
                }
            }
        }
        self.pool.check_invariants(fifos);
        let root = &self.nodes[self.root as usize];
        assert_eq!(root.backlog, self.backlog, "root backlog vs tree backlog");
        assert_eq!(
            self.counters.implied_backlog(),
            self.backlog.packets,
            "tree accounting"
        );
    }

    /// Node `i`'s accounting, and its place at its parent and in the shaper.
    fn check_links(&self, i: usize, node: &Node, name: &str) {
        let c = &node.counters;
        assert_eq!(
            c.enqueued,
            c.dequeued + c.dropped_total() + node.backlog.packets,
            "node {name}: enqueued != dequeued + dropped + queued"
        );
        if node.throttled {
            assert!(
                !node.active,
                "node {name}: throttled but queued at its parent"
            );
        }
        assert_eq!(
            node.throttled,
            node.filed.is_some(),
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
