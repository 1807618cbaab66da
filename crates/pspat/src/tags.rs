//! Tags: which client, and which packets, an entry inside the scheduler stands for.
//!
//! While a packet is in the scheduler the arbiter replaces its `buffer` field (opaque
//! to every scheduler) with a tag, an index into this slab that remembers the
//! client and the original buffer. When the scheduler lets the packet go, or drops
//! it, the tag names the client whose mailbox slot to release and whose counters to
//! charge (Fig. 5, line 20: `i = pkt->client_id`), and the buffer is restored.
//!
//! # Aggregates (PSPAT section 6.3.1)
//! With decision aggregation one scheduler entry stands for a run of packets of
//! one flow from one client: the entry is its first packet with the run's total
//! length, and its tag heads a chain of member tags, one per packet, each holding
//! the member's whole descriptor. Releasing or dropping the entry walks the chain.
//! Without aggregation the slab keeps no descriptors and every chain has one tag.
//!
//! Capacity: a packet in the scheduler holds an unreleased slot of its client's
//! mailbox, so at most `clients * mailbox capacity` tags are live; the slab has that
//! many entries and an insert cannot fail. Insert and remove are O(1) (free list).

use eiffel_sched::Packet;

/// One entry: live (client, saved buffer, next member) or free (link to the next
/// free entry in `buffer`).
#[derive(Clone, Copy, Debug)]
struct Entry {
    client: u32,
    /// Saved buffer when live; next free entry when free.
    buffer: u32,
    /// Next member of the same aggregate, or `NIL`.
    next: u32,
}

/// No tag.
pub(crate) const NIL: u32 = u32::MAX;

/// What removing a tag gives back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) client: u32,
    /// The packet's own buffer.
    pub(crate) buffer: u32,
    /// The next member's tag, or [`NIL`].
    pub(crate) next: u32,
}

#[derive(Debug)]
pub(crate) struct Tags {
    entries: Vec<Entry>,
    /// Members' descriptors, by tag; empty without aggregation.
    packets: Vec<Packet>,
    free: u32,
    live: usize,
    /// Chains (scheduler entries) alive.
    heads: usize,
}

impl Tags {
    /// A slab of `capacity` tags (`capacity < u32::MAX`); `aggregate` keeps each
    /// member's descriptor.
    pub(crate) fn new(capacity: usize, aggregate: bool) -> Self {
        assert!(capacity < NIL as usize, "tag capacity {capacity}");
        let entries = (0..capacity)
            .map(|i| Entry {
                client: NIL,
                buffer: if i + 1 == capacity { NIL } else { i as u32 + 1 },
                next: NIL,
            })
            .collect();
        Tags {
            entries,
            packets: if aggregate {
                vec![Packet::new(0, 0); capacity]
            } else {
                Vec::new()
            },
            free: if capacity == 0 { NIL } else { 0 },
            live: 0,
            heads: 0,
        }
    }

    #[inline]
    fn take(&mut self) -> u32 {
        let tag = self.free;
        assert!(
            tag != NIL,
            "tag slab exhausted with {} live tags",
            self.live
        );
        self.free = self.entries[tag as usize].buffer;
        self.live += 1;
        tag
    }

    /// Records `(client, buffer)` as a chain of one and returns its tag.
    #[inline]
    pub(crate) fn insert(&mut self, client: u32, buffer: u32) -> u32 {
        let tag = self.take();
        self.entries[tag as usize] = Entry {
            client,
            buffer,
            next: NIL,
        };
        self.heads += 1;
        tag
    }

    /// Records `pkt` of `client` as a member, keeping its descriptor; `tail` is
    /// the chain's last member, or `NIL` to start a chain. Needs aggregation.
    #[inline]
    pub(crate) fn insert_member(&mut self, client: u32, pkt: &Packet, tail: u32) -> u32 {
        let tag = self.take();
        self.entries[tag as usize] = Entry {
            client,
            buffer: pkt.buffer,
            next: NIL,
        };
        self.packets[tag as usize] = *pkt;
        if tail == NIL {
            self.heads += 1;
        } else {
            debug_assert_eq!(
                self.entries[tail as usize].next, NIL,
                "tail {tail} has a next"
            );
            self.entries[tail as usize].next = tag;
        }
        tag
    }

    /// The descriptor kept for member `tag` (with aggregation).
    #[inline]
    pub(crate) fn packet(&self, tag: u32) -> Packet {
        self.packets[tag as usize]
    }

    /// Whether members' descriptors are kept.
    pub(crate) fn aggregates(&self) -> bool {
        !self.packets.is_empty()
    }

    /// Forgets `tag`; `head` if it starts its chain.
    #[inline]
    pub(crate) fn remove(&mut self, tag: u32, head: bool) -> Member {
        let e = &mut self.entries[tag as usize];
        debug_assert!(e.client != NIL, "tag {tag} is not live");
        let out = Member {
            client: e.client,
            buffer: e.buffer,
            next: e.next,
        };
        *e = Entry {
            client: NIL,
            buffer: self.free,
            next: NIL,
        };
        self.free = tag;
        self.live -= 1;
        if head {
            self.heads -= 1;
        }
        out
    }

    /// Tags in use: packets inside the scheduler.
    pub(crate) fn live(&self) -> usize {
        self.live
    }

    /// Chains in use: entries inside the scheduler.
    pub(crate) fn heads(&self) -> usize {
        self.heads
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_round_trip_and_reuse() {
        let mut t = Tags::new(2, false);
        let a = t.insert(7, 100);
        let b = t.insert(8, 200);
        assert_ne!(a, b);
        assert_eq!((t.live(), t.heads()), (2, 2));
        assert_eq!(
            t.remove(a, true),
            Member {
                client: 7,
                buffer: 100,
                next: NIL
            }
        );
        let c = t.insert(9, 300);
        assert_eq!(c, a);
        assert_eq!(t.remove(b, true).buffer, 200);
        assert_eq!(t.remove(c, true).client, 9);
        assert_eq!((t.live(), t.heads()), (0, 0));
        assert!(!t.aggregates());
    }

    #[test]
    fn chains_keep_members_in_order() {
        let mut t = Tags::new(4, true);
        let p = |b: u32| Packet::new(3, 60 + b).buffer(b);
        let head = t.insert_member(1, &p(10), NIL);
        let second = t.insert_member(1, &p(11), head);
        let third = t.insert_member(1, &p(12), second);
        assert_eq!((t.live(), t.heads()), (3, 1));
        let mut tag = head;
        let mut seen = vec![];
        let mut first = true;
        while tag != NIL {
            let pkt = t.packet(tag);
            let m = t.remove(tag, first);
            first = false;
            assert_eq!((m.client, m.buffer), (1, pkt.buffer));
            seen.push((pkt.buffer, pkt.len));
            tag = m.next;
        }
        assert_eq!(seen, [(10, 70), (11, 71), (12, 72)]);
        assert_eq!((t.live(), t.heads()), (0, 0));
        let _ = third;
    }

    #[test]
    #[should_panic(expected = "exhausted")]
    fn overfull_slab_is_a_bug() {
        let mut t = Tags::new(1, false);
        t.insert(0, 0);
        t.insert(0, 0);
    }
}
