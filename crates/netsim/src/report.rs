//! A sweep's report: flow completion times and slowdowns by size class,
//! coflow completion times, observed delays, long-lived goodput and fairness,
//! per-run counters, the busiest ports and sampled queues; as tables and as
//! JSON (`{"results": [...], ...}`).
//!
//! Flows of every seed are pooled before percentiles are taken (nearest rank).
//! `results` covers finite flows of the scheme's transport, by traffic (so a
//! coflow traffic's sub-flows are apart from the background's) and size class;
//! coflows are also in `coflows`, by completion time. A flow that did not
//! complete counts in `flows` but not in the statistics.

use serde::Serialize;

use crate::scenario::{Axis, Metric, Panel, Scenario};
use crate::sim::RunResult;
use crate::sweep::RunKey;
use crate::workload::Workload;

/// Flow completion statistics of one scheme, load and size class.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Traffic the flows came from (coflow sub-flows and incast flows under
    /// their traffic's name).
    pub traffic: String,
    /// Size class (`all` for every flow).
    pub size_class: String,
    /// Flows in the class.
    pub flows: usize,
    /// Flows that completed.
    pub completed: usize,
    /// Mean FCT, ms.
    pub mean_fct_ms: f64,
    /// 99th percentile FCT, ms.
    pub p99_fct_ms: f64,
    /// Mean FCT over ideal FCT.
    pub mean_slowdown: f64,
    /// 99th percentile of the same.
    pub p99_slowdown: f64,
    /// Mean of size over FCT, Mbit/s.
    pub mean_rate_mbps: f64,
}

/// Coflow completion statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CoflowRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Traffic.
    pub traffic: String,
    /// Coflows.
    pub coflows: usize,
    /// Coflows that completed.
    pub completed: usize,
    /// Mean CCT, ms.
    pub mean_cct_ms: f64,
    /// 99th percentile CCT, ms.
    pub p99_cct_ms: f64,
}

/// Delays of one observed flow.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DelayRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Seed.
    pub seed: u64,
    /// Traffic the flow belongs to.
    pub traffic: String,
    /// Flow index.
    pub flow: u32,
    /// Packets received in the measurement window.
    pub packets: u64,
    /// Mean one-way delay, ms.
    pub mean_delay_ms: f64,
    /// Standard deviation, ms.
    pub stddev_delay_ms: f64,
    /// Largest delay, ms.
    pub max_delay_ms: f64,
    /// RFC 3550 jitter, ms.
    pub jitter_ms: f64,
    /// Mean delay per hop, ms.
    pub per_hop_ms: Vec<f64>,
}

/// Long-lived flows of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LongRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Seed.
    pub seed: u64,
    /// Long-lived flows.
    pub flows: usize,
    /// Mean goodput, Mbit/s.
    pub mean_goodput_mbps: f64,
    /// Smallest goodput, Mbit/s.
    pub min_goodput_mbps: f64,
    /// Largest goodput, Mbit/s.
    pub max_goodput_mbps: f64,
    /// Jain's fairness index.
    pub jain: f64,
}

/// Counters of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Seed.
    pub seed: u64,
    /// Flows.
    pub flows: usize,
    /// Flows that completed (finite flows of the scheme's transport).
    pub completed: usize,
    /// Finite flows of the scheme's transport.
    pub finite: usize,
    /// Events processed.
    pub events: u64,
    /// Simulated time, ms.
    pub sim_time_ms: f64,
    /// Packets dropped on arrival at ports.
    pub drops: u64,
    /// pFabric evictions.
    pub evicted: u64,
    /// ECN marks.
    pub marked: u64,
    /// Retransmission timeouts.
    pub timeouts: u64,
    /// Segments retransmitted.
    pub retransmits: u64,
    /// Most packets held at once.
    pub peak_packets: usize,
    /// pFabric ports: dequeues checked against the exact order.
    pub order_checked: u64,
    /// pFabric ports: dequeues that served a flow ranked behind another queued
    /// one (an approximate queue's error, seen by the network).
    pub inversions: u64,
}

