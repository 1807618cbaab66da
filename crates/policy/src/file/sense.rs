//! Settings that parse but cannot mean anything, refused at their key: a
//! `weight` under a parent that does not share by weight, a `priority` under a
//! parent that is not `strict`, and hClock reservations that add up to more than
//! the parent's own rate limit (the parent could never honour them). A parent
//! with a rank program (`rank`, `rank_on_dequeue`) may read its units' weight and
//! priority, so both are meaningful under it.

use std::collections::HashMap;

use eiffel_sched::tree::Rank;

use super::discipline::{CalendarKind, Kind};
use super::shape::Shape;
use super::{at, key, NodeFile};
use crate::error::{KeyIndex, PolicyError};

/// Whether children's weights set their share under a parent of `kind`.
fn shares_by_weight(kind: Kind) -> bool {
    match kind {
        Kind::Ranked(r) => r == Rank::Wfq,
        Kind::Hclock | Kind::FairQueue(_) | Kind::Ets => true,
        Kind::Calendar(c) => c != CalendarKind::Edf,
    }
}

/// How many children each node has at each priority.
fn level_sizes(nodes: &[NodeFile], shape: &Shape) -> HashMap<(usize, i64), u32> {
    let mut sizes = HashMap::new();
    for (c, n) in nodes.iter().enumerate() {
        if let Some(p) = shape.parent[c] {
            let priority = n.priority.as_ref().map_or(0, |x| *x.get_ref());
            *sizes.entry((p, priority)).or_insert(0) += 1;
        }
    }
    sizes
}

/// Checks every node's `weight`, `priority` and `reservation` against its
/// parent (see the module docs).
pub(super) fn check(
    index: &KeyIndex,
    nodes: &[NodeFile],
    kinds: &[Kind],
    shape: &Shape,
) -> Result<(), PolicyError> {
    let mut reserved = vec![0u64; nodes.len()];
    let levels = level_sizes(nodes, shape);
    for (i, n) in nodes.iter().enumerate() {
        let Some(p) = shape.parent[i] else {
            continue;
        };
        // Under a node whose flows hold sub-policies, the children are ordered
        // by its `flow_discipline` (FIFO when absent), not by its `discipline`.
        let (parent, kind) = match (&nodes[p].flows, &nodes[p].flow_discipline) {
            (Some(_), d) => {
                let name = d.as_ref().map_or("fifo", |d| d.get_ref());
                (name, Kind::from_name(name).unwrap_or(kinds[p]))
            }
            (None, _) => (
                nodes[p].discipline.as_ref().map_or("fifo", |d| d.get_ref()),
                kinds[p],
            ),
        };
        // A rank program may read its units' weight and priority.
        let programmed = nodes[p].rank.is_some() || nodes[p].rank_on_dequeue.is_some();
        if let Some(w) = &n.weight {
            if !programmed && !shares_by_weight(kind) {
                let msg = format!(
                    "a weight has no effect under `{}`, whose discipline `{parent}` does not share by weight (wfq, qfq, drr, wf2q+, hclock and the cq- shares do)",
                    nodes[p].name.get_ref()
                );
                return Err(at(index, w, &key(i, "weight"), msg));
            }
            let priority = n.priority.as_ref().map_or(0, |x| *x.get_ref());
            if kind == Kind::Ets && levels.get(&(p, priority)) == Some(&1) {
                let msg = format!(
                    "a weight has no effect here: no other child of ets node `{}` has this node's priority, so it is a strict level of its own (children of one priority share it by weight)",
                    nodes[p].name.get_ref()
                );
                return Err(at(index, w, &key(i, "weight"), msg));
            }
        }
        if let Some(pr) = &n.priority {
            if !programmed && kind != Kind::Ranked(Rank::Strict) && kind != Kind::Ets {
                let msg = format!(
                    "a priority has no effect under `{}`, whose discipline `{parent}` is neither `strict` nor `ets`",
                    nodes[p].name.get_ref()
                );
                return Err(at(index, pr, &key(i, "priority"), msg));
            }
        }
        if let Some(r) = &n.reservation {
            reserved[p] = reserved[p].saturating_add(r.get_ref().get());
            let limit = nodes[p].limit.as_ref().map(|l| l.get_ref().get());
            if let Some(limit) = limit.filter(|&l| reserved[p] > l) {
                let msg = format!(
                    "the reservations under `{}` add up to {} bit/s, above its limit of {limit} bit/s: they could never all be met",
                    nodes[p].name.get_ref(),
                    reserved[p]
                );
                return Err(at(index, r, &key(i, "reservation"), msg));
            }
        }
    }
    Ok(())
}
