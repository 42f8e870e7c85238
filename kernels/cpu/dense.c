/*
 * CPU backend of the dense operations (kernels/dense.h).
 *
 * GEMM goes to OpenBLAS (cblas_sgemm, row-major), but for the narrow
 * shapes of a layer's products on a CPU with AVX-512, which have their
 * own kernels (kernels/cpu/gemm_skinny.c). Everything else is an
 * OpenMP loop. Reductions (bias gradient, cross-entropy loss) are cut into
 * fixed-size blocks independent of the thread count; each block sums in
 * double and the block partials are added in block order, so the result is
 * the same for any number of threads. Dropout draws its mask from the
 * counter-based generator of graph/base/rng.h, one Philox call per four
 * elements, exactly as the CUDA backend does. Arguments are all checked
 * before any output is written.
 */
#include "kernels/dense.h"
#include "kernels/adam_step.h"
#include "kernels/dense_check.h"

#include <cblas.h>
#include <inttypes.h>
#include <omp.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"
#include "kernels/cpu/gemm_skinny.h"
#include "kernels/cpu/philox.h"

/* Work below this many elements runs on one thread. */
#define PAR_MIN 32768
/* Rows per block of a reduction (fixed: results do not depend on threads). */
#define RED_BLOCK 1024

/* ---- GEMM --------------------------------------------------------------------- */

int gnn_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_gemm(trans_a, trans_b, m, n, k, a, lda, b, ldb, c, ldc));
    if (m == 0 || n == 0) return 0;
    if (k == 0) {
        /* BLAS may skip this case; do it here with the same convention. */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return 0;
    }
    int done = gnn__gemm_skinny(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (done != 0) return done < 0 ? done : 0;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, alpha, a, (int)lda,
                b, (int)ldb, beta, c, (int)ldc);
    return 0;
fail:
    return rc;
}

int gnn_gemm_rows(int trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const int64_t *rows, const float *b, int64_t ldb, float beta,
                  float *c, int64_t ldc)
{
    int rc = 0;
    float *copy = NULL;
    const int64_t ar = trans_a ? k : m, ac = trans_a ? m : k; /* A as stored */
    GNN_TRY(gnn__dense_check_gemm(trans_a, 0, m, n, k, a, lda, b, ldb, c, ldc));
    GNN_CHECK(rows || ar == 0, GNN_EINVAL, "gnn_gemm_rows: NULL rows");
    int bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static) if (ar >= 65536)
    for (int64_t i = 0; i < ar; i++) bad += rows[i] < 0;
    GNN_CHECK(!bad, GNN_EINVAL, "gnn_gemm_rows: %d negative rows", bad);
    if (m == 0 || n == 0) return 0;
    if (k > 0) {
        int done = gnn__gemm_skinny_rows(trans_a, 0, m, n, k, alpha, a, lda, rows, b, ldb, beta,
                                         c, ldc);
        if (done != 0) return done < 0 ? done : 0;
    }
    /* Elsewhere the gathered copy, then gnn_gemm. */
    copy = gnn_malloc_array((size_t)(ar * ac) + 1, sizeof *copy);
    GNN_CHECK(copy, GNN_ENOMEM, "gnn_gemm_rows: %" PRId64 " x %" PRId64 " copy", ar, ac);
#pragma omp parallel for schedule(static) if (ar * ac >= PAR_MIN)
    for (int64_t i = 0; i < ar; i++)
        memcpy(copy + i * ac, a + rows[i] * lda, (size_t)ac * sizeof *copy);
    rc = gnn_gemm(trans_a, 0, m, n, k, alpha, copy, ac, b, ldb, beta, c, ldc);
    gnn_free(copy);
    return rc;
fail:
    gnn_free(copy);
    return rc;
}

/* One product of gnn_gemm_pair's: through rows when set. */
static int pair_one(int trans_a, int64_t m, int64_t n, int64_t k, const float *a, int64_t lda,
                    const int64_t *rows, const float *b, float *c)
{
    if (rows) return gnn_gemm_rows(trans_a, m, n, k, 1.0f, a, lda, rows, b, n, 0.0f, c, n);
    return gnn_gemm(trans_a, 0, m, n, k, 1.0f, a, lda, b, n, 0.0f, c, n);
}

int gnn_gemm_pair(int trans_a, int64_t m, int64_t m2, int64_t k, const float *a, int64_t lda,
                  const int64_t *rows, int64_t n1, const float *b1, float *c1, int64_t n2,
                  const float *b2, float *c2)
{
    int rc = 0;
    /* trans_a 0: m2 <= m rows; 1: m2 is k2 <= k, the rows of the sum */
    int64_t big = trans_a ? k : m;
    GNN_CHECK(m >= 0 && k >= 0 && n1 >= 0 && n2 >= 0 && m2 >= 0 && m2 <= big, GNN_EINVAL,
              "gnn_gemm_pair: %" PRId64 " of %" PRId64 " rows", m2, big);
    GNN_TRY(gnn__dense_check_gemm(trans_a, 0, m, n1, k, a, lda, b1, n1, c1, n1));
    GNN_TRY(gnn__dense_check_gemm(trans_a, 0, trans_a ? m : m2, n2, trans_a ? m2 : k, a, lda,
                                  b2, n2, c2, n2));
    if (m > 0 && k > 0 && n1 > 0 && n2 > 0 && m2 > 0) {
        int done = trans_a ? gnn__gemm_skinny_tn_pair(m, k, m2, a, lda, rows, n1, b1, c1, n2, b2,
                                                      c2)
                           : gnn__gemm_skinny_nn_pair(m, m2, k, a, lda, rows, n1, b1, c1, n2,
                                                      b2, c2);
        if (done != 0) return done < 0 ? done : 0;
    }
    GNN_TRY(pair_one(trans_a, m, n1, k, a, lda, rows, b1, c1));
    GNN_TRY(pair_one(trans_a, trans_a ? m : m2, n2, trans_a ? m2 : k, a, lda, rows, b2, c2));
    return 0;
fail:
    return rc;
}

/* ---- Bias --------------------------------------------------------------------- */

int gnn_bias_add(int64_t rows, int64_t cols, float *y, const float *bias)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_bias_add", rows, cols));
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) {
        float *row = y + r * cols;
        for (int64_t c = 0; c < cols; c++) row[c] += bias[c];
    }
    return 0;
fail:
    return rc;
}

