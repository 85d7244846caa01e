/*
 * Durable timers through C (docs/durable.md): a store named in tw_config, handlers by name,
 * restore with every unacknowledged fire delivered again with its token, and the calls
 * that must be refused. Virtual clocks: nothing depends on the machine's speed.
 */
#include "check.h"

#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#define START_MS INT64_C(1704067200000) /* 2024-01-01T00:00:00Z */
#define MAX_SEEN 64

typedef struct seen {
    int count;
    int answer; /* TW_ACK_NOW or TW_ACK_LATER */
    uint64_t key[MAX_SEEN];
    int64_t occurrence[MAX_SEEN];
    uint64_t epoch[MAX_SEEN];
    char payload[MAX_SEEN][16];
} seen;

static int record(const tw_token *token, const void *payload, size_t len, void *ctx) {
    seen *s = ctx;
    if (s->count < MAX_SEEN && strcmp(token->name, "charge") == 0) {
        s->key[s->count] = token->key;
        s->occurrence[s->count] = token->occurrence_unix_ms;
        s->epoch[s->count] = token->epoch;
        memcpy(s->payload[s->count], payload, len < 15 ? len : 15);
    }
    s->count++;
    return s->answer;
}

static tw_status advance(tw_wheel *w, uint64_t ms) {
    size_t ran;
    return tw_advance(w, ms, &ran);
}

static void store_path(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "/tmp/tw-durable-c-%ld-%s.db", (long)getpid(), tag);
    unlink(buf);
    char side[300];
    snprintf(side, sizeof side, "%s-wal", buf);
    unlink(side);
}

/* A virtual wheel at `at` over the store `path` in `durability` mode, `handler` registered
 * as "charge" with `ctx`. */
static tw_wheel *store_wheel(const char *path, int64_t at, uint32_t durability,
                             tw_handler handler, void *ctx) {
    tw_config cfg;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = at;
    cfg.store_path = path;
    cfg.durability = durability;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    CHECK_OK(tw_handler_register(w, "charge", handler, ctx));
    return w;
}

/* A virtual wheel at `at` over the store `path`, in sync mode, recording in `s`. */
static tw_wheel *durable_wheel(const char *path, int64_t at, seen *s) {
    return store_wheel(path, at, TW_DURABLE_SYNC, record, s);
}

static void an_unacknowledged_fire_comes_back_with_its_token(void) {
    char path[256];
    store_path(path, sizeof path, "redeliver");
    seen first = {.answer = TW_ACK_LATER};
    tw_wheel *w = durable_wheel(path, START_MS, &first);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(tw_durable_add(w, 42, "charge", "cents=5", 7, START_MS + 100, 0, 0));
    CHECK_OK(advance(w, 99));
    CHECK(first.count == 0);
    CHECK_OK(advance(w, 1));
    CHECK(first.count == 1 && first.key[0] == 42 && first.occurrence[0] == START_MS + 100);
    CHECK(strcmp(first.payload[0], "cents=5") == 0);
    CHECK_OK(tw_destroy(w)); /* a crash after the fire, before its acknowledgement */

    seen again = {.answer = TW_ACK_LATER};
    w = durable_wheel(path, START_MS + 5000, &again);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(advance(w, 0));
    CHECK(again.count == 1);
    CHECK(again.key[0] == 42 && again.occurrence[0] == first.occurrence[0]);
    CHECK(again.epoch[0] == first.epoch[0]);
    tw_token token = {42, "charge", first.occurrence[0], first.epoch[0]};
    tw_token stale = {42, "charge", first.occurrence[0], first.epoch[0] + 1};
    size_t acked = 99;
    CHECK_OK(tw_durable_ack(w, &stale, 1, &acked));
    CHECK(acked == 0);
    CHECK_OK(tw_durable_ack(w, &token, 1, &acked));
    CHECK(acked == 1);
    CHECK_OK(tw_durable_ack(w, &token, 1, &acked));
    CHECK(acked == 0);
    uint64_t seq = 0;
    CHECK_OK(tw_durable_flush(w, &seq));
    CHECK(seq >= 3);
    CHECK_OK(tw_destroy(w));

    seen third = {.answer = TW_ACK_LATER};
    w = durable_wheel(path, START_MS + 9000, &third);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(advance(w, 1000));
    CHECK(third.count == 0);
    CHECK_OK(tw_destroy(w));
    unlink(path);
}

