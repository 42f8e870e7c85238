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
 * below nnz/T for the thread counts of one node (R-MAT with 2^20 nodes and
 * 16 M entries: largest row 39 K entries).
 *
 * Row kernel. A row's entries are taken in segments of SEG_ENTRIES; for
 * each segment every block of BLOCK_COLS feature columns (SUM_BLOCK_COLS,
 * then one of BLOCK_COLS, for the sum-like kernel) passes over the
 * segment's input rows with the running result of that block in a local
 * array that the compiler keeps in vector registers (the output row is read
 * and written once per segment, not once per entry); the segment's input
 * rows stay in L1 between blocks. The block loop has a constant trip count
 * and vectorises for any ISA; the last block of a row whose width is not a
 * multiple of BLOCK_COLS runs the same code with a variable count, so every
 * width f >= 1 is handled. Each element is accumulated in entry order
 * (sum-like: init, then += c * x[u] per entry, then the post scale), so the
 * blocking changes nothing in the result. No fused multiply-add is formed
 * (ISO C mode: -ffp-contract=off), so results are also the same on every
 * code path below.
 *
 * Code paths. The range functions are compiled twice (target_clones): for
 * AVX2 and for the baseline x86-64 ISA, picked at load time by the CPU, so
 * the binary stays portable (no -march).
 *
 * Prefetch. The gathers are random, so hardware prefetchers cannot guess
 * them: while block k0 of entry j is processed, block k0 of the input row of
 * entry j + ahead(f) is prefetched. That spreads the prefetches evenly over
 * the work and keeps about PREFETCH_BYTES of input rows in flight per
 * thread, whatever f. The window runs across row ends, which keeps short
 * rows fed too. Per-node scales (mean backward, gcn) are prefetched twice
 * as far ahead, since their address needs the index first.
 *
 * Backward passes are gathers over the transposed CSR cached in the
 * prepared graph: dx[u] collects dy[v] of the out-neighbours v of u, so no
 * two threads write the same row and no atomics are needed. For max, row u
 * of the transpose tests argmax[v][k] == u; repeated edges u -> v are
 * adjacent in the transpose (its rows are sorted) and are taken once, since
 * the forward routed dy[v][k] to u once.
 *
 * Memory. The kernels are bound by the random gathers; with 4 KiB pages
 * almost every gathered row also misses the TLB. Callers with large feature
 * matrices should place them on transparent huge pages (bench/spmm does, with
 * madvise; see docs/BENCHMARKS.md for the difference it makes).
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
    if (!g->t_shared) gnn_csr_free(&g->t);
    gnn_free(g->inv_deg);
    gnn_free(g->gcn_dst);
    gnn_free(g->gcn_src);
    gnn_free(g);
}

