/*
 * The random numbers of the generators (internal, header-only).
 *
 * Output must depend only on the seed and the options, never on batch
 * sizes, threads or the order work is done in. So there is no long-lived
 * generator: every independent piece of work (a batch of edges, a feature
 * row, the class shuffle) opens its own stream with gnn__rng_at(seed,
 * purpose, index), which hashes the three into a SplitMix64 state. Within a
 * stream, numbers are the SplitMix64 sequence: a Weyl counter run through a
 * 64-bit mixer (a counter-based generator; one add, two multiplies and three
 * shifts per number). Streams start at hashed points of a 2^64 cycle, so
 * overlaps between the few thousand streams of a graph have negligible odds.
 */
#ifndef GNN_DATASETS_GENERATE_RNG_H
#define GNN_DATASETS_GENERATE_RNG_H

#include <math.h>
#include <stdint.h>

/* Purposes: one constant per kind of stream, so streams never coincide. */
enum {
    GNN__RNG_RMAT_EDGES = 1,
    GNN__RNG_RMAT_PERM = 2,
    GNN__RNG_RMAT_FEAT = 3,
    GNN__RNG_SBM_CLASS = 11,
    GNN__RNG_SBM_THETA = 12,
    GNN__RNG_SBM_EDGES = 13,
    GNN__RNG_SBM_CENTROID = 14,
    GNN__RNG_SBM_FEAT = 15,
    GNN__RNG_SBM_SPLIT = 16,
    GNN__RNG_HSBM_EDGES = 21,
    GNN__RNG_HSBM_CENTROID = 22,
    GNN__RNG_HSBM_FEAT = 23,
    GNN__RNG_HSBM_SPLIT = 24
};

typedef struct {
    uint64_t s;
} gnn__rng_t;

/* The SplitMix64 finaliser: a bijective 64-bit mixer. */
static inline uint64_t gnn__mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The stream for (seed, purpose, index). */
static inline gnn__rng_t gnn__rng_at(uint64_t seed, uint64_t purpose, uint64_t index)
{
    gnn__rng_t r;
    r.s = gnn__mix64(gnn__mix64(seed ^ gnn__mix64(purpose * 0x9e3779b97f4a7c15ULL)) + index);
    return r;
}

static inline uint64_t gnn__rng_next(gnn__rng_t *r)
{
    r->s += 0x9e3779b97f4a7c15ULL;
    return gnn__mix64(r->s);
}

/* Uniform in [0, 1) with 53 bits. */
static inline double gnn__rng_unit(gnn__rng_t *r)
{
    return (double)(gnn__rng_next(r) >> 11) * 0x1p-53;
}

/* Two independent standard normal values (Box-Muller). */
static inline void gnn__rng_normal2(gnn__rng_t *r, double *a, double *b)
{
    double u = 1.0 - gnn__rng_unit(r); /* (0, 1]: log(u) is finite */
    double t = 6.283185307179586 * gnn__rng_unit(r);
    double m = sqrt(-2.0 * log(u));
    *a = m * cos(t);
    *b = m * sin(t);
}

/* Fill out[0..n) with normal values of mean 0 and standard deviation sd. */
static inline void gnn__rng_normal_fill(gnn__rng_t *r, float *out, int64_t n, double sd)
{
    int64_t i = 0;
    double a, b;
    for (; i + 1 < n; i += 2) {
        gnn__rng_normal2(r, &a, &b);
        out[i] = (float)(sd * a);
        out[i + 1] = (float)(sd * b);
    }
    if (i < n) {
        gnn__rng_normal2(r, &a, &b);
        out[i] = (float)(sd * a);
    }
}

#endif
