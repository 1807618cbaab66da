//! What a running bump in the wire reports: a [`Snapshot`] of every counter, served
//! as JSON on the control socket (`eiffel stats --json`) and rendered as a table by
//! `eiffel stats`.
//!
//! # Accounting
//! Every frame received on the input interface ends in exactly one place:
//!
//! ```text
//! ingress.received = ingress drops (truncated, oversize, pool_full, malformed,
//!                    mailbox_full, closed)
//!                  + ingress.to_scheduler
//! ingress.to_scheduler = scheduler.received + (descriptors not yet read by the arbiter)
//! scheduler.received = scheduler.released + scheduler.dropped + scheduler.backlog
//! scheduler.released = egress handled (sent, too_large, ring_full, bad_descriptor)
//!                    + (descriptors on their way to the dispatcher)
//! ```
//!
//! [`Accounting`] sums this up as `received = transmitted + dropped + queued`, where
//! `queued` is everything inside the bump (descriptors in mailboxes, the scheduler's
//! backlog). At shutdown `queued` is 0.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Version of the snapshot format.
pub const SNAPSHOT_VERSION: u32 = 1;

/// Everything a running bump reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    /// [`SNAPSHOT_VERSION`].
    pub version: u32,
    /// The policy file (as given on the command line).
    pub policy: String,
    /// Scheduled direction: frames in here...
    pub input: String,
    /// ...leave here.
    pub output: String,
    /// Nanoseconds since the bump started.
    pub uptime_ns: u64,
    /// The emulated link's rate, bits per second.
    pub link_rate_bps: u64,
    /// Interval the node rates were measured over, nanoseconds (0: no sample yet).
    pub rate_interval_ns: u64,
    /// One entry per policy-tree node, in policy order. Node counters restart at a
    /// reload (the new tree's counters); every other counter runs from the start.
    pub nodes: Vec<NodeStats>,
    /// The receive side of the input interface.
    pub ingress: IngressStats,
    /// The PSPAT arbiter and the scheduler it runs.
    pub scheduler: SchedulerStats,
    /// The transmit side of the output interface.
    pub egress: EgressStats,
    /// The unscheduled reverse direction (output to input).
    pub reverse: ReverseStats,
    /// The flow table.
    pub classifier: ClassifierStats,
    /// The frame pool.
    pub pool: PoolStats,
    /// Policy reloads.
    pub reloads: ReloadStats,
    /// The scheduled direction's balance sheet.
    pub accounting: Accounting,
    /// The packet I/O, as `eiffel shape` prints it at start (`af_xdp: m0 native
    /// XDP, ...`, or `af_packet`, with the reason when AF_XDP was not available).
    #[serde(default)]
    pub io: String,
    /// The offload mode (`gso (...)` or `off (...)`, with why), as `eiffel
    /// shape` prints it at start.
    #[serde(default)]
    pub offload: String,
}

/// One policy-tree node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeStats {
    /// Names from the root down, joined by `/`.
    pub path: String,
    /// The node's name.
    pub name: String,
    /// Depth (root 0).
    pub depth: usize,
    /// Whether it is a leaf.
    pub leaf: bool,
    /// How it orders its units (`fifo` for plain leaves).
    pub discipline: String,
    /// Weight at its parent.
    pub weight: u32,
    /// Priority at its parent.
    pub priority: u32,
    /// Its rate limit, bits per second.
    pub limit_bps: Option<u64>,
    /// Packets sent (left the node).
    pub packets: u64,
    /// Bytes sent.
    pub bytes: u64,
    /// Packets offered to the node's subtree.
    pub enqueued: u64,
    /// Drops by reason (reasons with at least one drop).
    pub drops: BTreeMap<String, u64>,
    /// Packets queued in the subtree.
    pub backlog_packets: u64,
    /// Bytes queued in the subtree.
    pub backlog_bytes: u64,
    /// Whether the shaper holds the node back now.
    pub throttled: bool,
    /// Bits per second sent over the last rate interval.
    pub rate_bps: f64,
    /// Packets per second sent over the last rate interval.
    pub rate_pps: f64,
    /// Sojourn times of the packets its leaves sent, from classification to
    /// transmission.
    #[serde(default)]
    pub latency: LatencyStats,
}

