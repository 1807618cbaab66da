//! Flows that hold sub-policies (Eiffel, NSDI'19, section 3.2.1: "every
//! individual flow in the flow-rank policy can be composed of multiple flows
//! that are scheduled according to per packet scheduling transactions"): a node
//! with `flows = N` *and* children orders N flows by its discipline, and each
//! flow holds its own copy of the subtree below the node, ordered by
//! `flow_discipline`.
//!
//! ```toml
//! [[node]]
//! name = "tenants"
//! discipline = "wfq"           # fairness across tenants (flows 0..4)
//! flows = 4
//! flow_discipline = "strict"   # strict priority among each tenant's classes
//!
//! [[node]]
//! name = "high"
//! parent = "tenants"
//! priority = 0
//! ```
//!
//! The file is first compiled as written (the node over its children, so every
//! mistake points at the key that has it), then expanded: the node gets N
//! children `tenants[f]` (discipline `flow_discipline`, weight 1, the
//! `flow_limit` as their rate limit), and each holds a copy of the subtree with
//! its nodes named `high[f]`. Classification names the subtree's leaves as
//! written; a packet reaches the copy of its flow id folded onto the N flows
//! (`flow mod N`: a workload group of N flows is one flow per tenant).

use eiffel_sched::tree::{Discipline, NodeSpec, RateLimit, TreeSpec};
use eiffel_sched::ClassId;
use toml::Spanned;

use super::discipline::Kind;
use super::shape::Shape;
use super::{at, int_in, key, NodeFile};
use crate::error::{KeyIndex, PolicyError};

/// One node's flows with sub-policies, as written.
#[derive(Clone, Debug)]
pub(super) struct FlowSubtree {
    flows: u32,
    discipline: Discipline,
    limit: Option<RateLimit>,
}

/// Node `i`'s flows with sub-policies, if it has children and `flows`; checks
/// the keys that belong with them.
pub(super) fn of(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
    shape: &Shape,
    mtu: u32,
) -> Result<Option<FlowSubtree>, PolicyError> {
    let leaf = shape.is_leaf(i);
    match (&n.flows, &n.flow_discipline) {
        (_, Some(d)) if leaf || n.flows.is_none() => {
            let msg = "`flow_discipline` orders the subtree each flow holds: give the node `flows = N` and children";
            Err(at(index, d, &key(i, "flow_discipline"), msg))
        }
        (Some(f), _) if !leaf => {
            let flows = int_in(
                index,
                f,
                &key(i, "flows"),
                1,
                1 << 16,
                "flows with sub-policies",
            )?;
            if let Some(q) = &n.flow_queue {
                let msg = "`flow_queue` limits the FIFO of a per-flow leaf's flows: set `capacity` on the subtree's leaves";
                return Err(at(index, q, &key(i, "flow_queue"), msg));
            }
            let discipline = match &n.flow_discipline {
                Some(d) => flow_discipline(index, d, i)?,
                None => Discipline::FIFO,
            };
            let limit = super::node::limit(
                index,
                n.flow_limit.as_deref(),
                n.flow_burst.as_deref(),
                &key(i, "flow_limit"),
                &key(i, "flow_burst"),
                mtu,
            )?;
            Ok(Some(FlowSubtree {
                flows: flows as u32,
                discipline,
                limit,
            }))
        }
        _ => Ok(None),
    }
}

fn flow_discipline(
    index: &KeyIndex,
    d: &Spanned<String>,
    i: usize,
) -> Result<Discipline, PolicyError> {
    match Kind::from_name(d.get_ref()) {
        Some(Kind::Ranked(rank)) if !Discipline::ranked(rank).ranks_flows() => {
            Ok(Discipline::ranked(rank))
        }
        Some(Kind::FairQueue(f)) => Ok(Discipline::FairQueue(f)),
        _ => {
            let msg = format!(
                "`{}` cannot order a flow's subtree: use fifo, strict, wfq, edf, lstf, srpt, qfq, drr or wf2q+",
                d.get_ref()
            );
            Err(at(index, d, &key(i, "flow_discipline"), msg))
        }
    }
}

