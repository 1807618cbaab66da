//! Packets through the network: enqueue at a port, transmit, arrive, forward.

use super::{Sim, ACK_HASH};
use crate::event::{Event, EventKind, EventQueue};
use crate::packet::flags;
use crate::port::Next;
use crate::topology::NOT_A_HOST;

impl<Q: EventQueue> Sim<'_, Q> {
    /// Offers packet `id` to port `port`; a refused packet is freed and counted.
    pub(super) fn forward(&mut self, id: u32, port: u32) {
        let p = *self.pkts.get(id);
        let ack = p.has(flags::ACK);
        let f = &mut self.flows[p.flow as usize];
        let policy = usize::from(self.port_policy[port as usize]);
        let leaf = f.leaves[policy];
        let key = u64::from(p.flow) << 1 | u64::from(ack);
        let hop = usize::from(p.hop);
        let cache = if ack {
            &mut f.slots_rev[hop]
        } else {
            &mut f.slots_fwd[hop]
        };
        let port_ref = &mut self.ports[port as usize];
        let coin = if port_ref.has_loss() {
            rand::Rng::gen::<f64>(&mut self.rng)
        } else {
            1.0
        };
        match port_ref.enqueue(self.now, id, &mut self.pkts, leaf, key, cache, coin) {
            Ok(()) => self.try_send(port),
            Err(_) => {
                f.drops += 1;
                self.counters.dropped += 1;
                self.pkts.free(id);
            }
        }
    }

    /// Starts the next transmission of an idle port, or arranges to be called
    /// again when the link frees up or its policy releases a packet.
    pub(super) fn try_send(&mut self, port: u32) {
        let p = &mut self.ports[port as usize];
        if self.now < p.busy_until {
            if !p.free_pending {
                p.free_pending = true;
                p.free_gen = p.free_gen.wrapping_add(1);
                let (at, gen) = (p.busy_until, p.free_gen);
                self.push(at, Event::new(EventKind::PortFree, port, gen));
            }
            return;
        }
        match p.dequeue(self.now, &mut self.pkts) {
            Next::Send(id) => {
                let len = self.pkts.get(id).len;
                let (done, arrive, was_empty) = p.transmit(self.now, id, len);
                if p.has_backlog() {
                    p.free_pending = true;
                    p.free_gen = p.free_gen.wrapping_add(1);
                    let gen = p.free_gen;
                    self.push(done, Event::new(EventKind::PortFree, port, gen));
                } else {
                    // A PortFree still pending for this instant is stale now.
                    p.free_pending = false;
                    p.free_gen = p.free_gen.wrapping_add(1);
                }
                if was_empty {
                    self.push(arrive, Event::new(EventKind::Arrive, port, 0));
                }
            }
            Next::Idle => {}
            Next::Wait(t) => {
                if t < p.wake_at {
                    p.wake_at = t;
                    self.push(t, Event::new(EventKind::PortWake, port, 0));
                }
            }
        }
    }

    /// The head packet of port `port`'s link reaches the far end.
    pub(super) fn arrive(&mut self, port: u32) {
        let (id, next) = self.ports[port as usize].take_arrival();
        if let Some(t) = next {
            self.push(t, Event::new(EventKind::Arrive, port, 0));
        }
        let (to, to_host) = self.far[port as usize];
        let p = self.pkts.get_mut(id);
        let hop = usize::from(p.hop);
        p.hop += 1;
        let p = *p;
        if p.has(flags::OBSERVED) && p.sent >= self.cfg.measure_from {
            let d = self.now.since(p.enqueued);
            let o = self.flows[p.flow as usize].observed;
            self.observed[o as usize].record_hop(hop, d);
        }
        if to_host != NOT_A_HOST {
            self.deliver(id);
            return;
        }
        let mut hash = self.flow_hash(p.flow);
        if p.has(flags::ACK) {
            hash ^= ACK_HASH;
        }
        let out = self.routes.next_port(to, p.dst, hash);
        self.forward(id, out);
    }
}
