//! The native half of the `eiffel` Python package (`eiffel._eiffel`): runs of
//! policies on workloads and captures (`run`), network scenarios (`sim`), a policy tree with its
//! classifier (`tree::Scheduler`), flow schedulers (`flows::FlowScheduler`)
//! and bucketed priority queues (`queue::Queue`). The Python half
//! (`python/eiffel/__init__.py`) turns reports into dicts and DataFrames.

use pyo3::prelude::*;

mod args;
mod flows;
mod packet;
mod queue;
mod run;
mod sim;
mod tree;

pyo3::create_exception!(
    _eiffel,
    EiffelError,
    pyo3::exceptions::PyException,
    "A policy, workload, capture or scenario that cannot be used (the message names the file, line and key)."
);

/// An error of Eiffel's as an [`EiffelError`].
pub(crate) fn error(e: impl std::fmt::Display) -> PyErr {
    EiffelError::new_err(e.to_string())
}

#[pymodule]
fn _eiffel(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("EiffelError", m.py().get_type::<EiffelError>())?;
    m.add_function(wrap_pyfunction!(run::run_json, m)?)?;
    m.add_function(wrap_pyfunction!(run::check, m)?)?;
    m.add_function(wrap_pyfunction!(sim::simulate_json, m)?)?;
    m.add_class::<packet::Packet>()?;
    m.add_class::<tree::Scheduler>()?;
    m.add_class::<flows::FlowScheduler>()?;
    m.add_class::<queue::Queue>()?;
    Ok(())
}
