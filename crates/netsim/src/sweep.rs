//! Sweeps: every scheme at every load with every seed, in parallel.
//!
//! Workloads are generated once per `(load, seed)` and shared by the schemes.
//! Runs are independent and go to a rayon pool of `jobs` threads (all cores
//! by default); each run is deterministic, and results are collected in run
//! order, so a sweep's report does not depend on the number of threads.
//!
//! Before anything runs, the memory the sweep needs is estimated (the
//! workloads, plus the largest runs that may be in progress at once) and a sweep
//! above the limit is refused with the estimate.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::event::{EventQueue, WheelQueue};
use crate::report::{self, SimReport};
use crate::scenario::Scenario;
use crate::setup::{estimate_memory, simulate_with, QueueForm};
use crate::sim::{RunConfig, RunResult};
use crate::time::Time;
use crate::workload::{generate, Workload};

/// How to run a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SweepOptions {
    /// Runs in parallel (0: one per core).
    pub jobs: usize,
    /// Refuse a sweep expected to need more bytes than this.
    pub max_memory: u64,
    /// Check every packet balance at the end of each run.
    pub check: bool,
}

impl Default for SweepOptions {
    fn default() -> Self {
        SweepOptions {
            jobs: 0,
            max_memory: u64::MAX,
            check: false,
        }
    }
}

/// The default memory limit of a sweep: 80% of the memory available
/// (`MemAvailable` in /proc/meminfo), or no limit where that cannot be read.
#[must_use]
pub fn default_memory_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(u64::MAX, |kb| kb * 1024 / 5 * 4)
}

/// One run of a sweep.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunKey {
    /// Scheme index.
    pub scheme: usize,
    /// Load.
    pub load: f64,
    /// Index of the load.
    pub load_index: usize,
    /// Seed.
    pub seed: u64,
    /// Index of the seed.
    pub seed_index: usize,
}

/// A sweep that cannot run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SweepError {
    /// The estimate is above the limit.
    #[error(
        "the sweep needs about {need} ({jobs} runs in parallel, the largest {largest} each, plus {workloads} of workloads), above the limit of {limit}: run fewer jobs (--jobs), use --quick, or raise --max-memory"
    )]
    Memory {
        /// Estimated total, formatted.
        need: String,
        /// Parallel runs.
        jobs: usize,
        /// Largest single run, formatted.
        largest: String,
        /// Workloads, formatted.
        workloads: String,
        /// The limit, formatted.
        limit: String,
    },
    /// The thread pool could not start.
    #[error("cannot start {0} worker threads")]
    Threads(usize),
}

/// Progress of a sweep, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Runs finished.
    pub done: usize,
    /// Runs in the sweep.
    pub total: usize,
    /// Events processed so far, all runs.
    pub events: u64,
}

/// The runs of `scenario`: schemes within loads within seeds.
#[must_use]
pub fn plan(scenario: &Scenario) -> Vec<RunKey> {
    let mut out = Vec::new();
    for (si, &seed) in scenario.seeds.iter().enumerate() {
        for (li, &load) in scenario.loads.iter().enumerate() {
            for scheme in 0..scenario.schemes.len() {
                out.push(RunKey {
                    scheme,
                    load,
                    load_index: li,
                    seed,
                    seed_index: si,
                });
            }
        }
    }
    out
}

/// Bytes the process holds besides the runs: code and libraries (about 4 MiB
/// resident, measured), and per worker its stack and allocator arena's top.
fn process_memory(jobs: usize) -> u64 {
    (12 + 4 * jobs as u64) << 20
}

/// The sweep's memory estimate in bytes: `(total, largest run, workloads)`.
#[must_use]
pub fn estimate(scenario: &Scenario, workloads: &[Workload], jobs: usize) -> (u64, u64, u64) {
    let wl: u64 = workloads
        .iter()
        .map(|w| (w.flows.len() * std::mem::size_of::<crate::workload::FlowSpec>()) as u64)
        .sum();
    let flows = workloads.iter().map(|w| w.flows.len()).max().unwrap_or(0);
    let mut per: Vec<u64> = scenario
        .schemes
        .iter()
        .map(|s| estimate_memory(&scenario.topology, &scenario.routes, s, flows))
        .collect();
    per.sort_unstable_by(|a, b| b.cmp(a));
    let largest = per.first().copied().unwrap_or(0);
    // Any run may land on any worker, and a worker's allocator arena keeps
    // what its largest run freed: every worker is counted at the largest run.
    let parallel = jobs as u64 * largest;
    // Finished runs keep their results until the report is built.
    let kept = plan(scenario).len().saturating_sub(jobs) as u64
        * crate::setup::result_memory(&scenario.topology, flows);
    (parallel + kept + wl + process_memory(jobs), largest, wl)
}

