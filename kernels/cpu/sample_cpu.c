/*
 * Device sampling on the CPU backend (gnn_be_sample, kernels/backend.h):
 * the steps of the CUDA implementation run as loops, over the same
 * per-element functions (kernels/sample_steps.h), so that cpu-as-gpu tests
 * the step decomposition against the host sampler; the buffers of a batch
 * are the backend's own (gnn_be_alloc), its scratch plain host memory.
 *
 * A hop over the node list nodes[0, n_nodes) (the destinations):
 *   1. cnt[i] = the draws of row nodes[i]; indptr = their prefix sum;
 *   2. the draws, row by row, into gids (global ids, draw order);
 *   3. first[u] = the first entry e drawing u, for every u not yet in the
 *      node list (loc[u] < 0): the CUDA side takes an atomic minimum;
 *   4. flag[e] = entry e is the first of a new node; pos = prefix sum;
 *   5. new node u of entry e gets id n_nodes + pos[e] (loc[u], nodes[]);
 *   6. every entry's local id loc[gids[e]], each row then sorted.
 * Local ids thus follow first appearance in (row, draw) order, as the
 * host sampler's sequential pass hands them out. loc (one int32 a node,
 * -1 where unset) and first are kept between batches and reset after each.
 */
#include "kernels/backend_impl.h"
#include "kernels/sample_steps.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(GNN__DS_MAX_HOPS == GNN_BE_SAMPLE_MAX_LAYERS, "the hop table holds every hop");

#define NONE UINT64_MAX

typedef struct {
    int32_t *loc;    /* per graph node: local id in the batch, -1 */
    uint64_t *first; /* per graph node: first entry of a hop drawing it, NONE */
    int64_t *cnt, *gids, *pos;
    size_t cnt_cap, gids_cap, pos_cap;
} cpu_sampler_t;

int gnn__cpu_sampler_prepare(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)be;
    int64_t n = s->graph->n_rows;
    cpu_sampler_t *c = gnn_calloc(1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "device sampler");
    c->loc = gnn_malloc_array((size_t)n + 1, sizeof *c->loc);
    c->first = gnn_malloc_array((size_t)n + 1, sizeof *c->first);
    if (!c->loc || !c->first) {
        gnn_free(c->loc);
        gnn_free(c->first);
        gnn_free(c);
        return GNN_FAIL(GNN_ENOMEM, "device sampler: arrays over %" PRId64 " nodes", n);
    }
    for (int64_t v = 0; v < n; v++) {
        c->loc[v] = -1;
        c->first[v] = NONE;
    }
    s->impl = c;
    return 0;
}

void gnn__cpu_sampler_release(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)be;
    cpu_sampler_t *c = s->impl;
    if (!c) return;
    gnn_free(c->loc);
    gnn_free(c->first);
    gnn_free(c->cnt);
    gnn_free(c->gids);
    gnn_free(c->pos);
    gnn_free(c);
    s->impl = NULL;
}

int gnn__cpu_sample(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                    uint64_t key, gnn_bbatch_t *b)
{
    int rc = 0;
    cpu_sampler_t *c = s->impl;
    const gnn_csr_t *g = s->graph;
    int64_t n_nodes = 0; /* in the node list, with loc set */
    GNN_TRY(gnn__be_batch_grow(be, (void **)&b->nodes, &b->cap_nodes, (size_t)n, sizeof(int64_t),
                               0));
    memcpy(b->nodes, seeds, (size_t)n * sizeof *seeds);
    for (int64_t i = 0; i < n; i++) c->loc[seeds[i]] = (int32_t)i;
    n_nodes = n;
    int64_t dst_at[GNN__DS_MAX_HOPS];
    for (int h = 0; h < s->layers; h++) {
        const int l = s->layers - 1 - h;
        const int64_t n_dst = n_nodes;
        int64_t nnz;
        gnn__ds_hops_t rh;
        dst_at[h] = n_dst;
        gnn__ds_hops_at(&rh, s->once, h, s->fanout, dst_at);
        /* 1. counts and their prefix sum */
        GNN_TRY(gnn_grow((void **)&c->cnt, &c->cnt_cap, (size_t)n_dst + 1, sizeof(int64_t)));
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->indptr[l], &b->cap_indptr[l],
                                   (size_t)n_dst + 1, sizeof(int64_t), 0));
        int64_t *indptr = b->indptr[l], *nodes = b->nodes;
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n_dst; i++)
            c->cnt[i] = gnn__ds_count(g->indptr, nodes[i], rh.fanout[gnn__ds_row_hop(&rh, i)]);
        indptr[0] = 0;
        for (int64_t i = 0; i < n_dst; i++) indptr[i + 1] = indptr[i] + c->cnt[i];
        nnz = indptr[n_dst];
        /* 2. the draws */
        GNN_TRY(gnn_grow((void **)&c->gids, &c->gids_cap, (size_t)nnz + 1, sizeof(int64_t)));
        GNN_TRY(gnn_grow((void **)&c->pos, &c->pos_cap, (size_t)nnz + 1, sizeof(int64_t)));
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->indices[l], &b->cap_indices[l],
                                   (size_t)nnz + 1, sizeof(int64_t), 0));
        GNN_TRY(gnn__be_batch_grow(be, (void **)&b->nodes, &b->cap_nodes,
                                   (size_t)(n_nodes + nnz), sizeof(int64_t), 1));
        nodes = b->nodes;
        int64_t *gids = c->gids, *pos = c->pos, *ind = b->indices[l];
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < n_dst; i++)
            gnn__ds_draw(g->indptr, g->indices, nodes[i], indptr[i + 1] - indptr[i], key,
                         rh.hop[gnn__ds_row_hop(&rh, i)], gids + indptr[i]);
        /* 3. the first entry of each new source (an atomic minimum on a GPU) */
        for (int64_t e = 0; e < nnz; e++) {
            const int64_t u = gids[e];
            if (c->loc[u] < 0 && c->first[u] > (uint64_t)e) c->first[u] = (uint64_t)e;
        }
        /* 4. flags and their prefix sum */
        pos[0] = 0;
        for (int64_t e = 0; e < nnz; e++) {
            const int64_t u = gids[e];
            pos[e + 1] = pos[e] + (c->loc[u] < 0 && c->first[u] == (uint64_t)e);
        }
        const int64_t fresh = pos[nnz];
        /* 5. the new ids */
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < nnz; e++)
            if (pos[e + 1] != pos[e]) {
                const int64_t u = gids[e], id = n_nodes + pos[e];
                c->loc[u] = (int32_t)id;
                nodes[id] = u;
                c->first[u] = NONE;
            }
        /* 6. local ids, rows sorted */
#pragma omp parallel for schedule(dynamic, 64)
        for (int64_t i = 0; i < n_dst; i++) {
            int64_t *o = ind + indptr[i], k = indptr[i + 1] - indptr[i];
            for (int64_t q = 0; q < k; q++) o[q] = c->loc[gids[indptr[i] + q]];
            gnn_draw_sort_ids(o, k);
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
    return rc;
}
