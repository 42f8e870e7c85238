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
 *   12 rows of C by up to 32 columns, or 6 rows by up to 64, held in 24
 *   vector registers; per step of k, the vectors of B's row and one
 *   broadcast of each row of A.
 *
 *   C = A^T B (C is k_A x n, the sum runs over the tall side): the rows of
 *   A and B are cut into chunks fixed by the shape (not by the thread
 *   count), each chunk's partial C formed in registers (tiles of up to 48
 *   rows of C by 8 columns: per row of A, 3 vectors of A's row and 8
 *   broadcasts of B's, whose rows are first copied into panels of 8
 *   columns), and the partials added in chunk order: the result does not
 *   depend on the number of threads, nor on the tiles' shape.
 *
 * Every index into a tile's accumulators is a constant once its loops are
 * unrolled (the edge tiles store under a test, not a loop of variable
 * length): GCC then keeps them in registers; with a variable index it kept
 * a copy in memory and stored every accumulator at every step (a third
 * of the speed).
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

/* Not instrumented by AddressSanitizer, like the OpenBLAS these kernels
 * stand in for: its checks of every broadcast and vector load made the
 * sanitizer suite 40 % slower once Cora's 1433-wide weight gradients came
 * here. test_dense checks every tail of the tiles against references. */
#define AVX512 __attribute__((target("avx512f,fma"), no_sanitize_address))
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

/* Rows of C per tile: 12 for up to 2 vectors of columns, 6 for 3-4 (the
 * accumulators, the row of B and a broadcast fit the 32 registers). */
#define NN_ROWS_MAX 12

/* One tile: rows [0, rows) of C (rows <= R; the missing rows compute on
 * row 0 and are not stored) by the NV vectors of columns from j0, the
 * last one masked by ml. Every index of acc is a constant once the loops
 * are unrolled, so the accumulators stay in registers. */
INLINE AVX512 void nn_tile(const int R, const int NV, int64_t rows, int64_t k, const float *a,
                           int64_t lda, const int64_t *arow, const int64_t *next, int64_t n_next,
                           const float *b, int64_t ldb, int64_t j0, __mmask16 ml, float alpha,
                           float beta, float *c, int64_t ldc, float *c2, int64_t ldc2, int64_t n1)
{
    const float *ar[NN_ROWS_MAX];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        int64_t i = r < rows ? r : 0;
        ar[r] = a + (arow ? arow[i] : i) * lda;
    }
    __m512 acc[NN_ROWS_MAX][4];
#pragma GCC unroll 12
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++) acc[r][q] = _mm512_setzero_ps();
    const float *bp = b + j0;
    for (int64_t p = 0; p < k; p++, bp += ldb) {
        /* Rows by index are scattered over the table: the next tile's
         * rows (next, n_next of them) come into the cache a line each
         * while this tile reads the same line of its own. */
        if (n_next && (p & 15) == 0)
            for (int64_t r = 0; r < n_next; r++)
                _mm_prefetch((const char *)(a + next[r] * lda + p), _MM_HINT_T0);
        __m512 bv[4];
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++)
            bv[q] = q + 1 < NV ? _mm512_loadu_ps(bp + 16 * q) : _mm512_maskz_loadu_ps(ml, bp + 16 * q);
#pragma GCC unroll 12
        for (int r = 0; r < R; r++) {
            __m512 x = _mm512_set1_ps(ar[r][p]);
#pragma GCC unroll 4
            for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(x, bv[q], acc[r][q]);
        }
    }
    __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 12
    for (int r = 0; r < R; r++) {
        if (r >= rows) break;
#pragma GCC unroll 4
        for (int q = 0; q < NV; q++) {
            int64_t col = j0 + 16 * q; /* columns from n1 on go to c2 */
            float *cp = col < n1 ? c + r * ldc + col : c2 + r * ldc2 + (col - n1);
            __mmask16 mq = q + 1 < NV ? (__mmask16)0xffff : ml;
            __m512 v = _mm512_mul_ps(va, acc[r][q]);
            if (beta != 0.0f) v = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mq, cp), v);
            _mm512_mask_storeu_ps(cp, mq, v);
        }
    }
}

