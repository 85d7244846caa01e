//! The exported functions that create, inspect, drive and destroy a wheel.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::ptr;

use timerwheel_core::{Config, Runtime};

use crate::boundary::{guard, guard_or};
use crate::drop_fn;
use crate::handle::{default_handle, default_runtime, tw_wheel};
use crate::ptr::{config, runtime, Out};
use crate::time::ceil_ms;
use crate::types::{tw_config, tw_stats, tw_status};

/// Fills `*cfg` with the defaults: tick_us 1000, min_workers 1, max_workers = number of
/// CPUs, worker_keepalive_ms 1000, max_timers 0 (unlimited), manual 0, clock
/// TW_CLOCK_MONOTONIC, virtual_start_unix_ms 0; and size = sizeof(tw_config).
///
/// Bad input: `cfg` NULL does nothing.
///
/// # Safety
/// `cfg` is NULL or valid for writing a `tw_config` of this version.
#[no_mangle]
pub unsafe extern "C" fn tw_config_init(cfg: *mut tw_config) {
    guard_or((), || {
        // SAFETY: the caller passes NULL or a writable tw_config.
        if let Ok(out) = unsafe { Out::new(cfg) } {
            out.put(tw_config::from(&Config::default()));
        }
    })
}

/// Whether tw_create accepts `*cfg`: NULL when it does (for `cfg` NULL too), otherwise a
/// message that names the field out of range, its value and its range, e.g. "tick 50µs is
/// out of range: 100µs..=1s". The message is valid until the next call of tw_config_check
/// on the same thread. (tw_create also fails when its tick thread cannot start: no check
/// foresees that.)
///
/// # Safety
/// As for tw_create's `cfg`.
#[no_mangle]
pub unsafe extern "C" fn tw_config_check(cfg: *const tw_config) -> *const c_char {
    guard_or(c"internal error".as_ptr(), || {
        // SAFETY: the caller passes NULL or a readable tw_config.
        match unsafe { config(cfg) } {
            Ok(_) => ptr::null(),
            Err(fault) => keep_message(fault.0),
        }
    })
}

thread_local! {
    /// The last message tw_config_check gave on this thread.
    static CHECK_MESSAGE: RefCell<CString> = RefCell::default();
}

/// `message` as a C string that lives until the next call on this thread.
fn keep_message(message: String) -> *const c_char {
    let message = CString::new(message).expect("the messages hold no NUL");
    CHECK_MESSAGE.with(|kept| {
        let mut kept = kept.borrow_mut();
        *kept = message;
        kept.as_ptr()
    })
}

/// Creates a wheel and starts its threads (none when `cfg->manual` or on a virtual clock);
/// `*out` receives it.
/// `cfg` NULL means every default. Free the wheel with tw_destroy.
///
/// Reads the first `cfg->size` bytes of `*cfg` (0: the layout of 0.2.0); fields past them
/// take their defaults.
///
/// Returns TW_OK, or (and `*out` is left untouched):
/// - TW_ERR_INVALID: `out` NULL; a config that tw_config_check refuses (a field out of
///   its range, given at each field of tw_config; `size` from 1 to sizeof(size_t) - 1;
///   `clock` not a tw_clock, or bytes past this version's struct not 0); or the tick thread could not be
///   started.
///
/// # Safety
/// `cfg` is NULL or points to a `tw_config` readable for `cfg->size` bytes; `out` is NULL or
/// valid for writing a pointer.
#[no_mangle]
pub unsafe extern "C" fn tw_create(cfg: *const tw_config, out: *mut *mut tw_wheel) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable pointer.
        let out = unsafe { Out::new(out) }?;
        // SAFETY: the caller passes NULL or a readable tw_config.
        let (config, settings) = unsafe { config(cfg) }?;
        let wheel = tw_wheel::new(Runtime::new(config)?, settings);
        out.put(Box::into_raw(Box::new(wheel)));
        Ok(())
    })
}

