//! Model-based tests of the per-flow schedulers: random operation sequences run
//! against simple O(N) reference implementations of each policy, with every
//! structural invariant and the accounting checked after every operation.
//!
//! The references recompute each decision from the definitions (scan all flows or
//! groups) with the same fixed-point arithmetic ([`eiffel_sched::vtime`]), so any
//! difference points at the incremental data structures: heaps, bucket lists, the
//! QFQ group sets and their `make_eligible` / `unblock_groups` moves.

use eiffel_sched::qfq::{group_index, SLOTS};
use eiffel_sched::vtime::{inv_weight, vt_le, vt_lt, VirtualClock};
use eiffel_sched::{
    DropReason, Drr, FlowConfig, FlowId, FlowScheduler, Packet, PacketCore, PerFlow, Qfq,
    Scheduler, Stfq, Wf2qPlus,
};
use proptest::prelude::*;
use std::collections::VecDeque;

impl<R: Reference> Reference for &mut R {
    fn activate(&mut self, flow: usize, len: u32) {
        (**self).activate(flow, len);
    }
    fn peek(&mut self) -> Option<usize> {
        (**self).peek()
    }
    fn served(&mut self, flow: usize, next: Option<u32>) {
        (**self).served(flow, next);
    }
    fn allows(&mut self, got: Option<usize>) -> Result<(), String> {
        (**self).allows(got)
    }
}

/// A reference policy: the same protocol as [`eiffel_sched::FlowCore`], computed naively.
trait Reference {
    fn activate(&mut self, flow: usize, len: u32);
    fn peek(&mut self) -> Option<usize>;
    fn served(&mut self, flow: usize, next: Option<u32>);
    /// Whether the scheduler's choice `got` is one the policy allows; by default
    /// exactly the reference's.
    fn allows(&mut self, got: Option<usize>) -> Result<(), String> {
        let want = self.peek();
        if got == want {
            Ok(())
        } else {
            Err(format!("chose {got:?}, reference {want:?}"))
        }
    }
}

#[derive(Clone, Debug)]
struct Scenario {
    /// `(weight, max_packet)` per flow.
    flows: Vec<(u32, u32)>,
    /// `Some((flow, len))` enqueues, `None` dequeues.
    ops: Vec<Option<(usize, u32)>>,
    capacity: usize,
}

/// Random flows and operations. `wexp` bounds the weights (`2^wexp`), `sizes`
/// lists the maximum packet sizes to pick from; enqueues outnumber dequeues by
/// `bias` to 2, so backlogs build up and drain.
fn scenario_with(
    wexp: u32,
    sizes: &'static [u32],
    max_flows: usize,
    bias: u32,
) -> impl Strategy<Value = Scenario> {
    let flow = (0u32..=wexp, 0..sizes.len(), any::<bool>()).prop_map(move |(e, sz, odd)| {
        // Weights log-uniform over 1..=2^wexp, sometimes just off a power of two.
        let w = 1u32 << e;
        (if odd && w > 2 { w - 1 } else { w }, sizes[sz])
    });
    (proptest::collection::vec(flow, 1..=max_flows), 1usize..256)
        .prop_flat_map(move |(flows, capacity)| {
            let n = flows.len();
            let op = prop_oneof![
                bias => (0..n, 0.0f64..1.0).prop_map(|(f, x)| Some((f, x))),
                2 => Just(None),
            ];
            (
                Just(flows),
                proptest::collection::vec(op, 1..500),
                Just(capacity),
            )
        })
        .prop_map(|(flows, ops, capacity)| {
            let ops = ops
                .into_iter()
                .map(|op| op.map(|(f, x)| (f, 1 + (x * f64::from(flows[f].1 - 1)) as u32)))
                .collect();
            Scenario {
                flows,
                ops,
                capacity,
            }
        })
}

