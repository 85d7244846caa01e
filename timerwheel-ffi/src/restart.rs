//! The export of a wheel's pending timers, for an application that keeps them across a
//! restart in its own store (re-created with tw_add_periodic_at, tw_add_at, tw_add).

use std::ffi::c_void;
use std::ptr;

use timerwheel_core::{ExportedTimer, PeriodMode, TimerKind};

use crate::boundary::guard;
use crate::handle::tw_wheel;
use crate::ptr::{runtime, Out};
use crate::task::CTask;
use crate::time::unix_ms;
use crate::types::{tw_period_mode, tw_status, tw_timer_id, tw_timer_kind};

/// One pending timer, as tw_export hands it to its function. The library fills it; it can
/// gain fields at its end in later versions: read a field only when `size` covers it
/// (docs/c.md, "ABI policy").
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct tw_timer_info {
    /// sizeof(tw_timer_info) in this library: the fields it filled.
    pub size: usize,
    /// The timer's id in this wheel (a timer re-created elsewhere gets a new one).
    pub id: tw_timer_id,
    /// A `tw_timer_kind`.
    pub kind: u32,
    /// For TW_TIMER_PERIODIC: its `tw_period_mode`; 0 otherwise.
    pub mode: u32,
    /// For TW_TIMER_PERIODIC: its period in nanoseconds; 0 otherwise.
    pub period_ns: u64,
    /// Its next run on the wheel's monotonic clock, in nanoseconds since the wheel was
    /// created: its exact deadline, before rounding up to the tick (it may lie in the past
    /// for a timer that is due and waits for a worker).
    pub due_ns: u64,
    /// The same instant on the wheel's wall clock (tw_now_ms: virtual or real), in
    /// milliseconds since the Unix epoch, rounded down.
    pub due_unix_ms: i64,
    /// For TW_TIMER_WALL_CLOCK: the time given to tw_add_at; 0 otherwise.
    pub at_unix_ms: i64,
    /// The `user_data` the timer was added with.
    pub user_data: *mut c_void,
}

/// What tw_export calls for each timer, with the `ctx` given to tw_export.
pub type tw_export_fn = Option<unsafe extern "C" fn(ctx: *mut c_void, info: *const tw_timer_info)>;

/// Calls `fn(ctx, info)` for every pending timer of `w`, in deadline order, as of one
/// instant: the wheel's locks are held while its timers are copied (their ids, deadlines
/// and `user_data`, a few milliseconds for a million), so a timer added or deleted
/// concurrently is either wholly before the export or wholly after it. `fn` runs on the
/// calling thread after the locks were released: adds, deletes and runs go on meanwhile.
/// Included: timers that are due and wait for a worker. Left out: one-shots whose callback
/// has started (they are no longer pending) and periodic timers whose callback is running
/// at that instant: their count goes to `*running` (if `running` is not NULL); each is
/// pending again when its callback returns, and a later export includes it.
///
/// `user_data` stays valid while `fn` runs: until `fn` has returned for the last timer, no
/// `drop` function of this wheel starts (one already under way is of a timer that ended
/// before the export, which `fn` is not given). A timer that ends meanwhile (deleted, fired,
/// discarded) has its `drop` called on this thread after that, before tw_export returns;
/// tw_delete_sync of such a timer waits for it. Called from `fn`, every function of this
/// wheel that changes it or waits (tw_add*, tw_reset, tw_delete*, tw_poll, tw_advance*,
/// tw_export, tw_destroy*, tw_group_*) returns TW_ERR_BUSY at once and changes nothing
/// (TW_ERR_SHUTDOWN once another thread began to destroy the wheel, as from anywhere;
/// tw_poll and tw_advance* on a wheel they do not serve still give their TW_ERR_INVALID
/// first); tw_get_stats, tw_now_ms and tw_next_timeout_ms work.
///
/// Returns TW_OK, or (and `fn` is not called):
/// - TW_ERR_INVALID: `w` or `fn` NULL.
/// - TW_ERR_BUSY: called from the `fn` of an export of `w` on this thread.
/// - TW_ERR_SHUTDOWN: the wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel; `running` is NULL or valid for writing a `size_t`; `fn`
/// may be called with `ctx` on the calling thread.
#[no_mangle]
pub unsafe extern "C" fn tw_export(
    w: *mut tw_wheel,
    r#fn: tw_export_fn,
    ctx: *mut c_void,
    running: *mut usize,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable size_t; NULL asks for no count.
        let running = unsafe { Out::new(running) }.ok();
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        let visit = r#fn.ok_or(tw_status::TW_ERR_INVALID)?;
        let export = runtime.export(CTask::user_data, |timer, user_data| {
            let info = info(timer, user_data);
            // SAFETY: `visit` is the caller's non-NULL function, which may be called with
            // `ctx` (tw_export's contract); `info` lives until it returns.
            unsafe { visit(ctx, ptr::from_ref(&info)) }
        })?;
        if let Some(running) = running {
            running.put(export.running);
        }
        Ok(())
    })
}

/// What tw_export says of one timer.
fn info(timer: &ExportedTimer, user_data: *mut c_void) -> tw_timer_info {
    let (kind, mode, period_ns, at_unix_ms) = match timer.kind {
        TimerKind::OneShot => (tw_timer_kind::TW_TIMER_ONE_SHOT, 0, 0, 0),
        TimerKind::Periodic { period, mode } => {
            let mode = match mode {
                PeriodMode::FixedRate => tw_period_mode::TW_FIXED_RATE,
                PeriodMode::FixedDelay => tw_period_mode::TW_FIXED_DELAY,
            };
            let period_ns = u64::try_from(period.as_nanos()).unwrap_or(u64::MAX);
            (tw_timer_kind::TW_TIMER_PERIODIC, mode as u32, period_ns, 0)
        }
        TimerKind::WallClock { when } => (tw_timer_kind::TW_TIMER_WALL_CLOCK, 0, 0, unix_ms(when)),
    };
    tw_timer_info {
        size: size_of::<tw_timer_info>(),
        id: timer.id.as_u64(),
        kind: kind as u32,
        mode,
        period_ns,
        due_ns: u64::try_from(timer.due_monotonic.as_nanos()).unwrap_or(u64::MAX),
        due_unix_ms: unix_ms(timer.due),
        at_unix_ms,
        user_data,
    }
}

#[cfg(all(test, target_pointer_width = "64"))]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// The layout of 0.2.0, without padding: fields are only ever added after it.
    #[test]
    fn tw_timer_info_keeps_its_layout() {
        assert_eq!(offset_of!(tw_timer_info, kind), 16);
        assert_eq!(offset_of!(tw_timer_info, period_ns), 24);
        assert_eq!(offset_of!(tw_timer_info, user_data), 56);
        assert_eq!(size_of::<tw_timer_info>(), 64);
    }
}
