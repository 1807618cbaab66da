//! A parsed DOT graph as the policy file it means: every node a `[[node]]`
//! whose parent is the tail of the one edge into it, its attributes the node's
//! keys, graph attributes the tree-wide settings and `[classify]`, and each
//! leaf's `rule` attributes its classification rules. The document is built with
//! `toml_edit` (values are never spliced into text), and every key it writes is
//! remembered with the place in the DOT file it came from.

use std::collections::HashMap;

use toml_edit::{value, ArrayOfTables, DocumentMut, Item, Table, Value};

use super::parse::{Attr, End, Graph, Id, IdKind, Stmt};
use super::{Origin, SourceMap};

/// A mistake found while lowering, at a byte offset of the DOT text.
#[derive(Debug)]
pub(crate) struct LowerError {
    pub offset: usize,
    pub key: String,
    pub message: String,
}

fn err(at: usize, key: impl Into<String>, message: impl Into<String>) -> LowerError {
    LowerError {
        offset: at,
        key: key.into(),
        message: message.into(),
    }
}

/// Graphviz's drawing attributes: a policy drawn with `dot` may carry them, and
/// they mean nothing to the scheduler.
const DRAWING: [&str; 24] = [
    "label",
    "xlabel",
    "color",
    "fillcolor",
    "fontcolor",
    "fontname",
    "fontsize",
    "style",
    "penwidth",
    "shape",
    "width",
    "height",
    "tooltip",
    "fixedsize",
    "margin",
    "peripheries",
    "group",
    "rankdir",
    "splines",
    "nodesep",
    "ranksep",
    "bgcolor",
    "size",
    "ratio",
];

/// Node keys whose values are TOML values written as DOT strings.
const TOML_VALUED: [&str; 5] = ["state", "node_state", "release_state", "constants", "days"];

/// Node keys that are strings even when they look like numbers.
const TEXT: [&str; 8] = [
    "discipline",
    "queue",
    "flow_discipline",
    "rotation",
    "rank",
    "rank_on_dequeue",
    "release",
    "release_on_dequeue",
];

/// Graph attributes and the TOML table they go to (`""`: the top level).
const GRAPH_KEYS: [(&str, &str, &str); 11] = [
    ("capacity", "", "capacity"),
    ("mtu", "", "mtu"),
    ("horizon", "shaper", "horizon"),
    ("slots", "shaper", "slots"),
    ("default", "classify", "default"),
    ("max_flows", "classify", "max_flows"),
    ("idle_timeout", "classify", "idle_timeout"),
    ("malformed", "classify", "malformed"),
    ("rank", "classify", "rank"),
    ("remaining", "classify", "remaining"),
    ("thresholds", "classify", "thresholds"),
];

#[derive(Default)]
struct NodeAcc {
    id: Option<Id>,
    parent: Option<(usize, Id)>,
    attrs: Vec<Attr>,
}

#[derive(Default)]
struct Lowering {
    nodes: Vec<NodeAcc>,
    by_name: HashMap<String, usize>,
    graph: Vec<Attr>,
    /// Where each line of the DOT text starts, to name lines in messages.
    line_starts: Vec<usize>,
}

