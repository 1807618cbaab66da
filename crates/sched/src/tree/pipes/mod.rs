//! A second executor for one shape of policy tree: `drr` levels over `ets`
//! pipes over FIFO leaves, the shape of DPDK's `rte_sched` hierarchy (port,
//! subports, pipes, traffic classes, queues), with rate limits on any node.
//!
//! [`PipeTree`] runs such a tree exactly as [`PolicyTree`](super::PolicyTree)
//! does (the same packets in the same order, the same drops, throttling and
//! counts at every node: a property test runs both in lockstep), with code
//! written for the shape instead of a discipline dispatch at every level, and
//! with the nodes laid out level by level so that a pipe's leaves, the
//! queues a burst of packets spreads over, sit side by side.
//!
//! What the general tree offers beyond it is what the shape leaves out: other
//! disciplines, per-flow leaves, release programs and node views with queue
//! statistics. Runs (a burst of dequeues at one instant through one node,
//! the levels above it told once) start at a pipe here.

mod band;
mod exec;
mod run;
mod shape;
mod view;

use eiffel_queue::Handle;

use super::ets::MAX_ETS_UNITS;
use super::shaper::{Bucket, Cost, Shaper};
use super::spec::TreeSpec;
use super::store::Store;
use super::txn::Unit;
use crate::packet::{ClassId, Nanos, Packet};
use crate::pool::PacketPool;
use crate::scheduler::{Backlog, ConfigError, Counters, DropCounts, Dropped, Scheduler};
use crate::DrrCore;
use crate::FlowCore;
use band::{Band, Member, Profile};

pub use shape::{ShapeError, ShapeProblem};

/// "No node": the root's parent.
const NONE: u32 = u32::MAX;

/// Why a [`PipeTree`] cannot be built from a specification.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PipeError {
    /// The specification is not a valid tree.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The tree is valid but not of the shape.
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// A `drr` node or a pipe: what a packet's path reads and writes of it, in
/// two cache lines with its limit.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Node {
    parent: u32,
    /// Its unit index at its parent.
    slot: u32,
    /// Queued in its parent's discipline.
    active: bool,
    /// Filed in the shaper, out of its parent's queue.
    throttled: bool,
    /// Whether `limit` applies.
    limited: bool,
    /// A `drr` node's backlog (a pipe's is its leaves': see
    /// [`PipeTree::queued`]).
    backlog: Backlog,
    sent: Backlog,
    /// A pipe's leaves filed in the shaper (each holds a packet).
    held_leaves: u32,
    /// A pipe's discipline state (unused in a `drr` node).
    band: Band,
    bucket: Bucket,
    cost: Cost,
}

/// A leaf: the head of its FIFO, sent counts, limit state,
/// link and flags, in one line. Its FIFO's tail and arrivals are in its
/// [`LeafEnd`]; its capacity and its limit's configuration are its pipe's
/// profile's ([`LeafConf`]).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Leaf {
    /// Its first packet's slot ([`NONE`] when empty).
    head: u32,
    /// Its first packet's length (0 when empty).
    head_len: u32,
    /// What left it (its packets, truncated, are the departures its end's
    /// room bound counts from).
    sent: Backlog,
    bucket: Bucket,
    /// Its pipe's position.
    parent: u32,
    /// Its unit index at its pipe (below [`MAX_ETS_UNITS`]).
    slot: u8,
    active: bool,
    throttled: bool,
    limited: bool,
}

const _: () = assert!(core::mem::size_of::<Leaf>() == 64);
const _: () = assert!(MAX_ETS_UNITS <= u8::MAX as usize + 1);