/// One of the busiest ports of a run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PortRow {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Seed.
    pub seed: u64,
    /// `from->to`.
    pub port: String,
    /// Fraction of the run the link was sending.
    pub utilization: f64,
    /// Largest queue, KB.
    pub max_queue_kb: f64,
    /// Mean queueing delay, us.
    pub mean_queue_delay_us: f64,
    /// Largest queueing delay, us.
    pub max_queue_delay_us: f64,
    /// Drops on arrival.
    pub drops: u64,
    /// Drops by reason.
    pub drop_reasons: Vec<(String, u64)>,
    /// pFabric evictions.
    pub evicted: u64,
    /// ECN marks.
    pub marked: u64,
}

/// A sampled queue.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct QueueSeries {
    /// Scheme.
    pub scheme: String,
    /// Load.
    pub load: f64,
    /// Seed.
    pub seed: u64,
    /// `from->to`.
    pub port: String,
    /// Sampling interval, us.
    pub interval_us: f64,
    /// Mean queue, bytes.
    pub mean_bytes: f64,
    /// Median queue, bytes.
    pub p50_bytes: u64,
    /// 99th percentile queue, bytes.
    pub p99_bytes: u64,
    /// 99th percentile queueing delay, us (at most 25% above).
    pub p99_delay_us: f64,
    /// Samples, bytes.
    pub samples: Vec<u64>,
}

/// Everything a sweep measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimReport {
    /// Scenario name.
    pub scenario: String,
    /// Its description.
    pub title: String,
    /// Schemes, in order.
    pub schemes: Vec<String>,
    /// Loads.
    pub loads: Vec<f64>,
    /// Seeds.
    pub seeds: Vec<u64>,
    /// Flow completion statistics by scheme, load and size class.
    pub results: Vec<ResultRow>,
    /// Coflow completion statistics.
    pub coflows: Vec<CoflowRow>,
    /// Observed flows' delays.
    pub delays: Vec<DelayRow>,
    /// Long-lived flows.
    pub long_lived: Vec<LongRow>,
    /// Per-run counters.
    pub runs: Vec<RunRow>,
    /// The busiest ports of each run.
    pub ports: Vec<PortRow>,
    /// Sampled queues.
    pub queues: Vec<QueueSeries>,
    /// Plot panels (from the scenario).
    #[serde(skip)]
    pub panels: Vec<Panel>,
}

/// Bytes with a binary unit and one decimal (`"611.3 MiB"`), for estimates
/// and measured queues.
#[must_use]
pub fn human_bytes(b: u64) -> String {
    let x = b as f64;
    for (unit, scale) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if b >= scale {
            return format!("{:.1} {unit}", x / scale as f64);
        }
    }
    format!("{b} B")
}

/// Nearest-rank percentile of sorted values.
#[must_use]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Jain's index `(sum x)^2 / (n sum x^2)`.
#[must_use]
pub fn jain(v: &[f64]) -> f64 {
    let s: f64 = v.iter().sum();
    let q: f64 = v.iter().map(|x| x * x).sum();
    if q == 0.0 {
        0.0
    } else {
        s * s / (v.len() as f64 * q)
    }
}

#[derive(Default)]
struct Pool {
    flows: usize,
    fct: Vec<f64>,
    slow: Vec<f64>,
    rate: Vec<f64>,
}

impl Pool {
    fn add(&mut self, f: &crate::sim::FlowResult) {
        self.flows += 1;
        if let Some(d) = f.fct {
            self.fct.push(crate::time::ms(d));
            self.slow
                .push(d.as_nanos() as f64 / f.ideal.as_nanos().max(1) as f64);
            self.rate
                .push(f.size as f64 * 8.0 / d.as_secs_f64().max(1e-12) / 1e6);
        }
    }

    fn row(mut self, scheme: &str, load: f64, traffic: &str, class: &str) -> ResultRow {
        let by = |a: &f64, b: &f64| a.total_cmp(b);
        self.fct.sort_by(by);
        self.slow.sort_by(by);
        ResultRow {
            scheme: scheme.to_string(),
            load,
            traffic: traffic.to_string(),
            size_class: class.to_string(),
            flows: self.flows,
            completed: self.fct.len(),
            mean_fct_ms: mean(&self.fct),
            p99_fct_ms: percentile(&self.fct, 0.99),
            mean_slowdown: mean(&self.slow),
            p99_slowdown: percentile(&self.slow, 0.99),
            mean_rate_mbps: mean(&self.rate),
        }
    }
}

