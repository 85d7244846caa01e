//! The adaptive executor: the run queue of due timers and the workers that drain it.
//!
//! Dispatch. Every due run not yet started waits in one shared queue, in deadline order
//! (runs of equal deadlines in the order they were queued), and a worker takes
//! one run at a time, right before it starts it. So a run that is due can always be taken by
//! any idle worker or by a worker being added; none waits behind a busy worker's private
//! batch. The lock this costs per run is uncontended most of the time (the tick thread
//! pushes a whole tick's runs at once); what batching is still worth, taking an interpreter
//! lock once for many callbacks, happens around the takes ([`Task::enter_batch`]).
//!
//! Grow. The tick thread is the monitor ([`Executor::grow`]): when the oldest waiting run
//! has waited [`GROW_AFTER`] and no worker is idle, the pool grows by as many workers as are
//! busy (it doubles), bounded by the runs waiting and by `max_workers`. Doubling reaches any
//! pool size in a few milliseconds (1 to 16 workers in 4 ms under a burst of blocking
//! callbacks), yet a backlog of tiny callbacks that one worker clears in a millisecond adds
//! one worker, not sixteen. While runs wait and the pool can grow, the tick thread looks
//! again when the oldest will have waited `GROW_AFTER`; when it cannot grow (at
//! `max_workers`, or nothing waits) it does not wake for the executor at all.
//!
//! Shrink. A worker that found the queue empty for `worker_keepalive` retires, down to
//! `min_workers`. A worker only waits when the queue is empty, so none retires while runs
//! wait.
//!
//! [`Task::enter_batch`]: super::Task::enter_batch

use std::collections::VecDeque;
use std::time::Duration;

use super::clock::Deadline;
use super::sync::thread::{self, JoinHandle};
use super::sync::time::Instant;
use super::sync::{Condvar, Mutex, MutexGuard};
use super::TimerId;

/// How long the oldest waiting run may wait, with every worker busy, before the pool grows.
pub(crate) const GROW_AFTER: Duration = Duration::from_millis(1);

/// A due run not yet started, its deadline, and since when it waits.
struct Waiting {
    id: TimerId,
    deadline: Deadline,
    since: Instant,
}

#[derive(Default)]
struct Queue {
    runs: VecDeque<Waiting>,
    /// Worker threads counted, running or starting.
    workers: usize,
    /// Workers waiting for work.
    idle: usize,
    peak: usize,
    spawned: usize,
    retired: usize,
    /// Threads inside `Runtime::poll` (manual mode).
    pollers: usize,
    /// Whether the tick thread runs.
    ticker: bool,
    closed: bool,
    /// Runs once the executor is closed and no thread of it is left (see
    /// [`Executor::when_unused`]).
    on_unused: Option<Box<dyn FnOnce() + Send>>,
}

impl Queue {
    /// The hook to run now, if the executor is closed and no thread of it is left.
    fn unused_hook(&mut self) -> Option<Box<dyn FnOnce() + Send>> {
        let in_use = self.workers > 0 || self.pollers > 0 || self.ticker;
        self.on_unused.take_if(|_| self.closed && !in_use)
    }
}

/// Worker counts for the stats.
pub(crate) struct WorkerCounts {
    pub(crate) workers: usize,
    pub(crate) peak: usize,
    pub(crate) spawned: usize,
    pub(crate) retired: usize,
    pub(crate) queued: usize,
}

/// The monitor's verdict: how many workers to start now (counted already), and when to
/// look again (`None`: nothing to watch).
pub(crate) struct Growth {
    pub(crate) start: usize,
    pub(crate) look_again: Option<Duration>,
}

pub(crate) struct Executor {
    queue: Mutex<Queue>,
    work: Condvar,
    /// Signalled when the last poller leaves a closed executor.
    pollers_done: Condvar,
    handles: Mutex<Vec<JoinHandle<()>>>,
    min_workers: usize,
    max_workers: usize,
    keepalive: Duration,
}

