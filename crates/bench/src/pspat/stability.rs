//! PSPAT section 6.5: rate stability under overload. Two greedy clients with
//! weights 10:1 send 60-byte packets above the link rate; the heavy client's share
//! of what each architecture delivers, at several link rates.

use super::{
    locked_greedy, pin, pspat_config, pspat_greedy, warn_placement, BenchSched, Placement,
    PspatOpts, Record, Timing,
};
use crate::report::{fmt_f, Table};
use crate::BenchError;
use eiffel_pspat::{CountingSink, Dispatch, Locked, Pspat, ShutdownMode};
use eiffel_sched::{FlowId, Packet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Instant;

const WEIGHTS: [u32; 2] = [10, 1];

/// Packets delivered to the heavy and the light flow, and the seconds measured.
type Shares = (u64, u64, f64);

pub(super) fn stability<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    records: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let mailbox = opts.mailbox.unwrap_or(4094);
    let expected = f64::from(WEIGHTS[0]) / f64::from(WEIGHTS[0] + WEIGHTS[1]);
    // Link rates in million 60-byte packets per second.
    // NB: both greedy PSPAT clients time-share one core; above about 1 Mpps they
    // cannot keep the heavy client's mailbox full (its 10/11 share outruns what one
    // thread with half a core writes into a cross-core mailbox), so it no longer
    // offers its share and those rows measure the clients, not the arbiter.
    let rates_mpps: &[f64] = if opts.common.quick {
        &[0.5, 1.0]
    } else {
        &[0.25, 0.5, 1.0, 2.0, 4.0]
    };
    let flows: Vec<(FlowId, u32)> = vec![(0, WEIGHTS[0]), (1, WEIGHTS[1])];
    let mut table = Table::new([
        "link Mpps",
        "pspat Mpps",
        "pspat heavy share",
        "locked Mpps",
        "locked heavy share",
    ]);
    for &mpps in rates_mpps {
        let link_bps = (mpps * 1e6 * 60.0 * 8.0) as u64;
        let pspat = shares_pspat::<S>(opts, place, timing, &flows, link_bps, mailbox)?;
        let locked_result = shares_locked::<S>(opts, place, timing, &flows, link_bps, mailbox)?;
        let mut row = vec![fmt_f(mpps, 2)];
        for (arch, (heavy, light, secs)) in [("pspat", pspat), ("locked", locked_result)] {
            let total = heavy + light;
            let share = if total == 0 {
                0.0
            } else {
                heavy as f64 / total as f64
            };
            let delivered = total as f64 / secs / 1e6;
            row.push(fmt_f(delivered, 2));
            row.push(fmt_f(share, 3));
            let mut r = Record::new("stability", arch, 2, opts.sched);
            r.link_gbps = Some(link_bps as f64 / 1e9);
            r.delivered_mpps = Some(delivered);
            r.share_heavy = Some(share);
            r.share_expected = Some(expected);
            r.share_error_pct = Some((share - expected).abs() / expected * 100.0);
            records.push(r);
        }
        table.row(row);
    }
    if !opts.common.json {
        crate::outln!(
            "Stability (PSPAT 6.5): 2 greedy clients, weights 10:1 (heavy share {:.3} expected), \
             60-byte packets, {} scheduler{}",
            expected,
            opts.sched.name(),
            if opts.sched.weighted() {
                ""
            } else {
                " (ignores weights: shares follow arrivals)"
            }
        );
        crate::out!("{}", table.render());
        crate::outln!(
            "(the 2 PSPAT clients share one core: above about 1 Mpps they cannot keep the heavy \
             client's mailbox full, so rows there are client-bound rather than overloaded)"
        );
        crate::outln!();
    }
    Ok(())
}

/// PSPAT with both clients on the clients' CPU.
fn shares_pspat<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    link_bps: u64,
    mailbox: usize,
) -> Result<Shares, BenchError> {
    let sink = CountingSink::new(2);
    let counters = sink.counters();
    let rt = Pspat::start(
        pspat_config(opts, place, 2, link_bps, mailbox),
        S::build(flows, mailbox + 2)?,
        Dispatch::Inline(sink),
    )?;
    warn_placement(&rt);
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    let shares = thread::scope(|s| -> Result<Shares, BenchError> {
        for f in 0..2u32 {
            let client = rt.client()?;
            let (stop, warned) = (&stop, &warned);
            s.spawn(move || {
                pin(place.client_cpu, warned);
                pspat_greedy(client, Packet::new(f, 60), opts.batch, stop);
            });
        }
        let shares = measure_pair(timing, &counters);
        stop.store(true, Ordering::Relaxed);
        Ok(shares)
    })?;
    rt.shutdown(ShutdownMode::Discard);
    Ok(shares)
}

/// The locked baseline, one client on each CPU.
fn shares_locked<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    link_bps: u64,
    mailbox: usize,
) -> Result<Shares, BenchError> {
    let sink = CountingSink::new(2);
    let counters = sink.counters();
    let locked = Locked::new(S::build(flows, mailbox + 2)?, sink, link_bps)?;
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    let shares = thread::scope(|s| {
        for f in 0..2u32 {
            let (stop, warned, locked) = (&stop, &warned, &locked);
            s.spawn(move || {
                pin(f as usize % place.cpus, warned);
                locked_greedy(locked, Packet::new(f, 60), opts.batch, stop);
            });
        }
        let r = measure_pair(timing, &counters);
        stop.store(true, Ordering::Relaxed);
        r
    });
    drop(locked.shutdown(ShutdownMode::Discard));
    Ok(shares)
}

fn measure_pair(timing: Timing, counters: &eiffel_pspat::SinkCounters) -> (u64, u64, f64) {
    thread::sleep(timing.warmup);
    let (h0, l0, t0) = (counters.flow(0), counters.flow(1), Instant::now());
    thread::sleep(timing.window);
    let (h1, l1, t1) = (counters.flow(0), counters.flow(1), Instant::now());
    (h1 - h0, l1 - l0, (t1 - t0).as_secs_f64())
}
