/*
 * A learnable embedding table: one D-wide row per node that the model
 * reads as (part of) its input, trained by a row-sparse optimiser
 * (gnn-train --embed-dim D).
 *
 * The table holds the rows of the nodes a process owns (one process: every
 * node of the graph file), on the backend, with the optimiser's state:
 *   adam     lazy Adam, torch.optim.SparseAdam: two moments per element;
 *            a step changes only the rows it is given, their moments with
 *            them; the bias corrections follow the number of steps taken
 *   adagrad  torch.optim.Adagrad on row-sparse gradients: one sum of
 *            squares per element
 * so a row costs 4 D bytes for its values plus 8 D (adam) or 4 D
 * (adagrad) bytes of state (gnn_embed_row_bytes).
 *
 * Element k of the row of the node with graph-file id v starts uniform in
 * [-1/sqrt(D), 1/sqrt(D)], drawn from the counter-based generator at
 * counter v * D + k under a key derived from the seed, so a node's row
 * does not depend on which process holds it or how many there are.
 */
#ifndef GNN_TRAINER_EMBED_H
#define GNN_TRAINER_EMBED_H

#include "kernels/backend.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int64_t rows;          /* rows held here */
    int64_t dim;           /* D >= 1 */
    gnn_sparse_opt_t opt;  /* kind and learning rate (betas, eps: torch's defaults
                              when 0) */
    uint64_t seed;
    const int64_t *gid;    /* host: graph-file id of each row (NULL: row r is node r) */
    int keep_best;         /* also hold a copy of the rows at the best epoch */
} gnn_embed_config_t;

typedef struct gnn_embed gnn_embed_t;

/* Bytes per row (values and optimiser state; the best copy not counted). */
size_t gnn_embed_row_bytes(int64_t dim, gnn_sparse_opt_kind_t kind);
/* Optimiser state arrays (each rows x dim): 2 adam, 1 adagrad. */
int gnn_embed_states(gnn_sparse_opt_kind_t kind);

/* A table on be with its rows drawn from the seed and zero state.
 * GNN_EINVAL for a bad configuration, GNN_ENOMEM / backend errors. */
int gnn_embed_create(gnn_backend_t *be, const gnn_embed_config_t *cfg, gnn_embed_t **out);
void gnn_embed_free(gnn_embed_t *e);
/* Redraw every row from seed and zero the state and step (a new run). */
int gnn_embed_reset(gnn_embed_t *e, uint64_t seed);

int64_t gnn_embed_dim(const gnn_embed_t *e);
/* The backend holding the table. */
gnn_backend_t *gnn_embed_backend(const gnn_embed_t *e);
int64_t gnn_embed_rows(const gnn_embed_t *e);
/* The rows on the backend (rows x dim). */
const float *gnn_embed_table(const gnn_embed_t *e);

/* Rows rows[i] (backend int64, NULL: rows 0 .. n - 1) into dst (backend,
 * row i at dst + i * ldd, dim floats). */
int gnn_embed_gather(gnn_embed_t *e, int64_t n, const int64_t *rows, float *dst, int64_t ldd);
/* One optimiser step: row rows[i] (distinct; NULL: 0 .. n - 1) takes the
 * gradient g + i * ldg (dim floats, backend). The step count advances
 * even for n == 0 (every rank steps alike). */
int gnn_embed_step(gnn_embed_t *e, int64_t n, const int64_t *rows, const float *g, int64_t ldg);

/* The best-epoch copy (keep_best): take the current rows as the best, or
 * put the best back as the current ones (predictions of the best epoch). */
int gnn_embed_keep_best(gnn_embed_t *e);
int gnn_embed_restore_best(gnn_embed_t *e);

/* Host copies for checkpoints: rows x dim floats each (state arrays as
 * gnn_embed_states says, best only with keep_best; NULL skips one), and
 * the step count. */
int gnn_embed_download(gnn_embed_t *e, float *w, float *s1, float *s2, float *best);
int gnn_embed_upload(gnn_embed_t *e, const float *w, const float *s1, const float *s2,
                     const float *best);
int64_t gnn_embed_step_count(const gnn_embed_t *e);
void gnn_embed_set_step_count(gnn_embed_t *e, int64_t step);

#endif
