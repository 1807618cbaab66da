//! What a policy run will cost, estimated from its inputs before it starts: the
//! events the engine will process and the memory its generator and metrics
//! allocate (the tree's own memory is [`eiffel_sched::tree::TreeSpec::footprint`]).
//!
//! **Events.** Each arrival and each departure is an event; an on/off source also
//! draws two period lengths per cycle. Expected arrivals per flow group come from
//! the arrival process and the time each flow is active (from its start, `start +
//! k * stagger`, to the group's `stop` or the end of the run), capped by the
//! flow's size when it is finite; the sum over a group's flows is taken in closed
//! form, so the estimate costs one step per group however many flows it holds.
//! A greedy group sends as fast as the link drains it: at most `link rate x its
//! active span / its mean packet`, and never more than its finite flows hold.
//! Departures never exceed `link rate x duration / smallest packet`.
//!
//! **Memory.** Per flow the generator's state, its heap entry, its route and the
//! metrics' group and start; per flow group two histograms (latency and flow
//! completion times); per leaf a histogram and the rates-over-time series; per
//! node the merged latency histogram of the report.

use core::mem::size_of;

use eiffel_sched::Nanos;

use crate::metrics::histogram;
use crate::policy_run::RunOptions;
use crate::workload::{FlowGroup, Process, Route, Workload};

/// Per-flow bytes besides the generator's state: a heap entry, the route, the
/// metrics' group index and start time.
const PER_FLOW_EXTRA: u64 = (16 + size_of::<Route>() + 4 + 8) as u64;

/// A run's estimated cost.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RunEstimate {
    /// Expected packet arrivals.
    pub arrivals: f64,
    /// Expected departures (at most what the link can send).
    pub departures: f64,
    /// On/off period draws.
    pub periods: f64,
    /// Bytes of per-flow state (generator and metrics).
    pub flow_bytes: u64,
    /// Bytes of histograms (per group, per leaf, per node).
    pub histogram_bytes: u64,
    /// Bytes of the rates-over-time series.
    pub series_bytes: u64,
}

impl RunEstimate {
    /// Expected events: arrivals, departures and on/off period draws.
    #[must_use]
    pub fn events(&self) -> u64 {
        let e = self.arrivals + self.departures + self.periods;
        if e >= u64::MAX as f64 {
            u64::MAX
        } else {
            e as u64
        }
    }

    /// Bytes the run allocates besides the tree.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.flow_bytes
            .saturating_add(self.histogram_bytes)
            .saturating_add(self.series_bytes)
    }
}

/// Bytes of one latency histogram.
#[must_use]
pub fn histogram_bytes() -> u64 {
    let h = histogram();
    (h.distinct_values() * size_of::<u64>() + size_of::<hdrhistogram::Histogram<u64>>()) as u64
}

