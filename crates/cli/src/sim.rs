//! `eiffel sim`: a network scenario (topology, traffic, schemes) through the
//! packet-level simulator of `eiffel-netsim`, swept over loads and seeds in
//! parallel. Parses the arguments, calls [`eiffel_netsim::sweep::run`], and
//! renders the report as tables, JSON or an SVG figure.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use eiffel_bench::report::{fmt_f, Table};
use eiffel_netsim::report::{human_bytes, SimReport};
use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::sweep::{self, SweepOptions};
use eiffel_policy::units::{self, SizeUnit};
use indicatif::{ProgressBar, ProgressStyle};

/// Arguments of `eiffel sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    /// The scenario file (see examples/scenarios/).
    pub scenario: PathBuf,
    /// Apply the scenario's [quick] section: a reduced sweep.
    #[arg(long)]
    pub quick: bool,
    /// Print the report as JSON ({"results": [...], ...}).
    #[arg(long)]
    pub json: bool,
    /// Write the scenario's figure panels as an SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Runs in parallel (default: one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Refuse a sweep expected to need more memory than this, e.g. "8GiB"
    /// (default: 80% of the memory available).
    #[arg(long, value_parser = parse_size)]
    pub max_memory: Option<u64>,
    /// Only these schemes (repeatable).
    #[arg(long = "scheme", value_name = "NAME")]
    pub schemes: Vec<String>,
    /// Only these loads, e.g. "0.2,0.8".
    #[arg(long, value_delimiter = ',')]
    pub loads: Vec<f64>,
    /// Only these seeds, e.g. "1,2,3" (instead of the scenario's).
    #[arg(long, value_delimiter = ',')]
    pub seeds: Vec<u64>,
    /// Verify every packet balance at every port at the end of each run.
    #[arg(long)]
    pub check: bool,
}

fn parse_size(s: &str) -> Result<u64, units::UnitError> {
    units::parse::<SizeUnit>(s).map(|q| q.get())
}

/// Runs the command.
pub fn run(args: &SimArgs) -> Result<(), Box<dyn std::error::Error>> {
    let mut scenario = Scenario::load(&args.scenario)?;
    if args.quick {
        scenario.make_quick();
    }
    if !args.schemes.is_empty() {
        scenario
            .keep_schemes(&args.schemes)
            .map_err(|e| format!("--scheme: {e}"))?;
    }
    if !args.loads.is_empty() {
        scenario
            .set_loads(&args.loads)
            .map_err(|e| format!("--loads: {e}"))?;
    }
    if !args.seeds.is_empty() {
        scenario
            .set_seeds(&args.seeds)
            .map_err(|e| format!("--seeds: {e}"))?;
    }
    let opts = SweepOptions {
        jobs: args.jobs,
        max_memory: args.max_memory.unwrap_or_else(sweep::default_memory_limit),
        check: args.check,
    };
    let total = sweep::plan(&scenario).len();
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(total as u64);
        b.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} runs, {msg} ({elapsed})")
                .expect("valid template"),
        );
        b
    });
    let started = Instant::now();
    let report = sweep::run(&scenario, opts, &|p| {
        if let Some(b) = &bar {
            b.set_position(p.done as u64);
            b.set_message(format!("{:.0} M events", p.events as f64 / 1e6));
        }
    })?;
    let wall = started.elapsed();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some(path) = &args.plot {
        eiffel_netsim::plot::plot(&report, path)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        let events: u64 = report.runs.iter().map(|r| r.events).sum();
        println!(
            "eiffel sim: {} ({}): {} hosts, {} runs ({} schemes x {} loads x {} seeds) in {:.1} s wall, {:.0} M events\n",
            scenario.name,
            scenario.file,
            scenario.topology.hosts().len(),
            total,
            scenario.schemes.len(),
            scenario.loads.len(),
            scenario.seeds.len(),
            wall.as_secs_f64(),
            events as f64 / 1e6
        );
        print!("{}", render(&report));
        if let Some(path) = &args.plot {
            println!("figure written to {}", path.display());
        }
    }
    Ok(())
}

fn ms(v: f64) -> String {
    fmt_f(v, 3)
}

/// The report as text tables.
#[must_use]
pub fn render(r: &SimReport) -> String {
    let mut out = String::new();
    let mut section = |title: &str, table: Option<Table>| {
        if let Some(t) = table {
            out.push_str(title);
            out.push_str(&t.render());
            out.push('\n');
        }
    };
    section(
        "flow completion times (finite flows by traffic, seeds pooled):\n",
        results(r),
    );
    section("coflow completion times:\n", coflows(r));
    section("observed flows, one-way delays:\n", delays(r));
    section(
        "long-lived flows, goodput over the measurement window:\n",
        long_lived(r),
    );
    section("runs:\n", Some(runs(r)));
    section("", Some(ports(r)));
    section("queue occupancy over time:\n", queues(r));
    out
}

