//! The policy file's schema as serde reads it, and its compilation into a
//! [`TreeSpec`] and a [`RuleSet`], with every check that names a key.

use std::collections::HashMap;

use eiffel_classify::RuleSet;
use eiffel_queue::QueueKind;
use eiffel_sched::tree::spec::{CalendarParams, EdfRotation, MAX_WEIGHT};
use eiffel_sched::tree::{Discipline, NodeSpec, PerFlow, QueueChoice, RateLimit, TreeSpec};
use eiffel_sched::{ConfigError, PolicyTree};
use serde::Deserialize;
use toml::Spanned;

use crate::classify::{self, ClassifyFile, ClassifySpec};
use crate::error::{KeyIndex, PolicyError};
use crate::units::{Rate, Size, Time};

/// Packets a tree holds when the file does not say.
pub const DEFAULT_CAPACITY: u32 = 65_536;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct NodeFile {
    name: Spanned<String>,
    parent: Option<Spanned<String>>,
    discipline: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    priority: Option<Spanned<i64>>,
    reservation: Option<Spanned<Rate>>,
    limit: Option<Spanned<Rate>>,
    burst: Option<Spanned<Size>>,
    capacity: Option<Spanned<i64>>,
    queue: Option<Spanned<String>>,
    granularity: Option<Spanned<i64>>,
    buckets: Option<Spanned<i64>>,
    occupancy: Option<Spanned<f64>>,
    flows: Option<Spanned<i64>>,
    flow_limit: Option<Spanned<Rate>>,
    flow_burst: Option<Spanned<Size>>,
    flow_queue: Option<Spanned<i64>>,
    days: Option<Spanned<toml::Value>>,
    quantum: Option<Spanned<Size>>,
    burst_allowance: Option<Spanned<Size>>,
    period: Option<Spanned<Time>>,
    rotation: Option<Spanned<String>>,
    rate: Option<Spanned<Rate>>,
    bucket: Option<Spanned<Size>>,
}

/// The key path of key `k` of node `i`.
fn key(i: usize, k: &str) -> String {
    format!("node[{i}].{k}")
}

/// Calendar-queue parameters of node `i` (validated against the discipline by
/// `TreeSpec::validate`; only their syntax and units are checked here).
fn calendar_params(
    index: &KeyIndex,
    n: &NodeFile,
    i: usize,
) -> Result<CalendarParams, PolicyError> {
    let mut p = CalendarParams::default();
    if let Some(d) = &n.days {
        let bad = || {
            at(
                index,
                d,
                &key(i, "days"),
                "days is a whole number of days (`days = 1024`) or one per level, finest first (`days = [16, 8, 8]`)",
            )
        };
        let level = |v: &toml::Value| v.as_integer().filter(|&x| x > 0).map(|x| x as usize);
        p.days = Some(match d.get_ref() {
            toml::Value::Integer(_) => vec![level(d.get_ref()).ok_or_else(bad)?],
            toml::Value::Array(levels) => levels
                .iter()
                .map(level)
                .collect::<Option<Vec<_>>>()
                .ok_or_else(bad)?,
            _ => return Err(bad()),
        });
    }
    if let Some(q) = &n.quantum {
        let bytes = q.get_ref().get();
        p.quantum = Some(u32::try_from(bytes).map_err(|_| {
            at(
                index,
                q,
                &key(i, "quantum"),
                format!("quantum of {bytes} bytes is above {}", u32::MAX),
            )
        })?);
    }
    p.burst_allowance = n.burst_allowance.as_ref().map(|b| b.get_ref().get());
    p.period = n.period.as_ref().map(|t| t.get_ref().duration());
    p.rate = n.rate.as_ref().map(|r| r.get_ref().rate());
    p.bucket = n.bucket.as_ref().map(|b| b.get_ref().get());
    if let Some(r) = &n.rotation {
        p.rotation = Some(match r.get_ref().as_str() {
            "clock" => EdfRotation::Clock,
            "on-empty" => EdfRotation::OnEmpty,
            other => {
                return Err(at(
                    index,
                    r,
                    &key(i, "rotation"),
                    format!("unknown rotation `{other}` (expected \"clock\" or \"on-empty\")"),
                ))
            }
        });
    }
    Ok(p)
}

