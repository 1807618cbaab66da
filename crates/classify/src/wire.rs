//! Header parsing: an Ethernet frame reduced to a small `Copy` summary.
//!
//! Sans-IO: [`parse`] reads a byte slice and nothing else. The common frame
//! (Ethernet II, IPv4 without options or IPv6 without extension headers, TCP or
//! UDP, unfragmented) is read directly at fixed offsets. Every other frame goes
//! to the `etherparse` crate in its strict mode (`SlicedPacket::from_ethernet`,
//! [`parse_general`]), which checks every length field it walks; this module maps
//! its result onto the fields the classifier needs and its errors onto a short
//! list of [`Malformed`] reasons. Both paths give the same result on every
//! frame the direct one accepts (property tests and the `parse` fuzz target).
//!
//! # What is understood
//! - Ethernet II, followed by up to two 802.1Q / 802.1ad VLAN tags (the outer tag's id
//!   goes to [`FlowKey::vlan`], the inner one to [`FlowKey::inner_vlan`]);
//! - IPv4 (options skipped, authentication header skipped) and IPv6 (extension headers
//!   skipped): source, destination, DSCP, and the transport protocol number;
//! - TCP and UDP ports. Any fragment (IPv4 MF flag or non-zero offset, IPv6 fragment
//!   header) carries no ports in its key, so all fragments of a datagram, including the
//!   first, stay in one flow and in order.
//! - Everything else (ARP, LLDP, unknown EtherTypes, ICMP, SCTP, ...) parses as a valid
//!   frame whose key carries only what was understood (EtherType, VLAN ids, and the IP
//!   fields when there is an IP header).
//!
//! # Malformed frames
//! A frame whose headers contradict themselves or are cut short (shorter than an
//! Ethernet header, a truncated VLAN tag, an IPv4 header with IHL < 5 or a total length
//! beyond the frame, a truncated IPv6 extension chain, a TCP data offset beyond the
//! segment, a UDP length beyond the datagram, ...) yields `Err(Malformed)` naming the
//! layer. What happens to it next is the classifier's documented rule (see
//! [`crate::MalformedAction`]). Trailing bytes after an IP packet's stated
//! length (Ethernet padding) are not an error. Checksums are not verified: a forwarder
//! leaves that to the receiving host.
//!
//! `parse` never panics on any input (checked by a property test over random bytes and
//! by the fuzz target in `crates/classify/fuzz`).

use std::net::IpAddr;

pub(crate) mod fast;

use etherparse::err::packet::SliceError;
use etherparse::err::Layer;
use etherparse::{LinkExtSlice, LinkSlice, NetSlice, SlicedPacket, TransportSlice};

/// EtherType of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// EtherType of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
/// EtherType of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// IP protocol number of UDP.
pub const PROTO_UDP: u8 = 17;

/// The IP part of a flow key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IpKey {
    /// Source address.
    pub src: IpAddr,
    /// Destination address.
    pub dst: IpAddr,
    /// Transport protocol number (after IPv6 extension headers and the IPv4
    /// authentication header).
    pub protocol: u8,
    /// Differentiated services code point (the upper 6 bits of the TOS / traffic
    /// class byte; the ECN bits are not part of the key because they change within
    /// a flow).
    pub dscp: u8,
    /// TCP/UDP ports; `None` for other protocols and for fragments.
    pub ports: Option<Ports>,
}

/// TCP or UDP ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ports {
    /// Source port.
    pub src: u16,
    /// Destination port.
    pub dst: u16,
}

/// What identifies a flow and what classification rules look at.
///
/// Small and `Copy`; hashed by the flow table. Two frames belong to the same flow
/// exactly when their keys are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// Outer VLAN id (12 bits), if the frame is tagged.
    pub vlan: Option<u16>,
    /// Inner VLAN id of a double-tagged (QinQ) frame.
    pub inner_vlan: Option<u16>,
    /// The innermost EtherType (after the VLAN tags).
    pub ether_type: u16,
    /// IP fields, when the frame carries IPv4 or IPv6.
    pub ip: Option<IpKey>,
}

