//! Transport checksums completed in software.
//!
//! A host that hands a TCP or UDP packet to an interface with transmit checksum
//! offload on leaves its checksum for the network card to fill in (Linux's
//! `CHECKSUM_PARTIAL`; a packet socket sees such frames flagged
//! `TP_STATUS_CSUMNOTREADY`). Between virtual interfaces no card ever does, so a
//! forwarder that puts such a frame on another interface must finish the checksum
//! itself, or the receiving host discards the segment. [`complete`] does: it
//! finds the TCP or UDP header behind the Ethernet, VLAN, IPv4 or IPv6 (with
//! extension) headers and writes the full RFC 1071 checksum over the pseudo-header
//! and the whole segment, whatever the checksum field held before.
//!
//! Sans-IO and allocation-free: the sum runs over 64-bit words with end-around
//! carry, about one cycle per 8 bytes.
//!
//! ```
//! use eiffel_classify::checksum::{complete, Completed};
//! // An Ethernet + IPv4 + UDP frame with 4 payload bytes and a checksum of 0.
//! let mut frame = vec![0u8; 14 + 20 + 8 + 4];
//! frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
//! frame[14] = 0x45;
//! frame[16..18].copy_from_slice(&32u16.to_be_bytes()); // IPv4 total length
//! frame[22] = 64; // TTL
//! frame[23] = 17; // UDP
//! frame[26..30].copy_from_slice(&[198, 18, 0, 1]);
//! frame[30..34].copy_from_slice(&[198, 18, 0, 2]);
//! frame[38..40].copy_from_slice(&12u16.to_be_bytes()); // UDP length
//! frame[42..46].copy_from_slice(b"ping");
//! assert_eq!(complete(&mut frame), Ok(Completed::Udp));
//! assert_ne!(&frame[40..42], &[0, 0]);
//! ```

use std::net::IpAddr;

use etherparse::{NetSlice, SlicedPacket};

use crate::wire::{Malformed, PROTO_TCP, PROTO_UDP};

/// Which checksum [`complete`] wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completed {
    /// A TCP checksum (offset 16 of the TCP header).
    Tcp,
    /// A UDP checksum (offset 6 of the UDP header).
    Udp,
}

/// Why [`complete`] left a frame unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Incomplete {
    /// The headers could not be parsed.
    #[error("malformed frame ({0:?} layer)")]
    Malformed(Malformed),
    /// Not an IP packet.
    #[error("not an IP packet")]
    NotIp,
    /// An IP fragment: its checksum covers bytes this frame does not hold.
    #[error("an IP fragment")]
    Fragment,
    /// An IP packet whose transport is neither TCP nor UDP (or whose TCP or UDP
    /// header is cut short).
    #[error("transport protocol {0} has no checksum completed here")]
    Protocol(u8),
}

/// Where a frame's transport segment lies and what its pseudo-header sums to.
#[derive(Debug, PartialEq, Eq)]
struct Segment {
    start: usize,
    len: usize,
    protocol: u8,
    pseudo: u64,
}

/// Finds the transport segment of `frame`: read at fixed offsets in a common
/// frame ([`crate::wire::fast`]), by etherparse's slicing otherwise.
#[inline]
fn segment(frame: &[u8]) -> Result<Segment, Incomplete> {
    match segment_fast(frame) {
        Some(seg) => Ok(seg),
        None => segment_general(frame),
    }
}

/// The segment of a common frame carrying a TCP or UDP header that fits it;
/// `None` leaves the frame to [`segment_general`], which gives the
/// same segment for every frame this one accepts (a property test checks it).
#[inline]
fn segment_fast(frame: &[u8]) -> Option<Segment> {
    let n = crate::wire::fast::network(frame)?;
    // A TCP data offset or UDP length that does not fit the IP payload is
    // malformed: the general path names the layer.
    crate::wire::fast::transport(n.ip.protocol, n.segment)?;
    let pseudo = match (n.ip.src, n.ip.dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => sum_words(&d.octets(), sum_words(&s.octets(), 0)),
        (IpAddr::V6(s), IpAddr::V6(d)) => sum_words(&d.octets(), sum_words(&s.octets(), 0)),
        _ => return None,
    };
    let len = n.segment.len();
    Some(Segment {
        start: n.start,
        len,
        protocol: n.ip.protocol,
        pseudo: add_carry(pseudo, u64::from(n.ip.protocol) + len as u64),
    })
}

