/*
 * Multi-head graph attention on the CPU (kernels/attn.h).
 *
 * Forward, destination rows in chunks (OpenMP tasks), each chunk in
 * blocks of rows: first every row's scores are turned into softmax
 * weights in place (max first, so exp never overflows) and dropped, then
 * the block's rows sum their sources' rows with those weights, head by
 * head, the feature loop contiguous (a loop of gathers alone, which keeps
 * many in flight). Backward: the softmax backward's row sums from the
 * forward's output (<dy_v, y_v> per head), then one pass per source
 * through the transpose: the sum of weighted output gradients, and each
 * out-edge's score gradient from the same row of dy (so no pass gathers
 * the rows of x). Each output row is written by one thread in a fixed
 * order: results do not depend on the thread count.
 */
#include "kernels/attn.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"
#include "kernels/cpu/philox.h"

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
    for (gnn_vid_t v = 0; v < g->n_dst; v++) {
        gnn_eid_t n = c->indptr[v + 1] - c->indptr[v] + (self_loop ? 1 : 0);
        a->longest = n > a->longest ? n : a->longest;
        for (gnn_eid_t k = c->indptr[v]; k < c->indptr[v + 1]; k++)
            a->t_slot[next[c->indices[k]]++] = k + (self_loop ? v : 0);
    }
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

int gnn__attn_check(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const char *what)
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

/* The gathers below read rows of random nodes: each loop asks for the
 * rows of the entry PF entries ahead (in CSR or transposed order, across
 * row ends), so that several misses are in flight, not one. Prefetches
 * change no result. */
#define PF 16

static inline void prefetch_bytes(const void *p, int64_t bytes)
{
    for (int64_t b = 0; b < bytes; b += 64) __builtin_prefetch((const char *)p + b);
}

/* The source row (w floats) of CSR entry q, when q is an entry. */
static inline void prefetch_src(const gnn_csr_t *c, gnn_eid_t q, const float *x, int64_t w)
{
    if (q < c->nnz) prefetch_bytes(x + c->indices[q] * w, w * (int64_t)sizeof(float));
}

/* y[0, f) += w x[0, f), and the dot product of x and y over [0, f):
 * inlined with f a constant for the common head widths, so that the loop
 * is a few whole vector operations (on the 1M-node SBM, 8 x 8 heads: 9.7
 * against 10.3 s an epoch with the width left to run time). */
static inline __attribute__((always_inline)) void axpy_n(float *restrict y, float w,
                                                        const float *restrict x, int64_t f)
{
#pragma omp simd
    for (int64_t k = 0; k < f; k++) y[k] += w * x[k];
}

static inline void axpy(float *restrict y, float w, const float *restrict x, int64_t f)
{
    switch (f) {
    case 8: axpy_n(y, w, x, 8); break;
    case 16: axpy_n(y, w, x, 16); break;
    case 32: axpy_n(y, w, x, 32); break;
    default: axpy_n(y, w, x, f);
    }
}

static inline __attribute__((always_inline)) float dot_n(const float *restrict x,
                                                        const float *restrict y, int64_t f)
{
    float t = 0.0f;
#pragma omp simd reduction(+ : t)
    for (int64_t k = 0; k < f; k++) t += x[k] * y[k];
    return t;
}

static inline float dot(const float *restrict x, const float *restrict y, int64_t f)
{
    switch (f) {
    case 8: return dot_n(x, y, 8);
    case 16: return dot_n(x, y, 16);
    case 32: return dot_n(x, y, 32);
    default: return dot_n(x, y, f);
    }
}

/* Selections by masks rather than by branches taken at random (the
 * attention dropout's draws, LeakyReLU's sides): the same values as the
 * conditional expressions each names. */

/* keep ? v : 0 */
static inline float kept_if(int keep, float v)
{
    uint32_t vi;
    memcpy(&vi, &v, sizeof vi);
    vi &= 0u - (uint32_t)(keep != 0);
    memcpy(&v, &vi, sizeof v);
    return v;
}

