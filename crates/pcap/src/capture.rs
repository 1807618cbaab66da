//! Reading a capture: a pcap or pcapng file (told apart by its magic number)
//! into [`Capture`], the file's bytes and one [`Frame`] per packet.
//!
//! The whole file is read into memory once and frames point into it; a capture
//! larger than the memory the system reports available is refused before it is
//! read, with both sizes. Timestamps become nanoseconds since the Unix epoch:
//! pcap's microsecond or nanosecond resolution, pcapng's per-interface
//! `if_tsresol` (a power of 10 or of 2) and `if_tsoffset`. Frames are kept in
//! timestamp order (a stable sort: captures from several interfaces or CPUs are
//! not always in order).
//!
//! Only Ethernet captures are accepted (`LINKTYPE_ETHERNET`): the classifier
//! reads Ethernet headers. A file that ends inside a record, or whose record
//! fields are inconsistent, is an error naming the byte offset of the record.
//! pcapng simple packet blocks (which carry no timestamp) and the obsolete
//! packet block are refused; other block types are skipped.

use std::path::{Path, PathBuf};

use eiffel_sched::Nanos;
use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::{Block, PcapNgParser};
use pcap_file::{DataLink, PcapError, TsResolution};

/// The two capture formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// libpcap's classic format.
    Pcap,
    /// pcapng.
    PcapNg,
}

impl Format {
    /// The format a file name asks for: pcapng for `.pcapng`, else pcap.
    #[must_use]
    pub fn for_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("pcapng") => Format::PcapNg,
            _ => Format::Pcap,
        }
    }
}

/// One captured packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Capture time, ns since the Unix epoch.
    pub timestamp: Nanos,
    /// Length on the wire (what the scheduler charges).
    pub wire_len: u32,
    /// Bytes captured (at most `wire_len`).
    pub captured_len: u32,
    /// Where the captured bytes start in the file.
    pub offset: usize,
}

/// A capture read into memory.
#[derive(Clone)]
pub struct Capture {
    name: String,
    format: Format,
    bytes: Vec<u8>,
    frames: Vec<Frame>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("name", &self.name)
            .field("format", &self.format)
            .field("bytes", &self.bytes.len())
            .field("frames", &self.frames.len())
            .finish()
    }
}

/// Why a capture cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The capture would not fit in memory.
    #[error(
        "{name}: the capture needs {needed} bytes of memory but only {available} are available"
    )]
    TooLarge {
        /// The capture's name.
        name: String,
        /// Bytes the capture needs in memory (the file and its frame table).
        needed: u64,
        /// Bytes the system reports available.
        available: u64,
    },
    /// Not a pcap or pcapng file.
    #[error("{name}: not a pcap or pcapng capture (the file starts with {magic:02x?})")]
    NotACapture {
        /// The capture's name.
        name: String,
        /// The first bytes of the file.
        magic: Vec<u8>,
    },
    /// The file ends inside a record.
    #[error("{name}: truncated capture: the {what} at byte {offset} is cut short ({remaining} bytes left in the file)")]
    Truncated {
        /// The capture's name.
        name: String,
        /// Offset of the record in the file.
        offset: usize,
        /// The record (`file header`, `packet record`, `block`).
        what: &'static str,
        /// Bytes of the file from `offset` on.
        remaining: usize,
    },
    /// A record with inconsistent fields.
    #[error("{name}: corrupt capture: the {what} at byte {offset}: {detail}")]
    Corrupt {
        /// The capture's name.
        name: String,
        /// Offset of the record in the file.
        offset: usize,
        /// The record.
        what: &'static str,
        /// What is wrong with it.
        detail: &'static str,
    },
    /// Not an Ethernet capture.
    #[error("{name}: link type {linktype} (at byte {offset}) is not Ethernet: only Ethernet captures (LINKTYPE_ETHERNET, 1) can be classified; capture on an Ethernet interface rather than `any`")]
    LinkType {
        /// The capture's name.
        name: String,
        /// The link type number.
        linktype: u32,
        /// Offset of the header or interface block naming it.
        offset: usize,
    },
    /// A pcapng packet refers to an interface not described before it.
    #[error("{name}: corrupt capture: the packet block at byte {offset} names interface {interface}, which no interface block describes")]
    UnknownInterface {
        /// The capture's name.
        name: String,
        /// Offset of the packet block.
        offset: usize,
        /// The interface id.
        interface: u32,
    },
    /// A pcapng block that carries packets without timestamps.
    #[error("{name}: the {what} at byte {offset} has no timestamp, so its packets have no arrival time: re-save the capture with enhanced packet blocks (`editcap -F pcapng`)")]
    Unsupported {
        /// The capture's name.
        name: String,
        /// Offset of the block.
        offset: usize,
        /// The block type.
        what: &'static str,
    },
    /// Too many packets for 32-bit packet indices.
    #[error("{name}: more than {} packets", u32::MAX)]
    TooManyFrames {
        /// The capture's name.
        name: String,
    },
}

