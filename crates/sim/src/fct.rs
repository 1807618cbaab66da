//! Flow-level workloads and flow completion times: the measurements of the
//! calendar-queue paper's use cases (Sharma et al., NSDI'20: Fig. 9, the FCT of
//! short flows under fair queueing with and without a burst allowance; Table 1,
//! the bandwidth flows of each size get under pFabric and pFabric-fair).
//!
//! - [`flow_workload`] draws flows (sizes from a distribution, Poisson arrivals at
//!   a given load) and cuts each into packets that arrive at its sender's access
//!   rate, as a paced sender would offer them; every packet carries the bytes its
//!   flow still has to send (pFabric's annotation).
//! - [`Annotated`] fills the annotations a policy reads (leaf, remaining bytes,
//!   deadline) into each packet before the scheduler sees it.
//! - [`completions`] and [`FctStats`] turn a [`Run`] into flow completion times
//!   and per-flow bandwidths; [`compare`] runs one workload through several
//!   schedulers and summarizes each by flow-size class.
//!
//! Completion time of a flow: from its first packet's arrival to the end of its
//! last packet's transmission. A flow with a packet dropped or still held has
//! none; [`FlowOutcome::sent_bytes`] still says how much of it got through.

use eiffel_sched::{Dropped, FlowId, Nanos, Packet, Scheduler};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::link::{Link, Ticks};
use crate::run::{run, Outcome, Run};
use crate::trace::{Arrival, Trace};

/// A flow-level workload.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowWorkload {
    /// Flow sizes in bytes with their relative frequencies.
    pub sizes: Vec<(u64, f64)>,
    /// Offered load of the Poisson flows, as a fraction of the link rate.
    pub load: f64,
    /// Rate at which one flow's packets arrive (its sender's link), bits/s.
    pub access_bps: u64,
    /// Packet size; a flow's last packet carries the remainder.
    pub mtu: u32,
    /// Flows start until this time.
    pub duration_ns: Nanos,
    /// Flows present from time 0 besides the Poisson ones (long-running
    /// background), by size.
    pub background: Vec<u64>,
    /// Rate at which a background flow's packets arrive, bits/s (0: the access
    /// rate): a sender limited by its window rather than its link.
    pub background_bps: u64,
}

/// One flow of a [`FlowTrace`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowInfo {
    /// Its id (the packets' `flow`).
    pub id: FlowId,
    /// Arrival of its first packet.
    pub start: Nanos,
    /// Bytes.
    pub size: u64,
}

/// A flow-level workload as packets.
#[derive(Clone, Debug)]
pub struct FlowTrace {
    /// The packets.
    pub trace: Trace,
    /// Per packet (trace index): bytes its flow still has to send, itself
    /// included.
    pub remaining: Vec<u64>,
    /// The flows, by id.
    pub flows: Vec<FlowInfo>,
}

/// Draws `w` on `link` with `seed` (the same seed gives the same trace).
///
/// # Panics
/// If the size distribution is empty or has no positive weight, or the access
/// rate, the MTU or the load is not positive.
#[must_use]
pub fn flow_workload(link: Link, w: &FlowWorkload, seed: u64) -> FlowTrace {
    let total: f64 = w.sizes.iter().map(|&(_, p)| p.max(0.0)).sum();
    assert!(
        total > 0.0,
        "a flow-size distribution needs a positive weight"
    );
    assert!(
        w.access_bps > 0 && w.mtu > 0 && w.load > 0.0,
        "access rate, MTU and load must be positive"
    );
    let mut flows = draw_flows(link, w, total, seed);
    let mut arrivals = Vec::new();
    let background = w.background.len();
    for (id, f) in flows.iter_mut().enumerate() {
        f.id = id as FlowId;
        let bps = if id < background && w.background_bps > 0 {
            w.background_bps
        } else {
            w.access_bps
        };
        pace(f, bps, w.mtu, &mut arrivals);
    }
    // Sort by time, stably: a flow's packets keep their order.
    arrivals.sort_by_key(|(a, _)| a.at);
    let remaining = arrivals.iter().map(|&(_, r)| r).collect();
    FlowTrace {
        trace: Trace::new(arrivals.into_iter().map(|(a, _)| a).collect()),
        remaining,
        flows,
    }
}

