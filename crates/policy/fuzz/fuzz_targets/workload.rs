//! A workload file of arbitrary text: parsing never panics; an accepted workload
//! is estimated against a small policy and, when its estimate is small, run
//! through it, and every packet is accounted for.
#![no_main]

use eiffel_policy::run::{estimate, RunOptions};
use eiffel_policy::{Limits, Policy, WorkloadFile};
use libfuzzer_sys::fuzz_target;

const POLICY: &str = r#"
[[node]]
name = "root"
discipline = "wfq"
limit = "1Gbit"
[[node]]
name = "a"
parent = "root"
discipline = "edf"
flows = 64
[[node]]
name = "b"
parent = "root"
capacity = 100
[classify]
default = "b"
[[classify.rule]]
leaf = "a"
class = 1
"#;

/// Runs estimated at more events than this are only estimated (a fuzzing
/// iteration must stay short).
const MAX_EVENTS: u64 = 20_000;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(w) = WorkloadFile::parse(text, "fuzz.toml") else {
        return;
    };
    let policy = Policy::parse(POLICY, "policy.toml").expect("a valid policy");
    let opts = RunOptions::from_workload(&w);
    let cost = estimate(&policy, &w, &opts);
    let small = Limits {
        max_memory: 64 << 20,
    };
    if cost.run.events() > MAX_EVENTS || cost.memory.check(&small).is_err() {
        return;
    }
    let report = eiffel_policy::run(&policy, &w, opts, |_| {});
    let t = &report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
});
