/*
 * Dense operations of the CUDA backend: bias and its gradient, ReLU,
 * dropout (the counter-based generator of graph/base/rng.h, so a seed gives
 * the CPU's mask bit for bit), axpby, row gathers, softmax cross-entropy,
 * Adam and the arg-max reductions.
 *
 * Semantics and argument checks are those of kernels/dense.h. Arguments
 * that live on the device (indices, labels, row ids) are checked by a
 * kernel that records the first bad position; the call then waits for that
 * flag before it writes any output, so a failure leaves outputs untouched
 * as on the CPU. Reductions (bias gradient, loss) combine partials in a
 * fixed order: results do not change from run to run.
 */
#include "kernels/cuda/backend_cuda.cuh"

#include "kernels/adam_step.h"
#include "kernels/dense_check.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define THREADS 256
#define WARP 32
#define NO_BAD UINT64_MAX

/* ---- Checks ------------------------------------------------------------------ */

static float dropout_scale(float p)
{
    return (float)(1.0 / (1.0 - (double)p));
}

/*
 * The first bad position a check kernel recorded in *flag (device; set to
 * NO_BAD before the kernel), read through pinned memory after the stream
 * has run up to here.
 */
static int read_flag(gnn_cuda_be_t *cb, const unsigned long long *flag, uint64_t *bad)
{
    void *h = NULL;
    GNN_TRY_RET(gnn__cuda_pinned(cb, sizeof(unsigned long long), &h));
    GNN_CUDA_RET(cudaMemcpyAsync(h, flag, sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                                 cb->stream),
                 "copy of a check flag");
    GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "check kernel");
    *bad = *(unsigned long long *)h;
    return 0;
}

/* bad[0] = the first i with idx[i] outside [0, hi) (left as set when none). */
__global__ void k_check_range(int64_t n, const int64_t *idx, int64_t hi, unsigned long long *bad)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        if (idx[i] < 0 || idx[i] >= hi) atomicMin(bad, (unsigned long long)i);
}

/* *bad = the first position whose id is outside [0, rows) (NO_BAD: none),
 * read back to the host: the device-side check of every operation that
 * reads ids, skipped (no wait) for ids the caller vouched for
 * (gnn_be_trust_ids). */
static int first_bad_row(gnn_backend_t *be, int64_t n, const int64_t *idx, int64_t rows,
                         uint64_t *bad)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    void *flag = NULL;
    *bad = NO_BAD;
    if (!idx || n == 0 || gnn__be_trusted(be, idx, n, rows)) return 0;
    GNN_TRY_RET(gnn__cuda_scratch(cb, sizeof(unsigned long long), &flag));
    GNN_CUDA_RET(cudaMemsetAsync(flag, 0xFF, sizeof(unsigned long long), cb->stream),
                 "row check");
    k_check_range<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, cb->stream>>>(
        n, idx, rows, (unsigned long long *)flag);
    GNN_CUDA_LAUNCHED("row check");
    return read_flag(cb, (const unsigned long long *)flag, bad);
}

/* One int64 element of a device array, for an error message. */
static int64_t peek_i64(gnn_cuda_be_t *cb, const int64_t *a, uint64_t i)
{
    int64_t v = 0;
    if (cudaMemcpyAsync(&v, a + i, sizeof v, cudaMemcpyDeviceToHost, cb->stream) != cudaSuccess ||
        cudaStreamSynchronize(cb->stream) != cudaSuccess) {
        (void)cudaGetLastError(); /* not the next launch's */
        return INT64_MIN;
    }
    return v;
}

/* GNN_EINVAL "fn: what ID at position I outside [0, rows)" for the first
 * entry of idx[0, n) outside [0, rows) (first_bad_row). */
static int rows_in(gnn_backend_t *be, const char *fn, const char *what, int64_t n,
                   const int64_t *idx, int64_t rows)
{
    uint64_t bad = NO_BAD;
    GNN_TRY_RET(first_bad_row(be, n, idx, rows, &bad));
    if (bad != NO_BAD)
        return GNN_FAIL(GNN_EINVAL, "%s: %s %" PRId64 " at position %" PRIu64 " outside [0, %" PRId64
                                    ")",
                        fn, what, peek_i64(gnn__cuda_be(be), idx, bad), bad, rows);
    return 0;
}

/* ---- Element-wise ------------------------------------------------------------ */

__global__ void k_bias_add(int64_t rows, int64_t cols, float *y, const float *bias)
{
    int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] += bias[i % cols];
}

int gnn__cuda_bias_add(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias)
{
    GNN_TRY_RET(gnn__dense_check_shape("gnn_bias_add", rows, cols));
    if (rows == 0 || cols == 0) return 0;
    k_bias_add<<<gnn__cuda_blocks(rows * cols, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        rows, cols, y, bias);
    GNN_CUDA_LAUNCHED("bias_add");
    return 0;
}

/*
 * Column sums in double: block (tile, slab) sums the rows of its slab for
 * 32 columns, 8 row lanes per column combined in lane order; a second
 * kernel adds the slabs in order.
 */
