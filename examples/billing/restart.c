/*
 * --restart-at: part way through, the run saves itself to an SQLite database, destroys its
 * wheel and re-executes its own binary (execv) with --resume DB, which starts from the
 * database alone: nothing else is carried over.
 *
 * Saving: the driver has stopped; the callbacks are frozen (a charge only counts as owed,
 * an idle timeout does nothing, session.c); tw_export takes the timers at one instant
 * (taken again while a charging callback runs, which the export leaves out), each mapped to
 * its session through user_data, with the charges owed up to that instant; then every timer
 * is deleted and the wheel drained, the owed charges applied, and the accounts and the live
 * sessions' timers written in one transaction (an idle timeout the export missed fired while
 * frozen: it is saved as due at once). Resuming: each live session's idle timeout is
 * re-armed at its remaining time and its charging re-created with tw_add_periodic_at on the
 * original schedule, with one run at once for the points missed while down
 * (TW_MISSED_RUN_ONCE). */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "billing.h"

/* One exported timer, copied out of tw_export. */
typedef struct saved_timer {
    uint32_t session;
    uint32_t kind;       /* TW_TIMER_ONE_SHOT: the idle timeout; TW_TIMER_PERIODIC: charging */
    int64_t due_unix_ms;
    int64_t owed;        /* charging: runs owed to the account as of the export */
} saved_timer;

/* What tw_export's function fills. */
typedef struct timer_list {
    billing *b;
    saved_timer *items;
    size_t len, cap;
    int failed;
} timer_list;

/* How often the save takes the export again while a charging callback runs. */
#define EXPORT_TRIES 5000

static const char schema[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE accounts (session INTEGER PRIMARY KEY, credit INTEGER NOT NULL,"
    " balance INTEGER NOT NULL, charges INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
    " end_ns INTEGER NOT NULL, reason INTEGER NOT NULL);"
    "CREATE TABLE timers (session INTEGER NOT NULL, kind INTEGER NOT NULL,"
    " due_unix_ms INTEGER NOT NULL, period_ms INTEGER NOT NULL, PRIMARY KEY (session, kind));";

/* tw_export's function: copies each timer with its session's owed charges. It runs after
 * the wheel's locks were released, so a charging callback may run meanwhile and move an
 * owed count past the export's instant: the caller takes the export again then. */
static void collect(void *ctx, const tw_timer_info *info) {
    timer_list *l = ctx;
    if (l->len == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 1024;
        saved_timer *grown = realloc(l->items, cap * sizeof *grown);
        if (grown == NULL) {
            l->failed = 1;
            return;
        }
        l->items = grown;
        l->cap = cap;
    }
    saved_timer *t = &l->items[l->len++];
    t->session = session_index(info->user_data);
    t->kind = info->kind;
    t->due_unix_ms = info->due_unix_ms;
    t->owed = info->kind == TW_TIMER_PERIODIC
                  ? atomic_load(&l->b->accounts[t->session].owed_charges) : 0;
}

/* Exports until an export finds no charging callback running (each of those is missing
 * from it) and none ran while it copied the owed counts. Returns 0, or -1 (message
 * printed). */
static int export_timers(billing *b, timer_list *l) {
    for (int tries = 1; tries <= EXPORT_TRIES; tries++) {
        size_t running = 0;
        l->len = 0;
        uint64_t charges_before = atomic_load(&b->charge_runs);
        tw_status s = tw_export(b->wheel, collect, l, &running);
        int charged_meanwhile = atomic_load(&b->charge_runs) != charges_before;
        if (s != TW_OK || l->failed) {
            fprintf(stderr, "billing: tw_export: %s\n",
                    l->failed ? "out of memory" : tw_status_str(s));
            return -1;
        }
        if (running == 0 && !charged_meanwhile) {
            printf("restart: exported %zu timers (export %d)\n", l->len, tries);
            return 0;
        }
        sleep_ms(1);
    }
    fprintf(stderr, "billing: a charging callback ran during every export\n");
    return -1;
}

/* Deletes every live session's timers and waits until their drops have run: then no
 * callback runs any more and the accounts stand still. Fails a check: -1. */
static int suspend_all(billing *b) {
    uint32_t started = atomic_load(&b->started);
    for (uint32_t i = 0; i < started; i++) session_suspend(b, i);
    tw_stats st = drain(b);
    return restart_report(b, &st) == 0 ? 0 : -1;
}

int exec_sql(sqlite3 *db, const char *sql) {
    char *err = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK) return 0;
    fprintf(stderr, "billing: sqlite: %s\n", err ? err : sqlite3_errmsg(db));
    sqlite3_free(err);
    return -1;
}

int insert(sqlite3_stmt *st, const int64_t *values, int n) {
    sqlite3_reset(st);
    for (int i = 0; i < n; i++) sqlite3_bind_int64(st, i + 1, values[i]);
    return sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
}

static int write_meta(sqlite3 *db, billing *b, int64_t frozen_ns) {
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO meta VALUES ('run_start_ns', %lld), ('started', %u),"
             " ('frozen_ns', %lld);",
             (long long)b->run_start_ns, atomic_load(&b->started), (long long)frozen_ns);
    return exec_sql(db, sql);
}

