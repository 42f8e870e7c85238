/*
 * Tests of the dense operations (kernels/cpu/dense.c) and of the
 * counter-based generator (graph/base/rng.h).
 *
 * Every operation is run on random inputs of several shapes (1x1, odd
 * sizes, sizes that cross the reduction blocks and the threading threshold,
 * all four GEMM transposes with padded leading dimensions) and compared with
 * the double-precision reference (kernels/ref/dense_ref.c). Every backward
 * is checked against central finite differences of the reference forward in
 * double. The generator has known-answer tests: Random123's Philox-4x32-10
 * vectors, and fixed uniforms and dropout masks that the CUDA backend must
 * reproduce bit for bit. Adam is checked against a two-step example worked
 * out by hand (decimal arithmetic). The row-sparse optimisers (SparseAdam,
 * Adagrad) follow a double reference of torch's formulas over five steps of
 * changing row subsets, rows outside a step keeping their bits, and
 * three-step examples worked out by hand; gnn_copy_rows writes exactly its
 * block of columns. Reductions are checked to give the same bits for 1 to
 * 4 threads. The random inputs print their seed; set GNN_TEST_SEED to
 * replay one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/dense.h"
#include "kernels/ref/dense_ref.h"
#include "graph/base/rng.h"
#include "kernels/cpu/philox.h"

#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

/* ---- Helpers ------------------------------------------------------------------ */

/* Uniform float in [lo, hi). */
static float rng_float(uint64_t *state, float lo, float hi)
{
    return lo + (hi - lo) * (float)(tu_rng_next(state) >> 40) * 0x1p-24f;
}

static float *rand_floats(uint64_t *st, int64_t n, float lo, float hi)
{
    float *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = rng_float(st, lo, hi);
    return a;
}

static double *to_double(const float *a, int64_t n)
{
    double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof *d);
    assert_non_null(d);
    for (int64_t i = 0; i < n; i++) d[i] = a[i];
    return d;
}

static double *dalloc(int64_t n)
{
    double *d = calloc((size_t)(n > 0 ? n : 1), sizeof *d);
    assert_non_null(d);
    return d;
}

/* |got - want| <= tol * max(|want|, scale) for each element, else fail. */
static void expect_close(const char *what, const float *got, const double *want, int64_t n,
                         double tol, double scale)
{
    for (int64_t i = 0; i < n; i++) {
        double lim = tol * fmax(fabs(want[i]), scale);
        if (!(fabs((double)got[i] - want[i]) <= lim))
            fail_msg("%s[%" PRId64 "]: got %.9g want %.9g (tol %.3g, seed %" PRIu64 ")", what,
                     i, (double)got[i], want[i], lim, g_seed);
    }
}

/* A random permutation of [0, rows): its first n entries are a random
 * subset of n distinct rows. */
static int64_t *rand_perm(uint64_t *st, int64_t rows)
{
    int64_t *perm = malloc((size_t)(rows > 0 ? rows : 1) * sizeof *perm);
    assert_non_null(perm);
    for (int64_t i = 0; i < rows; i++) perm[i] = i;
    for (int64_t i = rows - 1; i > 0; i--) {
        int64_t j = (int64_t)(tu_rng_next(st) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return perm;
}

static void expect_error(int rc, int code, const char *want)
{
    assert_int_equal(rc, code);
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

/* A scalar function of n doubles, for finite differences. */
typedef double (*scalar_fn)(void *ctx, const double *x);

/*
 * Central differences of f at x (h = 1e-5) against an analytic gradient
 * from a float kernel: |an - fd| <= tol * max(|fd|, max_i |fd_i|).
 */
static void expect_fd(const char *what, scalar_fn f, void *ctx, double *x, int64_t n,
                      const float *an, double tol)
{
    double *fd = dalloc(n), maxabs = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double h = 1e-5, x0 = x[i];
        x[i] = x0 + h;
        double fp = f(ctx, x);
        x[i] = x0 - h;
        double fm = f(ctx, x);
        x[i] = x0;
        fd[i] = (fp - fm) / (2 * h);
        maxabs = fmax(maxabs, fabs(fd[i]));
    }
    expect_close(what, an, fd, n, tol, maxabs > 0 ? maxabs : 1.0);
    free(fd);
}

/* ---- Generator ---------------------------------------------------------------- */

static void test_philox_known_answers(void **state)
{
    (void)state;
    /* Random123 kat_vectors: counter[4] key[2] -> output[4]. */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    for (int t = 0; t < 3; t++) {
        uint32_t out[4];
        gnn_philox4x32_10(kat[t], kat[t] + 4, out);
        for (int w = 0; w < 4; w++) assert_int_equal(out[w], kat[t][6 + w]);
    }
}

/* The batched draws at arbitrary counters (AVX-512 in sixteens, then AVX2
 * in eights, where the CPU has them; the rest one by one) give
 * gnn_rng_block's words exactly, for counters up to 2^62 and every count
 * 0 .. 40. */
static void test_philox_blocks(void **state)
{
    (void)state;
    uint64_t s = 0x9e3779b97f4a7c15ull, blocks[40];
    uint32_t got[4 * 40], want[4];
    for (int n = 0; n <= 40; n++) {
        for (int k = 0; k < n; k++)
            blocks[k] = k % 3 == 0 ? (uint64_t)k : tu_rng_next(&s) >> (k % 2 ? 2 : 30);
        uint64_t seed = tu_rng_next(&s);
        gnn__philox_blocks(seed, blocks, n, got);
        for (int k = 0; k < n; k++) {
            gnn_rng_block(seed, blocks[k], want);
            for (int w = 0; w < 4; w++)
                if (got[4 * k + w] != want[w])
                    fail_msg("n %d block %d (%" PRIu64 ") word %d: %08x, expected %08x", n, k,
                             blocks[k], w, got[4 * k + w], want[w]);
        }
    }
}

static void test_rng_uniform_known_answers(void **state)
{
    (void)state;
    /* u(seed, j) of graph/base/rng.h, computed by an independent Python
     * Philox; the CUDA backend must give the same floats. */
    static const struct {
        uint64_t seed, j;
        float u;
    } kat[] = {
        {0x0123456789ABCDEFull, 0x0000000000000000ull, 0x1.70a044p-1f},
        {0x0123456789ABCDEFull, 0x0000000000000001ull, 0x1.8b1960p-1f},
        {0x0123456789ABCDEFull, 0x0000000000000002ull, 0x1.4a7a00p-4f},
        {0x0123456789ABCDEFull, 0x0000000000000003ull, 0x1.ea13fcp-2f},
        {0x0123456789ABCDEFull, 0x0000000000000004ull, 0x1.5b9428p-1f},
        {0x0123456789ABCDEFull, 0x0000000000000005ull, 0x1.48f834p-2f},
        {0x0123456789ABCDEFull, 0x0000000000000006ull, 0x1.950050p-2f},
        {0x0123456789ABCDEFull, 0x0000000000000007ull, 0x1.6533b4p-1f},
        {0x0123456789ABCDEFull, 0x0000010000000005ull, 0x1.4cab60p-5f},
        {0x0123456789ABCDEFull, 0xFFFFFFFFFFFFFFFFull, 0x1.df39dcp-1f},
    };
    for (size_t t = 0; t < sizeof kat / sizeof kat[0]; t++) {
        float u = gnn_rng_uniform(kat[t].seed, kat[t].j);
        if (u != kat[t].u)
            fail_msg("u(%#" PRIx64 ", %#" PRIx64 ") = %a, want %a", kat[t].seed, kat[t].j,
                     (double)u, (double)kat[t].u);
    }
    /* Extremes of the word-to-float map. */
    assert_true(gnn_rng_u01(0) == 0.0f);
    assert_true(gnn_rng_u01(0xffffffffu) == 1.0f - 0x1p-24f);
}

/* Keep bits of gnn_dropout (bit i set: element i kept) for 64 elements. */
static uint64_t dropout_bits(float p, uint64_t seed, uint64_t offset)
{
    float x[64], y[64];
    for (int i = 0; i < 64; i++) x[i] = 1.0f;
    assert_int_equal(gnn_dropout(64, p, seed, offset, x, y), 0);
    uint64_t bits = 0;
    for (int i = 0; i < 64; i++) bits |= (uint64_t)(y[i] != 0.0f) << i;
    return bits;
}

static void test_dropout_known_masks(void **state)
{
    (void)state;
    /* From the same Python model; the CUDA mask must match. */
    assert_int_equal(dropout_bits(0.5f, 42, 0), 0x56400b4502027f51ull);
    assert_int_equal(dropout_bits(0.3f, 42, 1000), 0xd69c3fffbf7f4ddfull);
}

/* ---- GEMM --------------------------------------------------------------------- */

/* gnn_gemm_rows: A's rows read through an index from a larger table give
 * gnn_gemm's result on the gathered copy, bit for bit (the narrow kernels
 * and the copy-then-BLAS path), with rows repeated and out of order; bad
 * rows are refused. */
static void test_gemm_rows(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x70e5;
    static const int64_t shapes[][3] = {{1, 1, 1},       {17, 13, 31},  {300, 32, 128},
                                        {1000, 16, 64},  {70, 50, 700}, {129, 67, 513},
                                        {203, 128, 20},  {2500, 32, 1433}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++) {
            int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            if (ta) { /* A^T B: the gathered side is the long sum */
                int64_t t = m;
                m = k;
                k = t;
            }
            int64_t ar = ta ? k : m, ac = ta ? m : k, table = ar + 37, lda = ac + 5;
            float *tab = rand_floats(&st, table * lda, -1, 1);
            float *b = rand_floats(&st, k * n, -1, 1);
            int64_t *rows = malloc((size_t)ar * sizeof *rows);
            float *copy = malloc((size_t)(ar * ac + 1) * sizeof *copy);
            float *c1 = rand_floats(&st, m * n, -1, 1);
            float *c2 = malloc((size_t)(m * n) * sizeof *c2);
            assert_true(rows && copy && c2);
            memcpy(c2, c1, (size_t)(m * n) * sizeof *c2);
            for (int64_t i = 0; i < ar; i++) {
                rows[i] = (int64_t)(tu_rng_next(&st) % (uint64_t)table);
                memcpy(copy + i * ac, tab + rows[i] * lda, (size_t)ac * sizeof *copy);
            }
            assert_int_equal(gnn_gemm(ta, 0, m, n, k, 0.5f, copy, ac, b, n, 0.25f, c1, n), 0);
            assert_int_equal(gnn_gemm_rows(ta, m, n, k, 0.5f, tab, lda, rows, b, n, 0.25f, c2, n),
                             0);
            assert_memory_equal(c1, c2, (size_t)(m * n) * sizeof *c1);
            rows[ar / 2] = -1;
            assert_int_equal(gnn_gemm_rows(ta, m, n, k, 0.5f, tab, lda, rows, b, n, 0.25f, c2, n),
                             GNN_EINVAL);
            free(tab), free(b), free(rows), free(copy), free(c1), free(c2);
        }
}

/* gnn_gemm_pair against two double-precision products (and, for A B,
 * bit for bit against two gnn_gemm calls: a row's sum is the same), with
 * A's rows in order or through an index, for shapes the paired kernels
 * take and shapes they leave to two products. */
static void test_gemm_pair(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x9a1e;
    /* {rows of A, rows of the second product, A's width, n1, n2} */
    static const int64_t shapes[][5] = {{3000, 1700, 128, 32, 32}, {500, 500, 64, 16, 16},
                                        {2100, 900, 70, 16, 48},   {400, 0, 33, 32, 32},
                                        {300, 120, 40, 20, 12},    {1000, 999, 90, 64, 64},
                                        {7, 3, 5, 32, 32}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int by_rows = 0; by_rows < 2; by_rows++) {
                int64_t ar = shapes[s][0], ar2 = shapes[s][1], ac = shapes[s][2];
                int64_t n1 = shapes[s][3], n2 = shapes[s][4], tr = ar + 9, lda = ac + 3;
                float *tab = rand_floats(&st, tr * lda, -1, 1);
                int64_t *rows = malloc((size_t)ar * sizeof *rows);
                float *a = malloc((size_t)(ar * ac) * sizeof *a);
                assert_true(rows && a);
                for (int64_t i = 0; i < ar; i++) {
                    rows[i] = by_rows ? (int64_t)(tu_rng_next(&st) % (uint64_t)tr) : i;
                    memcpy(a + i * ac, tab + rows[i] * lda, (size_t)ac * sizeof *a);
                }
                /* ta 0: C1 (ar x n1) = A B1, C2 (ar2 x n2) = A[:ar2] B2, B k = ac rows;
                 * ta 1: C1 (ac x n1) = A^T B1 over ar rows, C2 over ar2 rows. */
                int64_t kb = ta ? ar : ac, cr1 = ta ? ac : ar, cr2 = ta ? ac : ar2;
                float *b1 = rand_floats(&st, kb * n1, -1, 1), *b2 = rand_floats(&st, kb * n2, -1, 1);
                float *c1 = malloc((size_t)(cr1 * n1 + 1) * sizeof *c1);
                float *c2 = malloc((size_t)(cr2 * n2 + 1) * sizeof *c2);
                float *d1 = malloc((size_t)(cr1 * n1 + 1) * sizeof *d1);
                float *d2 = malloc((size_t)(cr2 * n2 + 1) * sizeof *d2);
                assert_true(c1 && c2 && d1 && d2);
                assert_int_equal(gnn_gemm_pair(ta, ta ? ac : ar, ar2, ta ? ar : ac,
                                               by_rows ? tab : a, by_rows ? lda : ac,
                                               by_rows ? rows : NULL, n1, b1, c1, n2, b2, c2),
                                 0);
                double *ad = to_double(a, ar * ac), *aa = dalloc(ar * ac);
                for (int64_t i = 0; i < ar * ac; i++) aa[i] = fabs(ad[i]);
                for (int w = 0; w < 2; w++) {
                    int64_t n = w ? n2 : n1, cr = w ? cr2 : cr1;
                    int64_t m = ta ? ac : (w ? ar2 : ar), k = ta ? (w ? ar2 : ar) : ac;
                    const float *b = w ? b2 : b1, *c = w ? c2 : c1;
                    double *bd = to_double(b, kb * n), *ba = dalloc(kb * n);
                    for (int64_t i = 0; i < kb * n; i++) ba[i] = fabs(bd[i]);
                    double *cd = dalloc(cr * n + 1), *ca = dalloc(cr * n + 1);
                    gnn_ref_gemm(ta, 0, m, n, k, 1.0, ad, ac, bd, n, 0.0, cd, n);
                    gnn_ref_gemm(ta, 0, m, n, k, 1.0, aa, ac, ba, n, 0.0, ca, n);
                    double tol = (double)(k + 2) * FLT_EPSILON;
                    for (int64_t i = 0; i < cr * n; i++)
                        if (!(fabs(c[i] - cd[i]) <= tol * ca[i] + 1e-30))
                            fail_msg("gemm_pair shape %zu ta=%d rows=%d C%d[%" PRId64
                                     "] = %.9g want %.9g",
                                     s, ta, by_rows, w + 1, i, (double)c[i], cd[i]);
                    free(bd), free(ba), free(cd), free(ca);
                }
                if (!ta) { /* rows of A B: the same bits as one product each */
                    assert_int_equal(gnn_gemm(0, 0, ar, n1, ac, 1.0f, a, ac, b1, n1, 0.0f, d1, n1), 0);
                    assert_int_equal(gnn_gemm(0, 0, ar2, n2, ac, 1.0f, a, ac, b2, n2, 0.0f, d2, n2), 0);
                    assert_memory_equal(c1, d1, (size_t)(ar * n1) * sizeof *c1);
                    assert_memory_equal(c2, d2, (size_t)(ar2 * n2) * sizeof *c2);
                }
                free(tab), free(rows), free(a), free(b1), free(b2), free(c1), free(c2);
                free(d1), free(d2), free(ad), free(aa);
            }
}

static void test_gemm_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6e6d;
    /* The last rows: tall and narrow, as a layer's products are (on a CPU
     * with AVX-512 they have their own kernels, kernels/cpu/gemm_skinny.c:
     * tiles of 12 rows by 32 columns or 6 by 64, A^T B in 48 x 8 tiles over
     * chunks of 256-1024 rows, tails of each). */
    static const int64_t shapes[][3] = {
        {1, 1, 1},     {3, 5, 7},     {17, 13, 31},   {64, 64, 64},  {33, 1, 100},
        {1, 40, 9},    {2, 3, 0},     {129, 67, 513}, {100, 32, 2500}, {300, 64, 130},
        {65, 1, 300},  {97, 17, 2100}, {203, 128, 20}, {70, 50, 64},   {131, 16, 7}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bz = 0; bz < 2; bz++) {
                    int64_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                    int64_t lda = ac + 3, ldb = bc + 1, ldc = n + 2;
                    float alpha = 1.5f, beta = bz ? 0.5f : 0.0f;
                    float *a = rand_floats(&st, ar * lda, -1, 1);
                    float *b = rand_floats(&st, br * ldb, -1, 1);
                    float *c = rand_floats(&st, m * ldc, -1, 1);
                    if (!bz) /* beta 0: C must not be read */
                        for (int64_t i = 0; i < m * ldc; i++) c[i] = NAN;
                    double *ad = to_double(a, ar * lda), *bd = to_double(b, br * ldb);
                    double *cd = to_double(c, m * ldc), *abs_c = dalloc(m * ldc);
                    double *aa = dalloc(ar * lda), *ba = dalloc(br * ldb);
                    for (int64_t i = 0; i < ar * lda; i++) aa[i] = fabs(ad[i]);
                    for (int64_t i = 0; i < br * ldb; i++) ba[i] = fabs(bd[i]);
                    gnn_ref_gemm(ta, tb, m, n, k, alpha, ad, lda, bd, ldb, beta, cd, ldc);
                    /* error bound scale: |alpha| |A||B| + |beta C| */
                    gnn_ref_gemm(ta, tb, m, n, k, fabs(alpha), aa, lda, ba, ldb, 0.0, abs_c,
                                 ldc);
                    for (int64_t i = 0; bz && i < m * ldc; i++) abs_c[i] += fabs(beta * c[i]);
                    assert_int_equal(
                        gnn_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc), 0);
                    double tol = (double)(k + 2) * FLT_EPSILON;
                    for (int64_t i = 0; i < m; i++)
                        for (int64_t j = 0; j < n; j++) {
                            int64_t x = i * ldc + j;
                            double lim = tol * abs_c[x] + 1e-30;
                            if (!(fabs(c[x] - cd[x]) <= lim))
                                fail_msg("gemm %" PRId64 "x%" PRId64 "x%" PRId64
                                         " ta=%d tb=%d beta=%g C[%" PRId64 "][%" PRId64
                                         "] = %.9g want %.9g",
                                         m, n, k, ta, tb, (double)beta, i, j, (double)c[x],
                                         cd[x]);
                        }
                    free(a), free(b), free(c), free(ad), free(bd), free(cd), free(abs_c);
                    free(aa), free(ba);
                }
    }
}

