/*
 * tw_delete_many and tw_reset_many: a status per id, each as the single call would give it,
 * where a batch repeats an id, names a stale, foreign or zero id, is re-entered from a drop
 * function, or runs while its wheel is destroyed; bad arguments change nothing.
 */
#include "check.h"

#include <string.h>

#define WAIT_MS 5000
#define HOUR_MS (3600 * 1000)
#define UNSET ((tw_status)99) /* a status the library never writes */

static long drops;

static void never_runs(tw_timer_id id, void *data) {
    (void)id;
    (void)data;
    CHECK(!"a deleted timer ran");
}

static void count_drop(void *data) {
    (void)data;
    atomic_add(&drops, 1);
}

static tw_timer_id add_far(tw_wheel *w, void *data) {
    tw_timer_id id = 0;
    CHECK_OK(tw_add(w, HOUR_MS, never_runs, data, count_drop, &id));
    return id;
}

static uint64_t pending(tw_wheel *w) {
    tw_stats s;
    memset(&s, 0, sizeof s);
    s.size = sizeof s;
    CHECK_OK(tw_get_stats(w, &s));
    return s.pending;
}

static void fill(tw_status *statuses, size_t n) {
    for (size_t i = 0; i < n; i++) statuses[i] = UNSET;
}

/* ---- bad arguments: TW_ERR_INVALID, nothing deleted or moved, no status written ------- */