/// Weights over the whole range, sizes from tiny to 1500 bytes.
fn scenario() -> impl Strategy<Value = Scenario> {
    scenario_with(
        16,
        &[1, 40, 64, 100, 300, 576, 1000, 1200, 1499, 1500],
        12,
        3,
    )
}

/// Close weights and many flows, so groups are adjacent and block each other.
fn dense_scenario() -> impl Strategy<Value = Scenario> {
    scenario_with(4, &[64, 200, 700, 1500], 32, 3)
}

/// Heavy flows with small packets next to light flows with large ones: `V` can run
/// past a backlogged group's finish time (qfq.txt Theorem 4 allows up to `L`),
/// which is when eq. (29) applies.
fn skewed_scenario() -> impl Strategy<Value = Scenario> {
    scenario_with(16, &[2, 8, 64, 1500, 1500], 16, 2)
}

/// Runs `ops` through `sched` and `reference` side by side.
fn check<C: PacketCore, R: Reference>(
    sc: &Scenario,
    mut sched: PerFlow<C>,
    mut reference: R,
) -> Result<(), TestCaseError> {
    let reference = &mut reference;
    for (f, &(w, l)) in sc.flows.iter().enumerate() {
        sched
            .add_flow(f as FlowId, FlowConfig::weight(w).max_packet(l))
            .unwrap();
    }
    let mut queues: Vec<VecDeque<Packet>> = vec![VecDeque::new(); sc.flows.len()];
    let mut queued = 0usize;
    for (i, op) in sc.ops.iter().enumerate() {
        match *op {
            Some((f, len)) => {
                let pkt = Packet::new(f as FlowId, len).buffer(i as u32);
                match sched.enqueue(pkt, 0) {
                    Ok(()) => {
                        queues[f].push_back(pkt);
                        queued += 1;
                        if queues[f].len() == 1 {
                            reference.activate(f, len);
                        }
                    }
                    Err(d) => {
                        prop_assert_eq!(d.reason, DropReason::QueueFull);
                        prop_assert_eq!(queued, sc.capacity);
                    }
                }
            }
            None => {
                let got = sched.dequeue(0);
                if let Err(e) = reference.allows(got.map(|p| p.flow as usize)) {
                    return Err(TestCaseError::fail(format!("op {i}: {e}")));
                }
                if let Some(p) = got {
                    let f = p.flow as usize;
                    prop_assert_eq!(Some(p), queues[f].pop_front(), "per-flow FIFO order");
                    queued -= 1;
                    reference.served(f, queues[f].front().map(|p| p.len));
                }
            }
        }
        sched.check_invariants();
        let c = sched.counters();
        prop_assert_eq!(
            c.enqueued,
            c.dequeued + c.dropped_total() + sched.backlog().packets
        );
        prop_assert_eq!(sched.backlog().packets as usize, queued);
    }
    // Drain: everything queued comes out, in the reference order.
    while let Some(p) = sched.dequeue(0) {
        let f = p.flow as usize;
        if let Err(e) = reference.allows(Some(f)) {
            return Err(TestCaseError::fail(format!("drain: {e}")));
        }
        prop_assert_eq!(Some(p), queues[f].pop_front());
        reference.served(f, queues[f].front().map(|p| p.len));
        sched.check_invariants();
    }
    prop_assert!(queues.iter().all(VecDeque::is_empty));
    prop_assert_eq!(reference.peek(), None);
    Ok(())
}

// ---------------------------------------------------------------- DRR

struct RefDrr {
    quantum: Vec<u64>,
    deficit: Vec<u64>,
    head: Vec<u32>,
    active: VecDeque<usize>,
}

impl RefDrr {
    fn new(flows: &[(u32, u32)]) -> Self {
        RefDrr {
            quantum: flows
                .iter()
                .map(|&(w, l)| u64::from(w) * u64::from(l))
                .collect(),
            deficit: vec![0; flows.len()],
            head: vec![0; flows.len()],
            active: VecDeque::new(),
        }
    }

