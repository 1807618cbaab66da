//! Schemes and ports: the one place that turns policies into per-port trees.
//!
//! A *scheme* is what a sweep compares: a transport, the policy every switch
//! port runs, the policy every host NIC runs, buffer sizes, the drop rule and
//! the ECN threshold. Each port gets its own [`PolicyTree`] built from the
//! policy's specification, with the tree's packet capacity set from the port's
//! buffer (`buffer / 375 B`, four packets per full frame's worth of bytes;
//! doubled for pFabric ports, whose victims stay in the tree until reached) so
//! that the byte buffer, not the tree, is what fills (a tree that does fill
//! first refuses with `queue_full`, counted like every drop). A policy's rules classify each flow once per
//! policy, by the flow's index and class.
//!
//! This module and [`crate::scenario`] are the only users of `eiffel-policy`.

use std::sync::Arc;

use eiffel_policy::Policy;
use eiffel_sched::PolicyTree;

pub use crate::portq::QueueForm;

use crate::event::{EventQueue, WheelQueue};
use crate::port::{DropPolicy, Port, PortConfig};
use crate::portq::PortQueue;
use crate::routing::Routes;
use crate::sim::{RunConfig, RunResult, SchemeTransport, Sim};
use crate::time::Duration;
use crate::topology::{Topology, NOT_A_HOST};
use crate::transport::ACK_LEN;
use crate::workload::Workload;

/// Bytes of the smallest packet: what a link's pipe can hold the most of.
const MIN_PACKET: u64 = ACK_LEN as u64;

/// Bytes per packet slot of a port's tree: a quarter of a full frame, so a
/// buffer can hold four times as many packets as full frames (a mix of data
/// and acknowledgements) before the tree itself refuses one (`queue_full`).
const SLOT_BYTES: u64 = 375;

/// One scheme of a comparison.
#[derive(Clone, Debug)]
pub struct Scheme {
    /// Name in reports.
    pub name: String,
    /// Transport of the flows that use the scheme's.
    pub transport: SchemeTransport,
    /// Policy of every switch port.
    pub switch_policy: Arc<Policy>,
    /// Policy of every host NIC.
    pub host_policy: Arc<Policy>,
    /// Buffer of each switch port, bytes (unless the link sets its own).
    pub buffer: u64,
    /// Buffer of each host NIC, bytes.
    pub host_buffer: u64,
    /// What a full buffer drops.
    pub drop: DropPolicy,
    /// DCTCP marking threshold at every port, bytes.
    pub ecn_threshold: Option<u64>,
}

/// Per-port link properties that are not part of the topology.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LinkExtras {
    /// Random loss probability per port index.
    pub loss: Vec<(u32, f64)>,
}

/// A port's buffer and tree capacity.
fn buffer_of(topo: &Topology, scheme: &Scheme, port: u32) -> (u64, u32, bool) {
    let spec = &topo.ports()[port as usize];
    let host = topo.host_index(spec.from) != NOT_A_HOST;
    let buffer = spec.link.buffer.unwrap_or(if host {
        scheme.host_buffer
    } else {
        scheme.buffer
    });
    let mut cap = buffer.div_ceil(SLOT_BYTES).max(4);
    if scheme.drop == DropPolicy::LowestPriority {
        cap *= 2;
    }
    (buffer, cap.min(u64::from(u32::MAX / 2)) as u32, host)
}

/// Flow slots of a policy's per-flow leaves (the smallest leaf's), 0 if none.
fn flow_slots(policy: &Policy) -> u32 {
    policy
        .spec()
        .nodes
        .iter()
        .filter_map(|n| n.per_flow.map(|pf| pf.max_flows))
        .min()
        .unwrap_or(0)
}

fn tree_for(policy: &Policy, capacity: u32) -> PolicyTree {
    let mut spec = policy.spec().clone();
    spec.capacity = capacity;
    PolicyTree::new(spec).expect("a validated policy builds with any positive capacity")
}

/// The queue of a port running `policy` with `capacity` packets, whose ranks
/// stay at or below `max_rank`.
fn queue_for(policy: &Policy, capacity: u32, max_rank: u64, form: QueueForm) -> PortQueue {
    let mut spec = policy.spec().clone();
    spec.capacity = capacity;
    PortQueue::build(spec, max_rank, form)
}

/// Which queues the ports of a run get: the form, and the largest rank a
/// packet of the run carries (its largest flow's size; `u64::MAX` when
/// unknown or unbounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    /// Specialised queues where equivalent, or always the policy tree.
    pub form: QueueForm,
    /// The largest `remaining` of any packet.
    pub max_rank: u64,
}

impl QueuePlan {
    /// Specialised queues where equivalent for ranks up to `u64::MAX` (so
    /// never a pFabric one, whose window is finite).
    pub const ANY_RANK: QueuePlan = QueuePlan {
        form: QueueForm::Fastest,
        max_rank: u64::MAX,
    };

