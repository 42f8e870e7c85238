/*
 * What gnn-train writes (trainer/job.h): one JSON line per epoch in the
 * --log-json file (the task's metric keys, then the mode's own) and a
 * progress line, the predictions file of the best parameters, and the
 * final line, written last so that it says every output is complete.
 * Over a partition directory rank 0 writes, the predictions gathered to it
 * and placed by graph-file id, so the files are those one process writes.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

void gnn__log_epoch(gnn_job_t *j, int64_t epoch, double loss, const gnn_metrics_t *m,
                    int evaluated, double epoch_s, double eval_s, double end_unix)
{
    const gnn_checkpoint_t *c = &j->ck;
    const gnn_task_kind_t *t = j->task;
    /* The device memory held at the most so far (evaluation included). */
    size_t peak = 0;
    if (j->be && !gnn_be_host_memory(j->be) && gnn_be_mem_peak(j->be, &peak) == 0) {
        j->dev_peak = peak;
        j->dev_peak_known = 1;
    }
    if (j->log) {
        FILE *f = j->log;
        fprintf(f, "{\"run\": %" PRId64 ", \"epoch\": %" PRId64 ", \"loss\": ", c->run, epoch);
        gnn_json_number(f, loss);
        for (int k = 0; k < t->n_metrics; k++) {
            fprintf(f, ", \"%s\": ", t->metric_keys[k]);
            gnn_json_number(f, m->v[k]);
        }
        fprintf(f, ", \"evaluated\": %s, \"epoch_s\": ", evaluated ? "true" : "false");
        gnn_json_number(f, epoch_s);
        fprintf(f, ", \"eval_s\": ");
        gnn_json_number(f, eval_s);
        fprintf(f, ", \"epoch_end_unix\": %.3f", end_unix);
        if (j->mode->log) j->mode->log(j, f);
        fprintf(f, "}\n");
        fflush(f);
    }
    char line[256];
    if (isnan(m->v[t->test])) /* nothing evaluated yet */
        snprintf(line, sizeof line, "run %" PRId64 "/%d epoch %4" PRId64 "/%d  loss %.4f  %.1f ms",
                 c->run + 1, j->o->runs, epoch, j->o->epochs, loss, 1e3 * epoch_s);
    else
        snprintf(line, sizeof line,
                 "run %" PRId64 "/%d epoch %4" PRId64 "/%d  loss %.4f  %s %.4f  %s %.4f  "
                 "%s %.4f  %.1f ms",
                 c->run + 1, j->o->runs, epoch, j->o->epochs, loss, t->train_label,
                 m->v[t->train], t->select_label, m->v[t->select], t->test_label, m->v[t->test],
                 1e3 * epoch_s);
    if (j->o->runs == 1)
        GNN_INFO("%s", line);
    else
        GNN_DEBUG("%s", line);
}

/*
 * Over a partition directory: every rank's rows (its owned nodes) to rank
 * 0, placed by graph-file id, so the file is the one a single process
 * writes. Collective; rank 0 writes.
 */
