//! A wheel on a virtual clock through the C ABI: a structured scenario of adds, periodic
//! and anchored periodic timers, resets, deletes and advances with extreme values, checked
//! against a model of exact due points.
#![no_main]

#[path = "../../timerwheel-ffi/tests/support/virtual_clock_ops.rs"]
mod virtual_clock_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| virtual_clock_ops::run(data));
