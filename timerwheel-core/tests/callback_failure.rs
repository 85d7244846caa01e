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
