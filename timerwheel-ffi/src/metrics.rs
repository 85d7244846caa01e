//! The exported functions for an operator: the recent views of the counters and the
//! Prometheus text exposition, both written by the runtime (timerwheel-core's metrics.rs).

use std::ffi::c_char;
use std::ptr;
use std::time::Duration;

use timerwheel_core::{MAX_WINDOW, MIN_WINDOW};

use crate::boundary::guard;
use crate::handle::tw_wheel;
use crate::ptr::{runtime, Out};
use crate::types::{tw_stats, tw_status};

/// Copies into `*out` the counters of the last `window_ms` milliseconds (1000 to 60000),
/// as tw_get_stats does those since creation (same size rules): the events counted
/// (added, fired, fired_one_shot, cancelled, discarded, workers_spawned, workers_retired,
/// callback_panics, slow_callbacks) and the lateness (late_p50_us, late_p99_us,
/// late_max_us) of the callbacks started since the newest earlier call of this function
/// on the wheel at least `window_ms` ago, give or take half a second (since creation when
/// the wheel is younger); `span_ms` says how long that is. pending, workers, workers_peak
/// and queue_depth are as now. The view is kept by these calls alone (two readings a
/// second at most, nothing on the timers' path): called every second, a window of 1000
/// spans a second and one of 60000 a minute.
///
/// Returns TW_OK, or TW_ERR_INVALID (and `*out` is left untouched) when `w` or `out` is
/// NULL, `window_ms` is out of its range, or `out->size` is from 1 to sizeof(size_t) - 1.
/// Works during shutdown too.
///
/// # Safety
/// As for tw_get_stats.
#[no_mangle]
pub unsafe extern "C" fn tw_get_stats_recent(
    w: *const tw_wheel,
    window_ms: u64,
    out: *mut tw_stats,
) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable tw_stats.
        let out = unsafe { Out::new(out) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        let window = Duration::from_millis(window_ms);
        if !(MIN_WINDOW..=MAX_WINDOW).contains(&window) {
            return Err(tw_status::TW_ERR_INVALID);
        }
        out.put_sized(runtime.stats_recent(window).into())
    })
}

/// Writes the wheel's metrics in Prometheus's text format (content type
/// `text/plain; version=0.0.4; charset=utf-8`), NUL-terminated, into `buf`, and stores in
/// `*needed` (when not NULL) how many bytes that takes with the NUL. The metrics are
/// named `timerwheel_*`: counters end in `_total`, times are in seconds, and the lateness
/// is the histogram `timerwheel_lateness_seconds` with cumulative buckets from 50 us to
/// 10 s (docs/metrics.md lists them all).
///
/// The text changes as the wheel runs: ask for the size with `len` 0 (`buf` may then be
/// NULL), give a buffer with room to spare, and call again on TW_ERR_TOO_SMALL.
///
/// Returns TW_OK, or (and `buf` holds an empty string when `len` > 0):
/// - TW_ERR_TOO_SMALL: the text and its NUL need more than `len` bytes (`*needed`).
/// - TW_ERR_INVALID: `w` NULL, or `buf` NULL with `len` > 0.
///
/// Works during shutdown too.
///
/// # Safety
/// `w` is NULL or a live wheel; `buf` is NULL or valid for writing `len` bytes; `needed` is
/// NULL or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn tw_metrics_text(
    w: *const tw_wheel,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> tw_status {
    guard(|| {
        if buf.is_null() && len > 0 {
            return Err(tw_status::TW_ERR_INVALID);
        }
        // SAFETY: the caller passes NULL or a live wheel.
        let text = unsafe { runtime(w) }?.prometheus_text();
        // SAFETY: this function's contract on `buf`, `len` and `needed`.
        unsafe { write_text(&text, buf, len, needed) }
    })
}

/// Writes `text` and a NUL into `buf` (`len` bytes) and its size into `*needed` (unless
/// NULL): `TW_ERR_TOO_SMALL` (and an empty string when `len` > 0) when it does not fit,
/// `TW_ERR_INVALID` for `buf` NULL with `len` > 0.
///
/// # Safety
/// `buf` is NULL or valid for writing `len` bytes; `needed` is NULL or valid for writing a
/// `size_t`.
pub unsafe fn write_text(
    text: &str,
    buf: *mut c_char,
    len: usize,
    needed: *mut usize,
) -> Result<(), tw_status> {
    if buf.is_null() && len > 0 {
        return Err(tw_status::TW_ERR_INVALID);
    }
    // SAFETY: the caller passes NULL or a writable size_t; NULL asks for no size.
    let needed = unsafe { Out::new(needed) }.ok();
    let size = text.len() + 1;
    if let Some(needed) = needed {
        needed.put(size);
    }
    if size > len {
        if len > 0 {
            // SAFETY: `buf` is valid for `len` > 0 bytes (this function's contract).
            unsafe { buf.write(0) };
        }
        return Err(tw_status::TW_ERR_TOO_SMALL);
    }
    // SAFETY: `buf` is valid for `len` >= `size` bytes and does not overlap `text`, which
    // the caller holds.
    unsafe {
        ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, text.len());
        buf.add(text.len()).write(0);
    }
    Ok(())
}
