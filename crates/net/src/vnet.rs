//! The `virtio_net_hdr` a packet socket with `PACKET_VNET_HDR` puts before each
//! frame: the offload metadata of a GSO/TSO/GRO super-frame (how to cut it into
//! segments) and of a checksum left for hardware (where to complete it).
//!
//! With it a bump receives a sender's 64 KB TSO frame (or one GRO merged) whole,
//! schedules it as one unit, and transmits it with the same header, so the kernel
//! segments it on the way out (or hands the GSO skb on to the next veth): one
//! frame of work instead of forty-odd.
//!
//! The header is 10 bytes in the host's byte order (the legacy virtio layout the
//! packet socket uses):
//!
//! | bytes | field | meaning |
//! | --- | --- | --- |
//! | 0 | flags | [`NEEDS_CSUM`]: complete the checksum at `csum_start + csum_offset`; [`DATA_VALID`]: already checked |
//! | 1 | gso_type | [`GsoType`], with [`GSO_ECN`] |
//! | 2-3 | hdr_len | length of the headers (a hint for the linear part) |
//! | 4-5 | gso_size | payload bytes per segment |
//! | 6-7 | csum_start | where the checksummed part starts, from the MAC header |
//! | 8-9 | csum_offset | where the checksum field is, from `csum_start` |
//!
//! [`wire_len`] is what a super-frame costs on the wire once cut: every segment
//! repeats the MAC, IP and transport headers, as Linux's qdiscs count it
//! (`qdisc_pkt_len_init`: `len + (segments - 1) * header length`).

/// Length of the header.
pub const VNET_HDR_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum is to be completed.
pub const NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the checksum has been checked (receive only).
pub const DATA_VALID: u8 = 2;
/// `VIRTIO_NET_HDR_GSO_ECN`: segments carry ECN's CWR as the first did.
pub const GSO_ECN: u8 = 0x80;

/// What the frame is cut into (`gso_type` without [`GSO_ECN`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GsoType {
    /// Not a super-frame.
    None,
    /// TCP over IPv4.
    TcpV4,
    /// UDP fragmentation offload (IPv4 fragments).
    Udp,
    /// TCP over IPv6.
    TcpV6,
    /// UDP segmentation (one datagram per segment).
    UdpL4,
    /// A value this code does not know.
    Other(u8),
}

impl GsoType {
    fn from_raw(raw: u8) -> GsoType {
        match raw & !GSO_ECN {
            0 => GsoType::None,
            1 => GsoType::TcpV4,
            3 => GsoType::Udp,
            4 => GsoType::TcpV6,
            5 => GsoType::UdpL4,
            other => GsoType::Other(other),
        }
    }
}

/// A parsed `virtio_net_hdr`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    /// [`NEEDS_CSUM`], [`DATA_VALID`].
    pub flags: u8,
    /// The raw `gso_type` (see [`VnetHdr::gso`]).
    pub gso_type: u8,
    /// Header length hint.
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Start of the checksummed part, from the MAC header.
    pub csum_start: u16,
    /// Offset of the checksum field from `csum_start`.
    pub csum_offset: u16,
}

impl VnetHdr {
    /// The header of a frame with no offload pending.
    pub const NONE: VnetHdr = VnetHdr {
        flags: 0,
        gso_type: 0,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };

    /// Reads a header.
    #[must_use]
    pub fn parse(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let u16_at = |i: usize| u16::from_ne_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        }
    }

    /// The header's bytes.
    #[must_use]
    pub fn to_bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_ne_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_ne_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_ne_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_ne_bytes());
        b
    }

    /// What the frame is cut into.
    #[must_use]
    pub fn gso(&self) -> GsoType {
        GsoType::from_raw(self.gso_type)
    }

    /// Whether the frame is a super-frame to be cut into segments.
    #[must_use]
    pub fn is_gso(&self) -> bool {
        self.gso() != GsoType::None && self.gso_size > 0
    }

    /// Whether a checksum is left to complete.
    #[must_use]
    pub fn needs_csum(&self) -> bool {
        self.flags & NEEDS_CSUM != 0
    }

    /// The header for a frame with `shift` bytes inserted before its checksummed
    /// part (a VLAN tag put back after the MAC addresses), ready to transmit:
    /// [`DATA_VALID`] (meaningless on transmit) cleared.
    #[must_use]
    pub fn for_transmit(mut self, shift: u16) -> VnetHdr {
        self.flags &= NEEDS_CSUM;
        if self.needs_csum() {
            self.csum_start = self.csum_start.saturating_add(shift);
        }
        self
    }
}

/// Where the transport payload of `frame` starts (the length of the headers every
/// segment repeats), from the checksum offsets when the header has them, else by
/// parsing Ethernet (with VLAN tags), IPv4 or IPv6 (fixed header) and TCP or UDP.
#[must_use]
pub fn headers_len(hdr: &VnetHdr, frame: &[u8]) -> Option<usize> {
    let tcp = matches!(hdr.gso(), GsoType::TcpV4 | GsoType::TcpV6);
    let l4 = if hdr.needs_csum() {
        usize::from(hdr.csum_start)
    } else {
        transport_offset(frame)?
    };
    let len = if tcp {
        usize::from(frame.get(l4 + 12)? >> 4) * 4
    } else {
        8
    };
    let end = l4 + len.max(8);
    (end <= frame.len()).then_some(end)
}

/// The transport header's offset in an Ethernet frame, or `None` when it is not
/// IPv4 or IPv6.
fn transport_offset(frame: &[u8]) -> Option<usize> {
    let mut at = 12;
    let mut ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    while matches!(ethertype, 0x8100 | 0x88a8) {
        at += 4;
        ethertype = u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]);
    }
    let ip = at + 2;
    match ethertype {
        0x0800 => Some(ip + usize::from(frame.get(ip)? & 0x0f) * 4),
        0x86dd => Some(ip + 40),
        _ => None,
    }
}

