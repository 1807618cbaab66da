//! The in-memory description of a policy tree: what a policy file compiles to and
//! what a Rust user can build directly. [`TreeSpec::validate`] checks it and
//! [`PolicyTree::new`](super::PolicyTree::new) instantiates it.

use eiffel_queue::{QueueKind, MAX_CALENDAR_LEVELS, MAX_HIER_BUCKETS};

use crate::scheduler::ConfigError;
use crate::time::{Duration, Rate};

/// A rate limit with a burst allowance, enforced by the tree's one shaper.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Long-run rate (at least 1 bit/s).
    pub rate: Rate,
    /// Bytes that may leave back to back after an idle period (at least one
    /// packet's worth is always allowed).
    pub burst: u64,
}

/// How a node orders its units (children, or flows in a per-flow leaf).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Discipline {
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
    Pfabric,
    /// hClock: reservations first (by reservation tags), then shares.
    Hclock,
    /// Quick Fair Queueing over the node's units.
    Qfq,
    /// Deficit round robin over the node's units.
    Drr,
    /// Exact WF2Q+ over the node's units.
    Wf2q,
    /// Calendar-queue WFQ (Sharma et al., NSDI'20, Fig. 2): a unit's next packet
    /// is filed in the round holding its last byte, `quantum * weight` bytes per
    /// round, on a logical calendar. See [`CalendarParams`].
    CqWfq,
    /// Calendar-queue WFQ with a burst allowance (NSDI'20, section 4.4): a unit's
    /// round is `bytes / max(quantum, burst_allowance - bytes)`, counted from the
    /// point it last caught up with the round, so a new or returning unit sends
    /// its first bytes in fewer rounds.
    CqWfqBurst,
    /// Calendar-queue EDF by least slack (NSDI'20, Fig. 3): a unit is filed by its
    /// head's deadline, `slack / period` days ahead of a calendar that follows the
    /// clock, or (`rotation = "on-empty"`) `(slack - delta + (now - lastRot)) /
    /// period` days ahead of one that rotates when its head day empties, the skew
    /// `delta` corrected at every rotation.
    CqEdf,
    /// Calendar-queue leaky bucket filter (NSDI'20, Fig. 4): each unit sends at
    /// most `rate * weight`, released day by day from a non-work-conserving
    /// physical calendar; a packet that would put more than `bucket * weight`
    /// bytes in the unit's bucket is dropped ([`DropReason::Policer`]).
    ///
    /// [`DropReason::Policer`]: crate::DropReason::Policer
    CqPolicer,
    /// pFabric-fair (NSDI'20, section 4.5): a packet with `k` bytes remaining is
    /// filed a logarithmic number of days ahead, `ceil(log2(k / quantum))`, but
    /// never before its flow's previous packet; rotation lifts long flows'
    /// packets day by day, so they are never starved. Per-flow leaves only.
    CqPfabricFair,
}

impl Discipline {
    /// Every discipline.
    pub const ALL: [Discipline; 16] = [
        Discipline::Fifo,
        Discipline::Strict,
        Discipline::Wfq,
        Discipline::Edf,
        Discipline::Lstf,
        Discipline::Srpt,
        Discipline::Pfabric,
        Discipline::Hclock,
        Discipline::Qfq,
        Discipline::Drr,
        Discipline::Wf2q,
        Discipline::CqWfq,
        Discipline::CqWfqBurst,
        Discipline::CqEdf,
        Discipline::CqPolicer,
        Discipline::CqPfabricFair,
    ];

