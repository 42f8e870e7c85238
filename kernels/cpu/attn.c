/*
 * Multi-head graph attention on the CPU (kernels/attn.h).
 *
 * Forward, one destination row per task (OpenMP, rows handed out in
 * chunks): the row's scores are turned into softmax weights in place (max
 * first, so exp never overflows), then its sources' rows are summed with
 * those weights, head by head, the feature loop contiguous. Backward: per
 * destination the weights' gradients (one dot product per slot and head)
 * and the softmax backward; per source, through the transpose, the sum of
 * weighted output gradients. Each output row is written by one thread in
 * a fixed order: results do not depend on the thread count.
 */
#include "kernels/attn.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define CHUNK 32 /* rows per OpenMP task */

int gnn_attn_graph_create(const gnn_spmm_graph_t *g, int self_loop, gnn_attn_graph_t **out)
{
    int rc = 0;
    gnn_attn_graph_t *a = NULL;
    gnn_eid_t *next = NULL;
    GNN_CHECK(out, GNN_EINVAL, "attention graph: NULL output");
    *out = NULL;
    GNN_CHECK(g, GNN_EINVAL, "attention graph: NULL graph");
    GNN_CHECK(!self_loop || g->n_dst <= g->n_src, GNN_EINVAL,
              "attention graph: self loops need the destinations among the sources (%" GNN_PRIvid
              " destinations, %" GNN_PRIvid " sources)",
              g->n_dst, g->n_src);
    a = gnn_calloc(1, sizeof *a);
    GNN_CHECK(a, GNN_ENOMEM, "attention graph");
    a->g = g;
    a->self_loop = self_loop != 0;
    a->slots = g->nnz + (self_loop ? g->n_dst : 0);
    a->t_slot = gnn_malloc_array((size_t)g->nnz + 1, sizeof *a->t_slot);
    next = gnn_malloc_array((size_t)g->n_src + 1, sizeof *next);
    GNN_CHECK(a->t_slot && next, GNN_ENOMEM, "attention graph of %" GNN_PRIeid " edges", g->nnz);
    /* The transpose lists, per source, its destinations in ascending order
     * (repeats in CSR order): the order of a counting sort by source over
     * the rows taken in order, which this replays to find each entry's slot. */
    memcpy(next, g->t.indptr, (size_t)g->n_src * sizeof *next);
    const gnn_csr_t *c = g->csr;
    for (gnn_vid_t v = 0; v < g->n_dst; v++)
        for (gnn_eid_t k = c->indptr[v]; k < c->indptr[v + 1]; k++)
            a->t_slot[next[c->indices[k]]++] = k + (self_loop ? v : 0);
    gnn_free(next);
    *out = a;
    return 0;
fail:
    gnn_free(next);
    gnn_attn_graph_free(a);
    return rc;
}

void gnn_attn_graph_free(gnn_attn_graph_t *a)
{
    if (!a) return;
    gnn_free(a->t_slot);
    gnn_free(a);
}

static int check(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const char *what)
{
    if (!a || !o) return GNN_FAIL(GNN_EINVAL, "%s: NULL argument", what);
    if (o->heads < 1 || o->heads > GNN_ATTN_MAX_HEADS || o->f < 1)
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " heads of %" PRId64 " features", what,
                        o->heads, o->f);
    if (!(o->dropout >= 0.0f && o->dropout < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "%s: attention dropout %g outside [0, 1)", what,
                        (double)o->dropout);
    if ((o->self_loop != 0) != a->self_loop)
        return GNN_FAIL(GNN_EINVAL, "%s: the graph was prepared %s self loops", what,
                        a->self_loop ? "with" : "without");
    return 0;
}

/* The scale of every head's weight of edge u -> v into ks[0, heads):
 * 1/(1-p) where kept, 0 where dropped; the counters name the edge by its
 * end points' global ids, four heads to one Philox call (the bits of
 * gnn_rng_keep for each). */
