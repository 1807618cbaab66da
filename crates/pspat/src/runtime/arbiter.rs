//! The arbiter thread: rounds (`do_scan`, PSPAT Fig. 5), commands between rounds,
//! idle sleep (section 3.5) and the final drain at shutdown. See the
//! [module documentation](super) for the protocol.

use super::config::Aggregation;
use super::control::{Command, CommandGuard, Commands, Control, DropHook};
use super::output::Output;
use super::report::ClientReport;
use super::shared::Shared;
use super::stats::LiveStats;
use super::ShutdownMode;
use crate::clist::{Unlist, END};
use crate::link::{idle_cause, Link};
use crate::mailbox::Consumer;
use crate::sleeper::Wake;
use crate::sync::{fence, spin_loop, Arc, Ordering};
use crate::tags::{Tags, NIL};
use crate::transmit::Transmit;
use eiffel_sched::{DropReason, Nanos, Packet, Scheduler};
use std::time::Duration;

/// What the arbiter thread returns when it ends.
pub(super) struct ArbiterOutput<S, X> {
    pub(super) scheduler: S,
    /// The sink of inline dispatch.
    pub(super) inline: Option<X>,
    pub(super) clients: Vec<ClientReport>,
    pub(super) stats: LiveStats,
}

/// Arbiter-private bookkeeping of one client.
#[derive(Clone, Copy, Debug, Default)]
struct Book {
    /// In the arbiter's active set.
    active: bool,
    /// Round in which this client was the newest entry of some list.
    kept_round: u64,
    /// Mailbox slots of delivered packets not yet given back (see
    /// [`Arbiter::give_back`]).
    delivered_unreleased: u32,
    report: ClientReport,
}

/// What the arbiter is built from.
pub(super) struct ArbiterParts<S, X> {
    pub(super) shared: Arc<Shared>,
    pub(super) sched: S,
    pub(super) commands: Commands<S>,
    pub(super) on_drop: Option<DropHook>,
    pub(super) consumers: Vec<Consumer<Packet>>,
    pub(super) out: Output<X>,
    /// Packets each client mailbox holds.
    pub(super) mailbox_slots: usize,
    pub(super) link: Link,
    pub(super) round_interval: Duration,
    pub(super) idle_spin: Duration,
    /// Decision aggregation.
    pub(super) aggregate: Option<Aggregation>,
}

/// Most packets read from one mailbox per round. A round that read a whole
/// mailbox would free its slots only after scheduling all of it, so the client
/// would wait for the arbiter and the arbiter for the client in turn; a bounded
/// visit releases slots while the client still has room to write, and the two
/// overlap. It also bounds the time one client holds the arbiter.
/// NB (two cores of a shared virtual machine, one client, QFQ): 64 against the
/// whole 254-packet mailbox gave +20-25% packets per second with aggregation and
/// the same without; once released slots were published a step at a time, 64,
/// 128 and 256 measured within the noise (21-24 M decisions/s per packet).
const VISIT_MAX: usize = 64;

/// A run of one client's packets of one flow being aggregated.
#[derive(Clone, Copy, Debug)]
struct Run {
    /// The first member's tag: the scheduler entry's `buffer`.
    head: u32,
    /// The last member's tag.
    tail: u32,
    first: Packet,
    bytes: u64,
}

impl Run {
    /// The scheduler entry standing for the run: its first packet, with the
    /// run's length and the chain's tag.
    fn entry(&self) -> Packet {
        let mut pkt = self.first;
        pkt.len = u32::try_from(self.bytes).unwrap_or(u32::MAX);
        pkt.buffer = self.head;
        pkt
    }
}

/// Enqueues `pkt`; an entry the scheduler drops instead is noted in `drops`, to
/// be accounted once the mailbox read is over.
#[inline]
fn submit<S: Scheduler>(
    sched: &mut S,
    drops: &mut Vec<(Packet, DropReason)>,
    pkt: Packet,
    now: Nanos,
) {
    if let Err(drop) = sched.enqueue(pkt, now) {
        drops.push((drop.packet, drop.reason));
    }
}