/* flip ? -v : v */
static inline float sign_if(int flip, float v)
{
    uint32_t vi;
    memcpy(&vi, &v, sizeof vi);
    vi ^= (uint32_t)(flip != 0) << 31;
    memcpy(&v, &vi, sizeof v);
    return v;
}

/* z > 0 ? a : b (LeakyReLU's derivative: above(z, de, de * slope)) */
static inline float above(float z, float a, float b)
{
    const uint32_t m = 0u - (uint32_t)(z > 0.0f);
    uint32_t ai, bi;
    memcpy(&ai, &a, sizeof ai);
    memcpy(&bi, &b, sizeof bi);
    const uint32_t r = (ai & m) | (bi & ~m);
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* signbit(al) ? 0 : v (v unless weight al was dropped) */
static inline float kept(float al, float v)
{
    uint32_t ai, vi;
    memcpy(&ai, &al, sizeof ai);
    memcpy(&vi, &v, sizeof vi);
    const uint32_t r = vi & ((ai >> 31) - 1u); /* sign set: 0 */
    float f;
    memcpy(&f, &r, sizeof f);
    return f;
}

/* Slots per batch of keep scales (chunk_keep). */
#define KEEP_CHUNK 16

/* The scale of every head's weight of the m (at most KEEP_CHUNK) edges
 * src[i] -> v into ks[i H + h]: 1/(1-p) where kept, 0 where dropped. The
 * counters name an edge by its end points' global ids (the bits of
 * gnn_rng_keep for each head); the Philox blocks of all m edges are drawn
 * in one batch (gnn__philox_blocks). */
static void chunk_keep(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, float scale,
                       const gnn_vid_t *src, gnn_vid_t v, int64_t m, float *ks)
{
    int64_t H = o->heads;
    if (!(o->dropout > 0.0f)) {
        for (int64_t k = 0; k < m * H; k++) ks[k] = 1.0f;
        return;
    }
    uint64_t blocks[KEEP_CHUNK * (GNN_ATTN_MAX_HEADS / 4 + 2)], j0[KEEP_CHUNK];
    uint32_t words[4 * KEEP_CHUNK * (GNN_ATTN_MAX_HEADS / 4 + 2)];
    int64_t base[KEEP_CHUNK], nb = 0;
    uint64_t n = o->ids ? (uint64_t)o->n_ids : (uint64_t)a->g->n_src;
    uint64_t gv = o->ids ? (uint64_t)o->ids[v] : (uint64_t)v;
    for (int64_t i = 0; i < m; i++) {
        uint64_t gu = o->ids ? (uint64_t)o->ids[src[i]] : (uint64_t)src[i];
        j0[i] = o->offset + (gv * n + gu) * (uint64_t)H;
        base[i] = nb;
        for (uint64_t b = j0[i] >> 2; b <= (j0[i] + (uint64_t)H - 1) >> 2; b++) blocks[nb++] = b;
    }
    gnn__philox_blocks(o->seed, blocks, nb, words);
    for (int64_t i = 0; i < m; i++) {
        const uint32_t *w = words + 4 * base[i];
        uint64_t b0 = j0[i] >> 2;
        for (int64_t h = 0; h < H; h++) {
            uint64_t j = j0[i] + (uint64_t)h;
            uint32_t r = w[4 * ((j >> 2) - b0) + (j & 3u)];
            ks[i * H + h] = kept_if(gnn_rng_u01(r) >= o->dropout, scale);
        }
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
    int rc = gnn__attn_check(a, o, "GAT scores");
    if (rc < 0) return rc;
    if (!el || !er || !s) return GNN_FAIL(GNN_EINVAL, "GAT scores: NULL array");
    int64_t H = o->heads;
    float slope = o->negative_slope;
    /* LeakyReLU as the larger of z and slope z where 0 < slope <= 1 (the
     * same value, infinities included, and a vector max without a branch);
     * a select otherwise (slope 0 would make inf * 0 a NaN). */
    const int as_max = slope > 0.0f && slope <= 1.0f;
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t v = 0; v < a->g->n_dst; v++) {
        row_t r = row_of(a, v);
        float ev[GNN_ATTN_MAX_HEADS];
        for (int64_t h = 0; h < H; h++) ev[h] = er[v * H + h];
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            prefetch_src(a->g->csr, r.lo + i + PF, el, H);
            float *se = s + (r.first + i) * H;
            const float *eu = el + u * H;
            if (out) {
                for (int64_t h = 0; h < H; h++) se[h] = 0.0f;
            } else if (as_max) {
                for (int64_t h = 0; h < H; h++) {
                    float z = eu[h] + ev[h], zs = z * slope;
                    se[h] = z > zs ? z : zs;
                }
            } else {
                for (int64_t h = 0; h < H; h++) {
                    float z = eu[h] + ev[h];
                    se[h] = z > 0.0f ? z : z * slope;
                }
            }
        }
    }
    return 0;
}

