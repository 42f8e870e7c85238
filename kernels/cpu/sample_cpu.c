/*
 * Device sampling on the CPU backend (gnn_be_sample, kernels/backend.h):
 * the steps of the CUDA implementation run as loops, over the same
 * per-element functions (kernels/sample_steps.h), so that cpu-as-gpu tests
 * the step decomposition against the host sampler; the buffers of a batch
 * are the backend's own (gnn_be_alloc), its scratch plain host memory.
 *
 * A hop over the node list nodes[0, n_nodes) (the destinations):
 *   1. cnt[i] = the draws of row nodes[i] (less a batch's excluded
 *      edges: kernels/sample_steps.h); indptr = their prefix sum;
 *   2. the draws, row by row, into gids (global ids, draw order);
 *   3. first[u] = the first entry e drawing u, for every u not yet in the
 *      node list (loc[u] < 0): the CUDA side takes an atomic minimum;
 *   4. flag[e] = entry e is the first of a new node; pos = prefix sum;
 *   5. new node u of entry e gets id n_nodes + pos[e] (loc[u], nodes[]);
 *   6. every entry's local id loc[gids[e]], each row then sorted.
 * Typed draws count and draw per relation run of a row (the relations in
 * rel), and sort each row by (local id, relation) as one key.
 * Local ids thus follow first appearance in (row, draw) order, as the
 * host sampler's sequential pass hands them out. loc (one int32 a node,
 * -1 where unset) and first are kept between batches and reset after each.
 *
 * Sampling once, the hop's first rows are the destinations of the hop
 * before, whose draws it keeps: their part of indptr and indices is a
 * copy of that block's (every source in it has its id already), and the
 * steps run over the new rows only, their entries numbered from 0 (gids,
 * pos; rptr their offsets), then placed after the kept ones.
 */
#include "kernels/backend_impl.h"
#include "kernels/sample_steps.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT64_MAX

typedef struct {
    int32_t *loc;    /* per graph node: local id in the batch, -1 */
    uint64_t *first; /* per graph node: first entry of a hop drawing it, NONE */
    int64_t *cnt, *rptr, *gids, *pos;
    size_t cnt_cap, rptr_cap, gids_cap, pos_cap;
    int32_t *rel; /* typed draws: each draw's relation */
    size_t rel_cap;
} cpu_sampler_t;

/* loc and first over n nodes, unset (the old ones kept on failure). */
static int node_arrays(cpu_sampler_t *c, int64_t n)
{
    int32_t *loc = gnn_malloc_array((size_t)n + 1, sizeof *loc);
    uint64_t *first = gnn_malloc_array((size_t)n + 1, sizeof *first);
    if (!loc || !first) {
        gnn_free(loc);
        gnn_free(first);
        return GNN_FAIL(GNN_ENOMEM, "device sampler: arrays over %" PRId64 " nodes", n);
    }
    for (int64_t v = 0; v < n; v++) {
        loc[v] = -1;
        first[v] = NONE;
    }
    gnn_free(c->loc);
    gnn_free(c->first);
    c->loc = loc;
    c->first = first;
    return 0;
}

int gnn__cpu_sampler_prepare(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)be;
    cpu_sampler_t *c = gnn_calloc(1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "device sampler");
    int rc = node_arrays(c, s->ids_cap);
    if (rc < 0) {
        gnn_free(c);
        return rc;
    }
    s->impl = c;
    return 0;
}

int gnn__cpu_sampler_resize(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)be;
    return node_arrays(s->impl, s->ids_cap);
}

void gnn__cpu_sampler_release(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)be;
    cpu_sampler_t *c = s->impl;
    if (!c) return;
    gnn_free(c->loc);
    gnn_free(c->first);
    gnn_free(c->cnt);
    gnn_free(c->rptr);
    gnn_free(c->gids);
    gnn_free(c->pos);
    gnn_free(c->rel);
    gnn_free(c);
    s->impl = NULL;
}

