/*
 * W1, W2, W3 of docs/benchmarks.md through the C ABI, against libuv timers in the same
 * run. Prints one JSON object per line, then a table of ratios (ours / libuv) with the
 * targets. Built with -DTW_BENCH_TIMEOUT_C and a timeout.c you built yourself (see
 * docs/benchmarks.md; `make bench-c TIMEOUT_C=dir`), W1 and W2 also run against it, the
 * single-threaded floor. `--quick` runs a tenth of the sizes; `--rust FILE` reads the W1 line of the Rust
 * API (examples/w1_rust.rs, same delays and order) to compare the C ABI with it. W3 runs
 * three times per implementation and reports the run with the median p99. W10 exports a
 * million timers while another thread keeps adding: the longest add during the export
 * against the time the same timers took to add. `--only-export` runs W10 alone.
 */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <uv.h>

#include "timerwheel.h"
#include "xorshift.h"
#ifdef TW_BENCH_TIMEOUT_C
#include "timeout.h"
#endif

typedef struct {
    double add_ns, cancel_ns, readd_ns, bytes_per_timer, touch_ns;
    double total_s;
    long fired;
    double late_p50_us, late_p99_us, late_max_us;
} result;

static size_t n_timers = 1000000, n_touches = 5000000;

/* ---- helpers ------------------------------------------------------------------------- */

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static double rss_bytes(void) {
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL || fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    if (f != NULL) fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE);
}

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes);
    if (p == NULL) {
        fprintf(stderr, "bench: out of memory\n");
        exit(1);
    }
    memset(p, 0, bytes); /* touched now, so RSS deltas count only the timers */
    return p;
}

/* W1 input: delays uniform in [1 s, 3600 s) and a random delete order. */
static uint64_t *w1_delays(void) {
    uint64_t *d = xmalloc(n_timers * sizeof *d);
    for (size_t i = 0; i < n_timers; i++) d[i] = 1000 + next_random() % (3600 * 1000 - 1000);
    return d;
}

static size_t *shuffled(size_t n) {
    size_t *order = xmalloc(n * sizeof *order);
    for (size_t i = 0; i < n; i++) order[i] = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = next_random() % (i + 1);
        size_t t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order;
}

static double per_op(int64_t start, size_t ops) { return (double)(now_ns() - start) / (double)ops; }

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The p-th percentile (1 <= p <= 100) of the n > 0 values of `sorted`, by nearest rank: the
 * value of rank ceil(p/100 * n), counting from 1 (docs/benchmarks.md). */
static int64_t percentile(const int64_t *sorted, size_t n, unsigned p) {
    size_t rank = (n * p + 99) / 100;
    return sorted[rank > 0 ? rank - 1 : 0];
}

/* Lateness percentiles in microseconds (sorts `late`). */
static void lateness(result *r, int64_t *late, size_t n) {
    qsort(late, n, sizeof *late, cmp_i64);
    r->late_p50_us = (double)percentile(late, n, 50) / 1000.0;
    r->late_p99_us = (double)percentile(late, n, 99) / 1000.0;
    r->late_max_us = (double)percentile(late, n, 100) / 1000.0;
}

/* Writes $TW_BENCH_DIR/w3-<impl>.csv when that variable is set: `bucket_us,count` lines,
 * the lower bound of each non-empty 10 us bucket of the sorted lateness `late` (ns). */
static void dump_lateness(const char *impl, const int64_t *late, size_t n) {
    const char *dir = getenv("TW_BENCH_DIR");
    char path[4096];
    if (dir == NULL || snprintf(path, sizeof path, "%s/w3-%s.csv", dir, impl) >= (int)sizeof path)
        return;
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return;
    }
    fprintf(f, "bucket_us,count\n");
    for (size_t i = 0; i < n;) {
        int64_t bucket = (late[i] > 0 ? late[i] : 0) / 10000;
        size_t count = 0;
        for (; i < n && (late[i] > 0 ? late[i] : 0) / 10000 == bucket; i++) count++;
        fprintf(f, "%lld,%zu\n", (long long)bucket * 10, count);
    }
    fclose(f);
}

