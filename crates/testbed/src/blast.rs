//! Forwarding-rate measurement over the [`Testbed`]: a generator that blasts one
//! UDP frame as fast as a transmit ring takes it from the sender namespace, and a
//! counter of the frames that reach the receiver namespace, each reporting the
//! CPU time of its own thread.
//!
//! Frames are marked by their UDP destination port, [`MARK_PORT`], so that the
//! counter ignores whatever else the receiver sees (neighbour discovery, ...).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use super::{Role, Testbed, RECEIVER_IF, SENDER_IF};
use eiffel_net::afpacket::{
    Interest, NetError, PollSet, RxConfig, RxRing, TxConfig, TxError, TxRing,
};

/// UDP destination port of the generated frames.
pub const MARK_PORT: u16 = 9;

/// An Ethernet/IPv4/UDP frame of `len` bytes (at least 42, without the FCS) from
/// the sender's address to the receiver's, to made-up unicast MACs (a bump in the
/// wire forwards whatever it gets), with a valid IPv4 checksum.
///
/// # Panics
/// `len` below 42 (the headers alone).
#[must_use]
pub fn udp_frame(len: usize) -> Vec<u8> {
    assert!(len >= 14 + 20 + 8, "a UDP frame has at least 42 bytes");
    let payload = vec![0u8; len - (14 + 20 + 8)];
    let builder = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([198, 18, 0, 1], [198, 18, 0, 2], 64)
        .udp(4000, MARK_PORT);
    let mut f = Vec::with_capacity(len);
    builder
        .write(&mut f, &payload)
        .expect("writing to a Vec cannot fail");
    f
}

/// Whether `frame` is IPv4 to [`MARK_PORT`] (as [`udp_frame`] builds them).
#[must_use]
pub fn is_marked(frame: &[u8]) -> bool {
    frame.get(12..14) == Some(&[8, 0][..])
        && frame.get(36..38) == Some(&MARK_PORT.to_be_bytes()[..])
}

/// CPU nanoseconds of a task from its `schedstat` file (the first field), 0 if it
/// cannot be read.
#[must_use]
pub fn schedstat(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// CPU nanoseconds of the calling thread, kernel work done on its behalf included.
#[must_use]
pub fn thread_cpu_ns() -> u64 {
    schedstat(Path::new("/proc/thread-self/schedstat"))
}

/// Why a generator or a counter stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlastError {
    /// The namespace could not be entered.
    #[error("entering the {role:?} namespace: {source}")]
    Enter {
        /// Whose namespace.
        role: Role,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// A ring could not be opened or flushed.
    #[error(transparent)]
    Ring(#[from] NetError),
    /// A frame could not be queued.
    #[error("transmit: {0}")]
    Send(#[from] TxError),
    /// A wait on a ring failed.
    #[error("waiting on the ring: {0}")]
    Wait(#[source] std::io::Error),
}

/// Enters `role`'s namespace.
fn enter(bed: &Testbed, role: Role) -> Result<(), BlastError> {
    bed.enter(role)
        .map_err(|source| BlastError::Enter { role, source })
}

/// Moves the calling thread into the sender namespace and transmits `frame` in
/// batches of 256 until `until`. Returns (frames sent, CPU ns of this thread).
///
/// # Errors
/// The namespace or the ring cannot be entered or opened, or a send fails.
pub fn generate(bed: &Testbed, frame: &[u8], until: Instant) -> Result<(u64, u64), BlastError> {
    enter(bed, Role::Sender)?;
    let cfg = TxConfig {
        frame_count: 4096,
        qdisc_bypass: true,
        ..TxConfig::default()
    };
    let mut tx = TxRing::open(SENDER_IF, &cfg)?;
    let mut poll = PollSet::with_capacity(1);
    let cpu = thread_cpu_ns();
    while Instant::now() < until {
        let mut n = 0;
        while n < 256 {
            match tx.send(frame) {
                Ok(()) => n += 1,
                Err(TxError::Full) => break,
                Err(e) => return Err(e.into()),
            }
        }
        tx.flush()?;
        if n == 0 {
            poll.clear();
            poll.add(&tx, Interest::Writable);
            poll.wait(Some(Duration::from_millis(1)))
                .map_err(BlastError::Wait)?;
        }
    }
    Ok((tx.stats().frames, thread_cpu_ns() - cpu))
}

/// Moves the calling thread into the receiver namespace, signals `ready` once its
/// ring is open, and counts marked frames until `stop`. Returns (frames, CPU ns of
/// this thread).
///
/// # Errors
/// The namespace or the ring cannot be entered or opened, or a wait fails.
pub fn count(
    bed: &Testbed,
    ready: Sender<()>,
    stop: &AtomicBool,
) -> Result<(u64, u64), BlastError> {
    enter(bed, Role::Receiver)?;
    let cfg = RxConfig {
        block_size: 1 << 20,
        block_count: 64,
        ..RxConfig::default()
    };
    let mut rx = RxRing::open(RECEIVER_IF, &cfg)?;
    let _ = ready.send(());
    let cpu = thread_cpu_ns();
    let mut seen = 0u64;
    let mut poll = PollSet::with_capacity(1);
    while !stop.load(Ordering::Relaxed) {
        if rx.recv(4096, |f| seen += u64::from(is_marked(f.data()))) == 0 {
            poll.clear();
            poll.add(&rx, Interest::Readable);
            poll.wait(Some(Duration::from_millis(10)))
                .map_err(BlastError::Wait)?;
        }
    }
    rx.recv(usize::MAX, |f| seen += u64::from(is_marked(f.data())));
    Ok((seen, thread_cpu_ns() - cpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_valid_marked_udp_packets() {
        for len in [42, 60, 1514] {
            let f = udp_frame(len);
            assert_eq!(f.len(), len);
            assert!(is_marked(&f));
            let parsed = etherparse::SlicedPacket::from_ethernet(&f).expect("parses");
            assert!(matches!(
                parsed.transport,
                Some(etherparse::TransportSlice::Udp(_))
            ));
            // The IPv4 header checksums to zero.
            let mut sum = 0u32;
            for w in f[14..34].chunks(2) {
                sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
            }
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            assert_eq!(sum, 0xffff);
        }
        assert!(!is_marked(&[0u8; 60]));
    }
}