    /// The name used in policy files.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Discipline::Fifo => "fifo",
            Discipline::Strict => "strict",
            Discipline::Wfq => "wfq",
            Discipline::Edf => "edf",
            Discipline::Lstf => "lstf",
            Discipline::Srpt => "srpt",
            Discipline::Pfabric => "pfabric",
            Discipline::Hclock => "hclock",
            Discipline::Qfq => "qfq",
            Discipline::Drr => "drr",
            Discipline::Wf2q => "wf2q+",
            Discipline::CqWfq => "cq-wfq",
            Discipline::CqWfqBurst => "cq-wfq-burst",
            Discipline::CqEdf => "cq-edf",
            Discipline::CqPolicer => "cq-policer",
            Discipline::CqPfabricFair => "cq-pfabric-fair",
        }
    }

    /// Parses a policy-file name (`stfq` is accepted for `wfq`, `cq-leaky-bucket`
    /// for `cq-policer`).
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "stfq" => Some(Discipline::Wfq),
            "cq-leaky-bucket" => Some(Discipline::CqPolicer),
            _ => Discipline::ALL.into_iter().find(|d| d.name() == name),
        }
    }

    /// Whether the discipline runs on a calendar queue (the `cq-*` disciplines,
    /// configured by [`CalendarParams`]).
    #[must_use]
    pub const fn is_calendar(self) -> bool {
        matches!(
            self,
            Discipline::CqWfq
                | Discipline::CqWfqBurst
                | Discipline::CqEdf
                | Discipline::CqPolicer
                | Discipline::CqPfabricFair
        )
    }

    /// Whether the discipline may hold queued units back while the link is idle
    /// (the leaky bucket filter).
    #[must_use]
    pub const fn is_work_conserving(self) -> bool {
        !matches!(self, Discipline::CqPolicer)
    }

    /// Whether the discipline ranks units in one integer priority queue (as
    /// opposed to a fair-queueing core or hClock's two queues).
    #[must_use]
    pub const fn is_ranked(self) -> bool {
        !matches!(self, Discipline::Qfq | Discipline::Drr | Discipline::Wf2q)
    }

    /// Whether its ranks move forward with time or virtual time (a moving range),
    /// as opposed to a fixed range of levels.
    #[must_use]
    pub const fn moving_range(self) -> bool {
        !matches!(
            self,
            Discipline::Strict | Discipline::Srpt | Discipline::Pfabric
        )
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
}