/// A compiled policy file.
pub(crate) struct Compiled {
    pub spec: TreeSpec,
    pub classify: ClassifySpec,
    pub rules: RuleSet,
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

fn at<T>(index: &KeyIndex, v: &Spanned<T>, key: &str, msg: impl Into<String>) -> PolicyError {
    index.error(v.span().start, key, msg)
}

fn discipline_names() -> String {
    let mut names: Vec<&str> = Discipline::ALL.iter().map(|d| d.name()).collect();
    names.push("stfq");
    names.join(", ")
}

fn queue_names() -> String {
    let mut names: Vec<&str> = QueueKind::ALL.iter().map(|k| k.name()).collect();
    names.insert(0, "auto");
    names.join(", ")
}

pub(crate) fn compile(index: &KeyIndex, text: &str) -> Result<Compiled, PolicyError> {
    let file: PolicyFile = toml::from_str(text).map_err(|e| index.toml_error(&e))?;
    let mut spec = TreeSpec::new(DEFAULT_CAPACITY);
    if let Some(c) = &file.capacity {
        spec.capacity = int_in(
            index,
            c,
            "capacity",
            1,
            i64::from(u32::MAX),
            "capacity (packets)",
        )? as u32;
    }
    if let Some(m) = &file.mtu {
        let mtu = m.get_ref().get();
        if !(1..=u64::from(u16::MAX)).contains(&mtu) {
            return Err(at(
                index,
                m,
                "mtu",
                format!("mtu must be 1 B..=65535 B, got {mtu} B"),
            ));
        }
        spec.mtu = mtu as u32;
    }
    if let Some(s) = &file.shaper {
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
            return Err(index.at_key(
                key,
                format!(
                    "a horizon of {} ns cannot hold {} slots (at least 1 ns each)",
                    spec.shaper.horizon.as_nanos(),
                    spec.shaper.slots
                ),
            ));
        }
    }
    if file.node.is_empty() {
        return Err(index.error(0, "node", "a policy needs at least one [[node]]"));
    }
    let nodes = &file.node;

    // Names: present, unique.
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
    // Parents: known, one root, no cycles.
    let mut parent = vec![None; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if let Some(p) = &n.parent {
            let Some(&j) = by_name.get(p.get_ref().as_str()) else {
                return Err(at(
                    index,
                    p,
                    &key(i, "parent"),
                    format!("no node is called `{}`", p.get_ref()),
                ));
            };
            if j == i {
                return Err(at(
                    index,
                    p,
                    &key(i, "parent"),
                    "a node cannot be its own parent",
                ));
            }
            parent[i] = Some(j);
        }
    }
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
    for i in 0..nodes.len() {
        let mut cur = parent[i];
        let mut steps = 0;
        while let Some(p) = cur {
            steps += 1;
            if steps > nodes.len() {
                let p = nodes[i].parent.as_ref().expect("has a parent");
                return Err(at(
                    index,
                    p,
                    &key(i, "parent"),
                    format!(
                        "node `{}` is its own ancestor (the parents form a cycle)",
                        nodes[i].name.get_ref()
                    ),
                ));
            }
            cur = parent[p];
        }
    }
    let mut children = vec![0usize; nodes.len()];
    for p in parent.iter().flatten() {
        children[*p] += 1;
    }

