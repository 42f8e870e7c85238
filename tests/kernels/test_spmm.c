/*
 * Tests of the CPU SpMM kernels (kernels/cpu/spmm.c) against the double
 * precision reference (kernels/ref/spmm_ref.c).
 *
 * Random graphs of several shapes (square and rectangular, empty rows, one
 * hub row holding a third of the edges, with and without self loops and
 * weights, repeated edges, a graph without edges and one without rows) are
 * run through every aggregator forward and backward for feature widths
 * 1..1024 and compared with the reference, with a tolerance relative to the
 * magnitude of the row (the same product on |x| and |w|). Every backward is
 * also checked by central finite differences of loss = sum(y * r) taken on
 * the double reference forward; max uses distinct input values so no tie
 * moves under the perturbation. Results must be bitwise identical for 1, 2
 * and 3 threads, and gnn_spmm_graph_create must fail cleanly (GNN_ENOMEM,
 * no leak under the sanitizer build) for each allocation made to fail.
 * Prints its seed; set GNN_TEST_SEED to replay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/ref/spmm_ref.h"
#include "kernels/spmm.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

/* Every remainder of the kernels' 16-column blocks is met (1, 3, 7, 15,
 * 17, 33, 130), and the widest width of interest (1024). */
static const int64_t widths[] = {1, 3, 7, 15, 16, 17, 33, 64, 130, 1024};
#define N_WIDTHS ((int)(sizeof widths / sizeof widths[0]))

/* ---- Random data ----------------------------------------------------------- */

static int64_t rng_below(uint64_t *state, int64_t bound)
{
    return (int64_t)(tu_rng_next(state) % (uint64_t)bound);
}

static float rng_float(uint64_t *state) /* in [-1, 1), exact in float */
{
    return (float)((double)(tu_rng_next(state) >> 40) / (double)(1u << 23) - 1.0);
}

/*
 * n values in [-1, 1), pairwise distinct: an affine bijection of [0, P) for
 * the prime P, scaled so that consecutive integers stay distinct floats.
 */
#define DISTINCT_P 1000003u
static void distinct_values(uint64_t *state, size_t n, float *x)
{
    uint64_t a = 1 + (uint64_t)rng_below(state, DISTINCT_P - 1), b = tu_rng_next(state) % DISTINCT_P;
    assert_true(n < DISTINCT_P);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)((a * i + b) % DISTINCT_P) * (2.0 / DISTINCT_P) - 1.0);
}

/* ---- Graphs ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    gnn_vid_t n_dst, n_src;
    gnn_eid_t m;
    int self_loops; /* allow u -> u */
    int weights;
    int hub;        /* one row takes a third of the edges */
} shape_t;

