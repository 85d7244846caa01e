//! The panic boundary: no panic ever unwinds into C. Every exported function runs its body
//! through [`guard`] (or [`guard_or`] when it does not return a status).

use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::types::tw_status;

/// Runs `body` and turns its result into a status: `TW_OK`, the error it returned, or
/// `TW_ERR_INTERNAL` when it panicked (a bug in the library, caught here).
#[inline]
pub fn guard(body: impl FnOnce() -> Result<(), tw_status>) -> tw_status {
    guard_or(tw_status::TW_ERR_INTERNAL, || match body() {
        Ok(()) => tw_status::TW_OK,
        Err(status) => status,
    })
}

/// Runs `body`, or returns `on_panic` when it panicked.
#[inline]
pub fn guard_or<R>(on_panic: R, body: impl FnOnce() -> R) -> R {
    // AssertUnwindSafe: after a panic nothing of the body's state is used again here; the
    // caller only gets the fallback value. The runtime keeps its own invariants across
    // panics (it catches callback panics itself); a panic reaching this point is a bug.
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(on_panic)
}
