use super::*;
use crate::wire::parse;
use etherparse::{IpNumber, Ipv4Header, Ipv4Options, PacketBuilder};

fn udp(dscp: u8, payload: &[u8]) -> Vec<u8> {
    let mut ip = Ipv4Header::new(0, 64, IpNumber::UDP, [10, 0, 0, 1], [10, 0, 0, 2]).unwrap();
    ip.dscp = etherparse::IpDscp::try_new(dscp).unwrap();
    let b = PacketBuilder::ethernet2([1; 6], [2; 6])
        .ip(etherparse::IpHeaders::Ipv4(ip, Default::default()))
        .udp(1000, 2000);
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

fn udp_with_option(option: &[u8]) -> Vec<u8> {
    let mut ip = Ipv4Header::new(0, 64, IpNumber::UDP, [10, 0, 0, 1], [10, 0, 0, 2]).unwrap();
    ip.options = Ipv4Options::try_from(option).unwrap();
    let b = PacketBuilder::ethernet2([1; 6], [2; 6])
        .ip(etherparse::IpHeaders::Ipv4(ip, Default::default()))
        .udp(1000, 2000);
    let mut out = Vec::new();
    b.write(&mut out, b"data").unwrap();
    out
}

fn annotate(a: &mut Annotator, frame: &[u8], flow: u32, class: u32, new_flow: bool) -> Packet {
    let h = parse(frame).unwrap();
    let mut pkt = Packet::new(flow, frame.len() as u32)
        .at(1_000_000)
        .class(class);
    a.annotate(&mut pkt, frame, &h, new_flow);
    pkt
}

fn leaves(name: &str) -> Option<ClassId> {
    ["bulk", "voice"]
        .iter()
        .position(|l| *l == name)
        .map(|i| i as ClassId)
}

#[test]
fn rank_from_dscp() {
    let spec = AnnotateSpec {
        rank: RankFrom::Dscp,
        ..AnnotateSpec::default()
    };
    let mut a = spec.compile(4, leaves).unwrap();
    assert_eq!(annotate(&mut a, &udp(46, b"x"), 0, 0, true).rank, 17);
    assert_eq!(annotate(&mut a, &udp(0, b"x"), 0, 0, false).rank, 63);
    // Not annotated: left alone.
    let mut none = AnnotateSpec::default().compile(4, leaves).unwrap();
    let p = annotate(&mut none, &udp(46, b"x"), 0, 0, true);
    assert_eq!((p.rank, p.deadline, p.remaining), (0, NO_DEADLINE, 0));
}

fn deadline_spec(field: Option<DeadlineField>) -> AnnotateSpec {
    AnnotateSpec {
        deadline: Some(DeadlineSpec {
            field,
            unit: Duration::from_micros(1),
            budget: Some(Duration::from_millis(50)),
            class_budgets: vec![("voice".into(), Duration::from_millis(2))],
        }),
        ..AnnotateSpec::default()
    }
}

#[test]
fn deadline_from_class_budget() {
    let mut a = deadline_spec(None).compile(4, leaves).unwrap();
    let f = udp(0, b"abcd");
    assert_eq!(
        annotate(&mut a, &f, 0, 1, true).deadline,
        1_000_000 + 2_000_000
    );
    assert_eq!(
        annotate(&mut a, &f, 0, 0, true).deadline,
        1_000_000 + 50_000_000
    );
    let unknown = AnnotateSpec {
        deadline: Some(DeadlineSpec {
            class_budgets: vec![("nope".into(), Duration::from_millis(1))],
            ..deadline_spec(None).deadline.unwrap()
        }),
        ..AnnotateSpec::default()
    };
    assert!(matches!(
        unknown.compile(4, leaves),
        Err(AnnotateError::UnknownLeaf { .. })
    ));
}

#[test]
fn deadline_from_udp_payload() {
    let field = DeadlineField::UdpPayload { offset: 2 };
    let mut a = deadline_spec(Some(field)).compile(4, leaves).unwrap();
    let mut payload = vec![0xaa, 0xbb];
    payload.extend_from_slice(&700u32.to_be_bytes());
    let p = annotate(&mut a, &udp(0, &payload), 0, 0, true);
    assert_eq!(p.deadline, 1_000_000 + 700_000);
    // Too short for the field: the class budget.
    let p = annotate(&mut a, &udp(0, b"abc"), 0, 1, true);
    assert_eq!(p.deadline, 1_000_000 + 2_000_000);
}

#[test]
fn deadline_from_ipv4_option() {
    let field = DeadlineField::Ipv4Option { kind: 0x9e };
    let mut a = deadline_spec(Some(field)).compile(4, leaves).unwrap();
    // NOP, then the option (type, length 6, 4 data bytes), then end + padding.
    let mut opt = vec![1, 0x9e, 6];
    opt.extend_from_slice(&300u32.to_be_bytes());
    opt.push(0);
    let p = annotate(&mut a, &udp_with_option(&opt), 0, 0, true);
    assert_eq!(p.deadline, 1_000_000 + 300_000);
    // Another option type: the default budget.
    let other = [0x9f, 6, 0, 0, 1, 0, 0, 0];
    let p = annotate(&mut a, &udp_with_option(&other), 0, 0, true);
    assert_eq!(p.deadline, 1_000_000 + 50_000_000);
    // A truncated option list never reads past it.
    assert_eq!(find_option(&[0x9e, 9, 0, 0], 0x9e), None);
    assert!(matches!(
        deadline_spec(Some(DeadlineField::Ipv4Option { kind: 1 })).compile(4, leaves),
        Err(AnnotateError::OptionKind(1))
    ));
}

#[test]
fn attained_bytes_per_flow_restart_with_a_new_flow() {
    let spec = AnnotateSpec {
        remaining: RemainingFrom::Attained,
        ..AnnotateSpec::default()
    };
    let mut a = spec.compile(4, leaves).unwrap();
    let f = udp(0, &[0; 58]); // 100-byte frame
    assert_eq!(f.len(), 100);
    assert_eq!(annotate(&mut a, &f, 1, 0, true).remaining, 100);
    assert_eq!(annotate(&mut a, &f, 1, 0, false).remaining, 200);
    assert_eq!(annotate(&mut a, &f, 2, 0, true).remaining, 100);
    assert_eq!(annotate(&mut a, &f, 1, 0, false).remaining, 300);
    assert_eq!(annotate(&mut a, &f, 1, 0, true).remaining, 100);
    assert_eq!(a.attained(1), 100);
    // A flow id beyond the table is not tracked.
    assert_eq!(annotate(&mut a, &f, 9, 0, true).remaining, 0);
}

#[test]
fn pias_levels() {
    let spec = AnnotateSpec {
        remaining: RemainingFrom::Levels(vec![150, 250]),
        ..AnnotateSpec::default()
    };
    let mut a = spec.compile(4, leaves).unwrap();
    let f = udp(0, &[0; 58]);
    let levels: Vec<u64> = (0..4)
        .map(|i| annotate(&mut a, &f, 0, 0, i == 0).remaining)
        .collect();
    assert_eq!(levels, [0, 1, 2, 2]);
    for bad in [vec![0, 5], vec![5, 5], vec![9, 3]] {
        let s = AnnotateSpec {
            remaining: RemainingFrom::Levels(bad),
            ..AnnotateSpec::default()
        };
        assert_eq!(s.compile(4, leaves).err(), Some(AnnotateError::Thresholds));
    }
}
