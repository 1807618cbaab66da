//! The receive thread: frames in from the input interface, descriptors out to the
//! PSPAT arbiter.
//!
//! Per frame: copy it once from the TPACKET_V3 ring into a frame-pool slot,
//! classify it (parser, flow table, rules: the descriptor's `class` is a stable
//! leaf id, see [`super::live`]), publish the slot and push the descriptor into the
//! thread's PSPAT client mailbox. A frame that cannot go on is dropped here and
//! counted under its reason. With nothing to receive the thread sleeps in
//! `ppoll(2)` on the ring and its waker, until the next arrival or the flow table's
//! next expiry: no polling.

use std::collections::BTreeMap;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use eiffel_classify::{Classifier, Staged, BURST};
use eiffel_pspat::{Client, SendError};
use eiffel_sched::Packet;

use super::slots::{Fillers, NoSlot, TakeBack};
use super::stats::{put, ClassifierStats, IngressStats};
use super::waker::Waker;
use crate::afpacket::{ChecksumFix, FrameHeader, Interest, PollSet, RxFrame, RxRing};
use crate::vnet::{self, VnetHdr, VNET_HDR_LEN};

/// Why a frame was dropped before the scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub(super) enum Reason {
    Truncated,
    Oversize,
    PoolFull,
    Malformed,
    MailboxFull,
    Closed,
    BadDescriptor,
}

const REASONS: [(Reason, &str); 7] = [
    (Reason::Truncated, "truncated"),
    (Reason::Oversize, "oversize"),
    (Reason::PoolFull, "pool_full"),
    (Reason::Malformed, "malformed"),
    (Reason::MailboxFull, "mailbox_full"),
    (Reason::Closed, "closed"),
    (Reason::BadDescriptor, "bad_descriptor"),
];

/// Counters the receive thread publishes (single writer) for the stats view.
#[derive(Debug, Default)]
pub(crate) struct IngressCounters {
    received: AtomicU64,
    bytes: AtomicU64,
    to_scheduler: AtomicU64,
    drops: [AtomicU64; REASONS.len()],
    kernel_drops: AtomicU64,
    checksum_pending: AtomicU64,
    checksum_completed: AtomicU64,
    checksum_left: AtomicU64,
    checksum_offloaded: AtomicU64,
    gso: AtomicU64,
    flows: AtomicU64,
    flow_capacity: AtomicU64,
    flows_created: AtomicU64,
    flows_expired: AtomicU64,
    flows_evicted: AtomicU64,
    malformed: [AtomicU64; eiffel_classify::wire::Malformed::COUNT],
}

impl IngressCounters {
    pub(crate) fn ingress(&self) -> IngressStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut drops = BTreeMap::new();
        for (r, name) in REASONS {
            put(&mut drops, name, get(&self.drops[r as usize]));
        }
        IngressStats {
            received: get(&self.received),
            bytes: get(&self.bytes),
            to_scheduler: get(&self.to_scheduler),
            drops,
            kernel_drops: get(&self.kernel_drops),
            checksum_pending: get(&self.checksum_pending),
            checksum_completed: get(&self.checksum_completed),
            checksum_left: get(&self.checksum_left),
            checksum_offloaded: get(&self.checksum_offloaded),
            gso: get(&self.gso),
            per_queue: Vec::new(),
        }
    }

    pub(crate) fn classifier(&self) -> ClassifierStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut malformed = BTreeMap::new();
        for m in eiffel_classify::wire::Malformed::ALL {
            put(&mut malformed, m.name(), get(&self.malformed[m as usize]));
        }
        ClassifierStats {
            flows: get(&self.flows) as u32,
            capacity: get(&self.flow_capacity) as u32,
            created: get(&self.flows_created),
            expired: get(&self.flows_expired),
            evicted: get(&self.flows_evicted),
            malformed,
        }
    }
}

/// A classifier waiting to replace the receive thread's (a reload).
pub(crate) type ClassifierSlot = super::handoff::Handoff<Classifier>;

/// Counters kept across classifier replacements (a new classifier starts at 0).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Carried {
    created: u64,
    expired: u64,
    evicted: u64,
    malformed: [u64; eiffel_classify::wire::Malformed::COUNT],
}