/* One row of gnn_bias_act. */
static inline void bias_act_row(float *row, const float *bias, int64_t cols, int act)
{
    if (act == GNN_ACT_RELU) {
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) {
            const float v = row[c] + bias[c];
            row[c] = v < 0.0f ? 0.0f : v; /* as gnn_relu */
        }
    } else if (act == GNN_ACT_ELU) {
        for (int64_t c = 0; c < cols; c++) {
            const float v = row[c] + bias[c];
            row[c] = v > 0.0f ? v : expm1f(v);
        }
    } else {
#pragma omp simd
        for (int64_t c = 0; c < cols; c++) row[c] += bias[c];
    }
}

static int check_act(const char *fn, int act)
{
    if (act == GNN_ACT_NONE || act == GNN_ACT_RELU || act == GNN_ACT_ELU) return 0;
    return GNN_FAIL(GNN_EINVAL, "%s: activation %d (0 none, 1 relu, 2 elu)", fn, act);
}

int gnn_bias_act(int64_t rows, int64_t cols, float *y, const float *bias, int act)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_bias_act", rows, cols));
    GNN_TRY(check_act("gnn_bias_act", act));
    if (act == GNN_ACT_NONE) return gnn_bias_add(rows, cols, y, bias);
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) bias_act_row(y + r * cols, bias, cols, act);
    return 0;
fail:
    return rc;
}

int gnn_bias_grad(int64_t rows, int64_t cols, const float *dy, float *dbias)
{
    int rc = 0;
    double *part = NULL;
    GNN_TRY(gnn__dense_check_shape("gnn_bias_grad", rows, cols));
    if (cols == 0) return 0;
    int64_t nblk = (rows + RED_BLOCK - 1) / RED_BLOCK;
    if (nblk == 0) {
        memset(dbias, 0, (size_t)cols * sizeof *dbias);
        return 0;
    }
    part = gnn_malloc_array((size_t)nblk * (size_t)cols, sizeof *part);
    GNN_CHECK(part, GNN_ENOMEM, "gnn_bias_grad: %" PRId64 " block partials", nblk * cols);
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
    for (int64_t bk = 0; bk < nblk; bk++) {
        double *acc = part + bk * cols;
        int64_t r1 = (bk + 1) * RED_BLOCK < rows ? (bk + 1) * RED_BLOCK : rows;
        for (int64_t c = 0; c < cols; c++) acc[c] = 0.0;
        for (int64_t r = bk * RED_BLOCK; r < r1; r++) {
            const float *row = dy + r * cols;
            for (int64_t c = 0; c < cols; c++) acc[c] += row[c];
        }
    }
#pragma omp parallel for schedule(static) if (nblk * cols >= PAR_MIN)
    for (int64_t c = 0; c < cols; c++) {
        double s = 0.0;
        for (int64_t bk = 0; bk < nblk; bk++) s += part[bk * cols + c];
        dbias[c] = (float)s;
    }
    gnn_free(part);
    return 0;
fail:
    gnn_free(part);
    return rc;
}

/* ---- ReLU --------------------------------------------------------------------- */

int gnn_relu(int64_t n, const float *x, float *y)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_relu", n));
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v;
    }
    return 0;
fail:
    return rc;
}

int gnn_elu(int64_t n, const float *x, float *y)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_elu", n));
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : expm1f(v);
    }
    return 0;
fail:
    return rc;
}

int gnn_elu_backward(int64_t n, const float *y, const float *dy, float *dx)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_elu_backward", n));
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float g = dy[i], v = y[i];
        dx[i] = v > 0.0f ? g : g * (v + 1.0f);
    }
    return 0;
fail:
    return rc;
}

int gnn_relu_backward(int64_t n, const float *xy, const float *dy, float *dx)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_relu_backward", n));
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float g = dy[i]; /* loaded unconditionally: the select vectorises */
        dx[i] = xy[i] > 0.0f ? g : 0.0f;
    }
    return 0;
fail:
    return rc;
}

/* ---- axpby, row gather ------------------------------------------------------- */

int gnn_axpby(int64_t n, float alpha, const float *x, float beta, float *y)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_axpby", n));
    if (beta == 0.0f) {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i];
    } else {
#pragma omp parallel for schedule(static) if (n >= PAR_MIN)
        for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + beta * y[i];
    }
    return 0;
fail:
    return rc;
}

int gnn_gather_rows(int64_t n, int64_t f, const float *src, int64_t src_rows, const int64_t *idx,
                    float *dst)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_gather_rows", n, f));
    GNN_TRY(gnn__dense_check_shape("gnn_gather_rows", src_rows, f));
    for (int64_t i = 0; i < n; i++)
        GNN_CHECK(idx[i] >= 0 && idx[i] < src_rows, GNN_EINVAL,
                  "gnn_gather_rows: index %" PRId64 " at position %" PRId64
                  " outside [0, %" PRId64 ")",
                  idx[i], i, src_rows);
#pragma omp parallel for schedule(static) if (n * f >= PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + i * f, src + idx[i] * f, (size_t)f * sizeof(float));
    return 0;
fail:
    return rc;
}

int gnn_gather_rows_cached(int64_t n, int64_t f, const float *cache, const int32_t *slot,
                           const float *src, const int64_t *idx, float *dst)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_gather_rows_cached", n, f));
#pragma omp parallel for schedule(static) if (n * f >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = idx[i];
        const float *row = slot[v] >= 0 ? cache + (int64_t)slot[v] * f : src + v * f;
        memcpy(dst + i * f, row, (size_t)f * sizeof(float));
    }
    return 0;
fail:
    return rc;
}

/* ---- Dropout ------------------------------------------------------------------ */

/*
 * Philox for RNG_BATCH consecutive counter blocks at once, laid out so that
 * out[4 * b + lane] is word `lane` of block block0 + b, i.e. out[e] belongs
 * to counter 4 * block0 + e. With AVX-512 or AVX2 (checked at run time;
 * the binary stays baseline x86-64) sixteen or eight blocks run per vector
 * pass; the arithmetic is exactly gnn_philox4x32_10's, checked by the
 * known-answer tests.
 */
#define RNG_BATCH 16

