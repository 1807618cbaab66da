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
