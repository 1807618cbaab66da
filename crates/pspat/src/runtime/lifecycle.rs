//! The runtime's life cycle: clients checked out and back, and the shutdown
//! hand-off from the handle to the arbiter and from the arbiter to the
//! dispatchers.
//!
//! ```text
//! handle (shutdown)          client                 arbiter            dispatcher
//! state |= CLOSED            send: CLOSED? refuse
//! wait: every producer       drop: lock pool,
//!   back in the pool           give producer back
//! state |= STOP [| DISCARD]                         STOP seen (Acquire):
//! notify the arbiter                                  read every mailbox,
//! join the arbiter                                    empty the scheduler,
//!                                                     done = true (Release),
//!                                                     notify dispatchers
//! join the dispatchers                                                 done (Acquire)
//!                                                                       and TX empty:
//!                                                                       return
//! ```
//!
//! A client gives its producer back under the pool's lock, after its last push;
//! the handle sees every producer back under the same lock before it raises
//! `STOP`, and the arbiter reads `STOP` with `Acquire`: every push happens before
//! the arbiter's final read of the mailboxes, so none is stranded. The arbiter
//! raises `done` after its last push into a TX mailbox, and a dispatcher ends
//! only when it sees `done` and then an empty TX mailbox. The loom model below
//! checks that a shutdown racing with a client's sends and the threads' rounds
//! and sleeps accounts for every packet: refused at the send, delivered, or
//! dropped with a counted reason ([`ShutdownMode::Discard`]).

use super::ShutdownMode;
use crate::pad::CachePadded;
use crate::sync::{lock, AtomicBool, AtomicU32, Condvar, Mutex, Ordering};

/// `state` bit: sends are refused.
const CLOSED: u32 = 1;
/// `state` bit: the arbiter must finish.
const STOP: u32 = 2;
/// `state` bit with `STOP`: discard instead of drain.
const DISCARD: u32 = 4;

/// Why a client could not be checked out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CheckOut {
    /// Shutdown has started.
    Closed,
    /// Every producer is owned by a live client.
    Exhausted,
}

/// The runtime's state, its free client producers, and the dispatchers' release.
#[derive(Debug)]
pub(crate) struct Lifecycle<P> {
    /// Read on every send, written at shutdown: `CLOSED | STOP [| DISCARD]`.
    state: CachePadded<AtomicU32>,
    /// Producer halves of client mailboxes not owned by a live client.
    pool: Mutex<Vec<(u32, P)>>,
    /// Signalled when a client gives its producer back.
    returned: Condvar,
    /// Producers in all.
    producers: usize,
    /// Set by the arbiter after its last push into TX mailboxes.
    dispatch_done: AtomicBool,
}

impl<P> Lifecycle<P> {
    pub(crate) fn new(producers: Vec<(u32, P)>) -> Self {
        Lifecycle {
            state: CachePadded::new(AtomicU32::new(0)),
            producers: producers.len(),
            pool: Mutex::new(producers),
            returned: Condvar::new(),
            dispatch_done: AtomicBool::new(false),
        }
    }

    /// Whether sends are refused, as a client checks before each push (no
    /// ordering needed: the pool's lock orders the shutdown).
    #[inline]
    pub(crate) fn send_closed(&self) -> bool {
        self.state.load(Ordering::Relaxed) & CLOSED != 0
    }

    /// Whether shutdown has started.
    pub(crate) fn is_closed(&self) -> bool {
        self.state.load(Ordering::Acquire) & CLOSED != 0
    }

    /// A free producer and its client index.
    pub(crate) fn check_out(&self) -> Result<(u32, P), CheckOut> {
        if self.is_closed() {
            return Err(CheckOut::Closed);
        }
        lock(&self.pool).pop().ok_or(CheckOut::Exhausted)
    }

    /// A client's producer back, after the client's last push.
    pub(crate) fn give_back(&self, index: u32, producer: P) {
        lock(&self.pool).push((index, producer));
        self.returned.notify_all();
    }