/// The receive thread's state.
pub(crate) struct Ingress {
    pub(crate) rx: RxRing,
    pub(crate) classifier: Classifier,
    /// The frame pools; in GSO mode ([`FrameHeader::Vnet`]) each slot holds the
    /// frame's `virtio_net_hdr` and then the frame.
    pub(crate) fillers: Fillers,
    pub(crate) header: FrameHeader,
    pub(crate) client: Client,
    pub(crate) counters: Arc<IngressCounters>,
    pub(crate) next_classifier: Arc<ClassifierSlot>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) waker: UnixStream,
    pub(crate) batch: usize,
    /// The receive queue this thread serves: the high bits of its descriptors'
    /// buffer ids (see [`tag`]).
    pub(crate) queue: u32,
}

/// Bits of a descriptor's buffer id that hold the slot in its queue's frame pool;
/// the bits above hold the queue.
pub(crate) const QUEUE_SHIFT: u32 = 24;

// Every pool slot index fits below the queue bits.
const _: () = assert!(crate::frames::MAX_SLOTS <= 1 << QUEUE_SHIFT);

/// The buffer id of slot `slot` of queue `queue`'s frame pool.
#[inline]
pub(crate) fn tag(queue: u32, slot: u32) -> u32 {
    (queue << QUEUE_SHIFT) | slot
}

/// The queue and slot a buffer id names.
#[inline]
pub(crate) fn untag(buffer: u32) -> (usize, u32) {
    (
        (buffer >> QUEUE_SHIFT) as usize,
        buffer & ((1 << QUEUE_SHIFT) - 1),
    )
}

/// What the receive thread hands back when it ends.
pub(crate) struct IngressEnd {
    pub(crate) fillers: Fillers,
}

/// Idle flows expired per pass at most: bounded work per wake-up.
pub(super) const EXPIRE_BUDGET: usize = 64;

/// What the receive thread counted so far (published to [`IngressCounters`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Tally {
    pub(super) received: u64,
    pub(super) bytes: u64,
    pub(super) to_scheduler: u64,
    pub(super) checksum_completed: u64,
    checksum_left: u64,
    checksum_offloaded: u64,
    gso: u64,
    /// Drops by [`Reason`].
    drops: [u64; REASONS.len()],
}

impl Tally {
    #[inline]
    pub(super) fn drop(&mut self, reason: Reason) {
        self.drops[reason as usize] += 1;
    }
}

impl Ingress {
    pub(crate) fn run(mut self) -> IngressEnd {
        let clock = self.client.clock();
        let mut poll = PollSet::with_capacity(2);
        let mut tally = Tally::default();
        let mut carried = Carried::default();
        while !self.stop.load(Ordering::Acquire) {
            if let Some(next) = self.next_classifier.take() {
                carried = carry(carried, &self.classifier);
                self.classifier = next;
            }
            let now = clock.now();
            let n = self.receive(now, &mut tally);
            // Idle flows leave the table under load too (one comparison when none
            // is due).
            self.classifier.expire(now, EXPIRE_BUDGET, |_, _| {});
            self.publish(&tally, carried);
            if n == 0 {
                self.idle(&mut poll, now);
            }
        }
        // Frames still in the ring are left to the kernel: nothing reads them
        // after this point, so they are not "received".
        self.publish(&tally, carried);
        self.store_kernel_drops();
        drop(self.client);
        IngressEnd {
            fillers: self.fillers,
        }
    }

    /// One batch of frames from the ring; returns how many were read.
    #[inline]
    fn receive(&mut self, now: u64, tally: &mut Tally) -> usize {
        let batch = self.batch;
        let queue = self.queue;
        let header = self.header;
        let Ingress {
            rx,
            classifier,
            fillers,
            client,
            ..
        } = self;
        // Frames are staged as they are copied, and completed a burst at a
        // time (the flow-table lookups of a burst overlap their misses).
        let mut staged: [Option<(u32, Staged)>; BURST] = [None; BURST];
        let mut n = 0;
        let read = rx.recv(batch, |frame| {
            tally.received += 1;
            tally.bytes += frame.len() as u64;
            if frame.is_truncated() {
                return tally.drop(Reason::Truncated);
            }
            let Some(s) = stage(&frame, header, fillers, classifier, tally) else {
                return;
            };
            staged[n] = Some(s);
            n += 1;
            if n == BURST {
                complete_burst(&staged[..n], classifier, fillers, client, queue, now, tally);
                n = 0;
            }
        });
        complete_burst(&staged[..n], classifier, fillers, client, queue, now, tally);
        read
    }

