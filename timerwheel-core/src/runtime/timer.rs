//! The Rust handle of a timer.

use std::sync::Weak;
use std::time::Duration;

use super::runtime_state::RuntimeState;
use super::{BoxTask, Error, TimerId};

/// A handle to a timer of the Rust API. Dropping it does not cancel the timer; it does not
/// keep the runtime alive either (calls after the runtime is gone report `Shutdown`).
#[derive(Clone)]
pub struct Timer {
    id: TimerId,
    runtime: Weak<RuntimeState<BoxTask>>,
}

impl std::fmt::Debug for Timer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Timer").field(&self.id).finish()
    }
}

impl Timer {
    pub(crate) fn new(id: TimerId, runtime: Weak<RuntimeState<BoxTask>>) -> Self {
        Timer { id, runtime }
    }

    /// The timer's id.
    pub fn id(&self) -> TimerId {
        self.id
    }

    fn with<R>(
        &self,
        f: impl FnOnce(&RuntimeState<BoxTask>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        f(&*self.runtime.upgrade().ok_or(Error::Shutdown)?)
    }

    /// Stops the timer; true if it was pending (see [`Runtime::cancel`](crate::Runtime::cancel)).
    pub fn cancel(&self) -> bool {
        self.with(|rt| rt.cancel(self.id)).is_ok()
    }

    /// Stops the timer and waits for a run under way on another thread.
    pub fn cancel_sync(&self) -> Result<(), Error> {
        self.with(|rt| rt.cancel_sync(self.id))
    }

    /// Re-arms the timer `delay` from now; false if it is no longer pending.
    pub fn reset(&self, delay: Duration) -> bool {
        self.with(|rt| rt.reset(self.id, delay)).is_ok()
    }

    /// Whether the timer will run (again) unless cancelled.
    pub fn is_active(&self) -> bool {
        self.with(|rt| Ok(rt.is_pending(self.id))).unwrap_or(false)
    }
}
