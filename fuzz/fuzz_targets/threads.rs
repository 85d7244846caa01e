//! The randomized C contract test (`tests/c/test_random_contract.c`) driven by the input:
//! three wheels (two with worker threads, a manual one polled by a thread), four test
//! threads adding, resetting and deleting, callbacks and drops calling back in and
//! destroying scratch wheels, each test thread's choices taken from its share of the input.
//! Every timer's user data is freed when the library is done with it, so AddressSanitizer
//! turns a late callback or drop into a use-after-free; the test's state machine checks the
//! rest (never early, runs never overlap, one drop after the last run, counters add up).
#![no_main]

// The C test calls the library through its C ABI: linked for those symbols.
extern crate timerwheel as _;

extern "C" {
    /// fuzz/threads/contract.c: runs the test on the input, returns its violations.
    fn tw_fuzz_threads(data: *const u8, len: usize) -> i32;
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    // SAFETY: the test reads `len` bytes of `data` and keeps no pointer to them after it
    // returns.
    let violations = unsafe { tw_fuzz_threads(data.as_ptr(), data.len()) };
    assert_eq!(violations, 0, "contract violations (stderr names them)");
});
