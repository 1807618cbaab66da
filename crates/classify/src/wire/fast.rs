//! The common frame read directly: Ethernet II without VLAN tags, then IPv4
//! without options or IPv6 without extension headers, unfragmented, carrying
//! TCP or UDP, every length field consistent. For such a frame [`headers`]
//! returns what [`super::parse_general`] (etherparse's strict slicing) returns;
//! for every other frame it returns `None` and the general path decides, so
//! the errors and the rarer layouts keep a single definition. The property
//! tests and the `parse` fuzz target check the two paths against each other.
//!
//! Reading the four or five fields a key needs at fixed offsets costs a few
//! bounds checks, where the general path builds and walks etherparse's whole
//! slice of the frame (a third of a classification's time before this path).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::{FlowKey, Headers, IpKey, Ports, ETHERTYPE_IPV4, ETHERTYPE_IPV6, PROTO_TCP, PROTO_UDP};

const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const IPV6_LEN: usize = 40;
const TCP_MIN: usize = 20;
const UDP_LEN: usize = 8;

/// The network layer of a common frame: its IP key (ports not yet read), and
/// the transport segment with where it starts in the frame.
pub(crate) struct Network<'a> {
    pub(crate) ether_type: u16,
    pub(crate) ip: IpKey,
    /// Offset of the transport header in the frame.
    pub(crate) start: usize,
    /// The IP payload, padding after it excluded.
    pub(crate) segment: &'a [u8],
}

/// Ethernet II without VLAN tags, then IPv4 without options or IPv6 without
/// extension headers, unfragmented, every length consistent; `None` otherwise.
#[inline]
pub(crate) fn network(frame: &[u8]) -> Option<Network<'_>> {
    let eth = frame.get(..ETH_LEN)?;
    let ether_type = u16::from_be_bytes([eth[12], eth[13]]);
    let net = &frame[ETH_LEN..];
    let (ip, l4_start, segment) = match ether_type {
        ETHERTYPE_IPV4 => ipv4(net)?,
        ETHERTYPE_IPV6 => ipv6(net)?,
        _ => return None,
    };
    Some(Network {
        ether_type,
        ip,
        start: ETH_LEN + l4_start,
        segment,
    })
}

/// The headers of a common frame, or `None` for the general path.
#[inline]
pub(super) fn headers(frame: &[u8]) -> Option<Headers> {
    let n = network(frame)?;
    let (ports, payload) = transport(n.ip.protocol, n.segment)?;
    Some(Headers {
        key: FlowKey {
            vlan: None,
            inner_vlan: None,
            ether_type: n.ether_type,
            ip: Some(IpKey {
                ports: Some(ports),
                ..n.ip
            }),
        },
        len: u32::try_from(frame.len()).ok()?,
        fragment: false,
        udp_payload: payload.map(|p| (n.start + p) as u32),
        ipv4_options: None,
    })
}

/// An IPv4 header of 20 bytes, unfragmented, whose total length fits the
/// frame: the key's IP part, where its payload starts (from the IP header)
/// and the payload up to the total length (padding after it excluded).
#[inline]
fn ipv4(net: &[u8]) -> Option<(IpKey, usize, &[u8])> {
    let h = net.get(..IPV4_LEN)?;
    if h[0] != 0x45 {
        return None; // version 4 with options, or not version 4
    }
    let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
    let flags_offset = u16::from_be_bytes([h[6], h[7]]);
    // More-fragments or a fragment offset: a fragment.
    if flags_offset & 0x3fff != 0 || total < IPV4_LEN || total > net.len() {
        return None;
    }
    let ip = IpKey {
        src: IpAddr::V4(Ipv4Addr::new(h[12], h[13], h[14], h[15])),
        dst: IpAddr::V4(Ipv4Addr::new(h[16], h[17], h[18], h[19])),
        protocol: h[9],
        dscp: h[1] >> 2,
        ports: None,
    };
    Some((ip, IPV4_LEN, &net[IPV4_LEN..total]))
}

/// An IPv6 header whose next header is the transport and whose (non-zero)
/// payload length fits the frame.
#[inline]
fn ipv6(net: &[u8]) -> Option<(IpKey, usize, &[u8])> {
    let h = net.get(..IPV6_LEN)?;
    if h[0] >> 4 != 6 {
        return None;
    }
    let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
    if payload == 0 || IPV6_LEN + payload > net.len() {
        return None;
    }
    let mut src = [0u8; 16];
    let mut dst = [0u8; 16];
    src.copy_from_slice(&h[8..24]);
    dst.copy_from_slice(&h[24..40]);
    let traffic_class = (h[0] & 0x0f) << 4 | h[1] >> 4;
    let ip = IpKey {
        src: IpAddr::V6(Ipv6Addr::from(src)),
        dst: IpAddr::V6(Ipv6Addr::from(dst)),
        protocol: h[6],
        dscp: traffic_class >> 2,
        ports: None,
    };
    Some((ip, IPV6_LEN, &net[IPV6_LEN..IPV6_LEN + payload]))
}

/// The ports of a TCP segment whose data offset fits it, or of a UDP datagram
/// whose length field is at least its header and fits the IP payload (with
/// where the UDP payload starts, relative to the transport header).
#[inline]
pub(crate) fn transport(protocol: u8, l4: &[u8]) -> Option<(Ports, Option<usize>)> {
    let ports = |h: &[u8]| Ports {
        src: u16::from_be_bytes([h[0], h[1]]),
        dst: u16::from_be_bytes([h[2], h[3]]),
    };
    match protocol {
        PROTO_TCP => {
            let h = l4.get(..TCP_MIN)?;
            let data_offset = usize::from(h[12] >> 4) * 4;
            (data_offset >= TCP_MIN && data_offset <= l4.len()).then(|| (ports(h), None))
        }
        PROTO_UDP => {
            let h = l4.get(..UDP_LEN)?;
            let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
            (len >= UDP_LEN && len <= l4.len()).then(|| (ports(h), Some(UDP_LEN)))
        }
        _ => None,
    }
}
