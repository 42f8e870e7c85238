/*
 * Training checkpoints and prediction files (HDF5, layouts in
 * docs/FORMAT.md).
 *
 * A checkpoint holds everything a run needs to continue exactly where it
 * stopped: the configuration it was started with (a resume must match it),
 * the position in the run (run index, epoch, Adam step, dropout generator
 * offset), the early-stopping and best-validation state, the results of
 * the runs already finished, and the parameters, both Adam moments and the
 * best-validation parameters as flat float32 arrays. Files are written
 * under a temporary name beside the target and renamed into place, so a
 * checkpoint on disk is always a complete one.
 */
#ifndef GNN_TRAINER_CHECKPOINT_H
#define GNN_TRAINER_CHECKPOINT_H

#include <stdint.h>

#define GNN_CHECKPOINT_FORMAT "gnn-checkpoint"
#define GNN_CHECKPOINT_VERSION 8

typedef struct {
    /* Configuration (checked on resume). */
    char model[16];        /* "gcn" | "sage" | "gat" */
    char task[16];         /* "node" | "link" (version 5; "node" in older files) */
    char decoder[16];      /* link: "dot" | "mlp"; "-" for node classification (version 5) */
    char hits[64];         /* link: the Hits@K list; "-" otherwise (version 5) */
    int64_t negatives;     /* link: negatives per training edge; 0 otherwise (version 5) */
    char aggr[32];         /* aggregator name */
    int64_t layers, in_dim, hidden, classes;
    double dropout, lr, weight_decay;
    char decay_scope[16];  /* "first" | "all" */
    char init[16];         /* the weights' initialisation: "glorot" | "fan-in" (version 8;
                              "glorot" in older files, which knew no other) */
    char mode[16];         /* "full" | "minibatch" */
    char fanouts[144];     /* mini-batch fanouts ("15,10,5", "15,10,5 once" with
                              --sample-once), "-" in full mode */
    int64_t normalize_features;
    int64_t batch_size;    /* mini-batch size, 0 in full mode */
    uint64_t seed;         /* seed of run 0; run r uses seed + r */
    int64_t runs;          /* runs requested */
    /* The data trained on (version 3; -1 when read from a version 2 file). */
    int64_t num_nodes;     /* nodes of the graph */
    int64_t parts;         /* parts of a partition directory (one rank each), 0: a graph file;
                              a resume may use another partition of the same graph */
    int64_t train_nodes;   /* training targets: nodes, or edges for --task link */
    /* The graph's fingerprint and the training nodes' layout over ranks
     * (version 7; num_edges -1 and the hashes 0 in older files). */
    int64_t num_edges;     /* stored edges (in-edge CSR entries) of the whole graph */
    uint64_t edge_hash;    /* sum of a hash of every stored edge (source, destination,
                              relation) by graph-file ids: the same for the graph file and
                              any partition of it */
    uint64_t train_hash;   /* sum of a hash of the graph-file id of every training node */
    uint64_t train_layout; /* sum of a hash of (graph-file id, rank) of every training node:
                              the same for one layout of the training nodes over ranks (a
                              graph file counts as one rank) */
    /* Attention models (version 4; 0 for the others and in older files). */
    int64_t heads, out_heads;
    double attn_dropout, negative_slope;
    /* Position. */
    int64_t run;           /* run in progress, 0-based */
    int64_t epoch;         /* epochs completed in that run */
    int64_t step;          /* Adam steps taken in that run */
    uint64_t rng_offset;   /* dropout generator position */
    /* Early stopping and best-validation state of the run in progress. */
    int64_t best_epoch;    /* -1 before the first evaluation */
    int64_t bad_evals;     /* evaluations since the validation loss improved */
    double best_valid_acc, best_valid_loss, best_test_acc, best_train_acc;
    double min_valid_loss;
    /* Every metric of the task (version 5; 0 and none in older files). */
    int64_t n_metrics;
    double *best_metrics;  /* n_metrics: the best epoch's of the run in progress */
    /* Finished runs. */
    int64_t runs_done;
    double *run_test_acc;  /* runs_done entries */
    double *run_valid_acc; /* runs_done entries */
    double *run_metrics;   /* runs_done x n_metrics: each run's best epoch (version 5) */
    /* Tensors: n_params floats each. */
    int64_t n_params;
    float *params, *adam_m, *adam_v, *best_params;
    /* Learnable input rows (version 6; embed_dim 0 and no arrays without
     * them, and in older files). */
    char embed_opt[16];    /* "adam" | "adagrad"; "-" without a table */
    int64_t embed_dim;     /* row width */
    int64_t embed_all;     /* 1: every node has a row (--embed all), 0: the featureless */
    int64_t embed_rows;    /* rows in this file (a partition: every node's, by graph-file id) */
    int64_t embed_step;    /* the table's optimiser steps in the run in progress */
    int64_t embed_best_kept; /* embed_best holds the best epoch's rows */
    double embed_lr;
    float *embed_w;        /* embed_rows x embed_dim each */
    float *embed_s1;       /* first state (adam: first moment, adagrad: sum of squares) */
    float *embed_s2;       /* adam's second moment (none for adagrad) */
    float *embed_best;     /* the best epoch's rows (when embed_best_kept) */
} gnn_checkpoint_t;

/* Write c to path atomically (temporary file + rename; an existing file is
 * replaced). GNN_EIO / GNN_EHDF5 naming the path on failure, and then no
 * file is left under the temporary name and path is unchanged. */
int gnn_checkpoint_save(const char *path, const gnn_checkpoint_t *c);

/*
 * Read path into c (arrays allocated; free with gnn_checkpoint_free).
 * Version 2 files, which do not record the data, are read with num_nodes,
 * parts and train_nodes set to -1; files before version 7 with num_edges
 * -1 and edge_hash, train_hash and train_layout 0. Errors, each naming path: GNN_ENOENT
 * (no file), GNN_EFORMAT (not HDF5, not a checkpoint, a missing or
 * wrong-shaped dataset or attribute, values out of range such as
 * runs_done > runs), GNN_EVERSION. On failure c is zeroed.
 */
int gnn_checkpoint_load(const char *path, gnn_checkpoint_t *c);

/* Free the arrays and zero c. */
void gnn_checkpoint_free(gnn_checkpoint_t *c);

/*
 * Write the predictions of a model over n nodes: node_id (n int64: the
 * original ids, or 0..n-1 when node_id is NULL), logits (n x classes
 * float32), pred (n int64, arg-max of the logits), hidden (n x hidden_dim
 * float32: the input of the last layer). Atomic like the checkpoint; an
 * existing path is replaced.
 */
int gnn_predictions_write(const char *path, int64_t n, const int64_t *node_id, int64_t classes,
                          const float *logits, const int64_t *pred, int64_t hidden_dim,
                          const float *hidden);

/*
 * Write the embeddings of n nodes: node_id (n int64: the original ids),
 * embedding (n x dim float32: the last layer's output of each node) and,
 * with in_dim > 0, input_embedding (n x in_dim float32: the node's
 * learnable input row). Atomic like the checkpoint; an existing path is
 * replaced.
 */
int gnn_embeddings_write(const char *path, int64_t n, const int64_t *node_id, int64_t dim,
                         const float *emb, int64_t in_dim, const float *input);

#endif
