//! The `[classify]` section of a policy file: which packets go to which leaf, and
//! the flow table that remembers it for live traffic.
//!
//! ```toml
//! [classify]
//! default = "best_effort"     # leaf for every packet no rule matches
//! max_flows = 65536           # flow-table capacity (default: see below)
//! idle_timeout = "30s"        # a flow idle this long expires (default 30 s)
//! malformed = "forward"       # or "drop" (default "forward")
//!
//! [[classify.rule]]           # rules are tried in file order; the first match wins
//! leaf = "voice"
//! protocol = "udp"
//! dscp = ["ef", 40]
//! ```
//!
//! Live packets can also carry ranks for rank-based disciplines
//! ([`eiffel_classify::annotate`]):
//!
//! ```toml
//! [classify]
//! default = "flows"
//! rank = "dscp"               # rank = 63 - DSCP
//! remaining = "attained"      # bytes the flow has sent (LAS); or "levels" with
//!                             # thresholds = ["10KB", "1MB"] (PIAS)
//! [classify.deadline]         # deadline = arrival + budget
//! udp_offset = 0              # a 32-bit budget at this UDP payload offset (or
//! unit = "1us"                # ipv4_option = TYPE), in this unit
//! budget = "20ms"             # otherwise this budget ...
//! [classify.deadline.leaf]
//! voice = "2ms"               # ... or the leaf's own
//! ```
//!
//! The conditions of a rule are [`eiffel_classify::RuleSpec`]'s (header fields for
//! live traffic, `flow` and `class` ids for simulated workloads); `default` is
//! required when the policy has more than one leaf.
//!
//! # The flow table and per-flow leaves
//! Live flow ids are flow-table slots, `0..max_flows`, and a per-flow leaf keeps
//! one FIFO per flow id: a leaf with fewer flows than the table would drop every
//! flow beyond its range. The compiler therefore refuses a `max_flows` above any
//! per-flow leaf's `flows`, and without `max_flows` sizes the table to 65,536 or
//! the smallest per-flow leaf, whichever is less.

pub use eiffel_classify::{ClassifyError, ClassifySpec};
use std::collections::{BTreeMap, HashMap, HashSet};

use eiffel_classify::{
    AnnotateError, AnnotateSpec, DeadlineField, DeadlineSpec, FlowTableConfig, MalformedAction,
    RankFrom, RemainingFrom, RuleError, RuleSet, RuleSpec,
};
use eiffel_sched::tree::TreeSpec;
use eiffel_sched::{ClassId, Duration};
use serde::Deserialize;
use toml::Spanned;

use crate::error::{KeyIndex, PolicyError};
use crate::units::{Size, Time};

/// Flow-table capacity when neither `max_flows` nor a per-flow leaf says less.
pub const DEFAULT_MAX_FLOWS: u32 = 65_536;

/// Flow idle timeout when `idle_timeout` is not given.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// Largest `max_flows` accepted.
pub const MAX_FLOWS: u32 = eiffel_classify::FlowTable::MAX_FLOWS;

/// The `[classify]` section as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClassifyFile {
    default: Spanned<String>,
    max_flows: Option<Spanned<i64>>,
    idle_timeout: Option<Spanned<Time>>,
    #[serde(default)]
    malformed: MalformedAction,
    #[serde(default, rename = "rule")]
    rules: Vec<RuleSpec>,
    #[serde(default)]
    rank: RankFile,
    #[serde(default)]
    remaining: RemainingFile,
    thresholds: Option<Spanned<Vec<Size>>>,
    deadline: Option<DeadlineFile>,
}

/// `rank = ...`: where a live packet's rank comes from.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RankFile {
    #[default]
    None,
    Dscp,
}

/// `remaining = ...`: where a live packet's remaining size comes from.
#[derive(Clone, Copy, Debug, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum RemainingFile {
    #[default]
    None,
    Attained,
    Levels,
}

