//! The tick thread: it sleeps until the wheel's next expiry (not every tick), moves what is
//! due into the run queue, and watches the queue for the executor's monitor.
//!
//! Wake-ups: `wake_at` holds the tick the thread sleeps until. An add or reset earlier than
//! that unparks it. While it scans the shards `wake_at` is `u64::MAX`, so an add racing
//! with the scan unparks it too; an unpark before `park` makes `park` return at once, so no
//! wake-up is lost.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::inner::Inner;
use super::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use super::sync::thread::{self, Thread};
use super::Task;

/// How often the thread looks at the clocks while wall-clock timers are pending, to catch
/// a step of the system clock.
pub(crate) const WALL_CHECK: Duration = Duration::from_secs(1);

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

    /// Sleeps until `tick` (`None`: until woken), at most `limit`.
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

/// The tick thread: a round of [`Inner::tick`], then sleep until the next tick with work
/// (or until woken, or the longest sleep the round allows).
pub(crate) fn ticker_main<T: Task>(inner: Arc<Inner<T>>) {
    tighten_timer_slack();
    while !inner.ticker.stopped() {
        inner.ticker.begin_scan();
        let (next, longest) = inner.tick();
        let timeout = match next {
            Some(tick) => Some(inner.clock.until(tick).min(longest)),
            None => (longest != Duration::MAX).then_some(longest),
        };
        inner.ticker.sleep(next, timeout);
    }
    inner.executor.ticker_exited();
}

/// Asks the kernel to wake this thread within about a microsecond of its deadline instead
/// of the default 50 us timer slack: the tick thread's wake-up is every timer's lateness.
#[cfg(target_os = "linux")]
fn tighten_timer_slack() {
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
fn tighten_timer_slack() {}
