/*
 * Mini-batch training in one process (trainer/mode.h). An epoch: the
 * task's training seeds, shuffled by (seed, epoch), in batches of
 * --batch-size; the loader (sampler/loader.h) samples each batch's blocks
 * and gathers its input features on --sampler-threads threads, --prefetch
 * batches ahead, and on a host-memory backend also prepares the blocks'
 * aggregation graphs there; each batch is one step: forward over its
 * blocks, the task's loss on its seeds, backward, Adam. Dropout is keyed
 * by node id, so a node gets the same mask whichever batch holds it. GCN
 * on a block uses the block's own normalisation: s_dst[v] = (deg_block(v)
 * + 1)^-1/2 over the sampled in-edges, s_src[u] = (outdeg_block(u) +
 * 1)^-1/2 over the block's edges, with the self term of the destination
 * (DGL's GraphConv norm="both" on the block with a self loop added).
 *
 * Inference is layer-wise: layer l for all nodes from layer l - 1's
 * output, in batches of --eval-batch-size nodes with their full
 * neighbourhoods (gcn scaling sources by their whole-graph degree), so the
 * result is what a full-graph forward gives, at most two layers of
 * activations are held, and it does not depend on the batch size.
 *
 * The loader set-up, the batch graphs and the loader's log keys serve the
 * distributed mini-batch mode too (modes/dist_minibatch.c).
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"

#include "trainer/typed.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The prepared graph of a block for layer l: with the relation layout
 * for a typed layer (R-GCN, in the order chosen for the layer's widths),
 * else with the gcn scales of src_deg when given. */
static int block_graph(gnn_job_t *j, const gnn_block_t *b, int l, const int64_t *src_deg,
                       gnn_bgraph_t **out)
{
    if (!j->kind->typed) return gnn_be_graph_create_src_deg(j->be, &b->csr, src_deg, out);
    int64_t fin, fout;
    gnn_model_layer_width(j->model, l, &fin, &fout);
    gnn_typed_order_t order = (gnn_typed_order_t)gnn_typed_order_parse(j->o->rgcn_order);
    if (!j->dist)
        return gnn_typed_graph_create(j->be, &b->csr, b->etype, b->src_ids, j->g.types, order,
                                      fin, fout, out);
    /* Over ranks the sources are the part's ids: their graph-file ids. */
    const gnn_dist_part_t *d = j->dist;
    int64_t n = b->csr.n_cols;
    int64_t *gid = gnn_malloc_array((size_t)n + 1, sizeof *gid);
    if (!gid) return GNN_FAIL(GNN_ENOMEM, "block of %" PRId64 " sources", n);
    for (int64_t k = 0; k < n; k++) {
        int64_t v = b->src_ids[k];
        gid[k] = v < d->n_all ? d->gid[v] : d->p2g[v - d->n_all];
    }
    int rc = gnn_typed_graph_create(j->be, &b->csr, b->etype, gid, j->g.types, order, fin,
                                    fout, out);
    gnn_free(gid);
    return rc;
}

/* The attention slot layout a block's graph is prepared with: with self
 * loops (GAT's) for an attention layer, else none. */
static int attn_layout(const gnn_job_t *j)
{
    return j->kind->attention ? 1 : -1;
}

/* The workers also build each block's aggregation graph, off the training
 * thread: whole on a host-memory backend; on a device its host share
 * (transpose, scales, attention slots: gnn_be_graph_stage), which the
 * training thread then places (gnn__batch_graphs). A typed graph on a
 * device is built on the training thread. */
static int prepare_graphs(void *ctx, gnn_loader_batch_t *b)
{
    gnn_job_t *j = ctx;
    int host = gnn_be_host_memory(j->be);
    if (!host && j->kind->typed) return 0;
    for (int l = 0; l < b->mb.layers; l++) {
        gnn_bgraph_t **g = (gnn_bgraph_t **)&b->user[l];
        int rc = host ? block_graph(j, &b->mb.blocks[l], l, NULL, g)
                      : gnn_be_graph_stage(&b->mb.blocks[l].csr, NULL, attn_layout(j), g);
        if (rc < 0) return rc;
    }
    return 0;
}

static void release_graphs(void *ctx, gnn_loader_batch_t *b)
{
    (void)ctx;
    for (int l = 0; l < GNN_SAMPLER_MAX_LAYERS; l++) {
        gnn_be_graph_free(b->user[l]);
        b->user[l] = NULL;
    }
}

int gnn__loader_setup(gnn_job_t *j, const gnn_csr_t *graph, const float *feat,
                      const int64_t *feat_row, const int64_t *labels, const int64_t *key_ids,
                      const gnn_sampler_remote_t *remote)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    int64_t *iota = gnn_malloc_array((size_t)o->batch_size, sizeof *iota);
    GNN_CHECK(iota, GNN_ENOMEM, "batch indices");
    for (int64_t i = 0; i < o->batch_size; i++) iota[i] = i;
    rc = gnn__buf_upload(j->be, iota, (size_t)o->batch_size * sizeof *iota, (void **)&j->iota);
    gnn_free(iota);
    if (rc < 0) goto fail;
    if (j->ds) return 0; /* batches sampled by the backend: no loader */
    const int prefetch = gnn__opts_prefetch(o);
    gnn_loader_opts_t lo = {
        .graph = graph,
        .layers = o->layers,
        .fanouts = j->fanout,
        .once = o->sample_once,
        .feat = j->g.feat_dim > 0 ? feat : NULL, /* none: learnable rows alone (input.c) */
        .feat_dim = j->g.feat_dim,
        .feat_row = feat_row,
        .labels = labels,
        .key_ids = key_ids,
        .etype = !j->kind->typed ? NULL : j->dist ? j->dist->full_etype : j->g.etype,
        .n_rels = j->kind->typed ? j->g.types->n_rels : 0,
        .remote = remote,
        .threads = prefetch > 0 && !remote ? o->sampler_threads : 0,
        .prefetch = prefetch > 0 ? prefetch : 1,
        .edge_seeds = j->task->edge_seeds,
        .prepare = prepare_graphs,
        .unprepare = release_graphs,
        .ctx = j,
    };
    GNN_TRY(gnn_loader_create(&lo, &j->ld));
    return 0;
fail:
    return rc;
}

int gnn__batch_graphs(gnn_job_t *j, gnn_loader_batch_t *b, gnn_bgraph_t **graphs, int *own)
{
    /* Graphs the worker made (placed or staged) stay the batch's. */
    *own = b->user[0] == NULL;
    for (int l = 0; l < j->o->layers; l++) {
        graphs[l] = NULL;
        if (!*own) {
            graphs[l] = b->user[l];
            int rc = gnn_be_graph_place(j->be, graphs[l]);
            if (rc < 0) return rc;
            continue;
        }
        int rc = block_graph(j, &b->mb.blocks[l], l, NULL, &graphs[l]);
        if (rc < 0) return rc;
    }
    return 0;
}

void gnn__batch_graphs_free(gnn_job_t *j, gnn_bgraph_t **graphs, int own)
{
    if (own)
        for (int l = 0; l < j->o->layers; l++) gnn_be_graph_free(graphs[l]);
}

