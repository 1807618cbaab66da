//! How a node orders its units (its children, or the flows of a per-flow leaf): a
//! [`Discipline`] of one of four families, each carrying only the parameters it
//! reads.
//!
//! See [`Discipline`] for the families.

use std::sync::Arc;

use eiffel_queue::QueueKind;

use super::program::RankProgram;

use crate::time::{Duration, Rate};

/// The built-in rank functions (transactions) of a ranked node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rank {
    /// Arrival order of each unit's next packet.
    Fifo,
    /// Strict priority: a child's `priority` (0 first); a flow's head `rank`.
    Strict,
    /// Start-time fair queueing with weights (WFQ by virtual start times).
    Wfq,
    /// Earliest deadline first, by each unit's next packet's `deadline`.
    Edf,
    /// Least slack time first: next packet's `arrival + rank` (slack in ns).
    Lstf,
    /// Shortest remaining processing time: next packet's `remaining`.
    Srpt,
    /// pFabric: a flow's rank is the smallest `remaining` among its queued packets.
    /// Per-flow leaves only.
    Pfabric,
}

impl Rank {
    /// Every rank function.
    pub const ALL: [Rank; 7] = [
        Rank::Fifo,
        Rank::Strict,
        Rank::Wfq,
        Rank::Edf,
        Rank::Lstf,
        Rank::Srpt,
        Rank::Pfabric,
    ];

    /// The name used in policy files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Rank::Fifo => "fifo",
            Rank::Strict => "strict",
            Rank::Wfq => "wfq",
            Rank::Edf => "edf",
            Rank::Lstf => "lstf",
            Rank::Srpt => "srpt",
            Rank::Pfabric => "pfabric",
        }
    }

    /// Whether its ranks move forward with time or virtual time (a moving range),
    /// as opposed to a fixed range of levels.
    #[must_use]
    pub const fn moving_range(self) -> bool {
        !matches!(self, Rank::Strict | Rank::Srpt | Rank::Pfabric)
    }
}

/// The fair-queueing cores a node can order its units with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FairQueue {
    /// Quick Fair Queueing.
    Qfq,
    /// Deficit round robin.
    Drr,
    /// Exact WF2Q+.
    Wf2q,
}

impl FairQueue {
    /// Every core.
    pub const ALL: [FairQueue; 3] = [FairQueue::Qfq, FairQueue::Drr, FairQueue::Wf2q];

    /// The name used in policy files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            FairQueue::Qfq => "qfq",
            FairQueue::Drr => "drr",
            FairQueue::Wf2q => "wf2q+",
        }
    }
}

/// How a `cq-edf` calendar rotates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum EdfRotation {
    /// Fig. 3 of the paper: when the link finds the head day empty the head moves
    /// to the next non-empty day, possibly ahead of the clock, and the skew
    /// `delta` between calendar and clock corrects every later filing. A packet
    /// whose deadline falls before a head that ran ahead is served in the head
    /// day behind its packets: at 86% load this misses about 25 times as many
    /// deadlines as exact EDF (`crates/sched/tests/cq.rs`). Policy files:
    /// `"on-empty"`.
    OnEmpty,
    /// The head follows the clock (`now / period`); when the head day is empty the
    /// earliest later day is served early without rotating, so a later packet with
    /// an earlier deadline still goes first and no skew arises: as many misses as
    /// exact EDF on the same trace. Policy files: `"clock"`.
    #[default]
    Clock,
}

impl EdfRotation {
    /// The name used in policy files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            EdfRotation::OnEmpty => "on-empty",
            EdfRotation::Clock => "clock",
        }
    }

    /// Parses a policy-file name.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        [EdfRotation::OnEmpty, EdfRotation::Clock]
            .into_iter()
            .find(|r| r.name() == name)
    }
}

/// Default length of a day of `cq-edf` and `cq-policer`: the paper's 10 us.
pub const DEFAULT_PERIOD: Duration = Duration::from_micros(10);

/// Longest day accepted: 1000 s.
pub const MAX_PERIOD: Duration = Duration::from_secs(1_000);

