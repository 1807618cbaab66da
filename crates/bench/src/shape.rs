//! `eiffel bench shape`: forwarding rate and CPU cost of minimum-size frames
//! through the bump in the wire with a policy, against a kernel bridge with HTB
//! classes on the same topology, measured in the same run.
//!
//! Topology (`eiffel_testbed`): sender — middle — receiver namespaces joined
//! by veth pairs. A generator thread in the sender blasts 60-byte UDP frames (64
//! on the wire with the FCS) through its own AF_PACKET transmit ring as fast as it
//! can; a counter thread in the receiver counts those that arrive through its
//! receive ring. The middle is either
//! - **eiffel**: `eiffel shape` (this binary, a separate process) with a policy of
//!   two weighted classes (3:1, the generated frames in the heavier one) and a
//!   10 Gbit/s link, so that the CPU, not a limit, bounds the rate, over
//!   AF_PACKET (`--io af_packet`);
//! - **eiffel-inline**: the same with `--inline-dispatch` (the arbiter transmits,
//!   no dispatcher thread);
//! - **eiffel-xdp** and **eiffel-xdp-inline**: the same two over AF_XDP (`--io
//!   af_xdp`: sockets on one UMEM, frames classified in place, no copy in user
//!   space), when this build has AF_XDP; or
//! - **htb**: a kernel bridge with an HTB root of 10 Gbit/s and the same two
//!   classes (rates 3:1 of it, a `u32` filter on the UDP port).
//!
//! Reported per run: offered and delivered Mpps, and CPU time per delivered frame
//! of the whole pipeline: the generator and counter threads, the middle process
//! (eiffel) and the kernel's softirq threads, each read from
//! `/proc/.../schedstat` so that other processes on the machine do not count. The
//! kernel bridge's work runs inside the generator's transmit calls and the softirq
//! threads, so only the pipeline total compares the two middles; for eiffel the
//! middle process's own CPU per frame is reported as well, with the part of it
//! spent in the kernel (system time from `/proc/PID/task/TID/stat`).
//!
//! On a 2-core machine the generator, the middle and the counter share the cores,
//! so the figures describe the whole pipeline on this host. Needs root.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eiffel_net::shape::Snapshot;
use eiffel_testbed::blast::{count, generate, schedstat, udp_frame, MARK_PORT};
use eiffel_testbed::{missing_prerequisites, Htb, HtbClass, HtbMatch, Role, Testbed, MIDDLE_OUT};
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// The policy `eiffel shape` runs: two classes weighted 3:1, the generated frames
/// in the heavier one.
const POLICY: &str = r#"
capacity = 16384

[[node]]
name = "root"
discipline = "wfq"

[[node]]
name = "bench"
parent = "root"
weight = 3

[[node]]
name = "other"
parent = "root"
weight = 1

[classify]
default = "other"

[[classify.rule]]
leaf = "bench"
protocol = "udp"
dst_port = 9
"#;

/// One measured run.
#[derive(Clone, Debug, Serialize)]
struct Record {
    case: &'static str,
    /// `eiffel`, `eiffel-inline`, `eiffel-xdp`, `eiffel-xdp-inline` or `htb`.
    arch: &'static str,
    run: u32,
    seconds: f64,
    offered_mpps: f64,
    mpps: f64,
    delivered_pct: f64,
    cpu_ns_per_packet: f64,
    middle_cpu_ns_per_packet: Option<f64>,
    /// The part of the middle's CPU spent in the kernel (system time): its
    /// socket calls and the veth work they run in its context.
    middle_kernel_ns_per_packet: Option<f64>,
    frames_delivered: u64,
}

/// CPU nanoseconds of every thread of process `pid`.
fn process_cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .map(|t| schedstat(&t.path().join("schedstat")))
        .sum()
}

/// System (kernel) CPU nanoseconds of every thread of process `pid`, from the
/// `stime` field of `/proc/PID/task/TID/stat` (clock ticks, usually 10 ms).
fn process_kernel_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    // SAFETY: sysconf has no preconditions.
    #[allow(unsafe_code)]
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let ns_per_tick = 1_000_000_000 / u64::try_from(tick).unwrap_or(100).max(1);
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| stime_ticks(&stat))
        .sum::<u64>()
        * ns_per_tick
}

/// Field 15 (`stime`) of a `/proc/.../stat` line. The command name (field 2)
/// may hold spaces and parentheses: fields are counted after its last `)`.
fn stime_ticks(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(12)?.parse().ok()
}

/// The kernel's per-CPU softirq threads.
fn softirq_threads() -> Vec<PathBuf> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(Result::ok)
        .filter(|p| {
            std::fs::read_to_string(p.path().join("comm"))
                .is_ok_and(|c| c.starts_with("ksoftirqd/"))
        })
        .map(|p| p.path().join("schedstat"))
        .collect()
}

fn softirq_cpu_ns(threads: &[PathBuf]) -> u64 {
    threads.iter().map(|p| schedstat(p)).sum()
}

