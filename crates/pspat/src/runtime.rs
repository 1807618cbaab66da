//! The PSPAT runtime: clients, the arbiter thread and dispatchers (PSPAT sections 3
//! and 4).
//!
//! # Data path
//! ```text
//! client x --push--> CM[x] (FastForward mailbox)      client lists CL[cpu]
//!                       |                                   |
//!          arbiter, every round (do_scan, Fig. 5):          |
//!            now = clock()                                  |
//!            take new CL entries, drain their CMs <---------+
//!              into the scheduler (SA.enqueue)
//!            trim the active set to the last client of each CPU
//!            while link idle before now: SA.dequeue -> TX mailbox / sink,
//!              release the packet's CM slot
//!            notify dispatchers
//! dispatcher i <--pop-- TM[i] --> Transmit::transmit(batch)
//! ```
//!
//! # Rounds and rate-limited reads
//! The arbiter starts a round at most every `round_interval` (Delta_A, default 1 us),
//! so each mailbox is read at most once per interval (section 4.1): a client filling
//! a line is not disturbed by the arbiter re-reading it. All packets that arrived
//! before a round's `now` are in the scheduler before it decides (section 6.5).
//!
//! # Backpressure
//! A client mailbox slot stays occupied until the scheduler releases (or drops) the
//! packet read from it (Fig. 5, line 21), so a client's packets inside the runtime
//! are bounded by its mailbox; a full mailbox is reported at once
//! ([`SendError::Full`]). A drop decided by the scheduler raises the client's drop
//! count, reported on its next send ([`SendError::PolicyDrops`]).
//!
//! # The listing state
//! Each client is `UNLISTED`, `PENDING` (on a client list, not yet taken) or `ACTIVE`
//! (taken into the arbiter's active set). After each push the client issues
//! `fence(SeqCst)` and reads its state; if `UNLISTED` it moves itself to `PENDING`
//! (compare-and-swap, so it is never on a list twice) and appends itself. The arbiter
//! marks the clients it takes `ACTIVE`. It trims a client by moving it from `ACTIVE`
//! to `UNLISTED`, issuing `fence(SeqCst)` and checking the client's mailbox once
//! more: if it is not empty the client stays active (a `PENDING` client is simply
//! dropped from the set: it is on a list and comes back). One of the two sides sees
//! the other's store (store buffering), so a packet is either seen by the arbiter's
//! last check or its sender re-lists itself: no packet is stranded in an unscanned
//! mailbox. The same client fence serves the arbiter's sleep handshake
//! (the `sleeper` module).
//!
//! # Idle behaviour
//! After `idle_spin` (Tw) without work the arbiter sleeps (section 3.5): until a
//! client notifies it when the scheduler is empty, or, when the scheduler holds
//! packets that cannot leave yet (shaped, or the link still busy), until
//! `max(next_ready, link idle time)` with a timed wait that a client's notification
//! cuts short. There is no periodic wake-up: an idle arbiter sleeps until the next
//! arrival, a shaped one until the next departure or arrival. Its timer slack is
//! set to [`Config::timer_slack`] so that the kernel does not defer those timed
//! wake-ups by its default 50 us. [`LiveStats`] counts the sleeps and how each
//! ended.
//!
//! # Commands
//! [`Pspat::with_scheduler`] runs a closure on the arbiter thread between two rounds
//! with the scheduler in hand ([`Control`]): reading per-node counters, or replacing
//! the scheduler and moving its packets. The caller publishes the command and a
//! flag, then notifies the arbiter through the same sleep handshake as a client, so
//! a sleeping arbiter wakes for it (loom checks the handshake in the `sleeper`
//! module).
//!
//! # Drop hook
//! A packet the scheduler drops is handed to the hook given to
//! [`Pspat::start_with_drop_hook`] (on the arbiter thread), so that a runtime whose
//! descriptors name buffers can free them.
//!
//! # Shutdown
//! [`Pspat::shutdown`] refuses new sends, waits until every [`Client`] is dropped,
//! stops the arbiter, which reads every mailbox once more and then delivers
//! ([`ShutdownMode::Drain`]) or drops with [`DropReason::Shutdown`]
//! ([`ShutdownMode::Discard`]) what the scheduler still holds; dispatchers empty their
//! TX mailboxes. The [`Report`] accounts for every packet each client sent.
//!
//! # Deviations from the paper
//! - Client lists accept concurrent appenders and use the listing state (see
//!   the `clist` module), because user threads migrate and are preempted.
//! - Packets travel by value (48-byte descriptors) rather than as pointers.
//! - Dispatch may be done inline by the arbiter (section 3.3 allows it when
//!   transmission is cheap) or by dispatcher threads; a packet goes to TX mailbox
//!   `flow mod dispatchers`, which keeps each flow's order.

use crate::clist::{ClientLists, Listing, Unlist, END};
use crate::clock::Clock;
use crate::link::Link;
use crate::mailbox::{self, Consumer, Producer, PushError};
use crate::pad::CachePadded;
use crate::sleeper::{Sleeper, Wake};
use crate::sync::{
    fence, lock, spin_loop, thread, Arc, AtomicBool, AtomicU32, AtomicU64, Condvar, Mutex, Ordering,
};
use crate::tags::Tags;
use crate::transmit::Transmit;
use crate::{affinity, Error};
use eiffel_sched::{ConfigError, DropCounts, DropReason, Nanos, Packet, Scheduler};
use std::time::Duration;

