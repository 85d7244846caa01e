/*
 * Timer groups through the C ABI (docs/contract.md, "Timer groups"): every timer's drop
 * exactly once and the group's drop exactly once, after them; a group drop that calls back
 * into the library; a group deleted from one of its own callbacks; closing from a callback;
 * timers added from one thread while another deletes the group (randomized; run under ASan
 * by `make test-c-asan C_TESTS=test_groups`); stale and foreign ids; tw_destroy with open
 * groups.
 */
#include "check.h"

#include <pthread.h>

/* A group's or a timer's record of its drop: how many times it ran, and how many timer
 * drops of its group had happened when the group's ran. */
typedef struct {
    long timer_drops;     /* drops of the group's timers */
    long group_drops;     /* drops of the group itself */
    long timers_at_group; /* timer_drops when the group's drop ran */
    long runs;
} counts;

static void count_timer_drop(void *p) { atomic_add(&((counts *)p)->timer_drops, 1); }

static void count_group_drop(void *p) {
    counts *c = p;
    atomic_set(&c->timers_at_group, atomic_get(&c->timer_drops));
    atomic_add(&c->group_drops, 1);
}

static void count_run(tw_timer_id id, void *p) {
    (void)id;
    atomic_add(&((counts *)p)->runs, 1);
}

static void noop(tw_timer_id id, void *p) {
    (void)id;
    (void)p;
}

static tw_wheel *threaded_wheel(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.max_workers = 2;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    return w;
}

static void every_drop_once_and_the_group_after_them(void) {
    tw_wheel *w = threaded_wheel();
    counts c = {0};
    tw_group_id g = 0;
    tw_timer_id t = 0;
    CHECK_OK(tw_group_create(w, &c, count_group_drop, &g));
    CHECK_OK(tw_group_add(w, g, 1, count_run, &c, count_timer_drop, &t));
    CHECK_OK(tw_group_add_periodic(w, g, 1, 1, TW_FIXED_RATE, count_run, &c, count_timer_drop, &t));
    CHECK_OK(tw_group_add_at(w, g, INT64_MAX / 2, count_run, &c, count_timer_drop, &t));
    CHECK(wait_for(&c.runs, 3, 10000)); /* the one-shot fired: the group lives on */
    CHECK(atomic_get(&c.group_drops) == 0);
    CHECK_OK(tw_group_add_periodic_at(w, g, tw_now_ms(w) + 60000, 1000, TW_FIXED_RATE,
                                      TW_MISSED_SKIP, count_run, &c, count_timer_drop, &t));
    CHECK_OK(tw_group_close(w, g));
    CHECK_STATUS(tw_group_add(w, g, 1, count_run, &c, count_timer_drop, &t), TW_ERR_GROUP_CLOSED);
    CHECK_STATUS(tw_group_close(w, g), TW_ERR_GROUP_CLOSED);
    CHECK_OK(tw_group_delete(w, g));
    CHECK(wait_for(&c.group_drops, 1, 10000));
    CHECK(atomic_get(&c.timer_drops) == 4);
    CHECK(atomic_get(&c.timers_at_group) == 4);
    CHECK_STATUS(tw_group_delete(w, g), TW_ERR_NOT_FOUND);
    CHECK_OK(tw_destroy(w));
    CHECK(c.group_drops == 1 && c.timer_drops == 4);
}

/* The group's drop calls back in: into its own group (ended: not found), a new group, a
 * timer, and tw_destroy (busy, as from any drop). */
typedef struct {
    tw_wheel *w;
    tw_group_id self;
    tw_status own_add, own_close, own_delete, create, delete_new, add, destroy;
    long done;
} reentry;

static void reentering_group_drop(void *p) {
    reentry *r = p;
    tw_timer_id t = 0;
    tw_group_id g = 0;
    r->own_add = tw_group_add(r->w, r->self, 1, noop, NULL, NULL, &t);
    r->own_close = tw_group_close(r->w, r->self);
    r->own_delete = tw_group_delete(r->w, r->self);
    r->create = tw_group_create(r->w, NULL, NULL, &g);
    r->delete_new = tw_group_delete(r->w, g);
    r->add = tw_add(r->w, 0, noop, NULL, NULL, &t);
    r->destroy = tw_destroy(r->w);
    atomic_set(&r->done, 1);
}