    /// Nothing to receive: housekeeping, then sleep until the next frame or the
    /// next flow expiry.
    fn idle(&mut self, poll: &mut PollSet, now: u64) {
        self.fillers.reclaim();
        self.store_kernel_drops();
        let timeout = self
            .classifier
            .flows()
            .next_expiry()
            .map(|at| Duration::from_nanos(at.saturating_sub(now).max(1_000_000)));
        poll.clear();
        poll.add(&self.rx, Interest::Readable);
        let woken = poll.add(&self.waker, Interest::Readable);
        // A failed ppoll (EINTR from a signal) just runs another pass.
        let _ = poll.wait(timeout);
        if poll.is_ready(woken) {
            Waker::drain(&self.waker);
        }
    }

    fn store_kernel_drops(&mut self) {
        let stats = self.rx.stats();
        self.counters
            .kernel_drops
            .store(stats.kernel_drops, Ordering::Relaxed);
    }

    fn publish(&self, tally: &Tally, carried: Carried) {
        let pending = self.rx.counters().checksum_pending;
        publish(&self.counters, &self.classifier, tally, carried, pending);
    }
}

/// Copies `frame` into a slot of its size (after its `virtio_net_hdr` in GSO
/// mode), counts what happened to its checksum, and stages its classification,
/// a super-frame charged the bytes its segments take on the wire; returns the
/// published slot (tagged with its pool) and the staged frame, or `None` when
/// the frame was dropped (and counted).
#[inline]
fn stage(
    frame: &RxFrame<'_>,
    header: FrameHeader,
    fillers: &mut Fillers,
    classifier: &Classifier,
    tally: &mut Tally,
) -> Option<(u32, Staged)> {
    let (head, gso) = match header {
        FrameHeader::Plain => (0, false),
        FrameHeader::Vnet => (VNET_HDR_LEN, frame.is_gso()),
    };
    // A frame longer than the MTU without GSO metadata fits a large slot but
    // not the transmit side, which drops and counts it (`too_large`).
    let (pool, mut slot) = match fillers.alloc(head + frame.len()) {
        Ok(s) => s,
        Err(NoSlot::TooLarge) => {
            tally.drop(Reason::Oversize);
            return None;
        }
        Err(NoSlot::Full) => {
            tally.drop(Reason::PoolFull);
            return None;
        }
    };
    let mut fix = ChecksumFix::Ready;
    let written = slot.write(|buf| {
        let copied = if head == 0 {
            frame.copy_to(buf)?
        } else {
            frame.copy_with_header(buf)?
        };
        fix = copied.checksum;
        Some(copied.len)
    });
    if written.is_none() {
        tally.drop(Reason::Oversize);
        return None;
    }
    match fix {
        ChecksumFix::Ready => {}
        ChecksumFix::Completed => tally.checksum_completed += 1,
        ChecksumFix::Left(_) => tally.checksum_left += 1,
        ChecksumFix::Offloaded => tally.checksum_offloaded += 1,
    }
    tally.gso += u64::from(gso);
    let s = slot.read(|bytes| {
        let (h, f) = bytes.split_at(head);
        let staged = classifier.stage(f);
        if !gso {
            return staged;
        }
        let hdr = VnetHdr::parse(h.try_into().unwrap_or(&[0; VNET_HDR_LEN]));
        let wire = u32::try_from(vnet::wire_len(&hdr, f)).unwrap_or(u32::MAX);
        staged.with_wire_len(wire)
    });
    Some((pool | slot.publish(), s))
}

