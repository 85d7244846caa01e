//! What an export needs around the snapshot: the tasks copied under the locks stay valid
//! while the export's function reads the copies outside them, and that function cannot
//! call back into the runtime it exports.
//!
//! An export locks every shard, copies what it needs of each timer (for C, its `user_data`
//! pointer), and releases the locks; then the export's function runs on the copies. Until
//! it returns, a timer that ends (cancelled, its last run returned, discarded at shutdown)
//! does not drop its task: the drop is deferred, and the export runs the deferred drops on
//! its own thread once the function returned, before it returns itself. So the data a copy
//! points to stays valid while the function runs, whatever other threads do meanwhile.

use std::collections::VecDeque;

use super::callback::{drop_task_of, RuntimesHere};
use super::group::GroupData;
use super::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use super::sync::thread_local;
use super::sync::{Condvar, Mutex, MutexGuard};

thread_local! {
    /// The runtimes whose export runs on this thread, innermost last.
    static EXPORTING: RuntimesHere = const { RuntimesHere::new() };
    /// The runtime whose deferred drops this thread runs, if any (0: none).
    static DRAINING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What ended while an export was under way, dropped once it is over: a timer's task or,
/// after its timers' tasks, the data of a group that ended.
#[allow(dead_code)] // the values are held only to be dropped
pub(crate) enum Ending<T> {
    Task(T),
    Group(GroupData),
}

/// Whether an export of the runtime `runtime` runs on this thread (its copy or its
/// function): every call of that runtime that changes it or waits is `Busy` there.
pub(crate) fn exporting_here(runtime: usize) -> bool {
    EXPORTING.with(|exporting| exporting.contains(runtime))
}

/// The exports under way in one runtime and the drops they defer.
pub(crate) struct Exports<T> {
    /// Exports under way: their functions have not returned or their deferred drops have
    /// not all run. Changed under `state`'s lock; read without it on the hot path.
    active: AtomicUsize,
    /// The deferred drops in the order they were deferred, each with the timer it stands
    /// for (see [`drop_task_of`]).
    state: Mutex<VecDeque<(u64, T)>>,
    /// Signalled when the last export of a busy period has run its deferred drops.
    settled: Condvar,
}

impl<T> Default for Exports<T> {
    fn default() -> Self {
        Exports {
            active: AtomicUsize::new(0),
            state: Mutex::new(VecDeque::new()),
            settled: Condvar::new(),
        }
    }
}

impl<T> Exports<T> {
    fn lock(&self) -> MutexGuard<'_, VecDeque<(u64, T)>> {
        // Tasks are dropped outside this lock: a poisoned lock still guards a plain list.
        self.state
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
    }

    /// Starts an export of `runtime` on this thread; call it under every shard lock, so
    /// that a task removed after the snapshot sees the export. Ends when the guard drops.
    pub(crate) fn begin<'a>(&'a self, runtime: usize, panics: &'a AtomicU64) -> ExportGuard<'a, T> {
        let _state = self.lock();
        self.active.fetch_add(1, Relaxed);
        EXPORTING.with(|exporting| exporting.enter(runtime));
        ExportGuard {
            exports: self,
            runtime,
            panics,
        }
    }

    /// Whether an export of the runtime is under way on any thread: false when none is on
    /// this one, which saw its own export begin (a cheap test before [`exporting_here`]).
    pub(crate) fn under_way(&self) -> bool {
        self.active.load(Relaxed) != 0
    }

    /// Drops `task`, standing for the timer `timer` (see [`drop_task_of`]), now, or, while
    /// an export is under way, when the last one ends.
    pub(crate) fn drop_or_defer(&self, task: T, runtime: usize, timer: u64, panics: &AtomicU64) {
        if self.active.load(Relaxed) != 0 {
            let mut deferred = self.lock();
            if self.active.load(Relaxed) != 0 {
                deferred.push_back((timer, task));
                return;
            }
        }
        drop_task_of(task, runtime, timer, panics);
    }

    /// Waits until no export is under way and the drops they deferred have run: for a call
    /// that promises every drop has run when it returns (`shutdown`). At once on the thread
    /// that runs those drops (a drop function may call it), which runs them next.
    pub(crate) fn wait_settled(&self, runtime: usize) {
        if self.active.load(Relaxed) == 0 || DRAINING.with(|d| d.get()) == runtime {
            return;
        }
        let mut deferred = self.lock();
        while self.active.load(Relaxed) != 0 {
            deferred = self
                .settled
                .wait(deferred)
                .unwrap_or_else(|poison| poison.into_inner());
        }
    }

    /// Returns once the drop of the timer `timer` has run, if an export deferred it: for
    /// `cancel_sync`. On the thread that runs the deferred drops (a drop function among
    /// them may call it), it runs that drop now, if it is still listed, rather than wait
    /// for itself; elsewhere it waits until the runtime is settled.
    pub(crate) fn wait_for_drop_of(&self, runtime: usize, timer: u64, panics: &AtomicU64) {
        if DRAINING.with(|d| d.get()) != runtime {
            return self.wait_settled(runtime);
        }
        let listed = {
            let mut deferred = self.lock();
            let at = deferred.iter().position(|&(listed, _)| listed == timer);
            at.and_then(|at| deferred.remove(at))
        };
        if let Some((timer, task)) = listed {
            drop_task_of(task, runtime, timer, panics);
        }
    }

    /// Ends an export: the last one under way runs the deferred drops here (drops deferred
    /// while they run join them), then the runtime is settled.
    fn end(&self, runtime: usize, panics: &AtomicU64) {
        if self.active.load(Relaxed) == 1 {
            let outer = DRAINING.with(|d| d.replace(runtime));
            self.run_deferred(runtime, panics);
            DRAINING.with(|d| d.set(outer));
        }
        // Under the lock, which a waiter holds from its check of `active` to its wait.
        let _deferred = self.lock();
        if self.active.fetch_sub(1, Relaxed) == 1 {
            self.settled.notify_all();
        }
    }

    /// Runs the deferred drops on this thread, in order, until none is left (drops deferred
    /// while they run join them), each for the timer it was deferred from. Each is taken
    /// off the list only as it runs: one of them that waits for a drop still listed
    /// ([`wait_for_drop_of`](Self::wait_for_drop_of)) runs it then.
    fn run_deferred(&self, runtime: usize, panics: &AtomicU64) {
        loop {
            let Some((timer, task)) = self.lock().pop_front() else {
                return;
            };
            drop_task_of(task, runtime, timer, panics);
        }
    }
}

/// An export under way on this thread; dropping it (after the export's function returned,
/// or if it panicked) ends it.
pub(crate) struct ExportGuard<'a, T> {
    exports: &'a Exports<T>,
    runtime: usize,
    panics: &'a AtomicU64,
}

impl<T> Drop for ExportGuard<'_, T> {
    fn drop(&mut self) {
        EXPORTING.with(|exporting| exporting.leave(self.runtime));
        self.exports.end(self.runtime, self.panics);
    }
}
