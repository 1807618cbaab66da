//! Traffic: what flows a run carries, generated before the run from the
//! scenario's traffic specifications, the load and the seed.
//!
//! - [`Traffic::Poisson`]: flows arrive as a Poisson process between random
//!   distinct host pairs, sizes drawn from a distribution, at a rate that puts
//!   `load x share` of each sending host's link capacity into payload:
//!   `lambda = load x share x sum(host rates) / (8 x mean size)`.
//! - [`Traffic::Coflows`]: the same for coflows, each `1..=2w-1` sub-flows
//!   (mean `w`) between independent random pairs; its completion time is that
//!   of its last sub-flow. With `deadline`, every packet of a coflow carries the
//!   slack to the coflow's deadline, `arrival + largest sub-flow / host rate`
//!   (calendar queues, section 4.3).
//! - [`Traffic::Incast`]: many senders to one receiver at once, repeated; each
//!   round is a coflow.
//! - [`Traffic::Flows`]: explicit flows between named hosts: finite or
//!   long-lived transfers with the scheme's transport, or datagram sources.
//!
//! The workload depends on the load and the seed only, never on the scheme, so
//! every scheme of a sweep sees the same flows.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::cdf::Cdf;
use crate::routing::mix64;
use crate::time::{Duration, Rate, Time};
use crate::topology::Topology;
use crate::transport::udp::UdpPattern;

/// Flow sizes.
#[derive(Clone, Debug, PartialEq)]
pub enum Sizes {
    /// An empirical distribution.
    Cdf(Arc<Cdf>),
    /// One size.
    Fixed(u64),
    /// Uniform in `min..=max` bytes.
    Uniform(u64, u64),
}

impl Sizes {
    /// Mean size in bytes.
    #[must_use]
    pub fn mean(&self) -> f64 {
        match self {
            Sizes::Cdf(c) => c.mean(),
            Sizes::Fixed(s) => *s as f64,
            Sizes::Uniform(a, b) => (*a + *b) as f64 / 2.0,
        }
    }

    /// A random size.
    pub fn sample<R: Rng>(&self, rng: &mut R) -> u64 {
        match self {
            Sizes::Cdf(c) => c.sample(rng),
            Sizes::Fixed(s) => *s,
            Sizes::Uniform(a, b) => rng.gen_range(*a..=*b),
        }
    }
}

/// Which hosts a random traffic uses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostSet {
    /// Every host.
    All,
    /// These host numbers (at least two).
    List(Vec<u32>),
}

impl HostSet {
    fn resolve(&self, topo: &Topology) -> Vec<u32> {
        match self {
            HostSet::All => (0..topo.hosts().len() as u32).collect(),
            HostSet::List(v) => v.clone(),
        }
    }
}

/// How a flow sends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FlowTransport {
    /// The scheme's transport (TCP, DCTCP or pFabric).
    Scheme,
    /// A datagram source.
    Udp {
        /// Rate (peak rate for on/off).
        rate: Rate,
        /// Bytes per packet on the wire.
        len: u16,
        /// Constant or on/off.
        pattern: UdpPattern,
    },
}

/// One traffic specification of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Traffic {
    /// Poisson arrivals of flows between random host pairs.
    Poisson {
        /// Name in reports.
        name: String,
        /// Flow sizes.
        sizes: Sizes,
        /// Fraction of the run's load.
        share: f64,
        /// Hosts that send and receive.
        hosts: HostSet,
        /// Flows to generate; `None`: until the span of the counted traffics.
        flows: Option<u32>,
        /// Class the policies' rules see.
        class: u32,
    },
    /// Poisson arrivals of coflows.
    Coflows {
        /// Name in reports.
        name: String,
        /// Sub-flow sizes.
        sizes: Sizes,
        /// Mean sub-flows per coflow.
        width: u32,
        /// Fraction of the run's load.
        share: f64,
        /// Hosts that send and receive.
        hosts: HostSet,
        /// Coflows to generate; `None`: until the span of the counted traffics.
        coflows: Option<u32>,
        /// Class the policies' rules see.
        class: u32,
        /// Whether packets carry the slack to the coflow's deadline.
        deadline: bool,
    },
    /// Synchronized many-to-one transfers.
    Incast {
        /// Name in reports.
        name: String,
        /// Sending hosts.
        senders: Vec<u32>,
        /// Receiving host.
        receiver: u32,
        /// Bytes each sender sends per round (drawn per sender and round).
        sizes: Sizes,
        /// First round.
        start: Time,
        /// Rounds.
        rounds: u32,
        /// Time between rounds.
        interval: Duration,
        /// Class the policies' rules see.
        class: u32,
    },
    /// Explicit flows.
    Flows {
        /// Name in reports.
        name: String,
        /// Sending host.
        src: u32,
        /// Receiving host.
        dst: u32,
        /// Parallel flows.
        count: u32,
        /// Bytes (`u64::MAX`: long-lived).
        size: u64,
        /// Start time.
        start: Time,
        /// Stop time for long-lived and datagram flows (`None`: the run's end).
        stop: Option<Time>,
        /// Transport.
        transport: FlowTransport,
        /// Class the policies' rules see (of the first flow).
        class: u32,
        /// Flow `i` of `count` has class `class + i * class_step`.
        class_step: u32,
        /// Record per-packet delays (datagram flows).
        observe: bool,
    },
}