static int write_accounts(sqlite3 *db, billing *b) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT INTO accounts VALUES (?,?,?,?,?,?,?)", -1, &st,
                                NULL) == SQLITE_OK ? 0 : -1;
    uint32_t started = atomic_load(&b->started);
    for (uint32_t i = 0; rc == 0 && i < started; i++) {
        const account *a = &b->accounts[i];
        int64_t row[] = {i, a->credit, a->balance, a->charges, (int64_t)a->start_ns,
                         (int64_t)a->end_ns, a->reason};
        rc = insert(st, row, 7);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The exported timers of the sessions still live; a live session whose idle timeout the
 * export missed (it fired while frozen) gets one due at `now_unix_ms`. */
static int write_timers(sqlite3 *db, billing *b, const timer_list *l, int64_t now_unix_ms) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO timers VALUES (?,?,?,?)", -1, &st,
                                NULL) == SQLITE_OK ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < l->len; i++) {
        const saved_timer *t = &l->items[i];
        if (b->accounts[t->session].reason != LIVE) continue;
        int64_t period = t->kind == TW_TIMER_PERIODIC ? (int64_t)b->opt.period_ms : 0;
        int64_t row[] = {t->session, t->kind, t->due_unix_ms, period};
        rc = insert(st, row, 4);
    }
    uint32_t started = atomic_load(&b->started);
    for (uint32_t i = 0; rc == 0 && i < started; i++) {
        if (b->accounts[i].reason != LIVE) continue;
        int64_t row[] = {i, TW_TIMER_ONE_SHOT, now_unix_ms, 0};
        rc = insert(st, row, 4); /* ignored when the export had it */
    }
    sqlite3_finalize(st);
    return rc;
}

static int write_database(const char *path, billing *b, const timer_list *l,
                          uint64_t frozen_ns) {
    sqlite3 *db = NULL;
    unlink(path);
    int rc = sqlite3_open(path, &db) == SQLITE_OK ? 0 : -1;
    rc = rc ? rc : exec_sql(db, schema);
    rc = rc ? rc : exec_sql(db, "BEGIN");
    rc = rc ? rc : write_meta(db, b, (int64_t)frozen_ns);
    rc = rc ? rc : write_accounts(db, b);
    rc = rc ? rc : write_timers(db, b, l, tw_now_ms(b->wheel));
    rc = rc ? rc : exec_sql(db, "COMMIT");
    if (rc != 0) fprintf(stderr, "billing: writing %s: %s\n", path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

/* Applies the charges owed as of the export to the sessions it saw charging. */
static void settle(billing *b, const timer_list *l) {
    for (size_t i = 0; i < l->len; i++)
        if (l->items[i].kind == TW_TIMER_PERIODIC)
            session_settle(b, l->items[i].session, l->items[i].owed);
}

static void database_path(char *out, size_t size) {
    const char *dir = getenv("TMPDIR");
    snprintf(out, size, "%s/billing-restart-%d.db", dir && *dir ? dir : "/tmp", (int)getpid());
}

/* Re-executes this program with its arguments and --resume `path`. */
static void exec_resume(char **argv, const char *path) {
    int argc = 0;
    while (argv[argc] != NULL) argc++;
    char **args = calloc((size_t)argc + 3, sizeof *args);
    if (args == NULL) return;
    memcpy(args, argv, (size_t)argc * sizeof *args);
    args[argc] = "--resume";
    args[argc + 1] = (char *)path;
    fflush(NULL);
    execv("/proc/self/exe", args);
    perror("billing: execv");
    free(args);
}

int restart_save_and_exec(billing *b, char **argv) {
    static char path[4096];
    timer_list l = {.b = b};
    database_path(path, sizeof path);
    uint64_t frozen_ns = now_ns();
    sessions_freeze(b);
    int rc = export_timers(b, &l);
    rc = rc ? rc : suspend_all(b);
    if (rc == 0) {
        settle(b, &l);
        rc = write_database(path, b, &l, frozen_ns);
    }
    free(l.items);
    if (rc != 0) return rc;
    printf("restart: saved %lld live sessions to %s; exiting and resuming from it\n",
           (long long)atomic_load(&b->live), path);
    tw_destroy(b->wheel);
    b->wheel = NULL;
    exec_resume(argv, path);
    return -1;
}

/* Reads one integer of the meta table; -1 when absent. */
static int64_t read_meta(sqlite3 *db, const char *key) {
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

static int read_accounts(sqlite3 *db, billing *b, uint32_t started) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT * FROM accounts ORDER BY session", -1, &st, NULL) !=
        SQLITE_OK)
        return -1;
    uint32_t rows = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t session = sqlite3_column_int64(st, 0);
        if (session < 0 || session >= started) break;
        account *a = &b->accounts[session];
        a->credit = sqlite3_column_int64(st, 1);
        a->balance = sqlite3_column_int64(st, 2);
        a->charges = sqlite3_column_int64(st, 3);
        a->start_ns = (uint64_t)sqlite3_column_int64(st, 4);
        a->end_ns = (uint64_t)sqlite3_column_int64(st, 5);
        a->reason = (end_reason)sqlite3_column_int64(st, 6);
        rows++;
    }
    sqlite3_finalize(st);
    return rows == started ? 0 : -1;
}