    /// The plan for `workload`: its largest flow bounds every rank.
    #[must_use]
    pub fn for_workload(workload: &Workload, form: QueueForm) -> QueuePlan {
        let max_rank = workload
            .flows
            .iter()
            .map(|f| match f.transport {
                crate::workload::FlowTransport::Scheme => f.size.max(1),
                crate::workload::FlowTransport::Udp { .. } => 0,
            })
            .max()
            .unwrap_or(0);
        QueuePlan { form, max_rank }
    }
}

/// Most packets a link holds in flight: its delay over the shortest packet's
/// transmission time.
fn pipe_capacity(topo: &Topology, port: u32) -> usize {
    let l = topo.ports()[port as usize].link;
    let per = l.rate.tx_time_ceil(MIN_PACKET).as_nanos().max(1);
    (l.delay.as_nanos() / per) as usize + 4
}

/// Port `p` of `topo` for `scheme`, with random loss `loss`, and whether it
/// is a host's port.
/// Specialised queues built so far, by (host port, capacity): the ports of
/// one kind share a policy, so one tree per kind decides whether a
/// specialised queue serves as it would, and the others copy the answer
/// instead of building their own tree to ask.
type Specialised = Vec<((bool, u32), PortQueue)>;

fn build_port(
    topo: &Topology,
    scheme: &Scheme,
    p: u32,
    loss: f64,
    plan: QueuePlan,
    made: &mut Specialised,
) -> (Port, bool) {
    let spec = &topo.ports()[p as usize];
    let (buffer, cap, host) = buffer_of(topo, scheme, p);
    let policy = if host {
        &scheme.host_policy
    } else {
        &scheme.switch_policy
    };
    let cfg = PortConfig {
        rate: spec.link.rate,
        delay: spec.link.delay,
        buffer,
        drop: scheme.drop,
        ecn_threshold: scheme.ecn_threshold,
        loss,
    };
    let queue = match made.iter().find(|(k, _)| *k == (host, cap)) {
        Some((_, q)) => q.empty_copy().expect("only specialised queues are kept"),
        None => {
            let q = queue_for(policy, cap, plan.max_rank, plan.form);
            if let Some(copy) = q.empty_copy() {
                made.push(((host, cap), copy));
            }
            q
        }
    };
    let port = Port::new(cfg, queue, flow_slots(policy), pipe_capacity(topo, p));
    (port, host)
}

/// The ports of `topo` for `scheme`, and each port's policy index (0: switch
/// policy, 1: host policy), with queues for any rank ([`QueuePlan::ANY_RANK`]).
#[must_use]
pub fn build_ports(topo: &Topology, scheme: &Scheme, extras: &LinkExtras) -> (Vec<Port>, Vec<u8>) {
    build_ports_with(topo, scheme, extras, QueuePlan::ANY_RANK)
}

/// [`build_ports`] with the queues of `plan`.
#[must_use]
pub fn build_ports_with(
    topo: &Topology,
    scheme: &Scheme,
    extras: &LinkExtras,
    plan: QueuePlan,
) -> (Vec<Port>, Vec<u8>) {
    let mut ports = Vec::with_capacity(topo.ports().len());
    let mut which = Vec::with_capacity(topo.ports().len());
    let mut made = Specialised::new();
    for i in 0..topo.ports().len() as u32 {
        let loss = extras
            .loss
            .iter()
            .find(|&&(q, _)| q == i)
            .map_or(0.0, |&(_, l)| l);
        let (port, host) = build_port(topo, scheme, i, loss, plan, &mut made);
        ports.push(port);
        which.push(u8::from(host));
    }
    (ports, which)
}

/// Bytes the process's allocator has handed out and not taken back, where
/// the C library says (glibc).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn allocated_bytes() -> Option<u64> {
    // SAFETY: `mallinfo2` takes no argument, only reads the allocator's
    // counters under its own locks, and returns a plain struct by value.
    let m = unsafe { libc::mallinfo2() };
    Some((m.uordblks + m.hblkhd) as u64)
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn allocated_bytes() -> Option<u64> {
    None
}

/// Bytes one port of each kind takes when built, measured by building it
/// (one at a time, then freed); `None` where the allocator cannot say.
fn measured_port_bytes(topo: &Topology, scheme: &Scheme, p: u32) -> Option<u64> {
    let before = allocated_bytes()?;
    // Any rank: the tree where a pFabric port might use it, the larger.
    let (port, _) = build_port(
        topo,
        scheme,
        p,
        0.0,
        QueuePlan::ANY_RANK,
        &mut Specialised::new(),
    );
    let after = allocated_bytes()?;
    drop(port);
    Some(after.saturating_sub(before))
}

