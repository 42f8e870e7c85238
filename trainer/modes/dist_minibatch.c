/*
 * Mini-batch training over a partition directory (trainer/mode.h), one
 * rank per part. Every rank takes the same number of steps per epoch (the
 * most any rank has batches for); in each, its next batch of its own
 * training seeds (none once its batches are done), the features of remote
 * input nodes it does not hold (its first hop of halo, its --feature-cache)
 * fetched from their owners, the
 * loss as its share of the mean over all ranks' seeds of the step, the
 * gradients summed, one Adam step. With overlap (MPI allows threads, and
 * the loader hands out two batches at once), step s + 1's batch is taken
 * and its fetch runs on a thread, over its own communicator, while step s
 * trains. Dropout is keyed by the graph file's node ids, so a rank's batch
 * is what one process computes for the same seeds. Inference is the
 * full-graph forward over the parts (modes/distributed.c), from the same
 * table of held rows (but for a table read in place from host memory,
 * when the device keeps its input rows). On a device the host sampler's
 * batches gather their held rows from the device's table (dev_gather):
 * only ids and fetched rows go up.
 *
 * With --sampler device each rank samples its batches where its backend
 * runs (gnn_be_sample over the part, draws keyed by graph-file ids: the
 * host sampler's batches entry for entry), the blocks are prepared there,
 * and the input rows held are gathered from the backend's table; only the
 * node ids come back to the host, to list the rows fetched from their
 * owners, which go up and into place (and the learnable rows of
 * --embed-dim, fetched and stepped by their owners as for the host
 * sampler's batches). Where the part lacks rows a batch draws (fewer
 * hops of halo than layers, edge batches), the device sampler hands each
 * hop's rows beyond it to the same owners' hook (gnn_be_sampler_set_remote),
 * in step order on every rank, a rank without a batch sampling an empty
 * one to draw for the others; an edge batch's seeds are made by the
 * task's hook, which gathers the step's whole batch first.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"
#include "graph/base/mpiutil.h"
#include "trainer/featcache.h"

#include <inttypes.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* The mode's own state (j->mode_state). */
typedef struct {
    int64_t steps;                    /* per epoch, the same on every rank */
    int64_t *step_seeds;              /* steps: seeds of all ranks at each step */
    int64_t *feat_row;                /* n_all: row of each local node in the table, -1:
                                         fetched per step */
    /* The rows held (the table): owned and first-hop rows at their local
     * ids, then the n_cache rows of the --feature-cache. */
    float *htable;                    /* host: the table (NULL on a device holding it) */
    float *dtable;                    /* backend: the table */
    int table_host;                   /* htable is this mode's (--features-on host); else
                                         htable and dtable are j->x, or NULL */
    int table_mapped;                 /* ... and dtable maps it */
    int64_t n_cache;
    int64_t held_all;                 /* rows held, all ranks: owned, first hop, cache */
    int64_t *cache_out;               /* (sampler id, table row) of the cached nodes beyond
                                         the part, by id */
    int64_t n_cache_out;
    int overlap;                      /* the next step's batch prepared on a thread while
                                         a step trains (agreed by all ranks) */
    int fetch_overlap;                /* fetches ran on their own thread */
    int remote_rows;                  /* parts have fewer halo hops than layers (or edge
                                         batches): hops the part cannot serve are drawn
                                         by the owners (either sampler), and each
                                         step's batch is sampled in step order */
    gnn_sampler_remote_t remote;      /* ... through this hook */
    gnn_sampler_t *idle;              /* a rank out of batches still draws for others */
    int64_t *batch_gid;               /* host: graph-file id of each input row of a batch
                                         (dropout by node: the same mask on any rank and in
                                         one process) */
    int64_t batch_gid_cap;
    /* --sampler device (j->ds samples) */
    struct dpend *dp;                 /* two steps' batches, used in turn */
    int64_t *d_row, *d_pos;           /* backend copies of a batch's hrow and pos */
    size_t d_row_bytes, d_pos_bytes;
    float *d_fetched;                 /* backend copy of its fetched rows */
    size_t d_fetched_bytes;
    int dev_gather;                   /* host sampler on a device: a batch's held rows
                                         gathered from dtable there, its
                                         fetched rows put in place there (the loader
                                         gathers none) */
    int fetch_direct;                 /* fetched rows received into backend buffers (a
                                         host-memory backend's, or a device's given to a
                                         CUDA-aware MPI) */
    int64_t ep_direct;                /* the epoch's steps so received, all ranks */
} dmb_t;

#define S(j) ((dmb_t *)(j)->mode_state)

/* The key of this rank's batches in the current run: its seeds' shuffle
 * and every batch's draws (the host loader's and the device sampler's). */
static uint64_t rank_seed(const gnn_job_t *j)
{
    return (uint64_t)j->o->seed + (uint64_t)j->ck.run +
           0x9E3779B97F4A7C15ull * (uint64_t)j->dist->rank;
}

/* The epoch's loss: the ranks' sums of batch loss x items, over all the
 * training items (collective). */
