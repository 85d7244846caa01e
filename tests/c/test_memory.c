/*
 * Where a wheel's timers live (the README's "Memory" bullet): a destroyed wheel gives back
 * the address space it reserved, and under an address-space limit (ulimit -v) an add the
 * wheel cannot hold is TW_ERR_FULL, the wheel keeps working, and every timer it accepted is
 * dropped once at destroy.
 */
#define _DEFAULT_SOURCE
#include "check.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define HOUR_MS (3600 * 1000)

#if !defined(__SANITIZE_ADDRESS__)

static void never_runs(tw_timer_id id, void *data) {
    (void)id;
    (void)data;
    CHECK(!"a timer an hour away ran");
}

/* A field of /proc/self/status, in kB (VmSize: the address space mapped). */
static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, field, len) == 0 && line[len] == ':') kb = atol(line + len + 1);
    if (f != NULL) fclose(f);
    return kb;
}

/* A wheel on a virtual clock: timers of one delay share one shard, so one shard fills. */
static tw_wheel *one_shard_wheel(void) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = 1700000000000ull;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    return w;
}

/* Wheels of 100,000 timers each (a shard's reservation grown past its first huge pages),
 * made and destroyed 40 times: the address space mapped stays where it was after the first
 * few (each destroyed wheel used to leave 2 MiB a reservation mapped). */
static void test_a_destroyed_wheel_gives_its_address_space_back(void) {
    long before = 0;
    for (int round = 0; round < 45; round++) {
        if (round == 5) before = status_kb("VmSize"); /* thread stacks, malloc arenas: made */
        tw_wheel *w = one_shard_wheel();
        for (int i = 0; i < 100000; i++) {
            tw_timer_id id;
            CHECK_OK(tw_add(w, HOUR_MS, never_runs, NULL, NULL, &id));
        }
        CHECK_OK(tw_destroy(w));
    }
    long grown = status_kb("VmSize") - before;
    if (grown > 32 * 1024) fprintf(stderr, "40 wheels left %ld kB mapped\n", grown);
    CHECK(before > 0 && grown <= 32 * 1024);
}

/* In a child with its address space limited to 600 MB more than it maps: timers of one
 * shard are added until that shard cannot grow. Every add is TW_OK or TW_ERR_FULL; a full
 * wheel refuses quickly, takes timers again where some were deleted, and its destroy drops
 * each timer it holds once. Exits 0 when all held (a growing array ended the process). */
static long drops;

static void count_drop(void *data) {
    (void)data;
    atomic_add(&drops, 1);
}

static int fill_under_a_limit(void) {
    tw_wheel *w = one_shard_wheel();
    struct rlimit limit;
    limit.rlim_cur = limit.rlim_max = (rlim_t)(status_kb("VmSize") + 600 * 1024) * 1024;
    if (setrlimit(RLIMIT_AS, &limit) != 0) return 10;
    enum { MOST = 20000000, DELETED = 1000 };
    tw_timer_id *ids = malloc(DELETED * sizeof *ids);
    long accepted = 0;
    tw_status last = TW_OK;
    while (accepted < MOST && last == TW_OK) {
        tw_timer_id id;
        last = tw_add(w, HOUR_MS, never_runs, NULL, count_drop, &id);
        if (last == TW_OK && accepted < DELETED) ids[accepted] = id;
        accepted += last == TW_OK;
    }
    if (last != TW_ERR_FULL) return 11; /* 20 million fit, or another error */
    for (int i = 0; i < 20000; i++) {
        tw_timer_id id;
        if (tw_add(w, HOUR_MS, never_runs, NULL, count_drop, &id) != TW_ERR_FULL) return 12;
    }
    for (int i = 0; i < DELETED; i++)
        if (tw_delete(w, ids[i]) != TW_OK) return 13;
    for (int i = 0; i < DELETED; i++) {
        tw_timer_id id;
        if (tw_add(w, HOUR_MS, never_runs, NULL, count_drop, &id) != TW_OK) return 14;
    }
    if (tw_destroy(w) != TW_OK) return 15;
    return atomic_get(&drops) == accepted + DELETED ? 0 : 16;
}

static void test_an_address_space_limit_makes_adds_full_not_fatal(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) _exit(fill_under_a_limit());
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
                WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

#endif /* !__SANITIZE_ADDRESS__ */

int main(void) {
#if defined(__SANITIZE_ADDRESS__)
    puts("test_memory: skipped under AddressSanitizer (its shadow and allocator map terabytes as "
         "they go, so the address space measures nothing here)");
    return 0;
#else
    RUN(test_a_destroyed_wheel_gives_its_address_space_back);
    RUN(test_an_address_space_limit_makes_adds_full_not_fatal);
    return check_summary("test_memory");
#endif
}
