//! `Wheel.stats()`: the runtime's counters as a Python dict.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use timerwheel_core::Stats;

/// The counters under the runtime's names (those of the C `tw_stats` fields), in order.
pub fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (name, value) in s.fields() {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}