static int epoch_mean(double sum, int64_t total, double *loss)
{
    if (MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return GNN_FAIL(GNN_EMPI, "MPI_Allreduce failed");
    *loss = sum / (double)total;
    return 0;
}

/* A step's preparation (work(arg)), run on a thread of its own while the
 * step before trains, or in the caller: prep_start and prep_finish. */
typedef struct {
    int (*work)(void *arg);
    void *arg;
    pthread_t thread;
    int running, rc;
    char msg[512];
} prep_t;

static void *prep_thread(void *arg)
{
    prep_t *t = arg;
    omp_set_num_threads(1); /* the training thread's OpenMP team keeps the cores */
    t->rc = t->work(t->arg);
    if (t->rc < 0) snprintf(t->msg, sizeof t->msg, "%s", gnn_error_message());
    return NULL;
}

/* Run work(arg): on a thread when overlap, else (or when no thread can
 * start: every rank must still take part) here and now. */
static int prep_start(prep_t *t, int (*work)(void *), void *arg, int overlap)
{
    t->work = work;
    t->arg = arg;
    t->rc = 0;
    if (!overlap) return work(arg);
    if (pthread_create(&t->thread, NULL, prep_thread, t) == 0) {
        t->running = 1;
        return 0;
    }
    /* Here and now, its outcome kept for prep_finish: a failure is then
     * reported at the same step as on the ranks whose thread started. */
    GNN_WARN("cannot start a fetch thread: fetching in the training thread");
    t->rc = work(arg);
    if (t->rc < 0) snprintf(t->msg, sizeof t->msg, "%s", gnn_error_message());
    return 0;
}

/* Wait for a preparation prep_start began with overlap (its failure
 * reported here). */
static int prep_finish(prep_t *t)
{
    if (t->running) {
        pthread_join(t->thread, NULL);
        t->running = 0;
    }
    int rc = t->rc;
    t->rc = 0;
    return rc < 0 ? GNN_FAIL(rc, "%s", t->msg) : 0;
}

/* The same on a failure path: the thread joined, its outcome dropped
 * (the error already recorded stays the one reported). */
static void prep_join(prep_t *t)
{
    if (!t->running) return;
    pthread_join(t->thread, NULL);
    t->running = 0;
}

/* Room for floats fetched features in *rows (grown, contents dropped). */
static int rows_room(float **rows, size_t *cap, int64_t floats)
{
    if ((size_t)floats + 1 <= *cap) return 0;
    gnn_free(*rows);
    *cap = (size_t)floats + 1;
    *rows = gnn_alloc_large(*cap * sizeof **rows);
    if (!*rows) *cap = 0;
    return *rows ? 0 : GNN_FAIL(GNN_ENOMEM, "fetched features");
}

/*
 * A step's batch sampled on the device, and what its preparation made:
 * the node ids read back, the dtable row of each input row (hrow; 0 for a
 * fetched one, put in place after the gather), the rows to fetch (miss,
 * at input rows pos) and their fetched features (rows, grouped by owner:
 * row k goes to input row fpos[k]). With overlap the next step's is
 * prepared on a thread (prep_start) while a step trains. Where MPI may
 * write the backend's buffers (fetch_direct) the rows arrive in d_rows
 * instead, when it has room (grown by the training thread after a step
 * that lacked it, which staged its rows as above).
 *
 * What crosses the bus (hnodes, hrow, gid, fpos, rows) is in the backend's
 * staging memory (gnn_be_host_alloc: pinned on a GPU, so the copies run at
 * the bus's speed and the step queues them without waiting). Such a copy
 * may still be queued when dev_grads returns; the buffers are next written
 * by the preparation two steps on, after its gnn_be_sample into the same
 * batch returned, which waits for the step that released the batch last
 * (gnn_be_batch_release, after that step's copies).
 */
typedef struct dpend {
    gnn_bbatch_t b;
    int has;                 /* this rank has a batch at this step */
    int64_t s, ns, nm;       /* the step, its seeds, the rows to fetch */
    const int64_t *items;    /* its items: seeds, or an edge batch's edges */
    int64_t n_items;
    const int64_t *seeds;
    gnn_loader_edges_t e;    /* edge batches: the items' seeds, excluded edges, pairs */
    int64_t *miss, *pos;     /* host, n_input each */
    int64_t *hnodes, *hrow, *gid, *fpos; /* staging, n_input each */
    gnn_dhost_t hb;          /* typed draws: the blocks read back (R-GCN's graphs) */
    int64_t cap;
    float *rows;             /* staging, rows_cap bytes */
    size_t rows_cap;
    float *d_rows;           /* backend, d_rows_bytes: fetched rows received in place */
    size_t d_rows_bytes;
    size_t need;             /* bytes of this step's fetched rows */
    int in_backend;          /* this step's rows are in d_rows */
    int no_room;             /* d_rows could not grow: the slot stages */
    double sample_s;
    gnn_job_t *j;
    uint64_t seed, epoch;
    int64_t *remote, *hits;  /* the epoch's counters (one preparation at a time) */
    prep_t prep;
} dpend_t;

/* The cache row of node v beyond the part (v >= n_all), or -1. */
static int64_t cache_out_row(const gnn_job_t *j, int64_t v)
{
    return gnn_dist_pairs_find(S(j)->cache_out, S(j)->n_cache_out, v);
}

/*
 * Where the rows of a batch's n input nodes come from: hrow[k] the row of
 * input k in the table (owned and first-hop rows, then cached ones; for
 * one to fetch, unheld: 0 where a gather reads it and the fetched row is
 * put over it, -1 elsewhere), and the nodes to fetch, miss[i] at input
 * row pos[i] (*nm of them). Counts the remote inputs and those held here.
 */
static void sort_inputs(const gnn_job_t *j, const int64_t *nodes, int64_t n, int64_t unheld,
                        int64_t *hrow, int64_t *miss, int64_t *pos, int64_t *nm, int64_t *remote,
                        int64_t *hits)
{
    const gnn_dist_part_t *d = j->dist;
    *nm = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t v = nodes[k];
        const int64_t row = v < d->n_all ? S(j)->feat_row[v] : cache_out_row(j, v);
        hrow[k] = row >= 0 ? row : unheld;
        if (v < d->n_owned) continue;
        (*remote)++;
        if (row >= 0) {
            (*hits)++;
            continue;
        }
        miss[*nm] = v;
        pos[(*nm)++] = k;
    }
}

/* A typed model's samplers draw per relation, as the loader's. */
static int typed_draws(const gnn_job_t *j, gnn_sampler_t *s)
{
    if (!j->kind->typed) return 0;
    return gnn_sampler_set_relations(s, j->dist->full_etype, j->g.types->n_rels);
}

/*
 * The table of the rows this rank holds: the owned ones and the first hop
 * of halo (the job's input rows j->x, fetched at load for inference), then
 * the n_cache rows of the feature cache (ids), fetched here (collective).
 * The table becomes j->x (one copy of the rows) where the backend's memory
 * is the host's, or on a device when it fits there (--features-on); else
 * it is a host array the device reads in place, j->x left as it is.
 */
static int table_setup(gnn_job_t *j, const int64_t *ids, int device)
{
    int rc = 0, local = 0;
    dmb_t *st = S(j);
    gnn_dist_part_t *d = j->dist;
    const char *on = j->o->features_on;
    const int64_t f = d->feat_dim, nl = d->n_local;
    const size_t held = (size_t)nl * (size_t)f * sizeof(float),
                 cached = (size_t)st->n_cache * (size_t)f * sizeof(float),
                 tb = held + cached + sizeof(float);
    const int hostmem = gnn_be_host_memory(j->be);
    /* On a device the host sampler's batches take their held rows from
     * the device's table too: only ids and fetched rows cross the bus. */
    st->dev_gather = !device && j->stage && f > 0;
    int host = !hostmem && !strcmp(on, "host");
    size_t avail = 0;
    if (!hostmem && !strcmp(on, "auto") && gnn_be_mem_available(j->be, &avail) == 0)
        host = tb > avail / 2; /* in half the device's free memory, or read over the bus */
    gnn_error_clear();
    float *tab = NULL, *rows = NULL; /* the new table, and where the cached rows land */
    if (host) {
        st->htable = gnn_alloc_large(tb);
        st->table_host = 1;
        local = st->htable ? 0 : GNN_FAIL(GNN_ENOMEM, "feature table of %zu bytes", tb);
        if (local == 0 && held) local = gnn_be_download(j->be, st->htable, j->x, held);
        if (local == 0) rows = st->htable + nl * f;
    } else if (st->n_cache > 0 && hostmem) {
        /* The input rows moved into the table, their pages given back as
         * they go (never both in memory); fetches served from the table. */
        local = gnn_be_alloc(j->be, tb, (void **)&tab);
        if (local == 0) {
            if (held) gnn_move_release(tab, j->x, held);
            gnn_be_free(j->be, j->x);
            j->x = tab;
            tab = NULL;
            if (d->own_feat_lent) d->own_feat = j->x;
            rows = j->x + nl * f;
        }
    } else if (st->n_cache > 0) {
        local = gnn_be_alloc(j->be, tb, (void **)&tab);
        if (local == 0 && held) local = gnn_be_copy(j->be, tab, j->x, held);
        if (local == 0) {
            rows = gnn_alloc_large(cached + sizeof(float));
            if (!rows) local = GNN_FAIL(GNN_ENOMEM, "feature cache of %zu bytes", cached);
        }
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local)); /* before the collective fetch */
    GNN_TRY(gnn_dist_fetch_feat(d, ids, st->n_cache, rows));
    /* Ranks' tables may differ in kind (--features-on auto weighs each
     * rank's free memory; a rank may cache no row): each agrees once here,
     * whatever it did. */
    if (host) {
        local = gnn_be_map_host(j->be, st->htable, tb, (void **)&st->dtable);
        st->table_mapped = local == 0;
    } else if (tab && cached) { /* a device's table */
        local = gnn_be_upload(j->be, tab + nl * f, rows, cached);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    if (!host) {
        if (tab) {
            gnn_be_free(j->be, j->x);
            j->x = tab;
            tab = NULL;
        }
        st->dtable = j->x;
        st->htable = hostmem ? j->x : NULL;
    }
    if (!hostmem)
        GNN_INFO("feature rows held (owned, first hop of halo, cache): %.1f MB %s",
                 (double)tb / 1e6, host ? "read in place from host memory" : "in device memory");
fail:
    if (!host && !hostmem) gnn_free(rows);
    gnn_be_free(j->be, tab);
    return rc;
}

/*
 * Mini-batches over a partition directory: sampling runs on the part
 * (its rows reach H - 1 hops of halo, so L <= H layers never leave it);
 * with fewer hops than layers, the nodes whose rows the part lacks are
 * drawn by their owners (gnn_dist_draw_remote), so each step's batch is
 * then sampled in step order by one thread on every rank. The features
 * of remote input nodes come from their owners each step, except those of
 * the part's first hop of halo (fetched at load) and of the
 * --feature-cache: the other remote nodes sampling reaches most, fetched
 * once here.
 */