/// Builds the report of runs `keys` (in order) with results `results`.
#[must_use]
pub fn build(
    scenario: &Scenario,
    keys: &[RunKey],
    workloads: &[Workload],
    results: &[RunResult],
) -> SimReport {
    let mut out = SimReport {
        scenario: scenario.name.clone(),
        title: scenario.title.clone(),
        schemes: scenario.schemes.iter().map(|s| s.name.clone()).collect(),
        loads: scenario.loads.clone(),
        seeds: scenario.seeds.clone(),
        results: Vec::new(),
        coflows: Vec::new(),
        delays: Vec::new(),
        long_lived: Vec::new(),
        runs: Vec::new(),
        ports: Vec::new(),
        queues: Vec::new(),
        panels: scenario.report.panels.clone(),
    };
    for s in 0..scenario.schemes.len() {
        for li in 0..scenario.loads.len() {
            let runs = keys
                .iter()
                .zip(results)
                .filter(|(k, _)| k.scheme == s && k.load_index == li)
                .map(|(_, r)| r);
            pooled(scenario, s, li, runs, &mut out);
        }
    }
    for (k, r) in keys.iter().zip(results) {
        let w = &workloads[k.seed_index * scenario.loads.len() + k.load_index];
        per_run(scenario, k, w, r, &mut out);
    }
    out
}

/// The rows of scheme `s` at load `li`, every seed's flows pooled.
fn pooled<'a>(
    scenario: &Scenario,
    s: usize,
    li: usize,
    runs: impl Iterator<Item = &'a RunResult>,
    out: &mut SimReport,
) {
    let spec = &scenario.report;
    let (scheme, load) = (&scenario.schemes[s].name, scenario.loads[li]);
    let classes = spec.size_names.len();
    let ntraffic = scenario.traffic.len();
    let mut pools: Vec<Vec<Pool>> = (0..ntraffic)
        .map(|_| (0..=classes).map(|_| Pool::default()).collect())
        .collect();
    let mut cct: Vec<Vec<f64>> = vec![Vec::new(); ntraffic];
    let mut coflows = vec![0usize; ntraffic];
    for r in runs {
        for f in r.flows.iter().filter(|f| f.scheme && f.size != u64::MAX) {
            for c in [spec.class_of(f.size), classes] {
                pools[usize::from(f.traffic)][c].add(f);
            }
        }
        for c in &r.coflows {
            coflows[usize::from(c.traffic)] += 1;
            cct[usize::from(c.traffic)].extend(c.cct.map(crate::time::ms));
        }
    }
    for (t, per_class) in pools.into_iter().enumerate() {
        for (c, p) in per_class
            .into_iter()
            .enumerate()
            .filter(|(_, p)| p.flows > 0)
        {
            let name = spec.size_names.get(c).map_or("all", String::as_str);
            out.results
                .push(p.row(scheme, load, scenario.traffic[t].name(), name));
        }
    }
    for (t, mut v) in cct.into_iter().enumerate().filter(|&(t, _)| coflows[t] > 0) {
        v.sort_by(f64::total_cmp);
        out.coflows.push(CoflowRow {
            scheme: scheme.clone(),
            load,
            traffic: scenario.traffic[t].name().to_string(),
            coflows: coflows[t],
            completed: v.len(),
            mean_cct_ms: mean(&v),
            p99_cct_ms: percentile(&v, 0.99),
        });
    }
}

/// What identifies one run in its rows.
struct Run<'a> {
    scenario: &'a Scenario,
    key: &'a RunKey,
    scheme: String,
    result: &'a RunResult,
}

