//! State shared by clients, the arbiter, the dispatchers and the runtime handle.

use super::lifecycle::Lifecycle;
use super::stats::Live;
use crate::clist::{ClientLists, Listing};
use crate::clock::Clock;
use crate::mailbox::Producer;
use crate::pad::CachePadded;
use crate::sleeper::Sleeper;
use crate::sync::{AtomicU32, AtomicU64};
use eiffel_sched::Packet;

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

/// State shared by clients, the arbiter and the dispatchers.
#[derive(Debug)]
pub(super) struct Shared {
    /// Open, closing or stopping; the free client producers.
    pub(super) life: Lifecycle<Producer<Packet>>,
    /// The arbiter's sleep point; its flag is read on every send.
    pub(super) arbiter: CachePadded<Sleeper>,
    pub(super) clients: Box<[CachePadded<ClientCtrl>]>,
    pub(super) lists: ClientLists,
    pub(super) dispatchers: Box<[CachePadded<Sleeper>]>,
    pub(super) live: CachePadded<Live>,
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
        let clients = producers.len();
        Shared {
            life: Lifecycle::new(producers),
            arbiter: CachePadded::new(Sleeper::new()),
            clients: (0..clients)
                .map(|_| CachePadded::new(ClientCtrl::new()))
                .collect(),
            lists: ClientLists::new(lists),
            dispatchers: (0..dispatchers)
                .map(|_| CachePadded::new(Sleeper::new()))
                .collect(),
            live: CachePadded::new(Live::default()),
            clock: Clock::new(),
        }
    }

    /// Lets the dispatchers finish once their TX mailboxes are empty.
    pub(super) fn release_dispatchers(&self) {
        self.life.finish_dispatch();
        for d in self.dispatchers.iter() {
            d.notify();
        }
    }
}