/// What an arrival at a leaf that holds a packet reads and writes: its FIFO's
/// tail, its arrivals and a bound on its room, and its pipe, 16 bytes a leaf
/// (1 MB at 64K queues, where the leaves' lines take 4 MB), so that such an
/// arrival touches neither the leaf's line nor its pipe's.
///
/// `budget - arrived` (wrapping) is at most the room the leaf has: `budget`
/// was its departures plus its capacity when last set, and departures only
/// add room. An arrival that finds it 0 counts the room from the leaf's line
/// and sets it again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(16))]
struct LeafEnd {
    /// Its last packet's slot ([`NONE`] when empty).
    tail: u32,
    /// Packets it took (wrapping).
    arrived: u32,
    budget: u32,
    /// Its pipe's position.
    pipe: u32,
}

const _: () = assert!(core::mem::size_of::<LeafEnd>() == 16);

/// What the leaves in one place of every pipe of a profile share.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LeafConf {
    /// Most packets it may queue.
    capacity: u32,
    /// Its limit's configuration ([`Cost::UNUSED`] without one).
    cost: Cost,
}

/// A node's place and flags, leaf or not.
#[derive(Clone, Copy, Debug)]
struct Link {
    parent: u32,
    slot: u32,
    active: bool,
    throttled: bool,
}

/// The next packet of a node: its pool slot, its length and its leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    slot: u32,
    len: u32,
    leaf: u32,
}

/// A policy tree of `drr` levels over `ets` pipes over FIFO leaves (the shape
/// of DPDK's `rte_sched` hierarchy), run by code for that shape: the same
/// packets in the same order, drops, throttling and counts at every node as
/// [`PolicyTree`](super::PolicyTree) on the same specification, without its
/// discipline dispatch at every level, the nodes laid out level by level.
/// Other disciplines, per-flow leaves, release programs and queue statistics
/// are the general tree's alone; [`PipeTree::new`] refuses a tree of another
/// shape, naming the node.
#[derive(Debug)]
pub struct PipeTree {
    spec: TreeSpec,
    /// Per position (see `shape::Layout`): the node's spec index.
    order: Vec<u32>,
    /// Per spec index: the node's position.
    place: Vec<u32>,
    pipes_at: u32,
    leaves_at: u32,
    /// Per `drr` node and pipe, by position.
    nodes: Store<Node>,
    /// Per leaf, by position less `leaves_at`.
    leaves: Store<Leaf>,
    /// Per leaf, by position less `leaves_at`: its FIFO's tail, arrivals and room.
    ends: Store<LeafEnd>,
    /// Per pipe, by position less `pipes_at`: its parent's position.
    up: Store<u32>,
    /// Per `drr` node and pipe, by position: its first child's position.
    first_child: Store<u32>,
    /// Per `drr` node (by position).
    drr: Store<DrrCore>,
    /// The pipes' configurations.
    profiles: Store<Profile>,
    /// Per profile, per unit: its leaf's configuration.
    confs: Store<Store<LeafConf>>,
    /// The pipes' shared levels' members, each pipe's from its band's
    /// `members_at`, whole lines of four.
    members: Vec<Member>,
    pool: PacketPool,
    shaper: Shaper,
    slack: Nanos,
    /// Per position: drops in its subtree by reason.
    drops: Vec<DropCounts>,
    /// Per position, while throttled: its shaper entry and release time.
    filed: Vec<Option<(Handle, Nanos)>>,
    counters: Counters,
    backlog: Backlog,
    /// The leaf the next dequeue takes from, found by the last dequeue;
    /// `NONE` once anything else changed the tree.
    ahead: u32,
    /// The run in progress: dequeues at one instant through one pipe, the
    /// levels above it told once (see `run`).
    run: super::run::Run,
    /// While a run is in progress: the bytes its pipe's own limit lets it
    /// send before the pipe is held (`u64::MAX` without a limit); the run
    /// charges them to the limit when it settles.
    run_room: u64,
    /// Whether the tree exceeds the cache, so that its paths are prefetched.
    prefetching: bool,
}