impl Default for QueueChoice {
    fn default() -> Self {
        QueueChoice::AUTO
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

/// Parameters of the calendar-queue disciplines (`cq-*`; Sharma et al.,
/// *Programmable Calendar Queues*, NSDI'20). Every field is optional: `None`
/// takes the default documented on the field. A field the node's discipline does
/// not read is refused by [`TreeSpec::validate`], naming the node and the field,
/// so a misplaced key never passes silently. Policy-file keys are the field
/// names.
///
/// | field | unit | disciplines | default | range |
/// |---|---|---|---|---|
/// | `days` | days per level, finest first | all `cq-*` | see the field | each level 1..=2^30, at most 6 levels |
/// | `quantum` | bytes | `cq-wfq`, `cq-wfq-burst`, `cq-pfabric-fair` | the tree's MTU | 1..=2^32-1 |
/// | `burst_allowance` | bytes | `cq-wfq-burst` | 8 x MTU | `quantum`..=2^40 |
/// | `period` | ns | `cq-edf`, `cq-policer` | 10000 (10 us) | 1..=10^12 |
/// | `rotation` | `"clock"` or `"on-empty"` | `cq-edf` | `"clock"` | |
/// | `rate` | bits/s | `cq-policer` | required | 1..=10^13 |
/// | `bucket` | bytes | `cq-policer` | 8 x MTU | MTU..=2^40 |
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CalendarParams {
    /// Buckets (days) of each calendar level, finest first: `[1024]` is a flat
    /// calendar of 1024 days, `[16, 8, 8]` a hierarchical one reaching 16 x 8 x 8 =
    /// 1024 days that moves each far element down once per level (section 3.5).
    /// Days beyond the reach are filed in the last day and counted
    /// (`QueueStats::clamped_high`). Policy files: `days = 1024` or
    /// `days = [16, 8, 8]`.
    ///
    /// Defaults: `cq-wfq` and `cq-wfq-burst` the smallest power of two (at least
    /// 64) above the `ceil(mtu / (quantum * min_weight)) + 1` days one packet can
    /// span, which is also the least accepted reach; `cq-edf` 4096 (41 ms of
    /// deadlines at 10 us days); `cq-policer` the smallest power of two (at least
    /// 64) above the `ceil(bucket / rate / period) + 2` days a full bucket spans,
    /// the least accepted reach (two levels of 4096 x n beyond 2^16 days); `cq-pfabric-fair` 128, at least 65 (the logarithm of any remaining
    /// size fits in 64 days).
    pub days: Option<Vec<usize>>,
    /// `cq-wfq`, `cq-wfq-burst`: bytes per round at weight 1 (the paper's BpR); a
    /// unit of weight `w` sends `w * quantum` bytes per round. The unfairness
    /// between two backlogged units exceeds exact fair queueing's by at most two
    /// rounds' worth, `2 * quantum` (see [`cq`](super::cq)). `cq-pfabric-fair`: a packet with at most
    /// `quantum` bytes remaining is filed in the current day, each doubling one
    /// day later. Bytes; default the tree's MTU; 1..=2^32-1.
    pub quantum: Option<u32>,
    /// `cq-wfq-burst`: the paper's BurstSize, bytes a new or returning unit may
    /// send ahead of its fair share: its bytes `b` since it last caught up with
    /// the round go in round `b / max(quantum, burst_allowance - b)` (half the
    /// allowance in the first round, a sixth in the next...). Scaled by the
    /// unit's weight like the quantum. Bytes; default 8 x MTU (the paper's FQ-8
    /// with full-size packets); `quantum..=2^40`.
    pub burst_allowance: Option<u64>,
    /// `cq-edf`, `cq-policer`: the length of a day, `dT`. EDF orders deadlines
    /// to within one day; the policer releases each unit's bytes day by day.
    /// Default 10 us (the paper's); 1 ns..=1000 s.
    pub period: Option<Duration>,
    /// `cq-edf`: how the calendar rotates; default [`EdfRotation::Clock`], which
    /// meets as many deadlines as exact EDF; [`EdfRotation::OnEmpty`] is the
    /// paper's Fig. 3 with its skew correction.
    pub rotation: Option<EdfRotation>,
    /// `cq-policer`: the rate of each unit at weight 1 (a unit of weight `w` gets
    /// `w * rate`). Required; 1 bit/s..=10 Tbit/s.
    pub rate: Option<Rate>,
    /// `cq-policer`: the bucket size: most bytes a unit (at weight 1) may hold
    /// queued or scheduled beyond the current day; a packet that would exceed it
    /// is dropped. Scaled by the unit's weight. Bytes; default 8 x MTU;
    /// MTU..=2^40.
    pub bucket: Option<u64>,
}

impl CalendarParams {
    /// Names of the fields that are set.
    fn set_fields(&self) -> impl Iterator<Item = &'static str> {
        [
            ("days", self.days.is_some()),
            ("quantum", self.quantum.is_some()),
            ("burst_allowance", self.burst_allowance.is_some()),
            ("period", self.period.is_some()),
            ("rotation", self.rotation.is_some()),
            ("rate", self.rate.is_some()),
            ("bucket", self.bucket.is_some()),
        ]
        .into_iter()
        .filter(|&(_, set)| set)
        .map(|(name, _)| name)
    }

    /// Whether `discipline` reads the field called `field`.
    fn reads(discipline: Discipline, field: &str) -> bool {
        use Discipline::{CqEdf, CqPfabricFair, CqPolicer, CqWfq, CqWfqBurst};
        match field {
            "days" => discipline.is_calendar(),
            "quantum" => matches!(discipline, CqWfq | CqWfqBurst | CqPfabricFair),
            "burst_allowance" => discipline == CqWfqBurst,
            "period" => matches!(discipline, CqEdf | CqPolicer),
            "rotation" => discipline == CqEdf,
            "rate" | "bucket" => discipline == CqPolicer,
            _ => false,
        }
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

/// A leaf that keeps one FIFO per flow and orders the flows (Eiffel's per-flow
/// primitive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PerFlow {
    /// Flow ids accepted: `0..max_flows` (a packet's `flow` indexes the table).
    pub max_flows: u32,
    /// A rate limit applied to every flow separately (per-flow pacing).
    pub flow_limit: Option<RateLimit>,
    /// Most packets one flow may queue.
    pub flow_queue_limit: Option<u32>,
}

/// One node of the tree.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeSpec {
    /// Unique name.
    pub name: String,
    /// Index of the parent in [`TreeSpec::nodes`]; `None` for the root.
    pub parent: Option<usize>,
    /// How the node orders its units. Leaves without `per_flow` hold one FIFO and
    /// ignore it.
    pub discipline: Discipline,
    /// Share at a weighted parent (wfq, qfq, drr, wf2q+, hclock); at least 1.
    pub weight: u32,
    /// Level at a strict-priority parent (0 is served first).
    pub priority: u32,
    /// Guaranteed rate at an hClock parent.
    pub reservation: Option<Rate>,
    /// Rate limit on this node's output.
    pub limit: Option<RateLimit>,
    /// Queue type and geometry for ranked disciplines.
    pub queue: QueueChoice,
    /// Per-flow leaf settings.
    pub per_flow: Option<PerFlow>,
    /// Most packets queued at this leaf (all its flows together).
    pub capacity: Option<u32>,
    /// Parameters of a `cq-*` discipline (all defaults when unset).
    pub calendar: CalendarParams,
}

impl NodeSpec {
    /// A node with defaults: FIFO, weight 1, priority 0, no limit, automatic queue.
    #[must_use]
    pub fn new(name: impl Into<String>, parent: Option<usize>) -> Self {
        NodeSpec {
            name: name.into(),
            parent,
            discipline: Discipline::Fifo,
            weight: 1,
            priority: 0,
            reservation: None,
            limit: None,
            queue: QueueChoice::AUTO,
            per_flow: None,
            capacity: None,
            calendar: CalendarParams::default(),
        }
    }
}

/// The shaper's geometry: a timing wheel of `slots` slots covering `horizon`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShaperSpec {
    /// Time covered ahead of now.
    pub horizon: Duration,
    /// Number of slots; the granularity is `horizon / slots`.
    pub slots: usize,
}

