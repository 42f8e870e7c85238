/*
 * Inside of the CUDA backend: its per-backend state and the operations the
 * files of the backend share (device code only: included from .cu files).
 *
 * One backend is one device with one non-blocking stream: every kernel,
 * copy, cuBLAS and cuSPARSE call of the backend is queued on it, so the
 * operations run in the order they were called and only downloads and
 * calls that return a host value wait. Scratch memory (reduction partials,
 * validation flags) comes from one grow-only device buffer and one pinned
 * host buffer per backend; a call that needs scratch may not keep it
 * across calls.
 */
#ifndef GNN_KERNELS_CUDA_BACKEND_CUDA_CUH
#define GNN_KERNELS_CUDA_BACKEND_CUDA_CUH

#include "kernels/backend_impl.h"
#include "kernels/cuda/check.cuh"
#include "kernels/cuda/spmm_cuda.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

typedef struct {
    int dev;
    cudaStream_t stream;
    cublasHandle_t cublas;
    cusparseHandle_t cusparse;
    gnn_cuda_spmm_ctx_t spmm; /* settings handed to the SpMM module */
    void *scratch;            /* device, scratch_bytes */
    size_t scratch_bytes;
    void *pinned;             /* pinned host, pinned_bytes */
    size_t pinned_bytes;
    void *blas_ws;            /* cuBLAS's workspace, the backend's own (CUBLAS_WS_BYTES) */
    void **deferred;          /* buffers freed while the stream captured work: */
    size_t n_deferred, cap_deferred; /* freed when the capture ends */
    size_t mem_base, mem_peak; /* device memory used when opened; gnn_be_mem_peak's */
} gnn_cuda_be_t;

/* cuBLAS's workspace: the same buffer captured or not, so a captured
 * product is the one queued call by call (cuBLAS's guidance for Hopper). */
#define CUBLAS_WS_BYTES ((size_t)32 << 20)

/* Whether the backend's stream is capturing work (gnn_be_capture_begin):
 * a buffer may then be neither waited for nor freed. */
static inline int gnn__cuda_capturing(const gnn_cuda_be_t *cb)
{
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(cb->stream, &st) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return st != cudaStreamCaptureStatusNone;
}

/* The backend's state, with its device made current for the calling
 * thread (the trainer calls a backend from more than one thread, and a
 * thread starts on device 0). */
static inline gnn_cuda_be_t *gnn__cuda_be(gnn_backend_t *be)
{
    gnn_cuda_be_t *cb = (gnn_cuda_be_t *)be->impl;
    int cur = -1;
    if ((cudaGetDevice(&cur) != cudaSuccess || cur != cb->dev) &&
        cudaSetDevice(cb->dev) != cudaSuccess)
        (void)cudaGetLastError(); /* the device the backend opened on fails its next call */
    return cb;
}

/* Device scratch of at least bytes (the old buffer is freed after the
 * stream's queued work). Valid until the next call of this function. */
int gnn__cuda_scratch(gnn_cuda_be_t *cb, size_t bytes, void **out);
/* Pinned host scratch of at least bytes, the same way. */
int gnn__cuda_pinned(gnn_cuda_be_t *cb, size_t bytes, void **out);

/* Host memory of bytes pinned and mapped in place (writable: its first
 * and last pages may hold other arrays), *dev its device address; nothing of the call left
 * registered on failure. Ranges may share pages or overlap (two arrays
 * side by side on the heap, one array mapped twice): each call is one
 * mapping, and gnn__cuda_unmap_host(host) ends the latest of host's. */
cudaError_t gnn__cuda_map_host(void *host, size_t bytes, void **dev);
void gnn__cuda_unmap_host(void *host);
/* cudaMemcpyAsync of bytes between host and device memory (kind
 * cudaMemcpyHostToDevice or cudaMemcpyDeviceToHost) on st, in pieces that
 * each lie wholly inside one region the host mappings registered or wholly
 * outside them all: the driver refuses a copy whose host range is partly
 * registered (a mapping pins whole pages, which an array beside the mapped
 * one may start or end on). *pinned (or NULL): whether a piece lay inside a
 * region, its copy then running later rather than staged (also on
 * failure, for the pieces queued before it). Registrations made by other
 * code are known by the range this process asked to map, not their own;
 * a map on another thread during the copy is not seen by its pieces. */
cudaError_t gnn__cuda_copy_host(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t st, int *pinned);
/* gnn__cuda_copy_host of bytes from host src to device dst on st, src free
 * for the caller to reuse once this returns: a copy from pageable memory
 * has been staged by then, and one from a page that a host mapping pinned
 * (an array sharing a page with a mapped one, pinned without its owner
 * knowing) is waited for. */
cudaError_t gnn__cuda_upload(void *dst, const void *src, size_t bytes, cudaStream_t st);

/* cudaMalloc on the current device (bytes 0: one byte) which, on running
 * out, hands what the stream-ordered pool keeps back to the driver (a wait
 * for the device) and tries again; *p NULL and the error cleared on
 * failure. */
cudaError_t gnn__cuda_malloc(void **p, size_t bytes);

