/*
 * The CUDA backend against the CPU backend: every operation of
 * kernels/backend.h on fresh random inputs, the CPU backend's result being
 * the reference.
 *
 * Each GPU output buffer is filled with NaN before the call that writes
 * it, so an element the kernel leaves unwritten shows up as a NaN (which
 * fails every comparison). Comparisons:
 *  - float results: max|gpu - cpu| / max(max|cpu|, tiny) < 1e-5 over the
 *    whole result;
 *  - aggregation sums (sum, mean, gcn forward and backward, max backward):
 *    each element within 1e-5 of the largest magnitude of its row, the
 *    magnitude being the same aggregation on |x|, |w|, |dy| (run on the CPU
 *    backend). A hub row sums thousands of terms of both signs: its result
 *    can be small next to its terms, and the float rounding of a sum
 *    follows the terms, not the result;
 *  - exact equality for selections and integers: max forward and its
 *    arg-max (the workspace), argmax_rows, count_correct, gather_rows;
 *  - dropout masks: the same zeros, values within 1e-6 relative;
 *  - row-sparse optimiser state: each element within 1e-6 of max(|cpu|,
 *    a scale); row copies: the same bits, columns outside the block too.
 * Aggregation runs every built-in with every SpMM implementation of the
 * CUDA backend (cusparse, rowcache, balanced, auto; deterministic off and
 * on) on graphs with hubs of more than 5000 entries, empty rows, repeated
 * edges, rectangular and empty shapes, source degrees given from outside,
 * at widths 1 to 513; with deterministic on, repeated runs must give the
 * same bits, and only the own kernels may run (cuSPARSE's CSR_ALG3 gave
 * different bits on the power-law graph here). The lse plug-in (path in
 * argv[1], built with CUDA entry points) is checked the same way against
 * its own CPU entry points. Graph attention (the built-in gat's scores,
 * the softmax and aggregation with attention dropout, their backward, ELU)
 * runs step by step from the CPU's inputs: the dropout signs of the
 * weights must match exactly, the values within TOL. A step captured
 * once (CUDA graph) and launched with each step's scalars gives the bits
 * of the step queued with its own arguments. Past 2^31 elements (a 8.7 GB
 * matrix, where the device has room), the element-wise ops, the gather, a
 * GEMM and every SpMM implementation (cuSPARSE where it takes the sizes)
 * give the CPU's bits on the rows around element 2^31 and at both ends.
 *
 * Without a CUDA device it prints SKIPPED and exits 77. Prints its seed;
 * GNN_TEST_SEED replays one.
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
#include "kernels/aggr.h"
#include "kernels/backend.h"
#include "kernels/cuda/device.h"
#include "kernels/spmm.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOL 1e-5      /* relative, float results */
#define MASK_TOL 1e-6 /* relative, kept dropout values */
#define TINY 1e-30

static uint64_t g_seed;
static const char *g_lse_path;   /* lse_cuda.so, or NULL */
static const char *g_gatv2_path; /* gatv2_cuda.so, or NULL */
static gnn_backend_t *g_cpu, *g_gpu;
static char g_ctx[256]; /* what is being checked, for failure messages */

/* Say what is being checked (printf format). */
static void context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void context(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_ctx, sizeof g_ctx, fmt, ap);
    va_end(ap);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- Random data ------------------------------------------------------------ */

static int64_t rng_below(uint64_t *s, int64_t n)
{
    return (int64_t)(tu_rng_next(s) % (uint64_t)n);
}

static double rng_u01(uint64_t *s) /* [0, 1), 53 bits */
{
    return (double)(tu_rng_next(s) >> 11) * 0x1p-53;
}

static float rng_float(uint64_t *s) /* [-1, 1), exact in float */
{
    return (float)(tu_rng_next(s) >> 40) * 0x1p-23f - 1.0f;
}

/* n floats scale * [-1, 1) (malloc; at least one element). */
static float *rand_floats(uint64_t *s, int64_t n, float scale)
{
    float *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = scale * rng_float(s);
    return a;
}

/* n floats of either sign with |x| in [0.5, 1.5): none is zero. */
static float *rand_nonzero(uint64_t *s, int64_t n)
{
    float *a = rand_floats(s, n, 1.0f);
    for (int64_t i = 0; i < n; i++) a[i] = a[i] < 0 ? a[i] - 0.5f : a[i] + 0.5f;
    return a;
}

static float *abs_floats(const float *x, int64_t n)
{
    float *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
    assert_non_null(a);
    for (int64_t i = 0; i < n; i++) a[i] = fabsf(x[i]);
    return a;
}

/* ---- A buffer on both backends ------------------------------------------------ */

typedef struct {
    void *c, *g; /* on the CPU backend (host memory) and on the CUDA backend */
    size_t bytes;
} pair_t;

static void *cpu_buf(size_t bytes)
{
    void *p = NULL;
    assert_int_equal(gnn_be_alloc(g_cpu, bytes, &p), 0);
    assert_non_null(p);
    return p;
}

static pair_t pair_alloc(size_t bytes)
{
    pair_t p = {cpu_buf(bytes), NULL, bytes};
    if (gnn_be_alloc(g_gpu, bytes, &p.g) != 0)
        fail_msg("%s: CUDA allocation of %zu bytes: %s", g_ctx, bytes, gnn_error_message());
    assert_non_null(p.g);
    return p;
}

/* The same host data into both sides. */
static void pair_set(const pair_t *p, const void *host)
{
    assert_int_equal(gnn_be_upload(g_cpu, p->c, host, p->bytes), 0);
    if (gnn_be_upload(g_gpu, p->g, host, p->bytes) != 0)
        fail_msg("%s: upload: %s", g_ctx, gnn_error_message());
}

static pair_t pair_up(const void *host, size_t bytes)
{
    pair_t p = pair_alloc(bytes);
    pair_set(&p, host);
    return p;
}

static void pair_free(pair_t *p)
{
    gnn_be_free(g_cpu, p->c);
    gnn_be_free(g_gpu, p->g);
    p->c = p->g = NULL;
}

/* NaN in every float of a GPU buffer (after the work queued before). */
static void poison_gpu(void *d, size_t bytes)
{
    assert_int_equal(bytes % sizeof(float), 0);
    if (gnn_be_sync(g_gpu) != 0) fail_msg("%s: sync: %s", g_ctx, gnn_error_message());
    if (gnn_cuda_fill_f32(d, bytes / sizeof(float), NAN) != 0)
        fail_msg("%s: NaN fill: %s", g_ctx, gnn_error_message());
}

/* NaN on both sides of an output pair. */
static void poison(const pair_t *p)
{
    float *c = p->c;
    for (size_t i = 0; i < p->bytes / sizeof(float); i++) c[i] = NAN;
    poison_gpu(p->g, p->bytes);
}

static void fetch_into(void *host, const void *d, size_t bytes)
{
    if (gnn_be_download(g_gpu, host, d, bytes) != 0)
        fail_msg("%s: download: %s", g_ctx, gnn_error_message());
}

/* A host copy of the GPU side of p (malloc). */
static void *fetch(const pair_t *p)
{
    void *h = malloc(p->bytes ? p->bytes : 1);
    assert_non_null(h);
    fetch_into(h, p->g, p->bytes);
    return h;
}

/* Both backends ran the same call: rc_c from the CPU, rc_g from CUDA. */
static void expect_ok(int rc_c, int rc_g)
{
    if (rc_c != 0) fail_msg("%s: CPU backend failed (%d): %s", g_ctx, rc_c, gnn_error_message());
    if (rc_g != 0) fail_msg("%s: CUDA backend failed (%d): %s", g_ctx, rc_g, gnn_error_message());
}

static void expect_rc(int rc, int want, const char *side)
{
    if (rc != want)
        fail_msg("%s: %s backend returned %d, expected %d (%s)", g_ctx, side, rc, want,
                 gnn_error_message());
}

/* ---- Comparisons -------------------------------------------------------------- */

static void not_finite(const float *got, const float *want, int64_t i)
{
    if (!isfinite(want[i]))
        fail_msg("%s: CPU result [%" PRId64 "] = %g is not finite (seed %" PRIu64 ")", g_ctx, i,
                 (double)want[i], g_seed);
    if (!isfinite(got[i]))
        fail_msg("%s: CUDA result [%" PRId64
                 "] = %g (CPU %g): unwritten or not finite (seed %" PRIu64 ")",
                 g_ctx, i, (double)got[i], (double)want[i], g_seed);
}

/* max|got - want| / max(max|want|, tiny) < TOL, nothing non-finite. */
static void check_close(const float *got, const float *want, int64_t n)
{
    double maxref = 0, maxdiff = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) not_finite(got, want, i);
        double d = fabs((double)got[i] - (double)want[i]);
        if (fabs((double)want[i]) > maxref) maxref = fabs((double)want[i]);
        if (d > maxdiff) maxdiff = d, worst = i;
    }
    if (maxdiff > 0 && !(maxdiff < TOL * fmax(maxref, TINY)))
        fail_msg("%s: relative error %.3g at [%" PRId64 "]: CUDA %.9g, CPU %.9g, max|CPU| %.6g "
                 "(seed %" PRIu64 ")",
                 g_ctx, maxdiff / fmax(maxref, TINY), worst, (double)got[worst],
                 (double)want[worst], maxref, g_seed);
}

/* rows x f results: each element within TOL of the largest entry of its
 * row of mag (the same computation on absolute values). */
static void check_rows(const float *got, const float *want, const float *mag, int64_t rows,
                       int64_t f)
{
    for (int64_t r = 0; r < rows; r++) {
        double rm = 0;
        for (int64_t k = 0; k < f; k++)
            if (fabs((double)mag[r * f + k]) > rm) rm = fabs((double)mag[r * f + k]);
        for (int64_t k = 0; k < f; k++) {
            int64_t i = r * f + k;
            if (!isfinite(got[i]) || !isfinite(want[i])) not_finite(got, want, i);
            double d = fabs((double)got[i] - (double)want[i]);
            if (d > 0 && !(d <= TOL * fmax(rm, TINY)))
                fail_msg("%s: row %" PRId64 " col %" PRId64 ": CUDA %.9g, CPU %.9g (error %.3g of "
                         "the row's magnitude %.6g; seed %" PRIu64 ")",
                         g_ctx, r, k, (double)got[i], (double)want[i], d / fmax(rm, TINY), rm,
                         g_seed);
        }
    }
}

/* Equal as floats (a selection: no rounding allowed; +0 == -0). */
static void check_equal(const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) not_finite(got, want, i);
        if (got[i] != want[i])
            fail_msg("%s: [%" PRId64 "]: CUDA %.9g, CPU %.9g, must be equal (seed %" PRIu64 ")",
                     g_ctx, i, (double)got[i], (double)want[i], g_seed);
    }
}

/* Dropout results of nonzero inputs: the same elements dropped, the kept
 * ones equal within MASK_TOL. */
static void check_mask(const float *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) not_finite(got, want, i);
        if ((got[i] == 0.0f) != (want[i] == 0.0f))
            fail_msg("%s: mask differs at [%" PRId64 "]: CUDA %.9g, CPU %.9g (seed %" PRIu64 ")",
                     g_ctx, i, (double)got[i], (double)want[i], g_seed);
        if (fabs((double)got[i] - (double)want[i]) > MASK_TOL * fabs((double)want[i]))
            fail_msg("%s: kept value [%" PRId64 "]: CUDA %.9g, CPU %.9g (seed %" PRIu64 ")", g_ctx,
                     i, (double)got[i], (double)want[i], g_seed);
    }
}

static void check_i64(const int64_t *got, const int64_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: [%" PRId64 "]: CUDA %" PRId64 ", CPU %" PRId64 " (seed %" PRIu64 ")",
                     g_ctx, i, got[i], want[i], g_seed);
}

static void check_i32(const int32_t *got, const int32_t *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i])
            fail_msg("%s: arg-max [%" PRId64 "]: CUDA %" PRId32 ", CPU %" PRId32 " (seed %" PRIu64
                     ")",
                     g_ctx, i, got[i], want[i], g_seed);
}

/* Two runs of the same computation: the same bits (what names the array). */
static void check_bits(const void *a, const void *b, size_t bytes, const char *what)
{
    if (!memcmp(a, b, bytes)) return;
    const unsigned char *x = a, *y = b;
    size_t i = 0;
    while (x[i] == y[i]) i++;
    fail_msg("%s: %s differs between two deterministic runs at element %zu (seed %" PRIu64 ")",
             g_ctx, what, i / 4, g_seed);
}

/* Fetch the GPU side of a float output and compare it with the CPU side. */
static void expect_close(const pair_t *p, int64_t n)
{
    float *h = fetch(p);
    check_close(h, p->c, n);
    free(h);
}

static void expect_mask(const pair_t *p, int64_t n)
{
    float *h = fetch(p);
    check_mask(h, p->c, n);
    free(h);
}

/* ---- Opening and buffers ------------------------------------------------------ */

static void test_open(void **state)
{
    (void)state;
    context("open");
    assert_int_equal(gnn_backend_kind(g_gpu), GNN_BACKEND_CUDA);
    assert_false(gnn_be_host_memory(g_gpu));
    assert_true(gnn_be_host_memory(g_cpu));
    if (strncmp(gnn_backend_describe(g_gpu), "cuda:0 (", 8))
        fail_msg("describe: \"%s\"", gnn_backend_describe(g_gpu));

    gnn_backend_t *be = (gnn_backend_t *)(uintptr_t)1;
    int rc = gnn_backend_open("cuda:999", &be);
    if (rc != GNN_ENODEV)
        fail_msg("cuda:999: %d (%s), expected GNN_ENODEV", rc, gnn_error_message());
    assert_null(be);
    if (!strcasestr(gnn_error_message(), "cuda"))
        fail_msg("cuda:999: message \"%s\" does not say what is missing", gnn_error_message());

    /* auto takes the GPU when there is one. */
    assert_int_equal(gnn_backend_open("auto", &be), 0);
    assert_int_equal(gnn_backend_kind(be), GNN_BACKEND_CUDA);
    gnn_backend_close(be);

    assert_int_equal(gnn_be_set_spmm(g_gpu, GNN_SPMM_COUNT_, 0), GNN_EINVAL);
    for (int i = 0; i < GNN_SPMM_COUNT_; i++)
        for (int det = 0; det <= 1; det++)
            assert_int_equal(gnn_be_set_spmm(g_gpu, (gnn_spmm_impl_t)i, det), 0);
    assert_int_equal(gnn_be_set_spmm(g_gpu, GNN_SPMM_AUTO, 0), 0);
}

static void test_memory(void **state)
{
    (void)state;
    context("memory");
    void *z0 = NULL, *z1 = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, 0, &z0), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, 0, &z1), 0);
    assert_true(z0 && z1 && z0 != z1);
    gnn_be_free(g_gpu, z0), gnn_be_free(g_gpu, z1), gnn_be_free(g_gpu, NULL);

    uint64_t s = g_seed ^ 0x6d656d;
    const int64_t n = 100003;
    const size_t bytes = (size_t)n * sizeof(float);
    float *h = rand_floats(&s, n, 1.0f), *back = malloc(bytes);
    assert_non_null(back);
    float *d = NULL, *d2 = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, bytes, (void **)&d), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, bytes, (void **)&d2), 0);
    assert_int_equal((uintptr_t)d % 64, 0);
    assert_int_equal((uintptr_t)d2 % 64, 0);
    assert_int_equal(gnn_be_upload(g_gpu, d, h, bytes), 0);
    assert_int_equal(gnn_be_copy(g_gpu, d2, d, bytes), 0);
    assert_int_equal(gnn_be_download(g_gpu, back, d2, bytes), 0);
    if (memcmp(back, h, bytes)) fail_msg("upload, copy, download changed the data");

    /* Zero a stretch that starts and ends inside words. */
    assert_int_equal(gnn_be_zero(g_gpu, (char *)d2 + 6, 37), 0);
    assert_int_equal(gnn_be_download(g_gpu, back, d2, bytes), 0);
    const unsigned char *bb = (const unsigned char *)back, *hb = (const unsigned char *)h;
    for (size_t i = 0; i < 64; i++)
        if (bb[i] != (i >= 6 && i < 43 ? 0 : hb[i]))
            fail_msg("gnn_be_zero(6, 37 bytes): byte %zu is %u", i, bb[i]);
    if (memcmp(back + 16, h + 16, bytes - 16 * sizeof(float))) fail_msg("zero wrote too far");

    /* Offsets into buffers, both ways; zero sizes do nothing. */
    assert_int_equal(gnn_be_upload(g_gpu, d2 + 5, h + 1000, 77 * sizeof(float)), 0);
    float part[77];
    assert_int_equal(gnn_be_download(g_gpu, part, d2 + 5, sizeof part), 0);
    if (memcmp(part, h + 1000, sizeof part)) fail_msg("upload/download at an offset");
    assert_int_equal(gnn_be_copy(g_gpu, d2 + 100, d + 7, 3 * sizeof(float)), 0);
    assert_int_equal(gnn_be_download(g_gpu, part, d2 + 99, 5 * sizeof(float)), 0);
    assert_true(part[1] == h[7] && part[2] == h[8] && part[3] == h[9] && part[4] == h[103]);
    /* Through pinned staging memory (gnn_be_host_alloc), both ways. */
    float *pin = NULL;
    assert_int_equal(gnn_be_host_alloc(g_gpu, bytes, (void **)&pin), 0);
    memcpy(pin, h, bytes);
    assert_int_equal(gnn_be_upload(g_gpu, d2, pin, bytes), 0);
    memset(pin, 0, bytes);
    assert_int_equal(gnn_be_download(g_gpu, pin, d2, bytes), 0);
    if (memcmp(pin, h, bytes)) fail_msg("upload and download through pinned memory");
    gnn_be_host_free(g_gpu, pin);
    gnn_be_host_free(g_gpu, NULL);
    assert_int_equal(gnn_be_upload(g_gpu, d, h, 0), 0);
    assert_int_equal(gnn_be_copy(g_gpu, d, d2, 0), 0);
    assert_int_equal(gnn_be_zero(g_gpu, d, 0), 0);
    assert_int_equal(gnn_be_download(g_gpu, part, d, 0), 0);
    assert_int_equal(gnn_be_sync(g_gpu), 0);

    /* upload_take: the host buffer is freed and its contents are on the GPU. */
    float *take = gnn_malloc(bytes), *took = NULL;
    assert_non_null(take);
    memcpy(take, h, bytes);
    assert_int_equal(gnn_be_upload_take(g_gpu, (void **)&take, bytes, (void **)&took), 0);
    assert_null(take);
    assert_non_null(took);
    assert_int_equal(gnn_be_download(g_gpu, back, took, bytes), 0);
    if (memcmp(back, h, bytes)) fail_msg("upload_take");
    gnn_be_free(g_gpu, took);

    gnn_be_free(g_gpu, d), gnn_be_free(g_gpu, d2);
    free(h), free(back);
}

