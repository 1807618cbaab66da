//! The rules a [`TreeSpec`] must follow before a tree is built from it, and the
//! typed error that names what breaks one: [`SpecError`], whose
//! [`NodeProblem`]s say which node and which of its settings is at fault (so a
//! policy file can point at the key it came from).

use core::fmt;
use std::collections::HashSet;

use eiffel_queue::{MAX_CALENDAR_LEVELS, MAX_HIER_BUCKETS};

use super::discipline::{
    CalendarPolicy, CalendarSpec, Discipline, DEFAULT_PERIOD, MAX_CALENDAR_BYTES, MAX_PERIOD,
    MAX_POLICER_RATE,
};
use super::ets::MAX_ETS_UNITS;
use super::levels::MAX_LEVELS;
use super::spec::{TreeSpec, MAX_WEIGHT};
use super::MAX_DEPTH;
use crate::pool::MAX_POOL_CAPACITY;
use crate::time::Rate;

/// A tree specification that cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    /// No node at all.
    #[error("a policy needs at least one node")]
    NoNodes,
    /// A capacity of zero packets.
    #[error("capacity must be at least 1 packet")]
    ZeroCapacity,
    /// A capacity beyond what the packet pool can index.
    #[error("capacity {capacity} exceeds the packet pool's {max} packets (32-bit slot indices)")]
    CapacityTooLarge {
        /// The capacity asked for.
        capacity: u32,
        /// [`MAX_POOL_CAPACITY`].
        max: usize,
    },
    /// An MTU of zero bytes.
    #[error("mtu must be at least 1 byte")]
    ZeroMtu,
    /// A shaper whose slots are shorter than a nanosecond.
    #[error(
        "shaper: {slots} slots cannot cover a horizon of {horizon_ns} ns (at least 1 ns per slot)"
    )]
    ShaperSlots {
        /// Slots asked for.
        slots: usize,
        /// The horizon, in ns.
        horizon_ns: u64,
    },
    /// Not exactly one node without a parent.
    #[error("a policy needs exactly one root (a node without parent), found {}: {roots:?}", roots.len())]
    Roots {
        /// The nodes without a parent.
        roots: Vec<String>,
    },
    /// A node without a name.
    #[error("node {index} has an empty name")]
    EmptyName {
        /// The node's index.
        index: usize,
    },
    /// Two nodes of one name.
    #[error("duplicate node name {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A problem with one node's settings.
    #[error("node {name:?}: {problem}")]
    Node {
        /// The node's index.
        index: usize,
        /// The node's name.
        name: String,
        /// What is wrong.
        problem: NodeProblem,
    },
}

/// What is wrong with one node of a [`TreeSpec`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeProblem {
    /// The parent index is not a node.
    ParentOutOfRange {
        /// The index given.
        parent: usize,
    },
    /// The node is its own ancestor.
    Cycle,
    /// The node is deeper than [`MAX_DEPTH`].
    TooDeep,
    /// A weight outside `1..=MAX_WEIGHT`.
    Weight {
        /// The weight given.
        weight: u32,
    },
    /// A rate limit of zero (`flow`: the per-flow limit).
    ZeroLimit {
        /// Whether it is the per-flow limit.
        flow: bool,
    },
    /// A reservation of zero.
    ZeroReservation,
    /// Per-flow settings on a node with children.
    PerFlowWithChildren,
    /// A per-flow leaf of zero flows.
    ZeroFlows,
    /// A leaf capacity of zero packets.
    ZeroCapacity,
    /// A release-time program on a node that is not a per-flow leaf.
    ShapeWithoutFlows,
    /// A discipline that ranks flows on a node with children.
    RanksFlows {
        /// The discipline's name.
        discipline: &'static str,
    },
    /// A calendar discipline on a leaf that holds one FIFO.
    CalendarOnFifoLeaf {
        /// The discipline's name.
        discipline: &'static str,
    },
    /// A calendar with no levels or too many.
    DaysLevels {
        /// Levels given.
        levels: usize,
    },
    /// A calendar level of zero days or too many.
    DaysLevel {
        /// Days of the level.
        days: usize,
    },
    /// The calendar levels' product overflows.
    DaysOverflow,
    /// A calendar that cannot hold what the discipline files in it.
    ReachTooShort {
        /// The discipline's name.
        discipline: &'static str,
        /// Days the calendar reaches.
        reach: u64,
        /// Days the discipline needs.
        need: u64,
    },
    /// A quantum of zero bytes.
    ZeroQuantum,
    /// A burst allowance below the quantum or too large.
    BurstAllowance {
        /// Bytes given.
        bytes: u64,
        /// The quantum, the least accepted.
        quantum: u64,
    },
    /// A day of zero length or too long.
    Period {
        /// Nanoseconds given.
        ns: u64,
    },
    /// A policer rate of zero or too high.
    PolicerRate {
        /// Bits per second given.
        bps: u64,
    },
    /// A policer bucket below the MTU or too large.
    Bucket {
        /// Bytes given.
        bytes: u64,
        /// The MTU, the least accepted.
        mtu: u32,
    },
    /// An `ets` node without children: it orders children by their priorities
    /// (a per-flow leaf's flows have none).
    EtsWithoutChildren,
    /// An `ets` node with more children than it can index.
    EtsChildren {
        /// Its children.
        children: usize,
    },
    /// A child of an `ets` node whose priority is not a level below 64.
    EtsPriority {
        /// The child's priority.
        priority: u32,
    },
}

