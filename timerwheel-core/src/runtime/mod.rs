//! The runtime: sharded wheels, a tick thread on the monotonic clock, and an adaptive
//! executor. Every interface (C, Python, Go) wraps one [`Runtime`].
//!
//! | file          | responsibility                                              |
//! |---------------|-------------------------------------------------------------|
//! | `clock.rs`    | ticks on `CLOCK_MONOTONIC`, rounding deadlines up           |
//! | `virtual_clock.rs` | time moved by the caller: `advance`, `advance_to_next` |
//! | `lifecycle.rs` | a timer's states and transitions, read in one place        |
//! | `shard.rs`    | one wheel + bookkeeping under a lock; the transitions' code |
//! | `shard_lock.rs` | the shard's lock, and the cancels of plain timers without it |
//! | `extras.rs`   | what periodic, wall-clock and group timers keep beside the wheel |
//! | `group.rs`    | timer groups: a shard's table of them, their timers' list   |
//! | `scope.rs`    | the Rust API's group handles: a scope that cancels on drop  |
//! | `periodic.rs` | where a periodic timer runs next (fixed rate, fixed delay)  |
//! | `restart.rs`  | the export of pending timers, re-creation in phase          |
//! | `export.rs`   | an export's drops deferred, its calls back in refused       |
//! | `ticker.rs`   | the tick round (advance, expire, follow the wall clock), the tick thread |
//! | `wake.rs`     | how the tick thread is woken; how precisely threads wake    |
//! | `executor.rs` | the run queue, the worker count, the grow/shrink decision   |
//! | `run_queue.rs` | the due runs not yet started, in deadline order            |
//! | `worker.rs`   | worker threads, the run of a due timer, its callback and drop |
//! | `callback.rs` | which runtime's callback or drop runs on this thread        |
//! | `threads.rs`  | the runtime's threads started, and shut down, in order       |
//! | `thread_state.rs` | whether a thread is blocked, as the kernel says         |
//! | `runtime_state.rs` | the shared state: add, cancel, reset, groups across shards |
//! | `stats.rs`    | counters and the lateness histogram                         |
//! | `metrics.rs`  | the last-minute view and the Prometheus text exposition     |
//! | `fork.rs`     | the locks around fork(), and runtimes in a fork() child     |
//! | `shared.rs`   | the process-wide shared runtimes (the defaults)             |
//! | `sync.rs`     | locks, atomics, threads, time: std's, or loom's under loom  |
//!
//! # fork()
//!
//! The runtime survives a fork() in a multithreaded program: its locks are taken before the
//! fork and released after it, in the parent and in the child, so no call hangs in the
//! child. The child has none of the parent's threads, so a runtime started before the fork
//! refuses there every call that needs them (`add*`, `cancel*`, `reset`, `poll`) with
//! [`Error::Forked`]; `stats` works, and `shutdown` (or dropping it) drops its pending timers,
//! in the child, without waiting for threads that are not there. [`default_runtime`] gives
//! the child a new runtime of its own on first use. A callback that calls fork() must not
//! return in the child (exec or exit there): its thread belongs to the parent's runtime.

mod add_order;
mod callback;
mod clock;
mod config;
mod deadline;
mod drops;
mod error;
mod executor;
mod export;
mod extras;
mod fork;
mod group;
mod hold;
mod lifecycle;
#[cfg(all(test, loom))]
mod loom_tests;
mod metrics;
mod periodic;
mod restart;
mod run_queue;
mod runtime_state;
mod scope;
mod shard;
mod shard_lock;
mod shared;
mod stats;
mod sync;
mod task;
mod thread_state;
mod threads;
mod ticker;
mod timer;
mod tsc;
mod virtual_clock;
mod wake;
mod when;
mod worker;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use crate::wheel::prefetch;
pub use callback::record_callback_failure;
pub use config::{Builder, Config, ConfigError, MAX_TICK, MAX_WORKERS, MIN_TICK};
pub use error::{Error, Rejected};
pub use fork::PerProcess;
pub use group::{GroupData, GroupId};
pub use hold::Hold;
pub use metrics::{Metrics, MAX_WINDOW, MIN_WINDOW, PROMETHEUS_CONTENT_TYPE};
pub use restart::{Export, ExportedTimer, Missed, TimerKind};
pub use scope::{Group, GroupHandle};
pub use shared::{default_runtime, SharedRuntime};
pub use stats::{Lateness, Stats, LATENESS_BOUNDS_US};
pub use task::{BoxTask, PeriodMode, Task, TimerId};
pub use timer::Timer;
pub use when::When;

