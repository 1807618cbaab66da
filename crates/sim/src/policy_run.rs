//! Runs a workload through a policy tree over an emulated link in virtual time:
//! the engine behind `eiffel run` (whose policy and workload files
//! `eiffel-policy` reads).
//!
//! Each workload flow is classified once, before the run, by its workload flow id
//! and class (the policy's rules); flows reaching the same leaf get consecutive
//! flow ids inside it (in workload order), which is what a per-flow leaf indexes.
//! The run is [`drive`] with the workload's lazy generator and [`Metrics`]: time
//! jumps from event to event (arrivals, link completions, and the tree's
//! `next_ready` release times), and the same tree, workload and seed always give
//! the same report.
//!
//! A run stops at its duration: packets still queued then are reported as
//! `queued`, so for the tree and every node `enqueued = dequeued + dropped +
//! queued`. Throughputs are bytes dequeued over the duration.

use std::collections::BTreeMap;

use eiffel_sched::{ClassId, Counters, Nanos, PolicyTree, Scheduler};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::metrics::{histogram, GroupStats};
use crate::{drive, Generator, Link, Metrics, Observer, Route, Source, Workload};

/// How to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Simulated time.
    pub duration: Nanos,
    /// Link rate, bits per second.
    pub link_rate: u64,
    /// Time bins of the rates-over-time series.
    pub bins: usize,
    /// Generator seed.
    pub seed: u64,
}

/// What a run needs to know of a workload besides its flows: how long it runs,
/// over what link, with which seed (a workload file says all three).
pub trait RunSettings {
    /// Simulated time.
    fn duration(&self) -> Nanos;
    /// Link rate, bits per second.
    fn link_rate(&self) -> u64;
    /// Generator seed.
    fn seed(&self) -> u64;
}

impl RunOptions {
    /// The workload's own duration, link rate and seed, with 100 bins.
    #[must_use]
    pub fn from_workload(w: &impl RunSettings) -> Self {
        RunOptions {
            duration: w.duration(),
            link_rate: w.link_rate(),
            bins: 100,
            seed: w.seed(),
        }
    }
}

/// Latency percentiles in ns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Median.
    pub p50_latency_ns: u64,
    /// 99th percentile.
    pub p99_latency_ns: u64,
    /// 99.9th percentile.
    pub p999_latency_ns: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            p50_latency_ns: h.value_at_quantile(0.5),
            p99_latency_ns: h.value_at_quantile(0.99),
            p999_latency_ns: h.value_at_quantile(0.999),
        }
    }
}

/// One node of the tree after the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NodeReport {
    /// Names from the root, joined by `/`.
    pub path: String,
    /// Depth (root 0).
    pub depth: usize,
    /// Discipline ordering its units; `fifo` for FIFO leaves (as the table says).
    pub discipline: String,
    /// Weight at its parent.
    pub weight: u32,
    /// Bits per second dequeued over the run.
    pub throughput_bps: f64,
    /// Fraction of its parent's throughput (`None` for the root).
    pub share_of_parent: Option<f64>,
    /// Configured rate limit, if any.
    pub limit_bps: Option<u64>,
    /// Configured burst of the limit.
    pub burst_bytes: Option<u64>,
    /// Pacing rate of every flow of a per-flow leaf, if any.
    pub flow_limit_bps: Option<u64>,
    /// Packets that entered its subtree (accepted or not).
    pub enqueued: u64,
    /// Packets that left it.
    pub dequeued: u64,
    /// Packets dropped in it.
    pub dropped: u64,
    /// Packets still queued in it at the end.
    pub queued: u64,
    /// Drops by reason.
    pub drops: BTreeMap<String, u64>,
    /// Ranks its queues could not place in rank order: clamped to an end of a
    /// queue's window, or below a window and served first. Their packets may have
    /// left out of rank order; a non-zero count asks for a wider window (more
    /// buckets or a coarser granularity).
    pub out_of_window: u64,
    /// Sojourn times of the packets it sent.
    #[serde(flatten)]
    pub latency: Latency,
}

/// Flow completion times of a group's finite flows.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Fct {
    /// Finite flows in the group.
    pub flows: u64,
    /// Flows that completed within the run.
    pub completed: u64,
    /// Median FCT.
    pub p50_ns: u64,
    /// 99th percentile FCT.
    pub p99_ns: u64,
    /// Mean FCT.
    pub mean_ns: f64,
}

/// One flow group of the workload after the run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FlowReport {
    /// The group's name.
    pub name: String,
    /// Flows in the group.
    pub count: u32,
    /// Their class.
    pub class: u32,
    /// Leaves the group's flows were classified to.
    pub leaves: Vec<String>,
    /// Bits per second offered.
    pub offered_bps: f64,
    /// Bits per second sent.
    pub throughput_bps: f64,
    /// Packets offered.
    pub offered: u64,
    /// Packets sent.
    pub sent: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Drops by reason.
    pub drops: BTreeMap<String, u64>,
    /// Sojourn times.
    #[serde(flatten)]
    pub latency: Latency,
    /// Completion times, for finite flows.
    pub fct: Option<Fct>,
}