/// Runtime configuration. Start from [`Config::default`] and adjust.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Emulated link rate in bits per second (the leaky bucket). Default 10 Gbit/s.
    pub link_rate_bps: u64,
    /// Delta_A: shortest time between two arbiter rounds. Default 1 us.
    pub round_interval: Duration,
    /// Tw: how long the arbiter and dispatchers spin without work before they sleep.
    /// Default 50 us.
    pub idle_spin: Duration,
    /// Packets each client mailbox holds (rounded up, see [`crate::mailbox`]).
    /// Default 256.
    pub mailbox_capacity: usize,
    /// Most clients alive at once. Default 128.
    pub max_clients: usize,
    /// Packets each TX mailbox holds. Default 1024.
    pub tx_capacity: usize,
    /// CPU to pin the arbiter to; `None` leaves it to the OS.
    pub arbiter_cpu: Option<usize>,
    /// Nice value for the arbiter thread; `None` leaves it. PSPAT wants the arbiter
    /// to own its core: where other processes share it, a negative value (which
    /// needs `CAP_SYS_NICE`) keeps them from stalling every client.
    pub arbiter_nice: Option<i32>,
    /// Real-time FIFO priority (1..=99) for the arbiter thread; `None` leaves it in
    /// the ordinary class. The strongest way to give the arbiter its core; needs
    /// `CAP_SYS_NICE`.
    pub arbiter_realtime: Option<i32>,
    /// CPUs to pin dispatcher `i` to (`dispatcher_cpus[i % len]`); empty leaves them
    /// to the OS.
    pub dispatcher_cpus: Vec<usize>,
    /// Real-time FIFO priority (1..=99) for the dispatcher threads; `None` leaves
    /// them in the ordinary class. Needs `CAP_SYS_NICE`.
    pub dispatcher_realtime: Option<i32>,
    /// The arbiter thread's timer slack: how late the kernel may end its timed
    /// sleeps (until the next departure). Default 1 us; Linux's default is 50 us.
    pub timer_slack: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            link_rate_bps: 10_000_000_000,
            round_interval: Duration::from_micros(1),
            idle_spin: Duration::from_micros(50),
            mailbox_capacity: 256,
            max_clients: 128,
            tx_capacity: 1024,
            arbiter_cpu: None,
            arbiter_nice: None,
            arbiter_realtime: None,
            dispatcher_cpus: Vec::new(),
            dispatcher_realtime: None,
            timer_slack: Duration::from_micros(1),
        }
    }
}

impl Config {
    fn validate(&self) -> Result<(), Error> {
        let bad = |what: &'static str, value: u64, range: &'static str| {
            Err(Error::Config(eiffel_sched::ConfigError::OutOfRange {
                what,
                value,
                range,
            }))
        };
        if Link::new(self.link_rate_bps).is_none() {
            return bad("link_rate_bps", self.link_rate_bps, "1e3..=1e16");
        }
        if self.round_interval > Duration::from_secs(1) {
            return bad(
                "round_interval (ns)",
                self.round_interval.as_nanos() as u64,
                "0..=1s",
            );
        }
        if self.max_clients == 0 || self.max_clients > 1 << 16 {
            return bad("max_clients", self.max_clients as u64, "1..=65536");
        }
        if self.mailbox_capacity == 0 || self.mailbox_capacity > 1 << 16 {
            return bad(
                "mailbox_capacity",
                self.mailbox_capacity as u64,
                "1..=65536",
            );
        }
        if self.tx_capacity == 0 || self.tx_capacity > 1 << 20 {
            return bad("tx_capacity", self.tx_capacity as u64, "1..=1048576");
        }
        Ok(())
    }
}

/// Who transmits the packets the arbiter releases.
#[derive(Debug)]
pub enum Dispatch<X> {
    /// The arbiter calls the sink itself at the end of each round (no TX mailbox).
    Inline(X),
    /// One dispatcher thread per sink, each draining its own TX mailbox.
    Threads(Vec<X>),
}

/// What the arbiter does with packets still in the scheduler at shutdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShutdownMode {
    /// Deliver them, still at the link rate.
    Drain,
    /// Drop them, counted under [`DropReason::Shutdown`].
    Discard,
}

/// Why a send did not happen. Every variant hands the packet back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The client's mailbox is full: the scheduler holds as many of its packets as
    /// the mailbox allows. Retry later.
    #[error("client mailbox full")]
    Full(Packet),
    /// Since the previous send the scheduler dropped `dropped` earlier packets of
    /// this client (policy drops, section 3.1). This packet was not sent; the
    /// client may resend it.
    #[error("{dropped} earlier packets dropped by the scheduler")]
    PolicyDrops {
        /// Packets dropped since the last report.
        dropped: u64,
        /// The packet of this call, not sent.
        packet: Packet,
    },
    /// The runtime is shutting down.
    #[error("runtime shutting down")]
    Closed(Packet),
}

impl SendError {
    /// The packet that was not sent.
    #[must_use]
    pub fn into_packet(self) -> Packet {
        match self {
            SendError::Full(p) | SendError::Closed(p) => p,
            SendError::PolicyDrops { packet, .. } => packet,
        }
    }
}

/// `Shared::state` bit: sends are refused.
const CLOSED: u32 = 1;
/// `Shared::state` bit: the arbiter must finish.
const STOP: u32 = 2;

/// Per-client data the client and the arbiter both touch. One cache line, written
/// by the arbiter (trim, drops) and read by the client on each send; the client
/// writes it only when it lists itself.
#[derive(Debug)]
struct ClientCtrl {
    /// Whether the client is on a list or active (see the module documentation).
    listing: Listing,
    /// Packets of this client the scheduler dropped (single writer: the arbiter).
    drops: AtomicU64,
    /// Link to the next client on the same client list.
    next: AtomicU32,
}

/// Counters the arbiter publishes once per round.
#[derive(Debug, Default)]
struct Live {
    rounds: AtomicU64,
    received: AtomicU64,
    decisions: AtomicU64,
    dropped: AtomicU64,
    sleeps: AtomicU64,
    timer_wakeups: AtomicU64,
    notified_wakeups: AtomicU64,
    commands: AtomicU64,
    link_idle_ns: AtomicU64,
}

/// A snapshot of the arbiter's counters while it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LiveStats {
    /// Rounds (`do_scan` calls).
    pub rounds: u64,
    /// Packets read from client mailboxes into the scheduler.
    pub received: u64,
    /// Scheduling decisions: packets the scheduler released to the link.
    pub decisions: u64,
    /// Packets dropped by the scheduler.
    pub dropped: u64,
    /// Times the arbiter went to sleep (announced it; see the two wake-up counts).
    pub sleeps: u64,
    /// Sleeps that ended at their timeout: the scheduler's next departure time.
    pub timer_wakeups: u64,
    /// Sleeps that a notification ended: a client's packet, a command, shutdown.
    pub notified_wakeups: u64,
    /// Commands run by [`Pspat::with_scheduler`].
    pub commands: u64,
    /// Time the emulated link stood idle because the scheduler had nothing to
    /// send, in nanoseconds.
    pub link_idle_ns: u64,
}

/// Producer halves of client mailboxes not owned by a live client.
#[derive(Debug)]
struct Pool {
    free: Vec<(u32, Producer<Packet>)>,
}

/// State shared by clients, the arbiter and the dispatchers.
#[derive(Debug)]
struct Shared {
    /// Read on every send, written at shutdown: `CLOSED | STOP`.
    state: CachePadded<AtomicU32>,
    /// The arbiter's sleep point; its flag is read on every send.
    arbiter: CachePadded<Sleeper>,
    clients: Box<[CachePadded<ClientCtrl>]>,
    lists: ClientLists,
    dispatchers: Box<[CachePadded<Sleeper>]>,
    /// Set by the arbiter after its last push into TX mailboxes.
    dispatch_done: AtomicBool,
    /// A [`Pspat::with_scheduler`] command waits in the command slot.
    command_pending: AtomicBool,
    live: CachePadded<Live>,
    pool: Mutex<Pool>,
    /// Signalled when a client returns its producer to the pool.
    pool_returned: Condvar,
    clock: Clock,
}