/// Finds the transport segment of `frame` by etherparse's strict slicing.
fn segment_general(frame: &[u8]) -> Result<Segment, Incomplete> {
    let sliced = SlicedPacket::from_ethernet(frame)
        .map_err(|e| Incomplete::Malformed(Malformed::from_slice_error(&e)))?;
    let (payload, pseudo) = match &sliced.net {
        Some(NetSlice::Ipv4(v4)) => {
            if v4.is_payload_fragmented() {
                return Err(Incomplete::Fragment);
            }
            let h = v4.header();
            let sum = sum_words(&h.destination(), sum_words(&h.source(), 0));
            (v4.payload(), sum)
        }
        Some(NetSlice::Ipv6(v6)) => {
            if v6.is_payload_fragmented() {
                return Err(Incomplete::Fragment);
            }
            let h = v6.header();
            let sum = sum_words(&h.destination(), sum_words(&h.source(), 0));
            (v6.payload(), sum)
        }
        Some(NetSlice::Arp(_)) | None => return Err(Incomplete::NotIp),
    };
    let protocol = payload.ip_number.0;
    let bytes = payload.payload;
    let min = match protocol {
        PROTO_TCP => 20,
        PROTO_UDP => 8,
        other => return Err(Incomplete::Protocol(other)),
    };
    if bytes.len() < min {
        return Err(Incomplete::Protocol(protocol));
    }
    // The payload is a sub-slice of `frame`: its offset is the distance between
    // the two starts.
    let start = bytes.as_ptr() as usize - frame.as_ptr() as usize;
    let len = bytes.len();
    let pseudo = add_carry(pseudo, u64::from(protocol) + len as u64);
    Ok(Segment {
        start,
        len,
        protocol,
        pseudo,
    })
}

/// Writes the full TCP or UDP checksum of `frame` (from the destination MAC on,
/// VLAN tags in place, no FCS), overwriting what the checksum field held.
///
/// # Errors
/// [`Incomplete`] says why nothing was written: the frame is not a TCP or UDP
/// packet over IPv4/IPv6, is an IP fragment, or its headers are malformed.
pub fn complete(frame: &mut [u8]) -> Result<Completed, Incomplete> {
    let seg = segment(frame)?;
    let (field, kind) = match seg.protocol {
        PROTO_TCP => (seg.start + 16, Completed::Tcp),
        _ => (seg.start + 6, Completed::Udp),
    };
    frame[field..field + 2].fill(0);
    let sum = sum_words(&frame[seg.start..seg.start + seg.len], seg.pseudo);
    let mut value = !fold(sum);
    // UDP sends 0 as "no checksum"; a computed 0 is sent as all ones.
    if value == 0 && kind == Completed::Udp {
        value = 0xffff;
    }
    frame[field..field + 2].copy_from_slice(&value.to_be_bytes());
    Ok(kind)
}

/// Completes `frame`'s TCP or UDP checksum if it holds what Linux leaves for the
/// card (`CHECKSUM_PARTIAL`: the folded pseudo-header sum, not complemented), for
/// paths that do not say which frames are partial (AF_XDP). Costs a header parse
/// and a pseudo-header sum; the whole segment is summed only for a partial
/// frame. A complete checksum that happens to equal the pseudo-header sum (one
/// frame in 65,536) is recomputed to the same value.
///
/// # Errors
/// As for [`complete`]; `Ok(None)` when the checksum was not partial.
pub fn complete_if_partial(frame: &mut [u8]) -> Result<Option<Completed>, Incomplete> {
    let seg = segment(frame)?;
    let field = match seg.protocol {
        PROTO_TCP => seg.start + 16,
        _ => seg.start + 6,
    };
    let held = u16::from_be_bytes([frame[field], frame[field + 1]]);
    let partial = fold(seg.pseudo);
    // 0 and 0xffff are the same ones'-complement value.
    let same = held == partial || (held | partial == 0xffff && (held == 0 || partial == 0));
    if !same {
        return Ok(None);
    }
    complete(frame).map(Some)
}

/// Whether `frame`'s TCP or UDP checksum is correct (a UDP checksum of 0, "none",
/// counts as correct).
///
/// # Errors
/// As for [`complete`].
pub fn verify(frame: &[u8]) -> Result<bool, Incomplete> {
    let seg = segment(frame)?;
    let bytes = &frame[seg.start..seg.start + seg.len];
    if seg.protocol == PROTO_UDP && bytes[6..8] == [0, 0] {
        return Ok(true);
    }
    Ok(fold(sum_words(bytes, seg.pseudo)) == 0xffff)
}

/// Adds `bytes`, as big-endian 16-bit words (an odd last byte padded with zero),
/// to `acc` in ones'-complement arithmetic on 64 bits.
fn sum_words(bytes: &[u8], acc: u64) -> u64 {
    let mut acc = acc;
    let add = add_carry;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        acc = add(acc, u64::from_be_bytes(w));
    }
    let rest = chunks.remainder();
    let mut w = [0u8; 8];
    w[..rest.len()].copy_from_slice(rest);
    add(acc, u64::from_be_bytes(w))
}

/// `a + b` in ones'-complement arithmetic on 64 bits (end-around carry).
#[inline]
fn add_carry(a: u64, b: u64) -> u64 {
    let (s, carry) = a.overflowing_add(b);
    s + u64::from(carry)
}

