//! The task a C timer carries: its callback, its user data and its drop function.

use std::ffi::c_void;
use std::mem;

use timerwheel_core::{prefetch, Rejected, Task, TimerId};

use crate::drop_fn;
use crate::types::{tw_callback, tw_drop_fn, tw_status, tw_timer_id};

/// A C callback and its argument: two words, so that a wheel node holding it is 48 bytes.
///
/// A timer added without a drop function keeps the caller's `cb` and `user_data` here. One
/// added with a drop function keeps the three in a [`WithDrop`] box, with
/// [`run_with_drop`] as the callback: it alone costs the box (an allocation at add, a free at
/// its drop). The runtime runs the task through [`Task::run`] and drops it exactly once when
/// the timer ends, which calls the C `drop(user_data)`.
pub struct CTask {
    cb: Callback,
    data: *mut c_void,
}

type Callback = unsafe extern "C" fn(tw_timer_id, *mut c_void);

/// The task of a timer added with a drop function.
struct WithDrop {
    cb: Callback,
    user_data: *mut c_void,
    drop: unsafe extern "C" fn(*mut c_void),
}

// SAFETY: a C caller that adds a timer hands `user_data` over to the library, and docs/contract.md
// (and the header) tell it that `cb` and `drop` run on another thread than the one that
// added the timer. The pointer is only ever used through `cb` and `drop`, and the runtime
// never runs a task concurrently with itself (`run` takes `&mut self`, drop happens once,
// after the last run returned). A `WithDrop` box is owned by its task alone.
unsafe impl Send for CTask {}

impl CTask {
    /// A task for `cb(id, user_data)`; `TW_ERR_INVALID` when `cb` is NULL.
    pub fn new(
        cb: tw_callback,
        user_data: *mut c_void,
        drop: tw_drop_fn,
    ) -> Result<Self, tw_status> {
        let cb = cb.ok_or(tw_status::TW_ERR_INVALID)?;
        Ok(match drop {
            None => CTask {
                cb,
                data: user_data,
            },
            Some(drop) => CTask {
                cb: run_with_drop,
                data: Box::into_raw(Box::new(WithDrop {
                    cb,
                    user_data,
                    drop,
                }))
                .cast(),
            },
        })
    }

    /// The user data it was added with.
    pub fn user_data(&self) -> *mut c_void {
        match self.has_drop() {
            // SAFETY: `data` is this task's `WithDrop` box, alive while the task is.
            true => unsafe { (*self.data.cast::<WithDrop>()).user_data },
            false => self.data,
        }
    }

    /// Whether `data` is a [`WithDrop`] box. `run_with_drop` is this crate's own function,
    /// never inlined, whose address no caller can pass as its callback.
    fn has_drop(&self) -> bool {
        std::ptr::fn_addr_eq(self.cb, run_with_drop as Callback)
    }

    /// Takes the [`WithDrop`] box back, if the task has one.
    fn take_box(&mut self) -> Option<Box<WithDrop>> {
        // SAFETY: `data` is the box `new` leaked for this task, and `self` is forgotten or
        // dropped right after, so the box is freed once.
        self.has_drop()
            .then(|| unsafe { Box::from_raw(self.data.cast::<WithDrop>()) })
    }

    /// Gives the user data back to the C caller untouched: neither `cb` nor `drop` runs.
    fn hand_back(self) {
        let mut task = mem::ManuallyDrop::new(self);
        drop(task.take_box());
    }
}

