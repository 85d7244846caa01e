//! The sized structs of the C ABI (`tw_config`, `tw_stats`, `tw_timer_info`) with
//! arbitrary sizes and bytes: a clear status, no read or write past a size, a refused
//! config changing nothing.
#![no_main]

#[path = "../../timerwheel-ffi/tests/support/sized_structs_ops.rs"]
mod sized_structs_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| sized_structs_ops::run(data));