/// Estimates the run of `workload` through a tree of `nodes` nodes, `leaves` of
/// them leaves, with `opts` (see the module docs). Allocates one histogram to
/// measure its size.
#[must_use]
pub fn estimate(
    workload: &Workload,
    nodes: usize,
    leaves: usize,
    opts: &RunOptions,
) -> RunEstimate {
    let end = opts.duration;
    let mut arrivals = 0.0;
    let mut periods = 0.0;
    let mut smallest = f64::INFINITY;
    for g in &workload.groups {
        let active = active_ns(g, end);
        smallest = smallest.min(f64::from(g.packets.min()).max(1.0));
        let packet_bits = g.packets.mean().max(1.0) * 8.0;
        let (a, p) = match g.process {
            Process::Constant { rate_bps } | Process::Poisson { rate_bps } => {
                (active * rate_bps as f64 / 8e9 / (packet_bits / 8.0), 0.0)
            }
            Process::OnOff {
                rate_bps,
                mean_on,
                mean_off,
                ..
            } => {
                let cycle = (mean_on + mean_off).max(1) as f64;
                let on = mean_on as f64 / cycle;
                (
                    active * on * rate_bps as f64 / 1e9 / packet_bits,
                    2.0 * active / cycle,
                )
            }
            // As fast as the link drains them (shared with the rest, so this
            // counts high when several groups are greedy).
            Process::Greedy { .. } => {
                let flows_active = if g.count == 0 { 0.0 } else { 1.0 };
                let span = g.stop.map_or(end, |s| s.min(end)).saturating_sub(g.start) as f64;
                (
                    flows_active * span * opts.link_rate as f64 / 1e9 / packet_bits,
                    0.0,
                )
            }
        };
        let capped = match g.flow_sizes.iter().max() {
            Some(&most) => {
                // A flow sends at least one packet, its last one shorter.
                let per_flow = (most as f64 / g.packets.min().max(1) as f64)
                    .ceil()
                    .max(1.0);
                a.min(f64::from(g.count) * per_flow)
            }
            None => a,
        };
        arrivals += capped;
        periods += p;
    }
    let link_cap = opts.link_rate as f64 * end as f64 / 8e9 / smallest;
    let flows = workload.flows() as u64;
    let h = histogram_bytes();
    RunEstimate {
        arrivals,
        departures: arrivals.min(link_cap),
        periods,
        flow_bytes: flows.saturating_mul(crate::workload::flow_state_bytes() + PER_FLOW_EXTRA),
        histogram_bytes: h
            .saturating_mul(2 * workload.groups.len() as u64 + (leaves + nodes) as u64),
        series_bytes: (leaves as u64).saturating_mul(opts.bins.max(1) as u64 * 8),
    }
}

/// The summed active time, in ns, of the flows of `g` in a run ending at `end`:
/// flow `k` is active from `start + k * stagger` to `min(stop, end)`.
fn active_ns(g: &FlowGroup, end: Nanos) -> f64 {
    let stop = g.stop.map_or(end, |s| s.min(end)) as f64;
    let first = g.start as f64;
    if stop <= first {
        return 0.0;
    }
    let count = f64::from(g.count);
    if g.stagger == 0 {
        return count * (stop - first);
    }
    let stagger = g.stagger as f64;
    // Flows 0..n start before `stop`; their active times form an arithmetic series.
    let n = ((stop - first) / stagger).ceil().min(count);
    n * (stop - first) - stagger * n * (n - 1.0) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(duration: Nanos, link_rate: u64) -> RunOptions {
        RunOptions {
            duration,
            link_rate,
            bins: 100,
            seed: 1,
        }
    }

    #[test]
    fn constant_flows_count_their_packets() {
        // 10 flows of 1 Mbit/s in 1000-byte packets for 1 s: 125 packets each.
        let w = Workload {
            groups: vec![FlowGroup::new(
                "c",
                10,
                0,
                1000,
                Process::Constant {
                    rate_bps: 1_000_000,
                },
            )],
            seed: 1,
        };
        let e = estimate(&w, 3, 2, &opts(1_000_000_000, 1_000_000_000));
        assert!((e.arrivals - 1250.0).abs() < 1e-6, "{e:?}");
        assert!((e.departures - 1250.0).abs() < 1e-6);
        assert_eq!(e.events(), 2500);
    }

    #[test]
    fn staggered_flows_are_summed_in_closed_form() {
        // 4 flows, one starting every 250 ms of a 1 s run: 1 + 0.75 + 0.5 + 0.25 s.
        let mut g = FlowGroup::new("s", 4, 0, 1000, Process::Constant { rate_bps: 8000 });
        g.stagger = 250_000_000;
        assert!((active_ns(&g, 1_000_000_000) - 2.5e9).abs() < 1.0);
        // A billion flows cost one step.
        g.count = 1_000_000_000;
        g.stagger = 1;
        assert!(active_ns(&g, 1_000_000_000) > 0.0);
    }

    #[test]
    fn greedy_flows_are_bounded_by_the_link() {
        let w = Workload {
            groups: vec![FlowGroup::new(
                "g",
                1,
                0,
                1500,
                Process::Greedy { window: 32 },
            )],
            seed: 1,
        };
        // 12 Mbit/s for 1 s: 1000 packets of 1500 bytes.
        let e = estimate(&w, 1, 1, &opts(1_000_000_000, 12_000_000));
        assert!((e.departures - 1000.0).abs() < 1e-6, "{e:?}");
    }
}
