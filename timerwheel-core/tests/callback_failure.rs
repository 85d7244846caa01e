//! `record_callback_failure`: a callback that reports a failure instead of panicking (a C++
//! exception caught by its wrapper) is counted in `callback_panics`, once, for the runtime
//! whose callback it is.

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use timerwheel_core::{record_callback_failure, Error, Runtime};

fn manual() -> Runtime {
    Runtime::builder().manual(true).build().unwrap()
}

/// Polls until `want` callbacks ran (the timers are due at once).
fn poll_until(rt: &Runtime, want: usize) {
    let mut ran = 0;
    for _ in 0..10_000 {
        ran += rt.poll().unwrap();
        if ran >= want {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("{ran} of {want} callbacks ran");
}

#[test]
fn outside_a_callback_it_is_refused_and_nothing_is_counted() {
    let rt = manual();
    assert_eq!(record_callback_failure(), Err(Error::Invalid));
    assert_eq!(rt.stats().callback_panics, 0);
}

#[test]
fn a_failure_counts_once_per_callback_and_the_runtime_goes_on() {
    let rt = manual();
    rt.after(Duration::ZERO, |_| {
        assert_eq!(record_callback_failure(), Ok(()));
        assert_eq!(record_callback_failure(), Ok(()));
    })
    .unwrap();
    rt.after(Duration::ZERO, |_| {}).unwrap();
    poll_until(&rt, 2);
    assert_eq!(rt.stats().callback_panics, 1);
    rt.after(Duration::ZERO, |_| {}).unwrap();
    poll_until(&rt, 1);
    assert_eq!(rt.stats().callback_panics, 1);
}

#[test]
fn a_nested_poll_counts_for_the_innermost_callback() {
    let outer = manual();
    let inner = Arc::new(manual());
    inner
        .after(Duration::ZERO, |_| record_callback_failure().unwrap())
        .unwrap();
    let polled = Arc::clone(&inner);
    outer
        .after(Duration::ZERO, move |_| {
            poll_until(&polled, 1);
            record_callback_failure().unwrap();
        })
        .unwrap();
    outer
        .after(Duration::ZERO, |_| {}) // a callback after a failed one starts clean
        .unwrap();
    poll_until(&outer, 2);
    assert_eq!(outer.stats().callback_panics, 1);
    assert_eq!(inner.stats().callback_panics, 1);
}

#[test]
fn a_failure_is_counted_when_recorded_and_a_panic_after_it_not_again() {
    let rt = Arc::new(manual());
    let seen = Arc::new(AtomicU64::new(u64::MAX));
    let (runtime, counted) = (Arc::downgrade(&rt), Arc::clone(&seen));
    rt.after(Duration::ZERO, move |_| {
        record_callback_failure().unwrap();
        let panics = runtime.upgrade().unwrap().stats().callback_panics;
        counted.store(panics, SeqCst);
        panic!("a panic after the recorded failure");
    })
    .unwrap();
    poll_until(&rt, 1);
    assert_eq!(
        seen.load(SeqCst),
        1,
        "inside the callback, right after recording"
    );
    assert_eq!(
        rt.stats().callback_panics,
        1,
        "one failed callback, counted once"
    );
}

/// A task whose drop records a failure and keeps what it was told.
struct RecordsOnDrop(Arc<std::sync::Mutex<Vec<Result<(), Error>>>>);

impl Drop for RecordsOnDrop {
    fn drop(&mut self) {
        self.0.lock().unwrap().push(record_callback_failure());
    }
}

#[test]
fn a_drop_function_is_not_a_callback_and_records_nothing() {
    let rt = manual();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    // Dropped after its run, inside poll.
    let dropped = RecordsOnDrop(Arc::clone(&seen));
    rt.after(Duration::ZERO, move |_| {
        let _ = &dropped;
    })
    .unwrap();
    // Dropped by a cancel made inside another callback, which itself succeeds.
    let cancelled = RecordsOnDrop(Arc::clone(&seen));
    let victim = rt
        .after(Duration::from_secs(3600), move |_| {
            let _ = &cancelled;
        })
        .unwrap();
    let (weak, inside) = (Arc::new(std::sync::Mutex::new(None)), Arc::clone(&seen));
    let handle = Arc::clone(&weak);
    rt.after(Duration::ZERO, move |_| {
        let timer: Option<timerwheel_core::Timer> = handle.lock().unwrap().take();
        assert!(timer.unwrap().cancel());
        inside.lock().unwrap().push(record_callback_failure());
    })
    .unwrap();
    *weak.lock().unwrap() = Some(victim);
    poll_until(&rt, 2);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [Err(Error::Invalid), Err(Error::Invalid), Ok(())],
        "the drops are refused, the callback's own call is not"
    );
    assert_eq!(
        rt.stats().callback_panics,
        1,
        "the callback's own failure only"
    );
}
