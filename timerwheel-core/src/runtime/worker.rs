//! Running due timers: the worker threads, and the loop that takes due runs from the
//! executor's queue one at a time and runs them on the calling thread (a worker, the tick
//! thread when `max_workers` is 0, or a thread inside manual `poll`).
//!
//! A run, in order: take the id from the queue; under the shard's lock, start it (its task
//! comes out of the wheel); run the callback outside every lock; record its end: a periodic
//! timer goes back into the wheel under the lock, a timer that ended has its task dropped
//! (its drop function runs) before this thread takes the next run, so a drop function sees
//! the next due timer still pending and can stop it. The ended timer's node goes with the
//! next lock of its shard, usually the one that starts the next run.
//!
//! On a worker, the monitor sees a callback and a drop that runs code alike: either may
//! block, and a worker blocked in one is replaced (`executor.rs`).

use std::sync::Arc;

use super::callback::{panicked, CallbackScope};
use super::clock::Deadline;
use super::executor::WorkerThread;
use super::export::Ending;
use super::extras::Slot;
use super::runtime_state::RuntimeState;
use super::shard::{Finished, Run, Shard};
use super::sync::atomic::Ordering::Relaxed;
use super::sync::thread;
use super::wake::tighten_timer_slack;
use super::{Task, TimerId};
use crate::wheel::Key;

/// Most runs one worker makes inside one [`Task::enter_batch`] (Python takes its GIL once
/// per batch) before it looks at the queue afresh.
const MAX_BATCH: usize = 32;

/// Starts a worker thread (already counted by the executor).
pub(crate) fn spawn_worker<T: Task>(inner: &Arc<RuntimeState<T>>) {
    let worker = Arc::clone(inner);
    let spawned = inner.executor.adopting(|| {
        thread::Builder::new()
            .name("timerwheel-worker".into())
            .spawn(move || worker_main(worker))
    });
    if spawned.is_err() {
        inner.executor.worker_failed();
    }
}

/// A worker thread: runs what is queued until told to exit. Its callbacks, and its
/// entry into a batch (an interpreter lock may make it wait there), are stamped for the
/// executor's monitor.
fn worker_main<T: Task>(inner: Arc<RuntimeState<T>>) {
    tighten_timer_slack();
    let me = inner.executor.enlist();
    while inner.executor.wait_for_work() {
        me.enter_run(inner.clock.elapsed_ns());
        run_batch(&inner, MAX_BATCH, Some(&me));
    }
    inner.executor.leave(&me);
}

/// Runs queued due timers on the calling thread, at most `limit`, until the queue is empty
/// or the executor closes; returns how many ran.
pub(crate) fn run_queued<T: Task>(inner: &RuntimeState<T>, limit: usize) -> usize {
    run_batch(inner, limit, None)
}

/// [`run_queued`], on a worker when `worker` is set: its stamp of the entry into the batch
/// ends once inside, and each callback is stamped.
fn run_batch<T: Task>(
    inner: &RuntimeState<T>,
    limit: usize,
    worker: Option<&WorkerThread>,
) -> usize {
    let mut ran = 0;
    T::enter_batch(&mut || {
        worker.inspect(|w| w.leave_runs());
        let mut runner = Runner {
            inner,
            worker,
            ended: None,
        };
        while ran < limit {
            let Some((id, queued)) = inner.executor.take() else {
                break;
            };
            ran += usize::from(runner.run(id, queued));
        }
        runner.forget_ended();
    });
    ran
}

/// A timer whose run ended and whose task was dropped: its node is still to be removed.
struct Ended<'a, T> {
    shard: &'a Shard<T>,
    key: Key,
}

struct Runner<'a, T> {
    inner: &'a RuntimeState<T>,
    /// The worker thread running, if it is one.
    worker: Option<&'a WorkerThread>,
    ended: Option<Ended<'a, T>>,
}

impl<'a, T: Task> Runner<'a, T> {
    /// Starts `id`, queued for its deadline `queued`, if it is still due for it, runs it
    /// and records its end; whether it ran.
    fn run(&mut self, id: TimerId, queued: Deadline) -> bool {
        let Ok((shard, key)) = self.inner.shard_of(id) else {
            return false;
        };
        // Read after the id was taken: at least the time at which it was queued.
        let now_ns = self.inner.clock.elapsed_ns();
        let mut state = shard.lock();
        if let Some(ended) = self.ended.take_if(|e| std::ptr::eq(e.shard, shard)) {
            shard.remove_ended(&mut state, ended.key);
        }
        let started = state.start(key, queued, now_ns, &self.inner.clock);
        drop(state);
        self.forget_ended();
        let Some(mut run) = started else {
            return false;
        };
        if !run.periodic {
            self.inner.one_shot_started();
        }
        self.run_callback(id, &mut run);
        self.end(shard, key, id, run);
        true
    }

