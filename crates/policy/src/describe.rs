//! The compiled form of a policy as `eiffel check` prints it: the tree, indented,
//! with each node's discipline, its settings at its parent, its limits, its
//! per-flow settings and the priority queue chosen for it (with the Eiffel Fig. 16
//! branch that chose it); the shaper's geometry and precision; and the rules.

use std::fmt::Write as _;

use eiffel_classify::{AnnotateSpec, DeadlineField, MalformedAction, RankFrom, RemainingFrom};
use eiffel_sched::tree::{Discipline, QueuePlan, Rank, TreeSpec};
use eiffel_sched::PolicyTree;

use crate::units::{fmt_size, fmt_time};
use crate::Policy;

fn plan(p: &QueuePlan) -> String {
    let how = if p.automatic { "auto" } else { "set" };
    format!(
        "{} ({how}: {}), granularity {}, {} buckets",
        p.kind.name(),
        p.reason,
        p.config.granularity,
        p.config.buckets
    )
}

/// Units the shaper may hold: limited nodes plus the flows of paced leaves.
fn limited_units(spec: &TreeSpec) -> u64 {
    spec.nodes
        .iter()
        .map(|n| {
            u64::from(n.limit.is_some() || n.release.is_some())
                + n.per_flow
                    .filter(|pf| pf.flow_limit.is_some() || n.flow_release.is_some())
                    .map_or(0, |pf| u64::from(pf.max_flows))
        })
        .sum()
}

/// The text `eiffel check` prints for `policy` built as `tree`.
#[must_use]
pub fn describe(policy: &Policy, tree: &PolicyTree) -> String {
    let spec = policy.spec();
    let mut out = String::new();
    let kids = spec.child_lists();
    let leaves = kids.iter().filter(|k| k.is_empty()).count();
    let _ = writeln!(
        out,
        "policy {}: {} nodes, {} leaves, capacity {} packets, mtu {}",
        policy.file_name(),
        spec.nodes.len(),
        leaves,
        spec.capacity,
        fmt_size(u64::from(spec.mtu))
    );
    let _ = writeln!(out, "\ntree:");
    let root = spec.root().expect("validated");
    write_node(&mut out, policy, tree, &kids, root, 1);
    let _ = writeln!(
        out,
        "\nshaper: one timing wheel for the whole tree, {} slots over {}: precision {}; {} limited units",
        spec.shaper.slots,
        spec.shaper.horizon,
        fmt_time(tree.shaper_granularity() as f64),
        limited_units(spec)
    );
    let _ = writeln!(out, "\nrules (first match wins):");
    let cls = policy.classify_spec();
    for (i, (rule, conds)) in cls.rules.iter().zip(policy.rule_sources()).enumerate() {
        let conds: Vec<String> = conds.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        let conds = if conds.is_empty() {
            "any packet".to_string()
        } else {
            conds.join(", ")
        };
        let _ = writeln!(out, "  {}. {conds} -> {}", i + 1, rule.leaf);
    }
    let _ = writeln!(out, "  default -> {}", cls.default);
    let _ = writeln!(
        out,
        "\nlive traffic: a flow table of {} flows (idle timeout {}), malformed frames {}",
        cls.flow_table.max_flows,
        cls.flow_table.idle_timeout,
        match cls.malformed {
            MalformedAction::Forward => "forwarded to the default leaf",
            MalformedAction::Drop => "dropped",
        }
    );
    write_annotations(&mut out, &cls.annotate);
    out
}

/// The rank fields live packets get, one line each.
fn write_annotations(out: &mut String, a: &AnnotateSpec) {
    if a.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nranks from packets:");
    if a.rank == RankFrom::Dscp {
        let _ = writeln!(out, "  rank = 63 - DSCP");
    }
    if let Some(d) = &a.deadline {
        let field = match d.field {
            Some(DeadlineField::UdpPayload { offset }) => {
                format!(
                    "a 32-bit budget at UDP payload offset {offset}, in units of {}",
                    d.unit
                )
            }
            Some(DeadlineField::Ipv4Option { kind }) => {
                format!(
                    "a 32-bit budget in IPv4 option {kind}, in units of {}",
                    d.unit
                )
            }
            None => "no header field".to_string(),
        };
        let mut budgets: Vec<String> = d
            .class_budgets
            .iter()
            .map(|(l, b)| format!("{l} {b}"))
            .collect();
        if let Some(b) = d.budget {
            budgets.push(format!("others {b}"));
        }
        let _ = writeln!(
            out,
            "  deadline = arrival + {field}; otherwise the class budget ({})",
            if budgets.is_empty() {
                "none".to_string()
            } else {
                budgets.join(", ")
            }
        );
    }
    match &a.remaining {
        RemainingFrom::None => {}
        RemainingFrom::Attained => {
            let _ = writeln!(
                out,
                "  remaining = bytes the flow has sent (least attained service)"
            );
        }
        RemainingFrom::Levels(t) => {
            let t: Vec<String> = t.iter().map(|&b| fmt_size(b)).collect();
            let _ = writeln!(
                out,
                "  remaining = thresholds passed by the flow's bytes (PIAS levels at {})",
                t.join(", ")
            );
        }
    }
}

