/*
 * Timers that survive a restart: tw_add_periodic_at (a periodic timer re-created in phase,
 * with a policy for the points missed while the process was down). Exact, on virtual clocks.
 */
#include "check.h"

#define START_MS INT64_C(1704067200000) /* 2024-01-01T00:00:00Z */
#define MAX_RUNS 64

static tw_wheel *virtual_wheel_at(int64_t start_unix_ms) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = start_unix_ms;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    return w;
}

/* When a wheel's timers ran, in ms since START_MS. */
typedef struct runs {
    tw_wheel *w;
    size_t count;
    int64_t at[MAX_RUNS];
} runs;

static void log_run(tw_timer_id id, void *user_data) {
    (void)id;
    runs *r = user_data;
    if (r->count < MAX_RUNS) {
        r->at[r->count] = tw_now_ms(r->w) - START_MS;
    }
    r->count++;
}

static int runs_are(const runs *r, const int64_t *want, size_t n) {
    if (r->count != n) {
        fprintf(stderr, "ran %zu times, expected %zu\n", r->count, n);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        if (r->at[i] != want[i]) {
            fprintf(stderr, "run %zu at %lld ms, expected %lld\n", i, (long long)r->at[i],
                    (long long)want[i]);
            return 0;
        }
    }
    return 1;
}

/* The runs in the first 3 s of a fixed-rate timer every second anchored at START_MS +
 * first_ms, on a wheel whose clock starts at START_MS. */
static runs *runs_anchored_at(int64_t first_ms, tw_missed missed) {
    static runs r;
    memset(&r, 0, sizeof r);
    r.w = virtual_wheel_at(START_MS);
    tw_timer_id id = 0;
    CHECK_OK(tw_add_periodic_at(r.w, START_MS + first_ms, 1000, TW_FIXED_RATE, missed,
                                log_run, &r, NULL, &id));
    size_t ran = 0;
    CHECK_OK(tw_advance(r.w, 3000, &ran));
    CHECK_OK(tw_destroy(r.w));
    return &r;
}

static void missed_points_run_once_now_then_in_phase(void) {
    /* Points at -2.5 s, -1.5 s, -0.5 s (missed), then 0.5 s, 1.5 s, ... */
    const int64_t want[] = {0, 500, 1500, 2500};
    CHECK(runs_are(runs_anchored_at(-2500, TW_MISSED_RUN_ONCE), want, 4));
}

static void missed_points_are_skipped_to_the_next_one(void) {
    const int64_t want[] = {500, 1500, 2500};
    CHECK(runs_are(runs_anchored_at(-2500, TW_MISSED_SKIP), want, 3));
}

static void a_start_ahead_runs_at_it_under_either_policy(void) {
    const int64_t want[] = {700, 1700, 2700};
    CHECK(runs_are(runs_anchored_at(700, TW_MISSED_RUN_ONCE), want, 3));
    CHECK(runs_are(runs_anchored_at(700, TW_MISSED_SKIP), want, 3));
}

static long drops;

static void count_drop(void *user_data) {
    (void)user_data;
    atomic_add(&drops, 1);
}

static void add_periodic_at_refuses_bad_arguments_and_takes_any_start(void) {
    tw_wheel *w = virtual_wheel_at(START_MS);
    tw_timer_id id = 0;
    atomic_set(&drops, 0);
    CHECK_STATUS(tw_add_periodic_at(w, START_MS, 1000, TW_FIXED_RATE, (tw_missed)7, log_run,
                                    NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(w, START_MS, 0, TW_FIXED_RATE, TW_MISSED_SKIP, log_run,
                                    NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(w, START_MS, 1000, (tw_period_mode)9, TW_MISSED_SKIP,
                                    log_run, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK(id == 0 && atomic_get(&drops) == 0);
    CHECK_OK(tw_add_periodic_at(w, INT64_MIN, 1000, TW_FIXED_RATE, TW_MISSED_RUN_ONCE, log_run,
                                NULL, count_drop, &id));
    CHECK_OK(tw_delete(w, id));
    CHECK(atomic_get(&drops) == 1);
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(missed_points_run_once_now_then_in_phase);
    RUN(missed_points_are_skipped_to_the_next_one);
    RUN(a_start_ahead_runs_at_it_under_either_policy);
    RUN(add_periodic_at_refuses_bad_arguments_and_takes_any_start);
    return check_summary("test_restart");
}
