//! `eiffel run POLICY --pcap IN.pcap [--write-pcap OUT.pcap]`: a capture
//! replayed through the policy on the emulated link ([`eiffel_pcap::replay`]),
//! reported like a workload run, plus what the classifier saw of the capture.

use std::path::Path;

use eiffel_pcap::{Capture, CaptureSummary, Format, Replay, ReplayOptions};
use eiffel_policy::run::RunReport;
use eiffel_policy::units::{fmt_rate, fmt_time};
use eiffel_policy::Policy;
use serde::Serialize;

use crate::run::{plot, progress_bar, render, render_comparison, RunArgs};

/// The JSON of a replay: the run's report and the capture's summary.
#[derive(Serialize)]
struct Json<'a> {
    #[serde(flatten)]
    report: &'a RunReport,
    capture: &'a CaptureSummary,
}

/// Replays `capture` through `policy` with a progress bar on a terminal.
fn replay_one(
    policy: &Policy,
    capture: &Capture,
    opts: ReplayOptions,
) -> Result<Replay, Box<dyn std::error::Error>> {
    let run_opts = eiffel_pcap::run_options(policy, capture, opts)?;
    let bar = progress_bar(run_opts.duration);
    let progress = bar.clone();
    let r = eiffel_pcap::replay(policy, capture, opts, move |now| {
        if let Some(b) = &progress {
            b.set_position(now / 1_000_000);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(r?)
}

/// The capture line of the text report.
fn render_capture(c: &CaptureSummary) -> String {
    let span = if c.span_ns == 0 {
        "0 s".to_string()
    } else {
        fmt_time(c.span_ns as f64)
    };
    let rate = if c.span_ns == 0 {
        String::new()
    } else {
        format!(" ({})", fmt_rate(c.bytes as f64 * 8e9 / c.span_ns as f64))
    };
    format!(
        "capture {}: {} packets, {} bytes over {span}{rate}, {} flows; {} malformed ({} dropped before the tree), {} after the end of the run\n",
        c.name, c.frames, c.bytes, c.flows, c.malformed, c.malformed_dropped, c.after_end
    )
}

/// Runs the command with `--pcap`.
pub fn run(args: &RunArgs, policy: &Path, pcap: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let policy = Policy::load(policy)?;
    let others = args
        .compare
        .iter()
        .map(Policy::load)
        .collect::<Result<Vec<_>, _>>()?;
    let capture = Capture::read(pcap)?;
    let opts = ReplayOptions {
        link_rate: args.link_rate,
        duration: args.duration,
    };
    let r = replay_one(&policy, &capture, opts)?;
    let compared = others
        .iter()
        .map(|p| replay_one(p, &capture, opts).map(|r| r.report))
        .collect::<Result<Vec<_>, _>>()?;
    if let Some(out) = &args.write_pcap {
        eiffel_pcap::write_departures(out, Format::for_path(out), &capture, &r.departures)?;
    }
    if let Some(path) = &args.plot {
        plot(&r.report, path)?;
    }
    if args.json {
        let json = Json {
            report: &r.report,
            capture: &r.capture,
        };
        if compared.is_empty() {
            println!("{}", serde_json::to_string_pretty(&json)?);
        } else {
            let runs = serde_json::json!({ "runs": std::iter::once(serde_json::to_value(&json)?)
                .chain(compared.iter().map(|c| serde_json::to_value(c).unwrap_or_default()))
                .collect::<Vec<_>>() });
            println!("{}", serde_json::to_string_pretty(&runs)?);
        }
        return Ok(());
    }
    print!("{}", render_capture(&r.capture));
    print!("{}", render(&r.report));
    if !compared.is_empty() {
        print!("\n{}", render_comparison(&r.report, &compared));
    }
    if let Some(out) = &args.write_pcap {
        println!(
            "{} departures written to {}",
            r.departures.len(),
            out.display()
        );
    }
    if let Some(path) = &args.plot {
        println!("rates over time written to {}", path.display());
    }
    Ok(())
}