/* ---- Dense ---------------------------------------------------------------------- */

static void gemm_case(uint64_t *s, int ta, int tb, int64_t m, int64_t n, int64_t k, int64_t pad,
                      float alpha, float beta)
{
    const int64_t lda = (ta ? m : k) + pad, rows_a = ta ? k : m;
    const int64_t ldb = (tb ? k : n) + pad, rows_b = tb ? n : k;
    const int64_t ldc = n + (beta == 0.0f ? 0 : pad); /* poisoned C: all of it written */
    context("gemm ta=%d tb=%d m=%" PRId64 " n=%" PRId64 " k=%" PRId64 " pad %" PRId64
            " alpha %g beta %g",
            ta, tb, m, n, k, pad, (double)alpha, (double)beta);
    float *a = rand_floats(s, rows_a * lda, 1.0f), *b = rand_floats(s, rows_b * ldb, 1.0f);
    float *c = rand_floats(s, m * ldc, 1.0f);
    pair_t A = pair_up(a, (size_t)(rows_a * lda) * sizeof(float));
    pair_t B = pair_up(b, (size_t)(rows_b * ldb) * sizeof(float));
    pair_t C = pair_up(c, (size_t)(m * ldc) * sizeof(float));
    if (beta == 0.0f) poison(&C); /* BLAS convention: C is not read */
    expect_ok(gnn_be_gemm(g_cpu, ta, tb, m, n, k, alpha, A.c, lda, B.c, ldb, beta, C.c, ldc),
              gnn_be_gemm(g_gpu, ta, tb, m, n, k, alpha, A.g, lda, B.g, ldb, beta, C.g, ldc));
    expect_close(&C, m * ldc);
    pair_free(&A), pair_free(&B), pair_free(&C);
    free(a), free(b), free(c);
}

static void test_gemm(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x67656d;
    static const struct {
        int64_t m, n, k, pad;
        float alpha, beta;
    } cases[] = {
        {37, 53, 29, 0, 1.0f, 0.0f},   {37, 53, 29, 3, 1.5f, 0.5f}, {1, 1, 1, 0, -2.0f, 1.0f},
        {128, 64, 300, 0, 1.0f, 0.0f}, {5, 301, 2, 1, 0.3f, -1.0f}, {200, 7, 513, 2, 1.0f, 0.0f},
        {64, 33, 1, 0, 0.7f, 0.0f},    {6, 5, 0, 1, 1.0f, 0.0f},    {6, 5, 0, 2, 1.0f, 0.5f},
    };
    for (int ta = 0; ta <= 1; ta++)
        for (int tb = 0; tb <= 1; tb++)
            for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
                gemm_case(&s, ta, tb, cases[i].m, cases[i].n, cases[i].k, cases[i].pad,
                          cases[i].alpha, cases[i].beta);

    /* Empty products do nothing; a negative size is refused. */
    context("gemm errors");
    float *x = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, 64, (void **)&x), 0);
    assert_int_equal(gnn_be_gemm(g_gpu, 0, 0, 0, 4, 4, 1.0f, x, 4, x, 4, 0.0f, x, 4), 0);
    assert_int_equal(gnn_be_gemm(g_gpu, 0, 0, 4, 0, 4, 1.0f, x, 4, x, 4, 0.0f, x, 1), 0);
    expect_rc(gnn_be_gemm(g_gpu, 0, 0, -1, 4, 4, 1.0f, x, 4, x, 4, 0.0f, x, 4), GNN_EINVAL, "CUDA");
    expect_rc(gnn_be_gemm(g_gpu, 0, 0, 4, 4, 4, 1.0f, x, 3, x, 4, 0.0f, x, 4), GNN_EINVAL, "CUDA");
    gnn_be_free(g_gpu, x);
}

static void test_bias(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x626961;
    static const int64_t shapes[][2] = {{37, 53}, {1000, 7}, {3, 1}, {1, 513}, {5000, 33}, {0, 5}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int64_t rows = shapes[i][0], cols = shapes[i][1];
        context("bias_add %" PRId64 " x %" PRId64, rows, cols);
        float *y = rand_floats(&s, rows * cols, 1.0f), *b = rand_floats(&s, cols, 1.0f);
        pair_t Y = pair_up(y, (size_t)(rows * cols) * sizeof(float));
        pair_t B = pair_up(b, (size_t)cols * sizeof(float));
        expect_ok(gnn_be_bias_add(g_cpu, rows, cols, Y.c, B.c),
                  gnn_be_bias_add(g_gpu, rows, cols, Y.g, B.g));
        expect_close(&Y, rows * cols);
        if (rows > 0) {
            context("bias_grad %" PRId64 " x %" PRId64, rows, cols);
            pair_t D = pair_alloc((size_t)cols * sizeof(float));
            poison(&D);
            expect_ok(gnn_be_bias_grad(g_cpu, rows, cols, Y.c, D.c),
                      gnn_be_bias_grad(g_gpu, rows, cols, Y.g, D.g));
            expect_close(&D, cols);
            pair_free(&D);
        }
        for (int act = GNN_ACT_NONE; act <= GNN_ACT_ELU; act++) {
            context("bias_act %" PRId64 " x %" PRId64 ", activation %d", rows, cols, act);
            pair_set(&Y, y);
            expect_ok(gnn_be_bias_act(g_cpu, rows, cols, Y.c, B.c, act),
                      gnn_be_bias_act(g_gpu, rows, cols, Y.g, B.g, act));
            expect_close(&Y, rows * cols);
        }
        pair_free(&Y), pair_free(&B);
        free(y), free(b);
    }
}

static void test_relu_axpby(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x72656c;
    const int64_t n = 100003;
    const size_t bytes = (size_t)n * sizeof(float);
    float *x = rand_floats(&s, n, 1.0f), *dy = rand_floats(&s, n, 1.0f);
    for (int64_t i = 0; i < n; i += 7) x[i] = (i / 7) % 2 ? 0.0f : -0.0f;
    pair_t X = pair_up(x, bytes), DY = pair_up(dy, bytes), Y = pair_alloc(bytes);

    context("relu");
    poison(&Y);
    expect_ok(gnn_be_relu(g_cpu, n, X.c, Y.c), gnn_be_relu(g_gpu, n, X.g, Y.g));
    expect_close(&Y, n);
    context("relu_backward");
    poison(&Y);
    expect_ok(gnn_be_relu_backward(g_cpu, n, X.c, DY.c, Y.c),
              gnn_be_relu_backward(g_gpu, n, X.g, DY.g, Y.g));
    expect_close(&Y, n);
    context("relu_backward in place");
    pair_set(&Y, dy);
    expect_ok(gnn_be_relu_backward(g_cpu, n, X.c, Y.c, Y.c),
              gnn_be_relu_backward(g_gpu, n, X.g, Y.g, Y.g));
    expect_close(&Y, n);
    context("relu in place");
    pair_set(&Y, x);
    expect_ok(gnn_be_relu(g_cpu, n, Y.c, Y.c), gnn_be_relu(g_gpu, n, Y.g, Y.g));
    expect_close(&Y, n);

    static const float ab[][2] = {{2.0f, -1.0f}, {0.5f, 0.0f}, {0.0f, 1.0f}, {-1.25f, 0.75f}};
    for (size_t i = 0; i < sizeof ab / sizeof ab[0]; i++) {
        context("axpby alpha %g beta %g", (double)ab[i][0], (double)ab[i][1]);
        pair_set(&Y, dy);
        if (ab[i][1] == 0.0f) poison(&Y); /* beta == 0: y is not read */
        expect_ok(gnn_be_axpby(g_cpu, n, ab[i][0], X.c, ab[i][1], Y.c),
                  gnn_be_axpby(g_gpu, n, ab[i][0], X.g, ab[i][1], Y.g));
        expect_close(&Y, n);
    }
    context("axpby in place");
    pair_set(&Y, dy);
    expect_ok(gnn_be_axpby(g_cpu, n - 2, 1.5f, Y.c, 0.5f, Y.c),
              gnn_be_axpby(g_gpu, n - 2, 1.5f, Y.g, 0.5f, Y.g));
    expect_close(&Y, n);
    context("axpby n=0");
    assert_int_equal(gnn_be_axpby(g_gpu, 0, 1.0f, X.g, 0.0f, Y.g), 0);
    assert_int_equal(gnn_be_relu(g_gpu, 0, X.g, Y.g), 0);

    pair_free(&X), pair_free(&DY), pair_free(&Y);
    free(x), free(dy);
}

static void test_dropout(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x64726f;
    static const float ps[] = {0.0f, 0.5f, 0.9f};
    static const int64_t ns[] = {1, 3, 4, 5, 1001, 65537};
    static const uint64_t offsets[] = {0, 1, 3, 6, (1ull << 34) - 6, UINT64_MAX - 5};
    for (size_t pi = 0; pi < 3; pi++)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
            for (size_t oi = 0; oi < sizeof offsets / sizeof offsets[0]; oi++) {
                const int64_t n = ns[ni];
                const float p = ps[pi];
                const uint64_t seed = tu_rng_next(&s), off = offsets[oi];
                const size_t bytes = (size_t)n * sizeof(float);
                float *x = rand_nonzero(&s, n);
                pair_t X = pair_up(x, bytes), Y = pair_alloc(bytes);
                context("dropout n=%" PRId64 " p=%g offset %" PRIu64 " seed %" PRIu64, n, (double)p,
                        off, seed);
                poison(&Y);
                expect_ok(gnn_be_dropout(g_cpu, n, p, seed, off, X.c, Y.c),
                          gnn_be_dropout(g_gpu, n, p, seed, off, X.g, Y.g));
                expect_mask(&Y, n);
                context("dropout_backward n=%" PRId64 " p=%g offset %" PRIu64 " seed %" PRIu64, n,
                        (double)p, off, seed);
                poison(&Y);
                expect_ok(gnn_be_dropout_backward(g_cpu, n, p, seed, off, X.c, Y.c),
                          gnn_be_dropout_backward(g_gpu, n, p, seed, off, X.g, Y.g));
                expect_mask(&Y, n);
                if (oi == 2) {
                    context("dropout in place n=%" PRId64 " p=%g", n, (double)p);
                    expect_ok(gnn_be_dropout(g_cpu, n, p, seed, off, X.c, X.c),
                              gnn_be_dropout(g_gpu, n, p, seed, off, X.g, X.g));
                    expect_mask(&X, n);
                    context("dropout_backward in place n=%" PRId64 " p=%g", n, (double)p);
                    pair_set(&X, x);
                    expect_ok(gnn_be_dropout_backward(g_cpu, n, p, seed, off, X.c, X.c),
                              gnn_be_dropout_backward(g_gpu, n, p, seed, off, X.g, X.g));
                    expect_mask(&X, n);
                }
                pair_free(&X), pair_free(&Y);
                free(x);
            }

    context("dropout errors");
    float *d = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, 64, (void **)&d), 0);
    expect_rc(gnn_be_dropout(g_gpu, 4, 1.0f, 1, 0, d, d), GNN_EINVAL, "CUDA");
    expect_rc(gnn_be_dropout(g_gpu, 4, -0.5f, 1, 0, d, d), GNN_EINVAL, "CUDA");
    expect_rc(gnn_be_dropout_backward(g_gpu, 4, 1.5f, 1, 0, d, d), GNN_EINVAL, "CUDA");
    assert_int_equal(gnn_be_dropout(g_gpu, 0, 0.5f, 1, 0, d, d), 0);
    gnn_be_free(g_gpu, d);
}

/* rows arbitrary row ids below 10^6, every tenth one a repeat. */
static int64_t *random_row_ids(uint64_t *s, int64_t rows);

/* n floats of GPU buffer d, downloaded (the caller frees). */
static float *gpu_floats(const float *d, int64_t n)
{
    float *h = malloc((size_t)n * sizeof *h);
    assert_non_null(h);
    assert_int_equal(gnn_be_download(g_gpu, h, d, (size_t)n * sizeof *h), 0);
    return h;
}

/*
 * A step captured once as a CUDA graph (gnn_be_capture_*) with the step
 * scalars set (gnn_be_set_step_scalars): dropout, bias + ReLU + dropout,
 * dropout by row ids and Adam, queued with the first step's arguments;
 * each of four launches, given the scalars of its step (the dropout
 * offsets moved by a span that is no multiple of 4, Adam's next step),
 * gives the bits of the same calls queued with that step's own arguments
 * (the CPU's masks too). A capture with a wait for the device inside
 * fails with a message, and the backend works on afterwards.
 */
static void test_step_capture(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0xca97;
    const int64_t rows = 300, cols = 33, n = rows * cols;
    const uint64_t seed = 4242, off = 7, span = 3 * (uint64_t)n + 5;
    const size_t fb = (size_t)n * sizeof(float);
    float *hx = rand_nonzero(&s, n), *hb = rand_floats(&s, cols, 1.0f),
          *hw = rand_floats(&s, n, 1.0f);
    int64_t *hid = random_row_ids(&s, rows);
    gnn_adam_opts_t ao = gnn_adam_defaults();
    ao.lr = 0.01f;
    ao.weight_decay = 5e-4f;
    /* [0]: captured and launched; [1]: queued call by call */
    float *X, *B, *Y[2], *Z[2], *R[2], *W[2], *M[2], *V[2];
    int64_t *ID;
    gnn_step_scalars_t *SC;
    assert_int_equal(gnn_be_alloc(g_gpu, fb, (void **)&X), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)cols * 4, (void **)&B), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)rows * 8, (void **)&ID), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, sizeof *SC, (void **)&SC), 0);
    float **bufs[6] = {Y, Z, R, W, M, V};
    for (int b = 0; b < 6; b++)
        for (int k = 0; k < 2; k++) assert_int_equal(gnn_be_alloc(g_gpu, fb, (void **)&bufs[b][k]), 0);
    assert_int_equal(gnn_be_upload(g_gpu, X, hx, fb), 0);
    assert_int_equal(gnn_be_upload(g_gpu, B, hb, (size_t)cols * 4), 0);
    assert_int_equal(gnn_be_upload(g_gpu, ID, hid, (size_t)rows * 8), 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(gnn_be_upload(g_gpu, W[k], hw, fb), 0);
        assert_int_equal(gnn_be_zero(g_gpu, M[k], fb), 0);
        assert_int_equal(gnn_be_zero(g_gpu, V[k], fb), 0);
    }
    /* The ids are vouched for: their check would read a flag back, a wait. */
    assert_int_equal(gnn_be_trust_ids(g_gpu, ID, rows, INT64_MAX), 0);
    gnn_bcapture_t *cap = NULL;
    for (int step = 0; step < 4; step++) {
        context("captured step, launch %d", step + 1);
        gnn_step_scalars_t hs = {.drop_delta = (uint64_t)step * span};
        gnn_step_scalars_adam(&hs, &ao, step + 1);
        assert_int_equal(gnn_be_upload(g_gpu, SC, &hs, sizeof hs), 0);
        for (int k = 0; k < 2; k++) {
            if (k == 0 && cap) {
                assert_int_equal(gnn_be_capture_launch(g_gpu, cap), 0);
                continue;
            }
            /* queued: the captured step's arguments (with the scalars) or
             * this step's own */
            const uint64_t o = k ? off + (uint64_t)step * span : off;
            const int64_t t = k ? step + 1 : 1;
            assert_int_equal(gnn_be_set_step_scalars(g_gpu, k ? NULL : SC), 0);
            if (k == 0) assert_int_equal(gnn_be_capture_begin(g_gpu), 0);
            int rc = gnn_be_dropout(g_gpu, n, 0.3f, seed, o, X, Y[k]);
            if (!rc) rc = gnn_be_copy(g_gpu, Z[k], X, fb);
            if (!rc)
                rc = gnn_be_bias_act_drop(g_gpu, rows, cols, Z[k], B, GNN_ACT_RELU, 0.3f, seed,
                                          o + (uint64_t)n, NULL);
            if (!rc)
                rc = gnn_be_dropout_rows(g_gpu, rows, cols, ID, 0.3f, seed, o + 2 * (uint64_t)n, X,
                                         R[k]);
            if (!rc) rc = gnn_be_adam(g_gpu, n, W[k], Y[k], M[k], V[k], &ao, t);
            if (k == 0) {
                int rc2 = gnn_be_capture_end(g_gpu, &cap);
                if (rc || rc2)
                    fail_msg("capture: %s (queued %d, ended %d)", gnn_error_message(), rc, rc2);
                assert_non_null(cap);
                assert_int_equal(gnn_be_capture_launch(g_gpu, cap), 0);
            } else {
                assert_int_equal(rc, 0);
            }
        }
        assert_int_equal(gnn_be_set_step_scalars(g_gpu, NULL), 0);
        assert_int_equal(gnn_be_sync(g_gpu), 0);
        static const char *const names[6] = {"dropout", "bias, relu and dropout",
                                             "dropout by rows", "adam weights", "adam m",
                                             "adam v"};
        for (int b = 0; b < 6; b++) {
            float *a = gpu_floats(bufs[b][0], n), *q = gpu_floats(bufs[b][1], n);
            check_bits(a, q, fb, names[b]);
            free(a), free(q);
        }
        /* The launch's dropout against the CPU's with this step's offset. */
        pair_t XP = pair_up(hx, fb), YP = pair_alloc(fb);
        assert_int_equal(gnn_be_dropout(g_cpu, n, 0.3f, seed, off + (uint64_t)step * span, XP.c,
                                        YP.c),
                         0);
        assert_int_equal(gnn_be_copy(g_gpu, YP.g, Y[0], fb), 0);
        expect_mask(&YP, n);
        pair_free(&XP), pair_free(&YP);
    }
    assert_int_equal(gnn_be_trust_ids(g_gpu, NULL, 0, 0), 0);
    gnn_be_capture_free(cap);

    context("a capture with a wait inside");
    assert_int_equal(gnn_be_capture_begin(g_gpu), 0);
    expect_rc(gnn_be_capture_begin(g_gpu), GNN_EINVAL, "CUDA");
    int rc = gnn_be_sync(g_gpu);
    gnn_bcapture_t *bad = NULL;
    int rc2 = gnn_be_capture_end(g_gpu, &bad);
    print_message("a wait while capturing: %d, then the capture's end: %d (%s)\n", rc, rc2,
                  gnn_error_message());
    assert_true(rc2 == GNN_ECUDA && bad == NULL);
    assert_non_null(strstr(gnn_error_message(), "captured step"));
    assert_int_equal(gnn_be_dropout(g_gpu, n, 0.3f, seed, off, X, Y[0]), 0);
    assert_int_equal(gnn_be_sync(g_gpu), 0);

    for (int b = 0; b < 6; b++)
        for (int k = 0; k < 2; k++) gnn_be_free(g_gpu, bufs[b][k]);
    gnn_be_free(g_gpu, X), gnn_be_free(g_gpu, B), gnn_be_free(g_gpu, ID), gnn_be_free(g_gpu, SC);
    free(hx), free(hb), free(hw), free(hid);
}