/// The `[classify.deadline]` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeadlineFile {
    budget: Option<Time>,
    udp_offset: Option<Spanned<i64>>,
    ipv4_option: Option<Spanned<i64>>,
    unit: Option<Time>,
    #[serde(default)]
    leaf: BTreeMap<String, Time>,
}

/// The rank annotations of the section, checked.
fn annotate_spec(index: &KeyIndex, f: &ClassifyFile) -> Result<AnnotateSpec, PolicyError> {
    let rank = match f.rank {
        RankFile::None => RankFrom::None,
        RankFile::Dscp => RankFrom::Dscp,
    };
    let remaining = match (f.remaining, &f.thresholds) {
        (RemainingFile::None, None) => RemainingFrom::None,
        (RemainingFile::Attained, None) => RemainingFrom::Attained,
        (RemainingFile::Levels, Some(t)) => {
            let bytes: Vec<u64> = t.get_ref().iter().map(|s| s.get()).collect();
            if bytes.is_empty() || bytes[0] == 0 || bytes.windows(2).any(|w| w[0] >= w[1]) {
                return Err(index.at_key(
                    "classify.thresholds",
                    "thresholds must be positive sizes in increasing order, e.g. [\"10KB\", \"1MB\"]",
                ));
            }
            RemainingFrom::Levels(bytes)
        }
        (RemainingFile::Levels, None) => {
            return Err(index.at_key(
                "classify.remaining",
                "`remaining = \"levels\"` needs `thresholds = [\"10KB\", ...]` (PIAS levels)",
            ))
        }
        (_, Some(_)) => {
            return Err(index.at_key(
                "classify.thresholds",
                "thresholds apply to `remaining = \"levels\"` only",
            ))
        }
    };
    let deadline = f
        .deadline
        .as_ref()
        .map(|d| deadline_spec(index, d))
        .transpose()?;
    Ok(AnnotateSpec {
        rank,
        deadline,
        remaining,
    })
}

/// The `[classify.deadline]` table, checked.
fn deadline_spec(index: &KeyIndex, d: &DeadlineFile) -> Result<DeadlineSpec, PolicyError> {
    let field = match (&d.udp_offset, &d.ipv4_option) {
        (Some(_), Some(_)) => {
            return Err(index.at_key(
                "classify.deadline",
                "give the deadline field as `udp_offset` or `ipv4_option`, not both",
            ))
        }
        (Some(o), None) => Some(DeadlineField::UdpPayload {
            offset: index.int_in(o, "classify.deadline.udp_offset", 0, 65_531, None)? as u16,
        }),
        (None, Some(k)) => Some(DeadlineField::Ipv4Option {
            kind: index.int_in(
                k,
                "classify.deadline.ipv4_option",
                2,
                255,
                Some("option type"),
            )? as u8,
        }),
        (None, None) => None,
    };
    if field.is_none() && d.budget.is_none() && d.leaf.is_empty() {
        return Err(index.at_key(
            "classify.deadline",
            "a deadline needs a source: a header field (`udp_offset` or `ipv4_option`), a `budget`, or per-leaf budgets under [classify.deadline.leaf]",
        ));
    }
    if field.is_none() && d.unit.is_some() {
        return Err(index.at_key(
            "classify.deadline.unit",
            "`unit` is the unit of a header field: give `udp_offset` or `ipv4_option`",
        ));
    }
    let unit = d.unit.map_or(Duration::from_micros(1), |u| u.duration());
    if unit.is_zero() {
        return Err(index.at_key("classify.deadline.unit", "the unit must be positive"));
    }
    Ok(DeadlineSpec {
        field,
        unit,
        budget: d.budget.map(|b| b.duration()),
        class_budgets: d
            .leaf
            .iter()
            .map(|(k, v)| (k.clone(), v.duration()))
            .collect(),
    })
}