impl NodeProblem {
    /// The policy-file key of the node the problem is about, if one setting is
    /// at fault (`None` for the node as a whole).
    #[must_use]
    pub const fn key(&self) -> Option<&'static str> {
        Some(match self {
            NodeProblem::ParentOutOfRange { .. } | NodeProblem::Cycle => "parent",
            NodeProblem::Weight { .. } => "weight",
            NodeProblem::ZeroLimit { flow: false } => "limit",
            NodeProblem::ZeroLimit { flow: true } => "flow_limit",
            NodeProblem::ZeroReservation => "reservation",
            NodeProblem::PerFlowWithChildren | NodeProblem::ZeroFlows => "flows",
            NodeProblem::ZeroCapacity => "capacity",
            NodeProblem::ShapeWithoutFlows => "release",
            NodeProblem::RanksFlows { .. }
            | NodeProblem::CalendarOnFifoLeaf { .. }
            | NodeProblem::EtsWithoutChildren
            | NodeProblem::EtsChildren { .. } => "discipline",
            NodeProblem::EtsPriority { .. } => "priority",
            NodeProblem::DaysLevels { .. }
            | NodeProblem::DaysLevel { .. }
            | NodeProblem::DaysOverflow
            | NodeProblem::ReachTooShort { .. } => "days",
            NodeProblem::ZeroQuantum => "quantum",
            NodeProblem::BurstAllowance { .. } => "burst_allowance",
            NodeProblem::Period { .. } => "period",
            NodeProblem::PolicerRate { .. } => "rate",
            NodeProblem::Bucket { .. } => "bucket",
            NodeProblem::TooDeep => return None,
        })
    }
}