impl Lowering {
    /// The 1-based line of byte `at`.
    fn line(&self, at: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= at)
    }

    fn node(&mut self, id: &Id) -> Result<usize, LowerError> {
        if id.kind == IdKind::Html {
            let msg = "an HTML string cannot name a node: use a name or a quoted string";
            return Err(err(id.at, "node", msg));
        }
        if let Some(&i) = self.by_name.get(&id.text) {
            return Ok(i);
        }
        self.by_name.insert(id.text.clone(), self.nodes.len());
        self.nodes.push(NodeAcc {
            id: Some(id.clone()),
            ..NodeAcc::default()
        });
        Ok(self.nodes.len() - 1)
    }

    fn name(&self, i: usize) -> &str {
        self.nodes[i].id.as_ref().map_or("", |id| id.text.as_str())
    }

    /// The nodes of one end of a chain, in order.
    fn end(&mut self, e: &End) -> Result<Vec<usize>, LowerError> {
        match e {
            End::Node { id, port } => {
                if let Some(p) = port {
                    let msg = "ports (`node:port`) mean nothing in a policy tree: remove it";
                    return Err(err(p.at, id.text.clone(), msg));
                }
                Ok(vec![self.node(id)?])
            }
            End::Subgraph { stmts, .. } => self.stmts(stmts, false),
        }
    }

    fn edge(&mut self, parent: usize, child: usize, at: &Id) -> Result<(), LowerError> {
        if parent == child {
            let msg = format!("`{}` cannot be its own parent", self.name(child));
            return Err(err(at.at, format!("{}.parent", self.name(child)), msg));
        }
        let tail = self.nodes[parent].id.clone().unwrap_or_else(|| at.clone());
        match &self.nodes[child].parent {
            Some((p, _)) if *p == parent => Ok(()),
            Some((p, first)) => {
                let msg = format!(
                    "`{}` already has the parent `{}` (line {}): a node of the tree has one parent",
                    self.name(child),
                    self.name(*p),
                    self.line(first.at)
                );
                Err(err(at.at, format!("{}.parent", self.name(child)), msg))
            }
            None => {
                self.nodes[child].parent = Some((parent, Id { at: at.at, ..tail }));
                Ok(())
            }
        }
    }

    fn chain(
        &mut self,
        ends: &[End],
        ops: &[(usize, bool)],
        attrs: &[Attr],
    ) -> Result<Vec<usize>, LowerError> {
        if let Some(&(at, _)) = ops.iter().find(|(_, directed)| !directed) {
            let msg = "a policy tree is directed: write `parent -> child`";
            return Err(err(at, "edge", msg));
        }
        let mut all = Vec::new();
        let mut prev: Option<(Vec<usize>, Vec<Id>)> = None;
        for e in ends {
            let nodes = self.end(e)?;
            let ids: Vec<Id> = match e {
                End::Node { id, .. } => vec![id.clone()],
                End::Subgraph { at, .. } => nodes
                    .iter()
                    .map(|&n| Id {
                        at: *at,
                        ..self.nodes[n].id.clone().expect("declared")
                    })
                    .collect(),
            };
            if let Some((parents, parent_ids)) = &prev {
                for (&p, pid) in parents.iter().zip(parent_ids) {
                    for &c in &nodes {
                        self.edge(p, c, pid)?;
                    }
                }
            }
            all.extend(nodes.iter().copied());
            prev = Some((nodes, ids));
        }
        if let Some(a) = attrs.first() {
            match ends {
                [End::Node { id, .. }] => {
                    let i = self.by_name[&id.text];
                    self.nodes[i].attrs.extend(attrs.iter().cloned());
                }
                _ => {
                    let msg = "edges and subgraphs carry no settings: put them on the node";
                    return Err(err(a.key.at, a.key.text.clone(), msg));
                }
            }
        }
        Ok(all)
    }

    /// Lowers statements; returns the nodes they mention.
    fn stmts(&mut self, stmts: &[Stmt], top: bool) -> Result<Vec<usize>, LowerError> {
        let mut mentioned = Vec::new();
        for s in stmts {
            match s {
                Stmt::Defaults { kind, attrs } if kind.text.eq_ignore_ascii_case("graph") => {
                    if !top {
                        let msg =
                            "settings belong to the whole graph: write them outside subgraphs";
                        return Err(err(kind.at, "graph", msg));
                    }
                    self.graph.extend(attrs.iter().cloned());
                }
                Stmt::Defaults { kind, attrs } => {
                    // Drawing defaults (`node [shape = box]`) are ignored.
                    if let Some(a) = attrs
                        .iter()
                        .find(|a| !DRAWING.contains(&a.key.text.as_str()))
                    {
                        let msg = format!(
                            "`{}` defaults may hold drawing attributes only: give each node its own settings",
                            kind.text
                        );
                        return Err(err(a.key.at, format!("{}.{}", kind.text, a.key.text), msg));
                    }
                }
                Stmt::Assign(a) => {
                    if !top {
                        let msg =
                            "settings belong to the whole graph: write them outside subgraphs";
                        return Err(err(a.key.at, a.key.text.clone(), msg));
                    }
                    self.graph.push(a.clone());
                }
                Stmt::Chain { ends, ops, attrs } => {
                    mentioned.extend(self.chain(ends, ops, attrs)?);
                }
            }
        }
        Ok(mentioned)
    }
}