/// The flow-table capacity: `max_flows` if given (at most every per-flow leaf's
/// `flows`), else the default capped by the smallest per-flow leaf.
fn max_flows(
    index: &KeyIndex,
    written: Option<&Spanned<i64>>,
    spec: &TreeSpec,
) -> Result<u32, PolicyError> {
    let per_flow = spec
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| n.per_flow.map(|pf| (i, pf.max_flows)));
    let Some(w) = written else {
        let smallest = per_flow.map(|(_, f)| f).min();
        return Ok(smallest.map_or(DEFAULT_MAX_FLOWS, |f| f.min(DEFAULT_MAX_FLOWS)));
    };
    let table = index.int_in(
        w,
        "classify.max_flows",
        1,
        i64::from(MAX_FLOWS),
        Some("max_flows"),
    )? as u32;
    for (i, flows) in per_flow {
        if flows < table {
            let name = &spec.nodes[i].name;
            return Err(index.at_key(
                &format!("node[{i}].flows"),
                format!(
                    "per-flow leaf `{name}` holds {flows} flows but the flow table (`classify.max_flows`) holds {table}: live flow ids go up to the table's size, so give the leaf `flows = {table}` or lower `max_flows`"
                ),
            ));
        }
    }
    Ok(table)
}

/// Refuses a `[classify]` section with more rules than the classifier holds,
/// before anything is compiled: a file-wide bound, checked first like the
/// tree's depth (a file may hold 100,000 rules).
pub(crate) fn check_rule_count(
    index: &KeyIndex,
    file: Option<&ClassifyFile>,
) -> Result<(), PolicyError> {
    let count = file.map_or(0, |f| f.rules.len());
    too_many_rules(count).map_or(Ok(()), |msg| Err(index.at_key("classify", msg)))
}

/// [`check_rule_count`] on the parsed document, before its keys are indexed
/// and its rules deserialized one by one (a file of 100,000 rules is refused
/// in the time it takes to parse it).
pub(crate) fn check_rule_count_in(
    index: &KeyIndex,
    doc: &toml_edit::Table,
) -> Result<(), PolicyError> {
    let Some(classify) = doc.get("classify") else {
        return Ok(());
    };
    let count = match classify.get("rule") {
        Some(toml_edit::Item::ArrayOfTables(a)) => a.len(),
        Some(toml_edit::Item::Value(toml_edit::Value::Array(a))) => a.len(),
        _ => 0,
    };
    let Some(msg) = too_many_rules(count) else {
        return Ok(());
    };
    // Where `KeyIndex::at_key("classify")` points: the table, or its key.
    let at = match classify {
        toml_edit::Item::Table(t) => t.span(),
        toml_edit::Item::Value(v) => v.span(),
        _ => None,
    }
    .or_else(|| doc.key("classify").and_then(toml_edit::Key::span))
    .map_or(0, |s| s.start);
    Err(index.error(at, "classify", msg))
}

/// The message refusing `count` rules, if that is more than the classifier holds.
fn too_many_rules(count: usize) -> Option<String> {
    (count > RuleSet::MAX_RULES).then(|| {
        RuleError::TooManyRules {
            count,
            max: RuleSet::MAX_RULES,
        }
        .to_string()
    })
}

/// Why a name is not a leaf, for messages.
fn hint_leaf(spec: &TreeSpec, name: &str) -> &'static str {
    match spec.find(name) {
        Some(_) => " (it has children: packets enter at leaves)",
        None => "",
    }
}

/// A rule compilation error at the key it concerns.
fn rule_error(index: &KeyIndex, spec: &TreeSpec, e: &RuleError) -> PolicyError {
    let (path, msg) = match e {
        RuleError::UnknownDefault { leaf } => (
            "classify.default".to_string(),
            format!(
                "`{leaf}` is not a leaf of the policy{}",
                hint_leaf(spec, leaf)
            ),
        ),
        RuleError::UnknownLeaf { rule, leaf } => (
            format!("classify.rule[{}].leaf", rule - 1),
            format!(
                "`{leaf}` is not a leaf of the policy{}",
                hint_leaf(spec, leaf)
            ),
        ),
        RuleError::PortsWithoutTransport { rule, .. } | RuleError::MixedConditions { rule, .. } => {
            (format!("classify.rule[{}]", rule - 1), e.to_string())
        }
        _ => ("classify".to_string(), e.to_string()),
    };
    index.at_key(&path, msg)
}