static void bad_calls_are_refused_and_change_nothing(void) {
    char path[256];
    store_path(path, sizeof path, "refuse");
    seen s = {.answer = TW_ACK_NOW};
    tw_wheel *w = durable_wheel(path, START_MS, &s);
    CHECK_STATUS(tw_durable_add(w, 1, "charge", "", 0, START_MS, 0, 0), TW_ERR_INVALID);
    CHECK_STATUS(tw_handler_register(w, "charge", record, &s), TW_ERR_INVALID);
    CHECK_STATUS(tw_handler_register(w, NULL, record, &s), TW_ERR_INVALID);
    CHECK_STATUS(tw_handler_register(w, "idle", NULL, &s), TW_ERR_INVALID);
    CHECK_OK(tw_durable_open(w));
    CHECK_STATUS(tw_durable_open(w), TW_ERR_BUSY);
    CHECK_STATUS(tw_handler_register(w, "idle", record, &s), TW_ERR_BUSY);
    CHECK_STATUS(tw_durable_add(w, 1, "nobody", "", 0, START_MS, 0, 0), TW_ERR_NO_HANDLER);
    CHECK_OK(tw_durable_add(w, 1, "charge", "a", 1, START_MS + 10, 0, 0));
    CHECK_STATUS(tw_durable_add(w, 1, "charge", "b", 1, START_MS + 5, 0, 0), TW_ERR_EXISTS);
    CHECK_STATUS(tw_durable_add(w, 1, "charge", "b", 1, START_MS + 5, 0, 4), TW_ERR_INVALID);
    CHECK_STATUS(tw_durable_add(w, 1, "charge", NULL, 1, START_MS + 5, 0, 0), TW_ERR_INVALID);
    CHECK_STATUS(tw_durable_reset(w, 2, "charge", START_MS), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_durable_delete(w, 2, "charge"), TW_ERR_NOT_FOUND);
    CHECK_STATUS(tw_durable_ack(w, NULL, 1, NULL), TW_ERR_INVALID);
    CHECK_OK(advance(w, 10));
    CHECK(s.count == 1 && strcmp(s.payload[0], "a") == 0);
    CHECK_STATUS(tw_durable_add(NULL, 1, "charge", "", 0, START_MS, 0, 0), TW_ERR_INVALID);
    CHECK_STATUS(tw_durable_add(tw_default(), 1, "charge", "", 0, START_MS, 0, 0),
                 TW_ERR_INVALID);
    CHECK_OK(tw_destroy(w));

    tw_config cfg;
    tw_config_init(&cfg);
    cfg.durability = TW_DURABLE_ASYNC; /* without store_path */
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    cfg.store_path = path;
    cfg.durability = 7;
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    cfg.durability = TW_DURABLE_SYNC;
    cfg.store_batch = 0; /* a commit of no events would never make a change durable */
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    CHECK(strstr(tw_config_check(&cfg), "store_batch 0") != NULL);
    cfg.store_batch = 1;
    cfg.durability = 7;
    CHECK(strstr(tw_config_check(&cfg), "durability 7") != NULL);
    unlink(path);

    tw_config off; /* no store: its fields are checked all the same */
    tw_config_init(&off);
    off.missed_points = 7;
    CHECK_STATUS(tw_create(&off, &w), TW_ERR_INVALID);
    CHECK(strstr(tw_config_check(&off), "missed_points 7") != NULL);
    off.missed_points = TW_MISSED_EACH;
    off.store_batch = 0;
    CHECK_STATUS(tw_create(&off, &w), TW_ERR_INVALID);
}