    /// Standard DRR, evaluated when the link asks for a packet: the front flow
    /// sends while its deficit covers its head, else it is recharged and moves to
    /// the back.
    fn settle(&mut self) {
        while let Some(&f) = self.active.front() {
            if self.deficit[f] >= u64::from(self.head[f]) {
                return;
            }
            self.deficit[f] += self.quantum[f];
            self.active.rotate_left(1);
        }
    }
}

impl Reference for RefDrr {
    fn activate(&mut self, f: usize, len: u32) {
        self.head[f] = len;
        self.deficit[f] = self.quantum[f];
        self.active.push_back(f);
    }
    fn peek(&mut self) -> Option<usize> {
        self.settle();
        self.active.front().copied()
    }
    fn served(&mut self, f: usize, next: Option<u32>) {
        self.deficit[f] -= u64::from(self.head[f]);
        match next {
            Some(l) => self.head[f] = l,
            None => {
                self.deficit[f] = 0;
                self.active.pop_front();
            }
        }
    }
}

// ---------------------------------------------------------------- timestamps

#[derive(Clone, Copy, Debug, Default)]
struct Stamps {
    inv: u64,
    s: u64,
    f: u64,
    f_epoch: u64,
    head: u32,
    seq: u64,
    on: bool,
}

fn stamps(flows: &[(u32, u32)], clock: &mut VirtualClock, with_weights: bool) -> Vec<Stamps> {
    flows
        .iter()
        .enumerate()
        .map(|(f, &(w, _))| {
            if with_weights {
                clock.add_weight(f as FlowId, w).unwrap();
            }
            Stamps {
                inv: inv_weight(w),
                ..Stamps::default()
            }
        })
        .collect()
}

fn start(clock: &VirtualClock, st: &Stamps) -> u64 {
    if clock.is_ahead(st.f, st.f_epoch) {
        st.f
    } else {
        clock.now()
    }
}

/// The index of the minimum of `key` over `items` (wrap-safe key, then seq).
fn argmin(items: impl Iterator<Item = (usize, u64, u64)>) -> Option<usize> {
    items
        .fold(
            None,
            |best: Option<(usize, u64, u64)>, (i, k, s)| match best {
                Some((_, bk, bs)) if vt_lt(bk, k) || (bk == k && bs < s) => best,
                _ => Some((i, k, s)),
            },
        )
        .map(|b| b.0)
}

struct RefWf2q {
    fl: Vec<Stamps>,
    clock: VirtualClock,
    seq: u64,
}

impl RefWf2q {
    fn new(flows: &[(u32, u32)]) -> Self {
        let mut clock = VirtualClock::new();
        let fl = stamps(flows, &mut clock, true);
        RefWf2q { fl, clock, seq: 0 }
    }
    fn jump(&mut self) {
        let v = self.clock.now();
        let on = || self.fl.iter().enumerate().filter(|(_, s)| s.on);
        if on().next().is_some() && !on().any(|(_, s)| vt_le(s.s, v)) {
            let i = argmin(on().map(|(i, s)| (i, s.s, 0))).unwrap();
            self.clock.advance_to(self.fl[i].s);
        }
    }
}

impl Reference for RefWf2q {
    fn activate(&mut self, f: usize, len: u32) {
        let s = start(&self.clock, &self.fl[f]);
        self.seq += 1;
        let st = &mut self.fl[f];
        (st.s, st.f, st.head, st.seq, st.on) = (
            s,
            s.wrapping_add(u64::from(len) * st.inv),
            len,
            self.seq,
            true,
        );
        self.jump();
    }
    fn peek(&mut self) -> Option<usize> {
        let v = self.clock.now();
        argmin(
            self.fl
                .iter()
                .enumerate()
                .filter(|(_, s)| s.on && vt_le(s.s, v))
                .map(|(i, s)| (i, s.f, s.seq)),
        )
    }
    fn served(&mut self, f: usize, next: Option<u32>) {
        let st = &mut self.fl[f];
        self.clock.serve(st.head);
        st.s = st.f;
        match next {
            Some(l) => {
                self.seq += 1;
                (st.f, st.head, st.seq) = (st.s.wrapping_add(u64::from(l) * st.inv), l, self.seq);
            }
            None => {
                st.on = false;
                st.f_epoch = self.clock.epoch_of(st.f);
            }
        }
        self.jump();
        if self.fl.iter().all(|s| !s.on) {
            self.clock.on_idle();
        }
    }
}