/// Publishes a receive thread's counts (it is their only writer).
pub(super) fn publish(
    c: &IngressCounters,
    classifier: &Classifier,
    tally: &Tally,
    carried: Carried,
    checksum_pending: u64,
) {
    let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
    set(&c.received, tally.received);
    set(&c.bytes, tally.bytes);
    set(&c.to_scheduler, tally.to_scheduler);
    for (a, &v) in c.drops.iter().zip(&tally.drops) {
        set(a, v);
    }
    let cc = classifier.counters();
    let ft = classifier.flows();
    let fc = ft.counters();
    set(&c.flows, u64::from(ft.len()));
    set(&c.flow_capacity, u64::from(ft.capacity()));
    set(&c.flows_created, carried.created + fc.created);
    set(&c.flows_expired, carried.expired + fc.expired);
    set(&c.flows_evicted, carried.evicted + fc.evicted);
    for m in eiffel_classify::wire::Malformed::ALL {
        set(
            &c.malformed[m as usize],
            carried.malformed[m as usize] + cc.malformed.get(m),
        );
    }
    set(&c.checksum_pending, checksum_pending);
    set(&c.checksum_completed, tally.checksum_completed);
    set(&c.checksum_left, tally.checksum_left);
    set(&c.checksum_offloaded, tally.checksum_offloaded);
    set(&c.gso, tally.gso);
}

impl IngressCounters {
    /// Records the kernel's drops on the thread's receive rings.
    #[cfg_attr(not(eiffel_xdp), allow(dead_code))]
    pub(super) fn set_kernel_drops(&self, n: u64) {
        self.kernel_drops.store(n, Ordering::Relaxed);
    }
}

/// The last passes of a burst of staged frames (published slots): hints the
/// cache to load their flow entries, then completes each classification in
/// order and sends the descriptor, or takes the slot back when the classifier
/// drops a malformed frame.
#[allow(clippy::too_many_arguments)]
pub(super) fn complete_burst(
    staged: &[Option<(u32, Staged)>],
    classifier: &mut Classifier,
    filler: &mut impl TakeBack,
    client: &mut Client,
    queue: u32,
    now: u64,
    tally: &mut Tally,
) {
    for (_, s) in staged.iter().flatten() {
        classifier.prefetch(s);
    }
    for &(id, s) in staged.iter().flatten() {
        match classifier.complete(&s, now) {
            Ok(pkt) => send(client, filler, pkt.buffer(tag(queue, id)), id, tally),
            Err(_) => {
                tally.drop(Reason::Malformed);
                let back = filler.take_back(id);
                debug_assert!(back.is_ok(), "slot {id} published by this thread");
            }
        }
    }
}

/// Hands descriptor `pkt` (in slot `id` of this queue's pool) to the arbiter; a
/// full or closed mailbox drops it and frees its slot.
#[inline]
pub(super) fn send(
    client: &mut Client,
    filler: &mut impl TakeBack,
    mut pkt: Packet,
    id: u32,
    tally: &mut Tally,
) {
    loop {
        match client.send(pkt) {
            Ok(()) => {
                tally.to_scheduler += 1;
                return;
            }
            // Earlier drops are accounted by the arbiter; this packet was not
            // sent yet.
            Err(SendError::PolicyDrops { packet, .. }) => pkt = packet,
            Err(e @ (SendError::Full(_) | SendError::Closed(_))) => {
                tally.drop(match e {
                    SendError::Full(_) => Reason::MailboxFull,
                    _ => Reason::Closed,
                });
                let back = filler.take_back(id);
                debug_assert!(back.is_ok(), "slot {id} published by this thread");
                return;
            }
        }
    }
}

/// Adds a retiring classifier's counters to those carried so far.
pub(super) fn carry(mut c: Carried, old: &Classifier) -> Carried {
    let fc = old.flows().counters();
    c.created += fc.created;
    c.expired += fc.expired;
    c.evicted += fc.evicted;
    for m in eiffel_classify::wire::Malformed::ALL {
        c.malformed[m as usize] += old.counters().malformed.get(m);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_ids_carry_queue_and_slot() {
        let max_slot = crate::frames::MAX_SLOTS - 1;
        for (q, slot) in [(0, 0), (0, max_slot), (15, 7), (255, max_slot)] {
            assert_eq!(untag(tag(q, slot)), (q as usize, slot));
        }
    }
}