/* rows arbitrary row ids below 10^6, every tenth one a repeat. */
static int64_t *random_row_ids(uint64_t *s, int64_t rows)
{
    int64_t *row_id = malloc((size_t)rows * sizeof *row_id);
    assert_non_null(row_id);
    for (int64_t r = 0; r < rows; r++)
        row_id[r] = r % 10 == 9 ? row_id[rng_below(s, r)] : rng_below(s, 1000000);
    return row_id;
}

/* The fused bias, activation and next layer's input dropout, and the
 * gradient back through the dropout and a ReLU: the CPU's masks and
 * values, flat and by row ids, widths that are and are not multiples of
 * 4, offsets on and off a Philox block. */
static void test_bias_act_drop(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x62616474;
    const int64_t rows = 777;
    static const int64_t fs[] = {1, 3, 4, 33, 256};
    static const uint64_t offsets[] = {0, 5, (1ull << 33) + 1};
    int64_t *row_id = random_row_ids(&s, rows);
    pair_t R = pair_up(row_id, (size_t)rows * sizeof *row_id);
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++)
        for (int act = GNN_ACT_NONE; act <= GNN_ACT_ELU; act++)
            for (size_t oi = 0; oi < 3; oi++) {
                const int64_t f = fs[fi];
                const float p = oi == 2 && act == GNN_ACT_NONE ? 0.0f : 0.5f;
                const uint64_t seed = tu_rng_next(&s), off = offsets[oi];
                const size_t bytes = (size_t)(rows * f) * sizeof(float);
                float *y = rand_nonzero(&s, rows * f), *b = rand_floats(&s, f, 1.0f);
                pair_t Y = pair_up(y, bytes), B = pair_up(b, (size_t)f * sizeof(float));
                for (int ids = 0; ids < 2; ids++) {
                    context("bias_act_drop f=%" PRId64 " act %d p=%g offset %" PRIu64 " %s", f,
                            act, (double)p, off, ids ? "by row ids" : "flat");
                    pair_set(&Y, y);
                    expect_ok(gnn_be_bias_act_drop(g_cpu, rows, f, Y.c, B.c, act, p, seed, off,
                                                   ids ? R.c : NULL),
                              gnn_be_bias_act_drop(g_gpu, rows, f, Y.g, B.g, act, p, seed, off,
                                                   ids ? R.g : NULL));
                    expect_mask(&Y, rows * f);
                }
                if (act == GNN_ACT_RELU) {
                    context("relu_drop_backward f=%" PRId64 " p=%g", f, (double)p);
                    float *dy = rand_floats(&s, rows * f, 1.0f);
                    pair_t DY = pair_up(dy, bytes), DX = pair_alloc(bytes);
                    poison(&DX);
                    expect_ok(gnn_be_relu_drop_backward(g_cpu, rows * f, p, Y.c, DY.c, DX.c),
                              gnn_be_relu_drop_backward(g_gpu, rows * f, p, Y.g, DY.g, DX.g));
                    expect_close(&DX, rows * f);
                    pair_free(&DY), pair_free(&DX);
                    free(dy);
                }
                pair_free(&Y), pair_free(&B);
                free(y), free(b);
            }
    pair_free(&R);
    free(row_id);
}

static void test_dropout_rows(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x64726f77;
    const int64_t rows = 777;
    static const int64_t fs[] = {1, 3, 4, 33, 64};
    static const float ps[] = {0.0f, 0.5f, 0.9f};
    static const uint64_t offsets[] = {0, 5, (1ull << 33) + 1};
    int64_t *row_id = random_row_ids(&s, rows);
    pair_t R = pair_up(row_id, (size_t)rows * sizeof *row_id);
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++)
        for (size_t pi = 0; pi < 3; pi++)
            for (size_t oi = 0; oi < 3; oi++) {
                const int64_t f = fs[fi];
                const float p = ps[pi];
                const uint64_t seed = tu_rng_next(&s), off = offsets[oi];
                const size_t bytes = (size_t)(rows * f) * sizeof(float);
                float *x = rand_nonzero(&s, rows * f);
                pair_t X = pair_up(x, bytes), Y = pair_alloc(bytes);
                context("dropout_rows f=%" PRId64 " p=%g offset %" PRIu64 " seed %" PRIu64, f,
                        (double)p, off, seed);
                poison(&Y);
                expect_ok(gnn_be_dropout_rows(g_cpu, rows, f, R.c, p, seed, off, X.c, Y.c),
                          gnn_be_dropout_rows(g_gpu, rows, f, R.g, p, seed, off, X.g, Y.g));
                expect_mask(&Y, rows * f);
                context("dropout_rows in place f=%" PRId64 " p=%g offset %" PRIu64, f, (double)p,
                        off);
                expect_ok(gnn_be_dropout_rows(g_cpu, rows, f, R.c, p, seed, off, X.c, X.c),
                          gnn_be_dropout_rows(g_gpu, rows, f, R.g, p, seed, off, X.g, X.g));
                expect_mask(&X, rows * f);
                /* The ids vouched for (gnn_be_trust_ids: no check on the
                 * device, no wait): the same mask. */
                context("dropout_rows, trusted ids, f=%" PRId64 " p=%g", f, (double)p);
                assert_int_equal(gnn_be_trust_ids(g_gpu, R.g, rows, INT64_MAX), 0);
                poison(&Y);
                expect_ok(gnn_be_dropout_rows(g_cpu, rows, f, R.c, p, seed, off, X.c, Y.c),
                          gnn_be_dropout_rows(g_gpu, rows, f, R.g, p, seed, off, X.g, Y.g));
                assert_int_equal(gnn_be_trust_ids(g_gpu, NULL, 0, 0), 0);
                expect_mask(&Y, rows * f);
                pair_free(&X), pair_free(&Y);
                free(x);
            }
    context("dropout_rows rows=0");
    assert_int_equal(gnn_be_dropout_rows(g_gpu, 0, 4, R.g, 0.5f, 1, 0, R.g, R.g), 0);
    pair_free(&R);
    free(row_id);
}

static void test_gather_rows(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x676174;
    const int64_t src_rows = 300, n = 1000;
    static const int64_t fs[] = {1, 3, 32, 33, 129};
    int64_t *idx = malloc((size_t)n * sizeof *idx);
    assert_non_null(idx);
    for (int64_t i = 0; i < n; i++) idx[i] = rng_below(&s, src_rows);
    pair_t I = pair_up(idx, (size_t)n * sizeof *idx);
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
        const int64_t f = fs[fi];
        context("gather_rows f=%" PRId64, f);
        float *src = rand_floats(&s, src_rows * f, 1.0f);
        pair_t S = pair_up(src, (size_t)(src_rows * f) * sizeof(float));
        pair_t D = pair_alloc((size_t)(n * f) * sizeof(float));
        poison(&D);
        expect_ok(gnn_be_gather_rows(g_cpu, n, f, S.c, src_rows, I.c, D.c),
                  gnn_be_gather_rows(g_gpu, n, f, S.g, src_rows, I.g, D.g));
        float *h = fetch(&D);
        check_equal(h, D.c, n * f);
        free(h);
        /* The indices vouched for (gnn_be_trust_ids): the same rows. */
        assert_int_equal(gnn_be_trust_ids(g_gpu, I.g, n, src_rows), 0);
        poison(&D);
        assert_int_equal(gnn_be_gather_rows(g_gpu, n, f, S.g, src_rows, I.g, D.g), 0);
        assert_int_equal(gnn_be_trust_ids(g_gpu, NULL, 0, 0), 0);
        h = fetch(&D);
        check_equal(h, D.c, n * f);
        free(h);
        /* The same rows read in place from host memory (gnn_be_map_host). */
        context("gather_rows from mapped host memory f=%" PRId64, f);
        float *hs = malloc((size_t)(src_rows * f) * sizeof *hs), *ms = NULL;
        assert_non_null(hs);
        memcpy(hs, src, (size_t)(src_rows * f) * sizeof *hs);
        expect_ok(0, gnn_be_map_host(g_gpu, hs, (size_t)(src_rows * f) * sizeof *hs, (void **)&ms));
        poison(&D);
        expect_ok(0, gnn_be_gather_rows(g_gpu, n, f, ms, src_rows, I.g, D.g));
        h = fetch(&D);
        check_equal(h, D.c, n * f);
        free(h);
        /* Every third row from a device cache, the rest from host memory
         * (zeroed where cached, so that a wrong source shows). */
        context("gather_rows_cached f=%" PRId64, f);
        int32_t *slot = malloc((size_t)src_rows * sizeof *slot);
        float *cache = malloc((size_t)(src_rows / 3 + 1) * (size_t)f * sizeof *cache);
        assert_true(slot && cache);
        int32_t kc = 0;
        for (int64_t r = 0; r < src_rows; r++) {
            slot[r] = r % 3 == 0 ? kc++ : -1;
            if (slot[r] >= 0) {
                memcpy(cache + (int64_t)slot[r] * f, src + r * f, (size_t)f * sizeof *cache);
                memset(hs + r * f, 0, (size_t)f * sizeof *hs);
            }
        }
        pair_t SL = pair_up(slot, (size_t)src_rows * sizeof *slot);
        pair_t CA = pair_up(cache, (size_t)kc * (size_t)f * sizeof *cache);
        poison(&D);
        expect_ok(0, gnn_be_gather_rows_cached(g_gpu, n, f, CA.g, SL.g, ms, I.g, D.g));
        h = fetch(&D);
        check_equal(h, D.c, n * f);
        free(h);
        pair_free(&SL), pair_free(&CA);
        free(slot), free(cache);
        gnn_be_unmap_host(g_gpu, hs);
        free(hs);

        /* Bad entries: the first one (position 517) is named. */
        context("gather_rows bad index f=%" PRId64, f);
        int64_t *bad = malloc((size_t)n * sizeof *bad);
        assert_non_null(bad);
        memcpy(bad, idx, (size_t)n * sizeof *bad);
        bad[517] = -7;
        bad[800] = src_rows;
        pair_t BI = pair_up(bad, (size_t)n * sizeof *bad);
        expect_rc(gnn_be_gather_rows(g_cpu, n, f, S.c, src_rows, BI.c, D.c), GNN_EINVAL, "CPU");
        expect_rc(gnn_be_gather_rows(g_gpu, n, f, S.g, src_rows, BI.g, D.g), GNN_EINVAL, "CUDA");
        if (!strstr(gnn_error_message(), "517"))
            fail_msg("gather_rows: message \"%s\" does not name position 517", gnn_error_message());
        bad[517] = idx[517];
        pair_set(&BI, bad);
        expect_rc(gnn_be_gather_rows(g_gpu, n, f, S.g, src_rows, BI.g, D.g), GNN_EINVAL, "CUDA");
        if (!strstr(gnn_error_message(), "800"))
            fail_msg("gather_rows: message \"%s\" does not name position 800", gnn_error_message());
        assert_int_equal(gnn_be_sync(g_gpu), 0); /* the backend still works */
        pair_free(&BI), pair_free(&S), pair_free(&D);
        free(bad), free(src);
    }
    context("gather_rows n=0");
    assert_int_equal(gnn_be_gather_rows(g_gpu, 0, 4, I.g, 1, I.g, I.g), 0);
    pair_free(&I);
    free(idx);
}

/* rows x classes softmax cross-entropy over idx (NULL: all rows), dlogits
 * poisoned on both sides (or not asked for). */
static void xent_case(int64_t rows, int64_t classes, const pair_t *L, const pair_t *Y,
                      const int64_t *idx, int64_t nidx, int with_grad)
{
    pair_t I =
        pair_up(idx ? idx : (const int64_t *)L->c, (size_t)(idx ? nidx : 0) * sizeof(int64_t));
    pair_t D = pair_alloc((size_t)(rows * classes) * sizeof(float));
    poison(&D);
    double lc = -1, lg = -2;
    expect_ok(gnn_be_softmax_xent(g_cpu, rows, classes, L->c, Y->c, idx ? I.c : NULL, nidx, &lc,
                                  with_grad ? D.c : NULL),
              gnn_be_softmax_xent(g_gpu, rows, classes, L->g, Y->g, idx ? I.g : NULL, nidx, &lg,
                                  with_grad ? D.g : NULL));
    if (!(fabs(lg - lc) <= TOL * fmax(fabs(lc), TINY)))
        fail_msg("%s: loss CUDA %.12g, CPU %.12g (seed %" PRIu64 ")", g_ctx, lg, lc, g_seed);
    if (with_grad) expect_close(&D, rows * classes);
    /* Queued without waiting: the checked call's bits on the GPU. */
    float *dg = NULL, *da = NULL;
    double *ld = NULL, la = -3;
    if (with_grad) dg = fetch(&D);
    expect_ok(0, gnn_be_alloc(g_gpu, sizeof(double), (void **)&ld));
    poison(&D);
    expect_ok(0, gnn_be_softmax_xent_async(g_gpu, rows, classes, L->g, Y->g, idx ? I.g : NULL,
                                           nidx, ld, with_grad ? D.g : NULL));
    expect_ok(0, gnn_be_download(g_gpu, &la, ld, sizeof la));
    if (la != lg)
        fail_msg("%s: queued loss %.17g, checked %.17g (seed %" PRIu64 ")", g_ctx, la, lg, g_seed);
    if (with_grad) {
        da = fetch(&D);
        if (memcmp(da, dg, (size_t)(rows * classes) * sizeof(float)))
            fail_msg("%s: the queued gradient differs from the checked one", g_ctx);
    }
    gnn_be_free(g_gpu, ld);
    free(dg), free(da);
    pair_free(&I), pair_free(&D);
}

/* Rows gathered on the device from host rows [r0, r0 + nr) of h (f
 * wide) mapped at m, against h itself. */
static void check_mapped_rows(const float *h, int64_t f, int64_t r0, int64_t nr, const float *m)
{
    int64_t *idx = malloc((size_t)nr * sizeof *idx);
    assert_non_null(idx);
    for (int64_t i = 0; i < nr; i++) idx[i] = nr - 1 - i; /* last row first */
    pair_t I = pair_up(idx, (size_t)nr * sizeof *idx);
    pair_t D = pair_alloc((size_t)(nr * f) * sizeof(float));
    poison(&D);
    expect_ok(0, gnn_be_gather_rows(g_gpu, nr, f, m, nr, I.g, D.g));
    float *got = fetch(&D);
    for (int64_t i = 0; i < nr; i++)
        if (memcmp(got + i * f, h + (r0 + idx[i]) * f, (size_t)f * sizeof *got))
            fail_msg("%s: row %" PRId64 " of the mapping differs from the host's", g_ctx, idx[i]);
    free(got), free(idx);
    pair_free(&I), pair_free(&D);
}

/* Host arrays mapped for the device that share pages: two arrays side by
 * side (as on the heap), then one over both, each read whole; unmapping
 * one leaves the others readable. */
static void test_map_host_pages(void **state)
{
    (void)state;
    const int64_t f = 16, rows = 3000, cut = 1001; /* cut * f * 4 bytes: mid-page */
    float *h = malloc((size_t)(rows * f) * sizeof *h);
    assert_non_null(h);
    for (int64_t i = 0; i < rows * f; i++) h[i] = (float)i * 0.5f - 7.0f;
    float *ma = NULL, *mb = NULL, *mw = NULL;
    context("map_host: two arrays sharing a page");
    expect_ok(0, gnn_be_map_host(g_gpu, h, (size_t)(cut * f) * sizeof *h, (void **)&ma));
    expect_ok(0, gnn_be_map_host(g_gpu, h + cut * f, (size_t)((rows - cut) * f) * sizeof *h,
                                 (void **)&mb));
    check_mapped_rows(h, f, 0, cut, ma);
    check_mapped_rows(h, f, cut, rows - cut, mb);
    context("map_host: one array over both");
    expect_ok(0, gnn_be_map_host(g_gpu, h, (size_t)(rows * f) * sizeof *h, (void **)&mw));
    check_mapped_rows(h, f, 0, rows, mw);
    context("map_host: the second array after the first is unmapped");
    gnn_be_unmap_host(g_gpu, h); /* the latest mapping at h: the whole array */
    gnn_be_unmap_host(g_gpu, h); /* then the first */
    check_mapped_rows(h, f, cut, rows - cut, mb);
    gnn_be_unmap_host(g_gpu, h + cut * f);
    context("map_host: mapped again once all are gone");
    expect_ok(0, gnn_be_map_host(g_gpu, h + 5, (size_t)((rows - 1) * f) * sizeof *h,
                                 (void **)&mw));
    check_mapped_rows(h + 5, f, 0, rows - 1, mw);
    gnn_be_unmap_host(g_gpu, h + 5);

    /* A mapping pins whole pages: copies whose host range runs from pages
     * it pinned into pages it did not (the rest of the array around the
     * mapped rows) go both ways, their bytes intact. */
    context("map_host: copies over a range partly pinned by a mapping");
    expect_ok(0, gnn_be_map_host(g_gpu, h + cut * f, (size_t)(10 * f) * sizeof *h,
                                 (void **)&mw));
    const size_t all = (size_t)(rows * f) * sizeof *h;
    pair_t p = pair_up(h, all); /* an upload over the pinned pages */
    float *back = fetch(&p);    /* a download into pageable memory */
    assert_memory_equal(back, h, all);
    for (int64_t i = 0; i < rows * f; i++) back[i] = -h[i];
    void *d = NULL;
    expect_ok(0, gnn_be_alloc(g_gpu, all, &d));
    expect_ok(0, gnn_be_upload(g_gpu, d, back, all));
    fetch_into(h, d, all); /* a download into the partly pinned array */
    for (int64_t i = 0; i < rows * f; i++)
        if (h[i] != (float)i * -0.5f + 7.0f)
            fail_msg("%s: element %" PRId64 " is %g after the download", g_ctx, i, h[i]);
    check_mapped_rows(h + cut * f, f, 0, 10, mw);
    gnn_be_unmap_host(g_gpu, h + cut * f);
    gnn_be_free(g_gpu, d);
    free(back);
    pair_free(&p);
    free(h);
}

