//! What orders a port's buffer: its policy tree, or, for the two policies the
//! papers' fabrics run at every port, a specialised queue that serves and
//! refuses exactly as that tree would.
//!
//! - [`FifoQueue`]: a policy of one FIFO leaf (`policy = "fifo"`, TCP and
//!   DCTCP): a ring of packet ids.
//! - [`PfabricQueue`]: a policy of one pFabric leaf on a `cffs` queue whose
//!   window covers every rank of the run (pFabric's fabrics): per-flow FIFOs
//!   and the `cffs` order kept directly (see its module for why the order is
//!   the same).
//! - Every other policy runs its [`PolicyTree`].
//!
//! A run gives byte-identical results either way; the tests run the shipped
//! scenarios both ways and compare. The specialised queues exist for speed: a
//! packet's hop through a tree of one node still passes its node bookkeeping,
//! shaper checks and packet copies, half of a pFabric fabric's run time.

mod fifo;
mod pfabric;

use eiffel_sched::tree::TreeSpec;
use eiffel_sched::{DropReason, Packet, PolicyTree, Scheduler};

pub use fifo::FifoQueue;
pub use pfabric::PfabricQueue;

use crate::time::Time;

/// A packet offered to a port's queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Packet id in the store.
    pub id: u32,
    /// Bytes on the wire.
    pub len: u32,
    /// The port's flow slot (0 without per-flow leaves).
    pub slot: u32,
    /// The policy's leaf.
    pub leaf: u32,
    /// Bytes its flow had left (pFabric's rank).
    pub remaining: u64,
    /// Least-slack rank (0 without a deadline).
    pub rank: u64,
    /// Absolute deadline in ns ([`eiffel_sched::NO_DEADLINE`] without one).
    pub deadline: u64,
}

/// A packet leaving a port's queue: its id and its flow slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Departure {
    /// Packet id in the store.
    pub id: u32,
    /// The flow slot it held.
    pub slot: u32,
}

/// Packets offered to, served by and refused by a queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    /// Offered.
    pub enqueued: u64,
    /// Served.
    pub dequeued: u64,
    /// Refused on arrival.
    pub dropped: u64,
}

/// Which forms [`PortQueue::build`] may choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueForm {
    /// A specialised queue where one serves exactly as the tree would.
    Fastest,
    /// Always the policy tree (the reference the specialised queues are
    /// tested against).
    Tree,
}

/// The queue of one port.
#[derive(Debug)]
pub enum PortQueue {
    /// The policy tree.
    Tree(Box<PolicyTree>),
    /// One FIFO leaf.
    Fifo(FifoQueue),
    /// One pFabric leaf on a `cffs` queue.
    Pfabric(PfabricQueue),
}

impl PortQueue {
    /// The queue for a policy `spec` whose ranks never exceed `max_rank`
    /// (`u64::MAX` when unknown).
    ///
    /// # Panics
    /// If `spec` does not build (a validated policy always does).
    #[must_use]
    pub fn build(spec: TreeSpec, max_rank: u64, form: QueueForm) -> PortQueue {
        if form == QueueForm::Fastest {
            if let Some(q) = FifoQueue::for_spec(&spec) {
                return PortQueue::Fifo(q);
            }
        }
        let tree = PolicyTree::new(spec).expect("a validated policy builds with any capacity");
        if form == QueueForm::Fastest {
            if let Some(q) = PfabricQueue::for_tree(&tree, max_rank) {
                return PortQueue::Pfabric(q);
            }
        }
        PortQueue::Tree(Box::new(tree))
    }

    /// A new, empty specialised queue like this one (`None` for a tree, which
    /// is not copied).
    #[must_use]
    pub fn empty_copy(&self) -> Option<PortQueue> {
        match self {
            PortQueue::Tree(_) => None,
            PortQueue::Fifo(q) => Some(PortQueue::Fifo(q.empty_copy())),
            PortQueue::Pfabric(q) => Some(PortQueue::Pfabric(q.empty_copy())),
        }
    }

