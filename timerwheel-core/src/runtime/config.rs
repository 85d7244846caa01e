//! Runtime configuration and its builder.

use std::fmt::{self, Debug};
use std::ops::RangeInclusive;
use std::time::{Duration, SystemTime};

use super::{Error, Runtime, Task};

/// The finest tick the runtime accepts.
pub const MIN_TICK: Duration = Duration::from_micros(100);
/// The coarsest tick the runtime accepts.
pub const MAX_TICK: Duration = Duration::from_secs(1);
/// The most workers a runtime accepts.
pub const MAX_WORKERS: usize = 1024;

/// How a [`Runtime`] is set up. `Config::default()` is what every interface calls the
/// default: a 1 ms tick, 1 to `available_parallelism` workers, 1 s keepalive, no capacity
/// limit, threads on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Granularity of the wheel: deadlines round up to it. From [`MIN_TICK`] to [`MAX_TICK`].
    pub tick: Duration,
    /// Workers kept even when idle; at most `max_workers` (unless that is 0).
    pub min_workers: usize,
    /// Upper bound on workers, at most [`MAX_WORKERS`]; 0 runs callbacks on the tick thread
    /// itself.
    pub max_workers: usize,
    /// A worker idle this long retires (down to `min_workers`).
    pub worker_keepalive: Duration,
    /// Most pending timers at once; 0 means no limit. A timer's place is free as soon as
    /// a cancel of it returns `Ok`, and a one-shot's when its run starts (a periodic timer
    /// keeps its place while it runs).
    pub max_timers: usize,
    /// No threads at all: the caller drives time with `poll` and `next_timeout`.
    pub manual: bool,
    /// A virtual clock starting at this wall-clock time: time moves only when the caller
    /// says so (`Runtime::advance`), and there are no threads (as `manual`). `None`: the
    /// real clock.
    pub virtual_start: Option<SystemTime>,
    /// A callback that runs at least this long is counted in `Stats::slow_callbacks`.
    /// `None` (the default) counts nothing and costs nothing; set, each callback costs one
    /// more reading of the clock.
    pub slow_callback: Option<Duration>,
}

/// The CPUs this process may use (`available_parallelism`, 1 if unknown), read once: the
/// reading opens files under /proc and /sys (cgroup limits), more than creating a manual
/// runtime costs.
pub(crate) fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tick: Duration::from_millis(1),
            min_workers: 1,
            max_workers: cpus(),
            worker_keepalive: Duration::from_secs(1),
            max_timers: 0,
            manual: false,
            virtual_start: None,
            slow_callback: None,
        }
    }
}

impl Config {
    /// Checks the ranges: `tick` in [`MIN_TICK`]`..=`[`MAX_TICK`], `max_workers` at most
    /// [`MAX_WORKERS`], `min_workers` at most a nonzero `max_workers`. The error names the
    /// first field out of range. Every interface reports this check's text.
    pub fn validate(&self) -> Result<(), ConfigError> {
        ConfigError::check("tick", self.tick, MIN_TICK..=MAX_TICK)?;
        ConfigError::check("max_workers", self.max_workers, 0..=MAX_WORKERS)?;
        if self.max_workers != 0 {
            ConfigError::check("min_workers", self.min_workers, 0..=self.max_workers)?;
        }
        Ok(())
    }
}

/// A field of a [`Config`] out of its range. Its text names the field, its value and the
/// range, e.g. "tick 50µs is out of range: 100µs..=1s".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    field: &'static str,
    message: String,
}

impl ConfigError {
    /// The field, as [`Config`] names it.
    pub fn field(&self) -> &'static str {
        self.field
    }

    /// `Ok` when `value` is in `range`; otherwise the error of `field`.
    fn check<V: PartialOrd + Debug>(
        field: &'static str,
        value: V,
        range: RangeInclusive<V>,
    ) -> Result<(), Self> {
        if range.contains(&value) {
            return Ok(());
        }
        let message = format!("{field} {value:?} is out of range: {range:?}");
        Err(ConfigError { field, message })
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for Error {
    fn from(_: ConfigError) -> Self {
        Error::Invalid
    }
}

/// Builds a [`Runtime`] from a [`Config`], one setting at a time.
#[derive(Clone, Debug, Default)]
pub struct Builder {
    config: Config,
}

impl Builder {
    /// Starts from `Config::default()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the tick (from [`MIN_TICK`] to [`MAX_TICK`]).
    pub fn tick(mut self, tick: Duration) -> Self {
        self.config.tick = tick;
        self
    }

    /// Sets the number of workers kept when idle.
    pub fn min_workers(mut self, n: usize) -> Self {
        self.config.min_workers = n;
        self
    }

    /// Sets the most workers; 0 runs callbacks on the tick thread.
    pub fn max_workers(mut self, n: usize) -> Self {
        self.config.max_workers = n;
        self
    }

    /// Sets how long an idle worker lives before it retires.
    pub fn worker_keepalive(mut self, keepalive: Duration) -> Self {
        self.config.worker_keepalive = keepalive;
        self
    }

    /// Sets the capacity limit (0 = none).
    pub fn max_timers(mut self, n: usize) -> Self {
        self.config.max_timers = n;
        self
    }

    /// Runs without threads: the caller drives `poll`.
    pub fn manual(mut self, manual: bool) -> Self {
        self.config.manual = manual;
        self
    }

    /// Runs on a virtual clock that starts at the wall-clock time `start`.
    pub fn virtual_clock(mut self, start: SystemTime) -> Self {
        self.config.virtual_start = Some(start);
        self
    }

    /// Counts the callbacks that run at least `threshold` in `Stats::slow_callbacks`.
    pub fn slow_callback(mut self, threshold: Duration) -> Self {
        self.config.slow_callback = Some(threshold);
        self
    }

    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts the runtime.
    pub fn build<T: Task>(self) -> Result<Runtime<T>, Error> {
        Runtime::new(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(change: impl FnOnce(&mut Config)) -> Option<String> {
        let mut config = Config::default();
        change(&mut config);
        config
            .validate()
            .err()
            .map(|e| format!("{}: {e}", e.field()))
    }

    #[test]
    fn an_error_names_the_field_its_value_and_the_range() {
        assert_eq!(error_of(|_| {}), None);
        assert_eq!(
            error_of(|c| c.tick = Duration::from_micros(50)).as_deref(),
            Some("tick: tick 50µs is out of range: 100µs..=1s")
        );
        assert_eq!(
            error_of(|c| c.tick = Duration::from_secs(2)).as_deref(),
            Some("tick: tick 2s is out of range: 100µs..=1s")
        );
        assert_eq!(
            error_of(|c| c.max_workers = 5000).as_deref(),
            Some("max_workers: max_workers 5000 is out of range: 0..=1024")
        );
        assert_eq!(
            error_of(|c| (c.min_workers, c.max_workers) = (4, 2)).as_deref(),
            Some("min_workers: min_workers 4 is out of range: 0..=2")
        );
        assert_eq!(error_of(|c| (c.min_workers, c.max_workers) = (4, 0)), None);
    }
}