static void test_softmax_xent(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x78656e;
    const int64_t rows = 500;
    static const int64_t cs[] = {1, 7, 47, 300};
    int64_t *perm = malloc((size_t)rows * sizeof *perm),
            *labels = malloc((size_t)rows * sizeof *labels);
    assert_true(perm && labels);
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const int64_t classes = cs[ci];
        for (int64_t r = 0; r < rows; r++) perm[r] = r;
        for (int64_t r = rows - 1; r > 0; r--) {
            int64_t j = rng_below(&s, r + 1), t = perm[r];
            perm[r] = perm[j], perm[j] = t;
        }
        for (int64_t r = 0; r < rows; r++) labels[r] = rng_below(&s, classes);
        /* Rows outside the subset perm[0..123) carry labels out of range:
         * they are never read. */
        for (int64_t j = 123; j < rows; j += 2) labels[perm[j]] = j % 4 == 1 ? -1 : classes + 5;
        float *logits = rand_floats(&s, rows * classes, 4.0f);
        pair_t L = pair_up(logits, (size_t)(rows * classes) * sizeof(float));
        pair_t Y = pair_up(labels, (size_t)rows * sizeof *labels);

        context("softmax_xent classes=%" PRId64 " subset of 123", classes);
        xent_case(rows, classes, &L, &Y, perm, 123, 1);
        context("softmax_xent classes=%" PRId64 " subset, loss only", classes);
        xent_case(rows, classes, &L, &Y, perm, 123, 0);
        context("softmax_xent classes=%" PRId64 " nidx=0", classes);
        xent_case(rows, classes, &L, &Y, perm, 0, 1);
        context("softmax_xent classes=%" PRId64 " one row", classes);
        xent_case(rows, classes, &L, &Y, perm + 7, 1, 1);

        /* All rows (idx NULL): every label must be in range. */
        for (int64_t r = 0; r < rows; r++) labels[r] = rng_below(&s, classes);
        pair_set(&Y, labels);
        context("softmax_xent classes=%" PRId64 " all rows", classes);
        xent_case(rows, classes, &L, &Y, NULL, rows, 1);

        /* A selected label out of range: GNN_EINVAL, loss untouched. */
        context("softmax_xent classes=%" PRId64 " bad label", classes);
        labels[perm[5]] = classes;
        pair_set(&Y, labels);
        pair_t I = pair_up(perm, 123 * sizeof *perm);
        pair_t D = pair_alloc((size_t)(rows * classes) * sizeof(float));
        double lg = 12345.0;
        expect_rc(gnn_be_softmax_xent(g_cpu, rows, classes, L.c, Y.c, I.c, 123, &lg, D.c),
                  GNN_EINVAL, "CPU");
        expect_rc(gnn_be_softmax_xent(g_gpu, rows, classes, L.g, Y.g, I.g, 123, &lg, D.g),
                  GNN_EINVAL, "CUDA");
        expect_rc(gnn_be_softmax_xent(g_gpu, rows, classes, L.g, Y.g, NULL, rows, &lg, D.g),
                  GNN_EINVAL, "CUDA");
        labels[perm[5]] = -1;
        pair_set(&Y, labels);
        expect_rc(gnn_be_softmax_xent(g_gpu, rows, classes, L.g, Y.g, I.g, 123, &lg, NULL),
                  GNN_EINVAL, "CUDA");
        assert_true(lg == 12345.0);
        assert_int_equal(gnn_be_sync(g_gpu), 0);
        pair_free(&I), pair_free(&D), pair_free(&L), pair_free(&Y);
        free(logits);
    }
    free(perm), free(labels);
}

static void test_adam(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x6164616d;
    const int64_t n = 100003;
    const size_t bytes = (size_t)n * sizeof(float);
    for (int decoupled = 0; decoupled <= 1; decoupled++) {
        gnn_adam_opts_t o = gnn_adam_defaults();
        o.lr = 0.01f;
        o.decoupled = decoupled;
        o.weight_decay = decoupled ? 0.01f : 5e-4f;
        float *w = rand_floats(&s, n, 1.0f);
        pair_t W = pair_up(w, bytes), M = pair_alloc(bytes), V = pair_alloc(bytes);
        pair_t G = pair_alloc(bytes);
        assert_int_equal(gnn_be_zero(g_cpu, M.c, bytes), 0);
        assert_int_equal(gnn_be_zero(g_cpu, V.c, bytes), 0);
        assert_int_equal(gnn_be_zero(g_gpu, M.g, bytes), 0);
        assert_int_equal(gnn_be_zero(g_gpu, V.g, bytes), 0);
        for (int64_t step = 1; step <= 5; step++) {
            float *g = rand_floats(&s, n, step == 3 ? 1e-3f : 1.0f);
            pair_set(&G, g);
            context("%s step %" PRId64, decoupled ? "AdamW" : "Adam", step);
            expect_ok(gnn_be_adam(g_cpu, n, W.c, G.c, M.c, V.c, &o, step),
                      gnn_be_adam(g_gpu, n, W.g, G.g, M.g, V.g, &o, step));
            expect_close(&W, n);
            expect_close(&M, n);
            expect_close(&V, n);
            free(g);
        }
        context("adam errors");
        expect_rc(gnn_be_adam(g_gpu, n, W.g, G.g, M.g, V.g, &o, 0), GNN_EINVAL, "CUDA");
        pair_free(&W), pair_free(&M), pair_free(&V), pair_free(&G);
        free(w);
    }
}

/* ---- Row-sparse optimisers and strided row copies ------------------------------ */

#define SPARSE_TOL 1e-6 /* relative, per element, row-sparse optimiser state */

/* Per element: |got - want| <= SPARSE_TOL * max(|want|, scale). */
static void check_elems(const float *got, const float *want, int64_t n, double scale,
                        const char *what)
{
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(want[i])) not_finite(got, want, i);
        double d = fabs((double)got[i] - (double)want[i]);
        if (d > 0 && !(d <= SPARSE_TOL * fmax(fabs((double)want[i]), scale)))
            fail_msg("%s: %s[%" PRId64 "]: CUDA %.9g, CPU %.9g (seed %" PRIu64 ")", g_ctx, what,
                     i, (double)got[i], (double)want[i], g_seed);
    }
}

/* The same bits on both sides (a copy: no rounding at all). */
static void check_same_bits(const float *got, const float *want, int64_t n, const char *what)
{
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof *got))
            fail_msg("%s: %s[%" PRId64 "]: CUDA %.9g, CPU %.9g, must be the same bits (seed %" PRIu64
                     ")",
                     g_ctx, what, i, (double)got[i], (double)want[i], g_seed);
}

/* Shuffle the first n entries of a (n >= 1). */
static void shuffle(uint64_t *s, int64_t *a, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = rng_below(s, i + 1), t = a[i];
        a[i] = a[j], a[j] = t;
    }
}

/*
 * Five steps of o on both backends on a table_rows x d table: subsets of
 * distinct rows in random order from the first table_rows - 7 rows (the
 * last seven never take part), a step of no rows, one with rows NULL,
 * gradients at stride ldg > d with NaN padding. After each step w, s1, s2
 * agree within SPARSE_TOL; the GPU leaves the rows never touched as they
 * were, and s2 alone for adagrad (given NULL). Then a row out of range is
 * refused (the first bad position named) with the table unchanged.
 */
static void sparse_opt_case(uint64_t *s, const gnn_sparse_opt_t *o, int64_t table_rows,
                            int64_t d, int64_t ldg)
{
    const int adam = o->kind == GNN_SPARSE_ADAM;
    const char *name = adam ? "sparse adam" : "adagrad";
    const int64_t nt = table_rows * d, pool = table_rows - 7;
    const size_t bytes = (size_t)nt * sizeof(float);
    float *w = rand_floats(s, nt, 1.0f), *zeros = calloc((size_t)nt, sizeof(float));
    int64_t *perm = malloc((size_t)pool * sizeof *perm);
    assert_true(zeros && perm);
    for (int64_t i = 0; i < pool; i++) perm[i] = i;
    pair_t W = pair_up(w, bytes), S1 = pair_up(zeros, bytes), S2 = pair_up(zeros, bytes);
    pair_t R = pair_alloc((size_t)pool * sizeof *perm);
    const int64_t counts[5] = {pool / 2, 1, 0, pool / 4, pool - 3};
    for (int64_t step = 1; step <= 5; step++) {
        const int64_t n = counts[step - 1];
        const int use_rows = step != 4;
        shuffle(s, perm, pool);
        pair_set(&R, perm);
        float *g = rand_nonzero(s, n * ldg);
        for (int64_t i = 0; i < n; i++)
            for (int64_t k = d; k < ldg; k++) g[i * ldg + k] = NAN;
        pair_t G = pair_up(g, (size_t)(n * ldg) * sizeof(float));
        context("%s d=%" PRId64 " ldg=%" PRId64 " step %" PRId64 " (%" PRId64 " rows%s)", name, d,
                ldg, step, n, use_rows ? "" : ", rows NULL");
        expect_ok(gnn_be_sparse_opt_step(g_cpu, o, n, d, use_rows ? R.c : NULL, table_rows, G.c,
                                         ldg, W.c, S1.c, adam ? S2.c : NULL, step),
                  gnn_be_sparse_opt_step(g_gpu, o, n, d, use_rows ? R.g : NULL, table_rows, G.g,
                                         ldg, W.g, S1.g, adam ? S2.g : NULL, step));
        float *hw = fetch(&W), *h1 = fetch(&S1), *h2 = fetch(&S2);
        check_elems(hw, W.c, nt, 0.1, "w");
        check_elems(h1, S1.c, nt, adam ? 1.5 : TINY, "s1");
        check_elems(h2, S2.c, nt, TINY, "s2");
        /* Rows never touched: as they started (the CPU side is checked
         * by test_dense). */
        if (memcmp(hw + pool * d, w + pool * d, (size_t)(7 * d) * sizeof(float)) ||
            memcmp(h1 + pool * d, zeros, (size_t)(7 * d) * sizeof(float)))
            fail_msg("%s: a row never in a step changed (seed %" PRIu64 ")", g_ctx, g_seed);
        if (memcmp(h2 + (adam ? pool * d : 0), zeros, (size_t)((adam ? 7 : table_rows) * d) *
                                                          sizeof(float)))
            fail_msg("%s: s2 changed where it must not (seed %" PRIu64 ")", g_ctx, g_seed);
        pair_free(&G);
        free(g), free(hw), free(h1), free(h2);
    }

    /* Rows out of range at positions 517 and 800 (or 0 and 1 when fewer):
     * GNN_EINVAL on both, the first named, nothing changed. */
    context("%s d=%" PRId64 " bad row", name, d);
    const int64_t n = pool - 3, p1 = n > 800 ? 517 : 0, p2 = n > 800 ? 800 : 1;
    int64_t *bad = malloc((size_t)pool * sizeof *bad);
    assert_non_null(bad);
    memcpy(bad, perm, (size_t)pool * sizeof *bad);
    bad[p1] = table_rows;
    bad[p2] = -3;
    pair_set(&R, bad);
    float *gb = rand_nonzero(s, n * ldg);
    pair_t G = pair_up(gb, (size_t)(n * ldg) * sizeof(float));
    float *before = fetch(&W), *before1 = fetch(&S1);
    expect_rc(gnn_be_sparse_opt_step(g_cpu, o, n, d, R.c, table_rows, G.c, ldg, W.c, S1.c,
                                     adam ? S2.c : NULL, 6),
              GNN_EINVAL, "CPU");
    expect_rc(gnn_be_sparse_opt_step(g_gpu, o, n, d, R.g, table_rows, G.g, ldg, W.g, S1.g,
                                     adam ? S2.g : NULL, 6),
              GNN_EINVAL, "CUDA");
    char want[64];
    snprintf(want, sizeof want, "at position %" PRId64 " ", p1);
    if (!strstr(gnn_error_message(), want))
        fail_msg("%s: message \"%s\" does not name position %" PRId64, g_ctx, gnn_error_message(),
                 p1);
    /* rows NULL with more rows than the table. */
    expect_rc(gnn_be_sparse_opt_step(g_gpu, o, table_rows + 1, d, NULL, table_rows, G.g, ldg,
                                     W.g, S1.g, adam ? S2.g : NULL, 6),
              GNN_EINVAL, "CUDA");
    expect_rc(gnn_be_sparse_opt_step(g_gpu, o, n, d, R.g, table_rows, G.g, ldg, W.g, S1.g,
                                     adam ? S2.g : NULL, 0),
              GNN_EINVAL, "CUDA");
    assert_int_equal(gnn_be_sync(g_gpu), 0); /* the backend still works */
    float *after = fetch(&W), *after1 = fetch(&S1);
    if (memcmp(after, before, bytes) || memcmp(after1, before1, bytes))
        fail_msg("%s: a refused step changed the table (seed %" PRIu64 ")", g_ctx, g_seed);
    pair_free(&G), pair_free(&W), pair_free(&S1), pair_free(&S2), pair_free(&R);
    free(w), free(zeros), free(perm), free(bad), free(gb), free(before), free(before1), free(after),
        free(after1);
}

static void test_sparse_opt(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x73706f70;
    static const int64_t ds[] = {1, 33, 129};
    for (size_t di = 0; di < sizeof ds / sizeof ds[0]; di++) {
        gnn_sparse_opt_t o;
        memset(&o, 0, sizeof o);
        o.kind = GNN_SPARSE_ADAM;
        o.lr = 0.01f, o.beta1 = 0.9f, o.beta2 = 0.999f, o.eps = 1e-8f;
        sparse_opt_case(&s, &o, 3000, ds[di], ds[di] + 3);
        o.lr = 0.05f, o.beta1 = 0.8f, o.beta2 = 0.95f, o.eps = 0.1f; /* eps shows */
        sparse_opt_case(&s, &o, 3000, ds[di], ds[di] + 3);
        o.kind = GNN_SPARSE_ADAGRAD;
        o.lr = 0.01f, o.eps = 1e-10f;
        sparse_opt_case(&s, &o, 3000, ds[di], ds[di] + 3);
    }
    context("mem_available");
    size_t avail = 0;
    assert_int_equal(gnn_be_mem_available(g_gpu, &avail), 0);
    assert_true(avail > 0);
    /* The most held since the backend opened: at least the 256 MB held
     * at the call (the device's used memory beyond what it held then). */
    context("mem_peak");
    size_t p1 = 0;
    void *big = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)256 << 20, &big), 0);
    assert_int_equal(gnn_be_mem_peak(g_gpu, &p1), 0);
    gnn_be_free(g_gpu, big);
    if (p1 < ((size_t)256 << 20)) fail_msg("mem_peak: %zu bytes while holding 256 MB", p1);
}

static void test_copy_rows(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x637079;
    const int64_t src_rows = 300, n = 1000;
    static const int64_t fs[] = {1, 3, 32, 33, 129};
    int64_t *idx = malloc((size_t)n * sizeof *idx), *bad = malloc((size_t)n * sizeof *bad);
    assert_true(idx && bad);
    for (int64_t i = 0; i < n; i++) idx[i] = rng_below(&s, src_rows);
    idx[11] = src_rows - 1;
    pair_t I = pair_up(idx, (size_t)n * sizeof *idx);
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
        /* Columns [2, 2 + f) of the source into [4, 4 + f) of the destination. */
        const int64_t f = fs[fi], lds = f + 5, ldd = f + 7, nd = n * ldd;
        float *src = rand_floats(&s, src_rows * lds, 1.0f), *dst = rand_floats(&s, nd, 1.0f);
        pair_t S = pair_up(src, (size_t)(src_rows * lds) * sizeof(float));
        pair_t D = pair_up(dst, (size_t)nd * sizeof(float));
        context("copy_rows f=%" PRId64 " idx", f);
        expect_ok(gnn_be_copy_rows(g_cpu, n, f, (float *)S.c + 2, lds, src_rows, I.c,
                                   (float *)D.c + 4, ldd),
                  gnn_be_copy_rows(g_gpu, n, f, (float *)S.g + 2, lds, src_rows, I.g,
                                   (float *)D.g + 4, ldd));
        float *h = fetch(&D);
        check_same_bits(h, D.c, nd, "dst");
        free(h);

        context("copy_rows f=%" PRId64 " idx NULL", f);
        pair_set(&D, dst);
        expect_ok(gnn_be_copy_rows(g_cpu, 250, f, (float *)S.c + 2, lds, src_rows, NULL,
                                   (float *)D.c + 4, ldd),
                  gnn_be_copy_rows(g_gpu, 250, f, (float *)S.g + 2, lds, src_rows, NULL,
                                   (float *)D.g + 4, ldd));
        h = fetch(&D);
        check_same_bits(h, D.c, nd, "dst");
        free(h);

        /* Bad entries: the first one (position 517) is named, dst unchanged. */
        context("copy_rows f=%" PRId64 " bad index", f);
        memcpy(bad, idx, (size_t)n * sizeof *bad);
        bad[517] = -7;
        bad[800] = src_rows;
        pair_t BI = pair_up(bad, (size_t)n * sizeof *bad);
        expect_rc(gnn_be_copy_rows(g_cpu, n, f, S.c, lds, src_rows, BI.c, D.c, ldd), GNN_EINVAL,
                  "CPU");
        expect_rc(gnn_be_copy_rows(g_gpu, n, f, S.g, lds, src_rows, BI.g, D.g, ldd), GNN_EINVAL,
                  "CUDA");
        if (!strstr(gnn_error_message(), "index -7 at position 517"))
            fail_msg("copy_rows: message \"%s\" does not name position 517", gnn_error_message());
        bad[517] = idx[517];
        pair_set(&BI, bad);
        expect_rc(gnn_be_copy_rows(g_gpu, n, f, S.g, lds, src_rows, BI.g, D.g, ldd), GNN_EINVAL,
                  "CUDA");
        if (!strstr(gnn_error_message(), "at position 800"))
            fail_msg("copy_rows: message \"%s\" does not name position 800", gnn_error_message());
        expect_rc(gnn_be_copy_rows(g_gpu, src_rows + 1, f, S.g, lds, src_rows, NULL, D.g, ldd),
                  GNN_EINVAL, "CUDA");
        expect_rc(gnn_be_copy_rows(g_gpu, n, f, S.g, f - 1, src_rows, I.g, D.g, ldd), GNN_EINVAL,
                  "CUDA");
        expect_rc(gnn_be_copy_rows(g_gpu, n, f, S.g, lds, src_rows, I.g, D.g, f - 1), GNN_EINVAL,
                  "CUDA");
        assert_int_equal(gnn_be_sync(g_gpu), 0); /* the backend still works */
        h = fetch(&D);
        check_same_bits(h, D.c, nd, "dst after an error");
        free(h);
        pair_free(&BI), pair_free(&S), pair_free(&D);
        free(src), free(dst);
    }
    context("copy_rows n=0");
    assert_int_equal(gnn_be_copy_rows(g_gpu, 0, 4, I.g, 4, 1, I.g, I.g, 4), 0);
    assert_int_equal(gnn_be_copy_rows(g_gpu, 0, 4, I.g, 4, 0, NULL, I.g, 4), 0);
    pair_free(&I);
    free(idx), free(bad);
}

