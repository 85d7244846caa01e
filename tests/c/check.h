/*
 * A small test runner for the C tests: CHECK macros, a RUN macro per test, a summary
 * line "name: N passed, M failed" (followed by "failed: test, test, ..." naming the tests
 * that failed, so a log's last lines say which) and an exit status. TW_TEST=part runs only the tests
 * whose name contains "part" (e.g. TW_TEST=delete_sync build/c/test_contract). Helpers for time, sleeping,
 * waiting with a timeout and atomic counters (the callbacks run on other threads).
 */
#ifndef TIMERWHEEL_TEST_CHECK_H
#define TIMERWHEEL_TEST_CHECK_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timerwheel.h"

static int check_failures_now;    /* failures in the running test (any thread) */
static int check_tests_passed;
static int check_tests_failed;
static char check_failed_names[1024]; /* the failed tests, ", " between them */

/* Adds a failed test's name to the summary's list (cut short, with "...", when full). */
static inline void check_note_failed(const char *name) {
    size_t used = strlen(check_failed_names), room = sizeof check_failed_names - used;
    const char *sep = used > 0 ? ", " : "";
    int n = snprintf(check_failed_names + used, room, "%s%s", sep, name);
    if (n < 0 || (size_t)n >= room) strcpy(check_failed_names + sizeof check_failed_names - 4, "...");
}

static inline long atomic_add(long *p, long v) {
    return __atomic_add_fetch(p, v, __ATOMIC_SEQ_CST);
}
static inline long atomic_get(const long *p) { return __atomic_load_n(p, __ATOMIC_SEQ_CST); }
static inline void atomic_set(long *p, long v) { __atomic_store_n(p, v, __ATOMIC_SEQ_CST); }

#define CHECK(cond)                                                                   \
    do {                                                                              \
        if (!(cond)) {                                                                \
            __atomic_add_fetch(&check_failures_now, 1, __ATOMIC_SEQ_CST);             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);  \
        }                                                                             \
    } while (0)

/* Compares two statuses and prints both by name on failure. */
#define CHECK_STATUS(got, want)                                                        \
    do {                                                                               \
        tw_status check_got_ = (got), check_want_ = (want);                            \
        if (check_got_ != check_want_) {                                               \
            __atomic_add_fetch(&check_failures_now, 1, __ATOMIC_SEQ_CST);              \
            fprintf(stderr, "%s:%d: %s gave %d (%s), expected %d (%s)\n", __FILE__,    \
                    __LINE__, #got, (int)check_got_, tw_status_str(check_got_),        \
                    (int)check_want_, tw_status_str(check_want_));                     \
        }                                                                              \
    } while (0)

#define CHECK_OK(call) CHECK_STATUS(call, TW_OK)

/* Whether a test runs: every one, or those whose name contains $TW_TEST. */
static inline int check_selected(const char *name) {
    const char *filter = getenv("TW_TEST");
    return filter == NULL || *filter == '\0' || strstr(name, filter) != NULL;
}

#define RUN(test)                                                                      \
    do {                                                                               \
        if (!check_selected(#test)) break;                                             \
        check_failures_now = 0;                                                        \
        test();                                                                        \
        if (__atomic_load_n(&check_failures_now, __ATOMIC_SEQ_CST) == 0) {             \
            check_tests_passed++;                                                      \
            printf("ok   %s\n", #test);                                                \
        } else {                                                                       \
            check_tests_failed++;                                                      \
            check_note_failed(#test);                                                  \
            printf("FAIL %s\n", #test);                                                \
        }                                                                              \
        fflush(stdout);                                                                \
    } while (0)

/* Prints the summary line; the exit status of main. */
static inline int check_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, check_tests_passed, check_tests_failed);
    if (check_tests_failed > 0) printf("%s: failed: %s\n", name, check_failed_names);
    return check_tests_failed == 0 ? 0 : 1;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Waits until *counter >= want, up to timeout_ms; returns whether it got there. */
static inline int wait_for(const long *counter, long want, long timeout_ms) {
    int64_t deadline = now_ns() + (int64_t)timeout_ms * 1000000;
    while (atomic_get(counter) < want) {
        if (now_ns() > deadline) {
            return 0;
        }
        sleep_ms(1);
    }
    return 1;
}

/* A wheel on a virtual clock that starts at `start_unix_ms`: time moves only by tw_advance. */
static inline tw_wheel *virtual_wheel_at(int64_t start_unix_ms) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = start_unix_ms;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    return w;
}

/* A size from the environment (e.g. shrunk under valgrind), or the default. */
static inline long env_long(const char *name, long fallback) {
    const char *value = getenv(name);
    return value != NULL && *value != '\0' ? atol(value) : fallback;
}

#endif