impl Default for ShaperSpec {
    fn default() -> Self {
        // 1 s in 2^16 slots of about 15 us: finer than one 1500-byte packet at
        // 1 Gbit/s, 512 KiB of slot lists.
        ShaperSpec {
            horizon: Duration::from_secs(1),
            slots: 1 << 16,
        }
    }
}

/// A whole policy: nodes (the root first or anywhere, exactly one without a
/// parent), the packet capacity, the link MTU and the shaper.
#[derive(Clone, Debug, PartialEq)]
pub struct TreeSpec {
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
    /// Packets the tree can hold in total (one preallocated pool).
    pub capacity: u32,
    /// Largest packet accepted, in bytes.
    pub mtu: u32,
    /// The shaper's geometry.
    pub shaper: ShaperSpec,
}

/// Largest weight accepted (matches the fair-queueing cores' range).
pub const MAX_WEIGHT: u32 = 1 << 16;

impl TreeSpec {
    /// An empty spec with the given capacity, 1500-byte MTU and default shaper.
    #[must_use]
    pub fn new(capacity: u32) -> Self {
        TreeSpec {
            nodes: Vec::new(),
            capacity,
            mtu: 1500,
            shaper: ShaperSpec::default(),
        }
    }

    /// Adds a node and returns its index.
    pub fn add(&mut self, node: NodeSpec) -> usize {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// Index of the node called `name`.
    #[must_use]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The children of every node, in declaration order: one O(n) pass (the way
    /// to walk the whole tree; [`Self::children`] scans all nodes per call).
    /// Parents out of range are ignored (see [`Self::validate`]).
    #[must_use]
    pub fn child_lists(&self) -> Vec<Vec<usize>> {
        let mut kids = vec![Vec::new(); self.nodes.len()];
        for (c, n) in self.nodes.iter().enumerate() {
            if let Some(p) = n.parent.filter(|&p| p < kids.len()) {
                kids[p].push(c);
            }
        }
        kids
    }

    /// Children of node `i`, in declaration order (O(n): scans every node).
    pub fn children(&self, i: usize) -> impl Iterator<Item = usize> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(move |(_, n)| n.parent == Some(i))
            .map(|(c, _)| c)
    }

    /// Whether node `i` has no children (O(n): scans every node).
    #[must_use]
    pub fn is_leaf(&self, i: usize) -> bool {
        self.children(i).next().is_none()
    }

    /// The root's index (validated specs have exactly one).
    #[must_use]
    pub fn root(&self) -> Option<usize> {
        self.nodes.iter().position(|n| n.parent.is_none())
    }