/* scatter_rows (R-GCN's learnable rows of featureless types): a random
 * permutation's first n rows as destinations, bitwise equal to the CPU's;
 * a repeated row and one out of range are refused, dst unchanged. */
static void test_scatter_rows(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x736374;
    const int64_t n = 700, dst_rows = 1000;
    static const int64_t fs[] = {1, 7, 32, 65};
    int64_t *perm = malloc((size_t)dst_rows * sizeof *perm);
    assert_non_null(perm);
    for (int64_t i = 0; i < dst_rows; i++) perm[i] = i;
    for (int64_t i = dst_rows - 1; i > 0; i--) {
        int64_t j = rng_below(&s, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    pair_t I = pair_up(perm, (size_t)n * sizeof *perm);
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
        const int64_t f = fs[fi], lds = f + 3, ldd = f + 4, nd = dst_rows * ldd;
        float *src = rand_floats(&s, n * lds, 1.0f), *dst = rand_floats(&s, nd, 1.0f);
        pair_t S = pair_up(src, (size_t)(n * lds) * sizeof(float));
        pair_t D = pair_up(dst, (size_t)nd * sizeof(float));
        context("scatter_rows f=%" PRId64, f);
        expect_ok(gnn_be_scatter_rows(g_cpu, n, f, S.c, lds, I.c, (float *)D.c + 1, ldd, dst_rows),
                  gnn_be_scatter_rows(g_gpu, n, f, S.g, lds, I.g, (float *)D.g + 1, ldd, dst_rows));
        float *h = fetch(&D);
        check_same_bits(h, D.c, nd, "dst");
        free(h);
        context("scatter_rows f=%" PRId64 " repeat", f);
        int64_t keep = perm[400];
        perm[400] = perm[3];
        pair_t R = pair_up(perm, (size_t)n * sizeof *perm);
        perm[400] = keep;
        /* the message the CPU's, whatever order the device's atomics took */
        expect_rc(gnn_be_scatter_rows(g_cpu, n, f, S.c, lds, R.c, D.c, ldd, dst_rows), GNN_EINVAL,
                  "CPU");
        char want[256];
        snprintf(want, sizeof want, "%s", gnn_error_message());
        expect_rc(gnn_be_scatter_rows(g_gpu, n, f, S.g, lds, R.g, D.g, ldd, dst_rows), GNN_EINVAL,
                  "CUDA");
        if (!strstr(want, "given twice (position 400)") || strcmp(gnn_error_message(), want))
            fail_msg("scatter_rows: message \"%s\", the CPU's \"%s\"", gnn_error_message(), want);
        expect_rc(gnn_be_scatter_rows(g_gpu, n, f, S.g, lds, I.g, D.g, ldd, 500), GNN_EINVAL,
                  "CUDA");
        assert_int_equal(gnn_be_sync(g_gpu), 0);
        h = fetch(&D);
        check_same_bits(h, D.c, nd, "dst after an error");
        free(h);
        pair_free(&R), pair_free(&S), pair_free(&D);
        free(src), free(dst);
    }
    pair_free(&I);
    free(perm);
}

/* Logits with many ties (values 0..3) and, when nan_every > 0, NaN at
 * positions other than the first of a row. */
static float *tied_logits(uint64_t *s, int64_t rows, int64_t classes, int nan_every)
{
    float *x = malloc((size_t)(rows * classes + 1) * sizeof *x);
    assert_non_null(x);
    for (int64_t i = 0; i < rows * classes; i++) {
        x[i] = (float)rng_below(s, 4);
        if (nan_every > 0 && i % classes != 0 && rng_below(s, nan_every) == 0) x[i] = NAN;
    }
    return x;
}

static void argmax_case(uint64_t *s, int64_t rows, int64_t classes, int nan_every)
{
    context("argmax_rows %" PRId64 " x %" PRId64 "%s", rows, classes, nan_every ? " with NaN" : "");
    float *x = tied_logits(s, rows, classes, nan_every);
    pair_t X = pair_up(x, (size_t)(rows * classes) * sizeof(float));
    pair_t O = pair_alloc((size_t)rows * sizeof(int64_t));
    poison(&O);
    expect_ok(gnn_be_argmax_rows(g_cpu, rows, classes, X.c, O.c),
              gnn_be_argmax_rows(g_gpu, rows, classes, X.g, O.g));
    int64_t *h = fetch(&O);
    check_i64(h, O.c, rows);
    free(h);
    pair_free(&X), pair_free(&O);
    free(x);
}

static void test_argmax_count(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x61726d;
    static const int64_t cs[] = {1, 3, 10, 40, 1000};
    const int64_t rows = 999;
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) {
        const int64_t classes = cs[ci];
        argmax_case(&s, rows, classes, 0);
        argmax_case(&s, 1, classes, 0);

        float *x = tied_logits(&s, rows, classes, 0);
        int64_t *labels = malloc((size_t)rows * sizeof *labels), *sub = malloc(300 * sizeof *sub);
        assert_true(labels && sub);
        for (int64_t r = 0; r < rows; r++) /* some out of range: never correct */
            labels[r] = rng_below(&s, classes + 2) - 1;
        for (int64_t j = 0; j < 300; j++) sub[j] = (j * 7 + 3) % rows;
        pair_t X = pair_up(x, (size_t)(rows * classes) * sizeof(float));
        pair_t L = pair_up(labels, (size_t)rows * sizeof *labels);
        pair_t I = pair_up(sub, 300 * sizeof *sub);
        int64_t cc = -1, cg = -2;
        context("count_correct classes=%" PRId64 " all rows", classes);
        expect_ok(gnn_be_count_correct(g_cpu, rows, classes, X.c, L.c, NULL, rows, &cc),
                  gnn_be_count_correct(g_gpu, rows, classes, X.g, L.g, NULL, rows, &cg));
        check_i64(&cg, &cc, 1);
        context("count_correct classes=%" PRId64 " subset", classes);
        expect_ok(gnn_be_count_correct(g_cpu, rows, classes, X.c, L.c, I.c, 300, &cc),
                  gnn_be_count_correct(g_gpu, rows, classes, X.g, L.g, I.g, 300, &cg));
        check_i64(&cg, &cc, 1);
        context("count_correct classes=%" PRId64 " nidx=0", classes);
        cg = -2;
        assert_int_equal(gnn_be_count_correct(g_gpu, rows, classes, X.g, L.g, I.g, 0, &cg), 0);
        assert_int_equal(cg, 0);
        context("count_correct classes=%" PRId64 " bad row", classes);
        sub[100] = rows;
        pair_set(&I, sub);
        expect_rc(gnn_be_count_correct(g_cpu, rows, classes, X.c, L.c, I.c, 300, &cc), GNN_EINVAL,
                  "CPU");
        expect_rc(gnn_be_count_correct(g_gpu, rows, classes, X.g, L.g, I.g, 300, &cg), GNN_EINVAL,
                  "CUDA");
        pair_free(&X), pair_free(&L), pair_free(&I);
        free(x), free(labels), free(sub);
    }
    context("argmax_rows rows=0");
    assert_int_equal(gnn_be_argmax_rows(g_gpu, 0, 5, NULL, NULL), 0);
}

/* NaN never wins over an earlier entry (kernels/dense.h). */
static void test_argmax_nan(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x6e616e;
    static const int64_t cs[] = {2, 37, 1000};
    for (size_t ci = 0; ci < sizeof cs / sizeof cs[0]; ci++) argmax_case(&s, 256, cs[ci], 3);
}

/* ---- Sparse input features --------------------------------------------------------- */

/* rows x cols with about m entries (deduplicated), values in [0.1, 1.1),
 * rows r % 9 == 4 empty. */
static void make_sparse(uint64_t *s, gnn_vid_t rows, gnn_vid_t cols, gnn_eid_t m, gnn_csr_t *a)
{
    gnn_vid_t n = rows > cols ? rows : cols;
    gnn_vid_t *src = malloc((size_t)(m + 1) * sizeof *src),
              *dst = malloc((size_t)(m + 1) * sizeof *dst);
    float *w = malloc((size_t)(m + 1) * sizeof *w);
    assert_true(src && dst && w);
    for (gnn_eid_t i = 0; i < m; i++) {
        gnn_vid_t r;
        do r = rng_below(s, rows);
        while (r % 9 == 4);
        dst[i] = r;
        src[i] = rng_below(s, cols);
        w[i] = 0.6f + 0.5f * rng_float(s);
    }
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, w, GNN_BUILD_DEDUPE, a), 0);
    a->n_rows = rows;
    a->n_cols = cols;
    free(src), free(dst), free(w);
}

static void sparse_case(uint64_t *s, gnn_vid_t rows, gnn_vid_t cols, gnn_eid_t m)
{
    gnn_csr_t a;
    make_sparse(s, rows, cols, m, &a);
    context("sparse %" PRId64 " x %" PRId64 ", %" PRId64 " entries", rows, cols, a.nnz);
    gnn_bsparse_t *sc = NULL, *sg = NULL;
    expect_ok(gnn_be_sparse_create(g_cpu, &a, &sc), gnn_be_sparse_create(g_gpu, &a, &sg));
    assert_int_equal(gnn_bsparse_rows(sg), rows);
    assert_int_equal(gnn_bsparse_cols(sg), cols);
    assert_int_equal(gnn_bsparse_nnz(sg), a.nnz);
    const int64_t nnz = a.nnz;
    pair_t V = pair_alloc((size_t)nnz * sizeof(float));
    static const float ps[] = {0.0f, 0.9f, 0.5f}; /* the last one feeds the products */
    static const uint64_t offsets[] = {0, 3, (1ull << 34) - 7};
    /* Rows drawn as rows of a larger table (a mini-batch's): ids 3r + 1. */
    int64_t *ids = malloc(((size_t)rows + 1) * sizeof *ids);
    assert_non_null(ids);
    for (int64_t r = 0; r < rows; r++) ids[r] = 3 * r + 1;
    pair_t ID = pair_up(ids, ((size_t)rows + 1) * sizeof *ids);
    for (size_t pi = 0; pi < 3; pi++)
        for (size_t oi = 0; oi < 3; oi++)
            for (int by_id = 1; by_id >= 0; by_id--) {
                const uint64_t seed = tu_rng_next(s);
                context("sparse_dropout %" PRId64 " x %" PRId64 " p=%g offset %" PRIu64
                        " seed %" PRIu64 "%s",
                        rows, cols, (double)ps[pi], offsets[oi], seed, by_id ? " by row id" : "");
                poison(&V);
                expect_ok(gnn_be_sparse_dropout(g_cpu, sc, ps[pi], seed, offsets[oi],
                                                by_id ? ID.c : NULL, V.c),
                          gnn_be_sparse_dropout(g_gpu, sg, ps[pi], seed, offsets[oi],
                                                by_id ? ID.g : NULL, V.g));
                expect_mask(&V, nnz);
            }
    pair_free(&ID);
    free(ids);
    static const int64_t fs[] = {1, 4, 16, 33, 128};
    for (size_t fi = 0; fi < sizeof fs / sizeof fs[0]; fi++) {
        const int64_t f = fs[fi];
        float *w = rand_floats(s, cols * f, 1.0f), *dt = rand_floats(s, rows * f, 1.0f);
        pair_t W = pair_up(w, (size_t)(cols * f) * sizeof(float));
        pair_t DT = pair_up(dt, (size_t)(rows * f) * sizeof(float));
        pair_t T = pair_alloc((size_t)(rows * f) * sizeof(float));
        pair_t DW = pair_alloc((size_t)(cols * f) * sizeof(float));
        const int64_t counts[] = {rows, rows / 2}; /* all rows, then the first half */
        for (int k = 0; k < 2; k++) {
            const int64_t n = counts[k];
            context("sparse_mm %" PRId64 " of %" PRId64 " x %" PRId64 " f=%" PRId64, n, rows,
                    cols, f);
            poison(&T);
            expect_ok(gnn_be_sparse_mm(g_cpu, sc, V.c, n, W.c, f, T.c),
                      gnn_be_sparse_mm(g_gpu, sg, V.g, n, W.g, f, T.g));
            expect_close(&T, n * f);
            context("sparse_mm_t %" PRId64 " of %" PRId64 " x %" PRId64 " f=%" PRId64, n, rows,
                    cols, f);
            poison(&DW);
            expect_ok(gnn_be_sparse_mm_t(g_cpu, sc, V.c, n, DT.c, f, DW.c),
                      gnn_be_sparse_mm_t(g_gpu, sg, V.g, n, DT.g, f, DW.g));
            expect_close(&DW, cols * f);
        }
        pair_free(&W), pair_free(&DT), pair_free(&T), pair_free(&DW);
        free(w), free(dt);
    }
    context("sparse_dropout bad p");
    expect_rc(gnn_be_sparse_dropout(g_gpu, sg, 1.0f, 1, 0, NULL, V.g), GNN_EINVAL, "CUDA");
    pair_free(&V);
    gnn_be_sparse_free(sc);
    gnn_be_sparse_free(sg);
    gnn_csr_free(&a);
}

static void test_sparse(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x737066;
    sparse_case(&s, 2000, 500, 20000);
    sparse_case(&s, 300, 1000, 9000);
    sparse_case(&s, 10, 20, 0);
    gnn_be_sparse_free(NULL);
}

/* ---- Graphs ------------------------------------------------------------------------ */

typedef struct {
    gnn_vid_t *src, *dst;
    float *w;
    gnn_eid_t m, cap;
} elist_t;

static void el_add(elist_t *e, gnn_vid_t u, gnn_vid_t v, float w)
{
    if (e->m == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 4096;
        e->src = realloc(e->src, (size_t)e->cap * sizeof *e->src);
        e->dst = realloc(e->dst, (size_t)e->cap * sizeof *e->dst);
        e->w = realloc(e->w, (size_t)e->cap * sizeof *e->w);
        assert_true(e->src && e->dst && e->w);
    }
    e->src[e->m] = u, e->dst[e->m] = v, e->w[e->m] = w;
    e->m++;
}

static void el_free(elist_t *e)
{
    free(e->src), free(e->dst), free(e->w);
    memset(e, 0, sizeof *e);
}

/* The n_dst x n_src in-edge CSR of e: each row keeps its edges in the
 * order they were added (unsorted, repeated edges where they fell). */
static void el_to_csr(const elist_t *e, gnn_vid_t n_dst, gnn_vid_t n_src, int weighted,
                      gnn_csr_t *a)
{
    memset(a, 0, sizeof *a);
    a->n_rows = n_dst;
    a->n_cols = n_src;
    a->nnz = e->m;
    a->indptr = gnn_calloc((size_t)n_dst + 2, sizeof *a->indptr);
    a->indices = gnn_malloc_array((size_t)e->m + 1, sizeof *a->indices);
    if (weighted) a->weights = gnn_malloc_array((size_t)e->m + 1, sizeof *a->weights);
    assert_true(a->indptr && a->indices && (!weighted || a->weights));
    for (gnn_eid_t i = 0; i < e->m; i++) a->indptr[e->dst[i] + 2]++;
    for (gnn_vid_t v = 0; v < n_dst; v++) a->indptr[v + 2] += a->indptr[v + 1];
    for (gnn_eid_t i = 0; i < e->m; i++) {
        gnn_eid_t j = a->indptr[e->dst[i] + 1]++;
        a->indices[j] = e->src[i];
        if (weighted) a->weights[j] = e->w[i];
    }
    assert_int_equal(a->indptr[n_dst], e->m);
    assert_int_equal(gnn_csr_validate(a), 0);
}

/* A graph on both backends, with the CPU graph on |weights| that gives
 * the magnitudes of the sums. */
typedef struct {
    char name[64];
    gnn_csr_t a, a_abs; /* a_abs: a copy with |weights| when weighted */
    int64_t *src_deg;   /* gcn source degrees from outside, or NULL */
    const int64_t *widths;
    int n_widths;
    int lse_widths; /* how many of widths the lse check takes */
    gnn_bgraph_t *c, *c_abs, *g;
} graph_t;

static const int64_t all_widths[] = {1, 2, 3, 4, 31, 32, 33, 64, 100, 128, 256, 300, 513};
static const int64_t big_widths[] = {1, 33, 2, 3, 4, 31, 32, 64, 100, 128};
static const int64_t few_widths[] = {1, 33, 4, 128};
static const int64_t sym_widths[] = {1, 32, 64, 100, 513};
#define NW(a) ((int)(sizeof(a) / sizeof((a)[0])))

enum { G_RANDOM, G_POWER, G_RECT, G_REPEAT, G_BLOCK, G_SYM, G_TALL, G_NOEDGE, G_NOROW, G_COUNT };
static graph_t g_graphs[G_COUNT];
static int g_graphs_built;

static void set_widths(graph_t *G, const int64_t *w, int n, int lse)
{
    G->widths = w;
    G->n_widths = n;
    G->lse_widths = lse;
}

/* Random edges into dst rows (not v % 7 == 3) from uniform sources. */
static void add_random(uint64_t *s, elist_t *e, gnn_vid_t n_dst, gnn_vid_t n_src, gnn_eid_t m)
{
    for (gnn_eid_t i = 0; i < m; i++) {
        gnn_vid_t v;
        do v = rng_below(s, n_dst);
        while (v % 7 == 3);
        el_add(e, rng_below(s, n_src), v, rng_float(s));
    }
}

