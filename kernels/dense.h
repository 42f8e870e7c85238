/*
 * Dense operations of the kernels module, CPU backend: GEMM (OpenBLAS),
 * bias add and its gradient, ReLU, dropout, softmax cross-entropy over a
 * node subset, the Adam step, and the arg-max reductions used for accuracy.
 *
 * Conventions shared by every function here:
 *  - matrices are row-major float32; a matrix without a leading dimension
 *    argument is contiguous (leading dimension = its column count);
 *  - counts are int64_t; a count of 0 is valid and does nothing (pointers
 *    may then be NULL);
 *  - the return value is 0 or a negative GNN_E* code recorded with a
 *    message (graph/base/error.h): GNN_EINVAL for bad shapes, arguments or
 *    labels, GNN_ENOMEM when scratch memory is unavailable. On failure the
 *    outputs are untouched unless the function says otherwise;
 *  - element-wise functions allow the output to alias the input exactly
 *    (y == x, dx == dy), never partially;
 *  - loops run under OpenMP; every reduction is combined in a fixed order
 *    over fixed-size blocks, so results do not depend on the thread count.
 *
 * The dropout mask comes from the counter-based generator of graph/base/rng.h,
 * whose definition the CUDA backend reproduces bit for bit.
 */
#ifndef GNN_KERNELS_DENSE_H
#define GNN_KERNELS_DENSE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * C = alpha * op(A) * op(B) + beta * C with op(X) = X or X^T (trans_x != 0),
 * op(A) m x k, op(B) k x n, C m x n; lda, ldb, ldc are the row strides of A,
 * B, C as stored (A is k x m when transposed, so lda >= m then, else >= k).
 * beta == 0 sets C without reading it (BLAS convention). Every dimension and
 * leading dimension must fit a 32-bit int (the BLAS interface): larger ones
 * give GNN_EINVAL, as do negative sizes or leading dimensions too small.
 */
int gnn_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, float alpha,
             const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
             int64_t ldc);

/*
 * gnn_gemm (trans_b 0) with A's stored rows gathered from a table: row i of
 * A is a + rows[i] * lda (rows[i] >= 0; m rows, or k when A is transposed),
 * so a layer reads its input rows where they lie instead of a copy. The
 * result is gnn_gemm's on the gathered copy of A, bit for bit. GNN_EINVAL
 * for bad sizes or a negative row; GNN_ENOMEM when the CPU has no kernel for
 * the shape and the copy cannot be made.
 */
int gnn_gemm_rows(int trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float *a,
                  int64_t lda, const int64_t *rows, const float *b, int64_t ldb, float beta,
                  float *c, int64_t ldc);

/*
 * Two products of one A in one pass over it (a layer's neighbour and self
 * weights): trans_a 0: C1 = A B1 over A's m rows and C2 = A[:m2] B2 over
 * the first m2 <= m; trans_a 1: C1 = A^T B1 summed over A's k rows and C2
 * = A[:k2]^T B2 over the first k2 <= k (C1, C2 m x n1, m x n2). B and C
 * contiguous row-major (ld = their widths), alpha 1, beta 0; A's rows
 * through rows as in gnn_gemm_rows (NULL: in order, a + i * lda). Where the
 * CPU has no kernel for the shape, two products.
 */
int gnn_gemm_pair(int trans_a, int64_t m, int64_t m2, int64_t k, const float *a, int64_t lda,
                  const int64_t *rows, int64_t n1, const float *b1, float *c1, int64_t n2,
                  const float *b2, float *c2);

/* y[r][c] += bias[c] for a rows x cols matrix y. */
int gnn_bias_add(int64_t rows, int64_t cols, float *y, const float *bias);

/* What gnn_bias_act applies after the bias. */
typedef enum { GNN_ACT_NONE = 0, GNN_ACT_RELU = 1, GNN_ACT_ELU = 2 } gnn_act_t;

/* y[r][c] = act(y[r][c] + bias[c]) in one pass over y: the same values as
 * gnn_bias_add followed by gnn_relu or gnn_elu. GNN_EINVAL for another
 * act or a bad shape. */
int gnn_bias_act(int64_t rows, int64_t cols, float *y, const float *bias, int act);

/* dbias[c] = sum over r of dy[r][c] (overwritten, not accumulated). Sums in
 * double over fixed blocks of rows; GNN_ENOMEM when the block partials
 * cannot be allocated (dbias untouched). */
int gnn_bias_grad(int64_t rows, int64_t cols, const float *dy, float *dbias);

/* y[i] = max(x[i], 0) for n elements (y == x allowed). NaN stays NaN. */
int gnn_relu(int64_t n, const float *x, float *y);

/* dx[i] = dy[i] where xy[i] > 0, else 0; xy is the ReLU input or output
 * (both have the same sign pattern). dx == dy allowed. */
int gnn_relu_backward(int64_t n, const float *xy, const float *dy, float *dx);

/* ELU: y[i] = x[i] for x[i] > 0, else expm1(x[i]) (y == x allowed). */
int gnn_elu(int64_t n, const float *x, float *y);

