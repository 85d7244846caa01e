//! Python values to runtime values: seconds (a number or a `datetime.timedelta`) to
//! `Duration` / `SystemTime`, and the `Wheel(...)` arguments to a `Config`.

use std::time::{Duration, SystemTime};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyType};
use timerwheel_core::Config;

use crate::errors::invalid;

/// Seconds as Python passes them (`name` is the argument's name, for the message): a
/// number, or a `datetime.timedelta`.
pub fn as_seconds(name: &str, value: &Bound<'_, PyAny>) -> PyResult<f64> {
    if let Ok(number) = value.extract::<f64>() {
        return Ok(number);
    }
    static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    let timedelta = TIMEDELTA.import(value.py(), "datetime", "timedelta")?;
    if value.is_instance(timedelta)? {
        return value.call_method0("total_seconds")?.extract();
    }
    let kind = value.get_type().name()?;
    Err(PyTypeError::new_err(format!(
        "{name} must be a number of seconds or a datetime.timedelta, got an object of type {kind}"
    )))
}

/// A delay as Python passes it, as a `Duration` (see [`as_seconds`] and [`seconds`]). A
/// `float`, what most callers pass, is read at once (every `call_later` comes here).
#[inline]
pub fn delay(name: &str, value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    match value.cast_exact::<PyFloat>() {
        Ok(float) => seconds(name, float.value()),
        Err(_) => seconds(name, as_seconds(name, value)?),
    }
}

/// Float seconds (`name` is the argument's name, for the message) as a `Duration`, rounded
/// to the nearest nanosecond (a half up); the runtime then rounds it up to its tick, never
/// down.
#[inline]
pub fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    // Adding a half then truncating rounds a value >= 0 to the nearest (without a call
    // to `round`); NaN fails the first test.
    let nanos = value * 1e9 + 0.5;
    if value >= 0.0 && nanos < u64::MAX as f64 {
        return Ok(Duration::from_nanos(nanos as u64));
    }
    Err(out_of_range(name, value))
}

/// The error of [`seconds`] for `value`.
#[cold]
fn out_of_range(name: &str, value: f64) -> PyErr {
    match value.is_nan() || value < 0.0 {
        true => invalid(format!(
            "{name} must be a number of seconds >= 0, got {value}"
        )),
        false => invalid(format!("{name} is too large: {value} seconds")),
    }
}

/// A period: like [`delay`], and more than zero.
pub fn period(value: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let value = as_seconds("period", value)?;
    let period = seconds("period", value)?;
    if period.is_zero() {
        return Err(invalid(format!("period must be > 0 seconds, got {value}")));
    }
    Ok(period)
}

/// A Unix timestamp in float seconds (as `time.time()` gives) as a `SystemTime`.
pub fn unix_time(value: f64) -> PyResult<SystemTime> {
    let magnitude = seconds("when", value.abs()).map_err(|_| {
        invalid(format!(
            "when must be a finite Unix timestamp in seconds, got {value}"
        ))
    })?;
    let when = if value >= 0.0 {
        SystemTime::UNIX_EPOCH.checked_add(magnitude)
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(magnitude)
    };
    when.ok_or_else(|| invalid(format!("when is out of range: {value}")))
}

/// A `SystemTime` as a Unix timestamp in float seconds (as `time.time()` gives).
pub fn unix_seconds(time: SystemTime) -> f64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

/// The arguments of `Wheel(...)`, as Python passes them; `None` takes the default.
pub struct WheelArgs {
    pub tick: Option<f64>,
    pub min_workers: Option<i64>,
    pub max_workers: Option<i64>,
    pub worker_keepalive: Option<f64>,
    pub max_timers: Option<i64>,
    pub manual: Option<bool>,
    pub virtual_start: Option<SystemTime>,
    pub slow_callback: Option<f64>,
}

impl WheelArgs {
    /// The runtime configuration: `Config::default()` with the arguments given, checked by
    /// the runtime; a `ValueError` naming the argument that is wrong.
    pub fn config(&self) -> PyResult<Config> {
        let mut config = Config::default();
        if let Some(tick) = self.tick {
            config.tick = seconds("tick", tick)?;
        }
        if let Some(n) = self.min_workers {
            config.min_workers = count("min_workers", n)?;
        }
        if let Some(n) = self.max_workers {
            config.max_workers = count("max_workers", n)?;
        }
        if let Some(keepalive) = self.worker_keepalive {
            config.worker_keepalive = seconds("worker_keepalive", keepalive)?;
        }
        if let Some(n) = self.max_timers {
            config.max_timers = count("max_timers", n)?;
        }
        config.manual = self.manual.unwrap_or(config.manual);
        config.virtual_start = self.virtual_start;
        if let Some(threshold) = self.slow_callback {
            config.slow_callback = Some(seconds("slow_callback", threshold)?);
        }
        config.validate().map_err(|err| invalid(err.to_string()))?;
        Ok(config)
    }
}

/// A configuration as the keyword arguments of `Wheel(...)` that give it (no `max_timers`
/// limit is None).
pub fn config_dict<'py>(py: Python<'py>, config: &Config) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("tick", config.tick.as_secs_f64())?;
    dict.set_item("min_workers", config.min_workers)?;
    dict.set_item("max_workers", config.max_workers)?;
    dict.set_item("worker_keepalive", config.worker_keepalive.as_secs_f64())?;
    let max_timers = (config.max_timers != 0).then_some(config.max_timers);
    dict.set_item("max_timers", max_timers)?;
    dict.set_item("manual", config.manual)?;
    let virtual_clock = config.virtual_start.map(|start| {
        start
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    });
    dict.set_item("virtual_clock", virtual_clock)?;
    let slow_callback = config.slow_callback.map(|d| d.as_secs_f64());
    dict.set_item("slow_callback", slow_callback)?;
    Ok(dict)
}

fn count(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| invalid(format!("{name} must be >= 0, got {value}")))
}
