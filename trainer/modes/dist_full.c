/*
 * Full-graph training over a partition directory (trainer/mode.h), one
 * rank per part: each rank runs the full-graph step on its part, the
 * layers exchanging halo rows with their owners through the model's halo
 * hooks (only the rows the loss reads in training steps, unless
 * --full-halo); the loss is summed over the ranks' training targets and
 * divided by their total, each rank's gradient being its share of that
 * mean, so the gradients are summed with one allreduce and every rank
 * takes the same Adam step.
 */
#include "trainer/job.h"

#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"

#include <inttypes.h>

static int dfull_setup(gnn_job_t *j)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    GNN_TRY(gnn_be_alloc(j->be, (size_t)d->n_owned * (size_t)j->out_dim * sizeof(float) + 1,
                         (void **)&j->dlogits));
    if (!j->o->full_halo && !j->task->loss_reads_all)
        GNN_TRY(gnn_dist_loss_plans(d, j->o->layers));
    GNN_TRY(gnn__dist_open_exchange(j));
    for (int k = 0; d->size > 1 && k < d->n_loss_plans; k++)
        GNN_INFO("training steps: exchange %d receives %" PRId64 " of the %" PRId64
                 " halo rows, those the loss reads (--full-halo: all)",
                 k + 1, d->loss_plan[k].n_recv, d->n_local - d->n_owned);
fail:
    return rc;
}

static int dfull_start_run(gnn_job_t *j) { return gnn__dist_set_halo(j, 1); }

/* The step: forward over the parts, this rank's share of the mean loss,
 * backward (halo gradients back to their owners), gradients summed, Adam.
 * *waits: the time spent in halo exchanges. */
static int dfull_steps(gnn_job_t *j, double *loss, double *waits, int64_t *remote, int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, C = j->out_dim, nt, total;
    const int64_t *train;
    const float *logits;
    double mine = 0.0;
    (void)remote, (void)hits;
    j->task->train_seeds(j, &train, &nt, &total);
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
    const float *x;
    GNN_TRY(gnn__input_dist_full(j, &x)); /* with the halo's learnable rows */
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(j->task->full_loss(j, logits, n, &mine, j->dlogits, &nt));
    if (nt > 0)
        GNN_TRY(gnn_be_axpby(j->be, n * C, (float)((double)nt / (double)total), j->dlogits, 0.0f,
                             j->dlogits));
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    GNN_TRY(gnn__input_dist_full_step(j));
    double sum = mine * (double)nt;
    GNN_TRY(gnn__step_reduce(j, &sum));
    *loss = sum / (double)total;
    *waits = d->exchange_s;
fail:
    return rc;
}

static int dfull_epoch(gnn_job_t *j, double *loss) { return gnn__dist_epoch(j, loss, dfull_steps); }

static void dfull_keys(const gnn_job_t *j, FILE *f)
{
    fprintf(f, ", \"sample_s\": 0, \"compute_s\": ");
    gnn_json_number(f, j->ep_compute_s);
}

static void dfull_log(const gnn_job_t *j, FILE *f) { gnn__log_dist(j, f, dfull_keys); }

const gnn_mode_t gnn_mode_dist_full = {
    .name = "dist-full",
    .distributed = 1,
    .setup = dfull_setup,
    .start_run = dfull_start_run,
    .epoch = dfull_epoch,
    .infer = gnn__dist_infer,
    .log = dfull_log,
};
