//! The packet descriptor that moves through every scheduler.
//!
//! Payload bytes never enter a scheduler: a [`Packet`] names its buffer by an opaque
//! index (`buffer`) that the owner of the bytes (a ring, a buffer pool, a workload
//! generator) understands. The descriptor is `Copy` and fits in one 64-byte cache line.

pub use crate::time::Nanos;

/// Dense flow identifier: an index into a scheduler's preallocated flow table.
pub type FlowId = u32;

/// Traffic class or policy-tree leaf identifier (strict priority reads it as the level).
pub type ClassId = u32;

/// "No deadline" marker for [`Packet::deadline`].
pub const NO_DEADLINE: Nanos = Nanos::MAX;

/// A packet descriptor.
///
/// The rank annotations (`rank`, `deadline`, `remaining`) are filled in by whoever
/// creates the descriptor (the packet annotator of the Eiffel architecture): a
/// workload generator, a classifier, or a client. Schedulers that do not use an
/// annotation ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Packet {
    /// Opaque index of the buffer holding the payload (owned by the caller).
    pub buffer: u32,
    /// Length on the wire in bytes; what schedulers charge for service.
    pub len: u32,
    /// Flow the packet belongs to.
    pub flow: FlowId,
    /// Class or leaf the packet was classified to.
    pub class: ClassId,
    /// Time the packet arrived at the scheduler.
    pub arrival: Nanos,
    /// Generic rank supplied by the annotator (a priority level, a precomputed rank).
    pub rank: u64,
    /// Absolute deadline for deadline-based policies (EDF, LSTF); [`NO_DEADLINE`] if none.
    pub deadline: Nanos,
    /// Bytes the packet's flow still has to send, this packet included (SRPT, pFabric);
    /// 0 when unknown.
    pub remaining: u64,
}

impl Packet {
    /// A descriptor with the given flow and length and every other field zero
    /// (no deadline).
    #[must_use]
    pub const fn new(flow: FlowId, len: u32) -> Self {
        Packet {
            buffer: 0,
            len,
            flow,
            class: 0,
            arrival: 0,
            rank: 0,
            deadline: NO_DEADLINE,
            remaining: 0,
        }
    }

    /// Sets the arrival time.
    #[must_use]
    pub const fn at(mut self, arrival: Nanos) -> Self {
        self.arrival = arrival;
        self
    }

    /// Sets the class (or leaf).
    #[must_use]
    pub const fn class(mut self, class: ClassId) -> Self {
        self.class = class;
        self
    }

    /// Sets the buffer index.
    #[must_use]
    pub const fn buffer(mut self, buffer: u32) -> Self {
        self.buffer = buffer;
        self
    }
}

impl Default for Packet {
    /// An empty descriptor of flow 0 with no deadline ([`NO_DEADLINE`]: a deadline
    /// of 0 would make it the most urgent packet of any EDF node).
    fn default() -> Self {
        Packet::new(0, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_fits_one_cache_line() {
        assert!(core::mem::size_of::<Packet>() <= 64);
    }

    #[test]
    fn default_has_no_deadline() {
        assert_eq!(Packet::default().deadline, NO_DEADLINE);
        assert_eq!(Packet::default(), Packet::new(0, 0));
    }
}
