/*
 * Tests of the CSR core (graph/csr.c).
 *
 * Small hand-checked graphs pin down each build option exactly (offsets,
 * indices, weights, flags); random graphs are checked against a naive
 * per-row reference; validate is fed one corruption of each kind; and every
 * allocating function is run with the Nth allocation failing, N = 1, 2, ...,
 * until it succeeds, checking a clean GNN_ENOMEM and a zeroed output each
 * time (leaks show up under the sanitizer build). The random test prints its
 * seed; set GNN_TEST_SEED to replay one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/csr.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

/* ---- Helpers ------------------------------------------------------------------ */

static int64_t rng_below(uint64_t *state, int64_t bound)
{
    return (int64_t)(tu_rng_next(state) % (uint64_t)bound);
}

static int is_zeroed(const gnn_csr_t *g)
{
    return g->n_rows == 0 && g->n_cols == 0 && g->nnz == 0 && g->indptr == NULL &&
           g->indices == NULL && g->weights == NULL && g->flags == 0;
}

/* Fill *g with junk so that a function that forgets to zero it is caught. */
static void scribble(gnn_csr_t *g)
{
    g->n_rows = 77;
    g->n_cols = 77;
    g->nnz = 77;
    g->indptr = (gnn_eid_t *)(uintptr_t)0x1;
    g->indices = (gnn_vid_t *)(uintptr_t)0x1;
    g->weights = (float *)(uintptr_t)0x1;
    g->flags = 0xff;
}

/* Compare g with expected arrays; weights may be NULL. */
static void expect_csr(const gnn_csr_t *g, gnn_vid_t n, const gnn_eid_t *indptr,
                       const gnn_vid_t *indices, const float *weights, unsigned flags)
{
    assert_int_equal(g->n_rows, n);
    assert_int_equal(g->n_cols, n);
    assert_int_equal(g->nnz, indptr[n]);
    for (gnn_vid_t v = 0; v <= n; v++) assert_int_equal(g->indptr[v], indptr[v]);
    for (gnn_eid_t j = 0; j < g->nnz; j++) assert_int_equal(g->indices[j], indices[j]);
    if (weights) {
        assert_non_null(g->weights);
        for (gnn_eid_t j = 0; j < g->nnz; j++) assert_true(g->weights[j] == weights[j]);
    } else {
        assert_null(g->weights);
    }
    assert_int_equal(g->flags, flags);
    assert_int_equal(gnn_csr_validate(g), 0);
}

static void expect_message(const char *want)
{
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

/* ---- Graph 1: four nodes, one repeated edge, no self loop -------------------------- */

static const gnn_vid_t g1_src[] = {2, 0, 2, 3, 1, 0};
static const gnn_vid_t g1_dst[] = {1, 1, 1, 0, 3, 3};
static const float g1_w[] = {1, 2, 3, 4, 5, 6};
#define G1_N 4
#define G1_M 6

static void test_plain_keeps_input_order(void **state)
{
    (void)state;
    gnn_csr_t g;
    scribble(&g);
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, 0, &g), 0);
    const gnn_eid_t indptr[] = {0, 1, 4, 4, 6};
    const gnn_vid_t indices[] = {3, 2, 0, 2, 1, 0};
    const float w[] = {4, 1, 2, 3, 5, 6};
    expect_csr(&g, G1_N, indptr, indices, w, GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);

    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, NULL, 0, &g), 0);
    expect_csr(&g, G1_N, indptr, indices, NULL, GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);
}

static void test_sort_is_stable(void **state)
{
    (void)state;
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_SORT, &g), 0);
    const gnn_eid_t indptr[] = {0, 1, 4, 4, 6};
    const gnn_vid_t indices[] = {3, 0, 2, 2, 0, 1};
    const float w[] = {4, 2, 1, 3, 6, 5}; /* the repeated 2 -> 1 keeps 1 before 3 */
    expect_csr(&g, G1_N, indptr, indices, w, GNN_CSR_SORTED | GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);
}

static void test_dedupe_keeps_first_weight(void **state)
{
    (void)state;
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_DEDUPE, &g), 0);
    const gnn_eid_t indptr[] = {0, 1, 3, 3, 5};
    const gnn_vid_t indices[] = {3, 0, 2, 0, 1};
    const float w[] = {4, 2, 1, 6, 5};
    expect_csr(&g, G1_N, indptr, indices, w,
               GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);
}

static void test_self_loops(void **state)
{
    (void)state;
    const gnn_vid_t src[] = {0, 1, 2, 0, 2};
    const gnn_vid_t dst[] = {0, 0, 2, 1, 2};
    const float w[] = {1, 2, 3, 4, 5};
    gnn_csr_t g;

    assert_int_equal(gnn_csr_from_edges(3, 5, src, dst, w, 0, &g), 0);
    const gnn_eid_t kept_indptr[] = {0, 2, 3, 5};
    const gnn_vid_t kept_indices[] = {0, 1, 0, 2, 2};
    const float kept_w[] = {1, 2, 4, 3, 5};
    expect_csr(&g, 3, kept_indptr, kept_indices, kept_w, 0); /* loops present: no flag */
    gnn_csr_free(&g);

    assert_int_equal(gnn_csr_from_edges(3, 5, src, dst, w, GNN_BUILD_NO_SELF_LOOPS, &g), 0);
    const gnn_eid_t indptr[] = {0, 1, 2, 2};
    const gnn_vid_t indices[] = {1, 0};
    const float dropped_w[] = {2, 4};
    expect_csr(&g, 3, indptr, indices, dropped_w, GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);
}

