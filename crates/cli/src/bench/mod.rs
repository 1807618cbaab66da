//! `eiffel bench ...`: reproductions of the papers' measurements. Every benchmark
//! measures its baseline in the same run and reports ratios against it.

use clap::{Args, Subcommand};

mod policy;
mod queues;
mod sched;

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
    /// Policy trees: the most flows one core schedules at 10 Gbit/s with pFabric
    /// and hClock on bucketed queues vs binary heaps, and the cost of pacing 20,000
    /// flows with one timing-wheel shaper vs a comparison heap (Eiffel section 5.1).
    Policy(CommonOpts),
}

/// An error a benchmark reports instead of results.
pub type BenchError = Box<dyn std::error::Error>;

/// Runs one benchmark.
pub fn run(cmd: BenchCommand) -> Result<(), BenchError> {
    match cmd {
        BenchCommand::Queues(opts) => queues::run(&opts),
        BenchCommand::Sched(opts) => sched::run(&opts),
        BenchCommand::Policy(opts) => policy::run(&opts),
    }
}
