//! The discrete-event loop: events in time order, packets through ports and
//! links, transports at the hosts.
//!
//! A packet crossing one hop costs its arrival at the far end (`Arrive`) and,
//! when other packets wait behind it, the end of its transmission (`PortFree`,
//! which starts the next one); a port whose queue is empty when it starts a
//! transmission only notes when the link frees up, and a packet arriving
//! before then files the `PortFree`. Packets on a link leave in the order they were sent,
//! so each port keeps its in-flight packets in a FIFO and only the head's
//! arrival is an event: the event list holds about two entries per port plus
//! one timer per active flow, whatever the traffic. Retransmission timers are
//! lazy: a flow's deadline moves with every acknowledgement but an event is
//! filed only when no earlier one is pending, and a firing timer re-files
//! itself at the current deadline if that has moved.
//!
//! The loop allocates nothing per packet: packets live in a [`PacketStore`],
//! events are `Copy`, the transports append to one reused buffer.
//!
//! The run ends when every finite flow has completed and every datagram or
//! long-lived flow has stopped, or at the configured end, whichever is first;
//! flows unfinished at the end are reported as such.
//!
//! Accounting, checked at the end of a run when asked:
//! `created = consumed at hosts + dropped at ports + pFabric victims discarded
//! + held` (in queues, on links), and every port's own balances
//! ([`Port::check_invariants`]).

mod host;
mod net;
mod result;

use rand::rngs::SmallRng;
use rand::SeedableRng;

use crate::event::{Event, EventKind, EventQueue, WheelQueue};
use crate::packet::PacketStore;
use crate::port::Port;
use crate::routing::{mix64, Routes, MAX_HOPS};
use crate::slots::NO_SLOT;
use crate::time::{Duration, Time};
use crate::topology::Topology;
use crate::transport::pfabric::{PfabricParams, PfabricSender};
use crate::transport::recv::Receiver;
use crate::transport::tcp::{TcpParams, TcpSender};
use crate::transport::udp::{DelayStats, UdpSource};
use crate::transport::{Emit, Segments};
use crate::workload::{FlowSpec, Workload, NO_COFLOW};

pub use result::{CoflowResult, FlowResult, ObservedFlow, PortResult, RunResult};

/// Distinct policies a run may use (switch ports, host ports, ...).
pub const MAX_POLICIES: usize = 4;

/// The transport of a scheme's flows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SchemeTransport {
    /// TCP NewReno.
    Tcp(TcpParams),
    /// DCTCP.
    Dctcp(TcpParams),
    /// pFabric's rate control.
    Pfabric(PfabricParams),
}

impl SchemeTransport {
    /// Short name.
    #[must_use]
    pub fn name(&self) -> &'static str {
        match self {
            SchemeTransport::Tcp(_) => "tcp",
            SchemeTransport::Dctcp(_) => "dctcp",
            SchemeTransport::Pfabric(_) => "pfabric",
        }
    }
}

/// Everything a run needs besides the ports.
#[derive(Clone, Debug)]
pub struct RunConfig {
    /// The scheme's transport.
    pub transport: SchemeTransport,
    /// The run stops here at the latest.
    pub end: Time,
    /// Long-lived flows' goodput, and the delays of observed flows' packets,
    /// are measured from here (packets sent from then on).
    pub measure_from: Time,
    /// Ports whose queues are sampled, and how often.
    pub sample: Option<(Vec<u32>, Duration)>,
    /// Seed of random losses and of the ECMP hash.
    pub seed: u64,
    /// Check every balance at the end (panics if one fails).
    pub check: bool,
}

#[derive(Clone, Debug)]
enum Sender {
    NotStarted,
    Tcp(TcpSender),
    Pfabric(PfabricSender),
    Udp(UdpSource),
}

#[derive(Clone, Debug)]
struct FlowState {
    spec: FlowSpec,
    hash: u64,
    seg: Segments,
    sender: Sender,
    recv: Receiver,
    /// Generation and time of the pending timer event.
    timer_gen: u32,
    timer_ev: Time,
    finished: Time,
    leaves: [u32; MAX_POLICIES],
    slots_fwd: [u32; MAX_HOPS],
    slots_rev: [u32; MAX_HOPS],
    /// Payload bytes delivered in order at the receiver.
    delivered: u64,
    /// Segments acknowledged when the measurement window opened.
    acked_at_measure: u32,
    /// Packets of this flow dropped anywhere.
    drops: u32,
    /// Index into the observed flows' statistics.
    observed: u32,
}

const NOT_OBSERVED: u32 = u32::MAX;

/// The direction bit mixed into an acknowledgement's ECMP hash.
const ACK_HASH: u64 = 0xA5A5_5A5A_0F0F_F0F0;

/// Event and packet counters of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events processed.
    pub events: u64,
    /// Events processed by [`EventKind`] (in declaration order).
    pub by_kind: [u64; 8],
    /// Packets created by senders and receivers.
    pub created: u64,
    /// Packets consumed at hosts.
    pub consumed: u64,
    /// Packets dropped at ports on arrival.
    pub dropped: u64,
    /// pFabric victims discarded when their port reached them.
    pub discarded: u64,
    /// Packets a sender could not create because the store was full.
    pub store_full: u64,
}

