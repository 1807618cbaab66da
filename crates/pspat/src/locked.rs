//! The baseline PSPAT is measured against: the same scheduler behind one lock,
//! called directly by the clients (the Linux tc architecture, PSPAT Fig. 1b).
//!
//! Each [`Locked::send`] takes the lock, enqueues, then, still holding the lock,
//! dequeues and transmits while the emulated link is idle before `now` (what
//! `qdisc_run` does after `enqueue`). Drops are reported at once. Every sender
//! serialises on the lock's cache line and on the scheduler's state, and a sender
//! preempted while holding the lock stalls all others: this is what collapses as
//! senders are added (PSPAT Table 1, Fig. 10).
//!
//! The lock is `std::sync::Mutex` (a futex that spins briefly, then sleeps), the
//! best general-purpose lock a user-space program has: a pure spinlock, like the
//! kernel's, fares far worse in user space, where a lock holder can be preempted.

use crate::clock::Clock;
use crate::link::{idle_cause, Link};
use crate::sync::{lock, Mutex};
use crate::transmit::Transmit;
use crate::Error;
use eiffel_sched::{DropCounts, DropReason, Dropped, Nanos, Packet, Scheduler};
use std::time::Duration;

/// Packets the sink receives per call at most.
const BATCH: usize = 256;

/// Counters of a [`Locked`] scheduler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockedStats {
    /// Packets offered by senders.
    pub received: u64,
    /// Scheduling decisions: packets released to the link.
    pub decisions: u64,
    /// Packets dropped, by reason (including at shutdown).
    pub dropped: DropCounts,
}

struct Inner<S, X> {
    sched: S,
    link: Link,
    sink: X,
    batch: Vec<Packet>,
    stats: LockedStats,
}

impl<S: Scheduler, X: Transmit> Inner<S, X> {
    /// Releases packets while the link is idle before `now`.
    fn run(&mut self, now: Nanos) {
        while self.link.idle_before(now) {
            let Some(pkt) = self.sched.dequeue(now) else {
                self.link.drained(now, idle_cause(&self.sched));
                break;
            };
            self.link.send(pkt.len, now);
            self.stats.decisions += 1;
            self.batch.push(pkt);
            if self.batch.len() == BATCH {
                self.sink.transmit(&self.batch, now);
                self.batch.clear();
            }
        }
        if !self.batch.is_empty() {
            self.sink.transmit(&self.batch, now);
            self.batch.clear();
        }
    }

    fn count_drop(&mut self, reason: DropReason, len: u32) {
        self.stats.dropped.packets[reason.index()] += 1;
        self.stats.dropped.bytes[reason.index()] += u64::from(len);
    }
}

/// A scheduler shared by all senders through one mutex.
///
/// ```
/// use eiffel_pspat::{Locked, NoopSink, ShutdownMode};
/// use eiffel_sched::{Fifo, Packet};
///
/// let locked = Locked::new(Fifo::new(64), NoopSink, 10_000_000_000).unwrap();
/// locked.send(Packet::new(0, 1500)).unwrap();
/// let report = locked.shutdown(ShutdownMode::Drain);
/// assert_eq!(report.stats.decisions, 1);
/// ```
pub struct Locked<S, X> {
    inner: Mutex<Inner<S, X>>,
    clock: Clock,
}

impl<S, X> core::fmt::Debug for Locked<S, X> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Locked").finish_non_exhaustive()
    }
}

/// What a [`Locked`] scheduler returns when shut down.
#[derive(Debug)]
pub struct LockedReport<S, X> {
    /// The scheduler, with its counters.
    pub scheduler: S,
    /// The sink.
    pub sink: X,
    /// Final counters.
    pub stats: LockedStats,
}

impl<S: Scheduler, X: Transmit> Locked<S, X> {
    /// Wraps `sched` with a link of `link_rate_bps` feeding `sink`.
    ///
    /// # Errors
    /// [`Error::Config`] if the link rate is out of range.
    pub fn new(sched: S, sink: X, link_rate_bps: u64) -> Result<Self, Error> {
        let link = Link::new(link_rate_bps).ok_or(Error::Config(
            eiffel_sched::ConfigError::OutOfRange {
                what: "link_rate_bps",
                value: link_rate_bps,
                range: "1e3..=1e16",
            },
        ))?;
        Ok(Locked {
            inner: Mutex::new(Inner {
                sched,
                link,
                sink,
                batch: Vec::with_capacity(BATCH),
                stats: LockedStats::default(),
            }),
            clock: Clock::new(),
        })
    }

