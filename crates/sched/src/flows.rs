//! Per-flow scheduling split in two halves: a [`FlowCore`] that orders flow ids
//! knowing only the length of each flow's head packet, and [`PerFlow`], which
//! stores the packets and drives a core.
//!
//! # Why the split
//!
//! DRR, WF2Q+, QFQ and STFQ never look past the head packet of a flow: every
//! decision depends on the flow's weight, its history (deficit or timestamps) and
//! the length of the packet it would send next. A core therefore schedules *flow
//! ids*, and whatever "packet" means is left to its user:
//!
//! - [`PerFlow`] keeps one FIFO of packets per flow in a [`ChunkPool`] and tells
//!   the core the length of each FIFO's head; `PerFlow<QfqCore>` is the QFQ packet
//!   scheduler ([`crate::Qfq`]), and likewise for the others.
//! - A hierarchical policy uses a core as the discipline of an internal node, whose
//!   "flows" are its child nodes and whose "head packet" is whatever the child will
//!   send next. The core API below is all such a node needs.
//!
//! # The core protocol
//!
//! A flow is *idle* or *backlogged* in the core. The user drives these transitions
//! and the core keeps its order:
//!
//! 1. [`FlowCore::activate`]`(f, len)`: idle flow `f` now has a head of `len` bytes.
//! 2. [`FlowCore::peek`]: the backlogged flow whose head goes next (repeatable: two
//!    calls without a `served` in between return the same flow).
//! 3. [`FlowCore::served`]`(f, next)`: the flow returned by `peek` has sent its head
//!    (the length given when that head was reported); `next` is the length of its
//!    new head, or `None` if it became idle.
//!
//! The length of a head is fixed once reported: timestamp-based cores compute the
//! flow's finish time from it. A user whose "head" may change (a child node that
//! receives a more urgent packet) commits to the length reported, as hierarchical
//! fair queueing does, and reports the change with its next `served`.
//!
//! # One record per flow
//!
//! A core keeps one record per flow id, and its user keeps its own per-flow state
//! in the same record: the core's [`FlowCore::Attached`] value. [`PerFlow`]
//! attaches each flow's packet FIFO and admission limits ([`FlowQueue`]), so that
//! a packet's enqueue looks its flow up once and a dequeue
//! ([`FlowCore::serve`]) finds the chosen flow's FIFO and the core's state for it
//! in one record (for QFQ, one 64-byte record). A policy tree attaches nothing
//! (`()`).
//!
//! Preconditions (checked by `debug_assert!`, unspecified but memory-safe results
//! in release builds): `activate` only for configured idle flows and with a length
//! of at most the flow's `max_packet`; `served` only for the flow `peek` returned.
//! Cores never allocate after construction, and every operation of every core
//! except `peek` of DRR with quanta smaller than packets is O(1) or O(log N) as its
//! module documents.

use crate::chunks::{ChunkFifo, ChunkPool};
use crate::packet::{FlowId, Nanos, Packet};
use crate::scheduler::{
    Backlog, ConfigError, Counters, DropReason, Dropped, FlowConfig, FlowScheduler, Scheduler,
};

/// The flow-ordering half of a per-flow scheduler; see the [module docs](self).
pub trait FlowCore {
    /// What the core's user keeps with each flow, inside the core's record of the
    /// flow: [`FlowQueue`] for [`PerFlow`], `()` when nothing is attached.
    type Attached;

    /// Short algorithm name (`"qfq"`, `"drr"`, ...).
    fn name(&self) -> &'static str;

    /// Flow ids accepted by this core are `0..max_flows()`.
    fn max_flows(&self) -> u32;

    /// Configures a flow (weight, maximum packet size, quantum). Validates the
    /// configuration against the algorithm's ranges and names what is wrong.
    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError>;

    /// Removes an idle flow.
    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError>;

    /// The configuration of `flow`, if configured.
    fn flow_config(&self, flow: FlowId) -> Option<FlowConfig>;

    /// Whether `flow` is backlogged (between `activate` and `served(_, None)`).
    fn is_backlogged(&self, flow: FlowId) -> bool;

    /// Number of backlogged flows.
    fn backlogged(&self) -> u32;

    /// Idle flow `flow` became backlogged with a head of `len` bytes.
    fn activate(&mut self, flow: FlowId, len: u32);

    /// The backlogged flow to serve next, or `None` if no flow is backlogged.
    fn peek(&mut self) -> Option<FlowId>;

