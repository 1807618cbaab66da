//! Statistics assembly: readings of the policy tree taken on the arbiter, the
//! per-node rates between two readings, and the [`Snapshot`] built from them and
//! every thread's counters (the wiring that starts the threads is the parent
//! module's).

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use eiffel_pspat::{LiveStats, Report};
use eiffel_sched::{Backlog, Counters, DropReason, PolicyTree, Scheduler};

use super::egress::Egress;
use super::latency::{LatencyReading, LATENCY_BUCKETS};
use super::live::LiveTree;
use super::stats::{
    self, put, Accounting, LatencyStats, NodeStats, PoolStats, SchedulerStats, Snapshot,
};
use super::{lock, PolicyState, Side};

/// Per-node facts that change only with the policy.
#[derive(Clone, Debug)]
pub(super) struct NodeInfo {
    path: String,
    parent: Option<usize>,
    name: String,
    depth: usize,
    leaf: bool,
    discipline: String,
    weight: u32,
    priority: u32,
    limit_bps: Option<u64>,
}

/// The facts of every node of `tree`.
pub(super) fn node_info(tree: &PolicyTree) -> Vec<NodeInfo> {
    tree.nodes()
        .map(|v| NodeInfo {
            path: v.path.clone(),
            parent: v.spec.parent,
            name: v.spec.name.clone(),
            depth: v.depth,
            leaf: v.is_leaf,
            discipline: v.discipline.clone().unwrap_or_else(|| "fifo".into()),
            weight: v.spec.weight,
            priority: v.spec.priority,
            limit_bps: v.spec.limit.map(|l| l.rate.bps()),
        })
        .collect()
}

/// What the arbiter reports of one node.
#[derive(Clone, Copy, Debug, Default)]
struct NodeSample {
    counters: Counters,
    backlog: Backlog,
    throttled: bool,
}

/// One reading of the tree, taken on the arbiter.
#[derive(Clone, Debug, Default)]
pub(super) struct TreeSample {
    nodes: Vec<NodeSample>,
    backlog: Backlog,
    drops: [u64; DropReason::COUNT],
}

/// A reading of `tree`.
pub(super) fn sample_tree(tree: &PolicyTree) -> TreeSample {
    TreeSample {
        nodes: tree
            .nodes()
            .map(|v| NodeSample {
                counters: v.counters,
                backlog: v.backlog,
                throttled: v.throttled,
            })
            .collect(),
        backlog: tree.backlog(),
        drops: tree.counters().dropped.packets,
    }
}

/// Node rates over the last sampling interval.
#[derive(Debug, Default)]
pub(super) struct Rates {
    /// When and what was read last (bytes, packets per node).
    last: Option<(Instant, Vec<(u64, u64)>)>,
    /// Bits/s and packets/s per node.
    rates: Vec<(f64, f64)>,
    interval: Duration,
    /// Arbiter decisions at the last reading (no change: nothing moved).
    decisions: u64,
}

impl Rates {
    /// When the arbiter made no decision since the last reading: every rate is
    /// zero over the interval up to `now`, and no new reading is needed.
    pub(super) fn idle(&mut self, now: Instant, decisions: u64) -> bool {
        if decisions != self.decisions {
            return false;
        }
        let Some((at, _)) = &mut self.last else {
            return false;
        };
        self.interval = now - *at;
        *at = now;
        self.rates.iter_mut().for_each(|x| *x = (0.0, 0.0));
        true
    }

    /// The rates since the last reading, from `sample` taken at `now`.
    pub(super) fn update(&mut self, now: Instant, decisions: u64, sample: &TreeSample) {
        let counts: Vec<(u64, u64)> = sample
            .nodes
            .iter()
            .map(|n| (n.counters.dequeued_bytes, n.counters.dequeued))
            .collect();
        self.rates = match &self.last {
            Some((at, prev)) if prev.len() == counts.len() => {
                let secs = (now - *at).as_secs_f64().max(1e-9);
                self.interval = now - *at;
                counts
                    .iter()
                    .zip(prev)
                    .map(|(c, p)| {
                        (
                            c.0.saturating_sub(p.0) as f64 * 8.0 / secs,
                            c.1.saturating_sub(p.1) as f64 / secs,
                        )
                    })
                    .collect()
            }
            _ => vec![(0.0, 0.0); counts.len()],
        };
        self.last = Some((now, counts));
        self.decisions = decisions;
    }
}

/// Every node's latency histogram: the sum of its leaves'.
fn node_latency(nodes: &[NodeInfo], h: &LatencyReading) -> Vec<LatencyStats> {
    let mut out = vec![([0u64; LATENCY_BUCKETS], 0u64); nodes.len()];
    for (leaf, _) in nodes.iter().enumerate().filter(|(_, n)| n.leaf) {
        let (mut counts, mut sum) = ([0u64; LATENCY_BUCKETS], 0u64);
        h.add_to(leaf, &mut counts, &mut sum);
        let mut at = Some(leaf);
        while let Some(n) = at.filter(|&n| n < nodes.len()) {
            out[n].0.iter_mut().zip(&counts).for_each(|(a, b)| *a += b);
            out[n].1 += sum;
            at = nodes[n].parent;
        }
    }
    out.into_iter()
        .map(|(counts, sum_ns)| LatencyStats {
            counts: counts.to_vec(),
            sum_ns,
        })
        .collect()
}