/// The bytes `frame` puts on the wire: its length, or for a super-frame the sum of
/// its segments', each repeating the headers (MAC to transport) of the first.
/// Headers that cannot be found count one segment per `gso_size` bytes of what
/// follows the 54 bytes of Ethernet, IPv4 and TCP headers.
#[must_use]
pub fn wire_len(hdr: &VnetHdr, frame: &[u8]) -> u64 {
    let len = frame.len() as u64;
    if !hdr.is_gso() {
        return len;
    }
    let headers = headers_len(hdr, frame).unwrap_or(54).min(frame.len()) as u64;
    let payload = len - headers;
    let segments = payload.div_ceil(u64::from(hdr.gso_size)).max(1);
    len + (segments - 1) * headers
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet + IPv4 + TCP super-frame of `payload` bytes.
    fn tcp4(payload: usize, vlan: bool) -> Vec<u8> {
        let mut f = vec![0u8; 12];
        if vlan {
            f.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]);
        }
        f.extend_from_slice(&[0x08, 0x00]);
        let mut ip = [0u8; 20];
        ip[0] = 0x45;
        ip[9] = 6;
        f.extend_from_slice(&ip);
        let mut tcp = [0u8; 32];
        tcp[12] = 8 << 4; // 32 bytes: timestamps
        f.extend_from_slice(&tcp);
        f.resize(f.len() + payload, 0xab);
        f
    }

    #[test]
    fn parse_and_build_round_trip() {
        let h = VnetHdr {
            flags: NEEDS_CSUM,
            gso_type: 1 | GSO_ECN,
            hdr_len: 66,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
        };
        let b = h.to_bytes();
        assert_eq!(b[0], 1);
        assert_eq!(b[1], 0x81);
        assert_eq!(&b[4..6], &1448u16.to_ne_bytes());
        assert_eq!(VnetHdr::parse(&b), h);
        assert_eq!(h.gso(), GsoType::TcpV4);
        assert!(h.is_gso() && h.needs_csum());
        assert_eq!(VnetHdr::parse(&[0; 10]), VnetHdr::NONE);
        assert!(!VnetHdr::NONE.is_gso());
        for (raw, t) in [
            (3, GsoType::Udp),
            (4, GsoType::TcpV6),
            (5, GsoType::UdpL4),
            (9, GsoType::Other(9)),
        ] {
            assert_eq!(GsoType::from_raw(raw), t);
        }
    }

    #[test]
    fn transmit_header_shifts_the_checksum_and_drops_data_valid() {
        let h = VnetHdr {
            flags: NEEDS_CSUM | DATA_VALID,
            csum_start: 34,
            csum_offset: 16,
            ..VnetHdr::NONE
        };
        let t = h.for_transmit(4);
        assert_eq!((t.flags, t.csum_start, t.csum_offset), (NEEDS_CSUM, 38, 16));
        let valid = VnetHdr {
            flags: DATA_VALID,
            csum_start: 7,
            ..VnetHdr::NONE
        };
        assert_eq!(valid.for_transmit(4).flags, 0);
        assert_eq!(valid.for_transmit(4).csum_start, 7, "no checksum to move");
    }

    #[test]
    fn a_super_frame_costs_its_segments_on_the_wire() {
        // 64,000 payload bytes in 1,448-byte segments: 45 segments (44 full and
        // one of 288), each with 14 + 20 + 32 = 66 bytes of headers.
        let frame = tcp4(64_000, false);
        let h = VnetHdr {
            flags: NEEDS_CSUM,
            gso_type: 1,
            gso_size: 1448,
            csum_start: 34,
            csum_offset: 16,
            ..VnetHdr::NONE
        };
        assert_eq!(headers_len(&h, &frame), Some(66));
        assert_eq!(wire_len(&h, &frame), 64_000 + 45 * 66);
        // The same frame found by parsing (no checksum offsets), and tagged.
        let parsed = VnetHdr { flags: 0, ..h };
        assert_eq!(wire_len(&parsed, &frame), 64_000 + 45 * 66);
        let tagged = tcp4(64_000, true);
        assert_eq!(wire_len(&parsed, &tagged), 64_000 + 45 * 70);
        // Exactly one segment's worth, and a frame that is no super-frame.
        let one = tcp4(1448, false);
        assert_eq!(wire_len(&h, &one), one.len() as u64);
        assert_eq!(wire_len(&VnetHdr::NONE, &frame), frame.len() as u64);
    }

    #[test]
    fn udp_segments_repeat_eight_bytes_of_transport_header() {
        let mut frame = tcp4(0, false);
        frame.truncate(34);
        frame[23] = 17;
        frame.resize(34 + 8 + 3000, 0);
        let h = VnetHdr {
            flags: NEEDS_CSUM,
            gso_type: 5,
            gso_size: 1000,
            csum_start: 34,
            csum_offset: 6,
            ..VnetHdr::NONE
        };
        assert_eq!(wire_len(&h, &frame), frame.len() as u64 + 2 * 42);
    }

    #[test]
    fn unreadable_headers_fall_back_and_never_panic() {
        let h = VnetHdr {
            flags: NEEDS_CSUM,
            gso_type: 1,
            gso_size: 100,
            csum_start: 60_000,
            ..VnetHdr::NONE
        };
        for len in [0, 1, 13, 54, 60, 1000] {
            let frame = vec![0u8; len];
            assert_eq!(headers_len(&h, &frame), None);
            let w = wire_len(&h, &frame);
            assert!(w >= len as u64);
        }
        // An ARP frame with a GSO header: parsed headers are not found.
        let mut arp = vec![0u8; 200];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let parsed = VnetHdr { flags: 0, ..h };
        assert_eq!(headers_len(&parsed, &arp), None);
        assert_eq!(wire_len(&parsed, &arp), 200 + 54);
    }
}
