/*
 * Instructions per call through the C ABI against timeout.c, counted by callgrind: one
 * process per implementation (`instructions tw` or `instructions timeout`), run under
 * `valgrind --tool=callgrind` by bench/instructions.py, which reads the three dumps this
 * program asks for and prints the figures. The workload: 100,000 one-shots due in
 * [1 s, 1 h), each reset to a later deadline, then deleted in a shuffled order (the same
 * generator and delays as bench.c's W1). The counters are zeroed before the adds and dumped
 * after each phase ("add", "reset", "delete"); callgrind counts every thread of the process,
 * so work a call leaves to the tick thread counts in its phase: a phase ends only when the
 * wheel reports no pending timer (delete) or after a last statistics read (add, reset).
 * Without callgrind (run alone) the program does the same work and reports nothing.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "timerwheel.h"
#include "xorshift.h"
#ifdef TW_BENCH_TIMEOUT_C
#include "timeout.h"
#endif

enum { N_TIMERS = 100000, LATER_MS = 60000 };

static void *xcalloc(size_t n, size_t size) {
    void *p = calloc(n, size);
    if (p == NULL) {
        fprintf(stderr, "instructions: out of memory\n");
        exit(1);
    }
    return p;
}

/* The inputs, made before the counters start. */
static uint64_t delays[N_TIMERS];
static size_t order[N_TIMERS];

static void make_inputs(void) {
    for (size_t i = 0; i < N_TIMERS; i++) delays[i] = 1000 + next_random() % (3600 * 1000 - 1000);
    for (size_t i = 0; i < N_TIMERS; i++) order[i] = i;
    for (size_t i = N_TIMERS - 1; i > 0; i--) {
        size_t j = next_random() % (i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void fail(const char *what) {
    fprintf(stderr, "instructions: %s failed\n", what);
    exit(1);
}

/* ---- timerwheel through the C ABI ---------------------------------------------------- */

static void noop_cb(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
}

static uint64_t pending(tw_wheel *w) {
    tw_stats stats;
    memset(&stats, 0, sizeof stats);
    if (tw_get_stats(w, &stats) != TW_OK) fail("tw_get_stats");
    return stats.pending;
}

/* Waits (at most 30 s) until the wheel holds no pending timer: what a delete left to the
 * tick thread is then done, and counted in the delete phase. */
static void wait_until_empty(tw_wheel *w) {
    for (int i = 0; i < 30000 && pending(w) != 0; i++) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    if (pending(w) != 0) fail("emptying the wheel");
}

/* Under valgrind a call takes a hundred times longer: the earliest timers may come due
 * before their reset or delete, which then finds nothing. Counted and reported, not fatal. */
static size_t gone;

static void expect_ok_or_fired(tw_status status, const char *what) {
    if (status == TW_ERR_NOT_FOUND)
        gone++;
    else if (status != TW_OK)
        fail(what);
}

static void run_timerwheel(void) {
    tw_wheel *w = NULL;
    if (tw_create(NULL, &w) != TW_OK) fail("tw_create");
    tw_timer_id *ids = xcalloc(N_TIMERS, sizeof *ids);
    CALLGRIND_ZERO_STATS;
    for (size_t i = 0; i < N_TIMERS; i++)
        if (tw_add(w, delays[i], noop_cb, NULL, NULL, &ids[i]) != TW_OK) fail("tw_add");
    (void)pending(w);
    CALLGRIND_DUMP_STATS_AT("add");
    for (size_t i = 0; i < N_TIMERS; i++)
        expect_ok_or_fired(tw_reset(w, ids[i], delays[i] + LATER_MS), "tw_reset");
    (void)pending(w);
    CALLGRIND_DUMP_STATS_AT("reset");
    for (size_t i = 0; i < N_TIMERS; i++)
        expect_ok_or_fired(tw_delete(w, ids[order[i]]), "tw_delete");
    wait_until_empty(w);
    CALLGRIND_DUMP_STATS_AT("delete");
    tw_destroy(w);
    free(ids);
    if (gone > 0) fprintf(stderr, "instructions: %zu resets or deletes found a timer fired\n", gone);
}

/* ---- timeout.c: the caller passes the time, no thread -------------------------------- */

#ifdef TW_BENCH_TIMEOUT_C
static void run_timeout_c(void) {
    int err = 0;
    struct timeouts *t = timeouts_open(TIMEOUT_mHZ, &err);
    if (t == NULL) fail("timeouts_open");
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    timeouts_update(t, (timeout_t)now.tv_sec * 1000 + (timeout_t)now.tv_nsec / 1000000);
    struct timeout *to = xcalloc(N_TIMERS, sizeof *to);
    CALLGRIND_ZERO_STATS;
    for (size_t i = 0; i < N_TIMERS; i++) {
        timeout_init(&to[i], 0);
        timeouts_add(t, &to[i], delays[i]);
    }
    CALLGRIND_DUMP_STATS_AT("add");
    for (size_t i = 0; i < N_TIMERS; i++) timeouts_add(t, &to[i], delays[i] + LATER_MS);
    CALLGRIND_DUMP_STATS_AT("reset");
    for (size_t i = 0; i < N_TIMERS; i++) timeouts_del(t, &to[order[i]]);
    CALLGRIND_DUMP_STATS_AT("delete");
    timeouts_close(t);
    free(to);
}
#endif

int main(int argc, char **argv) {
    make_inputs();
    if (argc == 2 && strcmp(argv[1], "tw") == 0) {
        run_timerwheel();
        return 0;
    }
#ifdef TW_BENCH_TIMEOUT_C
    if (argc == 2 && strcmp(argv[1], "timeout") == 0) {
        run_timeout_c();
        return 0;
    }
#endif
    fprintf(stderr, "usage: instructions tw|timeout\n");
    return 2;
}