#define BG_ROWS_PER_SLAB 4096
#define BG_MAX_SLABS 256

__global__ void k_bias_grad_partial(int64_t rows, int64_t cols, int64_t slab_rows,
                                    const float *dy, double *part)
{
    __shared__ double acc[8][WARP];
    int64_t c = blockIdx.x * (int64_t)WARP + threadIdx.x;
    int64_t r0 = blockIdx.y * slab_rows, r1 = r0 + slab_rows < rows ? r0 + slab_rows : rows;
    double s = 0.0;
    if (c < cols)
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) s += (double)dy[r * cols + c];
    acc[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < cols) {
        double t = 0.0;
        for (int k = 0; k < 8; k++) t += acc[k][threadIdx.x];
        part[blockIdx.y * cols + c] = t;
    }
}

__global__ void k_bias_grad_final(int64_t cols, int slabs, const double *part, float *dbias)
{
    for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < cols;
         c += (int64_t)gridDim.x * blockDim.x) {
        double t = 0.0;
        for (int k = 0; k < slabs; k++) t += part[k * cols + c];
        dbias[c] = (float)t;
    }
}

int gnn__cuda_bias_grad(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy,
                        float *dbias)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_shape("gnn_bias_grad", rows, cols));
    if (cols == 0) return 0;
    if (rows == 0) {
        GNN_CUDA_RET(cudaMemsetAsync(dbias, 0, (size_t)cols * sizeof(float), cb->stream),
                     "bias_grad");
        return 0;
    }
    int64_t slabs = (rows + BG_ROWS_PER_SLAB - 1) / BG_ROWS_PER_SLAB;
    if (slabs > BG_MAX_SLABS) slabs = BG_MAX_SLABS;
    int64_t slab_rows = (rows + slabs - 1) / slabs;
    int64_t tiles = (cols + WARP - 1) / WARP;
    GNN_CHECK_RET(tiles <= INT32_MAX, GNN_EINVAL, "gnn_bias_grad: %" PRId64 " columns", cols);
    void *part = NULL;
    GNN_TRY_RET(gnn__cuda_scratch(cb, (size_t)(slabs * cols) * sizeof(double), &part));
    dim3 grid((unsigned)tiles, (unsigned)slabs), block(WARP, 8);
    k_bias_grad_partial<<<grid, block, 0, cb->stream>>>(rows, cols, slab_rows, dy,
                                                        (double *)part);
    GNN_CUDA_LAUNCHED("bias_grad_partial");
    k_bias_grad_final<<<gnn__cuda_blocks(cols, THREADS), THREADS, 0, cb->stream>>>(
        cols, (int)slabs, (const double *)part, dbias);
    GNN_CUDA_LAUNCHED("bias_grad_final");
    return 0;
}

/* y = act(y + bias) per element: the values of k_bias_add and then
 * k_relu or the ELU kernel (attn_cuda.cu). */
__global__ void k_bias_act(int64_t rows, int64_t cols, float *y, const float *bias, int act)
{
    int64_t n = rows * cols;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float v = y[i] + bias[i % cols];
        y[i] = act == GNN_ACT_RELU ? (v < 0.0f ? 0.0f : v)
               : act == GNN_ACT_ELU ? (v > 0.0f ? v : expm1f(v))
                                    : v;
    }
}

int gnn__cuda_bias_act(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias,
                       int act)
{
    GNN_TRY_RET(gnn__dense_check_shape("gnn_bias_act", rows, cols));
    if (rows == 0 || cols == 0) return 0;
    k_bias_act<<<gnn__cuda_blocks(rows * cols, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        rows, cols, y, bias, act);
    GNN_CUDA_LAUNCHED("bias_act");
    return 0;
}

__global__ void k_relu(int64_t n, const float *x, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        float v = x[i];
        y[i] = v < 0.0f ? 0.0f : v;
    }
}

int gnn__cuda_relu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    GNN_TRY_RET(gnn__dense_check_count("gnn_relu", n));
    if (n == 0) return 0;
    k_relu<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(n, x, y);
    GNN_CUDA_LAUNCHED("relu");
    return 0;
}

__global__ void k_relu_backward(int64_t n, const float *xy, const float *dy, float *dx)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = xy[i] > 0.0f ? dy[i] : 0.0f;
}

int gnn__cuda_relu_backward(gnn_backend_t *be, int64_t n, const float *xy, const float *dy,
                            float *dx)
{
    GNN_TRY_RET(gnn__dense_check_count("gnn_relu_backward", n));
    if (n == 0) return 0;
    k_relu_backward<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        n, xy, dy, dx);
    GNN_CUDA_LAUNCHED("relu_backward");
    return 0;
}

__global__ void k_axpby(int64_t n, float alpha, const float *x, float beta, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        y[i] = beta == 0.0f ? alpha * x[i] : alpha * x[i] + beta * y[i];
}

