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
//! ## Shaping by program
//! A per-flow leaf may instead (or also) give each flow's release times by a
//! program, [`NodeSpec::flow_release`]: a [`RankProgram`] whose result is the time
//! the flow's next packet may leave, computed with per-flow state when a packet
//! arrives into an empty flow and after every send (a token bucket, a pacing
//! rate, any timestamping rule). A flow whose next release time lies beyond the
//! shaper's precision is filed in the same one shaper until then and re-enters
//! the leaf's queue when released, ordered there by the leaf's discipline: the
//! rank decides the order, the release time only when, as in Eiffel's
//! decoupled shaping (section 3.2.2). With both, the later time holds.
//!
//! Any node, internal or leaf, may likewise give its own output's release times
//! by a program, [`NodeSpec::release`], with one set of state: computed when a
//! packet arrives into the node's empty subtree and after every send from it.
//! A node whose release time lies beyond the shaper's precision is filed in the
//! shaper and leaves its parent's queue, exactly as a node held by its `limit`
//! (shaping at any level, section 3.2.2); with a `limit` too, the later time
//! holds. A token bucket written this way releases every packet at the time the
//! built-in node limit does.
//!
//! ## Costs
//! With tree depth `d`: `enqueue` and `dequeue` perform at most one queue operation
//! per level, each O(1) on the bucketed queues, plus the head look-ups that give a
//! parent's transaction the packet its child will send next (`d` steps per level, so
//! O(d^2) with a small constant; trees are a few levels deep). Nothing is allocated
//! after construction.
//!
//! Where the time goes in a large tree is memory, so the layout serves the packet
//! path: a node is two cache lines (links, flags, backlog and the kind with its
//! FIFO or discipline in the first, the rate limit and sent counts in the second;
//! drop counts and shaper entries apart), a FIFO keeps its head's length so that a
//! parent needs no packet to rank a child, heads travel up the tree as pool slots,
//! and the shaper answers "nothing due" from one cached instant. A dequeue
//! remembers the leaf the next one takes from when every discipline above it
//! selects without side effects (ranked and strict nodes, fair-queueing
//! cores), so a run of dequeues descends to it directly; any other change
//! forgets it. A `strict` node whose children have distinct priorities below
//! 64 keeps its queue as one word of levels. In a tree larger than the cache,
//! a parent turning to another child prefetches the next packets of that
//! child's leaves. Dequeues at one instant that keep passing through one node
//! whose ancestors are DRR or strict-priority nodes stop their unwinding at it
//! while every ancestor would pick the same child again and no limit would
//! hold; the ancestors' counts, deficits and limits catch up before anything
//! else reads them, with the values the packets one by one would have left
//! (`run.rs`).
//! [`PolicyTree::enqueue_burst`] prefetches the path of the packets ahead in a
//! tree larger than the cache.

//! ## Accounting
//! Every node counts the packets (and bytes) queued in its subtree, leaving it,
//! and dropped in it by reason; what entered it is their sum, so for every node
//! `enqueued == dequeued + dropped + queued` ([`PolicyTree::node`]'s counters).
//! [`PolicyTree::check_invariants`] checks the counts against each other: a
//! leaf's queued packets against its FIFOs, an internal node's queued, sent and
//! dropped packets and bytes against the sums over its children, and the root's
//! arrivals and departures against the tree's own count of every packet offered
//! and returned.
//!
//! ## Eligibility time
//! [`Scheduler::next_ready`] is `now` when a packet can leave, otherwise the earliest
//! release time in the shaper: the first moment the tree's eligibility can change.
//! When that release is of a unit whose ancestor is itself still throttled, `dequeue`
//! at that time returns `None` and `next_ready` then names the next release.

mod auto;
mod build;
mod burst;
mod cq;
mod discipline;
mod ets;
mod footprint;
mod invariants;
mod levels;
mod minq;
mod node;
mod nodes;
mod pipes;
mod program;
mod run;
mod sched;
mod select;
mod shaper;
mod spec;
mod store;
#[cfg(test)]
mod testing;
pub mod txn;
mod validate;
mod view;