static void philox_batch_scalar(uint64_t seed, uint64_t block0, uint32_t *restrict out)
{
    for (int b = 0; b < RNG_BATCH; b++)
        gnn_rng_block(seed, (block0 + (uint64_t)b) & (UINT64_MAX >> 2), out + 4 * b);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* 32x32 -> 64-bit products of the eight lanes of c by m: high and low words. */
__attribute__((target("avx2"))) static inline void mul_hilo8(__m256i c, __m256i m, __m256i *hi,
                                                             __m256i *lo)
{
    __m256i pe = _mm256_mul_epu32(c, m);                        /* lanes 0, 2, 4, 6 */
    __m256i po = _mm256_mul_epu32(_mm256_srli_epi64(c, 32), m); /* lanes 1, 3, 5, 7 */
    *hi = _mm256_blend_epi32(_mm256_srli_epi64(pe, 32), po, 0xAA);
    *lo = _mm256_blend_epi32(pe, _mm256_slli_epi64(po, 32), 0xAA);
}

/* Eight blocks at the counters blocks[0, 8) in one AVX2 pass, words in
 * block-major order (out[4 b + w]). */
__attribute__((target("avx2"))) static void philox_gather8_avx2(uint64_t seed,
                                                                const uint64_t *blocks,
                                                                uint32_t *restrict out)
{
    const __m256i m0 = _mm256_set1_epi32((int)GNN_PHILOX_M0);
    const __m256i m1 = _mm256_set1_epi32((int)GNN_PHILOX_M1);
    uint32_t lo32[8], hi32[8];
    for (int b = 0; b < 8; b++) {
        lo32[b] = (uint32_t)blocks[b];
        hi32[b] = (uint32_t)(blocks[b] >> 32);
    }
    __m256i c0 = _mm256_loadu_si256((const __m256i *)lo32);
    __m256i c1 = _mm256_loadu_si256((const __m256i *)hi32);
    __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        __m256i hi0, lo0, hi1, lo1;
        mul_hilo8(c0, m0, &hi0, &lo0);
        mul_hilo8(c2, m1, &hi1, &lo1);
        c0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)k0));
        c2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += GNN_PHILOX_W0;
        k1 += GNN_PHILOX_W1;
    }
    /* Transpose to block-major order: out[4 b + w] = word w of block b. */
    __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
    __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2); /* blocks 0 | 4 */
    __m256i u1 = _mm256_unpackhi_epi64(t0, t2); /* blocks 1 | 5 */
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3); /* blocks 2 | 6 */
    __m256i u3 = _mm256_unpackhi_epi64(t1, t3); /* blocks 3 | 7 */
    __m256i *o = (__m256i *)out;
    _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(u0, u1, 0x20));
    _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(u2, u3, 0x20));
    _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(u0, u1, 0x31));
    _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(u2, u3, 0x31));
}

/* The same words as philox_batch_scalar, eight blocks per AVX2 pass. */
__attribute__((target("avx2"))) static void philox_batch_avx2(uint64_t seed, uint64_t block0,
                                                              uint32_t *restrict out)
{
    for (int g = 0; g < RNG_BATCH; g += 8) {
        uint64_t blocks[8];
        for (int b = 0; b < 8; b++) blocks[b] = (block0 + (uint64_t)(g + b)) & (UINT64_MAX >> 2);
        philox_gather8_avx2(seed, blocks, out + 4 * g);
    }
}

/* The same with AVX-512: sixteen blocks a pass. */
__attribute__((target("avx512f"))) static inline void mul_hilo16(__m512i c, __m512i m,
                                                                __m512i *hi, __m512i *lo)
{
    __m512i pe = _mm512_mul_epu32(c, m);                        /* lanes 0, 2, ..., 14 */
    __m512i po = _mm512_mul_epu32(_mm512_srli_epi64(c, 32), m); /* lanes 1, 3, ..., 15 */
    *hi = _mm512_mask_blend_epi32(0xAAAA, _mm512_srli_epi64(pe, 32), po);
    *lo = _mm512_mask_blend_epi32(0xAAAA, pe, _mm512_slli_epi64(po, 32));
}

