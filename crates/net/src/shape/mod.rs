//! A transparent L2 bump in the wire that schedules live traffic by a policy tree:
//! what `eiffel shape` runs.
//!
//! ```text
//!  input ──RxRing──> [receive thread] ─descriptors─> PSPAT client mailbox
//!                     copy into frame pool,                │
//!                     classify (stable leaf ids)           v
//!                                                [arbiter: LiveTree = PolicyTree,
//!                                                 leaky-bucket link at link rate]
//!                                                          │ TX mailbox
//!                                                          v
//!  output <──TxRing── [dispatcher: TxSink] <── take frame, transmit, free slot
//!
//!  input  <──TxRing── [reverse thread] <──RxRing── output   (untouched)
//! ```
//!
//! - The receive thread owns the input's TPACKET_V3 ring, the classifier and the
//!   frame pool's filler; it copies each frame once into a slot and sends its
//!   descriptor to its PSPAT client mailbox (the `ingress` module). With
//!   [`ShapeConfig::queues`] > 1 there is one such thread per receive queue: its
//!   ring in a `PACKET_FANOUT` group (flows spread by hash), its own frame pool
//!   (the queue is the high byte of a descriptor's buffer id), its own share of
//!   the flow table (a range of flow ids) and its own mailbox.
//! - The PSPAT arbiter runs the policy tree ([`live::LiveTree`]) and releases
//!   descriptors at the emulated link rate to one dispatcher thread, which
//!   transmits the frames on the output's TX ring and frees the slots
//!   (`egress::TxSink`). Packets the tree drops go through the runtime's drop
//!   hook, which frees their slots.
//! - A separate thread forwards output-to-input frames ring to ring, unscheduled,
//!   so the other direction (TCP acknowledgements) flows untouched.
//! - With AF_XDP ([`ShapeConfig::io`], the default where it works) the same
//!   threads run over AF_XDP sockets sharing one UMEM (the `xdp` module): the
//!   frame pools' slots are the UMEM's chunks, so a frame is classified where the
//!   kernel put it and transmitted from there, never copied in user space.
//! - Nobody polls: the receive and reverse threads sleep in `ppoll(2)` until a
//!   frame arrives (or a flow expires); the arbiter sleeps until the next arrival
//!   or the next departure (see `eiffel_pspat::runtime`).
//!
//! # Link rate
//! The interfaces are faster than the policy (a veth moves gigabits), so the
//! policy only controls traffic if the bump is the bottleneck: the PSPAT arbiter's
//! emulated link releases at [`ShapeConfig::link_rate`]: a fixed rate, or the
//! policy root's rate limit (re-read at every reload), falling back to
//! [`DEFAULT_LINK_RATE_BPS`] when the root has none.
//!
//! # Sizes
//! A descriptor's length is the whole frame from the destination MAC on (without
//! FCS), as Linux qdiscs count it, so rates and limits include Ethernet headers.
//! The policy's `mtu` is the interfaces' MTU: the tree accepts frames up to
//! `mtu + `[`FRAME_OVERHEAD`].
//!
//! In GSO mode ([`ShapeConfig::offload`], AF_PACKET only) a GSO/TSO/GRO
//! super-frame is one descriptor whose length is what its segments take on the
//! wire ([`crate::vnet::wire_len`]); the tree then accepts descriptors up to
//! [`GSO_MAX_WIRE_LEN`] and every limit's burst grows by as much. Super-frames
//! wait in a second frame pool per receive queue (512 slots of 64 KiB), and the
//! transmit rings hold 256 slots of 68 KiB.
//!
//! The PSPAT client mailbox bounds the descriptors the runtime holds (a slot is
//! freed when the scheduler lets its packet go), so it is sized to the tree's
//! capacity (at most 65,536, the runtime's mailbox limit): the tree's own limits,
//! not the mailbox, decide what is dropped. The frame pool holds the mailbox, the
//! TX mailbox and one batch of each thread, so it runs dry only if the mailbox is
//! full first.
//!
//! # Accounting, reloads, shutdown
//! See [`stats`] for the balance `received = transmitted + dropped + queued`.
//! [`Bump::reload`] swaps policy tree and classifier without stopping traffic and
//! moves the queued packets ([`live`]). [`Bump::stop`] stops receiving, lets the
//! scheduler drain for a while, then discards the rest under the `shutdown` drop
//! reason, so the final [`Snapshot`] balances with nothing queued.

mod egress;
mod handoff;
mod ingress;
pub mod latency;
pub mod live;
pub mod metrics;
mod sample;
mod slots;
pub mod stats;
mod waker;
#[cfg(eiffel_xdp)]
mod xdp;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use eiffel_classify::{Classifier, ClassifyError, ClassifySpec};
use eiffel_pspat::{mailbox, Client, Config, Dispatch, Pspat, ShutdownMode};
use eiffel_sched::tree::TreeSpec;
use eiffel_sched::{ConfigError, DropReason, Packet, Scheduler};

use crate::afpacket::{FrameHeader, NetError, RxConfig, RxRing, TxConfig, TxRing};
use crate::frames::{frame_pool, PoolWatch};
use crate::offload::{GsoNeedsAfPacket, OffloadChoice, OffloadReport, Segmentation};
use crate::xdp::{IoChoice, IoReport, XdpError};
use egress::{Egress, EgressCounters, Reverse, ReverseCounters, TxSink};
use ingress::{ClassifierSlot, Ingress, IngressCounters};
use live::{LiveTree, Registry};
use sample::{node_info, sample_tree, NodeInfo, Rates, TreeSample};
use slots::{Drainers, Fillers, LARGE_SLOTS, LARGE_SLOT_SIZE};
use stats::ReloadStats;
pub use stats::Snapshot;
use waker::Waker;