int gnn_attn_gat_score_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o,
                                const float *el, const float *er, const float *ds, float *del,
                                float *der)
{
    int rc = gnn__attn_check(a, o, "GAT scores backward");
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
        float d[GNN_ATTN_MAX_HEADS], ev[GNN_ATTN_MAX_HEADS];
        for (int64_t h = 0; h < H; h++) d[h] = 0.0f, ev[h] = er[v * H + h];
        for (gnn_eid_t i = 0; i < r.n; i++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i, &out);
            prefetch_src(g->csr, r.lo + i + PF, el, H);
            if (out) continue;
            const float *de = ds + (r.first + i) * H, *eu = el + u * H;
            for (int64_t h = 0; h < H; h++) {
                float z = eu[h] + ev[h];
                d[h] += above(z, de[h], de[h] * slope);
            }
        }
        for (int64_t h = 0; h < H; h++) der[v * H + h] = d[h];
    }
    /* Sources: their transposed row, then their own self loop. */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t u = 0; u < g->n_src; u++) {
        float d[GNN_ATTN_MAX_HEADS], eu[GNN_ATTN_MAX_HEADS];
        for (int64_t h = 0; h < H; h++) d[h] = 0.0f, eu[h] = el[u * H + h];
        for (gnn_eid_t t = g->t.indptr[u]; t < g->t.indptr[u + 1]; t++) {
            gnn_vid_t v = g->t.indices[t];
            if (t + PF < g->t.nnz) {
                __builtin_prefetch(er + g->t.indices[t + PF] * H);
                __builtin_prefetch(ds + a->t_slot[t + PF] * H);
            }
            if (a->self_loop && u == v) continue;
            const float *de = ds + a->t_slot[t] * H, *ev = er + v * H;
            for (int64_t h = 0; h < H; h++) {
                float z = eu[h] + ev[h];
                d[h] += above(z, de[h], de[h] * slope);
            }
        }
        if (a->self_loop && u < g->n_dst) {
            const float *de = ds + (g->csr->indptr[u + 1] + u) * H, *ev = er + u * H;
            for (int64_t h = 0; h < H; h++) {
                float z = eu[h] + ev[h];
                d[h] += above(z, de[h], de[h] * slope);
            }
        }
        for (int64_t h = 0; h < H; h++) del[u * H + h] = d[h];
    }
    return 0;
}

/* Slots whose weights a forward task forms before it sums their rows
 * (attn_weights, then attn_sum): the summing loop, a few loads and
 * multiply-adds a slot, then runs over several rows, and the processor
 * keeps the misses of many slots in flight. */
#define BLOCK_SLOTS 1024

/* Row v's softmax in place in its slots of s, then its attention dropout:
 * the signs of dropped weights set in s, and into w (the row's slots x H)
 * the weights its rows are summed with (softmax x keep scale). */