/// Where child `i` of an `ets` node with children `siblings` sits: a strict
/// level of its own, or its weight among the children sharing its priority.
fn ets_level(spec: &TreeSpec, siblings: &[usize], i: usize) -> String {
    let priority = spec.nodes[i].priority;
    let (shared, total) = siblings
        .iter()
        .map(|&s| &spec.nodes[s])
        .filter(|s| s.priority == priority)
        .fold((0, 0u64), |(k, w), s| (k + 1, w + u64::from(s.weight)));
    if shared == 1 {
        format!("priority {priority} (strict)")
    } else {
        format!(
            "priority {priority}, weight {} of {total} (drr among {shared})",
            spec.nodes[i].weight
        )
    }
}

fn write_node(
    out: &mut String,
    policy: &Policy,
    tree: &PolicyTree,
    kids: &[Vec<usize>],
    i: usize,
    depth: usize,
) {
    let spec = policy.spec();
    let view = tree.node(i);
    let n = view.spec;
    let pad = "  ".repeat(depth);
    let mut line = format!("{pad}{}", n.name);
    let kind = match (&view.discipline, view.is_leaf) {
        (None, _) => format!("leaf (id {i}), fifo"),
        (Some(d), true) => format!("per-flow leaf (id {i}), {d} over flows"),
        (Some(d), false) => d.clone(),
    };
    let _ = write!(line, ": {kind}");
    if let Some(p) = n.parent {
        match spec.nodes[p].discipline.rank() {
            None if spec.nodes[p].discipline == Discipline::Ets => {
                let _ = write!(line, ", {}", ets_level(spec, &kids[p], i));
            }
            Some(Rank::Strict) => {
                let _ = write!(line, ", priority {}", n.priority);
            }
            Some(Rank::Fifo | Rank::Edf | Rank::Lstf | Rank::Srpt | Rank::Pfabric) => {}
            Some(Rank::Wfq) | None => {
                let _ = write!(line, ", weight {}", n.weight);
            }
        }
    }
    if let Some(r) = n.reservation {
        let _ = write!(line, ", reservation {r}");
    }
    if let Some(l) = n.limit {
        let _ = write!(line, ", limit {} burst {}", l.rate, fmt_size(l.burst));
    }
    if let Some(c) = n.capacity {
        let _ = write!(line, ", capacity {c} packets");
    }
    let _ = writeln!(out, "{line}");
    if let Some(pf) = n.per_flow {
        let mut s = format!("{pad}    flows: {}", pf.max_flows);
        if let Some(l) = pf.flow_limit {
            let _ = write!(s, ", each paced at {} burst {}", l.rate, fmt_size(l.burst));
        }
        if let Some(q) = pf.flow_queue_limit {
            let _ = write!(s, ", at most {q} packets per flow");
        }
        let _ = writeln!(out, "{s}");
    }
    if let Discipline::Program { program, .. } = &n.discipline {
        let _ = writeln!(out, "{pad}    {}", program.source());
    }
    if let Some(program) = &n.flow_release {
        let _ = writeln!(out, "{pad}    release times: {}", program.source());
    }
    if let Some(program) = &n.release {
        let _ = writeln!(out, "{pad}    node release times: {}", program.source());
    }
    let names = if view.queues.len() == 2 {
        ["reservations", "shares"].as_slice()
    } else {
        ["queue"].as_slice()
    };
    for (q, name) in view.queues.iter().zip(names) {
        let _ = writeln!(out, "{pad}    {name}: {}", plan(q));
    }
    for &c in &kids[i] {
        write_node(out, policy, tree, kids, c, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::describe;
    use crate::Policy;

    /// An `ets` node's children: a level of one child is a strict priority (no
    /// weight, it has none there), the children of a shared level show their
    /// weight among the level's.
    #[test]
    fn ets_children_show_their_level_and_weights_only_where_shared() {
        let text = "[[node]]\nname = \"root\"\ndiscipline = \"ets\"\n\
            [[node]]\nname = \"voice\"\nparent = \"root\"\npriority = 1\n\
            [[node]]\nname = \"a\"\nparent = \"root\"\npriority = 3\nweight = 3\n\
            [[node]]\nname = \"b\"\nparent = \"root\"\npriority = 3\n\
            [[node]]\nname = \"s\"\nparent = \"root\"\npriority = 2\ndiscipline = \"strict\"\n\
            [[node]]\nname = \"s0\"\nparent = \"s\"\npriority = 5\n\
            [classify]\ndefault = \"b\"\n\
            [[classify.rule]]\nleaf = \"voice\"\nclass = 0\n\
            [[classify.rule]]\nleaf = \"a\"\nclass = 1\n\
            [[classify.rule]]\nleaf = \"s0\"\nclass = 2\n";
        let policy = Policy::parse(text, "ets.toml").unwrap_or_else(|e| panic!("{e}"));
        let out = describe(&policy, &policy.build());
        let line = |name: &str| {
            out.lines()
                .find(|l| l.trim_start().starts_with(&format!("{name}:")))
                .unwrap_or_else(|| panic!("no line for {name} in:\n{out}"))
                .to_string()
        };
        assert!(line("root").contains(": ets"), "{out}");
        assert!(line("voice").contains(", priority 1 (strict)"), "{out}");
        assert!(!line("voice").contains("weight"), "{out}");
        assert!(
            line("a").contains(", priority 3, weight 3 of 4 (drr among 2)"),
            "{out}"
        );
        assert!(
            line("b").contains(", priority 3, weight 1 of 4 (drr among 2)"),
            "{out}"
        );
        assert!(line("s").contains(": strict, priority 2 (strict)"), "{out}");
        // Below a `strict` child, as before.
        assert!(line("s0").contains(", priority 5"), "{out}");
    }
}
