//! The QFQ authors' C schedulers on the same BALANCED workload, in the same run.
//!
//! The authors measured QFQ, DRR, WF²Q+ and FIFO with a userland test program
//! (qfq.txt section 7.1; FreeBSD's dummynet ships it as `test_sched` in
//! `sys/netpfil/ipfw/test`) whose controller is the BALANCED pattern: hysteresis
//! between 0 and `20N` queued packets, each packet sent to the least-backlogged
//! flow. That program is not part of Eiffel; `--c-harness PATH` names a build of
//! it, and this module runs it as a child process with the flow set of BALANCED
//! (`-flowsets 1:1000:N`: weight 1, 1000-byte packets, `N` flows) and each
//! algorithm (`-alg null|fifo|rr|qfq|wf2qp`; `null` is its generator alone, as
//! NONE is ours).
//!
//! Time is the child's CPU time (`getrusage(RUSAGE_CHILDREN)` before and after
//! it is waited for), as ours is the thread's. Each measurement runs the program
//! for `c` and for `2c` whole cycles of `20N` enqueues and `20N` dequeues (each
//! iteration of its loop is one operation) and divides the difference by the
//! `20N c` pairs of the extra cycles, which takes out the program's start-up and
//! its first, page-faulting fill. The fastest of [`REPS`] repetitions is kept.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::BenchError;

/// Repetitions of each measurement; the fastest is kept.
pub const REPS: usize = 3;

/// One of the authors' algorithms: our scheduler name and the program's.
#[derive(Clone, Copy, Debug)]
pub struct Alg {
    /// The name in our tables (`none`, `fifo`, `drr`, `qfq`, `wf2q+`).
    pub ours: &'static str,
    /// The program's `-alg` argument.
    pub theirs: &'static str,
}

/// The algorithms measured, in table order.
pub const ALGS: [Alg; 5] = [
    Alg {
        ours: "none",
        theirs: "null",
    },
    Alg {
        ours: "fifo",
        theirs: "fifo",
    },
    Alg {
        ours: "drr",
        theirs: "rr",
    },
    Alg {
        ours: "qfq",
        theirs: "qfq",
    },
    Alg {
        ours: "wf2q+",
        theirs: "wf2qp",
    },
];

/// The CPU time of every child process waited for so far.
#[allow(unsafe_code)]
fn children_cpu() -> Result<Duration, BenchError> {
    // SAFETY: an all-zero `rusage` is a valid value of a plain C struct.
    let mut ru: libc::rusage = unsafe { core::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; the call only writes it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if rc != 0 {
        return Err(format!("getrusage: {}", std::io::Error::last_os_error()).into());
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Runs the program for `cycles` BALANCED cycles of `flows` flows; its CPU time.
fn run_once(path: &Path, alg: Alg, flows: u32, cycles: u64) -> Result<Duration, BenchError> {
    let loops = 40 * u64::from(flows) * cycles;
    let before = children_cpu()?;
    let status = Command::new(path)
        .args(["-flowsets", &format!("1:1000:{flows}")])
        .args(["-alg", alg.theirs])
        .args(["-n", &loops.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !status.success() {
        return Err(format!(
            "{} -alg {} with {flows} flows: {status}",
            path.display(),
            alg.theirs
        )
        .into());
    }
    Ok(children_cpu()? - before)
}

/// Nanoseconds per pair of `alg` with `flows` flows over about `pairs` pairs (at
/// least one cycle), and the pairs timed.
pub fn measure(path: &Path, alg: Alg, flows: u32, pairs: u64) -> Result<(f64, u64), BenchError> {
    let cycle = 20 * u64::from(flows);
    let cycles = (pairs / cycle).max(1);
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let one = run_once(path, alg, flows, cycles)?;
        let two = run_once(path, alg, flows, 2 * cycles)?;
        let extra = two.saturating_sub(one).as_nanos() as f64;
        best = best.min(extra / (cycles * cycle) as f64);
    }
    Ok((best, cycles * cycle * REPS as u64))
}

/// Checks that `path` runs before a sweep starts: a missing or broken program is
/// reported at once, naming it.
pub fn check(path: &Path) -> Result<(), BenchError> {
    run_once(path, ALGS[0], 1, 1)
        .map(|_| ())
        .map_err(|e| format!("--c-harness: {e} (a build of the QFQ authors' test_sched)").into())
}
