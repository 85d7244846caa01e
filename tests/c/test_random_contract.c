/*
 * The contract under random concurrent use, through the C ABI: test threads, callbacks and
 * drop functions do random operations on three wheels (two with threads and few workers,
 * one manual wheel polled by a thread) and on scratch wheels that callbacks and drops
 * destroy. Every timer's user data is a heap record that is freed as soon as the library
 * is done with it (when its drop has returned, or right after tw_delete_sync returned
 * TW_OK), so ASan (make test-c-asan) turns any late callback or drop into a
 * heap-use-after-free; a state machine per record checks the rest as it happens:
 * - never early: a run starts at or after its deadline (add or reset time + delay; for
 *   fixed rate the exact point add time + delay + n * period; for fixed delay the return
 *   of the previous run + period);
 * - a one-shot runs at most once, and never when a delete returned TW_OK; no run of a
 *   periodic timer starts after a delete of it returned TW_OK;
 * - runs of one timer never overlap; the drop comes exactly once, after the last run
 *   returned; tw_delete_sync returns TW_OK only after the drop returned;
 * - a delete or reset says NOT_FOUND only for a timer that started (one-shot) or was
 *   deleted; TW_OK only for a timer that had not ended;
 * - tw_destroy of a scratch wheel (from a callback or drop of another wheel) returns with
 *   every timer of it dropped; tw_destroy_nowait from the wheel's own callback or drop
 *   has dropped every timer that is not running; later calls there say TW_ERR_SHUTDOWN;
 * - at a quiet moment each wheel's counters equal what the test saw, and
 *   added = fired_one_shot + cancelled + pending; after tw_destroy every record was
 *   dropped exactly once and freed.
 *
 * One-shots are reset by anyone (one caller at a time per timer), fixed-delay timers by
 * their own callback; fixed-rate timers are not reset, so that their exact points hold.
 *
 * A call knows that no run it cannot see was under way when it targets the manual wheel
 * while no poll runs, or comes from the only thread that runs its wheel's callbacks (the
 * poller; the one worker): then a delete of a periodic timer that returned TW_OK allows
 * no later run at all, and a one-shot not found must have begun its run already.
 * Elsewhere a run may have started inside the library and not yet reached the callback,
 * and one such run is allowed if it was due before the delete returned.
 *
 * Waits never form a cycle, so a hang is the library's: only test threads and "blocker"
 * timers (their callbacks and drops) call tw_delete_sync, and from callbacks and drops
 * only on "leaf" timers, whose callbacks and drops never wait (they delete leaves only, so
 * the drop a delete runs on their thread is a leaf's too). A watchdog aborts a hang.
 *
 * TW_SEED repeats a run's choices (the threads' timing still varies), TW_STRESS_OPS sets
 * the operations per thread, TW_WATCHDOG_S the seconds before a hang is declared. The fuzz
 * target `threads` (fuzz/threads/contract.c) runs this test with its input as `choices`:
 * each test thread takes its first choices from its share of the input.
 */
#include "check.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#define THREADS 4
#define SLOTS 128
#define MAIN_WHEELS 3
#define ONE_WORKER_WHEEL 1 /* one worker, and max_timers: adds may say TW_ERR_FULL */
#define MANUAL_WHEEL 2
#define LIVE_CAP 600     /* pending timers on the main wheels the test keeps at most */
#define PERIODIC_CAP 24  /* of which periodic */
#define SCRATCH_CAP 3    /* scratch wheels at once */
#define LONG_DELAY_MS 600000 /* a timer that only a delete or the destroy ends */
#define MAX_REPORTS 40
#define MS 1000000LL

/* ---- randomness: one stream per thread, all derived from the seed --------------------- */

static uint64_t seed;
static __thread uint64_t rng_state;
static long rng_streams;
/* Choices given from outside (the fuzzer's input), shared out among the test threads;
 * a thread draws from its share, then from its stream. */
static const unsigned char *choices;
static size_t choices_len;
static __thread const unsigned char *choice_next, *choice_end;