static int gather_predictions(gnn_job_t *j, const float *logits, const int64_t *pred,
                              const float *hidden, int64_t hc)
{
    int rc = 0, R = j->dist->size, rank = j->dist->rank;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, N = d->n_global, C = d->num_classes;
    int *cnt = gnn_calloc((size_t)R * 2, sizeof *cnt);
    int64_t *ids = NULL, *all_pred = NULL, *all_ids = NULL;
    float *all_logits = NULL, *all_hidden = NULL, *lo = NULL, *hi = NULL;
    int64_t *pr = NULL;
    MPI_Datatype tl = MPI_DATATYPE_NULL, th = MPI_DATATYPE_NULL;
    int local = cnt && n <= INT_MAX && C <= INT_MAX && hc <= INT_MAX && hc > 0
                    ? 0
                    : GNN_FAIL(GNN_ENOMEM, "predictions");
    if (rank == 0 && local == 0) {
        all_ids = gnn_malloc_array((size_t)N + 1, sizeof *all_ids);
        all_pred = gnn_malloc_array((size_t)N + 1, sizeof *all_pred);
        all_logits = gnn_alloc_large(((size_t)N * (size_t)C + 1) * sizeof(float));
        all_hidden = gnn_alloc_large(((size_t)N * (size_t)hc + 1) * sizeof(float));
        lo = gnn_alloc_large(((size_t)N * (size_t)C + 1) * sizeof(float));
        hi = gnn_alloc_large(((size_t)N * (size_t)hc + 1) * sizeof(float));
        pr = gnn_malloc_array((size_t)N + 1, sizeof *pr);
        ids = gnn_malloc_array((size_t)N + 1, sizeof *ids);
        if (!all_ids || !all_pred || !all_logits || !all_hidden || !lo || !hi || !pr || !ids)
            local = GNN_FAIL(GNN_ENOMEM, "predictions of %" PRId64 " nodes", N);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    int mine = (int)n, *displ = cnt + R;
    GNN_CHECK(MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Type_contiguous((int)C, MPI_FLOAT, &tl) == MPI_SUCCESS &&
                  MPI_Type_commit(&tl) == MPI_SUCCESS &&
                  MPI_Type_contiguous((int)hc, MPI_FLOAT, &th) == MPI_SUCCESS &&
                  MPI_Type_commit(&th) == MPI_SUCCESS,
              GNN_EMPI, "gathering predictions failed");
    int64_t at = 0;
    for (int r = 0; rank == 0 && r < R; r++) {
        displ[r] = (int)at;
        at += cnt[r];
    }
    GNN_CHECK(MPI_Gatherv(d->gid, mine, MPI_INT64_T, ids, cnt, displ, MPI_INT64_T, 0,
                          MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Gatherv(pred, mine, MPI_INT64_T, pr, cnt, displ, MPI_INT64_T, 0,
                              MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Gatherv(logits, mine, tl, lo, cnt, displ, tl, 0, MPI_COMM_WORLD) ==
                      MPI_SUCCESS &&
                  MPI_Gatherv(hidden, mine, th, hi, cnt, displ, th, 0, MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
              GNN_EMPI, "gathering predictions failed");
    local = 0;
    if (rank == 0) { /* row of graph-file node v at v */
        for (int64_t i = 0; i < at && local == 0; i++) {
            int64_t v = ids[i];
            if (v < 0 || v >= N) {
                local = GNN_FAIL(GNN_EINVAL, "predictions: node %" PRId64 " out of range", v);
                break;
            }
            all_ids[v] = v;
            all_pred[v] = pr[i];
            memcpy(all_logits + v * C, lo + i * C, (size_t)C * sizeof(float));
            memcpy(all_hidden + v * hc, hi + i * hc, (size_t)hc * sizeof(float));
        }
        if (local == 0 && at != N)
            local = GNN_FAIL(GNN_EINVAL, "predictions: %" PRId64 " rows for %" PRId64 " nodes",
                             at, N);
        if (local == 0)
            local = gnn_predictions_write(j->o->save_predictions, N, all_ids, C, all_logits,
                                          all_pred, hc, all_hidden);
        if (local == 0)
            GNN_INFO("predictions of %" PRId64 " nodes written to %s", N,
                     j->o->save_predictions);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
fail:
    if (tl != MPI_DATATYPE_NULL) MPI_Type_free(&tl);
    if (th != MPI_DATATYPE_NULL) MPI_Type_free(&th);
    gnn_free(cnt);
    gnn_free(ids);
    gnn_free(all_ids);
    gnn_free(all_pred);
    gnn_free(all_logits);
    gnn_free(all_hidden);
    gnn_free(lo);
    gnn_free(hi);
    gnn_free(pr);
    return rc;
}

/*
 * The embeddings (the last layer's output) of the best parameters of the
 * last run, one row per node: in one process by the graph file's original
 * ids (0 .. n-1 without them); over a partition directory every rank's
 * owned rows gathered on rank 0 by graph-file id, as predictions are.
 */
int gnn__write_embeddings(gnn_job_t *j)
{
    int rc = 0;
    int64_t n = j->g.csr.n_rows, D = j->out_dim;
    float *z = NULL, *all = NULL, *in_rows = NULL;
    int64_t *ids = NULL;
    gnn_infer_t inf = {0};
    size_t pbytes = (size_t)j->ck.n_params * sizeof(float);
    int64_t E = j->emb ? gnn_embed_dim(j->emb) : 0;
    GNN_TRY(gnn_be_upload(j->be, gnn_model_params(j->model), j->ck.best_params, pbytes));
    GNN_TRY(gnn__input_restore_best(j));
    GNN_TRY(j->mode->infer(j, &inf));
    if (j->dist) n = j->dist->n_owned;
    z = gnn_malloc_array((size_t)(n * D) + 1, sizeof *z);
    /* Over ranks a failure here is agreed on below, not returned alone. */
    int local = z ? 0 : GNN_FAIL(GNN_ENOMEM, "embeddings of %" PRId64 " nodes", n);
    if (local == 0) local = gnn_be_download(j->be, z, inf.logits, (size_t)(n * D) * sizeof(float));
    if (!j->dist) {
        GNN_TRY(local);
        ids = gnn_malloc_array((size_t)n + 1, sizeof *ids);
        GNN_CHECK(ids, GNN_ENOMEM, "embeddings");
        for (int64_t v = 0; v < n; v++) ids[v] = j->g.orig_id ? j->g.orig_id[v] : v;
        if (E) { /* the learned input rows (the best epoch's) */
            in_rows = gnn_malloc_array((size_t)(n * E) + 1, sizeof *in_rows);
            GNN_CHECK(in_rows, GNN_ENOMEM, "embeddings: input rows");
            GNN_TRY(gnn__input_gather_array(j, 0, in_rows));
        }
        GNN_TRY(gnn_embeddings_write(j->o->save_embeddings, n, ids, D, z, E, in_rows));
        GNN_INFO("embeddings of %" PRId64 " nodes written to %s", n, j->o->save_embeddings);
        goto fail;
    }
    int64_t N = j->dist->n_global;
    if (j->rank == 0 && local == 0) {
        all = gnn_alloc_large(((size_t)N * (size_t)D + 1) * sizeof(float));
        in_rows = E ? gnn_alloc_large(((size_t)N * (size_t)E + 1) * sizeof(float)) : NULL;
        ids = gnn_malloc_array((size_t)N + 1, sizeof *ids);
        if (!all || !ids || (E && !in_rows))
            local = GNN_FAIL(GNN_ENOMEM, "embeddings of %" PRId64 " nodes", N);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    GNN_TRY(gnn__dist_gather_rows(j, z, D, all)); /* by graph-file id */
    if (E) GNN_TRY(gnn__input_gather_array(j, 0, in_rows)); /* the learned rows, alike */
    if (j->rank == 0) {
        for (int64_t v = 0; v < N; v++) ids[v] = v;
        local = gnn_embeddings_write(j->o->save_embeddings, N, ids, D, all, E, in_rows);
        if (local == 0)
            GNN_INFO("embeddings of %" PRId64 " nodes written to %s", N, j->o->save_embeddings);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
fail:
    gnn_free(in_rows);
    gnn_free(z);
    gnn_free(all);
    gnn_free(ids);
    return rc;
}

/* Predictions of the best parameters of the last run. */
int gnn__write_predictions(gnn_job_t *j)
{
    int rc = 0;
    int64_t n = j->g.csr.n_rows, C = j->out_dim;
    float *logits_h = NULL, *hidden_h = NULL;
    int64_t *pred_d = NULL, *pred_h = NULL, *ids = NULL;
    gnn_infer_t inf = {0};
    size_t pbytes = (size_t)j->ck.n_params * sizeof(float);
    GNN_TRY(gnn_be_upload(j->be, gnn_model_params(j->model), j->ck.best_params, pbytes));
    GNN_TRY(gnn__input_restore_best(j));
    GNN_TRY(j->mode->infer(j, &inf));
    const float *logits = inf.logits, *hidden = inf.hidden;
    int64_t hr = inf.hidden_rows, hc = inf.hidden_cols;
    if (j->dist) { /* owned rows first */
        GNN_CHECK(hidden, GNN_EINVAL, "predictions: no hidden rows");
        pred_h = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
        GNN_CHECK(pred_h, GNN_ENOMEM, "predictions");
        if (gnn_be_host_memory(j->be)) {
            GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_h));
            rc = gather_predictions(j, logits, pred_h, hidden, hc);
            goto fail;
        }
        /* The owned rows to host memory, for MPI. */
        logits_h = gnn_malloc_array((size_t)(n * C) + 1, sizeof(float));
        hidden_h = gnn_malloc_array((size_t)(n * hc) + 1, sizeof(float));
        GNN_CHECK(logits_h && hidden_h, GNN_ENOMEM, "predictions");
        GNN_TRY(gnn_be_alloc(j->be, (size_t)n * sizeof(int64_t), (void **)&pred_d));
        GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_d));
        GNN_TRY(gnn_be_download(j->be, pred_h, pred_d, (size_t)n * sizeof(int64_t)));
        GNN_TRY(gnn_be_download(j->be, logits_h, logits, (size_t)(n * C) * sizeof(float)));
        GNN_TRY(gnn_be_download(j->be, hidden_h, hidden, (size_t)(n * hc) * sizeof(float)));
        rc = gather_predictions(j, logits_h, pred_h, hidden_h, hc);
        goto fail;
    }
    int hidden_on_host = 0;
    if (!hidden) { /* one layer on sparse input: its input is the features */
        hidden = j->g.feat;
        hr = n;
        hc = j->g.feat_dim;
        hidden_on_host = 1;
    }
    logits_h = gnn_malloc_array((size_t)(n * C) + 1, sizeof(float));
    hidden_h = gnn_malloc_array((size_t)(hr * hc) + 1, sizeof(float));
    pred_h = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
    ids = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
    GNN_CHECK(logits_h && hidden_h && pred_h && ids, GNN_ENOMEM, "predictions");
    GNN_TRY(gnn_be_alloc(j->be, (size_t)n * sizeof(int64_t), (void **)&pred_d));
    GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_d));
    GNN_TRY(gnn_be_download(j->be, pred_h, pred_d, (size_t)n * sizeof(int64_t)));
    GNN_TRY(gnn_be_download(j->be, logits_h, logits, (size_t)(n * C) * sizeof(float)));
    if (hidden_on_host)
        memcpy(hidden_h, hidden, (size_t)(hr * hc) * sizeof(float));
    else
        GNN_TRY(gnn_be_download(j->be, hidden_h, hidden, (size_t)(hr * hc) * sizeof(float)));
    for (int64_t v = 0; v < n; v++) ids[v] = j->g.orig_id ? j->g.orig_id[v] : v;
    GNN_TRY(gnn_predictions_write(j->o->save_predictions, n, ids, C, logits_h, pred_h, hc,
                                  hidden_h));
    GNN_INFO("predictions of %" PRId64 " nodes written to %s", n, j->o->save_predictions);
fail:
    gnn_be_free(j->be, pred_d);
    gnn_free(logits_h);
    gnn_free(hidden_h);
    gnn_free(pred_h);
    gnn_free(ids);
    return rc;
}

void gnn__write_final(gnn_job_t *j, const gnn_train_result_t *r)
{
    const gnn_checkpoint_t *c = &j->ck;
    if (j->log) {
        FILE *f = j->log;
        const gnn_task_kind_t *t = j->task;
        fprintf(f, "{\"final\": true, \"runs\": %d, \"%s\": ", r->runs,
                t->metric_keys[t->test]);
        gnn_json_number(f, r->test_acc);
        fprintf(f, ", \"%s\": ", t->metric_keys[t->select]);
        gnn_json_number(f, r->valid_acc);
        fprintf(f, ", \"best_epoch\": %" PRId64 ", \"epoch_s_mean\": ", r->best_epoch);
        gnn_json_number(f, r->epoch_s_mean);
        /* Every other metric at the best epoch of the last run, and their
         * means and deviations over the runs. */
        int64_t nm = c->n_metrics, nr = c->runs_done;
        for (int k = 0; k < nm; k++) {
            if (k == t->test || k == t->select) continue;
            fprintf(f, ", \"%s\": ", t->metric_keys[k]);
            gnn_json_number(f, c->best_metrics[k]);
        }
        for (int k = 0; nr > 1 && k < nm; k++) {
            if (k == t->test || k == t->select) continue;
            double s = 0.0, s2 = 0.0;
            for (int64_t i = 0; i < nr; i++) s += c->run_metrics[i * nm + k];
            double mean = s / (double)nr;
            for (int64_t i = 0; i < nr; i++) {
                double d = c->run_metrics[i * nm + k] - mean;
                s2 += d * d;
            }
            fprintf(f, ", \"%s_mean\": ", t->metric_keys[k]);
            gnn_json_number(f, mean);
            fprintf(f, ", \"%s_std\": ", t->metric_keys[k]);
            gnn_json_number(f, sqrt(s2 / (double)nr));
        }
        if (r->runs > 1) {
            fprintf(f, ", \"%s_mean\": ", t->metric_keys[t->test]);
            gnn_json_number(f, r->test_acc_mean);
            fprintf(f, ", \"%s_std\": ", t->metric_keys[t->test]);
            gnn_json_number(f, r->test_acc_std);
            fprintf(f, ", \"%s_mean\": ", t->metric_keys[t->select]);
            gnn_json_number(f, r->valid_acc_mean);
            fprintf(f, ", \"run_%s\": [", t->metric_keys[t->test]);
            for (int64_t i = 0; i < c->runs_done; i++) {
                if (i) fprintf(f, ", ");
                gnn_json_number(f, c->run_test_acc[i]);
            }
            fprintf(f, "]");
        }
        if (j->dev_peak_known)
            fprintf(f, ", \"device_peak_mb\": %.1f", (double)j->dev_peak / 1048576.0);
        fprintf(f, "}\n");
        fflush(f);
    }
    if (isnan(r->runs > 1 ? r->test_acc_mean : r->test_acc))
        GNN_INFO("%d run%s without evaluation (%s), %.2f ms per epoch", r->runs,
                 r->runs > 1 ? "s" : "",
                 j->o->eval_every == 0 ? "--eval-every 0" : "no epoch trained",
                 1e3 * r->epoch_s_mean);
    else if (r->runs > 1)
        GNN_INFO("test %s %.2f %% +- %.2f over %d runs (valid %.2f %%), %.2f ms per epoch",
                 j->task->metric_name, 100.0 * r->test_acc_mean, 100.0 * r->test_acc_std, r->runs,
                 100.0 * r->valid_acc_mean, 1e3 * r->epoch_s_mean);
    else
        GNN_INFO("test %s %.2f %% at epoch %" PRId64 " (best validation %.2f %%), %.2f ms "
                 "per epoch",
                 j->task->metric_name, 100.0 * r->test_acc, r->best_epoch, 100.0 * r->valid_acc, 1e3 * r->epoch_s_mean);
}
