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

use crate::event::{EventQueue, WheelQueue};
use crate::port::{DropPolicy, Port, PortConfig};
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

/// Most packets a link holds in flight: its delay over the shortest packet's
/// transmission time.
fn pipe_capacity(topo: &Topology, port: u32) -> usize {
    let l = topo.ports()[port as usize].link;
    let per = l.rate.tx_time_ceil(MIN_PACKET).as_nanos().max(1);
    (l.delay.as_nanos() / per) as usize + 4
}

/// The ports of `topo` for `scheme`, and each port's policy index (0: switch
/// policy, 1: host policy).
#[must_use]
pub fn build_ports(topo: &Topology, scheme: &Scheme, extras: &LinkExtras) -> (Vec<Port>, Vec<u8>) {
    let mut ports = Vec::with_capacity(topo.ports().len());
    let mut which = Vec::with_capacity(topo.ports().len());
    for (i, spec) in topo.ports().iter().enumerate() {
        let p = i as u32;
        let (buffer, cap, host) = buffer_of(topo, scheme, p);
        let policy = if host {
            &scheme.host_policy
        } else {
            &scheme.switch_policy
        };
        let loss = extras
            .loss
            .iter()
            .find(|&&(q, _)| q == p)
            .map_or(0.0, |&(_, l)| l);
        let cfg = PortConfig {
            rate: spec.link.rate,
            delay: spec.link.delay,
            buffer,
            drop: scheme.drop,
            ecn_threshold: scheme.ecn_threshold,
            loss,
        };
        ports.push(Port::new(
            cfg,
            tree_for(policy, cap),
            flow_slots(policy),
            pipe_capacity(topo, p),
        ));
        which.push(u8::from(host));
    }
    (ports, which)
}

/// Bytes a run of `scheme` over `topo` with `flows` flows is expected to
/// allocate: trees (packet pools, per-flow tables, queue buckets), the packet
/// store, flow state and the event list.
#[must_use]
pub fn estimate_memory(topo: &Topology, routes: &Routes, scheme: &Scheme, flows: usize) -> u64 {
    let mut total = routes.memory() as u64;
    let per_tree = |policy: &Policy| -> u64 {
        let t = tree_for(policy, 1);
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
    };
    let (sw, host) = (
        per_tree(&scheme.switch_policy),
        per_tree(&scheme.host_policy),
    );
    for i in 0..topo.ports().len() as u32 {
        let (buffer, cap, is_host) = buffer_of(topo, scheme, i);
        let pool = u64::from(cap) * (64 + 56 + 8);
        let pipe = pipe_capacity(topo, i) as u64 * 16;
        let fixed = if is_host { host } else { sw };
        total += pool + pipe + fixed + 12_000 + buffer / 1_000;
    }
    total + flows as u64 * (std::mem::size_of::<crate::workload::FlowSpec>() as u64 + 520)
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
    simulate_with::<WheelQueue>(topo, routes, scheme, extras, workload, cfg, progress)
}

/// [`simulate`] with a chosen event queue.
#[must_use]
pub fn simulate_with<Q: EventQueue>(
    topo: &Topology,
    routes: &Routes,
    scheme: &Scheme,
    extras: &LinkExtras,
    workload: &Workload,
    cfg: RunConfig,
    progress: impl FnMut(u64, crate::time::Time),
) -> RunResult {
    let (ports, which) = build_ports(topo, scheme, extras);
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
