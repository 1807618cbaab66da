//! Workloads: groups of flows, each with packet sizes, an arrival process and an
//! optional finite size, generated lazily as a [`Source`] for [`drive`](crate::drive).
//!
//! A [`Workload`] is a list of [`FlowGroup`]s. Group `g` holds `count` flows with
//! consecutive workload flow ids; flow `k` of the group starts at
//! `start + k * stagger`. Every flow is routed once, before the run, to a leaf of
//! the scheduler and a flow id inside that leaf ([`Route`]); its packets then carry
//! that leaf in `class`, that id in `flow`, and the workload flow index in
//! `buffer` (so observers map departures back to flows).
//!
//! ## Arrival processes
//! - [`Process::Constant`]: evenly spaced packets offering exactly `rate_bps`
//!   (gaps of `8 L / rate` after a packet of `L` bytes).
//! - [`Process::Poisson`]: exponential gaps whose mean offers `rate_bps`.
//! - [`Process::OnOff`]: constant-rate bursts during "on" periods separated by
//!   silent "off" periods; both lengths are Pareto distributed with the given
//!   means and shape (heavy-tailed for shapes below 2).
//! - [`Process::Greedy`]: a closed loop that keeps `window` packets of the flow in
//!   the scheduler: one arrives whenever one of them leaves (a refused packet is
//!   retried one packet time later), so a greedy flow is always backlogged without
//!   flooding the simulation with packets that could never be sent.
//!
//! A finite flow (`flow_sizes`) stops after that many bytes; each packet carries
//! the flow's remaining bytes *including itself* in `remaining` (pFabric and SRPT
//! rank on it; the packet with `remaining == len` is the last, whose departure
//! ends the flow). Unbounded flows carry `remaining = u64::MAX`.
//!
//! ## Determinism
//! One `SmallRng` seeded from [`Workload::seed`] serves every flow; flows draw from
//! it in the order of their arrivals (ties by flow index), which the simulation
//! fixes, so the same workload, routes and scheduler always give the same run.
//!
//! ## Cost
//! One binary-heap operation per packet over the flows waiting for their next
//! arrival; O(flows) memory.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use eiffel_sched::{ClassId, DropReason, FlowId, Nanos, Packet};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::run::Source;

/// Packet sizes of a flow, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketSizes {
    /// Every packet has this size.
    Fixed(u32),
    /// Uniform in `min..=max`.
    Uniform {
        /// Smallest packet.
        min: u32,
        /// Largest packet.
        max: u32,
    },
}

impl PacketSizes {
    /// The mean size.
    #[must_use]
    pub fn mean(&self) -> f64 {
        match *self {
            PacketSizes::Fixed(l) => f64::from(l),
            PacketSizes::Uniform { min, max } => (f64::from(min) + f64::from(max)) / 2.0,
        }
    }

    /// The smallest size.
    #[must_use]
    pub fn min(&self) -> u32 {
        match *self {
            PacketSizes::Fixed(l) => l,
            PacketSizes::Uniform { min, .. } => min,
        }
    }

    /// The largest size.
    #[must_use]
    pub fn max(&self) -> u32 {
        match *self {
            PacketSizes::Fixed(l) => l,
            PacketSizes::Uniform { max, .. } => max,
        }
    }

    fn sample(&self, rng: &mut SmallRng) -> u32 {
        match *self {
            PacketSizes::Fixed(l) => l,
            PacketSizes::Uniform { min, max } => rng.gen_range(min..=max),
        }
    }
}

/// How a flow's packets arrive (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Process {
    /// Evenly spaced packets at `rate_bps`.
    Constant {
        /// Offered rate in bits per second.
        rate_bps: u64,
    },
    /// Poisson arrivals offering `rate_bps` on average.
    Poisson {
        /// Mean offered rate in bits per second.
        rate_bps: u64,
    },
    /// On/off source with Pareto-distributed period lengths.
    OnOff {
        /// Rate during "on" periods, bits per second.
        rate_bps: u64,
        /// Mean length of an "on" period.
        mean_on: Nanos,
        /// Mean length of an "off" period.
        mean_off: Nanos,
        /// Pareto shape (greater than 1 for a finite mean).
        shape: f64,
    },
    /// Keeps `window` packets in the scheduler.
    Greedy {
        /// Packets kept queued.
        window: u32,
    },
}

