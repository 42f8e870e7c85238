/*
 * The CUDA entry points of the "lse" aggregator (lse.c holds the CPU ones
 * and the definition): the same log-mean-exp, forward and backward, on
 * device pointers. Like lse.c it includes only gnn_aggr_plugin.h of this
 * project; it needs nothing but the CUDA runtime.
 *
 *   y[v][k]  = log((1/d_v) sum_{e=(u->v)} exp(x[u][k]))      (0 for an empty row)
 *   dx[u][k] = sum_{e=(u->v)} dy[v][k] * exp(x[u][k] - y[v][k]) / d_v
 * (d_v: the entries of row v)
 *
 * One thread per output element (v, k), k the fastest index, so the
 * threads of a warp read consecutive columns of the same input rows when
 * f >= 32. The forward takes the row's maximum first and sums exp(x - max)
 * in double, as lse.c does; the backward is a gather over the transpose
 * (row u lists the destinations of u's out-edges), so every element of dx
 * is written by exactly one thread: no atomics, and the result is the same
 * from run to run. A repeated edge is a term of its own in both.
 *
 * All work goes on call->stream; nothing synchronises the device. A launch
 * failure (or an earlier asynchronous fault that surfaces at the launch)
 * is reported in call->msg with CUDA's text.
 */
#include "gnn_aggr_plugin.h"

#include <cuda_runtime.h>

#include <stdint.h>

#if defined(__GNUC__)
#define LSE_HIDDEN __attribute__((visibility("hidden")))
#else
#define LSE_HIDDEN
#endif

#define THREADS 256
#define MAX_BLOCKS (1 << 20) /* grid-stride loops cover the rest */

/* lse.c: a one-line reason into call->msg; returns 1 (failure). */
extern "C" LSE_HIDDEN int lse_fail(const gnn_aggr_call_t *call, const char *fmt, ...);

static unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

/* y[v][k] for every (v, k) of an n x f output. */
__global__ void lse_forward_kernel(int64_t n, int64_t f, const int64_t *__restrict__ indptr,
                                   const int64_t *__restrict__ indices,
                                   const float *__restrict__ x, float *__restrict__ y)
{
    const int64_t total = n * f, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t v = i / f, k = i - v * f;
        const int64_t beg = indptr[v], end = indptr[v + 1];
        if (beg == end) {
            y[i] = 0.0f;
            continue;
        }
        float m = x[indices[beg] * f + k];
        for (int64_t j = beg + 1; j < end; j++) {
            const float xv = x[indices[j] * f + k];
            m = xv > m ? xv : m;
        }
        double s = 0.0;
        for (int64_t j = beg; j < end; j++) s += (double)expf(x[indices[j] * f + k] - m);
        y[i] = (float)((double)m + log(s / (double)(end - beg)));
    }
}

/* dx[u][k] for every (u, k) of an n_src x f output, over the transpose. */
__global__ void lse_backward_kernel(int64_t n, int64_t f, const int64_t *__restrict__ indptr,
                                    const int64_t *__restrict__ t_indptr,
                                    const int64_t *__restrict__ t_indices,
                                    const float *__restrict__ x, const float *__restrict__ y,
                                    const float *__restrict__ dy, float *__restrict__ dx)
{
    const int64_t total = n * f, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t u = i / f, k = i - u * f;
        const float xu = x[i];
        double acc = 0.0;
        for (int64_t j = t_indptr[u]; j < t_indptr[u + 1]; j++) {
            const int64_t v = t_indices[j], o = v * f + k;
            acc += (double)dy[o] * (double)expf(xu - y[o]) / (double)(indptr[v + 1] - indptr[v]);
        }
        dx[i] = (float)acc;
    }
}

extern "C" LSE_HIDDEN int lse_cuda_forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    if (!call || !call->graph) return lse_fail(call, "lse CUDA forward: no graph");
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f, n = g->n_dst;
    if (f < 1) return lse_fail(call, "lse CUDA forward: bad feature width %lld", (long long)f);
    if (n <= 0) return 0;
    if (!x || !y || !g->indptr || (g->nnz > 0 && !g->indices))
        return lse_fail(call, "lse CUDA forward: NULL array");
    if (n > INT64_MAX / f)
        return lse_fail(call, "lse CUDA forward: %lld x %lld outputs overflow", (long long)n,
                    (long long)f);
    lse_forward_kernel<<<blocks_for(n * f), THREADS, 0, (cudaStream_t)call->stream>>>(
        n, f, g->indptr, g->indices, x, y);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return lse_fail(call, "lse CUDA forward: %s", cudaGetErrorString(e));
    return 0;
}

extern "C" LSE_HIDDEN int lse_cuda_backward(const gnn_aggr_call_t *call, const float *x,
                                            const float *y, const float *dy, float *dx)
{
    if (!call || !call->graph) return lse_fail(call, "lse CUDA backward: no graph");
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f, n = g->n_src;
    if (f < 1) return lse_fail(call, "lse CUDA backward: bad feature width %lld", (long long)f);
    if (n <= 0) return 0;
    if (!x || !dx || !g->t_indptr || (g->nnz > 0 && (!y || !dy || !g->t_indices || !g->indptr)))
        return lse_fail(call, "lse CUDA backward: NULL array (the transpose is required)");
    if (n > INT64_MAX / f)
        return lse_fail(call, "lse CUDA backward: %lld x %lld outputs overflow", (long long)n,
                    (long long)f);
    lse_backward_kernel<<<blocks_for(n * f), THREADS, 0, (cudaStream_t)call->stream>>>(
        n, f, g->indptr, g->t_indptr, g->t_indices, x, y, dy, dx);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return lse_fail(call, "lse CUDA backward: %s", cudaGetErrorString(e));
    return 0;
}
