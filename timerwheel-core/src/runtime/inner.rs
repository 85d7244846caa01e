//! The runtime's shared state and the paths a timer takes through it: add, cancel, reset,
//! expire (tick thread), run (worker), shutdown.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use super::clock::{Clock, Deadline};
use super::executor::{Executor, GROW_AFTER};
use super::shard::{Ids, Run, Schedule, Shard, ShardState, MAX_SHARDS};
use super::stats::Histogram;
use super::ticker::{tighten_timer_slack, Ticker, WALL_CHECK};
use super::{Config, Error, Rejected, Stats, Task, TimerId};
use crate::wheel::Key;

static NEXT_THREAD_HINT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// The shard this thread adds to.
    static SHARD_HINT: usize = NEXT_THREAD_HINT.fetch_add(1, Relaxed);
    /// The runtime and timer whose callback runs on this thread (0, 0 when none).
    static CURRENT: Cell<(usize, u64)> = const { Cell::new((0, 0)) };
}

/// Marks the current thread as running a callback of a runtime until dropped.
struct CallbackScope {
    previous: (usize, u64),
}

impl CallbackScope {
    fn enter(runtime: usize, id: TimerId) -> Self {
        let previous = CURRENT.with(|c| c.replace((runtime, id.as_u64())));
        CallbackScope { previous }
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// A run whose callback returned and whose end is not recorded yet.
struct Finishing<'a, T> {
    shard: &'a Shard<T>,
    key: Key,
    task: T,
}

/// The capacity limit across shards; free of atomics when there is none.
struct Capacity {
    limit: usize,
    live: AtomicUsize,
}

impl Capacity {
    fn reserve(&self) -> bool {
        if self.limit == 0 {
            return true;
        }
        if self.live.fetch_add(1, Relaxed) < self.limit {
            return true;
        }
        self.live.fetch_sub(1, Relaxed);
        false
    }

    fn release(&self, count: usize) {
        if self.limit != 0 && count != 0 {
            self.live.fetch_sub(count, Relaxed);
        }
    }
}

pub(crate) struct Inner<T> {
    pub(crate) config: Config,
    pub(crate) clock: Clock,
    shards: Box<[Shard<T>]>,
    /// How this runtime's ids are written: unlike another runtime's.
    ids: Ids,
    pub(crate) executor: Executor,
    pub(crate) ticker: Ticker,
    capacity: Capacity,
    lateness: Histogram,
    panics: AtomicU64,
    shutting_down: AtomicBool,
    /// A process-wide default: never shut down.
    pub(crate) shared: bool,
}

/// Drops a task outside every lock; a panicking drop is counted, not propagated.
fn drop_task<T>(task: T, panics: &AtomicU64) {
    if catch_unwind(AssertUnwindSafe(move || drop(task))).is_err() {
        panics.fetch_add(1, Relaxed);
    }
}

impl<T: Task> Inner<T> {
    pub(crate) fn new(config: Config, shared: bool) -> Self {
        let clock = Clock::new(config.tick);
        let shard_count = if config.manual {
            1
        } else {
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
            cpus.max(4).next_power_of_two().min(MAX_SHARDS)
        };
        let per_shard = match config.max_timers {
            0 => usize::MAX,
            limit => limit,
        };
        let shards = (0..shard_count).map(|_| Shard::new(per_shard, 0)).collect();
        Inner {
            executor: Executor::new(
                config.min_workers,
                config.max_workers,
                config.worker_keepalive,
            ),
            capacity: Capacity {
                limit: config.max_timers,
                live: AtomicUsize::new(0),
            },
            config,
            clock,
            shards,
            ids: Ids::next(),
            ticker: Ticker::default(),
            lateness: Histogram::new(),
            panics: AtomicU64::new(0),
            shutting_down: AtomicBool::new(false),
            shared,
        }
    }

    fn id(&self) -> usize {
        self as *const Self as usize
    }

    fn check_open(&self) -> Result<(), Error> {
        match self.shutting_down.load(Relaxed) {
            true => Err(Error::Shutdown),
            false => Ok(()),
        }
    }

    fn shard_of(&self, id: TimerId) -> Result<(&Shard<T>, Key), Error> {
        match self.ids.decode(id) {
            (shard, Some(key)) if shard < self.shards.len() => Ok((&self.shards[shard], key)),
            _ => Err(Error::NotFound),
        }
    }

    pub(crate) fn add(
        &self,
        deadline: Deadline,
        schedule: Schedule,
        task: T,
    ) -> Result<TimerId, Rejected<T>> {
        if let Err(error) = self.check_open() {
            return Err(Rejected { error, task });
        }
        if !self.capacity.reserve() {
            return Err(Rejected {
                error: Error::Full,
                task,
            });
        }
        // The shard count is a power of two.
        let index = SHARD_HINT.with(|hint| *hint) & (self.shards.len() - 1);
        let inserted = self.shards[index].lock().insert(deadline, schedule, task);
        match inserted {
            Ok(key) => {
                self.ticker.notify_if_earlier(deadline.tick);
                Ok(self.ids.encode(index, key))
            }
            Err((error, task)) => {
                self.capacity.release(1);
                Err(Rejected { error, task })
            }
        }
    }

