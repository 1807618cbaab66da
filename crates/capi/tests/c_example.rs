//! The C example compiled against the generated header and linked against the
//! static and the shared library, then run on the live-uplink example policy.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The directory holding the libraries cargo built for this test: the test
/// binary's own (`target/<profile>/deps`).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    exe.parent().expect("target/<profile>/deps").to_path_buf()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Compiles the example with `link` arguments into `out`.
fn compile(out: &Path, link: &[&str]) {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let status = Command::new(&cc)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O2",
            "-I",
            env!("OUT_DIR"),
        ])
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/shape.c"))
        .args(link)
        .arg("-o")
        .arg(out)
        .status()
        .unwrap_or_else(|e| {
            panic!("{cc} cannot run ({e}): install a C compiler (scripts/setup.d/capi.sh)")
        });
    assert!(status.success(), "{cc} failed on examples/shape.c");
}

fn run(exe: &Path) -> String {
    let out = Command::new(exe)
        .arg("examples/policies/live-uplink.toml")
        .current_dir(root())
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .expect("example runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// What the example printed is what the policy does: voice (30 Mbit/s
/// offered) capped at 10 with its queue overflowing, the tenants (80 each)
/// share the rest 3:1, nothing lost.
fn check(text: &str) {
    assert!(text.contains("every packet accounted for"), "{text}");
    assert!(
        text.contains("a missing file is an error: no/such/policy.toml"),
        "{text}"
    );
    let sent = |node: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("node {node} ")))
            .expect(node);
        line.split_whitespace()
            .nth(5)
            .and_then(|b| b.parse().ok())
            .expect("bytes")
    };
    let mbps = |node| sent(node) * 8.0 / 0.1 / 1e6;
    let voice = mbps("root/voice");
    let (a, b) = (mbps("root/tenants/tenant_a"), mbps("root/tenants/tenant_b"));
    assert!(
        (8.0..=10.9).contains(&voice),
        "voice {voice} Mbit/s\n{text}"
    );
    assert!((a / b - 3.0).abs() < 0.5, "tenants {a} : {b}\n{text}");
    assert!(
        text.contains("root/voice") && text.contains("leaf_full"),
        "{text}"
    );
}

#[test]
fn the_c_example_runs_against_the_static_and_the_shared_library() {
    let dir = lib_dir();
    let static_lib = dir.join("libeiffel_capi.a");
    assert!(static_lib.is_file(), "{} missing", static_lib.display());
    let tmp = std::env::temp_dir().join(format!("eiffel-capi-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).expect("tmp");

    let exe = tmp.join("shape-static");
    compile(
        &exe,
        &[
            static_lib.to_str().expect("utf-8 path"),
            "-lpthread",
            "-ldl",
            "-lm",
        ],
    );
    let text = run(&exe);
    check(&text);

    let exe = tmp.join("shape-shared");
    let l = format!("-L{}", dir.display());
    compile(&exe, &[&l, "-leiffel_capi"]);
    assert_eq!(run(&exe), text, "same run through the shared library");
    std::fs::remove_dir_all(&tmp).ok();
}
