//! Differential tests of tree executors: two executors built from one spec of
//! the pipe shape (DRR nodes down to depth `d`, `ets` pipes at depth `d`,
//! FIFO leaves below them) are driven in lockstep by one sequence of
//! operations and compared after every step: each dequeued packet, each drop
//! and its reason, the next release time, the backlog and the counters of the
//! whole tree and of every node, and which nodes the shaper holds.
//!
//! The reference is always [`PolicyTree`]; the executor under test is built by
//! [`candidate`], the one place to change to test another executor (see its
//! comment).

use std::panic::{catch_unwind, AssertUnwindSafe};

use eiffel_sched::tree::{Discipline, FairQueue, NodeSpec, RateLimit, ShaperSpec, TreeSpec};
use eiffel_sched::{
    Backlog, ClassId, Counters, DropReason, Dropped, Duration, Nanos, Packet, PolicyTree, Rate,
    Scheduler,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

// ---------------------------------------------------------------------------
// The executors under comparison.
// ---------------------------------------------------------------------------

/// What the harness observes of a tree executor. Node ids are spec indices.
trait Executor {
    /// The class id of leaf `name`, `None` for an internal node or no node.
    fn leaf(&self, name: &str) -> Option<ClassId>;
    /// Enqueues `pkts` in order at `now`, handing each refused packet to
    /// `dropped`; returns how many were queued.
    fn enqueue_burst(&mut self, pkts: &[Packet], now: Nanos, dropped: impl FnMut(Dropped))
        -> usize;
    /// The next packet to send at `now`.
    fn dequeue(&mut self, now: Nanos) -> Option<Packet>;
    /// The earliest time a dequeue can return a packet.
    fn next_ready(&self, now: Nanos) -> Option<Nanos>;
    /// Packets and bytes queued in the whole tree.
    fn backlog(&self) -> Backlog;
    /// The whole tree's counters.
    fn counters(&self) -> Counters;
    /// Node `i`'s counters.
    fn node_counters(&self, i: usize) -> Counters;
    /// Packets and bytes queued in node `i`'s subtree.
    fn node_backlog(&self, i: usize) -> Backlog;
    /// Whether node `i` is held by the shaper.
    fn is_throttled(&self, i: usize) -> bool;
    /// Panics on a broken internal invariant.
    fn check_invariants(&self);

    /// Node `i`'s counters, backlog and throttled state at once: what the
    /// harness compares, for an executor that gets all three more cheaply
    /// together (`PolicyTree::node` builds a whole view per call).
    fn node_state(&self, i: usize) -> NodeState {
        NodeState {
            counters: self.node_counters(i),
            backlog: self.node_backlog(i),
            throttled: self.is_throttled(i),
        }
    }
}

/// One node's observables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct NodeState {
    counters: Counters,
    backlog: Backlog,
    throttled: bool,
}

impl Executor for PolicyTree {
    fn leaf(&self, name: &str) -> Option<ClassId> {
        PolicyTree::leaf(self, name)
    }
    fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        dropped: impl FnMut(Dropped),
    ) -> usize {
        PolicyTree::enqueue_burst(self, pkts, now, dropped)
    }
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        Scheduler::dequeue(self, now)
    }
    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        Scheduler::next_ready(self, now)
    }
    fn backlog(&self) -> Backlog {
        Scheduler::backlog(self)
    }
    fn counters(&self) -> Counters {
        *Scheduler::counters(self)
    }
    fn node_counters(&self, i: usize) -> Counters {
        self.node(i).counters
    }
    fn node_backlog(&self, i: usize) -> Backlog {
        self.node(i).backlog
    }
    fn is_throttled(&self, i: usize) -> bool {
        self.node(i).throttled
    }
    fn check_invariants(&self) {
        PolicyTree::check_invariants(self);
    }
    fn node_state(&self, i: usize) -> NodeState {
        let v = self.node(i);
        NodeState {
            counters: v.counters,
            backlog: v.backlog,
            throttled: v.throttled,
        }
    }
}