impl Shared {
    fn load_state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }
}

/// One sender's handle: owns a client mailbox. `Send`, not `Sync`.
#[derive(Debug)]
pub struct Client {
    shared: Arc<Shared>,
    index: u32,
    producer: Option<Producer<Packet>>,
    /// The value of the drop counter already reported.
    drops_seen: u64,
    stats: ClientStats,
}

/// What one client handle did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Packets accepted into the mailbox.
    pub sent: u64,
    /// Sends refused because the mailbox was full.
    pub full: u64,
    /// Scheduler drops reported to this handle.
    pub drops_reported: u64,
}

impl Client {
    /// Hands `pkt` to the runtime.
    ///
    /// # Errors
    /// [`SendError::Full`] when the mailbox is full, [`SendError::PolicyDrops`] when
    /// earlier packets were dropped by the scheduler since the last send,
    /// [`SendError::Closed`] during shutdown. Every error hands `pkt` back.
    #[inline]
    pub fn send(&mut self, pkt: Packet) -> Result<(), SendError> {
        let shared = &*self.shared;
        let ctrl = &shared.clients[self.index as usize];
        let drops = ctrl.drops.load(Ordering::Relaxed);
        if drops != self.drops_seen {
            let dropped = drops - self.drops_seen;
            self.drops_seen = drops;
            self.stats.drops_reported += dropped;
            return Err(SendError::PolicyDrops {
                dropped,
                packet: pkt,
            });
        }
        if shared.state.load(Ordering::Relaxed) & CLOSED != 0 {
            return Err(SendError::Closed(pkt));
        }
        let producer = self
            .producer
            .as_mut()
            .expect("a live client owns its mailbox");
        if let Err(PushError::Full(p)) = producer.push(pkt) {
            self.stats.full += 1;
            return Err(SendError::Full(p));
        }
        self.stats.sent += 1;
        // Orders the push before the two loads below (see the module docs).
        fence(Ordering::SeqCst);
        if ctrl.listing.claim() {
            self.list_self();
        }
        if shared.arbiter.is_sleeping() {
            shared.arbiter.wake();
        }
        Ok(())
    }

    #[cold]
    fn list_self(&self) {
        let ctrl = &self.shared.clients[self.index as usize];
        let cpu = affinity::current_cpu().unwrap_or(0);
        self.shared.lists.push(cpu, self.index, &ctrl.next);
        // Orders the append before the caller's check of the arbiter's sleep flag.
        fence(Ordering::SeqCst);
    }

    /// This client's index (stable while the handle lives; reused after it drops).
    #[must_use]
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The runtime clock, for stamping packets.
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.shared.clock
    }

    /// What this handle did so far.
    #[must_use]
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Packets the mailbox holds.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.producer.as_ref().map_or(0, Producer::capacity)
    }
}

impl core::ops::Drop for Client {
    fn drop(&mut self) {
        if let Some(producer) = self.producer.take() {
            // The mutex orders this client's pushes before the shutdown's check that
            // every producer is back, and before the arbiter's final drain.
            lock(&self.shared.pool).free.push((self.index, producer));
            self.shared.pool_returned.notify_all();
        }
    }
}

/// What a packet dropped by the scheduler is handed to (see
/// [`Pspat::start_with_drop_hook`]): the packet, with its own `buffer`, and the
/// reason. Runs on the arbiter thread.
pub type DropHook = Box<dyn FnMut(Packet, DropReason) + Send>;

/// A command for the arbiter, queued by [`Pspat::with_scheduler`]. It returns the
/// delivery of its result, which the arbiter calls once its own bookkeeping of the
/// command (drops, counters) is done.
type Command<S> = Box<dyn FnOnce(&mut Control<'_, S>) -> Box<dyn FnOnce()> + Send>;

/// The command slot shared by [`Pspat::with_scheduler`] and the arbiter.
type CommandSlot<S> = Arc<Mutex<Option<Command<S>>>>;

/// The scheduler in hand on the arbiter thread, between two rounds: what a
/// [`Pspat::with_scheduler`] closure works with.
///
/// Packets inside the scheduler carry the arbiter's tag in `buffer`, not their own
/// buffer: a closure that takes packets out (to move them into a replacement
/// scheduler, say) must put every one back into the scheduler, unchanged but for
/// `class`, `flow` and the rank fields, or hand it to [`Control::drop_packet`].
pub struct Control<'a, S> {
    sched: &'a mut S,
    now: Nanos,
    drops: &'a mut Vec<(Packet, DropReason)>,
    link_rate: &'a mut u64,
}

impl<S> Control<'_, S> {
    /// The scheduler.
    pub fn scheduler(&mut self) -> &mut S {
        self.sched
    }

    /// The runtime clock at the start of this command.
    #[must_use]
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Drops a packet taken out of the scheduler: it is accounted to its client
    /// under `reason` and handed to the drop hook, as if the scheduler had dropped
    /// it.
    pub fn drop_packet(&mut self, packet: Packet, reason: DropReason) {
        self.drops.push((packet, reason));
    }

    /// The emulated link's rate in bits per second.
    #[must_use]
    pub fn link_rate(&self) -> u64 {
        *self.link_rate
    }

    /// Changes the emulated link's rate for the packets released from now on.
    ///
    /// # Errors
    /// A rate outside the link's range (nothing changes).
    pub fn set_link_rate(&mut self, rate_bps: u64) -> Result<(), ConfigError> {
        if Link::new(rate_bps).is_none() {
            return Err(ConfigError::OutOfRange {
                what: "link_rate_bps",
                value: rate_bps,
                range: "1e3..=1e16",
            });
        }
        *self.link_rate = rate_bps;
        Ok(())
    }
}

impl<S> core::fmt::Debug for Control<'_, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Control")
            .field("now", &self.now)
            .field("link_rate", &self.link_rate)
            .finish_non_exhaustive()
    }
}

/// Per-client accounting in the final [`Report`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientReport {
    /// Packets read from the client's mailbox into the scheduler.
    pub received: u64,
    /// Packets transmitted.
    pub delivered: u64,
    /// Packets dropped, by reason.
    pub dropped: DropCounts,
}

