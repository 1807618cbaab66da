//! Per-flow packet storage in chunks, laid out slot by slot.
//!
//! [`PerFlow`](crate::PerFlow) keeps each flow's packets in a FIFO of *chunks*
//! of [`CHUNK`] slots from one [`ChunkPool`], instead of a list of single slots
//! linked one by one (as [`PacketPool`](crate::PacketPool) does for the policy
//! tree). A packet's successor in its flow is the next slot of its chunk, so
//! appending a packet writes its own slot only, where a linked list also writes
//! the link into the flow's previous packet (a slot written a whole round of
//! flows earlier, out of the cache once flows are many), and the free list is
//! used once per chunk, not once per packet. A flow's next head length, which
//! the scheduling core needs when a packet leaves, is read from the next slot.
//!
//! # Layout
//!
//! Slot `j` of chunk `c` lives at index `j * chunks + c`: the pool is [`CHUNK`]
//! *planes*, plane `j` holding slot `j` of every chunk. Flows that are served in
//! turn (round robin, or fair queueing over equal flows) fill and empty slot `j`
//! of their chunks one after the other; chunks taken one after the other from
//! the free stack have neighbouring indices, so those packets are neighbours
//! in memory and the pool is walked as a few sequential streams. With each
//! chunk's slots side by side instead, the round would write one slot per
//! chunk, a line every `CHUNK` lines and a page every few packets: measured at
//! 32,768 flows, that layout cost several times the linked list's time.
//!
//! # Capacity
//!
//! A FIFO of `n` packets spans at most `(n + CHUNK - 2) / CHUNK + 1` chunks
//! (its head may be anywhere in its first chunk, its tail anywhere in its
//! last), so `capacity` packets in at most `fifos` non-empty FIFOs fit in
//! `ceil(capacity / CHUNK) + 2 * min(fifos, capacity)` chunks, which
//! [`ChunkPool::new`] allocates: a push fails only when `capacity` packets are
//! stored. Nothing allocates after construction.
//!
//! Invariants (checked by [`ChunkPool::check_invariants`] in tests): every chunk
//! is either free or in exactly one FIFO; the pool's length is the sum of the
//! FIFOs' packets, and each FIFO's counts match its slots.

use crate::packet::Packet;

/// Slots per chunk.
pub const CHUNK: u32 = 8;

/// The end of a chain of chunks; an empty FIFO's positions.
const NIL: u32 = u32::MAX;

/// One packet descriptor, alone in its cache line.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Slot {
    pkt: Packet,
}

/// A FIFO of packets whose storage lives in a [`ChunkPool`]: the slot indices
/// of its head and tail packets and its packet count (12 bytes; its bytes are
/// counted on demand by [`ChunkPool::bytes`], off the packet path).
///
/// A `ChunkFifo` must only ever be used with the pool that filled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkFifo {
    head: u32,
    tail: u32,
    packets: u32,
}

impl Default for ChunkFifo {
    fn default() -> Self {
        ChunkFifo::new()
    }
}

impl ChunkFifo {
    /// An empty FIFO.
    #[must_use]
    pub const fn new() -> Self {
        ChunkFifo {
            head: NIL,
            tail: NIL,
            packets: 0,
        }
    }

    /// Packets queued.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> u32 {
        self.packets
    }

    /// Whether the FIFO holds no packet.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.packets == 0
    }
}

/// Fixed-capacity chunked storage for the packets of many FIFOs; see the
/// [module docs](self).
#[derive(Clone, Debug)]
pub struct ChunkPool {
    /// `CHUNK` planes of `chunks` slots.
    slots: Box<[Slot]>,
    /// Per chunk, the next chunk of its FIFO (meaningful while it is linked).
    links: Box<[u32]>,
    /// Free chunks: `free[..top]`, the next one taken at `top - 1`.
    free: Box<[u32]>,
    top: usize,
    /// Chunks (slots per plane).
    chunks: usize,
    /// Index of the last plane's first slot: `(CHUNK - 1) * chunks`.
    last: u32,
    /// Most packets stored at once.
    capacity: usize,
    /// Packets stored.
    len: usize,
}

impl ChunkPool {
    /// The chunks `capacity` packets in at most `fifos` non-empty FIFOs need.
    #[must_use]
    pub const fn chunks_for(capacity: usize, fifos: usize) -> usize {
        let fifos = if fifos < capacity { fifos } else { capacity };
        capacity.div_ceil(CHUNK as usize) + 2 * fifos
    }

    /// Bytes a pool for `capacity` packets in `fifos` FIFOs allocates.
    #[must_use]
    pub const fn bytes_for(capacity: usize, fifos: usize) -> u64 {
        let per_chunk = CHUNK as usize * core::mem::size_of::<Slot>() + 8;
        (Self::chunks_for(capacity, fifos) as u64).saturating_mul(per_chunk as u64)
    }