/* dx[i] = dy[i] where y[i] > 0, else dy[i] * (y[i] + 1): the ELU's
 * derivative read from its output y. dx == dy allowed. */
int gnn_elu_backward(int64_t n, const float *y, const float *dy, float *dx);

/* y[i] = alpha * x[i] + beta * y[i] for n elements; beta == 0 sets y
 * without reading it (so y may hold garbage then). y == x allowed. */
int gnn_axpby(int64_t n, float alpha, const float *x, float beta, float *y);

/*
 * dst[i][:] = src[idx[i]][:] for i < n, rows of width f (row gather, the
 * index_select of a mini-batch). src has src_rows rows. Every idx entry is
 * checked first: one outside [0, src_rows) gives GNN_EINVAL naming its
 * position and value, with dst untouched. dst must not overlap src.
 */
int gnn_gather_rows(int64_t n, int64_t f, const float *src, int64_t src_rows, const int64_t *idx,
                    float *dst);

/*
 * The same through a cache of rows: row i of dst is row slot[v] of cache
 * where slot[v] >= 0, else row v of src, v = idx[i] (slot: one entry per
 * row of src, -1 for a row not cached). The entries of idx and slot are
 * trusted (the sampler's nodes, the cache's own map): not checked.
 */
int gnn_gather_rows_cached(int64_t n, int64_t f, const float *cache, const int32_t *slot,
                           const float *src, const int64_t *idx, float *dst);

/*
 * Inverted dropout: y[i] = x[i] * scale when element counter offset + i is
 * kept at drop probability p, else 0; scale = (float)(1 / (1 - p)). The mask
 * is gnn_rng_keep(seed, offset + i, p) of graph/base/rng.h, so a caller that
 * gives successive calls disjoint offset ranges draws independent masks.
 * p must be in [0, 1) (GNN_EINVAL otherwise); p == 0 copies x.
 */
int gnn_dropout(int64_t n, float p, uint64_t seed, uint64_t offset, const float *x, float *y);

/* Gradient of gnn_dropout with the same (n, p, seed, offset): the mask is
 * recomputed from the generator, none is stored. dx == dy allowed. */
int gnn_dropout_backward(int64_t n, float p, uint64_t seed, uint64_t offset, const float *dy,
                         float *dx);

/*
 * The bias, the activation and the next layer's input dropout in one pass:
 * y = dropout(act(y + bias)), the same bits as gnn_bias_act followed by
 * gnn_dropout(rows * cols, p, seed, offset) (row_id NULL) or by
 * gnn_dropout_rows(rows, cols, row_id, p, seed, offset) (element (r, c)
 * takes counter offset + row_id[r] * cols + c, mod 2^64). p in [0, 1);
 * p == 0 is gnn_bias_act. GNN_EINVAL for a bad shape, act or p.
 */
int gnn_bias_act_drop(int64_t rows, int64_t cols, float *y, const float *bias, int act, float p,
                      uint64_t seed, uint64_t offset, const int64_t *row_id);

/*
 * The gradient through an input dropout of drop probability p and the
 * ReLU below it, read from the dropped output y: dx[i] = dy[i] * scale
 * where y[i] > 0, else 0 (scale as gnn_dropout's). The same bits as
 * gnn_dropout_backward (or gnn_dropout_rows) of dy and then
 * gnn_relu_backward with y: an element y holds above 0 was kept, and
 * every other one has gradient 0 either way; so it needs no mask, no seed
 * and no counters. dx == dy allowed.
 */
int gnn_relu_drop_backward(int64_t n, float p, const float *y, const float *dy, float *dx);

/*
 * Dropout of a rows x f matrix whose row r stands for row row_id[r] of a
 * larger one: element (r, j) takes counter offset + row_id[r] * f + j, so
 * it gets the mask gnn_dropout gives that element of the larger matrix
 * (whichever process holds the row). row_id entries must be >= 0. Linear
 * in x: the same call is its own gradient. y == x allowed.
 */
int gnn_dropout_rows(int64_t rows, int64_t f, const int64_t *row_id, float p, uint64_t seed,
                     uint64_t offset, const float *x, float *y);

/*
 * Softmax cross-entropy over the rows idx[0..nidx) of a rows x classes
 * matrix of logits (idx NULL: all rows, nidx must equal rows). labels has
 * one entry per row (labels[idx[j]] is read). *loss = mean over the selected
 * rows of logsumexp(row) - row[label], computed with the row maximum
 * subtracted and summed in double. When dlogits is not NULL it is set to
 * (softmax(row) - onehot(label)) / nidx on selected rows and 0 elsewhere.
 * idx entries must be distinct rows in [0, rows). A row id out of range or
 * a selected label outside [0, classes) gives GNN_EINVAL naming the row,
 * with *loss and dlogits untouched. nidx == 0 gives loss 0 (gradient 0).
 */
int gnn_softmax_xent(int64_t rows, int64_t classes, const float *logits, const int64_t *labels,
                     const int64_t *idx, int64_t nidx, double *loss, float *dlogits);