impl ClientReport {
    fn add(&mut self, other: &ClientReport) {
        self.received += other.received;
        self.delivered += other.delivered;
        for (a, b) in self.dropped.packets.iter_mut().zip(other.dropped.packets) {
            *a += b;
        }
        for (a, b) in self.dropped.bytes.iter_mut().zip(other.dropped.bytes) {
            *a += b;
        }
    }
}

/// Everything the runtime returns at shutdown.
#[derive(Debug)]
pub struct Report<S, X> {
    /// The scheduler, with its counters.
    pub scheduler: S,
    /// The sinks, in dispatcher order (one for inline dispatch).
    pub sinks: Vec<X>,
    /// Per client index: packets received, delivered and dropped. Indices are
    /// reused by later handles; the numbers cover all of them.
    pub clients: Vec<ClientReport>,
    /// Final counters.
    pub stats: LiveStats,
}

impl<S, X> Report<S, X> {
    /// Sum over all clients.
    #[must_use]
    pub fn totals(&self) -> ClientReport {
        let mut t = ClientReport::default();
        for c in &self.clients {
            t.add(c);
        }
        t
    }
}

/// Whether each thread got the CPU it was configured for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// The arbiter's pinning error, if it asked for a CPU and did not get it.
    pub arbiter: Option<String>,
    /// The error setting the arbiter's nice value or real-time priority, if asked
    /// and refused.
    pub arbiter_priority: Option<String>,
    /// Dispatchers' pinning errors.
    pub dispatchers: Vec<String>,
}

/// A running PSPAT instance: an arbiter thread, optional dispatcher threads, and the
/// client mailboxes.
///
/// ```
/// use eiffel_pspat::{Config, CountingSink, Dispatch, Pspat, ShutdownMode};
/// use eiffel_sched::{Fifo, Packet};
///
/// let sink = CountingSink::new(1);
/// let counters = sink.counters();
/// let rt = Pspat::start(Config::default(), Fifo::new(1024), Dispatch::Inline(sink)).unwrap();
/// let mut client = rt.client().unwrap();
/// for _ in 0..10 {
///     let mut pkt = Packet::new(0, 1500);
///     while let Err(e) = client.send(pkt) {
///         pkt = e.into_packet();
///         std::thread::yield_now();
///     }
/// }
/// drop(client);
/// let report = rt.shutdown(ShutdownMode::Drain);
/// assert_eq!(report.totals().delivered, 10);
/// assert_eq!(counters.packets(), 10);
/// ```
pub struct Pspat<S, X> {
    shared: Arc<Shared>,
    arbiter: Option<thread::JoinHandle<ArbiterOutput<S, X>>>,
    dispatchers: Vec<thread::JoinHandle<X>>,
    placement: Arc<Mutex<Placement>>,
    max_clients: usize,
    commands: CommandSlot<S>,
    /// Serialises [`Pspat::with_scheduler`] callers: one command at a time.
    command_gate: Mutex<()>,
}

impl<S, X> core::fmt::Debug for Pspat<S, X> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Pspat")
            .field("shared", &self.shared)
            .field("max_clients", &self.max_clients)
            .finish_non_exhaustive()
    }
}

type ArbiterOutput<S, X> = (S, Option<X>, Vec<ClientReport>, LiveStats);