use crate::packet::{ClassId, Nanos, Packet};
use crate::pool::PacketPool;
use crate::scheduler::{
    Backlog, ConfigError, Counters, DropCounts, DropReason, Dropped, Scheduler,
};
use eiffel_queue::Handle;

pub use auto::{AutoTree, Executor};
pub use cq::{b_wfi_bound, fairness_bound};
pub use discipline::{
    CalendarPolicy, CalendarSpec, Discipline, EdfRotation, FairQueue, QueueChoice, Rank,
    DEFAULT_PERIOD, MAX_CALENDAR_BYTES, MAX_PERIOD, MAX_POLICER_RATE,
};
pub use footprint::{Allocation, Footprint, Part};
use node::{FlowLeaf, Kind, NONE};
pub use pipes::{PipeError, PipeTree, ShapeError, ShapeProblem};
use program::NodePacer;
pub use program::{
    Field, Op, Program, ProgramError, RankProgram, Var, MAX_SLOTS, MAX_STACK, MAX_STATE,
};
use sched::{After, Next, NodeSched, Ranked};
pub use select::QueuePlan;
pub use shaper::Gcra;
use shaper::{Shaper, Throttled, UNIT_NODE};
pub use spec::{NodeSpec, PerFlow, RateLimit, ShaperSpec, TreeSpec, MAX_WEIGHT};
use txn::Builtin;
pub use txn::{Transaction, Unit, VT_SCALE};
pub use validate::{NodeProblem, SpecError};
pub use view::{node_queue_kind, NodeView};

/// Deepest tree supported (root at depth 0).
pub const MAX_DEPTH: usize = 32;

/// A programmable scheduling policy: a tree of disciplines with one shaper.
#[derive(Debug)]
pub struct PolicyTree {
    spec: TreeSpec,
    nodes: nodes::Nodes,
    plans: Vec<Vec<QueuePlan>>,
    root: u32,
    pool: PacketPool,
    shaper: Shaper,
    /// The shaper's precision: a unit whose release time is within this many ns
    /// counts as released (see [`Gcra`]).
    slack: Nanos,
    /// Whether some node's discipline may refuse packets (`cq-policer`).
    policed: bool,
    /// Per node: it and every ancestor ignore arrivals behind a queued unit's
    /// head, so an arrival into an already-queued child changes nothing above.
    quiet: Vec<bool>,
    /// Per node: every ancestor's `select` is a pure `peek` (ranked nodes and
    /// fair-queueing cores), so the path to it may be remembered.
    pure: Vec<bool>,
    /// The leaf the next dequeue takes its packet from, found by the last
    /// dequeue when every ancestor of it selects purely; `NONE` when unknown.
    /// Whatever changes a discipline outside a dequeue forgets it.
    // NB: a burst of dequeues then descends to the leaf directly instead of
    // selecting at every level (`eiffel bench hqos`: 31 of 32 dequeues).
    ahead: u32,
    /// Whether `enqueue_burst` prefetches (the nodes exceed the cache).
    prefetching: bool,
    /// The run in progress: dequeues at one instant through one node, whose
    /// ancestors' sends wait (see `run`).
    run: run::Run,
    /// Per node: whether a run may go through it (its ancestors let a run
    /// defer their sends).
    run_tops: Vec<bool>,
    /// The instant of the last dequeue, when nothing but dequeues followed it.
    dequeued_at: Option<Nanos>,
    counters: Counters,
    backlog: Backlog,
    /// Per node: the packets dropped in its subtree, by reason (cold: only
    /// drops touch it).
    drops: Vec<DropCounts>,
    /// Per node, while it is throttled: its shaper entry and the release time
    /// it was filed for.
    filed: Vec<Option<(Handle, Nanos)>>,
    /// Per node: its release-time program and the time it gave (cold: only
    /// nodes with `release` have one, and they are flagged `holds`).
    paced: Vec<Option<Box<NodePacer>>>,
}

/// A unit's next packet as the tree passes it up: its pool slot, its length
/// and its leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    slot: u32,
    len: u32,
    leaf: u32,
}

