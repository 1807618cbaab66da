//! `eiffel sim` end to end: an example scenario with `--quick --json --plot`,
//! and a scenario mistake reported with file, line and key and a non-zero exit.

use std::path::Path;
use std::process::Command;

const EIFFEL: &str = env!("CARGO_BIN_EXE_eiffel");

fn examples() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios")
}

#[test]
fn quick_qfq_delay_as_json_and_svg() {
    let svg = std::env::temp_dir().join(format!("eiffel-sim-{}.svg", std::process::id()));
    let out = Command::new(EIFFEL)
        .arg("sim")
        .arg(examples().join("qfq-delay.toml"))
        .args(["--quick", "--json", "--jobs", "2", "--plot"])
        .arg(&svg)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let delays = v["delays"].as_array().unwrap();
    assert_eq!(delays.len(), 6, "f0 and f1 under three schemes");
    let mean = |scheme: &str, traffic: &str| {
        delays
            .iter()
            .find(|d| d["scheme"] == scheme && d["traffic"] == traffic)
            .and_then(|d| d["mean_delay_ms"].as_f64())
            .unwrap()
    };
    // The papers' ordering: DRR well above QFQ and WF2Q+ for both flows.
    for t in ["f0", "f1"] {
        assert!(mean("drr", t) > 1.5 * mean("qfq", t), "{t}");
        assert!(mean("drr", t) > 1.5 * mean("wf2q+", t), "{t}");
    }
    assert!(v["results"].is_array());
    let drawn = std::fs::read_to_string(&svg).unwrap();
    std::fs::remove_file(&svg).unwrap();
    assert!(drawn.contains("<svg") && drawn.contains("f0: largest delay"));
}

#[test]
fn a_scenario_mistake_names_file_line_and_key() {
    let dir = std::env::temp_dir().join(format!("eiffel-sim-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.toml");
    std::fs::write(
        &file,
        "[topology]\nkind = \"dumbbell\"\nsenders = 1\nreceivers = 1\naccess_link = { rate = \"1Gbit\", delay = \"1us\" }\nbottleneck = { rate = \"1Gbit\", delay = \"1us\" }\n[[traffic]]\nname = \"a\"\nkind = \"flows\"\nsrc = \"s0\"\ndst = \"nowhere\"\nsize = \"1KB\"\n[[scheme]]\nname = \"tcp\"\ntransport = \"tcp\"\npolicy = \"fifo\"\n",
    )
    .unwrap();
    let out = Command::new(EIFFEL).arg("sim").arg(&file).output().unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.toml:11:7: key `traffic[0].dst`"), "{err}");
    assert!(err.contains("`nowhere` is not a host"), "{err}");
}