static inline void edge_keep(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, float scale,
                             gnn_vid_t u, gnn_vid_t v, float *ks)
{
    int64_t H = o->heads;
    if (!(o->dropout > 0.0f)) {
        for (int64_t h = 0; h < H; h++) ks[h] = 1.0f;
        return;
    }
    uint64_t n = o->ids ? (uint64_t)o->n_ids : (uint64_t)a->g->n_src;
    uint64_t gu = o->ids ? (uint64_t)o->ids[u] : (uint64_t)u;
    uint64_t gv = o->ids ? (uint64_t)o->ids[v] : (uint64_t)v;
    uint64_t j0 = o->offset + (gv * n + gu) * (uint64_t)H, blk = 0;
    uint32_t r[4] = {0, 0, 0, 0};
    for (int64_t h = 0; h < H; h++) {
        uint64_t j = j0 + (uint64_t)h;
        if (h == 0 || (j >> 2) != blk) {
            blk = j >> 2;
            gnn_rng_block(o->seed, blk, r);
        }
        ks[h] = gnn_rng_u01(r[j & 3u]) < o->dropout ? 0.0f : scale;
    }
}

static inline float dropout_scale(const gnn_attn_opts_t *o)
{
    return (float)(1.0 / (1.0 - (double)o->dropout));
}

/* Row v's slots: first, count (with the self loop last when added), and
 * the source of slot first + i. A stored self loop u == v is excluded
 * when one is added: *skip set. */
typedef struct {
    gnn_eid_t lo, first, n;
    int self;
} row_t;

static inline row_t row_of(const gnn_attn_graph_t *a, gnn_vid_t v)
{
    const gnn_csr_t *c = a->g->csr;
    row_t r;
    r.lo = c->indptr[v];
    r.self = a->self_loop;
    r.first = r.lo + (r.self ? v : 0);
    r.n = c->indptr[v + 1] - r.lo + r.self;
    return r;
}

/* Source of slot i of row v (i < r.n), and whether it is left out. */
static inline gnn_vid_t slot_src(const gnn_attn_graph_t *a, const row_t *r, gnn_vid_t v,
                                 gnn_eid_t i, int *out)
{
    if (r->self && i == r->n - 1) {
        *out = 0;
        return v;
    }
    gnn_vid_t u = a->g->csr->indices[r->lo + i];
    *out = r->self && u == v;
    return u;
}

int gnn_attn_gat_score(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *el,
                       const float *er, float *s)
{
    int rc = check(a, o, "GAT scores");
    if (rc < 0) return rc;
    if (!el || !er || !s) return GNN_FAIL(GNN_EINVAL, "GAT scores: NULL array");
    int64_t H = o->heads;
    float slope = o->negative_slope;
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t v = 0; v < a->g->n_dst; v++) {
        row_t r = row_of(a, v);
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            float *se = s + (r.first + i) * H;
            for (int64_t h = 0; h < H; h++) {
                float z = el[u * H + h] + er[v * H + h];
                se[h] = out ? 0.0f : z > 0.0f ? z : z * slope;
            }
        }
    }
    return 0;
}

int gnn_attn_gat_score_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o,
                                const float *el, const float *er, const float *ds, float *del,
                                float *der)
{
    int rc = check(a, o, "GAT scores backward");
    if (rc < 0) return rc;
    if (!el || !er || !ds || !del || !der)
        return GNN_FAIL(GNN_EINVAL, "GAT scores backward: NULL array");
    const gnn_spmm_graph_t *g = a->g;
    int64_t H = o->heads;
    float slope = o->negative_slope;
    /* Destinations: their row's slots. */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t v = 0; v < g->n_dst; v++) {
        row_t r = row_of(a, v);
        float *d = der + v * H;
        for (int64_t h = 0; h < H; h++) d[h] = 0.0f;
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            if (out) continue;
            const float *de = ds + (r.first + i) * H;
            for (int64_t h = 0; h < H; h++) {
                float z = el[u * H + h] + er[v * H + h];
                d[h] += de[h] * (z > 0.0f ? 1.0f : slope);
            }
        }
    }
    /* Sources: their transposed row, then their own self loop. */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t u = 0; u < g->n_src; u++) {
        float *d = del + u * H;
        for (int64_t h = 0; h < H; h++) d[h] = 0.0f;
        for (gnn_eid_t t = g->t.indptr[u]; t < g->t.indptr[u + 1]; t++) {
            gnn_vid_t v = g->t.indices[t];
            if (a->self_loop && u == v) continue;
            const float *de = ds + a->t_slot[t] * H;
            for (int64_t h = 0; h < H; h++) {
                float z = el[u * H + h] + er[v * H + h];
                d[h] += de[h] * (z > 0.0f ? 1.0f : slope);
            }
        }
        if (a->self_loop && u < g->n_dst) {
            const float *de = ds + (g->csr->indptr[u + 1] + u) * H;
            for (int64_t h = 0; h < H; h++) {
                float z = el[u * H + h] + er[u * H + h];
                d[h] += de[h] * (z > 0.0f ? 1.0f : slope);
            }
        }
    }
    return 0;
}

