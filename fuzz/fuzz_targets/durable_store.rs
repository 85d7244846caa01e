//! The SQLite store of durable timers: batches of changes committed (some twice, some
//! replayed), the store reopened between them, then its file damaged and opened again;
//! checked against the snapshot model.
#![no_main]

#[path = "../../timerwheel-ffi/tests/support/durable_store_ops.rs"]
mod durable_store_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| durable_store_ops::run(data));
