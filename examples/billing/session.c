/*
 * The life of a session: start (two timers), activity (tw_reset of the idle timeout),
 * charging (a fixed-rate timer), and the three ways to end: hang-up, idle timeout, or
 * credit exhausted. Whoever ends a session records why and when under the account's lock,
 * then deletes the session's other timers. Both timers are in a group of their own, which
 * frees their shared context once the last of them has ended.
 * For a restart (restart.c) a session can also be frozen, suspended, settled and resumed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "billing.h"

/* What both timers of a session point to; freed by their group once both have ended. */
typedef struct session_ctx {
    billing *b;
    uint32_t index;
} session_ctx;

uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

pthread_mutex_t *account_lock(billing *b, uint32_t index) {
    return &b->locks[index % LOCK_STRIPES];
}

/* The session group's drop: runs once, after the group was closed and its last timer
 * ended. */
static void session_free(void *user_data) {
    session_ctx *ctx = user_data;
    atomic_fetch_add(&ctx->b->contexts_freed, 1);
    free(ctx);
}

static void delete_timer(billing *b, tw_timer_id id) {
    if (tw_delete(b->wheel, id) == TW_OK) atomic_fetch_add(&b->deletes_ok, 1);
}

/* Marks the account ended; the caller holds its lock. 0 if it had ended already. */
static int end_account(billing *b, account *a, end_reason reason) {
    if (a->reason != LIVE) return 0;
    a->reason = reason;
    a->end_ns = now_ns();
    atomic_fetch_sub(&b->live, 1);
    atomic_fetch_add(&b->ended[reason], 1);
    return 1;
}

/* Deducts one unit; 1 when that used the last of the credit and ended the account. The
 * caller holds the account's lock and the account is live. */
static int charge_account(billing *b, account *a) {
    a->balance -= 1;
    a->charges += 1;
    atomic_fetch_add(&b->credit_used, 1);
    return a->balance == 0 && end_account(b, a, EXHAUSTED);
}

static void on_idle(tw_timer_id id, void *user_data) {
    (void)id;
    session_ctx *ctx = user_data;
    billing *b = ctx->b;
    account *a = &b->accounts[ctx->index];
    atomic_fetch_add(&b->idle_fired, 1);
    pthread_mutex_lock(account_lock(b, ctx->index));
    if (!atomic_load(&b->frozen) && end_account(b, a, IDLE)) delete_timer(b, a->charge_id);
    pthread_mutex_unlock(account_lock(b, ctx->index));
}

/* Decides from the timer and the charge number alone whether this call is a slow one. */
static int is_slow(const billing *b, tw_timer_id id, int64_t charge) {
    uint64_t x = id * 0x9E3779B97F4A7C15u ^ (uint64_t)charge * 0xBF58476D1CE4E5B9u;
    x ^= x >> 31;
    x *= 0x94D049BB133111EBu;
    x ^= x >> 29;
    return (double)(x >> 11) / 9007199254740992.0 < b->opt.slow_share;
}

/* The slow part of a charge: a database write, outside the account lock. */
static void write_charge_record(billing *b) {
    uint64_t ms = b->opt.slow_ms;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    atomic_fetch_add(&b->slow_calls, 1);
    nanosleep(&ts, NULL);
}

static void on_charge(tw_timer_id id, void *user_data) {
    session_ctx *ctx = user_data;
    billing *b = ctx->b;
    account *a = &b->accounts[ctx->index];
    int64_t charge = 0;
    atomic_fetch_add(&b->charge_runs, 1);
    pthread_mutex_lock(account_lock(b, ctx->index));
    if (a->reason == LIVE && atomic_load(&b->frozen)) {
        atomic_fetch_add(&a->owed_charges, 1);
    } else if (a->reason == LIVE) {
        if (charge_account(b, a)) {
            delete_timer(b, id);
            delete_timer(b, a->idle_id);
        }
        charge = a->charges;
    }
    pthread_mutex_unlock(account_lock(b, ctx->index));
    if (charge > 0 && is_slow(b, id, charge)) write_charge_record(b);
}

/* Counts an add; on refusal reports it and returns -1. */
static int counted_add(billing *b, tw_status s) {
    if (s != TW_OK) {
        fprintf(stderr, "billing: add failed: %s\n", tw_status_str(s));
        atomic_fetch_add(&b->add_errors, 1);
        return -1;
    }
    atomic_fetch_add(&b->timers_added, 1);
    return 0;
}

/* When a session's two timers run: the idle timeout `idle_ms` from now, charging from now
 * (charge_unix_ms < 0) or on the schedule whose next point is charge_unix_ms. */
typedef struct schedule {
    uint64_t idle_ms;
    int64_t charge_unix_ms;
} schedule;