static void noop_cb(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
}

static tw_wheel *new_wheel(void) {
    tw_wheel *w = NULL;
    if (tw_create(NULL, &w) != TW_OK) {
        fprintf(stderr, "bench: tw_create failed\n");
        exit(1);
    }
    return w;
}

/* ---- timerwheel through the C ABI ---------------------------------------------------- */

/* Calls per tw_delete_many / tw_reset_many in the batched runs of W1 and W2. */
#define BATCH 64

/* Deletes ids[order[i]] for every i: one tw_delete each, or batch by batch. */
static void delete_all(tw_wheel *w, const tw_timer_id *ids, const size_t *order, int batched) {
    tw_timer_id chunk[BATCH];
    tw_status statuses[BATCH];
    for (size_t i = 0; i < n_timers;) {
        if (!batched) {
            tw_delete(w, ids[order[i++]]);
            continue;
        }
        size_t k = 0;
        for (; k < BATCH && i < n_timers; k++) chunk[k] = ids[order[i++]];
        tw_delete_many(w, chunk, k, statuses);
    }
}

static result ours_w1(const uint64_t *delays, const size_t *order, int batched) {
    result r = {0};
    tw_wheel *w = new_wheel();
    tw_timer_id *ids = xmalloc(n_timers * sizeof *ids);
    memset(ids, 0, n_timers * sizeof *ids); /* the bench's own array: resident before */
    double rss = rss_bytes();
    int64_t start = now_ns();
    for (size_t i = 0; i < n_timers; i++) tw_add(w, delays[i], noop_cb, NULL, NULL, &ids[i]);
    r.add_ns = per_op(start, n_timers);
    r.bytes_per_timer = (rss_bytes() - rss) / (double)n_timers;
    start = now_ns();
    delete_all(w, ids, order, batched);
    r.cancel_ns = per_op(start, n_timers);
    start = now_ns();
    for (size_t i = 0; i < n_timers; i++) {
        size_t k = order[i];
        tw_add(w, delays[k], noop_cb, NULL, NULL, &ids[k]);
    }
    r.readd_ns = per_op(start, n_timers);
    tw_destroy(w);
    free(ids);
    return r;
}

/* Resets ids[pick[i]] for every touch: one tw_reset each, or batch by batch. */
static void reset_all(tw_wheel *w, const tw_timer_id *ids, const size_t *pick, int batched) {
    tw_timer_id chunk[BATCH];
    uint64_t delays[BATCH];
    tw_status statuses[BATCH];
    for (size_t i = 0; i < n_touches;) {
        if (!batched) {
            tw_reset(w, ids[pick[i++]], 30000);
            continue;
        }
        size_t k = 0;
        for (; k < BATCH && i < n_touches; k++) {
            chunk[k] = ids[pick[i++]];
            delays[k] = 30000;
        }
        tw_reset_many(w, chunk, delays, k, statuses);
    }
}

static result ours_w2(int batched) {
    result r = {0};
    tw_wheel *w = new_wheel();
    tw_timer_id *ids = xmalloc(n_timers * sizeof *ids);
    size_t *pick = xmalloc(n_touches * sizeof *pick);
    for (size_t i = 0; i < n_touches; i++) pick[i] = next_random() % n_timers;
    for (size_t i = 0; i < n_timers; i++) tw_add(w, 30000, noop_cb, NULL, NULL, &ids[i]);
    int64_t start = now_ns();
    reset_all(w, ids, pick, batched);
    r.touch_ns = per_op(start, n_touches);
    tw_destroy(w);
    free(ids);
    free(pick);
    return r;
}

static int64_t *w3_deadline, *w3_late;
static long w3_fired;

