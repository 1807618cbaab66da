//! Reproducibility: the same seed gives byte-identical reports, whatever the
//! number of threads and whichever event list; another seed does not.

use std::path::Path;

use eiffel_netsim::event::{HeapQueue, WheelQueue};
use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::sweep::{self, run_one_with, SweepOptions};

const SCENARIO: &str = r#"
name = "small"
seeds = [1, 2]
loads = [0.3, 0.7]
[topology]
kind = "leaf-spine"
leaves = 3
spines = 2
hosts_per_leaf = 4
host_link = { rate = "10Gbit", delay = "2us" }
fabric_link = { rate = "40Gbit", delay = "0.5us" }
[[traffic]]
name = "web"
kind = "poisson"
sizes = ["1KB", "300KB"]
flows = 80
[[traffic]]
name = "co"
kind = "coflows"
sizes = ["2KB", "18KB"]
width = 4
share = 0.2
class = 1
deadline = true
[[scheme]]
name = "dctcp"
transport = "dctcp"
policy = "fifo"
min_rto = "200us"
[[scheme]]
name = "pfabric"
transport = "pfabric"
policy = "policies/pfabric-cffs.toml"
[[scheme]]
name = "lstf"
transport = "dctcp"
policy = "policies/pcq-lstf-cq.toml"
min_rto = "200us"
[report]
check = true
sample_ports = ["leaf0->spine0"]
sample_interval = "20us"
"#;

fn scenario() -> Scenario {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios");
    Scenario::parse(SCENARIO, "small.toml", &dir).unwrap()
}

fn json(jobs: usize, s: &Scenario) -> String {
    let opts = SweepOptions {
        jobs,
        check: true,
        ..SweepOptions::default()
    };
    let r = sweep::run(s, opts, &|_| {}).unwrap();
    serde_json::to_string(&r).unwrap()
}

#[test]
fn same_seed_same_bytes_any_thread_count() {
    let s = scenario();
    let a = json(1, &s);
    let b = json(2, &s);
    assert_eq!(a, b, "one thread and two threads disagree");
    assert_eq!(a, json(2, &s), "two runs disagree");
    let mut other = scenario();
    other.seeds = vec![3, 4];
    assert_ne!(a, json(2, &other), "a different seed changed nothing");
    assert!(a.contains("\"results\":["), "{}", &a[..200.min(a.len())]);
}

#[test]
fn wheel_and_heap_give_the_same_runs() {
    let s = scenario();
    let w = sweep::workloads(&s);
    for key in sweep::plan(&s) {
        let wl = &w[key.seed_index * s.loads.len() + key.load_index];
        let a = run_one_with::<WheelQueue>(&s, &key, wl, true, |_, _| {});
        let b = run_one_with::<HeapQueue>(&s, &key, wl, true, |_, _| {});
        assert_eq!(a, b, "{key:?}");
        assert!(a.counters.events > 10_000);
    }
}
