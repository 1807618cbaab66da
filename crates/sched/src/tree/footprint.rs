//! What [`PolicyTree::new`](super::PolicyTree::new) will allocate for a
//! [`TreeSpec`], estimated from the specification alone, so that a caller can
//! refuse a tree that would not fit in memory before allocating any of it.
//!
//! The estimate counts every allocation that grows with an input: the packet
//! pool (`capacity` slots), one node record per node, each node's units and
//! priority-queue elements, its buckets (the queue geometry the node would get),
//! the flows of per-flow leaves, the per-flow minimum pools of pFabric leaves and
//! the tag pools of pFabric-fair calendars (`capacity` entries each), the
//! calendars' days, and the shaper's slots and units. Element sizes are the
//! structures' own (`size_of`) or, inside `eiffel-queue`, an upper bound of one
//! slab node (32 bytes) and two list ends per bucket (8 bytes). Fixed-size parts
//! (a few hundred bytes per tree) are left out. Computing it is linear in the
//! number of nodes and allocates nothing but its answer.

use core::mem::size_of;

use super::discipline::{Discipline, Rank};
use super::node::{Flow, Node};
use super::select::{plan, QueueNeeds, RankKind};
use super::spec::TreeSpec;
use super::txn::Unit;
use super::validate::calendar_levels;
use crate::packet::Nanos;
use crate::pool::PacketPool;
use crate::scheduler::DropCounts;
use eiffel_queue::Handle;

/// Bytes of one queue element in `eiffel-queue`'s slab (rank, links, item).
const QUEUE_ELEMENT: u64 = 32;
/// Bytes of one bucket: the head and tail of its list (the bitmap's bit is
/// negligible). Measured: a tree of 8,000 `cffs` nodes of 4,096 buckets per half
/// peaked at 567 MB, about 70 KB a node.
const QUEUE_BUCKET: u64 = 8;
/// Bytes of one entry of a per-flow minimum or tag pool.
const POOL_ENTRY: u64 = 16;
/// Bytes of one shaper slot and of one shaper unit.
const SHAPER_SLOT: u64 = 16;

/// What part of a tree an estimated allocation is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// The packet pool: the tree-wide `capacity`.
    PacketPool,
    /// The node records, their names and child lists.
    Nodes,
    /// A node's discipline: its units, queue elements and buckets, calendar days.
    Discipline,
    /// A per-flow leaf's flows (its `flows`).
    Flows,
    /// A per-flow structure as large as the tree's `capacity` (pFabric minima,
    /// pFabric-fair tags).
    PacketIndex,
    /// The shaper's timing wheel.
    Shaper,
}

/// One estimated allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    /// What it is for.
    pub what: Allocation,
    /// The node it belongs to (`None` for tree-wide parts).
    pub node: Option<usize>,
    /// Estimated bytes.
    pub bytes: u64,
}

/// The estimated allocations of a tree, per part.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Every part with a non-zero estimate.
    pub parts: Vec<Part>,
}

impl Footprint {
    /// The estimated total, in bytes.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.parts
            .iter()
            .fold(0u64, |a, p| a.saturating_add(p.bytes))
    }

    /// The largest part.
    #[must_use]
    pub fn largest(&self) -> Option<&Part> {
        self.parts.iter().max_by_key(|p| p.bytes)
    }

    fn push(&mut self, what: Allocation, node: Option<usize>, bytes: u64) {
        if bytes > 0 {
            self.parts.push(Part { what, node, bytes });
        }
    }
}

impl TreeSpec {
    /// Estimates what [`PolicyTree::new`](super::PolicyTree::new) allocates for
    /// this specification (see the module docs), without allocating it.
    ///
    /// # Example
    /// ```
    /// use eiffel_sched::tree::{NodeSpec, TreeSpec};
    /// let mut spec = TreeSpec::new(1 << 20);
    /// spec.add(NodeSpec::new("root", None));
    /// // A million packet slots of 56 bytes at least.
    /// assert!(spec.footprint().total() > 56 << 20);
    /// ```
    #[must_use]
    pub fn footprint(&self) -> Footprint {
        let mut f = Footprint::default();
        let capacity = u64::from(self.capacity);
        f.push(
            Allocation::PacketPool,
            None,
            PacketPool::bytes_for(capacity),
        );
        let mut children = vec![0u64; self.nodes.len()];
        let mut min_weight = vec![u32::MAX; self.nodes.len()];
        let mut levels = vec![1u64; self.nodes.len()];
        for n in &self.nodes {
            if let Some(p) = n.parent.filter(|&p| p < children.len()) {
                children[p] += 1;
                min_weight[p] = min_weight[p].min(n.weight);
                levels[p] = levels[p].max(u64::from(n.priority) + 1);
            }
        }
        let names: u64 = self.nodes.iter().map(|n| n.name.len() as u64).sum();
        // A node, its drop counts and shaper entry (kept apart), its flags.
        let per_node = (size_of::<Node>()
            + size_of::<DropCounts>()
            + size_of::<Option<(Handle, Nanos)>>()
            + size_of::<usize>() * 2) as u64;
        f.push(
            Allocation::Nodes,
            None,
            (self.nodes.len() as u64).saturating_mul(per_node) + names,
        );
        let mut shaper_units = 0u64;
        for (i, n) in self.nodes.iter().enumerate() {
            let flows = n.per_flow.map_or(0, |pf| u64::from(pf.max_flows));
            let units = if children[i] > 0 { children[i] } else { flows };
            let needs = Needs {
                units,
                min_weight: min_weight[i].clamp(1, 1 << 16),
                levels: levels[i],
                per_flow: children[i] == 0,
            };
            // A FIFO leaf is a list in the pool: no discipline of its own.
            if children[i] > 0 || n.per_flow.is_some() {
                f.push(
                    Allocation::Discipline,
                    Some(i),
                    self.discipline_bytes(i, &needs),
                );
            }
            f.push(
                Allocation::Flows,
                Some(i),
                flows.saturating_mul(size_of::<Flow>() as u64),
            );
            if flows > 0 && n.discipline.rank() == Some(Rank::Pfabric) {
                f.push(
                    Allocation::PacketIndex,
                    Some(i),
                    capacity.saturating_mul(POOL_ENTRY),
                );
            }
            shaper_units += u64::from(
                n.limit.is_some() || n.release.is_some() || !n.discipline.is_work_conserving(),
            );
            if n.per_flow.is_some_and(|pf| pf.flow_limit.is_some()) || n.flow_release.is_some() {
                shaper_units += flows;
            }
            if let Some(p) = &n.flow_release {
                // The pacer's per-flow state.
                let words = flows.saturating_mul(p.state_len() as u64);
                f.push(Allocation::Flows, Some(i), words.saturating_mul(8));
            }
        }
        let slots = self.shaper.slots as u64;
        f.push(
            Allocation::Shaper,
            None,
            slots
                .saturating_add(shaper_units)
                .saturating_mul(SHAPER_SLOT),
        );
        f
    }

