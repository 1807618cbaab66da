//! The offload settings of an interface, read at start so a bump in the wire can
//! say what will go wrong before it does.
//!
//! A packet socket forwards frames as the kernel hands them over:
//! - with generic receive offload (GRO) or large receive offload on the
//!   interface a bump receives from, the kernel merges segments into super-frames
//!   larger than the MTU; senders with TSO or GSO on a virtual interface hand
//!   such super-frames on too, out of the bump's sight. In [`Segmentation::Gso`]
//!   mode (AF_PACKET with `PACKET_VNET_HDR`, see [`crate::vnet`]) they cross
//!   whole, scheduled as one unit charged the bytes of their segments, and the
//!   kernel segments them on the way out; without it they are dropped and
//!   counted (`oversize` or `too_large`);
//! - with transmit checksum offload on a sender, frames arrive with their TCP or
//!   UDP checksum unfinished: the bump completes them (see
//!   [`crate::afpacket::RxFrame::copy_to`]), or in GSO mode hands them on for the
//!   kernel to complete, so that setting needs no change.
//!
//! AF_XDP carries no offload metadata: a veth with an XDP program attached
//! takes the segmentation offloads away from its peer, so senders segment
//! before the bump, and GRO on a NIC runs after XDP; with AF_XDP every frame is
//! MTU-sized whatever the flags say.
//!
//! [`Offloads::query`] reads the flags with the legacy ethtool ioctls, which need
//! no privilege; [`resolve`] picks the mode `eiffel shape` runs in.

use std::os::fd::AsFd;

use std::fmt;

use crate::afpacket::NetError;
use crate::sys;
use crate::xdp::IoChoice;

const ETHTOOL_GTXCSUM: u32 = 0x16;
const ETHTOOL_GTSO: u32 = 0x1e;
const ETHTOOL_GGSO: u32 = 0x23;
const ETHTOOL_GGRO: u32 = 0x2b;
const ETHTOOL_GFLAGS: u32 = 0x25;
const ETH_FLAG_LRO: u32 = 1 << 15;

/// The offload flags of one interface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offloads {
    /// Generic receive offload.
    pub gro: bool,
    /// Large receive offload.
    pub lro: bool,
    /// Generic segmentation offload (for frames this host sends).
    pub gso: bool,
    /// TCP segmentation offload (for frames this host sends).
    pub tso: bool,
    /// Transmit checksum offload (for frames this host sends).
    pub tx_checksum: bool,
}

impl Offloads {
    /// Reads the flags of `interface`; a flag the driver does not report reads
    /// as off.
    ///
    /// # Errors
    /// A missing interface or a failed socket.
    pub fn query(interface: &str) -> Result<Offloads, NetError> {
        let fd = sys::inet_socket()
            .map_err(|e| NetError::io("opening a socket for ethtool", interface, e))?;
        let get = |cmd| match sys::ethtool_flag(fd.as_fd(), interface, cmd) {
            Ok(v) => Ok(v),
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(0),
            Err(e) => Err(NetError::io("reading the offload settings", interface, e)),
        };
        Ok(Offloads {
            gro: get(ETHTOOL_GGRO)? != 0,
            lro: get(ETHTOOL_GFLAGS)? & ETH_FLAG_LRO != 0,
            gso: get(ETHTOOL_GGSO)? != 0,
            tso: get(ETHTOOL_GTSO)? != 0,
            tx_checksum: get(ETHTOOL_GTXCSUM)? != 0,
        })
    }

    /// Whether frames received on the interface can be merged beyond the MTU.
    #[must_use]
    pub fn merges_received(&self) -> bool {
        self.gro || self.lro
    }

    /// The names of the segmentation and receive offloads that are on.
    #[must_use]
    pub fn on(&self) -> Vec<&'static str> {
        [
            (self.gro, "GRO"),
            (self.lro, "LRO"),
            (self.gso, "GSO"),
            (self.tso, "TSO"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

/// How a bump treats GSO/TSO/GRO super-frames, as asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OffloadChoice {
    /// [`Segmentation::Gso`] when a segmentation or receive offload is on on
    /// either interface (and the packet I/O is not explicitly AF_XDP), else
    /// [`Segmentation::Off`].
    #[default]
    Auto,
    /// Frames up to the MTU only.
    Off,
    /// Super-frames cross whole (AF_PACKET only).
    Gso,
}

/// How a bump treats super-frames.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Segmentation {
    /// Frames up to the MTU; a larger one is dropped and counted.
    #[default]
    Off,
    /// AF_PACKET rings with `PACKET_VNET_HDR`: super-frames are received with
    /// their `virtio_net_hdr`, scheduled as one unit charged the wire bytes of
    /// their segments, and transmitted with it for the kernel to segment.
    Gso,
}

/// The mode a bump runs in, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadReport {
    /// The mode.
    pub mode: Segmentation,
    /// Why it was chosen.
    pub why: String,
}

