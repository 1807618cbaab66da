//! PSPAT Fig. 9, 10: scheduling decisions per second against the number of greedy
//! clients, 60-byte packets, a no-op transmit and a link fast enough never to
//! limit (500 Gbit/s); PSPAT per packet, PSPAT with decision aggregation, and the
//! locked baseline, each repeated and summarised by median and spread.
//!
//! The repetitions of the architectures are interleaved, so a change of the
//! machine during a point (another process, the host) shows as spread in all of
//! them rather than as a difference between them. The cross-CPU round trip is
//! measured before each repetition and reported with the point (see
//! [`crate::probe`]).

use super::{
    locked_greedy, pin, pspat_config, pspat_greedy, warn_placement, BenchSched, Placement,
    PspatOpts, Record, Timing, AGGREGATE_MAX_BYTES,
};
use crate::probe::round_trip_ns;
use crate::report::{fmt_f, Table};
use crate::summary::Summary;
use crate::BenchError;
use eiffel_pspat::{Aggregation, Dispatch, LiveStats, Locked, NoopSink, Pspat, ShutdownMode};
use eiffel_sched::{FlowId, Packet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

/// Link rate: never the limit.
const LINK_BPS: u64 = 500_000_000_000;

/// One run of PSPAT: decisions and packets per second, and the arbiter's counters
/// over the window.
#[derive(Debug, Clone, Copy)]
struct PspatRun {
    mdps: f64,
    mpps: f64,
    delta: Delta,
}

/// Differences of the arbiter's counters over a window.
#[derive(Debug, Clone, Copy, Default)]
struct Delta {
    secs: f64,
    rounds: u64,
    busy_ns: u64,
    empty_rounds: u64,
    visits: u64,
    empty_visits: u64,
    full_visits: u64,
    received: u64,
    decisions: u64,
    released: u64,
    sleeps: u64,
    wakeups: u64,
}

impl Delta {
    fn between(a: &LiveStats, b: &LiveStats, secs: f64) -> Self {
        Delta {
            secs,
            rounds: b.rounds - a.rounds,
            busy_ns: b.busy_ns - a.busy_ns,
            empty_rounds: b.empty_rounds - a.empty_rounds,
            visits: b.visits - a.visits,
            empty_visits: b.empty_visits - a.empty_visits,
            full_visits: b.full_visits - a.full_visits,
            received: b.received - a.received,
            decisions: b.decisions - a.decisions,
            released: b.released - a.released,
            sleeps: b.sleeps - a.sleeps,
            wakeups: (b.notified_wakeups + b.timer_wakeups)
                - (a.notified_wakeups + a.timer_wakeups),
        }
    }

    /// One line of arbiter diagnostics.
    fn describe(&self) -> String {
        let rounds = self.rounds.max(1) as f64;
        let visits = self.visits.max(1) as f64;
        let filled = (self.visits - self.empty_visits).max(1) as f64;
        format!(
            "busy {:.0}%, {:.0} ns/round, {:.1} pkts/round, {:.1} ns/pkt busy, empty rounds {:.0}%, \
             {:.2} visits/round, {:.1} pkts/non-empty visit, full visits {:.0}%, sleeps {}, wake-ups {}",
            self.busy_ns as f64 / self.secs / 1e7,
            self.busy_ns as f64 / rounds,
            self.released as f64 / rounds,
            self.busy_ns as f64 / self.released.max(1) as f64,
            self.empty_rounds as f64 / rounds * 100.0,
            visits / rounds,
            self.received as f64 / filled,
            self.full_visits as f64 / visits * 100.0,
            self.sleeps,
            self.wakeups,
        )
    }
}

/// Everything measured at one client count.
struct Point {
    clients: usize,
    pspat: Summary,
    aggregated: Option<(Summary, Summary)>,
    /// Locked, one packet per acquisition (the tc architecture).
    locked: Summary,
    /// Locked, a client's whole batch per acquisition.
    locked_batched: Option<Summary>,
    rtt: Option<Summary>,
}

/// Runs the sweep and prints (or records) it.
pub(super) fn throughput<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    clients: &[usize],
    records: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let mut points = Vec::with_capacity(clients.len());
    for &n in clients {
        points.push(measure_point::<S>(opts, place, timing, n)?);
    }
    for p in &points {
        push_records(opts, p, records);
    }
    if !opts.common.json {
        print_table(opts, place, &points)?;
    }
    warn_spreads(&points);
    Ok(())
}

