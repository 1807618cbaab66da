//! The policy tree: Eiffel's programmable scheduler (NSDI'19, sections 3.2 and 4).
//!
//! A policy is a tree. Every internal node orders its children, and every per-flow
//! leaf its flows, with a *discipline*: a rank transaction over an integer priority
//! queue from `eiffel-queue` ([`Transaction`], Eiffel's extension of the PIFO model
//! with per-flow ranking and on-dequeue ranking), hClock's reservation and share
//! queues, or a fair-queueing core (QFQ, DRR, WF2Q+). A plain leaf is one FIFO.
//! Children and flows are the node's *units*: a node holds one queue entry per
//! backlogged, eligible unit, and re-positions it in O(1) through its queue handle
//! whenever a packet enters the unit's subtree or leaves it.
//!
//! ## Packets
//! All packets live in one preallocated [`PacketPool`]; leaves and flows keep
//! intrusive FIFOs into it, so a flow is never reordered. On entering the tree a
//! packet's `class` names its leaf ([`PolicyTree::leaf`] maps names to ids; the
//! classifier sets it) and, at a per-flow leaf, its `flow` names its flow.
//!
//! ## Shaping
//! Rate limits sit on any node, root included, and on every flow of a per-flow
//! leaf, several along one path if wanted; one shaper (a timing wheel) for the whole tree holds
//! the release times of every throttled unit (Eiffel Figs. 6 and 7). A throttled unit
//! leaves its parent's queue and re-enters it when released; see [`Gcra`].
//!
//! ## Costs
//! With tree depth `d`: `enqueue` and `dequeue` perform at most one queue operation
//! per level, each O(1) on the bucketed queues, plus the head look-ups that give a
//! parent's transaction the packet its child will send next (`d` steps per level, so
//! O(d^2) with a small constant; trees are a few levels deep). Nothing is allocated
//! after construction.
//!
//! ## Accounting
//! Every node counts the packets entering its subtree, leaving it, and dropped in
//! it by reason; for every node `enqueued == dequeued + dropped + queued`, checked by
//! [`PolicyTree::check_invariants`].
//!
//! ## Eligibility time
//! [`Scheduler::next_ready`] is `now` when a packet can leave, otherwise the earliest
//! release time in the shaper: the first moment the tree's eligibility can change.
//! When that release is of a unit whose ancestor is itself still throttled, `dequeue`
//! at that time returns `None` and `next_ready` then names the next release.

mod cq;
mod discipline;
mod shaper;
mod spec;
pub mod txn;
mod validate;

mod minq;
mod sched;
mod select;

use eiffel_queue::{CalendarStats, Handle, QueueKind, QueueStats};

use crate::packet::{ClassId, Nanos, Packet};
use crate::pool::{Fifo as List, PacketPool};
use crate::scheduler::{Backlog, ConfigError, Counters, DropReason, Dropped, Scheduler};

use cq::CalendarSched;
pub use cq::{b_wfi_bound, fairness_bound};
pub use discipline::{
    CalendarPolicy, CalendarSpec, Discipline, EdfRotation, FairQueue, QueueChoice, Rank,
    DEFAULT_PERIOD, MAX_CALENDAR_BYTES, MAX_PERIOD, MAX_POLICER_RATE,
};
use minq::{MinDeque, MinPool};
use sched::{Core, Hclock, NodeSched, Ranked};
pub use select::QueuePlan;
use select::{plan, QueueNeeds, RankKind};
pub use shaper::Gcra;
use shaper::{Shaper, Throttled, UNIT_NODE};
pub use spec::{NodeSpec, PerFlow, RateLimit, ShaperSpec, TreeSpec, MAX_WEIGHT};
use txn::Builtin;
pub use txn::{Transaction, Unit, VT_SCALE};
pub use validate::{NodeProblem, SpecError};

const NONE: u32 = u32::MAX;

/// Deepest tree supported (root at depth 0).
pub const MAX_DEPTH: usize = 32;

#[derive(Debug)]
struct Flow {
    fifo: List,
    gcra: Option<Gcra>,
    throttled: bool,
    min: MinDeque,
}

#[derive(Debug)]
struct FlowLeaf {
    flows: Vec<Flow>,
    sched: NodeSched,
    flow_queue_limit: u32,
    /// Tracks each flow's smallest queued `remaining` (pfabric only).
    minima: Option<MinPool>,
}

// NB: an internal node's discipline (a queue, several hundred bytes) is boxed so
// that leaves stay small: a policy may have a million leaves (hClock over many
// VMs), and the box is one pointer to a stable allocation that stays in cache
// for the few internal nodes a packet's path visits.
#[derive(Debug)]
enum Kind {
    Internal {
        children: Vec<u32>,
        sched: Box<NodeSched>,
    },
    Leaf {
        fifo: List,
    },
    Flows(Box<FlowLeaf>),
}