/// Bytes per frame beyond the file itself: the frame table.
const FRAME_OVERHEAD: u64 = std::mem::size_of::<Frame>() as u64;

/// The smallest packet record (a pcap record header), to estimate frame counts.
const MIN_RECORD: u64 = 16;

impl Capture {
    /// Reads the capture at `path`.
    ///
    /// # Errors
    /// The file cannot be read, would not fit in memory, or is not a valid
    /// Ethernet pcap or pcapng capture (see the module docs).
    pub fn read(path: impl AsRef<Path>) -> Result<Capture, CaptureError> {
        let path = path.as_ref();
        let io = |source| CaptureError::Io {
            path: path.to_path_buf(),
            source,
        };
        let name = path.display().to_string();
        let size = std::fs::metadata(path).map_err(io)?.len();
        if let Some(available) = available_memory() {
            let needed = size + size / MIN_RECORD * FRAME_OVERHEAD;
            if needed > available {
                return Err(CaptureError::TooLarge {
                    name,
                    needed,
                    available,
                });
            }
        }
        let bytes = std::fs::read(path).map_err(io)?;
        Capture::parse(bytes, &name)
    }

    /// Parses capture `bytes`; errors name `name`.
    ///
    /// # Errors
    /// Not a valid Ethernet pcap or pcapng capture (see the module docs).
    pub fn parse(bytes: Vec<u8>, name: &str) -> Result<Capture, CaptureError> {
        let (format, mut frames) = match bytes.get(..4) {
            Some([0x0a, 0x0d, 0x0d, 0x0a]) => (Format::PcapNg, pcapng_frames(&bytes, name)?),
            Some(
                [0xa1, 0xb2, 0xc3, 0xd4]
                | [0xd4, 0xc3, 0xb2, 0xa1]
                | [0xa1, 0xb2, 0x3c, 0x4d]
                | [0x4d, 0x3c, 0xb2, 0xa1],
            ) => (Format::Pcap, pcap_frames(&bytes, name)?),
            _ => {
                return Err(CaptureError::NotACapture {
                    name: name.to_string(),
                    magic: bytes.iter().take(4).copied().collect(),
                })
            }
        };
        if u32::try_from(frames.len()).is_err() {
            return Err(CaptureError::TooManyFrames {
                name: name.to_string(),
            });
        }
        frames.sort_by_key(|f| f.timestamp);
        Ok(Capture {
            name: name.to_string(),
            format,
            bytes,
            frames,
        })
    }

    /// The name the capture was read under.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file's format.
    #[must_use]
    pub fn format(&self) -> Format {
        self.format
    }

    /// The frames, in timestamp order.
    #[must_use]
    pub fn frames(&self) -> &[Frame] {
        &self.frames
    }

    /// The captured bytes of `frame` (one of [`Capture::frames`]).
    #[must_use]
    pub fn data(&self, frame: &Frame) -> &[u8] {
        &self.bytes[frame.offset..frame.offset + frame.captured_len as usize]
    }