// Uncomment with the switch in `candidate` once `PipeTree` exists.
//
impl Executor for eiffel_sched::tree::PipeTree {
    fn leaf(&self, name: &str) -> Option<ClassId> {
        eiffel_sched::tree::PipeTree::leaf(self, name)
    }
    fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        dropped: impl FnMut(Dropped),
    ) -> usize {
        eiffel_sched::tree::PipeTree::enqueue_burst(self, pkts, now, dropped)
    }
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        Scheduler::dequeue(self, now)
    }
    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        Scheduler::next_ready(self, now)
    }
    fn backlog(&self) -> Backlog {
        Scheduler::backlog(self)
    }
    fn counters(&self) -> Counters {
        *Scheduler::counters(self)
    }
    fn node_counters(&self, i: usize) -> Counters {
        eiffel_sched::tree::PipeTree::node_counters(self, i)
    }
    fn node_backlog(&self, i: usize) -> Backlog {
        eiffel_sched::tree::PipeTree::node_backlog(self, i)
    }
    fn is_throttled(&self, i: usize) -> bool {
        eiffel_sched::tree::PipeTree::is_throttled(self, i)
    }
    fn check_invariants(&self) {
        eiffel_sched::tree::PipeTree::check_invariants(self);
    }
}

/// The executor under test, built from `spec`.
fn candidate(spec: TreeSpec) -> impl Executor {
    eiffel_sched::tree::PipeTree::new(spec).unwrap()
}

/// The reference executor.
fn reference(spec: TreeSpec) -> PolicyTree {
    PolicyTree::new(spec).unwrap()
}

// ---------------------------------------------------------------------------
// Operations.
// ---------------------------------------------------------------------------

/// Where one offered packet goes.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The leaf of this ordinal (modulo the number of leaves, in spec order).
    Leaf(usize),
    /// The internal node of this ordinal (modulo their number): unclassified.
    Internal(usize),
    /// A class past the last node (`u32::MAX` for 3): unclassified.
    Beyond(u32),
}

/// One packet of an enqueue burst.
#[derive(Clone, Copy, Debug)]
struct Offer {
    target: Target,
    len: u32,
}

/// One step of a run.
#[derive(Clone, Debug)]
enum Op {
    /// Enqueue a burst at the current time (ids assigned in order).
    Enqueue(Vec<Offer>),
    /// Dequeue this many times at the current time.
    Dequeue(u32),
    /// Advance time by this many ns.
    Advance(u64),
    /// Advance time to the executors' next release (if later), plus this many ns.
    Wake(u64),
}

/// What a run exercised, to check the generators reach the paths that matter.
#[derive(Clone, Copy, Debug, Default)]
struct Coverage {
    /// Packets dequeued.
    sent: u64,
    /// Drops by [`DropReason::index`].
    drops: [u64; DropReason::COUNT],
    /// Dequeues that returned `None` with packets queued (held by the shaper).
    held: u64,
    /// Times a node went from throttled to released.
    released: u64,
    /// Times the tree's next release lay in the future.
    future_ready: u64,
}

impl Coverage {
    fn add(&mut self, o: &Coverage) {
        self.sent += o.sent;
        for (x, y) in self.drops.iter_mut().zip(o.drops) {
            *x += y;
        }
        self.held += o.held;
        self.released += o.released;
        self.future_ready += o.future_ready;
    }

    fn dropped(&self, r: DropReason) -> u64 {
        self.drops[r.index()]
    }
}

// ---------------------------------------------------------------------------
// The lockstep harness.
// ---------------------------------------------------------------------------

/// Invariants are checked on both executors every this many operations.
const CHECK_EVERY: usize = 8;

/// Most drain rounds after the operations (each releases at least one packet).
const MAX_DRAIN: usize = 20_000;

/// Drives `a` and `b`, both built from `spec`, through `ops` and then drains
/// them; the first observable difference is an error naming the operation
/// (and the node, for per-node observations).
fn lockstep<A: Executor, B: Executor>(
    spec: &TreeSpec,
    ops: &[Op],
    a: A,
    b: B,
) -> Result<(), TestCaseError> {
    run_lockstep(spec, ops, a, b).map(|_| ())
}

/// [`lockstep`], returning what the run exercised.
fn run_lockstep<A: Executor, B: Executor>(
    spec: &TreeSpec,
    ops: &[Op],
    a: A,
    b: B,
) -> Result<Coverage, TestCaseError> {
    let mut run = Run::new(spec, a, b)?;
    run.compare_all("before any operation")?;
    for (k, op) in ops.iter().enumerate() {
        let at = format!("op {k} ({op:?})");
        run.step(op, &at)?;
        run.compare_all(&at)?;
        if k % CHECK_EVERY == CHECK_EVERY - 1 {
            run.check(&at)?;
        }
    }
    run.check("after the operations")?;
    // Drained by waking at each release: a tree that holds packets and names
    // no release (a lost unit) stops the loop and fails below.
    let mut round = 0;
    while run.a.backlog().packets > 0 && run.a.next_ready(run.now).is_some() && round < MAX_DRAIN {
        for op in [Op::Wake(0), Op::Dequeue(2)] {
            let at = format!("drain round {round} ({op:?})");
            run.step(&op, &at)?;
            run.compare_all(&at)?;
        }
        round += 1;
    }
    run.check("after draining")?;
    let left = run.a.backlog();
    if left.packets > 0 {
        let msg = format!("after draining: both still hold {left:?} at {}", run.now);
        return Err(TestCaseError::fail(msg));
    }
    Ok(run.cov)
}

