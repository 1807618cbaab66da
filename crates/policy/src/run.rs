//! A workload file through a policy file: the policy's tree and rules and the
//! workload's flows handed to `eiffel-sim`'s engine ([`eiffel_sim::policy_run`],
//! whose report types are re-exported here). This crate holds the file formats;
//! the simulation is the simulator's.

use eiffel_sched::{Nanos, PolicyTree};
use eiffel_sim::{run_tree, Observer, Route};

pub use eiffel_sim::policy_run::{
    Fct, FlowReport, Latency, LeafSeries, NodeReport, RunOptions, RunReport, RunSettings, Totals,
};

pub use eiffel_sim::estimate::RunEstimate;

use crate::budget::Estimate;
use crate::workload::WorkloadFile;
use crate::Policy;

/// What a run of a workload through a policy will cost, estimated before it
/// starts ([`crate::budget`]).
#[derive(Clone, Debug)]
pub struct RunCost {
    /// Every allocation, charged to the key that causes it: the policy's tree
    /// and flow table, the workload's flows, the run's histograms and series.
    pub memory: Estimate,
    /// The run's expected events and its own allocations.
    pub run: RunEstimate,
}

/// Refuses a workload whose packets could never enter `policy`: a flow group
/// whose every packet is larger than the policy's `mtu` (each would be dropped
/// as `too_large`). Returns warnings, at the same key, for groups with only
/// some packets above the mtu.
///
/// # Errors
/// A group whose smallest packet exceeds the mtu, at its `packet` key.
pub fn check_fits(
    policy: &Policy,
    w: &WorkloadFile,
) -> Result<Vec<crate::PolicyError>, crate::PolicyError> {
    let mtu = policy.spec().mtu;
    let mut warnings = Vec::new();
    for (i, g) in w.workload.groups.iter().enumerate() {
        if g.packets.max() <= mtu {
            continue;
        }
        let (what, fatal) = if g.packets.min() > mtu {
            ("every one", true)
        } else {
            ("those", false)
        };
        let message = format!(
            "packets of up to {} B are larger than the mtu of {} ({mtu} B): {what} would be dropped as too_large",
            g.packets.max(),
            policy.file_name()
        );
        let e = w.error_at(&format!("flow[{i}].packet"), message);
        if fatal {
            return Err(e);
        }
        warnings.push(e);
    }
    Ok(warnings)
}

/// Estimates the run of `w` through `policy` with `opts`; allocates nothing
/// that grows with the inputs.
#[must_use]
pub fn estimate(policy: &Policy, w: &WorkloadFile, opts: &RunOptions) -> RunCost {
    let spec = policy.spec();
    // The run keeps per-leaf statistics for every node index (class ids are node
    // indices), and a merged histogram per node for the report.
    let nodes = spec.nodes.len();
    let run = eiffel_sim::estimate::estimate(&w.workload, nodes, nodes, opts);
    let mut memory = policy.estimate();
    let largest = w
        .workload
        .groups
        .iter()
        .enumerate()
        .max_by_key(|(_, g)| g.count)
        .map_or(0, |(i, _)| i);
    memory.charge(
        w.at_key(&format!("flow[{largest}].count")),
        format!("the state of {} workload flows", w.workload.flows()),
        run.flow_bytes,
    );
    memory.charge(
        policy.at_key("node"),
        format!(
            "latency histograms (two per node of {nodes} and per flow group of {})",
            w.workload.groups.len()
        ),
        run.histogram_bytes,
    );
    memory.charge(
        policy.at_key("node"),
        format!("rates over time of {nodes} nodes"),
        run.series_bytes,
    );
    RunCost { memory, run }
}

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
