//! Preallocated packet storage with intrusive per-flow FIFOs.
//!
//! Strict priority and the policy tree store their queued descriptors in one
//! [`PacketPool`] sized at construction (the per-flow fair-queueing schedulers
//! use [`crate::chunks`], whose FIFOs need no link per packet). A [`Fifo`] is just a head index, a tail index and two counters; the
//! links live in the pool's slots, so any number of flows share one allocation and
//! moving a packet costs two index writes. Nothing here allocates after
//! [`PacketPool::with_capacity`].
//!
//! Free slots are a stack of indices beside the slots, not a list threaded
//! through them: taking a free slot reads the stack at its top, an address known
//! without waiting for any load, where a threaded list makes each enqueue wait for
//! the previous one's load of the next free slot (one dependent chain through
//! every enqueue of a burst). Releasing a slot writes the stack, not the slot.
//!
//! Invariants (checked by [`PacketPool::check_invariants`] in tests):
//! - a slot is either on the free stack or on exactly one FIFO;
//! - the slots in use are the capacity minus the free ones;
//! - a FIFO's `packets`/`bytes` equal the count and summed `len` of its slots.

use crate::packet::Packet;

const NIL: u32 = u32::MAX;

/// No slot: the end of a chain, an empty chain's head and tail.
pub const NO_SLOT: u32 = NIL;

/// What [`PacketPool::chain`] counts of a chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainCounts {
    /// Packets on it.
    pub packets: u32,
    /// Their bytes.
    pub bytes: u64,
    /// Its last slot ([`NO_SLOT`] when empty).
    pub last: u32,
    /// Its first packet's length (0 when empty).
    pub head_len: u32,
}

/// The most packets a [`PacketPool`] holds: every slot index is a `u32` and
/// `u32::MAX` marks the end of a list.
pub const MAX_POOL_CAPACITY: usize = NIL as usize - 1;

/// A packet and its FIFO link, one cache line.
// NB: aligned to the line. A `Vec` of 8-byte-aligned 64-byte slots starts
// where the allocator puts it (16 bytes into a page for a large one), so
// every slot straddled two lines: a dequeue's read of the departing packet
// and an enqueue's write of its predecessor's link each touched both, and a
// prefetch of the slot's address fetched only the first.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
struct Slot {
    pkt: Packet,
    /// Next slot on the same FIFO; `NIL` at its tail (and in free slots).
    next: u32,
    /// Length of the packet in `next` while on a FIFO: lets a dequeue learn the
    /// new head's length without touching the new head's slot.
    next_len: u32,
}

/// A FIFO of packets whose storage lives in a [`PacketPool`].
///
/// A `Fifo` must only ever be used with the pool that filled it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fifo {
    head: u32,
    tail: u32,
    packets: u32,
    /// Length of the head packet (0 when empty): what a parent discipline
    /// reads of a FIFO's next packet, kept here so that it does not touch the
    /// packet's slot (in the padding before `bytes`).
    head_len: u32,
    bytes: u64,
}

impl Default for Fifo {
    fn default() -> Self {
        Fifo::new()
    }
}

impl Fifo {
    /// An empty FIFO.
    #[must_use]
    pub const fn new() -> Self {
        Fifo {
            head: NIL,
            tail: NIL,
            packets: 0,
            head_len: 0,
            bytes: 0,
        }
    }

    /// Length of the head packet, read without touching the pool (0 when
    /// empty).
    #[must_use]
    #[inline]
    pub const fn front_len(&self) -> u32 {
        self.head_len
    }

    /// Whether the FIFO holds no packet.
    #[must_use]
    #[inline]
    pub const fn is_empty(&self) -> bool {
        self.packets == 0
    }

    /// Packets queued.
    #[must_use]
    #[inline]
    pub const fn len(&self) -> u32 {
        self.packets
    }

    /// Bytes queued.
    #[must_use]
    #[inline]
    pub const fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Fixed-capacity storage for queued packet descriptors.
#[derive(Clone, Debug)]
pub struct PacketPool {
    slots: Vec<Slot>,
    /// The free slots' indices: `free[..top]`, the next one taken at `top - 1`.
    free: Box<[u32]>,
    /// Free slots.
    top: u32,
}

impl PacketPool {
    /// Bytes a pool of `capacity` packets allocates.
    #[must_use]
    pub const fn bytes_for(capacity: u64) -> u64 {
        capacity.saturating_mul(core::mem::size_of::<Slot>() as u64 + 4)
    }