impl PipeTree {
    /// Builds the tree `spec` describes, if it has the shape.
    ///
    /// # Errors
    /// [`PipeError::Config`] for what [`PolicyTree::new`](super::PolicyTree::new)
    /// refuses, [`PipeError::Shape`] for a valid tree of another shape.
    pub fn new(spec: TreeSpec) -> Result<Self, PipeError> {
        spec.validate().map_err(ConfigError::from)?;
        let mut layout = shape::layout(&spec)?;
        let order = core::mem::take(&mut layout.order);
        let mut place = vec![0u32; order.len()];
        for (pos, &i) in order.iter().enumerate() {
            place[i as usize] = pos as u32;
        }
        let kids = spec.child_lists();
        let (mut nodes, leaves, first_child) = records(&spec, &kids, &order, &place, &layout);
        let units = |pos: u32| -> Vec<Unit> {
            kids[order[pos as usize] as usize]
                .iter()
                .map(|&c| Unit {
                    weight: spec.nodes[c].weight,
                    priority: spec.nodes[c].priority,
                    ..Unit::default()
                })
                .collect()
        };
        let named =
            |pos: u32, e: ConfigError| e.in_node(&spec.nodes[order[pos as usize] as usize].name);
        let drr = (0..layout.pipes_at)
            .map(|pos| drr_core(&units(pos), spec.mtu).map_err(|e| named(pos, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let (profiles, confs, members) = bands(&spec, &kids, &order, &layout, &mut nodes);
        let limited = spec.nodes.iter().filter(|n| n.limit.is_some()).count();
        let shaper = Shaper::new(spec.shaper, limited)?;
        let n = order.len();
        Ok(PipeTree {
            pool: PacketPool::with_capacity(spec.capacity as usize),
            slack: shaper.granularity(),
            shaper,
            spec,
            order,
            place,
            pipes_at: layout.pipes_at,
            leaves_at: layout.leaves_at,
            prefetching: super::burst::prefetches(n),
            ends: Store::new(
                leaves
                    .iter()
                    .map(|l| LeafEnd {
                        tail: NONE,
                        arrived: 0,
                        budget: confs[nodes[l.parent as usize].band.profile as usize]
                            [usize::from(l.slot)]
                        .capacity,
                        pipe: l.parent,
                    })
                    .collect(),
            ),
            up: Store::new(
                nodes[layout.pipes_at as usize..]
                    .iter()
                    .map(|n| n.parent)
                    .collect(),
            ),
            leaves: Store::new(leaves),
            nodes: Store::new(nodes),
            first_child: Store::new(first_child),
            drr: Store::new(drr),
            profiles: Store::new(profiles),
            confs: Store::new(confs),
            members,
            drops: vec![DropCounts::default(); n],
            filed: vec![None; n],
            counters: Counters::default(),
            backlog: Backlog::default(),
            ahead: NONE,
            run: super::run::Run::NONE,
            run_room: u64::MAX,
        })
    }

    /// The specification the tree was built from.
    #[must_use]
    pub fn spec(&self) -> &TreeSpec {
        &self.spec
    }

    /// The class id of the leaf called `name` (its spec index, as in
    /// [`PolicyTree::leaf`](super::PolicyTree::leaf)).
    #[must_use]
    pub fn leaf(&self, name: &str) -> Option<ClassId> {
        let i = self.spec.find(name)?;
        (self.place[i] >= self.leaves_at).then_some(i as ClassId)
    }

    /// The shaper's precision: release times are met within this many ns.
    #[must_use]
    pub fn shaper_granularity(&self) -> Nanos {
        self.slack
    }
}

/// The records of the nodes of `order`: the `drr` nodes' and pipes', the
/// leaves', and each non-leaf's first child's position.
fn records(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    order: &[u32],
    place: &[u32],
    layout: &shape::Layout,
) -> (Vec<Node>, Vec<Leaf>, Vec<u32>) {
    let mut links = vec![(NONE, 0u32); order.len()];
    let mut first_child = vec![NONE; layout.leaves_at as usize];
    for (pos, &i) in order.iter().enumerate().take(layout.leaves_at as usize) {
        for (slot, &c) in kids[i as usize].iter().enumerate() {
            links[place[c] as usize] = (pos as u32, slot as u32);
        }
        first_child[pos] = place[kids[i as usize][0]];
    }
    let nodes = order[..layout.leaves_at as usize]
        .iter()
        .zip(&links)
        .map(|(&i, &(parent, slot))| Node {
            parent,
            slot,
            active: false,
            throttled: false,
            limited: spec.nodes[i as usize].limit.is_some(),
            backlog: Backlog::default(),
            sent: Backlog::default(),
            held_leaves: 0,
            band: Band::default(),
            cost: cost_of(spec, i as usize),
            bucket: Bucket::default(),
        })
        .collect();
    let leaves = order[layout.leaves_at as usize..]
        .iter()
        .zip(&links[layout.leaves_at as usize..])
        .map(|(&i, &(parent, slot))| Leaf {
            head: NONE,
            head_len: 0,
            sent: Backlog::default(),
            bucket: Bucket::default(),
            parent,
            slot: slot as u8,
            active: false,
            throttled: false,
            limited: spec.nodes[i as usize].limit.is_some(),
        })
        .collect();
    (nodes, leaves, first_child)
}

impl Scheduler for PipeTree {
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        self.enqueue_one(pkt, now)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        self.dequeue_one(now)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        if self.backlog.packets == 0 {
            return None;
        }
        if !self.nodes[0].throttled && self.has_head(0) {
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
        "pipe-tree"
    }
}

/// The pipes' profiles (one per distinct configuration of children), their
/// leaves' configurations and the member records; sets each pipe's band.
fn bands(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    order: &[u32],
    layout: &shape::Layout,
    nodes: &mut [Node],
) -> (Vec<Profile>, Vec<Store<LeafConf>>, Vec<Member>) {
    let mut profiles: Vec<Profile> = Vec::new();
    let mut confs: Vec<Vec<LeafConf>> = Vec::new();
    let mut members = 0usize;
    for pos in layout.pipes_at..layout.leaves_at {
        let i = order[pos as usize] as usize;
        let children: Vec<(u32, u32)> = kids[i]
            .iter()
            .map(|&c| (spec.nodes[c].priority, spec.nodes[c].weight))
            .collect();
        let profile = Profile::new(&children, spec.mtu);
        let conf: Vec<LeafConf> = kids[i]
            .iter()
            .map(|&c| LeafConf {
                capacity: spec.nodes[c].capacity.unwrap_or(u32::MAX),
                cost: cost_of(spec, c),
            })
            .collect();
        let found = (0..profiles.len()).find(|&k| profiles[k] == profile && confs[k] == conf);
        let k = found.unwrap_or_else(|| {
            profiles.push(profile);
            confs.push(conf);
            profiles.len() - 1
        });
        nodes[pos as usize].band = Band::new(k as u32, members as u32);
        members += profiles[k].members().next_multiple_of(4);
    }
    let confs = confs.into_iter().map(Store::new).collect();
    (profiles, confs, vec![Member::default(); members])
}

/// The configuration of node `i`'s limit ([`Cost::UNUSED`] without one).
fn cost_of(spec: &TreeSpec, i: usize) -> Cost {
    spec.nodes[i]
        .limit
        .map_or(Cost::UNUSED, |l| Cost::new(l, spec.mtu))
}

/// A DRR core over `units`, each with a quantum of its weight times `mtu`
/// (as a `drr` node of the general tree has).
fn drr_core(units: &[Unit], mtu: u32) -> Result<DrrCore, ConfigError> {
    let mut core = DrrCore::new(units.len() as u32)?;
    for (f, u) in units.iter().enumerate() {
        let cfg = crate::scheduler::FlowConfig::weight(u.weight).max_packet(mtu);
        core.add_flow(f as u32, cfg)?;
    }
    Ok(core)
}

#[cfg(test)]
mod tests;
