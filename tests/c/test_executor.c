/*
 * The adaptive executor through the C ABI: a due run never waits behind a busy worker
 * while another worker is idle or the pool may still grow (issue 12, one test per row of
 * its table). The bounds sit far from both the ideal and the serial time, so that a busy
 * machine does not fail them and a run queue that hides work from idle workers does.
 *
 * Under valgrind (the harness sets TW_STRESS_OPS: everything runs about 20x slower) the
 * timing bounds are reported but not checked, and the large loads are scaled down; what
 * does not depend on speed (counts, the stats) is checked everywhere.
 */
#include "check.h"

#include <string.h>
#include <sys/resource.h>

#define WAIT_MS 20000 /* the longest any test waits for its callbacks */
#define NS_PER_MS 1000000LL

/* Whether timing bounds are checked: not when the harness asked for a reduced run. */
static int timing_checked(void) { return env_long("TW_STRESS_OPS", 0) == 0; }

/* Checks a timing bound, or only prints it under valgrind. */
#define CHECK_TIMING(cond)                                                              \
    do {                                                                                \
        if (timing_checked()) CHECK(cond);                                              \
        else if (!(cond)) printf("     (not checked under valgrind: %s)\n", #cond);     \
    } while (0)

static tw_wheel *pool(uint32_t min_workers, uint32_t max_workers, uint64_t keepalive_ms) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.min_workers = min_workers;
    cfg.max_workers = max_workers;
    cfg.worker_keepalive_ms = keepalive_ms;
    tw_wheel *w = NULL;
    tw_status s = tw_create(&cfg, &w);
    if (s != TW_OK || w == NULL) { /* nothing else can be tested */
        fprintf(stderr, "tw_create: %s\n", tw_status_str(s));
        check_tests_failed++;
        exit(check_summary("test_executor"));
    }
    return w;
}

static tw_stats stats(const tw_wheel *w) {
    tw_stats s = {.size = sizeof s};
    CHECK_OK(tw_get_stats(w, &s));
    return s;
}

/* ---- a burst: n one-shots due in the same tick, each blocking block_ms ---------------- */

typedef struct burst {
    tw_wheel *wheel;
    long n;
    long block_ms;
    int in_drop; /* blocks in the timer's drop function instead of its callback */
    long started;
    long finished;
    long retired_at_last_start; /* workers_retired when the last run started */
    int64_t last_end_ns;        /* when the last run returned */
} burst;

/* Blocks block_ms, then counts the run (or drop) finished. */
static void burst_block(burst *b) {
    sleep_ms(b->block_ms);
    int64_t end = now_ns();
    if (atomic_add(&b->finished, 1) == b->n) __atomic_store_n(&b->last_end_ns, end, __ATOMIC_SEQ_CST);
}

static void burst_cb(tw_timer_id id, void *user_data) {
    burst *b = user_data;
    (void)id;
    if (atomic_add(&b->started, 1) == b->n)
        atomic_set(&b->retired_at_last_start, (long)stats(b->wheel).workers_retired);
    if (!b->in_drop) burst_block(b);
}

static void burst_drop(void *user_data) { burst_block(user_data); }

/* Runs a burst on a new pool; its drain time in ms (due time to the last return), or -1
 * when it did not drain within WAIT_MS. */
static long run_burst(burst *b, uint32_t min_workers, uint32_t max_workers,
                      uint64_t keepalive_ms) {
    const uint64_t delay_ms = 20;
    tw_wheel *w = pool(min_workers, max_workers, keepalive_ms);
    b->wheel = w;
    int64_t due = now_ns() + (int64_t)delay_ms * NS_PER_MS;
    for (long i = 0; i < b->n; i++) {
        tw_timer_id id;
        CHECK_OK(tw_add(w, delay_ms, burst_cb, b, b->in_drop ? burst_drop : NULL, &id));
    }
    int drained = wait_for(&b->finished, b->n, WAIT_MS);
    CHECK(drained);
    CHECK_OK(tw_destroy(w));
    return drained ? (long)((b->last_end_ns - due) / NS_PER_MS) : -1;
}

/* The serial time, the ideal (one tick + n * block / max_workers) and the measured drain. */
static void print_burst(const burst *b, uint32_t max_workers, long drain_ms) {
    printf("     %ld x %ld ms, max %u: drained in %ld ms (ideal %ld ms, serial %ld ms)\n",
           b->n, b->block_ms, max_workers, drain_ms, 1 + b->n * b->block_ms / max_workers,
           b->n * b->block_ms);
}

/* Drains n runs of block_ms each, due in one tick, on 1..max_workers workers, within
 * bound_ms (generous: the ideal is one tick + n * block / max_workers). */
