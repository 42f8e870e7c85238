/*
 * The compute backend: the only interface the trainer uses to run a model.
 *
 * A backend owns a device (the CPU, or one CUDA GPU) and runs every
 * operation of a GNN layer on buffers that live there: dense row-major
 * float32 matrices, int64 index and label arrays, and graphs prepared once
 * for aggregation. Buffers come from gnn_be_alloc and move to and from host
 * memory only through gnn_be_upload / gnn_be_download, so the same model
 * code runs on either device. Nothing here reads files or talks MPI.
 *
 * Semantics of each operation are those of the CPU kernels it is named
 * after (kernels/dense.h, kernels/spmm.h); every pointer argument below
 * except those marked "host" is a backend buffer. Operations are queued in
 * order on the backend (on CUDA: one stream); a download, a call that
 * returns a host value (loss, correct count) and gnn_be_sync wait for the
 * work before them. Every function returns 0 or a negative GNN_E* code
 * with a recorded message.
 *
 * Aggregation goes through the aggregator registry (kernels/aggr.h): the
 * built-ins and plug-ins run alike, with the CPU or CUDA entry points of
 * the definition according to the backend.
 */
#ifndef GNN_KERNELS_BACKEND_H
#define GNN_KERNELS_BACKEND_H

#include "graph/csr.h"
#include "kernels/aggr.h"
#include "kernels/attn.h"
#include "kernels/dense.h"
#include "kernels/spfeat.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { GNN_BACKEND_CPU = 0, GNN_BACKEND_CUDA = 1 } gnn_backend_kind_t;

typedef struct gnn_backend gnn_backend_t;
/* A graph prepared on a backend (degrees, transpose, scale factors). */
typedef struct gnn_bgraph gnn_bgraph_t;

/*
 * Open the backend called name: "cpu", "cuda" (device 0), "cuda:N", or
 * "auto" (CUDA when a device is present and this build has CUDA, else
 * CPU). "cpu-as-gpu" is the CPU backend whose buffers callers must treat
 * as a device's (gnn_be_host_memory gives 0): every array goes through
 * upload and download as it would for a GPU, and an operation given a
 * pointer outside its buffers fails (GNN_EINVAL, "...: X is not a buffer
 * of cpu-as-gpu"), which tests those paths on a machine without one. Errors: GNN_EINVAL for an unknown name (message
 * lists the valid ones), GNN_ENODEV for "cuda" without a usable device or
 * in a build without CUDA (message says which), GNN_ENOMEM.
 */
int gnn_backend_open(const char *name, gnn_backend_t **out);
/* Release the backend; buffers and graphs must have been freed. NULL ok. */
void gnn_backend_close(gnn_backend_t *be);
gnn_backend_kind_t gnn_backend_kind(const gnn_backend_t *be);
/* 1 when backend buffers are plain host memory (the CPU backend, not
 * cpu-as-gpu): host arrays may then be passed wherever a backend buffer is
 * only read. */
int gnn_be_host_memory(const gnn_backend_t *be);
/* "cpu (T OpenMP threads)" or "cuda:N (device name, memory)". */
const char *gnn_backend_describe(const gnn_backend_t *be);
/* CUDA devices this build can use on this machine (0 without CUDA). */
int gnn_backend_device_count(void);
/* The device number of a CUDA backend (-1 on the CPU), and the stream its
 * work is queued on (a cudaStream_t; NULL on the CPU): for libraries that
 * must queue work in order with the backend's, such as NCCL. */
int gnn_be_device(const gnn_backend_t *be);
void *gnn_be_stream(const gnn_backend_t *be);

/* ---- SpMM implementation ------------------------------------------------- */

/*
 * Which SpMM runs the built-in aggregators on a CUDA backend:
 *   auto      on first use of a (graph, width, aggregator, direction), time
 *             each candidate once and keep the fastest for later calls;
 *             when deterministic, time nothing and take balanced for a
 *             graph whose longest row is far past the mean, else rowcache
 *             (the same choice, so the same bits, in every run);
 *   cusparse  cuSPARSE generic SpMM (CSR, row-major dense; ALG2); when
 *             deterministic, the own kernel auto would take (cuSPARSE's
 *             ALG3 was seen to give different bits from run to run);
 *   rowcache  one warp per row, the row's column ids staged in shared
 *             memory, vectorised feature loads;
 *   balanced  the nonzeros split evenly over warps (merge path), hub rows
 *             shared by several warps and combined in a fixed order.
 * max (a selection, which cuSPARSE lacks) has rowcache and balanced
 * kernels, forward and backward: with cusparse forced it runs rowcache,
 * and auto times rowcache against balanced only. The CPU backend has one
 * SpMM (kernels/spmm.h) and takes auto only.
 */
typedef enum {
    GNN_SPMM_AUTO = 0,
    GNN_SPMM_CUSPARSE = 1,
    GNN_SPMM_ROWCACHE = 2,
    GNN_SPMM_BALANCED = 3,
    GNN_SPMM_COUNT_ = 4
} gnn_spmm_impl_t;

/* "auto", "cusparse", "rowcache", "balanced"; "?" outside the enum. */
const char *gnn_spmm_impl_name(gnn_spmm_impl_t impl);
/* Parse one of those names. 0 or GNN_EINVAL (message lists the names). */
int gnn_spmm_impl_from_name(const char *name, gnn_spmm_impl_t *out);
/*
 * Use impl for the built-in aggregators from now on, and (deterministic
 * != 0) only implementations whose results are bitwise the same from run
 * to run. Clears the choices auto made so far. GNN_EUNSUPPORTED for an
 * impl other than auto on the CPU backend (whose SpMM is deterministic).
 */