/// The link rate used when the policy's root has no rate limit and none is given:
/// 1 Gbit/s, above what the 2-core machines this project runs on forward through
/// a packet socket, so the bump stays the bottleneck only by the policy's limits.
pub const DEFAULT_LINK_RATE_BPS: u64 = 1_000_000_000;

/// The largest descriptor length in GSO mode (the tree's `mtu` then): a 64 KiB
/// super-frame charged the headers its segments repeat, 96 KiB. A super-frame
/// cut into so many segments that it costs more is dropped by the tree (counted).
pub const GSO_MAX_WIRE_LEN: u32 = 96 * 1024;

/// Why GSO mode runs over AF_PACKET when the packet I/O was left to choose.
const GSO_OVER_PACKET: &str = "not used in GSO mode: XDP carries no offload metadata, \
     so super-frames cross only AF_PACKET";

/// Bytes a frame carries beyond its IP packet: the Ethernet header (14) and one
/// VLAN tag (4). Descriptors count whole frames (as Linux qdiscs do), so the bump
/// accepts frames up to the policy's `mtu` plus this.
pub const FRAME_OVERHEAD: u32 = 18;

/// How the emulated link's rate is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkRate {
    /// This many bits per second, whatever the policy says.
    Fixed(u64),
    /// The root's rate limit of the current policy, or the given default when it
    /// has none.
    FromPolicy {
        /// Rate when the root has no limit.
        default_bps: u64,
    },
}

impl LinkRate {
    /// The rate for a policy `spec`.
    #[must_use]
    pub fn for_policy(self, spec: &TreeSpec) -> u64 {
        match self {
            LinkRate::Fixed(bps) => bps,
            LinkRate::FromPolicy { default_bps } => spec
                .root()
                .and_then(|r| spec.nodes[r].limit)
                .map_or(default_bps, |l| l.rate.bps()),
        }
    }
}

/// Everything `eiffel shape` is told.
#[derive(Clone, Debug)]
pub struct ShapeConfig {
    /// Interface whose arrivals are scheduled.
    pub input: String,
    /// Interface the scheduled frames leave on.
    pub output: String,
    /// The emulated link's rate.
    pub link_rate: LinkRate,
    /// Bytes per frame-pool slot: the longest frame the scheduled direction takes.
    pub slot_size: usize,
    /// Receive rings (both interfaces).
    pub rx: RxConfig,
    /// Transmit rings (both interfaces).
    pub tx: TxConfig,
    /// Frames per receive pass.
    pub batch: usize,
    /// PSPAT's Tw: how long the arbiter spins before it sleeps.
    pub idle_spin: Duration,
    /// Longest wait for a free transmit slot before a frame is dropped.
    pub tx_wait: Duration,
    /// CPU for the arbiter, if any.
    pub arbiter_cpu: Option<usize>,
    /// The arbiter transmits itself at the end of each round instead of handing
    /// the frames to a dispatcher thread: one thread and one hand-over fewer, for
    /// machines with few cores, at the cost of system calls in the arbiter's loop.
    pub inline_dispatch: bool,
    /// Receive queues on the input: this many receive rings in one
    /// `PACKET_FANOUT` group (the kernel spreads flows over them by hash), each
    /// read by its own receive thread with its own classifier (a share of the
    /// flow table), frame pool and PSPAT mailbox. 1 to [`MAX_QUEUES`].
    pub queues: usize,
    /// Real-time FIFO priority (1..=99) for every thread of the data path
    /// (receive, arbiter, dispatcher, reverse), or `None` for the ordinary class.
    /// With it, other processes on the machine cannot delay the scheduler's
    /// departures (the kernel's own qdiscs run in softirq context, ahead of every
    /// process); Linux still keeps 5% of each CPU for ordinary tasks. Needs
    /// `CAP_SYS_NICE`.
    pub realtime: Option<i32>,
    /// The packet I/O: AF_XDP where it works (the default), or AF_PACKET.
    pub io: IoChoice,
    /// GSO/TSO/GRO super-frames: whole through AF_PACKET
    /// ([`OffloadChoice::Gso`]), or not at all; by default as the interfaces'
    /// offload flags say (see [`crate::offload::resolve`]).
    pub offload: OffloadChoice,
}

impl ShapeConfig {
    /// Defaults for the two interfaces: link rate from the policy, 2 KiB slots,
    /// 8 MiB receive rings, 1,024-slot transmit rings, batches of 64, Tw 50 us,
    /// transmit waits of 100 ms.
    #[must_use]
    pub fn new(input: &str, output: &str) -> ShapeConfig {
        ShapeConfig {
            input: input.to_owned(),
            output: output.to_owned(),
            link_rate: LinkRate::FromPolicy {
                default_bps: DEFAULT_LINK_RATE_BPS,
            },
            slot_size: 2048,
            rx: RxConfig::default(),
            tx: TxConfig::default(),
            batch: 64,
            idle_spin: Duration::from_micros(50),
            tx_wait: Duration::from_millis(100),
            arbiter_cpu: None,
            inline_dispatch: false,
            queues: 1,
            realtime: None,
            io: IoChoice::Auto,
            offload: OffloadChoice::Auto,
        }
    }
}