static void attn_weights(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, float scale,
                         gnn_vid_t v, float *s, float *w)
{
    int64_t H = o->heads;
    row_t r = row_of(a, v);
    float *sr = s + r.first * H;
    /* The softmax of every head at once, slot by slot (the heads of a slot
     * are adjacent): the same sums in the same order per head. */
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
    /* The slots in chunks: the keep scales of a chunk's edges drawn
     * together. Without branches on the drop (taken at random, they would
     * be mispredicted half the time): a dropped weight becomes 0. */
    float ks[KEEP_CHUNK * GNN_ATTN_MAX_HEADS];
    gnn_vid_t src[KEEP_CHUNK];
    gnn_eid_t at[KEEP_CHUNK];
    for (gnn_eid_t i0 = 0; i0 < r.n;) {
        int64_t n = 0;
        for (; i0 < r.n && n < KEEP_CHUNK; i0++) {
            int out;
            gnn_vid_t u = slot_src(a, &r, v, i0, &out);
            if (out) continue;
            src[n] = u;
            at[n++] = i0;
        }
        chunk_keep(a, o, scale, src, v, n, ks);
        for (int64_t c = 0; c < n; c++) {
            float *sa = sr + at[c] * H, *wa = w + at[c] * H;
            const float *kc = ks + c * H;
            for (int64_t h = 0; h < H; h++) {
                float a_ = sa[h];
                sa[h] = sign_if(kc[h] == 0.0f, a_); /* dropped: sign set */
                wa[h] = a_ * kc[h];
            }
        }
    }
}

/* y_v = sum over row v's slots (a left-out stored self loop skipped) of
 * its weights (w: the row's slots x H) times its source's row of x, head
 * by head. */
static void attn_sum(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, gnn_vid_t v,
                     const float *w, const float *x, float *y)
{
    int64_t H = o->heads, F = o->f, W = H * F;
    row_t r = row_of(a, v);
    float *yv = y + v * W;
    memset(yv, 0, (size_t)W * sizeof *yv);
    for (gnn_eid_t i = 0; i < r.n; i++) {
        int out;
        gnn_vid_t u = slot_src(a, &r, v, i, &out);
        prefetch_src(a->g->csr, r.lo + i + PF, x, W);
        if (out) continue;
        const float *xu = x + u * W, *wi = w + i * H;
        for (int64_t h = 0; h < H; h++) axpy(yv + h * F, wi[h], xu + h * F, F);
    }
}

int gnn_attn_forward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                     float *s, float *y)
{
    int rc = gnn__attn_check(a, o, "attention");
    if (rc < 0) return rc;
    if (!x || !s || !y) return GNN_FAIL(GNN_EINVAL, "attention: NULL array");
    int64_t H = o->heads;
    float scale = dropout_scale(o);
    gnn_vid_t nd = a->g->n_dst, chunks = (nd + CHUNK - 1) / CHUNK;
    gnn_eid_t cap = a->longest > BLOCK_SLOTS ? a->longest : BLOCK_SLOTS;
    int failed = 0;
#pragma omp parallel
    {
        float *w = gnn_malloc_array((size_t)(cap * H), sizeof *w);
        if (!w) {
#pragma omp atomic write
            failed = 1;
        }
        /* CHUNK rows a task, in blocks of at most cap slots (one row at
         * least): the block's weights, then its sums. */
#pragma omp for schedule(dynamic, 1)
        for (gnn_vid_t ch = 0; ch < chunks; ch++) {
            if (!w) continue;
            gnn_vid_t end = (ch + 1) * CHUNK < nd ? (ch + 1) * CHUNK : nd;
            for (gnn_vid_t v0 = ch * CHUNK, v1; v0 < end; v0 = v1) {
                gnn_eid_t base = row_of(a, v0).first, used = 0;
                for (v1 = v0; v1 < end; v1++) {
                    gnn_eid_t n = row_of(a, v1).n;
                    if (used && used + n > cap) break;
                    attn_weights(a, o, scale, v1, s, w + used * H);
                    used += n;
                }
                for (gnn_vid_t v = v0; v < v1; v++)
                    attn_sum(a, o, v, w + (row_of(a, v).first - base) * H, x, y);
            }
        }
        gnn_free(w);
    }
    return failed ? GNN_FAIL(GNN_ENOMEM, "attention: weights of %" PRId64 " slots",
                             (int64_t)cap)
                  : 0;
}