/* Binary search for u in the sorted row v of a. */
static int row_has(const gnn_csr_t *a, gnn_vid_t v, gnn_vid_t u)
{
    gnn_eid_t lo = a->indptr[v], hi = a->indptr[v + 1];
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (a->indices[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < a->indptr[v + 1] && a->indices[lo] == u;
}

/* True when a equals its transpose: square, unweighted, rows sorted and
 * deduplicated (so the transpose's rows, sorted by construction, match
 * entry for entry), and u in row v iff v in row u, which the flags promise
 * and this checks. */
static int is_own_transpose(const gnn_csr_t *a)
{
    const unsigned need = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC;
    if (a->weights || a->n_rows != a->n_cols || (a->flags & need) != need) return 0;
    int ok = 1;
#pragma omp parallel for schedule(dynamic, 1024) reduction(&& : ok)
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (gnn_eid_t j = a->indptr[v]; ok && j < a->indptr[v + 1]; j++) {
            gnn_vid_t u = a->indices[j];
            ok = u >= 0 && u < a->n_rows && row_has(a, u, v);
        }
    return ok;
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
    if (is_own_transpose(csr)) {
        g->t = *csr;
        g->t_shared = 1;
    } else {
        GNN_TRY(gnn_csr_transpose(csr, &g->t));
    }
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
 * Prefetch distance in entries: PREFETCH_BYTES of input rows ahead, within
 * [2, 64]. On a quiet 2-core machine 16 KiB beat 8 KiB by 1.1-1.7x at
 * F = 64..256 (uniform sum forward, F = 256: 852 -> 617 ms).
 */
#define PREFETCH_BYTES 16384
/* Feature columns one pass holds in registers, and entries per segment: a
 * segment's input rows stay in L1 while every column block passes over it. */
#define BLOCK_COLS 16
/* The sum-like kernel's blocks: twice as wide (its running sums alone in
 * registers), so that a row of 32 features takes one pass over its
 * entries with four independent chains of additions, not two passes of
 * two (each addition waits for the last one of its chain). */
#define SUM_BLOCK_COLS 32
#define SEG_ENTRIES 16

/* The range functions: one AVX2 and one baseline clone, chosen at load. */
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

static inline gnn_eid_t ahead(int64_t f)
{
    int64_t a = PREFETCH_BYTES / (4 * f);
    return a < 2 ? 2 : a > 64 ? 64 : a;
}

/* The per-node scale cs[idx[j]] of entry j, gathered later. */
static inline void prefetch_scale(const float *cs, const gnn_vid_t *idx, gnn_eid_t j, gnn_eid_t nnz)
{
    if (j < nnz) __builtin_prefetch(cs + idx[j]);
}

/* Columns [k0, k0 + w) of the input row of entry j (w <= SUM_BLOCK_COLS: at
 * most two cache lines), when j < nnz. */
static inline void prefetch_block(const void *in, size_t elem, const gnn_vid_t *idx, gnn_eid_t j,
                                  gnn_eid_t nnz, int64_t f, int64_t k0, int64_t w)
{
    if (j >= nnz) return;
    const char *p = (const char *)in + (size_t)(idx[j] * f + k0) * elem;
    __builtin_prefetch(p);
    __builtin_prefetch(p + (size_t)(w - 1) * elem);
}

/*
 * Sum-like kernel over columns [k0, k0 + w) of entries [s, e) of row r,
 * accumulating in a local array (registers when w is the constant
 * BLOCK_COLS): first != 0 starts from the self term (or 0), otherwise from
 * o; last != 0 applies post. Each entry adds c * in[u] to the running sum in
 * entry order, so the result depends on the row alone, not on the blocking
 * or the thread count.
 */
static inline __attribute__((always_inline)) void sum_cols(const gather_t *p, gnn_vid_t r,
                                                           gnn_eid_t s, gnn_eid_t e, int first,
                                                           int last, int64_t f, int64_t k0,
                                                           int64_t w, const float *in,
                                                           float *restrict o, gnn_eid_t pa,
                                                           gnn_eid_t nnz)
{
    const gnn_vid_t *idx = p->idx;
    const float *ew = p->ew, *cs = p->cs;
    float acc[SUM_BLOCK_COLS];
    if (!first) {
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] = o[k0 + k];
    } else if (p->self && r < p->n_self) {
        const float c = p->self[r];
        const float *restrict xr = in + r * f + k0;
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] = c * xr[k];
    } else {
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] = 0.0f;
    }
    for (gnn_eid_t j = s; j < e; j++) {
        prefetch_block(in, sizeof(float), idx, j + pa, nnz, f, k0, w);
        if (cs && k0 == 0) prefetch_scale(cs, idx, j + 2 * pa, nnz);
        const float c = (ew ? ew[j] : 1.0f) * (cs ? cs[idx[j]] : 1.0f);
        const float *restrict xr = in + idx[j] * f + k0;
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] += c * xr[k];
    }
    if (last && p->post) {
        const float c = p->post[r];
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] *= c;
    }
#pragma omp simd
    for (int64_t k = 0; k < w; k++) o[k0 + k] = acc[k];
}

