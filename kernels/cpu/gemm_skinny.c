/*
 * Products with a narrow side (kernels/cpu/gemm_skinny.h), AVX-512.
 *
 * A GNN layer multiplies a tall matrix (a row per node: 10^5 - 10^7 rows
 * of 10^2 - 10^3 features) by a weight a few dozen columns wide, and forms
 * the weight's gradient as the tall matrix transposed times a tall narrow
 * one. OpenBLAS packs the tall operand into its own layout before each
 * such product: a copy as large as the input, for a product that does
 * only n multiply-adds per element read (a third of the products' time in
 * a profile of edge mini-batches on 2 cores). The kernels here read the
 * tall operand once, where it lies:
 *
 *   C = A B (and A B^T, B transposed first: it is the small one): tiles of
 *   6 rows of C by up to 64 columns held in 24 vector registers; per step
 *   of k, the 4 vectors of B's row and one broadcast of each of the 6 rows
 *   of A.
 *
 *   C = A^T B (C is k_A x n, the sum runs over the tall side): the rows of
 *   A and B are cut into chunks fixed by the shape (not by the thread
 *   count), each chunk's partial C formed in registers (tiles of up to 128
 *   rows of C by 3 columns: per row of A, 8 vectors of A's row and 3
 *   broadcasts of B's), and the partials added in chunk order: the result
 *   does not depend on the number of threads.
 *
 * Everything is checked at run time: without AVX-512 gnn_gemm goes to
 * OpenBLAS as before.
 */
#include "kernels/cpu/gemm_skinny.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <immintrin.h>
#include <inttypes.h>
#include <omp.h>
#include <string.h>

#define AVX512 __attribute__((target("avx512f,fma")))
#define INLINE static inline __attribute__((always_inline))

/* Multiply-adds below which a product runs on one thread. */
#define PAR_MIN_FLOPS ((int64_t)1 << 21)

/* Lanes of the last of nv vectors covering w columns (from column 0). */
AVX512 static void lane_masks(int64_t w, int nv, __mmask16 *mk)
{
    for (int q = 0; q < nv; q++) {
        int64_t left = w - 16 * (int64_t)q;
        mk[q] = left >= 16 ? (__mmask16)0xffff
                : left <= 0 ? (__mmask16)0
                            : (__mmask16)((1u << left) - 1u);
    }
}

/* ---- C = alpha A B + beta C ------------------------------------------------------ */

#define NN_ROWS 6

/* One tile: rows [0, rows) of C (rows <= 6; the missing rows compute on
 * row 0 and are not stored) by the NV vectors of columns from j0. */
INLINE AVX512 void nn_tile(const int NV, int64_t rows, int64_t k, const float *a, int64_t lda,
                           const float *b, int64_t ldb, int64_t j0, const __mmask16 *mk,
                           float alpha, float beta, float *c, int64_t ldc)
{
    const float *ar[NN_ROWS];
    for (int r = 0; r < NN_ROWS; r++) ar[r] = a + (r < rows ? r : 0) * lda;
    __m512 acc[NN_ROWS][4];
#pragma GCC unroll 6
    for (int r = 0; r < NN_ROWS; r++)
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
    const float *bp = b + j0;
    for (int64_t p = 0; p < k; p++, bp += ldb) {
        __m512 bv[4];
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++) bv[q] = _mm512_maskz_loadu_ps(mk[q], bp + 16 * q);
#pragma GCC unroll 6
        for (int r = 0; r < NN_ROWS; r++) {
            __m512 x = _mm512_set1_ps(ar[r][p]);
#pragma GCC unroll 4
            for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(x, bv[q], acc[r][q]);
        }
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
    for (int64_t r = 0; r < rows; r++)
        for (int q = 0; q < NV; q++) {
            float *cp = c + r * ldc + j0 + 16 * q;
            __m512 v = _mm512_mul_ps(va, acc[r][q]);
            if (beta != 0.0f) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk[q], cp), v);
            _mm512_mask_storeu_ps(cp, mk[q], v);
        }
}

