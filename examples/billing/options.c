/* Command line flags of the billing simulation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "billing.h"

static const char usage[] =
    "usage: billing [flags]\n"
    "A prepaid billing simulation: sessions with an idle timeout and a fixed-rate charging\n"
    "timer on one timerwheel; prints the figures of each second (a line a second when the\n"
    "output is not a terminal) and checks the accounts at the end.\n"
    "\n"
    "  --sessions N     sessions opened during the run          (default 200000)\n"
    "  --duration S     length of the run in seconds            (default 20)\n"
    "  --period MS      charging period, one unit of credit     (default 1000)\n"
    "  --idle MS        idle timeout, reset by each activity    (default 4000)\n"
    "  --events N       activity events per second              (default 50000)\n"
    "  --hangup F       share of activity events that hang up   (default 0.02)\n"
    "  --slow F         share of charging calls that block      (default 0.002)\n"
    "  --slow-ms MS     how long a slow charging call blocks    (default 5)\n"
    "  --workers N      most worker threads (min 1)             (default 16)\n"
    "  --seed N         random seed                             (default 42)\n"
    "  --restart-at S   at S seconds save the live sessions and their timers to SQLite\n"
    "                   ($TMPDIR), exit and start again from that database (default off)\n"
    "  --resume DB      start from a database that --restart-at wrote (it passes this)\n"
    "  --metrics-port N serve the wheel's Prometheus metrics on http://127.0.0.1:N/metrics\n"
    "                   while running (0: any free port, printed at the start; default off)\n"
    "  --csv FILE       write the figures of each second to FILE (CSV; default off)\n"
    "  --durable DB     keep the timers as durable timers in the store DB and the accounts\n"
    "                   with every fire's token in DB.ledger; picks up a run they hold\n"
    "  --crash-at S     with --durable: SIGKILL the run at a random moment within S seconds\n"
    "                   and start it again from the files (default off)\n"
    "  --help           this text\n"
    "Exit status: 0 when every check passes, 1 when one fails, 2 on a bad flag.\n";

static int parse_number(const char *flag, const char *text, double min, double max,
                        double *out) {
    char *end = NULL;
    double v = text ? strtod(text, &end) : 0;
    if (text == NULL || end == text || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "billing: %s needs a number in [%g, %g]\n", flag, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

static void set_defaults(options *o) {
    o->sessions = 200000;
    o->duration_s = 20;
    o->period_ms = 1000;
    o->idle_ms = 4000;
    o->events_per_s = 50000;
    o->hangup_share = 0.02;
    o->slow_share = 0.002;
    o->slow_ms = 5;
    o->workers = 16;
    o->seed = 42;
    o->restart_at_s = 0;
    o->resume = NULL;
    o->metrics_port = -1;
    o->csv = NULL;
    o->durable = NULL;
    o->crash_at_s = 0;
}

/* Stores the value of one flag; -1 when the flag is unknown or its value bad. */
static int set_flag(options *o, const char *flag, const char *text) {
    double v;
#define NUMBER(name, min, max, field, type)                                     \
    if (strcmp(flag, name) == 0) {                                              \
        if (parse_number(flag, text, min, max, &v) != 0) return -1;            \
        o->field = (type)v;                                                     \
        return 0;                                                               \
    }
    NUMBER("--sessions", 1, 10000000, sessions, uint32_t)
    NUMBER("--duration", 0.5, 3600, duration_s, double)
    NUMBER("--period", 1, 3600000, period_ms, uint64_t)
    NUMBER("--idle", 1, 3600000, idle_ms, uint64_t)
    NUMBER("--events", 0, 10000000, events_per_s, double)
    NUMBER("--hangup", 0, 1, hangup_share, double)
    NUMBER("--slow", 0, 1, slow_share, double)
    NUMBER("--slow-ms", 0, 10000, slow_ms, uint64_t)
    NUMBER("--workers", 1, 1024, workers, uint32_t)
    NUMBER("--seed", 0, 1e15, seed, uint64_t)
    NUMBER("--restart-at", 0.1, 3600, restart_at_s, double)
    NUMBER("--metrics-port", 0, 65535, metrics_port, int)
    NUMBER("--crash-at", 0.01, 3600, crash_at_s, double)
#undef NUMBER
    if (strcmp(flag, "--resume") == 0 && text != NULL) {
        o->resume = text;
        return 0;
    }
    if (strcmp(flag, "--durable") == 0 && text != NULL) {
        o->durable = text;
        return 0;
    }
    if (strcmp(flag, "--csv") == 0 && text != NULL) {
        o->csv = text;
        return 0;
    }
    fprintf(stderr, "billing: unknown flag %s (try --help)\n", flag);
    return -1;
}

int options_parse(options *o, int argc, char **argv) {
    set_defaults(o);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        if (set_flag(o, argv[i], i + 1 < argc ? argv[i + 1] : NULL) != 0) return -1;
        i++;
    }
    if (o->restart_at_s >= o->duration_s) {
        fprintf(stderr, "billing: --restart-at must come before the end of --duration\n");
        return -1;
    }
    if (o->crash_at_s > 0 && o->durable == NULL) {
        fprintf(stderr, "billing: --crash-at needs --durable\n");
        return -1;
    }
    if (o->durable != NULL && (o->restart_at_s > 0 || o->resume != NULL)) {
        fprintf(stderr, "billing: --durable keeps the run across restarts by itself: no"
                        " --restart-at or --resume\n");
        return -1;
    }
    return 0;
}
