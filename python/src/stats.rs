//! `Wheel.stats()`: the runtime's counters as a Python dict.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use timerwheel_core::Stats;

/// The counters under the names of the C `tw_stats` fields, in the same order.
pub fn stats_dict<'py>(py: Python<'py>, s: &Stats) -> PyResult<Bound<'py, PyDict>> {
    let fields = [
        ("pending", s.pending),
        ("added", s.added),
        ("fired", s.fired),
        ("fired_one_shot", s.fired_one_shot),
        ("cancelled", s.cancelled),
        ("discarded", s.discarded),
        ("workers", s.workers),
        ("workers_peak", s.workers_peak),
        ("workers_spawned", s.workers_spawned),
        ("workers_retired", s.workers_retired),
        ("queue_depth", s.queue_depth),
        ("late_p50_us", s.late_p50_us),
        ("late_p99_us", s.late_p99_us),
        ("late_max_us", s.late_max_us),
        ("callback_panics", s.callback_panics),
    ];
    let dict = PyDict::new(py);
    for (name, value) in fields {
        dict.set_item(name, value)?;
    }
    Ok(dict)
}
