//! The exported functions that add, re-arm and delete timers.

use std::ffi::c_void;
use std::time::Duration;

use timerwheel_core::{Error, GroupId, Missed, PeriodMode, Runtime, TimerId, When};

use crate::boundary::guard;
use crate::handle::tw_wheel;
use crate::ptr::{runtime, Out};
use crate::task::{accepted, CTask};
use crate::time::unix_time;
use crate::types::{named, timer_id, tw_callback, tw_drop_fn, tw_status, tw_timer_id};
use crate::types::{RawMissed, RawPeriodMode};

/// Adds a one-shot timer: `cb(id, user_data)` runs once, not before `delay_ms` has passed
/// (normally within an eighth of a tick, 50 us to 1 ms, after; a manual or virtual wheel rounds the deadline
/// up to the tick), on a worker thread (the tick thread when max_workers is 0, inside
/// tw_poll for a manual wheel). Then `drop(user_data)` is called, if `drop` is not NULL.
/// `*out_id` receives the timer's id before the timer can run: `cb` finds it there, however
/// late the calling thread gets on after the add (docs/contract.md).
///
/// Returns TW_OK, or one of these, and then neither `cb` nor `drop` is ever called (the
/// caller still owns `user_data`) and `*out_id` is left untouched:
/// - TW_ERR_INVALID: `w`, `cb` or `out_id` NULL.
/// - TW_ERR_FULL: the wheel holds max_timers pending timers.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// Any `delay_ms` is accepted, UINT64_MAX included (such a timer never fires in practice: a
/// deadline past the clock's range, 2^64 ns from the wheel's creation, is held at the
/// range's last tick, which only a virtual clock reaches, and runs there).
///
/// # Safety
/// `w` is NULL or a live wheel; `out_id` is NULL or valid for writing a `tw_timer_id`;
/// `cb` and `drop` may be called with `user_data` from any thread.
#[no_mangle]
pub unsafe extern "C" fn tw_add(
    w: *mut tw_wheel,
    delay_ms: u64,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let when = || Ok((When::After(Duration::from_millis(delay_ms)), None));
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// Adds a periodic timer: first run after `delay_ms`, then every `period_ms`, in `mode`.
/// Runs of one timer never overlap. `drop(user_data)` is called once, after the timer is
/// deleted (and its running callback, if any, returned) or at destroy.
///
/// TW_FIXED_RATE keeps the schedule delay, delay + period, delay + 2 period, ...: each point
/// is exact (from the time of the add), each one on its own, so a period that is not a
/// multiple of the tick does not drift; lateness (tw_stats) is measured from
/// the exact point. When a run returns, the next run is the latest point that has come by
/// then, if any: it starts at once, late, and the points before it, which passed entirely
/// while the callback ran or the process stalled, are coalesced into it (no burst).
/// Otherwise the next run waits for the first point after the start of the one that just
/// ran. No two runs start at the same clock reading: on a virtual clock, which stands still
/// during a run, the points at its reading are coalesced into it (a period below the tick
/// runs once per tick). Either way the schedule stays on its grid. TW_FIXED_DELAY runs `period_ms` after the previous
/// callback returned.
///
/// Returns TW_OK, or one of these, and then neither `cb` nor `drop` is ever called and
/// `*out_id` is left untouched:
/// - TW_ERR_INVALID: `w`, `cb` or `out_id` NULL; `period_ms` 0; `mode` not a tw_period_mode.
/// - TW_ERR_FULL: the wheel holds max_timers pending timers.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is the C contract
pub unsafe extern "C" fn tw_add_periodic(
    w: *mut tw_wheel,
    delay_ms: u64,
    period_ms: u64,
    mode: RawPeriodMode,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let (delay, period) = (
        Duration::from_millis(delay_ms),
        Duration::from_millis(period_ms),
    );
    // SAFETY: the caller keeps tw_add_periodic's contract, which is add_periodic's.
    unsafe { add_periodic(w, delay, period, mode, cb, user_data, drop, out_id) }
}

/// Like tw_add_periodic, with the delay and the period in nanoseconds: for periods that are
/// not whole milliseconds (1.5 ms on a 500 us tick; Go's time.Duration). Same returns, with
/// `period_ns` 0 for `period_ms` 0.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is the C contract
pub unsafe extern "C" fn tw_add_periodic_ns(
    w: *mut tw_wheel,
    delay_ns: u64,
    period_ns: u64,
    mode: RawPeriodMode,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let (delay, period) = (
        Duration::from_nanos(delay_ns),
        Duration::from_nanos(period_ns),
    );
    // SAFETY: the caller keeps tw_add_periodic_ns's contract, which is add_periodic's.
    unsafe { add_periodic(w, delay, period, mode, cb, user_data, drop, out_id) }
}

/// The one path of tw_add_periodic and tw_add_periodic_ns.
///
/// # Safety
/// As for tw_add.
#[allow(clippy::too_many_arguments)]
unsafe fn add_periodic(
    w: *mut tw_wheel,
    delay: Duration,
    period: Duration,
    mode: RawPeriodMode,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let when = || Ok((every(delay, period, mode)?, None));
    // SAFETY: the caller keeps tw_add's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// Adds a one-shot timer for a wall-clock time, `unix_ms` milliseconds since the Unix
/// epoch; a time in the past runs at once, and timers already due run in the order of their
/// times (equal ones in the order added; before the wheel's creation down to 4.3 s before
/// it, further back they tie). If the system clock is stepped, the timer still
/// fires at `unix_ms` on the new clock.
///
/// Returns TW_OK, or one of these, and then neither `cb` nor `drop` is ever called and
/// `*out_id` is left untouched:
/// - TW_ERR_INVALID: `w`, `cb` or `out_id` NULL.
/// - TW_ERR_FULL: the wheel holds max_timers pending timers.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
pub unsafe extern "C" fn tw_add_at(
    w: *mut tw_wheel,
    unix_ms: i64,
    cb: tw_callback,
    user_data: *mut c_void,
    drop: tw_drop_fn,
    out_id: *mut tw_timer_id,
) -> tw_status {
    let callback = (cb, user_data, drop);
    let when = || Ok((When::At(unix_time(unix_ms)?), None));
    // SAFETY: the caller keeps tw_add_at's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// Adds a periodic timer on the schedule first, first + period, first + 2 period, ... given
/// by its absolute start `first_unix_ms` (milliseconds since the Unix epoch on the wheel's
/// wall clock, tw_now_ms): to re-create, after a restart, a timer that tw_export saw, in
/// phase with its schedule before (`first_unix_ms` = its `due_unix_ms`). When the start is
/// still ahead, the first run is at it. When it has passed, `missed` says what becomes of
/// the points that passed: TW_MISSED_RUN_ONCE runs once now, then at the schedule's next
/// point; TW_MISSED_SKIP waits for the next point. A point due right now runs now either
/// way. The phase is exact for any start (INT64_MIN included) and period (UINT64_MAX
/// included). A catch-up run (TW_MISSED_RUN_ONCE) is followed by the schedule's next point
/// in either mode, TW_FIXED_DELAY included; from that point on (from the first run when it
/// is on the schedule), the timer is like one of tw_add_periodic in `mode`, timed on
/// the monotonic clock (the wall clock is read once, here).
///
/// Returns TW_OK, or one of these, and then neither `cb` nor `drop` is ever called and
/// `*out_id` is left untouched:
/// - TW_ERR_INVALID: `w`, `cb` or `out_id` NULL; `period_ms` 0; `mode` not a
///   tw_period_mode; `missed` not a tw_missed.
/// - TW_ERR_FULL: the wheel holds max_timers pending timers.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// As for tw_add.
#[no_mangle]
#[allow(clippy::too_many_arguments)] // the signature is the C contract
pub unsafe extern "C" fn tw_add_periodic_at(
    w: *mut tw_wheel,
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
    let when = || Ok((every_from(first_unix_ms, period, mode, missed)?, None));
    // SAFETY: the caller keeps tw_add_periodic_at's contract, which is add_timer's.
    unsafe { add_timer(w, out_id, callback, when) }
}

/// The guarded path of every add: checks `out_id` and `w`, reads when the timer runs and
/// its group (`when`), makes the task of `cb`, `user_data` and `drop` (a NULL `cb` is
/// refused) and adds it. The new id is written to `*out_id` before the timer can run, so
/// that a callback reading it from there finds it. Nothing is called of a task that is
/// refused at any step: the caller still owns `user_data`.
///
/// # Safety
/// As for tw_add.
pub(crate) unsafe fn add_timer(
    w: *mut tw_wheel,
    out_id: *mut tw_timer_id,
    (cb, user_data, drop): (tw_callback, *mut c_void, tw_drop_fn),
    when: impl FnOnce() -> Result<(When, Option<GroupId>), tw_status>,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable tw_timer_id.
        let out_id = unsafe { Out::new(out_id) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        let (when, group) = when()?;
        let task = CTask::new(cb, user_data, drop)?;
        let publish = |id: TimerId| out_id.put(id.as_u64());
        accepted(runtime.add_publishing(when, group, task, publish))?;
        Ok(())
    })
}

/// The schedule of tw_add_periodic and tw_group_add_periodic.
pub(crate) fn every(
    delay: Duration,
    period: Duration,
    mode: RawPeriodMode,
) -> Result<When, tw_status> {
    let mode = PeriodMode::try_from(mode)?;
    Ok(When::Every {
        delay,
        period,
        mode,
    })
}

/// The schedule of tw_add_periodic_at and tw_group_add_periodic_at.
pub(crate) fn every_from(
    first_unix_ms: i64,
    period: Duration,
    mode: RawPeriodMode,
    missed: RawMissed,
) -> Result<When, tw_status> {
    Ok(When::EveryFrom {
        first: unix_time(first_unix_ms)?,
        period,
        mode: PeriodMode::try_from(mode)?,
        missed: Missed::try_from(missed)?,
    })
}

/// Re-arms a pending timer to fire `delay_ms` from now (for a periodic timer: moves its
/// next run; the period stays). A run that a worker has taken is not moved: it may still be
/// entering its callback after tw_reset returns (docs/contract.md).
///
/// Returns TW_OK, or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_NOT_FOUND: `id` is 0, unknown, stale, deleted, or a one-shot that fired.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_reset(w: *mut tw_wheel, id: tw_timer_id, delay_ms: u64) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe {
        on_timer(w, id, |rt, id| {
            rt.reset(id, Duration::from_millis(delay_ms))
        })
    }
}

