//! The runtime: sharded wheels, a tick thread on the monotonic clock, and an adaptive
//! executor. Every interface (C, Python, Go) wraps one [`Runtime`].
//!
//! | file          | responsibility                                              |
//! |---------------|-------------------------------------------------------------|
//! | `clock.rs`    | ticks on `CLOCK_MONOTONIC`, rounding deadlines up           |
//! | `shard.rs`    | one wheel + bookkeeping under a lock; a timer's life cycle  |
//! | `periodic.rs` | where a periodic timer runs next (fixed rate, fixed delay)  |
//! | `ticker.rs`   | the tick thread's sleep and wake-up                         |
//! | `executor.rs` | the run queue, workers, and the grow/shrink decision        |
//! | `inner.rs`    | the paths of a timer through all of them                    |
//! | `stats.rs`    | counters and the lateness histogram                         |

mod clock;
mod config;
mod error;
mod executor;
mod inner;
#[cfg(all(test, loom))]
mod loom_tests;
mod periodic;
mod shard;
mod stats;
mod task;
mod ticker;
mod timer;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

pub use config::{Builder, Config, MIN_TICK};
pub use error::{Error, Rejected};
pub use stats::Stats;
pub use task::{prefetch, BoxTask, PeriodMode, Task, TimerId};
pub use timer::Timer;

use inner::{ticker_main, worker_main, Inner};
use shard::Schedule;

/// A timer runtime. Every method takes `&self` and is safe from any thread, including from
/// inside callbacks. Dropping the runtime shuts it down.
pub struct Runtime<T: Task = BoxTask> {
    inner: Arc<Inner<T>>,
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
        self.handle(self.add(delay, Box::new(f)))
    }

    /// Runs `f` once at the wall-clock time `when`.
    pub fn at(
        &self,
        when: SystemTime,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        self.handle(self.add_at(when, Box::new(f)))
    }

    /// Runs `f` every `period`, first after `period`, at a fixed rate.
    pub fn every(
        &self,
        period: Duration,
        f: impl FnMut(TimerId) + Send + 'static,
    ) -> Result<Timer, Error> {
        self.handle(self.add_periodic(period, period, PeriodMode::FixedRate, Box::new(f)))
    }

    fn handle(&self, added: Result<TimerId, Rejected<BoxTask>>) -> Result<Timer, Error> {
        added
            .map(|id| Timer::new(id, Arc::downgrade(&self.inner)))
            .map_err(|rejected| rejected.error)
    }
}

impl<T: Task> Runtime<T> {
    /// Starts a runtime (its tick thread and `min_workers` workers unless manual).
    pub fn new(config: Config) -> Result<Self, Error> {
        Self::start(config, false)
    }

    /// Starts a runtime meant to live as long as the process (a process-wide default):
    /// its `shutdown` returns `Busy`.
    pub fn new_shared(config: Config) -> Result<Self, Error> {
        Self::start(config, true)
    }

    fn start(config: Config, shared: bool) -> Result<Self, Error> {
        config.validate()?;
        let inner = Arc::new(Inner::new(config, shared));
        if !inner.config.manual {
            let ticker = Arc::clone(&inner);
            let handle = std::thread::Builder::new()
                .name("timerwheel-tick".into())
                .spawn(move || ticker_main(ticker))
                .map_err(|_| Error::Invalid)?;
            inner.ticker.set_thread(handle.thread().clone());
            inner.executor.adopt(handle);
            for _ in 0..inner.executor.reserve_initial() {
                spawn_worker(&inner);
            }
        }
        Ok(Runtime { inner })
    }

    /// Adds a one-shot timer that runs `task` once, not before `delay` has passed.
    pub fn add(&self, delay: Duration, task: T) -> Result<TimerId, Rejected<T>> {
        let deadline = self.inner.clock.deadline_after(delay);
        self.inner.add(deadline, Schedule::Once, task)
    }

    /// Adds a periodic timer: first run after `delay`, then every `period` (not zero),
    /// in `mode` (see [`PeriodMode`]). The period is kept to the nanosecond: it need not be
    /// a multiple of the tick. `Invalid` for a zero period.
    pub fn add_periodic(
        &self,
        delay: Duration,
        period: Duration,
        mode: PeriodMode,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        // Beyond 584 years a period saturates: such a timer never runs twice anyway.
        let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
        if period_ns == 0 {
            let error = Error::Invalid;
            return Err(Rejected { error, task });
        }
        let deadline = self.inner.clock.deadline_after(delay);
        self.inner.add(
            deadline,
            Schedule::Every {
                period: period_ns,
                mode,
            },
            task,
        )
    }

