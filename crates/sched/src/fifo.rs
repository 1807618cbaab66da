//! FIFO: one tail-drop queue in arrival order, the simplest [`Scheduler`].
//!
//! Cost: O(1) enqueue and dequeue. Flow ids are not interpreted. When the
//! preallocated storage is full the offered packet is dropped with
//! [`DropReason::QueueFull`] (tail drop).

use crate::packet::{Nanos, Packet};
use crate::pool::{Fifo as List, PacketPool};
use crate::scheduler::{Backlog, Counters, DropReason, Dropped, Scheduler};

/// A first-in first-out scheduler with a fixed packet capacity.
#[derive(Clone, Debug)]
pub struct Fifo {
    pool: PacketPool,
    queue: List,
    counters: Counters,
}

impl Fifo {
    /// A FIFO holding at most `capacity` packets.
    #[must_use]
    pub fn new(capacity: usize) -> Self {
        Fifo {
            pool: PacketPool::with_capacity(capacity),
            queue: List::new(),
            counters: Counters::default(),
        }
    }
}

impl Scheduler for Fifo {
    // NB: always inlined, as `PerFlow`'s (see there).
    #[inline(always)]
    fn enqueue(&mut self, pkt: Packet, _now: Nanos) -> Result<(), Dropped> {
        self.counters.on_enqueue(pkt.len);
        self.pool
            .push_back(&mut self.queue, pkt)
            .map_err(|pkt| self.counters.drop_packet(pkt, DropReason::QueueFull))
    }

    #[inline(always)]
    fn dequeue(&mut self, _now: Nanos) -> Option<Packet> {
        let pkt = self.pool.pop_front(&mut self.queue)?;
        self.counters.on_dequeue(pkt.len);
        Some(pkt)
    }

    fn backlog(&self) -> Backlog {
        Backlog {
            packets: u64::from(self.queue.len()),
            bytes: self.queue.bytes(),
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
