/*
 * Inside of the GPU SpMM: what the dispatcher (spmm_cuda.cu) and the two
 * kernel families (spmm_rowcache.cu, spmm_balanced.cu) share. Device code
 * only: included from those three .cu files.
 *
 * Every sum-like aggregator, forward or backward, is one "scaled CSR"
 * product over some CSR (the in-edge CSR forward, its transpose backward):
 *
 *   out[r] = row_scale[r] * (diag_scale[r] * in[r]
 *                            + sum_{e in row r} w_e * col_scale[c_e] * in[c_e])
 *
 * with w, col_scale and row_scale taken as 1 when NULL and the diagonal
 * term only when diag_scale is set and r < n_diag. The order of the terms
 * is that of the CPU kernels (kernels/cpu/spmm.c): the diagonal term
 * first, then the entries, then the row scale.
 *
 * Lane layout shared by the kernels. Features are row-major with row
 * stride f. A row's columns are read VEC floats at a time (float4 when f
 * and every pointer allow 16-byte accesses, float2 for 8 bytes, scalar
 * otherwise: rows start at r * f floats, so only f decides once the base
 * pointers are aligned). L = 2^lg lanes (the smallest power of two that
 * covers f / VEC, at most 32) share one row's columns; the 32 / L groups
 * of a warp take different entries of the row (rowcache) or different
 * ranges of nonzeros (balanced), so narrow rows do not leave most lanes
 * idle. With L = 32 each lane keeps NT column tiles of VEC floats in
 * registers (a pass covers 32 * VEC * NT columns) and wider rows take
 * several passes.
 */
#ifndef GNN_KERNELS_CUDA_SPMM_KERNELS_CUH
#define GNN_KERNELS_CUDA_SPMM_KERNELS_CUH

#include "kernels/cuda/check.cuh"

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

/* Warps per block of every SpMM kernel, and threads per block. */
#define GNN_SPMM_WPB 8
#define GNN_SPMM_THREADS (GNN_SPMM_WPB * 32)
#define GNN_SPMM_FULL_MASK 0xffffffffu

/* One scaled-CSR product (see above). n_cols: rows of `in`. */
typedef struct {
    const int64_t *indptr;    /* n_rows + 1 */
    const int64_t *indices;   /* nnz column ids */
    const float *weights;     /* nnz, or NULL (all 1) */
    const float *col_scale;   /* n_cols, or NULL */
    const float *row_scale;   /* n_rows, or NULL */
    const float *diag_scale;  /* n_diag, or NULL (no diagonal term) */
    int64_t n_rows, n_cols, nnz;
    int64_t n_diag;           /* rows r < n_diag get the diagonal term */
} gnn__scsr_t;

/* A grow-only device buffer kept by a graph (scratch between calls);
 * pooled: from the stream-ordered pool, allocated and freed in the order
 * of the one stream that uses it, without a wait. */
typedef struct {
    void *p;
    size_t bytes;
    int pooled;
} gnn__cuda_buf_t;

/*
 * Make b hold at least bytes. An existing smaller buffer is freed after
 * the work queued on s (which may still read it): a wait for s, or in
 * stream order when pooled. 0, GNN_ENOMEM or GNN_ECUDA; on failure b is
 * empty. Defined in spmm_cuda.cu.
 */
int gnn__cuda_buf_reserve(gnn__cuda_buf_t *b, size_t bytes, cudaStream_t s);

/* ---- Shape of a launch (host) ---------------------------------------------- */

typedef struct {
    int vec; /* floats per load: 4, 2 or 1 */
    int lg;  /* log2 of the lanes sharing a row's columns (0..5) */
    int nt;  /* column tiles per lane per pass (1, 2 or 4; 1 when lg < 5) */
} gnn__spmm_shape_t;

/*
 * The shape for width f whose feature arrays all have the alignment of
 * the bits of `addr_or` (the OR of their addresses).
 */
