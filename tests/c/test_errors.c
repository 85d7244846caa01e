/*
 * Drives the table of docs/c-errors.md: every C function with every bad input, one test
 * per column of the table. Each row of a test is one cell: function, input, status.
 */
#include "check.h"

#include <string.h>

static long cb_runs, drops;

static void count_cb(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
    atomic_add(&cb_runs, 1);
}

static void count_drop(void *user_data) {
    (void)user_data;
    atomic_add(&drops, 1);
}

static tw_wheel *new_wheel(uint32_t manual) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.max_workers = 1;
    cfg.manual = manual;
    tw_wheel *w = NULL;
    tw_status s = tw_create(&cfg, &w);
    if (s != TW_OK) {
        fprintf(stderr, "tw_create: %s\n", tw_status_str(s));
        check_tests_failed++;
        exit(check_summary("test_errors"));
    }
    return w;
}

static tw_timer_id add_far(tw_wheel *w) {
    tw_timer_id id = 0;
    CHECK_OK(tw_add(w, 3600 * 1000, count_cb, NULL, count_drop, &id));
    return id;
}

/* Counts the timers tw_export hands out into the long at ctx. */
static void count_info(void *ctx, const tw_timer_info *info) {
    (void)info;
    (*(long *)ctx)++;
}

/* Refused adds call neither cb nor drop: the counters must not move. */
#define CHECK_NOTHING_CALLED(before_runs, before_drops) \
    CHECK(atomic_get(&cb_runs) == (before_runs) && atomic_get(&drops) == (before_drops))

