/*
 * --durable: the application's database (the ledger, an SQLite file of its own) and the one
 * thread that changes the accounts. Every change of an account arrives here as a request:
 * a session start, a fire of a durable timer (its token), a hang-up or the close at the end.
 * The writer applies a batch of requests in one transaction: each token is inserted under
 * the ledger's UNIQUE (key, name, occurrence, epoch), and only a token seen for the first
 * time has an effect (a charge, an idle timeout), stored in the same transaction. After the
 * commit the batch's tokens are acknowledged with one tw_durable_ack, and the timers the
 * batch ended are deleted from the store.
 *
 * The order makes a crash harmless at any instant:
 * - a start's two durable timers are added when the session starts, before it asks the
 *   writer for the start, and flushed before the commit that records the session: a live
 *   session in the ledger always has its timers in the store; timers whose session never
 *   reached the ledger fire once, find no session and are deleted;
 * - a fire not acknowledged is delivered again after the restart with the same token: the
 *   ledger holds it already (no second effect) or not (its effect is made now);
 * - a delete lost in the crash lets the timer fire again: its fire finds the session ended.
 * A charging point is charged when it falls due no later than the session's end (even if
 * its fire arrives after the end was recorded); the first point after the end, or one that
 * finds no credit, deletes the charging timer.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"

typedef enum request_kind { REQ_START, REQ_CHARGE, REQ_IDLE, REQ_END } request_kind;

typedef struct request {
    request_kind kind;
    uint32_t session;
    end_reason reason;  /* REQ_END */
    int64_t credit;     /* REQ_START */
    uint64_t key;       /* REQ_CHARGE, REQ_IDLE: the token */
    int64_t occurrence;
    uint64_t epoch;
} request;

typedef struct request_list {
    request *items;
    size_t len, cap;
} request_list;

/* A durable timer to delete after the commit. */
typedef struct doomed {
    uint64_t key;
    const char *name;
    uint32_t session; /* whose timer it is, or NOT_A_SESSION's */
} doomed;

/* A timer of a session that never reached the ledger: its delete marks no account. */
#define NOT_A_SESSION UINT32_MAX

struct ledger {
    sqlite3 *db;
    sqlite3_stmt *insert_token, *insert_session, *update_session;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    request_list queue;
    uint64_t requests;  /* requests made, over the process */
    int busy;           /* the writer is applying a batch */
    int stop;
    int failed;         /* a commit or a store call failed: the run fails */
    pthread_t thread;
    billing *b;
    /* The writer's own, reused from batch to batch. */
    tw_token *acks;
    doomed *deletes;
    uint32_t *idle_missing; /* sessions whose idle timeout was gone when deleted */
    size_t nacks, acks_cap, ndeletes, deletes_cap, nmissing, missing_cap;
};

const char *const CHARGE = "charge", *const IDLE_TIMEOUT = "idle";