static uint64_t splitmix(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* The next given choice below n: one byte, two for n above 256. */
static unsigned given_choice(unsigned n) {
    unsigned value = *choice_next++;
    if (n > 256 && choice_next < choice_end) value = value << 8 | *choice_next++;
    return value % n;
}

static unsigned pick(unsigned n) {
    if (choice_next < choice_end) return given_choice(n);
    if (rng_state == 0) /* a library thread: a stream of its own */
        rng_state = splitmix(seed + 1000 + (uint64_t)atomic_add(&rng_streams, 1)) | 1;
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* ---- what the test tracks ------------------------------------------------------------- */

typedef enum { ONE_SHOT, FIXED_RATE, FIXED_DELAY } kind;

/* Who a timer's callback and drop may wait for (see the top of the file). SCRATCH_LEAF
 * timers live in a scratch wheel and call nothing; a SCRATCH_KILLER destroys its own
 * scratch wheel with tw_destroy_nowait, from its callback or its drop. */
typedef enum { LEAF, BLOCKER, SCRATCH_LEAF, SCRATCH_KILLER } role;

/* Who makes a call: a test thread, or a leaf's or a blocker's callback or drop. */
typedef enum { FROM_THREAD, FROM_LEAF, FROM_BLOCKER } context;

typedef struct scratch {
    tw_wheel *w;
    long added, dropped;
    long busy; /* timers whose callback started and whose drop has not begun */
    struct scratch *next;
} scratch;

typedef struct {
    tw_wheel *w;
    const char *name;
    long added, fired_one_shot, cancelled, dropped; /* what the test saw */
    long destroying;
} main_wheel;

typedef struct record {
    kind kind;
    role role;
    int home;           /* index into wheels[], or -1 for a timer of a scratch wheel */
    tw_wheel *w;
    scratch *in_scratch; /* the scratch wheel it lives in */
    scratch *owned;      /* a blocker's scratch wheel, destroyed by its callback or drop */
    int kill_in_drop;    /* a SCRATCH_KILLER: destroy from the drop, not the callback */
    int slot;
    uint64_t delay_ms, period_ms;
    int64_t added_at, delay, period; /* ns */
    tw_timer_id id;
    long refs; /* the library's (until its drop ends), the adder's, one per operation */
    long accepted;
    long resetting; /* the token of the one caller resetting it */
    long drop_started, drop_done;
    pthread_mutex_t mu; /* guards the fields below; never held across a library call */
    int64_t not_before; /* the next run starts no earlier */
    int64_t reset_to;   /* the deadline of a reset under way (it may hold already), or 0 */
    long runs, running;
    long deleted;          /* deletes that returned TW_OK */
    int64_t deleted_at;    /* when the first of them returned */
    long no_run_after_delete; /* the delete knew that no run was started but not begun */
    long runs_after_delete;
    int64_t not_found_at; /* the earliest return of a delete or reset that said NOT_FOUND */
} record;

static main_wheel wheels[MAIN_WHEELS];
static struct {
    pthread_mutex_t mu;
    record *rec;
} slots[SLOTS];

static pthread_mutex_t scratch_mu = PTHREAD_MUTEX_INITIALIZER;
static scratch *scratch_list;

static long quiescing, ops_inflight, stop_polling, finished;
static long poll_seq;                      /* odd while the poller is inside tw_poll */
static __thread int runs_callbacks_of = -1; /* the main wheel whose callbacks this thread runs */
static long live_records, live_main, live_periodic, live_scratch;
static long accepted_total, dropped_total, reports;
static const char *phase = "start";

/* What happened, printed at the end: proof that the paths were taken. */
static long n_runs, n_deleted, n_synced, n_synced_inside, n_reset, n_callback_calls, n_drop_calls,
    n_destroyed_inside, n_killed_in_cb, n_killed_in_drop, n_full;

static const char *kind_name(kind k) {
    return k == ONE_SHOT ? "one-shot" : k == FIXED_RATE ? "fixed-rate" : "fixed-delay";
}

static void violation(const record *r, const char *fmt, ...) {
    __atomic_add_fetch(&check_failures_now, 1, __ATOMIC_SEQ_CST);
    if (atomic_add(&reports, 1) > MAX_REPORTS) return;
    char msg[256];
    va_list args;
    va_start(args, fmt);
    vsnprintf(msg, sizeof msg, fmt, args);
    va_end(args);
    if (r == NULL) {
        fprintf(stderr, "VIOLATION (TW_SEED=%llu): %s\n", (unsigned long long)seed, msg);
        return;
    }
    fprintf(stderr, "VIOLATION (TW_SEED=%llu): %s [%s timer %#llx on %s, delay %llu ms, "
            "period %llu ms]\n", (unsigned long long)seed, msg, kind_name(r->kind),
            (unsigned long long)__atomic_load_n(&r->id, __ATOMIC_SEQ_CST),
            r->home >= 0 ? wheels[r->home].name : "a scratch wheel",
            (unsigned long long)r->delay_ms, (unsigned long long)r->period_ms);
}

static void expect_status(const record *r, const char *call, tw_status got, tw_status want) {
    if (got != want)
        violation(r, "%s gave %s, expected %s", call, tw_status_str(got), tw_status_str(want));
}

/* ---- records: created with two references (the library's and the adder's) ------------ */

static record *record_new(kind k, role ro, int home, tw_wheel *w, uint64_t delay_ms,
                          uint64_t period_ms) {
    record *r = calloc(1, sizeof *r);
    r->kind = k;
    r->role = ro;
    r->home = home;
    r->w = w;
    r->slot = home >= 0 ? (int)pick(SLOTS) : -1;
    r->delay_ms = delay_ms;
    r->period_ms = period_ms;
    r->delay = (int64_t)delay_ms * MS;
    r->period = (int64_t)period_ms * MS;
    r->refs = 2;
    pthread_mutex_init(&r->mu, NULL);
    atomic_add(&live_records, 1);
    return r;
}

/* What must hold once nobody holds the record any more. */
static void check_end_of_life(record *r) {
    if (!r->accepted) {
        if (r->runs || r->drop_started) violation(r, "a refused add's callback or drop ran");
        return;
    }
    if (r->kind == ONE_SHOT && r->deleted && r->runs)
        violation(r, "a one-shot ran although a delete of it returned TW_OK");
    if (r->not_found_at && !r->deleted && (r->kind != ONE_SHOT || !r->runs))
        violation(r, "a delete or reset said NOT_FOUND, but the timer neither ran nor was deleted");
}

static void record_release(record *r) {
    if (atomic_add(&r->refs, -1) != 0) return;
    check_end_of_life(r);
    pthread_mutex_destroy(&r->mu);
    memset(r, 0xdb, sizeof *r);
    free(r);
    atomic_add(&live_records, -1);
}

/* The registry that test threads, callbacks and drops pick their targets from. A record
 * leaves it when its drop begins; taking it out of a slot takes a reference. */
static void publish(record *r) {
    pthread_mutex_lock(&slots[r->slot].mu);
    if (!atomic_get(&r->drop_started)) slots[r->slot].rec = r;
    pthread_mutex_unlock(&slots[r->slot].mu);
}

static void unpublish(record *r) {
    if (r->slot < 0) return;
    pthread_mutex_lock(&slots[r->slot].mu);
    if (slots[r->slot].rec == r) slots[r->slot].rec = NULL;
    pthread_mutex_unlock(&slots[r->slot].mu);
}

static record *acquire(unsigned i) {
    pthread_mutex_lock(&slots[i].mu);
    record *r = slots[i].rec;
    if (r != NULL) atomic_add(&r->refs, 1);
    pthread_mutex_unlock(&slots[i].mu);
    return r;
}

/* A random timer of the registry, or NULL; a periodic one if one of a few tries finds it
 * and `periodic` asks for it (they are few, and their runs are what deletes race with). */
static record *acquire_random(int periodic) {
    record *r = acquire(pick(SLOTS));
    for (int tries = 0; periodic && tries < 8 && (r == NULL || r->kind == ONE_SHOT); tries++) {
        if (r != NULL) record_release(r);
        r = acquire(pick(SLOTS));
    }
    return r;
}

static tw_timer_id id_of(const record *r) { return __atomic_load_n(&r->id, __ATOMIC_SEQ_CST); }

/* Callbacks and drops call the library only between these, and not once quiescing. */
static int enter_ops(void) {
    atomic_add(&ops_inflight, 1);
    if (!atomic_get(&quiescing)) return 1;
    atomic_add(&ops_inflight, -1);
    return 0;
}

static void leave_ops(void) { atomic_add(&ops_inflight, -1); }

/* ---- a run: checks at its start and its end ------------------------------------------- */

/* A periodic run that starts after a delete returned TW_OK is allowed only if it had
 * started inside the library before (then it cannot have been due after the delete). */
static void check_run_after_delete(record *r, int64_t bound) {
    if (r->no_run_after_delete || r->runs_after_delete++ > 0 || bound >= r->deleted_at)
        violation(r, "a run started after a delete returned TW_OK");
}

static void run_begins(record *r, int64_t started) {
    pthread_mutex_lock(&r->mu);
    if (r->drop_started) violation(r, "a callback started after its drop");
    if (r->running) violation(r, "two runs of one timer overlap");
    r->running = 1;
    int64_t bound = r->reset_to && r->reset_to < r->not_before ? r->reset_to : r->not_before;
    if (started < bound)
        violation(r, "run %ld started %lld us early", r->runs, (long long)(bound - started) / 1000);
    if (r->kind == ONE_SHOT) {
        if (r->runs) violation(r, "a one-shot ran twice");
        if (r->deleted) violation(r, "a one-shot ran after a delete returned TW_OK");
        if (r->not_found_at && bound >= r->not_found_at)
            violation(r, "a one-shot started after a delete or reset had said NOT_FOUND");
    } else if (r->deleted) {
        check_run_after_delete(r, bound);
    }
    r->runs++;
    if (r->kind == FIXED_RATE) r->not_before = r->added_at + r->delay + r->runs * r->period;
    pthread_mutex_unlock(&r->mu);
    atomic_add(&n_runs, 1);
    if (r->in_scratch && r->runs == 1) atomic_add(&r->in_scratch->busy, 1);
    if (r->home >= 0 && r->kind == ONE_SHOT) atomic_add(&wheels[r->home].fired_one_shot, 1);
}

/* reset_to: the deadline an own reset gave the next run, or 0. */
static void run_ends(record *r, int64_t reset_to) {
    pthread_mutex_lock(&r->mu);
    if (r->kind == FIXED_DELAY) r->not_before = reset_to ? reset_to : now_ns() + r->period;
    r->running = 0;
    pthread_mutex_unlock(&r->mu);
}

/* ---- operations on a timer ------------------------------------------------------------ */

/* Whether a call on r knew of every run of r the library had started: r is on the manual
 * wheel and no poll overlapped the call, or the call came from the one thread that runs
 * the callbacks of r's wheel. Elsewhere a run may have started in the library and not yet
 * begun here. */
static int saw_every_start(const record *r, long poll_seq_before) {
    if (r->home == runs_callbacks_of && (r->home == MANUAL_WHEEL || r->home == ONE_WORKER_WHEEL))
        return 1;
    return r->home == MANUAL_WHEEL && poll_seq_before % 2 == 0 &&
           atomic_get(&poll_seq) == poll_seq_before;
}

/* exact: the call saw every start, so a one-shot not found had begun its run by then. */
static void note_not_found(record *r, long dropped_before, int64_t returned, int exact) {
    if (dropped_before) return;
    pthread_mutex_lock(&r->mu);
    if (exact && !r->runs) r->not_found_at = 1; /* no run may start at all */
    else if (!r->not_found_at || returned < r->not_found_at) r->not_found_at = returned;
    pthread_mutex_unlock(&r->mu);
}

static void note_deleted(record *r, long dropped_before, int64_t returned, int exact) {
    pthread_mutex_lock(&r->mu);
    if (r->deleted++) violation(r, "two deletes of one timer returned TW_OK");
    if (dropped_before) violation(r, "a delete returned TW_OK for a timer already dropped");
    if (r->deleted == 1) {
        r->deleted_at = returned;
        r->no_run_after_delete = r->running || exact;
    }
    pthread_mutex_unlock(&r->mu);
    atomic_add(&wheels[r->home].cancelled, 1);
}

static void delete_record(record *r, int sync, context from) {
    long dropped_before = atomic_get(&r->drop_started), polls = atomic_get(&poll_seq);
    tw_status st = sync ? tw_delete_sync(r->w, id_of(r)) : tw_delete(r->w, id_of(r));
    int64_t returned = now_ns();
    int exact = saw_every_start(r, polls);
    if (st == TW_OK) {
        note_deleted(r, dropped_before, returned, exact);
        if (sync && !atomic_get(&r->drop_done))
            violation(r, "tw_delete_sync returned TW_OK before the drop function returned");
        atomic_add(sync ? (from == FROM_THREAD ? &n_synced : &n_synced_inside) : &n_deleted, 1);
    } else if (st == TW_ERR_NOT_FOUND) {
        note_not_found(r, dropped_before, returned, exact);
    } else {
        violation(r, "%s gave %s", sync ? "tw_delete_sync" : "tw_delete", tw_status_str(st));
    }
}

/* A reset of a one-shot, by anyone. One caller at a time resets a record, so that the
 * deadline in force is known: the old one or the new one while the call is under way,
 * the new one after TW_OK. Returns the new deadline after TW_OK, else 0. */
static int64_t reset_one_shot(record *r, uint64_t delay_ms) {
    long idle = 0;
    if (!__atomic_compare_exchange_n(&r->resetting, &idle, 1, 0, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST))
        return 0;
    int64_t to = now_ns() + (int64_t)delay_ms * MS;
    pthread_mutex_lock(&r->mu);
    long dropped_before = r->drop_started, ran_before = r->runs, deleted_before = r->deleted;
    r->reset_to = to;
    pthread_mutex_unlock(&r->mu);
    long polls = atomic_get(&poll_seq);
    tw_status st = tw_reset(r->w, id_of(r), delay_ms);
    int64_t returned = now_ns();
    int exact = saw_every_start(r, polls);
    pthread_mutex_lock(&r->mu);
    r->reset_to = 0;
    if (st == TW_OK) r->not_before = to;
    pthread_mutex_unlock(&r->mu);
    if (st == TW_OK && (dropped_before || ran_before || deleted_before))
        violation(r, "tw_reset returned TW_OK for a one-shot that had ended");
    else if (st == TW_ERR_NOT_FOUND)
        note_not_found(r, dropped_before, returned, exact);
    else if (st != TW_OK)
        violation(r, "tw_reset gave %s", tw_status_str(st));
    atomic_set(&r->resetting, 0);
    if (st == TW_OK) atomic_add(&n_reset, 1);
    return st == TW_OK ? to : 0;
}

/* A fixed-delay timer's reset from its own callback: its next run moves there. */
static int64_t reset_own_periodic(record *r, uint64_t delay_ms) {
    int64_t to = now_ns() + (int64_t)delay_ms * MS;
    long deleted_before = atomic_get(&r->deleted);
    tw_status st = tw_reset(r->w, id_of(r), delay_ms);
    if (st == TW_OK && deleted_before) violation(r, "tw_reset returned TW_OK after a delete");
    if (st == TW_ERR_NOT_FOUND) note_not_found(r, 0, now_ns(), 0);
    else if (st != TW_OK) violation(r, "tw_reset of its own timer gave %s", tw_status_str(st));
    if (st == TW_OK) atomic_add(&n_reset, 1);
    return st == TW_OK ? to : 0;
}

/* ---- adding timers -------------------------------------------------------------------- */

static void on_run(tw_timer_id id, void *data);
static void on_drop(void *data);

static uint64_t random_delay_ms(void) {
    unsigned p = pick(100);
    if (p < 10) return 0;
    if (p < 70) return pick(20);
    if (p < 90) return 20 + pick(40);
    return LONG_DELAY_MS;
}

/* Periods that are no multiple of any wheel's tick (700, 300, 450 and 1000 us). */
static uint64_t random_period_ms(void) {
    static const uint64_t periods[] = {2, 4, 5, 8, 11, 13};
    return periods[pick(sizeof periods / sizeof periods[0])];
}

static void count_accepted(record *r) {
    atomic_add(&accepted_total, 1);
    if (r->kind != ONE_SHOT) atomic_add(&live_periodic, 1);
    if (r->home < 0) return;
    atomic_add(&live_main, 1);
    atomic_add(&wheels[r->home].added, 1);
}

/* Adds r to its wheel; on success the record is the library's (and published), on a
 * refusal it is freed here. Returns the status. */
static tw_status add_record(record *r) {
    if (r->in_scratch) atomic_add(&r->in_scratch->added, 1);
    r->added_at = now_ns();
    r->not_before = r->added_at + r->delay;
    tw_timer_id id = 0;
    tw_status st = r->kind == ONE_SHOT
                       ? tw_add(r->w, r->delay_ms, on_run, r, on_drop, &id)
                       : tw_add_periodic(r->w, r->delay_ms, r->period_ms,
                                         r->kind == FIXED_RATE ? TW_FIXED_RATE : TW_FIXED_DELAY,
                                         on_run, r, on_drop, &id);
    if (st == TW_OK) {
        __atomic_store_n(&r->id, id, __ATOMIC_SEQ_CST);
        r->accepted = 1;
        count_accepted(r);
        if (r->home >= 0) publish(r);
        record_release(r);
        return st;
    }
    if (r->in_scratch) atomic_add(&r->in_scratch->added, -1);
    if (st == TW_ERR_FULL && r->home == ONE_WORKER_WHEEL) atomic_add(&n_full, 1);
    else violation(r, "an add gave %s", tw_status_str(st));
    record_release(r);
    record_release(r);
    return st;
}

static role random_main_role(void) { return pick(10) < 7 ? LEAF : BLOCKER; }

/* A timer of a random main wheel, with a random delay (and period). */
static record *main_record(kind k, role ro) {
    int home = (int)pick(MAIN_WHEELS);
    int periodic = k != ONE_SHOT;
    return record_new(k, ro, home, wheels[home].w, periodic ? pick(20) : random_delay_ms(),
                      periodic ? random_period_ms() : 0);
}

static void add_random(int periodic) {
    if (atomic_get(&live_main) >= LIVE_CAP) return;
    if (periodic && atomic_get(&live_periodic) >= PERIODIC_CAP) return;
    kind k = !periodic ? ONE_SHOT : pick(2) ? FIXED_RATE : FIXED_DELAY;
    add_record(main_record(k, random_main_role()));
}

/* ---- scratch wheels --------------------------------------------------------------------- */

static record *scratch_record(scratch *s, kind k, role ro, uint64_t delay_ms, uint64_t period_ms) {
    record *r = record_new(k, ro, -1, s->w, delay_ms, period_ms);
    r->in_scratch = s;
    return r;
}

static scratch *scratch_new(void) {
    if (atomic_add(&live_scratch, 1) > SCRATCH_CAP) {
        atomic_add(&live_scratch, -1);
        return NULL;
    }
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.max_workers = pick(3);
    cfg.min_workers = cfg.max_workers ? 1 : 0;
    scratch *s = calloc(1, sizeof *s);
    expect_status(NULL, "tw_create", tw_create(&cfg, &s->w), TW_OK);
    pthread_mutex_lock(&scratch_mu);
    s->next = scratch_list;
    scratch_list = s;
    pthread_mutex_unlock(&scratch_mu);
    for (unsigned i = 0, n = pick(6); i < n; i++) {
        int periodic = pick(4) == 0;
        add_record(scratch_record(s, periodic ? FIXED_DELAY : ONE_SHOT, SCRATCH_LEAF,
                                  periodic ? pick(5) : random_delay_ms(), periodic ? 3 : 0));
    }
    return s;
}

/* Destroys a scratch wheel from outside it: every timer of it has been dropped when
 * tw_destroy returns. */
static void destroy_scratch(scratch *s) {
    expect_status(NULL, "tw_destroy of a scratch wheel", tw_destroy(s->w), TW_OK);
    if (atomic_get(&s->dropped) != atomic_get(&s->added))
        violation(NULL, "tw_destroy returned with %ld of %ld timers dropped",
                  atomic_get(&s->dropped), atomic_get(&s->added));
    atomic_add(&live_scratch, -1);
}

/* A blocker that owns a scratch wheel: its callback or its drop destroys it. */
static void add_scratch_owner(void) {
    scratch *s = scratch_new();
    if (s == NULL) return;
    record *r = main_record(pick(3) == 0 ? FIXED_DELAY : ONE_SHOT, BLOCKER);
    r->owned = s;
    if (add_record(r) != TW_OK) destroy_scratch(s);
}

/* A timer that destroys its own scratch wheel with tw_destroy_nowait. It is added last:
 * the wheel may be gone as soon as it is added. */
static void add_scratch_killer(void) {
    scratch *s = scratch_new();
    if (s == NULL) return;
    record *r = scratch_record(s, ONE_SHOT, SCRATCH_KILLER, pick(15), 0);
    r->kill_in_drop = (int)pick(2);
    if (add_record(r) != TW_OK) destroy_scratch(s);
}

static void never_runs(tw_timer_id id, void *data) {
    (void)id;
    violation(data, "a timer added during a destroy ran");
}

/* From the wheel's own callback or drop: tw_destroy is busy, tw_destroy_nowait drops
 * every timer not running before it returns, and the wheel refuses what follows. */
static void kill_own_scratch(record *r) {
    scratch *s = r->in_scratch;
    expect_status(r, "tw_destroy from inside", tw_destroy(s->w), TW_ERR_BUSY);
    expect_status(r, "tw_destroy_nowait", tw_destroy_nowait(s->w), TW_OK);
    long busy = atomic_get(&s->busy), dropped = atomic_get(&s->dropped);
    long added = atomic_get(&s->added);
    if (busy + dropped < added)
        violation(r, "tw_destroy_nowait returned with %ld of %ld timers neither dropped nor "
                  "running", added - busy - dropped, added);
    tw_timer_id id;
    expect_status(r, "tw_add after tw_destroy_nowait", tw_add(s->w, 1, never_runs, NULL, NULL, &id),
                  TW_ERR_SHUTDOWN);
    atomic_add(r->kill_in_drop ? &n_killed_in_drop : &n_killed_in_cb, 1);
    atomic_add(&live_scratch, -1);
}

static void destroy_owned(record *r) {
    scratch *s = __atomic_exchange_n(&r->owned, NULL, __ATOMIC_SEQ_CST);
    if (s == NULL) return;
    destroy_scratch(s);
    atomic_add(&n_destroyed_inside, 1);
}

/* ---- random operations ------------------------------------------------------------------ */

/* A delete or delete_sync of t, as far as `from` may (see the top of the file). */
static void delete_random(record *t, context from) {
    int sync = pick(3) == 0;
    if (from == FROM_LEAF && t->role != LEAF) return;
    if (from == FROM_LEAF || (from == FROM_BLOCKER && t->role != LEAF)) sync = 0;
    delete_record(t, sync, from);
}

static void random_op(context from) {
    unsigned p = pick(100);
    if (p < 30) {
        add_random(0);
    } else if (p < 38) {
        add_random(1);
    } else {
        record *t = acquire_random(p >= 60 && pick(2));
        if (t == NULL) return;
        if (p < 60 && t->kind == ONE_SHOT) reset_one_shot(t, random_delay_ms());
        else if (p >= 60) delete_random(t, from);
        record_release(t);
    }
}

static context context_of(const record *r) { return r->role == BLOCKER ? FROM_BLOCKER : FROM_LEAF; }

/* From a timer's own callback: delete it (a one-shot that runs is not found), delete_sync
 * it (busy), or reset it (a one-shot that runs is not found; a fixed-delay timer moves its
 * next run). Returns the deadline a reset gave the next run, or 0. */
static int64_t own_op_in_callback(record *r, tw_timer_id id) {
    switch (pick(3)) {
    case 0:
        delete_record(r, 0, context_of(r));
        return 0;
    case 1:
        expect_status(r, "tw_delete_sync from its own callback", tw_delete_sync(r->w, id),
                      TW_ERR_BUSY);
        return 0;
    default:
        if (r->kind == ONE_SHOT) reset_one_shot(r, random_delay_ms());
        return r->kind == FIXED_DELAY ? reset_own_periodic(r, pick(20)) : 0;
    }
}

/* From a timer's own drop: its id names no pending timer any more. */
static void own_op_in_drop(record *r) {
    tw_timer_id id = id_of(r);
    if (id == 0) return; /* the drop came before tw_add returned the id */
    expect_status(r, "tw_delete from its own drop", tw_delete(r->w, id), TW_ERR_NOT_FOUND);
    expect_status(r, "tw_reset from its own drop", tw_reset(r->w, id, 1), TW_ERR_NOT_FOUND);
    tw_status st = tw_delete_sync(r->w, id);
    if (st != TW_ERR_NOT_FOUND && st != TW_ERR_BUSY)
        violation(r, "tw_delete_sync from its own drop gave %s", tw_status_str(st));
}

/* What a callback of a main wheel's timer does besides the checks. */
static int64_t callback_body(record *r, tw_timer_id id) {
    int64_t reset_to = 0;
    if (pick(r->kind == ONE_SHOT ? 16 : 4) == 0) sleep_ms(1 + pick(2)); /* deleted while running */
    if (!enter_ops()) return 0;
    if (pick(2) == 0) {
        random_op(context_of(r));
        atomic_add(&n_callback_calls, 1);
    }
    if (pick(6) == 0) reset_to = own_op_in_callback(r, id);
    if (r->owned && pick(3) == 0) destroy_owned(r);
    leave_ops();
    return reset_to;
}

static void on_run(tw_timer_id id, void *data) {
    record *r = data;
    __atomic_store_n(&r->id, id, __ATOMIC_SEQ_CST);
    if (r->home >= 0) runs_callbacks_of = r->home;
    run_begins(r, now_ns());
    int64_t reset_to = 0;
    if (r->role == SCRATCH_LEAF && pick(8) == 0) sleep_ms(1);
    else if (r->role == SCRATCH_KILLER && !r->kill_in_drop) kill_own_scratch(r);
    else if (r->role == LEAF || r->role == BLOCKER) reset_to = callback_body(r, id);
    run_ends(r, reset_to);
}

static void drop_begins(record *r) {
    pthread_mutex_lock(&r->mu);
    if (r->drop_started) violation(r, "a drop ran twice");
    if (r->running) violation(r, "a drop began while its callback ran");
    atomic_set(&r->drop_started, 1);
    pthread_mutex_unlock(&r->mu);
    unpublish(r);
    atomic_add(&dropped_total, 1);
    if (r->kind != ONE_SHOT) atomic_add(&live_periodic, -1);
    if (r->in_scratch) {
        atomic_add(&r->in_scratch->dropped, 1);
        if (r->runs) atomic_add(&r->in_scratch->busy, -1);
    }
    if (r->home >= 0) {
        atomic_add(&live_main, -1);
        atomic_add(&wheels[r->home].dropped, 1);
    }
}

/* A drop while its wheel is destroyed: the wheel refuses new timers. */
static void drop_during_destroy(record *r) {
    tw_timer_id id;
    expect_status(r, "tw_add from a drop during tw_destroy",
                  tw_add(r->w, 1, never_runs, NULL, NULL, &id), TW_ERR_SHUTDOWN);
}

static void drop_body(record *r) {
    if (pick(r->kind == ONE_SHOT ? 16 : 4) == 0) sleep_ms(1); /* a delete_sync waits for it */
    if (r->role == SCRATCH_KILLER && r->kill_in_drop) kill_own_scratch(r);
    destroy_owned(r); /* a blocker's scratch wheel, unless its callback destroyed it */
    if (r->home < 0) return;
    if (atomic_get(&wheels[r->home].destroying)) {
        drop_during_destroy(r);
    } else if (enter_ops()) {
        if (pick(2) == 0) {
            random_op(context_of(r));
            atomic_add(&n_drop_calls, 1);
        }
        if (pick(4) == 0) own_op_in_drop(r);
        leave_ops();
    }
}

static void on_drop(void *data) {
    record *r = data;
    drop_begins(r);
    drop_body(r);
    atomic_set(&r->drop_done, 1);
    record_release(r);
}

/* ---- the threads: test threads, the manual wheel's poller, a watchdog ----------------- */

typedef struct {
    unsigned index;
    long ops;
} thread_arg;

static void *test_thread(void *arg) {
    thread_arg *a = arg;
    rng_state = splitmix(seed + a->index) | 1;
    size_t share = choices_len / THREADS;
    choice_next = choices == NULL ? NULL : choices + a->index * share;
    choice_end = choice_next == NULL ? NULL : choice_next + share;
    for (long i = 0; i < a->ops; i++) {
        unsigned p = pick(1000);
        if (p < 4) add_scratch_owner();
        else if (p < 8) add_scratch_killer();
        else random_op(FROM_THREAD);
        if (pick(4) == 0) sleep_ms(1);
    }
    return NULL;
}

static void *poller(void *arg) {
    (void)arg;
    runs_callbacks_of = MANUAL_WHEEL;
    struct timespec pause = {0, 300000};
    while (!atomic_get(&stop_polling)) {
        size_t ran = 0;
        atomic_add(&poll_seq, 1);
        expect_status(NULL, "tw_poll", tw_poll(wheels[MANUAL_WHEEL].w, &ran), TW_OK);
        atomic_add(&poll_seq, 1);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static void *watchdog(void *arg) {
    int64_t give_up = now_ns() + *(long *)arg * 1000 * MS;
    while (!atomic_get(&finished)) {
        if (now_ns() > give_up) {
            fprintf(stderr, "test_random_contract: no end after %ld s in phase \"%s\": a hang "
                    "(TW_SEED=%llu)\n", *(long *)arg, phase, (unsigned long long)seed);
            abort();
        }
        sleep_ms(20);
    }
    return NULL;
}

/* ---- the phases of the test --------------------------------------------------------------- */

static void create_main_wheels(void) {
    static const struct {
        const char *name;
        uint64_t tick_us;
        uint32_t max_workers, manual;
        uint64_t max_timers;
    } setups[MAIN_WHEELS] = {
        {"the 2-worker wheel", 700, 2, 0, 0},
        {"the 1-worker wheel with max_timers", 300, 1, 0, 150},
        {"the manual wheel", 450, 0, 1, 0},
    };
    for (int i = 0; i < MAIN_WHEELS; i++) {
        tw_config cfg;
        tw_config_init(&cfg);
        cfg.tick_us = setups[i].tick_us;
        cfg.min_workers = setups[i].max_workers ? 1 : 0;
        cfg.max_workers = setups[i].max_workers;
        cfg.manual = setups[i].manual;
        cfg.max_timers = setups[i].max_timers;
        wheels[i].name = setups[i].name;
        CHECK_OK(tw_create(&cfg, &wheels[i].w));
    }
    for (int i = 0; i < SLOTS; i++) pthread_mutex_init(&slots[i].mu, NULL);
}

/* No new calls from callbacks and drops, and none still under way. */
static void quiesce(void) {
    atomic_set(&quiescing, 1);
    while (atomic_get(&ops_inflight) > 0) sleep_ms(1);
}

static int counters_match(const main_wheel *m, const tw_stats *s) {
    long added = atomic_get(&m->added), fired = atomic_get(&m->fired_one_shot);
    long cancelled = atomic_get(&m->cancelled), dropped = atomic_get(&m->dropped);
    return s->added == (uint64_t)added && s->fired_one_shot == (uint64_t)fired &&
           s->cancelled == (uint64_t)cancelled && s->discarded == 0 &&
           dropped == fired + cancelled && s->pending == (uint64_t)(added - dropped);
}

/* Once the short one-shots have fired, each wheel's counters are what the test saw, and
 * add up. Returns the pending count, which the destroy must discard. */
static uint64_t check_quiet_stats(main_wheel *m) {
    tw_stats s = {.size = sizeof s};
    int64_t give_up = now_ns() + 20000 * MS;
    for (;;) {
        CHECK_OK(tw_get_stats(m->w, &s));
        if (counters_match(m, &s) || now_ns() > give_up) break;
        sleep_ms(20);
    }
    if (!counters_match(m, &s))
        violation(NULL, "%s: stats added %llu fired_one_shot %llu cancelled %llu pending %llu "
                  "discarded %llu; the test saw added %ld fired %ld cancelled %ld dropped %ld",
                  m->name, (unsigned long long)s.added, (unsigned long long)s.fired_one_shot,
                  (unsigned long long)s.cancelled, (unsigned long long)s.pending,
                  (unsigned long long)s.discarded, m->added, m->fired_one_shot, m->cancelled,
                  m->dropped);
    CHECK(s.added == s.fired_one_shot + s.cancelled + s.pending + s.discarded);
    return s.pending;
}

/* Every timer pending at the quiet moment is dropped by the end of tw_destroy (fired
 * since, or discarded), and so every timer the wheel accepted. */
static void destroy_main_wheel(main_wheel *m, long dropped_then, uint64_t pending_then) {
    atomic_set(&m->destroying, 1);
    CHECK_OK(tw_destroy(m->w));
    CHECK(atomic_get(&m->dropped) - dropped_then == (long)pending_then);
    CHECK(atomic_get(&m->dropped) == atomic_get(&m->added));
}

/* Scratch wheels destroyed by their own timers end when those timers have returned. */
static void wait_for_scratch_wheels(void) {
    for (int64_t give_up = now_ns() + 20000 * MS; now_ns() < give_up;) {
        if (atomic_get(&live_scratch) == 0 && atomic_get(&live_records) == 0) break;
        sleep_ms(5);
    }
    sleep_ms(50); /* their threads exit and free them: LeakSanitizer checks at exit */
    CHECK(atomic_get(&live_scratch) == 0);
    for (scratch *s = scratch_list, *next; s != NULL; s = next) {
        next = s->next;
        CHECK(s->dropped == s->added);
        free(s);
    }
    scratch_list = NULL;
}

static void run_threads(long ops) {
    pthread_t threads[THREADS], poll_thread;
    thread_arg args[THREADS];
    CHECK(pthread_create(&poll_thread, NULL, poller, NULL) == 0);
    for (unsigned i = 0; i < THREADS; i++) {
        args[i].index = i;
        args[i].ops = ops;
        CHECK(pthread_create(&threads[i], NULL, test_thread, &args[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
    phase = "quiesce";
    quiesce();
    atomic_set(&stop_polling, 1);
    pthread_join(poll_thread, NULL);
}

static void run_with_seed(uint64_t chosen, long ops) {
    seed = chosen;
    rng_state = splitmix(seed) | 1;
    printf("     seed %llu (TW_SEED to repeat), %ld ops x %d threads\n",
           (unsigned long long)seed, ops, THREADS);
    fflush(stdout);
    create_main_wheels();
    phase = "operations";
    run_threads(ops);
    phase = "stats";
    sleep_ms(100); /* most short one-shots fire */
    uint64_t pending[MAIN_WHEELS];
    long dropped[MAIN_WHEELS];
    for (int i = 0; i < MAIN_WHEELS; i++) {
        pending[i] = check_quiet_stats(&wheels[i]);
        dropped[i] = atomic_get(&wheels[i].dropped);
    }
    phase = "destroy";
    for (int i = 0; i < MAIN_WHEELS; i++) destroy_main_wheel(&wheels[i], dropped[i], pending[i]);
    phase = "scratch wheels";
    wait_for_scratch_wheels();
    CHECK(atomic_get(&live_records) == 0); /* every record dropped once and freed */
    CHECK(atomic_get(&dropped_total) == atomic_get(&accepted_total));
    printf("     %ld timers, %ld runs, random calls from %ld callbacks and %ld drops; TW_OK from "
           "%ld deletes, %ld delete_syncs from threads and %ld from callbacks and drops, %ld "
           "resets; %ld adds full; scratch wheels destroyed from other wheels' callbacks and drops "
           "%ld, by their own callback %ld and drop %ld\n",
           accepted_total, n_runs, n_callback_calls, n_drop_calls, n_deleted, n_synced,
           n_synced_inside, n_reset, n_full, n_destroyed_inside, n_killed_in_cb, n_killed_in_drop);
}

static void test_random_contract(void) {
    uint64_t chosen = (uint64_t)env_long("TW_SEED", 0); /* 0: a new seed each run */
    if (chosen == 0) chosen = (uint64_t)now_ns() % 1000000007ULL + 1;
    run_with_seed(chosen, env_long("TW_STRESS_OPS", 12000));
}

int main(void) {
    long watchdog_s = env_long("TW_WATCHDOG_S", 300);
    pthread_t dog;
    CHECK(pthread_create(&dog, NULL, watchdog, &watchdog_s) == 0);
    RUN(test_random_contract);
    atomic_set(&finished, 1);
    pthread_join(dog, NULL);
    return check_summary("test_random_contract");
}
