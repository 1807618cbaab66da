//! `eiffel bench hqos`: the hierarchy read from examples/policies/hqos.toml,
//! Eiffel's shares under overload against the fluid reference, and (with the
//! `dpdk` feature) against DPDK's rte_sched on the same hierarchy and stream.

use std::path::PathBuf;

use eiffel_bench::hqos::hierarchy::{Hierarchy, ShapeProblem, QUEUES_PER_PIPE, TRAFFIC_CLASSES};
use eiffel_bench::hqos::shares::{compare, fluid, TOLERANCE};
use eiffel_bench::hqos::{eiffel_shares, load, share_window, throughput, Arch};
use eiffel_policy::Policy;

fn example() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/policies/hqos.toml")
}

#[test]
fn the_example_is_rte_sched_shaped() {
    let h = load(&example()).expect("hqos.toml reads as a hierarchy");
    assert_eq!(h.port.bps, 1_000_000_000);
    assert_eq!(h.profiles.len(), 4);
    assert_eq!(h.qsize, [2048; TRAFFIC_CLASSES]);
    assert_eq!(h.lifted().qsize, [256; TRAFFIC_CLASSES]);
    let d = &h.profiles[3];
    assert_eq!(d.pipe.bps, 350_000_000);
    assert_eq!(d.weights, [1, 2, 3, 4]);
    assert!(d.tc[..12].iter().all(|l| l.bps == 10_000_000));
    // Laid out at 1K queues: 4 subports of 16 pipes, every queue a distinct leaf.
    let (spec, leaves) = h.lifted().tree_spec(4, 16, 2048);
    assert_eq!(leaves.len(), 1024);
    let mut distinct = leaves.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 1024);
    // Each pipe: its node and its 16 queues under it (`ets`).
    assert_eq!(spec.nodes.len(), 1 + 4 + 64 * (1 + QUEUES_PER_PIPE));
    assert!(spec
        .nodes
        .iter()
        .filter_map(|n| n.limit)
        .all(|l| l.rate.bps() == h.port.bps));
}

#[test]
fn a_policy_of_another_shape_is_refused_naming_the_node() {
    let text = std::fs::read_to_string(example()).expect("example");
    // Drop one strict class of pipe b (and the rule that names it).
    let cut: String = text
        .lines()
        .filter(|l| !l.contains("\"b-tc7\""))
        .collect::<Vec<_>>()
        .join("\n");
    let policy = Policy::parse(&cut, "cut.toml").expect("still a valid policy");
    let err = Hierarchy::from_policy(&policy).expect_err("15 queues");
    let msg = err.to_string();
    assert!(
        msg.contains("cut.toml") && msg.contains("pipe \"b\""),
        "{msg}"
    );
    assert!(msg.contains("rte_sched's 16 queues"), "{msg}");
    assert_eq!(
        err.problem,
        ShapeProblem::EtsPipeQueues {
            pipe: "b".into(),
            children: 15
        }
    );
    // The same cut in the nested form: 12 classes where 13 belong.
    let nested = nested(&cut);
    let policy = Policy::parse(&nested, "cut.toml").expect("still a valid policy");
    let err = Hierarchy::from_policy(&policy).expect_err("12 classes");
    assert!(err.to_string().contains("13 traffic classes"), "{err}");
    assert_eq!(
        err.problem,
        ShapeProblem::PipeClasses {
            pipe: "b".into(),
            children: 12
        }
    );
}

/// The example with each pipe `strict` over its classes and a `drr` node of
/// the four best-effort queues at priority 12: the form before `ets`.
fn nested(ets: &str) -> String {
    let mut out = Vec::new();
    for line in ets.lines() {
        let line = line.replace("discipline = \"ets\"", "discipline = \"strict\"");
        let Some(rest) = line.trim_start().strip_prefix("{ name = \"") else {
            out.push(line);
            continue;
        };
        let name = &rest[..rest.find('"').expect("a quoted name")];
        let Some((pipe, queue)) = name.split_once("-be") else {
            out.push(line);
            continue;
        };
        if queue == "0" {
            out.push(format!(
                "  {{ name = \"{pipe}-be\", parent = \"{pipe}\", priority = 12, discipline = \"drr\" }},"
            ));
        }
        out.push(line.replace(
            &format!("parent = \"{pipe}\", priority = 12,"),
            &format!("parent = \"{pipe}-be\","),
        ));
    }
    out.join("\n")
}

/// Loads the hierarchy of policy text `text`.
fn hierarchy(text: &str) -> Hierarchy {
    let policy = Policy::parse(text, "hqos.toml").expect("a valid policy");
    Hierarchy::from_policy(&policy).expect("rte_sched-shaped")
}

