//! `examples/policies/ets.toml` end to end: `eiffel run` on its overload
//! workload gives the strict classes what they offer or their caps and splits
//! what is left among the classes of the shared level by their weights, in
//! bytes, to within DRR's quantum granularity; `eiffel check` prints each
//! child's level.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const EIFFEL: &str = env!("CARGO_BIN_EXE_eiffel");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
const POLICY: &str = "examples/policies/ets.toml";
const WORKLOAD: &str = "examples/workloads/ets.toml";
/// The policy's MTU (the default), the unit of a DRR quantum.
const MTU: f64 = 1500.0;

fn eiffel(args: &[&str]) -> Output {
    let out = Command::new(EIFFEL)
        .args(args)
        .current_dir(ROOT)
        .output()
        .expect("eiffel runs");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The JSON report of `eiffel run policy --workload WORKLOAD`.
fn run(policy: &str) -> Value {
    let out = eiffel(&["run", policy, "--workload", WORKLOAD, "--json"]);
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Bytes each node sent, by path.
fn node_bytes(v: &Value) -> HashMap<String, f64> {
    let secs = v["duration_ns"].as_f64().unwrap() / 1e9;
    v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let bps = n["throughput_bps"].as_f64().unwrap();
            (n["path"].as_str().unwrap().to_string(), bps * secs / 8.0)
        })
        .collect()
}

fn flow<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["flows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["name"] == name)
        .unwrap_or_else(|| panic!("no flow group {name}"))
}

/// Checks the run of an ets.toml whose data classes have `weights`
/// (business, default, bulk).
fn shares(v: &Value, weights: [u32; 3]) {
    let t = &v["totals"];
    let n = |k: &str| t[k].as_u64().unwrap();
    assert_eq!(n("enqueued"), n("dequeued") + n("dropped") + n("queued"));
    let secs = v["duration_ns"].as_f64().unwrap() / 1e9;
    let bytes = node_bytes(v);
    let b = |p: &str| bytes[p];
    // A limit sends at most its rate over the run plus its burst.
    let capped = |path: &str, rate: f64, burst: f64| {
        let (got, most) = (b(path), rate * secs / 8.0 + burst);
        assert!(
            got <= most && got >= 0.99 * rate * secs / 8.0,
            "{path}: {got} bytes, limit allows {most}"
        );
    };
    capped("root", 100e6, 15e3);
    // Control offers about 1 Mbit/s under its 5 Mbit/s cap: all of it leaves.
    let control = flow(v, "control");
    let (offered, sent) = (
        control["offered_bps"].as_f64().unwrap(),
        control["throughput_bps"].as_f64().unwrap(),
    );
    assert!(offered > 0.5e6 && offered < 2e6, "control offers {offered}");
    assert!(
        sent >= 0.995 * offered,
        "control: {sent} of {offered} bit/s"
    );
    assert_eq!(control["dropped"].as_u64(), Some(0));
    // Voice offers 24 Mbit/s into its 20 Mbit/s cap: it gets the cap, its leaf
    // drops the rest.
    assert!(flow(v, "voice")["offered_bps"].as_f64().unwrap() > 22e6);
    capped("root/voice", 20e6, 6e3);
    assert!(flow(v, "voice")["dropped"].as_u64().unwrap() > 0);

    // The shared level gets the rest, split by weight. The three classes are
    // backlogged throughout, so DRR serves them in rounds of w_i MTUs each:
    // after k rounds and during the next one, class i has sent k w_i M + e_i
    // with -M < e_i < (w_i + 1) M (a deficit below one packet carried, the
    // round under way), and the level S = k W M + sum(e_j). So
    // |S_i - w_i / W S| < (w_i + 1) M + w_i / W (W + 3) M, plus a packet on
    // the wire at the end: a few quanta, under 0.3% of any class here.
    let level = ["root/business", "root/default", "root/bulk"];
    let total: f64 = level.iter().map(|p| b(p)).sum();
    let rest = b("root") - b("root/control") - b("root/voice");
    assert!((total - rest).abs() < 1.0, "{total} vs {rest}");
    let sum = f64::from(weights.iter().sum::<u32>());
    for (path, w) in level.iter().zip(weights) {
        let w = f64::from(w);
        let want = w / sum * total;
        let bound = ((w + 1.0) + w / sum * (sum + 3.0) + 1.0) * MTU;
        let got = b(path);
        assert!(
            (got - want).abs() < bound,
            "{path}: {got:.0} bytes, weight {w} of {sum} wants {want:.0} (within {bound:.0})"
        );
    }
}

#[test]
fn ets_example_strict_classes_first_then_the_level_shared_4_2_1() {
    shares(&run(POLICY), [4, 2, 1]);
}

/// The same uplink with the shared level's weights swapped: the split follows
/// them (the business class's small packets now have the smallest quantum).
#[test]
fn ets_example_with_weights_swapped_shares_1_2_4() {
    let text = std::fs::read_to_string(Path::new(ROOT).join(POLICY)).unwrap();
    let swapped = text
        .replace("priority = 2\nweight = 4\n", "priority = 2\nweight = 9\n")
        .replace("priority = 2\nweight = 1\n", "priority = 2\nweight = 4\n")
        .replace("priority = 2\nweight = 9\n", "priority = 2\nweight = 1\n");
    assert!(
        swapped.contains("name = \"business\"\nparent = \"root\"\npriority = 2\nweight = 1\n")
            && swapped.contains("name = \"bulk\"\nparent = \"root\"\npriority = 2\nweight = 4\n"),
        "the example's weights changed: update this test"
    );
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ets-swapped");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("ets.toml");
    std::fs::write(&file, swapped).unwrap();
    shares(&run(file.to_str().unwrap()), [1, 2, 4]);
}

#[test]
fn ets_example_check_prints_each_childs_level() {
    let out = eiffel(&["check", POLICY]);
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "root: ets, limit 100 Mbit/s",
        "control: leaf (id 1), fifo, priority 0 (strict), limit 5 Mbit/s",
        "voice: leaf (id 2), fifo, priority 1 (strict), limit 20 Mbit/s",
        "business: leaf (id 3), fifo, priority 2, weight 4 of 7 (drr among 3)",
        "default: leaf (id 4), fifo, priority 2, weight 2 of 7 (drr among 3)",
        "bulk: leaf (id 5), fifo, priority 2, weight 1 of 7 (drr among 3)",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}