/// Two executors in lockstep and the run's state.
struct Run<'s, A, B> {
    spec: &'s TreeSpec,
    a: A,
    b: B,
    now: Nanos,
    next_id: u32,
    /// Class ids of the leaves, in spec order.
    leaves: Vec<ClassId>,
    /// Indices of the internal nodes, in spec order.
    internal: Vec<ClassId>,
    /// Each node's throttled state at the last comparison.
    throttled: Vec<bool>,
    cov: Coverage,
}

impl<'s, A: Executor, B: Executor> Run<'s, A, B> {
    /// Both executors agree on which names are leaves and what their ids are.
    fn new(spec: &'s TreeSpec, a: A, b: B) -> Result<Self, TestCaseError> {
        let kids = spec.child_lists();
        let (mut leaves, mut internal) = (Vec::new(), Vec::new());
        for (i, n) in spec.nodes.iter().enumerate() {
            let (la, lb) = (a.leaf(&n.name), b.leaf(&n.name));
            same(&format!("leaf({:?})", n.name), la, lb)?;
            if kids[i].is_empty() {
                same(&format!("leaf({:?})", n.name), la, Some(i as ClassId))?;
                leaves.push(i as ClassId);
            } else {
                same(&format!("leaf({:?})", n.name), la, None)?;
                internal.push(i as ClassId);
            }
        }
        let nodes = spec.nodes.len();
        Ok(Run {
            spec,
            a,
            b,
            now: 0,
            next_id: 0,
            leaves,
            internal,
            throttled: vec![false; nodes],
            cov: Coverage::default(),
        })
    }

    fn step(&mut self, op: &Op, at: &str) -> Result<(), TestCaseError> {
        match *op {
            Op::Enqueue(ref offers) => {
                let pkts: Vec<Packet> = offers.iter().map(|o| self.packet(o)).collect();
                self.enqueue(&pkts, at)
            }
            Op::Dequeue(n) => (0..n).try_for_each(|j| self.dequeue(&format!("{at}, dequeue {j}"))),
            Op::Advance(ns) => {
                self.now += ns;
                Ok(())
            }
            Op::Wake(extra) => {
                let ready = self.a.next_ready(self.now);
                same(
                    &format!("{at}: next_ready"),
                    ready,
                    self.b.next_ready(self.now),
                )?;
                self.now = ready.map_or(self.now, |t| t.max(self.now)) + extra;
                Ok(())
            }
        }
    }

    /// The packet `o` describes, with the next id (as flow and buffer).
    fn packet(&mut self, o: &Offer) -> Packet {
        let class = match o.target {
            Target::Leaf(x) => self.leaves[x % self.leaves.len()],
            // A tree of one node has no internal node: past the last instead.
            Target::Internal(_) if self.internal.is_empty() => self.spec.nodes.len() as ClassId,
            Target::Internal(x) => self.internal[x % self.internal.len()],
            Target::Beyond(3) => ClassId::MAX,
            Target::Beyond(x) => self.spec.nodes.len() as ClassId + x,
        };
        let id = self.next_id;
        self.next_id += 1;
        Packet::new(id, o.len).class(class).buffer(id).at(self.now)
    }

    fn enqueue(&mut self, pkts: &[Packet], at: &str) -> Result<(), TestCaseError> {
        let (mut da, mut db) = (Vec::new(), Vec::new());
        let qa = self.a.enqueue_burst(pkts, self.now, |d| da.push(d));
        let qb = self.b.enqueue_burst(pkts, self.now, |d| db.push(d));
        for j in 0..da.len().max(db.len()) {
            same(&format!("{at}: drop {j}"), da.get(j), db.get(j))?;
        }
        same(&format!("{at}: packets queued"), qa, qb)?;
        for d in &da {
            self.cov.drops[d.reason.index()] += 1;
        }
        self.compare_tree(at)
    }

    fn dequeue(&mut self, at: &str) -> Result<(), TestCaseError> {
        let queued = self.a.backlog().packets;
        let (pa, pb) = (self.a.dequeue(self.now), self.b.dequeue(self.now));
        same(&format!("{at}: dequeued packet"), pa, pb)?;
        match pa {
            Some(_) => self.cov.sent += 1,
            None if queued > 0 => self.cov.held += 1,
            None => {}
        }
        self.compare_tree(at)
    }