int gnn_be_set_spmm(gnn_backend_t *be, gnn_spmm_impl_t impl, int deterministic);
/*
 * on != 0: the GEMMs from now on on TF32 tensor cores (each product's
 * operands rounded to 10-bit mantissas, the sums in FP32); 0: full FP32,
 * the default. GNN_EUNSUPPORTED for on != 0 on a backend without it (the
 * CPU's).
 */
int gnn_be_set_tf32(gnn_backend_t *be, int on);
/*
 * The implementation the built-in aggregator aggr (kernels/spmm.h enum)
 * runs with on g at width f, forward (backward == 0) or backward: the
 * forced one (rowcache for max when cusparse is forced), or auto's choice
 * once it has been made; GNN_SPMM_AUTO when auto has not chosen yet, and
 * on the CPU backend.
 */
int gnn_be_spmm_choice(gnn_backend_t *be, const gnn_bgraph_t *g, int aggr, int64_t f, int backward,
                       gnn_spmm_impl_t *out);

/* ---- Memory --------------------------------------------------------------- */

/* A buffer of bytes (64-byte aligned; bytes == 0 gives a valid unique
 * pointer). GNN_ENOMEM (or GNN_ECUDA) on failure, *out = NULL. */
int gnn_be_alloc(gnn_backend_t *be, size_t bytes, void **out);
/* Free a buffer from gnn_be_alloc; NULL is a no-op. */
void gnn_be_free(gnn_backend_t *be, void *p);
/* dst (backend) <- src (host). From pageable memory src may be reused on
 * return; from gnn_be_host_alloc's (pinned on a GPU) the copy may still
 * be queued: src stays unchanged until the backend has passed it
 * (gnn_be_sync, or any gnn_be_download after it, which waits). */
int gnn_be_upload(gnn_backend_t *be, void *dst, const void *src_host, size_t bytes);
/*
 * Move a host buffer of bytes onto the backend: *out receives a backend
 * buffer with its contents and *host is freed and set to NULL. The CPU
 * backend adopts the memory itself (no copy, no second copy at peak); the
 * buffer then has malloc's alignment, not 64 bytes. *host must come from
 * gnn_malloc & co. On failure *host is left as it was.
 */
int gnn_be_upload_take(gnn_backend_t *be, void **host, size_t bytes, void **out);
/* Host memory for staging copies to and from the backend: pinned on a
 * GPU (cudaMallocHost: copies at the bus's full speed), plain memory on
 * the CPU; free with gnn_be_host_free (NULL ok). GNN_ENOMEM on failure,
 * *out NULL. */
int gnn_be_host_alloc(gnn_backend_t *be, size_t bytes, void **out);
void gnn_be_host_free(gnn_backend_t *be, void *p);
/*
 * The host array host (bytes) read by the backend in place: *dev is an
 * address its operations take as a buffer that may only be read, valid
 * until gnn_be_unmap_host(be, host), the array staying alive and
 * unchanged until then. On a GPU the pages are pinned and mapped
 * (cudaHostRegister): every read crosses the bus, for data too large for
 * the device. Arrays mapped may share pages or overlap (two arrays side
 * by side, one mapped twice): each call is a mapping of its own, and
 * gnn_be_unmap_host ends the latest of host's. GNN_ENOMEM / GNN_ECUDA
 * when it cannot be mapped.
 */
int gnn_be_map_host(gnn_backend_t *be, void *host, size_t bytes, void **dev);
void gnn_be_unmap_host(gnn_backend_t *be, void *host);
/* dst (host) <- src (backend); waits for queued work. */
int gnn_be_download(gnn_backend_t *be, void *dst_host, const void *src, size_t bytes);
/* dst <- src, both backend buffers (non-overlapping). */
int gnn_be_copy(gnn_backend_t *be, void *dst, const void *src, size_t bytes);
/* Set bytes of dst to zero. */
int gnn_be_zero(gnn_backend_t *be, void *dst, size_t bytes);
/* Wait for all queued work. */
int gnn_be_sync(gnn_backend_t *be);

/* ---- Dense ---------------------------------------------------------------- */

int gnn_be_gemm(gnn_backend_t *be, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc);
/* gnn_gemm_rows on a host-memory backend: A's rows gathered by the host
 * array rows from the host table a (neither a backend buffer). Whether the
 * backend has it: gnn_be_has_gemm_rows; else GNN_EUNSUPPORTED. */
int gnn_be_has_gemm_rows(const gnn_backend_t *be);
int gnn_be_gemm_rows(gnn_backend_t *be, int trans_a, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const int64_t *rows,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc);
/* gnn_gemm_pair (rows NULL, or host rows of a host table as in
 * gnn_be_gemm_rows); on a backend without it, two products. */
int gnn_be_gemm_pair(gnn_backend_t *be, int trans_a, int64_t m, int64_t m2, int64_t k,
                     const float *a, int64_t lda, const int64_t *rows, int64_t n1,
                     const float *b1, float *c1, int64_t n2, const float *b2, float *c2);
