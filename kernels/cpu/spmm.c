/*
 * CPU SpMM: forward and backward of the sum, mean, gcn and max aggregators
 * (semantics in kernels/spmm.h).
 *
 * Work split. Each OpenMP thread takes one contiguous range of rows chosen
 * so that every thread gets about (nnz + rows) / T of the cost "entries plus
 * rows": the split points are found by binary search over indptr at every
 * call (O(T log n), negligible), so they always match the current thread
 * count. Splits fall on row boundaries: a row is summed by one thread in a
 * fixed order, which makes results bitwise identical for any thread count.
 * A single hub row longer than nnz/T is not split (the price is imbalance on
 * that one row); on the power-law graphs of interest the largest row is far
 * below nnz/T for the thread counts of one node.
 *
 * Inner loops run over the feature dimension, contiguous in x and y, under
 * `omp simd` with restrict pointers, so they vectorise for any width f and
 * need no remainder handling by hand. Sum-like aggregators take four
 * neighbours per pass over the output row, so the output row (which stays
 * in L1 for f <= 1024) is loaded and stored once per four gathered rows.
 * The gathered rows are software-prefetched a few entries ahead.
 *
 * Backward passes are gathers over the transposed CSR cached in the
 * prepared graph: dx[u] collects dy[v] of the out-neighbours v of u, so no
 * two threads write the same row and no atomics are needed. For max, row u
 * of the transpose tests argmax[v][k] == u; repeated edges u -> v are
 * adjacent in the transpose (its rows are sorted) and are taken once, since
 * the forward routed dy[v][k] to u once.
 */
#include "kernels/spmm.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <math.h>
#include <omp.h>
#include <string.h>

static const char *const aggr_names[GNN_AGGR_COUNT_] = {"sum", "mean", "gcn", "max"};

const char *gnn_aggr_name(gnn_aggr_t aggr)
{
    return (unsigned)aggr < GNN_AGGR_COUNT_ ? aggr_names[aggr] : "?";
}

int gnn_aggr_from_name(const char *name, gnn_aggr_t *aggr)
{
    for (int i = 0; name && i < GNN_AGGR_COUNT_; i++)
        if (!strcmp(name, aggr_names[i])) {
            *aggr = (gnn_aggr_t)i;
            return 0;
        }
    return GNN_FAIL(GNN_EINVAL, "unknown aggregator \"%s\" (expected sum, mean, gcn or max)",
                    name ? name : "(null)");
}

/* ---- Prepared graph ------------------------------------------------------ */

void gnn_spmm_graph_free(gnn_spmm_graph_t *g)
{
    if (!g) return;
    gnn_csr_free(&g->t);
    gnn_free(g->inv_deg);
    gnn_free(g->gcn_dst);
    gnn_free(g->gcn_src);
    gnn_free(g);
}

int gnn_spmm_graph_create(const gnn_csr_t *csr, gnn_spmm_graph_t **out)
{
    int rc = 0;
    gnn_spmm_graph_t *g = NULL;
    GNN_CHECK(out, GNN_EINVAL, "spmm graph: NULL output");
    *out = NULL;
    GNN_CHECK(csr, GNN_EINVAL, "spmm graph: NULL CSR");
    GNN_CHECK(csr->n_rows >= 0 && csr->n_cols >= 0 && csr->nnz >= 0, GNN_EINVAL,
              "spmm graph: negative shape");
    GNN_CHECK(csr->indptr && csr->indptr[0] == 0 && csr->indptr[csr->n_rows] == csr->nnz &&
                  (csr->nnz == 0 || csr->indices),
              GNN_EINVAL, "spmm graph: indptr does not match nnz %" GNN_PRIeid, csr->nnz);

    g = gnn_calloc(1, sizeof *g);
    GNN_CHECK(g, GNN_ENOMEM, "spmm graph");
    g->csr = csr;
    g->n_dst = csr->n_rows;
    g->n_src = csr->n_cols;
    g->nnz = csr->nnz;
    GNN_TRY(gnn_csr_transpose(csr, &g->t));
    /* +1: never a zero-byte request, which an allocator may answer with NULL. */
    g->inv_deg = gnn_malloc_array((size_t)g->n_dst + 1, sizeof(float));
    g->gcn_dst = gnn_malloc_array((size_t)g->n_dst + 1, sizeof(float));
    g->gcn_src = gnn_malloc_array((size_t)g->n_src + 1, sizeof(float));
    GNN_CHECK(g->inv_deg && g->gcn_dst && g->gcn_src, GNN_ENOMEM, "spmm graph scale factors");

    const gnn_eid_t *ip = csr->indptr, *tp = g->t.indptr;
#pragma omp parallel for schedule(static)
    for (gnn_vid_t v = 0; v < g->n_dst; v++) {
        gnn_eid_t d = ip[v + 1] - ip[v];
        g->inv_deg[v] = d ? (float)(1.0 / (double)d) : 0.0f;
        g->gcn_dst[v] = (float)(1.0 / sqrt((double)d + 1.0));
    }
#pragma omp parallel for schedule(static)
    for (gnn_vid_t u = 0; u < g->n_src; u++)
        g->gcn_src[u] = (float)(1.0 / sqrt((double)(tp[u + 1] - tp[u]) + 1.0));

    *out = g;
    return 0;
fail:
    gnn_spmm_graph_free(g);
    return rc;
}