    /// The whole tree's observables at the current time.
    fn compare_tree(&mut self, at: &str) -> Result<(), TestCaseError> {
        let now = self.now;
        let ready = self.a.next_ready(now);
        same(
            &format!("{at}: next_ready({now})"),
            ready,
            self.b.next_ready(now),
        )?;
        if ready.is_some_and(|t| t > now) {
            self.cov.future_ready += 1;
        }
        same(
            &format!("{at}: backlog"),
            self.a.backlog(),
            self.b.backlog(),
        )?;
        same(
            &format!("{at}: counters"),
            self.a.counters(),
            self.b.counters(),
        )
    }

    /// The tree's and every node's observables.
    fn compare_all(&mut self, at: &str) -> Result<(), TestCaseError> {
        self.compare_tree(at)?;
        for (i, n) in self.spec.nodes.iter().enumerate() {
            let node = |what: &str| format!("{at}: node {i} ({}): {what}", n.name);
            let (sa, sb) = (self.a.node_state(i), self.b.node_state(i));
            same(&node("counters"), sa.counters, sb.counters)?;
            same(&node("backlog"), sa.backlog, sb.backlog)?;
            same(&node("throttled"), sa.throttled, sb.throttled)?;
            let ta = sa.throttled;
            if self.throttled[i] && !ta {
                self.cov.released += 1;
            }
            self.throttled[i] = ta;
        }
        Ok(())
    }

    /// Both executors' invariants, a panic reported as a divergence.
    fn check(&self, at: &str) -> Result<(), TestCaseError> {
        invariants(&self.a, &format!("{at}: reference"))?;
        invariants(&self.b, &format!("{at}: candidate"))
    }
}

/// `x == y`, or an error saying `what` differs.
fn same<T: PartialEq + std::fmt::Debug>(what: &str, x: T, y: T) -> Result<(), TestCaseError> {
    if x == y {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!(
            "divergence at {what}:\n  reference: {x:?}\n  candidate: {y:?}"
        )))
    }
}

/// `e.check_invariants()`, its panic turned into an error.
fn invariants<E: Executor>(e: &E, at: &str) -> Result<(), TestCaseError> {
    catch_unwind(AssertUnwindSafe(|| e.check_invariants())).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default();
        TestCaseError::fail(format!("{at}: invariant broken: {msg}"))
    })
}

/// The reference against the candidate, both built from `spec`.
fn compare(spec: &TreeSpec, ops: &[Op]) -> Result<Coverage, TestCaseError> {
    run_lockstep(spec, ops, reference(spec.clone()), candidate(spec.clone()))
}

// ---------------------------------------------------------------------------
// Generated specs of the pipe shape.
// ---------------------------------------------------------------------------

/// A leaf below a pipe.
#[derive(Clone, Debug)]
struct LeafShape {
    weight: u32,
    priority: u32,
    limit: Option<RateLimit>,
    capacity: Option<u32>,
}

/// A subtree: a DRR node over subtrees, or a pipe over leaves.
#[derive(Clone, Debug)]
enum Shape {
    Drr {
        weight: u32,
        limit: Option<RateLimit>,
        children: Vec<Shape>,
    },
    Pipe {
        weight: u32,
        limit: Option<RateLimit>,
        leaves: Vec<LeafShape>,
    },
}

/// 1 to 50 Mbit/s with a burst of 1500 to 20000 bytes: slow enough that a few
/// packets a millisecond exceed it.
fn limit() -> impl Strategy<Value = RateLimit> {
    (1_000u64..=50_000, 1500u64..=20_000).prop_map(|(kbps, burst)| RateLimit {
        rate: Rate::from_kbps(kbps),
        burst,
    })
}

fn maybe_limit() -> impl Strategy<Value = Option<RateLimit>> {
    prop::option::weighted(0.35, limit())
}

fn leaf_shape() -> impl Strategy<Value = LeafShape> {
    (
        1u32..=4,
        0u32..=5,
        maybe_limit(),
        prop::option::weighted(0.4, 1u32..=8),
    )
        .prop_map(|(weight, priority, limit, capacity)| LeafShape {
            weight,
            priority,
            limit,
            capacity,
        })
}

