/*
 * Tests of the CPU graph attention kernels (kernels/attn.h): GAT scores,
 * softmax with aggregation and both backwards against the double
 * reference (kernels/ref/attn_ref.h), the reference's backward against
 * central finite differences of its forward, results independent of the
 * thread count, and argument errors. Graphs are random blocks (fewer
 * destinations than sources) with repeated edges, stored self loops and
 * empty rows; with and without added self loops and attention dropout.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/error.h"
#include "kernels/attn.h"
#include "kernels/dense.h"
#include "kernels/ref/attn_ref.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

static double unif(uint64_t *s) { return (double)(tu_rng_next(s) >> 11) * 0x1p-53; }

typedef struct {
    gnn_csr_t c;
    gnn_spmm_graph_t *g;
    int64_t nd, ns;
} block_t;

/* nd destinations over ns sources, about deg entries a row (row 1 empty,
 * row 0 with a stored self loop and a repeated edge, row 2 with hub
 * entries when hub > 0). */
static void block(block_t *b, int64_t nd, int64_t ns, int deg, int hub, uint64_t *s)
{
    memset(b, 0, sizeof *b);
    b->nd = nd, b->ns = ns;
    gnn_csr_t *c = &b->c;
    c->n_rows = nd;
    c->n_cols = ns;
    c->indptr = calloc(nd + 1, sizeof *c->indptr);
    c->indices = malloc((nd * (2 * deg + 3) + hub + 1) * sizeof *c->indices);
    assert_true(c->indptr && c->indices);
    gnn_eid_t e = 0;
    for (int64_t v = 0; v < nd; v++) {
        int n = v == 1 ? 0 : 1 + (int)(tu_rng_next(s) % (uint64_t)(2 * deg));
        if (v == 2 && hub > 0) n = hub;
        if (v == 0) {
            c->indices[e++] = 0; /* a stored self loop */
            c->indices[e++] = ns - 1;
            c->indices[e++] = ns - 1; /* repeated */
        }
        for (int k = 0; k < n && v != 0; k++) c->indices[e++] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)ns);
        c->indptr[v + 1] = e;
    }
    c->nnz = e;
    assert_int_equal(gnn_spmm_graph_create(c, &b->g), 0);
}

static void block_free(block_t *b)
{
    gnn_spmm_graph_free(b->g);
    free(b->c.indptr);
    free(b->c.indices);
}

static void fill(double *d, float *f, int64_t n, uint64_t *s, double lo, double hi)
{
    for (int64_t i = 0; i < n; i++) {
        d[i] = (double)(float)(lo + (hi - lo) * unif(s));
        if (f) f[i] = (float)d[i];
    }
}

static void close_to(const float *got, const double *want, int64_t n, double tol, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (fabs(got[i] - want[i]) > tol * (1.0 + fabs(want[i])))
            fail_msg("%s[%" PRId64 "] = %.9g, reference %.9g (seed %" PRIu64 ")", what, i,
                     (double)got[i], want[i], g_seed);
}

/* Kernels against the reference, forward and backward; with long rows,
 * the forward's blocks of slots split chunks of rows, and one row (1500
 * entries) is longer than a block. */
