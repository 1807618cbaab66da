//! Packet I/O on a Linux interface through `AF_PACKET` memory-mapped rings.
//!
//! - [`RxRing`]: a TPACKET_V3 receive ring. The kernel fills blocks of frames and
//!   hands each block over whole, when it is full or when the *retire timeout*
//!   expires; [`RxRing::recv`] walks the handed-over frames and gives each block back
//!   as soon as its last frame has been visited. Bound to one interface with
//!   `ETH_P_ALL`, in promiscuous mode, with `PACKET_IGNORE_OUTGOING` so frames this
//!   host transmits on the interface (our own forwarded frames included) are not
//!   received again; a ring in a `PACKET_FANOUT` group asks the same of the group
//!   (`PACKET_FANOUT_FLAG_IGNORE_OUTGOING`), which does not apply its members'
//!   own option.
//! - [`TxRing`]: a TPACKET_V2 transmit ring (TPACKET_V3 brings nothing to transmit
//!   but variable frame sizes we do not need). [`TxRing::send`] copies a frame into
//!   the next free slot; [`TxRing::flush`] issues one `send(2)` that makes the kernel
//!   transmit every slot filled since the last flush: one system call per batch.
//!   The socket is bound with protocol 0, so it receives nothing. `PACKET_LOSS` is
//!   set: a frame the kernel refuses (too long for the MTU) is marked and skipped
//!   instead of stalling the ring, and counted in [`TxStats::rejected`].
//! - [`PollSet`]: waits on any number of rings with `ppoll(2)`, to the nanosecond, so
//!   a caller sleeps exactly until the next arrival or the next departure.
//!
//! # Frame sizes, offloads, VLAN tags
//! - The kernel strips the outer VLAN tag of a received frame into metadata before
//!   packet sockets see it. [`RxFrame::copy_to`] puts it back, so a forwarded frame
//!   leaves with the tags it came with (both tags of a double-tagged frame).
//! - Generic receive offload and segmentation offload (GRO, TSO, GSO) hand a
//!   packet socket "super-frames" of up to 64 KiB. Rings opened with
//!   [`FrameHeader::Vnet`] (`PACKET_VNET_HDR`, on the TPACKET_V3 receive ring and
//!   the TPACKET_V2 transmit ring) carry each frame's `virtio_net_hdr`
//!   ([`crate::vnet`]): [`RxFrame::vnet`] reads it, [`RxFrame::copy_with_header`]
//!   and [`TxRing::send_offloaded`] pass it on, and the kernel segments the
//!   super-frame on transmission (or hands the GSO socket buffer on to the next
//!   veth); a checksum left for hardware is left for the kernel to complete
//!   ([`ChecksumFix::Offloaded`]). A 64 KiB frame fits a receive block (256 KiB
//!   by default); transmit slots must be [`TxConfig::GSO_FRAME_SIZE`]. A frame
//!   larger than the MTU without GSO metadata is still refused and counted
//!   ([`TxStats::too_large`]). On [`FrameHeader::Plain`] rings super-frames are
//!   dropped and counted: turn offloads off in front of such a shaper (`ethtool -K
//!   DEV gro off gso off tso off`).
//! - Frames with a checksum still to be completed by hardware
//!   (`TP_STATUS_CSUMNOTREADY`: Linux's `CHECKSUM_PARTIAL`, seen on traffic from
//!   a veth peer or a local sender with transmit checksum offload on) are counted in
//!   [`RxStats::checksum_pending`] and completed in software while they are copied
//!   ([`RxFrame::copy_to`], with [`eiffel_classify::checksum::complete`]): no card
//!   downstream would, and the receiver would discard them. TCP and UDP over IPv4
//!   and IPv6 are completed; anything else is forwarded as it is and its copy says
//!   why ([`ChecksumFix::Left`]).
//! - Jumbo frames work when [`TxConfig::frame_size`] and the buffer pool's slot size
//!   exceed the MTU plus 18 bytes (Ethernet header and one VLAN tag) and 32 bytes of
//!   TPACKET header.
//!
//! # Latency of TPACKET_V3
//! A block is handed over when it fills or when [`RxConfig::retire_timeout_ms`]
//! expires (the kernel's unit is the millisecond, rounded up to a scheduler tick), so
//! under light load a frame can wait that long before user space sees it; under load
//! blocks fill first. Smaller blocks fill sooner.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use eiffel_classify::checksum::{self, Incomplete};

use crate::sys::{self, ring};
use crate::vnet::{VnetHdr, VNET_HDR_LEN};