/// The callback of a task with a drop function: runs the caller's callback.
#[inline(never)]
unsafe extern "C" fn run_with_drop(id: tw_timer_id, data: *mut c_void) {
    // SAFETY: only tasks whose `data` is their `WithDrop` box run through here, and the box
    // lives until the task's drop, after its last run.
    let task = unsafe { &*data.cast::<WithDrop>() };
    // SAFETY: the callback the C caller passed with this user_data, under the header's
    // contract that it may be called with it from any thread.
    unsafe { (task.cb)(id, task.user_data) }
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
    /// Whether a C task has a drop function is fixed at its add.
    const CANCEL_WITHOUT_LOCK: bool = true;

    fn run(&mut self, id: TimerId) {
        // SAFETY: `cb` is the non-NULL callback the C caller passed with this data (or
        // `run_with_drop` with its box), under the header's contract that it may be called
        // with it from any thread.
        unsafe { (self.cb)(id.as_u64(), self.data) }
    }

    fn warm(&self) {
        prefetch(self.data);
    }

    /// Without a drop function, dropping the task calls nothing and frees nothing.
    fn drop_is_trivial(&self) -> bool {
        !self.has_drop()
    }

    /// Only a task without a drop function is taken without the lock: nothing to drop.
    fn end_taken_without_lock(self) {
        debug_assert!(!self.has_drop());
        std::mem::forget(self);
    }
}

impl Drop for CTask {
    fn drop(&mut self) {
        if self.has_drop() {
            self.drop_user_data();
        }
    }
}

impl CTask {
    /// Calls the task's drop function and frees its box. Out of line: inlined, it would
    /// crowd the registers of every call that may drop a task (`tw_add` among them).
    #[cold]
    #[inline(never)]
    fn drop_user_data(&mut self) {
        if let Some(task) = self.take_box() {
            // SAFETY: the runtime drops a task exactly once, after its last run returned,
            // and a refused task is handed back instead (`hand_back`), so `drop` runs
            // exactly once per accepted timer, as the caller was promised.
            unsafe { drop_fn::call(task.drop, task.user_data) }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static RAN_WITH: AtomicUsize = AtomicUsize::new(0);
    static DROPPED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn remember_run(_id: tw_timer_id, user_data: *mut c_void) {
        RAN_WITH.store(user_data as usize, Ordering::SeqCst);
    }

    unsafe extern "C" fn count_drop(user_data: *mut c_void) {
        assert_eq!(user_data as usize, 7);
        DROPPED.fetch_add(1, Ordering::SeqCst);
    }

    fn task(drop: tw_drop_fn) -> CTask {
        CTask::new(Some(remember_run), 7 as *mut c_void, drop).unwrap()
    }

    #[test]
    fn a_task_is_two_words() {
        assert_eq!(size_of::<CTask>(), 2 * size_of::<usize>());
        assert_eq!(size_of::<Option<CTask>>(), 2 * size_of::<usize>());
    }

    /// One test, since the counters are shared: each form runs the callback with the user
    /// data, reads it back, and calls the drop function once, or never when handed back.
    #[test]
    fn both_forms_run_with_the_user_data_and_drop_as_promised() {
        for drop_fn in [None, Some(count_drop as unsafe extern "C" fn(*mut c_void))] {
            let mut t = task(drop_fn);
            assert_eq!(t.drop_is_trivial(), drop_fn.is_none());
            assert_eq!(t.user_data() as usize, 7);
            RAN_WITH.store(0, Ordering::SeqCst);
            t.run(TimerId::from_u64(1 << 32 | 1).unwrap());
            assert_eq!(RAN_WITH.load(Ordering::SeqCst), 7);
            let before = DROPPED.load(Ordering::SeqCst);
            drop(t);
            let dropped = DROPPED.load(Ordering::SeqCst) - before;
            assert_eq!(dropped, usize::from(drop_fn.is_some()));
            task(drop_fn).hand_back();
            assert_eq!(
                DROPPED.load(Ordering::SeqCst) - before,
                dropped,
                "handed back"
            );
        }
    }

    #[test]
    fn a_null_callback_is_refused() {
        let refused = CTask::new(None, std::ptr::null_mut(), Some(count_drop));
        assert_eq!(refused.err(), Some(tw_status::TW_ERR_INVALID));
    }
}
