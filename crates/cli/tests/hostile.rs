//! Hostile command lines and daemon answers: each ends in a clear error and a
//! non-zero exit, never a panic, and nothing is lost or deleted.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const EIFFEL: &str = env!("CARGO_BIN_EXE_eiffel");

fn eiffel(args: &[&str]) -> Output {
    Command::new(EIFFEL)
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .expect("eiffel runs")
}

/// Exit 1 (not a panic's 101 or an abort), and `needle` in the error.
#[track_caller]
fn fails_with(out: &Output, needle: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(needle), "missing {needle:?} in: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// A fresh directory under the target directory.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hostile-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fake `eiffel shape` control socket that answers every request with `answer`.
fn fake_daemon(dir: &Path, answer: &'static str) -> PathBuf {
    let path = dir.join("fake.sock");
    let listener = UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            let _ = s.write_all(answer.as_bytes());
        }
    });
    path
}

#[test]
fn stats_fails_on_an_error_or_garbage_answer() {
    let dir = scratch("stats");
    let sock = fake_daemon(&dir, r#"{"error": "the runtime is stopping"}"#);
    let s = sock.to_str().unwrap();
    fails_with(
        &eiffel(&["stats", "--socket", s]),
        "the runtime is stopping",
    );
    fails_with(
        &eiffel(&["stats", "--socket", s, "--json"]),
        "the runtime is stopping",
    );
    let dir = scratch("stats-garbage");
    let sock = fake_daemon(&dir, "\u{0}garbage\n");
    let s = sock.to_str().unwrap();
    fails_with(&eiffel(&["stats", "--socket", s]), "not JSON");
    fails_with(&eiffel(&["stats", "--socket", s, "--json"]), "not JSON");
}

#[test]
fn a_refused_reload_is_a_failure() {
    let dir = scratch("reload");
    let sock = fake_daemon(&dir, r#"{"ok": false, "error": "bad.toml:3:1: nope"}"#);
    let s = sock.to_str().unwrap();
    fails_with(
        &eiffel(&["stats", "--socket", s, "--reload"]),
        "reload refused, the old policy keeps running",
    );
    let dir = scratch("reload-silent");
    let sock = fake_daemon(&dir, r#"{"ok": false}"#);
    fails_with(
        &eiffel(&["stats", "--socket", sock.to_str().unwrap(), "--reload"]),
        "no reason given",
    );
}

#[test]
fn shape_never_removes_a_file_that_is_not_a_socket() {
    let dir = scratch("socket");
    let file = dir.join("precious.txt");
    std::fs::write(&file, "keep me").unwrap();
    let out = eiffel(&[
        "shape",
        "--policy",
        "examples/policies/live-uplink.toml",
        "--in",
        "no-such-if0",
        "--out",
        "no-such-if1",
        "--socket",
        file.to_str().unwrap(),
    ]);
    fails_with(&out, "exists and is not a socket");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");
}

#[test]
fn run_refuses_bad_plots_huge_runs_and_a_zero_link_before_running() {
    fails_with(&eiffel(&["run", "--plot", "rates.png"]), "--plot rates.png");
    fails_with(
        &eiffel(&["run", "--plot", "/no/such/dir/rates.svg"]),
        "the directory /no/such/dir does not exist",
    );
    fails_with(
        &eiffel(&["run", "--duration", "100000s"]),
        "above --max-events",
    );
    fails_with(&eiffel(&["run", "--link-rate", "0bit"]), "--link-rate");
    fails_with(
        &eiffel(&["run", "--max-memory", "1MiB"]),
        "above the limit of 1 MiB (--max-memory)",
    );
}

#[test]
fn check_names_the_key_of_hostile_names() {
    let dir = scratch("names");
    for code in ["200B", "0000", "007F", "00AD", "FEFF"] {
        let file = dir.join(format!("{code}.toml"));
        std::fs::write(
            &file,
            format!("[[node]]\nname = \"root\"\ndiscipline = \"wfq\"\n[[node]]\nname = \"a\\u{code}\"\nparent = \"root\"\n"),
        )
        .unwrap();
        fails_with(
            &eiffel(&["check", file.to_str().unwrap()]),
            &format!("5:8: key `node[1].name`: a node name may contain only letters, digits and `-_.:+@#`; it contains U+{code}"),
        );
    }
}

#[test]
fn shape_refuses_a_root_limit_the_data_path_would_refuse_before_opening_interfaces() {
    let dir = scratch("link");
    let policy = dir.join("slow.toml");
    std::fs::write(&policy, "[[node]]\nname = \"root\"\nlimit = \"500bit\"\n").unwrap();
    let out = eiffel(&[
        "shape",
        "--policy",
        policy.to_str().unwrap(),
        "--in",
        "no-such-if0",
        "--out",
        "no-such-if1",
        "--socket",
        dir.join("s.sock").to_str().unwrap(),
    ]);
    fails_with(&out, "the root's `limit`");
    fails_with(&out, "outside what the live data path runs");
}
