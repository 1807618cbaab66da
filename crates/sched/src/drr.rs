//! Deficit Round Robin (Shreedhar and Varghese, "Efficient fair queueing using
//! deficit round robin", 1995; qfq.txt section 2, pspat.txt section 2.5).
//!
//! Backlogged flows wait in one round-robin list. The flow at the front sends head
//! packets while its *deficit* (bytes it may still send this turn) covers them; when
//! the deficit falls short of its head, the flow receives its *quantum* and moves to
//! the back of the list. A flow that becomes backlogged joins the back with a full
//! quantum; a flow that becomes idle forfeits its deficit.
//!
//! Quantum: [`FlowConfig::quantum`] if given, otherwise `weight * max_packet` of the
//! flow. Long-run shares of continuously backlogged flows are proportional to the
//! quanta, so with the default quantum they follow the weights when flows declare
//! the same maximum packet size; give explicit quanta otherwise.
//!
//! Weights only set the default quantum, so their sum is not limited (quanta are
//! `u64`). Cost: `activate` and `served` are O(1). `peek` is O(1) amortised when every
//! quantum is at least the flow's packet sizes (each visit to a flow then either
//! serves it or recharges it once per turn); a flow whose quantum is smaller than its
//! head needs `ceil(head / quantum)` turns, and `peek` walks them.
//!
//! Service guarantee: DRR's worst-case fairness index grows with the number of
//! flows: a packet that arrives just after its flow's turn waits for every other
//! flow's quantum (pspat.txt section 5.2, eq. (3): T-WFI = (1/phi_min + 1/phi_k +
//! N - 1) L/R with quanta proportional to weights). The auditor in eiffel-sim
//! measures this growth.
//!
//! Invariants (checked by [`FlowCore::check_invariants`]): the list holds exactly
//! the backlogged flows, once each; an idle flow's deficit is 0.

use crate::flows::{FlowCore, FlowQueue, FlowRecord, FlowTable, PerFlow};
use crate::packet::FlowId;
use crate::scheduler::{ConfigError, FlowConfig};

const NIL: u32 = u32::MAX;

/// Per-flow state touched by every operation (24 bytes: the records of 8 flows
/// in 3 cache lines); `quantum == 0` marks an unconfigured flow.
#[derive(Clone, Copy, Debug)]
struct Flow {
    /// Bytes the flow may still send in its current turn.
    deficit: u64,
    /// Bytes added to the deficit per turn.
    quantum: u64,
    /// Length of the head packet, valid while backlogged.
    head_len: u32,
    /// Next flow in the round-robin list; `NIL` at the tail, `IDLE` when the
    /// flow is not backlogged.
    next: u32,
}

// With a `PerFlow`'s 20-byte FIFO beside it, one 48-byte record per flow.
const _: () = assert!(core::mem::size_of::<crate::flows::Record<Flow, FlowQueue>>() == 48);

/// `next` of a flow that is not in the round-robin list.
const IDLE: u32 = u32::MAX - 1;

impl Default for Flow {
    fn default() -> Self {
        Flow {
            deficit: 0,
            quantum: 0,
            head_len: 0,
            next: IDLE,
        }
    }
}

impl Flow {
    /// The flow sent its head; `next` is its new head's length. Returns whether
    /// it is now idle (its deficit forfeited).
    #[inline(always)]
    fn sent(&mut self, next: Option<u32>) -> bool {
        self.deficit -= u64::from(self.head_len);
        match next {
            Some(len) => {
                self.head_len = len;
                false
            }
            None => {
                self.deficit = 0;
                true
            }
        }
    }
}

impl FlowRecord for Flow {
    #[inline]
    fn backlogged(&self) -> bool {
        self.next != IDLE
    }
}

/// The DRR [`FlowCore`]; see the [module docs](self).
#[derive(Clone, Debug)]
pub struct DrrCore<A = ()> {
    flows: FlowTable<Flow, A>,
    /// Front of the round-robin list: the flow whose turn it is.
    head: u32,
    tail: u32,
}

impl DrrCore {
    /// A core for flow ids `0..max_flows` with nothing attached to its flows
    /// (see [`DrrCore::with_attached`]).
    pub fn new(max_flows: u32) -> Result<Self, ConfigError> {
        Self::with_attached(max_flows)
    }
}

impl<A: Clone + Default> DrrCore<A> {
    /// A core for flow ids `0..max_flows`.
    ///
    /// Each flow's record carries an `A` for the core's user
    /// ([`FlowCore::attached`]).
    pub fn with_attached(max_flows: u32) -> Result<Self, ConfigError> {
        Ok(DrrCore {
            flows: FlowTable::new(max_flows)?,
            head: NIL,
            tail: NIL,
        })
    }

    /// The quantum of a configured flow.
    #[must_use]
    pub fn quantum(&self, flow: FlowId) -> Option<u64> {
        self.flows.config(flow)?;
        Some(self.flows[flow].quantum)
    }

    /// The deficit of `flow`.
    pub(crate) fn deficit(&self, flow: FlowId) -> u64 {
        self.flows[flow].deficit
    }