/// The process-wide shared wheel (default config), created on the first call; every caller
/// gets the same one. It lives as long as the process: tw_destroy on it returns TW_ERR_BUSY.
///
/// After fork(), the pointer stays the same and names the child's own shared wheel, started
/// on its first use in the child (the parent's timers are not in it).
///
/// Returns NULL only if the wheel could not be started (no thread could be created); then
/// every later call in this process returns NULL too.
#[no_mangle]
pub extern "C" fn tw_default() -> *mut tw_wheel {
    guard_or(ptr::null_mut(), || match default_runtime() {
        Some(_) => default_handle(),
        None => ptr::null_mut(),
    })
}

/// Stops the wheel: stops the tick thread, waits for running callbacks, drops every
/// pending timer (its drop function is called, its callback is not) and frees the wheel,
/// all before it returns. `w` is invalid afterwards.
///
/// In a fork() child, for a wheel created before the fork: frees it without waiting for
/// the parent's threads, which the child does not have. The drop function of each timer
/// pending in it runs in the child (it frees the child's copy of the user data); a timer
/// whose callback was running at the fork is not dropped in the child.
///
/// Returns TW_OK, or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_BUSY: called from inside one of this wheel's callbacks or drop functions, at
///   any depth (also from a callback of a manual wheel polled inside one): it would wait
///   for itself (use tw_destroy_nowait there); or `w` is tw_default().
/// - TW_ERR_SHUTDOWN: `w` is being destroyed already, wherever this is called from (before
///   TW_ERR_BUSY): by another thread at the same time (that call frees it), by the
///   tw_destroy whose discards run the calling drop function, or by a tw_destroy_nowait
///   (from the calling callback or drop function too).
///
/// # Safety
/// `w` is NULL or a wheel from tw_create / tw_default that is not yet destroyed. Not to be
/// called while another thread may still use `w` (other than a callback of `w` itself);
/// for a manual wheel, not while another thread is inside tw_poll.
#[no_mangle]
pub unsafe extern "C" fn tw_destroy(w: *mut tw_wheel) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        unsafe { runtime(w) }?.shutdown()?;
        // SAFETY: only the one call whose shutdown succeeded gets here, and that is never
        // for the shared wheel (its runtime refuses shutdown), so `w` came from
        // Box::into_raw in tw_create and is freed exactly once.
        drop(unsafe { Box::from_raw(w) });
        Ok(())
    })
}

/// Stops the wheel without waiting for callbacks still running, the caller's own
/// included: the way to destroy a wheel from inside one of its own callbacks or drop
/// functions (where tw_destroy returns TW_ERR_BUSY), for example when a callback releases
/// the last reference to the object that owns the wheel. Safe from any other thread too.
///
/// When it returns, no further run begins and every pending timer's drop function has run.
/// A run a worker had already begun may still be entering its callback, on its thread, a
/// moment after this returns, or be inside it; that timer's drop runs when the callback
/// returns. So free what callbacks use in their drop functions, not after this call
/// (after tw_destroy, which waits, nothing runs any more). The wheel's own
/// threads may still use `w` until their callbacks return, and so may the drop function
/// that called this until it returns, whatever thread runs it (every call then returns
/// TW_ERR_SHUTDOWN); it is freed when the last of them has returned. For every other
/// thread `w` is invalid at once, as after tw_destroy.
///
/// Returns TW_OK, or (and nothing changes):
/// - TW_ERR_INVALID: `w` NULL.
/// - TW_ERR_BUSY: `w` is tw_default().
/// - TW_ERR_SHUTDOWN: `w` is being destroyed already.
///
/// # Safety
/// As for tw_destroy, except that it may be called from inside `w`'s callbacks and drop
/// functions.
#[no_mangle]
pub unsafe extern "C" fn tw_destroy_nowait(w: *mut tw_wheel) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        // Called from a drop function, the wheel stays until it returned (`drop_fn.rs`).
        let hold = runtime.hold();
        drop_fn::after_drops(move || drop(hold));
        let handle = OwnedWheel(w);
        runtime.shutdown_nowait_then(move || handle.free())?;
        Ok(())
    })
}

