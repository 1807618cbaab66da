//! A sender's handle on the runtime: its mailbox, its send path and its counters.

use super::shared::{Shared, CLOSED};
use crate::affinity;
use crate::clock::Clock;
use crate::mailbox::{Producer, PushError};
use crate::sync::{fence, lock, Arc, Ordering};
use eiffel_sched::Packet;
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

/// One sender's handle: owns a client mailbox. `Send`, not `Sync`.
#[derive(Debug)]
pub struct Client {
    pub(super) shared: Arc<Shared>,
    pub(super) index: u32,
    pub(super) producer: Option<Producer<Packet>>,
    /// The value of the drop counter already reported.
    pub(super) drops_seen: u64,
    pub(super) stats: ClientStats,
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