/// A subtree whose pipes lie `drr_levels` DRR levels below its top.
fn shape(drr_levels: u32) -> BoxedStrategy<Shape> {
    if drr_levels == 0 {
        (
            1u32..=4,
            maybe_limit(),
            prop::collection::vec(leaf_shape(), 1..=8),
        )
            .prop_map(|(weight, limit, leaves)| Shape::Pipe {
                weight,
                limit,
                leaves,
            })
            .boxed()
    } else {
        let kids = prop::collection::vec(shape(drr_levels - 1), 1..=3);
        (1u32..=4, maybe_limit(), kids)
            .prop_map(|(weight, limit, children)| Shape::Drr {
                weight,
                limit,
                children,
            })
            .boxed()
    }
}

/// The shaper: the default (15 us slots over 1 s) or a coarse one (62.5 us
/// slots over 64 ms, still beyond any release these rates need).
fn shaper() -> impl Strategy<Value = ShaperSpec> {
    prop_oneof![
        Just(ShaperSpec::default()),
        Just(ShaperSpec {
            horizon: Duration::from_millis(64),
            slots: 1024,
        }),
    ]
}

/// Specs of the pipe shape: a DRR root (optionally limited) with 1 to 3
/// children, 0 to 2 further DRR levels, pipes, leaves; a pool sometimes small.
fn pipe_spec() -> impl Strategy<Value = TreeSpec> {
    (0u32..=2)
        .prop_flat_map(|extra| {
            (
                maybe_limit(),
                prop::collection::vec(shape(extra), 1..=3),
                prop_oneof![4u32..=64, Just(4096u32)],
                shaper(),
            )
        })
        .prop_map(|(limit, children, capacity, shaper)| {
            let root = Shape::Drr {
                weight: 1,
                limit,
                children,
            };
            let mut spec = TreeSpec::new(capacity);
            spec.shaper = shaper;
            add_shape(&mut spec, &root, None);
            spec
        })
}

/// Adds `s` below `parent`, depth first; returns its index.
fn add_shape(spec: &mut TreeSpec, s: &Shape, parent: Option<usize>) -> usize {
    let mut n = NodeSpec::new(format!("n{}", spec.nodes.len()), parent);
    match s {
        Shape::Drr {
            weight,
            limit,
            children,
        } => {
            n.discipline = Discipline::DRR;
            n.weight = *weight;
            n.limit = *limit;
            let me = spec.add(n);
            for c in children {
                add_shape(spec, c, Some(me));
            }
            me
        }
        Shape::Pipe {
            weight,
            limit,
            leaves,
        } => {
            n.discipline = Discipline::Ets;
            n.weight = *weight;
            n.limit = *limit;
            let me = spec.add(n);
            for l in leaves {
                let mut leaf = NodeSpec::new(format!("n{}", spec.nodes.len()), Some(me));
                leaf.weight = l.weight;
                leaf.priority = l.priority;
                leaf.limit = l.limit;
                leaf.capacity = l.capacity;
                spec.add(leaf);
            }
            me
        }
    }
}

// ---------------------------------------------------------------------------
// Generated operations.
// ---------------------------------------------------------------------------

fn offer() -> impl Strategy<Value = Offer> {
    let target = prop_oneof![
        40 => any::<usize>().prop_map(Target::Leaf),
        1 => any::<usize>().prop_map(Target::Internal),
        1 => (0u32..4).prop_map(Target::Beyond),
    ];
    let len = prop_oneof![
        30 => 64u32..=1500,
        2 => Just(1500u32),
        1 => Just(1501u32),
        1 => 1502u32..=9000,
    ];
    (target, len).prop_map(|(target, len)| Offer { target, len })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => prop::collection::vec(offer(), 1..=8).prop_map(Op::Enqueue),
        3 => (1u32..=4).prop_map(Op::Dequeue),
        1 => (1u32..=32).prop_map(Op::Dequeue),
        1 => Just(Op::Advance(0)),
        3 => (1u64..=3_000_000).prop_map(Op::Advance),
        1 => (3_000_000u64..=30_000_000).prop_map(Op::Advance),
        1 => prop_oneof![Just(0u64), 1u64..=50_000].prop_map(Op::Wake),
    ]
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 0..=300)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn candidate_matches_policy_tree_on_pipe_specs(spec in pipe_spec(), ops in ops()) {
        spec.validate().map_err(|e| TestCaseError::fail(format!("generated spec: {e}")))?;
        compare(&spec, &ops)?;
    }
}