/* Graph 2: 0->1, 2->1, 1->0, 3->3, 1->2. */
static const gnn_vid_t g2_src[] = {0, 2, 1, 3, 1};
static const gnn_vid_t g2_dst[] = {1, 1, 0, 3, 2};
static const float g2_w[] = {1, 2, 3, 4, 5};

static void test_symmetrize(void **state)
{
    (void)state;
    gnn_csr_t g;

    /* input edges of a row first, then the reverses, each in input order */
    assert_int_equal(gnn_csr_from_edges(4, 5, g2_src, g2_dst, g2_w, GNN_BUILD_SYMMETRIZE, &g), 0);
    const gnn_eid_t indptr[] = {0, 2, 6, 8, 10};
    const gnn_vid_t indices[] = {1, 1, 0, 2, 0, 2, 1, 1, 3, 3};
    const float w[] = {3, 1, 1, 2, 3, 5, 5, 2, 4, 4};
    expect_csr(&g, 4, indptr, indices, w, GNN_CSR_SYMMETRIC);
    gnn_csr_free(&g);

    assert_int_equal(gnn_csr_from_edges(4, 5, g2_src, g2_dst, g2_w,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE, &g),
                     0);
    const gnn_eid_t d_indptr[] = {0, 1, 3, 4, 5};
    const gnn_vid_t d_indices[] = {1, 0, 2, 1, 3};
    const float d_w[] = {3, 1, 2, 5, 4}; /* an input edge wins over a reverse */
    expect_csr(&g, 4, d_indptr, d_indices, d_w,
               GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC);
    gnn_csr_free(&g);

    assert_int_equal(gnn_csr_from_edges(4, 5, g2_src, g2_dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &g),
                     0);
    const gnn_eid_t l_indptr[] = {0, 1, 3, 4, 4};
    expect_csr(&g, 4, l_indptr, d_indices, NULL,
               GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC | GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_free(&g);
}

static void test_transpose(void **state)
{
    (void)state;
    gnn_csr_t g, t, tt, sorted;
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, 0, &g), 0);
    scribble(&t);
    assert_int_equal(gnn_csr_transpose(&g, &t), 0);
    const gnn_eid_t indptr[] = {0, 2, 3, 5, 6};
    const gnn_vid_t indices[] = {1, 3, 3, 1, 1, 0};
    const float w[] = {2, 6, 5, 1, 3, 4};
    expect_csr(&t, G1_N, indptr, indices, w, GNN_CSR_SORTED | GNN_CSR_NO_SELF_LOOPS);

    assert_int_equal(gnn_csr_transpose(&t, &tt), 0);
    assert_int_equal(
        gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_SORT, &sorted), 0);
    assert_true(gnn_csr_equal(&tt, &sorted));
    assert_false(gnn_csr_equal(&tt, &g)); /* g's row 1 is not sorted */
    gnn_csr_free(&g);
    gnn_csr_free(&t);
    gnn_csr_free(&tt);
    gnn_csr_free(&sorted);

    /* flags that stay true carry over */
    assert_int_equal(gnn_csr_from_edges(4, 5, g2_src, g2_dst, g2_w,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &g),
                     0);
    assert_int_equal(gnn_csr_transpose(&g, &t), 0);
    assert_int_equal(t.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC |
                                  GNN_CSR_NO_SELF_LOOPS);
    assert_int_equal(gnn_csr_validate(&t), 0);
    gnn_csr_free(&g);
    gnn_csr_free(&t);
}

static void test_transpose_rectangular(void **state)
{
    (void)state;
    gnn_eid_t indptr[] = {0, 2, 4};
    gnn_vid_t indices[] = {2, 0, 1, 2};
    float w[] = {1, 2, 3, 4};
    gnn_csr_t a = {.n_rows = 2, .n_cols = 3, .nnz = 4, .indptr = indptr, .indices = indices,
                   .weights = w};
    gnn_csr_t t;
    assert_int_equal(gnn_csr_validate(&a), 0);
    assert_int_equal(gnn_csr_transpose(&a, &t), 0);
    assert_int_equal(t.n_rows, 3);
    assert_int_equal(t.n_cols, 2);
    const gnn_eid_t t_indptr[] = {0, 1, 2, 4};
    const gnn_vid_t t_indices[] = {0, 1, 0, 1};
    const float t_w[] = {2, 3, 1, 4};
    for (int v = 0; v <= 3; v++) assert_int_equal(t.indptr[v], t_indptr[v]);
    for (int j = 0; j < 4; j++) {
        assert_int_equal(t.indices[j], t_indices[j]);
        assert_true(t.weights[j] == t_w[j]);
    }
    assert_int_equal(gnn_csr_validate(&t), 0);

    gnn_eid_t counts[3];
    gnn_csr_col_counts(&a, counts);
    assert_int_equal(counts[0], 1);
    assert_int_equal(counts[1], 1);
    assert_int_equal(counts[2], 2);
    gnn_csr_free(&t);
}

/* Above the size where the transpose splits its rows over threads: the
 * result, with repeated entries and weights, entry for entry the naive
 * one's (entries of column c in the order of their rows, a row's repeats
 * in their order), for 1, 2, 3 and 4 threads. */