/// The node as the rest of the compiler sees it: without its per-flow keys.
pub(super) fn without_flow_keys(n: &NodeFile) -> NodeFile {
    let mut n = n.clone();
    n.flows = None;
    n.flow_limit = None;
    n.flow_burst = None;
    n.flow_discipline = None;
    n
}

/// Where a leaf of the file's tree went.
#[derive(Clone, Debug)]
enum Dest {
    /// Kept, under this id of the expanded tree (`ClassId::MAX` for internal
    /// nodes, which no rule names).
    Kept(ClassId),
    /// Copied, one leaf per flow id.
    PerFlow(Vec<ClassId>),
}

/// Where each leaf of the file's tree went: itself, or one copy per flow.
#[derive(Clone, Debug, Default)]
pub(crate) struct LeafMap {
    /// Indexed by the leaf id of the tree as written; empty when no node has
    /// flows with sub-policies.
    to: Vec<Dest>,
}

impl LeafMap {
    /// Whether some node's flows hold sub-policies.
    pub(crate) fn is_empty(&self) -> bool {
        self.to.is_empty()
    }

    /// The leaf of the expanded tree for a packet of flow `flow` that the rules
    /// sent to leaf `written` of the tree as written: in a subtree, the copy of
    /// flow `flow mod N`.
    pub(crate) fn leaf(&self, written: ClassId, flow: u32) -> ClassId {
        match self.to.get(written as usize) {
            None => written,
            Some(Dest::Kept(id)) => *id,
            Some(Dest::PerFlow(copies)) => copies[flow as usize % copies.len()],
        }
    }
}

/// Expands every node with flows that hold sub-policies; returns the expanded
/// tree and where each written leaf went.
pub(super) fn expand(spec: &TreeSpec, subtrees: &[Option<FlowSubtree>]) -> (TreeSpec, LeafMap) {
    if subtrees.iter().all(Option::is_none) {
        return (spec.clone(), LeafMap::default());
    }
    let kids = spec.child_lists();
    // The nodes inside some subtree: copied, not kept.
    let mut inside = vec![false; spec.nodes.len()];
    for (i, s) in subtrees.iter().enumerate() {
        if s.is_some() {
            mark(&kids, i, &mut inside);
        }
    }
    let mut out = TreeSpec {
        nodes: Vec::new(),
        ..spec.clone()
    };
    let mut to: Vec<Dest> = vec![Dest::Kept(ClassId::MAX); spec.nodes.len()];
    let mut new_of = vec![usize::MAX; spec.nodes.len()];
    for (i, n) in spec.nodes.iter().enumerate() {
        if !inside[i] {
            let mut n = n.clone();
            n.parent = n.parent.map(|p| new_of[p]);
            new_of[i] = out.add(n);
            if kids[i].is_empty() {
                to[i] = Dest::Kept(new_of[i] as ClassId);
            }
        }
    }
    for (i, s) in subtrees.iter().enumerate() {
        let Some(s) = s else { continue };
        for f in 0..s.flows {
            let name = format!("{}[{f}]", spec.nodes[i].name);
            let mut head = NodeSpec::new(name, Some(new_of[i]));
            head.discipline = s.discipline.clone();
            head.limit = s.limit;
            let h = out.add(head);
            copy(spec, &kids, i, h, f, &mut out, &mut to);
        }
    }
    (out, LeafMap { to })
}

fn mark(kids: &[Vec<usize>], i: usize, inside: &mut [bool]) {
    for &c in &kids[i] {
        inside[c] = true;
        mark(kids, c, inside);
    }
}

/// Copies the children of written node `from` under new node `under`, for flow
/// `f`, recording where the leaves went in `dest`.
fn copy(
    spec: &TreeSpec,
    kids: &[Vec<usize>],
    from: usize,
    under: usize,
    f: u32,
    out: &mut TreeSpec,
    dest: &mut [Dest],
) {
    for &c in &kids[from] {
        let mut n = spec.nodes[c].clone();
        n.name = format!("{}[{f}]", n.name);
        n.parent = Some(under);
        let id = out.add(n);
        if kids[c].is_empty() {
            match &mut dest[c] {
                Dest::PerFlow(v) => v.push(id as ClassId),
                d => *d = Dest::PerFlow(vec![id as ClassId]),
            }
        }
        copy(spec, kids, c, id, f, out, dest);
    }
}