struct RefStfq {
    fl: Vec<Stamps>,
    clock: VirtualClock,
    max_finish: u64,
    seq: u64,
}

impl Reference for RefStfq {
    fn activate(&mut self, f: usize, len: u32) {
        if self.fl.iter().all(|s| !s.on) {
            self.max_finish = self.clock.now();
        }
        let s = start(&self.clock, &self.fl[f]);
        self.seq += 1;
        let st = &mut self.fl[f];
        (st.s, st.f, st.seq, st.on) = (s, s.wrapping_add(u64::from(len) * st.inv), self.seq, true);
    }
    fn peek(&mut self) -> Option<usize> {
        argmin(
            self.fl
                .iter()
                .enumerate()
                .filter(|(_, s)| s.on)
                .map(|(i, s)| (i, s.s, s.seq)),
        )
    }
    fn served(&mut self, f: usize, next: Option<u32>) {
        let st = &mut self.fl[f];
        self.clock.advance_to(st.s);
        if vt_lt(self.max_finish, st.f) {
            self.max_finish = st.f;
        }
        st.s = st.f;
        match next {
            Some(l) => {
                self.seq += 1;
                (st.f, st.seq) = (st.s.wrapping_add(u64::from(l) * st.inv), self.seq);
            }
            None => {
                st.on = false;
                st.f_epoch = self.clock.epoch_of(st.f);
                if self.fl.iter().all(|s| !s.on) {
                    self.clock.advance_to(self.max_finish);
                }
            }
        }
    }
}

// ---------------------------------------------------------------- QFQ

/// QFQ's policy from its definitions (qfq.txt section 4): groups' rounded
/// timestamps recomputed from their flows, eligibility `S_i <= V`, blocking, and
/// the choice of the eligible, ready group of lowest index.
struct RefQfq {
    fl: Vec<Stamps>,
    group: Vec<u32>,
    clock: VirtualClock,
    seq: u64,
    max_packet: u32,
    /// Choices that differed from the definitional one (see `allows`).
    deviations: u64,
}

impl RefQfq {
    fn new(flows: &[(u32, u32)], max_packet: u32) -> Self {
        let mut clock = VirtualClock::new();
        let fl = stamps(flows, &mut clock, true);
        let group = flows
            .iter()
            .map(|&(w, l)| group_index(l.max(max_packet.div_ceil(SLOTS - 2)), inv_weight(w)))
            .collect();
        RefQfq {
            fl,
            group,
            clock,
            seq: 0,
            max_packet,
            deviations: 0,
        }
    }
    fn rounded(&self, f: usize) -> u64 {
        self.fl[f].s & !((1u64 << self.group[f]) - 1)
    }
    /// `(S_i, F_i)` of every backlogged group.
    fn groups(&self) -> Vec<Option<(u64, u64)>> {
        let mut g: Vec<Option<(u64, u64)>> = vec![None; 64];
        for f in (0..self.fl.len()).filter(|&f| self.fl[f].on) {
            let (i, rs) = (self.group[f] as usize, self.rounded(f));
            if g[i].is_none_or(|(s, _)| vt_lt(rs, s)) {
                g[i] = Some((rs, rs.wrapping_add(2 << i)));
            }
        }
        g
    }
    /// ER by definition: eligible, and no eligible group above finishes earlier.
    fn ready_eligible(&self) -> Vec<usize> {
        let g = self.groups();
        let v = self.clock.now();
        let eligible: Vec<usize> = (0..64)
            .filter(|&i| g[i].is_some_and(|(s, _)| vt_le(s, v)))
            .collect();
        eligible
            .iter()
            .copied()
            .filter(|&i| {
                !eligible
                    .iter()
                    .any(|&x| x > i && vt_lt(g[x].unwrap().1, g[i].unwrap().1))
            })
            .collect()
    }
    /// The flow group `gi` serves first: lowest rounded start, then FIFO.
    fn head_of(&self, gi: usize) -> Option<usize> {
        let s = self.groups()[gi]?.0;
        argmin(
            (0..self.fl.len())
                .filter(|&f| self.fl[f].on && self.group[f] as usize == gi && self.rounded(f) == s)
                .map(|f| (f, 0, self.fl[f].seq)),
        )
    }