fn results(r: &SimReport) -> Option<Table> {
    if r.results.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scheme",
        "load",
        "traffic",
        "size class",
        "flows",
        "done",
        "mean FCT ms",
        "p99 FCT ms",
        "mean slowdown",
        "p99 slowdown",
        "mean Mbit/s",
    ]);
    for x in &r.results {
        t.row([
            x.scheme.clone(),
            fmt_f(x.load, 2),
            x.traffic.clone(),
            x.size_class.clone(),
            x.flows.to_string(),
            x.completed.to_string(),
            ms(x.mean_fct_ms),
            ms(x.p99_fct_ms),
            fmt_f(x.mean_slowdown, 2),
            fmt_f(x.p99_slowdown, 2),
            fmt_f(x.mean_rate_mbps, 1),
        ]);
    }
    Some(t)
}

fn coflows(r: &SimReport) -> Option<Table> {
    if r.coflows.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scheme",
        "load",
        "traffic",
        "coflows",
        "done",
        "mean CCT ms",
        "p99 CCT ms",
    ]);
    for c in &r.coflows {
        t.row([
            c.scheme.clone(),
            fmt_f(c.load, 2),
            c.traffic.clone(),
            c.coflows.to_string(),
            c.completed.to_string(),
            ms(c.mean_cct_ms),
            ms(c.p99_cct_ms),
        ]);
    }
    Some(t)
}

fn delays(r: &SimReport) -> Option<Table> {
    if r.delays.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scheme",
        "load",
        "seed",
        "traffic",
        "packets",
        "mean ms",
        "stddev ms",
        "max ms",
        "jitter ms",
        "per hop ms",
    ]);
    for d in &r.delays {
        let hops: Vec<String> = d.per_hop_ms.iter().map(|h| fmt_f(*h, 3)).collect();
        t.row([
            d.scheme.clone(),
            fmt_f(d.load, 2),
            d.seed.to_string(),
            d.traffic.clone(),
            d.packets.to_string(),
            ms(d.mean_delay_ms),
            ms(d.stddev_delay_ms),
            ms(d.max_delay_ms),
            ms(d.jitter_ms),
            hops.join(" "),
        ]);
    }
    Some(t)
}

fn long_lived(r: &SimReport) -> Option<Table> {
    if r.long_lived.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scheme",
        "load",
        "seed",
        "flows",
        "mean Mbit/s",
        "min",
        "max",
        "Jain",
    ]);
    for l in &r.long_lived {
        t.row([
            l.scheme.clone(),
            fmt_f(l.load, 2),
            l.seed.to_string(),
            l.flows.to_string(),
            fmt_f(l.mean_goodput_mbps, 1),
            fmt_f(l.min_goodput_mbps, 1),
            fmt_f(l.max_goodput_mbps, 1),
            fmt_f(l.jain, 4),
        ]);
    }
    Some(t)
}

fn runs(r: &SimReport) -> Table {
    let mut t = Table::new([
        "scheme",
        "load",
        "seed",
        "done",
        "events",
        "sim ms",
        "drops",
        "evicted",
        "ECN marks",
        "timeouts",
        "inversions",
    ]);
    for x in &r.runs {
        let inversions = if x.order_checked > 0 {
            format!("{}/{}", x.inversions, x.order_checked)
        } else {
            "-".into()
        };
        t.row([
            x.scheme.clone(),
            fmt_f(x.load, 2),
            x.seed.to_string(),
            format!("{}/{}", x.completed, x.finite),
            x.events.to_string(),
            fmt_f(x.sim_time_ms, 1),
            x.drops.to_string(),
            x.evicted.to_string(),
            x.marked.to_string(),
            x.timeouts.to_string(),
            inversions,
        ]);
    }
    t
}

/// The busiest port of each run.
fn ports(r: &SimReport) -> Table {
    let mut t = Table::new([
        "scheme",
        "load",
        "seed",
        "busiest port",
        "util",
        "max queue",
        "mean wait us",
        "max wait us",
        "drops",
    ]);
    let mut seen = std::collections::BTreeSet::new();
    for p in &r.ports {
        if !seen.insert((p.scheme.clone(), p.load.to_bits(), p.seed)) {
            continue;
        }
        let drops = if p.drop_reasons.is_empty() {
            "0".into()
        } else {
            p.drop_reasons
                .iter()
                .map(|(n, c)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        t.row([
            p.scheme.clone(),
            fmt_f(p.load, 2),
            p.seed.to_string(),
            p.port.clone(),
            format!("{}%", fmt_f(p.utilization * 100.0, 1)),
            human_bytes((p.max_queue_kb * 1e3) as u64),
            fmt_f(p.mean_queue_delay_us, 2),
            fmt_f(p.max_queue_delay_us, 2),
            drops,
        ]);
    }
    t
}

fn queues(r: &SimReport) -> Option<Table> {
    if r.queues.is_empty() {
        return None;
    }
    let mut t = Table::new([
        "scheme",
        "load",
        "seed",
        "sampled port",
        "every us",
        "mean",
        "p50",
        "p99",
        "p99 wait us",
    ]);
    for q in &r.queues {
        t.row([
            q.scheme.clone(),
            fmt_f(q.load, 2),
            q.seed.to_string(),
            q.port.clone(),
            fmt_f(q.interval_us, 1),
            human_bytes(q.mean_bytes as u64),
            human_bytes(q.p50_bytes),
            human_bytes(q.p99_bytes),
            fmt_f(q.p99_delay_us, 2),
        ]);
    }
    Some(t)
}