#[derive(Debug)]
struct Node {
    /// Parent node, or `NONE` for the root.
    parent: u32,
    /// This node's unit index at its parent.
    slot: u32,
    kind: Kind,
    limit: Option<Gcra>,
    /// Filed in the shaper, out of its parent's queue.
    throttled: bool,
    /// While throttled: the shaper entry and the release time it was filed for.
    filed: Option<(Handle, Nanos)>,
    /// Queued in its parent's discipline.
    active: bool,
    /// Most packets queued in this subtree (leaves), `u32::MAX` if unlimited.
    capacity: u32,
    counters: Counters,
    backlog: Backlog,
}

/// A read-only view of one node, for reports and `eiffel check`.
#[derive(Debug, Clone)]
pub struct NodeView<'a> {
    /// Index (leaf ids are node indices).
    pub index: usize,
    /// The node's specification.
    pub spec: &'a NodeSpec,
    /// Names from the root down to this node, joined by `/`.
    pub path: String,
    /// Depth (root 0).
    pub depth: usize,
    /// Whether it has no children.
    pub is_leaf: bool,
    /// Name of the transaction or core ordering its units (`None` for FIFO leaves).
    pub discipline: Option<String>,
    /// Queue plans of its ranked queues (hClock has two: reservations, shares).
    pub queues: Vec<QueuePlan>,
    /// Counters of its subtree.
    pub counters: Counters,
    /// Packets and bytes queued in its subtree.
    pub backlog: Backlog,
    /// Whether its output is currently held by the shaper.
    pub throttled: bool,
    /// Statistics of its queues (same order as `queues`).
    pub queue_stats: Vec<QueueStats>,
    /// Rotations, out-of-range days and level moves of its calendar (`cq-*`).
    pub calendar_stats: Option<CalendarStats>,
}

/// A programmable scheduling policy: a tree of disciplines with one shaper.
#[derive(Debug)]
pub struct PolicyTree {
    spec: TreeSpec,
    nodes: Vec<Node>,
    plans: Vec<Vec<QueuePlan>>,
    root: u32,
    pool: PacketPool,
    shaper: Shaper,
    /// The shaper's precision: a unit whose release time is within this many ns
    /// counts as released (see [`Gcra`]).
    slack: Nanos,
    /// Whether some node's discipline may refuse packets (`cq-policer`).
    policed: bool,
    counters: Counters,
    backlog: Backlog,
}

/// Whether a limit holds a unit back at `now`, given the shaper's precision
/// `slack`: only a release time beyond `now + slack` throttles, so a throttled unit
/// always lands in a future slot of the shaper.
#[inline]
fn held(limit: Option<&Gcra>, now: Nanos, slack: Nanos) -> bool {
    limit.is_some_and(|g| !g.conforms(now.saturating_add(slack)))
}

/// Per-node units for a node's discipline: children with their configured weight,
/// priority and reservation, or `n` flows of weight 1.
fn child_units(spec: &TreeSpec, children: &[usize]) -> Vec<Unit> {
    children
        .iter()
        .map(|&c| {
            let n = &spec.nodes[c];
            Unit {
                weight: n.weight,
                priority: n.priority,
                reservation: n.reservation,
                ..Unit::default()
            }
        })
        .collect()
}

fn builtin(rank: Rank) -> Builtin {
    match rank {
        Rank::Fifo => Builtin::Fifo,
        Rank::Strict => Builtin::Strict,
        Rank::Wfq => Builtin::Wfq { vtime: 0 },
        Rank::Edf => Builtin::Edf,
        Rank::Lstf => Builtin::Lstf,
        Rank::Srpt => Builtin::Srpt,
        Rank::Pfabric => Builtin::Pfabric,
    }
}