impl<S, X> Pspat<S, X>
where
    S: Scheduler + Send + 'static,
    X: Transmit + 'static,
{
    /// Allocates every mailbox and starts the arbiter (and dispatcher threads).
    ///
    /// # Errors
    /// [`Error::Config`] for an invalid configuration or an empty dispatcher list,
    /// [`Error::Spawn`] if a thread cannot be started.
    pub fn start(cfg: Config, scheduler: S, dispatch: Dispatch<X>) -> Result<Self, Error> {
        Self::start_with_drop_hook(cfg, scheduler, dispatch, None)
    }

    /// As [`Pspat::start`], and every packet the scheduler drops (at admission, by
    /// a [`Control::drop_packet`], or discarded at shutdown) is handed to `on_drop`
    /// on the arbiter thread, with its own `buffer` restored.
    ///
    /// # Errors
    /// As for [`Pspat::start`].
    pub fn start_with_drop_hook(
        cfg: Config,
        scheduler: S,
        dispatch: Dispatch<X>,
        on_drop: Option<DropHook>,
    ) -> Result<Self, Error> {
        cfg.validate()?;
        if let Dispatch::Threads(s) = &dispatch {
            if s.is_empty() || s.len() > 1024 {
                return Err(Error::Config(eiffel_sched::ConfigError::OutOfRange {
                    what: "dispatcher sinks",
                    value: s.len() as u64,
                    range: "1..=1024",
                }));
            }
        }
        let mut producers = Vec::with_capacity(cfg.max_clients);
        let mut consumers = Vec::with_capacity(cfg.max_clients);
        for i in 0..cfg.max_clients {
            let (p, c) = mailbox::mailbox::<Packet>(cfg.mailbox_capacity)?;
            producers.push((i as u32, p));
            consumers.push(c);
        }
        // Hand out low indices first.
        producers.reverse();
        let mailbox_slots = consumers[0].capacity();
        let (sinks, inline) = match dispatch {
            Dispatch::Inline(x) => (Vec::new(), Some(x)),
            Dispatch::Threads(xs) => (xs, None),
        };
        let mut tx_producers = Vec::with_capacity(sinks.len());
        let mut tx_consumers = Vec::with_capacity(sinks.len());
        for _ in 0..sinks.len() {
            let (p, c) = mailbox::mailbox::<Packet>(cfg.tx_capacity)?;
            tx_producers.push(p);
            tx_consumers.push(c);
        }
        let shared = Arc::new(Shared {
            state: CachePadded::new(AtomicU32::new(0)),
            arbiter: CachePadded::new(Sleeper::new()),
            clients: (0..cfg.max_clients)
                .map(|_| {
                    CachePadded::new(ClientCtrl {
                        listing: Listing::new(),
                        drops: AtomicU64::new(0),
                        next: AtomicU32::new(END),
                    })
                })
                .collect(),
            lists: ClientLists::new(affinity::cpu_count()),
            dispatchers: (0..sinks.len())
                .map(|_| CachePadded::new(Sleeper::new()))
                .collect(),
            dispatch_done: AtomicBool::new(false),
            command_pending: AtomicBool::new(false),
            live: CachePadded::new(Live::default()),
            pool: Mutex::new(Pool { free: producers }),
            pool_returned: Condvar::new(),
            clock: Clock::new(),
        });
        let placement = Arc::new(Mutex::new(Placement::default()));

        let mut dispatchers = Vec::with_capacity(sinks.len());
        for (i, (sink, rx)) in sinks.into_iter().zip(tx_consumers).enumerate() {
            let cpu = (!cfg.dispatcher_cpus.is_empty())
                .then(|| cfg.dispatcher_cpus[i % cfg.dispatcher_cpus.len()]);
            let worker = Dispatcher {
                shared: Arc::clone(&shared),
                index: i,
                rx,
                sink,
                idle_spin: cfg.idle_spin,
            };
            let placement = Arc::clone(&placement);
            let realtime = cfg.dispatcher_realtime;
            let handle = thread::Builder::new()
                .name(format!("pspat-dispatch-{i}"))
                .spawn(move || {
                    if let Some(cpu) = cpu {
                        if let Err(e) = affinity::pin_current_thread(cpu) {
                            lock(&placement)
                                .dispatchers
                                .push(format!("dispatcher {i} on cpu {cpu}: {e}"));
                        }
                    }
                    if let Some(prio) = realtime {
                        if let Err(e) = affinity::set_current_thread_realtime(prio) {
                            lock(&placement)
                                .dispatchers
                                .push(format!("dispatcher {i} real-time priority {prio}: {e}"));
                        }
                    }
                    worker.run()
                })
                .map_err(Error::Spawn)?;
            dispatchers.push(handle);
        }

        let commands: CommandSlot<S> = Arc::new(Mutex::new(None));
        let arbiter = Arbiter {
            shared: Arc::clone(&shared),
            sched: scheduler,
            commands: CommandGuard(Arc::clone(&commands)),
            command_drops: Vec::new(),
            on_drop,
            consumers,
            books: vec![Book::default(); cfg.max_clients],
            active: Vec::with_capacity(cfg.max_clients),
            keep: vec![END; shared.lists.len()],
            trim: Vec::with_capacity(cfg.max_clients),
            tags: Tags::new(cfg.max_clients * mailbox_slots),
            link: Link::new(cfg.link_rate_bps).expect("validated"),
            out: match inline {
                Some(sink) => Output::Inline {
                    sink,
                    batch: Vec::with_capacity(INLINE_BATCH),
                },
                None => Output::Tx {
                    pending: vec![None; tx_producers.len()],
                    touched: vec![false; tx_producers.len()],
                    tx: tx_producers,
                },
            },
            round_ns: cfg.round_interval.as_nanos() as Nanos,
            idle_spin_ns: cfg.idle_spin.as_nanos() as Nanos,
            round: 0,
            stats: LiveStats::default(),
        };
        let arbiter_cpu = cfg.arbiter_cpu;
        let arbiter_nice = cfg.arbiter_nice;
        let arbiter_realtime = cfg.arbiter_realtime;
        let timer_slack = cfg.timer_slack;
        let arbiter_placement = Arc::clone(&placement);
        let handle = thread::Builder::new()
            .name("pspat-arbiter".into())
            .spawn(move || {
                if let Some(cpu) = arbiter_cpu {
                    if let Err(e) = affinity::pin_current_thread(cpu) {
                        lock(&arbiter_placement).arbiter =
                            Some(format!("arbiter on cpu {cpu}: {e}"));
                    }
                }
                if let Some(nice) = arbiter_nice {
                    if let Err(e) = affinity::set_current_thread_nice(nice) {
                        lock(&arbiter_placement).arbiter_priority =
                            Some(format!("arbiter nice {nice}: {e}"));
                    }
                }
                if let Some(prio) = arbiter_realtime {
                    if let Err(e) = affinity::set_current_thread_realtime(prio) {
                        lock(&arbiter_placement).arbiter_priority =
                            Some(format!("arbiter real-time priority {prio}: {e}"));
                    }
                }
                // A failure leaves the default slack: later wake-ups, nothing worse.
                let _ = affinity::set_current_thread_timer_slack(
                    u64::try_from(timer_slack.as_nanos()).unwrap_or(u64::MAX),
                );
                arbiter.run()
            });
        let handle = match handle {
            Ok(h) => h,
            Err(e) => {
                shared.dispatch_done.store(true, Ordering::Release);
                for d in shared.dispatchers.iter() {
                    d.notify();
                }
                for d in dispatchers {
                    let _ = d.join();
                }
                return Err(Error::Spawn(e));
            }
        };
        Ok(Pspat {
            shared,
            arbiter: Some(handle),
            dispatchers,
            placement,
            max_clients: cfg.max_clients,
            commands,
            command_gate: Mutex::new(()),
        })
    }

    /// Runs `f` on the arbiter thread, between two rounds, with the scheduler in
    /// hand, and returns its result. Blocks until the arbiter has run it: within a
    /// round interval while the arbiter is busy; a sleeping arbiter is woken.
    /// Calls from several threads run one after the other.
    ///
    /// Use it to read what only the scheduler knows (per-node counters) or to
    /// change the scheduler in place (see [`Control`] for the rules on packets
    /// taken out of it). The arbiter does nothing else while `f` runs.
    ///
    /// # Errors
    /// [`Error::Closed`] once shutdown has started or if the arbiter has stopped.
    pub fn with_scheduler<R>(
        &self,
        f: impl FnOnce(&mut Control<'_, S>) -> R + Send + 'static,
    ) -> Result<R, Error>
    where
        R: Send + 'static,
    {
        let _gate = lock(&self.command_gate);
        if self.shared.load_state() & CLOSED != 0 {
            return Err(Error::Closed);
        }
        let (reply, result) = std::sync::mpsc::sync_channel(1);
        *lock(&self.commands) = Some(Box::new(move |ctl: &mut Control<'_, S>| {
            let out = f(ctl);
            Box::new(move || {
                let _ = reply.send(out);
            }) as Box<dyn FnOnce()>
        }));
        self.shared.command_pending.store(true, Ordering::Release);
        self.shared.arbiter.notify();
        // The arbiter drops the command (and with it `reply`) if it stops first.
        result.recv().map_err(|_| Error::Closed)
    }

    /// A new client with its own mailbox.
    ///
    /// # Errors
    /// [`Error::TooManyClients`] when `max_clients` handles are alive,
    /// [`Error::Closed`] after shutdown started.
    pub fn client(&self) -> Result<Client, Error> {
        if self.shared.load_state() & CLOSED != 0 {
            return Err(Error::Closed);
        }
        let (index, producer) =
            lock(&self.shared.pool)
                .free
                .pop()
                .ok_or(Error::TooManyClients {
                    max: self.max_clients,
                })?;
        Ok(Client {
            drops_seen: self.shared.clients[index as usize]
                .drops
                .load(Ordering::Relaxed),
            shared: Arc::clone(&self.shared),
            index,
            producer: Some(producer),
            stats: ClientStats::default(),
        })
    }

    /// Stops the runtime and accounts for every packet.
    ///
    /// Refuses new sends at once, then **waits until every [`Client`] handle is
    /// dropped** (so that no push can race with the final drain), then stops the
    /// arbiter and the dispatchers.
    ///
    /// # Panics
    /// If the arbiter or a dispatcher thread panicked.
    pub fn shutdown(mut self, mode: ShutdownMode) -> Report<S, X> {
        match self.stop(mode) {
            Some(Ok(report)) => report,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
            None => unreachable!("a runtime is stopped only by shutdown or drop"),
        }
    }
}

