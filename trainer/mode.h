/*
 * The mode interface: how a model is trained, one implementation per file
 * under trainer/modes/:
 *   full            the whole graph in one process, one step per epoch
 *   minibatch       sampled mini-batches in one process, layer-wise
 *                   inference for evaluation
 *   dist-full       the whole graph spread over ranks (a partition
 *                   directory), halo rows exchanged around every layer
 *   dist-minibatch  mini-batches on every rank, remote features fetched
 *                   from their owners, gradients averaged every step
 * The epoch loop (trainer/loop.c: runs, evaluation schedule, best epoch,
 * early stop, checkpoints) is written once over this interface; a mode
 * never decides when to evaluate, stop or save.
 *
 * Every step of every mode ends the same way (trainer/step.c): the loss
 * and its gradient from the task, the model's backward, the gradients
 * summed over the ranks when there are several, one Adam step.
 */
#ifndef GNN_TRAINER_MODE_H
#define GNN_TRAINER_MODE_H

#include <stdint.h>
#include <stdio.h>

struct gnn_job;

/* What inference over every local node gives. */
typedef struct {
    const float *logits;  /* n x out_dim, backend buffer of the job or model */
    const float *hidden;  /* the last layer's input rows (backend), or NULL
                             when that is the features (host: j->g.feat) */
    int64_t hidden_rows, hidden_cols;
} gnn_infer_t;

typedef struct gnn_mode {
    const char *name;
    int distributed;      /* over a partition directory (MPI, one rank a part) */
    int minibatch;        /* sampled mini-batches (needs --fanouts etc.) */
    /* After the data and task are set up, before the first run: the
     * graphs, loaders and exchange plans the mode trains with. Over a
     * partition directory collective, failures agreed. */
    int (*setup)(struct gnn_job *j);
    /* A run's model was just created: hooks it needs (halo, sparse
     * input). */
    int (*start_run)(struct gnn_job *j);
    /* One training epoch: its steps, each through trainer/step.c. *loss:
     * the mean training loss over the epoch's targets (every rank's, the
     * same on every rank). */
    int (*epoch)(struct gnn_job *j, double *loss);
    /* The model's outputs for every local node under the current
     * parameters, without dropout (evaluation, predictions). */
    int (*infer)(struct gnn_job *j, gnn_infer_t *out);
    /* The mode's keys of an epoch's log line (rank 0; after epoch). */
    void (*log)(const struct gnn_job *j, FILE *f);
    /* What setup and the epochs allocated (NULL-safe on any field). */
    void (*free)(struct gnn_job *j);
} gnn_mode_t;

extern const gnn_mode_t gnn_mode_full, gnn_mode_minibatch, gnn_mode_dist_full,
    gnn_mode_dist_minibatch;

#endif