void gnn__log_loader(const gnn_job_t *j, FILE *f)
{
    const gnn_loader_stats_t *st = &j->lst;
    fprintf(f, ", \"batches\": %" PRId64 ", \"sampled_edges\": %" PRId64 ", \"input_nodes_mean\": ",
            st->batches, st->sampled_edges);
    gnn_json_number(f, st->batches ? (double)st->input_nodes / (double)st->batches : 0.0);
    fprintf(f, ", \"sample_s\": ");
    gnn_json_number(f, st->sample_s);
    fprintf(f, ", \"gather_s\": ");
    gnn_json_number(f, st->gather_s);
    fprintf(f, ", \"prepare_s\": ");
    gnn_json_number(f, st->prepare_s);
    fprintf(f, ", \"compute_s\": ");
    gnn_json_number(f, j->compute_s);
    fprintf(f, ", \"stall_s\": ");
    gnn_json_number(f, st->stall_s);
    fprintf(f, ", \"prefetch_stalls\": %" PRId64, st->stalls);
}

/*
 * Whether layer 0 can read the batch's feature rows where they lie, so the
 * loader gathers none (gnn_model_set_input_rows): a host backend with
 * gnn_be_gemm_rows, dense features alone (no learnable rows), no dropout,
 * and a first layer that says so once set up (GCN or SAGE multiplying
 * before aggregating: a first layer narrower than the features).
 */
static int mb_feat_by_rows(gnn_job_t *j)
{
    const gnn_train_opts_t *o = j->o;
    if (j->xs.indptr) return 0; /* layer 0 takes the batch's rows of the sparse table */
    if (j->g.feat_dim <= 0 || o->embed_dim > 0 || j->in_dim != j->g.feat_dim ||
        o->dropout != 0.0 || !gnn_be_has_gemm_rows(j->be) || !j->kind->takes_rows)
        return 0;
    gnn_layer_t L = {.kind = j->kind,
                     .index = 0,
                     .last = o->layers == 1,
                     .fin = j->in_dim,
                     .fout = o->layers == 1 ? j->out_dim : o->hidden,
                     .aggr = j->aggr,
                     .attn = j->attn,
                     .heads = o->heads};
    if (j->kind->setup(&L) < 0) {
        gnn_error_clear();
        if (j->kind->free) j->kind->free(&L, j->be);
        return 0;
    }
    int ok = j->kind->takes_rows(&L);
    if (j->kind->free) j->kind->free(&L, j->be);
    return ok;
}

/*
 * --sampler device: batches sampled where the backend runs (gnn_be_sample,
 * gnn_be_sample_excluding for edge batches: the host sampler's batches,
 * entry for entry), their blocks prepared
 * there and their input rows gathered from the backend's copy of the
 * features and learnable rows; what it cannot do is refused with one line.
 */
static int mb_device_setup(gnn_job_t *j)
{
    const gnn_train_opts_t *o = j->o;
    j->feat_by_rows = 0;
    int rc = gnn_be_sampler_create(j->be, &j->g.csr, o->layers, j->fanout, &j->ds);
    if (rc == 0) rc = gnn_be_sampler_set_once(j->ds, o->sample_once);
    /* Typed draws per relation, as the loader's sampler draws them. */
    if (rc == 0 && j->kind->typed)
        rc = gnn_be_sampler_set_relations(j->ds, j->g.etype, j->g.types->n_rels);
    return rc;
}

int gnn__plan_epoch(gnn_job_t *j, uint64_t seed, uint64_t epoch, int64_t **perm,
                    size_t *perm_cap, int64_t **start, size_t *start_cap, int64_t *nb, int64_t *n)
{
    int rc = 0;
    const int64_t *items, *starts = NULL, B = j->o->batch_size;
    int64_t total;
    j->task->train_seeds(j, &items, n, &total);
    if (j->task->epoch_batches) {
        GNN_TRY(j->task->epoch_batches(j, &items, &starts, nb));
        *n = starts[*nb];
    } else {
        *nb = (*n + B - 1) / B;
    }
    GNN_TRY(gnn_grow((void **)perm, perm_cap, (size_t)*n + 1, sizeof **perm));
    GNN_TRY(gnn_grow((void **)start, start_cap, (size_t)*nb + 1, sizeof **start));
    if (*n) memcpy(*perm, items, (size_t)*n * sizeof **perm);
    if (starts) {
        memcpy(*start, starts, ((size_t)*nb + 1) * sizeof **start);
    } else {
        gnn_loader_shuffle(*perm, *n, seed, epoch);
        for (int64_t b = 0; b <= *nb; b++) (*start)[b] = b * B < *n ? b * B : *n;
    }
fail:
    return rc;
}

/* A node's rank for the cache: more batches first, then the lower id. */
typedef struct {
    int64_t batches, id;
} fc_rank_t;

