//! Every lookup path of a [`PipeTree`](super::PipeTree) through the positions
//! it holds (miri runs these tests too: its stores skip bounds checks).

use super::PipeTree;
use crate::time::Rate;
use crate::tree::{Discipline, NodeSpec, RateLimit, TreeSpec};
use crate::{Packet, Scheduler};

fn limit(mbps: u64) -> Option<RateLimit> {
    Some(RateLimit {
        rate: Rate::from_mbps(mbps),
        burst: 3_000,
    })
}

/// A `drr` root over two `drr` subports over three `ets` pipes each, every
/// pipe two strict classes and three queues sharing a level by weight; limits
/// at the root, a subport, a pipe and a class. Returns the spec and its leaves.
fn spec() -> (TreeSpec, Vec<u32>) {
    let mut spec = TreeSpec::new(512);
    let mut root = NodeSpec::new("port", None);
    root.discipline = Discipline::DRR;
    root.limit = limit(900);
    let root = spec.add(root);
    let mut leaves = Vec::new();
    for s in 0..2 {
        let mut sub = NodeSpec::new(format!("s{s}"), Some(root));
        sub.discipline = Discipline::DRR;
        sub.limit = if s == 0 { limit(400) } else { None };
        let sub = spec.add(sub);
        for p in 0..3 {
            let mut pipe = NodeSpec::new(format!("s{s}p{p}"), Some(sub));
            pipe.discipline = Discipline::Ets;
            pipe.limit = if p == 1 { limit(100) } else { None };
            let pipe = spec.add(pipe);
            for q in 0..5u32 {
                let mut leaf = NodeSpec::new(format!("s{s}p{p}q{q}"), Some(pipe));
                leaf.priority = q.min(2);
                leaf.weight = q.saturating_sub(1).max(1);
                leaf.capacity = Some(16);
                leaf.limit = if q == 0 { limit(50) } else { None };
                leaves.push(spec.add(leaf) as u32);
            }
        }
    }
    (spec, leaves)
}

/// Bursts enqueued with their prefetch stages, dequeues through remembered
/// leaves and descents, limits throttling nodes at every level and the
/// shaper releasing them, drops of full leaves: every packet leaves once or
/// is counted dropped.
#[test]
fn every_packet_in_leaves_once_through_every_path() {
    let (spec, leaves) = spec();
    let mut tree = PipeTree::new(spec).expect("the shape");
    tree.prefetching = true;
    let (mut now, mut seen, mut dropped, mut held) = (0u64, vec![false; 600], 0usize, 0);
    for round in 0..20u32 {
        let burst: Vec<Packet> = (0..30)
            .map(|i| {
                let n = round * 30 + i;
                Packet::new(0, 64 + n * 37 % 1400)
                    .class(leaves[(n * 7 % 30) as usize])
                    .buffer(n)
            })
            .collect();
        tree.enqueue_burst(&burst, now, |_| dropped += 1);
        now += 10_000;
        for _ in 0..20 {
            let Some(p) = tree.dequeue(now) else {
                held += usize::from(tree.backlog().packets > 0);
                break;
            };
            assert!(!std::mem::replace(&mut seen[p.buffer as usize], true));
        }
        tree.check_invariants();
    }
    for _ in 0..2_000 {
        now += 100_000;
        while let Some(p) = tree.dequeue(now) {
            assert!(!std::mem::replace(&mut seen[p.buffer as usize], true));
        }
    }
    tree.check_invariants();
    assert_eq!(tree.backlog().packets, 0);
    assert!(dropped > 0, "some leaves filled");
    assert!(held > 0, "the limits held the backlog");
    assert_eq!(seen.iter().filter(|&&s| s).count() + dropped, 600);
}

/// A leaf kept from emptying for many times its capacity: its end's bound on
/// its room runs out again and again and is counted anew from its line, and
/// it refuses an arrival exactly when it holds its capacity.
#[test]
fn a_leaf_that_never_empties_takes_exactly_its_capacity() {
    let (spec, leaves) = spec();
    let mut tree = PipeTree::new(spec).expect("the shape");
    // Subport s1's pipe p0, a shared-level queue: no limit but the port's.
    let leaf = leaves[18];
    let pkt = |i: u32| Packet::new(i, 100).class(leaf);
    let (mut held, mut full) = (0u32, 0u32);
    for i in 0..16 {
        assert!(tree.enqueue(pkt(i), 0).is_ok());
        held += 1;
    }
    for i in 16..160u32 {
        let now = u64::from(i) * 10_000;
        if i % 3 == 0 {
            assert!(tree.dequeue(now).is_some());
            held -= 1;
        }
        match tree.enqueue(pkt(i), now) {
            Ok(()) => held += 1,
            Err(d) => {
                assert_eq!(held, 16, "refused at {held} packets");
                assert_eq!(d.reason, crate::DropReason::LeafFull);
                full += 1;
            }
        }
        assert!(held >= 15, "the leaf stays backlogged");
        if i % 8 == 0 {
            tree.check_invariants();
        }
    }
    tree.check_invariants();
    assert_eq!(full, 96, "the leaf was full at two arrivals of three");
    assert_eq!(tree.backlog().packets, u64::from(held));
}

