/*
 * What the two distributed modes share (trainer/job.h): this rank's part
 * of a partition directory loaded and checked with every other rank's,
 * its features and graph on the backend, the halo exchange and gradient
 * allreduce (trainer/distdev.h), inference as the full-graph forward over
 * the parts, and an epoch's communication counters reduced for the log
 * (bytes sent by all ranks, the slowest rank's times).
 *
 * Dropout is keyed by the graph file's node ids and the gcn sources by
 * their whole-graph out-degrees, so P ranks compute what one process
 * computes on the whole graph.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"
#include "graph/base/mpiutil.h"
#include "trainer/typed.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

/* What a typed model needs of the partition: its types (meta.h5's, the
 * same on every rank, so every rank fails alike and the failure is
 * agreed: one rank reports it), a basis count within the relations. */
static int typed_checks(const gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    const gnn_dist_part_t *d = j->dist;
    GNN_CHECK(d->types, GNN_EINVAL,
              "%s: --model %s needs a graph with node types and relations (partition a "
              "format version 2 graph file)",
              o->data, j->kind->name);
    GNN_CHECK(o->num_bases <= d->types->n_rels, GNN_EUSAGE,
              "--num-bases %d: %s has only %d relations", o->num_bases, o->data,
              d->types->n_rels);
fail:
    return rc;
}

int gnn__dist_setup(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_backend_t *be = j->be;
    gnn_dist_part_t *d = j->dist;
    GNN_TRY(gnn_dist_load(MPI_COMM_WORLD, o->data, j->mode->minibatch, d));
    GNN_TRY(gnn__state_fingerprint(j));
    int64_t n = d->n_owned, nl = d->n_local, f = d->feat_dim;
    if (j->kind->typed) GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, typed_checks(j)));
    j->g.types = d->types; /* the job's from now on */
    d->types = NULL;
    /* What every rank can train on, agreed: the task's targets, and the
     * features of the rank's own nodes (the halo rows are their owners'). */
    GNN_TRY(j->task->setup(j, &j->out_dim));
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, gnn__check_finite(o->data, d->feat, n, f, d->gid)));
    /* On a host-memory backend fetches are served from the input rows'
     * owned ones (the same rows, normalized alike): one copy of them. */
    const int lend = d->own_feat && f > 0 && gnn_be_host_memory(be);
    if (o->normalize_features) {
        int64_t neg = gnn__normalize_rows(d->feat, nl, f);
        if (d->own_feat && !lend) gnn__normalize_rows(d->own_feat, n, f); /* what fetches serve */
        if (j->rank == 0) gnn__normalize_warn(neg, nl); /* rank 0's part says it */
    }
    j->g.feat_dim = f;
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, gnn__input_setup(j, n, d->gid)));
    j->g.num_classes = j->out_dim;
    j->g.csr.n_rows = n;
    j->g.csr.nnz = d->csr.nnz;
    GNN_TRY(gnn_be_upload_take(be, (void **)&d->feat, (size_t)nl * (size_t)f * sizeof(float),
                               (void **)&j->x));
    if (lend) {
        gnn_free(d->own_feat);
        d->own_feat = j->x;
        d->own_feat_lent = 1;
    }
    GNN_TRY(gnn__buf_upload(be, d->gid, (size_t)nl * sizeof(int64_t), (void **)&j->row_id));
    if (j->kind->typed)
        GNN_TRY(gnn_typed_graph_create(be, &d->csr, d->etype, d->gid, j->g.types,
                                       gnn_typed_order_parse(j->o->rgcn_order), 0, 0, &j->bg));
    else
        GNN_TRY(gnn_be_graph_create_src_deg(be, &d->csr, d->src_deg, &j->bg));
    GNN_TRY(j->mode->setup(j));
fail:
    return rc;
}

int gnn__dist_open_exchange(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_dist_part_t *d = j->dist;
    const gnn_aggr_def_t *sum = NULL;
    GNN_TRY(gnn_aggr_registry_find(j->reg, "sum", &sum));
    const int direct = !strcmp(o->cuda_aware_mpi, "on") ? 1 : !strcmp(o->cuda_aware_mpi, "off") ? 0 : -1;
    GNN_TRY(gnn_dist_dev_create(d, j->be, sum, direct, &j->ddev));
    j->stage = gnn_dist_dev_staged(j->ddev);
    char targets[256];
    j->task->describe(j, targets, sizeof targets);
    GNN_INFO("%s: part %d of %d: %" PRId64 " of %" PRId64 " nodes owned, %" PRId64
             " halo, %" PRId64 " in-edges, %" PRId64 " features, %s; %s, %s, %s, halo rows %s, "
             "gradients summed with %s",
             o->data, d->rank, d->size, d->n_owned, d->n_global, d->n_local - d->n_owned,
             (int64_t)d->csr.nnz, d->feat_dim, targets, o->model,
             j->mode->minibatch ? "mini-batch" : "full graph", gnn_backend_describe(j->be),
             gnn_dist_dev_halo_name(j->ddev), gnn_dist_dev_allreduce_name(j->ddev));
fail:
    return rc;
}

int gnn__dist_set_halo(gnn_job_t *j, int on)
{
    gnn_model_halo_t h = {.ctx = j->ddev,
                          .forward = gnn_dist_dev_halo_forward,
                          .backward = gnn_dist_dev_halo_backward,
                          .n_rows = j->dist->n_local,
                          .row_id = j->row_id,
                          .n_global = j->dist->n_global};
    return gnn_model_set_halo(j->model, on ? &h : NULL);
}