    fn jump(&mut self) {
        let g = self.groups();
        let v = self.clock.now();
        let on: Vec<(usize, u64)> = (0..64).filter_map(|i| g[i].map(|(s, _)| (i, s))).collect();
        if !on.is_empty() && !on.iter().any(|&(_, s)| vt_le(s, v)) {
            let i = argmin(on.iter().map(|&(i, s)| (i, s, i as u64))).unwrap();
            self.clock.advance_to(g[i].unwrap().0);
        }
    }
}

impl Reference for RefQfq {
    fn activate(&mut self, f: usize, len: u32) {
        let v = self.clock.now();
        let ahead = self.clock.is_ahead(self.fl[f].f, self.fl[f].f_epoch);
        let mut s = if ahead { self.fl[f].f } else { v };
        let gi = self.group[f] as usize;
        let groups = self.groups();
        let system_empty = groups.iter().all(Option::is_none);
        if groups[gi].is_none() && !ahead {
            // Eq. (29) for a group becoming backlogged while it would be blocked.
            if let Some(&b) = self.ready_eligible().iter().find(|&&b| b > gi) {
                let fb = groups[b].unwrap().1;
                let rs = s & !((1u64 << gi) - 1);
                if vt_lt(fb, rs.wrapping_add(2 << gi)) && vt_lt(fb, v) {
                    let f_abs = eiffel_sched::vtime::absolute(self.fl[f].f, self.fl[f].f_epoch);
                    s = if f_abs > self.clock.absolute(fb) {
                        self.fl[f].f
                    } else {
                        fb
                    };
                }
            }
        }
        self.seq += 1;
        let st = &mut self.fl[f];
        (st.s, st.f, st.head, st.seq, st.on) = (
            s,
            s.wrapping_add(u64::from(len) * st.inv),
            len,
            self.seq,
            true,
        );
        if system_empty {
            let rs = self.rounded(f);
            self.clock.advance_to(rs);
        }
    }
    fn peek(&mut self) -> Option<usize> {
        let first = *self.ready_eligible().first()?;
        self.head_of(first)
    }

