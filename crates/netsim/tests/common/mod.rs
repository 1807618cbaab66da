//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::Arc;

use eiffel_netsim::port::DropPolicy;
use eiffel_netsim::routing::Routes;
use eiffel_netsim::setup::{simulate, LinkExtras, Scheme};
use eiffel_netsim::sim::{RunConfig, RunResult, SchemeTransport};
use eiffel_netsim::time::Time;
use eiffel_netsim::topology::Topology;
use eiffel_netsim::workload::Workload;
use eiffel_policy::Policy;

pub const FIFO: &str = r#"
[[node]]
name = "q"
"#;

pub fn policy(text: &str) -> Arc<Policy> {
    Arc::new(Policy::parse(text, "test.toml").expect("valid test policy"))
}

pub fn scheme(name: &str, transport: SchemeTransport, policy_text: &str, buffer: u64) -> Scheme {
    Scheme {
        name: name.into(),
        transport,
        switch_policy: policy(policy_text),
        host_policy: policy(FIFO),
        buffer,
        host_buffer: 4_000_000,
        drop: DropPolicy::Tail,
        ecn_threshold: None,
    }
}

pub fn config(end: Time) -> RunConfig {
    RunConfig {
        transport: SchemeTransport::Tcp(Default::default()),
        end,
        measure_from: Time::ZERO,
        sample: None,
        seed: 1,
        check: true,
    }
}

pub fn run(
    topo: &Topology,
    scheme: &Scheme,
    extras: &LinkExtras,
    w: &Workload,
    mut cfg: RunConfig,
) -> RunResult {
    let routes = Routes::new(topo).unwrap();
    cfg.transport = scheme.transport;
    simulate(topo, &routes, scheme, extras, w, cfg, |_, _| {})
}
