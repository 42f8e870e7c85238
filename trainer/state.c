/*
 * The loop's state as a checkpoint holds it (trainer/checkpoint.h): the
 * configuration it was trained with, the position (run, epoch, step,
 * dropout stream), the best epoch so far, the finished runs' results, and
 * the parameters with Adam's moments. A resumed run starts from exactly
 * this state, so it performs the operations the uninterrupted one would
 * have; a checkpoint of another job is refused, naming what differs.
 *
 * None of the state depends on how the graph is spread over ranks: the
 * parameters and optimiser moments are every rank's, the learnable rows
 * are kept by graph-file id, the dropout stream is keyed by graph-file id
 * and advances by the whole graph's rows per step, and the metrics are
 * the whole graph's. So a checkpoint resumes on another partition of the
 * same graph, or between the graph file and a partition of it; "the same
 * graph" is checked by its node, training-target and edge counts and
 * hashes of its edges and training nodes by graph-file ids (the graph's
 * fingerprint). What the layout does change is which rank shuffles which
 * training nodes into mini-batches (the training layout, also hashed):
 * across layouts a mini-batch run goes on with the new layout's batches,
 * which the resume says.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/mpiutil.h"
#include "graph/base/rng.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* The hash of the stored edge u -> v of relation r (graph-file ids). */
static uint64_t edge_key(int64_t u, int64_t v, int32_t r)
{
    uint64_t h = gnn_rng_mix64(gnn_rng_mix64((uint64_t)v) ^ (uint64_t)u);
    return gnn_rng_mix64(h ^ (uint64_t)(uint32_t)r);
}

/* The hash of training node v (graph-file id), and of v held by rank r. */
static uint64_t train_key(int64_t v) { return gnn_rng_mix64((uint64_t)v ^ 0x747261696e00ull); }
static uint64_t layout_key(int64_t v, int r)
{
    return gnn_rng_mix64(gnn_rng_mix64((uint64_t)v ^ 0x6c61796f7574ull) + (uint64_t)r);
}

/* The sum of edge_key over the rows of csr (row i: graph-file id gid[i],
 * column c: gid[c]; gid NULL: ids are rows), relations etype (or NULL). */
static uint64_t edges_hash(const gnn_csr_t *csr, const int64_t *gid, const int32_t *etype)
{
    uint64_t h = 0;
#pragma omp parallel for schedule(static) reduction(+ : h)
    for (int64_t i = 0; i < csr->n_rows; i++) {
        int64_t v = gid ? gid[i] : i;
        for (gnn_eid_t e = csr->indptr[i]; e < csr->indptr[i + 1]; e++) {
            int64_t u = gid ? gid[csr->indices[e]] : csr->indices[e];
            h += edge_key(u, v, etype ? etype[e] : 0);
        }
    }
    return h;
}

int gnn__state_fingerprint(gnn_job_t *j)
{
    int rc = 0;
    j->graph_edges = 0;
    j->graph_hash = j->train_hash = j->train_layout = 0;
    if (!j->o->checkpoint) return 0;
    const gnn_dist_part_t *d = j->dist;
    if (!d) {
        const gnn_graph_t *g = &j->g;
        GNN_CHECK(g->csr.indices || g->csr.nnz == 0, GNN_EINVAL, "graph fingerprint: no edges");
        j->graph_edges = g->csr.nnz;
        j->graph_hash = edges_hash(&g->csr, NULL, g->etype);
        const int64_t *t = g->split[GNN_SPLIT_TRAIN];
        for (int64_t i = 0; t && i < g->split_size[GNN_SPLIT_TRAIN]; i++) {
            j->train_hash += train_key(t[i]);
            j->train_layout += layout_key(t[i], 0);
        }
        return 0;
    }
    /* Over ranks: each rank's owned rows, summed (mod 2^64, as one
     * process sums them). */
    uint64_t h[3] = {edges_hash(&d->csr, d->gid, d->etype), 0, 0};
    const int64_t *t = d->split[GNN_SPLIT_TRAIN];
    for (int64_t i = 0; t && i < d->split_n[GNN_SPLIT_TRAIN]; i++) {
        h[1] += train_key(d->gid[t[i]]);
        h[2] += layout_key(d->gid[t[i]], d->rank);
    }
    int64_t nnz = d->csr.nnz;
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, h, 3, MPI_UINT64_T, MPI_SUM, d->comm));
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &nnz, 1, MPI_INT64_T, MPI_SUM, d->comm));
    j->graph_edges = nnz;
    j->graph_hash = h[0];
    j->train_hash = h[1];
    j->train_layout = h[2];
