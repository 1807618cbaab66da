//! The AF_XDP data path: the same threads as with AF_PACKET, over sockets that
//! share one UMEM, so no frame is copied in user space.
//!
//! ```text
//!  UMEM: [ pool of receive thread 0 | pool of thread 1 | ... | reverse chunks ]
//!
//!  input queue q ──RX──> [receive thread q % N] classify in place, publish slot
//!       ^  fill <── lend free slots                          │ descriptor
//!       │                                                    v
//!       │                                          [arbiter] ──> [XdpSink]
//!       │                                                          │ same chunk
//!  output queue 0 <──TX── (completion ring: slot freed) <──────────┘
//!
//!  output queues ──RX──> [reverse thread] ──TX (same chunk)──> input queue 0
//! ```
//!
//! Every receive queue of both interfaces gets a socket (a queue without one
//! would pass its frames to the kernel's stack, out of the bump's sight): input
//! queue `q` is read by receive thread `q % N` (`N` = [`ShapeConfig::queues`]),
//! the output's queues by the reverse thread. Each receive thread owns a frame
//! pool laid over its share of the UMEM (`frames::pool_in`): free slots are lent to
//! its sockets' fill rings, come back through their RX rings as published frames,
//! travel as descriptors, and are freed by the drop hook or, after transmission,
//! when the output's completion ring returns them. Each ring has one thread.
//!
//! Per batch (up to [`BATCH`] descriptors): one ring access each for RX, fill, TX
//! and completion, and on transmit one `sendto` when the kernel asks for a wake-up
//! (`need_wakeup`; in copy mode, as on veth, the kernel sends at most 32 frames
//! per call). Nothing allocates and nothing locks.

use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eiffel_classify::{checksum, Classifier, Staged, BURST};
use eiffel_pspat::Client;
use eiffel_sched::{Nanos, Packet};

use super::egress::{EgressCounters, ReverseCounters};
use super::ingress::{
    self, carry, complete_burst, untag, Carried, IngressCounters, IngressEnd, Reason, Tally,
};
use super::{ClassifierSlot, ShapeConfig, FRAME_OVERHEAD};
use crate::afpacket::{Interest, PollSet};
use crate::frames::{Drainer, Filler};
use crate::sys::frames::{pool_in, Region};
use crate::sys::xsk::{
    self, AttachMode, OwnChunks, Program, RingSizes, RxHalf, TxHalf, Umem, UmemArea, Use, XdpDesc,
};
use crate::sys::{inet_socket, interface_mtu, rx_queues};
use crate::xdp::{IoReport, XdpError, XdpMode, XdpPort};

/// Descriptors per ring access.
pub(crate) const BATCH: usize = 64;

/// Ring sizes: the fill ring and the RX ring of every socket, the TX and
/// completion rings of the two transmitting ones.
const SIZES: RingSizes = RingSizes {
    fill: 2048,
    comp: 2048,
    rx: 2048,
    tx: 2048,
};

/// The kernel's `XDP_PACKET_HEADROOM`: where in a chunk a received frame starts.
const HEADROOM: u32 = 256;

/// The name of libxdp's default XSK program.
const XSK_PROGRAM: &str = "xsk_def_prog";

/// The chunk size for frames of interfaces with MTU `mtu`.
fn chunk_for(mtu: u32) -> Option<u32> {
    let frame = mtu.saturating_add(FRAME_OVERHEAD) + HEADROOM;
    [2048, 4096].into_iter().find(|&c| frame <= c)
}

/// One receive thread's sockets and frames.
pub(crate) struct XdpRx {
    sockets: Vec<RxHalf>,
    filler: Filler,
    /// UMEM offset of the pool's first chunk.
    base: u64,
    chunk: u64,
}

impl XdpRx {
    /// A handle on the pool's counters.
    pub(crate) fn watch(&self) -> crate::frames::PoolWatch {
        self.filler.watch()
    }
}

/// Everything the AF_XDP data path is made of, before its threads start.
pub(crate) struct XdpParts {
    pub(crate) ingress: Vec<XdpRx>,
    pub(crate) sink: XdpSink,
    /// The drop hook's drainers, one per pool.
    pub(crate) hook: Vec<Drainer>,
    pub(crate) reverse: XdpReverseIo,
    pub(crate) guard: XdpGuard,
    pub(crate) report: IoReport,
}