static void check_case(int self_loop, float dropout, int long_rows)
{
    uint64_t s = g_seed ^ (uint64_t)(self_loop * 7 + (dropout > 0 ? 13 : 0) + long_rows * 29);
    block_t b;
    if (long_rows) block(&b, 90, 110, 40, 1500, &s);
    else block(&b, 23, 31, 4, 0, &s);
    gnn_attn_opts_t o = {.heads = 3, .f = 5, .self_loop = self_loop, .negative_slope = 0.2f,
                         .dropout = dropout, .seed = 99, .offset = 17};
    int64_t ids[110]; /* global ids of the rows (a part of a larger graph) */
    for (int64_t u = 0; u < b.ns; u++) ids[u] = 1000 - 7 * u;
    if (self_loop) o.ids = ids, o.n_ids = 1001;
    gnn_attn_graph_t *a;
    assert_int_equal(gnn_attn_graph_create(b.g, self_loop, &a), 0);
    int64_t H = o.heads, W = o.heads * o.f, S = a->slots;
    assert_int_equal(S, b.c.nnz + (self_loop ? b.nd : 0));
    int64_t longest = 0; /* the backward's per-thread copy of a row */
    for (int64_t v = 0; v < b.nd; v++) {
        int64_t n = b.c.indptr[v + 1] - b.c.indptr[v] + (self_loop ? 1 : 0);
        longest = n > longest ? n : longest;
    }
    assert_int_equal(a->longest, longest);
    double *el = malloc(b.ns * H * sizeof *el), *er = malloc(b.nd * H * sizeof *er);
    double *x = malloc(b.ns * W * sizeof *x), *dy = malloc(b.nd * W * sizeof *dy);
    double *rs = malloc(S * H * sizeof *rs), *ra = malloc(S * H * sizeof *ra);
    double *ry = malloc(b.nd * W * sizeof *ry), *rdx = malloc(b.ns * W * sizeof *rdx);
    double *rds = malloc(S * H * sizeof *rds), *rdel = malloc(b.ns * H * sizeof *rdel);
    double *rder = malloc(b.nd * H * sizeof *rder);
    float *fel = malloc(b.ns * H * sizeof *fel), *fer = malloc(b.nd * H * sizeof *fer);
    float *fx = malloc(b.ns * W * sizeof *fx), *fdy = malloc(b.nd * W * sizeof *fdy);
    float *fs = malloc(S * H * sizeof *fs), *fy = malloc(b.nd * W * sizeof *fy);
    float *fdx = malloc(b.ns * W * sizeof *fdx), *fds = malloc(S * H * sizeof *fds);
    float *fdel = malloc(b.ns * H * sizeof *fdel), *fder = malloc(b.nd * H * sizeof *fder);
    fill(el, fel, b.ns * H, &s, -2.0, 2.0);
    fill(er, fer, b.nd * H, &s, -2.0, 2.0);
    fill(x, fx, b.ns * W, &s, -1.0, 1.0);
    fill(dy, fdy, b.nd * W, &s, -1.0, 1.0);

    assert_int_equal(gnn_attn_ref_gat_score(&b.c, &o, el, er, rs), 0);
    assert_int_equal(gnn_attn_ref_forward(&b.c, &o, x, rs, ra, ry), 0);
    assert_int_equal(gnn_attn_ref_backward(&b.c, &o, x, ra, dy, rdx, rds), 0);
    assert_int_equal(gnn_attn_ref_gat_score_backward(&b.c, &o, el, er, rds, rdel, rder), 0);

    assert_int_equal(gnn_attn_gat_score(a, &o, fel, fer, fs), 0);
    close_to(fs, rs, S * H, 1e-6, "score");
    assert_int_equal(gnn_attn_forward(a, &o, fx, fs, fy), 0);
    /* |alpha| is the softmax; its sign says which weights dropout dropped
     * (the reference's mask: it draws with gnn_rng_keep weight by weight). */
    float *fa = malloc(S * H * sizeof *fa);
    int64_t dropped = 0;
    for (int64_t i = 0; i < S * H; i++) {
        fa[i] = fabsf(fs[i]);
        dropped += signbit(fs[i]) != 0;
    }
    close_to(fa, ra, S * H, 1e-5, "alpha");
    free(fa);
    if (dropout == 0.0f) assert_int_equal(dropped, 0);
    else assert_true(dropped > S * H / 10 && dropped < S * H / 2);
    close_to(fy, ry, b.nd * W, 1e-5, "y");
    /* ds is written everywhere (0 at row 0's stored self loop, when left
     * out): it starts as NaN. */
    for (int64_t i = 0; i < S * H; i++) fds[i] = NAN;
    assert_int_equal(gnn_attn_backward(a, &o, fx, fs, fy, fdy, fdx, fds), 0);
    close_to(fdx, rdx, b.ns * W, 1e-5, "dx");
    close_to(fds, rds, S * H, 1e-5, "ds");
    assert_int_equal(gnn_attn_gat_score_backward(a, &o, fel, fer, fds, fdel, fder), 0);
    close_to(fdel, rdel, b.ns * H, 1e-5, "del");
    close_to(fder, rder, b.nd * H, 1e-5, "der");
    /* The row without entries: without self loops its output is 0. */
    if (!self_loop)
        for (int64_t k = 0; k < W; k++) assert_true(fy[1 * W + k] == 0.0f);

    /* The same bits on one thread as on several. */
    int threads = omp_get_max_threads();
    float *y1 = malloc(b.nd * W * sizeof *y1), *dx1 = malloc(b.ns * W * sizeof *dx1);
    float *s1 = malloc(S * H * sizeof *s1), *ds1 = malloc(S * H * sizeof *ds1);
    omp_set_num_threads(1);
    assert_int_equal(gnn_attn_gat_score(a, &o, fel, fer, s1), 0);
    assert_int_equal(gnn_attn_forward(a, &o, fx, s1, y1), 0);
    assert_int_equal(gnn_attn_backward(a, &o, fx, s1, y1, fdy, dx1, ds1), 0);
    omp_set_num_threads(threads > 1 ? threads : 2);
    assert_memory_equal(y1, fy, b.nd * W * sizeof *y1);
    assert_memory_equal(dx1, fdx, b.ns * W * sizeof *dx1);
    assert_memory_equal(ds1, fds, S * H * sizeof *ds1);
    omp_set_num_threads(threads);
    /* ds in place of alpha and dx in place of y (a buffer of the larger
     * row count): the same bits as into their own arrays. */
    memcpy(s1, fs, S * H * sizeof *s1);
    memcpy(dx1, fy, b.nd * W * sizeof *dx1);
    assert_int_equal(gnn_attn_backward(a, &o, fx, s1, dx1, fdy, dx1, s1), 0);
    assert_memory_equal(s1, fds, S * H * sizeof *s1);
    assert_memory_equal(dx1, fdx, b.ns * W * sizeof *dx1);

    free(y1), free(dx1), free(s1), free(ds1);
    free(el), free(er), free(x), free(dy), free(rs), free(ra), free(ry), free(rdx), free(rds);
    free(rdel), free(rder), free(fel), free(fer), free(fx), free(fdy), free(fs), free(fy);
    free(fdx), free(fds), free(fdel), free(fder);
    gnn_attn_graph_free(a);
    block_free(&b);
}

