//! What a [`PipeTree`] shows of its nodes, and the checks of its counts.

use super::super::view::subtree_counters;
use super::{PipeTree, NONE};
use crate::scheduler::{Backlog, Counters};
use crate::FlowCore;

impl PipeTree {
    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Whether the tree has no nodes (never, once built).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// The counters of node `i`'s subtree (`i` a spec index), as
    /// [`NodeView::counters`](super::super::NodeView::counters) counts them.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node_counters(&self, i: usize) -> Counters {
        let n = self.place[i];
        subtree_counters(self.sent(n), self.queued(n), self.drops[n as usize])
    }

    /// Packets and bytes queued in node `i`'s subtree. A `drr` node keeps
    /// its count; a leaf's and a pipe's are counted along their FIFOs (the
    /// packet path keeps no per-leaf byte count), in time proportional to
    /// the packets they hold.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node_backlog(&self, i: usize) -> Backlog {
        self.queued(self.place[i])
    }

    /// Whether node `i`'s output is held by the shaper.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn is_throttled(&self, i: usize) -> bool {
        self.link(self.place[i]).throttled
    }

    /// What node `n` (a position) holds: a leaf's FIFO, counted along its
    /// chain, a pipe's leaves', a `drr` node's count.
    fn queued(&self, n: u32) -> Backlog {
        if self.is_leaf(n) {
            let chain = self
                .pool
                .chain(self.leaves[(n - self.leaves_at) as usize].head);
            Backlog {
                packets: u64::from(chain.packets),
                bytes: chain.bytes,
            }
        } else if n >= self.pipes_at {
            self.leaves_of(n).fold(Backlog::default(), |sum, c| {
                let q = self.queued(c);
                Backlog {
                    packets: sum.packets + q.packets,
                    bytes: sum.bytes + q.bytes,
                }
            })
        } else {
            let (queued, deferred) = (self.nodes[n as usize].backlog, self.deferred(n));
            Backlog {
                packets: queued.packets - deferred.packets,
                bytes: queued.bytes - deferred.bytes,
            }
        }
    }

    /// What left node `n` (a position).
    fn sent(&self, n: u32) -> Backlog {
        if self.is_leaf(n) {
            self.leaves[(n - self.leaves_at) as usize].sent
        } else {
            let (sent, deferred) = (self.nodes[n as usize].sent, self.deferred(n));
            Backlog {
                packets: sent.packets + deferred.packets,
                bytes: sent.bytes + deferred.bytes,
            }
        }
    }

    /// Checks the counts against each other and against the queues: a leaf's
    /// backlog against its FIFO, every other node's backlog, sent and dropped
    /// counts against the sums over its children, the root's against the
    /// tree's, and each discipline's queued units against its children's
    /// flags.
    ///
    /// # Panics
    /// On the first count that disagrees.
    pub fn check_invariants(&self) {
        self.pool.check_chains(self.leaves.iter().map(|l| l.head));
        for (l, end) in self.leaves.iter().zip(self.ends.iter()) {
            self.check_leaf(l, end);
        }
        let kids = self.spec.child_lists();
        for n in 0..self.order.len() as u32 {
            self.check_node(n, &kids);
        }
        assert_eq!(self.queued(0), self.backlog, "root backlog");
        assert_eq!(self.sent(0).packets, self.counters.dequeued, "root sent");
        let root_drops = self.drops[0].total();
        let unclassified = self.counters.dropped.packets[crate::DropReason::Unclassified.index()];
        assert_eq!(
            root_drops + unclassified,
            self.counters.dropped.total(),
            "root drops"
        );
    }

    /// Checks a leaf's head and end against its chain.
    fn check_leaf(&self, l: &super::Leaf, end: &super::LeafEnd) {
        let chain = self.pool.chain(l.head);
        assert_eq!(end.tail, chain.last, "a leaf's tail");
        assert_eq!(l.head_len, chain.head_len, "a leaf's head length");
        assert_eq!(end.pipe, l.parent, "a leaf's pipe");
        let queued = end.arrived.wrapping_sub(l.sent.packets as u32);
        assert_eq!(queued, chain.packets, "a leaf's arrivals less departures");
        let capacity = self.conf(l.parent, l.slot).capacity;
        assert!(queued <= capacity, "a leaf over its capacity");
        let room = end.budget.wrapping_sub(end.arrived);
        assert!(room <= capacity - queued, "a leaf's room bound {room}");
        let held = self.nodes[l.parent as usize].held_leaves;
        assert!(!l.throttled || held > 0, "a held leaf uncounted");
    }

    /// Checks node `n` against its children (`kids`: the spec's child
    /// lists, by spec index).
    fn check_node(&self, n: u32, kids: &[Vec<usize>]) {
        let link = self.link(n);
        let name = &self.spec.nodes[self.order[n as usize] as usize].name;
        assert!(
            !(link.active && link.throttled),
            "{name}: active and throttled"
        );
        if link.parent != NONE && link.active {
            assert!(self.has_head(n), "{name}: active with nothing to send");
        }
        if self.is_leaf(n) {
            return;
        }
        let first = self.first_child[n as usize];
        let children = kids[self.order[n as usize] as usize].len() as u32;
        let mut sum = (Backlog::default(), Backlog::default(), 0u64);
        for c in first..first + children {
            assert_eq!(self.link(c).parent, n, "{name}: child {c}'s parent");
            let (queued, sent) = (self.queued(c), self.sent(c));
            sum.0.packets += queued.packets;
            sum.0.bytes += queued.bytes;
            sum.1.packets += sent.packets;
            sum.1.bytes += sent.bytes;
            sum.2 += self.drops[c as usize].total();
        }
        assert_eq!(
            self.queued(n),
            sum.0,
            "{name}: backlog against its children"
        );
        assert_eq!(self.sent(n), sum.1, "{name}: sent against its children");
        assert_eq!(self.drops[n as usize].total(), sum.2, "{name}: drops");
        if n >= self.pipes_at {
            let held = (first..first + children).filter(|&c| self.link(c).throttled);
            let held_leaves = self.nodes[n as usize].held_leaves;
            assert_eq!(held.count() as u32, held_leaves, "{name}: held leaves");
            let band = &self.nodes[n as usize].band;
            let p = &self.profiles[band.profile as usize];
            let at = band.members_at as usize;
            let queued = |u: u32| self.link(first + u).active;
            band.check(p, &self.members[at..at + p.members()], queued);
        } else {
            self.drr[n as usize].check_invariants();
        }
    }
}
