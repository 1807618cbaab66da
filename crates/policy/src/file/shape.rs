//! The shape of the tree a policy file writes: unique names, known parents,
//! exactly one root, no cycle.

use std::collections::HashMap;

use super::{at, key, NodeFile};
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

/// Names: present, without `/`, unique. Returns the index of each name.
fn names<'a>(
    index: &KeyIndex,
    nodes: &'a [NodeFile],
) -> Result<HashMap<&'a str, usize>, PolicyError> {
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let name = n.name.get_ref().as_str();
        if name.is_empty() || name.contains('/') {
            return Err(at(
                index,
                &n.name,
                &key(i, "name"),
                "a node name must be non-empty and contain no `/`",
            ));
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

/// No node is its own ancestor.
fn acyclic(
    index: &KeyIndex,
    nodes: &[NodeFile],
    parent: &[Option<usize>],
) -> Result<(), PolicyError> {
    for i in 0..nodes.len() {
        let mut cur = parent[i];
        let mut steps = 0;
        while let Some(p) = cur {
            steps += 1;
            if steps > nodes.len() {
                let p = nodes[i].parent.as_ref().expect("has a parent");
                let msg = format!(
                    "node `{}` is its own ancestor (the parents form a cycle)",
                    nodes[i].name.get_ref()
                );
                return Err(at(index, p, &key(i, "parent"), msg));
            }
            cur = parent[p];
        }
    }
    Ok(())
}