fail:
    return rc;
}

/* Fill the configuration part of j->ck from the options. */
static void ck_config(gnn_job_t *j, gnn_checkpoint_t *c)
{
    const gnn_train_opts_t *o = j->o;
    snprintf(c->model, sizeof c->model, "%s", o->model);
    snprintf(c->task, sizeof c->task, "%s", o->task ? o->task : "node");
    int link = o->task && !strcmp(o->task, "link");
    snprintf(c->decoder, sizeof c->decoder, "%s", link ? o->decoder : "-");
    snprintf(c->hits, sizeof c->hits, "%s", link ? o->hits : "-");
    c->negatives = link ? o->negatives : 0;
    /* The aggregator, or an attention model's attention function. */
    snprintf(c->aggr, sizeof c->aggr, "%s",
             j->aggr ? j->aggr->name : j->attn ? j->attn->name : "none");
    snprintf(c->decay_scope, sizeof c->decay_scope, "%s", j->decay_scope);
    snprintf(c->init, sizeof c->init, "%s", j->init);
    snprintf(c->mode, sizeof c->mode, "%s", j->mode->minibatch ? "minibatch" : "full");
    snprintf(c->fanouts, sizeof c->fanouts, "%s", j->fanouts);
    c->batch_size = j->mode->minibatch ? o->batch_size : 0;
    c->layers = o->layers;
    c->in_dim = j->in_dim;
    c->hidden = o->hidden;
    c->classes = j->out_dim;
    c->dropout = o->dropout;
    c->lr = o->lr;
    c->weight_decay = o->weight_decay;
    c->normalize_features = o->normalize_features;
    c->seed = (uint64_t)o->seed;
    c->runs = o->runs;
    if (j->kind->attention) { /* its settings (0 for the other kinds) */
        c->heads = o->heads;
        c->out_heads = o->out_heads;
        c->attn_dropout = o->attn_dropout;
        c->negative_slope = o->negative_slope;
    }
    snprintf(c->embed_opt, sizeof c->embed_opt, "%s", o->embed_dim ? o->embed_optimizer : "-");
    if (o->embed_dim) {
        c->embed_dim = o->embed_dim;
        c->embed_all = !strcmp(o->embed, "all");
        c->embed_lr = o->embed_lr > 0.0 ? o->embed_lr : o->lr;
        c->embed_rows = j->dist ? j->dist->n_global : j->g.csr.n_rows;
        c->embed_best_kept = 1; /* the table keeps it whenever there are checkpoints */
    }
    c->num_nodes = j->dist ? j->dist->n_global : j->g.csr.n_rows;
    c->parts = j->dist ? j->dist->size : 0;
    c->num_edges = j->graph_edges;
    c->edge_hash = j->graph_hash;
    c->train_hash = j->train_hash;
    c->train_layout = j->train_layout;
    const int64_t *ids;
    int64_t held;
    j->task->train_seeds(j, &ids, &held, &c->train_nodes);
}

/* "a graph file" or "a partition directory of N parts" (parts as in
 * gnn_checkpoint_t), for messages about what a run trained on. */
static const char *parts_text(int64_t parts, char *buf, size_t size)
{
    if (parts == 0) return "a graph file";
    snprintf(buf, size, "a partition directory of %" PRId64 " part%s", parts,
             parts == 1 ? "" : "s");
    return buf;
}

