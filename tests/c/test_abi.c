/*
 * The ABI can grow (docs/c.md, "ABI policy"): tw_config and tw_stats begin with their size
 * as the caller was compiled, and the library reads or writes no more than that. A program
 * compiled against an older, smaller layout is played here by structs that hold only the
 * first fields, placed in front of poisoned bytes the library must not touch.
 */
#include <stddef.h>

#include "check.h"

#include <string.h>

/* tw_config as a program compiled against an older header would have it. */
typedef struct old_config {
    size_t size;
    uint64_t tick_us;
    uint32_t min_workers;
    uint32_t max_workers;
} old_config;

/* tw_stats as a program compiled against an older header would have it. */
typedef struct old_stats {
    size_t size;
    uint64_t pending;
    uint64_t added;
} old_stats;

/* tw_config and tw_stats as a program compiled against a newer header would have them. */
typedef struct newer_config {
    tw_config now;
    uint64_t later_field;
} newer_config;

typedef struct newer_stats {
    tw_stats now;
    uint64_t later_field;
} newer_stats;

#define POISON 0xA5

static void noop(tw_timer_id id, void *user_data) {
    (void)id;
    (void)user_data;
}

/* Whether every byte of bytes[from, to) is still POISON. */
static int poisoned(const unsigned char *bytes, size_t from, size_t to) {
    for (size_t i = from; i < to; i++) {
        if (bytes[i] != POISON) {
            return 0;
        }
    }
    return 1;
}

static void version_macros_match_the_library(void) {
    char expected[32];
    snprintf(expected, sizeof expected, "%d.%d.%d", TW_VERSION_MAJOR, TW_VERSION_MINOR,
             TW_VERSION_PATCH);
    CHECK(strcmp(tw_version(), expected) == 0);
    CHECK(tw_version_number() == TW_VERSION_NUMBER);
    CHECK(TW_VERSION_NUMBER ==
          ((TW_VERSION_MAJOR << 16) | (TW_VERSION_MINOR << 8) | TW_VERSION_PATCH));
}

static void config_init_sets_the_size(void) {
    tw_config cfg;
    memset(&cfg, POISON, sizeof cfg);
    tw_config_init(&cfg);
    CHECK(cfg.size == sizeof(tw_config));
    CHECK(cfg.clock == TW_CLOCK_MONOTONIC && cfg.virtual_start_unix_ms == 0);
    CHECK(cfg.tick_us == 1000);
}

/* A caller that zeroes the struct instead of calling tw_config_init: size 0 is the layout
 * of 0.2.0, every field as the caller set it. */
static void zeroed_config_is_read_whole(void) {
    tw_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tick_us = 1000;
    cfg.max_workers = 1;
    cfg.max_timers = 1;
    cfg.manual = 1;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    if (w == NULL) {
        return;
    }
    tw_timer_id id = 0;
    size_t ran = 0;
    CHECK_OK(tw_add(w, 3600 * 1000, noop, NULL, NULL, &id));
    CHECK_STATUS(tw_add(w, 3600 * 1000, noop, NULL, NULL, &id), TW_ERR_FULL); /* max_timers */
    CHECK_OK(tw_poll(w, &ran));                                               /* manual */
    CHECK_OK(tw_destroy(w));
}

/* The last field of the 0.2.0 layout is read too: a zeroed config's virtual clock starts
 * where it says. */
static void zeroed_config_keeps_its_virtual_start(void) {
    tw_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.tick_us = 1000;
    cfg.clock = TW_CLOCK_VIRTUAL;
    cfg.virtual_start_unix_ms = 1764000000000;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg, &w));
    if (w == NULL) {
        return;
    }
    CHECK(tw_now_ms(w) == 1764000000000);
    CHECK_OK(tw_destroy(w));
}

/* The library reads only the old struct: what follows it would make the config invalid
 * (an unknown clock) or manual, and the fields it lacks take their defaults. */
static void older_config_is_read_up_to_its_size(void) {
    union {
        old_config old;
        unsigned char bytes[sizeof(tw_config) + 64];
    } buf;
    memset(buf.bytes, POISON, sizeof buf.bytes);
    buf.old.size = sizeof(old_config);
    buf.old.tick_us = 1000;
    buf.old.min_workers = 1;
    buf.old.max_workers = 1;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create((const tw_config *)(const void *)&buf, &w));
    if (w == NULL) {
        return;
    }
    size_t ran = 0;
    CHECK_STATUS(tw_poll(w, &ran), TW_ERR_INVALID); /* manual took its default: threads */
    CHECK(poisoned(buf.bytes, sizeof(old_config), sizeof buf.bytes));
    CHECK_OK(tw_destroy(w));
}

/* A newer caller's extra fields are accepted while zero, refused when set: a setting this
 * library does not know is never dropped silently. */
static void newer_config_needs_zero_extra_fields(void) {
    newer_config cfg;
    memset(&cfg, 0, sizeof cfg);
    tw_config_init(&cfg.now);
    cfg.now.size = sizeof cfg;
    cfg.now.max_workers = 1;
    tw_wheel *w = NULL;
    CHECK_OK(tw_create(&cfg.now, &w));
    if (w != NULL) {
        CHECK_OK(tw_destroy(w));
    }
    cfg.later_field = 5;
    w = NULL;
    CHECK_STATUS(tw_create(&cfg.now, &w), TW_ERR_INVALID);
    CHECK(w == NULL);
}

