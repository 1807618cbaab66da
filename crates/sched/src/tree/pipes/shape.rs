//! Which trees a [`PipeTree`](super::PipeTree) runs, and their nodes in the
//! order it lays them out.

use super::super::discipline::{Discipline, FairQueue};
use super::super::ets::MAX_ETS_UNITS;
use super::super::spec::TreeSpec;

/// Why a tree is not of the shape a [`PipeTree`](super::PipeTree) runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The root is a leaf or an `ets` node: no `drr` level above the pipes.
    #[error("the root must be a `drr` node")]
    RootNotDrr,
    /// A node above the pipes is not `drr`.
    #[error("a node above the pipes must be `drr`")]
    NotDrr,
    /// A node at the pipes' depth is not `ets`.
    #[error("a node at the pipes' depth must be `ets`")]
    NotEts,
    /// A leaf sits at another depth than one below the pipes.
    #[error("every leaf must sit right below an `ets` pipe")]
    LeafOutOfPlace,
    /// A node below the pipes has children.
    #[error("a pipe's child must be a leaf")]
    NotLeaf,
    /// A leaf keeps flows or computes release times.
    #[error("a leaf must be one FIFO (no `per_flow`, no `release`)")]
    NotFifo,
    /// A node computes its release times by a program.
    #[error("a node must not compute its release times by a program")]
    Program,
    /// An `ets` pipe with more children than its levels allow.
    #[error("an `ets` pipe may have at most {MAX_ETS_UNITS} children")]
    TooManyChildren,
}

/// The node a problem was found at, and the problem.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node `{node}`: {problem}")]
pub struct ShapeError {
    /// The node's name.
    pub node: String,
    /// What is wrong with it.
    pub problem: ShapeProblem,
}

/// A validated tree's nodes laid out level by level: the `drr` nodes first
/// (root first), then the pipes, then the leaves, each level in its parents'
/// order and each node's children consecutive and in their order.
#[derive(Debug)]
pub(super) struct Layout {
    /// The spec index of each position.
    pub(super) order: Vec<u32>,
    /// The first pipe's position.
    pub(super) pipes_at: u32,
    /// The first leaf's position.
    pub(super) leaves_at: u32,
}

/// Checks that `spec` (validated) has the shape and lays it out.
pub(super) fn layout(spec: &TreeSpec) -> Result<Layout, ShapeError> {
    let kids = spec.child_lists();
    let root = spec.root().expect("validated");
    let problem = |i: usize, problem| ShapeError {
        node: spec.nodes[i].name.clone(),
        problem,
    };
    if !is_drr(&spec.nodes[root].discipline) || kids[root].is_empty() {
        return Err(problem(root, ShapeProblem::RootNotDrr));
    }
    let mut order = vec![root as u32];
    let mut level = vec![root];
    let pipes_at = loop {
        let next: Vec<usize> = level.iter().flat_map(|&i| kids[i].clone()).collect();
        let pipes = next.iter().filter(|&&c| is_pipe(spec, &kids, c)).count();
        order.extend(next.iter().map(|&c| c as u32));
        if pipes == next.len() {
            break (order.len() - next.len()) as u32;
        }
        if let Some(&c) = next.iter().find(|&&c| kids[c].is_empty()) {
            return Err(problem(c, ShapeProblem::LeafOutOfPlace));
        }
        if let Some(&c) = next.iter().find(|&&c| !is_drr(&spec.nodes[c].discipline)) {
            return Err(problem(c, ShapeProblem::NotDrr));
        }
        if pipes > 0 {
            let c = next
                .iter()
                .find(|&&c| is_pipe(spec, &kids, c))
                .expect("one");
            return Err(problem(*c, ShapeProblem::NotDrr));
        }
        level = next;
    };
    let pipes: Vec<usize> = order[pipes_at as usize..]
        .iter()
        .map(|&p| p as usize)
        .collect();
    let leaves_at = order.len() as u32;
    for &p in &pipes {
        if kids[p].len() > MAX_ETS_UNITS {
            return Err(problem(p, ShapeProblem::TooManyChildren));
        }
        for &c in &kids[p] {
            check_leaf(spec, &kids, c).map_err(|e| problem(c, e))?;
            order.push(c as u32);
        }
    }
    if let Some(i) = spec.nodes.iter().position(|n| n.release.is_some()) {
        return Err(problem(i, ShapeProblem::Program));
    }
    Ok(Layout {
        order,
        pipes_at,
        leaves_at,
    })
}

fn is_drr(d: &Discipline) -> bool {
    matches!(d, Discipline::FairQueue(FairQueue::Drr))
}

/// Whether node `c` is an `ets` node over leaves only.
fn is_pipe(spec: &TreeSpec, kids: &[Vec<usize>], c: usize) -> bool {
    matches!(spec.nodes[c].discipline, Discipline::Ets)
        && !kids[c].is_empty()
        && kids[c].iter().all(|&l| kids[l].is_empty())
}

/// Whether a pipe's child `c` is a FIFO leaf.
fn check_leaf(spec: &TreeSpec, kids: &[Vec<usize>], c: usize) -> Result<(), ShapeProblem> {
    let n = &spec.nodes[c];
    if !kids[c].is_empty() {
        return Err(ShapeProblem::NotLeaf);
    }
    if n.per_flow.is_some() || n.flow_release.is_some() || n.release.is_some() {
        return Err(ShapeProblem::NotFifo);
    }
    Ok(())
}