int gnn__cuda_axpby(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta,
                    float *y)
{
    GNN_TRY_RET(gnn__dense_check_count("gnn_axpby", n));
    if (n == 0) return 0;
    k_axpby<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(n, alpha, x,
                                                                                   beta, y);
    GNN_CUDA_LAUNCHED("axpby");
    return 0;
}

/* ---- Dropout ----------------------------------------------------------------- */

/*
 * Thread t handles counter block (offset >> 2) + t: one Philox call for
 * its (up to) four elements. Element i has counter offset + i (mod 2^64),
 * so past the end of the counter space the block wraps to 0: b is taken
 * mod 2^62 for Philox, while b * 4 - offset (mod 2^64) still names the
 * element.
 */
__global__ void k_dropout(uint64_t n, float p, float scale, uint64_t seed, uint64_t offset,
                          const gnn_step_scalars_t *sc, const float *x, float *y)
{
    if (sc) offset += sc->drop_delta;
    uint64_t nblk = ((offset & 3u) + n + 3u) >> 2;
    for (uint64_t t = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; t < nblk;
         t += (uint64_t)gridDim.x * blockDim.x) {
        uint64_t b = (offset >> 2) + t;
        uint32_t r[4];
        gnn_rng_block(seed, b & (UINT64_MAX >> 2), r);
#pragma unroll
        for (int l = 0; l < 4; l++) {
            uint64_t i = (b * 4u + (uint64_t)l) - offset;
            if (i < n) y[i] = gnn_rng_u01(r[l]) < p ? 0.0f : x[i] * scale;
        }
    }
}

static int dropout_run(gnn_backend_t *be, const char *fn, int64_t n, float p, uint64_t seed,
                       uint64_t offset, const float *x, float *y)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_count(fn, n));
    GNN_TRY_RET(gnn__dense_check_drop_p(fn, p));
    if (n == 0) return 0;
    if (p == 0.0f) {
        if (x != y)
            GNN_CUDA_RET(cudaMemcpyAsync(y, x, (size_t)n * sizeof(float), cudaMemcpyDeviceToDevice,
                                         cb->stream),
                         fn);
        return 0;
    }
    uint64_t nblk = ((offset & 3u) + (uint64_t)n + 3u) >> 2;
    k_dropout<<<gnn__cuda_blocks((long long)nblk, THREADS), THREADS, 0, cb->stream>>>(
        (uint64_t)n, p, dropout_scale(p), seed, offset, be->step_scalars, x, y);
    GNN_CUDA_LAUNCHED("dropout");
    return 0;
}

int gnn__cuda_dropout(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                      const float *x, float *y)
{
    return dropout_run(be, "gnn_dropout", n, p, seed, offset, x, y);
}

int gnn__cuda_dropout_backward(gnn_backend_t *be, int64_t n, float p, uint64_t seed,
                               uint64_t offset, const float *dy, float *dx)
{
    return dropout_run(be, "gnn_dropout_backward", n, p, seed, offset, dy, dx);
}

/*
 * y = dropout(act(y + bias)): thread t takes elements c0 .. c0 + 3 of a
 * row (c0 = 4 (t mod ceil(cols / 4))), whose counters base .. base + 3
 * (base = offset + id * cols + c0, id = row_id[r] or r) lie in one or two
 * Philox blocks: one call where base is a multiple of 4 (a width and an
 * offset that are), two otherwise. The values of k_bias_act then k_dropout
 * (or k_dropout_rows), bit for bit.
 */
__global__ void k_bias_act_drop(int64_t rows, int64_t cols, float *y, const float *bias, int act,
                                float p, float scale, uint64_t seed, uint64_t offset,
                                const int64_t *row_id, const gnn_step_scalars_t *sc)
{
    if (sc) offset += sc->drop_delta;
    const int64_t q = (cols + 3) / 4, n = rows * q;
    for (int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; t < n;
         t += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = t / q, c0 = (t - r * q) * 4;
        const uint64_t id = row_id ? (uint64_t)row_id[r] : (uint64_t)r;
        const uint64_t base = offset + id * (uint64_t)cols + (uint64_t)c0, b = base >> 2;
        uint32_t w[8];
        gnn_rng_block(seed, b, w);
        if (base & 3u) gnn_rng_block(seed, (b + 1u) & (UINT64_MAX >> 2), w + 4);
#pragma unroll
        for (int l = 0; l < 4; l++) {
            const int64_t c = c0 + l;
            if (c >= cols) break;
            const uint64_t lane = (base + (uint64_t)l) - (b << 2); /* 0 .. 6 */
            float v = y[r * cols + c] + bias[c];
            v = act == GNN_ACT_RELU ? (v < 0.0f ? 0.0f : v)
                : act == GNN_ACT_ELU ? (v > 0.0f ? v : expm1f(v))
                                     : v;
            y[r * cols + c] = gnn_rng_u01(w[lane]) < p ? 0.0f : v * scale;
        }
    }
}

