/*
 * What the simulation prints: one status line a second (redrawn in place on a terminal),
 * and at the end the report with the checks a billing system lives by.
 */
#include <stdio.h>
#include <unistd.h>

#include "billing.h"

static const char *reason_names[REASONS] = {"live", "hang-up", "idle timeout",
                                            "credit exhausted", "open at the end"};

void status_line(billing *b, const tw_stats *now, const tw_stats *before, double elapsed_s) {
    int tty = isatty(STDOUT_FILENO);
    printf("%s%5.1fs  live %7lld  pending %7llu  callbacks/s %7llu  late p50 %5.2f ms"
           "  p99 %5.2f ms  workers %2llu/%-2llu  queue %5llu%s",
           tty ? "\r" : "", elapsed_s, (long long)atomic_load(&b->live),
           (unsigned long long)now->pending, (unsigned long long)(now->fired - before->fired),
           now->late_p50_us / 1000.0, now->late_p99_us / 1000.0,
           (unsigned long long)now->workers, (unsigned long long)now->workers_peak,
           (unsigned long long)now->queue_depth, tty ? "\033[K" : "\n");
    fflush(stdout);
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
           " (spawned %llu, retired %llu)\n",
           st->late_p50_us / 1000.0, st->late_p99_us / 1000.0, st->late_max_us / 1000.0,
           (unsigned long long)st->workers_peak, (unsigned long long)st->workers_spawned,
           (unsigned long long)st->workers_retired);
    if (failed) printf("%d check(s) FAILED\n", failed);
    else printf("all checks passed\n");
    return failed;
}

int restart_report(billing *b, const tw_stats *st) {
    printf("\n== before the restart: every timer suspended ==\n");
    return check_timers(b, st);
}
