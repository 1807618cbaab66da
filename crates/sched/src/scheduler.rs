//! The one interface every scheduling algorithm implements, and its accounting.
//!
//! Accounting contract, checked by tests at every scheduler and every policy-tree node:
//!
//! ```text
//! counters.enqueued == counters.dequeued + counters.dropped_total() + backlog.packets
//! ```
//!
//! `enqueued` counts every packet offered to [`Scheduler::enqueue`], including those
//! refused at admission; every drop, at admission or later (eviction, shutdown), is
//! counted under exactly one [`DropReason`].

use crate::packet::{FlowId, Nanos, Packet};

/// Why a packet was dropped. Every drop in the system is counted under one of these.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// The scheduler's preallocated packet storage is full.
    QueueFull = 0,
    /// The packet's queue was full: its leaf's `capacity`, or its flow's own
    /// queue limit (`flow_queue` of a per-flow leaf, a per-flow scheduler's
    /// `limit`). Not a rate limit: packets above a rate wait in the shaper.
    LeafFull,
    /// The packet names a flow the scheduler was not configured with.
    UnknownFlow,
    /// The packet is longer than its flow's declared maximum packet size.
    TooLarge,
    /// No classification rule maps the packet to a leaf.
    Unclassified,
    /// The packet's release time lies beyond the shaper's horizon.
    ShaperHorizon,
    /// The packet's rank lies outside the range of a queue configured to reject.
    RankOutOfRange,
    /// A policer (leaky bucket) refused the packet.
    Policer,
    /// A queued packet was pushed out to make room for a more important one.
    Evicted,
    /// The packet was still queued when the scheduler was shut down.
    Shutdown,
    /// The frame could not be parsed.
    Malformed,
}

impl DropReason {
    /// Number of reasons; the length of per-reason counter arrays.
    pub const COUNT: usize = 11;

    /// Every reason, in counter-index order.
    pub const ALL: [DropReason; Self::COUNT] = [
        DropReason::QueueFull,
        DropReason::LeafFull,
        DropReason::UnknownFlow,
        DropReason::TooLarge,
        DropReason::Unclassified,
        DropReason::ShaperHorizon,
        DropReason::RankOutOfRange,
        DropReason::Policer,
        DropReason::Evicted,
        DropReason::Shutdown,
        DropReason::Malformed,
    ];

    /// Stable snake_case name, used in tables and JSON.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::LeafFull => "leaf_full",
            DropReason::UnknownFlow => "unknown_flow",
            DropReason::TooLarge => "too_large",
            DropReason::Unclassified => "unclassified",
            DropReason::ShaperHorizon => "shaper_horizon",
            DropReason::RankOutOfRange => "rank_out_of_range",
            DropReason::Policer => "policer",
            DropReason::Evicted => "evicted",
            DropReason::Shutdown => "shutdown",
            DropReason::Malformed => "malformed",
        }
    }

    /// Index of this reason in per-reason counter arrays.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }
}

impl core::fmt::Display for DropReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

/// A packet the scheduler did not keep, handed back to the caller with the reason.
///
/// The caller owns the packet's buffer again and must free or recycle it. With
/// [`DropReason::Evicted`] the returned packet is a previously queued one that made
/// room for the packet just offered (which was queued).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[must_use = "a dropped packet's buffer must be released by the caller"]
pub struct Dropped {
    /// The packet that was dropped.
    pub packet: Packet,
    /// Why it was dropped.
    pub reason: DropReason,
}

impl core::fmt::Display for Dropped {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "packet of flow {} ({} bytes) dropped: {}",
            self.packet.flow, self.packet.len, self.reason
        )
    }
}

impl std::error::Error for Dropped {}

/// Packets and bytes currently held by a scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Queued packets.
    pub packets: u64,
    /// Queued bytes.
    pub bytes: u64,
}

/// Per-reason drop counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropCounts {
    /// Packets dropped, indexed by [`DropReason::index`].
    pub packets: [u64; DropReason::COUNT],
    /// Bytes dropped, indexed by [`DropReason::index`].
    pub bytes: [u64; DropReason::COUNT],
}

impl DropCounts {
    /// Packets dropped for `reason`.
    #[must_use]
    pub fn get(&self, reason: DropReason) -> u64 {
        self.packets[reason.index()]
    }

    /// Packets dropped for any reason.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.packets.iter().sum()
    }

    /// Bytes dropped for any reason.
    #[must_use]
    pub fn total_bytes(&self) -> u64 {
        self.bytes.iter().sum()
    }

    /// `(reason, packets)` for every reason with at least one drop.
    pub fn nonzero(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .iter()
            .map(|&r| (r, self.get(r)))
            .filter(|&(_, n)| n > 0)
    }
}