int gnn__cuda_bias_act_drop(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                            const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                            const int64_t *row_id)
{
    GNN_TRY_RET(gnn__dense_check_shape("gnn_bias_act_drop", rows, cols));
    GNN_CHECK_RET(act == GNN_ACT_NONE || act == GNN_ACT_RELU || act == GNN_ACT_ELU, GNN_EINVAL,
                  "gnn_bias_act_drop: activation %d (0 none, 1 relu, 2 elu)", act);
    GNN_TRY_RET(gnn__dense_check_drop_p("gnn_bias_act_drop", p));
    if (p == 0.0f) return gnn__cuda_bias_act(be, rows, cols, y, bias, act);
    if (rows == 0 || cols == 0) return 0;
    const int64_t threads = rows * ((cols + 3) / 4);
    k_bias_act_drop<<<gnn__cuda_blocks(threads, THREADS), THREADS, 0,
                      gnn__cuda_be(be)->stream>>>(rows, cols, y, bias, act, p, dropout_scale(p),
                                                  seed, offset, row_id, be->step_scalars);
    GNN_CUDA_LAUNCHED("bias_act_drop");
    return 0;
}

__global__ void k_relu_drop_backward(int64_t n, float scale, const float *y, const float *dy,
                                     float *dx)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        dx[i] = y[i] > 0.0f ? dy[i] * scale : 0.0f;
}

int gnn__cuda_relu_drop_backward(gnn_backend_t *be, int64_t n, float p, const float *y,
                                 const float *dy, float *dx)
{
    GNN_TRY_RET(gnn__dense_check_count("gnn_relu_drop_backward", n));
    GNN_TRY_RET(gnn__dense_check_drop_p("gnn_relu_drop_backward", p));
    if (n == 0) return 0;
    k_relu_drop_backward<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        n, p == 0.0f ? 1.0f : dropout_scale(p), y, dy, dx);
    GNN_CUDA_LAUNCHED("relu_drop_backward");
    return 0;
}

/* Element (r, c) takes counter offset + row_id[r] * f + c. */
__global__ void k_dropout_rows(int64_t rows, int64_t f, const int64_t *row_id, float p,
                               float scale, uint64_t seed, uint64_t offset,
                               const gnn_step_scalars_t *sc, const float *x, float *y)
{
    if (sc) offset += sc->drop_delta;
    int64_t n = rows * f;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = e / f, c = e - r * f;
        uint64_t j = offset + (uint64_t)row_id[r] * (uint64_t)f + (uint64_t)c;
        y[e] = gnn_rng_uniform(seed, j) < p ? 0.0f : x[e] * scale;
    }
}

int gnn__cuda_dropout_rows(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id,
                           float p, uint64_t seed, uint64_t offset, const float *x, float *y)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_count("gnn_dropout_rows", rows));
    GNN_TRY_RET(gnn__dense_check_count("gnn_dropout_rows", f));
    GNN_TRY_RET(gnn__dense_check_drop_p("gnn_dropout_rows", p));
    GNN_CHECK_RET(row_id || rows == 0, GNN_EINVAL, "gnn_dropout_rows: NULL row ids");
    if (rows == 0) return 0;
    uint64_t bad;
    GNN_TRY_RET(first_bad_row(be, rows, row_id, INT64_MAX, &bad));
    if (bad != NO_BAD)
        return GNN_FAIL(GNN_EINVAL, "gnn_dropout_rows: row %" PRIu64 " has id %" PRId64, bad,
                        peek_i64(cb, row_id, bad));
    if (f == 0) return 0;
    if (p == 0.0f) {
        if (x != y)
            GNN_CUDA_RET(cudaMemcpyAsync(y, x, (size_t)(rows * f) * sizeof(float),
                                         cudaMemcpyDeviceToDevice, cb->stream),
                         "gnn_dropout_rows");
        return 0;
    }
    k_dropout_rows<<<gnn__cuda_blocks(rows * f, THREADS), THREADS, 0, cb->stream>>>(
        rows, f, row_id, p, dropout_scale(p), seed, offset, be->step_scalars, x, y);
    GNN_CUDA_LAUNCHED("dropout_rows");
    return 0;
}

/* ---- Row gather -------------------------------------------------------------- */

/* A warp per output row; float4 copies when rows are 16-byte multiples. */
template <typename V>
__global__ void k_gather_rows(int64_t n, int64_t fv, const V *src, const int64_t *idx, V *dst)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t i = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; i < n;
         i += warps) {
        const V *s = src + idx[i] * fv;
        V *d = dst + i * fv;
        for (int64_t k = lane; k < fv; k += WARP) d[k] = s[k];
    }
}

/* A warp per row: from the cache where the row has a slot, else from src
 * (host memory read over the bus, when mapped). */
__global__ void k_gather_rows_cached(int64_t n, int64_t f, const float *cache,
                                     const int32_t *slot, const float *src, const int64_t *idx,
                                     float *dst)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t i = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; i < n;
         i += warps) {
        const int64_t v = idx[i];
        const int32_t c = slot[v];
        const float *s = c >= 0 ? cache + (int64_t)c * f : src + v * f;
        float *d = dst + i * f;
        for (int64_t k = lane; k < f; k += WARP) d[k] = s[k];
    }
}

