//! pFabric against the ideal: on one bottleneck, flows that start together
//! finish in shortest-remaining-first order at the times SRPT gives; the port
//! check of the exact order finds no inversion in pFabric's queue and many in
//! a FIFO.

mod common;

use eiffel_netsim::port::DropPolicy;
use eiffel_netsim::setup::LinkExtras;
use eiffel_netsim::sim::{RunResult, SchemeTransport};
use eiffel_netsim::time::{Duration, Rate, Time};
use eiffel_netsim::topology::LinkParams;
use eiffel_netsim::transport::pfabric::PfabricParams;
use eiffel_netsim::transport::Segments;
use eiffel_netsim::workload::generate;

const PFABRIC: &str = "[[node]]\nname = \"flows\"\ndiscipline = \"pfabric\"\nflows = 64\ngranularity = 1460\nbuckets = 4096\n";

/// Six flows of different sizes start together from six senders to one
/// receiver; the receiver's 10 Gbit/s link is the bottleneck.
fn race(policy: &str) -> (RunResult, Vec<u64>) {
    let topo = common::star(
        &[Duration::from_micros(1); 6],
        Rate::from_gbps(10),
        LinkParams::new(Rate::from_gbps(40), Duration::from_micros(1)),
    );
    let p = PfabricParams {
        init_window: 12,
        max_window: 12,
        rto: Duration::from_micros(30),
    };
    let mut s = common::scheme(SchemeTransport::Pfabric(p), policy, 36_000);
    s.drop = DropPolicy::LowestPriority;
    s.host_policy = common::policy(policy);
    let sizes = [800_000u64, 50_000, 400_000, 100_000, 1_600_000, 200_000];
    let traffic: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(i, &sz)| common::flow(i as u32, 6, sz, Time::ZERO))
        .collect();
    let end = Time(1_000_000_000);
    let w = generate(&traffic, &topo, 1.0, 1, end);
    (
        common::run(
            &topo,
            &s,
            &LinkExtras::default(),
            &w,
            common::config(end, Time::ZERO),
        ),
        sizes.to_vec(),
    )
}

#[test]
fn pfabric_on_one_bottleneck_is_srpt() {
    let (r, sizes) = race(PFABRIC);
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    // SRPT on the bottleneck: each flow finishes when it and every smaller one
    // have crossed it (bytes on the wire: payload and 40-byte headers).
    let rate = Rate::from_gbps(10);
    let mut cum = 0;
    let mut prev = Duration::ZERO;
    for &i in &order {
        cum += Segments::of(sizes[i]).wire_bytes();
        let ideal = rate.tx_time_ceil(cum);
        let fct = r.flows[i].fct.expect("completed");
        let f = &r.flows[i];
        println!(
            "{:>9} B: FCT {fct}, SRPT {ideal}, retransmits {}, timeouts {}, drops {}",
            sizes[i], f.retransmits, f.timeouts, f.drops
        );
        assert!(
            fct > prev,
            "flow of {} B finished before a smaller one",
            sizes[i]
        );
        prev = fct;
        // SRPT's time at the bottleneck, plus the path's latency and a few
        // round trips of pFabric's start (about 10 us each here), plus what
        // starved flows waste: waiting behind smaller flows for longer than
        // the timeout, they resend windows that were not lost (pFabric's
        // probe mode exists to limit this).
        let bound = Duration::from_nanos((ideal.as_nanos() as f64 * 1.25) as u64)
            + Duration::from_micros(25);
        assert!(fct < bound, "{} B: {fct} against SRPT's {ideal}", sizes[i]);
    }
    let checked: u64 = r.ports.iter().map(|p| p.order.0).sum();
    let inversions: u64 = r.ports.iter().map(|p| p.order.1).sum();
    assert!(checked > 1000);
    assert_eq!(
        inversions, 0,
        "pFabric's queue serves the smallest remaining first"
    );
}

#[test]
fn a_fifo_with_pfabric_drops_inverts_priorities() {
    let (r, sizes) = race(common::FIFO);
    let inversions: u64 = r.ports.iter().map(|p| p.order.1).sum();
    println!("FIFO: {inversions} inversions");
    assert!(inversions > 100, "the check must see a FIFO's inversions");
    // Without the priority queue the smallest flow no longer finishes first.
    let smallest = (0..sizes.len()).min_by_key(|&i| sizes[i]).unwrap();
    let first = (0..sizes.len())
        .min_by_key(|&i| r.flows[i].fct.unwrap())
        .unwrap();
    let srpt = race(PFABRIC).0.flows[smallest].fct.unwrap();
    assert!(r.flows[smallest].fct.unwrap() > srpt, "first {first}");
}

#[test]
fn victims_are_counted_and_freed() {
    let (r, _) = race(PFABRIC);
    let evicted: u64 = r.ports.iter().map(|p| p.evicted).sum();
    let dropped: u64 = r.ports.iter().map(|p| p.dropped_total()).sum();
    println!(
        "evicted {evicted}, dropped on arrival {dropped}, discarded {}",
        r.counters.discarded
    );
    assert!(
        evicted + dropped > 0,
        "six line-rate senders overflow 36 KB"
    );
    assert_eq!(
        r.counters.discarded, evicted,
        "every victim left the tree by the end"
    );
}