/* One tile of R rows by NV vectors (the variables of nn's loop). */
#define NN_CASE(R, NV)                                                                             \
    nn_tile(R, NV, rows, k, at, lda, arw, nxt, n_nxt, b, ldb, j0, ml, alpha, beta, ct, ldc, c2t,   \
            ldc2, n1)

/* C = alpha A B + beta C; columns from n1 on (a multiple of 16) go to c2
 * instead (n1 = n: all to c). */
AVX512 static void nn2(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                       const int64_t *arow, const float *b, int64_t ldb, float beta, float *c,
                       int64_t ldc, float *c2, int64_t ldc2, int64_t n1)
{
    /* The tile height depends on n only: it changes which rows share a
     * tile, never the sum that forms a row. */
    const int64_t step = n <= 32 ? 12 : 6;
    int64_t tiles = (m + step - 1) / step;
#pragma omp parallel for schedule(static) if (m * n * k >= PAR_MIN_FLOPS)
    for (int64_t t = 0; t < tiles; t++) {
        int64_t i0 = t * step, rows = m - i0 < step ? m - i0 : step;
        const float *at = arow ? a : a + i0 * lda;
        const int64_t *arw = arow ? arow + i0 : NULL;
        /* The next tile's rows by index, read ahead (once, by the first
         * block of columns). */
        const int64_t *nxt = arow ? arow + i0 + rows : NULL;
        int64_t n_nxt = !arow ? 0 : m - i0 - rows < step ? m - i0 - rows : step;
        float *ct = c + i0 * ldc, *c2t = c2 ? c2 + i0 * ldc2 : NULL;
        for (int64_t j0 = 0; j0 < n; j0 += 64) {
            int64_t w = n - j0 < 64 ? n - j0 : 64;
            int nv = (int)((w + 15) / 16);
            int64_t last = w - 16 * (nv - 1);
            __mmask16 ml = last >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << last) - 1u);
            if (step == 12) {
                if (nv == 1)
                    NN_CASE(12, 1);
                else
                    NN_CASE(12, 2);
            } else if (nv == 1) {
                NN_CASE(6, 1);
            } else if (nv == 2) {
                NN_CASE(6, 2);
            } else if (nv == 3) {
                NN_CASE(6, 3);
            } else {
                NN_CASE(6, 4);
            }
            n_nxt = 0;
        }
    }
}
#undef NN_CASE

AVX512 static void nn(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const int64_t *arow, const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc)
{
    nn2(m, n, k, alpha, a, lda, arow, b, ldb, beta, c, ldc, NULL, 0, n);
}

/* ---- C = alpha A^T B + beta C ---------------------------------------------------- */

/* Rows of A and B per chunk: a sum of k rows is cut into at least
 * TN_CHUNKS_LOW chunks (so that threads share short sums) of at least
 * TN_CHUNK_LOW and, where k allows, TN_CHUNK_MIN rows each; chunks are
 * longer when the partials (chunks x m x n floats) would pass
 * TN_PART_BYTES. All fixed by the shape. */
#define TN_CHUNK_MIN 1024
#define TN_CHUNK_LOW 256
#define TN_CHUNKS_LOW 8
#define TN_PART_BYTES ((int64_t)4 << 20)
/* Rows per pass over the tiles inside a chunk: at most TN_SUB_ROWS (a
 * block of 48 of their columns stays in L1 while every tile over it reads
 * it), fewer when their m columns pass TN_SUB_BYTES (they stay in L2 for
 * the next block of columns). */
#define TN_SUB_ROWS 128
#define TN_SUB_BYTES ((int64_t)512 << 10)
/* A tile: TN_COLS columns of B (of C) by up to TN_VECS vectors of A's
 * columns (of C's rows), the last one masked. */