/// The event list's expected size for `ports` ports and `flows` flows: per
/// port a transmission end, an arrival, a wake-up; per flow its start, its
/// timer and a few superseded timers (an earlier deadline files a new event
/// and leaves the old one to be ignored).
#[must_use]
pub fn event_capacity(ports: usize, flows: usize) -> usize {
    3 * ports + 8 * flows + 1024
}

/// The horizon most events fall within: two hops of a full-size packet.
#[must_use]
pub fn event_horizon(topo: &Topology) -> Duration {
    let mtu = 1500;
    topo.max_hop_time(mtu) + topo.max_hop_time(mtu)
}

/// One simulation run.
pub struct Sim<'a, Q: EventQueue = WheelQueue> {
    now: Time,
    events: Q,
    topo: &'a Topology,
    routes: &'a Routes,
    ports: Vec<Port>,
    port_policy: Vec<u8>,
    /// Each port's far end: `(node, host number or NOT_A_HOST)`.
    far: Vec<(u32, u32)>,
    /// Mixed into every flow's ECMP hash.
    salt: u64,
    pkts: PacketStore,
    flows: Vec<FlowState>,
    coflow_left: Vec<u32>,
    coflow_done: Vec<Time>,
    observed: Vec<DelayStats>,
    cfg: RunConfig,
    rng: SmallRng,
    out: Vec<Emit>,
    pending_finite: usize,
    unstarted: usize,
    last_stop: Time,
    counters: Counters,
}

impl<'a, Q: EventQueue> Sim<'a, Q> {
    /// A run of `workload` over `topo` whose ports are `ports` (in the
    /// topology's port order), port `p` ordered by policy `port_policy[p]`;
    /// `leaf(policy, flow, class)` classifies a flow for a policy.
    ///
    /// # Panics
    /// If `ports` or `port_policy` does not match the topology.
    pub fn new(
        topo: &'a Topology,
        routes: &'a Routes,
        ports: Vec<Port>,
        port_policy: Vec<u8>,
        workload: &Workload,
        cfg: RunConfig,
        leaf: impl Fn(usize, u32, u32) -> u32,
    ) -> Self {
        assert_eq!(
            ports.len(),
            topo.ports().len(),
            "one port per topology port"
        );
        assert_eq!(port_policy.len(), ports.len(), "one policy index per port");
        let policies = port_policy
            .iter()
            .map(|&p| usize::from(p) + 1)
            .max()
            .unwrap_or(1);
        assert!(policies <= MAX_POLICIES, "at most {MAX_POLICIES} policies");
        let salt = mix64(cfg.seed ^ 0x5EED);
        let (flows, observed) = flow_states(workload, salt, policies, leaf);
        let store: usize = ports
            .iter()
            .map(|p| p.queue().capacity() as usize + p.in_flight_capacity())
            .sum::<usize>()
            + 64;
        let events = Q::with_capacity(
            event_capacity(ports.len(), flows.len()),
            event_horizon(topo),
        );
        let pending_finite = flows.iter().filter(|f| counts_as_finite(&f.spec)).count();
        let last_stop = flows
            .iter()
            .filter(|f| !counts_as_finite(&f.spec))
            .map(|f| f.spec.stop.min(cfg.end))
            .max()
            .unwrap_or(Time::ZERO);
        let coflows = workload.coflows.len();
        let mut coflow_left = vec![0u32; coflows];
        for f in workload.flows.iter().filter(|f| f.coflow != NO_COFLOW) {
            coflow_left[f.coflow as usize] += 1;
        }
        let rng = SmallRng::seed_from_u64(mix64(cfg.seed ^ 0x10_55));
        let far = topo
            .ports()
            .iter()
            .map(|p| (p.to, topo.host_index(p.to)))
            .collect();
        let unstarted = flows.len();
        Sim {
            now: Time::ZERO,
            events,
            topo,
            routes,
            ports,
            port_policy,
            far,
            salt,
            pkts: PacketStore::new(store),
            flows,
            coflow_left,
            coflow_done: vec![Time::NEVER; coflows],
            observed,
            cfg,
            rng,
            out: Vec::with_capacity(64),
            pending_finite,
            unstarted,
            last_stop,
            counters: Counters::default(),
        }
    }

    /// A flow's ECMP hash (its data; acknowledgements mix in [`ACK_HASH`]).
    #[inline]
    fn flow_hash(&self, flow: u32) -> u64 {
        mix64(self.salt ^ u64::from(flow))
    }

    fn push(&mut self, at: Time, ev: Event) {
        self.events.push(self.now, at, ev);
    }