/// Something failed while opening or driving a packet socket.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The interface does not exist (in this network namespace).
    #[error(
        "interface `{interface}` does not exist in this network namespace \
         (list the interfaces with `ip link`)"
    )]
    NoSuchInterface {
        /// The name given.
        interface: String,
    },
    /// The process lacks `CAP_NET_RAW`.
    #[error(
        "{op} on `{interface}` needs CAP_NET_RAW: run as root, or grant the capability \
         with `setcap cap_net_raw+ep <binary>`"
    )]
    PermissionDenied {
        /// The operation refused.
        op: &'static str,
        /// The interface.
        interface: String,
    },
    /// A system call failed.
    #[error("{op} on `{interface}`: {source}")]
    Io {
        /// The operation.
        op: &'static str,
        /// The interface.
        interface: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A ring configuration the kernel would refuse.
    #[error("{0}")]
    Config(String),
}

impl NetError {
    pub(crate) fn io(op: &'static str, interface: &str, source: io::Error) -> NetError {
        match source.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => NetError::PermissionDenied {
                op,
                interface: interface.to_owned(),
            },
            Some(libc::ENODEV | libc::ENXIO) => NetError::NoSuchInterface {
                interface: interface.to_owned(),
            },
            _ => NetError::Io {
                op,
                interface: interface.to_owned(),
                source,
            },
        }
    }
}

/// Geometry and options of a receive ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RxConfig {
    /// Bytes per block: a multiple of the page size, at least one frame.
    pub block_size: u32,
    /// Blocks in the ring.
    pub block_count: u32,
    /// A block that is not full is handed over after this many milliseconds (>= 1).
    pub retire_timeout_ms: u32,
    /// Put the interface in promiscuous mode while the ring is open.
    pub promiscuous: bool,
    /// Join this `PACKET_FANOUT` group: the kernel spreads the interface's frames
    /// over the group's rings by flow hash, so each flow stays on one ring.
    pub fanout: Option<u16>,
    /// Whether each frame comes with its offload metadata.
    pub header: FrameHeader,
}

/// What a ring's frames carry besides their bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FrameHeader {
    /// Nothing: frames up to the MTU, checksums left for hardware completed in
    /// software.
    #[default]
    Plain,
    /// A `virtio_net_hdr` (`PACKET_VNET_HDR`, see [`crate::vnet`]): GSO/TSO/GRO
    /// super-frames cross whole with their segmentation metadata, and a
    /// checksum left for hardware is handed on for the kernel to complete.
    Vnet,
}

/// `PACKET_FANOUT` of `<linux/if_packet.h>`.
const PACKET_FANOUT: libc::c_int = 18;
/// `PACKET_FANOUT_HASH`: frames spread by their flow hash.
const PACKET_FANOUT_HASH: libc::c_int = 0;
/// `PACKET_FANOUT_FLAG_IGNORE_OUTGOING`: the group skips frames
/// transmitted on the interface, as `PACKET_IGNORE_OUTGOING` does for one
/// socket; a group's members do not apply their own option, so without the
/// flag the group sees every frame any socket sends there.
const PACKET_FANOUT_FLAG_IGNORE_OUTGOING: libc::c_int = 0x4000;

/// The `tp_frame_size` of a receive ring. TPACKET_V3 packs frames at their own
/// length, but the kernel still checks the ring's geometry against it.
const RX_FRAME_SIZE: u32 = 2048;

impl RxConfig {
    /// The ring geometry to ask the kernel for, or a [`NetError::Config`] saying
    /// which setting it would refuse.
    fn ring_request(&self) -> Result<libc::tpacket_req3, NetError> {
        let page = sys::page_size();
        let frame_size = RX_FRAME_SIZE;
        check(
            self.block_size as usize % page == 0 && self.block_size >= frame_size,
            || {
                format!("receive block size {} must be a multiple of the {page}-byte page size and at least {frame_size}", self.block_size)
            },
        )?;
        check(self.block_count > 0, || {
            "receive ring needs at least one block".into()
        })?;
        check(self.retire_timeout_ms > 0, || {
            "receive retire timeout must be at least 1 ms".into()
        })?;
        let total = (self.block_size as usize).checked_mul(self.block_count as usize);
        check(total.is_some_and(|t| t <= 1 << 31), || {
            "receive ring larger than 2 GiB".into()
        })?;
        Ok(libc::tpacket_req3 {
            tp_block_size: self.block_size,
            tp_block_nr: self.block_count,
            tp_frame_size: frame_size,
            tp_frame_nr: self.block_size / frame_size * self.block_count,
            tp_retire_blk_tov: self.retire_timeout_ms,
            tp_sizeof_priv: 0,
            tp_feature_req_word: 0,
        })
    }
}

impl Default for RxConfig {
    /// 32 blocks of 256 KiB (8 MiB: about 5,000 full-size frames, 60,000 minimum-size
    /// ones), retired after 1 ms, promiscuous.
    fn default() -> Self {
        RxConfig {
            block_size: 256 * 1024,
            block_count: 32,
            retire_timeout_ms: 1,
            promiscuous: true,
            fanout: None,
            header: FrameHeader::Plain,
        }
    }
}

