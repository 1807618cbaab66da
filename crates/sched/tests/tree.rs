//! The policy tree against the definitions of its disciplines, on an emulated
//! constant-rate link in virtual time.

use eiffel_sched::tree::{
    Discipline, NodeSpec, PerFlow, QueueChoice, RateLimit, ShaperSpec, TreeSpec,
};
use eiffel_sched::{DropReason, Duration, Nanos, Packet, PolicyTree, Rate, Scheduler};
use proptest::prelude::*;

/// One arrival: time, leaf name, packet.
#[derive(Clone, Copy, Debug)]
struct Arrival {
    at: Nanos,
    pkt: Packet,
}

/// A departure: time it started on the wire and the packet.
#[derive(Clone, Copy, Debug)]
struct Departure {
    at: Nanos,
    pkt: Packet,
}

/// Runs `arrivals` (sorted) through `tree` on a link of `rate` bits/s until
/// `until`, checking invariants every `check_every` steps; returns departures.
fn drive(
    tree: &mut PolicyTree,
    arrivals: &[Arrival],
    rate: u64,
    until: Nanos,
    check_every: usize,
) -> Vec<Departure> {
    let mut out = Vec::new();
    let mut now: Nanos = 0;
    let mut next = 0usize;
    let mut link_free: Nanos = 0;
    let mut steps = 0usize;
    loop {
        while next < arrivals.len() && arrivals[next].at <= now {
            let _ = tree.enqueue(arrivals[next].pkt, arrivals[next].at.max(now));
            next += 1;
        }
        steps += 1;
        if check_every > 0 && steps % check_every == 0 {
            tree.check_invariants();
        }
        if now >= until {
            break;
        }
        if link_free <= now {
            if let Some(pkt) = tree.dequeue(now) {
                out.push(Departure { at: now, pkt });
                link_free = now + u64::from(pkt.len) * 8 * 1_000_000_000 / rate;
                continue;
            }
        }
        // Sleep until the link frees, the next arrival, or the tree's next release.
        let mut wake = until;
        if next < arrivals.len() {
            wake = wake.min(arrivals[next].at);
        }
        if link_free > now {
            wake = wake.min(link_free);
        } else if let Some(t) = tree.next_ready(now) {
            wake = wake.min(t.max(now + 1));
        }
        now = wake.max(now);
        if wake == now
            && link_free <= now
            && next >= arrivals.len()
            && tree.next_ready(now).is_none()
        {
            break;
        }
    }
    tree.check_invariants();
    out
}

/// Greedy sources: `n` packets of `len` bytes for each leaf, all at time 0 (flow = leaf
/// index, class = leaf id).
fn backlog(tree: &PolicyTree, leaves: &[&str], n: usize, len: u32) -> Vec<Arrival> {
    let mut v = Vec::new();
    for k in 0..n {
        for (i, name) in leaves.iter().enumerate() {
            let class = tree.leaf(name).expect("leaf exists");
            let mut pkt = Packet::new(i as u32, len).class(class);
            pkt.buffer = k as u32;
            v.push(Arrival { at: 0, pkt });
        }
    }
    v
}

fn bytes_of(deps: &[Departure], class: u32) -> u64 {
    deps.iter()
        .filter(|d| d.pkt.class == class)
        .map(|d| u64::from(d.pkt.len))
        .sum()
}

fn spec_with(root: Discipline, leaves: &[(&str, u32, u32)]) -> TreeSpec {
    let mut spec = TreeSpec::new(100_000);
    let mut r = NodeSpec::new("root", None);
    r.discipline = root;
    let root_i = spec.add(r);
    for &(name, weight, priority) in leaves {
        let mut n = NodeSpec::new(name, Some(root_i));
        n.weight = weight;
        n.priority = priority;
        spec.add(n);
    }
    spec
}