int gnn__cuda_gather_rows_cached(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                                 const int32_t *slot, const float *src, const int64_t *idx,
                                 float *dst)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_shape("gnn_gather_rows_cached", n, f));
    if (n == 0 || f == 0) return 0;
    k_gather_rows_cached<<<gnn__cuda_blocks(n * WARP, THREADS), THREADS, 0, cb->stream>>>(
        n, f, cache, slot, src, idx, dst);
    GNN_CUDA_LAUNCHED("gather_rows_cached");
    return 0;
}

__global__ void k_copy_rows(int64_t n, int64_t f, const float *src, int64_t lds,
                            const int64_t *idx, float *dst, int64_t ldd)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t i = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; i < n;
         i += warps) {
        const float *s = src + idx[i] * lds;
        float *d = dst + i * ldd;
        for (int64_t k = lane; k < f; k += WARP) d[k] = s[k];
    }
}

int gnn__cuda_gather_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src,
                          int64_t src_rows, const int64_t *idx, float *dst)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_shape("gnn_gather_rows", n, f));
    GNN_TRY_RET(gnn__dense_check_shape("gnn_gather_rows", src_rows, f));
    if (n == 0) return 0;
    GNN_TRY_RET(rows_in(be, "gnn_gather_rows", "index", n, idx, src_rows));
    if (f == 0) return 0;
    unsigned blocks = gnn__cuda_blocks(n * WARP, THREADS);
    if (f % 4 == 0 && (uintptr_t)src % 16 == 0 && (uintptr_t)dst % 16 == 0)
        k_gather_rows<float4><<<blocks, THREADS, 0, cb->stream>>>(
            n, f / 4, (const float4 *)src, idx, (float4 *)dst);
    else
        k_gather_rows<float><<<blocks, THREADS, 0, cb->stream>>>(n, f, src, idx, dst);
    GNN_CUDA_LAUNCHED("gather_rows");
    return 0;
}

/* ---- Softmax cross-entropy --------------------------------------------------- */

/* First j whose row is outside [0, rows) or whose label is outside
 * [0, classes). */
__global__ void k_check_xent(int64_t nidx, const int64_t *idx, int64_t rows,
                             const int64_t *labels, int64_t classes, unsigned long long *bad)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nidx;
         j += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = idx ? idx[j] : j;
        if (r < 0 || r >= rows || labels[r] < 0 || labels[r] >= classes)
            atomicMin(bad, (unsigned long long)j);
    }
}

/* Lane values combined in a fixed butterfly order: every lane gets the
 * same result, run after run. */
__device__ double warp_sum_d(double v)
{
    for (int o = WARP / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ float warp_max_f(float v)
{
    for (int o = WARP / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* A warp per selected row: row loss into part[j], gradient into dlogits. */
__global__ void k_xent_rows(int64_t nidx, int64_t classes, const float *logits,
                            const int64_t *labels, const int64_t *idx, float inv_n, double *part,
                            float *dlogits)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t j = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; j < nidx;
         j += warps) {
        int64_t r = idx ? idx[j] : j;
        const float *x = logits + r * classes;
        float mx = -INFINITY;
        for (int64_t c = lane; c < classes; c += WARP) mx = fmaxf(mx, x[c]);
        mx = warp_max_f(mx);
        double s = 0.0;
        for (int64_t c = lane; c < classes; c += WARP) s += (double)expf(x[c] - mx);
        s = warp_sum_d(s);
        int64_t label = labels[r];
        if (lane == 0) part[j] = log(s) + (double)mx - (double)x[label];
        if (dlogits) {
            float *d = dlogits + r * classes;
            float inv_s = (float)(1.0 / s);
            for (int64_t c = lane; c < classes; c += WARP) {
                float g = expf(x[c] - mx) * inv_s * inv_n;
                d[c] = c == label ? g - inv_n : g;
            }
        }
    }
}

/* *out = (sum of a[0, n)) / div (0 when div is 0): one block sums the n
 * doubles, thread t taking t, t + blockDim, ..., then a fixed tree. */
__global__ void k_mean_d(int64_t n, const double *a, double div, double *out)
{
    __shared__ double s[1024];
    double t = 0.0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) t += a[i];
    s[threadIdx.x] = t;
    __syncthreads();
    for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) *out = div > 0.0 ? s[0] / div : 0.0;
}

/* The loss's work queued on the stream: dlogits zeroed where rows are
 * picked by idx (or there are none), each row's loss into part and its
 * gradient into dlogits, their mean into *out (device). Checked before. */
