//! How a node orders its units (its children, or the flows of a per-flow leaf): a
//! [`Discipline`] of one of four families, each carrying only the parameters it
//! reads.
//!
//! See [`Discipline`] for the families.

use eiffel_queue::QueueKind;

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

/// The calendar-queue disciplines (Sharma et al., *Programmable Calendar Queues*,
/// NSDI'20; see [`cq`](super::cq)), each with its own parameters. `None` takes
/// the default documented on the field; [`TreeSpec::validate`] checks the ranges.
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
    /// A calendar-queue discipline.
    Calendar(CalendarSpec),
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
        if let Discipline::Ranked { queue, .. } | Discipline::Hclock { queue } = &mut self {
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
            Discipline::Calendar(c) => c.policy.name(),
        }
    }

    /// The queue choice of a node that has one (ranked and hClock nodes).
    #[must_use]
    pub const fn queue(&self) -> Option<&QueueChoice> {
        match self {
            Discipline::Ranked { queue, .. } | Discipline::Hclock { queue } => Some(queue),
            Discipline::FairQueue(_) | Discipline::Calendar(_) => None,
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