int gnn__dist_infer(gnn_job_t *j, gnn_infer_t *out)
{
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
    const float *x = NULL;
    int rc = gnn__dist_set_halo(j, 1);
    if (rc == 0) rc = gnn__input_dist_full(j, &x);
    if (rc == 0) rc = gnn_model_forward(j->model, graphs, x, 0, &out->logits);
    if (rc == 0) /* owned rows first */
        out->hidden = gnn_model_last_hidden(j->model, &out->hidden_rows, &out->hidden_cols);
    /* Mini-batch steps run without the exchange. */
    int off = j->mode->minibatch ? gnn__dist_set_halo(j, 0) : 0;
    return rc < 0 ? rc : off;
}

int gnn__dist_epoch(gnn_job_t *j, double *loss,
                    int (*epoch)(gnn_job_t *j, double *loss, double *waits, int64_t *remote,
                                 int64_t *hits))
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    d->bytes_sent = d->fetch_bytes = d->sample_bytes = j->grad_bytes = 0;
    d->exchange_s = d->fetch_s = d->sample_s = j->allreduce_s = 0.0;
    int64_t remote = 0, hits = 0;
    double t_start = gnn__now_s(), waits = 0.0;
    GNN_TRY(epoch(j, loss, &waits, &remote, &hits));
    /* This rank's step time less its own waits: the slowest is logged. */
    double comp = gnn__now_s() - t_start - waits - j->allreduce_s;
    int64_t b[5] = {d->bytes_sent + d->fetch_bytes, j->grad_bytes, remote, hits, d->sample_bytes};
    double t[4] = {waits, j->allreduce_s, comp, d->fetch_s + d->sample_s};
    double ts = j->lst.sample_s, tsmax = 0.0;
    int64_t ball[5];
    GNN_CHECK(MPI_Allreduce(b, ball, 5, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Allreduce(MPI_IN_PLACE, t, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) ==
                      MPI_SUCCESS &&
                  MPI_Allreduce(&ts, &tsmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
              GNN_EMPI, "MPI_Allreduce failed");
    j->ep_bytes[0] = ball[0];
    j->ep_bytes[1] = ball[1];
    j->ep_bytes[2] = ball[4];
    j->ep_remote = ball[2];
    j->ep_hits = ball[3];
    j->ep_sample_s = j->mode->minibatch ? tsmax : 0.0;
    j->ep_fetch_s = t[0];
    j->ep_allreduce_s = t[1];
    j->ep_compute_s = t[2] > 0.0 ? t[2] : 0.0;
    j->ep_fetch_busy_s = t[3];
fail:
    return rc;
}

void gnn__log_dist(const gnn_job_t *j, FILE *f, void (*mode_keys)(const gnn_job_t *, FILE *))
{
    /* bytes: sent by all ranks; times: the slowest rank's */
    fprintf(f, ", \"ranks\": %d, \"feat_bytes\": %" PRId64 ", \"sample_bytes\": %" PRId64
               ", \"grad_bytes\": %" PRId64,
            j->dist->size, j->ep_bytes[0], j->ep_bytes[2], j->ep_bytes[1]);
    mode_keys(j, f);
    fprintf(f, ", \"fetch_s\": ");
    gnn_json_number(f, j->ep_fetch_s);
    fprintf(f, ", \"allreduce_s\": ");
    gnn_json_number(f, j->ep_allreduce_s);
}

int gnn__dist_gather_rows(gnn_job_t *j, const float *mine, int64_t f, float *dst)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, N = d->n_global;
    int R = d->size, cn = (int)n, local = 0;
    float *got = NULL;
    int64_t *gids = NULL;
    int *cnt = gnn_calloc((size_t)R * 2, sizeof *cnt);
    MPI_Datatype row = MPI_DATATYPE_NULL;
    if (d->rank == 0) {
        got = gnn_alloc_large(((size_t)N * (size_t)f + 1) * sizeof(float));
        gids = gnn_malloc_array((size_t)N + 1, sizeof *gids);
    }
    if (!cnt || (d->rank == 0 && (!got || !gids || !dst)))
        local = GNN_FAIL(GNN_ENOMEM, "rows of %" PRId64 " nodes on rank 0", N);
    if (local == 0 && (n > INT_MAX || f > INT_MAX || f < 1))
        local = GNN_FAIL(GNN_ERANGE, "%" PRId64 " rows of %" PRId64 " on one rank", n, f);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    int *displ = cnt + R;
    GNN_MPI_TRY(MPI_Gather(&cn, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD));
    int64_t at = 0;
    for (int r = 0; d->rank == 0 && r < R; r++) {
        displ[r] = (int)at;
        at += cnt[r];
    }
    GNN_MPI_TRY(MPI_Gatherv(d->gid, cn, MPI_INT64_T, gids, cnt, displ, MPI_INT64_T, 0,
                            MPI_COMM_WORLD));
    GNN_MPI_TRY(MPI_Type_contiguous((int)f, MPI_FLOAT, &row));
    GNN_MPI_TRY(MPI_Type_commit(&row));
    GNN_MPI_TRY(MPI_Gatherv(mine, cn, row, got, cnt, displ, row, 0, MPI_COMM_WORLD));
    if (d->rank == 0 && at != N)
        local = GNN_FAIL(GNN_EINVAL, "%" PRId64 " rows gathered for %" PRId64 " nodes", at, N);
    for (int64_t i = 0; d->rank == 0 && local == 0 && i < at; i++) {
        if (gids[i] < 0 || gids[i] >= N) {
            local = GNN_FAIL(GNN_EINVAL, "a gathered row of node %" PRId64 " out of range",
                             gids[i]);
            break;
        }
        memcpy(dst + gids[i] * f, got + i * f, (size_t)f * sizeof(float));
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
fail:
    if (row != MPI_DATATYPE_NULL) MPI_Type_free(&row);
    gnn_free(got);
    gnn_free(gids);
    gnn_free(cnt);
    return rc;
}