/// A latency histogram: counts per bucket of
/// [`LATENCY_BOUNDS_NS`](super::latency::LATENCY_BOUNDS_NS) (not cumulative),
/// the last bucket above every bound.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyStats {
    /// Packets per bucket.
    pub counts: Vec<u64>,
    /// Sum of the sojourn times, ns.
    pub sum_ns: u64,
}

impl LatencyStats {
    /// Packets counted.
    #[must_use]
    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

impl NodeStats {
    /// All drops of the node.
    #[must_use]
    pub fn dropped(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// The receive thread.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IngressStats {
    /// Frames received on the input interface.
    pub received: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Descriptors handed to the scheduler.
    pub to_scheduler: u64,
    /// Dropped before the scheduler, by reason: `truncated` (captured shorter than
    /// on the wire), `oversize` (longer than a pool slot), `pool_full`,
    /// `malformed` (under `malformed = "drop"`), `mailbox_full`, `closed` (arrived
    /// during shutdown).
    pub drops: BTreeMap<String, u64>,
    /// Frames the kernel dropped because the receive ring was full (never seen by
    /// the bump, so not in `received`).
    pub kernel_drops: u64,
    /// Frames received with their transport checksum left for hardware
    /// (`TP_STATUS_CSUMNOTREADY`).
    pub checksum_pending: u64,
    /// Of those, frames whose TCP or UDP checksum was completed in software.
    #[serde(default)]
    pub checksum_completed: u64,
    /// Of those, frames forwarded with the checksum unfinished (not TCP or UDP
    /// over IP, an IP fragment, malformed headers).
    #[serde(default)]
    pub checksum_left: u64,
    /// Of those, frames passed on with the checksum still left for the kernel
    /// to complete, in their `virtio_net_hdr` (GSO mode).
    #[serde(default)]
    pub checksum_offloaded: u64,
    /// GSO super-frames received whole (GSO mode), each one descriptor charged
    /// the bytes of its segments.
    #[serde(default)]
    pub gso: u64,
    /// Frames received per receive queue (`--queues`; one entry per queue).
    #[serde(default)]
    pub per_queue: Vec<u64>,
}

impl IngressStats {
    /// Adds one receive queue's counters.
    pub(crate) fn add(&mut self, q: &IngressStats) {
        self.received += q.received;
        self.bytes += q.bytes;
        self.to_scheduler += q.to_scheduler;
        for (k, &v) in &q.drops {
            put(&mut self.drops, k, v);
        }
        self.kernel_drops += q.kernel_drops;
        self.checksum_pending += q.checksum_pending;
        self.checksum_completed += q.checksum_completed;
        self.checksum_left += q.checksum_left;
        self.checksum_offloaded += q.checksum_offloaded;
        self.gso += q.gso;
        self.per_queue.push(q.received);
    }
}

impl ClassifierStats {
    /// Adds one receive queue's classifier counters.
    pub(crate) fn add(&mut self, q: &ClassifierStats) {
        self.flows += q.flows;
        self.capacity += q.capacity;
        self.created += q.created;
        self.expired += q.expired;
        self.evicted += q.evicted;
        for (k, &v) in &q.malformed {
            put(&mut self.malformed, k, v);
        }
    }
}

/// The arbiter and its scheduler.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerStats {
    /// Descriptors read into the scheduler.
    pub received: u64,
    /// Descriptors released to the link.
    pub released: u64,
    /// Descriptors dropped by the scheduler (admission, reload, shutdown).
    pub dropped: u64,
    /// Drops by reason since the start (all trees, reloads and shutdown included).
    pub drops: BTreeMap<String, u64>,
    /// Packets queued now.
    pub backlog_packets: u64,
    /// Bytes queued now.
    pub backlog_bytes: u64,
    /// Arbiter rounds.
    pub rounds: u64,
    /// Times the arbiter slept.
    pub sleeps: u64,
    /// Sleeps ended by their timer (the next departure).
    pub timer_wakeups: u64,
    /// Sleeps ended by a notification (an arrival, a command).
    pub notified_wakeups: u64,
    /// Time the emulated link was idle, nanoseconds.
    pub link_idle_ns: u64,
    /// Of it, the time the scheduler held frames but none was eligible (rate
    /// limits, release times), nanoseconds; the rest it held none (the senders
    /// did not keep the link busy).
    #[serde(default)]
    pub link_held_ns: u64,
}

/// The dispatcher transmitting on the output interface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressStats {
    /// Frames transmitted.
    pub sent: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Dropped after the scheduler, by reason: `too_large` (longer than the output
    /// interface accepts), `ring_full` (no transmit slot within the wait),
    /// `bad_descriptor` (a descriptor naming no queued frame).
    pub drops: BTreeMap<String, u64>,
    /// `send(2)` calls.
    pub kicks: u64,
    /// `send(2)` calls that failed (retried at the next flush).
    pub kick_errors: u64,
}

/// The reverse direction, forwarded untouched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReverseStats {
    /// Frames received on the output interface.
    pub received: u64,
    /// Frames transmitted on the input interface.
    pub sent: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Dropped, by reason: `truncated`, `too_large`, `ring_full`.
    pub drops: BTreeMap<String, u64>,
    /// Frames the kernel dropped because the receive ring was full.
    pub kernel_drops: u64,
    /// Frames whose transport checksum, left for hardware, was completed in
    /// software.
    #[serde(default)]
    pub checksum_completed: u64,
    /// Frames forwarded with a checksum left for hardware unfinished.
    #[serde(default)]
    pub checksum_left: u64,
    /// Frames forwarded with a checksum left for the kernel to complete, in
    /// their `virtio_net_hdr` (GSO mode).
    #[serde(default)]
    pub checksum_offloaded: u64,
    /// GSO super-frames forwarded whole (GSO mode).
    #[serde(default)]
    pub gso: u64,
}