    /// Short name: `policy-tree`, `fifo` or `pfabric-cffs`.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            PortQueue::Tree(_) => "policy-tree",
            PortQueue::Fifo(_) => "fifo",
            PortQueue::Pfabric(_) => "pfabric-cffs",
        }
    }

    /// Packets the queue holds at most.
    #[must_use]
    pub fn capacity(&self) -> u32 {
        match self {
            PortQueue::Tree(t) => t.spec().capacity,
            PortQueue::Fifo(q) => q.capacity(),
            PortQueue::Pfabric(q) => q.capacity(),
        }
    }

    /// Ranks per bucket of the first ranked queue (1 if none).
    #[must_use]
    pub fn granularity(&self) -> u64 {
        match self {
            PortQueue::Tree(t) => t
                .nodes()
                .flat_map(|n| n.queues.into_iter().map(|q| q.config.granularity))
                .next()
                .unwrap_or(1)
                .max(1),
            PortQueue::Fifo(_) => 1,
            PortQueue::Pfabric(q) => q.granularity(),
        }
    }

    /// Offers a packet at `now`.
    ///
    /// # Errors
    /// The policy's reason for refusing it.
    #[inline]
    pub fn enqueue(&mut self, a: &Arrival, now: Time) -> Result<(), DropReason> {
        match self {
            PortQueue::Fifo(q) => q.enqueue(a),
            PortQueue::Pfabric(q) => q.enqueue(a),
            PortQueue::Tree(t) => {
                let desc = Packet {
                    buffer: a.id,
                    len: a.len,
                    flow: a.slot,
                    class: a.leaf,
                    arrival: now.0,
                    rank: a.rank,
                    deadline: a.deadline,
                    remaining: a.remaining,
                    dscp: 0,
                };
                t.enqueue(desc, now.0).map_err(|d| {
                    // The tree keeps or hands back whole packets; a refusal is
                    // always the packet just offered (no policy here evicts).
                    debug_assert_eq!(d.packet.buffer, a.id, "the tree dropped a queued packet");
                    d.reason
                })
            }
        }
    }

    /// The next packet the policy releases at `now`.
    #[inline]
    pub fn dequeue(&mut self, now: Time) -> Option<Departure> {
        match self {
            PortQueue::Fifo(q) => q.dequeue(),
            PortQueue::Pfabric(q) => q.dequeue(),
            PortQueue::Tree(t) => t.dequeue(now.0).map(|d| Departure {
                id: d.buffer,
                slot: d.flow,
            }),
        }
    }

    /// When a packet may next leave, if any is queued (`now` if one may now).
    #[must_use]
    pub fn next_ready(&self, now: Time) -> Option<Time> {
        match self {
            PortQueue::Tree(t) => t.next_ready(now.0).map(Time),
            _ => (self.backlog() > 0).then_some(now),
        }
    }

    /// Packets queued.
    #[must_use]
    #[inline]
    pub fn backlog(&self) -> u64 {
        match self {
            PortQueue::Tree(t) => t.backlog().packets,
            PortQueue::Fifo(q) => q.backlog(),
            PortQueue::Pfabric(q) => q.backlog(),
        }
    }

    /// Offered, served and refused packets.
    #[must_use]
    pub fn counters(&self) -> QueueCounters {
        match self {
            PortQueue::Tree(t) => {
                let c = t.counters();
                QueueCounters {
                    enqueued: c.enqueued,
                    dequeued: c.dequeued,
                    dropped: c.dropped_total(),
                }
            }
            PortQueue::Fifo(q) => q.counters(),
            PortQueue::Pfabric(q) => q.counters(),
        }
    }

    /// Checks the queue's balance `offered = served + refused + queued` and
    /// its own structure.
    ///
    /// # Panics
    /// On a violated invariant.
    pub fn check_invariants(&self, name: &str) {
        let c = self.counters();
        assert_eq!(
            c.enqueued,
            c.dequeued + c.dropped + self.backlog(),
            "port {name}: queue balance"
        );
        match self {
            PortQueue::Tree(t) => t.check_invariants(),
            PortQueue::Fifo(_) => {}
            PortQueue::Pfabric(q) => q.check_invariants(),
        }
    }
}
