/*
 * Reference graph attention: the operations of kernels/attn.h as plain
 * loops in double precision, straight from the CSR (slots numbered as
 * there, the backward as a scatter over the edges, never through the
 * transpose), for tests. Dropout draws the same mask as the kernels.
 * Single-threaded and slow on purpose.
 */
#ifndef GNN_KERNELS_REF_ATTN_REF_H
#define GNN_KERNELS_REF_ATTN_REF_H

#include "kernels/attn.h"

/* s (slots x heads) = GAT scores; 0 or GNN_EINVAL. */
int gnn_attn_ref_gat_score(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *el,
                           const double *er, double *s);
/* alpha (slots x heads) = softmax of s per destination and head, and y
 * (n_rows x heads * f) from x (n_cols x heads * f). */
int gnn_attn_ref_forward(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *x,
                         const double *s, double *alpha, double *y);
/* From dy: dx (n_cols x heads * f), ds (slots x heads), and through the
 * GAT score del, der (NULL to skip), all overwritten. */
int gnn_attn_ref_backward(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *x,
                          const double *alpha, const double *dy, double *dx, double *ds);
int gnn_attn_ref_gat_score_backward(const gnn_csr_t *c, const gnn_attn_opts_t *o,
                                    const double *el, const double *er, const double *ds,
                                    double *del, double *der);

#endif
