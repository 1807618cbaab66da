//! WF²Q+ with exact timestamps (Bennett and Zhang, "Hierarchical packet fair
//! queueing algorithms", 1997; qfq.txt section 3.1): the reference that QFQ
//! approximates and that the other fair schedulers are compared against.
//!
//! # Algorithm
//!
//! Every backlogged flow `k` carries a virtual start `S` and finish `F` (qfq.txt
//! eq. (2)): when it becomes backlogged `S = max(V, F)`, when it is served `S = F`,
//! and in both cases `F = S + l/phi` for its new head of `l` bytes. The system
//! virtual time (eq. (3)) grows by `l` (normalised by the weight sum, see
//! [`crate::vtime`]) for every served packet and jumps to the smallest `S` of the
//! backlogged flows whenever it lags behind it. A flow is *eligible* when `S <= V`;
//! the scheduler serves the eligible flow with the smallest `F`, ties going to the
//! flow timestamped first.
//!
//! # Data structures and cost
//!
//! Two binary heaps over flows: `eligible`, ordered by `F`, and `waiting` (the
//! ineligible flows), ordered by `S`. The minimum `S` of eq. (3) is the top of
//! `waiting` whenever `eligible` is empty (any eligible flow has `S <= V`, so the
//! jump cannot apply). After every change of `V` the flows whose `S` it reached move
//! from `waiting` to `eligible`. `activate` and `served` cost O(log N) plus
//! O(log N) per flow that becomes eligible; every flow becomes eligible once per
//! served packet, so the amortised cost is O(log N) per packet. `peek` is O(1).
//!
//! # Guarantees
//!
//! T-WFI of flow `k`: `(L_k/phi_k + 2L)/R` on a link of rate `R`, where `L_k` is
//! the flow's largest packet and `L` the largest packet of any flow (qfq.txt
//! section 5.2), checked on random traces by eiffel-sim's tests.
//!
//! # Deviations
//!
//! - Fixed-point timestamps ([`crate::vtime`]): `l/phi` is rounded up and the
//!   increments of `V` down, so flows are never charged less than they sent.
//! - Ties in `F` (and in `S` among waiting flows) are broken in timestamping order
//!   instead of arbitrarily, for determinism.
//! - An idle flow's `F` is compared with `V` through its wrap count, so that `S =
//!   max(V, F)` stays exact after any idle time ([`crate::vtime`]).
//!
//! Invariants (checked by [`FlowCore::check_invariants`]): each backlogged flow is
//! in exactly one heap, under its current `F` (eligible) or `S` (waiting); eligible
//! flows have `S <= V` and waiting ones `S > V`; if any flow is backlogged some flow
//! is eligible.

use crate::flows::{FlowCore, FlowQueue, FlowTable, PerFlow};
use crate::heap::{Entry, VtHeap};
use crate::packet::FlowId;
use crate::scheduler::{ConfigError, FlowConfig};
use crate::vtime::{check_weight_and_size, vt_gt, vt_le, FlowTags, VirtualClock, MAX_PACKET};

/// The WF²Q+ [`FlowCore`]; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct Wf2qCore<A = ()> {
    flows: FlowTable<FlowTags, A>,
    /// Per flow, the wrap count of `F` recorded when it went idle (read only
    /// when it becomes backlogged again).
    epochs: Vec<u64>,
    /// Eligible flows by `(F, seq)`.
    eligible: VtHeap,
    /// Ineligible flows by `(S, seq)`.
    waiting: VtHeap,
    clock: VirtualClock,
    /// Timestamping order, the tie-breaker.
    seq: u64,
}

impl Wf2qCore {
    /// A core for flow ids `0..max_flows` with nothing attached to its flows
    /// (see [`Wf2qCore::with_attached`]).
    pub fn new(max_flows: u32) -> Result<Self, ConfigError> {
        Self::with_attached(max_flows)
    }
}