/// Largest `burst_allowance` and `bucket` accepted: 1 TiB.
pub const MAX_CALENDAR_BYTES: u64 = 1 << 40;

/// Highest `cq-policer` rate accepted: 10 Tbit/s.
pub const MAX_POLICER_RATE: Rate = Rate::from_gbps(10_000);

/// The calendar-queue disciplines (Sharma et al., *Programmable Calendar Queues
/// for High-speed Packet Scheduling*, NSDI'20, sections 3.3, 4.4 and 4.5) as node
/// disciplines of the policy tree: `cq-wfq` (Fig. 2), `cq-wfq-burst` (section
/// 4.4), `cq-edf` (Fig. 3), `cq-policer` (the leaky bucket filter of Fig. 4) and
/// `cq-pfabric-fair` (section 4.5). Their parameters are those of each
/// [`CalendarPolicy`].
///
/// ```
/// use eiffel_sched::tree::{CalendarPolicy, Discipline, NodeSpec, PerFlow, TreeSpec};
/// use eiffel_sched::{Packet, PolicyTree, Scheduler};
///
/// // A per-flow leaf fair-queued on a calendar of 1000-byte rounds.
/// let mut spec = TreeSpec::new(1024);
/// let mut leaf = NodeSpec::new("flows", None);
/// leaf.discipline = Discipline::calendar(CalendarPolicy::Wfq { quantum: Some(1000) });
/// leaf.per_flow = Some(PerFlow { max_flows: 2, flow_limit: None, flow_queue_limit: None });
/// spec.add(leaf);
/// let mut tree = PolicyTree::new(spec).unwrap();
/// let class = tree.leaf("flows").unwrap();
/// for _ in 0..3 {
///     tree.enqueue(Packet::new(0, 1000).class(class), 0).unwrap();
/// }
/// tree.enqueue(Packet::new(1, 1000).class(class), 0).unwrap();
/// // Flow 0's packets fill rounds 0, 1 and 2; flow 1's packet is in round 0.
/// let order: Vec<u32> = (0..4).map(|_| tree.dequeue(0).unwrap().flow).collect();
/// assert_eq!(order, [0, 1, 0, 0]);
/// ```
///
/// ## From packets to units
/// The paper files every packet in a day of the calendar when it arrives. A tree
/// node files *units* (its children, or the flows of a per-flow leaf), one
/// calendar entry per backlogged unit, under the day of the packet the unit sends
/// next; after each service the unit is filed again, at the tail of its next
/// packet's day (so units of one day take turns packet by packet, as packets
/// arriving interleaved would). A flow is a FIFO and its packets' days never
/// decrease, so a flow is never reordered, and for the first three disciplines
/// the day of a flow's head equals the day the paper would have given it on
/// arrival:
///
/// - WFQ: the paper's catch-up `bytes = max(bytes, round * BpR)` only acts on a
///   flow with nothing queued: a queued packet's day is at least the current
///   round, so its flow's byte count is at least `round * BpR` (with the burst
///   allowance too: its rounds never run ahead of the plain ones).
/// - EDF: a packet's day is a function of its deadline alone between two resets
///   of the skew, which only happen when nothing is queued (below).
/// - pFabric-fair files a packet relative to the round *at its arrival*, so each
///   flow keeps the days of its queued packets in a FIFO of tags (one preallocated
///   pool for the whole leaf, as many tags as the tree holds packets).
///
/// Rotation happens where the paper's happens: when the link asks for a packet
/// and the head day is empty, the calendar rotates to its first non-empty day
/// ([`Calendar::rotate_to_next`](eiffel_queue::Calendar::rotate_to_next)) before serving. Arrivals in between see the
/// day just served as the current one, and an empty calendar does not rotate (the
/// paper's Appendix A). A parent ranking this node while a packet arrives peeks
/// at the calendar without rotating it.
///
/// ## cq-wfq and its unfairness bound (Fig. 2)
/// Unit `i` of weight `w_i` counts `B_i`, the bytes it has been charged; its next
/// packet of `L` bytes goes in round `floor((B_i + L - 1) / (Q w_i))`, the round
/// holding its last byte (`Q` the quantum, the paper's BpR), and `B_i` grows by
/// the bytes it sends. A unit that becomes backlogged first catches up:
/// `B_i = max(B_i, r Q w_i)` with `r` the current round. The calendar is logical:
/// rounds are its days, served in order.
///
/// *Bound.* Let `i` and `j` both have packets queued throughout `[t1, t2]`, and
/// `r1`, `r2` be the head days (rounds) at `t1` and `t2`. The head only moves when
/// the link asks for a packet, to the first non-empty day, so every packet is
/// selected in the round it was filed in and the packet in transmission at `t1`
/// belongs to round `r1`: the packets sent (even partly) in the interval have
/// rounds in `r1 ..= r2`. While `i` is queued its charged bytes grow without gaps
/// and the head never passes its head's round, so every packet of `i` with a
/// round in `r1 + 1 .. r2 - 1` is sent inside the interval. Each round holds `Q
/// w_i` bytes of `i`, the first and last packets straddling the boundaries, so
/// with `W_i` the bytes of `i` sent in the interval:
///
/// ```text
/// (r2 - r1 - 1) Q - L_i / w_i  <=  W_i / w_i  <=  (r2 - r1 + 1) Q + L_i / w_i
/// ```
///
/// and for two units the normalized services differ by at most
/// [`fairness_bound`](super::fairness_bound):
///
/// ```text
/// | W_i / w_i - W_j / w_j |  <=  2 Q + L_i / w_i + L_j / w_j
/// ```
///
/// against `L_i / w_i + L_j / w_j` for exact start-time fair queueing: the calendar
/// costs two rounds of `Q`. The same count against the link's service `W` (every
/// unit's bytes in the interval lie in the rounds `r1 ..= r2`, a catch-up only
/// skipping bytes forward) bounds unit `k`'s B-WFI, the most it falls behind its
/// share `phi_k = w_k / sum(w)` over an interval during which it has packets
/// queued ([`b_wfi_bound`](super::b_wfi_bound)):
///
/// ```text
/// phi_k W - W_k  <=  2 Q w_k + L_k + phi_k sum_j L_j
/// ```
///
/// `L` is the largest packet of a unit; the sum runs over all units. Both bounds
/// grow linearly with `Q`: a small quantum approaches exact fair queueing, a
/// large one serves each unit in bursts of `Q w` bytes. The tests of
/// `crates/sched/tests/cq.rs` measure both against exact WF²Q+ on one trace for
/// quanta from 300 to 24000 bytes. The bound needs every round within the
/// calendar's reach, which [`TreeSpec::validate`](super::TreeSpec::validate)
/// checks (`ceil(mtu / (Q w_min)) + 1` days).
///
/// ## cq-wfq-burst (section 4.4)
/// The catch-up also marks the unit's *base* `b0` (the round boundary it caught up
/// to, initially 0). A packet whose last byte is `b` bytes after the base goes in
/// round `b0 / (Q w) + floor(b / max(Q w, A w - b))` (`A` the burst allowance):
/// half the allowance in the first round, then a sixth, a twelfth..., and once
/// `b >= (A - Q) w` the plain rule, with which it joins continuously. Rounds never
/// run ahead of the plain rule, so a unit's packets stay in order. A unit regains
/// its allowance only by falling behind the round, that is by staying idle while
/// the rounds catch up with the bytes it sent ahead. The unfairness bound grows by
/// the allowance: a unit may send `A w` bytes in the rounds where the plain rule
/// allows `Q w` per round.
///
/// ## cq-edf (Fig. 3)
/// A unit's head with deadline `D` (absolute; its slack at `now` is `D - now`) is
/// filed `n = floor((slack - delta + (now - lastRot)) / dT)` days after the head,
/// that is `floor((D - lastRot - delta) / dT)`; negative days go to the head day.
/// On a rotation of `k` days at `now` (the calendar jumps over empty days at once,
/// which counts as `k` of the paper's rotations), `delta += k dT - (now - lastRot)`
/// and `lastRot = now`. When nothing is queued, `delta = 0` and `lastRot = now`:
/// the head day starts at the present. (The paper resets `delta` only; without
/// moving `lastRot` a packet arriving after an idle period would be filed the idle
/// time too far ahead.) Between resets the head day `h` starts at `h dT + c` in
/// calendar time for a constant `c`, so the filing is exact: deadlines are ordered
/// by day, FIFO within a day, like EDF on deadlines rounded to `dT`; the skew only
/// decides how far the head runs ahead of the clock. But a head that ran ahead
/// (the link found the head day empty and jumped to the next non-empty one, a
/// far deadline) files every packet due before it in the head day, behind that
/// day's packets: the inversion Fig. 3 accepts. On a trace at 86% load it misses
/// about 25 times as many deadlines as exact EDF, which is why this rotation
/// (`rotation = "on-empty"`) is not the default.
///
/// The default, `rotation = "clock"`, files units by deadline on a physical,
/// work-conserving calendar: the head follows `now / dT` and an empty head day
/// lets the earliest later day be served early without rotating, so no skew
/// arises and a later packet with an earlier deadline still goes first. It misses
/// as many deadlines as exact EDF on the same trace, and no more than exact EDF
/// given one more day of slack.
///
/// ## cq-policer (Fig. 4)
/// Each unit has a rate `rate * w` and a virtual clock `vt`: the time its head may
/// start, `vt` growing by the exact transmission time of every packet it sends at
/// its rate (2^-16 ns fixed point, as the tree's GCRA). A unit becoming backlogged
/// catches up to the start of the current day, `vt = max(vt, floor(now / dT) dT)`;
/// its head is filed in day `floor(vt / dT)` of a non-work-conserving physical
/// calendar, which releases nothing before that day begins. A packet is dropped
/// ([`DropReason::Policer`](crate::DropReason::Policer)) when the unit's bytes
/// ahead of the current day, `max(vt - day start, 0) * rate` plus its queued bytes
/// plus the packet, would exceed `bucket * w`: the bucket bounds what waits. Over
/// any window of `T` ns a unit sends at most `rate (T + 2 dT + 2 g) + L` bytes
/// (`g` the tree's shaper precision: a held node is released up to `g` early, and
/// the policer then releases the days begun by `now + g`), and in the long run
/// exactly its rate while backlogged.
///
/// A node whose units are all in future days has nothing to send: it leaves its
/// parent's queue and waits in the tree's one shaper until its first day begins,
/// as a rate-limited node does; a unit becoming backlogged in an earlier day
/// brings that release forward.
///
/// ## cq-pfabric-fair (section 4.5)
/// A packet with `k` bytes remaining (its `remaining` annotation) arriving in round
/// `r` gets the day `max(r + f(k), last)`, `f(k) = ceil(log2(ceil(k / Q)))` (0 for
/// `k <= Q`) and `last` the day of its flow's previous packet (the paper's highest
/// queue per flow); its flow is filed under the day of its head packet. Short
/// flows go first, as in pFabric, but every rotation brings a long flow's packets
/// one day closer, so they are delayed a bounded number of rounds instead of
/// starved.
///
/// ## Costs
/// Every operation is O(1) on the calendar (a link or an unlink and a bitmap
/// update; a re-filing is both), plus one find-first-set jump per rotation,
/// whatever the number of days passed (`O(log64 N)` word scans), and for a
/// hierarchical calendar at most one move per level of each element. Nothing is
/// allocated after construction.
///
/// ## Deviations from the paper
/// - A packet goes in the round of its *last* byte, `(B + L - 1) / Q`; Fig. 2's
///   `(B + L) / Q` puts a packet that exactly fills a round into the next one.
/// - Rotation jumps over empty days at once, counted as the days passed (the
///   calendar module's deviation); EDF's skew is updated for all of them.
/// - The policer catches a unit up with the day only when it becomes backlogged,
///   not at every arrival: a unit whose queued packets are late (the link was too
///   busy to send them in their day) is not pushed further back, which only
///   matters when the policed rates exceed the link, a case Fig. 4 assumes away.
///   Its bucket is counted in bytes (what is queued plus what was sent ahead of
///   the day) rather than whole days.
/// - EDF's reset also restarts the head day at the present (above), and by
///   default EDF's calendar follows the clock instead of Fig. 3's rotation on
///   empty (above, with the measurements).
///
/// # Parameters
/// Each variant carries its own; `None` takes the default documented on the
/// field, and [`TreeSpec::validate`] checks the ranges.
///
/// | parameter | unit | default | range |
/// |---|---|---|---|
/// | `quantum` | bytes | the tree's MTU | 1..=2^32-1 |
/// | `burst_allowance` | bytes | 8 x MTU | `quantum`..=2^40 |
/// | `period` | time | 10 us | 1 ns..=1000 s |
/// | `rate` | rate | required | 1 bit/s..=10 Tbit/s |
/// | `bucket` | bytes | 8 x MTU | MTU..=2^40 |
///
/// [`TreeSpec::validate`]: super::TreeSpec::validate
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CalendarPolicy {
    /// `cq-wfq` (Fig. 2): a unit's next packet is filed in the round holding its
    /// last byte, `quantum * weight` bytes per round, on a logical calendar.
    Wfq {
        /// Bytes per round at weight 1 (the paper's BpR); a unit of weight `w`
        /// sends `w * quantum` bytes per round. The unfairness between two
        /// backlogged units exceeds exact fair queueing's by at most two rounds'
        /// worth, `2 * quantum`.
        quantum: Option<u32>,
    },
    /// `cq-wfq-burst` (section 4.4): `cq-wfq` where a unit's round is `bytes /
    /// max(quantum, burst_allowance - bytes)`, counted from the point it last
    /// caught up with the round, so a new or returning unit sends its first bytes
    /// in fewer rounds.
    WfqBurst {
        /// As for [`CalendarPolicy::Wfq`].
        quantum: Option<u32>,
        /// The paper's BurstSize: bytes a new or returning unit may send ahead of
        /// its fair share (half in the first round, a sixth in the next...),
        /// scaled by the unit's weight; default 8 x MTU (the paper's FQ-8).
        burst_allowance: Option<u64>,
    },
    /// `cq-edf` (Fig. 3): a unit is filed by its head's deadline, to within one
    /// `period`.
    Edf {
        /// The length of a day, `dT`; default 10 us (the paper's).
        period: Option<Duration>,
        /// How the calendar rotates.
        rotation: EdfRotation,
    },
    /// `cq-policer` (Fig. 4's leaky bucket filter): each unit sends at most
    /// `rate * weight`, released day by day from a non-work-conserving physical
    /// calendar; a packet that would put more than `bucket * weight` bytes in the
    /// unit's bucket is dropped ([`DropReason::Policer`](crate::DropReason::Policer)).
    Policer {
        /// The rate of each unit at weight 1.
        rate: Rate,
        /// Most bytes a unit (at weight 1) may hold queued or scheduled beyond
        /// the current day; default 8 x MTU.
        bucket: Option<u64>,
        /// The length of a day; default 10 us.
        period: Option<Duration>,
    },
    /// `cq-pfabric-fair` (section 4.5): a packet with `k` bytes remaining is filed
    /// `ceil(log2(k / quantum))` days ahead, but never before its flow's previous
    /// packet; rotation lifts long flows' packets day by day, so they are never
    /// starved. Per-flow leaves only.
    PfabricFair {
        /// A packet with at most `quantum` bytes remaining is filed in the current
        /// day, each doubling one day later.
        quantum: Option<u32>,
    },
}