    /// Runs the callback, stamped from its start (the runtime's own lock waits before and
    /// after are not).
    fn run_callback(&self, id: TimerId, run: &mut Run<T>) {
        let start_ns = self.inner.clock.elapsed_ns();
        self.stamped(Some(start_ns), || self.run_task(id, run, start_ns));
    }

    /// Runs `user_code`, on a worker stamped as a run the monitor may find blocked, from
    /// `start_ns`, or when `None` from the counter clock's reading of now (cheaper, and
    /// at most microseconds ahead: the monitor judges runs by milliseconds).
    fn stamped(&self, start_ns: Option<u64>, user_code: impl FnOnce()) {
        let Some(worker) = self.worker else {
            return user_code();
        };
        worker.enter_run(start_ns.unwrap_or_else(|| self.inner.clock.elapsed_ns_at_least()));
        user_code();
        worker.leave_runs();
    }

    /// After the callback returned: a periodic timer goes back into the wheel; a timer that
    /// ended has its task dropped now, on this thread.
    fn end(&mut self, shard: &'a Shard<T>, key: Key, id: TimerId, run: Run<T>) {
        let group = run.group;
        let task = if run.periodic {
            let mut state = shard.lock();
            let finished = state.finish(key, run, &self.inner.clock);
            shard.notify_finished(&state);
            drop(state);
            match finished {
                Finished::Rearmed(next) => {
                    self.inner.ticker.notify_if_earlier(next.tick);
                    return;
                }
                Finished::Ended(task) => task,
            }
        } else {
            run.task
        };
        self.drop_ended(id, Ending::Task(task));
        match group {
            None => self.ended = Some(Ended { shard, key }),
            Some(group) => self.leave_group(shard, key, id, group),
        }
    }

    /// A group's timer whose task was dropped leaves its group now, so that the group's
    /// drop, if this was its last timer, follows at once, on this thread. Out of the way
    /// of the timers outside groups.
    #[cold]
    #[inline(never)]
    fn leave_group(&self, shard: &Shard<T>, key: Key, id: TimerId, group: Slot) {
        let mut state = shard.lock();
        let ended = state.member_ended(key, group);
        shard.notify_finished(&state);
        drop(state);
        if let Some(data) = ended {
            self.drop_ended(id, Ending::Group(data));
        }
    }

    /// Drops what ended, on this thread. A task whose drop is trivial at once, as anywhere
    /// (see [`Task::drop_is_trivial`]); else as the timer's drop, on a worker stamped as a
    /// callback is: a drop function that blocks holds its worker as a blocked callback
    /// does, and the monitor replaces it alike.
    fn drop_ended(&self, id: TimerId, ending: Ending<T>) {
        match ending {
            Ending::Task(task) if task.drop_is_trivial() => drop(task),
            ending => self.stamped(None, || self.inner.end_for(id, ending)),
        }
    }

    /// Runs a started timer's task, which starts at `start_ns`, recording its lateness
    /// (from the exact time it was due, not its tick), catching a panic and counting it
    /// when slow.
    fn run_task(&self, id: TimerId, run: &mut Run<T>, start_ns: u64) {
        let late_ns = start_ns.saturating_sub(self.inner.clock.exact_ns(run.deadline));
        self.inner.lateness.record(late_ns / 1000);
        let scope = CallbackScope::enter(self.inner.id(), id, &self.inner.panics);
        let panicked = panicked(|| run.task.run(id));
        let recorded = scope.leave(); // counted when it was recorded
        if panicked && !recorded {
            self.inner.panics.fetch_add(1, Relaxed);
        }
        if let Some(slow_ns) = self.inner.slow_callback_ns {
            if self.inner.clock.elapsed_ns().saturating_sub(start_ns) >= slow_ns {
                self.inner.slow_callbacks.fetch_add(1, Relaxed);
            }
        }
    }

    /// Removes the node of the last ended timer, if any.
    fn forget_ended(&mut self) {
        if let Some(ended) = self.ended.take() {
            ended.shard.remove_ended(&mut ended.shard.lock(), ended.key);
        }
    }
}
