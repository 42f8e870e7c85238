/*
 * The compressed sparse row graph every module works on.
 *
 * Adjacency is stored by destination: row v lists the sources u of the edges
 * u -> v (in-edges), so aggregation for a node reads one row. The backward
 * pass and the partitioner read the transpose (gnn_csr_transpose), which is
 * built once and cached by its users. Offsets and ids are 64-bit.
 *
 * flags record properties the builder or a reader has established; they are
 * promises that gnn_csr_validate checks, never guesses.
 */
#ifndef GNN_GRAPH_CSR_H
#define GNN_GRAPH_CSR_H

#include "graph/base/types.h"

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    GNN_CSR_SORTED = 1u << 0,        /* sources ascending within each row */
    GNN_CSR_DEDUPED = 1u << 1,       /* no source repeated within a row */
    GNN_CSR_NO_SELF_LOOPS = 1u << 2, /* no row lists itself */
    GNN_CSR_SYMMETRIC = 1u << 3      /* u in row v iff v in row u (square only) */
};

typedef struct {
    gnn_vid_t n_rows;   /* destinations */
    gnn_vid_t n_cols;   /* sources; equals n_rows for a graph */
    gnn_eid_t nnz;      /* stored entries = indptr[n_rows] */
    gnn_eid_t *indptr;  /* n_rows + 1 offsets, indptr[0] = 0 */
    gnn_vid_t *indices; /* nnz source ids in [0, n_cols) */
    float *weights;     /* nnz edge weights, or NULL */
    unsigned flags;     /* GNN_CSR_* */
} gnn_csr_t;

/* Options of gnn_csr_from_edges. */
enum {
    GNN_BUILD_SYMMETRIZE = 1u << 0,  /* add v -> u for every u -> v */
    GNN_BUILD_DEDUPE = 1u << 1,      /* keep one of repeated edges (implies SORT) */
    GNN_BUILD_NO_SELF_LOOPS = 1u << 2, /* drop u -> u */
    GNN_BUILD_SORT = 1u << 3         /* sort sources within each row */
};

/*
 * Build the in-edge CSR of n nodes from m edges src[i] -> dst[i] with
 * optional weights (NULL for none). Rows are filled by a counting sort on the
 * destination, so without GNN_BUILD_SORT each row keeps the input order of
 * its edges (stable). With GNN_BUILD_SYMMETRIZE the reverse edge of each
 * input edge follows the input edges in the row's order. GNN_BUILD_DEDUPE
 * sorts each row and keeps the first occurrence of a repeated edge (with its
 * weight). flags of the result state what the options established.
 * Returns 0, GNN_ERANGE for an id outside [0, n) (naming the edge),
 * GNN_EINVAL for negative counts, GNN_ENOMEM; on failure *out is left
 * zeroed and nothing is leaked.
 */
int gnn_csr_from_edges(gnn_vid_t n, gnn_eid_t m, const gnn_vid_t *src, const gnn_vid_t *dst,
                       const float *weights, unsigned options, gnn_csr_t *out);

/*
 * The transpose: row u of *t lists the v with u in row v of *a (out-edges of
 * a graph). Rows of the transpose come out sorted because a is scanned in
 * row order; weights follow their entries. t->n_rows = a->n_cols.
 * Returns 0 or GNN_ENOMEM (*t zeroed).
 */
int gnn_csr_transpose(const gnn_csr_t *a, gnn_csr_t *t);

/* Deep copy. Returns 0 or GNN_ENOMEM (*out zeroed). */
int gnn_csr_copy(const gnn_csr_t *a, gnn_csr_t *out);

/* The n rows rows[0..n) of a, in that order (a row may repeat), with their
 * weights: out is n x a->n_cols, sorted where a is. Returns 0, GNN_ERANGE
 * for a row outside a, GNN_EINVAL, GNN_ENOMEM (*out zeroed). */
int gnn_csr_rows(const gnn_csr_t *a, const gnn_vid_t *rows, gnn_vid_t n, gnn_csr_t *out);

/* Free the arrays and zero the struct; safe on a zeroed struct. */
void gnn_csr_free(gnn_csr_t *a);

/* Sort n 64-bit keys ascending (the packed (id, relation) entries of a
 * typed row). */
void gnn_sort_u64(uint64_t *a, int64_t n);

/* Sort each row's sources ascending (weights follow); sets GNN_CSR_SORTED. */
int gnn_csr_sort_rows(gnn_csr_t *a);

/*
 * Sort each row (unless flagged sorted) and remove repeated sources in
 * place, keeping the first of each run and its weight; indptr and nnz
 * shrink, the arrays keep their capacity. Sets SORTED and DEDUPED.
 * Returns 0, or GNN_ENOMEM with a unchanged.
 */
int gnn_csr_dedupe(gnn_csr_t *a);

typedef struct {
    gnn_vid_t n;          /* rows counted */
    gnn_eid_t min, max;   /* smallest and largest row length */
    double mean, stddev;
    gnn_vid_t n_zero;     /* rows with no entry */
    gnn_vid_t argmax;     /* a row of length max */
    /* hist[k] counts rows of length in [2^(k-1), 2^k) for k >= 1; hist[0]
     * counts empty rows. */
    gnn_vid_t hist[64];
} gnn_degree_stats_t;

/* Row-length (in-degree) statistics of a. */
void gnn_csr_degree_stats(const gnn_csr_t *a, gnn_degree_stats_t *s);

/* Column (out-degree) counts: out[u] = entries with source u; out has
 * n_cols entries. */
void gnn_csr_col_counts(const gnn_csr_t *a, gnn_eid_t *out);

/*
 * Check the structure: indptr[0] = 0, offsets monotone, indptr[n_rows] =
 * nnz, every index in [0, n_cols), and each property claimed in flags
 * (sorted, deduped, no self loops, symmetric). Returns 0 or GNN_EFORMAT with
 * a message naming the first offending row or entry; GNN_ENOMEM when a check
 * needs memory it cannot get.
 */
int gnn_csr_validate(const gnn_csr_t *a);

/* True when both have equal shape, offsets, indices and weights (flags are
 * not compared). */
int gnn_csr_equal(const gnn_csr_t *a, const gnn_csr_t *b);

#ifdef __cplusplus
}
#endif

#endif