/* ---- Work split ---------------------------------------------------------- */

/* First row r with indptr[r] + r >= target (cost = entries plus rows). */
static gnn_vid_t split_row(const gnn_eid_t *indptr, gnn_vid_t n, gnn_eid_t target)
{
    gnn_vid_t lo = 0, hi = n;
    while (lo < hi) {
        gnn_vid_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] + mid < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Rows [*r0, *r1) of thread t out of nt. */
static void thread_rows(const gnn_eid_t *indptr, gnn_vid_t n, int t, int nt, gnn_vid_t *r0,
                        gnn_vid_t *r1)
{
    /* Target t * cost / nt without overflowing the product. */
    gnn_eid_t cost = indptr[n] + n;
    gnn_eid_t q = cost / nt, r = cost % nt;
    gnn_eid_t a = q * t + (r * t) / nt, b = q * (t + 1) + (r * (t + 1)) / nt;
    *r0 = t == 0 ? 0 : split_row(indptr, n, a);
    *r1 = t == nt - 1 ? n : split_row(indptr, n, b);
}

/* ---- Sum-like kernel ----------------------------------------------------- */

/*
 * out[r] = post[r] * (sum_j ew[j] * cs[idx[j]] * in[idx[j]] + self[r] * in[r])
 * over rows r of (indptr, idx); ew, cs, post NULL mean 1; the self term is
 * taken for r < n_self when self is not NULL.
 */
typedef struct {
    const gnn_eid_t *indptr;
    const gnn_vid_t *idx;
    gnn_vid_t n_rows;
    const float *ew, *cs, *post, *self;
    gnn_vid_t n_self;
} gather_t;

/*
 * Software prefetch of the input rows of entries [from, to) (clipped to
 * nnz), issued PREFETCH_AHEAD entries before they are gathered: the
 * gathers are random, so hardware prefetchers cannot guess them. The window
 * runs across row ends, which keeps short rows fed too.
 */
#define PREFETCH_AHEAD 8

static inline void prefetch_rows(const float *in, const gnn_vid_t *idx, int64_t f, gnn_eid_t from,
                                 gnn_eid_t to, gnn_eid_t nnz)
{
    if (to > nnz) to = nnz;
    for (gnn_eid_t j = from; j < to; j++) {
        const char *row = (const char *)(in + idx[j] * f);
        for (int64_t b = 0; b < f * (int64_t)sizeof(float); b += 64) __builtin_prefetch(row + b);
    }
}

static void gather_row(const gather_t *p, gnn_vid_t r, int64_t f, const float *restrict in,
                       float *restrict o)
{
    const gnn_vid_t *idx = p->idx;
    const float *ew = p->ew, *cs = p->cs;
    gnn_eid_t j = p->indptr[r], end = p->indptr[r + 1], nnz = p->indptr[p->n_rows];

    if (p->self && r < p->n_self) {
        const float c = p->self[r];
        const float *restrict xr = in + r * f;
#pragma omp simd
        for (int64_t k = 0; k < f; k++) o[k] = c * xr[k];
    } else {
#pragma omp simd
        for (int64_t k = 0; k < f; k++) o[k] = 0.0f;
    }
#define COEF(jj) ((ew ? ew[jj] : 1.0f) * (cs ? cs[idx[jj]] : 1.0f))
    for (; j + 4 <= end; j += 4) {
        prefetch_rows(in, idx, f, j + PREFETCH_AHEAD, j + PREFETCH_AHEAD + 4, nnz);
        const float c0 = COEF(j), c1 = COEF(j + 1), c2 = COEF(j + 2), c3 = COEF(j + 3);
        const float *restrict x0 = in + idx[j] * f;
        const float *restrict x1 = in + idx[j + 1] * f;
        const float *restrict x2 = in + idx[j + 2] * f;
        const float *restrict x3 = in + idx[j + 3] * f;
#pragma omp simd
        for (int64_t k = 0; k < f; k++) o[k] += (c0 * x0[k] + c1 * x1[k]) + (c2 * x2[k] + c3 * x3[k]);
    }
    for (; j < end; j++) {
        prefetch_rows(in, idx, f, j + PREFETCH_AHEAD, j + PREFETCH_AHEAD + 1, nnz);
        const float c = COEF(j);
        const float *restrict xr = in + idx[j] * f;
#pragma omp simd
        for (int64_t k = 0; k < f; k++) o[k] += c * xr[k];
    }
#undef COEF
    if (p->post) {
        const float c = p->post[r];
#pragma omp simd
        for (int64_t k = 0; k < f; k++) o[k] *= c;
    }
}

static void gather(const gather_t *p, int64_t f, const float *in, float *out)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(p->indptr, p->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        for (gnn_vid_t r = r0; r < r1; r++) gather_row(p, r, f, in, out + r * f);
    }
}