static void a_missing_handler_a_second_opener_and_a_bad_file_are_refused(void) {
    char path[256];
    store_path(path, sizeof path, "open");
    seen s = {.answer = TW_ACK_NOW};
    tw_wheel *w = durable_wheel(path, START_MS, &s);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(tw_durable_add(w, 9, "charge", "", 0, START_MS + 10, 0, 0));

    tw_wheel *second = durable_wheel(path, START_MS, &s);
    CHECK_STATUS(tw_durable_open(second), TW_ERR_STORE);
    char message[512];
    CHECK_OK(tw_durable_error(second, message, sizeof message, NULL));
    CHECK(strstr(message, "locked by another opener") != NULL);
    CHECK_OK(tw_destroy(second));
    CHECK_OK(tw_destroy(w));

    tw_config cfg;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = START_MS;
    cfg.store_path = path;
    cfg.durability = TW_DURABLE_ASYNC;
    CHECK_OK(tw_create(&cfg, &w));
    CHECK_OK(tw_handler_register(w, "idle", record, &s));
    CHECK_STATUS(tw_durable_open(w), TW_ERR_NO_HANDLER);
    CHECK_OK(tw_durable_error(w, message, sizeof message, NULL));
    CHECK(strstr(message, "charge") != NULL);
    CHECK_OK(tw_handler_register(w, "charge", record, &s));
    CHECK_OK(tw_durable_open(w)); /* the refused open left the timer in the store */
    CHECK_OK(advance(w, 10));
    CHECK(s.count == 1 && s.key[0] == 9);
    CHECK_OK(tw_destroy(w));
    unlink(path);

    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    for (int i = 0; i < 4096; i++) fputc(0x5a, f);
    fclose(f);
    w = durable_wheel(path, START_MS, &s);
    CHECK_STATUS(tw_durable_open(w), TW_ERR_STORE);
    CHECK_OK(tw_destroy(w));
    f = fopen(path, "rb");
    int same = 1, n = 0, c;
    while ((c = fgetc(f)) != EOF) {
        same &= c == 0x5a;
        n++;
    }
    fclose(f);
    CHECK(same && n == 4096);
    unlink(path);
}

/* A fork() child of a process whose store is committing: every durable call on the
 * parent's wheel refuses with TW_ERR_FORKED at once and changes nothing, and destroying
 * the wheel returns (the store's writer thread is the parent's: waiting for it hung). */
typedef struct adding {
    tw_wheel *w;
    long stop;
} adding;

static void *add_until_stopped(void *data) {
    adding *a = data;
    for (uint64_t key = 1; !atomic_get(&a->stop); key++)
        tw_durable_add(a->w, key, "charge", NULL, 0, START_MS + 3600000, 0, 0);
    return NULL;
}

static int child_is_refused(tw_wheel *w) {
    alarm(20); /* a hang ends the child with SIGALRM */
    tw_token token = {1, "charge", START_MS, 1};
    size_t acked = 0;
    uint64_t seq = 0;
    int refused = tw_durable_add(w, 1, "charge", NULL, 0, START_MS, 0, 0) == TW_ERR_FORKED &&
                  tw_durable_reset(w, 1, "charge", START_MS) == TW_ERR_FORKED &&
                  tw_durable_delete(w, 1, "charge") == TW_ERR_FORKED &&
                  tw_durable_ack(w, &token, 1, &acked) == TW_ERR_FORKED &&
                  tw_durable_flush(w, &seq) == TW_ERR_FORKED;
    tw_destroy(w);
    return refused ? 0 : 1;
}