static void build_graphs(void)
{
    if (g_graphs_built) return;
    uint64_t s = g_seed ^ 0x677261;
    elist_t e = {0};
    graph_t *G;

    /* Uniform random, weighted, with empty rows and self loops. */
    G = &g_graphs[G_RANDOM];
    snprintf(G->name, sizeof G->name, "random 4000 weighted");
    add_random(&s, &e, 4000, 4000, 40000);
    el_to_csr(&e, 4000, 4000, 1, &G->a);
    set_widths(G, all_widths, NW(all_widths), NW(all_widths));
    el_free(&e);

    /* Power law, 100000 nodes and about 1e6 edges: in-degrees ~ v^-1/2,
     * out-degrees ~ u^-3/5 (source 0 near 10000 out-edges); rows 0..4 are
     * hubs of 5001 to 20000 extra entries; rows v % 11 == 5 stay empty. */
    G = &g_graphs[G_POWER];
    snprintf(G->name, sizeof G->name, "power-law 100000");
    {
        const gnn_vid_t n = 100000;
        static const gnn_eid_t hubs[] = {20000, 12000, 8000, 6000, 5001};
        for (int h = 0; h < 5; h++)
            for (gnn_eid_t i = 0; i < hubs[h]; i++) el_add(&e, rng_below(&s, n), h, rng_float(&s));
        while (e.m < 1000000) {
            gnn_vid_t v = (gnn_vid_t)((double)n * pow(rng_u01(&s), 2.0));
            if (v % 11 == 5) continue;
            gnn_vid_t u = (gnn_vid_t)((double)n * pow(rng_u01(&s), 2.5));
            el_add(&e, u, v, rng_float(&s));
        }
        el_to_csr(&e, n, n, 1, &G->a);
    }
    set_widths(G, big_widths, NW(big_widths), 2);
    el_free(&e);

    /* Rectangular block (n_dst < n_src): a hub row of 6000 entries and a
     * hub source of 3000 out-edges. */
    G = &g_graphs[G_RECT];
    snprintf(G->name, sizeof G->name, "rect 1500x6000 hubs");
    add_random(&s, &e, 1500, 6000, 20000);
    for (int i = 0; i < 6000; i++) el_add(&e, rng_below(&s, 6000), 5, rng_float(&s));
    for (int i = 0; i < 3000; i++) {
        gnn_vid_t v;
        do v = rng_below(&s, 1500);
        while (v % 7 == 3);
        el_add(&e, 7, v, rng_float(&s));
    }
    el_to_csr(&e, 1500, 6000, 1, &G->a);
    set_widths(G, all_widths, NW(all_widths), NW(all_widths));
    el_free(&e);

    /* Every edge twice (half adjacent in the row, half far apart), a hub
     * row of 2 x 5500 entries, no weights. */
    G = &g_graphs[G_REPEAT];
    snprintf(G->name, sizeof G->name, "repeated edges 2000");
    {
        elist_t base = {0};
        add_random(&s, &base, 2000, 2000, 8000);
        for (int i = 0; i < 5500; i++) el_add(&base, rng_below(&s, 2000), 9, 1.0f);
        for (gnn_eid_t i = 0; i < base.m; i++) {
            el_add(&e, base.src[i], base.dst[i], 1.0f);
            if (i % 2 == 0) el_add(&e, base.src[i], base.dst[i], 1.0f);
        }
        for (gnn_eid_t i = 1; i < base.m; i += 2) el_add(&e, base.src[i], base.dst[i], 1.0f);
        el_to_csr(&e, 2000, 2000, 0, &G->a);
        el_free(&base);
    }
    set_widths(G, all_widths, NW(all_widths), NW(all_widths));
    el_free(&e);

    /* The first 700 rows of the random graph as a block over all 4000
     * sources, with the sources' out-degrees in the whole graph. */
    G = &g_graphs[G_BLOCK];
    snprintf(G->name, sizeof G->name, "block 700x4000 src_deg");
    {
        const gnn_csr_t *w = &g_graphs[G_RANDOM].a;
        const gnn_vid_t nb = 700;
        const gnn_eid_t m = w->indptr[nb];
        gnn_csr_t *a = &G->a;
        memset(a, 0, sizeof *a);
        a->n_rows = nb;
        a->n_cols = w->n_cols;
        a->nnz = m;
        a->indptr = gnn_malloc_array((size_t)nb + 1, sizeof *a->indptr);
        a->indices = gnn_malloc_array((size_t)m + 1, sizeof *a->indices);
        a->weights = gnn_malloc_array((size_t)m + 1, sizeof *a->weights);
        assert_true(a->indptr && a->indices && a->weights);
        memcpy(a->indptr, w->indptr, ((size_t)nb + 1) * sizeof *a->indptr);
        memcpy(a->indices, w->indices, (size_t)m * sizeof *a->indices);
        memcpy(a->weights, w->weights, (size_t)m * sizeof *a->weights);
        assert_int_equal(gnn_csr_validate(a), 0);
        G->src_deg = malloc((size_t)w->n_cols * sizeof *G->src_deg);
        assert_non_null(G->src_deg);
        gnn_csr_col_counts(w, G->src_deg);
    }
    set_widths(G, few_widths, NW(few_widths), NW(few_widths));

    /* Symmetric, sorted, deduplicated, no weights: the CPU serves it as its
     * own transpose. */
    G = &g_graphs[G_SYM];
    snprintf(G->name, sizeof G->name, "symmetric 3000");
    {
        const gnn_eid_t m = 15000;
        gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
        assert_true(src && dst);
        for (gnn_eid_t i = 0; i < m; i++) {
            src[i] = rng_below(&s, 3000);
            dst[i] = i % 5 == 0 ? 11 : rng_below(&s, 3000);
        }
        assert_int_equal(
            gnn_csr_from_edges(3000, m, src, dst, NULL,
                               GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS,
                               &G->a),
            0);
        free(src), free(dst);
    }
    set_widths(G, sym_widths, NW(sym_widths), NW(sym_widths));

    /* More destinations than sources: gcn refuses it. */
    G = &g_graphs[G_TALL];
    snprintf(G->name, sizeof G->name, "tall 3000x800");
    add_random(&s, &e, 3000, 800, 12000);
    el_to_csr(&e, 3000, 800, 1, &G->a);
    set_widths(G, few_widths, 3, 3);
    el_free(&e);

    G = &g_graphs[G_NOEDGE];
    snprintf(G->name, sizeof G->name, "no edges 50x70");
    el_to_csr(&e, 50, 70, 1, &G->a);
    set_widths(G, few_widths, 2, 2);

    G = &g_graphs[G_NOROW];
    snprintf(G->name, sizeof G->name, "no rows 0x40");
    el_to_csr(&e, 0, 40, 0, &G->a);
    set_widths(G, few_widths, 2, 2);

    for (int i = 0; i < G_COUNT; i++) {
        G = &g_graphs[i];
        context("graph %s", G->name);
        if (G->a.weights) {
            assert_int_equal(gnn_csr_copy(&G->a, &G->a_abs), 0);
            for (gnn_eid_t j = 0; j < G->a_abs.nnz; j++)
                G->a_abs.weights[j] = fabsf(G->a_abs.weights[j]);
        }
        expect_ok(gnn_be_graph_create_src_deg(g_cpu, &G->a, G->src_deg, &G->c),
                  gnn_be_graph_create_src_deg(g_gpu, &G->a, G->src_deg, &G->g));
        if (G->a.weights)
            assert_int_equal(gnn_be_graph_create_src_deg(g_cpu, &G->a_abs, G->src_deg, &G->c_abs),
                             0);
        else
            G->c_abs = G->c;
        assert_int_equal(gnn_bgraph_n_dst(G->g), G->a.n_rows);
        assert_int_equal(gnn_bgraph_n_src(G->g), G->a.n_cols);
        assert_int_equal(gnn_bgraph_nnz(G->g), G->a.nnz);
    }
    gnn_eid_t maxrow = 0;
    for (gnn_vid_t v = 0; v < g_graphs[G_POWER].a.n_rows; v++) {
        gnn_eid_t d = g_graphs[G_POWER].a.indptr[v + 1] - g_graphs[G_POWER].a.indptr[v];
        if (d > maxrow) maxrow = d;
    }
    printf("# power-law graph: %" PRId64 " entries, longest row %" PRId64 "\n",
           g_graphs[G_POWER].a.nnz, maxrow);
    g_graphs_built = 1;
}

static void free_graphs(void)
{
    for (int i = 0; i < G_COUNT; i++) {
        graph_t *G = &g_graphs[i];
        if (G->c_abs != G->c) gnn_be_graph_free(G->c_abs);
        gnn_be_graph_free(G->c);
        gnn_be_graph_free(G->g);
        gnn_csr_free(&G->a);
        gnn_csr_free(&G->a_abs);
        free(G->src_deg);
        memset(G, 0, sizeof *G);
    }
    g_graphs_built = 0;
}

/* ---- Built-in aggregators ------------------------------------------------------------ */

/* Buffers of one (graph, width): inputs on both sides, their absolute
 * values on the CPU, outputs, and host room for two GPU results. */
typedef struct {
    int64_t nd, ns, f;
    size_t yb, xb; /* bytes of an n_dst x f and an n_src x f matrix */
    pair_t X, DY, Y, DX;
    float *xa, *dya, *ya, *dxa; /* CPU backend buffers: |x|, |dy|, magnitudes */
    float *hy[2], *hdx[2];
    int32_t *hws[2];
} bufs_t;

static void bufs_init(bufs_t *b, uint64_t *s, const graph_t *G, int64_t f, float scale)
{
    memset(b, 0, sizeof *b);
    b->nd = G->a.n_rows, b->ns = G->a.n_cols, b->f = f;
    b->yb = (size_t)(b->nd * f) * sizeof(float);
    b->xb = (size_t)(b->ns * f) * sizeof(float);
    float *x = rand_floats(s, b->ns * f, scale), *dy = rand_floats(s, b->nd * f, 1.0f);
    float *xa = abs_floats(x, b->ns * f), *dya = abs_floats(dy, b->nd * f);
    b->X = pair_up(x, b->xb);
    b->DY = pair_up(dy, b->yb);
    b->Y = pair_alloc(b->yb);
    b->DX = pair_alloc(b->xb);
    b->xa = cpu_buf(b->xb);
    b->dya = cpu_buf(b->yb);
    b->ya = cpu_buf(b->yb);
    b->dxa = cpu_buf(b->xb);
    memcpy(b->xa, xa, b->xb);
    memcpy(b->dya, dya, b->yb);
    for (int i = 0; i < 2; i++) {
        b->hy[i] = malloc(b->yb + 4), b->hdx[i] = malloc(b->xb + 4), b->hws[i] = malloc(b->yb + 4);
        assert_true(b->hy[i] && b->hdx[i] && b->hws[i]);
    }
    free(x), free(dy), free(xa), free(dya);
}

static void bufs_free(bufs_t *b)
{
    pair_free(&b->X), pair_free(&b->DY), pair_free(&b->Y), pair_free(&b->DX);
    gnn_be_free(g_cpu, b->xa), gnn_be_free(g_cpu, b->dya), gnn_be_free(g_cpu, b->ya);
    gnn_be_free(g_cpu, b->dxa);
    for (int i = 0; i < 2; i++) free(b->hy[i]), free(b->hdx[i]), free(b->hws[i]);
}

static int nontrivial(const graph_t *G)
{
    return G->a.n_rows > 0 && G->a.n_cols > 0 && G->a.nnz > 0;
}

static void expect_choice(const graph_t *G, gnn_aggr_t kind, int64_t f, int backward,
                          gnn_spmm_impl_t forced, int det)
{
    gnn_spmm_impl_t got = GNN_SPMM_COUNT_;
    if (gnn_be_spmm_choice(g_gpu, G->g, kind, f, backward, &got) != 0)
        fail_msg("%s: gnn_be_spmm_choice: %s", g_ctx, gnn_error_message());
    const char *dir = backward ? "backward" : "forward";
    if (forced == GNN_SPMM_AUTO || (forced == GNN_SPMM_CUSPARSE && det)) {
        /* Under deterministic, auto and a forced cusparse run an own kernel. */
        if ((det || got != GNN_SPMM_CUSPARSE) && got != GNN_SPMM_ROWCACHE &&
            got != GNN_SPMM_BALANCED)
            fail_msg("%s: after a %s, %s%s ran %s", g_ctx, dir, gnn_spmm_impl_name(forced),
                     det ? " (deterministic)" : "", gnn_spmm_impl_name(got));
    } else if (got != forced &&
               !(kind == GNN_AGGR_MAX && forced == GNN_SPMM_CUSPARSE && got == GNN_SPMM_ROWCACHE)) {
        /* max runs rowcache when cusparse is forced (cuSPARSE has no max). */
        fail_msg("%s: %s ran %s", g_ctx, dir, gnn_spmm_impl_name(got));
    }
}

/* One built-in on one graph and width: the CPU reference once, then every
 * SpMM implementation of the GPU. */
static void builtin_case(const graph_t *G, bufs_t *b, const gnn_aggr_def_t *def, gnn_aggr_t kind)
{
    const int64_t nd = b->nd, ns = b->ns, f = b->f;
    if (kind == GNN_AGGR_GCN && nd > ns) {
        context("%s gcn f=%" PRId64 " (n_dst > n_src)", G->name, f);
        expect_rc(gnn_be_aggr_forward(g_cpu, G->c, def, f, b->X.c, b->Y.c, NULL, 0), GNN_EINVAL,
                  "CPU");
        expect_rc(gnn_be_aggr_forward(g_gpu, G->g, def, f, b->X.g, b->Y.g, NULL, 0), GNN_EINVAL,
                  "CUDA");
        return;
    }
    context("%s %s f=%" PRId64 " workspace", G->name, def->name, f);
    size_t wc = 1, wg = 2;
    expect_ok(gnn_be_aggr_workspace(g_cpu, G->c, def, f, &wc),
              gnn_be_aggr_workspace(g_gpu, G->g, def, f, &wg));
    assert_int_equal(wc, wg);
    assert_int_equal(wg, kind == GNN_AGGR_MAX ? b->yb : 0);
    pair_t WS = pair_alloc(wg);

    /* The reference, and the magnitudes of its sums. */
    context("%s %s f=%" PRId64 " on the CPU", G->name, def->name, f);
    expect_ok(gnn_be_aggr_forward(g_cpu, G->c, def, f, b->X.c, b->Y.c, WS.c, wg), 0);
    expect_ok(gnn_be_aggr_backward(g_cpu, G->c, def, f, b->X.c, b->Y.c, b->DY.c, b->DX.c, WS.c, wg),
              0);
    if (kind != GNN_AGGR_MAX)
        expect_ok(gnn_be_aggr_forward(g_cpu, G->c_abs, def, f, b->xa, b->ya, NULL, 0), 0);
    /* max: |dy| routed by the same arg-max. */
    expect_ok(gnn_be_aggr_backward(g_cpu, G->c_abs, def, f, b->xa,
                                   kind == GNN_AGGR_MAX ? (float *)b->Y.c : b->ya, b->dya, b->dxa,
                                   WS.c, wg),
              0);

    static const gnn_spmm_impl_t impls[] = {GNN_SPMM_AUTO, GNN_SPMM_CUSPARSE, GNN_SPMM_ROWCACHE,
                                            GNN_SPMM_BALANCED};
    for (int ii = 0; ii < 4; ii++)
        for (int det = 0; det <= 1; det++) {
            const gnn_spmm_impl_t impl = impls[ii];
            context("%s %s f=%" PRId64 " spmm %s%s", G->name, def->name, f,
                    gnn_spmm_impl_name(impl), det ? " deterministic" : "");
            if (gnn_be_set_spmm(g_gpu, impl, det) != 0)
                fail_msg("%s: gnn_be_set_spmm: %s", g_ctx, gnn_error_message());
            if (impl == GNN_SPMM_AUTO && nontrivial(G)) {
                gnn_spmm_impl_t got = GNN_SPMM_COUNT_;
                assert_int_equal(gnn_be_spmm_choice(g_gpu, G->g, kind, f, 0, &got), 0);
                if (got != GNN_SPMM_AUTO)
                    fail_msg("%s: choice %s before auto has run", g_ctx, gnn_spmm_impl_name(got));
            }
            const int runs = det ? 3 : 1;
            for (int run = 0; run < runs; run++) {
                const int h = run % 2;
                poison_gpu(b->Y.g, b->yb);
                poison_gpu(WS.g, wg);
                int rc = gnn_be_aggr_forward(g_gpu, G->g, def, f, b->X.g, b->Y.g, WS.g, wg);
                if (rc) fail_msg("%s: forward: %d %s", g_ctx, rc, gnn_error_message());
                poison_gpu(b->DX.g, b->xb);
                rc = gnn_be_aggr_backward(g_gpu, G->g, def, f, b->X.g, b->Y.g, b->DY.g, b->DX.g,
                                          WS.g, wg);
                if (rc) fail_msg("%s: backward: %d %s", g_ctx, rc, gnn_error_message());
                fetch_into(b->hy[h], b->Y.g, b->yb);
                fetch_into(b->hdx[h], b->DX.g, b->xb);
                fetch_into(b->hws[h], WS.g, wg);
                if (run == 0) {
                    if (kind == GNN_AGGR_MAX) {
                        check_equal(b->hy[h], b->Y.c, nd * f);
                        check_i32(b->hws[h], WS.c, nd * f);
                    } else {
                        check_rows(b->hy[h], b->Y.c, b->ya, nd, f);
                    }
                    check_rows(b->hdx[h], b->DX.c, b->dxa, ns, f);
                } else if (impl != GNN_SPMM_AUTO || run == 2) {
                    /* auto's first call may come from a timing run. */
                    check_bits(b->hy[h], b->hy[1 - h], b->yb, "y");
                    check_bits(b->hdx[h], b->hdx[1 - h], b->xb, "dx");
                    check_bits(b->hws[h], b->hws[1 - h], wg, "arg-max");
                }
            }
            if (nontrivial(G)) {
                expect_choice(G, kind, f, 0, impl, det);
                expect_choice(G, kind, f, 1, impl, det);
            }
        }
    assert_int_equal(gnn_be_set_spmm(g_gpu, GNN_SPMM_AUTO, 0), 0);
    pair_free(&WS);
}