/// The reverse direction's sockets and chunks.
pub(crate) struct XdpReverseIo {
    rx: Vec<RxHalf>,
    tx: TxHalf,
    free: Vec<u64>,
    chunk: u64,
    frames: OwnChunks,
}

/// Detaches the XDP programs when the bump ends.
pub(crate) struct XdpGuard {
    attached: Vec<(u32, Program)>,
}

impl Drop for XdpGuard {
    fn drop(&mut self) {
        for (ifindex, program) in self.attached.drain(..) {
            drop(program);
            // Only libxdp's XSK program, which this bump attached; a failure
            // leaves it for the next start to remove.
            if matches!(xsk::query(ifindex), Ok(Some((name, _))) if name == XSK_PROGRAM) {
                let _ = xsk::detach(ifindex);
            }
        }
    }
}

impl std::fmt::Debug for XdpGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpGuard")
            .field("interfaces", &self.attached.len())
            .finish()
    }
}

/// An interface as the setup sees it.
struct Port {
    name: String,
    ifindex: u32,
    queues: u32,
    /// libxdp's XSK program is attached already (left by a killed run).
    stale: bool,
}

impl Port {
    fn inspect(name: &str, fd: std::os::fd::BorrowedFd<'_>) -> Result<Port, XdpError> {
        let ifindex = xsk::if_index(name)
            .map_err(|e| XdpError::from_io("looking the interface up", name, None, e))?;
        let queues = rx_queues(fd, name)
            .map_err(|e| XdpError::from_io("reading the queue count", name, None, e))?;
        let stale = match xsk::query(ifindex)
            .map_err(|e| XdpError::from_io("reading the attached XDP program", name, None, e))?
        {
            None => false,
            Some((program, _)) if program == XSK_PROGRAM => true,
            Some((program, _)) => {
                return Err(XdpError::OtherProgram {
                    interface: name.to_owned(),
                    program,
                })
            }
        };
        Ok(Port {
            name: name.to_owned(),
            ifindex,
            queues,
            stale,
        })
    }

    /// Attaches libxdp's XSK program, natively if the driver can (removing a
    /// stale one first).
    fn attach(&self) -> Result<(Program, XdpMode), XdpError> {
        if self.stale {
            xsk::detach(self.ifindex).map_err(|e| {
                XdpError::from_io("removing a stale XDP program", &self.name, None, e)
            })?;
        }
        let slots = self.queues.max(64);
        let (program, mode) = match Program::attach(self.ifindex, AttachMode::Native, slots) {
            Ok(p) => (p, XdpMode::Native),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::EACCES)) => {
                return Err(XdpError::from_io(
                    "attaching an XDP program",
                    &self.name,
                    None,
                    e,
                ))
            }
            Err(_) => Program::attach(self.ifindex, AttachMode::Skb, slots)
                .map(|p| (p, XdpMode::Generic))
                .map_err(|e| XdpError::from_io("attaching an XDP program", &self.name, None, e))?,
        };
        Ok((program, mode))
    }
}

