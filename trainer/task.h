/*
 * The task interface: what a model is trained to do, apart from how it is
 * trained (the mode, trainer/mode.h) and what it is built of (its layers,
 * trainer/layer.h).
 *
 * A task owns its targets (node classification: labels and the train,
 * valid and test splits, on the backend), says what the loss of a step is
 * computed on and its gradient (over the model's output rows), what
 * evaluation reports, and which keys carry those numbers in the JSON-lines
 * log and the final line. The epoch loop (trainer/loop.c) chooses the best
 * epoch, stops early and checkpoints through the metric roles a task
 * declares, never through their names.
 *
 * Adding a task: one file defining a gnn_task_kind_t (trainer/tasks/:
 * node classification, link prediction) and its --task name in
 * trainer/train.c.
 */
#ifndef GNN_TRAINER_TASK_H
#define GNN_TRAINER_TASK_H

#include "graph/graph_file.h"
#include "kernels/backend.h"
#include "sampler/loader.h"
#include "trainer/layer.h"

#include <stdint.h>

struct gnn_job;

#define GNN_TASK_MAX_METRICS 24

/* One evaluation: the task's metrics, in the order of its keys. */
typedef struct {
    double v[GNN_TASK_MAX_METRICS];
} gnn_metrics_t;

typedef struct gnn_task_kind {
    const char *name;
    /* Keys of the metrics, as the log writes them, in order. */
    int n_metrics;
    const char *metric_keys[GNN_TASK_MAX_METRICS];
    /* Roles (indices into the metrics). The best epoch has the highest
     * `select` (ties: the lowest `stop`); early stopping counts
     * evaluations without a new lowest `stop` (a loss); `train`, `test`
     * and `select` are reported for the best epoch, `select` and `test`
     * in the final line. */
    int select, stop, train, test;
    /* Short labels of train, select and test for the progress line, and
     * what the select and test metrics are called in the summary
     * ("test accuracy 81.50 %"). */
    const char *train_label, *select_label, *test_label, *metric_name;
    /* The loss may read any node's output (link prediction: negatives
     * anywhere), so a step over a partition directory exchanges every halo
     * row, not only those near training targets. */
    int loss_reads_all;

    /* Optional: fill what depends on the options (metric keys, roles) into
     * own, the job's copy of this kind, before anything is read. 0 or
     * GNN_EUSAGE. */
    int (*configure)(struct gnn_job *j, struct gnn_task_kind *own);
    /* Optional: parameters of the task's own (after the model's in the
     * flat buffers: trained, averaged, checkpointed with them), and their
     * initialisation on the host (ctx: the job). */
    int64_t (*extra_params)(const struct gnn_job *j);
    void (*extra_init)(void *ctx, float *w, int64_t n, uint64_t seed);
    /* Optional, with extra_params: those parameters as PyTorch tensors for
     * --save-model (names in full, offsets from the first of them) into t
     * (GNN_LAYER_MAX_TENSORS): their count. */
    int (*extra_tensors)(const struct gnn_job *j, gnn_layer_tensor_t *t);
    /* What the task needs of a graph file (one process): 0 or GNN_EINVAL
     * naming what is missing. */
    int (*check_graph)(const gnn_graph_t *g, const char *path);
    /* Targets onto the backend (collective over a partition directory,
     * where the checks are agreed across ranks), and the model's output
     * width into *out_dim. */
    int (*setup)(struct gnn_job *j, int64_t *out_dim);
    /* Training seeds held here (host ids of the local graph) and their
     * number over all ranks, for the mini-batch loader. */
    void (*train_seeds)(const struct gnn_job *j, const int64_t **ids, int64_t *n,
                        int64_t *total);
    /* Host labels of the local nodes the loader copies per seed (NULL:
     * none). */
    const int64_t *(*seed_targets)(const struct gnn_job *j);
    /*
     * Loss over a full-graph forward (logits: one row per local node, the
     * rank's own first): *loss = mean over the training targets held here
     * (0 with none), dlogits (n x out_dim, backend) = its gradient. *count:
     * the targets it averaged over.
     */
    int (*full_loss)(struct gnn_job *j, const float *logits, int64_t n, double *loss,
                     float *dlogits, int64_t *count);
    /* Optional: the same queued without waiting, the mean loss into
     * loss_dev (a backend buffer of one double), for a mode that reads it
     * after the step; called only once full_loss has run in this process
     * (its checks of the targets made). NULL: full_loss every epoch. */
    int (*full_loss_async)(struct gnn_job *j, const float *logits, int64_t n, double *loss_dev,
                           float *dlogits, int64_t *count);
    /* Loss over a mini-batch's seeds (the first ns rows of logits, y the
     * batch's targets on the backend, b the batch): the mean over its
     * items (b->n_items), and its gradient. */
    int (*batch_loss)(struct gnn_job *j, const float *logits, const gnn_loader_batch_t *b,
                      const int64_t *y, int64_t ns, double *loss, float *dlogits);
    /* Optional: the same queued without waiting, the mean loss into
     * loss_dev (a backend buffer of one double); called only once every
     * training target has passed batch_loss (after a whole epoch). */
    int (*batch_loss_async)(struct gnn_job *j, const float *logits, const gnn_loader_batch_t *b,
                            const int64_t *y, int64_t ns, double *loss_dev, float *dlogits);
    /* Optional, edge batches: the loader's hook (sampler/loader.h; ctx:
     * the job) making a batch's seeds of its items (train_seeds' ids), and
     * the most output rows a batch can have (else --batch-size). */
    int (*edge_seeds)(void *ctx, const int64_t *items, int64_t n, uint64_t seed, uint64_t epoch,
                      gnn_loader_edges_t *out);
    int64_t (*batch_rows)(const struct gnn_job *j);
    /* Optional: this epoch's batches, given (not cut from a shuffle): the
     * items held here grouped by batch, batch b = items[starts[b] ..
     * starts[b + 1]), n_batches the same on every rank (a batch may be
     * empty on some). Arrays owned by the task, valid for the epoch. */
    int (*epoch_batches)(struct gnn_job *j, const int64_t **items, const int64_t **starts,
                         int64_t *n_batches);
    /* The metrics of logits over every local node (n rows), reduced over
     * the ranks of a partition directory (collective then). */
    int (*evaluate)(struct gnn_job *j, const float *logits, int64_t n, gnn_metrics_t *out);
    /* Lines of gnn-train's set-up report: the targets' counts. */
    void (*describe)(const struct gnn_job *j, char *buf, size_t size);
    void (*free)(struct gnn_job *j);
} gnn_task_kind_t;

/* Node classification (trainer/tasks/nodeclass.c) and link prediction
 * (trainer/tasks/link.c). */
extern const gnn_task_kind_t gnn_task_nodeclass;
extern const gnn_task_kind_t gnn_task_link;

#endif