/// Geometry and options of a transmit ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxConfig {
    /// Bytes per slot, including the 32-byte TPACKET header: a multiple of 16.
    pub frame_size: u32,
    /// Slots in the ring.
    pub frame_count: u32,
    /// Hand frames straight to the driver, skipping the interface's qdisc
    /// (`PACKET_QDISC_BYPASS`). The driver may then drop under pressure where the
    /// qdisc would have queued.
    pub qdisc_bypass: bool,
    /// Whether each frame is written after a `virtio_net_hdr` for the kernel
    /// ([`FrameHeader::Vnet`]: super-frames are segmented on the way out).
    pub header: FrameHeader,
}

impl TxConfig {
    /// Slots for [`FrameHeader::Vnet`] rings: room for a 64 KiB super-frame with
    /// its Ethernet header, a VLAN tag, the `virtio_net_hdr` and the TPACKET
    /// header (68 KiB of ring each, a page-rounded block per slot).
    pub const GSO_FRAME_SIZE: u32 = 65_536 + 256;

    /// The ring geometry to ask the kernel for: the slots rounded up to whole
    /// page-rounded blocks. A [`NetError::Config`] says which setting the kernel
    /// would refuse.
    fn ring_request(&self) -> Result<libc::tpacket_req, NetError> {
        let page = sys::page_size() as u32;
        check(
            self.frame_size as usize > ring::TX_DATA_OFFSET + ETH_HLEN
                && self.frame_size % 16 == 0
                && self.frame_size <= 1 << 20,
            || {
                format!(
                    "transmit frame size {} must be a multiple of 16 in 64..=1048576",
                    self.frame_size
                )
            },
        )?;
        let block_size = self.frame_size.div_ceil(page) * page;
        let per_block = block_size / self.frame_size;
        check(self.frame_count > 0, || {
            "transmit ring needs at least one frame".into()
        })?;
        let frame_count = self.frame_count.div_ceil(per_block) * per_block;
        let total = u64::from(block_size) * u64::from(frame_count / per_block);
        check(total <= 1 << 31, || {
            "transmit ring larger than 2 GiB".into()
        })?;
        Ok(libc::tpacket_req {
            tp_block_size: block_size,
            tp_block_nr: frame_count / per_block,
            tp_frame_size: self.frame_size,
            tp_frame_nr: frame_count,
        })
    }
}

impl Default for TxConfig {
    /// 1,024 slots of 2 KiB (room for a 1,500-byte MTU frame with two VLAN tags),
    /// through the qdisc.
    fn default() -> Self {
        TxConfig {
            frame_size: 2048,
            frame_count: 1024,
            qdisc_bypass: false,
            header: FrameHeader::Plain,
        }
    }
}

/// Receive counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxStats {
    /// Frames visited.
    pub frames: u64,
    /// Bytes visited (wire length).
    pub bytes: u64,
    /// Frames captured shorter than their wire length (larger than a ring block).
    pub truncated: u64,
    /// Frames whose transport checksum was left for hardware to complete.
    pub checksum_pending: u64,
    /// Super-frames received whole, with GSO metadata ([`FrameHeader::Vnet`]).
    pub gso: u64,
    /// Frames the kernel dropped because the ring was full.
    pub kernel_drops: u64,
    /// Blocks whose kernel-written offsets were inconsistent (skipped).
    pub ring_errors: u64,
}

/// Transmit counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxStats {
    /// Frames queued in the ring.
    pub frames: u64,
    /// Bytes queued in the ring.
    pub bytes: u64,
    /// Frames the kernel refused (longer than the MTU allows).
    pub rejected: u64,
    /// Frames refused before queueing because they exceed [`TxRing::max_frame`].
    pub too_large: u64,
    /// Times a frame found the ring full.
    pub full: u64,
    /// `send(2)` calls that started transmission.
    pub kicks: u64,
    /// `send(2)` calls that failed (transmission is retried at the next flush).
    pub kick_errors: u64,
    /// Frames queued by [`TxRing::send_frame`] whose checksum, left for hardware,
    /// was completed in the copy.
    pub checksum_completed: u64,
    /// Frames queued by [`TxRing::send_frame`] whose checksum was left for
    /// hardware and could not be completed (see [`ChecksumFix::Left`]).
    pub checksum_left: u64,
    /// Frames queued by [`TxRing::send_frame`] with a checksum left for the
    /// kernel to complete, in their `virtio_net_hdr` ([`ChecksumFix::Offloaded`]).
    pub checksum_offloaded: u64,
    /// Super-frames queued whole for the kernel to segment.
    pub gso: u64,
}