#[test]
fn wfq_shares_follow_weights() {
    let spec = spec_with(Discipline::WFQ, &[("a", 1, 0), ("b", 2, 0), ("c", 5, 0)]);
    let mut tree = PolicyTree::new(spec).unwrap();
    let arrivals = backlog(&tree, &["a", "b", "c"], 20_000, 1000);
    // Stop while all three are still backlogged.
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, 100_000_000, 997);
    let total: u64 = ["a", "b", "c"]
        .iter()
        .map(|n| bytes_of(&deps, tree.leaf(n).unwrap()))
        .sum();
    for (name, w) in [("a", 1.0), ("b", 2.0), ("c", 5.0)] {
        let share = bytes_of(&deps, tree.leaf(name).unwrap()) as f64 / total as f64;
        let want = w / 8.0;
        assert!(
            (share - want).abs() / want < 0.01,
            "{name}: share {share:.4}, weight share {want:.4}"
        );
    }
}

#[test]
fn fair_queueing_cores_share_by_weight_as_node_disciplines() {
    for d in [Discipline::QFQ, Discipline::DRR, Discipline::WF2Q] {
        let spec = spec_with(d.clone(), &[("a", 1, 0), ("b", 2, 0), ("c", 5, 0)]);
        let mut tree = PolicyTree::new(spec).unwrap();
        assert_eq!(tree.node(0).discipline.as_deref(), Some(d.name()));
        let arrivals = backlog(&tree, &["a", "b", "c"], 20_000, 1000);
        let deps = drive(&mut tree, &arrivals, 1_000_000_000, 100_000_000, 991);
        let total: u64 = ["a", "b", "c"]
            .iter()
            .map(|n| bytes_of(&deps, tree.leaf(n).unwrap()))
            .sum();
        for (name, w) in [("a", 1.0), ("b", 2.0), ("c", 5.0)] {
            let share = bytes_of(&deps, tree.leaf(name).unwrap()) as f64 / total as f64;
            let want = w / 8.0;
            assert!(
                (share - want).abs() / want < 0.01,
                "{}: {name} share {share:.4}, weight share {want:.4}",
                d.name()
            );
        }
    }
}

#[test]
fn qfq_root_over_a_strict_priority_child() {
    let mut spec = TreeSpec::new(100_000);
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::QFQ;
    let r = spec.add(root);
    spec.add(NodeSpec::new("x", Some(r)));
    let mut y = NodeSpec::new("y", Some(r));
    y.weight = 3;
    y.discipline = Discipline::STRICT;
    let yi = spec.add(y);
    spec.add(NodeSpec::new("y-hi", Some(yi)));
    let mut lo = NodeSpec::new("y-lo", Some(yi));
    lo.priority = 1;
    spec.add(lo);
    let mut tree = PolicyTree::new(spec).unwrap();
    let arrivals = backlog(&tree, &["x", "y-hi", "y-lo"], 10_000, 1500);
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, 50_000_000, 499);
    let (x, hi, lo) = (
        tree.leaf("x").unwrap(),
        tree.leaf("y-hi").unwrap(),
        tree.leaf("y-lo").unwrap(),
    );
    let (bx, bhi, blo) = (bytes_of(&deps, x), bytes_of(&deps, hi), bytes_of(&deps, lo));
    assert_eq!(
        blo, 0,
        "the low class waits while the high one is backlogged"
    );
    let ratio = bhi as f64 / bx as f64;
    assert!((ratio - 3.0).abs() / 3.0 < 0.01, "y:x = {ratio}");
}

#[test]
fn wfq_shares_with_mixed_packet_sizes() {
    let spec = spec_with(Discipline::WFQ, &[("small", 1, 0), ("large", 1, 0)]);
    let mut tree = PolicyTree::new(spec).unwrap();
    let mut arrivals = Vec::new();
    let (s, l) = (tree.leaf("small").unwrap(), tree.leaf("large").unwrap());
    for _ in 0..50_000 {
        arrivals.push(Arrival {
            at: 0,
            pkt: Packet::new(0, 64).class(s),
        });
    }
    for _ in 0..3_000 {
        arrivals.push(Arrival {
            at: 0,
            pkt: Packet::new(1, 1500).class(l),
        });
    }
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, 20_000_000, 0);
    let (bs, bl) = (bytes_of(&deps, s), bytes_of(&deps, l));
    let ratio = bs as f64 / bl as f64;
    assert!(
        (ratio - 1.0).abs() < 0.01,
        "equal weights must share bytes equally: {bs} vs {bl}"
    );
}

