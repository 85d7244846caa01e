/*
 * --durable DB: the sessions' timers are durable timers in the store DB (handlers by name:
 * "charge", every period, and "idle", the idle timeout), the accounts and every fire's token
 * are in the application's own database DB.ledger (ledger.c). The run picks up from both
 * files when they exist: a process killed at any moment is started again and the run goes
 * on to its end. --crash-at S does that here: the run is a child process that SIGKILLs
 * itself at a random moment within S seconds; this process starts it again from the files.
 * examples/billing/check_demo.py --durable checks the ledger afterwards.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "billing.h"

/* The two timers of a session share a key: the session's number, and the process that
 * opened it above (a session whose start was lost in a crash is opened again under a new
 * key, so the lost one's timers never touch it). */
uint64_t session_key(const billing *b, uint32_t session) {
    return (uint64_t)b->generation << 32 | session;
}

int durable_check(billing *b, const char *what, tw_status s) {
    if (s == TW_OK) return 0;
    char message[512] = "";
    size_t needed = 0;
    if (s == TW_ERR_STORE) tw_durable_error(b->wheel, message, sizeof message, &needed);
    fprintf(stderr, "billing: %s: %s %s\n", what, tw_status_str(s), message);
    return -1;
}

static int32_t on_charge_fire(const tw_token *token, const void *payload, size_t len,
                              void *ctx) {
    (void)payload;
    (void)len;
    ledger_fire(((billing *)ctx)->ledger, token, 0);
    return TW_ACK_LATER; /* acknowledged once its effect is committed */
}

static int32_t on_idle_fire(const tw_token *token, const void *payload, size_t len,
                            void *ctx) {
    (void)payload;
    (void)len;
    ledger_fire(((billing *)ctx)->ledger, token, 1);
    return TW_ACK_LATER;
}

int durable_touch(billing *b, uint32_t index) {
    account *a = &b->accounts[index];
    pthread_mutex_lock(account_lock(b, index));
    int live = a->reason == LIVE;
    uint64_t key = a->opened ? a->key : session_key(b, index);
    pthread_mutex_unlock(account_lock(b, index));
    /* Not found: the session has just ended, or its start is not applied yet. */
    if (live) tw_durable_reset(b->wheel, key, IDLE_TIMEOUT,
                               tw_now_ms(b->wheel) + (int64_t)b->opt.idle_ms);
    return live;
}

/* Adds a new session's two durable timers, due from `start_ms`. Here, on the thread that
 * starts the session, and not on the ledger's writer: a periodic timer added after more
 * than a period has passed since its first point owes only the latest point that passed
 * (docs/durable.md), and the writer can be seconds behind under load. */
int durable_add_timers(billing *b, uint32_t index, int64_t start_ms) {
    uint64_t key = session_key(b, index);
    if (durable_check(b, "add idle timeout",
                      tw_durable_add(b->wheel, key, IDLE_TIMEOUT, NULL, 0,
                                     start_ms + (int64_t)b->opt.idle_ms, 0, 0)) != 0 ||
        durable_check(b, "add charging",
                      tw_durable_add(b->wheel, key, CHARGE, NULL, 0,
                                     start_ms + (int64_t)b->opt.period_ms, b->opt.period_ms,
                                     0)) != 0)
        return -1;
    atomic_fetch_add(&b->timers_added, 2);
    return 0;
}