static void test_gemm_bad_shapes(void **state)
{
    (void)state;
    float a[4] = {0}, b[4] = {0}, c[4] = {0};
    expect_error(gnn_gemm(0, 0, -1, 2, 2, 1, a, 2, b, 2, 0, c, 2), GNN_EINVAL, "negative size");
    expect_error(gnn_gemm(0, 0, 2, 2, 2, 1, a, 1, b, 2, 0, c, 2), GNN_EINVAL, "lda=1 < 2");
    expect_error(gnn_gemm(1, 0, 3, 2, 1, 1, a, 2, b, 2, 0, c, 2), GNN_EINVAL,
                 "lda=2 < 3 columns of A (transposed)");
    expect_error(gnn_gemm(0, 1, 2, 2, 3, 1, a, 3, b, 2, 0, c, 2), GNN_EINVAL, "ldb=2 < 3");
    expect_error(gnn_gemm(0, 0, 2, 3, 2, 1, a, 2, b, 3, 0, c, 2), GNN_EINVAL, "ldc=2 < 3");
    int64_t big = (int64_t)INT_MAX + 1;
    expect_error(gnn_gemm(0, 0, big, 1, 1, 1, a, 1, b, 1, 0, c, 1), GNN_EINVAL,
                 "32-bit BLAS");
    expect_error(gnn_gemm(0, 0, 1, 1, 1, 1, a, big, b, 1, 0, c, 1), GNN_EINVAL,
                 "32-bit BLAS");
    /* Empty products are fine; k == 0 scales C by beta. */
    assert_int_equal(gnn_gemm(0, 0, 0, 5, 5, 1, NULL, 5, NULL, 5, 0, NULL, 5), 0);
    c[0] = 4.0f;
    c[1] = NAN;
    assert_int_equal(gnn_gemm(0, 0, 1, 1, 0, 1, NULL, 1, NULL, 1, 0.5f, c, 1), 0);
    assert_true(c[0] == 2.0f);
    assert_int_equal(gnn_gemm(0, 0, 1, 1, 0, 1, NULL, 1, NULL, 1, 0.0f, c + 1, 1), 0);
    assert_true(c[1] == 0.0f);
}

/* L(A, B) = sum G .* (A B) for the finite differences of GEMM. */
typedef struct {
    int64_t m, n, k;
    double *a, *b, *g, *c;
    int wrt_b;
} gemm_ctx;

static double gemm_loss(void *vctx, const double *x)
{
    gemm_ctx *t = vctx;
    const double *a = t->wrt_b ? t->a : x, *b = t->wrt_b ? x : t->b;
    gnn_ref_gemm(0, 0, t->m, t->n, t->k, 1.0, a, t->k, b, t->n, 0.0, t->c, t->n);
    double s = 0.0;
    for (int64_t i = 0; i < t->m * t->n; i++) s += t->g[i] * t->c[i];
    return s;
}