/* A resumed checkpoint must describe the same job. */
static int ck_match(gnn_job_t *j, const gnn_checkpoint_t *c)
{
    gnn_checkpoint_t want = {0};
    /* Without --init, a resumed job draws as its checkpoint says (a file
     * older than version 8 says glorot, the only choice then). */
    if (!j->o->init) j->init = !strcmp(c->init, "fan-in") ? "fan-in" : "glorot";
    ck_config(j, &want);
    const char *p = j->o->checkpoint;
#define SAME_I(field, what)                                                                    \
    if (c->field != want.field)                                                                \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %" PRId64 " in the checkpoint but %" PRId64     \
                                    " now",                                                    \
                        p, what, (int64_t)c->field, (int64_t)want.field);
#define SAME_D(field, what)                                                                    \
    if (c->field != want.field)                                                                \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %g in the checkpoint but %g now", p, what,       \
                        c->field, want.field);
#define SAME_S(field, what)                                                                    \
    if (strcmp(c->field, want.field))                                                          \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %s in the checkpoint but %s now", p, what,       \
                        c->field, want.field);
    SAME_S(task, "the task")
    SAME_S(decoder, "--decoder")
    SAME_S(hits, "--hits")
    SAME_I(negatives, "--negatives")
    SAME_S(model, "the model")
    /* GAT checkpoints from before attention functions were named say
     * "attention": the built-in gat was the only one. */
    if (!strcmp(c->aggr, "attention") && j->attn && !strcmp(j->attn->name, "gat"))
        snprintf(want.aggr, sizeof want.aggr, "attention");
    SAME_S(aggr, j->attn ? "the attention function" : "the aggregator")
    SAME_I(embed_dim, "--embed-dim")
    if (c->embed_dim > 0) SAME_I(embed_rows, "the number of learnable rows")
    SAME_S(embed_opt, "--embed-optimizer")
    SAME_I(embed_all, "--embed all")
    SAME_D(embed_lr, "--embed-lr")
    SAME_I(in_dim, "the feature width")
    SAME_I(classes, "the number of classes")
    SAME_I(layers, "--layers")
    SAME_I(hidden, "--hidden")
    SAME_D(dropout, "--dropout")
    SAME_D(lr, "--lr")
    SAME_D(weight_decay, "--weight-decay")
    SAME_S(decay_scope, "--decay-scope")
    SAME_S(init, "--init")
    SAME_S(mode, "--mode")
    SAME_S(fanouts, "--fanouts")
    SAME_I(batch_size, "--batch-size")
    SAME_I(normalize_features, "--normalize-features")
    SAME_I(seed, "--seed")
    SAME_I(heads, "--heads")
    SAME_I(out_heads, "--out-heads")
    SAME_D(attn_dropout, "--attn-dropout")
    SAME_D(negative_slope, "--negative-slope")
    /* The same graph, on whatever partition (or the graph file itself). */
    if (c->num_nodes >= 0) { /* recorded since version 3 */
        SAME_I(num_nodes, "the number of nodes")
        SAME_I(train_nodes, strcmp(c->task, "link") ? "the number of training nodes"
                                                   : "the number of training edges")
    }
    if (c->num_edges >= 0) { /* recorded since version 7 */
        SAME_I(num_edges, "the number of stored edges")
        if (c->edge_hash != want.edge_hash)
            return GNN_FAIL(GNN_EINVAL, "%s: the checkpoint was trained on another graph (the "
                                        "same numbers of nodes and edges, other edges)",
                            p);
        if (strcmp(c->task, "link") && c->train_hash != want.train_hash)
            return GNN_FAIL(GNN_EINVAL, "%s: the checkpoint was trained on other training nodes "
                                        "(as many, other ones)",
                            p);
    }
#undef SAME_I
#undef SAME_D
#undef SAME_S
    if (c->runs > want.runs || c->runs_done > want.runs)
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " runs in the checkpoint but --runs %" PRId64,
                        p, c->runs, want.runs);
    return 0;
}

/*
 * A checkpoint of another layout (another partition of the graph, or the
 * graph file and a partition of it) resumes: say so, and for mini-batches
 * of training nodes, whose batches each rank shuffles from the nodes it
 * holds, that the batches from here on are the new layout's. Full-graph
 * steps and the edge batches of link prediction (the same on any number
 * of ranks) continue as the uninterrupted run would.
 */
