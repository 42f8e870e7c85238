/*
 * SpMM on the GPU: the built-in aggregators (sum, mean, gcn, max) forward
 * and backward, three ways, and the selector that picks among them.
 * Internal to the CUDA backend (backend_cuda.cu is the only caller).
 *
 * Semantics are exactly those of kernels/spmm.h (the CPU kernels, the
 * reference): the same scale factors, gcn's implicit self loop, max's
 * arg-max with the first entry of a row winning ties and -1 for an empty
 * row, backward through the transpose built once per graph.
 *
 * Implementations (gnn_spmm_impl_t of kernels/backend.h):
 *   cusparse  cusparseSpMM on CSR x row-major dense, descriptors, value
 *             arrays (normalisation folded into the values) and workspace
 *             created once per graph and kept; the backward runs on the
 *             transpose's own CSR, never with opA = TRANSPOSE; CSR_ALG2.
 *             No max: max runs rowcache instead. Under `deterministic` a
 *             forced cusparse runs the own kernel auto would (below):
 *             cuSPARSE's CSR_ALG3, documented as reproducible, was seen
 *             to give different bits from run to run.
 *   rowcache  spmm_rowcache.cu: a warp per output row.
 *   balanced  spmm_balanced.cu: nonzeros split evenly over lane groups,
 *             max included.
 * With GNN_SPMM_AUTO the first call for a (aggregator, direction, width)
 * times each candidate once on the backend's stream (max: rowcache and
 * balanced) and keeps the fastest in the graph, and for graphs of the same
 * shape in the backend; later calls reuse it until the backend's settings
 * change (ctx->generation). Under `deterministic` it times nothing and
 * takes the implementation the graph's row lengths give (balanced for a
 * skewed graph, else rowcache), so that every run gives the same bits.
 */
#ifndef GNN_KERNELS_CUDA_SPMM_CUDA_H
#define GNN_KERNELS_CUDA_SPMM_CUDA_H

#include "kernels/backend.h"
#include "kernels/gnn_aggr_plugin.h"
#include "kernels/spmm.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Auto's choice for graphs of one shape (see below). */
typedef struct {
    int used;
    unsigned generation;
    int aggr, dir;
    int64_t f;
    uint32_t shape;
    gnn_spmm_impl_t impl;
} gnn_cuda_shape_choice_t;

#define GNN_CUDA_SHAPE_CHOICES 64

/* What the backend hands to every call. */
typedef struct {
    void *stream;             /* cudaStream_t of the backend */
    void *cusparse;           /* cusparseHandle_t, bound to stream */
    gnn_spmm_impl_t impl;     /* forced implementation, or GNN_SPMM_AUTO */
    int deterministic;        /* only bitwise-reproducible implementations */
    unsigned generation;      /* bumped whenever impl or deterministic change */
    int sm_count;             /* multiprocessors of the device */
    /* Auto's choices by graph shape (log2 of the nonzeros, of the mean and
     * of the longest row against the mean), shared by all graphs of the
     * backend: a mini-batch's blocks are new graphs every step, and are
     * not timed again once a block of their shape was. Written by the SpMM
     * module (the backend's one stream serialises the calls). */
    gnn_cuda_shape_choice_t shape_choice[GNN_CUDA_SHAPE_CHOICES];
    unsigned shape_next;
} gnn_cuda_spmm_ctx_t;

/* A graph on the device: CSR, transpose, scale factors, caches. */
typedef struct gnn_cuda_graph gnn_cuda_graph_t;

/*
 * Copy the host-prepared graph sg (kernels/spmm.h) to the device on
 * ctx->stream (arrays from the stream-ordered pool, the copies queued
 * there; sg may go when this returns, and only ctx->stream's work may
 * read the graph) and fill *view with the device arrays, for plug-in CUDA
 * entry points (the gnn_aggr_graph_t fields; t_* point at the forward
 * arrays when sg->t_shared). 0, GNN_ENOMEM, GNN_ECUDA; *out NULL on
 * failure with nothing left allocated.
 */
int gnn__cuda_graph_create(const gnn_cuda_spmm_ctx_t *ctx, const gnn_spmm_graph_t *sg,
                           gnn_cuda_graph_t **out, gnn_aggr_graph_t *view);
/* The same from a CSR in device memory (n_dst x n_src, unweighted, rows
 * in any order of columns): copied, transposed and scaled on the device
 * (gnn_spmm_graph_create's factors, bit for bit), one wait for the longest
 * rows. The work runs on `stream` (a cudaStream_t; NULL: ctx's), which it
 * leaves idle; the graph then serves ctx's stream, as any other. attn 0
 * or 1 also makes the attention slot layout without or with self loops
 * there (gnn__cuda_graph_attn_edges), -1 none. */
int gnn__cuda_graph_create_dev(const gnn_cuda_spmm_ctx_t *ctx, void *stream, int64_t n_dst,
                               int64_t n_src, int64_t nnz, const int64_t *indptr,
                               const int64_t *indices, int attn, gnn_cuda_graph_t **out,
                               gnn_aggr_graph_t *view);
/* The attention slots of layout k (0: without, 1: with self loops; the
 * layout of kernels/attn.h) of a graph made from device arrays, as
 * gnn_aggr_edges_t device arrays in *view (kept with g): made on g's
 * stream at the first call unless its creation made them. GNN_EINVAL for
 * a graph copied from the host (its layout is made there), GNN_ENOMEM,
 * GNN_ECUDA. */
int gnn__cuda_graph_attn_edges(gnn_cuda_graph_t *g, int k, gnn_aggr_edges_t *view);
/* Free g and everything cached in it (after the work using it). NULL ok. */
void gnn__cuda_graph_free(gnn_cuda_graph_t *g);

/*
 * y = aggr(x) (x: n_src x f, y: n_dst x f, device) on ctx->stream.
 * argmax (device, n_dst x f int32) is required for GNN_AGGR_MAX and
 * ignored otherwise. Errors as gnn_spmm_forward, plus GNN_ECUDA /
 * GNN_ECUSPARSE / GNN_ENOMEM.
 */
int gnn__cuda_spmm_forward(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                           int64_t f, const float *x, float *y, int32_t *argmax);
/* dx = backward of the forward above from dy (dx: n_src x f, overwritten). */
int gnn__cuda_spmm_backward(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                            int64_t f, const float *dy, const int32_t *argmax, float *dx);
/* The implementation used for (aggr, f, direction) under ctx: the forced
 * one (rowcache for max when cusparse is forced), the cached choice of
 * auto, or GNN_SPMM_AUTO when none yet. */
gnn_spmm_impl_t gnn__cuda_spmm_choice(const gnn_cuda_spmm_ctx_t *ctx, const gnn_cuda_graph_t *g,
                                      gnn_aggr_t aggr, int64_t f, int backward);

#ifdef __cplusplus
}
#endif

#endif