/// Packet totals of the tree: `enqueued == dequeued + dropped + queued`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Totals {
    /// Packets offered.
    pub enqueued: u64,
    /// Packets sent.
    pub dequeued: u64,
    /// Packets dropped.
    pub dropped: u64,
    /// Packets queued at the end.
    pub queued: u64,
}

/// Rates over time of one leaf.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LeafSeries {
    /// The leaf's path.
    pub path: String,
    /// Bits per second in each bin.
    pub rates_bps: Vec<f64>,
}

/// The result of [`run_tree`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunReport {
    /// The policy's file name.
    pub policy: String,
    /// Link rate.
    pub link_rate_bps: u64,
    /// Simulated time.
    pub duration_ns: u64,
    /// Generator seed.
    pub seed: u64,
    /// The shaper's precision.
    pub shaper_granularity_ns: u64,
    /// Every node, in policy order.
    pub nodes: Vec<NodeReport>,
    /// Every flow group, in workload order.
    pub flows: Vec<FlowReport>,
    /// Tree totals.
    pub totals: Totals,
    /// Width of a time bin of `series`.
    pub bin_ns: u64,
    /// Rates over time per leaf.
    pub series: Vec<LeafSeries>,
}

/// Routes every flow of `workload` to the leaf `classify` gives its flow id and
/// class, numbering the flows of each leaf from 0.
#[must_use]
pub fn routes(workload: &Workload, mut classify: impl FnMut(u32, u32) -> ClassId) -> Vec<Route> {
    let mut next_flow: BTreeMap<u32, u32> = BTreeMap::new();
    workload
        .each_flow()
        .map(|(i, g, _)| {
            let leaf = classify(i, workload.groups[g].class);
            let slot = next_flow.entry(leaf).or_insert(0);
            let flow = *slot;
            *slot += 1;
            Route { leaf, flow }
        })
        .collect()
}

/// Runs `workload` through `tree` (of the policy called `policy`), each flow
/// routed by `routes` (see the module docs); `progress` hears the simulated time
/// every few thousand packets and `extra` observes every packet too (tests check
/// definitions packet by packet with it).
pub fn run_tree<O: Observer<PolicyTree>>(
    policy: &str,
    tree: PolicyTree,
    workload: &Workload,
    routes: &[Route],
    opts: RunOptions,
    progress: impl FnMut(Nanos) + 'static,
    extra: &mut O,
) -> RunReport {
    let mut workload = workload.clone();
    workload.seed = opts.seed;
    let mut source = Generator::new(&workload, routes, opts.link_rate.max(1));
    let run = SourceRun {
        policy,
        workload: &workload,
        routes,
        opts,
    };
    run_tree_source(&run, tree, &mut source, progress, extra)
}

/// A run whose packets come from any [`Source`] (a capture, say) rather than
/// the workload's generator: `workload` names the flow groups the report
/// shows and `routes` the leaf of each of its flows; every packet of `source`
/// carries its workload flow id in `buffer`.
#[derive(Clone, Copy, Debug)]
pub struct SourceRun<'a> {
    /// The policy's name, for the report.
    pub policy: &'a str,
    /// The flow groups and flows the packets belong to.
    pub workload: &'a Workload,
    /// The leaf and leaf flow id of each workload flow.
    pub routes: &'a [Route],
    /// Duration, link rate, bins; `seed` is only reported.
    pub opts: RunOptions,
}

/// Runs the packets of `source` through `tree` on the emulated link (see
/// [`SourceRun`]); `progress` and `extra` as in [`run_tree`].
pub fn run_tree_source<S: Source + ?Sized, O: Observer<PolicyTree>>(
    run: &SourceRun<'_>,
    mut tree: PolicyTree,
    source: &mut S,
    progress: impl FnMut(Nanos) + 'static,
    extra: &mut O,
) -> RunReport {
    let opts = run.opts;
    let link = Link::new(opts.link_rate.max(1));
    let mut metrics = Metrics::new(run.workload, link, tree.len(), opts.duration, opts.bins);
    metrics.on_progress(progress);
    let mut observers = (metrics, extra);
    drive(&mut tree, link, source, Some(opts.duration), &mut observers);
    let metrics = observers.0;
    RunReport {
        policy: run.policy.to_string(),
        link_rate_bps: opts.link_rate,
        duration_ns: opts.duration,
        seed: opts.seed,
        shaper_granularity_ns: tree.shaper_granularity(),
        nodes: node_reports(&tree, &metrics, opts),
        flows: flow_reports(&tree, run.workload, run.routes, &metrics, opts),
        totals: totals(&tree),
        bin_ns: metrics.bin,
        series: leaf_series(&tree, &metrics),
    }
}

