//! The C drop functions a thread runs, and what waits for them to return.
//!
//! A drop function may destroy its wheel with `tw_destroy_nowait` and go on calling it
//! (each call then `TW_ERR_SHUTDOWN`), as a callback may. A callback's thread is one of the
//! wheel's (a worker, or a poller): the wheel is freed once the last of those has let go.
//! But a drop function also runs on the caller's thread, inside `tw_delete`,
//! `tw_delete_sync`, `tw_group_delete` or `tw_group_close`, which no count of the wheel's
//! covers. So `tw_destroy_nowait` holds the wheel (`Runtime::hold`) until the outermost
//! drop function running on its thread, if any, has returned.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;

thread_local! {
    /// How many drop functions run on this thread now, one inside another.
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// What to let go once the outermost drop function on this thread has returned.
    static AFTER_DROPS: RefCell<Vec<Box<dyn FnOnce()>>> = const { RefCell::new(Vec::new()) };
}

/// Calls the C drop function `drop(user_data)`, counted as running on this thread.
///
/// # Safety
/// As for a call of `drop(user_data)`: the caller's promise that `drop` takes `user_data`.
pub(crate) unsafe fn call(drop: unsafe extern "C" fn(*mut c_void), user_data: *mut c_void) {
    DEPTH.with(|depth| depth.set(depth.get() + 1));
    // SAFETY: by this function's contract.
    unsafe { drop(user_data) };
    let depth = DEPTH.with(|depth| {
        depth.set(depth.get() - 1);
        depth.get()
    });
    if depth == 0 {
        // Empty, not there, while the thread exits: nothing waits then.
        let after = AFTER_DROPS.try_with(|after| std::mem::take(&mut *after.borrow_mut()));
        after
            .unwrap_or_default()
            .into_iter()
            .for_each(|then| then());
    }
}

/// Runs `then` now, or, while a drop function runs on this thread, once the outermost one
/// has returned.
pub(crate) fn after_drops(then: impl FnOnce() + 'static) {
    match DEPTH.with(Cell::get) {
        0 => then(),
        _ => AFTER_DROPS.with(|after| after.borrow_mut().push(Box::new(then))),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use super::*;

    static FREED: AtomicUsize = AtomicUsize::new(0);
    static FREED_BEFORE_THE_DROP_RETURNED: AtomicUsize = AtomicUsize::new(0);

    unsafe extern "C" fn frees_after_drops(_: *mut c_void) {
        after_drops(|| {
            FREED.fetch_add(1, SeqCst);
        });
        FREED_BEFORE_THE_DROP_RETURNED.store(FREED.load(SeqCst), SeqCst);
    }

    unsafe extern "C" fn nests(user_data: *mut c_void) {
        // SAFETY: `frees_after_drops` takes any pointer.
        unsafe { call(frees_after_drops, user_data) };
        FREED_BEFORE_THE_DROP_RETURNED.fetch_add(10 * FREED.load(SeqCst), SeqCst);
    }

    #[test]
    fn what_a_drop_function_frees_waits_for_the_outermost_to_return() {
        // SAFETY: `nests` takes any pointer.
        unsafe { call(nests, std::ptr::null_mut()) };
        assert_eq!(FREED_BEFORE_THE_DROP_RETURNED.load(SeqCst), 0);
        assert_eq!(FREED.load(SeqCst), 1);
        after_drops(|| {
            FREED.fetch_add(1, SeqCst);
        });
        assert_eq!(FREED.load(SeqCst), 2, "outside a drop function: at once");
    }
}