static void transpose_threads(gnn_vid_t nc, uint64_t rng)
{
    const gnn_vid_t nr = 3000;
    gnn_csr_t a = {.n_rows = nr, .n_cols = nc};
    a.indptr = calloc((size_t)nr + 1, sizeof *a.indptr);
    assert_non_null(a.indptr);
    for (gnn_vid_t v = 0; v < nr; v++) /* uneven rows, some empty */
        a.indptr[v + 1] = a.indptr[v] + (v % 7 == 3 ? 0 : rng_below(&rng, v < 100 ? 400 : 60));
    a.nnz = a.indptr[nr];
    assert_true(a.nnz > (1 << 16));
    a.indices = malloc((size_t)a.nnz * sizeof *a.indices);
    a.weights = malloc((size_t)a.nnz * sizeof *a.weights);
    assert_true(a.indices && a.weights);
    for (gnn_eid_t j = 0; j < a.nnz; j++) {
        /* a few hot columns take many entries, repeats within rows */
        a.indices[j] = rng_below(&rng, 4) == 0 ? rng_below(&rng, 16) : rng_below(&rng, nc);
        a.weights[j] = (float)j;
    }
    /* The reference: column by column, scanning rows in order. */
    gnn_eid_t *rp = calloc((size_t)nc + 1, sizeof *rp);
    gnn_vid_t *ri = malloc((size_t)a.nnz * sizeof *ri);
    float *rw = malloc((size_t)a.nnz * sizeof *rw);
    assert_true(rp && ri && rw);
    for (gnn_eid_t j = 0; j < a.nnz; j++) rp[a.indices[j] + 1]++;
    for (gnn_vid_t c = 0; c < nc; c++) rp[c + 1] += rp[c];
    gnn_eid_t *at = malloc((size_t)nc * sizeof *at);
    assert_non_null(at);
    memcpy(at, rp, (size_t)nc * sizeof *at);
    for (gnn_vid_t v = 0; v < nr; v++)
        for (gnn_eid_t j = a.indptr[v]; j < a.indptr[v + 1]; j++) {
            ri[at[a.indices[j]]] = v;
            rw[at[a.indices[j]]++] = a.weights[j];
        }
    int saved = omp_get_max_threads();
    for (int nt = 1; nt <= 4; nt++) {
        omp_set_num_threads(nt);
        gnn_csr_t t;
        assert_int_equal(gnn_csr_transpose(&a, &t), 0);
        assert_int_equal(t.n_rows, nc);
        assert_int_equal(t.n_cols, nr);
        assert_int_equal(t.nnz, a.nnz);
        assert_memory_equal(t.indptr, rp, ((size_t)nc + 1) * sizeof *rp);
        assert_memory_equal(t.indices, ri, (size_t)a.nnz * sizeof *ri);
        assert_memory_equal(t.weights, rw, (size_t)a.nnz * sizeof *rw);
        assert_true(t.flags & GNN_CSR_SORTED);
        assert_int_equal(gnn_csr_validate(&t), 0);
        gnn_csr_free(&t);
    }
    omp_set_num_threads(saved);
    free(at);
    free(rp);
    free(ri);
    free(rw);
    free(a.indptr);
    free(a.indices);
    free(a.weights);
}

/* Column counts of one bucket of the parallel transpose (512 columns) or
 * fewer, and of many. */
static void test_transpose_threads(void **state)
{
    (void)state;
    transpose_threads(300, g_seed ^ 0x7a5e);
    transpose_threads(5000, g_seed ^ 0x7a5f);
    transpose_threads(70001, g_seed ^ 0x7a60);
}

static void test_copy_equal_sort_rows(void **state)
{
    (void)state;
    gnn_csr_t g, c, sorted;
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, 0, &g), 0);
    assert_int_equal(gnn_csr_copy(&g, &c), 0);
    assert_true(gnn_csr_equal(&g, &c));
    assert_int_equal(c.flags, g.flags);
    assert_ptr_not_equal(c.indices, g.indices);

    c.weights[2] = 9;
    assert_false(gnn_csr_equal(&g, &c));
    c.weights[2] = g.weights[2];
    c.indices[0] = 1;
    assert_false(gnn_csr_equal(&g, &c));
    c.indices[0] = g.indices[0];
    float *w = c.weights;
    c.weights = NULL;
    assert_false(gnn_csr_equal(&g, &c)); /* weighted against unweighted */
    c.weights = w;

    assert_int_equal(gnn_csr_sort_rows(&c), 0);
    assert_true(c.flags & GNN_CSR_SORTED);
    assert_int_equal(
        gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_SORT, &sorted), 0);
    assert_true(gnn_csr_equal(&c, &sorted));
    assert_int_equal(gnn_csr_validate(&c), 0);

    gnn_csr_free(&c);
    assert_true(is_zeroed(&c));
    gnn_csr_free(&c); /* safe on a zeroed struct */
    gnn_csr_free(&g);
    gnn_csr_free(&sorted);
}

/* gnn_csr_rows: chosen rows in the given order (one twice), with their
 * weights; none; a row outside the matrix. */
