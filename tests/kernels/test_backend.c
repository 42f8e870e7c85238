/*
 * Tests of the backend interface (kernels/backend.h) on the CPU backend.
 *
 * Opening by name and its errors; buffers (alignment, upload, download,
 * copy, zero); every dense operation through the backend gives the same
 * bits as the kernel it dispatches to (the row-sparse optimisers and row
 * copies on cpu-as-gpu too, which refuses host pointers); aggregation with
 * each built-in of the registry gives the same bits as kernels/spmm.h,
 * forward and backward;
 * the aggregation errors a user can meet (workspace too small, a graph of
 * another backend, a definition without CPU entry points, a failing
 * plug-in entry point with and without a message); allocation failures
 * while preparing a graph; a graph staged on another thread and placed
 * later; the step scalars a captured step reads (dropout offsets, Adam's
 * bias corrections). GNN_TEST_SEED replays a seed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/aggr.h"
#include "kernels/backend.h"
#include "kernels/backend_impl.h"
#include "kernels/spmm.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

static float rng_float(uint64_t *s)
{
    return (float)(tu_rng_next(s) >> 40) * 0x1p-23f - 1.0f;
}

static float *rand_floats(uint64_t *s, int64_t n)
{
    float *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = rng_float(s);
    return a;
}

static void expect_error(int rc, int code, const char *want)
{
    assert_int_equal(rc, code);
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

static void expect_same(const void *a, const void *b, size_t bytes, const char *what)
{
    if (memcmp(a, b, bytes)) fail_msg("%s: backend result differs from the kernel (seed %" PRIu64 ")", what, g_seed);
}

/* A backend buffer holding a copy of host data. */
static void *up(gnn_backend_t *be, const void *host, size_t bytes)
{
    void *d = NULL;
    assert_int_equal(gnn_be_alloc(be, bytes, &d), 0);
    assert_int_equal(gnn_be_upload(be, d, host, bytes), 0);
    return d;
}

/* Random in-edge CSR: n_dst x n_src, m entries, rows v % 4 == 1 empty, row
 * 2 a hub with about a third of the entries. */
static void make_graph(uint64_t *s, gnn_vid_t n_dst, gnn_vid_t n_src, gnn_eid_t m, gnn_csr_t *a)
{
    gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    float *w = malloc((size_t)m * sizeof *w);
    assert_true(src && dst && w);
    for (gnn_eid_t i = 0; i < m; i++) {
        gnn_vid_t v;
        if (tu_rng_next(s) % 3 == 0)
            v = 2;
        else
            do v = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n_dst);
            while (v % 4 == 1);
        dst[i] = v;
        src[i] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n_src);
        w[i] = rng_float(s);
    }
    /* Build as a square graph over max(n_dst, n_src) nodes, then cut the
     * rows to n_dst (the sources keep their range). */
    gnn_vid_t n = n_dst > n_src ? n_dst : n_src;
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, w, GNN_BUILD_SORT, a), 0);
    a->n_rows = n_dst;
    a->n_cols = n_src;
    free(src), free(dst), free(w);
}

/* ---- Opening ---------------------------------------------------------------- */

static void test_open(void **state)
{
    (void)state;
    gnn_backend_t *be = (gnn_backend_t *)(uintptr_t)1;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_backend_kind(be), GNN_BACKEND_CPU);
    assert_true(!strncmp(gnn_backend_describe(be), "cpu (", 5));
    gnn_backend_close(be);

    be = (gnn_backend_t *)(uintptr_t)1;
    expect_error(gnn_backend_open("gpu", &be), GNN_EINVAL,
                 "unknown device \"gpu\" (expected cpu, cuda, cuda:N, auto or cpu-as-gpu)");
    assert_null(be);
    expect_error(gnn_backend_open("cuda:x", &be), GNN_EINVAL, "unknown device \"cuda:x\"");
    expect_error(gnn_backend_open(NULL, &be), GNN_EINVAL, "NULL name");

    /* No GPU here (this test is not in the cuda label): a clear ENODEV. */
    int rc = gnn_backend_open("cuda", &be);
    if (rc == 0) {
        gnn_backend_close(be);
        skip();
    }
    /* ENODEV without a GPU; a GPU with no CUDA backend in this version: EUNSUPPORTED. */
    assert_true(rc == GNN_ENODEV || rc == GNN_EUNSUPPORTED);
    assert_true(strstr(gnn_error_message(), "CUDA") != NULL);
    assert_null(be);

    /* auto falls back to the CPU. */
    assert_int_equal(gnn_backend_open("auto", &be), 0);
    assert_int_equal(gnn_backend_kind(be), GNN_BACKEND_CPU);
    gnn_backend_close(be);
    gnn_backend_close(NULL);
}

/* ---- Memory ----------------------------------------------------------------- */

static void test_memory(void **state)
{
    (void)state;
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    void *z0 = NULL, *z1 = NULL;
    assert_int_equal(gnn_be_alloc(be, 0, &z0), 0);
    assert_int_equal(gnn_be_alloc(be, 0, &z1), 0);
    assert_true(z0 && z1 && z0 != z1);
    gnn_be_free(be, z0), gnn_be_free(be, z1), gnn_be_free(be, NULL);

    uint64_t s = g_seed;
    float *h = rand_floats(&s, 1001), back[1001];
    float *d = up(be, h, sizeof(float) * 1001), *d2 = NULL;
    assert_int_equal((uintptr_t)d % 64, 0);
    assert_int_equal(gnn_be_alloc(be, sizeof back, (void **)&d2), 0);
    assert_int_equal(gnn_be_copy(be, d2, d, sizeof back), 0);
    assert_int_equal(gnn_be_download(be, back, d2, sizeof back), 0);
    expect_same(back, h, sizeof back, "upload, copy, download");
    assert_int_equal(gnn_be_zero(be, d2, 10 * sizeof(float)), 0);
    assert_int_equal(gnn_be_download(be, back, d2, sizeof back), 0);
    for (int i = 0; i < 10; i++) assert_true(back[i] == 0.0f);
    assert_true(back[10] == h[10]);
    assert_int_equal(gnn_be_sync(be), 0);
    expect_error(gnn_be_upload(be, NULL, h, 4), GNN_EINVAL, "gnn_be_upload: NULL argument");

    /* upload_take: the CPU backend adopts the host buffer as it is. */
    float *take = gnn_malloc(4 * sizeof(float)), *took = NULL;
    assert_non_null(take);
    for (int i = 0; i < 4; i++) take[i] = (float)i;
    float *keep = take;
    assert_int_equal(gnn_be_upload_take(be, (void **)&take, 4 * sizeof(float), (void **)&took), 0);
    assert_null(take);
    assert_ptr_equal(took, keep);
    assert_int_equal(gnn_be_download(be, back, took, 4 * sizeof(float)), 0);
    for (int i = 0; i < 4; i++) assert_true(back[i] == (float)i);
    gnn_be_free(be, took);

    /* An allocation that fails reports ENOMEM and leaves *out NULL. */
    void *p = (void *)1;
    gnn_alloc_fail_at(1);
    expect_error(gnn_be_alloc(be, 100, &p), GNN_ENOMEM, "out of memory");
    gnn_alloc_fail_at(0);
    assert_null(p);

    gnn_be_free(be, d), gnn_be_free(be, d2);
    free(h);
    gnn_backend_close(be);
}

/* ---- Dense operations ------------------------------------------------------- */