    /// `flow`, whose turn it is, sent `bytes` over several packets, each
    /// covered by its deficit, and its head is now `next_len` bytes long: what
    /// [`FlowCore::served`] for each packet would have left.
    pub(crate) fn served_run(&mut self, flow: FlowId, bytes: u64, next_len: u32) {
        debug_assert_eq!(flow, self.head, "a run through {flow} out of its turn");
        let f = &mut self.flows[flow];
        debug_assert!(
            f.deficit >= bytes + u64::from(next_len),
            "a run beyond the turn"
        );
        f.deficit -= bytes;
        f.head_len = next_len;
    }

    /// The flow whose turn follows the current one's, if another is queued.
    #[inline]
    pub(crate) fn second(&self) -> Option<u32> {
        self.following(self.head)
    }

    /// The flow whose turn follows `f`'s, if `f` is queued and not last.
    #[inline]
    pub(crate) fn following(&self, f: u32) -> Option<u32> {
        let rec = self.flows.record_checked(f)?;
        (rec.core.next != NIL).then_some(rec.core.next)
    }

    #[inline]
    fn push_back(&mut self, f: u32) {
        self.flows[f].next = NIL;
        if self.tail == NIL {
            self.head = f;
        } else {
            let tail = self.tail;
            self.flows[tail].next = f;
        }
        self.tail = f;
    }

    /// The turn of `f`, the head of the list: `false` if its deficit covers its
    /// head; otherwise it is recharged for its next turn and goes to the back,
    /// and `true`.
    #[inline(always)]
    fn charge(&mut self, f: u32) -> bool {
        let flow = &mut self.flows[f];
        if flow.deficit >= u64::from(flow.head_len) {
            return false;
        }
        flow.deficit += flow.quantum;
        if self.head != self.tail {
            let f = self.pop_front();
            self.push_back(f);
        }
        true
    }

    /// `f`, the head of the list, sent its last packet: it leaves the list.
    #[inline]
    fn went_idle(&mut self, f: u32) {
        self.pop_front();
        self.flows[f].next = IDLE;
        self.flows.went_idle();
    }

    #[inline]
    fn pop_front(&mut self) -> u32 {
        let f = self.head;
        self.head = self.flows[f].next;
        if self.head == NIL {
            self.tail = NIL;
        }
        f
    }
}

impl<A: Clone + Default> FlowCore for DrrCore<A> {
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
        "drr"
    }

    fn max_flows(&self) -> u32 {
        self.flows.max_flows()
    }

    fn add_flow(&mut self, flow: FlowId, cfg: FlowConfig) -> Result<(), ConfigError> {
        self.flows.add(flow, cfg, |cfg| {
            if cfg.weight == 0 {
                return Err(ConfigError::ZeroWeight { flow });
            }
            if cfg.max_packet == 0 {
                return Err(ConfigError::BadMaxPacket {
                    flow,
                    bytes: 0,
                    max: u32::MAX,
                });
            }
            let quantum = match cfg.quantum {
                Some(0) => return Err(ConfigError::ZeroQuantum { flow }),
                Some(q) => u64::from(q),
                None => u64::from(cfg.weight) * u64::from(cfg.max_packet),
            };
            Ok(Flow {
                quantum,
                ..Flow::default()
            })
        })
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
        let f = &mut self.flows[flow];
        debug_assert!(
            f.quantum != 0 && !f.backlogged(),
            "activate({flow}): not an idle flow"
        );
        f.head_len = len;
        f.deficit = f.quantum;
        self.flows.activated();
        self.push_back(flow);
    }

    fn peek(&mut self) -> Option<FlowId> {
        loop {
            let f = self.head;
            if f == NIL {
                return None;
            }
            if !self.charge(f) {
                return Some(f);
            }
        }
    }

    fn served(&mut self, flow: FlowId, next: Option<u32>) {
        debug_assert_eq!(
            flow, self.head,
            "served({flow}) but the turn is {}'s",
            self.head
        );
        if self.flows[flow].sent(next) {
            self.went_idle(flow);
        }
    }

    /// The served flow keeps the turn while its deficit covers its new head:
    /// then its record, just updated, answers `peek` without a second lookup.
    #[inline(always)]
    fn served_peek(&mut self, flow: FlowId, next: Option<u32>) -> Option<FlowId> {
        debug_assert_eq!(
            flow, self.head,
            "served({flow}) but the turn is {}'s",
            self.head
        );
        let f = &mut self.flows[flow];
        if f.sent(next) {
            self.went_idle(flow);
        } else if f.deficit >= u64::from(f.head_len) {
            return Some(flow);
        }
        self.peek()
    }

    /// `peek`, `pop` and `served` with one lookup of the served flow's record,
    /// which holds both the deficit and what `pop` works on.
    #[inline(always)]
    fn serve<R>(&mut self, pop: impl FnOnce(FlowId, &mut A) -> (R, Option<u32>)) -> Option<R> {
        loop {
            let f = self.head;
            let rec = self.flows.record_mut_checked(f)?;
            if rec.core.deficit >= u64::from(rec.core.head_len) {
                let (r, next) = pop(f, &mut rec.attached);
                if rec.core.sent(next) {
                    self.went_idle(f);
                }
                return Some(r);
            }
            self.charge(f);
        }
    }

    fn check_invariants(&self) {
        let records: Vec<&Flow> = self.flows.cores().collect();
        let mut seen = vec![false; records.len()];
        let (mut n, mut last, mut f) = (0u32, NIL, self.head);
        while f != NIL {
            assert!(!seen[f as usize], "flow {f} twice in the round-robin list");
            seen[f as usize] = true;
            assert!(
                records[f as usize].backlogged(),
                "idle flow {f} in the list"
            );
            n += 1;
            last = f;
            f = records[f as usize].next;
        }
        assert_eq!(last, self.tail, "list tail");
        assert_eq!(n, self.flows.backlogged(), "backlogged count");
        for (i, fl) in records.iter().enumerate() {
            assert_eq!(
                fl.backlogged(),
                seen[i],
                "flow {i} backlogged but not listed"
            );
            if !fl.backlogged() {
                assert_eq!(fl.deficit, 0, "idle flow {i} kept a deficit");
            }
        }
    }
}

