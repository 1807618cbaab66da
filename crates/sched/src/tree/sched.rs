//! How one node orders its units: a ranked integer priority queue driven by a
//! transaction, hClock's pair of queues, a fair-queueing core, or a calendar queue
//! (see [`cq`](super::cq)).
//!
//! The fair-queueing cores commit to the head length a unit reports when it is
//! activated or served (see [`FlowCore`]); a later packet that changes a child's
//! head is charged with the child's next service.
//!
//! Every variant answers the same five calls, each O(1) for the bucketed queues
//! (O(log n) for the heaps): `activate` (a unit became backlogged and eligible),
//! `on_enqueue` (a packet entered a queued unit's subtree), `select` (which unit
//! goes next; repeatable), `served` (the selected unit sent a packet; it stays with
//! its next head or leaves), and `is_active`.

use eiffel_queue::{prefetch, AnyQueue, Handle, PriorityQueue, QueueKind};

use super::cq::CalendarSched;
use super::discipline::FairQueue;
use super::ets::Ets;
use super::levels::Levels;
use super::select::{QueuePlan, HCLOCK_LEAD};
use super::txn::{vt_cost, Builtin, Unit};
use crate::flows::FlowCore;
use crate::packet::{Nanos, Packet};
use crate::scheduler::{ConfigError, FlowConfig};
use crate::time::Rate;
use crate::{DrrCore, QfqCore, Wf2qCore};

/// A unit's next packet as its parent's discipline learns it after a send:
/// the packet, and its length as the unit keeps it (a FIFO's copy), so that a
/// discipline that needs only the length (the fair-queueing cores) does not
/// read the packet, a cache miss in a large tree.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Next<'a> {
    pub(crate) pkt: &'a Packet,
    pub(crate) len: u32,
}

/// What a discipline said of its next unit right after a send
/// ([`NodeSched::served_peek`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum After {
    /// The unit it serves next.
    Unit(u32),
    /// No unit is queued.
    Empty,
    /// Not asked: choosing may change the discipline's state (hClock's phase,
    /// a calendar's rotation), so the caller asks when it needs the answer.
    Ask,
    /// Not a discipline's answer: the node is a FIFO leaf, and what goes with
    /// it is the leaf's own next packet, read at the pop.
    Own,
}

/// A ranked node: one integer priority queue of units and a transaction.
// NB: `repr(C)`, the queue last: what an activation reads first (the unit
// tables, the transaction) and the start of the queue share the first lines,
// which a burst enqueue prefetches.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Ranked {
    handles: Vec<Option<Handle>>,
    pub(crate) units: Vec<Unit>,
    /// Units are flows of a per-flow leaf (strict priority then reads the head's
    /// rank instead of a configured priority).
    is_flow: bool,
    pub(crate) txn: Builtin,
    queue: AnyQueue<u32>,
}

/// hClock (Billaud and Gulati, EuroSys'13) as a node discipline, with mClock's
/// semantics (Gulati, Merchant and Varman, OSDI'10): a unit's reservation is a
/// floor, its limit a cap, and shares divide what is left. In the fluid limit
/// every backlogged unit gets `clamp(w * x, r, l)` of the capacity, with the
/// level `x` such that the allocations add up to it.
///
/// Two tags per unit, as in mClock. The reservation tag (`Unit::start`, in ns)
/// advances by `L / R` for every packet served in the reservation phase; whenever
/// the smallest reservation tag is due (`<= now`) that unit is served, so every
/// reservation is met first. Otherwise the unit with the smallest share tag goes
/// (`Unit::finish`, virtual time). Every packet, whichever phase served it, is
/// charged `L * VT_SCALE / weight` to the unit's share tag: service received
/// through a reservation counts against the unit's share, so a unit whose
/// reservation exceeds its weighted part of the capacity gets its reservation
/// and nothing more, and one whose share exceeds its reservation gets its share
/// and not the sum. Service in the share phase leaves the reservation tag alone
/// (mClock lowers the R tags of the rest of the unit's requests by `1/r`, which
/// comes to the same), so the reservation phase keeps pacing at exactly `R`. A
/// unit's limit is its rate limit in the tree's shaper. A unit entering the
/// queue starts at `max(tag, now)` (reservation) and `max(tag, V)` (shares, `V`
/// the share tag of the last unit served by shares), so idle time earns no
/// credit.
///
/// Deviation: mClock lets the share tag of a unit served mostly by its
/// reservation run ahead of the others without bound; here reservation service
/// moves a share tag at most to `V + lead`, `lead` the share cost of four largest
/// packets at the smallest weight (at most half the share queue's window). The
/// tags of the units served by shares lie within one such packet of `V`, so a
/// unit held at the lead still loses every share-phase selection: the allocation
/// is the same, the tags stay inside the window of a bucketed queue, and a unit
/// does not carry a debt from a past surplus of reserved service into a later
/// period where its share is larger.
#[derive(Debug)]
pub(crate) struct Hclock {
    reservations: AnyQueue<u32>,
    shares: AnyQueue<u32>,
    rh: Vec<Option<Handle>>,
    ph: Vec<Option<Handle>>,
    pub(crate) units: Vec<Unit>,
    vtime: u64,
    /// Furthest a share tag may lead `vtime` through reserved service: the share
    /// cost of `HCLOCK_LEAD` largest packets at the smallest weight.
    lead: u64,
    /// Whether the last `select` chose by reservation.
    by_reservation: bool,
}

