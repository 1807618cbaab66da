//! rte_sched's side: DPDK's hierarchical scheduler configured with the same
//! hierarchy, fed mbufs from an rte_mempool.

use std::time::Duration;

use eiffel_dpdk::{
    eal, Burst, Mempool, PipeProfile, PortConfig, QueuePath, SchedPort, SubportProfile, VirtualTsc,
};

use super::hierarchy::{tc_of, Hierarchy, QUEUES_PER_PIPE, TRAFFIC_CLASSES};
use super::shares::{Served, Window};
use super::stream::{Arrival, Stream};
use super::{Outcome, Repeat, Run, BURST};
use crate::BenchError;

/// Period over which rte_sched enforces the traffic classes' caps.
pub const TC_PERIOD_MS: u64 = super::TC_PERIOD.as_millis() as u64;

/// Heap EAL maps: mbufs and rte_sched's queues for 64K queues fit with room.
const EAL_MEMORY_MB: u32 = 512;

/// rte_sched's configuration of `subports` subports of `pipes` pipes of `h`.
#[must_use]
pub fn port_config(h: &Hierarchy, subports: u32, pipes: u32) -> PortConfig {
    let sub = h.subport.bps / 8;
    PortConfig {
        rate: h.port_bytes_per_sec(),
        mtu: h.mtu(),
        frame_overhead: 0,
        subports,
        pipes_per_subport: pipes,
        qsize: h.qsize,
        subport: SubportProfile {
            tb_rate: sub,
            tb_size: h.subport.burst,
            tc_rate: [sub; TRAFFIC_CLASSES],
            tc_period_ms: TC_PERIOD_MS,
        },
        pipe_profiles: h
            .profiles
            .iter()
            .map(|p| PipeProfile {
                tb_rate: p.pipe.bps / 8,
                tb_size: p.pipe.burst,
                tc_rate: p.tc.map(|l| l.bps / 8),
                tc_period_ms: TC_PERIOD_MS,
                wrr_weights: p.weights.map(|w| w as u8),
            })
            .collect(),
    }
}

/// Where global queue `g` is, with `pipes` pipes per subport.
#[inline]
fn path(g: u32, pipes: u32) -> QueuePath {
    let pipe = g / QUEUES_PER_PIPE as u32;
    let (tc, queue) = tc_of(g as usize % QUEUES_PER_PIPE);
    QueuePath {
        subport: pipe / pipes,
        pipe: pipe % pipes,
        tc: tc as u32,
        queue: queue as u32,
    }
}

/// Files arrival `a` in mbuf `i` of `burst`.
#[inline]
fn fill<'p>(port: &SchedPort<'p>, burst: &mut Burst<'p>, i: usize, a: Arrival, pipes: u32) {
    burst.set_len(i, a.len);
    port.write(burst, i, path(a.queue, pipes));
}

/// The global queue of mbuf `i` of `burst`.
fn queue_of(port: &SchedPort<'_>, burst: &Burst<'_>, i: usize, pipes: u32) -> usize {
    let p = port.path(burst, i);
    let (tc, q) = (p.tc as usize, p.queue as usize);
    (p.subport * pipes + p.pipe) as usize * QUEUES_PER_PIPE + tc + q
}

/// The steady-state loop of [`throughput`].
struct Refill<'a> {
    stream: &'a mut Stream,
    pipes: u32,
    drops: &'a mut u64,
    queued: &'a mut usize,
}

impl Refill<'_> {
    /// Dequeues bursts of up to 32 and enqueues as many new packets in the same
    /// mbufs until `packets` were sent; returns how many were.
    fn run<'p>(&mut self, port: &mut SchedPort<'p>, burst: &mut Burst<'p>, packets: u64) -> u64 {
        let mut sent = 0u64;
        while sent < packets && *self.queued > 0 {
            let got = port.dequeue(burst, BURST);
            for i in 0..got {
                fill(port, burst, i, self.stream.next_arrival(), self.pipes);
            }
            let accepted = port.enqueue(burst);
            *self.drops += (got - accepted) as u64;
            *self.queued -= got - accepted;
            sent += got as u64;
        }
        sent
    }
}

/// As [`super::eiffel::throughput`], through rte_sched: dequeued mbufs are
/// refilled from the stream and enqueued again, so the backlog stays put and
/// the mempool is touched only when a queue drops.
pub fn throughput(
    h: &Hierarchy,
    subports: u32,
    pipes: u32,
    run: Run,
) -> Result<Outcome, BenchError> {
    with_port(h, subports, pipes, run.backlog, |port| {
        let (cpu, wall, huge_bytes) = super::repeat(port, run);
        Outcome {
            ns_per_packet: cpu,
            wall_ns_per_packet: wall,
            drops: port.drops(),
            huge_bytes,
        }
    })
}

