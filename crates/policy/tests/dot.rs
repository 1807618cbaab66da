//! Policies written in DOT: `examples/policies/fig6.dot` is the same policy as
//! `fig6.toml` (the same tree, the same departures), and every mistake in a DOT
//! file is reported at its file, line, column and key.

use std::path::PathBuf;

use eiffel_policy::run::{run_with, RunOptions};
use eiffel_policy::{Limits, Policy, WorkloadFile};
use eiffel_sched::{Packet, Scheduler};
use proptest::prelude::*;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn pair() -> (Policy, Policy) {
    let dot = Policy::load(examples().join("policies/fig6.dot")).unwrap_or_else(|e| panic!("{e}"));
    let toml = Policy::load(examples().join("policies/fig6.toml")).unwrap();
    (dot, toml)
}

#[test]
fn fig6_in_dot_is_the_toml_policy() {
    let (dot, toml) = pair();
    assert_eq!(dot.spec(), toml.spec());
    assert_eq!(format!("{:?}", dot.rules()), format!("{:?}", toml.rules()));
    assert_eq!(dot.classify_spec(), toml.classify_spec());
}

#[test]
fn fig6_in_dot_runs_its_workload_as_the_toml_policy() {
    let (dot, toml) = pair();
    let w = WorkloadFile::load(examples().join("workloads/fig6.toml")).unwrap();
    let run = |p: &Policy| run_with(p, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    let (a, b) = (run(&dot), run(&toml));
    assert_eq!(a.nodes.len(), 6);
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(x.path, y.path);
        assert_eq!(x.dequeued, y.dequeued, "{}", x.path);
        assert_eq!(x.throughput_bps, y.throughput_bps, "{}", x.path);
    }
    let t = &a.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
    assert!(t.dequeued > 1_000, "the link was busy: {}", t.dequeued);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Random arrivals into every class and random dequeue times: both trees
    /// send the same packets at the same times and refuse the same ones.
    #[test]
    fn fig6_in_dot_sends_as_the_toml_policy(
        steps in prop::collection::vec((0u32..5, 64u32..=1500, 0u64..400_000, any::<bool>()), 1..800)
    ) {
        let (dot, toml) = pair();
        let (mut a, mut b) = (dot.build(), toml.build());
        let mut now = 0;
        for (i, &(class, len, wait, send)) in steps.iter().enumerate() {
            if send {
                now += wait;
                let (pa, pb) = (a.dequeue(now), b.dequeue(now));
                prop_assert_eq!(pa.map(|p| p.buffer), pb.map(|p| p.buffer));
            } else {
                let leaf = dot.classify_ids(i as u32, class);
                prop_assert_eq!(leaf, toml.classify_ids(i as u32, class));
                let p = Packet::new(i as u32, len).class(leaf).at(now).buffer(i as u32);
                let (ra, rb) = (a.enqueue(p, now), b.enqueue(p, now));
                prop_assert_eq!(ra.map_err(|d| d.reason), rb.map_err(|d| d.reason));
            }
            prop_assert_eq!(a.next_ready(now), b.next_ready(now));
        }
        a.check_invariants();
        b.check_invariants();
    }
}

/// Parses DOT `text` as `bad.dot` and checks the error's place, key and message.
#[track_caller]
fn refused(text: &str, line: usize, column: usize, key: &str, needle: &str) {
    let err = Policy::parse_dot_with(text, "bad.dot", &Limits::default())
        .expect_err("the policy should be refused");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("bad.dot:{line}:{column}: key `{key}`")),
        "wrong place or key: {msg}"
    );
    assert!(msg.contains(needle), "message lacks {needle:?}: {msg}");
}

const HEAD: &str = "digraph p {\n  root [discipline = wfq]\n";

#[test]
fn syntax_errors_name_the_place() {
    refused(
        "digraph p {\n  a -> b\n",
        3,
        1,
        "graph",
        "a statement or `}`",
    );
    refused("digraph p { a [x = ] }", 1, 20, "graph", "value");
    refused(
        "digraph p { a [limit = 10Mbit] }",
        1,
        26,
        "graph",
        "quote a value with units",
    );
    refused("policy p { }", 1, 1, "graph", "digraph");
    refused("digraph p { a } b", 1, 17, "graph", "end of the file");
    refused("digraph p { /* a", 1, 15, "graph", "`*/`");
    let deep = format!("digraph p {{ {} }}", "{".repeat(40));
    refused(&deep, 1, 44, "graph", "nest at most 32 deep");
}