/* The GEMM backward (dA = G B^T, dB = A^T G) through the transposed forms. */
static void test_gemm_backward_fd(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6762;
    int64_t m = 5, n = 4, k = 3;
    float *a = rand_floats(&st, m * k, -1, 1), *b = rand_floats(&st, k * n, -1, 1);
    float *g = rand_floats(&st, m * n, -1, 1);
    float *da = rand_floats(&st, m * k, -1, 1), *db = rand_floats(&st, k * n, -1, 1);
    assert_int_equal(gnn_gemm(0, 1, m, k, n, 1, g, n, b, n, 0, da, k), 0);
    assert_int_equal(gnn_gemm(1, 0, k, n, m, 1, a, k, g, n, 0, db, n), 0);
    gemm_ctx t = {m, n, k, to_double(a, m * k), to_double(b, k * n), to_double(g, m * n),
                  dalloc(m * n), 0};
    expect_fd("gemm dA", gemm_loss, &t, t.a, m * k, da, 1e-5);
    t.wrt_b = 1;
    expect_fd("gemm dB", gemm_loss, &t, t.b, k * n, db, 1e-5);
    free(a), free(b), free(g), free(da), free(db), free(t.a), free(t.b), free(t.g), free(t.c);
}

/* ---- Bias and ReLU ------------------------------------------------------------ */

static void test_bias_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6269;
    static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {0, 5}, {2500, 3}, {5000, 17}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
        float *y = rand_floats(&st, n, -2, 2), *bias = rand_floats(&st, cols, -1, 1);
        float *dbias = rand_floats(&st, cols, -1, 1);
        double *yd = to_double(y, n), *bd = to_double(bias, cols), *dbd = dalloc(cols);
        gnn_ref_bias_grad(rows, cols, yd, dbd);
        assert_int_equal(gnn_bias_grad(rows, cols, y, dbias), 0);
        expect_close("bias_grad", dbias, dbd, cols, 1e-6, 1e-30);
        gnn_ref_bias_add(rows, cols, yd, bd);
        assert_int_equal(gnn_bias_add(rows, cols, y, bias), 0);
        expect_close("bias_add", y, yd, n, 1e-6, 1e-30);
        free(y), free(bias), free(dbias), free(yd), free(bd), free(dbd);
    }
}

/* gnn_bias_act: the bits of gnn_bias_add and then gnn_relu or gnn_elu
 * (zeros of both signs and a NaN among the values), the bias alone for
 * GNN_ACT_NONE; another activation refused with y untouched. */
static void test_bias_act(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0xb1a5;
    static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {0, 5}, {3000, 17}, {900, 256}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int act = GNN_ACT_NONE; act <= GNN_ACT_ELU; act++) {
            int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
            float *y = rand_floats(&st, n, -2, 2), *bias = rand_floats(&st, cols, -1, 1);
            float *want = malloc((size_t)(n + 1) * sizeof *want);
            assert_non_null(want);
            if (n > 3) {
                y[0] = -bias[0];         /* sums to +0 */
                y[1] = NAN;              /* stays NaN */
                y[2] = -0.0f;            /* with a -0 bias below: -0 */
                bias[2 % cols] = cols > 2 ? -0.0f : bias[2 % cols];
            }
            memcpy(want, y, (size_t)n * sizeof *want);
            assert_int_equal(gnn_bias_add(rows, cols, want, bias), 0);
            if (act == GNN_ACT_RELU) assert_int_equal(gnn_relu(n, want, want), 0);
            if (act == GNN_ACT_ELU) assert_int_equal(gnn_elu(n, want, want), 0);
            assert_int_equal(gnn_bias_act(rows, cols, y, bias, act), 0);
            assert_memory_equal(y, want, (size_t)n * sizeof *y);
            free(y), free(bias), free(want);
        }
    float y[4] = {1, -1, 2, -2}, b[2] = {0.5f, 0.5f};
    assert_int_equal(gnn_bias_act(2, 2, y, b, 3), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "activation 3"));
    assert_true(y[0] == 1.0f && y[1] == -1.0f && y[2] == 2.0f && y[3] == -2.0f);
}

/* gnn_bias_act_drop: the bits of gnn_bias_act and then gnn_dropout (no
 * row ids) or gnn_dropout_rows (ids in runs, jumps and repeats), for
 * widths that are and are not multiples of 4 and offsets at and off a
 * Philox block; p = 0 is gnn_bias_act. gnn_relu_drop_backward: the bits
 * of the dropout's backward and then gnn_relu_backward on the dropped
 * output (in place too). Bad p and act refused. */
static void test_bias_act_drop(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0xd509;
    static const int64_t shapes[][2] = {{1, 1}, {7, 13}, {0, 5}, {3000, 17}, {900, 256}, {40, 3}};
    static const uint64_t offsets[] = {0, 3, 1000001, UINT64_MAX - 50};
    const uint64_t seed = 0x5eed ^ g_seed;
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int act = GNN_ACT_NONE; act <= GNN_ACT_ELU; act++)
            for (int ids = 0; ids < 2; ids++) {
                int64_t rows = shapes[s][0], cols = shapes[s][1], n = rows * cols;
                uint64_t off = offsets[(s + (size_t)act + (size_t)ids) % 4];
                float p = act == GNN_ACT_ELU && ids ? 0.0f : 0.1f + 0.2f * (float)act;
                float *y = rand_floats(&st, n, -2, 2), *bias = rand_floats(&st, cols, -1, 1);
                float *want = malloc((size_t)(n + 1) * sizeof *want);
                int64_t *rid = malloc((size_t)(rows + 1) * sizeof *rid);
                assert_true(want && rid);
                for (int64_t r = 0; r < rows; r++) /* runs, a jump every 5, a repeat every 11 */
                    rid[r] = r == 0 ? 7 : r % 11 == 0 ? rid[r - 1] : rid[r - 1] + (r % 5 ? 1 : 9);
                memcpy(want, y, (size_t)n * sizeof *want);
                assert_int_equal(gnn_bias_act(rows, cols, want, bias, act), 0);
                if (ids)
                    assert_int_equal(
                        gnn_dropout_rows(rows, cols, rid, p, seed, off, want, want), 0);
                else
                    assert_int_equal(gnn_dropout(n, p, seed, off, want, want), 0);
                assert_int_equal(
                    gnn_bias_act_drop(rows, cols, y, bias, act, p, seed, off, ids ? rid : NULL), 0);
                if (memcmp(y, want, (size_t)n * sizeof *y))
                    fail_msg("bias_act_drop %" PRId64 " x %" PRId64 ", act %d, p %g, offset "
                             "%" PRIu64
                             ", %s: not the bits of bias_act then dropout",
                             rows, cols, act, (double)p, off, ids ? "row ids" : "flat");
                /* The backward through dropout and the ReLU, from y. */
                if (act == GNN_ACT_RELU) {
                    float *dy = rand_floats(&st, n, -1, 1);
                    float *dx = malloc((size_t)(n + 1) * sizeof *dx);
                    float *dw = malloc((size_t)(n + 1) * sizeof *dw);
                    assert_true(dx && dw);
                    if (ids)
                        assert_int_equal(
                            gnn_dropout_rows(rows, cols, rid, p, seed, off, dy, dw), 0);
                    else
                        assert_int_equal(gnn_dropout_backward(n, p, seed, off, dy, dw), 0);
                    assert_int_equal(gnn_relu_backward(n, y, dw, dw), 0);
                    assert_int_equal(gnn_relu_drop_backward(n, p, y, dy, dx), 0);
                    assert_memory_equal(dx, dw, (size_t)n * sizeof *dx);
                    assert_int_equal(gnn_relu_drop_backward(n, p, y, dy, dy), 0); /* in place */
                    assert_memory_equal(dy, dw, (size_t)n * sizeof *dy);
                    free(dy), free(dx), free(dw);
                }
                free(y), free(bias), free(want), free(rid);
            }
    float y[4] = {1, -1, 2, -2}, b[2] = {0.5f, 0.5f};
    assert_int_equal(gnn_bias_act_drop(2, 2, y, b, 3, 0.5f, 1, 0, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "activation 3"));
    assert_int_equal(gnn_bias_act_drop(2, 2, y, b, GNN_ACT_RELU, 1.0f, 1, 0, NULL), GNN_EINVAL);
    assert_int_equal(gnn_relu_drop_backward(4, -0.5f, y, y, y), GNN_EINVAL);
    assert_true(y[0] == 1.0f && y[1] == -1.0f && y[2] == 2.0f && y[3] == -2.0f);
}

typedef struct {
    int64_t rows, cols;
    double *y, *w, *tmp;
} bias_ctx;

static double bias_loss(void *vctx, const double *bias) /* sum W .* (Y + bias) */
{
    bias_ctx *t = vctx;
    memcpy(t->tmp, t->y, (size_t)(t->rows * t->cols) * sizeof *t->tmp);
    gnn_ref_bias_add(t->rows, t->cols, t->tmp, bias);
    double s = 0.0;
    for (int64_t i = 0; i < t->rows * t->cols; i++) s += t->w[i] * t->tmp[i];
    return s;
}

static void test_bias_backward_fd(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6266;
    int64_t rows = 9, cols = 5;
    float *w = rand_floats(&st, rows * cols, -1, 1), *bias = rand_floats(&st, cols, -1, 1);
    float *y = rand_floats(&st, rows * cols, -1, 1), dbias[5];
    assert_int_equal(gnn_bias_grad(rows, cols, w, dbias), 0);
    bias_ctx t = {rows, cols, to_double(y, rows * cols), to_double(w, rows * cols),
                  dalloc(rows * cols)};
    double *bd = to_double(bias, cols);
    expect_fd("bias grad", bias_loss, &t, bd, cols, dbias, 1e-5);
    free(w), free(bias), free(y), free(t.y), free(t.w), free(t.tmp), free(bd);
}

static void test_relu_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x7265;
    static const int64_t sizes[] = {1, 7, 0, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *x = rand_floats(&st, n, -1, 1), *y = rand_floats(&st, n, -1, 1);
        float *dy = rand_floats(&st, n, -1, 1), *dx = rand_floats(&st, n, -1, 1);
        if (n > 2) x[0] = 0.0f, x[1] = -0.0f;
        double *xd = to_double(x, n), *dyd = to_double(dy, n), *yd = dalloc(n), *dxd = dalloc(n);
        gnn_ref_relu(n, xd, yd);
        gnn_ref_relu_backward(n, xd, dyd, dxd);
        assert_int_equal(gnn_relu(n, x, y), 0);
        assert_int_equal(gnn_relu_backward(n, y, dy, dx), 0); /* from the output */
        for (int64_t i = 0; i < n; i++) {
            assert_true(y[i] == (float)yd[i]);
            assert_true(dx[i] == (float)dxd[i]);
        }
        assert_int_equal(gnn_relu_backward(n, x, dy, dy), 0); /* from the input, in place */
        for (int64_t i = 0; i < n; i++) assert_true(dy[i] == (float)dxd[i]);
        assert_int_equal(gnn_relu(n, x, x), 0); /* in place */
        for (int64_t i = 0; i < n; i++) assert_true(x[i] == y[i]);
        free(x), free(y), free(dy), free(dx), free(xd), free(dyd), free(yd), free(dxd);
    }
    expect_error(gnn_relu(-1, NULL, NULL), GNN_EINVAL, "negative element count");
}