/// The flow table and the parser.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassifierStats {
    /// Flows in the table now.
    pub flows: u32,
    /// Table capacity.
    pub capacity: u32,
    /// Flows created.
    pub created: u64,
    /// Flows expired after their idle timeout.
    pub expired: u64,
    /// Flows evicted to make room (least recently used).
    pub evicted: u64,
    /// Malformed frames by layer (forwarded or dropped, per the policy).
    pub malformed: BTreeMap<String, u64>,
}

/// The frame pool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolStats {
    /// Slots.
    pub slots: u32,
    /// Bytes per slot.
    pub slot_size: usize,
    /// Slots holding a frame now.
    pub in_use: u64,
}

/// Policy reloads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadStats {
    /// Reloads applied.
    pub applied: u64,
    /// Reloads refused (the error is in `last_error`).
    pub refused: u64,
    /// Queued packets moved into a new tree.
    pub moved: u64,
    /// Of those, packets whose leaf vanished, moved to the new default leaf.
    pub to_default: u64,
    /// Queued packets the new tree refused (counted in the scheduler's drops).
    pub dropped: u64,
    /// The last refusal's message.
    pub last_error: Option<String>,
}

/// The scheduled direction's balance: `received = transmitted + dropped + queued`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accounting {
    /// Frames received on the input interface.
    pub received: u64,
    /// Frames transmitted on the output interface.
    pub transmitted: u64,
    /// Frames dropped anywhere in the bump, every reason.
    pub dropped: u64,
    /// Frames inside the bump (mailboxes, scheduler, on their way out).
    pub queued: u64,
}

impl Accounting {
    /// Whether the balance holds.
    #[must_use]
    pub fn balanced(&self) -> bool {
        self.received == self.transmitted + self.dropped + self.queued
    }
}

/// Adds `n` under `key` when it is not zero.
pub(crate) fn put(map: &mut BTreeMap<String, u64>, key: &str, n: u64) {
    if n > 0 {
        *map.entry(key.to_owned()).or_default() += n;
    }
}