/// Builds the discipline of node `i` over `units`; returns it with its queue
/// plans. `slack` is the shaper's precision.
fn build_sched(
    spec: &TreeSpec,
    i: usize,
    units: Vec<Unit>,
    per_flow: bool,
    slack: Nanos,
) -> Result<(NodeSched, Vec<QueuePlan>), ConfigError> {
    let node = &spec.nodes[i];
    let needs = |ranks| QueueNeeds {
        ranks,
        time_ranks: false,
        units: units.len(),
        mtu: spec.mtu,
        min_weight: units.iter().map(|u| u.weight).min().unwrap_or(1),
        priority_levels: units
            .iter()
            .map(|u| u.priority as usize + 1)
            .max()
            .unwrap_or(1),
        per_flow,
    };
    match &node.discipline {
        Discipline::Hclock { queue } => {
            // The policy's queue type applies to both queues; the reservation
            // queue's ranks are times, so its geometry stays its own.
            let rplan = plan(
                &QueueChoice {
                    kind: queue.kind,
                    ..QueueChoice::AUTO
                },
                &QueueNeeds {
                    time_ranks: true,
                    ..needs(RankKind::Hclock)
                },
            );
            let pplan = plan(queue, &needs(RankKind::Hclock));
            let sched = NodeSched::Hclock(Hclock::new(&rplan, &pplan, units)?);
            Ok((sched, vec![rplan, pplan]))
        }
        Discipline::FairQueue(f) => {
            let core = Core::new(*f, &units, spec.mtu)?;
            Ok((NodeSched::Core(core, units), Vec::new()))
        }
        Discipline::Calendar(_) => {
            let (sched, p) = CalendarSched::new(spec, i, units, per_flow, slack)?;
            Ok((NodeSched::Calendar(sched), vec![p]))
        }
        Discipline::Ranked { rank, queue } => {
            let p = plan(queue, &needs(RankKind::Rank(*rank)));
            let sched = NodeSched::Ranked(Ranked::new(&p, units, builtin(*rank), per_flow)?);
            Ok((sched, vec![p]))
        }
    }
}

impl PolicyTree {
    /// Instantiates a validated copy of `spec`. Everything is allocated here.
    pub fn new(spec: TreeSpec) -> Result<Self, ConfigError> {
        spec.validate()?;
        let n = spec.nodes.len();
        let root = spec.root().expect("validated") as u32;
        let mut nodes = Vec::with_capacity(n);
        let mut plans = Vec::with_capacity(n);
        // Every unit that can be held is filed in the shaper at most once: limited
        // nodes and policers (once, even with both), and paced flows.
        let limited: usize = spec
            .nodes
            .iter()
            .map(|ns| {
                let held = ns.limit.is_some() || !ns.discipline.is_work_conserving();
                let flows = ns
                    .per_flow
                    .filter(|pf| pf.flow_limit.is_some())
                    .map_or(0, |pf| pf.max_flows as usize);
                usize::from(held) + flows
            })
            .sum();
        let shaper = Shaper::new(spec.shaper, limited)?;
        let slack = shaper.granularity();
        let kids = spec.child_lists();
        let mut slots = vec![0u32; spec.nodes.len()];
        for list in &kids {
            for (slot, &c) in list.iter().enumerate() {
                slots[c] = slot as u32;
            }
        }
        for (i, ns) in spec.nodes.iter().enumerate() {
            let children = &kids[i];
            let (kind, node_plans) = if !children.is_empty() {
                let units = child_units(&spec, children);
                let (sched, p) =
                    build_sched(&spec, i, units, false, slack).map_err(|e| e.in_node(&ns.name))?;
                let children = children.iter().map(|&c| c as u32).collect();
                (
                    Kind::Internal {
                        children,
                        sched: Box::new(sched),
                    },
                    p,
                )
            } else if let Some(pf) = ns.per_flow {
                let units = vec![
                    Unit {
                        weight: 1,
                        ..Unit::default()
                    };
                    pf.max_flows as usize
                ];
                let (sched, p) =
                    build_sched(&spec, i, units, true, slack).map_err(|e| e.in_node(&ns.name))?;
                let flows = (0..pf.max_flows)
                    .map(|_| Flow {
                        fifo: List::new(),
                        gcra: pf.flow_limit.map(|l| Gcra::new(l, spec.mtu)),
                        throttled: false,
                        min: MinDeque::default(),
                    })
                    .collect();
                let minima = (ns.discipline.rank() == Some(Rank::Pfabric))
                    .then(|| MinPool::new(spec.capacity as usize));
                let leaf = FlowLeaf {
                    flows,
                    sched,
                    flow_queue_limit: pf.flow_queue_limit.unwrap_or(u32::MAX),
                    minima,
                };
                (Kind::Flows(Box::new(leaf)), p)
            } else {
                (Kind::Leaf { fifo: List::new() }, Vec::new())
            };
            let parent = ns.parent.map_or(NONE, |p| p as u32);
            let slot = slots[i];
            nodes.push(Node {
                parent,
                slot,
                kind,
                limit: ns.limit.map(|l| Gcra::new(l, spec.mtu)),
                throttled: false,
                filed: None,
                active: false,
                capacity: ns.capacity.unwrap_or(u32::MAX),
                counters: Counters::default(),
                backlog: Backlog::default(),
            });
            plans.push(node_plans);
        }
        let policed = spec
            .nodes
            .iter()
            .any(|ns| !ns.discipline.is_work_conserving());
        let tree = PolicyTree {
            pool: PacketPool::with_capacity(spec.capacity as usize),
            slack,
            policed,
            shaper,
            nodes,
            plans,
            root,
            counters: Counters::default(),
            backlog: Backlog::default(),
            spec,
        };
        Ok(tree)
    }