static const char schema[] =
    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS sessions (session INTEGER PRIMARY KEY, key INTEGER NOT NULL,"
    " credit INTEGER NOT NULL, balance INTEGER NOT NULL, charges INTEGER NOT NULL,"
    " start_ms INTEGER NOT NULL, end_ms INTEGER NOT NULL, reason INTEGER NOT NULL,"
    " idle_missing INTEGER NOT NULL DEFAULT 0);"
    "CREATE TABLE IF NOT EXISTS ledger (key INTEGER NOT NULL, name TEXT NOT NULL,"
    " occurrence INTEGER NOT NULL, epoch INTEGER NOT NULL, effect INTEGER NOT NULL,"
    " UNIQUE (key, name, occurrence, epoch));";

/* Binds `values` to `st` and runs it: 0, or -1 with a message. */
static int run(sqlite3 *db, sqlite3_stmt *st, const int64_t *values, int n) {
    if (insert(st, values, n) == 0) return 0;
    fprintf(stderr, "billing: ledger: %s\n", sqlite3_errmsg(db));
    return -1;
}

int64_t ledger_meta(ledger *l, const char *key, int64_t fallback) {
    sqlite3_stmt *st = NULL;
    int64_t v = fallback;
    if (sqlite3_prepare_v2(l->db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

int ledger_set_meta(ledger *l, const char *key, int64_t value) {
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta VALUES ('%s', %lld)", key,
             (long long)value);
    return exec_sql(l->db, sql);
}

ledger *ledger_open(const char *path) {
    ledger *l = calloc(1, sizeof *l);
    if (l == NULL) return NULL;
    if (sqlite3_open(path, &l->db) != SQLITE_OK || exec_sql(l->db, schema) != 0 ||
        sqlite3_prepare_v2(l->db, "INSERT OR IGNORE INTO ledger VALUES (?,?,?,?,?)", -1,
                           &l->insert_token, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(l->db, "INSERT INTO sessions VALUES (?,?,?,?,?,?,?,?,0)", -1,
                           &l->insert_session, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(l->db,
                           "UPDATE sessions SET balance = ?2, charges = ?3, end_ms = ?4,"
                           " reason = ?5, idle_missing = ?6 WHERE session = ?1",
                           -1, &l->update_session, NULL) != SQLITE_OK) {
        fprintf(stderr, "billing: ledger %s: %s\n", path, sqlite3_errmsg(l->db));
        ledger_close(l);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->wake, NULL);
    pthread_cond_init(&l->idle, NULL);
    return l;
}

/* Loads the sessions into b->accounts; returns the number of the first session not opened
 * yet (one past the highest in the ledger), or -1. */
int64_t ledger_load(ledger *l, billing *b) {
    sqlite3_stmt *st = NULL;
    int64_t next = 0;
    if (sqlite3_prepare_v2(l->db, "SELECT * FROM sessions", -1, &st, NULL) != SQLITE_OK)
        return -1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t session = sqlite3_column_int64(st, 0);
        if (session < 0 || session >= b->opt.sessions) continue;
        account *a = &b->accounts[session];
        a->opened = 1;
        a->key = (uint64_t)sqlite3_column_int64(st, 1);
        a->credit = sqlite3_column_int64(st, 2);
        a->balance = sqlite3_column_int64(st, 3);
        a->charges = sqlite3_column_int64(st, 4);
        a->start_unix_ms = sqlite3_column_int64(st, 5);
        a->end_unix_ms = sqlite3_column_int64(st, 6);
        a->reason = (end_reason)sqlite3_column_int(st, 7);
        if (session + 1 > next) next = session + 1;
    }
    sqlite3_finalize(st);
    for (int64_t i = 0; i < next; i++) /* a start lost in a crash never happened */
        if (!b->accounts[i].opened) b->accounts[i].reason = CLOSED;
    return next;
}

/* Makes room for one more item in the array `*items` of `len` items. */
static void reserve(void *items, size_t *cap, size_t len, size_t size) {
    void **p = items;
    if (len < *cap) return;
    size_t grown_cap = *cap ? *cap * 2 : 1024;
    void *grown = realloc(*p, grown_cap * size);
    if (grown == NULL) abort(); /* an effect dropped silently would be a wrong bill */
    *p = grown;
    *cap = grown_cap;
}

static void push(ledger *l, request r) {
    pthread_mutex_lock(&l->lock);
    request_list *q = &l->queue;
    reserve(&q->items, &q->cap, q->len, sizeof *q->items);
    q->items[q->len++] = r;
    l->requests++;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
}

void ledger_start(ledger *l, uint32_t session, int64_t credit, int64_t start_unix_ms) {
    push(l, (request){.kind = REQ_START, .session = session, .credit = credit,
                      .occurrence = start_unix_ms});
}

void ledger_end(ledger *l, uint32_t session, end_reason reason) {
    push(l, (request){.kind = REQ_END, .session = session, .reason = reason});
}

void ledger_fire(ledger *l, const tw_token *token, int idle) {
    push(l, (request){.kind = idle ? REQ_IDLE : REQ_CHARGE,
                      .session = (uint32_t)(token->key & 0xffffffffu),
                      .key = token->key,
                      .occurrence = token->occurrence_unix_ms,
                      .epoch = token->epoch});
}

/* ---- the writer ---- */

static void doom(ledger *l, uint64_t key, const char *name, uint32_t session) {
    reserve(&l->deletes, &l->deletes_cap, l->ndeletes, sizeof *l->deletes);
    l->deletes[l->ndeletes++] = (doomed){key, name, session};
}

static int save_account(ledger *l, uint32_t session, const account *a, int idle_missing) {
    int64_t v[] = {session, a->balance, a->charges, a->end_unix_ms, a->reason, idle_missing};
    return run(l->db, l->update_session, v, 6);
}

/* Marks the account ended now; the caller holds its lock. */
static void end_now(billing *b, account *a, end_reason reason) {
    a->reason = reason;
    a->end_ns = now_ns();
    a->end_unix_ms = tw_now_ms(b->wheel);
    atomic_fetch_sub(&b->live, 1);
    atomic_fetch_add(&b->ended[reason], 1);
}

/* What a token does, decided under the account's lock before the token is inserted. */
typedef struct outcome {
    int effect;      /* charges the account, or ends it by its idle timeout */
    int stop_charge; /* delete the charging timer */
    int stop_idle;   /* delete the idle timeout */
} outcome;

static int foreign(const account *a, const request *r) {
    return !a->opened || a->key != r->key; /* a session that never reached the ledger */
}

static outcome decide(const account *a, const request *r) {
    if (foreign(a, r)) return (outcome){0, 1, 1};
    if (r->kind == REQ_IDLE) return (outcome){.effect = a->reason == LIVE};
    int due = a->reason == LIVE || r->occurrence <= a->end_unix_ms;
    if (!due || a->balance <= 0) return (outcome){.stop_charge = 1};
    return (outcome){.effect = 1};
}

static void apply_effect(billing *b, account *a, const request *r, outcome *o) {
    if (r->kind == REQ_IDLE) {
        atomic_fetch_add(&b->idle_fired, 1);
        end_now(b, a, IDLE);
        return;
    }
    a->balance -= 1;
    a->charges += 1;
    atomic_fetch_add(&b->credit_used, 1);
    atomic_fetch_add(&b->charge_runs, 1);
    if (a->balance > 0) return;
    o->stop_charge = 1;
    if (a->reason == LIVE) { /* else its end deleted the idle timeout already */
        end_now(b, a, EXHAUSTED);
        o->stop_idle = 1;
    }
}

/* Inserts the token with the effect it has; 1 if it was new, 0 if the ledger held it, -1. */
static int insert_token(ledger *l, const request *r, int effect) {
    sqlite3_stmt *st = l->insert_token;
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, (int64_t)r->key);
    sqlite3_bind_text(st, 2, r->kind == REQ_CHARGE ? CHARGE : IDLE_TIMEOUT, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, r->occurrence);
    sqlite3_bind_int64(st, 4, (int64_t)r->epoch);
    sqlite3_bind_int(st, 5, effect);
    if (sqlite3_step(st) != SQLITE_DONE) {
        fprintf(stderr, "billing: ledger: %s\n", sqlite3_errmsg(l->db));
        return -1;
    }
    return sqlite3_changes(l->db) == 1;
}

static int apply_token(ledger *l, const request *r) {
    billing *b = l->b;
    reserve(&l->acks, &l->acks_cap, l->nacks, sizeof *l->acks);
    l->acks[l->nacks++] = (tw_token){r->key, r->kind == REQ_CHARGE ? CHARGE : IDLE_TIMEOUT,
                                     r->occurrence, r->epoch};
    if (r->session >= b->opt.sessions) return 0;
    account *a = &b->accounts[r->session];
    pthread_mutex_lock(account_lock(b, r->session));
    outcome o = decide(a, r);
    uint32_t owner = foreign(a, r) ? NOT_A_SESSION : r->session;
    int fresh = insert_token(l, r, o.effect), rc = fresh < 0 ? -1 : 0;
    if (fresh == 0) atomic_fetch_add(&b->duplicates, 1);
    if (fresh == 1 && o.effect) {
        apply_effect(b, a, r, &o);
        rc = save_account(l, r->session, a, 0);
    }
    pthread_mutex_unlock(account_lock(b, r->session));
    if (fresh == 1 && o.stop_charge) doom(l, r->key, CHARGE, owner);
    if (fresh == 1 && o.stop_idle) doom(l, r->key, IDLE_TIMEOUT, owner);
    return rc;
}

static int apply_start(ledger *l, const request *r) {
    billing *b = l->b;
    account *a = &b->accounts[r->session];
    pthread_mutex_lock(account_lock(b, r->session));
    a->opened = 1;
    a->key = session_key(b, r->session);
    a->credit = a->balance = r->credit;
    a->charges = 0;
    a->start_ns = now_ns();
    a->start_unix_ms = r->occurrence;
    a->end_unix_ms = 0;
    a->reason = LIVE;
    atomic_fetch_add(&b->live, 1);
    pthread_mutex_unlock(account_lock(b, r->session));
    int64_t v[] = {r->session, (int64_t)a->key, a->credit, a->balance, 0, a->start_unix_ms, 0,
                   LIVE};
    return run(l->db, l->insert_session, v, 8);
}

static int apply_end(ledger *l, const request *r) {
    billing *b = l->b;
    account *a = &b->accounts[r->session];
    int rc = 0, ended = 0;
    pthread_mutex_lock(account_lock(b, r->session));
    if (a->opened && a->reason == LIVE) {
        end_now(b, a, r->reason);
        rc = save_account(l, r->session, a, 0);
        ended = 1;
    }
    pthread_mutex_unlock(account_lock(b, r->session));
    if (ended) doom(l, a->key, IDLE_TIMEOUT, r->session);
    return rc;
}

/* Makes the changes made before the batch's requests durable (the sessions' timers), not
 * those queued after now (the idle timeouts' resets): a flush to the last sequence handed
 * out now. */
static int flush_own_changes(billing *b) {
    tw_durable_stats st = {.size = sizeof st};
    if (durable_check(b, "stats", tw_durable_get_stats(b->wheel, &st)) != 0) return -1;
    return durable_check(b, "flush", tw_durable_flush_to(b->wheel, st.last_seq, NULL));
}

/* Flushes the durable timers of the batch's new sessions (session_start added them before it
 * asked for the start): they are in the store before the commit that records their
 * sessions. */
static int flush_new_timers(ledger *l, const request *batch, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (batch[i].kind == REQ_START) return flush_own_changes(l->b);
    return 0;
}

static int apply_request(ledger *l, const request *r) {
    switch (r->kind) {
    case REQ_START: return apply_start(l, r);
    case REQ_END: return apply_end(l, r);
    default: return apply_token(l, r);
    }
}

/* Records the idle timeouts found missing by the last batch's deletes. */
static int save_missing(ledger *l) {
    for (size_t i = 0; i < l->nmissing; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "UPDATE sessions SET idle_missing = 1 WHERE session = %u",
                 l->idle_missing[i]);
        if (exec_sql(l->db, sql) != 0) return -1;
    }
    l->nmissing = 0;
    return 0;
}

/* After the commit: one acknowledgement for the batch's tokens, then the deletes. */
static int settle(ledger *l) {
    billing *b = l->b;
    int rc = 0;
    if (l->nacks > 0)
        rc = durable_check(b, "ack", tw_durable_ack(b->wheel, l->acks, l->nacks, NULL));
    atomic_fetch_add(&b->acked, l->nacks);
    for (size_t i = 0; i < l->ndeletes && rc == 0; i++) {
        doomed *d = &l->deletes[i];
        tw_status s = tw_durable_delete(b->wheel, d->key, d->name);
        if (s == TW_OK) atomic_fetch_add(&b->deletes_ok, 1);
        else if (s == TW_ERR_NOT_FOUND && d->name == IDLE_TIMEOUT &&
                 d->session != NOT_A_SESSION) {
            reserve(&l->idle_missing, &l->missing_cap, l->nmissing, sizeof *l->idle_missing);
            l->idle_missing[l->nmissing++] = d->session;
        } else if (s != TW_ERR_NOT_FOUND) rc = durable_check(b, "delete", s);
    }
    l->nacks = l->ndeletes = 0;
    return rc;
}

static int apply_batch(ledger *l, const request *batch, size_t n) {
    if (flush_new_timers(l, batch, n) != 0 || exec_sql(l->db, "BEGIN IMMEDIATE") != 0) return -1;
    int rc = save_missing(l);
    for (size_t i = 0; i < n && rc == 0; i++) rc = apply_request(l, &batch[i]);
    if (rc != 0 || exec_sql(l->db, "COMMIT") != 0) {
        exec_sql(l->db, "ROLLBACK");
        return -1;
    }
    return settle(l);
}

static void *writer_main(void *arg) {
    ledger *l = arg;
    request_list batch = {0};
    pthread_mutex_lock(&l->lock);
    for (;;) {
        while (l->queue.len == 0 && !l->stop) pthread_cond_wait(&l->wake, &l->lock);
        if (l->queue.len == 0) break;
        request_list taken = l->queue;
        l->queue = batch;
        l->queue.len = 0;
        l->busy = 1;
        pthread_mutex_unlock(&l->lock);
        if (!l->failed && apply_batch(l, taken.items, taken.len) != 0) {
            fprintf(stderr, "billing: the ledger failed: the run stops charging\n");
            l->failed = 1;
        }
        batch = taken;
        pthread_mutex_lock(&l->lock);
        l->busy = 0;
        pthread_cond_broadcast(&l->idle);
    }
    pthread_mutex_unlock(&l->lock);
    free(batch.items);
    return NULL;
}

int ledger_run(ledger *l, billing *b) {
    l->b = b;
    return pthread_create(&l->thread, NULL, writer_main, l) == 0 ? 0 : -1;
}

int64_t ledger_wait(ledger *l) {
    pthread_mutex_lock(&l->lock);
    while (l->queue.len > 0 || l->busy) pthread_cond_wait(&l->idle, &l->lock);
    int64_t made = l->failed ? -1 : (int64_t)l->requests;
    pthread_mutex_unlock(&l->lock);
    return made;
}

/* Commits what the last deletes found and stops the writer. */
int ledger_finish(ledger *l) {
    pthread_mutex_lock(&l->lock);
    l->stop = 1;
    pthread_cond_signal(&l->wake);
    pthread_mutex_unlock(&l->lock);
    pthread_join(l->thread, NULL);
    l->thread = 0;
    if (l->failed) return -1;
    return exec_sql(l->db, "BEGIN") == 0 && save_missing(l)== 0 && exec_sql(l->db, "COMMIT") == 0
               ? 0 : -1;
}

void ledger_close(ledger *l) {
    if (l == NULL) return;
    sqlite3_finalize(l->insert_token);
    sqlite3_finalize(l->insert_session);
    sqlite3_finalize(l->update_session);
    sqlite3_close(l->db);
    free(l->queue.items);
    free(l->acks);
    free(l->deletes);
    free(l->idle_missing);
    free(l);
}