/* Each live session's next idle timeout and charging point, from the timers table. */
typedef struct resume_times {
    int64_t idle_unix_ms, charge_unix_ms;
} resume_times;

static int read_timers(sqlite3 *db, resume_times *times, uint32_t started) {
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT session, kind, due_unix_ms FROM timers", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    for (uint32_t i = 0; i < started; i++) times[i] = (resume_times){-1, -1};
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t session = sqlite3_column_int64(st, 0), due = sqlite3_column_int64(st, 2);
        if (session < 0 || session >= started) continue;
        if (sqlite3_column_int64(st, 1) == TW_TIMER_PERIODIC)
            times[session].charge_unix_ms = due;
        else
            times[session].idle_unix_ms = due;
    }
    sqlite3_finalize(st);
    return 0;
}

/* Re-creates every live session's timers; -1 if one lacks a timer or an add fails. */
static int resume_sessions(billing *b, const resume_times *times, uint32_t started) {
    uint32_t resumed = 0;
    for (uint32_t i = 0; i < started; i++) {
        if (b->accounts[i].reason != LIVE) continue;
        if (times[i].idle_unix_ms < 0 || times[i].charge_unix_ms < 0) {
            fprintf(stderr, "billing: session %u was saved without its timers\n", i);
            return -1;
        }
        /* tw_timer_info.due_unix_ms is rounded down: the next whole millisecond keeps
         * every run at or after its point (at most 1 ms later). */
        if (session_resume(b, i, times[i].idle_unix_ms + 1, times[i].charge_unix_ms + 1) != 0)
            return -1;
        resumed++;
    }
    printf("restart: resumed %u live sessions of %u\n", resumed, started);
    return 0;
}

static int load(sqlite3 *db, billing *b) {
    int64_t started = read_meta(db, "started"), start = read_meta(db, "run_start_ns"),
            saved = read_meta(db, "frozen_ns");
    if (started < 0 || started > b->opt.sessions || start < 0 || saved < 0) return -1;
    resume_times *times = malloc(sizeof *times * ((size_t)started + 1));
    int rc = times == NULL ? -1 : read_accounts(db, b, (uint32_t)started);
    rc = rc ? rc : read_timers(db, times, (uint32_t)started);
    if (rc == 0) {
        b->run_start_ns = (uint64_t)start;
        atomic_store(&b->started, (uint32_t)started);
        live_figures_resume(b);
        printf("restart: accounts stood still for %.1f ms (from the save to the resume)\n",
               (double)(now_ns() - (uint64_t)saved) / 1e6);
        rc = resume_sessions(b, times, (uint32_t)started);
    }
    free(times);
    return rc;
}

int restart_load(billing *b) {
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(b->opt.resume, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK
                 ? load(db, b) : -1;
    if (rc != 0) fprintf(stderr, "billing: resuming from %s: %s\n", b->opt.resume,
                         sqlite3_errmsg(db));
    sqlite3_close(db);
    if (rc == 0) unlink(b->opt.resume); /* read: the run goes on from memory */
    return rc;
}
