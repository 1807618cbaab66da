//! An output port: a buffer, a policy that orders it (its tree, or a
//! specialised queue equal to it: [`crate::portq`]), a transmitter and the
//! link to the next node.
//!
//! Every packet offered to a port either is dropped on arrival, with one
//! [`PortDrop`] reason, or is queued in the port's policy (its
//! [`PolicyTree`](eiffel_sched::PolicyTree) or a [`PortQueue`] equal to it); a queued packet
//! is later transmitted, or evicted by pFabric's rule (see below), or is still
//! queued at the end. Both balances are checked by [`Port::check_invariants`]:
//!
//! ```text
//! arrived = sent + dropped on arrival + evicted + queued (live)
//! policy offered = policy served + policy refused + policy backlog
//! ```
//!
//! ## Admission
//! 1. Random loss (a link property, for tests against the Mathis formula).
//! 2. The buffer: bytes of live queued packets plus the new one may not exceed
//!    the port's buffer. [`DropPolicy::Tail`] drops the arriving packet;
//!    [`DropPolicy::LowestPriority`] is pFabric's rule: drop the queued or
//!    arriving packet with the most bytes remaining in its flow (ties: the
//!    arriving one), repeated until the new packet fits or is itself dropped.
//! 3. ECN: a DCTCP data packet arriving when the live queue holds at least the
//!    marking threshold `K` bytes is marked CE.
//! 4. The policy tree, which may refuse the packet by its own limits (a leaf's
//!    capacity, a policer) with the tree's [`DropReason`].
//!
//! ## pFabric's drop, lazily
//! The policy tree has no operation to take out an arbitrary queued packet, so a
//! pFabric victim is marked [`flags::DEAD`] and stays in the tree; it no longer
//! counts against the buffer, and when the tree's order reaches it the port
//! discards it without using the link and dequeues the next. Because a victim
//! has the most bytes remaining of everything queued, it is the last packet of
//! its flow the tree would serve and leaves the flow's rank unchanged, unless
//! it is the flow's only packet. The tree's capacity must cover the victims
//! still inside it (the scenario sizes it at twice the buffer).
//!
//! ## Per-flow leaves
//! A port whose policy has per-flow leaves maps simulated flows to its own flow
//! slots ([`SlotTable`]).
//!
//! ## Priority inversions (pFabric ports)
//! At a pFabric port every dequeue is checked against the exact rule: the flow
//! served should hold the live packet with the fewest bytes remaining, to within
//! the policy's rank granularity. A dequeue from a flow whose smallest remaining
//! size lies in a higher bucket than the port's smallest is counted in
//! [`PortStats::inversions`]: zero for an exact queue, the approximate queue's
//! error (Eiffel Fig. 14) seen by the network otherwise.

use std::collections::VecDeque;

use eiffel_sched::{DropReason, NO_DEADLINE};

use crate::histogram::LogHistogram;
use crate::live::LiveSet;
use crate::packet::{flags, PacketStore, NO_SLACK};
use crate::portq::{Arrival, PortQueue};
use crate::slots::SlotTable;
use crate::time::{Duration, Rate, Time};

/// What a full buffer drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropPolicy {
    /// The arriving packet (drop-tail).
    Tail,
    /// The packet with the most bytes remaining in its flow (pFabric).
    LowestPriority,
}

/// Why a packet was dropped at a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortDrop {
    /// The link's random loss.
    RandomLoss,
    /// The buffer was full (drop-tail).
    BufferFull,
    /// pFabric: the arriving packet had the lowest priority of a full buffer.
    LowestPriority,
    /// Every flow slot of the port's per-flow leaves holds packets.
    NoFlowSlot,
    /// The policy tree refused it for this reason.
    Policy(DropReason),
}

impl PortDrop {
    /// Every reason except the policy's, in report order.
    pub const PORT_REASONS: [PortDrop; 4] = [
        PortDrop::RandomLoss,
        PortDrop::BufferFull,
        PortDrop::LowestPriority,
        PortDrop::NoFlowSlot,
    ];

