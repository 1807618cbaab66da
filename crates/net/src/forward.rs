//! A single-threaded bump in the wire: two interfaces, one scheduler.
//!
//! Frames received on port A are copied once into the [`BufferPool`], classified
//! ([`Classifier`]), and their descriptors enqueued in a [`Scheduler`]; descriptors the
//! scheduler releases are transmitted on port B from the pool. Frames received on
//! port B go straight back out of port A, ring to ring, unscheduled (the reverse
//! direction, e.g. TCP acknowledgements). This is the reference data path: the
//! multi-core runtime splits the same steps across threads.
//!
//! # Loop
//! Each [`Forwarder::poll_once`] receives up to `batch` frames per direction, lets the
//! scheduler release what is eligible while port B's ring has room, expires idle
//! flows, and flushes both transmit rings (one `send(2)` each). When a pass did
//! nothing, [`Forwarder::wait`] sleeps in `ppoll(2)` on both receive rings (and on
//! port B's transmit ring when it is full and packets wait), exactly until the
//! scheduler's next release time when it has one ([`Scheduler::next_ready`]).
//!
//! # Accounting
//! Every frame received on A ends in exactly one [`AtoB`] counter or in the
//! scheduler's counters:
//!
//! ```text
//! received = truncated + oversize + pool_full + malformed + sched.enqueued
//! sched.enqueued = sched.dequeued + sched.dropped + sched.backlog
//! sched.dequeued = sent + tx_too_large + tx_full
//! ```
//!
//! and every frame received on B in exactly one [`BtoA`] counter. A descriptor the
//! scheduler drops hands its pool slot back, so pool slots in use always equal the
//! scheduler's backlog.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use eiffel_classify::Classifier;
use eiffel_sched::{ConfigError, Nanos, Scheduler};

use crate::afpacket::{
    ChecksumFix, Interest, NetError, PollSet, RxConfig, RxRing, TxConfig, TxError, TxRing,
};
use crate::pool::BufferPool;

/// A receive ring and a transmit ring on one interface.
#[derive(Debug)]
pub struct Port {
    /// Receive side.
    pub rx: RxRing,
    /// Transmit side.
    pub tx: TxRing,
}

impl Port {
    /// Opens both rings on `interface`.
    ///
    /// # Errors
    /// See [`RxRing::open`].
    pub fn open(interface: &str, rx: &RxConfig, tx: &TxConfig) -> Result<Port, NetError> {
        Ok(Port {
            rx: RxRing::open(interface, rx)?,
            tx: TxRing::open(interface, tx)?,
        })
    }
}

/// Sizing of a [`Forwarder`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ForwardConfig {
    /// Frames handled per direction per pass.
    pub batch: usize,
    /// Buffer-pool slots: the most frames the scheduler can hold.
    pub pool_slots: u32,
    /// Bytes per pool slot: the longest frame forwarded on the scheduled path.
    pub slot_size: usize,
    /// Longest sleep when idle, so a stop request is seen within it.
    pub max_wait: Duration,
    /// Idle flows expired per pass at most.
    pub expire_budget: usize,
}

impl Default for ForwardConfig {
    fn default() -> Self {
        ForwardConfig {
            batch: 64,
            pool_slots: 4096,
            slot_size: 2048,
            max_wait: Duration::from_millis(50),
            expire_budget: 16,
        }
    }
}

/// Counters of the scheduled direction (A to B).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AtoB {
    /// Frames received on A.
    pub received: u64,
    /// Dropped: captured shorter than on the wire (larger than a ring block).
    pub truncated: u64,
    /// Dropped: longer than a pool slot (e.g. a GRO super-frame).
    pub oversize: u64,
    /// Dropped: no free pool slot.
    pub pool_full: u64,
    /// Dropped: malformed, under `malformed = "drop"`.
    pub malformed: u64,
    /// Transmitted on B.
    pub sent: u64,
    /// Dropped at B: longer than B accepts.
    pub tx_too_large: u64,
    /// Dropped at B: transmit ring full although it reported room.
    pub tx_full: u64,
    /// Frames whose checksum, left for hardware, was completed in the copy (not
    /// a separate fate: they are also in the counters above).
    pub checksum_completed: u64,
    /// Frames whose checksum was left for hardware and could not be completed
    /// (forwarded unfinished; also in the counters above).
    pub checksum_left: u64,
}

