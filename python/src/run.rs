//! `eiffel.run()` and `eiffel.check()`: the engine of `eiffel run` and
//! `eiffel check`, with the same reports.

use std::path::{Path, PathBuf};

use eiffel_pcap::{Capture, ReplayOptions};
use eiffel_policy::run::RunOptions;
use eiffel_policy::{Policy, WorkloadFile, FIG6_POLICY, FIG6_WORKLOAD};
use pyo3::prelude::*;

use crate::{args, error};

/// The workload file next to `policy`: `<dir>/../workloads/<stem>.toml`.
fn sibling_workload(policy: &Path) -> Option<PathBuf> {
    let stem = policy.file_stem()?;
    let candidate = policy
        .parent()?
        .join("..")
        .join("workloads")
        .join(stem)
        .with_extension("toml");
    candidate.is_file().then_some(candidate)
}

/// The policy and workload of a run, as `eiffel run` picks them.
fn inputs(policy: Option<&Path>, workload: Option<&Path>) -> PyResult<(Policy, WorkloadFile)> {
    let Some(p) = policy else {
        let policy = Policy::parse(FIG6_POLICY, "examples/policies/fig6.toml (built in)");
        let w = match workload {
            Some(w) => WorkloadFile::load(w),
            None => WorkloadFile::parse(FIG6_WORKLOAD, "examples/workloads/fig6.toml (built in)"),
        };
        return Ok((policy.map_err(error)?, w.map_err(error)?));
    };
    let policy = Policy::load(p).map_err(error)?;
    let path = match workload {
        Some(w) => w.to_path_buf(),
        None => sibling_workload(p).ok_or_else(|| {
            error(format!(
                "no workload for {}: give workload= (none found at ../workloads/<name>.toml)",
                p.display()
            ))
        })?,
    };
    Ok((policy, WorkloadFile::load(&path).map_err(error)?))
}

/// Runs a policy on a workload or a capture; the report as JSON text (the
/// Python wrapper parses it). See `eiffel.run`.
#[pyfunction]
#[pyo3(signature = (policy=None, workload=None, pcap=None, duration=None, link_rate=None, seed=None))]
pub(crate) fn run_json(
    py: Python<'_>,
    policy: Option<PathBuf>,
    workload: Option<PathBuf>,
    pcap: Option<PathBuf>,
    duration: Option<Bound<'_, PyAny>>,
    link_rate: Option<Bound<'_, PyAny>>,
    seed: Option<u64>,
) -> PyResult<String> {
    let duration = duration
        .map(|d| args::duration(&d, "duration"))
        .transpose()?;
    let link_rate = link_rate.map(|r| args::rate(&r, "link_rate")).transpose()?;
    if let Some(pcap) = pcap {
        if workload.is_some() {
            return Err(error("give a workload or a pcap, not both"));
        }
        let policy = policy.ok_or_else(|| error("a pcap replay needs a policy"))?;
        let policy = Policy::load(&policy).map_err(error)?;
        let opts = ReplayOptions {
            link_rate,
            duration,
        };
        return py.detach(move || {
            let capture = Capture::read(&pcap).map_err(error)?;
            let r = eiffel_pcap::replay(&policy, &capture, opts, |_| {}).map_err(error)?;
            let mut v = serde_json::to_value(&r.report).map_err(error)?;
            v["capture"] = serde_json::to_value(&r.capture).map_err(error)?;
            Ok(v.to_string())
        });
    }
    let (policy, workload) = inputs(policy.as_deref(), workload.as_deref())?;
    let mut opts = RunOptions::from_workload(&workload);
    opts.duration = duration.unwrap_or(opts.duration);
    opts.link_rate = link_rate.unwrap_or(opts.link_rate);
    opts.seed = seed.unwrap_or(opts.seed);
    py.detach(move || {
        let report = eiffel_policy::run(&policy, &workload, opts, |_| {});
        serde_json::to_string(&report).map_err(error)
    })
}

/// Validates a policy file and describes the compiled tree, as `eiffel check`
/// prints it. Raises `EiffelError` naming the file, line and key of a mistake.
#[pyfunction]
pub(crate) fn check(policy: PathBuf) -> PyResult<String> {
    let p = Policy::load(&policy).map_err(error)?;
    Ok(eiffel_policy::describe::describe(&p, &p.build()))
}
