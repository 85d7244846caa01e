/*
 * What the simulation prints: the figures of each second under labelled columns (a line a
 * second, redrawn in place on a terminal), the same as a CSV row with --csv, and at the end
 * the report with the checks a billing system lives by.
 */
#include <stdio.h>
#include <unistd.h>

#include "billing.h"

static const char *reason_names[REASONS] = {"live", "hang-up", "idle timeout",
                                            "credit exhausted", "open at the end"};

/* The columns, under what each counts over: the last second, the run since its start, the
 * moment of the line, the last minute (the wheel's recent views, tw_get_stats_recent). */
static const char header[] =
    "         --- per second --- ----- since start: credit, ended by ------ "
    "------------- now -------------- -- late ms, last 1 s -- last minute -\n"
    "    time callbacks charges credit used hang-up    idle exhausted sessions   timers"
    " workers backlog    p50    p99    max  p99 ms  slow\n"
    "    (timers: pending, two per live session; backlog: due, not started; slow: callbacks"
    " of %d ms or more)\n";

static const char csv_header[] =
    "time_s,callbacks_per_s,charges_per_s,credit_used,ended_hangup,ended_idle,"
    "ended_exhausted,sessions_live,timers_pending,workers,backlog,late_p50_ms,late_p99_ms,"
    "late_max_ms,late_p99_minute_ms,slow_callbacks_minute\n";

int live_figures_open(billing *b, live_figures *f) {
    *f = (live_figures){NULL, atomic_load(&b->credit_used), 0};
    if (b->opt.csv == NULL) return 0;
    /* After a restart the run goes on in the same file. */
    f->csv = fopen(b->opt.csv, b->opt.resume != NULL ? "a" : "w");
    if (f->csv == NULL) {
        perror(b->opt.csv);
        return -1;
    }
    if (ftell(f->csv) == 0) fputs(csv_header, f->csv);
    return 0;
}

void live_figures_resume(billing *b) {
    uint64_t used = 0, ended[REASONS] = {0};
    uint32_t started = atomic_load(&b->started);
    for (uint32_t i = 0; i < started; i++) {
        used += (uint64_t)b->accounts[i].charges;
        ended[b->accounts[i].reason]++;
    }
    atomic_store(&b->credit_used, used);
    for (int r = HANGUP; r < REASONS; r++) atomic_store(&b->ended[r], ended[r]);
}

void live_figures_close(live_figures *f) {
    if (f->csv != NULL) fclose(f->csv);
    f->csv = NULL;
}

/* The figures of one second: the wheel's over the last second and the last minute. */
typedef struct second {
    tw_stats sec, minute;
    uint64_t charges, used, ended[REASONS];
    long long live;
} second;

static second read_second(billing *b, live_figures *f) {
    second s = {.sec = {.size = sizeof s.sec}, .minute = {.size = sizeof s.minute}};
    tw_get_stats_recent(b->wheel, 1000, &s.sec);
    tw_get_stats_recent(b->wheel, 60000, &s.minute);
    s.used = atomic_load(&b->credit_used);
    s.charges = s.used - f->charges_before;
    f->charges_before = s.used;
    for (int r = HANGUP; r < REASONS; r++) s.ended[r] = atomic_load(&b->ended[r]);
    s.live = atomic_load(&b->live);
    return s;
}

/* Per second: over the span the wheel measured (about a second). */
static double per_second(uint64_t count, uint64_t span_ms) {
    return span_ms > 0 ? (double)count * 1000.0 / (double)span_ms : 0.0;
}

static void write_csv(FILE *csv, const second *s, double elapsed_s) {
    fprintf(csv, "%.1f,%.0f,%.0f,%llu,%llu,%llu,%llu,%lld,%llu,%llu,%llu,%.3f,%.3f,%.3f,%.3f,%llu\n",
            elapsed_s, per_second(s->sec.fired, s->sec.span_ms),
            per_second(s->charges, s->sec.span_ms),
            (unsigned long long)s->used, (unsigned long long)s->ended[HANGUP],
            (unsigned long long)s->ended[IDLE], (unsigned long long)s->ended[EXHAUSTED],
            s->live, (unsigned long long)s->sec.pending, (unsigned long long)s->sec.workers,
            (unsigned long long)s->sec.queue_depth, s->sec.late_p50_us / 1000.0,
            s->sec.late_p99_us / 1000.0, s->sec.late_max_us / 1000.0,
            s->minute.late_p99_us / 1000.0, (unsigned long long)s->minute.slow_callbacks);
    fflush(csv);
}

