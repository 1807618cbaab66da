//! Tags: which client a packet inside the scheduler came from.
//!
//! While a packet is in the scheduler the arbiter replaces its `buffer` field (opaque
//! to every scheduler) with a tag, an index into this slab that remembers the
//! client and the original buffer. When the scheduler lets the packet go, or drops
//! it, the tag names the client whose mailbox slot to release and whose counters to
//! charge (Fig. 5, line 20: `i = pkt->client_id`), and the buffer is restored.
//!
//! Capacity: a packet in the scheduler holds an unreleased slot of its client's
//! mailbox, so at most `clients * mailbox capacity` tags are live; the slab has that
//! many entries and an insert cannot fail. Insert and remove are O(1) (free list).

/// One entry: live (client and saved buffer) or free (link to the next free entry).
#[derive(Clone, Copy, Debug)]
struct Entry {
    client: u32,
    /// Saved buffer when live; next free entry when free.
    buffer: u32,
}

const NIL: u32 = u32::MAX;

#[derive(Debug)]
pub(crate) struct Tags {
    entries: Vec<Entry>,
    free: u32,
    live: usize,
}

impl Tags {
    /// A slab of `capacity` tags; `capacity < u32::MAX`.
    pub(crate) fn new(capacity: usize) -> Self {
        assert!(capacity < NIL as usize, "tag capacity {capacity}");
        let entries = (0..capacity)
            .map(|i| Entry {
                client: NIL,
                buffer: if i + 1 == capacity { NIL } else { i as u32 + 1 },
            })
            .collect();
        Tags {
            entries,
            free: if capacity == 0 { NIL } else { 0 },
            live: 0,
        }
    }

    /// Records `(client, buffer)` and returns its tag.
    #[inline]
    pub(crate) fn insert(&mut self, client: u32, buffer: u32) -> u32 {
        let tag = self.free;
        assert!(
            tag != NIL,
            "tag slab exhausted with {} live tags",
            self.live
        );
        let e = &mut self.entries[tag as usize];
        self.free = e.buffer;
        *e = Entry { client, buffer };
        self.live += 1;
        tag
    }

    /// Forgets `tag`, returning `(client, buffer)`.
    #[inline]
    pub(crate) fn remove(&mut self, tag: u32) -> (u32, u32) {
        let e = &mut self.entries[tag as usize];
        debug_assert!(e.client != NIL, "tag {tag} is not live");
        let out = (e.client, e.buffer);
        *e = Entry {
            client: NIL,
            buffer: self.free,
        };
        self.free = tag;
        self.live -= 1;
        out
    }

    /// Tags in use.
    pub(crate) fn live(&self) -> usize {
        self.live
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn insert_remove_round_trip_and_reuse() {
        let mut t = Tags::new(2);
        let a = t.insert(7, 100);
        let b = t.insert(8, 200);
        assert_ne!(a, b);
        assert_eq!(t.live(), 2);
        assert_eq!(t.remove(a), (7, 100));
        let c = t.insert(9, 300);
        assert_eq!(c, a);
        assert_eq!(t.remove(b), (8, 200));
        assert_eq!(t.remove(c), (9, 300));
        assert_eq!(t.live(), 0);
    }

    #[test]
    #[should_panic(expected = "exhausted")]
    fn overfull_slab_is_a_bug() {
        let mut t = Tags::new(1);
        t.insert(0, 0);
        t.insert(0, 0);
    }
}
