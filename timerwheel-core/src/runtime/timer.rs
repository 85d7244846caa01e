//! The Rust handle of a timer.

use super::{Error, TimerId};

/// A handle to a timer of the Rust API. Dropping it does not cancel the timer.
#[derive(Clone, Debug)]
pub struct Timer {
    id: TimerId,
}

impl Timer {
    /// The timer's id.
    pub fn id(&self) -> TimerId {
        self.id
    }

    /// Stops the timer; true if it was pending (see [`Runtime::cancel`](crate::Runtime::cancel)).
    pub fn cancel(&self) -> bool {
        todo!()
    }

    /// Stops the timer and waits for a run under way on another thread.
    pub fn cancel_sync(&self) -> Result<(), Error> {
        todo!()
    }

    /// Re-arms the timer `delay` from now; false if it is no longer pending.
    pub fn reset(&self, delay: std::time::Duration) -> bool {
        let _ = delay;
        todo!()
    }

    /// Whether the timer will run (again) unless cancelled.
    pub fn is_active(&self) -> bool {
        todo!()
    }
}