static void test_null_arrays_change_nothing(void) {
    tw_wheel *w = virtual_wheel_at(0);
    tw_timer_id ids[2] = {add_far(w, NULL), add_far(w, NULL)};
    uint64_t delays[2] = {1, 1};
    tw_status statuses[2];
    fill(statuses, 2);
    CHECK_STATUS(tw_delete_many(w, NULL, 2, statuses), TW_ERR_INVALID);
    CHECK_STATUS(tw_delete_many(w, ids, 2, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_delete_many(NULL, ids, 2, statuses), TW_ERR_INVALID);
    CHECK_STATUS(tw_reset_many(w, NULL, delays, 2, statuses), TW_ERR_INVALID);
    CHECK_STATUS(tw_reset_many(w, ids, NULL, 2, statuses), TW_ERR_INVALID);
    CHECK_STATUS(tw_reset_many(w, ids, delays, 2, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_reset_many(NULL, ids, delays, 2, statuses), TW_ERR_INVALID);
    CHECK(statuses[0] == UNSET && statuses[1] == UNSET);
    CHECK(pending(w) == 2);
    size_t ran = 0;
    CHECK_OK(tw_advance(w, 10, &ran)); /* not re-armed to 1 ms */
    CHECK(ran == 0);
    /* An empty batch is a batch: TW_OK, whatever its pointers. */
    CHECK_OK(tw_delete_many(w, NULL, 0, NULL));
    CHECK_OK(tw_reset_many(w, NULL, NULL, 0, NULL));
    CHECK_STATUS(tw_delete_many(NULL, NULL, 0, NULL), TW_ERR_INVALID);
    long before = atomic_get(&drops);
    CHECK_OK(tw_destroy(w));
    CHECK(atomic_get(&drops) == before + 2);
}

/* ---- duplicate, stale, zero and foreign ids ------------------------------------------- */

static void test_delete_many_statuses(void) {
    tw_wheel *w = virtual_wheel_at(0);
    tw_wheel *other = virtual_wheel_at(0);
    tw_timer_id a = add_far(w, NULL), b = add_far(w, NULL), c = add_far(w, NULL);
    tw_timer_id foreign = add_far(other, NULL);
    CHECK_OK(tw_delete(w, a));
    tw_timer_id reuser = add_far(w, NULL); /* may take a's slot: a must not reach it */
    long before = atomic_get(&drops);
    tw_timer_id ids[] = {b, b, a, 0, foreign, c};
    tw_status want[] = {TW_OK, TW_ERR_NOT_FOUND, TW_ERR_NOT_FOUND,
                        TW_ERR_NOT_FOUND, TW_ERR_NOT_FOUND, TW_OK};
    tw_status statuses[6];
    fill(statuses, 6);
    CHECK_OK(tw_delete_many(w, ids, 6, statuses));
    for (int i = 0; i < 6; i++) CHECK_STATUS(statuses[i], want[i]);
    CHECK(atomic_get(&drops) == before + 2); /* b and c, once each */
    CHECK(pending(w) == 1);                  /* the reuser */
    CHECK(pending(other) == 1);              /* the foreign timer */
    CHECK_OK(tw_delete(w, reuser));
    CHECK_OK(tw_delete(other, foreign));
    CHECK_OK(tw_destroy(w));
    CHECK_OK(tw_destroy(other));
}

static long fired;

static void count_fire(tw_timer_id id, void *data) {
    (void)id;
    (void)data;
    atomic_add(&fired, 1);
}

static void test_reset_many_statuses_and_delays(void) {
    tw_wheel *w = virtual_wheel_at(0);
    tw_wheel *other = virtual_wheel_at(0);
    tw_timer_id a, b, gone, foreign;
    CHECK_OK(tw_add(w, 10, count_fire, NULL, NULL, &a));
    CHECK_OK(tw_add(w, 10, count_fire, NULL, NULL, &b));
    CHECK_OK(tw_add(w, 10, count_fire, NULL, NULL, &gone));
    CHECK_OK(tw_add(other, 10, count_fire, NULL, NULL, &foreign));
    CHECK_OK(tw_delete(w, gone));
    tw_timer_id ids[] = {a, b, a, gone, 0, foreign};
    uint64_t delays[] = {100, 5, 50, 1, 1, 1};
    tw_status want[] = {TW_OK, TW_OK, TW_OK, TW_ERR_NOT_FOUND, TW_ERR_NOT_FOUND,
                        TW_ERR_NOT_FOUND};
    tw_status statuses[6];
    fill(statuses, 6);
    long before = atomic_get(&fired);
    CHECK_OK(tw_reset_many(w, ids, delays, 6, statuses));
    for (int i = 0; i < 6; i++) CHECK_STATUS(statuses[i], want[i]);
    size_t ran = 0;
    CHECK_OK(tw_advance(w, 20, &ran));
    CHECK(ran == 1); /* b at 5 ms; a was moved on */
    CHECK_OK(tw_advance(w, 40, &ran));
    CHECK(ran == 1); /* a at 50 ms: the later delay of the batch holds, not 100 */
    CHECK(atomic_get(&fired) == before + 2);
    CHECK_OK(tw_advance(other, 20, &ran));
    CHECK(ran == 1); /* the foreign timer was not moved */
    CHECK_OK(tw_destroy(w));
    CHECK_OK(tw_destroy(other));
}

/* ---- a drop function that deletes the same ids again ---------------------------------- */

#define REENTERED 4

typedef struct {
    tw_wheel *w;
    tw_timer_id ids[REENTERED];
    long drops[REENTERED];
    long inner_ok; /* TW_OK statuses seen by the batches run from drops */
} reentry;

typedef struct {
    reentry *r;
    int index;
} reentry_timer;

static void reentering_drop(void *data) {
    reentry_timer *t = data;
    atomic_add(&t->r->drops[t->index], 1);
    tw_status statuses[REENTERED];
    fill(statuses, REENTERED);
    CHECK_OK(tw_delete_many(t->r->w, t->r->ids, REENTERED, statuses));
    for (int i = 0; i < REENTERED; i++) {
        CHECK(statuses[i] == TW_OK || statuses[i] == TW_ERR_NOT_FOUND);
        if (statuses[i] == TW_OK) t->r->inner_ok++;
    }
}

static void reentered_by_drops(tw_wheel *w) {
    reentry r;
    memset(&r, 0, sizeof r);
    r.w = w;
    reentry_timer timers[REENTERED];
    for (int i = 0; i < REENTERED; i++) {
        timers[i] = (reentry_timer){&r, i};
        CHECK_OK(tw_add(w, HOUR_MS, never_runs, &timers[i], reentering_drop, &r.ids[i]));
    }
    tw_status statuses[REENTERED];
    fill(statuses, REENTERED);
    CHECK_OK(tw_delete_many(w, r.ids, REENTERED, statuses));
    /* Each timer is deleted once: by the outer batch or by a batch inside a drop. */
    long ok = r.inner_ok;
    for (int i = 0; i < REENTERED; i++) {
        CHECK(statuses[i] == TW_OK || statuses[i] == TW_ERR_NOT_FOUND);
        ok += statuses[i] == TW_OK;
        CHECK(atomic_get(&r.drops[i]) == 1);
    }
    CHECK(ok == REENTERED);
    CHECK(statuses[0] == TW_OK);
    CHECK(pending(w) == 0);
    CHECK_OK(tw_destroy(w));
}

static void test_drop_deletes_the_same_ids(void) { reentered_by_drops(virtual_wheel_at(0)); }

static void test_drop_deletes_the_same_ids_threaded(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    reentered_by_drops(w);
}

/* A drop may rewrite the batch's array: each id is read just before it is deleted. */
typedef struct {
    tw_timer_id *ids;
    int blank;
} blanking;

static void blanking_drop(void *data) {
    blanking *b = data;
    b->ids[b->blank] = 0;
}

static void test_drop_rewrites_the_ids_ahead(void) {
    tw_wheel *w = virtual_wheel_at(0);
    tw_timer_id ids[2];
    blanking b = {ids, 1};
    CHECK_OK(tw_add(w, HOUR_MS, never_runs, &b, blanking_drop, &ids[0]));
    tw_timer_id kept = add_far(w, NULL);
    ids[1] = kept;
    tw_status statuses[2];
    CHECK_OK(tw_delete_many(w, ids, 2, statuses));
    CHECK_STATUS(statuses[0], TW_OK);
    CHECK_STATUS(statuses[1], TW_ERR_NOT_FOUND); /* it read 0, not the id before the drop */
    CHECK(pending(w) == 1);
    CHECK_OK(tw_delete(w, kept));
    CHECK_OK(tw_destroy(w));
}

/* ---- batches while the wheel is destroyed --------------------------------------------- */

typedef struct {
    tw_wheel *w;
    tw_timer_id far[3];
    long started;
    tw_status reset_statuses[3];
    tw_status delete_statuses[3];
    long calls_ok;
} destroyed;

/* Re-arms the far timers until tw_destroy has begun (it then waits for this callback),
 * then deletes them: every status is TW_ERR_SHUTDOWN, and destroy still drops them. */
static void batch_during_destroy(tw_timer_id id, void *data) {
    (void)id;
    destroyed *d = data;
    uint64_t delays[3] = {HOUR_MS, HOUR_MS, HOUR_MS};
    atomic_set(&d->started, 1);
    for (int i = 0; i < 5000; i++) {
        d->calls_ok += tw_reset_many(d->w, d->far, delays, 3, d->reset_statuses) == TW_OK;
        if (d->reset_statuses[0] != TW_OK) break;
        sleep_ms(1);
    }
    d->calls_ok += tw_delete_many(d->w, d->far, 3, d->delete_statuses) == TW_OK;
}

static void shutdown_drop(void *data) {
    destroyed *d = data;
    tw_status statuses[3];
    fill(statuses, 3);
    /* Run by tw_destroy: the siblings are being discarded, not deleted. */
    CHECK_OK(tw_delete_many(d->w, d->far, 3, statuses));
    for (int i = 0; i < 3; i++) CHECK_STATUS(statuses[i], TW_ERR_SHUTDOWN);
    atomic_add(&drops, 1);
}

static void test_batches_during_destroy(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    destroyed d;
    memset(&d, 0, sizeof d);
    CHECK_OK(tw_create(&cfg, &d.w));
    for (int i = 0; i < 3; i++)
        CHECK_OK(tw_add(d.w, HOUR_MS, never_runs, &d, shutdown_drop, &d.far[i]));
    tw_timer_id id;
    CHECK_OK(tw_add(d.w, 1, batch_during_destroy, &d, NULL, &id));
    CHECK(wait_for(&d.started, 1, WAIT_MS));
    long before = atomic_get(&drops);
    CHECK_OK(tw_destroy(d.w));
    CHECK(atomic_get(&drops) == before + 3); /* each far timer dropped once, by destroy */
    for (int i = 0; i < 3; i++) {
        CHECK_STATUS(d.reset_statuses[i], TW_ERR_SHUTDOWN);
        CHECK_STATUS(d.delete_statuses[i], TW_ERR_SHUTDOWN);
    }
    CHECK(d.calls_ok >= 2); /* the call itself succeeds: the statuses say what happened */
}

/* A drop run by the batch destroys the wheel without waiting: the batch goes on with the
 * ids after it (each TW_ERR_SHUTDOWN), and the wheel is freed only once the batch returned
 * (it was freed inside the drop, and the batch read it after: a use after free). */
static tw_wheel *nowait_wheel;
static tw_status nowait_status;

static void destroying_drop(void *data) {
    (void)data;
    atomic_add(&drops, 1);
    if (nowait_status == UNSET) nowait_status = tw_destroy_nowait(nowait_wheel);
}

static void test_drop_destroys_the_wheel_without_waiting(void) {
    for (int round = 0; round < 200; round++) {
        tw_timer_id ids[4];
        tw_status statuses[4];
        fill(statuses, 4);
        nowait_status = UNSET;
        CHECK_OK(tw_create(NULL, &nowait_wheel));
        for (int i = 0; i < 4; i++)
            CHECK_OK(tw_add(nowait_wheel, HOUR_MS, never_runs, NULL, destroying_drop, &ids[i]));
        long before = atomic_get(&drops);
        CHECK_OK(tw_delete_many(nowait_wheel, ids, 4, statuses));
        CHECK_STATUS(nowait_status, TW_OK);
        CHECK_STATUS(statuses[0], TW_OK);
        for (int i = 1; i < 4; i++) CHECK_STATUS(statuses[i], TW_ERR_SHUTDOWN);
        CHECK(atomic_get(&drops) == before + 4); /* the first by the delete, three by destroy */
    }
}

int main(void) {
    RUN(test_null_arrays_change_nothing);
    RUN(test_delete_many_statuses);
    RUN(test_reset_many_statuses_and_delays);
    RUN(test_drop_deletes_the_same_ids);
    RUN(test_drop_deletes_the_same_ids_threaded);
    RUN(test_drop_rewrites_the_ids_ahead);
    RUN(test_batches_during_destroy);
    RUN(test_drop_destroys_the_wheel_without_waiting);
    return check_summary("test_batch");
}
