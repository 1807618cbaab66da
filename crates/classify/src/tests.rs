use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use eiffel_sched::{ClassId, DropReason, Duration};
use proptest::prelude::*;
use serde::Deserialize;

use super::*;
use crate::wire::{self, FlowKey, IpKey, Ports, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6};

const LEAVES: [&str; 4] = ["l0", "l1", "l2", "l3"];

fn resolve(name: &str) -> Option<ClassId> {
    LEAVES.iter().position(|l| *l == name).map(|i| i as ClassId)
}

/// Rules as a configuration file writes them: a default leaf and `[[rule]]`s.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    default: String,
    #[serde(default, rename = "rule")]
    rules: Vec<RuleSpec>,
}

fn spec(text: &str) -> Result<Spec, String> {
    toml::from_str::<Spec>(text).map_err(|e| e.to_string())
}

fn compile(s: &Spec) -> Result<RuleSet, RuleError> {
    RuleSet::compile(&s.rules, &s.default, resolve)
}

#[test]
fn documented_example_parses() {
    let s = spec(
        r#"
        default = "l0"

        [[rule]]
        leaf = "l1"
        protocol = "udp"
        dscp = ["ef", 40, "af41"]

        [[rule]]
        leaf = "l2"
        protocol = ["tcp", 17]
        dst = ["198.18.0.0/15", "2001:db8::/32"]
        dst_port = [80, 443, "8000-8080"]

        [[rule]]
        leaf = "l3"
        vlan = "100-199"
        ether_type = ["arp", "0x88cc"]
        "#,
    )
    .unwrap();
    assert_eq!(s.rules.len(), 3);
    assert_eq!(
        s.rules[0].dscp.as_ref().unwrap().values(),
        &[
            DscpRange { lo: 46, hi: 46 },
            DscpRange { lo: 40, hi: 40 },
            DscpRange { lo: 34, hi: 34 }
        ]
    );
    assert_eq!(
        s.rules[1].dst_port.as_ref().unwrap().values()[2],
        PortRange { lo: 8000, hi: 8080 }
    );
    assert_eq!(
        s.rules[2].ether_type.as_ref().unwrap().values(),
        &[EtherType(ETHERTYPE_ARP), EtherType(0x88cc)]
    );
    assert_eq!(compile(&s).unwrap().len(), 3);
}

#[test]
fn bad_values_are_explained_with_position() {
    let cases = [
        (
            "dst = \"10.1.0.0/8\"",
            "host bits set (did you mean 10.0.0.0/8?)",
        ),
        ("dst = \"10.0.0.0/33\"", "length must be 0..=32"),
        ("dst = \"banana\"", "not an IPv4 or IPv6 address"),
        ("dst = 10", "write it as a string"),
        ("dst_port = 70000", "port 70000 is outside 0..=65535"),
        ("dst_port = \"90-80\"", "is empty"),
        ("dst_port = []", "empty list matches nothing"),
        ("protocol = \"tpc\"", "unknown protocol `tpc`"),
        ("dscp = 64", "DSCP 64 is outside 0..=63"),
        ("dscp = \"af51\"", "unknown DSCP name `af51`"),
        ("vlan = 5000", "VLAN id 5000 is outside 0..=4095"),
        ("ether_type = \"ipx\"", "unknown EtherType `ipx`"),
        ("colour = \"red\"", "unknown field `colour`"),
    ];
    for (line, want) in cases {
        let text = format!("default = \"l0\"\n[[rule]]\nleaf = \"l1\"\n{line}\n");
        let err = spec(&text).expect_err(line);
        assert!(err.contains(want), "{line}: {err}");
        assert!(err.contains("line 4"), "{line}: no position in {err}");
    }
}

#[test]
fn compile_errors_name_the_rule() {
    let s = spec("default = \"nope\"").unwrap();
    assert_eq!(
        compile(&s).unwrap_err().to_string(),
        "classify.default: `nope` is not a leaf of the policy"
    );
    let s = spec("default = \"l0\"\n[[rule]]\nleaf = \"l1\"\n[[rule]]\nleaf = \"zz\"").unwrap();
    assert_eq!(
        compile(&s).unwrap_err().to_string(),
        "classify rule #2: leaf `zz` is not a leaf of the policy"
    );
    let s = spec("default = \"l0\"\n[[rule]]\nleaf = \"l1\"\nprotocol = \"icmp\"\ndst_port = 1")
        .unwrap();
    assert!(matches!(
        compile(&s),
        Err(RuleError::PortsWithoutTransport { rule: 1, .. })
    ));
}