/// The generators reach what the comparison is for: every drop reason of the
/// shape, packets held by the shaper and released, releases in the future.
#[test]
fn generated_runs_reach_drops_throttling_and_release() {
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: 24,
            ..Config::default()
        },
        proptest::test_runner::TestRng::deterministic_rng(
            proptest::test_runner::RngAlgorithm::ChaCha,
        ),
    );
    let total = std::cell::RefCell::new(Coverage::default());
    runner
        .run(&(pipe_spec(), ops()), |(spec, ops)| {
            let cov = compare(&spec, &ops)?;
            total.borrow_mut().add(&cov);
            Ok(())
        })
        .unwrap();
    let t = total.into_inner();
    for r in [
        DropReason::QueueFull,
        DropReason::LeafFull,
        DropReason::TooLarge,
        DropReason::Unclassified,
    ] {
        assert!(t.dropped(r) > 0, "no {r:?} drop in {t:?}");
    }
    assert!(t.sent > 1000, "{t:?}");
    assert!(t.held > 0 && t.released > 0 && t.future_ready > 0, "{t:?}");
}

// ---------------------------------------------------------------------------
// A DPDK rte_sched-like hierarchy under overload.
// ---------------------------------------------------------------------------

/// Strict classes of each pipe (priorities 0..11), then 4 best-effort leaves.
const STRICT_CLASSES: usize = 12;
/// Leaves of each pipe.
const PIPE_LEAVES: usize = STRICT_CLASSES + 4;
/// Pipes of each subport.
const SUBPORT_PIPES: usize = 4;
/// Subports of the port.
const SUBPORTS: usize = 2;

fn mbps(m: u64, burst: u64) -> Option<RateLimit> {
    Some(RateLimit {
        rate: Rate::from_mbps(m),
        burst,
    })
}

/// A port (DRR, 100 Mbit/s) over 2 subports (DRR, 60 Mbit/s) over 4 pipes each
/// (`ets`, 20 Mbit/s), each with 12 strict classes (priorities 0..11, capacity
/// 4 to 10, the first limited to 2 Mbit/s) and 4 best-effort leaves at
/// priority 12 (weights 1:2:3:4, capacity 64); a pool of 1024 packets, fewer
/// than the leaves can hold together.
fn rte_spec() -> TreeSpec {
    let mut spec = TreeSpec::new(1024);
    let mut port = NodeSpec::new("port", None);
    port.discipline = Discipline::DRR;
    port.limit = mbps(100, 6000);
    let port = spec.add(port);
    for s in 0..SUBPORTS {
        let mut sub = NodeSpec::new(format!("subport{s}"), Some(port));
        sub.discipline = Discipline::DRR;
        sub.limit = mbps(60, 4500);
        let sub = spec.add(sub);
        for p in 0..SUBPORT_PIPES {
            let mut pipe = NodeSpec::new(format!("pipe{s}.{p}"), Some(sub));
            pipe.discipline = Discipline::Ets;
            pipe.weight = 1 + p as u32 % 2;
            pipe.limit = mbps(20, 3000);
            let pipe = spec.add(pipe);
            for c in 0..PIPE_LEAVES {
                let mut leaf = NodeSpec::new(format!("tc{s}.{p}.{c}"), Some(pipe));
                if c < STRICT_CLASSES {
                    leaf.priority = c as u32;
                    leaf.capacity = Some(4 + c as u32 % 4 * 2);
                    if c == 0 {
                        leaf.limit = mbps(2, 1500);
                    }
                } else {
                    leaf.priority = STRICT_CLASSES as u32;
                    leaf.weight = (c - STRICT_CLASSES) as u32 + 1;
                    leaf.capacity = Some(64);
                }
                spec.add(leaf);
            }
        }
    }
    spec
}

/// SplitMix64: a seeded stream independent of any crate's version.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi` (bias negligible for these ranges).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// `steps` rounds of the rte hierarchy's traffic: a burst of 1 to 8 packets
/// (a quarter small ones to strict classes, the rest to best-effort leaves,
/// about 200 Mbit/s against the port's 100), 1 to 4 dequeues, time advancing
/// by up to 200 us (sometimes not at all, now and then an idle 5 to 20 ms).
fn rte_ops(seed: u64, steps: usize) -> Vec<Op> {
    let mut rng = SplitMix(seed);
    let pipes = (SUBPORTS * SUBPORT_PIPES) as u64;
    let mut ops = Vec::with_capacity(steps * 3);
    for _ in 0..steps {
        let burst = (0..rng.range(1, 8))
            .map(|_| {
                let pipe = rng.range(0, pipes - 1) as usize;
                let (class, len) = if rng.range(0, 3) == 0 {
                    (rng.range(0, STRICT_CLASSES as u64 - 1), rng.range(64, 256))
                } else {
                    (
                        rng.range(STRICT_CLASSES as u64, PIPE_LEAVES as u64 - 1),
                        rng.range(64, 1500),
                    )
                };
                Offer {
                    target: Target::Leaf(pipe * PIPE_LEAVES + class as usize),
                    len: len as u32,
                }
            })
            .collect();
        ops.push(Op::Enqueue(burst));
        ops.push(Op::Dequeue(rng.range(1, 4) as u32));
        ops.push(match rng.range(0, 99) {
            0 => Op::Advance(rng.range(5_000_000, 20_000_000)),
            1..=9 => Op::Advance(0),
            10..=14 => Op::Wake(0),
            _ => Op::Advance(rng.range(1, 200_000)),
        });
    }
    ops
}

