//! The calendar-queue disciplines as node disciplines of the policy tree: what
//! [`CalendarPolicy`] documents (their semantics, bounds and departures from the
//! paper), implemented over [`eiffel_queue::Calendar`].

use eiffel_queue::{
    Calendar, CalendarConfig, CalendarStats, Handle, PriorityQueue, QueueConfig, QueueKind,
    QueueStats, Rotation,
};

use super::discipline::{CalendarPolicy, Discipline, EdfRotation, DEFAULT_PERIOD};
use super::select::QueuePlan;
use super::spec::TreeSpec;
use super::txn::Unit;
use super::validate::calendar_levels;
use crate::packet::{Nanos, Packet};
use crate::scheduler::ConfigError;
use crate::time::{Rate, Rounding};

/// The fairness bound of `cq-wfq` between two units continuously backlogged over
/// an interval: the largest difference of their services normalized by weight,
/// `|W_i / w_i - W_j / w_j|`, in bytes (see [`CalendarPolicy`]). `quantum`
/// is the bytes per round at weight 1, `max_i` and `max_j` the largest packets of
/// the two units.
#[must_use]
pub fn fairness_bound(quantum: u32, (max_i, w_i): (u32, u32), (max_j, w_j): (u32, u32)) -> f64 {
    2.0 * f64::from(quantum)
        + f64::from(max_i) / f64::from(w_i.max(1))
        + f64::from(max_j) / f64::from(w_j.max(1))
}

/// The B-WFI bound of `cq-wfq` for unit `k`: the most bytes it falls behind its
/// share `phi_k` of the link's service over an interval during which it has
/// packets queued, `2 Q w_k + L_k + phi_k * sum_j L_j` (see
/// [`CalendarPolicy`]). `units` lists every unit's `(largest packet, weight)`.
#[must_use]
pub fn b_wfi_bound(quantum: u32, k: usize, units: &[(u32, u32)]) -> f64 {
    let total_w: f64 = units.iter().map(|&(_, w)| f64::from(w)).sum();
    let (l_k, w_k) = units[k];
    let phi = f64::from(w_k) / total_w;
    let sum_l: f64 = units.iter().map(|&(l, _)| f64::from(l)).sum();
    2.0 * f64::from(quantum) * f64::from(w_k) + f64::from(l_k) + phi * sum_l
}

/// Fraction bits of the policer's fixed-point nanoseconds.
const FRAC: u32 = 16;

/// Time to send `bytes` at `rate`, in fixed-point nanoseconds.
#[inline]
fn cost(rate: Rate, bytes: u64) -> u128 {
    rate.tx_time_fixed(bytes, FRAC, Rounding::Down)
}

/// `f(k)`: days after the current round for a packet with `k` bytes remaining,
/// `ceil(log2(ceil(k / quantum)))`, 0 for `k <= quantum` (and for 0, unknown).
#[inline]
fn log_days(remaining: u64, quantum: u64) -> u64 {
    if remaining <= quantum {
        0
    } else {
        u64::from(64 - ((remaining - 1) / quantum).leading_zeros())
    }
}

/// Round of a `cq-wfq` unit's head of `len` bytes: the round of its last byte,
/// with the burst allowance applied from the unit's base (`burst` 0: none).
#[inline]
fn wfq_round(unit: &Unit, len: u32, quantum: u64, burst: u64) -> u64 {
    let w = u64::from(unit.weight.max(1));
    let q = quantum * w;
    let last = unit.start + u64::from(len.max(1)) - 1;
    let base = unit.finish;
    let b = last - base;
    let allowance = burst.saturating_mul(w);
    if b.saturating_add(q) >= allowance {
        return last / q;
    }
    // `b < allowance - q`: the divisor exceeds the quantum.
    base / q + b / (allowance - b)
}

const NIL: u32 = u32::MAX;

