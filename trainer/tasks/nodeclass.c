/*
 * Node classification (trainer/task.h): every labelled node of the train
 * split is a target; the loss is softmax cross-entropy over the model's
 * logits, the mean over the targets; evaluation reports the accuracy on
 * each split and the validation loss, and the best epoch is the one of the
 * highest validation accuracy (ties: the lower validation loss).
 *
 * Over a partition directory each rank holds the labels and split nodes
 * it owns; losses and metrics are sums over the ranks divided by the
 * totals, so P ranks report what one process reports.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

typedef struct {
    int64_t *labels;                  /* backend, one per local node (owned) */
    int64_t *split[GNN_NUM_SPLITS];   /* backend, local ids */
    int64_t split_n[GNN_NUM_SPLITS];  /* held here */
    int64_t split_total[GNN_NUM_SPLITS]; /* over all ranks */
    const int64_t *host_train;        /* host: the train split's local ids */
    const int64_t *host_labels;       /* host: the labels */
} nodeclass_t;

static int check_graph(const gnn_graph_t *g, const char *path)
{
    int rc = 0;
    GNN_CHECK(g->label && g->num_classes > 0, GNN_EINVAL,
              "%s has no labels (node classification needs labels and splits)", path);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        GNN_CHECK(g->split[s] && g->split_size[s] >= 0, GNN_EINVAL,
                  "%s has no %s split (gnn-train needs train, valid and test splits)", path,
                  gnn_split_names[s]);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        GNN_CHECK(g->split_size[s] > 0, GNN_EINVAL,
                  "%s: the %s split is empty (gnn-train needs train, valid and test nodes)", path,
                  gnn_split_names[s]);
    /* Training and evaluation nodes must be labelled. */
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        for (int64_t i = 0; i < g->split_size[s]; i++)
            GNN_CHECK(g->label[g->split[s][i]] >= 0, GNN_EINVAL,
                      "%s: node %" PRId64 " of the %s split has no label", path, g->split[s][i],
                      gnn_split_names[s]);
fail:
    return rc;
}

/* Over a partition directory, what every rank can train on, agreed: the
 * splits (their totals are every rank's) and the labels of the rank's own
 * split nodes. */
static int check_part(const gnn_job_t *j)
{
    const gnn_dist_part_t *d = j->dist;
    const char *data = j->o->data;
    int local = 0;
    for (int s = 0; s < GNN_NUM_SPLITS && local == 0; s++)
        if (d->split_total[s] == 0)
            local = GNN_FAIL(GNN_EINVAL, "%s: the %s split is empty (gnn-train needs train, valid "
                                         "and test nodes)",
                             data, gnn_split_names[s]);
    for (int s = 0; s < GNN_NUM_SPLITS && local == 0; s++)
        for (int64_t i = 0; i < d->split_n[s] && local == 0; i++)
            if (d->label[d->split[s][i]] < 0)
                local = GNN_FAIL(GNN_EINVAL, "%s: node %" PRId64 " of the %s split has no label",
                                 data, d->gid[d->split[s][i]], gnn_split_names[s]);
    return gnn_dist_agree(MPI_COMM_WORLD, local);
}

static int setup(gnn_job_t *j, int64_t *out_dim)
{
    int rc = 0;
    nodeclass_t *t = gnn_calloc(1, sizeof *t);
    GNN_CHECK(t, GNN_ENOMEM, "node classification");
    j->task_state = t;
    const int64_t *label, *const *split;
    int64_t n;
    if (j->dist) {
        const gnn_dist_part_t *d = j->dist;
        GNN_TRY(check_part(j));
        n = d->n_owned;
        label = d->label;
        split = (const int64_t *const *)d->split;
        for (int s = 0; s < GNN_NUM_SPLITS; s++) {
            t->split_n[s] = d->split_n[s];
            t->split_total[s] = d->split_total[s];
        }
        *out_dim = d->num_classes;
    } else {
        const gnn_graph_t *g = &j->g;
        n = g->csr.n_rows;
        label = g->label;
        split = (const int64_t *const *)g->split;
        for (int s = 0; s < GNN_NUM_SPLITS; s++)
            t->split_n[s] = t->split_total[s] = g->split_size[s];
        *out_dim = g->num_classes;
    }
    t->host_labels = label;
    t->host_train = split[GNN_SPLIT_TRAIN];
    GNN_TRY(gnn__buf_upload(j->be, label, (size_t)n * sizeof(int64_t), (void **)&t->labels));
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        GNN_TRY(gnn__buf_upload(j->be, split[s], (size_t)t->split_n[s] * sizeof(int64_t),
                                (void **)&t->split[s]));
fail:
    return rc;
}

static void train_seeds(const gnn_job_t *j, const int64_t **ids, int64_t *n, int64_t *total)
{
    const nodeclass_t *t = j->task_state;
    *ids = t->host_train;
    *n = t->split_n[GNN_SPLIT_TRAIN];
    *total = t->split_total[GNN_SPLIT_TRAIN];
}

static const int64_t *seed_targets(const gnn_job_t *j)
{
    return ((const nodeclass_t *)j->task_state)->host_labels;
}

static int full_loss(gnn_job_t *j, const float *logits, int64_t n, double *loss, float *dlogits,
                     int64_t *count)
{
    nodeclass_t *t = j->task_state;
    int64_t nt = t->split_n[GNN_SPLIT_TRAIN], C = j->out_dim;
    *count = nt;
    *loss = 0.0;
    if (nt == 0) return gnn_be_zero(j->be, dlogits, (size_t)(n * C) * sizeof(float));
    return gnn_be_softmax_xent(j->be, n, C, logits, t->labels, t->split[GNN_SPLIT_TRAIN], nt, loss,
                               dlogits);
}

