//! `eiffel bench queues`: the Eiffel paper's queue microbenchmarks (section 5.2)
//! and a hold model, each Eiffel queue measured against the queues a Rust user
//! would pick instead ([`baselines`]) in the same run.
//!
//! As in the paper, each fill-then-drain trial fills an empty queue and then drains
//! it, and the throughput is packets / (fill + drain time). Every queue of a trial
//! sees the same ranks in the same (shuffled) insertion order ([`workload`]).
//!
//! - Fig. 12: Mpps against the average packets per bucket, every bucket occupied, for
//!   5k and 10k buckets: cffs, approx_gradient, hffs, gradient and bucket_heap
//!   against std's `BinaryHeap` (`std_binary_heap`), the `radix-heap` crate
//!   (`radix_heap`), `BTreeMap` (`btreemap`) and the indexed binary heap
//!   (`binary_heap`, the baseline that also has handles); ratios are against the
//!   fastest of these four in the same run (and ffs over its 64 buckets).
//! - Fig. 13: approx_gradient Mpps against the fraction of non-empty buckets (one
//!   packet per occupied bucket), with cffs measured alongside as the baseline.
//! - Fig. 14: approx_gradient error against the fraction of empty buckets: on every
//!   pop, how far the popped bucket is from the true minimum (tracked by an exact
//!   hierarchical bitmap outside the timed runs), and how often the estimate missed.
//! - Hold model: ns per pop + insert pair with 1k, 10k and 100k live elements, each
//!   re-inserted 1..=10,000 ranks after the minimum it replaced (a scheduler's
//!   steady state): cffs (two halves of 16,384 buckets, so nothing is ever
//!   clamped) and the logical calendar queue (16,384 days) against the same four
//!   baselines, and `plain_buckets` ([`plain`]), a bucket queue with none of
//!   cffs's features: not a baseline a user would pick (it has no handles and
//!   serves only this workload), but the floor a bucketed queue can reach here.
//!   The queues take turns, one batch each per round, so that load from other work
//!   falls on all of them alike; the median batch is reported.
//!
//! Times are the thread's CPU time ([`crate::clock`]). Run it pinned to one core
//! (`taskset -c 1 eiffel bench queues`); the ratios are the figures to read.

pub mod baselines;
pub mod plain;
pub mod workload;

use std::time::Duration;

use clap::{Args, ValueEnum};
use eiffel_queue::{
    ApproxGradient, BinaryHeapQueue, BucketHeap, Calendar, Cffs, Ffs, Gradient, Hffs, HierBitmap,
    PriorityQueue, QueueConfig, QueueKind,
};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use self::baselines::{BTree, Eiffel, MinQueue, RadixHeap, StdHeap};
use self::plain::PlainBuckets;
use self::workload::{fill_drain_ranks, time_fill_drain, Hold, HOLD_SPAN};
use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// One measured point.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `pkts_per_bucket` (Fig. 12), `occupancy` (Fig. 13), `error` (Fig. 14) or
    /// `hold` (hold model).
    experiment: &'static str,
    queue: &'static str,
    buckets: usize,
    pkts_per_bucket: f64,
    occupancy: f64,
    mpps: f64,
    /// Hold model: live elements.
    live: Option<usize>,
    /// Hold model: nanoseconds per pop + insert pair.
    ns_per_pair: Option<f64>,
    /// Throughput relative to the experiment's baseline measured in the same run:
    /// the fastest of std_binary_heap, radix_heap, btreemap and binary_heap for
    /// Fig. 12 and the hold model, cffs for Fig. 13.
    ratio_vs_baseline: Option<f64>,
    /// The baseline `ratio_vs_baseline` is taken against.
    baseline: Option<&'static str>,
    /// Hold model: ns per pair over `plain_buckets`'s in the same run (the floor;
    /// 1.0 would be as cheap as a bucket queue with no handles).
    ns_vs_plain_buckets: Option<f64>,
    /// Fig. 14: fraction of pops that did not return the minimum bucket.
    error_rate: Option<f64>,
    /// Fig. 14: mean distance in buckets between the popped and the minimum bucket.
    mean_error_buckets: Option<f64>,
    /// Fig. 14: largest such distance.
    max_error_buckets: Option<u64>,
    /// Fig. 14: fraction of pops whose estimated bucket was empty.
    miss_rate: Option<f64>,
    /// Fig. 14: mean linear-search distance over the misses.
    mean_search_distance: Option<f64>,
    /// Fig. 14: the approximate queue's look-back window in buckets (0: the
    /// paper's algorithm).
    lookback: Option<u32>,
}