type Joined<T> = Result<T, Box<dyn std::any::Any + Send + 'static>>;

impl<S, X> Pspat<S, X> {
    /// The runtime clock (what the arbiter passes to the scheduler as `now`).
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.shared.clock
    }

    /// The arbiter's counters, as of its last round.
    #[must_use]
    pub fn stats(&self) -> LiveStats {
        let l = &self.shared.live;
        LiveStats {
            rounds: l.rounds.load(Ordering::Relaxed),
            received: l.received.load(Ordering::Relaxed),
            decisions: l.decisions.load(Ordering::Relaxed),
            dropped: l.dropped.load(Ordering::Relaxed),
            sleeps: l.sleeps.load(Ordering::Relaxed),
            timer_wakeups: l.timer_wakeups.load(Ordering::Relaxed),
            notified_wakeups: l.notified_wakeups.load(Ordering::Relaxed),
            commands: l.commands.load(Ordering::Relaxed),
            link_idle_ns: l.link_idle_ns.load(Ordering::Relaxed),
        }
    }

    /// Where the threads run: pinning failures, if any (they are not fatal).
    #[must_use]
    pub fn placement(&self) -> Placement {
        lock(&self.placement).clone()
    }

    /// Closes, waits for clients, stops and joins the threads. `None` if already
    /// stopped; `Err` with the panic of a runtime thread that panicked.
    fn stop(&mut self, mode: ShutdownMode) -> Option<Joined<Report<S, X>>> {
        let arbiter = self.arbiter.take()?;
        self.shared.state.fetch_or(CLOSED, Ordering::AcqRel);
        {
            let mut pool = lock(&self.shared.pool);
            while pool.free.len() < self.max_clients {
                pool = self
                    .shared
                    .pool_returned
                    .wait(pool)
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        let stop = match mode {
            ShutdownMode::Drain => STOP,
            ShutdownMode::Discard => STOP | DISCARD,
        };
        self.shared.state.fetch_or(stop, Ordering::AcqRel);
        self.shared.arbiter.notify();
        let arbiter = arbiter.join();
        if arbiter.is_err() {
            // The arbiter will not release the dispatchers: do it here.
            self.shared.dispatch_done.store(true, Ordering::Release);
            for d in self.shared.dispatchers.iter() {
                d.notify();
            }
        }
        let mut sinks = Vec::with_capacity(self.dispatchers.len() + 1);
        let mut panic = None;
        for d in self.dispatchers.drain(..) {
            match d.join() {
                Ok(x) => sinks.push(x),
                Err(p) => panic = Some(p),
            }
        }
        let (scheduler, inline, clients, stats) = match arbiter {
            Ok(out) => out,
            Err(p) => return Some(Err(p)),
        };
        if let Some(p) = panic {
            return Some(Err(p));
        }
        sinks.extend(inline);
        Some(Ok(Report {
            scheduler,
            sinks,
            clients,
            stats,
        }))
    }
}

impl<S, X> core::ops::Drop for Pspat<S, X> {
    /// Dropping a runtime that was not shut down stops its threads, discarding what
    /// the scheduler holds; like [`Pspat::shutdown`] it first waits for live
    /// clients to be dropped.
    fn drop(&mut self) {
        let _ = self.stop(ShutdownMode::Discard);
    }
}

/// `Shared::state` bit with `STOP`: discard instead of drain.
const DISCARD: u32 = 4;

/// Packets the inline sink receives per call at most.
const INLINE_BATCH: usize = 256;

/// Arbiter-private bookkeeping of one client.
#[derive(Clone, Copy, Debug, Default)]
struct Book {
    /// In the arbiter's active set.
    active: bool,
    /// Round in which this client was the newest entry of some list.
    kept_round: u64,
    report: ClientReport,
}

enum Output<X> {
    Inline {
        sink: X,
        batch: Vec<Packet>,
    },
    Tx {
        tx: Vec<Producer<Packet>>,
        /// A packet that did not fit in its TX mailbox, retried first next round.
        pending: Vec<Option<Packet>>,
        /// TX mailboxes pushed to this round.
        touched: Vec<bool>,
    },
}

/// The arbiter's hold on the command slot. Dropped when the arbiter ends, even by
/// a panic: the waiting command is dropped with it, which releases its caller.
struct CommandGuard<S>(CommandSlot<S>);

impl<S> core::ops::Drop for CommandGuard<S> {
    fn drop(&mut self) {
        lock(&self.0).take();
    }
}

struct Arbiter<S, X> {
    shared: Arc<Shared>,
    sched: S,
    commands: CommandGuard<S>,
    /// Scratch: packets a command dropped, accounted after it returns.
    command_drops: Vec<(Packet, DropReason)>,
    on_drop: Option<DropHook>,
    consumers: Vec<Consumer<Packet>>,
    books: Vec<Book>,
    /// Clients scanned every round.
    active: Vec<u32>,
    /// Per list: the newest client taken from it (index + 1, or `END`).
    keep: Vec<u32>,
    /// Scratch: clients being trimmed this round.
    trim: Vec<u32>,
    tags: Tags,
    link: Link,
    out: Output<X>,
    round_ns: Nanos,
    idle_spin_ns: Nanos,
    round: u64,
    stats: LiveStats,
}

impl<S: Scheduler, X: Transmit> Arbiter<S, X> {
    fn run(mut self) -> ArbiterOutput<S, X> {
        let clock = self.shared.clock;
        let mut next_round: Nanos = 0;
        let mut last_work = clock.now();
        loop {
            let now = clock.now();
            if now < next_round {
                spin_loop();
                continue;
            }
            let state = self.shared.load_state();
            if state & STOP != 0 {
                return self.finish(state & DISCARD != 0);
            }
            if self.shared.command_pending.load(Ordering::Acquire) {
                self.run_command(now);
            }
            next_round = now + self.round_ns;
            if self.do_scan(now) || self.tx_blocked() {
                last_work = now;
                continue;
            }
            if now - last_work < self.idle_spin_ns {
                continue;
            }
            self.idle(now);
            last_work = clock.now();
        }
    }

    /// One round (Fig. 5). Returns whether anything moved.
    fn do_scan(&mut self, now: Nanos) -> bool {
        self.round += 1;
        self.take_lists();
        let mut moved = false;
        for i in 0..self.active.len() {
            moved |= self.drain(self.active[i], now);
        }
        self.trim_active();
        moved |= self.release(now);
        self.flush();
        self.publish();
        moved
    }

    /// Moves new client-list entries into the active set; the newest entry of each
    /// list is kept active until a newer one arrives.
    fn take_lists(&mut self) {
        for list in 0..self.keep.len() {
            let mut link = self.shared.lists.take(list);
            if link != END {
                self.keep[list] = link;
            }
            while link != END {
                let client = link - 1;
                let ctrl = &self.shared.clients[client as usize];
                // Read the link before the state changes: once trimmed, the client
                // may append itself again and rewrite it.
                link = ctrl.next.load(Ordering::Relaxed);
                ctrl.listing.activate();
                let book = &mut self.books[client as usize];
                if !book.active {
                    book.active = true;
                    self.active.push(client);
                }
            }
        }
    }

    /// Reads every waiting packet of `client` into the scheduler. At most a
    /// mailbox's worth: unreleased slots stop the producer.
    fn drain(&mut self, client: u32, now: Nanos) -> bool {
        let mut any = false;
        while let Some(mut pkt) = self.consumers[client as usize].read() {
            any = true;
            pkt.buffer = self.tags.insert(client, pkt.buffer);
            self.books[client as usize].report.received += 1;
            self.stats.received += 1;
            if let Err(drop) = self.sched.enqueue(pkt, now) {
                self.on_drop(drop.packet, drop.reason);
            }
        }
        any
    }

    /// Runs the waiting [`Pspat::with_scheduler`] command, if any.
    fn run_command(&mut self, now: Nanos) {
        // Cleared before the slot is read: a command posted after this point sets
        // the flag again and is run next round.
        self.shared.command_pending.store(false, Ordering::Relaxed);
        let Some(command) = lock(&self.commands.0).take() else {
            return;
        };
        let mut rate = self.link.rate_bps();
        let mut drops = core::mem::take(&mut self.command_drops);
        let deliver = command(&mut Control {
            sched: &mut self.sched,
            now,
            drops: &mut drops,
            link_rate: &mut rate,
        });
        for (pkt, reason) in drops.drain(..) {
            self.on_drop(pkt, reason);
        }
        self.command_drops = drops;
        if rate != self.link.rate_bps() {
            let changed = self.link.set_rate(rate);
            debug_assert!(changed, "Control::set_link_rate checked the range");
        }
        debug_assert_eq!(
            self.tags.live() as u64,
            self.sched.backlog().packets,
            "a command lost packets taken out of the scheduler"
        );
        self.stats.commands += 1;
        self.publish();
        deliver();
    }

    /// Accounts for a packet the scheduler dropped, frees its mailbox slot and
    /// hands it to the drop hook.
    fn on_drop(&mut self, mut pkt: Packet, reason: DropReason) {
        let (client, buffer) = self.tags.remove(pkt.buffer);
        pkt.buffer = buffer;
        if let Some(hook) = &mut self.on_drop {
            hook(pkt, reason);
        }
        self.consumers[client as usize].release(1);
        let report = &mut self.books[client as usize].report;
        report.dropped.packets[reason.index()] += 1;
        report.dropped.bytes[reason.index()] += u64::from(pkt.len);
        self.stats.dropped += 1;
        let drops = &self.shared.clients[client as usize].drops;
        drops.store(drops.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// Trims the active set to the newest client of each list (Fig. 5, line 9),
    /// with the listing handshake described in the module documentation.
    fn trim_active(&mut self) {
        let kept = self.keep.iter().filter(|&&k| k != END).count();
        if self.active.len() <= kept {
            return;
        }
        for &k in &self.keep {
            if k != END {
                self.books[(k - 1) as usize].kept_round = self.round;
            }
        }
        self.trim.clear();
        for &client in &self.active {
            if self.books[client as usize].kept_round == self.round {
                continue;
            }
            match self.shared.clients[client as usize].listing.unlist() {
                Unlist::Pending => self.books[client as usize].active = false,
                Unlist::Check => self.trim.push(client),
            }
        }
        if !self.trim.is_empty() {
            fence(Ordering::SeqCst);
            for &client in &self.trim {
                if self.consumers[client as usize].is_empty() {
                    self.books[client as usize].active = false;
                }
            }
        }
        let books = &self.books;
        self.active.retain(|&c| books[c as usize].active);
    }

    /// Releases packets while the emulated link is idle before `now` (Fig. 5,
    /// lines 11-22).
    fn release(&mut self, now: Nanos) -> bool {
        if !self.retry_pending() {
            return true;
        }
        let mut any = false;
        while self.link.idle_before(now) {
            let Some(mut pkt) = self.sched.dequeue(now) else {
                self.link.drained(now);
                break;
            };
            any = true;
            self.link.send(pkt.len, now);
            let (client, buffer) = self.tags.remove(pkt.buffer);
            pkt.buffer = buffer;
            self.consumers[client as usize].release(1);
            self.books[client as usize].report.delivered += 1;
            self.stats.decisions += 1;
            if !self.output(pkt) {
                break;
            }
        }
        any
    }

    /// Sends one packet on; false if its TX mailbox is full (it waits as pending).
    #[inline]
    fn output(&mut self, pkt: Packet) -> bool {
        match &mut self.out {
            Output::Inline { sink, batch } => {
                batch.push(pkt);
                if batch.len() == INLINE_BATCH {
                    sink.transmit(batch, self.shared.clock.now());
                    batch.clear();
                }
                true
            }
            Output::Tx {
                tx,
                pending,
                touched,
            } => {
                let i = pkt.flow as usize % tx.len();
                touched[i] = true;
                match tx[i].push(pkt) {
                    Ok(()) => true,
                    Err(PushError::Full(p)) => {
                        pending[i] = Some(p);
                        false
                    }
                }
            }
        }
    }

    /// Retries packets that found their TX mailbox full; false if one still does.
    fn retry_pending(&mut self) -> bool {
        let Output::Tx {
            tx,
            pending,
            touched,
        } = &mut self.out
        else {
            return true;
        };
        let mut clear = true;
        for (i, slot) in pending.iter_mut().enumerate() {
            if let Some(p) = *slot {
                touched[i] = true;
                if tx[i].push(p).is_ok() {
                    *slot = None;
                } else {
                    clear = false;
                }
            }
        }
        clear
    }

    fn tx_blocked(&self) -> bool {
        matches!(&self.out, Output::Tx { pending, .. } if pending.iter().any(Option::is_some))
    }

    /// Hands the round's packets on: the inline batch to the sink, or a wake-up to
    /// each dispatcher whose TX mailbox was pushed to (Fig. 5, lines 23-27).
    fn flush(&mut self) {
        match &mut self.out {
            Output::Inline { sink, batch } => {
                if !batch.is_empty() {
                    // The clock again, not the round's `now`: packets read after
                    // `now` was taken may be in the batch.
                    sink.transmit(batch, self.shared.clock.now());
                    batch.clear();
                }
            }
            Output::Tx { touched, .. } => {
                for (i, t) in touched.iter_mut().enumerate() {
                    if core::mem::take(t) {
                        self.shared.dispatchers[i].notify();
                    }
                }
            }
        }
    }

    fn publish(&self) {
        let l = &self.shared.live;
        l.rounds.store(self.round, Ordering::Relaxed);
        l.received.store(self.stats.received, Ordering::Relaxed);
        l.decisions.store(self.stats.decisions, Ordering::Relaxed);
        l.dropped.store(self.stats.dropped, Ordering::Relaxed);
        l.sleeps.store(self.stats.sleeps, Ordering::Relaxed);
        l.timer_wakeups
            .store(self.stats.timer_wakeups, Ordering::Relaxed);
        l.notified_wakeups
            .store(self.stats.notified_wakeups, Ordering::Relaxed);
        l.commands.store(self.stats.commands, Ordering::Relaxed);
        l.link_idle_ns.store(self.link.idle_ns(), Ordering::Relaxed);
    }

    /// Nothing moved for `idle_spin`: sleep until a client notifies us, or until the
    /// scheduler will next have something for the link (section 3.5).
    fn idle(&mut self, now: Nanos) {
        let wake_at = self
            .sched
            .next_ready(now)
            .map(|t| t.max(self.link.idle_at()));
        let timeout = match wake_at {
            Some(t) if t <= now + self.idle_spin_ns => return,
            Some(t) => Some(Duration::from_nanos(t - now)),
            None => None,
        };
        self.stats.sleeps += 1;
        self.publish();
        let shared = &*self.shared;
        let consumers = &self.consumers;
        let active = &self.active;
        let wake = shared.arbiter.sleep(
            || {
                shared.load_state() & STOP != 0
                    || shared.command_pending.load(Ordering::Relaxed)
                    || shared.lists.any_pending()
                    || active.iter().any(|&c| !consumers[c as usize].is_empty())
            },
            timeout,
        );
        match wake {
            Wake::Cancelled => {}
            Wake::Notified => self.stats.notified_wakeups += 1,
            Wake::TimedOut => self.stats.timer_wakeups += 1,
        }
    }

    /// Final drain at shutdown: every mailbox is read once more (all clients have
    /// dropped their handles), then the scheduler is emptied.
    fn finish(mut self, discard: bool) -> ArbiterOutput<S, X> {
        let clock = self.shared.clock;
        for list in 0..self.keep.len() {
            self.shared.lists.take(list);
        }
        let now = clock.now();
        for client in 0..self.consumers.len() as u32 {
            self.drain(client, now);
        }
        if discard {
            // A shaping scheduler gives up a held packet only at its release time:
            // step its clock through its release times (it is not used after this).
            let mut t = now;
            loop {
                while let Some(pkt) = self.sched.dequeue(t) {
                    self.on_drop(pkt, DropReason::Shutdown);
                }
                if self.sched.backlog().packets == 0 || t == Nanos::MAX {
                    break;
                }
                t = match self.sched.next_ready(t) {
                    Some(next) if next > t => next,
                    _ => t.saturating_add(1_000_000_000),
                };
            }
            // Packets released before the stop still go to their dispatchers.
            while !self.retry_pending() {
                self.flush();
                spin_loop();
            }
            self.flush();
        } else {
            loop {
                let now = clock.now();
                self.release(now);
                self.flush();
                if self.sched.backlog().packets == 0 && !self.tx_blocked() {
                    break;
                }
                match self.sched.next_ready(now) {
                    Some(t) if t.max(self.link.idle_at()) > now + self.idle_spin_ns => {
                        let wait = t.max(self.link.idle_at()) - now;
                        std::thread::sleep(Duration::from_nanos(wait));
                    }
                    _ => spin_loop(),
                }
            }
        }
        debug_assert_eq!(self.tags.live(), 0, "packets left in the scheduler");
        debug_assert_eq!(self.sched.backlog().packets, 0);
        self.round += 1;
        self.publish();
        self.shared.dispatch_done.store(true, Ordering::Release);
        for d in self.shared.dispatchers.iter() {
            d.notify();
        }
        let inline = match self.out {
            Output::Inline { sink, .. } => Some(sink),
            Output::Tx { .. } => None,
        };
        let clients = self.books.iter().map(|b| b.report).collect();
        let mut stats = self.stats;
        stats.rounds = self.round;
        stats.link_idle_ns = self.link.idle_ns();
        (self.sched, inline, clients, stats)
    }
}

/// Packets a dispatcher takes from its TX mailbox per `transmit` call at most.
const DISPATCH_BATCH: usize = 256;

struct Dispatcher<X> {
    shared: Arc<Shared>,
    index: usize,
    rx: Consumer<Packet>,
    sink: X,
    idle_spin: Duration,
}

impl<X: Transmit> Dispatcher<X> {
    fn run(mut self) -> X {
        let clock = self.shared.clock;
        let mut batch = Vec::with_capacity(DISPATCH_BATCH);
        let mut idle_since: Option<Nanos> = None;
        loop {
            while batch.len() < DISPATCH_BATCH {
                match self.rx.pop() {
                    Some(p) => batch.push(p),
                    None => break,
                }
            }
            if !batch.is_empty() {
                self.sink.transmit(&batch, clock.now());
                batch.clear();
                idle_since = None;
                continue;
            }
            if self.shared.dispatch_done.load(Ordering::Acquire) && self.rx.is_empty() {
                return self.sink;
            }
            let now = clock.now();
            let since = *idle_since.get_or_insert(now);
            if Duration::from_nanos(now - since) < self.idle_spin {
                spin_loop();
                continue;
            }
            let shared = &*self.shared;
            let rx = &self.rx;
            shared.dispatchers[self.index].sleep(
                || !rx.is_empty() || shared.dispatch_done.load(Ordering::Relaxed),
                None,
            );
            idle_since = None;
        }
    }
}