    /// A pool holding at most `capacity` packets in at most `fifos` non-empty
    /// FIFOs at once.
    ///
    /// # Panics
    /// If the positions of the chunks needed do not fit in 32 bits (more than
    /// about 3.7 x 10^9 packets).
    #[must_use]
    pub fn new(capacity: usize, fifos: usize) -> Self {
        let chunks = Self::chunks_for(capacity, fifos);
        assert!(
            chunks.saturating_mul(CHUNK as usize) < NIL as usize,
            "chunk pool for {capacity} packets exceeds the 32-bit position space"
        );
        let empty = Slot {
            pkt: Packet::default(),
        };
        ChunkPool {
            slots: vec![empty; chunks * CHUNK as usize].into_boxed_slice(),
            links: vec![NIL; chunks].into_boxed_slice(),
            // Chunk 0 on top: the first chunks taken are neighbours.
            free: (0..chunks as u32).rev().collect(),
            top: chunks,
            chunks,
            last: (CHUNK - 1) * chunks as u32,
            capacity,
            len: 0,
        }
    }

    /// Most packets the pool can hold.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Packets currently stored.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no packet is stored.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The chunk of slot `i` (a few subtractions: only when a FIFO empties).
    #[inline]
    fn chunk_of(&self, i: u32) -> u32 {
        let mut c = i;
        while c as usize >= self.chunks {
            c -= self.chunks as u32;
        }
        c
    }

    /// The slot after slot `i` in its FIFO, `tail` being the FIFO's last.
    fn after(&self, i: u32, tail: u32) -> u32 {
        if i == tail {
            NIL
        } else if i < self.last {
            i + self.chunks as u32
        } else {
            self.links[(i - self.last) as usize]
        }
    }

    /// Appends `pkt` to `fifo`; hands it back if the pool is full.
    // NB: always inlined (and `pop_front_next`): out of line, each call
    // copies the descriptor through the stack (callgrind, QFQ at 64 flows: 67
    // more instructions per packet pair).
    #[inline(always)]
    pub fn push_back(&mut self, fifo: &mut ChunkFifo, pkt: Packet) -> Result<(), Packet> {
        if self.len >= self.capacity {
            return Err(pkt);
        }
        let tail = fifo.tail;
        // The next slot of the tail's chunk is one plane further; a tail in
        // the last plane (or none) needs a new chunk, whose slot 0 has the
        // chunk's own index.
        let i = if tail < self.last {
            tail + self.chunks as u32
        } else {
            // A new chunk: the module docs' bound leaves one while fewer
            // than `capacity` packets are stored; the check only keeps the
            // packet path free of a panic.
            let Some(top) = self.top.checked_sub(1) else {
                debug_assert!(false, "chunk pool exhausted below its capacity");
                return Err(pkt);
            };
            let c = self.free[top];
            self.top = top;
            match self.links.get_mut(tail.wrapping_sub(self.last) as usize) {
                Some(link) => *link = c,
                None => fifo.head = c,
            }
            c
        };
        self.slots[i as usize].pkt = pkt;
        fifo.tail = i;
        fifo.packets += 1;
        self.len += 1;
        Ok(())
    }

    /// Puts chunk `c`, just emptied, back on the free stack.
    #[inline(always)]
    fn release(&mut self, c: u32) {
        self.free[self.top] = c;
        self.top += 1;
    }

    /// Removes and returns the head of `fifo` with the length of the new head
    /// (`None` if `fifo` is now empty), which per-flow schedulers report to
    /// their core.
    #[inline(always)]
    pub fn pop_front_next(&mut self, fifo: &mut ChunkFifo) -> Option<(Packet, Option<u32>)> {
        let i = fifo.head;
        let pkt = self.slots.get(i as usize)?.pkt;
        self.len -= 1;
        fifo.packets -= 1;
        if i == fifo.tail {
            self.release(self.chunk_of(i));
            fifo.head = NIL;
            fifo.tail = NIL;
            return Some((pkt, None));
        }
        let next = if i < self.last {
            i + self.chunks as u32
        } else {
            let c = i - self.last;
            self.release(c);
            self.links[c as usize]
        };
        fifo.head = next;
        Some((pkt, Some(self.slots[next as usize].pkt.len)))
    }

    /// Bytes queued in `fifo`: the sum of its packets' lengths, one slot read
    /// per packet.
    #[must_use]
    pub fn bytes(&self, fifo: &ChunkFifo) -> u64 {
        self.iter(fifo).map(|p| u64::from(p.len)).sum()
    }

