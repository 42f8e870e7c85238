/*
 * Relabelling and per-part local graphs (halo.h).
 *
 * The relabelling is a counting sort of the nodes by part (stable, so old
 * order survives within a part). A part's local graph is a breadth-first
 * search over in-edges from its owned nodes, one hop at a time: the
 * sources of the previous hop's nodes that are neither owned nor already
 * found are appended and then sorted by new id, so hop h occupies one
 * ascending run of local ids. The caller's marker array, indexed by new
 * id, holds each halo node's local id (-1: not local); only the entries of
 * the part's halo are touched, and they are reset before returning, so the
 * array serves every part. The rows (owned, then halo of hops 1 .. H-1)
 * are filled in a second pass, every source mapped to its local id by
 * subtraction (owned) or through the marker (halo), and then sorted by
 * local id, weights following.
 */
#include "partition/halo.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void gnn_part_map_free(gnn_part_map_t *m)
{
    if (!m) return;
    gnn_free(m->start);
    gnn_free(m->new_of_old);
    gnn_free(m->old_of_new);
    memset(m, 0, sizeof *m);
}

int gnn_part_relabel(const int32_t *part, gnn_vid_t n, int k, gnn_part_map_t *m)
{
    int rc = 0;
    memset(m, 0, sizeof *m);
    GNN_CHECK(k >= 1 && n >= 0 && (part || n == 0), GNN_EINVAL,
              "relabel: %d parts, %" GNN_PRIvid " nodes", k, n);
    m->num_parts = k;
    m->num_nodes = n;
    m->start = gnn_calloc((size_t)k + 1, sizeof *m->start);
    m->new_of_old = gnn_malloc_array((size_t)n + 1, sizeof *m->new_of_old);
    m->old_of_new = gnn_malloc_array((size_t)n + 1, sizeof *m->old_of_new);
    GNN_CHECK(m->start && m->new_of_old && m->old_of_new, GNN_ENOMEM, "relabel");
    for (gnn_vid_t v = 0; v < n; v++) {
        GNN_CHECK(part[v] >= 0 && part[v] < k, GNN_EINVAL,
                  "relabel: node %" GNN_PRIvid " is in part %d of %d", v, part[v], k);
        m->start[part[v] + 1]++;
    }
    for (int p = 0; p < k; p++) m->start[p + 1] += m->start[p];
    gnn_vid_t *next = gnn_malloc_array((size_t)k, sizeof *next);
    GNN_CHECK(next, GNN_ENOMEM, "relabel");
    memcpy(next, m->start, (size_t)k * sizeof *next);
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_vid_t x = next[part[v]]++;
        m->new_of_old[v] = x;
        m->old_of_new[x] = v;
    }
    gnn_free(next);
    return 0;
fail:
    gnn_part_map_free(m);
    return rc;
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

void gnn_part_local_free(gnn_part_local_t *l)
{
    if (!l) return;
    gnn_csr_free(&l->csr);
    gnn_free(l->hop_start);
    gnn_free(l->local_to_global);
    memset(l, 0, sizeof *l);
}

/* Append new id x to l's local ids, growing the array (capacity *cap). */
static int push_local(gnn_part_local_t *l, gnn_vid_t *cap, gnn_vid_t x)
{
    if (l->n_local == *cap) {
        gnn_vid_t c = 2 * *cap + 16;
        gnn_vid_t *a = gnn_realloc_array(l->local_to_global, (size_t)c, sizeof *a);
        if (!a) return GNN_FAIL(GNN_ENOMEM, "part %d halo", l->part);
        l->local_to_global = a;
        *cap = c;
    }
    l->local_to_global[l->n_local++] = x;
    return 0;
}

