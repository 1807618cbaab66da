//! A workload file through a policy file: the policy's tree and rules and the
//! workload's flows handed to `eiffel-sim`'s engine ([`eiffel_sim::policy_run`],
//! whose report types are re-exported here). This crate holds the file formats;
//! the simulation is the simulator's.

use eiffel_sched::{Nanos, PolicyTree};
use eiffel_sim::{run_tree, Observer, Route};

pub use eiffel_sim::policy_run::{
    Fct, FlowReport, Latency, LeafSeries, NodeReport, RunOptions, RunReport, RunSettings, Totals,
};

use crate::workload::WorkloadFile;
use crate::Policy;

impl RunSettings for WorkloadFile {
    fn duration(&self) -> Nanos {
        self.duration
    }
    fn link_rate(&self) -> u64 {
        self.link_rate
    }
    fn seed(&self) -> u64 {
        self.workload.seed
    }
}

/// Routes every workload flow through the policy's rules.
#[must_use]
pub fn routes(policy: &Policy, w: &WorkloadFile) -> Vec<Route> {
    eiffel_sim::policy_run::routes(&w.workload, |flow, class| policy.classify_ids(flow, class))
}

/// Runs workload `w` through `policy` on an emulated link in virtual time;
/// `progress` hears the simulated time every few thousand packets.
#[must_use]
pub fn run(
    policy: &Policy,
    w: &WorkloadFile,
    opts: RunOptions,
    progress: impl FnMut(Nanos) + 'static,
) -> RunReport {
    run_with(policy, w, opts, progress, &mut ())
}

/// [`run`], with `extra` observing every packet too (tests check definitions
/// packet by packet with it).
pub fn run_with<O: Observer<PolicyTree>>(
    policy: &Policy,
    w: &WorkloadFile,
    opts: RunOptions,
    progress: impl FnMut(Nanos) + 'static,
    extra: &mut O,
) -> RunReport {
    let routes = routes(policy, w);
    let name = policy.file_name();
    run_tree(
        name,
        policy.build(),
        &w.workload,
        &routes,
        opts,
        progress,
        extra,
    )
}
