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