    pub(crate) fn cancel(&self, id: TimerId) -> Result<(), Error> {
        self.check_open()?;
        let (shard, key) = self.shard_of(id)?;
        let removed = shard.lock().cancel(key)?;
        self.release(removed);
        Ok(())
    }

    pub(crate) fn cancel_sync(&self, id: TimerId) -> Result<(), Error> {
        self.check_open()?;
        if CURRENT.with(|c| c.get()) == (self.id(), id.as_u64()) {
            return Err(Error::Busy);
        }
        let (shard, key) = self.shard_of(id)?;
        let mut state = shard.lock();
        let result = state.cancel(key);
        let state = shard.wait_not_running(state, key);
        drop(state);
        self.release(result?);
        Ok(())
    }

    /// Drops the task of a timer that ended and gives its capacity back.
    fn release(&self, task: Option<T>) {
        if let Some(task) = task {
            self.capacity.release(1);
            drop_task(task, &self.panics);
        }
    }

    pub(crate) fn reset(&self, id: TimerId, delay: Duration) -> Result<(), Error> {
        self.check_open()?;
        let (shard, key) = self.shard_of(id)?;
        let deadline = self.clock.deadline_after(delay);
        shard.lock().reset(key, deadline)?;
        self.ticker.notify_if_earlier(deadline.tick);
        Ok(())
    }

    pub(crate) fn is_pending(&self, id: TimerId) -> bool {
        self.shard_of(id)
            .is_ok_and(|(shard, key)| shard.lock().is_live(key))
    }

    /// Expires every shard up to `now`, collecting the due ids in deadline order (see
    /// [`Deadline`]: within a tick, the one that waited longest goes first).
    pub(crate) fn collect_due(&self, now: u64, due: &mut Vec<TimerId>) {
        let mut ordered = Vec::new();
        for (index, shard) in self.shards.iter().enumerate() {
            shard.lock().expire_due(now, |key, deadline| {
                ordered.push((deadline, self.ids.encode(index, key)))
            });
        }
        ordered.sort_unstable_by_key(|&(deadline, _)| deadline);
        due.extend(ordered.into_iter().map(|(_, id)| id));
    }

    /// The wheels' work ahead of time, after the due ids went out. Returns the next tick
    /// with work and whether wall-clock timers are pending.
    pub(crate) fn move_ahead(&self) -> (Option<u64>, bool) {
        let mut wall = false;
        let mut next = None;
        for shard in self.shards.iter() {
            let mut state = shard.lock();
            next = next.into_iter().chain(state.move_ahead()).min();
            wall |= state.has_wall_timers();
        }
        (next, wall)
    }

    pub(crate) fn next_expiry(&self) -> Option<u64> {
        self.shards
            .iter()
            .filter_map(|shard| shard.lock().next_expiry())
            .min()
    }

    /// Runs a batch of due ids here, in one `enter_batch`; how many ran. A run is finished
    /// under the same lock that starts the next one when both timers share a shard.
    pub(crate) fn run_batch(&self, ids: &[TimerId]) -> usize {
        let mut ran = 0;
        T::enter_batch(&mut || {
            let mut last: Option<Finishing<'_, T>> = None;
            for &id in ids {
                if self.executor.is_closed() {
                    break;
                }
                let Ok((shard, key)) = self.shard_of(id) else {
                    continue;
                };
                let mut state = shard.lock();
                let finished = match last.take() {
                    Some(run) if std::ptr::eq(run.shard, shard) => {
                        Some(self.finish(run, &mut state))
                    }
                    Some(run) => {
                        drop(state);
                        self.finish_alone(run);
                        state = shard.lock();
                        None
                    }
                    None => None,
                };
                let started = state.start(key);
                drop(state);
                if let Some(finished) = finished {
                    self.settle(finished);
                }
                if let Some(mut run) = started {
                    self.run_task(id, &mut run);
                    ran += 1;
                    last = Some(Finishing {
                        shard,
                        key,
                        task: run.task,
                    });
                }
            }
            if let Some(run) = last {
                self.finish_alone(run);
            }
        });
        ran
    }

    /// Runs a started timer's task, recording its lateness (from the exact time it was
    /// due, not its tick) and catching a panic.
    fn run_task(&self, id: TimerId, run: &mut Run<T>) {
        let late_ns = self
            .clock
            .elapsed_ns()
            .saturating_sub(self.clock.exact_ns(run.deadline));
        self.lateness.record(late_ns / 1000);
        let scope = CallbackScope::enter(self.id(), id);
        if catch_unwind(AssertUnwindSafe(|| run.task.run(id))).is_err() {
            self.panics.fetch_add(1, Relaxed);
        }
        drop(scope);
    }

