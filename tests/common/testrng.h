/*
 * Random data for tests: splitmix64, a fast generator whose stream depends
 * only on the state, so a test seed replays a run (GNN_TEST_SEED).
 */
#ifndef GNN_TESTS_TESTRNG_H
#define GNN_TESTS_TESTRNG_H

#include <stdint.h>

/* Next 64 random bits of *state (splitmix64). */
static inline uint64_t tu_rng_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#endif