void status_line(billing *b, live_figures *f, double elapsed_s) {
    int tty = isatty(STDOUT_FILENO);
    second s = read_second(b, f);
    if (f->lines++ == 0) printf(header, SLOW_CALLBACK_US / 1000);
    printf("%s%7.1fs %9.0f %7.0f %11llu %7llu %7llu %9llu %8lld %8llu %7llu %7llu"
           " %6.2f %6.2f %6.2f %7.2f %5llu%s",
           tty ? "\r" : "", elapsed_s, per_second(s.sec.fired, s.sec.span_ms),
           per_second(s.charges, s.sec.span_ms), (unsigned long long)s.used,
           (unsigned long long)s.ended[HANGUP], (unsigned long long)s.ended[IDLE],
           (unsigned long long)s.ended[EXHAUSTED], s.live, (unsigned long long)s.sec.pending,
           (unsigned long long)s.sec.workers, (unsigned long long)s.sec.queue_depth,
           s.sec.late_p50_us / 1000.0, s.sec.late_p99_us / 1000.0, s.sec.late_max_us / 1000.0,
           s.minute.late_p99_us / 1000.0, (unsigned long long)s.minute.slow_callbacks,
           tty ? "\033[K" : "\n");
    fflush(stdout);
    if (f->csv != NULL) write_csv(f->csv, &s, elapsed_s);
}

static int check(const char *what, int ok) {
    printf("  [%s] %s\n", ok ? " ok " : "FAIL", what);
    return ok ? 0 : 1;
}

/* Charges per session against lifetime / period, and the money: returns failed checks. */
static int check_accounts(billing *b, uint32_t started, uint64_t counts[REASONS]) {
    int64_t credit = 0, balances = 0, charges = 0;
    uint32_t off = 0, negative = 0;
    uint64_t period_ns = b->opt.period_ms * 1000000u;
    for (uint32_t i = 0; i < started; i++) {
        const account *a = &b->accounts[i];
        int64_t expected = (int64_t)((a->end_ns - a->start_ns) / period_ns);
        if (a->charges > expected || a->charges + 1 < expected) off++;
        if (a->balance < 0) negative++;
        credit += a->credit;
        balances += a->balance;
        charges += a->charges;
        counts[a->reason]++;
    }
    printf("  credit %lld = balances %lld + charges %lld\n", (long long)credit,
           (long long)balances, (long long)charges);
    printf("  sessions whose charges differ from lifetime / period by more than one: %u\n", off);
    return check("every session charged for its lifetime, within one period", off == 0) +
           check("balances + charges = initial credit, no balance below zero",
                 balances + charges == credit && negative == 0);
}

/* Every timer accounted for, every session context freed once: returns failed checks. */
static int check_timers(billing *b, const tw_stats *st) {
    unsigned long long added = st->added, fired = st->fired_one_shot, del = st->cancelled,
                       disc = st->discarded, pend = st->pending;
    printf("  timers: added %llu = fired (one-shot) %llu + deleted %llu + discarded %llu"
           " + pending %llu\n", added, fired, del, disc, pend);
    printf("  charging runs %llu (slow %llu), idle timeouts %llu, session contexts freed %llu\n",
           (unsigned long long)atomic_load(&b->charge_runs),
           (unsigned long long)atomic_load(&b->slow_calls),
           (unsigned long long)atomic_load(&b->idle_fired),
           (unsigned long long)atomic_load(&b->contexts_freed));
    return check("added = fired + deleted + discarded (+ pending)",
                 added == fired + del + disc + pend && pend == 0) +
           check("the wheel's counts match the program's (adds, deletes, idle timeouts)",
                 added == atomic_load(&b->timers_added) && del == atomic_load(&b->deletes_ok) &&
                     fired == atomic_load(&b->idle_fired)) +
           check("every session context freed exactly once by a drop function",
                 atomic_load(&b->contexts_freed) == atomic_load(&b->contexts_made) &&
                     atomic_load(&b->drop_errors) == 0) +
           check("no add refused", atomic_load(&b->add_errors) == 0);
}

int final_report(billing *b, const tw_stats *st, double elapsed_s) {
    uint32_t started = atomic_load(&b->started);
    uint64_t counts[REASONS] = {0};
    printf("\n== billing report: %u sessions in %.1f s ==\n", started, elapsed_s);
    int failed = check_accounts(b, started, counts);
    failed += check_timers(b, st);
    printf("  sessions ended by:");
    for (int r = HANGUP; r < REASONS; r++)
        printf(" %s %llu%s", reason_names[r], (unsigned long long)counts[r],
               r + 1 < REASONS ? "," : "\n");
    failed += check("every session ended once", counts[LIVE] == 0);
    printf("  lateness p50 %.2f ms, p99 %.2f ms, max %.2f ms; workers peak %llu"
           " (spawned %llu, retired %llu); callbacks of %d ms or more: %llu\n",
           st->late_p50_us / 1000.0, st->late_p99_us / 1000.0, st->late_max_us / 1000.0,
           (unsigned long long)st->workers_peak, (unsigned long long)st->workers_spawned,
           (unsigned long long)st->workers_retired, SLOW_CALLBACK_US / 1000,
           (unsigned long long)st->slow_callbacks);
    if (b->opt.csv != NULL) printf("  the figures of each second: %s\n", b->opt.csv);
    if (failed) printf("%d check(s) FAILED\n", failed);
    else printf("all checks passed\n");
    return failed;
}

int restart_report(billing *b, const tw_stats *st) {
    printf("\n== before the restart: every timer suspended ==\n");
    return check_timers(b, st);
}
