//! fork(): a child gets a default runtime of its own, and a runtime started before the fork
//! refuses there with `Forked`; its shutdown drops the pending timers without waiting for
//! threads the child does not have. Each check runs in a fork() child and reports through
//! its exit status; a child that hangs is killed and fails the test.
#![cfg(unix)]

use std::ffi::c_int;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use timerwheel_core::{default_runtime, Error, Runtime};

extern "C" {
    fn fork() -> c_int;
    fn waitpid(pid: c_int, status: *mut c_int, options: c_int) -> c_int;
    fn kill(pid: c_int, signal: c_int) -> c_int;
    fn _exit(status: c_int) -> !;
}

const WNOHANG: c_int = 1;
const SIGKILL: c_int = 9;
/// The longest a child may take; a hung one takes forever.
const CHILD_WAIT: Duration = Duration::from_secs(20);

/// Runs `check` in a fork() child; whether it returned true there within [`CHILD_WAIT`].
/// The child prints nothing and does not unwind: another thread of the test harness may
/// have held the output's lock at the fork.
fn in_child(check: impl FnOnce() -> bool) -> bool {
    // SAFETY: the child runs `check`, which only uses the runtime (whose locks the fork
    // handlers keep consistent) and the allocator (which the C library keeps consistent),
    // then leaves with _exit.
    let pid = unsafe { fork() };
    if pid == 0 {
        let passed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check));
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { _exit(c_int::from(!passed.unwrap_or(false))) }
    }
    assert!(pid > 0, "fork failed");
    let deadline = Instant::now() + CHILD_WAIT;
    let mut status = 0;
    // SAFETY: waits for our own child; `status` is a valid out pointer.
    while unsafe { waitpid(pid, &mut status, WNOHANG) } == 0 {
        if Instant::now() > deadline {
            // SAFETY: kills and reaps our own child, which hung.
            unsafe {
                kill(pid, SIGKILL);
                waitpid(pid, &mut status, 0);
            }
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    status == 0
}

/// Whether a `delay` one-shot added to `rt` fires within 5 s.
fn fires(rt: &Runtime, delay: Duration) -> bool {
    let (tx, rx) = mpsc::channel();
    let added = rt.after(delay, move |_| {
        let _ = tx.send(());
    });
    added.is_ok() && rx.recv_timeout(Duration::from_secs(5)).is_ok()
}

#[test]
fn the_default_runtime_starts_afresh_in_a_child() {
    let parent = default_runtime();
    assert!(fires(parent, Duration::from_millis(1)));
    assert!(in_child(|| {
        let child = default_runtime();
        !std::ptr::eq(child, parent)
            && parent.after(Duration::ZERO, |_| {}).err() == Some(Error::Forked)
            && fires(child, Duration::from_millis(10))
            && std::ptr::eq(default_runtime(), child)
    }));
    assert!(std::ptr::eq(default_runtime(), parent));
    assert!(fires(parent, Duration::from_millis(1)));
}

/// Counts its drops.
struct Dropped(Arc<AtomicUsize>);

impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn a_runtime_from_before_the_fork_refuses_and_frees_in_the_child() {
    let rt = Runtime::builder().max_workers(1).build().unwrap();
    let manual: Runtime = Runtime::builder().manual(true).build().unwrap();
    let dropped = Arc::new(AtomicUsize::new(0));
    let guard = Dropped(Arc::clone(&dropped));
    let timer = rt
        .after(Duration::from_secs(3600), move |_| {
            let _keep = &guard;
        })
        .unwrap();
    assert!(in_child(|| {
        rt.after(Duration::ZERO, |_| {}).err() == Some(Error::Forked)
            && rt.reset(timer.id(), Duration::ZERO) == Err(Error::Forked)
            && rt.cancel(timer.id()) == Err(Error::Forked)
            && timer.cancel_sync() == Err(Error::Forked)
            && manual.poll() == Err(Error::Forked)
            && rt.stats().pending == 1
            && dropped.load(SeqCst) == 0
            && rt.shutdown() == Ok(1)
            && dropped.load(SeqCst) == 1
    }));
    assert_eq!(
        dropped.load(SeqCst),
        0,
        "the parent's timer is the parent's"
    );
    assert!(timer.cancel());
    assert_eq!(dropped.load(SeqCst), 1);
}

#[test]
fn every_call_of_a_durable_store_opened_before_the_fork_is_forked_in_the_child() {
    use timerwheel_core::durable::{Ack, Durable, DurableError, MemorySink};
    let rt: Arc<Runtime> = Arc::new(Runtime::builder().build().unwrap());
    let store = Durable::builder()
        .handler("charge", |_| Ack::Now)
        .open(Arc::clone(&rt), MemorySink::default())
        .unwrap();
    let forked = |result: Result<(), DurableError>| {
        matches!(result, Err(DurableError::Runtime(Error::Forked)))
    };
    assert!(in_child(|| {
        // Its counters are read under locks the parent's threads may have held.
        forked(store.stats().map(drop))
            && forked(store.flush().map(drop))
            && forked(store.delete(1, "charge"))
            && forked(store.ack(&[]).map(drop))
    }));
    assert_eq!(store.stats().unwrap().timers, 0);
}