/// Why [`TxRing::send`] did not queue a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// Every slot is still owned by the kernel: flush, then wait for writability.
    #[error("transmit ring full")]
    Full,
    /// The frame is longer than the interface accepts.
    #[error("frame of {len} bytes exceeds the {max}-byte limit")]
    TooLarge {
        /// The frame's length.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// A frame in a receive ring, valid during [`RxRing::recv`]'s callback.
#[derive(Clone, Copy, Debug)]
pub struct RxFrame<'a> {
    raw: ring::RawFrame<'a>,
}

const TPID_8021Q: u16 = 0x8100;

impl<'a> RxFrame<'a> {
    /// The captured bytes, from the destination MAC on, without the outer VLAN tag
    /// when the kernel took it out (see [`RxFrame::vlan_tag`]).
    #[must_use]
    pub fn data(&self) -> &'a [u8] {
        self.raw.data
    }

    /// The outer VLAN tag the kernel took out of the frame (TPID and TCI, network
    /// byte order), if any.
    #[must_use]
    pub fn vlan_tag(&self) -> Option<[u8; 4]> {
        if self.raw.status & libc::TP_STATUS_VLAN_VALID == 0 {
            return None;
        }
        let tpid = if self.raw.status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            self.raw.vlan_tpid
        } else {
            TPID_8021Q
        };
        let [a, b] = tpid.to_be_bytes();
        let [c, d] = self.raw.vlan_tci.to_be_bytes();
        Some([a, b, c, d])
    }

    /// Length of the frame as it was on the wire, VLAN tag included.
    #[must_use]
    pub fn len(&self) -> usize {
        self.raw.data.len() + if self.vlan_tag().is_some() { 4 } else { 0 }
    }

    /// Whether the frame is empty (never true for a frame from a ring).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.raw.data.is_empty()
    }

    /// Whether the ring captured less than the whole frame.
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        (self.raw.data.len() as u64) < u64::from(self.raw.wire_len)
    }

    /// Whether the transport checksum was left for hardware to complete.
    #[must_use]
    pub fn checksum_pending(&self) -> bool {
        self.raw.status & libc::TP_STATUS_CSUMNOTREADY != 0
    }

    /// The frame's offload metadata, on a ring opened with [`FrameHeader::Vnet`].
    #[must_use]
    pub fn vnet(&self) -> Option<VnetHdr> {
        self.raw.vnet.as_ref().map(VnetHdr::parse)
    }

    /// Whether the frame is a GSO super-frame (only a [`FrameHeader::Vnet`] ring
    /// says so).
    #[must_use]
    pub fn is_gso(&self) -> bool {
        self.vnet().is_some_and(|h| h.is_gso())
    }

    /// Copies the bytes as they were on the wire (the VLAN tag put back after the
    /// MAC addresses); returns the length.
    fn copy_bytes(&self, dst: &mut [u8]) -> Option<usize> {
        let src = self.raw.data;
        let len = self.len();
        let dst = dst.get_mut(..len)?;
        match self.vlan_tag() {
            None => dst.copy_from_slice(src),
            Some(tag) => {
                let (macs, rest) = src.split_at_checked(12)?;
                dst[..12].copy_from_slice(macs);
                dst[12..16].copy_from_slice(&tag);
                dst[16..].copy_from_slice(rest);
            }
        }
        Some(len)
    }

    /// Completes in `frame` a transport checksum left for hardware, if any.
    fn complete(&self, frame: &mut [u8]) -> ChecksumFix {
        if !self.checksum_pending() {
            return ChecksumFix::Ready;
        }
        match checksum::complete(frame) {
            Ok(_) => ChecksumFix::Completed,
            Err(why) => ChecksumFix::Left(why),
        }
    }

    /// Copies the frame into `dst` as it was on the wire (the VLAN tag put back after
    /// the MAC addresses), completing a transport checksum left for hardware
    /// ([`RxFrame::checksum_pending`]). `None` when `dst` is too small or the frame
    /// is too short to carry MAC addresses.
    #[must_use]
    pub fn copy_to(&self, dst: &mut [u8]) -> Option<Copied> {
        let len = self.copy_bytes(dst)?;
        let checksum = self.complete(&mut dst[..len]);
        Some(Copied { len, checksum })
    }

    /// Copies the frame into `dst` after a `virtio_net_hdr` for transmission (the
    /// layout of a [`FrameHeader::Vnet`] transmit ring): the received header, its
    /// checksum start moved past a restored VLAN tag, so a super-frame stays one
    /// and a checksum left for hardware is left for the kernel
    /// ([`ChecksumFix::Offloaded`]). A frame from a ring without headers gets an
    /// empty one, its checksum completed in software as by [`RxFrame::copy_to`].
    /// The length returned includes the header.
    #[must_use]
    pub fn copy_with_header(&self, dst: &mut [u8]) -> Option<Copied> {
        let (head, frame) = dst.split_at_mut_checked(VNET_HDR_LEN)?;
        let len = self.copy_bytes(frame)?;
        let shift = if self.vlan_tag().is_some() { 4 } else { 0 };
        let hdr = self.vnet().unwrap_or(VnetHdr::NONE).for_transmit(shift);
        head.copy_from_slice(&hdr.to_bytes());
        let checksum = if hdr.needs_csum() {
            ChecksumFix::Offloaded
        } else {
            self.complete(&mut frame[..len])
        };
        Some(Copied {
            len: VNET_HDR_LEN + len,
            checksum,
        })
    }
}