int gnn_attn_forward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                     float *s, float *y)
{
    int rc = check(a, o, "attention");
    if (rc < 0) return rc;
    if (!x || !s || !y) return GNN_FAIL(GNN_EINVAL, "attention: NULL array");
    int64_t H = o->heads, F = o->f, W = H * F;
    float scale = dropout_scale(o);
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t v = 0; v < a->g->n_dst; v++) {
        row_t r = row_of(a, v);
        float *yv = y + v * W;
        memset(yv, 0, (size_t)W * sizeof *yv);
        float *sr = s + r.first * H;
        /* The softmax of every head at once, slot by slot (the heads of a
         * slot are adjacent): the same sums in the same order per head. */
        float m[GNN_ATTN_MAX_HEADS], sum[GNN_ATTN_MAX_HEADS];
        for (int64_t h = 0; h < H; h++) m[h] = -INFINITY, sum[h] = 0.0f;
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            slot_src(a, &r, v, i, &out);
            if (out) continue;
            for (int64_t h = 0; h < H; h++) m[h] = sr[i * H + h] > m[h] ? sr[i * H + h] : m[h];
        }
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            slot_src(a, &r, v, i, &out);
            for (int64_t h = 0; h < H; h++) {
                float e = out ? 0.0f : expf(sr[i * H + h] - m[h]);
                sr[i * H + h] = e;
                sum[h] += e;
            }
        }
        for (int64_t h = 0; h < H; h++) sum[h] = sum[h] > 0.0f ? 1.0f / sum[h] : 0.0f;
        for (gnn_eid_t i = 0; i < r.n; i++)
            for (int64_t h = 0; h < H; h++) sr[i * H + h] *= sum[h];
        float ks[GNN_ATTN_MAX_HEADS];
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            if (out) continue;
            const float *xu = x + u * W;
            edge_keep(a, o, scale, u, v, ks);
            for (int64_t h = 0; h < H; h++) {
                float w = sr[i * H + h] * ks[h];
                if (ks[h] == 0.0f) sr[i * H + h] = -sr[i * H + h]; /* dropped: sign set */
                if (w == 0.0f) continue;
                const float *xs = xu + h * F;
                float *ys = yv + h * F;
#pragma omp simd
                for (int64_t k = 0; k < F; k++) ys[k] += w * xs[k];
            }
        }
    }
    return 0;
}

