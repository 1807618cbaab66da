//! End to end, without the policy tree: ping and iperf3 (TCP and UDP) between two
//! network namespaces, through a middle namespace where the AF_PACKET forwarding loop
//! carries sender-to-receiver traffic through a FIFO scheduler and the reverse
//! direction ring to ring. Then the same topology with a kernel bridge and HTB
//! classes, the comparison baseline.
//!
//! Runs as root; with `EIFFEL_REQUIRE_NETNS=1` a missing prerequisite fails the test
//! instead of skipping it. Bounded: each transfer lasts 2 s, every command has a time
//! limit, and the namespaces are removed however the test ends.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use eiffel_classify::{Classifier, FlowTableConfig, MalformedAction, RuleSet};
use eiffel_net::afpacket::{RxConfig, TxConfig};
use eiffel_net::forward::{ForwardConfig, Forwarder, Port};
use eiffel_sched::{Fifo, Scheduler};
use eiffel_testbed::{
    self as testbed, Htb, HtbClass, HtbMatch, Iperf3, Role, Testbed, MIDDLE_IN, MIDDLE_OUT,
    RECEIVER_V4, RECEIVER_V6,
};

const TOOLS: [&str; 5] = ["ip", "tc", "ethtool", "ping", "iperf3"];

/// Sets the flag when dropped, so the forwarder thread ends even if a check panics.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn start_forwarder(bed: &Testbed) -> Result<Forwarder<Fifo>, String> {
    bed.enter(Role::Middle).map_err(|e| e.to_string())?;
    let rx = RxConfig::default();
    let tx = TxConfig::default();
    let a = Port::open(MIDDLE_IN, &rx, &tx).map_err(|e| e.to_string())?;
    let b = Port::open(MIDDLE_OUT, &rx, &tx).map_err(|e| e.to_string())?;
    let classifier = Classifier::new(
        RuleSet::default_only(0),
        FlowTableConfig {
            max_flows: 1024,
            idle_timeout: eiffel_sched::Duration::from_secs(10),
        },
        MalformedAction::Forward,
    )
    .map_err(|e| e.to_string())?;
    Forwarder::new(a, b, Fifo::new(4096), classifier, ForwardConfig::default())
        .map_err(|e| e.to_string())
}

fn ping(bed: &Testbed, args: &[&str]) -> Result<(), String> {
    let out = bed
        .run(Role::Sender, args, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{args:?} failed: {}{}", out.stdout, out.stderr))
    }
}

fn traffic(bed: &Testbed) -> Result<(), String> {
    ping(
        bed,
        &["ping", "-c", "5", "-i", "0.2", "-W", "2", RECEIVER_V4],
    )?;
    ping(
        bed,
        &["ping", "-6", "-c", "3", "-i", "0.2", "-W", "2", RECEIVER_V6],
    )?;

    let server = bed.iperf3_server(5201).map_err(|e| e.to_string())?;
    let tcp = bed
        .iperf3_client(&Iperf3::tcp(5201, 2))
        .map_err(|e| e.to_string())?;
    drop(server);
    if tcp.bytes_received == 0 {
        return Err(format!("TCP transfer moved nothing: {tcp:?}"));
    }
    eprintln!(
        "TCP through the forwarder: {:.1} Mbit/s, {} retransmits",
        tcp.bits_per_second / 1e6,
        tcp.retransmits
    );

    let server = bed.iperf3_server(5202).map_err(|e| e.to_string())?;
    let udp = bed
        .iperf3_client(&Iperf3::udp(5202, 2, "20M"))
        .map_err(|e| e.to_string())?;
    drop(server);
    if udp.packets == 0 || udp.lost_packets * 2 > udp.packets {
        return Err(format!("UDP transfer lost most datagrams: {udp:?}"));
    }
    eprintln!(
        "UDP through the forwarder: {} datagrams, {} lost",
        udp.packets, udp.lost_packets
    );
    Ok(())
}