static void test_rows(void **state)
{
    (void)state;
    gnn_csr_t g, r;
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_SORT, &g), 0);
    const gnn_vid_t rows[] = {3, 0, 3, G1_N - 1};
    assert_int_equal(gnn_csr_rows(&g, rows, 4, &r), 0);
    assert_int_equal(r.n_rows, 4);
    assert_int_equal(r.n_cols, g.n_cols);
    assert_true(r.flags & GNN_CSR_SORTED);
    gnn_eid_t want = 0;
    for (int i = 0; i < 4; i++) {
        gnn_eid_t from = g.indptr[rows[i]], len = g.indptr[rows[i] + 1] - from;
        assert_int_equal(r.indptr[i], want);
        assert_int_equal(r.indptr[i + 1] - r.indptr[i], len);
        assert_memory_equal(r.indices + want, g.indices + from, (size_t)len * sizeof *r.indices);
        assert_memory_equal(r.weights + want, g.weights + from, (size_t)len * sizeof *r.weights);
        want += len;
    }
    assert_int_equal(r.nnz, want);
    assert_true(want > 0);
    assert_int_equal(gnn_csr_validate(&r), 0);
    gnn_csr_free(&r);
    assert_int_equal(gnn_csr_rows(&g, NULL, 0, &r), 0);
    assert_int_equal(r.n_rows, 0);
    assert_int_equal(r.nnz, 0);
    gnn_csr_free(&r);
    const gnn_vid_t bad[] = {1, G1_N};
    assert_int_equal(gnn_csr_rows(&g, bad, 2, &r), GNN_ERANGE);
    expect_message("CSR rows: row 4 outside [0, 4)");
    assert_true(is_zeroed(&r));
    gnn_csr_free(&g);
}

static void test_degree_stats(void **state)
{
    (void)state;
    /* row lengths 0, 1, 2, 3, 4, 0, 8 */
    const gnn_vid_t len[] = {0, 1, 2, 3, 4, 0, 8};
    gnn_vid_t src[18], dst[18];
    int m = 0;
    for (int v = 0; v < 7; v++)
        for (int k = 0; k < len[v]; k++, m++) {
            src[m] = k % 7;
            dst[m] = v;
        }
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(7, m, src, dst, NULL, 0, &g), 0);
    gnn_degree_stats_t s;
    gnn_csr_degree_stats(&g, &s);
    assert_int_equal(s.n, 7);
    assert_int_equal(s.min, 0);
    assert_int_equal(s.max, 8);
    assert_int_equal(s.argmax, 6);
    assert_int_equal(s.n_zero, 2);
    assert_true(fabs(s.mean - 18.0 / 7.0) < 1e-12);
    assert_true(fabs(s.stddev - sqrt(334.0) / 7.0) < 1e-12);
    const gnn_vid_t hist[] = {2, 1, 2, 1, 1}; /* 0 | 1 | 2-3 | 4-7 | 8-15 */
    for (int k = 0; k < 64; k++) assert_int_equal(s.hist[k], k < 5 ? hist[k] : 0);

    gnn_eid_t counts[7];
    gnn_csr_col_counts(&g, counts);
    const gnn_eid_t want[] = {6, 4, 3, 2, 1, 1, 1};
    for (int u = 0; u < 7; u++) assert_int_equal(counts[u], want[u]);
    gnn_csr_free(&g);

    /* ties: argmax is the first longest row */
    const gnn_vid_t tsrc[] = {0, 1, 0, 1, 2, 0, 1, 2};
    const gnn_vid_t tdst[] = {0, 0, 1, 1, 1, 2, 2, 2};
    assert_int_equal(gnn_csr_from_edges(3, 8, tsrc, tdst, NULL, 0, &g), 0);
    gnn_csr_degree_stats(&g, &s);
    assert_int_equal(s.argmax, 1);
    assert_int_equal(s.min, 2);
    assert_int_equal(s.max, 3);
    gnn_csr_free(&g);
}

static void test_out_of_range_and_bad_arguments(void **state)
{
    (void)state;
    gnn_csr_t g;
    const gnn_vid_t src[] = {0, 1, 99};
    const gnn_vid_t dst[] = {1, 2, 3};
    scribble(&g);
    assert_int_equal(gnn_csr_from_edges(10, 3, src, dst, NULL, GNN_BUILD_SYMMETRIZE, &g),
                     GNN_ERANGE);
    assert_true(is_zeroed(&g));
    assert_string_equal(gnn_error_message(), "edge 2: source id 99 out of range [0, 10)");

    const gnn_vid_t src2[] = {0, 1};
    const gnn_vid_t dst2[] = {1, 10};
    scribble(&g);
    assert_int_equal(gnn_csr_from_edges(10, 2, src2, dst2, NULL, 0, &g), GNN_ERANGE);
    assert_true(is_zeroed(&g));
    assert_string_equal(gnn_error_message(), "edge 1: destination id 10 out of range [0, 10)");

    const gnn_vid_t neg[] = {-1};
    assert_int_equal(gnn_csr_from_edges(10, 1, neg, dst2, NULL, 0, &g), GNN_ERANGE);
    assert_string_equal(gnn_error_message(), "edge 0: source id -1 out of range [0, 10)");
    assert_int_equal(gnn_csr_from_edges(0, 1, src2, dst2, NULL, 0, &g), GNN_ERANGE);
    assert_true(is_zeroed(&g));

    assert_int_equal(gnn_csr_from_edges(-1, 0, NULL, NULL, NULL, 0, &g), GNN_EINVAL);
    assert_true(is_zeroed(&g));
    assert_int_equal(gnn_csr_from_edges(10, -1, src, dst, NULL, 0, &g), GNN_EINVAL);
    assert_int_equal(gnn_csr_from_edges(10, 2, NULL, dst, NULL, 0, &g), GNN_EINVAL);
    assert_int_equal(gnn_csr_from_edges(10, 2, src, NULL, NULL, 0, &g), GNN_EINVAL);
    assert_int_equal(gnn_csr_from_edges(10, 0, src, dst, NULL, 0, NULL), GNN_EINVAL);

    /* 2 * m overflows: refused before any edge is read */
    scribble(&g);
    assert_int_equal(gnn_csr_from_edges(10, INT64_MAX / 2 + 1, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE, &g),
                     GNN_EOVERFLOW);
    assert_true(is_zeroed(&g));
}