static const shape_t shapes[] = {
    {"square", 50, 50, 300, 1, 0, 0},
    {"square-hub-weighted", 200, 200, 1500, 0, 1, 1},
    {"rect-hub-weighted", 40, 120, 500, 1, 1, 1},
    {"rect-hub", 64, 100, 900, 0, 0, 1},
    {"no-edges", 5, 8, 0, 1, 0, 0},
    {"no-rows", 0, 6, 0, 1, 1, 0},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

/*
 * Random in-edge CSR of shape s. Rows v with v % 5 == 3 stay empty (except
 * the hub, row 3 when s->hub); rows keep the edges in generation order, so
 * repeated edges are scattered within a row.
 */
static void make_graph(const shape_t *s, uint64_t *state, gnn_csr_t *a)
{
    memset(a, 0, sizeof *a);
    a->n_rows = s->n_dst;
    a->n_cols = s->n_src;
    a->nnz = s->m;
    gnn_vid_t *src = malloc(((size_t)s->m + 1) * sizeof *src);
    gnn_vid_t *dst = malloc(((size_t)s->m + 1) * sizeof *dst);
    float *w = malloc(((size_t)s->m + 1) * sizeof *w);
    assert_true(src && dst && w);
    for (gnn_eid_t i = 0; i < s->m; i++) {
        gnn_vid_t v;
        if (s->hub && rng_below(state, 3) == 0)
            v = 3;
        else
            do v = rng_below(state, s->n_dst);
            while (v % 5 == 3);
        gnn_vid_t u;
        do u = rng_below(state, s->n_src);
        while (!s->self_loops && u == v);
        src[i] = u;
        dst[i] = v;
        w[i] = rng_float(state);
    }
    a->indptr = gnn_calloc((size_t)s->n_dst + 2, sizeof *a->indptr);
    a->indices = gnn_malloc_array((size_t)s->m + 1, sizeof *a->indices);
    if (s->weights) a->weights = gnn_malloc_array((size_t)s->m + 1, sizeof *a->weights);
    assert_true(a->indptr && a->indices && (!s->weights || a->weights));
    for (gnn_eid_t i = 0; i < s->m; i++) a->indptr[dst[i] + 2]++;
    for (gnn_vid_t v = 0; v < s->n_dst; v++) a->indptr[v + 2] += a->indptr[v + 1];
    for (gnn_eid_t i = 0; i < s->m; i++) {
        gnn_eid_t j = a->indptr[dst[i] + 1]++;
        a->indices[j] = src[i];
        if (a->weights) a->weights[j] = w[i];
    }
    assert_int_equal(a->indptr[s->n_dst], s->m);
    assert_int_equal(gnn_csr_validate(a), 0);
    free(src);
    free(dst);
    free(w);
}

/* Copy of a with |w|, for the magnitude of each product. */
static void abs_copy(const gnn_csr_t *a, gnn_csr_t *b)
{
    assert_int_equal(gnn_csr_copy(a, b), 0);
    if (b->weights)
        for (gnn_eid_t j = 0; j < b->nnz; j++) b->weights[j] = fabsf(b->weights[j]);
}

/* ---- Comparison helpers ---------------------------------------------------- */

static double *to_double(const float *x, size_t n, int absolute)
{
    double *d = malloc((n + 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = absolute ? fabs((double)x[i]) : (double)x[i];
    return d;
}

/*
 * got (rows x f, float) against want (double): each element within
 * tol * (largest magnitude of its row) + 1e-30.
 */
static void expect_close(const char *what, const shape_t *s, gnn_aggr_t aggr, int64_t f,
                         gnn_vid_t rows, const float *got, const double *want, const double *mag,
                         double tol)
{
    for (gnn_vid_t r = 0; r < rows; r++) {
        double rowmag = 0;
        for (int64_t k = 0; k < f; k++)
            if (mag[r * f + k] > rowmag) rowmag = mag[r * f + k];
        for (int64_t k = 0; k < f; k++) {
            double err = fabs((double)got[r * f + k] - want[r * f + k]);
            if (!(err <= tol * rowmag + 1e-30))
                fail_msg("%s %s %s f=%lld row %lld col %lld: got %.9g want %.9g (row magnitude "
                         "%.3g, seed %llu)",
                         what, s->name, gnn_aggr_name(aggr), (long long)f, (long long)r,
                         (long long)k, (double)got[r * f + k], want[r * f + k], rowmag,
                         (unsigned long long)g_seed);
        }
    }
}

/* ---- Tests ----------------------------------------------------------------- */

static void test_aggr_names(void **state)
{
    (void)state;
    for (int i = 0; i < GNN_AGGR_COUNT_; i++) {
        gnn_aggr_t a = GNN_AGGR_COUNT_;
        assert_int_equal(gnn_aggr_from_name(gnn_aggr_name((gnn_aggr_t)i), &a), 0);
        assert_int_equal(a, i);
    }
    gnn_aggr_t a;
    assert_int_equal(gnn_aggr_from_name("lstm", &a), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "lstm"));
    assert_int_equal(gnn_aggr_from_name(NULL, &a), GNN_EINVAL);
    assert_string_equal(gnn_aggr_name(GNN_AGGR_COUNT_), "?");
}

/* Forward and backward of every aggregator, shape and width vs. reference. */
static void test_against_reference(void **state)
{
    (void)state;
    uint64_t rng = g_seed;
    for (int si = 0; si < N_SHAPES; si++) {
        const shape_t *s = &shapes[si];
        gnn_csr_t a, a_abs;
        make_graph(s, &rng, &a);
        abs_copy(&a, &a_abs);
        gnn_spmm_graph_t *g;
        assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
        for (int wi = 0; wi < N_WIDTHS; wi++) {
            const int64_t f = widths[wi];
            size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
            float *x = malloc((nx + 1) * sizeof *x), *dy = malloc((ny + 1) * sizeof *dy);
            float *y = malloc((ny + 1) * sizeof *y), *dx = malloc((nx + 1) * sizeof *dx);
            int32_t *am = malloc((ny + 1) * sizeof *am), *am_ref = malloc((ny + 1) * sizeof *am);
            double *y_ref = malloc((ny + 1) * sizeof(double)), *y_mag = malloc((ny + 1) * sizeof(double));
            double *dx_ref = malloc((nx + 1) * sizeof(double)), *dx_mag = malloc((nx + 1) * sizeof(double));
            assert_true(x && dy && y && dx && am && am_ref && y_ref && y_mag && dx_ref && dx_mag);
            distinct_values(&rng, nx, x);
            for (size_t i = 0; i < ny; i++) dy[i] = rng_float(&rng);
            double *xd = to_double(x, nx, 0), *xa = to_double(x, nx, 1);
            double *dyd = to_double(dy, ny, 0), *dya = to_double(dy, ny, 1);
            for (int ai = 0; ai < GNN_AGGR_COUNT_; ai++) {
                gnn_aggr_t aggr = (gnn_aggr_t)ai;
                if (aggr == GNN_AGGR_GCN && s->n_dst > s->n_src) continue;
                int is_max = aggr == GNN_AGGR_MAX;
                memset(y, 0xff, ny * sizeof *y); /* NaN: every element must be written */
                memset(dx, 0xff, nx * sizeof *dx);
                assert_int_equal(gnn_spmm_forward(g, aggr, f, x, y, is_max ? am : NULL), 0);
                assert_int_equal(gnn_spmm_ref_forward(&a, aggr, f, xd, y_ref, am_ref), 0);
                if (is_max) {
                    for (size_t i = 0; i < ny; i++) {
                        assert_int_equal(am[i], am_ref[i]);
                        assert_true((double)y[i] == y_ref[i]);
                    }
                } else {
                    assert_int_equal(gnn_spmm_ref_forward(&a_abs, aggr, f, xa, y_mag, NULL), 0);
                    expect_close("forward", s, aggr, f, s->n_dst, y, y_ref, y_mag, 1e-5);
                }
                assert_int_equal(gnn_spmm_backward(g, aggr, f, dy, is_max ? am : NULL, dx), 0);
                assert_int_equal(gnn_spmm_ref_backward(&a, aggr, f, dyd, am_ref, dx_ref), 0);
                assert_int_equal(gnn_spmm_ref_backward(&a_abs, aggr, f, dya, am_ref, dx_mag), 0);
                expect_close("backward", s, aggr, f, s->n_src, dx, dx_ref, dx_mag, 1e-5);
            }
            free(xd);
            free(xa);
            free(dyd);
            free(dya);
            free(x);
            free(dy);
            free(y);
            free(dx);
            free(am);
            free(am_ref);
            free(y_ref);
            free(y_mag);
            free(dx_ref);
            free(dx_mag);
        }
        gnn_spmm_graph_free(g);
        gnn_csr_free(&a);
        gnn_csr_free(&a_abs);
    }
}

/* loss = sum(y * r) with y the double reference forward of x. */
static double loss(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const double *x,
                   const double *r, double *y, int32_t *am)
{
    assert_int_equal(gnn_spmm_ref_forward(a, aggr, f, x, y, am), 0);
    double l = 0;
    for (int64_t i = 0; i < a->n_rows * f; i++) l += y[i] * r[i];
    return l;
}

/* Kernel backward against central differences of the double loss. */
static void test_backward_finite_differences(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x5eed;
    static const shape_t small[] = {
        {"fd-square", 12, 12, 40, 1, 1, 1},
        {"fd-square-noloop", 15, 15, 60, 0, 0, 0},
        {"fd-rect", 9, 20, 45, 1, 1, 1},
    };
    static const int64_t fd_widths[] = {1, 3, 5};
    for (int si = 0; si < 3; si++) {
        const shape_t *s = &small[si];
        gnn_csr_t a;
        make_graph(s, &rng, &a);
        gnn_spmm_graph_t *g;
        assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
        for (int wi = 0; wi < 3; wi++) {
            const int64_t f = fd_widths[wi];
            size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
            float *x = malloc(nx * sizeof *x), *r = malloc(ny * sizeof *r), *dx = malloc(nx * sizeof *dx);
            float *y = malloc(ny * sizeof *y);
            double *yd = malloc(ny * sizeof *yd);
            int32_t *am = malloc(ny * sizeof *am), *am_d = malloc(ny * sizeof *am_d);
            assert_true(x && r && dx && y && yd && am && am_d);
            distinct_values(&rng, nx, x);
            for (size_t i = 0; i < ny; i++) r[i] = rng_float(&rng);
            double *xd = to_double(x, nx, 0), *rd = to_double(r, ny, 0);
            for (int ai = 0; ai < GNN_AGGR_COUNT_; ai++) {
                gnn_aggr_t aggr = (gnn_aggr_t)ai;
                int is_max = aggr == GNN_AGGR_MAX;
                assert_int_equal(gnn_spmm_forward(g, aggr, f, x, y, is_max ? am : NULL), 0);
                assert_int_equal(gnn_spmm_backward(g, aggr, f, r, is_max ? am : NULL, dx), 0);
                /* Values are >= 2/P apart, so h well below 1/P moves no max. */
                const double h = 1e-7;
                for (size_t i = 0; i < nx; i++) {
                    double x0 = xd[i];
                    xd[i] = x0 + h;
                    double lp = loss(&a, aggr, f, xd, rd, yd, am_d);
                    xd[i] = x0 - h;
                    double lm = loss(&a, aggr, f, xd, rd, yd, am_d);
                    xd[i] = x0;
                    double fd = (lp - lm) / (2 * h);
                    if (!(fabs(fd - (double)dx[i]) <= 1e-4 * (1.0 + fabs(fd))))
                        fail_msg("finite differences %s %s f=%lld x[%zu]: kernel %.9g fd %.9g "
                                 "(seed %llu)",
                                 s->name, gnn_aggr_name(aggr), (long long)f, i, (double)dx[i], fd,
                                 (unsigned long long)g_seed);
                }
            }
            free(xd);
            free(rd);
            free(x);
            free(r);
            free(dx);
            free(y);
            free(yd);
            free(am);
            free(am_d);
        }
        gnn_spmm_graph_free(g);
        gnn_csr_free(&a);
    }
}

/* The same outputs, bit for bit, on 1, 2 and 3 threads. */
static void test_threads_bitwise(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x7777;
    const shape_t s = {"threads", 3000, 3000, 30000, 1, 1, 1};
    gnn_csr_t a;
    make_graph(&s, &rng, &a);
    gnn_spmm_graph_t *g;
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    static const int64_t fs[] = {1, 7, 64, 130};
    const int saved = omp_get_max_threads();
    for (int wi = 0; wi < 4; wi++) {
        const int64_t f = fs[wi];
        size_t n = (size_t)(s.n_dst * f);
        float *x = malloc(n * sizeof *x), *y[3], *dx[3];
        int32_t *am[3];
        assert_non_null(x);
        distinct_values(&rng, n, x);
        for (int ti = 0; ti < 3; ti++) {
            y[ti] = malloc(n * sizeof(float));
            dx[ti] = malloc(n * sizeof(float));
            am[ti] = malloc(n * sizeof(int32_t));
            assert_true(y[ti] && dx[ti] && am[ti]);
        }
        for (int ai = 0; ai < GNN_AGGR_COUNT_; ai++) {
            gnn_aggr_t aggr = (gnn_aggr_t)ai;
            for (int ti = 0; ti < 3; ti++) {
                omp_set_num_threads(ti + 1);
                assert_int_equal(gnn_spmm_forward(g, aggr, f, x, y[ti], am[ti]), 0);
                /* dy = x (any data will do) */
                assert_int_equal(gnn_spmm_backward(g, aggr, f, x, am[ti], dx[ti]), 0);
            }
            for (int ti = 1; ti < 3; ti++) {
                assert_memory_equal(y[0], y[ti], n * sizeof(float));
                assert_memory_equal(dx[0], dx[ti], n * sizeof(float));
                if (aggr == GNN_AGGR_MAX) assert_memory_equal(am[0], am[ti], n * sizeof(int32_t));
            }
        }
        omp_set_num_threads(saved);
        free(x);
        for (int ti = 0; ti < 3; ti++) {
            free(y[ti]);
            free(dx[ti]);
            free(am[ti]);
        }
    }
    gnn_spmm_graph_free(g);
    gnn_csr_free(&a);
}

/*
 * A symmetric, sorted, deduplicated, unweighted graph serves as its own
 * transpose (no copy) and gives the same bits as with an explicit
 * transpose; a CSR whose flags promise symmetry falsely is transposed.
 */
static void test_symmetric_shares_transpose(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x5359;
    const gnn_vid_t n = 500;
    const gnn_eid_t m = 3000;
    gnn_vid_t *src = malloc(m * sizeof *src), *dst = malloc(m * sizeof *dst);
    assert_true(src && dst);
    for (gnn_eid_t i = 0; i < m; i++) {
        src[i] = rng_below(&rng, n);
        dst[i] = i % 7 == 0 ? 3 : rng_below(&rng, n); /* a hub */
    }
    gnn_csr_t a, b;
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE, &a),
                     0);
    assert_true(a.flags & GNN_CSR_SYMMETRIC);
    assert_int_equal(gnn_csr_copy(&a, &b), 0);
    b.flags &= ~(unsigned)GNN_CSR_SYMMETRIC; /* forces an explicit transpose */
    gnn_spmm_graph_t *ga, *gb;
    assert_int_equal(gnn_spmm_graph_create(&a, &ga), 0);
    assert_int_equal(gnn_spmm_graph_create(&b, &gb), 0);
    assert_true(ga->t_shared);
    assert_false(gb->t_shared);
    assert_ptr_equal(ga->t.indices, a.indices);
    assert_true(gnn_csr_equal(&ga->t, &gb->t));
    const int64_t f = 9;
    size_t nf = (size_t)(n * f);
    float *x = malloc(nf * sizeof *x), *y[2], *dx[2];
    int32_t *am[2];
    assert_non_null(x);
    distinct_values(&rng, nf, x);
    for (int k = 0; k < 2; k++) {
        y[k] = malloc(nf * sizeof(float));
        dx[k] = malloc(nf * sizeof(float));
        am[k] = malloc(nf * sizeof(int32_t));
        assert_true(y[k] && dx[k] && am[k]);
    }
    for (int ai = 0; ai < GNN_AGGR_COUNT_; ai++) {
        gnn_spmm_graph_t *gs[2] = {ga, gb};
        for (int k = 0; k < 2; k++) {
            assert_int_equal(gnn_spmm_forward(gs[k], (gnn_aggr_t)ai, f, x, y[k], am[k]), 0);
            assert_int_equal(gnn_spmm_backward(gs[k], (gnn_aggr_t)ai, f, x, am[k], dx[k]), 0);
        }
        assert_memory_equal(y[0], y[1], nf * sizeof(float));
        assert_memory_equal(dx[0], dx[1], nf * sizeof(float));
    }
    gnn_spmm_graph_free(ga);
    gnn_spmm_graph_free(gb);
    /* A false promise: row 3 loses one entry (not a self loop, which would
     * be its own partner), its partner keeps it. */
    gnn_eid_t j = b.indptr[3];
    while (j < b.indptr[4] && b.indices[j] == 3) j++;
    assert_true(b.indptr[4] > j);
    memmove(b.indices + j, b.indices + j + 1, (size_t)(b.nnz - j - 1) * sizeof *b.indices);
    for (gnn_vid_t v = 4; v <= n; v++) b.indptr[v]--;
    b.nnz--;
    b.flags |= GNN_CSR_SYMMETRIC;
    assert_int_equal(gnn_spmm_graph_create(&b, &gb), 0);
    assert_false(gb->t_shared);
    gnn_spmm_graph_free(gb);
    for (int k = 0; k < 2; k++) free(y[k]), free(dx[k]), free(am[k]);
    free(x), free(src), free(dst);
    gnn_csr_free(&a);
    gnn_csr_free(&b);
}

