/*
 * The driver thread: opens sessions evenly over the first ARRIVAL_SHARE of the run and
 * generates activity events at a steady rate, a share of them hang-ups, each on a random
 * live session. It keeps its own list of live sessions and drops the ones found ended.
 * After a restart it goes on where the run stands (the sessions opened, the time since the
 * run began).
 */
#include <stdlib.h>
#include <time.h>

#include "billing.h"

#define ARRIVAL_SHARE 0.6
#define STEP_NS 1000000u /* the driver catches up with its schedule every millisecond */

typedef struct driver {
    billing *b;
    uint64_t rng;
    uint32_t *live;  /* indices of sessions this driver believes live */
    uint32_t nlive;
} driver;

static uint64_t next_random(driver *d) {
    d->rng ^= d->rng << 13;
    d->rng ^= d->rng >> 7;
    d->rng ^= d->rng << 17;
    return d->rng;
}

static double uniform(driver *d) {
    return (double)(next_random(d) >> 11) / 9007199254740992.0;
}

static void open_session(driver *d, uint32_t index) {
    int64_t credit = 2 + (int64_t)(next_random(d) % 40);
    if (session_start(d->b, index, credit) == 0) d->live[d->nlive++] = index;
    atomic_store(&d->b->started, index + 1);
}

/* One activity event on a random live session: a touch, or a hang-up. */
static void activity_event(driver *d) {
    while (d->nlive > 0) {
        uint32_t k = (uint32_t)(next_random(d) % d->nlive);
        uint32_t index = d->live[k];
        int hang_up = uniform(d) < d->b->opt.hangup_share;
        if (hang_up) session_hang_up(d->b, index, HANGUP);
        if (hang_up || !session_touch(d->b, index)) {
            d->live[k] = d->live[--d->nlive];
            if (!hang_up) continue; /* it had ended: pick another */
        }
        return;
    }
}

static void sleep_step(void) {
    struct timespec ts = {0, STEP_NS};
    nanosleep(&ts, NULL);
}

/* After a restart: the sessions opened before it, and the live ones among them. */
static void pick_up(driver *d) {
    billing *b = d->b;
    uint32_t opened = atomic_load(&b->started);
    for (uint32_t i = 0; i < opened; i++) {
        pthread_mutex_lock(account_lock(b, i));
        if (b->accounts[i].reason == LIVE) d->live[d->nlive++] = i;
        pthread_mutex_unlock(account_lock(b, i));
    }
    d->rng = (d->rng ^ opened * 0x9E3779B97F4A7C15u) | 1;
}

void *driver_main(void *arg) {
    driver d = {arg, 0, NULL, 0};
    billing *b = d.b;
    d.rng = b->opt.seed | 1;
    d.live = malloc(sizeof *d.live * (b->opt.sessions + 1u));
    if (d.live == NULL) return NULL;
    pick_up(&d);
    double arrival_s = b->opt.duration_s * ARRIVAL_SHARE;
    uint64_t start = b->run_start_ns;
    uint32_t opened = atomic_load(&b->started);
    uint64_t events = (uint64_t)((double)(now_ns() - start) / 1e9 * b->opt.events_per_s);
    while (!atomic_load(&b->stop)) {
        double t = (double)(now_ns() - start) / 1e9;
        double due = t >= arrival_s ? b->opt.sessions : b->opt.sessions * t / arrival_s;
        while (opened < (uint32_t)due) open_session(&d, opened++);
        while ((double)events < t * b->opt.events_per_s) {
            activity_event(&d);
            events++;
        }
        sleep_step();
    }
    free(d.live);
    return NULL;
}