/// What [`RxFrame::copy_to`] copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Copied {
    /// Bytes written.
    pub len: usize,
    /// What happened to the transport checksum.
    pub checksum: ChecksumFix,
}

/// The state of a copied frame's transport checksum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChecksumFix {
    /// The sender completed it (or the frame has none to complete).
    Ready,
    /// It was left for hardware and has been completed in the copy.
    Completed,
    /// It was left for hardware but could not be completed (not TCP or UDP over
    /// IP, an IP fragment, malformed headers): the copy carries it unfinished.
    Left(Incomplete),
    /// It was left for hardware and stays so: the copy's `virtio_net_hdr` asks
    /// the kernel to complete it ([`RxFrame::copy_with_header`]).
    Offloaded,
}

fn check(cond: bool, msg: impl FnOnce() -> String) -> Result<(), NetError> {
    if cond {
        Ok(())
    } else {
        Err(NetError::Config(msg()))
    }
}

/// Opens a packet socket and resolves `interface` on it.
fn open_socket(interface: &str) -> Result<(OwnedFd, u32), NetError> {
    let fd = sys::packet_socket()
        .map_err(|e| NetError::io("opening an AF_PACKET socket", interface, e))?;
    let index = sys::interface_index(fd.as_fd(), interface).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidInput => NetError::Config(format!(
            "`{interface}` is not a valid interface name (1 to 15 bytes)"
        )),
        _ => NetError::io("looking up the interface", interface, e),
    })?;
    Ok((fd, index))
}

/// Sets up the receive ring `req` describes on `fd` and maps it, its frames read
/// after a `virtio_net_hdr` when `header` says so.
fn map_rx_ring(
    fd: BorrowedFd<'_>,
    interface: &str,
    req: &libc::tpacket_req3,
    header: FrameHeader,
) -> Result<ring::RxBlocks, NetError> {
    sys::set_rx_ring(fd, req)
        .map_err(|e| NetError::io("setting up the receive ring", interface, e))?;
    let mapping = |e| NetError::io("mapping the receive ring", interface, e);
    let (block_size, block_count) = (req.tp_block_size as usize, req.tp_block_nr as usize);
    let map = ring::Mmap::new(fd, block_size * block_count).map_err(mapping)?;
    let blocks = ring::RxBlocks::new(map, block_size, block_count).map_err(mapping)?;
    Ok(match header {
        FrameHeader::Plain => blocks,
        FrameHeader::Vnet => blocks.with_vnet(),
    })
}

/// Sets up the transmit ring `req` describes on `fd` and maps it.
fn map_tx_ring(
    fd: BorrowedFd<'_>,
    interface: &str,
    req: &libc::tpacket_req,
) -> Result<ring::TxFrames, NetError> {
    sys::set_tx_ring(fd, req)
        .map_err(|e| NetError::io("setting up the transmit ring", interface, e))?;
    let mapping = |e| NetError::io("mapping the transmit ring", interface, e);
    let block_size = req.tp_block_size as usize;
    let map = ring::Mmap::new(fd, block_size * req.tp_block_nr as usize).map_err(mapping)?;
    ring::TxFrames::new(
        map,
        block_size,
        req.tp_frame_size as usize,
        req.tp_frame_nr as usize,
    )
    .map_err(mapping)
}

/// A TPACKET_V3 receive ring bound to one interface.
pub struct RxRing {
    blocks: ring::RxBlocks,
    header: FrameHeader,
    fd: OwnedFd,
    interface: String,
    stats: RxStats,
}