static void test_axpby_gather_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6178;
    static const int64_t sizes[] = {1, 7, 0, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        float *x = rand_floats(&st, n, -1, 1), *y = rand_floats(&st, n, -1, 1);
        double *xd = to_double(x, n), *yd = to_double(y, n);
        gnn_ref_axpby(n, 0.5, xd, -2.0, yd);
        assert_int_equal(gnn_axpby(n, 0.5f, x, -2.0f, y), 0);
        for (int64_t i = 0; i < n; i++) assert_true(y[i] == (float)yd[i]);
        for (int64_t i = 0; i < n; i++) y[i] = NAN; /* beta == 0: y is not read */
        gnn_ref_axpby(n, 3.0, xd, 0.0, yd);
        assert_int_equal(gnn_axpby(n, 3.0f, x, 0.0f, y), 0);
        for (int64_t i = 0; i < n; i++) assert_true(y[i] == (float)yd[i]);
        free(x), free(y), free(xd), free(yd);
    }
    static const int64_t widths[] = {1, 3, 64, 257};
    for (size_t w = 0; w < sizeof widths / sizeof widths[0]; w++) {
        int64_t f = widths[w], rows = 1000, n = 2500;
        float *src = rand_floats(&st, rows * f, -1, 1), *dst = rand_floats(&st, n * f, -1, 1);
        int64_t *idx = malloc((size_t)n * sizeof *idx);
        assert_non_null(idx);
        for (int64_t i = 0; i < n; i++) idx[i] = (int64_t)(tu_rng_next(&st) % (uint64_t)rows);
        double *srcd = to_double(src, rows * f), *dstd = dalloc(n * f);
        gnn_ref_gather_rows(n, f, srcd, idx, dstd);
        assert_int_equal(gnn_gather_rows(n, f, src, rows, idx, dst), 0);
        for (int64_t i = 0; i < n * f; i++) assert_true(dst[i] == (float)dstd[i]);
        /* Through a cache of every third row (the copies, zeroed in src
         * so that a row read from the wrong place shows): the same rows. */
        int32_t *slot = malloc((size_t)rows * sizeof *slot);
        float *cache = malloc((size_t)(rows / 3 + 1) * (size_t)f * sizeof *cache);
        float *src2 = malloc((size_t)(rows * f) * sizeof *src2);
        float *dst2 = malloc((size_t)(n * f) * sizeof *dst2);
        assert_true(slot && cache && src2 && dst2);
        memcpy(src2, src, (size_t)(rows * f) * sizeof *src2);
        int32_t k = 0;
        for (int64_t r = 0; r < rows; r++) {
            slot[r] = r % 3 == 0 ? k++ : -1;
            if (slot[r] >= 0) {
                memcpy(cache + (int64_t)slot[r] * f, src + r * f, (size_t)f * sizeof *cache);
                memset(src2 + r * f, 0, (size_t)f * sizeof *src2);
            }
        }
        assert_int_equal(gnn_gather_rows_cached(n, f, cache, slot, src2, idx, dst2), 0);
        assert_memory_equal(dst2, dst, (size_t)(n * f) * sizeof *dst);
        free(slot), free(cache), free(src2), free(dst2);
        /* A bad index: error naming it, output untouched. */
        float keep = dst[0];
        idx[n - 1] = rows;
        expect_error(gnn_gather_rows(n, f, src, rows, idx, dst), GNN_EINVAL,
                     "index 1000 at position 2499 outside [0, 1000)");
        idx[n - 1] = -1;
        expect_error(gnn_gather_rows(n, f, src, rows, idx, dst), GNN_EINVAL, "index -1");
        assert_true(dst[0] == keep);
        free(src), free(dst), free(idx), free(srcd), free(dstd);
    }
}

typedef struct {
    int64_t n;
    double *w, *tmp;
    float p;
    uint64_t seed, offset;
    int dropout;
} ew_ctx;

static double ew_loss(void *vctx, const double *x) /* sum w .* f(x) */
{
    ew_ctx *t = vctx;
    if (t->dropout)
        gnn_ref_dropout(t->n, t->p, t->seed, t->offset, x, t->tmp);
    else
        gnn_ref_relu(t->n, x, t->tmp);
    double s = 0.0;
    for (int64_t i = 0; i < t->n; i++) s += t->w[i] * t->tmp[i];
    return s;
}

static void test_relu_dropout_backward_fd(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x7266;
    int64_t n = 37;
    float *x = rand_floats(&st, n, -1, 1), *w = rand_floats(&st, n, -1, 1);
    float *dx = rand_floats(&st, n, -1, 1);
    for (int64_t i = 0; i < n; i++) /* keep clear of the kink at 0 */
        if (fabsf(x[i]) < 0.01f) x[i] = 0.5f;
    ew_ctx t = {n, to_double(w, n), dalloc(n), 0.4f, g_seed, 12345, 0};
    double *xd = to_double(x, n);
    assert_int_equal(gnn_relu_backward(n, x, w, dx), 0);
    expect_fd("relu grad", ew_loss, &t, xd, n, dx, 1e-5);
    t.dropout = 1;
    assert_int_equal(gnn_dropout_backward(n, t.p, t.seed, t.offset, w, dx), 0);
    expect_fd("dropout grad", ew_loss, &t, xd, n, dx, 1e-5);
    free(x), free(w), free(dx), free(t.w), free(t.tmp), free(xd);
}

/* ---- Dropout ------------------------------------------------------------------ */

static void test_dropout_fraction_and_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6470;
    const int64_t n = 1000000;
    float *x = rand_floats(&st, n, 0.5f, 1.5f), *y = malloc((size_t)n * sizeof *y);
    float *dx = malloc((size_t)n * sizeof *dx);
    assert_non_null(y);
    assert_non_null(dx);
    double *xd = to_double(x, n), *yd = dalloc(n);
    static const float ps[] = {0.1f, 0.5f, 0.9f};
    for (size_t t = 0; t < 3; t++) {
        float p = ps[t];
        uint64_t seed = tu_rng_next(&st), offset = tu_rng_next(&st);
        assert_int_equal(gnn_dropout(n, p, seed, offset, x, y), 0);
        gnn_ref_dropout(n, p, seed, offset, xd, yd);
        int64_t dropped = 0;
        float scale = (float)(1.0 / (1.0 - (double)p));
        for (int64_t i = 0; i < n; i++) {
            if ((y[i] == 0.0f) != (yd[i] == 0.0))
                fail_msg("p=%g element %" PRId64 ": mask differs from the definition",
                         (double)p, i);
            dropped += y[i] == 0.0f;
            if (y[i] != 0.0f) assert_true(y[i] == x[i] * scale);
        }
        expect_close("dropout", y, yd, n, 1e-6, 1e-30);
        /* Binomial(n, p): within 5 standard deviations. */
        double mean = (double)n * p, sd = sqrt((double)n * p * (1 - p));
        if (fabs((double)dropped - mean) > 5 * sd)
            fail_msg("p=%g: %" PRId64 " of %" PRId64 " dropped, expected %.0f +- %.0f",
                     (double)p, dropped, n, mean, 5 * sd);
        /* Backward: same mask, same scale, from dy. */
        assert_int_equal(gnn_dropout_backward(n, p, seed, offset, x, dx), 0);
        assert_memory_equal(dx, y, (size_t)n * sizeof *y);
        /* Same seed and offset: same output; another seed: another mask. */
        assert_int_equal(gnn_dropout(n, p, seed, offset, x, dx), 0);
        assert_memory_equal(dx, y, (size_t)n * sizeof *y);
        assert_int_equal(gnn_dropout(n, p, seed + 1, offset, x, dx), 0);
        int64_t differ = 0;
        for (int64_t i = 0; i < n; i++) differ += (dx[i] == 0.0f) != (y[i] == 0.0f);
        assert_true(differ > n / 100);
    }
    free(x), free(y), free(dx), free(xd), free(yd);
}

static void test_dropout_offsets(void **state)
{
    (void)state;
    const int64_t n = 1001, extra = 1000;
    float *one = malloc((size_t)(n + extra) * sizeof *one);
    float *base = malloc((size_t)(n + extra) * sizeof *base), *y = malloc((size_t)n * sizeof *y);
    assert_non_null(one);
    assert_non_null(base);
    assert_non_null(y);
    for (int64_t i = 0; i < n + extra; i++) one[i] = 1.0f;
    uint64_t seed = g_seed;
    assert_int_equal(gnn_dropout(n + extra, 0.5f, seed, 0, one, base), 0);
    static const int64_t shifts[] = {1, 2, 3, 4, 5, 7, 998, 1000};
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
        int64_t k = shifts[s];
        assert_int_equal(gnn_dropout(n, 0.5f, seed, (uint64_t)k, one, y), 0);
        assert_memory_equal(y, base + k, (size_t)n * sizeof *y);
    }
    /* Counters that wrap past 2^64 follow the definition element by element. */
    uint64_t off = UINT64_MAX - 5;
    assert_int_equal(gnn_dropout(n, 0.5f, seed, off, one, y), 0);
    for (int64_t i = 0; i < n; i++)
        assert_int_equal(y[i] != 0.0f, gnn_rng_keep(seed, off + (uint64_t)i, 0.5f));
    free(one), free(base), free(y);
}