#[test]
fn the_graph_must_be_a_tree() {
    refused("graph p { a -- b }", 1, 1, "graph", "`digraph`");
    refused("digraph p { a -- b }", 1, 15, "edge", "directed");
    refused(
        &format!("{HEAD}  root -> a\n  b -> a\n}}"),
        4,
        3,
        "a.parent",
        "already has the parent `root`",
    );
    refused(
        &format!("{HEAD}  root -> root\n}}"),
        3,
        3,
        "root.parent",
        "its own parent",
    );
    refused(&format!("{HEAD}  root -> a:p\n}}"), 3, 13, "a", "ports");
    refused(
        &format!("{HEAD}  root -> a [weight = 2]\n}}"),
        3,
        14,
        "weight",
        "carry no settings",
    );
    refused("digraph p { }", 1, 1, "graph", "at least one node");
    // Cycles and several roots: the policy file's checks, at the DOT edge.
    refused(
        &format!("{HEAD}  a -> b -> a\n}}"),
        3,
        8,
        "a.parent",
        "own ancestor",
    );
}

#[test]
fn settings_errors_point_into_the_dot_file() {
    // An unknown key, at its value.
    refused(
        &format!("{HEAD}  a [wieght = 2]\n  root -> a\n}}"),
        3,
        15,
        "a.wieght",
        "unknown field `wieght`",
    );
    // A weight out of range.
    refused(
        &format!("{HEAD}  a [weight = 0]\n  root -> a\n}}"),
        3,
        15,
        "a.weight",
        "weight",
    );
    // A quantity without units.
    refused(
        &format!("{HEAD}  a [limit = 7000000]\n  root -> a\n}}"),
        3,
        14,
        "a.limit",
        "no unit",
    );
    // A rank expression: at the name inside the string.
    refused(
        "digraph p {\n  f [flows = 4, state = \"{ fin = 0 }\", rank = \"max(fin, lenn)\"]\n}",
        2,
        57,
        "f.rank",
        "unknown name `lenn`",
    );
    refused(
        "digraph p {\n  f [flows = 4, state = \"{ fin = \", rank = \"fin\"]\n}",
        2,
        25,
        "f.state",
        "TOML inside a string",
    );
}

#[test]
fn graph_settings_and_rules_errors_point_into_the_dot_file() {
    // Graph settings.
    refused(
        "digraph p {\n  capacty = 5\n  a\n}",
        2,
        3,
        "graph.capacty",
        "unknown graph setting",
    );
    refused(
        "digraph p {\n  capacity = 0\n  a\n}",
        2,
        14,
        "graph.capacity",
        "capacity",
    );
    refused(
        "digraph p {\n  node [weight = 2]\n  a\n}",
        2,
        9,
        "node.weight",
        "drawing attributes only",
    );
    refused(
        "digraph p {\n  a [weight = 1, weight = 2]\n}",
        2,
        18,
        "a.weight",
        "set twice",
    );
    refused("digraph p {\n  a [name = b]\n}", 2, 6, "a.name", "DOT id");
    // Rules.
    refused(
        &format!("{HEAD}  a [rule = \"class\"]\n  root -> a\n}}"),
        3,
        13,
        "a.rule",
        "key=value",
    );
    refused(
        &format!("{HEAD}  a [rule = \"colour=2\"]\n  root -> {{ a b }}\n  default = b\n}}"),
        3,
        13,
        "a.rule.colour",
        "unknown field `colour`",
    );
}

#[test]
fn drawing_attributes_are_ignored() {
    let text = "digraph p {\n  rankdir = LR; label = \"tree\"\n  node [shape = box, style = filled]\n  root [discipline = wfq, label = \"the root\", color = red]\n  root -> { a b }\n  a [rule = \"class=1\"]\n  default = b\n}";
    let p = Policy::parse_dot_with(text, "ok.dot", &Limits::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(p.spec().nodes.len(), 3);
    assert_eq!(p.classify_ids(0, 1), p.leaf("a").unwrap());
    assert_eq!(p.classify_ids(0, 7), p.leaf("b").unwrap());
}