int gnn_part_local_build(const gnn_csr_t *g, const gnn_part_map_t *m, int p, int hops,
                         gnn_vid_t *mark, gnn_part_local_t *out)
{
    int rc = 0;
    gnn_vid_t *own_mark = NULL;
    gnn_part_local_t l = {0};
    memset(out, 0, sizeof *out);
    GNN_CHECK(g && m && g->n_rows == g->n_cols && g->n_rows == m->num_nodes, GNN_EINVAL,
              "part graph: the graph does not match the relabelling");
    GNN_CHECK(p >= 0 && p < m->num_parts, GNN_EINVAL, "part graph: part %d of %d", p,
              m->num_parts);
    GNN_CHECK(hops >= 1, GNN_EINVAL, "part graph: %d hops of halo (at least 1)", hops);
    if (!mark) {
        own_mark = gnn_malloc_array((size_t)m->num_nodes + 1, sizeof *own_mark);
        GNN_CHECK(own_mark, GNN_ENOMEM, "part %d halo", p);
        for (gnn_vid_t x = 0; x < m->num_nodes; x++) own_mark[x] = -1;
        mark = own_mark;
    }
    gnn_vid_t lo = m->start[p], hi = m->start[p + 1], no = hi - lo;
    l.part = p;
    l.hops = hops;
    l.n_owned = no;
    l.hop_start = gnn_malloc_array((size_t)hops + 1, sizeof *l.hop_start);
    GNN_CHECK(l.hop_start, GNN_ENOMEM, "part %d halo", p);
    gnn_vid_t cap = no;
    l.local_to_global = gnn_malloc_array((size_t)cap + 1, sizeof *l.local_to_global);
    GNN_CHECK(l.local_to_global, GNN_ENOMEM, "part %d ids", p);
    for (gnn_vid_t i = 0; i < no; i++) l.local_to_global[i] = lo + i;
    l.n_local = no;

    /* Hop h: the sources of hop h-1 (local ids [a, b)) not yet local. */
    l.hop_start[0] = no;
    gnn_vid_t a = 0, b = no;
    for (int h = 1; h <= hops; h++) {
        for (gnn_vid_t r = a; r < b; r++) {
            gnn_vid_t v = m->old_of_new[l.local_to_global[r]];
            for (gnn_eid_t s = g->indptr[v]; s < g->indptr[v + 1]; s++) {
                gnn_vid_t x = m->new_of_old[g->indices[s]];
                if ((x >= lo && x < hi) || mark[x] >= 0) continue;
                GNN_TRY(push_local(&l, &cap, x));
                mark[x] = l.n_local - 1; /* found; renumbered after the sort */
            }
        }
        qsort(l.local_to_global + b, (size_t)(l.n_local - b), sizeof *l.local_to_global, cmp_vid);
        for (gnn_vid_t r = b; r < l.n_local; r++) mark[l.local_to_global[r]] = r;
        l.hop_start[h] = l.n_local;
        a = b;
        b = l.n_local;
    }
    l.n_rows = l.hop_start[hops - 1];

    /* The rows: every in-edge of the owned nodes and of hops 1 .. H-1. */
    gnn_eid_t nnz = 0;
    for (gnn_vid_t r = 0; r < l.n_rows; r++) {
        gnn_vid_t v = m->old_of_new[l.local_to_global[r]];
        nnz += g->indptr[v + 1] - g->indptr[v];
    }
    l.csr.n_rows = l.n_rows;
    l.csr.n_cols = l.n_local;
    l.csr.nnz = nnz;
    l.csr.indptr = gnn_malloc_array((size_t)l.n_rows + 1, sizeof *l.csr.indptr);
    l.csr.indices = gnn_malloc_array((size_t)nnz + 1, sizeof *l.csr.indices);
    GNN_CHECK(l.csr.indptr && l.csr.indices, GNN_ENOMEM, "part %d graph", p);
    if (g->weights) {
        l.csr.weights = gnn_malloc_array((size_t)nnz + 1, sizeof *l.csr.weights);
        GNN_CHECK(l.csr.weights, GNN_ENOMEM, "part %d graph", p);
    }
    gnn_eid_t e = 0;
    l.csr.indptr[0] = 0;
    for (gnn_vid_t r = 0; r < l.n_rows; r++) {
        gnn_vid_t v = m->old_of_new[l.local_to_global[r]];
        for (gnn_eid_t s = g->indptr[v]; s < g->indptr[v + 1]; s++) {
            gnn_vid_t x = m->new_of_old[g->indices[s]];
            l.csr.indices[e] = x >= lo && x < hi ? x - lo : mark[x];
            if (g->weights) l.csr.weights[e] = g->weights[s];
            e++;
        }
        l.csr.indptr[r + 1] = e;
    }
    l.csr.flags = g->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    GNN_TRY(gnn_csr_sort_rows(&l.csr));
    for (gnn_vid_t r = no; r < l.n_local; r++) mark[l.local_to_global[r]] = -1;
    gnn_free(own_mark);
    *out = l;
    return 0;
fail:
    if (mark && l.local_to_global)
        for (gnn_vid_t r = l.n_owned; r < l.n_local; r++) mark[l.local_to_global[r]] = -1;
    gnn_free(own_mark);
    gnn_part_local_free(&l);
    return rc;
}