impl fmt::Display for NodeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeProblem::ParentOutOfRange { parent } => {
                write!(f, "parent index {parent} out of range")
            }
            NodeProblem::Cycle => f.write_str("its parents form a cycle"),
            NodeProblem::TooDeep => write!(f, "deeper than {MAX_DEPTH} levels"),
            NodeProblem::Weight { weight } => {
                write!(f, "weight {weight} outside 1..={MAX_WEIGHT}")
            }
            NodeProblem::ZeroLimit { flow } => {
                let what = if *flow { "flow limit" } else { "limit" };
                write!(f, "{what} rate must be positive")
            }
            NodeProblem::ZeroReservation => f.write_str("reservation must be positive"),
            NodeProblem::PerFlowWithChildren => {
                f.write_str("per-flow settings belong on a leaf, but it has children")
            }
            NodeProblem::ZeroFlows => f.write_str("max_flows must be at least 1"),
            NodeProblem::ZeroCapacity => f.write_str("capacity must be at least 1 packet"),
            NodeProblem::ShapeWithoutFlows => f.write_str(
                "a release-time program paces the flows of a per-flow leaf: this node has none",
            ),
            NodeProblem::RanksFlows { discipline } => {
                write!(f, "{discipline} ranks flows: use it on a per-flow leaf")
            }
            NodeProblem::CalendarOnFifoLeaf { discipline } => write!(
                f,
                "{discipline} orders units, but this leaf holds one FIFO: give it per-flow settings or children"
            ),
            NodeProblem::DaysLevels { levels } => write!(
                f,
                "`days` needs 1 to {MAX_CALENDAR_LEVELS} levels, got {levels}"
            ),
            NodeProblem::DaysLevel { days } => write!(
                f,
                "`days`: a level of {days} days is outside 1..={MAX_HIER_BUCKETS}"
            ),
            NodeProblem::DaysOverflow => f.write_str("`days`: the levels' product overflows"),
            NodeProblem::ReachTooShort {
                discipline,
                reach,
                need,
            } => write!(
                f,
                "`days`: a reach of {reach} days is too short for {discipline}: it needs at least {need}"
            ),
            NodeProblem::ZeroQuantum => f.write_str("`quantum` must be at least 1 byte"),
            NodeProblem::BurstAllowance { bytes, quantum } => write!(
                f,
                "`burst_allowance` of {bytes} bytes is outside {quantum}..={MAX_CALENDAR_BYTES} (at least the quantum)"
            ),
            NodeProblem::Period { ns } => write!(
                f,
                "`period` of {ns} ns is outside 1..={}",
                MAX_PERIOD.as_nanos()
            ),
            NodeProblem::PolicerRate { bps } => write!(
                f,
                "`rate` of {bps} bit/s is outside 1..={}",
                MAX_POLICER_RATE.bps()
            ),
            NodeProblem::Bucket { bytes, mtu } => write!(
                f,
                "`bucket` of {bytes} bytes is outside {mtu}..={MAX_CALENDAR_BYTES} (at least one MTU)"
            ),
            NodeProblem::EtsWithoutChildren => f.write_str(
                "ets orders children by their priorities, but this node has none (for flows use drr)",
            ),
            NodeProblem::EtsChildren { children } => write!(
                f,
                "ets orders at most {MAX_ETS_UNITS} children, this node has {children}"
            ),
            NodeProblem::EtsPriority { priority } => write!(
                f,
                "its parent is ets, whose levels are priorities 0 to {}: got {priority}",
                MAX_LEVELS - 1
            ),
        }
    }
}

