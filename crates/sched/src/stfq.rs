//! Start-time Fair Queueing (Goyal, Vin and Cheng, "Start-time fair queuing: a
//! scheduling algorithm for integrated services packet switching networks", 1996).
//!
//! # Algorithm
//!
//! Every packet gets a start tag `S = max(v, F_prev)` when it arrives, where
//! `F_prev` is the finish tag of the flow's previous packet, and a finish tag
//! `F = S + l/w`. Packets are served in increasing start tag. The virtual time `v`
//! is the start tag of the packet in service; at the end of a busy period it is set
//! to the largest finish tag served so far.
//!
//! In the per-flow form used here, tags are computed when a packet becomes its
//! flow's head: for a packet that arrives to a backlogged flow, `F_prev >= v`
//! (the previous packet is queued or in service, and service goes by increasing
//! start tag), so its start tag is `F_prev` whenever it is computed; for a packet
//! that arrives to an idle flow, arrival and becoming head coincide. The schedule is
//! therefore the packet-tagged one of the paper.
//!
//! # Data structures and cost
//!
//! One binary heap of backlogged flows ordered by the start tag of their head
//! (ties in timestamping order): `activate` and `served` cost O(log N), `peek`
//! O(1). STFQ needs no sum of weights (`v` comes from the tags themselves), so
//! only each weight is limited ([`crate::vtime::MAX_WEIGHT`]), not their sum.
//!
//! # Deviations
//!
//! Fixed-point tags as in [`crate::vtime`] (`l/w` rounded up), deterministic
//! tie-breaking, and exact comparison of an idle flow's finish tag with `v` through
//! wrap counts.
//!
//! Invariants (checked by [`FlowCore::check_invariants`]): the heap holds each
//! backlogged flow once under its start tag; every queued start tag is at least `v`.

use crate::flows::{FlowCore, FlowQueue, FlowTable, PerFlow};
use crate::heap::{Entry, VtHeap};
use crate::packet::FlowId;
use crate::scheduler::{ConfigError, FlowConfig};
use crate::vtime::{
    check_weight_and_size, vt_le, vt_max, FlowTags, VirtualClock, MAX_PACKET, MAX_WEIGHT,
};

/// The STFQ [`FlowCore`]; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct StfqCore<A = ()> {
    flows: FlowTable<FlowTags, A>,
    /// Per flow, the wrap count of `F` recorded when it went idle (read only
    /// when it becomes backlogged again).
    epochs: Vec<u64>,
    /// Backlogged flows by `(S, seq)`.
    queue: VtHeap,
    /// `v`: start tag of the packet last sent (jumps only forward).
    clock: VirtualClock,
    /// Largest finish tag served in the current busy period.
    max_finish: u64,
    seq: u64,
}

impl StfqCore {
    /// A core for flow ids `0..max_flows` with nothing attached to its flows
    /// (see [`StfqCore::with_attached`]).
    pub fn new(max_flows: u32) -> Result<Self, ConfigError> {
        Self::with_attached(max_flows)
    }
}

impl<A: Clone + Default> StfqCore<A> {
    /// A core for flow ids `0..max_flows`.
    ///
    /// Each flow's record carries an `A` for the core's user
    /// ([`FlowCore::attached`]).
    pub fn with_attached(max_flows: u32) -> Result<Self, ConfigError> {
        let flows = FlowTable::new(max_flows)?;
        let n = max_flows as usize;
        Ok(StfqCore {
            flows,
            queue: VtHeap::with_capacity(n),
            clock: VirtualClock::new(),
            epochs: vec![0; n],
            max_finish: 0,
            seq: 0,
        })
    }

    /// The virtual time `v`.
    #[must_use]
    pub fn virtual_time(&self) -> u64 {
        self.clock.now()
    }

    #[inline]
    fn push(&mut self, flow: u32) {
        self.seq += 1;
        self.queue.push(Entry {
            key: self.flows[flow].s,
            seq: self.seq,
            flow,
        });
    }
}

impl<A: Clone + Default> FlowCore for StfqCore<A> {
    type Attached = A;

    #[inline]
    fn attached(&self, flow: FlowId) -> Option<&A> {
        self.flows.attached(flow)
    }

    #[inline]
    fn attached_mut(&mut self, flow: FlowId) -> Option<&mut A> {
        self.flows.attached_mut(flow)
    }

