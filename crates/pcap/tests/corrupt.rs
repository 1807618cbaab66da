//! Truncated and corrupt captures: an error naming the byte offset of the
//! record, never a panic.

mod common;

use common::{pcap, pcapng, udp, Pkt};
use eiffel_pcap::{Capture, CaptureError};
use pcap_file::TsResolution;
use proptest::prelude::*;

/// Four frames: two UDP flows, a malformed frame, and UDP again.
fn few() -> Vec<Pkt> {
    let frames = [
        udp(4000, 5000, 1000),
        udp(6000, 7000, 1000),
        vec![0xff; 10],
        udp(6001, 7000, 1000),
    ];
    frames
        .into_iter()
        .enumerate()
        .map(|(i, data)| Pkt {
            at: 1_000_000_000 + i as u64 * 1000,
            wire_len: data.len() as u32,
            data,
        })
        .collect()
}

/// Record boundaries of a pcap file of `pkts`: 24-byte header, 16-byte record
/// headers.
fn pcap_records(pkts: &[Pkt]) -> Vec<usize> {
    let mut at = vec![24];
    for p in pkts {
        at.push(at.last().unwrap() + 16 + p.data.len());
    }
    at
}

#[test]
fn every_truncation_of_a_pcap_names_the_record_cut_short() {
    let pkts = few();
    let bytes = pcap(&pkts, TsResolution::NanoSecond);
    let records = pcap_records(&pkts);
    assert_eq!(*records.last().unwrap(), bytes.len());
    for cut in 0..bytes.len() {
        let r = Capture::parse(bytes[..cut].to_vec(), "cut.pcap");
        if records.contains(&cut) {
            let c = r.expect("a cut at a record boundary is a shorter capture");
            assert_eq!(
                c.frames().len(),
                records.iter().position(|&b| b == cut).unwrap()
            );
            continue;
        }
        match r {
            Err(CaptureError::Truncated {
                offset,
                remaining,
                what,
                ..
            }) => {
                let start = records
                    .iter()
                    .rev()
                    .find(|&&b| b <= cut)
                    .copied()
                    .unwrap_or(0);
                let start = if cut < 24 { 0 } else { start };
                assert_eq!(offset, start, "cut at {cut}");
                assert_eq!(remaining, cut - start);
                assert_eq!(
                    what,
                    if cut < 24 {
                        "file header"
                    } else {
                        "packet record"
                    }
                );
            }
            Err(CaptureError::NotACapture { .. }) if cut < 4 => {}
            other => panic!("cut at {cut}: {other:?}"),
        }
    }
    let e = Capture::parse(bytes[..bytes.len() - 3].to_vec(), "cut.pcap").expect_err("cut");
    assert_eq!(
        e.to_string(),
        format!(
            "cut.pcap: truncated capture: the packet record at byte {} is cut short ({} bytes left in the file)",
            records[3],
            bytes.len() - 3 - records[3]
        )
    );
}

#[test]
fn every_truncation_of_a_pcapng_is_an_error_or_a_shorter_capture() {
    let bytes = pcapng(&few(), true);
    for cut in 0..bytes.len() {
        match Capture::parse(bytes[..cut].to_vec(), "cut.pcapng") {
            Ok(c) => assert!(c.frames().len() < 4),
            Err(CaptureError::Truncated { offset, .. } | CaptureError::Corrupt { offset, .. }) => {
                assert!(offset <= cut, "cut at {cut}: offset {offset}");
                assert_eq!(offset % 4, 0, "blocks are 32-bit aligned");
            }
            Err(CaptureError::NotACapture { .. }) if cut < 4 => {}
            Err(e) => panic!("cut at {cut}: {e}"),
        }
    }
}

/// Sets the 32-bit big-endian field at `at` (pcap-file writes big-endian pcap
/// files by default).
fn put_be(bytes: &mut [u8], at: usize, v: u32) {
    bytes[at..at + 4].copy_from_slice(&v.to_be_bytes());
}

#[test]
fn corrupt_records_are_named_with_their_offset() {
    let pkts = few();
    let good = pcap(&pkts, TsResolution::MicroSecond);
    let records = pcap_records(&pkts);
    // Record 1 claims more captured bytes than it had on the wire.
    let mut bytes = good.clone();
    put_be(&mut bytes, records[1] + 12, 10);
    let e = Capture::parse(bytes, "bad.pcap").expect_err("incl > orig");
    assert!(
        e.to_string().starts_with(&format!(
            "bad.pcap: corrupt capture: the packet record at byte {}:",
            records[1]
        )),
        "{e}"
    );
    // Microseconds of a second or more.
    let mut bytes = good.clone();
    put_be(&mut bytes, records[2] + 4, 1_000_000);
    match Capture::parse(bytes, "bad.pcap") {
        Err(CaptureError::Corrupt { offset, .. }) => assert_eq!(offset, records[2]),
        other => panic!("{other:?}"),
    }
    // A captured length past the end of the file.
    let mut bytes = good.clone();
    put_be(&mut bytes, records[3] + 8, 1 << 30);
    put_be(&mut bytes, records[3] + 12, 1 << 30);
    match Capture::parse(bytes, "bad.pcap") {
        Err(CaptureError::Truncated { offset, .. }) => assert_eq!(offset, records[3]),
        other => panic!("{other:?}"),
    }
    // Not a capture; not Ethernet.
    let e = Capture::parse(b"hello world".to_vec(), "text.pcap").expect_err("magic");
    assert!(
        e.to_string().contains("not a pcap or pcapng capture"),
        "{e}"
    );
    let mut bytes = good;
    put_be(&mut bytes, 20, 101);
    let e = Capture::parse(bytes, "raw.pcap").expect_err("linktype");
    assert!(e.to_string().contains("link type 101"), "{e}");
}

#[test]
fn a_missing_file_names_it() {
    let e = Capture::read("/nonexistent/x.pcap").expect_err("missing");
    assert!(e.to_string().starts_with("/nonexistent/x.pcap: "), "{e}");
}

#[test]
fn a_snap_length_keeps_the_wire_length() {
    let mut pkts = few();
    for p in &mut pkts {
        p.data.truncate(60);
    }
    pkts[0].data = udp(1, 2, 3);
    pkts[0].wire_len = pkts[0].data.len() as u32;
    let c = Capture::parse(pcap(&pkts, TsResolution::NanoSecond), "snap.pcap").expect("snap");
    assert_eq!(c.frames()[1].captured_len, 60);
    assert_eq!(c.frames()[1].wire_len, pkts[1].wire_len);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: if cfg!(miri) { 8 } else { 2000 }, ..ProptestConfig::default() })]

    /// Random byte changes to a pcap or pcapng file give a capture or an error,
    /// never a panic, and errors point inside the file.
    #[test]
    fn mutated_captures_never_panic(
        ng in any::<bool>(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = if ng { pcapng(&few(), false) } else { pcap(&few(), TsResolution::MicroSecond) };
        for (i, v) in edits {
            let i = i.index(bytes.len());
            bytes[i] = v;
        }
        let len = bytes.len();
        bytes.truncate(len - cut.index(len / 4));
        let len = bytes.len();
        match Capture::parse(bytes, "fuzz") {
            Ok(c) => {
                for f in c.frames() {
                    prop_assert!(f.offset + f.captured_len as usize <= len);
                    let _ = c.data(f);
                }
            }
            Err(CaptureError::Truncated { offset, .. } | CaptureError::Corrupt { offset, .. }) => {
                prop_assert!(offset <= len);
            }
            Err(_) => {}
        }
    }
}