    /// Node `i`'s discipline over `needs.units` units.
    fn discipline_bytes(&self, i: usize, needs: &Needs) -> u64 {
        let units = needs.units.max(1);
        let unit_bytes = units.saturating_mul(size_of::<Unit>() as u64 + QUEUE_ELEMENT);
        let queue = |choice, kind, time_ranks| {
            let p = plan(
                choice,
                &QueueNeeds {
                    ranks: kind,
                    time_ranks,
                    units: usize::try_from(units).unwrap_or(usize::MAX),
                    mtu: self.mtu,
                    min_weight: needs.min_weight,
                    priority_levels: usize::try_from(needs.levels).unwrap_or(usize::MAX),
                    per_flow: needs.per_flow,
                },
            );
            // Circular queues keep two halves of `buckets`.
            (p.config.buckets as u64).saturating_mul(2 * QUEUE_BUCKET)
        };
        let buckets = match &self.nodes[i].discipline {
            Discipline::Ranked { rank, queue: q } => queue(q, RankKind::Rank(*rank), false),
            // A rank program: its queue (its per-unit state is a few words, not counted).
            Discipline::Program { queue: q, .. } => queue(q, RankKind::Program, false),
            Discipline::Hclock { queue: q } => {
                queue(q, RankKind::Hclock, false).saturating_add(queue(q, RankKind::Hclock, true))
            }
            Discipline::FairQueue(_) | Discipline::Ets => 0,
            Discipline::Calendar(c) => {
                let days: u64 = calendar_levels(self, i).iter().map(|&d| d as u64).sum();
                let tags = if c.policy.name() == "cq-pfabric-fair" {
                    u64::from(self.capacity).saturating_mul(POOL_ENTRY)
                } else {
                    0
                };
                days.saturating_mul(QUEUE_BUCKET).saturating_add(tags)
            }
        };
        unit_bytes.saturating_add(buckets)
    }
}

/// What a node's queue is sized by.
struct Needs {
    units: u64,
    min_weight: u32,
    levels: u64,
    per_flow: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::{NodeSpec, PerFlow, PolicyTree};

    #[test]
    fn grows_with_capacity_and_flows() {
        let mut spec = TreeSpec::new(1000);
        let root = spec.add(NodeSpec::new("root", None));
        let mut leaf = NodeSpec::new("flows", Some(root));
        leaf.discipline = Discipline::PFABRIC;
        leaf.per_flow = Some(PerFlow {
            max_flows: 1000,
            flow_limit: None,
            flow_queue_limit: None,
        });
        spec.add(leaf);
        let small = spec.footprint().total();
        spec.capacity = 1_000_000;
        let big_pool = spec.footprint();
        // The pool and the pFabric minima both grow with the capacity.
        assert!(big_pool.total() > small + 1_000_000 * 56);
        assert!(big_pool
            .parts
            .iter()
            .any(|p| p.what == Allocation::PacketIndex && p.node == Some(1)));
        spec.nodes[1].per_flow.as_mut().unwrap().max_flows = 1_000_000;
        let many = spec.footprint();
        assert!(many.total() > big_pool.total() + 1_000_000 * size_of::<Flow>() as u64);
        assert!(PolicyTree::new(spec).is_ok());
    }

    #[test]
    fn huge_settings_saturate_instead_of_overflowing() {
        let mut spec = TreeSpec::new(u32::MAX);
        let root = spec.add(NodeSpec::new("root", None));
        for i in 0..4 {
            let mut n = NodeSpec::new(format!("l{i}"), Some(root));
            n.per_flow = Some(PerFlow {
                max_flows: u32::MAX,
                flow_limit: None,
                flow_queue_limit: None,
            });
            spec.add(n);
        }
        assert!(spec.footprint().total() > 1 << 40);
    }
}
