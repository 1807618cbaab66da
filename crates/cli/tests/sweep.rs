//! The hostile-input sweep: example policy, workload and scenario files with
//! their numbers and strings replaced by extreme values, and files broken as a
//! whole (truncated, binary, duplicated, deep, huge), through `eiffel check`,
//! `eiffel run` and `eiffel sim`. Every run ends within its time limit with
//! status 0 or a clear error (status 1), never a panic (101), an abort (134) or
//! a hang.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const EIFFEL: &str = env!("CARGO_BIN_EXE_eiffel");
const ROOT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
/// Past this a run counts as hung (the measure; runs here take
/// milliseconds to a second).
const LIMIT: Duration = Duration::from_secs(20);

/// Integers that break ranges, signs and widths.
const INTS: [&str; 5] = [
    "0",
    "-1",
    "4294967295",
    "9223372036854775807",
    "18446744073709551616",
];
/// Strings that break quantities, names and expressions.
const STRINGS: [&str; 6] = [
    "",
    "\\u0000\\u200B\\uFEFF",
    "99999999999999999999Tbit",
    "1e308s",
    "-5ms",
    "((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))",
];

/// What one run ended with.
#[derive(Debug)]
enum End {
    Status(Option<i32>),
    Hung,
}

/// Runs `eiffel args`, killed after [`LIMIT`].
fn run(args: &[&str]) -> (End, String) {
    let mut child = Command::new(EIFFEL)
        .args(args)
        .current_dir(ROOT)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("eiffel runs");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut err);
            }
            return (End::Status(status.code()), err);
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            return (End::Hung, String::new());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Variants of `text`: each of its first `per_kind` integer values and quoted
/// string values replaced by every hostile value.
fn mutations(text: &str, per_kind: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut ints = 0;
    let mut strings = 0;
    for (i, line) in text.lines().enumerate() {
        let Some((key, value)) = line.split_once(" = ") else {
            continue;
        };
        if key.trim_start().starts_with('#') {
            continue;
        }
        let value = value.trim();
        let hostile: &[&str] = if value.parse::<i64>().is_ok() && ints < per_kind {
            ints += 1;
            &INTS
        } else if value.starts_with('"') && value.ends_with('"') && strings < per_kind {
            strings += 1;
            &STRINGS
        } else {
            continue;
        };
        for h in hostile {
            let new = if value.starts_with('"') {
                format!("{key} = \"{h}\"")
            } else {
                format!("{key} = {h}")
            };
            let lines: Vec<&str> = text.lines().collect();
            let mut t = lines[..i].join("\n");
            t.push('\n');
            t.push_str(&new);
            t.push('\n');
            t.push_str(&lines[i + 1..].join("\n"));
            out.push(t);
        }
    }
    out
}

/// Files broken as a whole, from `text`.
fn breakages(text: &str) -> Vec<String> {
    let half = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    vec![
        String::new(),
        text[..half].to_string(),
        format!("{text}\n{text}"),
        format!("\u{FEFF}{text}"),
        text.replace('\n', "\r\n"),
        "\u{0}\u{1}\u{2}garbage\u{7F}".repeat(100),
        format!("x = {}1{}\n{text}", "[".repeat(5000), "]".repeat(5000)),
        format!("{text}\n[[node]]\nname = \"{}\"\n", "n".repeat(1 << 20)),
    ]
}

/// Writes each text as a file under `dir`; their paths.
fn write_all(dir: &Path, stem: &str, texts: &[String]) -> Vec<PathBuf> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let p = dir.join(format!("{stem}-{i}.toml"));
            std::fs::write(&p, t).unwrap();
            p
        })
        .collect()
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("sweep-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs every command line and reports the ones that panicked, aborted or
/// hung, with the total.
fn sweep(runs: &[Vec<String>]) {
    let mut bad = Vec::new();
    let (mut ok, mut refused) = (0, 0);
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (end, err) = run(&args);
        match end {
            End::Status(Some(0)) if !err.contains("panicked") => ok += 1,
            End::Status(Some(1)) if !err.contains("panicked") && err.starts_with("eiffel") => {
                refused += 1;
            }
            other => bad.push(format!("{args:?}: {other:?}: {}", err.trim())),
        }
    }
    eprintln!(
        "{} runs: {ok} ran, {refused} refused with an error",
        runs.len()
    );
    assert!(
        bad.is_empty(),
        "{} of {} runs failed:\n{}",
        bad.len(),
        runs.len(),
        bad.join("\n")
    );
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap()
}

fn owned(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn hostile_policies_through_check_and_run() {
    let dir = scratch("policy");
    let mut runs = Vec::new();
    for base in ["fig6", "hclock", "wfq-expr", "cq-edf", "tenants"] {
        let text = read(&format!("examples/policies/{base}.toml"));
        let mut texts = mutations(&text, 5);
        texts.extend(breakages(&text));
        for p in write_all(&dir, base, &texts) {
            let p = p.to_str().unwrap().to_string();
            runs.push(owned(&["check", &p]));
            let workload = format!("examples/workloads/{base}.toml");
            let workload = if Path::new(ROOT).join(&workload).exists() {
                workload
            } else {
                "examples/workloads/wfq.toml".to_string()
            };
            runs.push(owned(&[
                "run",
                &p,
                "--workload",
                &workload,
                "--duration",
                "20ms",
                "--max-events",
                "2000000",
            ]));
        }
    }
    sweep(&runs);
}

#[test]
fn hostile_workloads_through_run() {
    let dir = scratch("workload");
    let mut runs = Vec::new();
    for base in ["fig6", "hclock", "pfabric", "cq-policer"] {
        let text = read(&format!("examples/workloads/{base}.toml"));
        let mut texts = mutations(&text, 5);
        texts.extend(breakages(&text));
        for w in write_all(&dir, base, &texts) {
            let policy = format!("examples/policies/{base}.toml");
            runs.push(owned(&[
                "run",
                &policy,
                "--workload",
                w.to_str().unwrap(),
                "--max-events",
                "2000000",
            ]));
        }
    }
    sweep(&runs);
}

#[test]
fn hostile_scenarios_through_sim() {
    let dir = scratch("scenario");
    // The policy file the scenario names, next to the variants.
    std::fs::create_dir_all(dir.join("policies")).unwrap();
    std::fs::write(
        dir.join("policies/qfq-routers.toml"),
        read("examples/scenarios/policies/qfq-routers.toml"),
    )
    .unwrap();
    let text = read("examples/scenarios/qfq-delay.toml");
    let mut texts = mutations(&text, 4);
    texts.extend(breakages(&text));
    let runs: Vec<Vec<String>> = write_all(&dir, "qfq-delay", &texts)
        .iter()
        .map(|p| {
            owned(&[
                "sim",
                "--quick",
                "--jobs",
                "1",
                "--scheme",
                "drr",
                "--max-memory",
                "1GiB",
                p.to_str().unwrap(),
            ])
        })
        .collect();
    sweep(&runs);
}
