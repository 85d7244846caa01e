//! Runtime configuration and its builder.

use std::time::{Duration, SystemTime};

use super::{Error, Runtime, Task};

/// The finest tick the runtime accepts.
pub const MIN_TICK: Duration = Duration::from_micros(100);

/// How a [`Runtime`] is set up. `Config::default()` is what every interface calls the
/// default: a 1 ms tick, 1 to `available_parallelism` workers, 1 s keepalive, no capacity
/// limit, threads on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Granularity of the wheel: deadlines round up to it. At least 100 us.
    pub tick: Duration,
    /// Workers kept even when idle.
    pub min_workers: usize,
    /// Upper bound on workers; 0 runs callbacks on the tick thread itself.
    pub max_workers: usize,
    /// A worker idle this long retires (down to `min_workers`).
    pub worker_keepalive: Duration,
    /// Most pending timers at once; 0 means no limit.
    pub max_timers: usize,
    /// No threads at all: the caller drives time with `poll` and `next_timeout`.
    pub manual: bool,
    /// A virtual clock starting at this wall-clock time: time moves only when the caller
    /// says so (`Runtime::advance`), and there are no threads (as `manual`). `None`: the
    /// real clock.
    pub virtual_start: Option<SystemTime>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tick: Duration::from_millis(1),
            min_workers: 1,
            max_workers: std::thread::available_parallelism().map_or(1, |n| n.get()),
            worker_keepalive: Duration::from_secs(1),
            max_timers: 0,
            manual: false,
            virtual_start: None,
        }
    }
}

impl Config {
    /// Checks the ranges; `Error::Invalid` names no field, so the caller's docs list them.
    pub fn validate(&self) -> Result<(), Error> {
        let workers_ok = self.max_workers == 0 || self.min_workers <= self.max_workers;
        let tick_ok = self.tick >= MIN_TICK && self.tick <= Duration::from_secs(1);
        if workers_ok && tick_ok && self.max_workers <= 1024 {
            Ok(())
        } else {
            Err(Error::Invalid)
        }
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

    /// Sets the tick (at least 100 us).
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

    /// The configuration built so far.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Starts the runtime.
    pub fn build<T: Task>(self) -> Result<Runtime<T>, Error> {
        Runtime::new(self.config)
    }
}