static void a_fork_child_is_refused_and_never_hangs(void) {
    char path[256];
    store_path(path, sizeof path, "fork");
    seen s = {.answer = TW_ACK_NOW};
    adding a = {durable_wheel(path, START_MS, &s), 0};
    CHECK_OK(tw_durable_open(a.w));
    pthread_t adder;
    CHECK(pthread_create(&adder, NULL, add_until_stopped, &a) == 0);
    for (int i = 0; i < 10; i++) {
        sleep_ms(20);
        int verdict[2];
        CHECK(pipe(verdict) == 0);
        pid_t pid = fork();
        if (pid == 0) {
            /* The verdict goes through a pipe, not the exit status, which a memory checker
             * around the child may change (test_fork.c says why). */
            char refused = (char)child_is_refused(a.w);
            if (write(verdict[1], &refused, 1) != 1) _exit(2);
            _exit(0);
        }
        close(verdict[1]);
        char got = 1;
        ssize_t said = read(verdict[0], &got, 1); /* 0 bytes: the child hung or crashed */
        int status = 0;
        CHECK(waitpid(pid, &status, 0) == pid);
        if (said != 1)
            fprintf(stderr, "child: %s %d\n", WIFSIGNALED(status) ? "signal" : "exit",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        CHECK(said == 1);
        CHECK(got == 0);
        close(verdict[0]);
    }
    atomic_set(&a.stop, 1);
    pthread_join(adder, NULL);
    CHECK_OK(tw_destroy(a.w));
    store_path(path, sizeof path, "fork");
}

/* A callback that destroys its wheel (tw_destroy_nowait) while tw_durable_open is still
 * restoring: the open holds the wheel, which is freed once the open returned
 * TW_ERR_SHUTDOWN (it was freed under the open: a use after free under ASan). A handler
 * (a redelivered fire) runs where a callback runs, so it is the same case. The store
 * stays consistent and keeps every timer. */
static long many_timers(void) { /* fewer under valgrind (the harness sets TW_STRESS_OPS) */
    return env_long("TW_STRESS_OPS", 0) ? 5000 : 50000;
}

static int opening; /* set as the test thread calls tw_durable_open */

/* Destroys the wheel once the test thread is calling tw_durable_open: a wheel destroyed
 * before that call is freed under it, as the contract says. */
static void destroy_wheel(tw_timer_id id, void *ctx) {
    (void)id;
    for (int i = 0; i < 10000 && !__atomic_load_n(&opening, __ATOMIC_SEQ_CST); i++)
        sleep_ms(1);
    CHECK_OK(tw_destroy_nowait(ctx));
}

static int count_fire(const tw_token *token, const void *payload, size_t len, void *ctx) {
    (void)token, (void)payload, (void)len;
    __atomic_add_fetch((long *)ctx, 1, __ATOMIC_SEQ_CST);
    return TW_ACK_NOW;
}

/* A virtual wheel at START_MS over the store `path` in async mode, opened. */
static tw_wheel *virtual_store(const char *path, tw_handler handler, void *ctx) {
    tw_wheel *w = store_wheel(path, START_MS, TW_DURABLE_ASYNC, handler, ctx);
    CHECK_OK(tw_durable_open(w));
    return w;
}

static void a_callback_that_destroys_the_wheel_while_it_opens_is_safe(void) {
    char path[256];
    store_path(path, sizeof path, "destroy-in-open");
    long fires = 0, many = many_timers();
    tw_wheel *w = virtual_store(path, count_fire, &fires);
    for (uint64_t key = 1; key <= (uint64_t)many; key++) /* due an hour after START_MS: long past */
        CHECK_OK(tw_durable_add(w, key, "charge", NULL, 0, START_MS + 3600000, 0, 0));
    CHECK_OK(tw_destroy(w));

    tw_config cfg;
    tw_config_init(&cfg);
    cfg.store_path = path;
    cfg.durability = TW_DURABLE_ASYNC;
    long ignored = 0;
    CHECK_OK(tw_create(&cfg, &w));
    CHECK_OK(tw_handler_register(w, "charge", count_fire, &ignored));
    tw_timer_id id;
    CHECK_OK(tw_add(w, 2, destroy_wheel, w, NULL, &id)); /* runs while the store loads */
    __atomic_store_n(&opening, 1, __ATOMIC_SEQ_CST);
    CHECK_STATUS(tw_durable_open(w), TW_ERR_SHUTDOWN); /* w is freed now */

    /* The store is sound and whole. The destroyed wheel lets its store go on its own
     * thread: until then the file is held and a new opener is refused. */
    w = store_wheel(path, START_MS, TW_DURABLE_ASYNC, count_fire, &fires);
    tw_status opened = tw_durable_open(w);
    for (int i = 0; i < 1000 && opened == TW_ERR_STORE; i++) {
        sleep_ms(10);
        opened = tw_durable_open(w);
    }
    CHECK_OK(opened);
    CHECK_OK(advance(w, 7200000));
    CHECK(atomic_get(&fires) == many);
    CHECK_OK(tw_destroy(w));
    store_path(path, sizeof path, "destroy-in-open");
}

static tw_wheel *reopened;
static long adds_ok, adds_refused;

static int add_another(const tw_token *token, const void *payload, size_t len, void *ctx) {
    (void)payload, (void)len, (void)ctx;
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    int64_t in_a_minute = (int64_t)now.tv_sec * 1000 + 60000;
    tw_status st = tw_durable_add(reopened, token->key + 1000000, "charge", NULL, 0, in_a_minute,
                                  0, 0);
    __atomic_add_fetch(st == TW_OK ? &adds_ok : &adds_refused, 1, __ATOMIC_SEQ_CST);
    return TW_ACK_NOW;
}

/* Redelivered fires run on the wheel's workers while tw_durable_open restores: their
 * handlers may call the store at once (they were refused as "not open"). */
static void handlers_of_redelivered_fires_may_call_the_store_during_the_open(void) {
    char path[256];
    store_path(path, sizeof path, "handler-in-open");
    long many = many_timers() / 10;
    seen s = {.answer = TW_ACK_LATER};
    tw_wheel *w = store_wheel(path, START_MS, TW_DURABLE_ASYNC, record, &s);
    CHECK_OK(tw_durable_open(w));
    for (uint64_t key = 1; key <= (uint64_t)many; key++)
        CHECK_OK(tw_durable_add(w, key, "charge", NULL, 0, START_MS, 0, 0));
    CHECK_OK(advance(w, 0)); /* every fire delivered, none acknowledged */
    CHECK(s.count == many);
    CHECK_OK(tw_destroy(w));

    tw_config cfg;
    tw_config_init(&cfg); /* the real clock: the fires are long due */
    cfg.store_path = path;
    cfg.durability = TW_DURABLE_ASYNC;
    CHECK_OK(tw_create(&cfg, &reopened));
    CHECK_OK(tw_handler_register(reopened, "charge", add_another, NULL));
    CHECK_OK(tw_durable_open(reopened));
    for (int i = 0; i < 3000 && atomic_get(&adds_ok) + atomic_get(&adds_refused) < many; i++)
        sleep_ms(10);
    CHECK(atomic_get(&adds_refused) == 0);
    CHECK(atomic_get(&adds_ok) == many);
    CHECK_OK(tw_destroy(reopened));
    store_path(path, sizeof path, "handler-in-open");
}

/* tw_durable_get_stats: the store's counters, as a sized struct like tw_stats. */
static void the_store_counts_its_commits_acks_and_errors(void) {
    char path[256];
    store_path(path, sizeof path, "stats");
    seen s = {.answer = TW_ACK_LATER};
    tw_wheel *w = durable_wheel(path, START_MS, &s);
    tw_durable_stats st = {.size = sizeof st};
    CHECK_STATUS(tw_durable_get_stats(w, &st), TW_ERR_INVALID); /* not open */
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(tw_durable_get_stats(w, &st));
    /* The open committed one event: its generation of epochs. */
    CHECK(st.size == sizeof st && st.last_seq == 1 && st.commits == 1 && st.last_error == TW_OK);
    CHECK_OK(tw_durable_add(w, 1, "charge", "", 0, START_MS + 10, 0, 0));
    CHECK_OK(tw_durable_add(w, 2, "charge", "", 0, START_MS + 20, 0, 0));
    CHECK_STATUS(tw_durable_add(w, 2, "charge", "", 0, START_MS, 0, 0), TW_ERR_EXISTS);
    CHECK_OK(advance(w, 10)); /* key 1 fires, unacknowledged */
    CHECK_OK(tw_durable_flush(w, NULL));
    CHECK_OK(tw_durable_get_stats(w, &st));
    CHECK(st.last_seq == 4 && st.durable_seq == 4 && st.pending_events == 0);
    CHECK(st.commits >= 2 && st.failed_commits == 0 && st.acks == 0);
    CHECK(st.timers == 1 && st.unacked_fires == 1 && st.redelivered == 0);
    CHECK(st.last_error == TW_ERR_EXISTS);
    tw_token token = {1, "charge", s.occurrence[0], s.epoch[0]};
    CHECK_OK(tw_durable_ack(w, &token, 1, NULL));
    CHECK_OK(tw_durable_get_stats(w, &st));
    CHECK(st.acks == 1 && st.unacked_fires == 0 && st.last_seq == 5);

    /* An older, smaller struct: only the whole fields it holds are written. */
    tw_durable_stats small;
    memset(&small, 0xee, sizeof small);
    small.size = offsetof(tw_durable_stats, durable_seq) + 4; /* inside durable_seq */
    CHECK_OK(tw_durable_get_stats(w, &small));
    CHECK(small.size == offsetof(tw_durable_stats, durable_seq) && small.last_seq == 5);
    CHECK(small.durable_seq == UINT64_C(0xeeeeeeeeeeeeeeee));
    small.size = 3;
    CHECK_STATUS(tw_durable_get_stats(w, &small), TW_ERR_INVALID);
    st.size = 0; /* 0: the first layout, the whole struct */
    CHECK_OK(tw_durable_get_stats(w, &st));
    CHECK(st.size == sizeof st);
    CHECK_STATUS(tw_durable_get_stats(w, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_durable_get_stats(NULL, &st), TW_ERR_INVALID);
    CHECK_OK(advance(w, 10)); /* key 2 fires, unacknowledged: delivered again below */
    CHECK_OK(tw_destroy(w));

    seen again = {.answer = TW_ACK_NOW};
    w = durable_wheel(path, START_MS + 1000, &again);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(advance(w, 0));
    CHECK_OK(tw_durable_flush(w, NULL));
    CHECK_OK(tw_durable_get_stats(w, &st));
    CHECK(again.count == 1 && st.redelivered == 1 && st.acks == 1 && st.unacked_fires == 0);
    CHECK(st.last_error == TW_OK && st.last_seq == 8); /* a generation, an ack */
    CHECK_OK(tw_destroy(w));
    store_path(path, sizeof path, "stats");
}

/* tw_durable_flush_to: a sequence handed out is durable when it returns; one not handed
 * out yet (or a NULL wheel) is TW_ERR_INVALID at once, with a message naming it. */
static void a_flush_to_a_sequence_makes_it_durable_and_refuses_one_not_handed_out(void) {
    char path[256];
    store_path(path, sizeof path, "flush-to");
    seen s = {.answer = TW_ACK_NOW};
    tw_wheel *w = store_wheel(path, START_MS, TW_DURABLE_ASYNC, record, &s);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(tw_durable_add(w, 1, "charge", NULL, 0, START_MS + 60000, 0, 0));
    tw_durable_stats st = {.size = sizeof st};
    CHECK_OK(tw_durable_get_stats(w, &st));
    uint64_t mine = st.last_seq, durable = 0;
    CHECK(mine == 2); /* after the open's generation of epochs */
    CHECK_OK(tw_durable_add(w, 2, "charge", NULL, 0, START_MS + 60000, 0, 0));
    CHECK_OK(tw_durable_flush_to(w, mine, &durable));
    CHECK(durable >= mine);
    CHECK_OK(tw_durable_flush_to(w, 0, NULL));
    durable = 77;
    CHECK_STATUS(tw_durable_flush_to(w, 4, &durable), TW_ERR_INVALID);
    CHECK(durable == 77);
    char message[128];
    size_t needed = 0;
    CHECK_OK(tw_durable_error(w, message, sizeof message, &needed));
    CHECK(strstr(message, "sequence 4") != NULL);
    CHECK_STATUS(tw_durable_flush_to(w, UINT64_MAX, NULL), TW_ERR_INVALID);
    CHECK_STATUS(tw_durable_flush_to(NULL, 1, NULL), TW_ERR_INVALID);
    CHECK_OK(tw_durable_get_stats(w, &st));
    CHECK(st.last_seq == 3 && st.timers == 2);
    CHECK_OK(tw_destroy(w));
    store_path(path, sizeof path, "flush-to");
}

/* Runs `chattr flag` on the store at `path` and its WAL: root, whom permissions do not
 * stop, cannot write an immutable file either. Nonzero where the filesystem cannot. */
static int chattr(const char *flag, const char *path) {
    char command[700];
    snprintf(command, sizeof command, "chattr %s %s %s-wal 2>/dev/null", flag, path, path);
    return system(command) == 0;
}

/* A flush whose commit failed still gives the sequence that is durable. */
static void a_failed_flush_gives_the_durable_sequence(void) {
    char path[256];
    store_path(path, sizeof path, "failed-flush");
    seen s = {.answer = TW_ACK_NOW};
    tw_wheel *w = durable_wheel(path, START_MS, &s);
    CHECK_OK(tw_durable_open(w));
    CHECK_OK(tw_durable_add(w, 1, "charge", NULL, 0, START_MS + 60000, 0, 0));
    if (!chattr("+i", path)) {
        printf("skipped: chattr +i is not supported here\n");
    } else {
        tw_status added = tw_durable_add(w, 2, "charge", NULL, 0, START_MS + 60000, 0, 0);
        uint64_t durable = 777;
        CHECK_STATUS(tw_durable_flush(w, &durable), TW_ERR_STORE);
        tw_durable_stats st = {.size = sizeof st};
        CHECK_OK(tw_durable_get_stats(w, &st));
        CHECK(added == TW_ERR_STORE && durable == st.durable_seq && durable == 2);
        chattr("-i", path);
    }
    CHECK_OK(tw_destroy(w));
    store_path(path, sizeof path, "failed-flush");
}

int main(void) {
    RUN(a_failed_flush_gives_the_durable_sequence);
    RUN(an_unacknowledged_fire_comes_back_with_its_token);
    RUN(bad_calls_are_refused_and_change_nothing);
    RUN(a_missing_handler_a_second_opener_and_a_bad_file_are_refused);
    RUN(a_fork_child_is_refused_and_never_hangs);
    RUN(a_callback_that_destroys_the_wheel_while_it_opens_is_safe);
    RUN(handlers_of_redelivered_fires_may_call_the_store_during_the_open);
    RUN(the_store_counts_its_commits_acks_and_errors);
    RUN(a_flush_to_a_sequence_makes_it_durable_and_refuses_one_not_handed_out);
    return check_summary("test_durable");
}