#[test]
fn strict_priority_never_serves_a_lower_class_while_a_higher_one_waits() {
    let spec = spec_with(
        Discipline::STRICT,
        &[("hi", 1, 0), ("mid", 1, 1), ("lo", 1, 2)],
    );
    let mut tree = PolicyTree::new(spec).unwrap();
    let classes = [
        tree.leaf("hi").unwrap(),
        tree.leaf("mid").unwrap(),
        tree.leaf("lo").unwrap(),
    ];
    let mut x = 7u64;
    let mut arrivals = Vec::new();
    for i in 0..20_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let level = (x % 3) as usize;
        arrivals.push(Arrival {
            at: i * 4_000,
            pkt: Packet::new(level as u32, 500 + (x % 1000) as u32).class(classes[level]),
        });
    }
    // Replay and check at every departure that nothing of higher priority was queued.
    let mut now = 0;
    let mut next = 0;
    let mut queued = [0i64; 3];
    let mut served = 0;
    while served < arrivals.len() {
        while next < arrivals.len() && arrivals[next].at <= now {
            tree.enqueue(arrivals[next].pkt, now).unwrap();
            queued[arrivals[next].pkt.flow as usize] += 1;
            next += 1;
        }
        match tree.dequeue(now) {
            Some(p) => {
                let level = p.flow as usize;
                assert!(
                    queued[..level].iter().all(|&q| q == 0),
                    "served level {level} while higher levels held {queued:?}"
                );
                queued[level] -= 1;
                served += 1;
                now += u64::from(p.len) * 8; // 1 Gbit/s
            }
            None => now = arrivals[next].at,
        }
    }
    tree.check_invariants();
}

/// Sent bytes never exceed rate * T + burst over any window (checked at every
/// departure against every earlier departure, the binding constraint being the
/// window that starts at a departure).
fn assert_conforms(
    deps: &[Departure],
    class_filter: impl Fn(&Packet) -> bool,
    limit: RateLimit,
    slack_ns: Nanos,
    what: &str,
) {
    let mine: Vec<&Departure> = deps.iter().filter(|d| class_filter(&d.pkt)).collect();
    let mut prefix = Vec::with_capacity(mine.len() + 1);
    prefix.push(0u64);
    for d in &mine {
        prefix.push(prefix.last().unwrap() + u64::from(d.pkt.len));
    }
    for j in 0..mine.len() {
        // Binary-search style sweep would do; the quadratic window is bounded by
        // checking windows starting at the last 200 departures.
        for i in j.saturating_sub(200)..=j {
            let bytes = prefix[j + 1] - prefix[i];
            let dt = mine[j].at - mine[i].at + slack_ns;
            let allowed = (u128::from(limit.rate.bps()) * u128::from(dt) / 8_000_000_000) as u64
                + limit.burst;
            assert!(
                bytes <= allowed,
                "{what}: {bytes} bytes in {} ns > {allowed}",
                mine[j].at - mine[i].at
            );
        }
    }
}

fn long_run_rate(
    deps: &[Departure],
    class_filter: impl Fn(&Packet) -> bool,
    from: Nanos,
    to: Nanos,
) -> f64 {
    let bytes: u64 = deps
        .iter()
        .filter(|d| d.at >= from && d.at < to && class_filter(&d.pkt))
        .map(|d| u64::from(d.pkt.len))
        .sum();
    bytes as f64 * 8.0 / ((to - from) as f64 / 1e9)
}