static int fc_cmp(const void *a, const void *b)
{
    const fc_rank_t *x = a, *y = b;
    if (x->batches != y->batches) return x->batches > y->batches ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/*
 * --feature-cache SIZE with the features read in place from host memory
 * (--features-on): the rows the batches read most, kept on the device.
 * Ranked by pre-sampling: one epoch of batches (the training seeds
 * shuffled under a seed of its own, or the task's edge batches of the
 * epoch to come, their edges left out of the draws) sampled ahead, each
 * node counted once per batch it is an input of; ties by id. Batches then read a cached
 * row from the device and every other row over the bus.
 */
static int mb_cache_setup(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    const int64_t F = j->g.feat_dim, n = j->g.csr.n_rows;
    int64_t bytes = 0;
    int32_t *count = NULL, *slot = NULL;
    int64_t *perm = NULL, *start = NULL;
    size_t perm_cap = 0, start_cap = 0;
    fc_rank_t *ids = NULL;
    float *rows = NULL;
    gnn_sampler_t *ps = NULL;
    gnn_minibatch_t mb;
    memset(&mb, 0, sizeof mb);
    gnn_loader_edges_t e;
    memset(&e, 0, sizeof e);
    GNN_TRY(gnn_parse_size(o->feature_cache, &bytes));
    if (!j->x_mapped || F <= 0 || bytes <= 0) {
        if (bytes > 0)
            GNN_INFO("feature cache: not needed, the features are in device memory");
        return 0;
    }
    int64_t cap = bytes / (F * (int64_t)sizeof(float));
    cap = cap < n ? cap : n;
    cap = cap < INT32_MAX ? cap : INT32_MAX; /* slots are int32 */
    double t0 = gnn__now_s();
    const uint64_t pseed = (uint64_t)o->seed ^ 0x7072652d73616d70ull;
    /* The epoch's batches: the training seeds shuffled under a seed of
     * their own, or the task's edge batches of the epoch to come (each
     * sampled from its ends, its edges left out, as in training). */
    int64_t nb = 0, ns = 0;
    GNN_TRY(gnn__plan_epoch(j, pseed, 0, &perm, &perm_cap, &start, &start_cap, &nb, &ns));
    count = gnn_calloc((size_t)n + 1, sizeof *count);
    GNN_CHECK(count, GNN_ENOMEM, "feature cache: counts of %" PRId64 " nodes", n);
    GNN_TRY(gnn_sampler_create(&j->g.csr, o->layers, j->fanout, &ps));
    GNN_TRY(gnn_sampler_set_once(ps, o->sample_once));
    int64_t reads = 0;
    for (int64_t bi = 0; bi < nb; bi++) {
        const int64_t lo = start[bi], k = start[bi + 1] - lo;
        if (j->task->edge_seeds) {
            gnn_loader_edges_free(&e);
            GNN_TRY(j->task->edge_seeds(j, perm + lo, k, pseed, 0, &e));
            GNN_TRY(gnn_sampler_sample_excluding(ps, e.seeds, e.n_seeds, e.excl, e.n_excl, pseed,
                                                 0, (uint64_t)bi, &mb));
        } else {
            GNN_TRY(gnn_sampler_sample(ps, perm + lo, k, pseed, 0, (uint64_t)bi, &mb));
        }
        for (int64_t i = 0; i < mb.n_input; i++) count[mb.nodes[i]]++;
        reads += mb.n_input;
        gnn_minibatch_free(&mb);
    }
    int64_t m = 0; /* the nodes read at all, ranked */
    ids = gnn_malloc_array((size_t)n + 1, sizeof *ids);
    GNN_CHECK(ids, GNN_ENOMEM, "feature cache: ranking");
    for (int64_t v = 0; v < n; v++)
        if (count[v] > 0) ids[m++] = (fc_rank_t){.batches = count[v], .id = v};
    qsort(ids, (size_t)m, sizeof *ids, fc_cmp);
    const int64_t kc = cap < m ? cap : m;
    int64_t hits = 0;
    slot = gnn_malloc_array((size_t)n + 1, sizeof *slot);
    rows = gnn_alloc_large(((size_t)kc * (size_t)F + 1) * sizeof *rows);
    GNN_CHECK(slot && rows, GNN_ENOMEM, "feature cache of %" PRId64 " rows", kc);
    for (int64_t v = 0; v < n; v++) slot[v] = -1;
    for (int64_t c = 0; c < kc; c++) {
        slot[ids[c].id] = (int32_t)c;
        hits += ids[c].batches;
        memcpy(rows + c * F, j->g.feat + ids[c].id * F, (size_t)F * sizeof *rows);
    }
    GNN_TRY(gnn__buf_upload(j->be, rows, (size_t)kc * (size_t)F * sizeof *rows,
                            (void **)&j->fc_rows));
    GNN_TRY(gnn__buf_upload(j->be, slot, (size_t)n * sizeof *slot, (void **)&j->fc_slot));
    j->n_cache = kc;
    GNN_INFO("feature cache: %" PRId64 " rows (%.1f MB) on the device, pre-sampled in %.2f s; "
             "%.1f %% of an epoch's row reads",
             kc, (double)kc * (double)F * 4.0 / 1e6, gnn__now_s() - t0,
             reads ? 100.0 * (double)hits / (double)reads : 0.0);
fail:
    gnn_loader_edges_free(&e);
    gnn_minibatch_free(&mb);
    gnn_sampler_free(ps);
    gnn_free(count);
    gnn_free(perm);
    gnn_free(start);
    gnn_free(ids);
    gnn_free(slot);
    gnn_free(rows);
    return rc;
}

/* A batch's input rows on the device: through the cache when there is one. */
static int gather_input(gnn_job_t *j, int64_t n, const int64_t *idx, float *dst)
{
    if (j->fc_slot)
        return gnn_be_gather_rows_cached(j->be, n, j->g.feat_dim, j->fc_rows, j->fc_slot, j->x,
                                         idx, dst);
    return gnn_be_gather_rows(j->be, n, j->g.feat_dim, j->x, j->g.csr.n_rows, idx, dst);
}

static int mb_setup(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    int64_t rows = j->task->batch_rows ? j->task->batch_rows(j) : o->batch_size;
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->dlogits, &j->dlogits_bytes,
                            (size_t)rows * (size_t)j->out_dim * sizeof(float)));
    /* Typed draws read each relation's entries as one run; a typed graph's
     * rows are grouped so for any model, as a partition's rows are, so
     * that a node's draws are the same in one process and over ranks. */
    if (j->g.etype) GNN_TRY(gnn_typed_group_rows(&j->g.csr, j->g.etype));
    j->feat_by_rows = mb_feat_by_rows(j);
    /* On a device the whole feature table is there already (layer-wise
     * inference reads it): a batch's rows are gathered there, and only its
     * node ids cross the bus. */
    j->feat_on_dev = !gnn_be_host_memory(j->be) && !j->xs.indptr && j->g.feat_dim > 0;
    if (!strcmp(o->sampler, "device")) GNN_TRY(mb_device_setup(j));
    if (o->feature_cache && j->feat_on_dev) GNN_TRY(mb_cache_setup(j));
    /* (With a device sampler: the batch indices alone, no loader.) */
    GNN_TRY(gnn__loader_setup(j, &j->g.csr,
                              j->feat_by_rows || j->feat_on_dev || j->xs.indptr ? NULL
                                                                                : j->feat_host,
                              NULL, j->task->seed_targets(j), NULL, NULL));
    if (j->ds) {
        GNN_INFO("mini-batches of %" PRId64 " seeds, fanouts %s, sampled on %s (the graph read "
                 "from %s memory)%s",
                 o->batch_size, j->fanouts, gnn_backend_describe(j->be),
                 gnn_be_sampler_graph_at(j->ds) == 1 ? "device" : "host",
                 gnn__opts_prefetch(o) > 0 ? ", one batch ahead" : "");
        return 0;
    }
    GNN_INFO("mini-batches of %" PRId64 " %s, fanouts %s, %d sampler thread%s, prefetch %d%s, "
             "%d OpenMP thread%s",
             o->batch_size, j->task->edge_seeds ? "training edges" : "seeds", j->fanouts,
             o->sampler_threads, o->sampler_threads > 1 ? "s" : "", gnn__opts_prefetch(o),
             o->prefetch && strcmp(o->prefetch, "auto") ? "" : " (auto)", omp_get_max_threads(),
             omp_get_max_threads() > 1 ? "s" : "");
fail:
    return rc;
}

/* The loss of a batch and the step: after an epoch whose batches checked
 * every target (j->loss_checked), the loss is queued with the step and
 * read once the step is queued whole: no wait inside it; with a slot
 * (backend memory) it is left there, for the epoch to read at its end
 * (*loss NaN), so that the step is not waited for at all. */
static int batch_loss_and_step(gnn_job_t *j, const float *logits, const gnn_loader_batch_t *b,
                               const int64_t *y, int64_t ns, double *loss, double *slot)
{
    int rc = 0;
    if (j->task->batch_loss_async && j->loss_checked) {
        if (!slot && !j->loss_dev)
            GNN_TRY(gnn_be_alloc(j->be, sizeof(double), (void **)&j->loss_dev));
        GNN_TRY(j->task->batch_loss_async(j, logits, b, y, ns, slot ? slot : j->loss_dev,
                                          j->dlogits));
        GNN_TRY(gnn__step(j));
        if (slot)
            *loss = NAN;
        else
            GNN_TRY(gnn_be_download(j->be, loss, j->loss_dev, sizeof(double)));
    } else {
        GNN_TRY(j->task->batch_loss(j, logits, b, y, ns, loss, j->dlogits));
        GNN_TRY(gnn__step(j));
    }
fail:
    return rc;
}

