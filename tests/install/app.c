/* Built against an installed timerwheel (make test-install), with pkg-config and with
 * CMake's find_package: one timer fires. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <time.h>
#include <timerwheel.h>

static int fired;

static void on_fire(tw_timer_id id, void *user_data) {
    (void)id;
    __atomic_store_n((int *)user_data, 1, __ATOMIC_SEQ_CST);
}

int main(void) {
    tw_wheel *wheel = NULL;
    tw_timer_id id = 0;
    if (tw_create(NULL, &wheel) != TW_OK ||
        tw_add(wheel, 5, on_fire, &fired, NULL, &id) != TW_OK) {
        fprintf(stderr, "app: cannot add a timer\n");
        return 1;
    }
    struct timespec pause = {0, 1000000};
    for (int i = 0; i < 5000 && !__atomic_load_n(&fired, __ATOMIC_SEQ_CST); i++) {
        nanosleep(&pause, NULL);
    }
    tw_status status = tw_destroy(wheel);
    printf("app: timerwheel %s, timer %s\n", tw_version(), fired ? "fired" : "did not fire");
    return fired && status == TW_OK ? 0 : 1;
}
