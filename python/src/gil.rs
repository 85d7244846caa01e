//! Runtime threads keep their Python thread state from one batch to the next.
//!
//! A thread that has no Python thread state gets a new one each time it attaches, and
//! loses it when it detaches (creating one allocates its frame stack: an mmap, a munmap,
//! page faults). The tick and worker threads attach once per batch of due callbacks, so
//! the first batch on such a thread takes one more count on its thread state, which keeps
//! the state alive until the thread exits.

use std::cell::Cell;

use pyo3::{ffi, Python};

struct KeptState {
    kept: Cell<bool>,
}

thread_local! {
    static KEPT: KeptState = const { KeptState { kept: Cell::new(false) } };
}

/// Whether the calling thread is a runtime thread whose Python thread state is not kept
/// yet: it has none. Call before attaching.
pub fn should_keep() -> bool {
    // SAFETY: reading the calling thread's thread state needs neither the GIL nor a state.
    let has_state = unsafe { !ffi::PyGILState_GetThisThreadState().is_null() };
    !has_state && KEPT.try_with(|k| !k.kept.get()).unwrap_or(false)
}

/// Keeps the calling thread's Python thread state after the current attach ends.
pub fn keep(_py: Python<'_>) {
    let _ = KEPT.try_with(|k| {
        if !k.kept.replace(true) {
            // SAFETY: the thread is attached (`_py`), so this only adds one to its thread
            // state's count and returns LOCKED; `KeptState::drop` gives the count back.
            unsafe { ffi::PyGILState_Ensure() };
        }
    });
}

impl Drop for KeptState {
    /// At thread exit: attach, give back the kept count, detach; the thread state is
    /// deleted with the last count.
    fn drop(&mut self) {
        // SAFETY: `Py_IsInitialized` is always safe to call. The Ensure raises the count
        // to at least 2 and takes the GIL; the LOCKED release takes our count back without
        // letting the GIL go; the last release deletes the thread state and the GIL goes.
        unsafe {
            if self.kept.get() && ffi::Py_IsInitialized() != 0 {
                let state = ffi::PyGILState_Ensure();
                ffi::PyGILState_Release(ffi::PyGILState_STATE::PyGILState_LOCKED);
                ffi::PyGILState_Release(state);
            }
        }
    }
}
