//! Eiffel's side: the policy tree of the hierarchy, driven by the port's byte
//! clock.

use std::hint::black_box;
use std::time::{Duration, Instant};

use eiffel_sched::tree::{PipeError, PipeTree};
use eiffel_sched::{ClassId, Dropped, Nanos, Packet, PolicyTree, Scheduler};

use super::hierarchy::Hierarchy;
use super::shares::{Served, Window};
use super::stream::Stream;
use super::{Outcome, Repeat, Run, BURST};
use crate::BenchError;

/// rte_sched's notion of time: the port's byte clock, which runs at the port's
/// rate with the wall clock and moves ahead by every byte sent faster than that
/// (a port sending faster than its rate is never idle).
#[derive(Debug)]
pub struct PortClock {
    start: Instant,
    bytes: u64,
    bytes_per_sec: u64,
}

impl PortClock {
    /// A clock starting now for a port of `bytes_per_sec`.
    #[must_use]
    pub fn new(bytes_per_sec: u64) -> PortClock {
        PortClock {
            start: Instant::now(),
            bytes: 0,
            bytes_per_sec: bytes_per_sec.max(1),
        }
    }

    /// `len` bytes left the port.
    #[inline]
    pub fn sent(&mut self, len: u32) {
        self.bytes += u64::from(len);
    }

    /// Nanoseconds since the start: the wall clock or the bytes sent at the
    /// port's rate, whichever is ahead. A wall clock more than [`MAX_LAG`]
    /// ahead of the bytes sent means the process did not run (descheduled, or
    /// its memory being rebuilt on huge pages), not that an overloaded port sat
    /// idle: that time is skipped. Otherwise the rate limits would pace the
    /// rest of the run in real time at the port's rate, and the benchmark would
    /// time the port, not the scheduler.
    #[inline]
    pub fn now(&mut self) -> Nanos {
        let elapsed = self.start.elapsed();
        let sent = self.sent_ns();
        if elapsed.as_nanos() > u128::from(sent + MAX_LAG.as_nanos() as u64) {
            self.start += elapsed - Duration::from_nanos(sent);
            return sent;
        }
        self.now_at(elapsed)
    }

    /// The bytes sent, as nanoseconds at the port's rate.
    #[inline]
    fn sent_ns(&self) -> Nanos {
        (u128::from(self.bytes) * 1_000_000_000 / u128::from(self.bytes_per_sec)) as u64
    }

    /// The same with `elapsed` (a virtual clock's) in place of the wall
    /// clock's time since the start.
    #[inline]
    pub fn now_at(&self, elapsed: Duration) -> Nanos {
        (elapsed.as_nanos() as u64).max(self.sent_ns())
    }
}

/// How far the wall clock may run ahead of the bytes sent before
/// [`PortClock::now`] counts the gap as time the process did not run.
pub const MAX_LAG: Duration = Duration::from_millis(1);

/// Which of Eiffel's executors runs the hierarchy's tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Executor {
    /// The pipe executor (`PipeTree`) when the tree has its shape (`drr`
    /// levels over `ets` pipes over FIFO leaves), the general tree otherwise.
    Chosen,
    /// The general policy tree.
    Tree,
}

/// The tree, run by one of the executors.
enum Exec {
    Tree(Box<PolicyTree>),
    Pipes(Box<PipeTree>),
}

impl Exec {
    #[inline]
    fn enqueue(&mut self, pkt: Packet, now: Nanos) -> Result<(), Dropped> {
        match self {
            Exec::Tree(t) => t.enqueue(pkt, now),
            Exec::Pipes(t) => t.enqueue(pkt, now),
        }
    }

    #[inline]
    fn enqueue_burst(&mut self, pkts: &[Packet], now: Nanos, dropped: impl FnMut(Dropped)) {
        match self {
            Exec::Tree(t) => t.enqueue_burst(pkts, now, dropped),
            Exec::Pipes(t) => t.enqueue_burst(pkts, now, dropped),
        };
    }