    /// Enqueues `pkt` and runs the link, all under the lock.
    ///
    /// # Errors
    /// The scheduler's [`Dropped`] when it refuses the packet (or evicts another).
    pub fn send(&self, pkt: Packet) -> Result<(), Dropped> {
        let mut guard = lock(&self.inner);
        // Read under the lock, as a shaper in tc does: a time read before waiting
        // for the lock could precede the arrival of a packet this call transmits.
        let now = self.clock.now();
        let inner = &mut *guard;
        inner.stats.received += 1;
        let result = inner.sched.enqueue(pkt, now);
        if let Err(d) = &result {
            inner.count_drop(d.reason, d.packet.len);
        }
        inner.run(now);
        result
    }

    /// Enqueues every packet of `pkts` and runs the link, under one acquisition of
    /// the lock (a sender that batches, as PSPAT clients may with
    /// [`Client::send_batch`](crate::Client::send_batch)). Returns how many packets
    /// the scheduler refused or evicted (counted in [`LockedStats::dropped`]).
    pub fn send_batch(&self, pkts: &[Packet]) -> usize {
        let mut guard = lock(&self.inner);
        let now = self.clock.now();
        let inner = &mut *guard;
        inner.stats.received += pkts.len() as u64;
        let mut dropped = 0;
        for &pkt in pkts {
            if let Err(d) = inner.sched.enqueue(pkt, now) {
                inner.count_drop(d.reason, d.packet.len);
                dropped += 1;
            }
        }
        inner.run(now);
        dropped
    }

    /// Runs the link at the current time without sending (what a timer would do).
    pub fn poll(&self) {
        let mut guard = lock(&self.inner);
        let now = self.clock.now();
        guard.run(now);
    }

    /// Counters so far.
    #[must_use]
    pub fn stats(&self) -> LockedStats {
        lock(&self.inner).stats
    }

    /// The clock the link runs on.
    #[must_use]
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// Delivers ([`ShutdownMode::Drain`](crate::ShutdownMode::Drain), at the link
    /// rate) or drops what is still queued, and returns everything.
    pub fn shutdown(self, mode: crate::ShutdownMode) -> LockedReport<S, X> {
        let clock = self.clock;
        let mut inner = self
            .inner
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match mode {
            crate::ShutdownMode::Drain => loop {
                let now = clock.now();
                inner.run(now);
                match inner.sched.next_ready(now) {
                    None => break,
                    Some(t) => {
                        let at = t.max(inner.link.idle_at());
                        if at > now {
                            std::thread::sleep(Duration::from_nanos(at - now));
                        }
                    }
                }
            },
            crate::ShutdownMode::Discard => {
                let now = clock.now();
                while let Some(p) = inner.sched.dequeue(now) {
                    inner.count_drop(DropReason::Shutdown, p.len);
                }
            }
        }
        LockedReport {
            scheduler: inner.sched,
            sink: inner.sink,
            stats: inner.stats,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::transmit::CountingSink;
    use crate::ShutdownMode;
    use eiffel_sched::Fifo;

    #[test]
    fn reports_drops_at_once_and_accounts_at_shutdown() {
        // A slow link (1 kbit/s: 12 s per 1500 bytes) keeps packets queued however
        // long this thread waits for a core between its sends (at 12 ms per
        // packet, such a wait would let the link take a second packet and the
        // batch below find room).
        let sink = CountingSink::new(1);
        let counters = sink.counters();
        let locked = Locked::new(Fifo::new(2), sink, 1_000).unwrap();
        let mut refused = 0;
        for i in 0..5 {
            if let Err(d) = locked.send(Packet::new(0, 1500).buffer(i)) {
                assert_eq!(d.reason, DropReason::QueueFull);
                refused += 1;
            }
        }
        assert_eq!(locked.send_batch(&[Packet::new(0, 1500); 3]), 3);
        refused += 3;
        let s = locked.stats();
        assert_eq!(s.received, 8);
        assert_eq!(s.dropped.get(DropReason::QueueFull), refused);
        let report = locked.shutdown(ShutdownMode::Discard);
        let st = report.stats;
        assert_eq!(
            st.received,
            st.decisions + st.dropped.total(),
            "offered = delivered + dropped"
        );
        assert_eq!(counters.packets(), st.decisions);
        assert_eq!(report.scheduler.backlog().packets, 0);
    }
}