impl TreeSpec {
    /// Checks the structural rules: one root, no cycles, unique names, parents in
    /// range, positive weights and rates, per-flow settings only on leaves, sensible
    /// capacities, and the calendar disciplines' parameters and reach.
    ///
    /// # Errors
    /// The first rule broken.
    pub fn validate(&self) -> Result<(), SpecError> {
        self.validate_tree()?;
        let kids = self.child_lists();
        let mut names = HashSet::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            if n.name.is_empty() {
                return Err(SpecError::EmptyName { index: i });
            }
            if !names.insert(n.name.as_str()) {
                return Err(SpecError::DuplicateName {
                    name: n.name.clone(),
                });
            }
            self.check_node(i, !kids[i].is_empty())
                .map_err(|problem| self.node_error(i, problem))?;
            if n.discipline == Discipline::Ets {
                self.check_ets(i, &kids[i])?;
            }
        }
        self.check_cycles()
    }

    /// The error for `problem` at node `i`.
    pub(crate) fn node_error(&self, i: usize, problem: NodeProblem) -> SpecError {
        SpecError::Node {
            index: i,
            name: self.nodes[i].name.clone(),
            problem,
        }
    }

    /// Tree-wide settings and the root.
    fn validate_tree(&self) -> Result<(), SpecError> {
        if self.nodes.is_empty() {
            return Err(SpecError::NoNodes);
        }
        if self.capacity == 0 {
            return Err(SpecError::ZeroCapacity);
        }
        if self.capacity as usize > MAX_POOL_CAPACITY {
            return Err(SpecError::CapacityTooLarge {
                capacity: self.capacity,
                max: MAX_POOL_CAPACITY,
            });
        }
        if self.mtu == 0 {
            return Err(SpecError::ZeroMtu);
        }
        let horizon = self.shaper.horizon.as_nanos();
        if self.shaper.slots == 0 || horizon < self.shaper.slots as u64 {
            return Err(SpecError::ShaperSlots {
                slots: self.shaper.slots,
                horizon_ns: horizon,
            });
        }
        let roots: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| n.parent.is_none())
            .map(|n| n.name.clone())
            .collect();
        if roots.len() != 1 {
            return Err(SpecError::Roots { roots });
        }
        Ok(())
    }

    /// Node `i`'s own settings.
    fn check_node(&self, i: usize, has_children: bool) -> Result<(), NodeProblem> {
        let n = &self.nodes[i];
        if let Some(p) = n.parent.filter(|&p| p >= self.nodes.len()) {
            return Err(NodeProblem::ParentOutOfRange { parent: p });
        }
        if n.weight == 0 || n.weight > MAX_WEIGHT {
            return Err(NodeProblem::Weight { weight: n.weight });
        }
        if n.limit.is_some_and(|l| l.rate.is_zero()) {
            return Err(NodeProblem::ZeroLimit { flow: false });
        }
        let flow_limit = n.per_flow.and_then(|f| f.flow_limit);
        if flow_limit.is_some_and(|l| l.rate.is_zero()) {
            return Err(NodeProblem::ZeroLimit { flow: true });
        }
        if n.reservation.is_some_and(Rate::is_zero) {
            return Err(NodeProblem::ZeroReservation);
        }
        if let Some(pf) = n.per_flow {
            if has_children {
                return Err(NodeProblem::PerFlowWithChildren);
            }
            if pf.max_flows == 0 {
                return Err(NodeProblem::ZeroFlows);
            }
        }
        if n.capacity == Some(0) {
            return Err(NodeProblem::ZeroCapacity);
        }
        if n.flow_release.is_some() && (n.per_flow.is_none() || has_children) {
            return Err(NodeProblem::ShapeWithoutFlows);
        }
        if has_children && n.discipline.ranks_flows() {
            return Err(NodeProblem::RanksFlows {
                discipline: n.discipline.name(),
            });
        }
        if let Discipline::Calendar(c) = &n.discipline {
            if !has_children && n.per_flow.is_none() {
                return Err(NodeProblem::CalendarOnFifoLeaf {
                    discipline: c.policy.name(),
                });
            }
            self.check_calendar(i, c)?;
        }
        Ok(())
    }

    /// An `ets` node's children: at least one, at most [`MAX_ETS_UNITS`], each
    /// at a level below [`MAX_LEVELS`].
    fn check_ets(&self, i: usize, kids: &[usize]) -> Result<(), SpecError> {
        if kids.is_empty() {
            return Err(self.node_error(i, NodeProblem::EtsWithoutChildren));
        }
        if kids.len() > MAX_ETS_UNITS {
            let children = kids.len();
            return Err(self.node_error(i, NodeProblem::EtsChildren { children }));
        }
        match kids
            .iter()
            .find(|&&c| self.nodes[c].priority as usize >= MAX_LEVELS)
        {
            Some(&c) => {
                let priority = self.nodes[c].priority;
                Err(self.node_error(c, NodeProblem::EtsPriority { priority }))
            }
            None => Ok(()),
        }
    }

    /// Walking up from any node reaches the root, within [`MAX_DEPTH`] steps.
    ///
    /// Linear in the number of nodes: each node's depth is computed once and
    /// remembered, and a walk stops at the first node whose depth is known, so
    /// a long chain costs one step per node rather than one per ancestor.
    fn check_cycles(&self) -> Result<(), SpecError> {
        const UNKNOWN: usize = usize::MAX;
        const ON_PATH: usize = usize::MAX - 1;
        let mut depth = vec![UNKNOWN; self.nodes.len()];
        let mut path = Vec::new();
        for start in 0..self.nodes.len() {
            let mut cur = start;
            let base = loop {
                match depth[cur] {
                    UNKNOWN => {}
                    ON_PATH => return Err(self.node_error(cur, NodeProblem::Cycle)),
                    d => break d,
                }
                depth[cur] = ON_PATH;
                path.push(cur);
                match self.nodes[cur].parent {
                    Some(p) => cur = p,
                    None => break 0,
                }
            };
            // `path` runs from `start` up; its last node sits right below `base`'s.
            let top_is_root = self.nodes[*path.last().unwrap_or(&start)].parent.is_none();
            let mut d = if top_is_root { 0 } else { base + 1 };
            while let Some(i) = path.pop() {
                if d >= MAX_DEPTH {
                    return Err(self.node_error(i, NodeProblem::TooDeep));
                }
                depth[i] = d;
                d += 1;
            }
        }
        Ok(())
    }

    /// A calendar discipline's parameters, each within its range, and a calendar
    /// that reaches far enough for what the discipline files in it.
    fn check_calendar(&self, i: usize, c: &CalendarSpec) -> Result<(), NodeProblem> {
        if let Some(days) = &c.days {
            if days.is_empty() || days.len() > MAX_CALENDAR_LEVELS {
                return Err(NodeProblem::DaysLevels { levels: days.len() });
            }
            if let Some(&bad) = days.iter().find(|&&x| x == 0 || x > MAX_HIER_BUCKETS) {
                return Err(NodeProblem::DaysLevel { days: bad });
            }
        }
        self.check_policy(&c.policy)?;
        let reach = calendar_levels(self, i)
            .iter()
            .try_fold(1u64, |r, &x| r.checked_mul(x as u64))
            .ok_or(NodeProblem::DaysOverflow)?;
        let need = min_reach(self, i);
        if reach < need {
            return Err(NodeProblem::ReachTooShort {
                discipline: c.policy.name(),
                reach,
                need,
            });
        }
        Ok(())
    }

    /// The ranges of a calendar policy's parameters.
    fn check_policy(&self, p: &CalendarPolicy) -> Result<(), NodeProblem> {
        if p.quantum() == Some(0) {
            return Err(NodeProblem::ZeroQuantum);
        }
        let quantum = u64::from(p.quantum().unwrap_or(self.mtu));
        if let CalendarPolicy::WfqBurst {
            burst_allowance: Some(b),
            ..
        } = *p
        {
            if b < quantum || b > MAX_CALENDAR_BYTES {
                return Err(NodeProblem::BurstAllowance { bytes: b, quantum });
            }
        }
        if let Some(t) = p.period() {
            if t.is_zero() || t > MAX_PERIOD {
                return Err(NodeProblem::Period { ns: t.as_nanos() });
            }
        }
        if let CalendarPolicy::Policer { rate, bucket, .. } = *p {
            if rate.is_zero() || rate > MAX_POLICER_RATE {
                return Err(NodeProblem::PolicerRate { bps: rate.bps() });
            }
            if let Some(b) = bucket {
                if b < u64::from(self.mtu) || b > MAX_CALENDAR_BYTES {
                    return Err(NodeProblem::Bucket {
                        bytes: b,
                        mtu: self.mtu,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The calendar levels of `cq-*` node `i`: its `days`, or the discipline's
/// default (see [`CalendarSpec::days`]).
///
/// # Panics
/// If node `i` does not run a calendar discipline.
#[must_use]
pub(crate) fn calendar_levels(spec: &TreeSpec, i: usize) -> Vec<usize> {
    let Discipline::Calendar(c) = &spec.nodes[i].discipline else {
        panic!("node {i} does not run a calendar");
    };
    if let Some(days) = &c.days {
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
    match c.policy {
        CalendarPolicy::Wfq { .. }
        | CalendarPolicy::WfqBurst { .. }
        | CalendarPolicy::Policer { .. } => pow2(min_reach(spec, i) + 1),
        CalendarPolicy::Edf { .. } => vec![4096],
        CalendarPolicy::PfabricFair { .. } => vec![128],
    }
}

/// The least reach (days) node `i`'s calendar needs: a WFQ unit's next packet
/// lies at most `ceil(mtu / (quantum * w))` days after the current round; a
/// policer's unit at most a full bucket's time plus two days (the partial day it
/// started in and the one its last byte ends in); pFabric-fair at most 64 days
/// (the bit length of a 64-bit remaining size).
fn min_reach(spec: &TreeSpec, i: usize) -> u64 {
    let Discipline::Calendar(c) = &spec.nodes[i].discipline else {
        return 1;
    };
    let w = u64::from(spec.min_unit_weight(i).max(1));
    let mtu = u64::from(spec.mtu);
    match c.policy {
        CalendarPolicy::Wfq { quantum } | CalendarPolicy::WfqBurst { quantum, .. } => {
            let q = u64::from(quantum.unwrap_or(spec.mtu).max(1)) * w;
            mtu.div_ceil(q) + 1
        }
        CalendarPolicy::Policer {
            rate,
            bucket,
            period,
        } => {
            // Rate and bucket both scale with the weight: the time is the same.
            let bucket = bucket.unwrap_or(8 * mtu);
            let period = period.unwrap_or(DEFAULT_PERIOD);
            rate.tx_periods_ceil(bucket, period).saturating_add(2)
        }
        CalendarPolicy::PfabricFair { .. } => 65,
        CalendarPolicy::Edf { .. } => 1,
    }
}