/// An annotation compilation error at the key it concerns.
fn annotate_error(index: &KeyIndex, spec: &TreeSpec, e: AnnotateError) -> PolicyError {
    match e {
        AnnotateError::UnknownLeaf { leaf } => index.at_key(
            &format!("classify.deadline.leaf.{leaf}"),
            format!(
                "`{leaf}` is not a leaf of the policy{}",
                hint_leaf(spec, &leaf)
            ),
        ),
        other => index.at_key("classify", other.to_string()),
    }
}

/// The section as written, its flow table of `table` flows and a positive idle
/// timeout; without one, the section that sends every packet to the only leaf,
/// refused when `leaves` holds more than one.
fn section_spec(
    index: &KeyIndex,
    file: Option<ClassifyFile>,
    spec: &TreeSpec,
    leaves: &[usize],
    table: u32,
) -> Result<ClassifySpec, PolicyError> {
    let classify = match file {
        Some(f) => ClassifySpec {
            annotate: annotate_spec(index, &f)?,
            default: f.default.into_inner(),
            flow_table: FlowTableConfig {
                max_flows: table,
                idle_timeout: f
                    .idle_timeout
                    .map_or(DEFAULT_IDLE_TIMEOUT, |t| t.get_ref().duration()),
            },
            malformed: f.malformed,
            rules: f.rules,
        },
        None if leaves.len() == 1 => ClassifySpec {
            default: spec.nodes[leaves[0]].name.clone(),
            flow_table: FlowTableConfig {
                max_flows: table,
                idle_timeout: DEFAULT_IDLE_TIMEOUT,
            },
            malformed: MalformedAction::default(),
            rules: Vec::new(),
            annotate: AnnotateSpec::default(),
        },
        None => {
            return Err(index.error(0, "classify", format!(
                "the policy has {} leaves: a [classify] section must say which packets go to which (`default = \"leaf\"` and [[classify.rule]]s)",
                leaves.len()
            )))
        }
    };
    if classify.flow_table.idle_timeout.is_zero() {
        return Err(index.at_key(
            "classify.idle_timeout",
            "a flow cannot expire after no time: give a positive `idle_timeout`",
        ));
    }
    Ok(classify)
}

/// Refuses a leaf that is neither the default nor the leaf of any rule of
/// `classify`: no packet could enter it.
fn check_reached(
    index: &KeyIndex,
    spec: &TreeSpec,
    leaves: &[usize],
    classify: &ClassifySpec,
) -> Result<(), PolicyError> {
    let reached: HashSet<&str> = classify.rules.iter().map(|r| r.leaf.as_str()).collect();
    for &l in leaves {
        let name = &spec.nodes[l].name;
        if *name != classify.default && !reached.contains(name.as_str()) {
            return Err(index.at_key(
                &format!("node[{l}].name"),
                format!("leaf `{name}` is reached by no classification rule and is not the default: no packet could ever enter it"),
            ));
        }
    }
    Ok(())
}