static void test_dense_matches_kernels(void **state)
{
    (void)state;
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    uint64_t s = g_seed ^ 0x64656e;
    const int64_t m = 37, k = 19, n = 11, rows = m;
    size_t fb = sizeof(float);

    float *a = rand_floats(&s, m * k), *b = rand_floats(&s, k * n), *c = rand_floats(&s, m * n);
    float *want = malloc(m * n * fb), *got = malloc(m * n * fb);
    assert_true(want && got);
    float *da = up(be, a, m * k * fb), *db = up(be, b, k * n * fb), *dc = up(be, c, m * n * fb);
    /* C = A^T-less product with beta 0.5, and a transposed variant. */
    memcpy(want, c, m * n * fb);
    assert_int_equal(gnn_gemm(0, 0, m, n, k, 1.5f, a, k, b, n, 0.5f, want, n), 0);
    assert_int_equal(gnn_be_gemm(be, 0, 0, m, n, k, 1.5f, da, k, db, n, 0.5f, dc, n), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "gemm");
    assert_int_equal(gnn_gemm(1, 0, k, n, m, 1.0f, a, k, want, n, 0.0f, b, n), 0);
    assert_int_equal(gnn_be_gemm(be, 1, 0, k, n, m, 1.0f, da, k, dc, n, 0.0f, db, n), 0);
    float *bb = malloc(k * n * fb);
    assert_non_null(bb);
    assert_int_equal(gnn_be_download(be, bb, db, k * n * fb), 0);
    expect_same(bb, b, k * n * fb, "gemm A^T");
    expect_error(gnn_be_gemm(be, 0, 0, -1, n, k, 1, da, k, db, n, 0, dc, n), GNN_EINVAL,
                 "negative size");

    /* bias add / grad, relu, dropout, axpby on the m x n matrix c. */
    float *bias = rand_floats(&s, n), *dbias = malloc(n * fb), *hb = malloc(n * fb);
    assert_true(dbias && hb);
    float *dbi = up(be, bias, n * fb), *ddb = NULL;
    assert_int_equal(gnn_be_alloc(be, n * fb, (void **)&ddb), 0);
    memcpy(want, c, m * n * fb);
    assert_int_equal(gnn_be_upload(be, dc, c, m * n * fb), 0);
    assert_int_equal(gnn_bias_add(rows, n, want, bias), 0);
    assert_int_equal(gnn_be_bias_add(be, rows, n, dc, dbi), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "bias_add");
    assert_int_equal(gnn_bias_grad(rows, n, want, hb), 0);
    assert_int_equal(gnn_be_bias_grad(be, rows, n, dc, ddb), 0);
    assert_int_equal(gnn_be_download(be, dbias, ddb, n * fb), 0);
    expect_same(dbias, hb, n * fb, "bias_grad");
    assert_int_equal(gnn_relu(m * n, want, want), 0);
    assert_int_equal(gnn_be_relu(be, m * n, dc, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "relu");
    assert_int_equal(gnn_relu_backward(m * n, want, c, want), 0);
    float *dcc = up(be, c, m * n * fb);
    assert_int_equal(gnn_be_relu_backward(be, m * n, dc, dcc, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "relu_backward");
    assert_int_equal(gnn_dropout(m * n, 0.3f, 42, 7, c, want), 0);
    assert_int_equal(gnn_be_dropout(be, m * n, 0.3f, 42, 7, dcc, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "dropout");
    assert_int_equal(gnn_dropout_backward(m * n, 0.3f, 42, 7, c, want), 0);
    assert_int_equal(gnn_be_dropout_backward(be, m * n, 0.3f, 42, 7, dcc, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "dropout_backward");
    assert_int_equal(gnn_axpby(m * n, 2.0f, c, -1.0f, want), 0);
    assert_int_equal(gnn_be_axpby(be, m * n, 2.0f, dcc, -1.0f, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "axpby");

    /* gather_rows, softmax cross-entropy, count_correct, argmax. */
    int64_t idx[5] = {3, 0, 36, 3, 17}, labels[37];
    for (int64_t r = 0; r < rows; r++) labels[r] = (int64_t)(tu_rng_next(&s) % (uint64_t)n);
    int64_t *didx = up(be, idx, sizeof idx), *dlab = up(be, labels, sizeof labels);
    assert_int_equal(gnn_gather_rows(5, n, c, rows, idx, want), 0);
    assert_int_equal(gnn_be_gather_rows(be, 5, n, dcc, rows, didx, dc), 0);
    assert_int_equal(gnn_be_download(be, got, dc, 5 * n * fb), 0);
    expect_same(got, want, 5 * n * fb, "gather_rows");
    int64_t sel[4] = {0, 5, 17, 36};
    int64_t *dsel = up(be, sel, sizeof sel);
    double loss_want, loss_got;
    assert_int_equal(gnn_softmax_xent(rows, n, c, labels, sel, 4, &loss_want, want), 0);
    assert_int_equal(gnn_be_softmax_xent(be, rows, n, dcc, dlab, dsel, 4, &loss_got, dc), 0);
    assert_true(loss_got == loss_want);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "softmax_xent gradient");
    double *dloss = NULL, loss_async = -1.0;
    assert_int_equal(gnn_be_alloc(be, sizeof(double), (void **)&dloss), 0);
    assert_int_equal(gnn_be_softmax_xent_async(be, rows, n, dcc, dlab, dsel, 4, dloss, dc), 0);
    assert_int_equal(gnn_be_download(be, &loss_async, dloss, sizeof loss_async), 0);
    assert_true(loss_async == loss_want);
    assert_int_equal(gnn_be_download(be, got, dc, m * n * fb), 0);
    expect_same(got, want, m * n * fb, "queued softmax_xent gradient");
    gnn_be_free(be, dloss);
    int64_t cw, cg, am_want[37], am_got[37];
    assert_int_equal(gnn_count_correct(rows, n, c, labels, NULL, rows, &cw), 0);
    assert_int_equal(gnn_be_count_correct(be, rows, n, dcc, dlab, NULL, rows, &cg), 0);
    assert_int_equal(cg, cw);
    int64_t *dam = NULL;
    assert_int_equal(gnn_be_alloc(be, sizeof am_got, (void **)&dam), 0);
    assert_int_equal(gnn_argmax_rows(rows, n, c, am_want), 0);
    assert_int_equal(gnn_be_argmax_rows(be, rows, n, dcc, dam), 0);
    assert_int_equal(gnn_be_download(be, am_got, dam, sizeof am_got), 0);
    expect_same(am_got, am_want, sizeof am_got, "argmax_rows");

    /* Adam: three steps on both sides. */
    int64_t np = 101;
    float *w = rand_floats(&s, np), *g = rand_floats(&s, np);
    float *mw = calloc(np, fb), *vw = calloc(np, fb), *wg = malloc(np * fb);
    assert_true(mw && vw && wg);
    float *dw = up(be, w, np * fb), *dg = up(be, g, np * fb), *dm = up(be, mw, np * fb),
          *dv = up(be, vw, np * fb);
    gnn_adam_opts_t o = gnn_adam_defaults();
    o.lr = 0.01f;
    o.weight_decay = 5e-4f;
    for (int64_t step = 1; step <= 3; step++) {
        assert_int_equal(gnn_adam(np, w, g, mw, vw, &o, step), 0);
        assert_int_equal(gnn_be_adam(be, np, dw, dg, dm, dv, &o, step), 0);
    }
    assert_int_equal(gnn_be_download(be, wg, dw, np * fb), 0);
    expect_same(wg, w, np * fb, "adam");
    expect_error(gnn_be_adam(be, np, dw, dg, dm, dv, &o, 0), GNN_EINVAL, "step");

    void *bufs[] = {da, db, dc, dbi, ddb, dcc, didx, dlab, dsel, dam, dw, dg, dm, dv};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gnn_be_free(be, bufs[i]);
    free(a), free(b), free(c), free(want), free(got), free(bb), free(bias), free(dbias), free(hb);
    free(w), free(g), free(mw), free(vw), free(wg);
    gnn_backend_close(be);
}

/* ---- Row-sparse optimisers, row copies, free memory ------------------------- */

/* On "cpu" and on "cpu-as-gpu": gnn_be_sparse_opt_step (adam, adagrad with
 * s2 NULL; rows in a buffer and NULL) and gnn_be_copy_rows (idx in a
 * buffer and NULL, into a block of columns) give the bits of the kernels;
 * a row out of range is refused with the table unchanged; cpu-as-gpu
 * refuses each host pointer; gnn_be_mem_available reports free memory. */
static void test_sparse_opt_copy_rows_match_kernels(void **state)
{
    (void)state;
    static const char *names[] = {"cpu", "cpu-as-gpu"};
    const size_t fb = sizeof(float);
    for (int as_gpu = 0; as_gpu < 2; as_gpu++) {
        gnn_backend_t *be;
        assert_int_equal(gnn_backend_open(names[as_gpu], &be), 0);
        uint64_t s = g_seed ^ 0x73706172;
        const int64_t table_rows = 40, d = 6, ldg = 9, nt = table_rows * d;
        for (int kind = 0; kind < 2; kind++) {
            gnn_sparse_opt_t o;
            memset(&o, 0, sizeof o);
            o.kind = kind ? GNN_SPARSE_ADAGRAD : GNN_SPARSE_ADAM;
            o.lr = 0.05f;
            o.beta1 = 0.9f;
            o.beta2 = 0.999f;
            o.eps = kind ? 1e-10f : 1e-8f;
            float *w = rand_floats(&s, nt), *s1 = calloc(nt, fb), *s2 = calloc(nt, fb);
            float *back = malloc(nt * fb);
            assert_true(s1 && s2 && back);
            float *dw = up(be, w, nt * fb), *ds1 = up(be, s1, nt * fb), *ds2 = up(be, s2, nt * fb);
            float *dsn = kind ? NULL : ds2, *sn = kind ? NULL : s2; /* adagrad: s2 NULL */
            /* Steps over 17, 1, 25 rows (rows 35..39 never), then rows NULL. */
            int64_t perm[35];
            for (int64_t step = 1; step <= 4; step++) {
                static const int64_t counts[4] = {17, 1, 25, 12};
                int64_t n = counts[step - 1];
                for (int64_t i = 0; i < 35; i++) perm[i] = i;
                for (int64_t i = 34; i > 0; i--) {
                    int64_t j = (int64_t)(tu_rng_next(&s) % (uint64_t)(i + 1)), t = perm[i];
                    perm[i] = perm[j], perm[j] = t;
                }
                float *g = rand_floats(&s, n * ldg);
                float *dg = up(be, g, n * ldg * fb);
                int64_t *drows = up(be, perm, sizeof perm), *rows = step == 4 ? NULL : perm;
                assert_int_equal(gnn_sparse_opt_step(&o, n, d, rows, table_rows, g, ldg, w, s1, sn,
                                                     step),
                                 0);
                assert_int_equal(gnn_be_sparse_opt_step(be, &o, n, d, rows ? drows : NULL,
                                                        table_rows, dg, ldg, dw, ds1, dsn, step),
                                 0);
                assert_int_equal(gnn_be_download(be, back, dw, nt * fb), 0);
                expect_same(back, w, nt * fb, "sparse_opt_step w");
                assert_int_equal(gnn_be_download(be, back, ds1, nt * fb), 0);
                expect_same(back, s1, nt * fb, "sparse_opt_step s1");
                assert_int_equal(gnn_be_download(be, back, ds2, nt * fb), 0);
                expect_same(back, s2, nt * fb, "sparse_opt_step s2"); /* adagrad: still 0 */

                /* A row out of range (last position): refused, nothing changed. */
                if (step == 1) {
                    int64_t bad[3] = {4, 0, table_rows};
                    int64_t *dbad = up(be, bad, sizeof bad);
                    expect_error(gnn_be_sparse_opt_step(be, &o, 3, d, dbad, table_rows, dg, ldg,
                                                        dw, ds1, dsn, 2),
                                 GNN_EINVAL, "row 40 at position 2 outside [0, 40)");
                    expect_error(gnn_be_sparse_opt_step(be, &o, n, d, drows, table_rows, dg, ldg,
                                                        dw, ds1, dsn, 0),
                                 GNN_EINVAL, "step 0 < 1");
                    assert_int_equal(gnn_be_download(be, back, dw, nt * fb), 0);
                    expect_same(back, w, nt * fb, "sparse_opt_step w after an error");
                    assert_int_equal(gnn_be_download(be, back, ds1, nt * fb), 0);
                    expect_same(back, s1, nt * fb, "sparse_opt_step s1 after an error");
                    gnn_be_free(be, dbad);
                }
                /* cpu-as-gpu: each host pointer refused, nothing changed. */
                if (as_gpu && step == 2) {
                    expect_error(gnn_be_sparse_opt_step(be, &o, n, d, perm, table_rows, dg, ldg,
                                                        dw, ds1, dsn, 3),
                                 GNN_EINVAL,
                                 "gnn_be_sparse_opt_step: rows is not a buffer of cpu-as-gpu");
                    expect_error(gnn_be_sparse_opt_step(be, &o, n, d, drows, table_rows, g, ldg,
                                                        dw, ds1, dsn, 3),
                                 GNN_EINVAL,
                                 "gnn_be_sparse_opt_step: g is not a buffer of cpu-as-gpu");
                    expect_error(gnn_be_sparse_opt_step(be, &o, n, d, drows, table_rows, dg, ldg,
                                                        w, ds1, dsn, 3),
                                 GNN_EINVAL,
                                 "gnn_be_sparse_opt_step: w is not a buffer of cpu-as-gpu");
                    expect_error(gnn_be_sparse_opt_step(be, &o, n, d, drows, table_rows, dg, ldg,
                                                        dw, s1, dsn, 3),
                                 GNN_EINVAL,
                                 "gnn_be_sparse_opt_step: s1 is not a buffer of cpu-as-gpu");
                    if (!kind)
                        expect_error(gnn_be_sparse_opt_step(be, &o, n, d, drows, table_rows, dg,
                                                            ldg, dw, ds1, s2, 3),
                                     GNN_EINVAL,
                                     "gnn_be_sparse_opt_step: s2 is not a buffer of cpu-as-gpu");
                    assert_int_equal(gnn_be_download(be, back, dw, nt * fb), 0);
                    expect_same(back, w, nt * fb, "sparse_opt_step w after a refusal");
                    assert_int_equal(gnn_be_download(be, back, ds1, nt * fb), 0);
                    expect_same(back, s1, nt * fb, "sparse_opt_step s1 after a refusal");
                }
                gnn_be_free(be, dg), gnn_be_free(be, drows);
                free(g);
            }
            /* Adam without s2: a NULL argument. */
            if (!kind)
                expect_error(gnn_be_sparse_opt_step(be, &o, 1, d, NULL, table_rows, dw, d, dw,
                                                    ds1, NULL, 5),
                             GNN_EINVAL, "gnn_be_sparse_opt_step: NULL argument");
            gnn_be_free(be, dw), gnn_be_free(be, ds1), gnn_be_free(be, ds2);
            free(w), free(s1), free(s2), free(back);
        }

        /* copy_rows: 30 x 11 source, columns 2..9 of it into columns 3..10
         * of a 25 x 14 destination. */
        const int64_t src_rows = 30, lds = 11, n = 25, f = 8, ldd = 14;
        float *src = rand_floats(&s, src_rows * lds), *dst = rand_floats(&s, n * ldd);
        float *want = malloc(n * ldd * fb), *got = malloc(n * ldd * fb);
        int64_t idx[25];
        assert_true(want && got);
        for (int64_t i = 0; i < n; i++) idx[i] = (int64_t)(tu_rng_next(&s) % (uint64_t)src_rows);
        idx[3] = src_rows - 1;
        float *dsrc = up(be, src, src_rows * lds * fb), *ddst = up(be, dst, n * ldd * fb);
        int64_t *didx = up(be, idx, sizeof idx);
        memcpy(want, dst, n * ldd * fb);
        assert_int_equal(gnn_copy_rows(n, f, src + 2, lds, src_rows, idx, want + 3, ldd), 0);
        assert_int_equal(gnn_be_copy_rows(be, n, f, dsrc + 2, lds, src_rows, didx, ddst + 3, ldd), 0);
        assert_int_equal(gnn_be_download(be, got, ddst, n * ldd * fb), 0);
        expect_same(got, want, n * ldd * fb, "copy_rows");
        assert_int_equal(gnn_copy_rows(n - 5, f, src, lds, src_rows, NULL, want, ldd), 0);
        assert_int_equal(gnn_be_copy_rows(be, n - 5, f, dsrc, lds, src_rows, NULL, ddst, ldd), 0);
        assert_int_equal(gnn_be_download(be, got, ddst, n * ldd * fb), 0);
        expect_same(got, want, n * ldd * fb, "copy_rows without idx");
        /* Errors leave dst as it was. */
        int64_t bad[25];
        memcpy(bad, idx, sizeof bad);
        bad[24] = -4;
        int64_t *dbad = up(be, bad, sizeof bad);
        expect_error(gnn_be_copy_rows(be, n, f, dsrc, lds, src_rows, dbad, ddst, ldd), GNN_EINVAL,
                     "index -4 at position 24 outside [0, 30)");
        expect_error(gnn_be_copy_rows(be, n, f, dsrc, f - 1, src_rows, didx, ddst, ldd),
                     GNN_EINVAL, "below the width");
        expect_error(gnn_be_copy_rows(be, src_rows + 1, f, dsrc, lds, src_rows, NULL, ddst, ldd),
                     GNN_EINVAL, "gnn_copy_rows");
        if (as_gpu) {
            expect_error(gnn_be_copy_rows(be, n, f, src, lds, src_rows, didx, ddst, ldd),
                         GNN_EINVAL, "gnn_be_copy_rows: src is not a buffer of cpu-as-gpu");
            expect_error(gnn_be_copy_rows(be, n, f, dsrc, lds, src_rows, idx, ddst, ldd),
                         GNN_EINVAL, "gnn_be_copy_rows: idx is not a buffer of cpu-as-gpu");
            expect_error(gnn_be_copy_rows(be, n, f, dsrc, lds, src_rows, didx, got, ldd),
                         GNN_EINVAL, "gnn_be_copy_rows: dst is not a buffer of cpu-as-gpu");
        }
        assert_int_equal(gnn_be_download(be, got, ddst, n * ldd * fb), 0);
        expect_same(got, want, n * ldd * fb, "copy_rows after an error");
        expect_error(gnn_be_copy_rows(be, n, f, NULL, lds, src_rows, didx, ddst, ldd), GNN_EINVAL,
                     "gnn_be_copy_rows: NULL argument");
        gnn_be_free(be, dsrc), gnn_be_free(be, ddst), gnn_be_free(be, didx), gnn_be_free(be, dbad);
        free(src), free(dst), free(want), free(got);

        /* scatter_rows: 12 rows of 5 from a 12 x 7 source into distinct rows
         * of a 20 x 9 destination, columns 1..5; each source row lands on
         * its row, the other rows and columns are untouched. */
        {
            const int64_t ns = 12, fs = 5, lss = 7, nd = 20, lsd = 9;
            float *sr = rand_floats(&s, ns * lss), *dd = rand_floats(&s, nd * lsd);
            float *wt = malloc(nd * lsd * fb), *gt = malloc(nd * lsd * fb);
            int64_t to[12] = {19, 0, 7, 3, 11, 18, 2, 9, 14, 5, 16, 1};
            assert_true(wt && gt);
            memcpy(wt, dd, nd * lsd * fb);
            for (int64_t i = 0; i < ns; i++)
                for (int64_t k = 0; k < fs; k++) wt[to[i] * lsd + 1 + k] = sr[i * lss + k];
            float *dsr = up(be, sr, ns * lss * fb), *ddd = up(be, dd, nd * lsd * fb);
            int64_t *dto = up(be, to, sizeof to);
            assert_int_equal(gnn_be_scatter_rows(be, ns, fs, dsr, lss, dto, ddd + 1, lsd, nd), 0);
            assert_int_equal(gnn_be_download(be, gt, ddd, nd * lsd * fb), 0);
            expect_same(gt, wt, nd * lsd * fb, "scatter_rows");
            /* A repeated row and a row out of range: refused, nothing written. */
            int64_t rep[12], far[12];
            memcpy(rep, to, sizeof rep);
            memcpy(far, to, sizeof far);
            rep[7] = 3;
            far[4] = 20;
            int64_t *drep = up(be, rep, sizeof rep), *dfar = up(be, far, sizeof far);
            float *fresh = up(be, dd, nd * lsd * fb);
            expect_error(gnn_be_scatter_rows(be, ns, fs, dsr, lss, drep, fresh, lsd, nd),
                         GNN_EINVAL, "gnn_scatter_rows: row 3 given twice (position 7)");
            expect_error(gnn_be_scatter_rows(be, ns, fs, dsr, lss, dfar, fresh, lsd, nd),
                         GNN_EINVAL, "index 20 at position 4 outside [0, 20)");
            assert_int_equal(gnn_be_download(be, gt, fresh, nd * lsd * fb), 0);
            expect_same(gt, dd, nd * lsd * fb, "scatter_rows after an error");
            if (as_gpu)
                expect_error(gnn_be_scatter_rows(be, ns, fs, dsr, lss, to, ddd, lsd, nd),
                             GNN_EINVAL, "gnn_be_scatter_rows: idx is not a buffer of cpu-as-gpu");
            gnn_be_free(be, dsr), gnn_be_free(be, ddd), gnn_be_free(be, dto);
            gnn_be_free(be, drep), gnn_be_free(be, dfar), gnn_be_free(be, fresh);
            free(sr), free(dd), free(wt), free(gt);
        }

        /* Free memory: some, in bytes. */
        size_t avail = 0;
        assert_int_equal(gnn_be_mem_available(be, &avail), 0);
        assert_true(avail > 0);
        expect_error(gnn_be_mem_available(be, NULL), GNN_EINVAL, "NULL argument");

        /* The most held: on cpu-as-gpu its buffers' bytes (8 MB held once,
         * then freed, counted), not host memory it maps; unknown on the
         * CPU. */
        size_t peak = 1, before = 0, after = 0;
        if (!as_gpu) {
            expect_error(gnn_be_mem_peak(be, &peak), GNN_EUNSUPPORTED,
                         "gnn_be_mem_peak: not known on cpu");
            assert_int_equal(peak, 0);
        } else {
            assert_int_equal(gnn_be_mem_peak(be, &before), 0);
            void *big = NULL, *dev = NULL;
            static float mapped[1 << 18];
            assert_int_equal(gnn_be_map_host(be, mapped, sizeof mapped, &dev), 0);
            assert_int_equal(gnn_be_mem_peak(be, &after), 0);
            assert_int_equal(after, before);
            gnn_be_unmap_host(be, mapped);
            assert_int_equal(gnn_be_alloc(be, (size_t)8 << 20, &big), 0);
            gnn_be_free(be, big);
            assert_int_equal(gnn_be_mem_peak(be, &after), 0);
            assert_true(after >= ((size_t)8 << 20) && after <= before + ((size_t)8 << 20));
        }
        expect_error(gnn_be_mem_peak(be, NULL), GNN_EINVAL, "NULL argument");
        gnn_backend_close(be);
    }
}

/* ---- Aggregation ------------------------------------------------------------ */

static void test_builtins_match_spmm(void **state)
{
    (void)state;
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    uint64_t s = g_seed ^ 0x616767;
    static const struct { gnn_vid_t n_dst, n_src; gnn_eid_t m; } shapes[] = {
        {300, 300, 3000}, {50, 140, 900}, {6, 9, 0}};
    static const int64_t widths[] = {1, 7, 64};
    for (size_t sh = 0; sh < 3; sh++)
        for (size_t wi = 0; wi < 3; wi++) {
            gnn_csr_t a;
            make_graph(&s, shapes[sh].n_dst, shapes[sh].n_src, shapes[sh].m, &a);
            int64_t f = widths[wi], nd = a.n_rows, ns = a.n_cols;
            gnn_bgraph_t *bg;
            gnn_spmm_graph_t *sg;
            assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
            assert_int_equal(gnn_spmm_graph_create(&a, &sg), 0);
            assert_int_equal(gnn_bgraph_n_dst(bg), nd);
            assert_int_equal(gnn_bgraph_n_src(bg), ns);
            assert_int_equal(gnn_bgraph_nnz(bg), a.nnz);
            float *x = rand_floats(&s, ns * f), *dy = rand_floats(&s, nd * f);
            float *y = malloc((nd * f + 1) * sizeof(float)), *dx = malloc((ns * f + 1) * sizeof(float));
            float *yg = malloc((nd * f + 1) * sizeof(float)), *dxg = malloc((ns * f + 1) * sizeof(float));
            int32_t *am = malloc((nd * f + 1) * sizeof(int32_t));
            assert_true(y && dx && yg && dxg && am);
            float *dxd = up(be, x, ns * f * sizeof(float)), *ddy = up(be, dy, nd * f * sizeof(float));
            float *dyd = NULL, *ddx = NULL;
            assert_int_equal(gnn_be_alloc(be, nd * f * sizeof(float), (void **)&dyd), 0);
            assert_int_equal(gnn_be_alloc(be, ns * f * sizeof(float), (void **)&ddx), 0);
            static const char *names[] = {"sum", "mean", "gcn", "max"};
            for (int ai = 0; ai < 4; ai++) {
                const gnn_aggr_def_t *def;
                assert_int_equal(gnn_aggr_registry_find(reg, names[ai], &def), 0);
                gnn_aggr_t kind;
                assert_int_equal(gnn_aggr_from_name(names[ai], &kind), 0);
                if (kind == GNN_AGGR_GCN && nd > ns) continue;
                size_t wsb;
                assert_int_equal(gnn_be_aggr_workspace(be, bg, def, f, &wsb), 0);
                assert_int_equal(wsb, kind == GNN_AGGR_MAX ? (size_t)(nd * f) * sizeof(int32_t) : 0);
                void *ws = NULL;
                if (wsb) assert_int_equal(gnn_be_alloc(be, wsb, &ws), 0);
                assert_int_equal(gnn_spmm_forward(sg, kind, f, x, y, am), 0);
                assert_int_equal(gnn_spmm_backward(sg, kind, f, dy, am, dx), 0);
                assert_int_equal(gnn_be_aggr_forward(be, bg, def, f, dxd, dyd, ws, wsb), 0);
                assert_int_equal(gnn_be_aggr_backward(be, bg, def, f, dxd, dyd, ddy, ddx, ws, wsb), 0);
                assert_int_equal(gnn_be_download(be, yg, dyd, nd * f * sizeof(float)), 0);
                assert_int_equal(gnn_be_download(be, dxg, ddx, ns * f * sizeof(float)), 0);
                expect_same(yg, y, nd * f * sizeof(float), names[ai]);
                expect_same(dxg, dx, ns * f * sizeof(float), names[ai]);
                if (wsb && nd > 0) {
                    /* Too small a workspace is refused before anything runs. */
                    expect_error(gnn_be_aggr_forward(be, bg, def, f, dxd, dyd, ws, wsb - 1),
                                 GNN_EINVAL, "aggregator max forward: workspace of");
                    expect_error(gnn_be_aggr_backward(be, bg, def, f, dxd, dyd, ddy, ddx, NULL, 0),
                                 GNN_EINVAL, "needs");
                }
                gnn_be_free(be, ws);
            }
            gnn_be_free(be, dxd), gnn_be_free(be, ddy), gnn_be_free(be, dyd), gnn_be_free(be, ddx);
            free(x), free(dy), free(y), free(dx), free(yg), free(dxg), free(am);
            gnn_spmm_graph_free(sg);
            gnn_be_graph_free(bg);
            gnn_csr_free(&a);
        }
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be);
}

/* Entry points of hand-made definitions for the error paths. */
static int fail_with_msg(const gnn_aggr_call_t *call, const float *x, float *y)
{
    (void)x, (void)y;
    snprintf(call->msg, call->msg_size, "boom at width %" PRId64, call->f);
    return 1;
}

static int fail_bare(const gnn_aggr_call_t *call, const float *x, float *y)
{
    (void)call, (void)x, (void)y;
    return 3;
}

static int bw_unused(const gnn_aggr_call_t *call, const float *x, const float *y, const float *dy,
                     float *dx)
{
    (void)call, (void)x, (void)y, (void)dy, (void)dx;
    return 0;
}

static void test_aggr_errors(void **state)
{
    (void)state;
    gnn_backend_t *be, *be2;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_backend_open("cpu", &be2), 0);
    uint64_t s = g_seed ^ 0x657272;
    gnn_csr_t a;
    make_graph(&s, 20, 20, 60, &a);
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
    float x[20 * 4] = {0}, y[20 * 4];

    gnn_aggr_def_t cuda_only = {.abi_version = GNN_AGGR_ABI_VERSION,
                                .name = "gpuonly",
                                .description = "",
                                .cuda_forward = fail_bare,
                                .cuda_backward = bw_unused};
    expect_error(gnn_be_aggr_forward(be, bg, &cuda_only, 4, x, y, NULL, 0), GNN_EUNSUPPORTED,
                 "aggregator gpuonly has no CPU forward");
    expect_error(gnn_be_aggr_backward(be, bg, &cuda_only, 4, x, y, y, x, NULL, 0),
                 GNN_EUNSUPPORTED, "aggregator gpuonly has no CPU backward");

    gnn_aggr_def_t noisy = {.abi_version = GNN_AGGR_ABI_VERSION,
                            .name = "noisy",
                            .description = "",
                            .cpu_forward = fail_with_msg,
                            .cpu_backward = bw_unused};
    expect_error(gnn_be_aggr_forward(be, bg, &noisy, 4, x, y, NULL, 0), GNN_EPLUGIN,
                 "aggregator noisy forward: boom at width 4");
    gnn_aggr_def_t bare = {.abi_version = GNN_AGGR_ABI_VERSION,
                           .name = "bare",
                           .description = "",
                           .cpu_forward = fail_bare,
                           .cpu_backward = bw_unused};
    expect_error(gnn_be_aggr_forward(be, bg, &bare, 4, x, y, NULL, 0), GNN_EPLUGIN,
                 "aggregator bare forward failed (code 3) without a message");
    assert_int_equal(gnn_be_aggr_backward(be, bg, &bare, 4, x, y, y, x, NULL, 0), 0);

    expect_error(gnn_be_aggr_forward(be2, bg, &bare, 4, x, y, NULL, 0), GNN_EINVAL,
                 "graph prepared on another backend");
    expect_error(gnn_be_aggr_forward(be, bg, &bare, 0, x, y, NULL, 0), GNN_EINVAL,
                 "bad feature width 0");
    size_t wsb;
    expect_error(gnn_be_aggr_workspace(be, bg, &bare, -1, &wsb), GNN_EINVAL, "bad feature width");

    /* A built-in's own error comes through with its code and message. */
    gnn_aggr_registry_t *reg;
    const gnn_aggr_def_t *gcn;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    assert_int_equal(gnn_aggr_registry_find(reg, "gcn", &gcn), 0);
    gnn_csr_t r;
    make_graph(&s, 30, 10, 40, &r);
    gnn_bgraph_t *rg;
    assert_int_equal(gnn_be_graph_create(be, &r, &rg), 0);
    float xr[10 * 4] = {0}, yr[30 * 4];
    expect_error(gnn_be_aggr_forward(be, rg, gcn, 4, xr, yr, NULL, 0), GNN_EINVAL,
                 "gcn needs n_dst <= n_src");
    gnn_be_graph_free(rg);
    gnn_csr_free(&r);
    gnn_aggr_registry_free(reg);

    gnn_be_graph_free(bg);
    gnn_be_graph_free(NULL);
    gnn_csr_free(&a);
    gnn_backend_close(be2);
    gnn_backend_close(be);
}

static void test_graph_alloc_failure(void **state)
{
    (void)state;
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    uint64_t s = g_seed ^ 0x616c6c;
    gnn_csr_t a;
    make_graph(&s, 40, 40, 200, &a);
    int n_failed = 0;
    gnn_bgraph_t *g;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        g = (gnn_bgraph_t *)(uintptr_t)1;
        int rc = gnn_be_graph_create(be, &a, &g);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(g);
        n_failed++;
    }
    assert_true(n_failed >= 6);
    gnn_be_graph_free(g);
    gnn_csr_free(&a);
    gnn_backend_close(be);
}

/* ---- cpu-as-gpu ----------------------------------------------------------- */

/* The CPU with a GPU's rules: not host memory, and a pointer outside its
 * buffers (a host array) is refused by every operation, as a GPU would
 * fault on it; a pointer inside a buffer is fine, a freed one is not. */
/* gnn_be_trust_ids: which index arrays later calls may skip checking on
 * the device (gnn__be_trusted), and its refusals. */
static void test_trust_ids(void **state)
{
    (void)state;
    gnn_backend_t *be = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    int64_t *ids = NULL;
    assert_int_equal(gnn_be_alloc(be, 10 * sizeof *ids, (void **)&ids), 0);
    assert_false(gnn__be_trusted(be, ids, 10, 100)); /* nothing vouched for yet */
    assert_int_equal(gnn_be_trust_ids(be, ids, 10, 100), 0);
    assert_true(gnn__be_trusted(be, ids, 10, 100));
    assert_true(gnn__be_trusted(be, ids + 2, 8, 1000)); /* inside, a looser bound */
    assert_false(gnn__be_trusted(be, ids + 2, 9, 100)); /* past the end */
    assert_false(gnn__be_trusted(be, ids, 10, 99));     /* a tighter bound */
    assert_false(gnn__be_trusted(be, (const int64_t *)((const char *)ids + 4), 1, 100));
    assert_false(gnn__be_trusted(be, ids - 1, 1, 100)); /* before it */
    assert_int_equal(gnn_be_trust_ids(be, NULL, 0, 0), 0);
    assert_false(gnn__be_trusted(be, ids, 1, 100));
    expect_error(gnn_be_trust_ids(NULL, ids, 1, 1), GNN_EINVAL, "gnn_be_trust_ids: NULL argument");
    expect_error(gnn_be_trust_ids(be, NULL, 3, 10), GNN_EINVAL, "gnn_be_trust_ids: 3 ids below 10");
    expect_error(gnn_be_trust_ids(be, ids, -1, 10), GNN_EINVAL, "gnn_be_trust_ids: -1 ids");
    gnn_be_free(be, ids);
    gnn_backend_close(be);
}

/* gnn_be_trust_buffer: long-lived buffers of ids vouched for beside the
 * batch's range, until freed (a buffer allocated at the same address
 * afterwards is not), at most GNN__BE_TRUST_BUFFERS at a time (the next
 * is checked); as distinct (no id twice) only where the caller says so,
 * the flag dropped when trusted again without it. */
static void test_trust_buffer(void **state)
{
    (void)state;
    gnn_backend_t *be = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    enum { T = GNN__BE_TRUST_BUFFERS };
    int64_t *buf[T + 2], *batch = NULL;
    for (int i = 0; i < T + 2; i++)
        assert_int_equal(gnn_be_alloc(be, 16 * sizeof(int64_t), (void **)&buf[i]), 0);
    assert_int_equal(gnn_be_alloc(be, 4 * sizeof *batch, (void **)&batch), 0);
    for (int i = 0; i <= T; i++) assert_int_equal(gnn_be_trust_buffer(be, buf[i], 16, 50, 0), 0);
    assert_int_equal(gnn_be_trust_ids(be, batch, 4, 7), 0); /* the batch's range as well */
    for (int i = 0; i < T; i++) {
        assert_true(gnn__be_trusted(be, buf[i], 16, 50));
        assert_true(gnn__be_trusted(be, buf[i] + 4, 12, 60));
        assert_false(gnn__be_trusted(be, buf[i] + 4, 13, 50)); /* past its end */
        assert_false(gnn__be_trusted(be, buf[i], 16, 49));     /* a tighter bound */
    }
    assert_false(gnn__be_trusted(be, buf[T], 1, 50)); /* no slot left for it */
    assert_true(gnn__be_trusted(be, batch, 4, 7));
    /* again for the same buffer: its entry updated, not a second one */
    assert_int_equal(gnn_be_trust_buffer(be, buf[0], 8, 20, 0), 0);
    assert_false(gnn__be_trusted(be, buf[0], 9, 50));
    assert_true(gnn__be_trusted(be, buf[0], 8, 20));
    /* distinct: vouched for as well, or not (in range only) */
    assert_false(gnn__be_trusted_distinct(be, buf[0], 8, 20));
    assert_int_equal(gnn_be_trust_buffer(be, buf[0], 8, 20, 1), 0);
    assert_true(gnn__be_trusted_distinct(be, buf[0] + 2, 6, 30)); /* a part of it too */
    assert_false(gnn__be_trusted_distinct(be, buf[0], 9, 20));
    assert_false(gnn__be_trusted_distinct(be, buf[0], 8, 19));
    assert_false(gnn__be_trusted_distinct(be, batch, 4, 7)); /* the batch's: in range only */
    assert_int_equal(gnn_be_trust_buffer(be, buf[0], 8, 20, 0), 0); /* again, without */
    assert_false(gnn__be_trusted_distinct(be, buf[0], 8, 20));
    assert_true(gnn__be_trusted(be, buf[0], 8, 20));
    /* n 0 ends it; a freed buffer's slot goes to the next */
    assert_int_equal(gnn_be_trust_buffer(be, buf[1], 0, 0, 0), 0);
    assert_false(gnn__be_trusted(be, buf[1], 1, 50));
    gnn_be_free(be, buf[2]);
    int64_t *again = NULL;
    assert_int_equal(gnn_be_alloc(be, 16 * sizeof(int64_t), (void **)&again), 0);
    assert_false(gnn__be_trusted(be, again, 1, 50)); /* whatever its address */
    assert_int_equal(gnn_be_trust_buffer(be, buf[T], 16, 50, 0), 0);
    assert_true(gnn__be_trusted(be, buf[T], 16, 50));
    assert_int_equal(gnn_be_trust_ids(be, NULL, 0, 0), 0); /* the batch's end leaves them */
    assert_true(gnn__be_trusted(be, buf[0], 8, 20));
    assert_false(gnn__be_trusted(be, batch, 4, 7));
    expect_error(gnn_be_trust_buffer(be, NULL, 1, 1, 0), GNN_EINVAL,
                 "gnn_be_trust_buffer: NULL argument");
    expect_error(gnn_be_trust_buffer(be, buf[3], -1, 1, 0), GNN_EINVAL,
                 "gnn_be_trust_buffer: -1 ids below 1");
    for (int i = 0; i < T + 2; i++)
        if (i != 2) gnn_be_free(be, buf[i]);
    gnn_be_free(be, again);
    gnn_be_free(be, batch);
    gnn_backend_close(be);
}

/* Entry points that are never called: what gnn_be_aggr_runs looks at. */
static int none_forward(const gnn_aggr_call_t *c, const float *x, float *y)
{
    (void)c, (void)x, (void)y;
    return 1;
}

static int none_backward(const gnn_aggr_call_t *c, const float *x, const float *y,
                         const float *dy, float *dx)
{
    (void)c, (void)x, (void)y, (void)dy, (void)dx;
    return 1;
}

static int none_score(const gnn_aggr_call_t *c, const float *x, float *s)
{
    (void)c, (void)x, (void)s;
    return 1;
}

static int none_score_backward(const gnn_aggr_call_t *c, const float *x, const float *ds,
                               float *dx)
{
    (void)c, (void)x, (void)ds, (void)dx;
    return 1;
}

/* gnn_be_aggr_runs: the built-ins run on both CPU backends; a definition
 * with only CUDA entry points (a plug-in's GPU build) or an attention
 * function without its score backward is refused, naming what it lacks. */
static void test_aggr_runs(void **state)
{
    (void)state;
    gnn_aggr_registry_t *reg = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    static const char *const names[2] = {"cpu", "cpu-as-gpu"};
    for (int k = 0; k < 2; k++) {
        gnn_backend_t *be = NULL;
        assert_int_equal(gnn_backend_open(names[k], &be), 0);
        for (int i = 0; i < gnn_aggr_registry_count(reg); i++)
            assert_int_equal(gnn_be_aggr_runs(be, gnn_aggr_registry_at(reg, i)), 0);
        gnn_aggr_def_t cuda_only = {.abi_version = GNN_AGGR_ABI_VERSION,
                                    .name = "cudaonly",
                                    .kind = GNN_AGGR_KIND_AGGREGATE,
                                    .cuda_forward = none_forward,
                                    .cuda_backward = none_backward};
        expect_error(gnn_be_aggr_runs(be, &cuda_only), GNN_EUNSUPPORTED,
                     "aggregator cudaonly has no CPU forward and backward");
        cuda_only.cpu_forward = none_forward;
        expect_error(gnn_be_aggr_runs(be, &cuda_only), GNN_EUNSUPPORTED, "no CPU forward");
        cuda_only.cpu_backward = none_backward;
        assert_int_equal(gnn_be_aggr_runs(be, &cuda_only), 0);
        gnn_aggr_def_t attn = {.abi_version = GNN_AGGR_ABI_VERSION,
                               .name = "half",
                               .kind = GNN_AGGR_KIND_ATTENTION,
                               .cpu_score = none_score,
                               .cuda_score = none_score,
                               .cuda_score_backward = none_score_backward};
        expect_error(gnn_be_aggr_runs(be, &attn), GNN_EUNSUPPORTED,
                     "attention function half has no CPU score and score backward");
        attn.cpu_score_backward = none_score_backward;
        assert_int_equal(gnn_be_aggr_runs(be, &attn), 0);
        expect_error(gnn_be_aggr_runs(be, NULL), GNN_EINVAL, "gnn_be_aggr_runs: NULL argument");
        gnn_backend_close(be);
    }
    gnn_aggr_registry_free(reg);
}

/*
 * A capture's rules on cpu-as-gpu (gnn_be_capture_rules_begin/_end): work
 * that a GPU captures passes (a copy between buffers, a gather by trusted
 * ids, a scatter by ids trusted as distinct, a queued loss); each operation that fails a capture is named by
 * end (the first of several), and still runs; the CPU refuses the check.
 */
static void test_capture_rules(void **state)
{
    (void)state;
    gnn_backend_t *be = NULL, *cpu = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    assert_int_equal(gnn_backend_open("cpu", &cpu), 0);
    const int64_t hid[4] = {3, 0, 2, 1}, hlab[4] = {1, 0, 1, 0};
    float hx[8] = {1, 2, 3, 4, 5, 6, 7, 8}, back[8];
    int64_t *ids = NULL, *lab = NULL;
    float *x = NULL, *y = NULL;
    double *loss = NULL;
    assert_int_equal(gnn_be_alloc(be, sizeof hid, (void **)&ids), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof hlab, (void **)&lab), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof hx, (void **)&x), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof hx, (void **)&y), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof *loss, (void **)&loss), 0);
    assert_int_equal(gnn_be_upload(be, ids, hid, sizeof hid), 0);
    assert_int_equal(gnn_be_upload(be, lab, hlab, sizeof hlab), 0);
    assert_int_equal(gnn_be_upload(be, x, hx, sizeof hx), 0);
    /* capturable work */
    assert_int_equal(gnn_be_trust_buffer(be, ids, 4, 4, 1), 0);
    assert_int_equal(gnn_be_capture_rules_begin(be), 0);
    assert_int_equal(gnn_be_copy(be, y, x, sizeof hx), 0);
    assert_int_equal(gnn_be_scatter_rows(be, 4, 2, x, 2, ids, y, 2, 4), 0);
    assert_int_equal(gnn_be_gather_rows(be, 4, 2, x, 4, ids, y), 0);
    assert_int_equal(gnn_be_softmax_xent_async(be, 4, 2, y, lab, NULL, 4, loss, y), 0);
    assert_int_equal(gnn_be_capture_rules_end(be), 0);
    /* each kind of refused operation, run all the same */
    assert_int_equal(gnn_be_trust_buffer(be, ids, 0, 0, 0), 0);
    struct {
        const char *want;
        int which;
    } cases[] = {
        {"gnn_be_gather_rows: its ids checked on the device inside captured work", 0},
        {"gnn_be_download: a copy to host memory, a wait for the device inside captured work", 1},
        {"gnn_be_sync: a wait for the device inside captured work", 2},
        {"gnn_be_upload: a copy from host memory inside captured work", 3},
        {"gnn_be_alloc: an allocation inside captured work", 4},
        {"gnn_be_softmax_xent: the loss read back inside captured work", 5},
        {"gnn_be_host_free: a free of host memory (a wait for the device) inside captured work",
         6},
        {"gnn_be_unmap_host: host memory unmapped (a wait for the device) inside captured work",
         7},
        /* ids trusted in range, not as distinct: their repeats still checked */
        {"gnn_be_scatter_rows: its check of repeats read back inside captured work", 8},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        void *p = NULL, *host = NULL, *dev = NULL;
        double l = 0;
        if (cases[c].which == 6) assert_int_equal(gnn_be_host_alloc(be, 64, &host), 0);
        if (cases[c].which == 7) assert_int_equal(gnn_be_map_host(be, hx, sizeof hx, &dev), 0);
        if (cases[c].which == 8) assert_int_equal(gnn_be_trust_buffer(be, ids, 4, 4, 0), 0);
        assert_int_equal(gnn_be_capture_rules_begin(be), 0);
        assert_int_equal(gnn_be_copy(be, y, x, sizeof hx), 0); /* fine before it */
        switch (cases[c].which) {
        case 0: assert_int_equal(gnn_be_gather_rows(be, 4, 2, x, 4, ids, y), 0); break;
        case 1: assert_int_equal(gnn_be_download(be, back, x, sizeof back), 0); break;
        case 2: assert_int_equal(gnn_be_sync(be), 0); break;
        case 3: assert_int_equal(gnn_be_upload(be, y, hx, sizeof hx), 0); break;
        case 4: assert_int_equal(gnn_be_alloc(be, 64, &p), 0); break;
        case 5: assert_int_equal(gnn_be_softmax_xent(be, 4, 2, x, lab, NULL, 4, &l, y), 0); break;
        case 6: gnn_be_host_free(be, host); break;
        case 7: gnn_be_unmap_host(be, hx); break;
        case 8: assert_int_equal(gnn_be_scatter_rows(be, 4, 2, x, 2, ids, y, 2, 4), 0); break;
        }
        assert_int_equal(gnn_be_sync(be), 0); /* a second: the first is named */
        expect_error(gnn_be_capture_rules_end(be), GNN_ECUDA, cases[c].want);
        if (cases[c].which == 8) assert_int_equal(gnn_be_trust_buffer(be, ids, 0, 0, 0), 0);
        gnn_be_free(be, p);
    }
    /* the result of the gather that broke the rule is there */
    assert_int_equal(gnn_be_gather_rows(be, 4, 2, x, 4, ids, y), 0);
    assert_int_equal(gnn_be_download(be, back, y, sizeof back), 0);
    assert_true(back[0] == 7 && back[1] == 8 && back[2] == 1 && back[7] == 4);
    /* ended, nothing is noted */
    assert_int_equal(gnn_be_sync(be), 0);
    expect_error(gnn_be_capture_rules_end(be), GNN_EINVAL, "gnn_be_capture_rules_end: not begun");
    assert_int_equal(gnn_be_capture_rules_begin(be), 0);
    expect_error(gnn_be_capture_rules_begin(be), GNN_EINVAL, "already begun");
    assert_int_equal(gnn_be_capture_rules_end(be), 0);
    expect_error(gnn_be_capture_rules_begin(cpu), GNN_EUNSUPPORTED,
                 "gnn_be_capture_rules_begin: only where a GPU is emulated");
    gnn_be_free(be, ids);
    gnn_be_free(be, lab);
    gnn_be_free(be, x);
    gnn_be_free(be, y);
    gnn_be_free(be, loss);
    gnn_backend_close(be);
    gnn_backend_close(cpu);
}