impl CalendarPolicy {
    /// The name used in policy files.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            CalendarPolicy::Wfq { .. } => "cq-wfq",
            CalendarPolicy::WfqBurst { .. } => "cq-wfq-burst",
            CalendarPolicy::Edf { .. } => "cq-edf",
            CalendarPolicy::Policer { .. } => "cq-policer",
            CalendarPolicy::PfabricFair { .. } => "cq-pfabric-fair",
        }
    }

    /// The quantum, for the policies that have one.
    #[must_use]
    pub const fn quantum(&self) -> Option<u32> {
        match self {
            CalendarPolicy::Wfq { quantum }
            | CalendarPolicy::WfqBurst { quantum, .. }
            | CalendarPolicy::PfabricFair { quantum } => *quantum,
            CalendarPolicy::Edf { .. } | CalendarPolicy::Policer { .. } => None,
        }
    }

    /// The day length, for the policies that have one.
    #[must_use]
    pub const fn period(&self) -> Option<Duration> {
        match self {
            CalendarPolicy::Edf { period, .. } | CalendarPolicy::Policer { period, .. } => *period,
            _ => None,
        }
    }
}

/// A calendar-queue discipline: its policy and the calendar's geometry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CalendarSpec {
    /// What the calendar computes ranks with, and its parameters.
    pub policy: CalendarPolicy,
    /// Buckets (days) of each calendar level, finest first: `[1024]` is a flat
    /// calendar of 1024 days, `[16, 8, 8]` a hierarchical one reaching 16 x 8 x 8 =
    /// 1024 days that moves each far element down once per level (section 3.5).
    /// Days beyond the reach are filed in the last day and counted
    /// (`QueueStats::clamped_high`). At most 6 levels of 1..=2^30 days. Policy
    /// files: `days = 1024` or `days = [16, 8, 8]`.
    ///
    /// Defaults (`None`): `cq-wfq` and `cq-wfq-burst` the smallest power of two (at
    /// least 64) above the `ceil(mtu / (quantum * min_weight)) + 1` days one
    /// packet can span, which is also the least accepted reach; `cq-edf` 4096 (41
    /// ms of deadlines at 10 us days); `cq-policer` the smallest power of two (at
    /// least 64) above the `ceil(bucket / rate / period) + 2` days a full bucket
    /// spans, the least accepted reach (two levels of 4096 x n beyond 2^16 days);
    /// `cq-pfabric-fair` 128, at least 65 (the logarithm of any remaining size
    /// fits in 64 days).
    pub days: Option<Vec<usize>>,
}