/// Opens the AF_XDP data path for `cfg`: every receive queue of both interfaces
/// gets a socket on one UMEM; each receive thread's pool holds `pool_slots` slots
/// plus what its sockets' fill and RX rings hold.
pub(crate) fn open(cfg: &ShapeConfig, pool_slots: u32) -> Result<XdpParts, XdpError> {
    xsk::quiet();
    let fd =
        inet_socket().map_err(|e| XdpError::from_io("opening a socket", &cfg.input, None, e))?;
    let input = Port::inspect(&cfg.input, std::os::fd::AsFd::as_fd(&fd))?;
    let output = Port::inspect(&cfg.output, std::os::fd::AsFd::as_fd(&fd))?;
    if (input.queues as usize) < cfg.queues {
        return Err(XdpError::TooFewQueues {
            interface: input.name.clone(),
            has: input.queues,
            wanted: cfg.queues,
        });
    }
    let chunk = chunk_size(std::os::fd::AsFd::as_fd(&fd), [&input, &output])?;
    let layout = Layout::new(cfg.queues, pool_slots, &input, &output, chunk);
    let no_memory = |op| XdpError::Io {
        op,
        interface: input.name.clone(),
        source: std::io::Error::from(std::io::ErrorKind::OutOfMemory),
    };
    let bytes = usize::try_from(layout.bytes()).map_err(|_| no_memory("sizing the UMEM"))?;
    let area = Arc::new(
        UmemArea::map(bytes)
            .map_err(|e| XdpError::from_io("mapping the UMEM", &input.name, None, e))?,
    );
    let umem = Arc::new(
        Umem::create(Arc::clone(&area), chunk, SIZES)
            .map_err(|e| XdpError::from_io("registering the UMEM", &input.name, None, e))?,
    );
    let (in_rx, in_tx) = sockets(&umem, &input)?;
    let (out_rx, out_tx) = sockets(&umem, &output)?;
    let (guard, modes) = attach_both([&input, &output], [&in_rx, &out_rx])?;
    let report = IoReport::AfXdp {
        ports: [
            port_report(&input, modes[0], &in_rx),
            port_report(&output, modes[1], &out_rx),
        ],
    };
    let pools =
        Pools::build(&area, &layout, in_rx).map_err(|_| no_memory("building the frame pool"))?;
    let chunk64 = u64::from(chunk);
    let reverse_end = pools.end + u64::from(layout.reverse) * chunk64;
    let free = (pools.end..reverse_end).step_by(chunk as usize).collect();
    let frames = OwnChunks::new(Arc::clone(&area), pools.end, reverse_end);
    Ok(XdpParts {
        ingress: pools.ingress,
        sink: XdpSink::new(out_tx, pools.sink, pools.starts, chunk64, cfg.tx_wait),
        hook: pools.hook,
        reverse: XdpReverseIo {
            rx: out_rx,
            tx: in_tx,
            free,
            chunk: chunk64,
            frames,
        },
        guard,
        report,
    })
}

/// The UMEM chunk size for the larger MTU of `ports`.
fn chunk_size(fd: std::os::fd::BorrowedFd<'_>, ports: [&Port; 2]) -> Result<u32, XdpError> {
    let mut chunk = 0;
    for p in ports {
        let mtu = interface_mtu(fd, &p.name)
            .map_err(|e| XdpError::from_io("reading the MTU", &p.name, None, e))?;
        let c = chunk_for(mtu).ok_or_else(|| XdpError::MtuTooLarge {
            interface: p.name.clone(),
            mtu,
        })?;
        chunk = chunk.max(c);
    }
    Ok(chunk)
}

/// How the UMEM is divided: one pool per receive thread (its slots plus what its
/// sockets' fill and RX rings hold), then the reverse direction's chunks.
struct Layout {
    chunk: u32,
    /// Slots of each receive thread's pool.
    per_thread: Vec<u32>,
    /// Chunks of the reverse direction.
    reverse: u32,
}

impl Layout {
    fn new(threads: usize, pool_slots: u32, input: &Port, output: &Port, chunk: u32) -> Layout {
        let lent = SIZES.fill + SIZES.rx;
        let per_thread = (0..threads)
            .map(|t| {
                let sockets = (0..input.queues)
                    .filter(|q| *q as usize % threads == t)
                    .count();
                pool_slots.saturating_add(lent * sockets as u32)
            })
            .collect();
        Layout {
            chunk,
            per_thread,
            reverse: lent * output.queues + SIZES.tx + BATCH as u32,
        }
    }

    fn bytes(&self) -> u64 {
        let chunks: u64 = self.per_thread.iter().map(|&n| u64::from(n)).sum();
        (chunks + u64::from(self.reverse)) * u64::from(self.chunk)
    }
}

/// Attaches libxdp's program to both interfaces (each with its sockets); the
/// guard detaches them. Returns the mode of each.
fn attach_both(
    ports: [&Port; 2],
    sockets: [&[RxHalf]; 2],
) -> Result<(XdpGuard, [XdpMode; 2]), XdpError> {
    let mut guard = XdpGuard { attached: vec![] };
    let mut modes = [XdpMode::Native; 2];
    for (i, (port, socks)) in ports.into_iter().zip(sockets).enumerate() {
        // An error drops the guard, which detaches what was attached.
        let (program, mode) = port.attach()?;
        guard.attached.push((port.ifindex, program));
        modes[i] = mode;
        let map = guard.attached[i].1.map();
        for s in socks {
            s.register(map).map_err(|e| {
                XdpError::from_io(
                    "registering a socket with the XDP program",
                    &port.name,
                    None,
                    e,
                )
            })?;
        }
    }
    Ok((guard, modes))
}

