//! Scheduling transactions: the rank functions of the PIFO model (Sivaraman et al.,
//! SIGCOMM'16) with Eiffel's two extensions (NSDI'19, section 3.2.1): a node ranks
//! *units*, children or flows, rather than single packets, and a unit's rank may
//! change both when a packet enters its subtree (on enqueue) and when it sends one
//! (on dequeue). The node re-positions the unit in its integer priority queue in
//! O(1) through the unit's queue handle.
//!
//! A transaction sees one node's units through [`Unit`], the per-unit state the
//! node keeps for it (configured weight and priority, and tags the transaction may
//! use freely), and the unit's *head*: the packet the unit would send next.
//!
//! | transaction | rank | range |
//! |---|---|---|
//! | `fifo` | head's arrival time | moving (time) |
//! | `strict` | child's priority; a flow's head `rank` | fixed (levels) |
//! | `wfq` | virtual start time `S = max(V, F)`, `F = S + L/w` | moving (virtual time) |
//! | `edf` | head's deadline | moving (time) |
//! | `lstf` | head's arrival + slack (`rank`) | moving (time) |
//! | `srpt` | head's remaining bytes | fixed (bytes) |
//! | `pfabric` | smallest remaining bytes among the flow's queued packets | fixed (bytes) |
//!
//! Library users implement [`Transaction`] for their own rank functions and attach
//! it with [`PolicyTree::set_transaction`](super::PolicyTree::set_transaction); the
//! node keeps the queue its policy configured (choose its type and geometry for the
//! custom ranks in the policy).

use core::fmt;

use crate::packet::{Nanos, Packet};
use crate::time::Rate;

/// Virtual-time units per byte at weight 1: `L` bytes at weight `w` advance a
/// unit's virtual time by `L * VT_SCALE / w`. 2^16 keeps one byte at the largest
/// weight (2^16) worth one unit, so no packet is ever free.
pub const VT_SCALE: u64 = 1 << 16;

/// What a node keeps per unit for its transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Unit {
    /// Configured weight (children: their `weight`; flows: 1).
    pub weight: u32,
    /// Configured priority (children: their `priority`; flows: 0).
    pub priority: u32,
    /// Reserved rate for hClock; zero for none. (Not an `Option`: a unit is 40
    /// bytes and per-flow leaves keep one per flow, so every byte of it costs
    /// cache at a million flows.)
    pub reservation: Rate,
    /// Free for the transaction (`wfq`: virtual start; hClock: reservation tag).
    pub start: u64,
    /// Free for the transaction (`wfq`: virtual finish; hClock: share tag).
    pub finish: u64,
    /// Per-flow leaves running `pfabric`: the smallest `remaining` among the flow's
    /// queued packets, maintained by the leaf.
    pub queued_min: u64,
}

/// A rank function for one node, with on-enqueue and on-dequeue hooks: the
/// extension point for policies the built-in disciplines do not cover.
///
/// The node calls exactly one of `on_activate` / `on_dequeue(.., Some(next))` to
/// give a unit its rank when it enters the queue or stays in it after a send, and
/// `on_enqueue` whenever a packet enters the subtree of a queued unit. Lower ranks
/// leave first; the node keeps the queue its policy configured, so choose one
/// whose geometry suits the ranks (an exact `binary_heap`, or a bucketed queue
/// whose granularity and buckets cover their range).
///
/// ```
/// use eiffel_queue::QueueKind;
/// use eiffel_sched::tree::{Discipline, NodeSpec, QueueChoice, Transaction, TreeSpec, Unit};
/// use eiffel_sched::{Nanos, Packet, PolicyTree, Scheduler};
///
/// /// Serves the child whose next packet is the shortest.
/// #[derive(Debug)]
/// struct ShortestFirst;
///
/// impl Transaction for ShortestFirst {
///     fn name(&self) -> &str {
///         "shortest-first"
///     }
///     fn on_activate(&mut self, _: &mut Unit, head: &Packet, _: Nanos) -> u64 {
///         u64::from(head.len)
///     }
///     fn on_enqueue(&mut self, _: &mut Unit, _: &Packet, head: &Packet, _: Nanos) -> Option<u64> {
///         Some(u64::from(head.len))
///     }
///     fn on_dequeue(&mut self, _: &mut Unit, _: &Packet, next: Option<&Packet>, _: Nanos) -> u64 {
///         next.map_or(0, |p| u64::from(p.len))
///     }
/// }
///
/// let mut spec = TreeSpec::new(64);
/// let mut root = NodeSpec::new("root", None);
/// // Ranks are byte counts: an exact heap orders them.
/// root.discipline = Discipline::FIFO.on(QueueChoice::kind(QueueKind::BinaryHeap));
/// let r = spec.add(root);
/// spec.add(NodeSpec::new("bulk", Some(r)));
/// spec.add(NodeSpec::new("acks", Some(r)));
/// let mut tree = PolicyTree::new(spec).unwrap();
/// tree.set_transaction("root", Box::new(ShortestFirst)).unwrap();
/// assert_eq!(tree.node(0).discipline.as_deref(), Some("shortest-first"));
///
/// let (bulk, acks) = (tree.leaf("bulk").unwrap(), tree.leaf("acks").unwrap());
/// tree.enqueue(Packet::new(0, 1500).class(bulk), 0).unwrap();
/// tree.enqueue(Packet::new(1, 64).class(acks), 0).unwrap();
/// tree.enqueue(Packet::new(0, 1500).class(bulk), 0).unwrap();
/// let order: Vec<u32> = (0..3).map(|_| tree.dequeue(0).unwrap().len).collect();
/// assert_eq!(order, [64, 1500, 1500]);
/// ```
pub trait Transaction: Send + fmt::Debug {
    /// Name shown by `eiffel check`.
    fn name(&self) -> &str;