impl Head {
    /// The head of `fifo` of leaf `leaf`, in `pool`.
    #[inline]
    fn of(pool: &PacketPool, fifo: &crate::pool::Fifo, leaf: u32) -> Option<Head> {
        Some(Head {
            slot: pool.front_slot(fifo)?,
            len: fifo.front_len(),
            leaf,
        })
    }
}

/// What a dequeue's unwinding carries up to a node from the child that sent:
/// the child, the child's next packet, and what the node's discipline said of
/// its next unit when told of the send.
#[derive(Clone, Copy, Debug)]
struct Below {
    child: u32,
    /// The child's unit in the node (its index among the node's children).
    unit: u32,
    head: Option<Head>,
    after: After,
}

/// What a node's own state says right after it sent, before its discipline is
/// asked for its next packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterSend {
    /// Packets are left and nothing holds the node.
    Open,
    /// Nothing is left below the node.
    Empty,
    /// Its rate limit holds it.
    Held,
    /// It has a release program or a discipline that may hold every unit:
    /// both are asked.
    Programmed,
}

/// The discipline of internal node `n` (a function of the nodes alone, so that
/// the pool may be borrowed beside it).
#[inline]
fn sched_of(nodes: &mut nodes::Nodes, n: u32) -> &mut NodeSched {
    match &mut nodes.at_mut(n).kind {
        Kind::Internal { sched, .. } => sched,
        _ => unreachable!("only internal nodes have children"),
    }
}

/// Takes the packet of the flow a per-flow leaf (node `n`) selects, and tells its
/// flow scheduler what the flow has next: nothing when the flow is empty or
/// its limit or release program holds it (the flow then waits in the shaper).
fn dequeue_flow(
    fl: &mut FlowLeaf,
    pool: &mut PacketPool,
    shaper: &mut Shaper,
    slack: Nanos,
    n: u32,
    now: Nanos,
) -> Packet {
    let f = fl.sched.select(now).expect("a leaf with a head has a flow");
    let flow = &mut fl.flows[f as usize];
    let pkt = pool
        .pop_front(&mut flow.fifo)
        .expect("a queued flow has a packet");
    if let Some(m) = &mut fl.minima {
        m.pop(&mut flow.min, pkt.remaining);
        fl.sched.units_mut()[f as usize].queued_min = m.min(&flow.min).unwrap_or(u64::MAX);
    }
    let mut next = pool.front(&flow.fifo).map(|p| Next {
        pkt: p,
        len: flow.fifo.front_len(),
    });
    if let Some(g) = &mut flow.gcra {
        g.on_send(now, pkt.len);
    }
    if let Some(p) = &mut fl.pacer {
        flow.due = p
            .on_send(f, &pkt, next.as_ref().map(|n| n.pkt), now)
            .unwrap_or(0);
    }
    if next.is_some() {
        if let Some(at) = flow_hold(flow.gcra.as_ref(), flow.due, now, slack) {
            flow.throttled = true;
            let _ = shaper.throttle(now, at, Throttled { node: n, flow: f });
            next = None;
        }
    }
    fl.sched.served(f, &pkt, next, now);
    pkt
}

