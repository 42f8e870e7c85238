/*
 * The counter-based random numbers of the kernels (dropout masks), shared
 * bit for bit by the CPU and CUDA backends.
 *
 * Every number is a pure function of (seed, counter): no state, no libc
 * call, so any thread on any device computes element i of a call without
 * knowing what the others drew, and the CPU and the GPU produce the same
 * dropout mask for the same seed. The generator is Philox-4x32-10 (Salmon et
 * al., "Parallel random numbers: as easy as 1, 2, 3", SC'11; the Random123
 * and cuRAND core), checked against Random123's known-answer vectors in
 * tests/kernels/test_dense.c.
 *
 * Exact definition of the uniform number of element counter j (uint64_t):
 *
 *   block = j >> 2, lane = j & 3
 *   r[0..3] = philox4x32_10(ctr = {lo32(block), hi32(block), 0, 0},
 *                           key = {lo32(seed), hi32(seed)})
 *   u(seed, j) = (float)(r[lane] >> 8) * 2^-24          in [0, 1), exact
 *
 * Philox-4x32-10: 10 rounds of
 *   (hi0, lo0) = 0xD2511F53 * c0, (hi1, lo1) = 0xCD9E8D57 * c2  (32x32->64)
 *   c = {hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0}
 * with the key bumped by (0x9E3779B9, 0xBB67AE85) between rounds (mod 2^32).
 *
 * Dropout of element i of a call with (seed, offset, p): j = offset + i
 * (mod 2^64); the element is dropped when u(seed, j) < p (a float compare,
 * both sides exact), kept otherwise and scaled by
 * scale = (float)(1.0 / (1.0 - (double)p)) as y = x * scale (one float
 * multiply, no fused operation). A CUDA thread that handles four elements
 * with the same block uses one Philox call for all four.
 */
#ifndef GNN_BASE_RNG_H
#define GNN_BASE_RNG_H

#include <stdint.h>

#ifdef __CUDACC__
#define GNN_HOSTDEV __host__ __device__
#else
#define GNN_HOSTDEV
#endif

#define GNN_PHILOX_M0 0xD2511F53u
#define GNN_PHILOX_M1 0xCD9E8D57u
#define GNN_PHILOX_W0 0x9E3779B9u
#define GNN_PHILOX_W1 0xBB67AE85u

/* Philox-4x32-10 of counter ctr[4] under key key[2] into out[4]. */
static inline GNN_HOSTDEV void gnn_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                                                 uint32_t out[4])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        if (r > 0) {
            k0 += GNN_PHILOX_W0;
            k1 += GNN_PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)GNN_PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)GNN_PHILOX_M1 * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

/* The four 32-bit words of counter block `block` (elements 4*block..+3). */
static inline GNN_HOSTDEV void gnn_rng_block(uint64_t seed, uint64_t block, uint32_t out[4])
{
    uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32), 0u, 0u};
    uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    gnn_philox4x32_10(ctr, key, out);
}

/* A 32-bit word as a uniform float in [0, 1): its top 24 bits times 2^-24. */
static inline GNN_HOSTDEV float gnn_rng_u01(uint32_t w)
{
    return (float)(w >> 8) * 5.9604644775390625e-08f; /* 2^-24 */
}

/* u(seed, j) of the definition above: uniform float in [0, 1). */
static inline GNN_HOSTDEV float gnn_rng_uniform(uint64_t seed, uint64_t j)
{
    uint32_t r[4];
    gnn_rng_block(seed, j >> 2, r);
    return gnn_rng_u01(r[j & 3u]);
}

/* splitmix64's finaliser applied to x + 0x9E3779B97F4A7C15: how seeds,
 * epochs and batch numbers are folded into one generator key. */
static inline GNN_HOSTDEV uint64_t gnn_rng_mix64(uint64_t x)
{
    uint64_t z = x + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The key of the draws at position `at` of a stream whose base is base
 * (a mix64 of the stream's seed and a tag): a call's key that any device
 * can compute from the position alone (attention dropout's, one a call). */
static inline GNN_HOSTDEV uint64_t gnn_rng_key_at(uint64_t base, uint64_t at)
{
    return gnn_rng_mix64(base ^ gnn_rng_mix64(at));
}

/* The 64-bit word i of the stream of key: words (lo, hi) = r[0], r[1] of
 * block i / 2 for even i, r[2], r[3] for odd i, as lo | hi << 32. */
static inline GNN_HOSTDEV uint64_t gnn_rng_word64(uint64_t key, uint64_t i)
{
    uint32_t r[4];
    gnn_rng_block(key, i >> 1, r);
    return (i & 1u) ? ((uint64_t)r[2] | (uint64_t)r[3] << 32)
                    : ((uint64_t)r[0] | (uint64_t)r[1] << 32);
}

/* Exactly uniform on [0, m), m >= 1, from the words *next, *next + 1, ...
 * of key's stream (Lemire's multiply-and-reject; *next advances past the
 * words used). */
static inline uint64_t gnn_rng_below(uint64_t key, uint64_t *next, uint64_t m)
{
    unsigned __int128 p = (unsigned __int128)gnn_rng_word64(key, (*next)++) * m;
    if ((uint64_t)p < m) {
        uint64_t t = -m % m;
        while ((uint64_t)p < t) p = (unsigned __int128)gnn_rng_word64(key, (*next)++) * m;
    }
    return (uint64_t)(p >> 64);
}

/* 1 when dropout keeps element counter j at drop probability p, else 0. */
static inline GNN_HOSTDEV int gnn_rng_keep(uint64_t seed, uint64_t j, float p)
{
    return !(gnn_rng_uniform(seed, j) < p);
}

#endif