    fn name(&self) -> &'static str {
        "stfq"
    }

    fn max_flows(&self) -> u32 {
        self.flows.max_flows()
    }

    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError> {
        let clock = &self.clock;
        self.flows.add(flow, cfg, |cfg| {
            check_weight_and_size(flow, cfg.weight, cfg.max_packet, MAX_PACKET)?;
            debug_assert!(cfg.weight <= MAX_WEIGHT);
            Ok(FlowTags::new(clock, cfg.weight))
        })?;
        self.epochs[flow as usize] = self.clock.epoch();
        Ok(())
    }

    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError> {
        self.flows.remove(flow).map(|_| ())
    }

    fn flow_config(&self, flow: FlowId) -> Option<FlowConfig> {
        self.flows.config(flow)
    }

    fn is_backlogged(&self, flow: FlowId) -> bool {
        self.flows.is_backlogged(flow)
    }

    fn backlogged(&self) -> u32 {
        self.flows.backlogged()
    }

    fn activate(&mut self, flow: FlowId, len: u32) {
        let f_epoch = self.epochs[flow as usize];
        self.flows[flow].activate(&self.clock, len, f_epoch);
        if self.flows.backlogged() == 0 {
            self.max_finish = self.clock.now();
        }
        self.flows.activated();
        self.push(flow);
    }

    fn peek(&mut self) -> Option<FlowId> {
        self.queue.peek().map(|e| e.flow)
    }

    fn served(&mut self, flow: FlowId, next: Option<u32>) {
        let top = self.queue.pop();
        debug_assert_eq!(
            top.map(|e| e.flow),
            Some(flow),
            "served({flow}) was not peeked"
        );
        let fl = &mut self.flows[flow];
        // v is the start tag of the packet now in service.
        self.clock.advance_to(fl.s);
        self.max_finish = vt_max(self.max_finish, fl.f);
        if let Some(epoch) = fl.served(&self.clock, next) {
            self.epochs[flow as usize] = epoch;
            self.flows.went_idle();
            if self.flows.backlogged() == 0 {
                // End of the busy period: v becomes the largest finish tag served.
                self.clock.advance_to(self.max_finish);
            }
        } else {
            self.push(flow);
        }
    }

    fn check_invariants(&self) {
        self.queue.check_order();
        let v = self.clock.now();
        let mut seen = vec![false; self.flows.max_flows() as usize];
        for e in self.queue.iter() {
            let fl = &self.flows[e.flow];
            assert!(!seen[e.flow as usize], "flow {} queued twice", e.flow);
            seen[e.flow as usize] = true;
            assert!(fl.backlogged, "idle flow {} queued", e.flow);
            assert_eq!(e.key, fl.s, "flow {}: key is not its start tag", e.flow);
            assert!(
                vt_le(v, fl.s),
                "flow {}: start tag {} behind v={v}",
                e.flow,
                fl.s
            );
        }
        assert_eq!(
            self.queue.len(),
            self.flows.backlogged() as usize,
            "backlogged flows vs heap"
        );
    }
}

/// The Start-time Fair Queueing packet scheduler: a [`PerFlow`] around a [`StfqCore`].
pub type Stfq = PerFlow<StfqCore<FlowQueue>>;

impl PerFlow<StfqCore<FlowQueue>> {
    /// A scheduler for flow ids `0..max_flows` holding at most `capacity` packets.
    pub fn new(max_flows: u32, capacity: usize) -> Result<Self, ConfigError> {
        Ok(PerFlow::from_core(
            StfqCore::with_attached(max_flows)?,
            capacity,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vtime::inv_weight;

    #[test]
    fn serves_by_start_tag_with_weights() {
        let mut c = StfqCore::new(2).unwrap();
        c.add_flow(0, FlowConfig::weight(2)).unwrap();
        c.add_flow(1, FlowConfig::weight(1)).unwrap();
        c.activate(0, 1000);
        c.activate(1, 1000);
        let mut order = Vec::new();
        for _ in 0..6 {
            let f = c.peek().unwrap();
            c.served(f, Some(1000));
            c.check_invariants();
            order.push(f);
        }
        // Start tags: flow 0 at 0, 500, 1000, 1500...; flow 1 at 0, 1000, 2000.
        // Ties go to the flow tagged first (flow 1's 1000 before flow 0's).
        assert_eq!(order, [0, 1, 0, 1, 0, 0]);
    }

    #[test]
    fn busy_period_end_moves_virtual_time_to_the_largest_finish() {
        let mut c = StfqCore::new(2).unwrap();
        c.add_flow(0, FlowConfig::weight(1)).unwrap();
        c.add_flow(1, FlowConfig::weight(1)).unwrap();
        c.activate(0, 1000);
        assert_eq!(c.peek(), Some(0));
        c.served(0, None);
        let v = c.virtual_time();
        assert_eq!(v, 1000 * inv_weight(1));
        // Flow 1 arrives after the busy period: it starts at v, level with flow 0.
        c.activate(1, 1000);
        c.activate(0, 1000);
        assert_eq!(c.peek(), Some(1));
        c.check_invariants();
    }
}
