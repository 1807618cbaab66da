//! `eiffel bench queues`: the Eiffel paper's queue microbenchmarks (section 5.2).
//!
//! As in the paper, each trial fills an empty queue and then drains it, and the
//! throughput is packets / (fill + drain time). Every queue of a trial sees the same
//! ranks in the same (shuffled) insertion order.
//!
//! - Fig. 12: Mpps against the average packets per bucket, every bucket occupied, for
//!   5k and 10k buckets: cffs, approx_gradient, bucket_heap, binary_heap, hffs and
//!   gradient (and ffs over its 64 buckets).
//! - Fig. 13: approx_gradient Mpps against the fraction of non-empty buckets (one
//!   packet per occupied bucket), with cffs measured alongside as the baseline.
//! - Fig. 14: approx_gradient error against the fraction of empty buckets: on every
//!   pop, how far the popped bucket is from the true minimum (tracked by an exact
//!   hierarchical bitmap outside the timed runs), and how often the estimate missed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use eiffel_queue::{
    ApproxGradient, BinaryHeapQueue, BucketHeap, Calendar, Cffs, Ffs, Gradient, Hffs, HierBitmap,
    PriorityQueue, QueueConfig, QueueKind,
};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::report::{fmt_f, print_results, Table};
use crate::{BenchError, CommonOpts};

/// One measured point.
#[derive(Debug, Clone, Serialize)]
struct Record {
    /// `pkts_per_bucket` (Fig. 12), `occupancy` (Fig. 13) or `error` (Fig. 14).
    experiment: &'static str,
    queue: &'static str,
    buckets: usize,
    pkts_per_bucket: f64,
    occupancy: f64,
    mpps: f64,
    /// Throughput relative to the experiment's baseline measured in the same run
    /// (binary_heap for Fig. 12, cffs for Fig. 13).
    ratio_vs_baseline: Option<f64>,
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
            ratio_vs_baseline: None,
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
                budget: Duration::from_millis(40),
                max_trials: 15,
            }
        } else {
            Plan {
                bucket_counts: vec![5_000, 10_000],
                pkts_per_bucket: vec![1, 2, 4, 8, 16, 32, 64, 128],
                occupancies: vec![0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0],
                budget: Duration::from_millis(300),
                max_trials: 101,
            }
        }
    }
}

/// Ranks for one trial: `per` packets in each bucket of `occupied`, shuffled.
fn workload(occupied: &[usize], per: usize, rng: &mut SmallRng) -> Vec<u64> {
    let mut ranks: Vec<u64> = occupied
        .iter()
        .flat_map(|&b| std::iter::repeat_n(b as u64, per))
        .collect();
    ranks.shuffle(rng);
    ranks
}

/// Fills `q` with `ranks` and drains it, returning the elapsed time.
fn fill_drain<Q: PriorityQueue<u32>>(q: &mut Q, ranks: &[u64]) -> Duration {
    let start = Instant::now();
    for (i, &r) in ranks.iter().enumerate() {
        if q.insert(r, i as u32).is_err() {
            unreachable!("queue sized for the workload");
        }
    }
    let mut sum = 0u64;
    while let Some((r, v)) = q.pop_min() {
        sum = sum.wrapping_add(r ^ u64::from(v));
    }
    black_box(sum);
    start.elapsed()
}

/// Median Mpps over trials of fill + drain, after one warm-up trial.
fn mpps<Q: PriorityQueue<u32>>(q: &mut Q, ranks: &[u64], plan: &Plan) -> f64 {
    fill_drain(q, ranks);
    let mut times = Vec::new();
    let mut total = Duration::ZERO;
    while times.len() < 3 || (total < plan.budget && times.len() < plan.max_trials) {
        let t = fill_drain(q, ranks);
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
        QueueKind::Ffs => mpps(&mut Ffs::<u32>::new(cfg)?, ranks, plan),
        QueueKind::Hffs => mpps(&mut Hffs::<u32>::new(cfg)?, ranks, plan),
        QueueKind::Cffs => mpps(&mut Cffs::<u32>::new(cfg)?, ranks, plan),
        QueueKind::Gradient => mpps(&mut Gradient::<u32>::new(cfg)?, ranks, plan),
        QueueKind::ApproxGradient => mpps(&mut ApproxGradient::<u32>::new(cfg)?, ranks, plan),
        QueueKind::BucketHeap => mpps(&mut BucketHeap::<u32>::new(cfg)?, ranks, plan),
        QueueKind::BinaryHeap => mpps(&mut BinaryHeapQueue::<u32>::new(cfg)?, ranks, plan),
        QueueKind::Calendar => mpps(&mut Calendar::<u32>::new(cfg.into())?, ranks, plan),
        QueueKind::CircularApproxGradient => {
            return Err(
                "the circular approximate queue is not part of the paper's microbenchmark".into(),
            )
        }
    })
}