/* ---- Max ----------------------------------------------------------------- */

static void max_forward(const gnn_csr_t *a, int64_t f, const float *x, float *y, int32_t *argmax)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(a->indptr, a->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        for (gnn_vid_t v = r0; v < r1; v++) {
            float *restrict yr = y + v * f;
            int32_t *restrict ar = argmax + v * f;
            gnn_eid_t j = a->indptr[v], end = a->indptr[v + 1];
            if (j == end) {
#pragma omp simd
                for (int64_t k = 0; k < f; k++) {
                    yr[k] = 0.0f;
                    ar[k] = -1;
                }
                continue;
            }
            int32_t u = (int32_t)a->indices[j];
            const float *restrict xr = x + (int64_t)u * f;
#pragma omp simd
            for (int64_t k = 0; k < f; k++) {
                yr[k] = xr[k];
                ar[k] = u;
            }
            for (j++; j < end; j++) {
                prefetch_rows(x, a->indices, f, j + PREFETCH_AHEAD, j + PREFETCH_AHEAD + 1, a->nnz);
                u = (int32_t)a->indices[j];
                xr = x + (int64_t)u * f;
#pragma omp simd
                for (int64_t k = 0; k < f; k++) {
                    /* Loads first, the index chosen by a bit mask: gcc 12
                     * vectorises this form (not `gt ? u : av`). */
                    const float xv = xr[k], yv = yr[k];
                    const int32_t av = ar[k], m = -(int32_t)(xv > yv);
                    yr[k] = xv > yv ? xv : yv;
                    ar[k] = (u & m) | (av & ~m);
                }
            }
        }
    }
}