fn measure_point<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    n: usize,
) -> Result<Point, BenchError> {
    let flows: Vec<(FlowId, u32)> = (0..n as u32).map(|f| (f, 1)).collect();
    let mailbox = opts.mailbox.unwrap_or(DEFAULT_MAILBOX);
    let (mut pspat, mut agg_pps, mut agg_dps, mut rtt) = (vec![], vec![], vec![], vec![]);
    let (mut locked, mut locked_batched) = (vec![], vec![]);
    for rep in 0..opts.repeat.unwrap_or(1) {
        if let Some(r) = round_trip_ns(place.arbiter_cpu, place.client_cpu, 200) {
            rtt.push(r);
        }
        let run = run_pspat::<S>(opts, place, timing, &flows, None)?;
        diagnose(opts, n, rep, "pspat", &run);
        pspat.push(run.mdps);
        if opts.aggregate_ns > 0 {
            let aggregation = Aggregation {
                window: Duration::from_nanos(opts.aggregate_ns),
                max_bytes: AGGREGATE_MAX_BYTES,
            };
            let run = run_pspat::<S>(opts, place, timing, &flows, Some(aggregation))?;
            diagnose(opts, n, rep, "aggregated", &run);
            agg_pps.push(run.mpps);
            agg_dps.push(run.mdps);
        }
        locked.push(run_locked::<S>(place, timing, &flows, 1, mailbox)?);
        if opts.batch > 1 {
            locked_batched.push(run_locked::<S>(place, timing, &flows, opts.batch, mailbox)?);
        }
    }
    Ok(Point {
        clients: n,
        pspat: Summary::of(&pspat),
        aggregated: (!agg_pps.is_empty()).then(|| (Summary::of(&agg_pps), Summary::of(&agg_dps))),
        locked: Summary::of(&locked),
        locked_batched: (!locked_batched.is_empty()).then(|| Summary::of(&locked_batched)),
        rtt: (!rtt.is_empty()).then(|| Summary::of(&rtt)),
    })
}

fn diagnose(opts: &PspatOpts, n: usize, rep: usize, arch: &str, run: &PspatRun) {
    if opts.diagnose {
        eprintln!(
            "{n} clients, run {rep}, {arch}: {:.2} Mdps, {:.2} Mpps; arbiter {}",
            run.mdps,
            run.mpps,
            run.delta.describe()
        );
    }
}

/// PSPAT: arbiter on its CPU, clients on the other.
fn run_pspat<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    aggregate: Option<Aggregation>,
) -> Result<PspatRun, BenchError> {
    let mailbox = opts.mailbox.unwrap_or(DEFAULT_MAILBOX);
    let mut cfg = pspat_config(opts, place, flows.len(), LINK_BPS, mailbox);
    cfg.aggregate = aggregate;
    let rt = Pspat::start(
        cfg,
        S::build(flows, mailbox + 2)?,
        Dispatch::Inline(NoopSink),
    )?;
    warn_placement(&rt);
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    let delta = thread::scope(|s| -> Result<Delta, BenchError> {
        for &(f, _) in flows {
            let client = rt.client()?;
            let (stop, warned) = (&stop, &warned);
            s.spawn(move || {
                pin(place.client_cpu, warned);
                pspat_greedy(client, Packet::new(f, 60), opts.batch, stop);
            });
        }
        thread::sleep(timing.warmup);
        let (s0, t0) = (rt.stats(), Instant::now());
        thread::sleep(timing.window);
        let (s1, t1) = (rt.stats(), Instant::now());
        stop.store(true, Ordering::Relaxed);
        Ok(Delta::between(&s0, &s1, (t1 - t0).as_secs_f64()))
    })?;
    rt.shutdown(ShutdownMode::Discard);
    Ok(PspatRun {
        mdps: delta.decisions as f64 / delta.secs / 1e6,
        mpps: delta.released as f64 / delta.secs / 1e6,
        delta,
    })
}

/// Packets each client mailbox holds in this case unless `--mailbox` says.
pub(super) const DEFAULT_MAILBOX: usize = 254;

/// Locked: every client runs the scheduler, `batch` packets per acquisition;
/// spread over all CPUs.
fn run_locked<S: BenchSched>(
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    batch: usize,
    mailbox: usize,
) -> Result<f64, BenchError> {
    let locked = Locked::new(S::build(flows, mailbox + 2)?, NoopSink, LINK_BPS)?;
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    let mdps = thread::scope(|s| {
        for (i, &(f, _)) in flows.iter().enumerate() {
            let (stop, warned, locked) = (&stop, &warned, &locked);
            s.spawn(move || {
                pin(i % place.cpus, warned);
                locked_greedy(locked, Packet::new(f, 60), batch, stop);
            });
        }
        thread::sleep(timing.warmup);
        let (d0, t0) = (locked.stats().decisions, Instant::now());
        thread::sleep(timing.window);
        let (d1, t1) = (locked.stats().decisions, Instant::now());
        stop.store(true, Ordering::Relaxed);
        (d1 - d0) as f64 / (t1 - t0).as_secs_f64() / 1e6
    });
    drop(locked.shutdown(ShutdownMode::Discard));
    Ok(mdps)
}