    /// `unit` became backlogged and eligible; `head` is its next packet.
    /// Returns its rank.
    fn on_activate(&mut self, unit: &mut Unit, head: &Packet, now: Nanos) -> u64;

    /// `pkt` entered the subtree of queued `unit`, whose head is now `head`.
    /// Returns a new rank, or `None` to keep the current one.
    fn on_enqueue(
        &mut self,
        unit: &mut Unit,
        pkt: &Packet,
        head: &Packet,
        now: Nanos,
    ) -> Option<u64> {
        let _ = (unit, pkt, head, now);
        None
    }

    /// `unit` sent `sent`; `next` is its next packet if it stays queued. Returns
    /// its new rank (ignored when `next` is `None`).
    fn on_dequeue(
        &mut self,
        unit: &mut Unit,
        sent: &Packet,
        next: Option<&Packet>,
        now: Nanos,
    ) -> u64;
}

/// The built-in transactions, dispatched without a virtual call.
#[derive(Debug)]
pub(crate) enum Builtin {
    Fifo,
    Strict,
    Wfq {
        /// Virtual time: the start tag of the packet last sent.
        vtime: u64,
    },
    Edf,
    Lstf,
    Srpt,
    Pfabric,
    Custom(Box<dyn Transaction>),
}

/// Virtual-time cost of `len` bytes at `weight`.
#[inline]
pub(crate) fn vt_cost(len: u32, weight: u32) -> u64 {
    u64::from(len) * VT_SCALE / u64::from(weight.max(1))
}

impl Builtin {
    pub(crate) fn name(&self) -> &str {
        match self {
            Builtin::Fifo => "fifo",
            Builtin::Strict => "strict",
            Builtin::Wfq { .. } => "wfq",
            Builtin::Edf => "edf",
            Builtin::Lstf => "lstf",
            Builtin::Srpt => "srpt",
            Builtin::Pfabric => "pfabric",
            Builtin::Custom(t) => t.name(),
        }
    }

    /// The rank a packet-derived transaction gives a unit whose head is `head`.
    #[inline]
    fn head_rank(&self, unit: &Unit, head: &Packet, is_flow: bool) -> u64 {
        match self {
            Builtin::Fifo => head.arrival,
            Builtin::Strict => {
                if is_flow {
                    head.rank
                } else {
                    u64::from(unit.priority)
                }
            }
            Builtin::Edf => head.deadline,
            Builtin::Lstf => head.arrival.saturating_add(head.rank),
            Builtin::Srpt => head.remaining,
            Builtin::Pfabric => unit.queued_min,
            Builtin::Wfq { .. } | Builtin::Custom(_) => unreachable!("not a head-derived rank"),
        }
    }

    #[inline]
    pub(crate) fn on_activate(
        &mut self,
        unit: &mut Unit,
        head: &Packet,
        now: Nanos,
        is_flow: bool,
    ) -> u64 {
        match self {
            Builtin::Wfq { vtime } => {
                unit.start = unit.finish.max(*vtime);
                unit.start
            }
            Builtin::Custom(t) => t.on_activate(unit, head, now),
            b => b.head_rank(unit, head, is_flow),
        }
    }

    #[inline]
    pub(crate) fn on_enqueue(
        &mut self,
        unit: &mut Unit,
        pkt: &Packet,
        head: &Packet,
        now: Nanos,
        is_flow: bool,
    ) -> Option<u64> {
        match self {
            // A unit's virtual start does not depend on what arrives behind its head.
            Builtin::Wfq { .. } => None,
            Builtin::Custom(t) => t.on_enqueue(unit, pkt, head, now),
            b => Some(b.head_rank(unit, head, is_flow)),
        }
    }

    #[inline]
    pub(crate) fn on_dequeue(
        &mut self,
        unit: &mut Unit,
        sent: &Packet,
        next: Option<&Packet>,
        now: Nanos,
        is_flow: bool,
    ) -> u64 {
        match self {
            Builtin::Wfq { vtime } => {
                // Start-time fair queueing, charged on departure: the packet just
                // sent started at `start`; the next one starts where it finished.
                *vtime = (*vtime).max(unit.start);
                unit.finish = unit.start + vt_cost(sent.len, unit.weight);
                unit.start = unit.finish;
                unit.start
            }
            Builtin::Custom(t) => t.on_dequeue(unit, sent, next, now),
            b => next.map_or(0, |h| b.head_rank(unit, h, is_flow)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_stays_40_bytes() {
        // Per-flow leaves keep one unit per flow: a million flows of them.
        assert_eq!(core::mem::size_of::<Unit>(), 40);
    }
}