/* A step on an empty given batch: no gradient, as over ranks. */
static int empty_step(gnn_job_t *j)
{
    int rc = 0;
    GNN_TRY(gnn_be_zero(j->be, gnn_model_grads(j->model),
                        (size_t)gnn_model_n_params(j->model) * sizeof(float)));
    j->emb_n = 0;
    GNN_TRY(gnn__input_step(j));
    gnn_model_set_rng_offset(j->model, gnn_model_rng_offset(j->model) +
                                           gnn_model_dropout_span(j->model, j->g.csr.n_rows));
    rc = gnn__adam_step(j);
fail:
    return rc;
}

/* One step on batch b: forward over its blocks, the task's loss on its
 * seeds, backward, Adam. */
static int train_batch(gnn_job_t *j, gnn_loader_batch_t *b, double *loss)
{
    int rc = 0, own = 0;
    gnn_backend_t *be = j->be;
    const gnn_minibatch_t *mb = &b->mb;
    int64_t F = j->g.feat_dim, ns = mb->n_seeds;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    const float *x = b->x, *logits;
    const int64_t *y = b->y, *ids = mb->nodes;
    if (b->n_items == 0) return empty_step(j); /* an empty given batch */
    GNN_TRY(gnn__batch_graphs(j, b, graphs, &own));
    if (!gnn_be_host_memory(be)) { /* the batch's host arrays onto the device */
        size_t xbytes = (size_t)mb->n_input * (size_t)F * sizeof(float);
        size_t ibytes = (size_t)mb->n_input * sizeof(int64_t);
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->xb, &j->xb_bytes, xbytes));
        if (b->y) {
            GNN_TRY(gnn__buf_ensure(be, (void **)&j->yb, &j->yb_bytes, (size_t)ns * sizeof(int64_t)));
            GNN_TRY(gnn_be_upload(be, j->yb, b->y, (size_t)ns * sizeof(int64_t)));
            y = j->yb;
        }
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->nb, &j->nb_bytes, ibytes));
        GNN_TRY(gnn_be_upload(be, j->nb, mb->nodes, ibytes));
        if (j->feat_on_dev) GNN_TRY(gather_input(j, mb->n_input, j->nb, j->xb));
        else if (F > 0 && b->x)
            GNN_TRY(gnn_be_upload(be, j->xb, b->x, xbytes));
        x = j->xb;
        ids = j->nb;
    }
    if (j->feat_by_rows) { /* layer 0 reads the batch's rows of the table */
        x = j->feat_host;
        GNN_TRY(gnn_model_set_input_rows(j->model, mb->nodes));
    } else if (j->xs.indptr) { /* layer 0 takes the batch's rows of the sparse table */
        GNN_TRY(gnn_csr_rows(&j->xs, mb->nodes, mb->n_input, &j->xsb));
        GNN_TRY(gnn_be_sparse_create(be, &j->xsb, &j->bxsb));
        GNN_TRY(gnn_model_set_sparse_input(j->model, j->bxsb));
        x = NULL;
    }
    /* The learnable rows of the batch's nodes beside their features. */
    GNN_TRY(gnn__input_build(j, mb->n_input, F > 0 ? x : NULL, ids, mb->nodes, &x));
    /* Dropout by node id, as over a partition directory. */
    GNN_TRY(gnn_model_set_row_ids(j->model, ids, j->g.csr.n_rows));
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(gnn__buf_ensure(be, (void **)&j->dlogits, &j->dlogits_bytes,
                            (size_t)ns * (size_t)j->out_dim * sizeof(float)));
    GNN_TRY(batch_loss_and_step(j, logits, b, y, ns, loss, NULL));
fail:
    if (j->feat_by_rows) (void)gnn_model_set_input_rows(j->model, NULL);
    if (j->bxsb) (void)gnn_model_set_sparse_input(j->model, NULL);
    gnn_be_sparse_free(j->bxsb); /* on a GPU freed in stream order, after the step's work */
    j->bxsb = NULL;
    gnn_csr_free(&j->xsb);
    gnn__batch_graphs_free(j, graphs, own);
    return rc;
}

/* One step on the device-sampled batch b of items (its seeds, or an edge
 * batch's edges: e), whose seeds' labels are y[0, seeds) (backend
 * memory; NULL for edge batches). */
static int train_device_batch(gnn_job_t *j, const gnn_bbatch_t *b, gnn_bgraph_t **given,
                              int64_t index, const gnn_loader_edges_t *e, gnn_dhost_t *sp,
                              int64_t items, const int64_t *y, double *loss, double *slot,
                              double *prep_s)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    const int64_t ns = b->n_seeds;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    const int64_t F = j->g.feat_dim;
    const float *logits;
    double t0 = gnn__now_s();
    for (int l = 0; l < b->layers; l++) { /* the sampler's thread's, or made here */
        graphs[l] = given ? given[l] : NULL;
        if (given) given[l] = NULL; /* ours to free now */
    }
    /* Made here on the sampler's stream too: on a GPU, the block's build
     * then waits for the sampling, not for the steps queued before. A
     * typed block's graph from its host copy, as the host sampler's. */
    for (int l = 0; l < b->layers; l++) {
        if (graphs[l]) continue;
        if (j->kind->typed) {
            GNN_TRY(gnn__dhost_typed_graph(j, b, sp, sp->ids, l, &graphs[l]));
        } else {
            GNN_TRY(gnn_be_sampler_graph_create(j->ds, b, l, attn_layout(j), &graphs[l]));
        }
    }
    *prep_s += gnn__now_s() - t0;
    /* The batch's node ids come from the device sampler (checked seeds, a
     * checked graph): the gather and the dropout by id need not check
     * them again, which on a GPU is a wait per call. */
    GNN_TRY(gnn_be_trust_ids(be, b->nodes, b->n_input, j->g.csr.n_rows));
    const float *x = NULL;
    if (j->xs.indptr) { /* layer 0 takes the batch's rows of the sparse table */
        gnn_spfeat_t *prep = sp->prep;
        sp->prep = NULL; /* the matrix's now */
        GNN_TRY(gnn_be_sparse_adopt(be, prep, &j->bxsb));
        GNN_TRY(gnn_model_set_sparse_input(j->model, j->bxsb));
    } else if (F > 0) {
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->xb, &j->xb_bytes,
                                (size_t)b->n_input * (size_t)F * sizeof(float)));
        GNN_TRY(gather_input(j, b->n_input, b->nodes, j->xb));
        x = j->xb;
    }
    /* The learnable rows of the batch's nodes beside their features: from
     * the backend's table by the batch's ids, or from a table in host
     * memory (--embed-on) by a host copy of them (read on the training
     * stream: a wait for the steps queued before, as the host sampler's
     * rows through host memory wait). */
    const int64_t *ids_host = j->kind->typed ? sp->ids : NULL;
    if (!ids_host && j->emb && j->emb_be) {
        GNN_TRY(gnn_grow((void **)&j->dids, &j->dids_cap, (size_t)b->n_input + 1,
                         sizeof *j->dids));
        GNN_TRY(gnn_be_download(be, j->dids, b->nodes, (size_t)b->n_input * sizeof(int64_t)));
        ids_host = j->dids;
    }
    GNN_TRY(gnn__input_build(j, b->n_input, x, b->nodes, ids_host, &x));
    /* Dropout by node id, as with the host sampler. */
    GNN_TRY(gnn_model_set_row_ids(j->model, b->nodes, j->g.csr.n_rows));
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(gnn__buf_ensure(be, (void **)&j->dlogits, &j->dlogits_bytes,
                            (size_t)ns * (size_t)j->out_dim * sizeof(float)));
    gnn_loader_batch_t lb;
    memset(&lb, 0, sizeof lb);
    lb.index = index;
    lb.n_items = items;
    if (e) lb.edges = *e;
    GNN_TRY(batch_loss_and_step(j, logits, &lb, y, ns, loss, slot));