static void test_dropout_identity_and_errors(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6469;
    int64_t n = 1003;
    float *x = rand_floats(&st, n, -1, 1), *y = rand_floats(&st, n, -1, 1);
    assert_int_equal(gnn_dropout(n, 0.0f, 1, 2, x, y), 0);
    assert_memory_equal(x, y, (size_t)n * sizeof *x);
    assert_int_equal(gnn_dropout_backward(n, 0.0f, 1, 2, x, y), 0);
    assert_memory_equal(x, y, (size_t)n * sizeof *x);
    assert_int_equal(gnn_dropout(n, 0.0f, 1, 2, y, y), 0);
    assert_memory_equal(x, y, (size_t)n * sizeof *x);
    /* In place equals out of place. */
    assert_int_equal(gnn_dropout(n, 0.3f, 9, 7, x, y), 0);
    assert_int_equal(gnn_dropout(n, 0.3f, 9, 7, x, x), 0);
    assert_memory_equal(x, y, (size_t)n * sizeof *x);
    expect_error(gnn_dropout(n, 1.0f, 1, 0, x, y), GNN_EINVAL, "drop probability 1 outside");
    expect_error(gnn_dropout(n, -0.1f, 1, 0, x, y), GNN_EINVAL, "outside [0, 1)");
    expect_error(gnn_dropout_backward(n, NAN, 1, 0, x, y), GNN_EINVAL, "outside [0, 1)");
    expect_error(gnn_dropout(-2, 0.5f, 1, 0, x, y), GNN_EINVAL, "negative element count");
    free(x), free(y);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/*
 * gnn_dropout_rows on rows picked at random from a larger matrix (a
 * random subset in random order, or ascending with runs of consecutive
 * ids; f not a multiple of 4, rows longer than one draw of blocks; offsets that are
 * not aligned to the generator's batches, one of them wrapping past 2^64):
 * each row equals that row of gnn_dropout on the larger matrix, bit for
 * bit, on and above the threading threshold. p == 0 copies, y == x works,
 * and a negative row id is GNN_EINVAL with y untouched.
 */
static void test_dropout_rows_match_whole_matrix(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6472;
    static const struct {
        int64_t big, rows, f;
        int sorted; /* ids ascending: runs of consecutive ids (one counter range each) */
    } shapes[] = {{1, 1, 1, 0},       {50, 17, 7, 0},      {1000, 300, 37, 0},
                  {3000, 2000, 21, 0}, {3000, 2900, 3, 1},  {40, 30, 1500, 0},
                  {40, 39, 1021, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int64_t big = shapes[s].big, rows = shapes[s].rows, f = shapes[s].f;
        float *xb = rand_floats(&st, big * f, -1, 1);
        float *yb = malloc((size_t)(big * f) * sizeof *yb);
        float *x = malloc((size_t)(rows * f) * sizeof *x);
        float *y = malloc((size_t)(rows * f) * sizeof *y);
        assert_non_null(yb);
        assert_non_null(x);
        assert_non_null(y);
        int64_t *id = rand_perm(&st, big);
        if (shapes[s].sorted) qsort(id, (size_t)rows, sizeof *id, cmp_i64);
        for (int64_t r = 0; r < rows; r++) memcpy(x + r * f, xb + id[r] * f, (size_t)f * sizeof *x);
        const uint64_t offsets[] = {1 + 2 * (tu_rng_next(&st) % 100000),
                                    UINT64_MAX - 3 * (uint64_t)f};
        for (int o = 0; o < 2; o++) {
            uint64_t seed = tu_rng_next(&st), off = offsets[o];
            assert_int_equal(gnn_dropout(big * f, 0.4f, seed, off, xb, yb), 0);
            assert_int_equal(gnn_dropout_rows(rows, f, id, 0.4f, seed, off, x, y), 0);
            int64_t kept = 0;
            for (int64_t r = 0; r < rows; r++) {
                if (memcmp(y + r * f, yb + id[r] * f, (size_t)f * sizeof *y) != 0)
                    fail_msg("%" PRId64 " x %" PRId64 ", offset %" PRIu64 ": row %" PRId64
                             " (id %" PRId64 ") differs from gnn_dropout's (seed %" PRIu64 ")",
                             rows, f, off, r, id[r], g_seed);
                for (int64_t j = 0; j < f; j++) kept += y[r * f + j] != 0.0f;
            }
            if (rows * f >= 100) assert_true(kept > 0 && kept < rows * f);
            /* In place. */
            float *z = malloc((size_t)(rows * f) * sizeof *z);
            assert_non_null(z);
            memcpy(z, x, (size_t)(rows * f) * sizeof *z);
            assert_int_equal(gnn_dropout_rows(rows, f, id, 0.4f, seed, off, z, z), 0);
            assert_memory_equal(z, y, (size_t)(rows * f) * sizeof *z);
            free(z);
        }
        /* p == 0 copies. */
        assert_int_equal(gnn_dropout_rows(rows, f, id, 0.0f, 5, 3, x, y), 0);
        assert_memory_equal(x, y, (size_t)(rows * f) * sizeof *y);
        free(xb), free(yb), free(x), free(y), free(id);
    }

    int64_t id[3] = {4, -1, 2};
    float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, y[9], before[9];
    for (int i = 0; i < 9; i++) y[i] = before[i] = -7.0f;
    expect_error(gnn_dropout_rows(3, 3, id, 0.5f, 1, 0, x, y), GNN_EINVAL, "has id -1");
    assert_memory_equal(y, before, sizeof y);
    expect_error(gnn_dropout_rows(3, 3, id, 0.0f, 1, 0, x, y), GNN_EINVAL, "has id -1");
    assert_memory_equal(y, before, sizeof y);
    id[1] = 0;
    expect_error(gnn_dropout_rows(3, 3, id, 1.0f, 1, 0, x, y), GNN_EINVAL, "outside [0, 1)");
    assert_memory_equal(y, before, sizeof y);
}

/* ---- Softmax cross-entropy ---------------------------------------------------- */

static void test_softmax_xent_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x7378;
    static const int64_t shapes[][3] = {/* rows, classes, nidx (-1: all, idx NULL) */
                                        {1, 1, -1},  {7, 3, 4},        {100, 10, -1},
                                        {100, 10, 37}, {3000, 47, 2100}, {5000, 10, -1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], classes = shapes[s][1], n = rows * classes;
        int64_t nidx = shapes[s][2] < 0 ? rows : shapes[s][2];
        int64_t *idx = shapes[s][2] < 0 ? NULL : rand_perm(&st, rows);
        float *x = rand_floats(&st, n, -4, 4), *d = rand_floats(&st, n, -1, 1);
        int64_t *labels = malloc((size_t)rows * sizeof *labels);
        assert_non_null(labels);
        for (int64_t r = 0; r < rows; r++) labels[r] = (int64_t)(tu_rng_next(&st) % (uint64_t)classes);
        if (idx && rows > 1) labels[idx[nidx]] = -7; /* unselected rows are not read */
        if (rows > 3) x[classes] = 90.0f, x[2 * classes] = -90.0f; /* stability */
        double *xd = to_double(x, n), *dd = dalloc(n), loss = -1, loss_ref = -2, loss_fwd = -3;
        assert_int_equal(
            gnn_ref_softmax_xent(rows, classes, xd, labels, idx, nidx, &loss_ref, dd), 0);
        assert_int_equal(gnn_softmax_xent(rows, classes, x, labels, idx, nidx, &loss, d), 0);
        assert_int_equal(gnn_softmax_xent(rows, classes, x, labels, idx, nidx, &loss_fwd, NULL),
                         0);
        assert_true(loss == loss_fwd);
        if (!(fabs(loss - loss_ref) <= 1e-5 * fabs(loss_ref) + 1e-12))
            fail_msg("xent %" PRId64 "x%" PRId64 ": loss %.12g want %.12g", rows, classes, loss,
                     loss_ref);
        expect_close("dlogits", d, dd, n, 1e-5, 1.0 / (double)nidx);
        for (int64_t i = 0; i < n; i++) /* exactly zero outside the subset */
            if (dd[i] == 0.0) assert_true(d[i] == 0.0f);
        free(idx), free(x), free(d), free(labels), free(xd), free(dd);
    }
}

typedef struct {
    int64_t rows, classes, nidx;
    const int64_t *labels, *idx;
} xent_ctx;

static double xent_loss(void *vctx, const double *x)
{
    xent_ctx *t = vctx;
    double loss = 0;
    assert_int_equal(
        gnn_ref_softmax_xent(t->rows, t->classes, x, t->labels, t->idx, t->nidx, &loss, NULL),
        0);
    return loss;
}

static void test_softmax_xent_fd(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x7366;
    int64_t rows = 6, classes = 4, n = rows * classes;
    int64_t labels[6] = {0, 3, 1, 2, 2, 0}, idx[3] = {4, 0, 2};
    float *x = rand_floats(&st, n, -3, 3), d[24];
    double loss, *xd = to_double(x, n), dd[24];
    xent_ctx t = {rows, classes, 3, labels, idx};
    /* The float kernel's gradient against the double reference's loss. */
    assert_int_equal(gnn_softmax_xent(rows, classes, x, labels, idx, 3, &loss, d), 0);
    expect_fd("xent grad", xent_loss, &t, xd, n, d, 1e-5);
    /* The reference gradient itself, tighter. */
    assert_int_equal(gnn_ref_softmax_xent(rows, classes, xd, labels, idx, 3, &loss, dd), 0);
    for (int64_t i = 0; i < n; i++) {
        double h = 1e-5, x0 = xd[i];
        xd[i] = x0 + h;
        double fp = xent_loss(&t, xd);
        xd[i] = x0 - h;
        double fm = xent_loss(&t, xd);
        xd[i] = x0;
        if (!(fabs((fp - fm) / (2 * h) - dd[i]) <= 1e-8))
            fail_msg("ref xent grad[%" PRId64 "]: fd %.12g analytic %.12g", i,
                     (fp - fm) / (2 * h), dd[i]);
    }
    free(x), free(xd);
}

static void test_softmax_xent_errors(void **state)
{
    (void)state;
    float x[12] = {0}, d[12];
    int64_t labels[4] = {0, 1, 2, 3}, idx[2] = {1, 3};
    double loss = 42.0;
    for (int i = 0; i < 12; i++) d[i] = 7.0f;
    expect_error(gnn_softmax_xent(4, 3, x, labels, idx, 2, &loss, d), GNN_EINVAL,
                 "row 3: label 3 outside [0, 3)");
    expect_error(gnn_softmax_xent(4, 3, x, labels, NULL, 4, &loss, d), GNN_EINVAL, "row 3");
    assert_true(loss == 42.0);
    for (int i = 0; i < 12; i++) assert_true(d[i] == 7.0f); /* untouched */
    labels[3] = -1;
    expect_error(gnn_softmax_xent(4, 3, x, labels, idx, 2, &loss, d), GNN_EINVAL,
                 "label -1 outside");
    idx[1] = 4;
    expect_error(gnn_softmax_xent(4, 3, x, labels, idx, 2, &loss, d), GNN_EINVAL,
                 "idx[1] = 4 outside [0, 4)");
    expect_error(gnn_softmax_xent(4, 3, x, labels, NULL, 3, &loss, d), GNN_EINVAL,
                 "must equal rows");
    /* Selected rows with good labels pass; the bad label of row 3 is unread. */
    idx[1] = 2;
    assert_int_equal(gnn_softmax_xent(4, 3, x, labels, idx, 2, &loss, d), 0);
    assert_true(fabs(loss - log(3.0)) < 1e-6);
    /* No rows: loss 0 and a zero gradient. */
    assert_int_equal(gnn_softmax_xent(4, 3, x, labels, idx, 0, &loss, d), 0);
    assert_true(loss == 0.0);
    for (int i = 0; i < 12; i++) assert_true(d[i] == 0.0f);
}

/* ---- Adam --------------------------------------------------------------------- */

static void test_adam_hand_example(void **state)
{
    (void)state;
    /* w = 1, gradients 0.5 then -0.25, lr 0.1, betas (0.9, 0.999), eps 1e-8;
     * expected values worked out in 40-digit decimal arithmetic:
     *   Adam:            w1 = 0.900000002,         w2 = 0.87336629870784621
     *   Adam,  wd 0.1:   w1 = 0.9000000016666666,  w2 = 0.85444136746176225
     *   AdamW, wd 0.1:   w1 = 0.890000002,         w2 = 0.85446629868784618 */
    static const struct {
        float wd;
        int decoupled;
        double w[2], m[2], v[2];
    } cases[] = {
        {0.0f, 0, {0.90000000199999997, 0.87336629870784621}, {0.05, 0.02},
         {0.00025, 0.00031225}},
        {0.1f, 0, {0.9000000016666666, 0.85444136746176225}, {0.06, 0.038000000016666667},
         {0.00036, 0.00038523999994666665}},
        {0.1f, 1, {0.89000000199999996, 0.85446629868784618}, {0.05, 0.02},
         {0.00025, 0.00031225}},
    };
    const float g[2] = {0.5f, -0.25f};
    for (size_t t = 0; t < 3; t++) {
        gnn_adam_opts_t o = gnn_adam_defaults();
        o.lr = 0.1f;
        o.weight_decay = cases[t].wd;
        o.decoupled = cases[t].decoupled;
        float w = 1.0f, m = 0.0f, v = 0.0f;
        for (int s = 0; s < 2; s++) {
            assert_int_equal(gnn_adam(1, &w, &g[s], &m, &v, &o, s + 1), 0);
            /* Float hyper-parameters: 1 - 0.999f is 1.3e-5 off 0.001, which
             * v shows; w divides it out again in the bias correction. */
            expect_close("adam w", &w, &cases[t].w[s], 1, 1e-6, 0);
            expect_close("adam m", &m, &cases[t].m[s], 1, 1e-6, 0);
            expect_close("adam v", &v, &cases[t].v[s], 1, 3e-5, 0);
        }
    }
}

static void test_adam_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x6164;
    static const int64_t sizes[] = {1, 17, 100003};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int dec = 0; dec < 2; dec++) {
            int64_t n = sizes[s];
            gnn_adam_opts_t o = gnn_adam_defaults();
            o.lr = 0.01f;
            o.weight_decay = 0.05f;
            o.decoupled = dec;
            float *w = rand_floats(&st, n, -1, 1), *m = calloc((size_t)n, sizeof *m);
            float *v = calloc((size_t)n, sizeof *v);
            assert_non_null(m);
            assert_non_null(v);
            double *wd = to_double(w, n), *md = dalloc(n), *vd = dalloc(n);
            for (int64_t step = 1; step <= 5; step++) {
                float *g = rand_floats(&st, n, -1, 1);
                /* Keep g + wd w clear of 0: where it cancels to ~eps, the
                 * step (~lr g'/(|g'| + eps)) amplifies the float rounding of
                 * wd w itself, which the double reference does not share. */
                for (int64_t i = 0; !dec && i < n; i++)
                    if (fabsf(g[i] + o.weight_decay * w[i]) < 1e-3f) g[i] += 0.01f;
                double *gd = to_double(g, n);
                assert_int_equal(gnn_adam(n, w, g, m, v, &o, step), 0);
                gnn_ref_adam(n, wd, gd, md, vd, &o, step);
                free(g), free(gd);
            }
            expect_close("adam w", w, wd, n, 1e-5, 1e-2);
            expect_close("adam m", m, md, n, 1e-5, 1e-2);
            expect_close("adam v", v, vd, n, 1e-5, 1e-4);
            free(w), free(m), free(v), free(wd), free(md), free(vd);
        }
    float w = 1, g = 1, m = 0, v = 0;
    gnn_adam_opts_t o = gnn_adam_defaults();
    expect_error(gnn_adam(1, &w, &g, &m, &v, &o, 0), GNN_EINVAL, "step 0 < 1");
    o.beta1 = 1.0f;
    expect_error(gnn_adam(1, &w, &g, &m, &v, &o, 1), GNN_EINVAL, "betas (1, 0.999)");
    o = gnn_adam_defaults();
    o.eps = 0.0f;
    expect_error(gnn_adam(1, &w, &g, &m, &v, &o, 1), GNN_EINVAL, "bad eps");
    assert_true(w == 1.0f && m == 0.0f && v == 0.0f);
}

