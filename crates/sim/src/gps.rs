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
use crate::trace::{Arrival, Trace};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

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

/// The state of a GPS simulation between two events: the clock, the virtual
/// time and the weight of the backlogged flows, each flow's FIFO, and what has
/// been recorded so far.
struct Fluid<'a> {
    arrivals: &'a [Arrival],
    weights: &'a [f64],
    /// Link rate, bytes per ns.
    rate: f64,
    /// Time of the last event, ns.
    t: f64,
    /// Virtual time at `t`.
    v: f64,
    /// Sum of the weights of the backlogged flows.
    wsum: f64,
    packets: Vec<Option<FluidPacket>>,
    per_flow: Vec<Vec<(usize, f64)>>,
    /// Per flow, its packets not yet fully served, in FIFO order.
    queues: Vec<VecDeque<usize>>,
    /// Per flow, the virtual finish of its latest packet.
    last_finish: Vec<f64>,
    /// The head packet of each backlogged flow, by virtual finish.
    heap: BinaryHeap<Head>,
    pieces: Vec<Piece>,
}

impl<'a> Fluid<'a> {
    /// An idle server at time 0 for the packets `arrivals` and flows weighted
    /// `weights`, on a link of `rate` bytes per ns.
    fn new(arrivals: &'a [Arrival], weights: &'a [f64], rate: f64) -> Self {
        let n_flows = weights.len();
        Fluid {
            arrivals,
            weights,
            rate,
            t: 0.0,
            v: 0.0,
            wsum: 0.0,
            packets: vec![None; arrivals.len()],
            per_flow: vec![Vec::new(); n_flows],
            queues: vec![VecDeque::new(); n_flows],
            last_finish: vec![0f64; n_flows],
            heap: BinaryHeap::new(),
            pieces: vec![Piece {
                t_ns: 0.0,
                v: 0.0,
                slope: 0.0,
            }],
        }
    }

    /// Appends the piece of the virtual-time function that starts now.
    fn record(&mut self) {
        let slope = if self.wsum > 0.0 {
            self.rate / self.wsum
        } else {
            0.0
        };
        self.pieces.push(Piece {
            t_ns: self.t,
            v: self.v,
            slope,
        });
    }

    /// The next departure, time and virtual finish: the head with the smallest
    /// finish, when `V` reaches it.
    fn next_departure(&self) -> Option<(f64, f64)> {
        self.heap.peek().map(|h| {
            let dt = (h.finish_v - self.v) * self.wsum / self.rate;
            (self.t + dt.max(0.0), h.finish_v)
        })
    }

    /// Packet `j` arrives at `ta`: it gets its virtual start and finish and joins
    /// its flow's FIFO, the flow becoming backlogged if it was not.
    fn arrive(&mut self, j: usize, ta: f64) {
        if self.wsum > 0.0 {
            self.v += (ta - self.t) * self.rate / self.wsum;
        }
        self.t = ta;
        let a = self.arrivals[j];
        let k = a.flow as usize;
        let w = self.weights.get(k).copied().filter(|&w| w > 0.0);
        let w = w.unwrap_or_else(|| panic!("flow {k} has no positive weight"));
        let start_v = self.v.max(self.last_finish[k]);
        let finish_v = start_v + f64::from(a.len) / w;
        self.last_finish[k] = finish_v;
        let before = self.per_flow[k]
            .last()
            .map_or(0.0, |&(p, b)| b + f64::from(self.arrivals[p].len));
        self.per_flow[k].push((j, before));
        self.packets[j] = Some(FluidPacket {
            start_v,
            finish_v,
            finish_ns: f64::NAN,
        });
        self.queues[k].push_back(j);
        if self.queues[k].len() == 1 {
            self.wsum += w;
            self.heap.push(Head { finish_v, flow: k });
        }
        self.record();
    }

    /// The head packet with the smallest virtual finish `fv` departs at `td`;
    /// its flow's next packet becomes the head, or the flow leaves the backlog.
    fn depart(&mut self, td: f64, fv: f64) {
        self.t = td;
        self.v = fv;
        let Head { flow: k, .. } = self.heap.pop().expect("head");
        let j = self.queues[k].pop_front().expect("queued packet");
        if let Some(p) = self.packets[j].as_mut() {
            p.finish_ns = self.t;
        }
        match self.queues[k].front() {
            Some(&n) => self.heap.push(Head {
                finish_v: self.packets[n].expect("queued").finish_v,
                flow: k,
            }),
            None => self.wsum -= self.weights[k],
        }
        if self.heap.is_empty() {
            self.wsum = 0.0;
        }
        self.record();
    }

    /// The finished simulation.
    fn into_gps(self) -> Gps {
        Gps {
            packets: self.packets,
            per_flow: self.per_flow,
            weights: self.weights.to_vec(),
            lens: self.arrivals.iter().map(|a| f64::from(a.len)).collect(),
            pieces: self.pieces,
        }
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
        let arrivals = trace.arrivals();
        let mut fluid = Fluid::new(arrivals, weights, link.bytes_per_ns());
        let next_included = |from: usize| (from..arrivals.len()).find(|&j| include(j));
        let mut next_arrival = next_included(0);
        loop {
            let arrival_t = next_arrival.map(|j| arrivals[j].at as f64);
            match (arrival_t, fluid.next_departure()) {
                (None, None) => break,
                (Some(ta), dep) if dep.is_none_or(|(td, _)| ta < td) => {
                    let j = next_arrival.expect("arrival");
                    fluid.arrive(j, ta);
                    next_arrival = next_included(j + 1);
                }
                (_, Some((td, fv))) => fluid.depart(td, fv),
                (Some(_), None) => unreachable!("handled by the arrival arm"),
            }
        }
        fluid.into_gps()
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