impl RxRing {
    /// Opens a receive ring on `interface`.
    ///
    /// # Errors
    /// A missing interface, missing `CAP_NET_RAW`, a geometry the kernel refuses, or
    /// any other failed system call, each naming the interface.
    pub fn open(interface: &str, cfg: &RxConfig) -> Result<RxRing, NetError> {
        let req = cfg.ring_request()?;
        let (fd, index) = open_socket(interface)?;
        let opt = |op, r: io::Result<()>| r.map_err(|e| NetError::io(op, interface, e));
        opt(
            "selecting TPACKET_V3",
            sys::set_packet_int(
                fd.as_fd(),
                libc::PACKET_VERSION,
                libc::tpacket_versions::TPACKET_V3 as libc::c_int,
            ),
        )?;
        opt(
            "setting PACKET_IGNORE_OUTGOING",
            sys::set_packet_int(fd.as_fd(), libc::PACKET_IGNORE_OUTGOING, 1),
        )?;
        if cfg.header == FrameHeader::Vnet {
            opt(
                "setting PACKET_VNET_HDR on the receive socket",
                sys::set_packet_int(fd.as_fd(), libc::PACKET_VNET_HDR, 1),
            )?;
        }
        let blocks = map_rx_ring(fd.as_fd(), interface, &req, cfg.header)?;
        opt(
            "binding the receive socket",
            sys::bind(fd.as_fd(), index, libc::ETH_P_ALL as u16),
        )?;
        if cfg.promiscuous {
            opt(
                "enabling promiscuous mode",
                sys::add_promiscuous(fd.as_fd(), index),
            )?;
        }
        if let Some(group) = cfg.fanout {
            let mode = PACKET_FANOUT_HASH | PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
            let arg = libc::c_int::from(group) | (mode << 16);
            opt(
                "joining the PACKET_FANOUT group with PACKET_FANOUT_FLAG_IGNORE_OUTGOING \
                 (a kernel without the flag cannot keep the bump's own transmissions out \
                 of the group: run one receive queue, or AF_XDP)",
                sys::set_packet_int(fd.as_fd(), PACKET_FANOUT, arg),
            )?;
        }
        Ok(RxRing {
            blocks,
            header: cfg.header,
            fd,
            interface: interface.to_owned(),
            stats: RxStats::default(),
        })
    }

    /// Visits up to `budget` received frames, oldest first, and returns how many it
    /// visited. Does not block. Each frame is valid only inside the callback; its
    /// ring block goes back to the kernel once all its frames have been visited.
    pub fn recv(&mut self, budget: usize, mut on_frame: impl FnMut(RxFrame<'_>)) -> usize {
        let mut n = 0;
        while n < budget {
            match self.blocks.next_frame() {
                None => break,
                Some(Err(ring::Corrupt)) => self.stats.ring_errors += 1,
                Some(Ok(raw)) => {
                    let frame = RxFrame { raw };
                    self.stats.frames += 1;
                    self.stats.bytes += u64::from(raw.wire_len);
                    self.stats.truncated += u64::from(frame.is_truncated());
                    self.stats.checksum_pending += u64::from(frame.checksum_pending());
                    self.stats.gso += u64::from(frame.is_gso());
                    on_frame(frame);
                    n += 1;
                }
            }
        }
        self.blocks.release_finished();
        n
    }

    /// Counters as of now, with the kernel's ring-full drops as of the last
    /// [`RxRing::stats`] call (reading those costs a system call).
    #[must_use]
    pub fn counters(&self) -> RxStats {
        self.stats
    }

    /// Counters, with the kernel's ring-full drops brought up to date.
    pub fn stats(&mut self) -> RxStats {
        if let Ok((_, drops, _)) = sys::packet_stats(self.fd.as_fd()) {
            self.stats.kernel_drops += u64::from(drops);
        }
        self.stats
    }

    /// The interface name.
    #[must_use]
    pub fn interface(&self) -> &str {
        &self.interface
    }

    /// What the ring's frames carry besides their bytes.
    #[must_use]
    pub fn header(&self) -> FrameHeader {
        self.header
    }
}

impl AsFd for RxRing {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl core::fmt::Debug for RxRing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RxRing")
            .field("interface", &self.interface)
            .field("fd", &self.fd.as_raw_fd())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// A TPACKET_V2 transmit ring bound to one interface.
pub struct TxRing {
    frames: ring::TxFrames,
    fd: OwnedFd,
    interface: String,
    /// Longest untagged frame the interface accepts: MTU + Ethernet header.
    max_untagged: usize,
    /// Frames are written after a `virtio_net_hdr`.
    header: FrameHeader,
    queued: u32,
    stats: TxStats,
}

const ETH_HLEN: usize = 14;
const VLAN_HLEN: usize = 4;

impl TxRing {
    /// Opens a transmit ring on `interface`.
    ///
    /// # Errors
    /// As for [`RxRing::open`].
    pub fn open(interface: &str, cfg: &TxConfig) -> Result<TxRing, NetError> {
        let req = cfg.ring_request()?;
        let (fd, index) = open_socket(interface)?;
        let mtu = sys::interface_mtu(fd.as_fd(), interface)
            .map_err(|e| NetError::io("reading the MTU", interface, e))?;
        let opt = |op, r: io::Result<()>| r.map_err(|e| NetError::io(op, interface, e));
        opt(
            "selecting TPACKET_V2",
            sys::set_packet_int(
                fd.as_fd(),
                libc::PACKET_VERSION,
                libc::tpacket_versions::TPACKET_V2 as libc::c_int,
            ),
        )?;
        opt(
            "setting PACKET_LOSS",
            sys::set_packet_int(fd.as_fd(), libc::PACKET_LOSS, 1),
        )?;
        if cfg.header == FrameHeader::Vnet {
            opt(
                "setting PACKET_VNET_HDR on the transmit socket",
                sys::set_packet_int(fd.as_fd(), libc::PACKET_VNET_HDR, 1),
            )?;
        }
        if cfg.qdisc_bypass {
            opt(
                "setting PACKET_QDISC_BYPASS",
                sys::set_packet_int(fd.as_fd(), libc::PACKET_QDISC_BYPASS, 1),
            )?;
        }
        let frames = map_tx_ring(fd.as_fd(), interface, &req)?;
        opt(
            "binding the transmit socket",
            sys::bind(fd.as_fd(), index, 0),
        )?;
        Ok(TxRing {
            frames,
            fd,
            interface: interface.to_owned(),
            max_untagged: mtu as usize + ETH_HLEN,
            header: cfg.header,
            queued: 0,
            stats: TxStats::default(),
        })
    }

