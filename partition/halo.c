/*
 * Relabelling and per-part local graphs (halo.h).
 *
 * The relabelling is a counting sort of the nodes by part (stable, so old
 * order survives within a part): a node's new id is its part's start plus
 * its position in the part, 4 bytes per node. A part's local graph is a
 * breadth-first search over in-edges from its owned nodes, one hop at a
 * time: the sources of the previous hop's nodes that are neither owned nor
 * already found are appended and then sorted by new id, so hop h occupies
 * one ascending run of local ids (a radix sort of the hop's new ids, old
 * ids following). Each halo node's local id is held by old id, in the
 * caller's marker array when there is one (a graph in memory), otherwise
 * in an id map sized to the halo (graph/idmap.h), so that the build needs
 * nothing proportional to the graph. The rows (owned, then halo of hops
 * 1 .. H-1) are filled in a second pass, every source mapped to its local
 * id by its position in the part (owned) or through the map (halo), and
 * then sorted by local id, weights following.
 */
#include "partition/halo.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/idmap.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void gnn_part_map_free(gnn_part_map_t *m)
{
    if (!m) return;
    gnn_free(m->start);
    gnn_free(m->rank);
    gnn_free(m->old_of_new);
    memset(m, 0, sizeof *m);
}

int gnn_part_relabel(const int32_t *part, gnn_vid_t n, int k, int with_old, gnn_part_map_t *m)
{
    int rc = 0;
    memset(m, 0, sizeof *m);
    GNN_CHECK(k >= 1 && n >= 0 && (part || n == 0), GNN_EINVAL,
              "relabel: %d parts, %" GNN_PRIvid " nodes", k, n);
    m->num_parts = k;
    m->num_nodes = n;
    m->part = part;
    m->start = gnn_calloc((size_t)k + 1, sizeof *m->start);
    m->rank = gnn_alloc_large(((size_t)n + 1) * sizeof *m->rank);
    GNN_CHECK(m->start && m->rank, GNN_ENOMEM, "relabel");
    if (with_old) {
        m->old_of_new = gnn_alloc_large(((size_t)n + 1) * sizeof *m->old_of_new);
        GNN_CHECK(m->old_of_new, GNN_ENOMEM, "relabel");
    }
    for (gnn_vid_t v = 0; v < n; v++) {
        GNN_CHECK(part[v] >= 0 && part[v] < k, GNN_EINVAL,
                  "relabel: node %" GNN_PRIvid " is in part %d of %d", v, part[v], k);
        m->start[part[v] + 1]++;
    }
    for (int p = 0; p < k; p++) {
        GNN_CHECK(m->start[p + 1] <= (gnn_vid_t)UINT32_MAX, GNN_ERANGE,
                  "relabel: part %d has %" GNN_PRIvid " nodes, at most 2^32 - 1", p,
                  m->start[p + 1]);
        m->start[p + 1] += m->start[p];
    }
    uint32_t *next = gnn_calloc((size_t)k, sizeof *next);
    GNN_CHECK(next, GNN_ENOMEM, "relabel");
    for (gnn_vid_t v = 0; v < n; v++) {
        uint32_t r = next[part[v]]++;
        m->rank[v] = r;
        if (m->old_of_new) m->old_of_new[m->start[part[v]] + r] = v;
    }
    gnn_free(next);
    return 0;
fail:
    gnn_part_map_free(m);
    return rc;
}

void gnn_part_local_free(gnn_part_local_t *l)
{
    if (!l) return;
    gnn_csr_free(&l->csr);
    gnn_free(l->hop_start);
    gnn_free(l->local_to_global);
    gnn_free(l->old_ids);
    memset(l, 0, sizeof *l);
}

/* Append old id v to l's local ids (capacity *cap; local_to_global grows
 * with it, filled when the hop is sorted). */
static int push_local(gnn_part_local_t *l, gnn_vid_t *cap, gnn_vid_t v)
{
    if (l->n_local == *cap) {
        gnn_vid_t c = 2 * *cap + 16;
        gnn_vid_t *a = gnn_realloc_array(l->local_to_global, (size_t)c, sizeof *a);
        if (!a) return GNN_FAIL(GNN_ENOMEM, "part %d halo", l->part);
        l->local_to_global = a;
        gnn_vid_t *b = gnn_realloc_array(l->old_ids, (size_t)c, sizeof *b);
        if (!b) return GNN_FAIL(GNN_ENOMEM, "part %d halo", l->part);
        l->old_ids = b;
        *cap = c;
    }
    l->old_ids[l->n_local++] = v;
    return 0;
}

/*
 * Row [*a, *b) of g for old id v: row v, or the row ids holds v at. The
 * search starts from *hint (the last row found) and widens forward from
 * it when v lies ahead, so rows asked for in ascending order cost little.
 */