fn htb() -> Htb {
    Htb {
        rate: "10gbit".into(),
        default_minor: 20,
        classes: vec![
            HtbClass {
                minor: 10,
                rate: "7500mbit".into(),
                ceil: None,
                prio: None,
                limit: Some(16384),
                matches: vec![HtbMatch::Protocol(17), HtbMatch::DstPort(MARK_PORT)],
            },
            HtbClass {
                minor: 20,
                rate: "2500mbit".into(),
                ceil: None,
                prio: None,
                limit: Some(16384),
                matches: vec![],
            },
        ],
    }
}

/// A running `eiffel shape` in the middle namespace.
struct Middle {
    bg: eiffel_testbed::Background,
    socket: PathBuf,
}

fn start_eiffel(bed: &Testbed, dir: &Path, arch: &str) -> Result<Middle, BenchError> {
    let policy = dir.join("bench-shape.toml");
    std::fs::write(&policy, POLICY)?;
    let socket = dir.join("bench-shape.sock");
    let exe = std::env::current_exe()?;
    let mut args = vec![
        exe.to_str().ok_or("binary path is not UTF-8")?,
        "shape",
        "--policy",
        policy.to_str().ok_or("temp path is not UTF-8")?,
        "--in",
        "m0",
        "--out",
        "m1",
        "--link-rate",
        "10Gbit",
        "--drain",
        "200ms",
        "--socket",
        socket.to_str().ok_or("temp path is not UTF-8")?,
        "--json",
        "--io",
        if arch.contains("xdp") {
            "af_xdp"
        } else {
            "af_packet"
        },
    ];
    if arch.ends_with("inline") {
        args.push("--inline-dispatch");
    }
    let mut bg = bed.spawn(Role::Middle, &args)?;
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        if bg.has_exited() || Instant::now() > deadline {
            let out = bg.wait(Duration::from_secs(1))?;
            return Err(format!("eiffel shape did not start: {}", out.stderr).into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Middle { bg, socket })
}

fn stop_eiffel(m: Middle) -> Result<Snapshot, BenchError> {
    let pid = m.bg.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()?;
    let out = m.bg.wait(Duration::from_secs(15))?;
    let _ = std::fs::remove_file(&m.socket);
    if !out.status.success() {
        return Err(format!("eiffel shape failed: {}", out.stderr).into());
    }
    Ok(serde_json::from_str(&out.stdout)?)
}

fn measure(arch: &'static str, run: u32, seconds: f64, dir: &Path) -> Result<Record, BenchError> {
    let bed = Testbed::new("eiffel-bshape")?;
    let middle = if arch.starts_with("eiffel") {
        Some(start_eiffel(&bed, dir, arch)?)
    } else {
        bed.bridge_middle()?;
        bed.htb(Role::Middle, MIDDLE_OUT, &htb())?;
        None
    };
    let softirq = softirq_threads();
    let frame = udp_frame(60);
    let stop = AtomicBool::new(false);
    let (bed_ref, stop_ref, frame_ref) = (&bed, &stop, &frame);
    let (generated, counted, elapsed, middle_cpu, softirq_cpu) =
        std::thread::scope(|s| -> Result<_, BenchError> {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel();
            let counter = s.spawn(move || count(bed_ref, ready_tx, stop_ref));
            ready_rx
                .recv_timeout(Duration::from_secs(10))
                .map_err(|_| "the counter did not start")?;
            let middle_before = middle.as_ref().map_or((0, 0), |m| {
                (process_cpu_ns(m.bg.id()), process_kernel_ns(m.bg.id()))
            });
            let soft_before = softirq_cpu_ns(&softirq);
            let start = Instant::now();
            let until = start + Duration::from_secs_f64(seconds);
            let generated = s
                .spawn(move || generate(bed_ref, frame_ref, until))
                .join()
                .map_err(|_| "generator panicked")??;
            let elapsed = start.elapsed().as_secs_f64();
            // Let the middle finish what it holds.
            std::thread::sleep(Duration::from_millis(300));
            let middle_cpu = middle.as_ref().map(|m| {
                (
                    process_cpu_ns(m.bg.id()) - middle_before.0,
                    process_kernel_ns(m.bg.id()) - middle_before.1,
                )
            });
            let softirq_cpu = softirq_cpu_ns(&softirq) - soft_before;
            stop_ref.store(true, Ordering::Relaxed);
            let counted = counter.join().map_err(|_| "counter panicked")??;
            Ok((generated, counted, elapsed, middle_cpu, softirq_cpu))
        })?;
    if let Some(m) = middle {
        let last = stop_eiffel(m)?;
        if !last.accounting.balanced() || last.accounting.queued != 0 {
            return Err(format!("eiffel shape ended unbalanced: {:?}", last.accounting).into());
        }
        eprintln!(
            "run {run} {arch}: received {} (kernel ring drops {}), ingress drops {:?}, scheduler drops {:?}, transmitted {}, arbiter {} rounds {} sleeps",
            last.ingress.received,
            last.ingress.kernel_drops,
            last.ingress.drops,
            last.scheduler.drops,
            last.egress.sent,
            last.scheduler.rounds,
            last.scheduler.sleeps
        );
    }
    let (offered, gen_cpu) = generated;
    let (delivered, count_cpu) = counted;
    let pipeline = gen_cpu + count_cpu + softirq_cpu + middle_cpu.map_or(0, |m| m.0);
    let per = |ns: u64| ns as f64 / delivered.max(1) as f64;
    Ok(Record {
        case: "64B, wfq 3:1",
        arch,
        run,
        seconds: elapsed,
        offered_mpps: offered as f64 / elapsed / 1e6,
        mpps: delivered as f64 / elapsed / 1e6,
        delivered_pct: 100.0 * delivered as f64 / offered.max(1) as f64,
        cpu_ns_per_packet: per(pipeline),
        middle_cpu_ns_per_packet: middle_cpu.map(|m| per(m.0)),
        middle_kernel_ns_per_packet: middle_cpu.map(|m| per(m.1)),
        frames_delivered: delivered,
    })
}

/// The middles measured: AF_PACKET and, when this build has it, AF_XDP, each with
/// a dispatcher thread and inline, and the kernel's bridge with HTB.
fn arches() -> Vec<&'static str> {
    let mut a = vec!["eiffel", "eiffel-inline"];
    if eiffel_net::xdp::available() {
        a.extend(["eiffel-xdp", "eiffel-xdp-inline"]);
    } else {
        eprintln!("note: this build has no AF_XDP (libxdp-dev missing at build time): no xdp rows");
    }
    a.push("htb");
    a
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Runs `eiffel bench shape`.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let missing = missing_prerequisites(&["ip", "tc", "ethtool"]);
    if !missing.is_empty() {
        return Err(format!(
            "bench shape builds network namespaces and needs {}",
            missing.join(", ")
        )
        .into());
    }
    let (runs, seconds) = if opts.quick { (1, 2.0) } else { (3, 5.0) };
    let dir = std::env::temp_dir().join(format!("eiffel-bench-shape-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let mut records = Vec::new();
    let result = (|| -> Result<(), BenchError> {
        for run in 0..runs {
            for &arch in &arches() {
                records.push(measure(arch, run, seconds, &dir)?);
            }
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result?;
    if opts.json {
        print_results(&records)?;
        return Ok(());
    }
    crate::outln!(
        "60 B frames (64 B on the wire), {seconds} s per run, generator, middle and receiver sharing {} cores",
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    );
    let mut t = Table::new([
        "run",
        "middle",
        "offered Mpps",
        "delivered Mpps",
        "delivered",
        "pipeline CPU ns/pkt",
        "middle CPU ns/pkt",
        "of which kernel",
    ]);
    for r in &records {
        t.row([
            r.run.to_string(),
            match r.arch {
                "eiffel" => "eiffel shape (wfq 3:1)",
                "eiffel-inline" => "eiffel shape --inline-dispatch",
                "eiffel-xdp" => "eiffel shape --io af_xdp",
                "eiffel-xdp-inline" => "eiffel shape --io af_xdp --inline-dispatch",
                _ => "bridge + HTB (3:1)",
            }
            .to_string(),
            fmt_f(r.offered_mpps, 3),
            fmt_f(r.mpps, 3),
            format!("{:.1}%", r.delivered_pct),
            fmt_f(r.cpu_ns_per_packet, 0),
            r.middle_cpu_ns_per_packet
                .map_or_else(|| "-".into(), |v| fmt_f(v, 0)),
            r.middle_kernel_ns_per_packet
                .map_or_else(|| "-".into(), |v| fmt_f(v, 0)),
        ]);
    }
    crate::out!("{}", t.render());
    let of = |arch: &str, f: fn(&Record) -> f64| {
        median(records.iter().filter(|r| r.arch == arch).map(f).collect())
    };
    for arch in arches().into_iter().filter(|a| *a != "htb") {
        crate::outln!(
            "{arch} / htb (medians): delivered rate {:.2}, pipeline CPU per packet {:.2}",
            of(arch, |r| r.mpps) / of("htb", |r| r.mpps).max(1e-9),
            of(arch, |r| r.cpu_ns_per_packet) / of("htb", |r| r.cpu_ns_per_packet).max(1e-9),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_has_the_bench_leaf() {
        let policy = eiffel_policy::Policy::parse(POLICY, "bench-shape.toml").unwrap();
        assert!(policy.leaf("bench").is_some());
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
    }

    #[test]
    fn system_time_is_read_after_the_command_name() {
        let stat = "42 (eiffel (rx) 1) R 1 42 42 0 -1 4194560 10 0 0 0 7 13 0 0 20 0 3 0 99";
        assert_eq!(stime_ticks(stat), Some(13));
        assert_eq!(stime_ticks("garbage"), None);
        let own = process_kernel_ns(std::process::id());
        assert!(
            own < 3_600 * 1_000_000_000,
            "system time of this test: {own} ns"
        );
    }
}
