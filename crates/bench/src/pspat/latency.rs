//! PSPAT Table 3, Fig. 11: the one-way latency of a victim client sending 4000
//! packets/s with 50 times the weight of greedy clients, 1500-byte packets on a
//! 10 Gbit/s link; percentiles under PSPAT and behind the lock.

use super::{
    locked_greedy, pin, pspat_config, pspat_greedy, warn_placement, BenchSched, Percentiles,
    Placement, PspatOpts, Record, Timing,
};
use crate::report::{fmt_f, Table};
use crate::BenchError;
use eiffel_pspat::{Clock, Dispatch, Locked, Pspat, SendError, ShutdownMode, Transmit};
use eiffel_sched::{FlowId, Nanos, Packet};
use hdrhistogram::Histogram;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

const LINK_BPS: u64 = 10_000_000_000;

/// Records the one-way latency of one flow's packets: the transmit time minus the
/// arrival the client stamped, both on the runtime's clock.
struct LatencySink {
    flow: FlowId,
    /// Packets that arrived before this time are warm-up and not recorded.
    from: Nanos,
    hist: Histogram<u64>,
}

impl LatencySink {
    fn new(flow: FlowId, from: Nanos) -> Result<Self, BenchError> {
        Ok(LatencySink {
            flow,
            from,
            hist: Histogram::new_with_bounds(1, 60_000_000_000, 3)?,
        })
    }

    fn percentiles(&self) -> Percentiles {
        let us = |ns: u64| ns as f64 / 1e3;
        let h = &self.hist;
        Percentiles {
            samples: h.len(),
            min: us(h.min()),
            p10: us(h.value_at_quantile(0.10)),
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            max: us(h.max()),
        }
    }
}

impl Transmit for LatencySink {
    fn transmit(&mut self, batch: &[Packet], now: Nanos) {
        for p in batch {
            if p.flow == self.flow && p.arrival >= self.from {
                self.hist
                    .saturating_record(now.saturating_sub(p.arrival).max(1));
            }
        }
    }
}

/// Victim rate: 4000 packets per second (PSPAT 6.6).
const VICTIM_PERIOD: Duration = Duration::from_micros(250);

/// The victim: one stamped packet every `VICTIM_PERIOD` until `stop`.
fn victim_loop(mut send: impl FnMut(Packet) -> bool, clock: Clock, stop: &AtomicBool) {
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let pkt = Packet::new(0, 1500).at(clock.now());
        if !send(pkt) {
            return;
        }
        next += VICTIM_PERIOD;
        let now = Instant::now();
        if next > now {
            thread::sleep(next - now);
        } else {
            next = now;
        }
    }
}

/// Table 3 / Fig. 11: a victim (flow 0, weight 50, 4000 packets/s) against
/// `greedy` clients (weight 1), 1500-byte packets on a 10 Gbit/s link.
pub(super) fn latency<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    records: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let mailbox = opts.mailbox.unwrap_or(1022);
    let greedy_counts: &[usize] = if opts.common.quick {
        &[0, 4]
    } else {
        &[0, 4, 16, 64]
    };
    let mut table = Table::new([
        "clients", "arch", "samples", "min", "p10", "p50", "p90", "p99", "max",
    ]);
    for &greedy in greedy_counts {
        let n = greedy + 1;
        let mut flows = vec![(0, 50)];
        flows.extend((1..n as u32).map(|f| (f, 1)));
        let pspat = latency_pspat::<S>(opts, place, timing, &flows, mailbox)?;
        let locked = latency_locked::<S>(opts, place, timing, &flows, mailbox)?;
        for (arch, p) in [("pspat", pspat), ("locked", locked)] {
            table.row([
                n.to_string(),
                arch.to_string(),
                p.samples.to_string(),
                fmt_f(p.min, 1),
                fmt_f(p.p10, 1),
                fmt_f(p.p50, 1),
                fmt_f(p.p90, 1),
                fmt_f(p.p99, 1),
                fmt_f(p.max, 1),
            ]);
            let mut r = Record::new("latency", arch, n, opts.sched);
            r.link_gbps = Some(LINK_BPS as f64 / 1e9);
            r.latency_us = Some(p);
            records.push(r);
        }
    }
    if !opts.common.json {
        crate::outln!(
            "Latency (PSPAT Table 3, Fig. 11): victim at 4000 pkt/s with weight 50 vs greedy clients \
             with weight 1, 1500-byte packets, 10 Gbit/s link, {} scheduler{}; microseconds",
            opts.sched.name(),
            if opts.sched.weighted() { "" } else { " (ignores weights)" }
        );
        crate::out!("{}", table.render());
        crate::outln!();
    }
    Ok(())
}