impl Record {
    fn new(
        experiment: &'static str,
        queue: &'static str,
        buckets: usize,
        ppb: f64,
        occupancy: f64,
        mpps: f64,
    ) -> Self {
        Record {
            experiment,
            queue,
            buckets,
            pkts_per_bucket: ppb,
            occupancy,
            mpps,
            live: None,
            ns_per_pair: None,
            ratio_vs_baseline: None,
            baseline: None,
            ns_vs_plain_buckets: None,
            error_rate: None,
            mean_error_buckets: None,
            max_error_buckets: None,
            miss_rate: None,
            mean_search_distance: None,
            lookback: None,
        }
    }
}

struct Plan {
    bucket_counts: Vec<usize>,
    pkts_per_bucket: Vec<usize>,
    occupancies: Vec<f64>,
    hold_live: Vec<usize>,
    /// Pairs per timed hold-model batch, and rounds of batches.
    hold_pairs: u64,
    hold_rounds: usize,
    /// Minimum measured time per point; the median of the trials is reported.
    budget: Duration,
    max_trials: usize,
}

impl Plan {
    fn new(quick: bool) -> Self {
        if quick {
            Plan {
                bucket_counts: vec![5_000, 10_000],
                pkts_per_bucket: vec![1, 4, 16, 64],
                occupancies: vec![0.25, 0.5, 0.75, 0.9, 1.0],
                hold_live: vec![1_000, 10_000, 100_000],
                hold_pairs: 200_000,
                hold_rounds: 5,
                budget: Duration::from_millis(40),
                max_trials: 15,
            }
        } else {
            Plan {
                bucket_counts: vec![5_000, 10_000],
                pkts_per_bucket: vec![1, 2, 4, 8, 16, 32, 64, 128],
                occupancies: vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0],
                hold_live: vec![1_000, 10_000, 100_000],
                hold_pairs: 1_000_000,
                hold_rounds: 15,
                budget: Duration::from_millis(300),
                max_trials: 101,
            }
        }
    }
}

/// The baselines of Fig. 12 and the hold model, by JSON name.
const BASELINES: [&str; 4] = ["std_binary_heap", "radix_heap", "btreemap", "binary_heap"];

/// Median Mpps over trials of fill + drain, after one warm-up trial.
fn mpps<Q: MinQueue>(q: &mut Q, ranks: &[u64], plan: &Plan) -> f64 {
    time_fill_drain(q, ranks);
    let mut times = Vec::new();
    let mut total = Duration::ZERO;
    while times.len() < 3 || (total < plan.budget && times.len() < plan.max_trials) {
        let t = time_fill_drain(q, ranks);
        total += t;
        times.push(t);
    }
    times.sort();
    let median = times[times.len() / 2].as_secs_f64();
    ranks.len() as f64 / median / 1e6
}

/// Builds the queue of `kind` for `buckets` buckets and `capacity` packets and
/// measures it; every queue is used through its concrete type.
fn measure(kind: QueueKind, buckets: usize, ranks: &[u64], plan: &Plan) -> Result<f64, BenchError> {
    let cfg = QueueConfig::new(buckets, ranks.len());
    Ok(match kind {
        QueueKind::Ffs => mpps(&mut Eiffel(Ffs::<u32>::new(cfg)?), ranks, plan),
        QueueKind::Hffs => mpps(&mut Eiffel(Hffs::<u32>::new(cfg)?), ranks, plan),
        QueueKind::Cffs => mpps(&mut Eiffel(Cffs::<u32>::new(cfg)?), ranks, plan),
        QueueKind::Gradient => mpps(&mut Eiffel(Gradient::<u32>::new(cfg)?), ranks, plan),
        QueueKind::ApproxGradient => {
            mpps(&mut Eiffel(ApproxGradient::<u32>::new(cfg)?), ranks, plan)
        }
        QueueKind::BucketHeap => mpps(&mut Eiffel(BucketHeap::<u32>::new(cfg)?), ranks, plan),
        QueueKind::BinaryHeap => mpps(&mut Eiffel(BinaryHeapQueue::<u32>::new(cfg)?), ranks, plan),
        QueueKind::Calendar => mpps(&mut Eiffel(Calendar::<u32>::new(cfg.into())?), ranks, plan),
        QueueKind::CircularApproxGradient => {
            return Err(
                "the circular approximate queue is not part of the paper's microbenchmark".into(),
            )
        }
    })
}

