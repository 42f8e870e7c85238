/*
 * Reference SpMM: the aggregators of kernels/spmm.h written as plain loops
 * in double precision, for tests and for checking benchmark results.
 *
 * Same semantics as gnn_spmm_forward / gnn_spmm_backward, but computed
 * straight from the CSR (degrees counted here, the backward as a scatter
 * over the edges, never through the transpose), so that a shared mistake in
 * the kernels' prepared data cannot hide. Single-threaded and slow on
 * purpose.
 */
#ifndef GNN_KERNELS_REF_SPMM_REF_H
#define GNN_KERNELS_REF_SPMM_REF_H

#include "kernels/spmm.h"

#include <stdint.h>

/* y (n_rows x f) = aggr(x) (n_cols x f); argmax (n_rows x f) required for
 * max, else ignored. Returns 0, GNN_EINVAL or GNN_ENOMEM. */
int gnn_spmm_ref_forward(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const double *x,
                         double *y, int32_t *argmax);

/* dx (n_cols x f, overwritten) = (dy/dx)^T dy for dy (n_rows x f); argmax
 * from the forward for max. Returns 0, GNN_EINVAL or GNN_ENOMEM. */
int gnn_spmm_ref_backward(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const double *dy,
                          const int32_t *argmax, double *dx);

#endif