/*
 * Step scalars (gnn_be_set_step_scalars) on cpu-as-gpu: while set, every
 * dropout (plain, backward, by rows, fused with bias and activation) draws
 * the mask of its offset plus drop_delta, and Adam takes the bias
 * corrections of the step the scalars hold, bit for bit as the calls with
 * those arguments; cleared, the arguments' own. A CPU backend captures
 * nothing (GNN_EUNSUPPORTED); freeing a buffer moves the free generation.
 */
static void test_step_scalars(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5ca1;
    gnn_backend_t *be = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    const int64_t rows = 37, cols = 13, n = rows * cols;
    const uint64_t seed = 99, off = 1001, delta = 123457;
    float *hx = rand_floats(&s, n), *hb = rand_floats(&s, cols);
    float *x, *b, *y[2];
    int64_t *ids;
    gnn_step_scalars_t *sc;
    assert_int_equal(gnn_be_alloc(be, (size_t)n * 4, (void **)&x), 0);
    assert_int_equal(gnn_be_alloc(be, (size_t)cols * 4, (void **)&b), 0);
    assert_int_equal(gnn_be_alloc(be, (size_t)rows * 8, (void **)&ids), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof *sc, (void **)&sc), 0);
    for (int k = 0; k < 2; k++) assert_int_equal(gnn_be_alloc(be, (size_t)n * 4, (void **)&y[k]), 0);
    assert_int_equal(gnn_be_upload(be, x, hx, (size_t)n * 4), 0);
    assert_int_equal(gnn_be_upload(be, b, hb, (size_t)cols * 4), 0);
    for (int64_t r = 0; r < rows; r++) ids[r] = 5 * r + 2;
    gnn_adam_opts_t ao = gnn_adam_defaults();
    ao.lr = 0.01f;
    ao.weight_decay = 5e-4f;
    gnn_step_scalars_t hs = {.drop_delta = delta};
    gnn_step_scalars_adam(&hs, &ao, 7);
    assert_int_equal(gnn_be_upload(be, sc, &hs, sizeof hs), 0);
    for (int op = 0; op < 5; op++) {
        /* k = 0: with the scalars and the old arguments; 1: the shifted
         * arguments themselves. */
        for (int k = 0; k < 2; k++) {
            assert_int_equal(gnn_be_set_step_scalars(be, k ? NULL : sc), 0);
            const uint64_t o = k ? off + delta : off;
            assert_int_equal(gnn_be_copy(be, y[k], x, (size_t)n * 4), 0);
            switch (op) {
            case 0: assert_int_equal(gnn_be_dropout(be, n, 0.4f, seed, o, x, y[k]), 0); break;
            case 1:
                assert_int_equal(gnn_be_dropout_backward(be, n, 0.4f, seed, o, x, y[k]), 0);
                break;
            case 2:
                assert_int_equal(gnn_be_dropout_rows(be, rows, cols, ids, 0.4f, seed, o, x, y[k]),
                                 0);
                break;
            case 3:
                assert_int_equal(
                    gnn_be_bias_act_drop(be, rows, cols, y[k], b, GNN_ACT_RELU, 0.4f, seed, o, NULL),
                    0);
                break;
            default: { /* Adam at step 2 with the scalars of step 7, and at 7 */
                float *g, *m, *v;
                assert_int_equal(gnn_be_alloc(be, (size_t)n * 4, (void **)&g), 0);
                assert_int_equal(gnn_be_alloc(be, (size_t)n * 4, (void **)&m), 0);
                assert_int_equal(gnn_be_alloc(be, (size_t)n * 4, (void **)&v), 0);
                assert_int_equal(gnn_be_copy(be, g, x, (size_t)n * 4), 0);
                assert_int_equal(gnn_be_zero(be, m, (size_t)n * 4), 0);
                assert_int_equal(gnn_be_zero(be, v, (size_t)n * 4), 0);
                assert_int_equal(gnn_be_adam(be, n, y[k], g, m, v, &ao, k ? 7 : 2), 0);
                gnn_be_free(be, g), gnn_be_free(be, m), gnn_be_free(be, v);
            }
            }
        }
        assert_int_equal(gnn_be_set_step_scalars(be, NULL), 0);
        float *a = malloc((size_t)n * 4), *c = malloc((size_t)n * 4);
        assert_true(a && c);
        assert_int_equal(gnn_be_download(be, a, y[0], (size_t)n * 4), 0);
        assert_int_equal(gnn_be_download(be, c, y[1], (size_t)n * 4), 0);
        static const char *const names[5] = {"dropout", "dropout backward", "dropout by rows",
                                             "bias, relu and dropout", "adam"};
        expect_same(a, c, (size_t)n * 4, names[op]);
        /* and the scalars did something: the old arguments alone differ */
        assert_int_equal(gnn_be_copy(be, y[1], x, (size_t)n * 4), 0);
        if (op == 0) {
            assert_int_equal(gnn_be_dropout(be, n, 0.4f, seed, off, x, y[1]), 0);
            assert_int_equal(gnn_be_download(be, c, y[1], (size_t)n * 4), 0);
            assert_true(memcmp(a, c, (size_t)n * 4) != 0);
        }
        free(a), free(c);
    }
    /* A host pointer is refused as the scalars' buffer; nothing captured
     * on the CPU. */
    expect_error(gnn_be_set_step_scalars(be, &hs), GNN_EINVAL, "is not a buffer of");
    expect_error(gnn_be_capture_begin(be), GNN_EUNSUPPORTED, "no captured work");
    gnn_bcapture_t *cap = NULL;
    expect_error(gnn_be_capture_end(be, &cap), GNN_EINVAL, "not capturing");
    assert_null(cap);
    uint64_t gen = gnn_be_free_generation();
    gnn_be_free(be, sc);
    assert_true(gnn_be_free_generation() > gen);
    gnn_be_free(be, x), gnn_be_free(be, b), gnn_be_free(be, ids);
    gnn_be_free(be, y[0]), gnn_be_free(be, y[1]);
    free(hx), free(hb);
    gnn_backend_close(be);
}

