//! Virtual-time simulation for Eiffel: run packet traces through any
//! [`eiffel_sched::Scheduler`] on an emulated link, and measure the service it
//! gives against proven bounds and the ideal fluid server.
//!
//! - [`link`]: the constant-rate [`Link`] and exact integer time ([`Ticks`]).
//! - [`trace`]: [`Trace`]s and seeded, deterministic workload generators.
//! - [`run`](mod@run): [`drive`], the event loop of a scheduler in front of a link
//!   for any [`Source`] and [`Observer`], and [`run()`] for a fixed trace.
//! - [`workload`]: [`Workload`]s of flow groups (constant, Poisson, on/off
//!   Pareto and greedy sources, finite flows) and their lazy [`Generator`].
//! - [`metrics`]: [`Metrics`], per-group and per-leaf throughput, latency
//!   histograms, drops, flow completion times and rates over time.
//! - [`gps`]: [`Gps`], the event-driven Generalized Processor Sharing fluid server.
//! - [`audit`](mod@audit): [`audit()`], per-flow B-WFI, T-WFI, worst lag, delay
//!   against GPS, shares and Jain's fairness index, with their definitions.
//! - [`fct`]: flow-level workloads, packet annotations and flow completion times
//!   ([`compare`] runs one workload through several schedulers).
//! - [`policy_run`]: [`run_tree`], a workload through a policy tree with per-node
//!   and per-group throughput, latency, drops and flow completion times: the
//!   engine behind `eiffel run`.
//!
//! ```
//! use eiffel_sched::{FlowConfig, FlowScheduler, Qfq};
//! use eiffel_sim::{audit, generate, run, FlowSpec, Link, Pattern};
//!
//! let flows = [FlowSpec { min_packet: 64, max_packet: 1500, pattern: Pattern::Backlogged { packets: 200, start_ns: 0 } }; 2];
//! let trace = generate(&flows, 0, 7);
//! let mut q = Qfq::new(2, 1024).unwrap();
//! q.add_flow(0, FlowConfig::weight(3)).unwrap();
//! q.add_flow(1, FlowConfig::weight(1)).unwrap();
//! let r = run(&mut q, &trace, Link::new(10_000_000_000));
//! let report = audit(&trace, &r, &[3.0, 1.0]);
//! assert!(report.flows[0].t_wfi_ns < report.flows[1].t_wfi_ns);
//! ```

pub mod audit;
pub mod estimate;
pub mod fct;
pub mod gps;
pub mod link;
pub mod metrics;
pub mod policy_run;
pub mod run;
pub mod trace;
pub mod workload;

pub use audit::{audit, audit_with, AuditOptions, FlowReport, Report};
pub use fct::{
    compare, completions, fct_stats, flow_workload, Annotated, FctRow, FctStats, FlowInfo,
    FlowOutcome, FlowTrace, FlowWorkload,
};
pub use gps::{FluidPacket, Gps};
pub use link::{Link, Ticks, TICKS_PER_BYTE};
pub use metrics::{GroupStats, LeafStats, Metrics};
pub use policy_run::{run_tree, run_tree_source, RunOptions, RunReport, RunSettings, SourceRun};
pub use run::{drive, run, Observer, Outcome, Run, Source};
pub use trace::{generate, Arrival, FlowSpec, Pattern, Trace};
pub use workload::{
    FlowGroup, Generator, GroupProblem, PacketSizes, Process, Route, Workload, WorkloadError,
};