static void max_backward(const gnn_csr_t *t, int64_t f, const float *dy, const int32_t *argmax,
                         float *dx)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(t->indptr, t->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        for (gnn_vid_t u = r0; u < r1; u++) {
            float *restrict o = dx + u * f;
            const int32_t u32 = (int32_t)u;
            gnn_vid_t prev = -1;
#pragma omp simd
            for (int64_t k = 0; k < f; k++) o[k] = 0.0f;
            for (gnn_eid_t j = t->indptr[u]; j < t->indptr[u + 1]; j++) {
                const gnn_vid_t v = t->indices[j];
                prefetch_rows(dy, t->indices, f, j + PREFETCH_AHEAD, j + PREFETCH_AHEAD + 1, t->nnz);
                prefetch_rows((const float *)argmax, t->indices, f, j + PREFETCH_AHEAD,
                              j + PREFETCH_AHEAD + 1, t->nnz);
                if (v == prev) continue; /* repeated edge: routed once */
                prev = v;
                const int32_t *restrict ar = argmax + v * f;
                const float *restrict g = dy + v * f;
#pragma omp simd
                for (int64_t k = 0; k < f; k++) {
                    const float gv = g[k];
                    const int32_t av = ar[k];
                    o[k] += av == u32 ? gv : 0.0f;
                }
            }
        }
    }
}

/* ---- Entry points -------------------------------------------------------- */

static int check_args(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int64_t f, const void *in,
                      const void *out, const int32_t *argmax, const char *what)
{
    if (!g || !in || !out)
        return GNN_FAIL(GNN_EINVAL, "spmm %s: NULL argument", what);
    if ((unsigned)aggr >= GNN_AGGR_COUNT_)
        return GNN_FAIL(GNN_EINVAL, "spmm %s: unknown aggregator %d", what, (int)aggr);
    gnn_vid_t n = g->n_dst > g->n_src ? g->n_dst : g->n_src;
    if (f < 1 || (n > 0 && f > INT64_MAX / (int64_t)sizeof(float) / n))
        return GNN_FAIL(GNN_EINVAL, "spmm %s: bad feature width %" PRId64, what, f);
    if (aggr == GNN_AGGR_GCN && g->n_dst > g->n_src)
        return GNN_FAIL(GNN_EINVAL,
                        "spmm %s: gcn needs n_dst <= n_src (got %" GNN_PRIvid " > %" GNN_PRIvid ")",
                        what, g->n_dst, g->n_src);
    if (aggr == GNN_AGGR_MAX) {
        if (!argmax) return GNN_FAIL(GNN_EINVAL, "spmm %s: max needs an argmax array", what);
        if (g->n_src > INT32_MAX)
            return GNN_FAIL(GNN_ERANGE, "spmm %s: max needs n_src <= 2^31-1 (got %" GNN_PRIvid ")",
                            what, g->n_src);
    }
    return 0;
}

int gnn_spmm_forward(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int64_t f, const float *x,
                     float *y, int32_t *argmax)
{
    int rc = check_args(g, aggr, f, x, y, argmax, "forward");
    if (rc < 0) return rc;
    const gnn_csr_t *a = g->csr;
    gather_t p = {a->indptr, a->indices, a->n_rows, NULL, NULL, NULL, NULL, 0};
    switch (aggr) {
    case GNN_AGGR_SUM:
        p.ew = a->weights;
        break;
    case GNN_AGGR_MEAN:
        p.ew = a->weights;
        p.post = g->inv_deg;
        break;
    case GNN_AGGR_GCN:
        p.cs = g->gcn_src;
        p.post = g->gcn_dst;
        p.self = g->gcn_src;
        p.n_self = g->n_dst;
        break;
    default:
        max_forward(a, f, x, y, argmax);
        return 0;
    }
    gather(&p, f, x, y);
    return 0;
}

int gnn_spmm_backward(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int64_t f, const float *dy,
                      const int32_t *argmax, float *dx)
{
    int rc = check_args(g, aggr, f, dy, dx, argmax, "backward");
    if (rc < 0) return rc;
    const gnn_csr_t *t = &g->t;
    gather_t p = {t->indptr, t->indices, t->n_rows, NULL, NULL, NULL, NULL, 0};
    switch (aggr) {
    case GNN_AGGR_SUM:
        p.ew = t->weights;
        break;
    case GNN_AGGR_MEAN:
        p.ew = t->weights;
        p.cs = g->inv_deg;
        break;
    case GNN_AGGR_GCN:
        p.cs = g->gcn_dst;
        p.post = g->gcn_src;
        p.self = g->gcn_dst;
        p.n_self = g->n_dst;
        break;
    default:
        max_backward(t, f, dy, argmax, dx);
        return 0;
    }
    gather(&p, f, dy, dx);
    return 0;
}