/// The receive threads' frame pools laid over the UMEM.
struct Pools {
    ingress: Vec<XdpRx>,
    /// The dispatcher's and the drop hook's drainers, one per pool.
    sink: Vec<Drainer>,
    hook: Vec<Drainer>,
    /// Each pool's first UMEM byte and slot count.
    starts: Vec<(u64, u64)>,
    /// The UMEM offset after the last pool.
    end: u64,
}

impl Pools {
    /// One pool per receive thread, each serving the input's queues `q` with
    /// `q % threads` its index.
    fn build(
        area: &Arc<UmemArea>,
        layout: &Layout,
        sockets: Vec<RxHalf>,
    ) -> Result<Pools, eiffel_pspat::mailbox::CapacityError> {
        let threads = layout.per_thread.len();
        let chunk = u64::from(layout.chunk);
        let mut by_thread: Vec<Vec<RxHalf>> = (0..threads).map(|_| Vec::new()).collect();
        for s in sockets {
            by_thread[s.queue() as usize % threads].push(s);
        }
        let mut pools = Pools {
            ingress: vec![],
            sink: vec![],
            hook: vec![],
            starts: vec![],
            end: 0,
        };
        for (sockets, &slots) in by_thread.into_iter().zip(&layout.per_thread) {
            let region = Region {
                base: offset_ptr(area, pools.end),
                owner: Arc::clone(area) as Arc<dyn Send + Sync>,
            };
            let (filler, mut drainers) = pool_in(region, slots, layout.chunk as usize, 2)?;
            pools.hook.extend(drainers.pop());
            pools.sink.extend(drainers.pop());
            pools.ingress.push(XdpRx {
                sockets,
                filler,
                base: pools.end,
                chunk,
            });
            pools.starts.push((pools.end, u64::from(slots)));
            pools.end += u64::from(slots) * chunk;
        }
        Ok(pools)
    }
}

/// The pointer `offset` bytes into `area`.
fn offset_ptr(area: &UmemArea, offset: u64) -> std::ptr::NonNull<u8> {
    debug_assert!(offset as usize <= area.len());
    let base = area.base().as_ptr();
    // `wrapping_add` keeps this safe; the offset is inside the mapping by the
    // layout computed in `open`.
    std::ptr::NonNull::new(base.wrapping_add(offset as usize)).unwrap_or(area.base())
}

/// One socket per receive queue of `port`, queue 0 also transmitting.
fn sockets(umem: &Arc<Umem>, port: &Port) -> Result<(Vec<RxHalf>, TxHalf), XdpError> {
    let mut rx = Vec::with_capacity(port.queues as usize);
    let mut tx = None;
    for q in 0..port.queues {
        let usage = if q == 0 { Use::Both } else { Use::Receive };
        let (r, t) = xsk::open(umem, &port.name, q, usage, SIZES)
            .map_err(|e| XdpError::from_io("binding an AF_XDP socket", &port.name, Some(q), e))?;
        rx.push(r);
        tx = tx.or(t);
    }
    let tx = tx.ok_or_else(|| XdpError::Io {
        op: "opening a transmit ring",
        interface: port.name.clone(),
        source: std::io::Error::from(std::io::ErrorKind::NotFound),
    })?;
    Ok((rx, tx))
}

fn port_report(port: &Port, mode: XdpMode, sockets: &[RxHalf]) -> XdpPort {
    XdpPort {
        interface: port.name.clone(),
        mode,
        zero_copy: sockets.iter().all(RxHalf::zero_copy),
        queues: port.queues,
        removed_stale: port.stale,
    }
}

/// The kernel's drops on `sockets`: frames it could not put on an RX ring (full)
/// or into a chunk (fill ring empty).
fn kernel_drops(sockets: &[RxHalf]) -> u64 {
    sockets
        .iter()
        .filter_map(|s| s.statistics().ok())
        .map(|st| st.rx_dropped + st.rx_ring_full)
        .sum()
}