fail:
    (void)gnn_be_trust_ids(be, NULL, 0, 0);
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) gnn_be_graph_free(graphs[l]);
    if (j->bxsb) (void)gnn_model_set_sparse_input(j->model, NULL);
    gnn_be_sparse_free(j->bxsb); /* on a GPU freed in stream order, after the step's work */
    j->bxsb = NULL;
    return rc;
}

void gnn__dhost_clear(gnn_dhost_t *sp)
{
    gnn_spfeat_free(sp->prep);
    gnn_csr_free(&sp->rows);
    if (sp->be) { /* (the arrays are none until it is set) */
        gnn_be_host_free(sp->be, sp->ids);
        for (int l = 0; l < GNN_BE_SAMPLE_MAX_LAYERS; l++) {
            gnn_be_host_free(sp->be, sp->indptr[l]);
            gnn_be_host_free(sp->be, sp->indices[l]);
            gnn_be_host_free(sp->be, sp->etype[l]);
        }
    }
    memset(sp, 0, sizeof *sp);
}

/* *p: room for n elements of size bytes in j's backend's host memory
 * (contents not kept). */
static int dhost_room(gnn_job_t *j, gnn_dhost_t *sp, void **p, size_t *cap, size_t n,
                      size_t size)
{
    if (!sp->be) sp->be = j->be;
    if (*p && n <= *cap) return 0;
    gnn_be_host_free(sp->be, *p);
    *p = NULL;
    *cap = 0;
    const size_t want = n + n / 4 + 64;
    int rc = gnn_be_host_alloc(sp->be, want * size, p);
    if (rc == 0) *cap = want;
    return rc;
}

int gnn__dhost_typed_graph(gnn_job_t *j, const gnn_bbatch_t *b, const gnn_dhost_t *sp,
                           const int64_t *src_ids, int l, gnn_bgraph_t **out)
{
    gnn_block_t blk = {.csr = {.n_rows = b->n_dst[l],
                               .n_cols = b->n_src[l],
                               .nnz = b->nnz[l],
                               .indptr = sp->indptr[l],
                               .indices = sp->indices[l],
                               /* a source may repeat, once per relation */
                               .flags = b->flags & ~(unsigned)GNN_CSR_DEDUPED},
                       .src_ids = (int64_t *)src_ids,
                       .etype = sp->etype[l]};
    return block_graph(j, &blk, l, NULL, out);
}

int gnn__dhost_down(gnn_job_t *j, const gnn_bbatch_t *b, int64_t *ids, gnn_dhost_t *sp)
{
    int rc = 0, n = 0;
    void *dst[1 + 3 * GNN_BE_SAMPLE_MAX_LAYERS];
    const void *src[1 + 3 * GNN_BE_SAMPLE_MAX_LAYERS];
    size_t bytes[1 + 3 * GNN_BE_SAMPLE_MAX_LAYERS];
#define PIECE(d, s, nb) (dst[n] = (d), src[n] = (s), bytes[n++] = (nb))
    if (ids) PIECE(ids, b->nodes, (size_t)b->n_input * sizeof(int64_t));
    for (int l = 0; sp && l < b->layers; l++) {
        const int64_t nd = b->n_dst[l], nnz = b->nnz[l];
        GNN_TRY(dhost_room(j, sp, (void **)&sp->indptr[l], &sp->cap_indptr[l], (size_t)nd + 1,
                           sizeof(int64_t)));
        GNN_TRY(dhost_room(j, sp, (void **)&sp->indices[l], &sp->cap_indices[l],
                           (size_t)nnz + 1, sizeof(int64_t)));
        GNN_TRY(dhost_room(j, sp, (void **)&sp->etype[l], &sp->cap_etype[l], (size_t)nnz + 1,
                           sizeof(int32_t)));
        PIECE(sp->indptr[l], b->indptr[l], (size_t)(nd + 1) * sizeof(int64_t));
        PIECE(sp->indices[l], b->indices[l], (size_t)nnz * sizeof(int64_t));
        PIECE(sp->etype[l], b->etype[l], (size_t)nnz * sizeof(int32_t));
    }
#undef PIECE
    GNN_TRY(gnn_be_sampler_download_n(j->ds, n, dst, src, bytes));
fail:
    return rc;
}

/* Batch number bi of the epoch into b: the n items' seeds sampled on the
 * device under (seed, epoch, bi); for edge batches the task's seeds of
 * the n edges (into e), the batch's edges left out of the draws, as the
 * host loader samples them. With sparse first-layer input, the batch's
 * rows of the sparse table (into sp) by its node ids read back on the
 * sampler's queue (a wait for the sampling only), prepared on this
 * thread as the host loader's are. */
static int device_sample(gnn_job_t *j, gnn_bbatch_t *b, gnn_loader_edges_t *e,
                         gnn_dhost_t *sp, const int64_t *items, int64_t n, uint64_t seed,
                         uint64_t epoch, int64_t bi)
{
    int rc = 0;
    if (j->task->edge_seeds) {
        gnn_loader_edges_free(e);
        GNN_TRY(j->task->edge_seeds(j, items, n, seed, epoch, e));
        GNN_TRY(gnn_be_sample_excluding(j->ds, e->seeds, e->n_seeds, e->excl, e->n_excl, seed,
                                        epoch, (uint64_t)bi, b));
    } else {
        GNN_TRY(gnn_be_sample(j->ds, items, n, seed, epoch, (uint64_t)bi, b));
    }
    if (j->xs.indptr || j->kind->typed) { /* node ids (and typed blocks) in one wait */
        GNN_TRY(dhost_room(j, sp, (void **)&sp->ids, &sp->ids_cap, (size_t)b->n_input + 1,
                           sizeof *sp->ids));
        GNN_TRY(gnn__dhost_down(j, b, sp->ids, j->kind->typed ? sp : NULL));
    }
    if (j->xs.indptr) {
        gnn_spfeat_free(sp->prep);
        sp->prep = NULL;
        gnn_csr_free(&sp->rows);
        GNN_TRY(gnn_csr_rows(&j->xs, sp->ids, b->n_input, &sp->rows));
        GNN_TRY(gnn_spfeat_create(&sp->rows, &sp->prep));
    }
fail:
    return rc;
}

/*
 * The device sampler's thread (--prefetch 1 or more): it samples batch
 * b + 1 into the other of two batches while batch b trains, in batch
 * order, and prepares its blocks for aggregation (on a GPU on the
 * sampler's stream: the transposes, scales and longest rows, the one wait
 * of a block's preparation, off the training stream). A batch is the
 * thread's from the start of its epoch until it is sampled and prepared
 * (state READY or FAILED), the training thread's until it gives it back
 * (FREE) once the step that reads it is queued: the next fill waits for
 * that step on the device (gnn_be_batch_release), not the threads; the
 * step frees the prepared blocks.
 */
