//! PSPAT: many clients, one scheduler, no lock.
//!
//! Many threads (VMs, containers, processes) send packets through one scheduling
//! algorithm. Behind a global lock (the Linux tc architecture, PSPAT Fig. 1b) the
//! lock's cost grows with the number of senders until it dominates (PSPAT Table 1,
//! Fig. 10). PSPAT (Rizzo, Valente, Lettieri, Maffione) gives each client a private
//! lock-free mailbox, runs the algorithm in one arbiter thread that polls the
//! mailboxes in rounds and releases packets at the link rate, and hands them to
//! dispatcher threads (sections 3 and 4).
//!
//! Layers, bottom up:
//! - [`mailbox`]: FastForward single-producer single-consumer rings (section 4.1);
//! - `clist` (private): per-CPU client lists and each client's listing state
//!   (section 3.1), see [`runtime`'s listing handshake](runtime#the-listing-state);
//! - [`link`]: the emulated link, a leaky bucket;
//! - [`runtime`]: [`Pspat`], [`Client`], the arbiter's `do_scan` (Fig. 5), the
//!   dispatchers, idle sleep (section 3.5) and shutdown;
//! - [`transmit`]: the [`Transmit`] trait dispatchers call, and test sinks;
//! - [`locked`]: the baseline, the same scheduler behind one lock;
//! - [`affinity`]: CPU pinning.
//!
//! The runtime is generic over any [`eiffel_sched::Scheduler`]: FIFO, DRR, QFQ, a
//! policy tree. All atomics go through one `sync` module that becomes loom under
//! `cfg(loom)`; the mailbox, the client lists, the sleep handshake and the
//! runtime's command and shutdown hand-offs are model-checked with loom, and the
//! unsafe code runs under miri.

pub mod affinity;
mod clist;
pub mod clock;
pub mod link;
pub mod locked;
pub mod mailbox;
pub mod pad;
mod prefetch;
pub mod runtime;
mod sleeper;
mod sync;
mod tags;
pub mod transmit;

pub use clock::Clock;
pub use link::{Idle, Link};
pub use locked::{Locked, LockedReport};
pub use runtime::{
    Aggregation, BatchError, Client, ClientReport, ClientStats, Config, Control, Dispatch,
    DropHook, LiveStats, Placement, Pspat, Report, SendError, ShutdownMode,
};
pub use transmit::{CountingSink, NoopSink, SinkCounters, Transmit};

/// Why a runtime could not be started or a client created.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(#[from] eiffel_sched::ConfigError),
    /// A mailbox could not be allocated with the requested capacity.
    #[error("mailbox: {0}")]
    Mailbox(#[from] mailbox::CapacityError),
    /// A runtime thread could not be started.
    #[error("cannot start a runtime thread: {0}")]
    Spawn(std::io::Error),
    /// Every client mailbox is owned by a live client.
    #[error("all {max} clients are in use")]
    TooManyClients {
        /// The configured `max_clients`.
        max: usize,
    },
    /// The runtime is shutting down.
    #[error("the runtime is shutting down")]
    Closed,
}
