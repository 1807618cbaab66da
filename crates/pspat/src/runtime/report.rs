//! What the runtime returns at shutdown.

use super::stats::LiveStats;
use eiffel_sched::DropCounts;

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