    /// `flow`, the one `peek` returned, sent its head; `next` is the length of its
    /// new head, `None` if it is now idle.
    fn served(&mut self, flow: FlowId, next: Option<u32>);

    /// [`FlowCore::served`], then [`FlowCore::peek`]: the flow to serve next.
    /// Cores override it where the served flow's record answers both.
    #[inline(always)]
    fn served_peek(&mut self, flow: FlowId, next: Option<u32>) -> Option<FlowId> {
        self.served(flow, next);
        self.peek()
    }

    /// What is attached to `flow` (any flow id below `max_flows()`, configured or
    /// not); `None` for an id out of range.
    fn attached(&self, flow: FlowId) -> Option<&Self::Attached>;

    /// What is attached to `flow`, mutably; `None` for an id out of range.
    fn attached_mut(&mut self, flow: FlowId) -> Option<&mut Self::Attached>;

    /// [`FlowCore::peek`] and [`FlowCore::served`] in one step: `pop` receives
    /// the flow to serve and its attached value, sends the flow's head and returns
    /// what to hand back with the length of the flow's new head (`None` if it is
    /// now idle). `None` if no flow is backlogged. Cores override it to reach the
    /// flow's record once.
    #[inline(always)]
    fn serve<R>(
        &mut self,
        pop: impl FnOnce(FlowId, &mut Self::Attached) -> (R, Option<u32>),
    ) -> Option<R> {
        let flow = self.peek()?;
        let (r, next) = pop(flow, self.attached_mut(flow)?);
        self.served(flow, next);
        Some(r)
    }

    /// Checks the core's internal invariants (tests call it after every operation).
    ///
    /// # Panics
    /// On a violated invariant, with a message naming it.
    fn check_invariants(&self) {}
}

/// The per-flow state [`PerFlow`] attaches to a core's flow records: the flow's
/// packet FIFO and its admission limits (20 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowQueue {
    fifo: ChunkFifo,
    /// Largest accepted packet; 0 while the flow is not configured.
    max_packet: u32,
    /// Most packets the flow may have queued.
    limit: u32,
}

/// A core that can drive a [`PerFlow`]: one whose flow records carry a
/// [`FlowQueue`] (`QfqCore<FlowQueue>`, ...).
pub trait PacketCore: FlowCore<Attached = FlowQueue> {}

impl<C: FlowCore<Attached = FlowQueue>> PacketCore for C {}

/// A packet scheduler made of a [`FlowCore`] and one packet FIFO per flow.
///
/// Packets are classified by [`Packet::flow`]. Admission drops, each counted:
/// [`DropReason::UnknownFlow`] (flow not configured), [`DropReason::TooLarge`]
/// (longer than the flow's `max_packet`), [`DropReason::LeafFull`] (the flow's
/// `limit` reached), [`DropReason::QueueFull`] (the shared pool is full).
/// `enqueue` and `dequeue` cost one pool operation plus one core operation.
#[derive(Clone, Debug)]
pub struct PerFlow<C> {
    core: C,
    pool: ChunkPool,
    counters: Counters,
}

impl<C: PacketCore> PerFlow<C> {
    /// A scheduler around `core` holding at most `capacity` packets in total.
    ///
    /// Packet storage is allocated here ([`ChunkPool::bytes_for`] bytes for
    /// `capacity` and the core's flows); the flows' FIFOs live in the core's
    /// records.
    ///
    /// # Panics
    /// If `capacity` packets do not fit the pool's 32-bit positions (see
    /// [`ChunkPool::new`]).
    #[must_use]
    pub fn from_core(core: C, capacity: usize) -> Self {
        let pool = ChunkPool::new(capacity, core.max_flows() as usize);
        PerFlow {
            core,
            pool,
            counters: Counters::default(),
        }
    }

