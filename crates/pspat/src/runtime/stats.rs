//! The arbiter's live counters: kept privately by the arbiter, published once per
//! round with plain stores, read by [`Pspat::stats`](super::Pspat::stats).

use crate::sync::{AtomicU64, Ordering};

/// Counters the arbiter publishes once per round.
#[derive(Debug, Default)]
pub(super) struct Live {
    rounds: AtomicU64,
    received: AtomicU64,
    decisions: AtomicU64,
    released: AtomicU64,
    dropped: AtomicU64,
    sleeps: AtomicU64,
    timer_wakeups: AtomicU64,
    notified_wakeups: AtomicU64,
    commands: AtomicU64,
    link_idle_ns: AtomicU64,
    link_held_ns: AtomicU64,
    busy_ns: AtomicU64,
    empty_rounds: AtomicU64,
    visits: AtomicU64,
    empty_visits: AtomicU64,
    full_visits: AtomicU64,
}

impl Live {
    /// Publishes `s` (single writer: the arbiter).
    pub(super) fn publish(&self, s: &LiveStats) {
        let put = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        put(&self.rounds, s.rounds);
        put(&self.received, s.received);
        put(&self.decisions, s.decisions);
        put(&self.released, s.released);
        put(&self.dropped, s.dropped);
        put(&self.sleeps, s.sleeps);
        put(&self.timer_wakeups, s.timer_wakeups);
        put(&self.notified_wakeups, s.notified_wakeups);
        put(&self.commands, s.commands);
        put(&self.link_idle_ns, s.link_idle_ns);
        put(&self.link_held_ns, s.link_held_ns);
        put(&self.busy_ns, s.busy_ns);
        put(&self.empty_rounds, s.empty_rounds);
        put(&self.visits, s.visits);
        put(&self.empty_visits, s.empty_visits);
        put(&self.full_visits, s.full_visits);
    }

    /// The counters as last published.
    pub(super) fn snapshot(&self) -> LiveStats {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        LiveStats {
            rounds: get(&self.rounds),
            received: get(&self.received),
            decisions: get(&self.decisions),
            released: get(&self.released),
            dropped: get(&self.dropped),
            sleeps: get(&self.sleeps),
            timer_wakeups: get(&self.timer_wakeups),
            notified_wakeups: get(&self.notified_wakeups),
            commands: get(&self.commands),
            link_idle_ns: get(&self.link_idle_ns),
            link_held_ns: get(&self.link_held_ns),
            busy_ns: get(&self.busy_ns),
            empty_rounds: get(&self.empty_rounds),
            visits: get(&self.visits),
            empty_visits: get(&self.empty_visits),
            full_visits: get(&self.full_visits),
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
    /// Scheduling decisions: entries the scheduler released to the link. An entry
    /// is one packet, or with decision aggregation ([`Config::aggregate`]) a run of
    /// one flow's packets.
    ///
    /// [`Config::aggregate`]: super::Config::aggregate
    pub decisions: u64,
    /// Packets released to the link (equal to `decisions` without aggregation).
    pub released: u64,
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
    /// Of `link_idle_ns`, the time the scheduler held packets but none was
    /// eligible (rate limits, release times); the rest it held none.
    pub link_held_ns: u64,
    /// Time spent inside rounds, in nanoseconds (the rest of the arbiter's time
    /// it waited for the next round, spun idle or slept).
    pub busy_ns: u64,
    /// Rounds that moved no packet.
    pub empty_rounds: u64,
    /// Client mailboxes read (one visit per active client per round).
    pub visits: u64,
    /// Visits that found the mailbox empty.
    pub empty_visits: u64,
    /// Visits after which every slot of the mailbox was taken (read and not yet
    /// released): its client could not send until the scheduler let packets go.
    pub full_visits: u64,
}
