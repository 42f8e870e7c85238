/*
 * Rowcache SpMM: one warp per output row (kernels/cuda/spmm_kernels.cuh
 * gives the operations and the lane layout).
 *
 * A warp walks its row's entries in chunks of 32: each lane loads one
 * entry's column id (and, for the sum-like kernel, its scale w_e *
 * col_scale[c], computed once per entry) into the warp's slice of shared
 * memory with one coalesced load, then every lane reuses the chunk for all
 * of its output columns. Feature rows are read VEC floats per lane
 * (float4 / float2 / scalar, a template argument). When the row is narrow
 * (L < 32 lanes cover its columns) the 32 / L lane groups take every
 * (32/L)-th entry of a chunk and are added together at the end by a fixed
 * butterfly of shuffles; wide rows keep NT column tiles per lane in
 * registers and loop over passes of 32 * VEC * NT columns. Several input
 * rows are loaded before they are added (U entries in flight per lane) to
 * hide the gather latency.
 *
 * No atomics and a fixed order of additions: the results are the same
 * bits on every run. A row is summed by one warp, so a hub row costs its
 * warp alone its whole length (the balanced family splits such rows).
 *
 * Max: the forward keeps, per column, the running maximum, its column id
 * and the entry position; a later entry replaces it only when strictly
 * greater, and a NaN counts only as a row's first entry, which is exactly
 * the CPU's sequential scan; lane groups combine by (value, position) so
 * the first entry still wins ties. The backward gathers over the
 * transpose: a repeated edge (adjacent, the transpose's rows being sorted)
 * is marked when staged and skipped, since the forward routed dy[v][k] to
 * u once.
 */
#include "kernels/cuda/spmm_kernels.cuh"

/* ---- Sum-like: the scaled CSR product ------------------------------------ */

/*
 * out = scaled-CSR product of p on in; a warp per row (grid-stride),
 * lg: log2 of the lanes per row group, NT column tiles per lane.
 */
template <int VEC, int NT>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_rowcache_scaled(const gnn__scsr_t p, const int64_t f, const int lg,
                      const float *__restrict__ in, float *__restrict__ out)
{
    constexpr int U = NT >= 4 ? 1 : 4 / NT; /* entries in flight per lane */
    __shared__ int64_t sh_col[GNN_SPMM_WPB][32];
    __shared__ float sh_scale[GNN_SPMM_WPB][32];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int64_t span = (int64_t)L * VEC * NT;
    int64_t *const scol = sh_col[wib];
    float *const sscale = sh_scale[wib];
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;

    for (int64_t r = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; r < p.n_rows; r += nwarps) {
        const int64_t beg = p.indptr[r], end = p.indptr[r + 1];
        const float rs = p.row_scale ? p.row_scale[r] : 1.0f;
        const bool diag = p.diag_scale && r < p.n_diag;
        const float ds = diag ? p.diag_scale[r] : 0.0f;
        for (int64_t c0 = 0; c0 < f; c0 += span) {
            float acc[NT][VEC];
#pragma unroll
            for (int t = 0; t < NT; t++) {
                const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                float v[VEC];
                if (diag && grp == 0 && col < f) {
                    gnn__ldf<VEC>(in + r * f + col, v);
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[t][j] = ds * v[j];
                } else {
#pragma unroll
                    for (int j = 0; j < VEC; j++) acc[t][j] = 0.0f;
                }
            }
            for (int64_t e0 = beg; e0 < end; e0 += 32) {
                const int n = end - e0 < 32 ? (int)(end - e0) : 32;
                if (lane < n) {
                    const int64_t c = p.indices[e0 + lane];
                    float s = p.weights ? p.weights[e0 + lane] : 1.0f;
                    if (p.col_scale) s *= p.col_scale[c];
                    scol[lane] = c;
                    sscale[lane] = s;
                }
                __syncwarp();
                int k = grp;
                /* U entries per step: all loads first, then the sums in entry order. */
                for (; k + (U - 1) * G < n; k += U * G) {
                    float v[U][NT][VEC];
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        gnn__ld_tiles<VEC, NT>(in + scol[k + u * G] * f, true, c0, L, sub, f,
                                               v[u]);
                    }
#pragma unroll
                    for (int u = 0; u < U; u++) {
                        const float s = sscale[k + u * G];
#pragma unroll
                        for (int t = 0; t < NT; t++)
#pragma unroll
                            for (int j = 0; j < VEC; j++)
                                acc[t][j] = fmaf(s, v[u][t][j], acc[t][j]);
                    }
                }
                for (; k < n; k += G) {
                    const float *src = in + scol[k] * f;
                    const float s = sscale[k];
#pragma unroll
                    for (int t = 0; t < NT; t++) {
                        const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                        if (col < f) {
                            float v[VEC];
                            gnn__ldf<VEC>(src + col, v);
#pragma unroll
                            for (int j = 0; j < VEC; j++) acc[t][j] = fmaf(s, v[j], acc[t][j]);
                        }
                    }
                }
                __syncwarp(); /* the chunk is read before the next one overwrites it */
            }
            /* Lane groups of a narrow row: a fixed butterfly (same bits in every lane). */
            for (int off = L; off < 32; off <<= 1)
#pragma unroll
                for (int t = 0; t < NT; t++)
#pragma unroll
                    for (int j = 0; j < VEC; j++)
                        acc[t][j] += __shfl_xor_sync(GNN_SPMM_FULL_MASK, acc[t][j], off);
            if (grp == 0) {
#pragma unroll
                for (int t = 0; t < NT; t++) {
                    const int64_t col = c0 + (int64_t)(t * L + sub) * VEC;
                    if (col < f) {
                        float o[VEC];
#pragma unroll
                        for (int j = 0; j < VEC; j++) o[j] = rs * acc[t][j];
                        gnn__stf<VEC>(out + r * f + col, o);
                    }
                }
            }
        }
    }
}