static void test_empty_graphs(void **state)
{
    (void)state;
    const unsigned all = GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS |
                         GNN_BUILD_SORT;
    gnn_csr_t g, t, c, zero = {0};
    assert_int_equal(gnn_csr_from_edges(0, 0, NULL, NULL, NULL, all, &g), 0);
    assert_int_equal(g.n_rows, 0);
    assert_int_equal(g.nnz, 0);
    assert_non_null(g.indptr);
    assert_int_equal(g.indptr[0], 0);
    assert_int_equal(g.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS |
                                  GNN_CSR_SYMMETRIC);
    assert_int_equal(gnn_csr_validate(&g), 0);
    assert_int_equal(gnn_csr_transpose(&g, &t), 0);
    assert_true(gnn_csr_equal(&g, &t));
    assert_int_equal(gnn_csr_copy(&g, &c), 0);
    assert_true(gnn_csr_equal(&g, &c));
    assert_true(gnn_csr_equal(&g, &zero)); /* a missing indptr reads as [0] */
    assert_int_equal(gnn_csr_sort_rows(&c), 0);
    gnn_degree_stats_t s;
    gnn_csr_degree_stats(&g, &s);
    assert_int_equal(s.n, 0);
    assert_int_equal(s.max, 0);
    assert_true(s.mean == 0.0);
    gnn_csr_col_counts(&g, NULL);
    gnn_csr_free(&g);
    gnn_csr_free(&t);
    gnn_csr_free(&c);

    /* the zeroed struct is the empty graph to every reader */
    assert_int_equal(gnn_csr_validate(&zero), 0);
    assert_int_equal(gnn_csr_copy(&zero, &c), 0);
    assert_true(is_zeroed(&c));
    assert_int_equal(gnn_csr_transpose(&zero, &t), 0);
    assert_int_equal(t.indptr[0], 0);
    gnn_csr_free(&t);

    /* nodes without edges */
    const gnn_vid_t src[] = {4};
    const gnn_vid_t dst[] = {2};
    assert_int_equal(gnn_csr_from_edges(5, 1, src, dst, NULL, 0, &g), 0);
    const gnn_eid_t indptr[] = {0, 0, 0, 1, 1, 1};
    expect_csr(&g, 5, indptr, src, NULL, GNN_CSR_NO_SELF_LOOPS);
    assert_int_equal(gnn_csr_transpose(&g, &t), 0);
    const gnn_eid_t t_indptr[] = {0, 0, 0, 0, 0, 1};
    expect_csr(&t, 5, t_indptr, dst, NULL, GNN_CSR_SORTED | GNN_CSR_NO_SELF_LOOPS);
    gnn_csr_degree_stats(&g, &s);
    assert_int_equal(s.n_zero, 4);
    assert_int_equal(s.argmax, 2);
    assert_int_equal(s.hist[0], 4);
    assert_int_equal(s.hist[1], 1);
    gnn_csr_free(&g);
    gnn_csr_free(&t);
}

/* ---- Validation ------------------------------------------------------------------ */

/* Validate c, expecting GNN_EFORMAT with a message containing want. */
static void expect_corrupt(const gnn_csr_t *c, const char *want)
{
    gnn_error_clear();
    assert_int_equal(gnn_csr_validate(c), GNN_EFORMAT);
    assert_int_equal(gnn_error_code(), GNN_EFORMAT);
    expect_message(want);
}