static void w3_cb(tw_timer_id id, void *user_data) {
    int64_t *deadline = user_data;
    (void)id;
    w3_late[deadline - w3_deadline] = now_ns() - *deadline;
    __atomic_add_fetch(&w3_fired, 1, __ATOMIC_RELAXED);
}

/* Timers due uniformly over [1 s, 3 s); waits for all of them (at most 30 s). */
static result ours_w3(const uint64_t *delays) {
    result r = {0};
    tw_wheel *w = new_wheel();
    tw_timer_id id;
    int64_t start = now_ns();
    for (size_t i = 0; i < n_timers; i++) {
        w3_deadline[i] = now_ns() + (int64_t)delays[i] * 1000000;
        tw_add(w, delays[i], w3_cb, &w3_deadline[i], NULL, &id);
    }
    int64_t give_up = start + 30 * 1000000000LL;
    while (__atomic_load_n(&w3_fired, __ATOMIC_ACQUIRE) < (long)n_timers && now_ns() < give_up) {
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    r.total_s = (double)(now_ns() - start) / 1e9;
    tw_destroy(w);
    r.fired = w3_fired;
    lateness(&r, w3_late, n_timers);
    return r;
}

/* W10: the export of n_timers timers while another thread adds and deletes. */
typedef struct {
    tw_wheel *wheel;
    int started, stop;
    int64_t longest_ns; /* the longest add + delete pair while the export ran */
    long pairs;
} export_adder;

static void *export_adder_main(void *arg) {
    export_adder *a = arg;
    __atomic_store_n(&a->started, 1, __ATOMIC_RELEASE);
    while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
        tw_timer_id id;
        int64_t start = now_ns();
        tw_add(a->wheel, 60000, noop_cb, NULL, NULL, &id);
        tw_delete(a->wheel, id);
        int64_t took = now_ns() - start;
        if (took > a->longest_ns) a->longest_ns = took;
        a->pairs++;
    }
    return NULL;
}

typedef struct {
    tw_timer_info *copied;
    size_t count;
} export_copy;

/* What an application's export function does: copy each timer out. */
static void export_copy_one(void *ctx, const tw_timer_info *info) {
    export_copy *c = ctx;
    c->copied[c->count++] = *info;
}

typedef struct {
    double add_all_ms, export_ms, blocked_max_ms;
    long adds_during;
} export_result;

