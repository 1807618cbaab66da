//! Where scheduled packets go: the dispatchers' [`Transmit`] trait and two sinks.
//!
//! A dispatcher (or the arbiter itself, when dispatch is inline) hands each batch of
//! packets the arbiter released to a `Transmit`. Live interfaces implement it in
//! `eiffel-net`; benchmarks and tests use [`NoopSink`] and [`CountingSink`].

use crate::sync::{Arc, AtomicU64, Ordering};
use eiffel_sched::{Nanos, Packet};

/// The next stage after the scheduler: a NIC queue, a socket, a counter.
pub trait Transmit: Send {
    /// Sends `batch`, in order. `now` is the runtime's clock read when the batch
    /// is handed over, never earlier than any packet's arrival stamped on that
    /// clock (for latency measurement).
    fn transmit(&mut self, batch: &[Packet], now: Nanos);
}

/// Discards every packet: isolates the scheduler's own cost (section 6.4.1).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoopSink;

impl Transmit for NoopSink {
    #[inline]
    fn transmit(&mut self, _batch: &[Packet], _now: Nanos) {}
}

/// Counters a [`CountingSink`] updates, readable from any thread while it runs.
#[derive(Debug)]
pub struct SinkCounters {
    packets: AtomicU64,
    bytes: AtomicU64,
    /// Packets per flow, for flows `0..flows.len()`; other flows only count in the
    /// totals.
    flows: Box<[AtomicU64]>,
}

impl SinkCounters {
    /// Packets transmitted.
    #[must_use]
    pub fn packets(&self) -> u64 {
        self.packets.load(Ordering::Relaxed)
    }

    /// Bytes transmitted.
    #[must_use]
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// Packets transmitted for `flow` (0 for flows not tracked).
    #[must_use]
    pub fn flow(&self, flow: u32) -> u64 {
        self.flows
            .get(flow as usize)
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }
}

/// Counts packets and bytes, in total and per flow. Counts are published once per
/// batch, so reading them costs the sender nothing per packet.
#[derive(Debug)]
pub struct CountingSink {
    counters: Arc<SinkCounters>,
    /// Per-flow counts of the batch being processed.
    scratch: Vec<u64>,
}

impl CountingSink {
    /// A sink tracking flows `0..flows` individually.
    #[must_use]
    pub fn new(flows: usize) -> Self {
        CountingSink {
            counters: Arc::new(SinkCounters {
                packets: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
                flows: (0..flows).map(|_| AtomicU64::new(0)).collect(),
            }),
            scratch: vec![0; flows],
        }
    }

    /// The live counters.
    #[must_use]
    pub fn counters(&self) -> Arc<SinkCounters> {
        Arc::clone(&self.counters)
    }
}

/// `counter += n` for a counter with a single writer: a plain load and store, no
/// read-modify-write.
#[inline]
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(counter.load(Ordering::Relaxed) + n, Ordering::Relaxed);
}

impl Transmit for CountingSink {
    fn transmit(&mut self, batch: &[Packet], _now: Nanos) {
        let mut bytes = 0;
        for p in batch {
            bytes += u64::from(p.len);
            if let Some(c) = self.scratch.get_mut(p.flow as usize) {
                *c += 1;
            }
        }
        for (i, c) in self.scratch.iter_mut().enumerate() {
            if *c > 0 {
                bump(&self.counters.flows[i], *c);
                *c = 0;
            }
        }
        bump(&self.counters.packets, batch.len() as u64);
        bump(&self.counters.bytes, bytes);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_totals_and_tracked_flows() {
        let mut sink = CountingSink::new(2);
        let c = sink.counters();
        sink.transmit(
            &[Packet::new(0, 60), Packet::new(1, 100), Packet::new(5, 40)],
            0,
        );
        sink.transmit(&[Packet::new(1, 10)], 0);
        assert_eq!((c.packets(), c.bytes()), (4, 210));
        assert_eq!((c.flow(0), c.flow(1), c.flow(5)), (1, 2, 0));
        NoopSink.transmit(&[Packet::new(0, 1)], 0);
    }
}