/// Bytes a run of `scheme` over `topo` with `flows` flows is expected to
/// allocate: its ports (trees, packet pools, per-flow tables, queue buckets,
/// links), the routes, the packet store, flow state, the event list and the
/// run's result.
#[must_use]
pub fn estimate_memory(topo: &Topology, routes: &Routes, scheme: &Scheme, flows: usize) -> u64 {
    let mut total = routes.memory() as u64;
    // Ports of the same kind (end, buffer, link) take the same bytes: build
    // one of each and measure it, or model it where the allocator cannot say.
    let mut kinds: Vec<((bool, u64, u32, usize), u64)> = Vec::new();
    for i in 0..topo.ports().len() as u32 {
        let (buffer, cap, is_host) = buffer_of(topo, scheme, i);
        let pipe = pipe_capacity(topo, i);
        let key = (is_host, buffer, cap, pipe);
        let bytes = match kinds.iter().find(|(k, _)| *k == key) {
            Some(&(_, b)) => b,
            None => {
                let policy = if is_host {
                    &scheme.host_policy
                } else {
                    &scheme.switch_policy
                };
                let b = measured_port_bytes(topo, scheme, i).unwrap_or_else(|| {
                    tree_memory(policy, cap)
                        + u64::from(cap) * (64 + 56 + 8)
                        + pipe as u64 * 16
                        + 12_000
                        + buffer / 1_000
                });
                kinds.push((key, b));
                b
            }
        };
        // The run's packet store: a slot and a free index per packet the
        // port can hold or have in flight.
        let store =
            (u64::from(cap) + pipe as u64) * (std::mem::size_of::<crate::packet::Pkt>() as u64 + 4);
        total += bytes + store;
    }
    let events = WheelQueue::memory(
        crate::sim::event_capacity(topo.ports().len(), flows),
        crate::sim::event_horizon(topo),
    );
    total += events;
    total += flows as u64 * (std::mem::size_of::<crate::workload::FlowSpec>() as u64 + 520);
    total += result_memory(topo, flows);
    // What grows during a run (reorder buffers, the far event heap, occupancy
    // samples) and the allocator's rounding: a tenth on top.
    total + total / 10
}

/// Bytes of a tree of `policy` holding `capacity` packets: its queues'
/// buckets and element nodes, and its per-flow tables.
fn tree_memory(policy: &Policy, capacity: u32) -> u64 {
    let t = tree_for(policy, capacity);
    let mut b = 0u64;
    for n in t.nodes() {
        for q in &n.queues {
            let halves = if q.kind.is_circular() { 2 } else { 1 };
            b += q.config.buckets as u64 * 16 * halves + q.config.capacity as u64 * 40;
        }
        if let Some(pf) = n.spec.per_flow {
            b += u64::from(pf.max_flows) * 96;
        }
    }
    b
}

/// Bytes of one run's result, kept until the sweep's report is built: per
/// flow its result, per port its counters and latency histogram.
#[must_use]
pub fn result_memory(topo: &Topology, flows: usize) -> u64 {
    let per_port = std::mem::size_of::<crate::sim::PortResult>() as u64 + 2_048;
    flows as u64 * std::mem::size_of::<crate::sim::FlowResult>() as u64
        + topo.ports().len() as u64 * per_port
}

/// Runs `workload` through `scheme` over `topo`, with the default event queue.
#[must_use]
pub fn simulate(
    topo: &Topology,
    routes: &Routes,
    scheme: &Scheme,
    extras: &LinkExtras,
    workload: &Workload,
    cfg: RunConfig,
    progress: impl FnMut(u64, crate::time::Time),
) -> RunResult {
    simulate_with::<WheelQueue>(
        topo,
        routes,
        scheme,
        extras,
        workload,
        cfg,
        QueueForm::Fastest,
        progress,
    )
}

/// [`simulate`] with a chosen event queue and form of port queues.
#[must_use]
#[allow(clippy::too_many_arguments)]
pub fn simulate_with<Q: EventQueue>(
    topo: &Topology,
    routes: &Routes,
    scheme: &Scheme,
    extras: &LinkExtras,
    workload: &Workload,
    cfg: RunConfig,
    form: QueueForm,
    progress: impl FnMut(u64, crate::time::Time),
) -> RunResult {
    let plan = QueuePlan::for_workload(workload, form);
    let (ports, which) = build_ports_with(topo, scheme, extras, plan);
    let policies = [&scheme.switch_policy, &scheme.host_policy];
    let sim: Sim<'_, Q> = Sim::new(
        topo,
        routes,
        ports,
        which,
        workload,
        cfg,
        |p, flow, class| policies[p].classify_ids(flow, class),
    );
    sim.run(progress)
}

/// The default drain: how long after the last arrival a run may continue.
pub const DEFAULT_DRAIN: Duration = Duration::from_millis(1_000);