/// Sleeps until a socket of `sockets` or `waker` is readable, or `timeout`.
fn sleep(poll: &mut PollSet, sockets: &[RxHalf], waker: &UnixStream, timeout: Option<Duration>) {
    poll.clear();
    for s in sockets {
        poll.add(s, Interest::Readable);
    }
    let woken = poll.add(waker, Interest::Readable);
    let _ = poll.wait(timeout);
    if poll.is_ready(woken) {
        super::waker::Waker::drain(waker);
    }
}

/// The receive thread of the AF_XDP path.
pub(crate) struct XdpIngress {
    pub(crate) rx: XdpRx,
    pub(crate) classifier: Classifier,
    pub(crate) client: Client,
    pub(crate) counters: Arc<IngressCounters>,
    pub(crate) next_classifier: Arc<ClassifierSlot>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) waker: UnixStream,
    pub(crate) batch: usize,
    pub(crate) queue: u32,
}

impl XdpIngress {
    pub(crate) fn run(mut self) -> IngressEnd {
        let clock = self.client.clock();
        let mut poll = PollSet::with_capacity(self.rx.sockets.len() + 1);
        let mut tally = Tally::default();
        let mut carried = Carried::default();
        let mut descs = [XdpDesc::default(); BATCH];
        let batch = self.batch.clamp(1, BATCH);
        while !self.stop.load(Ordering::Acquire) {
            if let Some(next) = self.next_classifier.take() {
                carried = carry(carried, &self.classifier);
                self.classifier = next;
            }
            self.refill();
            let now = clock.now();
            let mut n = 0;
            for s in 0..self.rx.sockets.len() {
                let k = self.rx.sockets[s].recv(&mut descs[..batch]);
                n += k;
                self.receive(&descs[..k], now, &mut tally);
            }
            self.classifier
                .expire(now, ingress::EXPIRE_BUDGET, |_, _| {});
            // Partial checksums are found by their content: those found are
            // the ones pending.
            let pending = tally.checksum_completed;
            ingress::publish(&self.counters, &self.classifier, &tally, carried, pending);
            if n == 0 {
                self.idle(&mut poll, now);
            }
        }
        let pending = tally.checksum_completed;
        ingress::publish(&self.counters, &self.classifier, &tally, carried, pending);
        self.counters
            .set_kernel_drops(kernel_drops(&self.rx.sockets));
        drop(self.client);
        IngressEnd {
            fillers: super::slots::Fillers {
                small: self.rx.filler,
                large: None,
            },
        }
    }

    /// Tops up every socket's fill ring with free slots.
    fn refill(&mut self) {
        let XdpRx {
            sockets,
            filler,
            base,
            chunk,
        } = &mut self.rx;
        let mut addrs = [0u64; BATCH];
        for s in sockets.iter_mut() {
            loop {
                let room = s.fill_room(BATCH as u32) as usize;
                let mut k = 0;
                while k < room {
                    let Some(id) = filler.lend() else { break };
                    addrs[k] = *base + u64::from(id) * *chunk;
                    k += 1;
                }
                if k == 0 {
                    break;
                }
                let took = s.fill(&addrs[..k]);
                debug_assert_eq!(took, k, "fill ring room was {room}");
                if k < room {
                    break;
                }
            }
            if s.fill_needs_wakeup() {
                let _ = s.wake();
            }
        }
    }

    /// Classifies one batch of received frames in place and hands them on, in
    /// bursts of [`BURST`].
    #[inline]
    fn receive(&mut self, descs: &[XdpDesc], now: u64, tally: &mut Tally) {
        for burst in descs.chunks(BURST) {
            self.receive_burst(burst, now, tally);
        }
    }

