//! The exported function a callback calls about itself.

use crate::boundary::guard;
use crate::types::tw_status;

/// Records that the callback running on this thread failed, for wrappers whose callbacks
/// fail by throwing (the C++ wrapper calls it when it catches an exception, which must not
/// cross into C; the Go binding when it recovers a panic): it is counted in
/// callback_panics of its wheel at once, so tw_get_stats right after sees it, and once per
/// callback however often it was recorded. Call it from the callback itself, on its
/// thread; from a callback of another wheel run by a nested tw_poll, it records for that
/// innermost callback.
///
/// Returns TW_OK, or TW_ERR_INVALID, and nothing is counted, when no callback of any wheel
/// runs on the calling thread (a drop function is not a callback, even one that runs
/// inside a callback, from its tw_delete).
#[no_mangle]
pub extern "C" fn tw_record_callback_failure() -> tw_status {
    guard(|| Ok(timerwheel_core::record_callback_failure()?))
}