/// Every node's counters and rates.
fn node_stats(
    policy: &PolicyState,
    rates: &Rates,
    sample: &TreeSample,
    latency: &LatencyReading,
) -> Vec<NodeStats> {
    let mut latency = node_latency(&policy.nodes, latency).into_iter();
    policy
        .nodes
        .iter()
        .zip(&sample.nodes)
        .enumerate()
        .map(|(i, (info, s))| {
            let mut drops = BTreeMap::new();
            for r in DropReason::ALL {
                put(&mut drops, r.name(), s.counters.dropped.get(r));
            }
            let (rate_bps, rate_pps) = rates.rates.get(i).copied().unwrap_or((0.0, 0.0));
            NodeStats {
                path: info.path.clone(),
                name: info.name.clone(),
                depth: info.depth,
                leaf: info.leaf,
                discipline: info.discipline.clone(),
                weight: info.weight,
                priority: info.priority,
                limit_bps: info.limit_bps,
                packets: s.counters.dequeued,
                bytes: s.counters.dequeued_bytes,
                enqueued: s.counters.enqueued,
                drops,
                backlog_packets: s.backlog.packets,
                backlog_bytes: s.backlog.bytes,
                throttled: s.throttled,
                rate_bps,
                rate_pps,
                latency: latency.next().unwrap_or_default(),
            }
        })
        .collect()
}

/// The scheduler's counters: the runtime's live ones, or its final report's.
fn scheduler_stats(
    policy: &PolicyState,
    sample: &TreeSample,
    live: LiveStats,
    last: Option<&Report<LiveTree, Egress>>,
) -> SchedulerStats {
    let mut drops = BTreeMap::new();
    let (received, released, dropped) = match last {
        Some(report) => {
            let totals = report.totals();
            for r in DropReason::ALL {
                put(&mut drops, r.name(), totals.dropped.get(r));
            }
            (totals.received, totals.delivered, totals.dropped.total())
        }
        None => {
            for r in DropReason::ALL {
                let n = policy.retired_drops[r.index()] + sample.drops[r.index()];
                put(&mut drops, r.name(), n);
            }
            (live.received, live.decisions, live.dropped)
        }
    };
    SchedulerStats {
        received,
        released,
        dropped,
        drops,
        backlog_packets: sample.backlog.packets,
        backlog_bytes: sample.backlog.bytes,
        rounds: live.rounds,
        sleeps: live.sleeps,
        timer_wakeups: live.timer_wakeups,
        notified_wakeups: live.notified_wakeups,
        link_idle_ns: live.link_idle_ns,
        link_held_ns: live.link_held_ns,
    }
}

/// `ns` as a `u64`, saturating.
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Side {
    /// The latency histograms now: read before the tree is sampled (see
    /// [`super::latency::LatencyHistograms::read`]).
    pub(super) fn read_latency(&self) -> LatencyReading {
        let positions = lock(&self.policy).nodes.len();
        self.egress_counters.latency.read(positions)
    }

    /// The snapshot of `sample`, `latency` (read before it) and every counter;
    /// `last` is the runtime's final report once it has stopped.
    pub(super) fn assemble(
        &self,
        sample: &TreeSample,
        latency: &LatencyReading,
        live: LiveStats,
        last: Option<&Report<LiveTree, Egress>>,
    ) -> Snapshot {
        let policy = lock(&self.policy);
        let rates = lock(&self.rates);
        let scheduler = scheduler_stats(&policy, sample, live, last);
        let ingress = self.ingress_total();
        let egress = self.egress_counters.stats();
        let mut pool = PoolStats::default();
        for p in &self.pools {
            let s = p.stats();
            pool.slots += s.slots;
            // The receive queues' first (MTU) pool; GSO mode's large pools add
            // their slots.
            if pool.slot_size == 0 {
                pool.slot_size = s.slot_size;
            }
            pool.in_use += s.in_use;
        }
        let ingress_dropped: u64 = ingress.drops.values().sum();
        let egress_dropped: u64 = egress.drops.values().sum();
        let dropped_all = ingress_dropped + scheduler.dropped + egress_dropped;
        let accounting = Accounting {
            received: ingress.received,
            transmitted: egress.sent,
            dropped: dropped_all,
            queued: ingress
                .received
                .saturating_sub(egress.sent)
                .saturating_sub(dropped_all),
        };
        Snapshot {
            version: stats::SNAPSHOT_VERSION,
            policy: policy.name.clone(),
            input: self.input.clone(),
            output: self.output.clone(),
            uptime_ns: nanos(self.started.elapsed()),
            link_rate_bps: self.link_rate_bps.load(Ordering::Relaxed),
            rate_interval_ns: nanos(rates.interval),
            nodes: node_stats(&policy, &rates, sample, latency),
            ingress,
            scheduler,
            egress,
            reverse: self.reverse_counters.stats(),
            classifier: self.classifier_total(),
            pool,
            reloads: policy.reloads.clone(),
            accounting,
            io: self.io.to_string(),
            offload: self.offload.to_string(),
        }
    }
}