use clock::Deadline;
use extras::Schedule;
use runtime_state::RuntimeState;
use worker::run_queued;

/// A timer runtime. Every method takes `&self` and is safe from any thread, including from
/// inside callbacks. Dropping the runtime shuts it down.
pub struct Runtime<T: Task = BoxTask> {
    inner: Arc<RuntimeState<T>>,
}

impl Runtime<BoxTask> {
    /// A builder over `Config::default()`.
    pub fn builder() -> Builder {
        Builder::new()
    }

    /// Runs `f` once, not before `delay` from now: at that exact time on a runtime with
    /// threads, at that time rounded up to the tick on a manual or virtual one.
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

    /// A group of timers (see [`Group`]): deleted, with every timer in it, when the handle
    /// is dropped or [`cancel`](Group::cancel)led.
    pub fn group(&self) -> Result<Group, Error> {
        self.group_with(())
    }

    /// [`group`](Self::group), holding `data`, which is dropped once, after the group was
    /// closed (or cancelled) and its last timer ended (its task was dropped).
    pub fn group_with(&self, data: impl Send + 'static) -> Result<Group, Error> {
        let id = self.group_create(Box::new(data)).map_err(|r| r.error)?;
        Ok(Group::new(id, Arc::downgrade(&self.inner)))
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
        let inner = threads::start(config, shared)?;
        Ok(Runtime { inner })
    }

    /// Adds a one-shot timer that runs `task` once, not before `delay` has passed.
    #[inline]
    pub fn add(&self, delay: Duration, task: T) -> Result<TimerId, Rejected<T>> {
        self.add_publishing(When::After(delay), None, task, |_| {})
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
        let when = When::Every {
            delay,
            period,
            mode,
        };
        self.add_publishing(when, None, task, |_| {})
    }

    /// Adds a one-shot timer for the wall-clock time `when`; a time in the past runs at
    /// once. The system clock is compared with the monotonic one each time the tick thread
    /// wakes (at least once a second while such timers are pending); when it was stepped,
    /// these timers are re-placed so that they still fire at `when` on the new clock.
    pub fn add_at(&self, when: SystemTime, task: T) -> Result<TimerId, Rejected<T>> {
        self.add_publishing(When::At(when), None, task, |_| {})
    }

    /// Adds the timer `when` says, as [`add`](Self::add) and its kin do, into the open
    /// group `group` if one is given (as [`group_add`](Self::group_add) does), and hands
    /// its id to `publish` before the timer can run or be seen by any other call: for a
    /// caller that stores the id where the timer's run reads it (the C ABI's `out_id`).
    /// `publish` runs under a lock of the runtime: it must be short, and must not call into
    /// the runtime. It is not called for a timer refused.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
    /// use std::sync::{mpsc, Arc};
    /// use std::time::Duration;
    /// use timerwheel_core::{BoxTask, Runtime, When};
    ///
    /// let rt: Runtime<BoxTask> = Runtime::builder().max_workers(1).build().unwrap();
    /// // The session's current timer: a run of any other timer is stale.
    /// let current = Arc::new(AtomicU64::new(0));
    /// let (tx, rx) = mpsc::channel();
    /// let seen = current.clone();
    /// let task: BoxTask = Box::new(move |id| tx.send(seen.load(SeqCst) == id.as_u64()).unwrap());
    /// let publish = |id: timerwheel_core::TimerId| current.store(id.as_u64(), SeqCst);
    /// rt.add_publishing(When::After(Duration::ZERO), None, task, publish).unwrap();
    /// assert!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), "the run found its id");
    /// ```
    #[inline(always)]
    pub fn add_publishing(
        &self,
        when: When,
        group: Option<GroupId>,
        task: T,
        publish: impl FnOnce(TimerId),
    ) -> Result<TimerId, Rejected<T>> {
        let Some((deadline, schedule)) = self.first_deadline(when) else {
            let error = Error::Invalid;
            return Err(Rejected { error, task });
        };
        match group {
            None => self.inner.add(deadline, schedule, task, publish),
            Some(group) => self.add_in_group(group, deadline, schedule, task, publish),
        }
    }

    /// The first deadline and the schedule of a timer added now to run `when`; `None` for
    /// a zero period.
    #[inline(always)]
    fn first_deadline(&self, when: When) -> Option<(Deadline, Schedule)> {
        let after = |delay| self.inner.clock.deadline_after(delay);
        match when {
            When::After(delay) => Some((after(delay), Schedule::Once)),
            When::Every {
                delay,
                period,
                mode,
            } => Some((after(delay), periodic_schedule(period, mode)?)),
            When::At(when) => Some((self.inner.deadline_at(when), Schedule::At(when))),
            When::EveryFrom {
                first,
                period,
                mode,
                missed,
            } => self.resumed_schedule(first, period, mode, missed),
        }
    }