/// A DOT value as the TOML value of key `key`.
fn toml_value(key: &str, v: &Id) -> Result<Value, LowerError> {
    if TOML_VALUED.contains(&key) {
        let parsed = v.text.parse::<Value>().map_err(|e| {
            let msg = format!(
                "`{key}` is written as TOML inside a string, such as \"{{ start = 0 }}\": {}",
                e.to_string().lines().next().unwrap_or("not a value").trim()
            );
            err(v.at, key, msg)
        })?;
        return Ok(parsed);
    }
    Ok(scalar(&v.text, TEXT.contains(&key)))
}

/// A number if `text` is one (and `text_only` is false), else a string.
fn scalar(text: &str, text_only: bool) -> Value {
    if !text_only {
        if let Ok(i) = text.parse::<i64>() {
            return Value::from(i);
        }
        if text.contains('.') {
            if let Ok(f) = text.parse::<f64>() {
                return Value::from(f);
            }
        }
    }
    Value::from(text)
}

fn origin(path: String, v: &Id, label: String) -> Origin {
    Origin {
        path,
        at: v.at,
        text_at: (v.kind == IdKind::Quoted && v.verbatim).then(|| (v.at + 1, v.text.len())),
        label,
    }
}

/// One node's `[[node]]` table.
fn node_table(
    l: &Lowering,
    i: usize,
    map: &mut SourceMap,
    rules: &mut Vec<(usize, Attr)>,
) -> Result<Table, LowerError> {
    let n = &l.nodes[i];
    let id = n.id.as_ref().expect("declared");
    let mut t = Table::new();
    t.insert("name", value(id.text.clone()));
    map.origins
        .push(origin(format!("node[{i}].name"), id, id.text.clone()));
    map.origins
        .push(origin(format!("node[{i}]"), id, id.text.clone()));
    if let Some((p, at)) = &n.parent {
        t.insert("parent", value(l.name(*p)));
        let label = format!("{}.parent", id.text);
        map.origins
            .push(origin(format!("node[{i}].parent"), at, label));
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for a in &n.attrs {
        let k = a.key.text.as_str();
        if DRAWING.contains(&k) {
            continue;
        }
        if k == "rule" {
            rules.push((i, a.clone()));
            continue;
        }
        if k == "name" || k == "parent" {
            let msg = "a node's name is its DOT id, and its parent the tail of the edge into it";
            return Err(err(a.key.at, format!("{}.{k}", id.text), msg));
        }
        if let Some(first) = seen.insert(k, a.key.at) {
            let msg = format!("`{k}` is set twice (first on line {})", l.line(first));
            return Err(err(a.key.at, format!("{}.{k}", id.text), msg));
        }
        let label = format!("{}.{k}", id.text);
        let v = toml_value(k, &a.value).map_err(|e| err(e.offset, label.clone(), e.message))?;
        t.insert(k, Item::Value(v));
        map.origins
            .push(origin(format!("node[{i}].{k}"), &a.value, label));
    }
    Ok(t)
}

/// The classification rules of `rule = "class=2 | protocol=udp dscp=ef"`
/// attributes: alternatives separated by `|`, each a list of `key=value`
/// conditions separated by spaces or commas, tried in the order written.
fn rule_tables(
    l: &Lowering,
    mut rules: Vec<(usize, Attr)>,
    map: &mut SourceMap,
) -> Result<ArrayOfTables, LowerError> {
    rules.sort_by_key(|(_, a)| a.value.at);
    let mut out = ArrayOfTables::new();
    for (leaf, a) in rules {
        let label = format!("{}.rule", l.name(leaf));
        for alt in a.value.text.split('|') {
            let mut t = Table::new();
            t.insert("leaf", value(l.name(leaf)));
            let conds: Vec<&str> = alt
                .split(|c: char| c.is_whitespace() || c == ',')
                .filter(|s| !s.is_empty())
                .collect();
            if conds.is_empty() {
                let msg = "a rule needs conditions such as \"class=2\" or \"protocol=udp dscp=ef\"";
                return Err(err(a.value.at, label, msg));
            }
            for c in conds {
                let Some((k, v)) = c.split_once('=') else {
                    let msg = format!("`{c}` is not a condition: write key=value, such as class=2");
                    return Err(err(a.value.at, label, msg));
                };
                if k.is_empty() || v.is_empty() || t.contains_key(k) || k == "leaf" {
                    let msg = format!("`{c}`: a condition is key=value, each key once");
                    return Err(err(a.value.at, label, msg));
                }
                t.insert(k, Item::Value(scalar(v, false)));
            }
            let path = format!("classify.rule[{}]", out.len());
            map.origins.push(origin(path, &a.value, label.clone()));
            out.push(t);
        }
    }
    Ok(out)
}

/// The tree-wide settings and `[classify]` from the graph attributes.
fn graph_settings(
    l: &Lowering,
    doc: &mut DocumentMut,
    map: &mut SourceMap,
) -> Result<(), LowerError> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for a in &l.graph {
        let k = a.key.text.as_str();
        if DRAWING.contains(&k) || ["compound", "newrank", "concentrate", "layout"].contains(&k) {
            continue;
        }
        let Some(&(_, table, key)) = GRAPH_KEYS.iter().find(|(name, _, _)| *name == k) else {
            let known: Vec<&str> = GRAPH_KEYS.iter().map(|(n, _, _)| *n).collect();
            let msg = format!(
                "unknown graph setting `{k}`: expected one of {} (or a Graphviz drawing attribute)",
                known.join(", ")
            );
            return Err(err(a.key.at, format!("graph.{k}"), msg));
        };
        if let Some(first) = seen.insert(k, a.key.at) {
            let msg = format!("`{k}` is set twice (first on line {})", l.line(first));
            return Err(err(a.key.at, format!("graph.{k}"), msg));
        }
        let label = format!("graph.{k}");
        let v = if k == "thresholds" {
            toml_value("days", &a.value).map_err(|e| err(e.offset, label.clone(), e.message))?
        } else {
            scalar(
                &a.value.text,
                ["default", "malformed", "rank", "remaining"].contains(&k),
            )
        };
        let path = if table.is_empty() {
            doc.insert(key, Item::Value(v));
            key.to_string()
        } else {
            let t = doc.entry(table).or_insert(Item::Table(Table::new()));
            t[key] = Item::Value(v);
            format!("{table}.{key}")
        };
        map.origins.push(origin(path, &a.value, label));
    }
    Ok(())
}

