//! `record_callback_failure`: a callback that reports a failure instead of panicking (a C++
//! exception caught by its wrapper) is counted in `callback_panics`, once, for the runtime
//! whose callback it is.

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