impl Traffic {
    /// Name in reports.
    #[must_use]
    pub fn name(&self) -> &str {
        match self {
            Traffic::Poisson { name, .. }
            | Traffic::Coflows { name, .. }
            | Traffic::Incast { name, .. }
            | Traffic::Flows { name, .. } => name,
        }
    }
}

/// Marks a flow outside any coflow.
pub const NO_COFLOW: u32 = u32::MAX;

/// One flow of a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowSpec {
    /// Sending host number.
    pub src: u32,
    /// Receiving host number.
    pub dst: u32,
    /// Payload bytes (`u64::MAX`: long-lived).
    pub size: u64,
    /// Arrival.
    pub start: Time,
    /// When a long-lived or datagram flow stops.
    pub stop: Time,
    /// Class for classification.
    pub class: u32,
    /// Coflow index or [`NO_COFLOW`].
    pub coflow: u32,
    /// Index of the traffic it came from.
    pub traffic: u16,
    /// Record per-packet delays.
    pub observe: bool,
    /// Transport.
    pub transport: FlowTransport,
    /// Absolute deadline (slack-carrying flows) or [`Time::NEVER`].
    pub deadline: Time,
}

/// One coflow of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoflowSpec {
    /// Arrival.
    pub start: Time,
    /// Sub-flows.
    pub width: u32,
    /// Total bytes.
    pub bytes: u64,
    /// Index of the traffic it came from.
    pub traffic: u16,
}

/// The flows and coflows of one run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    /// Flows in arrival order.
    pub flows: Vec<FlowSpec>,
    /// Coflows (their sub-flows name them).
    pub coflows: Vec<CoflowSpec>,
    /// Last arrival of a random traffic.
    pub span: Time,
}

fn pair<R: Rng>(rng: &mut R, hosts: &[u32]) -> (u32, u32) {
    let a = rng.gen_range(0..hosts.len());
    let mut b = rng.gen_range(0..hosts.len() - 1);
    if b >= a {
        b += 1;
    }
    (hosts[a], hosts[b])
}

fn capacity(topo: &Topology, hosts: &[u32]) -> f64 {
    hosts
        .iter()
        .map(|&h| topo.ports()[topo.host_port(h) as usize].link.rate.bps() as f64)
        .sum()
}

/// Exponential inter-arrival time of mean `1 / lambda` seconds, in ns (at
/// least 1).
fn gap<R: Rng>(rng: &mut R, lambda: f64) -> u64 {
    let u: f64 = 1.0 - rng.gen::<f64>();
    ((-u.ln() / lambda) * 1e9).max(1.0) as u64
}

struct Gen<'a> {
    topo: &'a Topology,
    load: f64,
    seed: u64,
    end: Time,
    out: Workload,
}

