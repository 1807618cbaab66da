//! Simulated packets and the preallocated store that holds them.
//!
//! A packet in flight is a 56-byte [`Pkt`] in a [`PacketStore`] slot; queues,
//! links and the policy trees pass its `u32` slot id around (the tree's
//! descriptor carries it in `Packet::buffer`). Slots are taken from and returned
//! to a free list, so the steady state allocates nothing; the store is sized
//! before a run from the buffers and links it feeds.

use crate::time::Time;

/// [`Pkt::slack`] of a packet without a deadline.
pub const NO_SLACK: u64 = u64::MAX;

/// Flag bits of [`Pkt::flags`].
pub mod flags {
    /// An acknowledgement (otherwise data).
    pub const ACK: u8 = 1;
    /// ECN-capable transport (DCTCP data).
    pub const ECT: u8 = 1 << 1;
    /// Congestion experienced: marked by a port above its threshold.
    pub const CE: u8 = 1 << 2;
    /// ECN echo on an acknowledgement.
    pub const ECE: u8 = 1 << 3;
    /// A retransmission.
    pub const RETX: u8 = 1 << 4;
    /// Dropped by a pFabric port while queued; discarded when the port's policy
    /// reaches it, without using the link.
    pub const DEAD: u8 = 1 << 5;
    /// Its flow's delays are recorded hop by hop.
    pub const OBSERVED: u8 = 1 << 6;
}

/// One packet: header fields the transports and ports read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub struct Pkt {
    /// When the sender sent it (acknowledgements: the data packet's, echoed).
    pub sent: Time,
    /// When it entered the port it is queued at (or last entered).
    pub enqueued: Time,
    /// Bytes the flow had left to send when this packet left the sender
    /// (pFabric's and SRPT's rank; 0 for acknowledgements: highest priority).
    pub remaining: u64,
    /// Least-slack scheduling: nanoseconds of slack left, deducted at every hop
    /// by the time spent there; [`NO_SLACK`] when the flow has no deadline.
    pub slack: u64,
    /// Flow index.
    pub flow: u32,
    /// Segment number (data) or cumulative acknowledgement (ACK).
    pub seq: u32,
    /// ACK: the segment that triggered it (a one-block selective ACK).
    pub sack: u32,
    /// While queued at a pFabric port: its index in the port's list of live
    /// packets.
    pub qpos: u32,
    /// Host number the packet is going to.
    pub dst: u32,
    /// Bytes on the wire.
    pub len: u16,
    /// Ports crossed so far.
    pub hop: u8,
    /// [`flags`].
    pub flags: u8,
}

impl Pkt {
    /// Whether a flag is set.
    #[inline]
    #[must_use]
    pub const fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// Preallocated packet slots with a free list.
#[derive(Debug)]
pub struct PacketStore {
    slots: Vec<Pkt>,
    free: Vec<u32>,
    peak: usize,
}

impl PacketStore {
    /// A store of `capacity` packets.
    #[must_use]
    pub fn new(capacity: usize) -> PacketStore {
        PacketStore {
            slots: vec![Pkt::default(); capacity],
            free: (0..capacity as u32).rev().collect(),
            peak: 0,
        }
    }

    /// Takes a slot for `pkt`; `None` when every slot is in use.
    #[inline]
    pub fn alloc(&mut self, pkt: Pkt) -> Option<u32> {
        let id = self.free.pop()?;
        self.slots[id as usize] = pkt;
        self.peak = self.peak.max(self.in_use());
        Some(id)
    }

    /// Returns slot `id`.
    #[inline]
    pub fn free(&mut self, id: u32) {
        debug_assert!(
            self.free.len() < self.slots.len(),
            "double free of packet {id}"
        );
        self.free.push(id);
    }

    /// The packet in slot `id`.
    #[inline]
    #[must_use]
    pub fn get(&self, id: u32) -> &Pkt {
        &self.slots[id as usize]
    }

    /// The packet in slot `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut Pkt {
        &mut self.slots[id as usize]
    }

    /// Slots in use.
    #[must_use]
    pub fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// Most slots ever in use at once.
    #[must_use]
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// Total slots.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packet_fits_a_cache_line() {
        assert_eq!(core::mem::size_of::<Pkt>(), 56);
    }

    #[test]
    fn store_reuses_slots() {
        let mut s = PacketStore::new(2);
        let a = s.alloc(Pkt::default()).unwrap();
        let b = s.alloc(Pkt::default()).unwrap();
        assert!(s.alloc(Pkt::default()).is_none());
        s.free(a);
        assert_eq!(s.alloc(Pkt::default()), Some(a));
        assert_eq!(s.in_use(), 2);
        assert_eq!(s.peak(), 2);
        s.free(b);
    }
}
