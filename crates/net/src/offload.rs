//! The offload settings of an interface, read at start so a bump in the wire can
//! say what will go wrong before it does.
//!
//! A packet socket forwards frames as the kernel hands them over:
//! - with generic receive offload (GRO) or large receive offload on the
//!   interface a bump receives from, the kernel merges segments into super-frames
//!   larger than the MTU, which the bump drops (counted as `oversize` or
//!   `too_large`); senders with TSO or GSO on a virtual interface do the same
//!   upstream, out of the bump's sight;
//! - with transmit checksum offload on a sender, frames arrive with their TCP or
//!   UDP checksum unfinished: the bump completes them (see
//!   [`crate::afpacket::RxFrame::copy_to`]), so that setting needs no change.
//!
//! [`Offloads::query`] reads the flags with the legacy ethtool ioctls, which need
//! no privilege.

use std::os::fd::AsFd;

use crate::afpacket::NetError;
use crate::sys;

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
}

#[cfg(test)]
mod tests {
    use super::*;

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