static void test_builtins(void **state)
{
    (void)state;
    build_graphs();
    gnn_aggr_registry_t *reg = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    static const char *names[] = {"sum", "mean", "gcn", "max"};
    uint64_t s = g_seed ^ 0x616767;
    for (int gi = 0; gi < G_COUNT; gi++) {
        const graph_t *G = &g_graphs[gi];
        double t0 = now();
        for (int wi = 0; wi < G->n_widths; wi++) {
            bufs_t b;
            bufs_init(&b, &s, G, G->widths[wi], 1.0f);
            for (int ai = 0; ai < 4; ai++) {
                const gnn_aggr_def_t *def = NULL;
                gnn_aggr_t kind;
                assert_int_equal(gnn_aggr_registry_find(reg, names[ai], &def), 0);
                assert_int_equal(gnn_aggr_from_name(names[ai], &kind), 0);
                builtin_case(G, &b, def, kind);
            }
            bufs_free(&b);
        }
        printf("# built-ins on %s: %.1f s\n", G->name, now() - t0);
    }
    gnn_aggr_registry_free(reg);
}

/* ---- Graph attention ----------------------------------------------------------------- */

/* A host copy of the CPU side of p, set as both sides' contents (the next
 * call then starts from equal inputs); returns the copy (malloc). */
static float *pair_from_cpu(const pair_t *p)
{
    float *h = malloc(p->bytes ? p->bytes : 1);
    assert_non_null(h);
    memcpy(h, p->c, p->bytes);
    pair_set(p, h);
    return h;
}

/* alpha with dropout signs: the same signs (the mask), values close. */
static void expect_alpha(const pair_t *p, int64_t n)
{
    float *h = fetch(p);
    const float *c = p->c;
    for (int64_t i = 0; i < n; i++)
        if (signbit(h[i]) != signbit(c[i]) && (h[i] != 0.0f || c[i] != 0.0f))
            fail_msg("%s: dropout sign of weight [%" PRId64 "]: CUDA %g, CPU %g (seed %" PRIu64
                     ")",
                     g_ctx, i, (double)h[i], (double)c[i], g_seed);
    check_close(h, c, n);
    free(h);
}

/* The attention tests' block: ATTN_ND x ATTN_NS, 20000 random edges
 * (repeats among them), stored self loops on every ninth row, and a hub
 * (row 5, 600 more in-edges). */
#define ATTN_ND 700
#define ATTN_NS 5000 /* past one 4096-row block of the parameter gradient's sums */
static void attention_block(uint64_t *s, gnn_csr_t *a)
{
    elist_t e = {0};
    add_random(s, &e, ATTN_ND, ATTN_NS, 20000);
    for (gnn_vid_t v = 0; v < ATTN_ND; v += 9) el_add(&e, v, v, 1.0f);
    for (int r = 0; r < 600; r++) el_add(&e, rng_below(s, ATTN_NS), 5, 1.0f);
    el_to_csr(&e, ATTN_ND, ATTN_NS, 0, a);
    el_free(&e);
}

/*
 * The built-in gat on both backends: scores, the softmax and aggregation
 * with attention dropout keyed by global ids (the same mask bit for bit),
 * the aggregation's backward (ds apart, then in place of alpha), the
 * scores' backward (dx accumulated, the parameters' gradient), and ELU; on
 * a 700 x 5000 block with repeated edges, empty rows and stored self loops,
 * with self loops added and not, 1, 3, 4 and 8 heads (rows up to 320 wide). Each step starts from
 * the CPU's result of the one before, on both sides.
 */
static void test_attention(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0xa77e;
    gnn_aggr_registry_t *reg = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    const gnn_aggr_def_t *gat = NULL;
    assert_int_equal(gnn_aggr_registry_find(reg, "gat", &gat), 0);
    const gnn_vid_t nd = ATTN_ND, ns = ATTN_NS;
    gnn_csr_t a;
    attention_block(&s, &a);
    gnn_bgraph_t *gc = NULL, *gg = NULL;
    context("attention graph");
    expect_ok(gnn_be_graph_create(g_cpu, &a, &gc), gnn_be_graph_create(g_gpu, &a, &gg));
    int64_t *ids = malloc((size_t)ns * sizeof *ids);
    assert_non_null(ids);
    for (gnn_vid_t u = 0; u < ns; u++) ids[u] = 3 * u + 1;
    pair_t IDS = pair_up(ids, (size_t)ns * sizeof *ids); /* backend buffers, as a batch's */
    static const int64_t hf[][2] = {{3, 5}, {1, 33}, {8, 8}, {4, 80}};
    for (int sl = 0; sl < 2; sl++)
        for (int ci = 0; ci < 4; ci++)
            for (int dr = 0; dr < 2; dr++) {
                const int64_t H = hf[ci][0], F = hf[ci][1], W = H * F;
                gnn_attn_opts_t o = {.heads = H,
                                     .f = F,
                                     .self_loop = sl,
                                     .negative_slope = 0.2f,
                                     .dropout = dr ? 0.3f : 0.0f,
                                     .seed = 77,
                                     .offset = 1000,
                                     .ids = dr ? IDS.c : NULL,
                                     .n_ids = dr ? 3 * (int64_t)ns + 2 : 0};
                gnn_attn_opts_t og = o; /* the GPU's: its copy of the ids */
                og.ids = dr ? IDS.g : NULL;
                context("attention: %" PRId64 " heads of %" PRId64 ", self loops %d, dropout %g",
                        H, F, sl, (double)o.dropout);
                const int64_t slots = gnn_be_attn_slots(gc, sl);
                assert_int_equal(gnn_be_attn_slots(gg, sl), slots);
                size_t wc = 0, wg = 0;
                expect_ok(gnn_be_attn_workspace(g_cpu, gc, gat, &o, &wc),
                          gnn_be_attn_workspace(g_gpu, gg, gat, &og, &wg));
                assert_true(wc == wg && wc > 0);
                float *hx = rand_floats(&s, ns * W, 1.0f), *hp = rand_floats(&s, 2 * W, 1.0f);
                float *hdy = rand_floats(&s, nd * W, 1.0f), *hdx = rand_floats(&s, ns * W, 1.0f);
                pair_t X = pair_up(hx, (size_t)(ns * W) * 4), P = pair_up(hp, (size_t)(2 * W) * 4);
                pair_t DY = pair_up(hdy, (size_t)(nd * W) * 4);
                pair_t S = pair_alloc((size_t)(slots * H) * 4), Y = pair_alloc((size_t)(nd * W) * 4);
                pair_t DX = pair_alloc((size_t)(ns * W) * 4), DS = pair_alloc((size_t)(slots * H) * 4);
                pair_t DP = pair_alloc((size_t)(2 * W) * 4), WS = pair_alloc(wc);

                context("gat scores: %" PRId64 " heads of %" PRId64 ", self loops %d", H, F, sl);
                poison(&S);
                expect_ok(gnn_be_attn_score(g_cpu, gc, gat, &o, P.c, X.c, S.c, WS.c, wc),
                          gnn_be_attn_score(g_gpu, gg, gat, &og, P.g, X.g, S.g, WS.g, wg));
                expect_close(&S, slots * H);

                context("attention forward: %" PRId64 " heads of %" PRId64
                        ", self loops %d, dropout %g",
                        H, F, sl, (double)o.dropout);
                float *hs = pair_from_cpu(&S);
                poison(&Y);
                expect_ok(gnn_be_attn_forward(g_cpu, gc, &o, X.c, S.c, Y.c),
                          gnn_be_attn_forward(g_gpu, gg, &og, X.g, S.g, Y.g));
                expect_alpha(&S, slots * H);
                expect_close(&Y, nd * W);

                context("attention backward: %" PRId64 " heads of %" PRId64
                        ", self loops %d, dropout %g",
                        H, F, sl, (double)o.dropout);
                free(hs);
                hs = pair_from_cpu(&S); /* the CPU's alpha on both sides */
                poison(&DX);
                poison(&DS);
                expect_ok(gnn_be_attn_backward(g_cpu, gc, &o, X.c, S.c, Y.c, DY.c, DX.c, DS.c),
                          gnn_be_attn_backward(g_gpu, gg, &og, X.g, S.g, Y.g, DY.g, DX.g, DS.g));
                expect_close(&DX, ns * W);
                expect_close(&DS, slots * H);
                context("attention backward, ds in place of alpha: %" PRId64 " heads", H);
                pair_set(&S, hs);
                expect_ok(gnn_be_attn_backward(g_cpu, gc, &o, X.c, S.c, Y.c, DY.c, DX.c, S.c),
                          gnn_be_attn_backward(g_gpu, gg, &og, X.g, S.g, Y.g, DY.g, DX.g, S.g));
                expect_close(&S, slots * H);

                context("gat scores backward: %" PRId64 " heads of %" PRId64 ", self loops %d", H,
                        F, sl);
                float *hds = pair_from_cpu(&DS);
                /* The CPU's el and er on both sides: a score within rounding
                 * of 0 would take the other LeakyReLU branch. */
                free(pair_from_cpu(&WS));
                pair_set(&DX, hdx); /* accumulated into */
                poison(&DP);
                expect_ok(gnn_be_attn_score_backward(g_cpu, gc, gat, &o, P.c, X.c, DS.c, DX.c,
                                                     DP.c, WS.c, wc),
                          gnn_be_attn_score_backward(g_gpu, gg, gat, &og, P.g, X.g, DS.g, DX.g,
                                                     DP.g, WS.g, wg));
                expect_close(&DX, ns * W);
                expect_close(&DP, 2 * W);
                free(hs), free(hds), free(hx), free(hp), free(hdy), free(hdx);
                pair_free(&X), pair_free(&P), pair_free(&DY), pair_free(&S), pair_free(&Y);
                pair_free(&DX), pair_free(&DS), pair_free(&DP), pair_free(&WS);
            }
    free(ids);
    pair_free(&IDS);
    gnn_be_graph_free(gc);
    gnn_be_graph_free(gg);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(reg);

    context("elu");
    const int64_t n = 5000;
    float *hx = rand_floats(&s, n, 3.0f), *hdy = rand_floats(&s, n, 1.0f);
    pair_t X = pair_up(hx, (size_t)n * 4), DY = pair_up(hdy, (size_t)n * 4);
    pair_t Y = pair_alloc((size_t)n * 4), DX = pair_alloc((size_t)n * 4);
    poison(&Y);
    expect_ok(gnn_be_elu(g_cpu, n, X.c, Y.c), gnn_be_elu(g_gpu, n, X.g, Y.g));
    expect_close(&Y, n);
    float *hy = pair_from_cpu(&Y);
    context("elu backward");
    poison(&DX);
    expect_ok(gnn_be_elu_backward(g_cpu, n, Y.c, DY.c, DX.c),
              gnn_be_elu_backward(g_gpu, n, Y.g, DY.g, DX.g));
    expect_close(&DX, n);
    free(hx), free(hdy), free(hy);
    pair_free(&X), pair_free(&DY), pair_free(&Y), pair_free(&DX);
}

/* ---- Past 2^31 elements ------------------------------------------------------------- */

#define BIG_ROWS ((int64_t)2100000)
#define BIG_COLS ((int64_t)1040) /* row 2064888 holds element 2^31 */

/* Row r (cols floats) of device matrix d, into host row. */
static void big_row(const float *d, int64_t r, float *row)
{
    fetch_into(row, d + r * BIG_COLS, (size_t)BIG_COLS * sizeof *row);
}

static void big_expect_row(const float *got, const float *want, int64_t r, const char *what)
{
    for (int64_t c = 0; c < BIG_COLS; c++)
        if (memcmp(&got[c], &want[c], sizeof *got))
            fail_msg("%s: %s: element (%" PRId64 ", %" PRId64 ") = flat %" PRId64
                     ": %.9g, expected %.9g",
                     g_ctx, what, r, c, r * BIG_COLS + c, (double)got[c], (double)want[c]);
}

/*
 * A 2,100,000 x 1040 matrix (2.18 G elements, 8.7 GB; element 2^31 in row
 * 2,064,888) through the element-wise ops (the fused bias, ReLU and
 * dropout, its backward, axpby), the row gather, a GEMM and each SpMM
 * implementation forward and backward, on a graph whose row v sums source
 * rows v and n-1-v (its own transpose): the rows around element 2^31 and
 * at both ends, checked bit for bit against the CPU on those rows alone
 * (the dropout counters offset to match). An index or counter kept in a
 * signed 32-bit integer anywhere reads or writes the wrong element (the
 * matrix stays under 2^32 elements to fit an 80 GB device three times).
 * cuSPARSE may refuse sizes this large: said, not failed, as long as auto
 * runs another implementation. Skipped, saying so,
 * where the device has less than the 3 matrices and 2 GB free.
 */
static void test_large_index(void **state)
{
    (void)state;
    const int64_t n = BIG_ROWS, f = BIG_COLS, total = n * f;
    const size_t bytes = (size_t)total * sizeof(float);
    size_t avail = 0;
    assert_int_equal(gnn_be_mem_available(g_gpu, &avail), 0);
    if (avail < 3 * bytes + ((size_t)2 << 30)) {
        printf("# past 2^31 elements: skipped, %.1f GB free on the device, %.1f GB needed\n",
               (double)avail / 1e9, (double)(3 * bytes + ((size_t)2 << 30)) / 1e9);
        skip();
    }
    static const int64_t check[] = {0, 1, 2064887, 2064888, 2064889, BIG_ROWS - 2, BIG_ROWS - 1};
    const int nchk = (int)(sizeof check / sizeof check[0]);
    float *X = NULL, *Y = NULL, *Z = NULL, *B = NULL;
    int64_t *idx = NULL;
    assert_int_equal(gnn_be_alloc(g_gpu, bytes, (void **)&X), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, bytes, (void **)&Y), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, bytes, (void **)&Z), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)f * sizeof(float), (void **)&B), 0);
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)nchk * sizeof(int64_t), (void **)&idx), 0);
    float *hb = malloc((size_t)f * sizeof *hb), *got = malloc((size_t)f * sizeof *got),
          *want = malloc((size_t)f * sizeof *want), *x2 = malloc((size_t)f * sizeof *x2),
          *rows = malloc((size_t)(nchk * f) * sizeof *rows);
    assert_true(hb && got && want && x2 && rows);
    for (int64_t c = 0; c < f; c++) hb[c] = (float)(c % 13) * 0.25f + 0.5f;
    expect_ok(0, gnn_be_upload(g_gpu, B, hb, (size_t)f * sizeof *hb));
    const float p = 0.5f;
    const uint64_t seed = 31, off = 1000003;

    /* X = dropout(relu(0 + b)): each element 0 or 2 b[c] by its counter. */
    context("past 2^31: bias, ReLU and dropout in one pass");
    expect_ok(0, gnn_be_zero(g_gpu, X, bytes));
    expect_ok(0, gnn_be_bias_act_drop(g_gpu, n, f, X, B, GNN_ACT_RELU, p, seed, off, NULL));
    for (int i = 0; i < nchk; i++) {
        const int64_t r = check[i];
        memset(want, 0, (size_t)f * sizeof *want);
        expect_ok(gnn_be_bias_act_drop(g_cpu, 1, f, want, hb, GNN_ACT_RELU, p, seed,
                                       off + (uint64_t)(r * f), NULL),
                  0);
        big_row(X, r, got);
        big_expect_row(got, want, r, "X");
        memcpy(rows + i * f, got, (size_t)f * sizeof *got);
    }

    context("past 2^31: the backward through ReLU and dropout, and axpby");
    expect_ok(0, gnn_be_relu_drop_backward(g_gpu, total, p, X, X, Y));
    expect_ok(0, gnn_be_copy(g_gpu, Z, X, bytes));
    expect_ok(0, gnn_be_axpby(g_gpu, total, 3.0f, X, -0.5f, Z));
    for (int i = 0; i < nchk; i++) {
        const int64_t r = check[i];
        const float *xr = rows + i * f;
        expect_ok(gnn_be_relu_drop_backward(g_cpu, f, p, xr, xr, want), 0);
        big_row(Y, r, got);
        big_expect_row(got, want, r, "relu_drop_backward");
        memcpy(want, xr, (size_t)f * sizeof *want);
        expect_ok(gnn_be_axpby(g_cpu, f, 3.0f, xr, -0.5f, want), 0);
        big_row(Z, r, got);
        big_expect_row(got, want, r, "axpby");
    }

    context("past 2^31: gather_rows");
    int64_t hidx[sizeof check / sizeof check[0]];
    for (int i = 0; i < nchk; i++) hidx[i] = check[nchk - 1 - i]; /* last first */
    expect_ok(0, gnn_be_upload(g_gpu, idx, hidx, sizeof hidx));
    expect_ok(0, gnn_be_gather_rows(g_gpu, nchk, f, X, n, idx, Y));
    for (int i = 0; i < nchk; i++) {
        fetch_into(got, Y + i * f, (size_t)f * sizeof *got);
        big_expect_row(got, rows + (nchk - 1 - i) * f, hidx[i], "gather_rows");
    }

    /* Y = X W (W f x 8 of small integers): every sum exact in any order. */
    context("past 2^31: GEMM of %" PRId64 " x %" PRId64 " by %" PRId64 " x 8", n, f, f);
    float *hw = malloc((size_t)(f * 8) * sizeof *hw), *W = NULL;
    assert_non_null(hw);
    for (int64_t i = 0; i < f * 8; i++) hw[i] = (float)(i % 5) - 2.0f;
    assert_int_equal(gnn_be_alloc(g_gpu, (size_t)(f * 8) * sizeof *hw, (void **)&W), 0);
    expect_ok(0, gnn_be_upload(g_gpu, W, hw, (size_t)(f * 8) * sizeof *hw));
    expect_ok(0, gnn_be_gemm(g_gpu, 0, 0, n, 8, f, 1.0f, X, f, W, 8, 0.0f, Y, 8));
    for (int i = 0; i < nchk; i++) {
        float g8[8], w8[8];
        expect_ok(gnn_be_gemm(g_cpu, 0, 0, 1, 8, f, 1.0f, rows + i * f, f, hw, 8, 0.0f, w8, 8),
                  0);
        fetch_into(g8, Y + check[i] * 8, sizeof g8);
        for (int c = 0; c < 8; c++)
            if (g8[c] != w8[c])
                fail_msg("%s: row %" PRId64 " column %d: %.9g, expected %.9g", g_ctx, check[i],
                         c, (double)g8[c], (double)w8[c]);
    }
    gnn_be_free(g_gpu, W);
    free(hw);

    /* Row v of A sums sources v and n-1-v (n even: never the same): A is
     * its own transpose, so the backward with dy = X gives the forward. */
    gnn_csr_t a = {.n_rows = n, .n_cols = n, .nnz = 2 * n};
    a.indptr = malloc((size_t)(n + 1) * sizeof *a.indptr);
    a.indices = malloc((size_t)(2 * n) * sizeof *a.indices);
    assert_true(a.indptr && a.indices);
    for (int64_t v = 0; v <= n; v++) a.indptr[v] = 2 * v;
    for (int64_t v = 0; v < n; v++) {
        const int64_t u = n - 1 - v;
        a.indices[2 * v] = v < u ? v : u;
        a.indices[2 * v + 1] = v < u ? u : v;
    }
    gnn_bgraph_t *g = NULL;
    expect_ok(0, gnn_be_graph_create(g_gpu, &a, &g));
    gnn_aggr_registry_t *reg = NULL;
    const gnn_aggr_def_t *sum = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    assert_int_equal(gnn_aggr_registry_find(reg, "sum", &sum), 0);
    /* cuSPARSE may refuse matrices this large (said, not failed): auto
     * must then run another. */
    static const gnn_spmm_impl_t impls[] = {GNN_SPMM_CUSPARSE, GNN_SPMM_ROWCACHE,
                                            GNN_SPMM_BALANCED, GNN_SPMM_AUTO};
    for (int ii = 0; ii < 4; ii++) {
        context("past 2^31: spmm sum forward and backward, %s", gnn_spmm_impl_name(impls[ii]));
        expect_ok(0, gnn_be_set_spmm(g_gpu, impls[ii], 0));
        int rc = gnn_be_aggr_forward(g_gpu, g, sum, f, X, Y, NULL, 0);
        if (rc == 0) rc = gnn_be_aggr_backward(g_gpu, g, sum, f, X, Y, X, Z, NULL, 0);
        if (rc != 0 && impls[ii] == GNN_SPMM_CUSPARSE) {
            printf("# past 2^31 elements: cuSPARSE refused: %s\n", gnn_error_message());
            continue;
        }
        if (rc != 0) fail_msg("%s: %d %s", g_ctx, rc, gnn_error_message());
        for (int i = 0; i < nchk; i++) {
            const int64_t v = check[i];
            big_row(X, n - 1 - v, x2);
            for (int64_t c = 0; c < f; c++) want[c] = rows[i * f + c] + x2[c];
            big_row(Y, v, got);
            big_expect_row(got, want, v, "forward");
            big_row(Z, v, got);
            big_expect_row(got, want, v, "backward");
        }
    }
    expect_ok(0, gnn_be_set_spmm(g_gpu, GNN_SPMM_AUTO, 0));
    gnn_aggr_registry_free(reg);
    gnn_be_graph_free(g);
    free(a.indptr), free(a.indices);
    free(hb), free(got), free(want), free(x2), free(rows);
    gnn_be_free(g_gpu, X), gnn_be_free(g_gpu, Y), gnn_be_free(g_gpu, Z);
    gnn_be_free(g_gpu, B), gnn_be_free(g_gpu, idx);
}

