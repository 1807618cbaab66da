//! Writing departures as a capture: each packet a replay sent, with its captured
//! bytes and wire length, stamped with its departure time (the end of its
//! transmission on the emulated link) on the capture's clock, in departure
//! order, for Wireshark or tcptrace.
//!
//! pcap files are written with nanosecond timestamps (magic `a1b23c4d`); pcapng
//! files with one Ethernet interface whose `if_tsresol` is nanoseconds.

use std::borrow::Cow;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::{DataLink, PcapError, TsResolution};

use crate::capture::{Capture, Format};
use crate::replay::Departure;

/// Why departures cannot be written.
#[derive(Debug, thiserror::Error)]
#[error("{}: {source}", path.display())]
pub struct WriteError {
    /// The file.
    pub path: PathBuf,
    /// What went wrong.
    #[source]
    pub source: PcapError,
}

/// Writes `departures` of a replay of `capture` to `path` in `format`;
/// timestamps are the capture's first frame time plus each departure.
///
/// # Errors
/// The file cannot be created or written.
pub fn write_departures(
    path: &Path,
    format: Format,
    capture: &Capture,
    departures: &[Departure],
) -> Result<(), WriteError> {
    let err = |source| WriteError {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::create(path).map_err(|e| err(PcapError::IoError(e)))?;
    let out = BufWriter::new(file);
    let snaplen = capture
        .frames()
        .iter()
        .map(|f| f.captured_len)
        .max()
        .unwrap_or(0)
        .max(65_535);
    let start = capture.start();
    let each = departures.iter().map(|d| {
        let f = &capture.frames()[d.frame as usize];
        (
            Duration::from_nanos(start.saturating_add(d.end)),
            f.wire_len,
            capture.data(f),
        )
    });
    let mut out = match format {
        Format::Pcap => write_pcap(out, snaplen, each),
        Format::PcapNg => write_pcapng(out, snaplen, each),
    }
    .map_err(err)?;
    out.flush().map_err(|e| err(PcapError::IoError(e)))
}

fn write_pcap<'a, W: Write>(
    out: W,
    snaplen: u32,
    packets: impl Iterator<Item = (Duration, u32, &'a [u8])>,
) -> Result<W, PcapError> {
    let header = PcapHeader {
        snaplen,
        datalink: DataLink::ETHERNET,
        ts_resolution: TsResolution::NanoSecond,
        ..PcapHeader::default()
    };
    let mut w = PcapWriter::with_header(out, header)?;
    for (at, wire_len, data) in packets {
        w.write_packet(&PcapPacket::new(at, wire_len, data))?;
    }
    Ok(w.into_writer())
}

fn write_pcapng<'a, W: Write>(
    out: W,
    snaplen: u32,
    packets: impl Iterator<Item = (Duration, u32, &'a [u8])>,
) -> Result<W, PcapError> {
    let mut w = PcapNgWriter::new(out)?;
    w.write_pcapng_block(InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen,
        options: vec![InterfaceDescriptionOption::IfTsResol(9)],
    })?;
    for (at, wire_len, data) in packets {
        // pcap-file writes the timestamp's nanoseconds as the raw units, which
        // `if_tsresol = 9` declares to be nanoseconds.
        w.write_pcapng_block(EnhancedPacketBlock {
            interface_id: 0,
            timestamp: at,
            original_len: wire_len,
            data: Cow::Borrowed(data),
            options: Vec::new(),
        })?;
    }
    Ok(w.into_inner())
}
