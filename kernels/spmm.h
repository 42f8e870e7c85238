/*
 * Sparse-dense products for neighbour aggregation (SpMM), CPU backend.
 *
 * The graph is the in-edge CSR of graph/csr.h: row v lists the sources u of
 * the edges u -> v, so rows are destinations (n_dst = n_rows) and columns are
 * sources (n_src = n_cols). It may be rectangular (a sampled block: the
 * first n_dst sources are the destinations themselves, as in DGL/PyG
 * blocks). Features are dense row-major float matrices whose row stride is
 * the feature width f (1 <= f): x is n_src x f, y is n_dst x f.
 *
 * Aggregators (with w_e the edge weight, 1 when the CSR has none):
 *   sum   y[v] = sum_{e=(u->v)} w_e x[u]
 *   mean  y[v] = (1/deg(v)) sum_{e=(u->v)} w_e x[u]   deg = entries of row v
 *   gcn   y[v] = s_dst[v] (sum_{u in N(v)} s_src[u] x[u] + s_src[v] x[v])
 *         with s_dst[v] = (indeg(v)+1)^-1/2, s_src[u] = (outdeg(u)+1)^-1/2:
 *         D^-1/2 (A+I) D^-1/2 without materialising A+I. On a symmetric
 *         square graph both degrees are deg+1 and this is the GCN operator
 *         (self term x[v]/(deg(v)+1)). On a directed or rectangular graph
 *         it is DGL's norm="both" with an implicit self loop; the self term
 *         of destination v reads source row v, so gcn needs n_dst <= n_src.
 *         The I is added even when A already stores a self loop (as a
 *         literal A+I would). Edge weights are ignored; degrees count entries.
 *   max   y[v][k] = max_{u in N(v)} x[u][k], argmax[v][k] = that u (the
 *         first such entry of the row on ties); an empty row gives 0 and -1.
 *         Edge weights are ignored; argmax holds source ids, so max needs
 *         n_src <= INT32_MAX.
 * Empty rows give 0 for every aggregator.
 *
 * Backward passes compute dx = dL/dx from dy = dL/dy, overwriting dx. They
 * run as a gather over the transposed CSR built once by
 * gnn_spmm_graph_create (no atomics, so results are bitwise identical for
 * any thread count); max routes dy[v][k] to source argmax[v][k].
 */
#ifndef GNN_KERNELS_SPMM_H
#define GNN_KERNELS_SPMM_H

#include "graph/csr.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GNN_AGGR_SUM = 0,
    GNN_AGGR_MEAN = 1,
    GNN_AGGR_GCN = 2,
    GNN_AGGR_MAX = 3,
    GNN_AGGR_COUNT_ = 4
} gnn_aggr_t;

/* "sum", "mean", "gcn", "max"; "?" for a value outside the enum. */
const char *gnn_aggr_name(gnn_aggr_t aggr);
/* The aggregator called name into *aggr. Returns 0 or GNN_EINVAL (message
 * lists the valid names). */
int gnn_aggr_from_name(const char *name, gnn_aggr_t *aggr);

/*
 * A graph prepared for the kernels. Fields are read-only for users.
 * csr is borrowed: it must outlive the prepared graph and stay unchanged.
 * t is the transpose (row u lists destinations v of u -> v, ascending; so
 * repeated edges are adjacent) with the weights carried along.
 */
typedef struct {
    const gnn_csr_t *csr; /* borrowed in-edge CSR, n_dst x n_src */
    gnn_csr_t t;          /* transpose, n_src x n_dst: owned, or the CSR itself
                             when t_shared (a symmetric graph is its own
                             transpose) */
    int t_shared;
    gnn_vid_t n_dst, n_src;
    gnn_eid_t nnz;
    float *inv_deg;       /* n_dst: 1/indeg(v), 0 for an empty row (mean) */
    float *gcn_dst;       /* n_dst: (indeg(v)+1)^-1/2 */
    float *gcn_src;       /* n_src: (outdeg(u)+1)^-1/2 */
} gnn_spmm_graph_t;

/*
 * Prepare csr for the kernels: transpose, degrees and scale factors.
 * Returns 0 with *out set, GNN_EINVAL for a NULL argument or a CSR whose
 * shape is inconsistent, or GNN_ENOMEM; on failure *out is NULL and
 * nothing is leaked. The transpose (gnn_csr_transpose) is one O(nnz)
 * sequential pass; the scale factors are computed on OpenMP threads. A
 * square CSR without weights whose flags promise sorted, deduplicated and
 * symmetric rows is checked to be symmetric (one binary search per entry,
 * in parallel) and then serves as its own transpose: no second copy of the
 * graph. A CSR that breaks the promise is transposed as any other.
 */
int gnn_spmm_graph_create(const gnn_csr_t *csr, gnn_spmm_graph_t **out);
/* Release g (not the borrowed CSR); NULL is a no-op. */
void gnn_spmm_graph_free(gnn_spmm_graph_t *g);

/*
 * y = aggr(x) as described above. x: n_src x f, y: n_dst x f (overwritten).
 * argmax: n_dst x f for GNN_AGGR_MAX (required), ignored otherwise (pass
 * NULL). Runs on the current OpenMP thread count, rows split by nonzeros.
 * Returns 0, or GNN_EINVAL (bad f, NULL pointer, unknown aggregator, gcn on
 * n_dst > n_src) or GNN_ERANGE (max on n_src > INT32_MAX); outputs are
 * untouched on failure.
 */
int gnn_spmm_forward(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int64_t f, const float *x,
                     float *y, int32_t *argmax);

/*
 * dx = (d y / d x)^T dy for the forward above. dy: n_dst x f, dx: n_src x f
 * (overwritten). argmax: the forward's arg-max (required for max, ignored
 * otherwise). Same errors as gnn_spmm_forward.
 */
int gnn_spmm_backward(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int64_t f, const float *dy,
                      const int32_t *argmax, float *dx);

#ifdef __cplusplus
}
#endif

#endif