    /// The attached state of every flow id, in order.
    fn queues(&self) -> impl Iterator<Item = &FlowQueue> + '_ {
        (0..self.core.max_flows()).filter_map(|f| self.core.attached(f))
    }

    /// The scheduling core.
    #[must_use]
    pub fn core(&self) -> &C {
        &self.core
    }

    /// The packets of `flow`, head first (for tests and inspection).
    pub fn flow_packets(&self, flow: FlowId) -> impl Iterator<Item = &Packet> + '_ {
        let fifo = self
            .core
            .attached(flow)
            .map_or(ChunkFifo::new(), |s| s.fifo);
        self.pool.iter(&fifo)
    }

    /// Checks the pool, the per-flow FIFOs, the core and their agreement.
    ///
    /// # Panics
    /// On a violated invariant, with a message naming it.
    pub fn check_invariants(&self) {
        self.pool.check_invariants(self.queues().map(|s| &s.fifo));
        for (f, slot) in self.queues().enumerate() {
            assert_eq!(
                self.core.is_backlogged(f as FlowId),
                !slot.fifo.is_empty(),
                "flow {f}: core backlog state disagrees with its FIFO"
            );
        }
        let busy = self.queues().filter(|s| !s.fifo.is_empty()).count();
        assert_eq!(
            self.core.backlogged() as usize,
            busy,
            "backlogged flow count"
        );
        assert_eq!(
            self.counters.implied_backlog(),
            self.pool.len() as u64,
            "accounting: enqueued != dequeued + dropped + queued"
        );
        self.core.check_invariants();
    }
}

impl FlowQueue {
    /// Why a packet of `len` bytes is refused, if it is: checked in this order.
    /// Out of line (only the packets that fail [`FlowQueue::admits`] come here) and
    /// given no packet, so that the packet path never spills the descriptor.
    #[cold]
    #[inline(never)]
    fn refusal(&self, len: u32) -> Option<DropReason> {
        if self.max_packet == 0 {
            Some(DropReason::UnknownFlow)
        } else if len > self.max_packet {
            Some(DropReason::TooLarge)
        } else if self.fifo.len() >= self.limit {
            Some(DropReason::LeafFull)
        } else {
            None
        }
    }

    /// Whether a packet of `len` bytes passes every admission rule, in one
    /// comparison per rule: a configured flow (an unconfigured one has
    /// `max_packet == 0`), a length in `1..=max_packet`, room under the limit.
    /// `false` may still admit (a zero-length packet): ask [`FlowQueue::refusal`].
    #[inline]
    fn admits(&self, len: u32) -> bool {
        len.wrapping_sub(1) < self.max_packet && self.fifo.len() < self.limit
    }
}

impl<C: PacketCore> Scheduler for PerFlow<C> {
    // NB: always inlined (and `dequeue`): called out of line, the descriptor
    // reaches `enqueue` through memory its caller has just written field by
    // field, and copying it into the pool with wide loads that straddle those
    // stores defeats store forwarding (half of FIFO's cost per packet).
    #[inline(always)]
    fn enqueue(&mut self, pkt: Packet, _now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        let Some(slot) = self.core.attached_mut(pkt.flow) else {
            return Err(self.counters.drop_packet(pkt, DropReason::UnknownFlow));
        };
        if !slot.admits(pkt.len) {
            if let Some(reason) = slot.refusal(pkt.len) {
                return Err(self.counters.drop_packet(pkt, reason));
            }
        }
        if let Err(pkt) = self.pool.push_back(&mut slot.fifo, pkt) {
            return Err(self.counters.drop_packet(pkt, DropReason::QueueFull));
        }
        if slot.fifo.len() == 1 {
            self.core.activate(pkt.flow, pkt.len);
        }
        Ok(())
    }

    #[inline(always)]
    fn dequeue(&mut self, _now: Nanos) -> Option<Packet> {
        let pool = &mut self.pool;
        // NB: the closure always inlined too: out of line (as in the PSPAT
        // arbiter's release loop, where the inliner's budget ran out) it returned
        // the packet through the stack, and the caller's reload of it waited on
        // those stores.
        let pkt = self.core.serve(
            #[inline(always)]
            |flow, slot| {
                let popped = pool.pop_front_next(&mut slot.fifo);
                debug_assert!(
                    popped.is_some(),
                    "core chose flow {flow}, whose FIFO is empty"
                );
                match popped {
                    Some((pkt, next)) => (Some(pkt), next),
                    None => (None, None),
                }
            },
        )??;
        self.counters.on_dequeue(pkt.len);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        // Every byte offered was dequeued, dropped at admission, or is queued.
        let c = &self.counters;
        Backlog {
            packets: self.pool.len() as u64,
            bytes: c.enqueued_bytes - c.dequeued_bytes - c.dropped.total_bytes(),
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn name(&self) -> &'static str {
        self.core.name()
    }
}

impl<C: PacketCore> FlowScheduler for PerFlow<C> {
    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError> {
        let max_flows = self.core.max_flows();
        let Some(slot) = self.core.attached(flow) else {
            return Err(ConfigError::FlowOutOfRange { flow, max_flows });
        };
        if slot.max_packet != 0 {
            return Err(ConfigError::DuplicateFlow { flow });
        }
        if cfg.limit == Some(0) {
            return Err(ConfigError::OutOfRange {
                what: "flow packet limit",
                value: 0,
                range: "1..",
            });
        }
        self.core.add_flow(flow, cfg)?;
        let slot = self
            .core
            .attached_mut(flow)
            .expect("a flow the core just configured is in range");
        slot.max_packet = cfg.max_packet;
        slot.limit = cfg.limit.unwrap_or(u32::MAX);
        Ok(())
    }

    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError> {
        let Some(slot) = self.core.attached(flow).filter(|s| s.max_packet != 0) else {
            return Err(ConfigError::NoSuchFlow { flow });
        };
        if !slot.fifo.is_empty() {
            return Err(ConfigError::FlowBusy {
                flow,
                packets: u64::from(slot.fifo.len()),
            });
        }
        self.core.remove_flow(flow)?;
        if let Some(slot) = self.core.attached_mut(flow) {
            slot.max_packet = 0;
        }
        Ok(())
    }