static int dmb_setup(gnn_job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, f = d->feat_dim, bytes = 0;
    const int64_t beyond = d->n_all - d->n_local; /* halo nodes past the first hop */
    int64_t *ids = NULL, *counts = NULL;
    int local = 0;
    const int device = !strcmp(o->sampler, "device");
    GNN_TRY(gnn__dist_open_exchange(j));
    dmb_t *st = gnn_calloc(1, sizeof *st);
    j->mode_state = st; /* freed by dmb_free whatever the others say */
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, st ? 0 : GNN_FAIL(GNN_ENOMEM, "mini-batch state")));
    const int64_t *train;
    int64_t n_train, n_total;
    j->task->train_seeds(j, &train, &n_train, &n_total);
    int64_t rows = j->task->batch_rows ? j->task->batch_rows(j) : o->batch_size;
    GNN_TRY(gnn__buf_ensure(j->be, (void **)&j->dlogits, &j->dlogits_bytes,
                            (size_t)(rows > n ? rows : n) * (size_t)j->out_dim * sizeof(float) + 1));
    /* Edge batches start from any node of the graph (a negative's end):
     * the owners draw every row the part lacks, from the first hop on. */
    int edges = j->task->edge_seeds != NULL;
    S(j)->remote_rows = d->hops < o->layers || edges;
    if (S(j)->remote_rows) {
        S(j)->remote = (gnn_sampler_remote_t){.n_held = d->n_held,
                                           .first_hop = edges ? 0 : d->hops,
                                           .excludes = edges,
                                           .draw = gnn_dist_draw_remote, .ctx = d};
        if (d->rank == 0 && !edges)
            GNN_INFO("%s has %d hop%s of halo for %d layers: hop%s %d to %d of each batch are "
                     "drawn by the nodes' owners",
                     o->data, d->hops, d->hops == 1 ? "" : "s", o->layers,
                     o->layers - d->hops > 1 ? "s" : "", d->hops + 1, o->layers);
        if (!device) { /* (the device sampler samples empty batches itself) */
            local = gnn_sampler_create(&d->full, o->layers, j->fanout, &S(j)->idle);
            if (local == 0) local = typed_draws(j, S(j)->idle);
            if (local == 0) local = gnn_sampler_set_once(S(j)->idle, o->sample_once);
            if (local == 0) local = gnn_sampler_set_key_ids(S(j)->idle, d->gid);
            if (local == 0) local = gnn_sampler_set_remote(S(j)->idle, &S(j)->remote);
        }
    }
    if (local == 0 && o->feature_cache) local = gnn_parse_size(o->feature_cache, &bytes);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    /* Steps: every rank takes the same number; a rank out of batches
     * still joins each step's fetch and allreduce, with no seeds. */
    counts = gnn_malloc_array((size_t)d->size + 1, sizeof *counts);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, counts ? 0 : GNN_FAIL(GNN_ENOMEM, "steps")));
    GNN_CHECK(MPI_Allgather(&n_train, 1, MPI_INT64_T, counts, 1, MPI_INT64_T,
                            MPI_COMM_WORLD) == MPI_SUCCESS,
              GNN_EMPI, "MPI_Allgather failed");
    int64_t B = o->batch_size;
    S(j)->steps = 0;
    for (int r = 0; r < d->size; r++) {
        int64_t s = (counts[r] + B - 1) / B;
        S(j)->steps = s > S(j)->steps ? s : S(j)->steps;
    }
    if (j->task->epoch_batches) /* given batches: one step each, on every rank */
        S(j)->steps = n_total > B ? (n_total + B - 1) / B : 1;
    S(j)->step_seeds = gnn_calloc((size_t)S(j)->steps + 1, sizeof *S(j)->step_seeds);
    GNN_CHECK(S(j)->step_seeds, GNN_ENOMEM, "steps");
    for (int64_t s = 0; s < S(j)->steps; s++)
        for (int r = 0; r < d->size; r++) {
            int64_t left = counts[r] - s * B;
            S(j)->step_seeds[s] += left <= 0 ? 0 : left < B ? left : B;
        }
    /* The cache: the remote nodes past the first hop ranked first, their
     * rows fetched once. Halo nodes are found through feat_row, nodes
     * beyond the part through the sorted cache_out list. want is the same
     * on every rank (so is the choice to pre-sample, which is
     * collective); cap is this rank's share of it. */
    int64_t want = f ? bytes / (f * (int64_t)sizeof(float)) : 0;
    int64_t cap = want < d->n_global - d->n_local ? want : d->n_global - d->n_local;
    int presample = want > 0 && !strcmp(o->cache_policy, "sample") && !edges;
    /* Beyond the halo only when owners draw: a cache that large may hold
     * every sampled node. */
    int64_t room = presample && S(j)->remote_rows ? cap : cap < beyond ? cap : beyond;
    S(j)->feat_row = gnn_malloc_array((size_t)d->n_all + 1, sizeof *S(j)->feat_row);
    ids = gnn_malloc_array((size_t)room + 1, sizeof *ids);
    local = S(j)->feat_row && ids ? 0 : GNN_FAIL(GNN_ENOMEM, "feature cache of %" PRId64 " rows", cap);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    S(j)->n_cache = 0;
    if (presample) {
        gnn_sampler_t *ps = NULL;
        double t0 = gnn__now_s();
        local = gnn_sampler_create(&d->full, o->layers, j->fanout, &ps);
        if (local == 0) local = typed_draws(j, ps);
        if (local == 0) local = gnn_sampler_set_once(ps, o->sample_once);
        if (local == 0) local = gnn_sampler_set_key_ids(ps, d->gid);
        if (local == 0 && S(j)->remote_rows) local = gnn_sampler_set_remote(ps, &S(j)->remote);
        rc = gnn_dist_agree(MPI_COMM_WORLD, local);
        if (rc < 0) {
            gnn_sampler_free(ps);
            goto fail;
        }
        gnn_featcache_presample_t pre = {
            .sampler = ps,
            .seeds = train,
            .n_seeds = n_train,
            .batch = B,
            .steps = S(j)->steps,
            .seed = ((uint64_t)o->seed + 0x9E3779B97F4A7C15ull * (uint64_t)d->rank) ^
                    0x7072652d73616d70ull,
        };
        local = gnn_featcache_choose(d, &pre, cap, ids, &S(j)->n_cache); /* agreed */
        gnn_sampler_free(ps);
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
        if (d->rank == 0)
            GNN_INFO("feature cache: one epoch pre-sampled in %.2f s", gnn__now_s() - t0);
    } else if (want > 0) {
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, gnn_featcache_choose(d, NULL, cap, ids,
                                                                    &S(j)->n_cache)));
    }
    d->sample_bytes = 0;
    d->sample_s = 0.0;
    int64_t n_out = 0;
    for (int64_t c = 0; c < S(j)->n_cache; c++) n_out += ids[c] >= d->n_all;
    S(j)->cache_out = gnn_malloc_array(2 * (size_t)n_out + 2, sizeof *S(j)->cache_out);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD,
                           S(j)->cache_out ? 0 : GNN_FAIL(GNN_ENOMEM, "feature cache list")));
    /* Rows held: the owned and first-hop ones at their local ids (the
     * job's input rows), the cached ones after them. */
    const int64_t nl = d->n_local;
    for (int64_t v = 0; v < d->n_all; v++) S(j)->feat_row[v] = v < nl ? v : -1;
    S(j)->n_cache_out = 0;
    for (int64_t c = 0; c < S(j)->n_cache; c++) {
        if (ids[c] < d->n_all) {
            S(j)->feat_row[ids[c]] = nl + c;
            continue;
        }
        S(j)->cache_out[2 * S(j)->n_cache_out] = ids[c];
        S(j)->cache_out[2 * S(j)->n_cache_out++ + 1] = nl + c;
    }
    gnn_dist_pairs_sort(S(j)->cache_out, S(j)->n_cache_out);
    GNN_TRY(table_setup(j, ids, device));
    S(j)->held_all = d->n_local + S(j)->n_cache;
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &S(j)->held_all, 1, MPI_INT64_T, MPI_SUM,
                              MPI_COMM_WORLD));
    d->fetch_bytes = 0;
    d->fetch_s = 0.0;
    if (device) {
        /* The part's sampler where the backend runs, keyed as the host's
         * (before the loader's set-up, which then starts no host loader). */
        S(j)->dp = gnn_calloc(2, sizeof *S(j)->dp);
        local = S(j)->dp ? 0 : GNN_FAIL(GNN_ENOMEM, "device batches");
        if (local == 0)
            local = gnn_be_sampler_create(j->be, &d->full, o->layers, j->fanout, &j->ds);
        if (local == 0) local = gnn_be_sampler_set_once(j->ds, o->sample_once);
        if (local == 0) local = gnn_be_sampler_set_key_ids(j->ds, d->gid);
        if (local == 0 && j->kind->typed) /* per relation, as the loader's sampler */
            local = gnn_be_sampler_set_relations(j->ds, d->full_etype, j->g.types->n_rels);
        if (local == 0 && S(j)->remote_rows) { /* the owners draw what the part lacks */
            const gnn_be_remote_t r = {.n_held = d->n_held,
                                       .n_ids = d->n_all + d->n_global,
                                       .first_hop = S(j)->remote.first_hop,
                                       .excludes = S(j)->remote.excludes,
                                       .draw = gnn_dist_draw_remote,
                                       .ctx = d};
            local = gnn_be_sampler_set_remote(j->ds, &r);
        }
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
        /* Fetched rows straight into backend buffers where MPI may write
         * them (chosen alike on every rank: gnn__dist_open_exchange). */
        const int hostmem = gnn_be_host_memory(j->be);
        S(j)->fetch_direct = hostmem || gnn_dist_dev_direct(j->ddev);
        if (!hostmem && d->rank == 0)
            GNN_INFO("fetched feature rows: %s",
                     S(j)->fetch_direct ? "received by MPI in device buffers"
                                        : "staged through host memory (pinned on a GPU)");
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD,
                           gnn__loader_setup(j, &d->full,
                                             S(j)->dev_gather ? NULL : S(j)->htable,
                                             S(j)->feat_row,
                                             j->task->seed_targets(j), d->gid,
                                             S(j)->remote_rows ? &S(j)->remote : NULL)));
    int level = 0;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) /* fetches may then run on a thread of their own */
        GNN_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d->fetch_comm) == MPI_SUCCESS, GNN_EMPI,
                  "MPI_Comm_dup failed");
    /* With and without overlap a step makes its collectives in different
     * orders, so every rank takes the same way: overlap only where all
     * can (--prefetch auto weighs each rank's own cores). */
    int ov = level == MPI_THREAD_MULTIPLE && d->fetch_comm != MPI_COMM_NULL &&
             (device ? gnn__opts_prefetch(o) > 0 : gnn_loader_max_held(j->ld) >= 2);
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, &ov, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    S(j)->overlap = ov;
    GNN_INFO("mini-batches of %" PRId64 " seeds per rank, fanouts %s, %" PRId64
             " steps per epoch; rows held for the %" PRId64 " halo nodes of the first hop and "
             "%" PRId64 " cached (of %" PRId64 " past it%s); sampled on the %s",
             o->batch_size, j->fanouts, S(j)->steps, d->n_local - n, S(j)->n_cache, beyond,
             S(j)->remote_rows ? ", and nodes beyond the part" : "", device ? "device" : "host");