impl Gen<'_> {
    fn rng(&self, traffic: usize) -> SmallRng {
        SmallRng::seed_from_u64(mix64(
            self.seed ^ mix64(self.load.to_bits()) ^ mix64(traffic as u64 + 1),
        ))
    }

    fn flow(&self, src: u32, dst: u32, size: u64, start: Time, class: u32, t: usize) -> FlowSpec {
        FlowSpec {
            src,
            dst,
            size,
            start,
            stop: self.end,
            class,
            coflow: NO_COFLOW,
            traffic: t as u16,
            observe: false,
            transport: FlowTransport::Scheme,
            deadline: Time::NEVER,
        }
    }

    /// Poisson flows until `count` or, without a count, until `until`.
    #[allow(clippy::too_many_arguments)]
    fn poisson(
        &mut self,
        t: usize,
        sizes: &Sizes,
        share: f64,
        hosts: &HostSet,
        count: Option<u32>,
        until: Time,
        class: u32,
    ) {
        let hosts = hosts.resolve(self.topo);
        let lambda = self.load * share * capacity(self.topo, &hosts) / (8.0 * sizes.mean());
        if lambda <= 0.0 {
            return;
        }
        let mut rng = self.rng(t);
        let mut now = 0u64;
        let mut n = 0;
        loop {
            now += gap(&mut rng, lambda);
            if count.map_or(Time(now) > until, |c| n >= c) {
                break;
            }
            let (s, d) = pair(&mut rng, &hosts);
            let size = sizes.sample(&mut rng);
            self.out
                .flows
                .push(self.flow(s, d, size, Time(now), class, t));
            self.out.span = self.out.span.max(Time(now));
            n += 1;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn coflows(
        &mut self,
        t: usize,
        sizes: &Sizes,
        width: u32,
        share: f64,
        hosts: &HostSet,
        count: Option<u32>,
        until: Time,
        class: u32,
        deadline: bool,
    ) {
        let hosts = hosts.resolve(self.topo);
        let mean = sizes.mean() * f64::from(width);
        let lambda = self.load * share * capacity(self.topo, &hosts) / (8.0 * mean);
        if lambda <= 0.0 {
            return;
        }
        let rate = self.topo.ports()[self.topo.host_port(hosts[0]) as usize]
            .link
            .rate;
        let mut rng = self.rng(t);
        let mut now = 0u64;
        let mut n = 0;
        loop {
            now += gap(&mut rng, lambda);
            if count.map_or(Time(now) > until, |c| n >= c) {
                break;
            }
            let w = rng.gen_range(1..=2 * width.max(1) - 1);
            let id = self.out.coflows.len() as u32;
            let first = self.out.flows.len();
            let mut bytes = 0;
            let mut largest = 0;
            for _ in 0..w {
                let (s, d) = pair(&mut rng, &hosts);
                let size = sizes.sample(&mut rng);
                bytes += size;
                largest = largest.max(size);
                let mut f = self.flow(s, d, size, Time(now), class, t);
                f.coflow = id;
                self.out.flows.push(f);
            }
            if deadline {
                let due = Time(now) + rate.tx_time_ceil(largest);
                for f in &mut self.out.flows[first..] {
                    f.deadline = due;
                }
            }
            self.out.coflows.push(CoflowSpec {
                start: Time(now),
                width: w,
                bytes,
                traffic: t as u16,
            });
            self.out.span = self.out.span.max(Time(now));
            n += 1;
        }
    }
}

impl Gen<'_> {
    /// A random traffic `tr` (index `t`): `Some(count)` traffics generate
    /// their count, the others fill the span up to `until`.
    fn random(&mut self, t: usize, tr: &Traffic, counted: bool, until: Time) {
        match tr {
            Traffic::Poisson {
                sizes,
                share,
                hosts,
                flows,
                class,
                ..
            } if flows.is_some() == counted => {
                self.poisson(t, sizes, *share, hosts, *flows, until, *class);
            }
            Traffic::Coflows {
                sizes,
                width,
                share,
                hosts,
                coflows,
                class,
                deadline,
                ..
            } if coflows.is_some() == counted => {
                self.coflows(
                    t, sizes, *width, *share, hosts, *coflows, until, *class, *deadline,
                );
            }
            _ => {}
        }
    }

    /// Every round of an incast traffic, each a coflow.
    fn incast(&mut self, t: usize, tr: &Traffic) {
        let Traffic::Incast {
            senders,
            receiver,
            sizes,
            start,
            rounds,
            interval,
            class,
            ..
        } = tr
        else {
            return;
        };
        let mut rng = self.rng(t);
        for r in 0..*rounds {
            let at = *start + interval.times(u64::from(r));
            let id = self.out.coflows.len() as u32;
            let mut bytes = 0;
            for &s in senders {
                let size = sizes.sample(&mut rng);
                bytes += size;
                let mut f = self.flow(s, *receiver, size, at, *class, t);
                f.coflow = id;
                self.out.flows.push(f);
            }
            self.out.coflows.push(CoflowSpec {
                start: at,
                width: senders.len() as u32,
                bytes,
                traffic: t as u16,
            });
        }
    }

    /// The flows of an explicit traffic.
    fn explicit(&mut self, t: usize, tr: &Traffic) {
        let Traffic::Flows {
            src,
            dst,
            count,
            size,
            start,
            stop,
            transport,
            class,
            class_step,
            observe,
            ..
        } = tr
        else {
            return;
        };
        for i in 0..*count {
            let c = class.saturating_add(i.saturating_mul(*class_step));
            let mut f = self.flow(*src, *dst, *size, *start, c, t);
            f.stop = stop.unwrap_or(self.end);
            f.transport = *transport;
            f.observe = *observe;
            self.out.flows.push(f);
        }
    }
}

