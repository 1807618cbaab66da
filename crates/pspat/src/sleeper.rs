//! Sleeping when idle without losing a wake-up (PSPAT section 3.5).
//!
//! A thread that found no work (the arbiter: every mailbox empty; a dispatcher: its
//! TX mailbox empty) spins for a window `Tw` and then blocks until a producer
//! notifies it. Producers must not pay for a notification on every item, so they
//! notify only when the consumer has announced that it sleeps.
//!
//! # Handshake
//! ```text
//! sleeper                              notifier
//! sleeping = true                      publish work (mailbox push)
//! fence(SeqCst)                        fence(SeqCst)
//! if work visible: cancel              if sleeping: wake
//! else block until woken
//! ```
//! The two fences order each side's store before its load (the store-buffering
//! pattern), so at least one side sees the other's store: either the sleeper sees
//! the work and does not block, or the notifier sees `sleeping` and wakes it. A
//! wake is claimed by swapping `sleeping` to false, so of many notifiers only one
//! takes the lock, and a wake claimed while the sleeper cancels is consumed before
//! the next sleep (no stale token makes a later sleep return early, and none is
//! lost). Loom checks this in the tests below.
//!
//! # Cost
//! A notifier's fast path is the fence and one load of a line that changes only
//! when the sleeper sleeps or wakes. Blocking uses a mutex and condition variable,
//! touched only on the slow path.

use crate::sync::{fence, lock, AtomicBool, Condvar, Mutex, Ordering};
use std::time::Duration;

/// How a [`Sleeper::sleep`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wake {
    /// Work was already visible after the announcement: the thread did not block.
    Cancelled,
    /// A notifier woke the thread.
    Notified,
    /// The timeout passed without a notification.
    TimedOut,
}

/// A wake-up point for one sleeping thread, notified by any number of threads.
#[derive(Debug, Default)]
pub(crate) struct Sleeper {
    /// True from the sleeper's announcement until a notifier (or the sleeper,
    /// cancelling or timing out) claims the wake-up.
    sleeping: AtomicBool,
    /// The wake token: set by the notifier that claimed the wake-up.
    token: Mutex<bool>,
    wake: Condvar,
}

impl Sleeper {
    pub(crate) fn new() -> Self {
        Sleeper::default()
    }

    /// Whether the sleeper announced that it sleeps. Only meaningful after the
    /// caller published its work and issued `fence(SeqCst)`.
    #[inline]
    pub(crate) fn is_sleeping(&self) -> bool {
        self.sleeping.load(Ordering::Relaxed)
    }

    /// Wakes the sleeper if it still sleeps. Call after publishing work and
    /// `fence(SeqCst)`, when [`Sleeper::is_sleeping`] returned true.
    #[cold]
    pub(crate) fn wake(&self) {
        if self.sleeping.swap(false, Ordering::AcqRel) {
            *lock(&self.token) = true;
            self.wake.notify_one();
        }
    }

    /// Publishes-then-checks in one call: the notifier side of the handshake.
    #[inline]
    pub(crate) fn notify(&self) {
        fence(Ordering::SeqCst);
        if self.is_sleeping() {
            self.wake();
        }
    }