/// A fair-queueing core ordering a node's units by their head lengths (the cores of
/// [`crate::flows`]); units are the core's flow ids, configured with the unit's
/// weight and the tree's MTU as maximum packet.
#[derive(Debug)]
pub(crate) enum Core {
    Qfq(QfqCore),
    Drr(DrrCore),
    Wf2q(Wf2qCore),
}

macro_rules! core {
    ($c:expr, $x:ident => $e:expr) => {
        match $c {
            Core::Qfq($x) => $e,
            Core::Drr($x) => $e,
            Core::Wf2q($x) => $e,
        }
    };
}

impl Core {
    /// A core of the given kind over `units`.
    pub(crate) fn new(kind: FairQueue, units: &[Unit], mtu: u32) -> Result<Self, ConfigError> {
        let n = units.len() as u32;
        let mut core = match kind {
            FairQueue::Qfq => Core::Qfq(QfqCore::new(n, mtu)?),
            FairQueue::Drr => Core::Drr(DrrCore::new(n)?),
            FairQueue::Wf2q => Core::Wf2q(Wf2qCore::new(n)?),
        };
        for (f, u) in units.iter().enumerate() {
            let cfg = FlowConfig::weight(u.weight).max_packet(mtu);
            core!(&mut core, c => c.add_flow(f as u32, cfg))?;
        }
        Ok(core)
    }

    pub(crate) fn name(&self) -> &'static str {
        core!(self, c => c.name())
    }
}

/// A node's ordering of its units.
// NB: a ranked node's queue (up to 576 bytes) is boxed apart: inline, every
// discipline's allocation took its size, 656 bytes. `eiffel bench hqos` at 64K
// queues has 8,000 strict and DRR nodes of at most 224 bytes, whose boxes then
// spread over three times the memory (boxed apart: 0.41x to 0.47x of
// rte_sched's rate there). A ranked node pays one more dependent load a visit.
#[derive(Debug)]
pub(crate) enum NodeSched {
    Ranked(Box<Ranked>),
    /// `strict` over children of distinct priorities below 64: one word (see
    /// [`Levels`]).
    Levels(Levels),
    /// `ets`: strict priority between levels, DRR within one (see [`Ets`]).
    Ets(Ets),
    Hclock(Box<Hclock>),
    /// A fair-queueing core and the per-unit state the tree keeps beside it.
    Core(Core, Vec<Unit>),
    /// A calendar-queue discipline (`cq-*`).
    Calendar(Box<CalendarSched>),
}

fn queue_of(plan: &QueuePlan) -> Result<AnyQueue<u32>, ConfigError> {
    AnyQueue::new(plan.kind, plan.config).map_err(|source| ConfigError::Queue {
        what: format!("queue {}", plan.kind),
        source,
    })
}

