//! Quantities from Python: a number in base units (ns, bits per second) or a
//! string with a unit (`"500ms"`, `"10Gbit"`), the grammar of policy files.

use eiffel_policy::units::{self, RateUnit, SizeUnit, TimeUnit};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A duration in ns from an int (ns) or a string with a unit.
pub(crate) fn duration(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    quantity(v, what, |s| units::parse::<TimeUnit>(s).map(|q| q.get()))
}

/// A rate in bits per second from an int or a string with a unit.
pub(crate) fn rate(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    quantity(v, what, |s| units::parse::<RateUnit>(s).map(|q| q.get()))
}

/// A size in bytes from an int or a string with a unit (`"8GiB"`).
pub(crate) fn size(v: &Bound<'_, PyAny>, what: &str) -> PyResult<u64> {
    quantity(v, what, |s| units::parse::<SizeUnit>(s).map(|q| q.get()))
}

fn quantity<E: std::fmt::Display>(
    v: &Bound<'_, PyAny>,
    what: &str,
    parse: impl Fn(&str) -> Result<u64, E>,
) -> PyResult<u64> {
    let n = if let Ok(n) = v.extract::<u64>() {
        n
    } else if let Ok(s) = v.extract::<String>() {
        parse(&s).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))?
    } else {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected an int or a string with a unit"
        )));
    };
    if n == 0 {
        return Err(PyValueError::new_err(format!("{what} must be positive")));
    }
    Ok(n)
}