/* Device sampling (sample_cuda.cu). */
int gnn__cuda_sampler_prepare(gnn_backend_t *be, gnn_bsampler_t *s);
int gnn__cuda_sampler_resize(gnn_backend_t *be, gnn_bsampler_t *s);
void gnn__cuda_sampler_release(gnn_backend_t *be, gnn_bsampler_t *s);
int gnn__cuda_sampler_download(gnn_backend_t *be, gnn_bsampler_t *s, void *dst, const void *src,
                               size_t bytes);
int gnn__cuda_sampler_download_n(gnn_backend_t *be, gnn_bsampler_t *s, int n, void *const *dst,
                                 const void *const *src, const size_t *bytes);
int gnn__cuda_sample(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                     uint64_t key, const gnn_bexcl_t *x, gnn_bbatch_t *b);
/* The sampler's own stream (a cudaStream_t). */
void *gnn__cuda_sampler_stream(const gnn_bsampler_t *s);
/* gnn_be_batch_release: an event after the backend stream's queued work,
 * which the next fill of b waits for on the sampler's stream. */
int gnn__cuda_batch_release(gnn_backend_t *be, gnn_bbatch_t *b);
void gnn__cuda_batch_fence_free(gnn_backend_t *be, void *fence);

/* Graph attention (attn_cuda.cu): the built-in gat's score entry points,
 * the fused softmax and aggregation and its backward, ELU. */
int gnn__cuda_gat_score(const gnn_aggr_call_t *call, const float *x, float *s);
int gnn__cuda_gat_score_backward(const gnn_aggr_call_t *call, const float *x, const float *ds,
                                 float *dx);
int gnn__cuda_attn_forward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                           const gnn_attn_opts_t *o, const float *x, float *s, float *y);
int gnn__cuda_attn_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                            const gnn_attn_opts_t *o, const float *x, const float *alpha,
                            const float *y, const float *dy, float *dx, float *ds);
int gnn__cuda_elu(gnn_backend_t *be, int64_t n, const float *x, float *y);
int gnn__cuda_elu_backward(gnn_backend_t *be, int64_t n, const float *y, const float *dy,
                           float *dx);

/* Dense operations (dense_cuda.cu), with the ops-table signatures. */
int gnn__cuda_bias_add(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias);
int gnn__cuda_bias_grad(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy,
                        float *dbias);
int gnn__cuda_softmax_xent_async(gnn_backend_t *be, int64_t rows, int64_t classes,
                                 const float *logits, const int64_t *labels, const int64_t *idx,
                                 int64_t nidx, double *loss_dev, float *dlogits);
int gnn__cuda_gather_rows_cached(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                                 const int32_t *slot, const float *src, const int64_t *idx,
                                 float *dst);
int gnn__cuda_bias_act(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias,
                       int act);
int gnn__cuda_bias_act_drop(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                            const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                            const int64_t *row_id);
int gnn__cuda_relu_drop_backward(gnn_backend_t *be, int64_t n, float p, const float *y,
                                 const float *dy, float *dx);
int gnn__cuda_relu(gnn_backend_t *be, int64_t n, const float *x, float *y);
int gnn__cuda_relu_backward(gnn_backend_t *be, int64_t n, const float *xy, const float *dy,
                            float *dx);
int gnn__cuda_dropout(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                      const float *x, float *y);
int gnn__cuda_dropout_backward(gnn_backend_t *be, int64_t n, float p, uint64_t seed,
                               uint64_t offset, const float *dy, float *dx);
int gnn__cuda_dropout_rows(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id,
                           float p, uint64_t seed, uint64_t offset, const float *x, float *y);
int gnn__cuda_axpby(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta,
                    float *y);
int gnn__cuda_gather_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src,
                          int64_t src_rows, const int64_t *idx, float *dst);
int gnn__cuda_softmax_xent(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                           const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                           float *dlogits);
int gnn__cuda_adam(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                   const gnn_adam_opts_t *o, int64_t step);
int gnn__cuda_sparse_opt_step(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                              const int64_t *rows, int64_t table_rows, const float *g,
                              int64_t ldg, float *w, float *s1, float *s2, int64_t step);
int gnn__cuda_copy_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                        int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd);
int gnn__cuda_scatter_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                           const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows);
int gnn__cuda_count_correct(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                            const int64_t *labels, const int64_t *idx, int64_t nidx,
                            int64_t *correct);
int gnn__cuda_argmax_rows(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                          int64_t *out);

/* Sparse input features (spfeat_cuda.cu). */
int gnn__cuda_sparse_prepare(gnn_backend_t *be, gnn_bsparse_t *s);
void gnn__cuda_sparse_release(gnn_backend_t *be, gnn_bsparse_t *s);
int gnn__cuda_sparse_dropout(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                             uint64_t offset, const int64_t *row_id, float *vals);
int gnn__cuda_sparse_mm(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                        const float *w, int64_t f, float *t);
int gnn__cuda_sparse_mm_t(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals,
                          int64_t n, const float *dt, int64_t f, float *dw);

#endif
