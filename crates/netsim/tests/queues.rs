//! The specialised port queues (one FIFO leaf, one pFabric leaf on `cffs`)
//! against the policy trees they stand for: whole runs of the shipped
//! scenarios' fabrics give equal results, counters and events included.

use std::path::Path;

use eiffel_netsim::event::WheelQueue;
use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::setup::{build_ports_with, QueueForm, QueuePlan};
use eiffel_netsim::sweep::{self, run_one_as};
use eiffel_netsim::workload::Traffic;

fn shipped(name: &str, flows: Option<u32>) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/scenarios")
        .join(name);
    let mut s = Scenario::load(&path).expect("shipped scenario loads");
    s.make_quick();
    if let Some(n) = flows {
        for t in &mut s.traffic {
            if let Traffic::Poisson { flows: f, .. } = t {
                *f = Some(n);
            }
        }
    }
    s
}

/// Every run of `s` (first seed) both ways: equal results.
fn same_both_ways(s: &Scenario, schemes: &[&str]) {
    let loads = sweep::workloads(s);
    for key in sweep::plan(s).iter().filter(|k| k.seed_index == 0) {
        let scheme = &s.schemes[key.scheme];
        if !schemes.contains(&scheme.name.as_str()) {
            continue;
        }
        let w = &loads[key.load_index];
        let tree = run_one_as::<WheelQueue>(s, key, w, true, QueueForm::Tree, |_, _| {});
        let fast = run_one_as::<WheelQueue>(s, key, w, true, QueueForm::Fastest, |_, _| {});
        assert!(tree.counters.events > 0);
        assert!(
            tree == fast,
            "{} at load {}: the specialised queues changed the run",
            scheme.name,
            key.load
        );
    }
}

#[test]
fn fig15_fabric_runs_the_same() {
    let mut s = shipped("eiffel-fig15.toml", Some(150));
    s.loads = vec![0.8];
    same_both_ways(&s, &["tcp-droptail", "dctcp", "pfabric"]);
}

#[test]
fn pfabric_fanin_runs_the_same() {
    let s = shipped("pfabric-fanin.toml", None);
    same_both_ways(&s, &["pfabric-36KB", "pfabric-2MB"]);
}

#[test]
fn the_fabrics_get_the_specialised_queues() {
    let s = shipped("eiffel-fig15.toml", Some(50));
    let w = &sweep::workloads(&s)[0];
    for (scheme, want) in [("dctcp", "fifo"), ("pfabric", "pfabric-cffs")] {
        let sc = s.schemes.iter().find(|x| x.name == scheme).unwrap();
        let plan = QueuePlan::for_workload(w, QueueForm::Fastest);
        let (ports, _) = build_ports_with(&s.topology, sc, &s.extras, plan);
        assert!(ports.iter().all(|p| p.queue().name() == want), "{scheme}");
        let plan = QueuePlan::for_workload(w, QueueForm::Tree);
        let (ports, _) = build_ports_with(&s.topology, sc, &s.extras, plan);
        assert!(ports.iter().all(|p| p.queue().name() == "policy-tree"));
    }
    // The approximate queue, and a pFabric window a flow could overflow, keep
    // the tree.
    let approx = s
        .schemes
        .iter()
        .find(|x| x.name == "pfabric-approx")
        .unwrap();
    let plan = QueuePlan::for_workload(w, QueueForm::Fastest);
    let (ports, _) = build_ports_with(&s.topology, approx, &s.extras, plan);
    assert!(ports.iter().all(|p| p.queue().name() == "policy-tree"));
    let pf = s.schemes.iter().find(|x| x.name == "pfabric").unwrap();
    let plan = QueuePlan {
        form: QueueForm::Fastest,
        max_rank: u64::MAX,
    };
    let (ports, _) = build_ports_with(&s.topology, pf, &s.extras, plan);
    assert!(ports.iter().all(|p| p.queue().name() == "policy-tree"));
}