    /// One burst in three passes (see `eiffel_classify`'s `burst` steps): hint
    /// every frame's headers into the cache; take each frame, complete its
    /// checksum, stage its classification and publish it; hint the flow
    /// entries; then complete each classification in order and send it.
    #[inline]
    fn receive_burst(&mut self, descs: &[XdpDesc], now: u64, tally: &mut Tally) {
        let queue = self.queue;
        let XdpIngress {
            rx,
            classifier,
            client,
            ..
        } = self;
        let place = |d: &XdpDesc| {
            let rel = d.addr.wrapping_sub(rx.base);
            ((rel / rx.chunk) as u32, (rel % rx.chunk) as u32)
        };
        for d in descs {
            let (slot, offset) = place(d);
            rx.filler.prefetch(slot, offset);
        }
        let mut staged: [Option<(u32, Staged)>; BURST] = [None; BURST];
        for (d, out) in descs.iter().zip(&mut staged) {
            tally.received += 1;
            tally.bytes += u64::from(d.len);
            let (slot, offset) = place(d);
            let Ok(mut frame) = rx.filler.received(slot, offset, d.len) else {
                tally.drop(Reason::BadDescriptor);
                continue;
            };
            // A sender's partial checksum (veth peers with transmit checksum
            // offload) arrives unfinished and without a flag saying so.
            if let Ok(Some(_)) = frame.modify(checksum::complete_if_partial) {
                tally.checksum_completed += 1;
            }
            let s = frame.read(|bytes| classifier.stage(bytes));
            *out = Some((frame.publish(), s));
        }
        complete_burst(
            &staged,
            classifier,
            &mut rx.filler,
            client,
            queue,
            now,
            tally,
        );
    }

    /// Nothing to receive: housekeeping, then sleep until the next frame or the
    /// next flow expiry.
    fn idle(&mut self, poll: &mut PollSet, now: u64) {
        self.rx.filler.reclaim();
        self.refill();
        self.counters
            .set_kernel_drops(kernel_drops(&self.rx.sockets));
        let timeout = self
            .classifier
            .flows()
            .next_expiry()
            .map(|at| Duration::from_nanos(at.saturating_sub(now).max(1_000_000)));
        sleep(poll, &self.rx.sockets, &self.waker, timeout);
    }
}

/// Counts of a transmit ring.
#[derive(Clone, Copy, Debug, Default)]
struct TxTally {
    sent: u64,
    bytes: u64,
    ring_full: u64,
    kicks: u64,
    kick_errors: u64,
}

/// Pushes `descs` on `tx`, waking the kernel and waiting up to `wait` for room
/// when it is full (`reap` frees completed chunks meanwhile). Returns how many
/// went on the ring; the rest are the caller's to free.
fn push(
    tx: &mut TxHalf,
    descs: &[XdpDesc],
    wait: Duration,
    poll: &mut PollSet,
    tally: &mut TxTally,
    mut reap: impl FnMut(&mut TxHalf),
) -> usize {
    let mut done = tx.send(descs);
    let mut deadline = None;
    while done < descs.len() {
        kick(tx, tally, &mut reap);
        done += tx.send(&descs[done..]);
        if done == descs.len() {
            break;
        }
        let until = *deadline.get_or_insert_with(|| Instant::now() + wait);
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        poll.clear();
        poll.add(tx, Interest::Writable);
        let _ = poll.wait(Some(left.min(Duration::from_millis(1))));
    }
    tally.sent += done as u64;
    tally.bytes += descs[..done].iter().map(|d| u64::from(d.len)).sum::<u64>();
    done
}

/// Wakes the kernel until the TX ring is empty or it needs no wake-up (copy mode
/// sends at most 32 frames per call); completed chunks are reaped in between.
fn kick(tx: &mut TxHalf, tally: &mut TxTally, reap: &mut impl FnMut(&mut TxHalf)) {
    // Bounded: a device that stops taking frames cannot hold the thread here.
    let rounds = tx.pending() / 16 + 4;
    for _ in 0..rounds {
        if tx.pending() == 0 || !tx.needs_wakeup() {
            break;
        }
        tally.kicks += 1;
        match tx.kick() {
            Ok(()) => {}
            // More queued than one call sends, a full completion ring, or one
            // frame the device dropped (EBUSY): go on.
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS)
                ) => {}
            Err(_) => {
                tally.kick_errors += 1;
                break;
            }
        }
        reap(tx);
    }
    reap(tx);
}

/// The dispatcher's transmit side on AF_XDP: puts released descriptors on the
/// output's TX ring and frees their slots when the completion ring returns them.
pub(crate) struct XdpSink {
    tx: TxHalf,
    drainers: Vec<Drainer>,
    /// Each pool's first UMEM byte and slot count.
    pools: Vec<(u64, u64)>,
    chunk: u64,
    pub(crate) counters: Arc<EgressCounters>,
    poll: PollSet,
    wait: Duration,
    staged: Vec<XdpDesc>,
    tally: TxTally,
    bad_descriptor: u64,
}