int gnn__cpu_sample(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                    uint64_t key, const gnn_bexcl_t *x, gnn_bbatch_t *b)
{
    int rc = 0;
    cpu_sampler_t *c = s->impl;
    const gnn_csr_t *g = s->graph;
    const int sorted = (g->flags & GNN_CSR_SORTED) != 0;
    const int32_t *et = s->etype;
    const int64_t xm = x ? x->m : 0, *xr = x ? x->rows : NULL, *xo = x ? x->start : NULL,
                  *xsrc = x ? x->src : NULL;
    int64_t n_nodes = 0; /* in the node list, with loc set */
    gnn_bremote_t rm = {0}; /* a hop's rows held elsewhere */
    GNN_TRY(gnn__be_batch_grow(be, (void **)&b->nodes, &b->cap_nodes, (size_t)n, sizeof(int64_t),
                               0));
    memcpy(b->nodes, seeds, (size_t)n * sizeof *seeds);
    for (int64_t i = 0; i < n; i++) c->loc[seeds[i]] = (int32_t)i;
    n_nodes = n;
    for (int h = 0; h < s->layers; h++) {
        const int l = s->layers - 1 - h;
        const int64_t n_dst = n_nodes;
        const int64_t kept = s->once && h > 0 ? b->n_dst[l + 1] : 0;
        const int64_t nnz_kept = kept > 0 ? b->nnz[l + 1] : 0, n_new = n_dst - kept;
        const int fanout = s->fanout[h];
        /* 0. rows held elsewhere: drawn by their holders (the hook) */
        gnn__be_remote_done(&rm);
        if (s->remote.draw)
            GNN_TRY(gnn__be_remote_hop(s, h, key, x, b->nodes + kept, n_new, &rm));
        const int64_t *ridx = rm.idx;
        /* 1. the new rows' counts and their prefix sum; indptr */
        GNN_TRY(gnn_grow((void **)&c->cnt, &c->cnt_cap, (size_t)n_new + 1, sizeof(int64_t)));
        GNN_TRY(gnn_grow((void **)&c->rptr, &c->rptr_cap, (size_t)n_new + 1, sizeof(int64_t)));
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->indptr[l], &b->cap_indptr[l],
                                   (size_t)n_dst + 1, sizeof(int64_t), 0));
        int64_t *indptr = b->indptr[l], *nodes = b->nodes, *rptr = c->rptr;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n_new; i++) {
            if (ridx && ridx[i] >= 0) {
                c->cnt[i] = rm.off[ridx[i] + 1] - rm.off[ridx[i]];
                continue;
            }
            const int64_t *xs;
            const int64_t nx = gnn__ds_excl_row(xr, xo, xsrc, xm, nodes[kept + i], &xs);
            c->cnt[i] = et ? gnn__ds_count_typed(g->indptr, g->indices, et, nodes[kept + i],
                                                 fanout, xs, nx)
                           : gnn__ds_count_excl(g->indptr, g->indices, sorted, nodes[kept + i],
                                                fanout, xs, nx);
        }
        rptr[0] = 0;
        for (int64_t i = 0; i < n_new; i++) rptr[i + 1] = rptr[i] + c->cnt[i];
        const int64_t nnz_new = rptr[n_new], nnz = nnz_kept + nnz_new;
        if (kept > 0) memcpy(indptr, b->indptr[l + 1], (size_t)kept * sizeof *indptr);
        for (int64_t i = 0; i <= n_new; i++) indptr[kept + i] = nnz_kept + rptr[i];
        /* 2. the draws */
        GNN_TRY(gnn_grow((void **)&c->gids, &c->gids_cap, (size_t)nnz_new + 1, sizeof(int64_t)));
        GNN_TRY(gnn_grow((void **)&c->pos, &c->pos_cap, (size_t)nnz_new + 1, sizeof(int64_t)));
        if (et) {
            GNN_TRY(gnn_grow((void **)&c->rel, &c->rel_cap, (size_t)nnz_new + 1,
                             sizeof(int32_t)));
            GNN_TRY(gnn__be_batch_grow(be, (void **)&b->etype[l], &b->cap_etype[l],
                                       (size_t)nnz + 1, sizeof(int32_t), 0));
        }
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->indices[l], &b->cap_indices[l],
                                   (size_t)nnz + 1, sizeof(int64_t), 0));
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->nodes, &b->cap_nodes,
                                   (size_t)(n_nodes + nnz_new), sizeof(int64_t), 1));
        nodes = b->nodes;
        int64_t *gids = c->gids, *pos = c->pos, *ind = b->indices[l] + nnz_kept;
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < n_new; i++) {
            if (ridx && ridx[i] >= 0) { /* the holder's draws, as they came */
                const int64_t a = rm.off[ridx[i]], k = rm.off[ridx[i] + 1] - a;
                memcpy(gids + rptr[i], rm.src + a, (size_t)k * sizeof *gids);
                if (et) memcpy(c->rel + rptr[i], rm.rel + a, (size_t)k * sizeof *c->rel);
                continue;
            }
            const int64_t *xs;
            const int64_t nx = gnn__ds_excl_row(xr, xo, xsrc, xm, nodes[kept + i], &xs);
            if (et)
                gnn__ds_draw_typed(g->indptr, g->indices, et, s->key_ids, nodes[kept + i],
                                   fanout, key, h, xs, nx, gids + rptr[i], c->rel + rptr[i]);
            else
                gnn__ds_draw_excl(g->indptr, g->indices, s->key_ids, nodes[kept + i],
                                  rptr[i + 1] - rptr[i], key, h, sorted, xs, nx, gids + rptr[i]);
        }
        /* 3. the first entry of each new source (an atomic minimum on a GPU) */
        for (int64_t e = 0; e < nnz_new; e++) {
            const int64_t u = gids[e];
            if (c->loc[u] < 0 && c->first[u] > (uint64_t)e) c->first[u] = (uint64_t)e;
        }
        /* 4. flags and their prefix sum */
        pos[0] = 0;
        for (int64_t e = 0; e < nnz_new; e++) {
            const int64_t u = gids[e];
            pos[e + 1] = pos[e] + (c->loc[u] < 0 && c->first[u] == (uint64_t)e);
        }
        const int64_t fresh = pos[nnz_new];
        /* 5. the new ids */
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < nnz_new; e++)
            if (pos[e + 1] != pos[e]) {
                const int64_t u = gids[e], id = n_nodes + pos[e];
                c->loc[u] = (int32_t)id;
                nodes[id] = u;
                c->first[u] = NONE;
            }
        /* 6. local ids, rows sorted; the kept rows' block copied */
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < n_new; i++) {
            int64_t *o = ind + rptr[i], k = rptr[i + 1] - rptr[i];
            if (!et) {
                for (int64_t q = 0; q < k; q++) o[q] = c->loc[gids[rptr[i] + q]];
                gnn_draw_sort_ids(o, k);
                continue;
            }
            /* typed: sorted by (local id, relation), as one key */
            int32_t *r = b->etype[l] + nnz_kept + rptr[i];
            for (int64_t q = 0; q < k; q++)
                o[q] = gnn__ds_typed_key(c->loc[gids[rptr[i] + q]], c->rel[rptr[i] + q]);
            gnn_draw_sort_ids(o, k);
            for (int64_t q = 0; q < k; q++) gnn__ds_typed_split(o[q], &o[q], &r[q]);
        }
        if (nnz_kept > 0) {
            memcpy(b->indices[l], b->indices[l + 1], (size_t)nnz_kept * sizeof(int64_t));
            if (et) memcpy(b->etype[l], b->etype[l + 1], (size_t)nnz_kept * sizeof(int32_t));
        }
        b->n_dst[l] = n_dst;
        b->n_src[l] = n_nodes + fresh;
        b->nnz[l] = nnz;
        n_nodes += fresh;
    }
    b->n_input = n_nodes;
fail:
    /* loc back to unset for the next batch, on failure too (only an
     * allocation fails, before a hop's steps 3 to 5, which leave first
     * unset again). */
    for (int64_t i = 0; i < n_nodes; i++) c->loc[b->nodes[i]] = -1;
    gnn__be_remote_done(&rm);
    return rc;
}