/* Launch k_rowcache_scaled<VEC, nt> (nt: 1, 2 or 4). */
template <int VEC>
static void launch_scaled(const gnn__scsr_t *p, int64_t f, int lg, int nt, const float *in,
                          float *out, unsigned blocks, cudaStream_t s)
{
    if (nt == 1)
        k_rowcache_scaled<VEC, 1><<<blocks, GNN_SPMM_THREADS, 0, s>>>(*p, f, lg, in, out);
    else if (nt == 2)
        k_rowcache_scaled<VEC, 2><<<blocks, GNN_SPMM_THREADS, 0, s>>>(*p, f, lg, in, out);
    else
        k_rowcache_scaled<VEC, 4><<<blocks, GNN_SPMM_THREADS, 0, s>>>(*p, f, lg, in, out);
}

int gnn__rowcache_scaled(const gnn__scsr_t *p, int64_t f, const float *in, float *out,
                         cudaStream_t s)
{
    if (p->n_rows == 0) return 0;
    const gnn__spmm_shape_t sh = gnn__spmm_shape(f, (uintptr_t)in | (uintptr_t)out);
    const unsigned blocks = gnn__cuda_blocks(p->n_rows, GNN_SPMM_WPB);
    if (sh.vec == 4)
        launch_scaled<4>(p, f, sh.lg, sh.nt, in, out, blocks, s);
    else if (sh.vec == 2)
        launch_scaled<2>(p, f, sh.lg, sh.nt, in, out, blocks, s);
    else
        launch_scaled<1>(p, f, sh.lg, sh.nt, in, out, blocks, s);
    GNN_CUDA_LAUNCHED("rowcache spmm");
    return 0;
}

/* ---- Max forward ---------------------------------------------------------- */

/*
 * y, argmax = max over each row (a warp per row, grid-stride). Per column
 * a lane keeps the running maximum m, its column id a and its entry
 * position pos (-1: none yet).
 */
