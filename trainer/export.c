/*
 * --save-model FILE: the best epoch's parameters of the last run in the
 * safetensors format (trainer/safetensors.h), named and shaped as
 * PyTorch Geometric's layers hold them, and the architecture in the
 * file's metadata, so that trainer/python/gnn_pyg builds the same model in
 * PyTorch and loads them (layouts in docs/FORMAT.md, "Model file"):
 *   convs.L.*          layer L as GCNConv, SAGEConv, GATConv or RGCNConv
 *                      names its tensors (trainer/layer.h's tensors entry)
 *   embedding.weight   the learnable input rows (--embed-dim), one per
 *                      node by graph-file id (zeros for nodes without one)
 *   decoder.*          link prediction's MLP decoder: lin1 (ReLU), lin2
 * Over a partition directory every rank holds the parameters; the rows
 * are gathered on rank 0 (collective), which writes.
 */
#include "trainer/job.h"
#include "trainer/safetensors.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_META 64
#define MAX_TENSORS (GNN_MODEL_MAX_LAYERS * GNN_LAYER_MAX_TENSORS + 8)

typedef struct {
    const char *kv[2 * MAX_META];
    char *val[MAX_META];   /* gnn_malloc'd */
    char name[MAX_TENSORS][96];
    int n;
    int rc;                /* the first failure of put */
} meta_t;