impl FlowKey {
    /// The key as 48 bytes, for hashing in one write: the addresses (an IPv4
    /// address in its IPv4-mapped IPv6 form), the ports, protocol, DSCP,
    /// EtherType and VLAN ids, then a byte of flags saying which optional parts
    /// are present and which addresses are IPv6. Keys are equal exactly when
    /// their bytes are.
    #[must_use]
    #[inline]
    pub fn packed(&self) -> [u8; 48] {
        let mut out = [0u8; 48];
        let mut flags = 0u8;
        if let Some(ip) = &self.ip {
            flags |= 1 | u8::from(ip.src.is_ipv6()) << 1 | u8::from(ip.dst.is_ipv6()) << 2;
            out[0..16].copy_from_slice(&mapped(ip.src));
            out[16..32].copy_from_slice(&mapped(ip.dst));
            if let Some(p) = ip.ports {
                flags |= 1 << 3;
                out[32..34].copy_from_slice(&p.src.to_le_bytes());
                out[34..36].copy_from_slice(&p.dst.to_le_bytes());
            }
            out[36] = ip.protocol;
            out[37] = ip.dscp;
        }
        out[38..40].copy_from_slice(&self.ether_type.to_le_bytes());
        if let Some(v) = self.vlan {
            flags |= 1 << 4;
            out[40..42].copy_from_slice(&v.to_le_bytes());
        }
        if let Some(v) = self.inner_vlan {
            flags |= 1 << 5;
            out[42..44].copy_from_slice(&v.to_le_bytes());
        }
        out[44] = flags;
        out
    }
    /// The one key shared by every malformed frame the classifier forwards: all
    /// malformed frames form one flow in the default leaf (their partly parsed
    /// headers are not trusted to pick a flow). Its VLAN id, `0xffff`, lies outside
    /// the 12-bit range, so no parsed frame has this key.
    pub const MALFORMED: FlowKey = FlowKey {
        vlan: Some(u16::MAX),
        inner_vlan: None,
        ether_type: 0,
        ip: None,
    };
}

/// An address as 16 bytes: IPv6 as is, IPv4 in its IPv4-mapped form.
#[inline]
fn mapped(addr: IpAddr) -> [u8; 16] {
    match addr {
        IpAddr::V4(a) => a.to_ipv6_mapped().octets(),
        IpAddr::V6(a) => a.octets(),
    }
}

/// The summary of one parsed frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Headers {
    /// The flow key.
    pub key: FlowKey,
    /// Length of the frame in bytes, as given to [`parse`].
    pub len: u32,
    /// Whether the IP packet is a fragment (its key then has no ports).
    pub fragment: bool,
    /// Where the UDP payload starts in the frame (unfragmented UDP only).
    pub udp_payload: Option<u32>,
    /// Where the IPv4 options lie in the frame: start and length (a header with
    /// options only).
    pub ipv4_options: Option<(u32, u32)>,
}

/// Why a frame could not be parsed: the layer at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Malformed {
    /// Shorter than an Ethernet II header (14 bytes).
    Ethernet = 0,
    /// A truncated VLAN tag.
    Vlan,
    /// A bad or truncated IPv4 header or packet (also an IP version that does not
    /// match the EtherType).
    Ipv4,
    /// A bad or truncated IPv6 header or packet.
    Ipv6,
    /// A bad or truncated IP extension header (IPv6 extensions, IPv4 authentication
    /// header).
    IpExtension,
    /// A bad or truncated TCP header.
    Tcp,
    /// A truncated UDP header or a UDP length beyond the datagram.
    Udp,
    /// Any other layer (ARP, ICMP, MACsec) cut short.
    Other,
}

impl Malformed {
    /// Number of reasons; the length of per-reason counter arrays.
    pub const COUNT: usize = 8;

    /// Every reason, in counter-index order.
    pub const ALL: [Malformed; Self::COUNT] = [
        Malformed::Ethernet,
        Malformed::Vlan,
        Malformed::Ipv4,
        Malformed::Ipv6,
        Malformed::IpExtension,
        Malformed::Tcp,
        Malformed::Udp,
        Malformed::Other,
    ];