/* ---- Row-sparse optimisers ------------------------------------------------------ */

/* torch.optim.SparseAdam / Adagrad in double on the rows rows[i] (NULL:
 * 0 .. n - 1) of a table w (x d), gradient row i at g + i * ldg. The
 * hyper-parameters are the float values given to the kernel. */
static void ref_sparse_step(const gnn_sparse_opt_t *o, int64_t n, int64_t d, const int64_t *rows,
                            const float *g, int64_t ldg, double *w, double *s1, double *s2,
                            int64_t step)
{
    const double b1 = o->beta1, b2 = o->beta2, lr = o->lr, eps = o->eps;
    const double step_size = lr * sqrt(1.0 - pow(b2, (double)step)) / (1.0 - pow(b1, (double)step));
    for (int64_t i = 0; i < n; i++) {
        int64_t r = rows ? rows[i] : i;
        for (int64_t k = 0; k < d; k++) {
            double gk = g[i * ldg + k];
            int64_t j = r * d + k;
            if (o->kind == GNN_SPARSE_ADAGRAD) {
                s1[j] += gk * gk;
                w[j] -= lr * gk / (sqrt(s1[j]) + eps);
            } else {
                s1[j] = b1 * s1[j] + (1.0 - b1) * gk;
                s2[j] = b2 * s2[j] + (1.0 - b2) * gk * gk;
                w[j] -= step_size * s1[j] / (sqrt(s2[j]) + eps);
            }
        }
    }
}

/* A gradient of n rows of d values at stride ldg, scale * [-1, 1), its
 * padding NaN (a read of it poisons the result). */
static float *rand_grad(uint64_t *st, int64_t n, int64_t d, int64_t ldg, float scale)
{
    float *g = rand_floats(st, n * ldg, -scale, scale);
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = d; k < ldg; k++) g[i * ldg + k] = NAN;
    return g;
}

/* Rows of a (x d) table outside the marked ones: bitwise as in before. */
static void expect_rows_kept(const char *what, const float *a, const float *before,
                             const unsigned char *touched, int64_t table_rows, int64_t d,
                             int64_t step)
{
    for (int64_t r = 0; r < table_rows; r++)
        if (!touched[r] && memcmp(a + r * d, before + r * d, (size_t)d * sizeof *a))
            fail_msg("%s: row %" PRId64 " not in step %" PRId64 " changed (seed %" PRIu64 ")",
                     what, r, step, g_seed);
}

static float *fdup(const float *a, int64_t n)
{
    float *b = malloc((size_t)(n > 0 ? n : 1) * sizeof *b);
    assert_non_null(b);
    memcpy(b, a, (size_t)n * sizeof *b);
    return b;
}

/*
 * Five steps of o on a table_rows x d table: random subsets of distinct
 * rows in random order drawn from the first table_rows - 5 rows (the last
 * five are never touched), one step with no rows, one with rows NULL (the
 * first n rows), gradients at stride ldg > d. After every step w, s1 (and
 * s2 for adam) match the double reference, the rows not in the step are
 * bitwise unchanged, and so is an s2 that adagrad is given.
 */
static void sparse_opt_case(uint64_t *st, const gnn_sparse_opt_t *o, int64_t table_rows,
                            int64_t d, int64_t ldg, float gscale, int adagrad_s2)
{
    const int adam = o->kind == GNN_SPARSE_ADAM;
    const int64_t nt = table_rows * d, pool = table_rows - 5;
    float *w = rand_floats(st, nt, -1, 1), *s1 = calloc((size_t)nt, sizeof *s1), *s2 = NULL;
    assert_non_null(s1);
    if (adam) {
        s2 = calloc((size_t)nt, sizeof *s2);
        assert_non_null(s2);
    } else if (adagrad_s2) {
        s2 = rand_floats(st, nt, -1, 1); /* must stay as it is */
    }
    float *s2_start = s2 ? fdup(s2, nt) : NULL;
    double *wd = to_double(w, nt), *s1d = dalloc(nt), *s2d = dalloc(nt);
    unsigned char *touched = malloc((size_t)table_rows), *ever = calloc((size_t)table_rows, 1);
    assert_true(touched && ever);
    /* Rows per step: a large subset, one row, none, rows NULL, most rows. */
    const int64_t counts[5] = {pool / 2 + 1, 1, 0, pool / 3 + 1, pool - 2};
    for (int64_t step = 1; step <= 5; step++) {
        int64_t n = counts[step - 1];
        int64_t *perm = rand_perm(st, pool), *rows = step == 4 ? NULL : perm;
        float *g = rand_grad(st, n, d, ldg, gscale);
        /* Keep the gradients clear of 0 so that no element sits where the
         * step is ~lr g / eps (a rounding there is no formula error). */
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = 0; k < d; k++)
                if (fabsf(g[i * ldg + k]) < 1e-3f * gscale) g[i * ldg + k] = 0.5f * gscale;
        memset(touched, 0, (size_t)table_rows);
        for (int64_t i = 0; i < n; i++) touched[rows ? rows[i] : i] = ever[rows ? rows[i] : i] = 1;
        float *w0 = fdup(w, nt), *s10 = fdup(s1, nt), *s20 = s2 ? fdup(s2, nt) : NULL;
        assert_int_equal(gnn_sparse_opt_step(o, n, d, rows, table_rows, g, ldg, w, s1, s2, step),
                         0);
        ref_sparse_step(o, n, d, rows, g, ldg, wd, s1d, s2d, step);
        expect_close(adam ? "sparse adam w" : "adagrad w", w, wd, nt, 1e-6, 0.1);
        expect_close(adam ? "sparse adam s1" : "adagrad s1", s1, s1d, nt, 1e-6,
                     adam ? gscale : 1e-30);
        if (adam) expect_close("sparse adam s2", s2, s2d, nt, 1e-6, 1e-30);
        expect_rows_kept("w", w, w0, touched, table_rows, d, step);
        expect_rows_kept("s1", s1, s10, touched, table_rows, d, step);
        if (adam) expect_rows_kept("s2", s2, s20, touched, table_rows, d, step);
        free(perm), free(g), free(w0), free(s10), free(s20);
    }
    /* The last five rows never took part: their state is still zero. */
    for (int64_t r = pool; r < table_rows; r++) assert_false(ever[r]);
    for (int64_t j = pool * d; j < nt; j++) assert_true(s1[j] == 0.0f);
    if (adam)
        for (int64_t j = pool * d; j < nt; j++) assert_true(s2[j] == 0.0f);
    if (s2 && !adam) assert_memory_equal(s2, s2_start, (size_t)nt * sizeof *s2);
    free(w), free(s1), free(s2), free(s2_start), free(wd), free(s1d), free(s2d);
    free(touched), free(ever);
}

static gnn_sparse_opt_t sparse_opts(gnn_sparse_opt_kind_t kind, float lr, float b1, float b2,
                                    float eps)
{
    gnn_sparse_opt_t o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.lr = lr;
    o.beta1 = b1;
    o.beta2 = b2;
    o.eps = eps;
    return o;
}