static void put(meta_t *m, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put(meta_t *m, const char *key, const char *fmt, ...)
{
    if (m->rc < 0) return;
    if (m->n >= MAX_META) {
        m->rc = GNN_FAIL(GNN_EINVAL, "--save-model: more than %d metadata entries", MAX_META);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *v = len >= 0 ? gnn_malloc((size_t)len + 1) : NULL;
    if (!v) {
        m->rc = GNN_FAIL(GNN_ENOMEM, "--save-model: metadata");
        return;
    }
    va_start(ap, fmt);
    vsnprintf(v, (size_t)len + 1, fmt, ap);
    va_end(ap);
    m->val[m->n] = v;
    m->kv[2 * m->n] = key;
    m->kv[2 * m->n + 1] = v;
    m->n++;
}

static void meta_free(meta_t *m)
{
    for (int i = 0; i < m->n; i++) gnn_free(m->val[i]);
}

/* A JSON list of n names (names) or integers (v) as the value of key:
 * any length (256 relations of 63 characters fit). */
static void put_list(meta_t *m, const char *key, int n, const char (*names)[GNN_TYPE_NAME_MAX],
                     const int64_t *v)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = m->rc < 0 ? NULL : open_memstream(&buf, &len);
    if (!f) {
        if (m->rc == 0) m->rc = GNN_FAIL(GNN_ENOMEM, "--save-model: metadata");
        return;
    }
    fputc('[', f);
    for (int i = 0; i < n; i++) {
        if (names)
            fprintf(f, "%s\"%s\"", i ? ", " : "", names[i]);
        else
            fprintf(f, "%s%" PRId64, i ? ", " : "", v[i]);
    }
    fputc(']', f);
    if (fclose(f) != 0 || !buf) {
        if (m->rc == 0) m->rc = GNN_FAIL(GNN_ENOMEM, "--save-model: metadata");
    } else {
        put(m, key, "%s", buf);
    }
    free(buf);
}

static void put_names(meta_t *m, const char *key, int n, const char (*names)[GNN_TYPE_NAME_MAX])
{
    put_list(m, key, n, names, NULL);
}

static void put_ints(meta_t *m, const char *key, int n, const int64_t *v)
{
    put_list(m, key, n, NULL, v);
}

/* The architecture, as trainer/python/gnn_pyg reads it. */
static void describe(gnn_job_t *j, meta_t *m)
{
    const gnn_train_opts_t *o = j->o;
    const gnn_model_config_t *cfg = gnn_model_config(j->model);
    const gnn_graph_types_t *ty = j->g.types ? j->g.types : j->dist ? j->dist->types : NULL;
    int L = cfg->layers, link = o->task && !strcmp(o->task, "link");
    int64_t w[GNN_MODEL_MAX_LAYERS + 1];
    for (int l = 0; l < L; l++) gnn_model_layer_width(j->model, l, &w[l], &w[l + 1]);
    put(m, "format", "gnn-model");
    put(m, "version", "1");
    put(m, "model", "%s", j->kind->name);
    put(m, "task", "%s", link ? "link" : "node");
    put(m, "layers", "%d", L);
    put(m, "in_dim", "%" PRId64, j->in_dim);
    put(m, "hidden", "%" PRId64, o->hidden);
    put(m, "out_dim", "%" PRId64, j->out_dim);
    put_ints(m, "widths", L + 1, w);
    put(m, "activation", "%s", j->kind->act == GNN_LAYER_ACT_ELU ? "elu" : "relu");
    put(m, "dropout", "%g", o->dropout);
    put(m, "normalize_features", "%d", o->normalize_features ? 1 : 0);
    put(m, "aggr", "%s", j->kind->typed ? "mean" : j->aggr ? j->aggr->name : "none");
    /* Stored edge weights multiply the terms of sum and mean aggregation
     * (GraphSAGE) in full-graph training, in one process or over ranks;
     * mini-batches read none. GCN's normalisation, max, attention and
     * R-GCN's per-relation means do not read them. */
    const float *ew = j->mode->minibatch ? NULL : j->dist ? j->dist->csr.weights : j->g.csr.weights;
    int weighs = j->kind == GNN_MODEL_SAGE && j->aggr && ew &&
                 (!strcmp(j->aggr->name, "sum") || !strcmp(j->aggr->name, "mean"));
    put(m, "edge_weights", "%s", weighs ? "multiply" : "ignored");
    if (j->kind == GNN_MODEL_GCN) {
        /* A_gcn = D_in^-1/2 (A + I) D_out^-1/2 with stored-edge counts:
         * GCNConv's own on a symmetric graph without self loops. */
        put(m, "gcn_norm", "in-out");
        put(m, "self_loops", "added");
    } else if (j->kind->attention) {
        put(m, "attention", "%s", j->attn->name);
        put(m, "heads", "%d", cfg->heads);
        put(m, "out_heads", "%d", cfg->out_heads);
        put(m, "negative_slope", "%g", (double)cfg->negative_slope);
        put(m, "attn_dropout", "%g", (double)cfg->attn_dropout);
        put(m, "self_loops", "replaced"); /* stored ones left out, one added per node */
    } else {
        put(m, "self_loops", "none");
    }
    if (ty) {
        int64_t fd[GNN_MAX_NODE_TYPES];
        for (int t = 0; t < ty->n_ntypes; t++) fd[t] = ty->feat_dim[t];
        put_names(m, "node_types", ty->n_ntypes, ty->ntype);
        put_ints(m, "node_type_offsets", ty->n_ntypes + 1, ty->off);
        put_ints(m, "node_type_feat_dim", ty->n_ntypes, fd);
        put_names(m, "relations", ty->n_rels, ty->rel);
        put(m, "target_type", "%s", ty->target >= 0 ? ty->ntype[ty->target] : "");
        if (j->kind->typed) put(m, "num_bases", "%d", cfg->num_bases);
    }
    int64_t E = j->emb ? gnn_embed_dim(j->emb) : 0;
    put(m, "feat_dim", "%" PRId64, j->g.feat_dim);
    put(m, "embed_dim", "%" PRId64, E);
    /* concat: the input row is the features then the node's row; typed:
     * the featureless types' rows in its first embed_dim columns. */
    put(m, "embed_layout", "%s", !E ? "none" : j->emb_typed ? "typed" : "concat");
    if (link) put(m, "decoder", "%s", o->decoder);
    put(m, "num_nodes", "%" PRId64, j->dist ? j->dist->n_global : j->g.csr.n_rows);
    const gnn_checkpoint_t *c = &j->ck;
    put(m, "best_epoch", "%" PRId64, c->best_epoch);
    for (int k = 0; k < c->n_metrics; k++)
        put(m, j->task->metric_keys[k], "%.9g", c->best_metrics[k]);
}

int gnn__write_model(gnn_job_t *j)
{
    int rc = 0;
    static meta_t m; /* large: off the stack */
    memset(&m, 0, sizeof m);
    gnn_st_tensor_t t[MAX_TENSORS];
    int n = 0;
    float *rows = NULL;
    int64_t E = j->emb ? gnn_embed_dim(j->emb) : 0;
    int64_t N = j->dist ? j->dist->n_global : j->g.csr.n_rows;
    if (E) { /* the best epoch's rows, by graph-file id */
        int local = 0;
        if (j->rank == 0) {
            rows = gnn_alloc_large(((size_t)N * (size_t)E + 1) * sizeof(float));
            if (!rows) local = GNN_FAIL(GNN_ENOMEM, "--save-model: %" PRId64 " input rows", N);
        }
        if (local == 0) local = gnn__input_restore_best(j);
        GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, local) : local);
        GNN_TRY(gnn__input_gather_array(j, 0, rows)); /* failures agreed */
    }
    if (j->rank > 0) goto fail;
    const float *p = j->ck.best_params;
    const gnn_model_config_t *cfg = gnn_model_config(j->model);
    for (int l = 0; l < cfg->layers; l++) {
        gnn_layer_tensor_t lt[GNN_LAYER_MAX_TENSORS];
        int64_t off, count;
        gnn_model_layer_span(j->model, l, &off, &count); /* count: the tensors cover it */
        int k = gnn_model_layer_tensors(j->model, l, lt);
        for (int i = 0; i < k; i++) {
            snprintf(m.name[n], sizeof m.name[n], "convs.%d.%.47s", l, lt[i].name);
            t[n] = (gnn_st_tensor_t){.name = m.name[n], .ndim = lt[i].ndim,
                                     .data = p + off + lt[i].at, .transpose = lt[i].transpose};
            memcpy(t[n].shape, lt[i].shape, sizeof t[n].shape);
            n++;
        }
    }
    if (j->task->extra_tensors) { /* the task's own (link prediction's MLP decoder) */
        gnn_layer_tensor_t xt[GNN_LAYER_MAX_TENSORS];
        const float *x0 = p + gnn_model_extra_offset(j->model);
        int k = j->task->extra_tensors(j, xt);
        for (int i = 0; i < k; i++) {
            snprintf(m.name[n], sizeof m.name[n], "%.47s", xt[i].name);
            t[n] = (gnn_st_tensor_t){.name = m.name[n], .ndim = xt[i].ndim,
                                     .data = x0 + xt[i].at, .transpose = xt[i].transpose};
            memcpy(t[n].shape, xt[i].shape, sizeof t[n].shape);
            n++;
        }
    }
    if (E) t[n++] = (gnn_st_tensor_t){"embedding.weight", 2, {N, E}, rows, 0};
    describe(j, &m);
    GNN_TRY(m.rc);
    GNN_TRY(gnn_safetensors_write(j->o->save_model, t, n, m.kv, m.n));
    GNN_INFO("model written to %s (%d tensors, %" PRId64 " parameters)", j->o->save_model, n,
             gnn_model_n_params(j->model) + N * E);
fail:
    /* Every rank reaches here together: the failures above are agreed,
     * or rank 0's alone after the last collective. */
    if (j->dist) rc = gnn_dist_agree(MPI_COMM_WORLD, rc);
    meta_free(&m);
    gnn_free(rows);
    return rc;
}