impl Executor {
    pub(crate) fn new(min_workers: usize, max_workers: usize, keepalive: Duration) -> Self {
        Executor {
            queue: Mutex::new(Queue::default()),
            work: Condvar::new(),
            pollers_done: Condvar::new(),
            handles: Mutex::new(Vec::new()),
            min_workers: min_workers.min(max_workers),
            max_workers,
            keepalive,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves the initial workers; the caller spawns that many.
    pub(crate) fn reserve_initial(&self) -> usize {
        let mut queue = self.lock();
        queue.workers = self.min_workers;
        queue.peak = self.min_workers;
        self.min_workers
    }

    /// Keeps the thread handle so shutdown can join it; forgets the finished ones.
    pub(crate) fn adopt(&self, handle: JoinHandle<()>) {
        let mut handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.retain(|h| !h.is_finished());
        handles.push(handle);
    }

    /// Queues due runs (in deadline order) and wakes as many idle workers as there are runs.
    /// A run goes behind every queued run of its deadline or earlier: at the back, unless
    /// it was due before runs queued already (a timer added already due).
    pub(crate) fn push(&self, ids: &mut Vec<(Deadline, TimerId)>) {
        if ids.is_empty() {
            return;
        }
        let since = Instant::now();
        let mut queue = self.lock();
        if queue.closed {
            ids.clear();
            return;
        }
        let count = ids.len();
        for (deadline, id) in ids.drain(..) {
            let mut run = Waiting {
                id,
                deadline,
                since,
            };
            match queue.runs.back() {
                Some(last) if last.deadline > deadline => {
                    let at = queue.runs.partition_point(|w| w.deadline <= deadline);
                    // The front keeps the oldest wait, which the monitor reads.
                    run.since = run.since.min(queue.runs[at].since);
                    queue.runs.insert(at, run);
                }
                _ => queue.runs.push_back(run),
            }
        }
        let idle = queue.idle;
        drop(queue);
        if idle == 0 {
            // Every worker is busy: the monitor decides whether the pool grows.
        } else if count >= idle {
            self.work.notify_all();
        } else {
            (0..count).for_each(|_| self.work.notify_one());
        }
    }

    /// Takes the next due run to start it; `None` when the queue is empty or closed.
    pub(crate) fn take(&self) -> Option<TimerId> {
        let mut queue = self.lock();
        if queue.closed {
            return None;
        }
        queue.runs.pop_front().map(|run| run.id)
    }

    /// The monitor (see the module doc): starts workers when runs back up.
    pub(crate) fn grow(&self) -> Growth {
        let mut queue = self.lock();
        let can_grow = queue.workers < self.max_workers && !queue.closed;
        let Some(oldest) = queue.runs.front().map(|run| run.since).filter(|_| can_grow) else {
            return Growth {
                start: 0,
                look_again: None,
            };
        };
        let waited = oldest.elapsed();
        // A pool of none starts one at once: nobody else would take the run.
        if queue.workers > 0 && (waited < GROW_AFTER || queue.idle > 0) {
            return Growth {
                start: 0,
                look_again: Some(GROW_AFTER.saturating_sub(waited).max(GROW_AFTER / 4)),
            };
        }
        let busy = queue.workers - queue.idle;
        let start = busy
            .max(1)
            .min(queue.runs.len())
            .min(self.max_workers - queue.workers);
        queue.workers += start;
        queue.spawned += start;
        queue.peak = queue.peak.max(queue.workers);
        let more = queue.workers < self.max_workers;
        Growth {
            start,
            look_again: more.then_some(GROW_AFTER),
        }
    }

    /// A worker's wait for work. True when runs are queued (take them with
    /// [`take`](Self::take)); false when the worker must exit: the executor closed, or it
    /// stayed idle for the keepalive with more than `min_workers` alive.
    pub(crate) fn wait_for_work(&self) -> bool {
        let mut queue = self.lock();
        let idle_since = Instant::now();
        loop {
            if queue.closed {
                queue.workers -= 1;
                Self::run_unused_hook(queue);
                return false;
            }
            if !queue.runs.is_empty() {
                return true;
            }
            let idle_for = idle_since.elapsed();
            let may_retire = queue.workers > self.min_workers;
            if idle_for >= self.keepalive && may_retire {
                queue.workers -= 1;
                queue.retired += 1;
                return false;
            }
            queue.idle += 1;
            queue = if may_retire {
                let wait = self.keepalive.saturating_sub(idle_for);
                self.work
                    .wait_timeout(queue, wait.max(Duration::from_millis(1)))
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            } else {
                // One of the kept workers: it sleeps until there is work (or a close).
                self.work.wait(queue).unwrap_or_else(|p| p.into_inner())
            };
            queue.idle -= 1;
        }
    }

    /// Takes the executor's locks (the queue, then the thread handles) until the result is
    /// dropped: for fork().
    pub(crate) fn lock_all(&self) -> impl Sized + '_ {
        let queue = self.lock();
        (
            queue,
            self.handles.lock().unwrap_or_else(|p| p.into_inner()),
        )
    }

    /// A counted worker could not be started (the OS refused a thread).
    pub(crate) fn worker_failed(&self) {
        let mut queue = self.lock();
        queue.workers -= 1;
        Self::run_unused_hook(queue);
    }

    /// The tick thread starts; [`ticker_exited`](Self::ticker_exited) when it ends.
    pub(crate) fn ticker_started(&self) {
        self.lock().ticker = true;
    }

    pub(crate) fn ticker_exited(&self) {
        let mut queue = self.lock();
        queue.ticker = false;
        Self::run_unused_hook(queue);
    }

    /// Runs `hook` once the executor is closed and none of its threads (tick thread,
    /// workers, pollers) is left: at once if that is so already. Shutdown from one of the
    /// runtime's own threads uses it to free what those threads may still touch.
    pub(crate) fn when_unused(&self, hook: Box<dyn FnOnce() + Send>) {
        let mut queue = self.lock();
        queue.on_unused = Some(hook);
        Self::run_unused_hook(queue);
    }

    fn run_unused_hook(mut queue: MutexGuard<'_, Queue>) {
        let hook = queue.unused_hook();
        drop(queue);
        if let Some(hook) = hook {
            hook();
        }
    }

    /// Tells workers and pollers to start no more callbacks, without waiting for them; the
    /// queued runs are forgotten (their timers are discarded with the shards).
    pub(crate) fn stop(&self) {
        let mut queue = self.lock();
        queue.closed = true;
        queue.runs.clear();
        drop(queue);
        self.work.notify_all();
    }

    /// A thread enters `poll` (manual mode); false once the executor is closed.
    pub(crate) fn begin_poll(&self) -> bool {
        let mut queue = self.lock();
        queue.pollers += usize::from(!queue.closed);
        !queue.closed
    }

    pub(crate) fn end_poll(&self) {
        let mut queue = self.lock();
        queue.pollers -= 1;
        if queue.pollers == 0 && queue.closed {
            self.pollers_done.notify_all();
        }
        Self::run_unused_hook(queue);
    }

    /// Stops the workers and pollers: none starts another callback; waits for the running
    /// ones.
    pub(crate) fn close(&self) {
        self.stop();
        let handles = std::mem::take(&mut *self.handles.lock().unwrap_or_else(|p| p.into_inner()));
        for handle in handles {
            let _ = handle.join();
        }
        let mut queue = self.lock();
        while queue.pollers > 0 {
            queue = self
                .pollers_done
                .wait(queue)
                .unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Whether the calling thread is one of the executor's (the tick thread or a worker),
    /// which [`close`](Self::close) would wait for.
    pub(crate) fn runs_here(&self) -> bool {
        let me = thread::current().id();
        let handles = self.handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.iter().any(|h| h.thread().id() == me)
    }

    pub(crate) fn counts(&self) -> WorkerCounts {
        let queue = self.lock();
        WorkerCounts {
            workers: queue.workers,
            peak: queue.peak,
            spawned: queue.spawned,
            retired: queue.retired,
            queued: queue.runs.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(count: u64) -> Vec<(Deadline, TimerId)> {
        let id = |n| (Deadline::at_tick(n), TimerId::from_u64(n).unwrap());
        (1..=count).map(id).collect()
    }

    /// An executor with `workers` counted, all busy, and `queued` runs waiting.
    fn busy(workers: usize, max: usize, queued: u64) -> Executor {
        let executor = Executor::new(workers, max, Duration::from_secs(1));
        executor.reserve_initial();
        executor.push(&mut ids(queued));
        executor
    }

    fn wait_grow_after() {
        std::thread::sleep(GROW_AFTER + Duration::from_millis(1));
    }

    #[test]
    fn every_queued_run_counts_until_taken() {
        let executor = busy(1, 4, 40);
        assert_eq!(executor.counts().queued, 40);
        assert_eq!(executor.take(), TimerId::from_u64(1));
        assert_eq!(executor.counts().queued, 39);
    }

    #[test]
    fn runs_wait_in_deadline_order_ties_in_the_order_queued() {
        let executor = busy(1, 4, 0);
        let run = |tick, n| (Deadline::at_tick(tick), TimerId::from_u64(n).unwrap());
        executor.push(&mut vec![run(5, 1), run(7, 2)]);
        executor.push(&mut vec![run(3, 3), run(5, 4), run(9, 5)]);
        let taken: Vec<_> = std::iter::from_fn(|| executor.take())
            .map(|id| id.as_u64())
            .collect();
        assert_eq!(taken, [3, 1, 4, 2, 5]);
    }

    #[test]
    fn the_pool_waits_grow_after_then_doubles() {
        let executor = busy(1, 16, 64);
        let early = executor.grow();
        assert_eq!(early.start, 0, "nothing has waited GROW_AFTER yet");
        assert!(early.look_again.is_some_and(|d| d <= GROW_AFTER));
        wait_grow_after();
        let mut sizes = vec![executor.counts().workers];
        for _ in 0..5 {
            let growth = executor.grow();
            sizes.push(executor.counts().workers);
            assert_eq!(growth.look_again.is_some(), sizes.last() < Some(&16));
        }
        assert_eq!(sizes, [1, 2, 4, 8, 16, 16]);
        assert_eq!(executor.counts().spawned, 15);
    }

    #[test]
    fn growth_is_bounded_by_the_runs_waiting() {
        let executor = busy(4, 16, 2);
        wait_grow_after();
        assert_eq!(executor.grow().start, 2);
    }

    #[test]
    fn no_wake_ups_when_the_pool_cannot_grow() {
        let full = busy(4, 4, 10);
        wait_grow_after();
        let growth = full.grow();
        assert_eq!((growth.start, growth.look_again), (0, None));
        let empty = busy(1, 4, 0);
        let growth = empty.grow();
        assert_eq!((growth.start, growth.look_again), (0, None));
    }

    #[test]
    fn an_empty_pool_starts_a_worker_at_once() {
        let executor = busy(0, 4, 1);
        assert_eq!(executor.grow().start, 1);
    }

    #[test]
    fn a_closed_executor_hands_out_nothing_and_grows_no_more() {
        let executor = busy(1, 4, 3);
        executor.stop();
        assert_eq!(executor.take(), None);
        assert_eq!(executor.counts().queued, 0);
        wait_grow_after();
        assert_eq!(executor.grow().start, 0);
    }
}
