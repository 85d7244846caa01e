/*
 * Timers that survive a restart: tw_export (the pending timers of one instant, with their
 * user data) and tw_add_periodic_at (a periodic timer re-created in phase, with a policy
 * for the points missed while the process was down). Exact, on virtual clocks.
 */
#include "check.h"

#include <pthread.h>
#include <unistd.h>

#define START_MS INT64_C(1704067200000) /* 2024-01-01T00:00:00Z */
#define MS UINT64_C(1000000)
#define MAX_RUNS 64
#define MAX_TIMERS 16

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

/* What an export handed out, copied. */
typedef struct exported {
    size_t count;
    tw_timer_info info[MAX_TIMERS];
} exported;

static void copy_info(void *ctx, const tw_timer_info *info) {
    exported *e = ctx;
    if (e->count < MAX_TIMERS) {
        e->info[e->count] = *info;
    }
    e->count++;
}

static void export_in_virtual_time_gives_exact_values_in_deadline_order(void) {
    tw_wheel *w = virtual_wheel_at(START_MS);
    int once = 0, rate = 0, wall = 0, gone = 0;
    tw_timer_id once_id = 0, rate_id = 0, wall_id = 0, gone_id = 0;
    CHECK_OK(tw_add(w, 1500, log_run, &once, NULL, &once_id));
    CHECK_OK(tw_add_periodic(w, 250, 1000, TW_FIXED_RATE, log_run, &rate, NULL, &rate_id));
    CHECK_OK(tw_add_at(w, START_MS + 10000, log_run, &wall, NULL, &wall_id));
    CHECK_OK(tw_add(w, 50, log_run, &gone, NULL, &gone_id));
    CHECK_OK(tw_delete(w, gone_id));
    /* Nothing is due yet (the user data here are no run logs). */
    size_t ran = 0;
    CHECK_OK(tw_advance(w, 200, &ran));
    CHECK(ran == 0);
    exported e = {0};
    size_t running = 99;
    CHECK_OK(tw_export(w, copy_info, &e, &running));
    CHECK(running == 0);
    CHECK(e.count == 3);
    const tw_timer_info *r = &e.info[0], *o = &e.info[1], *a = &e.info[2];
    CHECK(r->size == sizeof(tw_timer_info));
    CHECK(r->id == rate_id && r->kind == TW_TIMER_PERIODIC && r->mode == TW_FIXED_RATE);
    CHECK(r->period_ns == 1000 * MS && r->user_data == &rate);
    CHECK(r->due_ns == 250 * MS && r->due_unix_ms == START_MS + 250 && r->at_unix_ms == 0);
    CHECK(o->id == once_id && o->kind == TW_TIMER_ONE_SHOT && o->period_ns == 0);
    CHECK(o->due_ns == 1500 * MS && o->due_unix_ms == START_MS + 1500 && o->user_data == &once);
    CHECK(a->id == wall_id && a->kind == TW_TIMER_WALL_CLOCK);
    CHECK(a->at_unix_ms == START_MS + 10000 && a->due_unix_ms == START_MS + 10000);
    CHECK(a->user_data == &wall);
    CHECK_OK(tw_destroy(w));
}