#[test]
fn rte_hierarchy_under_overload_matches() {
    let spec = rte_spec();
    spec.validate().unwrap();
    let ops = rte_ops(0x5eed, 1200);
    let cov = compare(&spec, &ops).unwrap_or_else(|e| panic!("{e}"));
    assert!(cov.sent > 2500, "{cov:?}");
    for r in [DropReason::LeafFull, DropReason::QueueFull] {
        assert!(cov.dropped(r) > 0, "no {r:?} drop: {cov:?}");
    }
    assert!(cov.held > 0 && cov.released > 0, "{cov:?}");
}

// ---------------------------------------------------------------------------
// The harness catches divergences.
// ---------------------------------------------------------------------------

/// A DRR root over one pipe of two leaves sharing priority 0, and one leaf
/// at priority 1.
fn small_spec() -> TreeSpec {
    let mut spec = TreeSpec::new(64);
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::DRR;
    let root = spec.add(root);
    let mut pipe = NodeSpec::new("pipe", Some(root));
    pipe.discipline = Discipline::Ets;
    let pipe = spec.add(pipe);
    spec.add(NodeSpec::new("a", Some(pipe)));
    spec.add(NodeSpec::new("b", Some(pipe)));
    let mut c = NodeSpec::new("c", Some(pipe));
    c.priority = 1;
    spec.add(c);
    spec
}

/// 8 packets of 1000 bytes to each of `a` and `b`, then dequeues.
fn small_ops() -> Vec<Op> {
    let to = |leaf| Offer {
        target: Target::Leaf(leaf),
        len: 1000,
    };
    vec![
        Op::Enqueue(vec![to(0); 8]),
        Op::Enqueue(vec![to(1); 8]),
        Op::Dequeue(16),
    ]
}

/// `lockstep` of `small_spec` against `changed(small_spec)` fails, naming `what`.
fn diverges(changed: impl Fn(&mut TreeSpec), ops: &[Op], what: &str) {
    let spec = small_spec();
    let mut other = spec.clone();
    changed(&mut other);
    let b = PolicyTree::new(other).unwrap();
    let err = lockstep(&spec, ops, reference(spec.clone()), b).expect_err("divergence missed");
    assert!(err.to_string().contains(what), "{what:?} not in {err}");
}

#[test]
fn harness_catches_a_different_weight() {
    diverges(|s| s.nodes[3].weight = 3, &small_ops(), "dequeued packet");
}

#[test]
fn harness_catches_a_different_capacity() {
    diverges(|s| s.nodes[2].capacity = Some(2), &small_ops(), "drop 0");
}

#[test]
fn harness_catches_a_different_limit() {
    let limit = mbps(10, 1500);
    diverges(|s| s.nodes[1].limit = limit, &small_ops(), "next_ready");
}

#[test]
fn identical_trees_pass() {
    let spec = small_spec();
    lockstep(
        &spec,
        &small_ops(),
        reference(spec.clone()),
        candidate(spec.clone()),
    )
    .unwrap();
}

/// An executor that misreports one observable of one node, or of the tree.
struct Lying {
    tree: PolicyTree,
    lie: Lie,
}

#[derive(Clone, Copy, Debug)]
enum Lie {
    NodeCounters(usize),
    NodeBacklog(usize),
    Throttled(usize),
    NextReady,
    Backlog,
    Counters,
    Invariants,
}

