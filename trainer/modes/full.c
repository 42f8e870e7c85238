/*
 * Full-graph training in one process (trainer/mode.h): each epoch one
 * training forward over the whole graph (dropout on), the task's loss on
 * its training targets, the backward and one Adam step; inference is a
 * forward without dropout. The first layer may read a sparse copy of the
 * features (--sparse-features).
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "trainer/typed.h"

#include <string.h>

static int full_setup(gnn_job_t *j)
{
    int rc = 0;
    int64_t n = j->g.csr.n_rows;
    GNN_TRY(gnn_be_alloc(j->be, (size_t)n * (size_t)j->out_dim * sizeof(float),
                         (void **)&j->dlogits));
    if (j->kind->typed) {
        GNN_TRY(gnn_typed_graph_create(j->be, &j->g.csr, j->g.etype, NULL, j->g.types,
                                       gnn_typed_order_parse(j->o->rgcn_order), 0, 0, &j->bg));
        if (!j->task->edge_seeds && strcmp(j->o->task, "link")) {
            /* Node classification reads the graph through the relation
             * layout only from now on: the loaded edges go. */
            gnn_free(j->g.csr.indices);
            gnn_free(j->g.etype);
            j->g.csr.indices = NULL;
            j->g.etype = NULL;
        }
    } else
        GNN_TRY(gnn_be_graph_create(j->be, &j->g.csr, &j->bg));
fail:
    return rc;
}

static int full_start_run(gnn_job_t *j)
{
    gnn__replay_drop(j); /* a new model: its step is captured anew */
    return j->bxs ? gnn_model_set_sparse_input(j->model, j->bxs) : 0;
}

/* The whole graph as every layer's graph, forward. */
static int full_forward(gnn_job_t *j, int training, const float **logits)
{
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
    const float *x;
    for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
    int rc = gnn__input_build(j, j->g.csr.n_rows, j->x, NULL, NULL, &x);
    return rc < 0 ? rc : gnn_model_forward(j->model, graphs, x, training, logits);
}

/* A step with the loss queued on the device (j->loss_dev): what a
 * capture holds (replay.c). */
static int full_issue(gnn_job_t *j)
{
    int rc = 0;
    const float *logits;
    int64_t count;
    GNN_TRY(full_forward(j, 1, &logits));
    GNN_TRY(j->task->full_loss_async(j, logits, j->g.csr.n_rows, j->loss_dev, j->dlogits,
                                     &count));
    GNN_TRY(gnn__step(j));
fail:
    return rc;
}

/* A training step; after the first, whose loss checks the targets, the
 * loss is queued with the rest (full_loss_async) and read once the step
 * is queued whole: no wait inside the step, and on a GPU the step is
 * captured once and replayed (--cuda-graphs). */
static int full_epoch(gnn_job_t *j, double *loss)
{
    int rc = 0;
    if (j->task->full_loss_async && j->loss_checked) {
        if (!j->loss_dev) GNN_TRY(gnn_be_alloc(j->be, sizeof(double), (void **)&j->loss_dev));
        j->replay.last = "queued";
        if (gnn__replay_usable(j))
            GNN_TRY(gnn__replay_step(j, full_issue));
        else
            GNN_TRY(full_issue(j));
        GNN_TRY(gnn_be_download(j->be, loss, j->loss_dev, sizeof(double)));
    } else {
        const float *logits;
        int64_t count;
        j->replay.last = "queued";
        GNN_TRY(full_forward(j, 1, &logits));
        GNN_TRY(j->task->full_loss(j, logits, j->g.csr.n_rows, loss, j->dlogits, &count));
        j->loss_checked = 1;
        j->replay.queued++;
        GNN_TRY(gnn__step(j));
    }
fail:
    return rc;
}

static int full_infer(gnn_job_t *j, gnn_infer_t *out)
{
    int rc = full_forward(j, 0, &out->logits);
    if (rc < 0) return rc;
    out->hidden = gnn_model_last_hidden(j->model, &out->hidden_rows, &out->hidden_cols);
    return 0;
}

/* How the epoch's step ran: queued call by call, captured (and run), or
 * replayed from the capture (replay.c). */
static void full_log(const gnn_job_t *j, FILE *f)
{
    fprintf(f, ", \"step\": \"%s\"", j->replay.last ? j->replay.last : "queued");
}

const gnn_mode_t gnn_mode_full = {
    .name = "full",
    .setup = full_setup,
    .start_run = full_start_run,
    .epoch = full_epoch,
    .infer = full_infer,
    .log = full_log,
};