    /// Number of counter slots: the port's reasons and every tree reason.
    pub const COUNT: usize = 4 + DropReason::COUNT;

    /// Counter index.
    #[must_use]
    pub const fn index(self) -> usize {
        match self {
            PortDrop::RandomLoss => 0,
            PortDrop::BufferFull => 1,
            PortDrop::LowestPriority => 2,
            PortDrop::NoFlowSlot => 3,
            PortDrop::Policy(r) => 4 + r.index(),
        }
    }

    /// The reason of counter index `i`.
    #[must_use]
    pub fn from_index(i: usize) -> PortDrop {
        if i < 4 {
            Self::PORT_REASONS[i]
        } else {
            PortDrop::Policy(DropReason::ALL[i - 4])
        }
    }

    /// Stable snake_case name for reports.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            PortDrop::RandomLoss => "random_loss",
            PortDrop::BufferFull => "buffer_full",
            PortDrop::LowestPriority => "lowest_priority",
            PortDrop::NoFlowSlot => "no_flow_slot",
            PortDrop::Policy(r) => r.name(),
        }
    }
}

/// How a port is set up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PortConfig {
    /// Transmission rate.
    pub rate: Rate,
    /// Propagation delay of the link.
    pub delay: Duration,
    /// Bytes of live packets the buffer holds.
    pub buffer: u64,
    /// What a full buffer drops.
    pub drop: DropPolicy,
    /// DCTCP marking threshold in bytes; `None`: no marking.
    pub ecn_threshold: Option<u64>,
    /// Probability that an arriving packet is lost (0 for none).
    pub loss: f64,
}

/// Counters of one port.
#[derive(Clone, Debug)]
pub struct PortStats {
    /// Packets offered.
    pub arrived: u64,
    /// Packets transmitted.
    pub sent: u64,
    /// Bytes transmitted.
    pub sent_bytes: u64,
    /// Drops on arrival by [`PortDrop::index`].
    pub dropped: [u64; PortDrop::COUNT],
    /// Queued packets dropped by pFabric's rule to make room.
    pub evicted: u64,
    /// Evicted packets discarded when the policy reached them.
    pub discarded: u64,
    /// Packets marked CE.
    pub marked: u64,
    /// Largest live queue in bytes.
    pub max_queue_bytes: u64,
    /// Queueing delay (arrival to start of transmission) of sent packets, ns:
    /// recorded only at ports whose queues are sampled (a histogram per port
    /// would be a cache miss per packet).
    pub sojourn: Option<Box<LogHistogram>>,
    /// Largest queueing delay, ns.
    pub max_sojourn: u64,
    /// Sum of queueing delays, ns (for the exact mean).
    pub sojourn_sum: u128,
    /// pFabric ports: dequeues checked against the exact order.
    pub checked: u64,
    /// pFabric ports: dequeues that served a flow ranked behind another queued
    /// one (see the module documentation).
    pub inversions: u64,
    /// Queue samples `(time, live bytes)` when this port is recorded.
    pub samples: Vec<(Time, u64)>,
}

impl PortStats {
    fn new() -> PortStats {
        PortStats {
            arrived: 0,
            sent: 0,
            sent_bytes: 0,
            dropped: [0; PortDrop::COUNT],
            evicted: 0,
            discarded: 0,
            marked: 0,
            max_queue_bytes: 0,
            checked: 0,
            inversions: 0,
            sojourn: None,
            max_sojourn: 0,
            sojourn_sum: 0,
            samples: Vec::new(),
        }
    }

    /// Packets dropped on arrival, all reasons.
    #[must_use]
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().sum()
    }
}

/// The result of asking a port for its next packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Transmit this packet.
    Send(u32),
    /// Nothing queued.
    Idle,
    /// Something is queued but the policy holds it until then (a rate limit).
    Wait(Time),
}