    #[inline]
    fn dequeue(&mut self, now: Nanos) -> Option<Packet> {
        match self {
            Exec::Tree(t) => t.dequeue(now),
            Exec::Pipes(t) => t.dequeue(now),
        }
    }

    /// Up to `out.len()` packets at `now` into `out`: how many.
    #[inline]
    fn dequeue_burst(&mut self, now: Nanos, out: &mut [Packet]) -> usize {
        match self {
            Exec::Tree(t) => {
                for (k, slot) in out.iter_mut().enumerate() {
                    let Some(pkt) = t.dequeue(now) else {
                        return k;
                    };
                    *slot = pkt;
                }
                out.len()
            }
            Exec::Pipes(t) => t.dequeue_burst(now, out),
        }
    }

    fn backlog(&self) -> eiffel_sched::Backlog {
        match self {
            Exec::Tree(t) => t.backlog(),
            Exec::Pipes(t) => t.backlog(),
        }
    }

    fn check_invariants(&self) {
        match self {
            Exec::Tree(t) => t.check_invariants(),
            Exec::Pipes(t) => t.check_invariants(),
        }
    }
}

/// The tree of a hierarchy and the leaf of every queue.
struct Port {
    tree: Exec,
    leaves: Vec<ClassId>,
    drops: u64,
}

impl Port {
    fn new(
        h: &Hierarchy,
        subports: u32,
        pipes: u32,
        capacity: u32,
        executor: Executor,
    ) -> Result<Port, BenchError> {
        let (spec, leaves) = h.tree_spec(subports, pipes, capacity);
        let tree = match executor {
            Executor::Tree => Exec::Tree(Box::new(PolicyTree::new(spec)?)),
            Executor::Chosen => match PipeTree::new(spec.clone()) {
                Ok(t) => Exec::Pipes(Box::new(t)),
                Err(PipeError::Shape(_)) => Exec::Tree(Box::new(PolicyTree::new(spec)?)),
                Err(e) => return Err(e.into()),
            },
        };
        Ok(Port {
            tree,
            leaves,
            drops: 0,
        })
    }

    /// Offers the stream's next packet; returns whether the tree took it.
    #[inline]
    fn offer(&mut self, stream: &mut Stream, now: Nanos) -> bool {
        let a = stream.next_arrival();
        let pkt = Packet::new(a.queue, a.len).class(self.leaves[a.queue as usize]);
        let taken = self.tree.enqueue(pkt, now).is_ok();
        self.drops += u64::from(!taken);
        taken
    }

    /// Offers the stream's next `n` packets (at most [`BURST`]) as one burst,
    /// as `rte_sched_port_enqueue` takes them.
    #[inline]
    fn offer_burst(&mut self, stream: &mut Stream, n: usize, now: Nanos) {
        let mut burst = [Packet::default(); BURST];
        for slot in burst.iter_mut().take(n) {
            let a = stream.next_arrival();
            *slot = Packet::new(a.queue, a.len).class(self.leaves[a.queue as usize]);
        }
        let mut drops = 0;
        self.tree.enqueue_burst(&burst[..n], now, |_| drops += 1);
        self.drops += drops;
    }
}

/// Enqueue plus dequeue cost with every rate lifted (see [`Hierarchy::lifted`]):
/// `backlog` packets queued, then bursts of up to 32 dequeued and as many new
/// packets enqueued; one warm-up pass then `reps` timed runs of `packets`.
pub fn throughput(
    h: &Hierarchy,
    subports: u32,
    pipes: u32,
    run_spec: Run,
    executor: Executor,
) -> Result<Outcome, BenchError> {
    let mut bench = Bench::new(h, subports, pipes, run_spec.backlog, executor)?;
    let (cpu, wall, huge_bytes) = super::repeat(&mut bench, run_spec);
    Ok(bench.outcome(cpu, wall, huge_bytes))
}

/// Eiffel's port of a throughput measurement, filled and warmed up: each
/// [`Repeat::rep`] times one repetition.
pub struct Bench {
    port: Port,
    stream: Stream,
    clock: PortClock,
}