/// The victim's latency under PSPAT, every client on the clients' CPU.
fn latency_pspat<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    mailbox: usize,
) -> Result<Percentiles, BenchError> {
    let n = flows.len();
    let warm_ns = timing.warmup.as_nanos() as Nanos;
    let rt = Pspat::start(
        pspat_config(opts, place, n, LINK_BPS, mailbox),
        S::build(flows, mailbox + 2)?,
        Dispatch::Inline(LatencySink::new(0, warm_ns)?),
    )?;
    warn_placement(&rt);
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    thread::scope(|s| -> Result<(), BenchError> {
        let mut victim = rt.client()?;
        for f in 1..n {
            let client = rt.client()?;
            let (stop, warned) = (&stop, &warned);
            s.spawn(move || {
                pin(place.client_cpu, warned);
                pspat_greedy(client, Packet::new(f as u32, 1500), opts.batch, stop);
            });
        }
        let (stop_v, warned) = (&stop, &warned);
        s.spawn(move || {
            pin(place.client_cpu, warned);
            let clock = victim.clock();
            victim_loop(
                |mut p| loop {
                    match victim.send(p) {
                        Ok(()) => return true,
                        Err(SendError::Closed(_)) => return false,
                        Err(e) => {
                            p = e.into_packet();
                            thread::yield_now();
                        }
                    }
                },
                clock,
                stop_v,
            );
        });
        thread::sleep(timing.warmup + timing.window);
        stop.store(true, Ordering::Relaxed);
        Ok(())
    })?;
    let report = rt.shutdown(ShutdownMode::Discard);
    Ok(report.sinks[0].percentiles())
}

/// The victim's latency behind the lock, greedy clients spread over every CPU.
fn latency_locked<S: BenchSched>(
    opts: &PspatOpts,
    place: Placement,
    timing: Timing,
    flows: &[(FlowId, u32)],
    mailbox: usize,
) -> Result<Percentiles, BenchError> {
    let n = flows.len();
    let warm_ns = timing.warmup.as_nanos() as Nanos;
    let locked = Locked::new(
        S::build(flows, mailbox + 2)?,
        LatencySink::new(0, warm_ns)?,
        LINK_BPS,
    )?;
    let lclock = locked.clock();
    let stop = AtomicBool::new(false);
    let warned = AtomicBool::new(false);
    thread::scope(|s| {
        for f in 1..n {
            let (stop, warned, locked) = (&stop, &warned, &locked);
            s.spawn(move || {
                pin(f % place.cpus, warned);
                locked_greedy(locked, Packet::new(f as u32, 1500), opts.batch, stop);
            });
        }
        let (stop_v, warned, locked_v) = (&stop, &warned, &locked);
        s.spawn(move || {
            pin(place.client_cpu, warned);
            victim_loop(
                |p| {
                    let _ = locked_v.send(p);
                    true
                },
                lclock,
                stop_v,
            );
        });
        thread::sleep(timing.warmup + timing.window);
        stop.store(true, Ordering::Relaxed);
    });
    Ok(locked.shutdown(ShutdownMode::Discard).sink.percentiles())
}