    /// The packets of `fifo` from head to tail.
    pub fn iter<'a>(&'a self, fifo: &ChunkFifo) -> impl Iterator<Item = &'a Packet> + 'a {
        let (mut i, tail) = (fifo.head, fifo.tail);
        core::iter::from_fn(move || {
            let pkt = &self.slots.get(i as usize)?.pkt;
            i = self.after(i, tail);
            Some(pkt)
        })
    }

    /// Checks the invariants listed in the module documentation against the
    /// given FIFOs, which must be every FIFO using this pool.
    ///
    /// # Panics
    /// On any violated invariant, with a message naming it.
    pub fn check_invariants<'a>(&self, fifos: impl IntoIterator<Item = &'a ChunkFifo>) {
        let mut seen = vec![false; self.chunks];
        let mut mark = |c: u32, what: &str| {
            let c = c as usize;
            assert!(c < seen.len(), "{what}: chunk {c} out of range");
            assert!(!seen[c], "{what}: chunk {c} used twice");
            seen[c] = true;
        };
        for &c in &self.free[..self.top] {
            mark(c, "free stack");
        }
        let mut used = 0usize;
        for fifo in fifos {
            assert_eq!(
                fifo.head == NIL,
                fifo.tail == NIL,
                "fifo {fifo:?}: half empty"
            );
            if fifo.head != NIL {
                let mut c = self.chunk_of(fifo.head);
                mark(c, "fifo");
                while c != self.chunk_of(fifo.tail) {
                    c = self.links[c as usize];
                    mark(c, "fifo");
                }
            }
            let n = self.iter(fifo).count() as u32;
            assert_eq!(fifo.packets, n, "fifo packet count");
            used += n as usize;
        }
        assert_eq!(used, self.len, "pool length vs packets on fifos");
        assert!(self.len <= self.capacity, "pool over capacity");
        assert!(seen.iter().all(|&s| s), "chunks lost from every list");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::VecDeque;

    #[test]
    fn fifos_cross_chunks_and_give_them_back() {
        let mut pool = ChunkPool::new(40, 2);
        let (mut a, mut b) = (ChunkFifo::new(), ChunkFifo::new());
        for i in 0..40 {
            let f = if i % 3 == 0 { &mut b } else { &mut a };
            pool.push_back(f, Packet::new(0, 100 + i)).unwrap();
        }
        assert_eq!(
            pool.push_back(&mut a, Packet::new(0, 1)),
            Err(Packet::new(0, 1))
        );
        pool.check_invariants([&a, &b]);
        let want: Vec<u32> = (0..40).filter(|i| i % 3 != 0).map(|i| 100 + i).collect();
        assert_eq!(pool.iter(&a).map(|p| p.len).collect::<Vec<_>>(), want);
        let mut got = Vec::new();
        while let Some((p, next)) = pool.pop_front_next(&mut a) {
            assert_eq!(next, pool.iter(&a).next().map(|p| p.len));
            got.push(p.len);
            pool.check_invariants([&a, &b]);
        }
        assert_eq!(got, want);
        while pool.pop_front_next(&mut b).is_some() {}
        pool.check_invariants([&a, &b]);
        assert_eq!(pool.top, pool.chunks, "every chunk free again");
        assert!(pool.is_empty());
    }

    #[test]
    fn zero_capacity_pool_refuses_everything() {
        let mut pool = ChunkPool::new(0, 4);
        let mut f = ChunkFifo::new();
        assert!(pool.push_back(&mut f, Packet::new(0, 1)).is_err());
        assert_eq!(pool.pop_front_next(&mut f), None);
        pool.check_invariants([&f]);
    }

    proptest! {
        /// Random pushes and pops on 6 FIFOs of a small pool agree with
        /// `VecDeque`s, and a push is refused only when the pool holds
        /// `capacity` packets, however the FIFOs straddle their chunks.
        #[test]
        fn fifos_behave_like_deques(
            cap in 0usize..40,
            ops in prop::collection::vec((0usize..6, any::<bool>()), 0..400),
        ) {
            let mut pool = ChunkPool::new(cap, 6);
            let mut fifos = [ChunkFifo::new(); 6];
            let mut model: [VecDeque<u32>; 6] = Default::default();
            for (i, (q, push)) in ops.into_iter().enumerate() {
                let stored: usize = model.iter().map(VecDeque::len).sum();
                if push {
                    let pkt = Packet::new(q as u32, i as u32 + 1);
                    let r = pool.push_back(&mut fifos[q], pkt);
                    prop_assert_eq!(r.is_ok(), stored < cap);
                    if r.is_ok() {
                        model[q].push_back(pkt.len);
                    }
                } else {
                    let got = pool.pop_front_next(&mut fifos[q]);
                    let want = model[q].pop_front();
                    prop_assert_eq!(got.map(|(p, _)| p.len), want);
                    if let Some((_, next)) = got {
                        prop_assert_eq!(next, model[q].front().copied());
                    }
                }
                pool.check_invariants(fifos.iter());
                for (f, m) in fifos.iter().zip(&model) {
                    let lens: Vec<u32> = pool.iter(f).map(|p| p.len).collect();
                    prop_assert_eq!(&lens, &m.iter().copied().collect::<Vec<_>>());
                    prop_assert_eq!(pool.bytes(f), m.iter().map(|&l| u64::from(l)).sum::<u64>());
                }
            }
        }
    }
}