static void test_cpu_as_gpu(void **state)
{
    (void)state;
    gnn_backend_t *be = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    assert_int_equal(gnn_backend_kind(be), GNN_BACKEND_CPU);
    assert_int_equal(gnn_be_host_memory(be), 0);
    assert_non_null(strstr(gnn_backend_describe(be), "cpu-as-gpu"));
    float host[64] = {0}, *buf = NULL, *out = NULL;
    for (int i = 0; i < 64; i++) host[i] = (float)i - 20.0f;
    assert_int_equal(gnn_be_alloc(be, sizeof host, (void **)&buf), 0);
    assert_int_equal(gnn_be_alloc(be, sizeof host, (void **)&out), 0);
    assert_int_equal(gnn_be_upload(be, buf, host, sizeof host), 0);
    assert_int_equal(gnn_be_relu(be, 32, buf + 32, out + 32), 0); /* inside the buffers */
    float back[64];
    assert_int_equal(gnn_be_download(be, back, out + 32, 32 * sizeof(float)), 0);
    for (int i = 0; i < 32; i++) assert_true(back[i] == (host[32 + i] < 0 ? 0.0f : host[32 + i]));
    expect_error(gnn_be_relu(be, 64, host, out), GNN_EINVAL,
                 "gnn_be_relu: x is not a buffer of cpu-as-gpu");
    expect_error(gnn_be_axpby(be, 64, 1.0f, buf, 0.0f, host), GNN_EINVAL,
                 "gnn_be_axpby: y is not a buffer of cpu-as-gpu");
    expect_error(gnn_be_upload(be, host, buf, sizeof host), GNN_EINVAL,
                 "gnn_be_upload: dst is not a buffer of cpu-as-gpu");
    /* Staging memory is host memory: not a buffer of the device. */
    float *stage = NULL;
    assert_int_equal(gnn_be_host_alloc(be, sizeof host, (void **)&stage), 0);
    memcpy(stage, host, sizeof host);
    assert_int_equal(gnn_be_upload(be, buf, stage, sizeof host), 0);
    expect_error(gnn_be_relu(be, 64, stage, out), GNN_EINVAL,
                 "gnn_be_relu: x is not a buffer of cpu-as-gpu");
    gnn_be_host_free(be, stage);
    /* Host memory mapped for the device is read as a buffer until unmapped. */
    float *mapped = NULL;
    assert_int_equal(gnn_be_map_host(be, host, sizeof host, (void **)&mapped), 0);
    assert_ptr_equal(mapped, host);
    assert_int_equal(gnn_be_relu(be, 64, mapped, out), 0);
    gnn_be_unmap_host(be, host);
    expect_error(gnn_be_relu(be, 64, host, out), GNN_EINVAL,
                 "gnn_be_relu: x is not a buffer of cpu-as-gpu");
    float *stale = out;
    gnn_be_free(be, out);
    expect_error(gnn_be_zero(be, stale, 4), GNN_EINVAL,
                 "gnn_be_zero: dst is not a buffer of cpu-as-gpu");
    gnn_be_free(be, buf);
    gnn_backend_close(be);
}