enum { DS_FREE = 0, DS_READY = 1, DS_FAILED = 2 };

typedef struct gnn_dsq {
    gnn_job_t *j;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    gnn_bbatch_t slot[2];
    gnn_loader_edges_t edges[2]; /* slot k's edge batch (--task link) */
    gnn_dhost_t host[2];         /* slot k's host copies (sparse rows, typed blocks) */
    gnn_bgraph_t *graphs[2][GNN_MODEL_MAX_LAYERS]; /* slot k's blocks, prepared */
    int state[2];
    int rc[2];
    char msg[2][512];
    double sample_s[2], prepare_s[2];
    const int64_t *perm, *start; /* the epoch's: batch b is perm[start[b], start[b + 1]) */
    int64_t nb, next;
    uint64_t seed, epoch;
    uint64_t gen; /* bumped when an epoch starts or ends: a batch sampled
                     under another is dropped */
    int busy;     /* sampling now */
    int stop;
} gnn_dsq_t;

/* Free slot k's prepared blocks (the thread that owns the slot). */
static void dsq_drop_graphs(gnn_dsq_t *q, int64_t k)
{
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) {
        gnn_be_graph_free(q->graphs[k][l]);
        q->graphs[k][l] = NULL;
    }
}

static void *dsq_main(void *arg)
{
    gnn_dsq_t *q = arg;
    /* OpenMP inside a CPU backend's sampler: this thread's own team, as
     * small as the sampler threads asked for, beside the training one. */
    omp_set_num_threads(q->j->o->sampler_threads);
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->stop && (q->next >= q->nb || q->state[q->next % 2] != DS_FREE))
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->stop) break;
        const int64_t b = q->next, k = b % 2, lo = q->start[b], ns = q->start[b + 1] - lo;
        const uint64_t gen = q->gen;
        q->busy = 1;
        pthread_mutex_unlock(&q->mu);
        double t0 = gnn__now_s();
        int rc = device_sample(q->j, &q->slot[k], &q->edges[k], &q->host[k], q->perm + lo, ns,
                               q->seed, q->epoch, b);
        double t1 = gnn__now_s();
        for (int l = 0; rc == 0 && !q->j->kind->typed && l < q->slot[k].layers; l++)
            rc = gnn_be_sampler_graph_create(q->j->ds, &q->slot[k], l, attn_layout(q->j),
                                             &q->graphs[k][l]);
        double t2 = gnn__now_s();
        char msg[sizeof q->msg[k]] = "";
        if (rc < 0) snprintf(msg, sizeof msg, "%s", gnn_error_message());
        if (rc < 0) dsq_drop_graphs(q, k);
        pthread_mutex_lock(&q->mu);
        q->busy = 0;
        if (gen != q->gen) { /* the epoch ended meanwhile: the batch is nobody's */
            dsq_drop_graphs(q, k);
            pthread_cond_broadcast(&q->cv);
            continue;
        }
        q->rc[k] = rc;
        snprintf(q->msg[k], sizeof q->msg[k], "%s", msg);
        q->sample_s[k] = t1 - t0;
        q->prepare_s[k] = t2 - t1;
        q->state[k] = rc < 0 ? DS_FAILED : DS_READY;
        q->next = rc < 0 ? q->nb : b + 1; /* a failure ends the epoch's sampling */
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

void gnn__dsq_free(gnn_job_t *j)
{
    gnn_dsq_t *q = j->dsq;
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stop = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->th, NULL);
    dsq_drop_graphs(q, 0);
    dsq_drop_graphs(q, 1);
    gnn_be_batch_free(&q->slot[0]);
    gnn_be_batch_free(&q->slot[1]);
    gnn_loader_edges_free(&q->edges[0]);
    gnn_loader_edges_free(&q->edges[1]);
    gnn__dhost_clear(&q->host[0]);
    gnn__dhost_clear(&q->host[1]);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->cv);
    gnn_free(q);
    j->dsq = NULL;
}

static int dsq_start(gnn_job_t *j)
{
    gnn_dsq_t *q = gnn_calloc(1, sizeof *q);
    if (!q) return GNN_FAIL(GNN_ENOMEM, "device sampler thread");
    q->j = j;
    if (pthread_mutex_init(&q->mu, NULL) != 0) {
        gnn_free(q);
        return GNN_FAIL(GNN_EIO, "device sampler thread: mutex");
    }
    if (pthread_cond_init(&q->cv, NULL) != 0) {
        pthread_mutex_destroy(&q->mu);
        gnn_free(q);
        return GNN_FAIL(GNN_EIO, "device sampler thread: condition variable");
    }
    if (pthread_create(&q->th, NULL, dsq_main, q) != 0) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        gnn_free(q);
        return GNN_FAIL(GNN_EIO, "device sampler thread: cannot start it");
    }
    j->dsq = q;
    return 0;
}

/* The next batch of the epoch: sampled here (no thread), or taken from the
 * thread once ready with its prepared blocks (*graphs: the slot's, which
 * the step takes over; NULL without the thread) and its edge batch (*e,
 * the slot's); *k its slot (-1: j->dsb). */
static int dsq_take(gnn_job_t *j, int64_t b, uint64_t seed, uint64_t epoch, gnn_bbatch_t **out,
                    const gnn_loader_edges_t **e, gnn_dhost_t **sp, gnn_bgraph_t ***graphs,
                    int *k, double *sample_s, double *prepare_s)
{
    gnn_dsq_t *q = j->dsq;
    *graphs = NULL;
    *prepare_s = 0.0;
    if (!q) {
        const int64_t lo = j->dstart[b], ns = j->dstart[b + 1] - lo;
        double t0 = gnn__now_s();
        int rc = device_sample(j, &j->dsb, &j->dsb_edges, &j->dsb_host, j->dperm + lo, ns, seed,
                               epoch, b);
        *sample_s = gnn__now_s() - t0;
        *out = &j->dsb;
        *e = &j->dsb_edges;
        *sp = &j->dsb_host;
        *k = -1;
        return rc;
    }
    *k = (int)(b % 2);
    pthread_mutex_lock(&q->mu);
    while (q->state[*k] == DS_FREE) pthread_cond_wait(&q->cv, &q->mu);
    int rc = q->state[*k] == DS_FAILED ? q->rc[*k] : 0;
    *sample_s = q->sample_s[*k];
    *prepare_s = q->prepare_s[*k];
    pthread_mutex_unlock(&q->mu);
    if (rc < 0) return GNN_FAIL(rc, "%s", q->msg[*k]);
    *out = &q->slot[*k];
    *e = &q->edges[*k];
    *sp = &q->host[*k];
    *graphs = q->graphs[*k];
    return 0;
}

/* Give a taken batch back, or (k == -2) end the epoch: wait for the
 * thread to be idle, every slot free. */
