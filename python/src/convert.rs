//! Python values to runtime values: float seconds to `Duration` / `SystemTime`, and the
//! `Wheel(...)` arguments to a `Config`.

use std::time::{Duration, SystemTime};

use pyo3::PyResult;
use timerwheel_core::runtime::MIN_TICK;
use timerwheel_core::Config;

use crate::errors::invalid;

/// Float seconds (`name` is the argument's name, for the message) as a `Duration`, rounded
/// to the nearest nanosecond; the runtime then rounds it up to its tick, never down.
pub fn seconds(name: &str, value: f64) -> PyResult<Duration> {
    if value.is_nan() || value < 0.0 {
        return Err(invalid(format!(
            "{name} must be a number of seconds >= 0, got {value}"
        )));
    }
    let nanos = (value * 1e9).round();
    if nanos >= u64::MAX as f64 {
        return Err(invalid(format!("{name} is too large: {value} seconds")));
    }
    Ok(Duration::from_nanos(nanos as u64))
}

/// A period: like [`seconds`], and more than zero.
pub fn period(value: f64) -> PyResult<Duration> {
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

/// The arguments of `Wheel(...)`, as Python passes them.
pub struct WheelArgs {
    pub tick: f64,
    pub min_workers: i64,
    pub max_workers: Option<i64>,
    pub worker_keepalive: f64,
    pub max_timers: Option<i64>,
    pub manual: bool,
    pub virtual_start: Option<SystemTime>,
}

impl WheelArgs {
    /// The runtime configuration, or a `ValueError` naming the argument that is wrong.
    pub fn config(&self) -> PyResult<Config> {
        let defaults = Config::default();
        let config = Config {
            tick: tick(self.tick)?,
            min_workers: count("min_workers", self.min_workers)?,
            max_workers: match self.max_workers {
                Some(n) => count("max_workers", n)?,
                None => defaults.max_workers,
            },
            worker_keepalive: seconds("worker_keepalive", self.worker_keepalive)?,
            max_timers: count("max_timers", self.max_timers.unwrap_or(0))?,
            manual: self.manual,
            virtual_start: self.virtual_start,
        };
        check_workers(&config)?;
        Ok(config)
    }
}

fn tick(value: f64) -> PyResult<Duration> {
    let tick = seconds("tick", value)?;
    if tick < MIN_TICK || tick > Duration::from_secs(1) {
        return Err(invalid(format!(
            "tick must be between 0.0001 and 1 second, got {value}"
        )));
    }
    Ok(tick)
}

fn count(name: &str, value: i64) -> PyResult<usize> {
    usize::try_from(value).map_err(|_| invalid(format!("{name} must be >= 0, got {value}")))
}

fn check_workers(config: &Config) -> PyResult<()> {
    if config.max_workers > 1024 {
        return Err(invalid(format!(
            "max_workers must be at most 1024, got {}",
            config.max_workers
        )));
    }
    if config.max_workers != 0 && config.min_workers > config.max_workers {
        return Err(invalid(format!(
            "min_workers ({}) must not exceed max_workers ({})",
            config.min_workers, config.max_workers
        )));
    }
    Ok(())
}