fail:
    gnn_free(ids);
    gnn_free(counts);
    return rc;
}

/* One step's batch and the remote feature rows it still needs. */
typedef struct {
    gnn_loader_batch_t *b; /* NULL: this rank has no batch at this step */
    int64_t *miss, *pos;   /* local ids of the rows to fetch, and their input rows */
    int64_t *at;           /* row k of rows is the one of miss[at[k]] (dev_gather: after
                              the fetch, the input row it goes to) */
    int64_t *hrow;         /* dev_gather: the dtable row of each input row (0: fetched) */
    int64_t nm, cap;
    float *rows;           /* nm x F fetched, grouped by owner */
    size_t rows_cap;
    /* The fetch, possibly on a thread of its own, which takes the batch
     * first when sampling is collective (S(j)->remote_rows). */
    gnn_job_t *j;
    int has, take;
    int64_t *remote, *hits;
    prep_t prep;
} pending_t;

static void pending_free(pending_t *p)
{
    gnn_free(p->miss);
    gnn_free(p->pos);
    gnn_free(p->at);
    gnn_free(p->hrow);
    gnn_free(p->rows);
}

/* Take the next batch (if this rank has one at this step) and list the
 * remote rows the cache does not hold. Local to this rank. */
static int pending_take(gnn_job_t *j, pending_t *p, int has, int64_t *remote, int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t F = d->feat_dim;
    p->b = NULL;
    p->nm = 0;
    if (!has && S(j)->idle) { /* no batch, but the others' remote draws */
        gnn_minibatch_t mb;
        rc = gnn_sampler_sample(S(j)->idle, NULL, 0, 0, 0, 0, &mb);
        gnn_minibatch_free(&mb);
        return rc;
    }
    if (!has) return 0;
    GNN_TRY(gnn_loader_next(j->ld, &p->b));
    GNN_CHECK(p->b, GNN_EINVAL, "fewer batches than steps");
    const gnn_minibatch_t *mb = &p->b->mb;
    if (mb->n_input > p->cap) {
        gnn_free(p->miss);
        gnn_free(p->pos);
        gnn_free(p->at);
        gnn_free(p->hrow);
        p->cap = mb->n_input;
        p->miss = gnn_malloc_array((size_t)p->cap, sizeof *p->miss);
        p->pos = gnn_malloc_array((size_t)p->cap, sizeof *p->pos);
        p->at = gnn_malloc_array((size_t)p->cap, sizeof *p->at);
        p->hrow = gnn_malloc_array((size_t)p->cap, sizeof *p->hrow);
        if (!p->miss || !p->pos || !p->at || !p->hrow) p->cap = 0;
        GNN_CHECK(p->cap, GNN_ENOMEM, "batch fetch lists");
    }
    if (F == 0) { /* no features to fetch (learnable rows come apart) */
        for (gnn_vid_t k = 0; k < mb->n_input; k++) *remote += mb->nodes[k] >= d->n_owned;
        return 0;
    }
    const int gather = S(j)->dev_gather;
    sort_inputs(j, mb->nodes, mb->n_input, gather ? 0 : -1, p->hrow, p->miss, p->pos, &p->nm,
                remote, hits);
    if (!gather) /* the loader leaves the cached rows beyond the part to this */
        for (gnn_vid_t k = 0; k < mb->n_input; k++)
            if (mb->nodes[k] >= d->n_all && p->hrow[k] >= 0)
                memcpy(p->b->x + k * F, S(j)->htable + p->hrow[k] * F,
                       (size_t)F * sizeof(float));
    GNN_TRY(rows_room(&p->rows, &p->rows_cap, p->nm * F));
fail:
    return rc;
}

/* The collective part of a step's preparation: the batch when sampling
 * is collective, then the fetch, whose rows go into the batch's input
 * here (on the fetch's thread with overlap). */
static int pending_work(void *arg)
{
    pending_t *p = arg;
    gnn_dist_part_t *d = p->j->dist;
    const int64_t F = d->feat_dim;
    if (p->take) { /* agreed: a rank failing after the last exchange tells the others */
        MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
        int rc = gnn_dist_agree(comm, pending_take(p->j, p, p->has, p->remote, p->hits));
        if (rc < 0) return rc;
    }
    int rc = gnn_dist_fetch_grouped(d, p->miss, p->nm, p->rows, p->at);
    if (rc == 0 && p->b && F > 0 && S(p->j)->dev_gather) /* put in place on the device */
        for (int64_t i = 0; i < p->nm; i++) p->at[i] = p->pos[p->at[i]];
    else if (rc == 0 && p->b && F > 0)
        for (int64_t i = 0; i < p->nm; i++)
            memcpy(p->b->x + p->pos[p->at[i]] * F, p->rows + i * F, (size_t)F * sizeof(float));
    return rc;
}

