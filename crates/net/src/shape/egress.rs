//! The two transmit paths: [`TxSink`], the PSPAT dispatcher's [`Transmit`] that
//! puts scheduled frames on the output interface, and [`Reverse`], the thread that
//! forwards the other direction untouched.

use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eiffel_pspat::Transmit;
use eiffel_sched::{Nanos, Packet};

use super::ingress::untag;
use super::latency::LatencyHistograms;
use super::slots::Drainers;
use super::stats::{put, EgressStats, ReverseStats};
use super::waker::Waker;
use crate::afpacket::{FrameHeader, Interest, PollSet, RxRing, TxError, TxRing};
use crate::vnet::{VnetHdr, VNET_HDR_LEN};

/// Counters the dispatcher publishes (single writer).
#[derive(Debug, Default)]
pub(crate) struct EgressCounters {
    /// Sojourn times per leaf position.
    pub(crate) latency: LatencyHistograms,
    pub(super) sent: AtomicU64,
    pub(super) bytes: AtomicU64,
    pub(super) too_large: AtomicU64,
    pub(super) ring_full: AtomicU64,
    pub(super) bad_descriptor: AtomicU64,
    pub(super) kicks: AtomicU64,
    pub(super) kick_errors: AtomicU64,
}

impl EgressCounters {
    pub(crate) fn stats(&self) -> EgressStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut drops = BTreeMap::new();
        put(&mut drops, "too_large", get(&self.too_large));
        put(&mut drops, "ring_full", get(&self.ring_full));
        put(&mut drops, "bad_descriptor", get(&self.bad_descriptor));
        EgressStats {
            sent: get(&self.sent),
            bytes: get(&self.bytes),
            drops,
            kicks: get(&self.kicks),
            kick_errors: get(&self.kick_errors),
        }
    }
}

/// Waits for room in `tx`, flushing first, for at most `limit`. Returns whether
/// there is room.
fn wait_for_room(tx: &mut TxRing, poll: &mut PollSet, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        // A hard send failure is counted by the ring; the wait decides.
        let _ = tx.flush();
        if tx.has_room() {
            return true;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        poll.clear();
        poll.add(tx, Interest::Writable);
        let _ = poll.wait(Some(left));
    }
}

/// Transmits what the arbiter releases on the output interface and frees the
/// frames' slots.
pub(crate) struct TxSink {
    pub(crate) tx: TxRing,
    /// One per receive queue's frame pools.
    pub(crate) drainers: Vec<Drainers>,
    pub(crate) counters: Arc<EgressCounters>,
    pub(crate) poll: PollSet,
    /// Longest wait for a transmit slot before a frame is dropped.
    pub(crate) wait: Duration,
    pub(crate) sent: u64,
    pub(crate) bytes: u64,
    pub(crate) too_large: u64,
    pub(crate) ring_full: u64,
    pub(crate) bad_descriptor: u64,
}

impl TxSink {
    pub(crate) fn new(tx: TxRing, drainers: Vec<Drainers>, wait: Duration) -> TxSink {
        TxSink {
            tx,
            drainers,
            counters: Arc::default(),
            poll: PollSet::with_capacity(1),
            wait,
            sent: 0,
            bytes: 0,
            too_large: 0,
            ring_full: 0,
            bad_descriptor: 0,
        }
    }

    fn send_one(&mut self, pkt: &Packet) {
        let TxSink {
            tx,
            drainers,
            poll,
            wait,
            ..
        } = self;
        let (queue, slot) = untag(pkt.buffer);
        let taken = drainers
            .get_mut(queue)
            .and_then(|d| d.of(slot))
            .map(|(d, i)| d.take(i));
        let Some(Ok(frame)) = taken else {
            self.bad_descriptor += 1;
            return;
        };
        // In GSO mode a slot holds the frame's `virtio_net_hdr`, then the frame.
        let head = match tx.header() {
            FrameHeader::Plain => 0,
            FrameHeader::Vnet => VNET_HDR_LEN,
        };
        let outcome = frame.read(|bytes| loop {
            let (h, f) = bytes.split_at(head.min(bytes.len()));
            let hdr = h.try_into().map_or(VnetHdr::NONE, VnetHdr::parse);
            match tx.send_offloaded(&hdr, f) {
                Ok(()) => break Ok(f.len()),
                Err(TxError::Full) => {
                    if !wait_for_room(tx, poll, *wait) {
                        break Err(TxError::Full);
                    }
                }
                Err(e) => break Err(e),
            }
        });
        drop(frame);
        match outcome {
            Ok(len) => {
                self.sent += 1;
                self.bytes += len as u64;
            }
            Err(TxError::Full) => self.ring_full += 1,
            Err(TxError::TooLarge { .. }) => self.too_large += 1,
        }
    }

    fn publish(&self) {
        let c = &*self.counters;
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&c.sent, self.sent);
        set(&c.bytes, self.bytes);
        set(&c.too_large, self.too_large);
        set(&c.ring_full, self.ring_full);
        set(&c.bad_descriptor, self.bad_descriptor);
        let s = self.tx.stats();
        set(&c.kicks, s.kicks);
        set(&c.kick_errors, s.kick_errors);
    }
}