/* Ties in max go to the first entry of the row, forward and backward. */
static void test_max_ties(void **state)
{
    (void)state;
    /* Row 0 lists 2, 1, 3 (x[1] = x[2] = 5 is the max); row 1 lists 1, 1
     * (a repeated edge: dy is routed once); row 2 is empty. */
    gnn_eid_t indptr[] = {0, 3, 5, 5};
    gnn_vid_t indices[] = {2, 1, 3, 1, 1};
    gnn_csr_t a = {3, 4, 5, indptr, indices, NULL, 0};
    gnn_spmm_graph_t *g;
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    const float x[4] = {9, 5, 5, -1}, dy[3] = {1, 10, 100};
    float y[3], dx[4];
    int32_t am[3];
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_MAX, 1, x, y, am), 0);
    assert_true(y[0] == 5 && y[1] == 5 && y[2] == 0);
    assert_int_equal(am[0], 2);
    assert_int_equal(am[1], 1);
    assert_int_equal(am[2], -1);
    assert_int_equal(gnn_spmm_backward(g, GNN_AGGR_MAX, 1, dy, am, dx), 0);
    assert_true(dx[0] == 0 && dx[1] == 10 && dx[2] == 1 && dx[3] == 0);
    gnn_spmm_graph_free(g);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    uint64_t rng = g_seed;
    const shape_t s = {"wide", 10, 4, 20, 1, 0, 0}; /* n_dst > n_src */
    gnn_csr_t a;
    make_graph(&s, &rng, &a);
    gnn_spmm_graph_t *g = (gnn_spmm_graph_t *)(uintptr_t)1;
    assert_int_equal(gnn_spmm_graph_create(NULL, &g), GNN_EINVAL);
    assert_null(g);
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    float x[4 * 2] = {0}, y[10 * 2];
    int32_t am[10 * 2];
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_SUM, 0, x, y, NULL), GNN_EINVAL);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_SUM, 2, NULL, y, NULL), GNN_EINVAL);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_COUNT_, 2, x, y, NULL), GNN_EINVAL);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_MAX, 2, x, y, NULL), GNN_EINVAL);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_GCN, 2, x, y, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "gcn"));
    assert_int_equal(gnn_spmm_backward(g, GNN_AGGR_GCN, 2, y, NULL, x), GNN_EINVAL);
    assert_int_equal(gnn_spmm_backward(g, GNN_AGGR_MAX, 2, y, NULL, x), GNN_EINVAL);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_MAX, 2, x, y, am), 0);
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_SUM, INT64_MAX / 2, x, y, NULL), GNN_EINVAL);
    gnn_spmm_graph_free(g);
    gnn_spmm_graph_free(NULL);
    gnn_csr_free(&a);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    uint64_t rng = g_seed;
    gnn_csr_t a;
    make_graph(&shapes[2], &rng, &a);
    int n_failed = 0, rc;
    gnn_spmm_graph_t *g;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        g = (gnn_spmm_graph_t *)(uintptr_t)1;
        rc = gnn_spmm_graph_create(&a, &g);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_int_equal(gnn_error_code(), GNN_ENOMEM);
        assert_null(g);
        n_failed++;
    }
    assert_true(n_failed >= 5); /* the struct, the transpose's arrays, the scale factors */
    float x[120] = {0}, y[40];
    assert_int_equal(gnn_spmm_forward(g, GNN_AGGR_GCN, 1, x, y, NULL), 0);
    gnn_spmm_graph_free(g);
    gnn_csr_free(&a);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_spmm: seed %llu (GNN_TEST_SEED=%llu to replay)\n", (unsigned long long)g_seed,
           (unsigned long long)g_seed);
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aggr_names),
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_backward_finite_differences),
        cmocka_unit_test(test_threads_bitwise),
        cmocka_unit_test(test_symmetric_shares_transpose),
        cmocka_unit_test(test_max_ties),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