    /// QFQ's unblocking step moves every blocked group below the one served to the
    /// ready sets (qfq.txt Theorem 8), which in rare states leaves a group ready
    /// whose finish time exceeds a higher ready group's by less than `L` (see the
    /// qfq module docs). The scheduler's choice is accepted if it is the
    /// definitional one, or the head flow of an eligible group finishing less than
    /// `L + 2 sigma` after the definitional group.
    fn allows(&mut self, got: Option<usize>) -> Result<(), String> {
        let want = self.peek();
        if got == want {
            return Ok(());
        }
        let (Some(g), Some(w)) = (got, want) else {
            return Err(format!("chose {got:?}, reference {want:?}"));
        };
        let groups = self.groups();
        let (gi, wi) = (self.group[g] as usize, self.group[w] as usize);
        let (gs, gf) = groups[gi].unwrap();
        let wf = groups[wi].unwrap().1;
        let l = ((u128::from(self.max_packet) << 40).div_ceil(u128::from(self.clock.weight_sum())))
            as u64;
        let slack = l.wrapping_add(2 << gi);
        let ok = vt_le(gs, self.clock.now())
            && self.head_of(gi) == Some(g)
            && vt_le(gf, wf.wrapping_add(slack));
        if !ok {
            return Err(format!("chose flow {g} (group {gi}, F={gf}), reference flow {w} (group {wi}, F={wf}), L={l}"));
        }
        self.deviations += 1;
        Ok(())
    }
    fn served(&mut self, f: usize, next: Option<u32>) {
        let st = &mut self.fl[f];
        self.clock.serve(st.head);
        st.s = st.f;
        match next {
            Some(l) => {
                self.seq += 1;
                (st.f, st.head, st.seq) = (st.s.wrapping_add(u64::from(l) * st.inv), l, self.seq);
            }
            None => {
                st.on = false;
                st.f_epoch = self.clock.epoch_of(st.f);
            }
        }
        self.jump();
        if self.fl.iter().all(|s| !s.on) {
            self.clock.on_idle();
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn drr_matches_reference(sc in scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Drr::new(n, sc.capacity).unwrap(), RefDrr::new(&sc.flows))?;
    }

    #[test]
    fn wf2q_matches_reference(sc in scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Wf2qPlus::new(n, sc.capacity).unwrap(), RefWf2q::new(&sc.flows))?;
    }

    #[test]
    fn stfq_matches_reference(sc in scenario()) {
        let n = sc.flows.len() as u32;
        let mut clock = VirtualClock::new();
        let fl = stamps(&sc.flows, &mut clock, false);
        check(&sc, Stfq::new(n, sc.capacity).unwrap(), RefStfq { fl, clock, max_finish: 0, seq: 0 })?;
    }

    #[test]
    fn qfq_matches_reference(sc in scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Qfq::with_max_packet(n, sc.capacity, 1500).unwrap(), RefQfq::new(&sc.flows, 1500))?;
    }

    #[test]
    fn qfq_dense_matches_reference(sc in dense_scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Qfq::with_max_packet(n, sc.capacity, 1500).unwrap(), RefQfq::new(&sc.flows, 1500))?;
    }

    #[test]
    fn qfq_skewed_matches_reference(sc in skewed_scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Qfq::with_max_packet(n, sc.capacity, 1500).unwrap(), RefQfq::new(&sc.flows, 1500))?;
    }

    #[test]
    fn qfq_with_large_max_packet_matches_reference(sc in scenario()) {
        let n = sc.flows.len() as u32;
        check(&sc, Qfq::new(n, sc.capacity).unwrap(), RefQfq::new(&sc.flows, 65536))?;
    }
}

#[test]
fn admission_drops_are_counted_by_reason() {
    let mut q = Qfq::with_max_packet(4, 2, 1500).unwrap();
    q.add_flow(0, FlowConfig::weight(1).max_packet(100).limit(1))
        .unwrap();
    q.add_flow(1, FlowConfig::weight(1)).unwrap();
    let reasons: Vec<_> = [
        Packet::new(3, 10),
        Packet::new(9, 10),
        Packet::new(0, 101),
        Packet::new(0, 100),
        Packet::new(0, 100),
        Packet::new(1, 100),
        Packet::new(1, 100),
    ]
    .into_iter()
    .map(|p| q.enqueue(p, 0).err().map(|d| d.reason))
    .collect();
    assert_eq!(
        reasons,
        [
            Some(DropReason::UnknownFlow),
            Some(DropReason::UnknownFlow),
            Some(DropReason::TooLarge),
            None,
            Some(DropReason::LeafFull),
            None,
            Some(DropReason::QueueFull),
        ]
    );
    let c = q.counters();
    assert_eq!(
        (c.enqueued, c.dropped_total(), q.backlog().packets),
        (7, 5, 2)
    );
    assert_eq!(q.backlog().bytes, 200);
    assert_eq!(q.flow_backlog(0).packets, 1);
    assert!(matches!(
        q.remove_flow(0),
        Err(eiffel_sched::ConfigError::FlowBusy {
            flow: 0,
            packets: 1
        })
    ));
    q.check_invariants();
}