int gnn_attn_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                      const float *alpha, const float *y, const float *dy, float *dx, float *ds)
{
    int rc = gnn__attn_check(a, o, "attention backward");
    if (rc < 0) return rc;
    if (!x || !alpha || !y || !dy || !dx || !ds)
        return GNN_FAIL(GNN_EINVAL, "attention backward: NULL array");
    const gnn_spmm_graph_t *g = a->g;
    int64_t H = o->heads, F = o->f, W = H * F;
    float scale = dropout_scale(o);
    /* The softmax's backward needs, per destination and head, the sum over
     * the row of alpha_i d_i (d_i: the gradient of the dropped weight i,
     * k_i <dy_v, x_i> with k_i its keep scale); as y_v = sum_i alpha_i k_i
     * x_i, that sum is <dy_v, y_v>: one dot product a row, here before dx
     * (which may be y) is written. */
    float *c = gnn_malloc_array((size_t)(g->n_dst * H) + 1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "attention backward: %" PRId64 " row sums",
                            (int64_t)g->n_dst * H);
#pragma omp parallel for schedule(static)
    for (gnn_vid_t v = 0; v < g->n_dst; v++)
        for (int64_t h = 0; h < H; h++)
            c[v * H + h] = dot(dy + v * W + h * F, y + v * W + h * F, F);
    /* Then every edge once, per source through the transpose (then its own
     * self loop): dx_u gathers alpha-weighted rows of dy, and the edge's
     * ds = alpha (d - c) needs only x_u, the row of this source. ds may be
     * alpha: each slot is read, then written, by the one task that owns
     * its edge. */
#pragma omp parallel for schedule(dynamic, CHUNK)
    for (gnn_vid_t u = 0; u < g->n_src; u++) {
        float *du = dx + u * W;
        const float *xu = x + u * W;
        memset(du, 0, (size_t)W * sizeof *du);
        for (gnn_eid_t t = g->t.indptr[u]; t <= g->t.indptr[u + 1]; t++) {
            gnn_vid_t v;
            gnn_eid_t e;
            if (t + PF / 2 < g->t.nnz) {
                gnn_vid_t ahead = g->t.indices[t + PF / 2];
                prefetch_bytes(dy + ahead * W, W * (int64_t)sizeof(float));
                __builtin_prefetch(c + ahead * H);
                __builtin_prefetch(alpha + a->t_slot[t + PF / 2] * H);
            }
            if (t < g->t.indptr[u + 1]) {
                v = g->t.indices[t];
                e = a->t_slot[t];
                if (a->self_loop && u == v) { /* a stored self loop, left out */
                    for (int64_t h = 0; h < H; h++) ds[e * H + h] = 0.0f;
                    continue;
                }
            } else { /* after the stored edges: the added self loop */
                if (!a->self_loop || u >= g->n_dst) break;
                v = u;
                e = g->csr->indptr[u + 1] + u;
            }
            const float *dyv = dy + v * W, *cv = c + v * H;
            for (int64_t h = 0; h < H; h++) {
                float al = alpha[e * H + h];
                axpy(du + h * F, kept(al, al * scale), dyv + h * F, F); /* dropped: 0 */
                float d = kept(al, scale) * dot(dyv + h * F, xu + h * F, F);
                ds[e * H + h] = fabsf(al) * (d - cv[h]);
            }
        }
    }
    gnn_free(c);
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