/// Measures one of the non-Eiffel baselines on a fill-then-drain workload.
fn measure_baseline(name: &str, ranks: &[u64], plan: &Plan) -> f64 {
    match name {
        "std_binary_heap" => mpps(&mut StdHeap::with_capacity(ranks.len()), ranks, plan),
        "radix_heap" => mpps(&mut RadixHeap::new(), ranks, plan),
        "btreemap" => mpps(&mut BTree::default(), ranks, plan),
        _ => unreachable!("unknown baseline {name}"),
    }
}

/// Fig. 12's Eiffel queues.
const FIG12: [QueueKind; 5] = [
    QueueKind::Cffs,
    QueueKind::ApproxGradient,
    QueueKind::Hffs,
    QueueKind::Gradient,
    QueueKind::BucketHeap,
];

/// Sets every row's ratio against the best (highest `score`) baseline among them.
fn rate_against_best(rows: &mut [Record], score: impl Fn(&Record) -> f64) {
    let best = rows
        .iter()
        .filter(|r| BASELINES.contains(&r.queue))
        .max_by(|a, b| score(a).total_cmp(&score(b)))
        .map(|r| (r.queue, score(r)));
    if let Some((name, base)) = best {
        for r in rows {
            r.ratio_vs_baseline = Some(score(r) / base);
            r.baseline = Some(name);
        }
    }
}

fn fig12(plan: &Plan, rng: &mut SmallRng, out: &mut Vec<Record>) -> Result<(), BenchError> {
    for &buckets in &plan.bucket_counts {
        let all: Vec<usize> = (0..buckets).collect();
        for &per in &plan.pkts_per_bucket {
            let ranks = fill_drain_ranks(&all, per, rng);
            let mut rows: Vec<Record> = Vec::new();
            let row = |queue, m| Record::new("pkts_per_bucket", queue, buckets, per as f64, 1.0, m);
            for kind in FIG12 {
                rows.push(row(kind.name(), measure(kind, buckets, &ranks, plan)?));
            }
            for name in &BASELINES[..3] {
                rows.push(row(name, measure_baseline(name, &ranks, plan)));
            }
            let heap = measure(QueueKind::BinaryHeap, buckets, &ranks, plan)?;
            rows.push(row("binary_heap", heap));
            rate_against_best(&mut rows, |r| r.mpps);
            out.extend(rows);
        }
    }
    // ffs: one word, so 64 buckets.
    for &per in &plan.pkts_per_bucket {
        let all: Vec<usize> = (0..64).collect();
        let ranks = fill_drain_ranks(&all, per, rng);
        let row = |queue, m| Record::new("pkts_per_bucket", queue, 64, per as f64, 1.0, m);
        let mut rows = vec![row("ffs", measure(QueueKind::Ffs, 64, &ranks, plan)?)];
        for name in &BASELINES[..3] {
            rows.push(row(name, measure_baseline(name, &ranks, plan)));
        }
        rows.push(row(
            "binary_heap",
            measure(QueueKind::BinaryHeap, 64, &ranks, plan)?,
        ));
        rate_against_best(&mut rows, |r| r.mpps);
        out.extend(rows);
    }
    Ok(())
}

/// Buckets per half of the hold model's cffs, and days of its calendar: more than
/// [`HOLD_SPAN`], so that no rank is ever clamped (a rank is at most `HOLD_SPAN`
/// above the minimum, which lies in the primary half).
const HOLD_BUCKETS: usize = 16_384;

/// One queue of the hold model, filled and warmed up, timed a batch at a time.
struct Contestant {
    name: &'static str,
    batch: Box<dyn FnMut(u64) -> Duration>,
    times: Vec<Duration>,
}