static void dsq_give(gnn_job_t *j, int k)
{
    gnn_dsq_t *q = j->dsq;
    if (!q || k == -1) return;
    pthread_mutex_lock(&q->mu);
    if (k >= 0) {
        q->state[k] = DS_FREE;
    } else {
        q->next = q->nb;
        q->gen++; /* a batch being sampled now is dropped */
        while (q->busy) pthread_cond_wait(&q->cv, &q->mu);
        dsq_drop_graphs(q, 0); /* a batch sampled and never trained */
        dsq_drop_graphs(q, 1);
        q->state[0] = q->state[1] = DS_FREE;
    }
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* An epoch sampled on the device: the loader's batches (the seeds shuffled
 * by (seed, epoch), or the task's given batches: edge batches, each
 * sampled from its seeds with its edges left out; batch b sampled under
 * (seed, epoch, b)), sampled one
 * ahead on the device sampler's thread with --prefetch 1 or more, else in
 * the step; the loader's counters from its times. On cpu-as-gpu each step
 * runs under a GPU capture's rules, and the epoch's debug line says in how
 * many steps a GPU would have waited for the device (a wait leaves it idle
 * until the host queues the rest): none once the loss has been checked. */
static int mb_epoch_device(gnn_job_t *j, double *loss)
{
    int rc = 0;
    const int emulated = gnn_backend_kind(j->be) == GNN_BACKEND_CPU && !gnn_be_host_memory(j->be);
    int64_t waits = 0;
    char wait_why[256] = "";
    gnn_checkpoint_t *c = &j->ck;
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run, epoch = (uint64_t)c->epoch;
    int64_t n = 0, nb = 0;
    GNN_TRY(gnn__plan_epoch(j, seed, epoch, &j->dperm, &j->dperm_cap, &j->dstart, &j->dstart_cap, &nb,
                       &n));
    if (gnn__opts_prefetch(j->o) > 0 && !j->dsq) GNN_TRY(dsq_start(j));
    gnn_dsq_t *q = j->dsq;
    if (q) { /* the epoch to the thread */
        pthread_mutex_lock(&q->mu);
        q->perm = j->dperm;
        q->start = j->dstart;
        q->nb = nb;
        q->next = 0;
        q->seed = seed;
        q->epoch = epoch;
        q->gen++;
        pthread_cond_broadcast(&q->cv);
        pthread_mutex_unlock(&q->mu);
    }
    gnn_loader_stats_t st;
    memset(&st, 0, sizeof st);
    double sum = 0.0, compute = 0.0;
    /* The epoch's labels in batch order, on the backend in one copy: no
     * copy from the host between steps (edge batches have none). */
    const int64_t *labels = j->task->seed_targets(j);
    if (labels) {
        GNN_TRY(gnn_grow((void **)&j->dy, &j->dy_cap, (size_t)n + 1, sizeof *j->dy));
        for (int64_t i = 0; i < n; i++) j->dy[i] = labels[j->dperm[i]];
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->yb, &j->yb_bytes,
                                (size_t)n * sizeof(int64_t)));
        if (n) GNN_TRY(gnn_be_upload(j->be, j->yb, j->dy, (size_t)n * sizeof(int64_t)));
    }
    /* After the checked epoch, each batch's loss stays on the backend
     * until the epoch ends. */
    double *slots = NULL;
    if (j->task->batch_loss_async && j->loss_checked && nb > 0) {
        GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->loss_slots, &j->loss_slots_bytes,
                                (size_t)nb * sizeof(double)));
        slots = j->loss_slots;
    }
    for (int64_t bi = 0; bi < nb; bi++) {
        const int64_t lo = j->dstart[bi], items = j->dstart[bi + 1] - lo;
        gnn_bbatch_t *b = NULL;
        const gnn_loader_edges_t *e = NULL;
        gnn_dhost_t *sp = NULL;
        gnn_bgraph_t **given = NULL;
        int k = -1;
        double t0 = gnn__now_s(), bl = 0.0, prep = 0.0, smp = 0.0;
        GNN_TRY(dsq_take(j, bi, seed, epoch, &b, &e, &sp, &given, &k, &smp, &prep));
        const double prep_ahead = prep;
        double t1 = gnn__now_s();
        if (q) {
            st.stall_s += t1 - t0;
            st.stalls += t1 - t0 > 1e-4;
        }
        const int rules = emulated && gnn_be_capture_rules_begin(j->be) == 0;
        if (items == 0) { /* an empty given batch: a step with no gradient, as over ranks */
            for (int l = 0; given && l < GNN_MODEL_MAX_LAYERS; l++) {
                gnn_be_graph_free(given[l]);
                given[l] = NULL;
            }
            rc = empty_step(j);
            if (slots && rc == 0) rc = gnn_be_zero(j->be, slots + bi, sizeof(double));
        } else {
            rc = train_device_batch(j, b, given, bi, j->task->edge_seeds ? e : NULL, sp, items,
                                    labels ? j->yb + lo : NULL, &bl, slots ? slots + bi : NULL,
                                    &prep);
        }
        if (rules && gnn__step_rules_end(j->be, rc, wait_why, sizeof wait_why)) waits++;
        /* The step is the batch's last reader: its next fill waits for the
         * step on the device, and this thread goes on to queue the next
         * step without waiting (a GPU never idles between the two). */
        if (rc == 0) rc = gnn_be_batch_release(b);
        /* Sampled in the step (no thread): nothing to overlap with, and
         * the times stay the step's own. */
        if (rc == 0 && !q) rc = gnn_be_sync(j->be);
        (void)gnn_model_set_row_ids(j->model, NULL, 0); /* the batch's buffers are not ours */
        if (rc < 0) goto fail;
        st.batches++;
        for (int l = 0; l < b->layers; l++) st.sampled_edges += b->nnz[l];
        st.input_nodes += b->n_input;
        st.sample_s += smp;
        st.prepare_s += prep;
        compute += gnn__now_s() - t1 - (prep - prep_ahead);
        if (!slots) sum += bl * (double)items;
        dsq_give(j, k);
    }
    double t_end = gnn__now_s();
    if (slots) { /* the batches' losses, summed in batch order as above */
        GNN_TRY(gnn_grow((void **)&j->loss_host, &j->loss_host_cap, (size_t)nb,
                         sizeof *j->loss_host));
        GNN_TRY(gnn_be_download(j->be, j->loss_host, slots, (size_t)nb * sizeof(double)));
        for (int64_t bi = 0; bi < nb; bi++)
            sum += j->loss_host[bi] * (double)(j->dstart[bi + 1] - j->dstart[bi]);
    }
    GNN_TRY(gnn_be_sync(j->be));
    compute += gnn__now_s() - t_end; /* the steps still queued */
    if (emulated)
        GNN_DEBUG("epoch %" PRId64 ": %" PRId64 " of %" PRId64 " steps would wait for a GPU%s%s%s",
                  c->epoch + 1, waits, nb, waits ? " (the first: " : "", waits ? wait_why : "",
                  waits ? ")" : "");
    j->lst = st;
    j->compute_s = compute;
    j->loss_checked = 1; /* every training target went through a checked loss */
    *loss = n ? sum / (double)n : 0.0;
fail:
    if (rc < 0) (void)gnn_be_sync(j->be); /* a failed step's work done before its blocks go */
    dsq_give(j, -2);
    return rc;
}

