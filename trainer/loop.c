/*
 * The epoch loop, written once over every mode (trainer/mode.h) and task
 * (trainer/task.h): runs over consecutive seeds, each epoch's training
 * (the mode's), evaluation every --eval-every epochs and at the last
 * (the mode's inference, the task's metrics), the best epoch (the task's
 * `select` metric, ties to the lower `stop`), early stopping after
 * --early-stop evaluations without a new lowest `stop`, divergence
 * checks, and checkpoints every --checkpoint-every epochs and after each
 * run. The parameters of the best epoch are kept on the host
 * (j->ck.best_params) and are the ones predictions are made with.
 */
#include "trainer/job.h"

#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* The task's metrics of the model as it is (inference over every node). */
static int evaluate(gnn_job_t *j, gnn_metrics_t *m)
{
    gnn_infer_t inf = {0};
    int rc = j->mode->infer(j, &inf);
    if (rc < 0) return rc;
    return j->task->evaluate(j, inf.logits, j->g.csr.n_rows, m);
}

/* Run j->ck.run from its current position; model and Adam state set. */
static int run_epochs(gnn_job_t *j)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    const gnn_train_opts_t *o = j->o;
    const gnn_task_kind_t *t = j->task;
    size_t pbytes = (size_t)c->n_params * sizeof(float);
    gnn_metrics_t ev; /* null in the log until the first evaluation */
    for (int k = 0; k < GNN_TASK_MAX_METRICS; k++) ev.v[k] = NAN;
    gnn_progress_t *prog = gnn_progress_start("epochs", o->epochs, "epochs");
    gnn_progress_set(prog, c->epoch);
    while (c->epoch < o->epochs) {
        double t0 = gnn__now_s(), loss;
        GNN_TRY(j->mode->epoch(j, &loss));
        GNN_TRY(gnn_be_sync(j->be));
        double epoch_s = gnn__now_s() - t0, end_unix = gnn__wall_s();
        if (c->epoch > 0 || o->epochs == 1) { /* the first epoch also faults in every buffer */
            j->epoch_s_sum += epoch_s;
            j->epoch_s_count++;
        }
        c->epoch++;
        int evaluated = o->eval_every > 0 && (c->epoch % o->eval_every == 0 || c->epoch == o->epochs);
        double eval_s = 0.0;
        int stop = 0;
        if (evaluated) {
            double t1 = gnn__now_s();
            GNN_TRY(evaluate(j, &ev));
            eval_s = gnn__now_s() - t1;
            double sel = ev.v[t->select], lo = ev.v[t->stop];
            if (isnan(c->best_valid_acc) || sel > c->best_valid_acc ||
                (sel == c->best_valid_acc && lo < c->best_valid_loss)) {
                c->best_valid_acc = sel;
                c->best_valid_loss = lo;
                c->best_test_acc = ev.v[t->test];
                c->best_train_acc = ev.v[t->train];
                for (int k = 0; k < t->n_metrics; k++) c->best_metrics[k] = ev.v[k];
                c->best_epoch = c->epoch;
                GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), pbytes));
                GNN_TRY(gnn__input_keep_best(j));
            }
            if (lo < c->min_valid_loss) {
                c->min_valid_loss = lo;
                c->bad_evals = 0;
            } else {
                c->bad_evals++;
            }
            stop = o->early_stop > 0 && c->bad_evals >= o->early_stop;
        }
        /* Diverged. Both losses are reduced over the ranks, so every rank
         * decides alike; the agreement names one reporting rank. */
        int local = 0;
        if (!isfinite(loss))
            local = GNN_FAIL(GNN_ERANGE, "loss is not finite at epoch %" PRId64 " (lower --lr?)",
                             c->epoch);
        else if (evaluated && !isfinite(ev.v[t->stop]))
            local = GNN_FAIL(GNN_ERANGE, "validation loss is not finite at epoch %" PRId64
                                         " (lower --lr?)",
                             c->epoch);
        GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, local) : local);
        gnn__log_epoch(j, c->epoch, loss, &ev, evaluated, epoch_s, eval_s, end_unix);
        gnn_progress_set(prog, c->epoch);
        if (stop) {
            GNN_INFO("run %" PRId64 ": early stop at epoch %" PRId64 " (validation loss not "
                     "lower for %d evaluations)",
                     c->run + 1, c->epoch, o->early_stop);
            break;
        }
        if (o->checkpoint && c->epoch % o->checkpoint_every == 0 && c->epoch < o->epochs)
            GNN_TRY(gnn__state_save(j));
    }
    gnn_progress_finish(prog);
    if (c->best_epoch < 0 || o->eval_every == 0) {
        /* Never evaluated (--eval-every 0, or no epoch to train): the last
         * parameters stand, metrics unknown. */
        c->best_epoch = c->epoch;
        c->best_valid_acc = c->best_test_acc = c->best_train_acc = NAN;
        for (int64_t k = 0; k < c->n_metrics; k++) c->best_metrics[k] = NAN;
        GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), pbytes));
        GNN_TRY(gnn__input_keep_best(j));
    }
    return 0;