/// The flows of `w` (ids not yet given): its background flows at time 0, then
/// Poisson arrivals until `w.duration_ns` at the rate that fills `w.load` of
/// `link`, each of a size drawn from `w.sizes` (whose weights sum to `total`).
fn draw_flows(link: Link, w: &FlowWorkload, total: f64, seed: u64) -> Vec<FlowInfo> {
    let mean: f64 = w
        .sizes
        .iter()
        .map(|&(s, p)| s as f64 * p.max(0.0))
        .sum::<f64>()
        / total;
    // Flows per ns so that their bytes fill `load` of the link.
    let lambda = w.load * link.rate_bps() as f64 / 8e9 / mean;
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut flows: Vec<FlowInfo> = w
        .background
        .iter()
        .map(|&size| FlowInfo {
            id: 0,
            start: 0,
            size,
        })
        .collect();
    let mut t = 0f64;
    loop {
        let u: f64 = rng.gen_range(f64::EPSILON..1.0);
        t += -u.ln() / lambda;
        if t >= w.duration_ns as f64 {
            break;
        }
        let size = draw_size(&mut rng, &w.sizes, total);
        flows.push(FlowInfo {
            id: 0,
            start: t as Nanos,
            size,
        });
    }
    flows
}

/// A flow size drawn from `sizes` in proportion to their (non-negative parts of
/// the) weights, which sum to `total`; the last size if rounding leaves none.
fn draw_size(rng: &mut SmallRng, sizes: &[(u64, f64)], total: f64) -> u64 {
    let mut x = rng.gen_range(0.0..total);
    sizes
        .iter()
        .find(|&&(_, p)| {
            x -= p.max(0.0);
            x < 0.0
        })
        .map_or(sizes[sizes.len() - 1].0, |&(s, _)| s)
}

/// Cuts flow `f` into packets of `mtu` bytes (the last one the remainder; an
/// empty flow sends one byte) arriving at `bps` from its start, and appends
/// each with the bytes its flow still has to send.
fn pace(f: &FlowInfo, bps: u64, mtu: u32, arrivals: &mut Vec<(Arrival, u64)>) {
    let mut left = f.size.max(1);
    let mut k = 0u64;
    while left > 0 {
        let len = left.min(u64::from(mtu)) as u32;
        let at = f.start + k * u64::from(mtu) * 8_000_000_000 / bps;
        arrivals.push((
            Arrival {
                at,
                flow: f.id,
                len,
            },
            left,
        ));
        left -= u64::from(len);
        k += 1;
    }
}

/// A scheduler whose packets get their annotations from a closure first: the
/// leaf (`class`), `remaining`, `deadline`..., looked up by the packet's trace
/// index (`buffer`).
pub struct Annotated<S, F> {
    /// The scheduler.
    pub inner: S,
    annotate: F,
}

impl<S, F: FnMut(&mut Packet)> Annotated<S, F> {
    /// `inner`, its packets annotated by `annotate`.
    pub fn new(inner: S, annotate: F) -> Self {
        Annotated { inner, annotate }
    }
}

impl<S: Scheduler, F: FnMut(&mut Packet)> Scheduler for Annotated<S, F> {
    fn enqueue(&mut self, mut pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        (self.annotate)(&mut pkt);
        self.inner.enqueue(pkt, now)
    }

    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        self.inner.dequeue(now)
    }

    fn next_ready(&self, now: Nanos) -> Option<Nanos> {
        self.inner.next_ready(now)
    }

    fn backlog(&self) -> eiffel_sched::Backlog {
        self.inner.backlog()
    }

    fn counters(&self) -> &eiffel_sched::Counters {
        self.inner.counters()
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }
}