    /// A pool holding at most `capacity` packets (at most [`MAX_POOL_CAPACITY`]).
    ///
    /// # Panics
    /// If `capacity` exceeds [`MAX_POOL_CAPACITY`] (callers taking a capacity from
    /// input check it first: [`TreeSpec::validate`](crate::tree::TreeSpec::validate)
    /// refuses a tree whose capacity does not fit).
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        assert!(
            capacity <= MAX_POOL_CAPACITY,
            "packet pool capacity {capacity} exceeds the 32-bit index space"
        );
        let slots = vec![
            Slot {
                pkt: Packet::default(),
                next: NIL,
                next_len: 0,
            };
            capacity
        ];
        // Slot 0 on top, so that a burst fills the slots in address order.
        let free = (0..capacity as u32).rev().collect();
        PacketPool {
            slots,
            free,
            top: capacity as u32,
        }
    }

    /// Most packets the pool can hold.
    #[must_use]
    #[inline]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Packets currently stored.
    #[must_use]
    #[inline]
    pub fn len(&self) -> usize {
        self.slots.len() - self.top as usize
    }

    /// Whether no packet is stored.
    #[must_use]
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.top as usize == self.slots.len()
    }

    /// Whether the pool is full.
    #[must_use]
    #[inline]
    pub fn is_full(&self) -> bool {
        self.top == 0
    }

    /// Puts slot `idx`, just emptied, back on the free stack.
    #[inline(always)]
    fn release(&mut self, idx: u32) {
        // The stack has room for every slot and `idx` was not on it, so the
        // lookup finds a place; it only keeps the packet path free of a panic.
        debug_assert!((self.top as usize) < self.free.len(), "free stack overflow");
        if let Some(top) = self.free.get_mut(self.top as usize) {
            *top = idx;
            self.top += 1;
        }
    }

    /// Appends `pkt` to `fifo`; hands it back if the pool is full.
    #[inline]
    pub fn push_back(&mut self, fifo: &mut Fifo, pkt: Packet) -> Result<(), Packet> {
        let idx = self.append(fifo.tail, pkt)?;
        if fifo.tail == NIL {
            fifo.head = idx;
            fifo.head_len = pkt.len;
        }
        fifo.tail = idx;
        fifo.packets += 1;
        fifo.bytes += u64::from(pkt.len);
        Ok(())
    }

    /// Removes and returns the head of `fifo`.
    #[inline]
    pub fn pop_front(&mut self, fifo: &mut Fifo) -> Option<Packet> {
        let idx = fifo.head;
        let slot = self.slots.get(idx as usize)?;
        let (pkt, next, next_len) = (slot.pkt, slot.next, slot.next_len);
        self.release(idx);
        fifo.head = next;
        fifo.head_len = next_len;
        if next == NIL {
            fifo.tail = NIL;
            fifo.head_len = 0;
        }
        fifo.packets -= 1;
        fifo.bytes -= u64::from(pkt.len);
        Some(pkt)
    }

    /// [`PacketPool::pop_front`], hinting the CPU to fetch the slot of the
    /// new head at once: a FIFO that sends again soon (a strict-priority
    /// class with more queued) then finds its next packet on its way, where a
    /// hint after the caller's work would leave it a miss.
    #[inline]
    pub fn pop_front_ahead(&mut self, fifo: &mut Fifo) -> Option<Packet> {
        let pkt = self.pop_front(fifo)?;
        if let Some(next) = self.slots.get(fifo.head as usize) {
            eiffel_queue::prefetch(next);
        }
        Some(pkt)
    }

    /// Stores `pkt` behind slot `tail` of a chain kept by the caller
    /// ([`NO_SLOT`]: a new chain) and returns its slot; hands it back if the
    /// pool is full. For an owner that keeps a chain's ends apart (its tail
    /// where packets arrive, its head where they leave) instead of a [`Fifo`].
    #[inline]
    pub fn append(&mut self, tail: u32, pkt: Packet) -> Result<u32, Packet> {
        let Some(&idx) = self.free.get(self.top.wrapping_sub(1) as usize) else {
            return Err(pkt);
        };
        // A free index is always a slot's; the failed lookup only keeps the
        // packet path free of a panic.
        let Some(slot) = self.slots.get_mut(idx as usize) else {
            return Err(pkt);
        };
        self.top -= 1;
        slot.pkt = pkt;
        slot.next = NIL;
        // One comparison tells a new chain (`tail == NIL`) from a tail slot.
        if let Some(t) = self.slots.get_mut(tail as usize) {
            t.next = idx;
            t.next_len = pkt.len;
        }
        Ok(idx)
    }

    /// Frees slot `head`, the first of a chain [`PacketPool::append`] built:
    /// its packet, and the next slot of the chain with its packet's length
    /// ([`NO_SLOT`] and 0 at the chain's end).
    #[inline]
    pub fn unlink(&mut self, head: u32) -> Option<(Packet, u32, u32)> {
        let mut pkt = Packet::default();
        let (next, next_len) = self.unlink_into(head, &mut pkt)?;
        Some((pkt, next, next_len))
    }

    /// [`PacketPool::unlink`] writing the packet to `out` (a burst's slot,
    /// without a copy in between): returns the next slot and its packet's
    /// length, or `None` (`out` untouched) for a slot out of range.
    #[inline(always)]
    pub fn unlink_into(&mut self, head: u32, out: &mut Packet) -> Option<(u32, u32)> {
        let slot = self.slots.get(head as usize)?;
        *out = slot.pkt;
        let (next, next_len) = (slot.next, slot.next_len);
        self.release(head);
        Some((next, if next == NIL { 0 } else { next_len }))
    }

    /// Hints the CPU to fetch the slot two after `slot` on its chain (the
    /// slot after `slot` is read: it should be in the cache).
    #[inline]
    pub fn prefetch_third(&self, slot: u32) {
        if let Some(s) = self.slots.get(slot as usize) {
            self.prefetch_after(s.next);
        }
    }

    /// Hints the CPU to fetch the slot after `slot` on its chain.
    #[inline]
    pub fn prefetch_after(&self, slot: u32) {
        let Some(s) = self.slots.get(slot as usize) else {
            return;
        };
        if let Some(next) = self.slots.get(s.next as usize) {
            eiffel_queue::prefetch(next);
        }
    }

    /// The chain from slot `head`: its packets, bytes, last slot and first
    /// packet's length (for checks and views: it walks the chain).
    #[must_use]
    pub fn chain(&self, head: u32) -> ChainCounts {
        let mut c = ChainCounts {
            packets: 0,
            bytes: 0,
            last: NIL,
            head_len: self.slots.get(head as usize).map_or(0, |s| s.pkt.len),
        };
        let mut idx = head;
        while let Some(s) = self.slots.get(idx as usize) {
            c.packets += 1;
            c.bytes += u64::from(s.pkt.len);
            c.last = idx;
            idx = s.next;
        }
        c
    }

    /// Checks the chains from `heads` and the free stack: every slot on one
    /// of them exactly once.
    ///
    /// # Panics
    /// On the first slot that is on two lists or on none.
    pub fn check_chains(&self, heads: impl IntoIterator<Item = u32>) {
        let mut seen = vec![false; self.slots.len()];
        let mut used = 0usize;
        for head in heads {
            let mut idx = head;
            while idx != NIL {
                assert!(!seen[idx as usize], "slot {idx} is on two lists");
                seen[idx as usize] = true;
                used += 1;
                idx = self.slots[idx as usize].next;
            }
        }
        assert_eq!(used, self.len(), "pool length vs slots on chains");
        for &idx in &self.free[..self.top as usize] {
            assert!(!seen[idx as usize], "slot {idx} is both free and queued");
        }
    }

    /// Removes and returns the head of `fifo` with the length of the new head
    /// (`None` if `fifo` is now empty), read from the removed slot: one slot
    /// touched instead of two, which per-flow schedulers use to report the next
    /// head to their core.
    #[inline]
    pub fn pop_front_next(&mut self, fifo: &mut Fifo) -> Option<(Packet, Option<u32>)> {
        let idx = fifo.head;
        let slot = self.slots.get(idx as usize)?;
        let (pkt, next, next_len) = (slot.pkt, slot.next, slot.next_len);
        self.release(idx);
        fifo.head = next;
        fifo.head_len = next_len;
        fifo.packets -= 1;
        fifo.bytes -= u64::from(pkt.len);
        if next == NIL {
            fifo.tail = NIL;
            fifo.head_len = 0;
            return Some((pkt, None));
        }
        Some((pkt, Some(next_len)))
    }

    /// The head of `fifo`, without removing it.
    #[must_use]
    #[inline]
    pub fn front(&self, fifo: &Fifo) -> Option<&Packet> {
        (fifo.head != NIL).then(|| &self.slots[fifo.head as usize].pkt)
    }

    /// The slot of the head of `fifo`: a reference to the packet that does not
    /// borrow the pool (read it with [`PacketPool::at`]).
    #[must_use]
    #[inline]
    pub fn front_slot(&self, fifo: &Fifo) -> Option<u32> {
        (fifo.head != NIL).then_some(fifo.head)
    }

    /// Hints the CPU to fetch slot `slot` (as [`PacketPool::front_slot`] or
    /// [`PacketPool::append`] named it; any other index is ignored).
    #[inline]
    pub fn prefetch_slot(&self, slot: u32) {
        if let Some(slot) = self.slots.get(slot as usize) {
            eiffel_queue::prefetch(slot);
        }
    }

    /// The packet in slot `slot`, as [`PacketPool::front_slot`] named it.
    ///
    /// # Panics
    /// If `slot` is not a slot of this pool.
    #[must_use]
    #[inline]
    pub fn at(&self, slot: u32) -> &Packet {
        &self.slots[slot as usize].pkt
    }

    /// Hints the CPU to fetch the head slot of `fifo`, which the next
    /// [`PacketPool::pop_front`] on it reads.
    #[inline]
    pub fn prefetch_head(&self, fifo: &Fifo) {
        if let Some(slot) = self.slots.get(fifo.head as usize) {
            eiffel_queue::prefetch(slot);
        }
    }

    /// Hints the CPU to fetch the tail slot of `fifo`, which the next
    /// [`PacketPool::push_back`] on it links from.
    #[inline]
    pub fn prefetch_tail(&self, fifo: &Fifo) {
        if let Some(slot) = self.slots.get(fifo.tail as usize) {
            eiffel_queue::prefetch(slot);
        }
    }

    /// The head of `fifo`, mutably (to update rank annotations in place; its
    /// `len` must stay, as the FIFO keeps a copy of it).
    #[inline]
    pub fn front_mut(&mut self, fifo: &Fifo) -> Option<&mut Packet> {
        (fifo.head != NIL).then(|| &mut self.slots[fifo.head as usize].pkt)
    }

    /// The packets of `fifo` from head to tail.
    pub fn iter<'a>(&'a self, fifo: &Fifo) -> impl Iterator<Item = &'a Packet> + 'a {
        let mut idx = fifo.head;
        core::iter::from_fn(move || {
            (idx != NIL).then(|| {
                let slot = &self.slots[idx as usize];
                idx = slot.next;
                &slot.pkt
            })
        })
    }

    /// Checks the invariants listed in the module documentation against the given
    /// FIFOs, which must be every FIFO using this pool.
    ///
    /// # Panics
    /// On any violated invariant, with a message naming it.
    pub fn check_invariants<'a>(&self, fifos: impl IntoIterator<Item = &'a Fifo>) {
        let mut seen = vec![false; self.slots.len()];
        let mut used = 0usize;
        for fifo in fifos {
            let (mut n, mut bytes, mut last) = (0u32, 0u64, NIL);
            let mut idx = fifo.head;
            while idx != NIL {
                assert!(!seen[idx as usize], "slot {idx} is on two lists");
                seen[idx as usize] = true;
                n += 1;
                bytes += u64::from(self.slots[idx as usize].pkt.len);
                last = idx;
                idx = self.slots[idx as usize].next;
            }
            assert_eq!(fifo.tail, last, "fifo tail does not end its list");
            let first = (fifo.head != NIL).then(|| self.slots[fifo.head as usize].pkt.len);
            assert_eq!(fifo.head_len, first.unwrap_or(0), "fifo head length");
            assert_eq!(fifo.packets, n, "fifo packet count");
            assert_eq!(fifo.bytes, bytes, "fifo byte count");
            used += n as usize;
        }
        assert_eq!(used, self.len(), "pool length vs slots on fifos");
        for &idx in &self.free[..self.top as usize] {
            assert!(
                (idx as usize) < self.slots.len(),
                "free index {idx} out of range"
            );
            assert!(!seen[idx as usize], "slot {idx} is both free and queued");
            seen[idx as usize] = true;
        }
        assert_eq!(
            used + self.top as usize,
            self.slots.len(),
            "slots lost from every list"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slot_is_one_cache_line() {
        assert_eq!(core::mem::size_of::<Slot>(), 64);
        let pool = PacketPool::with_capacity(1 << 16);
        assert_eq!(pool.slots.as_ptr() as usize % 64, 0);
    }

    #[test]
    fn fifos_share_one_pool_and_keep_order() {
        let mut pool = PacketPool::with_capacity(4);
        let (mut a, mut b) = (Fifo::new(), Fifo::new());
        pool.push_back(&mut a, Packet::new(0, 100)).unwrap();
        pool.push_back(&mut b, Packet::new(1, 200)).unwrap();
        pool.push_back(&mut a, Packet::new(0, 300)).unwrap();
        pool.push_back(&mut b, Packet::new(1, 400)).unwrap();
        assert!(pool.is_full());
        assert_eq!(
            pool.push_back(&mut a, Packet::new(0, 1)),
            Err(Packet::new(0, 1))
        );
        pool.check_invariants([&a, &b]);
        assert_eq!((a.len(), a.bytes()), (2, 400));
        assert_eq!(pool.iter(&a).map(|p| p.len).collect::<Vec<_>>(), [100, 300]);
        assert_eq!(
            pool.pop_front_next(&mut a),
            Some((Packet::new(0, 100), Some(300)))
        );
        assert_eq!(pool.front(&a).unwrap().len, 300);
        assert_eq!(pool.pop_front(&mut a).unwrap().len, 300);
        assert!(a.is_empty() && pool.pop_front(&mut a).is_none());
        pool.check_invariants([&a, &b]);
        assert_eq!(pool.len(), 2);
    }

    #[test]
    fn popping_reports_the_next_head_length() {
        let mut pool = PacketPool::with_capacity(3);
        let mut f = Fifo::new();
        for len in [10, 20, 30] {
            pool.push_back(&mut f, Packet::new(0, len)).unwrap();
        }
        assert_eq!(
            pool.pop_front_next(&mut f).map(|(p, n)| (p.len, n)),
            Some((10, Some(20)))
        );
        pool.push_back(&mut f, Packet::new(0, 40)).unwrap();
        assert_eq!(
            pool.pop_front_next(&mut f).map(|(p, n)| (p.len, n)),
            Some((20, Some(30)))
        );
        assert_eq!(
            pool.pop_front_next(&mut f).map(|(p, n)| (p.len, n)),
            Some((30, Some(40)))
        );
        assert_eq!(
            pool.pop_front_next(&mut f).map(|(p, n)| (p.len, n)),
            Some((40, None))
        );
        assert_eq!(pool.pop_front_next(&mut f), None);
        pool.check_invariants([&f]);
    }

    #[test]
    fn zero_capacity_pool_refuses_everything() {
        let mut pool = PacketPool::with_capacity(0);
        let mut f = Fifo::new();
        assert!(pool.push_back(&mut f, Packet::new(0, 1)).is_err());
        pool.check_invariants([&f]);
    }

    #[test]
    fn chains_kept_by_their_ends_share_the_pool_in_order() {
        let mut pool = PacketPool::with_capacity(3);
        let a0 = pool.append(NO_SLOT, Packet::new(0, 10)).unwrap();
        let b0 = pool.append(NO_SLOT, Packet::new(1, 20)).unwrap();
        let a1 = pool.append(a0, Packet::new(2, 30)).unwrap();
        assert!(pool.append(a1, Packet::new(3, 40)).is_err(), "full");
        let a = pool.chain(a0);
        assert_eq!((a.packets, a.bytes, a.last, a.head_len), (2, 40, a1, 10));
        pool.check_chains([a0, b0]);
        let (pkt, next, next_len) = pool.unlink(a0).unwrap();
        assert_eq!((pkt.flow, next, next_len), (0, a1, 30));
        let (pkt, next, next_len) = pool.unlink(a1).unwrap();
        assert_eq!((pkt.flow, next, next_len), (2, NO_SLOT, 0));
        pool.check_chains([NO_SLOT, b0]);
        assert_eq!(pool.chain(NO_SLOT).packets, 0);
        assert_eq!(pool.len(), 1);
    }
}
