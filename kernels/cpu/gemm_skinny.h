/*
 * Products with a narrow side on the CPU (kernels/cpu/gemm_skinny.c): the
 * shapes of a GNN layer's dense work, a tall matrix of rows (nodes) times
 * a small weight (features x hidden), and the weight gradient, the tall
 * matrix transposed times a tall narrow one. gnn_gemm (kernels/cpu/dense.c)
 * hands them here before OpenBLAS.
 */
#ifndef GNN_KERNELS_CPU_GEMM_SKINNY_H
#define GNN_KERNELS_CPU_GEMM_SKINNY_H

#include <stdint.h>

/* C = alpha op(A) op(B) + beta C (row-major, as gnn_gemm; arguments
 * already checked, m, n, k > 0) when the shape is one this file computes
 * and the CPU has AVX-512: 1 done, 0 not taken (the caller goes on to
 * BLAS), GNN_ENOMEM. Taken: A B and A B^T with n <= 64 (or n <= 128 and
 * k <= 64), whatever m (each row of C comes out the same for any m); A^T
 * B with n <= 64 and k >= 64, whatever m. */
int gnn__gemm_skinny(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                     float *c, int64_t ldc);

/* The same with A's stored rows gathered: row i of A is a + arow[i] * lda
 * (arow NULL: a + i * lda). A shape taken here is taken with or without
 * arow, and the result is the one on the gathered copy of A. */
int gnn__gemm_skinny_rows(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, const float *a, int64_t lda, const int64_t *arow,
                          const float *b, int64_t ldb, float beta, float *c, int64_t ldc);

/* Two products of the same A in one pass over it (row-major, B and C
 * contiguous, alpha 1, beta 0; A's rows through arow as above):
 *   nn_pair: C1 = A B1 (m rows), C2 = A[:m2] B2 (m2 <= m);
 *   tn_pair: C1 = A^T B1 over A's k rows, C2 = A[:k2]^T B2 (k2 <= k).
 * 1 done, 0 not taken (the caller makes two products), GNN_ENOMEM. */
int gnn__gemm_skinny_nn_pair(int64_t m, int64_t m2, int64_t k, const float *a, int64_t lda,
                             const int64_t *arow, int64_t n1, const float *b1, float *c1,
                             int64_t n2, const float *b2, float *c2);
int gnn__gemm_skinny_tn_pair(int64_t m, int64_t k, int64_t k2, const float *a, int64_t lda,
                             const int64_t *arow, int64_t n1, const float *b1, float *c1,
                             int64_t n2, const float *b2, float *c2);

#endif
