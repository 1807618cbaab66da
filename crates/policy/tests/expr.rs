//! Every `examples/policies/*-expr.toml`, a built-in discipline written as rank
//! expressions, against the built-in it mirrors: the same file with
//! `discipline = "..."` instead of the expressions (same queue), fed the same
//! random arrivals and dequeues, must send the same packets in the same order
//! and refuse the same ones. Least attained service, which has no built-in, is
//! checked against its definition. Every node's accounting is checked on the way.

use std::collections::HashMap;
use std::path::PathBuf;

use eiffel_policy::run::{run_with, RunOptions};
use eiffel_policy::{Policy, WorkloadFile};
use eiffel_sched::{Packet, Scheduler};
use proptest::prelude::*;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn expr_text(name: &str) -> String {
    let path = examples().join(format!("policies/{name}-expr.toml"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The expression policy with every ranked node's expressions replaced by
/// `discipline = builtin`, its queue settings kept.
fn builtin_of(text: &str, builtin: &str) -> String {
    let mut doc: toml_edit::DocumentMut = text.parse().unwrap();
    let nodes = doc["node"].as_array_of_tables_mut().unwrap();
    let mut replaced = 0;
    for node in nodes.iter_mut() {
        if node.remove("rank").is_some() {
            for k in ["rank_on_dequeue", "state", "node_state"] {
                node.remove(k);
            }
            node.insert("discipline", toml_edit::value(builtin));
            replaced += 1;
        }
    }
    assert!(replaced > 0, "no rank expression in the example");
    doc.to_string()
}

/// One step of a random workload.
#[derive(Clone, Debug)]
enum Step {
    /// A packet into leaf `leaf` (an index into the policy's leaves).
    Arrive {
        leaf: usize,
        flow: u32,
        len: u32,
        deadline_after: u64,
        annotation: u64,
        remaining: u64,
    },
    Dequeue,
    Advance(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => (0usize..4, 0u32..8, 64u32..=1500, 0u64..5_000_000, 0u64..3, 1u64..3_000_000)
            .prop_map(|(leaf, flow, len, deadline_after, annotation, remaining)| Step::Arrive {
                leaf,
                flow,
                len,
                deadline_after,
                annotation,
                remaining,
            }),
        4 => Just(Step::Dequeue),
        1 => (1u64..200_000).prop_map(Step::Advance),
    ]
}

fn leaves(policy: &Policy) -> Vec<u32> {
    let spec = policy.spec();
    (0..spec.nodes.len())
        .filter(|&i| spec.is_leaf(i))
        .map(|i| i as u32)
        .collect()
}

/// The packet a step sends, numbered `id`.
fn packet(policy: &Policy, leaf: usize, s: &Step, id: u32, now: u64) -> Packet {
    let Step::Arrive {
        flow,
        len,
        deadline_after,
        annotation,
        remaining,
        ..
    } = *s
    else {
        unreachable!("an arrival")
    };
    let ids = leaves(policy);
    let mut p = Packet::new(flow, len)
        .class(ids[leaf % ids.len()])
        .at(now)
        .buffer(id);
    p.deadline = now + deadline_after;
    p.rank = annotation;
    p.remaining = remaining;
    p
}

/// Drives both trees through `steps`, then drains them; every answer must agree.
fn same_order(a: &Policy, b: &Policy, steps: &[Step]) -> Result<(), TestCaseError> {
    let (mut ta, mut tb) = (a.build(), b.build());
    let mut now = 0u64;
    let mut sent = 0usize;
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Arrive { leaf, .. } => {
                let p = packet(a, *leaf, s, i as u32, now);
                let (ra, rb) = (ta.enqueue(p, now), tb.enqueue(p, now));
                prop_assert_eq!(ra.map_err(|d| d.reason), rb.map_err(|d| d.reason));
            }
            Step::Dequeue => {
                let (pa, pb) = (ta.dequeue(now), tb.dequeue(now));
                prop_assert_eq!(pa.map(|p| p.buffer), pb.map(|p| p.buffer), "step {}", i);
                sent += usize::from(pa.is_some());
            }
            Step::Advance(d) => now += d,
        }
    }
    ta.check_invariants();
    tb.check_invariants();
    while let Some(t) = ta.next_ready(now) {
        now = t.max(now);
        let (pa, pb) = (ta.dequeue(now), tb.dequeue(now));
        prop_assert_eq!(pa.map(|p| p.buffer), pb.map(|p| p.buffer));
        if pa.is_none() {
            now += 1;
        }
        sent += 1;
        prop_assert!(sent < 100_000, "drain does not end");
    }
    prop_assert!(tb.next_ready(now).is_none());
    ta.check_invariants();
    tb.check_invariants();
    for t in [&ta, &tb] {
        let c = t.counters();
        prop_assert_eq!(c.enqueued, c.dequeued + c.dropped_total());
    }
    Ok(())
}

fn pair(name: &str, builtin: &str) -> (Policy, Policy) {
    let text = expr_text(name);
    let expr = Policy::parse(&text, &format!("{name}-expr.toml")).unwrap_or_else(|e| panic!("{e}"));
    let plain = Policy::parse(&builtin_of(&text, builtin), &format!("{name}.toml"))
        .unwrap_or_else(|e| panic!("{e}"));
    (expr, plain)
}

const MIRRORS: [(&str, &str); 7] = [
    ("fifo", "fifo"),
    ("strict", "strict"),
    ("wfq", "wfq"),
    ("edf", "edf"),
    ("lstf", "lstf"),
    ("srpt", "srpt"),
    ("pfabric", "pfabric"),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 }))]

    #[test]
    fn expressions_send_in_the_order_of_their_builtins(
        steps in prop::collection::vec(step(), 1..600)
    ) {
        for (name, builtin) in MIRRORS {
            let (expr, plain) = pair(name, builtin);
            same_order(&expr, &plain, &steps)
                .map_err(|e| TestCaseError::fail(format!("{name}: {e}")))?;
        }
    }

    #[test]
    fn least_attained_service_serves_the_flow_that_sent_least(
        steps in prop::collection::vec(step(), 1..600)
    ) {
        let text = expr_text("las");
        let policy = Policy::parse(&text, "las-expr.toml").unwrap();
        let mut tree = policy.build();
        let mut attained: HashMap<u32, u64> = HashMap::new();
        let mut queued: HashMap<u32, Vec<u32>> = HashMap::new();
        for (i, s) in steps.iter().enumerate() {
            match s {
                Step::Arrive { leaf, .. } => {
                    let p = packet(&policy, *leaf, s, i as u32, 0);
                    if tree.enqueue(p, 0).is_ok() {
                        queued.entry(p.flow).or_default().push(p.buffer);
                    }
                }
                Step::Dequeue | Step::Advance(_) => {
                    let Some(p) = tree.dequeue(0) else {
                        prop_assert!(queued.values().all(Vec::is_empty));
                        continue;
                    };
                    let least = queued
                        .iter()
                        .filter(|(_, q)| !q.is_empty())
                        .map(|(f, _)| attained.get(f).copied().unwrap_or(0))
                        .min();
                    let mine = attained.get(&p.flow).copied().unwrap_or(0);
                    prop_assert_eq!(Some(mine), least, "flow {} is not the least served", p.flow);
                    let q = queued.get_mut(&p.flow).unwrap();
                    prop_assert_eq!(q.remove(0), p.buffer, "flow order");
                    *attained.entry(p.flow).or_default() += u64::from(p.len);
                }
            }
        }
        tree.check_invariants();
    }
}

