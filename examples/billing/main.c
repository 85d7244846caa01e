/*
 * billing: a prepaid billing simulation on timerwheel, through the public C header.
 * Runs the driver for the given duration with a status line a second, closes the sessions
 * still open, waits until every timer has ended, then checks the accounts (report.c). With
 * --restart-at it saves and re-executes itself part way (restart.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "billing.h"

void sleep_ms(uint64_t ms) {
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int setup(billing *b) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.min_workers = 1;
    cfg.max_workers = b->opt.workers;
    cfg.slow_callback_us = SLOW_CALLBACK_US;
    cfg.store_path = b->opt.durable; /* NULL without --durable */
    cfg.durability = b->opt.durable != NULL ? TW_DURABLE_ASYNC : TW_DURABLE_OFF;
    /* Tens of thousands of changes a second: larger commits, each paying one fsync, keep
     * up with them (the delay still bounds what a crash loses). */
    cfg.store_batch = 10000;
    tw_status s = tw_create(&cfg, &b->wheel);
    if (s != TW_OK) {
        fprintf(stderr, "billing: tw_create: %s\n", tw_status_str(s));
        return -1;
    }
    b->accounts = calloc(b->opt.sessions, sizeof *b->accounts);
    b->locks = malloc(sizeof *b->locks * LOCK_STRIPES);
    if (b->accounts == NULL || b->locks == NULL) return -1;
    for (int i = 0; i < LOCK_STRIPES; i++) pthread_mutex_init(&b->locks[i], NULL);
    return 0;
}

/* Prints the figures of each second until `end` (on now_ns). */
static void watch(billing *b, live_figures *f, uint64_t end) {
    uint64_t next = now_ns();
    while (now_ns() < end) {
        next += 1000000000u;
        uint64_t wake = next < end ? next : end, t = now_ns();
        if (wake > t) sleep_ms((wake - t + 999999u) / 1000000u);
        status_line(b, f, (double)(now_ns() - b->run_start_ns) / 1e9);
    }
    if (isatty(STDOUT_FILENO)) printf("\n");
}

tw_stats drain(billing *b) {
    tw_stats st = {.size = sizeof st};
    for (int waited = 0; waited < 1000; waited++) {
        tw_get_stats(b->wheel, &st);
        if (st.pending == 0 && atomic_load(&b->contexts_freed) == atomic_load(&b->contexts_made))
            break;
        sleep_ms(10);
    }
    return st;
}

/* Closes the sessions still open and drains the wheel. */
static tw_stats close_and_drain(billing *b) {
    uint32_t started = atomic_load(&b->started);
    for (uint32_t i = 0; i < started; i++) session_hang_up(b, i, CLOSED);
    return drain(b);
}

/* When this phase of the run ends: the restart point, or the end of the run. */
static uint64_t phase_end(const billing *b) {
    int restarting = b->opt.restart_at_s > 0 && b->opt.resume == NULL;
    double s = restarting ? b->opt.restart_at_s : b->opt.duration_s;
    return b->run_start_ns + (uint64_t)(s * 1e9);
}

void teardown(billing *b) {
    if (b->wheel != NULL) tw_destroy(b->wheel);
    if (b->locks != NULL)
        for (int i = 0; i < LOCK_STRIPES; i++) pthread_mutex_destroy(&b->locks[i]);
    free(b->locks);
    free(b->accounts);
}

int main(int argc, char **argv) {
    static billing b;
    int rc = options_parse(&b.opt, argc, argv);
    if (rc != 0) return rc > 0 ? 0 : 2;
    printf("billing: %u sessions over %.0f s, charge every %llu ms, idle timeout %llu ms,"
           " %.0f events/s, %.1f%% slow calls of %llu ms, up to %u workers (timerwheel %s)\n",
           b.opt.sessions, b.opt.duration_s, (unsigned long long)b.opt.period_ms,
           (unsigned long long)b.opt.idle_ms, b.opt.events_per_s, b.opt.slow_share * 100,
           (unsigned long long)b.opt.slow_ms, b.opt.workers, tw_version());
    if (b.opt.durable != NULL) {
        rc = durable_main(&b);
        teardown(&b);
        return rc;
    }
    if (setup(&b) != 0) {
        teardown(&b);
        return 1;
    }
    b.run_start_ns = now_ns();
    if (b.opt.resume != NULL && restart_load(&b) != 0) {
        teardown(&b);
        return 1;
    }
    live_figures figures;
    metrics_http http = {.fd = -1};
    pthread_t driver;
    if (live_figures_open(&b, &figures) != 0 ||
        (b.opt.metrics_port >= 0 && metrics_http_start(&http, b.wheel, b.opt.metrics_port) != 0) ||
        pthread_create(&driver, NULL, driver_main, &b) != 0) {
        metrics_http_stop(&http);
        live_figures_close(&figures);
        teardown(&b);
        return 1;
    }
    watch(&b, &figures, phase_end(&b));
    atomic_store(&b.stop, 1);
    pthread_join(driver, NULL);
    metrics_http_stop(&http);
    live_figures_close(&figures);
    if (b.opt.restart_at_s > 0 && b.opt.resume == NULL) {
        restart_save_and_exec(&b, argv); /* returns only when it failed */
        teardown(&b);
        return 1;
    }
    tw_stats st = close_and_drain(&b);
    double elapsed = (double)(now_ns() - b.run_start_ns) / 1e9;
    tw_destroy(b.wheel);
    b.wheel = NULL;
    int failed = final_report(&b, &st, elapsed);
    teardown(&b);
    return failed ? 1 : 0;
}