int gnn_be_bias_add(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias);
/* gnn_bias_act (kernels/dense.h): the bias and the activation act
 * (gnn_act_t) in one pass; the same values as gnn_be_bias_add and then
 * gnn_be_relu or gnn_be_elu. */
int gnn_be_bias_act(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias,
                    int act);
/* gnn_bias_act_drop and gnn_relu_drop_backward (kernels/dense.h): a
 * layer's bias and activation with the next layer's input dropout in one
 * pass, and the gradient back through both in one pass with no mask;
 * row_id a backend int64 array or NULL. */
int gnn_be_bias_act_drop(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                         const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                         const int64_t *row_id);
int gnn_be_relu_drop_backward(gnn_backend_t *be, int64_t n, float p, const float *y,
                              const float *dy, float *dx);
int gnn_be_bias_grad(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy, float *dbias);
int gnn_be_relu(gnn_backend_t *be, int64_t n, const float *x, float *y);
int gnn_be_relu_backward(gnn_backend_t *be, int64_t n, const float *xy, const float *dy, float *dx);
int gnn_be_dropout(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                   const float *x, float *y);
int gnn_be_dropout_backward(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                            const float *dy, float *dx);
/* As gnn_dropout_rows (kernels/dense.h); row_id is a backend int64 array.
 * The same call is its own gradient. GNN_EUNSUPPORTED on a backend
 * without it. */
int gnn_be_dropout_rows(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id, float p,
                        uint64_t seed, uint64_t offset, const float *x, float *y);
/* y[i] = alpha * x[i] + beta * y[i] (beta == 0: y not read). */
int gnn_be_axpby(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta, float *y);
/* dst[i][:] = src[idx[i]][:] for i < n, rows of width f; idx (backend,
 * int64) entries must lie in [0, src_rows) (GNN_EINVAL otherwise, naming
 * the first bad entry). */
int gnn_be_gather_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t src_rows,
                       const int64_t *idx, float *dst);
/* gnn_gather_rows_cached (kernels/dense.h): cache (rows x f), slot (int32
 * per row of src), src, idx, dst all backend buffers (src may be host
 * memory mapped by gnn_be_map_host: the cache keeps the rows read most
 * on the device). */
int gnn_be_gather_rows_cached(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                              const int32_t *slot, const float *src, const int64_t *idx,
                              float *dst);
/* labels, idx: backend int64 arrays; *loss (host) as gnn_softmax_xent. */
int gnn_be_softmax_xent(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                        const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                        float *dlogits);
/* The same loss and gradient queued without waiting for them: the mean
 * loss goes to loss_dev (a backend buffer of one double), there once the
 * caller downloads it. On a GPU the labels and idx are not checked (a bad
 * entry would read outside logits): the caller checks them once with
 * gnn_be_softmax_xent. The same bits as gnn_be_softmax_xent. */
int gnn_be_softmax_xent_async(gnn_backend_t *be, int64_t rows, int64_t classes,
                              const float *logits, const int64_t *labels, const int64_t *idx,
                              int64_t nidx, double *loss_dev, float *dlogits);
int gnn_be_adam(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                const gnn_adam_opts_t *o, int64_t step);
/* *correct (host) as gnn_count_correct. */
int gnn_be_count_correct(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                         const int64_t *labels, const int64_t *idx, int64_t nidx, int64_t *correct);
/* out (backend int64, rows entries) as gnn_argmax_rows. */
int gnn_be_argmax_rows(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                       int64_t *out);

/* ---- Graphs and aggregation ---------------------------------------------- */

/*
 * Prepare the in-edge CSR csr (host memory) for aggregation on be. The CPU
 * backend borrows csr (it must outlive the graph, unchanged); CUDA copies
 * it. Errors as gnn_spmm_graph_create.
 */
int gnn_be_graph_create(gnn_backend_t *be, const gnn_csr_t *csr, gnn_bgraph_t **out);
/*
 * The same, with the gcn aggregator's source scales (outdeg(u)+1)^-1/2
 * taken from src_deg (host, one entry >= 0 per source: its out-degree in
 * the whole graph the block was cut from) instead of the block's own
 * out-degrees (NULL). On a block holding all in-neighbours of its
 * destinations this makes gcn compute, for those rows, what it computes on
 * the whole graph, however the destinations are batched.
 */
int gnn_be_graph_create_src_deg(gnn_backend_t *be, const gnn_csr_t *csr, const int64_t *src_deg,
                                gnn_bgraph_t **out);
/*
 * The same in two steps, so that the host's share of the work can run off
 * the thread that drives the backend (a mini-batch loader's workers):
 * gnn_be_graph_stage does everything that needs no backend (degrees,
 * transpose, scale factors, and with attn_layout 0 or 1 the attention slot
 * layout without or with self loops; -1: none) and may run on any thread,
 * several at once; gnn_be_graph_place then puts the staged graph on be
 * (the copies to the device), once: placing it again on be does nothing,
 * on another backend is GNN_EINVAL. A graph serves operations only once
 * placed (GNN_EINVAL before: "... staged, not placed"); a staged graph
 * is freed with gnn_be_graph_free either way. csr is borrowed as by
 * gnn_be_graph_create on the CPU. Errors as gnn_be_graph_create_src_deg;
 * GNN_EINVAL for another attn_layout.
 */
int gnn_be_graph_stage(const gnn_csr_t *csr, const int64_t *src_deg, int attn_layout,
                       gnn_bgraph_t **out);