fn push_records(opts: &PspatOpts, p: &Point, records: &mut Vec<Record>) {
    let mut push = |arch: &'static str, s: &Summary, mpps: Option<&Summary>| {
        let mut r = Record::new("throughput", arch, p.clients, opts.sched);
        r.mdps = Some(s.median);
        r.spread_pct = Some(s.spread * 100.0);
        r.runs = Some(s.runs.clone());
        r.mpps = mpps.map(|m| m.median);
        r.rtt_ns = p.rtt.as_ref().map(|r| r.median);
        r.link_gbps = Some(LINK_BPS as f64 / 1e9);
        records.push(r);
    };
    push("pspat", &p.pspat, Some(&p.pspat));
    if let Some((pps, dps)) = &p.aggregated {
        push("pspat-aggregated", dps, Some(pps));
    }
    push("locked", &p.locked, None);
    if let Some(b) = &p.locked_batched {
        push("locked-batched", b, None);
    }
}

fn print_table(opts: &PspatOpts, place: Placement, points: &[Point]) -> std::io::Result<()> {
    crate::outln!(
        "Throughput (PSPAT Fig. 9, 10): {} scheduler, 60-byte packets sent {} at a time, \
         no-op transmit, link 500 Gbit/s; arbiter on cpu {}, PSPAT clients on cpu {}, locked \
         clients on all {} cpus; median of {} runs and spread (max-min)/median",
        opts.sched.name(),
        opts.batch,
        place.arbiter_cpu,
        place.client_cpu,
        place.cpus,
        opts.repeat.unwrap_or(1)
    );
    let mut table = Table::new([
        "clients",
        "pspat Mdps",
        "±",
        "aggr Mpps",
        "±",
        "aggr Mdps",
        "locked Mdps",
        "±",
        "batched",
        "±",
        "pspat/locked",
        "rtt ns",
    ]);
    for p in points {
        let (agg_pps, agg_spread, agg_dps) = match &p.aggregated {
            Some((pps, dps)) => (
                fmt_f(pps.median, 1),
                pps.spread_cell(),
                fmt_f(dps.median, 2),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        table.row([
            p.clients.to_string(),
            fmt_f(p.pspat.median, 2),
            p.pspat.spread_cell(),
            agg_pps,
            agg_spread,
            agg_dps,
            fmt_f(p.locked.median, 2),
            p.locked.spread_cell(),
            p.locked_batched
                .as_ref()
                .map_or("-".into(), |b| fmt_f(b.median, 2)),
            p.locked_batched
                .as_ref()
                .map_or("-".into(), Summary::spread_cell),
            fmt_f(p.pspat.median / p.locked.median, 2),
            p.rtt
                .as_ref()
                .map_or("-".into(), |r| format!("{:.0}", r.median)),
        ]);
    }
    crate::out!("{}", table.render());
    if let (Some(first), Some(last)) = (points.first(), points.last()) {
        crate::outln!(
            "from {} to {} clients: PSPAT {:+.0}%, locked {:+.0}%",
            first.clients,
            last.clients,
            (last.pspat.median / first.pspat.median - 1.0) * 100.0,
            (last.locked.median / first.locked.median - 1.0) * 100.0
        );
    }
    crate::outln!(
        "(aggr: decision aggregation over {} ns of link time, packets and decisions per second; \
         locked: one packet per acquisition of the lock, as tc; batched: {} per acquisition; \
         rtt: cross-cpu cache-line round trip between the arbiter's and the clients' cpus)",
        opts.aggregate_ns,
        opts.batch
    );
    crate::outln!();
    Ok(())
}

/// Warns on stderr for every summary whose runs disagree by more than 10%.
fn warn_spreads(points: &[Point]) {
    for p in points {
        let mut parts = vec![("pspat", &p.pspat), ("locked", &p.locked)];
        if let Some(b) = &p.locked_batched {
            parts.push(("locked batched", b));
        }
        if let Some((pps, _)) = &p.aggregated {
            parts.push(("pspat aggregated", pps));
        }
        for (arch, s) in parts {
            if s.too_wide() {
                eprintln!(
                    "warning: {} clients, {arch}: runs spread {:.0}% (> 10%): {:.2} to {:.2}{}",
                    p.clients,
                    s.spread * 100.0,
                    s.min,
                    s.max,
                    p.rtt.as_ref().map_or(String::new(), |r| format!(
                        "; cross-cpu round trip {:.0} to {:.0} ns",
                        r.min, r.max
                    ))
                );
            }
        }
    }
}