pub(super) struct Arbiter<S, X> {
    shared: Arc<Shared>,
    sched: S,
    commands: CommandGuard<S>,
    /// Scratch: packets a command dropped, accounted after it returns.
    command_drops: Vec<(Packet, DropReason)>,
    on_drop: Option<DropHook>,
    consumers: Vec<Consumer<Packet>>,
    books: Vec<Book>,
    /// Clients scanned every round.
    active: Vec<u32>,
    /// Per list: the newest client taken from it (index + 1, or `END`).
    keep: Vec<u32>,
    /// Scratch: clients being trimmed this round.
    trim: Vec<u32>,
    /// Clients with a non-zero `delivered_unreleased`.
    owed: Vec<u32>,
    tags: Tags,
    link: Link,
    out: Output<X>,
    round_ns: Nanos,
    idle_spin_ns: Nanos,
    round: u64,
    stats: LiveStats,
    /// Scratch: entries the scheduler dropped while a mailbox was read (one per
    /// packet read at most), accounted after the read.
    enqueue_drops: Vec<(Packet, DropReason)>,
    aggregate: Option<Aggregation>,
    /// Most bytes per run (with aggregation) at the current link rate.
    aggregate_bytes: u64,
}

impl<S, X> Arbiter<S, X> {
    pub(super) fn new(parts: ArbiterParts<S, X>) -> Self {
        let clients = parts.consumers.len();
        Arbiter {
            keep: vec![END; parts.shared.lists.len()],
            shared: parts.shared,
            sched: parts.sched,
            commands: CommandGuard(parts.commands),
            command_drops: Vec::new(),
            on_drop: parts.on_drop,
            consumers: parts.consumers,
            books: vec![Book::default(); clients],
            active: Vec::with_capacity(clients),
            trim: Vec::with_capacity(clients),
            owed: Vec::with_capacity(clients),
            tags: Tags::new(clients * parts.mailbox_slots, parts.aggregate.is_some()),
            link: parts.link,
            out: parts.out,
            round_ns: parts.round_interval.as_nanos() as Nanos,
            idle_spin_ns: parts.idle_spin.as_nanos() as Nanos,
            round: 0,
            stats: LiveStats::default(),
            enqueue_drops: Vec::with_capacity(VISIT_MAX),
            aggregate: parts.aggregate,
            aggregate_bytes: parts
                .aggregate
                .map_or(0, |a| a.bytes_at(parts.link.rate_bps())),
        }
    }
}

impl<S: Scheduler, X: Transmit> Arbiter<S, X> {
    pub(super) fn run(mut self) -> ArbiterOutput<S, X> {
        let clock = self.shared.clock;
        let mut next_round: Nanos = 0;
        let mut last_work = clock.now();
        // The end of the last round, when the next one starts at once: one clock
        // read per busy round rather than two.
        let mut carried: Option<Nanos> = None;
        loop {
            let now = carried.take().unwrap_or_else(|| clock.now());
            if now < next_round {
                spin_loop();
                continue;
            }
            if let Some(mode) = self.shared.life.stop_requested() {
                return self.finish(mode);
            }
            if let Some(command) = self.commands.0.take() {
                self.run_command(command, now);
            }
            next_round = now + self.round_ns;
            let (moved, end) = self.do_scan(now);
            self.stats.busy_ns += end.saturating_sub(now);
            if moved || self.out.blocked() {
                last_work = now;
                carried = Some(end);
                continue;
            }
            self.stats.empty_rounds += 1;
            if now - last_work < self.idle_spin_ns {
                continue;
            }
            self.idle(now);
            last_work = clock.now();
        }
    }

    /// One round (Fig. 5). Returns whether anything moved, and the clock read
    /// at its end (when its packets were handed on).
    fn do_scan(&mut self, now: Nanos) -> (bool, Nanos) {
        self.round += 1;
        self.take_lists();
        let mut moved = false;
        for i in 0..self.active.len() {
            moved |= self.drain(self.active[i], now);
        }
        self.trim_active();
        moved |= self.release(now);
        // The clock again, not the round's `now`: packets read after `now` was
        // taken may be in the batch handed on.
        let end = self.shared.clock.now();
        self.out.flush(&self.shared, end);
        self.publish();
        (moved, end)
    }