static void test_sparse_opt_hand_example(void **state)
{
    (void)state;
    /* First Adam step, torch's defaults, lr 0.1: s1 / sqrt(s2) is
     * sign(g) / sqrt(1 - b2) and the bias corrections cancel it, so w moves
     * by lr sign(g) (less a relative 6.3e-7 for eps). */
    for (int sgn = -1; sgn <= 1; sgn += 2) {
        gnn_sparse_opt_t o = sparse_opts(GNN_SPARSE_ADAM, 0.1f, 0.9f, 0.999f, 1e-8f);
        float w = 1.0f, g = 0.5f * (float)sgn, m = 0.0f, v = 0.0f;
        assert_int_equal(gnn_sparse_opt_step(&o, 1, 1, NULL, 1, &g, 1, &w, &m, &v, 1), 0);
        double want = 1.0 - 0.1 * sgn;
        if (!(fabs(w - want) <= 1e-6))
            fail_msg("sparse adam first step: w %.9g, want %.9g", (double)w, want);
        /* s1 = (1 - b1) g, 1 - 0.9f being 0.100000024. */
        assert_true(fabsf(m - 0.05f * (float)sgn) <= 1e-7f);
    }
    /* w = 1, betas (0.5, 0.75), lr 0.5, eps 0.25 (all exact in binary),
     * gradients 1, -1, 0.5; worked out in 40-digit decimal arithmetic. The
     * first step is exactly 1/3: s1 = 0.5, sqrt(s2) = 0.5, step size
     * 0.5 sqrt(0.25) / 0.5 = 0.5, so 0.5 * 0.5 / (0.5 + 0.25). (gnn_adam's
     * placement of eps, inside the bias correction, would give 0.4.) */
    static const double adam_w[3] = {0.66666666666666667, 0.78761801913709471,
                                     0.72554901372588838};
    static const float adam_m[3] = {0.5f, -0.25f, 0.125f}, adam_v[3] = {0.25f, 0.4375f, 0.390625f};
    /* Adagrad, lr 0.5, eps 0.25, gradients 2, -1, 0.5: s1 = 4, 5, 5.25. */
    static const double ada_w[3] = {0.55555555555555556, 0.75667636340363552,
                                    0.65830104545289239};
    static const float ada_s[3] = {4.0f, 5.0f, 5.25f};
    const float ga[3] = {1.0f, -1.0f, 0.5f}, gb[3] = {2.0f, -1.0f, 0.5f};
    gnn_sparse_opt_t adam = sparse_opts(GNN_SPARSE_ADAM, 0.5f, 0.5f, 0.75f, 0.25f);
    gnn_sparse_opt_t ada = sparse_opts(GNN_SPARSE_ADAGRAD, 0.5f, 0.0f, 0.0f, 0.25f);
    float w = 1.0f, m = 0.0f, v = 0.0f, wb = 1.0f, s = 0.0f;
    /* The table has 3 rows; only row 1 takes part. */
    float tw[3] = {7.0f, 1.0f, -7.0f}, ts1[3] = {0}, ts2[3] = {0};
    const int64_t row1 = 1;
    for (int64_t step = 1; step <= 3; step++) {
        assert_int_equal(gnn_sparse_opt_step(&adam, 1, 1, NULL, 1, &ga[step - 1], 1, &w, &m, &v,
                                             step),
                         0);
        expect_close("sparse adam w", &w, &adam_w[step - 1], 1, 1e-6, 0);
        assert_true(m == adam_m[step - 1]);
        assert_true(v == adam_v[step - 1]);
        assert_int_equal(gnn_sparse_opt_step(&adam, 1, 1, &row1, 3, &ga[step - 1], 1, tw, ts1,
                                             ts2, step),
                         0);
        assert_true(tw[1] == w && ts1[1] == m && ts2[1] == v);
        assert_true(tw[0] == 7.0f && tw[2] == -7.0f && ts1[0] == 0.0f && ts2[2] == 0.0f);
        assert_int_equal(gnn_sparse_opt_step(&ada, 1, 1, NULL, 1, &gb[step - 1], 1, &wb, &s, NULL,
                                             step),
                         0);
        expect_close("adagrad w", &wb, &ada_w[step - 1], 1, 1e-6, 0);
        assert_true(s == ada_s[step - 1]);
    }
}

static void test_sparse_opt_against_reference(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x73706f;
    /* Small tables, and one large enough for the threaded path. */
    static const int64_t shapes[][3] = {{50, 7, 10}, {9, 1, 3}, {6000, 13, 16}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int64_t rows = shapes[s][0], d = shapes[s][1], ldg = shapes[s][2];
        gnn_sparse_opt_t o = sparse_opts(GNN_SPARSE_ADAM, 0.01f, 0.9f, 0.999f, 1e-8f);
        sparse_opt_case(&st, &o, rows, d, ldg, 1.0f, 0);
        /* Other betas, and an eps the size of the gradients: eps outside
         * the bias correction (torch's SparseAdam) shows. */
        o = sparse_opts(GNN_SPARSE_ADAM, 0.05f, 0.8f, 0.95f, 1e-2f);
        sparse_opt_case(&st, &o, rows, d, ldg, 1e-2f, 0);
        o = sparse_opts(GNN_SPARSE_ADAGRAD, 0.01f, 0.9f, 0.999f, 1e-10f);
        sparse_opt_case(&st, &o, rows, d, ldg, 1.0f, 0);
        o = sparse_opts(GNN_SPARSE_ADAGRAD, 0.1f, 0.0f, 0.0f, 1e-2f);
        sparse_opt_case(&st, &o, rows, d, ldg, 1e-2f, 1);
    }
}

/* gnn_sparse_opt_step refused with GNN_EINVAL (message containing want),
 * w, s1, s2 unchanged. */
static void expect_sparse_refused(const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                                  const int64_t *rows, int64_t table_rows, const float *g,
                                  int64_t ldg, float *w, float *s1, float *s2, int64_t nt,
                                  int64_t step, const char *want)
{
    float *w0 = fdup(w, nt), *s10 = fdup(s1, nt), *s20 = fdup(s2, nt);
    expect_error(gnn_sparse_opt_step(o, n, d, rows, table_rows, g, ldg, w, s1, s2, step),
                 GNN_EINVAL, want);
    assert_memory_equal(w, w0, (size_t)nt * sizeof *w);
    assert_memory_equal(s1, s10, (size_t)nt * sizeof *s1);
    assert_memory_equal(s2, s20, (size_t)nt * sizeof *s2);
    free(w0), free(s10), free(s20);
}

static void test_sparse_opt_errors(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x73706e;
    const int64_t table_rows = 8, d = 3, nt = table_rows * d;
    float *w = rand_floats(&st, nt, -1, 1), *s1 = rand_floats(&st, nt, 0, 1);
    float *s2 = rand_floats(&st, nt, 0, 1), *g = rand_floats(&st, 4 * d, -1, 1);
    int64_t rows[4] = {2, 5, 0, 7};
    for (int kind = 0; kind < 2; kind++) {
        gnn_sparse_opt_t ok = sparse_opts(kind ? GNN_SPARSE_ADAGRAD : GNN_SPARSE_ADAM, 0.1f, 0.9f,
                                          0.999f, 1e-8f),
                         o = ok;
        /* A row outside the table, late in the list: nothing changed. */
        rows[3] = table_rows;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1,
                              "row 8 at position 3 outside [0, 8)");
        rows[3] = -1;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1,
                              "row -1 at position 3");
        rows[3] = 7;
        /* rows NULL: n beyond the table. */
        expect_sparse_refused(&o, table_rows + 1, d, NULL, table_rows, g, d, w, s1, s2, nt, 1,
                              "gnn_sparse_opt_step");
        /* step, lr, eps, stride, sizes. */
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 0, "step 0 < 1");
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, -3, "step -3 < 1");
        o.lr = -0.1f;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad lr");
        o.lr = NAN;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad lr");
        o.lr = INFINITY;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad lr");
        o = ok;
        o.eps = 0.0f;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad eps");
        o.eps = -1e-8f;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad eps");
        o.eps = NAN;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "bad eps");
        o = ok;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d - 1, w, s1, s2, nt, 1,
                              "gradient stride 2 < 3");
        expect_sparse_refused(&o, -1, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "negative");
        expect_sparse_refused(&o, 4, -1, rows, table_rows, g, d, w, s1, s2, nt, 1, "negative");
        o.kind = (gnn_sparse_opt_kind_t)7;
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1,
                              "unknown optimiser");
        expect_sparse_refused(NULL, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "no options");
    }
    /* Adam's betas must lie in [0, 1). */
    static const float bad_betas[][2] = {{1.0f, 0.999f}, {0.9f, 1.0f}, {-0.1f, 0.999f},
                                         {0.9f, -0.5f}, {NAN, 0.999f}, {0.9f, NAN}};
    for (size_t b = 0; b < sizeof bad_betas / sizeof bad_betas[0]; b++) {
        gnn_sparse_opt_t o =
            sparse_opts(GNN_SPARSE_ADAM, 0.1f, bad_betas[b][0], bad_betas[b][1], 1e-8f);
        expect_sparse_refused(&o, 4, d, rows, table_rows, g, d, w, s1, s2, nt, 1, "betas");
    }
    /* A bad row past the threading threshold: the first one is named. */
    const int64_t big = 40000;
    float *bw = rand_floats(&st, big, -1, 1), *bs1 = calloc((size_t)big, sizeof *bs1);
    float *bs2 = calloc((size_t)big, sizeof *bs2), *bg = rand_floats(&st, big, -1, 1);
    int64_t *brows = rand_perm(&st, big);
    assert_true(bs1 && bs2);
    brows[39000] = big;
    brows[33001] = -2;
    gnn_sparse_opt_t o = sparse_opts(GNN_SPARSE_ADAM, 0.1f, 0.9f, 0.999f, 1e-8f);
    expect_sparse_refused(&o, big, 1, brows, big, bg, 1, bw, bs1, bs2, big, 1,
                          "row -2 at position 33001 outside [0, 40000)");
    free(bw), free(bs1), free(bs2), free(bg), free(brows);
    free(w), free(s1), free(s2), free(g);
}

/* ---- Strided row copies ----------------------------------------------------------- */

/* dst (n x ldd, a copy of dst0) after gnn_copy_rows into columns
 * [off, off + f): those hold the source rows bit for bit, the rest is
 * dst0's. */
static void expect_copied(const float *dst, const float *dst0, int64_t n, int64_t ldd,
                          int64_t off, int64_t f, const float *src, int64_t lds,
                          const int64_t *idx)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < ldd; k++) {
            int in = k >= off && k < off + f;
            const float *want = in ? &src[(idx ? idx[i] : i) * lds + k - off] : &dst0[i * ldd + k];
            if (memcmp(&dst[i * ldd + k], want, sizeof *want))
                fail_msg("copy_rows: dst[%" PRId64 "][%" PRId64 "] = %.9g, want %.9g (%s; seed %" PRIu64
                         ")",
                         i, k, (double)dst[i * ldd + k], (double)*want,
                         in ? "copied" : "outside the block", g_seed);
        }
}