static void test_validate_catches_corruption(void **state)
{
    (void)state;
    gnn_csr_t good, c;
    /* rows: 0 [3] | 1 [0 2] | 2 [] | 3 [0 1]; sorted, deduped, no loops */
    assert_int_equal(
        gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, GNN_BUILD_DEDUPE, &good), 0);
    assert_int_equal(gnn_csr_validate(&good), 0);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indptr[0] = 1;
    expect_corrupt(&c, "indptr[0]");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indptr[2] = 4; /* 0 1 4 3 5 */
    expect_corrupt(&c, "indptr not monotone at row 2 (4 > 3)");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.nnz = 4;
    expect_corrupt(&c, "nnz");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indices[2] = 9;
    expect_corrupt(&c, "row 1: index 9 out of range [0, 4)");
    c.indices[2] = 2;
    c.indices[0] = -1;
    expect_corrupt(&c, "row 0: index -1 out of range [0, 4)");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indices[1] = 2;
    c.indices[2] = 0;
    expect_corrupt(&c, "row 1 not sorted although flagged sorted");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indices[1] = 2; /* row 1 [2 2]: sorted, repeated */
    expect_corrupt(&c, "row 1: duplicate source 2 although flagged deduped");
    c.flags &= ~(unsigned)GNN_CSR_SORTED; /* same check without sorted rows */
    expect_corrupt(&c, "row 1: duplicate source 2 although flagged deduped");
    gnn_csr_free(&c);

    assert_int_equal(gnn_csr_copy(&good, &c), 0);
    c.indices[4] = 3; /* row 3 [0 3] */
    expect_corrupt(&c, "row 3 has a self loop although flagged free of them");
    gnn_csr_free(&c);

    /* unsorted rows carrying a repeat in a later row */
    assert_int_equal(gnn_csr_from_edges(G1_N, G1_M, g1_src, g1_dst, g1_w, 0, &c), 0);
    c.flags |= GNN_CSR_DEDUPED; /* row 1 is [2 0 2] */
    expect_corrupt(&c, "row 1: duplicate source 2 although flagged deduped");
    c.flags = GNN_CSR_SORTED;
    expect_corrupt(&c, "row 1 not sorted although flagged sorted");
    gnn_csr_free(&c);

    /* symmetry: rows 0 [1] | 1 [0 2] | 2 [1] | 3 [3] */
    gnn_csr_t sym;
    assert_int_equal(gnn_csr_from_edges(4, 5, g2_src, g2_dst, g2_w,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE, &sym),
                     0);
    assert_int_equal(gnn_csr_copy(&sym, &c), 0);
    c.indices[3] = 3; /* row 2 [3]: 2 -> 1 loses its reverse */
    expect_corrupt(&c, "not symmetric: edge 2 -> 1 has no reverse");
    c.flags &= ~(unsigned)GNN_CSR_SORTED; /* the transpose-based check */
    expect_corrupt(&c, "not symmetric: edge 2 -> 1 has no reverse");
    gnn_csr_free(&c);
    c = sym;
    c.flags &= ~(unsigned)GNN_CSR_SORTED;
    assert_int_equal(gnn_csr_validate(&c), 0);

    /* rows 0 [] | 1 [2] | 2 [0 1]: the edge 0 -> 2 lacks its reverse, found
     * at row 1 by row 2's unused first entry (the one-pass check for
     * sorted, deduplicated rows), and by the transpose-based check */
    {
        gnn_eid_t ip[] = {0, 0, 1, 3};
        gnn_vid_t ix[] = {2, 0, 1};
        gnn_csr_t h = {.n_rows = 3, .n_cols = 3, .nnz = 3, .indptr = ip, .indices = ix,
                       .flags = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC};
        expect_corrupt(&h, "not symmetric: edge 0 -> 2 has no reverse");
        h.flags = GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC;
        expect_corrupt(&h, "not symmetric: edge 0 -> 2 has no reverse");
    }

    /* structure */
    c = good;
    c.indptr = NULL;
    expect_corrupt(&c, "indptr");
    c = good;
    c.indices = NULL;
    expect_corrupt(&c, "indices");
    c = good;
    c.n_rows = -1;
    expect_corrupt(&c, "negative");
    c = good;
    c.nnz = -2;
    expect_corrupt(&c, "negative");

    gnn_eid_t indptr[] = {0, 1, 2};
    gnn_vid_t indices[] = {1, 0};
    gnn_csr_t rect = {.n_rows = 2, .n_cols = 3, .nnz = 2, .indptr = indptr, .indices = indices,
                      .flags = GNN_CSR_SYMMETRIC};
    expect_corrupt(&rect, "not square");

    gnn_csr_free(&good);
    gnn_csr_free(&sym);
}

/* ---- Random graphs against a naive reference --------------------------------------- */

typedef struct {
    gnn_vid_t id;
    float w;
} entry_t;

/* Row v as the contract describes it, built the slow way. Returns its length. */
static gnn_eid_t reference_row(gnn_vid_t v, gnn_eid_t m, const gnn_vid_t *src,
                               const gnn_vid_t *dst, const float *w, unsigned options,
                               entry_t *row)
{
    gnn_eid_t k = 0;
    int drop = (options & GNN_BUILD_NO_SELF_LOOPS) != 0;
    for (gnn_eid_t i = 0; i < m; i++)
        if (dst[i] == v && !(drop && src[i] == dst[i]))
            row[k++] = (entry_t){src[i], w ? w[i] : 0.0f};
    if (options & GNN_BUILD_SYMMETRIZE)
        for (gnn_eid_t i = 0; i < m; i++)
            if (src[i] == v && !(drop && src[i] == dst[i]))
                row[k++] = (entry_t){dst[i], w ? w[i] : 0.0f};
    if (options & (GNN_BUILD_SORT | GNN_BUILD_DEDUPE)) { /* stable: bubble to place */
        for (gnn_eid_t i = 0; i < k; i++)
            for (gnn_eid_t j = i; j > 0 && row[j - 1].id > row[j].id; j--) {
                entry_t e = row[j];
                row[j] = row[j - 1];
                row[j - 1] = e;
            }
    }
    if (options & GNN_BUILD_DEDUPE) {
        gnn_eid_t kept = 0;
        for (gnn_eid_t i = 0; i < k; i++)
            if (kept == 0 || row[kept - 1].id != row[i].id) row[kept++] = row[i];
        k = kept;
    }
    return k;
}