/// A group of flows sharing one description.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowGroup {
    /// Name used in reports.
    pub name: String,
    /// Number of flows (at least 1).
    pub count: u32,
    /// Traffic class the classification rules see.
    pub class: u32,
    /// Packet sizes.
    pub packets: PacketSizes,
    /// Arrival process.
    pub process: Process,
    /// Start of the first flow.
    pub start: Nanos,
    /// Flow `k` starts at `start + k * stagger`.
    pub stagger: Nanos,
    /// No packet arrives at or after this time.
    pub stop: Option<Nanos>,
    /// Finite flow sizes in bytes, assigned to the group's flows in turn; empty for
    /// unbounded flows.
    pub flow_sizes: Vec<u64>,
    /// Each packet's deadline is its arrival plus this (EDF).
    pub deadline: Option<Nanos>,
    /// Each packet's slack, in ns (LSTF; carried in `rank`).
    pub slack: Option<Nanos>,
    /// Each packet's `rank` (strict priority between the flows of a per-flow leaf;
    /// ignored when `slack` is set).
    pub priority: u64,
}

impl FlowGroup {
    /// A group of `count` unbounded flows of class `class` with fixed-size
    /// packets, starting at 0.
    #[must_use]
    pub fn new(
        name: impl Into<String>,
        count: u32,
        class: u32,
        len: u32,
        process: Process,
    ) -> Self {
        FlowGroup {
            name: name.into(),
            count,
            class,
            packets: PacketSizes::Fixed(len),
            process,
            start: 0,
            stagger: 0,
            stop: None,
            flow_sizes: Vec::new(),
            deadline: None,
            slack: None,
            priority: 0,
        }
    }

    /// Start time of flow `k` of the group.
    #[must_use]
    pub fn flow_start(&self, k: u32) -> Nanos {
        self.start
            .saturating_add(self.stagger.saturating_mul(u64::from(k)))
    }

    /// Size in bytes of flow `k` of the group, `None` if unbounded.
    #[must_use]
    pub fn flow_size(&self, k: u32) -> Option<u64> {
        (!self.flow_sizes.is_empty()).then(|| self.flow_sizes[k as usize % self.flow_sizes.len()])
    }
}

/// A whole workload.
#[derive(Clone, Debug, PartialEq)]
pub struct Workload {
    /// The flow groups; workload flow ids number their flows in order.
    pub groups: Vec<FlowGroup>,
    /// Seed of the generator.
    pub seed: u64,
}

/// Where one workload flow goes: a leaf and the flow id inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Route {
    /// Leaf (the packets' `class`).
    pub leaf: ClassId,
    /// Flow id within the leaf (the packets' `flow`).
    pub flow: FlowId,
}

impl Workload {
    /// Total number of flows.
    #[must_use]
    pub fn flows(&self) -> usize {
        self.groups.iter().map(|g| g.count as usize).sum()
    }

    /// Every flow as `(workload flow id, group index, index in group)`.
    pub fn each_flow(&self) -> impl Iterator<Item = (u32, usize, u32)> + '_ {
        self.groups
            .iter()
            .enumerate()
            .flat_map(|(g, grp)| (0..grp.count).map(move |k| (g, k)))
            .enumerate()
            .map(|(i, (g, k))| (i as u32, g, k))
    }

    /// Checks the values a generator relies on.
    ///
    /// # Errors
    /// The first problem found, naming the group.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        if self.groups.is_empty() {
            return Err(WorkloadError::NoFlows);
        }
        if self.flows() > u32::MAX as usize {
            return Err(WorkloadError::TooManyFlows);
        }
        for g in &self.groups {
            g.check().map_err(|problem| WorkloadError::Group {
                group: g.name.clone(),
                problem,
            })?;
        }
        Ok(())
    }
}

/// A workload that cannot be generated.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// No flow group.
    #[error("a workload needs at least one flow")]
    NoFlows,
    /// More flows than ids.
    #[error("a workload holds at most 2^32 - 1 flows")]
    TooManyFlows,
    /// A problem with one group.
    #[error("flow `{group}`: {problem}")]
    Group {
        /// The group's name.
        group: String,
        /// What is wrong with it.
        problem: GroupProblem,
    },
}