#[test]
fn wfq_expr_runs_the_wfq_workload_as_the_builtin_does() {
    let w = WorkloadFile::load(examples().join("workloads/wfq.toml")).unwrap();
    let expr = Policy::load(examples().join("policies/wfq-expr.toml")).unwrap();
    let plain = Policy::load(examples().join("policies/wfq.toml")).unwrap();
    let run = |p: &Policy| run_with(p, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    let (a, b) = (run(&expr), run(&plain));
    assert_eq!(a.nodes.len(), b.nodes.len());
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(x.path, y.path);
        assert_eq!(x.dequeued, y.dequeued, "{}", x.path);
        assert_eq!(x.throughput_bps, y.throughput_bps, "{}", x.path);
    }
    let t = &a.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
    assert!(t.dequeued > 100_000, "the link was busy: {}", t.dequeued);
}

#[test]
fn every_expr_example_loads() {
    let dir = examples().join("policies");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let path = e.unwrap().path();
        if path.to_string_lossy().ends_with("-expr.toml") {
            Policy::load(&path).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 8, "only {n} expression examples");
}

/// How precise the shaper is.
#[derive(Clone, Copy, Debug)]
enum Precision {
    /// As the example file says.
    AsWritten,
    /// 1 ns slots, so that a release time 1 ns off changes a departure.
    Nanosecond,
}

