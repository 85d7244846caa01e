/*
 * What an operator reads through the C ABI: tw_metrics_text (its buffer rules and its
 * figures against tw_get_stats), the slow-callback counter and the recent views.
 */
#include "check.h"

static void sleeper(tw_timer_id id, void *user_data) {
    (void)id;
    sleep_ms((long)(intptr_t)user_data);
}

/* A manual wheel that ran callbacks sleeping the given milliseconds each. */
static tw_wheel *wheel_that_ran(const long *sleeps, int n, uint64_t slow_callback_us) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.manual = 1;
    cfg.slow_callback_us = slow_callback_us;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    tw_timer_id id = 0;
    for (int i = 0; i < n; i++)
        CHECK_OK(tw_add(w, 0, sleeper, (void *)(intptr_t)sleeps[i], NULL, &id));
    sleep_ms(3);
    size_t ran = 0;
    CHECK_OK(tw_poll(w, &ran));
    CHECK(ran == (size_t)n);
    return w;
}

static void text_needs_a_large_enough_buffer(void) {
    long sleeps[] = {0, 0};
    tw_wheel *w = wheel_that_ran(sleeps, 2, 0);
    size_t needed = 0;
    CHECK_STATUS(tw_metrics_text(w, NULL, 0, &needed), TW_ERR_TOO_SMALL);
    CHECK(needed > 1000);
    char *buf = malloc(needed + 256);
    memset(buf, 'x', needed);
    size_t again = 0;
    CHECK_STATUS(tw_metrics_text(w, buf, needed - 1, &again), TW_ERR_TOO_SMALL);
    CHECK(again == needed);
    CHECK(buf[0] == '\0');
    CHECK_OK(tw_metrics_text(w, buf, needed + 256, NULL));
    CHECK(strlen(buf) == needed - 1);
    CHECK_STATUS(tw_metrics_text(NULL, buf, needed, &needed), TW_ERR_INVALID);
    CHECK_STATUS(tw_metrics_text(w, NULL, 10, &needed), TW_ERR_INVALID);
    CHECK(strcmp(tw_status_str(TW_ERR_TOO_SMALL), "buffer too small") == 0);
    free(buf);
    CHECK_OK(tw_destroy(w));
}

static void text_gives_the_counters_of_tw_get_stats(void) {
    long sleeps[] = {0, 0, 0};
    tw_wheel *w = wheel_that_ran(sleeps, 3, 0);
    tw_timer_id pending = 0;
    CHECK_OK(tw_add(w, 60000, sleeper, NULL, NULL, &pending));
    char buf[8192];
    CHECK_OK(tw_metrics_text(w, buf, sizeof buf, NULL));
    tw_stats st = {.size = sizeof st};
    CHECK_OK(tw_get_stats(w, &st));
    CHECK(st.added == 4 && st.fired == 3 && st.pending == 1);
    CHECK(strstr(buf, "\ntimerwheel_timers_added_total 4\n") != NULL);
    CHECK(strstr(buf, "\ntimerwheel_timers_fired_total 3\n") != NULL);
    CHECK(strstr(buf, "\ntimerwheel_timers_pending 1\n") != NULL);
    CHECK(strstr(buf, "\ntimerwheel_lateness_seconds_bucket{le=\"+Inf\"} 3\n") != NULL);
    CHECK(strstr(buf, "\ntimerwheel_lateness_seconds_count 3\n") != NULL);
    CHECK_OK(tw_destroy(w));
}

static void slow_callbacks_are_counted_from_the_threshold(void) {
    long sleeps[] = {0, 40, 1, 60};
    tw_wheel *w = wheel_that_ran(sleeps, 4, 30000);
    tw_stats st = {.size = sizeof st};
    CHECK_OK(tw_get_stats(w, &st));
    CHECK(st.slow_callbacks == 2);
    CHECK_OK(tw_destroy(w));
    w = wheel_that_ran(sleeps, 2, 0);
    CHECK_OK(tw_get_stats(w, &st));
    CHECK(st.slow_callbacks == 0);
    CHECK_OK(tw_destroy(w));
}

static void recent_view_counts_since_creation_while_younger(void) {
    long sleeps[] = {0, 0};
    tw_wheel *w = wheel_that_ran(sleeps, 2, 0);
    tw_stats all = {.size = sizeof all}, minute = {.size = sizeof minute};
    CHECK_OK(tw_get_stats_recent(w, 60000, &minute));
    CHECK_OK(tw_get_stats(w, &all));
    CHECK(minute.fired == 2 && minute.added == 2);
    CHECK(minute.span_ms <= all.span_ms);
    CHECK(minute.late_p50_us >= 3000 && minute.late_p50_us <= all.late_max_us);
    tw_stats untouched = {.size = sizeof untouched, .fired = 99};
    CHECK_STATUS(tw_get_stats_recent(w, 999, &untouched), TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats_recent(w, 60001, &untouched), TW_ERR_INVALID);
    CHECK(untouched.fired == 99);
    CHECK_STATUS(tw_get_stats_recent(NULL, 1000, &minute), TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats_recent(w, 1000, NULL), TW_ERR_INVALID);
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(text_needs_a_large_enough_buffer);
    RUN(text_gives_the_counters_of_tw_get_stats);
    RUN(slow_callbacks_are_counted_from_the_threshold);
    RUN(recent_view_counts_since_creation_while_younger);
    return check_summary("test_metrics");
}