/* Hyper-parameters of gnn_adam. */
typedef struct {
    float lr;           /* learning rate */
    float beta1, beta2; /* moment decay rates, in [0, 1) */
    float eps;          /* added to the root of the second moment, > 0 */
    float weight_decay; /* >= 0 */
    int decoupled;      /* 0: Adam (L2 added to the gradient); 1: AdamW */
} gnn_adam_opts_t;

/* PyTorch defaults: lr 1e-3, betas (0.9, 0.999), eps 1e-8, no decay, Adam. */
gnn_adam_opts_t gnn_adam_defaults(void);

/*
 * One Adam step on n parameters w with gradient g and moments m, v (both
 * start at 0), with the semantics of torch.optim.Adam / AdamW (defaults,
 * amsgrad off); step is the 1-based number of this step:
 *   Adam:  g' = g + wd * w                  AdamW: w = w * (1 - lr * wd), g' = g
 *   m = b1 m + (1 - b1) g'      v = b2 v + (1 - b2) g'^2
 *   w -= (lr / (1 - b1^step)) * m / (sqrt(v) / sqrt(1 - b2^step) + eps)
 * The bias corrections are computed in double once per call; the update is
 * in float. GNN_EINVAL for step < 1 or hyper-parameters out of range.
 */
int gnn_adam(int64_t n, float *w, const float *g, float *m, float *v, const gnn_adam_opts_t *o,
             int64_t step);

/*
 * Row-sparse optimisers of a learnable table (trainer/embed.h): one step
 * on the n rows rows[i] (NULL: rows 0 .. n - 1) of the table w (table_rows
 * x d, row-major), row rows[i] taking the gradient g[i * ldg + k], k < d.
 * Only those rows change, their state with them; a row must appear at
 * most once. step: the 1-based number of this step (every step counts,
 * whether a row takes part or not).
 *   adam     torch.optim.SparseAdam: s1 = b1 s1 + (1 - b1) g,
 *            s2 = b2 s2 + (1 - b2) g^2,
 *            w -= lr sqrt(1 - b2^step) / (1 - b1^step) * s1 / (sqrt(s2) + eps)
 *   adagrad  torch.optim.Adagrad: s1 += g^2, w -= lr g / (sqrt(s1) + eps);
 *            s2 unused (may be NULL)
 * The constants are computed in double once per call, the update in float.
 * GNN_EINVAL for a row outside [0, table_rows), step < 1 or settings out
 * of range, before any row changes.
 */
typedef enum { GNN_SPARSE_ADAM = 0, GNN_SPARSE_ADAGRAD = 1 } gnn_sparse_opt_kind_t;
typedef struct {
    gnn_sparse_opt_kind_t kind;
    float lr;
    float beta1, beta2; /* adam, in [0, 1) */
    float eps;          /* > 0: torch's defaults are 1e-8 (adam) and 1e-10 (adagrad) */
} gnn_sparse_opt_t;

int gnn_sparse_opt_step(const gnn_sparse_opt_t *o, int64_t n, int64_t d, const int64_t *rows,
                        int64_t table_rows, const float *g, int64_t ldg, float *w, float *s1,
                        float *s2, int64_t step);

/*
 * dst[i * ldd + k] = src[r * lds + k] for k < f, r = idx[i] (NULL: i), for
 * i < n: rows gathered between matrices whose rows are wider than f (a
 * block of columns of each). GNN_EINVAL for an index outside [0,
 * src_rows) (nothing written) or strides below f.
 */
int gnn_copy_rows(int64_t n, int64_t f, const float *src, int64_t lds, int64_t src_rows,
                  const int64_t *idx, float *dst, int64_t ldd);
/*
 * The other way: dst[r * ldd + k] = src[i * lds + k] for k < f, r =
 * idx[i], for i < n: rows put at given rows of a wider matrix. The
 * indices must be distinct (checked: GNN_EINVAL naming a repeat) and in
 * [0, dst_rows) (GNN_EINVAL naming the first that is not); nothing is
 * written on error.
 */
int gnn_scatter_rows(int64_t n, int64_t f, const float *src, int64_t lds, const int64_t *idx,
                     float *dst, int64_t ldd, int64_t dst_rows);

/* out[r] = index of the largest entry of row r (ties: lowest index; NaN
 * entries never win over an earlier entry) of a rows x classes matrix. */
int gnn_argmax_rows(int64_t rows, int64_t classes, const float *x, int64_t *out);

/*
 * *correct = number of rows idx[0..nidx) (idx NULL: all rows) whose arg-max
 * (as gnn_argmax_rows) equals labels[row]. Row ids out of range give
 * GNN_EINVAL; a label out of range simply does not match. classes >= 1.
 */
int gnn_count_correct(int64_t rows, int64_t classes, const float *logits, const int64_t *labels,
                      const int64_t *idx, int64_t nidx, int64_t *correct);

#ifdef __cplusplus
}
#endif

#endif