    /// The longest frame accepted: MTU + 14 bytes of Ethernet header + 4 bytes for a
    /// VLAN tag (untagged frames may not use those 4), bounded by the slot size.
    /// A super-frame on a [`FrameHeader::Vnet`] ring may fill its slot
    /// ([`TxRing::max_super_frame`]).
    #[must_use]
    pub fn max_frame(&self) -> usize {
        (self.max_untagged + VLAN_HLEN).min(self.max_super_frame())
    }

    /// The longest super-frame a slot holds (after its `virtio_net_hdr`).
    #[must_use]
    pub fn max_super_frame(&self) -> usize {
        self.frames.capacity() - self.header_len()
    }

    /// What the ring's frames carry besides their bytes.
    #[must_use]
    pub fn header(&self) -> FrameHeader {
        self.header
    }

    fn header_len(&self) -> usize {
        match self.header {
            FrameHeader::Plain => 0,
            FrameHeader::Vnet => VNET_HDR_LEN,
        }
    }

    /// The longest `frame` may be: a super-frame its slot, anything else the MTU
    /// (plus a VLAN tag when it carries one, or `tagged` says it will).
    fn limit_for(&self, frame: &[u8], tagged: bool, gso: bool) -> usize {
        if gso {
            return self.max_super_frame();
        }
        let tagged = tagged
            || frame
                .get(12..14)
                .is_some_and(|t| matches!(u16::from_be_bytes([t[0], t[1]]), 0x8100 | 0x88a8));
        let limit = self.max_untagged + if tagged { VLAN_HLEN } else { 0 };
        limit.min(self.max_super_frame())
    }

    fn refuse(&mut self, len: usize, max: usize) -> Result<(), TxError> {
        self.stats.too_large += 1;
        Err(TxError::TooLarge { len, max })
    }

    /// Queues a copy of `frame` (from the destination MAC on, without FCS). It leaves
    /// at the next [`TxRing::flush`].
    ///
    /// # Errors
    /// [`TxError::Full`] when no slot is free; [`TxError::TooLarge`] when the frame
    /// exceeds what the interface accepts.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), TxError> {
        self.send_offloaded(&VnetHdr::NONE, frame)
    }

    /// Queues a copy of `frame` with its offload metadata: a super-frame
    /// ([`VnetHdr::is_gso`]) the kernel segments on the way out, or a checksum
    /// it completes. A ring without headers takes only frames that need neither
    /// segmenting nor a checksum (anything else is refused as too large).
    ///
    /// # Errors
    /// As for [`TxRing::send`].
    pub fn send_offloaded(&mut self, hdr: &VnetHdr, frame: &[u8]) -> Result<(), TxError> {
        let plain = self.header == FrameHeader::Plain;
        if plain && (hdr.is_gso() || hdr.needs_csum()) {
            return self.refuse(frame.len(), self.max_frame());
        }
        let max = self.limit_for(frame, false, hdr.is_gso());
        if frame.len() > max {
            return self.refuse(frame.len(), max);
        }
        let head = self.header_len();
        let bytes = hdr.to_bytes();
        self.submit(frame.len(), |buf| {
            let (h, f) = buf.split_at_mut_checked(head)?;
            h.copy_from_slice(&bytes[..head]);
            f.get_mut(..frame.len())?.copy_from_slice(frame);
            Some(head + frame.len())
        })?;
        self.stats.gso += u64::from(hdr.is_gso());
        Ok(())
    }