static inline gnn__spmm_shape_t gnn__spmm_shape(int64_t f, uintptr_t addr_or)
{
    gnn__spmm_shape_t s;
    s.vec = (f % 4 == 0 && addr_or % 16 == 0) ? 4 : (f % 2 == 0 && addr_or % 8 == 0) ? 2 : 1;
    const int64_t need = (f + s.vec - 1) / s.vec; /* lanes to cover one row */
    s.lg = 0;
    while (s.lg < 5 && ((int64_t)1 << s.lg) < need) s.lg++;
    s.nt = 1;
    if (s.lg == 5) {
        const int64_t tiles = (need + 31) / 32;
        s.nt = tiles <= 1 ? 1 : tiles == 2 ? 2 : 4;
    }
    return s;
}

/* ---- Launch wrappers (all queue on s, check the launch, never sync) ------- */

/* out = the scaled-CSR product of p on in, one warp per row (rowcache). */
int gnn__rowcache_scaled(const gnn__scsr_t *p, int64_t f, const float *in, float *out,
                         cudaStream_t s);
/*
 * Max forward over the CSR (indptr, indices) of n_rows rows: y[r][k] =
 * max over the row's entries of x[c][k], argmax[r][k] = the first entry's
 * column holding it (row order; strict >, so a NaN only wins as the
 * row's first entry, as on the CPU); an empty row gives 0 and -1.
 * Columns must fit int32.
 */
int gnn__rowcache_max_forward(const int64_t *indptr, const int64_t *indices, int64_t n_rows,
                              int64_t f, const float *x, float *y, int32_t *argmax,
                              cudaStream_t s);
/*
 * Max backward as a gather over the transpose (t_indptr, t_indices) of
 * n_rows = n_src rows: dx[u][k] = sum of dy[v][k] over the distinct v of
 * row u (a repeated v, adjacent in the sorted row, counts once) with
 * argmax[v][k] == u.
 */
int gnn__rowcache_max_backward(const int64_t *t_indptr, const int64_t *t_indices, int64_t n_rows,
                               int64_t f, const float *dy, const int32_t *argmax, float *dx,
                               cudaStream_t s);
/*
 * out = the scaled-CSR product of p on in, nonzeros and rows split evenly
 * over work units (balanced). scratch holds the rows shared by units
 * between the two kernels; it is grown as needed (the stream is waited
 * for only then). sm_count: multiprocessors of the device (0: a default).
 */
int gnn__balanced_scaled(const gnn__scsr_t *p, int64_t f, const float *in, float *out,
                         gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s);
/*
 * gnn__rowcache_max_forward's result (the same values and arg-max, bit
 * for bit) with nonzeros and rows split evenly over work units; nnz: the
 * CSR's entries. scratch and sm_count as for gnn__balanced_scaled.
 */
int gnn__balanced_max_forward(const int64_t *indptr, const int64_t *indices, int64_t n_rows,
                              int64_t nnz, int64_t f, const float *x, float *y, int32_t *argmax,
                              gnn__cuda_buf_t *scratch, int sm_count, cudaStream_t s);
/*
 * gnn__rowcache_max_backward's result (up to the order of the sums) with
 * the transpose's nonzeros split evenly over work units; n_cols: its
 * columns (n_dst), nnz: its entries. scratch and sm_count as above.
 */
int gnn__balanced_max_backward(const int64_t *t_indptr, const int64_t *t_indices, int64_t n_rows,
                               int64_t n_cols, int64_t nnz, int64_t f, const float *dy,
                               const int32_t *argmax, float *dx, gnn__cuda_buf_t *scratch,
                               int sm_count, cudaStream_t s);

/* ---- Device helpers ------------------------------------------------------- */

/* v = VEC floats at p (read-only for the kernel's lifetime). */
template <int VEC>
static __device__ __forceinline__ void gnn__ldf(const float *__restrict__ p, float (&v)[VEC])
{
    if constexpr (VEC == 4) {
        const float4 t = __ldg(reinterpret_cast<const float4 *>(p));
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    } else if constexpr (VEC == 2) {
        const float2 t = __ldg(reinterpret_cast<const float2 *>(p));
        v[0] = t.x;
        v[1] = t.y;
    } else {
        v[0] = __ldg(p);
    }
}