impl Contestant {
    fn new<Q: MinQueue + 'static>(name: &'static str, mut q: Q, live: usize) -> Self {
        let mut hold = Hold::new(0x401d);
        hold.fill(&mut q, live);
        hold.run(&mut q, 4 * live as u64);
        Contestant {
            name,
            batch: Box::new(move |pairs| hold.time(&mut q, pairs)),
            times: Vec::new(),
        }
    }
}

fn hold_model(plan: &Plan, out: &mut Vec<Record>) -> Result<(), BenchError> {
    for &live in &plan.hold_live {
        let cfg = QueueConfig::new(HOLD_BUCKETS, live);
        let mut field = vec![
            Contestant::new("cffs", Eiffel(Cffs::<u32>::new(cfg)?), live),
            Contestant::new("calendar", Eiffel(Calendar::<u32>::new(cfg.into())?), live),
            Contestant::new("std_binary_heap", StdHeap::with_capacity(live), live),
            Contestant::new("radix_heap", RadixHeap::new(), live),
            Contestant::new("btreemap", BTree::default(), live),
            Contestant::new(
                "binary_heap",
                Eiffel(BinaryHeapQueue::<u32>::new(cfg)?),
                live,
            ),
            Contestant::new("plain_buckets", PlainBuckets::new(live), live),
        ];
        for _ in 0..plan.hold_rounds {
            for c in &mut field {
                let t = (c.batch)(plan.hold_pairs);
                c.times.push(t);
            }
        }
        let mut rows: Vec<Record> = field
            .iter_mut()
            .map(|c| {
                c.times.sort();
                let median = c.times[c.times.len() / 2].as_secs_f64();
                let ns = median * 1e9 / plan.hold_pairs as f64;
                let mut r = Record::new("hold", c.name, HOLD_BUCKETS, 0.0, 0.0, 1e3 / ns);
                r.live = Some(live);
                r.ns_per_pair = Some(ns);
                r
            })
            .collect();
        rate_against_best(&mut rows, |r| r.mpps);
        let floor = rows
            .iter()
            .find(|r| r.queue == "plain_buckets")
            .and_then(|r| r.ns_per_pair);
        for r in &mut rows {
            r.ns_vs_plain_buckets = r.ns_per_pair.zip(floor).map(|(ns, f)| ns / f);
        }
        out.extend(rows);
    }
    Ok(())
}

/// `fraction` of the buckets, chosen at random, sorted.
fn occupied_buckets(buckets: usize, fraction: f64, rng: &mut SmallRng) -> Vec<usize> {
    let mut all: Vec<usize> = (0..buckets).collect();
    all.shuffle(rng);
    let k = ((buckets as f64 * fraction).round() as usize).clamp(1, buckets);
    let mut chosen = all[..k].to_vec();
    chosen.sort_unstable();
    chosen
}

fn fig13(plan: &Plan, rng: &mut SmallRng, out: &mut Vec<Record>) -> Result<(), BenchError> {
    for &buckets in &plan.bucket_counts {
        for &occ in &plan.occupancies {
            let occupied = occupied_buckets(buckets, occ, rng);
            let ranks = fill_drain_ranks(&occupied, 1, rng);
            let approx = measure(QueueKind::ApproxGradient, buckets, &ranks, plan)?;
            let cffs = measure(QueueKind::Cffs, buckets, &ranks, plan)?;
            let mut a = Record::new("occupancy", "approx_gradient", buckets, 1.0, occ, approx);
            a.ratio_vs_baseline = Some(approx / cffs);
            let mut c = Record::new("occupancy", "cffs", buckets, 1.0, occ, cffs);
            c.ratio_vs_baseline = Some(1.0);
            out.push(a);
            out.push(c);
        }
    }
    Ok(())
}

/// Look-back windows of the error experiment: the paper's algorithm and a 64-bucket
/// look-back.
const LOOKBACKS: [u32; 2] = [0, 64];