/// What happened to one flow.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowOutcome {
    /// The flow.
    pub info: FlowInfo,
    /// Its completion time in ns, if all its packets were sent.
    pub fct_ns: Option<f64>,
    /// Bytes of it transmitted.
    pub sent_bytes: u64,
    /// End of its last transmitted packet.
    pub last_end: Option<Ticks>,
}

/// Every flow's outcome in `run` of `ft`.
#[must_use]
pub fn completions(ft: &FlowTrace, run: &Run) -> Vec<FlowOutcome> {
    let mut out: Vec<FlowOutcome> = ft
        .flows
        .iter()
        .map(|&info| FlowOutcome {
            info,
            fct_ns: None,
            sent_bytes: 0,
            last_end: None,
        })
        .collect();
    let mut complete = vec![true; ft.flows.len()];
    for (i, a) in ft.trace.arrivals().iter().enumerate() {
        let f = a.flow as usize;
        match run.outcomes[i] {
            Outcome::Sent { end, .. } => {
                out[f].sent_bytes += u64::from(a.len);
                out[f].last_end = Some(out[f].last_end.map_or(end, |e| e.max(end)));
            }
            Outcome::Dropped(_) | Outcome::Held => complete[f] = false,
        }
    }
    for (f, o) in out.iter_mut().enumerate() {
        if complete[f] {
            if let Some(end) = o.last_end {
                o.fct_ns = Some(run.link.nanos(end) - o.info.start as f64);
            }
        }
    }
    out
}

/// Completion times of a set of flows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FctStats {
    /// Flows in the set.
    pub flows: usize,
    /// Flows that completed.
    pub completed: usize,
    /// Mean completion time of the completed flows, ns.
    pub mean_ns: f64,
    /// Median, ns.
    pub p50_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Largest, ns.
    pub max_ns: f64,
    /// Mean per-flow bandwidth in bytes per second: `size / fct` for completed
    /// flows, for the others the bytes they got over the time since they started
    /// (the paper's Table 1 measure).
    pub mean_bandwidth: f64,
}

/// Summarizes the outcomes of the flows `keep` selects; `end` is the end of the
/// run (for flows that did not complete).
#[must_use]
pub fn fct_stats(
    outcomes: &[FlowOutcome],
    end_ns: f64,
    keep: impl Fn(&FlowInfo) -> bool,
) -> FctStats {
    let chosen: Vec<&FlowOutcome> = outcomes.iter().filter(|o| keep(&o.info)).collect();
    let mut fcts: Vec<f64> = chosen.iter().filter_map(|o| o.fct_ns).collect();
    fcts.sort_by(f64::total_cmp);
    let pct = |p: f64| -> f64 {
        if fcts.is_empty() {
            return 0.0;
        }
        let i = ((p * fcts.len() as f64).ceil() as usize).clamp(1, fcts.len()) - 1;
        fcts[i]
    };
    let bw: Vec<f64> = chosen
        .iter()
        .map(|o| {
            let span = o.fct_ns.unwrap_or(end_ns - o.info.start as f64).max(1.0);
            o.sent_bytes as f64 / (span / 1e9)
        })
        .collect();
    FctStats {
        flows: chosen.len(),
        completed: fcts.len(),
        mean_ns: if fcts.is_empty() {
            0.0
        } else {
            fcts.iter().sum::<f64>() / fcts.len() as f64
        },
        p50_ns: pct(0.5),
        p99_ns: pct(0.99),
        max_ns: fcts.last().copied().unwrap_or(0.0),
        mean_bandwidth: if bw.is_empty() {
            0.0
        } else {
            bw.iter().sum::<f64>() / bw.len() as f64
        },
    }
}

/// One scheduler's FCT summary in a [`compare`] table, for flows of sizes in
/// `sizes` (inclusive bounds, bytes).
#[derive(Clone, Debug, PartialEq)]
pub struct FctRow {
    /// The scheduler's label.
    pub label: String,
    /// The flow sizes summarized.
    pub sizes: (u64, u64),
    /// The summary.
    pub stats: FctStats,
}

