//! What a timer carries: its callback (a [`Task`]) and the id it is known by.

use std::any::Any;
use std::fmt;
use std::num::NonZeroU64;

use crate::wheel::prefetch;

/// The id of a timer in a [`Runtime`](crate::Runtime). Never zero. Ids are generational: an
/// id whose timer has ended reaches a later timer that reuses its memory only after that
/// memory was reused 2^32 − 1 times. Ids are unique to their runtime: another runtime finds
/// no timer by it (`Error::NotFound`), unless the two were created a multiple of 256
/// runtimes apart or one of them has reused that id's memory 2^24 − 1 times.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerId(NonZeroU64);

impl TimerId {
    /// The id as the C ABI passes it.
    pub fn as_u64(self) -> u64 {
        self.0.get()
    }

    /// An id from its C form; `None` for 0, which never names a timer.
    pub fn from_u64(raw: u64) -> Option<TimerId> {
        NonZeroU64::new(raw).map(TimerId)
    }
}

impl fmt::Debug for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TimerId({:#x})", self.0)
    }
}

/// The work a timer does when it fires. Dropping the task is the timer's end: it happens
/// exactly once, after the last run has returned (or at cancel, or at shutdown).
pub trait Task: Send + 'static {
    /// Runs the callback.
    fn run(&mut self, id: TimerId);

    /// Wraps a batch of runs on one worker, so that an interpreter lock (Python's GIL) is
    /// taken once per batch rather than once per callback. The default just calls `batch`.
    fn enter_batch(batch: &mut dyn FnMut()) {
        batch()
    }

    /// Called on the tick thread when the timer comes due, before a worker runs it: a
    /// task that points at data its run reads can [`prefetch`] it here, so the worker
    /// finds it in cache. The default does nothing.
    fn warm(&self) {}

    /// Whether a one-shot of this type whose [`drop_is_trivial`](Self::drop_is_trivial)
    /// says so at its add may be cancelled without the shard's lock. Its drop then happens
    /// later, on whichever thread takes that lock next: set it only when that answer holds
    /// for a drop on any thread, at any later time. The default says no.
    const CANCEL_WITHOUT_LOCK: bool = false;

    /// Whether a one-shot of this type may be cancelled without the shard's lock when its
    /// [`drop_is_trivial`](Self::drop_is_trivial) says so at the cancel, on the cancelling
    /// thread. The cancel that takes the timer then calls
    /// [`release_shared`](Self::release_shared) right there, and the task left behind is
    /// dropped later, on whichever thread takes the lock next. Set it only when the answer
    /// of `drop_is_trivial` holds on that thread until `release_shared` has returned, and
    /// when a task that `release_shared` emptied drops nothing, on any thread. The default
    /// says no.
    const RELEASE_WITHOUT_LOCK: bool = false;

    /// Lets go of what the task holds, through a shared reference, as its drop would (see
    /// [`RELEASE_WITHOUT_LOCK`](Self::RELEASE_WITHOUT_LOCK)): called once, by the cancel
    /// without the lock that took the timer, while no other thread uses the task. The
    /// default does nothing.
    fn release_shared(&self) {}

    /// Ends a task that a cancel without the lock took (see
    /// [`CANCEL_WITHOUT_LOCK`](Self::CANCEL_WITHOUT_LOCK) and
    /// [`RELEASE_WITHOUT_LOCK`](Self::RELEASE_WITHOUT_LOCK)), on the lock's next holder. The
    /// default drops it; a type whose such tasks hold nothing at all may forget them
    /// instead, and skip the checks its drop would make to find that out.
    fn end_taken_without_lock(self)
    where
        Self: Sized,
    {
        drop(self);
    }

    /// Whether dropping the task runs no code of the user's and frees nothing: then the
    /// runtime drops it at once where it ends, without the scope of a drop function or an
    /// export's deferral (which only matter to code that runs, or memory that is freed). The
    /// default says no.
    fn drop_is_trivial(&self) -> bool {
        false
    }
}

impl<F: FnMut(TimerId) + Send + 'static> Task for F {
    /// A closure that owns nothing to drop drops nothing, on any thread.
    const CANCEL_WITHOUT_LOCK: bool = !std::mem::needs_drop::<F>();

    fn run(&mut self, id: TimerId) {
        self(id)
    }

    fn warm(&self) {
        // The Rust API's boxed closures: what the closure captured lives behind the box.
        if let Some(boxed) = (self as &dyn Any).downcast_ref::<BoxTask>() {
            prefetch(&**boxed);
        }
    }

    /// A closure that owns nothing to drop (it captures only references and `Copy` data).
    fn drop_is_trivial(&self) -> bool {
        !std::mem::needs_drop::<F>()
    }
}

/// The task type of the Rust API: any closure, boxed.
pub type BoxTask = Box<dyn FnMut(TimerId) + Send + 'static>;

/// How a periodic timer schedules its next run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodMode {
    /// Runs at the points `delay, delay + period, delay + 2 period, ...`: each point is
    /// exact (to the nanosecond, from the add) on its own (on a manual or virtual runtime,
    /// rounded up to the tick), so a period that is not a multiple of the tick does not
    /// drift, and lateness is measured
    /// from the exact point. When a run returns, the next run is the latest point that has
    /// come by then, if any: it starts at once, late, and the points before it, which
    /// passed entirely while the run was under way (or the process stalled), are coalesced
    /// into it (no burst); otherwise the next run waits for the first point after the one
    /// that just ran. Either way the schedule stays on its grid.
    FixedRate,
    /// Runs `period` after the previous run returned.
    FixedDelay,
}