int gnn_be_graph_place(gnn_backend_t *be, gnn_bgraph_t *g);
void gnn_be_graph_free(gnn_bgraph_t *g);
/* Attach a caller's data to g (what a layer kind needs beside the CSR,
 * such as the relations of a typed graph), freed with user_free (when not
 * NULL) when g is freed or another is attached; gnn_bgraph_attached gives
 * it back (NULL: none). */
void gnn_be_graph_attach(gnn_bgraph_t *g, void *user, void (*user_free)(void *));
void *gnn_bgraph_attached(const gnn_bgraph_t *g);
/* Shape of a prepared graph. */
int64_t gnn_bgraph_n_dst(const gnn_bgraph_t *g);
int64_t gnn_bgraph_n_src(const gnn_bgraph_t *g);
int64_t gnn_bgraph_nnz(const gnn_bgraph_t *g);

/* Workspace bytes of def on g at width f (0 when it needs none). */
int gnn_be_aggr_workspace(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          int64_t f, size_t *bytes);
/*
 * y = def(x) on g (x: n_src x f, y: n_dst x f), and its backward dx from
 * dy with the x, y and workspace of the forward. ws is a backend buffer of
 * at least gnn_be_aggr_workspace bytes (NULL when 0). GNN_EUNSUPPORTED when
 * def has no entry point for this backend; GNN_EPLUGIN when a plug-in entry
 * point fails (message: "aggregator NAME forward: <its message>").
 */
int gnn_be_aggr_forward(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                        int64_t f, const float *x, float *y, void *ws, size_t ws_bytes);
int gnn_be_aggr_backward(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                         int64_t f, const float *x, const float *y, const float *dy, float *dx,
                         void *ws, size_t ws_bytes);
/*
 * The same for an aggregator with learnable parameters (version 2,
 * gnn_aggr_params for dims {1, f}): params (backend buffer) are its
 * tensors, and the backward also overwrites dparams with their gradients.
 * The plain calls above refuse such an aggregator (GNN_EINVAL "aggregator
 * NAME has learnable parameters"); these take params NULL for one without.
 */
int gnn_be_aggr_forward_p(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          int64_t f, const float *params, const float *x, float *y, void *ws,
                          size_t ws_bytes);
int gnn_be_aggr_backward_p(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                           int64_t f, const float *params, const float *x, const float *y,
                           const float *dy, float *dx, float *dparams, void *ws, size_t ws_bytes);

/* ---- Sparse input features ----------------------------------------------- */

/*
 * A sparse rows x cols matrix with values (a->weights) on the backend, for
 * the first layer of a model whose input features are mostly zeros
 * (kernels/spfeat.h gives the semantics). The CPU backend borrows a.
 */
typedef struct gnn_bsparse gnn_bsparse_t;
int gnn_be_sparse_create(gnn_backend_t *be, const gnn_csr_t *a, gnn_bsparse_t **out);
/* The same from the host preparation of a made beforehand (gnn_spfeat_create,
 * on any thread: a batch's rows prepared by a sampler's thread), which the
 * matrix takes over: freed with it, or here on failure. */
int gnn_be_sparse_adopt(gnn_backend_t *be, gnn_spfeat_t *host, gnn_bsparse_t **out);
void gnn_be_sparse_free(gnn_bsparse_t *s);
int64_t gnn_bsparse_rows(const gnn_bsparse_t *s);
int64_t gnn_bsparse_cols(const gnn_bsparse_t *s);
int64_t gnn_bsparse_nnz(const gnn_bsparse_t *s);
/* vals (backend, nnz floats) = the values after dropout with the counters
 * of the dense matrix: entry (r, c) uses offset + id * cols + c, id =
 * row_id[r] (backend memory, one per row) or r where row_id is NULL. */
int gnn_be_sparse_dropout(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                          uint64_t offset, const int64_t *row_id, float *vals);
/* t = D[:n] w (w: cols x f, t: n x f), D = (structure of s, vals), n at
 * most the rows of s. */
int gnn_be_sparse_mm(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                     const float *w, int64_t f, float *t);
/* dw = D[:n]^T dt (dt: n x f, dw: cols x f, overwritten). */
int gnn_be_sparse_mm_t(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                       const float *dt, int64_t f, float *dw);

/*
 * Graph attention on a prepared graph (kernels/attn.h states the slots,
 * the operations and the dropout counters; o->self_loop picks the slot
 * layout, the first call with each prepares it, on the host, or on the
 * device for a graph made there from a device batch, and keeps it with
 * g). Per-edge arrays are gnn_be_attn_slots(g, o->self_loop) x heads.
 * o->ids, when set, is a backend buffer (n_src int64: a batch's node
 * ids). GNN_EUNSUPPORTED on a backend without them.
 */
int64_t gnn_be_attn_slots(const gnn_bgraph_t *g, int self_loop);
/*
 * The score of an attention function def (kind GNN_AGGR_KIND_ATTENTION;
 * kernels/gnn_aggr_plugin.h) on g: s (slots x o->heads) from x (n_src x
 * heads * o->f), with its parameters params (gnn_aggr_params for dims
 * {heads, f}; NULL when it has none) and a workspace of
 * gnn_be_attn_workspace bytes that the backward after it gets too. The
 * backward adds the gradient of x into dx and overwrites dparams. A score
 * reads each destination's own row of x (the destinations are the first
 * n_dst sources): GNN_EINVAL for a graph with n_dst > n_src. Errors as
 * for aggregators: GNN_EUNSUPPORTED when def has no entry point for this
 * device, GNN_EPLUGIN with the plug-in's message.
 */
