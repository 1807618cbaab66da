//! `eiffel bench netsim`: how fast the network simulator runs, in events per
//! second on one core, with its event list on its timing wheel against the
//! same simulator on `std`'s binary heap, and with its specialised port queues
//! against the policy trees they stand for, in the same invocation.
//!
//! - Whole runs: `examples/scenarios/eiffel-fig15.toml` (144 hosts, 9 leaves, 4
//!   spines) at load 0.6 for the `pfabric` scheme (a per-flow pFabric leaf at
//!   every port) and `dctcp` (a FIFO leaf, ECN): 2000 web search flows (400
//!   with `--quick`), each run three times per configuration, the fastest kept
//!   (other work on the machine only ever adds time); times are the thread's
//!   CPU time, so waiting for a core on a shared machine is not counted. The
//!   configurations: the timing wheel with the specialised port queues (the
//!   default), the binary heap with them, and the timing wheel with a policy
//!   tree at every port. All pop the same events in the same order (checked:
//!   equal results), so each ratio is one part's share of the cost.
//! - The event list alone (hold model): with `n` events pending, pop the
//!   earliest and push one at a random offset (90% within 5 us, the hops of a
//!   fabric; 10% within 1 ms, timers and arrivals), `n` = 1000, 10 000 and
//!   100 000; nanoseconds per pop-and-push pair.

use std::hint::black_box;
use std::path::PathBuf;

use eiffel_netsim::event::{Event, EventKind, EventQueue, HeapQueue, WheelQueue};
use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::setup::QueueForm;
use eiffel_netsim::sim::RunResult;
use eiffel_netsim::sweep::{run_one_as, RunKey};
use eiffel_netsim::time::{Duration, Time};
use eiffel_netsim::workload::{generate, Traffic, Workload};
use serde::Serialize;

use crate::clock::CpuInstant;
use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

const REPS: usize = 3;

/// Seconds of this thread's CPU time `f` takes ([`crate::clock`]): on a shared
/// machine, time spent waiting for a core is not counted.
fn timed(f: impl FnOnce()) -> f64 {
    let t0 = CpuInstant::now();
    f();
    t0.elapsed().as_secs_f64()
}

/// One measured configuration.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `run` (a whole simulation) or `hold` (the event list alone).
    case: &'static str,
    /// The scheme (`run`) or the number of pending events (`hold`).
    config: String,
    /// `timing-wheel` or `binary-heap`.
    queue: &'static str,
    /// Runs: `specialised` (a FIFO or pFabric queue equal to the port's
    /// tree, the default) or `policy-tree`; hold: `-`.
    ports: &'static str,
    /// Events processed (runs) or pop-push pairs (hold).
    events: u64,
    /// Seconds of the fastest repetition.
    seconds: f64,
    /// Millions of events per second (hold: pairs per second).
    mevents_per_s: f64,
    /// Events per second over those of the binary heap with the
    /// specialised queues (1 for that row).
    ratio: f64,
}

fn scenario_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenarios/eiffel-fig15.toml")
}

/// The fastest of [`REPS`] runs, and the run's result.
fn time_runs<Q: EventQueue>(
    s: &Scenario,
    key: &RunKey,
    w: &eiffel_netsim::workload::Workload,
    form: QueueForm,
) -> (RunResult, f64) {
    let mut best = f64::INFINITY;
    let mut result = None;
    for _ in 0..REPS {
        let secs = timed(|| {
            let r = run_one_as::<Q>(s, key, w, false, form, |_, _| {});
            result = Some(black_box(r));
        });
        best = best.min(secs);
    }
    (result.expect("at least one repetition"), best)
}

fn hold<Q: EventQueue>(pending: usize, pairs: u64) -> f64 {
    let mut q = Q::with_capacity(pending + 16, Duration::from_micros(8));
    let mut x = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let offset = |r: u64| {
        if r % 10 == 0 {
            r % 1_000_000
        } else {
            r % 5_000
        }
    };
    for i in 0..pending {
        q.push(
            Time::ZERO,
            Time(offset(next())),
            Event::new(EventKind::Arrive, i as u32, 0),
        );
    }
    let mut best = f64::INFINITY;
    for _ in 0..REPS {
        let secs = timed(|| {
            for _ in 0..pairs {
                let (now, ev) = q.pop().expect("the hold model keeps n events");
                q.push(now, now + Duration::from_nanos(offset(next())), ev);
            }
        });
        best = best.min(secs);
    }
    black_box(q.len());
    best
}