impl<A: Clone + Default> Wf2qCore<A> {
    /// A core for flow ids `0..max_flows`.
    ///
    /// Each flow's record carries an `A` for the core's user
    /// ([`FlowCore::attached`]).
    pub fn with_attached(max_flows: u32) -> Result<Self, ConfigError> {
        let flows = FlowTable::new(max_flows)?;
        let n = max_flows as usize;
        Ok(Wf2qCore {
            flows,
            eligible: VtHeap::with_capacity(n),
            waiting: VtHeap::with_capacity(n),
            clock: VirtualClock::new(),
            epochs: vec![0; n],
            seq: 0,
        })
    }

    /// The system virtual clock.
    #[must_use]
    pub fn clock(&self) -> &VirtualClock {
        &self.clock
    }

    /// Queues a backlogged flow in the heap its start time calls for.
    #[inline]
    fn insert(&mut self, flow: u32) {
        let fl = &self.flows[flow];
        self.seq += 1;
        if vt_le(fl.s, self.clock.now()) {
            self.eligible.push(Entry {
                key: fl.f,
                seq: self.seq,
                flow,
            });
        } else {
            self.waiting.push(Entry {
                key: fl.s,
                seq: self.seq,
                flow,
            });
        }
    }

    /// Applies the jump of eq. (3) and moves the flows `V` has reached to `eligible`.
    #[inline]
    fn settle(&mut self) {
        if self.eligible.is_empty() {
            match self.waiting.peek() {
                Some(top) => self.clock.advance_to(top.key),
                None => return,
            }
        }
        while let Some(&top) = self.waiting.peek() {
            if vt_gt(top.key, self.clock.now()) {
                break;
            }
            self.waiting.pop();
            self.eligible.push(Entry {
                key: self.flows[top.flow].f,
                ..top
            });
        }
    }
}

impl<A: Clone + Default> FlowCore for Wf2qCore<A> {
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
        "wf2q+"
    }

    fn max_flows(&self) -> u32 {
        self.flows.max_flows()
    }

    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError> {
        let clock = &mut self.clock;
        self.flows.add(flow, cfg, |cfg| {
            check_weight_and_size(flow, cfg.weight, cfg.max_packet, MAX_PACKET)?;
            clock.add_weight(flow, cfg.weight)?;
            Ok(FlowTags::new(clock, cfg.weight))
        })?;
        self.epochs[flow as usize] = self.clock.epoch();
        Ok(())
    }

    fn remove_flow(&mut self, flow: FlowId) -> Result<(), ConfigError> {
        let cfg = self.flows.remove(flow)?;
        self.clock
            .remove_weight(cfg.weight, self.flows.backlogged() == 0);
        Ok(())
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
        self.flows.activated();
        self.insert(flow);
        self.settle();
    }

    fn peek(&mut self) -> Option<FlowId> {
        self.eligible.peek().map(|e| e.flow)
    }

    fn served(&mut self, flow: FlowId, next: Option<u32>) {
        let top = self.eligible.pop();
        debug_assert_eq!(
            top.map(|e| e.flow),
            Some(flow),
            "served({flow}) was not peeked"
        );
        let fl = &mut self.flows[flow];
        self.clock.serve(fl.head_len);
        if let Some(epoch) = fl.served(&self.clock, next) {
            self.epochs[flow as usize] = epoch;
            self.flows.went_idle();
        } else {
            self.insert(flow);
        }
        self.settle();
        if self.flows.backlogged() == 0 {
            self.clock.on_idle();
        }
    }

    fn check_invariants(&self) {
        self.eligible.check_order();
        self.waiting.check_order();
        let v = self.clock.now();
        let mut seen = vec![false; self.flows.max_flows() as usize];
        for e in self.eligible.iter() {
            let fl = &self.flows[e.flow];
            assert!(!seen[e.flow as usize], "flow {} queued twice", e.flow);
            seen[e.flow as usize] = true;
            assert!(fl.backlogged, "idle flow {} is eligible", e.flow);
            assert_eq!(e.key, fl.f, "flow {}: eligible key is not F", e.flow);
            assert!(
                vt_le(fl.s, v),
                "flow {}: eligible with S={} > V={v}",
                e.flow,
                fl.s
            );
        }
        for e in self.waiting.iter() {
            let fl = &self.flows[e.flow];
            assert!(!seen[e.flow as usize], "flow {} queued twice", e.flow);
            seen[e.flow as usize] = true;
            assert!(fl.backlogged, "idle flow {} is waiting", e.flow);
            assert_eq!(e.key, fl.s, "flow {}: waiting key is not S", e.flow);
            assert!(
                vt_gt(fl.s, v),
                "flow {}: waiting with S={} <= V={v}",
                e.flow,
                fl.s
            );
        }
        let queued = seen.iter().filter(|&&b| b).count();
        assert_eq!(
            queued,
            self.flows.backlogged() as usize,
            "backlogged flows vs heaps"
        );
        assert!(
            self.flows.backlogged() == 0 || !self.eligible.is_empty(),
            "backlog but nobody eligible"
        );
    }
}