static void check_random_graph(uint64_t *rng, int round)
{
    gnn_vid_t n = 1 + rng_below(rng, round % 3 == 0 ? 3 : 40);
    gnn_eid_t m = rng_below(rng, round % 3 == 0 ? 400 : 200);
    unsigned options = (unsigned)rng_below(rng, 16);
    int weighted = (int)rng_below(rng, 2);

    gnn_vid_t *src = malloc((size_t)(m + 1) * sizeof *src);
    gnn_vid_t *dst = malloc((size_t)(m + 1) * sizeof *dst);
    float *w = malloc((size_t)(m + 1) * sizeof *w);
    entry_t *row = malloc((size_t)(2 * m + 1) * sizeof *row);
    assert_true(src && dst && w && row);
    int has_loop = 0;
    for (gnn_eid_t i = 0; i < m; i++) {
        src[i] = rng_below(rng, n);
        dst[i] = rng_below(rng, n);
        w[i] = (float)i; /* distinct, so the kept entry is identified */
        has_loop |= src[i] == dst[i];
    }
    const float *weights = weighted ? w : NULL;

    gnn_csr_t g, t, tt, sorted;
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, weights, options, &g), 0);
    assert_int_equal(gnn_csr_validate(&g), 0);
    assert_int_equal(g.n_rows, n);
    assert_int_equal(g.indptr[0], 0);
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_eid_t k = reference_row(v, m, src, dst, weights, options, row);
        if (g.indptr[v + 1] - g.indptr[v] != k)
            fail_msg("seed %llu round %d options %u: row %lld has %lld entries, expected %lld",
                     (unsigned long long)g_seed, round, options, (long long)v,
                     (long long)(g.indptr[v + 1] - g.indptr[v]), (long long)k);
        for (gnn_eid_t j = 0; j < k; j++) {
            assert_int_equal(g.indices[g.indptr[v] + j], row[j].id);
            if (weighted) assert_true(g.weights[g.indptr[v] + j] == row[j].w);
        }
    }
    assert_int_equal(g.nnz, g.indptr[n]);

    unsigned flags = 0;
    if (options & (GNN_BUILD_SORT | GNN_BUILD_DEDUPE)) flags |= GNN_CSR_SORTED;
    if (options & GNN_BUILD_DEDUPE) flags |= GNN_CSR_DEDUPED;
    if ((options & GNN_BUILD_NO_SELF_LOOPS) || !has_loop) flags |= GNN_CSR_NO_SELF_LOOPS;
    if (options & GNN_BUILD_SYMMETRIZE) flags |= GNN_CSR_SYMMETRIC;
    assert_int_equal(g.flags, flags);

    /* transpose twice = the rows sorted; column counts = transposed rows */
    assert_int_equal(gnn_csr_transpose(&g, &t), 0);
    assert_int_equal(gnn_csr_validate(&t), 0);
    assert_int_equal(gnn_csr_transpose(&t, &tt), 0);
    assert_int_equal(gnn_csr_copy(&g, &sorted), 0);
    assert_int_equal(gnn_csr_sort_rows(&sorted), 0);
    assert_int_equal(gnn_csr_validate(&sorted), 0);
    assert_true(gnn_csr_equal(&tt, &sorted));
    gnn_eid_t *counts = malloc((size_t)n * sizeof *counts);
    assert_non_null(counts);
    gnn_csr_col_counts(&g, counts);
    for (gnn_vid_t u = 0; u < n; u++) assert_int_equal(counts[u], t.indptr[u + 1] - t.indptr[u]);
    /* symmetric: the transpose is the sorted graph (weights of repeats may
     * pair up differently, so compare the pattern only) */
    if ((options & GNN_BUILD_SYMMETRIZE) && !weighted) assert_true(gnn_csr_equal(&t, &sorted));
    free(counts);
    gnn_csr_free(&t);
    gnn_csr_free(&tt);

    /* sorting afterwards gives what GNN_BUILD_SORT builds */
    gnn_csr_t built_sorted;
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, weights, options | GNN_BUILD_SORT,
                                        &built_sorted),
                     0);
    assert_true(gnn_csr_equal(&built_sorted, &sorted));

    gnn_degree_stats_t s;
    gnn_csr_degree_stats(&g, &s);
    gnn_vid_t hist_total = 0;
    for (int k = 0; k < 64; k++) hist_total += s.hist[k];
    assert_int_equal(hist_total, n);
    assert_true(fabs(s.mean * (double)n - (double)g.nnz) < 1e-6);
    assert_int_equal(g.indptr[s.argmax + 1] - g.indptr[s.argmax], s.max);

    gnn_csr_free(&g);
    gnn_csr_free(&sorted);
    gnn_csr_free(&built_sorted);
    free(src);
    free(dst);
    free(w);
    free(row);
}

static void test_random_against_reference(void **state)
{
    (void)state;
    uint64_t rng = g_seed;
    for (int round = 0; round < 600; round++) check_random_graph(&rng, round);
}

/* ---- Allocation failure ---------------------------------------------------------- */

/* A graph whose build allocates everything it can: weights, a long unsorted
 * row (merge-sort scratch) and repeats (dedupe shrinks the arrays). */
typedef struct {
    gnn_vid_t src[200], dst[200];
    float w[200];
    gnn_eid_t m;
} edge_list_t;