/// Whole runs of `scheme` with each event list.
fn runs(
    scenario: &Scenario,
    name: &str,
    w: &Workload,
    load: f64,
) -> Result<Vec<Record>, BenchError> {
    let scheme = scenario
        .schemes
        .iter()
        .position(|s| s.name == name)
        .ok_or_else(|| format!("the scenario has no scheme {name}"))?;
    let key = RunKey {
        scheme,
        load,
        load_index: 0,
        seed: 1,
        seed_index: 0,
    };
    let (rw, tw) = time_runs::<WheelQueue>(scenario, &key, w, QueueForm::Fastest);
    let (rh, th) = time_runs::<HeapQueue>(scenario, &key, w, QueueForm::Fastest);
    let (rt, tt) = time_runs::<WheelQueue>(scenario, &key, w, QueueForm::Tree);
    if rw != rh || rw != rt {
        return Err(format!("{name}: the configurations' runs differ").into());
    }
    let events = rw.counters.events as f64;
    let heap = events / th;
    Ok([
        ("timing-wheel", "specialised", tw),
        ("binary-heap", "specialised", th),
        ("timing-wheel", "policy-tree", tt),
    ]
    .into_iter()
    .map(|(queue, ports, secs)| Record {
        case: "run",
        config: name.to_string(),
        queue,
        ports,
        events: rw.counters.events,
        seconds: secs,
        mevents_per_s: events / secs / 1e6,
        ratio: events / secs / heap,
    })
    .collect())
}

/// The event lists alone, hold model.
fn holds(pairs: u64) -> Vec<Record> {
    let mut out = Vec::new();
    for pending in [1_000, 10_000, 100_000] {
        let tw = hold::<WheelQueue>(pending, pairs);
        let th = hold::<HeapQueue>(pending, pairs);
        for (queue, secs, ratio) in [("timing-wheel", tw, th / tw), ("binary-heap", th, 1.0)] {
            out.push(Record {
                case: "hold",
                config: pending.to_string(),
                queue,
                ports: "-",
                events: pairs,
                seconds: secs,
                mevents_per_s: pairs as f64 / secs / 1e6,
                ratio,
            });
        }
    }
    out
}

/// Runs the benchmark.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let path = scenario_path();
    let mut scenario = Scenario::load(&path)?;
    let flows = if opts.quick { 400 } else { 2_000 };
    for t in &mut scenario.traffic {
        if let Traffic::Poisson { flows: f, .. } = t {
            *f = Some(flows);
        }
    }
    let load = 0.6;
    let end = Time::ZERO + scenario.duration;
    let w = generate(&scenario.traffic, &scenario.topology, load, 1, end);
    let mut records = runs(&scenario, "pfabric", &w, load)?;
    records.extend(runs(&scenario, "dctcp", &w, load)?);
    records.extend(holds(if opts.quick { 300_000 } else { 3_000_000 }));
    if opts.json {
        print_results(&records)?;
        return Ok(());
    }
    crate::outln!(
        "eiffel bench netsim: {} at load {load}, {flows} flows, one core; fastest of {REPS}, thread CPU time\n",
        path.file_name().map_or_else(String::new, |f| f.to_string_lossy().into_owned())
    );
    let mut t = Table::new([
        "case",
        "config",
        "event list",
        "port queues",
        "events",
        "seconds",
        "M events/s",
        "vs heap",
    ]);
    for r in &records {
        t.row([
            r.case.to_string(),
            r.config.clone(),
            r.queue.to_string(),
            r.ports.to_string(),
            r.events.to_string(),
            fmt_f(r.seconds, 3),
            fmt_f(r.mevents_per_s, 2),
            format!("{}x", fmt_f(r.ratio, 2)),
        ]);
    }
    crate::out!("{}", t.render());
    Ok(())
}