static void ck_layout_note(gnn_job_t *j, const gnn_checkpoint_t *c)
{
    int64_t parts = j->dist ? j->dist->size : 0;
    if (c->parts < 0) return; /* not recorded (version 2) */
    /* Which rank holds which training node: recorded since version 7;
     * before, only the part count tells (a graph file is one part). */
    int same_layout = c->num_edges >= 0 ? c->train_layout == j->train_layout
                                        : c->parts == parts || (c->parts <= 1 && parts <= 1);
    if (c->parts == parts && (same_layout || !strcmp(c->task, "link"))) return;
    char buf[2][64];
    const char *was = parts_text(c->parts, buf[0], sizeof buf[0]);
    const char *now = parts_text(parts, buf[1], sizeof buf[1]);
    if (c->parts == parts) /* another partition into as many parts */
        snprintf(buf[1], sizeof buf[1], "another partition directory of %" PRId64 " part%s",
                 parts, parts == 1 ? "" : "s");
    if (!j->mode->minibatch || j->task->epoch_batches || same_layout)
        GNN_INFO("%s was written training on %s, this run trains on %s (the same graph): it "
                 "continues as the uninterrupted run would, up to rounding",
                 j->o->checkpoint, was, now);
    else
        GNN_INFO("%s was written training on %s, this run trains on %s (the same graph, other "
                 "training nodes on each rank): it continues from the checkpoint's state with "
                 "the mini-batches this layout draws, not those the uninterrupted run would",
                 j->o->checkpoint, was, now);
}

void gnn__state_new_run(gnn_checkpoint_t *c, int64_t r)
{
    c->run = r;
    c->epoch = 0;
    c->step = 0;
    c->rng_offset = 0;
    c->best_epoch = -1;
    c->bad_evals = 0;
    c->best_valid_acc = -1.0;
    c->best_valid_loss = INFINITY;
    c->best_test_acc = 0.0;
    c->best_train_acc = 0.0;
    c->min_valid_loss = INFINITY;
    for (int64_t i = 0; i < c->n_metrics; i++) c->best_metrics[i] = NAN;
}

int gnn__state_save(gnn_job_t *j)
{
    int rc = 0;
    if (j->emb && j->model) GNN_TRY(gnn__input_save(j)); /* sharded: gathered on rank 0 */
    if (j->rank > 0) return 0; /* rank 0 writes; every rank holds the same state */
    gnn_checkpoint_t *c = &j->ck;
    size_t bytes = (size_t)c->n_params * sizeof(float);
    if (j->model) {
        c->rng_offset = gnn_model_rng_offset(j->model);
        GNN_TRY(gnn_be_download(j->be, c->params, gnn_model_params(j->model), bytes));
        GNN_TRY(gnn_be_download(j->be, c->adam_m, j->adam_m, bytes));
        GNN_TRY(gnn_be_download(j->be, c->adam_v, j->adam_v, bytes));
    }
    GNN_TRY(gnn_checkpoint_save(j->o->checkpoint, c));
    GNN_DEBUG("checkpoint %s: run %" PRId64 " epoch %" PRId64, j->o->checkpoint, c->run + 1,
              c->epoch);
    return 0;
fail:
    return rc;
}