impl Executor for Lying {
    fn leaf(&self, name: &str) -> Option<ClassId> {
        self.tree.leaf(name)
    }
    fn enqueue_burst(
        &mut self,
        pkts: &[Packet],
        now: Nanos,
        dropped: impl FnMut(Dropped),
    ) -> usize {
        self.tree.enqueue_burst(pkts, now, dropped)
    }
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        Scheduler::dequeue(&mut self.tree, now)
    }
    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        let t = Scheduler::next_ready(&self.tree, now);
        match self.lie {
            Lie::NextReady => t.map(|t| t + 1),
            _ => t,
        }
    }
    fn backlog(&self) -> Backlog {
        let mut b = Scheduler::backlog(&self.tree);
        if let Lie::Backlog = self.lie {
            b.bytes += 1;
        }
        b
    }
    fn counters(&self) -> Counters {
        let mut c = *Scheduler::counters(&self.tree);
        if let Lie::Counters = self.lie {
            c.dequeued_bytes += 1;
        }
        c
    }
    fn node_counters(&self, i: usize) -> Counters {
        let mut c = self.tree.node(i).counters;
        if matches!(self.lie, Lie::NodeCounters(n) if n == i) && c.dequeued > 0 {
            c.dropped.packets[0] += 1;
        }
        c
    }
    fn node_backlog(&self, i: usize) -> Backlog {
        let mut b = self.tree.node(i).backlog;
        if matches!(self.lie, Lie::NodeBacklog(n) if n == i) && b.packets > 0 {
            b.bytes -= 1;
        }
        b
    }
    fn is_throttled(&self, i: usize) -> bool {
        self.tree.node(i).throttled ^ matches!(self.lie, Lie::Throttled(n) if n == i)
    }
    fn check_invariants(&self) {
        assert!(!matches!(self.lie, Lie::Invariants), "a broken invariant");
        self.tree.check_invariants();
    }
}

/// Every observable is compared: a candidate lying about any one of them,
/// for one node only, is caught, with that node named.
#[test]
fn harness_compares_every_observable() {
    let spec = small_spec();
    let mut ops = small_ops();
    ops.truncate(2);
    ops.extend((0..CHECK_EVERY).map(|_| Op::Dequeue(1)));
    let cases = [
        (Lie::NodeCounters(2), "node 2 (a): counters"),
        (Lie::NodeBacklog(3), "node 3 (b): backlog"),
        (Lie::Throttled(4), "node 4 (c): throttled"),
        (Lie::NextReady, "next_ready"),
        (Lie::Backlog, "backlog"),
        (Lie::Counters, "counters"),
        (Lie::Invariants, "invariant broken"),
    ];
    for (lie, what) in cases {
        let b = Lying {
            tree: reference(spec.clone()),
            lie,
        };
        let err = lockstep(&spec, &ops, reference(spec.clone()), b)
            .expect_err(&format!("{lie:?} missed"));
        assert!(
            err.to_string().contains(what),
            "{lie:?}: {what:?} not in {err}"
        );
    }
}

/// Trees of another shape are refused, naming the node and the problem.
#[test]
fn other_shapes_are_refused_naming_the_node() {
    use eiffel_sched::tree::{PerFlow, PipeError, PipeTree, ShapeProblem};

    let drr = Discipline::FairQueue(FairQueue::Drr);
    let node = |name: &str, parent: Option<usize>, d: Discipline| {
        let mut n = NodeSpec::new(name, parent);
        n.discipline = d;
        n
    };
    let refusal = |spec: TreeSpec| match PipeTree::new(spec) {
        Err(PipeError::Shape(e)) => (e.node, e.problem),
        other => panic!("not refused for its shape: {other:?}"),
    };
    // A leaf beside the pipes.
    let mut s = TreeSpec::new(16);
    s.add(node("root", None, drr.clone()));
    let p = s.add(node("pipe", Some(0), Discipline::Ets));
    s.add(NodeSpec::new("q", Some(p)));
    s.add(NodeSpec::new("stray", Some(0)));
    assert_eq!(refusal(s), ("stray".into(), ShapeProblem::LeafOutOfPlace));
    // A strict node above the pipes.
    let mut s = TreeSpec::new(16);
    s.add(node("root", None, drr.clone()));
    let m = s.add(node("mid", Some(0), Discipline::STRICT));
    let p = s.add(node("pipe", Some(m), Discipline::Ets));
    s.add(NodeSpec::new("q", Some(p)));
    assert_eq!(refusal(s), ("mid".into(), ShapeProblem::NotDrr));
    // A root that is itself the pipe.
    let mut s = TreeSpec::new(16);
    s.add(node("root", None, Discipline::Ets));
    s.add(NodeSpec::new("q", Some(0)));
    assert_eq!(refusal(s), ("root".into(), ShapeProblem::RootNotDrr));
    // A per-flow leaf in a pipe.
    let mut s = TreeSpec::new(16);
    s.add(node("root", None, drr));
    let p = s.add(node("pipe", Some(0), Discipline::Ets));
    let mut flows = NodeSpec::new("flows", Some(p));
    flows.per_flow = Some(PerFlow {
        max_flows: 4,
        flow_limit: None,
        flow_queue_limit: None,
    });
    s.add(flows);
    assert_eq!(refusal(s), ("flows".into(), ShapeProblem::NotFifo));
}