static int add_charge(billing *b, session_ctx *ctx, tw_group_id group, int64_t first_unix_ms,
                      tw_timer_id *out) {
    uint64_t period = b->opt.period_ms;
    if (first_unix_ms < 0)
        return counted_add(b, tw_group_add_periodic(b->wheel, group, period, period,
                                                    TW_FIXED_RATE, on_charge, ctx, NULL, out));
    return counted_add(b, tw_group_add_periodic_at(b->wheel, group, first_unix_ms, period,
                                                   TW_FIXED_RATE, TW_MISSED_RUN_ONCE, on_charge,
                                                   ctx, NULL, out));
}

/* Opens account `index` (its money already set) and starts its two timers in a group of
 * their own, which the session closes at once: the group frees the context after the last
 * timer ended. The lock is held across the adds so that no callback sees the account
 * before both ids are stored. */
static int open_account(billing *b, uint32_t index, schedule when) {
    account *a = &b->accounts[index];
    session_ctx *ctx = malloc(sizeof *ctx);
    tw_group_id group = 0;
    if (ctx == NULL) return -1;
    ctx->b = b;
    ctx->index = index;
    if (tw_group_create(b->wheel, ctx, session_free, &group) != TW_OK) {
        free(ctx);
        return -1;
    }
    atomic_fetch_add(&b->contexts_made, 1);
    pthread_mutex_lock(account_lock(b, index));
    a->reason = LIVE;
    atomic_fetch_add(&b->live, 1);
    int rc = 0;
    if (counted_add(b, tw_group_add(b->wheel, group, when.idle_ms, on_idle, ctx, NULL,
                                    &a->idle_id)) != 0) {
        rc = -1;
        end_account(b, a, CLOSED);
    } else if (add_charge(b, ctx, group, when.charge_unix_ms, &a->charge_id) != 0) {
        rc = -1;
        end_account(b, a, CLOSED);
        delete_timer(b, a->idle_id);
    }
    tw_group_close(b->wheel, group);
    pthread_mutex_unlock(account_lock(b, index));
    return rc;
}

/* Opens account `index` with `credit` units. */
int session_start(billing *b, uint32_t index, int64_t credit) {
    if (b->ledger != NULL) { /* --durable: its timers now, the ledger's writer opens it */
        int64_t start_ms = tw_now_ms(b->wheel);
        if (durable_add_timers(b, index, start_ms) != 0) return -1;
        ledger_start(b->ledger, index, credit, start_ms);
        return 0;
    }
    account *a = &b->accounts[index];
    a->credit = a->balance = credit;
    a->start_ns = now_ns();
    return open_account(b, index, (schedule){b->opt.idle_ms, -1});
}

int session_resume(billing *b, uint32_t index, int64_t idle_unix_ms, int64_t charge_unix_ms) {
    int64_t idle_in = idle_unix_ms - tw_now_ms(b->wheel);
    return open_account(b, index, (schedule){idle_in > 0 ? (uint64_t)idle_in : 0,
                                             charge_unix_ms});
}

uint32_t session_index(const void *user_data) {
    return ((const session_ctx *)user_data)->index;
}

void sessions_freeze(billing *b) {
    atomic_store(&b->frozen, 1);
    for (int i = 0; i < LOCK_STRIPES; i++) { /* no callback still acts on an account */
        pthread_mutex_lock(&b->locks[i]);
        pthread_mutex_unlock(&b->locks[i]);
    }
}

int session_settle(billing *b, uint32_t index, int64_t owed) {
    account *a = &b->accounts[index];
    pthread_mutex_lock(account_lock(b, index));
    while (a->reason == LIVE && owed-- > 0) charge_account(b, a);
    int live = a->reason == LIVE;
    pthread_mutex_unlock(account_lock(b, index));
    return live;
}

void session_suspend(billing *b, uint32_t index) {
    account *a = &b->accounts[index];
    pthread_mutex_lock(account_lock(b, index));
    if (a->reason == LIVE) {
        delete_timer(b, a->idle_id);
        delete_timer(b, a->charge_id);
    }
    pthread_mutex_unlock(account_lock(b, index));
}

int session_touch(billing *b, uint32_t index) {
    if (b->ledger != NULL) return durable_touch(b, index);
    account *a = &b->accounts[index];
    pthread_mutex_lock(account_lock(b, index));
    int live = a->reason == LIVE;
    tw_timer_id idle = a->idle_id;
    pthread_mutex_unlock(account_lock(b, index));
    /* Outside the lock, so that callbacks of the accounts behind it do not wait for the
     * wheel: an idle timer that fired or was deleted meanwhile is not re-armed (its id is
     * no longer pending: TW_ERR_NOT_FOUND). */
    if (live) tw_reset(b->wheel, idle, b->opt.idle_ms);
    return live;
}

void session_hang_up(billing *b, uint32_t index, end_reason reason) {
    if (b->ledger != NULL) {
        ledger_end(b->ledger, index, reason);
        return;
    }
    account *a = &b->accounts[index];
    pthread_mutex_lock(account_lock(b, index));
    if (end_account(b, a, reason)) {
        delete_timer(b, a->idle_id);
        delete_timer(b, a->charge_id);
    }
    pthread_mutex_unlock(account_lock(b, index));
}