#[test]
fn id_rules_match_workload_packets_only() {
    let s = spec(
        "default = \"l0\"\n\
         [[rule]]\nleaf = \"l1\"\nclass = [1, \"5-7\"]\n\
         [[rule]]\nleaf = \"l2\"\nflow = 42\n\
         [[rule]]\nleaf = \"l3\"\nprotocol = \"udp\"\n",
    )
    .unwrap();
    let rules = RuleSet::compile(&s.rules, &s.default, resolve).unwrap();
    assert_eq!(rules.classify_ids(0, 1), 1);
    assert_eq!(rules.classify_ids(9, 6), 1);
    assert_eq!(rules.classify_ids(42, 0), 2);
    // The header rule never matches a workload packet: the default takes it.
    assert_eq!(rules.classify_ids(3, 3), 0);
    assert_eq!(rules.matching_rule_ids(3, 3), None);
    // Id rules never match a frame.
    let key = udp_key(v4([10, 0, 0, 1]), v4([10, 0, 0, 2]), 53, 0);
    assert_eq!(rules.classify(&key), 3);
    let s =
        spec("default = \"l0\"\n[[rule]]\nleaf = \"l1\"\nclass = 1\nprotocol = \"tcp\"").unwrap();
    assert!(matches!(
        RuleSet::compile(&s.rules, &s.default, resolve),
        Err(RuleError::MixedConditions { rule: 1, .. })
    ));
    assert!(spec("default = \"l0\"\n[[rule]]\nleaf = \"l1\"\nclass = -1").is_err());
}

fn v4(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

fn udp_key(src: IpAddr, dst: IpAddr, dport: u16, dscp: u8) -> FlowKey {
    FlowKey {
        vlan: None,
        inner_vlan: None,
        ether_type: if src.is_ipv4() {
            ETHERTYPE_IPV4
        } else {
            ETHERTYPE_IPV6
        },
        ip: Some(IpKey {
            src,
            dst,
            protocol: 17,
            dscp,
            ports: Some(Ports {
                src: 1000,
                dst: dport,
            }),
        }),
    }
}

#[test]
fn first_match_wins_and_ip_conditions_skip_non_ip() {
    let s = spec(
        r#"
        default = "l0"
        [[rule]]
        leaf = "l1"
        dst = "198.18.0.0/16"
        dst_port = "5000-5999"
        [[rule]]
        leaf = "l2"
        dst = "198.18.0.0/15"
        [[rule]]
        leaf = "l3"
        dscp = "ef"
        "#,
    )
    .unwrap();
    let rules = RuleSet::compile(&s.rules, &s.default, resolve).unwrap();
    let a = v4([10, 0, 0, 1]);
    assert_eq!(rules.classify(&udp_key(a, v4([198, 18, 3, 4]), 5201, 0)), 1);
    assert_eq!(rules.classify(&udp_key(a, v4([198, 18, 3, 4]), 80, 0)), 2);
    assert_eq!(rules.classify(&udp_key(a, v4([198, 19, 3, 4]), 5201, 0)), 2);
    assert_eq!(
        rules.classify(&udp_key(a, v4([198, 20, 0, 1]), 5201, 46)),
        3
    );
    assert_eq!(rules.classify(&udp_key(a, v4([198, 20, 0, 1]), 5201, 0)), 0);
    let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
    assert_eq!(rules.classify(&udp_key(v6, v6, 5201, 0)), 0);
    let arp = FlowKey {
        vlan: None,
        inner_vlan: None,
        ether_type: ETHERTYPE_ARP,
        ip: None,
    };
    assert_eq!(rules.classify(&arp), 0);
    let mut frag = udp_key(a, v4([198, 18, 3, 4]), 5201, 0);
    frag.ip.as_mut().unwrap().ports = None;
    assert_eq!(rules.classify(&frag), 2, "fragments never match port rules");
}

/// Reference matcher: evaluates the rule as written, bit by bit for prefixes.
fn ref_prefix(p: &Prefix, a: IpAddr) -> bool {
    let (net, addr): (Vec<u8>, Vec<u8>) = match (p.addr, a) {
        (IpAddr::V4(n), IpAddr::V4(x)) => (n.octets().to_vec(), x.octets().to_vec()),
        (IpAddr::V6(n), IpAddr::V6(x)) => (n.octets().to_vec(), x.octets().to_vec()),
        _ => return false,
    };
    let bit = |v: &[u8], i: usize| (v[i / 8] >> (7 - i % 8)) & 1;
    (0..usize::from(p.len)).all(|i| bit(&net, i) == bit(&addr, i))
}

fn ref_matches(r: &RuleSpec, k: &FlowKey) -> bool {
    fn any<T>(m: &Option<Matches<T>>, f: impl Fn(&T) -> bool) -> bool {
        m.as_ref().is_none_or(|m| m.values().iter().any(f))
    }
    fn vlan(m: &Option<Matches<VlanRange>>, id: Option<u16>) -> bool {
        match (m, id) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(m), Some(id)) => m.values().iter().any(|r| r.lo <= id && id <= r.hi),
        }
    }
    if !any(&r.ether_type, |e| e.0 == k.ether_type)
        || !vlan(&r.vlan, k.vlan)
        || !vlan(&r.inner_vlan, k.inner_vlan)
    {
        return false;
    }
    let ip_conditions = r.src.is_some()
        || r.dst.is_some()
        || r.protocol.is_some()
        || r.dscp.is_some()
        || r.src_port.is_some()
        || r.dst_port.is_some();
    let Some(ip) = k.ip else {
        return !ip_conditions;
    };
    if !any(&r.src, |p| ref_prefix(p, ip.src))
        || !any(&r.dst, |p| ref_prefix(p, ip.dst))
        || !any(&r.protocol, |p| p.0 == ip.protocol)
        || !any(&r.dscp, |d| d.lo <= ip.dscp && ip.dscp <= d.hi)
    {
        return false;
    }
    if r.src_port.is_none() && r.dst_port.is_none() {
        return true;
    }
    let Some(ports) = ip.ports else {
        return false;
    };
    any(&r.src_port, |p| p.lo <= ports.src && ports.src <= p.hi)
        && any(&r.dst_port, |p| p.lo <= ports.dst && ports.dst <= p.hi)
}