impl CalendarSpec {
    /// `policy` on a calendar of the default size.
    #[must_use]
    pub const fn new(policy: CalendarPolicy) -> Self {
        CalendarSpec { policy, days: None }
    }

    /// The same, with `days` per level.
    #[must_use]
    pub fn days(mut self, days: Vec<usize>) -> Self {
        self.days = Some(days);
        self
    }
}

/// Which integer priority queue a ranked node uses, and its geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueChoice {
    /// The queue type; `None` chooses by the Eiffel paper's Fig. 16 decision tree.
    pub kind: Option<QueueKind>,
    /// Ranks per bucket; `None` derives it from the discipline and the tree.
    pub granularity: Option<u64>,
    /// Buckets (per half for circular queues); `None` derives it.
    pub buckets: Option<usize>,
    /// Expected fraction of buckets occupied (for the automatic choice).
    pub occupancy: Option<f64>,
}

impl QueueChoice {
    /// Everything automatic.
    pub const AUTO: QueueChoice = QueueChoice {
        kind: None,
        granularity: None,
        buckets: None,
        occupancy: None,
    };

    /// A queue of `kind`, its geometry automatic.
    #[must_use]
    pub const fn kind(kind: QueueKind) -> Self {
        QueueChoice {
            kind: Some(kind),
            ..QueueChoice::AUTO
        }
    }
}

