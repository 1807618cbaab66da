//! A reader that closes standard output early (`eiffel run --json | head -1`) ends
//! the command quietly by `SIGPIPE` (status 141 in a shell): no panic message and
//! not the panic's status 101.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

const EIFFEL: &str = env!("CARGO_BIN_EXE_eiffel");

/// Runs `eiffel args` with a standard output whose reader is already closed, so its
/// first write fails with `EPIPE` (a connected stream socket behaves as a pipe here:
/// a write after the peer closed raises `SIGPIPE`).
#[track_caller]
fn ends_quietly(args: &[&str]) {
    let (reader, writer) = UnixStream::pair().expect("a socket pair");
    drop(reader);
    let writer = OwnedFd::from(writer);
    let out = Command::new(EIFFEL)
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .expect("eiffel runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.is_empty(), "{args:?} wrote to stderr: {err}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{args:?}: {err}");
}

#[test]
fn run_json_into_a_closed_pipe() {
    ends_quietly(&["run", "--json"]);
}

#[test]
fn run_table_into_a_closed_pipe() {
    ends_quietly(&["run"]);
}

#[test]
fn check_into_a_closed_pipe() {
    ends_quietly(&["check", "examples/policies/fig6.toml"]);
}

/// Runs `eiffel args` as [`ends_quietly`] does, for the commands that keep
/// `SIGPIPE` ignored (they also write to sockets): the closed pipe ends them with
/// status 0, without a panic. `stderr` may hold the command's own warnings.
#[track_caller]
fn exits_cleanly(args: &[&str]) {
    let (reader, writer) = UnixStream::pair().expect("a socket pair");
    drop(reader);
    let out = Command::new(EIFFEL)
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdin(Stdio::null())
        .stdout(OwnedFd::from(writer))
        .stderr(Stdio::piped())
        .output()
        .expect("eiffel runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(
        !err.contains("eiffel:"),
        "{args:?} reported an error: {err}"
    );
    assert_eq!(out.status.code(), Some(0), "{args:?}: {err}");
}

#[test]
fn sim_into_a_closed_pipe() {
    ends_quietly(&[
        "sim",
        "--quick",
        "--scheme",
        "drr",
        "examples/scenarios/qfq-delay.toml",
    ]);
}

#[test]
fn bench_table_and_json_into_a_closed_pipe() {
    exits_cleanly(&["bench", "cq", "--quick"]);
    exits_cleanly(&["bench", "cq", "--quick", "--json"]);
}

#[test]
fn stats_into_a_closed_pipe() {
    use std::io::{BufRead, BufReader, Write};
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("pipe-stats");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fake.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    std::thread::spawn(move || {
        for mut s in listener.incoming().flatten() {
            let mut line = String::new();
            let _ = BufReader::new(&s).read_line(&mut line);
            let answer = r#"{"ok": true, "moved": 3, "to_default": 1, "dropped": 0, "link_rate_bps": 1000000}"#;
            let _ = s.write_all(answer.as_bytes());
        }
    });
    let sock = path.to_str().unwrap();
    exits_cleanly(&["stats", "--socket", sock, "--reload"]);
    exits_cleanly(&["stats", "--socket", sock, "--reload", "--json"]);
}