impl Run<'_> {
    fn counters(&self, flows: usize) -> RunRow {
        let r = self.result;
        let finite = r.flows.iter().filter(|f| f.scheme && f.size != u64::MAX);
        let sum = |g: fn(&crate::sim::PortResult) -> u64| r.ports.iter().map(g).sum::<u64>();
        RunRow {
            scheme: self.scheme.clone(),
            load: self.key.load,
            seed: self.key.seed,
            flows,
            completed: finite.clone().filter(|f| f.fct.is_some()).count(),
            finite: finite.count(),
            events: r.counters.events,
            sim_time_ms: r.end.secs() * 1e3,
            drops: sum(crate::sim::PortResult::dropped_total),
            evicted: sum(|p| p.evicted),
            marked: sum(|p| p.marked),
            timeouts: r.flows.iter().map(|f| u64::from(f.timeouts)).sum(),
            retransmits: r.flows.iter().map(|f| u64::from(f.retransmits)).sum(),
            peak_packets: r.peak_packets,
            order_checked: sum(|p| p.order.0),
            inversions: sum(|p| p.order.1),
        }
    }

    fn delays(&self) -> impl Iterator<Item = DelayRow> + '_ {
        self.result.observed.iter().map(|o| DelayRow {
            scheme: self.scheme.clone(),
            load: self.key.load,
            seed: self.key.seed,
            traffic: self.scenario.traffic[usize::from(o.traffic)]
                .name()
                .to_string(),
            flow: o.flow,
            packets: o.packets,
            mean_delay_ms: o.mean_ns / 1e6,
            stddev_delay_ms: o.stddev_ns / 1e6,
            max_delay_ms: o.max_ns as f64 / 1e6,
            jitter_ms: o.jitter_ns / 1e6,
            per_hop_ms: o.per_hop_ns.iter().map(|x| x / 1e6).collect(),
        })
    }

    fn long_lived(&self) -> Option<LongRow> {
        let long: Vec<f64> = self
            .result
            .flows
            .iter()
            .filter(|f| f.scheme && f.size == u64::MAX)
            .map(|f| f.goodput_bps / 1e6)
            .collect();
        (!long.is_empty()).then(|| LongRow {
            scheme: self.scheme.clone(),
            load: self.key.load,
            seed: self.key.seed,
            flows: long.len(),
            mean_goodput_mbps: mean(&long),
            min_goodput_mbps: long.iter().copied().fold(f64::INFINITY, f64::min),
            max_goodput_mbps: long.iter().copied().fold(0.0, f64::max),
            jain: jain(&long),
        })
    }

    /// The five ports with the largest queues (then the most drops).
    fn busiest(&self) -> impl Iterator<Item = PortRow> + '_ {
        let secs = self.result.end.secs().max(1e-12);
        let mut ports: Vec<&crate::sim::PortResult> =
            self.result.ports.iter().filter(|p| p.sent > 0).collect();
        ports.sort_by(|a, b| {
            (b.max_queue_bytes, b.dropped_total()).cmp(&(a.max_queue_bytes, a.dropped_total()))
        });
        ports.into_iter().take(5).map(move |p| PortRow {
            scheme: self.scheme.clone(),
            load: self.key.load,
            seed: self.key.seed,
            port: p.name.clone(),
            utilization: p.sent_bytes as f64 * 8.0 / (p.rate.bps() as f64 * secs),
            max_queue_kb: p.max_queue_bytes as f64 / 1e3,
            mean_queue_delay_us: p.mean_sojourn_ns / 1e3,
            max_queue_delay_us: p.max_sojourn_ns as f64 / 1e3,
            drops: p.dropped_total(),
            drop_reasons: p.dropped.iter().map(|&(n, c)| (n.to_string(), c)).collect(),
            evicted: p.evicted,
            marked: p.marked,
        })
    }

    fn queues(&self) -> impl Iterator<Item = QueueSeries> + '_ {
        self.scenario.report.sample_ports.iter().map(|&port| {
            let p = &self.result.ports[port as usize];
            let samples: Vec<u64> = p.samples.iter().map(|&(_, b)| b).collect();
            let mut sorted: Vec<f64> = samples.iter().map(|&b| b as f64).collect();
            sorted.sort_by(f64::total_cmp);
            QueueSeries {
                scheme: self.scheme.clone(),
                load: self.key.load,
                seed: self.key.seed,
                port: p.name.clone(),
                interval_us: self.scenario.report.sample_interval.as_nanos() as f64 / 1e3,
                mean_bytes: mean(&sorted),
                p50_bytes: percentile(&sorted, 0.5) as u64,
                p99_bytes: percentile(&sorted, 0.99) as u64,
                p99_delay_us: p.p99_sojourn_ns as f64 / 1e3,
                samples,
            }
        })
    }
}