    /// The specification the tree was built from.
    #[must_use]
    pub fn spec(&self) -> &TreeSpec {
        &self.spec
    }

    /// The class id of the leaf called `name` (to put in `Packet::class`).
    #[must_use]
    pub fn leaf(&self, name: &str) -> Option<ClassId> {
        let i = self.spec.find(name)?;
        (!matches!(self.nodes[i].kind, Kind::Internal { .. })).then_some(i as ClassId)
    }

    /// Number of nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no nodes (never, once built).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The shaper's precision: release times are met within this many ns.
    #[must_use]
    pub fn shaper_granularity(&self) -> Nanos {
        self.shaper.granularity()
    }

    fn depth(&self, i: usize) -> usize {
        let mut d = 0;
        let mut cur = self.nodes[i].parent;
        while cur != NONE {
            d += 1;
            cur = self.nodes[cur as usize].parent;
        }
        d
    }

    fn path(&self, i: usize) -> String {
        let mut names = vec![self.spec.nodes[i].name.as_str()];
        let mut cur = self.nodes[i].parent;
        while cur != NONE {
            names.push(self.spec.nodes[cur as usize].name.as_str());
            cur = self.nodes[cur as usize].parent;
        }
        names.reverse();
        names.join("/")
    }

    /// A view of node `i`.
    ///
    /// # Panics
    /// If `i` is not a node index.
    #[must_use]
    pub fn node(&self, i: usize) -> NodeView<'_> {
        let node = &self.nodes[i];
        let sched = match &node.kind {
            Kind::Leaf { .. } => None,
            Kind::Internal { sched, .. } => Some(&**sched),
            Kind::Flows(fl) => Some(&fl.sched),
        };
        let discipline = sched.map(sched_name);
        let queue_stats = sched.map_or_else(Vec::new, sched_stats);
        let calendar_stats = match sched {
            Some(NodeSched::Calendar(c)) => Some(c.calendar_stats()),
            _ => None,
        };
        NodeView {
            index: i,
            spec: &self.spec.nodes[i],
            path: self.path(i),
            depth: self.depth(i),
            is_leaf: !matches!(node.kind, Kind::Internal { .. }),
            discipline,
            queues: self.plans[i].clone(),
            counters: node.counters,
            backlog: node.backlog,
            throttled: node.throttled,
            queue_stats,
            calendar_stats,
        }
    }

    /// Views of every node, in specification order.
    pub fn nodes(&self) -> impl Iterator<Item = NodeView<'_>> {
        (0..self.nodes.len()).map(|i| self.node(i))
    }

    /// Replaces the rank transaction of ranked node `name` by a user-defined one.
    /// The node must hold no packets.
    pub fn set_transaction(
        &mut self,
        name: &str,
        txn: Box<dyn Transaction>,
    ) -> Result<(), ConfigError> {
        let i = self
            .spec
            .find(name)
            .ok_or_else(|| ConfigError::NoSuchNode {
                name: name.to_owned(),
            })?;
        if self.nodes[i].backlog.packets > 0 {
            return Err(ConfigError::NodeBusy {
                name: name.to_owned(),
            });
        }
        let discipline = self.spec.nodes[i].discipline.name();
        let no_transaction = |discipline| ConfigError::NoTransaction {
            name: name.to_owned(),
            discipline,
        };
        let sched = match &mut self.nodes[i].kind {
            Kind::Internal { sched, .. } => sched,
            Kind::Flows(fl) => &mut fl.sched,
            Kind::Leaf { .. } => return Err(no_transaction("one FIFO")),
        };
        match sched {
            NodeSched::Ranked(r) => {
                r.txn = Builtin::Custom(txn);
                Ok(())
            }
            NodeSched::Hclock(_) | NodeSched::Core(..) | NodeSched::Calendar(_) => {
                Err(no_transaction(discipline))
            }
        }
    }

    /// Whether node `n` has a packet it could send (ignoring its own throttle).
    #[inline]
    fn has_head(&self, n: u32) -> bool {
        match &self.nodes[n as usize].kind {
            Kind::Leaf { fifo } => !fifo.is_empty(),
            Kind::Internal { sched, .. } => sched.active() > 0,
            Kind::Flows(fl) => fl.sched.active() > 0,
        }
    }

    /// The packet node `n` would send next.
    fn head_of(&mut self, n: u32, now: Nanos) -> Option<Packet> {
        let mut n = n;
        loop {
            match &mut self.nodes[n as usize].kind {
                Kind::Leaf { fifo } => return self.pool.front(fifo).copied(),
                Kind::Flows(fl) => {
                    let f = fl.sched.peek(now)?;
                    return self.pool.front(&fl.flows[f as usize].fifo).copied();
                }
                Kind::Internal { children, sched } => {
                    let u = sched.peek(now)?;
                    n = children[u as usize];
                }
            }
        }
    }

    /// The discipline of node `n` (`None` for a FIFO leaf).
    fn sched_of(&self, n: u32) -> Option<&NodeSched> {
        match &self.nodes[n as usize].kind {
            Kind::Internal { sched, .. } => Some(sched),
            Kind::Flows(fl) => Some(&fl.sched),
            Kind::Leaf { .. } => None,
        }
    }

    /// When node `n` may next send, if it is held at `now`: by its rate limit
    /// (beyond the shaper's precision) or by a discipline holding all its units
    /// back (the policer's future days); `None` if nothing holds it. A held node
    /// is released strictly after `now + slack`, in a future slot of the shaper.
    fn hold(&self, n: u32, now: Nanos) -> Option<Nanos> {
        let limit = self.nodes[n as usize]
            .limit
            .as_ref()
            .filter(|g| !g.conforms(now.saturating_add(self.slack)))
            .map(Gcra::release_time);
        let discipline = self.sched_of(n).and_then(|s| s.hold(now));
        match (limit, discipline) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// Files node `n` in the shaper until `at`, out of its parent's queue.
    fn throttle_node(&mut self, n: u32, now: Nanos, at: Nanos) {
        let handle = self.shaper.throttle(
            now,
            at,
            Throttled {
                node: n,
                flow: UNIT_NODE,
            },
        );
        let node = &mut self.nodes[n as usize];
        node.throttled = true;
        node.filed = Some((handle, at));
    }

    /// Throttled node `n` got a new unit: a discipline that held it back may now
    /// release it sooner (a unit in an earlier day of the policer). Withdraws it
    /// from the shaper if it may send now, or files it earlier; returns whether it
    /// is still held. A rate limit alone is not affected by arrivals.
    fn still_held(&mut self, n: u32, now: Nanos) -> bool {
        if self.spec.nodes[n as usize].discipline.is_work_conserving() {
            return true;
        }
        let Some((handle, at)) = self.nodes[n as usize].filed else {
            return true;
        };
        match self.hold(n, now) {
            None => {
                self.shaper.withdraw(handle);
                let node = &mut self.nodes[n as usize];
                node.throttled = false;
                node.filed = None;
                false
            }
            Some(sooner) if sooner < at => {
                self.shaper.reschedule(handle, sooner);
                self.nodes[n as usize].filed = Some((handle, sooner));
                true
            }
            Some(_) => true,
        }
    }

    /// Node `start`'s own state changed (a unit became eligible in it, its FIFO got
    /// a packet, or it was released): activate it in its parent, or refresh its
    /// rank there, and so on up to the root.
    fn propagate(&mut self, start: u32, trigger: &Packet, now: Nanos) {
        let mut cur = start;
        loop {
            if self.nodes[cur as usize].throttled && self.still_held(cur, now) {
                return;
            }
            let parent = self.nodes[cur as usize].parent;
            if parent == NONE {
                if !self.nodes[cur as usize].throttled && self.has_head(cur) {
                    if let Some(at) = self.hold(cur, now) {
                        self.throttle_node(cur, now, at);
                    }
                }
                return;
            }
            let slot = self.nodes[cur as usize].slot;
            if self.nodes[cur as usize].active {
                let head = self.head_of(cur, now).expect("an active node has a head");
                self.sched_mut(parent).on_enqueue(slot, trigger, &head, now);
            } else {
                if !self.has_head(cur) {
                    return;
                }
                if let Some(at) = self.hold(cur, now) {
                    self.throttle_node(cur, now, at);
                    return;
                }
                let head = self
                    .head_of(cur, now)
                    .expect("a node that may send has a head");
                self.sched_mut(parent).activate(slot, &head, now);
                self.nodes[cur as usize].active = true;
            }
            cur = parent;
        }
    }

    /// Whether a `cq-policer` on the path from `leaf` to the root refuses `pkt`
    /// (before it is queued, so that a refusal changes nothing).
    fn policer_refuses(&self, leaf: u32, pkt: &Packet, now: Nanos) -> bool {
        if let Kind::Flows(fl) = &self.nodes[leaf as usize].kind {
            let queued = fl.flows[pkt.flow as usize].fifo.bytes();
            if fl.sched.refuses(pkt.flow, pkt, queued, now) {
                return true;
            }
        }
        let mut cur = leaf;
        loop {
            let node = &self.nodes[cur as usize];
            if node.parent == NONE {
                return false;
            }
            if let Kind::Internal { sched, .. } = &self.nodes[node.parent as usize].kind {
                if sched.refuses(node.slot, pkt, node.backlog.bytes, now) {
                    return true;
                }
            }
            cur = node.parent;
        }
    }

    fn sched_mut(&mut self, n: u32) -> &mut NodeSched {
        match &mut self.nodes[n as usize].kind {
            Kind::Internal { sched, .. } => sched,
            Kind::Flows(fl) => &mut fl.sched,
            Kind::Leaf { .. } => unreachable!("a FIFO leaf has no units"),
        }
    }

    /// Releases every throttled unit whose time has come.
    fn release_due(&mut self, now: Nanos) {
        while let Some(t) = self.shaper.pop_due(now) {
            let n = t.node;
            if t.flow == UNIT_NODE {
                let node = &mut self.nodes[n as usize];
                node.throttled = false;
                node.filed = None;
                if let Some(at) = self.hold(n, now) {
                    // Filed beyond the horizon, released early: file it again.
                    self.throttle_node(n, now, at);
                    continue;
                }
                if let Some(head) = self.head_of(n, now) {
                    self.propagate(n, &head, now);
                }
            } else {
                let Kind::Flows(fl) = &mut self.nodes[n as usize].kind else {
                    unreachable!("flow releases come from per-flow leaves")
                };
                let flow = &mut fl.flows[t.flow as usize];
                flow.throttled = false;
                if held(flow.gcra.as_ref(), now, self.slack) {
                    let at = flow.gcra.as_ref().map_or(now, Gcra::release_time);
                    flow.throttled = true;
                    // Flows are never withdrawn: arrivals do not change a pace.
                    let _ = self.shaper.throttle(now, at, t);
                    continue;
                }
                let Some(&head) = self.pool.front(&flow.fifo) else {
                    continue;
                };
                if let Some(m) = &fl.minima {
                    fl.sched.units_mut()[t.flow as usize].queued_min =
                        m.min(&flow.min).unwrap_or(u64::MAX);
                }
                fl.sched.activate(t.flow, &head, now);
                self.propagate(n, &head, now);
            }
        }
    }

    /// Counts `pkt` as offered to every node from `leaf` to the root and, if
    /// `reason` is given, as dropped there.
    fn account_path(&mut self, leaf: u32, pkt: &Packet, reason: Option<DropReason>) {
        let mut cur = leaf;
        while cur != NONE {
            let node = &mut self.nodes[cur as usize];
            node.counters.on_enqueue(pkt.len);
            match reason {
                Some(r) => node.counters.on_drop(r, pkt.len),
                None => {
                    node.backlog.packets += 1;
                    node.backlog.bytes += u64::from(pkt.len);
                }
            }
            cur = node.parent;
        }
    }

    fn refuse(&mut self, leaf: u32, pkt: Packet, reason: DropReason) -> Dropped {
        self.account_path(leaf, &pkt, Some(reason));
        self.counters.drop_packet(pkt, reason)
    }

    /// Checks every invariant: per-node accounting, queued units flagged active,
    /// throttled units absent from their parents, the pool's lists.
    ///
    /// # Panics
    /// On a violated invariant, naming the node.
    pub fn check_invariants(&self) {
        let mut fifos: Vec<&List> = Vec::new();
        for (i, node) in self.nodes.iter().enumerate() {
            let name = &self.spec.nodes[i].name;
            let c = &node.counters;
            assert_eq!(
                c.enqueued,
                c.dequeued + c.dropped_total() + node.backlog.packets,
                "node {name}: enqueued != dequeued + dropped + queued"
            );
            if node.throttled {
                assert!(
                    !node.active,
                    "node {name}: throttled but queued at its parent"
                );
            }
            assert_eq!(
                node.throttled,
                node.filed.is_some(),
                "node {name}: throttled without a shaper entry, or the reverse"
            );
            if node.parent != NONE && self.has_head(i as u32) {
                assert!(
                    node.active || node.throttled,
                    "node {name}: has a unit to send, but neither queued at its parent nor throttled"
                );
            }
            if node.parent != NONE {
                let parent = &self.nodes[node.parent as usize];
                if let Kind::Internal { sched, .. } = &parent.kind {
                    assert_eq!(
                        sched.is_active(node.slot),
                        node.active,
                        "node {name}: active flag"
                    );
                }
            }
            match &node.kind {
                Kind::Leaf { fifo } => {
                    assert_eq!(
                        u64::from(fifo.len()),
                        node.backlog.packets,
                        "leaf {name}: backlog"
                    );
                    fifos.push(fifo);
                }
                Kind::Internal { sched, children } => {
                    sched.check_invariants();
                    let sum: u64 = children
                        .iter()
                        .map(|&c| self.nodes[c as usize].backlog.packets)
                        .sum();
                    assert_eq!(
                        sum, node.backlog.packets,
                        "node {name}: backlog vs children"
                    );
                }
                Kind::Flows(fl) => {
                    fl.sched.check_invariants();
                    let mut sum = 0u64;
                    for (f, flow) in fl.flows.iter().enumerate() {
                        sum += u64::from(flow.fifo.len());
                        let active = fl.sched.is_active(f as u32);
                        assert!(
                            !(active && flow.throttled),
                            "leaf {name} flow {f}: throttled but queued"
                        );
                        if active {
                            assert!(
                                !flow.fifo.is_empty(),
                                "leaf {name} flow {f}: queued while empty"
                            );
                        } else if !flow.fifo.is_empty() {
                            assert!(
                                flow.throttled,
                                "leaf {name} flow {f}: backlogged, neither queued nor throttled"
                            );
                        }
                        let tagged = match &fl.sched {
                            NodeSched::Calendar(c) => c.tagged(f as u32),
                            _ => None,
                        };
                        if let Some(tags) = tagged {
                            assert_eq!(tags, flow.fifo.len(), "leaf {name} flow {f}: day tags");
                        }
                        fifos.push(&flow.fifo);
                    }
                    assert_eq!(sum, node.backlog.packets, "leaf {name}: backlog vs flows");
                }
            }
        }
        self.pool.check_invariants(fifos);
        let root = &self.nodes[self.root as usize];
        assert_eq!(root.backlog, self.backlog, "root backlog vs tree backlog");
        assert_eq!(
            self.counters.implied_backlog(),
            self.backlog.packets,
            "tree accounting"
        );
    }
}