/* ---- Plug-ins ------------------------------------------------------------------------- */

/* The lse plug-in's CUDA entry points against its CPU ones. */
static void test_lse_plugin(void **state)
{
    (void)state;
    if (!g_lse_path) {
        printf("# no lse_cuda.so given (argv[1]): plug-in check skipped\n");
        skip();
    }
    build_graphs();
    gnn_aggr_registry_t *reg = NULL;
    const gnn_aggr_def_t *def = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    if (gnn_aggr_registry_load(reg, g_lse_path) != 0)
        fail_msg("loading %s: %s", g_lse_path, gnn_error_message());
    assert_int_equal(gnn_aggr_registry_find(reg, "lse", &def), 0);
    assert_true(def->cpu_forward && def->cpu_backward);
    if (!def->cuda_forward || !def->cuda_backward)
        fail_msg("%s has no CUDA entry points (built without LSE_WITH_CUDA?)", g_lse_path);
    uint64_t s = g_seed ^ 0x6c7365;
    for (int gi = 0; gi < G_COUNT; gi++) {
        const graph_t *G = &g_graphs[gi];
        double t0 = now();
        for (int wi = 0; wi < G->lse_widths; wi++) {
            const int64_t f = G->widths[wi];
            bufs_t b;
            bufs_init(&b, &s, G, f, 3.0f);
            size_t wc = 1, wg = 2;
            context("lse on %s f=%" PRId64, G->name, f);
            expect_ok(gnn_be_aggr_workspace(g_cpu, G->c, def, f, &wc),
                      gnn_be_aggr_workspace(g_gpu, G->g, def, f, &wg));
            assert_int_equal(wc, 0);
            assert_int_equal(wg, 0);
            expect_ok(gnn_be_aggr_forward(g_cpu, G->c, def, f, b.X.c, b.Y.c, NULL, 0), 0);
            expect_ok(
                gnn_be_aggr_backward(g_cpu, G->c, def, f, b.X.c, b.Y.c, b.DY.c, b.DX.c, NULL, 0),
                0);
            for (int run = 0; run < 2; run++) {
                poison_gpu(b.Y.g, b.yb);
                int rc = gnn_be_aggr_forward(g_gpu, G->g, def, f, b.X.g, b.Y.g, NULL, 0);
                if (rc) fail_msg("%s: CUDA forward: %d %s", g_ctx, rc, gnn_error_message());
                poison_gpu(b.DX.g, b.xb);
                rc = gnn_be_aggr_backward(g_gpu, G->g, def, f, b.X.g, b.Y.g, b.DY.g, b.DX.g, NULL,
                                          0);
                if (rc) fail_msg("%s: CUDA backward: %d %s", g_ctx, rc, gnn_error_message());
                fetch_into(b.hy[run], b.Y.g, b.yb);
                fetch_into(b.hdx[run], b.DX.g, b.xb);
            }
            context("lse forward on %s f=%" PRId64, G->name, f);
            check_close(b.hy[0], b.Y.c, b.nd * f);
            context("lse backward on %s f=%" PRId64, G->name, f);
            check_close(b.hdx[0], b.DX.c, b.ns * f);
            context("lse on %s f=%" PRId64 ", two runs", G->name, f);
            check_bits(b.hy[1], b.hy[0], b.yb, "y");
            check_bits(b.hdx[1], b.hdx[0], b.xb, "dx");
            bufs_free(&b);
        }
        printf("# lse on %s: %.1f s\n", G->name, now() - t0);
    }
    gnn_aggr_registry_free(reg);
}

/*
 * The gatv2 plug-in's CUDA entry points (gatv2_cuda.so, argv[2]) against
 * its CPU ones, on the attention block with self loops added and not, 1,
 * 2, 3 and 8 heads (rows of 15 to 320 columns: the gradient of a summed
 * by lanes of a block's threads, and by a thread per column past 256): the scores, then their backward from score gradients of
 * which a fifth are 0 (dx accumulated onto what it held, the gradient of
 * a), within rounding; and the GPU's backward twice from the same inputs,
 * the same bits.
 */
static void test_gatv2_plugin(void **state)
{
    (void)state;
    if (!g_gatv2_path) {
        printf("# no gatv2_cuda.so given (argv[2]): plug-in check skipped\n");
        skip();
    }
    uint64_t s = g_seed ^ 0x67617476;
    gnn_aggr_registry_t *reg = NULL;
    const gnn_aggr_def_t *def = NULL;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    if (gnn_aggr_registry_load(reg, g_gatv2_path) != 0)
        fail_msg("loading %s: %s", g_gatv2_path, gnn_error_message());
    assert_int_equal(gnn_aggr_registry_find_kind(reg, "gatv2", GNN_AGGR_KIND_ATTENTION, &def), 0);
    if (!def->cuda_score || !def->cuda_score_backward)
        fail_msg("%s has no CUDA entry points (built without GATV2_WITH_CUDA?)", g_gatv2_path);
    const gnn_vid_t ns = ATTN_NS;
    gnn_csr_t a;
    attention_block(&s, &a);
    gnn_bgraph_t *gc = NULL, *gg = NULL;
    context("gatv2 graph");
    expect_ok(gnn_be_graph_create(g_cpu, &a, &gc), gnn_be_graph_create(g_gpu, &a, &gg));
    static const int64_t hf[][2] = {{3, 5}, {1, 33}, {8, 8}, {2, 160}};
    for (int sl = 0; sl < 2; sl++)
        for (int ci = 0; ci < 4; ci++) {
            const int64_t H = hf[ci][0], F = hf[ci][1], W = H * F;
            gnn_attn_opts_t o = {.heads = H, .f = F, .self_loop = sl, .negative_slope = 0.2f};
            context("gatv2: %" PRId64 " heads of %" PRId64 ", self loops %d", H, F, sl);
            const int64_t slots = gnn_be_attn_slots(gc, sl);
            size_t wc = 0, wg = 0;
            expect_ok(gnn_be_attn_workspace(g_cpu, gc, def, &o, &wc),
                      gnn_be_attn_workspace(g_gpu, gg, def, &o, &wg));
            assert_true(wc == wg && wc > 0);
            float *hx = rand_floats(&s, ns * W, 1.0f), *hp = rand_floats(&s, W, 1.0f);
            float *hds = rand_floats(&s, slots * H, 1.0f), *hdx = rand_floats(&s, ns * W, 1.0f);
            for (int64_t i = 0; i < slots * H; i += 5) hds[i] = 0.0f;
            pair_t X = pair_up(hx, (size_t)(ns * W) * 4), P = pair_up(hp, (size_t)W * 4);
            pair_t DS = pair_up(hds, (size_t)(slots * H) * 4);
            pair_t S = pair_alloc((size_t)(slots * H) * 4), DX = pair_alloc((size_t)(ns * W) * 4);
            pair_t DP = pair_alloc((size_t)W * 4), WS = pair_alloc(wc);
            poison(&S);
            expect_ok(gnn_be_attn_score(g_cpu, gc, def, &o, P.c, X.c, S.c, WS.c, wc),
                      gnn_be_attn_score(g_gpu, gg, def, &o, P.g, X.g, S.g, WS.g, wg));
            expect_close(&S, slots * H);
            float *run[2][2];
            for (int r = 0; r < 2; r++) {
                pair_set(&DX, hdx); /* accumulated into */
                poison(&DP);
                int rc = gnn_be_attn_score_backward(g_gpu, gg, def, &o, P.g, X.g, DS.g, DX.g, DP.g,
                                                    WS.g, wg);
                if (rc) fail_msg("%s: CUDA score backward: %d %s", g_ctx, rc, gnn_error_message());
                run[r][0] = fetch(&DX);
                run[r][1] = fetch(&DP);
            }
            context("gatv2 score backward: %" PRId64 " heads of %" PRId64 ", self loops %d", H, F,
                    sl);
            expect_ok(gnn_be_attn_score_backward(g_cpu, gc, def, &o, P.c, X.c, DS.c, DX.c, DP.c,
                                                 WS.c, wc),
                      0);
            check_close(run[0][0], DX.c, ns * W);
            check_close(run[0][1], DP.c, W);
            check_bits(run[1][0], run[0][0], (size_t)(ns * W) * 4, "dx");
            check_bits(run[1][1], run[0][1], (size_t)W * 4, "da");
            for (int r = 0; r < 2; r++) free(run[r][0]), free(run[r][1]);
            free(hx), free(hp), free(hds), free(hdx);
            pair_free(&X), pair_free(&P), pair_free(&DS), pair_free(&S), pair_free(&DX);
            pair_free(&DP), pair_free(&WS);
        }
    gnn_be_graph_free(gc);
    gnn_be_graph_free(gg);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(reg);
}

/* Hand-made definitions: what a CUDA entry point is given, and how the
 * backend reports its failures. */
static const gnn_aggr_graph_t *g_seen_graph;
static int64_t g_seen_f;

static int probe_forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    (void)x, (void)y;
    g_seen_graph = call->graph;
    g_seen_f = call->f;
    return 0;
}

static int probe_backward(const gnn_aggr_call_t *call, const float *x, const float *y,
                          const float *dy, float *dx)
{
    (void)x, (void)y, (void)dy, (void)dx;
    g_seen_graph = call->graph;
    return 0;
}

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

static void test_plugin_entry_points(void **state)
{
    (void)state;
    build_graphs();
    const graph_t *G = &g_graphs[G_RECT];
    context("hand-made plug-ins");
    pair_t X = pair_alloc((size_t)G->a.n_cols * 4 * sizeof(float));
    pair_t Y = pair_alloc((size_t)G->a.n_rows * 4 * sizeof(float));

    gnn_aggr_def_t probe = {.abi_version = GNN_AGGR_ABI_VERSION,
                            .name = "probe",
                            .cuda_forward = probe_forward,
                            .cuda_backward = probe_backward};
    g_seen_graph = NULL;
    assert_int_equal(gnn_be_aggr_forward(g_gpu, G->g, &probe, 4, X.g, Y.g, NULL, 0), 0);
    assert_non_null(g_seen_graph);
    assert_int_equal(g_seen_f, 4);
    const gnn_aggr_graph_t *v = g_seen_graph;
    assert_int_equal(v->n_dst, G->a.n_rows);
    assert_int_equal(v->n_src, G->a.n_cols);
    assert_int_equal(v->nnz, G->a.nnz);
    /* Device arrays, not the host CSR. */
    assert_true(v->indptr && v->indices && v->t_indptr && v->t_indices);
    assert_true(v->indptr != G->a.indptr && v->indices != G->a.indices);
    assert_true(v->weights && v->t_weights && v->weights != G->a.weights);
    g_seen_graph = NULL;
    assert_int_equal(gnn_be_aggr_backward(g_gpu, G->g, &probe, 4, X.g, Y.g, Y.g, X.g, NULL, 0), 0);
    assert_non_null(g_seen_graph);
    expect_rc(gnn_be_aggr_forward(g_cpu, G->c, &probe, 4, X.c, Y.c, NULL, 0), GNN_EUNSUPPORTED,
              "CPU");

    gnn_aggr_def_t cpu_only = {.abi_version = GNN_AGGR_ABI_VERSION,
                               .name = "cpuonly",
                               .cpu_forward = probe_forward,
                               .cpu_backward = probe_backward};
    expect_rc(gnn_be_aggr_forward(g_gpu, G->g, &cpu_only, 4, X.g, Y.g, NULL, 0), GNN_EUNSUPPORTED,
              "CUDA");
    if (!strstr(gnn_error_message(), "aggregator cpuonly has no CUDA forward"))
        fail_msg("message \"%s\"", gnn_error_message());
    expect_rc(gnn_be_aggr_backward(g_gpu, G->g, &cpu_only, 4, X.g, Y.g, Y.g, X.g, NULL, 0),
              GNN_EUNSUPPORTED, "CUDA");
    if (!strstr(gnn_error_message(), "aggregator cpuonly has no CUDA backward"))
        fail_msg("message \"%s\"", gnn_error_message());

    gnn_aggr_def_t noisy = {.abi_version = GNN_AGGR_ABI_VERSION,
                            .name = "noisy",
                            .cuda_forward = fail_with_msg,
                            .cuda_backward = probe_backward};
    expect_rc(gnn_be_aggr_forward(g_gpu, G->g, &noisy, 4, X.g, Y.g, NULL, 0), GNN_EPLUGIN, "CUDA");
    if (!strstr(gnn_error_message(), "aggregator noisy forward: boom at width 4"))
        fail_msg("message \"%s\"", gnn_error_message());
    gnn_aggr_def_t bare = {.abi_version = GNN_AGGR_ABI_VERSION,
                           .name = "bare",
                           .cuda_forward = fail_bare,
                           .cuda_backward = probe_backward};
    expect_rc(gnn_be_aggr_forward(g_gpu, G->g, &bare, 4, X.g, Y.g, NULL, 0), GNN_EPLUGIN, "CUDA");
    if (!strstr(gnn_error_message(), "aggregator bare forward failed (code 3) without a message"))
        fail_msg("message \"%s\"", gnn_error_message());

    /* A graph of the other backend is refused. */
    expect_rc(gnn_be_aggr_forward(g_gpu, G->c, &probe, 4, X.g, Y.g, NULL, 0), GNN_EINVAL, "CUDA");
    assert_int_equal(gnn_be_sync(g_gpu), 0);
    pair_free(&X), pair_free(&Y);
}

static int teardown_graphs(void **state)
{
    (void)state;
    free_graphs();
    return 0;
}

int main(int argc, char **argv)
{
    int n = 0;
    int nrc = gnn_cuda_device_count(&n);
    if (nrc != 0 || n == 0) {
        printf("SKIPPED: no CUDA device on this machine%s%s\n", nrc ? ": " : "",
               nrc ? gnn_error_message() : "");
        return 77;
    }
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    g_lse_path = argc > 1 ? argv[1] : NULL;
    g_gatv2_path = argc > 2 ? argv[2] : NULL;
    if (gnn_backend_open("cuda", &g_gpu) != 0) {
        printf("FAILED: cannot open the CUDA backend: %s\n", gnn_error_message());
        return 1;
    }
    if (gnn_backend_open("cpu", &g_cpu) != 0) {
        printf("FAILED: cannot open the CPU backend: %s\n", gnn_error_message());
        gnn_backend_close(g_gpu);
        return 1;
    }
    printf("# %s against %s\n", gnn_backend_describe(g_gpu), gnn_backend_describe(g_cpu));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open),         cmocka_unit_test(test_memory),
        cmocka_unit_test(test_gemm),         cmocka_unit_test(test_bias),
        cmocka_unit_test(test_relu_axpby),   cmocka_unit_test(test_dropout),
        cmocka_unit_test(test_dropout_rows), cmocka_unit_test(test_bias_act_drop),
        cmocka_unit_test(test_gather_rows),  cmocka_unit_test(test_map_host_pages),
        cmocka_unit_test(test_softmax_xent), cmocka_unit_test(test_adam),
        cmocka_unit_test(test_sparse_opt),   cmocka_unit_test(test_copy_rows),
        cmocka_unit_test(test_scatter_rows),
        cmocka_unit_test(test_argmax_count), cmocka_unit_test(test_argmax_nan),
        cmocka_unit_test(test_sparse),       cmocka_unit_test(test_builtins),
        cmocka_unit_test(test_attention),
        cmocka_unit_test(test_step_capture), cmocka_unit_test(test_large_index),
        cmocka_unit_test(test_lse_plugin),   cmocka_unit_test(test_gatv2_plugin),
        cmocka_unit_test(test_plugin_entry_points),
    };
    double t0 = now();
    int rc = cmocka_run_group_tests(tests, NULL, teardown_graphs);
    printf("# %.1f s in all\n", now() - t0);
    gnn_backend_close(g_cpu);
    gnn_backend_close(g_gpu);
    return rc;
}