impl Ranked {
    pub(crate) fn new(
        plan: &QueuePlan,
        units: Vec<Unit>,
        txn: Builtin,
        is_flow: bool,
    ) -> Result<Self, ConfigError> {
        Ok(Ranked {
            queue: queue_of(plan)?,
            handles: vec![None; units.len()],
            units,
            txn,
            is_flow,
        })
    }

    pub(crate) fn kind(&self) -> QueueKind {
        self.queue.kind()
    }

    pub(crate) fn queue(&self) -> &AnyQueue<u32> {
        &self.queue
    }
}

impl Hclock {
    pub(crate) fn new(
        rplan: &QueuePlan,
        pplan: &QueuePlan,
        units: Vec<Unit>,
        mtu: u32,
    ) -> Result<Self, ConfigError> {
        let min_weight = units.iter().map(|u| u.weight).min().unwrap_or(1);
        // At most half the share queue's window (a policy may set a small one).
        let half_window = match pplan.kind {
            QueueKind::BinaryHeap => u64::MAX,
            _ => {
                pplan
                    .config
                    .granularity
                    .saturating_mul(pplan.config.buckets as u64)
                    / 2
            }
        };
        Ok(Hclock {
            lead: (vt_cost(mtu, min_weight) * HCLOCK_LEAD).min(half_window),
            reservations: queue_of(rplan)?,
            shares: queue_of(pplan)?,
            rh: vec![None; units.len()],
            ph: vec![None; units.len()],
            units,
            vtime: 0,
            by_reservation: false,
        })
    }

    pub(crate) fn queues(&self) -> (&AnyQueue<u32>, &AnyQueue<u32>) {
        (&self.reservations, &self.shares)
    }
}

/// Time to send `len` bytes at `rate`, in ns (at least 1).
#[inline]
fn time_cost(len: u32, rate: Rate) -> u64 {
    rate.tx_time(u64::from(len)).as_nanos().max(1)
}

/// Inserts or re-ranks `u` in `q`.
#[inline]
fn place(q: &mut AnyQueue<u32>, handles: &mut [Option<Handle>], u: u32, rank: u64) {
    match handles[u as usize] {
        Some(h) => {
            let moved = q.set_rank(h, rank);
            debug_assert!(moved.is_ok(), "re-ranking unit {u}: {moved:?}");
        }
        None => match q.insert(rank, u) {
            Ok(h) => handles[u as usize] = Some(h),
            Err(_) => unreachable!("a node's queue holds one entry per unit"),
        },
    }
}

#[inline]
fn take(q: &mut AnyQueue<u32>, handles: &mut [Option<Handle>], u: u32) {
    if let Some(h) = handles[u as usize].take() {
        let removed = q.remove(h);
        debug_assert!(removed.is_some(), "unit {u} missing from its queue");
    }
}

impl NodeSched {
    pub(crate) fn units_mut(&mut self) -> &mut [Unit] {
        match self {
            NodeSched::Ranked(r) => &mut r.units,
            NodeSched::Levels(l) => &mut l.units,
            NodeSched::Ets(e) => &mut e.units,
            NodeSched::Hclock(h) => &mut h.units,
            NodeSched::Core(_, units) => units,
            NodeSched::Calendar(c) => &mut c.units,
        }
    }

    /// Hints the CPU to fetch the discipline's state and unit `u`'s (see
    /// [`PolicyTree::enqueue_burst`](super::PolicyTree::enqueue_burst)).
    #[inline]
    pub(crate) fn prefetch_unit(&self, u: u32) {
        let u = u as usize;
        match self {
            NodeSched::Ranked(r) => {
                if let (Some(unit), Some(h)) = (r.units.get(u), r.handles.get(u)) {
                    prefetch(unit);
                    prefetch(h);
                }
            }
            NodeSched::Hclock(h) => {
                if let Some(unit) = h.units.get(u) {
                    prefetch(unit);
                }
            }
            // One word, in the lines already fetched.
            NodeSched::Levels(_) => {}
            NodeSched::Ets(e) => e.prefetch_unit(u as u32),
            NodeSched::Core(_, units) => {
                if let Some(unit) = units.get(u) {
                    prefetch(unit);
                }
            }
            NodeSched::Calendar(c) => {
                if let Some(unit) = c.units.get(u) {
                    prefetch(unit);
                }
            }
        }
    }