static int full_loss_async(gnn_job_t *j, const float *logits, int64_t n, double *loss_dev,
                           float *dlogits, int64_t *count)
{
    nodeclass_t *t = j->task_state;
    int64_t nt = t->split_n[GNN_SPLIT_TRAIN], C = j->out_dim;
    *count = nt;
    return gnn_be_softmax_xent_async(j->be, n, C, logits, t->labels, t->split[GNN_SPLIT_TRAIN], nt,
                                     loss_dev, dlogits);
}

static int batch_loss(gnn_job_t *j, const float *logits, const gnn_loader_batch_t *b,
                      const int64_t *y, int64_t ns, double *loss, float *dlogits)
{
    (void)b;
    return gnn_be_softmax_xent(j->be, ns, j->out_dim, logits, y, j->iota, ns, loss, dlogits);
}

static int batch_loss_async(gnn_job_t *j, const float *logits, const gnn_loader_batch_t *b,
                            const int64_t *y, int64_t ns, double *loss_dev, float *dlogits)
{
    (void)b;
    return gnn_be_softmax_xent_async(j->be, ns, j->out_dim, logits, y, j->iota, ns, loss_dev,
                                     dlogits);
}

/* Accuracy per split and the validation loss; over a partition directory
 * sums over the ranks, divided by the totals. */
static int evaluate(gnn_job_t *j, const float *logits, int64_t n, gnn_metrics_t *out)
{
    int rc = 0;
    nodeclass_t *t = j->task_state;
    int64_t C = j->out_dim;
    double acc[GNN_NUM_SPLITS], valid_loss = 0.0;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        int64_t correct = 0;
        if (t->split_n[s] > 0)
            GNN_TRY(gnn_be_count_correct(j->be, n, C, logits, t->labels, t->split[s],
                                         t->split_n[s], &correct));
        acc[s] = t->split_n[s] ? (double)correct / (double)t->split_n[s] : 0.0;
    }
    if (t->split_n[GNN_SPLIT_VALID] > 0)
        GNN_TRY(gnn_be_softmax_xent(j->be, n, C, logits, t->labels, t->split[GNN_SPLIT_VALID],
                                    t->split_n[GNN_SPLIT_VALID], &valid_loss, NULL));
    if (j->dist) {
        double v[GNN_NUM_SPLITS + 1];
        for (int s = 0; s < GNN_NUM_SPLITS; s++) v[s] = acc[s] * (double)t->split_n[s];
        v[GNN_NUM_SPLITS] = valid_loss * (double)t->split_n[GNN_SPLIT_VALID];
        GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, GNN_NUM_SPLITS + 1, MPI_DOUBLE, MPI_SUM,
                                MPI_COMM_WORLD) == MPI_SUCCESS,
                  GNN_EMPI, "MPI_Allreduce failed");
        for (int s = 0; s < GNN_NUM_SPLITS; s++)
            acc[s] = t->split_total[s] ? floor(v[s] + 0.5) / (double)t->split_total[s] : 0.0;
        valid_loss = t->split_total[GNN_SPLIT_VALID]
                         ? v[GNN_NUM_SPLITS] / (double)t->split_total[GNN_SPLIT_VALID]
                         : 0.0;
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) out->v[s] = acc[s];
    out->v[GNN_NUM_SPLITS] = valid_loss;
fail:
    return rc;
}

static void describe(const gnn_job_t *j, char *buf, size_t size)
{
    const nodeclass_t *t = j->task_state;
    if (j->dist)
        snprintf(buf, size,
                 "%" PRId64 " classes, train/valid/test %" PRId64 "/%" PRId64 "/%" PRId64
                 " of %" PRId64 "/%" PRId64 "/%" PRId64,
                 j->out_dim, t->split_n[0], t->split_n[1], t->split_n[2], t->split_total[0],
                 t->split_total[1], t->split_total[2]);
    else
        snprintf(buf, size, "%" PRId64 " classes, train/valid/test %" PRId64 "/%" PRId64 "/%" PRId64,
                 j->out_dim, t->split_n[0], t->split_n[1], t->split_n[2]);
}

static void task_free(gnn_job_t *j)
{
    nodeclass_t *t = j->task_state;
    if (!t) return;
    if (j->be) {
        gnn_be_free(j->be, t->labels);
        for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_be_free(j->be, t->split[s]);
    }
    gnn_free(t);
    j->task_state = NULL;
}

const gnn_task_kind_t gnn_task_nodeclass = {
    .name = "nodeclass",
    .n_metrics = GNN_NUM_SPLITS + 1,
    .metric_keys = {"train_acc", "valid_acc", "test_acc", "valid_loss"},
    .select = GNN_SPLIT_VALID,
    .stop = GNN_NUM_SPLITS,
    .train = GNN_SPLIT_TRAIN,
    .test = GNN_SPLIT_TEST,
    .train_label = "train",
    .select_label = "valid",
    .test_label = "test",
    .metric_name = "accuracy",
    .check_graph = check_graph,
    .setup = setup,
    .train_seeds = train_seeds,
    .seed_targets = seed_targets,
    .full_loss = full_loss,
    .full_loss_async = full_loss_async,
    .batch_loss = batch_loss,
    .batch_loss_async = batch_loss_async,
    .evaluate = evaluate,
    .describe = describe,
    .free = task_free,
};