fn fig14(plan: &Plan, rng: &mut SmallRng, out: &mut Vec<Record>) -> Result<(), BenchError> {
    for &buckets in &plan.bucket_counts {
        for &occ in &plan.occupancies {
            let occupied = occupied_buckets(buckets, occ, rng);
            let ranks = fill_drain_ranks(&occupied, 1, rng);
            for lookback in LOOKBACKS {
                fig14_point(buckets, occ, lookback, &ranks, out)?;
            }
        }
    }
    Ok(())
}

/// One point of Fig. 14: fill with `ranks`, drain, compare every pop with the
/// true minimum.
fn fig14_point(
    buckets: usize,
    occ: f64,
    lookback: u32,
    ranks: &[u64],
    out: &mut Vec<Record>,
) -> Result<(), BenchError> {
    let cfg = QueueConfig::new(buckets, ranks.len()).lookback(lookback);
    let mut q = ApproxGradient::<u32>::new(cfg)?;
    let mut truth = HierBitmap::new(buckets);
    let mut count = vec![0u32; buckets];
    for (i, &r) in ranks.iter().enumerate() {
        if q.insert(r, i as u32).is_err() {
            unreachable!("queue sized for the workload");
        }
        if count[r as usize] == 0 {
            truth.set(r as usize);
        }
        count[r as usize] += 1;
    }
    let (mut wrong, mut sum, mut max, mut pops) = (0u64, 0u64, 0u64, 0u64);
    while let Some((r, _)) = q.pop_min() {
        let min = truth.first().ok_or("reference lost track of the queue")?;
        let err = r - min as u64;
        pops += 1;
        if err > 0 {
            wrong += 1;
        }
        sum += err;
        max = max.max(err);
        count[r as usize] -= 1;
        if count[r as usize] == 0 {
            truth.clear(r as usize);
        }
    }
    let s = q.stats().approx;
    let mut rec = Record::new("error", "approx_gradient", buckets, 1.0, occ, 0.0);
    rec.error_rate = Some(wrong as f64 / pops as f64);
    rec.mean_error_buckets = Some(sum as f64 / pops as f64);
    rec.max_error_buckets = Some(max);
    rec.miss_rate = Some(s.misses as f64 / s.lookups.max(1) as f64);
    rec.mean_search_distance = Some(if s.misses == 0 {
        0.0
    } else {
        s.miss_distance as f64 / s.misses as f64
    });
    rec.lookback = Some(lookback);
    out.push(rec);
    Ok(())
}

fn print_tables(records: &[Record]) -> std::io::Result<()> {
    if records.iter().any(|r| r.experiment == "pkts_per_bucket") {
        print_fig12(records)?;
    }
    if records.iter().any(|r| r.experiment == "hold") {
        print_hold(records)?;
    }
    if records.iter().any(|r| r.experiment == "occupancy") {
        print_fig13(records)?;
    }
    if records.iter().any(|r| r.experiment == "error") {
        print_fig14(records)?;
    }
    Ok(())
}

fn ratio_cells(r: &Record) -> [String; 2] {
    [
        r.ratio_vs_baseline.map_or(String::new(), |x| fmt_f(x, 2)),
        r.baseline.unwrap_or("").to_string(),
    ]
}

