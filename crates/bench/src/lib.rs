//! `eiffel bench ...`: reproductions of the papers' measurements and side-by-side
//! comparisons. Every benchmark measures its baseline in the same run and reports
//! ratios against it. The `eiffel` binary's `bench` subcommand is [`BenchCommand`]
//! and [`run`].

use clap::{Args, Subcommand};

mod cq;
mod netsim;
mod policy;
mod pspat;
mod queues;
pub mod report;
mod sched;
mod shape;

/// Options every benchmark accepts.
#[derive(Debug, Clone, Args)]
pub struct CommonOpts {
    /// A reduced sweep that finishes in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Print `{"results": [...]}` as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// The benchmark to run.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Integer priority queues: Mpps against packets per bucket and occupancy, and the
    /// approximate queue's error (Eiffel Figs. 12-14).
    Queues(CommonOpts),
    /// Fair-queueing schedulers: ns per enqueue/dequeue pair for NONE, FIFO, DRR,
    /// QFQ and WF2Q+ from 1 to 32768 flows (QFQ paper, Table 4).
    Sched(CommonOpts),
    /// Calendar-queue policies: ns per packet of cq-wfq against wfq on a cffs and
    /// cq-edf against edf on a cffs, through a policy-tree leaf of 16 to 32768
    /// flows (calendar queues, NSDI'20).
    Cq(CommonOpts),
    /// PSPAT (section 6): decisions/s against client threads, rate stability under
    /// overload and victim latency, PSPAT against the same scheduler behind one lock.
    Pspat(pspat::PspatOpts),
    /// Policy trees: the most flows one core schedules at 10 Gbit/s with pFabric
    /// and hClock on bucketed queues vs binary heaps, and the cost of pacing 20,000
    /// flows with one timing-wheel shaper vs a comparison heap (Eiffel section 5.1).
    Policy(CommonOpts),
    /// The network simulator: events per second on one core, its event list on
    /// Eiffel's timing wheel against a binary heap, whole runs of the Eiffel
    /// Fig. 15 fabric and the event list alone.
    Netsim(CommonOpts),
    /// Live traffic: Mpps of 64-byte frames and CPU per frame through `eiffel shape`
    /// with a policy, against a kernel bridge with HTB on the same veth topology
    /// (needs root).
    Shape(CommonOpts),
}

/// An error a benchmark reports instead of results.
pub type BenchError = Box<dyn std::error::Error>;

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> Result<(), BenchError> {
    match cmd {
        BenchCommand::Queues(opts) => queues::run(&opts),
        BenchCommand::Sched(opts) => sched::run(&opts),
        BenchCommand::Cq(opts) => cq::run(&opts),
        BenchCommand::Pspat(opts) => pspat::run(opts),
        BenchCommand::Policy(opts) => policy::run(&opts),
        BenchCommand::Shape(opts) => shape::run(&opts),
        BenchCommand::Netsim(opts) => netsim::run(&opts),
    }
}