/* 0 when be runs def both ways (an aggregator's forward and backward, an
 * attention function's score and its backward), else GNN_EUNSUPPORTED
 * naming what is missing (a plug-in built without the device's entry
 * points). */
int gnn_be_aggr_runs(gnn_backend_t *be, const gnn_aggr_def_t *def);
int gnn_be_attn_workspace(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          const gnn_attn_opts_t *o, size_t *bytes);
int gnn_be_attn_score(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                      const gnn_attn_opts_t *o, const float *params, const float *x, float *s,
                      void *ws, size_t ws_bytes);
int gnn_be_attn_score_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                               const gnn_attn_opts_t *o, const float *params, const float *x,
                               const float *ds, float *dx, float *dparams, void *ws,
                               size_t ws_bytes);
int gnn_be_attn_forward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_opts_t *o,
                        const float *x, float *s, float *y);
int gnn_be_attn_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_opts_t *o,
                         const float *x, const float *alpha, const float *y, const float *dy,
                         float *dx, float *ds);
/* One row-sparse optimiser step on a learnable table (gnn_sparse_opt_step,
 * kernels/dense.h): rows (backend int64, or NULL for 0 .. n - 1), g, w,
 * s1, s2 backend buffers. */
int gnn_be_sparse_opt_step(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                           const int64_t *rows, int64_t table_rows, const float *g, int64_t ldg,
                           float *w, float *s1, float *s2, int64_t step);
/* Rows between strided matrices (gnn_copy_rows): idx backend int64 or
 * NULL. */
int gnn_be_copy_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                     int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd);
/* Rows put at rows idx (backend int64, distinct) of dst (gnn_scatter_rows). */
int gnn_be_scatter_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                        const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows);
/* Bytes the backend could still allocate: free device memory on CUDA, the
 * kernel's MemAvailable on the CPU (physical pages free when it has none). */
int gnn_be_mem_available(gnn_backend_t *be, size_t *bytes);
/* The most device memory the backend has held since it opened, beyond what
 * its device held then (the CUDA context, the libraries' handles): on CUDA
 * the device's used memory at this call and every earlier one, with the
 * stream-ordered pool's own high-water mark between calls (device-wide:
 * right where the process has the GPU to itself); on cpu-as-gpu the
 * buffers of gnn_be_alloc. GNN_EUNSUPPORTED on the CPU (host memory). */
int gnn_be_mem_peak(gnn_backend_t *be, size_t *bytes);
/* ELU and its backward from the output (kernels/dense.h). */
int gnn_be_elu(gnn_backend_t *be, int64_t n, const float *x, float *y);
int gnn_be_elu_backward(gnn_backend_t *be, int64_t n, const float *y, const float *dy, float *dx);

/* ---- Sampling on the device --------------------------------------------- */

/*
 * The uniform neighbour sampler of sampler/sampler.h, run where the
 * backend runs: the graph's in-edge CSR is copied there once when it fits
 * (the CPU backend borrows it: it must outlive the sampler, unchanged;
 * see gnn_be_sampler_create_at for a GPU), and each
 * batch's blocks and node list come out in backend buffers, equal entry
 * for entry to what gnn_sampler_sample builds from the same graph,
 * fanouts, seeds and (seed, epoch, batch): the same draws (graph/base/
 * draw.h), local ids in order of first appearance, rows sorted. Draws
 * keyed by node id (or by key ids: gnn_be_sampler_set_key_ids), every
 * row held, excluded edges as gnn_sampler_sample_excluding leaves them
 * out (gnn_be_sample_excluding), typed draws per relation as
 * gnn_sampler_set_relations makes them (gnn_be_sampler_set_relations). A hop runs as data-parallel steps (row
 * counts, their prefix sum, the draws, the first appearance of each new
 * source, its prefix sum, the new ids, the relabelling, a sort per row)
 * over an array of the graph's nodes (12 bytes a node); it reads back two
 * counts a hop. Graphs of fewer than 2^31 nodes.
 */
typedef struct gnn_bsampler gnn_bsampler_t;

#define GNN_BE_SAMPLE_MAX_LAYERS 16

/* A sampled batch in backend buffers: block l (0 = the input layer, as in
 * gnn_minibatch_t) is an n_dst[l] x n_src[l] CSR (indptr[l], indices[l]:
 * local source ids, rows ascending) whose sources are nodes[0, n_src[l]).
 * The buffers belong to the batch, which keeps them for the next call
 * that fills it (grown as needed): zero it before its first use, free it
 * with gnn_be_batch_free. */
