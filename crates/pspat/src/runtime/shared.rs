//! State shared by clients, the arbiter, the dispatchers and the runtime handle.

use super::stats::Live;
use crate::clist::{ClientLists, Listing};
use crate::clock::Clock;
use crate::mailbox::Producer;
use crate::pad::CachePadded;
use crate::sleeper::Sleeper;
use crate::sync::{AtomicBool, AtomicU32, AtomicU64, Condvar, Mutex, Ordering};
use eiffel_sched::Packet;

/// `Shared::state` bit: sends are refused.
pub(super) const CLOSED: u32 = 1;
/// `Shared::state` bit: the arbiter must finish.
pub(super) const STOP: u32 = 2;
/// `Shared::state` bit with `STOP`: discard instead of drain.
pub(super) const DISCARD: u32 = 4;

/// Per-client data the client and the arbiter both touch. One cache line, written
/// by the arbiter (trim, drops) and read by the client on each send; the client
/// writes it only when it lists itself.
#[derive(Debug)]
pub(super) struct ClientCtrl {
    /// Whether the client is on a list or active (see the module documentation).
    pub(super) listing: Listing,
    /// Packets of this client the scheduler dropped (single writer: the arbiter).
    pub(super) drops: AtomicU64,
    /// Link to the next client on the same client list.
    pub(super) next: AtomicU32,
}

impl ClientCtrl {
    fn new() -> Self {
        ClientCtrl {
            listing: Listing::new(),
            drops: AtomicU64::new(0),
            next: AtomicU32::new(crate::clist::END),
        }
    }
}

/// Producer halves of client mailboxes not owned by a live client.
#[derive(Debug)]
pub(super) struct Pool {
    pub(super) free: Vec<(u32, Producer<Packet>)>,
}

/// State shared by clients, the arbiter and the dispatchers.
#[derive(Debug)]
pub(super) struct Shared {
    /// Read on every send, written at shutdown: `CLOSED | STOP`.
    pub(super) state: CachePadded<AtomicU32>,
    /// The arbiter's sleep point; its flag is read on every send.
    pub(super) arbiter: CachePadded<Sleeper>,
    pub(super) clients: Box<[CachePadded<ClientCtrl>]>,
    pub(super) lists: ClientLists,
    pub(super) dispatchers: Box<[CachePadded<Sleeper>]>,
    /// Set by the arbiter after its last push into TX mailboxes.
    pub(super) dispatch_done: AtomicBool,
    /// A [`Pspat::with_scheduler`](super::Pspat::with_scheduler) command waits in
    /// the command slot.
    pub(super) command_pending: AtomicBool,
    pub(super) live: CachePadded<Live>,
    pub(super) pool: Mutex<Pool>,
    /// Signalled when a client returns its producer to the pool.
    pub(super) pool_returned: Condvar,
    pub(super) clock: Clock,
}

impl Shared {
    /// Shared state for `producers.len()` clients, `lists` client lists and
    /// `dispatchers` dispatcher threads.
    pub(super) fn new(
        producers: Vec<(u32, Producer<Packet>)>,
        lists: usize,
        dispatchers: usize,
    ) -> Self {
        Shared {
            state: CachePadded::new(AtomicU32::new(0)),
            arbiter: CachePadded::new(Sleeper::new()),
            clients: (0..producers.len())
                .map(|_| CachePadded::new(ClientCtrl::new()))
                .collect(),
            lists: ClientLists::new(lists),
            dispatchers: (0..dispatchers)
                .map(|_| CachePadded::new(Sleeper::new()))
                .collect(),
            dispatch_done: AtomicBool::new(false),
            command_pending: AtomicBool::new(false),
            live: CachePadded::new(Live::default()),
            pool: Mutex::new(Pool { free: producers }),
            pool_returned: Condvar::new(),
            clock: Clock::new(),
        }
    }

    pub(super) fn load_state(&self) -> u32 {
        self.state.load(Ordering::Acquire)
    }

    /// Lets the dispatchers finish once their TX mailboxes are empty.
    pub(super) fn release_dispatchers(&self) {
        self.dispatch_done.store(true, Ordering::Release);
        for d in self.dispatchers.iter() {
            d.notify();
        }
    }
}