#define TN_COLS 8
#define TN_VECS 3
#define TN_WIDTH (16 * TN_VECS)
/* Rows by index read ahead of the first tile over them. */
#define TN_AHEAD 16

/* part (n x m, C transposed) += the product of rows [0, rows) of A (its
 * columns [p0, p0 + 16 PV), masked by mk unless FULL) and of a panel of
 * TN_COLS columns of B (bp: row i at bp + i TN_COLS, zero past B's last
 * column), for columns [j0, j0 + jn) of C. Per row: the PV vectors of A's
 * row, then each of the TN_COLS broadcasts of the panel's row used PV
 * times (at most 24 accumulators, 3 vectors of A and 1 broadcast: within
 * the 32 registers). Every element of part is one sum over the rows in
 * order, whatever the tile's shape. */
INLINE AVX512 void tn_tile(const int PV, const int FULL, int64_t rows, const float *a,
                           int64_t lda, const int64_t *arow, int64_t ahead, const float *bp,
                           int64_t p0, const __mmask16 *mk, int64_t j0, int64_t jn, float *part,
                           int64_t m)
{
    __m512 acc[TN_COLS][TN_VECS];
    float *pt[TN_COLS];
#pragma GCC unroll 8
    for (int t = 0; t < TN_COLS; t++) pt[t] = part + (j0 + (t < jn ? t : 0)) * m + p0;
#pragma GCC unroll 8
    for (int t = 0; t < TN_COLS; t++)
#pragma GCC unroll 3
        for (int q = 0; q < PV; q++)
            acc[t][q] = FULL ? _mm512_loadu_ps(pt[t] + 16 * q)
                             : _mm512_maskz_loadu_ps(mk[q], pt[t] + 16 * q);
    for (int64_t i = 0; i < rows; i++, bp += TN_COLS) {
        const float *ap = a + (arow ? arow[i] : i) * lda + p0;
        /* The first tile over rows by index reads row i + TN_AHEAD's m
         * columns into the cache (ahead: rows of arow from i = 0 on). */
        if (i + TN_AHEAD < ahead) {
            const char *nx = (const char *)(a + arow[i + TN_AHEAD] * lda);
            for (int64_t q = 0; q < m * (int64_t)sizeof(float); q += 64)
                _mm_prefetch(nx + q, _MM_HINT_T0);
        }
        __m512 x[TN_VECS];
#pragma GCC unroll 3
        for (int q = 0; q < PV; q++)
            x[q] = FULL ? _mm512_loadu_ps(ap + 16 * q) : _mm512_maskz_loadu_ps(mk[q], ap + 16 * q);
#pragma GCC unroll 8
        for (int t = 0; t < TN_COLS; t++) {
            __m512 g = _mm512_set1_ps(bp[t]);
#pragma GCC unroll 3
            for (int q = 0; q < PV; q++) acc[t][q] = _mm512_fmadd_ps(g, x[q], acc[t][q]);
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < TN_COLS; t++) {
        if (t >= jn) break;
#pragma GCC unroll 3
        for (int q = 0; q < PV; q++) {
            if (FULL)
                _mm512_storeu_ps(pt[t] + 16 * q, acc[t][q]);
            else
                _mm512_mask_storeu_ps(pt[t] + 16 * q, mk[q], acc[t][q]);
        }
    }
}

/* Rows [0, rows) of B's n columns (row stride ldb) as panels of TN_COLS
 * columns, zero past the last: panel t's row i at pk + (t rows + i)
 * TN_COLS. */
static void tn_pack(int64_t rows, int64_t n, const float *b, int64_t ldb, float *pk)
{
    for (int64_t j0 = 0; j0 < n; j0 += TN_COLS, pk += rows * TN_COLS) {
        int64_t jn = n - j0 < TN_COLS ? n - j0 : TN_COLS;
        for (int64_t i = 0; i < rows; i++) {
            const float *br = b + i * ldb + j0;
            float *o = pk + i * TN_COLS;
            for (int64_t t = 0; t < TN_COLS; t++) o[t] = t < jn ? br[t] : 0.0f;
        }
    }
}

/* The tiles over B's n columns (packed by tn_pack in pk) for one block of
 * A's columns (pv vectors from p0, the last masked by mk; full: none, the
 * block a whole number of vectors). */
INLINE AVX512 void tn_tiles(int64_t rows, const float *a, int64_t lda, const int64_t *arow,
                            int64_t ahead, const float *pk, int64_t n, int64_t p0, int pv,
                            int full, const __mmask16 *mk, float *part, int64_t m)
{
#define TN_CASE(PV, FULL) tn_tile(PV, FULL, rows, a, lda, arow, ahead, bp, p0, mk, j0, jn, part, m)
    const float *bp = pk;
    for (int64_t j0 = 0; j0 < n; j0 += TN_COLS, bp += rows * TN_COLS) {
        int64_t jn = n - j0 < TN_COLS ? n - j0 : TN_COLS;
        if (pv == 1)
            full ? TN_CASE(1, 1) : TN_CASE(1, 0);
        else if (pv == 2)
            full ? TN_CASE(2, 1) : TN_CASE(2, 0);
        else
            full ? TN_CASE(3, 1) : TN_CASE(3, 0);
        ahead = 0;
    }
#undef TN_CASE
}

/* Rows of A per pass over the tiles (TN_SUB_ROWS). */
static int64_t tn_sub_rows(int64_t m)
{
    int64_t sub = TN_SUB_BYTES / (m * (int64_t)sizeof(float));
    return sub < 16 ? 16 : sub > TN_SUB_ROWS ? TN_SUB_ROWS : sub;
}

/* Floats of the packed panels of one block of rows (tn_chunk's pk). */
static int64_t tn_pack_floats(int64_t m, int64_t n, int64_t n2)
{
    int64_t sub = tn_sub_rows(m);
    int64_t cols = (n + TN_COLS - 1) / TN_COLS * TN_COLS + (n2 + TN_COLS - 1) / TN_COLS * TN_COLS;
    return sub * cols;
}

/* One chunk of rows of A and B into part (zeroed by the caller): columns
 * [0, n) from b over all rows, then columns [n, n + n2) from b2 over the
 * first rows2 rows (n2 = 0: none); pk: tn_pack_floats(m, n, n2) floats. */
AVX512 static void tn_chunk(int64_t rows, int64_t m, int64_t n, const float *a, int64_t lda,
                            const int64_t *arow, const float *b, int64_t ldb, int64_t n2,
                            const float *b2, int64_t ldb2, int64_t rows2, float *part, float *pk)
{
    int64_t sub = tn_sub_rows(m);
    for (int64_t s0 = 0; s0 < rows; s0 += sub) {
        int64_t sr = rows - s0 < sub ? rows - s0 : sub;
        int64_t sr2 = rows2 - s0 < sr ? rows2 - s0 : sr; /* rows with b2 */
        const float *as = arow ? a : a + s0 * lda;
        const int64_t *ars = arow ? arow + s0 : NULL;
        float *pk2 = pk + sr * ((n + TN_COLS - 1) / TN_COLS * TN_COLS);
        tn_pack(sr, n, b + s0 * ldb, ldb, pk);
        if (sr2 > 0 && n2 > 0) tn_pack(sr2, n2, b2 + s0 * ldb2, ldb2, pk2);
        for (int64_t p0 = 0; p0 < m; p0 += TN_WIDTH) {
            int64_t w = m - p0 < TN_WIDTH ? m - p0 : TN_WIDTH;
            int pv = (int)((w + 15) / 16);
            __mmask16 mk[TN_VECS];
            lane_masks(w, TN_VECS, mk);
            /* The first tile over this block's rows by index reads them
             * ahead, up to the next block's first. */
            int64_t ahead = ars && p0 == 0 ? rows - s0 : 0;
            tn_tiles(sr, as, lda, ars, ahead, pk, n, p0, pv, w % 16 == 0, mk, part, m);
            if (sr2 > 0 && n2 > 0)
                tn_tiles(sr2, as, lda, ars, 0, pk2, n2, p0, pv, w % 16 == 0, mk, part + n * m, m);
        }
    }
}

/* C (m x n) = alpha A^T B + beta C, A k x m, B k x n; and, when n2 > 0, C2
 * (m x n2) = alpha A[:k2]^T B2 + beta C2 over the first k2 <= k rows in the
 * same pass over A. */
AVX512 static int tn2(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                      const int64_t *arow, const float *b, int64_t ldb, float beta, float *c,
                      int64_t ldc, int64_t n2, int64_t k2, const float *b2, int64_t ldb2,
                      float *c2, int64_t ldc2)
{
    int64_t nt = n + n2;
    int64_t per = m * nt; /* floats of one partial */
    int64_t want = k / TN_CHUNKS_LOW;
    want = want < TN_CHUNK_LOW ? TN_CHUNK_LOW : want > TN_CHUNK_MIN ? TN_CHUNK_MIN : want;
    int64_t chunks = (k + want - 1) / want;
    int64_t most = TN_PART_BYTES / (per * (int64_t)sizeof(float));
    if (chunks > most) chunks = most < 1 ? 1 : most;
    int64_t rows = (k + chunks - 1) / chunks;
    chunks = (k + rows - 1) / rows;
    int par = m * nt * k >= PAR_MIN_FLOPS;
    int nth = par && chunks > 1 ? omp_get_max_threads() : 1;
    int64_t pkf = tn_pack_floats(m, n, n2);
    float *part = gnn_calloc((size_t)(chunks * per), sizeof *part);
    float *pks = gnn_malloc_array((size_t)(nth * pkf), sizeof *pks);
    if (!part || !pks) {
        gnn_free(part);
        gnn_free(pks);
        return GNN_FAIL(GNN_ENOMEM, "GEMM: %" PRId64 " partial products", chunks);
    }
#pragma omp parallel for schedule(dynamic, 1) num_threads(nth) if (nth > 1)
    for (int64_t ch = 0; ch < chunks; ch++) {
        int64_t r0 = ch * rows, nr = k - r0 < rows ? k - r0 : rows;
        int64_t nr2 = k2 - r0 < nr ? k2 - r0 : nr;
        tn_chunk(nr, m, n, arow ? a : a + r0 * lda, lda, arow ? arow + r0 : NULL, b + r0 * ldb,
                 ldb, n2, n2 && nr2 > 0 ? b2 + r0 * ldb2 : NULL, ldb2, nr2 > 0 ? nr2 : 0,
                 part + ch * per, pks + omp_get_thread_num() * pkf);
    }
    gnn_free(pks);
    /* The partials in chunk order, a column of C per task. */
#pragma omp parallel for schedule(static) if (par && chunks * per >= PAR_MIN_FLOPS / 16)
    for (int64_t j = 0; j < nt; j++) {
        float *acc = part + j * m;
        for (int64_t ch = 1; ch < chunks; ch++) {
            const float *pc = part + ch * per + j * m;
            for (int64_t p = 0; p < m; p++) acc[p] += pc[p];
        }
        float *cc = j < n ? c + j : c2 + (j - n);
        int64_t ld = j < n ? ldc : ldc2;
        for (int64_t p = 0; p < m; p++) {
            float v = alpha * acc[p];
            cc[p * ld] = beta == 0.0f ? v : v + beta * cc[p * ld];
        }
    }
    gnn_free(part);
    return 1;
}

AVX512 static int tn(int64_t m, int64_t n, int64_t k, float alpha, const float *a, int64_t lda,
                     const int64_t *arow, const float *b, int64_t ldb, float beta, float *c,
                     int64_t ldc)
{
    return tn2(m, n, k, alpha, a, lda, arow, b, ldb, beta, c, ldc, 0, 0, NULL, 0, NULL, 0);
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

int gnn__gemm_skinny_rows(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, const int64_t *arow,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    if (!have_avx512() || (trans_a && trans_b)) return 0;
    /* The shapes where these kernels beat OpenBLAS (bench/gemm on 2 cores:
     * 1.05-2.6x its SkylakeX kernels for A^T B with n <= 64 up to m = 1433,
     * 3-7x the generic ones it falls back to where it does not know the
     * CPU; wider outputs or longer sums of A B go to BLAS, whose blocking
     * wins there). */
    if (trans_a) { /* the sum over the tall side: k rows of A and B */
        if (n > 64 || k < TALL_MIN) return 0;
        return tn(m, n, k, alpha, a, lda, arow, b, ldb, beta, c, ldc);
    }
    /* Taken for any number of rows: a row's result is the same in a
     * product of 10 rows or of 10^6, so P ranks, each with its share of
     * the rows, compute what one process computes. */
    if (n > 128 || (n > 64 && k > 64)) return 0;
    if (!trans_b) {
        nn(m, n, k, alpha, a, lda, arow, b, ldb, beta, c, ldc);
        return 1;
    }
    /* A B^T: B (n x k) is the small one; transposed once. */
    if (n * k > ((int64_t)1 << 20)) return 0;
    float *bt = gnn_malloc_array((size_t)(k * n), sizeof *bt);
    if (!bt) return GNN_FAIL(GNN_ENOMEM, "GEMM: %" PRId64 " x %" PRId64 " transposed", k, n);
    for (int64_t j = 0; j < n; j++)
        for (int64_t p = 0; p < k; p++) bt[p * n + j] = b[j * ldb + p];
    nn(m, n, k, alpha, a, lda, arow, bt, n, beta, c, ldc);
    gnn_free(bt);
    return 1;
}

int gnn__gemm_skinny(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc)
{
    return gnn__gemm_skinny_rows(trans_a, trans_b, m, n, k, alpha, a, lda, NULL, b, ldb, beta, c,
                                 ldc);
}

int gnn__gemm_skinny_nn_pair(int64_t m, int64_t m2, int64_t k, const float *a, int64_t lda,
                             const int64_t *arow, int64_t n1, const float *b1, float *c1,
                             int64_t n2, const float *b2, float *c2)
{
    int64_t n = n1 + n2;
    if (!have_avx512() || n1 % 16 || n > 128 || (n > 64 && k > 64)) return 0;
    /* [B1 | B2], k x n: one pass over the first m2 rows of A for both. */
    float *bb = gnn_malloc_array((size_t)(k * n), sizeof *bb);
    if (!bb) return GNN_FAIL(GNN_ENOMEM, "GEMM: %" PRId64 " x %" PRId64 " weights", k, n);
    for (int64_t p = 0; p < k; p++) {
        memcpy(bb + p * n, b1 + p * n1, (size_t)n1 * sizeof *bb);
        memcpy(bb + p * n + n1, b2 + p * n2, (size_t)n2 * sizeof *bb);
    }
    nn2(m2, n, k, 1.0f, a, lda, arow, bb, n, 0.0f, c1, n1, c2, n2, n1);
    gnn_free(bb);
    if (m > m2)
        nn(m - m2, n1, k, 1.0f, arow ? a : a + m2 * lda, lda, arow ? arow + m2 : NULL, b1, n1,
           0.0f, c1 + m2 * n1, n1);
    return 1;
}

int gnn__gemm_skinny_tn_pair(int64_t m, int64_t k, int64_t k2, const float *a, int64_t lda,
                             const int64_t *arow, int64_t n1, const float *b1, float *c1,
                             int64_t n2, const float *b2, float *c2)
{
    if (!have_avx512() || n1 + n2 > 64 || k < TALL_MIN) return 0;
    return tn2(m, n1, k, 1.0f, a, lda, arow, b1, n1, 0.0f, c1, n1, n2, k2, b2, n2, c2, n2);
}
