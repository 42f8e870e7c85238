/*
 * A job's set-up before any training (trainer/job.h): the options checked,
 * the layer kind, the mode, threads, the backend and its SpMM choice, the
 * aggregator registry with its plug-in, and, training on a graph file, the
 * graph with its features (dense, or a sparse copy for the first layer).
 * Over a partition directory the part itself is loaded afterwards, by
 * every rank together (modes/distributed.c).
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gnn__check_finite(const char *path, const float *x, int64_t n, int64_t f, const int64_t *id)
{
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static)
    for (int64_t v = 0; v < n; v++)
        for (int64_t k = 0; k < f; k++)
            if (!isfinite(x[v * f + k])) {
                first = v < first ? v : first;
                break;
            }
    if (first == n) return 0;
    int64_t k = 0;
    while (isfinite(x[first * f + k])) k++;
    return GNN_FAIL(GNN_EINVAL, "%s: feature %" PRId64 " of node %" PRId64 " is %g (gnn-train "
                                "needs finite features)",
                    path, k, id ? id[first] : first, (double)x[first * f + k]);
}

int64_t gnn__normalize_rows(float *x, int64_t n, int64_t f)
{
    int64_t neg = 0;
#pragma omp parallel for schedule(static) reduction(+ : neg)
    for (int64_t v = 0; v < n; v++) {
        float *r = x + v * f;
        double s = 0.0;
        int any = 0;
        for (int64_t k = 0; k < f; k++) {
            s += r[k];
            any |= r[k] < 0.0f;
        }
        neg += any;
        if (s != 0.0) {
            float inv = (float)(1.0 / s);
            for (int64_t k = 0; k < f; k++) r[k] *= inv;
        }
    }
    return neg;
}

void gnn__normalize_warn(int64_t signed_rows, int64_t n)
{
    if (signed_rows > 0)
        GNN_WARN("--normalize-features divides each feature row by its sum, for features that "
                 "are not negative (word counts); %" PRId64 " of %" PRId64 " rows here have "
                 "negative entries, where the sum can lie near 0 and the row grow without bound",
                 signed_rows, n);
}

/* Load the graph file and check it can be trained on (features here, the
 * task's targets by the task). */
static int load_data(gnn_job_t *j)
{
    int rc = 0;
    const char *path = j->o->data;
    GNN_TRY(gnn_graph_load(path, &j->g));
    const gnn_graph_t *g = &j->g;
    if (!g->feat) j->g.feat_dim = 0; /* a featureless graph: learnable rows (input.c) */
    GNN_TRY(j->task->check_graph(g, path));
    if (g->feat) GNN_TRY(gnn__check_finite(path, g->feat, g->csr.n_rows, g->feat_dim, NULL));
    return 0;
fail:
    return rc;
}

/*
 * Dense or sparse first-layer input. Sparse needs a model whose first layer
 * can take it (GCN, or SAGE with a linear aggregator); "auto" picks it when
 * at most 10 % of the features are non-zero. Mini-batches keep the dense
 * table too (layer-wise inference reads it) and take each batch's rows of
 * the sparse one (modes/minibatch.c).
 */