#[test]
fn flows_can_be_removed_and_added_back() {
    for mut s in [
        Box::new(Qfq::new(3, 64).unwrap()) as Box<dyn FlowScheduler>,
        Box::new(Wf2qPlus::new(3, 64).unwrap()),
        Box::new(Drr::new(3, 64).unwrap()),
        Box::new(Stfq::new(3, 64).unwrap()),
    ] {
        for f in 0..3 {
            s.add_flow(f, FlowConfig::weight(f + 1)).unwrap();
        }
        for round in 0..50u32 {
            for f in 0..3 {
                s.enqueue(Packet::new(f, 100 + round), 0).unwrap();
            }
            // Remove an idle flow while others are backlogged, then add it back.
            s.dequeue(0).unwrap();
            s.dequeue(0).unwrap();
            let idle = (0..3).find(|&f| s.flow_backlog(f).packets == 0);
            if let Some(f) = idle {
                s.remove_flow(f).unwrap();
                assert_eq!(
                    s.enqueue(Packet::new(f, 10), 0).unwrap_err().reason,
                    DropReason::UnknownFlow
                );
                s.add_flow(f, FlowConfig::weight(round % 7 + 1)).unwrap();
            }
        }
        while s.dequeue(0).is_some() {}
        let c = s.counters();
        assert_eq!(c.enqueued, c.dequeued + c.dropped_total(), "{}", s.name());
    }
}

/// Few flows with small, close weights and a mix of 64- and 1500-byte packets,
/// drained and refilled at random: the conditions under which QFQ's rarer
/// transitions happen (groups entering EB or IB at activation, the back-shift of
/// eq. (29), unblocking of IB groups). Seed 7239 reaches the state of deviation 8
/// of the qfq module (a group made ready by `unblock_groups` while finishing after
/// a ready group above it); `RefQfq::allows` accepts it within the derived slack.
#[test]
fn qfq_churn_matches_reference() {
    use rand::{rngs::SmallRng, Rng, SeedableRng};
    let mut deviations = 0;
    for seed in (0..CHURN_SEEDS).chain([7239]) {
        let mut rng = SmallRng::seed_from_u64(seed);
        let n = rng.gen_range(2..=6);
        let flows: Vec<(u32, u32)> = (0..n)
            .map(|_| {
                (
                    rng.gen_range(1..=64),
                    [64, 256, 1024, 1500][rng.gen_range(0..4)],
                )
            })
            .collect();
        let p_enqueue = rng.gen_range(0.3..0.7);
        let ops: Vec<Option<(usize, u32)>> = (0..300)
            .map(|_| {
                rng.gen_bool(p_enqueue).then(|| {
                    let f = rng.gen_range(0..flows.len());
                    let l = flows[f].1;
                    (
                        f,
                        if rng.gen_bool(0.5) {
                            l
                        } else {
                            rng.gen_range(1..=l)
                        },
                    )
                })
            })
            .collect();
        let sc = Scenario {
            flows,
            ops,
            capacity: 64,
        };
        let mut reference = RefQfq::new(&sc.flows, 1500);
        let q = Qfq::with_max_packet(sc.flows.len() as u32, sc.capacity, 1500).unwrap();
        check(&sc, q, &mut reference).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        deviations += reference.deviations;
    }
    assert!(
        deviations >= 1,
        "seed 7239 no longer reaches the unblocking state"
    );
}

const CHURN_SEEDS: u64 = 100;
