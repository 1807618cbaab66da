//! Helpers shared by the integration tests: policies from text, schemes,
//! small topologies, runs with every balance checked.
#![allow(dead_code)]

use std::sync::Arc;

use eiffel_netsim::port::DropPolicy;
use eiffel_netsim::routing::Routes;
use eiffel_netsim::setup::{simulate, LinkExtras, Scheme};
use eiffel_netsim::sim::{RunConfig, RunResult, SchemeTransport};
use eiffel_netsim::time::{Duration, Rate, Time};
use eiffel_netsim::topology::{LinkParams, NodeKind, Topology, TopologyBuilder};
use eiffel_netsim::workload::{FlowTransport, Traffic};
use eiffel_policy::Policy;

pub const FIFO: &str = "[[node]]\nname = \"q\"\n";

pub fn policy(text: &str) -> Arc<Policy> {
    Arc::new(Policy::parse(text, "test.toml").expect("valid test policy"))
}

/// A scheme whose switch ports run `policy_text` and whose hosts run FIFOs.
pub fn scheme(transport: SchemeTransport, policy_text: &str, buffer: u64) -> Scheme {
    Scheme {
        name: transport.name().into(),
        transport,
        switch_policy: policy(policy_text),
        host_policy: policy(FIFO),
        buffer,
        host_buffer: 4_000_000,
        drop: DropPolicy::Tail,
        ecn_threshold: None,
    }
}

/// A run ending at `end`, balances checked, long-lived flows measured from
/// `measure_from`.
pub fn config(end: Time, measure_from: Time) -> RunConfig {
    RunConfig {
        transport: SchemeTransport::Tcp(Default::default()),
        end,
        measure_from,
        sample: None,
        seed: 1,
        check: true,
    }
}

pub fn run(
    topo: &Topology,
    scheme: &Scheme,
    extras: &LinkExtras,
    w: &eiffel_netsim::workload::Workload,
    mut cfg: RunConfig,
) -> RunResult {
    let routes = Routes::new(topo).unwrap();
    cfg.transport = scheme.transport;
    simulate(topo, &routes, scheme, extras, w, cfg, |_, _| {})
}

/// Senders `s0..` (access delays `delays`) and one receiver `r0` on two
/// switches joined by `neck`; access links of `access` rate.
pub fn star(delays: &[Duration], access: Rate, neck: LinkParams) -> Topology {
    let mut b = TopologyBuilder::new();
    let left = b.node("left", NodeKind::Switch).unwrap();
    let right = b.node("right", NodeKind::Switch).unwrap();
    for (i, &d) in delays.iter().enumerate() {
        let h = b.node(&format!("s{i}"), NodeKind::Host).unwrap();
        b.link(h, left, LinkParams::new(access, d)).unwrap();
    }
    let r = b.node("r0", NodeKind::Host).unwrap();
    b.link(r, right, LinkParams::new(access, Duration::from_micros(1)))
        .unwrap();
    b.link(left, right, neck).unwrap();
    b.finish().unwrap()
}

/// One flow of the scheme's transport from host `src` to host `dst`.
pub fn flow(src: u32, dst: u32, size: u64, start: Time) -> Traffic {
    Traffic::Flows {
        name: format!("f{src}"),
        src,
        dst,
        count: 1,
        size,
        start,
        stop: None,
        transport: FlowTransport::Scheme,
        class: 0,
        class_step: 0,
        observe: false,
    }
}