/* Prepare the step's batch (has: this rank has one at this step): take it
 * here when sampling is local, then start what is collective (in step
 * order on every rank) on a thread when overlap is on, else do it here and
 * now. */
static int pending_start(gnn_job_t *j, pending_t *p, int has, int overlap, int64_t *remote,
                         int64_t *hits)
{
    int rc = 0;
    p->j = j;
    p->has = has;
    p->take = S(j)->remote_rows;
    p->remote = remote;
    p->hits = hits;
    if (!p->take) GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, pending_take(j, p, has, remote, hits)));
    return prep_start(&p->prep, pending_work, p, overlap);
fail:
    return rc;
}

/* Forward over the batch's blocks from its input rows x (gid: their
 * graph-file ids; both backend buffers), the loss of its ns seeds
 * (targets y) as this rank's share of the step's mean over items, the
 * backward; *sum += the batch's loss times items. */
static int batch_grads(gnn_job_t *j, gnn_bgraph_t **graphs, const float *x, const int64_t *y,
                       const int64_t *gid, const gnn_loader_batch_t *lb, int64_t ns,
                       int64_t items, int64_t step, double *sum)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    int64_t C = j->out_dim;
    const float *logits;
    double bl = 0.0;
    GNN_TRY(gnn_model_set_row_ids(j->model, gid, j->dist->n_global));
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(gnn__buf_ensure(be, (void **)&j->dlogits, &j->dlogits_bytes,
                            (size_t)ns * (size_t)C * sizeof(float)));
    GNN_TRY(j->task->batch_loss(j, logits, lb, y, ns, &bl, j->dlogits));
    float share = (float)((double)items / (double)S(j)->step_seeds[step]);
    GNN_TRY(gnn_be_axpby(be, ns * C, share, j->dlogits, 0.0f, j->dlogits));
    /* A task's own parameters (link prediction's MLP decoder) got the
     * gradient of this rank's mean from batch_loss: scaled alike. */
    int64_t xo = gnn_model_extra_offset(j->model), xn = gnn_model_n_params(j->model) - xo;
    if (xn > 0) {
        float *xg = gnn_model_grads(j->model) + xo;
        GNN_TRY(gnn_be_axpby(be, xn, share, xg, 0.0f, xg));
    }
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    *sum += bl * (double)items;
fail:
    return rc;
}

/* bytes of host src into the backend buffer *buf (grown as needed). */
static int put(gnn_backend_t *be, void **buf, size_t *have, const void *src, size_t bytes)
{
    int rc = gnn__buf_ensure(be, buf, have, bytes);
    if (rc == 0 && bytes) rc = gnn_be_upload(be, *buf, src, bytes);
    return rc;
}

/*
 * A batch's n input rows into j->xb on the backend: row k from dtable's
 * row hrow[k] (held rows), then the nm fetched rows (host
 * rows, or with rows NULL the backend's drows) at input rows fpos. The
 * ids were made and checked on the host (on a GPU each check on the
 * device would read a flag back).
 */
static int gather_batch_rows(gnn_job_t *j, const int64_t *hrow, int64_t n, const float *rows,
                             const float *drows, const int64_t *fpos, int64_t nm)
{
    int rc = 0;
    dmb_t *st = S(j);
    gnn_backend_t *be = j->be;
    const int64_t F = j->dist->feat_dim, table = j->dist->n_local + st->n_cache;
    GNN_TRY(put(be, (void **)&st->d_row, &st->d_row_bytes, hrow, (size_t)n * sizeof(int64_t)));
    GNN_TRY(gnn_be_trust_buffer(be, st->d_row, n, table, 0));
    GNN_TRY(gnn_be_gather_rows(be, n, F, st->dtable, table, st->d_row, j->xb));
    if (nm > 0) {
        if (rows) {
            GNN_TRY(put(be, (void **)&st->d_fetched, &st->d_fetched_bytes, rows,
                        (size_t)(nm * F) * sizeof(float)));
            drows = st->d_fetched;
        }
        GNN_TRY(put(be, (void **)&st->d_pos, &st->d_pos_bytes, fpos,
                    (size_t)nm * sizeof(int64_t)));
        GNN_TRY(gnn_be_trust_buffer(be, st->d_pos, nm, n, 1)); /* each row once */
        GNN_TRY(gnn_be_scatter_rows(be, nm, F, drows, F, st->d_pos, j->xb, F, n));
    }
fail:
    return rc;
}

/* Forward, loss as this rank's share of the step's mean, backward; zero
 * gradients without a batch. The batch is released. */
static int dist_batch_grads(gnn_job_t *j, pending_t *p, int64_t step, double *sum)
{
    int rc = 0, own = 0;
    gnn_backend_t *be = j->be;
    if (!p->b || p->b->n_items == 0) { /* none at this step, or an empty share of it */
        if (p->b) gnn_loader_release(j->ld, p->b);
        p->b = NULL;
        return gnn_be_zero(be, gnn_model_grads(j->model),
                           (size_t)gnn_model_n_params(j->model) * sizeof(float));
    }
    const gnn_minibatch_t *mb = &p->b->mb;
    int64_t ns = mb->n_seeds, items = p->b->n_items;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    GNN_TRY(gnn__batch_graphs(j, p->b, graphs, &own));
    if (mb->n_input > S(j)->batch_gid_cap) {
        gnn_free(S(j)->batch_gid);
        S(j)->batch_gid_cap = mb->n_input;
        S(j)->batch_gid = gnn_malloc_array((size_t)S(j)->batch_gid_cap, sizeof *S(j)->batch_gid);
        if (!S(j)->batch_gid) S(j)->batch_gid_cap = 0;
        GNN_CHECK(S(j)->batch_gid, GNN_ENOMEM, "batch ids");
    }
    const gnn_dist_part_t *d = j->dist;
    for (gnn_vid_t k = 0; k < mb->n_input; k++) { /* graph-file ids, as one process keys */
        gnn_vid_t v = mb->nodes[k];
        S(j)->batch_gid[k] = v < d->n_all ? d->gid[v] : d->p2g[v - d->n_all];
    }
    const float *x = p->b->x;
    const int64_t *y = p->b->y, *gid = S(j)->batch_gid;
    if (j->stage) { /* the batch's host arrays onto the backend */
        size_t xbytes = (size_t)mb->n_input * (size_t)j->dist->feat_dim * sizeof(float);
        size_t ibytes = (size_t)mb->n_input * sizeof(int64_t);
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->xb, &j->xb_bytes, xbytes));
        if (S(j)->dev_gather)
            GNN_TRY(gather_batch_rows(j, p->hrow, mb->n_input, p->rows, NULL, p->at, p->nm));
        else if (xbytes)
            GNN_TRY(gnn_be_upload(be, j->xb, x, xbytes));
        if (y) {
            GNN_TRY(gnn__buf_ensure(be, (void **)&j->yb, &j->yb_bytes,
                                    (size_t)ns * sizeof(int64_t)));
            GNN_TRY(gnn_be_upload(be, j->yb, y, (size_t)ns * sizeof(int64_t)));
            y = j->yb;
        }
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->nb, &j->nb_bytes, ibytes));
        GNN_TRY(gnn_be_upload(be, j->nb, gid, ibytes));
        x = j->xb;
        gid = j->nb;
    }
    GNN_TRY(gnn__input_dist_build(j, mb->n_input, x, &x)); /* the rows fetched for it */
    GNN_TRY(batch_grads(j, graphs, x, y, gid, p->b, ns, items, step, sum));
fail:
    gnn__batch_graphs_free(j, graphs, own);
    gnn_loader_release(j->ld, p->b);
    p->b = NULL;
    return rc;
}

/*
 * One epoch of distributed mini-batches: every rank takes S(j)->steps steps;
 * in each, its next batch of its own training nodes (none once its batches
 * are done), the features of remote input nodes not cached fetched from
 * their owners, the loss as its share of the mean over all ranks' seeds of
 * the step, gradients summed, one Adam step. With overlap (MPI allows
 * threads, and the loader hands out two batches at once), step s + 1's
 * batch is taken and its fetch runs on a thread, over its own
 * communicator, while step s trains. *remote, *hits: this rank's remote
 * input rows and those the cache held.
 */
