/*
 * The R-MAT generator (Graph500 Kronecker graph), see generate.h.
 *
 * N = 2^scale nodes, M = edge_factor * N generated edges. Each edge picks
 * one quadrant of the adjacency matrix per level, scale levels deep, with
 * the Graph500 probabilities A = 0.57, B = C = 0.19, D = 0.05 (A: both bits
 * 0, B: destination bit 1, C: source bit 1, D: both). No per-level noise is
 * added: the degree distribution keeps R-MAT's known comb of peaks, which
 * does not matter for the benchmarks these graphs feed. Vertex ids are then
 * scrambled by a seeded bijection of [0, 2^scale) so hubs are not clustered
 * at low ids, and the builder symmetrises, deduplicates and drops self
 * loops: the file is undirected with fewer than 2M stored entries.
 *
 * Edges are made in batches of RMAT_BATCH, batch i from its own random
 * stream (seed, i), and handed to the builder batch by batch, so memory is
 * the builder's (bounded by --mem-budget) plus two batch arrays. Optional
 * features are N(0, 1) per entry, row v from stream (seed, v), written in
 * blocks. The graph depends only on (scale, edge_factor, feat_dim, seed).
 */
#include "datasets/builder.h"
#include "datasets/generate.h"
#include "datasets/generate_rng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"

#include <stdint.h>

#define RMAT_BATCH ((int64_t)1 << 20)
#define FEAT_BLOCK_FLOATS ((int64_t)1 << 22) /* 16 MiB of features per put */

/* Quadrant thresholds on a 32-bit uniform: A, A + B, A + B + C. */
#define RMAT_T_A ((uint64_t)(0.57 * 4294967296.0))
#define RMAT_T_AB ((uint64_t)(0.76 * 4294967296.0))
#define RMAT_T_ABC ((uint64_t)(0.95 * 4294967296.0))

void gnn_rmat_defaults(gnn_rmat_opts_t *o)
{
    o->scale = 16;
    o->edge_factor = 16;
    o->feat_dim = 0;
    o->seed = 1;
}

int gnn_rmat_check(const gnn_rmat_opts_t *o)
{
    if (o->scale < 1 || o->scale > 40)
        return GNN_FAIL(GNN_EUSAGE, "--scale must be in 1..40 (got %d)", o->scale);
    if (o->edge_factor <= 0)
        return GNN_FAIL(GNN_EUSAGE, "--edge-factor must be positive (got %lld)",
                        (long long)o->edge_factor);
    if (o->edge_factor > (INT64_MAX / 4) >> o->scale)
        return GNN_FAIL(GNN_EUSAGE, "--edge-factor %lld at scale %d: too many edges",
                        (long long)o->edge_factor, o->scale);
    if (o->feat_dim < 0)
        return GNN_FAIL(GNN_EUSAGE, "--feat-dim must not be negative (got %d)", o->feat_dim);
    return 0;
}

/* The scramble keys: x -> ((x k1) ^ ((x k1) >> s1)) k2 ^ ... + k3, mod 2^scale.
 * Odd multiplies, right xor-shifts and additions are each bijective on
 * scale-bit numbers, so the composition is. */
typedef struct {
    uint64_t mask, k1, k2, k3;
    int s1, s2;
} scramble_t;

static void scramble_init(scramble_t *p, int scale, int64_t seed)
{
    gnn__rng_t r = gnn__rng_at((uint64_t)seed, GNN__RNG_RMAT_PERM, 0);
    p->mask = ((uint64_t)1 << scale) - 1;
    p->k1 = gnn__rng_next(&r) | 1;
    p->k2 = gnn__rng_next(&r) | 1;
    p->k3 = gnn__rng_next(&r) & p->mask;
    p->s1 = (scale + 1) / 2;
    p->s2 = (scale + 2) / 3;
}

static inline uint64_t scramble(const scramble_t *p, uint64_t x)
{
    x = (x * p->k1) & p->mask;
    x ^= x >> p->s1;
    x = (x * p->k2) & p->mask;
    x ^= x >> p->s2;
    return (x + p->k3) & p->mask;
}

gnn_vid_t gnn_rmat_scramble(gnn_vid_t v, int scale, int64_t seed)
{
    scramble_t p;
    scramble_init(&p, scale, seed);
    return (gnn_vid_t)scramble(&p, (uint64_t)v);
}