__attribute__((target("avx512f"))) static void philox_gather16_avx512(uint64_t seed,
                                                                     const uint64_t *blocks,
                                                                     uint32_t *restrict out)
{
    const __m512i m0 = _mm512_set1_epi32((int)GNN_PHILOX_M0);
    const __m512i m1 = _mm512_set1_epi32((int)GNN_PHILOX_M1);
    uint32_t lo32[16], hi32[16];
    for (int b = 0; b < 16; b++) {
        lo32[b] = (uint32_t)blocks[b];
        hi32[b] = (uint32_t)(blocks[b] >> 32);
    }
    __m512i c0 = _mm512_loadu_si512((const void *)lo32);
    __m512i c1 = _mm512_loadu_si512((const void *)hi32);
    __m512i c2 = _mm512_setzero_si512(), c3 = _mm512_setzero_si512();
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        __m512i hi0, lo0, hi1, lo1;
        mul_hilo16(c0, m0, &hi0, &lo0);
        mul_hilo16(c2, m1, &hi1, &lo1);
        c0 = _mm512_xor_si512(_mm512_xor_si512(hi1, c1), _mm512_set1_epi32((int)k0));
        c2 = _mm512_xor_si512(_mm512_xor_si512(hi0, c3), _mm512_set1_epi32((int)k1));
        c1 = lo1;
        c3 = lo0;
        k0 += GNN_PHILOX_W0;
        k1 += GNN_PHILOX_W1;
    }
    /* Block-major order: within each 128-bit lane L as the AVX2 pass does
     * (u0 holds block 4 L, u1 4 L + 1, ...), then the 4 x 4 lanes
     * transposed, so that store q holds blocks 4 q .. 4 q + 3. */
    __m512i t0 = _mm512_unpacklo_epi32(c0, c1), t1 = _mm512_unpackhi_epi32(c0, c1);
    __m512i t2 = _mm512_unpacklo_epi32(c2, c3), t3 = _mm512_unpackhi_epi32(c2, c3);
    __m512i u0 = _mm512_unpacklo_epi64(t0, t2), u1 = _mm512_unpackhi_epi64(t0, t2);
    __m512i u2 = _mm512_unpacklo_epi64(t1, t3), u3 = _mm512_unpackhi_epi64(t1, t3);
    __m512i x0 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(2, 0, 2, 0));
    __m512i x1 = _mm512_shuffle_i32x4(u0, u1, _MM_SHUFFLE(3, 1, 3, 1));
    __m512i x2 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(2, 0, 2, 0));
    __m512i x3 = _mm512_shuffle_i32x4(u2, u3, _MM_SHUFFLE(3, 1, 3, 1));
    _mm512_storeu_si512((void *)(out + 0), _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512((void *)(out + 16), _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_storeu_si512((void *)(out + 32), _mm512_shuffle_i32x4(x0, x2, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_storeu_si512((void *)(out + 48), _mm512_shuffle_i32x4(x1, x3, _MM_SHUFFLE(3, 1, 3, 1)));
}

static int have_avx512(void)
{
    static int avx512 = -1;
    if (avx512 < 0) avx512 = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return avx512;
}

static int have_avx2(void)
{
    static int avx2 = -1;
    if (avx2 < 0) avx2 = __builtin_cpu_supports("avx2") ? 1 : 0; /* same value from any thread */
    return avx2;
}

void gnn__philox_blocks(uint64_t seed, const uint64_t *blocks, int64_t n, uint32_t *out)
{
    int64_t k = 0;
    if (have_avx512())
        for (; k + 16 <= n; k += 16) philox_gather16_avx512(seed, blocks + k, out + 4 * k);
    if (have_avx2())
        for (; k + 8 <= n; k += 8) philox_gather8_avx2(seed, blocks + k, out + 4 * k);
    for (; k < n; k++) gnn_rng_block(seed, blocks[k], out + 4 * k);
}

static void philox_batch(uint64_t seed, uint64_t block0, uint32_t *restrict out)
{
    if (have_avx512()) {
        uint64_t blocks[RNG_BATCH];
        for (int b = 0; b < RNG_BATCH; b++) blocks[b] = (block0 + (uint64_t)b) & (UINT64_MAX >> 2);
        philox_gather16_avx512(seed, blocks, out);
    } else if (have_avx2())
        philox_batch_avx2(seed, block0, out);
    else
        philox_batch_scalar(seed, block0, out);
}
#else
static void philox_batch(uint64_t seed, uint64_t block0, uint32_t *restrict out)
{
    philox_batch_scalar(seed, block0, out);
}

void gnn__philox_blocks(uint64_t seed, const uint64_t *blocks, int64_t n, uint32_t *out)
{
    for (int64_t k = 0; k < n; k++) gnn_rng_block(seed, blocks[k], out + 4 * k);
}
#endif

/*
 * ys[e] = u(r[e]) < p ? 0 : xs[e] * scale for the n elements of a span,
 * without branches (a drop decision at p = 0.5 is a coin flip no branch
 * predictor can follow): the kept value is selected by a bit mask. xs may
 * equal ys (in place).
 */
static void mask_span_scalar(const uint32_t *r, const float *xs, float *ys, int64_t n, float p,
                             float scale)
{
    for (int64_t e = 0; e < n; e++) {
        float u = gnn_rng_u01(r[e]), v = xs[e] * scale;
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        bits &= -(uint32_t)!(u < p);
        memcpy(&ys[e], &bits, sizeof bits);
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2"))) static void mask_span_avx2(const uint32_t *r, const float *xs,
                                                           float *ys, int64_t n, float p,
                                                           float scale)
{
    const __m256 vp = _mm256_set1_ps(p), vs = _mm256_set1_ps(scale);
    const __m256 two24 = _mm256_set1_ps(5.9604644775390625e-08f);
    int64_t e = 0;
    for (; e + 8 <= n; e += 8) {
        __m256i w = _mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)(r + e)), 8);
        __m256 u = _mm256_mul_ps(_mm256_cvtepi32_ps(w), two24); /* exact: w < 2^24 */
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(xs + e), vs);
        __m256 drop = _mm256_cmp_ps(u, vp, _CMP_LT_OQ);
        _mm256_storeu_ps(ys + e, _mm256_andnot_ps(drop, v));
    }
    mask_span_scalar(r + e, xs + e, ys + e, n - e, p, scale);
}
#endif

static void mask_span(const uint32_t *r, const float *xs, float *ys, int64_t n, float p,
                      float scale)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (have_avx2()) {
        mask_span_avx2(r, xs, ys, n, p, scale);
        return;
    }
#endif
    mask_span_scalar(r, xs, ys, n, p, scale);
}

/*
 * y[i] = keep(offset + i) ? x[i] * scale : 0. The counters are walked in
 * batches of RNG_BATCH aligned blocks (4 * RNG_BATCH elements); a batch
 * that the range covers only in part (at either end) masks element by
 * element, full batches in one vectorised loop. Batches [k0, k1) of the
 * range only (serial): the parallel callers split the batches.
 */
static void dropout_batches(int64_t n, float p, float scale, uint64_t seed, uint64_t offset,
                            const float *x, float *y, int64_t k0, int64_t k1)
{
    const int64_t per = 4 * RNG_BATCH;
    /* Counter of element i is offset + i; batch k covers counters
     * [per * (b0 + k), per * (b0 + k + 1)) with b0 the batch of offset. */
    uint64_t b0 = offset / (uint64_t)per;
    int64_t lead = (int64_t)(offset % (uint64_t)per); /* counters of batch 0 before element 0 */
    for (int64_t k = k0; k < k1; k++) {
        uint32_t r[4 * RNG_BATCH];
        philox_batch(seed, (b0 + (uint64_t)k) * (uint64_t)RNG_BATCH, r);
        int64_t i0 = k * per - lead; /* element of r[0] */
        if (i0 >= 0 && i0 + per <= n) {
            mask_span(r, x + i0, y + i0, per, p, scale);
        } else {
            for (int e = 0; e < 4 * RNG_BATCH; e++) {
                int64_t i = i0 + e;
                if (i < 0 || i >= n) continue;
                y[i] = gnn_rng_u01(r[e]) < p ? 0.0f : x[i] * scale;
            }
        }
    }
}

/* Batches a range of n elements from counter offset touches. */
static int64_t dropout_nbatches(int64_t n, uint64_t offset)
{
    const int64_t per = 4 * RNG_BATCH;
    return ((int64_t)(offset % (uint64_t)per) + n + per - 1) / per;
}

static float dropout_scale(float p) { return (float)(1.0 / (1.0 - (double)p)); }

static void dropout_apply(int64_t n, float p, uint64_t seed, uint64_t offset, const float *x,
                          float *y)
{
    const float scale = dropout_scale(p);
    int64_t nb = dropout_nbatches(n, offset);
#pragma omp parallel if (n >= PAR_MIN)
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        dropout_batches(n, p, scale, seed, offset, x, y, nb * t / nt, nb * (t + 1) / nt);
    }
}