/// Sorts flows by arrival (stable: equal times keep generation order) and
/// numbers coflows in the order their first sub-flow arrives.
fn order(w: &mut Workload) {
    w.flows.sort_by_key(|f| f.start);
    let mut remap = vec![NO_COFLOW; w.coflows.len()];
    let mut order = Vec::with_capacity(w.coflows.len());
    for f in &mut w.flows {
        if f.coflow != NO_COFLOW {
            if remap[f.coflow as usize] == NO_COFLOW {
                remap[f.coflow as usize] = order.len() as u32;
                order.push(f.coflow);
            }
            f.coflow = remap[f.coflow as usize];
        }
    }
    w.coflows = order.iter().map(|&c| w.coflows[c as usize]).collect();
}

/// The flows of one run of `traffic` over `topo` at `load` with `seed`;
/// datagram and long-lived flows stop at `end` unless told otherwise.
#[must_use]
pub fn generate(traffic: &[Traffic], topo: &Topology, load: f64, seed: u64, end: Time) -> Workload {
    let mut g = Gen {
        topo,
        load,
        seed,
        end,
        out: Workload::default(),
    };
    // Counted random traffics first: they set the span the others fill.
    for (t, tr) in traffic.iter().enumerate() {
        g.random(t, tr, true, end);
    }
    let until = if g.out.span > Time::ZERO {
        g.out.span
    } else {
        end
    };
    for (t, tr) in traffic.iter().enumerate() {
        g.random(t, tr, false, until);
        g.incast(t, tr);
        g.explicit(t, tr);
    }
    order(&mut g.out);
    g.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::LinkParams;

    fn topo() -> Topology {
        let l = LinkParams::new(Rate::from_gbps(10), Duration::from_nanos(1000));
        Topology::leaf_spine(2, 2, 4, l, l).unwrap()
    }

    fn web(n: u32) -> Traffic {
        Traffic::Poisson {
            name: "bg".into(),
            sizes: Sizes::Cdf(Arc::new(Cdf::web_search())),
            share: 1.0,
            hosts: HostSet::All,
            flows: Some(n),
            class: 0,
        }
    }

    #[test]
    fn poisson_offers_the_load() {
        let t = topo();
        let w = generate(&[web(20_000)], &t, 0.5, 1, Time::NEVER);
        assert_eq!(w.flows.len(), 20_000);
        let bytes: f64 = w.flows.iter().map(|f| f.size as f64).sum();
        let offered = bytes * 8.0 / w.span.secs();
        let target = 0.5 * 8.0 * 10e9;
        assert!((offered / target - 1.0).abs() < 0.1, "offered {offered:e}");
        assert!(w.flows.iter().all(|f| f.src != f.dst));
        assert!(w.flows.windows(2).all(|p| p[0].start <= p[1].start));
    }

    #[test]
    fn same_seed_same_flows_different_seed_not() {
        let t = topo();
        let a = generate(&[web(100)], &t, 0.5, 1, Time::NEVER);
        let b = generate(&[web(100)], &t, 0.5, 1, Time::NEVER);
        let c = generate(&[web(100)], &t, 0.5, 2, Time::NEVER);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn coflows_fill_the_span_and_carry_deadlines() {
        let t = topo();
        let co = Traffic::Coflows {
            name: "co".into(),
            sizes: Sizes::Fixed(10_000),
            width: 10,
            share: 0.25,
            hosts: HostSet::All,
            coflows: None,
            class: 1,
            deadline: true,
        };
        let w = generate(&[web(2000), co], &t, 0.8, 3, Time::NEVER);
        assert!(!w.coflows.is_empty());
        let last = w.coflows.last().unwrap().start;
        assert!(last <= w.span);
        for f in w.flows.iter().filter(|f| f.coflow != NO_COFLOW) {
            let c = w.coflows[f.coflow as usize];
            assert_eq!(f.start, c.start);
            assert_eq!(
                f.deadline,
                c.start + Rate::from_gbps(10).tx_time_ceil(10_000)
            );
        }
        let counted: u32 = w.coflows.iter().map(|c| c.width).sum();
        assert_eq!(
            counted as usize,
            w.flows.iter().filter(|f| f.coflow != NO_COFLOW).count()
        );
    }
}