AVX512 static void nn(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    int64_t tiles = (m + NN_ROWS - 1) / NN_ROWS;
#pragma omp parallel for schedule(static) if (m * n * k >= PAR_MIN_FLOPS)
    for (int64_t t = 0; t < tiles; t++) {
        int64_t i0 = t * NN_ROWS, rows = m - i0 < NN_ROWS ? m - i0 : NN_ROWS;
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
            int64_t w = n - j0 < 64 ? n - j0 : 64;
            int nv = (int)((w + 15) / 16);
            __mmask16 mk[4];
            lane_masks(w, 4, mk);
            const float *at = a + i0 * lda;
            float *ct = c + i0 * ldc;
            switch (nv) {
            case 1: nn_tile(1, rows, k, at, lda, b, ldb, j0, mk, alpha, beta, ct, ldc); break;
            case 2: nn_tile(2, rows, k, at, lda, b, ldb, j0, mk, alpha, beta, ct, ldc); break;
            case 3: nn_tile(3, rows, k, at, lda, b, ldb, j0, mk, alpha, beta, ct, ldc); break;
            default: nn_tile(4, rows, k, at, lda, b, ldb, j0, mk, alpha, beta, ct, ldc); break;
            }
        }
    }
}

/* ---- C = alpha A^T B + beta C ---------------------------------------------------- */

/* Rows of A and B per chunk: at least this many, more when the partials
 * (chunks x m x n floats) would pass TN_PART_BYTES. */
#define TN_CHUNK_MIN 1024
#define TN_PART_BYTES ((int64_t)4 << 20)
/* Rows per pass over the tiles inside a chunk: their m columns of A take
 * about TN_SUB_BYTES (they stay in L2 while every tile reads them). */
#define TN_SUB_BYTES ((int64_t)192 << 10)
#define TN_COLS 3

/* part (n x m, C transposed) += the product of rows [0, rows) of A (its
 * columns [p0, p0 + 16 PV)) and of B, for columns [j0, j0 + jn) of C. */
INLINE AVX512 void tn_tile(const int PV, int64_t rows, const float *a, int64_t lda,
                           const float *b, int64_t ldb, int64_t p0, const __mmask16 *mk,
                           int64_t j0, int64_t jn, float *part, int64_t m)
{
    __m512 acc[TN_COLS][8];
    int64_t jj[TN_COLS];
    for (int t = 0; t < TN_COLS; t++) jj[t] = j0 + (t < jn ? t : 0);
#pragma GCC unroll 3
    for (int t = 0; t < TN_COLS; t++)
#pragma GCC unroll 8
        for (int q = 0; q < PV; q++)
            acc[t][q] = _mm512_maskz_loadu_ps(mk[q], part + jj[t] * m + p0 + 16 * q);
    const float *ap = a + p0;
    for (int64_t i = 0; i < rows; i++, ap += lda) {
        __m512 x[8];
#pragma GCC unroll 8
        for (int q = 0; q < PV; q++) x[q] = _mm512_maskz_loadu_ps(mk[q], ap + 16 * q);
#pragma GCC unroll 3
        for (int t = 0; t < TN_COLS; t++) {
            __m512 g = _mm512_set1_ps(b[i * ldb + jj[t]]);
#pragma GCC unroll 8
            for (int q = 0; q < PV; q++) acc[t][q] = _mm512_fmadd_ps(g, x[q], acc[t][q]);
        }
    }
    for (int64_t t = 0; t < jn; t++)
        for (int q = 0; q < PV; q++)
            _mm512_mask_storeu_ps(part + jj[t] * m + p0 + 16 * q, mk[q], acc[t][q]);
}

/* One chunk of rows of A and B into part (zeroed by the caller). */
AVX512 static void tn_chunk(int64_t rows, int64_t m, int64_t n, const float *a, int64_t lda,
                            const float *b, int64_t ldb, float *part)
{
    int64_t sub = TN_SUB_BYTES / (m * (int64_t)sizeof(float));
    sub = sub < 16 ? 16 : sub > 256 ? 256 : sub;
    for (int64_t s0 = 0; s0 < rows; s0 += sub) {
        int64_t sr = rows - s0 < sub ? rows - s0 : sub;
        const float *as = a + s0 * lda, *bs = b + s0 * ldb;
        for (int64_t p0 = 0; p0 < m; p0 += 128) {
            int64_t w = m - p0 < 128 ? m - p0 : 128;
            int pv = (int)((w + 15) / 16);
            __mmask16 mk[8];
            lane_masks(w, 8, mk);
            for (int64_t j0 = 0; j0 < n; j0 += TN_COLS) {
                int64_t jn = n - j0 < TN_COLS ? n - j0 : TN_COLS;
                if (pv <= 2)
                    tn_tile(2, sr, as, lda, bs, ldb, p0, mk, j0, jn, part, m);
                else if (pv <= 4)
                    tn_tile(4, sr, as, lda, bs, ldb, p0, mk, j0, jn, part, m);
                else
                    tn_tile(8, sr, as, lda, bs, ldb, p0, mk, j0, jn, part, m);
            }
        }
    }
}

