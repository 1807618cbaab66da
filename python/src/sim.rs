//! `eiffel.simulate()`: a network scenario through `eiffel-netsim`, the engine
//! of `eiffel sim`, with the same report.

use std::path::PathBuf;

use eiffel_netsim::scenario::Scenario;
use eiffel_netsim::sweep::{self, SweepOptions};
use pyo3::prelude::*;

use crate::{args, error};

/// Runs a scenario's sweep; the report as JSON text (the Python wrapper
/// parses it). See `eiffel.simulate`.
#[pyfunction]
#[pyo3(signature = (scenario, quick=false, schemes=None, loads=None, seeds=None, jobs=0, max_memory=None, check=false))]
#[allow(clippy::too_many_arguments, clippy::fn_params_excessive_bools)]
pub(crate) fn simulate_json(
    py: Python<'_>,
    scenario: PathBuf,
    quick: bool,
    schemes: Option<Vec<String>>,
    loads: Option<Vec<f64>>,
    seeds: Option<Vec<u64>>,
    jobs: usize,
    max_memory: Option<Bound<'_, PyAny>>,
    check: bool,
) -> PyResult<String> {
    let max_memory = match max_memory {
        Some(m) => args::size(&m, "max_memory")?,
        None => sweep::default_memory_limit(),
    };
    let mut scenario = Scenario::load(&scenario).map_err(error)?;
    if quick {
        scenario.make_quick();
    }
    if let Some(s) = schemes {
        scenario.keep_schemes(&s).map_err(error)?;
    }
    if let Some(l) = loads {
        scenario.set_loads(&l).map_err(error)?;
    }
    if let Some(s) = seeds {
        scenario.set_seeds(&s).map_err(error)?;
    }
    let opts = SweepOptions {
        jobs,
        max_memory,
        check,
    };
    py.detach(move || {
        let report = sweep::run(&scenario, opts, &|_| {}).map_err(error)?;
        serde_json::to_string(&report).map_err(error)
    })
}