/// The Eiffel paper's Fig. 6: shares under a paced root, a 10 Mbit/s limit on an
/// internal node and a 7 Mbit/s limit on one of its leaves (two limits on one path).
#[test]
fn fig6_limits_hold_on_one_path_and_shares_split_the_rest() {
    let mut spec = TreeSpec::new(200_000);
    spec.shaper = ShaperSpec {
        horizon: Duration::from_nanos(100_000_000),
        slots: 100_000,
    };
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::WFQ;
    root.limit = Some(RateLimit {
        rate: Rate::from_bps(50_000_000),
        burst: 3000,
    });
    let r = spec.add(root);
    let mut left = NodeSpec::new("left", Some(r));
    left.weight = 3;
    let mut right = NodeSpec::new("right", Some(r));
    right.discipline = Discipline::WFQ;
    right.limit = Some(RateLimit {
        rate: Rate::from_bps(10_000_000),
        burst: 3000,
    });
    let _l = spec.add(left);
    let rr = spec.add(right);
    let mut r1 = NodeSpec::new("r1", Some(rr));
    r1.limit = Some(RateLimit {
        rate: Rate::from_bps(7_000_000),
        burst: 1500,
    });
    spec.add(r1);
    spec.add(NodeSpec::new("r2", Some(rr)));
    let mut tree = PolicyTree::new(spec).unwrap();
    let arrivals = backlog(&tree, &["left", "r1", "r2"], 30_000, 1500);
    let until = 2_000_000_000;
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, until, 4001);
    let (left, r1, r2) = (
        tree.leaf("left").unwrap(),
        tree.leaf("r1").unwrap(),
        tree.leaf("r2").unwrap(),
    );
    let slack = tree.shaper_granularity();
    let root_rate = long_run_rate(&deps, |_| true, 100_000_000, until);
    let right_rate = long_run_rate(
        &deps,
        |p| p.class == r1 || p.class == r2,
        100_000_000,
        until,
    );
    let r1_rate = long_run_rate(&deps, |p| p.class == r1, 100_000_000, until);
    assert!(
        (root_rate - 50e6).abs() / 50e6 < 0.01,
        "paced root at {root_rate}"
    );
    assert!(
        (right_rate - 10e6).abs() / 10e6 < 0.01,
        "internal limit at {right_rate}"
    );
    // r1 and r2 share right's 10 Mbit/s equally; r1's 7 Mbit/s limit does not bind.
    assert!((r1_rate - 5e6).abs() / 5e6 < 0.02, "r1 at {r1_rate}");
    assert_conforms(
        &deps,
        |_| true,
        RateLimit {
            rate: Rate::from_bps(50_000_000),
            burst: 3000,
        },
        slack,
        "root",
    );
    assert_conforms(
        &deps,
        |p| p.class == r1 || p.class == r2,
        RateLimit {
            rate: Rate::from_bps(10_000_000),
            burst: 3000,
        },
        slack,
        "right",
    );
    assert_conforms(
        &deps,
        |p| p.class == r1,
        RateLimit {
            rate: Rate::from_bps(7_000_000),
            burst: 1500,
        },
        slack,
        "r1",
    );
    assert!(bytes_of(&deps, left) > 0);
}

