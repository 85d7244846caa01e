//! The exported functions of timer groups: the timers of one session, deleted together,
//! with one user data freed once after the last of them (docs/contract.md, "Timer groups").

use std::ffi::c_void;
use std::time::Duration;

use timerwheel_core::{Runtime, When};

use crate::boundary::guard;
use crate::drop_fn;
use crate::handle::tw_wheel;
use crate::ptr::{runtime, Out};
use crate::time::unix_time;
use crate::timers::{add_timer, every, every_from, on_id};
use crate::types::{group_id, tw_callback, tw_drop_fn, tw_group_id, tw_status, tw_timer_id};
use crate::types::{RawMissed, RawPeriodMode};

/// A group's user data and drop function: dropping it calls `drop(user_data)`.
struct GroupData {
    user_data: *mut c_void,
    drop: tw_drop_fn,
}

// SAFETY: as for a timer's user data (`CTask`): the caller hands `user_data` over to the
// library, told that `drop` runs on another thread; the pointer is used only by `drop`,
// once.
unsafe impl Send for GroupData {}

impl Drop for GroupData {
    fn drop(&mut self) {
        if let Some(drop) = self.drop {
            // SAFETY: the runtime drops a group's data exactly once, and a refused one has
            // its `drop` taken away first, so `drop` runs once per created group.
            unsafe { drop_fn::call(drop, self.user_data) }
        }
    }
}

/// Creates a group of timers holding `user_data`, open to tw_group_add*. `drop(user_data)`
/// (if `drop` is not NULL) is called exactly once: after the group was closed
/// (tw_group_close or tw_group_delete) and the drop of its last timer has returned, on the
/// thread that ended it (the one that closed or deleted it, or ran its last timer), or by
/// tw_destroy after the drops of its timers. It may call every function a timer's drop may.
/// `*out` receives the group's id.
///
/// Returns TW_OK, or one of these, and then `drop` is never called (the caller still owns
/// `user_data`) and `*out` is left untouched:
/// - TW_ERR_INVALID: `w` or `out` NULL.
/// - TW_ERR_FULL: the wheel holds as many groups as its ids can name (2^28 per shard).
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel; `out` is NULL or valid for writing a `tw_group_id`;
/// `drop` may be called with `user_data` from any thread.
#[no_mangle]
pub unsafe extern "C" fn tw_group_create(
    w: *mut tw_wheel,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out: *mut tw_group_id,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable tw_group_id.
        let out = unsafe { Out::new(out) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        let data = Box::new(GroupData { user_data, drop });
        match runtime.group_create(data) {
            Ok(id) => out.put(id.as_u64()),
            Err(rejected) => {
                // The caller still owns user_data: the data goes without calling `drop`.
                if let Ok(mut data) = rejected.task.downcast::<GroupData>() {
                    data.drop = None;
                }
                return Err(rejected.error.into());
            }
        }
        Ok(())
    })
}

/// tw_add, into the group `group`: the timer is one of the group's until its drop has
/// returned. Returns what tw_add returns, and (then neither `cb` nor `drop` is ever called):
/// - TW_ERR_NOT_FOUND: `group` is 0, of another wheel, or a group that ended.
/// - TW_ERR_GROUP_CLOSED: the group was closed (tw_group_close, tw_group_delete).
///
/// # Safety
/// As for tw_add.
#[no_mangle]
pub unsafe extern "C" fn tw_group_add(
    w: *mut tw_wheel,
    group: tw_group_id,
    delay_ms: u64,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let when = || {
        let group = group_id(group)?;
        Ok((When::After(Duration::from_millis(delay_ms)), Some(group)))
    };
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// tw_add_periodic, into the group `group`. Returns what tw_add_periodic returns, and
/// what tw_group_add adds.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is the C contract
pub unsafe extern "C" fn tw_group_add_periodic(
    w: *mut tw_wheel,
    group: tw_group_id,
    delay_ms: u64,
    period_ms: u64,
    mode: RawPeriodMode,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let (delay, period) = (
        Duration::from_millis(delay_ms),
        Duration::from_millis(period_ms),
    );
    let when = || {
        let group = group_id(group)?;
        Ok((every(delay, period, mode)?, Some(group)))
    };
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// tw_add_at, into the group `group`. Returns what tw_add_at returns, and what
/// tw_group_add adds.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
pub unsafe extern "C" fn tw_group_add_at(
    w: *mut tw_wheel,
    group: tw_group_id,
    unix_ms: i64,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let when = || {
        let group = group_id(group)?;
        Ok((When::At(unix_time(unix_ms)?), Some(group)))
    };
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// tw_add_periodic_at, into the group `group` (a session re-created after a restart, in
/// phase with its schedule before). Returns what tw_add_periodic_at returns, and what
/// tw_group_add adds.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is the C contract
pub unsafe extern "C" fn tw_group_add_periodic_at(
    w: *mut tw_wheel,
    group: tw_group_id,
    first_unix_ms: i64,
    period_ms: u64,
    mode: RawPeriodMode,
    missed: RawMissed,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let period = Duration::from_millis(period_ms);
    let when = || {
        let group = group_id(group)?;
        Ok((
            every_from(first_unix_ms, period, mode, missed)?,
            Some(group),
        ))
    };
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// Closes a group (its owner lets go of it): it takes no more timers, its timers run on,
/// and its drop follows the drop of the last (here, before this returns, if it has none).
/// May be called from a callback or drop function, of the group's own timers too.
///
/// Returns TW_OK, or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_NOT_FOUND: `group` is 0, of another wheel, or a group that ended.
/// - TW_ERR_GROUP_CLOSED: the group was closed already.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_group_close(w: *mut tw_wheel, group: tw_group_id) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe { on_id(w, group, group_id, Runtime::group_close) }
}

/// Deletes every timer of a group, in time proportional to their number, as tw_delete
/// would each, and closes the group if it was open. Its pending timers' drops run here,
/// before this returns; a periodic timer whose callback is running ends when it returns
/// (no further run starts); the group's drop follows the last of them (here, if none is
/// running). May be called from a callback or drop function, of the group's own timers too.
///
/// Returns TW_OK (for a closed group that still has timers too), or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_NOT_FOUND: `group` is 0, of another wheel, or a group that ended.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_group_delete(w: *mut tw_wheel, group: tw_group_id) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe { on_id(w, group, group_id, Runtime::group_delete) }
}