    /// Checks the structural rules: one root, no cycles, unique names, parents in
    /// range, positive weights and rates, per-flow settings only on leaves, sensible
    /// capacities.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |msg: String| Err(ConfigError::Invalid(msg));
        if self.nodes.is_empty() {
            return invalid("a policy needs at least one node".into());
        }
        if self.capacity == 0 {
            return invalid("capacity must be at least 1 packet".into());
        }
        if self.mtu == 0 {
            return invalid("mtu must be at least 1 byte".into());
        }
        let horizon = self.shaper.horizon.as_nanos();
        if self.shaper.slots == 0 || horizon < self.shaper.slots as u64 {
            return invalid(format!(
                "shaper: {} slots cannot cover a horizon of {horizon} ns (at least 1 ns per slot)",
                self.shaper.slots
            ));
        }
        let roots: Vec<&str> = self
            .nodes
            .iter()
            .filter(|n| n.parent.is_none())
            .map(|n| n.name.as_str())
            .collect();
        if roots.len() != 1 {
            return invalid(format!(
                "a policy needs exactly one root (a node without parent), found {}: {roots:?}",
                roots.len()
            ));
        }
        let kids = self.child_lists();
        let mut names = std::collections::HashSet::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() {
                return invalid(format!("node {i} has an empty name"));
            }
            if !names.insert(n.name.as_str()) {
                return invalid(format!("duplicate node name {:?}", n.name));
            }
            if let Some(p) = n.parent {
                if p >= self.nodes.len() {
                    return invalid(format!("node {:?}: parent index {p} out of range", n.name));
                }
            }
            if n.weight == 0 || n.weight > MAX_WEIGHT {
                return invalid(format!(
                    "node {:?}: weight {} outside 1..={MAX_WEIGHT}",
                    n.name, n.weight
                ));
            }
            for (what, l) in [
                ("limit", n.limit),
                ("flow limit", n.per_flow.and_then(|f| f.flow_limit)),
            ] {
                if let Some(l) = l {
                    if l.rate.is_zero() {
                        return invalid(format!("node {:?}: {what} rate must be positive", n.name));
                    }
                }
            }
            if n.reservation.is_some_and(Rate::is_zero) {
                return invalid(format!("node {:?}: reservation must be positive", n.name));
            }
            if let Some(pf) = n.per_flow {
                if !kids[i].is_empty() {
                    return invalid(format!(
                        "node {:?}: per-flow settings belong on a leaf, but it has children",
                        n.name
                    ));
                }
                if pf.max_flows == 0 {
                    return invalid(format!("node {:?}: max_flows must be at least 1", n.name));
                }
            }
            if n.capacity == Some(0) {
                return invalid(format!(
                    "node {:?}: capacity must be at least 1 packet",
                    n.name
                ));
            }
            if !kids[i].is_empty()
                && matches!(
                    n.discipline,
                    Discipline::Pfabric | Discipline::CqPfabricFair
                )
            {
                return invalid(format!(
                    "node {:?}: {} ranks flows: use it on a per-flow leaf",
                    n.name,
                    n.discipline.name()
                ));
            }
            self.validate_calendar(i)?;
        }
        // Cycles: walking up from any node must reach the root within n steps.
        for (i, n) in self.nodes.iter().enumerate() {
            let mut cur = n.parent;
            let mut steps = 0;
            while let Some(p) = cur {
                steps += 1;
                if steps > self.nodes.len() {
                    return invalid(format!(
                        "node {:?}: its parents form a cycle",
                        self.nodes[i].name
                    ));
                }
                cur = self.nodes[p].parent;
            }
        }
        Ok(())
    }

    /// The smallest weight among the units of node `i`: its children's, or 1 for
    /// the flows of a per-flow leaf.
    #[must_use]
    pub fn min_unit_weight(&self, i: usize) -> u32 {
        self.children(i)
            .map(|c| self.nodes[c].weight)
            .min()
            .unwrap_or(1)
    }

    /// Checks the calendar parameters of node `i`: only `cq-*` disciplines take
    /// them, each only the fields it reads, each within its range, and the
    /// calendar reaches far enough for what the discipline files in it.
    fn validate_calendar(&self, i: usize) -> Result<(), ConfigError> {
        let n = &self.nodes[i];
        let d = n.discipline;
        let p = &n.calendar;
        let invalid = |msg: String| Err(ConfigError::Invalid(format!("node {:?}: {msg}", n.name)));
        if !d.is_calendar() {
            if let Some(field) = p.set_fields().next() {
                return invalid(format!(
                    "`{field}` is a calendar-queue parameter, but the discipline is {}",
                    d.name()
                ));
            }
            return Ok(());
        }
        if self.is_leaf(i) && n.per_flow.is_none() {
            return invalid(format!(
                "{} orders units, but this leaf holds one FIFO: give it per-flow settings or children",
                d.name()
            ));
        }
        if let Some(field) = p.set_fields().find(|f| !CalendarParams::reads(d, f)) {
            return invalid(format!("`{field}` does not apply to {}", d.name()));
        }
        if n.queue != QueueChoice::AUTO && n.queue.kind != Some(QueueKind::Calendar) {
            return invalid(format!(
                "{} runs on a calendar queue: size it with `days`, not with a queue setting",
                d.name()
            ));
        }
        if let Some(days) = &p.days {
            if days.is_empty() || days.len() > MAX_CALENDAR_LEVELS {
                return invalid(format!(
                    "`days` needs 1 to {MAX_CALENDAR_LEVELS} levels, got {}",
                    days.len()
                ));
            }
            if let Some(&bad) = days.iter().find(|&&x| x == 0 || x > MAX_HIER_BUCKETS) {
                return invalid(format!(
                    "`days`: a level of {bad} days is outside 1..={MAX_HIER_BUCKETS}"
                ));
            }
        }
        if p.quantum == Some(0) {
            return invalid("`quantum` must be at least 1 byte".into());
        }
        let quantum = u64::from(p.quantum.unwrap_or(self.mtu));
        if let Some(b) = p.burst_allowance {
            if b < quantum || b > MAX_CALENDAR_BYTES {
                return invalid(format!(
                    "`burst_allowance` of {b} bytes is outside {quantum}..={MAX_CALENDAR_BYTES} (at least the quantum)"
                ));
            }
        }
        if let Some(t) = p.period {
            if t.is_zero() || t > MAX_PERIOD {
                return invalid(format!(
                    "`period` of {} ns is outside 1..={}",
                    t.as_nanos(),
                    MAX_PERIOD.as_nanos()
                ));
            }
        }
        if d == Discipline::CqPolicer {
            match p.rate {
                None => return invalid("cq-policer needs a `rate`".into()),
                Some(r) if r.is_zero() || r > MAX_POLICER_RATE => {
                    return invalid(format!(
                        "`rate` of {} bit/s is outside 1..={}",
                        r.bps(),
                        MAX_POLICER_RATE.bps()
                    ))
                }
                Some(_) => {}
            }
            if let Some(b) = p.bucket {
                if b < u64::from(self.mtu) || b > MAX_CALENDAR_BYTES {
                    return invalid(format!(
                        "`bucket` of {b} bytes is outside {}..={MAX_CALENDAR_BYTES} (at least one MTU)",
                        self.mtu
                    ));
                }
            }
        }
        let levels = calendar_levels(self, i);
        let reach = levels
            .iter()
            .try_fold(1u64, |r, &x| r.checked_mul(x as u64));
        let Some(reach) = reach else {
            return invalid("`days`: the levels' product overflows".into());
        };
        let need = min_reach(self, i);
        if reach < need {
            return invalid(format!(
                "`days`: a reach of {reach} days is too short for {}: it needs at least {need}",
                d.name()
            ));
        }
        Ok(())
    }
}