/* C (m x n) = alpha A^T B + beta C, A k x m, B k x n. */
AVX512 static int tn(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    int64_t per = m * n; /* floats of one partial */
    int64_t chunks = (k + TN_CHUNK_MIN - 1) / TN_CHUNK_MIN;
    int64_t most = TN_PART_BYTES / (per * (int64_t)sizeof(float));
    if (chunks > most) chunks = most < 1 ? 1 : most;
    int64_t rows = (k + chunks - 1) / chunks;
    chunks = (k + rows - 1) / rows;
    float *part = gnn_calloc((size_t)(chunks * per), sizeof *part);
    if (!part) return GNN_FAIL(GNN_ENOMEM, "GEMM: %" PRId64 " partial products", chunks);
    int par = m * n * k >= PAR_MIN_FLOPS;
#pragma omp parallel for schedule(dynamic, 1) if (par && chunks > 1)
    for (int64_t ch = 0; ch < chunks; ch++) {
        int64_t r0 = ch * rows, nr = k - r0 < rows ? k - r0 : rows;
        tn_chunk(nr, m, n, a + r0 * lda, lda, b + r0 * ldb, ldb, part + ch * per);
    }
    /* The partials in chunk order, a column of C per task. */
#pragma omp parallel for schedule(static) if (par && chunks * per >= PAR_MIN_FLOPS / 16)
    for (int64_t j = 0; j < n; j++) {
        float *acc = part + j * m;
        for (int64_t ch = 1; ch < chunks; ch++) {
            const float *pc = part + ch * per + j * m;
            for (int64_t p = 0; p < m; p++) acc[p] += pc[p];
        }
        for (int64_t p = 0; p < m; p++) {
            float v = alpha * acc[p];
            c[p * ldc + j] = beta == 0.0f ? v : v + beta * c[p * ldc + j];
        }
    }
    gnn_free(part);
    return 1;
}

/* ---- Dispatch -------------------------------------------------------------------- */

static int have_avx512(void)
{
    static int v = -1;
    if (v < 0) /* the same value from any thread */
        v = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma") ? 1 : 0;
    return v;
}

/* Rows of the sum below which BLAS is left A^T B. */
#define TALL_MIN 64

int gnn__gemm_skinny(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc)
{
    if (!have_avx512() || (trans_a && trans_b)) return 0;
    /* The shapes where these kernels beat OpenBLAS (bench/gemm: on 2 cores
     * with 10^6 rows, 1.1-3x; wider outputs or longer sums go to BLAS,
     * whose blocking wins there). */
    if (trans_a) { /* the sum over the tall side: k rows of A and B */
        if (n > 32 || m > 128 || k < TALL_MIN) return 0;
        return tn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    }
    /* Taken for any number of rows: a row's result is the same in a
     * product of 10 rows or of 10^6, so P ranks, each with its share of
     * the rows, compute what one process computes. */
    if (n > 128 || (n > 64 && k > 64)) return 0;
    if (!trans_b) {
        nn(m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return 1;
    }
    /* A B^T: B (n x k) is the small one; transposed once. */
    if (n * k > ((int64_t)1 << 20)) return 0;
    float *bt = gnn_malloc_array((size_t)(k * n), sizeof *bt);
    if (!bt) return GNN_FAIL(GNN_ENOMEM, "GEMM: %" PRId64 " x %" PRId64 " transposed", k, n);
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++) bt[p * n + j] = b[j * ldb + p];
    nn(m, n, k, alpha, a, lda, bt, n, beta, c, ldc);
    gnn_free(bt);
    return 1;
}