static int setup_features(gnn_job_t *j)
{
    int rc = 0;
    gnn_graph_t *g = &j->g;
    gnn_vid_t n = g->csr.n_rows;
    int64_t f = g->feat_dim;
    const char *mode = j->o->sparse_features;
    if (f == 0) return 0; /* no features: the input is the learnable rows alone */
    /* Whether the first layer takes sparse input: its kind's check on a
     * layer of the model's first shape. */
    gnn_layer_t first = {.kind = j->kind, .index = 0, .fin = f, .aggr = j->aggr};
    int able = j->kind->sparse_check && j->kind->sparse_check(&first) == 0 && !j->emb;
    if (!strcmp(mode, "on") && !able) {
        rc = GNN_FAIL(GNN_EUSAGE, "--sparse-features on: the %s first layer can take sparse "
                                  "input only with a linear aggregator (sum, mean, gcn), not %s",
                      j->kind->name, j->aggr ? j->aggr->name : "none");
        goto fail;
    }
    int64_t nz = 0;
#pragma omp parallel for reduction(+ : nz) schedule(static)
    for (int64_t i = 0; i < (int64_t)n * f; i++) nz += g->feat[i] != 0.0f;
    double density = n && f ? (double)nz / ((double)n * (double)f) : 1.0;
    int use = able && (!strcmp(mode, "on") || (!strcmp(mode, "auto") && density <= 0.10));
    GNN_INFO("features: %.2f %% non-zero, first layer on %s input", 100.0 * density,
             use ? "sparse" : "dense");
    if (use) {
        gnn_csr_t *a = &j->xs;
        a->n_rows = n;
        a->n_cols = f;
        a->nnz = nz;
        a->indptr = gnn_malloc_array((size_t)n + 1, sizeof *a->indptr);
        a->indices = gnn_malloc_array((size_t)nz + 1, sizeof *a->indices);
        a->weights = gnn_malloc_array((size_t)nz + 1, sizeof *a->weights);
        GNN_CHECK(a->indptr && a->indices && a->weights, GNN_ENOMEM, "sparse features");
        a->indptr[0] = 0;
        for (gnn_vid_t v = 0; v < n; v++) {
            gnn_eid_t e = a->indptr[v];
            for (int64_t k = 0; k < f; k++)
                if (g->feat[v * f + k] != 0.0f) {
                    a->indices[e] = k;
                    a->weights[e++] = g->feat[v * f + k];
                }
            a->indptr[v + 1] = e;
        }
        a->flags = GNN_CSR_SORTED;
    }
    size_t bytes = (size_t)n * (size_t)f * sizeof(float);
    if (j->mode->minibatch) { /* dense rows, gathered per batch from a host copy */
        if (gnn_be_host_memory(j->be)) { /* one copy serves both */
            GNN_TRY(gnn_be_upload_take(j->be, (void **)&g->feat, bytes, (void **)&j->x));
            j->feat_host = j->x;
        } else {
            /* On the device when it fits in half its free memory (auto),
             * else read in place from host memory over the bus. */
            int host = !strcmp(j->o->features_on, "host");
            size_t avail = 0;
            if (!strcmp(j->o->features_on, "auto") && gnn_be_mem_available(j->be, &avail) == 0)
                host = bytes > avail / 2;
            gnn_error_clear();
            if (host) {
                GNN_TRY(gnn_be_map_host(j->be, g->feat, bytes, (void **)&j->x));
                j->x_mapped = 1;
            } else {
                GNN_TRY(gnn__buf_upload(j->be, g->feat, bytes, (void **)&j->x));
            }
            j->feat_host = g->feat;
            GNN_INFO("features: %.1f MB %s", (double)bytes / 1e6,
                     host ? "read in place from host memory" : "in device memory");
        }
        return 0;
    }
    if (!use) /* the host copy is not needed again: hand it over */
        return gnn_be_upload_take(j->be, (void **)&j->g.feat, bytes, (void **)&j->x);
    GNN_TRY(gnn_be_sparse_create(j->be, &j->xs, &j->bxs));
    if (j->o->layers > 1) { /* the dense copy is read again only by 1-layer predictions */
        gnn_free(g->feat);
        g->feat = NULL;
    }
    return 0;
fail:
    return rc;
}

/* The backend named by --device: over a partition directory, "cuda" and
 * "auto" give each rank of a machine the next of its devices. */
static int open_backend(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_spmm_impl_t spmm = GNN_SPMM_AUTO;
    if (gnn_spmm_impl_from_name(o->spmm, &spmm) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--spmm %s: expected auto, cusparse, rowcache or balanced",
                      o->spmm);
        goto fail;
    }
    char devname[32];
    const char *device = o->device;
    if (j->dist && (!strcmp(device, "cuda") || !strcmp(device, "auto"))) {
        int ndev = gnn_backend_device_count();
        if (ndev > 0) {
            snprintf(devname, sizeof devname, "cuda:%d", j->node_rank % ndev);
            device = devname;
            if (j->node_ranks > ndev)
                GNN_WARN("%d ranks on this machine share its %d CUDA device%s", j->node_ranks,
                         ndev, ndev == 1 ? "" : "s");
        }
    }
    GNN_TRY(gnn_backend_open(device, &j->be));
    if (gnn_be_set_spmm(j->be, spmm, o->deterministic) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--spmm %s: only with --device cuda", o->spmm);
        goto fail;
    }
    if (o->tf32 && gnn_be_set_tf32(j->be, 1) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--tf32: only with --device cuda");
        goto fail;
    }
fail:
    return rc;
}

/* The aggregator of a kind that has one: --aggr, or its default. */
/* A name the registry does not know, with no plug-in loaded: the
 * message says how a plug-in's names are added. */