fn drops(c: &Counters) -> BTreeMap<String, u64> {
    c.dropped
        .nonzero()
        .map(|(r, n)| (r.to_string(), n))
        .collect()
}

/// Each node's latency: the merged histograms of the leaves below it.
fn node_latency(tree: &PolicyTree, m: &Metrics) -> Vec<Histogram<u64>> {
    let spec = tree.spec();
    let mut latency: Vec<Histogram<u64>> = (0..tree.len()).map(|_| histogram()).collect();
    for leaf in (0..tree.len()).filter(|&i| tree.node(i).is_leaf) {
        let mut cur = Some(leaf);
        while let Some(n) = cur {
            latency[n]
                .add(&m.leaves[leaf].latency)
                .expect("histograms of equal bounds");
            cur = spec.nodes[n].parent;
        }
    }
    latency
}

/// Every node after the run, in policy order.
fn node_reports(tree: &PolicyTree, m: &Metrics, opts: RunOptions) -> Vec<NodeReport> {
    let secs = opts.duration as f64 / 1e9;
    let latency = node_latency(tree, m);
    let throughput: Vec<f64> = tree
        .nodes()
        .map(|v| v.counters.dequeued_bytes as f64 * 8.0 / secs)
        .collect();
    tree.nodes()
        .map(|v| NodeReport {
            path: v.path.clone(),
            depth: v.depth,
            discipline: v.discipline.clone().unwrap_or_else(|| "fifo".into()),
            weight: v.spec.weight,
            throughput_bps: throughput[v.index],
            share_of_parent: v.spec.parent.map(|p| {
                if throughput[p] > 0.0 {
                    throughput[v.index] / throughput[p]
                } else {
                    0.0
                }
            }),
            limit_bps: v.spec.limit.map(|l| l.rate.bps()),
            burst_bytes: v.spec.limit.map(|l| l.burst),
            flow_limit_bps: v
                .spec
                .per_flow
                .and_then(|pf| pf.flow_limit)
                .map(|l| l.rate.bps()),
            enqueued: v.counters.enqueued,
            dequeued: v.counters.dequeued,
            dropped: v.counters.dropped_total(),
            queued: v.backlog.packets,
            drops: drops(&v.counters),
            out_of_window: v
                .queue_stats
                .iter()
                .map(|q| q.clamped_low + q.clamped_high + q.underflow)
                .sum(),
            latency: Latency::of(&latency[v.index]),
        })
        .collect()
}

/// Flow completion times of a group's finite flows, if it has any.
fn fct(s: &GroupStats) -> Option<Fct> {
    let quantile = |q| {
        if s.fct.is_empty() {
            0
        } else {
            s.fct.value_at_quantile(q)
        }
    };
    (s.finite_flows > 0).then(|| Fct {
        flows: s.finite_flows,
        completed: s.fct.len(),
        p50_ns: quantile(0.5),
        p99_ns: quantile(0.99),
        mean_ns: if s.fct.is_empty() { 0.0 } else { s.fct.mean() },
    })
}

/// Every flow group after the run, in workload order.
fn flow_reports(
    tree: &PolicyTree,
    workload: &Workload,
    routes: &[Route],
    m: &Metrics,
    opts: RunOptions,
) -> Vec<FlowReport> {
    let secs = opts.duration as f64 / 1e9;
    let mut first = 0usize;
    workload
        .groups
        .iter()
        .zip(&m.groups)
        .map(|(g, s)| {
            let mut leaves: Vec<String> = routes[first..first + g.count as usize]
                .iter()
                .map(|r| tree.node(r.leaf as usize).path)
                .collect();
            leaves.sort();
            leaves.dedup();
            first += g.count as usize;
            FlowReport {
                name: g.name.clone(),
                count: g.count,
                class: g.class,
                leaves,
                offered_bps: s.offered_bytes as f64 * 8.0 / secs,
                throughput_bps: s.sent_bytes as f64 * 8.0 / secs,
                offered: s.offered,
                sent: s.sent,
                dropped: s.drops.total(),
                drops: s.drops.nonzero().map(|(r, n)| (r.to_string(), n)).collect(),
                latency: Latency::of(&s.latency),
                fct: fct(s),
            }
        })
        .collect()
}

/// The tree's totals at the end.
fn totals(tree: &PolicyTree) -> Totals {
    let c = tree.counters();
    Totals {
        enqueued: c.enqueued,
        dequeued: c.dequeued,
        dropped: c.dropped_total(),
        queued: tree.backlog().packets,
    }
}

/// Rates over time of every leaf.
fn leaf_series(tree: &PolicyTree, m: &Metrics) -> Vec<LeafSeries> {
    (0..tree.len())
        .filter(|&i| tree.node(i).is_leaf)
        .map(|i| LeafSeries {
            path: tree.node(i).path,
            rates_bps: m.leaves[i]
                .series
                .iter()
                .map(|&b| b as f64 * 8e9 / m.bin as f64)
                .collect(),
        })
        .collect()
}