template <int VEC>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_rowcache_max_fwd(const int64_t *__restrict__ indptr, const int64_t *__restrict__ indices,
                       const int64_t n_rows, const int64_t f, const int lg,
                       const float *__restrict__ x, float *__restrict__ y,
                       int32_t *__restrict__ argmax)
{
    __shared__ int64_t sh_col[GNN_SPMM_WPB][32];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int64_t span = (int64_t)L * VEC;
    int64_t *const scol = sh_col[wib];
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;

    for (int64_t r = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; r < n_rows; r += nwarps) {
        const int64_t beg = indptr[r], end = indptr[r + 1];
        if (beg == end) { /* empty row: 0 and -1 */
            float zf[VEC];
            int32_t mi[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                zf[j] = 0.0f;
                mi[j] = -1;
            }
            for (int64_t col = (int64_t)lane * VEC; col < f; col += 32 * VEC) {
                gnn__stf<VEC>(y + r * f + col, zf);
                gnn__sti<VEC>(argmax + r * f + col, mi);
            }
            continue;
        }
        for (int64_t c0 = 0; c0 < f; c0 += span) {
            const int64_t col = c0 + (int64_t)sub * VEC;
            const bool act = col < f;
            float m[VEC];
            int32_t a[VEC];
            int64_t pos[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) {
                m[j] = 0.0f;
                a[j] = -1;
                pos[j] = -1;
            }
            for (int64_t e0 = beg; e0 < end; e0 += 32) {
                const int n = end - e0 < 32 ? (int)(end - e0) : 32;
                if (lane < n) scol[lane] = indices[e0 + lane];
                __syncwarp();
#pragma unroll 2
                for (int k = grp; k < n; k += G) {
                    const int64_t c = scol[k], e = e0 + k;
                    float v[VEC];
                    if (act) {
                        gnn__ldf<VEC>(x + c * f + col, v);
                    } else {
#pragma unroll
                        for (int j = 0; j < VEC; j++) v[j] = 0.0f;
                    }
#pragma unroll
                    for (int j = 0; j < VEC; j++) {
                        /* The row's first entry always counts; later NaNs never do. */
                        const bool take =
                            pos[j] < 0 ? (e == beg || !isnan(v[j])) : v[j] > m[j];
                        if (take) {
                            m[j] = v[j];
                            a[j] = (int32_t)c;
                            pos[j] = e;
                        }
                    }
                }
                __syncwarp();
            }
            /* Combine lane groups: the earlier entry wins unless the later is
             * strictly greater (the sequential scan's rule, whatever the order
             * of the two operands, so every lane gets the same result). */
            for (int off = L; off < 32; off <<= 1) {
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const float om = __shfl_xor_sync(GNN_SPMM_FULL_MASK, m[j], off);
                    const int32_t oa = __shfl_xor_sync(GNN_SPMM_FULL_MASK, a[j], off);
                    const long long op =
                        __shfl_xor_sync(GNN_SPMM_FULL_MASK, (long long)pos[j], off);
                    bool take;
                    if (op < 0)
                        take = false;
                    else if (pos[j] < 0)
                        take = true;
                    else if (op < pos[j])
                        take = !(m[j] > om);
                    else
                        take = om > m[j];
                    if (take) {
                        m[j] = om;
                        a[j] = oa;
                        pos[j] = op;
                    }
                }
            }
            if (grp == 0 && act) { /* group 0 holds the row's first entry: pos >= 0 */
                gnn__stf<VEC>(y + r * f + col, m);
                gnn__sti<VEC>(argmax + r * f + col, a);
            }
        }
    }
}

int gnn__rowcache_max_forward(const int64_t *indptr, const int64_t *indices, int64_t n_rows,
                              int64_t f, const float *x, float *y, int32_t *argmax,
                              cudaStream_t s)
{
    if (n_rows == 0) return 0;
    const gnn__spmm_shape_t sh =
        gnn__spmm_shape(f, (uintptr_t)x | (uintptr_t)y | (uintptr_t)argmax);
    const unsigned blocks = gnn__cuda_blocks(n_rows, GNN_SPMM_WPB);
    if (sh.vec == 4)
        k_rowcache_max_fwd<4><<<blocks, GNN_SPMM_THREADS, 0, s>>>(indptr, indices, n_rows, f,
                                                                  sh.lg, x, y, argmax);
    else if (sh.vec == 2)
        k_rowcache_max_fwd<2><<<blocks, GNN_SPMM_THREADS, 0, s>>>(indptr, indices, n_rows, f,
                                                                  sh.lg, x, y, argmax);
    else
        k_rowcache_max_fwd<1><<<blocks, GNN_SPMM_THREADS, 0, s>>>(indptr, indices, n_rows, f,
                                                                  sh.lg, x, y, argmax);
    GNN_CUDA_LAUNCHED("rowcache max forward");
    return 0;
}

/* ---- Max backward ----------------------------------------------------------- */