/// What is wrong with one flow group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GroupProblem {
    /// No flow in the group.
    #[error("count must be at least 1")]
    ZeroCount,
    /// Empty packets.
    #[error("packets must be at least 1 byte")]
    ZeroPackets,
    /// A size range that is empty or starts at 0.
    #[error("packet sizes need 1 <= min <= max")]
    PacketRange,
    /// A rate of zero.
    #[error("rate must be positive")]
    ZeroRate,
    /// An on or off period of zero.
    #[error("on and off periods must be positive")]
    ZeroPeriod,
    /// A Pareto shape with an infinite mean.
    #[error("the Pareto shape must be above 1 (finite mean)")]
    Shape,
    /// A greedy source that keeps nothing queued.
    #[error("window must be at least 1 packet")]
    ZeroWindow,
    /// An empty finite flow.
    #[error("flow sizes must be at least 1 byte")]
    ZeroFlowSize,
}

impl FlowGroup {
    /// The group's own settings.
    fn check(&self) -> Result<(), GroupProblem> {
        if self.count == 0 {
            return Err(GroupProblem::ZeroCount);
        }
        match self.packets {
            PacketSizes::Fixed(0) => return Err(GroupProblem::ZeroPackets),
            PacketSizes::Uniform { min, max } if min == 0 || min > max => {
                return Err(GroupProblem::PacketRange)
            }
            _ => {}
        }
        match self.process {
            Process::Constant { rate_bps: 0 }
            | Process::Poisson { rate_bps: 0 }
            | Process::OnOff { rate_bps: 0, .. } => return Err(GroupProblem::ZeroRate),
            Process::OnOff {
                mean_on,
                mean_off,
                shape,
                ..
            } => {
                if mean_on == 0 || mean_off == 0 {
                    return Err(GroupProblem::ZeroPeriod);
                }
                if !(shape > 1.0 && shape.is_finite()) {
                    return Err(GroupProblem::Shape);
                }
            }
            Process::Greedy { window: 0 } => return Err(GroupProblem::ZeroWindow),
            _ => {}
        }
        if self.flow_sizes.contains(&0) {
            return Err(GroupProblem::ZeroFlowSize);
        }
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
struct FlowState {
    route: Route,
    group: u32,
    /// Bytes still to send (`u64::MAX`: unbounded).
    left: u64,
    /// Time of the next arrival (fractional ns, so constant rates stay exact).
    clock: f64,
    /// End of the current "on" period (on/off sources).
    on_until: f64,
    /// Packets of a greedy flow in the scheduler.
    in_flight: u32,
    /// Whether the flow waits in the heap for its next arrival.
    pending: bool,
    /// Time of that arrival; heap entries of other times are stale.
    due: Nanos,
}

/// Bytes of a [`Generator`]'s state per flow.
pub(crate) const fn flow_state_bytes() -> u64 {
    core::mem::size_of::<FlowState>() as u64
}

/// Generates a [`Workload`]'s packets in time order (a [`Source`]).
#[derive(Debug)]
pub struct Generator<'a> {
    workload: &'a Workload,
    flows: Vec<FlowState>,
    heap: BinaryHeap<Reverse<(Nanos, u32)>>,
    rng: SmallRng,
    /// Link rate, to space the retries of refused greedy packets.
    link_bps: u64,
}

/// A Pareto sample of the given mean and shape (> 1).
fn pareto(rng: &mut SmallRng, mean: f64, shape: f64) -> f64 {
    let scale = mean * (shape - 1.0) / shape;
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    scale / u.powf(1.0 / shape)
}

/// An exponential sample of the given mean.
fn exponential(rng: &mut SmallRng, mean: f64) -> f64 {
    let u: f64 = rng.gen_range(f64::EPSILON..1.0);
    -mean * u.ln()
}

impl<'a> Generator<'a> {
    /// A generator for `workload` whose flow `i` goes to `routes[i]`, in front of a
    /// link of `link_bps`.
    ///
    /// # Panics
    /// If `routes` does not have one entry per flow or the workload is invalid
    /// ([`Workload::validate`]).
    #[must_use]
    pub fn new(workload: &'a Workload, routes: &[Route], link_bps: u64) -> Self {
        assert_eq!(routes.len(), workload.flows(), "one route per flow");
        if let Err(e) = workload.validate() {
            panic!("invalid workload: {e}");
        }
        let mut rng = SmallRng::seed_from_u64(workload.seed);
        let mut flows = Vec::with_capacity(routes.len());
        let mut heap = BinaryHeap::with_capacity(routes.len());
        for (i, g, k) in workload.each_flow() {
            let grp = &workload.groups[g];
            let start = grp.flow_start(k) as f64;
            let on_until = match grp.process {
                Process::OnOff { mean_on, shape, .. } => {
                    start + pareto(&mut rng, mean_on as f64, shape)
                }
                _ => f64::INFINITY,
            };
            let clock = match grp.process {
                Process::Poisson { rate_bps } => {
                    start + exponential(&mut rng, grp.packets.mean() * 8e9 / rate_bps as f64)
                }
                _ => start,
            };
            let live = grp.stop.is_none_or(|s| (clock as Nanos) < s);
            flows.push(FlowState {
                route: routes[i as usize],
                group: g as u32,
                left: grp.flow_size(k).unwrap_or(u64::MAX),
                clock,
                on_until,
                in_flight: 0,
                pending: live,
                due: clock as Nanos,
            });
            if live {
                heap.push(Reverse((clock as Nanos, i)));
            }
        }
        Generator {
            workload,
            flows,
            heap,
            rng,
            link_bps: link_bps.max(1),
        }
    }

