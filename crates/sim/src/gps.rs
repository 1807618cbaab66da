//! The ideal fluid server: Generalized Processor Sharing (Parekh and Gallager,
//! 1993), the reference every fair scheduler approximates (qfq.txt section 3.1,
//! pspat.txt section 2.5).
//!
//! GPS serves all backlogged flows at once, flow `k` at rate
//! `R * w_k / sum(w_j, j backlogged)`, each flow's packets in FIFO order. The
//! simulation is event-driven and exact in structure: between two events (an
//! arrival, or the moment a packet's last bit is served) every rate is constant, so
//! the state jumps from event to event with no time step. It tracks the GPS
//! virtual time `V(t)`, which grows at `R / sum(w_j)` while the server is busy and
//! stays put while it is idle; a packet of flow `k` starts at `S = max(V(a), F')`
//! (`F'` the finish of the flow's previous packet) and finishes when `V` reaches
//! `F = S + l / w_k`. Arithmetic is `f64` (relative error around 10^-15 per
//! event), which the tests check against hand-computed cases.

use crate::link::Link;
use crate::run::{Outcome, Run};
use crate::trace::Trace;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One packet as GPS served it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FluidPacket {
    /// Virtual start.
    pub start_v: f64,
    /// Virtual finish.
    pub finish_v: f64,
    /// Time (ns) its last bit was served.
    pub finish_ns: f64,
}

/// A piece of the virtual-time function: from `t_ns` on, `V = v + slope * (t - t_ns)`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Piece {
    t_ns: f64,
    v: f64,
    slope: f64,
}

/// The result of a GPS simulation.
#[derive(Clone, Debug)]
pub struct Gps {
    /// Per trace packet: how GPS served it (`None` for packets left out).
    pub packets: Vec<Option<FluidPacket>>,
    /// Per flow, the indexes of its packets in FIFO order and the bytes before each.
    per_flow: Vec<Vec<(usize, f64)>>,
    weights: Vec<f64>,
    lens: Vec<f64>,
    pieces: Vec<Piece>,
}

#[derive(PartialEq)]
struct Head {
    finish_v: f64,
    flow: usize,
}

