//! The hand-off of a command to the arbiter ([`Pspat::with_scheduler`]) and of
//! its result back to the caller.
//!
//! ```text
//! caller (one at a time: the gate)           arbiter, once per round
//! lock slot; refused if closed               if pending (Acquire): lock slot,
//! slot = command; pending = true (Release)     pending = false, take command
//! notify the arbiter (sleep handshake)       run it; deliver the reply
//! wait for the reply                         ...
//!                                            at exit: lock slot, closed = true,
//!                                              drop the waiting command
//! ```
//!
//! Every write of `pending` happens under the slot's lock, so a posted command
//! is either taken by the take that lowers the flag after it or leaves the flag
//! raised for the next round; the arbiter pays one `Acquire` load per round
//! while nothing is posted. The arbiter's sleep condition reads the flag after
//! its `SeqCst` fence and the caller notifies after raising it, so a sleeping
//! arbiter is woken (the `sleeper` module's handshake). A command is dropped
//! unrun only when the arbiter ends (closing the slot), and dropping it drops
//! its [`ReplyTx`], which releases the caller with no result: a caller never
//! waits for an arbiter that is gone. The loom models below check that a
//! command racing with the arbiter's rounds and its exit is run once or
//! refused, never lost, and that packets moved by a command (the scheduler
//! replaced) are each delivered or dropped once.
//!
//! [`Pspat::with_scheduler`]: super::Pspat::with_scheduler

use crate::sync::{lock, Arc, AtomicBool, Condvar, Mutex, Ordering};

/// The slot a command waits in for the arbiter.
#[derive(Debug)]
pub(crate) struct CommandSlot<C> {
    /// A command waits: read once per round without the lock.
    pending: AtomicBool,
    slot: Mutex<Slot<C>>,
    /// Serialises callers: one command in flight at a time.
    gate: Mutex<()>,
}

#[derive(Debug)]
struct Slot<C> {
    command: Option<C>,
    /// The arbiter has ended: commands are refused.
    closed: bool,
}

impl<C> Default for CommandSlot<C> {
    fn default() -> Self {
        CommandSlot {
            pending: AtomicBool::new(false),
            slot: Mutex::new(Slot {
                command: None,
                closed: false,
            }),
            gate: Mutex::new(()),
        }
    }
}

impl<C> CommandSlot<C> {
    /// Runs a command built by `make` around the sender of its reply: posts it,
    /// calls `notify` (to wake a sleeping arbiter) and waits for the reply.
    /// `None` if the arbiter has ended, before or while the command waited.
    pub(crate) fn call<R>(
        &self,
        make: impl FnOnce(ReplyTx<R>) -> C,
        notify: impl FnOnce(),
    ) -> Option<R> {
        let _gate = lock(&self.gate);
        let (tx, rx) = reply();
        {
            let mut slot = lock(&self.slot);
            if slot.closed {
                return None;
            }
            slot.command = Some(make(tx));
            self.pending.store(true, Ordering::Release);
        }
        notify();
        rx.wait()
    }

    /// The waiting command, if any (the arbiter, once per round).
    pub(crate) fn take(&self) -> Option<C> {
        if !self.pending.load(Ordering::Acquire) {
            return None;
        }
        let mut slot = lock(&self.slot);
        self.pending.store(false, Ordering::Relaxed);
        slot.command.take()
    }

    /// Whether a command waits; for the arbiter's sleep condition, after its
    /// `SeqCst` fence.
    pub(crate) fn is_pending(&self) -> bool {
        self.pending.load(Ordering::Relaxed)
    }

    /// Refuses every later command and drops the waiting one, releasing its
    /// caller (the arbiter, when it ends, even by a panic).
    pub(crate) fn close(&self) {
        let waiting = {
            let mut slot = lock(&self.slot);
            slot.closed = true;
            self.pending.store(false, Ordering::Relaxed);
            slot.command.take()
        };
        drop(waiting);
    }
}

/// The state of one reply.
#[derive(Debug)]
enum Reply<R> {
    Waiting,
    Sent(R),
    /// The sender was dropped without sending.
    Gone,
}

#[derive(Debug)]
struct ReplyCell<R> {
    state: Mutex<Reply<R>>,
    ready: Condvar,
}

