//! An arbitrary sequence of C ABI calls on a manual-mode wheel (bad ids, NULL pointers,
//! huge delays, period 0, callbacks calling back in), checking statuses and that every
//! accepted timer is dropped exactly once by `tw_destroy`.
#![no_main]

#[path = "../../timerwheel-ffi/tests/support/c_abi_ops.rs"]
mod c_abi_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| c_abi_ops::run(data));