    /// Adds a one-shot timer for the wall-clock time `when`; a time in the past runs at
    /// once. The system clock is compared with the monotonic one each time the tick thread
    /// wakes (at least once a second while such timers are pending); when it was stepped,
    /// these timers are re-placed so that they still fire at `when` on the new clock.
    pub fn add_at(&self, when: SystemTime, task: T) -> Result<TimerId, Rejected<T>> {
        let deadline = self.inner.clock.deadline_at(when);
        self.inner.add(deadline, Schedule::At(when), task)
    }

    /// Stops a timer: `Ok` when it was pending (or a periodic timer whose run is under way)
    /// and will not start again; `NotFound` otherwise (fired one-shot, cancelled, stale).
    /// Its task is dropped once no run of it is under way.
    pub fn cancel(&self, id: TimerId) -> Result<(), Error> {
        self.inner.cancel(id)
    }

    /// Like [`cancel`](Self::cancel), then waits until a run of this timer on another
    /// thread has returned (also for a one-shot already running, which gives `NotFound`).
    /// From the timer's own callback: `Busy`, at once, and nothing changes.
    pub fn cancel_sync(&self, id: TimerId) -> Result<(), Error> {
        self.inner.cancel_sync(id)
    }

    /// Re-arms a pending timer to fire `delay` from now. For a periodic timer, this moves
    /// its next run; the period stays.
    pub fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        self.inner.reset(id, delay)
    }

    /// Whether the timer is pending: it will run (again) unless cancelled.
    pub fn is_pending(&self, id: TimerId) -> bool {
        self.inner.is_pending(id)
    }

    /// A snapshot of the counters.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// Manual mode: time until [`poll`](Self::poll) has work (zero if something is due;
    /// it may be earlier than the next deadline, when a cascade step is due), `None` if no
    /// timer is pending.
    pub fn next_timeout(&self) -> Option<Duration> {
        let tick = self.inner.next_expiry()?;
        Some(self.inner.clock.until(tick))
    }

    /// Manual mode: runs every callback that is due, on the calling thread; returns how
    /// many ran. `Invalid` when the runtime has threads.
    pub fn poll(&self) -> Result<usize, Error> {
        if !self.inner.config.manual {
            return Err(Error::Invalid);
        }
        if !self.inner.executor.begin_poll() {
            return Err(Error::Shutdown);
        }
        let mut due = Vec::new();
        self.inner
            .collect_due(self.inner.clock.now_tick(), &mut due);
        self.inner.move_ahead();
        let ran = self.inner.run_batch(&due);
        self.inner.executor.end_poll();
        Ok(ran)
    }

    /// Stops the tick thread, waits for running callbacks, drops every pending timer
    /// without running it and returns how many were dropped. `Busy` from inside one of
    /// this runtime's callbacks or on a shared runtime (nothing changes); `Shutdown` if
    /// already shut down.
    pub fn shutdown(&self) -> Result<usize, Error> {
        let inner = &self.inner;
        if inner.shared || inner.in_callback() {
            return Err(Error::Busy);
        }
        if !inner.begin_shutdown() {
            return Err(Error::Shutdown);
        }
        inner.ticker.stop();
        inner.executor.close();
        Ok(inner.discard_all())
    }

    /// The configuration the runtime runs with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }
}

impl<T: Task> Drop for Runtime<T> {
    /// Shuts down. Dropped from inside one of its own callbacks, where waiting for the
    /// callbacks would wait for itself, it stops without waiting: no callback starts after
    /// the drop, pending timers are dropped now, and the threads exit as their current
    /// callbacks return.
    fn drop(&mut self) {
        let inner = &self.inner;
        if inner.shared || !inner.in_callback() {
            let _ = self.shutdown();
        } else if inner.begin_shutdown() {
            inner.ticker.stop();
            inner.executor.stop();
            inner.discard_all();
        }
    }
}

impl<T: Task> std::fmt::Debug for Runtime<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Starts a worker thread (already counted by the executor).
fn spawn_worker<T: Task>(inner: &Arc<Inner<T>>) {
    let worker = Arc::clone(inner);
    let spawned = std::thread::Builder::new()
        .name("timerwheel-worker".into())
        .spawn(move || worker_main(worker));
    match spawned {
        Ok(handle) => inner.executor.adopt(handle),
        Err(_) => inner.executor.worker_failed(),
    }
}

/// The process-wide shared runtime: default config, started on first use, never shut down
/// (its `shutdown` returns `Busy`). One timer thread per process is the right default.
pub fn default_runtime() -> &'static Runtime<BoxTask> {
    static DEFAULT: OnceLock<Runtime<BoxTask>> = OnceLock::new();
    DEFAULT.get_or_init(|| {
        Runtime::new_shared(Config::default()).expect("the default config is valid")
    })
}
