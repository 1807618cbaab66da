//! Rank expressions of arbitrary text: the input is split at its first newline
//! into a node's `rank` and `rank_on_dequeue` programs (state variables `a`, `b`
//! per child, `n` per node) and put into a two-level policy. Compiling never
//! panics; a refused program is reported at a line of the file; an accepted one
//! is run on a short workload (saturating arithmetic, division by zero at run
//! time) and every packet is accounted for.
#![no_main]

use std::fmt::Write;
use std::sync::LazyLock;

use eiffel_policy::run::RunOptions;
use eiffel_policy::{Policy, PolicyError, WorkloadFile};
use libfuzzer_sys::fuzz_target;

const WORKLOAD: &str = r#"
seed = 3
duration = "500us"
link_rate = "1Gbit"
[[flow]]
name = "a"
class = 0
packet = ["64B", "1500B"]
arrivals = "greedy"
[[flow]]
name = "b"
class = 1
count = 3
packet = "700B"
arrivals = "poisson"
rate = "400Mbit"
"#;

static PARSED: LazyLock<WorkloadFile> =
    LazyLock::new(|| WorkloadFile::parse(WORKLOAD, "w.toml").expect("a valid workload"));

/// `text` as a TOML basic string.
fn quoted(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 2);
    s.push('"');
    for c in text.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(s, "\\u{:04X}", c as u32);
            }
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

fn policy(rank: &str, on_dequeue: Option<&str>) -> String {
    let mut p = String::from("capacity = 200\n[[node]]\nname = \"root\"\n");
    p.push_str("state = { a = 0, b = 1 }\nnode_state = { n = 0 }\n");
    let _ = writeln!(p, "rank = {}", quoted(rank));
    if let Some(d) = on_dequeue {
        let _ = writeln!(p, "rank_on_dequeue = {}", quoted(d));
    }
    p.push_str("[[node]]\nname = \"x\"\nparent = \"root\"\nweight = 1\n");
    p.push_str("[[node]]\nname = \"y\"\nparent = \"root\"\nweight = 3\n");
    p.push_str("[classify]\ndefault = \"x\"\n[[classify.rule]]\nleaf = \"y\"\nclass = 1\n");
    p
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (rank, on_dequeue) = match text.split_once('\n') {
        Some((r, d)) => (r, Some(d)),
        None => (text, None),
    };
    let file = policy(rank, on_dequeue);
    let policy = match Policy::parse(&file, "rank.toml") {
        Ok(p) => p,
        Err(PolicyError::Invalid { file: f, line, .. }) => {
            assert_eq!(f, "rank.toml");
            assert!(line >= 1 && line <= file.lines().count() + 1);
            return;
        }
        Err(e @ PolicyError::Io { .. }) => panic!("no file was read: {e}"),
    };
    let w = &*PARSED;
    let report = eiffel_policy::run(&policy, w, RunOptions::from_workload(w), |_| {});
    let t = &report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued);
});