/// `tbf-expr.toml` with its rate and bucket set to `rate` bit/s and `extra`
/// bytes beyond one MTU, and the built-in it mirrors: the same leaf with
/// `flow_limit` and `flow_burst` instead of the release-time programs.
fn tbf_pair(rate: u64, extra: u64, precision: Precision) -> (Policy, Policy) {
    let mut doc: toml_edit::DocumentMut = expr_text("tbf").parse().unwrap();
    if let Precision::Nanosecond = precision {
        let mut shaper = toml_edit::Table::new();
        shaper.insert("horizon", toml_edit::value("65536ns"));
        shaper.insert("slots", toml_edit::value(65536));
        doc.insert("shaper", toml_edit::Item::Table(shaper));
    }
    let node = |doc: &mut toml_edit::DocumentMut| {
        let nodes = doc["node"].as_array_of_tables_mut().unwrap();
        nodes.get_mut(0).unwrap().clone()
    };
    let mut leaf = node(&mut doc);
    let constants = leaf["constants"].as_inline_table_mut().unwrap();
    constants.insert("rate", (rate as i64).into());
    constants.insert("extra", (extra as i64).into());
    *doc["node"]
        .as_array_of_tables_mut()
        .unwrap()
        .get_mut(0)
        .unwrap() = leaf.clone();
    let expr = doc.to_string();
    for k in [
        "release",
        "release_on_dequeue",
        "release_state",
        "constants",
    ] {
        assert!(leaf.remove(k).is_some(), "tbf-expr.toml sets `{k}`");
    }
    leaf.insert("flow_limit", toml_edit::value(format!("{rate}bit")));
    leaf.insert("flow_burst", toml_edit::value(format!("{}B", 1500 + extra)));
    *doc["node"]
        .as_array_of_tables_mut()
        .unwrap()
        .get_mut(0)
        .unwrap() = leaf;
    let builtin = doc.to_string();
    let expr = Policy::parse(&expr, "tbf-expr.toml").unwrap_or_else(|e| panic!("{e}"));
    let builtin = Policy::parse(&builtin, "tbf.toml").unwrap_or_else(|e| panic!("{e}"));
    (expr, builtin)
}

