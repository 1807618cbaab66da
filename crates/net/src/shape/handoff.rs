//! The reload hand-off to a receive thread: a slot that holds the newest value
//! posted (a classifier) until the thread takes it between two batches.
//!
//! The poster writes the value and raises `pending` (`Release`) under the slot's
//! lock; the receive thread checks `pending` with one `Acquire` load per batch (no
//! lock and no read-modify-write while nothing is posted) and only then, under the
//! lock, lowers it and takes the value. Every write of `pending` happens under the
//! lock, so a post is either taken by the take that lowers the flag after it or
//! leaves the flag raised for the next look. Two
//! reloads before the thread looks leave the newer value: the thread never adopts
//! an older value after a newer one, and once the last post has returned the thread
//! adopts it at its next look. The loom models below check both, and that a thread
//! stopped meanwhile ends and accounts for every packet it received.

use crate::sync::{AtomicBool, Mutex, MutexGuard, Ordering};

/// The newest value posted for a receive thread, until it takes it.
#[derive(Debug)]
pub(crate) struct Handoff<T> {
    pending: AtomicBool,
    next: Mutex<Option<T>>,
}

impl<T> Default for Handoff<T> {
    fn default() -> Self {
        Handoff {
            pending: AtomicBool::new(false),
            next: Mutex::new(None),
        }
    }
}

impl<T> Handoff<T> {
    /// Posts `value`, replacing one not taken yet.
    pub(crate) fn post(&self, value: T) {
        let mut next = lock(&self.next);
        *next = Some(value);
        self.pending.store(true, Ordering::Release);
    }

    /// The value posted since the last take, if any.
    pub(crate) fn take(&self) -> Option<T> {
        if !self.pending.load(Ordering::Acquire) {
            return None;
        }
        let mut next = lock(&self.next);
        self.pending.store(false, Ordering::Relaxed);
        next.take()
    }
}

/// Locks `mutex`, ignoring poisoning: the slot holds a value or none either way.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::Handoff;
    use crate::sync::{Arc, AtomicBool, Mutex, Ordering};
    use loom::thread;

    /// Two reloads race with a receive thread that looks twice. The thread never
    /// goes back to an older policy, and after the reloads returned one more look
    /// adopts the last one: no reload is lost.
    #[test]
    fn no_reload_is_lost_or_reordered() {
        loom::model(|| {
            let slot = Arc::new(Handoff::<u32>::default());
            let reloads = {
                let slot = Arc::clone(&slot);
                thread::spawn(move || {
                    slot.post(1);
                    slot.post(2);
                })
            };
            let mut current = 0;
            for _ in 0..2 {
                if let Some(v) = slot.take() {
                    assert!(v > current, "policy {v} adopted after {current}");
                    current = v;
                }
            }
            reloads.join().unwrap();
            if let Some(v) = slot.take() {
                assert!(v > current, "policy {v} adopted after {current}");
                current = v;
            }
            assert_eq!(current, 2, "the last reload was lost");
            assert!(slot.take().is_none(), "a reload was taken twice");
        });
    }

    /// A receive thread classifies packets by the policy in hand while a reload is
    /// posted and the bump is stopped. Every packet is handed on exactly once, by a
    /// policy that was posted (never a newer one than posted before it), the
    /// thread ends once stopped (loom reports a hang), and a policy it never took
    /// stays in the slot, freed with it.
    #[test]
    fn reload_and_stop_keep_every_packet() {
        const PACKETS: u32 = 2;
        loom::model(|| {
            let slot = Arc::new(Handoff::<u32>::default());
            let stop = Arc::new(AtomicBool::new(false));
            let out = Arc::new(Mutex::new(Vec::new()));
            let rx = {
                let (slot, stop, out) = (Arc::clone(&slot), Arc::clone(&stop), Arc::clone(&out));
                thread::spawn(move || {
                    let (mut policy, mut received) = (0u32, 0u32);
                    while !stop.load(Ordering::Acquire) {
                        if let Some(p) = slot.take() {
                            policy = p;
                        }
                        if received < PACKETS {
                            out.lock().unwrap().push((received, policy));
                            received += 1;
                        } else {
                            thread::yield_now();
                        }
                    }
                    (received, policy)
                })
            };
            slot.post(1);
            stop.store(true, Ordering::Release);
            let (received, policy) = rx.join().unwrap();
            let out = out.lock().unwrap();
            assert_eq!(out.len() as u32, received, "a packet lost or duplicated");
            for (i, &(seq, p)) in out.iter().enumerate() {
                assert_eq!(seq, i as u32, "packets reordered");
                assert!(
                    p <= policy,
                    "packet {seq} classified by a policy after the last"
                );
            }
            if policy == 0 {
                assert_eq!(slot.take(), Some(1), "the reload vanished");
            }
        });
    }
}