/// An output port.
#[derive(Debug)]
pub struct Port {
    rate: Rate,
    delay: Duration,
    buffer: u64,
    drop: DropPolicy,
    ecn: u64,
    loss: f64,
    /// Bytes and packets of live queued packets.
    queued_bytes: u64,
    queued: u64,
    /// The link is transmitting until then.
    pub busy_until: Time,
    /// A `PortFree` event is pending at `busy_until`.
    pub free_pending: bool,
    /// Generation of the latest `PortFree` event: an older one still in the
    /// event list (its transmission was started by an arrival at the same
    /// instant) is ignored when it fires.
    pub free_gen: u32,
    /// Time of the pending `PortWake` event, or [`Time::NEVER`].
    pub wake_at: Time,
    queue: PortQueue,
    /// Ranks per bucket of the tree's first ranked queue (pFabric's check).
    granularity: u64,
    slots: Option<SlotTable>,
    /// Live queued packets by rank (pFabric ports only): the victim and the
    /// exact order's choice.
    live: LiveSet,
    /// Packets on the link: arrival time at the far end and packet id.
    pipe: VecDeque<(Time, u32)>,
    /// Counters.
    pub stats: PortStats,
}

impl Port {
    /// A port ordering its buffer with `queue` (its policy tree or an
    /// equivalent); `flow_slots` is the number of flow slots of the policy's
    /// per-flow leaves (0 if it has none); `pipe` the most packets the link can
    /// hold in flight.
    #[must_use]
    pub fn new(cfg: PortConfig, queue: PortQueue, flow_slots: u32, pipe: usize) -> Port {
        let live_cap = if cfg.drop == DropPolicy::LowestPriority {
            (cfg.buffer / 40 + 1) as usize
        } else {
            0
        };
        let granularity = queue.granularity();
        Port {
            granularity,
            rate: cfg.rate,
            delay: cfg.delay,
            buffer: cfg.buffer,
            drop: cfg.drop,
            ecn: cfg.ecn_threshold.unwrap_or(u64::MAX),
            loss: cfg.loss,
            queued_bytes: 0,
            queued: 0,
            busy_until: Time::ZERO,
            free_pending: false,
            free_gen: 0,
            wake_at: Time::NEVER,
            queue,
            slots: (flow_slots > 0).then(|| SlotTable::new(flow_slots)),
            live: LiveSet::with_capacity(live_cap),
            pipe: VecDeque::with_capacity(pipe),
            stats: PortStats::new(),
        }
    }

    /// The link rate.
    #[must_use]
    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// The link's propagation delay.
    #[must_use]
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// Live queued bytes.
    #[must_use]
    pub fn queued_bytes(&self) -> u64 {
        self.queued_bytes
    }

    /// Live queued packets.
    #[must_use]
    pub fn queued(&self) -> u64 {
        self.queued
    }

    /// Whether the policy holds packets (live or pFabric victims).
    #[must_use]
    #[inline]
    pub fn has_backlog(&self) -> bool {
        self.queue.backlog() > 0
    }

    /// Packets the policy holds (live or pFabric victims).
    #[must_use]
    pub fn backlog(&self) -> u64 {
        self.queue.backlog()
    }

    /// The port's queue: its policy tree or an equivalent.
    #[must_use]
    pub fn queue(&self) -> &PortQueue {
        &self.queue
    }