static int dmb_epoch_steps(gnn_job_t *j, double *loss, double *waits, int64_t *remote,
                           int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_checkpoint_t *c = &j->ck;
    const int64_t *train;
    int64_t nt, total;
    j->task->train_seeds(j, &train, &nt, &total);
    pending_t pend[2];
    memset(pend, 0, sizeof pend);
    uint64_t seed = rank_seed(j);
    double sum = 0.0, compute = 0.0, wait = 0.0;
    const int overlap = S(j)->overlap;
    S(j)->fetch_overlap = overlap;
    int given = j->task->epoch_batches != NULL, local = 0;
    if (given) { /* every rank its share of each of the epoch's batches, sampled under
                    one process's key, so that P ranks draw what it draws */
        seed = (uint64_t)j->o->seed + (uint64_t)c->run;
        const int64_t *items, *starts;
        int64_t nb = 0;
        local = j->task->epoch_batches(j, &items, &starts, &nb);
        if (local == 0 && nb != S(j)->steps)
            local = GNN_FAIL(GNN_EINVAL, "%" PRId64 " batches for %" PRId64 " steps", nb,
                             S(j)->steps);
        if (local == 0)
            local = gnn_loader_start_batches(j->ld, items, starts, nb, seed, (uint64_t)c->epoch);
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
        for (int64_t b = 0; b < nb; b++) S(j)->step_seeds[b] = starts[b + 1] - starts[b];
        GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, S(j)->step_seeds, (int)nb, MPI_INT64_T, MPI_SUM,
                                  MPI_COMM_WORLD));
    } else {
        local = nt > 0 ? gnn_loader_start(j->ld, train, nt, j->o->batch_size, 1, seed,
                                          (uint64_t)c->epoch)
                       : 0;
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    }
    int64_t mine = nt > 0 || given ? gnn_loader_batches(j->ld) : 0;
    /* Dropout by node over the whole graph: every rank's stream advances
     * by the same span per step, with or without a batch, so a
     * checkpoint's offset (rank 0's) is every rank's. */
    uint64_t off0 = gnn_model_rng_offset(j->model);
    uint64_t span = gnn_model_dropout_span(j->model, d->n_global);
    if (S(j)->steps > 0) GNN_TRY(pending_start(j, &pend[0], 0 < mine, overlap, remote, hits));
    for (int64_t s = 0; s < S(j)->steps; s++) {
        pending_t *cur = &pend[s % 2], *next = &pend[(s + 1) % 2];
        double t0 = gnn__now_s();
        GNN_TRY(prep_finish(&cur->prep)); /* the fetch, its rows in the batch's input */
        wait += gnn__now_s() - t0;
        if (overlap && s + 1 < S(j)->steps) /* step s + 1's batch, fetched while s trains */
            GNN_TRY(pending_start(j, next, s + 1 < mine, 1, remote, hits));
        t0 = gnn__now_s();
        /* Learnable input rows: fetched from their owners for this step
         * (every rank, with or without a batch), stepped after it. */
        int has_input = cur->b && cur->b->n_items > 0;
        GNN_TRY(gnn__input_dist_fetch(j, has_input ? cur->b->mb.nodes : NULL,
                                      has_input ? cur->b->mb.n_input : 0));
        rc = dist_batch_grads(j, cur, s, &sum);
        if (rc < 0) goto fail; /* a failure of this rank alone: the job ends */
        GNN_TRY(gnn__input_dist_step(j, has_input));
        gnn_model_set_rng_offset(j->model, off0 + (uint64_t)(s + 1) * span);
        compute += gnn__now_s() - t0;
        GNN_TRY(gnn__step_reduce(j, NULL));
        if (!overlap && s + 1 < S(j)->steps) {
            t0 = gnn__now_s();
            GNN_TRY(pending_start(j, next, s + 1 < mine, 0, remote, hits));
            wait += gnn__now_s() - t0;
        }
    }
    if (nt > 0 || given) { /* the loader's end of epoch */
        gnn_loader_batch_t *b = NULL;
        GNN_TRY(gnn_loader_next(j->ld, &b));
        GNN_CHECK(!b, GNN_EINVAL, "more batches than steps");
        gnn_loader_stats(j->ld, &j->lst);
    } else {
        memset(&j->lst, 0, sizeof j->lst);
    }
    j->compute_s = compute;
    GNN_TRY(epoch_mean(sum, total, loss));
    *waits = wait;
fail:
    for (int i = 0; i < 2; i++)
        prep_join(&pend[i].prep);
    /* Batches go back in the order they were taken (the loader's slots
     * are reused in that order). */
    int first = pend[0].b && pend[1].b && pend[1].b->index < pend[0].b->index ? 1 : 0;
    for (int i = 0; i < 2; i++) {
        pending_t *p = &pend[(first + i) % 2];
        if (p->b) gnn_loader_release(j->ld, p->b);
        pending_free(p);
    }
    return rc;
}

static void dpend_free(gnn_backend_t *be, dpend_t *p)
{
    gnn_be_batch_free(&p->b);
    gnn_loader_edges_free(&p->e);
    gnn__dhost_clear(&p->hb);
    gnn_be_free(be, p->d_rows);
    p->d_rows = NULL;
    p->d_rows_bytes = 0;
    gnn_free(p->miss);
    gnn_free(p->pos);
    int64_t **staged[] = {&p->hnodes, &p->hrow, &p->gid, &p->fpos};
    for (size_t a = 0; a < sizeof staged / sizeof staged[0]; a++) {
        gnn_be_host_free(be, *staged[a]);
        *staged[a] = NULL;
    }
    gnn_be_host_free(be, p->rows);
    p->rows = NULL;
    p->cap = 0;
    p->rows_cap = 0;
}

/* Host arrays of p for a batch of n input nodes. */
static int dev_grow(gnn_backend_t *be, dpend_t *p, int64_t n)
{
    if (n <= p->cap) return 0;
    const int64_t cap = n + n / 4 + 64;
    int rc = 0;
    int64_t **plain[] = {&p->miss, &p->pos}, **staged[] = {&p->hnodes, &p->hrow, &p->gid, &p->fpos};
    p->cap = 0;
    for (size_t a = 0; a < sizeof plain / sizeof plain[0]; a++) {
        gnn_free(*plain[a]);
        *plain[a] = gnn_malloc_array((size_t)cap, sizeof(int64_t));
        GNN_CHECK(*plain[a], GNN_ENOMEM, "batch lists of %" PRId64 " nodes", n);
    }
    for (size_t a = 0; a < sizeof staged / sizeof staged[0]; a++) {
        gnn_be_host_free(be, *staged[a]);
        *staged[a] = NULL;
        GNN_TRY(gnn_be_host_alloc(be, (size_t)cap * sizeof(int64_t), (void **)staged[a]));
    }
    p->cap = cap;
fail:
    return rc;
}

/* Staging room for bytes of fetched rows in p (grown, contents dropped). */
static int dev_rows_room(gnn_backend_t *be, dpend_t *p, size_t bytes)
{
    if (p->rows && bytes <= p->rows_cap) return 0;
    gnn_be_host_free(be, p->rows);
    p->rows = NULL;
    p->rows_cap = 0;
    const size_t want = bytes + bytes / 4 + 64;
    int rc = gnn_be_host_alloc(be, want, (void **)&p->rows);
    if (rc == 0) p->rows_cap = want;
    return rc;
}

/* p's batch sampled on the device (when this rank has one), its node ids
 * read back on the sampler's queue and sorted into rows the backend's
 * table holds and rows to fetch. Local to this rank. */
