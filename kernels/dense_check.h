/*
 * Argument checks of the dense operations (kernels/dense.h), shared by the
 * CPU kernels and the CUDA backend so that both refuse the same arguments
 * with the same code and message. Each returns 0 or GNN_EINVAL with the
 * failure recorded; fn names the operation in the message. Internal to
 * kernels/.
 */
#ifndef GNN_KERNELS_DENSE_CHECK_H
#define GNN_KERNELS_DENSE_CHECK_H

#include "kernels/dense.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* rows x cols is a valid, addressable matrix shape. */
int gnn__dense_check_shape(const char *fn, int64_t rows, int64_t cols);
/* n is a valid element count. */
int gnn__dense_check_count(const char *fn, int64_t n);
/* p is a drop probability in [0, 1). */
int gnn__dense_check_drop_p(const char *fn, float p);
/* The sizes, leading dimensions and (when m, n > 0) pointers of gnn_gemm. */
int gnn__dense_check_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          const float *a, int64_t lda, const float *b, int64_t ldb,
                          const float *c, int64_t ldc);
/* The step and hyper-parameters of gnn_adam. */
int gnn__dense_check_adam(const gnn_adam_opts_t *o, int64_t step);
/* The settings, sizes and step of gnn_sparse_opt_step (not the rows). */
int gnn__dense_check_sparse_opt(const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                                int64_t table_rows, int64_t ldg, int64_t step);
/* The sizes and strides of gnn_copy_rows (not the indices). */
int gnn__dense_check_copy_rows(int64_t n, int64_t f, int64_t lds, int64_t src_rows,
                               int64_t ldd);
/* The shape, row count and idx presence of gnn_softmax_xent and
 * gnn_count_correct (the row ids themselves are checked by the caller). */
int gnn__dense_check_rows(const char *fn, int64_t rows, int64_t classes, int has_idx,
                          int64_t nidx);

#ifdef __cplusplus
}
#endif

#endif