/// Generates the workload of every `(load, seed)`, seed-major.
#[must_use]
pub fn workloads(scenario: &Scenario) -> Vec<Workload> {
    let end = Time::ZERO + scenario.duration;
    let mut out = Vec::new();
    for &seed in &scenario.seeds {
        for &load in &scenario.loads {
            out.push(generate(
                &scenario.traffic,
                &scenario.topology,
                load,
                seed,
                end,
            ));
        }
    }
    out
}

/// Runs one `key` of `scenario` on `workload`.
#[must_use]
pub fn run_one(
    scenario: &Scenario,
    key: &RunKey,
    workload: &Workload,
    check: bool,
    progress: impl FnMut(u64, Time),
) -> RunResult {
    run_one_with::<WheelQueue>(scenario, key, workload, check, progress)
}

/// [`run_one`] with a chosen event queue (for benchmarks).
#[must_use]
pub fn run_one_with<Q: EventQueue>(
    scenario: &Scenario,
    key: &RunKey,
    workload: &Workload,
    check: bool,
    progress: impl FnMut(u64, Time),
) -> RunResult {
    run_one_as::<Q>(scenario, key, workload, check, QueueForm::Fastest, progress)
}

/// [`run_one_with`] with a chosen form of port queues (the policy trees
/// everywhere, for tests and benchmarks, or specialised queues where
/// equivalent).
#[must_use]
pub fn run_one_as<Q: EventQueue>(
    scenario: &Scenario,
    key: &RunKey,
    workload: &Workload,
    check: bool,
    form: QueueForm,
    progress: impl FnMut(u64, Time),
) -> RunResult {
    let scheme = &scenario.schemes[key.scheme];
    let last = workload.span.max(Time::ZERO + scenario.duration);
    let cfg = RunConfig {
        transport: scheme.transport,
        end: last + scenario.drain,
        measure_from: Time::ZERO + scenario.report.measure_from,
        sample: (!scenario.report.sample_ports.is_empty()).then(|| {
            (
                scenario.report.sample_ports.clone(),
                scenario.report.sample_interval,
            )
        }),
        seed: key.seed,
        check: check || scenario.report.check,
    };
    simulate_with::<Q>(
        &scenario.topology,
        &scenario.routes,
        scheme,
        &scenario.extras,
        workload,
        cfg,
        form,
        progress,
    )
}

/// Runs the whole sweep; `progress` is called from the worker threads.
///
/// # Errors
/// The memory estimate is above `opts.max_memory`, or the pool cannot start.
pub fn run(
    scenario: &Scenario,
    opts: SweepOptions,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<SimReport, SweepError> {
    let keys = plan(scenario);
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    } else {
        opts.jobs
    }
    .min(keys.len().max(1));
    let loads = workloads(scenario);
    let (need, largest, wl) = estimate(scenario, &loads, jobs);
    if need > opts.max_memory {
        let f = report::human_bytes;
        return Err(SweepError::Memory {
            need: f(need),
            jobs,
            largest: f(largest),
            workloads: f(wl),
            limit: f(opts.max_memory),
        });
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|_| SweepError::Threads(jobs))?;
    let done = AtomicUsize::new(0);
    let events = AtomicU64::new(0);
    let total = keys.len();
    let results: Vec<RunResult> = pool.install(|| {
        keys.par_iter()
            .map(|k| {
                let w = &loads[k.seed_index * scenario.loads.len() + k.load_index];
                let mut last = 0;
                let r = run_one(scenario, k, w, opts.check, |ev, _| {
                    events.fetch_add(ev - last, Ordering::Relaxed);
                    last = ev;
                    progress(Progress {
                        done: done.load(Ordering::Relaxed),
                        total,
                        events: events.load(Ordering::Relaxed),
                    });
                });
                let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                progress(Progress {
                    done: d,
                    total,
                    events: events.load(Ordering::Relaxed),
                });
                r
            })
            .collect()
    });
    Ok(report::build(scenario, &keys, &loads, &results))
}