    /// The bytes are summed over the flow's packets (a per-flow byte count
    /// would cost the packet path a read-modify-write on each side).
    fn flow_backlog(&self, flow: FlowId) -> Backlog {
        self.core
            .attached(flow)
            .map_or(Backlog::default(), |s| Backlog {
                packets: u64::from(s.fifo.len()),
                bytes: self.pool.bytes(&s.fifo),
            })
    }
}

/// Checks a flow id against a core's size and returns it as an index.
fn flow_index(flow: FlowId, max_flows: u32) -> Result<usize, ConfigError> {
    if flow < max_flows {
        Ok(flow as usize)
    } else {
        Err(ConfigError::FlowOutOfRange { flow, max_flows })
    }
}

/// The per-flow record a core keeps in its [`FlowTable`]: the algorithm's hot
/// state (deficit, timestamps, links), small enough that the records of many
/// flows share a cache line.
pub(crate) trait FlowRecord: Clone + Default {
    /// Whether the flow is backlogged in the core.
    fn backlogged(&self) -> bool;
}

/// One flow's record in a [`FlowTable`]: the core's state and what the core's
/// user attached, side by side (with [`PerFlow`]'s 20 bytes: 64 for QFQ, WF²Q+
/// and STFQ, whose 32-byte states are aligned to 32; 48 for DRR's 24).
#[derive(Clone, Debug, Default)]
#[repr(C)]
pub(crate) struct Record<S, A> {
    pub(crate) core: S,
    pub(crate) attached: A,
}

/// The per-flow bookkeeping the four fair-queueing cores share: one hot record
/// per flow id (the core's state and its user's attached value), the
/// configurations kept apart from them (read only by configuration calls), and
/// the count of backlogged flows. It checks flow ids against the table's size,
/// refuses duplicates, removes only idle flows, and answers the [`FlowCore`]
/// queries every core has in common.
#[derive(Clone, Debug)]
pub(crate) struct FlowTable<S, A> {
    records: Vec<Record<S, A>>,
    configs: Vec<Option<FlowConfig>>,
    backlogged: u32,
}

impl<S: FlowRecord, A: Clone + Default> FlowTable<S, A> {
    /// Room for flow ids `0..max_flows`, none configured.
    pub(crate) fn new(max_flows: u32) -> Result<Self, ConfigError> {
        check_max_flows(max_flows)?;
        Ok(FlowTable {
            records: vec![Record::default(); max_flows as usize],
            configs: vec![None; max_flows as usize],
            backlogged: 0,
        })
    }
}

impl<S: FlowRecord, A> FlowTable<S, A> {
    /// Flow ids are `0..max_flows()`.
    #[inline]
    pub(crate) fn max_flows(&self) -> u32 {
        self.records.len() as u32
    }

    /// Configures `flow` with the record `make` builds from `cfg` (which may
    /// refuse it, leaving the table unchanged): the id must be in range and not
    /// configured yet. The attached value is left as it is.
    pub(crate) fn add(
        &mut self,
        flow: FlowId,
        cfg: FlowConfig,
        make: impl FnOnce(&FlowConfig) -> Result<S, ConfigError>,
    ) -> Result<(), ConfigError> {
        let i = flow_index(flow, self.max_flows())?;
        if self.configs[i].is_some() {
            return Err(ConfigError::DuplicateFlow { flow });
        }
        self.records[i].core = make(&cfg)?;
        self.configs[i] = Some(cfg);
        Ok(())
    }