/*
 * dx[u] = sum of dy[v] where argmax[v] == u over the distinct v of
 * transpose row u (a warp per row, grid-stride). A repeat of the previous
 * entry is staged as -1 and skipped.
 */
template <int VEC>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_rowcache_max_bwd(const int64_t *__restrict__ t_indptr,
                       const int64_t *__restrict__ t_indices, const int64_t n_rows,
                       const int64_t f, const int lg, const float *__restrict__ dy,
                       const int32_t *__restrict__ argmax, float *__restrict__ dx)
{
    __shared__ int64_t sh_row[GNN_SPMM_WPB][32];
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int64_t span = (int64_t)L * VEC;
    int64_t *const srow = sh_row[wib];
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;

    for (int64_t u = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; u < n_rows; u += nwarps) {
        const int64_t beg = t_indptr[u], end = t_indptr[u + 1];
        const int32_t self = (int32_t)u;
        for (int64_t c0 = 0; c0 < f; c0 += span) {
            const int64_t col = c0 + (int64_t)sub * VEC;
            const bool act = col < f;
            float acc[VEC];
#pragma unroll
            for (int j = 0; j < VEC; j++) acc[j] = 0.0f;
            for (int64_t e0 = beg; e0 < end; e0 += 32) {
                const int n = end - e0 < 32 ? (int)(end - e0) : 32;
                if (lane < n) {
                    const int64_t e = e0 + lane, v = t_indices[e];
                    srow[lane] = (e > beg && t_indices[e - 1] == v) ? -1 : v;
                }
                __syncwarp();
                /* Two entries per step: loads first, then the sums in entry order.
                 * A skipped entry reads nothing and matches no column (-1). */
                for (int k = grp; k < n; k += 2 * G) {
                    float g[2][VEC];
                    int32_t am[2][VEC];
#pragma unroll
                    for (int i = 0; i < 2; i++) {
                        const int64_t v = k + i * G < n ? srow[k + i * G] : -1;
                        if (v >= 0 && act) {
                            gnn__ldi<VEC>(argmax + v * f + col, am[i]);
                            gnn__ldf<VEC>(dy + v * f + col, g[i]);
                        } else {
#pragma unroll
                            for (int j = 0; j < VEC; j++) {
                                am[i][j] = -1;
                                g[i][j] = 0.0f;
                            }
                        }
                    }
#pragma unroll
                    for (int i = 0; i < 2; i++)
#pragma unroll
                        for (int j = 0; j < VEC; j++)
                            if (am[i][j] == self) acc[j] += g[i][j];
                }
                __syncwarp();
            }
            for (int off = L; off < 32; off <<= 1)
#pragma unroll
                for (int j = 0; j < VEC; j++)
                    acc[j] += __shfl_xor_sync(GNN_SPMM_FULL_MASK, acc[j], off);
            if (grp == 0 && act) gnn__stf<VEC>(dx + u * f + col, acc);
        }
    }
}

int gnn__rowcache_max_backward(const int64_t *t_indptr, const int64_t *t_indices, int64_t n_rows,
                               int64_t f, const float *dy, const int32_t *argmax, float *dx,
                               cudaStream_t s)
{
    if (n_rows == 0) return 0;
    const gnn__spmm_shape_t sh =
        gnn__spmm_shape(f, (uintptr_t)dy | (uintptr_t)dx | (uintptr_t)argmax);
    const unsigned blocks = gnn__cuda_blocks(n_rows, GNN_SPMM_WPB);
    if (sh.vec == 4)
        k_rowcache_max_bwd<4><<<blocks, GNN_SPMM_THREADS, 0, s>>>(t_indptr, t_indices, n_rows, f,
                                                                  sh.lg, dy, argmax, dx);
    else if (sh.vec == 2)
        k_rowcache_max_bwd<2><<<blocks, GNN_SPMM_THREADS, 0, s>>>(t_indptr, t_indices, n_rows, f,
                                                                  sh.lg, dy, argmax, dx);
    else
        k_rowcache_max_bwd<1><<<blocks, GNN_SPMM_THREADS, 0, s>>>(t_indptr, t_indices, n_rows, f,
                                                                  sh.lg, dy, argmax, dx);
    GNN_CUDA_LAUNCHED("rowcache max backward");
    return 0;
}