    /// Ends a run under its shard's lock; what comes back goes to [`settle`](Self::settle)
    /// once the lock is let go.
    fn finish(&self, run: Finishing<'_, T>, state: &mut ShardState<T>) -> Result<Deadline, T> {
        let finished = state.finish(run.key, run.task, &self.clock);
        run.shard.notify_finished(state);
        finished
    }

    fn finish_alone(&self, run: Finishing<'_, T>) {
        let shard = run.shard;
        let finished = self.finish(run, &mut shard.lock());
        self.settle(finished);
    }

    /// After a run ended: a re-armed timer may wake the tick thread; an ended one is dropped.
    fn settle(&self, finished: Result<Deadline, T>) {
        match finished {
            Ok(next) => self.ticker.notify_if_earlier(next.tick),
            Err(task) => self.release(Some(task)),
        }
    }

    /// One round of the tick thread: expire, dispatch, watch the queue. Returns the tick to
    /// sleep until and the longest sleep allowed.
    pub(crate) fn tick(self: &Arc<Self>, due: &mut Vec<TimerId>) -> (Option<u64>, Duration) {
        self.collect_due(self.clock.now_tick(), due);
        if self.config.max_workers == 0 {
            self.run_batch(due);
            due.clear();
        } else if self.executor.push(due) {
            super::spawn_worker(self);
        }
        let (next, wall) = self.move_ahead();
        let mut longest = Duration::MAX;
        if self.config.max_workers > 0 {
            let (grow, waiting) = self.executor.should_grow();
            if grow {
                super::spawn_worker(self);
            }
            if waiting {
                longest = GROW_AFTER;
            }
        }
        if wall {
            longest = longest.min(WALL_CHECK);
        }
        (next, longest)
    }

    /// Re-places wall-clock timers if the system clock moved against the monotonic one.
    pub(crate) fn follow_wall_clock(&self, offset: &mut i128) {
        let now = self.clock.wall_offset_ns();
        if (now - *offset).unsigned_abs() > u128::from(self.clock.tick_ns()).max(1_000_000) {
            *offset = now;
            for shard in self.shards.iter() {
                shard.lock().replace_wall_timers(&self.clock);
            }
        }
    }

    pub(crate) fn stats(&self) -> Stats {
        let mut stats = Stats::default();
        for shard in self.shards.iter() {
            shard.lock().counters.add_to(&mut stats);
        }
        let counts = self.executor.counts();
        stats.workers = counts.workers as u64;
        stats.workers_peak = counts.peak as u64;
        stats.workers_spawned = counts.spawned as u64;
        stats.workers_retired = counts.retired as u64;
        stats.queue_depth = counts.queued as u64;
        stats.late_p50_us = self.lateness.quantile(0.50);
        stats.late_p99_us = self.lateness.quantile(0.99);
        stats.late_max_us = self.lateness.max();
        stats.callback_panics = self.panics.load(Relaxed);
        stats
    }

    /// Whether the calling thread runs a callback of this runtime.
    pub(crate) fn in_callback(&self) -> bool {
        CURRENT.with(|c| c.get().0) == self.id()
    }

    /// Marks the runtime as shutting down; false if it already was.
    pub(crate) fn begin_shutdown(&self) -> bool {
        !self.shutting_down.swap(true, Relaxed)
    }

    /// Closes every shard and drops what was pending; how many.
    pub(crate) fn discard_all(&self) -> usize {
        let mut discarded = 0;
        for shard in self.shards.iter() {
            let tasks = shard.lock().close();
            discarded += tasks.len();
            self.capacity.release(tasks.len());
            for task in tasks {
                drop_task(task, &self.panics);
            }
        }
        discarded
    }
}

/// A worker thread: batches from the queue until told to exit.
pub(crate) fn worker_main<T: Task>(inner: Arc<Inner<T>>) {
    let mut batch = Vec::new();
    while inner.executor.next_batch(&mut batch) {
        inner.run_batch(&batch);
    }
}

/// The tick thread.
pub(crate) fn ticker_main<T: Task>(inner: Arc<Inner<T>>) {
    tighten_timer_slack();
    let mut due = Vec::new();
    let mut wall_offset = inner.clock.wall_offset_ns();
    while !inner.ticker.stopped() {
        inner.ticker.begin_scan();
        inner.follow_wall_clock(&mut wall_offset);
        let (next, longest) = inner.tick(&mut due);
        let timeout = match next {
            Some(tick) => Some(inner.clock.until(tick).min(longest)),
            None => (longest != Duration::MAX).then_some(longest),
        };
        inner.ticker.sleep(next, timeout);
    }
}