static int plugin_hint(const gnn_job_t *j, int rc)
{
    if (j->o->aggr_plugin || !strstr(gnn_error_message(), "(registered:")) return rc;
    char why[768];
    snprintf(why, sizeof why, "%s", gnn_error_message());
    return GNN_FAIL(rc, "%s; a plug-in adds its own with --aggr-plugin FILE.so", why);
}

static int find_aggr(gnn_job_t *j)
{
    const char *aggr = j->o->aggr ? j->o->aggr : j->kind->default_aggr;
    if (!j->kind->any_aggr && strcmp(aggr, j->kind->default_aggr))
        return GNN_FAIL(GNN_EUSAGE, "--aggr %s: the %s model aggregates with %s; use --model "
                                    "sage for other aggregators",
                        aggr, j->kind->name, j->kind->default_aggr);
    int rc = gnn_aggr_registry_find_kind(j->reg, aggr, GNN_AGGR_KIND_AGGREGATE, &j->aggr);
    return rc < 0 ? plugin_hint(j, rc) : 0;
}

/* Options the run takes no notice of, set other than to their defaults:
 * a warning each (rank 0's), so that a mistaken --mode or --model shows. */
static void warn_ignored(const gnn_job_t *j, int minibatch)
{
    const gnn_train_opts_t *o = j->o;
    gnn_train_opts_t def;
    gnn_train_defaults(&def);
    if (j->rank != 0) return;
    if (!minibatch && (o->fanouts || o->batch_size != def.batch_size))
        GNN_WARN("--fanouts and --batch-size: ignored by full-graph training (--mode full)");
    if (!j->kind->attention &&
        (o->heads != def.heads || o->out_heads != def.out_heads ||
         o->attn_dropout != def.attn_dropout))
        GNN_WARN("--heads, --out-heads and --attn-dropout: ignored by --model %s (only gat "
                 "attends)",
                 j->kind->name);
    if (!o->checkpoint && o->checkpoint_every != def.checkpoint_every)
        GNN_WARN("--checkpoint-every: ignored without --checkpoint");
}