    /// Runs to the end; `progress(events, now)` is called every `2^20` events.
    pub fn run(mut self, mut progress: impl FnMut(u64, Time)) -> RunResult {
        for i in 0..self.flows.len() {
            let at = self.flows[i].spec.start;
            self.push(at, Event::new(EventKind::FlowStart, i as u32, 0));
        }
        if let Some((_, every)) = &self.cfg.sample {
            let at = Time::ZERO + *every;
            self.push(at, Event::new(EventKind::Sample, 0, 0));
        }
        if self.cfg.measure_from > Time::ZERO {
            let at = self.cfg.measure_from;
            self.push(at, Event::new(EventKind::Measure, 0, 0));
        }
        while let Some((t, ev)) = self.events.pop() {
            if t > self.cfg.end {
                self.now = self.cfg.end;
                break;
            }
            self.now = t;
            self.counters.events += 1;
            self.counters.by_kind[ev.kind as usize] += 1;
            if self.counters.events & ((1 << 20) - 1) == 0 {
                progress(self.counters.events, t);
            }
            self.dispatch(ev);
            if self.pending_finite == 0 && self.unstarted == 0 && self.now >= self.last_stop {
                break;
            }
        }
        progress(self.counters.events, self.now);
        if self.cfg.check {
            self.check_invariants();
        }
        self.finish()
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev.kind {
            EventKind::PortFree => {
                let p = &mut self.ports[ev.index as usize];
                if ev.arg == p.free_gen {
                    p.free_pending = false;
                    self.try_send(ev.index);
                }
            }
            EventKind::Arrive => self.arrive(ev.index),
            EventKind::Timer => self.timer(ev.index, ev.arg),
            EventKind::FlowStart => self.start_flow(ev.index),
            EventKind::Emit => self.emit_datagram(ev.index),
            EventKind::PortWake => {
                let p = &mut self.ports[ev.index as usize];
                p.wake_at = Time::NEVER;
                self.try_send(ev.index);
            }
            EventKind::Sample => self.sample(),
            EventKind::Measure => self.measure(),
        }
    }

    fn sample(&mut self) {
        let Some((ports, every)) = &self.cfg.sample else {
            return;
        };
        for &p in ports {
            self.ports[p as usize].sample(self.now);
        }
        let next = self.now + *every;
        if next <= self.cfg.end && (self.pending_finite > 0 || next <= self.last_stop) {
            self.push(next, Event::new(EventKind::Sample, 0, 0));
        }
    }

    fn measure(&mut self) {
        for f in &mut self.flows {
            f.acked_at_measure = match &f.sender {
                Sender::Tcp(s) => s.acked(),
                Sender::Pfabric(s) => s.acked(),
                _ => 0,
            };
        }
    }

    /// The counters so far.
    #[must_use]
    pub fn counters(&self) -> Counters {
        self.counters
    }

    fn check_invariants(&self) {
        for (i, p) in self.ports.iter().enumerate() {
            p.check_invariants(&self.topo.port_name(i as u32));
        }
        let mut c = self.counters;
        c.discarded = self.ports.iter().map(|p| p.stats.discarded).sum();
        let held = self.pkts.in_use() as u64;
        assert_eq!(
            c.created,
            c.consumed + c.dropped + c.discarded + held,
            "created {} != consumed {} + dropped {} + discarded {} + held {held}",
            c.created,
            c.consumed,
            c.dropped,
            c.discarded
        );
        let queued: u64 = self
            .ports
            .iter()
            .map(|p| p.backlog() + p.in_flight() as u64)
            .sum();
        assert_eq!(held, queued, "packets held outside queues and links");
    }
}

/// The state of every flow before the run, and the delay statistics of the
/// observed ones; `leaf(policy, flow, class)` classifies each flow once per
/// policy.
fn flow_states(
    workload: &Workload,
    salt: u64,
    policies: usize,
    leaf: impl Fn(usize, u32, u32) -> u32,
) -> (Vec<FlowState>, Vec<DelayStats>) {
    let mut observed = Vec::new();
    let flows = workload
        .flows
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let mut leaves = [0u32; MAX_POLICIES];
            for (p, l) in leaves.iter_mut().enumerate().take(policies) {
                *l = leaf(p, i as u32, spec.class);
            }
            let obs = if spec.observe {
                observed.push(DelayStats::default());
                observed.len() as u32 - 1
            } else {
                NOT_OBSERVED
            };
            FlowState {
                spec: *spec,
                hash: mix64(salt ^ i as u64),
                seg: Segments::of(spec.size),
                sender: Sender::NotStarted,
                recv: Receiver::default(),
                timer_gen: 0,
                timer_ev: Time::NEVER,
                finished: Time::NEVER,
                leaves,
                slots_fwd: [NO_SLOT; MAX_HOPS],
                slots_rev: [NO_SLOT; MAX_HOPS],
                delivered: 0,
                acked_at_measure: 0,
                drops: 0,
                observed: obs,
            }
        })
        .collect();
    (flows, observed)
}

/// Whether a flow must complete for the run to end (finite transfers with the
/// scheme's transport).
fn counts_as_finite(spec: &FlowSpec) -> bool {
    spec.size != u64::MAX && matches!(spec.transport, crate::workload::FlowTransport::Scheme)
}