    /// Time from the first frame to the last.
    #[must_use]
    pub fn span(&self) -> Nanos {
        match (self.frames.first(), self.frames.last()) {
            (Some(a), Some(b)) => b.timestamp - a.timestamp,
            _ => 0,
        }
    }

    /// The first frame's timestamp (0 without frames).
    #[must_use]
    pub fn start(&self) -> Nanos {
        self.frames.first().map_or(0, |f| f.timestamp)
    }
}

/// `MemAvailable` of `/proc/meminfo`, where there is one.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Where `inner` (a sub-slice of `outer`) starts in `outer`.
fn offset_in(outer: &[u8], inner: &[u8]) -> usize {
    inner.as_ptr() as usize - outer.as_ptr() as usize
}

/// Where a packet's bytes start in the file, if they are a slice of it (they
/// are: the parser borrows from the bytes it parses).
fn data_offset(all: &[u8], data: &[u8]) -> Option<usize> {
    let range = all.as_ptr_range();
    let inside = range.start <= data.as_ptr() && data.as_ptr_range().end <= range.end;
    inside.then(|| offset_in(all, data))
}

/// A parser error at `offset` as a [`CaptureError`].
fn parse_error(
    name: &str,
    all: &[u8],
    offset: usize,
    what: &'static str,
    e: PcapError,
) -> CaptureError {
    match e {
        PcapError::IncompleteBuffer => CaptureError::Truncated {
            name: name.to_string(),
            offset,
            what,
            remaining: all.len() - offset,
        },
        PcapError::InvalidField(detail) => CaptureError::Corrupt {
            name: name.to_string(),
            offset,
            what,
            detail,
        },
        PcapError::InvalidInterfaceId(interface) => CaptureError::UnknownInterface {
            name: name.to_string(),
            offset,
            interface,
        },
        PcapError::IoError(_) | PcapError::Utf8Error(_) | PcapError::FromUtf8Error(_) => {
            CaptureError::Corrupt {
                name: name.to_string(),
                offset,
                what,
                detail: "a text option is not valid UTF-8",
            }
        }
    }
}

/// The frames of a pcap file.
fn pcap_frames(all: &[u8], name: &str) -> Result<Vec<Frame>, CaptureError> {
    let (mut rest, parser) =
        PcapParser::new(all).map_err(|e| parse_error(name, all, 0, "file header", e))?;
    let header = parser.header();
    if header.datalink != DataLink::ETHERNET {
        return Err(CaptureError::LinkType {
            name: name.to_string(),
            linktype: u32::from(header.datalink),
            offset: 0,
        });
    }
    let frac_ns: u64 = match header.ts_resolution {
        TsResolution::MicroSecond => 1_000,
        TsResolution::NanoSecond => 1,
    };
    let mut frames = Vec::with_capacity(all.len() / 128);
    while !rest.is_empty() {
        let at = offset_in(all, rest);
        let corrupt = |detail| CaptureError::Corrupt {
            name: name.to_string(),
            offset: at,
            what: "packet record",
            detail,
        };
        let (next, raw) = parser
            .next_raw_packet(rest)
            .map_err(|e| parse_error(name, all, at, "packet record", e))?;
        if u64::from(raw.ts_frac) * frac_ns >= 1_000_000_000 {
            return Err(corrupt("the fraction of a second is a second or more"));
        }
        if raw.incl_len > raw.orig_len {
            return Err(corrupt(
                "more bytes captured than the packet had on the wire",
            ));
        }
        frames.push(Frame {
            timestamp: u64::from(raw.ts_sec) * 1_000_000_000 + u64::from(raw.ts_frac) * frac_ns,
            wire_len: raw.orig_len,
            captured_len: raw.incl_len,
            offset: data_offset(all, &raw.data)
                .ok_or_else(|| corrupt("packet data outside the file"))?,
        });
        rest = next;
    }
    Ok(frames)
}

/// How an interface's timestamps convert to ns since the epoch.
#[derive(Clone, Copy, Debug)]
struct Clock {
    /// Timestamp units per second.
    units_per_sec: u128,
    /// Seconds added to every timestamp (`if_tsoffset`).
    offset_secs: u64,
}

