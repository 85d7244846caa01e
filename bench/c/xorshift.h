/* xorshift64*, the generator of the benches' inputs (bench.c, instructions.c) and of
 * examples/w1_rust.rs: the same seed gives every implementation the same delays and order. */
#ifndef TW_BENCH_XORSHIFT_H
#define TW_BENCH_XORSHIFT_H
#include <stdint.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t next_random(void) {
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
#endif
