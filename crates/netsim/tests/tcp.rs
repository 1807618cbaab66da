//! TCP NewReno and DCTCP against known behaviour: the Mathis formula on random
//! loss, DCTCP's queue held near its marking threshold, fair shares through a
//! fair-queueing port.

mod common;

use eiffel_netsim::port::DropPolicy;
use eiffel_netsim::report::jain;
use eiffel_netsim::setup::LinkExtras;
use eiffel_netsim::sim::SchemeTransport;
use eiffel_netsim::time::{Duration, Rate, Time};
use eiffel_netsim::topology::LinkParams;
use eiffel_netsim::transport::tcp::TcpParams;
use eiffel_netsim::transport::MSS;
use eiffel_netsim::workload::generate;

/// Goodput of one NewReno flow across a link that loses a fraction `p` of its
/// packets, against Mathis et al.'s `MSS / RTT * sqrt(3 / 2) / sqrt(p)`.
fn mathis_ratio(p: f64) -> (f64, f64) {
    let neck = LinkParams::new(Rate::from_gbps(10), Duration::from_micros(240));
    let topo = common::star(&[Duration::from_micros(9)], Rate::from_gbps(10), neck);
    // RTT: 2 x (9 + 240 + 1) us of propagation; transmissions add ~4 us.
    let rtt = 2.0 * 250e-6 + 4e-6;
    let lossy = topo.find_port("left->right").unwrap();
    let extras = LinkExtras {
        loss: vec![(lossy, p)],
    };
    let s = common::scheme(
        SchemeTransport::Tcp(TcpParams::default()),
        common::FIFO,
        10_000_000,
    );
    let end = Time(7_000_000_000);
    let w = generate(
        &[common::flow(0, 1, u64::MAX, Time::ZERO)],
        &topo,
        1.0,
        1,
        end,
    );
    let r = common::run(
        &topo,
        &s,
        &extras,
        &w,
        common::config(end, Time(1_000_000_000)),
    );
    let measured = r.flows[0].goodput_bps;
    let model = f64::from(MSS) * 8.0 / rtt * (1.5f64).sqrt() / p.sqrt();
    (measured, model)
}

#[test]
fn newreno_follows_the_mathis_formula() {
    for p in [1e-4, 3e-4, 1e-3] {
        let (measured, model) = mathis_ratio(p);
        let ratio = measured / model;
        println!(
            "loss {p:e}: {:.1} Mbit/s measured, {:.1} Mbit/s by Mathis et al. (ratio {ratio:.3})",
            measured / 1e6,
            model / 1e6
        );
        // The formula assumes periodic losses and ignores timeouts; with
        // random losses NewReno lands within a few tens of percent of it.
        assert!((0.75..1.3).contains(&ratio), "loss {p}: ratio {ratio}");
    }
}

/// Queue samples of the bottleneck with `senders` long-lived flows of
/// `transport`, ECN threshold `k`: `(mean, p99, utilization)`.
fn bottleneck_queue(transport: SchemeTransport, k: Option<u64>) -> (f64, u64, f64) {
    let neck = LinkParams::new(Rate::from_gbps(10), Duration::from_micros(20));
    let topo = common::star(&[Duration::from_micros(5); 8], Rate::from_gbps(10), neck);
    let mut s = common::scheme(transport, common::FIFO, 600_000);
    s.ecn_threshold = k;
    let end = Time(300_000_000);
    let traffic: Vec<_> = (0..8)
        .map(|i| common::flow(i, 8, u64::MAX, Time(i as u64 * 1000)))
        .collect();
    let w = generate(&traffic, &topo, 1.0, 1, end);
    let port = topo.find_port("left->right").unwrap();
    let mut cfg = common::config(end, Time(100_000_000));
    cfg.sample = Some((vec![port], Duration::from_micros(5)));
    let r = common::run(&topo, &s, &LinkExtras::default(), &w, cfg);
    let p = &r.ports[port as usize];
    let mut samples: Vec<u64> = p
        .samples
        .iter()
        .filter(|&&(t, _)| t >= Time(100_000_000))
        .map(|&(_, b)| b)
        .collect();
    samples.sort_unstable();
    let mean = samples.iter().sum::<u64>() as f64 / samples.len() as f64;
    let p99 = samples[samples.len() * 99 / 100];
    let goodput: f64 = r.flows.iter().map(|f| f.goodput_bps).sum();
    (mean, p99, goodput / 10e9)
}

#[test]
fn dctcp_holds_the_queue_near_k_and_newreno_fills_the_buffer() {
    let k = 65 * 1500;
    let p = TcpParams {
        min_rto: Duration::from_millis(1),
        init_rto: Duration::from_millis(10),
        ..TcpParams::default()
    };
    let (mean, p99, util) = bottleneck_queue(SchemeTransport::Dctcp(p), Some(k));
    println!(
        "DCTCP: queue mean {mean:.0} B, p99 {p99} B (K = {k} B), goodput {:.1}% of the link",
        util * 100.0
    );
    assert!(
        mean > 0.5 * k as f64 && mean < 1.5 * k as f64,
        "mean queue {mean}"
    );
    assert!(p99 < 2 * k, "p99 queue {p99}");
    assert!(util > 0.9, "utilization {util}");
    let (mean, p99, util) = bottleneck_queue(SchemeTransport::Tcp(p), None);
    println!(
        "NewReno, drop-tail: queue mean {mean:.0} B, p99 {p99} B (buffer 600000 B), goodput {:.1}%",
        util * 100.0
    );
    assert!(
        mean > 3.0 * k as f64,
        "NewReno keeps the buffer full: {mean}"
    );
}

/// Goodputs of eight long-lived NewReno flows with RTTs from 20 us to 1.4 ms
/// through a bottleneck ordered by `policy`.
fn shares(policy: &str) -> Vec<f64> {
    let delays: Vec<Duration> = (0..8).map(|i| Duration::from_micros(5 + 100 * i)).collect();
    let neck = LinkParams::new(Rate::from_gbps(1), Duration::from_micros(5));
    let topo = common::star(&delays, Rate::from_gbps(10), neck);
    let p = TcpParams {
        min_rto: Duration::from_millis(5),
        ..TcpParams::default()
    };
    let mut s = common::scheme(SchemeTransport::Tcp(p), policy, 300_000);
    s.drop = DropPolicy::Tail;
    let end = Time(2_000_000_000);
    let traffic: Vec<_> = (0..8)
        .map(|i| common::flow(i, 8, u64::MAX, Time::ZERO))
        .collect();
    let w = generate(&traffic, &topo, 1.0, 1, end);
    let r = common::run(
        &topo,
        &s,
        &LinkExtras::default(),
        &w,
        common::config(end, Time(500_000_000)),
    );
    r.flows.iter().map(|f| f.goodput_bps / 1e6).collect()
}

#[test]
fn fair_queueing_port_gives_equal_shares_whatever_the_rtt() {
    let wfq = "[[node]]\nname = \"flows\"\ndiscipline = \"wfq\"\nflows = 64\n";
    let fair = shares(wfq);
    let fifo = shares(common::FIFO);
    let (jf, jo) = (jain(&fair), jain(&fifo));
    println!("wfq:  {fair:.1?} Mbit/s, Jain {jf:.4}");
    println!("fifo: {fifo:.1?} Mbit/s, Jain {jo:.4}");
    assert!(jf >= 0.99, "Jain index {jf} through a wfq port");
    assert!(jo < jf, "FIFO favours short RTTs");
    let total: f64 = fair.iter().sum();
    assert!(total > 900.0, "the 1 Gbit/s bottleneck stays busy: {total}");
}