    /// The insert of [`add_publishing`](Self::add_publishing) into a group: out of the
    /// way of the adds outside groups.
    #[inline(never)]
    fn add_in_group(
        &self,
        group: GroupId,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
        publish: impl FnOnce(TimerId),
    ) -> Result<TimerId, Rejected<T>> {
        self.inner
            .add_in_group(group, deadline, schedule, task, publish)
    }

    /// [`add_at`](Self::add_at) of many timers at once (the restore of durable timers):
    /// the ids in order, or the first refusal's error (the timers before it stay added).
    pub(crate) fn add_many_at(
        &self,
        timers: impl IntoIterator<Item = (SystemTime, T)>,
    ) -> Result<Vec<TimerId>, Error> {
        self.inner.add_many_at(timers)
    }

    /// Creates an open group of timers holding `data`, whose drop runs exactly once: after
    /// the group was closed ([`group_close`](Self::group_close) or
    /// [`group_delete`](Self::group_delete)) and its last timer ended, or at shutdown after
    /// its timers' drops. Refused, `data` comes back untouched. See docs/contract.md,
    /// "Timer groups".
    pub fn group_create(&self, data: GroupData) -> Result<GroupId, Rejected<GroupData>> {
        self.inner.create_group(data)
    }

    /// [`add`](Self::add), into the open group `group`: `NotFound` for a group that ended
    /// (or of another runtime), `GroupClosed` for a closed one.
    pub fn group_add(
        &self,
        group: GroupId,
        delay: Duration,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        self.add_publishing(When::After(delay), Some(group), task, |_| {})
    }

    /// [`add_periodic`](Self::add_periodic), into the open group `group`.
    pub fn group_add_periodic(
        &self,
        group: GroupId,
        delay: Duration,
        period: Duration,
        mode: PeriodMode,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        let when = When::Every {
            delay,
            period,
            mode,
        };
        self.add_publishing(when, Some(group), task, |_| {})
    }

    /// [`add_at`](Self::add_at), into the open group `group`.
    pub fn group_add_at(
        &self,
        group: GroupId,
        when: SystemTime,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        self.add_publishing(When::At(when), Some(group), task, |_| {})
    }

    /// Closes a group to new timers (its owner lets go of it): its timers run on, and its
    /// drop follows the end of the last (at once if it has none). `GroupClosed` if closed
    /// already, `NotFound` if it ended.
    pub fn group_close(&self, group: GroupId) -> Result<(), Error> {
        self.inner.close_group(group)
    }

    /// Cancels every timer of a group, in time proportional to their number, and closes it
    /// (if it was not closed yet). Pending timers are dropped before it returns; a periodic
    /// timer whose run is under way ends when it returns; the group's drop follows the
    /// last. `NotFound` if the group ended.
    pub fn group_delete(&self, group: GroupId) -> Result<(), Error> {
        self.inner.delete_group(group)
    }

    /// Groups alive: open, or closed with timers left.
    pub fn group_count(&self) -> usize {
        self.inner.group_count()
    }