/* Opens the ledger next to the store and picks up the run it holds, if any. */
static int open_ledger(billing *b) {
    char path[4096];
    snprintf(path, sizeof path, "%s.ledger", b->opt.durable);
    b->ledger = ledger_open(path);
    if (b->ledger == NULL) return -1;
    int64_t now_ms = tw_now_ms(b->wheel);
    int64_t start_ms = ledger_meta(b->ledger, "run_start_ms", now_ms);
    b->generation = (uint32_t)ledger_meta(b->ledger, "generation", 0) + 1;
    if (ledger_set_meta(b->ledger, "run_start_ms", start_ms) != 0 ||
        ledger_set_meta(b->ledger, "generation", b->generation) != 0)
        return -1;
    uint64_t behind_ns = (uint64_t)(now_ms - start_ms) * 1000000u;
    b->run_start_ns = now_ns() - (behind_ns < now_ns() ? behind_ns : 0);
    int64_t opened = ledger_load(b->ledger, b);
    if (opened < 0) return -1;
    atomic_store(&b->started, (uint32_t)opened);
    for (int64_t i = 0; i < opened; i++)
        if (b->accounts[i].opened && b->accounts[i].reason == LIVE) atomic_fetch_add(&b->live, 1);
    live_figures_resume(b);
    if (b->generation > 1)
        printf("billing: picked up the run from %s: %lld sessions opened, %lld live\n",
               b->opt.durable, (long long)opened, (long long)atomic_load(&b->live));
    return 0;
}

/* After a restore every live session must still have its charging timer: adding it again
 * must find it there. Returns the number missing (each added again), or -1. */
static int64_t charging_timers_lost(billing *b) {
    int64_t lost = 0, now_ms = tw_now_ms(b->wheel), period = (int64_t)b->opt.period_ms;
    uint32_t opened = atomic_load(&b->started);
    for (uint32_t i = 0; i < opened; i++) {
        account *a = &b->accounts[i];
        if (!a->opened || a->reason != LIVE) continue;
        int64_t next = a->start_unix_ms + ((now_ms - a->start_unix_ms) / period + 1) * period;
        tw_status s = tw_durable_add(b->wheel, a->key, CHARGE, NULL, 0, next, b->opt.period_ms, 0);
        if (s == TW_OK) lost++;
        else if (s != TW_ERR_EXISTS) return durable_check(b, "checking a charging timer", s);
    }
    return lost;
}

/* Registers the handlers, opens the store (which delivers the fires it holds again) and
 * starts the ledger's writer. */
static int open_store(billing *b) {
    if (durable_check(b, "register charge",
                      tw_handler_register(b->wheel, CHARGE, on_charge_fire, b)) != 0 ||
        durable_check(b, "register idle",
                      tw_handler_register(b->wheel, IDLE_TIMEOUT, on_idle_fire, b)) != 0 ||
        durable_check(b, "tw_durable_open", tw_durable_open(b->wheel)) != 0)
        return -1;
    int64_t lost = charging_timers_lost(b);
    if (lost < 0) return -1;
    if (lost > 0) fprintf(stderr, "billing: %lld charging timers were lost\n", (long long)lost);
    int64_t before = ledger_meta(b->ledger, "charging_timers_lost", 0);
    if (ledger_set_meta(b->ledger, "charging_timers_lost", before + lost) != 0) return -1;
    return ledger_run(b->ledger, b);
}

/* --crash-at: SIGKILLs this process after `ms`. */
static void *crash_main(void *arg) {
    sleep_ms((uint64_t)(uintptr_t)arg);
    printf("billing: SIGKILL now\n");
    fflush(stdout);
    kill(getpid(), SIGKILL);
    return NULL;
}

/* Whether every timer has ended and every fire is acknowledged: none pending or due, and
 * none fired whose handler has not yet handed it to the ledger or whose ack is not yet
 * made (a fire waits for the store before its handler runs when the store is busy). */
static int all_settled(billing *b) {
    tw_stats st = {.size = sizeof st};
    tw_durable_stats ds = {.size = sizeof ds};
    tw_get_stats(b->wheel, &st);
    if (tw_durable_get_stats(b->wheel, &ds) != TW_OK) return 0;
    return st.pending == 0 && st.queue_depth == 0 && ds.unacked_fires == 0;
}

/* Closes the sessions still open and waits until every timer has ended (a charging timer
 * ends at its first point after its session's end) and every fire is in the ledger and
 * acknowledged, with no request made for 100 ms. */
