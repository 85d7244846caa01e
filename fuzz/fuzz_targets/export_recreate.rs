//! Export and re-creation: the timers a virtual-clock wheel exports, re-created on a fresh
//! wheel at the same instant, run at the same points as the originals.
#![no_main]

#[path = "../../timerwheel-ffi/tests/support/export_recreate_ops.rs"]
mod export_recreate_ops;

libfuzzer_sys::fuzz_target!(|data: &[u8]| export_recreate_ops::run(data));
