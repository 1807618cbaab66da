//! What a run leaves behind: per flow, per coflow, per port, per observed flow.
//!
//! A flow's *ideal* completion time is what it would take alone on an idle
//! network with an unlimited window: the propagation delays of its path both
//! ways, its bytes on the wire at the path's slowest link, the last packet's
//! transmission on every other link (store and forward), and the final
//! acknowledgement's transmissions back. Its *slowdown* (normalized FCT) is the
//! measured completion time, first packet sent to last acknowledgement
//! received, divided by the ideal.

use super::{Counters, Sender, Sim, ACK_HASH};
use crate::event::EventQueue;
use crate::routing::Routes;
use crate::time::{Duration, Rate, Time};
use crate::topology::{Topology, NOT_A_HOST};
use crate::transport::{Segments, ACK_LEN, MSS};
use crate::workload::{FlowSpec, FlowTransport};

/// One flow's outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowResult {
    /// Payload bytes (`u64::MAX`: long-lived).
    pub size: u64,
    /// Arrival.
    pub start: Time,
    /// Completion time, if it completed.
    pub fct: Option<Duration>,
    /// Ideal completion time (see the module documentation).
    pub ideal: Duration,
    /// Traffic index.
    pub traffic: u16,
    /// Coflow index or `NO_COFLOW`.
    pub coflow: u32,
    /// Whether it used the scheme's transport.
    pub scheme: bool,
    /// Segments retransmitted.
    pub retransmits: u32,
    /// Retransmission timeouts.
    pub timeouts: u32,
    /// Its packets dropped anywhere.
    pub drops: u32,
    /// Payload bytes delivered in order.
    pub delivered: u64,
    /// Long-lived flows: goodput over the measurement window, bits/s.
    pub goodput_bps: f64,
}

/// One coflow's outcome.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CoflowResult {
    /// Arrival.
    pub start: Time,
    /// Sub-flows.
    pub width: u32,
    /// Total bytes.
    pub bytes: u64,
    /// Completion time (its last sub-flow's), if it completed.
    pub cct: Option<Duration>,
    /// Traffic index.
    pub traffic: u16,
}

/// One port's counters at the end of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct PortResult {
    /// `from->to`.
    pub name: String,
    /// Link rate.
    pub rate: Rate,
    /// Packets and bytes sent.
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Drops on arrival by reason name (non-zero only).
    pub dropped: Vec<(&'static str, u64)>,
    /// pFabric evictions.
    pub evicted: u64,
    /// ECN marks.
    pub marked: u64,
    /// Largest live queue, bytes.
    pub max_queue_bytes: u64,
    /// Mean queueing delay of sent packets, ns.
    pub mean_sojourn_ns: f64,
    /// 99th percentile queueing delay, ns (at most 25% above; sampled ports
    /// only, otherwise 0).
    pub p99_sojourn_ns: u64,
    /// Largest queueing delay, ns.
    pub max_sojourn_ns: u64,
    /// Queue samples `(time, bytes)`.
    pub samples: Vec<(Time, u64)>,
    /// pFabric ports: dequeues checked against the exact order, and those that
    /// served a flow ranked behind another (priority inversions).
    pub order: (u64, u64),
}

impl PortResult {
    /// Total drops on arrival.
    #[must_use]
    pub fn dropped_total(&self) -> u64 {
        self.dropped.iter().map(|&(_, n)| n).sum()
    }
}

/// Duration statistics of an observed flow.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedFlow {
    /// Flow index.
    pub flow: u32,
    /// Traffic index.
    pub traffic: u16,
    /// Packets received.
    pub packets: u64,
    /// Mean one-way delay, ns.
    pub mean_ns: f64,
    /// Standard deviation, ns.
    pub stddev_ns: f64,
    /// Largest delay, ns.
    pub max_ns: u64,
    /// RFC 3550 jitter, ns.
    pub jitter_ns: f64,
    /// Mean delay per hop (queueing, transmission, propagation), ns.
    pub per_hop_ns: Vec<f64>,
}