/// The WF²Q+ packet scheduler: a [`PerFlow`] around a [`Wf2qCore`].
pub type Wf2qPlus = PerFlow<Wf2qCore<FlowQueue>>;

impl PerFlow<Wf2qCore<FlowQueue>> {
    /// A scheduler for flow ids `0..max_flows` holding at most `capacity` packets.
    pub fn new(max_flows: u32, capacity: usize) -> Result<Self, ConfigError> {
        Ok(PerFlow::from_core(
            Wf2qCore::with_attached(max_flows)?,
            capacity,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn core(weights: &[u32]) -> Wf2qCore {
        let mut c = Wf2qCore::new(weights.len() as u32).unwrap();
        for (f, &w) in weights.iter().enumerate() {
            c.add_flow(f as u32, FlowConfig::weight(w)).unwrap();
        }
        c
    }

    fn serve(c: &mut Wf2qCore, n: usize, len: u32) -> Vec<u32> {
        (0..n)
            .map(|_| {
                let f = c.peek().unwrap();
                c.served(f, Some(len));
                c.check_invariants();
                f
            })
            .collect()
    }

    #[test]
    fn weights_two_to_one_interleave() {
        let mut c = core(&[2, 1]);
        c.activate(0, 1000);
        c.activate(1, 1000);
        assert_eq!(serve(&mut c, 6, 1000), [0, 1, 0, 0, 1, 0]);
    }

    #[test]
    fn eligibility_keeps_a_heavy_flow_from_bursting() {
        // Flow 0 has half of the link (weights 2:1:1, all values exact in fixed
        // point). In units where V grows by 25 per packet, flow 0's packets finish
        // at 50, 100, 150 and the others' at 100: ordering by finish time alone
        // (WFQ) sends two of flow 0's packets first. WF2Q+ finds flow 0 ineligible
        // after one (S = 50 > V = 25) and interleaves.
        let mut c = core(&[2, 1, 1]);
        for f in 0..3 {
            c.activate(f, 100);
        }
        assert_eq!(serve(&mut c, 8, 100), [0, 1, 2, 0, 0, 1, 2, 0]);
    }

    #[test]
    fn idle_flow_restarts_at_virtual_time() {
        let mut c = core(&[1, 1]);
        c.activate(0, 1000);
        for _ in 0..10 {
            assert_eq!(c.peek(), Some(0));
            c.served(0, Some(1000));
        }
        c.activate(1, 1000);
        // Flow 1 starts at V, not at 0: it does not get ten packets in a row. Both
        // flows then have F = V + 2000; the tie goes to flow 0, timestamped first.
        assert_eq!(serve(&mut c, 4, 1000), [0, 1, 0, 1]);
    }

    #[test]
    fn rejects_bad_configs() {
        let mut c = Wf2qCore::new(2).unwrap();
        assert_eq!(
            c.add_flow(0, FlowConfig::weight(0)),
            Err(ConfigError::ZeroWeight { flow: 0 })
        );
        assert!(matches!(
            c.add_flow(0, FlowConfig::weight(1).max_packet(MAX_PACKET + 1)),
            Err(ConfigError::BadMaxPacket { .. })
        ));
        c.add_flow(0, FlowConfig::weight(1)).unwrap();
        assert_eq!(
            c.add_flow(0, FlowConfig::weight(1)),
            Err(ConfigError::DuplicateFlow { flow: 0 })
        );
        assert!(Wf2qCore::new(0).is_err());
    }
}
