//! The task a C timer carries: its callback, its user data and its drop function.

use std::ffi::c_void;
use std::mem;

use timerwheel_core::{prefetch, Rejected, Task, TimerId};

use crate::types::{tw_callback, tw_drop_fn, tw_status, tw_timer_id};

/// A C callback with its `user_data`. The runtime runs it through [`Task::run`] and drops it
/// exactly once when the timer ends, which calls the C `drop(user_data)`.
pub struct CTask {
    cb: unsafe extern "C" fn(tw_timer_id, *mut c_void),
    user_data: *mut c_void,
    drop: tw_drop_fn,
}

// SAFETY: a C caller that adds a timer hands `user_data` over to the library, and docs/contract.md
// (and the header) tell it that `cb` and `drop` run on another thread than the one that
// added the timer. The pointer is only ever used through `cb` and `drop`, and the runtime
// never runs a task concurrently with itself (`run` takes `&mut self`, drop happens once,
// after the last run returned).
unsafe impl Send for CTask {}

impl CTask {
    /// A task for `cb(id, user_data)`; `TW_ERR_INVALID` when `cb` is NULL.
    pub fn new(
        cb: tw_callback,
        user_data: *mut c_void,
        drop: tw_drop_fn,
    ) -> Result<Self, tw_status> {
        let cb = cb.ok_or(tw_status::TW_ERR_INVALID)?;
        Ok(CTask {
            cb,
            user_data,
            drop,
        })
    }

    /// The user data it was added with.
    pub fn user_data(&self) -> *mut c_void {
        self.user_data
    }

    /// Gives the user data back to the C caller untouched: neither `cb` nor `drop` runs.
    fn hand_back(self) {
        mem::forget(self);
    }
}

/// The id of an accepted timer, or the status of a refused add, whose task goes back to
/// the caller without its drop function being called (the caller still owns user_data).
pub fn accepted(result: Result<TimerId, Rejected<CTask>>) -> Result<tw_timer_id, tw_status> {
    match result {
        Ok(id) => Ok(id.as_u64()),
        Err(Rejected { error, task }) => {
            task.hand_back();
            Err(error.into())
        }
    }
}

impl Task for CTask {
    fn run(&mut self, id: TimerId) {
        // SAFETY: `cb` is the non-NULL callback the C caller passed with this user_data,
        // under the header's contract that it may be called with it from any thread.
        unsafe { (self.cb)(id.as_u64(), self.user_data) }
    }

    fn warm(&self) {
        prefetch(self.user_data);
    }

    /// Without a drop function, dropping the task calls nothing and frees nothing.
    fn drop_is_trivial(&self) -> bool {
        self.drop.is_none()
    }
}

impl Drop for CTask {
    fn drop(&mut self) {
        if let Some(drop) = self.drop {
            // SAFETY: the runtime drops a task exactly once, after its last run returned,
            // and a refused task is forgotten instead (`hand_back`), so `drop` runs exactly
            // once per accepted timer, as the caller was promised.
            unsafe { drop(self.user_data) }
        }
    }
}
