//! How the tick thread is woken, and how precisely threads wake.
//!
//! Wake-ups: `wake_at` holds the first tick whose timers the thread will expire in time at
//! its next wake-up: the tick after the one its wake-up time lies in, or the wheel's next
//! expiry itself when it sleeps until the start of the tick before (see `ticker::wake_tick`). An
//! add or reset due earlier than that unparks it. While it scans the shards `wake_at` is
//! `u64::MAX`, so an add racing with the scan unparks it too; an unpark before `park`
//! makes `park` return at once, so no wake-up is lost.

use std::sync::OnceLock;
use std::time::Duration;

use super::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use super::sync::thread::{self, Thread};

/// The tick thread's wake-up (see the module doc) and its stop flag.
#[derive(Default)]
pub(crate) struct Ticker {
    wake_at: AtomicU64,
    thread: OnceLock<Thread>,
    stop: AtomicBool,
}

impl Ticker {
    pub(crate) fn set_thread(&self, thread: Thread) {
        let _ = self.thread.set(thread);
    }

    /// Called after an add or reset due at `deadline`: wakes the thread if it would sleep
    /// past it.
    #[inline]
    pub(crate) fn notify_if_earlier(&self, deadline: u64) {
        if deadline < self.wake_at.load(SeqCst) {
            self.unpark();
        }
    }

    fn unpark(&self) {
        if let Some(thread) = self.thread.get() {
            thread.unpark();
        }
    }

    /// The thread starts a scan: every add from now on wakes it.
    pub(crate) fn begin_scan(&self) {
        self.wake_at.store(u64::MAX, SeqCst);
    }

    /// Sleeps until woken for a timer of a tick before `tick` (`None`: any), at most
    /// `timeout` (`None`: until woken).
    pub(crate) fn sleep(&self, tick: Option<u64>, timeout: Option<Duration>) {
        self.wake_at.store(tick.unwrap_or(u64::MAX - 1), SeqCst);
        match timeout {
            Some(timeout) if timeout.is_zero() => {}
            Some(timeout) => thread::park_timeout(timeout),
            None => thread::park(),
        }
    }

    pub(crate) fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.unpark();
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(SeqCst)
    }
}

/// Asks the kernel to wake this thread within about a microsecond of its deadline instead
/// of the default 50 us timer slack: the tick thread's wake-up, and a worker's, is part of
/// every timer's lateness.
#[cfg(target_os = "linux")]
pub(crate) fn tighten_timer_slack() {
    const PR_SET_TIMERSLACK: std::ffi::c_int = 29;
    extern "C" {
        fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
    }
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long by value and touches no memory of
    // ours; it affects only the calling thread.
    unsafe {
        prctl(PR_SET_TIMERSLACK, 1000 as std::ffi::c_ulong);
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn tighten_timer_slack() {}