/// Drives both trees through `steps` and drains them: every dequeue must send
/// the same packet at the same time, and both must name the same next release.
fn same_departures(a: &Policy, b: &Policy, steps: &[Step]) -> Result<usize, TestCaseError> {
    let (mut ta, mut tb) = (a.build(), b.build());
    let mut now = 0u64;
    let mut sent = 0usize;
    for (i, s) in steps.iter().enumerate() {
        match s {
            Step::Arrive { leaf, .. } => {
                let p = packet(a, *leaf, s, i as u32, now);
                let (ra, rb) = (ta.enqueue(p, now), tb.enqueue(p, now));
                prop_assert_eq!(ra.map_err(|d| d.reason), rb.map_err(|d| d.reason));
            }
            Step::Dequeue => {
                let (pa, pb) = (ta.dequeue(now), tb.dequeue(now));
                prop_assert_eq!(pa.map(|p| p.buffer), pb.map(|p| p.buffer), "step {}", i);
                sent += usize::from(pa.is_some());
            }
            Step::Advance(d) => now += d,
        }
        prop_assert_eq!(ta.next_ready(now), tb.next_ready(now), "step {}", i);
    }
    ta.check_invariants();
    tb.check_invariants();
    while let Some(t) = ta.next_ready(now) {
        prop_assert_eq!(Some(t), tb.next_ready(now));
        now = t.max(now);
        let (pa, pb) = (ta.dequeue(now), tb.dequeue(now));
        prop_assert_eq!(pa.map(|p| p.buffer), pb.map(|p| p.buffer), "at {} ns", now);
        if pa.is_none() {
            now += 1;
        }
        sent += usize::from(pa.is_some());
    }
    prop_assert!(tb.next_ready(now).is_none());
    ta.check_invariants();
    tb.check_invariants();
    for t in [&ta, &tb] {
        let c = t.counters();
        prop_assert_eq!(c.enqueued, c.dequeued + c.dropped_total());
    }
    Ok(sent)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 }))]

    #[test]
    fn token_bucket_expressions_release_as_the_builtin_shaper(
        steps in prop::collection::vec(step(), 1..600),
        rate in 100_000u64..2_000_000_000,
        extra in prop_oneof![Just(0u64), 1u64..6_000],
    ) {
        let (expr, builtin) = tbf_pair(rate, extra, Precision::Nanosecond);
        same_departures(&expr, &builtin, &steps)?;
    }
}

#[test]
fn tbf_expr_paces_its_workload_as_the_builtin_does() {
    let w = WorkloadFile::load(examples().join("workloads/tbf.toml")).unwrap();
    let (expr, builtin) = tbf_pair(2_000_000, 1_500, Precision::AsWritten);
    let run = |p: &Policy| run_with(p, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    let (a, b) = (run(&expr), run(&builtin));
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(x.dequeued, y.dequeued, "{}", x.path);
        assert_eq!(x.throughput_bps, y.throughput_bps, "{}", x.path);
    }
    // 256 flows at 2 Mbit/s: 512 Mbit/s of the 1 Gbit/s link, no more.
    let bps = a.nodes[0].throughput_bps;
    assert!((bps - 512e6).abs() / 512e6 < 0.02, "{bps} bit/s");
    let t = &a.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
}