static void test_against_reference(void **state)
{
    (void)state;
    for (int long_rows = 0; long_rows < 2; long_rows++) {
        check_case(0, 0.0f, long_rows);
        check_case(1, 0.0f, long_rows);
        check_case(0, 0.3f, long_rows);
        check_case(1, 0.3f, long_rows);
    }
}

/* L = sum(y * R) through the GAT score and the attention, reference in
 * double: the backward against central differences in x, el and er. */
static double loss(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *x,
                   const double *el, const double *er, const double *r, int64_t S)
{
    int64_t W = o->heads * o->f;
    double *s = malloc(S * o->heads * sizeof *s), *al = malloc(S * o->heads * sizeof *al);
    double *y = malloc(c->n_rows * W * sizeof *y), l = 0.0;
    gnn_attn_ref_gat_score(c, o, el, er, s);
    gnn_attn_ref_forward(c, o, x, s, al, y);
    for (int64_t i = 0; i < c->n_rows * W; i++) l += y[i] * r[i];
    free(s), free(al), free(y);
    return l;
}

static void test_reference_gradients(void **state)
{
    (void)state;
    for (int self_loop = 0; self_loop < 2; self_loop++) {
        uint64_t s = g_seed + 5 + (uint64_t)self_loop;
        block_t b;
        block(&b, 7, 9, 3, 0, &s);
        gnn_attn_opts_t o = {.heads = 2, .f = 3, .self_loop = self_loop, .negative_slope = 0.2f,
                             .dropout = 0.25f, .seed = 3, .offset = 0};
        int64_t H = o.heads, W = H * o.f, S = b.c.nnz + (self_loop ? b.nd : 0);
        double el[9 * 2], er[7 * 2], x[9 * 6], r[7 * 6];
        fill(el, NULL, b.ns * H, &s, -1.0, 1.0);
        fill(er, NULL, b.nd * H, &s, -1.0, 1.0);
        fill(x, NULL, b.ns * W, &s, -1.0, 1.0);
        fill(r, NULL, b.nd * W, &s, -1.0, 1.0);
        double sc[64 * 2], al[64 * 2], y[7 * 6], dx[9 * 6], ds[64 * 2], del[9 * 2], der[7 * 2];
        assert_true(S <= 64);
        gnn_attn_ref_gat_score(&b.c, &o, el, er, sc);
        gnn_attn_ref_forward(&b.c, &o, x, sc, al, y);
        gnn_attn_ref_backward(&b.c, &o, x, al, r, dx, ds);
        gnn_attn_ref_gat_score_backward(&b.c, &o, el, er, ds, del, der);
        double *vars[3] = {x, el, er}, *grads[3] = {dx, del, der};
        int64_t sizes[3] = {b.ns * W, b.ns * H, b.nd * H};
        const char *names[3] = {"dx", "del", "der"};
        for (int k = 0; k < 3; k++)
            for (int64_t i = 0; i < sizes[k]; i++) {
                double keep = vars[k][i], eps = 1e-6;
                vars[k][i] = keep + eps;
                double lp = loss(&b.c, &o, x, el, er, r, S);
                vars[k][i] = keep - eps;
                double lm = loss(&b.c, &o, x, el, er, r, S);
                vars[k][i] = keep;
                double fd = (lp - lm) / (2 * eps);
                if (fabs(fd - grads[k][i]) > 1e-6 * (1.0 + fabs(fd)))
                    fail_msg("%s[%" PRId64 "] = %.12g, finite difference %.12g (self loops %d)",
                             names[k], i, grads[k][i], fd, self_loop);
            }
        block_free(&b);
    }
}