static void null_wheel(void) {
    tw_timer_id id = 0;
    tw_stats stats = {.size = sizeof stats};
    size_t ran = 0;
    long runs = cb_runs, dropped = drops;
    CHECK_STATUS(tw_add(NULL, 1, count_cb, NULL, count_drop, &id), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic(NULL, 1, 1, TW_FIXED_RATE, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_ns(NULL, 1, 1, TW_FIXED_RATE, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_at(NULL, 0, count_cb, NULL, count_drop, &id), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(NULL, 0, 1, TW_FIXED_RATE, TW_MISSED_SKIP, count_cb, NULL,
                                    count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_reset(NULL, 1, 1), TW_ERR_INVALID);
    long exported = 0;
    CHECK_STATUS(tw_export(NULL, count_info, &exported, &ran), TW_ERR_INVALID);
    CHECK(exported == 0);
    CHECK_STATUS(tw_delete(NULL, 1), TW_ERR_INVALID);
    CHECK_STATUS(tw_delete_sync(NULL, 1), TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats(NULL, &stats), TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats_recent(NULL, 1000, &stats), TW_ERR_INVALID);
    char text[16] = "x";
    size_t needed = 7;
    CHECK_STATUS(tw_metrics_text(NULL, text, sizeof text, &needed), TW_ERR_INVALID);
    CHECK(needed == 7 && text[0] == 'x');
    CHECK(tw_next_timeout_ms(NULL) == -1);
    CHECK_STATUS(tw_poll(NULL, &ran), TW_ERR_INVALID);
    CHECK_STATUS(tw_advance(NULL, 1, &ran), TW_ERR_INVALID);
    CHECK_STATUS(tw_advance_to_next(NULL, &ran), TW_ERR_INVALID);
    CHECK(tw_now_ms(NULL) == INT64_MIN);
    CHECK_STATUS(tw_destroy(NULL), TW_ERR_INVALID);
    CHECK(id == 0);
    CHECK_NOTHING_CALLED(runs, dropped);
}

static void null_callback(void) {
    tw_wheel *w = new_wheel(0);
    tw_timer_id id = 0;
    long runs = cb_runs, dropped = drops;
    CHECK_STATUS(tw_add(w, 1, NULL, NULL, count_drop, &id), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic(w, 1, 1, TW_FIXED_RATE, NULL, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_ns(w, 1, 1, TW_FIXED_RATE, NULL, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_at(w, 0, NULL, NULL, count_drop, &id), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(w, 0, 1, TW_FIXED_RATE, TW_MISSED_SKIP, NULL, NULL,
                                    count_drop, &id),
                 TW_ERR_INVALID);
    size_t running = 7;
    CHECK_STATUS(tw_export(w, NULL, NULL, &running), TW_ERR_INVALID); /* fn NULL */
    CHECK(id == 0 && running == 7);
    CHECK_OK(tw_add(w, 1, count_cb, NULL, NULL, &id)); /* a NULL drop is fine */
    CHECK_OK(tw_destroy(w));
    CHECK(drops == dropped && cb_runs <= runs + 1);
}

static void null_out_pointer(void) {
    tw_wheel *w = new_wheel(0);
    long runs = cb_runs, dropped = drops;
    CHECK_STATUS(tw_create(NULL, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_add(w, 1, count_cb, NULL, count_drop, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic(w, 1, 1, TW_FIXED_RATE, count_cb, NULL, count_drop, NULL),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_ns(w, 1, 1, TW_FIXED_RATE, count_cb, NULL, count_drop, NULL),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_at(w, 0, count_cb, NULL, count_drop, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(w, 0, 1, TW_FIXED_RATE, TW_MISSED_SKIP, count_cb, NULL,
                                    count_drop, NULL),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats(w, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_get_stats_recent(w, 1000, NULL), TW_ERR_INVALID);
    size_t needed = 0;
    CHECK_STATUS(tw_metrics_text(w, NULL, 16, &needed), TW_ERR_INVALID); /* buf NULL, len > 0 */
    CHECK_STATUS(tw_metrics_text(w, NULL, 0, NULL), TW_ERR_TOO_SMALL); /* needed NULL: fine */
    long exported = 0;
    CHECK_OK(tw_export(w, count_info, &exported, NULL)); /* running NULL: no count asked */
    CHECK_STATUS(tw_poll(w, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_advance(w, 1, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_advance_to_next(w, NULL), TW_ERR_INVALID);
    tw_config_init(NULL); /* no-op */
    CHECK_OK(tw_destroy(w));
    CHECK_NOTHING_CALLED(runs, dropped);
}

static void id_zero_stale_and_double_delete(void) {
    tw_wheel *w = new_wheel(0);
    CHECK_STATUS(tw_reset(w, 0, 1), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_delete(w, 0), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_delete_sync(w, 0), TW_ERR_NOT_FOUND);
    tw_timer_id stale = add_far(w);
    CHECK_OK(tw_delete(w, stale));
    tw_timer_id fresh = add_far(w); /* may reuse the slot: the stale id must not reach it */
    CHECK_STATUS(tw_delete(w, stale), TW_ERR_NOT_FOUND); /* double delete */
    CHECK_STATUS(tw_delete_sync(w, stale), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_reset(w, stale, 1), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_delete(w, UINT64_MAX), TW_ERR_NOT_FOUND); /* never issued */
    tw_wheel *other = new_wheel(0);
    tw_timer_id foreign = add_far(other); /* from the same slot of the other wheel */
    CHECK_STATUS(tw_reset(w, foreign, 1), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_delete(w, foreign), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_delete_sync(w, foreign), TW_ERR_NOT_FOUND);
    CHECK_OK(tw_destroy(other));
    CHECK_OK(tw_delete_sync(w, fresh));
    CHECK_STATUS(tw_delete_sync(w, fresh), TW_ERR_NOT_FOUND);
    CHECK_OK(tw_destroy(w));
}

static void huge_delays(void) {
    tw_wheel *w = new_wheel(0);
    tw_timer_id a = 0, b = 0, c = 0, d = 0, e = 0, f = 0;
    long dropped = drops;
    CHECK_OK(tw_add(w, UINT64_MAX, count_cb, NULL, count_drop, &a));
    CHECK_OK(tw_add_periodic(w, UINT64_MAX, UINT64_MAX, TW_FIXED_RATE, count_cb, NULL,
                             count_drop, &b));
    CHECK_OK(tw_add_periodic_ns(w, UINT64_MAX, UINT64_MAX, TW_FIXED_RATE, count_cb, NULL,
                                count_drop, &e));
    CHECK_OK(tw_add_at(w, INT64_MAX, count_cb, NULL, count_drop, &c));
    CHECK_OK(tw_add_periodic_at(w, INT64_MAX, UINT64_MAX, TW_FIXED_RATE, TW_MISSED_RUN_ONCE,
                                count_cb, NULL, count_drop, &f));
    CHECK_OK(tw_add(w, 3600 * 1000, count_cb, NULL, count_drop, &d));
    CHECK_OK(tw_reset(w, d, UINT64_MAX));
    CHECK(tw_next_timeout_ms(w) >= 0);
    CHECK_OK(tw_delete(w, a));
    CHECK_OK(tw_destroy(w)); /* b, c, d, e and f are discarded */
    CHECK(drops == dropped + 6);
}

static void bad_values(void) {
    tw_wheel *w = new_wheel(0);
    tw_timer_id id = 0;
    long runs = cb_runs, dropped = drops;
    CHECK_STATUS(tw_add_periodic(w, 1, 0, TW_FIXED_RATE, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID); /* period 0 */
    CHECK_STATUS(tw_add_periodic(w, 1, 0, TW_FIXED_DELAY, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_ns(w, 1, 0, TW_FIXED_RATE, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_ns(w, 1, 1, (tw_period_mode)2, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic(w, 1, 1, (tw_period_mode)2, count_cb, NULL, count_drop, &id),
                 TW_ERR_INVALID); /* not a tw_period_mode */
    CHECK_STATUS(tw_add_periodic_at(w, 0, 0, TW_FIXED_RATE, TW_MISSED_SKIP, count_cb, NULL,
                                    count_drop, &id),
                 TW_ERR_INVALID); /* period 0 */
    CHECK_STATUS(tw_add_periodic_at(w, 0, 1, (tw_period_mode)2, TW_MISSED_SKIP, count_cb, NULL,
                                    count_drop, &id),
                 TW_ERR_INVALID);
    CHECK_STATUS(tw_add_periodic_at(w, 0, 1, TW_FIXED_RATE, (tw_missed)2, count_cb, NULL,
                                    count_drop, &id),
                 TW_ERR_INVALID); /* not a tw_missed */
    CHECK(id == 0);
    CHECK_NOTHING_CALLED(runs, dropped);
    size_t ran = 0;
    CHECK_STATUS(tw_poll(w, &ran), TW_ERR_INVALID); /* not a manual wheel */
    CHECK_STATUS(tw_advance(w, 1, &ran), TW_ERR_INVALID); /* not a virtual clock */
    CHECK_STATUS(tw_advance_to_next(w, &ran), TW_ERR_INVALID);
    CHECK_STATUS(tw_record_callback_failure(), TW_ERR_INVALID); /* not from a callback */
    tw_stats stats = {.size = sizeof stats};
    CHECK_OK(tw_get_stats(w, &stats));
    CHECK(stats.callback_panics == 0);
    CHECK(strcmp(tw_status_str((tw_status)42), "unknown status") == 0);
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.tick_us = 99;
    tw_wheel *none = NULL;
    CHECK_STATUS(tw_create(&cfg, &none), TW_ERR_INVALID);
    tw_config_init(&cfg);
    cfg.clock = 2; /* not a tw_clock */
    CHECK_STATUS(tw_create(&cfg, &none), TW_ERR_INVALID);
    CHECK(none == NULL);
    CHECK_OK(tw_destroy(w));
}

static void default_wheel(void) {
    CHECK_STATUS(tw_destroy(tw_default()), TW_ERR_BUSY);
}

/* ---- from a timer's own callback ---------------------------------------------------- */

typedef struct {
    tw_wheel *wheel;
    tw_status destroy, delete_sync, delete_, reset, add, add_periodic, add_at, get_stats;
    tw_status add_periodic_at, export_, stats_recent, metrics_text;
    size_t running;
    long exported;
    int64_t next_timeout;
    long done;
} own_calls;

static void call_on_self(tw_timer_id id, void *user_data) {
    own_calls *c = user_data;
    tw_timer_id other = 0;
    tw_stats stats = {.size = sizeof stats};
    c->add = tw_add(c->wheel, 3600 * 1000, count_cb, NULL, count_drop, &other);
    c->add_periodic = tw_add_periodic(c->wheel, 3600 * 1000, 1, TW_FIXED_DELAY, count_cb, NULL,
                                      count_drop, &other);
    c->add_at = tw_add_at(c->wheel, INT64_MAX, count_cb, NULL, count_drop, &other);
    c->add_periodic_at = tw_add_periodic_at(c->wheel, INT64_MAX, 1, TW_FIXED_RATE,
                                            TW_MISSED_SKIP, count_cb, NULL, count_drop, &other);
    c->get_stats = tw_get_stats(c->wheel, &stats);
    c->stats_recent = tw_get_stats_recent(c->wheel, 60000, &stats);
    char text[16384];
    c->metrics_text = tw_metrics_text(c->wheel, text, sizeof text, NULL);
    c->export_ = tw_export(c->wheel, count_info, &c->exported, &c->running);
    c->next_timeout = tw_next_timeout_ms(c->wheel);
    c->destroy = tw_destroy(c->wheel);
    c->delete_sync = tw_delete_sync(c->wheel, id);
    c->reset = tw_reset(c->wheel, id, 3600 * 1000);
    c->delete_ = tw_delete(c->wheel, id);
    atomic_set(&c->done, 1);
}

static void from_own_callback(void) {
    tw_wheel *w = new_wheel(0);
    own_calls once, periodic;
    memset(&once, 0, sizeof once);
    memset(&periodic, 0, sizeof periodic);
    once.wheel = periodic.wheel = w;
    tw_timer_id id = 0;
    long dropped = drops;
    CHECK_OK(tw_add(w, 1, call_on_self, &once, NULL, &id));
    CHECK_OK(tw_add_periodic(w, 1, 1000, TW_FIXED_RATE, call_on_self, &periodic, NULL, &id));
    CHECK(wait_for(&once.done, 1, 5000) && wait_for(&periodic.done, 1, 5000));
    CHECK_STATUS(once.destroy, TW_ERR_BUSY);
    CHECK_STATUS(once.delete_sync, TW_ERR_BUSY);
    CHECK_STATUS(once.reset, TW_ERR_NOT_FOUND); /* a one-shot that started is not pending */
    CHECK_STATUS(once.delete_, TW_ERR_NOT_FOUND);
    CHECK_STATUS(periodic.destroy, TW_ERR_BUSY);
    CHECK_STATUS(periodic.delete_sync, TW_ERR_BUSY);
    CHECK_STATUS(periodic.reset, TW_OK);
    CHECK_STATUS(periodic.delete_, TW_OK);
    CHECK(periodic.running == 1); /* its own run is under way: left out, counted */
    const own_calls *both[] = {&once, &periodic};
    for (int i = 0; i < 2; i++) {
        CHECK_STATUS(both[i]->add, TW_OK);
        CHECK_STATUS(both[i]->add_periodic, TW_OK);
        CHECK_STATUS(both[i]->add_at, TW_OK);
        CHECK_STATUS(both[i]->add_periodic_at, TW_OK);
        CHECK_STATUS(both[i]->get_stats, TW_OK);
        CHECK_STATUS(both[i]->stats_recent, TW_OK);
        CHECK_STATUS(both[i]->metrics_text, TW_OK);
        CHECK_STATUS(both[i]->export_, TW_OK);
        CHECK(both[i]->next_timeout >= 0); /* timers are pending (0 when one is due already) */
    }
    CHECK_OK(tw_destroy(w));
    CHECK(drops == dropped + 8); /* the eight timers added from the callbacks */
}

/* ---- while tw_destroy runs on another thread ----------------------------------------- */

typedef struct {
    tw_wheel *wheel;
    tw_timer_id pending;
    long started, done;
    tw_status add, add_periodic, add_at, reset, delete_, delete_sync, get_stats, poll, destroy;
    tw_status add_periodic_at, export_, stats_recent, metrics_text;
    int64_t next_timeout;
} shutdown_calls;

static void call_during_shutdown(tw_timer_id id, void *user_data) {
    shutdown_calls *c = user_data;
    tw_timer_id out = 0;
    tw_stats stats = {.size = sizeof stats};
    size_t ran = 0;
    (void)id;
    atomic_set(&c->started, 1);
    /* Until tw_destroy has begun (it then waits for this callback), re-arming works. */
    for (int i = 0; i < 5000; i++) {
        c->reset = tw_reset(c->wheel, c->pending, 3600 * 1000);
        if (c->reset != TW_OK) break;
        sleep_ms(1);
    }
    c->add = tw_add(c->wheel, 1, count_cb, NULL, count_drop, &out);
    c->add_periodic =
        tw_add_periodic(c->wheel, 1, 1, TW_FIXED_RATE, count_cb, NULL, count_drop, &out);
    c->add_at = tw_add_at(c->wheel, 0, count_cb, NULL, count_drop, &out);
    c->add_periodic_at = tw_add_periodic_at(c->wheel, 0, 1, TW_FIXED_RATE, TW_MISSED_SKIP,
                                            count_cb, NULL, count_drop, &out);
    c->delete_ = tw_delete(c->wheel, c->pending);
    c->delete_sync = tw_delete_sync(c->wheel, c->pending);
    c->get_stats = tw_get_stats(c->wheel, &stats);
    c->stats_recent = tw_get_stats_recent(c->wheel, 1000, &stats);
    char text[16384];
    c->metrics_text = tw_metrics_text(c->wheel, text, sizeof text, NULL);
    long exported = 0;
    c->export_ = tw_export(c->wheel, count_info, &exported, NULL);
    c->next_timeout = tw_next_timeout_ms(c->wheel);
    c->poll = tw_poll(c->wheel, &ran);
    c->destroy = tw_destroy(c->wheel);
    atomic_set(&c->done, 1);
}

static void during_shutdown(void) {
    shutdown_calls c;
    memset(&c, 0, sizeof c);
    c.wheel = new_wheel(0);
    c.pending = add_far(c.wheel);
    tw_timer_id id = 0;
    long runs = cb_runs;
    CHECK_OK(tw_add(c.wheel, 1, call_during_shutdown, &c, NULL, &id));
    CHECK(wait_for(&c.started, 1, 5000));
    CHECK_OK(tw_destroy(c.wheel));
    CHECK(c.done == 1);
    CHECK_STATUS(c.add, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.add_periodic, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.add_at, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.add_periodic_at, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.reset, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.delete_, TW_ERR_SHUTDOWN);
    CHECK_STATUS(c.delete_sync, TW_ERR_SHUTDOWN); /* even from a callback: shutdown wins */
    CHECK_STATUS(c.get_stats, TW_OK);
    CHECK_STATUS(c.stats_recent, TW_OK);
    CHECK_STATUS(c.metrics_text, TW_OK);
    CHECK_STATUS(c.export_, TW_ERR_SHUTDOWN);
    CHECK(c.next_timeout >= -1); /* the far timer until it is discarded, then -1 */
    CHECK_STATUS(c.poll, TW_ERR_INVALID); /* a wheel with threads: as always */
    CHECK_STATUS(c.destroy, TW_ERR_SHUTDOWN); /* as every call: the destroy began */
    CHECK(cb_runs == runs);
}

/* A drop function is not a callback: tw_record_callback_failure there returns
 * TW_ERR_INVALID and counts nothing, after a run inside tw_poll, and when a callback's
 * tw_delete drops another timer (the callback's own call still counts). */
static tw_status recorded_in_drop[2];
static long drops_recorded;
static tw_status recorded_in_callback;

typedef struct victim {
    tw_wheel *w;
    tw_timer_id id;
} victim;

static void record_in_drop(void *user_data) {
    (void)user_data;
    long n = atomic_add(&drops_recorded, 1);
    if (n <= 2) {
        recorded_in_drop[n - 1] = tw_record_callback_failure();
    }
}

static void delete_then_record(tw_timer_id id, void *user_data) {
    (void)id;
    victim *v = user_data;
    CHECK_OK(tw_delete(v->w, v->id));
    recorded_in_callback = tw_record_callback_failure();
}

static void record_from_a_drop_function(void) {
    tw_wheel *w = new_wheel(1);
    if (w == NULL) {
        return;
    }
    victim v = {.w = w};
    tw_timer_id id = 0;
    size_t ran = 0;
    CHECK_OK(tw_add(w, 0, count_cb, NULL, record_in_drop, &id));
    CHECK_OK(tw_add(w, 3600000, count_cb, NULL, record_in_drop, &v.id));
    CHECK_OK(tw_add(w, 0, delete_then_record, &v, NULL, &id));
    for (int i = 0; i < 1000 && ran < 2; i++) {
        size_t now = 0;
        CHECK_OK(tw_poll(w, &now));
        ran += now;
        sleep_ms(1);
    }
    CHECK(ran == 2 && atomic_get(&drops_recorded) == 2);
    CHECK_STATUS(recorded_in_drop[0], TW_ERR_INVALID);
    CHECK_STATUS(recorded_in_drop[1], TW_ERR_INVALID);
    CHECK_STATUS(recorded_in_callback, TW_OK);
    tw_stats stats = {.size = sizeof stats};
    CHECK_OK(tw_get_stats(w, &stats));
    CHECK(stats.callback_panics == 1); /* the callback's own, once */
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(null_wheel);
    RUN(null_callback);
    RUN(null_out_pointer);
    RUN(id_zero_stale_and_double_delete);
    RUN(huge_delays);
    RUN(bad_values);
    RUN(default_wheel);
    RUN(from_own_callback);
    RUN(during_shutdown);
    RUN(record_from_a_drop_function);
    return check_summary("test_errors");
}