static int xent_queue(gnn_cuda_be_t *cb, int64_t rows, int64_t classes, const float *logits,
                      const int64_t *labels, const int64_t *idx, int64_t nidx, double *part,
                      double *out, float *dlogits)
{
    if (dlogits && rows * classes > 0 && (idx || nidx == 0))
        GNN_CUDA_RET(cudaMemsetAsync(dlogits, 0, (size_t)(rows * classes) * sizeof(float),
                                     cb->stream),
                     "gnn_softmax_xent");
    if (nidx > 0) {
        float inv_n = (float)(1.0 / (double)nidx);
        k_xent_rows<<<gnn__cuda_blocks(nidx * WARP, THREADS), THREADS, 0, cb->stream>>>(
            nidx, classes, logits, labels, idx, inv_n, part, dlogits);
        GNN_CUDA_LAUNCHED("softmax_xent");
    }
    k_mean_d<<<1, 1024, 0, cb->stream>>>(nidx, part, (double)nidx, out);
    GNN_CUDA_LAUNCHED("softmax_xent mean");
    return 0;
}

int gnn__cuda_softmax_xent_async(gnn_backend_t *be, int64_t rows, int64_t classes,
                                 const float *logits, const int64_t *labels, const int64_t *idx,
                                 int64_t nidx, double *loss_dev, float *dlogits)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_rows("gnn_softmax_xent", rows, classes, idx != NULL, nidx));
    void *scr = NULL;
    GNN_TRY_RET(gnn__cuda_scratch(cb, (size_t)(nidx + 1) * sizeof(double), &scr));
    return xent_queue(cb, rows, classes, logits, labels, idx, nidx, (double *)scr, loss_dev,
                      dlogits);
}

int gnn__cuda_softmax_xent(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                           const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                           float *dlogits)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_rows("gnn_softmax_xent", rows, classes, idx != NULL, nidx));
    /* scratch: [flag][total][nidx row losses] */
    void *scr = NULL;
    GNN_TRY_RET(gnn__cuda_scratch(cb, (size_t)(nidx + 2) * sizeof(double), &scr));
    unsigned long long *flag = (unsigned long long *)scr;
    double *total = (double *)scr + 1, *part = (double *)scr + 2;
    if (nidx > 0) { /* the rows and labels first: the error names the first bad one */
        GNN_CUDA_RET(cudaMemsetAsync(flag, 0xFF, sizeof *flag, cb->stream), "gnn_softmax_xent");
        k_check_xent<<<gnn__cuda_blocks(nidx, THREADS), THREADS, 0, cb->stream>>>(
            nidx, idx, rows, labels, classes, flag);
        GNN_CUDA_LAUNCHED("softmax_xent check");
        uint64_t bad = NO_BAD;
        GNN_TRY_RET(read_flag(cb, flag, &bad));
        if (bad != NO_BAD) {
            int64_t r = idx ? peek_i64(cb, idx, bad) : (int64_t)bad;
            if (r < 0 || r >= rows)
                return GNN_FAIL(GNN_EINVAL,
                                "gnn_softmax_xent: idx[%" PRIu64 "] = %" PRId64
                                " outside [0, %" PRId64 ")",
                                bad, r, rows);
            return GNN_FAIL(GNN_EINVAL,
                            "gnn_softmax_xent: row %" PRId64 ": label %" PRId64
                            " outside [0, %" PRId64 ")",
                            r, peek_i64(cb, labels, (uint64_t)r), classes);
        }
    }
    GNN_TRY_RET(xent_queue(cb, rows, classes, logits, labels, idx, nidx, part, total, dlogits));
    void *h = NULL;
    GNN_TRY_RET(gnn__cuda_pinned(cb, sizeof(double), &h));
    GNN_CUDA_RET(cudaMemcpyAsync(h, total, sizeof(double), cudaMemcpyDeviceToHost, cb->stream),
                 "copy of the loss");
    GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "gnn_softmax_xent");
    *loss = *(double *)h;
    return 0;
}

/* ---- Adam -------------------------------------------------------------------- */

/* With the step's scalars (sc, gnn_be_set_step_scalars) the bias
 * corrections are read there, as the step runs. */
__global__ void k_adam(int64_t n, float *w, const float *g, float *m, float *v,
                       gnn_adam_consts_t c, const gnn_step_scalars_t *sc)
{
    if (sc) {
        c.step_size = sc->adam_step_size;
        c.bc2_sqrt = sc->adam_bc2_sqrt;
    }
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        gnn_adam_elem(&c, &w[i], g[i], &m[i], &v[i]);
}

int gnn__cuda_adam(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                   const gnn_adam_opts_t *o, int64_t step)
{
    GNN_TRY_RET(gnn__dense_check_count("gnn_adam", n));
    GNN_TRY_RET(gnn__dense_check_adam(o, step));
    if (n == 0) return 0;
    k_adam<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        n, w, g, m, v, gnn_adam_consts(o, step), be->step_scalars);
    GNN_CUDA_LAUNCHED("adam");
    return 0;
}

/* ---- Row-sparse optimisers and strided row copies ---------------------------- */

/* One warp per row, its lanes over the row's elements. */
__global__ void k_sparse_opt(int64_t n, int64_t d, const int64_t *rows, const float *g,
                             int64_t ldg, float *w, float *s1, float *s2, gnn_sparse_consts_t c)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t i = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; i < n;
         i += warps) {
        int64_t r = rows ? rows[i] : i;
        for (int64_t k = lane; k < d; k += WARP)
            gnn_sparse_elem(&c, w + r * d + k, g[i * ldg + k], s1 + r * d + k,
                            s2 ? s2 + r * d + k : NULL);
    }
}