/// Compiles the `[classify]` section against the validated tree `spec`: the
/// section (or a default-only one for a single leaf), its rules, and the checks
/// that every leaf is reachable and every per-flow leaf covers the flow table.
pub(crate) fn compile(
    index: &KeyIndex,
    file: Option<ClassifyFile>,
    spec: &TreeSpec,
) -> Result<(ClassifySpec, RuleSet), PolicyError> {
    let kids = spec.child_lists();
    let leaves: Vec<usize> = (0..spec.nodes.len())
        .filter(|&i| kids[i].is_empty())
        .collect();
    let table = max_flows(
        index,
        file.as_ref().and_then(|f| f.max_flows.as_ref()),
        spec,
    )?;
    let classify = section_spec(index, file, spec, &leaves, table)?;
    // Names are looked up in maps built once: a file may hold 100,000 nodes
    // and 4,096 rules.
    let ids: HashMap<&str, usize> = (spec.nodes.iter().enumerate())
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let resolve = |name: &str| {
        ids.get(name)
            .filter(|&&i| kids[i].is_empty())
            .map(|&i| i as ClassId)
    };
    let rules = RuleSet::compile(&classify.rules, &classify.default, resolve)
        .map_err(|e| rule_error(index, spec, &e))?;
    check_reached(index, spec, &leaves, &classify)?;
    classify
        .annotate
        .compile(classify.flow_table.max_flows, resolve)
        .map_err(|e| annotate_error(index, spec, e))?;
    Ok((classify, rules))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Policy;

    /// Four FIFO leaves `l0`..`l3` under a root, and `classify` as the section.
    fn policy(classify: &str) -> Result<Policy, PolicyError> {
        let mut text = String::from("[[node]]\nname = \"root\"\ndiscipline = \"strict\"\n");
        for i in 0..4 {
            text += &format!("[[node]]\nname = \"l{i}\"\nparent = \"root\"\npriority = {i}\n");
        }
        text += "[classify]\n";
        text += classify;
        text += "\n[[classify.rule]]\nleaf = \"l1\"\nclass = 1\n[[classify.rule]]\nleaf = \"l2\"\nclass = 2\n[[classify.rule]]\nleaf = \"l3\"\nclass = 3\n";
        Policy::parse(&text, "c.toml")
    }

    #[test]
    fn documented_settings_apply() {
        let p = policy(
            "default = \"l0\"\nmax_flows = 1024\nidle_timeout = \"500ms\"\nmalformed = \"drop\"",
        )
        .unwrap();
        let s = p.classify_spec();
        assert_eq!(s.flow_table.max_flows, 1024);
        assert_eq!(s.flow_table.idle_timeout, Duration::from_millis(500));
        assert_eq!(s.malformed, MalformedAction::Drop);
        assert_eq!(s.rules.len(), 3);
        let c = p.classifier().unwrap();
        assert_eq!(c.rules().len(), 3);
        assert_eq!(c.flows().capacity(), 1024);
    }

    #[test]
    fn ranks_from_packets() {
        let p = policy(
            "default = \"l0\"\nrank = \"dscp\"\nremaining = \"levels\"\nthresholds = [\"10KB\", \"1MB\"]\n[classify.deadline]\nbudget = \"10ms\"\nudp_offset = 4\nunit = \"1us\"\n[classify.deadline.leaf]\nl2 = \"2ms\"",
        )
        .unwrap();
        let a = &p.classify_spec().annotate;
        assert_eq!(a.rank, RankFrom::Dscp);
        assert_eq!(a.remaining, RemainingFrom::Levels(vec![10_000, 1_000_000]));
        let d = a.deadline.as_ref().unwrap();
        assert_eq!(d.field, Some(DeadlineField::UdpPayload { offset: 4 }));
        assert_eq!(d.budget, Some(Duration::from_millis(10)));
        assert_eq!(
            d.class_budgets,
            [("l2".to_string(), Duration::from_millis(2))]
        );
        let p = policy("default = \"l0\"\nremaining = \"attained\"").unwrap();
        assert_eq!(
            p.classify_spec().annotate.remaining,
            RemainingFrom::Attained
        );
        assert!(policy("default = \"l0\"")
            .unwrap()
            .classify_spec()
            .annotate
            .is_empty());
    }

    #[test]
    fn rank_mistakes_name_their_key() {
        let cases = [
            ("rank = \"tos\"", "classify.rank"),
            ("remaining = \"levels\"", "classify.remaining"),
            ("thresholds = [\"1KB\"]", "classify.thresholds"),
            (
                "remaining = \"levels\"\nthresholds = [\"2KB\", \"1KB\"]",
                "classify.thresholds",
            ),
            (
                "[classify.deadline]\nunit = \"1us\"\nbudget = \"1ms\"",
                "classify.deadline.unit",
            ),
            ("[classify.deadline]", "classify.deadline"),
            (
                "[classify.deadline]\nudp_offset = 1\nipv4_option = 30",
                "classify.deadline",
            ),
            (
                "[classify.deadline]\nipv4_option = 1",
                "classify.deadline.ipv4_option",
            ),
            (
                "[classify.deadline]\nudp_offset = -1",
                "classify.deadline.udp_offset",
            ),
            (
                "[classify.deadline.leaf]\nroot = \"1ms\"",
                "classify.deadline.leaf.root",
            ),
        ];
        for (text, key) in cases {
            let err = policy(&format!("default = \"l0\"\n{text}")).unwrap_err();
            assert!(
                err.key() == Some(key) || err.to_string().contains(key.rsplit('.').next().unwrap()),
                "{text}: {err}"
            );
            assert!(err.line().is_some(), "{text}: {err}");
        }
    }

    #[test]
    fn defaults_apply() {
        let p = policy("default = \"l0\"").unwrap();
        let s = p.classify_spec();
        assert_eq!(s.flow_table.max_flows, 65_536);
        assert_eq!(s.flow_table.idle_timeout, Duration::from_secs(30));
        assert_eq!(s.malformed, MalformedAction::Forward);
    }

    #[test]
    fn durations_follow_the_one_grammar() {
        let err = policy("default = \"l0\"\nidle_timeout = \"30\"").unwrap_err();
        assert!(err.to_string().contains("needs a unit"), "{err}");
        let err = policy("default = \"l0\"\nidle_timeout = \"3h\"").unwrap_err();
        assert!(
            err.to_string().contains("unknown duration unit `h`"),
            "{err}"
        );
        let p = policy("default = \"l0\"\nidle_timeout = \"2m\"").unwrap();
        assert_eq!(
            p.classify_spec().flow_table.idle_timeout,
            Duration::from_secs(120)
        );
        let p = policy("default = \"l0\"\nidle_timeout = \"1.5s\"").unwrap();
        assert_eq!(
            p.classify_spec().flow_table.idle_timeout,
            Duration::from_millis(1500)
        );
    }

    #[test]
    fn table_sizes_are_checked() {
        let err = policy("default = \"l0\"\nmax_flows = 0").unwrap_err();
        assert_eq!(err.key(), Some("classify.max_flows"), "{err}");
        let mut s = policy("default = \"l0\"").unwrap().classify_spec().clone();
        s.flow_table.max_flows = 0;
        let leaves = ["l0", "l1", "l2", "l3"];
        let resolve = |n: &str| leaves.iter().position(|l| *l == n).map(|i| i as ClassId);
        assert!(matches!(
            s.classifier(resolve),
            Err(ClassifyError::Config(_))
        ));
    }

    fn per_flow(leaf_flows: u32, table: Option<u32>) -> Result<Policy, PolicyError> {
        let table = table.map_or(String::new(), |t| format!("max_flows = {t}\n"));
        let text = format!(
            "[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n[[node]]\nname = \"flows\"\nparent = \"root\"\ndiscipline = \"wfq\"\nflows = {leaf_flows}\n[classify]\ndefault = \"flows\"\n{table}"
        );
        Policy::parse(&text, "p.toml")
    }

    #[test]
    fn per_flow_leaves_cover_the_flow_table() {
        assert!(per_flow(1024, Some(1024)).is_ok());
        let err = per_flow(1024, Some(65536)).unwrap_err();
        let err = err.to_string();
        assert!(
            err.contains("p.toml")
                && err.contains("`flows`")
                && err.contains("flows = 65536")
                && err.contains("max_flows"),
            "{err}"
        );
        // Without `max_flows`, the table is as large as the smallest leaf allows.
        let p = per_flow(1024, None).unwrap();
        assert_eq!(p.classify_spec().flow_table.max_flows, 1024);
        let p = per_flow(1 << 20, None).unwrap();
        assert_eq!(p.classify_spec().flow_table.max_flows, DEFAULT_MAX_FLOWS);
    }
}