static int dev_take(dpend_t *p)
{
    int rc = 0;
    gnn_job_t *j = p->j;
    dmb_t *st = S(j);
    const gnn_dist_part_t *d = j->dist;
    gnn_bbatch_t *b = &p->b;
    const int64_t F = d->feat_dim;
    p->nm = 0;
    /* Without a batch, a rank still draws for the others' (an empty one). */
    if (!p->has && !st->remote_rows) return 0;
    double t0 = gnn__now_s();
    if (j->task->edge_seeds) { /* collective: every rank leaves the whole batch's edges out */
        gnn_loader_edges_free(&p->e);
        GNN_TRY(j->task->edge_seeds(j, p->items, p->n_items, p->seed, p->epoch, &p->e));
        p->seeds = p->e.seeds;
        p->ns = p->e.n_seeds;
        GNN_TRY(gnn_be_sample_excluding(j->ds, p->seeds, p->ns, p->e.excl, p->e.n_excl, p->seed,
                                        p->epoch, (uint64_t)p->s, b));
    } else {
        GNN_TRY(gnn_be_sample(j->ds, p->seeds, p->ns, p->seed, p->epoch, (uint64_t)p->s, b));
    }
    if (!p->has) return 0;
    GNN_TRY(dev_grow(j->be, p, b->n_input));
    GNN_TRY(gnn__dhost_down(j, b, p->hnodes, j->kind->typed ? &p->hb : NULL));
    p->sample_s = gnn__now_s() - t0;
    for (int64_t k = 0; k < b->n_input; k++) {
        /* The part's nodes, then those beyond it (drawn by their owners). */
        const int64_t v = p->hnodes[k];
        GNN_CHECK(v >= 0 && v < d->n_all + d->n_global, GNN_EINVAL,
                  "device batch %" PRId64 ": node %" PRId64 " outside the part's %" PRId64
                  " and the graph's %" PRId64,
                  p->s, v, d->n_all, d->n_global);
        /* dropout keyed as one process keys it */
        p->gid[k] = v < d->n_all ? d->gid[v] : d->p2g[v - d->n_all];
    }
    if (F == 0) { /* no features to fetch (learnable rows come apart) */
        for (int64_t k = 0; k < b->n_input; k++) *p->remote += p->hnodes[k] >= d->n_owned;
        return 0;
    }
    sort_inputs(j, p->hnodes, b->n_input, 0, p->hrow, p->miss, p->pos, &p->nm, p->remote,
                p->hits);
    p->need = (size_t)(p->nm * F) * sizeof(float);
    p->in_backend = st->fetch_direct && p->d_rows && p->need <= p->d_rows_bytes;
    if (!p->in_backend) GNN_TRY(dev_rows_room(j->be, p, p->need));
fail:
    return rc;
}

/* The preparation, collective in step order on every rank: the batch
 * (its failure agreed), then the fetch of its missing rows, which arrive
 * grouped by owner into the staging rows (fpos: the input row of each). */
static int dev_work(void *arg)
{
    dpend_t *p = arg;
    gnn_dist_part_t *d = p->j->dist;
    MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
    int rc = gnn_dist_agree(comm, dev_take(p));
    if (rc < 0 || d->feat_dim == 0) return rc; /* (the same on every rank) */
    rc = gnn_dist_fetch_grouped(d, p->miss, p->nm, p->in_backend ? p->d_rows : p->rows, p->fpos);
    for (int64_t k = 0; k < p->nm && rc == 0; k++) p->fpos[k] = p->pos[p->fpos[k]];
    return rc;
}

/* Prepare step s's batch into p: on a thread with overlap, else here.
 * Its items: batch s of the epoch's plan (j->dperm, j->dstart; mine
 * batches), seeds themselves or an edge batch's edges. */
static int dev_start(gnn_job_t *j, dpend_t *p, int64_t s, int64_t mine, uint64_t seed,
                     uint64_t epoch, int overlap, int64_t *remote, int64_t *hits)
{
    p->j = j;
    p->s = s;
    p->has = s < mine;
    p->items = p->has ? j->dperm + j->dstart[s] : NULL;
    p->n_items = p->has ? j->dstart[s + 1] - j->dstart[s] : 0;
    const int edges = j->task->edge_seeds != NULL; /* seeds made from the items */
    p->seeds = edges ? NULL : p->items;
    p->ns = edges ? 0 : p->n_items;
    p->seed = seed;
    p->epoch = epoch;
    p->remote = remote;
    p->hits = hits;
    p->sample_s = 0.0;
    p->in_backend = 0;
    p->need = 0;
    return prep_start(&p->prep, dev_work, p, overlap);
}

/* The step's gradients on p's batch (targets y on the backend; its blocks
 * prepared in graphs), zero without one. */
static int dev_grads(gnn_job_t *j, dpend_t *p, gnn_bgraph_t **graphs, const int64_t *y,
                     double *sum)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    const gnn_bbatch_t *b = &p->b;
    const int64_t F = j->dist->feat_dim, nm = p->nm;
    if (!p->has || p->n_items == 0)
        return gnn_be_zero(be, gnn_model_grads(j->model),
                           (size_t)gnn_model_n_params(j->model) * sizeof(float));
    const int64_t n = b->n_input;
    /* The input rows: held ones gathered on the backend, the fetched
     * ones put in their places; then the learnable rows fetched for the
     * step beside them. */
    const float *x = NULL;
    if (F > 0) {
        GNN_TRY(gnn__buf_ensure(be, (void **)&j->xb, &j->xb_bytes,
                                (size_t)(n * F) * sizeof(float)));
        GNN_TRY(gather_batch_rows(j, p->hrow, n, p->in_backend ? NULL : p->rows,
                                  p->in_backend ? p->d_rows : NULL, p->fpos, nm));
        x = j->xb;
    }
    GNN_TRY(gnn__input_dist_build(j, n, x, &x));
    GNN_TRY(put(be, (void **)&j->nb, &j->nb_bytes, p->gid, (size_t)n * sizeof(int64_t)));
    GNN_TRY(gnn_be_trust_ids(be, j->nb, n, j->dist->n_global));
    gnn_loader_batch_t lb;
    memset(&lb, 0, sizeof lb);
    lb.index = p->s;
    lb.n_items = p->n_items;
    lb.edges = p->e; /* (zeroed for seed batches) */
    GNN_TRY(batch_grads(j, graphs, x, y, j->nb, &lb, p->ns, p->n_items, p->s, sum));
fail:
    (void)gnn_be_trust_ids(be, NULL, 0, 0);
    (void)gnn_model_set_row_ids(j->model, NULL, 0); /* j->nb is refilled by the next batch */
    return rc;
}

/*
 * One epoch of distributed mini-batches sampled on the device: the
 * loader's batches (this rank's seeds shuffled by (seed, epoch), batch s
 * sampled under (seed, epoch, s)); otherwise as dmb_epoch_steps. With
 * overlap (MPI allows threads, and --prefetch 1 or more), step s + 1's
 * batch is sampled (on the sampler's own stream), read back and its rows
 * fetched on a thread while step s trains, into the other of two batches;
 * the blocks of a step are prepared first, since one sampler takes one
 * call at a time.
 */