impl Eq for Head {}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        // Min-heap on finish, then flow id.
        other
            .finish_v
            .total_cmp(&self.finish_v)
            .then(other.flow.cmp(&self.flow))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Gps {
    /// Simulates GPS over the packets of `trace` for which `include(i)` holds, on
    /// `link`, with flow `k` weighted `weights[k]` (positive).
    ///
    /// # Panics
    /// If a packet's flow has no positive weight.
    #[must_use]
    pub fn simulate(
        trace: &Trace,
        weights: &[f64],
        link: Link,
        include: impl Fn(usize) -> bool,
    ) -> Gps {
        let rate = link.bytes_per_ns();
        let n_flows = weights.len();
        let arrivals = trace.arrivals();
        let mut packets = vec![None; arrivals.len()];
        let mut per_flow: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n_flows];
        let mut queues: Vec<std::collections::VecDeque<usize>> = vec![Default::default(); n_flows];
        let mut last_finish = vec![0f64; n_flows];
        let mut heap = BinaryHeap::new();
        let (mut t, mut v, mut wsum) = (0f64, 0f64, 0f64);
        let mut pieces = vec![Piece {
            t_ns: 0.0,
            v: 0.0,
            slope: 0.0,
        }];
        let record = |pieces: &mut Vec<Piece>, t: f64, v: f64, wsum: f64| {
            let slope = if wsum > 0.0 { rate / wsum } else { 0.0 };
            pieces.push(Piece { t_ns: t, v, slope });
        };
        let next_included = |from: usize| (from..arrivals.len()).find(|&j| include(j));
        let mut next_arrival = next_included(0);
        loop {
            let arrival_t = next_arrival.map(|j| arrivals[j].at as f64);
            // Departure: the head with the smallest finish, when V reaches it.
            let departure = heap.peek().map(|h: &Head| {
                let dt = (h.finish_v - v) * wsum / rate;
                (t + dt.max(0.0), h.finish_v)
            });
            match (arrival_t, departure) {
                (None, None) => break,
                (Some(ta), dep) if dep.is_none_or(|(td, _)| ta < td) => {
                    let j = next_arrival.expect("arrival");
                    if wsum > 0.0 {
                        v += (ta - t) * rate / wsum;
                    }
                    t = ta;
                    let a = arrivals[j];
                    let k = a.flow as usize;
                    let w = weights.get(k).copied().filter(|&w| w > 0.0);
                    let w = w.unwrap_or_else(|| panic!("flow {k} has no positive weight"));
                    let start_v = v.max(last_finish[k]);
                    let finish_v = start_v + f64::from(a.len) / w;
                    last_finish[k] = finish_v;
                    let before = per_flow[k]
                        .last()
                        .map_or(0.0, |&(p, b)| b + f64::from(arrivals[p].len));
                    per_flow[k].push((j, before));
                    packets[j] = Some(FluidPacket {
                        start_v,
                        finish_v,
                        finish_ns: f64::NAN,
                    });
                    queues[k].push_back(j);
                    if queues[k].len() == 1 {
                        wsum += w;
                        heap.push(Head { finish_v, flow: k });
                    }
                    record(&mut pieces, t, v, wsum);
                    next_arrival = next_included(j + 1);
                }
                (_, Some((td, fv))) => {
                    t = td;
                    v = fv;
                    let Head { flow: k, .. } = heap.pop().expect("head");
                    let j = queues[k].pop_front().expect("queued packet");
                    if let Some(p) = packets[j].as_mut() {
                        p.finish_ns = t;
                    }
                    match queues[k].front() {
                        Some(&n) => heap.push(Head {
                            finish_v: packets[n].expect("queued").finish_v,
                            flow: k,
                        }),
                        None => wsum -= weights[k],
                    }
                    if heap.is_empty() {
                        wsum = 0.0;
                    }
                    record(&mut pieces, t, v, wsum);
                }
                (Some(_), None) => unreachable!("handled by the arrival arm"),
            }
        }
        Gps {
            packets,
            per_flow,
            weights: weights.to_vec(),
            lens: arrivals.iter().map(|a| f64::from(a.len)).collect(),
            pieces,
        }
    }

    /// GPS over the packets a scheduler accepted in `run` (dropped ones left out).
    #[must_use]
    pub fn for_run(trace: &Trace, weights: &[f64], run: &Run) -> Gps {
        Gps::simulate(trace, weights, run.link, |i| {
            !matches!(run.outcomes[i], Outcome::Dropped(_))
        })
    }

    /// The GPS virtual time at `t_ns`.
    #[must_use]
    pub fn virtual_time(&self, t_ns: f64) -> f64 {
        let i = self.pieces.partition_point(|p| p.t_ns <= t_ns);
        let p = self.pieces[i.saturating_sub(1)];
        p.v + p.slope * (t_ns - p.t_ns).max(0.0)
    }

    /// Bytes of flow `k` GPS has served by `t_ns`.
    #[must_use]
    pub fn served(&self, k: usize, t_ns: f64) -> f64 {
        let Some(list) = self.per_flow.get(k) else {
            return 0.0;
        };
        let v = self.virtual_time(t_ns);
        // Packets whose virtual finish V has passed are fully served; the next one
        // (if its start is behind V) is partly served at the flow's rate.
        let done = list.partition_point(|&(j, _)| self.packets[j].is_some_and(|p| p.finish_v <= v));
        let Some(&(j, before)) = list.get(done) else {
            return list.last().map_or(0.0, |&(j, b)| b + self.lens[j]);
        };
        let p = self.packets[j].expect("listed packets were simulated");
        let partial = (self.weights[k] * (v - p.start_v)).clamp(0.0, self.lens[j]);
        before + partial
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Arrival;

    /// One byte per nanosecond.
    const LINK: Link = Link::new(8_000_000_000);

    fn gps(arrivals: &[(u64, u32, u32)], weights: &[f64]) -> Gps {
        let trace = Trace::new(
            arrivals
                .iter()
                .map(|&(at, flow, len)| Arrival { at, flow, len })
                .collect(),
        );
        Gps::simulate(&trace, weights, LINK, |_| true)
    }

    fn finishes(g: &Gps) -> Vec<f64> {
        g.packets.iter().map(|p| p.unwrap().finish_ns).collect()
    }

    #[test]
    fn single_flow_is_served_at_full_rate() {
        let g = gps(&[(0, 0, 1000), (0, 0, 1000), (5000, 0, 500)], &[1.0]);
        assert_eq!(finishes(&g), [1000.0, 2000.0, 5500.0]);
        assert_eq!(g.served(0, 1500.0), 1500.0);
        assert_eq!(g.served(0, 3000.0), 2000.0, "idle: nothing more to serve");
        assert_eq!(g.served(0, 5250.0), 2250.0);
    }

    #[test]
    fn equal_weights_share_equally() {
        let g = gps(&[(0, 0, 1000), (0, 1, 1000)], &[1.0, 1.0]);
        assert_eq!(finishes(&g), [2000.0, 2000.0]);
        assert_eq!(g.served(1, 1000.0), 500.0);
    }

    #[test]
    fn weights_three_to_one() {
        // Flow 0 gets 3/4 of the link: 3000 bytes and 1000 bytes finish together.
        let g = gps(&[(0, 0, 3000), (0, 1, 1000)], &[3.0, 1.0]);
        assert_eq!(finishes(&g), [4000.0, 4000.0]);
        assert_eq!(g.served(0, 2000.0), 1500.0);
    }

    #[test]
    fn late_arrival_halves_the_rate_then_a_departure_restores_it() {
        // 0..1000: flow 0 alone (1000 bytes); then both at 0.5 byte/ns. Flow 1's
        // 500 bytes finish at 2000, flow 0's remaining 1000 - 500 = 500 at 2500.
        let g = gps(&[(0, 0, 2000), (1000, 1, 500)], &[1.0, 1.0]);
        assert_eq!(finishes(&g), [2500.0, 2000.0]);
        assert_eq!(g.served(0, 1500.0), 1250.0);
        assert_eq!(g.served(1, 1500.0), 250.0);
        assert_eq!(g.virtual_time(1000.0), 1000.0);
        assert_eq!(g.virtual_time(2000.0), 1500.0);
    }

    #[test]
    fn excluded_packets_do_not_exist() {
        let trace = Trace::new(vec![
            Arrival {
                at: 0,
                flow: 0,
                len: 1000,
            },
            Arrival {
                at: 0,
                flow: 1,
                len: 1000,
            },
        ]);
        let g = Gps::simulate(&trace, &[1.0, 1.0], LINK, |i| i == 0);
        assert_eq!(g.packets[0].unwrap().finish_ns, 1000.0);
        assert!(g.packets[1].is_none());
        assert_eq!(g.served(1, 5000.0), 0.0);
    }

    #[test]
    fn three_flows_with_staggered_departures() {
        // Weights 1, 2, 1; packets of 400, 1200, 1000 bytes at t = 0.
        // Phase 1 (rate 1/4 each weight unit): flow 0 needs 400 at 0.25 -> 1600 ns;
        // by then flow 1 got 800, flow 2 got 400. Phase 2 (weights 2 + 1): flow 1
        // needs 400 at 2/3 -> 600 ns (t = 2200), flow 2 got 200 more (600 total).
        // Phase 3: flow 2 alone sends its last 400 bytes: t = 2600.
        let g = gps(&[(0, 0, 400), (0, 1, 1200), (0, 2, 1000)], &[1.0, 2.0, 1.0]);
        let f = finishes(&g);
        for (got, want) in f.iter().zip([1600.0, 2200.0, 2600.0]) {
            assert!((got - want).abs() < 1e-9, "{f:?}");
        }
        assert!((g.served(2, 2200.0) - 600.0).abs() < 1e-9);
    }
}
