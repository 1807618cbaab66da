//! Captures made in the tests: UDP frames of a few flows, written with
//! pcap-file's writers.

#![allow(dead_code)]

use std::borrow::Cow;
use std::time::Duration;

use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, TsResolution};

/// A policy: voice (UDP to port 5000) first but capped at 2 Mbit/s, the rest
/// fair per flow, behind a 10 Mbit/s root.
pub const POLICY: &str = r#"
capacity = 4096
[[node]]
name = "root"
discipline = "strict"
limit = "10Mbit"
[[node]]
name = "voice"
parent = "root"
priority = 0
limit = "2Mbit"
capacity = 64
[[node]]
name = "bulk"
parent = "root"
priority = 1
discipline = "wfq"
flows = 64
flow_queue = 128
[classify]
default = "bulk"
max_flows = 64
[[classify.rule]]
leaf = "voice"
protocol = "udp"
dst_port = 5000
"#;

/// One captured packet: time (ns since the epoch), bytes, wire length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pkt {
    pub at: u64,
    pub data: Vec<u8>,
    pub wire_len: u32,
}

/// A UDP frame from port `src_port` to `dst_port` with `payload` bytes.
pub fn udp(src_port: u16, dst_port: u16, payload: usize) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(src_port, dst_port);
    let body = vec![0xab; payload];
    let mut out = Vec::with_capacity(b.size(payload));
    b.write(&mut out, &body).expect("frame");
    out
}

/// 1 s of traffic starting at `t0`: voice at 4 Mbit/s (above its cap) and four
/// bulk flows at 2 Mbit/s each, 1000-byte payloads, plus a few malformed frames.
pub fn traffic(t0: u64) -> Vec<Pkt> {
    let mut out = Vec::new();
    let frame_bits = (udp(1, 5000, 1000).len() * 8) as u64;
    let gap = |bps: u64| frame_bits * 1_000_000_000 / bps;
    let mut t = 0;
    while t < 1_000_000_000 {
        out.push(Pkt {
            at: t0 + t,
            data: udp(4000, 5000, 1000),
            wire_len: 0,
        });
        t += gap(4_000_000);
    }
    for f in 0..4u16 {
        let mut t = u64::from(f) * 1000;
        while t < 1_000_000_000 {
            out.push(Pkt {
                at: t0 + t,
                data: udp(6000 + f, 7000, 1000),
                wire_len: 0,
            });
            t += gap(2_000_000);
        }
    }
    for k in 0..5 {
        out.push(Pkt {
            at: t0 + k * 100_000_000 + 7,
            data: vec![0xff; 10],
            wire_len: 0,
        });
    }
    out.sort_by_key(|p| p.at);
    for p in &mut out {
        p.wire_len = p.data.len() as u32;
    }
    out
}

/// `pkts` as a pcap file of resolution `res`.
pub fn pcap(pkts: &[Pkt], res: TsResolution) -> Vec<u8> {
    let header = PcapHeader {
        ts_resolution: res,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), header).expect("header");
    for p in pkts {
        let at = match res {
            TsResolution::MicroSecond => p.at / 1000 * 1000,
            TsResolution::NanoSecond => p.at,
        };
        w.write_packet(&PcapPacket::new(
            Duration::from_nanos(at),
            p.wire_len,
            &p.data,
        ))
        .expect("packet");
    }
    w.into_writer()
}

/// `pkts` as a pcapng file with microsecond timestamps (the default
/// resolution, no `if_tsresol`) or, with `nanos`, `if_tsresol = 9`.
pub fn pcapng(pkts: &[Pkt], nanos: bool) -> Vec<u8> {
    let mut w = PcapNgWriter::new(Vec::new()).expect("section");
    let options = if nanos {
        vec![InterfaceDescriptionOption::IfTsResol(9)]
    } else {
        vec![]
    };
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options,
    })
    .expect("interface");
    for p in pkts {
        let raw = if nanos { p.at } else { p.at / 1000 };
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(raw),
            original_len: p.wire_len,
            data: Cow::Borrowed(&p.data),
            options: vec![],
        })
        .expect("packet");
    }
    w.into_inner()
}
