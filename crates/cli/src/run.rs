//! `eiffel run`: a workload through a policy over an emulated link, in virtual
//! time. Parses the arguments, calls [`eiffel_policy::run()`], and renders the
//! report as tables, JSON or an SVG of rates over time.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use eiffel_policy::run::{RunOptions, RunReport};
use eiffel_policy::units::{self, fmt_rate, fmt_time, RateUnit, SizeUnit, TimeUnit, UnitError};
use eiffel_policy::{Limits, Policy, WorkloadFile, FIG6_POLICY, FIG6_WORKLOAD};
use indicatif::{ProgressBar, ProgressStyle};

use eiffel_bench::report::{fmt_f, Table};

/// Arguments of `eiffel run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The policy file (default: the built-in Eiffel Fig. 6 demo).
    pub policy: Option<PathBuf>,
    /// The workload file (default: the built-in demo's, or
    /// `../workloads/<policy name>.toml` next to the policy).
    #[arg(long, conflicts_with = "pcap")]
    pub workload: Option<PathBuf>,
    /// Replay a packet capture (pcap or pcapng, Ethernet) instead of a
    /// workload: capture times are arrivals, the policy's rules classify the
    /// frames; the link rate defaults to the root's limit.
    #[arg(long, value_name = "IN.pcap", requires = "policy")]
    pub pcap: Option<PathBuf>,
    /// With --pcap: write the packets sent, stamped with their departure
    /// times, as a capture (pcapng if the name ends in .pcapng).
    #[arg(long, value_name = "OUT.pcap", requires = "pcap")]
    pub write_pcap: Option<PathBuf>,
    /// Link rate, e.g. "10Gbit" (default: the workload's).
    #[arg(long, value_parser = parse_rate)]
    pub link_rate: Option<u64>,
    /// Simulated time, e.g. "5s" (default: the workload's).
    #[arg(long, value_parser = parse_time)]
    pub duration: Option<u64>,
    /// Generator seed (default: the workload's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write rates over time per leaf as an SVG chart.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Also run the same workload (same seed, link and duration) through this
    /// policy and compare the flow groups side by side; may be repeated.
    #[arg(long, value_name = "POLICY")]
    pub compare: Vec<PathBuf>,
    /// Refuse a run whose estimated memory (tree, flow table, workload flows,
    /// histograms) exceeds this, e.g. "8GiB".
    #[arg(long, value_parser = parse_size, default_value = "4GiB")]
    pub max_memory: u64,
    /// Refuse a run whose estimated events (arrivals, departures, on/off
    /// periods) exceed this; longer runs show their progress.
    #[arg(long, default_value_t = DEFAULT_MAX_EVENTS)]
    pub max_events: u64,
}

/// The default `--max-events`: a few minutes of a run (the Fig. 6 demo runs
/// about 3 million estimated events per second on the development machine).
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000_000;

/// Runs estimated above this many events report their progress on a terminal
/// (a bar with the time left) or, when the output is not a terminal, as a line
/// every [`PROGRESS_LINE_EVERY`].
const PROGRESS_EVENTS: u64 = 20_000_000;

/// Wall-clock time between two progress lines when stderr is not a terminal.
const PROGRESS_LINE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// A size with units, for `--max-memory`.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    units::parse::<SizeUnit>(s).map(|q| q.get())
}

fn parse_rate(s: &str) -> Result<u64, UnitError> {
    units::parse::<RateUnit>(s).map(|q| q.get())
}

fn parse_time(s: &str) -> Result<u64, UnitError> {
    units::parse::<TimeUnit>(s).map(|q| q.get())
}

/// The workload file that goes with `policy` when none is given:
/// `<dir>/../workloads/<stem>.toml`, or for a policy written with rank
/// expressions (`<name>-expr.toml`) the workload of the built-in it mirrors.
fn sibling_workload(policy: &Path) -> Option<PathBuf> {
    let stem = policy.file_stem()?.to_str()?;
    let dir = policy.parent()?.join("..").join("workloads");
    let base = stem.strip_suffix("-expr");
    [Some(stem), base]
        .into_iter()
        .flatten()
        .map(|s| dir.join(format!("{s}.toml")))
        .find(|c| c.is_file())
}

type BoxError = Box<dyn std::error::Error>;