/// A wheel handle freed once the last of the wheel's threads let go of it.
struct OwnedWheel(*mut tw_wheel);

// SAFETY: the handle is freed exactly once, by whichever thread runs the runtime's
// release hook; no other thread uses the pointer through this value.
unsafe impl Send for OwnedWheel {}

impl OwnedWheel {
    fn free(self) {
        // SAFETY: the one call whose shutdown succeeded owns `w` (never the shared wheel,
        // whose runtime refuses shutdown), which came from Box::into_raw in tw_create; the
        // runtime runs this hook once, after its threads, and the drop function that
        // destroyed it, stopped using `w`.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

/// Copies the wheel's counters into `*out`, no more than `out->size` bytes (0: the layout
/// of 0.2.0), and stores in `out->size` how many bytes it wrote. Set the size first:
/// `tw_stats s = {.size = sizeof s};`. At any quiet moment
/// added = fired_one_shot + cancelled + pending + discarded.
///
/// Returns TW_OK, or TW_ERR_INVALID when `w` or `out` is NULL or `out->size` is from 1 to
/// sizeof(size_t) - 1. Works during shutdown too.
///
/// # Safety
/// `w` is NULL or a live wheel; `out` is NULL or points to a `tw_stats` whose size field is
/// readable and which is writable for as many bytes as it says.
#[no_mangle]
pub unsafe extern "C" fn tw_get_stats(w: *const tw_wheel, out: *mut tw_stats) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable tw_stats.
        let out = unsafe { Out::new(out) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        out.put_sized(runtime.stats().into())
    })
}

/// For a manual wheel: milliseconds until tw_poll has work, rounded up (0 when a timer is
/// due), or -1 when no timer is pending: the timeout to give poll()/epoll_wait() before
/// calling tw_poll. It may come before the next deadline when the wheel must move far
/// timers closer; tw_poll then runs nothing and the next value is later. On a wheel with
/// threads the value is the same, for information only. On a virtual clock it is virtual
/// time: tw_advance by it reaches that work, also a timer held at the end of the clock's
/// range (a deadline past 2^64 ns from the wheel's creation); -1 when only periodic timers
/// whose next point lies past that range are pending.
///
/// Bad input: `w` NULL returns -1. During tw_destroy: the value until the pending timers
/// are discarded, then -1.
///
/// # Safety
/// `w` is NULL or a live wheel.
#[no_mangle]
pub unsafe extern "C" fn tw_next_timeout_ms(w: *mut tw_wheel) -> i64 {
    guard_or(-1, || {
        // SAFETY: the caller passes NULL or a live wheel.
        match unsafe { runtime(w) } {
            Ok(runtime) => runtime.next_timeout().map_or(-1, ceil_ms),
            Err(_) => -1,
        }
    })
}

/// For a manual wheel: runs every callback that is due, on the calling thread, and stores
/// how many ran in `*ran`. On a virtual clock (with `manual` or not) it is tw_advance(w, 0,
/// ran): what is due at the clock's reading runs, the clock stays, and it returns what
/// tw_advance returns (TW_ERR_BUSY from the wheel's callbacks and drops, TW_ERR_SHUTDOWN there
/// once the wheel is being destroyed).
///
/// Returns TW_OK, or (and nothing runs):
/// - TW_ERR_INVALID: `w` or `ran` NULL, or the wheel has threads (also during destroy).
/// - TW_ERR_SHUTDOWN: a manual wheel is being destroyed.
/// - TW_ERR_FORKED: in a fork() child, `w` was created before the fork.
///
/// # Safety
/// `w` is NULL or a live wheel; `ran` is NULL or valid for writing a `size_t`.
#[no_mangle]
pub unsafe extern "C" fn tw_poll(w: *mut tw_wheel, ran: *mut usize) -> tw_status {
    guard(|| {
        // SAFETY: the caller passes NULL or a writable size_t.
        let ran = unsafe { Out::new(ran) }?;
        // SAFETY: the caller passes NULL or a live wheel.
        let runtime = unsafe { runtime(w) }?;
        ran.put(runtime.poll()?);
        Ok(())
    })
}