int gnn__cuda_sparse_opt_step(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                              const int64_t *rows, int64_t table_rows, const float *g,
                              int64_t ldg, float *w, float *s1, float *s2, int64_t step)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_sparse_opt(o, n, d, table_rows, ldg, step));
    if (!rows && n > table_rows)
        return GNN_FAIL(GNN_EINVAL, "gnn_sparse_opt_step: %" PRId64 " rows of a table of %" PRId64,
                        n, table_rows);
    GNN_TRY_RET(rows_in(be, "gnn_sparse_opt_step", "row", n, rows, table_rows));
    if (n == 0 || d == 0) return 0;
    k_sparse_opt<<<gnn__cuda_blocks(n * WARP, THREADS), THREADS, 0, cb->stream>>>(
        n, d, rows, g, ldg, w, s1, o->kind == GNN_SPARSE_ADAM ? s2 : NULL,
        gnn_sparse_consts(o, step));
    GNN_CUDA_LAUNCHED("sparse_opt_step");
    return 0;
}

int gnn__cuda_copy_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                        int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_copy_rows(n, f, lds, src_rows, ldd));
    if (!idx) { /* a block of columns: one 2-D copy */
        if (n > src_rows)
            return GNN_FAIL(GNN_EINVAL, "gnn_copy_rows: %" PRId64 " rows from %" PRId64, n,
                            src_rows);
        if (n == 0 || f == 0) return 0;
        GNN_CUDA_RET(cudaMemcpy2DAsync(dst, (size_t)ldd * sizeof(float), src,
                                       (size_t)lds * sizeof(float), (size_t)f * sizeof(float),
                                       (size_t)n, cudaMemcpyDeviceToDevice, cb->stream),
                     "gnn_copy_rows");
        return 0;
    }
    GNN_TRY_RET(rows_in(be, "gnn_copy_rows", "index", n, idx, src_rows));
    if (n == 0 || f == 0) return 0;
    k_copy_rows<<<gnn__cuda_blocks(n * WARP, THREADS), THREADS, 0, cb->stream>>>(
        n, f, src, lds, idx, dst, ldd);
    GNN_CUDA_LAUNCHED("copy_rows");
    return 0;
}

__global__ void k_scatter_rows(int64_t n, int64_t f, const float *src, int64_t lds,
                               const int64_t *idx, float *dst, int64_t ldd)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t i = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; i < n;
         i += warps) {
        const float *s = src + i * lds;
        float *d = dst + idx[i] * ldd;
        for (int64_t k = lane; k < f; k += WARP) d[k] = s[k];
    }
}

/* The first position of each destination row (atomicMin into first). */
__global__ void k_scatter_first(int64_t n, const int64_t *idx, unsigned long long *first)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        atomicMin(&first[idx[i]], (unsigned long long)i);
}

/* flag = the lowest position whose row came earlier (the CPU's scan
 * reports that one), whatever order the atomics land in. */
__global__ void k_scatter_repeats(int64_t n, const int64_t *idx, const unsigned long long *first,
                                  unsigned long long *flag)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        if (first[idx[i]] != (unsigned long long)i) atomicMin(flag, (unsigned long long)i);
}

/* GNN_EINVAL naming the first position of idx[0, n) whose row an earlier
 * one already names (a read-back: a wait for the stream). */
static int check_repeats(gnn_cuda_be_t *cb, int64_t n, const int64_t *idx, int64_t dst_rows)
{
    /* Each destination row's first position in scratch, then the flag
     * after them. */
    void *scratch = NULL;
    uint64_t bad = NO_BAD;
    const size_t at = ((size_t)dst_rows + 1) * sizeof(unsigned long long);
    GNN_TRY_RET(gnn__cuda_scratch(cb, at + sizeof(unsigned long long), &scratch));
    unsigned long long *first = (unsigned long long *)scratch;
    unsigned long long *flag = (unsigned long long *)((char *)scratch + at);
    GNN_CUDA_RET(cudaMemsetAsync(scratch, 0xFF, at + sizeof(unsigned long long), cb->stream),
                 "gnn_scatter_rows");
    k_scatter_first<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, cb->stream>>>(n, idx, first);
    GNN_CUDA_LAUNCHED("scatter_rows check");
    k_scatter_repeats<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, cb->stream>>>(n, idx, first,
                                                                                flag);
    GNN_CUDA_LAUNCHED("scatter_rows check");
    GNN_TRY_RET(read_flag(cb, flag, &bad));
    if (bad != NO_BAD)
        return GNN_FAIL(GNN_EINVAL, "gnn_scatter_rows: row %" PRId64 " given twice (position %" PRIu64
                        ")", peek_i64(cb, idx, bad), bad);
    return 0;
}