    /// Moves new client-list entries into the active set; the newest entry of each
    /// list is kept active until a newer one arrives.
    fn take_lists(&mut self) {
        for list in 0..self.keep.len() {
            let mut link = self.shared.lists.take(list);
            if link != END {
                self.keep[list] = link;
            }
            while link != END {
                let client = link - 1;
                let ctrl = &self.shared.clients[client as usize];
                // Read the link before the state changes: once trimmed, the client
                // may append itself again and rewrite it.
                link = ctrl.next.load(Ordering::Relaxed);
                ctrl.listing.activate();
                let book = &mut self.books[client as usize];
                if !book.active {
                    book.active = true;
                    self.active.push(client);
                }
            }
        }
    }

    /// Reads the waiting packets of `client` into the scheduler, at most
    /// [`VISIT_MAX`], straight from the mailbox slots (no copy in between: the
    /// lines of the later slots are still arriving from the client's core while
    /// the packets before them are scheduled).
    fn drain(&mut self, client: u32, now: Nanos) -> bool {
        self.stats.visits += 1;
        let total = if self.tags.aggregates() {
            self.admit_runs(client, now)
        } else {
            self.admit_each(client, now)
        };
        if !self.enqueue_drops.is_empty() {
            let mut drops = core::mem::take(&mut self.enqueue_drops);
            for (pkt, reason) in drops.drain(..) {
                self.on_drop(pkt, reason);
            }
            self.enqueue_drops = drops;
        }
        self.books[client as usize].report.received += total as u64;
        self.stats.received += total as u64;
        let mailbox = &self.consumers[client as usize];
        if total == 0 {
            self.stats.empty_visits += 1;
        } else if mailbox.unreleased() == mailbox.capacity() {
            self.stats.full_visits += 1;
        }
        total > 0
    }

    /// One scheduler entry per packet. Returns how many were read.
    fn admit_each(&mut self, client: u32, now: Nanos) -> usize {
        let (tags, sched, drops) = (&mut self.tags, &mut self.sched, &mut self.enqueue_drops);
        self.consumers[client as usize].read_with(VISIT_MAX, |pkt| {
            let mut pkt = *pkt;
            pkt.buffer = tags.insert(client, pkt.buffer);
            submit(sched, drops, pkt, now);
        })
    }

    /// Decision aggregation (section 6.3.1): consecutive packets of one flow and
    /// class join the open run until it holds `aggregate_bytes`; a run is one
    /// scheduler entry, its first packet with the run's length. The run open at
    /// the end of the visit is handed over too. Returns how many were read.
    fn admit_runs(&mut self, client: u32, now: Nanos) -> usize {
        let limit = self.aggregate_bytes;
        let (tags, sched, drops) = (&mut self.tags, &mut self.sched, &mut self.enqueue_drops);
        let mut open: Option<Run> = None;
        let n = self.consumers[client as usize].read_with(VISIT_MAX, |pkt| {
            let pkt = *pkt;
            let bytes = u64::from(pkt.len);
            if let Some(run) = open.as_mut() {
                if run.first.flow == pkt.flow
                    && run.first.class == pkt.class
                    && run.bytes + bytes <= limit
                {
                    run.tail = tags.insert_member(client, &pkt, run.tail);
                    run.bytes += bytes;
                    return;
                }
            }
            if let Some(run) = open.take() {
                submit(sched, drops, run.entry(), now);
            }
            let head = tags.insert_member(client, &pkt, NIL);
            open = Some(Run {
                head,
                tail: head,
                first: pkt,
                bytes,
            });
        });
        if let Some(run) = open {
            submit(sched, drops, run.entry(), now);
        }
        n
    }

    /// Runs a [`Pspat::with_scheduler`] command.
    fn run_command(&mut self, command: Command<S>, now: Nanos) {
        let mut rate = self.link.rate_bps();
        let mut drops = core::mem::take(&mut self.command_drops);
        let deliver = command(&mut Control {
            sched: &mut self.sched,
            now,
            drops: &mut drops,
            link_rate: &mut rate,
        });
        for (pkt, reason) in drops.drain(..) {
            self.on_drop(pkt, reason);
        }
        self.command_drops = drops;
        if rate != self.link.rate_bps() {
            let changed = self.link.set_rate(rate);
            debug_assert!(changed, "Control::set_link_rate checked the range");
            self.aggregate_bytes = self.aggregate.map_or(0, |a| a.bytes_at(rate));
        }
        debug_assert_eq!(
            self.tags.heads() as u64,
            self.sched.backlog().packets,
            "a command lost packets taken out of the scheduler"
        );
        self.stats.commands += 1;
        self.publish();
        deliver();
    }