/// Why a bump could not start or a reload was refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// AF_XDP was asked for and cannot run (the message names the fallback).
    #[error(transparent)]
    Xdp(#[from] XdpError),
    /// GSO super-frames asked for over AF_XDP.
    #[error(transparent)]
    Gso(#[from] GsoNeedsAfPacket),
    /// Input and output are one interface.
    #[error("input and output are both `{name}`: a bump in the wire joins two interfaces")]
    SameInterface {
        /// The interface.
        name: String,
    },
    /// An interface could not be opened (missing, no permission, ...).
    #[error(transparent)]
    Net(#[from] NetError),
    /// The policy cannot run.
    #[error("policy {name}: {source}")]
    Policy {
        /// The policy's name.
        name: String,
        /// What is wrong.
        #[source]
        source: PolicyProblem,
    },
    /// A size or rate out of range.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The PSPAT runtime refused to start or is stopping.
    #[error("scheduler runtime: {0}")]
    Runtime(#[from] eiffel_pspat::Error),
    /// The data path's threads cannot have the real-time priority asked for.
    #[error("cannot give the data path real-time priority {priority}: {source} (needs CAP_SYS_NICE: run as root, or leave out the real-time priority)")]
    Realtime {
        /// The priority asked for.
        priority: i32,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A thread or socket could not be created.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// Why a policy cannot run in the bump (beyond what its compiler checked).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyProblem {
    /// The tree cannot be built, or the live leaf ids are exhausted.
    #[error(transparent)]
    Tree(#[from] ConfigError),
    /// The classification cannot be built.
    #[error(transparent)]
    Classify(#[from] ClassifyError),
}

/// What a reload did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Queued packets moved into the new tree.
    pub moved: u64,
    /// Of those, packets whose leaf vanished (sent to the new default leaf).
    pub to_default: u64,
    /// Queued packets the new tree refused.
    pub dropped: u64,
    /// The link rate now in force.
    pub link_rate_bps: u64,
}

/// Everything the control side keeps about the current policy.
#[derive(Debug)]
struct PolicyState {
    name: String,
    nodes: Vec<NodeInfo>,
    registry: Registry,
    /// Drops by reason of the trees replaced so far.
    retired_drops: [u64; DropReason::COUNT],
    reloads: ReloadStats,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A running bump in the wire.
#[derive(Debug)]
pub struct Bump {
    // Dropped first: its threads hold the runtime's client, which the runtime's
    // own drop waits for.
    side: Side,
    rt: Pspat<LiveTree, Egress>,
}

/// Everything but the runtime: threads, counters, the policy's description.
#[derive(Debug)]
struct Side {
    input: String,
    output: String,
    link_rate: LinkRate,
    /// The emulated link's rate now.
    link_rate_bps: AtomicU64,
    started: Instant,
    policy: Mutex<PolicyState>,
    rates: Mutex<Rates>,
    /// One per receive queue.
    queues: Vec<IngressThread>,
    reverse: Option<JoinHandle<()>>,
    reverse_stop: Arc<AtomicBool>,
    reverse_waker: Waker,
    reverse_counters: Arc<ReverseCounters>,
    egress_counters: Arc<EgressCounters>,
    /// One per receive queue.
    pools: Vec<PoolWatch>,
    /// Descriptors the drop hook could not free (not queued: a bug if ever > 0).
    hook_bad: Arc<AtomicU64>,
    /// The packet I/O in use.
    io: IoReport,
    /// The offload mode in use.
    offload: OffloadReport,
    /// Detaches the XDP programs; dropped after the threads have stopped (the
    /// fields drop after `Side::drop`).
    #[cfg(eiffel_xdp)]
    _xdp: Option<xdp::XdpGuard>,
}

/// Most descriptors the PSPAT client mailbox may hold (the runtime's limit).
const MAX_MAILBOX: usize = 1 << 16;

/// Most receive queues (`ShapeConfig::queues`).
pub const MAX_QUEUES: usize = 16;

/// Packets the TX mailbox between arbiter and dispatcher holds.
const TX_MAILBOX: usize = 1024;

/// Packets a PSPAT dispatcher takes per batch (see `eiffel_pspat::runtime`).
const DISPATCH_BATCH: usize = 256;

/// Gives the calling thread real-time priority `prio`, if any (already probed by
/// [`Bump::start`]; a failure leaves the thread in the ordinary class).
fn realtime(prio: Option<i32>) {
    if let Some(p) = prio {
        let _ = eiffel_pspat::affinity::set_current_thread_realtime(p);
    }
}

/// A compiled policy for the bump: its name (for reports), its tree and its
/// classification (an `eiffel_policy::Policy` gives all three, checked
/// together).
#[derive(Clone, Copy, Debug)]
pub struct LivePolicy<'a> {
    /// Where it came from (a file name).
    pub name: &'a str,
    /// The tree.
    pub tree: &'a TreeSpec,
    /// The classification; its leaves name leaves of the tree, and its flow table
    /// is no larger than any per-flow leaf.
    pub classify: &'a ClassifySpec,
}

/// Builds the tree of `policy` against `registry`, and one classifier per
/// receive queue, each with an equal share of the flow table and its own range
/// of flow ids.
fn compile(
    policy: LivePolicy<'_>,
    registry: &mut Registry,
    queues: usize,
    mode: Segmentation,
) -> Result<(LiveTree, Vec<Classifier>), ShapeError> {
    let fail = |source: PolicyProblem| ShapeError::Policy {
        name: policy.name.to_owned(),
        source,
    };
    let classify = policy.classify;
    let mut tree = policy.tree.clone();
    tree.mtu = tree.mtu.saturating_add(FRAME_OVERHEAD);
    if mode == Segmentation::Gso {
        gso_tree(&mut tree);
    }
    let live = LiveTree::new(tree, &classify.default, registry).map_err(|e| fail(e.into()))?;
    let mut share = classify.clone();
    let per_queue = (classify.flow_table.max_flows / queues as u32).max(1);
    share.flow_table.max_flows = per_queue;
    let mut classifiers = Vec::with_capacity(queues);
    for q in 0..queues as u32 {
        let c = share
            .classifier(|name| {
                live.tree().leaf(name)?;
                registry.id(name).ok()
            })
            .map_err(|e| fail(e.into()))?;
        classifiers.push(c.with_flow_base(q * per_queue));
    }
    Ok((live, classifiers))
}

/// A tree for GSO mode: its `mtu` (the largest descriptor) becomes
/// [`GSO_MAX_WIRE_LEN`], and every rate limit's burst grows by as much, so a
/// limit keeps the tolerance its policy gave it beyond one frame (a limit lets
/// `burst - mtu` bytes through early; without this a burst smaller than a
/// super-frame would leave none, and every late wake-up of the arbiter would
/// cost the limit its rate).
fn gso_tree(tree: &mut TreeSpec) {
    let grow = u64::from(GSO_MAX_WIRE_LEN.saturating_sub(tree.mtu));
    tree.mtu = tree.mtu.max(GSO_MAX_WIRE_LEN);
    for node in &mut tree.nodes {
        let per_flow = node.per_flow.as_mut().and_then(|p| p.flow_limit.as_mut());
        for limit in node.limit.iter_mut().chain(per_flow) {
            limit.burst = limit.burst.saturating_add(grow);
        }
    }
}

/// The configuration checks that need no interface.
fn check(cfg: &ShapeConfig) -> Result<(), ShapeError> {
    if cfg.input == cfg.output {
        return Err(ShapeError::SameInterface {
            name: cfg.input.clone(),
        });
    }
    if !(1..=MAX_QUEUES).contains(&cfg.queues) {
        let e = ConfigError::OutOfRange {
            what: "receive queues",
            value: cfg.queues as u64,
            range: "1..=16",
        };
        return Err(e.into());
    }
    if cfg.batch == 0 {
        let range = "1..";
        let e = ConfigError::OutOfRange {
            what: "batch",
            value: 0,
            range,
        };
        return Err(e.into());
    }
    Ok(())
}

/// The PSPAT client mailbox's capacity for a tree of `capacity` packets, and the
/// frame pool's slots: the mailbox, the TX mailbox and one batch of each thread.
fn sizes(capacity: u32, batch: usize) -> (usize, u32) {
    let wanted = (capacity as usize).saturating_add(batch).min(MAX_MAILBOX);
    let line = mailbox::slots_per_line::<Packet>();
    let mailbox_slots = ((wanted + line).next_power_of_two().max(2 * line) - line)
        .min(MAX_MAILBOX)
        .max(wanted);
    let pool_slots = mailbox_slots + TX_MAILBOX + DISPATCH_BATCH + 2 * batch;
    (wanted, u32::try_from(pool_slots).unwrap_or(u32::MAX))
}

/// The runtime's drop hook, which frees the slots of the packets the scheduler
/// drops (one drainer per receive queue's pool), and the count of descriptors it
/// could not free.
fn drop_hook(mut drainers: Vec<Drainers>) -> (eiffel_pspat::runtime::DropHook, Arc<AtomicU64>) {
    let bad = Arc::new(AtomicU64::new(0));
    let count = Arc::clone(&bad);
    let hook = Box::new(move |pkt: Packet, _reason: DropReason| {
        let (queue, slot) = ingress::untag(pkt.buffer);
        let freed = drainers.get_mut(queue).map(|d| d.free(slot));
        if !matches!(freed, Some(Ok(_))) {
            count.fetch_add(1, Ordering::Relaxed);
        }
    });
    (hook, bad)
}

/// Whether the data path may run at real-time `priority`, probed on a thread of
/// its own: the threads that follow then cannot fail to get it.
fn probe_realtime(priority: i32) -> Result<(), ShapeError> {
    std::thread::spawn(move || eiffel_pspat::affinity::set_current_thread_realtime(priority))
        .join()
        .unwrap_or_else(|_| Err(std::io::Error::other("the probe thread panicked")))
        .map_err(|source| ShapeError::Realtime { priority, source })
}

/// The PSPAT runtime's configuration.
fn runtime_config(cfg: &ShapeConfig, link_rate_bps: u64, mailbox: usize) -> Config {
    Config {
        link_rate_bps,
        idle_spin: cfg.idle_spin,
        mailbox_capacity: mailbox,
        max_clients: cfg.queues,
        tx_capacity: TX_MAILBOX,
        arbiter_cpu: cfg.arbiter_cpu,
        arbiter_realtime: cfg.realtime,
        dispatcher_realtime: cfg.realtime,
        ..Config::default()
    }
}

/// Starts thread `name` running `body` at real-time priority `prio`, if any.
fn spawn<T: Send + 'static>(
    name: &'static str,
    what: &'static str,
    prio: Option<i32>,
    body: impl FnOnce() -> T + Send + 'static,
) -> Result<JoinHandle<T>, ShapeError> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            realtime(prio);
            body()
        })
        .map_err(|source| ShapeError::Io { what, source })
}

/// A waker and the stream it wakes.
fn waker_pair() -> Result<(Waker, std::os::unix::net::UnixStream), ShapeError> {
    Waker::pair().map_err(|source| ShapeError::Io {
        what: "creating a waker",
        source,
    })
}

/// A receive thread and what the control side keeps of it.
#[derive(Debug)]
struct IngressThread {
    handle: Option<JoinHandle<ingress::IngressEnd>>,
    stop: Arc<AtomicBool>,
    waker: Waker,
    counters: Arc<IngressCounters>,
    next_classifier: Arc<ClassifierSlot>,
}

/// Where a receive thread's frames come from.
enum Source {
    /// An AF_PACKET ring, copied into frame pools.
    Packet(RxRing, Fillers),
    /// AF_XDP sockets whose chunks are the frame pool's slots.
    #[cfg(eiffel_xdp)]
    Xdp(xdp::XdpRx),
}

impl IngressThread {
    fn start(
        cfg: &ShapeConfig,
        queue: u32,
        source: Source,
        classifier: Classifier,
        client: Client,
    ) -> Result<IngressThread, ShapeError> {
        let counters = Arc::new(IngressCounters::default());
        let next_classifier = Arc::new(ClassifierSlot::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (waker, wake_rx) = waker_pair()?;
        let what = "starting the receive thread";
        let handle = match source {
            Source::Packet(rx, fillers) => {
                let header = rx.header();
                let ingress = Ingress {
                    rx,
                    classifier,
                    fillers,
                    header,
                    client,
                    counters: Arc::clone(&counters),
                    next_classifier: Arc::clone(&next_classifier),
                    stop: Arc::clone(&stop),
                    waker: wake_rx,
                    batch: cfg.batch,
                    queue,
                };
                spawn("eiffel-rx", what, cfg.realtime, move || ingress.run())?
            }
            #[cfg(eiffel_xdp)]
            Source::Xdp(rx) => {
                let ingress = xdp::XdpIngress {
                    rx,
                    classifier,
                    client,
                    counters: Arc::clone(&counters),
                    next_classifier: Arc::clone(&next_classifier),
                    stop: Arc::clone(&stop),
                    waker: wake_rx,
                    batch: cfg.batch,
                    queue,
                };
                spawn("eiffel-rx", what, cfg.realtime, move || ingress.run())?
            }
        };
        Ok(IngressThread {
            handle: Some(handle),
            stop,
            waker,
            counters,
            next_classifier,
        })
    }
}

/// Opens the input's receive rings: one, or `cfg.queues` in a `PACKET_FANOUT`
/// group of this process's own.
fn open_queues(cfg: &ShapeConfig) -> Result<Vec<RxRing>, ShapeError> {
    if cfg.queues == 1 {
        return Ok(vec![RxRing::open(&cfg.input, &cfg.rx)?]);
    }
    // Fanout group ids are per network namespace: one derived from the process
    // id does not meet another bump's.
    let rx = RxConfig {
        fanout: Some(std::process::id() as u16),
        ..cfg.rx
    };
    (0..cfg.queues)
        .map(|_| RxRing::open(&cfg.input, &rx).map_err(ShapeError::from))
        .collect()
}

/// The reverse direction's I/O.
enum ReverseIo {
    Packet(Box<(RxRing, TxRing)>),
    #[cfg(eiffel_xdp)]
    Xdp(xdp::XdpReverseIo),
}

/// The reverse thread and what the control side keeps of it.
struct ReverseThread {
    handle: JoinHandle<()>,
    stop: Arc<AtomicBool>,
    waker: Waker,
    counters: Arc<ReverseCounters>,
}

impl ReverseThread {
    fn start(cfg: &ShapeConfig, io: ReverseIo) -> Result<ReverseThread, ShapeError> {
        let counters = Arc::new(ReverseCounters::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (waker, wake_rx) = waker_pair()?;
        let what = "starting the reverse thread";
        let handle = match io {
            ReverseIo::Packet(rings) => {
                let (rx, tx) = *rings;
                let reverse = Reverse {
                    rx,
                    tx,
                    counters: Arc::clone(&counters),
                    stop: Arc::clone(&stop),
                    waker: wake_rx,
                    batch: cfg.batch,
                    wait: cfg.tx_wait,
                };
                spawn("eiffel-reverse", what, cfg.realtime, move || reverse.run())?
            }
            #[cfg(eiffel_xdp)]
            ReverseIo::Xdp(io) => {
                let reverse = xdp::XdpReverse {
                    io,
                    counters: Arc::clone(&counters),
                    stop: Arc::clone(&stop),
                    waker: wake_rx,
                    batch: cfg.batch,
                    wait: cfg.tx_wait,
                };
                spawn("eiffel-reverse", what, cfg.realtime, move || reverse.run())?
            }
        };
        Ok(ReverseThread {
            handle,
            stop,
            waker,
            counters,
        })
    }
}

/// The data path's I/O, opened, before any thread runs.
struct Opened {
    sources: Vec<Source>,
    sink: Egress,
    /// The drop hook's drainers, one per queue.
    hook: Vec<Drainers>,
    pools: Vec<PoolWatch>,
    reverse: ReverseIo,
    report: IoReport,
    #[cfg(eiffel_xdp)]
    guard: Option<xdp::XdpGuard>,
}

/// The AF_PACKET rings' geometry for an offload mode: in GSO mode frames carry
/// a `virtio_net_hdr`, and transmit slots hold 64 KiB super-frames (256 of
/// them, 17 MiB per ring).
fn packet_rings(cfg: &ShapeConfig, mode: Segmentation) -> (RxConfig, TxConfig) {
    match mode {
        Segmentation::Off => (cfg.rx, cfg.tx),
        Segmentation::Gso => (
            RxConfig {
                header: FrameHeader::Vnet,
                ..cfg.rx
            },
            TxConfig {
                header: FrameHeader::Vnet,
                frame_size: cfg.tx.frame_size.max(TxConfig::GSO_FRAME_SIZE),
                frame_count: cfg.tx.frame_count.min(256),
                ..cfg.tx
            },
        ),
    }
}

/// One receive queue's frame pools: `pool_slots` slots of `cfg.slot_size`, and
/// in GSO mode [`LARGE_SLOTS`] of 64 KiB for super-frames; the filler side and
/// the dispatcher's and drop hook's drainers.
fn packet_pools(
    cfg: &ShapeConfig,
    pool_slots: u32,
    mode: Segmentation,
    pools: &mut Vec<PoolWatch>,
) -> Result<(Fillers, Drainers, Drainers), ShapeError> {
    let (small, mut d) = frame_pool(pool_slots, cfg.slot_size, 2)?;
    pools.push(small.watch());
    let (hook, sink) = (d.pop().expect("two drainers"), d.pop().expect("two"));
    let mut fillers = Fillers { small, large: None };
    let (mut hook, mut sink) = (Drainers::one(hook), Drainers::one(sink));
    if mode == Segmentation::Gso {
        let (large, mut d) = frame_pool(LARGE_SLOTS, LARGE_SLOT_SIZE, 2)?;
        pools.push(large.watch());
        hook.large = d.pop();
        sink.large = d.pop();
        fillers.large = Some(large);
    }
    Ok((fillers, sink, hook))
}

/// Opens the AF_PACKET data path: rings on both interfaces and the frame pools
/// of each receive queue.
fn open_packet(
    cfg: &ShapeConfig,
    pool_slots: u32,
    fallback: Option<String>,
    mode: Segmentation,
) -> Result<Opened, ShapeError> {
    let (rx_cfg, tx_cfg) = packet_rings(cfg, mode);
    let ring_cfg = ShapeConfig {
        rx: rx_cfg,
        ..cfg.clone()
    };
    let in_rx = open_queues(&ring_cfg)?;
    let out_tx = TxRing::open(&cfg.output, &tx_cfg)?;
    let out_rx = RxRing::open(&cfg.output, &rx_cfg)?;
    let in_tx = TxRing::open(&cfg.input, &tx_cfg)?;
    let (mut sources, mut to_sink, mut hook, mut pools) = (vec![], vec![], vec![], vec![]);
    for rx in in_rx {
        let (fillers, sink, drop) = packet_pools(cfg, pool_slots, mode, &mut pools)?;
        hook.push(drop);
        to_sink.push(sink);
        sources.push(Source::Packet(rx, fillers));
    }
    Ok(Opened {
        sources,
        sink: Egress::Packet(TxSink::new(out_tx, to_sink, cfg.tx_wait)),
        hook,
        pools,
        reverse: ReverseIo::Packet(Box::new((out_rx, in_tx))),
        report: IoReport::AfPacket { fallback },
        #[cfg(eiffel_xdp)]
        guard: None,
    })
}

/// Opens the AF_XDP data path.
#[cfg(eiffel_xdp)]
fn open_xdp(cfg: &ShapeConfig, pool_slots: u32) -> Result<Opened, XdpError> {
    let parts = xdp::open(cfg, pool_slots)?;
    let pools = parts.ingress.iter().map(xdp::XdpRx::watch).collect();
    Ok(Opened {
        sources: parts.ingress.into_iter().map(Source::Xdp).collect(),
        sink: Egress::Xdp(parts.sink),
        hook: parts.hook.into_iter().map(Drainers::one).collect(),
        pools,
        reverse: ReverseIo::Xdp(parts.reverse),
        report: parts.report,
        guard: Some(parts.guard),
    })
}

#[cfg(not(eiffel_xdp))]
fn open_xdp(_: &ShapeConfig, _: u32) -> Result<Opened, XdpError> {
    Err(XdpError::NotBuilt)
}

/// Opens the packet I/O `cfg.io` asks for, in offload mode `mode` (whose
/// resolution already turned `Auto` into AF_PACKET where GSO needs it): AF_XDP
/// where it works by default, falling back to AF_PACKET with the reason.
fn open_io(
    cfg: &ShapeConfig,
    pool_slots: u32,
    mode: Segmentation,
    note: Option<String>,
) -> Result<Opened, ShapeError> {
    match cfg.io {
        IoChoice::AfPacket => open_packet(cfg, pool_slots, note, mode),
        IoChoice::AfXdp => Ok(open_xdp(cfg, pool_slots)?),
        // Whatever stops AF_XDP, AF_PACKET reports its own errors (a missing
        // interface, a missing CAP_NET_RAW) as it always has.
        IoChoice::Auto => match open_xdp(cfg, pool_slots) {
            Ok(opened) => Ok(opened),
            Err(e) => open_packet(cfg, pool_slots, Some(e.to_string()), mode),
        },
    }
}

impl Bump {
    /// Opens both interfaces, builds the policy and starts every thread.
    ///
    /// # Errors
    /// A missing interface or missing `CAP_NET_RAW` ([`ShapeError::Net`], whose
    /// message says what to do), AF_XDP asked for and unavailable
    /// ([`ShapeError::Xdp`], naming the fallback), a policy the tree or
    /// classifier refuses, sizes out of range, or a thread that cannot start.
    pub fn start(cfg: &ShapeConfig, policy: LivePolicy<'_>) -> Result<Bump, ShapeError> {
        check(cfg)?;
        let (mailbox, pool_slots) = sizes(policy.tree.capacity, cfg.batch);
        let (offload, io) =
            crate::offload::resolve(cfg.offload, cfg.io, [&cfg.input, &cfg.output])?;
        // AF_XDP, the default, was passed over for GSO mode: say so.
        let note = (cfg.io != io).then(|| GSO_OVER_PACKET.to_owned());
        let cfg = &ShapeConfig { io, ..cfg.clone() };
        // Interfaces first: the errors an operator most likely meets.
        let opened = open_io(cfg, pool_slots, offload.mode, note)?;
        let mut registry = Registry::default();
        let (live, classifiers) = compile(policy, &mut registry, cfg.queues, offload.mode)?;
        let nodes = node_info(live.tree());
        let link_rate_bps = cfg.link_rate.for_policy(policy.tree);
        if let Some(priority) = cfg.realtime {
            probe_realtime(priority)?;
        }
        let (on_drop, hook_bad) = drop_hook(opened.hook);
        let egress_counters = Arc::clone(opened.sink.counters());
        let dispatch = if cfg.inline_dispatch {
            Dispatch::Inline(opened.sink)
        } else {
            Dispatch::Threads(vec![opened.sink])
        };
        let rt_cfg = runtime_config(cfg, link_rate_bps, mailbox);
        let rt = Pspat::start_with_drop_hook(rt_cfg, live, dispatch, Some(on_drop))?;
        let mut queues = Vec::with_capacity(cfg.queues);
        for (q, (source, classifier)) in opened.sources.into_iter().zip(classifiers).enumerate() {
            let client = rt.client()?;
            queues.push(IngressThread::start(
                cfg, q as u32, source, classifier, client,
            )?);
        }
        let reverse = ReverseThread::start(cfg, opened.reverse)?;
        let side = Side {
            input: cfg.input.clone(),
            output: cfg.output.clone(),
            link_rate: cfg.link_rate,
            link_rate_bps: AtomicU64::new(link_rate_bps),
            started: Instant::now(),
            policy: Mutex::new(PolicyState {
                name: policy.name.to_owned(),
                nodes,
                registry,
                retired_drops: [0; DropReason::COUNT],
                reloads: ReloadStats::default(),
            }),
            rates: Mutex::new(Rates::default()),
            queues,
            reverse: Some(reverse.handle),
            reverse_stop: reverse.stop,
            reverse_waker: reverse.waker,
            reverse_counters: reverse.counters,
            egress_counters,
            pools: opened.pools,
            hook_bad,
            io: opened.report,
            offload,
            #[cfg(eiffel_xdp)]
            _xdp: opened.guard,
        };
        Ok(Bump { side, rt })
    }

    /// The packet I/O this bump uses (and why AF_XDP was not, if it was the
    /// default and failed).
    #[must_use]
    pub fn io(&self) -> &IoReport {
        &self.side.io
    }

    /// The offload mode this bump runs in, and why.
    #[must_use]
    pub fn offload(&self) -> &OffloadReport {
        &self.side.offload
    }

    /// Reads the tree on the arbiter.
    fn sample(&self) -> Result<TreeSample, ShapeError> {
        Ok(self
            .rt
            .with_scheduler(|ctl| sample_tree(ctl.scheduler().tree()))?)
    }

    /// Updates the per-node rates: bytes and packets sent since the previous call,
    /// over the time between the two. Call it at a steady interval (the control
    /// loop of `eiffel shape` does, every second). When the arbiter released
    /// nothing since the previous call the rates are zero and the arbiter is not
    /// disturbed.
    pub fn sample_rates(&self) {
        let decisions = self.rt.stats().decisions;
        let now = Instant::now();
        if lock(&self.side.rates).idle(now, decisions) {
            return;
        }
        if let Ok(sample) = self.sample() {
            lock(&self.side.rates).update(now, decisions, &sample);
        }
    }

    /// A snapshot of every counter. Reads the tree on the arbiter (a short pause
    /// between two of its rounds).
    ///
    /// # Errors
    /// The runtime is stopping.
    pub fn snapshot(&self) -> Result<Snapshot, ShapeError> {
        let latency = self.side.read_latency();
        let sample = self.sample()?;
        Ok(self.side.assemble(&sample, &latency, self.rt.stats(), None))
    }
}

impl Bump {
    /// Replaces the policy while traffic flows: builds the new tree and classifier,
    /// moves every queued packet into the new tree (same leaf name, else the new
    /// default leaf; packets the new tree refuses are dropped with its reason), and
    /// switches the receive thread to the new rules. A policy that cannot be built
    /// is refused and the old one keeps running.
    ///
    /// # Errors
    /// The new policy cannot run (nothing changes), or the runtime is stopping.
    pub fn reload(&self, policy: LivePolicy<'_>) -> Result<Reloaded, ShapeError> {
        let side = &self.side;
        let mut state = lock(&side.policy);
        let mut registry = state.registry.clone();
        let mode = side.offload.mode;
        let (live, classifiers) = match compile(policy, &mut registry, side.queues.len(), mode) {
            Ok(c) => c,
            Err(e) => {
                state.reloads.refused += 1;
                state.reloads.last_error = Some(e.to_string());
                return Err(e);
            }
        };
        let nodes = node_info(live.tree());
        let link = match side.link_rate {
            LinkRate::Fixed(_) => None,
            rate @ LinkRate::FromPolicy { .. } => Some(rate.for_policy(policy.tree)),
        };
        let (moved, retired, link_rate_bps) = self.rt.with_scheduler(move |ctl| {
            let retired = ctl.scheduler().counters().dropped.packets;
            let moved = LiveTree::replace(ctl, live);
            if let Some(rate) = link {
                // A rate out of the link's range keeps the current one.
                let _ = ctl.set_link_rate(rate);
            }
            (moved, retired, ctl.link_rate())
        })?;
        for (q, c) in side.queues.iter().zip(classifiers) {
            q.next_classifier.post(c);
            q.waker.wake();
        }
        side.link_rate_bps.store(link_rate_bps, Ordering::Relaxed);
        state.registry = registry;
        state.nodes = nodes;
        state.name = policy.name.to_owned();
        for (a, b) in state.retired_drops.iter_mut().zip(retired) {
            *a += b;
        }
        state.reloads.applied += 1;
        state.reloads.moved += moved.taken;
        state.reloads.to_default += moved.to_default;
        state.reloads.dropped += moved.dropped;
        drop(state);
        *lock(&side.rates) = Rates::default();
        Ok(Reloaded {
            moved: moved.taken,
            to_default: moved.to_default,
            dropped: moved.dropped,
            link_rate_bps,
        })
    }

    /// Records a reload refused before it reached the bump (the policy file did not
    /// parse), so the stats show it.
    pub fn record_refused_reload(&self, message: String) {
        let mut state = lock(&self.side.policy);
        state.reloads.refused += 1;
        state.reloads.last_error = Some(message);
    }

    /// Stops: no more frames are received; the scheduler sends what it holds for up
    /// to `drain`, then the rest is dropped under the `shutdown` reason; the reverse
    /// direction stops. Returns the final snapshot, which balances with nothing
    /// queued.
    ///
    /// # Panics
    /// If one of the bump's threads panicked.
    pub fn stop(self, drain: Duration) -> Snapshot {
        let Bump { mut side, rt } = self;
        let end = side.stop_ingress();
        let deadline = Instant::now() + drain;
        loop {
            let s = rt.stats();
            let held = s.received.saturating_sub(s.released + s.dropped);
            let unread = side.ingress_total().to_scheduler.saturating_sub(s.received);
            if (held == 0 && unread == 0) || Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let report = rt.shutdown(ShutdownMode::Discard);
        side.stop_reverse();
        for mut e in end {
            e.fillers.reclaim();
        }
        let latency = side.read_latency();
        let sample = sample_tree(report.scheduler.tree());
        side.assemble(&sample, &latency, report.stats, Some(&report))
    }

    /// Descriptors the drop hook found not queued (0 unless something is broken).
    #[must_use]
    pub fn bad_drops(&self) -> u64 {
        self.side.hook_bad.load(Ordering::Relaxed)
    }

    /// The PSPAT arbiter's live counters.
    #[must_use]
    pub fn runtime_stats(&self) -> eiffel_pspat::LiveStats {
        self.rt.stats()
    }
}

impl Side {
    /// Stops the receive threads (each drops its runtime client) and returns what
    /// they hand back.
    fn stop_ingress(&mut self) -> Vec<ingress::IngressEnd> {
        for q in &self.queues {
            q.stop.store(true, Ordering::Release);
            q.waker.wake();
        }
        self.queues
            .iter_mut()
            .filter_map(|q| q.handle.take())
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    }

    /// The receive queues' counters, summed.
    fn ingress_total(&self) -> stats::IngressStats {
        let mut total = stats::IngressStats::default();
        for q in &self.queues {
            total.add(&q.counters.ingress());
        }
        total
    }

    /// The receive queues' classifier counters, summed.
    fn classifier_total(&self) -> stats::ClassifierStats {
        let mut total = stats::ClassifierStats::default();
        for q in &self.queues {
            total.add(&q.counters.classifier());
        }
        total
    }

    fn stop_reverse(&mut self) {
        self.reverse_stop.store(true, Ordering::Release);
        self.reverse_waker.wake();
        if let Some(h) = self.reverse.take() {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p));
        }
    }
}

impl Drop for Side {
    /// A bump dropped without [`Bump::stop`] still ends its threads (before the
    /// runtime, which waits for the receive thread's client).
    fn drop(&mut self) {
        if std::thread::panicking() {
            for q in &self.queues {
                q.stop.store(true, Ordering::Release);
                q.waker.wake();
            }
            self.reverse_stop.store(true, Ordering::Release);
            self.reverse_waker.wake();
            return;
        }
        let _ = self.stop_ingress();
        self.stop_reverse();
    }
}