impl Default for QueueChoice {
    fn default() -> Self {
        QueueChoice::AUTO
    }
}

/// How a node orders its units (its children, or the flows of a per-flow leaf):
/// one of four families, each carrying only the parameters it reads.
///
/// | family | disciplines | what orders the units |
/// |---|---|---|
/// | [`Discipline::Ranked`] | [`Rank`]: `fifo`, `strict`, `wfq`, `edf`, `lstf`, `srpt`, `pfabric` | a rank transaction over one integer priority queue ([`QueueChoice`]) |
/// | [`Discipline::Hclock`] | `hclock` | reservation and share tags over two queues |
/// | [`Discipline::FairQueue`] | [`FairQueue`]: `qfq`, `drr`, `wf2q+` | a fair-queueing core (no configurable queue) |
/// | [`Discipline::Ets`] | `ets` | strict priority between the children's priorities, DRR by weight among children of one priority |
/// | [`Discipline::Calendar`] | [`CalendarPolicy`]: `cq-wfq`, `cq-wfq-burst`, `cq-edf`, `cq-policer`, `cq-pfabric-fair` | a calendar queue of [`CalendarSpec::days`] |
///
/// A queue choice on a fair-queueing core, a calendar parameter on a discipline
/// that does not read it, or a policer without a rate cannot be written.
#[derive(Clone, Debug, PartialEq)]
pub enum Discipline {
    /// A rank transaction over one integer priority queue.
    Ranked {
        /// The rank function.
        rank: Rank,
        /// The queue and its geometry.
        queue: QueueChoice,
    },
    /// hClock: reservations first (by reservation tags), then shares. The queue
    /// choice applies to both queues; the reservation queue's ranks are times, so
    /// its geometry stays its own.
    Hclock {
        /// The share queue and its geometry.
        queue: QueueChoice,
    },
    /// A fair-queueing core over the node's units.
    FairQueue(FairQueue),
    /// Enhanced transmission selection (IEEE 802.1Q, Linux's `sch_ets`):
    /// children in strict priority by their `priority` (below 64); children
    /// that share a priority share that level by DRR, each with a quantum of
    /// its weight times the MTU. One node for what a `strict` node over a
    /// `drr` node per shared level does, in the same order.
    Ets,
    /// A calendar-queue discipline.
    Calendar(CalendarSpec),
    /// A rank function written as a [`RankProgram`] (policy files: `rank = "..."`)
    /// over one integer priority queue. Its ranks have no known range: the queue
    /// is an exact `binary_heap` unless the choice names one.
    Program {
        /// The compiled rank function.
        program: Arc<RankProgram>,
        /// The queue and its geometry.
        queue: QueueChoice,
    },
}