fn sched_name(s: &NodeSched) -> String {
    match s {
        NodeSched::Ranked(r) => r.txn.name().to_string(),
        NodeSched::Hclock(_) => "hclock".to_string(),
        NodeSched::Core(c, _) => c.name().to_string(),
        NodeSched::Calendar(c) => c.name().to_string(),
    }
}

fn sched_stats(s: &NodeSched) -> Vec<QueueStats> {
    use eiffel_queue::PriorityQueue;
    match s {
        NodeSched::Ranked(r) => vec![r.queue().stats()],
        NodeSched::Hclock(h) => {
            let (a, b) = h.queues();
            vec![a.stats(), b.stats()]
        }
        NodeSched::Core(..) => Vec::new(),
        NodeSched::Calendar(c) => vec![c.stats()],
    }
}

/// The queue kind a ranked node ended up with (for tests and reports).
#[must_use]
pub fn node_queue_kind(tree: &PolicyTree, i: usize) -> Option<QueueKind> {
    let sched = match &tree.nodes[i].kind {
        Kind::Internal { sched, .. } => &**sched,
        Kind::Flows(fl) => &fl.sched,
        Kind::Leaf { .. } => return None,
    };
    match sched {
        NodeSched::Ranked(r) => Some(r.kind()),
        NodeSched::Calendar(_) => Some(QueueKind::Calendar),
        _ => None,
    }
}

