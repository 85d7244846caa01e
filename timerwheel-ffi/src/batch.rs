//! The exported functions that delete or re-arm many timers in one call.

use std::time::Duration;

use timerwheel_core::{Error, Hold, TimerId};

use crate::boundary::guard;
use crate::handle::tw_wheel;
use crate::ptr::runtime;
use crate::task::CTask;
use crate::types::{named, timer_id, tw_status, tw_timer_id};

/// Deletes the timers `ids[0..n]` in order, each as tw_delete would, and writes its status
/// to `statuses[i]` (TW_OK, TW_ERR_NOT_FOUND, TW_ERR_SHUTDOWN or TW_ERR_FORKED, with the
/// meanings of tw_delete). An id given twice is TW_ERR_NOT_FOUND the second time. A drop
/// function run by a delete may call any function, this one included; `ids` is read one
/// id at a time, just before that id is deleted.
///
/// Returns TW_OK when every status was written (`n` 0 included), or, and then nothing
/// changes and `statuses` is not written: TW_ERR_INVALID when `w` is NULL, or `ids` or
/// `statuses` is NULL while `n` is not 0; TW_ERR_BUSY when called from a tw_export
/// function of this wheel.
///
/// # Safety
/// `w` is NULL or a live wheel; unless NULL, `ids` is readable and `statuses` writable for
/// `n` elements each.
#[no_mangle]
pub unsafe extern "C" fn tw_delete_many(
    w: *mut tw_wheel,
    ids: *const tw_timer_id,
    n: usize,
    statuses: *mut tw_status,
) -> tw_status {
    // SAFETY: the caller keeps tw_delete_many's contract, which is each_timer's.
    unsafe { each_timer(w, ids, None, n, statuses, |hold, id, _| hold.cancel(id)) }
}

/// Re-arms the timers `ids[0..n]` in order, `ids[i]` to fire `delays_ms[i]` from now, each
/// as tw_reset would, and writes its status to `statuses[i]` (with the meanings of
/// tw_reset). An id given twice is re-armed twice: the later delay holds.
///
/// Returns TW_OK when every status was written (`n` 0 included), or TW_ERR_INVALID when `w`
/// is NULL, or `ids`, `delays_ms` or `statuses` is NULL while `n` is not 0: then nothing
/// changes and `statuses` is not written.
///
/// # Safety
/// `w` is NULL or a live wheel; unless NULL, `ids` and `delays_ms` are readable and
/// `statuses` writable for `n` elements each.
#[no_mangle]
pub unsafe extern "C" fn tw_reset_many(
    w: *mut tw_wheel,
    ids: *const tw_timer_id,
    delays_ms: *const u64,
    n: usize,
    statuses: *mut tw_status,
) -> tw_status {
    let reset = |hold: &Hold<CTask>, id, delay_ms| hold.reset(id, Duration::from_millis(delay_ms));
    // SAFETY: the caller keeps tw_reset_many's contract, which is each_timer's.
    unsafe { each_timer(w, ids, Some(delays_ms), n, statuses, reset) }
}

/// Applies `op` to each timer of `ids[0..n]` with the matching value of `values` (0 when
/// there are none), writing each status, behind the panic boundary. The arrays are read
/// and written one element at a time, through the raw pointers: an `op` that runs a drop
/// function may call into the library with the same arrays.
///
/// # Safety
/// `w` is NULL or a live wheel; unless NULL, `ids` and `values` are readable and `statuses`
/// writable for `n` elements each.
unsafe fn each_timer(
    w: *mut tw_wheel,
    ids: *const tw_timer_id,
    values: Option<*const u64>,
    n: usize,
    statuses: *mut tw_status,
    op: impl Fn(&Hold<CTask>, TimerId, u64) -> Result<(), Error>,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        let values_null = values.is_some_and(|values| values.is_null());
        if n > 0 && (ids.is_null() || statuses.is_null() || values_null) {
            return Err(tw_status::TW_ERR_INVALID);
        }
        // A drop run by `op` may destroy the wheel without waiting (tw_destroy_nowait): the
        // hold keeps the runtime for the ids still to come, and `w` is freed after it ends.
        let hold = runtime.hold();
        if let Err(Error::Busy) = hold.check_open() {
            return Err(tw_status::TW_ERR_BUSY); // an export's function: the call is refused
        }
        for i in 0..n {
            hold.prefetch_ahead(i, n, |ahead| {
                // SAFETY: `ids` is non-NULL here and readable for `n` elements.
                timer_id(unsafe { ids.add(ahead).read() }).ok()
            });
            // SAFETY: `ids` and `values` (if any) are non-NULL here and readable for `n`
            // elements.
            let (raw, value) =
                unsafe { (ids.add(i).read(), values.map_or(0, |v| v.add(i).read())) };
            let status = match named(raw, timer_id, || hold.check_open())
                .and_then(|id| Ok(op(&hold, id, value)?))
            {
                Ok(()) => tw_status::TW_OK,
                Err(status) => status,
            };
            // SAFETY: `statuses` is non-NULL here and writable for `n` elements.
            unsafe { statuses.add(i).write(status) };
        }
        Ok(())
    })
}
