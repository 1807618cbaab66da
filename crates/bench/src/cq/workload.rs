//! The workload of `eiffel bench cq` and of its criterion bench
//! (`crates/bench/benches/cq.rs`): one per-flow leaf of the policy tree in steady
//! state, each step one enqueue and one dequeue.
//!
//! A fixed pseudo-random sequence (xorshift64*) picks flows (uniform), lengths (64
//! to 1500 bytes) and EDF slacks (10 us to 1 ms); time advances by each packet's
//! transmission at 10 Gbit/s, so deadlines and rounds move as on a link. The
//! ranked baselines run on a cffs, the `cq-*` disciplines on their calendar.

use std::hint::black_box;

use eiffel_queue::QueueKind;
use eiffel_sched::tree::{
    CalendarPolicy, Discipline, EdfRotation, NodeSpec, PerFlow, QueueChoice, TreeSpec,
};
use eiffel_sched::{ConfigError, Nanos, Packet, PolicyTree, Scheduler};

/// Packets queued per flow in steady state.
pub const BACKLOG_PER_FLOW: u32 = 8;

/// `cq-wfq` with its default quantum (one MTU per round).
#[must_use]
pub fn cq_wfq() -> Discipline {
    Discipline::calendar(CalendarPolicy::Wfq { quantum: None })
}

/// `cq-edf` with its default 10 us days, following the clock.
#[must_use]
pub fn cq_edf() -> Discipline {
    Discipline::calendar(CalendarPolicy::Edf {
        period: None,
        rotation: EdfRotation::Clock,
    })
}

/// The cases: name, the exact discipline, its calendar counterpart.
#[must_use]
pub fn cases() -> [(&'static str, Discipline, Discipline); 2] {
    [
        ("wfq", Discipline::WFQ, cq_wfq()),
        ("edf", Discipline::EDF, cq_edf()),
    ]
}

/// The packet source: xorshift64* picks flows, lengths and slacks.
#[derive(Debug, Clone)]
pub struct Generator {
    state: u64,
    flows: u64,
    class: u32,
}

impl Generator {
    /// A source over `flows` flows of leaf `class`.
    #[must_use]
    pub fn new(flows: u32, class: u32) -> Self {
        Generator {
            state: 0x9e37_79b9_7f4a_7c15 ^ u64::from(flows),
            flows: u64::from(flows),
            class,
        }
    }

    #[inline]
    fn next(&mut self) -> u64 {
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// The next packet, arriving at `now`.
    #[inline]
    pub fn packet(&mut self, now: Nanos) -> Packet {
        let r = self.next();
        let flow = (((r >> 32) * self.flows) >> 32) as u32;
        let len = 64 + ((r & 0xffff) % 1437) as u32;
        let mut p = Packet::new(flow, len).class(self.class).at(now);
        p.deadline = now + 10_000 + (r >> 16 & 0xffff) * 15;
        p
    }
}

/// A tree of one per-flow leaf `flows` of `flows` flows ordered by `d` (ranked
/// disciplines on a cffs).
///
/// # Errors
/// A configuration the tree refuses.
pub fn tree(d: &Discipline, flows: u32) -> Result<PolicyTree, ConfigError> {
    let mut spec = TreeSpec::new(flows * BACKLOG_PER_FLOW + 64);
    let mut leaf = NodeSpec::new("flows", None);
    leaf.discipline = d.clone().on(QueueChoice::kind(QueueKind::Cffs));
    leaf.per_flow = Some(PerFlow {
        max_flows: flows,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    PolicyTree::new(spec)
}

/// A leaf in steady state: [`BACKLOG_PER_FLOW`] packets per flow queued.
#[derive(Debug)]
pub struct Steady {
    /// The tree.
    pub tree: PolicyTree,
    gen: Generator,
    now: Nanos,
}

impl Steady {
    /// [`tree`] of `d` over `flows` flows, filled.
    ///
    /// # Errors
    /// A configuration the tree refuses, or a packet refused while filling.
    pub fn new(d: &Discipline, flows: u32) -> Result<Steady, Box<dyn std::error::Error>> {
        let mut tree = tree(d, flows)?;
        let class = tree.leaf("flows").ok_or("the bench policy has no leaf")?;
        let mut gen = Generator::new(flows, class);
        for _ in 0..flows * BACKLOG_PER_FLOW {
            if tree.enqueue(gen.packet(0), 0).is_err() {
                return Err("the bench policy refused a packet while filling".into());
            }
        }
        Ok(Steady { tree, gen, now: 0 })
    }

    /// One enqueue and one dequeue; time advances by the dequeued packet's
    /// transmission at 10 Gbit/s. Returns the bytes dequeued.
    #[inline]
    pub fn step(&mut self) -> u64 {
        let now = self.now;
        if let Err(d) = self.tree.enqueue(self.gen.packet(now), now) {
            black_box(d.packet);
        }
        match self.tree.dequeue(now) {
            Some(p) => {
                // 10 Gbit/s: 0.8 ns per byte.
                self.now += u64::from(p.len) * 4 / 5;
                u64::from(p.len)
            }
            None => 0,
        }
    }

    /// `n` steps.
    #[inline]
    pub fn steps(&mut self, n: u64) {
        let mut sink = 0u64;
        for _ in 0..n {
            sink = sink.wrapping_add(self.step());
        }
        black_box(sink);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_spreads_flows_and_deadlines() {
        let mut g = Generator::new(4, 0);
        let mut seen = [0u32; 4];
        for _ in 0..4000 {
            let p = g.packet(1_000);
            seen[p.flow as usize] += 1;
            assert!((64..=1500).contains(&p.len));
            assert!(
                (11_000..=1_000_000 + 1_000).contains(&p.deadline),
                "{}",
                p.deadline
            );
        }
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }
}