    /// Stable snake_case name, used in tables and JSON.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Malformed::Ethernet => "ethernet",
            Malformed::Vlan => "vlan",
            Malformed::Ipv4 => "ipv4",
            Malformed::Ipv6 => "ipv6",
            Malformed::IpExtension => "ip_extension",
            Malformed::Tcp => "tcp",
            Malformed::Udp => "udp",
            Malformed::Other => "other",
        }
    }

    /// Index of this reason in per-reason counter arrays.
    #[must_use]
    pub const fn index(self) -> usize {
        self as usize
    }

    fn from_layer(layer: Layer) -> Malformed {
        match layer {
            Layer::Ethernet2Header | Layer::EtherPayload => Malformed::Ethernet,
            Layer::VlanHeader => Malformed::Vlan,
            Layer::IpHeader | Layer::Ipv4Header | Layer::Ipv4Packet => Malformed::Ipv4,
            Layer::Ipv6Header | Layer::Ipv6Packet => Malformed::Ipv6,
            Layer::IpAuthHeader
            | Layer::Ipv6ExtHeader
            | Layer::Ipv6HopByHopHeader
            | Layer::Ipv6DestOptionsHeader
            | Layer::Ipv6RouteHeader
            | Layer::Ipv6FragHeader => Malformed::IpExtension,
            Layer::TcpHeader => Malformed::Tcp,
            Layer::UdpHeader | Layer::UdpPayload => Malformed::Udp,
            _ => Malformed::Other,
        }
    }

    pub(crate) fn from_slice_error(err: &SliceError) -> Malformed {
        match err {
            SliceError::Len(len) => Malformed::from_layer(len.layer),
            SliceError::Ip(_) | SliceError::Ipv4(_) => Malformed::Ipv4,
            SliceError::Ipv6(_) => Malformed::Ipv6,
            SliceError::Ipv4Exts(_) | SliceError::Ipv6Exts(_) => Malformed::IpExtension,
            SliceError::Tcp(_) => Malformed::Tcp,
            SliceError::LinuxSll(_) | SliceError::Macsec(_) => Malformed::Other,
        }
    }
}

impl core::fmt::Display for Malformed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "malformed {} header", self.name())
    }
}

impl std::error::Error for Malformed {}

/// Per-reason counts of malformed frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MalformedCounts {
    /// Frames, indexed by [`Malformed::index`].
    pub frames: [u64; Malformed::COUNT],
}

impl MalformedCounts {
    /// Counts one frame.
    #[inline]
    pub fn record(&mut self, reason: Malformed) {
        self.frames[reason.index()] += 1;
    }

    /// Frames counted for `reason`.
    #[must_use]
    pub fn get(&self, reason: Malformed) -> u64 {
        self.frames[reason.index()]
    }

    /// Frames counted for any reason.
    #[must_use]
    pub fn total(&self) -> u64 {
        self.frames.iter().sum()
    }
}

/// Parses an Ethernet II frame (starting at the destination MAC, without FCS).
///
/// Cost: one pass over the headers, no allocation.
///
/// # Errors
/// [`Malformed`] names the first layer whose header is inconsistent or truncated.
///
/// # Examples
/// ```
/// use eiffel_classify::wire::{parse, ETHERTYPE_ARP};
/// let mut arp = [0u8; 42];
/// arp[12..14].copy_from_slice(&ETHERTYPE_ARP.to_be_bytes());
/// let headers = parse(&arp).unwrap();
/// assert_eq!(headers.key.ether_type, ETHERTYPE_ARP);
/// assert!(headers.key.ip.is_none());
/// ```
#[inline]
pub fn parse(frame: &[u8]) -> Result<Headers, Malformed> {
    match fast::headers(frame) {
        Some(h) => Ok(h),
        None => parse_general(frame),
    }
}

/// [`parse`] by etherparse's strict slicing alone, for every frame: what
/// `parse` returns for frames outside the common layout that its fast path reads
/// directly, and the reference the tests and the `parse` fuzz target check
/// that direct reading against.
pub fn parse_general(frame: &[u8]) -> Result<Headers, Malformed> {
    let sliced = SlicedPacket::from_ethernet(frame).map_err(|e| Malformed::from_slice_error(&e))?;
    let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
    let (ether_type, vlans) = link_fields(&sliced)?;
    let net = net_fields(frame, sliced.net.as_ref());
    let (ports, udp_payload) = if net.fragment {
        (None, None)
    } else {
        transport_fields(frame, sliced.transport.as_ref())
    };
    Ok(Headers {
        key: FlowKey {
            vlan: vlans[0],
            inner_vlan: vlans[1],
            ether_type,
            ip: net.ip.map(|ip| IpKey { ports, ..ip }),
        },
        len,
        fragment: net.fragment,
        udp_payload,
        ipv4_options: net.ipv4_options,
    })
}