/* Per-head terms and their backward against double loops; ELU. */
static void test_head_dot_and_elu(void **state)
{
    (void)state;
    uint64_t s = g_seed + 11;
    enum { N = 5000, HD = 3, F = 4, W = HD * F }; /* more rows than one partial block */
    float *x = malloc(N * W * sizeof *x), *dx = malloc(N * W * sizeof *dx);
    float a[W], da[W], *out = malloc(N * HD * sizeof *out), *g = malloc(N * HD * sizeof *g);
    double xd, ad;
    for (int i = 0; i < N * W; i++) x[i] = (float)unif(&s) - 0.5f, dx[i] = 1.0f;
    for (int i = 0; i < W; i++) a[i] = (float)unif(&s) - 0.5f;
    for (int i = 0; i < N * HD; i++) g[i] = (float)unif(&s) - 0.5f;
    assert_int_equal(gnn_attn_head_dot(N, HD, F, x, a, out), 0);
    assert_int_equal(gnn_attn_head_dot_backward(N, HD, F, x, a, g, dx, da), 0);
    for (int u = 0; u < N; u++)
        for (int h = 0; h < HD; h++) {
            double t = 0.0;
            for (int k = 0; k < F; k++) {
                xd = x[u * W + h * F + k], ad = a[h * F + k];
                t += xd * ad;
                /* accumulated onto the 1 already there */
                assert_float_equal(dx[u * W + h * F + k], 1.0 + (double)g[u * HD + h] * ad, 1e-6);
            }
            assert_float_equal(out[u * HD + h], t, 1e-5);
        }
    for (int i = 0; i < W; i++) {
        double t = 0.0;
        for (int u = 0; u < N; u++) t += (double)g[u * HD + i / F] * x[u * W + i];
        assert_float_equal(da[i], t, 1e-4 * (1.0 + fabs(t)));
    }
    float e[6] = {-3.0f, -0.5f, 0.0f, 0.25f, 2.0f, -1e-4f}, y[6], dy[6], d[6];
    assert_int_equal(gnn_elu(6, e, y), 0);
    for (int i = 0; i < 6; i++) dy[i] = 0.5f + (float)i;
    assert_int_equal(gnn_elu_backward(6, y, dy, d), 0);
    for (int i = 0; i < 6; i++) {
        double want = e[i] > 0 ? e[i] : expm1((double)e[i]);
        assert_float_equal(y[i], want, 1e-7);
        double dw = e[i] > 0 ? dy[i] : dy[i] * exp((double)e[i]);
        assert_float_equal(d[i], dw, 1e-6);
    }
    free(x), free(dx), free(out), free(g);
}

/*
 * GAT scores and their backward at every kind of slope (0, inside (0, 1],
 * above 1, negative) on scores that are infinite, zero of either sign or
 * finite: each equals LeakyReLU's definition, z > 0 ? z : slope z, and its
 * derivative, bit for bit. One in-edge per row and one out-edge per source
 * (u -> v for u = v + 1 mod 3), so that no sum's order is at stake.
 */