    /// The packets a scheduler entry stands for, each handed to `each` with its
    /// client and its own buffer, which the caller puts in place of the
    /// descriptor's `buffer` (the tag) where it stores the descriptor: patching
    /// a copy here and storing it whole would read the patch back before its
    /// store completes (see [`Arbiter::admit_each`]). Their tags are freed.
    #[inline]
    fn unchain(&mut self, entry: Packet, mut each: impl FnMut(&mut Self, u32, Packet, u32)) {
        let mut tag = entry.buffer;
        let mut head = true;
        while tag != NIL {
            let pkt = if self.tags.aggregates() {
                self.tags.packet(tag)
            } else {
                entry
            };
            let m = self.tags.remove(tag, head);
            head = false;
            each(self, m.client, pkt, m.buffer);
            tag = m.next;
        }
    }

    /// Accounts for an entry the scheduler dropped: frees the mailbox slot of
    /// each of its packets and hands them to the drop hook.
    fn on_drop(&mut self, entry: Packet, reason: DropReason) {
        self.unchain(entry, |a, client, mut pkt, buffer| {
            pkt.buffer = buffer;
            if let Some(hook) = &mut a.on_drop {
                hook(pkt, reason);
            }
            a.consumers[client as usize].release(1);
            let report = &mut a.books[client as usize].report;
            report.dropped.packets[reason.index()] += 1;
            report.dropped.bytes[reason.index()] += u64::from(pkt.len);
            a.stats.dropped += 1;
            let drops = &a.shared.clients[client as usize].drops;
            drops.store(drops.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        });
    }

    /// Trims the active set to the newest client of each list (Fig. 5, line 9),
    /// with the listing handshake described in the module documentation.
    fn trim_active(&mut self) {
        let kept = self.keep.iter().filter(|&&k| k != END).count();
        if self.active.len() <= kept {
            return;
        }
        for &k in &self.keep {
            if k != END {
                self.books[(k - 1) as usize].kept_round = self.round;
            }
        }
        self.trim.clear();
        for &client in &self.active {
            if self.books[client as usize].kept_round == self.round {
                continue;
            }
            match self.shared.clients[client as usize].listing.unlist() {
                Unlist::Pending => self.books[client as usize].active = false,
                Unlist::Check => self.trim.push(client),
            }
        }
        if !self.trim.is_empty() {
            fence(Ordering::SeqCst);
            for &client in &self.trim {
                if self.consumers[client as usize].is_empty() {
                    self.books[client as usize].active = false;
                }
            }
        }
        let books = &self.books;
        self.active.retain(|&c| books[c as usize].active);
    }

    /// Releases packets while the emulated link is idle before `now` (Fig. 5,
    /// lines 11-22).
    fn release(&mut self, now: Nanos) -> bool {
        if !self.out.retry_pending() {
            return true;
        }
        let mut any = false;
        while self.link.idle_before(now) {
            let Some(entry) = self.sched.dequeue(now) else {
                self.link.drained(now, idle_cause(&self.sched));
                break;
            };
            any = true;
            self.link.send(entry.len, now);
            self.stats.decisions += 1;
            let mut room = true;
            self.unchain(entry, |a, client, pkt, buffer| {
                let book = &mut a.books[client as usize];
                if book.delivered_unreleased == 0 {
                    a.owed.push(client);
                }
                book.delivered_unreleased += 1;
                book.report.delivered += 1;
                a.stats.released += 1;
                room &= a.out.push(pkt, buffer, &a.shared);
            });
            if !room {
                break;
            }
        }
        self.give_back();
        any
    }

    /// Frees the mailbox slots of the packets delivered since the last call, one
    /// release per client: the clients' mailboxes learn of them at the end of the
    /// release loop rather than packet by packet, which keeps the loop on the
    /// scheduler and the output.
    fn give_back(&mut self) {
        for &client in &self.owed {
            let book = &mut self.books[client as usize];
            self.consumers[client as usize].release(book.delivered_unreleased as usize);
            book.delivered_unreleased = 0;
        }
        self.owed.clear();
    }

    fn publish(&mut self) {
        self.stats.rounds = self.round;
        self.stats.link_idle_ns = self.link.idle_ns();
        self.stats.link_held_ns = self.link.held_ns();
        self.shared.live.publish(&self.stats);
    }

    /// Nothing moved for `idle_spin`: sleep until a client notifies us, or until the
    /// scheduler will next have something for the link (section 3.5).
    fn idle(&mut self, now: Nanos) {
        let wake_at = self
            .sched
            .next_ready(now)
            .map(|t| t.max(self.link.idle_at()));
        let timeout = match wake_at {
            Some(t) if t <= now + self.idle_spin_ns => return,
            Some(t) => Some(Duration::from_nanos(t - now)),
            None => None,
        };
        self.stats.sleeps += 1;
        self.publish();
        let shared = &*self.shared;
        let commands = &*self.commands.0;
        let consumers = &self.consumers;
        let active = &self.active;
        let wake = shared.arbiter.sleep(
            || {
                shared.life.is_stopping()
                    || commands.is_pending()
                    || shared.lists.any_pending()
                    || active.iter().any(|&c| !consumers[c as usize].is_empty())
            },
            timeout,
        );
        match wake {
            Wake::Cancelled => {}
            Wake::Notified => self.stats.notified_wakeups += 1,
            Wake::TimedOut => self.stats.timer_wakeups += 1,
        }
    }

    /// Final drain at shutdown: every mailbox is read once more (all clients have
    /// dropped their handles), then the scheduler is emptied.
    fn finish(mut self, mode: ShutdownMode) -> ArbiterOutput<S, X> {
        for list in 0..self.keep.len() {
            self.shared.lists.take(list);
        }
        let now = self.shared.clock.now();
        for client in 0..self.consumers.len() as u32 {
            while self.drain(client, now) {}
        }
        match mode {
            ShutdownMode::Discard => self.discard_all(now),
            ShutdownMode::Drain => self.deliver_all(),
        }
        debug_assert_eq!(self.tags.live(), 0, "packets left in the scheduler");
        debug_assert_eq!(self.sched.backlog().packets, 0);
        self.round += 1;
        self.publish();
        self.shared.release_dispatchers();
        let clients = self.books.iter().map(|b| b.report).collect();
        ArbiterOutput {
            scheduler: self.sched,
            inline: self.out.into_sink(),
            clients,
            stats: self.stats,
        }
    }

    /// Drops everything the scheduler holds; packets released before the stop
    /// still go to their dispatchers.
    fn discard_all(&mut self, now: Nanos) {
        // A shaping scheduler gives up a held packet only at its release time:
        // step its clock through its release times (it is not used after this).
        let mut t = now;
        loop {
            while let Some(pkt) = self.sched.dequeue(t) {
                self.on_drop(pkt, DropReason::Shutdown);
            }
            if self.sched.backlog().packets == 0 || t == Nanos::MAX {
                break;
            }
            t = match self.sched.next_ready(t) {
                Some(next) if next > t => next,
                _ => t.saturating_add(1_000_000_000),
            };
        }
        while !self.out.retry_pending() {
            self.out.flush(&self.shared, self.shared.clock.now());
            spin_loop();
        }
        self.out.flush(&self.shared, self.shared.clock.now());
    }

    /// Delivers everything the scheduler holds, at the link rate.
    fn deliver_all(&mut self) {
        let clock = self.shared.clock;
        loop {
            let now = clock.now();
            self.release(now);
            self.out.flush(&self.shared, clock.now());
            if self.sched.backlog().packets == 0 && !self.out.blocked() {
                break;
            }
            match self.sched.next_ready(now) {
                Some(t) if t.max(self.link.idle_at()) > now + self.idle_spin_ns => {
                    let wait = t.max(self.link.idle_at()) - now;
                    std::thread::sleep(Duration::from_nanos(wait));
                }
                _ => spin_loop(),
            }
        }
    }
}