/// Runs `ft` through each labelled scheduler on `link` and summarizes the flow
/// completion times of each size class (inclusive byte bounds): the same
/// workload for every scheduler, as `eiffel run --compare` prints it.
pub fn compare(
    ft: &FlowTrace,
    link: Link,
    scheds: &mut [(&str, &mut dyn Scheduler)],
    classes: &[(u64, u64)],
) -> Vec<FctRow> {
    let mut rows = Vec::new();
    for (label, sched) in scheds.iter_mut() {
        let r = run(&mut **sched, &ft.trace, link);
        let end_ns = r
            .order
            .last()
            .and_then(|&i| match r.outcomes[i] {
                Outcome::Sent { end, .. } => Some(link.nanos(end)),
                _ => None,
            })
            .unwrap_or(0.0);
        let outcomes = completions(ft, &r);
        for &(lo, hi) in classes {
            rows.push(FctRow {
                label: (*label).to_string(),
                sizes: (lo, hi),
                stats: fct_stats(&outcomes, end_ns, |f| (lo..=hi).contains(&f.size)),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use eiffel_sched::Fifo;

    fn workload() -> FlowWorkload {
        FlowWorkload {
            sizes: vec![(3_000, 0.9), (150_000, 0.1)],
            load: 0.5,
            access_bps: 1_000_000_000,
            mtu: 1500,
            duration_ns: 20_000_000,
            background: vec![1_000_000],
            background_bps: 0,
        }
    }

    #[test]
    fn flows_are_paced_and_annotated() {
        let link = Link::new(1_000_000_000);
        let ft = flow_workload(link, &workload(), 9);
        assert_eq!(ft.remaining.len(), ft.trace.len());
        // Every flow's bytes add up and its remaining counts down to its last packet.
        for f in &ft.flows {
            let mine: Vec<usize> = (0..ft.trace.len())
                .filter(|&i| ft.trace.arrivals()[i].flow == f.id)
                .collect();
            let bytes: u64 = mine
                .iter()
                .map(|&i| u64::from(ft.trace.arrivals()[i].len))
                .sum();
            assert_eq!(bytes, f.size);
            assert_eq!(ft.remaining[mine[0]], f.size);
            let last = *mine.last().unwrap();
            assert_eq!(ft.remaining[last], u64::from(ft.trace.arrivals()[last].len));
            // Paced at the access rate: 12 us per 1500 bytes at 1 Gbit/s.
            if mine.len() > 1 {
                let gap = ft.trace.arrivals()[mine[1]].at - ft.trace.arrivals()[mine[0]].at;
                assert_eq!(gap, 12_000);
            }
        }
        // The offered load of the Poisson flows is near the target.
        let bytes: u64 = ft.flows[1..].iter().map(|f| f.size).sum();
        let load = bytes as f64 * 8.0 / 0.02 / 1e9;
        assert!((load - 0.5).abs() < 0.15, "load {load}");
    }

    #[test]
    fn fifo_completion_times() {
        let link = Link::new(1_000_000_000);
        let ft = flow_workload(link, &workload(), 3);
        let mut fifo = Annotated::new(Fifo::new(1 << 16), |p: &mut Packet| p.class = 0);
        let rows = compare(
            &ft,
            link,
            &mut [("fifo", &mut fifo)],
            &[(0, 10_000), (10_001, u64::MAX)],
        );
        assert_eq!(rows.len(), 2);
        let short = rows[0].stats;
        assert_eq!(
            short.completed, short.flows,
            "FIFO without drops completes all"
        );
        // A 3000-byte flow takes at least its own transmission (24 us at 1 Gbit/s,
        // the second packet arriving 12 us after the first).
        assert!(short.p50_ns >= 24_000.0, "{short:?}");
        assert!(short.mean_bandwidth > 0.0);
    }
}