static void close_and_drain(billing *b) {
    uint32_t opened = atomic_load(&b->started);
    for (uint32_t i = 0; i < opened; i++) ledger_end(b->ledger, i, CLOSED);
    uint64_t deadline = now_ns() + (b->opt.period_ms + 10000) * 1000000u;
    int64_t made = -2;
    while (now_ns() < deadline) {
        int64_t now_made = ledger_wait(b->ledger);
        int settled = all_settled(b);
        if (now_made < 0 || (settled && now_made == made)) return;
        made = settled ? now_made : -2;
        sleep_ms(100);
    }
}

static int report(billing *b) {
    tw_stats st = {.size = sizeof st};
    tw_get_stats(b->wheel, &st);
    uint64_t seq = 0;
    int failed = durable_check(b, "tw_durable_flush", tw_durable_flush(b->wheel, &seq)) != 0;
    printf("billing: %u sessions, %llu charges, %llu idle timeouts, %llu fires delivered again"
           " and found in the ledger, %llu tokens acknowledged, %llu timers pending, durable"
           " sequence %llu\n",
           atomic_load(&b->started), (unsigned long long)atomic_load(&b->credit_used),
           (unsigned long long)atomic_load(&b->idle_fired),
           (unsigned long long)atomic_load(&b->duplicates),
           (unsigned long long)atomic_load(&b->acked), (unsigned long long)st.pending,
           (unsigned long long)seq);
    if (st.pending != 0) {
        fprintf(stderr, "billing: timers still pending after the close\n");
        failed = 1;
    }
    return failed;
}

/* One process of the run: from the files to the end of the run (or the crash). */
static int durable_run(billing *b, uint64_t crash_ms) {
    if (setup(b) != 0 || open_ledger(b) != 0 || open_store(b) != 0) return 1;
    pthread_t crash, driver;
    if (crash_ms > 0)
        pthread_create(&crash, NULL, crash_main, (void *)(uintptr_t)crash_ms);
    live_figures figures;
    if (live_figures_open(b, &figures) != 0 ||
        pthread_create(&driver, NULL, driver_main, b) != 0)
        return 1;
    uint64_t end = b->run_start_ns + (uint64_t)(b->opt.duration_s * 1e9);
    uint64_t next = now_ns();
    while (now_ns() < end) {
        next += 1000000000u;
        uint64_t wake = next < end ? next : end, t = now_ns();
        if (wake > t) sleep_ms((wake - t + 999999u) / 1000000u);
        status_line(b, &figures, (double)(now_ns() - b->run_start_ns) / 1e9);
    }
    atomic_store(&b->stop, 1);
    pthread_join(driver, NULL);
    live_figures_close(&figures);
    close_and_drain(b);
    int failed = ledger_finish(b->ledger) != 0;
    failed |= report(b);
    tw_destroy(b->wheel); /* the store keeps what it holds: nothing, after the drain */
    b->wheel = NULL;
    ledger_close(b->ledger);
    b->ledger = NULL;
    return failed;
}

/* --crash-at: runs the run in a child that kills itself within the given seconds, and
 * starts it again from the files after the kill. */
static int supervise(billing *b) {
    srand((unsigned)(now_ns() ^ (uint64_t)getpid()));
    uint64_t crash_ms = 1 + (uint64_t)((double)rand() / RAND_MAX * b->opt.crash_at_s * 1000);
    for (int restarts = 0;; restarts++) {
        fflush(stdout);
        pid_t child = fork();
        if (child < 0) return 1;
        if (child == 0) {
            int failed = durable_run(b, restarts == 0 ? crash_ms : 0);
            fflush(stdout);
            _exit(failed);
        }
        int status = 0;
        if (waitpid(child, &status, 0) < 0) return 1;
        if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && restarts == 0) {
            printf("billing: killed (SIGKILL) after %llu ms; starting again from %s\n",
                   (unsigned long long)crash_ms, b->opt.durable);
            continue;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
    }
}

int durable_main(billing *b) {
    if (b->opt.crash_at_s > 0) return supervise(b);
    return durable_run(b, 0);
}