fn ref_classify(rules: &[RuleSpec], k: &FlowKey) -> ClassId {
    rules
        .iter()
        .find(|r| ref_matches(r, k))
        .map_or(0, |r| resolve(&r.leaf).unwrap())
}

/// Addresses near a few bases, so prefixes of every length both match and miss.
fn addr() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        (0u8..4, any::<u8>()).prop_map(|(c, d)| v4([198, 18, c, d])),
        any::<u32>().prop_map(|a| IpAddr::V4(Ipv4Addr::from(a))),
        (0u16..4, any::<u16>())
            .prop_map(|(a, b)| IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, a, b))),
    ]
}

fn prefix() -> impl Strategy<Value = Prefix> {
    (addr(), any::<u8>()).prop_map(|(a, l)| match a {
        IpAddr::V4(x) => {
            let len = l % 33;
            let mask = if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
            Prefix {
                addr: IpAddr::V4(Ipv4Addr::from(u32::from(x) & mask)),
                len,
            }
        }
        IpAddr::V6(x) => {
            let len = l % 129;
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
            Prefix {
                addr: IpAddr::V6(Ipv6Addr::from(u128::from(x) & mask)),
                len,
            }
        }
    })
}

fn some_of<T: Clone + core::fmt::Debug + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> impl Strategy<Value = Option<Matches<T>>> {
    proptest::option::weighted(0.3, proptest::collection::vec(s, 1..3).prop_map(Matches))
}

fn range16(max: u16) -> impl Strategy<Value = (u16, u16)> {
    (0..=max, 0..=max).prop_map(|(a, b)| (a.min(b), a.max(b)))
}