static void test_copy_rows(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x637079;
    /* {src_rows, n, f, lds, ldd, dst column offset, src column offset} */
    static const int64_t cases[][7] = {{10, 4, 3, 5, 7, 2, 1},    {1, 1, 1, 1, 1, 0, 0},
                                       {7, 12, 5, 5, 9, 4, 0},    {300, 250, 33, 40, 70, 30, 7},
                                       {2000, 3000, 16, 20, 48, 8, 4}, {5, 3, 0, 2, 2, 1, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t src_rows = cases[c][0], n = cases[c][1], f = cases[c][2], lds = cases[c][3],
                ldd = cases[c][4], off = cases[c][5], soff = cases[c][6];
        float *src = rand_floats(&st, src_rows * lds, -1, 1);
        float *dst0 = rand_floats(&st, n * ldd, 2, 3), *dst = fdup(dst0, n * ldd);
        int64_t *idx = malloc((size_t)n * sizeof *idx);
        assert_non_null(idx);
        /* Repeats allowed; the last source row always among them. */
        for (int64_t i = 0; i < n; i++) idx[i] = (int64_t)(tu_rng_next(&st) % (uint64_t)src_rows);
        idx[n / 2] = src_rows - 1;
        assert_int_equal(gnn_copy_rows(n, f, src + soff, lds, src_rows, idx, dst + off, ldd), 0);
        expect_copied(dst, dst0, n, ldd, off, f, src + soff, lds, idx);

        /* idx NULL: the first n rows (n <= src_rows). */
        int64_t m = n < src_rows ? n : src_rows;
        memcpy(dst, dst0, (size_t)(n * ldd) * sizeof *dst);
        assert_int_equal(gnn_copy_rows(m, f, src + soff, lds, src_rows, NULL, dst + off, ldd), 0);
        expect_copied(dst, dst0, m, ldd, off, f, src + soff, lds, NULL);
        assert_memory_equal(dst + m * ldd, dst0 + m * ldd, (size_t)((n - m) * ldd) * sizeof *dst);

        /* Bad indices, bad strides: GNN_EINVAL, nothing written. */
        if (f > 0) {
            memcpy(dst, dst0, (size_t)(n * ldd) * sizeof *dst);
            int64_t keep = idx[n - 1];
            char want[96];
            idx[n - 1] = src_rows;
            snprintf(want, sizeof want, "index %" PRId64 " at position %" PRId64 " outside [0, %" PRId64 ")",
                     src_rows, n - 1, src_rows);
            expect_error(gnn_copy_rows(n, f, src, lds, src_rows, idx, dst + off, ldd), GNN_EINVAL,
                         want);
            idx[n - 1] = -1;
            expect_error(gnn_copy_rows(n, f, src, lds, src_rows, idx, dst + off, ldd), GNN_EINVAL,
                         "index -1");
            idx[n - 1] = keep;
            expect_error(gnn_copy_rows(src_rows + 1, f, src, lds, src_rows, NULL, dst, ldd),
                         GNN_EINVAL, "gnn_copy_rows");
            expect_error(gnn_copy_rows(n, f, src, f - 1, src_rows, idx, dst, ldd), GNN_EINVAL,
                         "below the width");
            expect_error(gnn_copy_rows(n, f, src, lds, src_rows, idx, dst, f - 1), GNN_EINVAL,
                         "below the width");
            assert_memory_equal(dst, dst0, (size_t)(n * ldd) * sizeof *dst);
        }
        free(src), free(dst0), free(dst), free(idx);
    }
    /* No rows, and negative sizes. */
    float x = 1.0f, y = 5.0f;
    int64_t i0 = 0;
    assert_int_equal(gnn_copy_rows(0, 1, &x, 1, 1, &i0, &y, 1), 0);
    assert_int_equal(gnn_copy_rows(0, 1, &x, 1, 0, NULL, &y, 1), 0);
    assert_true(y == 5.0f);
    expect_error(gnn_copy_rows(-1, 1, &x, 1, 1, NULL, &y, 1), GNN_EINVAL, "negative");
    expect_error(gnn_copy_rows(1, -1, &x, 1, 1, NULL, &y, 1), GNN_EINVAL, "negative");
    /* The first bad index past the threading threshold is the one named. */
    const int64_t big = 40000;
    int64_t *bidx = malloc((size_t)big * sizeof *bidx);
    float *bdst = malloc((size_t)big * sizeof *bdst);
    assert_true(bidx && bdst);
    for (int64_t i = 0; i < big; i++) bidx[i] = 0, bdst[i] = 5.0f;
    bidx[39999] = 1;
    bidx[32800] = 3;
    expect_error(gnn_copy_rows(big, 1, &x, 1, 1, bidx, bdst, 1), GNN_EINVAL,
                 "index 3 at position 32800 outside [0, 1)");
    for (int64_t i = 0; i < big; i++) assert_true(bdst[i] == 5.0f);
    free(bidx), free(bdst);
    assert_true(y == 5.0f);
}

/* ---- Arg-max and accuracy ----------------------------------------------------- */

static void test_argmax_and_count_correct(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x616d;
    /* Ties go to the lowest index. */
    float x[12] = {1, 3, 3, 2, 5, 5, 5, 5, -1, -2, -1, -3};
    int64_t out[3];
    assert_int_equal(gnn_argmax_rows(3, 4, x, out), 0);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 0);
    assert_int_equal(out[2], 0);
    /* Random rows with many ties (values on a coarse grid). */
    static const int64_t shapes[][2] = {{1, 1}, {13, 5}, {4000, 40}};
    for (size_t s = 0; s < 3; s++) {
        int64_t rows = shapes[s][0], classes = shapes[s][1], n = rows * classes;
        float *a = rand_floats(&st, n, 0, 1);
        for (int64_t i = 0; i < n; i++) a[i] = floorf(a[i] * 8.0f);
        double *ad = to_double(a, n);
        int64_t *got = malloc((size_t)rows * sizeof *got), *want = malloc((size_t)rows * sizeof *want);
        int64_t *labels = malloc((size_t)rows * sizeof *labels);
        assert_non_null(got);
        assert_non_null(want);
        assert_non_null(labels);
        gnn_ref_argmax_rows(rows, classes, ad, want);
        assert_int_equal(gnn_argmax_rows(rows, classes, a, got), 0);
        assert_memory_equal(got, want, (size_t)rows * sizeof *got);
        for (int64_t r = 0; r < rows; r++)
            labels[r] = (tu_rng_next(&st) & 1) ? want[r] : (int64_t)(tu_rng_next(&st) % (uint64_t)classes);
        int64_t nidx = rows / 2 + 1, *idx = rand_perm(&st, rows), correct = -1, expect = 0;
        for (int64_t j = 0; j < nidx; j++) expect += want[idx[j]] == labels[idx[j]];
        assert_int_equal(gnn_count_correct(rows, classes, a, labels, idx, nidx, &correct), 0);
        assert_int_equal(correct, expect);
        expect = 0;
        for (int64_t r = 0; r < rows; r++) expect += want[r] == labels[r];
        assert_int_equal(gnn_count_correct(rows, classes, a, labels, NULL, rows, &correct), 0);
        assert_int_equal(correct, expect);
        free(a), free(ad), free(got), free(want), free(labels), free(idx);
    }
    int64_t labels[3] = {1, 0, 0}, idx[2] = {0, 3}, correct = -1;
    expect_error(gnn_count_correct(3, 4, x, labels, idx, 2, &correct), GNN_EINVAL,
                 "idx[1] = 3 outside [0, 3)");
    assert_int_equal(correct, -1);
    expect_error(gnn_argmax_rows(2, 0, x, out), GNN_EINVAL, "no classes");
}

/* ---- Determinism and allocation failure -------------------------------------- */

static void test_reductions_independent_of_threads(void **state)
{
    (void)state;
    uint64_t st = g_seed ^ 0x7468;
    int64_t rows = 10000, cols = 7, classes = 10;
    float *dy = rand_floats(&st, rows * cols, -1, 1), *x = rand_floats(&st, rows * classes, -3, 3);
    int64_t *labels = malloc((size_t)rows * sizeof *labels);
    assert_non_null(labels);
    for (int64_t r = 0; r < rows; r++) labels[r] = r % classes;
    float first_db[7], db[7];
    double first_loss = 0, loss;
    int saved = omp_get_max_threads();
    for (int nt = 1; nt <= 4; nt++) {
        omp_set_num_threads(nt);
        assert_int_equal(gnn_bias_grad(rows, cols, dy, db), 0);
        assert_int_equal(gnn_softmax_xent(rows, classes, x, labels, NULL, rows, &loss, NULL), 0);
        if (nt == 1) {
            memcpy(first_db, db, sizeof db);
            first_loss = loss;
        }
        assert_memory_equal(db, first_db, sizeof db);
        assert_memory_equal(&loss, &first_loss, sizeof loss);
    }
    omp_set_num_threads(saved);
    free(dy), free(x), free(labels);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    float dy[6] = {1, 2, 3, 4, 5, 6}, db[3] = {9, 9, 9}, d[6] = {9, 9, 9, 9, 9, 9};
    int64_t labels[2] = {0, 2};
    double loss = 42.0;
    gnn_alloc_fail_at(1);
    assert_int_equal(gnn_bias_grad(2, 3, dy, db), GNN_ENOMEM);
    gnn_alloc_fail_at(1);
    assert_int_equal(gnn_softmax_xent(2, 3, dy, labels, NULL, 2, &loss, d), GNN_ENOMEM);
    gnn_alloc_fail_at(0);
    assert_true(db[0] == 9 && db[1] == 9 && db[2] == 9 && loss == 42.0);
    for (int i = 0; i < 6; i++) assert_true(d[i] == 9);
    assert_int_equal(gnn_bias_grad(2, 3, dy, db), 0);
    assert_true(db[0] == 5 && db[1] == 7 && db[2] == 9);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_dense: seed %llu (GNN_TEST_SEED=%llu to replay)\n", (unsigned long long)g_seed,
           (unsigned long long)g_seed);
    fflush(stdout);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_philox_known_answers),
        cmocka_unit_test(test_rng_uniform_known_answers),
        cmocka_unit_test(test_philox_blocks),
        cmocka_unit_test(test_dropout_known_masks),
        cmocka_unit_test(test_gemm_against_reference),
        cmocka_unit_test(test_gemm_rows),
        cmocka_unit_test(test_gemm_pair),
        cmocka_unit_test(test_gemm_bad_shapes),
        cmocka_unit_test(test_gemm_backward_fd),
        cmocka_unit_test(test_bias_against_reference),
        cmocka_unit_test(test_bias_act),
        cmocka_unit_test(test_bias_act_drop),
        cmocka_unit_test(test_bias_backward_fd),
        cmocka_unit_test(test_relu_against_reference),
        cmocka_unit_test(test_axpby_gather_against_reference),
        cmocka_unit_test(test_relu_dropout_backward_fd),
        cmocka_unit_test(test_dropout_fraction_and_reference),
        cmocka_unit_test(test_dropout_offsets),
        cmocka_unit_test(test_dropout_identity_and_errors),
        cmocka_unit_test(test_dropout_rows_match_whole_matrix),
        cmocka_unit_test(test_softmax_xent_against_reference),
        cmocka_unit_test(test_softmax_xent_fd),
        cmocka_unit_test(test_softmax_xent_errors),
        cmocka_unit_test(test_adam_hand_example),
        cmocka_unit_test(test_adam_against_reference),
        cmocka_unit_test(test_sparse_opt_hand_example),
        cmocka_unit_test(test_sparse_opt_against_reference),
        cmocka_unit_test(test_sparse_opt_errors),
        cmocka_unit_test(test_copy_rows),
        cmocka_unit_test(test_argmax_and_count_correct),
        cmocka_unit_test(test_reductions_independent_of_threads),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