static void a_group_drop_calls_back_into_the_library(void) {
    tw_wheel *w = threaded_wheel();
    reentry r = {.w = w};
    counts c = {0};
    tw_timer_id t = 0;
    CHECK_OK(tw_group_create(w, &r, reentering_group_drop, &r.self));
    CHECK_OK(tw_group_add(w, r.self, 1, count_run, &c, count_timer_drop, &t));
    CHECK_OK(tw_group_close(w, r.self));
    CHECK(wait_for(&r.done, 1, 10000));
    CHECK_STATUS(r.own_add, TW_ERR_NOT_FOUND);
    CHECK_STATUS(r.own_close, TW_ERR_NOT_FOUND);
    CHECK_STATUS(r.own_delete, TW_ERR_NOT_FOUND);
    CHECK_OK(r.create);
    CHECK_OK(r.delete_new);
    CHECK_OK(r.add);
    CHECK_STATUS(r.destroy, TW_ERR_BUSY);
    CHECK(c.timer_drops == 1);
    CHECK_OK(tw_destroy(w));
}

/* A periodic timer of the group deletes its own group from its callback. */
typedef struct {
    tw_wheel *w;
    tw_group_id g;
    counts c;
    tw_status deleted;
} self_deleting;

static void self_deleting_drop(void *p) { count_timer_drop(&((self_deleting *)p)->c); }

static void delete_own_group(tw_timer_id id, void *p) {
    self_deleting *s = p;
    (void)id;
    if (atomic_add(&s->c.runs, 1) == 1) {
        s->deleted = tw_group_delete(s->w, s->g);
        sleep_ms(20); /* the group must outlive this run */
        CHECK(atomic_get(&s->c.group_drops) == 0);
    }
}

static void a_group_deleted_from_its_own_callback(void) {
    tw_wheel *w = threaded_wheel();
    self_deleting s = {.w = w};
    tw_timer_id t = 0;
    CHECK_OK(tw_group_create(w, &s.c, count_group_drop, &s.g));
    CHECK_OK(tw_group_add(w, s.g, 60000, count_run, &s.c, count_timer_drop, &t));
    CHECK_OK(tw_group_add_periodic(w, s.g, 1, 1, TW_FIXED_RATE, delete_own_group, &s,
                                   self_deleting_drop, &t));
    CHECK(wait_for(&s.c.group_drops, 1, 10000));
    CHECK_OK(s.deleted);
    CHECK(atomic_get(&s.c.runs) == 1);
    CHECK(atomic_get(&s.c.timers_at_group) == 2);
    sleep_ms(20);
    CHECK(atomic_get(&s.c.runs) == 1); /* no run after the delete */
    CHECK_OK(tw_destroy(w));
}

/* The owner closes the group from its only timer's callback: the group's drop follows that
 * timer's drop. */
static void close_own_group(tw_timer_id id, void *p) {
    self_deleting *s = p;
    (void)id;
    s->deleted = tw_group_close(s->w, s->g);
    CHECK(atomic_get(&s->c.group_drops) == 0);
}

static void closing_from_a_callback(void) {
    tw_wheel *w = threaded_wheel();
    self_deleting s = {.w = w};
    tw_timer_id t = 0;
    CHECK_OK(tw_group_create(w, &s.c, count_group_drop, &s.g));
    CHECK_OK(tw_group_add(w, s.g, 1, close_own_group, &s, self_deleting_drop, &t));
    CHECK(wait_for(&s.c.group_drops, 1, 10000));
    CHECK_OK(s.deleted);
    CHECK(atomic_get(&s.c.timers_at_group) == 1);
    CHECK_OK(tw_destroy(w));
}

/* ---- one thread adds into a group while another deletes it ------------------------- */

typedef struct {
    tw_wheel *w;
    tw_group_id g;
    counts c;
    long accepted;
    long refused_wrongly;
    unsigned seed;
} race;

static unsigned next_random(unsigned *seed) {
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) & 0x7fff;
}

/* At most this many adds a round: under valgrind, which runs one thread at a time, an
 * unbounded adder could fill the wheel before the deleting thread gets its turn. */
#define MAX_ADDS_PER_ROUND 2000