static void make_heavy_edges(edge_list_t *e)
{
    e->m = 0;
    for (gnn_vid_t u = 59; u >= 1; u--) { /* row 0: 59 sources, descending */
        e->src[e->m] = u;
        e->dst[e->m] = 0;
        e->w[e->m] = (float)e->m;
        e->m++;
    }
    for (gnn_vid_t u = 1; u < 40; u += 3) { /* repeats, and reverses of the above */
        e->src[e->m] = 0;
        e->dst[e->m] = u;
        e->w[e->m] = (float)e->m;
        e->m++;
        e->src[e->m] = u;
        e->dst[e->m] = 0;
        e->w[e->m] = (float)e->m;
        e->m++;
    }
    e->src[e->m] = 7; /* a self loop */
    e->dst[e->m] = 7;
    e->w[e->m] = (float)e->m;
    e->m++;
}

static void test_alloc_failure(void **state)
{
    (void)state;
    static edge_list_t e;
    make_heavy_edges(&e);
    const unsigned options = GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE;
    gnn_csr_t want, want_t, g, t;
    assert_int_equal(gnn_csr_from_edges(60, e.m, e.src, e.dst, e.w, options, &want), 0);
    assert_true(want.nnz < 2 * e.m); /* dedupe really removed entries */
    assert_int_equal(gnn_csr_transpose(&want, &want_t), 0);

    int n_failed = 0, rc;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        scribble(&g);
        rc = gnn_csr_from_edges(60, e.m, e.src, e.dst, e.w, options, &g);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_int_equal(gnn_error_code(), GNN_ENOMEM);
        assert_true(is_zeroed(&g));
        n_failed++;
    }
    assert_int_equal(n_failed, 7); /* indptr, indices, weights, 2 scratch, 2 shrinks */
    assert_true(gnn_csr_equal(&g, &want));
    assert_int_equal(g.flags, want.flags);
    gnn_csr_free(&g);

    n_failed = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        scribble(&t);
        rc = gnn_csr_transpose(&want, &t);
        gnn_alloc_fail_at(0);
        if (rc == 0) break;
        assert_int_equal(rc, GNN_ENOMEM);
        assert_true(is_zeroed(&t));
        n_failed++;
    }
    assert_int_equal(n_failed, 3);
    assert_true(gnn_csr_equal(&t, &want_t));
    gnn_csr_free(&t);

    n_failed = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        scribble(&g);
        rc = gnn_csr_copy(&want, &g);
        gnn_alloc_fail_at(0);
        if (rc == 0) break;
        assert_int_equal(rc, GNN_ENOMEM);
        assert_true(is_zeroed(&g));
        n_failed++;
    }
    assert_int_equal(n_failed, 3);
    assert_true(gnn_csr_equal(&g, &want));
    gnn_csr_free(&g);

    /* sort_rows: a failure leaves the graph as it was */
    gnn_csr_t unsorted, before;
    assert_int_equal(gnn_csr_from_edges(60, e.m, e.src, e.dst, e.w, GNN_BUILD_SYMMETRIZE,
                                        &unsorted),
                     0);
    assert_int_equal(gnn_csr_copy(&unsorted, &before), 0);
    n_failed = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        rc = gnn_csr_sort_rows(&unsorted);
        gnn_alloc_fail_at(0);
        if (rc == 0) break;
        assert_int_equal(rc, GNN_ENOMEM);
        assert_true(gnn_csr_equal(&unsorted, &before));
        assert_int_equal(unsorted.flags, before.flags);
        n_failed++;
    }
    assert_int_equal(n_failed, 2);
    assert_int_equal(gnn_csr_validate(&unsorted), 0);

    /* validate needs memory for deduped-unsorted and symmetric-unsorted claims */
    gnn_csr_free(&before);
    gnn_csr_t deduped;
    assert_int_equal(gnn_csr_copy(&want, &deduped), 0);
    deduped.flags = GNN_CSR_SYMMETRIC | GNN_CSR_DEDUPED;
    n_failed = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        rc = gnn_csr_validate(&deduped);
        gnn_alloc_fail_at(0);
        if (rc == 0) break;
        assert_int_equal(rc, GNN_ENOMEM);
        n_failed++;
    }
    assert_int_equal(n_failed, 3); /* seen marks, transpose indptr and indices */

    gnn_csr_free(&deduped);
    gnn_csr_free(&unsorted);
    gnn_csr_free(&want);
    gnn_csr_free(&want_t);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_csr: seed %llu (GNN_TEST_SEED=%llu to replay)\n", (unsigned long long)g_seed,
           (unsigned long long)g_seed);
    fflush(stdout);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_keeps_input_order),
        cmocka_unit_test(test_sort_is_stable),
        cmocka_unit_test(test_dedupe_keeps_first_weight),
        cmocka_unit_test(test_self_loops),
        cmocka_unit_test(test_symmetrize),
        cmocka_unit_test(test_transpose),
        cmocka_unit_test(test_transpose_rectangular),
        cmocka_unit_test(test_transpose_threads),
        cmocka_unit_test(test_copy_equal_sort_rows),
        cmocka_unit_test(test_rows),
        cmocka_unit_test(test_degree_stats),
        cmocka_unit_test(test_out_of_range_and_bad_arguments),
        cmocka_unit_test(test_empty_graphs),
        cmocka_unit_test(test_validate_catches_corruption),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