impl XdpSink {
    fn new(
        tx: TxHalf,
        drainers: Vec<Drainer>,
        pools: Vec<(u64, u64)>,
        chunk: u64,
        wait: Duration,
    ) -> XdpSink {
        XdpSink {
            tx,
            drainers,
            pools,
            chunk,
            counters: Arc::default(),
            poll: PollSet::with_capacity(1),
            wait,
            staged: Vec::with_capacity(BATCH),
            tally: TxTally::default(),
            bad_descriptor: 0,
        }
    }

    /// Frees the slots of completed transmissions.
    fn reap(
        tx: &mut TxHalf,
        drainers: &mut [Drainer],
        pools: &[(u64, u64)],
        chunk: u64,
        bad: &mut u64,
    ) {
        let mut done = [0u64; BATCH];
        loop {
            let n = tx.complete(&mut done);
            for &addr in &done[..n] {
                if free_sent(drainers, pools, chunk, addr).is_none() {
                    *bad += 1;
                }
            }
            if n < BATCH {
                break;
            }
        }
    }

    fn stage(&mut self, pkt: &Packet) {
        let (queue, slot) = untag(pkt.buffer);
        let Some(Ok(frame)) = self.drainers.get_mut(queue).map(|d| d.take(slot)) else {
            self.bad_descriptor += 1;
            return;
        };
        let (offset, len) = frame.span();
        frame.to_device();
        self.staged.push(XdpDesc {
            addr: self.pools[queue].0 + offset as u64,
            len,
            options: 0,
        });
        if self.staged.len() == BATCH {
            self.flush();
        }
    }

    fn flush(&mut self) {
        let XdpSink {
            tx,
            drainers,
            pools,
            chunk,
            poll,
            wait,
            staged,
            tally,
            bad_descriptor,
            ..
        } = self;
        let chunk = *chunk;
        let mut reap = |tx: &mut TxHalf| XdpSink::reap(tx, drainers, pools, chunk, bad_descriptor);
        let done = push(tx, staged, *wait, poll, tally, &mut reap);
        for d in &staged[done..] {
            tally.ring_full += 1;
            if free_sent(drainers, pools, chunk, d.addr).is_none() {
                *bad_descriptor += 1;
            }
        }
        staged.clear();
    }

    fn publish(&self) {
        let c = &*self.counters;
        let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
        set(&c.sent, self.tally.sent);
        set(&c.bytes, self.tally.bytes);
        set(&c.ring_full, self.tally.ring_full);
        set(&c.bad_descriptor, self.bad_descriptor);
        set(&c.kicks, self.tally.kicks);
        set(&c.kick_errors, self.tally.kick_errors);
    }
}

/// Frees the slot whose chunk holds UMEM address `addr`, after its transmission.
fn free_sent(drainers: &mut [Drainer], pools: &[(u64, u64)], chunk: u64, addr: u64) -> Option<()> {
    let q = pools
        .iter()
        .position(|&(start, slots)| addr >= start && addr < start + slots * chunk)?;
    let slot = ((addr - pools[q].0) / chunk) as u32;
    drainers[q].sent(slot).ok()
}

impl eiffel_pspat::Transmit for XdpSink {
    fn transmit(&mut self, batch: &[Packet], now: Nanos) {
        for pkt in batch {
            let latency = &self.counters.latency;
            latency.record(pkt.class as usize, now.saturating_sub(pkt.arrival));
            self.stage(pkt);
        }
        self.flush();
        self.kick_and_reap();
        self.publish();
    }
}

impl XdpSink {
    /// Wakes the device for what is staged if it asks, freeing what it finished
    /// sending meanwhile.
    fn kick_and_reap(&mut self) {
        let XdpSink {
            tx,
            drainers,
            pools,
            chunk,
            tally,
            bad_descriptor,
            ..
        } = self;
        let chunk = *chunk;
        kick(tx, tally, &mut |tx: &mut TxHalf| {
            XdpSink::reap(tx, drainers, pools, chunk, bad_descriptor);
        });
    }
}