/// Folds a 64-bit ones'-complement sum to 16 bits.
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use proptest::prelude::*;

    fn udp4(payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
            .udp(5000, 5001);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    fn tcp6_vlan(payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .single_vlan(etherparse::VlanId::try_new(7).unwrap())
            .ipv6([0xfd; 16], [0xfe; 16], 64)
            .tcp(80, 40000, 12345, 65535)
            .ack(99);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    fn tcp4(payload: &[u8]) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(22, 50000, 1, 1000);
        let mut out = Vec::new();
        b.write(&mut out, payload).unwrap();
        out
    }

    /// A wrong checksum in place of the right one (one frame in 65,536 holds
    /// 0x1234 rightly: it gets 0x4321).
    fn make_partial(frame: &mut [u8], field: usize) {
        let wrong = if frame[field..field + 2] == [0x12, 0x34] {
            [0x43, 0x21]
        } else {
            [0x12, 0x34]
        };
        frame[field..field + 2].copy_from_slice(&wrong);
    }

    proptest! {
        #[test]
        fn restores_what_etherparse_computes(payload in proptest::collection::vec(any::<u8>(), 0..1500)) {
            for (mut frame, field) in [
                (udp4(&payload), 14 + 20 + 6),
                (tcp4(&payload), 14 + 20 + 16),
                (tcp6_vlan(&payload), 18 + 40 + 16),
            ] {
                let good = frame.clone();
                prop_assert_eq!(verify(&good), Ok(true));
                make_partial(&mut frame, field);
                prop_assert_eq!(verify(&frame), Ok(false));
                prop_assert!(complete(&mut frame).is_ok());
                prop_assert_eq!(&frame, &good);
            }
        }

        /// The segment read at fixed offsets is etherparse's, on valid frames
        /// mutated and cut.
        #[test]
        fn fast_segment_agrees_with_etherparse(
            payload in proptest::collection::vec(any::<u8>(), 0..64),
            which in 0usize..3,
            flips in proptest::collection::vec((0usize..80, any::<u8>()), 0..4),
            cut in 0usize..40,
        ) {
            let mut frame = [udp4, tcp4, tcp6_vlan][which](&payload);
            if which == 2 {
                // Without its VLAN tag: an IPv6 frame the fast path reads.
                frame.drain(12..16);
            }
            for (pos, val) in flips {
                if let Some(b) = frame.get_mut(pos) {
                    *b = val;
                }
            }
            frame.truncate(frame.len().saturating_sub(cut));
            if let Some(fast) = segment_fast(&frame) {
                prop_assert_eq!(Ok(fast), segment_general(&frame));
            }
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let mut frame = bytes;
            let _ = complete(&mut frame);
            let _ = verify(&frame);
        }
    }

    /// What Linux writes into a `CHECKSUM_PARTIAL` frame's checksum field.
    fn kernel_partial(frame: &mut [u8], field: usize) {
        let seg = segment(frame).unwrap();
        frame[field..field + 2].copy_from_slice(&fold(seg.pseudo).to_be_bytes());
    }

    proptest! {
        #[test]
        fn completes_only_partial_checksums(payload in proptest::collection::vec(any::<u8>(), 0..1500)) {
            for (mut frame, field) in [
                (udp4(&payload), 14 + 20 + 6),
                (tcp4(&payload), 14 + 20 + 16),
                (tcp6_vlan(&payload), 18 + 40 + 16),
            ] {
                let good = frame.clone();
                // A complete checksum stays (recomputed to itself at worst).
                let mut same = good.clone();
                prop_assert!(complete_if_partial(&mut same).is_ok());
                prop_assert_eq!(&same, &good);
                kernel_partial(&mut frame, field);
                if frame != good {
                    prop_assert!(matches!(complete_if_partial(&mut frame), Ok(Some(_))));
                }
                prop_assert_eq!(&frame, &good);
            }
        }
    }

    #[test]
    fn leaves_other_frames_alone() {
        let mut arp = vec![0u8; 42];
        arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
        let before = arp.clone();
        assert!(complete(&mut arp).is_err());
        assert_eq!(arp, before);

        let b = PacketBuilder::ethernet2([1; 6], [2; 6])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .icmpv4_echo_request(1, 1);
        let mut icmp = Vec::new();
        b.write(&mut icmp, b"x").unwrap();
        assert_eq!(complete(&mut icmp), Err(Incomplete::Protocol(1)));
        assert!(matches!(
            complete(&mut [0u8; 5]),
            Err(Incomplete::Malformed(_))
        ));
    }

    #[test]
    fn udp_zero_is_sent_as_all_ones() {
        // Find a payload whose checksum computes to 0 by adjusting two bytes.
        let mut frame = udp4(&[0, 0]);
        complete(&mut frame).unwrap();
        let c = u16::from_be_bytes([frame[40], frame[41]]);
        // Adding the checksum value to the payload makes the sum all ones, so the
        // complement is 0.
        let n = frame.len();
        frame[n - 2..].copy_from_slice(&c.to_be_bytes());
        assert_eq!(complete(&mut frame), Ok(Completed::Udp));
        assert_eq!(&frame[40..42], &[0xff, 0xff]);
        assert_eq!(verify(&frame), Ok(true));
    }
}