fn rule() -> impl Strategy<Value = RuleSpec> {
    (
        0usize..4,
        some_of(prop_oneof![
            Just(EtherType(ETHERTYPE_IPV4)),
            Just(EtherType(ETHERTYPE_IPV6)),
            Just(EtherType(ETHERTYPE_ARP))
        ]),
        some_of(range16(8).prop_map(|(lo, hi)| VlanRange { lo, hi })),
        some_of(range16(8).prop_map(|(lo, hi)| VlanRange { lo, hi })),
        some_of(prefix()),
        some_of(prefix()),
        some_of(prop_oneof![
            Just(Protocol(6)),
            Just(Protocol(17)),
            Just(Protocol(1))
        ]),
        some_of(range16(12).prop_map(|(lo, hi)| PortRange { lo, hi })),
        some_of(range16(12).prop_map(|(lo, hi)| PortRange { lo, hi })),
        some_of(range16(63).prop_map(|(lo, hi)| DscpRange {
            lo: lo as u8,
            hi: hi as u8,
        })),
    )
        .prop_map(
            |(leaf, ether_type, vlan, inner_vlan, src, dst, protocol, src_port, dst_port, dscp)| {
                RuleSpec {
                    leaf: LEAVES[leaf].to_owned(),
                    ether_type,
                    vlan,
                    inner_vlan,
                    src,
                    dst,
                    protocol,
                    src_port,
                    dst_port,
                    dscp,
                    flow: None,
                    class: None,
                }
            },
        )
}