int gnn_attn_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                      const float *alpha, const float *dy, float *dx, float *ds)
{
    int rc = check(a, o, "attention backward");
    if (rc < 0) return rc;
    if (!x || !alpha || !dy || !dx || !ds)
        return GNN_FAIL(GNN_EINVAL, "attention backward: NULL array");
    const gnn_spmm_graph_t *g = a->g;
    int64_t H = o->heads, F = o->f, W = H * F;
    float scale = dropout_scale(o);
    /* Per destination: d alpha (through dropout), then the softmax's
     * backward ds = alpha (d alpha - sum alpha d alpha). */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t v = 0; v < g->n_dst; v++) {
        row_t r = row_of(a, v);
        const float *dyv = dy + v * W, *ar = alpha + r.first * H;
        float *dr = ds + r.first * H;
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            const float *xu = x + u * W;
            for (int64_t h = 0; h < H; h++) {
                float ks = out || signbit(ar[i * H + h]) ? 0.0f : scale, dot = 0.0f;
                if (ks != 0.0f) {
                    const float *xs = xu + h * F, *gs = dyv + h * F;
#pragma omp simd reduction(+ : dot)
                    for (int64_t k = 0; k < F; k++) dot += gs[k] * xs[k];
                }
                dr[i * H + h] = ks * dot;
            }
        }
        for (int64_t h = 0; h < H; h++) {
            float c = 0.0f;
            for (gnn_eid_t i = 0; i < r.n; i++) c += fabsf(ar[i * H + h]) * dr[i * H + h];
            for (gnn_eid_t i = 0; i < r.n; i++)
                dr[i * H + h] = fabsf(ar[i * H + h]) * (dr[i * H + h] - c);
        }
    }
    /* Per source: its transposed row, then its own self loop. */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t u = 0; u < g->n_src; u++) {
        float *du = dx + u * W;
        memset(du, 0, (size_t)W * sizeof *du);
        for (gnn_eid_t t = g->t.indptr[u]; t <= g->t.indptr[u + 1]; t++) {
            gnn_vid_t v;
            gnn_eid_t e;
            if (t < g->t.indptr[u + 1]) {
                v = g->t.indices[t];
                if (a->self_loop && u == v) continue;
                e = a->t_slot[t];
            } else { /* after the stored edges: the added self loop */
                if (!a->self_loop || u >= g->n_dst) break;
                v = u;
                e = g->csr->indptr[u + 1] + u;
            }
            const float *dyv = dy + v * W;
            for (int64_t h = 0; h < H; h++) {
                float al = alpha[e * H + h];
                if (signbit(al)) continue; /* dropped */
                float w = al * scale;
                if (w == 0.0f) continue;
                const float *gs = dyv + h * F;
                float *ds_ = du + h * F;
#pragma omp simd
                for (int64_t k = 0; k < F; k++) ds_[k] += w * gs[k];
            }
        }
    }
    return 0;
}

int gnn_attn_head_dot(int64_t n, int64_t heads, int64_t f, const float *x, const float *a,
                      float *out)
{
    if (n < 0 || heads < 1 || f < 1 || (n && (!x || !a || !out)))
        return GNN_FAIL(GNN_EINVAL, "head terms: bad arguments");
    int64_t W = heads * f;
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < n; u++)
        for (int64_t h = 0; h < heads; h++) {
            const float *xs = x + u * W + h * f, *as = a + h * f;
            float t = 0.0f;
#pragma omp simd reduction(+ : t)
            for (int64_t k = 0; k < f; k++) t += xs[k] * as[k];
            out[u * heads + h] = t;
        }
    return 0;
}

#define DA_BLOCK 4096 /* rows per partial sum of da */

int gnn_attn_head_dot_backward(int64_t n, int64_t heads, int64_t f, const float *x,
                               const float *a, const float *dout, float *dx, float *da)
{
    if (n < 0 || heads < 1 || f < 1 || !a || !da || (n && (!x || !dout || !dx)))
        return GNN_FAIL(GNN_EINVAL, "head terms backward: bad arguments");
    int64_t W = heads * f, nb = (n + DA_BLOCK - 1) / DA_BLOCK;
    double *part = gnn_calloc((size_t)(nb * W) + 1, sizeof *part);
    if (!part) return GNN_FAIL(GNN_ENOMEM, "head terms backward");
#pragma omp parallel for schedule(static)
    for (int64_t u = 0; u < n; u++)
        for (int64_t h = 0; h < heads; h++) {
            const float g = dout[u * heads + h], *as = a + h * f;
            float *ds = dx + u * W + h * f;
#pragma omp simd
            for (int64_t k = 0; k < f; k++) ds[k] += g * as[k];
        }
    /* da: fixed blocks of rows, each summed by one thread, then the blocks
     * in order: the same bits for any thread count. */
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < nb; b++) {
        double *p = part + b * W;
        int64_t end = (b + 1) * DA_BLOCK < n ? (b + 1) * DA_BLOCK : n;
        for (int64_t u = b * DA_BLOCK; u < end; u++)
            for (int64_t h = 0; h < heads; h++) {
                const double g = dout[u * heads + h];
                const float *xs = x + u * W + h * f;
                for (int64_t k = 0; k < f; k++) p[h * f + k] += g * xs[k];
            }
    }
    for (int64_t i = 0; i < W; i++) {
        double t = 0.0;
        for (int64_t b = 0; b < nb; b++) t += part[b * W + i];
        da[i] = (float)t;
    }
    gnn_free(part);
    return 0;
}