/// Everything measured in one run.
#[derive(Clone, Debug, PartialEq)]
pub struct RunResult {
    /// Per flow, in arrival order.
    pub flows: Vec<FlowResult>,
    /// Per coflow.
    pub coflows: Vec<CoflowResult>,
    /// Per port, in the topology's order.
    pub ports: Vec<PortResult>,
    /// Observed flows.
    pub observed: Vec<ObservedFlow>,
    /// Event and packet counters.
    pub counters: Counters,
    /// Simulated time at the end.
    pub end: Time,
    /// Start of the measurement window for long-lived flows.
    pub measure_from: Time,
    /// Peak packets held.
    pub peak_packets: usize,
}

/// Ideal completion time of a flow of `seg` from host `src` to `dst` along the
/// paths its hash picks.
#[must_use]
pub fn ideal_fct(
    topo: &Topology,
    routes: &Routes,
    spec: &FlowSpec,
    seg: &Segments,
    hash: u64,
) -> Duration {
    let walk = |src: u32, dst: u32, h: u64, mut visit: Box<dyn FnMut(Rate, Duration) + '_>| {
        let mut port = topo.host_port(src);
        loop {
            let p = &topo.ports()[port as usize];
            visit(p.link.rate, p.link.delay);
            if topo.host_index(p.to) != NOT_A_HOST {
                break;
            }
            port = routes.next_port(p.to, dst, h);
        }
    };
    let mut fwd = Vec::with_capacity(8);
    walk(spec.src, spec.dst, hash, Box::new(|r, d| fwd.push((r, d))));
    let mut back = Duration::ZERO;
    walk(
        spec.dst,
        spec.src,
        hash ^ ACK_HASH,
        Box::new(|r, d| back += d + r.tx_time_ceil(u64::from(ACK_LEN))),
    );
    let slowest = fwd
        .iter()
        .map(|&(r, _)| r)
        .min()
        .unwrap_or(Rate::from_bps(1));
    let last = u64::from(seg.wire_len(seg.total - 1));
    let mut t = slowest.tx_time_ceil(seg.wire_bytes());
    let mut skipped = false;
    for &(r, d) in &fwd {
        t += d;
        if r == slowest && !skipped {
            skipped = true;
        } else {
            t += r.tx_time_ceil(last);
        }
    }
    t + back
}

