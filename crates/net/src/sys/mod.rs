//! The operating-system boundary: every `unsafe` block of the crate lives under this
//! module.
//!
//! - this file: thin, checked wrappers over the libc calls the crate makes (packet
//!   sockets, socket options, interface ioctls, `ppoll`, `setns`, `geteuid`);
//! - [`ring`]: the memory shared with the kernel (the `mmap`ed TPACKET rings) and the
//!   only code that reads or writes it;
//! - [`frames`]: frame slots shared between this process's threads (the receive
//!   thread fills them, transmit and drop paths drain them), owned one thread at a
//!   time through per-slot atomic states.
//!
//! Conventions: every function returns `io::Error::last_os_error()` on failure and
//! never panics; every `unsafe` block says which invariant makes it sound. The
//! wrappers take `BorrowedFd`, so they cannot outlive the socket they act on.

pub(crate) mod frames;
pub(crate) mod ring;
#[cfg(eiffel_xdp)]
pub(crate) mod xsk;

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

/// A `pollfd` entry, re-exported for [`crate::afpacket::PollSet`].
pub(crate) type PollFd = libc::pollfd;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Opens an `AF_PACKET`/`SOCK_RAW` socket with protocol 0, so that no frame is queued
/// before the ring is set up and [`bind`] names the protocol. Non-blocking,
/// close-on-exec.
pub(crate) fn packet_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; it either fails or returns a new
    // descriptor.
    let fd = cvt(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
            0,
        )
    })?;
    // SAFETY: `fd` was just returned by socket(2): open, and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `setsockopt(fd, level, name, value)`.
///
/// `T` must be a plain C struct or integer matching what the option expects (all
/// callers below pass libc's own definitions).
fn setsockopt<T: Copy>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: `value` points to `size_of::<T>()` readable bytes that live for the
    // whole call; the kernel copies them and keeps no reference.
    cvt(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// Sets an integer `SOL_PACKET` option.
pub(crate) fn set_packet_int(
    fd: BorrowedFd<'_>,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    setsockopt(fd, libc::SOL_PACKET, name, &value)
}

/// Requests a TPACKET_V3 receive ring.
pub(crate) fn set_rx_ring(fd: BorrowedFd<'_>, req: &libc::tpacket_req3) -> io::Result<()> {
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_RX_RING, req)
}

/// Requests a (TPACKET_V2) transmit ring.
pub(crate) fn set_tx_ring(fd: BorrowedFd<'_>, req: &libc::tpacket_req) -> io::Result<()> {
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_TX_RING, req)
}

/// Puts the interface in promiscuous mode for as long as the socket is open.
pub(crate) fn add_promiscuous(fd: BorrowedFd<'_>, ifindex: u32) -> io::Result<()> {
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as libc::c_int,
        mr_type: libc::PACKET_MR_PROMISC as libc::c_ushort,
        mr_alen: 0,
        mr_address: [0; 8],
    };
    setsockopt(fd, libc::SOL_PACKET, libc::PACKET_ADD_MEMBERSHIP, &mreq)
}

/// Binds the socket to one interface and an EtherType in host order (`ETH_P_ALL`
/// to receive everything, 0 to receive nothing).
pub(crate) fn bind(fd: BorrowedFd<'_>, ifindex: u32, protocol: u16) -> io::Result<()> {
    let addr = libc::sockaddr_ll {
        sll_family: libc::AF_PACKET as libc::c_ushort,
        sll_protocol: protocol.to_be(),
        sll_ifindex: ifindex as libc::c_int,
        sll_hatype: 0,
        sll_pkttype: 0,
        sll_halen: 0,
        sll_addr: [0; 8],
    };
    // SAFETY: `addr` is a fully initialised sockaddr_ll living across the call and the
    // length passed is its size.
    cvt(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_ll).cast(),
            size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// An `ifreq` naming `name`, or `InvalidInput` if the name does not fit.
fn ifreq(name: &str) -> io::Result<libc::ifreq> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "interface names are 1 to 15 bytes without NUL",
        ));
    }
    // SAFETY: ifreq is a C struct of integers, arrays and a union of such; all-zero
    // bytes are a valid value of every field.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, &src) in req.ifr_name.iter_mut().zip(bytes) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}

/// The index of interface `name` in the socket's network namespace.
pub(crate) fn interface_index(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFINDEX reads the NUL-terminated name from `req` and writes the
    // index into its union; `req` is a valid, writable ifreq for the whole call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFINDEX, &mut req) })?;
    // SAFETY: a successful SIOCGIFINDEX initialised `ifru_ifindex`.
    let index = unsafe { req.ifr_ifru.ifru_ifindex };
    Ok(index as u32)
}