impl fmt::Display for OffloadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mode = match self.mode {
            Segmentation::Off => "off",
            Segmentation::Gso => "gso",
        };
        write!(f, "{mode} ({})", self.why)
    }
}

/// `--offload gso` with `--io af_xdp`.
#[derive(Debug, thiserror::Error)]
#[error(
    "GSO super-frames cannot cross AF_XDP (XDP carries no offload metadata, and a veth \
     with an XDP program takes the segmentation offloads from its peer): use \
     `--io af_packet` with `--offload gso`, or `--offload off`"
)]
pub struct GsoNeedsAfPacket;

const XDP_NOTE: &str = "AF_XDP carries no GSO metadata: frames reach XDP segmented";

/// Picks the offload mode and the packet I/O: `choice` and `io` as asked for,
/// the interfaces' flags read with [`Offloads::query`] (an interface that
/// cannot be read counts as all off; opening it reports why).
///
/// # Errors
/// [`GsoNeedsAfPacket`] for GSO over AF_XDP.
pub fn resolve(
    choice: OffloadChoice,
    io: IoChoice,
    interfaces: [&str; 2],
) -> Result<(OffloadReport, IoChoice), GsoNeedsAfPacket> {
    let report = |mode, why: String| OffloadReport { mode, why };
    let on: Vec<String> = interfaces
        .iter()
        .filter_map(|dev| {
            let flags = Offloads::query(dev).ok()?.on();
            (!flags.is_empty()).then(|| format!("{} on `{dev}`", flags.join(", ")))
        })
        .collect();
    match (choice, io) {
        (OffloadChoice::Gso, IoChoice::AfXdp) => Err(GsoNeedsAfPacket),
        (OffloadChoice::Gso, _) => Ok((
            report(Segmentation::Gso, "--offload gso".into()),
            IoChoice::AfPacket,
        )),
        (OffloadChoice::Off, _) => Ok((report(Segmentation::Off, "--offload off".into()), io)),
        (OffloadChoice::Auto, IoChoice::AfXdp) => {
            Ok((report(Segmentation::Off, XDP_NOTE.into()), io))
        }
        (OffloadChoice::Auto, _) if !on.is_empty() => Ok((
            report(
                Segmentation::Gso,
                format!("{}: super-frames cross whole", on.join("; ")),
            ),
            IoChoice::AfPacket,
        )),
        (OffloadChoice::Auto, _) => Ok((
            report(
                Segmentation::Off,
                "no GRO, LRO, GSO or TSO on either interface".into(),
            ),
            io,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gso_mode_is_chosen_by_flags_and_refused_over_af_xdp() {
        let none = ["eiffel-none0", "eiffel-none1"];
        let (r, io) = resolve(OffloadChoice::Auto, IoChoice::Auto, none).unwrap();
        assert_eq!((r.mode, io), (Segmentation::Off, IoChoice::Auto));
        let (r, io) = resolve(OffloadChoice::Gso, IoChoice::Auto, none).unwrap();
        assert_eq!((r.mode, io), (Segmentation::Gso, IoChoice::AfPacket));
        assert_eq!(r.to_string(), "gso (--offload gso)");
        assert!(resolve(OffloadChoice::Gso, IoChoice::AfXdp, none).is_err());
        let (r, io) = resolve(OffloadChoice::Off, IoChoice::AfXdp, none).unwrap();
        assert_eq!((r.mode, io), (Segmentation::Off, IoChoice::AfXdp));
        let flags = Offloads {
            gro: true,
            tso: true,
            ..Offloads::default()
        };
        assert_eq!(flags.on(), ["GRO", "TSO"]);
    }

    #[test]
    fn reads_loopback_and_names_missing_interfaces() {
        // Loopback exists in every namespace; its flags vary by kernel, but the
        // query succeeds.
        assert!(Offloads::query("lo").is_ok());
        assert!(matches!(
            Offloads::query("eiffel-none0"),
            Err(NetError::NoSuchInterface { .. })
        ));
    }
}
