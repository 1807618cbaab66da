//! `eiffel bench ...`: reproductions of the papers' measurements and side-by-side
//! comparisons. Every benchmark measures its baseline in the same run and reports
//! ratios against it. The `eiffel` binary's `bench` subcommand is [`BenchCommand`]
//! and [`run`].

use clap::{Args, Subcommand};

pub mod clock;
pub mod cq;
pub mod hqos;
pub mod mailbox;
mod netsim;
pub mod out;
pub mod policy;
pub mod probe;
mod pspat;
pub mod queues;
pub mod report;
pub mod sched;
mod shape;
pub mod summary;

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
    /// approximate queue's error (Eiffel Figs. 12-14), and a hold model, against
    /// std's BinaryHeap, the radix-heap crate and BTreeMap in the same run.
    Queues(queues::QueuesOpts),
    /// Fair-queueing schedulers: ns per enqueue/dequeue pair for NONE, FIFO, DRR,
    /// QFQ and WF2Q+ from 1 to 32768 flows (QFQ paper, Table 4) and on the QFQ
    /// authors' balanced controller workload.
    Sched(sched::SchedOpts),
    /// Calendar-queue policies: ns per packet of cq-wfq against wfq on a cffs and
    /// cq-edf against edf on a cffs, through a policy-tree leaf of 16 to 32768
    /// flows (calendar queues, NSDI'20).
    Cq(CommonOpts),
    /// PSPAT (section 6): decisions/s against client threads, rate stability under
    /// overload and victim latency, PSPAT against the same scheduler behind one lock.
    Pspat(pspat::PspatOpts),
    /// Single-producer single-consumer transfer: PSPAT's FastForward mailbox
    /// against rtrb, ringbuf and crossbeam's ArrayQueue, Mpps and ns per transfer,
    /// one by one and in batches.
    Mailbox(mailbox::MailboxOpts),
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
    /// Hierarchical QoS: Mpps of Eiffel's policy tree against DPDK's rte_sched on
    /// the same port/subport/pipe/traffic-class/queue hierarchy at 1K, 4K and 64K
    /// queues, and the same throughput shares under overload (rte_sched with the
    /// `dpdk` feature).
    Hqos(hqos::HqosOpts),
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
        BenchCommand::Mailbox(opts) => mailbox::run(&opts),
        BenchCommand::Policy(opts) => policy::run(&opts),
        BenchCommand::Shape(opts) => shape::run(&opts),
        BenchCommand::Netsim(opts) => netsim::run(&opts),
        BenchCommand::Hqos(opts) => hqos::run(&opts),
    }
}