CLONES static void gather_range(const gather_t *p, gnn_vid_t r0, gnn_vid_t r1, int64_t f,
                                const float *in, float *out)
{
    const gnn_eid_t pa = ahead(f), nnz = p->indptr[p->n_rows];
    for (gnn_vid_t r = r0; r < r1; r++) {
        float *o = out + r * f;
        const gnn_eid_t beg = p->indptr[r], end = p->indptr[r + 1];
        gnn_eid_t s = beg, e;
        do { /* once for an empty row */
            e = end - s > SEG_ENTRIES ? s + SEG_ENTRIES : end;
            int64_t k0 = 0;
            for (; k0 + SUM_BLOCK_COLS <= f; k0 += SUM_BLOCK_COLS)
                sum_cols(p, r, s, e, s == beg, e == end, f, k0, SUM_BLOCK_COLS, in, o, pa, nnz);
            if (k0 + BLOCK_COLS <= f) {
                sum_cols(p, r, s, e, s == beg, e == end, f, k0, BLOCK_COLS, in, o, pa, nnz);
                k0 += BLOCK_COLS;
            }
            if (k0 < f) sum_cols(p, r, s, e, s == beg, e == end, f, k0, f - k0, in, o, pa, nnz);
            s = e;
        } while (e < end);
    }
}

static void gather(const gather_t *p, int64_t f, const float *in, float *out)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(p->indptr, p->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        gather_range(p, r0, r1, f, in, out);
    }
}

/* ---- Max ----------------------------------------------------------------- */

/*
 * Max forward over the feature columns [k0, k0 + w) of entries [s, e) of
 * one row, the running maximum and arg-max held in local arrays (registers
 * when w is the constant BLOCK_COLS): first != 0 starts them from entry s,
 * otherwise from yr/ar. Strict > keeps the first entry on ties.
 */
static inline __attribute__((always_inline)) void max_cols(const gnn_vid_t *idx, gnn_eid_t s,
                                                           gnn_eid_t e, int first, int64_t f,
                                                           int64_t k0, int64_t w, const float *x,
                                                           float *restrict yr,
                                                           int32_t *restrict ar, gnn_eid_t pa,
                                                           gnn_eid_t nnz)
{
    float m[BLOCK_COLS];
    int32_t am[BLOCK_COLS];
    if (first) {
        const int32_t u = (int32_t)idx[s];
        const float *restrict xr = x + idx[s] * f + k0;
#pragma omp simd
        for (int64_t k = 0; k < w; k++) {
            m[k] = xr[k];
            am[k] = u;
        }
        s++;
    } else {
#pragma omp simd
        for (int64_t k = 0; k < w; k++) {
            m[k] = yr[k0 + k];
            am[k] = ar[k0 + k];
        }
    }
    if (first) prefetch_block(x, sizeof(float), idx, s - 1 + pa, nnz, f, k0, w);
    for (gnn_eid_t j = s; j < e; j++) {
        const int32_t u = (int32_t)idx[j];
        const float *restrict xr = x + idx[j] * f + k0;
        prefetch_block(x, sizeof(float), idx, j + pa, nnz, f, k0, w);
#pragma omp simd
        for (int64_t k = 0; k < w; k++) {
            /* The index chosen by a bit mask: gcc 12 vectorises this form
             * (not `gt ? u : am`). */
            const float xv = xr[k], mv = m[k];
            const int32_t msk = -(int32_t)(xv > mv);
            m[k] = xv > mv ? xv : mv;
            am[k] = (u & msk) | (am[k] & ~msk);
        }
    }
#pragma omp simd
    for (int64_t k = 0; k < w; k++) {
        yr[k0 + k] = m[k];
        ar[k0 + k] = am[k];
    }
}