    /// Blocks until notified, unless `has_work` (evaluated after the announcement)
    /// finds work, or `timeout` passes. Returns how the sleep ended.
    pub(crate) fn sleep(&self, has_work: impl FnOnce() -> bool, timeout: Option<Duration>) -> Wake {
        // A swap rather than a store: the same here (every write to the flag is
        // then a read-modify-write, totally ordered), and loom 0.7 can let a
        // notifier's swap and a later plain store of this thread both miss each
        // other, an execution C11 forbids, which it reports as a lost wake-up.
        let _ = self.sleeping.swap(true, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        // If a notifier claimed the wake-up first (the swap finds false), fall
        // through and take its token, so it does not cut the next sleep short.
        if has_work() && self.sleeping.swap(false, Ordering::AcqRel) {
            return Wake::Cancelled;
        }
        let mut token = lock(&self.token);
        while !*token {
            match timeout {
                None => {
                    token = self
                        .wake
                        .wait(token)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                Some(t) => {
                    let (guard, result) = self
                        .wake
                        .wait_timeout(token, t)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    token = guard;
                    if result.timed_out() && !*token && self.sleeping.swap(false, Ordering::AcqRel)
                    {
                        return Wake::TimedOut;
                    }
                }
            }
        }
        *token = false;
        Wake::Notified
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn cancels_when_work_is_already_there() {
        let s = Sleeper::new();
        assert_eq!(s.sleep(|| true, None), Wake::Cancelled);
        assert!(!s.is_sleeping());
    }

    #[test]
    fn times_out_without_a_notifier() {
        let s = Sleeper::new();
        assert_eq!(
            s.sleep(|| false, Some(Duration::from_millis(1))),
            Wake::TimedOut
        );
        assert!(!s.is_sleeping());
        // No token is left behind: the next sleep times out again.
        assert_eq!(
            s.sleep(|| false, Some(Duration::from_millis(1))),
            Wake::TimedOut
        );
    }

    #[test]
    fn a_notifier_wakes_a_blocked_sleeper() {
        let s = Arc::new(Sleeper::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (s2, flag2) = (Arc::clone(&s), Arc::clone(&flag));
        let t = std::thread::spawn(move || {
            while !flag2.load(Ordering::Acquire) {
                s2.sleep(|| flag2.load(Ordering::Relaxed), None);
            }
        });
        std::thread::sleep(Duration::from_millis(5));
        flag.store(true, Ordering::Release);
        s.notify();
        t.join().unwrap();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::mailbox::with_geometry;
    use loom::sync::Arc;
    use loom::thread;

    /// A producer pushes into a mailbox and notifies; the consumer sleeps whenever
    /// it finds the mailbox empty. If a wake-up could be lost, loom finds an
    /// execution where the consumer blocks forever (reported as a deadlock).
    #[test]
    fn no_lost_wake_up() {
        loom::model(|| {
            let sleeper = Arc::new(Sleeper::new());
            let (mut tx, mut rx) = with_geometry::<u32>(2, 1);
            let s = Arc::clone(&sleeper);
            let producer = thread::spawn(move || {
                tx.push(1).unwrap();
                s.notify();
            });
            loop {
                if rx.pop().is_some() {
                    break;
                }
                sleeper.sleep(|| !rx.is_empty(), None);
            }
            producer.join().unwrap();
        });
    }

    /// The runtime's command handshake: a poster publishes a flag (a command is
    /// waiting) and notifies; the arbiter sleeps whenever it finds the flag clear.
    /// The arbiter must never block forever with the flag set.
    #[test]
    fn a_posted_command_is_never_slept_through() {
        loom::model(|| {
            let sleeper = Arc::new(Sleeper::new());
            let pending = Arc::new(AtomicBool::new(false));
            let (s, p) = (Arc::clone(&sleeper), Arc::clone(&pending));
            let poster = thread::spawn(move || {
                p.store(true, Ordering::Release);
                s.notify();
            });
            while !pending.load(Ordering::Acquire) {
                sleeper.sleep(|| pending.load(Ordering::Relaxed), None);
            }
            poster.join().unwrap();
        });
    }

    /// Two producers, each with its own mailbox, race with a sleeper that sleeps
    /// between items. Whichever notifier claims a wake-up, its token is consumed:
    /// a later sleep is not cut short by a stale token, and none blocks forever.
    #[test]
    fn two_notifiers_and_repeated_sleeps() {
        // Unbounded, the mutex and condition variable make this model take hours;
        // four preemptions cover every ordering of the two claims and the sleeps.
        let mut model = loom::model::Builder::new();
        model.preemption_bound = Some(4);
        model.check(|| {
            let sleeper = Arc::new(Sleeper::new());
            let mut consumers = Vec::new();
            let producers: Vec<_> = (0..2u32)
                .map(|i| {
                    let (mut tx, rx) = with_geometry::<u32>(2, 1);
                    consumers.push(rx);
                    let s = Arc::clone(&sleeper);
                    thread::spawn(move || {
                        tx.push(i).unwrap();
                        s.notify();
                    })
                })
                .collect();
            let mut got = 0;
            while got < 2 {
                let before = got;
                for rx in &mut consumers {
                    if rx.pop().is_some() {
                        got += 1;
                    }
                }
                if got == before {
                    sleeper.sleep(|| consumers.iter().any(|rx| !rx.is_empty()), None);
                }
            }
            for p in producers {
                p.join().unwrap();
            }
        });
    }
}