impl Clock {
    /// The clock of interface block `idb`, or the reason it has none usable.
    fn of(idb: &InterfaceDescriptionBlock<'_>) -> Result<Clock, &'static str> {
        let mut clock = Clock {
            units_per_sec: 1_000_000,
            offset_secs: 0,
        };
        for opt in &idb.options {
            match opt {
                InterfaceDescriptionOption::IfTsResol(r) => {
                    let exp = u32::from(r & 0x7f);
                    let base: u128 = if r & 0x80 == 0 { 10 } else { 2 };
                    clock.units_per_sec = base
                        .checked_pow(exp)
                        .filter(|&u| u <= u128::from(u64::MAX))
                        .ok_or("if_tsresol is finer than 2^-64 s")?;
                }
                InterfaceDescriptionOption::IfTsOffset(s) => clock.offset_secs = *s,
                _ => {}
            }
        }
        Ok(clock)
    }

    /// `raw` timestamp units as ns since the epoch (saturating).
    fn nanos(self, raw: u64) -> Nanos {
        let ns = u128::from(raw) * 1_000_000_000 / self.units_per_sec;
        let ns = u64::try_from(ns).unwrap_or(u64::MAX);
        ns.saturating_add(self.offset_secs.saturating_mul(1_000_000_000))
    }
}

/// The frames of a pcapng file.
fn pcapng_frames(all: &[u8], name: &str) -> Result<Vec<Frame>, CaptureError> {
    let (mut rest, mut parser) =
        PcapNgParser::new(all).map_err(|e| parse_error(name, all, 0, "section header block", e))?;
    let mut clocks: Vec<Clock> = Vec::new();
    let mut frames = Vec::with_capacity(all.len() / 128);
    while !rest.is_empty() {
        let at = offset_in(all, rest);
        let (next, block) = parser
            .next_block(rest)
            .map_err(|e| parse_error(name, all, at, "block", e))?;
        match block {
            Block::SectionHeader(_) => clocks.clear(),
            Block::InterfaceDescription(idb) => {
                if idb.linktype != DataLink::ETHERNET {
                    return Err(CaptureError::LinkType {
                        name: name.to_string(),
                        linktype: u32::from(idb.linktype),
                        offset: at,
                    });
                }
                clocks.push(Clock::of(&idb).map_err(|detail| CaptureError::Corrupt {
                    name: name.to_string(),
                    offset: at,
                    what: "interface description block",
                    detail,
                })?);
            }
            Block::EnhancedPacket(epb) => {
                let clock = *clocks.get(epb.interface_id as usize).ok_or_else(|| {
                    CaptureError::UnknownInterface {
                        name: name.to_string(),
                        offset: at,
                        interface: epb.interface_id,
                    }
                })?;
                let captured_len = epb.data.len() as u32;
                if captured_len > epb.original_len {
                    return Err(CaptureError::Corrupt {
                        name: name.to_string(),
                        offset: at,
                        what: "enhanced packet block",
                        detail: "more bytes captured than the packet had on the wire",
                    });
                }
                // pcap-file hands the raw timestamp units over as nanoseconds.
                let raw = u64::try_from(epb.timestamp.as_nanos()).unwrap_or(u64::MAX);
                frames.push(Frame {
                    timestamp: clock.nanos(raw),
                    wire_len: epb.original_len,
                    captured_len,
                    offset: data_offset(all, &epb.data).ok_or_else(|| CaptureError::Corrupt {
                        name: name.to_string(),
                        offset: at,
                        what: "enhanced packet block",
                        detail: "packet data outside the file",
                    })?,
                });
            }
            Block::SimplePacket(_) | Block::Packet(_) => {
                return Err(CaptureError::Unsupported {
                    name: name.to_string(),
                    offset: at,
                    what: if matches!(block, Block::Packet(_)) {
                        "obsolete packet block"
                    } else {
                        "simple packet block"
                    },
                })
            }
            _ => {}
        }
        rest = next;
    }
    Ok(frames)
}
