//! Measurements of a workload run: per flow group and per leaf, throughput,
//! latency distributions, drops by reason, flow completion times, and rates over
//! time.
//!
//! [`Metrics`] is an [`Observer`]. A packet's latency is its sojourn time, from its
//! arrival to the end of its transmission on the link. A finite flow completes when
//! its last byte has left the link; its flow completion time (FCT) counts from the
//! flow's start. Latencies and FCTs go into HDR histograms (3 significant digits,
//! 1 ns to one hour; longer values are recorded as one hour). Rates over time are
//! bytes per leaf per time bin, attributed to the bin where the transmission
//! starts.

use eiffel_sched::{DropCounts, DropReason, Nanos, Packet};
use hdrhistogram::Histogram;

use crate::link::{Link, Ticks};
use crate::run::Observer;
use crate::workload::Workload;

/// Largest latency or FCT recorded exactly: one hour.
pub const MAX_RECORDED: Nanos = 3_600_000_000_000;

/// A latency histogram: 1 ns to [`MAX_RECORDED`], 3 significant digits.
#[must_use]
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_RECORDED, 3).expect("valid bounds")
}

/// What happened to one flow group's packets.
#[derive(Clone, Debug)]
pub struct GroupStats {
    /// Packets offered.
    pub offered: u64,
    /// Bytes offered.
    pub offered_bytes: u64,
    /// Packets sent.
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Drops by reason.
    pub drops: DropCounts,
    /// Sojourn times of the sent packets, ns.
    pub latency: Histogram<u64>,
    /// Completion times of the finished flows, ns.
    pub fct: Histogram<u64>,
    /// Finite flows in the group.
    pub finite_flows: u64,
}

/// What one leaf sent.
#[derive(Clone, Debug)]
pub struct LeafStats {
    /// Packets sent.
    pub sent: u64,
    /// Bytes sent.
    pub sent_bytes: u64,
    /// Sojourn times, ns.
    pub latency: Histogram<u64>,
    /// Bytes whose transmission started in each time bin.
    pub series: Vec<u64>,
}

/// Collects [`GroupStats`] per flow group and [`LeafStats`] per leaf.
pub struct Metrics {
    link: Link,
    /// Group of each workload flow.
    group_of: Vec<u32>,
    /// Start of each workload flow.
    start_of: Vec<Nanos>,
    /// Per group.
    pub groups: Vec<GroupStats>,
    /// Per leaf, indexed by the leaf's class id.
    pub leaves: Vec<LeafStats>,
    /// Width of a time bin.
    pub bin: Nanos,
    sent_total: u64,
    progress: Option<Box<dyn FnMut(Nanos)>>,
}

impl core::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Metrics")
            .field("groups", &self.groups.len())
            .field("leaves", &self.leaves.len())
            .field("bin", &self.bin)
            .finish_non_exhaustive()
    }
}

/// Packets sent between two progress reports.
const PROGRESS_EVERY: u64 = 1 << 14;

impl Metrics {
    /// Metrics for `workload` on `link`, with `leaves` leaf ids (class ids
    /// `0..leaves`) and rates over `duration` in `bins` time bins.
    #[must_use]
    pub fn new(
        workload: &Workload,
        link: Link,
        leaves: usize,
        duration: Nanos,
        bins: usize,
    ) -> Self {
        let bins = bins.max(1);
        let mut group_of = Vec::with_capacity(workload.flows());
        let mut start_of = Vec::with_capacity(workload.flows());
        for (_, g, k) in workload.each_flow() {
            group_of.push(g as u32);
            start_of.push(workload.groups[g].flow_start(k));
        }
        let groups = workload
            .groups
            .iter()
            .map(|g| GroupStats {
                offered: 0,
                offered_bytes: 0,
                sent: 0,
                sent_bytes: 0,
                drops: DropCounts::default(),
                latency: histogram(),
                fct: histogram(),
                finite_flows: if g.flow_sizes.is_empty() {
                    0
                } else {
                    u64::from(g.count)
                },
            })
            .collect();
        let leaves = (0..leaves)
            .map(|_| LeafStats {
                sent: 0,
                sent_bytes: 0,
                latency: histogram(),
                series: vec![0; bins],
            })
            .collect();
        Metrics {
            link,
            group_of,
            start_of,
            groups,
            leaves,
            bin: duration.div_ceil(bins as u64).max(1),
            sent_total: 0,
            progress: None,
        }
    }

    /// Calls `report(now)` every few thousand packets sent.
    pub fn on_progress(&mut self, report: impl FnMut(Nanos) + 'static) {
        self.progress = Some(Box::new(report));
    }

    /// Packets sent so far.
    #[must_use]
    pub fn sent(&self) -> u64 {
        self.sent_total
    }
}

impl<S: ?Sized> Observer<S> for Metrics {
    fn on_arrival(&mut self, pkt: &Packet, _at: Ticks) {
        let g = &mut self.groups[self.group_of[pkt.buffer as usize] as usize];
        g.offered += 1;
        g.offered_bytes += u64::from(pkt.len);
    }

    fn on_drop(&mut self, pkt: &Packet, reason: DropReason, _at: Ticks) {
        let g = &mut self.groups[self.group_of[pkt.buffer as usize] as usize];
        g.drops.packets[reason.index()] += 1;
        g.drops.bytes[reason.index()] += u64::from(pkt.len);
    }

    fn on_sent(&mut self, _sched: &S, pkt: &Packet, start: Ticks, end: Ticks) {
        let flow = pkt.buffer as usize;
        let done = self.link.nanos_floor(end);
        let latency = done.saturating_sub(pkt.arrival).max(1);
        let g = &mut self.groups[self.group_of[flow] as usize];
        g.sent += 1;
        g.sent_bytes += u64::from(pkt.len);
        g.latency.saturating_record(latency);
        if pkt.remaining == u64::from(pkt.len) {
            let fct = done.saturating_sub(self.start_of[flow]).max(1);
            g.fct.saturating_record(fct);
        }
        if let Some(leaf) = self.leaves.get_mut(pkt.class as usize) {
            leaf.sent += 1;
            leaf.sent_bytes += u64::from(pkt.len);
            leaf.latency.saturating_record(latency);
            let bin = (self.link.nanos_floor(start) / self.bin) as usize;
            if let Some(b) = leaf.series.get_mut(bin) {
                *b += u64::from(pkt.len);
            }
        }
        self.sent_total += 1;
        if self.sent_total % PROGRESS_EVERY == 0 {
            if let Some(p) = &mut self.progress {
                p(self.link.nanos_floor(start));
            }
        }
    }
}