/// The Deficit Round Robin packet scheduler: a [`PerFlow`] around a [`DrrCore`].
pub type Drr = PerFlow<DrrCore<FlowQueue>>;

impl PerFlow<DrrCore<FlowQueue>> {
    /// A scheduler for flow ids `0..max_flows` holding at most `capacity` packets.
    pub fn new(max_flows: u32, capacity: usize) -> Result<Self, ConfigError> {
        Ok(PerFlow::from_core(
            DrrCore::with_attached(max_flows)?,
            capacity,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_quanta_alternate_and_deficits_carry_over() {
        let mut c = DrrCore::new(2).unwrap();
        c.add_flow(0, FlowConfig::weight(1).quantum(1000)).unwrap();
        c.add_flow(1, FlowConfig::weight(1).quantum(1000)).unwrap();
        c.activate(0, 600);
        c.activate(1, 600);
        // Flow 0: 1000 covers 600, then 400 < 600 ends its turn.
        assert_eq!(c.peek(), Some(0));
        c.served(0, Some(600));
        assert_eq!(c.peek(), Some(1));
        c.served(1, Some(600));
        // Flow 0 now has 400 + 1000 and sends twice.
        assert_eq!(c.peek(), Some(0));
        c.served(0, Some(600));
        assert_eq!(c.peek(), Some(0));
        c.served(0, None);
        assert_eq!(c.peek(), Some(1));
        c.check_invariants();
    }

    proptest::proptest! {
        /// `served_peek`'s shortcut answers what `served` then `peek` answer,
        /// and leaves the same state: two cores driven alike, one each way.
        #[test]
        fn served_peek_is_served_then_peek(
            quanta in proptest::collection::vec(1u32..3_000, 1..6),
            ops in proptest::collection::vec((0u32..6, 64u32..1_500, 0u8..4), 1..300),
        ) {
            let n = quanta.len() as u32;
            let mut a = DrrCore::new(n).unwrap();
            for (f, &q) in quanta.iter().enumerate() {
                a.add_flow(f as u32, FlowConfig::weight(1).quantum(q)).unwrap();
            }
            let mut b = a.clone();
            for (flow, len, op) in ops {
                let flow = flow % n;
                if op == 0 && !a.is_backlogged(flow) {
                    a.activate(flow, len);
                    b.activate(flow, len);
                    continue;
                }
                let Some(f) = a.peek() else { continue };
                proptest::prop_assert_eq!(b.peek(), Some(f));
                let next = (op != 1).then_some(len);
                let got = a.served_peek(f, next);
                b.served(f, next);
                proptest::prop_assert_eq!(got, b.peek());
                a.check_invariants();
            }
        }
    }

    #[test]
    fn small_quantum_needs_several_turns() {
        let mut c = DrrCore::new(1).unwrap();
        c.add_flow(0, FlowConfig::weight(1).quantum(100)).unwrap();
        c.activate(0, 1500);
        assert_eq!(c.peek(), Some(0));
        c.served(0, None);
        assert_eq!(c.peek(), None);
        c.check_invariants();
    }

    #[test]
    fn default_quantum_scales_with_weight() {
        let mut c = DrrCore::new(2).unwrap();
        c.add_flow(0, FlowConfig::weight(3).max_packet(1000))
            .unwrap();
        assert_eq!(c.quantum(0), Some(3000));
        assert_eq!(
            c.add_flow(1, FlowConfig::weight(0)),
            Err(ConfigError::ZeroWeight { flow: 1 })
        );
        assert_eq!(
            c.add_flow(1, FlowConfig::weight(1).quantum(0)),
            Err(ConfigError::ZeroQuantum { flow: 1 })
        );
        assert!(matches!(
            c.add_flow(2, FlowConfig::weight(1)),
            Err(ConfigError::FlowOutOfRange {
                flow: 2,
                max_flows: 2
            })
        ));
    }
}