/* A lane's NT column tiles of one input row (src: the row's first float;
 * ok: the entry exists): VEC floats at columns c0 + (t * L + sub) * VEC,
 * zeros past f or for a missing entry. */
template <int VEC, int NT>
static __device__ __forceinline__ void gnn__ld_tiles(const float *__restrict__ src, bool ok,
                                                     int64_t c0, int L, int sub, int64_t f,
                                                     float (&v)[NT][VEC])
{
#pragma unroll
    for (int t = 0; t < NT; t++) {
        const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
        if (ok && col < f) {
            gnn__ldf<VEC>(src + col, v[t]);
        } else {
#pragma unroll
            for (int j = 0; j < VEC; j++) v[t][j] = 0.0f;
        }
    }
}

/* VEC floats at p = v. */
template <int VEC>
static __device__ __forceinline__ void gnn__stf(float *p, const float (&v)[VEC])
{
    if constexpr (VEC == 4) {
        *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
    } else if constexpr (VEC == 2) {
        *reinterpret_cast<float2 *>(p) = make_float2(v[0], v[1]);
    } else {
        p[0] = v[0];
    }
}

/* v = VEC int32 at p (read-only for the kernel's lifetime). */
template <int VEC>
static __device__ __forceinline__ void gnn__ldi(const int32_t *__restrict__ p, int32_t (&v)[VEC])
{
    if constexpr (VEC == 4) {
        const int4 t = __ldg(reinterpret_cast<const int4 *>(p));
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    } else if constexpr (VEC == 2) {
        const int2 t = __ldg(reinterpret_cast<const int2 *>(p));
        v[0] = t.x;
        v[1] = t.y;
    } else {
        v[0] = __ldg(p);
    }
}

/* VEC int32 at p = v. */
template <int VEC>
static __device__ __forceinline__ void gnn__sti(int32_t *p, const int32_t (&v)[VEC])
{
    if constexpr (VEC == 4) {
        *reinterpret_cast<int4 *>(p) = make_int4(v[0], v[1], v[2], v[3]);
    } else if constexpr (VEC == 2) {
        *reinterpret_cast<int2 *>(p) = make_int2(v[0], v[1]);
    } else {
        p[0] = v[0];
    }
}

/*
 * First item of work unit u when `items` items are split over `units`
 * units: floor(u * items / units) without overflowing (units < 2^31).
 * Non-decreasing in u; strictly increasing when units <= items.
 */
static __host__ __device__ __forceinline__ int64_t gnn__split(int64_t u, int64_t items,
                                                             int64_t units)
{
    return (items / units) * u + ((items % units) * u) / units;
}

/*
 * Merge path over the rows and nonzeros of a CSR: the path takes the
 * nonzeros in order and the end of row r right after its last nonzero
 * (before any nonzero j >= indptr[r + 1]), n_rows + nnz items in all.
 * Returns the point reached after d items: *x rows ended, *y nonzeros
 * taken, x + y = d. Then indptr[x] <= y <= indptr[x + 1] when x < n_rows.
 */
static __device__ __forceinline__ void gnn__merge_path(const int64_t *__restrict__ indptr,
                                                       int64_t n_rows, int64_t nnz, int64_t d,
                                                       int64_t *x, int64_t *y)
{
    int64_t lo = d - nnz > 0 ? d - nnz : 0;
    int64_t hi = d < n_rows ? d : n_rows;
    while (lo < hi) {
        const int64_t mid = lo + ((hi - lo) >> 1);
        /* Does the end of row mid come before nonzero d - mid - 1? */
        if (indptr[mid + 1] <= d - mid - 1)
            lo = mid + 1;
        else
            hi = mid;
    }
    *x = lo;
    *y = d - lo;
}

#endif