/// Counters of the unscheduled direction (B to A).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BtoA {
    /// Frames received on B.
    pub received: u64,
    /// Transmitted on A.
    pub sent: u64,
    /// Dropped: captured shorter than on the wire.
    pub truncated: u64,
    /// Dropped: longer than A accepts.
    pub too_large: u64,
    /// Dropped: A's transmit ring was full.
    pub tx_full: u64,
}

/// The bump-in-the-wire loop.
#[derive(Debug)]
pub struct Forwarder<S> {
    a: Port,
    b: Port,
    pool: BufferPool,
    classifier: Classifier,
    sched: S,
    cfg: ForwardConfig,
    origin: Instant,
    poll: PollSet,
    a_to_b: AtoB,
    b_to_a: BtoA,
}

impl<S: Scheduler> Forwarder<S> {
    /// A forwarder from port `a` (scheduled side in) to port `b`.
    ///
    /// # Errors
    /// A zero batch or a buffer-pool size out of range.
    pub fn new(
        a: Port,
        b: Port,
        sched: S,
        classifier: Classifier,
        cfg: ForwardConfig,
    ) -> Result<Forwarder<S>, ConfigError> {
        if cfg.batch == 0 {
            return Err(ConfigError::OutOfRange {
                what: "forwarding batch",
                value: 0,
                range: "1..",
            });
        }
        Ok(Forwarder {
            a,
            b,
            pool: BufferPool::new(cfg.pool_slots, cfg.slot_size)?,
            classifier,
            sched,
            cfg,
            origin: Instant::now(),
            poll: PollSet::with_capacity(3),
            a_to_b: AtoB::default(),
            b_to_a: BtoA::default(),
        })
    }

