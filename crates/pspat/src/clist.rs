//! Client lists: which clients the arbiter must look at (PSPAT section 3.1).
//!
//! One list per CPU. A client that sends while not listed appends itself to the list
//! of the CPU it runs on; the arbiter takes each list's new entries every round,
//! scans those clients' mailboxes, and trims its set back to the most recently
//! appended client of each CPU, which is most likely the one running there now. The
//! arbiter so scans O(CPUs) mailboxes per round however many clients exist.
//!
//! # Structure
//! Each list is an intrusive lock-free stack: the head is a client index (+1, 0 for
//! empty) and each client's control block holds its `next` link. Appending is one
//! compare-and-swap on the head (release); the arbiter takes a whole list with one
//! swap (acquire), which makes every appender's `next` store visible. Appends are
//! rare (once per context switch to a client that sends), so the shared head costs
//! nothing measurable. The stack order is newest first, so the entry the arbiter
//! keeps is the first it takes. A take-all stack has no ABA problem: nodes are never
//! popped one by one.
//!
//! # Deviation from the paper
//! The paper's lists are single-producer mailboxes, one per CPU, valid in the kernel
//! where a client appends with preemption disabled. User threads can be preempted or
//! migrate between reading their CPU number and appending, so two clients may append
//! to one list at once: the compare-and-swap makes that safe. A client appends when
//! it is *unlisted* (a state the arbiter sets when it trims the client) rather than
//! when it is not the list's last entry: the last entry is never unlisted, so this
//! appends no more often, and the state's handshake (see `runtime`) is what
//! guarantees that a trimmed client's next packet is not overlooked. The state also
//! keeps a client from being on a list twice, which would make the chain a cycle.

use crate::pad::CachePadded;
use crate::sync::{AtomicU32, Ordering};

/// Marks the end of a chain in `next` links.
pub(crate) const END: u32 = 0;

/// On no list and not active: the client appends itself on its next send.
const UNLISTED: u32 = 0;
/// On a client list, not yet taken by the arbiter.
const PENDING: u32 = 1;
/// In the arbiter's active set.
const ACTIVE: u32 = 2;

/// A client's listing state: `UNLISTED`, `PENDING` or `ACTIVE`.
///
/// The client moves it from `UNLISTED` to `PENDING` (compare-and-swap, so it is
/// never on a list twice, which would make the chain a cycle) and appends itself;
/// the arbiter moves it to `ACTIVE` when it takes the client from a list, and back
/// to `UNLISTED` when it trims the client. Both sides check it after
/// `fence(SeqCst)` following their own write (see `runtime`).
#[derive(Debug)]
pub(crate) struct Listing(AtomicU32);

/// What the arbiter must do after [`Listing::unlist`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unlist {
    /// The client is unlisted: after `fence(SeqCst)`, keep it active if its mailbox
    /// is not empty.
    Check,
    /// The client is already back on a list: drop it from the active set, it
    /// returns when the list is taken.
    Pending,
}

impl Listing {
    pub(crate) fn new() -> Self {
        Listing(AtomicU32::new(UNLISTED))
    }

    /// Client side, after a push and `fence(SeqCst)`: whether the client must
    /// append itself to a list now (it was unlisted and is now pending).
    #[inline]
    pub(crate) fn claim(&self) -> bool {
        self.0.load(Ordering::Relaxed) == UNLISTED
            && self
                .0
                .compare_exchange(UNLISTED, PENDING, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }

    /// Arbiter side: the client was taken from a list.
    pub(crate) fn activate(&self) {
        self.0.store(ACTIVE, Ordering::Relaxed);
    }

    /// Arbiter side: trims the client.
    pub(crate) fn unlist(&self) -> Unlist {
        match self
            .0
            .compare_exchange(ACTIVE, UNLISTED, Ordering::Relaxed, Ordering::Relaxed)
        {
            Err(PENDING) => Unlist::Pending,
            // Newly unlisted, or unlisted by an earlier trim that found packets.
            Ok(_) | Err(_) => Unlist::Check,
        }
    }
}

/// The per-CPU lists.
#[derive(Debug)]
pub(crate) struct ClientLists {
    heads: Box<[CachePadded<AtomicU32>]>,
}

impl ClientLists {
    pub(crate) fn new(lists: usize) -> Self {
        ClientLists {
            heads: (0..lists.max(1))
                .map(|_| CachePadded::new(AtomicU32::new(END)))
                .collect(),
        }
    }

    /// Number of lists.
    pub(crate) fn len(&self) -> usize {
        self.heads.len()
    }

    /// Appends `client` to list `list % len`. `next` is the client's link, owned by
    /// the list while the client is on it.
    pub(crate) fn push(&self, list: usize, client: u32, next: &AtomicU32) {
        let head = &self.heads[list % self.heads.len()];
        let node = client + 1;
        let mut cur = head.load(Ordering::Relaxed);
        loop {
            next.store(cur, Ordering::Relaxed);
            match head.compare_exchange_weak(cur, node, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Takes every entry of `list`: returns the newest entry's link value (client
    /// index + 1, or [`END`]); follow the clients' `next` links for the rest.
    pub(crate) fn take(&self, list: usize) -> u32 {
        let head = &self.heads[list];
        if head.load(Ordering::Relaxed) == END {
            return END;
        }
        head.swap(END, Ordering::Acquire)
    }

    /// Whether any list has entries.
    pub(crate) fn any_pending(&self) -> bool {
        self.heads.iter().any(|h| h.load(Ordering::Relaxed) != END)
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::mailbox::with_geometry;
    use crate::sync::{fence, Arc};
    use loom::thread;

    /// The trim handshake: an active client pushes while the arbiter trims it. Either
    /// the arbiter's last check sees the packet (the client stays active) or the
    /// client appends itself again: the packet is never left in a mailbox nobody
    /// will scan.
    #[test]
    fn trimmed_client_is_not_forgotten() {
        loom::model(|| {
            let lists = Arc::new(ClientLists::new(1));
            let listing = Arc::new(Listing::new());
            let next = Arc::new(AtomicU32::new(END));
            listing.activate();
            let (mut tx, rx) = with_geometry::<u32>(2, 1);
            let client = {
                let (lists, listing, next) =
                    (Arc::clone(&lists), Arc::clone(&listing), Arc::clone(&next));
                thread::spawn(move || {
                    tx.push(1).unwrap();
                    fence(Ordering::SeqCst);
                    if listing.claim() {
                        lists.push(0, 0, &next);
                    }
                })
            };
            let removed = match listing.unlist() {
                Unlist::Pending => true,
                Unlist::Check => {
                    fence(Ordering::SeqCst);
                    rx.is_empty()
                }
            };
            client.join().unwrap();
            if removed {
                assert_eq!(
                    lists.take(0),
                    1,
                    "client trimmed with a packet and not relisted"
                );
            }
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn take_returns_newest_first_chain() {
        let lists = ClientLists::new(2);
        let next: Vec<AtomicU32> = (0..4).map(|_| AtomicU32::new(END)).collect();
        assert_eq!(lists.take(0), END);
        lists.push(0, 2, &next[2]);
        lists.push(2, 0, &next[0]); // wraps to list 0
        lists.push(1, 3, &next[3]);
        assert!(lists.any_pending());
        let mut chain = vec![];
        let mut link = lists.take(0);
        while link != END {
            chain.push(link - 1);
            link = next[(link - 1) as usize].load(Ordering::Relaxed);
        }
        assert_eq!(chain, vec![0, 2]);
        assert_eq!(lists.take(0), END);
        assert_eq!(lists.take(1), 4);
        assert!(!lists.any_pending());
    }
}