impl Discipline {
    /// FIFO on an automatic queue (the default of a node).
    pub const FIFO: Discipline = Discipline::ranked(Rank::Fifo);
    /// Strict priority on an automatic queue.
    pub const STRICT: Discipline = Discipline::ranked(Rank::Strict);
    /// Start-time WFQ on an automatic queue.
    pub const WFQ: Discipline = Discipline::ranked(Rank::Wfq);
    /// EDF on an automatic queue.
    pub const EDF: Discipline = Discipline::ranked(Rank::Edf);
    /// LSTF on an automatic queue.
    pub const LSTF: Discipline = Discipline::ranked(Rank::Lstf);
    /// SRPT on an automatic queue.
    pub const SRPT: Discipline = Discipline::ranked(Rank::Srpt);
    /// pFabric on an automatic queue.
    pub const PFABRIC: Discipline = Discipline::ranked(Rank::Pfabric);
    /// hClock on automatic queues.
    pub const HCLOCK: Discipline = Discipline::Hclock {
        queue: QueueChoice::AUTO,
    };
    /// QFQ.
    pub const QFQ: Discipline = Discipline::FairQueue(FairQueue::Qfq);
    /// DRR.
    pub const DRR: Discipline = Discipline::FairQueue(FairQueue::Drr);
    /// WF2Q+.
    pub const WF2Q: Discipline = Discipline::FairQueue(FairQueue::Wf2q);

