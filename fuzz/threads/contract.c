/*
 * The fuzz target `threads`: tests/c/test_random_contract.c (three wheels, four test
 * threads, callbacks and drops calling back in, a state machine per timer) run once per
 * input, its test threads taking their choices from their quarter of the input. Compiled
 * into the target by fuzz/build.rs, with AddressSanitizer when the target has it.
 */
#define main random_contract_main
#include "../../tests/c/test_random_contract.c"
#undef main

/* The test's globals as they are when the process starts (the test runs once per
 * process otherwise). */
static void forget_the_last_run(void) {
    memset(wheels, 0, sizeof wheels);
    memset(slots, 0, sizeof slots);
    scratch_list = NULL;
    quiescing = ops_inflight = stop_polling = finished = poll_seq = 0;
    live_records = live_main = live_periodic = live_scratch = 0;
    accepted_total = dropped_total = reports = rng_streams = 0;
    n_runs = n_deleted = n_synced = n_synced_inside = n_reset = n_callback_calls = 0;
    n_drop_calls = n_destroyed_inside = n_killed_in_cb = n_killed_in_drop = n_full = 0;
    check_failures_now = 0;
    phase = "start";
}

/* FNV-1a: the seed of the test's streams, so that an input repeats its choices. */
static uint64_t seed_of(const unsigned char *data, size_t len) {
    uint64_t hash = 1469598103934665603ULL;
    for (size_t i = 0; i < len; i++) hash = (hash ^ data[i]) * 1099511628211ULL;
    return hash | 1;
}

/* Runs the test on `data`; returns the number of contract violations. */
int tw_fuzz_threads(const unsigned char *data, size_t len) {
    forget_the_last_run();
    choices = data;
    choices_len = len;
    /* About two choices an operation: each thread's share lasts its operations. */
    run_with_seed(seed_of(data, len), (long)(len / THREADS / 2) + 1);
    choices = NULL;
    choices_len = 0;
    return __atomic_load_n(&check_failures_now, __ATOMIC_SEQ_CST);
}
