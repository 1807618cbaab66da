//! A user-defined [`Transaction`] attached to a policy tree: least attained
//! service over per-flow leaf flows, written in Rust and checked against its
//! definition (every packet sent belongs to a backlogged flow that has sent the
//! fewest bytes so far; flows keep their order), with the tree's accounting
//! checked after every operation.

use std::collections::{HashMap, VecDeque};

use eiffel_queue::QueueKind;
use eiffel_sched::tree::{Discipline, NodeSpec, PerFlow, QueueChoice, Transaction, TreeSpec, Unit};
use eiffel_sched::{ConfigError, Nanos, Packet, PolicyTree, Scheduler};
use proptest::prelude::*;

/// Least attained service: a flow's rank is the bytes it has sent, kept in the
/// unit's free `finish` field.
#[derive(Debug)]
struct LeastAttained;

impl Transaction for LeastAttained {
    fn name(&self) -> &str {
        "least-attained"
    }
    fn on_activate(&mut self, unit: &mut Unit, _: &Packet, _: Nanos) -> u64 {
        unit.finish
    }
    fn on_dequeue(&mut self, unit: &mut Unit, sent: &Packet, _: Option<&Packet>, _: Nanos) -> u64 {
        unit.finish += u64::from(sent.len);
        unit.finish
    }
}

fn tree() -> PolicyTree {
    let mut spec = TreeSpec::new(4096);
    let mut leaf = NodeSpec::new("flows", None);
    leaf.discipline = Discipline::FIFO.on(QueueChoice::kind(QueueKind::BinaryHeap));
    leaf.per_flow = Some(PerFlow {
        max_flows: 16,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    let mut tree = PolicyTree::new(spec).unwrap();
    tree.set_transaction("flows", Box::new(LeastAttained))
        .unwrap();
    tree
}

#[test]
fn a_transaction_replaces_only_an_idle_ranked_node() {
    let mut t = tree();
    assert_eq!(t.node(0).discipline.as_deref(), Some("least-attained"));
    let leaf = t.leaf("flows").unwrap();
    t.enqueue(Packet::new(0, 100).class(leaf), 0).unwrap();
    assert!(matches!(
        t.set_transaction("flows", Box::new(LeastAttained)),
        Err(ConfigError::NodeBusy { .. })
    ));
    assert!(matches!(
        t.set_transaction("nope", Box::new(LeastAttained)),
        Err(ConfigError::NoSuchNode { .. })
    ));
}

proptest! {
    #[test]
    fn least_attained_service_in_rust(
        ops in prop::collection::vec((any::<bool>(), 0u32..16, 64u32..=1500), 1..800)
    ) {
        let mut t = tree();
        let leaf = t.leaf("flows").unwrap();
        let mut sent: HashMap<u32, u64> = HashMap::new();
        let mut queued: HashMap<u32, VecDeque<u32>> = HashMap::new();
        for (i, &(arrive, flow, len)) in ops.iter().enumerate() {
            if arrive {
                let p = Packet::new(flow, len).class(leaf).buffer(i as u32);
                t.enqueue(p, 0).unwrap();
                queued.entry(flow).or_default().push_back(i as u32);
            } else if let Some(p) = t.dequeue(0) {
                let least = queued
                    .iter()
                    .filter(|(_, q)| !q.is_empty())
                    .map(|(f, _)| sent.get(f).copied().unwrap_or(0))
                    .min();
                prop_assert_eq!(Some(sent.get(&p.flow).copied().unwrap_or(0)), least);
                prop_assert_eq!(queued.get_mut(&p.flow).unwrap().pop_front(), Some(p.buffer));
                *sent.entry(p.flow).or_default() += u64::from(p.len);
            } else {
                prop_assert!(queued.values().all(VecDeque::is_empty));
            }
            t.check_invariants();
        }
        let c = t.counters();
        prop_assert_eq!(c.enqueued, c.dequeued + t.backlog().packets);
    }
}