fn print_fig12(records: &[Record]) -> std::io::Result<()> {
    crate::outln!(
        "Fig. 12: fill then drain, every bucket occupied \
         (Mpps; ratio to the fastest baseline of the same run)"
    );
    let mut t = Table::new([
        "queue",
        "buckets",
        "pkts/bucket",
        "Mpps",
        "x best",
        "best baseline",
    ]);
    for r in records.iter().filter(|r| r.experiment == "pkts_per_bucket") {
        let [ratio, base] = ratio_cells(r);
        t.row([
            r.queue.to_string(),
            r.buckets.to_string(),
            fmt_f(r.pkts_per_bucket, 0),
            fmt_f(r.mpps, 1),
            ratio,
            base,
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

fn print_hold(records: &[Record]) -> std::io::Result<()> {
    crate::outln!(
        "Hold model: pop the minimum, insert it 1..={HOLD_SPAN} ranks later \
         (ns per pair; speed-up over the fastest baseline of the same run)"
    );
    let mut t = Table::new([
        "queue",
        "live",
        "ns/pair",
        "x best",
        "best baseline",
        "ns / plain_buckets",
    ]);
    for r in records.iter().filter(|r| r.experiment == "hold") {
        let [ratio, base] = ratio_cells(r);
        t.row([
            r.queue.to_string(),
            r.live.unwrap_or(0).to_string(),
            r.ns_per_pair.map_or(String::new(), |x| fmt_f(x, 2)),
            ratio,
            base,
            r.ns_vs_plain_buckets.map_or(String::new(), |x| fmt_f(x, 2)),
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

fn print_fig13(records: &[Record]) -> std::io::Result<()> {
    crate::outln!("Fig. 13: approx_gradient against occupancy, one packet per occupied bucket (ratio to cffs in the same run)");
    let mut t = Table::new([
        "buckets",
        "occupancy",
        "approx Mpps",
        "cffs Mpps",
        "approx / cffs",
    ]);
    let occ: Vec<&Record> = records
        .iter()
        .filter(|r| r.experiment == "occupancy")
        .collect();
    for pair in occ.chunks(2) {
        if let [a, c] = pair {
            t.row([
                a.buckets.to_string(),
                fmt_f(a.occupancy, 2),
                fmt_f(a.mpps, 1),
                fmt_f(c.mpps, 1),
                a.ratio_vs_baseline.map_or(String::new(), |x| fmt_f(x, 2)),
            ]);
        }
    }
    crate::outln!("{}", t.render());
    Ok(())
}

fn print_fig14(records: &[Record]) -> std::io::Result<()> {
    crate::outln!(
        "Fig. 14: approx_gradient error against empty buckets (error = popped bucket - true minimum); \
         look-back 0 is the paper's algorithm"
    );
    let mut t = Table::new([
        "buckets",
        "empty",
        "look-back",
        "wrong pops",
        "mean error",
        "max error",
        "misses",
        "mean search",
    ]);
    for r in records.iter().filter(|r| r.experiment == "error") {
        t.row([
            r.buckets.to_string(),
            fmt_f(1.0 - r.occupancy, 2),
            r.lookback.unwrap_or(0).to_string(),
            r.error_rate
                .map_or(String::new(), |x| format!("{:.2}%", 100.0 * x)),
            r.mean_error_buckets.map_or(String::new(), |x| fmt_f(x, 3)),
            r.max_error_buckets.map_or(String::new(), |x| x.to_string()),
            r.miss_rate
                .map_or(String::new(), |x| format!("{:.2}%", 100.0 * x)),
            r.mean_search_distance
                .map_or(String::new(), |x| fmt_f(x, 1)),
        ]);
    }
    crate::outln!("{}", t.render());
    Ok(())
}

/// The experiments of `eiffel bench queues`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Experiment {
    /// Fill then drain against packets per bucket (Fig. 12).
    FillDrain,
    /// The hold model at 1k, 10k and 100k live elements.
    Hold,
    /// The approximate queue against occupancy (Fig. 13).
    Occupancy,
    /// The approximate queue's error (Fig. 14).
    Error,
}

/// Options of `eiffel bench queues`.
#[derive(Debug, Clone, Args)]
pub struct QueuesOpts {
    #[command(flatten)]
    /// `--quick` and `--json`.
    pub common: CommonOpts,
    /// Experiments to run.
    #[arg(long, value_delimiter = ',', default_values = ["fill-drain", "hold", "occupancy", "error"])]
    pub experiments: Vec<Experiment>,
}

/// Runs the chosen experiments.
pub fn run(opts: &QueuesOpts) -> Result<(), BenchError> {
    let plan = Plan::new(opts.common.quick);
    let mut rng = SmallRng::seed_from_u64(0x5eed_e1ff);
    let _ = rng.gen::<u64>();
    let mut records = Vec::new();
    let on = |e| opts.experiments.contains(&e);
    if on(Experiment::FillDrain) {
        fig12(&plan, &mut rng, &mut records)?;
    }
    if on(Experiment::Hold) {
        hold_model(&plan, &mut records)?;
    }
    if on(Experiment::Occupancy) {
        fig13(&plan, &mut rng, &mut records)?;
    }
    if on(Experiment::Error) {
        fig14(&plan, &mut rng, &mut records)?;
    }
    if opts.common.json {
        print_results(&records)?;
    } else {
        print_tables(&records)?;
    }
    Ok(())
}
