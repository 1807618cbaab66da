//! The arbiter's live counters: kept privately by the arbiter, published once per
//! round with plain stores, read by [`Pspat::stats`](super::Pspat::stats).

use crate::sync::{AtomicU64, Ordering};

/// Counters the arbiter publishes once per round.
#[derive(Debug, Default)]
pub(super) struct Live {
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

impl Live {
    /// Publishes `s` (single writer: the arbiter).
    pub(super) fn publish(&self, s: &LiveStats) {
        let put = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        put(&self.rounds, s.rounds);
        put(&self.received, s.received);
        put(&self.decisions, s.decisions);
        put(&self.dropped, s.dropped);
        put(&self.sleeps, s.sleeps);
        put(&self.timer_wakeups, s.timer_wakeups);
        put(&self.notified_wakeups, s.notified_wakeups);
        put(&self.commands, s.commands);
        put(&self.link_idle_ns, s.link_idle_ns);
    }

    /// The counters as last published.
    pub(super) fn snapshot(&self) -> LiveStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LiveStats {
            rounds: get(&self.rounds),
            received: get(&self.received),
            decisions: get(&self.decisions),
            dropped: get(&self.dropped),
            sleeps: get(&self.sleeps),
            timer_wakeups: get(&self.timer_wakeups),
            notified_wakeups: get(&self.notified_wakeups),
            commands: get(&self.commands),
            link_idle_ns: get(&self.link_idle_ns),
        }
    }
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
    /// Commands run by [`Pspat::with_scheduler`](super::Pspat::with_scheduler).
    pub commands: u64,
    /// Time the emulated link stood idle because the scheduler had nothing to
    /// send, in nanoseconds.
    pub link_idle_ns: u64,
}