int gnn_dropout(int64_t n, float p, uint64_t seed, uint64_t offset, const float *x, float *y)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_dropout", n));
    GNN_TRY(gnn__dense_check_drop_p("gnn_dropout", p));
    if (n == 0) return 0;
    if (p == 0.0f) {
        if (y != x) memcpy(y, x, (size_t)n * sizeof *y);
        return 0;
    }
    dropout_apply(n, p, seed, offset, x, y);
    return 0;
fail:
    return rc;
}

/* Philox blocks one gather of drop_rows draws at most. */
#define SPAN_BLOCKS 256

/* The spans of one gather: n elements from x to y whose counters start at
 * off, their words at word (the block of off first). */
typedef struct {
    uint64_t off;
    int64_t n, word;
    const float *x;
    float *y;
} drop_span_t;

typedef struct {
    uint64_t blocks[SPAN_BLOCKS];
    uint32_t words[4 * SPAN_BLOCKS];
    drop_span_t span[SPAN_BLOCKS];
    int64_t nb, ns;
} drop_gather_t;

/* Draws the blocks gathered so far and masks their spans. */
static void drop_flush(drop_gather_t *d, float p, float scale, uint64_t seed)
{
    gnn__philox_blocks(seed, d->blocks, d->nb, d->words);
    for (int64_t i = 0; i < d->ns; i++) {
        const drop_span_t *t = &d->span[i];
        mask_span(d->words + t->word + (int64_t)(t->off & 3u), t->x, t->y, t->n, p, scale);
    }
    d->nb = d->ns = 0;
}

/* Elements [0, n) from counter off: in pieces whose blocks fit a gather,
 * each piece's blocks added to the gather (drawn when it is full). */
static void drop_add(drop_gather_t *d, uint64_t off, int64_t n, const float *x, float *y,
                     float p, float scale, uint64_t seed)
{
    const int64_t most = 4 * (SPAN_BLOCKS - 1); /* any start lane fits SPAN_BLOCKS blocks */
    while (n > 0) {
        int64_t m = n < most ? n : most;
        int64_t nb = ((int64_t)(off & 3u) + m + 3) / 4;
        if (d->nb + nb > SPAN_BLOCKS) drop_flush(d, p, scale, seed);
        drop_span_t *t = &d->span[d->ns++];
        *t = (drop_span_t){.off = off, .n = m, .word = 4 * d->nb, .x = x, .y = y};
        for (int64_t b = 0; b < nb; b++)
            d->blocks[d->nb++] = ((off >> 2) + (uint64_t)b) & (UINT64_MAX >> 2);
        off += (uint64_t)m;
        n -= m;
        x += m;
        y += m;
    }
}

/* Rows [r0, r1) of x (f wide) dropped into y, row r by the counters of
 * row id row_id[r] (row_id NULL: r): each run of consecutive ids is one
 * range of counters, and the Philox blocks of many short ranges (rows of
 * a mini-batch, scattered over the graph) are drawn in one gather (serial;
 * the mask is the counters', so any split of the rows gives the same
 * bits). */
static void drop_rows(int64_t r0, int64_t r1, int64_t f, const int64_t *row_id, float p,
                      float scale, uint64_t seed, uint64_t offset, const float *x, float *y)
{
    drop_gather_t d;
    d.nb = d.ns = 0;
    for (int64_t r = r0; r < r1;) {
        int64_t e = r + 1;
        if (row_id)
            while (e < r1 && row_id[e] == row_id[e - 1] + 1) e++;
        else
            e = r1;
        const uint64_t off = offset + (uint64_t)(row_id ? row_id[r] : r) * (uint64_t)f;
        drop_add(&d, off, (e - r) * f, x + r * f, y + r * f, p, scale, seed);
        r = e;
    }
    if (d.ns) drop_flush(&d, p, scale, seed);
}

int gnn_dropout_rows(int64_t rows, int64_t f, const int64_t *row_id, float p, uint64_t seed,
                     uint64_t offset, const float *x, float *y)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_dropout_rows", rows));
    GNN_TRY(gnn__dense_check_count("gnn_dropout_rows", f));
    GNN_TRY(gnn__dense_check_drop_p("gnn_dropout_rows", p));
    GNN_CHECK(row_id || rows == 0, GNN_EINVAL, "gnn_dropout_rows: NULL row ids");
    for (int64_t r = 0; r < rows; r++)
        GNN_CHECK(row_id[r] >= 0, GNN_EINVAL, "gnn_dropout_rows: row %" PRId64 " has id %" PRId64,
                  r, row_id[r]);
    if (rows == 0 || f == 0) return 0;
    if (p == 0.0f) {
        if (y != x) memcpy(y, x, (size_t)rows * (size_t)f * sizeof *y);
        return 0;
    }
    const float scale = dropout_scale(p);
    const int64_t nchunk = (rows + 255) / 256;
#pragma omp parallel for schedule(dynamic, 1) if (rows * f >= PAR_MIN)
    for (int64_t c = 0; c < nchunk; c++)
        drop_rows(c * 256, c * 256 + 256 < rows ? c * 256 + 256 : rows, f, row_id, p, scale, seed,
                  offset, x, y);
    return 0;
fail:
    return rc;
}

/* Elements a block of gnn_bias_act_drop holds at most: the block is
 * finished (bias, activation, dropout) while it sits in the L1/L2 cache. */
#define FUSED_BLOCK 8192

int gnn_bias_act_drop(int64_t rows, int64_t cols, float *y, const float *bias, int act, float p,
                      uint64_t seed, uint64_t offset, const int64_t *row_id)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_bias_act_drop", rows, cols));
    GNN_TRY(check_act("gnn_bias_act_drop", act));
    GNN_TRY(gnn__dense_check_drop_p("gnn_bias_act_drop", p));
    if (p == 0.0f) return gnn_bias_act(rows, cols, y, bias, act);
    if (rows == 0 || cols == 0) return 0;
    const float scale = dropout_scale(p);
    const int64_t br = cols >= FUSED_BLOCK ? 1 : FUSED_BLOCK / cols;
    const int64_t nblk = (rows + br - 1) / br;
#pragma omp parallel for schedule(static) if (rows * cols >= PAR_MIN)
    for (int64_t k = 0; k < nblk; k++) {
        const int64_t r0 = k * br, r1 = r0 + br < rows ? r0 + br : rows;
        for (int64_t r = r0; r < r1; r++) bias_act_row(y + r * cols, bias, cols, act);
        drop_rows(r0, r1, cols, row_id, p, scale, seed, offset, y, y); /* then the mask */
    }
    return 0;
