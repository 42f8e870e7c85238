/*
 * The CUDA entry points of the "gatv2" attention function (gatv2.c holds
 * the CPU ones, the definition and the formulas): the same score and
 * backward on device pointers. Like gatv2.c it includes only
 * gnn_aggr_plugin.h of this project and needs nothing but the CUDA
 * runtime.
 *
 *   score:    one thread per (slot, head), the f products in a loop;
 *   dx:       one thread per element (w, h*f + k) of dx, gathering over
 *             w's in-slots (edges->indptr) and out-slots (edges->t_slot):
 *             every element is added to by one thread, no atomics;
 *   da:       GATV2_CUDA_PARTS blocks each sum a fixed range of slots in
 *             double into the workspace (the block's threads split the
 *             range between lanes, each column's lanes then added in
 *             order), then one thread per element of da adds the blocks
 *             in order: the same bits from run to run.
 * As on the CPU, a slot whose score gradient is 0 adds nothing (no 0 *
 * inf from a stored self loop left out).
 *
 * All work goes on call->stream; nothing synchronises the device. A launch
 * failure is reported in call->msg with CUDA's text.
 */
#include "gnn_aggr_plugin.h"

#include <cuda_runtime.h>

#include <stdint.h>

#if defined(__GNUC__)
#define GATV2_HIDDEN __attribute__((visibility("hidden")))
#else
#define GATV2_HIDDEN
#endif

#define THREADS 256
#define MAX_BLOCKS (1 << 20) /* grid-stride loops cover the rest */
#define GATV2_CUDA_PARTS 1024 /* partial sums of da: gatv2.c's value, which sizes the workspace */

extern "C" GATV2_HIDDEN int gatv2_fail(const gnn_aggr_call_t *call, const char *fmt, ...);
extern "C" GATV2_HIDDEN int gatv2_check(const gnn_aggr_call_t *call, const char *what);

static unsigned blocks_for(int64_t n)
{
    int64_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < 1 ? 1 : b > MAX_BLOCKS ? MAX_BLOCKS : b);
}

__device__ __forceinline__ float lrelu(float z, float slope) { return z > 0.0f ? z : z * slope; }

__global__ void gatv2_score_kernel(int64_t slots, int64_t H, int64_t F,
                                   const int64_t *__restrict__ src,
                                   const int64_t *__restrict__ dst, const float *__restrict__ a,
                                   float slope, const float *__restrict__ x, float *__restrict__ s)
{
    const int64_t total = slots * H, stride = (int64_t)gridDim.x * blockDim.x, W = H * F;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t j = i / H, h = i - j * H;
        const float *xu = x + src[j] * W + h * F, *xv = x + dst[j] * W + h * F, *ah = a + h * F;
        float t = 0.0f;
        for (int64_t k = 0; k < F; k++) t += ah[k] * lrelu(xu[k] + xv[k], slope);
        s[i] = t;
    }
}

/* dx[w][c] += the gradient through w's in-slots (w < n_dst) and out-slots. */
__global__ void gatv2_dx_kernel(int64_t n_src, int64_t n_dst, int64_t H, int64_t F,
                                const int64_t *__restrict__ indptr,
                                const int64_t *__restrict__ src,
                                const int64_t *__restrict__ dst,
                                const int64_t *__restrict__ t_indptr,
                                const int64_t *__restrict__ t_slot,
                                const float *__restrict__ a, float slope,
                                const float *__restrict__ x, const float *__restrict__ ds,
                                float *__restrict__ dx)
{
    const int64_t W = H * F, total = n_src * W, stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        const int64_t w = i / W, c = i - w * W, h = c / F;
        const float xw = x[i], ac = a[c];
        float acc = 0.0f;
        if (w < n_dst)
            for (int64_t j = indptr[w]; j < indptr[w + 1]; j++) {
                const float d = ds[j * H + h];
                if (d == 0.0f) continue;
                const float z = xw + x[src[j] * W + c];
                acc += d * ac * (z > 0.0f ? 1.0f : slope);
            }
        for (int64_t t = t_indptr[w]; t < t_indptr[w + 1]; t++) {
            const int64_t j = t_slot[t];
            const float d = ds[j * H + h];
            if (d == 0.0f) continue;
            const float z = xw + x[dst[j] * W + c];
            acc += d * ac * (z > 0.0f ? 1.0f : slope);
        }
        dx[i] += acc;
    }
}

/* ds[j, h] * LeakyReLU(z[j, c]) of slot j, column c (0 where ds is 0). */
__device__ __forceinline__ double da_term(int64_t j, int64_t c, int64_t H, int64_t W, int64_t h,
                                          const int64_t *__restrict__ src,
                                          const int64_t *__restrict__ dst, float slope,
                                          const float *__restrict__ x,
                                          const float *__restrict__ ds)
{
    const float d = ds[j * H + h];
    if (d == 0.0f) return 0.0;
    return (double)d * (double)lrelu(x[src[j] * W + c] + x[dst[j] * W + c], slope);
}