    /// The route of workload flow `i`.
    #[must_use]
    pub fn route(&self, i: u32) -> Route {
        self.flows[i as usize].route
    }

    /// Schedules flow `i`'s next arrival at `at`, unless it is finished or past
    /// its group's stop time.
    fn reschedule(&mut self, i: u32, at: f64) {
        let f = &mut self.flows[i as usize];
        let grp = &self.workload.groups[f.group as usize];
        f.clock = at;
        if f.left == 0 || grp.stop.is_some_and(|s| at as Nanos >= s) {
            f.pending = false;
            return;
        }
        if f.pending && f.due == at as Nanos {
            return;
        }
        f.pending = true;
        f.due = at as Nanos;
        self.heap.push(Reverse((f.due, i)));
    }

    /// The time at which `gap` ns of "on" time have passed since `clock`, with
    /// the current "on" period ending at `on_until`; returns it with the end of
    /// the "on" period it falls in. Time only counts while on, so a source never
    /// exceeds its peak rate however short its periods: a packet whose gap spans
    /// several periods waits for all of them (one draw per period, counted by
    /// the run's event estimate).
    fn on_time_after(
        &mut self,
        clock: f64,
        gap: f64,
        on_until: f64,
        (mean_on, mean_off, shape): (Nanos, Nanos, f64),
    ) -> (f64, f64) {
        let (mut t, mut left, mut on_until) = (clock, gap, on_until);
        while t + left >= on_until {
            left -= (on_until - t).max(0.0);
            t = on_until + pareto(&mut self.rng, mean_off as f64, shape);
            on_until = t + pareto(&mut self.rng, mean_on as f64, shape);
        }
        (t + left, on_until)
    }