/// Runs the command.
pub fn run(args: &RunArgs) -> Result<(), BoxError> {
    if let Some(path) = &args.plot {
        check_plot_path(path)?;
    }
    let limits = Limits {
        max_memory: args.max_memory,
    };
    if let (Some(pcap), Some(policy)) = (&args.pcap, &args.policy) {
        return crate::replay::run(args, policy, pcap);
    }
    let (policy, workload) = load_inputs(args, &limits)?;
    let opts = run_options(args, &workload)?;
    let others = args
        .compare
        .iter()
        .map(|p| Policy::load_with(p, &limits))
        .collect::<Result<Vec<_>, _>>()?;
    let events = admit(args, &limits, &workload, &opts, &policy, &others)?;
    let report = run_one(&policy, &workload, opts, events);
    let compared: Vec<RunReport> = others
        .iter()
        .map(|p| run_one(p, &workload, opts, events))
        .collect();
    if let Some(path) = &args.plot {
        plot(&report, path).map_err(|e| format!("--plot {}: {e}", path.display()))?;
    }
    print_reports(args, &report, &compared)
}

/// The policy and the workload: the built-in Fig. 6 pair, or the files given
/// (the workload found beside the policy when `--workload` is absent).
fn load_inputs(args: &RunArgs, limits: &Limits) -> Result<(Policy, WorkloadFile), BoxError> {
    let Some(p) = &args.policy else {
        let policy = Policy::parse_with(
            FIG6_POLICY,
            "examples/policies/fig6.toml (built in)",
            limits,
        )?;
        let workload = match &args.workload {
            Some(w) => WorkloadFile::load(w)?,
            None => WorkloadFile::parse(FIG6_WORKLOAD, "examples/workloads/fig6.toml (built in)")?,
        };
        return Ok((policy, workload));
    };
    let policy = Policy::load_with(p, limits)?;
    let path = match &args.workload {
        Some(w) => w.clone(),
        None => sibling_workload(p).ok_or_else(|| {
            format!(
                "no workload for {}: give --workload FILE (none found at ../workloads/{}.toml)",
                p.display(),
                p.file_stem()
                    .map_or(String::new(), |s| s.to_string_lossy().into_owned())
            )
        })?,
    };
    Ok((policy, WorkloadFile::load(&path)?))
}

/// The workload's run options with the command line's overrides.
fn run_options(args: &RunArgs, workload: &WorkloadFile) -> Result<RunOptions, BoxError> {
    let mut opts = RunOptions::from_workload(workload);
    if let Some(r) = args.link_rate {
        if r == 0 {
            return Err("--link-rate must be positive".into());
        }
        opts.link_rate = r;
    }
    if let Some(d) = args.duration {
        if d == 0 {
            return Err("--duration must be positive".into());
        }
        opts.duration = d;
    }
    if let Some(s) = args.seed {
        opts.seed = s;
    }
    Ok(opts)
}

/// Checks every run against the memory and event limits before any starts;
/// returns the events of all runs together.
fn admit(
    args: &RunArgs,
    limits: &Limits,
    workload: &WorkloadFile,
    opts: &RunOptions,
    policy: &Policy,
    others: &[Policy],
) -> Result<u64, BoxError> {
    let mut events = 0u64;
    for p in std::iter::once(policy).chain(others) {
        for warning in eiffel_policy::run::check_fits(p, workload)? {
            eprintln!("eiffel run: warning: {warning}");
        }
        let cost = eiffel_policy::run::estimate(p, workload, opts);
        cost.memory.check(limits)?;
        events = events.saturating_add(cost.run.events());
    }
    if events > args.max_events {
        return Err(format!(
            "the run would process about {} events ({} of virtual time over a {} link), above --max-events {}: shorten --duration, lower the rates or raise --max-events",
            fmt_count(events),
            fmt_time(opts.duration as f64),
            fmt_rate(opts.link_rate as f64),
            fmt_count(args.max_events)
        )
        .into());
    }
    Ok(events)
}

/// Prints the run's report (and the compared runs'), as JSON or as tables.
fn print_reports(
    args: &RunArgs,
    report: &RunReport,
    compared: &[RunReport],
) -> Result<(), BoxError> {
    if args.json {
        if compared.is_empty() {
            println!("{}", serde_json::to_string_pretty(report)?);
        } else {
            let runs: Vec<&RunReport> = std::iter::once(report).chain(compared).collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&serde_json::json!({ "runs": runs }))?
            );
        }
        return Ok(());
    }
    print!("{}", render(report));
    if !compared.is_empty() {
        print!("\n{}", render_comparison(report, compared));
    }
    if let Some(path) = &args.plot {
        println!("rates over time written to {}", path.display());
    }
    Ok(())
}