/// `fig6-expr.toml` (Fig. 6 with the internal node `capped` released by a
/// token bucket written as a program) with its rate and bucket set to `rate`
/// bit/s and `extra` bytes beyond one MTU, and the built-in it mirrors: the
/// same node with `limit` and `burst` instead of the release-time programs.
/// With `root`, the root's limit is written the same way too, at that rate and
/// bucket.
fn node_tbf_pair(
    rate: u64,
    extra: u64,
    root: Option<(u64, u64)>,
    precision: Precision,
) -> (Policy, Policy) {
    let text = std::fs::read_to_string(examples().join("policies/fig6-expr.toml")).unwrap();
    let mut expr: toml_edit::DocumentMut = text.parse().unwrap();
    if let Precision::Nanosecond = precision {
        expr["shaper"]["horizon"] = toml_edit::value("65536ns");
        expr["shaper"]["slots"] = toml_edit::value(65536);
    }
    let mut builtin = expr.clone();
    let find = |doc: &mut toml_edit::DocumentMut, name: &str| {
        let nodes = doc["node"].as_array_of_tables_mut().unwrap();
        nodes
            .iter()
            .position(|n| n["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("fig6-expr.toml has `{name}`"))
    };
    let program: Vec<(String, toml_edit::Item)> = {
        let i = find(&mut expr, "capped");
        let capped = expr["node"]
            .as_array_of_tables_mut()
            .unwrap()
            .get_mut(i)
            .unwrap();
        [
            "release",
            "release_on_dequeue",
            "release_state",
            "constants",
        ]
        .iter()
        .map(|k| {
            (
                k.to_string(),
                capped.get(k).expect("the program's keys").clone(),
            )
        })
        .collect()
    };
    let mut pace = |name: &str, (rate, extra): (u64, u64)| {
        let i = find(&mut expr, name);
        let t = expr["node"]
            .as_array_of_tables_mut()
            .unwrap()
            .get_mut(i)
            .unwrap();
        t.remove("limit");
        t.remove("burst");
        for (k, v) in &program {
            t.insert(k, v.clone());
        }
        let constants = t["constants"].as_inline_table_mut().unwrap();
        constants.insert("rate", (rate as i64).into());
        constants.insert("extra", (extra as i64).into());
        let i = find(&mut builtin, name);
        let t = builtin["node"]
            .as_array_of_tables_mut()
            .unwrap()
            .get_mut(i)
            .unwrap();
        for (k, _) in &program {
            t.remove(k);
        }
        t.insert("limit", toml_edit::value(format!("{rate}bit")));
        t.insert("burst", toml_edit::value(format!("{}B", 1500 + extra)));
    };
    pace("capped", (rate, extra));
    if let Some(r) = root {
        pace("root", r);
    }
    let expr = Policy::parse(&expr.to_string(), "fig6-expr.toml").unwrap_or_else(|e| panic!("{e}"));
    let builtin =
        Policy::parse(&builtin.to_string(), "fig6.toml").unwrap_or_else(|e| panic!("{e}"));
    (expr, builtin)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 64 }))]

    /// An internal node released by a token bucket written as a program sends
    /// every packet at the time the built-in node limit sends it (a leaf below
    /// it limited too, so that the node is sometimes held with every unit
    /// held), with 1 ns shaper slots so that a release time 1 ns off would show.
    #[test]
    fn node_token_bucket_expressions_release_as_the_builtin_limit(
        steps in prop::collection::vec(step(), 1..600),
        rate in 100_000u64..2_000_000_000,
        extra in prop_oneof![Just(0u64), 1u64..6_000],
    ) {
        let (expr, builtin) = node_tbf_pair(rate, extra, None, Precision::Nanosecond);
        same_departures(&expr, &builtin, &steps)?;
    }

    /// The same with the root released by a program too: two paced nodes on
    /// one path, the root's own output among them.
    #[test]
    fn root_and_node_token_buckets_release_as_the_builtin_limits(
        steps in prop::collection::vec(step(), 1..600),
        rate in 100_000u64..2_000_000_000,
        extra in prop_oneof![Just(0u64), 1u64..6_000],
        root_rate in 100_000u64..2_000_000_000,
        root_extra in prop_oneof![Just(0u64), 1u64..6_000],
    ) {
        let root = Some((root_rate, root_extra));
        let (expr, builtin) = node_tbf_pair(rate, extra, root, Precision::Nanosecond);
        same_departures(&expr, &builtin, &steps)?;
    }
}

#[test]
fn node_tbf_expr_runs_the_fig6_workload_as_fig6_does() {
    let w = WorkloadFile::load(examples().join("workloads/fig6.toml")).unwrap();
    let (expr, _) = node_tbf_pair(10_000_000, 4_500, None, Precision::AsWritten);
    let plain = Policy::load(examples().join("policies/fig6.toml")).unwrap();
    let run = |p: &Policy| run_with(p, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    let (a, b) = (run(&expr), run(&plain));
    assert_eq!(a.nodes.len(), b.nodes.len());
    for (x, y) in a.nodes.iter().zip(&b.nodes) {
        assert_eq!(x.path, y.path);
        assert_eq!(x.dequeued, y.dequeued, "{}", x.path);
        assert_eq!(x.throughput_bps, y.throughput_bps, "{}", x.path);
    }
    let capped = a.nodes.iter().find(|n| n.path.ends_with("capped")).unwrap();
    assert!(
        (capped.throughput_bps - 10e6).abs() / 10e6 < 0.02,
        "capped sends at its 10 Mbit/s: {}",
        capped.throughput_bps
    );
    let t = &a.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
}
