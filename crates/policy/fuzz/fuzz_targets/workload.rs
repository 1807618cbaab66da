//! A workload file of arbitrary text: parsing never panics; an accepted workload
//! is estimated against a small policy and, when its estimate is small, run
//! through it, and every packet is accounted for.
#![no_main]

use std::sync::LazyLock;

use eiffel_policy::run::{estimate, RunOptions};
use eiffel_policy::{Limits, Policy, WorkloadFile};
use libfuzzer_sys::fuzz_target;

/// A small tree (a pool of 1,000 packets, so that building it per input is
/// cheap, and full queues are common): wfq over an EDF per-flow leaf and a FIFO.
const POLICY: &str = r#"
capacity = 1000
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

static PARSED: LazyLock<Policy> =
    LazyLock::new(|| Policy::parse(POLICY, "policy.toml").expect("a valid policy"));

/// Runs estimated at more events than this are only estimated (a fuzzing
/// iteration must stay short: about 0.1 ms).
const MAX_EVENTS: u64 = 2_000;

/// Runs estimated above this are only estimated.
const SMALL: Limits = Limits {
    max_memory: 4 << 20,
};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(w) = WorkloadFile::parse(text, "fuzz.toml") else {
        return;
    };
    let policy = &*PARSED;
    let opts = RunOptions::from_workload(&w);
    let cost = estimate(policy, &w, &opts);
    if cost.run.events() > MAX_EVENTS || cost.memory.check(&SMALL).is_err() {
        return;
    }
    let report = eiffel_policy::run(policy, &w, opts, |_| {});
    let t = &report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
});