CLONES static void max_forward_range(const gnn_csr_t *a, gnn_vid_t r0, gnn_vid_t r1, int64_t f,
                                     const float *x, float *y, int32_t *argmax)
{
    const gnn_vid_t *idx = a->indices;
    const gnn_eid_t pa = ahead(f);
    for (gnn_vid_t v = r0; v < r1; v++) {
        float *restrict yr = y + v * f;
        int32_t *restrict ar = argmax + v * f;
        const gnn_eid_t beg = a->indptr[v], end = a->indptr[v + 1];
        if (beg == end) {
#pragma omp simd
            for (int64_t k = 0; k < f; k++) {
                yr[k] = 0.0f;
                ar[k] = -1;
            }
            continue;
        }
        /* Segments of SEG_ENTRIES entries: their rows stay in L1 while every
         * column block passes over them. */
        for (gnn_eid_t s = beg; s < end; s += SEG_ENTRIES) {
            const gnn_eid_t e = s + SEG_ENTRIES < end ? s + SEG_ENTRIES : end;
            int64_t k0 = 0;
            for (; k0 + BLOCK_COLS <= f; k0 += BLOCK_COLS)
                max_cols(idx, s, e, s == beg, f, k0, BLOCK_COLS, x, yr, ar, pa, a->nnz);
            if (k0 < f) max_cols(idx, s, e, s == beg, f, k0, f - k0, x, yr, ar, pa, a->nnz);
        }
    }
}

static void max_forward(const gnn_csr_t *a, int64_t f, const float *x, float *y, int32_t *argmax)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(a->indptr, a->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        max_forward_range(a, r0, r1, f, x, y, argmax);
    }
}

/*
 * Max backward over columns [k0, k0 + w) of entries [s, e) of row u of the
 * transpose (beg: the row's first entry): adds dy[v][k] where
 * argmax[v][k] == u, a repeated v (adjacent, the row being sorted) once.
 */
static inline __attribute__((always_inline)) void max_back_cols(
    const gnn_vid_t *idx, gnn_eid_t beg, gnn_eid_t s, gnn_eid_t e, int32_t u, int64_t f, int64_t k0,
    int64_t w, const float *dy, const int32_t *argmax, float *restrict o, gnn_eid_t pa, gnn_eid_t nnz)
{
    float acc[BLOCK_COLS];
#pragma omp simd
    for (int64_t k = 0; k < w; k++) acc[k] = s == beg ? 0.0f : o[k0 + k];
    for (gnn_eid_t j = s; j < e; j++) {
        prefetch_block(dy, sizeof(float), idx, j + pa, nnz, f, k0, w);
        prefetch_block(argmax, sizeof(int32_t), idx, j + pa, nnz, f, k0, w);
        const gnn_vid_t v = idx[j];
        if (j > beg && idx[j - 1] == v) continue; /* repeated edge: routed once */
        const int32_t *restrict ar = argmax + v * f + k0;
        const float *restrict g = dy + v * f + k0;
#pragma omp simd
        for (int64_t k = 0; k < w; k++) {
            const float gv = g[k];
            const int32_t av = ar[k];
            acc[k] += av == u ? gv : 0.0f;
        }
    }
#pragma omp simd
    for (int64_t k = 0; k < w; k++) o[k0 + k] = acc[k];
}

CLONES static void max_backward_range(const gnn_csr_t *t, gnn_vid_t r0, gnn_vid_t r1, int64_t f,
                                      const float *dy, const int32_t *argmax, float *dx)
{
    const gnn_vid_t *idx = t->indices;
    const gnn_eid_t pa = ahead(f);
    for (gnn_vid_t u = r0; u < r1; u++) {
        float *o = dx + u * f;
        const gnn_eid_t beg = t->indptr[u], end = t->indptr[u + 1];
        gnn_eid_t s = beg, e;
        do { /* once for an empty row */
            e = end - s > SEG_ENTRIES ? s + SEG_ENTRIES : end;
            int64_t k0 = 0;
            for (; k0 + BLOCK_COLS <= f; k0 += BLOCK_COLS)
                max_back_cols(idx, beg, s, e, (int32_t)u, f, k0, BLOCK_COLS, dy, argmax, o, pa,
                              t->nnz);
            if (k0 < f)
                max_back_cols(idx, beg, s, e, (int32_t)u, f, k0, f - k0, dy, argmax, o, pa, t->nnz);
            s = e;
        } while (e < end);
    }
}

static void max_backward(const gnn_csr_t *t, int64_t f, const float *dy, const int32_t *argmax,
                         float *dx)
{
#pragma omp parallel
    {
        gnn_vid_t r0, r1;
        thread_rows(t->indptr, t->n_rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
        max_backward_range(t, r0, r1, f, dy, argmax, dx);
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