/// The sending half of a reply: [`ReplyTx::send`], or dropped unsent, which
/// releases the receiver with no result.
#[derive(Debug)]
pub(crate) struct ReplyTx<R>(Option<Arc<ReplyCell<R>>>);

/// The receiving half of a reply.
#[derive(Debug)]
pub(crate) struct ReplyRx<R>(Arc<ReplyCell<R>>);

/// A one-shot reply channel.
fn reply<R>() -> (ReplyTx<R>, ReplyRx<R>) {
    let cell = Arc::new(ReplyCell {
        state: Mutex::new(Reply::Waiting),
        ready: Condvar::new(),
    });
    (ReplyTx(Some(Arc::clone(&cell))), ReplyRx(cell))
}

impl<R> ReplyTx<R> {
    /// Hands `value` to the receiver.
    pub(crate) fn send(mut self, value: R) {
        if let Some(cell) = self.0.take() {
            *lock(&cell.state) = Reply::Sent(value);
            cell.ready.notify_one();
        }
    }
}

impl<R> Drop for ReplyTx<R> {
    fn drop(&mut self) {
        if let Some(cell) = self.0.take() {
            *lock(&cell.state) = Reply::Gone;
            cell.ready.notify_one();
        }
    }
}

impl<R> ReplyRx<R> {
    /// The value sent, or `None` once the sender is dropped unsent.
    fn wait(self) -> Option<R> {
        let mut state = lock(&self.0.state);
        loop {
            match core::mem::replace(&mut *state, Reply::Waiting) {
                Reply::Sent(v) => return Some(v),
                Reply::Gone => return None,
                Reply::Waiting => {
                    state = self
                        .0
                        .ready
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    type Cmd = Box<dyn FnOnce(&mut u32) + Send>;

    #[test]
    fn a_command_runs_once_and_its_reply_comes_back() {
        let slot = Arc::new(CommandSlot::<Cmd>::default());
        assert!(slot.take().is_none());
        let arbiter = {
            let slot = Arc::clone(&slot);
            std::thread::spawn(move || {
                let mut state = 41;
                loop {
                    if let Some(c) = slot.take() {
                        c(&mut state);
                        return state;
                    }
                    std::thread::yield_now();
                }
            })
        };
        let got = slot.call(
            |tx| {
                Box::new(move |s: &mut u32| {
                    *s += 1;
                    tx.send(*s);
                }) as Cmd
            },
            || {},
        );
        assert_eq!(got, Some(42));
        assert_eq!(arbiter.join().unwrap(), 42);
        assert!(slot.take().is_none(), "a command ran twice");
    }

    #[test]
    fn a_closed_slot_refuses_and_a_dropped_command_releases_its_caller() {
        let slot = CommandSlot::<Cmd>::default();
        slot.close();
        assert_eq!(
            slot.call(|tx| Box::new(move |_: &mut u32| tx.send(1)) as Cmd, || {}),
            None
        );
        let (tx, rx) = reply::<u32>();
        drop(tx);
        assert_eq!(rx.wait(), None);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::mailbox::with_geometry;
    use crate::sleeper::Sleeper;
    use loom::thread;

    /// What a command does with the arbiter's state: the scheduler's packets and
    /// the packets dropped with a counted reason.
    type Cmd = Box<dyn FnOnce(&mut Vec<u32>, &mut Vec<u32>) + Send>;

    /// The arbiter's loop reduced to its hand-offs: stop check, command, one
    /// packet from the client's mailbox into the scheduler and one out to the
    /// link, sleep when idle (waking for packets, commands and the stop). At
    /// the stop it drains the mailbox and the scheduler and closes the slot.
    fn arbiter(
        slot: Arc<CommandSlot<Cmd>>,
        sleeper: Arc<Sleeper>,
        stop: Arc<AtomicBool>,
        mut rx: crate::mailbox::Consumer<u32>,
    ) -> (Vec<u32>, Vec<u32>) {
        let (mut sched, mut sent, mut dropped) = (Vec::new(), Vec::new(), Vec::new());
        loop {
            if stop.load(Ordering::Acquire) {
                while let Some(p) = rx.pop() {
                    sched.push(p);
                }
                sent.append(&mut sched);
                slot.close();
                return (sent, dropped);
            }
            if let Some(c) = slot.take() {
                c(&mut sched, &mut dropped);
            }
            let mut moved = false;
            if let Some(p) = rx.pop() {
                sched.push(p);
                moved = true;
            }
            if !sched.is_empty() {
                sent.push(sched.remove(0));
                moved = true;
            }
            if !moved {
                sleeper.sleep(
                    || stop.load(Ordering::Relaxed) || slot.is_pending() || !rx.is_empty(),
                    None,
                );
            }
        }
    }

    /// A reload (the scheduler replaced: its packets moved into the new one,
    /// the first dropped with a counted reason) races with a client's packets
    /// and the arbiter's rounds and sleeps. The reload runs once and reports
    /// what it moved and dropped; every packet is sent or dropped exactly once;
    /// the arbiter never sleeps through the reload or the stop (loom reports a
    /// deadlock).
    #[test]
    fn a_reload_racing_with_the_arbiter_keeps_every_packet() {
        const PACKETS: u32 = 2;
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(2);
        model.check(|| {
            let slot = Arc::new(CommandSlot::<Cmd>::default());
            let sleeper = Arc::new(Sleeper::new());
            let stop = Arc::new(AtomicBool::new(false));
            let (mut tx, rx) = with_geometry::<u32>(4, 1);
            let arb = {
                let (slot, sleeper, stop) =
                    (Arc::clone(&slot), Arc::clone(&sleeper), Arc::clone(&stop));
                thread::spawn(move || arbiter(slot, sleeper, stop, rx))
            };
            let client = {
                let sleeper = Arc::clone(&sleeper);
                thread::spawn(move || {
                    for p in 1..=PACKETS {
                        tx.push(p).unwrap();
                        sleeper.notify();
                    }
                })
            };
            let reply = slot.call(
                |tx| {
                    Box::new(move |sched: &mut Vec<u32>, dropped: &mut Vec<u32>| {
                        let old = core::mem::take(sched);
                        let mut moved = 0;
                        for (i, p) in old.into_iter().enumerate() {
                            if i == 0 {
                                dropped.push(p);
                            } else {
                                sched.push(p);
                                moved += 1;
                            }
                        }
                        tx.send((moved, dropped.len()));
                    }) as Cmd
                },
                || sleeper.notify(),
            );
            let (moved, refused) = reply.expect("the arbiter was running");
            client.join().unwrap();
            stop.store(true, Ordering::Release);
            sleeper.notify();
            let (sent, dropped) = arb.join().unwrap();
            assert_eq!(dropped.len(), refused, "a drop not reported by the reload");
            assert!(moved + refused <= PACKETS as usize);
            let mut all: Vec<u32> = sent.iter().chain(&dropped).copied().collect();
            all.sort_unstable();
            assert_eq!(all, (1..=PACKETS).collect::<Vec<_>>(), "lost or duplicated");
            assert!(slot.take().is_none(), "a command left behind");
        });
    }

    /// A command posted while the arbiter ends is run or refused: its caller
    /// gets the reply or `None`, and never waits for an arbiter that is gone.
    #[test]
    fn a_command_racing_with_the_arbiter_exit_never_hangs() {
        loom::model(|| {
            let slot = Arc::new(CommandSlot::<Box<dyn FnOnce(&mut u32) + Send>>::default());
            let stop = Arc::new(AtomicBool::new(false));
            let arb = {
                let (slot, stop) = (Arc::clone(&slot), Arc::clone(&stop));
                thread::spawn(move || {
                    let mut runs = 0;
                    while !stop.load(Ordering::Acquire) {
                        if let Some(c) = slot.take() {
                            c(&mut runs);
                        }
                        thread::yield_now();
                    }
                    slot.close();
                    runs
                })
            };
            let caller = {
                let slot = Arc::clone(&slot);
                thread::spawn(move || {
                    slot.call(
                        |tx| {
                            Box::new(move |runs: &mut u32| {
                                *runs += 1;
                                tx.send(*runs);
                            }) as Box<dyn FnOnce(&mut u32) + Send>
                        },
                        || {},
                    )
                })
            };
            stop.store(true, Ordering::Release);
            let runs = arb.join().unwrap();
            let got = caller.join().unwrap();
            assert_eq!(got.is_some(), runs == 1, "run {runs} times, reply {got:?}");
        });
    }
}