/// The MTU of interface `name` in the socket's network namespace.
pub(crate) fn interface_mtu(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    // SAFETY: SIOCGIFMTU reads the NUL-terminated name from `req` and writes the MTU
    // into its union; `req` is a valid, writable ifreq for the whole call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCGIFMTU, &mut req) })?;
    // SAFETY: a successful SIOCGIFMTU initialised `ifru_mtu`.
    let mtu = unsafe { req.ifr_ifru.ifru_mtu };
    Ok(mtu.max(0) as u32)
}

/// Asks the kernel to transmit every frame marked `TP_STATUS_SEND_REQUEST` in the
/// socket's TX ring, without waiting for completion. Returns the bytes queued.
pub(crate) fn kick_tx(fd: BorrowedFd<'_>) -> io::Result<usize> {
    // SAFETY: with a TX ring, send(2) with a null buffer of length 0 reads nothing
    // from user memory other than the ring the kernel already owns a mapping of.
    let n = unsafe { libc::send(fd.as_raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Reads and resets the socket's receive statistics: (frames seen, frames dropped
/// because the ring was full, times the ring froze).
pub(crate) fn packet_stats(fd: BorrowedFd<'_>) -> io::Result<(u32, u32, u32)> {
    let mut stats = libc::tpacket_stats_v3 {
        tp_packets: 0,
        tp_drops: 0,
        tp_freeze_q_cnt: 0,
    };
    let mut len = size_of::<libc::tpacket_stats_v3>() as libc::socklen_t;
    // SAFETY: `stats` and `len` are valid for writes of the sizes given; the kernel
    // writes at most `len` bytes.
    cvt(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut stats as *mut libc::tpacket_stats_v3).cast(),
            &mut len,
        )
    })?;
    Ok((stats.tp_packets, stats.tp_drops, stats.tp_freeze_q_cnt))
}

/// Waits until one of `fds` is ready or `timeout` passes (`None`: forever), with
/// nanosecond resolution. Returns the number of ready entries (0 on timeout); an
/// interrupted wait counts as a timeout.
pub(crate) fn ppoll(fds: &mut [PollFd], timeout: Option<Duration>) -> io::Result<usize> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: t.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `fds` is a valid, writable array of `fds.len()` pollfd; `ts_ptr` is
    // null or points to a timespec living across the call; no signal mask is passed.
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if r < 0 {
        let err = io::Error::last_os_error();
        if err.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(err);
    }
    Ok(r as usize)
}

/// The system page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf(3) takes an integer and touches no user memory.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// Opens an `AF_INET` datagram socket, the handle interface ioctls
/// ([`ethtool_flag`]) go through; it needs no privilege. Close-on-exec.
pub(crate) fn inet_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) takes no pointers; it either fails or returns a new
    // descriptor.
    let fd = cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `fd` was just returned by socket(2): open, and owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `struct ethtool_value` of `<linux/ethtool.h>`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// Runs the legacy ethtool "get" command `cmd` (`ETHTOOL_GGRO`, `ETHTOOL_GTSO`,
/// ...) on interface `name` and returns its value (non-zero: on).
pub(crate) fn ethtool_flag(fd: BorrowedFd<'_>, name: &str, cmd: u32) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    let mut value = EthtoolValue { cmd, data: 0 };
    req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
    // SAFETY: SIOCETHTOOL reads the interface name from `req` and the command from
    // the `ethtool_value` its data pointer names, and writes the value back there;
    // both live, writable and correctly sized, across the call.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) })?;
    Ok(value.data)
}

/// `struct ethtool_channels` of `<linux/ethtool.h>`.
#[cfg_attr(not(eiffel_xdp), allow(dead_code))]
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

#[cfg_attr(not(eiffel_xdp), allow(dead_code))]
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// The receive queues of interface `name` (`ETHTOOL_GCHANNELS`: receive-only plus
/// combined channels), or 1 when the driver does not report channels.
#[cfg_attr(not(eiffel_xdp), allow(dead_code))]
pub(crate) fn rx_queues(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    let mut req = ifreq(name)?;
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..EthtoolChannels::default()
    };
    req.ifr_ifru.ifru_data = (&mut ch as *mut EthtoolChannels).cast();
    // SAFETY: SIOCETHTOOL reads the name from `req` and the command from the
    // `ethtool_channels` its data pointer names, and fills that struct; both live,
    // writable and correctly sized, across the call.
    match cvt(unsafe { libc::ioctl(fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) }) {
        Ok(_) => Ok((ch.rx_count + ch.combined_count).max(1)),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(1),
        Err(e) => Err(e),
    }
}