#[test]
fn leaf_limit_binds_below_an_internal_limit() {
    // r1 limited to 2 Mbit/s under right's 10: r1 gets 2, r2 gets the other 8.
    let mut spec = TreeSpec::new(200_000);
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::WFQ;
    let r = spec.add(root);
    let mut right = NodeSpec::new("right", Some(r));
    right.discipline = Discipline::WFQ;
    right.limit = Some(RateLimit {
        rate: Rate::from_bps(10_000_000),
        burst: 3000,
    });
    let rr = spec.add(right);
    let mut r1 = NodeSpec::new("r1", Some(rr));
    r1.limit = Some(RateLimit {
        rate: Rate::from_bps(2_000_000),
        burst: 1500,
    });
    spec.add(r1);
    spec.add(NodeSpec::new("r2", Some(rr)));
    let mut tree = PolicyTree::new(spec).unwrap();
    let arrivals = backlog(&tree, &["r1", "r2"], 20_000, 1000);
    let until = 2_000_000_000;
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, until, 0);
    let (r1, r2) = (tree.leaf("r1").unwrap(), tree.leaf("r2").unwrap());
    let a = long_run_rate(&deps, |p| p.class == r1, 100_000_000, until);
    let b = long_run_rate(&deps, |p| p.class == r2, 100_000_000, until);
    assert!((a - 2e6).abs() / 2e6 < 0.01, "r1 at {a}");
    assert!((b - 8e6).abs() / 8e6 < 0.01, "r2 at {b}");
    assert_conforms(
        &deps,
        |p| p.class == r1,
        RateLimit {
            rate: Rate::from_bps(2_000_000),
            burst: 1500,
        },
        tree.shaper_granularity(),
        "r1",
    );
}

