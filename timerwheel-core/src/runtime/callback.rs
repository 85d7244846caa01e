//! Who runs on this thread: the callback (or drop function) of which runtime and timer, at
//! every depth (a callback that polls a manual runtime runs that runtime's callbacks inside
//! its own), and which runtimes it holds for a batch of calls ([`Hold`](super::Hold)). A
//! callback's own calls read it: `cancel_sync` of its own timer and a shutdown from inside
//! are `Busy`, and a failure it records is counted once; a shutdown that would wait for a
//! hold of its own thread is `Busy` too.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

use super::sync::atomic::{AtomicU64, Ordering::Relaxed};
use super::sync::thread_local;
use super::{Error, TimerId};

thread_local! {
    /// The callback running on this thread.
    static CURRENT: Cell<Current> = const { Cell::new(Current::NONE) };
    /// The callbacks this thread runs further out, innermost last: a callback that polls a
    /// manual runtime runs that runtime's callbacks inside its own.
    static OUTER: RefCell<Vec<Current>> = const { RefCell::new(Vec::new()) };
    /// The runtimes this thread holds.
    static HOLDING: RuntimesHere = const { RuntimesHere::new() };
}

/// The runtimes a thread is inside of in one way (holding them, exporting them), once for
/// each time it entered, innermost last.
pub(crate) struct RuntimesHere(RefCell<Vec<usize>>);

impl RuntimesHere {
    pub(crate) const fn new() -> Self {
        RuntimesHere(RefCell::new(Vec::new()))
    }

    pub(crate) fn enter(&self, runtime: usize) {
        self.0.borrow_mut().push(runtime);
    }

    /// Leaves the innermost entry of `runtime`.
    pub(crate) fn leave(&self, runtime: usize) {
        let mut inside = self.0.borrow_mut();
        if let Some(at) = inside.iter().rposition(|&r| r == runtime) {
            inside.remove(at);
        }
    }

    pub(crate) fn contains(&self, runtime: usize) -> bool {
        self.0.borrow().contains(&runtime)
    }
}

/// This thread holds the runtime `runtime` until [`hold_ends`] (see [`Hold`](super::Hold)).
pub(crate) fn hold_begins(runtime: usize) {
    HOLDING.with(|holding| holding.enter(runtime));
}

/// One hold of the runtime `runtime` on this thread ended.
pub(crate) fn hold_ends(runtime: usize) {
    HOLDING.with(|holding| holding.leave(runtime));
}

/// Whether this thread holds the runtime `runtime`.
pub(crate) fn holding_here(runtime: usize) -> bool {
    HOLDING.with(|holding| holding.contains(runtime))
}

/// Whether this thread runs, at any depth, a callback for which `matches` holds.
pub(crate) fn running(matches: impl Fn(&Current) -> bool) -> bool {
    CURRENT.with(|c| matches(&c.get())) || OUTER.with(|outer| outer.borrow().iter().any(matches))
}

/// The runtime and timer whose callback runs on a thread (0, 0 when none), whether it
/// reported a failure ([`record_callback_failure`]), the runtime's count of failed
/// callbacks that a report goes to, and whether a drop function runs inside it now (which
/// is not the callback, and records nothing).
#[derive(Clone, Copy)]
pub(crate) struct Current {
    pub(crate) runtime: usize,
    pub(crate) timer: u64,
    failed: bool,
    panics: *const AtomicU64,
    dropping: bool,
}

impl Current {
    const NONE: Current = Current {
        runtime: 0,
        timer: 0,
        failed: false,
        panics: std::ptr::null(),
        dropping: false,
    };
}

/// Marks the current thread as running a callback of a runtime until it is left (or
/// dropped).
pub(crate) struct CallbackScope {
    previous: Current,
}

impl CallbackScope {
    pub(crate) fn enter(runtime: usize, id: TimerId, panics: *const AtomicU64) -> Self {
        Self::replace(Current {
            runtime,
            timer: id.as_u64(),
            failed: false,
            panics,
            dropping: false,
        })
    }

    /// A drop function of the runtime `runtime` runs on this thread, standing for the
    /// timer `timer` (0: none, as for a group's data): it may call as a callback of that
    /// runtime may (`tw_destroy` is `Busy` there, whatever thread it is; `cancel_sync` of
    /// that timer too), but it is not a callback, and records nothing.
    fn drop_of(runtime: usize, timer: u64) -> Self {
        Self::replace(Current {
            runtime,
            timer,
            failed: false,
            panics: std::ptr::null(),
            dropping: true,
        })
    }

    fn replace(current: Current) -> Self {
        let previous = CURRENT.with(|c| c.replace(current));
        if previous.runtime != 0 {
            OUTER.with(|outer| outer.borrow_mut().push(previous));
        }
        CallbackScope { previous }
    }

    /// Ends the scope; whether the callback reported a failure.
    pub(crate) fn leave(self) -> bool {
        let left = self.restore();
        std::mem::forget(self);
        left.failed
    }

    /// Puts back what ran further out; what this scope ran.
    fn restore(&self) -> Current {
        if self.previous.runtime != 0 {
            OUTER.with(|outer| outer.borrow_mut().pop());
        }
        CURRENT.with(|c| c.replace(self.previous))
    }
}

impl Drop for CallbackScope {
    fn drop(&mut self) {
        self.restore();
    }
}

/// Records that the callback running on this thread failed, for an interface whose
/// callbacks report failure rather than panic (a C++ exception caught by its wrapper, a Go
/// panic recovered by its binding): it is counted in `callback_panics` of its runtime at
/// once (a report made right after sees it), once per callback however often it was
/// recorded. `Invalid`, and nothing is counted, outside a callback, and in a drop function
/// (which is not a callback), also one that runs inside a callback.
pub fn record_callback_failure() -> Result<(), Error> {
    CURRENT.with(|c| {
        let mut current = c.get();
        if current.runtime == 0 || current.dropping {
            return Err(Error::Invalid);
        }
        if !current.failed && !current.panics.is_null() {
            // SAFETY: `panics` is the counter of the runtime whose callback runs on this
            // thread: `run_task` borrows that runtime for as long as its scope is current.
            unsafe { &*current.panics }.fetch_add(1, Relaxed);
        }
        current.failed = true;
        c.set(current);
        Ok(())
    })
}

/// The timer whose callback or drop runs innermost on this thread, if it is one of the
/// runtime `runtime`'s (0 otherwise): the timer a drop run here now stands for.
pub(crate) fn current_timer(runtime: usize) -> u64 {
    let current = CURRENT.with(Cell::get);
    match current.runtime == runtime {
        true => current.timer,
        false => 0,
    }
}

/// Drops a task of the runtime `runtime` outside every lock, in the scope of a drop
/// function standing for the timer `timer` (0: none; see [`CallbackScope::drop_of`]); a
/// panicking drop is counted, not propagated. A drop deferred by an export runs later for
/// the timer it was deferred from.
pub(crate) fn drop_task_of<T>(task: T, runtime: usize, timer: u64, panics: &AtomicU64) {
    let _dropping = CallbackScope::drop_of(runtime, timer);
    if panicked(move || drop(task)) {
        panics.fetch_add(1, Relaxed);
    }
}

/// Runs `f`; whether it panicked. No panic leaves: the payload is dropped here, and a
/// payload whose own drop panics is let go without that second payload being dropped
/// (it is forgotten, as its drop could panic again).
pub(crate) fn panicked(f: impl FnOnce()) -> bool {
    let Err(payload) = catch_unwind(AssertUnwindSafe(f)) else {
        return false;
    };
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        std::mem::forget(again);
    }
    true
}
