//! The exported functions of a wheel on a virtual clock (`tw_config.clock =
//! TW_CLOCK_VIRTUAL`): time moves only when the caller says so.

use std::time::Duration;

use crate::boundary::{guard, guard_or};
use crate::handle::tw_wheel;
use crate::ptr::{runtime, Out};
use crate::time::unix_ms;
use crate::types::tw_status;

/// For a wheel on a virtual clock: moves its time forward by `ms` milliseconds and runs
/// every callback that falls due on the way, on the calling thread, in deadline order, with
/// the clock standing at each one's deadline (rounded up to the tick): periodic runs, and
/// timers that callbacks add or reset, run in the same call when they fall due by its end.
/// Stores how many callbacks ran in `*ran`.
///
/// Safe from any thread: an advance of this wheel under way on another thread finishes
/// first (advances take turns, as under a lock), so the clock ends at the sum of them and
/// callbacks never overlap. The clock's range is 2^64 ns from the wheel's creation (about
/// 584 years): a deadline beyond it is held at its last tick (END, at least 1 ms before the
/// range ends), where an advance reaches and runs it.
///
/// Returns TW_OK, or (and the clock does not move):
/// - TW_ERR_INVALID: `w` or `ran` NULL, or the wheel is on the real clock, or the advance
///   would take the clock past its range (nothing runs).
/// - TW_ERR_BUSY: called from inside a callback or drop of this wheel.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed (from inside its callbacks too, after
///   tw_destroy_nowait there).
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel; `ran` is NULL or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn tw_advance(w: *mut tw_wheel, ms: u64, ran: *mut usize) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable size_t.
        let ran = unsafe { Out::new(ran) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        ran.put(runtime.advance(Duration::from_millis(ms))?);
        Ok(())
    })
}

/// For a wheel on a virtual clock: moves its time to the next deadline (rounded up to the
/// tick) and runs what is due there, as tw_advance does; stores how many ran in `*ran`. With
/// no timer pending (or only periodic timers whose next point lies past the clock's range),
/// the clock stays and `*ran` is 0. A timer held at the end of the range runs there.
///
/// Returns TW_OK, or the errors of tw_advance.
///
/// # Safety
/// `w` is NULL or a live wheel; `ran` is NULL or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn tw_advance_to_next(w: *mut tw_wheel, ran: *mut usize) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable size_t.
        let ran = unsafe { Out::new(ran) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        ran.put(runtime.advance_to_next()?);
        Ok(())
    })
}

/// The wheel's wall clock in milliseconds since the Unix epoch, the clock tw_add_at
/// follows: a virtual clock's time, or the system clock on the real clock.
///
/// Bad input: `w` NULL returns INT64_MIN (as does a virtual clock that reads INT64_MIN).
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_now_ms(w: *const tw_wheel) -> i64 {
    guard_or(i64::MIN, || {
        // SAFETY: the caller passes NULL or a live wheel.
        unsafe { runtime(w) }.map_or(i64::MIN, |runtime| unix_ms(runtime.now()))
    })
}
