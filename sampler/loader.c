/*
 * The mini-batch loader (loader.h): worker threads filling a ring of
 * `prefetch` slots, one mutex and two condition variables.
 *
 * Batch i lives in slot i % K. A worker may claim batch i (the next
 * unclaimed one) when i < released + K, i.e. batch i - K has been given
 * back, so its slot is free; it builds the batch without the lock and marks
 * the slot ready. The trainer takes batch `next_take` when its slot is
 * ready. Every field below `mu` is guarded by it; a slot's batch contents
 * belong to the one worker building it, then to the trainer, then to
 * nobody until the next claim. A failure stops further claims: the trainer
 * reports it, waits for the workers still building, and clears their
 * slots, so the epoch ends with nothing held.
 *
 * Feature and label buffers are kept per slot and only grown, so a steady
 * epoch allocates nothing but the sampler's own per-batch arrays.
 */
#include "sampler/loader.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

enum { SLOT_FREE = 0, SLOT_BUILDING, SLOT_READY, SLOT_TAKEN };

typedef struct {
    gnn_loader_batch_t b;
    int state;
    int rc;              /* a build's failure */
    size_t x_cap, y_cap; /* elements the buffers hold */
} slot_t;

struct gnn_loader {
    gnn_loader_opts_t o;
    int fanouts[GNN_SAMPLER_MAX_LAYERS];
    gnn_sampler_t *sampler;
    pthread_t thread[GNN_LOADER_MAX_THREADS];
    int n_threads; /* started */
    slot_t *slot;