static export_result ours_w9(const uint64_t *delays) {
    export_result r = {0};
    tw_wheel *w = new_wheel();
    tw_timer_id id;
    int64_t start = now_ns();
    for (size_t i = 0; i < n_timers; i++) tw_add(w, 60000 + delays[i], noop_cb, NULL, NULL, &id);
    r.add_all_ms = (double)(now_ns() - start) / 1e6;
    export_copy copy = {xmalloc((n_timers + 16) * sizeof *copy.copied), 0};
    export_adder adder = {.wheel = w};
    pthread_t thread;
    pthread_create(&thread, NULL, export_adder_main, &adder);
    while (!__atomic_load_n(&adder.started, __ATOMIC_ACQUIRE)) sleep(0);
    struct timespec settle = {0, 20000000}; /* the adder at full pace first */
    nanosleep(&settle, NULL);
    adder.longest_ns = 0;
    long before = adder.pairs;
    start = now_ns();
    tw_export(w, export_copy_one, &copy, NULL);
    r.export_ms = (double)(now_ns() - start) / 1e6;
    __atomic_store_n(&adder.stop, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    r.blocked_max_ms = (double)adder.longest_ns / 1e6;
    r.adds_during = adder.pairs - before;
    if (copy.count < n_timers) fprintf(stderr, "W10: %zu of %zu exported\n", copy.count, n_timers);
    free(copy.copied);
    tw_destroy(w);
    return r;
}

/* ---- libuv, driven the documented way -------------------------------------------------- */

static void uv_noop(uv_timer_t *t) { (void)t; }

/* Closes every handle and runs the loop until the close callbacks are done. */
static void uv_finish(uv_loop_t *loop, uv_timer_t *timers) {
    for (size_t i = 0; i < n_timers; i++) uv_close((uv_handle_t *)&timers[i], NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
}

static result uv_w1(const uint64_t *delays, const size_t *order) {
    result r = {0};
    uv_loop_t loop;
    uv_loop_init(&loop);
    double rss = rss_bytes();
    int64_t start = now_ns();
    uv_timer_t *timers = malloc(n_timers * sizeof *timers); /* the timers' memory */
    for (size_t i = 0; i < n_timers; i++) {
        uv_timer_init(&loop, &timers[i]);
        uv_timer_start(&timers[i], uv_noop, delays[i], 0);
    }
    r.add_ns = per_op(start, n_timers);
    r.bytes_per_timer = (rss_bytes() - rss) / (double)n_timers;
    start = now_ns();
    for (size_t i = 0; i < n_timers; i++) uv_timer_stop(&timers[order[i]]);
    r.cancel_ns = per_op(start, n_timers);
    start = now_ns();
    for (size_t i = 0; i < n_timers; i++) {
        uv_timer_start(&timers[order[i]], uv_noop, delays[order[i]], 0);
    }
    r.readd_ns = per_op(start, n_timers);
    uv_finish(&loop, timers);
    free(timers);
    return r;
}

static result uv_w2(void) {
    result r = {0};
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_timer_t *timers = xmalloc(n_timers * sizeof *timers);
    size_t *pick = xmalloc(n_touches * sizeof *pick);
    for (size_t i = 0; i < n_touches; i++) pick[i] = next_random() % n_timers;
    for (size_t i = 0; i < n_timers; i++) {
        uv_timer_init(&loop, &timers[i]);
        uv_timer_start(&timers[i], uv_noop, 30000, 0);
    }
    int64_t start = now_ns();
    for (size_t i = 0; i < n_touches; i++) uv_timer_start(&timers[pick[i]], uv_noop, 30000, 0);
    r.touch_ns = per_op(start, n_touches);
    uv_finish(&loop, timers);
    free(timers);
    free(pick);
    return r;
}

static uv_timer_t *uv_w3_timers;

static void uv_w3_cb(uv_timer_t *t) {
    size_t i = (size_t)(t - uv_w3_timers);
    w3_late[i] = now_ns() - w3_deadline[i];
    w3_fired++;
}

static result uv_w3(const uint64_t *delays) {
    result r = {0};
    uv_loop_t loop;
    uv_loop_init(&loop);
    uv_w3_timers = xmalloc(n_timers * sizeof *uv_w3_timers);
    int64_t start = now_ns();
    for (size_t i = 0; i < n_timers; i++) {
        uv_update_time(&loop); /* libuv counts from its cached loop time */
        w3_deadline[i] = now_ns() + (int64_t)delays[i] * 1000000;
        uv_timer_init(&loop, &uv_w3_timers[i]);
        uv_timer_start(&uv_w3_timers[i], uv_w3_cb, delays[i], 0);
    }
    uv_run(&loop, UV_RUN_DEFAULT); /* returns when every timer has fired */
    r.total_s = (double)(now_ns() - start) / 1e9;
    r.fired = w3_fired;
    uv_finish(&loop, uv_w3_timers);
    free(uv_w3_timers);
    lateness(&r, w3_late, n_timers);
    return r;
}

/* ---- output ------------------------------------------------------------------------- */

static void json_w1(const char *impl, int baseline, result r) {
    printf("{\"impl\": \"%s\", \"baseline\": %s, \"workload\": \"W1\", \"n\": %zu, "
           "\"add_ns\": %.1f, \"cancel_ns\": %.1f, \"readd_ns\": %.1f, \"bytes_per_timer\": %.1f}\n",
           impl, baseline ? "true" : "false", n_timers, r.add_ns, r.cancel_ns, r.readd_ns,
           r.bytes_per_timer);
}

static void json_w2(const char *impl, int baseline, result r) {
    printf("{\"impl\": \"%s\", \"baseline\": %s, \"workload\": \"W2\", \"n\": %zu, "
           "\"touches\": %zu, \"touch_ns\": %.1f}\n",
           impl, baseline ? "true" : "false", n_timers, n_touches, r.touch_ns);
}

static void json_w3(const char *impl, int baseline, result r) {
    printf("{\"impl\": \"%s\", \"baseline\": %s, \"workload\": \"W3\", \"n\": %zu, "
           "\"fired\": %ld, \"total_s\": %.3f, \"late_p50_us\": %.0f, \"late_p99_us\": %.0f, "
           "\"late_max_us\": %.0f}\n",
           impl, baseline ? "true" : "false", n_timers, r.fired, r.total_s, r.late_p50_us,
           r.late_p99_us, r.late_max_us);
    fflush(stdout);
}

/* A table row: ours, the baseline, the ratio, the target ratio (or absolute bound). */
static void row(const char *what, double ours, double base, double max_ratio, double max_abs) {
    char ratio[32] = "", target[32] = "";
    int ok = 1;
    if (base > 0) snprintf(ratio, sizeof ratio, "%.2fx", ours / base);
    if (max_ratio > 0) {
        snprintf(target, sizeof target, "<= %.2fx", max_ratio);
        ok = base > 0 && ours / base <= max_ratio;
    } else if (max_abs > 0) {
        snprintf(target, sizeof target, "<= %.0f", max_abs);
        ok = ours <= max_abs;
    }
    printf("%-34s %12.1f %12.1f %8s %10s  %s\n", what, ours, base, ratio, target,
           target[0] ? (ok ? "ok" : "MISSED") : "");
}

static void json_w9(export_result r) {
    printf("{\"impl\": \"timerwheel-c\", \"baseline\": false, \"workload\": \"W10\", \"n\": %zu, "
           "\"add_all_ms\": %.1f, \"export_ms\": %.1f, \"blocked_max_ms\": %.1f, "
           "\"adds_during\": %ld}\n",
           n_timers, r.add_all_ms, r.export_ms, r.blocked_max_ms, r.adds_during);
    fflush(stdout);
}

static void table_w9(export_result r) {
    printf("\n%-34s %12s %12s %8s %10s\n", "W10 export vs adding the timers", "ms",
           "add all, ms", "ratio", "target");
    row("W10 export_ms", r.export_ms, r.add_all_ms, 0, 0);
    row("W10 blocked_max_ms (adds)", r.blocked_max_ms, r.add_all_ms, 0, 100);
}

/* add_ns and cancel_ns from the JSON line of the Rust API's W1, if given. */
static int read_rust_w1(const char *path, result *r) {
    char line[512];
    FILE *f = path != NULL ? fopen(path, "r") : NULL;
    int found = 0;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        const char *add = strstr(line, "\"add_ns\": "), *cancel = strstr(line, "\"cancel_ns\": ");
        if (add != NULL && cancel != NULL) {
            r->add_ns = atof(add + 10);
            r->cancel_ns = atof(cancel + 13);
            found = 1;
        }
    }
    if (f != NULL) fclose(f);
    return found;
}

/* W3 runs per implementation. The lateness tail of a shared machine swings from run to
 * run, so the run with the median p99 is the one reported, with its histogram. */
#define W3_RUNS 3

static result median_w3(const char *impl, int baseline, result (*run)(const uint64_t *),
                        const uint64_t *delays) {
    result runs[W3_RUNS];
    int64_t *late[W3_RUNS];
    for (int i = 0; i < W3_RUNS; i++) {
        w3_fired = 0;
        runs[i] = run(delays);
        late[i] = xmalloc(n_timers * sizeof *late[i]);
        memcpy(late[i], w3_late, n_timers * sizeof *late[i]);
    }
    int order[W3_RUNS];
    for (int i = 0; i < W3_RUNS; i++) order[i] = i;
    for (int i = 1; i < W3_RUNS; i++) /* insertion sort by p99 */
        for (int j = i; j > 0 && runs[order[j]].late_p99_us < runs[order[j - 1]].late_p99_us; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int median = order[W3_RUNS / 2];
    json_w3(impl, baseline, runs[median]);
    dump_lateness(impl, late[median], n_timers);
    for (int i = 0; i < W3_RUNS; i++) free(late[i]);
    return runs[median];
}

#ifdef TW_BENCH_TIMEOUT_C
/* ---- timeout.c: single thread, no lock, the caller passes the time -------------------- */

static struct timeouts *tc_open(void) {
    int error = 0;
    struct timeouts *T = timeouts_open(TIMEOUT_mHZ, &error); /* a 1 ms wheel */
    if (T == NULL) {
        fprintf(stderr, "bench: timeouts_open failed (%d)\n", error);
        exit(1);
    }
    timeouts_update(T, (timeout_t)(now_ns() / 1000000));
    return T;
}

static result tc_w1(const uint64_t *delays, const size_t *order) {
    result r = {0};
    double rss = rss_bytes();
    struct timeouts *T = tc_open();
    /* Fresh pages, first touched by the adds (freed heap memory would be resident). */
    size_t bytes = n_timers * sizeof(struct timeout);
    struct timeout *to = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                              -1, 0);
    if (to == MAP_FAILED) {
        perror("bench: mmap");
        exit(1);
    }
    int64_t start = now_ns();
    for (size_t i = 0; i < n_timers; i++) {
        timeout_init(&to[i], 0);
        timeouts_add(T, &to[i], delays[i]);
    }
    r.add_ns = per_op(start, n_timers);
    r.bytes_per_timer = (rss_bytes() - rss) / (double)n_timers;
    start = now_ns();
    for (size_t i = 0; i < n_timers; i++) timeouts_del(T, &to[order[i]]);
    r.cancel_ns = per_op(start, n_timers);
    start = now_ns();
    for (size_t i = 0; i < n_timers; i++) timeouts_add(T, &to[order[i]], delays[order[i]]);
    r.readd_ns = per_op(start, n_timers);
    timeouts_close(T);
    munmap(to, bytes);
    return r;
}

static result tc_w2(void) {
    result r = {0};
    struct timeouts *T = tc_open();
    struct timeout *to = xmalloc(n_timers * sizeof *to);
    size_t *pick = xmalloc(n_touches * sizeof *pick);
    for (size_t i = 0; i < n_touches; i++) pick[i] = next_random() % n_timers;
    for (size_t i = 0; i < n_timers; i++) {
        timeout_init(&to[i], 0);
        timeouts_add(T, &to[i], 30000);
    }
    int64_t start = now_ns();
    for (size_t i = 0; i < n_touches; i++) timeouts_add(T, &to[pick[i]], 30000); /* re-arm */
    r.touch_ns = per_op(start, n_touches);
    timeouts_close(T);
    free(to);
    free(pick);
    return r;
}

/* The table of W1 and W2 against timeout.c. */
static void timeout_c_table(result ours1, result ours2, result batched1, result batched2,
                            result tc1, result tc2) {
    printf("\n%-34s %12s %12s %8s %10s\n", "C ABI vs timeout.c (same run)", "timerwheel-c",
           "timeout.c", "ratio", "target");
    row("W1 add_ns", ours1.add_ns, tc1.add_ns, 1.5, 0);
    row("W1 cancel_ns", ours1.cancel_ns, tc1.cancel_ns, 2.0, 0);
    row("W1 readd_ns", ours1.readd_ns, tc1.readd_ns, 0, 0);
    row("W1 bytes_per_timer", ours1.bytes_per_timer, tc1.bytes_per_timer, 0, 0);
    row("W2 touch_ns", ours2.touch_ns, tc2.touch_ns, 1.5, 0);
    row("W1 cancel_ns, tw_delete_many of 64", batched1.cancel_ns, tc1.cancel_ns, 0, 0);
    row("W2 touch_ns, tw_reset_many of 64", batched2.touch_ns, tc2.touch_ns, 0, 0);
}
#endif

int main(int argc, char **argv) {
    const char *rust_json = NULL;
    int only_export = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--only-export") == 0) {
            only_export = 1;
        } else if (strcmp(argv[i], "--quick") == 0) {
            n_timers /= 10;
            n_touches /= 10;
        } else if (strcmp(argv[i], "--rust") == 0 && i + 1 < argc) {
            rust_json = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--quick] [--only-export] [--rust W1_JSON_FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    uint64_t *delays = w1_delays();
    export_result ours9 = ours_w9(delays);
    json_w9(ours9);
    if (only_export) {
        table_w9(ours9);
        free(delays);
        return 0;
    }
    size_t *order = shuffled(n_timers);
    result ours1 = ours_w1(delays, order, 0), uv1 = uv_w1(delays, order);
    json_w1("timerwheel-c", 0, ours1);
    json_w1("libuv", 1, uv1);
    result ours2 = ours_w2(0), uv2 = uv_w2();
    json_w2("timerwheel-c", 0, ours2);
    json_w2("libuv", 1, uv2);
    result batched1 = ours_w1(delays, order, 1), batched2 = ours_w2(1);
    json_w1("timerwheel-c-batched", 0, batched1);
    json_w2("timerwheel-c-batched", 0, batched2);
#ifdef TW_BENCH_TIMEOUT_C
    result tc1 = tc_w1(delays, order), tc2 = tc_w2();
    json_w1("timeout.c", 1, tc1);
    json_w2("timeout.c", 1, tc2);
#endif
    for (size_t i = 0; i < n_timers; i++) delays[i] = 1000 + next_random() % 2000;
    w3_deadline = xmalloc(n_timers * sizeof *w3_deadline);
    w3_late = xmalloc(n_timers * sizeof *w3_late);
    result ours3 = median_w3("timerwheel-c", 0, ours_w3, delays);
    result uv3 = median_w3("libuv", 1, uv_w3, delays);

    printf("\n%-34s %12s %12s %8s %10s\n", "C ABI vs libuv (same run)", "timerwheel-c", "libuv",
           "ratio", "target");
    row("W1 add_ns", ours1.add_ns, uv1.add_ns, 0.3, 0);
    row("W1 cancel_ns", ours1.cancel_ns, uv1.cancel_ns, 0.15, 0);
    row("W1 readd_ns", ours1.readd_ns, uv1.readd_ns, 0, 0);
    row("W1 bytes_per_timer", ours1.bytes_per_timer, uv1.bytes_per_timer, 0, 56);
    row("W2 touch_ns", ours2.touch_ns, uv2.touch_ns, 0, 0);
    row("W3 fired", (double)ours3.fired, (double)uv3.fired, 0, 0);
    row("W3 late_p50_us", ours3.late_p50_us, uv3.late_p50_us, 0, 300);
    row("W3 late_p99_us", ours3.late_p99_us, uv3.late_p99_us, 0, 1500);
    row("W3 late_max_us", ours3.late_max_us, uv3.late_max_us, 0, 0);
    result rust1;
    if (read_rust_w1(rust_json, &rust1)) {
        printf("\n%-34s %12s %12s %8s %10s\n", "C ABI vs Rust API (same run)", "timerwheel-c",
               "rust", "ratio", "target");
        row("W1 add_ns", ours1.add_ns, rust1.add_ns, 1.3, 0);
        row("W1 cancel_ns", ours1.cancel_ns, rust1.cancel_ns, 1.3, 0);
    }
#ifdef TW_BENCH_TIMEOUT_C
    timeout_c_table(ours1, ours2, batched1, batched2, tc1, tc2);
#endif
    table_w9(ours9);
    if (ours3.fired != (long)n_timers) printf("W3: only %ld of %zu fired\n", ours3.fired, n_timers);
    free(delays);
    free(order);
    free(w3_deadline);
    free(w3_late);
    return 0;
}