int gnn__cuda_scatter_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                           const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_copy_rows(n, f, lds, dst_rows, ldd));
    if (n == 0) return 0;
    GNN_TRY_RET(rows_in(be, "gnn_scatter_rows", "index", n, idx, dst_rows));
    if (!gnn__be_trusted_distinct(be, idx, n, dst_rows)) /* else vouched for */
        GNN_TRY_RET(check_repeats(cb, n, idx, dst_rows));
    if (f == 0) return 0;
    k_scatter_rows<<<gnn__cuda_blocks(n * WARP, THREADS), THREADS, 0, cb->stream>>>(
        n, f, src, lds, idx, dst, ldd);
    GNN_CUDA_LAUNCHED("scatter_rows");
    return 0;
}

/* ---- Arg-max ----------------------------------------------------------------- */

/* The CPU's scan: the lowest index wins ties, NaN never beats an earlier
 * entry (a strict > in row order). One thread per row: rows are short. */
__device__ int64_t argmax_row(const float *x, int64_t classes)
{
    int64_t best = 0;
    float bv = x[0];
    for (int64_t c = 1; c < classes; c++)
        if (x[c] > bv) {
            bv = x[c];
            best = c;
        }
    return best;
}

__global__ void k_argmax_rows(int64_t rows, int64_t classes, const float *x, int64_t *out)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x)
        out[r] = argmax_row(x + r * classes, classes);
}

int gnn__cuda_argmax_rows(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                          int64_t *out)
{
    GNN_TRY_RET(gnn__dense_check_shape("gnn_argmax_rows", rows, classes));
    if (rows == 0) return 0;
    GNN_CHECK_RET(classes >= 1, GNN_EINVAL, "gnn_argmax_rows: no classes");
    k_argmax_rows<<<gnn__cuda_blocks(rows, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(
        rows, classes, x, out);
    GNN_CUDA_LAUNCHED("argmax_rows");
    return 0;
}

__global__ void k_check_rows(int64_t nidx, const int64_t *idx, int64_t rows,
                             unsigned long long *bad)
{
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nidx;
         j += (int64_t)gridDim.x * blockDim.x)
        if (idx[j] < 0 || idx[j] >= rows) atomicMin(bad, (unsigned long long)j);
}

__global__ void k_count_correct(int64_t nidx, int64_t classes, const float *logits,
                                const int64_t *labels, const int64_t *idx,
                                unsigned long long *hits)
{
    unsigned long long mine = 0;
    for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < nidx;
         j += (int64_t)gridDim.x * blockDim.x) {
        int64_t r = idx ? idx[j] : j;
        mine += argmax_row(logits + r * classes, classes) == labels[r];
    }
    for (int o = WARP / 2; o > 0; o /= 2) mine += __shfl_xor_sync(0xffffffffu, mine, o);
    if (threadIdx.x % WARP == 0 && mine) atomicAdd(hits, mine);
}

int gnn__cuda_count_correct(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                            const int64_t *labels, const int64_t *idx, int64_t nidx,
                            int64_t *correct)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_rows("gnn_count_correct", rows, classes, idx != NULL, nidx));
    if (nidx == 0) {
        *correct = 0;
        return 0;
    }
    /* scratch: [flag][hits] */
    void *scr = NULL;
    GNN_TRY_RET(gnn__cuda_scratch(cb, 2 * sizeof(unsigned long long), &scr));
    unsigned long long *flag = (unsigned long long *)scr, *hits = flag + 1;
    if (idx) {
        GNN_CUDA_RET(cudaMemsetAsync(flag, 0xFF, sizeof *flag, cb->stream), "gnn_count_correct");
        k_check_rows<<<gnn__cuda_blocks(nidx, THREADS), THREADS, 0, cb->stream>>>(nidx, idx, rows,
                                                                                 flag);
        GNN_CUDA_LAUNCHED("count_correct check");
        uint64_t bad = NO_BAD;
        GNN_TRY_RET(read_flag(cb, flag, &bad));
        if (bad != NO_BAD)
            return GNN_FAIL(GNN_EINVAL,
                            "gnn_count_correct: idx[%" PRIu64 "] = %" PRId64 " outside [0, %" PRId64
                            ")",
                            bad, peek_i64(cb, idx, bad), rows);
    }
    GNN_CUDA_RET(cudaMemsetAsync(hits, 0, sizeof *hits, cb->stream), "gnn_count_correct");
    k_count_correct<<<gnn__cuda_blocks(nidx, THREADS), THREADS, 0, cb->stream>>>(
        nidx, classes, logits, labels, idx, hits);
    GNN_CUDA_LAUNCHED("count_correct");
    void *h = NULL;
    GNN_TRY_RET(gnn__cuda_pinned(cb, sizeof(unsigned long long), &h));
    GNN_CUDA_RET(cudaMemcpyAsync(h, hits, sizeof *hits, cudaMemcpyDeviceToHost, cb->stream),
                 "copy of the count");
    GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "gnn_count_correct");
    *correct = (int64_t) * (unsigned long long *)h;
    return 0;
}
