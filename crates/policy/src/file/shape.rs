//! The shape of the tree a policy file writes: unique names, known parents,
//! exactly one root, no cycle.

use std::collections::HashMap;

use eiffel_sched::tree::MAX_DEPTH;

use super::{at, key, names, NodeFile};
use crate::error::{KeyIndex, PolicyError};

/// Each node's parent and number of children, by file order.
pub(super) struct Shape {
    /// The parent of each node (`None` for the root).
    pub parent: Vec<Option<usize>>,
    /// How many children each node has.
    pub children: Vec<usize>,
}

impl Shape {
    /// Reads and checks the shape of `nodes`.
    pub(super) fn of(index: &KeyIndex, nodes: &[NodeFile]) -> Result<Shape, PolicyError> {
        let by_name = names(index, nodes)?;
        let parent = parents(index, nodes, &by_name)?;
        root(index, nodes, &parent)?;
        acyclic(index, nodes, &parent)?;
        let mut children = vec![0usize; nodes.len()];
        for p in parent.iter().flatten() {
            children[*p] += 1;
        }
        Ok(Shape { parent, children })
    }

    /// Whether node `i` has no children.
    pub(super) fn is_leaf(&self, i: usize) -> bool {
        self.children[i] == 0
    }
}

/// Names: valid by [`names::problem`], unique. Returns the index of each name.
fn names<'a>(
    index: &KeyIndex,
    nodes: &'a [NodeFile],
) -> Result<HashMap<&'a str, usize>, PolicyError> {
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n.name.get_ref().as_str();
        if let Some(msg) = names::problem(name) {
            return Err(at(index, &n.name, &key(i, "name"), msg));
        }
        if let Some(&j) = by_name.get(name) {
            let first = index.line_of(nodes[j].name.span().start);
            return Err(at(
                index,
                &n.name,
                &key(i, "name"),
                format!("duplicate node name `{name}` (first defined at line {first})"),
            ));
        }
        by_name.insert(name, i);
    }
    Ok(by_name)
}

/// Parents: known nodes, never the node itself.
fn parents(
    index: &KeyIndex,
    nodes: &[NodeFile],
    by_name: &HashMap<&str, usize>,
) -> Result<Vec<Option<usize>>, PolicyError> {
    let mut parent = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        let Some(p) = &n.parent else {
            continue;
        };
        let Some(&j) = by_name.get(p.get_ref().as_str()) else {
            let msg = format!("no node is called `{}`", p.get_ref());
            return Err(at(index, p, &key(i, "parent"), msg));
        };
        if j == i {
            let msg = "a node cannot be its own parent";
            return Err(at(index, p, &key(i, "parent"), msg));
        }
        parent[i] = Some(j);
    }
    Ok(parent)
}

/// Exactly one node without a parent.
fn root(index: &KeyIndex, nodes: &[NodeFile], parent: &[Option<usize>]) -> Result<(), PolicyError> {
    let roots: Vec<usize> = (0..nodes.len()).filter(|&i| parent[i].is_none()).collect();
    if roots.is_empty() {
        return Err(index.at_key(
            "node[0].parent",
            "no root: every node has a parent (the root is the node without `parent`)",
        ));
    }
    if roots.len() > 1 {
        let (a, b) = (roots[0], roots[1]);
        return Err(at(
            index,
            &nodes[b].name,
            &key(b, "name"),
            format!(
                "node `{}` has no parent, but `{}` (line {}) is already the root: a policy has one root",
                nodes[b].name.get_ref(),
                nodes[a].name.get_ref(),
                index.line_of(nodes[a].name.span().start)
            ),
        ));
    }
    Ok(())
}

/// No node is its own ancestor, and none is deeper than the tree allows.
///
/// Linear in the number of nodes: each node's depth is computed once, and a walk
/// up stops at the first node whose depth is known. A chain of any length is
/// refused at its `MAX_DEPTH`-th level without walking the rest of it.
fn acyclic(
    index: &KeyIndex,
    nodes: &[NodeFile],
    parent: &[Option<usize>],
) -> Result<(), PolicyError> {
    const UNKNOWN: usize = usize::MAX;
    const ON_PATH: usize = usize::MAX - 1;
    let mut depth = vec![UNKNOWN; nodes.len()];
    let mut path = Vec::new();
    for start in 0..nodes.len() {
        let mut cur = start;
        let mut d = loop {
            match depth[cur] {
                UNKNOWN => {}
                ON_PATH => return Err(cycle(index, nodes, cur)),
                known => break known + 1,
            }
            depth[cur] = ON_PATH;
            path.push(cur);
            match parent[cur] {
                Some(p) => cur = p,
                None => break 0,
            }
        };
        // The top of `path` is the root (depth 0) or a child of a known node.
        while let Some(i) = path.pop() {
            if d >= MAX_DEPTH {
                return Err(too_deep(index, nodes, i));
            }
            depth[i] = d;
            d += 1;
        }
    }
    Ok(())
}

/// The error for node `i`, which is its own ancestor.
fn cycle(index: &KeyIndex, nodes: &[NodeFile], i: usize) -> PolicyError {
    let msg = format!(
        "node `{}` is its own ancestor (the parents form a cycle)",
        nodes[i].name.get_ref()
    );
    match &nodes[i].parent {
        Some(p) => at(index, p, &key(i, "parent"), msg),
        None => at(index, &nodes[i].name, &key(i, "name"), msg),
    }
}

/// The error for node `i`, the first node found at depth [`MAX_DEPTH`].
fn too_deep(index: &KeyIndex, nodes: &[NodeFile], i: usize) -> PolicyError {
    let msg = format!(
        "node `{}` is {MAX_DEPTH} levels below the root: a tree has at most {} levels below its root",
        nodes[i].name.get_ref(),
        MAX_DEPTH - 1
    );
    match &nodes[i].parent {
        Some(p) => at(index, p, &key(i, "parent"), msg),
        None => at(index, &nodes[i].name, &key(i, "name"), msg),
    }
}