    /// Units currently queued.
    pub(crate) fn active(&self) -> usize {
        match self {
            NodeSched::Ranked(r) => r.queue.len(),
            NodeSched::Levels(l) => l.len(),
            NodeSched::Ets(e) => e.len(),
            NodeSched::Hclock(h) => h.shares.len(),
            NodeSched::Core(c, _) => core!(c, x => x.backlogged()) as usize,
            NodeSched::Calendar(c) => c.len(),
        }
    }

    /// Whether no unit is queued ([`NodeSched::active`] is 0).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            NodeSched::Ets(e) => e.is_empty(),
            _ => self.active() == 0,
        }
    }

    pub(crate) fn is_active(&self, u: u32) -> bool {
        match self {
            NodeSched::Ranked(r) => r.handles[u as usize].is_some(),
            NodeSched::Levels(l) => l.is_active(u),
            NodeSched::Ets(e) => e.is_active(u),
            NodeSched::Hclock(h) => h.ph[u as usize].is_some(),
            NodeSched::Core(c, _) => core!(c, x => x.is_backlogged(u)),
            NodeSched::Calendar(c) => c.is_active(u),
        }
    }

    /// Whether a packet entering the subtree of a queued unit never changes this
    /// node's order (`on_enqueue` does nothing): fair-queueing cores, hClock,
    /// `wfq`, `strict` over children (ranked by their configured priority), and
    /// rank programs that read nothing an arrival changes.
    pub(crate) fn ignores_arrivals(&self) -> bool {
        match self {
            NodeSched::Core(..)
            | NodeSched::Hclock(_)
            | NodeSched::Levels(_)
            | NodeSched::Ets(_) => true,
            NodeSched::Ranked(r) => match r.txn {
                Builtin::Wfq { .. } => true,
                Builtin::Strict => !r.is_flow,
                Builtin::Program(ref p) => p.ignores_arrivals(),
                _ => false,
            },
            NodeSched::Calendar(_) => false,
        }
    }

    /// Whether `select` is `peek`: no side effect, no dependence on `now`
    /// (ranked nodes and fair-queueing cores, whose `peek` is repeatable).
    pub(crate) fn selects_purely(&self) -> bool {
        matches!(
            self,
            NodeSched::Ranked(_) | NodeSched::Levels(_) | NodeSched::Ets(_) | NodeSched::Core(..)
        )
    }

    #[inline]
    pub(crate) fn activate(&mut self, u: u32, head: &Packet, now: Nanos) {
        match self {
            NodeSched::Ranked(r) => {
                let rank = r
                    .txn
                    .on_activate(u, &mut r.units[u as usize], head, now, r.is_flow);
                place(&mut r.queue, &mut r.handles, u, rank);
            }
            NodeSched::Levels(l) => l.activate(u),
            NodeSched::Ets(e) => e.activate(u, head.len),
            NodeSched::Hclock(h) => {
                let unit = &mut h.units[u as usize];
                if !unit.reservation.is_zero() {
                    unit.start = unit.start.max(now);
                    let rank = unit.start;
                    place(&mut h.reservations, &mut h.rh, u, rank);
                }
                let unit = &mut h.units[u as usize];
                unit.finish = unit.finish.max(h.vtime);
                let rank = unit.finish;
                place(&mut h.shares, &mut h.ph, u, rank);
            }
            NodeSched::Core(c, _) => core!(c, x => x.activate(u, head.len)),
            NodeSched::Calendar(c) => c.activate(u, head, now),
        }
    }

    #[inline]
    pub(crate) fn on_enqueue(&mut self, u: u32, pkt: &Packet, head: &Packet, now: Nanos) {
        match self {
            NodeSched::Ranked(r) => {
                if let Some(rank) =
                    r.txn
                        .on_enqueue(u, &mut r.units[u as usize], pkt, head, now, r.is_flow)
                {
                    place(&mut r.queue, &mut r.handles, u, rank);
                }
            }
            NodeSched::Calendar(c) => c.on_enqueue(u, head, now),
            NodeSched::Hclock(_)
            | NodeSched::Core(..)
            | NodeSched::Levels(_)
            | NodeSched::Ets(_) => {}
        }
    }

    /// A packet joined flow `u` of a per-flow leaf (before it is activated or
    /// re-ranked): disciplines that rank each packet on arrival record it.
    #[inline]
    pub(crate) fn on_arrival(&mut self, u: u32, pkt: &Packet) {
        if let NodeSched::Calendar(c) = self {
            c.on_arrival(u, pkt);
        }
    }

    /// Whether the discipline refuses `pkt` for unit `u`, which has `queued` bytes
    /// in its subtree (the leaky bucket filter).
    #[inline]
    pub(crate) fn refuses(&self, u: u32, pkt: &Packet, queued: u64, now: Nanos) -> bool {
        match self {
            NodeSched::Calendar(c) => c.refuses(u, pkt, queued, now),
            _ => false,
        }
    }

    /// When a node that holds units but may not send any by `now` can next send
    /// (non-work-conserving disciplines); `None` if it may send now or is empty.
    #[inline]
    pub(crate) fn hold(&self, now: Nanos) -> Option<Nanos> {
        match self {
            NodeSched::Calendar(c) => c.hold(now),
            _ => None,
        }
    }

    /// The unit to serve next (the same one until the next change).
    #[inline(always)]
    pub(crate) fn select(&mut self, now: Nanos) -> Option<u32> {
        match self {
            NodeSched::Ranked(r) => r.queue.peek().map(|(_, _, &u)| u),
            NodeSched::Levels(l) => l.select(),
            NodeSched::Ets(e) => e.select(),
            NodeSched::Hclock(h) => {
                if let Some((_, tag, &u)) = h.reservations.peek() {
                    if tag <= now {
                        h.by_reservation = true;
                        return Some(u);
                    }
                }
                h.by_reservation = false;
                h.shares.peek().map(|(_, _, &u)| u)
            }
            NodeSched::Core(c, _) => core!(c, x => x.peek()),
            NodeSched::Calendar(c) => c.select(now),
        }
    }

    /// The unit `select` would return, without the side effects of the link's
    /// request (a calendar's rotation): what the tree reads to rank a node's head
    /// while a packet arrives.
    #[inline(always)]
    pub(crate) fn peek(&mut self, now: Nanos) -> Option<u32> {
        match self {
            NodeSched::Calendar(c) => c.peek(now),
            _ => self.select(now),
        }
    }

    /// `u`, the unit `select` returned, sent `sent`; it stays queued with head
    /// `next`, or leaves when `next` is `None`.
    #[inline(always)]
    pub(crate) fn served(&mut self, u: u32, sent: &Packet, next: Option<Next<'_>>, now: Nanos) {
        let next_len = next.map(|n| n.len);
        let next = next.map(|n| n.pkt);
        match self {
            NodeSched::Levels(l) => l.served(u, next.is_some()),
            NodeSched::Ets(e) => e.served(u, next_len),
            NodeSched::Ranked(r) => {
                let rank =
                    r.txn
                        .on_dequeue(u, &mut r.units[u as usize], sent, next, now, r.is_flow);
                if next.is_some() {
                    place(&mut r.queue, &mut r.handles, u, rank);
                } else {
                    take(&mut r.queue, &mut r.handles, u);
                }
            }
            NodeSched::Hclock(h) => {
                let unit = &mut h.units[u as usize];
                if h.by_reservation {
                    let rate = unit.reservation;
                    unit.start += time_cost(sent.len, rate);
                    // Reserved service counts against the share too (a floor,
                    // not an addition), up to `lead` ahead of the share phase.
                    let charged = unit.finish + vt_cost(sent.len, unit.weight);
                    let cap = (h.vtime + h.lead).max(unit.finish);
                    unit.finish = charged.min(cap);
                } else {
                    h.vtime = h.vtime.max(unit.finish);
                    unit.finish += vt_cost(sent.len, unit.weight);
                }
                let (r_tag, p_tag, reserved) =
                    (unit.start, unit.finish, !unit.reservation.is_zero());
                if next.is_some() {
                    if reserved {
                        place(&mut h.reservations, &mut h.rh, u, r_tag);
                    }
                    place(&mut h.shares, &mut h.ph, u, p_tag);
                } else {
                    take(&mut h.reservations, &mut h.rh, u);
                    take(&mut h.shares, &mut h.ph, u);
                }
            }
            NodeSched::Core(c, _) => core!(c, x => x.served(u, next_len)),
            NodeSched::Calendar(c) => c.served(u, sent, next, now),
        }
    }

    /// [`NodeSched::served`], then the unit to serve next where choosing it
    /// changes nothing (strict priority by levels, ranked nodes, the
    /// fair-queueing cores: their `select` is a pure peek). A dequeue's
    /// unwinding asks the parent's next unit right after reporting the send;
    /// this answers both with one dispatch instead of two for the levels and
    /// the cores. A ranked node still dispatches twice (its report and its
    /// choice each match on the queue kind inside), but the caller's second
    /// call is saved.
    #[inline(always)]
    pub(crate) fn served_peek(
        &mut self,
        u: u32,
        sent: &Packet,
        next: Option<Next<'_>>,
        now: Nanos,
    ) -> After {
        let after = |unit: Option<u32>| unit.map_or(After::Empty, After::Unit);
        match self {
            NodeSched::Levels(l) => {
                l.served(u, next.is_some());
                after(l.select())
            }
            NodeSched::Ets(e) => after(e.served_select(u, next.map(|n| n.len))),
            NodeSched::Core(c, _) => {
                let next_len = next.map(|n| n.len);
                core!(c, x => after(x.served_peek(u, next_len)))
            }
            NodeSched::Ranked(_) => {
                self.served(u, sent, next, now);
                after(self.select(now))
            }
            NodeSched::Hclock(_) | NodeSched::Calendar(_) => {
                self.served(u, sent, next, now);
                After::Ask
            }
        }
    }

    /// Whether a run may defer this node's share of its sends (see
    /// `tree::run`): strict priority by levels, ETS and DRR cores.
    pub(crate) fn defers_sends(&self) -> bool {
        matches!(
            self,
            NodeSched::Levels(_) | NodeSched::Ets(_) | NodeSched::Core(Core::Drr(_), _)
        )
    }

    /// Bytes unit `u`, the one just served, may still send in its turn, its
    /// next packet included: its DRR deficit; `None` where nothing but emptying
    /// ends a turn (strict priority).
    pub(crate) fn turn_room(&self, u: u32) -> Option<u64> {
        match self {
            NodeSched::Levels(_) => None,
            NodeSched::Ets(e) => e.turn_room(u),
            NodeSched::Core(Core::Drr(x), _) => Some(x.deficit(u)),
            _ => unreachable!("runs pass only DRR and strict-priority levels"),
        }
    }

    /// Unit `u` sent `bytes` in packets this node's choice did not see (it
    /// stayed the choice throughout), and has a packet of `next_len` bytes next.
    pub(crate) fn served_run(&mut self, u: u32, bytes: u64, next_len: u32) {
        match self {
            NodeSched::Levels(_) => {}
            NodeSched::Ets(e) => e.served_run(u, bytes, next_len),
            NodeSched::Core(Core::Drr(x), _) => x.served_run(u, bytes, next_len),
            _ => unreachable!("runs pass only DRR and strict-priority levels"),
        }
    }

    /// Checks that the queued units are exactly those flagged active.
    pub(crate) fn check_invariants(&self) {
        match self {
            NodeSched::Ranked(r) => {
                r.queue.check_invariants();
                let flagged = r.handles.iter().filter(|h| h.is_some()).count();
                assert_eq!(
                    flagged,
                    r.queue.len(),
                    "ranked node: handles vs queue length"
                );
            }
            NodeSched::Hclock(h) => {
                h.reservations.check_invariants();
                h.shares.check_invariants();
                assert_eq!(
                    h.ph.iter().filter(|x| x.is_some()).count(),
                    h.shares.len(),
                    "hclock share queue"
                );
                assert_eq!(
                    h.rh.iter().filter(|x| x.is_some()).count(),
                    h.reservations.len(),
                    "hclock reservation queue"
                );
            }
            NodeSched::Levels(l) => l.check_invariants(),
            NodeSched::Ets(e) => e.check_invariants(),
            NodeSched::Core(c, _) => core!(c, x => x.check_invariants()),
            NodeSched::Calendar(c) => c.check_invariants(),
        }
    }
}