fn flow_key() -> impl Strategy<Value = FlowKey> {
    let ports = proptest::option::weighted(0.8, (0u16..12, 0u16..12));
    (
        proptest::option::of(0u16..8),
        proptest::option::of(0u16..8),
        proptest::option::weighted(0.85, (addr(), addr(), 0usize..4, 0u8..64, ports)),
    )
        .prop_map(|(vlan, inner_vlan, ip)| {
            let ip = ip.map(|(src, dst, p, dscp, ports)| IpKey {
                dst: if src.is_ipv4() == dst.is_ipv4() {
                    dst
                } else {
                    src
                },
                src,
                protocol: [6, 17, 1, 58][p],
                dscp,
                ports: ports.filter(|_| p < 2).map(|(src, dst)| Ports { src, dst }),
            });
            FlowKey {
                vlan,
                inner_vlan: vlan.and(inner_vlan),
                ether_type: match ip {
                    Some(IpKey {
                        src: IpAddr::V4(_), ..
                    }) => ETHERTYPE_IPV4,
                    Some(_) => ETHERTYPE_IPV6,
                    None => ETHERTYPE_ARP,
                },
                ip,
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn compiled_rules_match_reference(
        rules in proptest::collection::vec(rule(), 0..6),
        keys in proptest::collection::vec(flow_key(), 1..40),
    ) {
        let compiled = match RuleSet::compile(&rules, "l0", resolve) {
            Ok(c) => c,
            Err(RuleError::PortsWithoutTransport { rule, .. }) => {
                let r = &rules[rule - 1];
                prop_assert!(r.protocol.as_ref().unwrap().values().iter().all(|p| p.0 == 1));
                return Ok(());
            }
            Err(e) => return Err(TestCaseError::fail(e.to_string())),
        };
        for k in &keys {
            prop_assert_eq!(compiled.classify(k), ref_classify(&rules, k), "key {:?}", k);
        }
    }
}

fn frame_v4_udp(dport: u16) -> Vec<u8> {
    let builder = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
        .udp(4000, dport);
    let mut out = Vec::new();
    builder.write(&mut out, &[0; 8]).unwrap();
    out
}

fn classifier(malformed: MalformedAction) -> Classifier {
    let s = spec("default = \"l0\"\n[[rule]]\nleaf = \"l2\"\ndst_port = 5201\n").unwrap();
    let table = FlowTableConfig {
        max_flows: 4,
        idle_timeout: Duration::from_secs(1),
    };
    Classifier::new(compile(&s).unwrap(), table, malformed).unwrap()
}

#[test]
fn classifier_builds_descriptors() {
    let mut c = classifier(MalformedAction::Forward);
    let a = c.classify(&frame_v4_udp(5201), 10).unwrap();
    let b = c.classify(&frame_v4_udp(80), 20).unwrap();
    let a2 = c.classify(&frame_v4_udp(5201), 30).unwrap();
    assert_eq!((a.class, b.class), (2, 0));
    assert_eq!(a.flow, a2.flow);
    assert_ne!(a.flow, b.flow);
    assert_eq!((a.len as usize, a.arrival), (frame_v4_udp(5201).len(), 10));
    assert_eq!(c.flows().counters().created, 2);
    assert_eq!(a.dscp, 0);
    let mut ef = frame_v4_udp(5201);
    ef[15] = 46 << 2; // TOS byte of the IPv4 header: DSCP EF
    ef[24..26].copy_from_slice(&[0, 0]);
    let sum = ef[14..34]
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum::<u32>();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ef[24..26].copy_from_slice(&sum.to_be_bytes());
    assert_eq!(
        c.classify(&ef, 40).unwrap().dscp,
        46,
        "rank programs read it"
    );
}

#[test]
fn malformed_forward_goes_to_default_leaf_as_one_flow() {
    let mut c = classifier(MalformedAction::Forward);
    let mut bad = frame_v4_udp(5201);
    bad[14] = 0x41; // IHL 1: shorter than an IPv4 header
    let p = c.classify(&bad, 0).unwrap();
    let q = c.classify(&[0u8; 5], 1).unwrap();
    assert_eq!((p.class, q.class), (0, 0));
    assert_eq!(p.flow, q.flow);
    assert_eq!(c.flows().key(p.flow), Some(&FlowKey::MALFORMED));
    let counts = c.counters().malformed;
    assert_eq!(
        (
            counts.get(wire::Malformed::Ipv4),
            counts.get(wire::Malformed::Ethernet)
        ),
        (1, 1)
    );
    assert_eq!(c.counters().dropped, 0);
}

#[test]
fn malformed_drop_hands_back_a_counted_drop() {
    let mut c = classifier(MalformedAction::Drop);
    let d = c.classify(&[0u8; 5], 7).unwrap_err();
    assert_eq!(d.reason, DropReason::Malformed);
    assert_eq!((d.packet.len, d.packet.arrival), (5, 7));
    assert_eq!(c.counters().dropped, 1);
    assert_eq!(c.counters().malformed.total(), 1);
    assert!(c.flows().is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn classifier_never_panics_and_counts_everything(
        frames in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..80), 1..20),
    ) {
        let mut c = classifier(MalformedAction::Drop);
        let mut ok = 0u64;
        for (i, f) in frames.iter().enumerate() {
            if let Ok(p) = c.classify(f, i as u64) {
                prop_assert!(p.flow < 4);
                prop_assert_eq!(p.len as usize, f.len());
                ok += 1;
            }
        }
        let k = c.counters();
        prop_assert_eq!(k.frames, frames.len() as u64);
        prop_assert_eq!(k.frames, ok + k.dropped);
        prop_assert_eq!(k.dropped, k.malformed.total());
    }
}

/// A frame of a burst: a valid UDP frame to one of a few ports (so flows
/// repeat within a burst), or bytes that may not parse.
fn burst_frame() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => (0u16..12).prop_map(|p| frame_v4_udp(5195 + p)),
        1 => proptest::collection::vec(any::<u8>(), 0..60),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Bursts give each frame what classifying it alone gives: the same
    /// descriptors (flows created, evicted and reused in the same order in a
    /// table of 4 flows), drops and counters.
    #[test]
    fn bursts_classify_as_single_frames(
        frames in proptest::collection::vec(burst_frame(), 1..80),
        drop in any::<bool>(),
    ) {
        let action = if drop { MalformedAction::Drop } else { MalformedAction::Forward };
        let mut single = classifier(action);
        let mut burst = single.clone();
        let now = 1_000;
        let one: Vec<_> = frames.iter().map(|f| single.classify(f, now)).collect();
        let slices: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
        let mut many = Vec::new();
        burst.classify_burst(&slices, now, |i, r| many.push((i, r)));
        prop_assert_eq!(many.len(), frames.len());
        for (i, (j, r)) in many.into_iter().enumerate() {
            prop_assert_eq!(i, j);
            prop_assert_eq!(&r, &one[i], "frame {}", i);
        }
        prop_assert_eq!(single.counters(), burst.counters());
        prop_assert_eq!(single.flows().counters(), burst.flows().counters());
    }
}

#[test]
fn a_hash_from_another_table_is_recomputed() {
    let mut a = classifier(MalformedAction::Forward);
    let b = classifier(MalformedAction::Forward);
    let frame = frame_v4_udp(5201);
    let first = a.classify(&frame, 0).unwrap();
    // Staged by `b`, whose hash keys differ: `a` still finds the flow.
    let staged = b.stage(&frame);
    let again = a.complete(&staged, 1).unwrap();
    assert_eq!(first.flow, again.flow);
    assert_eq!(a.flows().counters().created, 1);
}