fail:
    return rc;
}

int gnn_relu_drop_backward(int64_t n, float p, const float *y, const float *dy, float *dx)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_relu_drop_backward", n));
    GNN_TRY(gnn__dense_check_drop_p("gnn_relu_drop_backward", p));
    const float scale = p == 0.0f ? 1.0f : dropout_scale(p);
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        const float g = dy[i]; /* loaded unconditionally: the select vectorises */
        dx[i] = (y[i] > 0.0f ? g : 0.0f) * scale; /* 0 * scale is 0 */
    }
    return 0;
fail:
    return rc;
}

int gnn_dropout_backward(int64_t n, float p, uint64_t seed, uint64_t offset, const float *dy,
                         float *dx)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_dropout_backward", n));
    GNN_TRY(gnn__dense_check_drop_p("gnn_dropout_backward", p));
    if (n == 0) return 0;
    if (p == 0.0f) {
        if (dx != dy) memcpy(dx, dy, (size_t)n * sizeof *dx);
        return 0;
    }
    dropout_apply(n, p, seed, offset, dy, dx); /* the map is linear: same mask, same scale */
    return 0;
fail:
    return rc;
}

/* ---- Softmax cross-entropy ---------------------------------------------------- */

int gnn_softmax_xent(int64_t rows, int64_t classes, const float *logits, const int64_t *labels,
                     const int64_t *idx, int64_t nidx, double *loss, float *dlogits)
{
    int rc = 0;
    double *part = NULL;
    GNN_TRY(gnn__dense_check_rows("gnn_softmax_xent", rows, classes, idx != NULL, nidx));
    for (int64_t j = 0; j < nidx; j++) {
        int64_t r = idx ? idx[j] : j;
        GNN_CHECK(r >= 0 && r < rows, GNN_EINVAL,
                  "gnn_softmax_xent: idx[%" PRId64 "] = %" PRId64 " outside [0, %" PRId64 ")",
                  j, r, rows);
        GNN_CHECK(labels[r] >= 0 && labels[r] < classes, GNN_EINVAL,
                  "gnn_softmax_xent: row %" PRId64 ": label %" PRId64 " outside [0, %" PRId64
                  ")",
                  r, labels[r], classes);
    }
    int64_t nblk = (nidx + RED_BLOCK - 1) / RED_BLOCK;
    if (nblk > 0) {
        part = gnn_malloc_array((size_t)nblk, sizeof *part);
        GNN_CHECK(part, GNN_ENOMEM, "gnn_softmax_xent: %" PRId64 " block partials", nblk);
    }
    if (dlogits && idx && rows * classes > 0)
        memset(dlogits, 0, (size_t)(rows * classes) * sizeof *dlogits);
    float inv_n = nidx > 0 ? (float)(1.0 / (double)nidx) : 0.0f;
#pragma omp parallel for schedule(static) if (nidx * classes >= PAR_MIN)
    for (int64_t bk = 0; bk < nblk; bk++) {
        int64_t j1 = (bk + 1) * RED_BLOCK < nidx ? (bk + 1) * RED_BLOCK : nidx;
        double acc = 0.0;
        for (int64_t j = bk * RED_BLOCK; j < j1; j++) {
            int64_t r = idx ? idx[j] : j;
            const float *x = logits + r * classes;
            float mx = x[0];
            for (int64_t c = 1; c < classes; c++)
                if (x[c] > mx) mx = x[c];
            double s = 0.0;
            for (int64_t c = 0; c < classes; c++) s += (double)expf(x[c] - mx);
            acc += log(s) + (double)mx - (double)x[labels[r]];
            if (dlogits) {
                float *d = dlogits + r * classes;
                float inv_s = (float)(1.0 / s);
                for (int64_t c = 0; c < classes; c++) d[c] = expf(x[c] - mx) * inv_s * inv_n;
                d[labels[r]] -= inv_n;
            }
        }
        part[bk] = acc;
    }
    double total = 0.0;
    for (int64_t bk = 0; bk < nblk; bk++) total += part[bk];
    *loss = nidx > 0 ? total / (double)nidx : 0.0;
    gnn_free(part);
    return 0;
fail:
    gnn_free(part);
    return rc;
}

/* ---- Adam --------------------------------------------------------------------- */

gnn_adam_opts_t gnn_adam_defaults(void)
{
    gnn_adam_opts_t o = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f, 0};
    return o;
}

int gnn_adam(int64_t n, float *w, const float *g, float *m, float *v, const gnn_adam_opts_t *o,
             int64_t step)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_adam(o, step));
    const gnn_adam_consts_t c = gnn_adam_consts(o, step);
    return gnn__adam_apply(n, w, g, m, v, &c);
fail:
    return rc;
}

int gnn__adam_apply(int64_t n, float *w, const float *g, float *m, float *v,
                    const gnn_adam_consts_t *cp)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_count("gnn_adam", n));
    const gnn_adam_consts_t c = *cp;
    /* One loop per decay form, without a branch, so the square roots and
     * divisions run as vectors (the same bits as scalar ones). */
    if (c.decoupled) {
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
        for (int64_t i = 0; i < n; i++) gnn_adam_elem_as(&c, 1, &w[i], g[i], &m[i], &v[i]);
    } else {
#pragma omp parallel for simd schedule(static) if (n >= PAR_MIN)
        for (int64_t i = 0; i < n; i++) gnn_adam_elem_as(&c, 0, &w[i], g[i], &m[i], &v[i]);
    }
    return 0;
fail:
    return rc;
}

/* ---- Row-sparse optimisers and strided row copies ----------------------------- */

/* The first position whose row is outside [0, rows), or n. */
static int64_t first_bad_row(int64_t n, const int64_t *idx, int64_t rows)
{
    int64_t bad = n;
#pragma omp parallel for reduction(min : bad) schedule(static) if (n >= PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        if ((idx[i] < 0 || idx[i] >= rows) && i < bad) bad = i;
    return bad;
}