/* part[b][c] = sum over block b's slots of ds[j, h] * LeakyReLU(z[j, c]).
 * With W <= blockDim.x the block's threads form blockDim.x / W lanes of W
 * columns, lane l taking the slots lo + l, lo + l + lanes, ...; the lanes'
 * sums of a column are then added in lane order. Wider rows: a thread per
 * column (and more), over every slot. */
__global__ void gatv2_da_part_kernel(int64_t slots, int64_t H, int64_t F,
                                     const int64_t *__restrict__ src,
                                     const int64_t *__restrict__ dst, float slope,
                                     const float *__restrict__ x, const float *__restrict__ ds,
                                     double *__restrict__ part)
{
    __shared__ double lane_sum[THREADS];
    const int64_t W = H * F, b = blockIdx.x;
    const int64_t per = (slots + GATV2_CUDA_PARTS - 1) / GATV2_CUDA_PARTS;
    const int64_t lo = b * per < slots ? b * per : slots;
    const int64_t hi = (b + 1) * per < slots ? (b + 1) * per : slots;
    if (W > (int64_t)blockDim.x) {
        for (int64_t c = threadIdx.x; c < W; c += blockDim.x) {
            const int64_t h = c / F;
            double acc = 0.0;
            for (int64_t j = lo; j < hi; j++) acc += da_term(j, c, H, W, h, src, dst, slope, x, ds);
            part[b * W + c] = acc;
        }
        return;
    }
    const int64_t lanes = (int64_t)blockDim.x / W, lane = (int64_t)threadIdx.x / W;
    const int64_t c = (int64_t)threadIdx.x - lane * W, h = c / F;
    double acc = 0.0;
    if (lane < lanes)
        for (int64_t j = lo + lane; j < hi; j += lanes)
            acc += da_term(j, c, H, W, h, src, dst, slope, x, ds);
    lane_sum[threadIdx.x] = acc;
    __syncthreads();
    if ((int64_t)threadIdx.x < W) {
        double t = 0.0;
        for (int64_t l = 0; l < lanes; l++) t += lane_sum[l * W + threadIdx.x];
        part[b * W + threadIdx.x] = t;
    }
}

__global__ void gatv2_da_sum_kernel(int64_t W, const double *__restrict__ part,
                                    float *__restrict__ da)
{
    const int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= W) return;
    double t = 0.0;
    for (int b = 0; b < GATV2_CUDA_PARTS; b++) t += part[b * W + c];
    da[c] = (float)t;
}

static int launched(const gnn_aggr_call_t *call, const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return gatv2_fail(call, "gatv2 CUDA %s: %s", what, cudaGetErrorString(e));
    return 0;
}

extern "C" GATV2_HIDDEN int gatv2_cuda_score(const gnn_aggr_call_t *call, const float *x, float *s)
{
    if (gatv2_check(call, "CUDA score")) return 1;
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = call->heads, F = call->f;
    if (e->slots == 0) return 0;
    gatv2_score_kernel<<<blocks_for(e->slots * H), THREADS, 0, (cudaStream_t)call->stream>>>(
        e->slots, H, F, e->src, e->dst, call->params, call->negative_slope, x, s);
    return launched(call, "score");
}

extern "C" GATV2_HIDDEN int gatv2_cuda_score_backward(const gnn_aggr_call_t *call,
                                                      const float *x, const float *ds, float *dx)
{
    if (gatv2_check(call, "CUDA score backward")) return 1;
    if (!call->dparams)
        return gatv2_fail(call, "gatv2 CUDA score backward: no parameter gradients");
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = call->heads, F = call->f, W = H * F;
    cudaStream_t st = (cudaStream_t)call->stream;
    if (e->n_src > 0) {
        gatv2_dx_kernel<<<blocks_for(e->n_src * W), THREADS, 0, st>>>(
            e->n_src, e->n_dst, H, F, e->indptr, e->src, e->dst, e->t_indptr, e->t_slot,
            call->params, call->negative_slope, x, ds, dx);
        if (launched(call, "score backward (dx)")) return 1;
    }
    double *part = (double *)call->workspace;
    gatv2_da_part_kernel<<<GATV2_CUDA_PARTS, THREADS, 0, st>>>(e->slots, H, F, e->src, e->dst,
                                                               call->negative_slope, x, ds, part);
    if (launched(call, "score backward (da)")) return 1;
    gatv2_da_sum_kernel<<<blocks_for(W), THREADS, 0, st>>>(W, part, call->dparams);
    return launched(call, "score backward (da sum)");
}