    /// Queues a received frame, copied straight from the receive ring with its VLAN
    /// tag restored and, on a [`FrameHeader::Vnet`] ring, its offload metadata.
    ///
    /// # Errors
    /// As for [`TxRing::send`].
    pub fn send_frame(&mut self, frame: &RxFrame<'_>) -> Result<(), TxError> {
        let vnet = self.header == FrameHeader::Vnet;
        let (len, gso) = (frame.len(), frame.is_gso() && vnet);
        let limit = self.limit_for(frame.data(), frame.vlan_tag().is_some(), gso);
        if len > limit {
            return self.refuse(len, limit);
        }
        let mut fix = ChecksumFix::Ready;
        self.submit(len, |buf| {
            let copied = if vnet {
                frame.copy_with_header(buf)?
            } else {
                frame.copy_to(buf)?
            };
            fix = copied.checksum;
            Some(copied.len)
        })?;
        match fix {
            ChecksumFix::Ready => {}
            ChecksumFix::Completed => self.stats.checksum_completed += 1,
            ChecksumFix::Left(_) => self.stats.checksum_left += 1,
            ChecksumFix::Offloaded => self.stats.checksum_offloaded += 1,
        }
        self.stats.gso += u64::from(gso);
        Ok(())
    }

    fn submit(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Option<usize>,
    ) -> Result<(), TxError> {
        match self.frames.submit(fill) {
            ring::Submit::Queued { rejected } => {
                self.stats.rejected += u64::from(rejected);
                self.stats.frames += 1;
                self.stats.bytes += len as u64;
                self.queued += 1;
                Ok(())
            }
            ring::Submit::Full => {
                self.stats.full += 1;
                Err(TxError::Full)
            }
            ring::Submit::Declined => {
                self.stats.too_large += 1;
                Err(TxError::TooLarge {
                    len,
                    max: self.frames.capacity(),
                })
            }
        }
    }

    /// Whether the next [`TxRing::send`] finds a free slot.
    #[must_use]
    pub fn has_room(&self) -> bool {
        self.frames.head_free()
    }

    /// Frames queued since the last flush.
    #[must_use]
    pub fn pending(&self) -> u32 {
        self.queued
    }

    /// Starts transmission of every frame queued since the last flush: one `send(2)`
    /// per batch, without waiting for completion. A transient failure (`ENOBUFS`,
    /// `EAGAIN`) leaves the frames queued for the next flush and is only counted.
    ///
    /// # Errors
    /// Any other failure of `send(2)`, naming the interface.
    pub fn flush(&mut self) -> Result<(), NetError> {
        if self.queued == 0 {
            return Ok(());
        }
        match sys::kick_tx(self.fd.as_fd()) {
            Ok(_) => {
                self.stats.kicks += 1;
                self.queued = 0;
                Ok(())
            }
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ENOBUFS | libc::EAGAIN | libc::EINTR)
                ) =>
            {
                self.stats.kick_errors += 1;
                Ok(())
            }
            Err(e) => {
                self.stats.kick_errors += 1;
                Err(NetError::io("transmitting", &self.interface, e))
            }
        }
    }

    /// Counters.
    #[must_use]
    pub fn stats(&self) -> TxStats {
        self.stats
    }

    /// The interface name.
    #[must_use]
    pub fn interface(&self) -> &str {
        &self.interface
    }
}

impl AsFd for TxRing {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl core::fmt::Debug for TxRing {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("TxRing")
            .field("interface", &self.interface)
            .field("fd", &self.fd.as_raw_fd())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

/// Which readiness to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interest {
    /// Frames to receive (a receive ring handed a block over).
    Readable,
    /// Room to transmit (a transmit slot came back).
    Writable,
}

/// A reusable set of descriptors to wait on together.
#[derive(Debug, Default)]
pub struct PollSet {
    fds: Vec<sys::PollFd>,
}

impl PollSet {
    /// An empty set with room for `n` entries.
    #[must_use]
    pub fn with_capacity(n: usize) -> PollSet {
        PollSet {
            fds: Vec::with_capacity(n),
        }
    }

    /// Removes every entry (keeping the storage).
    pub fn clear(&mut self) {
        self.fds.clear();
    }

    /// Adds an entry and returns its index for [`PollSet::is_ready`].
    pub fn add(&mut self, fd: &impl AsFd, interest: Interest) -> usize {
        let events = match interest {
            Interest::Readable => libc::POLLIN,
            Interest::Writable => libc::POLLOUT,
        };
        self.fds.push(sys::PollFd {
            fd: fd.as_fd().as_raw_fd(),
            events,
            revents: 0,
        });
        self.fds.len() - 1
    }

    /// Waits until an entry is ready or `timeout` passes (`None`: no limit). Returns
    /// the number of ready entries, 0 on timeout or signal.
    ///
    /// # Errors
    /// A failed `ppoll(2)`.
    pub fn wait(&mut self, timeout: Option<Duration>) -> io::Result<usize> {
        for p in &mut self.fds {
            p.revents = 0;
        }
        sys::ppoll(&mut self.fds, timeout)
    }

    /// Whether entry `index` was ready (or in error) at the last wait.
    #[must_use]
    pub fn is_ready(&self, index: usize) -> bool {
        self.fds.get(index).is_some_and(|p| p.revents != 0)
    }
}
