/*
 * The runner's own check (make check-c-runner): a program whose second test fails on
 * purpose. The last line of its output must name that test, so that a failure in a long
 * log says which test failed.
 */
#include "check.h"

static void passes(void) { CHECK(1 + 1 == 2); }
static void fails_on_purpose(void) { CHECK(1 + 1 == 3); }
static void passes_too(void) { CHECK(2 + 2 == 4); }

int main(void) {
    RUN(passes);
    RUN(fails_on_purpose);
    RUN(passes_too);
    return check_summary("runner_fails");
}