int gnn__state_alloc(gnn_job_t *j, int64_t np)
{
    gnn_checkpoint_t *c = &j->ck;
    c->n_params = np;
    c->params = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->adam_m = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->adam_v = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->best_params = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->run_test_acc = gnn_calloc((size_t)j->o->runs + 1, sizeof(double));
    c->run_valid_acc = gnn_calloc((size_t)j->o->runs + 1, sizeof(double));
    int64_t nm = j->task->n_metrics;
    c->n_metrics = nm;
    c->best_metrics = gnn_malloc_array((size_t)nm + 1, sizeof(double));
    c->run_metrics = gnn_malloc_array((size_t)(nm * j->o->runs) + 1, sizeof(double));
    if (!c->params || !c->adam_m || !c->adam_v || !c->best_params || !c->run_test_acc ||
        !c->run_valid_acc || !c->best_metrics || !c->run_metrics)
        return GNN_ENOMEM; /* recorded by the allocator */
    for (int64_t i = 0; i < nm; i++) c->best_metrics[i] = NAN;
    for (int64_t i = 0; i < nm * j->o->runs; i++) c->run_metrics[i] = NAN;
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

int gnn__state_load(gnn_job_t *j, int *restore)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    *restore = 0;
    if (o->checkpoint && file_exists(o->checkpoint)) {
        if (!o->resume) {
            rc = GNN_FAIL(GNN_EEXISTS, "checkpoint %s exists (add --resume to continue it, or "
                                       "remove it)",
                          o->checkpoint);
            goto fail;
        }
        gnn_checkpoint_t loaded;
        GNN_TRY(gnn_checkpoint_load(o->checkpoint, &loaded));
        rc = ck_match(j, &loaded);
        if (rc < 0) {
            gnn_checkpoint_free(&loaded);
            goto fail;
        }
        GNN_TRY(gnn__state_alloc(j, loaded.n_params));
        gnn_checkpoint_t *c = &j->ck;
        float *keep[4] = {c->params, c->adam_m, c->adam_v, c->best_params};
        double *kr[2] = {c->run_test_acc, c->run_valid_acc};
        size_t pb = (size_t)loaded.n_params * sizeof(float);
        memcpy(keep[0], loaded.params, pb);
        memcpy(keep[1], loaded.adam_m, pb);
        memcpy(keep[2], loaded.adam_v, pb);
        memcpy(keep[3], loaded.best_params, pb);
        memcpy(kr[0], loaded.run_test_acc, (size_t)loaded.runs_done * sizeof(double));
        memcpy(kr[1], loaded.run_valid_acc, (size_t)loaded.runs_done * sizeof(double));
        /* Every metric of the best epochs; a version 4 file has none (they
         * stay unknown, NaN). */
        double *km[2] = {c->best_metrics, c->run_metrics};
        int64_t nm = c->n_metrics;
        if (loaded.n_metrics == nm) {
            memcpy(km[0], loaded.best_metrics, (size_t)nm * sizeof(double));
            memcpy(km[1], loaded.run_metrics, (size_t)(nm * loaded.runs_done) * sizeof(double));
        } else if (loaded.n_metrics != 0) {
            rc = GNN_FAIL(GNN_EINVAL,
                          "%s: %" PRId64 " metrics in the checkpoint, the task has %" PRId64,
                          o->checkpoint, loaded.n_metrics, nm);
            gnn_checkpoint_free(&loaded);
            goto fail;
        }
        float *la[4] = {loaded.params, loaded.adam_m, loaded.adam_v, loaded.best_params};
        double *lr[2] = {loaded.run_test_acc, loaded.run_valid_acc};
        double *lm[2] = {loaded.best_metrics, loaded.run_metrics};
        *c = loaded;
        c->params = keep[0], c->adam_m = keep[1], c->adam_v = keep[2], c->best_params = keep[3];
        c->run_test_acc = kr[0], c->run_valid_acc = kr[1];
        c->best_metrics = km[0], c->run_metrics = km[1], c->n_metrics = nm;
        loaded.params = la[0], loaded.adam_m = la[1], loaded.adam_v = la[2];
        loaded.best_params = la[3], loaded.run_test_acc = lr[0], loaded.run_valid_acc = lr[1];
        loaded.best_metrics = lm[0], loaded.run_metrics = lm[1];
        /* The input rows' arrays stay with c. */
        loaded.embed_w = loaded.embed_s1 = loaded.embed_s2 = loaded.embed_best = NULL;
        gnn_checkpoint_free(&loaded);
        c->runs = o->runs;
        /* A run that ended at its last epoch (not stopped early) is
         * continued when --epochs now asks for more: the checkpoint holds
         * its final state. Earlier finished runs cannot be, so a checkpoint
         * with several is refused rather than silently left short. */
        if (c->runs_done > 0 && c->run == c->runs_done - 1 && c->epoch < o->epochs &&
            !(o->early_stop > 0 && c->bad_evals >= o->early_stop)) {
            if (c->runs_done > 1) {
                rc = GNN_FAIL(GNN_EINVAL,
                              "%s: its %" PRId64 " finished runs ended at epoch %" PRId64
                              ", --epochs %d would continue only the last one",
                              o->checkpoint, c->runs_done, c->epoch, o->epochs);
                goto fail;
            }
            c->runs_done--;
        }
        *restore = c->runs_done < o->runs && c->run == c->runs_done;
        GNN_INFO("resuming %s: run %" PRId64 "/%d after epoch %" PRId64, o->checkpoint,
                 c->run + 1, o->runs, c->epoch);
        ck_layout_note(j, c);
    } else if (o->resume) {
        GNN_WARN("no checkpoint at %s: starting from scratch", o->checkpoint);
    }
    ck_config(j, &j->ck);

    if (o->log_json && j->rank == 0) {
        j->log = fopen(o->log_json, *restore || j->ck.runs_done > 0 ? "a" : "w");
        GNN_CHECK(j->log, GNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
    }
    return 0;
fail:
    return rc;
}