/// Packet and byte counters kept by every scheduler (and every policy-tree node).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Packets offered to `enqueue`, accepted or not.
    pub enqueued: u64,
    /// Packets returned by `dequeue`.
    pub dequeued: u64,
    /// Bytes offered to `enqueue`.
    pub enqueued_bytes: u64,
    /// Bytes returned by `dequeue`.
    pub dequeued_bytes: u64,
    /// Drops by reason.
    pub dropped: DropCounts,
}

impl Counters {
    /// Records a packet offered to `enqueue`.
    #[inline]
    pub fn on_enqueue(&mut self, len: u32) {
        self.enqueued += 1;
        self.enqueued_bytes += u64::from(len);
    }

    /// Records a packet returned by `dequeue`.
    #[inline]
    pub fn on_dequeue(&mut self, len: u32) {
        self.dequeued += 1;
        self.dequeued_bytes += u64::from(len);
    }

    /// Records a drop.
    #[inline]
    pub fn on_drop(&mut self, reason: DropReason, len: u32) {
        self.dropped.packets[reason.index()] += 1;
        self.dropped.bytes[reason.index()] += u64::from(len);
    }

    /// Records a drop and builds the [`Dropped`] that hands the packet back.
    #[inline]
    pub fn drop_packet(&mut self, packet: Packet, reason: DropReason) -> Dropped {
        self.on_drop(reason, packet.len);
        Dropped { packet, reason }
    }

    /// Packets dropped for any reason.
    #[must_use]
    pub fn dropped_total(&self) -> u64 {
        self.dropped.total()
    }

    /// Packets the counters say are still queued: `enqueued - dequeued - dropped`.
    #[must_use]
    pub fn implied_backlog(&self) -> u64 {
        self.enqueued - self.dequeued - self.dropped_total()
    }
}

/// A packet scheduler: decides which queued packet leaves next.
///
/// Implementations keep all packet and flow state in storage preallocated at
/// construction; `enqueue` and `dequeue` allocate nothing. Time is passed in.
pub trait Scheduler {
    /// Offers a packet. `Err` hands back the packet that was dropped (normally
    /// `pkt` itself; with [`DropReason::Evicted`] a previously queued packet, `pkt`
    /// having been queued in its place). Every drop is also counted.
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped>;

    /// Removes and returns the next packet to send at time `now`, or `None` if no
    /// packet is eligible (empty, or every queued packet is held by a shaper).
    fn dequeue(&mut self, now: Nanos) -> Option<Packet>;

    /// The earliest time at which `dequeue` can return a packet: `None` when empty,
    /// a time `<= now` when a packet is eligible now. Work-conserving schedulers
    /// return `Some(now)` whenever they hold a packet; shapers return the release
    /// time of their next packet so a caller can sleep exactly until then.
    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        (self.backlog().packets > 0).then_some(now)
    }

    /// Packets and bytes queued.
    fn backlog(&self) -> Backlog;

    /// Counters since construction.
    fn counters(&self) -> &Counters;

    /// Short algorithm name (`"qfq"`, `"drr"`, ...).
    fn name(&self) -> &'static str;
}

/// Configuration of one flow of a per-flow scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Relative weight (share of the link among backlogged flows); must be positive.
    pub weight: u32,
    /// Largest packet the flow may send, in bytes; longer packets are dropped with
    /// [`DropReason::TooLarge`].
    pub max_packet: u32,
    /// DRR quantum in bytes; `None` means `max_packet` (scaled by weight where the
    /// algorithm documents it).
    pub quantum: Option<u32>,
    /// Most packets the flow may have queued; `None` means no per-flow limit beyond
    /// the scheduler's capacity.
    pub limit: Option<u32>,
}

impl FlowConfig {
    /// A flow with the given weight, 1500-byte maximum packet, default quantum and
    /// no per-flow limit.
    #[must_use]
    pub const fn weight(weight: u32) -> Self {
        FlowConfig {
            weight,
            max_packet: 1500,
            quantum: None,
            limit: None,
        }
    }

    /// Sets the maximum packet size.
    #[must_use]
    pub const fn max_packet(mut self, bytes: u32) -> Self {
        self.max_packet = bytes;
        self
    }

    /// Sets the DRR quantum.
    #[must_use]
    pub const fn quantum(mut self, bytes: u32) -> Self {
        self.quantum = Some(bytes);
        self
    }