impl<Q: EventQueue> Sim<'_, Q> {
    fn flow_results(&self) -> Vec<FlowResult> {
        let window = self.now.since(self.cfg.measure_from);
        self.flows
            .iter()
            .map(|f| {
                let scheme = matches!(f.spec.transport, FlowTransport::Scheme);
                let (retransmits, timeouts, acked) = match &f.sender {
                    Sender::Tcp(s) => (s.retransmits, s.timeouts, s.acked()),
                    Sender::Pfabric(s) => (s.retransmits, s.timeouts, s.acked()),
                    _ => (0, 0, 0),
                };
                let ideal = if scheme && f.spec.size != u64::MAX {
                    ideal_fct(self.topo, self.routes, &f.spec, &f.seg, f.hash)
                } else {
                    Duration::ZERO
                };
                let goodput_bps = if f.spec.size == u64::MAX && !window.is_zero() {
                    let segs = acked.saturating_sub(f.acked_at_measure);
                    f64::from(segs) * f64::from(MSS) * 8.0 / window.as_secs_f64()
                } else {
                    0.0
                };
                FlowResult {
                    size: f.spec.size,
                    start: f.spec.start,
                    fct: (f.finished != Time::NEVER).then(|| f.finished.since(f.spec.start)),
                    ideal,
                    traffic: f.spec.traffic,
                    coflow: f.spec.coflow,
                    scheme,
                    retransmits,
                    timeouts,
                    drops: f.drops,
                    delivered: f.delivered,
                    goodput_bps,
                }
            })
            .collect()
    }

    fn coflow_results(&self) -> Vec<CoflowResult> {
        let n = self.coflow_left.len();
        let mut acc: Vec<Option<CoflowResult>> = vec![None; n];
        for f in self
            .flows
            .iter()
            .filter(|f| f.spec.coflow != crate::workload::NO_COFLOW)
        {
            let c = acc[f.spec.coflow as usize].get_or_insert(CoflowResult {
                start: f.spec.start,
                width: 0,
                bytes: 0,
                cct: None,
                traffic: f.spec.traffic,
            });
            c.width += 1;
            c.bytes += f.spec.size;
        }
        acc.into_iter()
            .zip(&self.coflow_done)
            .filter_map(|(c, &done)| {
                c.map(|mut c| {
                    c.cct = (done != Time::NEVER).then(|| done.since(c.start));
                    c
                })
            })
            .collect()
    }

    fn observed_results(&self) -> Vec<ObservedFlow> {
        self.flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.observed != super::NOT_OBSERVED)
            .map(|(i, f)| {
                let d = &self.observed[f.observed as usize];
                let n = d.packets.max(1) as f64;
                ObservedFlow {
                    flow: i as u32,
                    traffic: f.spec.traffic,
                    packets: d.packets,
                    mean_ns: d.mean(),
                    stddev_ns: d.stddev(),
                    max_ns: d.max,
                    jitter_ns: d.jitter,
                    per_hop_ns: d.per_hop.iter().map(|&s| s as f64 / n).collect(),
                }
            })
            .collect()
    }

    pub(super) fn finish(self) -> RunResult {
        let ports = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| port_result(self.topo.port_name(i as u32), p))
            .collect();
        let mut counters = self.counters;
        counters.discarded = self.ports.iter().map(|p| p.stats.discarded).sum();
        RunResult {
            flows: self.flow_results(),
            coflows: self.coflow_results(),
            ports,
            observed: self.observed_results(),
            counters,
            end: self.now,
            measure_from: self.cfg.measure_from,
            peak_packets: self.pkts.peak(),
        }
    }
}

fn port_result(name: String, p: &crate::port::Port) -> PortResult {
    let s = &p.stats;
    let dropped = s
        .dropped
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, &n)| (crate::port::PortDrop::from_index(i).name(), n))
        .collect();
    PortResult {
        name,
        rate: p.rate(),
        sent: s.sent,
        sent_bytes: s.sent_bytes,
        dropped,
        evicted: s.evicted,
        marked: s.marked,
        max_queue_bytes: s.max_queue_bytes,
        mean_sojourn_ns: if s.sent > 0 {
            s.sojourn_sum as f64 / s.sent as f64
        } else {
            0.0
        },
        p99_sojourn_ns: s.sojourn.as_ref().map_or(0, |h| h.quantile(0.99)),
        max_sojourn_ns: s.max_sojourn,
        samples: s.samples.clone(),
        order: (s.checked, s.inversions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LinkParams;
    use crate::workload::NO_COFLOW;

    #[test]
    fn ideal_fct_of_a_leaf_spine_flow() {
        let t = Topology::leaf_spine(
            2,
            1,
            2,
            LinkParams::new(Rate::from_gbps(10), Duration::from_nanos(1000)),
            LinkParams::new(Rate::from_gbps(40), Duration::from_nanos(100)),
        )
        .unwrap();
        let r = Routes::new(&t).unwrap();
        let spec = FlowSpec {
            src: 0,
            dst: 3,
            size: 1460,
            start: Time::ZERO,
            stop: Time::NEVER,
            class: 0,
            coflow: NO_COFLOW,
            traffic: 0,
            observe: false,
            transport: FlowTransport::Scheme,
            deadline: Time::NEVER,
        };
        let seg = Segments::of(1460);
        // One 1500-byte packet: 1.2 us at 10G twice, 0.3 us at 40G twice,
        // 2 x 1 us + 2 x 0.1 us of propagation; the ACK: 32 + 8 + 8 + 32 ns of
        // transmission and the same propagation.
        let d = ideal_fct(&t, &r, &spec, &seg, 0);
        assert_eq!(
            d,
            Duration::from_nanos(1200 + 1200 + 300 + 300 + 2200 + 80 + 2200)
        );
    }
}