    // Every node's settings.
    let mut disciplines = Vec::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        let d = match &n.discipline {
            None => Discipline::Fifo,
            Some(s) => Discipline::from_name(s.get_ref()).ok_or_else(|| {
                at(
                    index,
                    s,
                    &key(i, "discipline"),
                    format!(
                        "unknown discipline `{}` (expected one of {})",
                        s.get_ref(),
                        discipline_names()
                    ),
                )
            })?,
        };
        disciplines.push(d);
    }
    for (i, n) in nodes.iter().enumerate() {
        let name = n.name.get_ref();
        let mut ns = NodeSpec::new(name.clone(), parent[i]);
        let d = disciplines[i];
        ns.discipline = d;
        let is_leaf = children[i] == 0;
        let per_flow = n.flows.is_some();
        if is_leaf && !per_flow && d != Discipline::Fifo {
            let s = n
                .discipline
                .as_ref()
                .expect("non-default discipline was given");
            return Err(at(
                index,
                s,
                &key(i, "discipline"),
                format!(
                    "node `{name}` has no children: `{}` orders children (or the flows of a per-flow leaf: add `flows = N`)",
                    d.name()
                ),
            ));
        }
        if !is_leaf && d == Discipline::Pfabric {
            let s = n.discipline.as_ref().expect("pfabric was given");
            return Err(at(index, s, &key(i, "discipline"), "pfabric ranks flows by their remaining packets: use it on a per-flow leaf (`flows = N`, no children)"));
        }
        let parent_d = parent[i].map(|p| disciplines[p]);
        if let Some(w) = &n.weight {
            ns.weight = int_in(
                index,
                w,
                &key(i, "weight"),
                1,
                i64::from(MAX_WEIGHT),
                "weight",
            )? as u32;
        }
        if let Some(p) = &n.priority {
            ns.priority = int_in(
                index,
                p,
                &key(i, "priority"),
                0,
                63,
                "priority (0 is served first)",
            )? as u32;
        }
        if let Some(r) = &n.reservation {
            if parent_d != Some(Discipline::Hclock) {
                return Err(at(
                    index,
                    r,
                    &key(i, "reservation"),
                    "a reservation is honoured by an hclock parent only",
                ));
            }
            if r.get_ref().get() == 0 {
                return Err(at(
                    index,
                    r,
                    &key(i, "reservation"),
                    "a reservation must be positive",
                ));
            }
            ns.reservation = Some(r.get_ref().rate());
        }
        ns.limit = limit(
            index,
            &n.limit,
            &n.burst,
            &key(i, "limit"),
            &key(i, "burst"),
            spec.mtu,
        )?;
        if let Some(c) = &n.capacity {
            if !is_leaf {
                return Err(at(
                    index,
                    c,
                    &key(i, "capacity"),
                    "capacity (packets queued) applies to leaves",
                ));
            }
            ns.capacity = Some(int_in(
                index,
                c,
                &key(i, "capacity"),
                1,
                i64::from(u32::MAX),
                "capacity (packets)",
            )? as u32);
        }
        // Queue choice: only nodes that rank units have one.
        let ranks = !is_leaf || per_flow;
        let queue_keys = [
            ("queue", n.queue.as_ref().map(|s| s.span())),
            ("granularity", n.granularity.as_ref().map(|s| s.span())),
            ("buckets", n.buckets.as_ref().map(|s| s.span())),
            ("occupancy", n.occupancy.as_ref().map(|s| s.span())),
        ];
        for (k, span) in queue_keys {
            if let Some(span) = span {
                if !ranks {
                    return Err(index.error(
                        span.start,
                        &key(i, k),
                        format!(
                            "node `{name}` is a FIFO leaf: it has no priority queue to configure"
                        ),
                    ));
                }
                if !d.is_ranked() {
                    return Err(index.error(
                        span.start,
                        &key(i, k),
                        format!(
                            "`{}` is a fair-queueing core without a configurable priority queue",
                            d.name()
                        ),
                    ));
                }
            }
        }
        let mut q = QueueChoice::AUTO;
        if let Some(s) = &n.queue {
            if s.get_ref() != "auto" {
                q.kind = Some(s.get_ref().parse::<QueueKind>().map_err(|_| {
                    at(
                        index,
                        s,
                        &key(i, "queue"),
                        format!(
                            "unknown queue type `{}` (expected one of {})",
                            s.get_ref(),
                            queue_names()
                        ),
                    )
                })?);
            }
        }
        if let Some(g) = &n.granularity {
            q.granularity = Some(int_in(
                index,
                g,
                &key(i, "granularity"),
                1,
                i64::MAX,
                "granularity (ranks per bucket)",
            )? as u64);
        }
        if let Some(b) = &n.buckets {
            q.buckets = Some(int_in(index, b, &key(i, "buckets"), 1, 1 << 26, "buckets")? as usize);
        }
        if let Some(o) = &n.occupancy {
            let v = *o.get_ref();
            if !(v > 0.0 && v <= 1.0) {
                return Err(at(
                    index,
                    o,
                    &key(i, "occupancy"),
                    format!("occupancy is a fraction in (0, 1], got {v}"),
                ));
            }
            q.occupancy = Some(v);
        }
        ns.queue = q;
        // Per-flow leaves.
        let flow_keys = [
            ("flow_limit", n.flow_limit.as_ref().map(|s| s.span())),
            ("flow_burst", n.flow_burst.as_ref().map(|s| s.span())),
            ("flow_queue", n.flow_queue.as_ref().map(|s| s.span())),
        ];
        match &n.flows {
            None => {
                for (k, span) in flow_keys {
                    if let Some(span) = span {
                        return Err(index.error(
                            span.start,
                            &key(i, k),
                            "per-flow settings need `flows = N` (a per-flow leaf)",
                        ));
                    }
                }
            }
            Some(f) => {
                if !is_leaf {
                    return Err(at(
                        index,
                        f,
                        &key(i, "flows"),
                        format!("node `{name}` has children: per-flow settings belong on a leaf"),
                    ));
                }
                let max_flows = int_in(index, f, &key(i, "flows"), 1, 1 << 24, "flows")? as u32;
                let flow_limit = limit(
                    index,
                    &n.flow_limit,
                    &n.flow_burst,
                    &key(i, "flow_limit"),
                    &key(i, "flow_burst"),
                    spec.mtu,
                )?;
                let flow_queue_limit = match &n.flow_queue {
                    Some(v) => Some(int_in(
                        index,
                        v,
                        &key(i, "flow_queue"),
                        1,
                        i64::from(u32::MAX),
                        "flow_queue (packets)",
                    )? as u32),
                    None => None,
                };
                ns.per_flow = Some(PerFlow {
                    max_flows,
                    flow_limit,
                    flow_queue_limit,
                });
            }
        }
        ns.calendar = calendar_params(index, n, i)?;
        spec.add(ns);
    }
    spec.validate()
        .map_err(|e| config_error(index, &spec, &e))?;
    PolicyTree::new(spec.clone()).map_err(|e| config_error(index, &spec, &e))?;

    let (classify, rules) = classify::compile(index, file.classify, &spec)?;
    Ok(Compiled {
        spec,
        classify,
        rules,
    })
}