    /// Stops a timer: `Ok` when it was pending (or a periodic timer whose run is under way)
    /// and will not start again; `NotFound` otherwise (fired one-shot, cancelled, stale).
    /// Its task is dropped once no run of it is under way.
    #[inline]
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
    #[inline]
    pub fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        self.inner.reset(id, delay)
    }

    /// [`cancel`](Self::cancel) of each timer of `ids`, in order: each one's result, in
    /// the same order. An id given twice is `NotFound` the second time.
    pub fn cancel_many(&self, ids: &[TimerId]) -> Vec<Result<(), Error>> {
        let hold = self.hold();
        ids.iter()
            .enumerate()
            .map(|(at, &id)| {
                hold.prefetch_ahead(at, ids.len(), |i| Some(ids[i]));
                hold.cancel(id)
            })
            .collect()
    }

    /// [`reset`](Self::reset) of each timer of `timers` to its delay, in order: each one's
    /// result, in the same order. An id given twice is re-armed twice: the later delay holds.
    pub fn reset_many(&self, timers: &[(TimerId, Duration)]) -> Vec<Result<(), Error>> {
        let hold = self.hold();
        timers
            .iter()
            .enumerate()
            .map(|(at, &(id, delay))| {
                hold.prefetch_ahead(at, timers.len(), |i| Some(timers[i].0));
                hold.reset(id, delay)
            })
            .collect()
    }

    /// A hold for a run of calls on this thread (a batch): see [`Hold`].
    pub fn hold(&self) -> Hold<T> {
        Hold::begin(Arc::clone(&self.inner))
    }

    /// Whether this process is a fork() child of the one that started the runtime (its
    /// calls then give [`Error::Forked`]).
    pub fn forked(&self) -> bool {
        self.inner.forked()
    }

    /// `Ok` while the runtime takes calls: `Forked` in a fork() child, `Shutdown` once it
    /// shuts down, `Busy` on a thread that is exporting it.
    pub fn check_open(&self) -> Result<(), Error> {
        self.inner.check_open()
    }

    /// Whether the timer is pending: it will run (again) unless cancelled.
    pub fn is_pending(&self, id: TimerId) -> bool {
        self.inner.is_pending(id)
    }

    /// A snapshot of the counters since the runtime started.
    pub fn stats(&self) -> Stats {
        self.inner.stats()
    }

    /// The counters of the last `window` (from [`MIN_WINDOW`], a second, to [`MAX_WINDOW`],
    /// a minute; a window out of that range is taken as its nearest end): the events
    /// (adds, runs, cancels, panics, slow callbacks, workers spawned and retired) and the
    /// lateness of the callbacks started since the newest earlier call of this method at
    /// least `window` ago (give or take half a second; since the start when the runtime is
    /// younger), which `span_ms` gives; the gauges (`pending`, `workers`, `queue_depth`) as
    /// they are now. The view is kept by these calls alone (two readings a second at most),
    /// so it costs the timers nothing: asked every second, a one-second view spans a second
    /// and a one-minute view a minute.
    pub fn stats_recent(&self, window: Duration) -> Stats {
        self.inner.stats_recent(window)
    }

    /// The counters since start, the lateness histogram in fixed buckets and the
    /// slow-callback threshold: what an exporter gives.
    pub fn metrics(&self) -> Metrics {
        self.inner.metrics()
    }

    /// [`metrics`](Self::metrics) in Prometheus's text format
    /// ([`Metrics::prometheus_text`]): the one exposition every interface serves.
    pub fn prometheus_text(&self) -> String {
        self.metrics().prometheus_text()
    }

    /// Manual mode: time until [`poll`](Self::poll) has work (zero if something is due;
    /// it may be earlier than the next deadline, when a cascade step is due), `None` if no
    /// timer is pending (or only periodic timers whose schedule left the clock's range).
    /// On a virtual clock, virtual time: advancing by it reaches that work, also a timer
    /// held at the end of the clock's range.
    pub fn next_timeout(&self) -> Option<Duration> {
        let end = self.inner.clock.end_tick();
        let tick = self.inner.next_expiry().filter(|&tick| tick <= end)?;
        Some(self.inner.clock.until(tick))
    }

    /// Manual mode: runs every callback that is due, on the calling thread; returns how
    /// many ran. Wall-clock timers follow a step of the system clock here, as the tick
    /// thread would. `Invalid` when the runtime has threads. On a virtual clock it is
    /// [`advance`](Self::advance) by zero: it runs what is due at the clock's reading.
    pub fn poll(&self) -> Result<usize, Error> {
        if self.inner.clock.is_virtual() {
            return self.advance(Duration::ZERO);
        }
        if !self.inner.config.manual {
            return Err(Error::Invalid);
        }
        self.drive(|inner| {
            ticker::advance_time(inner);
            run_queued(inner, usize::MAX)
        })
    }

    /// Runs `step` on the calling thread as a poll (counted by the executor, so that a
    /// shutdown waits for it) and returns what it returns: how many callbacks ran.
    fn drive(&self, step: impl FnOnce(&RuntimeState<T>) -> usize) -> Result<usize, Error> {
        self.inner.check_open()?;
        // A callback may shut the runtime down without waiting and let its owner free this
        // handle once the poll ends: the poll holds the runtime on its own.
        let inner = Arc::clone(&self.inner);
        if !inner.executor.begin_poll() {
            return Err(Error::Shutdown);
        }
        let ran = step(&inner);
        inner.executor.end_poll();
        Ok(ran)
    }

    /// Stops the tick thread, waits for running callbacks and for the holds ([`Hold`]) of
    /// other threads, drops every pending timer without running it and returns how many
    /// were dropped. `Busy` where it would wait for itself: from inside one of this
    /// runtime's callbacks or drops, and on a thread that holds the runtime; `Busy` on a
    /// shared runtime too (nothing changes). `Shutdown` if a shutdown has begun, at once
    /// (a second shutdown does not wait for the first), also from inside its callbacks and
    /// drops (a drop the shutdown runs, one that shut it down without waiting).
    /// In a fork() child, for a runtime started before the fork: drops
    /// the pending timers without waiting for the parent's threads (see the module docs).
    pub fn shutdown(&self) -> Result<usize, Error> {
        if self.inner.shared {
            return Err(Error::Busy);
        }
        self.shutdown_at_exit()
    }

    /// [`shutdown`](Self::shutdown), of a shared runtime too: for the end of a process
    /// whose callbacks need what is about to go away (Python's exit handler closes the
    /// shared default wheel so, before the interpreter is torn down).
    pub fn shutdown_at_exit(&self) -> Result<usize, Error> {
        threads::shutdown(&self.inner)
    }

    /// Shuts down without waiting for callbacks still running, the caller's own included:
    /// safe from inside this runtime's callbacks and drops, where `shutdown` is `Busy`. No
    /// callback starts after it returns; every pending timer is dropped before it returns
    /// (returns how many); a running timer is dropped when its callback returns; the
    /// threads exit as their callbacks return. `Busy` on a shared runtime, `Shutdown` if
    /// already shut down.
    pub fn shutdown_nowait(&self) -> Result<usize, Error> {
        self.shutdown_nowait_then(|| {})
    }

    /// [`shutdown_nowait`](Self::shutdown_nowait), then `release` once none of the
    /// runtime's threads is left (at once if none is): the C ABI frees its wheel handle
    /// there, which callbacks still running may use until they return.
    pub fn shutdown_nowait_then(
        &self,
        release: impl FnOnce() + Send + 'static,
    ) -> Result<usize, Error> {
        threads::shutdown_nowait(&self.inner, release)
    }

    /// The configuration the runtime runs with.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }
}