    /// Rank function `rank` on an automatic queue.
    #[must_use]
    pub const fn ranked(rank: Rank) -> Self {
        Discipline::Ranked {
            rank,
            queue: QueueChoice::AUTO,
        }
    }

    /// Calendar policy `policy` on a calendar of the default size.
    #[must_use]
    pub const fn calendar(policy: CalendarPolicy) -> Self {
        Discipline::Calendar(CalendarSpec::new(policy))
    }

    /// The same discipline on `queue` (ranked and hClock nodes; others unchanged).
    #[must_use]
    pub fn on(mut self, choice: QueueChoice) -> Self {
        if let Discipline::Ranked { queue, .. }
        | Discipline::Hclock { queue }
        | Discipline::Program { queue, .. } = &mut self
        {
            *queue = choice;
        }
        self
    }

    /// The name used in policy files.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        match self {
            Discipline::Ranked { rank, .. } => rank.name(),
            Discipline::Hclock { .. } => "hclock",
            Discipline::FairQueue(f) => f.name(),
            Discipline::Ets => "ets",
            Discipline::Calendar(c) => c.policy.name(),
            Discipline::Program { .. } => "rank program",
        }
    }

    /// The queue choice of a node that has one (ranked and hClock nodes).
    #[must_use]
    pub const fn queue(&self) -> Option<&QueueChoice> {
        match self {
            Discipline::Ranked { queue, .. }
            | Discipline::Hclock { queue }
            | Discipline::Program { queue, .. } => Some(queue),
            Discipline::FairQueue(_) | Discipline::Ets | Discipline::Calendar(_) => None,
        }
    }

    /// The rank function of a ranked node.
    #[must_use]
    pub const fn rank(&self) -> Option<Rank> {
        match self {
            Discipline::Ranked { rank, .. } => Some(*rank),
            _ => None,
        }
    }

    /// Whether the discipline may hold queued units back while the link is idle
    /// (the leaky bucket filter).
    #[must_use]
    pub const fn is_work_conserving(&self) -> bool {
        !matches!(
            self,
            Discipline::Calendar(CalendarSpec {
                policy: CalendarPolicy::Policer { .. },
                ..
            })
        )
    }

    /// Whether a per-flow leaf of this discipline keeps each flow's smallest
    /// queued `remaining` (pFabric, and rank programs that read `min_remaining`).
    #[must_use]
    pub fn tracks_min_remaining(&self) -> bool {
        match self {
            Discipline::Ranked {
                rank: Rank::Pfabric,
                ..
            } => true,
            Discipline::Program { program, .. } => program.reads(super::program::Var::MinRemaining),
            _ => false,
        }
    }

    /// Whether the discipline ranks flows rather than children (pFabric and
    /// pFabric-fair): per-flow leaves only.
    #[must_use]
    pub const fn ranks_flows(&self) -> bool {
        matches!(
            self,
            Discipline::Ranked {
                rank: Rank::Pfabric,
                ..
            } | Discipline::Calendar(CalendarSpec {
                policy: CalendarPolicy::PfabricFair { .. },
                ..
            })
        )
    }
}

