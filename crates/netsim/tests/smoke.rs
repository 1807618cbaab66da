mod common;

use eiffel_netsim::setup::LinkExtras;
use eiffel_netsim::sim::SchemeTransport;
use eiffel_netsim::time::{Delay, Rate, Time};
use eiffel_netsim::topology::{LinkParams, Topology};
use eiffel_netsim::transport::tcp::TcpParams;
use eiffel_netsim::workload::{generate, FlowTransport, Traffic};

#[test]
fn two_tcp_flows_share_a_dumbbell() {
    let access = LinkParams::new(Rate::gbps(10), Delay::from_us(2));
    let neck = LinkParams::new(Rate::gbps(1), Delay::from_us(10));
    let topo = Topology::dumbbell(2, 2, access, neck).unwrap();
    let tcp = TcpParams {
        min_rto: Delay::from_ms(1),
        init_rto: Delay::from_ms(1),
        ..TcpParams::default()
    };
    let s = common::scheme("tcp", SchemeTransport::Tcp(tcp), common::FIFO, 150_000);
    let traffic: Vec<Traffic> = (0..2)
        .map(|i| Traffic::Flows {
            name: format!("f{i}"),
            src: i,
            dst: 2 + i,
            count: 1,
            size: 10_000_000,
            start: Time::ZERO,
            stop: None,
            transport: FlowTransport::Scheme,
            class: 0,
            class_step: 0,
            observe: false,
        })
        .collect();
    let w = generate(&traffic, &topo, 1.0, 1, Time(1_000_000_000));
    let r = common::run(
        &topo,
        &s,
        &LinkExtras::default(),
        &w,
        common::config(Time(1_000_000_000)),
    );
    for f in &r.flows {
        let fct = f.fct.expect("completed");
        println!(
            "fct {fct} ideal {} retx {} timeouts {} drops {}",
            f.ideal, f.retransmits, f.timeouts, f.drops
        );
    }
    println!("events {}", r.counters.events);
    let last = r.flows.iter().map(|f| f.fct.unwrap()).max().unwrap();
    // 20 MB over 1 Gbit/s takes at least 160 ms (plus headers).
    assert!(last.ms() > 160.0 && last.ms() < 200.0, "{last}");
}