int gnn__setup(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    GNN_TRY(gnn__opts_check(o));
    if (j->rank == 0) GNN_TRY(gnn__opts_check_paths(o)); /* rank 0 writes the outputs */
    if (gnn_model_kind_from_name(o->model, &j->kind) < 0) {
        char list[256];
        gnn_layer_kind_list(list, sizeof list);
        rc = GNN_FAIL(GNN_EUSAGE, "--model: unknown model \"%s\" (expected %s)", o->model, list);
        goto fail;
    }
    j->decay_scope = o->decay_scope ? o->decay_scope : j->kind == GNN_MODEL_GCN ? "first" : "all";
    /* PyG's layers of the same names: SAGEConv's linear maps draw as
     * torch.nn.Linear, GCNConv, GATConv and RGCNConv by Glorot. */
    j->init = o->init ? o->init : j->kind == GNN_MODEL_SAGE ? "fan-in" : "glorot";
    int minibatch = o->mode ? !strcmp(o->mode, "minibatch") : j->kind == GNN_MODEL_SAGE;
    j->mode = j->dist ? (minibatch ? &gnn_mode_dist_minibatch : &gnn_mode_dist_full)
                      : (minibatch ? &gnn_mode_minibatch : &gnn_mode_full);
    if (minibatch)
        GNN_TRY(gnn__opts_fanouts(j));
    else
        snprintf(j->fanouts, sizeof j->fanouts, "-");
    GNN_CHECK(minibatch || !o->sample_once, GNN_EUSAGE,
              "--sample-once: only with mini-batches (--mode minibatch)");
    if (o->threads > 0) {
        omp_set_num_threads(o->threads);
    } else if (j->dist) { /* ranks on one machine share its cores */
        int local = j->node_ranks, cores = omp_get_num_procs();
        if (local > 1) omp_set_num_threads(cores / local > 1 ? cores / local : 1);
    }
    GNN_CHECK(!o->feature_cache || minibatch, GNN_EUSAGE,
              "--feature-cache: only for mini-batches (over a partition directory, or in one "
              "process on a GPU)");
    GNN_CHECK(!o->full_halo || (j->dist && !minibatch), GNN_EUSAGE,
              "--full-halo: only for full-graph training over a partition directory");
    if (j->dist) {
        GNN_CHECK(strcmp(o->sparse_features, "on"), GNN_EUSAGE,
                  "--sparse-features on: not over a partition directory");
    }
    GNN_TRY(open_backend(j));
    GNN_CHECK(!o->feature_cache || j->dist || !gnn_be_host_memory(j->be), GNN_EUSAGE,
              "--feature-cache: only for mini-batches over a partition directory, or in one "
              "process on a GPU (the device's cache of a table in host memory)");
    GNN_CHECK(!strcmp(o->features_on, "auto") || (minibatch && !gnn_be_host_memory(j->be)),
              GNN_EUSAGE,
              "--features-on %s: only for mini-batches on a GPU (--mode minibatch --device cuda)",
              o->features_on);
    GNN_TRY(gnn_aggr_registry_create(&j->reg));
    if (o->aggr_plugin) GNN_TRY(gnn_aggr_registry_load(j->reg, o->aggr_plugin));
    if (!j->kind->default_aggr) { /* weighs its neighbours otherwise (attention) */
        if (o->aggr) {
            rc = GNN_FAIL(GNN_EUSAGE, "--aggr %s: the %s model weighs neighbours by attention "
                                      "and takes no aggregator (--attention picks the function)",
                          o->aggr, j->kind->name);
            goto fail;
        }
    } else {
        GNN_TRY(find_aggr(j));
    }
    if (j->kind->attention) {
        const char *name = o->attention ? o->attention : "gat";
        rc = gnn_aggr_registry_find_kind(j->reg, name, GNN_AGGR_KIND_ATTENTION, &j->attn);
        if (rc < 0) {
            rc = plugin_hint(j, rc);
            goto fail;
        }
    } else if (o->attention) {
        rc = GNN_FAIL(GNN_EUSAGE, "--attention %s: only for --model gat (the %s model takes "
                                  "an aggregator, --aggr)",
                      o->attention, j->kind->name);
        goto fail;
    }
    /* A plug-in without the device's entry points: refused before the data */
    const gnn_aggr_def_t *used = j->kind->attention ? j->attn : j->aggr;
    if (used && gnn_be_aggr_runs(j->be, used) < 0) {
        char why[256], hint[PATH_MAX + 96] = "";
        snprintf(why, sizeof why, "%s", gnn_error_message());
        const size_t pl = o->aggr_plugin ? strlen(o->aggr_plugin) : 0;
        if (pl > 3 && !strcmp(o->aggr_plugin + pl - 3, ".so") &&
            (pl < 8 || strcmp(o->aggr_plugin + pl - 8, "_cuda.so")) &&
            gnn_backend_kind(j->be) == GNN_BACKEND_CUDA)
            snprintf(hint, sizeof hint, " (a build of the plug-in with CUDA entry points, e.g. "
                                        "%.*s_cuda.so?)",
                     (int)(pl - 3), o->aggr_plugin);
        rc = GNN_FAIL(GNN_EUSAGE, "%s on %s%s", why, gnn_backend_describe(j->be), hint);
        goto fail;
    }
    warn_ignored(j, minibatch);
    if (j->dist) return 0; /* the part is loaded once every rank got here */

    GNN_TRY(load_data(j));
    GNN_TRY(gnn__state_fingerprint(j)); /* before the modes may drop the loaded edges */
    gnn_graph_t *g = &j->g;
    if (j->kind->typed) {
        GNN_CHECK(g->types, GNN_EINVAL,
                  "%s: --model %s needs a graph with node types and relations (format version "
                  "2: gnn-dataset generate hsbm, or ogb with a heterogeneous dataset)",
                  o->data, j->kind->name);
        GNN_CHECK(o->num_bases <= g->types->n_rels, GNN_EUSAGE,
                  "--num-bases %d: %s has only %d relations", o->num_bases, o->data,
                  g->types->n_rels);
    }
    gnn_vid_t n = g->csr.n_rows;
    if (o->normalize_features && g->feat)
        gnn__normalize_warn(gnn__normalize_rows(g->feat, n, g->feat_dim), n);
    GNN_TRY(gnn__input_setup(j, n, NULL));
    GNN_TRY(setup_features(j));
    GNN_TRY(j->task->setup(j, &j->out_dim));
    char targets[256];
    j->task->describe(j, targets, sizeof targets);
    GNN_INFO("%s: %" GNN_PRIvid " nodes, %" GNN_PRIeid " edges, %" PRId64 " features, %s; %s, "
             "%s, %s",
             o->data, n, g->csr.nnz, g->feat_dim, targets, o->model,
             j->mode->minibatch ? "mini-batch" : "full graph", gnn_backend_describe(j->be));
    GNN_TRY(j->mode->setup(j));
    return 0;
fail:
    return rc;
}