static void test_leaky_slopes(void **state)
{
    (void)state;
    gnn_vid_t idx[3] = {1, 2, 0};
    gnn_eid_t ptr[4] = {0, 1, 2, 3};
    gnn_csr_t c = {.n_rows = 3, .n_cols = 3, .nnz = 3, .indptr = ptr, .indices = idx};
    gnn_spmm_graph_t *g = NULL;
    gnn_attn_graph_t *a = NULL;
    assert_int_equal(gnn_spmm_graph_create(&c, &g), 0);
    assert_int_equal(gnn_attn_graph_create(g, 0, &a), 0);
    enum { H = 4 };
    const float el[3 * H] = {INFINITY, -INFINITY, 2.5f, -1.5f, 0.0f, -0.0f, 1e-30f, -3.0f,
                             7.0f,     -7.0f,     0.25f, -0.25f};
    const float er[3 * H] = {0};
    const float ds[3 * H] = {1.0f, -2.0f, 0.5f, 3.0f, -1.0f, 4.0f, 2.0f, -0.5f,
                             1.5f, 1.0f,  -3.0f, 2.0f};
    const float slopes[] = {0.0f, 0.2f, 1.0f, 1.5f, -0.5f};
    for (size_t k = 0; k < sizeof slopes / sizeof slopes[0]; k++) {
        const float sl = slopes[k];
        gnn_attn_opts_t o = {.heads = H, .f = 1, .negative_slope = sl};
        float sc[3 * H], der[3 * H], del[3 * H];
        assert_int_equal(gnn_attn_gat_score(a, &o, el, er, sc), 0);
        assert_int_equal(gnn_attn_gat_score_backward(a, &o, el, er, ds, del, der), 0);
        for (int v = 0; v < 3; v++)
            for (int h = 0; h < H; h++) {
                const int u = (int)idx[v];
                const float z = el[u * H + h] + er[v * H + h];
                const float want = z > 0.0f ? z : z * sl;
                /* a sum of the one term (from 0: -0 adds up to +0) */
                const float dwant = 0.0f + ds[v * H + h] * (z > 0.0f ? 1.0f : sl);
                const float got = sc[v * H + h];
                if (!(isnan(want) ? isnan(got) : memcmp(&got, &want, sizeof got) == 0))
                    fail_msg("slope %g, score of z = %g: %g, expected %g", (double)sl, (double)z,
                             (double)got, (double)want);
                if (memcmp(&der[v * H + h], &dwant, sizeof dwant) ||
                    memcmp(&del[u * H + h], &dwant, sizeof dwant))
                    fail_msg("slope %g, z = %g: gradients %g and %g, expected %g", (double)sl,
                             (double)z, (double)der[v * H + h], (double)del[u * H + h],
                             (double)dwant);
            }
    }
    gnn_attn_graph_free(a);
    gnn_spmm_graph_free(g);
}

static void test_errors(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    block_t b;
    block(&b, 5, 4, 2, 0, &s); /* more destinations than sources */
    gnn_attn_graph_t *a = NULL;
    assert_int_equal(gnn_attn_graph_create(b.g, 1, &a), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "self loops need the destinations"));
    assert_null(a);
    assert_int_equal(gnn_attn_graph_create(b.g, 0, &a), 0);
    gnn_attn_opts_t o = {.heads = 2, .f = 3, .self_loop = 1};
    float buf[256] = {0};
    assert_int_equal(gnn_attn_forward(a, &o, buf, buf, buf), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "prepared without self loops"));
    o.self_loop = 0;
    o.dropout = 1.0f;
    assert_int_equal(gnn_attn_forward(a, &o, buf, buf, buf), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "attention dropout 1 outside [0, 1)"));
    o.dropout = 0.0f;
    o.heads = 0;
    assert_int_equal(gnn_attn_backward(a, &o, buf, buf, buf, buf, buf, buf), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "0 heads"));
    o.heads = 2;
    assert_int_equal(gnn_attn_backward(a, &o, buf, buf, NULL, buf, buf, buf), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "attention backward: NULL array"));
    gnn_attn_graph_free(a);
    block_free(&b);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),
        cmocka_unit_test(test_reference_gradients),
        cmocka_unit_test(test_head_dot_and_elu),
        cmocka_unit_test(test_leaky_slopes),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