/// The schedule of a periodic timer; `None` for a zero period.
fn periodic_schedule(period: Duration, mode: PeriodMode) -> Option<Schedule> {
    let period = period_ns(period)?;
    Some(Schedule::Every { period, mode })
}

/// A period in nanoseconds; `None` for zero. Beyond 584 years a period saturates: such a
/// timer never runs twice anyway.
fn period_ns(period: Duration) -> Option<u64> {
    let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
    (period_ns != 0).then_some(period_ns)
}

impl<T: Task> Drop for Runtime<T> {
    /// Shuts down: [`shutdown`](Runtime::shutdown), or, dropped from inside one of its own
    /// callbacks or drops, where waiting would wait for itself,
    /// [`shutdown_nowait`](Runtime::shutdown_nowait).
    fn drop(&mut self) {
        if self.inner.would_wait_for_itself() {
            let _ = self.shutdown_nowait();
        } else {
            let _ = self.shutdown();
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// A manual runtime and a counter of the runs of a wall-clock timer due `ahead` from now
    /// on its system clock.
    fn manual_with_wall_timer(ahead: Duration) -> (Runtime, Arc<AtomicUsize>) {
        let runtime = Runtime::builder().manual(true).build().unwrap();
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&runs);
        let when = runtime.inner.clock.wall_now() + ahead;
        runtime
            .at(when, move |_| {
                counted.fetch_add(1, SeqCst);
            })
            .unwrap();
        (runtime, runs)
    }

    fn step_system_clock(runtime: &Runtime, by_ns: i64) {
        runtime.inner.clock.wall_step_ns.store(by_ns, SeqCst);
    }

    #[test]
    fn manual_poll_follows_a_step_of_the_system_clock() {
        // Stepped back 10 s: the timer is 10 s further away, so it must not fire early.
        let (back, back_runs) = manual_with_wall_timer(Duration::from_millis(300));
        // Stepped forward 10 s: its time has come.
        let (forward, forward_runs) = manual_with_wall_timer(Duration::from_secs(10));
        back.poll().unwrap();
        forward.poll().unwrap();
        step_system_clock(&back, -10_000_000_000);
        step_system_clock(&forward, 10_000_000_000);
        std::thread::sleep(Duration::from_millis(500));
        back.poll().unwrap();
        forward.poll().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        back.poll().unwrap();
        forward.poll().unwrap();
        assert_eq!(back_runs.load(SeqCst), 0, "fired by the old system clock");
        assert_eq!(forward_runs.load(SeqCst), 1, "missed the new system clock");
    }
}
