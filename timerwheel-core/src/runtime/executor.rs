//! The adaptive executor: a run queue of expired timer ids and the workers that drain it.
//!
//! The grow/shrink decision lives here. Grow: when the queue has stayed non-empty for
//! [`GROW_AFTER`] and no worker is idle, the monitor (called by the tick thread, which wakes
//! at least that often while work waits) adds one worker, up to `max_workers`; at most one
//! per [`GROW_AFTER`]. Shrink: a worker that found no work for `worker_keepalive` retires,
//! down to `min_workers`.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::TimerId;

/// How long the queue must stay non-empty with every worker busy before one more starts.
pub(crate) const GROW_AFTER: Duration = Duration::from_millis(1);
/// Most ids a worker takes at once (fewer when other workers could share them).
const MAX_BATCH: usize = 32;

#[derive(Default)]
struct Queue {
    ids: VecDeque<TimerId>,
    /// Since when the queue has been non-empty.
    backlog_since: Option<Instant>,
    workers: usize,
    idle: usize,
    peak: usize,
    spawned: usize,
    retired: usize,
    /// Threads inside `Runtime::poll` (manual mode).
    pollers: usize,
    closed: bool,
}

/// Worker counts for the stats.
pub(crate) struct WorkerCounts {
    pub(crate) workers: usize,
    pub(crate) peak: usize,
    pub(crate) spawned: usize,
    pub(crate) retired: usize,
    pub(crate) queued: usize,
}

pub(crate) struct Executor {
    queue: Mutex<Queue>,
    work: Condvar,
    /// Signalled when the last poller leaves a closed executor.
    pollers_done: Condvar,
    /// Mirrors `Queue::closed` for the check before every callback.
    closed: AtomicBool,
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
            closed: AtomicBool::new(false),
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

    /// Queues due ids and wakes idle workers. Returns true when a worker must be started
    /// now (there is none at all).
    pub(crate) fn push(&self, ids: &mut Vec<TimerId>) -> bool {
        if ids.is_empty() {
            return false;
        }
        let mut queue = self.lock();
        if queue.ids.is_empty() {
            queue.backlog_since = Some(Instant::now());
        }
        let count = ids.len();
        queue.ids.extend(ids.drain(..));
        let idle = queue.idle;
        let start_one = queue.workers == 0 && self.max_workers > 0 && !queue.closed;
        if start_one {
            Self::count_spawn(&mut queue);
        }
        drop(queue);
        match (idle, count) {
            (0, _) => {}
            (_, 1) => self.work.notify_one(),
            _ => self.work.notify_all(),
        }
        start_one
    }

    /// The monitor's decision: true when one more worker should start now (it is counted
    /// already). Also tells whether work is waiting, so the tick thread keeps watching.
    pub(crate) fn should_grow(&self) -> (bool, bool) {
        let mut queue = self.lock();
        let waiting = !queue.ids.is_empty();
        let backed_up = queue
            .backlog_since
            .is_some_and(|since| since.elapsed() >= GROW_AFTER);
        let grow = waiting
            && backed_up
            && queue.idle == 0
            && queue.workers < self.max_workers
            && !queue.closed;
        if grow {
            Self::count_spawn(&mut queue);
            queue.backlog_since = Some(Instant::now());
        }
        (grow, waiting)
    }

    fn count_spawn(queue: &mut Queue) {
        queue.workers += 1;
        queue.spawned += 1;
        queue.peak = queue.peak.max(queue.workers);
    }

    /// A worker's wait for its next batch. False when the worker must exit: the executor
    /// closed, or it stayed idle for the keepalive with more than `min_workers` alive.
    pub(crate) fn next_batch(&self, batch: &mut Vec<TimerId>) -> bool {
        batch.clear();
        let mut queue = self.lock();
        let idle_since = Instant::now();
        loop {
            if queue.closed {
                queue.workers -= 1;
                return false;
            }
            if !queue.ids.is_empty() {
                let share = queue.ids.len() / queue.workers.max(1);
                let take = share.clamp(1, MAX_BATCH);
                batch.extend(queue.ids.drain(..take));
                if queue.ids.is_empty() {
                    queue.backlog_since = None;
                }
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
        self.lock().workers -= 1;
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Tells workers and pollers to start no more callbacks, without waiting for them.
    pub(crate) fn stop(&self) {
        self.lock().closed = true;
        self.closed.store(true, Ordering::Release);
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

    pub(crate) fn counts(&self) -> WorkerCounts {
        let queue = self.lock();
        WorkerCounts {
            workers: queue.workers,
            peak: queue.peak,
            spawned: queue.spawned,
            retired: queue.retired,
            queued: queue.ids.len(),
        }
    }
}