static void export_refuses_a_null_wheel_or_function(void) {
    tw_wheel *w = virtual_wheel_at(START_MS);
    exported e = {0};
    CHECK_STATUS(tw_export(NULL, copy_info, &e, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_export(w, NULL, &e, NULL), TW_ERR_INVALID);
    CHECK_OK(tw_export(w, copy_info, &e, NULL));
    CHECK(e.count == 0);
    CHECK_OK(tw_destroy(w));
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

static void a_timer_exported_and_re_created_after_a_restart_stays_in_phase(void) {
    /* Before: every second from 0.25 s; exported at 1.9 s, next point 2.25 s. */
    tw_wheel *before = virtual_wheel_at(START_MS);
    runs unused = {.w = before};
    tw_timer_id id = 0;
    CHECK_OK(tw_add_periodic(before, 250, 1000, TW_FIXED_RATE, log_run, &unused, NULL, &id));
    size_t ran = 0;
    CHECK_OK(tw_advance(before, 1900, &ran));
    exported saved = {0};
    CHECK_OK(tw_export(before, copy_info, &saved, NULL));
    CHECK_OK(tw_destroy(before));
    CHECK(saved.count == 1);
    /* Down until 5 s: the points at 2.25, 3.25 and 4.25 s were missed. */
    runs after = {.w = virtual_wheel_at(START_MS + 5000)};
    const tw_timer_info *t = &saved.info[0];
    CHECK_OK(tw_add_periodic_at(after.w, t->due_unix_ms, t->period_ns / MS,
                                (tw_period_mode)t->mode, TW_MISSED_RUN_ONCE, log_run, &after,
                                NULL, &id));
    CHECK_OK(tw_advance(after.w, 2000, &ran));
    const int64_t want[] = {5000, 5250, 6250};
    CHECK(runs_are(&after, want, 3));
    CHECK_OK(tw_destroy(after.w));
}

/* A periodic callback that holds its run until released. */
static long held_started, held_release;

static void hold_run(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
    atomic_set(&held_started, 1);
    for (int i = 0; i < 30000 && !atomic_get(&held_release); i++) {
        sleep_ms(1);
    }
}

static void a_periodic_timer_whose_callback_runs_is_left_out_and_counted(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    atomic_set(&held_started, 0);
    atomic_set(&held_release, 0);
    tw_timer_id busy = 0, idle = 0;
    CHECK_OK(tw_add_periodic(w, 1, 10, TW_FIXED_RATE, hold_run, NULL, NULL, &busy));
    CHECK_OK(tw_add(w, 3600 * 1000, hold_run, NULL, NULL, &idle));
    CHECK(wait_for(&held_started, 1, 30000));
    exported e = {0};
    size_t running = 0;
    CHECK_OK(tw_export(w, copy_info, &e, &running));
    CHECK(running == 1 && e.count == 1 && e.info[0].id == idle);
    atomic_set(&held_release, 1);
    CHECK_OK(tw_delete_sync(w, busy));
    CHECK_OK(tw_destroy(w));
}

/* ---- the export's function and the rest of the wheel ---------------------------------- */

static void noop_run(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
}

static long calls_back_seen;

/* An export function that calls back into its wheel (ctx): everything that changes the
 * wheel or waits is refused at once, reads work. */
static void call_back(void *ctx, const tw_timer_info *info) {
    tw_wheel *w = ctx;
    tw_timer_id id = 0;
    CHECK_STATUS(tw_add(w, 1, noop_run, NULL, NULL, &id), TW_ERR_BUSY);
    CHECK_STATUS(tw_add_periodic(w, 1, 1, TW_FIXED_RATE, noop_run, NULL, NULL, &id), TW_ERR_BUSY);
    CHECK_STATUS(tw_add_at(w, START_MS, noop_run, NULL, NULL, &id), TW_ERR_BUSY);
    CHECK(id == 0);
    CHECK_STATUS(tw_reset(w, info->id, 1), TW_ERR_BUSY);
    CHECK_STATUS(tw_delete(w, info->id), TW_ERR_BUSY);
    CHECK_STATUS(tw_delete_sync(w, info->id), TW_ERR_BUSY);
    size_t ran = 0;
    CHECK_STATUS(tw_poll(w, &ran), TW_ERR_BUSY);
    exported inner = {0};
    CHECK_STATUS(tw_export(w, copy_info, &inner, NULL), TW_ERR_BUSY);
    CHECK(inner.count == 0);
    CHECK_STATUS(tw_destroy(w), TW_ERR_BUSY);
    CHECK_STATUS(tw_destroy_nowait(w), TW_ERR_BUSY);
    tw_stats s = {.size = sizeof s};
    CHECK_OK(tw_get_stats(w, &s));
    CHECK(s.pending == 2);
    atomic_add(&calls_back_seen, 1);
}

/* A C programmer's export function that calls its wheel gets what a callback gets from
 * tw_destroy: TW_ERR_BUSY at once, nothing changed (it used to deadlock: the alarm turns
 * a hang into a failure). */
static void calls_back_from_the_export_function_are_busy_and_change_nothing(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.manual = 1;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    tw_timer_id a = 0, b = 0;
    CHECK_OK(tw_add(w, 3600 * 1000, noop_run, NULL, NULL, &a));
    CHECK_OK(tw_add_periodic(w, 60000, 60000, TW_FIXED_RATE, noop_run, NULL, NULL, &b));
    tw_stats before = {.size = sizeof before};
    CHECK_OK(tw_get_stats(w, &before));
    atomic_set(&calls_back_seen, 0);
    alarm(60);
    CHECK_OK(tw_export(w, call_back, w, NULL));
    alarm(0);
    CHECK(atomic_get(&calls_back_seen) == 2);
    tw_stats after = {.size = sizeof after};
    CHECK_OK(tw_get_stats(w, &after));
    CHECK(after.pending == 2 && after.added == before.added && after.cancelled == 0);
    exported e = {0};
    CHECK_OK(tw_export(w, copy_info, &e, NULL)); /* the wheel works afterwards */
    CHECK(e.count == 2);
    CHECK_OK(tw_delete(w, a));
    CHECK_OK(tw_destroy(w));
}

/* A session whose drop frees it: here it marks itself freed, so the test can look. */
typedef struct session {
    long freed;
} session;

static void free_session(void *user_data) { atomic_set(&((session *)user_data)->freed, 1); }

typedef struct racing_delete {
    tw_wheel *w;
    tw_timer_id plain, sync;
    session *sync_session;
    long deleted;              /* the plain tw_delete returned */
    long freed_at_sync_return; /* the sync session was freed when tw_delete_sync returned */
    tw_status plain_status, sync_status;
} racing_delete;

static void *delete_both(void *arg) {
    racing_delete *r = arg;
    r->plain_status = tw_delete(r->w, r->plain);
    atomic_set(&r->deleted, 1);
    r->sync_status = tw_delete_sync(r->w, r->sync);
    atomic_set(&r->freed_at_sync_return, atomic_get(&r->sync_session->freed));
    return NULL;
}

typedef struct reading_export {
    racing_delete *race;
    session *sessions;
    pthread_t thread;
    size_t seen;
    long delete_waited, freed_while_reading;
} reading_export;

/* The export function: on the first timer, another thread deletes both timers; the delete
 * returns while the function still runs, and no session is freed before it returned. */
static void read_while_deleted(void *ctx, const tw_timer_info *info) {
    reading_export *x = ctx;
    (void)info;
    if (x->seen++ == 0) {
        pthread_create(&x->thread, NULL, delete_both, x->race);
        x->delete_waited = !wait_for(&x->race->deleted, 1, 10000);
        sleep_ms(50);
    }
    for (int i = 0; i < 2; i++) x->freed_while_reading += atomic_get(&x->sessions[i].freed);
}

/* An export keeps the wheel going: a delete on another thread during the export's
 * function returns at once (it used to wait for the whole export); the session it ends is
 * freed by its drop only after the function returned, before tw_export returns;
 * tw_delete_sync returns after that drop. */
static void an_export_function_blocks_no_delete_and_user_data_stay_valid(void) {
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(NULL, &w));
    session sessions[2] = {{0}, {0}};
    racing_delete race = {.w = w, .sync_session = &sessions[1]};
    CHECK_OK(tw_add(w, 3600 * 1000, noop_run, &sessions[0], free_session, &race.plain));
    CHECK_OK(tw_add(w, 3600 * 1000, noop_run, &sessions[1], free_session, &race.sync));
    reading_export x = {.race = &race, .sessions = sessions};
    CHECK_OK(tw_export(w, read_while_deleted, &x, NULL));
    CHECK(x.seen == 2);
    CHECK(!x.delete_waited);
    CHECK(x.freed_while_reading == 0);
    CHECK(atomic_get(&sessions[0].freed) == 1); /* dropped before tw_export returned */
    pthread_join(x.thread, NULL);
    CHECK_OK(race.plain_status);
    CHECK_OK(race.sync_status);
    CHECK(race.freed_at_sync_return == 1);
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(export_in_virtual_time_gives_exact_values_in_deadline_order);
    RUN(export_refuses_a_null_wheel_or_function);
    RUN(missed_points_run_once_now_then_in_phase);
    RUN(missed_points_are_skipped_to_the_next_one);
    RUN(a_start_ahead_runs_at_it_under_either_policy);
    RUN(add_periodic_at_refuses_bad_arguments_and_takes_any_start);
    RUN(a_timer_exported_and_re_created_after_a_restart_stays_in_phase);
    RUN(a_periodic_timer_whose_callback_runs_is_left_out_and_counted);
    RUN(calls_back_from_the_export_function_are_busy_and_change_nothing);
    RUN(an_export_function_blocks_no_delete_and_user_data_stay_valid);
    return check_summary("test_restart");
}