/// rte_sched's port of a throughput measurement, filled and warmed up.
struct Bench<'a, 'p> {
    port: SchedPort<'p>,
    out: Burst<'p>,
    state: Refill<'a>,
}

impl Repeat for Bench<'_, '_> {
    fn rep(&mut self, packets: u64) -> (f64, f64) {
        super::timed(|| self.state.run(&mut self.port, &mut self.out, packets))
    }

    fn drops(&self) -> u64 {
        *self.state.drops
    }
}

/// Builds rte_sched's port of `subports` x `pipes` of `h` with `backlog`
/// packets queued, runs one warm-up pass of `backlog` packets, and hands it to
/// `f`: each [`Repeat::rep`] times one repetition.
pub fn with_port<R>(
    h: &Hierarchy,
    subports: u32,
    pipes: u32,
    backlog: usize,
    f: impl FnOnce(&mut dyn Repeat) -> R,
) -> Result<R, BenchError> {
    let eal = eal(EAL_MEMORY_MB)?;
    let queues = Hierarchy::queues(subports, pipes);
    let pool = Mempool::new(eal, (backlog + 4 * BURST) as u32)?;
    let mut port = SchedPort::new(&pool, &port_config(h, subports, pipes))?;
    let mut stream = Stream::new(queues, super::STREAM_LEN);
    let mut drops = 0u64;
    let mut queued = 0usize;
    let mut burst = Burst::new();
    let mut left = backlog;
    while left > 0 {
        let n = left.min(eiffel_dpdk::MAX_BURST);
        pool.alloc(&mut burst, n)?;
        for i in 0..n {
            fill(&port, &mut burst, i, stream.next_arrival(), pipes);
        }
        let accepted = port.enqueue(&mut burst);
        queued += accepted;
        drops += (n - accepted) as u64;
        left -= n;
    }
    // Mbufs dequeued are refilled in `out` and handed back to the port.
    let mut bench = Bench {
        port,
        out: Burst::new(),
        state: Refill {
            stream: &mut stream,
            pipes,
            drops: &mut drops,
            queued: &mut queued,
        },
    };
    // The warm-up calls the loop directly, as Eiffel's does: through `rep` it
    // would run inside `timed`, which profilers isolate as the timed loops.
    bench
        .state
        .run(&mut bench.port, &mut bench.out, backlog as u64);
    Ok(f(&mut bench))
}

/// As [`super::eiffel::shares`], through rte_sched on the same virtual
/// clock: its timestamp counter ([`VirtualTsc`], in this thread only) reads
/// the step's time at the frequency EAL measured, from before the port is
/// configured (rte_sched adds the bytes it sends on top, as the port's byte
/// clock does for Eiffel).
pub fn shares(h: &Hierarchy, window: Window) -> Result<Served, BenchError> {
    let eal = eal(EAL_MEMORY_MB)?;
    let hz = u128::from(eal.tsc_hz());
    let origin: u64 = 1 << 32;
    let tsc = VirtualTsc::begin(origin)?;
    let at = |elapsed: Duration| origin + (elapsed.as_nanos() * hz / 1_000_000_000) as u64;
    let pipes = h.profiles.len() as u32;
    let queues = Hierarchy::queues(1, pipes);
    let held = queues * usize::from(*h.qsize.iter().max().unwrap_or(&64));
    let pool = Mempool::new(eal, (held + 4 * BURST) as u32)?;
    let mut port = SchedPort::new(&pool, &port_config(h, 1, pipes))?;
    let mut stream = Stream::new(queues, super::STREAM_LEN);
    let mut served = Served::new(queues);
    let mut burst = Burst::new();
    let mut out = Burst::new();
    for elapsed in super::steps(window) {
        tsc.set(at(elapsed));
        for _ in 0..super::bursts_due(super::STEP) {
            pool.alloc(&mut burst, BURST)?;
            for i in 0..BURST {
                fill(&port, &mut burst, i, stream.next_arrival(), pipes);
            }
            port.enqueue(&mut burst);
        }
        // Bursts until one comes back empty: rte_sched found nothing eligible.
        let weight = window.weight(elapsed);
        while port.dequeue(&mut out, BURST) > 0 {
            for i in 0..out.len() {
                served.add(queue_of(&port, &out, i, pipes), out.pkt_len(i), weight);
            }
            out.free();
        }
    }
    drop(port);
    drop(tsc);
    Ok(served)
}
