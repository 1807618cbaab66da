//! A sender's handle on the runtime: its mailbox, its send path and its counters.

use super::shared::Shared;
use crate::affinity;
use crate::clock::Clock;
use crate::mailbox::{Producer, PushError};
use crate::sync::{fence, Arc, Ordering};
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
    /// Sends refused, or batches cut short, because the mailbox was full.
    pub full: u64,
    /// Scheduler drops reported to this handle.
    pub drops_reported: u64,
}

/// Why [`Client::send_batch`] sent nothing. The packets stay with the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Since the previous send the scheduler dropped `dropped` earlier packets of
    /// this client; nothing of this batch was sent.
    #[error("{dropped} earlier packets dropped by the scheduler")]
    PolicyDrops {
        /// Packets dropped since the last report.
        dropped: u64,
    },
    /// The runtime is shutting down.
    #[error("runtime shutting down")]
    Closed,
}

/// What [`Client::admit`] found before a push.
enum Admit {
    Open,
    Drops(u64),
    Closed,
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
        match self.admit() {
            Admit::Open => {}
            Admit::Drops(dropped) => {
                return Err(SendError::PolicyDrops {
                    dropped,
                    packet: pkt,
                })
            }
            Admit::Closed => return Err(SendError::Closed(pkt)),
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
        self.published();
        Ok(())
    }

    /// Hands the longest prefix of `pkts` that fits in the mailbox to the runtime
    /// and returns its length (0 when the mailbox is full, counted in
    /// [`ClientStats::full`] when the whole batch did not fit). One handshake with
    /// the arbiter per batch instead of per packet.
    ///
    /// # Errors
    /// [`BatchError::PolicyDrops`] when earlier packets were dropped by the
    /// scheduler since the last send, [`BatchError::Closed`] during shutdown; no
    /// packet of the batch was sent.
    #[inline]
    pub fn send_batch(&mut self, pkts: &[Packet]) -> Result<usize, BatchError> {
        match self.admit() {
            Admit::Open => {}
            Admit::Drops(dropped) => return Err(BatchError::PolicyDrops { dropped }),
            Admit::Closed => return Err(BatchError::Closed),
        }
        let producer = self
            .producer
            .as_mut()
            .expect("a live client owns its mailbox");
        let n = producer.push_slice(pkts);
        if n < pkts.len() {
            self.stats.full += 1;
        }
        if n > 0 {
            self.stats.sent += n as u64;
            self.published();
        }
        Ok(n)
    }

    /// Drop reports and shutdown, checked before each push.
    #[inline]
    fn admit(&mut self) -> Admit {
        let shared = &*self.shared;
        let ctrl = &shared.clients[self.index as usize];
        let drops = ctrl.drops.load(Ordering::Relaxed);
        if drops != self.drops_seen {
            let dropped = drops - self.drops_seen;
            self.drops_seen = drops;
            self.stats.drops_reported += dropped;
            return Admit::Drops(dropped);
        }
        if shared.life.send_closed() {
            return Admit::Closed;
        }
        Admit::Open
    }

    /// After a push: lists the client if it is not listed and wakes the arbiter if
    /// it sleeps (see the module documentation).
    #[inline]
    fn published(&self) {
        let shared = &*self.shared;
        let ctrl = &shared.clients[self.index as usize];
        // Orders the push before the two loads below (see the module docs).
        fence(Ordering::SeqCst);
        if ctrl.listing.claim() {
            self.list_self();
        }
        if shared.arbiter.is_sleeping() {
            shared.arbiter.wake();
        }
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
            self.shared.life.give_back(self.index, producer);
        }
    }
}
