//! The policy file's schema as serde reads it, and its compilation into a
//! [`TreeSpec`] and a [`RuleSet`], with every check that names a key.
//!
//! Compilation goes in the order a reader checks a file: the tree-wide settings
//! and the number of classification rules, the shape of the tree ([`release`]: names, parents, one root, no cycle), each
//! node's discipline with its own parameters ([`discipline`]) and its settings
//! ([`node`]), what the tree itself refuses ([`TreeSpec::validate`] and
//! [`PolicyTree::new`], mapped back to the key at fault), and the `[classify]`
//! section ([`crate::classify`]).

mod discipline;
mod names;
mod node;
mod rank;
mod release;
mod sense;
mod shape;
mod subtrees;

pub(crate) use subtrees::LeafMap;

use eiffel_classify::RuleSet;
use eiffel_sched::tree::{SpecError, TreeSpec};
use eiffel_sched::{ConfigError, PolicyTree};
use serde::Deserialize;
use toml::Spanned;

use crate::budget::{self, Limits};
use crate::classify::{self, ClassifyFile, ClassifySpec};
use crate::error::{KeyIndex, PolicyError};
use crate::units::{Rate, Size, Time};

/// Packets a tree holds when the file does not say.
pub const DEFAULT_CAPACITY: u32 = 65_536;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PolicyFile {
    capacity: Option<Spanned<i64>>,
    mtu: Option<Spanned<Size>>,
    shaper: Option<ShaperFile>,
    #[serde(default)]
    node: Vec<NodeFile>,
    classify: Option<ClassifyFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShaperFile {
    horizon: Option<Spanned<Time>>,
    slots: Option<Spanned<i64>>,
}

/// One `[[node]]` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    name: Spanned<String>,
    parent: Option<Spanned<String>>,
    discipline: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    priority: Option<Spanned<i64>>,
    reservation: Option<Box<Spanned<Rate>>>,
    limit: Option<Spanned<Rate>>,
    burst: Option<Box<Spanned<Size>>>,
    capacity: Option<Spanned<i64>>,
    queue: Option<Box<Spanned<String>>>,
    granularity: Option<Box<Spanned<i64>>>,
    buckets: Option<Box<Spanned<i64>>>,
    occupancy: Option<Box<Spanned<f64>>>,
    flows: Option<Spanned<i64>>,
    flow_limit: Option<Box<Spanned<Rate>>>,
    flow_burst: Option<Box<Spanned<Size>>>,
    flow_queue: Option<Box<Spanned<i64>>>,
    days: Option<Box<Spanned<toml::Value>>>,
    quantum: Option<Box<Spanned<Size>>>,
    burst_allowance: Option<Box<Spanned<Size>>>,
    period: Option<Box<Spanned<Time>>>,
    rotation: Option<Box<Spanned<String>>>,
    rate: Option<Box<Spanned<Rate>>>,
    bucket: Option<Box<Spanned<Size>>>,
    rank: Option<Box<Spanned<String>>>,
    rank_on_dequeue: Option<Box<Spanned<String>>>,
    state: Option<Box<Spanned<toml::Table>>>,
    node_state: Option<Box<Spanned<toml::Table>>>,
    constants: Option<Box<Spanned<toml::Table>>>,
    release: Option<Box<Spanned<String>>>,
    release_on_dequeue: Option<Box<Spanned<String>>>,
    release_state: Option<Box<Spanned<toml::Table>>>,
    flow_discipline: Option<Box<Spanned<String>>>,
}

/// A compiled policy file.
pub(crate) struct Compiled {
    pub spec: TreeSpec,
    pub classify: ClassifySpec,
    pub rules: RuleSet,
    /// Where the leaves of flows with sub-policies went.
    pub leaves: LeafMap,
}

/// The key path of key `k` of node `i`.
fn key(i: usize, k: &str) -> String {
    format!("node[{i}].{k}")
}

/// An error at `v`, naming `key`.
fn at<T>(index: &KeyIndex, v: &Spanned<T>, key: &str, msg: impl Into<String>) -> PolicyError {
    index.error(v.span().start, key, msg)
}

/// Reads an integer key that must lie in `lo..=hi`.
fn int_in(
    index: &KeyIndex,
    v: &Spanned<i64>,
    key: &str,
    lo: i64,
    hi: i64,
    what: &str,
) -> Result<i64, PolicyError> {
    index.int_in(v, key, lo, hi, Some(what))
}

/// `v` if it lies in `lo..=hi`, otherwise an error at key `node[i].k` (the
/// key's name is written out only then: a file may hold 100,000 nodes).
fn node_int(
    index: &KeyIndex,
    v: &Spanned<i64>,
    i: usize,
    k: &str,
    lo: i64,
    hi: i64,
    what: &str,
) -> Result<i64, PolicyError> {
    let x = *v.get_ref();
    if (lo..=hi).contains(&x) {
        return Ok(x);
    }
    int_in(index, v, &key(i, k), lo, hi, what)
}