    /// Refuses new sends and clients, then waits until every producer is back.
    pub(crate) fn close_and_wait(&self) {
        self.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut pool = lock(&self.pool);
        while pool.len() < self.producers {
            pool = self
                .returned
                .wait(pool)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Tells the arbiter to finish (call after [`Lifecycle::close_and_wait`],
    /// then wake it).
    pub(crate) fn stop(&self, mode: ShutdownMode) {
        let stop = match mode {
            ShutdownMode::Drain => STOP,
            ShutdownMode::Discard => STOP | DISCARD,
        };
        self.state.fetch_or(stop, Ordering::AcqRel);
    }

    /// How the arbiter must finish, once told to (the arbiter, once per round).
    pub(crate) fn stop_requested(&self) -> Option<ShutdownMode> {
        let state = self.state.load(Ordering::Acquire);
        if state & STOP == 0 {
            None
        } else if state & DISCARD != 0 {
            Some(ShutdownMode::Discard)
        } else {
            Some(ShutdownMode::Drain)
        }
    }

    /// Whether the arbiter is told to stop; for its sleep condition, after its
    /// `SeqCst` fence.
    pub(crate) fn is_stopping(&self) -> bool {
        self.state.load(Ordering::Relaxed) & STOP != 0
    }

    /// The arbiter's last push into a TX mailbox is done (then wake the
    /// dispatchers).
    pub(crate) fn finish_dispatch(&self) {
        self.dispatch_done.store(true, Ordering::Release);
    }

    /// Whether the arbiter has pushed its last packet: a dispatcher that sees
    /// this and then an empty TX mailbox ends.
    pub(crate) fn dispatch_finished(&self) -> bool {
        self.dispatch_done.load(Ordering::Acquire)
    }

    /// [`Lifecycle::dispatch_finished`] for a dispatcher's sleep condition,
    /// after its `SeqCst` fence.
    pub(crate) fn dispatch_finishing(&self) -> bool {
        self.dispatch_done.load(Ordering::Relaxed)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::mailbox::{with_geometry, Consumer, Producer};
    use crate::sleeper::Sleeper;
    use crate::sync::Arc;
    use loom::thread;

    struct Rig {
        life: Lifecycle<Producer<u32>>,
        arbiter: Sleeper,
        dispatcher: Sleeper,
    }

    /// The arbiter reduced to its hand-offs: each round one packet from the
    /// client's mailbox into the scheduler and one from the scheduler into the
    /// TX mailbox; asleep when idle; at the stop it reads the mailbox to the
    /// end and delivers or drops what the scheduler holds, then releases the
    /// dispatcher. Returns the packets it dropped.
    fn arbiter(rig: &Rig, mut rx: Consumer<u32>, mut tx: Producer<u32>) -> Vec<u32> {
        let mut sched = Vec::new();
        loop {
            if let Some(mode) = rig.life.stop_requested() {
                while let Some(p) = rx.pop() {
                    sched.push(p);
                }
                let dropped = match mode {
                    ShutdownMode::Drain => {
                        for p in sched.drain(..) {
                            tx.push(p).unwrap();
                        }
                        Vec::new()
                    }
                    ShutdownMode::Discard => sched,
                };
                rig.life.finish_dispatch();
                rig.dispatcher.notify();
                return dropped;
            }
            let mut moved = false;
            if let Some(p) = rx.pop() {
                sched.push(p);
                moved = true;
            }
            if !sched.is_empty() {
                tx.push(sched.remove(0)).unwrap();
                rig.dispatcher.notify();
                moved = true;
            }
            if !moved {
                rig.arbiter
                    .sleep(|| rig.life.is_stopping() || !rx.is_empty(), None);
            }
        }
    }

    /// A dispatcher: empties its TX mailbox, sleeps when it is empty, ends once
    /// the arbiter is done and the mailbox empty. Returns what it transmitted.
    fn dispatcher(rig: &Rig, mut rx: Consumer<u32>) -> Vec<u32> {
        let mut sent = Vec::new();
        loop {
            while let Some(p) = rx.pop() {
                sent.push(p);
            }
            if rig.life.dispatch_finished() && rx.is_empty() {
                return sent;
            }
            rig.dispatcher
                .sleep(|| !rx.is_empty() || rig.life.dispatch_finishing(), None);
        }
    }

    /// A shutdown races with a client that checks out, sends two packets
    /// (unless closed) and drops its handle, and with the arbiter's and the
    /// dispatcher's rounds and sleeps. Every packet the client sent is
    /// transmitted once (drain) or dropped once (discard), the threads end
    /// (loom reports a hang) and every producer is back.
    fn shutdown_accounts_for_every_packet(mode: ShutdownMode) {
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(move || {
            let (ctx, crx) = with_geometry::<u32>(4, 1);
            let (ttx, trx) = with_geometry::<u32>(4, 1);
            let rig = Arc::new(Rig {
                life: Lifecycle::new(vec![(0, ctx)]),
                arbiter: Sleeper::new(),
                dispatcher: Sleeper::new(),
            });
            let client = {
                let rig = Arc::clone(&rig);
                thread::spawn(move || {
                    let Ok((index, mut producer)) = rig.life.check_out() else {
                        return Vec::new();
                    };
                    let mut sent = Vec::new();
                    for p in 1..=2 {
                        if rig.life.send_closed() {
                            break;
                        }
                        producer.push(p).unwrap();
                        sent.push(p);
                        rig.arbiter.notify();
                    }
                    rig.life.give_back(index, producer);
                    sent
                })
            };
            let arb = {
                let rig = Arc::clone(&rig);
                thread::spawn(move || arbiter(&rig, crx, ttx))
            };
            let disp = {
                let rig = Arc::clone(&rig);
                thread::spawn(move || dispatcher(&rig, trx))
            };
            rig.life.close_and_wait();
            rig.life.stop(mode);
            rig.arbiter.notify();
            let dropped = arb.join().unwrap();
            let transmitted = disp.join().unwrap();
            let sent = client.join().unwrap();
            if mode == ShutdownMode::Drain {
                assert!(dropped.is_empty(), "a drain dropped {dropped:?}");
            }
            let mut out: Vec<u32> = transmitted.iter().chain(&dropped).copied().collect();
            out.sort_unstable();
            assert_eq!(
                out, sent,
                "sent {sent:?}: transmitted {transmitted:?}, dropped {dropped:?}"
            );
            assert_eq!(lock(&rig.life.pool).len(), 1, "a producer not back");
            assert_eq!(rig.life.check_out().err(), Some(CheckOut::Closed));
        });
    }

    #[test]
    fn a_drain_delivers_every_packet_sent_before_the_stop() {
        shutdown_accounts_for_every_packet(ShutdownMode::Drain);
    }

    #[test]
    fn a_discard_drops_with_a_count_what_it_does_not_deliver() {
        shutdown_accounts_for_every_packet(ShutdownMode::Discard);
    }
}