/// The innermost EtherType of a sliced frame and its outer and inner VLAN ids
/// (tags beyond the second are walked for the EtherType but not kept).
fn link_fields(sliced: &SlicedPacket<'_>) -> Result<(u16, [Option<u16>; 2]), Malformed> {
    let mut ether_type = match &sliced.link {
        Some(LinkSlice::Ethernet2(eth)) => eth.ether_type().0,
        // `from_ethernet` always yields an Ethernet II link layer; anything else
        // would be an etherparse contract change, reported rather than trusted.
        _ => return Err(Malformed::Ethernet),
    };
    let mut vlans = [None; 2];
    let mut tags = 0;
    for ext in &sliced.link_exts {
        match ext {
            LinkExtSlice::Vlan(tag) => {
                if let Some(slot) = vlans.get_mut(tags) {
                    *slot = Some(tag.vlan_identifier().value());
                }
                tags += 1;
                ether_type = tag.ether_type().0;
            }
            LinkExtSlice::Macsec(_) => return Err(Malformed::Other),
        }
    }
    Ok((ether_type, vlans))
}

/// What the network layer of a sliced frame gives a [`Headers`].
struct NetFields {
    /// The key's IP part, ports not yet read; `None` without an IP header.
    ip: Option<IpKey>,
    /// Whether the IP packet is a fragment.
    fragment: bool,
    /// Where the IPv4 options lie in the frame, if there are any.
    ipv4_options: Option<(u32, u32)>,
}

/// The IP fields of a sliced frame's network layer `net` (`frame` the whole
/// frame, for the options' offset).
fn net_fields(frame: &[u8], net: Option<&NetSlice<'_>>) -> NetFields {
    match net {
        Some(NetSlice::Ipv4(v4)) => {
            let h = v4.header();
            let options = h.options();
            NetFields {
                ip: Some(IpKey {
                    src: IpAddr::from(h.source()),
                    dst: IpAddr::from(h.destination()),
                    protocol: v4.payload().ip_number.0,
                    dscp: h.dcp().value(),
                    ports: None,
                }),
                fragment: v4.is_payload_fragmented(),
                ipv4_options: (!options.is_empty())
                    .then(|| (offset_in(frame, options), options.len() as u32)),
            }
        }
        Some(NetSlice::Ipv6(v6)) => {
            let h = v6.header();
            NetFields {
                ip: Some(IpKey {
                    src: IpAddr::from(h.source()),
                    dst: IpAddr::from(h.destination()),
                    protocol: v6.payload().ip_number.0,
                    dscp: h.dscp().value(),
                    ports: None,
                }),
                fragment: v6.is_payload_fragmented(),
                ipv4_options: None,
            }
        }
        Some(NetSlice::Arp(_)) | None => NetFields {
            ip: None,
            fragment: false,
            ipv4_options: None,
        },
    }
}

/// The ports of an unfragmented TCP or UDP segment, and for UDP where its
/// payload starts in `frame`; `(None, None)` for any other transport.
fn transport_fields(
    frame: &[u8],
    transport: Option<&TransportSlice<'_>>,
) -> (Option<Ports>, Option<u32>) {
    match transport {
        Some(TransportSlice::Tcp(tcp)) => (
            Some(Ports {
                src: tcp.source_port(),
                dst: tcp.destination_port(),
            }),
            None,
        ),
        Some(TransportSlice::Udp(udp)) => (
            Some(Ports {
                src: udp.source_port(),
                dst: udp.destination_port(),
            }),
            Some(offset_in(frame, udp.payload())),
        ),
        _ => (None, None),
    }
}