/// A rate limit from a `limit`/`burst` (or `flow_limit`/`flow_burst`) pair.
fn limit(
    index: &KeyIndex,
    rate: &Option<Spanned<Rate>>,
    burst: &Option<Spanned<Size>>,
    rate_key: &str,
    burst_key: &str,
    mtu: u32,
) -> Result<Option<RateLimit>, PolicyError> {
    match (rate, burst) {
        (None, None) => Ok(None),
        (None, Some(b)) => Err(at(
            index,
            b,
            burst_key,
            format!(
                "a burst needs a rate: set `{}` too",
                rate_key.rsplit('.').next().unwrap_or(rate_key)
            ),
        )),
        (Some(r), b) => {
            if r.get_ref().get() == 0 {
                return Err(at(
                    index,
                    r,
                    rate_key,
                    "a limit of 0 bit/s would never send: remove the limit or make it positive",
                ));
            }
            let burst = match b {
                Some(b) => {
                    let v = b.get_ref().get();
                    if v < u64::from(mtu) {
                        return Err(at(index, b, burst_key, format!("a burst of {v} B is smaller than the {mtu} B mtu: a full-size packet could never pass")));
                    }
                    v
                }
                None => u64::from(mtu),
            };
            Ok(Some(RateLimit {
                rate: r.get_ref().rate(),
                burst,
            }))
        }
    }
}

/// Maps a tree construction error to the node it names (or the file's start).
fn config_error(index: &KeyIndex, spec: &TreeSpec, e: &ConfigError) -> PolicyError {
    let msg = e.to_string();
    let node = spec
        .nodes
        .iter()
        .position(|n| msg.contains(&format!("{:?}", n.name)));
    // A message that names one of the node's keys in backquotes points at that key.
    let named_key = node.and_then(|i| {
        msg.split('`')
            .skip(1)
            .step_by(2)
            .map(|k| key(i, k))
            .find(|k| index.span_of(k).is_some())
    });
    match (node, named_key) {
        (Some(_), Some(k)) => index.at_key(&k, msg),
        (Some(i), None) => index.at_key(&format!("node[{i}].name"), msg),
        (None, _) if msg.starts_with("shaper") => index.at_key("shaper", msg),
        (None, _) => index.error(0, "node", msg),
    }
}