static int row_of(const gnn_csr_t *g, const gnn_vid_t *ids, int p, gnn_vid_t v, gnn_vid_t *hint,
                  gnn_eid_t *a, gnn_eid_t *b)
{
    gnn_vid_t r = v;
    if (ids) {
        gnn_vid_t lo = 0, hi = g->n_rows, h = *hint;
        if (h < g->n_rows && ids[h] <= v) {
            gnn_vid_t step = 1;
            lo = h;
            while (h + step < g->n_rows && ids[h + step] <= v) {
                lo = h + step;
                step *= 2;
            }
            hi = h + step < g->n_rows ? h + step + 1 : g->n_rows;
        }
        while (lo < hi) { /* the first row whose id is v or more */
            gnn_vid_t mid = lo + (hi - lo) / 2;
            if (ids[mid] < v)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == g->n_rows || ids[lo] != v)
            return GNN_FAIL(GNN_EINVAL, "part %d graph: the row of node %" GNN_PRIvid
                            " is not held", p, v);
        r = *hint = lo;
    }
    *a = g->indptr[r];
    *b = g->indptr[r + 1];
    return 0;
}

#define RADIX_BITS 11

/* Sort the keys a[0 .. n), all in [0, max], ascending, the values b[]
 * following: least significant digit first, RADIX_BITS a pass, through
 * buffers of n entries. */
static int sort_pairs(gnn_vid_t *a, gnn_vid_t *b, gnn_vid_t n, gnn_vid_t max, int p)
{
    if (n < 2) return 0;
    gnn_vid_t *t = gnn_malloc_array(2 * (size_t)n, sizeof *t);
    if (!t) return GNN_FAIL(GNN_ENOMEM, "part %d halo", p);
    gnn_vid_t *ka = a, *va = b, *kb = t, *vb = t + n;
    const gnn_vid_t digit = (1 << RADIX_BITS) - 1;
    for (int shift = 0; shift < 63 && (max >> shift) > 0; shift += RADIX_BITS) {
        gnn_vid_t count[(1 << RADIX_BITS) + 1] = {0};
        for (gnn_vid_t i = 0; i < n; i++) count[((ka[i] >> shift) & digit) + 1]++;
        for (int d = 0; d < (1 << RADIX_BITS); d++) count[d + 1] += count[d];
        for (gnn_vid_t i = 0; i < n; i++) {
            gnn_vid_t j = count[(ka[i] >> shift) & digit]++;
            kb[j] = ka[i];
            vb[j] = va[i];
        }
        gnn_vid_t *x = ka, *y = va;
        ka = kb;
        va = vb;
        kb = x;
        vb = y;
    }
    if (ka != a) {
        memcpy(a, ka, (size_t)n * sizeof *a);
        memcpy(b, va, (size_t)n * sizeof *b);
    }
    gnn_free(t);
    return 0;
}

/* Each halo node's local id by old id, in the caller's array or in a map
 * sized to the halo; -1 when the node is not local (while its hop is
 * gathered, 0 marks it found). */
typedef struct {
    gnn_vid_t *mark;
    gnn__idmap_t map;
} marks_t;

static inline gnn_vid_t marks_get(const marks_t *k, gnn_vid_t v)
{
    return k->mark ? k->mark[v] : gnn__idmap_get(&k->map, v);
}

static int marks_put(marks_t *k, gnn_vid_t v, gnn_vid_t r, int p)
{
    if (k->mark) {
        k->mark[v] = r;
        return 0;
    }
    gnn__idmap_t *m = &k->map;
    gnn_vid_t *e = gnn__idmap_find(m, v);
    if (e) {
        *e = r;
        return 0;
    }
    if ((!m->slots || 2 * (uint64_t)(m->size + 1) > m->mask + 1) &&
        gnn__idmap_reserve(m, m->size + 16) < 0)
        return GNN_FAIL(GNN_ENOMEM, "part %d halo", p);
    (void)gnn__idmap_get_or_put(m, v, r);
    return 0;
}

/* The caller's array all -1 again, the map freed. */
static void marks_end(marks_t *k, const gnn_part_local_t *l)
{
    if (k->mark && l->old_ids)
        for (gnn_vid_t r = l->n_owned; r < l->n_local; r++) k->mark[l->old_ids[r]] = -1;
    gnn__idmap_free(&k->map);
}

/* Order the local ids [b, l->n_local) by new id and record each one's
 * local id. */