static int dmb_epoch_device(gnn_job_t *j, double *loss, double *waits, int64_t *remote,
                            int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_checkpoint_t *c = &j->ck;
    const int64_t *train;
    int64_t nt, total;
    j->task->train_seeds(j, &train, &nt, &total);
    /* Given batches (edge batches): every rank its share of each, sampled
     * under one process's key; else this rank's seeds under its own. */
    const int given = j->task->epoch_batches != NULL;
    uint64_t seed = given ? (uint64_t)j->o->seed + (uint64_t)c->run : rank_seed(j);
    uint64_t epoch = (uint64_t)c->epoch;
    dpend_t *dp = S(j)->dp;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    int64_t mine = 0; /* this rank's batches */
    int local = gnn__plan_epoch(j, seed, epoch, &j->dperm, &j->dperm_cap, &j->dstart,
                                &j->dstart_cap, &mine, &nt);
    if (local == 0 && given && mine != S(j)->steps)
        local = GNN_FAIL(GNN_EINVAL, "%" PRId64 " batches for %" PRId64 " steps", mine,
                         S(j)->steps);
    if (local == 0 && !given) /* the targets in batch order, on the backend in one copy */
        local = gnn_grow((void **)&j->dy, &j->dy_cap, (size_t)nt + 1, sizeof *j->dy);
    if (local == 0 && !given) {
        const int64_t *labels = j->task->seed_targets(j);
        for (int64_t i = 0; i < nt; i++) j->dy[i] = labels[j->dperm[i]];
        local = put(j->be, (void **)&j->yb, &j->yb_bytes, j->dy, (size_t)nt * sizeof(int64_t));
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    if (given) { /* the step's items over all ranks */
        for (int64_t b = 0; b < mine; b++) S(j)->step_seeds[b] = j->dstart[b + 1] - j->dstart[b];
        GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, S(j)->step_seeds, (int)mine, MPI_INT64_T,
                                  MPI_SUM, MPI_COMM_WORLD));
    }
    const int overlap = S(j)->overlap;
    S(j)->fetch_overlap = overlap;
    uint64_t off0 = gnn_model_rng_offset(j->model);
    uint64_t span = gnn_model_dropout_span(j->model, d->n_global);
    gnn_loader_stats_t ls;
    memset(&ls, 0, sizeof ls);
    int64_t direct = 0; /* steps whose fetched rows came into backend buffers */
    double sum = 0.0, compute = 0.0, wait = 0.0;
    if (S(j)->steps > 0)
        GNN_TRY(dev_start(j, &dp[0], 0, mine, seed, epoch, overlap, remote, hits));
    for (int64_t s = 0; s < S(j)->steps; s++) {
        dpend_t *cur = &dp[s % 2], *next = &dp[(s + 1) % 2];
        double t0 = gnn__now_s();
        GNN_TRY(prep_finish(&cur->prep));
        double t1 = gnn__now_s();
        wait += t1 - t0;
        /* Its blocks on the sampler's queue, before the next batch takes it. */
        if (cur->has && j->kind->typed) { /* R-GCN's graphs from the blocks read back */
            for (int l = 0; l < cur->b.layers; l++)
                GNN_TRY(gnn__dhost_typed_graph(j, &cur->b, &cur->hb, cur->hnodes, l, &graphs[l]));
        } else if (cur->has) {
            for (int l = 0; l < cur->b.layers; l++)
                GNN_TRY(gnn_be_sampler_graph_create(j->ds, &cur->b, l,
                                                    j->kind->attention ? 1 : -1, &graphs[l]));
        }
        double prep = gnn__now_s() - t1;
        if (overlap && s + 1 < S(j)->steps)
            GNN_TRY(dev_start(j, next, s + 1, mine, seed, epoch, 1, remote, hits));
        double t2 = gnn__now_s();
        /* Learnable input rows: fetched from their owners for this step
         * (every rank, with or without a batch), stepped after it. */
        const int has_input = cur->has && cur->n_items > 0;
        GNN_TRY(gnn__input_dist_fetch(j, has_input ? cur->hnodes : NULL,
                                      has_input ? cur->b.n_input : 0));
        rc = dev_grads(j, cur, graphs, cur->has && !given ? j->yb + j->dstart[s] : NULL, &sum);
        for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) {
            gnn_be_graph_free(graphs[l]);
            graphs[l] = NULL;
        }
        if (rc < 0) goto fail; /* a failure of this rank alone: the job ends */
        GNN_TRY(gnn__input_dist_step(j, has_input));
        if (cur->has) {
            ls.batches++;
            for (int l = 0; l < cur->b.layers; l++) ls.sampled_edges += cur->b.nnz[l];
            ls.input_nodes += cur->b.n_input;
            ls.sample_s += cur->sample_s;
            ls.prepare_s += prep;
            direct += cur->in_backend && cur->nm > 0;
        }
        gnn_model_set_rng_offset(j->model, off0 + (uint64_t)(s + 1) * span);
        compute += gnn__now_s() - t2; /* as dmb_epoch_steps: the reduce apart */
        GNN_TRY(gnn__step_reduce(j, NULL));
        /* The step read the batch last: its next fill waits for it. */
        if (cur->has) GNN_TRY(gnn_be_batch_release(&cur->b));
        /* Room in the backend for the rows this batch staged, for the
         * slot's next use (once the step is queued: a GPU waits for it to
         * free the smaller buffer); without room it stages again. */
        if (S(j)->fetch_direct && !cur->no_room && cur->need > cur->d_rows_bytes &&
            gnn__buf_ensure(j->be, (void **)&cur->d_rows, &cur->d_rows_bytes,
                            cur->need + cur->need / 4) < 0) {
            GNN_WARN("no room in the backend for fetched rows (%s): they are staged",
                     gnn_error_message());
            gnn_error_clear();
            cur->no_room = 1;
        }
        if (!overlap && s + 1 < S(j)->steps) {
            t0 = gnn__now_s();
            GNN_TRY(dev_start(j, next, s + 1, mine, seed, epoch, 0, remote, hits));
            wait += gnn__now_s() - t0;
        }
    }
    j->lst = ls;
    j->compute_s = compute;
    GNN_TRY(epoch_mean(sum, total, loss));
    GNN_MPI_TRY(MPI_Allreduce(&direct, &S(j)->ep_direct, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD));
    *waits = wait;
fail:
    for (int i = 0; i < 2; i++) prep_join(&dp[i].prep);
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) gnn_be_graph_free(graphs[l]);
    if (rc < 0) (void)gnn_be_sync(j->be); /* a failed step's work done before its blocks go */
    return rc;
}

static int dmb_epoch(gnn_job_t *j, double *loss)
{
    return gnn__dist_epoch(j, loss, j->ds ? dmb_epoch_device : dmb_epoch_steps);
}

static void dmb_keys(const gnn_job_t *j, FILE *f)
{
    fprintf(f, ", \"steps\": %" PRId64 ", \"rows_held\": %" PRId64 ", \"remote_inputs\": %" PRId64
               ", \"cache_hits\": %" PRId64 ", \"cache_hit_rate\": ",
            S(j)->steps, S(j)->held_all, j->ep_remote, j->ep_hits);
    gnn_json_number(f, j->ep_remote ? (double)j->ep_hits / (double)j->ep_remote : 0.0);
    fprintf(f, ", \"sample_s_max\": ");
    gnn_json_number(f, j->ep_sample_s);
    fprintf(f, ", \"fetch_busy_s\": ");
    gnn_json_number(f, j->ep_fetch_busy_s);
    fprintf(f, ", \"fetch_overlap\": %s, \"fanouts\": \"%s\"",
            S(j)->fetch_overlap ? "true" : "false", j->fanouts);
    if (j->ds) fprintf(f, ", \"fetch_direct_steps\": %" PRId64, S(j)->ep_direct);
}

static void dmb_log(const gnn_job_t *j, FILE *f)
{
    gnn__log_loader(j, f);
    gnn__log_dist(j, f, dmb_keys);
}

static void dmb_free(gnn_job_t *j)
{
    dmb_t *st = j->mode_state;
    if (!st) return;
    gnn_sampler_free(st->idle);
    gnn_free(st->step_seeds);
    gnn_free(st->feat_row);
    if (st->table_mapped) /* before the host rows it reads go */
        gnn_be_unmap_host(j->be, st->htable);
    if (st->table_host) gnn_free(st->htable); /* else the job's input rows */
    gnn_free(st->cache_out);
    gnn_free(st->batch_gid);
    if (st->dp) {
        dpend_free(j->be, &st->dp[0]);
        dpend_free(j->be, &st->dp[1]);
        gnn_free(st->dp);
    }
    gnn_be_free(j->be, st->d_row);
    gnn_be_free(j->be, st->d_pos);
    gnn_be_free(j->be, st->d_fetched);
    gnn_free(st);
    j->mode_state = NULL;
}

const gnn_mode_t gnn_mode_dist_minibatch = {
    .name = "dist-minibatch",
    .distributed = 1,
    .minibatch = 1,
    .setup = dmb_setup,
    .epoch = dmb_epoch,
    .infer = gnn__dist_infer,
    .log = dmb_log,
    .free = dmb_free,
};
