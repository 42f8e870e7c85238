/*
 * Plain reference versions of the dense operations of kernels/dense.h, used
 * by the tests only.
 *
 * Everything is in double: inputs, outputs and accumulation, with the
 * obvious loops (a triple-loop GEMM, a two-pass log-sum-exp) and no
 * threading, so that a test can compare the float kernels against them and
 * take finite differences of them. Shapes are the caller's responsibility:
 * these functions check labels only (the one data-dependent failure) and
 * otherwise trust their arguments. The dropout reference uses the same
 * generator (graph/base/rng.h) element by element, through the definition's
 * gnn_rng_keep rather than the kernels' four-at-a-time walk.
 */
#ifndef GNN_KERNELS_REF_DENSE_REF_H
#define GNN_KERNELS_REF_DENSE_REF_H

#include <stdint.h>

#include "kernels/dense.h"

#ifdef __cplusplus
extern "C" {
#endif

/* C = alpha op(A) op(B) + beta C as gnn_gemm (beta == 0: C not read). */
void gnn_ref_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                  double *c, int64_t ldc);
/* y[r][c] += bias[c]. */
void gnn_ref_bias_add(int64_t rows, int64_t cols, double *y, const double *bias);
/* dbias[c] = sum_r dy[r][c]. */
void gnn_ref_bias_grad(int64_t rows, int64_t cols, const double *dy, double *dbias);
/* y = max(x, 0). */
void gnn_ref_relu(int64_t n, const double *x, double *y);
/* dx = x > 0 ? dy : 0. */
void gnn_ref_relu_backward(int64_t n, const double *x, const double *dy, double *dx);
/* y = alpha x + beta y (beta == 0: y not read). */
void gnn_ref_axpby(int64_t n, double alpha, const double *x, double beta, double *y);
/* dst[i] = src[idx[i]], rows of width f. */
void gnn_ref_gather_rows(int64_t n, int64_t f, const double *src, const int64_t *idx,
                         double *dst);
/* y = keep(seed, offset + i, p) ? x / (1 - p) : 0, element by element. */
void gnn_ref_dropout(int64_t n, float p, uint64_t seed, uint64_t offset, const double *x,
                     double *y);
/* Mean cross-entropy over idx (NULL: all rows) and, when dlogits is not
 * NULL, its gradient (zero on unselected rows). Returns 0, or GNN_EINVAL
 * for a selected label outside [0, classes). */
int gnn_ref_softmax_xent(int64_t rows, int64_t classes, const double *logits,
                         const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                         double *dlogits);
/* One Adam / AdamW step as gnn_adam, in double. */
void gnn_ref_adam(int64_t n, double *w, const double *g, double *m, double *v,
                  const gnn_adam_opts_t *o, int64_t step);
/* Arg-max per row, ties to the lowest index. */
void gnn_ref_argmax_rows(int64_t rows, int64_t classes, const double *x, int64_t *out);

#ifdef __cplusplus
}
#endif

#endif