fn per_run(scenario: &Scenario, k: &RunKey, w: &Workload, r: &RunResult, out: &mut SimReport) {
    let run = Run {
        scenario,
        key: k,
        scheme: scenario.schemes[k.scheme].name.clone(),
        result: r,
    };
    out.runs.push(run.counters(w.flows.len()));
    out.delays.extend(run.delays());
    out.long_lived.extend(run.long_lived());
    out.ports.extend(run.busiest());
    out.queues.extend(run.queues());
}

impl SimReport {
    /// The value a panel shows for `scheme` at `load` (mean over seeds where
    /// rows are per seed), if measured.
    #[must_use]
    pub fn value(&self, panel: &Panel, scheme: &str, load: f64) -> Option<f64> {
        let class = panel.size_class.as_deref().unwrap_or("all");
        // Flow panels without a traffic show the scenario's first.
        let traffic = panel
            .traffic
            .as_deref()
            .or_else(|| self.results.first().map(|r| r.traffic.as_str()));
        match panel.metric {
            m if m.by_size() => self
                .results
                .iter()
                .find(|r| {
                    r.scheme == scheme
                        && r.load == load
                        && Some(r.traffic.as_str()) == traffic
                        && r.size_class == class
                        && r.completed > 0
                })
                .map(|r| match m {
                    Metric::MeanSlowdown => r.mean_slowdown,
                    Metric::P99Slowdown => r.p99_slowdown,
                    Metric::MeanFct => r.mean_fct_ms,
                    Metric::P99Fct => r.p99_fct_ms,
                    _ => r.mean_rate_mbps,
                }),
            Metric::MeanCct | Metric::P99Cct => self
                .coflows
                .iter()
                .find(|c| {
                    c.scheme == scheme
                        && c.load == load
                        && panel.traffic.as_ref().is_none_or(|t| *t == c.traffic)
                        && c.completed > 0
                })
                .map(|c| {
                    if panel.metric == Metric::MeanCct {
                        c.mean_cct_ms
                    } else {
                        c.p99_cct_ms
                    }
                }),
            m if m.is_delay() => {
                let v: Vec<f64> = self
                    .delays
                    .iter()
                    .filter(|d| {
                        d.scheme == scheme
                            && d.load == load
                            && Some(&d.traffic) == panel.traffic.as_ref()
                            && d.packets > 0
                    })
                    .map(|d| match m {
                        Metric::MeanDelay => d.mean_delay_ms,
                        Metric::MaxDelay => d.max_delay_ms,
                        Metric::StddevDelay => d.stddev_delay_ms,
                        _ => d.jitter_ms,
                    })
                    .collect();
                (!v.is_empty()).then(|| mean(&v))
            }
            m => {
                let v: Vec<f64> = self
                    .long_lived
                    .iter()
                    .filter(|l| l.scheme == scheme && l.load == load)
                    .map(|l| {
                        if m == Metric::Jain {
                            l.jain
                        } else {
                            l.mean_goodput_mbps
                        }
                    })
                    .collect();
                (!v.is_empty()).then(|| mean(&v))
            }
        }
    }

    /// Whether any panel is drawn against the load.
    #[must_use]
    pub fn has_load_panels(&self) -> bool {
        self.panels.iter().any(|p| p.x == Axis::Load)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_jain() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert_eq!(percentile(&v, 0.5), 50.0);
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
        assert!((jain(&[1.0, 1.0, 1.0]) - 1.0).abs() < 1e-12);
        assert!((jain(&[1.0, 0.0]) - 0.5).abs() < 1e-12);
    }
}