typedef struct {
    int layers;
    int64_t n_seeds, n_input;
    int64_t *nodes; /* n_input global ids: seeds first, then by hop */
    int64_t n_dst[GNN_BE_SAMPLE_MAX_LAYERS], n_src[GNN_BE_SAMPLE_MAX_LAYERS];
    int64_t nnz[GNN_BE_SAMPLE_MAX_LAYERS];
    int64_t *indptr[GNN_BE_SAMPLE_MAX_LAYERS], *indices[GNN_BE_SAMPLE_MAX_LAYERS];
    int32_t *etype[GNN_BE_SAMPLE_MAX_LAYERS]; /* typed draws: each entry's relation (rows
                                                 sorted by (source, relation)); else unset */
    size_t cap_nodes, cap_indptr[GNN_BE_SAMPLE_MAX_LAYERS], cap_indices[GNN_BE_SAMPLE_MAX_LAYERS];
    size_t cap_etype[GNN_BE_SAMPLE_MAX_LAYERS];
    int typed;         /* etype is set */
    unsigned flags;    /* the blocks' CSR flags, as the host sampler's */
    gnn_backend_t *be; /* where the buffers live (set by the first fill) */
    void *fence;       /* gnn_be_batch_release's mark (a GPU's event), and */
    int fenced;        /* ... whether the next fill must wait for it */
} gnn_bbatch_t;

/* A sampler of layers hops (fanouts as gnn_sampler_create: nearest hop
 * first, -1 for all) over graph, a square in-edge CSR of fewer than 2^31
 * nodes. Errors: GNN_EINVAL (named: a NULL argument, a non-square or too
 * large graph, a layer count or fanout out of range), GNN_EUNSUPPORTED on
 * a backend without it, GNN_ENOMEM / GNN_ECUDA. */
int gnn_be_sampler_create(gnn_backend_t *be, const gnn_csr_t *graph, int layers,
                          const int *fanouts, gnn_bsampler_t **out);
/* The same choosing where a GPU's sampler reads the graph: 0 as above
 * (device memory when the CSR fits in half the free memory, else the
 * host's arrays in place, pinned and mapped for the sampler's life: read
 * over the bus, which must then outlive the sampler, unchanged), 1 device
 * memory, 2 host memory. The CPU backend ignores it. */
int gnn_be_sampler_create_at(gnn_backend_t *be, const gnn_csr_t *graph, int layers,
                             const int *fanouts, int where, gnn_bsampler_t **out);
/* Sampling once (sampler/sampler.h, gnn_sampler_set_once): a node's
 * neighbours drawn at the hop that reaches it, kept by every later block;
 * the batches of a host sampler set so, entry for entry (a hop copies the
 * rows of the hop before from its block and draws only the new ones).
 * GNN_EINVAL for a NULL sampler. */
int gnn_be_sampler_set_once(gnn_bsampler_t *s, int on);
/* bytes of src (a buffer of a batch s filled) into host memory dst, on
 * s's work queue: on a GPU on the sampler's stream, so the copy waits for
 * the sampling only, not for the backend's queued work (a thread sampling
 * ahead reads a batch's node ids while another trains). GNN_EINVAL for a
 * NULL argument; GNN_ECUDA. */
int gnn_be_sampler_download(gnn_bsampler_t *s, void *dst, const void *src, size_t bytes);
/* The n copies bytes[i] of src[i] (buffers of batches s filled) into host
 * memory dst[i] the same way, waited for once (a batch's blocks read back
 * in one wait). GNN_EINVAL for a NULL argument or n < 0; GNN_ECUDA. */
int gnn_be_sampler_download_n(gnn_bsampler_t *s, int n, void *const *dst, const void *const *src,
                              const size_t *bytes);
/* Key ids (sampler/sampler.h, gnn_sampler_set_key_ids): the draws of
 * node v come from the stream of ids[v] instead of v, so that a part of a
 * graph whose nodes carry their graph-wide ids, rows in the graph's order,
 * draws what the whole graph's sampler draws. ids: graph->n_rows
 * non-negative host entries, copied to the backend (NULL: by node id
 * again). GNN_EINVAL for a NULL sampler or a negative id (named);
 * GNN_ENOMEM / GNN_ECUDA. */
int gnn_be_sampler_set_key_ids(gnn_bsampler_t *s, const int64_t *ids);
/* Typed draws (sampler/sampler.h, gnn_sampler_set_relations): etype[e]
 * (host, graph->nnz entries) the relation of entry e, in [0, n_rels),
 * n_rels 1 to 256, every row's entries grouped by relation in ascending
 * order; copied to the backend (4 bytes an edge; on a GPU in its memory,
 * or read in place from etype, pinned and mapped, where the sampler reads
 * the graph from host memory: etype must then outlive the sampler).
 * Each hop then draws per relation of a row, and the batch's blocks carry
 * every entry's relation (gnn_bbatch_t.etype), their rows sorted by
 * (source, relation): the host sampler's batches entry for entry. NULL:
 * untyped again. GNN_EINVAL (named: a relation out of range, a row not
 * grouped), GNN_ENOMEM / GNN_ECUDA. */
int gnn_be_sampler_set_relations(gnn_bsampler_t *s, const int32_t *etype, int n_rels);
/*
 * Remote rows (sampler/sampler.h, gnn_sampler_set_remote): only rows
 * [0, n_held) of the graph are held here, and node ids range over
 * [0, n_ids) (n_ids at least the graph's nodes: a part's nodes, then
 * nodes beyond it, as seeds or as the holders' answers; the sampler's
 * per-node arrays grow to n_ids, 12 bytes a node). Each hop's new rows
 * are then read back to the host (hop 0's are the seeds), checked, and
 * from hop first_hop on the sampler hands the hook (draw,
 * ctx: gnn_sampler_remote_t's contract, called by the sampling thread)
 * those beyond n_held in frontier order, n = 0 included, and the draws
 * it answers (and their relations, typed) go up into the hop's rows;
 * before first_hop such a row fails the batch with GNN_EINVAL. Rows held
 * elsewhere with excluded edges fail with GNN_EUNSUPPORTED unless
 * excludes (the holders leave them out). A failure of the batch is passed
 * to the hook as the host sampler passes it (n < 0 at the next exchange),
 * so processes sampling in step stop at the same hop. The batches are the
 * host sampler's with the same hook, entry for entry. r NULL: every row
 * held again. GNN_EINVAL (named: a NULL sampler or hook, n_held outside
 * [0, the graph's nodes], n_ids below them or above 2^31 - 2, first_hop
 * negative), GNN_ENOMEM / GNN_ECUDA.
 */