/* A graph staged on a thread of its own (no backend), then placed: before
 * placing, operations refuse it; placed, it aggregates to the bits of a
 * graph created in one call (gcn with source degrees too); placing it
 * again is a no-op, on another backend an error; a staged graph is freed
 * unplaced; a bad attention layout is refused. */
typedef struct {
    const gnn_csr_t *a;
    const int64_t *deg;
    gnn_bgraph_t *g;
    int rc;
} stage_job_t;

static void *stage_thread(void *arg)
{
    stage_job_t *j = arg;
    j->rc = gnn_be_graph_stage(j->a, j->deg, 1, &j->g);
    return NULL;
}

static void test_graph_stage_place(void **state)
{
    (void)state;
    gnn_backend_t *be, *be2;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    assert_int_equal(gnn_backend_open("cpu", &be2), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    uint64_t s = g_seed ^ 0x7374616765;
    gnn_csr_t a;
    make_graph(&s, 120, 200, 1500, &a);
    const int64_t f = 9, nd = a.n_rows, ns = a.n_cols;
    int64_t *deg = malloc((size_t)ns * sizeof *deg);
    assert_non_null(deg);
    for (int64_t u = 0; u < ns; u++) deg[u] = (int64_t)(tu_rng_next(&s) % 50);
    stage_job_t job = {.a = &a, .deg = deg};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, stage_thread, &job), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(job.rc, 0);
    gnn_bgraph_t *ref;
    assert_int_equal(gnn_be_graph_create_src_deg(be, &a, deg, &ref), 0);
    const gnn_aggr_def_t *def;
    assert_int_equal(gnn_aggr_registry_find(reg, "gcn", &def), 0);
    float *x = rand_floats(&s, ns * f), *y = malloc((size_t)(nd * f) * sizeof *y);
    float *yr = malloc((size_t)(nd * f) * sizeof *yr);
    assert_true(y && yr);
    float *dx = up(be, x, (size_t)(ns * f) * sizeof(float)), *dy = NULL;
    assert_int_equal(gnn_be_alloc(be, (size_t)(nd * f) * sizeof(float), (void **)&dy), 0);
    expect_error(gnn_be_aggr_forward(be, job.g, def, f, dx, dy, NULL, 0), GNN_EINVAL,
                 "aggregator gcn forward: graph staged, not placed");
    assert_int_equal(gnn_be_graph_place(be, job.g), 0);
    assert_int_equal(gnn_be_graph_place(be, job.g), 0); /* again: nothing to do */
    expect_error(gnn_be_graph_place(be2, job.g), GNN_EINVAL, "belongs to another backend");
    assert_int_equal(gnn_be_aggr_forward(be, job.g, def, f, dx, dy, NULL, 0), 0);
    assert_int_equal(gnn_be_download(be, y, dy, (size_t)(nd * f) * sizeof(float)), 0);
    assert_int_equal(gnn_be_aggr_forward(be, ref, def, f, dx, dy, NULL, 0), 0);
    assert_int_equal(gnn_be_download(be, yr, dy, (size_t)(nd * f) * sizeof(float)), 0);
    expect_same(y, yr, (size_t)(nd * f) * sizeof(float), "staged then placed gcn");
    assert_int_equal(gnn_be_attn_slots(job.g, 1), a.nnz + nd);
    /* Unplaced graphs are freed as they are; a bad layout is refused. */
    gnn_bgraph_t *loose = NULL;
    assert_int_equal(gnn_be_graph_stage(&a, NULL, 0, &loose), 0);
    gnn_be_graph_free(loose);
    expect_error(gnn_be_graph_stage(&a, NULL, 2, &loose), GNN_EINVAL, "attention layout 2");
    assert_null(loose);
    gnn_be_free(be, dx), gnn_be_free(be, dy);
    free(x), free(y), free(yr), free(deg);
    gnn_be_graph_free(job.g);
    gnn_be_graph_free(ref);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be2);
    gnn_backend_close(be);
}