    /// Drops stale heap entries (flows whose next arrival moved) from the top.
    fn clean(&mut self) {
        while let Some(&Reverse((t, i))) = self.heap.peek() {
            let f = &self.flows[i as usize];
            if f.pending && f.due == t {
                return;
            }
            self.heap.pop();
        }
    }
}

impl Source for Generator<'_> {
    fn peek(&mut self) -> Option<Nanos> {
        self.clean();
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    fn pop(&mut self) -> Option<Packet> {
        self.clean();
        let Reverse((at, i)) = self.heap.pop()?;
        let f = self.flows[i as usize];
        let grp = &self.workload.groups[f.group as usize];
        let len = u64::from(grp.packets.sample(&mut self.rng)).min(f.left) as u32;
        let mut pkt = Packet::new(f.route.flow, len)
            .at(at)
            .class(f.route.leaf)
            .buffer(i);
        pkt.remaining = f.left;
        if let Some(d) = grp.deadline {
            pkt.deadline = at.saturating_add(d);
        }
        pkt.rank = grp.slack.unwrap_or(grp.priority);
        let left = if f.left == u64::MAX {
            u64::MAX
        } else {
            f.left - u64::from(len)
        };
        let gap = |rate: u64| f64::from(len) * 8e9 / rate as f64;
        let (next, on_until, in_flight) = match grp.process {
            Process::Constant { rate_bps } => (Some(f.clock + gap(rate_bps)), f.on_until, 0),
            Process::Poisson { rate_bps } => {
                let mean = grp.packets.mean() * 8e9 / rate_bps as f64;
                (
                    Some(f.clock + exponential(&mut self.rng, mean)),
                    f.on_until,
                    0,
                )
            }
            Process::OnOff {
                rate_bps,
                mean_on,
                mean_off,
                shape,
            } => {
                let (next, on_until) = self.on_time_after(
                    f.clock,
                    gap(rate_bps),
                    f.on_until,
                    (mean_on, mean_off, shape),
                );
                (Some(next), on_until, 0)
            }
            Process::Greedy { window } => {
                let in_flight = f.in_flight + 1;
                (
                    (in_flight < window).then_some(f.clock),
                    f.on_until,
                    in_flight,
                )
            }
        };
        let state = &mut self.flows[i as usize];
        state.left = left;
        state.on_until = on_until;
        state.in_flight = in_flight;
        state.pending = false;
        if let Some(t) = next {
            self.reschedule(i, t);
        }
        Some(pkt)
    }

    fn on_sent(&mut self, pkt: &Packet, now: Nanos) {
        let i = pkt.buffer;
        let f = &mut self.flows[i as usize];
        if let Process::Greedy { .. } = self.workload.groups[f.group as usize].process {
            f.in_flight -= 1;
            if !f.pending {
                self.reschedule(i, now as f64);
            }
        }
    }

    fn on_dropped(&mut self, pkt: &Packet, reason: DropReason, now: Nanos) {
        let i = pkt.buffer;
        let f = &mut self.flows[i as usize];
        if let Process::Greedy { .. } = self.workload.groups[f.group as usize].process {
            f.in_flight -= 1;
            // A refusal that no retry can change (a flow the policy does not
            // know, a packet above its flow's size limit, no leaf for it) ends
            // the flow: retrying every packet time would only repeat it, as
            // many times as the run has packet times.
            if matches!(
                reason,
                DropReason::UnknownFlow | DropReason::TooLarge | DropReason::Unclassified
            ) {
                f.left = 0;
                return;
            }
            // A greedy sender offers its refused bytes again one packet time later
            // (not at the same instant, where it would be refused again), and
            // holds back the rest of its window until then.
            if f.left != u64::MAX {
                f.left += u64::from(pkt.len);
            }
            let retry = now as f64 + f64::from(pkt.len.max(1)) * 8e9 / self.link_bps as f64;
            if !f.pending || (f.due as f64) < retry {
                f.pending = false;
                self.reschedule(i, retry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(g: &mut Generator<'_>, until: Nanos) -> Vec<Packet> {
        use crate::run::Source as _;
        let mut out = Vec::new();
        while g.peek().is_some_and(|t| t < until) {
            out.push(g.pop().unwrap());
        }
        out
    }

    fn routes(w: &Workload) -> Vec<Route> {
        (0..w.flows() as u32)
            .map(|i| Route { leaf: 1, flow: i })
            .collect()
    }

    #[test]
    fn constant_rate_is_exact_and_sorted() {
        let w = Workload {
            groups: vec![
                FlowGroup::new(
                    "a",
                    2,
                    0,
                    1000,
                    Process::Constant {
                        rate_bps: 8_000_000,
                    },
                ),
                FlowGroup::new(
                    "b",
                    1,
                    0,
                    500,
                    Process::Constant {
                        rate_bps: 4_000_000,
                    },
                ),
            ],
            seed: 1,
        };
        let r = routes(&w);
        let mut g = Generator::new(&w, &r, 1_000_000_000);
        let pkts = drain(&mut g, 1_000_000_000);
        assert!(pkts.windows(2).all(|p| p[0].arrival <= p[1].arrival));
        // 8 Mbit/s of 1000-byte packets: one per ms, 1000 in a second, per flow.
        assert_eq!(pkts.iter().filter(|p| p.buffer == 0).count(), 1000);
        assert_eq!(pkts.iter().filter(|p| p.buffer == 2).count(), 1000);
        assert!(pkts.iter().all(|p| p.class == 1 && p.remaining == u64::MAX));
    }

    #[test]
    fn finite_flows_stop_and_carry_remaining_bytes() {
        let mut grp = FlowGroup::new("f", 3, 0, 1500, Process::Constant { rate_bps: 1 << 30 });
        grp.flow_sizes = vec![4000, 1500];
        grp.stagger = 1_000;
        let w = Workload {
            groups: vec![grp],
            seed: 1,
        };
        let r = routes(&w);
        let mut g = Generator::new(&w, &r, 1_000_000_000);
        let pkts = drain(&mut g, u64::MAX);
        let f0: Vec<(u32, u64)> = pkts
            .iter()
            .filter(|p| p.buffer == 0)
            .map(|p| (p.len, p.remaining))
            .collect();
        assert_eq!(f0, [(1500, 4000), (1500, 2500), (1000, 1000)]);
        let f1: Vec<_> = pkts.iter().filter(|p| p.buffer == 1).collect();
        assert_eq!((f1.len(), f1[0].arrival), (1, 1_000));
        assert_eq!(pkts.iter().filter(|p| p.buffer == 2).count(), 3);
    }

    #[test]
    fn greedy_flows_keep_their_window() {
        let w = Workload {
            groups: vec![FlowGroup::new(
                "g",
                1,
                0,
                100,
                Process::Greedy { window: 4 },
            )],
            seed: 1,
        };
        let r = routes(&w);
        let mut g = Generator::new(&w, &r, 1_000_000_000);
        let first = drain(&mut g, 1);
        assert_eq!(first.len(), 4);
        assert_eq!(g.peek(), None, "the window is full");
        g.on_sent(&first[0], 50);
        assert_eq!(g.peek(), Some(50));
        let p = g.pop().unwrap();
        g.on_dropped(&p, DropReason::QueueFull, 60);
        // Retried one packet time (100 B at 1 Gbit/s = 800 ns) later, and the rest
        // of the window waits too.
        assert_eq!(g.peek(), Some(860));
        let p = g.pop().unwrap();
        assert_eq!((p.arrival, p.len), (860, 100));
        g.on_dropped(&p, DropReason::QueueFull, 860);
        assert_eq!(g.peek(), Some(1660));
    }

    #[test]
    fn generation_is_deterministic() {
        let mk = |seed| Workload {
            groups: vec![
                FlowGroup::new(
                    "p",
                    3,
                    0,
                    700,
                    Process::Poisson {
                        rate_bps: 50_000_000,
                    },
                ),
                FlowGroup::new(
                    "o",
                    2,
                    0,
                    1500,
                    Process::OnOff {
                        rate_bps: 100_000_000,
                        mean_on: 1_000_000,
                        mean_off: 2_000_000,
                        shape: 1.5,
                    },
                ),
            ],
            seed,
        };
        let run = |seed| {
            let w = mk(seed);
            let r = routes(&w);
            let mut g = Generator::new(&w, &r, 1_000_000_000);
            drain(&mut g, 100_000_000)
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
        let pkts = run(7);
        // Poisson at 50 Mbit/s per flow for 0.1 s: about 5 Mbit per flow.
        let bits: u64 = pkts
            .iter()
            .filter(|p| p.buffer < 3)
            .map(|p| u64::from(p.len) * 8)
            .sum();
        assert!((bits as f64 / 15e6 - 1.0).abs() < 0.1, "{bits}");
        // On/off at 100 Mbit/s on a third of the time (heavy-tailed: loose bound).
        let bits: u64 = pkts
            .iter()
            .filter(|p| p.buffer >= 3)
            .map(|p| u64::from(p.len) * 8)
            .sum();
        assert!(bits > 0 && bits < 20_000_000, "{bits}");
    }

    #[test]
    fn on_off_sources_never_exceed_their_peak_rate() {
        // 20 flows at a 1 Mbit/s peak with 1 ms on and off periods: 1500-byte
        // packets are 12 ms apart at the peak rate, so most periods are too short
        // for a packet; the offered load is half the peak, 10 Mbit/s, not one
        // packet per period (which would be 120 Mbit/s).
        let w = Workload {
            groups: vec![FlowGroup::new(
                "o",
                20,
                0,
                1500,
                Process::OnOff {
                    rate_bps: 1_000_000,
                    mean_on: 1_000_000,
                    mean_off: 1_000_000,
                    shape: 1.5,
                },
            )],
            seed: 3,
        };
        let r = routes(&w);
        let mut g = Generator::new(&w, &r, 1_000_000_000);
        let secs = 20;
        let bits: u64 = drain(&mut g, secs * 1_000_000_000)
            .iter()
            .map(|p| u64::from(p.len) * 8)
            .sum();
        let rate = bits as f64 / secs as f64;
        assert!(rate <= 20e6 * 1.0001, "above the peak: {rate}");
        assert!((rate / 10e6 - 1.0).abs() < 0.2, "{rate}");
    }
}