typedef struct {
    int64_t n_held;  /* rows held here: [0, n_held) */
    int64_t n_ids;   /* node ids below it */
    int first_hop;   /* the first hop that calls the hook */
    int excludes;    /* the holders leave a batch's excluded edges out */
    int (*draw)(void *ctx, int h, int fanout, uint64_t key, const int64_t *v, int64_t n,
                int64_t *cnt, int64_t **src, int32_t **rel);
    void *ctx;
} gnn_be_remote_t;
int gnn_be_sampler_set_remote(gnn_bsampler_t *s, const gnn_be_remote_t *r);
/* Where the sampler reads the graph: 1 device memory, 2 host memory (the
 * CPU backend's, or a GPU's pinned and mapped). */
int gnn_be_sampler_graph_at(const gnn_bsampler_t *s);
void gnn_be_sampler_free(gnn_bsampler_t *s);
/* The batch of the n distinct seeds (host array, global ids) under
 * (seed, epoch, batch) into *b. GNN_EINVAL for a seed outside the graph
 * (with remote rows: outside the node ids) or repeated (named with its
 * position), b filled by another backend;
 * GNN_ENOMEM / GNN_ECUDA; on failure b's counts are zero and the sampler
 * is ready for the next batch. Returns once b is complete on the device;
 * a GPU's sampler runs on a stream of its own, so one thread may sample
 * (one sampler, one call at a time) while another queues the backend's
 * work, provided b is not in use by that work while it is filled. */
int gnn_be_sample(gnn_bsampler_t *s, const int64_t *seeds, int64_t n, uint64_t seed,
                  uint64_t epoch, uint64_t batch, gnn_bbatch_t *b);
/* As gnn_be_sample, leaving out of every hop's draws the n_excl edges
 * excl[2i] - excl[2i + 1] (host array) in both directions, as
 * gnn_sampler_sample_excluding does (an edge batch's own positives): the
 * same batch entry for entry. A row with excluded sources costs a scan
 * of the row (a search per excluded source where the graph's rows are
 * sorted). GNN_EINVAL also for an end point outside the graph (named)
 * or n_excl < 0. */
int gnn_be_sample_excluding(gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                            const int64_t *excl, int64_t n_excl, uint64_t seed, uint64_t epoch,
                            uint64_t batch, gnn_bbatch_t *b);
/* ids[0, n) (a backend buffer) hold ids in [0, bound) that the caller
 * vouches for (a device batch's nodes, made by the sampler from checked
 * seeds and a checked graph): until the next call, operations reading
 * indices from within that range skip checking them on the device (on a
 * GPU such a check reads a flag back: a wait for the stream). ids NULL
 * (n 0) ends the trust. Host-side checks are kept. GNN_EINVAL for a NULL
 * backend or a negative count or bound. */
int gnn_be_trust_ids(gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound);
/* The same for a buffer of ids that lives long (a permutation the caller
 * built and checked), beside the range above: ids[0, n) of the backend
 * buffer ids, in [0, bound), trusted until the buffer is freed
 * (gnn_be_free) or trusted again (a buffer refilled each step is vouched
 * for after each upload). With distinct, the caller vouches too that no
 * id repeats (positions it built in order): gnn_be_scatter_rows then
 * skips its check of repeats, a second read-back on a GPU. Up to 40
 * buffers at a time; past that, or for n 0, the call trusts nothing and
 * later operations check the ids as usual. A no-op where buffers are host
 * memory (ids checked on the host anyway). One thread at a time.
 * GNN_EINVAL for a NULL backend or ids, or a negative count or bound. */
int gnn_be_trust_buffer(gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound,
                        int distinct);

/* The work queued so far on b's backend is the last to read b: the next
 * gnn_be_sample into b waits for it on the device, not in the caller (a
 * step that trained on b need not be waited for before b is filled
 * again, even by another thread). Without it the caller must have waited
 * for that work (gnn_be_sync). Nothing to do on a CPU backend, whose work
 * has finished when the call that queued it returns, nor on a batch never
 * filled. GNN_ECUDA. */
int gnn_be_batch_release(gnn_bbatch_t *b);
/* Free b's buffers and zero it; safe on a zeroed batch. */
void gnn_be_batch_free(gnn_bbatch_t *b);
/* Block l of b prepared for aggregation on be, as gnn_be_graph_create
 * prepares the same CSR (degrees, transpose, scale factors: on a GPU made
 * there, without a copy through the host). It reads b's buffers until
 * freed on the CPU backend: free it before b is filled again.
 * attn_layout 0 or 1 also prepares the attention slots without or with
 * self loops (as gnn_be_graph_stage; on a GPU made on the device too),
 * -1 none: attention on the graph then prepares them at its first call.
 * Errors as gnn_be_graph_create; GNN_EINVAL for a block out of range, a
 * batch of another backend or another attn_layout. */
