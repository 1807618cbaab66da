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
//! a line is not disturbed by the arbiter re-reading it. A round reads up to 64
//! packets from each active mailbox, as one batch, before it decides (section 6.5:
//! requests are collected before decisions); a client with more waiting gets the
//! rest in the next rounds, and while it stays backlogged the scheduler holds its
//! packets from earlier rounds, so every backlogged client competes in each
//! decision. With decision aggregation ([`Config::aggregate`]) a run of one flow's
//! packets read in one visit becomes one scheduler entry.
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
//! a sleeping arbiter wakes for it; the arbiter closes the slot when it ends, which
//! releases a waiting caller. The `command` module holds the hand-off and its loom
//! models (a reload racing with the arbiter's rounds, sleeps and exit).
//!
//! # Drop hook
//! A packet the scheduler drops is handed to the hook given to
//! [`Pspat::start_with_drop_hook`] (on the arbiter thread), so that a runtime whose
//! descriptors name buffers can free them.
//!
//! # Shutdown
//! [`Pspat::shutdown`] refuses new sends, waits until every [`Client`] is dropped,
//! stops the arbiter, which reads every mailbox once more and then delivers
//! ([`ShutdownMode::Drain`]) or drops with [`DropReason::Shutdown`](eiffel_sched::DropReason::Shutdown)
//! ([`ShutdownMode::Discard`]) what the scheduler still holds; dispatchers empty their
//! TX mailboxes. The [`Report`] accounts for every packet each client sent. The
//! `lifecycle` module holds the hand-offs (clients back, stop, dispatchers
//! released) and their loom model.
//!
//! # Deviations from the paper
//! - Client lists accept concurrent appenders and use the listing state (see
//!   the `clist` module), because user threads migrate and are preempted.
//! - Packets travel by value (56-byte descriptors) rather than as pointers.
//! - Dispatch may be done inline by the arbiter (section 3.3 allows it when
//!   transmission is cheap) or by dispatcher threads; a packet goes to TX mailbox
//!   `flow mod dispatchers`, which keeps each flow's order.

mod arbiter;
mod client;
mod command;
mod config;
mod control;
mod dispatcher;
mod handle;
mod lifecycle;
mod output;
mod report;
mod shared;
mod start;
mod stats;

pub use client::{BatchError, Client, ClientStats, SendError};
pub use config::{Aggregation, Config};
pub use control::{Control, DropHook};
pub use handle::Pspat;
pub use report::{ClientReport, Report};
pub use start::Placement;
pub use stats::LiveStats;
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
    /// Drop them, counted under [`DropReason::Shutdown`](eiffel_sched::DropReason::Shutdown).
    Discard,
}