static void check_burst(long n, long block_ms, uint32_t max_workers, long bound_ms, int in_drop) {
    burst b = {.n = n, .block_ms = block_ms, .in_drop = in_drop};
    long drain_ms = run_burst(&b, 1, max_workers, 1000);
    print_burst(&b, max_workers, drain_ms);
    CHECK(drain_ms >= 0);
    CHECK_TIMING(drain_ms < bound_ms);
}

/* 64 x 50 ms, max 16: serial 3.2 s, ideal 0.2 s; a hidden backlog took 1.6 s. */
static void test_burst_64x50ms_drains_in_parallel(void) { check_burst(64, 50, 16, 1000, 0); }

/* The same burst blocking in the drop functions, which run on the workers after the
 * callbacks: a worker blocked in a drop is replaced as one blocked in a callback is (on
 * 2 CPUs, a pool that grew only for callbacks took 1.6 s). */
static void test_burst_of_64x50ms_drops_drains_in_parallel(void) {
    check_burst(64, 50, 16, 1000, 1);
}

/* 33 x 100 ms, max 4: ideal 0.83 s; a hidden backlog took the serial 3.2 s. */
static void test_burst_33x100ms_max4_uses_every_worker(void) { check_burst(33, 100, 4, 2000, 0); }

/* While runs wait, no worker retires: with a 100 ms keepalive, a worker that found the
 * shared queue empty while another held the backlog retired long before the last start. */
static void test_no_worker_retires_while_runs_wait(void) {
    burst b = {.n = 33, .block_ms = 100};
    run_burst(&b, 1, 4, 100);
    printf("     workers retired before the last run started: %ld\n",
           atomic_get(&b.retired_at_last_start));
    CHECK(atomic_get(&b.retired_at_last_start) == 0);
}

/* ---- jobs: one-shots that record how late they started -------------------------------- */

typedef struct job {
    int64_t due_ns;  /* taken just before tw_add: the wheel's own deadline is not earlier */
    long block_ms;   /* 0: an instant callback */
    int64_t late_ns; /* start minus due */
    long *done;      /* counts finished jobs */
    long *started;   /* counts started jobs; may be NULL */
} job;

static void job_cb(tw_timer_id id, void *user_data) {
    job *j = user_data;
    (void)id;
    j->late_ns = now_ns() - j->due_ns;
    if (j->started != NULL) atomic_add(j->started, 1);
    if (j->block_ms > 0) sleep_ms(j->block_ms);
    atomic_add(j->done, 1);
}

static void job_add(tw_wheel *w, job *j, uint64_t delay_ms) {
    j->due_ns = now_ns() + (int64_t)delay_ms * NS_PER_MS;
    tw_timer_id id;
    CHECK_OK(tw_add(w, delay_ms, job_cb, j, NULL, &id));
}

/* The latest start among the instant jobs, ms. */
static double instant_late_max_ms(const job *jobs, long count) {
    int64_t late = 0;
    for (long i = 0; i < count; i++)
        if (jobs[i].block_ms == 0 && jobs[i].late_ns > late) late = jobs[i].late_ns;
    return (double)late / NS_PER_MS;
}

/* A fixed pool of 4, 8 runs due in one tick, the first blocking 500 ms: the other 7 start
 * on the 3 free workers at once (a worker that took two ids started one 500 ms late). */
static void test_fixed_pool_never_leaves_a_due_run_behind_a_busy_worker(void) {
    enum { RUNS = 8 };
    long done = 0;
    job jobs[RUNS];
    memset(jobs, 0, sizeof jobs);
    tw_wheel *w = pool(4, 4, 1000);
    for (int i = 0; i < RUNS; i++) {
        jobs[i].done = &done;
        jobs[i].block_ms = i == 0 ? 500 : 0;
        job_add(w, &jobs[i], 20);
    }
    CHECK(wait_for(&done, RUNS, WAIT_MS));
    double late_ms = instant_late_max_ms(jobs, RUNS);
    printf("     latest instant start: %.1f ms after its deadline\n", late_ms);
    CHECK_TIMING(late_ms < 100);
    CHECK_OK(tw_destroy(w));
}

/* Instant callbacks spread over 1 s with a few 500 ms ones among them, max 16: no instant
 * callback waits behind a slow one (a worker batch that holds a slow run and instant ones
 * delays the instant ones by 500 ms). The bound, 250 ms, is half that: on a loaded machine
 * (CI shares its 2 CPUs) the latest of the 10,000 instant starts came 105 ms late with
 * nothing behind a slow run, past the 100 ms that the 200 ms ones of before allowed. */
