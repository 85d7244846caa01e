//! What a timer carries: its callback (a [`Task`]) and the id it is known by.

use std::fmt;
use std::num::NonZeroU64;

/// The id of a timer in a [`Runtime`](crate::Runtime). Never zero; ids are generational, so
/// an id whose timer has ended never reaches a later timer that reuses its memory.
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
}

impl<F: FnMut(TimerId) + Send + 'static> Task for F {
    fn run(&mut self, id: TimerId) {
        self(id)
    }
}

/// The task type of the Rust API: any closure, boxed.
pub type BoxTask = Box<dyn FnMut(TimerId) + Send + 'static>;

/// How a periodic timer schedules its next run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PeriodMode {
    /// Runs at `delay, delay + period, delay + 2 period, ...`; periods missed while the
    /// process stalled are coalesced into one run.
    FixedRate,
    /// Runs `period` after the previous run returned.
    FixedDelay,
}