/// Until when flow state holds a flow back at `now`: its limit (beyond the
/// shaper's precision `slack`) and the release time `due` its pacer gave its head,
/// whichever is later; `None` if neither does.
#[inline]
fn flow_hold(limit: Option<&Gcra>, due: Nanos, now: Nanos, slack: Nanos) -> Option<Nanos> {
    let soon = now.saturating_add(slack);
    let limit = limit.filter(|g| !g.conforms(soon)).map(Gcra::release_time);
    let paced = (due > soon).then_some(due);
    match (limit, paced) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

impl PolicyTree {
    /// Which nodes are quiet: they and all their ancestors ignore arrivals.
    fn quiet_nodes(&self) -> Vec<bool> {
        (0..self.nodes.len())
            .map(|i| {
                let mut cur = i as u32;
                while cur != NONE {
                    let node = self.nodes.at(cur);
                    if !node.kind.sched().is_none_or(NodeSched::ignores_arrivals) {
                        return false;
                    }
                    cur = node.parent;
                }
                true
            })
            .collect()
    }

    /// Which nodes have only purely selecting ancestors (see `pure`).
    fn pure_nodes(&self) -> Vec<bool> {
        self.per_node(|i| {
            self.every_ancestor(i, |node| {
                node.kind.sched().is_some_and(NodeSched::selects_purely)
            })
        })
    }

    /// `f` of every node, by index.
    fn per_node(&self, f: impl Fn(u32) -> bool) -> Vec<bool> {
        (0..self.nodes.len() as u32).map(f).collect()
    }

    /// Whether every strict ancestor of node `i` satisfies `f` (true for the
    /// root).
    fn every_ancestor(&self, i: u32, f: impl Fn(&node::Node) -> bool) -> bool {
        let mut cur = self.nodes.at(i).parent;
        while cur != NONE {
            let node = self.nodes.at(cur);
            if !f(node) {
                return false;
            }
            cur = node.parent;
        }
        true
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
        (!self.nodes[i].kind.is_internal()).then_some(i as ClassId)
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
        self.settle();
        let discipline = self.spec.nodes[i].discipline.name();
        let no_transaction = |discipline| ConfigError::NoTransaction {
            name: name.to_owned(),
            discipline,
        };
        let Some(sched) = self.nodes[i].kind.sched_mut() else {
            return Err(no_transaction("one FIFO"));
        };
        match sched {
            NodeSched::Ranked(r) => {
                r.txn = Builtin::Custom(txn);
                self.quiet = self.quiet_nodes();
                self.ahead = NONE;
                Ok(())
            }
            NodeSched::Levels(l) => {
                // Custom ranks need the queue the policy planned.
                let units = core::mem::take(&mut l.units);
                let ranked = Ranked::new(&self.plans[i][0], units, Builtin::Custom(txn), false)?;
                *sched = NodeSched::Ranked(Box::new(ranked));
                self.quiet = self.quiet_nodes();
                self.run_tops = self.run_tops();
                self.ahead = NONE;
                Ok(())
            }
            NodeSched::Hclock(_)
            | NodeSched::Core(..)
            | NodeSched::Ets(_)
            | NodeSched::Calendar(_) => Err(no_transaction(discipline)),
        }
    }

    /// Whether node `n` has a packet it could send (ignoring its own throttle).
    #[inline]
    fn has_head(&self, n: u32) -> bool {
        match &self.nodes.at(n).kind {
            Kind::Leaf { fifo } => !fifo.is_empty(),
            kind => kind.sched().is_some_and(|s| !s.is_empty()),
        }
    }

    /// The packet node `n` would send next: its pool slot and its length.
    // NB: a slot, not the packet: a descriptor is 56 bytes, and passing copies
    // of it up the tree at every level of a dequeue cost more instructions
    // than the levels' disciplines. The length comes from the FIFO, in the
    // leaf's first line: the fair-queueing cores need no more, and the packet
    // itself (a cache miss in a large tree) is read when it leaves.
    fn head_of(&mut self, n: u32, now: Nanos) -> Option<Head> {
        self.descend(n, now)
    }

    /// [`PolicyTree::head_of`], inlined where a dequeue asks and where an
    /// arrival activates a node.
    // NB: called, the head came back through memory in 4-byte stores that
    // the caller read 8 bytes at a time: a failed store forwarding, a tenth
    // of a dequeue's cycles at 4K queues of `eiffel bench hqos`; inlined at
    // the activation too, 3% of that benchmark's time.
    #[inline(always)]
    fn descend(&mut self, n: u32, now: Nanos) -> Option<Head> {
        let mut n = n;
        loop {
            match &mut self.nodes.at_mut(n).kind {
                Kind::Leaf { fifo } => return Head::of(&self.pool, fifo, n),
                Kind::Flows(fl) => {
                    let f = fl.sched.peek(now)?;
                    return Head::of(&self.pool, &fl.flows[f as usize].fifo, n);
                }
                Kind::Internal { children, sched } => {
                    let u = sched.peek(now)?;
                    n = children[u as usize];
                }
            }
        }
    }

    /// The packet node `n` would send next, given that its child `below.child`
    /// (if any) would send `below.head` and that `n`'s discipline answered
    /// `below.after` when told of the send: when `n` picks that child again,
    /// as it mostly does after serving it, no descent is needed. A FIFO leaf
    /// comes with its own next packet (`After::Own`).
    #[inline(always)]
    fn head_after(&mut self, n: u32, below: Below, now: Nanos) -> Option<Head> {
        // NB: the unit, not the child it names, tells a repeat: the node's
        // child list is read only when it turns to another child.
        let u = match below.after {
            After::Unit(u) => u,
            After::Own => return below.head,
            After::Empty => return None,
            After::Ask if below.child == NONE => return self.descend(n, now),
            After::Ask => sched_of(&mut self.nodes, n).peek(now)?,
        };
        if u == below.unit && below.head.is_some() {
            return below.head;
        }
        let Kind::Internal { children, .. } = &self.nodes.at(n).kind else {
            unreachable!("a node with a child is internal")
        };
        let pick = children[u as usize];
        if self.prefetching {
            // `n` turns to another child: its leaves send next.
            self.prefetch_family(pick);
        }
        self.descend(pick, now)
    }

    /// After node `c` sent a packet: the packet it sends next, or `None` if it
    /// has none or is now held (then it is filed in the shaper). `below` is the
    /// child that sent and its next packet (see `head_after`); `state` what the
    /// node's own counts and limit said after the send.
    #[inline]
    fn next_head(&mut self, c: u32, below: Below, state: AfterSend, now: Nanos) -> Option<Head> {
        match state {
            AfterSend::Open => self.head_after(c, below, now),
            AfterSend::Empty => None,
            AfterSend::Held => {
                let at = self.nodes.at(c).limit.release_time();
                self.throttle_node(c, now, at);
                None
            }
            AfterSend::Programmed => self.next_head_programmed(c, below, now),
        }
    }

    /// [`PolicyTree::next_head`] for a node with a release program or a
    /// discipline that may hold all its units.
    fn next_head_programmed(&mut self, c: u32, below: Below, now: Nanos) -> Option<Head> {
        if !self.has_head(c) {
            // Packets below, every unit held: a release program still
            // files the node by its own time, as a limit does.
            if self.nodes.at(c).backlog.packets > 0 && self.paced[c as usize].is_some() {
                if let Some(at) = self.hold(c, now) {
                    self.throttle_node(c, now, at);
                }
            }
            return None;
        }
        if let Some(at) = self.hold(c, now) {
            self.throttle_node(c, now, at);
            return None;
        }
        self.head_after(c, below, now)
    }

    /// When node `n` may next send, if it is held at `now`: by its rate limit
    /// (beyond the shaper's precision) or by a discipline holding all its units
    /// back (the policer's future days); `None` if nothing holds it. A held node
    /// is released strictly after `now + slack`, in a future slot of the shaper.
    #[inline]
    fn hold(&self, n: u32, now: Nanos) -> Option<Nanos> {
        let node = self.nodes.at(n);
        let limit = (node.limited && !node.limit.conforms(now.saturating_add(self.slack)))
            .then(|| node.limit.release_time());
        if !node.holds {
            return limit;
        }
        let discipline = node.kind.sched().and_then(|s| s.hold(now));
        let soon = now.saturating_add(self.slack);
        let paced = self.paced[n as usize]
            .as_ref()
            .and_then(|p| (p.due > soon).then_some(p.due));
        [limit, discipline, paced].into_iter().flatten().max()
    }

    /// Runs node `c`'s release program after it sent `sent` (it holds packets
    /// still when `left`).
    #[cold]
    fn pace_send(&mut self, c: u32, sent: &Packet, left: bool, now: Nanos) {
        if self.paced[c as usize].is_none() {
            return;
        }
        let next = if left {
            self.head_of(c, now).map(|h| *self.pool.at(h.slot))
        } else {
            None
        };
        if let Some(p) = &mut self.paced[c as usize] {
            p.on_send(sent, next.as_ref(), left, now);
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
        self.nodes.at_mut(n).throttled = true;
        self.filed[n as usize] = Some((handle, at));
    }

    /// Throttled node `n` got a new unit: a discipline that held it back may now
    /// release it sooner (a unit in an earlier day of the policer). Withdraws it
    /// from the shaper if it may send now, or files it earlier; returns whether it
    /// is still held. A rate limit alone is not affected by arrivals.
    fn still_held(&mut self, n: u32, now: Nanos) -> bool {
        if self.spec.nodes[n as usize].discipline.is_work_conserving() {
            return true;
        }
        let Some((handle, at)) = self.filed[n as usize] else {
            return true;
        };
        match self.hold(n, now) {
            None => {
                self.shaper.withdraw(handle);
                self.nodes.at_mut(n).throttled = false;
                self.filed[n as usize] = None;
                false
            }
            Some(sooner) if sooner < at => {
                self.shaper.reschedule(handle, sooner);
                self.filed[n as usize] = Some((handle, sooner));
                true
            }
            Some(_) => true,
        }
    }

    /// Node `start`'s own state changed (a unit became eligible in it, its FIFO got
    /// a packet, or it was released): activate it in its parent, or refresh its
    /// rank there, and so on up to the root.
    fn propagate(&mut self, start: u32, trigger: &Packet, now: Nanos) {
        self.ahead = NONE;
        let mut cur = start;
        loop {
            if self.nodes.at(cur).throttled && self.still_held(cur, now) {
                return;
            }
            let parent = self.nodes.at(cur).parent;
            if parent == NONE {
                if !self.nodes.at(cur).throttled && self.has_head(cur) {
                    if let Some(at) = self.hold(cur, now) {
                        self.throttle_node(cur, now, at);
                    }
                }
                return;
            }
            let slot = self.nodes.at(cur).slot;
            if self.nodes.at(cur).active {
                if self.quiet[parent as usize] {
                    // Nothing above reorders on an arrival behind a queued head.
                    return;
                }
                let head = self.head_of(cur, now).expect("an active node has a head");
                let head = self.pool.at(head.slot);
                sched_of(&mut self.nodes, parent).on_enqueue(slot, trigger, head, now);
            } else {
                if !self.has_head(cur) {
                    return;
                }
                if let Some(at) = self.hold(cur, now) {
                    self.throttle_node(cur, now, at);
                    return;
                }
                let head = self
                    .descend(cur, now)
                    .expect("a node that may send has a head");
                let head = self.pool.at(head.slot);
                sched_of(&mut self.nodes, parent).activate(slot, head, now);
                self.nodes.at_mut(cur).active = true;
            }
            cur = parent;
        }
    }

    /// Whether a `cq-policer` on the path from `leaf` to the root refuses `pkt`
    /// (before it is queued, so that a refusal changes nothing).
    fn policer_refuses(&self, leaf: u32, pkt: &Packet, now: Nanos) -> bool {
        if let Kind::Flows(fl) = &self.nodes.at(leaf).kind {
            let queued = fl.flows[pkt.flow as usize].fifo.bytes();
            if fl.sched.refuses(pkt.flow, pkt, queued, now) {
                return true;
            }
        }
        let mut cur = leaf;
        loop {
            let node = self.nodes.at(cur);
            if node.parent == NONE {
                return false;
            }
            if let Kind::Internal { sched, .. } = &self.nodes.at(node.parent).kind {
                if sched.refuses(node.slot, pkt, node.backlog.bytes, now) {
                    return true;
                }
            }
            cur = node.parent;
        }
    }

    /// Releases every throttled unit whose time has come.
    fn release_due(&mut self, now: Nanos) {
        while let Some(t) = self.shaper.pop_due(now) {
            self.settle();
            self.ahead = NONE;
            let n = t.node;
            if t.flow == UNIT_NODE {
                self.nodes.at_mut(n).throttled = false;
                self.filed[n as usize] = None;
                if let Some(at) = self.hold(n, now) {
                    // Filed beyond the horizon, released early: file it again.
                    self.throttle_node(n, now, at);
                    continue;
                }
                if let Some(head) = self.head_of(n, now) {
                    let head = *self.pool.at(head.slot);
                    self.propagate(n, &head, now);
                }
            } else {
                let Kind::Flows(fl) = &mut self.nodes.at_mut(n).kind else {
                    unreachable!("flow releases come from per-flow leaves")
                };
                let flow = &mut fl.flows[t.flow as usize];
                flow.throttled = false;
                if let Some(at) = flow_hold(flow.gcra.as_ref(), flow.due, now, self.slack) {
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

    /// Counts `pkt` as queued in every node from `leaf` to the root (at `now`:
    /// a node with a release program whose subtree was empty runs it).
    #[inline]
    fn account_path(&mut self, leaf: u32, pkt: &Packet, now: Nanos) {
        let mut cur = leaf;
        while cur != NONE {
            let node = self.nodes.at_mut(cur);
            node.backlog.packets += 1;
            node.backlog.bytes += u64::from(pkt.len);
            let parent = node.parent;
            if node.holds && node.backlog.packets == 1 {
                if let Some(p) = &mut self.paced[cur as usize] {
                    p.on_arrival(pkt, now);
                }
            }
            cur = parent;
        }
    }

    /// Unwinds a dequeue of `pkt` from `leaf` (which passes `below` up): each
    /// node on the path sent it; its parent is told, and drops it from its
    /// queue when it is empty or throttled. A run through a node on the path
    /// (see `run`) ends the unwinding there when it can go on; a dequeue
    /// following another at `now` (`in_run`) may start one.
    #[inline(always)]
    fn unwind(&mut self, leaf: u32, pkt: &Packet, mut below: Below, in_run: bool, now: Nanos) {
        // The lowest node a run may start at, and its next packet.
        let mut start = None;
        let mut c = leaf;
        loop {
            let node = self.nodes.at_mut(c);
            node.sent.packets += 1;
            node.sent.bytes += u64::from(pkt.len);
            node.backlog.packets -= 1;
            node.backlog.bytes -= u64::from(pkt.len);
            let held = node.limited && node.limit.send_then_held(now, pkt.len, self.slack);
            let (parent, slot, left) = (node.parent, node.slot, node.backlog.packets);
            // NB: the backlog, not the discipline, says whether anything is
            // left (one load instead of two dispatches); a node whose units are
            // all throttled then files itself in the shaper if its own limit
            // holds it, which it would do anyway when a unit came back.
            let state = if node.holds {
                self.pace_send(c, pkt, left > 0, now);
                AfterSend::Programmed
            } else if left == 0 {
                AfterSend::Empty
            } else if held {
                AfterSend::Held
            } else {
                AfterSend::Open
            };
            let next = self.next_head(c, below, state, now);
            if c == self.run.top {
                if self.run.extend(pkt.len, next.map(|h| h.len)) {
                    // Every ancestor would pick this path again.
                    self.note_next(next);
                    return;
                }
                self.settle();
            }
            if in_run && start.is_none() && next.is_some() && self.may_start_run(c, left) {
                start = Some((c, next));
            }
            if parent == NONE {
                self.note_next(next);
                // A run starts where the root's next packet is the top's.
                if let (Some((top, top_next)), Some(root_next)) = (start, next) {
                    if top_next == next {
                        self.start_run(top, root_next, now);
                    }
                }
                return;
            }
            // A node that sent was queued in its parent: only leaving changes
            // the flag.
            debug_assert!(self.nodes.at(c).active, "node {c} sent while not queued");
            if next.is_none() {
                self.nodes.at_mut(c).active = false;
            }
            let head = next;
            let next = next.map(|h| Next {
                pkt: self.pool.at(h.slot),
                len: h.len,
            });
            let after = sched_of(&mut self.nodes, parent).served_peek(slot, pkt, next, now);
            below = Below {
                child: c,
                unit: slot,
                head,
                after,
            };
            c = parent;
        }
    }

    /// The root's next packet is `next`: fetch it for the next dequeue, and
    /// remember its leaf where the path to it may be remembered.
    #[inline(always)]
    fn note_next(&mut self, next: Option<Head>) {
        if let Some(head) = next {
            eiffel_queue::prefetch(self.pool.at(head.slot));
            if self.pure[head.leaf as usize] {
                self.ahead = head.leaf;
            }
        }
    }

    /// Counts `pkt` as dropped for `reason` in every node from `leaf` to the root.
    #[cold]
    fn refuse(&mut self, leaf: u32, pkt: Packet, reason: DropReason) -> Dropped {
        let mut cur = leaf;
        while cur != NONE {
            self.drops[cur as usize].packets[reason.index()] += 1;
            self.drops[cur as usize].bytes[reason.index()] += u64::from(pkt.len);
            cur = self.nodes.at(cur).parent;
        }
        self.counters.drop_packet(pkt, reason)
    }
}

impl Scheduler for PolicyTree {
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.settle();
        self.dequeued_at = None;
        self.counters.on_enqueue(pkt.len);
        let leaf = pkt.class;
        let is_leaf = (leaf as usize) < self.nodes.len() && !self.nodes.at(leaf).kind.is_internal();
        if !is_leaf {
            return Err(self.counters.drop_packet(pkt, DropReason::Unclassified));
        }
        if pkt.len > self.spec.mtu {
            return Err(self.refuse(leaf, pkt, DropReason::TooLarge));
        }
        let node = self.nodes.at(leaf);
        if node.backlog.packets >= u64::from(node.capacity) {
            return Err(self.refuse(leaf, pkt, DropReason::LeafFull));
        }
        if self.pool.is_full() {
            return Err(self.refuse(leaf, pkt, DropReason::QueueFull));
        }
        if let Kind::Flows(fl) = &self.nodes.at(leaf).kind {
            let Some(flow) = fl.flows.get(pkt.flow as usize) else {
                return Err(self.refuse(leaf, pkt, DropReason::UnknownFlow));
            };
            if flow.fifo.len() >= fl.flow_queue_limit {
                return Err(self.refuse(leaf, pkt, DropReason::LeafFull));
            }
        }
        if self.policed && self.policer_refuses(leaf, &pkt, now) {
            return Err(self.refuse(leaf, pkt, DropReason::Policer));
        }
        match &mut self.nodes.at_mut(leaf).kind {
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
                    if let Some(p) = &mut fl.pacer {
                        flow.due = p.on_arrival(f, &pkt, now);
                    }
                    if let Some(at) = flow_hold(flow.gcra.as_ref(), flow.due, now, self.slack) {
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
        self.account_path(leaf, &pkt, now);
        self.backlog.packets += 1;
        self.backlog.bytes += u64::from(pkt.len);
        self.propagate(leaf, &pkt, now);
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        if self.run.top != NONE && self.run.now != now {
            self.settle();
        }
        let in_run = self.dequeued_at == Some(now);
        self.release_due(now);
        // Descend along the selected units to a leaf (or straight to the leaf
        // the last dequeue found) and take its packet.
        // NB: a remembered leaf says the root may send: the last dequeue found
        // its next packet, and whatever changed the tree since forgot it.
        let mut n = core::mem::replace(&mut self.ahead, NONE);
        if n == NONE {
            let root = self.root;
            if self.nodes.at(root).throttled || !self.has_head(root) {
                return None;
            }
            n = root;
        }
        // What the leaf passes up: for a FIFO, its own next packet.
        let mut below = Below {
            child: NONE,
            unit: NONE,
            head: None,
            after: After::Ask,
        };
        let pkt = loop {
            match &mut self.nodes.at_mut(n).kind {
                Kind::Internal { children, sched } => {
                    let u = sched.select(now).expect("a node with a head has a unit");
                    n = children[u as usize];
                }
                Kind::Leaf { fifo } => {
                    let pkt = if self.prefetching {
                        self.pool.pop_front_ahead(fifo)
                    } else {
                        self.pool.pop_front(fifo)
                    };
                    below.head = Head::of(&self.pool, fifo, n);
                    below.after = After::Own;
                    break pkt.expect("a leaf with a head has a packet");
                }
                Kind::Flows(fl) => {
                    break dequeue_flow(fl, &mut self.pool, &mut self.shaper, self.slack, n, now)
                }
            }
        };
        self.unwind(n, &pkt, below, in_run, now);
        self.dequeued_at = Some(now);
        self.counters.on_dequeue(pkt.len);
        self.backlog.packets -= 1;
        self.backlog.bytes -= u64::from(pkt.len);
        Some(pkt)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        if self.backlog.packets == 0 {
            return None;
        }
        if !self.nodes.at(self.root).throttled && self.has_head(self.root) {
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
