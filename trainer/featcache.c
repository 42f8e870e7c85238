/*
 * The feature cache's ranking (trainer/featcache.h). Counts of halo nodes
 * live in an array over the halo; counts of nodes beyond the part (seen
 * only when owners draw) in an open-addressing table keyed by sampler id,
 * grown to stay at most half full, so memory follows the nodes actually
 * sampled, never the graph.
 */
#include "trainer/featcache.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "sampler/loader.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Counts of ids beyond the part: key -1 marks a free slot. */
typedef struct {
    int64_t *key, *count;
    uint64_t mask;
    int64_t size;
} counts_t;

static uint64_t hash_id(int64_t k)
{
    uint64_t z = (uint64_t)k;
    z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDull;
    z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return z ^ (z >> 33);
}

static void counts_free(counts_t *c)
{
    gnn_free(c->key);
    gnn_free(c->count);
    memset(c, 0, sizeof *c);
}

static int counts_grow(counts_t *c)
{
    uint64_t cap = c->key ? 2 * (c->mask + 1) : 1024;
    counts_t t = {gnn_malloc_array((size_t)cap, sizeof(int64_t)),
                  gnn_calloc((size_t)cap, sizeof(int64_t)), cap - 1, c->size};
    if (!t.key || !t.count) {
        counts_free(&t);
        return GNN_FAIL(GNN_ENOMEM, "feature cache: counts of %" PRId64 " nodes", c->size);
    }
    memset(t.key, 0xff, (size_t)cap * sizeof(int64_t));
    for (uint64_t i = 0; c->key && i <= c->mask; i++) {
        if (c->key[i] < 0) continue;
        uint64_t h = hash_id(c->key[i]) & t.mask;
        while (t.key[h] >= 0) h = (h + 1) & t.mask;
        t.key[h] = c->key[i];
        t.count[h] = c->count[i];
    }
    counts_free(c);
    *c = t;
    return 0;
}

static int counts_add(counts_t *c, int64_t k)
{
    if (!c->key || (uint64_t)(c->size + 1) * 2 > c->mask + 1) {
        int rc = counts_grow(c);
        if (rc < 0) return rc;
    }
    uint64_t h = hash_id(k) & c->mask;
    while (c->key[h] >= 0 && c->key[h] != k) h = (h + 1) & c->mask;
    if (c->key[h] < 0) {
        c->key[h] = k;
        c->count[h] = 0;
        c->size++;
    }
    c->count[h]++;
    return 0;
}

/* (sampled count, rows count, id): more sampled first, then more named by
 * the rows, then the lower id. */
static int cmp_rank(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] > y[0] ? -1 : 1;
    if (x[1] != y[1]) return x[1] > y[1] ? -1 : 1;
    return (x[2] > y[2]) - (x[2] < y[2]);
}

/* One epoch of batches, counting the remote input nodes the rank does not
 * hold into halo (over the halo beyond the first hop) and out (beyond the
 * part). Every step ends with an agreement
 * over d->comm, so a failure of one rank (after the sampler's last
 * exchange, or in counting) ends the loop on every rank at the same step;
 * the code returned is the agreed one. */
static int presample(const gnn_dist_part_t *d, const gnn_featcache_presample_t *ps,
                     const int64_t *seeds, int64_t *halo, counts_t *out)
{
    int rc = 0;
    gnn_minibatch_t mb;
    memset(&mb, 0, sizeof mb);
    for (int64_t s = 0; s < ps->steps && rc == 0; s++) {
        int64_t lo = s * ps->batch, cnt = ps->n_seeds - lo;
        cnt = cnt <= 0 ? 0 : cnt < ps->batch ? cnt : ps->batch;
        int local = gnn_sampler_sample(ps->sampler, cnt ? seeds + lo : NULL, cnt, ps->seed, 0,
                                       (uint64_t)s, &mb);
        for (gnn_vid_t k = mb.n_seeds; k < mb.n_input && local == 0; k++) {
            gnn_vid_t v = mb.nodes[k];
            if (v < d->n_local) continue; /* owned, or the first hop: held */
            if (v < d->n_all)
                halo[v - d->n_local]++;
            else
                local = counts_add(out, v);
        }
        gnn_minibatch_free(&mb);
        rc = gnn_dist_agree(d->comm, local);
    }
    return rc;
}

int gnn_featcache_choose(const gnn_dist_part_t *d, const gnn_featcache_presample_t *ps,
                         int64_t cap, int64_t *ids, int64_t *n)
{
    int rc = 0;
    int64_t nh = d->n_all - d->n_local;
    counts_t out;
    memset(&out, 0, sizeof out);
    int64_t *halo = gnn_calloc((size_t)nh + 1, sizeof *halo), *rank = NULL, *seeds = NULL;
    int64_t *named = gnn_calloc((size_t)nh + 1, sizeof *named);
    *n = 0;
    if (ps) {
        seeds = gnn_malloc_array((size_t)ps->n_seeds + 1, sizeof *seeds);
        int local = halo && named && seeds
                        ? 0
                        : GNN_FAIL(GNN_ENOMEM, "feature cache: counts of %" PRId64 " nodes", nh);
        GNN_TRY(gnn_dist_agree(d->comm, local)); /* before the collective sampling */
        memcpy(seeds, ps->seeds, (size_t)ps->n_seeds * sizeof *seeds);
        gnn_loader_shuffle(seeds, ps->n_seeds, ps->seed, 0);
    }
    GNN_CHECK(halo && named, GNN_ENOMEM, "feature cache: counts of %" PRId64 " nodes", nh);
    for (gnn_eid_t e = 0; e < d->full.nnz; e++)
        if (d->full.indices[e] >= d->n_local) named[d->full.indices[e] - d->n_local]++;
    if (ps) GNN_TRY(presample(d, ps, seeds, halo, &out));
    int64_t nc = nh + out.size;
    rank = gnn_malloc_array(3 * (size_t)nc + 3, sizeof *rank);
    GNN_CHECK(rank, GNN_ENOMEM, "feature cache: ranking %" PRId64 " nodes", nc);
    for (int64_t i = 0; i < nh; i++) {
        rank[3 * i] = halo[i];
        rank[3 * i + 1] = named[i];
        rank[3 * i + 2] = d->n_local + i;
    }
    int64_t at = nh;
    for (uint64_t i = 0; out.key && i <= out.mask; i++)
        if (out.key[i] >= 0) {
            rank[3 * at] = out.count[i];
            rank[3 * at + 1] = 0;
            rank[3 * at + 2] = out.key[i];
            at++;
        }
    qsort(rank, (size_t)nc, 3 * sizeof *rank, cmp_rank);
    *n = cap < nc ? cap : nc;
    for (int64_t i = 0; i < *n; i++) ids[i] = rank[3 * i + 2];
fail:
    counts_free(&out);
    gnn_free(seeds);
    gnn_free(halo);
    gnn_free(named);
    gnn_free(rank);
    return rc;
}