impl Bench {
    /// The tree of `subports` x `pipes` of `h` with `backlog` packets queued,
    /// after one warm-up pass of `backlog` packets.
    pub fn new(
        h: &Hierarchy,
        subports: u32,
        pipes: u32,
        backlog: usize,
        executor: Executor,
    ) -> Result<Bench, BenchError> {
        let queues = Hierarchy::queues(subports, pipes);
        let mut port = Port::new(h, subports, pipes, (backlog + 2 * BURST) as u32, executor)?;
        let mut stream = Stream::new(queues, super::STREAM_LEN);
        for _ in 0..backlog {
            let _ = port.offer(&mut stream, 0);
        }
        let mut bench = Bench {
            port,
            stream,
            clock: PortClock::new(h.port_bytes_per_sec()),
        };
        bench.steady(backlog as u64);
        Ok(bench)
    }

    /// Dequeues bursts of up to 32 at the port clock's time (one call, as
    /// `rte_sched_port_dequeue`) and enqueues as many new packets, until
    /// `packets` were sent; returns how many were.
    fn steady(&mut self, packets: u64) -> u64 {
        let Bench {
            port,
            stream,
            clock,
        } = self;
        let mut out = [Packet::default(); BURST];
        let mut sent = 0;
        while sent < packets {
            let now = clock.now();
            let got = port.tree.dequeue_burst(now, &mut out);
            for pkt in &out[..got] {
                clock.sent(pkt.len);
            }
            black_box(&mut out[..got]);
            port.offer_burst(stream, got, now);
            sent += got as u64;
            if got == 0 && port.tree.backlog().packets == 0 {
                break;
            }
        }
        sent
    }

    /// The outcome of repetitions timed `cpu` and `wall` ns a packet.
    pub fn outcome(&self, cpu: Vec<f64>, wall: Vec<f64>, huge_bytes: u64) -> Outcome {
        self.port.tree.check_invariants();
        Outcome {
            ns_per_packet: cpu,
            wall_ns_per_packet: wall,
            drops: self.port.drops,
            huge_bytes,
        }
    }
}

impl Repeat for Bench {
    fn rep(&mut self, packets: u64) -> (f64, f64) {
        super::timed(|| self.steady(packets))
    }

    fn drops(&self) -> u64 {
        self.port.drops
    }
}

/// Overload on the hierarchy as written (one subport of its pipes) on the
/// virtual clock of [`super::STEP`]s: each step offers bursts of 32 at
/// [`super::OFFERED_PPS`] and dequeues bursts of up to 32 until nothing is
/// eligible; returns the bytes each queue sent in the `window`.
pub fn shares(h: &Hierarchy, window: Window) -> Result<Served, BenchError> {
    let pipes = h.profiles.len() as u32;
    let queues = Hierarchy::queues(1, pipes);
    let capacity = queues as u32 * u32::from(*h.qsize.iter().max().unwrap_or(&64));
    let mut port = Port::new(h, 1, pipes, capacity, Executor::Chosen)?;
    let mut stream = Stream::new(queues, super::STREAM_LEN);
    let mut served = Served::new(queues);
    let mut clock = PortClock::new(h.port_bytes_per_sec());
    for elapsed in super::steps(window) {
        let now = clock.now_at(elapsed);
        for _ in 0..super::bursts_due(super::STEP) {
            port.offer_burst(&mut stream, BURST, now);
        }
        let weight = window.weight(elapsed);
        while let Some(pkt) = port.tree.dequeue(now) {
            clock.sent(pkt.len);
            served.add(pkt.flow as usize, pkt.len, weight);
        }
    }
    port.tree.check_invariants();
    Ok(served)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_of_the_process_is_not_port_time() {
        let mut clock = PortClock::new(1_000_000_000);
        std::thread::sleep(MAX_LAG * 5);
        assert_eq!(clock.now(), 0, "the pause is skipped");
        clock.sent(2_000_000);
        let now = clock.now();
        assert!((2_000_000..2_000_000 + 1_000_000).contains(&now), "{now}");
        assert_eq!(clock.now_at(Duration::from_secs(1)), 1_000_000_000);
    }
}