int gnn_be_graph_create_batch(gnn_backend_t *be, const gnn_bbatch_t *b, int l, int attn_layout,
                              gnn_bgraph_t **out);
/* The same on sampler s's work queue, by the thread that samples with s
 * (ahead of the step that trains the batch while another thread drives
 * s's backend, or in that step): on a GPU on s's own stream, which it
 * leaves idle, so that the graph is ready for the backend's stream on
 * return and its build waits for the sampling only, where
 * gnn_be_graph_create_batch's waits once for the backend's queued work
 * (to read the block's longest rows); on a CPU backend as
 * gnn_be_graph_create_batch. The graph is the backend's as any other
 * (freed with gnn_be_graph_free, after the step, by any thread). */
int gnn_be_sampler_graph_create(gnn_bsampler_t *s, const gnn_bbatch_t *b, int l, int attn_layout,
                                gnn_bgraph_t **out);

/* ---- A step captured once and replayed ------------------------------------ */

/*
 * The scalars of a training step that change from one step to the next.
 * While gnn_be_set_step_scalars has set them (a backend buffer holding
 * one), the operations read them where the work runs, when it runs: every
 * dropout counter offset given to gnn_be_dropout, gnn_be_dropout_backward,
 * gnn_be_dropout_rows, gnn_be_bias_act_drop and gnn_be_sparse_dropout has
 * drop_delta added, gnn_be_attn_forward's keyed attention dropout
 * (gnn_attn_opts_t) draws with the key of position key_at + drop_delta,
 * and gnn_be_adam takes the bias corrections of the
 * step from adam_step_size and adam_bc2_sqrt (gnn_step_scalars_adam)
 * instead of from its step argument. So work captured once (below) with
 * the first step's arguments computes any later step, given that step's
 * scalars in the buffer, bit for bit as if queued anew.
 */
typedef struct {
    uint64_t drop_delta;
    float adam_step_size; /* lr / (1 - beta1^step) */
    float adam_bc2_sqrt;  /* sqrt(1 - beta2^step) */
} gnn_step_scalars_t;

/* Set (buf: a backend buffer) or clear (NULL) the step's scalars; the
 * operations queued meanwhile read buf, and keep reading it when
 * captured. GNN_EINVAL for a NULL backend or a buffer of another. */
int gnn_be_set_step_scalars(gnn_backend_t *be, const gnn_step_scalars_t *buf);
/* The Adam bias corrections of step (>= 1) under o into s, computed as
 * gnn_be_adam computes them. */
void gnn_step_scalars_adam(gnn_step_scalars_t *s, const gnn_adam_opts_t *o, int64_t step);

/*
 * Capture (CUDA graphs): the work queued on be between gnn_be_capture_begin
 * and gnn_be_capture_end is recorded, not run, and runs at each
 * gnn_be_capture_launch, on the buffers and with the arguments it was
 * queued with (pointers and sizes fixed: see gnn_be_free_generation).
 * Nothing else may use be meanwhile; an operation that waits for the
 * device or copies to host memory fails the capture. begin: GNN_EINVAL
 * when already capturing, GNN_EUNSUPPORTED on a backend without graphs
 * (the CPU), GNN_ECUDA. end always ends it (call it after begin, whatever
 * the work queued in between returned) and gives the graph, or NULL and
 * an error naming why the work could not be captured (GNN_ECUDA); be is
 * then usable as before. The graph belongs to be, freed by
 * gnn_be_capture_free (after the launches queued with it have run).
 */
typedef struct gnn_bcapture gnn_bcapture_t;
int gnn_be_capture_begin(gnn_backend_t *be);
int gnn_be_capture_end(gnn_backend_t *be, gnn_bcapture_t **out);
int gnn_be_capture_launch(gnn_backend_t *be, gnn_bcapture_t *c);
void gnn_be_capture_free(gnn_bcapture_t *c);
/*
 * A capture's rules checked where nothing can be captured, on a CPU
 * backend that takes a GPU's paths (cpu-as-gpu): the work between
 * gnn_be_capture_rules_begin and gnn_be_capture_rules_end runs as usual,
 * and the first operation in it that would fail a capture on a GPU is
 * noted (the calling thread's: another thread's work on be, such as a
 * sampler's on its own stream, is not): an allocation, a copy between
 * host and backend memory, a wait (gnn_be_sync, and the waits of
 * gnn_be_host_free and gnn_be_unmap_host), a check of ids read back from
 * the device (an operation
 * given ids no gnn_be_trust_ids or gnn_be_trust_buffer vouches for, a
 * scatter's check of repeats, a loss or count read back). end returns 0
 * when there was none, else GNN_ECUDA naming it. GNN_EUNSUPPORTED on
 * other backends, GNN_EINVAL when begun twice or ended unbegun.
 */
int gnn_be_capture_rules_begin(gnn_backend_t *be);
int gnn_be_capture_rules_end(gnn_backend_t *be);
/* A count that grows whenever a backend buffer (a caller's or the
 * backend's own scratch) is freed or moved, in any backend of the process:
 * work captured while it had one value may be launched only while it
 * still has it (no buffer it reads or writes has gone). */
uint64_t gnn_be_free_generation(void);

#ifdef __cplusplus
}
#endif

#endif
