//! Sojourn-time histograms per leaf, recorded by the dispatcher as it hands
//! each frame to the output ring: the time from the frame's classification on
//! the receive thread to its transmission, on the runtime's clock.
//!
//! The dispatcher is the only writer: a record is a relaxed load and store of
//! two preallocated counters, no lock, no allocation, no read-modify-write
//! instruction. Readers (statistics) load relaxed and may see a record's bucket
//! before its sum; the next reading is consistent again.
//!
//! Buckets are Prometheus-style upper bounds ([`LATENCY_BOUNDS_NS`]) plus one
//! for everything above. Histograms are kept per leaf position in the current
//! tree (node index), for the first [`MAX_LATENCY_NODES`] positions; a node's
//! histogram is the sum of the leaves below it (see the statistics). A reload
//! that renumbers the leaves carries the counts of a position over to the
//! leaf now at that position.

use std::sync::atomic::{AtomicU64, Ordering};

use eiffel_sched::Nanos;

/// Upper bounds of the latency buckets, ns (10 us to 2.5 s).
pub const LATENCY_BOUNDS_NS: [u64; 17] = [
    10_000,
    25_000,
    50_000,
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
];

/// Buckets per histogram: one per bound and one above the last.
pub const LATENCY_BUCKETS: usize = LATENCY_BOUNDS_NS.len() + 1;

/// Leaf positions with a histogram.
pub const MAX_LATENCY_NODES: usize = 1024;

/// One slot per bucket and one for the sum, per leaf position.
const STRIDE: usize = LATENCY_BUCKETS + 1;

/// The histograms of every leaf position (single writer).
#[derive(Debug)]
pub(crate) struct LatencyHistograms {
    /// `STRIDE` counters per position: the buckets, then the sum in ns.
    cells: Box<[AtomicU64]>,
}

impl Default for LatencyHistograms {
    fn default() -> Self {
        LatencyHistograms {
            cells: (0..MAX_LATENCY_NODES * STRIDE)
                .map(|_| AtomicU64::new(0))
                .collect(),
        }
    }
}

/// The bucket of a sojourn time.
fn bucket(ns: Nanos) -> usize {
    LATENCY_BOUNDS_NS.partition_point(|&b| b < ns)
}

/// Adds one to a counter only this thread writes.
fn bump(c: &AtomicU64, by: u64) {
    c.store(
        c.load(Ordering::Relaxed).wrapping_add(by),
        Ordering::Relaxed,
    );
}

impl LatencyHistograms {
    /// Records a sojourn of `ns` at leaf position `leaf`. Only the dispatcher
    /// (one thread) calls it.
    #[inline]
    pub(crate) fn record(&self, leaf: usize, ns: Nanos) {
        if leaf >= MAX_LATENCY_NODES {
            return;
        }
        let base = leaf * STRIDE;
        bump(&self.cells[base + bucket(ns)], 1);
        bump(&self.cells[base + LATENCY_BUCKETS], ns);
    }

    /// The histograms of positions `0..positions` as they are now. A snapshot
    /// reads them before the tree's counters: a packet is counted as sent when
    /// it leaves the tree, before the dispatcher records its sojourn, so no
    /// histogram then holds more packets than its node has sent.
    pub(crate) fn read(&self, positions: usize) -> LatencyReading {
        let n = positions.min(MAX_LATENCY_NODES) * STRIDE;
        LatencyReading(
            self.cells[..n]
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        )
    }
}

/// The histograms as [`LatencyHistograms::read`] found them.
#[derive(Debug)]
pub(crate) struct LatencyReading(Box<[u64]>);

impl LatencyReading {
    /// Adds the histogram of position `leaf` to `counts` and `sum` (nothing for
    /// a position that was not read).
    pub(crate) fn add_to(&self, leaf: usize, counts: &mut [u64; LATENCY_BUCKETS], sum: &mut u64) {
        let Some(cells) = self.0.get(leaf * STRIDE..(leaf + 1) * STRIDE) else {
            return;
        };
        for (c, cell) in counts.iter_mut().zip(cells) {
            *c += cell;
        }
        *sum += cells[LATENCY_BUCKETS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_upper_bounds() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(10_000), 0, "a bound is inclusive");
        assert_eq!(bucket(10_001), 1);
        assert_eq!(bucket(2_500_000_000), LATENCY_BOUNDS_NS.len() - 1);
        assert_eq!(bucket(u64::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn records_add_up() {
        let h = LatencyHistograms::default();
        h.record(3, 20_000);
        h.record(3, 2_000_000);
        h.record(MAX_LATENCY_NODES, 1);
        let reading = h.read(MAX_LATENCY_NODES + 1);
        let (mut counts, mut sum) = ([0; LATENCY_BUCKETS], 0);
        reading.add_to(3, &mut counts, &mut sum);
        assert_eq!(counts.iter().sum::<u64>(), 2);
        assert_eq!((counts[1], counts[7], sum), (1, 1, 2_020_000));
        // A reading is a copy: later records do not change it.
        h.record(3, 20_000);
        let (mut again, mut sum_again) = ([0; LATENCY_BUCKETS], 0);
        reading.add_to(3, &mut again, &mut sum_again);
        assert_eq!((again, sum_again), (counts, sum));
        // Positions beyond those read add nothing.
        let short = h.read(3);
        let (mut none, mut zero) = ([0; LATENCY_BUCKETS], 0);
        short.add_to(3, &mut none, &mut zero);
        assert_eq!((none, zero), ([0; LATENCY_BUCKETS], 0));
    }
}
