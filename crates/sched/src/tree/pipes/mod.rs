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
//! disciplines, per-flow leaves, release programs, node views with queue
//! statistics, and runs (a run defers the ancestors' counts of a burst of
//! dequeues through one node; here the counts are kept packet by packet).

mod exec;
mod shape;
mod view;

use eiffel_queue::Handle;

use super::ets::Ets;
use super::shaper::{Gcra, Shaper};
use super::spec::TreeSpec;
use super::txn::Unit;
use crate::packet::{ClassId, Nanos};
use crate::pool::{Fifo, PacketPool};
use crate::scheduler::{Backlog, ConfigError, Counters, DropCounts};
use crate::DrrCore;
use crate::FlowCore;

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

/// What a packet's path reads and writes of a node.
#[derive(Clone, Copy, Debug, Default)]
struct Node {
    parent: u32,
    /// Its unit index at its parent.
    slot: u32,
    /// Queued in its parent's discipline.
    active: bool,
    /// Filed in the shaper, out of its parent's queue.
    throttled: bool,
    /// Whether its limit applies.
    limited: bool,
    backlog: Backlog,
    sent: Backlog,
}

/// The next packet of a node: its pool slot, its length and its leaf.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Head {
    slot: u32,
    len: u32,
    leaf: u32,
}

/// A policy tree of `drr` levels over `ets` pipes over FIFO leaves, run by
/// code for that shape; see the [module docs](self).
#[derive(Debug)]
pub struct PipeTree {
    spec: TreeSpec,
    /// Per position (see `shape::Layout`): the node's spec index.
    order: Vec<u32>,
    /// Per spec index: the node's position.
    place: Vec<u32>,
    pipes_at: u32,
    leaves_at: u32,
    nodes: Vec<Node>,
    /// Per position: its first child's position.
    first_child: Vec<u32>,
    limits: Vec<Gcra>,
    /// Per `drr` node (by position).
    drr: Vec<DrrCore>,
    /// Per pipe (by position less `pipes_at`).
    ets: Vec<Ets>,
    /// Per leaf (by position less `leaves_at`): its FIFO and capacity.
    fifos: Vec<Fifo>,
    capacity: Vec<u32>,
    pool: PacketPool,
    shaper: Shaper,
    slack: Nanos,
    /// Per position: drops in its subtree by reason.
    drops: Vec<DropCounts>,
    /// Per position, while throttled: its shaper entry and release time.
    filed: Vec<Option<(Handle, Nanos)>>,
    counters: Counters,
    backlog: Backlog,
}

impl PipeTree {
    /// Builds the tree `spec` describes, if it has the shape.
    ///
    /// # Errors
    /// [`PipeError::Config`] for what [`PolicyTree::new`](super::PolicyTree::new)
    /// refuses, [`PipeError::Shape`] for a valid tree of another shape.
    pub fn new(spec: TreeSpec) -> Result<Self, PipeError> {
        spec.validate().map_err(ConfigError::from)?;
        let layout = shape::layout(&spec)?;
        let order = layout.order;
        let mut place = vec![0u32; order.len()];
        for (pos, &i) in order.iter().enumerate() {
            place[i as usize] = pos as u32;
        }
        let kids = spec.child_lists();
        let mut nodes = vec![Node::default(); order.len()];
        let mut first_child = vec![NONE; order.len()];
        for (pos, &i) in order.iter().enumerate() {
            let ns = &spec.nodes[i as usize];
            for (slot, &c) in kids[i as usize].iter().enumerate() {
                let cp = place[c] as usize;
                nodes[cp].parent = pos as u32;
                nodes[cp].slot = slot as u32;
                if slot == 0 {
                    first_child[pos] = cp as u32;
                }
            }
            nodes[pos].limited = ns.limit.is_some();
        }
        nodes[0].parent = NONE;
        let limits = order
            .iter()
            .map(|&i| {
                let l = spec.nodes[i as usize].limit;
                l.map_or(Gcra::UNUSED, |l| Gcra::new(l, spec.mtu))
            })
            .collect();
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
        let ets = (layout.pipes_at..layout.leaves_at)
            .map(|pos| Ets::new(units(pos), spec.mtu).map_err(|e| named(pos, e)))
            .collect::<Result<Vec<_>, _>>()?;
        let capacity = order[layout.leaves_at as usize..]
            .iter()
            .map(|&i| spec.nodes[i as usize].capacity.unwrap_or(u32::MAX))
            .collect();
        let limited = spec.nodes.iter().filter(|n| n.limit.is_some()).count();
        let shaper = Shaper::new(spec.shaper, limited)?;
        let n = order.len();
        let leaves = n - layout.leaves_at as usize;
        Ok(PipeTree {
            pool: PacketPool::with_capacity(spec.capacity as usize),
            slack: shaper.granularity(),
            shaper,
            spec,
            order,
            place,
            pipes_at: layout.pipes_at,
            leaves_at: layout.leaves_at,
            nodes,
            first_child,
            limits,
            drr,
            ets,
            fifos: vec![Fifo::new(); leaves],
            capacity,
            drops: vec![DropCounts::default(); n],
            filed: vec![None; n],
            counters: Counters::default(),
            backlog: Backlog::default(),
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
