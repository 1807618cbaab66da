//! Flows that hold sub-policies: `examples/policies/tenants.toml` (WFQ across
//! tenants, strict priority among each tenant's classes) on its workload and on
//! random arrivals, checked against what it configures, with the accounting
//! `enqueued = dequeued + dropped + queued` at every node; and the mistakes the
//! new keys can make.

use std::collections::VecDeque;
use std::path::PathBuf;

use eiffel_policy::run::{run_with, RunOptions};
use eiffel_policy::{Policy, WorkloadFile};
use eiffel_sched::{Packet, Scheduler};
use proptest::prelude::*;

fn examples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn tenants() -> Policy {
    Policy::load(examples().join("policies/tenants.toml")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn tenants_share_fairly_and_each_serves_its_interactive_class_first() {
    let policy = tenants();
    let w = WorkloadFile::load(examples().join("workloads/tenants.toml")).unwrap();
    let report = run_with(&policy, &w, RunOptions::from_workload(&w), |_| {}, &mut ());
    for n in &report.nodes {
        assert_eq!(
            n.enqueued,
            n.dequeued + n.dropped + n.queued,
            "accounting at {}",
            n.path
        );
    }
    let t = &report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
    let node = |p: &str| {
        report
            .nodes
            .iter()
            .find(|n| n.path == p)
            .unwrap_or_else(|| panic!("no node {p}"))
    };
    for f in 0..4 {
        let tenant = node(&format!("tenants/tenants[{f}]"));
        let share = tenant.throughput_bps / 100e6;
        assert!((share - 0.25).abs() < 0.005, "tenant {f}: {share}");
        let fast = node(&format!("tenants/tenants[{f}]/interactive[{f}]"));
        let bulk = node(&format!("tenants/tenants[{f}]/bulk[{f}]"));
        assert_eq!(
            fast.dropped, 0,
            "tenant {f}'s interactive class lost packets"
        );
        assert!(
            (fast.throughput_bps - 5e6).abs() / 5e6 < 0.1,
            "tenant {f}: interactive {}",
            fast.throughput_bps
        );
        assert!(fast.latency.p99_latency_ns * 10 < bulk.latency.p50_latency_ns);
    }
}

proptest! {
    /// Random arrivals (flow ids fold onto the four tenants) and departures:
    /// a tenant's bulk packet never leaves while its interactive class has one
    /// queued, each class stays in order, and every node accounts for every packet.
    #[test]
    fn strict_inside_each_tenant_on_random_arrivals(
        ops in prop::collection::vec((any::<bool>(), 0u32..12, 0u32..2, 64u32..=1500), 1..800)
    ) {
        let policy = tenants();
        let mut tree = policy.build();
        let mut queued: Vec<[VecDeque<u32>; 2]> = vec![Default::default(); 4];
        for (i, &(arrive, flow, class, len)) in ops.iter().enumerate() {
            if arrive {
                let leaf = policy.classify_ids(flow, class);
                let p = Packet::new(flow, len).class(leaf).buffer(i as u32);
                if tree.enqueue(p, 0).is_ok() {
                    queued[(flow % 4) as usize][class as usize].push_back(i as u32);
                }
            } else if let Some(p) = tree.dequeue(0) {
                let t = (p.flow % 4) as usize;
                let class = usize::from(queued[t][0].front() != Some(&p.buffer));
                prop_assert!(class == 0 || queued[t][0].is_empty(), "bulk before interactive");
                prop_assert_eq!(queued[t][class].pop_front(), Some(p.buffer));
            }
            tree.check_invariants();
        }
        let c = tree.counters();
        prop_assert_eq!(c.enqueued, c.dequeued + c.dropped_total() + tree.backlog().packets);
    }
}

fn error(text: &str) -> String {
    Policy::parse(text, "t.toml").unwrap_err().to_string()
}

#[test]
fn mistakes_with_flow_subtrees_name_their_key() {
    let head = "[[node]]\nname = \"t\"\nflows = 4\n";
    let kid = "[[node]]\nname = \"k\"\nparent = \"t\"\n";
    let e = error(&format!("{head}flow_discipline = \"pfabric\"\n{kid}"));
    assert!(
        e.starts_with("t.toml:4:19: key `node[0].flow_discipline`"),
        "{e}"
    );
    let e = error("[[node]]\nname = \"t\"\nflow_discipline = \"strict\"\n[[node]]\nname = \"k\"\nparent = \"t\"\n");
    assert!(
        e.contains("`node[0].flow_discipline`") && e.contains("flows = N"),
        "{e}"
    );
    let e = error(&format!("{head}flow_queue = 5\n{kid}"));
    assert!(e.contains("`node[0].flow_queue`"), "{e}");
    let ok = Policy::parse(
        &format!("{head}flow_discipline = \"strict\"\nflow_limit = \"1Mbit\"\n{kid}"),
        "t.toml",
    )
    .unwrap();
    assert!(ok.has_flow_subtrees());
    assert_eq!(ok.spec().nodes.len(), 1 + 4 + 4);
    assert!(ok.spec().nodes.iter().filter(|n| n.limit.is_some()).count() == 4);
}