int gnn_sparse_opt_step(const gnn_sparse_opt_t *o, int64_t n, int64_t d, const int64_t *rows,
                        int64_t table_rows, const float *g, int64_t ldg, float *w, float *s1,
                        float *s2, int64_t step)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_sparse_opt(o, n, d, table_rows, ldg, step));
    GNN_CHECK(n == 0 || (g && w && s1 && (o->kind != GNN_SPARSE_ADAM || s2)), GNN_EINVAL,
              "gnn_sparse_opt_step: NULL argument");
    GNN_CHECK(rows || n <= table_rows, GNN_EINVAL,
              "gnn_sparse_opt_step: %" PRId64 " rows of a table of %" PRId64, n, table_rows);
    if (rows) {
        int64_t bad = first_bad_row(n, rows, table_rows);
        GNN_CHECK(bad == n, GNN_EINVAL,
                  "gnn_sparse_opt_step: row %" PRId64 " at position %" PRId64
                  " outside [0, %" PRId64 ")",
                  bad < n ? rows[bad] : 0, bad, table_rows);
    }
    const gnn_sparse_consts_t c = gnn_sparse_consts(o, step);
    int adam = o->kind == GNN_SPARSE_ADAM;
#pragma omp parallel for schedule(static) if (n * d >= PAR_MIN)
    for (int64_t i = 0; i < n; i++) {
        int64_t r = rows ? rows[i] : i;
        float *wr = w + r * d, *a = s1 + r * d, *b = adam ? s2 + r * d : NULL;
        const float *gr = g + i * ldg;
        for (int64_t k = 0; k < d; k++)
            gnn_sparse_elem(&c, wr + k, gr[k], a + k, b ? b + k : NULL);
    }
    return 0;
fail:
    return rc;
}

int gnn_copy_rows(int64_t n, int64_t f, const float *src, int64_t lds, int64_t src_rows,
                  const int64_t *idx, float *dst, int64_t ldd)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_copy_rows(n, f, lds, src_rows, ldd));
    GNN_CHECK(idx || n <= src_rows, GNN_EINVAL,
              "gnn_copy_rows: %" PRId64 " rows from %" PRId64, n, src_rows);
    if (idx) {
        int64_t bad = first_bad_row(n, idx, src_rows);
        GNN_CHECK(bad == n, GNN_EINVAL,
                  "gnn_copy_rows: index %" PRId64 " at position %" PRId64 " outside [0, %" PRId64 ")",
                  bad < n ? idx[bad] : 0, bad, src_rows);
    }
#pragma omp parallel for schedule(static) if (n * f >= PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + i * ldd, src + (idx ? idx[i] : i) * lds, (size_t)f * sizeof(float));
    return 0;
fail:
    return rc;
}

int gnn_scatter_rows(int64_t n, int64_t f, const float *src, int64_t lds, const int64_t *idx,
                     float *dst, int64_t ldd, int64_t dst_rows)
{
    int rc = 0;
    unsigned char *seen = NULL;
    GNN_TRY(gnn__dense_check_copy_rows(n, f, lds, dst_rows, ldd));
    GNN_CHECK(idx || n == 0, GNN_EINVAL, "gnn_scatter_rows: no indices");
    int64_t bad = first_bad_row(n, idx, dst_rows);
    GNN_CHECK(bad == n, GNN_EINVAL,
              "gnn_scatter_rows: index %" PRId64 " at position %" PRId64 " outside [0, %" PRId64 ")",
              bad < n ? idx[bad] : 0, bad, dst_rows);
    seen = calloc((size_t)dst_rows / 8 + 1, 1);
    GNN_CHECK(seen, GNN_ENOMEM, "gnn_scatter_rows: %" PRId64 " rows", dst_rows);
    for (int64_t i = 0; i < n; i++) {
        int64_t r = idx[i];
        GNN_CHECK(!(seen[r >> 3] & (1u << (r & 7))), GNN_EINVAL,
                  "gnn_scatter_rows: row %" PRId64 " given twice (position %" PRId64 ")", r, i);
        seen[r >> 3] |= (unsigned char)(1u << (r & 7));
    }
#pragma omp parallel for schedule(static) if (n * f >= PAR_MIN)
    for (int64_t i = 0; i < n; i++)
        memcpy(dst + idx[i] * ldd, src + i * lds, (size_t)f * sizeof(float));
fail:
    free(seen);
    return rc;
}

/* ---- Arg-max reductions ------------------------------------------------------- */

static int64_t argmax_row(const float *x, int64_t classes)
{
    int64_t best = 0;
    for (int64_t c = 1; c < classes; c++)
        if (x[c] > x[best]) best = c;
    return best;
}

int gnn_argmax_rows(int64_t rows, int64_t classes, const float *x, int64_t *out)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_shape("gnn_argmax_rows", rows, classes));
    GNN_CHECK(classes >= 1 || rows == 0, GNN_EINVAL, "gnn_argmax_rows: no classes");
#pragma omp parallel for schedule(static) if (rows * classes >= PAR_MIN)
    for (int64_t r = 0; r < rows; r++) out[r] = argmax_row(x + r * classes, classes);
    return 0;
fail:
    return rc;
}

int gnn_count_correct(int64_t rows, int64_t classes, const float *logits, const int64_t *labels,
                      const int64_t *idx, int64_t nidx, int64_t *correct)
{
    int rc = 0;
    GNN_TRY(gnn__dense_check_rows("gnn_count_correct", rows, classes, idx != NULL, nidx));
    for (int64_t j = 0; idx && j < nidx; j++)
        GNN_CHECK(idx[j] >= 0 && idx[j] < rows, GNN_EINVAL,
                  "gnn_count_correct: idx[%" PRId64 "] = %" PRId64 " outside [0, %" PRId64 ")",
                  j, idx[j], rows);
    int64_t hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits) if (nidx * classes >= PAR_MIN)
    for (int64_t j = 0; j < nidx; j++) {
        int64_t r = idx ? idx[j] : j;
        hits += argmax_row(logits + r * classes, classes) == labels[r];
    }
    *correct = hits;
    return 0;
fail:
    return rc;
}

/* ---- Argument checks (kernels/dense_check.h) ------------------------------------ */

int gnn__dense_check_shape(const char *fn, int64_t rows, int64_t cols)
{
    if (rows < 0 || cols < 0)
        return GNN_FAIL(GNN_EINVAL, "%s: negative shape %" PRId64 " x %" PRId64, fn, rows, cols);
    if (cols > 0 && rows > INT64_MAX / cols / (int64_t)sizeof(double))
        return GNN_FAIL(GNN_EINVAL, "%s: shape %" PRId64 " x %" PRId64 " too large", fn, rows,
                        cols);
    return 0;
}