static void test_mixed_load_instant_callbacks_never_wait_for_slow_ones(void) {
    const long instant = timing_checked() ? 10000 : 500, slow = 5, count = instant + slow;
    long done = 0;
    job *jobs = calloc((size_t)count, sizeof *jobs);
    tw_wheel *w = pool(1, 16, 1000);
    unsigned state = 2463534242u;
    for (long i = 0; i < count; i++) {
        jobs[i].done = &done;
        jobs[i].block_ms = i < slow ? 500 : 0;
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        uint64_t delay_ms = i < slow ? 100 + 200 * (uint64_t)i : 20 + state % 1000;
        job_add(w, &jobs[i], delay_ms);
    }
    CHECK(wait_for(&done, count, WAIT_MS));
    double late_ms = instant_late_max_ms(jobs, count);
    printf("     %ld instant + %ld slow: latest instant start %.1f ms after its deadline\n",
           instant, slow, late_ms);
    CHECK_TIMING(late_ms < 250);
    CHECK_OK(tw_destroy(w));
    free(jobs);
}

/* ---- what the pool shows and does while runs wait ------------------------------------- */

/* One worker (max 1), a run that blocks 300 ms and 10 more due 5 ms after it: while the
 * first runs, queue_depth counts the 10 that wait. */
enum { WAITING = 10 };

/* One worker (max 1) busy for block_ms from first_ms on, and WAITING instant runs due at
 * rest_ms (after it started); returns when the busy one has started. */
static tw_wheel *one_busy_worker(job jobs[WAITING + 1], long *done, long *started, long block_ms,
                                 uint64_t first_ms, uint64_t rest_ms) {
    memset(jobs, 0, sizeof(job) * (WAITING + 1));
    tw_wheel *w = pool(1, 1, 1000);
    for (int i = 0; i <= WAITING; i++) {
        jobs[i].done = done;
        jobs[i].started = started;
        jobs[i].block_ms = i == 0 ? block_ms : 0;
        job_add(w, &jobs[i], i == 0 ? first_ms : rest_ms);
    }
    CHECK(wait_for(started, 1, WAIT_MS));
    return w;
}

static void test_queue_depth_counts_every_waiting_run(void) {
    long done = 0, started = 0;
    job jobs[WAITING + 1];
    tw_wheel *w = one_busy_worker(jobs, &done, &started, 300, 20, 25);
    sleep_ms(100);
    tw_stats s = stats(w);
    printf("     queue_depth %llu while %d runs wait\n", (unsigned long long)s.queue_depth,
           WAITING);
    CHECK(atomic_get(&started) == 1);
    CHECK(s.queue_depth == WAITING);
    CHECK(wait_for(&done, WAITING + 1, WAIT_MS));
    CHECK(stats(w).queue_depth == 0);
    CHECK_OK(tw_destroy(w));
}

/* CPU time of the whole process. */
static int64_t process_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Voluntary context switches of the whole process: every wake-up of a sleeping thread. */
static long process_wakeups(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_nvcsw;
}

/* The pool at max_workers 1 with a busy worker and 10 runs waiting: nothing can change
 * until the worker returns, so the tick thread sleeps. Measured over 300 ms: voluntary
 * context switches (a tick thread that looks at the queue every millisecond makes ~300)
 * and process CPU time (~5 ms for those wake-ups; about nothing without them). */
static void test_tick_thread_sleeps_while_the_pool_cannot_grow(void) {
    long done = 0, started = 0;
    job jobs[WAITING + 1];
    tw_wheel *w = one_busy_worker(jobs, &done, &started, 700, 10, 40);
    sleep_ms(100);
    int64_t cpu = process_cpu_ns();
    long wakeups = process_wakeups();
    sleep_ms(300);
    double cpu_ms = (double)(process_cpu_ns() - cpu) / NS_PER_MS;
    wakeups = process_wakeups() - wakeups;
    printf("     over 300 ms of waiting: %.2f ms CPU, %ld wake-ups\n", cpu_ms, wakeups);
    CHECK(atomic_get(&started) == 1);
    CHECK_TIMING(cpu_ms < 2);
    CHECK_TIMING(wakeups < 30);
    CHECK(wait_for(&done, WAITING + 1, WAIT_MS));
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(test_burst_64x50ms_drains_in_parallel);
    RUN(test_burst_of_64x50ms_drops_drains_in_parallel);
    RUN(test_burst_33x100ms_max4_uses_every_worker);
    RUN(test_no_worker_retires_while_runs_wait);
    RUN(test_fixed_pool_never_leaves_a_due_run_behind_a_busy_worker);
    RUN(test_mixed_load_instant_callbacks_never_wait_for_slow_ones);
    RUN(test_queue_depth_counts_every_waiting_run);
    RUN(test_tick_thread_sleeps_while_the_pool_cannot_grow);
    return check_summary("test_executor");
}