fail:
    gnn_progress_end(prog, rc);
    return rc;
}

int gnn__start_run(gnn_job_t *j, int restore)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    gnn_model_config_t mc = {
        .kind = j->kind,
        .layers = j->o->layers,
        .in_dim = j->in_dim,
        .hidden = j->o->hidden,
        .classes = j->out_dim,
        .dropout = (float)j->o->dropout,
        .init_fan_in = !strcmp(j->init, "fan-in"),
        .aggr = j->aggr,
        .attention = j->attn,
        .heads = j->o->heads,
        .out_heads = j->o->out_heads,
        .relations = j->g.types ? j->g.types->n_rels : 0,
        .num_bases = j->o->num_bases,
        .attn_dropout = (float)j->o->attn_dropout,
        .negative_slope = (float)j->o->negative_slope,
        .extra = j->task->extra_params ? j->task->extra_params(j) : 0,
        .extra_init = j->task->extra_init,
        .extra_ctx = j,
    };
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run;
    gnn_model_free(j->model);
    j->model = NULL;
    GNN_TRY(gnn_model_create(j->be, j->reg, &mc, seed, &j->model));
    GNN_TRY(gnn__input_start_run(j, restore));
    if (j->mode->start_run) GNN_TRY(j->mode->start_run(j));
    int64_t np = gnn_model_n_params(j->model);
    size_t bytes = (size_t)np * sizeof(float);
    if (!c->params) GNN_TRY(gnn__state_alloc(j, np));
    if (!j->adam_m) {
        GNN_TRY(gnn_be_alloc(j->be, bytes, (void **)&j->adam_m));
        GNN_TRY(gnn_be_alloc(j->be, bytes, (void **)&j->adam_v));
    }
    if (restore) {
        GNN_CHECK(c->n_params == np, GNN_EINVAL,
                  "%s: %" PRId64 " parameters in the checkpoint, the model has %" PRId64,
                  j->o->checkpoint, c->n_params, np);
        GNN_TRY(gnn_be_upload(j->be, gnn_model_params(j->model), c->params, bytes));
        GNN_TRY(gnn_be_upload(j->be, j->adam_m, c->adam_m, bytes));
        GNN_TRY(gnn_be_upload(j->be, j->adam_v, c->adam_v, bytes));
        gnn_model_set_rng(j->model, seed, c->rng_offset);
    } else {
        GNN_TRY(gnn_be_zero(j->be, j->adam_m, bytes));
        GNN_TRY(gnn_be_zero(j->be, j->adam_v, bytes));
        gnn__state_new_run(c, c->run);
        GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), bytes));
    }
    return 0;
fail:
    return rc;
}

int gnn__runs(gnn_job_t *j, int restore, gnn_train_result_t *r)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_checkpoint_t *c = &j->ck;
    int64_t first = c->runs_done;
    for (int64_t run = first; run < o->runs; run++) {
        int cont = restore && run == first;
        if (!cont) c->run = run;
        GNN_TRY(gnn__start_run(j, cont));
        GNN_TRY(run_epochs(j));
        c->run_test_acc[c->runs_done] = c->best_test_acc;
        c->run_valid_acc[c->runs_done] = c->best_valid_acc;
        for (int64_t k = 0; k < c->n_metrics; k++)
            c->run_metrics[c->runs_done * c->n_metrics + k] = c->best_metrics[k];
        c->runs_done++;
        if (!isnan(c->best_test_acc))
            GNN_INFO("run %" PRId64 "/%d: test %s %.2f %% at epoch %" PRId64
                     " (validation %.2f %%)",
                     run + 1, o->runs, j->task->metric_name, 100.0 * c->best_test_acc,
                     c->best_epoch, 100.0 * c->best_valid_acc);
        if (o->checkpoint) GNN_TRY(gnn__state_save(j));
    }

    *r = (gnn_train_result_t){0};
    r->runs = (int)c->runs_done;
    r->test_acc = c->best_test_acc;
    r->valid_acc = c->best_valid_acc;
    r->best_epoch = c->best_epoch;
    double s = 0.0, s2 = 0.0, sv = 0.0;
    for (int64_t i = 0; i < c->runs_done; i++) {
        s += c->run_test_acc[i];
        sv += c->run_valid_acc[i];
    }
    r->test_acc_mean = c->runs_done ? s / (double)c->runs_done : 0.0;
    r->valid_acc_mean = c->runs_done ? sv / (double)c->runs_done : 0.0;
    for (int64_t i = 0; i < c->runs_done; i++)
        s2 += (c->run_test_acc[i] - r->test_acc_mean) * (c->run_test_acc[i] - r->test_acc_mean);
    r->test_acc_std = c->runs_done ? sqrt(s2 / (double)c->runs_done) : 0.0;
    r->epoch_s_mean = j->epoch_s_count ? j->epoch_s_sum / (double)j->epoch_s_count : 0.0;
fail:
    return rc;
}