/* ---- SpMM implementation ---------------------------------------------------- */

static void test_spmm_impl(void **state)
{
    (void)state;
    static const char *names[GNN_SPMM_COUNT_] = {"auto", "cusparse", "rowcache", "balanced"};
    for (int i = 0; i < GNN_SPMM_COUNT_; i++) {
        assert_string_equal(gnn_spmm_impl_name((gnn_spmm_impl_t)i), names[i]);
        gnn_spmm_impl_t impl = GNN_SPMM_COUNT_;
        assert_int_equal(gnn_spmm_impl_from_name(names[i], &impl), 0);
        assert_int_equal(impl, i);
    }
    assert_string_equal(gnn_spmm_impl_name(GNN_SPMM_COUNT_), "?");
    assert_string_equal(gnn_spmm_impl_name((gnn_spmm_impl_t)-1), "?");
    gnn_spmm_impl_t impl = GNN_SPMM_BALANCED;
    expect_error(gnn_spmm_impl_from_name("fastest", &impl), GNN_EINVAL, "fastest");
    for (int i = 0; i < GNN_SPMM_COUNT_; i++)
        if (!strstr(gnn_error_message(), names[i]))
            fail_msg("message \"%s\" does not list \"%s\"", gnn_error_message(), names[i]);
    assert_int_equal(impl, GNN_SPMM_BALANCED);
    assert_int_equal(gnn_spmm_impl_from_name("", &impl), GNN_EINVAL);
    assert_int_equal(gnn_spmm_impl_from_name("AUTO", &impl), GNN_EINVAL);
    assert_int_equal(gnn_spmm_impl_from_name(NULL, &impl), GNN_EINVAL);

    /* The CPU backend has one SpMM: auto (either way of determinism) only. */
    gnn_backend_t *be;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_be_set_spmm(be, GNN_SPMM_AUTO, 0), 0);
    assert_int_equal(gnn_be_set_spmm(be, GNN_SPMM_AUTO, 1), 0);
    for (int det = 0; det <= 1; det++) {
        expect_error(gnn_be_set_spmm(be, GNN_SPMM_ROWCACHE, det), GNN_EUNSUPPORTED, "rowcache");
        assert_int_equal(gnn_be_set_spmm(be, GNN_SPMM_CUSPARSE, det), GNN_EUNSUPPORTED);
        assert_int_equal(gnn_be_set_spmm(be, GNN_SPMM_BALANCED, det), GNN_EUNSUPPORTED);
    }
    assert_int_equal(gnn_be_set_spmm(be, GNN_SPMM_COUNT_, 0), GNN_EINVAL);
    assert_int_equal(gnn_be_set_spmm(NULL, GNN_SPMM_AUTO, 0), GNN_EINVAL);

    /* Its choice is auto before and after aggregating, for every built-in. */
    uint64_t s = g_seed ^ 0x73706d;
    gnn_csr_t a;
    make_graph(&s, 30, 30, 120, &a);
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    const int64_t f = 5;
    float *x = rand_floats(&s, 30 * f), *dy = rand_floats(&s, 30 * f);
    float *y = malloc(30 * f * sizeof(float)), *dx = malloc(30 * f * sizeof(float));
    int32_t *am = malloc(30 * f * sizeof(int32_t));
    assert_true(y && dx && am);
    for (int aggr = 0; aggr < GNN_AGGR_COUNT_; aggr++) {
        for (int backward = 0; backward <= 1; backward++) {
            impl = GNN_SPMM_BALANCED;
            assert_int_equal(gnn_be_spmm_choice(be, bg, aggr, f, backward, &impl), 0);
            assert_int_equal(impl, GNN_SPMM_AUTO);
        }
        const gnn_aggr_def_t *def;
        assert_int_equal(gnn_aggr_registry_find(reg, gnn_aggr_name((gnn_aggr_t)aggr), &def), 0);
        size_t wsb;
        assert_int_equal(gnn_be_aggr_workspace(be, bg, def, f, &wsb), 0);
        assert_int_equal(gnn_be_aggr_forward(be, bg, def, f, x, y, am, wsb), 0);
        assert_int_equal(gnn_be_aggr_backward(be, bg, def, f, x, y, dy, dx, am, wsb), 0);
        for (int backward = 0; backward <= 1; backward++) {
            impl = GNN_SPMM_BALANCED;
            assert_int_equal(gnn_be_spmm_choice(be, bg, aggr, f, backward, &impl), 0);
            assert_int_equal(impl, GNN_SPMM_AUTO);
        }
    }
    assert_int_equal(gnn_be_spmm_choice(be, bg, GNN_AGGR_COUNT_, f, 0, &impl), GNN_EINVAL);
    assert_int_equal(gnn_be_spmm_choice(be, NULL, GNN_AGGR_SUM, f, 0, &impl), GNN_EINVAL);
    free(x), free(dy), free(y), free(dx), free(am);
    gnn_aggr_registry_free(reg);
    gnn_be_graph_free(bg);
    gnn_csr_free(&a);
    gnn_backend_close(be);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_dense_matches_kernels),
        cmocka_unit_test(test_sparse_opt_copy_rows_match_kernels),
        cmocka_unit_test(test_builtins_match_spmm),
        cmocka_unit_test(test_aggr_errors),
        cmocka_unit_test(test_graph_alloc_failure),
        cmocka_unit_test(test_graph_stage_place),
        cmocka_unit_test(test_spmm_impl),
        cmocka_unit_test(test_cpu_as_gpu),
        cmocka_unit_test(test_trust_ids),
        cmocka_unit_test(test_trust_buffer),
        cmocka_unit_test(test_capture_rules),
        cmocka_unit_test(test_aggr_runs),
        cmocka_unit_test(test_step_scalars),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