/// Where `part`, a subslice of `frame`, starts in it.
fn offset_in(frame: &[u8], part: &[u8]) -> u32 {
    (part.as_ptr() as usize - frame.as_ptr() as usize) as u32
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use proptest::prelude::*;

    const SRC_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];
    const DST_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];

    fn build(builder: etherparse::PacketBuilderStep<etherparse::UdpHeader>) -> Vec<u8> {
        let payload = [0xab; 10];
        let mut out = Vec::with_capacity(builder.size(payload.len()));
        builder.write(&mut out, &payload).unwrap();
        out
    }

    /// A valid Ethernet II frame over IPv4 or IPv6 and TCP or UDP, DSCP set.
    fn common_frame(v6: bool, tcp: bool, payload: usize) -> Vec<u8> {
        let eth = PacketBuilder::ethernet2(SRC_MAC, DST_MAC);
        let ip = if v6 {
            eth.ip(etherparse::IpHeaders::Ipv6(
                etherparse::Ipv6Header {
                    traffic_class: 26 << 2,
                    source: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    destination: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                    hop_limit: 64,
                    ..Default::default()
                },
                Default::default(),
            ))
        } else {
            eth.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        };
        let data = vec![0x5a; payload];
        let mut out = Vec::new();
        if tcp {
            ip.tcp(40000, 80, 7, 1000).write(&mut out, &data).unwrap();
        } else {
            ip.udp(40000, 53).write(&mut out, &data).unwrap();
        }
        out
    }

    #[test]
    fn common_frames_take_the_fast_path() {
        for (v6, tcp) in [(false, false), (false, true), (true, false), (true, true)] {
            let frame = common_frame(v6, tcp, 10);
            let fast = fast::headers(&frame).expect("a common frame");
            assert_eq!(Ok(fast), parse_general(&frame));
        }
    }

    fn udp_v4() -> Vec<u8> {
        build(
            PacketBuilder::ethernet2(SRC_MAC, DST_MAC)
                .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
                .udp(4000, 5201),
        )
    }

    #[test]
    fn ipv4_udp_five_tuple() {
        let h = parse(&udp_v4()).unwrap();
        let ip = h.key.ip.unwrap();
        assert_eq!(ip.src, "198.18.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(ip.dst, "198.18.0.2".parse::<IpAddr>().unwrap());
        assert_eq!(ip.protocol, PROTO_UDP);
        assert_eq!(
            ip.ports,
            Some(Ports {
                src: 4000,
                dst: 5201
            })
        );
        assert_eq!(h.key.ether_type, ETHERTYPE_IPV4);
        assert_eq!((h.key.vlan, h.key.inner_vlan), (None, None));
        assert_eq!(h.len as usize, udp_v4().len());
        assert!(!h.fragment);
    }

    #[test]
    fn ipv6_tcp_with_dscp_and_double_vlan() {
        let payload = [1u8; 20];
        let builder = PacketBuilder::ethernet2(SRC_MAC, DST_MAC)
            .double_vlan(
                etherparse::VlanId::try_new(100).unwrap(),
                etherparse::VlanId::try_new(7).unwrap(),
            )
            .ip(etherparse::IpHeaders::Ipv6(
                etherparse::Ipv6Header {
                    traffic_class: 46 << 2 | 1,
                    source: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
                    destination: [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2],
                    hop_limit: 64,
                    ..Default::default()
                },
                Default::default(),
            ))
            .tcp(33000, 443, 1, 1000);
        let mut frame = Vec::new();
        builder.write(&mut frame, &payload).unwrap();
        let h = parse(&frame).unwrap();
        assert_eq!((h.key.vlan, h.key.inner_vlan), (Some(100), Some(7)));
        assert_eq!(h.key.ether_type, ETHERTYPE_IPV6);
        let ip = h.key.ip.unwrap();
        assert_eq!((ip.protocol, ip.dscp), (PROTO_TCP, 46));
        assert_eq!(
            ip.ports,
            Some(Ports {
                src: 33000,
                dst: 443
            })
        );
    }

    #[test]
    fn ethernet_padding_is_not_an_error() {
        let mut frame = udp_v4();
        frame.resize(64, 0);
        let h = parse(&frame).unwrap();
        assert_eq!(h.len, 64);
        assert_eq!(h.key.ip.unwrap().ports.unwrap().dst, 5201);
    }

    #[test]
    fn truncations_are_named_by_layer() {
        let frame = udp_v4();
        assert_eq!(parse(&frame[..10]), Err(Malformed::Ethernet));
        assert_eq!(parse(&frame[..20]), Err(Malformed::Ipv4));
        // Full IPv4 header, UDP cut inside its header: the IPv4 total length now
        // exceeds the frame, which is reported at the IPv4 layer.
        assert_eq!(parse(&frame[..38]), Err(Malformed::Ipv4));
        let mut bad_ihl = frame.clone();
        bad_ihl[14] = 0x43;
        assert_eq!(parse(&bad_ihl), Err(Malformed::Ipv4));
        let mut bad_udp_len = frame.clone();
        bad_udp_len[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&500u16.to_be_bytes());
        assert_eq!(parse(&bad_udp_len), Err(Malformed::Udp));
        let mut tagged = frame[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0x00, 0x00]);
        assert_eq!(parse(&tagged), Err(Malformed::Vlan));
    }

    #[test]
    fn bad_tcp_data_offset_is_malformed() {
        let payload = [0u8; 4];
        let builder = PacketBuilder::ethernet2(SRC_MAC, DST_MAC)
            .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
            .tcp(1, 2, 3, 4);
        let mut frame = Vec::new();
        builder.write(&mut frame, &payload).unwrap();
        // Data offset 15 words = 60 bytes, beyond the 24-byte segment.
        frame[14 + 20 + 12] = 0xf0;
        assert_eq!(parse(&frame), Err(Malformed::Tcp));
    }

    #[test]
    fn fragments_have_no_ports() {
        let mut frame = udp_v4();
        // Set the More Fragments flag: the first fragment of a datagram.
        frame[14 + 6] |= 0x20;
        let h = parse(&frame).unwrap();
        assert!(h.fragment);
        let ip = h.key.ip.unwrap();
        assert_eq!((ip.protocol, ip.ports), (PROTO_UDP, None));
    }

    #[test]
    fn malformed_names_are_unique_and_indexed() {
        for (i, r) in Malformed::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        let mut names: Vec<_> = Malformed::ALL.iter().map(|r| r.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Malformed::COUNT);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        #[test]
        fn never_panics_on_random_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&bytes);
        }

        /// The direct reading of common frames agrees with etherparse's
        /// slicing on valid frames of every common layout, mutated and cut.
        #[test]
        fn fast_path_agrees_with_the_general_path(
            v6 in any::<bool>(),
            tcp in any::<bool>(),
            payload in 0usize..40,
            flips in proptest::collection::vec((0usize..90, any::<u8>()), 0..4),
            cut in 0usize..40,
            pad in 0usize..8,
        ) {
            let mut frame = common_frame(v6, tcp, payload);
            for (pos, val) in flips {
                if let Some(b) = frame.get_mut(pos) {
                    *b = val;
                }
            }
            frame.truncate(frame.len().saturating_sub(cut));
            frame.resize(frame.len() + pad, 0);
            prop_assert_eq!(parse(&frame), parse_general(&frame));
        }

        /// Random bytes behind an IPv4 or IPv6 EtherType: both paths agree.
        #[test]
        fn fast_path_agrees_on_random_ip_packets(
            v6 in any::<bool>(),
            mut bytes in proptest::collection::vec(any::<u8>(), 15..120),
        ) {
            bytes[12..14].copy_from_slice(&if v6 { [0x86, 0xdd] } else { [0x08, 0x00] });
            bytes[14] = if v6 { 0x60 | bytes[14] & 0x0f } else { 0x45 };
            prop_assert_eq!(parse(&bytes), parse_general(&bytes));
        }

        #[test]
        fn never_panics_on_mutated_valid_frames(
            flips in proptest::collection::vec((0usize..60, any::<u8>()), 1..6),
            cut in 0usize..60,
        ) {
            let mut frame = udp_v4();
            for (pos, val) in flips {
                if let Some(b) = frame.get_mut(pos) {
                    *b = val;
                }
            }
            frame.truncate(frame.len().saturating_sub(cut));
            if let Ok(h) = parse(&frame) {
                prop_assert_eq!(h.len as usize, frame.len());
            }
        }
    }
}