#[test]
fn ping_and_iperf3_pass_through_the_af_packet_forwarder() {
    if !testbed::preflight(
        "ping_and_iperf3_pass_through_the_af_packet_forwarder",
        &TOOLS,
    ) {
        return;
    }
    let bed = Testbed::new("eiffel-fwd").expect("test bed");
    let stop = AtomicBool::new(false);
    let (fwd, result) = std::thread::scope(|s| {
        let guard = StopOnDrop(&stop);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (bed, stop) = (&bed, &stop);
        let worker = s.spawn(move || -> Result<Forwarder<Fifo>, String> {
            let mut f = start_forwarder(bed)?;
            let _ = ready_tx.send(());
            f.run(stop).map_err(|e| e.to_string())?;
            Ok(f)
        });
        let result = match ready_rx.recv_timeout(Duration::from_secs(10)) {
            Ok(()) => traffic(bed),
            Err(_) => Err("the forwarder did not start".to_owned()),
        };
        drop(guard);
        (worker.join().expect("forwarder thread"), result)
    });
    let fwd = fwd.expect("forwarder");
    result.expect("traffic through the forwarder");

    let ab = *fwd.a_to_b();
    let ba = *fwd.b_to_a();
    let c = *fwd.scheduler().counters();
    let backlog = fwd.scheduler().backlog().packets;
    eprintln!("a->b {ab:?}\nb->a {ba:?}\nfifo {c:?}");
    assert!(ab.sent > 0 && ba.sent > 0);
    assert_eq!(
        ab.received,
        ab.truncated + ab.oversize + ab.pool_full + ab.malformed + c.enqueued,
        "every received frame is accounted for"
    );
    assert_eq!(c.enqueued, c.dequeued + c.dropped_total() + backlog);
    assert_eq!(c.dequeued, ab.sent + ab.tx_too_large + ab.tx_full);
    assert_eq!(
        u64::from(fwd.pool().capacity() - fwd.pool().available()),
        backlog,
        "pool slots in use match the scheduler's backlog"
    );
    assert_eq!(
        ba.received,
        ba.sent + ba.truncated + ba.too_large + ba.tx_full
    );
    assert_eq!(
        (ab.truncated, ab.oversize, ba.truncated),
        (0, 0, 0),
        "offloads are off: no super-frames"
    );
    let flows = fwd.classifier().flows().counters();
    assert!(
        flows.created >= 4,
        "ARP, ICMP, ICMPv6, TCP and UDP flows: {flows:?}"
    );
}

#[test]
fn kernel_bridge_with_htb_baseline_shapes_by_class() {
    if !testbed::preflight("kernel_bridge_with_htb_baseline_shapes_by_class", &TOOLS) {
        return;
    }
    let bed = Testbed::new("eiffel-htb").expect("test bed");
    bed.bridge_middle().expect("bridge");
    let htb = Htb {
        rate: "100mbit".into(),
        default_minor: 20,
        classes: vec![
            HtbClass {
                minor: 10,
                rate: "20mbit".into(),
                ceil: Some("20mbit".into()),
                prio: Some(0),
                limit: None,
                matches: vec![HtbMatch::Protocol(6), HtbMatch::DstPort(5201)],
            },
            HtbClass {
                minor: 20,
                rate: "10mbit".into(),
                ceil: None,
                prio: Some(1),
                limit: None,
                matches: vec![],
            },
        ],
    };
    bed.htb(Role::Middle, MIDDLE_OUT, &htb).expect("htb");
    ping(
        &bed,
        &["ping", "-c", "3", "-i", "0.2", "-W", "2", RECEIVER_V4],
    )
    .expect("ping");

    let server = bed.iperf3_server(5201).expect("server");
    let tcp = bed.iperf3_client(&Iperf3::tcp(5201, 2)).expect("tcp");
    drop(server);
    let server = bed.iperf3_server(5202).expect("server");
    let udp = bed.iperf3_client(&Iperf3::udp(5202, 2, "5M")).expect("udp");
    drop(server);

    let stats = bed
        .class_stats(Role::Middle, MIDDLE_OUT)
        .expect("class stats");
    let class = |id: &str| {
        stats
            .iter()
            .find(|c| c.class == id)
            .unwrap_or_else(|| panic!("class {id} missing from {stats:?}"))
            .clone()
    };
    let (tcp_class, default_class) = (class("1:10"), class("1:20"));
    eprintln!(
        "HTB baseline: TCP {:.1} Mbit/s (class 20mbit), UDP {} datagrams; {stats:?}",
        tcp.bits_per_second / 1e6,
        udp.packets
    );
    assert!(
        tcp_class.bytes >= tcp.bytes_received,
        "the TCP stream went through class 1:10"
    );
    assert!(
        default_class.bytes >= udp.bytes_received,
        "unmatched UDP went to the default class 1:20"
    );
    assert!(
        tcp.bits_per_second < 40e6,
        "a 20mbit HTB ceiling let {:.1} Mbit/s through",
        tcp.bits_per_second / 1e6
    );
}
