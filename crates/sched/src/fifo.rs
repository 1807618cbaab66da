//! FIFO: one tail-drop queue in arrival order, the simplest [`Scheduler`].
//!
//! Cost: O(1) enqueue and dequeue. Flow ids are not interpreted. When the
//! preallocated storage is full the offered packet is dropped with
//! [`DropReason::QueueFull`] (tail drop).
//!
//! The packets sit in a ring allocated at construction, not in a
//! [`crate::PacketPool`]: one queue needs no links, and a ring's next packet is at
//! an address known in advance, where a linked list makes every dequeue wait for
//! the previous one's load of the next link.

use std::collections::VecDeque;

use crate::packet::{Nanos, Packet};
use crate::scheduler::{Backlog, Counters, DropReason, Dropped, Scheduler};

/// A first-in first-out scheduler with a fixed packet capacity.
#[derive(Clone, Debug)]
pub struct Fifo {
    /// The queued packets; never grown past `capacity`.
    ring: VecDeque<Packet>,
    capacity: usize,
    /// Bytes queued.
    bytes: u64,
    counters: Counters,
}

impl Fifo {
    /// A FIFO holding at most `capacity` packets.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Fifo {
            ring: VecDeque::with_capacity(capacity),
            capacity,
            bytes: 0,
            counters: Counters::default(),
        }
    }
}

impl Scheduler for Fifo {
    // NB: always inlined, as `PerFlow`'s (see there).
    #[inline(always)]
    fn enqueue(&mut self, pkt: Packet, _now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        if self.ring.len() >= self.capacity {
            return Err(self.counters.drop_packet(pkt, DropReason::QueueFull));
        }
        // Within the capacity reserved at construction: no allocation.
        self.ring.push_back(pkt);
        self.bytes += u64::from(pkt.len);
        Ok(())
    }

    #[inline(always)]
    fn dequeue(&mut self, _now: Nanos) -> Option<Packet> {
        let pkt = self.ring.pop_front()?;
        self.bytes -= u64::from(pkt.len);
        self.counters.on_dequeue(pkt.len);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        Backlog {
            packets: self.ring.len() as u64,
            bytes: self.bytes,
        }
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }

    fn name(&self) -> &'static str {
        "fifo"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_in_arrival_order_and_tail_drops() {
        let mut q = Fifo::new(2);
        q.enqueue(Packet::new(1, 10), 0).unwrap();
        q.enqueue(Packet::new(2, 20), 0).unwrap();
        let d = q.enqueue(Packet::new(3, 30), 0).unwrap_err();
        assert_eq!((d.packet.flow, d.reason), (3, DropReason::QueueFull));
        assert_eq!(q.next_ready(5), Some(5));
        assert_eq!(q.dequeue(0).unwrap().flow, 1);
        assert_eq!(q.dequeue(0).unwrap().flow, 2);
        assert_eq!(q.dequeue(0), None);
        assert_eq!(q.next_ready(5), None);
        let c = q.counters();
        assert_eq!((c.enqueued, c.dequeued, c.dropped_total()), (3, 2, 1));
        assert_eq!(c.implied_backlog(), q.backlog().packets);
    }
}
