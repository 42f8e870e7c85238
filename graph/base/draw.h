/*
 * The draws of one row (sampler.h gives the definition), as inline
 * functions that compile for the host and for a CUDA device alike, so that
 * the CPU sampler and the device sampler (kernels/backend.h,
 * gnn_be_sample) draw the same positions bit for bit.
 *
 * The stream of (key, id, h): 64-bit words from Philox-4x32-10 blocks with
 * counter {lo32(id), hi32(id), h, block}, two words a block; below(m) by
 * Lemire's multiply-and-reject; k of d positions by Floyd's algorithm with
 * repeats found by scanning the draws so far (gnn_draw_floyd; the CPU
 * sampler finds them in a hash set for long draws: the same positions).
 */
#ifndef GNN_BASE_DRAW_H
#define GNN_BASE_DRAW_H

#include "graph/base/rng.h"

#include <stdint.h>
#include <stdlib.h>

/* The key of batch `batch` of epoch `epoch` under seed `seed`: every
 * sampler's draws of that batch come from it (gnn_sampler_key). */
static inline uint64_t gnn_draw_key(uint64_t seed, uint64_t epoch, uint64_t batch)
{
    return gnn_rng_mix64(gnn_rng_mix64(gnn_rng_mix64(seed) ^ epoch) ^ batch);
}

typedef struct {
    uint32_t ctr[4]; /* {lo32(id), hi32(id), h, next Philox block} */
    uint32_t key[2];
    uint32_t buf[4];
    unsigned pos; /* next word of buf; 4 when used up */
} gnn_draw_stream_t;

static inline GNN_HOSTDEV void gnn_draw_init(gnn_draw_stream_t *s, uint64_t key, int64_t id,
                                             uint32_t h)
{
    s->ctr[0] = (uint32_t)(uint64_t)id;
    s->ctr[1] = (uint32_t)((uint64_t)id >> 32);
    s->ctr[2] = h;
    s->ctr[3] = 0;
    s->key[0] = (uint32_t)key;
    s->key[1] = (uint32_t)(key >> 32);
    s->pos = 4;
}

static inline GNN_HOSTDEV uint64_t gnn_draw_next(gnn_draw_stream_t *s)
{
    if (s->pos >= 4) {
        gnn_philox4x32_10(s->ctr, s->key, s->buf);
        s->ctr[3]++;
        s->pos = 0;
    }
    uint64_t x = (uint64_t)s->buf[s->pos] | (uint64_t)s->buf[s->pos + 1] << 32;
    s->pos += 2;
    return x;
}

/* The high and low 64 bits of a * b. */
static inline GNN_HOSTDEV uint64_t gnn_draw_mul(uint64_t a, uint64_t b, uint64_t *lo)
{
    *lo = a * b;
#ifdef __CUDA_ARCH__
    return __umul64hi(a, b);
#else
    __extension__ typedef unsigned __int128 u128_t;
    return (uint64_t)(((u128_t)a * b) >> 64);
#endif
}

/* Exactly uniform on [0, m), m >= 1 (Lemire, "Fast random integer
 * generation in an interval", 2019). */
static inline GNN_HOSTDEV uint64_t gnn_draw_below(gnn_draw_stream_t *s, uint64_t m)
{
    uint64_t lo, hi = gnn_draw_mul(gnn_draw_next(s), m, &lo);
    if (lo < m) {
        uint64_t t = (0 - m) % m; /* 2^64 mod m */
        while (lo < t) hi = gnn_draw_mul(gnn_draw_next(s), m, &lo);
    }
    return hi;
}

/* k distinct positions of [0, d) into pos, in draw order (Floyd: for j =
 * d - k .. d - 1, t = below(j + 1), taken unless drawn already, else j). */
static inline GNN_HOSTDEV void gnn_draw_floyd(gnn_draw_stream_t *s, int64_t d, int64_t k,
                                              int64_t *pos)
{
    int64_t n = 0;
    for (int64_t j = d - k; j < d; j++) {
        int64_t t = (int64_t)gnn_draw_below(s, (uint64_t)j + 1);
        for (int64_t q = 0; q < n; q++)
            if (pos[q] == t) {
                t = j; /* j itself cannot be taken: earlier draws are < j */
                break;
            }
        pos[n++] = t;
    }
}

/* ---- Rows sorted, as every sampler leaves a block's (host code) ---------- */

static inline int gnn_draw_cmp_ids(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* a[0, n) ascending: by insertion up to 24 entries (a sampled row is
 * short), else qsort. */
static inline void gnn_draw_sort_ids(int64_t *a, int64_t n)
{
    if (n > 24) {
        qsort(a, (size_t)n, sizeof *a, gnn_draw_cmp_ids);
        return;
    }
    for (int64_t i = 1; i < n; i++) {
        const int64_t x = a[i];
        int64_t j = i;
        for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

#endif