impl Drop for XdpSink {
    /// Frees what the device finished sending since the last batch, so the pools'
    /// counts end at zero.
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_millis(100);
        while Instant::now() < deadline {
            self.kick_and_reap();
            if self.tx.pending() == 0 {
                break;
            }
            std::thread::sleep(Duration::from_micros(100));
        }
        let chunk = self.chunk;
        XdpSink::reap(
            &mut self.tx,
            &mut self.drainers,
            &self.pools,
            chunk,
            &mut self.bad_descriptor,
        );
    }
}

/// The unscheduled direction on AF_XDP: output queues to the input, chunk to
/// chunk.
pub(crate) struct XdpReverse {
    pub(crate) io: XdpReverseIo,
    pub(crate) counters: Arc<ReverseCounters>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) waker: UnixStream,
    pub(crate) batch: usize,
    pub(crate) wait: Duration,
}

impl XdpReverse {
    pub(crate) fn run(mut self) {
        let mut poll = PollSet::with_capacity(self.io.rx.len() + 1);
        let mut tx_poll = PollSet::with_capacity(1);
        let mut tally = TxTally::default();
        let (mut received, mut completed) = (0u64, 0u64);
        let mut descs = [XdpDesc::default(); BATCH];
        let batch = self.batch.clamp(1, BATCH);
        while !self.stop.load(Ordering::Acquire) {
            let XdpReverseIo {
                rx,
                tx,
                free,
                chunk,
                frames,
            } = &mut self.io;
            let chunk = *chunk;
            reap_reverse(tx, free, chunk);
            let mut n = 0;
            for s in rx.iter_mut() {
                refill_reverse(s, free);
                let k = s.recv(&mut descs[..batch]);
                if k == 0 {
                    continue;
                }
                n += k;
                received += k as u64;
                for d in &descs[..k] {
                    let fixed = frames
                        .frame_mut(d.addr, d.len)
                        .map(checksum::complete_if_partial);
                    if let Some(Ok(Some(_))) = fixed {
                        completed += 1;
                    }
                }
                let reap = |tx: &mut TxHalf| reap_reverse(tx, free, chunk);
                let done = push(tx, &descs[..k], self.wait, &mut tx_poll, &mut tally, reap);
                for d in &descs[done..k] {
                    tally.ring_full += 1;
                    free.push(d.addr - d.addr % chunk);
                }
            }
            kick(tx, &mut tally, &mut |tx: &mut TxHalf| {
                reap_reverse(tx, free, chunk)
            });
            let c = &*self.counters;
            let set = |a: &AtomicU64, v: u64| a.store(v, Ordering::Relaxed);
            set(&c.received, received);
            set(&c.sent, tally.sent);
            set(&c.bytes, tally.bytes);
            set(&c.ring_full, tally.ring_full);
            set(&c.checksum_completed, completed);
            if n == 0 {
                set(&c.kernel_drops, kernel_drops(&self.io.rx));
                for s in self.io.rx.iter_mut() {
                    refill_reverse(s, &mut self.io.free);
                }
                sleep(&mut poll, &self.io.rx, &self.waker, None);
            }
        }
    }
}

/// Takes the reverse direction's completed chunks back.
fn reap_reverse(tx: &mut TxHalf, free: &mut Vec<u64>, chunk: u64) {
    let mut done = [0u64; BATCH];
    loop {
        let n = tx.complete(&mut done);
        free.extend(done[..n].iter().map(|a| a - a % chunk));
        if n < BATCH {
            break;
        }
    }
}

/// Lends the reverse direction's free chunks to socket `s`'s fill ring, until it
/// is full or none is left.
fn refill_reverse(s: &mut RxHalf, free: &mut Vec<u64>) {
    loop {
        let room = (s.fill_room(BATCH as u32) as usize).min(free.len());
        if room == 0 {
            break;
        }
        let from = free.len() - room;
        let took = s.fill(&free[from..]);
        debug_assert_eq!(took, room);
        free.truncate(from);
    }
    if s.fill_needs_wakeup() {
        let _ = s.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_hold_a_frame_after_the_headroom() {
        assert_eq!(chunk_for(1500), Some(2048));
        assert_eq!(chunk_for(2048 - 256 - 18), Some(2048));
        assert_eq!(chunk_for(2048 - 256 - 17), Some(4096));
        assert_eq!(chunk_for(4096 - 256 - 18), Some(4096));
        assert_eq!(chunk_for(9000), None);
    }
}