#[test]
fn the_nested_form_reads_alike_and_sends_the_same_bytes() {
    let text = std::fs::read_to_string(example()).expect("example");
    let (ets, nested) = (hierarchy(&text), hierarchy(&nested(&text)));
    assert_eq!(ets.profiles, nested.profiles);
    assert_eq!(ets.qsize, nested.qsize);
    let (spec, _) = nested.tree_spec(4, 16, 2048);
    // Each pipe: its node, 12 classes, the best-effort node and its 4 queues.
    assert_eq!(spec.nodes.len(), 1 + 4 + 64 * (1 + 12 + 1 + 4));
    // One node's order either way: the same bytes of every pipe and class
    // on the virtual clock.
    let window = share_window(true);
    let (a, b) = (
        eiffel_shares(&ets, window).expect("run"),
        eiffel_shares(&nested, window).expect("run"),
    );
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn eiffel_gives_the_fluid_shares_under_overload() {
    let h = load(&example()).expect("example");
    // On the virtual clock: the same on an idle or a loaded machine.
    let rows = compare(
        &eiffel_shares(&h, share_window(true)).expect("run"),
        None,
        &fluid(&h),
    );
    for r in &rows {
        assert!(
            r.difference <= TOLERANCE,
            "{}: eiffel {:.4} vs fluid {:.4}",
            r.what,
            r.eiffel,
            r.fluid
        );
    }
}

#[test]
fn throughput_runs_keep_every_packet() {
    let h = load(&example()).expect("example");
    for arch in [Arch::Eiffel, Arch::EiffelTree] {
        let e = throughput(arch, &h, 16, 20_000, 2)
            .expect("run")
            .expect("eiffel");
        assert_eq!(e.drops, 0, "{arch:?}");
        assert_eq!(e.ns_per_packet.len(), 2, "{arch:?}");
    }
}

/// The pipe executor against the policy tree on the 64K-queue hierarchy of
/// the throughput runs (large enough that both prefetch), limits as the
/// file gives them and lifted: the same packets in the same order.
#[test]
fn the_pipe_executor_sends_what_the_tree_sends_at_64k_queues() {
    use eiffel_sched::tree::PipeTree;
    use eiffel_sched::{Packet, PolicyTree, Scheduler};
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    let file = load(&example()).expect("example");
    for h in [file.clone(), file.lifted()] {
        let (spec, leaves) = h.tree_spec(4, 1024, 70_000);
        let mut tree = PolicyTree::new(spec.clone()).expect("tree");
        let mut pipes = PipeTree::new(spec).expect("the hierarchy has the shape");
        let mut rng = SmallRng::seed_from_u64(17);
        let (mut now, mut sent) = (0u64, 0u64);
        for round in 0..3_000u64 {
            let burst: Vec<Packet> = (0..32)
                .map(|k| {
                    let q = rng.gen_range(0..leaves.len());
                    let mut p = Packet::new(q as u32, rng.gen_range(64..=1500)).class(leaves[q]);
                    p.buffer = (round * 32 + k) as u32;
                    p
                })
                .collect();
            let a = tree.enqueue_burst(&burst, now, |_| {});
            let b = pipes.enqueue_burst(&burst, now, |_| {});
            assert_eq!(a, b, "round {round}: queued");
            for _ in 0..rng.gen_range(0..40) {
                let (x, y) = (tree.dequeue(now), pipes.dequeue(now));
                assert_eq!(x.map(|p| p.buffer), y.map(|p| p.buffer), "round {round}");
                sent += u64::from(x.is_some());
            }
            now += rng.gen_range(0..200_000);
        }
        assert!(sent > 30_000, "{sent} sent");
        assert_eq!(tree.counters(), pipes.counters());
        pipes.check_invariants();
    }
}

#[cfg(feature = "dpdk")]
mod dpdk {
    use super::*;
    use eiffel_bench::hqos::{check_shares, throughput_paired};

    #[test]
    fn rte_sched_and_eiffel_give_the_same_pipe_and_class_shares() {
        let h = load(&example()).expect("example");
        // Both on the virtual clock: no retry, and a second run is the same
        // to the byte (a run depends on nothing but its inputs).
        let check = check_shares(&h, share_window(true)).expect("run");
        let again = check_shares(&h, share_window(true)).expect("run");
        assert_eq!(
            (check.eiffel_bps, check.rte_sched_bps),
            (again.eiffel_bps, again.rte_sched_bps),
            "two runs on the virtual clock differ"
        );
        assert!(check.against_rte_sched);
        let table: Vec<String> = check
            .rows
            .iter()
            .map(|r| {
                format!(
                    "{} eiffel {:.4} rte_sched {:.4} fluid {:.4}",
                    r.what,
                    r.eiffel,
                    r.rte_sched.unwrap_or(f64::NAN),
                    r.fluid
                )
            })
            .collect();
        assert!(
            check.passes(),
            "worst {:.3}:\n{}",
            check.worst,
            table.join("\n")
        );
        // Both delivered close to the configured 800 Mbit/s.
        assert!(check.eiffel_bps > 0.9 * check.fluid_bps);
        assert!(check.rte_sched_bps.expect("rte_sched ran") > 0.8 * check.fluid_bps);
    }

    #[test]
    fn paired_runs_interleave_both_and_report_the_median_pair_ratio() {
        let h = load(&example()).expect("example");
        let m = throughput_paired(&h, 16, 20_000, 3).expect("run");
        let (d, e) = (m.rte_sched.expect("rte_sched"), m.eiffel.expect("eiffel"));
        assert_eq!((d.drops, e.drops), (0, 0));
        assert_eq!((d.ns_per_packet.len(), e.ns_per_packet.len()), (3, 3));
        let mut ratios: Vec<f64> = d
            .ns_per_packet
            .iter()
            .zip(&e.ns_per_packet)
            .map(|(r, e)| r / e)
            .collect();
        ratios.sort_by(f64::total_cmp);
        assert_eq!(m.speedup, Some(ratios[1]));
        let t = m.eiffel_tree.expect("the general tree ran too");
        assert_eq!((t.drops, t.ns_per_packet.len()), (0, 3));
        assert!(m.tree_speedup.is_some());
    }

    #[test]
    fn rte_sched_throughput_runs_keep_every_mbuf() {
        let h = load(&example()).expect("example");
        let d = throughput(Arch::RteSched, &h, 16, 20_000, 2)
            .expect("run")
            .expect("rte_sched");
        assert_eq!(d.drops, 0);
    }
}