#[test]
fn pfabric_serves_the_flow_with_the_fewest_remaining_bytes_in_order() {
    let mut spec = TreeSpec::new(10_000);
    let mut leaf = NodeSpec::new("flows", None);
    // One bucket per 1000-byte packet: ranks compare in remaining packets.
    leaf.discipline = Discipline::PFABRIC.on(QueueChoice {
        granularity: Some(1000),
        ..QueueChoice::AUTO
    });
    leaf.per_flow = Some(PerFlow {
        max_flows: 64,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    let mut tree = PolicyTree::new(spec).unwrap();
    let class = tree.leaf("flows").unwrap();
    // Flow f has f+1 packets; remaining = bytes left including the packet.
    let mut x = 3u64;
    let mut pending: Vec<(u32, u64, u64)> = Vec::new(); // (flow, seq, remaining)
    for f in 0..40u32 {
        let n = 1 + (f as u64 * 7) % 23;
        for k in 0..n {
            pending.push((f, k, (n - k) * 1000));
        }
    }
    // Interleave arrivals randomly but keep each flow's packets in order.
    let mut order = Vec::new();
    let mut cursors: Vec<usize> = Vec::new();
    let mut by_flow: Vec<Vec<(u32, u64, u64)>> = vec![Vec::new(); 40];
    for p in pending {
        by_flow[p.0 as usize].push(p);
    }
    cursors.resize(40, 0);
    loop {
        let live: Vec<usize> = (0..40).filter(|&f| cursors[f] < by_flow[f].len()).collect();
        if live.is_empty() {
            break;
        }
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = live[(x as usize) % live.len()];
        order.push(by_flow[f][cursors[f]]);
        cursors[f] += 1;
    }
    let mut seen_seq = vec![0u64; 40];
    let mut queued: Vec<Vec<u64>> = vec![Vec::new(); 40];
    for (i, &(f, k, rem)) in order.iter().enumerate() {
        let mut pkt = Packet::new(f, 1000).class(class);
        pkt.remaining = rem;
        pkt.rank = k;
        tree.enqueue(pkt, i as u64).unwrap();
        queued[f as usize].push(rem);
        // Dequeue every third arrival, checking the choice against the definition.
        if i % 3 == 2 {
            let p = tree.dequeue(i as u64).unwrap();
            let f = p.flow as usize;
            let best = (0..40)
                .filter(|&g| !queued[g].is_empty())
                .map(|g| *queued[g].iter().min().unwrap())
                .min()
                .unwrap();
            assert_eq!(
                *queued[f].iter().min().unwrap(),
                best,
                "served a flow whose smallest remaining is not the smallest"
            );
            assert_eq!(p.rank, seen_seq[f], "flow {f} reordered");
            seen_seq[f] += 1;
            queued[f].remove(0);
            tree.check_invariants();
        }
    }
    while let Some(p) = tree.dequeue(1 << 40) {
        let f = p.flow as usize;
        assert_eq!(p.rank, seen_seq[f], "flow {f} reordered");
        seen_seq[f] += 1;
    }
    tree.check_invariants();
}

#[test]
fn edf_serves_in_deadline_order_across_flows() {
    let mut spec = TreeSpec::new(10_000);
    let mut leaf = NodeSpec::new("flows", None);
    leaf.discipline = Discipline::EDF;
    leaf.per_flow = Some(PerFlow {
        max_flows: 16,
        flow_limit: None,
        flow_queue_limit: None,
    });
    spec.add(leaf);
    let mut tree = PolicyTree::new(spec).unwrap();
    let class = tree.leaf("flows").unwrap();
    // Each flow's deadlines increase (a flow is FIFO), across flows they interleave.
    let mut x = 11u64;
    let mut last = [0u64; 16];
    for i in 0..2_000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let f = (x % 16) as usize;
        last[f] += 1 + (x >> 20) % 50_000;
        let mut pkt = Packet::new(f as u32, 200).class(class);
        pkt.deadline = last[f];
        tree.enqueue(pkt, i).unwrap();
    }
    let mut prev = 0;
    while let Some(p) = tree.dequeue(0) {
        // 10 us buckets: deadlines leave in order at the queue's granularity.
        assert!(
            p.deadline / 10_000 >= prev / 10_000,
            "deadline {} after {}",
            p.deadline,
            prev
        );
        prev = p.deadline;
    }
    tree.check_invariants();
}

#[test]
fn hclock_meets_reservations_before_shares() {
    // b has a small weight but a 600 Mbit/s reservation on a 1 Gbit/s link: the
    // reservation is a floor, so b gets 600 and a the other 400 (mClock's rule;
    // `tests/hclock.rs` has more).
    let mut spec = TreeSpec::new(100_000);
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::HCLOCK;
    let r = spec.add(root);
    let mut a = NodeSpec::new("a", Some(r));
    a.weight = 9;
    let mut b = NodeSpec::new("b", Some(r));
    b.weight = 1;
    b.reservation = Some(Rate::from_bps(600_000_000));
    spec.add(a);
    spec.add(b);
    let mut tree = PolicyTree::new(spec).unwrap();
    let arrivals = backlog(&tree, &["a", "b"], 40_000, 1500);
    let until = 200_000_000;
    let deps = drive(&mut tree, &arrivals, 1_000_000_000, until, 1013);
    let (ca, cb) = (tree.leaf("a").unwrap(), tree.leaf("b").unwrap());
    let rb = long_run_rate(&deps, |p| p.class == cb, 10_000_000, until);
    let ra = long_run_rate(&deps, |p| p.class == ca, 10_000_000, until);
    assert!(
        (rb - 600e6).abs() / 600e6 < 0.02,
        "b: its reservation, got {rb}"
    );
    assert!((ra - 400e6).abs() / 400e6 < 0.02, "a: the rest, got {ra}");
}

#[test]
fn per_flow_pacing_holds_every_flow_to_its_rate() {
    let mut spec = TreeSpec::new(100_000);
    let mut leaf = NodeSpec::new("paced", None);
    leaf.discipline = Discipline::FIFO;
    leaf.per_flow = Some(PerFlow {
        max_flows: 100,
        flow_limit: Some(RateLimit {
            rate: Rate::from_bps(1_000_000),
            burst: 1500,
        }),
        flow_queue_limit: None,
    });
    spec.add(leaf);
    let mut tree = PolicyTree::new(spec).unwrap();
    let class = tree.leaf("paced").unwrap();
    let mut arrivals = Vec::new();
    for k in 0..200u32 {
        for f in 0..100u32 {
            let mut pkt = Packet::new(f, 1250).class(class);
            pkt.buffer = k;
            arrivals.push(Arrival { at: 0, pkt });
        }
    }
    let until = 1_000_000_000;
    let deps = drive(&mut tree, &arrivals, 10_000_000_000, until, 0);
    for f in [0u32, 37, 99] {
        let rate = long_run_rate(&deps, |p| p.flow == f, 100_000_000, until);
        assert!((rate - 1e6).abs() / 1e6 < 0.01, "flow {f} paced at {rate}");
        assert_conforms(
            &deps,
            |p| p.flow == f,
            RateLimit {
                rate: Rate::from_bps(1_000_000),
                burst: 1500,
            },
            tree.shaper_granularity(),
            "flow",
        );
    }
    // 100 flows at 1 Mbit/s: the aggregate is 100 Mbit/s.
    let total = long_run_rate(&deps, |_| true, 100_000_000, until);
    assert!((total - 100e6).abs() / 100e6 < 0.01, "aggregate {total}");
}

#[test]
fn admission_drops_are_counted_by_reason() {
    let mut spec = spec_with(Discipline::FIFO, &[("a", 1, 0)]);
    spec.capacity = 3;
    spec.nodes[1].capacity = Some(2);
    let mut tree = PolicyTree::new(spec).unwrap();
    let a = tree.leaf("a").unwrap();
    assert!(tree.leaf("root").is_none());
    tree.enqueue(Packet::new(0, 100).class(a), 0).unwrap();
    tree.enqueue(Packet::new(0, 100).class(a), 0).unwrap();
    assert_eq!(
        tree.enqueue(Packet::new(0, 100).class(a), 0)
            .unwrap_err()
            .reason,
        DropReason::LeafFull
    );
    assert_eq!(
        tree.enqueue(Packet::new(0, 9000).class(a), 0)
            .unwrap_err()
            .reason,
        DropReason::TooLarge
    );
    assert_eq!(
        tree.enqueue(Packet::new(0, 100).class(0), 0)
            .unwrap_err()
            .reason,
        DropReason::Unclassified
    );
    assert_eq!(
        tree.enqueue(Packet::new(0, 100).class(99), 0)
            .unwrap_err()
            .reason,
        DropReason::Unclassified
    );
    let c = *tree.counters();
    assert_eq!((c.enqueued, c.dropped_total()), (6, 4));
    let leaf = tree.node(a as usize);
    assert_eq!(leaf.counters.dropped.get(DropReason::LeafFull), 1);
    tree.check_invariants();
}

#[test]
fn structural_mistakes_are_refused() {
    let mut spec = spec_with(Discipline::WFQ, &[("a", 1, 0)]);
    spec.nodes[1].weight = 0;
    assert!(PolicyTree::new(spec).is_err());
    let mut spec = spec_with(Discipline::WFQ, &[("a", 1, 0), ("a", 1, 0)]);
    assert!(PolicyTree::new(spec.clone()).is_err());
    spec.nodes[2].name = "b".into();
    spec.nodes[0].parent = Some(1);
    assert!(PolicyTree::new(spec).is_err(), "no root / cycle");
}

/// A tree with every kind of node, random arrivals and dequeues at random times:
/// the invariants hold after every operation and every packet is accounted for.
fn mixed_tree() -> TreeSpec {
    let mut spec = TreeSpec::new(500);
    spec.shaper = ShaperSpec {
        horizon: Duration::from_nanos(1_000_000),
        slots: 1_000,
    };
    let mut root = NodeSpec::new("root", None);
    root.discipline = Discipline::STRICT;
    root.limit = Some(RateLimit {
        rate: Rate::from_bps(800_000_000),
        burst: 4000,
    });
    let r = spec.add(root);
    let mut hc = NodeSpec::new("hc", Some(r));
    hc.discipline = Discipline::HCLOCK;
    hc.priority = 1;
    let h = spec.add(hc);
    let mut w = NodeSpec::new("w", Some(h));
    w.discipline = Discipline::WFQ;
    w.reservation = Some(Rate::from_bps(100_000_000));
    w.limit = Some(RateLimit {
        rate: Rate::from_bps(200_000_000),
        burst: 3000,
    });
    let wi = spec.add(w);
    let mut pf = NodeSpec::new("pf", Some(wi));
    pf.discipline = Discipline::PFABRIC;
    pf.per_flow = Some(PerFlow {
        max_flows: 8,
        flow_limit: None,
        flow_queue_limit: Some(20),
    });
    spec.add(pf);
    let mut paced = NodeSpec::new("paced", Some(wi));
    paced.discipline = Discipline::EDF.on(QueueChoice {
        kind: Some(eiffel_queue::QueueKind::BinaryHeap),
        ..QueueChoice::AUTO
    });
    paced.weight = 3;
    paced.per_flow = Some(PerFlow {
        max_flows: 8,
        flow_limit: Some(RateLimit {
            rate: Rate::from_bps(50_000_000),
            burst: 1500,
        }),
        flow_queue_limit: None,
    });
    spec.add(paced);
    let mut plain = NodeSpec::new("plain", Some(h));
    plain.capacity = Some(50);
    plain.weight = 2;
    spec.add(plain);
    let mut urgent = NodeSpec::new("urgent", Some(r));
    urgent.limit = Some(RateLimit {
        rate: Rate::from_bps(100_000_000),
        burst: 1500,
    });
    spec.add(urgent);
    let mut fq = NodeSpec::new("fq", Some(r));
    fq.discipline = Discipline::QFQ;
    fq.priority = 2;
    let f = spec.add(fq);
    let mut fq1 = NodeSpec::new("fq1", Some(f));
    fq1.weight = 7;
    spec.add(fq1);
    let mut fq2 = NodeSpec::new("fq2", Some(f));
    fq2.limit = Some(RateLimit {
        rate: Rate::from_bps(30_000_000),
        burst: 1500,
    });
    spec.add(fq2);
    spec
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn invariants_hold_under_random_operations(ops in proptest::collection::vec((0u8..10, any::<u32>(), 1u32..1500, 0u64..50_000), 1..600)) {
        let mut tree = PolicyTree::new(mixed_tree()).unwrap();
        let leaves = ["pf", "paced", "plain", "urgent", "fq1", "fq2"];
        let ids: Vec<u32> = leaves.iter().map(|l| tree.leaf(l).unwrap()).collect();
        let mut now = 0u64;
        let (mut offered, mut delivered, mut dropped) = (0u64, 0u64, 0u64);
        let mut last_seen: std::collections::HashMap<(u32, u32), u32> = Default::default();
        let mut seq = 0u32;
        for (op, x, len, dt) in ops {
            now += dt;
            if op < 6 {
                let leaf = ids[(x % 6) as usize];
                let mut pkt = Packet::new(x % 9, len).class(leaf);
                pkt.deadline = now + u64::from(x % 100_000);
                pkt.remaining = u64::from(x % 10_000);
                pkt.buffer = seq;
                seq += 1;
                offered += 1;
                if tree.enqueue(pkt, now).is_err() { dropped += 1; }
            } else if let Some(p) = tree.dequeue(now) {
                delivered += 1;
                // Per-flow FIFO order within each leaf.
                let key = (p.class, p.flow);
                if let Some(&prev) = last_seen.get(&key) {
                    prop_assert!(p.buffer > prev, "flow {key:?} reordered");
                }
                last_seen.insert(key, p.buffer);
            } else if let Some(t) = tree.next_ready(now) {
                prop_assert!(tree.backlog().packets > 0);
                now = now.max(t);
            }
            tree.check_invariants();
        }
        prop_assert_eq!(offered, delivered + dropped + tree.backlog().packets);
        // Draining with enough time empties the tree.
        for _ in 0..10_000 {
            if tree.backlog().packets == 0 { break; }
            match tree.dequeue(now) {
                Some(_) => {}
                None => now = tree.next_ready(now).expect("a backlogged tree names its next release").max(now + 1),
            }
        }
        prop_assert_eq!(tree.backlog().packets, 0);
        tree.check_invariants();
    }
}