    /// Sets the per-flow packet limit.
    #[must_use]
    pub const fn limit(mut self, packets: u32) -> Self {
        self.limit = Some(packets);
        self
    }
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig::weight(1)
    }
}

/// A configuration the scheduler cannot accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A weight of zero.
    #[error("flow {flow}: weight must be positive")]
    ZeroWeight {
        /// The flow.
        flow: FlowId,
    },
    /// A weight above the algorithm's maximum.
    #[error("flow {flow}: weight {weight} exceeds the maximum {max}")]
    WeightTooLarge {
        /// The flow.
        flow: FlowId,
        /// The weight given.
        weight: u32,
        /// The largest weight supported.
        max: u32,
    },
    /// The sum of weights would exceed the algorithm's supported range.
    #[error("flow {flow}: total weight {total} would exceed the supported maximum {max}")]
    WeightSumTooLarge {
        /// The flow being added.
        flow: FlowId,
        /// The total including this flow.
        total: u64,
        /// The largest total supported.
        max: u64,
    },
    /// A maximum packet size of zero or above the supported maximum.
    #[error("flow {flow}: maximum packet size {bytes} outside 1..={max}")]
    BadMaxPacket {
        /// The flow.
        flow: FlowId,
        /// The size given.
        bytes: u32,
        /// The largest size supported.
        max: u32,
    },
    /// A quantum of zero.
    #[error("flow {flow}: quantum must be positive")]
    ZeroQuantum {
        /// The flow.
        flow: FlowId,
    },
    /// A flow id beyond the configured number of flows.
    #[error("flow {flow}: id outside the configured range 0..{max_flows}")]
    FlowOutOfRange {
        /// The flow.
        flow: FlowId,
        /// The configured number of flows.
        max_flows: u32,
    },
    /// A flow configured twice.
    #[error("flow {flow}: already configured")]
    DuplicateFlow {
        /// The flow.
        flow: FlowId,
    },
    /// A flow that is not configured.
    #[error("flow {flow}: not configured")]
    NoSuchFlow {
        /// The flow.
        flow: FlowId,
    },
    /// A flow removed while it still has queued packets.
    #[error("flow {flow}: still has {packets} queued packets")]
    FlowBusy {
        /// The flow.
        flow: FlowId,
        /// Its queued packets.
        packets: u64,
    },
    /// A capacity or size parameter out of range.
    #[error("{what}: {value} is outside {range}")]
    OutOfRange {
        /// Which parameter.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The accepted range, for the message.
        range: &'static str,
    },
    /// A policy tree specification that cannot be built.
    #[error(transparent)]
    Spec(#[from] crate::tree::SpecError),
    /// A queue (a node's priority queue or calendar, the shaper) refused its
    /// configuration.
    #[error("{what}: {source}")]
    Queue {
        /// Which queue.
        what: String,
        /// Why.
        #[source]
        source: eiffel_queue::ConfigError,
    },
    /// A problem building one node of a policy tree.
    #[error("node {node:?}: {source}")]
    Node {
        /// The node's name.
        node: String,
        /// The problem.
        #[source]
        source: Box<ConfigError>,
    },
    /// No node has this name.
    #[error("no node called {name:?}")]
    NoSuchNode {
        /// The name.
        name: String,
    },
    /// The node is not a leaf.
    #[error("{name:?} is not a leaf")]
    NotALeaf {
        /// The node's name.
        name: String,
    },
    /// The node still holds packets.
    #[error("node {name:?} holds packets")]
    NodeBusy {
        /// The node's name.
        name: String,
    },
    /// The node orders its units by something other than a rank transaction.
    #[error("node {name:?} does not run a rank transaction (it runs {discipline})")]
    NoTransaction {
        /// The node's name.
        name: String,
        /// What it runs instead.
        discipline: &'static str,
    },
}

impl ConfigError {
    /// `self`, as a problem of node `node`.
    #[must_use]
    pub fn in_node(self, node: &str) -> ConfigError {
        ConfigError::Node {
            node: node.to_owned(),
            source: Box::new(self),
        }
    }
}

/// A scheduler whose packets belong to configured flows with weights.
pub trait FlowScheduler: Scheduler {
    /// Configures a flow. May allocate; not for the per-packet path.
    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError>;

    /// Removes an idle flow.
    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError>;

    /// Packets and bytes queued for one flow (zero for unknown flows). The
    /// per-flow schedulers sum the bytes over the flow's packets: a query for
    /// statistics, not for the per-packet path.
    fn flow_backlog(&self, flow: FlowId) -> Backlog;
}