/// The calendar levels of `cq-*` node `i`: its `days`, or the discipline's
/// default (see [`CalendarParams::days`]).
#[must_use]
pub fn calendar_levels(spec: &TreeSpec, i: usize) -> Vec<usize> {
    let n = &spec.nodes[i];
    if let Some(days) = &n.calendar.days {
        return days.clone();
    }
    let pow2 = |need: u64| -> Vec<usize> {
        if need <= 1 << 16 {
            vec![need.max(64).next_power_of_two() as usize]
        } else {
            let upper = need.div_ceil(4096).next_power_of_two();
            vec![4096, upper.min(MAX_HIER_BUCKETS as u64) as usize]
        }
    };
    match n.discipline {
        Discipline::CqWfq | Discipline::CqWfqBurst | Discipline::CqPolicer => {
            pow2(min_reach(spec, i) + 1)
        }
        Discipline::CqEdf => vec![4096],
        _ => vec![128],
    }
}

/// The least reach (days) node `i`'s discipline needs: a WFQ unit's next packet
/// lies at most `ceil(mtu / (quantum * w))` days after the current round; a
/// policer's unit at most a full bucket's time plus two days (the partial day it
/// started in and the one its last byte ends in); pFabric-fair at most 64 days
/// (the bit length of a 64-bit remaining size).
fn min_reach(spec: &TreeSpec, i: usize) -> u64 {
    let n = &spec.nodes[i];
    let p = &n.calendar;
    let w = u64::from(spec.min_unit_weight(i).max(1));
    let mtu = u64::from(spec.mtu);
    match n.discipline {
        Discipline::CqWfq | Discipline::CqWfqBurst => {
            let q = u64::from(p.quantum.unwrap_or(spec.mtu).max(1)) * w;
            mtu.div_ceil(q) + 1
        }
        Discipline::CqPolicer => {
            // Rate and bucket both scale with the weight: the time is the same.
            let rate = p.rate.unwrap_or(Rate::from_bps(1));
            let bucket = p.bucket.unwrap_or(8 * mtu);
            let period = p.period.unwrap_or(DEFAULT_PERIOD);
            rate.tx_periods_ceil(bucket, period).saturating_add(2)
        }
        Discipline::CqPfabricFair => 65,
        _ => 1,
    }
}