/// One flow's FIFO of packet days in a [`TagPool`].
#[derive(Clone, Copy, Debug)]
struct Tags {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for Tags {
    fn default() -> Self {
        Tags {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// Storage for the day of every queued packet of a `cq-pfabric-fair` leaf:
/// intrusive singly linked FIFOs, one per flow, in one preallocated slab.
#[derive(Clone, Debug)]
struct TagPool {
    day: Vec<u64>,
    next: Vec<u32>,
    free: u32,
}

impl TagPool {
    fn new(capacity: usize) -> Self {
        TagPool {
            day: vec![0; capacity],
            next: (0..capacity)
                .map(|i| if i + 1 < capacity { i as u32 + 1 } else { NIL })
                .collect(),
            free: if capacity == 0 { NIL } else { 0 },
        }
    }

    fn push(&mut self, t: &mut Tags, day: u64) {
        let i = self.free;
        assert!(i != NIL, "tag pool sized to the packet capacity");
        self.free = self.next[i as usize];
        self.day[i as usize] = day;
        self.next[i as usize] = NIL;
        if t.tail == NIL {
            t.head = i;
        } else {
            self.next[t.tail as usize] = i;
        }
        t.tail = i;
        t.len += 1;
    }

    fn front(&self, t: &Tags) -> Option<u64> {
        (t.head != NIL).then(|| self.day[t.head as usize])
    }

    fn pop(&mut self, t: &mut Tags) {
        let i = t.head;
        debug_assert!(i != NIL, "popping an empty tag FIFO");
        if i == NIL {
            return;
        }
        t.head = self.next[i as usize];
        if t.head == NIL {
            t.tail = NIL;
        }
        t.len -= 1;
        self.next[i as usize] = self.free;
        self.free = i;
    }
}

/// What a calendar node computes ranks with, and its state.
#[derive(Clone, Debug)]
enum Policy {
    /// `cq-wfq` (`burst` 0) and `cq-wfq-burst`. Per unit, `Unit::start` is the
    /// bytes charged and `Unit::finish` the base of the burst allowance.
    Wfq { quantum: u64, burst: u64 },
    /// `cq-edf`: with `clock`, ranks are deadlines on a physical calendar; else
    /// days on a logical one, with Fig. 3's skew.
    Edf {
        period: u64,
        clock: bool,
        delta: i128,
        last_rot: Nanos,
    },
    /// `cq-policer`; ranks are release times (ns) on a non-work-conserving
    /// physical calendar.
    Policer {
        period: u64,
        rate: Rate,
        bucket: u64,
        /// The tree's shaper precision: days begun by `now + slack` are released.
        slack: Nanos,
        /// Per unit, the time its head may start (fixed point).
        vt: Vec<u128>,
    },
    /// `cq-pfabric-fair`. Per unit, `Unit::start` is the day of its latest packet.
    PfabricFair {
        quantum: u64,
        pool: TagPool,
        tags: Vec<Tags>,
    },
}

/// A node ordering its units on a calendar queue.
#[derive(Clone, Debug)]
pub(crate) struct CalendarSched {
    cal: Calendar<u32>,
    handles: Vec<Option<Handle>>,
    pub(crate) units: Vec<Unit>,
    policy: Policy,
    /// The discipline's name.
    name: &'static str,
    /// Units are the flows of a per-flow leaf (whose heads only change when
    /// served).
    is_flow: bool,
}

/// What calendar `policy` of a tree of `mtu` and `capacity` computes ranks
/// with over `units` units, how its calendar rotates and the length of a day
/// (1 for logical calendars); `slack` is the tree's shaper precision.
fn ranking(
    policy: &CalendarPolicy,
    mtu: u32,
    capacity: u32,
    units: usize,
    slack: Nanos,
) -> (Policy, Rotation, u64) {
    let quantum = u64::from(policy.quantum().unwrap_or(mtu).max(1));
    let period = policy.period().unwrap_or(DEFAULT_PERIOD).as_nanos().max(1);
    let mtu = u64::from(mtu);
    match *policy {
        CalendarPolicy::Wfq { .. } => (Policy::Wfq { quantum, burst: 0 }, Rotation::Logical, 1),
        CalendarPolicy::WfqBurst {
            burst_allowance, ..
        } => {
            let burst = burst_allowance.unwrap_or(8 * mtu);
            (Policy::Wfq { quantum, burst }, Rotation::Logical, 1)
        }
        CalendarPolicy::Edf { rotation, .. } => {
            let clock = rotation == EdfRotation::Clock;
            let edf = Policy::Edf {
                period,
                clock,
                delta: 0,
                last_rot: 0,
            };
            if clock {
                let rotation = Rotation::Physical {
                    work_conserving: true,
                };
                (edf, rotation, period)
            } else {
                (edf, Rotation::Logical, 1)
            }
        }
        CalendarPolicy::Policer { rate, bucket, .. } => {
            let policer = Policy::Policer {
                period,
                rate: Rate::from_bps(rate.bps().max(1)),
                bucket: bucket.unwrap_or(8 * mtu),
                slack,
                vt: vec![0; units],
            };
            let rotation = Rotation::Physical {
                work_conserving: false,
            };
            (policer, rotation, period)
        }
        CalendarPolicy::PfabricFair { .. } => {
            let fair = Policy::PfabricFair {
                quantum,
                pool: TagPool::new(capacity as usize),
                tags: vec![Tags::default(); units],
            };
            (fair, Rotation::Logical, 1)
        }
    }
}

/// The plan `eiffel check` shows for a calendar of `levels` and `reach` days.
fn describe(
    name: &str,
    levels: &[usize],
    reach: u64,
    units: usize,
    rotation: Rotation,
    granularity: u64,
) -> QueuePlan {
    let shape = levels
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(" x ");
    let mode = match rotation {
        Rotation::Logical => "logical rotation".to_string(),
        Rotation::Physical { work_conserving } => format!(
            "physical rotation every {granularity} ns, {}",
            if work_conserving {
                "work-conserving"
            } else {
                "non-work-conserving"
            }
        ),
    };
    QueuePlan {
        kind: QueueKind::Calendar,
        config: QueueConfig::new(levels[0], units.max(1)).granularity(granularity),
        automatic: false,
        reason: format!("{name}: calendar of {shape} days (reach {reach}), {mode}"),
    }
}

impl CalendarSched {
    /// The calendar discipline of node `i` of `spec` over `units`; `slack` is the
    /// tree's shaper precision. Returns it with the plan `eiffel check` shows.
    ///
    /// # Panics
    /// If node `i` does not run a calendar discipline.
    pub(crate) fn new(
        spec: &TreeSpec,
        i: usize,
        units: Vec<Unit>,
        is_flow: bool,
        slack: Nanos,
    ) -> Result<(Self, QueuePlan), ConfigError> {
        let node = &spec.nodes[i];
        let Discipline::Calendar(c) = &node.discipline else {
            panic!("node {:?} does not run a calendar", node.name);
        };
        let (policy, rotation, granularity) =
            ranking(&c.policy, spec.mtu, spec.capacity, units.len(), slack);
        let levels = calendar_levels(spec, i);
        let cfg = CalendarConfig::hierarchical(&levels, units.len().max(1))
            .granularity(granularity)
            .rotation(rotation);
        let cal = Calendar::new(cfg).map_err(|source| ConfigError::Queue {
            what: "days".to_owned(),
            source,
        })?;
        let name = c.policy.name();
        let plan = describe(
            name,
            &levels,
            cal.reach(),
            units.len(),
            rotation,
            granularity,
        );
        let sched = CalendarSched {
            handles: vec![None; units.len()],
            units,
            policy,
            name,
            is_flow,
            cal,
        };
        Ok((sched, plan))
    }

    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn stats(&self) -> QueueStats {
        self.cal.stats()
    }

    pub(crate) fn calendar_stats(&self) -> CalendarStats {
        self.cal.calendar_stats()
    }

    /// Units queued.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.cal.len()
    }

    #[inline]
    pub(crate) fn is_active(&self, u: u32) -> bool {
        self.handles[u as usize].is_some()
    }

    /// Files unit `u` under `rank`, at the tail of its day.
    #[inline]
    fn file(&mut self, u: u32, rank: u64) {
        if let Some(h) = self.handles[u as usize].take() {
            let removed = self.cal.remove(h);
            debug_assert!(removed.is_some(), "unit {u} missing from its calendar");
        }
        match self.cal.insert(rank, u) {
            Ok(h) => self.handles[u as usize] = Some(h),
            Err(_) => unreachable!("one entry per unit, ranks beyond the reach are clamped"),
        }
    }

    /// Rotates after a change (logical calendars) and keeps EDF's skew.
    #[inline]
    fn rotate(&mut self, now: Nanos) {
        let days = self.cal.rotate_to_next();
        if days == 0 {
            return;
        }
        if let Policy::Edf {
            period,
            clock: false,
            delta,
            last_rot,
        } = &mut self.policy
        {
            let spent = i128::from(now) - i128::from(*last_rot);
            *delta += i128::from(days) * i128::from(*period) - spent;
            *last_rot = now;
        }
    }

    /// Moves a physical calendar's clock to `now` (plus the release slack for the
    /// policer).
    #[inline]
    fn follow_clock(&mut self, now: Nanos) {
        match self.policy {
            Policy::Edf { clock: true, .. } => self.cal.advance(now),
            Policy::Policer { slack, .. } => self.cal.advance(now.saturating_add(slack)),
            _ => {}
        }
    }

    /// The rank unit `u` gets for its head `head` at `now`.
    #[inline]
    fn rank(&self, u: u32, head: &Packet) -> u64 {
        let unit = &self.units[u as usize];
        match &self.policy {
            Policy::Wfq { quantum, burst } => wfq_round(unit, head.len, *quantum, *burst),
            Policy::Edf {
                period,
                clock,
                delta,
                last_rot,
            } => {
                if *clock {
                    return head.deadline;
                }
                let rel = i128::from(head.deadline) - i128::from(*last_rot) - *delta;
                let day = i128::from(self.cal.head_day()) + rel.div_euclid(i128::from(*period));
                day.clamp(0, i128::from(u64::MAX)) as u64
            }
            Policy::Policer { vt, .. } => (vt[u as usize] >> FRAC).min(u128::from(u64::MAX)) as u64,
            Policy::PfabricFair { pool, tags, .. } => pool
                .front(&tags[u as usize])
                .expect("a backlogged pFabric-fair flow has a tagged head"),
        }
    }

    /// Unit `u` became backlogged and eligible with head `head`.
    #[inline]
    pub(crate) fn activate(&mut self, u: u32, head: &Packet, now: Nanos) {
        self.follow_clock(now);
        let round = self.cal.head_day();
        let empty = self.cal.is_empty();
        match &mut self.policy {
            Policy::Wfq { quantum, .. } => {
                let unit = &mut self.units[u as usize];
                let floor = round.saturating_mul(*quantum * u64::from(unit.weight.max(1)));
                if unit.start < floor {
                    unit.start = floor;
                    unit.finish = floor;
                }
            }
            Policy::Edf {
                clock: false,
                delta,
                last_rot,
                ..
            } if empty => {
                *delta = 0;
                *last_rot = now;
            }
            Policy::Policer { period, vt, .. } => {
                let day_start = (now / *period) * *period;
                let v = &mut vt[u as usize];
                *v = (*v).max(u128::from(day_start) << FRAC);
            }
            _ => {}
        }
        let rank = self.rank(u, head);
        self.file(u, rank);
    }

    /// A packet entered the subtree of queued unit `u`, whose head is now `head`.
    #[inline]
    pub(crate) fn on_enqueue(&mut self, u: u32, head: &Packet, now: Nanos) {
        // A flow's head only changes when it sends, and a child's committed
        // WFQ round, release time or pFabric-fair day does not depend on what
        // arrives behind it; EDF follows a child's new head.
        if self.is_flow || !matches!(self.policy, Policy::Edf { .. }) {
            return;
        }
        let Some(h) = self.handles[u as usize] else {
            return;
        };
        self.follow_clock(now);
        let rank = self.rank(u, head);
        if self.cal.get(h).map(|(r, _)| r) != Some(rank) {
            self.file(u, rank);
        }
    }

    /// The unit to serve next, for the link: a logical calendar whose head day
    /// is empty rotates first, as the paper's dequeue does (the same unit until
    /// the next change).
    #[inline]
    pub(crate) fn select(&mut self, now: Nanos) -> Option<u32> {
        self.follow_clock(now);
        self.rotate(now);
        self.cal.peek().map(|(_, _, &u)| u)
    }

    /// The unit `select` would return, without rotating: what a parent reads to
    /// rank this node while a packet arrives.
    #[inline]
    pub(crate) fn peek(&mut self, now: Nanos) -> Option<u32> {
        self.follow_clock(now);
        self.cal.peek().map(|(_, _, &u)| u)
    }

    /// `u`, the unit `select` returned, sent `sent`; it stays with head `next`, or
    /// leaves.
    #[inline]
    pub(crate) fn served(&mut self, u: u32, sent: &Packet, next: Option<&Packet>, now: Nanos) {
        self.follow_clock(now);
        let w = self.units[u as usize].weight.max(1);
        match &mut self.policy {
            Policy::Wfq { .. } => self.units[u as usize].start += u64::from(sent.len),
            Policy::Policer { rate, vt, .. } => {
                vt[u as usize] += cost(rate.times(u64::from(w)), u64::from(sent.len));
            }
            Policy::PfabricFair { pool, tags, .. } => pool.pop(&mut tags[u as usize]),
            Policy::Edf { .. } => {}
        }
        match next {
            Some(head) => {
                let rank = self.rank(u, head);
                self.file(u, rank);
            }
            None => {
                if let Some(h) = self.handles[u as usize].take() {
                    let removed = self.cal.remove(h);
                    debug_assert!(removed.is_some(), "unit {u} missing from its calendar");
                }
            }
        }
    }

    /// A packet joined unit `u` (a flow of this per-flow leaf): pFabric-fair tags
    /// it with its day, relative to the round at its arrival.
    #[inline]
    pub(crate) fn on_arrival(&mut self, u: u32, pkt: &Packet) {
        if let Policy::PfabricFair {
            quantum,
            pool,
            tags,
        } = &mut self.policy
        {
            let unit = &mut self.units[u as usize];
            let day = (self.cal.head_day() + log_days(pkt.remaining, *quantum)).max(unit.start);
            unit.start = day;
            pool.push(&mut tags[u as usize], day);
        }
    }

    /// Whether the policer refuses `pkt` for unit `u`, which has `queued` bytes
    /// waiting in its subtree.
    #[inline]
    pub(crate) fn refuses(&self, u: u32, pkt: &Packet, queued: u64, now: Nanos) -> bool {
        let Policy::Policer {
            period,
            rate,
            bucket,
            vt,
            ..
        } = &self.policy
        else {
            return false;
        };
        let w = u64::from(self.units[u as usize].weight.max(1));
        let day_start = u128::from((now / *period) * *period) << FRAC;
        let early = vt[u as usize].saturating_sub(day_start);
        let early_bytes = rate.times(w).bytes_in_fixed(early, FRAC);
        early_bytes + u128::from(queued) + u128::from(pkt.len)
            > u128::from(bucket.saturating_mul(w))
    }

    /// The time the node can next send, if it holds units but none may send by
    /// `now` (the policer's future days).
    #[inline]
    pub(crate) fn hold(&self, now: Nanos) -> Option<Nanos> {
        let Policy::Policer { slack, .. } = self.policy else {
            return None;
        };
        let due = self.cal.next_due()?;
        (due > now.saturating_add(slack)).then_some(due)
    }

    /// Packets tagged for flow `u` (pFabric-fair), for the tree's invariants.
    pub(crate) fn tagged(&self, u: u32) -> Option<u32> {
        match &self.policy {
            Policy::PfabricFair { tags, .. } => Some(tags[u as usize].len),
            _ => None,
        }
    }

    pub(crate) fn check_invariants(&self) {
        self.cal.check_invariants();
        let flagged = self.handles.iter().filter(|h| h.is_some()).count();
        assert_eq!(
            flagged,
            self.cal.len(),
            "calendar node: handles vs calendar"
        );
        for (u, h) in self.handles.iter().enumerate() {
            if let Some(h) = h {
                assert_eq!(
                    self.cal.get(*h).map(|(_, &x)| x),
                    Some(u as u32),
                    "calendar node: unit {u}'s handle"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(weight: u32, start: u64, base: u64) -> Unit {
        Unit {
            weight,
            start,
            finish: base,
            ..Unit::default()
        }
    }

    #[test]
    fn wfq_rounds_hold_the_last_byte() {
        let u = unit(1, 0, 0);
        assert_eq!(wfq_round(&u, 1500, 1500, 0), 0);
        assert_eq!(wfq_round(&unit(1, 1500, 0), 1, 1500, 0), 1);
        assert_eq!(wfq_round(&unit(1, 1400, 0), 200, 1500, 0), 1);
        // Weight 2 sends two quanta per round.
        assert_eq!(wfq_round(&unit(2, 1500, 0), 1500, 1500, 0), 0);
    }

    #[test]
    fn burst_allowance_front_loads_rounds_then_joins_the_plain_rule() {
        // Quantum 1000, allowance 8000: rounds by the last byte b since the base.
        let q = 1000;
        let a = 8000;
        let rounds: Vec<u64> = (0..12)
            .map(|k| wfq_round(&unit(1, k * 1000, 0), 1000, q, a))
            .collect();
        // b = 999, 1999, ...: b / (8000 - b) is 0 while b < 4000, then 1 (4999),
        // 2 (5999), 6 (6999), then the plain rule b / 1000 from b >= 7000.
        assert_eq!(rounds, [0, 0, 0, 0, 1, 2, 6, 7, 8, 9, 10, 11]);
        assert!(
            rounds.windows(2).all(|w| w[0] <= w[1]),
            "monotone: no reordering"
        );
        // From a base of round 5 (5000 bytes), the same shape shifted by 5.
        let shifted: Vec<u64> = (0..12)
            .map(|k| wfq_round(&unit(1, 5000 + k * 1000, 5000), 1000, q, a))
            .collect();
        assert_eq!(shifted, [5, 5, 5, 5, 6, 7, 11, 12, 13, 14, 15, 16]);
        // Never ahead of the plain rule.
        for k in 0..12 {
            let u = unit(1, k * 1000, 0);
            assert!(wfq_round(&u, 1000, q, a) <= wfq_round(&u, 1000, q, 0));
        }
    }

    #[test]
    fn log_days_double_per_day() {
        assert_eq!(log_days(0, 1500), 0);
        assert_eq!(log_days(1500, 1500), 0);
        assert_eq!(log_days(1501, 1500), 1);
        assert_eq!(log_days(3000, 1500), 1);
        assert_eq!(log_days(3001, 1500), 2);
        assert_eq!(log_days(6000, 1500), 2);
        assert_eq!(log_days(6001, 1500), 3);
        assert_eq!(log_days(u64::MAX, 1), 64);
    }

    #[test]
    fn tag_fifos_share_one_pool() {
        let mut pool = TagPool::new(4);
        let (mut a, mut b) = (Tags::default(), Tags::default());
        pool.push(&mut a, 3);
        pool.push(&mut b, 1);
        pool.push(&mut a, 5);
        assert_eq!((pool.front(&a), pool.front(&b)), (Some(3), Some(1)));
        pool.pop(&mut a);
        assert_eq!(pool.front(&a), Some(5));
        pool.pop(&mut a);
        pool.pop(&mut b);
        assert_eq!((a.len, b.len, pool.front(&a)), (0, 0, None));
        for d in 0..4 {
            pool.push(&mut a, d);
        }
        assert_eq!(a.len, 4, "every slot came back");
    }

    #[test]
    fn policer_cost_is_exact() {
        // 8 Mbit/s: one byte per microsecond.
        assert_eq!(cost(Rate::from_bps(8_000_000), 1500) >> FRAC, 1_500_000);
        // 64 bytes at 100 Gbit/s: 5.12 ns.
        assert_eq!(
            cost(Rate::from_bps(100_000_000_000), 64),
            (512u128 << FRAC) / 100
        );
    }
}