/// Fig. 12 queues, baseline last.
const FIG12: [QueueKind; 6] = [
    QueueKind::Cffs,
    QueueKind::ApproxGradient,
    QueueKind::Hffs,
    QueueKind::Gradient,
    QueueKind::BucketHeap,
    QueueKind::BinaryHeap,
];

fn fig12(plan: &Plan, rng: &mut SmallRng, out: &mut Vec<Record>) -> Result<(), BenchError> {
    for &buckets in &plan.bucket_counts {
        let all: Vec<usize> = (0..buckets).collect();
        for &per in &plan.pkts_per_bucket {
            let ranks = workload(&all, per, rng);
            let mut rows: Vec<Record> = Vec::new();
            for kind in FIG12 {
                let m = measure(kind, buckets, &ranks, plan)?;
                rows.push(Record::new(
                    "pkts_per_bucket",
                    kind.name(),
                    buckets,
                    per as f64,
                    1.0,
                    m,
                ));
            }
            let base = rows.last().map_or(1.0, |r| r.mpps);
            for r in &mut rows {
                r.ratio_vs_baseline = Some(r.mpps / base);
            }
            out.extend(rows);
        }
    }
    // ffs: one word, so 64 buckets.
    for &per in &plan.pkts_per_bucket {
        let all: Vec<usize> = (0..64).collect();
        let ranks = workload(&all, per, rng);
        let m = measure(QueueKind::Ffs, 64, &ranks, plan)?;
        let heap = measure(QueueKind::BinaryHeap, 64, &ranks, plan)?;
        let mut r = Record::new("pkts_per_bucket", "ffs", 64, per as f64, 1.0, m);
        r.ratio_vs_baseline = Some(m / heap);
        out.push(r);
        let mut h = Record::new("pkts_per_bucket", "binary_heap", 64, per as f64, 1.0, heap);
        h.ratio_vs_baseline = Some(1.0);
        out.push(h);
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
            let ranks = workload(&occupied, 1, rng);
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
            let ranks = workload(&occupied, 1, rng);
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

fn print_tables(records: &[Record]) {
    println!("Fig. 12: fill then drain, every bucket occupied (Mpps; ratio to binary_heap in the same run)");
    let mut t = Table::new(["queue", "buckets", "pkts/bucket", "Mpps", "x binary_heap"]);
    for r in records.iter().filter(|r| r.experiment == "pkts_per_bucket") {
        t.row([
            r.queue.to_string(),
            r.buckets.to_string(),
            fmt_f(r.pkts_per_bucket, 0),
            fmt_f(r.mpps, 1),
            r.ratio_vs_baseline.map_or(String::new(), |x| fmt_f(x, 2)),
        ]);
    }
    println!("{}", t.render());
    println!("Fig. 13: approx_gradient against occupancy, one packet per occupied bucket (ratio to cffs in the same run)");
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
    println!("{}", t.render());
    println!(
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
    println!("{}", t.render());
}

/// Runs the three experiments.
pub fn run(opts: &CommonOpts) -> Result<(), BenchError> {
    let plan = Plan::new(opts.quick);
    let mut rng = SmallRng::seed_from_u64(0x5eed_e1ff);
    let _ = rng.gen::<u64>();
    let mut records = Vec::new();
    fig12(&plan, &mut rng, &mut records)?;
    fig13(&plan, &mut rng, &mut records)?;
    fig14(&plan, &mut rng, &mut records)?;
    if opts.json {
        print_results(&records)?;
    } else {
        print_tables(&records);
    }
    Ok(())
}
