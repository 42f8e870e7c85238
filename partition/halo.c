/*
 * Relabelling and per-part local graphs (halo.h).
 *
 * The relabelling is a counting sort of the nodes by part (stable, so old
 * order survives within a part). A part's local graph takes its owned rows
 * from g in new-id order, collects the sources owned elsewhere, sorts and
 * deduplicates them into the halo list, and maps every source to its local
 * id: in-range sources by subtraction, halo sources by binary search.
 * Rows are then sorted by local id, weights following.
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

void gnn_part_local_free(gnn_part_local_t *l)
{
    if (!l) return;
    gnn_csr_free(&l->csr);
    gnn_free(l->local_to_global);
    memset(l, 0, sizeof *l);
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* Index of x in the sorted a[0..n) (present). */
static gnn_vid_t find(const gnn_vid_t *a, gnn_vid_t n, gnn_vid_t x)
{
    gnn_vid_t lo = 0, hi = n;
    while (hi - lo > 1) {
        gnn_vid_t mid = lo + (hi - lo) / 2;
        if (a[mid] <= x)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int gnn_part_local_build(const gnn_csr_t *g, const gnn_part_map_t *m, int p, gnn_part_local_t *out)
{
    int rc = 0;
    gnn_vid_t *halo = NULL;
    gnn_part_local_t l = {0};
    memset(out, 0, sizeof *out);
    GNN_CHECK(g && m && g->n_rows == g->n_cols && g->n_rows == m->num_nodes, GNN_EINVAL,
              "part graph: the graph does not match the relabelling");
    GNN_CHECK(p >= 0 && p < m->num_parts, GNN_EINVAL, "part graph: part %d of %d", p,
              m->num_parts);
    gnn_vid_t lo = m->start[p], hi = m->start[p + 1], no = hi - lo;
    l.part = p;
    l.n_owned = no;
    gnn_eid_t nnz = 0;
    for (gnn_vid_t i = 0; i < no; i++) {
        gnn_vid_t v = m->old_of_new[lo + i];
        nnz += g->indptr[v + 1] - g->indptr[v];
    }
    l.csr.n_rows = no;
    l.csr.nnz = nnz;
    l.csr.indptr = gnn_malloc_array((size_t)no + 1, sizeof *l.csr.indptr);
    l.csr.indices = gnn_malloc_array((size_t)nnz + 1, sizeof *l.csr.indices);
    GNN_CHECK(l.csr.indptr && l.csr.indices, GNN_ENOMEM, "part %d graph", p);
    if (g->weights) {
        l.csr.weights = gnn_malloc_array((size_t)nnz + 1, sizeof *l.csr.weights);
        GNN_CHECK(l.csr.weights, GNN_ENOMEM, "part %d graph", p);
    }
    /* Owned rows in new-id order, sources as new ids; halo candidates. */
    gnn_eid_t e = 0, nh = 0;
    l.csr.indptr[0] = 0;
    for (gnn_vid_t i = 0; i < no; i++) {
        gnn_vid_t v = m->old_of_new[lo + i];
        for (gnn_eid_t s = g->indptr[v]; s < g->indptr[v + 1]; s++) {
            gnn_vid_t u = m->new_of_old[g->indices[s]];
            l.csr.indices[e] = u;
            if (g->weights) l.csr.weights[e] = g->weights[s];
            nh += u < lo || u >= hi;
            e++;
        }
        l.csr.indptr[i + 1] = e;
    }
    halo = gnn_malloc_array((size_t)nh + 1, sizeof *halo);
    GNN_CHECK(halo, GNN_ENOMEM, "part %d halo", p);
    nh = 0;
    for (gnn_eid_t s = 0; s < nnz; s++) {
        gnn_vid_t u = l.csr.indices[s];
        if (u < lo || u >= hi) halo[nh++] = u;
    }
    qsort(halo, (size_t)nh, sizeof *halo, cmp_vid);
    gnn_eid_t nu = 0;
    for (gnn_eid_t s = 0; s < nh; s++)
        if (nu == 0 || halo[nu - 1] != halo[s]) halo[nu++] = halo[s];
    l.n_local = no + nu;
    l.csr.n_cols = l.n_local;
    l.local_to_global = gnn_malloc_array((size_t)l.n_local + 1, sizeof *l.local_to_global);
    GNN_CHECK(l.local_to_global, GNN_ENOMEM, "part %d ids", p);
    for (gnn_vid_t i = 0; i < no; i++) l.local_to_global[i] = lo + i;
    memcpy(l.local_to_global + no, halo, (size_t)nu * sizeof *halo);
    for (gnn_eid_t s = 0; s < nnz; s++) {
        gnn_vid_t u = l.csr.indices[s];
        l.csr.indices[s] = u >= lo && u < hi ? u - lo : no + find(halo, nu, u);
    }
    l.csr.flags = g->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    GNN_TRY(gnn_csr_sort_rows(&l.csr));
    gnn_free(halo);
    *out = l;
    return 0;
fail:
    gnn_free(halo);
    gnn_part_local_free(&l);
    return rc;
}