/// Compiles policy `text` (see the module docs); nothing is allocated for the
/// tree or the flow table before their estimate fits `limits`.
pub(crate) fn compile(
    index: &KeyIndex,
    file: PolicyFile,
    limits: &Limits,
) -> Result<Compiled, PolicyError> {
    let mut spec = TreeSpec::new(DEFAULT_CAPACITY);
    globals(index, &file, &mut spec)?;
    classify::check_rule_count(index, file.classify.as_ref())?;
    if file.node.is_empty() {
        return Err(index.error(0, "node", "a policy needs at least one [[node]]"));
    }
    let shape = shape::Shape::of(index, &file.node)?;
    let kinds = discipline::kinds(index, &file.node)?;
    sense::check(index, &file.node, &kinds, &shape)?;
    let subtrees = (file.node.iter().enumerate())
        .map(|(i, n)| subtrees::of(index, n, i, &shape, spec.mtu))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, n) in file.node.iter().enumerate() {
        let stripped;
        let n = if subtrees[i].is_some() {
            stripped = subtrees::without_flow_keys(n);
            &stripped
        } else {
            n
        };
        let d = discipline::compile(index, n, i, kinds[i], &shape)?;
        let d = rank::apply(index, n, i, d, &shape)?;
        let mut ns = node::compile(index, n, i, d, &kinds, &shape, spec.mtu)?;
        match release::compile(index, &file.node[i], i, &shape)? {
            Some(release::Release::Flows(p)) => ns.flow_release = Some(p),
            Some(release::Release::Node(p)) => ns.release = Some(p),
            None => {}
        }
        spec.add(ns);
    }
    spec.validate().map_err(|e| spec_error(index, &e))?;
    budget::tree(index, &spec).check(limits)?;
    PolicyTree::new(spec.clone()).map_err(|e| config_error(index, &spec, &e))?;
    let (classify, rules) = classify::compile(index, file.classify, &spec)?;
    let expanded = subtrees.iter().any(Option::is_some);
    let (spec, leaves) = if expanded {
        subtrees::expand(&spec, &subtrees)
    } else {
        (spec, subtrees::LeafMap::default())
    };
    let mut estimate = budget::tree(index, &spec);
    estimate.extend(budget::flow_table(index, classify.flow_table.max_flows));
    estimate.check(limits)?;
    if expanded {
        PolicyTree::new(spec.clone()).map_err(|e| config_error(index, &spec, &e))?;
    }
    Ok(Compiled {
        spec,
        classify,
        rules,
        leaves,
    })
}

/// The tree-wide settings: capacity, mtu and the shaper.
fn globals(index: &KeyIndex, file: &PolicyFile, spec: &mut TreeSpec) -> Result<(), PolicyError> {
    if let Some(c) = &file.capacity {
        let max = eiffel_sched::MAX_POOL_CAPACITY as i64;
        spec.capacity = int_in(index, c, "capacity", 1, max, "capacity (packets)")? as u32;
    }
    if let Some(m) = &file.mtu {
        let mtu = m.get_ref().get();
        if !(1..=u64::from(u16::MAX)).contains(&mtu) {
            let msg = format!("mtu must be 1 B..=65535 B, got {mtu} B");
            return Err(at(index, m, "mtu", msg));
        }
        spec.mtu = mtu as u32;
    }
    let Some(s) = &file.shaper else {
        return Ok(());
    };
    if let Some(h) = &s.horizon {
        spec.shaper.horizon = h.get_ref().duration();
    }
    if let Some(n) = &s.slots {
        spec.shaper.slots = int_in(index, n, "shaper.slots", 1, 1 << 26, "slots")? as usize;
    }
    if spec.shaper.horizon.as_nanos() < spec.shaper.slots as u64 {
        let key = if s.horizon.is_some() {
            "shaper.horizon"
        } else {
            "shaper.slots"
        };
        let msg = format!(
            "a horizon of {} ns cannot hold {} slots (at least 1 ns each)",
            spec.shaper.horizon.as_nanos(),
            spec.shaper.slots
        );
        return Err(index.at_key(key, msg));
    }
    Ok(())
}

/// The key of node `i` at fault: `k` if the file sets it, else the node's name.
fn node_key(index: &KeyIndex, i: usize, k: Option<&str>) -> String {
    k.map(|k| key(i, k))
        .filter(|k| index.span_of(k).is_some())
        .unwrap_or_else(|| key(i, "name"))
}

/// A tree specification error at the key it concerns.
fn spec_error(index: &KeyIndex, e: &SpecError) -> PolicyError {
    let msg = e.to_string();
    match e {
        SpecError::Node {
            index: i, problem, ..
        } => index.at_key(&node_key(index, *i, problem.key()), msg),
        SpecError::ShaperSlots { .. } => index.at_key("shaper", msg),
        _ => index.error(0, "node", msg),
    }
}

/// A tree construction error at the node it concerns (or the file's start).
fn config_error(index: &KeyIndex, spec: &TreeSpec, e: &ConfigError) -> PolicyError {
    match e {
        ConfigError::Spec(e) => spec_error(index, e),
        ConfigError::Node { node, .. } => match spec.find(node) {
            Some(i) => index.at_key(&key(i, "name"), e.to_string()),
            None => index.error(0, "node", e.to_string()),
        },
        ConfigError::Queue { what, .. } if what == "shaper" => {
            index.at_key("shaper", e.to_string())
        }
        _ => index.error(0, "node", e.to_string()),
    }
}