static void config_unknown_clock_and_bad_sizes_are_invalid(void) {
    tw_config cfg;
    tw_wheel *w = NULL;
    tw_config_init(&cfg);
    cfg.clock = TW_CLOCK_VIRTUAL + 1;
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    tw_config_init(&cfg);
    cfg.size = 1;
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    cfg.size = sizeof(size_t) - 1;
    CHECK_STATUS(tw_create(&cfg, &w), TW_ERR_INVALID);
    CHECK(w == NULL);
}

/* A wheel with one pending timer: its stats say added 1, pending 1. */
static tw_wheel *wheel_with_one_timer(void) {
    tw_wheel *w = NULL;
    tw_timer_id id = 0;
    CHECK_OK(tw_create(NULL, &w));
    if (w != NULL) {
        CHECK_OK(tw_add(w, 3600 * 1000, noop, NULL, NULL, &id));
    }
    return w;
}

static void older_stats_are_written_up_to_their_size(void) {
    tw_wheel *w = wheel_with_one_timer();
    if (w == NULL) {
        return;
    }
    union {
        old_stats old;
        unsigned char bytes[sizeof(tw_stats) + 64];
    } buf;
    memset(buf.bytes, POISON, sizeof buf.bytes);
    buf.old.size = sizeof(old_stats);
    CHECK_OK(tw_get_stats(w, (tw_stats *)(void *)&buf));
    CHECK(buf.old.size == sizeof(old_stats));
    CHECK(buf.old.added == 1 && buf.old.pending == 1);
    CHECK(poisoned(buf.bytes, sizeof(old_stats), sizeof buf.bytes));
    CHECK_OK(tw_destroy(w));
}

/* Size 0 stands for the layout of 0.2.0: the fields up to callback_panics, no further. */
static void zeroed_stats_get_the_layout_of_0_2_0(void) {
    tw_wheel *w = wheel_with_one_timer();
    if (w == NULL) {
        return;
    }
    tw_stats s;
    memset(&s, 0, sizeof s);
    s.callback_panics = 99;
    s.slow_callbacks = 77;
    CHECK_OK(tw_get_stats(w, &s));
    CHECK(s.size == offsetof(tw_stats, callback_panics) + sizeof s.callback_panics);
    CHECK(s.added == 1 && s.callback_panics == 0);
    CHECK(s.slow_callbacks == 77);
    CHECK_OK(tw_destroy(w));
}

static void newer_stats_keep_their_extra_fields(void) {
    tw_wheel *w = wheel_with_one_timer();
    if (w == NULL) {
        return;
    }
    newer_stats s;
    memset(&s, POISON, sizeof s);
    s.now.size = sizeof s;
    CHECK_OK(tw_get_stats(w, &s.now));
    CHECK(s.now.size == sizeof(tw_stats));
    CHECK(s.now.added == 1);
    CHECK(poisoned((const unsigned char *)&s, sizeof(tw_stats), sizeof s));
    CHECK_OK(tw_destroy(w));
}

static void stats_bad_sizes_are_invalid(void) {
    tw_wheel *w = wheel_with_one_timer();
    if (w == NULL) {
        return;
    }
    tw_stats s = {.size = 1};
    CHECK_STATUS(tw_get_stats(w, &s), TW_ERR_INVALID);
    CHECK(s.size == 1 && s.added == 0);
    CHECK_OK(tw_destroy(w));
}

/* A size that ends inside a field covers the fields before it: the library reads and
 * writes a field whole or not at all (a half-read tick_us would be a tick out of range). */
static void a_size_inside_a_field_covers_the_fields_before_it(void) {
    tw_config cfg;
    memset(&cfg, POISON, sizeof cfg);
    cfg.size = sizeof(size_t) + 4; /* half of tick_us */
    tw_wheel *w = NULL;
    CHECK(tw_config_check(&cfg) == NULL);
    CHECK_OK(tw_create(&cfg, &w)); /* every field past the size field: its default */
    if (w == NULL) {
        return;
    }
    tw_timer_id id = 0;
    CHECK_OK(tw_add(w, 60000, noop, NULL, NULL, &id)); /* pending while stats are read */
    union {
        tw_stats stats;
        unsigned char bytes[sizeof(tw_stats)];
    } buf;
    memset(buf.bytes, POISON, sizeof buf.bytes);
    size_t half = offsetof(tw_stats, added) + 4; /* pending whole, added half */
    buf.stats.size = half;
    CHECK_OK(tw_get_stats(w, &buf.stats));
    CHECK(buf.stats.size == offsetof(tw_stats, added)); /* what it wrote: whole fields */
    CHECK(buf.stats.pending == 1);
    CHECK(poisoned(buf.bytes, offsetof(tw_stats, added), sizeof buf.bytes));
    CHECK_OK(tw_destroy(w));
}

int main(void) {
    RUN(version_macros_match_the_library);
    RUN(config_init_sets_the_size);
    RUN(zeroed_config_is_read_whole);
    RUN(older_config_is_read_up_to_its_size);
    RUN(newer_config_needs_zero_extra_fields);
    RUN(config_unknown_clock_and_bad_sizes_are_invalid);
    RUN(older_stats_are_written_up_to_their_size);
    RUN(zeroed_config_keeps_its_virtual_start);
    RUN(zeroed_stats_get_the_layout_of_0_2_0);
    RUN(newer_stats_keep_their_extra_fields);
    RUN(stats_bad_sizes_are_invalid);
    RUN(a_size_inside_a_field_covers_the_fields_before_it);
    return check_summary("test_abi");
}