impl Scheduler for PolicyTree {
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        let leaf = pkt.class;
        let is_leaf = (leaf as usize) < self.nodes.len()
            && !matches!(self.nodes[leaf as usize].kind, Kind::Internal { .. });
        if !is_leaf {
            return Err(self.counters.drop_packet(pkt, DropReason::Unclassified));
        }
        if pkt.len > self.spec.mtu {
            return Err(self.refuse(leaf, pkt, DropReason::TooLarge));
        }
        let node = &self.nodes[leaf as usize];
        if node.backlog.packets >= u64::from(node.capacity) {
            return Err(self.refuse(leaf, pkt, DropReason::FlowLimit));
        }
        if self.pool.is_full() {
            return Err(self.refuse(leaf, pkt, DropReason::QueueFull));
        }
        if let Kind::Flows(fl) = &self.nodes[leaf as usize].kind {
            let Some(flow) = fl.flows.get(pkt.flow as usize) else {
                return Err(self.refuse(leaf, pkt, DropReason::UnknownFlow));
            };
            if flow.fifo.len() >= fl.flow_queue_limit {
                return Err(self.refuse(leaf, pkt, DropReason::FlowLimit));
            }
        }
        if self.policed && self.policer_refuses(leaf, &pkt, now) {
            return Err(self.refuse(leaf, pkt, DropReason::Policer));
        }
        match &mut self.nodes[leaf as usize].kind {
            Kind::Leaf { fifo } => {
                if self.pool.push_back(fifo, pkt).is_err() {
                    unreachable!("pool space checked above");
                }
            }
            Kind::Flows(fl) => {
                let f = pkt.flow;
                let flow = &mut fl.flows[f as usize];
                let was_empty = flow.fifo.is_empty();
                if self.pool.push_back(&mut flow.fifo, pkt).is_err() {
                    unreachable!("pool space checked above");
                }
                fl.sched.on_arrival(f, &pkt);
                if let Some(m) = &mut fl.minima {
                    m.push(&mut flow.min, pkt.remaining);
                    fl.sched.units_mut()[f as usize].queued_min =
                        m.min(&flow.min).unwrap_or(u64::MAX);
                }
                let head = *self.pool.front(&flow.fifo).expect("just pushed");
                if was_empty && !flow.throttled {
                    if held(flow.gcra.as_ref(), now, self.slack) {
                        let at = flow.gcra.as_ref().map_or(now, Gcra::release_time);
                        flow.throttled = true;
                        let _ = self.shaper.throttle(
                            now,
                            at,
                            Throttled {
                                node: leaf,
                                flow: f,
                            },
                        );
                    } else {
                        fl.sched.activate(f, &head, now);
                    }
                } else if fl.sched.is_active(f) {
                    fl.sched.on_enqueue(f, &pkt, &head, now);
                }
            }
            Kind::Internal { .. } => unreachable!("checked to be a leaf"),
        }
        self.account_path(leaf, &pkt, None);
        self.backlog.packets += 1;
        self.backlog.bytes += u64::from(pkt.len);
        self.propagate(leaf, &pkt, now);
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        self.release_due(now);
        let root = self.root;
        if self.nodes[root as usize].throttled || !self.has_head(root) {
            return None;
        }
        // Descend along the selected units to a leaf and take its packet.
        let mut n = root;
        let pkt = loop {
            match &mut self.nodes[n as usize].kind {
                Kind::Internal { children, sched } => {
                    let u = sched.select(now).expect("a node with a head has a unit");
                    n = children[u as usize];
                }
                Kind::Leaf { fifo } => {
                    break self
                        .pool
                        .pop_front(fifo)
                        .expect("a leaf with a head has a packet")
                }
                Kind::Flows(fl) => {
                    let f = fl.sched.select(now).expect("a leaf with a head has a flow");
                    let flow = &mut fl.flows[f as usize];
                    let pkt = self
                        .pool
                        .pop_front(&mut flow.fifo)
                        .expect("a queued flow has a packet");
                    if let Some(m) = &mut fl.minima {
                        m.pop(&mut flow.min, pkt.remaining);
                        fl.sched.units_mut()[f as usize].queued_min =
                            m.min(&flow.min).unwrap_or(u64::MAX);
                    }
                    let mut next = self.pool.front(&flow.fifo).copied();
                    if let Some(g) = &mut flow.gcra {
                        g.on_send(now, pkt.len);
                        if next.is_some() && !g.conforms(now.saturating_add(self.slack)) {
                            let at = g.release_time();
                            flow.throttled = true;
                            let _ = self
                                .shaper
                                .throttle(now, at, Throttled { node: n, flow: f });
                            next = None;
                        }
                    }
                    fl.sched.served(f, &pkt, next.as_ref(), now);
                    break pkt;
                }
            }
        };
        // Unwind: each node on the path sent `pkt`; its parent re-ranks it, or drops
        // it from its queue when it is empty or throttled.
        let mut c = n;
        loop {
            let node = &mut self.nodes[c as usize];
            node.counters.on_dequeue(pkt.len);
            node.backlog.packets -= 1;
            node.backlog.bytes -= u64::from(pkt.len);
            if let Some(g) = &mut node.limit {
                g.on_send(now, pkt.len);
            }
            let parent = node.parent;
            if parent == NONE {
                if self.has_head(c) {
                    if let Some(at) = self.hold(c, now) {
                        self.throttle_node(c, now, at);
                    }
                }
                break;
            }
            let slot = node.slot;
            let next = if !self.has_head(c) {
                None
            } else if let Some(at) = self.hold(c, now) {
                self.throttle_node(c, now, at);
                None
            } else {
                self.head_of(c, now)
            };
            self.nodes[c as usize].active = next.is_some();
            self.sched_mut(parent)
                .served(slot, &pkt, next.as_ref(), now);
            c = parent;
        }
        self.counters.on_dequeue(pkt.len);
        self.backlog.packets -= 1;
        self.backlog.bytes -= u64::from(pkt.len);
        Some(pkt)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        if self.backlog.packets == 0 {
            return None;
        }
        if !self.nodes[self.root as usize].throttled && self.has_head(self.root) {
            return Some(now);
        }
        self.shaper.next_due()
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn name(&self) -> &'static str {
        "policy-tree"
    }
}
