//! The wheel driven by an arbitrary byte stream of insert / remove / reset / expire /
//! advance operations, checked against the reference model after every one.
#![no_main]

#[path = "../../timerwheel-core/tests/support/wheel_bytes.rs"]
mod wheel_bytes;
#[path = "../../timerwheel-core/tests/support/wheel_harness.rs"]
mod wheel_harness;

libfuzzer_sys::fuzz_target!(|data: &[u8]| wheel_bytes::run(data));