/// The policy file `g`, parsed from `text`, means, and where each of its keys
/// came from.
pub(crate) fn lower(g: &Graph, text: &str) -> Result<(DocumentMut, SourceMap), LowerError> {
    if !g.directed {
        let msg = "a policy tree is a `digraph`: edges go from parent to child";
        return Err(err(g.at, "graph", msg));
    }
    let mut l = Lowering {
        line_starts: std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
        ..Lowering::default()
    };
    l.stmts(&g.stmts, true)?;
    if l.nodes.is_empty() {
        return Err(err(g.at, "graph", "a policy needs at least one node"));
    }
    let mut map = SourceMap {
        origins: Vec::new(),
        graph_at: g.at,
    };
    let mut doc = DocumentMut::new();
    graph_settings(&l, &mut doc, &mut map)?;
    let mut nodes = ArrayOfTables::new();
    let mut rules = Vec::new();
    for i in 0..l.nodes.len() {
        nodes.push(node_table(&l, i, &mut map, &mut rules)?);
    }
    doc.insert("node", Item::ArrayOfTables(nodes));
    if !rules.is_empty() {
        let tables = rule_tables(&l, rules, &mut map)?;
        let t = doc.entry("classify").or_insert(Item::Table(Table::new()));
        t["rule"] = Item::ArrayOfTables(tables);
    }
    Ok((doc, map))
}