/* Edges [first, first + n) of batch `batch`: its own stream, so batches can
 * be made in any order. */
typedef struct {
    const gnn_rmat_opts_t *o;
    scramble_t p;
} rmat_ctx_t;

static void make_batch(void *ctx, int64_t batch, int64_t n, gnn_vid_t *src, gnn_vid_t *dst)
{
    const gnn_rmat_opts_t *o = ((const rmat_ctx_t *)ctx)->o;
    const scramble_t *p = &((const rmat_ctx_t *)ctx)->p;
    gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_RMAT_EDGES, (uint64_t)batch);
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = 0, v = 0, bits = 0;
        for (int level = 0; level < o->scale; level++) {
            if (!(level & 1)) bits = gnn__rng_next(&r);
            uint64_t x = (level & 1) ? (bits & 0xffffffffu) : (bits >> 32);
            uint64_t bu = x >= RMAT_T_AB, bv = (x >= RMAT_T_A && x < RMAT_T_AB) || x >= RMAT_T_ABC;
            u = (u << 1) | bu;
            v = (v << 1) | bv;
        }
        src[i] = (gnn_vid_t)scramble(p, u);
        dst[i] = (gnn_vid_t)scramble(p, v);
    }
}

/* Features N(0, 1), row v from stream (seed, v), written in row blocks. */
static int write_features(const gnn_rmat_opts_t *o, gnn_vid_t n, gnn_graph_writer_t *w)
{
    int rc = 0;
    int64_t f = o->feat_dim;
    gnn_vid_t block = FEAT_BLOCK_FLOATS / f > 0 ? FEAT_BLOCK_FLOATS / f : 1;
    if (block > n) block = n;
    float *buf = gnn_malloc_array((size_t)block, (size_t)f * sizeof *buf);
    gnn_progress_t *prog = NULL;
    GNN_CHECK(buf, GNN_ENOMEM, "out of memory for a block of %lld feature rows",
              (long long)block);
    prog = gnn_progress_start("writing features", n, "rows");
    for (gnn_vid_t r0 = 0; r0 < n; r0 += block) {
        gnn_vid_t nr = n - r0 < block ? n - r0 : block;
        for (gnn_vid_t i = 0; i < nr; i++) {
            gnn__rng_t r = gnn__rng_at((uint64_t)o->seed, GNN__RNG_RMAT_FEAT, (uint64_t)(r0 + i));
            gnn__rng_normal_fill(&r, buf + i * f, f, 1.0);
        }
        GNN_TRY(gnn_graph_writer_put_feat(w, r0, nr, buf));
        gnn_progress_add(prog, nr);
    }
fail:
    gnn_progress_finish(prog);
    gnn_free(buf);
    return rc;
}

int gnn_generate_rmat(const gnn_rmat_opts_t *o, const gnn_output_opts_t *out)
{
    int rc = 0;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;

    GNN_TRY(gnn_rmat_check(o));
    GNN_TRY(gnn_output_check(out));
    gnn_vid_t n = (gnn_vid_t)1 << o->scale;
    gnn_eid_t m = o->edge_factor * n;
    double t0 = gnn_now();
    rmat_ctx_t c = {.o = o};
    scramble_init(&c.p, o->scale, o->seed);
    GNN_TRY(gnn_builder_generate(n, m, RMAT_BATCH, make_batch, &c, out->mem_budget, out->tmpdir,
                                 &b));

    gnn_graph_header_t h = {
        .num_nodes = n,
        .num_edges = -1,
        .directed = 0,
        .csr_flags = gnn_builder_csr_flags(b) | GNN_CSR_SYMMETRIC,
        .feat_dim = o->feat_dim,
    };
    GNN_TRY(gnn_graph_writer_open(out->path, &h, out->force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    if (o->feat_dim > 0) GNN_TRY(write_features(o, n, w));
    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    GNN_TRY(rc);
    GNN_INFO("%s: R-MAT scale %d: %lld nodes, %lld stored edges (%lld generated, "
             "mean degree %.2f), %d features, %.2f s",
             out->path, o->scale, (long long)n, (long long)st.num_edges, (long long)m,
             (double)st.num_edges / (double)n, o->feat_dim, gnn_now() - t0);
fail:
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    return rc;
}