/* One epoch of mini-batches; *loss is the mean over the training seeds. */
static int mb_epoch(gnn_job_t *j, double *loss)
{
    if (j->ds) return mb_epoch_device(j, loss);
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run;
    const int64_t *seeds;
    int64_t n_seeds, total;
    j->task->train_seeds(j, &seeds, &n_seeds, &total);
    if (j->task->epoch_batches) { /* batches the task gives (edge batches) */
        const int64_t *items, *starts;
        int64_t nb;
        GNN_TRY(j->task->epoch_batches(j, &items, &starts, &nb));
        GNN_TRY(gnn_loader_start_batches(j->ld, items, starts, nb, seed, (uint64_t)c->epoch));
    } else {
        GNN_TRY(gnn_loader_start(j->ld, seeds, n_seeds, j->o->batch_size, 1, seed,
                                 (uint64_t)c->epoch));
    }
    double sum = 0.0, compute = 0.0;
    int64_t count = 0;
    for (;;) {
        gnn_loader_batch_t *b;
        GNN_TRY(gnn_loader_next(j->ld, &b));
        if (!b) break;
        double t0 = gnn__now_s(), bl = 0.0;
        int64_t ns = b->n_items;
        rc = train_batch(j, b, &bl);
        gnn_loader_release(j->ld, b);
        if (rc < 0) goto fail;
        GNN_TRY(gnn_be_sync(j->be));
        compute += gnn__now_s() - t0;
        sum += bl * (double)ns;
        count += ns;
    }
    gnn_loader_stats(j->ld, &j->lst);
    j->loss_checked = 1; /* every training target went through a checked loss */
    j->compute_s = compute;
    *loss = count ? sum / (double)count : 0.0;
    return 0;
fail:
    return rc;
}

/* Layer-wise inference over all nodes: layer l for every node from layer
 * l - 1's output (held in hbuf[(l - 1) % 2]), in batches of
 * --eval-batch-size destinations with all their in-neighbours. */
static int mb_infer(gnn_job_t *j, gnn_infer_t *res)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    const gnn_csr_t *csr = &j->g.csr;
    int L = j->o->layers, host = gnn_be_host_memory(be);
    int64_t n = csr->n_rows, eb = j->o->eval_batch_size < n ? j->o->eval_batch_size : n;
    int64_t wmax = 0, fi, fo;
    for (int l = 0; l < L; l++) { /* the widest layer output */
        gnn_model_layer_width(j->model, l, &fi, &fo);
        wmax = fo > wmax ? fo : wmax;
    }
    gnn_block_t blk = {0};
    gnn_bgraph_t *bg = NULL;
    int64_t *sdeg = NULL;
    size_t sdeg_cap = 0;
    gnn_vid_t *dst = gnn_malloc_array((size_t)eb + 1, sizeof *dst);
    GNN_CHECK(dst, GNN_ENOMEM, "inference batch");
    if (!j->outdeg) { /* gcn scales its sources by their degree in the whole graph */
        j->outdeg = gnn_calloc((size_t)n + 1, sizeof *j->outdeg);
        GNN_CHECK(j->outdeg, GNN_ENOMEM, "out-degrees");
        for (gnn_eid_t e = 0; e < csr->nnz; e++) j->outdeg[csr->indices[e]]++;
    }
    for (int k = 0; k < (L > 1 ? 2 : 1); k++)
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->hbuf[k], &j->hbuf_bytes[k],
                       (size_t)n * (size_t)wmax * sizeof(float)));
    const float *in = j->x;
    int64_t fin = j->in_dim;
    for (int l = 0; l < L; l++) {
        int64_t fout;
        gnn_model_layer_width(j->model, l, &fi, &fout);
        float *out = j->hbuf[l % 2];
        for (int64_t b0 = 0; b0 < n; b0 += eb) {
            int64_t nb = n - b0 < eb ? n - b0 : eb;
            for (int64_t i = 0; i < nb; i++) dst[i] = b0 + i;
            GNN_TRY(gnn_sampler_full_block_typed(csr, j->kind->typed ? j->g.etype : NULL, dst,
                                                 nb, &blk));
            int64_t nsrc = blk.csr.n_cols;
            const int64_t *idx = blk.src_ids;
            if (!host) {
                GNN_TRY(gnn__buf_ensure(be, (void **)&j->eidx, &j->eidx_bytes,
                               (size_t)nsrc * sizeof(int64_t)));
                GNN_TRY(gnn_be_upload(be, j->eidx, blk.src_ids, (size_t)nsrc * sizeof(int64_t)));
                idx = j->eidx;
            }
            GNN_TRY(gnn__buf_ensure(be, (void **)&j->ebuf, &j->ebuf_bytes,
                           (size_t)nsrc * (size_t)fin * sizeof(float)));
            if (l == 0) /* the features and learnable rows of the sources */
                GNN_TRY(gnn__input_gather(j, nsrc, idx, blk.src_ids, j->ebuf));
            else
                GNN_TRY(gnn_be_gather_rows(be, nsrc, fin, in, n, idx, j->ebuf));
            if ((size_t)nsrc + 1 > sdeg_cap) {
                gnn_free(sdeg);
                sdeg_cap = (size_t)nsrc + 1;
                sdeg = gnn_malloc_array(sdeg_cap, sizeof *sdeg);
                GNN_CHECK(sdeg, GNN_ENOMEM, "inference batch degrees");
            }
            for (int64_t k = 0; k < nsrc; k++) sdeg[k] = j->outdeg[blk.src_ids[k]];
            GNN_TRY(block_graph(j, &blk, l, sdeg, &bg));
            const float *z;
            GNN_TRY(gnn_model_layer_infer(j->model, l, bg, j->ebuf, &z));
            GNN_TRY(gnn_be_copy(be, out + b0 * fout, z, (size_t)nb * (size_t)fout * sizeof(float)));
            GNN_TRY(gnn_be_sync(be)); /* bg and blk are freed next */
            gnn_be_graph_free(bg);
            bg = NULL;
            gnn_block_free(&blk);
        }
        if (l == L - 1) {
            res->logits = out;
            if (l == 0 && j->emb) /* one layer: its input is the features and rows */
                GNN_TRY(gnn__input_build(j, n, j->x, NULL, NULL, &in));
            res->hidden = in;
            res->hidden_rows = n;
            res->hidden_cols = fin;
        }
        in = out;
        fin = fout;
    }
fail:
    gnn_be_graph_free(bg);
    gnn_block_free(&blk);
    gnn_free(sdeg);
    gnn_free(dst);
    return rc;
}

static void mb_log(const gnn_job_t *j, FILE *f)
{
    gnn__log_loader(j, f);
    /* Where each batch's input rows came from. */
    fprintf(f, ", \"batch_features\": \"%s\", \"sampler\": \"%s\", \"fanouts\": \"%s\"",
            j->xs.indptr       ? "sparse"
            : j->feat_by_rows ? "rows"
            : j->feat_on_dev || j->ds ? "device"
                              : "loader",
            j->ds ? "device" : "host", j->fanouts);
}

const gnn_mode_t gnn_mode_minibatch = {
    .name = "minibatch",
    .minibatch = 1,
    .setup = mb_setup,
    .epoch = mb_epoch,
    .infer = mb_infer,
    .log = mb_log,
};