    pthread_mutex_t mu;
    pthread_cond_t work;  /* workers wait here for a claimable batch */
    pthread_cond_t ready; /* the trainer waits here for its batch */
    int stop;
    gnn_vid_t *perm; /* the epoch's seeds in batch order */
    size_t perm_cap;
    int64_t *starts; /* batches given by their bounds (gnn_loader_start_batches), or NULL */
    size_t starts_cap;
    int given;       /* this epoch's batches are given by starts */
    int64_t n, batch_size, n_batches;
    uint64_t seed, epoch;
    int64_t next_claim, next_take, released;
    int building;        /* workers building a batch now */
    int failed;          /* a build failed: no more claims this epoch */
    int fail_rc;
    char fail_msg[512];
    gnn_loader_stats_t st;
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- The permutation -------------------------------------------------------- */

void gnn_loader_shuffle(gnn_vid_t *a, int64_t n, uint64_t seed, uint64_t epoch)
{
    uint64_t key = gnn_rng_mix64(gnn_rng_mix64(seed ^ 0x73687566666c65ull) ^ epoch), w = 0;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)gnn_rng_below(key, &w, (uint64_t)i + 1);
        gnn_vid_t t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

/* ---- Building one batch (worker, without the lock) -------------------------- */

void gnn_loader_edges_free(gnn_loader_edges_t *e)
{
    if (!e) return;
    gnn_free(e->seeds);
    gnn_free(e->excl);
    gnn_free(e->pairs);
    memset(e, 0, sizeof *e);
}

static void clear_batch(gnn_loader_t *ld, slot_t *sl)
{
    gnn_loader_batch_t *b = &sl->b;
    if (ld->o.unprepare) ld->o.unprepare(ld->o.ctx, b);
    gnn_minibatch_free(&b->mb);
    gnn_loader_edges_free(&b->edges);
    memset(b->user, 0, sizeof b->user);
}

static int build(gnn_loader_t *ld, slot_t *sl, int64_t i)
{
    int rc = 0;
    gnn_loader_batch_t *b = &sl->b;
    int64_t lo = ld->given ? ld->starts[i] : i * ld->batch_size;
    int64_t cnt = ld->given                       ? ld->starts[i + 1] - lo
                  : ld->n - lo < ld->batch_size ? ld->n - lo
                                                : ld->batch_size;
    b->index = i;
    b->n_items = cnt;
    memset(b->user, 0, sizeof b->user);
    double t0 = now_s();
    if (ld->o.edge_seeds) {
        gnn_loader_edges_t *e = &b->edges;
        memset(e, 0, sizeof *e);
        GNN_TRY(ld->o.edge_seeds(ld->o.ctx, ld->perm + lo, cnt, ld->seed, ld->epoch, e));
        GNN_TRY(gnn_sampler_sample_excluding(ld->sampler, e->seeds, e->n_seeds, e->excl,
                                             e->n_excl, ld->seed, ld->epoch, (uint64_t)i, &b->mb));
    } else {
        GNN_TRY(gnn_sampler_sample(ld->sampler, ld->perm + lo, cnt, ld->seed, ld->epoch,
                                   (uint64_t)i, &b->mb));
    }
    double t1 = now_s();
    const gnn_minibatch_t *mb = &b->mb;
    int64_t f = ld->o.feat_dim;
    if (ld->o.feat) {
        GNN_TRY(gnn_grow((void **)&b->x, &sl->x_cap, (size_t)mb->n_input * (size_t)f,
                         sizeof(float)));
        const float *feat = ld->o.feat;
        const int64_t *row = ld->o.feat_row;
        const gnn_vid_t ncol = ld->o.graph->n_cols;
        /* On the caller's OpenMP threads (a worker runs with one). */
#pragma omp parallel for schedule(static, 1024)
        for (gnn_vid_t k = 0; k < mb->n_input; k++) {
            gnn_vid_t u = mb->nodes[k];
            gnn_vid_t v = u >= ncol ? -1 : row ? row[u] : u;
            if (v < 0) {
                memset(b->x + k * f, 0, (size_t)f * sizeof(float));
                continue;
            }
            if (k + 8 < mb->n_input && !row) __builtin_prefetch(feat + mb->nodes[k + 8] * f);
            memcpy(b->x + k * f, feat + v * f, (size_t)f * sizeof(float));
        }
    }
    if (ld->o.labels) {
        GNN_TRY(gnn_grow((void **)&b->y, &sl->y_cap, (size_t)mb->n_seeds, sizeof(int64_t)));
        for (gnn_vid_t k = 0; k < mb->n_seeds; k++) b->y[k] = ld->o.labels[mb->nodes[k]];
    }
    double t2 = now_s();
    if (ld->o.prepare) GNN_TRY(ld->o.prepare(ld->o.ctx, b));
    b->sample_s = t1 - t0;
    b->gather_s = t2 - t1;
    b->prepare_s = now_s() - t2;
    return 0;
fail:
    return rc;
}

static void *worker(void *arg)
{
    gnn_loader_t *ld = arg;
    omp_set_num_threads(1); /* parallel across batches, not within one */
    pthread_mutex_lock(&ld->mu);
    for (;;) {
        while (!ld->stop &&
               (ld->failed || ld->next_claim >= ld->n_batches ||
                ld->next_claim >= ld->released + ld->o.prefetch))
            pthread_cond_wait(&ld->work, &ld->mu);
        if (ld->stop) break;
        int64_t i = ld->next_claim++;
        slot_t *sl = &ld->slot[i % ld->o.prefetch];
        sl->state = SLOT_BUILDING;
        ld->building++;
        pthread_mutex_unlock(&ld->mu);

        int rc = build(ld, sl, i);

        pthread_mutex_lock(&ld->mu);
        ld->building--;
        sl->rc = rc;
        sl->state = SLOT_READY;
        if (rc < 0 && !ld->failed) {
            ld->failed = 1;
            ld->fail_rc = rc;
            snprintf(ld->fail_msg, sizeof ld->fail_msg,
                     "batch %" PRId64 " of epoch %" PRIu64 ": %.440s", i, ld->epoch,
                     gnn_error_message());
        }
        pthread_cond_broadcast(&ld->ready);
    }
    pthread_mutex_unlock(&ld->mu);
    return NULL;
}

/* ---- Public ------------------------------------------------------------------ */

int gnn_loader_create(const gnn_loader_opts_t *o, gnn_loader_t **out)
{
    int rc = 0;
    gnn_loader_t *ld = NULL;
    GNN_CHECK(out, GNN_EINVAL, "loader: NULL output");
    *out = NULL;
    GNN_CHECK(o && o->graph && o->fanouts, GNN_EINVAL, "loader: NULL argument");
    GNN_CHECK(o->threads >= 0 && o->threads <= GNN_LOADER_MAX_THREADS, GNN_EINVAL,
              "loader: %d sampler threads (expected 0 to %d)", o->threads,
              GNN_LOADER_MAX_THREADS);
    GNN_CHECK(o->threads == 0 || (o->prefetch >= 1 && o->prefetch <= GNN_LOADER_MAX_PREFETCH),
              GNN_EINVAL, "loader: prefetch %d (expected 1 to %d)", o->prefetch,
              GNN_LOADER_MAX_PREFETCH);
    GNN_CHECK(!o->remote || o->threads == 0, GNN_EINVAL,
              "loader: remote rows are drawn in the caller's thread (threads must be 0, got %d)",
              o->threads);
    GNN_CHECK(!o->feat || o->feat_dim >= 1, GNN_EINVAL, "loader: feature width %" PRId64,
              o->feat_dim);
    ld = gnn_calloc(1, sizeof *ld);
    GNN_CHECK(ld, GNN_ENOMEM, "loader");
    ld->o = *o;
    if (o->threads == 0) /* one or two slots, filled on demand */
        ld->o.prefetch = o->prefetch >= 2 ? 2 : 1;
    GNN_TRY(gnn_sampler_create(o->graph, o->layers, o->fanouts, &ld->sampler));
    GNN_TRY(gnn_sampler_set_key_ids(ld->sampler, o->key_ids));
    GNN_TRY(gnn_sampler_set_once(ld->sampler, o->once));
    if (o->etype) GNN_TRY(gnn_sampler_set_relations(ld->sampler, o->etype, o->n_rels));
    GNN_TRY(gnn_sampler_set_remote(ld->sampler, o->remote));
    ld->slot = gnn_calloc((size_t)ld->o.prefetch, sizeof *ld->slot);
    GNN_CHECK(ld->slot, GNN_ENOMEM, "loader slots");
    GNN_CHECK(pthread_mutex_init(&ld->mu, NULL) == 0, GNN_EIO, "loader: mutex");
    if (pthread_cond_init(&ld->work, NULL) != 0) {
        pthread_mutex_destroy(&ld->mu);
        rc = GNN_FAIL(GNN_EIO, "loader: condition variable");
        goto fail;
    }
    if (pthread_cond_init(&ld->ready, NULL) != 0) {
        pthread_cond_destroy(&ld->work);
        pthread_mutex_destroy(&ld->mu);
        rc = GNN_FAIL(GNN_EIO, "loader: condition variable");
        goto fail;
    }
    for (int t = 0; t < o->threads; t++) {
        int e = pthread_create(&ld->thread[t], NULL, worker, ld);
        if (e != 0) {
            rc = GNN_FAIL(GNN_EIO, "loader: cannot start sampler thread %d: %s", t, strerror(e));
            gnn_loader_free(ld);
            return rc;
        }
        ld->n_threads++;
    }
    *out = ld;
    return 0;
fail:
    if (ld) {
        gnn_sampler_free(ld->sampler);
        gnn_free(ld->slot);
        gnn_free(ld);
    }
    return rc;
}

/* The epoch's item list (and given bounds) in place; no batch running. */
static int start_epoch(gnn_loader_t *ld, const gnn_vid_t *seeds, int64_t n, int64_t batch_size,
                       const int64_t *starts, int64_t n_batches, int shuffle, uint64_t seed,
                       uint64_t epoch);

int gnn_loader_start(gnn_loader_t *ld, const gnn_vid_t *seeds, int64_t n, int64_t batch_size,
                     int shuffle, uint64_t seed, uint64_t epoch)
{
    int rc = 0;
    GNN_CHECK(ld && (seeds || n == 0), GNN_EINVAL, "loader: NULL argument");
    GNN_CHECK(n >= 0, GNN_EINVAL, "loader: %" PRId64 " seeds", n);
    GNN_CHECK(batch_size >= 1, GNN_EINVAL, "loader: batch size %" PRId64 " (must be >= 1)",
              batch_size);
    return start_epoch(ld, seeds, n, batch_size, NULL, (n + batch_size - 1) / batch_size, shuffle,
                       seed, epoch);
fail:
    return rc;
}

int gnn_loader_start_batches(gnn_loader_t *ld, const gnn_vid_t *items, const int64_t *starts,
                             int64_t n_batches, uint64_t seed, uint64_t epoch)
{
    int rc = 0;
    GNN_CHECK(ld && starts && n_batches >= 0, GNN_EINVAL, "loader: bad batches");
    GNN_CHECK(starts[0] == 0, GNN_EINVAL, "loader: the first batch starts at %" PRId64, starts[0]);
    for (int64_t b = 0; b < n_batches; b++)
        GNN_CHECK(starts[b + 1] >= starts[b], GNN_EINVAL,
                  "loader: batch %" PRId64 " ends before it starts", b);
    GNN_CHECK(items || starts[n_batches] == 0, GNN_EINVAL, "loader: NULL items");
    return start_epoch(ld, items, starts[n_batches], 1, starts, n_batches, 0, seed, epoch);
fail:
    return rc;
}

static int start_epoch(gnn_loader_t *ld, const gnn_vid_t *seeds, int64_t n, int64_t batch_size,
                       const int64_t *starts, int64_t n_batches, int shuffle, uint64_t seed,
                       uint64_t epoch)
{
    int rc = 0;
    pthread_mutex_lock(&ld->mu);
    int busy = ld->next_take < ld->n_batches || ld->building > 0 || ld->released < ld->next_take;
    pthread_mutex_unlock(&ld->mu);
    GNN_CHECK(!busy, GNN_EINVAL, "loader: an epoch is still running (%" PRId64 " of %" PRId64
                                 " batches taken)",
              ld->next_take, ld->n_batches);
    if ((size_t)n + 1 > ld->perm_cap) {
        gnn_vid_t *p = gnn_malloc_array((size_t)n + 1, sizeof *p);
        GNN_CHECK(p, GNN_ENOMEM, "loader: seed list");
        gnn_free(ld->perm);
        ld->perm = p;
        ld->perm_cap = (size_t)n + 1;
    }
    if (n) memcpy(ld->perm, seeds, (size_t)n * sizeof *seeds);
    if (shuffle) gnn_loader_shuffle(ld->perm, n, seed, epoch);
    if (starts && (size_t)n_batches + 1 > ld->starts_cap) {
        int64_t *p = gnn_malloc_array((size_t)n_batches + 1, sizeof *p);
        GNN_CHECK(p, GNN_ENOMEM, "loader: %" PRId64 " batches", n_batches);
        gnn_free(ld->starts);
        ld->starts = p;
        ld->starts_cap = (size_t)n_batches + 1;
    }
    if (starts) memcpy(ld->starts, starts, ((size_t)n_batches + 1) * sizeof *starts);
    pthread_mutex_lock(&ld->mu);
    ld->given = starts != NULL;
    ld->n = n;
    ld->batch_size = batch_size;
    ld->n_batches = n_batches;
    ld->seed = seed;
    ld->epoch = epoch;
    ld->next_claim = ld->next_take = ld->released = 0;
    ld->failed = 0;
    ld->fail_rc = 0;
    ld->fail_msg[0] = '\0';
    memset(&ld->st, 0, sizeof ld->st);
    for (int k = 0; k < ld->o.prefetch; k++) ld->slot[k].state = SLOT_FREE;
    pthread_cond_broadcast(&ld->work);
    pthread_mutex_unlock(&ld->mu);
    return 0;
fail:
    return rc;
}

int64_t gnn_loader_batches(const gnn_loader_t *ld) { return ld->n_batches; }

/* After a failure (lock held): wait for the builders, clear ready slots,
 * end the epoch. */
static void abandon_epoch(gnn_loader_t *ld)
{
    ld->next_claim = ld->n_batches;
    while (ld->building > 0) pthread_cond_wait(&ld->ready, &ld->mu);
    for (int k = 0; k < ld->o.prefetch; k++) {
        slot_t *sl = &ld->slot[k];
        if (sl->state == SLOT_READY) clear_batch(ld, sl);
        sl->state = SLOT_FREE;
    }
    ld->next_take = ld->released = ld->n_batches;
}

int gnn_loader_next(gnn_loader_t *ld, gnn_loader_batch_t **out)
{
    int rc = 0;
    GNN_CHECK(ld && out, GNN_EINVAL, "loader: NULL argument");
    *out = NULL;
    pthread_mutex_lock(&ld->mu);
    if (ld->next_take >= ld->n_batches) {
        pthread_mutex_unlock(&ld->mu);
        return 0;
    }
    if (ld->next_take - ld->released >= gnn_loader_max_held(ld)) {
        pthread_mutex_unlock(&ld->mu);
        return GNN_FAIL(GNN_EINVAL, "loader: the previous batch was not released");
    }
    slot_t *sl = &ld->slot[ld->next_take % ld->o.prefetch];
    if (ld->n_threads == 0) { /* on demand, in this thread */
        int64_t i = ld->next_take;
        pthread_mutex_unlock(&ld->mu);
        rc = build(ld, sl, i);
        pthread_mutex_lock(&ld->mu);
        sl->state = SLOT_READY;
        if (rc < 0) {
            char msg[sizeof ld->fail_msg];
            snprintf(msg, sizeof msg, "%s", gnn_error_message());
            ld->failed = 1;
            ld->fail_rc = rc;
            snprintf(ld->fail_msg, sizeof ld->fail_msg,
                     "batch %" PRId64 " of epoch %" PRIu64 ": %.440s", i, ld->epoch, msg);
        }
    }
    if (sl->state != SLOT_READY && !ld->failed) {
        double t0 = now_s();
        ld->st.stalls++;
        while (sl->state != SLOT_READY && !ld->failed) pthread_cond_wait(&ld->ready, &ld->mu);
        ld->st.stall_s += now_s() - t0;
    }
    if (ld->failed) {
        rc = ld->fail_rc;
        char msg[sizeof ld->fail_msg];
        memcpy(msg, ld->fail_msg, sizeof msg);
        abandon_epoch(ld);
        pthread_mutex_unlock(&ld->mu);
        return GNN_FAIL(rc, "%s", msg);
    }
    sl->state = SLOT_TAKEN;
    ld->next_take++;
    gnn_loader_batch_t *b = &sl->b;
    ld->st.batches++;
    ld->st.sampled_edges += b->mb.edges_total;
    ld->st.input_nodes += b->mb.n_input;
    ld->st.sample_s += b->sample_s;
    ld->st.gather_s += b->gather_s;
    ld->st.prepare_s += b->prepare_s;
    pthread_mutex_unlock(&ld->mu);
    *out = b;
    return 0;
fail:
    return rc;
}

int gnn_loader_max_held(const gnn_loader_t *ld)
{
    return ld->o.prefetch >= 2 ? 2 : 1;
}

void gnn_loader_release(gnn_loader_t *ld, gnn_loader_batch_t *b)
{
    if (!ld || !b) return;
    slot_t *sl = (slot_t *)b; /* b is the first member of its slot */
    clear_batch(ld, sl);
    pthread_mutex_lock(&ld->mu);
    sl->state = SLOT_FREE;
    ld->released++;
    pthread_cond_broadcast(&ld->work);
    pthread_mutex_unlock(&ld->mu);
}

void gnn_loader_stats(const gnn_loader_t *ld, gnn_loader_stats_t *st)
{
    pthread_mutex_lock((pthread_mutex_t *)&ld->mu);
    *st = ld->st;
    pthread_mutex_unlock((pthread_mutex_t *)&ld->mu);
}

void gnn_loader_free(gnn_loader_t *ld)
{
    if (!ld) return;
    if (ld->n_threads > 0) {
        pthread_mutex_lock(&ld->mu);
        ld->stop = 1;
        pthread_cond_broadcast(&ld->work);
        pthread_mutex_unlock(&ld->mu);
        for (int t = 0; t < ld->n_threads; t++) pthread_join(ld->thread[t], NULL);
    }
    for (int k = 0; k < ld->o.prefetch; k++) {
        slot_t *sl = &ld->slot[k];
        if (sl->state == SLOT_READY || sl->state == SLOT_TAKEN) clear_batch(ld, sl);
        gnn_free(sl->b.x);
        gnn_free(sl->b.y);
    }
    pthread_cond_destroy(&ld->ready);
    pthread_cond_destroy(&ld->work);
    pthread_mutex_destroy(&ld->mu);
    gnn_free(ld->slot);
    gnn_free(ld->perm);
    gnn_free(ld->starts);
    gnn_sampler_free(ld->sampler);
    gnn_free(ld);
}