    /// Offers packet `id` at `now`, classified to tree leaf `leaf`; `key` names
    /// its flow and direction for per-flow leaves and `cache` is the flow's slot
    /// cache for this port; `coin` is a uniform draw in `[0, 1)` for random loss.
    /// On `Err` the caller still owns the packet (and frees it).
    ///
    /// # Errors
    /// The reason the arriving packet was dropped (already counted).
    #[allow(clippy::too_many_arguments)]
    pub fn enqueue(
        &mut self,
        now: Time,
        id: u32,
        pkts: &mut PacketStore,
        leaf: u32,
        key: u64,
        cache: &mut u32,
        coin: f64,
    ) -> Result<(), PortDrop> {
        self.stats.arrived += 1;
        let p = *pkts.get(id);
        let len = u64::from(p.len);
        if self.loss > 0.0 && coin < self.loss {
            return Err(self.count(PortDrop::RandomLoss));
        }
        if self.queued_bytes + len > self.buffer {
            match self.drop {
                DropPolicy::Tail => return Err(self.count(PortDrop::BufferFull)),
                DropPolicy::LowestPriority => {
                    if !self.make_room(pkts, p.remaining, len) {
                        return Err(self.count(PortDrop::LowestPriority));
                    }
                }
            }
        }
        if self.queued_bytes >= self.ecn && p.has(flags::ECT) {
            pkts.get_mut(id).flags |= flags::CE;
            self.stats.marked += 1;
        }
        let slot = match &mut self.slots {
            Some(t) => match t.acquire(key, cache) {
                Some(s) => s,
                None => return Err(self.count(PortDrop::NoFlowSlot)),
            },
            None => 0,
        };
        let (rank, deadline) = if p.slack == NO_SLACK {
            (0, NO_DEADLINE)
        } else {
            (p.slack, now.0.saturating_add(p.slack))
        };
        let arrival = Arrival {
            id,
            len: u32::from(p.len),
            slot,
            leaf,
            remaining: p.remaining,
            rank,
            deadline,
        };
        if let Err(reason) = self.queue.enqueue(&arrival, now) {
            if let Some(t) = &mut self.slots {
                t.release(slot);
            }
            return Err(self.count(PortDrop::Policy(reason)));
        }
        let q = pkts.get_mut(id);
        q.enqueued = now;
        if self.drop == DropPolicy::LowestPriority {
            q.qpos = self.live.insert(q.remaining, id);
        }
        self.queued_bytes += len;
        self.queued += 1;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queued_bytes);
        Ok(())
    }

    fn count(&mut self, why: PortDrop) -> PortDrop {
        self.stats.dropped[why.index()] += 1;
        why
    }

    /// pFabric: evicts live packets with more bytes remaining than `remaining`
    /// until `len` more bytes fit; `false` (nothing evicted beyond what was
    /// needed) if the arriving packet is itself the lowest priority.
    fn make_room(&mut self, pkts: &mut PacketStore, remaining: u64, len: u64) -> bool {
        while self.queued_bytes + len > self.buffer {
            match self.live.last() {
                Some((r, _)) if r > remaining => {}
                _ => return false,
            }
            let victim = self.live.pop_last().expect("checked non-empty");
            let v = pkts.get_mut(victim);
            v.flags |= flags::DEAD;
            self.queued_bytes -= u64::from(v.len);
            self.queued -= 1;
            self.stats.evicted += 1;
        }
        true
    }

    /// Counts a priority inversion if flow slot `slot`, which the policy just
    /// served (packet `id`), is ranked behind another live flow.
    fn check_order(&mut self, pkts: &PacketStore, id: u32) {
        self.stats.checked += 1;
        let p = pkts.get(id);
        let g = self.granularity;
        let best = self.live.first_rank().unwrap_or(u64::MAX) / g;
        if p.remaining / g <= best {
            return;
        }
        // The packet sent is not itself in the best bucket: its flow must have
        // a queued packet there (pFabric sends a flow's earliest packet, which
        // has the most bytes remaining).
        let (flow, ack) = (p.flow, p.has(flags::ACK));
        let served_best = self
            .live
            .iter()
            .take_while(|&(r, _)| r / g == best)
            .any(|(_, q)| {
                let q = pkts.get(q);
                q.flow == flow && q.has(flags::ACK) == ack
            });
        if !served_best {
            self.stats.inversions += 1;
        }
    }

    /// The next packet to transmit at `now`: dequeues from the tree, discarding
    /// (and freeing) pFabric victims on the way.
    pub fn dequeue(&mut self, now: Time, pkts: &mut PacketStore) -> Next {
        loop {
            let Some(d) = self.queue.dequeue(now) else {
                return match self.queue.next_ready(now) {
                    Some(t) if t > now => Next::Wait(t),
                    Some(_) => unreachable!("the policy said a packet was ready"),
                    None => Next::Idle,
                };
            };
            if let Some(t) = &mut self.slots {
                t.release(d.slot);
            }
            let id = d.id;
            if pkts.get(id).has(flags::DEAD) {
                pkts.free(id);
                self.stats.discarded += 1;
                continue;
            }
            if self.drop == DropPolicy::LowestPriority {
                self.check_order(pkts, id);
                let p = pkts.get(id);
                self.live.remove(p.remaining, p.qpos);
            }
            let p = pkts.get_mut(id);
            let len = u64::from(p.len);
            let waited = now.since(p.enqueued).as_nanos();
            if p.slack != NO_SLACK {
                p.slack = p.slack.saturating_sub(waited);
            }
            self.queued_bytes -= len;
            self.queued -= 1;
            self.stats.sent += 1;
            self.stats.sent_bytes += len;
            self.stats.sojourn_sum += u128::from(waited);
            self.stats.max_sojourn = self.stats.max_sojourn.max(waited);
            if let Some(h) = &mut self.stats.sojourn {
                h.record(waited);
            }
            return Next::Send(id);
        }
    }

    /// Starts transmitting `id` at `now`: the link is busy for its transmission
    /// time and the packet reaches the far end a propagation delay later.
    /// Returns `(end of transmission, arrival at the far end, whether the link
    /// was empty before)`.
    #[inline]
    pub fn transmit(&mut self, now: Time, id: u32, len: u16) -> (Time, Time, bool) {
        let done = now + self.rate.tx_time_ceil(u64::from(len));
        let arrive = done + self.delay;
        let was_empty = self.pipe.is_empty();
        self.pipe.push_back((arrive, id));
        self.busy_until = done;
        (done, arrive, was_empty)
    }

    /// Takes the packet at the head of the link (arrived at the far end) and
    /// returns it with the arrival time of the next one, if any.
    #[inline]
    pub fn take_arrival(&mut self) -> (u32, Option<Time>) {
        let (_, id) = self
            .pipe
            .pop_front()
            .expect("an arrival event has a packet");
        (id, self.pipe.front().map(|&(t, _)| t))
    }

    /// Whether the link loses packets at random.
    #[must_use]
    pub fn has_loss(&self) -> bool {
        self.loss > 0.0
    }

    /// Packets the link holds in flight before its buffer grows.
    #[must_use]
    pub fn in_flight_capacity(&self) -> usize {
        self.pipe.capacity()
    }

    /// Packets in flight on the link.
    #[must_use]
    pub fn in_flight(&self) -> usize {
        self.pipe.len()
    }

    /// Records a queue sample (and, from the first one on, every queueing
    /// delay in a histogram).
    pub fn sample(&mut self, now: Time) {
        if self.stats.sojourn.is_none() {
            self.stats.sojourn = Some(Box::default());
        }
        self.stats.samples.push((now, self.queued_bytes));
    }

    /// Checks the port's balances (see the module documentation).
    ///
    /// # Panics
    /// On a violated balance, with the counts.
    pub fn check_invariants(&self, name: &str) {
        let s = &self.stats;
        assert_eq!(
            s.arrived,
            s.sent + s.dropped_total() + s.evicted + self.queued,
            "port {name}: arrived {} != sent {} + dropped {} + evicted {} + queued {}",
            s.arrived,
            s.sent,
            s.dropped_total(),
            s.evicted,
            self.queued
        );
        self.queue.check_invariants(name);
        let b = self.queue.backlog();
        assert!(
            b >= self.queued,
            "port {name}: policy holds fewer than live"
        );
        if let Some(t) = &self.slots {
            assert_eq!(t.queued(), b, "port {name}: flow slots out of step");
        }
    }
}
