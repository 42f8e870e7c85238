/*
 * Sparse input features, CPU backend: a rows x cols matrix stored as CSR
 * with values (bag-of-words features such as Cora's are about 1 % dense).
 * The first layer of a model multiplies its dropped-out input by a weight
 * matrix; on such inputs doing it sparse skips both the dropout mask of
 * the zeros (a zero stays zero) and the dense GEMM over them.
 *
 * The dropout here is the dense dropout of kernels/dense.h restricted to
 * the stored entries: entry (r, c) is kept when gnn_rng_keep(seed, offset +
 * r * cols + c, p), so a sparse and a dense run with the same generator
 * position keep the same entries and give the same values.
 */
#ifndef GNN_KERNELS_SPFEAT_H
#define GNN_KERNELS_SPFEAT_H

#include "graph/csr.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A sparse matrix prepared for the products below (fields read-only). */
typedef struct {
    const gnn_csr_t *a;   /* borrowed: rows x cols, weights = the values (required) */
    gnn_eid_t *t_indptr;  /* cols + 1: entries of each column */
    gnn_eid_t *t_entry;   /* nnz: entry index j into a, by column then row */
    gnn_vid_t *t_row;     /* nnz: the row of that entry */
} gnn_spfeat_t;

/* Prepare a (which must carry values in a->weights). GNN_EINVAL for a
 * malformed matrix or one without values, GNN_ENOMEM. *out NULL on failure. */
int gnn_spfeat_create(const gnn_csr_t *a, gnn_spfeat_t **out);
void gnn_spfeat_free(gnn_spfeat_t *s);

/* vals[j] = a's value j, dropped (0) or scaled by 1 / (1 - p) as above;
 * p == 0 copies the values. With row_id (one per row of a, or NULL for
 * r itself) row r draws as row row_id[r] of the whole matrix: a batch's
 * rows keep the masks they have in the table they were taken from. p
 * outside [0, 1) gives GNN_EINVAL. */
int gnn_spfeat_dropout(const gnn_spfeat_t *s, float p, uint64_t seed, uint64_t offset,
                       const int64_t *row_id, float *vals);

/* t = D[:n] w with D = (a's structure, vals): w is cols x f, t n x f,
 * n at most a's rows. */
int gnn_spfeat_mm(const gnn_spfeat_t *s, const float *vals, int64_t n, const float *w, int64_t f,
                  float *t);

/* dw = D[:n]^T dt: dt is n x f, dw cols x f (overwritten). A gather over
 * columns: no atomics, the same bits for any thread count. */
int gnn_spfeat_mm_t(const gnn_spfeat_t *s, const float *vals, int64_t n, const float *dt,
                    int64_t f, float *dw);

#ifdef __cplusplus
}
#endif

#endif