    /// Nanoseconds since the forwarder was built: the `now` given to the scheduler.
    #[must_use]
    pub fn now(&self) -> Nanos {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// One pass over both directions; returns the frames moved or dropped.
    ///
    /// # Errors
    /// A transmit ring's `send(2)` failed with something other than back-pressure.
    pub fn poll_once(&mut self) -> Result<usize, NetError> {
        let now = self.now();
        let mut work = self.receive_a(now);
        work += self.release_to_b(now);
        work += self.reverse_b_to_a();
        self.classifier
            .expire(now, self.cfg.expire_budget, |_, _| {});
        self.a.tx.flush()?;
        self.b.tx.flush()?;
        Ok(work)
    }

    /// Receives up to a batch of frames on port A, copies each into the pool,
    /// classifies it and enqueues its descriptor in the scheduler; returns the
    /// frames received.
    fn receive_a(&mut self, now: Nanos) -> usize {
        let batch = self.cfg.batch;
        let Forwarder {
            a,
            pool,
            classifier,
            sched,
            a_to_b,
            ..
        } = self;
        a.rx.recv(batch, |frame| {
            a_to_b.received += 1;
            if frame.is_truncated() {
                a_to_b.truncated += 1;
                return;
            }
            let Some(id) = pool.alloc() else {
                a_to_b.pool_full += 1;
                return;
            };
            let copied = pool.slot_mut(id).and_then(|slot| frame.copy_to(slot));
            let Some(copied) = copied else {
                a_to_b.oversize += 1;
                let _ = pool.free(id);
                return;
            };
            let len = copied.len;
            match copied.checksum {
                ChecksumFix::Ready | ChecksumFix::Offloaded => {}
                ChecksumFix::Completed => a_to_b.checksum_completed += 1,
                ChecksumFix::Left(_) => a_to_b.checksum_left += 1,
            }
            let _ = pool.set_len(id, len);
            let bytes = pool.frame(id).unwrap_or_default();
            match classifier.classify(bytes, now) {
                Err(_) => {
                    a_to_b.malformed += 1;
                    let _ = pool.free(id);
                }
                Ok(pkt) => {
                    if let Err(drop) = sched.enqueue(pkt.buffer(id), now) {
                        let _ = pool.free(drop.packet.buffer);
                    }
                }
            }
        })
    }

    /// Transmits on port B what the scheduler releases, up to two batches and
    /// while B's ring has room, handing each pool slot back; returns the packets
    /// released.
    fn release_to_b(&mut self, now: Nanos) -> usize {
        let batch = self.cfg.batch;
        let Forwarder {
            b,
            pool,
            sched,
            a_to_b,
            ..
        } = self;
        let mut released = 0;
        while released < 2 * batch && b.tx.has_room() {
            let Some(pkt) = sched.dequeue(now) else {
                break;
            };
            released += 1;
            let frame = pool.frame(pkt.buffer).unwrap_or_default();
            match b.tx.send(frame) {
                Ok(()) => a_to_b.sent += 1,
                Err(TxError::TooLarge { .. }) => a_to_b.tx_too_large += 1,
                Err(TxError::Full) => a_to_b.tx_full += 1,
            }
            let _ = pool.free(pkt.buffer);
        }
        released
    }

    /// Receives up to a batch of frames on port B and queues each on port A's
    /// transmit ring, unscheduled; returns the frames received.
    fn reverse_b_to_a(&mut self) -> usize {
        let batch = self.cfg.batch;
        let Forwarder { a, b, b_to_a, .. } = self;
        b.rx.recv(batch, |frame| {
            b_to_a.received += 1;
            if frame.is_truncated() {
                b_to_a.truncated += 1;
                return;
            }
            match a.tx.send_frame(&frame) {
                Ok(()) => b_to_a.sent += 1,
                Err(TxError::TooLarge { .. }) => b_to_a.too_large += 1,
                Err(TxError::Full) => b_to_a.tx_full += 1,
            }
        })
    }

    /// Sleeps until a receive ring has frames, port B has room for waiting packets,
    /// the scheduler's next release time, or `max_wait`, whichever comes first.
    ///
    /// # Errors
    /// `ppoll(2)` failed.
    pub fn wait(&mut self) -> Result<(), NetError> {
        let now = self.now();
        let mut timeout = self.cfg.max_wait;
        self.poll.clear();
        self.poll.add(&self.a.rx, Interest::Readable);
        self.poll.add(&self.b.rx, Interest::Readable);
        if let Some(at) = self.sched.next_ready(now) {
            if !self.b.tx.has_room() {
                self.poll.add(&self.b.tx, Interest::Writable);
            } else if at <= now {
                return Ok(());
            } else {
                timeout = timeout.min(Duration::from_nanos(at - now));
            }
        }
        self.poll
            .wait(Some(timeout))
            .map(drop)
            .map_err(|source| NetError::Io {
                op: "waiting for frames",
                interface: format!("{}/{}", self.a.rx.interface(), self.b.rx.interface()),
                source,
            })
    }

    /// Runs until `stop` is set (checked at least every `max_wait`).
    ///
    /// # Errors
    /// As for [`Forwarder::poll_once`] and [`Forwarder::wait`].
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), NetError> {
        while !stop.load(Ordering::Relaxed) {
            if self.poll_once()? == 0 {
                self.wait()?;
            }
        }
        Ok(())
    }

    /// Counters of the scheduled direction.
    #[must_use]
    pub fn a_to_b(&self) -> &AtoB {
        &self.a_to_b
    }

    /// Counters of the unscheduled direction.
    #[must_use]
    pub fn b_to_a(&self) -> &BtoA {
        &self.b_to_a
    }

    /// The scheduler.
    #[must_use]
    pub fn scheduler(&self) -> &S {
        &self.sched
    }

    /// The classifier.
    #[must_use]
    pub fn classifier(&self) -> &Classifier {
        &self.classifier
    }

    /// The buffer pool.
    #[must_use]
    pub fn pool(&self) -> &BufferPool {
        &self.pool
    }

    /// Port A (scheduled side in).
    pub fn port_a(&mut self) -> &mut Port {
        &mut self.a
    }

    /// Port B (scheduled side out).
    pub fn port_b(&mut self) -> &mut Port {
        &mut self.b
    }
}