impl Transmit for TxSink {
    fn transmit(&mut self, batch: &[Packet], now: Nanos) {
        for pkt in batch {
            let latency = &self.counters.latency;
            latency.record(pkt.class as usize, now.saturating_sub(pkt.arrival));
            self.send_one(pkt);
        }
        let _ = self.tx.flush();
        self.publish();
    }
}

/// The dispatcher's transmit side, for either packet I/O.
pub(crate) enum Egress {
    /// An AF_PACKET transmit ring.
    Packet(TxSink),
    /// An AF_XDP socket's TX ring over the shared UMEM.
    #[cfg(eiffel_xdp)]
    Xdp(super::xdp::XdpSink),
}

impl Egress {
    pub(crate) fn counters(&self) -> &Arc<EgressCounters> {
        match self {
            Egress::Packet(s) => &s.counters,
            #[cfg(eiffel_xdp)]
            Egress::Xdp(s) => &s.counters,
        }
    }
}

impl Transmit for Egress {
    #[inline]
    fn transmit(&mut self, batch: &[Packet], now: Nanos) {
        match self {
            Egress::Packet(s) => s.transmit(batch, now),
            #[cfg(eiffel_xdp)]
            Egress::Xdp(s) => s.transmit(batch, now),
        }
    }
}

/// Counters of the reverse direction (single writer).
#[derive(Debug, Default)]
pub(crate) struct ReverseCounters {
    pub(super) received: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) bytes: AtomicU64,
    truncated: AtomicU64,
    too_large: AtomicU64,
    pub(super) ring_full: AtomicU64,
    pub(super) kernel_drops: AtomicU64,
    pub(super) checksum_completed: AtomicU64,
    checksum_left: AtomicU64,
    checksum_offloaded: AtomicU64,
    gso: AtomicU64,
}

impl ReverseCounters {
    pub(crate) fn stats(&self) -> ReverseStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut drops = BTreeMap::new();
        put(&mut drops, "truncated", get(&self.truncated));
        put(&mut drops, "too_large", get(&self.too_large));
        put(&mut drops, "ring_full", get(&self.ring_full));
        ReverseStats {
            received: get(&self.received),
            sent: get(&self.sent),
            bytes: get(&self.bytes),
            drops,
            kernel_drops: get(&self.kernel_drops),
            checksum_completed: get(&self.checksum_completed),
            checksum_left: get(&self.checksum_left),
            checksum_offloaded: get(&self.checksum_offloaded),
            gso: get(&self.gso),
        }
    }
}

/// The unscheduled direction: output interface to input interface, ring to ring.
pub(crate) struct Reverse {
    pub(crate) rx: RxRing,
    pub(crate) tx: TxRing,
    pub(crate) counters: Arc<ReverseCounters>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) waker: UnixStream,
    pub(crate) batch: usize,
    pub(crate) wait: Duration,
}

impl Reverse {
    pub(crate) fn run(mut self) {
        let mut poll = PollSet::with_capacity(2);
        let mut tx_poll = PollSet::with_capacity(1);
        let (mut received, mut sent, mut bytes) = (0u64, 0u64, 0u64);
        let (mut truncated, mut too_large, mut ring_full) = (0u64, 0u64, 0u64);
        while !self.stop.load(Ordering::Acquire) {
            let batch = self.batch;
            let Reverse { rx, tx, wait, .. } = &mut self;
            let n = rx.recv(batch, |frame| {
                received += 1;
                if frame.is_truncated() {
                    truncated += 1;
                    return;
                }
                loop {
                    match tx.send_frame(&frame) {
                        Ok(()) => {
                            sent += 1;
                            bytes += frame.len() as u64;
                        }
                        Err(TxError::Full) => {
                            if wait_for_room(tx, &mut tx_poll, *wait) {
                                continue;
                            }
                            ring_full += 1;
                        }
                        Err(TxError::TooLarge { .. }) => too_large += 1,
                    }
                    break;
                }
            });
            let _ = self.tx.flush();
            let c = &*self.counters;
            let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
            set(&c.received, received);
            set(&c.sent, sent);
            set(&c.bytes, bytes);
            set(&c.truncated, truncated);
            set(&c.too_large, too_large);
            set(&c.ring_full, ring_full);
            let tx_stats = self.tx.stats();
            set(&c.checksum_completed, tx_stats.checksum_completed);
            set(&c.checksum_left, tx_stats.checksum_left);
            set(&c.checksum_offloaded, tx_stats.checksum_offloaded);
            set(&c.gso, tx_stats.gso);
            if n > 0 {
                continue;
            }
            set(&c.kernel_drops, self.rx.stats().kernel_drops);
            poll.clear();
            poll.add(&self.rx, Interest::Readable);
            let woken = poll.add(&self.waker, Interest::Readable);
            let _ = poll.wait(None);
            if poll.is_ready(woken) {
                Waker::drain(&self.waker);
            }
        }
    }
}