static void *adder(void *p) {
    race *r = p;
    unsigned seed = r->seed;
    for (int n = 0; n < MAX_ADDS_PER_ROUND; n++) {
        tw_timer_id t = 0;
        unsigned pick = next_random(&seed);
        tw_status s = pick % 3 == 0
                          ? tw_group_add_periodic(r->w, r->g, pick % 3, 1 + pick % 2, TW_FIXED_RATE,
                                                  count_run, &r->c, count_timer_drop, &t)
                          : tw_group_add(r->w, r->g, pick % 4, count_run, &r->c, count_timer_drop, &t);
        if (s == TW_OK) {
            atomic_add(&r->accepted, 1);
        } else if (s == TW_ERR_GROUP_CLOSED || s == TW_ERR_NOT_FOUND) {
            return NULL; /* deleted: closed while it has timers, not found once it ended */
        } else {
            atomic_add(&r->refused_wrongly, 1);
            return NULL;
        }
    }
    return NULL;
}

static void timers_added_while_another_thread_deletes_the_group(void) {
    /* fewer rounds under valgrind (the harness sets TW_STRESS_OPS) */
    long rounds = env_long("TW_GROUP_ROUNDS", env_long("TW_STRESS_OPS", 0) ? 10 : 200);
    tw_wheel *w = threaded_wheel();
    for (long i = 0; i < rounds; i++) {
        race r = {.w = w, .seed = (unsigned)(i * 7919 + 1)};
        CHECK_OK(tw_group_create(w, &r.c, count_group_drop, &r.g));
        pthread_t thread;
        pthread_create(&thread, NULL, adder, &r);
        unsigned seed = r.seed;
        struct timespec pause = {0, (long)(next_random(&seed) % 2000) * 1000};
        nanosleep(&pause, NULL);
        CHECK_OK(tw_group_delete(w, r.g));
        pthread_join(thread, NULL);
        CHECK(wait_for(&r.c.group_drops, 1, 10000));
        CHECK(atomic_get(&r.refused_wrongly) == 0);
        CHECK(atomic_get(&r.c.timer_drops) == atomic_get(&r.accepted));
        CHECK(atomic_get(&r.c.timers_at_group) == atomic_get(&r.accepted));
        sleep_ms(2);
        CHECK(atomic_get(&r.c.group_drops) == 1);
    }
    tw_stats st;
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    CHECK_OK(tw_get_stats(w, &st));
    CHECK(st.pending == 0);
    CHECK_OK(tw_destroy(w));
}

static void stale_and_foreign_group_ids(void) {
    tw_wheel *w = threaded_wheel(), *other = threaded_wheel();
    counts c = {0};
    tw_group_id g = 0, theirs = 0;
    tw_timer_id t = 0, unused = 0;
    CHECK_OK(tw_group_create(w, &c, count_group_drop, &g));
    CHECK_OK(tw_group_create(other, NULL, NULL, &theirs));
    CHECK_OK(tw_group_add(w, g, 60000, count_run, &c, count_timer_drop, &t));
    tw_group_id wrong[] = {0, theirs, (tw_group_id)t, g ^ 1};
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        CHECK_STATUS(tw_group_add(w, wrong[i], 1, count_run, &c, count_timer_drop, &unused),
                     TW_ERR_NOT_FOUND);
        CHECK_STATUS(tw_group_close(w, wrong[i]), TW_ERR_NOT_FOUND);
        CHECK_STATUS(tw_group_delete(w, wrong[i]), TW_ERR_NOT_FOUND);
    }
    CHECK_STATUS(tw_delete(w, (tw_timer_id)g), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_group_create(w, NULL, NULL, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_group_close(NULL, g), TW_ERR_INVALID);
    CHECK(c.timer_drops == 0); /* untouched by any of these */
    CHECK_OK(tw_group_delete(w, g));
    CHECK(c.timer_drops == 1 && c.group_drops == 1);
    CHECK_STATUS(tw_group_delete(w, g), TW_ERR_NOT_FOUND); /* stale */
    tw_group_id again = 0;
    CHECK_OK(tw_group_create(w, NULL, NULL, &again));
    CHECK(again != g);
    CHECK_STATUS(tw_group_add(w, g, 1, count_run, &c, count_timer_drop, &unused), TW_ERR_NOT_FOUND);
    CHECK(c.timer_drops == 1); /* a refused add calls neither cb nor drop */
    CHECK_OK(tw_destroy(other));
    CHECK_OK(tw_destroy(w));
}