static int sort_hop(gnn_part_local_t *l, gnn_vid_t b, const gnn_part_map_t *m, marks_t *k)
{
    for (gnn_vid_t r = b; r < l->n_local; r++)
        l->local_to_global[r] = gnn_part_new_id(m, l->old_ids[r]);
    int rc = sort_pairs(l->local_to_global + b, l->old_ids + b, l->n_local - b,
                        m->num_nodes > 0 ? m->num_nodes - 1 : 0, l->part);
    for (gnn_vid_t r = b; r < l->n_local && rc == 0; r++)
        rc = marks_put(k, l->old_ids[r], r, l->part);
    return rc;
}

int gnn_part_local_build(const gnn_part_rows_t *rows, const gnn_part_map_t *m, int p,
                         const gnn_vid_t *owned, int hops, gnn_part_local_t *out)
{
    int rc = 0;
    gnn_part_local_t l = {0};
    marks_t k = {.mark = rows ? rows->mark : NULL};
    const gnn_csr_t *g = rows ? rows->g : NULL;
    const gnn_vid_t *ids = rows ? rows->ids : NULL;
    memset(out, 0, sizeof *out);
    GNN_CHECK(g && m && g->n_cols == m->num_nodes && (ids || g->n_rows == g->n_cols),
              GNN_EINVAL, "part graph: the graph does not match the relabelling");
    GNN_CHECK(p >= 0 && p < m->num_parts, GNN_EINVAL, "part graph: part %d of %d", p,
              m->num_parts);
    GNN_CHECK(hops >= 1, GNN_EINVAL, "part graph: %d hops of halo (at least 1)", hops);
    gnn_vid_t lo = m->start[p], hi = m->start[p + 1], no = hi - lo;
    const gnn_vid_t *own = owned ? owned : m->old_of_new ? m->old_of_new + lo : NULL;
    GNN_CHECK(own || no == 0, GNN_EINVAL, "part graph: part %d's nodes are not listed", p);
    l.part = p;
    l.hops = hops;
    l.n_owned = no;
    l.hop_start = gnn_malloc_array((size_t)hops + 1, sizeof *l.hop_start);
    GNN_CHECK(l.hop_start, GNN_ENOMEM, "part %d halo", p);
    gnn_vid_t cap = no;
    l.local_to_global = gnn_malloc_array((size_t)cap + 1, sizeof *l.local_to_global);
    l.old_ids = gnn_malloc_array((size_t)cap + 1, sizeof *l.old_ids);
    GNN_CHECK(l.local_to_global && l.old_ids, GNN_ENOMEM, "part %d ids", p);
    for (gnn_vid_t i = 0; i < no; i++) {
        l.local_to_global[i] = lo + i;
        l.old_ids[i] = own[i];
    }
    l.n_local = no;
    const int32_t *part = m->part;
    gnn_vid_t hint = 0;

    /* Hop h: the sources of hop h-1 (local ids [a, b)) not yet local.
     * The rows read on the way, hops 0 .. H-1, are the local graph's. */
    l.hop_start[0] = no;
    gnn_vid_t a = 0, b = no;
    gnn_eid_t nnz = 0;
    for (int h = 1; h <= hops; h++) {
        for (gnn_vid_t r = a; r < b; r++) {
            gnn_eid_t e0 = 0, e1 = 0;
            GNN_TRY(row_of(g, ids, p, l.old_ids[r], &hint, &e0, &e1));
            nnz += e1 - e0;
            for (gnn_eid_t s = e0; s < e1; s++) {
                gnn_vid_t u = g->indices[s];
                if (part[u] == p || marks_get(&k, u) >= 0) continue;
                GNN_TRY(push_local(&l, &cap, u));
                GNN_TRY(marks_put(&k, u, 0, p));
            }
        }
        GNN_TRY(sort_hop(&l, b, m, &k));
        l.hop_start[h] = l.n_local;
        a = b;
        b = l.n_local;
    }
    l.n_rows = l.hop_start[hops - 1];

    /* The rows: every in-edge of the owned nodes and of hops 1 .. H-1. */
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
        gnn_eid_t e0 = 0, e1 = 0;
        GNN_TRY(row_of(g, ids, p, l.old_ids[r], &hint, &e0, &e1));
        for (gnn_eid_t s = e0; s < e1; s++) {
            gnn_vid_t u = g->indices[s];
            l.csr.indices[e] = part[u] == p ? (gnn_vid_t)m->rank[u] : marks_get(&k, u);
            if (g->weights) l.csr.weights[e] = g->weights[s];
            e++;
        }
        l.csr.indptr[r + 1] = e;
    }
    l.csr.flags = g->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    GNN_TRY(gnn_csr_sort_rows(&l.csr));
    marks_end(&k, &l);
    *out = l;
    return 0;
fail:
    marks_end(&k, &l);
    gnn_part_local_free(&l);
    return rc;
}
