/* A session with an idle timeout that activity pushes back, and a periodic charge.
 * Build: cc -std=c11 -Wall -Werror hello.c $(pkg-config --cflags --libs timerwheel) */
#define _POSIX_C_SOURCE 200809L /* nanosleep: POSIX, which -std=c11 alone does not declare */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <timerwheel.h>

typedef struct session { atomic_int charges, closed; } session;

static void on_charge(tw_timer_id id, void *user_data) {
    session *s = user_data;
    (void)id;
    atomic_fetch_add(&s->charges, 1);
}

static void on_idle(tw_timer_id id, void *user_data) {
    session *s = user_data;
    (void)id;
    atomic_store(&s->closed, 1);
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void) {
    tw_config cfg;
    tw_config_init(&cfg);                  /* 1 ms tick, 1..CPUs workers */
    tw_wheel *w;
    if (tw_create(&cfg, &w) != TW_OK) return 1;

    session *s = calloc(1, sizeof *s);
    tw_timer_id idle, charge;
    tw_add(w, 100, on_idle, s, NULL, &idle);                 /* close after 100 ms of silence */
    tw_add_periodic(w, 20, 20, TW_FIXED_RATE, on_charge, s, NULL, &charge);  /* every 20 ms */

    for (int i = 0; i < 5; i++) {          /* activity: each event pushes the timeout back */
        sleep_ms(50);
        tw_reset(w, idle, 100);
    }
    while (!atomic_load(&s->closed)) sleep_ms(5);            /* silence: the timeout fires */
    tw_delete(w, charge);                  /* TW_OK: no further charge starts */

    tw_stats st = {.size = sizeof st};
    tw_get_stats(w, &st);
    tw_destroy(w);                         /* waits for a charge still running */
    int charges = atomic_load(&s->charges);
    free(s);
    printf("session closed after %d charges; timers added %llu, fired %llu, late p99 %llu us\n",
           charges, (unsigned long long)st.added, (unsigned long long)st.fired,
           (unsigned long long)st.late_p99_us);
    return charges > 0 ? 0 : 1;
}