static void destroy_with_open_groups_drops_them_after_their_timers(void) {
    tw_wheel *w = threaded_wheel();
    counts a = {0}, b = {0};
    tw_group_id ga = 0, gb = 0;
    tw_timer_id t = 0;
    CHECK_OK(tw_group_create(w, &a, count_group_drop, &ga));
    CHECK_OK(tw_group_create(w, &b, count_group_drop, &gb));
    for (int i = 0; i < 5; i++) {
        CHECK_OK(tw_group_add(w, ga, 60000, count_run, &a, count_timer_drop, &t));
    }
    CHECK_OK(tw_group_add_periodic(w, ga, 60000, 1000, TW_FIXED_DELAY, count_run, &a,
                                   count_timer_drop, &t));
    CHECK_OK(tw_destroy(w));
    CHECK(a.timer_drops == 6 && a.group_drops == 1 && a.timers_at_group == 6);
    CHECK(b.timer_drops == 0 && b.group_drops == 1);
}


/* A drop function that tries to destroy its wheel: every drop is "inside" the wheel, on
 * whatever thread it runs, so tw_destroy must be TW_ERR_BUSY there and change nothing. */
static tw_wheel *destroy_target;
static long destroy_attempts, destroy_not_busy;

static void drop_that_destroys(void *p) {
    (void)p;
    atomic_add(&destroy_attempts, 1);
    if (tw_destroy(destroy_target) != TW_ERR_BUSY) atomic_add(&destroy_not_busy, 1);
}

static void exporter_creates_groups(void *ctx, const tw_timer_info *info) {
    long *refused = ctx;
    (void)info;
    for (int i = 0; i < 100; i++) {
        tw_group_id g = 0;
        if (tw_group_create(destroy_target, NULL, drop_that_destroys, &g) == TW_ERR_BUSY && g == 0)
            (*refused)++;
    }
}

static void a_drop_run_on_the_callers_thread_cannot_destroy_the_wheel(void) {
    tw_wheel *w = threaded_wheel();
    destroy_target = w;
    atomic_set(&destroy_attempts, 0);
    atomic_set(&destroy_not_busy, 0);
    tw_timer_id t = 0, t2 = 0;
    tw_group_id g = 0;
    /* tw_delete and tw_delete_sync run the drop on this thread, outside any callback */
    CHECK_OK(tw_add(w, 100000, noop, NULL, drop_that_destroys, &t));
    CHECK_OK(tw_delete(w, t));
    CHECK_OK(tw_add(w, 100000, noop, NULL, drop_that_destroys, &t));
    CHECK_OK(tw_delete_sync(w, t));
    /* tw_group_delete runs the timers' and the group's drops here too */
    CHECK_OK(tw_group_create(w, NULL, drop_that_destroys, &g));
    CHECK_OK(tw_group_add(w, g, 100000, noop, NULL, drop_that_destroys, &t));
    CHECK_OK(tw_group_delete(w, g));
    /* closing an empty group drops it before it returns */
    CHECK_OK(tw_group_create(w, NULL, drop_that_destroys, &g));
    CHECK_OK(tw_group_close(w, g));
    CHECK(atomic_get(&destroy_attempts) == 5);
    CHECK(atomic_get(&destroy_not_busy) == 0);
    /* the wheel is whole: it takes timers and runs them */
    counts c = {0};
    CHECK_OK(tw_add(w, 1, count_run, &c, NULL, &t2));
    CHECK(wait_for(&c.runs, 1, 10000));
    CHECK_OK(tw_destroy(w));
}

static void a_refused_group_create_keeps_nothing(void) {
    tw_wheel *w = threaded_wheel();
    destroy_target = w;
    atomic_set(&destroy_attempts, 0);
    tw_timer_id t = 0;
    CHECK_OK(tw_add(w, 100000, noop, NULL, NULL, &t));
    long refused = 0;
    CHECK_OK(tw_export(w, exporter_creates_groups, &refused, NULL));
    /* refused from the export's function: BUSY, the drop never called, and (under ASan's
     * leak check) nothing of the refused data kept */
    CHECK(refused == 100);
    CHECK(atomic_get(&destroy_attempts) == 0);
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(every_drop_once_and_the_group_after_them);
    RUN(a_group_drop_calls_back_into_the_library);
    RUN(a_group_deleted_from_its_own_callback);
    RUN(closing_from_a_callback);
    RUN(timers_added_while_another_thread_deletes_the_group);
    RUN(stale_and_foreign_group_ids);
    RUN(destroy_with_open_groups_drops_them_after_their_timers);
    RUN(a_drop_run_on_the_callers_thread_cannot_destroy_the_wheel);
    RUN(a_refused_group_create_keeps_nothing);
    return check_summary("test_groups");
}