/// Deletes a timer: TW_OK when it was pending and will not start again. A one-shot that is
/// due but has not started yet is stopped too. For a periodic timer whose callback is
/// running: TW_OK, no further run starts, and `drop` follows when the callback returns. A
/// run has started when a worker took it, which may still be entering its callback after
/// tw_delete returns; tw_delete_sync waits for it. A callback may delete its own timer.
///
/// Returns TW_OK, or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_NOT_FOUND: `id` is 0, unknown, stale, already deleted, or a one-shot that fired.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_delete(w: *mut tw_wheel, id: tw_timer_id) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe { on_timer(w, id, Runtime::cancel) }
}

/// Like tw_delete, then waits until a callback of this timer running on another thread
/// has returned and, when the timer ended, its drop function has returned: the user data
/// is no longer in use when this returns, and the caller may free it.
///
/// Returns what tw_delete returns, or TW_ERR_BUSY at once (nothing changes) when called
/// from this timer's own callback or drop function, at any depth (also from a callback of
/// a manual wheel polled inside it) (TW_ERR_SHUTDOWN during destroy, even there). As with
/// locks, do not wait in a cycle: two callbacks that tw_delete_sync each other's timers
/// while both run wait for each other.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_delete_sync(w: *mut tw_wheel, id: tw_timer_id) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe { on_timer(w, id, Runtime::cancel_sync) }
}

/// Applies `op` to timer `id` of wheel `w`, behind the panic boundary: the part shared by
/// the calls that name an existing timer.
///
/// # Safety
/// `w` is NULL or a live wheel.
unsafe fn on_timer(
    w: *mut tw_wheel,
    id: tw_timer_id,
    op: impl FnOnce(&Runtime<CTask>, TimerId) -> Result<(), Error>,
) -> tw_status {
    // SAFETY: the caller passes NULL or a live wheel.
    unsafe { on_id(w, id, timer_id, op) }
}

/// Applies `op` to what the C id `raw` names (read by `name`: a timer, a group) in wheel
/// `w`, behind the panic boundary.
///
/// # Safety
/// `w` is NULL or a live wheel.
pub(crate) unsafe fn on_id<I>(
    w: *mut tw_wheel,
    raw: u64,
    name: impl FnOnce(u64) -> Result<I, tw_status>,
    op: impl FnOnce(&Runtime<CTask>, I) -> Result<(), Error>,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        op(runtime, named(raw, name, || runtime.check_open())?)?;
        Ok(())
    })
}
