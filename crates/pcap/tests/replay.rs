//! Captures replayed through a policy: classification by the policy's rules,
//! every frame accounted for, and the departures file read back.

mod common;

use common::{pcap, pcapng, traffic, Pkt, POLICY};
use eiffel_pcap::{replay, write_departures, Capture, Format, Replay, ReplayOptions};
use eiffel_policy::Policy;
use pcap_file::TsResolution;

const T0: u64 = 1_700_000_000_123_456_000;

fn run(bytes: Vec<u8>, opts: ReplayOptions) -> (Capture, Replay) {
    let policy = Policy::parse(POLICY, "test.toml").expect("policy");
    let capture = Capture::parse(bytes, "test.pcap").expect("capture");
    let r = replay(&policy, &capture, opts, |_| {}).expect("replay");
    (capture, r)
}

/// Every frame is dropped as malformed, sent, dropped by the tree or queued,
/// at the tree and at every node.
fn check_accounting(r: &Replay) {
    let t = r.report.totals;
    assert_eq!(t.enqueued, t.dequeued + t.dropped + t.queued, "{t:?}");
    assert_eq!(
        r.capture.frames,
        r.capture.malformed_dropped + r.capture.after_end + t.enqueued
    );
    assert_eq!(r.departures.len() as u64, t.dequeued);
    for n in &r.report.nodes {
        assert_eq!(n.enqueued, n.dequeued + n.dropped + n.queued, "{}", n.path);
    }
    let offered: u64 = r.report.flows.iter().map(|f| f.offered).sum();
    assert_eq!(offered, t.enqueued);
}

#[test]
fn classified_by_the_rules_and_shaped_by_the_tree() {
    let pkts = traffic(T0);
    let (_, r) = run(
        pcap(&pkts, TsResolution::NanoSecond),
        ReplayOptions::default(),
    );
    check_accounting(&r);
    assert_eq!(r.report.link_rate_bps, 10_000_000, "the root's limit");
    assert_eq!(r.capture.frames, pkts.len() as u64);
    assert_eq!(r.capture.malformed, 5);
    assert_eq!(r.capture.malformed_dropped, 0, "forwarded by default");
    let voice = r
        .report
        .flows
        .iter()
        .find(|f| f.name == "root/voice")
        .expect("voice");
    let bulk = r
        .report
        .flows
        .iter()
        .find(|f| f.name == "root/bulk")
        .expect("bulk");
    assert_eq!(voice.count, 1);
    assert_eq!(
        bulk.count, 5,
        "four UDP flows and the malformed frames' flow"
    );
    // Voice offers 4 Mbit/s for 1 s against a 2 Mbit/s cap: 2 Mbit leave in
    // that second, and its 64 queued packets after it.
    let voice_bits = voice.sent as f64 * 1042.0 * 8.0;
    let most = 2e6 + 66.0 * 1042.0 * 8.0;
    assert!(
        (1.9e6..most).contains(&voice_bits),
        "voice sent {voice_bits} bits"
    );
    assert_eq!(r.capture.after_end, 0);
    assert!(voice.dropped > 0);
    assert_eq!(bulk.dropped, 0, "bulk offers 8 Mbit/s into the 8 left");
}

#[test]
fn departures_read_back_with_the_same_packets() {
    let pkts = traffic(T0);
    for format in [Format::Pcap, Format::PcapNg] {
        let (capture, r) = run(
            pcap(&pkts, TsResolution::MicroSecond),
            ReplayOptions::default(),
        );
        let dir = std::env::temp_dir().join(format!("eiffel-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join(match format {
            Format::Pcap => "out.pcap",
            Format::PcapNg => "out.pcapng",
        });
        write_departures(&path, format, &capture, &r.departures).expect("write");
        let back = Capture::read(&path).expect("read back");
        std::fs::remove_file(&path).ok();
        assert_eq!(back.format(), format);
        assert_eq!(back.frames().len(), r.departures.len());
        let mut last = 0;
        for (f, d) in back.frames().iter().zip(&r.departures) {
            let orig = &capture.frames()[d.frame as usize];
            assert_eq!(
                back.data(f),
                capture.data(orig),
                "same bytes, departure order"
            );
            assert_eq!(f.wire_len, orig.wire_len);
            assert_eq!(f.timestamp, capture.start() + d.end, "departure time");
            assert!(f.timestamp >= orig.timestamp, "leaves after it arrived");
            assert!(f.timestamp >= last, "in departure order");
            last = f.timestamp;
        }
        // The departures replayed again: same packets, none dropped, none held.
        let policy = Policy::parse(POLICY, "test.toml").expect("policy");
        let again = replay(&policy, &back, ReplayOptions::default(), |_| {}).expect("replay");
        assert_eq!(again.report.totals.enqueued, r.report.totals.dequeued);
    }
}

#[test]
fn pcap_and_pcapng_give_the_same_run() {
    let pkts = traffic(T0);
    let (_, a) = run(
        pcap(&pkts, TsResolution::NanoSecond),
        ReplayOptions::default(),
    );
    let (c, b) = run(pcapng(&pkts, true), ReplayOptions::default());
    assert_eq!(c.format(), Format::PcapNg);
    assert_eq!(a.report.totals, b.report.totals);
    assert_eq!(a.departures, b.departures);
    let (c, _) = run(pcapng(&pkts, false), ReplayOptions::default());
    assert_eq!(c.start(), T0 / 1000 * 1000, "microseconds by default");
}

#[test]
fn out_of_order_captures_are_sorted() {
    let mut pkts = traffic(T0);
    pkts.swap(3, 10);
    let (capture, r) = run(
        pcap(&pkts, TsResolution::NanoSecond),
        ReplayOptions::default(),
    );
    assert!(capture
        .frames()
        .windows(2)
        .all(|w| w[0].timestamp <= w[1].timestamp));
    check_accounting(&r);
}

#[test]
fn options_and_malformed_drops() {
    let pkts = traffic(T0);
    let (_, r) = run(
        pcap(&pkts, TsResolution::NanoSecond),
        ReplayOptions {
            link_rate: Some(1_000_000_000),
            duration: Some(200_000_000),
        },
    );
    check_accounting(&r);
    assert_eq!(r.report.duration_ns, 200_000_000);
    assert!(r.capture.after_end > 0);
    assert_eq!(r.report.link_rate_bps, 1_000_000_000);
    let dropping = POLICY.replace("max_flows = 64", "max_flows = 64\nmalformed = \"drop\"");
    let policy = Policy::parse(&dropping, "drop.toml").expect("policy");
    let capture = Capture::parse(pcap(&pkts, TsResolution::NanoSecond), "t.pcap").expect("capture");
    let r = replay(&policy, &capture, ReplayOptions::default(), |_| {}).expect("replay");
    assert_eq!(r.capture.malformed_dropped, 5);
    check_accounting(&r);
    let none =
        Capture::parse(pcap(&[] as &[Pkt], TsResolution::NanoSecond), "e.pcap").expect("empty");
    let e = replay(&policy, &none, ReplayOptions::default(), |_| {}).expect_err("empty");
    assert!(e.to_string().contains("no packets"), "{e}");
    let e = replay(
        &policy,
        &capture,
        ReplayOptions {
            link_rate: Some(0),
            duration: None,
        },
        |_| {},
    )
    .expect_err("zero rate");
    assert!(e.to_string().contains("link rate must be positive"), "{e}");
}