/// A count with a decimal suffix: `"1.2 G"`, `"350 M"`.
fn fmt_count(n: u64) -> String {
    let x = n as f64;
    let (v, unit) = if x >= 1e12 {
        (x / 1e12, " T")
    } else if x >= 1e9 {
        (x / 1e9, " G")
    } else if x >= 1e6 {
        (x / 1e6, " M")
    } else {
        return n.to_string();
    };
    format!("{}{unit}", fmt_f(v, 3))
}

/// Refuses a `--plot` path before the run: an `.svg` name in a directory that
/// exists.
fn check_plot_path(path: &Path) -> Result<(), String> {
    let svg = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("svg"));
    if !svg {
        return Err(format!(
            "--plot {}: the chart is an SVG file, name it with the .svg extension",
            path.display()
        ));
    }
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(format!(
            "--plot {}: the directory {} does not exist",
            path.display(),
            dir.display()
        ));
    }
    if path.is_dir() {
        return Err(format!("--plot {}: is a directory", path.display()));
    }
    Ok(())
}

/// Runs `workload` through `policy`; a run estimated at more than
/// [`PROGRESS_EVENTS`] events shows its progress: a bar with the time left on a
/// terminal, else a line every [`PROGRESS_LINE_EVERY`].
fn run_one(policy: &Policy, workload: &WorkloadFile, opts: RunOptions, events: u64) -> RunReport {
    let total_ms = (opts.duration / 1_000_000).max(1);
    let terminal = std::io::stderr().is_terminal();
    let bar = terminal.then(|| {
        let bar = ProgressBar::new(total_ms);
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:40} {pos}/{len} ms simulated ({elapsed}, about {eta} left)",
            )
            .expect("valid template"),
        );
        bar
    });
    let progress = bar.clone();
    let lines = !terminal && events > PROGRESS_EVENTS;
    let name = policy.file_name().to_string();
    let started = std::time::Instant::now();
    let mut last_line = started;
    let report = eiffel_policy::run(policy, workload, opts, move |now| {
        if let Some(b) = &progress {
            b.set_position(now / 1_000_000);
        } else if lines && last_line.elapsed() >= PROGRESS_LINE_EVERY {
            last_line = std::time::Instant::now();
            let done = now as f64 / opts.duration.max(1) as f64;
            let spent = started.elapsed().as_secs_f64();
            let left = if done > 0.0 {
                spent / done - spent
            } else {
                0.0
            };
            eprintln!(
                "eiffel run: {name}: {} of {} simulated ({}%), about {} left",
                fmt_time(now as f64),
                fmt_time(opts.duration as f64),
                fmt_f(done * 100.0, 1),
                fmt_time(left * 1e9)
            );
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report
}

/// A progress bar over `duration` of simulated time, on a terminal only.
pub(crate) fn progress_bar(duration: u64) -> Option<ProgressBar> {
    std::io::stderr().is_terminal().then(|| {
        let bar = ProgressBar::new(duration / 1_000_000);
        bar.set_style(
            ProgressStyle::with_template("{bar:40} {pos}/{len} ms simulated ({elapsed})")
                .expect("valid template"),
        );
        bar
    })
}

/// The flow groups of several runs of one workload, side by side.
#[must_use]
pub fn render_comparison(first: &RunReport, others: &[RunReport]) -> String {
    let mut out = String::from("comparison (same workload, seed, link and duration):\n");
    let mut t = Table::new([
        "flow",
        "policy",
        "throughput",
        "p99",
        "fct done",
        "fct mean",
        "fct p50",
        "fct p99",
    ]);
    for f in &first.flows {
        for r in std::iter::once(first).chain(others) {
            let Some(g) = r.flows.iter().find(|g| g.name == f.name) else {
                continue;
            };
            let (done, mean, p50, p99) = match &g.fct {
                Some(c) => (
                    format!("{}/{}", c.completed, c.flows),
                    latency(c.mean_ns as u64),
                    latency(c.p50_ns),
                    latency(c.p99_ns),
                ),
                None => ("-".into(), "-".into(), "-".into(), "-".into()),
            };
            t.row([
                g.name.clone(),
                r.policy.clone(),
                fmt_rate(g.throughput_bps),
                latency(g.latency.p99_latency_ns),
                done,
                mean,
                p50,
                p99,
            ]);
        }
    }
    out.push_str(&t.render());
    out
}

fn latency(ns: u64) -> String {
    if ns == 0 {
        "-".into()
    } else {
        fmt_time(ns as f64)
    }
}

/// Drops by reason as `"N reason, ..."`, `"0"` without any.
fn drops_text(drops: &std::collections::BTreeMap<String, u64>) -> String {
    if drops.is_empty() {
        return "0".to_string();
    }
    drops
        .iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The nodes' table.
fn nodes_table(r: &RunReport) -> String {
    let mut t = Table::new([
        "node",
        "discipline",
        "weight",
        "throughput",
        "share",
        "limit",
        "p50",
        "p99",
        "p999",
        "queued",
        "drops",
    ]);
    for n in &r.nodes {
        t.row([
            format!(
                "{}{}",
                "  ".repeat(n.depth),
                n.path.rsplit('/').next().unwrap_or(&n.path)
            ),
            n.discipline.clone(),
            n.weight.to_string(),
            fmt_rate(n.throughput_bps),
            n.share_of_parent
                .map_or_else(|| "-".into(), |s| format!("{}%", fmt_f(s * 100.0, 1))),
            n.limit_bps
                .map_or_else(|| "-".into(), |l| fmt_rate(l as f64)),
            latency(n.latency.p50_latency_ns),
            latency(n.latency.p99_latency_ns),
            latency(n.latency.p999_latency_ns),
            n.queued.to_string(),
            drops_text(&n.drops),
        ]);
    }
    t.render()
}

/// The flow groups' table.
fn flows_table(r: &RunReport) -> String {
    let mut t = Table::new([
        "flow",
        "count",
        "leaf",
        "offered",
        "throughput",
        "p50",
        "p99",
        "p999",
        "dropped",
        "fct done",
        "fct p50",
        "fct p99",
    ]);
    for f in &r.flows {
        let (done, p50, p99) = match &f.fct {
            Some(c) => (
                format!("{}/{}", c.completed, c.flows),
                latency(c.p50_ns),
                latency(c.p99_ns),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        t.row([
            f.name.clone(),
            f.count.to_string(),
            f.leaves.join(","),
            fmt_rate(f.offered_bps),
            fmt_rate(f.throughput_bps),
            latency(f.latency.p50_latency_ns),
            latency(f.latency.p99_latency_ns),
            latency(f.latency.p999_latency_ns),
            drops_text(&f.drops),
            done,
            p50,
            p99,
        ]);
    }
    t.render()
}

/// The report as text: the run, the nodes, the flows, the totals.
#[must_use]
pub fn render(r: &RunReport) -> String {
    let mut out = format!(
        "eiffel run: {} over a {} link for {} of virtual time (seed {}, shaper precision {})\n\n",
        r.policy,
        fmt_rate(r.link_rate_bps as f64),
        fmt_time(r.duration_ns as f64),
        r.seed,
        fmt_time(r.shaper_granularity_ns as f64)
    );
    out.push_str(&nodes_table(r));
    out.push('\n');
    out.push_str(&flows_table(r));
    let c = &r.totals;
    out.push_str(&format!(
        "\ntotals: {} enqueued = {} dequeued + {} dropped + {} queued\n",
        c.enqueued, c.dequeued, c.dropped, c.queued
    ));
    out.push_str(&window_warnings(r));
    out
}

/// A line per node whose queues placed ranks outside their window, where the
/// departure order stops following the ranks.
fn window_warnings(r: &RunReport) -> String {
    r.nodes
        .iter()
        .filter(|n| n.out_of_window > 0)
        .map(|n| {
            format!(
                "warning: node {}: {} ranks fell outside its queue's window and may have left \
                 out of rank order; widen the window (`buckets`, `granularity`)\n",
                n.path, n.out_of_window
            )
        })
        .collect()
}

/// Writes rates over time per leaf as an SVG line chart.
pub(crate) fn plot(r: &RunReport, path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let bins = r.series.first().map_or(0, |s| s.rates_bps.len());
    let secs = r.bin_ns as f64 / 1e9;
    let x_max = (bins as f64 * secs).max(secs);
    let y_max = r
        .series
        .iter()
        .flat_map(|s| s.rates_bps.iter())
        .fold(0.0f64, |a, &b| a.max(b))
        / 1e6
        * 1.1;
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{}: rates per leaf", r.policy), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max.max(1e-3))?;
    chart
        .configure_mesh()
        .x_desc("time (s)")
        .y_desc("Mbit/s")
        .draw()?;
    for (i, s) in r.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.rates_bps
                    .iter()
                    .enumerate()
                    .map(|(b, &v)| ((b as f64 + 0.5) * secs, v / 1e6)),
                color.stroke_width(2),
            ))?
            .label(s.path.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
