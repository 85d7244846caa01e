//! The runtime: sharded wheels, a tick thread on the monotonic clock, and an adaptive
//! executor. Every interface (C, Python, Go) wraps one [`Runtime`].

mod config;
mod error;
mod stats;
mod task;
mod timer;

use std::marker::PhantomData;
use std::time::{Duration, SystemTime};

pub use config::{Builder, Config, MIN_TICK};
pub use error::{Error, Rejected};
pub use stats::Stats;
pub use task::{BoxTask, PeriodMode, Task, TimerId};
pub use timer::Timer;

/// A timer runtime. Every method takes `&self` and is safe from any thread, including from
/// inside callbacks. Dropping the runtime shuts it down.
pub struct Runtime<T: Task = BoxTask> {
    _task: PhantomData<T>,
}

impl Runtime<BoxTask> {
    /// A builder over `Config::default()`.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Runs `f` once, `delay` from now (rounded up to the tick).
    pub fn after(
        &self,
        delay: Duration,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let _ = (delay, f);
        todo!()
    }

    /// Runs `f` once at the wall-clock time `when`.
    pub fn at(
        &self,
        when: SystemTime,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let _ = (when, f);
        todo!()
    }

    /// Runs `f` every `period`, first after `period`, at a fixed rate.
    pub fn every(
        &self,
        period: Duration,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        let _ = (period, f);
        todo!()
    }
}

impl<T: Task> Runtime<T> {
    /// Starts a runtime (its tick thread and `min_workers` workers unless manual).
    pub fn new(config: Config) -> Result<Self, Error> {
        let _ = config;
        todo!()
    }

    /// Adds a one-shot timer that runs `task` once, not before `delay` has passed.
    pub fn add(&self, delay: Duration, task: T) -> Result<TimerId, Rejected<T>> {
        let _ = (delay, task);
        todo!()
    }

    /// Adds a periodic timer: first run after `delay`, then every `period` (not zero).
    pub fn add_periodic(
        &self,
        delay: Duration,
        period: Duration,
        mode: PeriodMode,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        let _ = (delay, period, mode, task);
        todo!()
    }

    /// Adds a one-shot timer for the wall-clock time `when`; a time in the past runs at
    /// once. If the system clock is stepped, the timer is re-placed so that it still fires
    /// at `when` on the new clock.
    pub fn add_at(&self, when: SystemTime, task: T) -> Result<TimerId, Rejected<T>> {
        let _ = (when, task);
        todo!()
    }

    /// Stops a timer: `Ok` when it was pending (or a periodic timer whose run is under way)
    /// and will not start again; `NotFound` otherwise. Its task is dropped once no run of
    /// it is under way.
    pub fn cancel(&self, id: TimerId) -> Result<(), Error> {
        let _ = id;
        todo!()
    }

    /// Like [`cancel`](Self::cancel), then waits until a run of this timer on another
    /// thread has returned. From the timer's own callback: `Busy`, at once.
    pub fn cancel_sync(&self, id: TimerId) -> Result<(), Error> {
        let _ = id;
        todo!()
    }

    /// Re-arms a pending timer to fire `delay` from now. For a periodic timer, this moves
    /// its next run; the period stays.
    pub fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        let _ = (id, delay);
        todo!()
    }

    /// Whether the timer is pending: it will run (again) unless cancelled.
    pub fn is_pending(&self, id: TimerId) -> bool {
        let _ = id;
        todo!()
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        todo!()
    }

    /// Manual mode: time until the next deadline (zero if one is due), `None` if no timer
    /// is pending.
    pub fn next_timeout(&self) -> Option<Duration> {
        todo!()
    }

    /// Manual mode: runs every callback that is due, on the calling thread; returns how
    /// many ran. `Invalid` when the runtime has threads.
    pub fn poll(&self) -> Result<usize, Error> {
        todo!()
    }

    /// Stops the tick thread, waits for running callbacks, drops every pending timer
    /// without running it and returns how many were dropped. `Busy` from inside one of
    /// this runtime's callbacks (nothing changes); `Shutdown` if already shut down.
    pub fn shutdown(&self) -> Result<usize, Error> {
        todo!()
    }

    /// The configuration the runtime runs with.
    pub fn config(&self) -> &Config {
        todo!()
    }
}

/// The process-wide shared runtime: default config, started on first use, never shut down
/// (its `shutdown` returns `Busy`). One timer thread per process is the right default.
pub fn default_runtime() -> &'static Runtime<BoxTask> {
    todo!()
}
