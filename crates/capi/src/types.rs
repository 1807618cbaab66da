//! The C types: status codes, drop reasons, the packet descriptor, counters.

use eiffel_sched::{Backlog, ClassId, Counters, DropReason, FlowId, Packet};

/// What a call did. Every function of the API returns one (or a value whose
/// documentation says how it reports errors); the message of the last error
/// on the calling thread is `eiffel_last_error()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EiffelStatus {
    /// Done.
    Ok = 0,
    /// A required pointer argument was NULL.
    NullArgument = 1,
    /// A string argument is not valid UTF-8.
    InvalidUtf8 = 2,
    /// The policy file cannot be read or has a mistake (the message names the
    /// file, line and key).
    Policy = 3,
    /// The policy's classifier cannot be built.
    Classify = 4,
    /// The packet was dropped; the drop record says which packet and why (it
    /// can be another, queued packet pushed out).
    Dropped = 5,
    /// Nothing to return: the scheduler holds no packet it releases now.
    Empty = 6,
    /// No leaf of that name, or a node index out of range.
    NotFound = 7,
    /// An internal error (a bug) stopped the call; the scheduler refuses
    /// further calls and should be freed.
    Internal = 8,
    /// A previous call on this scheduler ended in an internal error.
    Poisoned = 9,
}

/// Number of drop reasons: the length of the per-reason counter arrays.
pub const EIFFEL_DROP_REASONS: usize = 11;

const _: () = assert!(EIFFEL_DROP_REASONS == DropReason::COUNT);

/// Why a packet was dropped (the index of its per-reason counters).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EiffelDropReason {
    /// The scheduler's packet storage is full.
    QueueFull = 0,
    /// The packet's flow or leaf reached its queue limit.
    LeafFull = 1,
    /// The packet names a flow or leaf the policy does not have.
    UnknownFlow = 2,
    /// The packet is longer than allowed.
    TooLarge = 3,
    /// No rule maps the packet to a leaf.
    Unclassified = 4,
    /// The packet's release time lies beyond the shaper's horizon.
    ShaperHorizon = 5,
    /// The packet's rank is outside a rejecting queue's range.
    RankOutOfRange = 6,
    /// A policer refused the packet.
    Policer = 7,
    /// A queued packet was pushed out for a more important one.
    Evicted = 8,
    /// The packet was queued at shutdown.
    Shutdown = 9,
    /// The frame could not be parsed.
    Malformed = 10,
}

impl From<DropReason> for EiffelDropReason {
    fn from(r: DropReason) -> Self {
        match r {
            DropReason::QueueFull => Self::QueueFull,
            DropReason::LeafFull => Self::LeafFull,
            DropReason::UnknownFlow => Self::UnknownFlow,
            DropReason::TooLarge => Self::TooLarge,
            DropReason::Unclassified => Self::Unclassified,
            DropReason::ShaperHorizon => Self::ShaperHorizon,
            DropReason::RankOutOfRange => Self::RankOutOfRange,
            DropReason::Policer => Self::Policer,
            DropReason::Evicted => Self::Evicted,
            DropReason::Shutdown => Self::Shutdown,
            DropReason::Malformed => Self::Malformed,
        }
    }
}

/// A packet descriptor: the scheduler orders these, never payload bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EiffelPacket {
    /// The caller's handle of the payload (an mbuf index, a ring slot); handed
    /// back unchanged.
    pub buffer: u32,
    /// Length on the wire in bytes.
    pub len: u32,
    /// Flow id within the leaf (per-flow leaves keep one queue per id).
    pub flow: u32,
    /// The leaf (its class id, from `eiffel_scheduler_leaf` or classification).
    pub leaf: u32,
    /// Arrival time, ns (any monotonic origin, the same for every call).
    pub arrival_ns: u64,
    /// Rank for rank-driven disciplines (priority level, slack).
    pub rank: u64,
    /// Absolute deadline, ns (EDF, LSTF); `UINT64_MAX` for none.
    pub deadline_ns: u64,
    /// Bytes its flow still has to send (SRPT, pFabric); 0 when unknown.
    pub remaining: u64,
}

impl From<EiffelPacket> for Packet {
    fn from(p: EiffelPacket) -> Self {
        let mut pkt = Packet::new(p.flow as FlowId, p.len)
            .at(p.arrival_ns)
            .class(p.leaf as ClassId)
            .buffer(p.buffer);
        pkt.rank = p.rank;
        pkt.deadline = p.deadline_ns;
        pkt.remaining = p.remaining;
        pkt
    }
}

impl From<Packet> for EiffelPacket {
    fn from(p: Packet) -> Self {
        EiffelPacket {
            buffer: p.buffer,
            len: p.len,
            flow: p.flow,
            leaf: p.class,
            arrival_ns: p.arrival,
            rank: p.rank,
            deadline_ns: p.deadline,
            remaining: p.remaining,
        }
    }
}

/// A dropped packet and why.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EiffelDrop {
    /// The packet dropped (its buffer is the caller's to free).
    pub packet: EiffelPacket,
    /// Why.
    pub reason: EiffelDropReason,
}

/// Counters of the whole tree or of one node's subtree.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EiffelCounters {
    /// Packets offered to enqueue, accepted or not.
    pub enqueued: u64,
    /// Their bytes.
    pub enqueued_bytes: u64,
    /// Packets dequeued.
    pub dequeued: u64,
    /// Their bytes.
    pub dequeued_bytes: u64,
    /// Packets dropped, all reasons.
    pub dropped: u64,
    /// Packets dropped per reason, indexed by `EiffelDropReason`.
    pub dropped_packets: [u64; EIFFEL_DROP_REASONS],
    /// Bytes dropped per reason.
    pub dropped_bytes: [u64; EIFFEL_DROP_REASONS],
    /// Packets queued now.
    pub backlog_packets: u64,
    /// Bytes queued now.
    pub backlog_bytes: u64,
}

impl EiffelCounters {
    /// From the scheduler's counters and backlog.
    #[must_use]
    pub fn new(c: &Counters, backlog: Backlog) -> Self {
        EiffelCounters {
            enqueued: c.enqueued,
            enqueued_bytes: c.enqueued_bytes,
            dequeued: c.dequeued,
            dequeued_bytes: c.dequeued_bytes,
            dropped: c.dropped_total(),
            dropped_packets: c.dropped.packets,
            dropped_bytes: c.dropped.bytes,
            backlog_packets: backlog.packets,
            backlog_bytes: backlog.bytes,
        }
    }
}