    /// Unconfigures `flow`, which must be idle; returns what it was configured
    /// with. The attached value is left as it is.
    pub(crate) fn remove(&mut self, flow: FlowId) -> Result<FlowConfig, ConfigError> {
        let cfg = self.config(flow).ok_or(ConfigError::NoSuchFlow { flow })?;
        if self.is_backlogged(flow) {
            return Err(ConfigError::FlowBusy { flow, packets: 1 });
        }
        self.configs[flow as usize] = None;
        self.records[flow as usize].core = S::default();
        Ok(cfg)
    }

    /// The configuration of `flow`, if configured.
    pub(crate) fn config(&self, flow: FlowId) -> Option<FlowConfig> {
        self.configs.get(flow as usize).copied().flatten()
    }

    /// Whether `flow` is backlogged.
    #[inline]
    pub(crate) fn is_backlogged(&self, flow: FlowId) -> bool {
        self.records
            .get(flow as usize)
            .is_some_and(|r| r.core.backlogged())
    }

    /// Number of backlogged flows.
    #[inline]
    pub(crate) fn backlogged(&self) -> u32 {
        self.backlogged
    }

    /// A flow became backlogged.
    #[inline]
    pub(crate) fn activated(&mut self) {
        self.backlogged += 1;
    }

    /// A flow went idle.
    #[inline]
    pub(crate) fn went_idle(&mut self) {
        self.backlogged -= 1;
    }

    /// The core records, by flow id (for invariant checks).
    pub(crate) fn cores(&self) -> impl ExactSizeIterator<Item = &S> + '_ {
        self.records.iter().map(|r| &r.core)
    }

    /// What is attached to `flow`.
    #[inline]
    pub(crate) fn attached(&self, flow: FlowId) -> Option<&A> {
        self.records.get(flow as usize).map(|r| &r.attached)
    }

    /// What is attached to `flow`, mutably.
    #[inline]
    pub(crate) fn attached_mut(&mut self, flow: FlowId) -> Option<&mut A> {
        self.records.get_mut(flow as usize).map(|r| &mut r.attached)
    }

    /// The core's state for `flow`, mutably; `None` for an id out of range (the
    /// lists' end marker among them).
    #[inline(always)]
    pub(crate) fn core_mut(&mut self, flow: FlowId) -> Option<&mut S> {
        self.records.get_mut(flow as usize).map(|r| &mut r.core)
    }

    /// The whole record of `flow`, mutably; `None` for an id out of range (the
    /// lists' end marker among them).
    #[inline(always)]
    pub(crate) fn record_mut_checked(&mut self, flow: FlowId) -> Option<&mut Record<S, A>> {
        self.records.get_mut(flow as usize)
    }

    /// The whole record of `flow`, if `flow` is in range.
    #[inline(always)]
    pub(crate) fn record_checked(&self, flow: FlowId) -> Option<&Record<S, A>> {
        self.records.get(flow as usize)
    }

    /// The whole record of `flow`, mutably: one lookup for the core's state and
    /// the attached value.
    #[inline(always)]
    pub(crate) fn record_mut(&mut self, flow: FlowId) -> &mut Record<S, A> {
        &mut self.records[flow as usize]
    }
}

impl<S, A> core::ops::Index<FlowId> for FlowTable<S, A> {
    type Output = S;
    #[inline]
    fn index(&self, flow: FlowId) -> &S {
        &self.records[flow as usize].core
    }
}

impl<S, A> core::ops::IndexMut<FlowId> for FlowTable<S, A> {
    #[inline]
    fn index_mut(&mut self, flow: FlowId) -> &mut S {
        &mut self.records[flow as usize].core
    }
}

/// Largest number of flows a core may be sized for (flow ids are `u32` and
/// `u32::MAX` is reserved as the end-of-list marker).
pub const MAX_FLOWS: u32 = 1 << 24;

/// Checks the flow count given to a core's constructor.
fn check_max_flows(max_flows: u32) -> Result<(), ConfigError> {
    if max_flows == 0 || max_flows > MAX_FLOWS {
        return Err(ConfigError::OutOfRange {
            what: "number of flows",
            value: u64::from(max_flows),
            range: "1..=16777216",
        });
    }
    Ok(())
}