impl Default for Discipline {
    fn default() -> Self {
        Discipline::FIFO
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_name_their_members() {
        let names: Vec<&str> = Rank::ALL
            .iter()
            .map(|r| Discipline::ranked(*r).name())
            .chain([Discipline::HCLOCK.name()])
            .chain(
                FairQueue::ALL
                    .iter()
                    .map(|f| Discipline::FairQueue(*f).name()),
            )
            .collect();
        assert_eq!(
            names,
            [
                "fifo", "strict", "wfq", "edf", "lstf", "srpt", "pfabric", "hclock", "qfq", "drr",
                "wf2q+"
            ]
        );
        let policer = Discipline::calendar(CalendarPolicy::Policer {
            rate: Rate::from_mbps(1),
            bucket: None,
            period: None,
        });
        assert_eq!(policer.name(), "cq-policer");
        assert!(!policer.is_work_conserving() && policer.queue().is_none());
        assert!(Discipline::PFABRIC.ranks_flows() && !Discipline::WFQ.ranks_flows());
        let cffs = QueueChoice::kind(QueueKind::Cffs);
        assert_eq!(Discipline::WFQ.on(cffs).queue(), Some(&cffs));
        assert_eq!(Discipline::QFQ.on(cffs), Discipline::QFQ);
        for r in [EdfRotation::OnEmpty, EdfRotation::Clock] {
            assert_eq!(EdfRotation::from_name(r.name()), Some(r));
        }
    }
}