int gnn__dense_check_count(const char *fn, int64_t n)
{
    if (n < 0) return GNN_FAIL(GNN_EINVAL, "%s: negative element count %" PRId64, fn, n);
    return 0;
}

int gnn__dense_check_drop_p(const char *fn, float p)
{
    if (!(p >= 0.0f && p < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "%s: drop probability %g outside [0, 1)", fn, (double)p);
    return 0;
}

int gnn__dense_check_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb,
                          const float *c, int64_t ldc)
{
    int64_t a_cols = trans_a ? m : k, b_cols = trans_b ? k : n;
    if (m < 0 || n < 0 || k < 0)
        return GNN_FAIL(GNN_EINVAL, "gnn_gemm: negative size m=%" PRId64 " n=%" PRId64
                                    " k=%" PRId64, m, n, k);
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX ||
        ldc > INT_MAX)
        return GNN_FAIL(GNN_EINVAL,
                        "gnn_gemm: size beyond the 32-bit BLAS interface (m=%" PRId64
                        " n=%" PRId64 " k=%" PRId64 " lda=%" PRId64 " ldb=%" PRId64
                        " ldc=%" PRId64 ", limit %d)",
                        m, n, k, lda, ldb, ldc, INT_MAX);
    if (lda < (a_cols > 1 ? a_cols : 1))
        return GNN_FAIL(GNN_EINVAL, "gnn_gemm: lda=%" PRId64 " < %" PRId64 " columns of A%s",
                        lda, a_cols, trans_a ? " (transposed)" : "");
    if (ldb < (b_cols > 1 ? b_cols : 1))
        return GNN_FAIL(GNN_EINVAL, "gnn_gemm: ldb=%" PRId64 " < %" PRId64 " columns of B%s",
                        ldb, b_cols, trans_b ? " (transposed)" : "");
    if (ldc < (n > 1 ? n : 1))
        return GNN_FAIL(GNN_EINVAL, "gnn_gemm: ldc=%" PRId64 " < %" PRId64 " columns of C", ldc,
                        n);
    if (m > 0 && n > 0 && !(c && (k == 0 || (a && b))))
        return GNN_FAIL(GNN_EINVAL, "gnn_gemm: NULL matrix");
    return 0;
}

int gnn__dense_check_adam(const gnn_adam_opts_t *o, int64_t step)
{
    if (!o) return GNN_FAIL(GNN_EINVAL, "gnn_adam: no options");
    if (step < 1)
        return GNN_FAIL(GNN_EINVAL, "gnn_adam: step %" PRId64 " < 1 (steps count from 1)", step);
    if (!(o->lr >= 0.0f && isfinite(o->lr)))
        return GNN_FAIL(GNN_EINVAL, "gnn_adam: bad lr %g", (double)o->lr);
    if (!(o->beta1 >= 0.0f && o->beta1 < 1.0f && o->beta2 >= 0.0f && o->beta2 < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "gnn_adam: betas (%g, %g) outside [0, 1)", (double)o->beta1,
                        (double)o->beta2);
    if (!(o->eps > 0.0f && isfinite(o->eps)))
        return GNN_FAIL(GNN_EINVAL, "gnn_adam: bad eps %g", (double)o->eps);
    if (!(o->weight_decay >= 0.0f && isfinite(o->weight_decay)))
        return GNN_FAIL(GNN_EINVAL, "gnn_adam: bad weight decay %g", (double)o->weight_decay);
    return 0;
}

int gnn__dense_check_sparse_opt(const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                                int64_t table_rows, int64_t ldg, int64_t step)
{
    const char *fn = "gnn_sparse_opt_step";
    if (!o) return GNN_FAIL(GNN_EINVAL, "%s: no options", fn);
    if (o->kind != GNN_SPARSE_ADAM && o->kind != GNN_SPARSE_ADAGRAD)
        return GNN_FAIL(GNN_EINVAL, "%s: unknown optimiser %d", fn, (int)o->kind);
    if (step < 1)
        return GNN_FAIL(GNN_EINVAL, "%s: step %" PRId64 " < 1 (steps count from 1)", fn, step);
    if (!(o->lr >= 0.0f && isfinite(o->lr)))
        return GNN_FAIL(GNN_EINVAL, "%s: bad lr %g", fn, (double)o->lr);
    if (o->kind == GNN_SPARSE_ADAM &&
        !(o->beta1 >= 0.0f && o->beta1 < 1.0f && o->beta2 >= 0.0f && o->beta2 < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "%s: betas (%g, %g) outside [0, 1)", fn, (double)o->beta1,
                        (double)o->beta2);
    if (!(o->eps > 0.0f && isfinite(o->eps)))
        return GNN_FAIL(GNN_EINVAL, "%s: bad eps %g", fn, (double)o->eps);
    int rc = gnn__dense_check_shape(fn, n, d);
    if (rc == 0) rc = gnn__dense_check_shape(fn, table_rows, d);
    if (rc < 0) return rc;
    if (ldg < d) return GNN_FAIL(GNN_EINVAL, "%s: gradient stride %" PRId64 " < %" PRId64, fn, ldg, d);
    return 0;
}

int gnn__dense_check_copy_rows(int64_t n, int64_t f, int64_t lds, int64_t src_rows, int64_t ldd)
{
    const char *fn = "gnn_copy_rows";
    int rc = gnn__dense_check_shape(fn, n, f);
    if (rc == 0) rc = gnn__dense_check_shape(fn, src_rows, f);
    if (rc < 0) return rc;
    if (lds < f || ldd < f)
        return GNN_FAIL(GNN_EINVAL, "%s: strides %" PRId64 ", %" PRId64 " below the width %" PRId64,
                        fn, lds, ldd, f);
    return 0;
}

int gnn__dense_check_rows(const char *fn, int64_t rows, int64_t classes, int has_idx,
                          int64_t nidx)
{
    int rc = gnn__dense_check_shape(fn, rows, classes);
    if (rc < 0) return rc;
    if (nidx < 0) return GNN_FAIL(GNN_EINVAL, "%s: negative row count %" PRId64, fn, nidx);
    if (!has_idx && nidx != rows)
        return GNN_FAIL(GNN_EINVAL,
                        "%s: without idx nidx (%" PRId64 ") must equal rows (%" PRId64 ")", fn,
                        nidx, rows);
    if (classes < 1 && nidx != 0) return GNN_FAIL(GNN_EINVAL, "%s: no classes", fn);
    return 0;
}