/// A run through a pipe: the dequeues after the first at one instant stop
/// at the pipe, the views count the deferred sends above it, and an enqueue
/// applies them.
#[test]
fn a_run_defers_the_levels_above_a_pipe_and_settles_them() {
    let (spec, leaves) = spec();
    let mut tree = PipeTree::new(spec).expect("the shape");
    // Subport s1's pipe p0 (no limit), its three shared-level queues.
    for i in 0..12 {
        let pkt = Packet::new(i, 200).class(leaves[17 + (i % 3) as usize]);
        assert!(tree.enqueue(pkt, 0).is_ok());
    }
    for _ in 0..6 {
        assert!(tree.dequeue(0).is_some());
    }
    assert_ne!(tree.run.top, super::NONE, "a run started");
    assert_eq!(tree.run.sent().packets, 5, "the dequeues after the first");
    let root = tree.spec().find("port").expect("the root");
    assert_eq!(tree.nodes[0].sent.packets, 1, "the root's count waits");
    assert_eq!(tree.node_counters(root).dequeued, 6, "the view adds it");
    assert_eq!(tree.node_backlog(root).packets, 6);
    tree.check_invariants();
    let pkt = Packet::new(12, 200).class(leaves[0]);
    assert!(tree.enqueue(pkt, 1).is_ok());
    assert_eq!(tree.run.top, super::NONE, "the enqueue ended the run");
    assert_eq!(tree.nodes[0].sent.packets, 6);
    assert_eq!(tree.nodes[0].backlog.packets, 7);
    tree.check_invariants();
}

/// A burst dequeue sends what as many single dequeues send, and stops where
/// they would return nothing.
#[test]
fn a_burst_dequeue_sends_what_single_dequeues_send() {
    let (spec, leaves) = spec();
    let mut one = PipeTree::new(spec.clone()).expect("the shape");
    let mut burst = PipeTree::new(spec).expect("the shape");
    let mut out = [Packet::default(); 32];
    let mut now = 0u64;
    for round in 0..if cfg!(miri) { 8 } else { 40u32 } {
        let pkts: Vec<Packet> = (0..24)
            .map(|i| {
                let n = round * 24 + i;
                Packet::new(n, 64 + n * 53 % 1400)
                    .class(leaves[(n * 11 % 30) as usize])
                    .buffer(n)
            })
            .collect();
        let (mut da, mut db) = (0, 0);
        one.enqueue_burst(&pkts, now, |_| da += 1);
        burst.enqueue_burst(&pkts, now, |_| db += 1);
        assert_eq!(da, db);
        now += 20_000;
        let got = burst.dequeue_burst(now, &mut out);
        for (k, p) in out[..got].iter().enumerate() {
            assert_eq!(
                one.dequeue(now).as_ref(),
                Some(p),
                "packet {k} of round {round}"
            );
        }
        if got < out.len() {
            assert_eq!(one.dequeue(now), None, "the burst stopped early");
        }
        assert_eq!(one.backlog(), burst.backlog());
    }
    one.check_invariants();
    burst.check_invariants();
}

/// Every node's counters, backlog and throttling, as the views show them.
fn observed(t: &PipeTree) -> Vec<(crate::Counters, crate::Backlog, bool)> {
    (0..t.len())
        .map(|i| (t.node_counters(i), t.node_backlog(i), t.is_throttled(i)))
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 64,
        ..Default::default()
    })]

    /// A burst enqueue with its prefetch stages and its activations held to
    /// the end of the burst leaves the tree as its packets one by one do:
    /// the same drops, the same departures, the same counts, backlogs and
    /// throttling at every node after every burst and dequeue, through
    /// leaves that fill, limits that hold and release, several arrivals at
    /// one empty leaf in a burst, and bursts longer than the activations
    /// held back at once.
    // Under miri the burst path's lookups are those of
    // `every_packet_in_leaves_once_through_every_path`; a case takes a minute.
    #[cfg_attr(miri, ignore)]
    #[test]
    fn deferred_activations_change_nothing(
        steps in proptest::collection::vec(
            (
                proptest::collection::vec((0usize..30, 64u32..1500), 0..70),
                0usize..40,
                0u64..40_000,
            ),
            1..40,
        )
    ) {
        let (spec, leaves) = spec();
        let mut staged = PipeTree::new(spec.clone()).expect("the shape");
        staged.prefetching = true;
        let mut single = PipeTree::new(spec).expect("the shape");
        single.prefetching = false;
        let (mut now, mut id) = (0u64, 0u32);
        for (arrivals, dequeues, dt) in steps {
            now += dt;
            let pkts: Vec<Packet> = arrivals
                .iter()
                .map(|&(leaf, len)| {
                    id += 1;
                    Packet::new(id, len).class(leaves[leaf]).buffer(id)
                })
                .collect();
            let (mut da, mut db) = (Vec::new(), Vec::new());
            let qa = staged.enqueue_burst(&pkts, now, |d| da.push(d));
            let qb = single.enqueue_burst(&pkts, now, |d| db.push(d));
            proptest::prop_assert_eq!(qa, qb);
            proptest::prop_assert_eq!(da, db);
            proptest::prop_assert_eq!(observed(&staged), observed(&single));
            for _ in 0..dequeues {
                proptest::prop_assert_eq!(staged.dequeue(now), single.dequeue(now));
            }
            proptest::prop_assert_eq!(observed(&staged), observed(&single));
            proptest::prop_assert_eq!(staged.next_ready(now), single.next_ready(now));
            staged.check_invariants();
        }
    }
}
