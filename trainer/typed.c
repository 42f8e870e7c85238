/*
 * The relation layout of a layer's graph for R-GCN (trainer/typed.h).
 */
#include "trainer/typed.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <stdlib.h>
#include <string.h>

static void typed_free(void *p)
{
    gnn_typed_graph_t *t = p;
    if (!t) return;
    gnn_be_graph_free(t->vg);
    gnn_csr_free(&t->vcsr);
    gnn_csr_free(&t->shape);
    gnn_be_free(t->be, t->perm);
    gnn_be_free(t->be, t->iperm);
    gnn_free(t);
}

int gnn_typed_graph_attach(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_csr_t *csr,
                           const int32_t *etype, const int64_t *src_gid,
                           const gnn_graph_types_t *types)
{
    int rc = 0;
    gnn_typed_graph_t *t = gnn_calloc(1, sizeof *t);
    int64_t *loc = NULL, *perm = NULL, *iperm = NULL;
    int *ty = NULL;
    GNN_CHECK(t, GNN_ENOMEM, "typed graph");
    t->be = be;
    const int T = types->n_ntypes, R = types->n_rels;
    const int64_t ns = csr->n_cols, nd = csr->n_rows;
    t->n_types = T;
    t->n_rels = R;
    t->n_src = ns;
    t->n_dst = nd;
    int at = 0;
    for (int s = 0; s < T; s++) {
        t->first[s] = at;
        for (int r = 0; r < R; r++)
            if (types->rel_src[r] == s) {
                t->pos[r] = at;
                t->order[at++] = r;
            }
        t->k[s] = at - t->first[s];
    }
    /* Sources by type, stably: loc[j] = j's index among its type's. */
    loc = gnn_malloc_array((size_t)ns + 1, sizeof *loc);
    ty = gnn_malloc_array((size_t)ns + 1, sizeof *ty);
    GNN_CHECK(loc && ty, GNN_ENOMEM, "typed graph of %lld sources", (long long)ns);
    int sorted = 1;
    for (int64_t j = 0; j < ns; j++) {
        ty[j] = gnn_graph_types_of(types, src_gid ? src_gid[j] : j);
        loc[j] = t->cnt[ty[j]]++;
        if (j > 0 && ty[j] < ty[j - 1]) sorted = 0;
    }
    for (int s = 0; s < T; s++) {
        t->start[s] = s ? t->start[s - 1] + t->cnt[s - 1] : 0;
        t->vbase[s] = s ? t->vbase[s - 1] + t->cnt[s - 1] * t->k[s - 1] : 0;
    }
    t->nv = t->vbase[T - 1] + t->cnt[T - 1] * t->k[T - 1];
    if (!sorted) {
        perm = gnn_malloc_array((size_t)ns + 1, sizeof *perm);
        iperm = gnn_malloc_array((size_t)ns + 1, sizeof *iperm);
        GNN_CHECK(perm && iperm, GNN_ENOMEM, "typed graph of %lld sources", (long long)ns);
        for (int64_t j = 0; j < ns; j++) {
            int64_t p = t->start[ty[j]] + loc[j];
            perm[p] = j;
            iperm[j] = p;
        }
        GNN_TRY(gnn_be_alloc(be, ((size_t)ns + 1) * sizeof *perm, (void **)&t->perm));
        GNN_TRY(gnn_be_alloc(be, ((size_t)ns + 1) * sizeof *iperm, (void **)&t->iperm));
        GNN_TRY(gnn_be_upload(be, t->perm, perm, (size_t)ns * sizeof *perm));
        GNN_TRY(gnn_be_upload(be, t->iperm, iperm, (size_t)ns * sizeof *iperm));
        /* a permutation of [0, ns) by construction: the layer's gathers by
         * it skip the device's check (on a GPU a wait inside every step) */
        GNN_TRY(gnn_be_trust_buffer(be, t->perm, ns, ns));
        GNN_TRY(gnn_be_trust_buffer(be, t->iperm, ns, ns));
    }
    /* The virtual graph: each in-edge (u, r) of v becomes virtual source
     * vbase[type u] + loc[u] k + (pos[r] - first[type u]), weight
     * 1 / (v's in-edges of relation r). */
    gnn_csr_t *a = &t->vcsr;
    a->n_rows = nd;
    a->n_cols = t->nv;
    a->nnz = csr->nnz;
    a->indptr = gnn_malloc_array((size_t)nd + 1, sizeof *a->indptr);
    a->indices = gnn_alloc_large(((size_t)csr->nnz + 1) * sizeof *a->indices);
    a->weights = gnn_alloc_large(((size_t)csr->nnz + 1) * sizeof *a->weights);
    GNN_CHECK(a->indptr && a->indices && a->weights, GNN_ENOMEM, "typed graph of %lld edges",
              (long long)csr->nnz);
    memcpy(a->indptr, csr->indptr, ((size_t)nd + 1) * sizeof *a->indptr);
    for (gnn_eid_t e = 0; e < csr->nnz; e++)
        GNN_CHECK(etype[e] >= 0 && etype[e] < R, GNN_EINVAL,
                  "typed graph: edge %lld has relation %d of %d", (long long)e, etype[e], R);
    int bad = 0;
    int64_t bad_e = -1;
#pragma omp parallel reduction(| : bad)
    {
        int32_t deg[GNN_MAX_RELATIONS];
#pragma omp for schedule(dynamic, 1024)
        for (int64_t v = 0; v < nd; v++) {
            gnn_eid_t e0 = csr->indptr[v], e1 = csr->indptr[v + 1];
            memset(deg, 0, (size_t)R * sizeof deg[0]);
            for (gnn_eid_t e = e0; e < e1; e++) deg[etype[e]]++;
            for (gnn_eid_t e = e0; e < e1; e++) {
                int64_t u = csr->indices[e];
                int r = etype[e], s = ty[u];
                if (types->rel_src[r] != s) {
                    bad = 1;
#pragma omp critical
                    if (bad_e < 0 || e < bad_e) bad_e = e;
                    continue;
                }
                a->indices[e] = t->vbase[s] + loc[u] * t->k[s] + (t->pos[r] - t->first[s]);
                a->weights[e] = 1.0f / (float)deg[r];
            }
        }
    }
    GNN_CHECK(!bad, GNN_EINVAL,
              "typed graph: edge %lld has relation '%s', which starts at type '%s', but its "
              "source is of type '%s'",
              (long long)bad_e, types->rel[etype[bad_e]], types->ntype[types->rel_src[etype[bad_e]]],
              types->ntype[ty[csr->indices[bad_e]]]);
    a->flags = 0;
    GNN_TRY(gnn_be_graph_create(be, a, &t->vg));
    gnn_be_graph_attach(g, t, typed_free);
    t = NULL;
fail:
    gnn_free(loc);
    gnn_free(ty);
    gnn_free(perm);
    gnn_free(iperm);
    typed_free(t);
    return rc;
}

int gnn_typed_group_rows(gnn_csr_t *csr, int32_t *etype)
{
    int rc = 0;
    int64_t longest = 0;
    for (int64_t v = 0; v < csr->n_rows; v++)
        if (csr->indptr[v + 1] - csr->indptr[v] > longest)
            longest = csr->indptr[v + 1] - csr->indptr[v];
    GNN_CHECK(!csr->weights, GNN_EUNSUPPORTED, "typed rows with edge weights");
    GNN_CHECK(csr->n_cols < ((int64_t)1 << 55), GNN_EINVAL, "typed rows: too many columns");
    int fail = 0;
#pragma omp parallel reduction(| : fail)
    {
        uint64_t *k = gnn_malloc_array((size_t)longest + 1, sizeof *k);
        if (!k) fail = 1;
#pragma omp for schedule(dynamic, 1024)
        for (int64_t v = 0; v < csr->n_rows; v++) {
            if (!k) continue;
            gnn_eid_t a = csr->indptr[v], n = csr->indptr[v + 1] - a;
            for (gnn_eid_t i = 0; i < n; i++)
                k[i] = (uint64_t)etype[a + i] << 55 | (uint64_t)csr->indices[a + i];
            gnn_sort_u64(k, n);
            for (gnn_eid_t i = 0; i < n; i++) {
                etype[a + i] = (int32_t)(k[i] >> 55);
                csr->indices[a + i] = (int64_t)(k[i] & (((uint64_t)1 << 55) - 1));
            }
        }
        gnn_free(k);
    }
    GNN_CHECK(!fail, GNN_ENOMEM, "typed rows: sort buffers");
    csr->flags &= ~(unsigned)GNN_CSR_SORTED;
fail:
    return rc;
}

int gnn_typed_graph_create(gnn_backend_t *be, const gnn_csr_t *csr, const int32_t *etype,
                           const int64_t *src_gid, const gnn_graph_types_t *types,
                           gnn_bgraph_t **out)
{
    int rc = 0;
    gnn_bgraph_t *g = NULL;
    gnn_csr_t shape = {.n_rows = csr->n_rows, .n_cols = csr->n_cols,
                       .flags = GNN_CSR_SORTED | GNN_CSR_DEDUPED};
    *out = NULL;
    shape.indptr = gnn_calloc((size_t)csr->n_rows + 1, sizeof *shape.indptr);
    GNN_CHECK(shape.indptr, GNN_ENOMEM, "typed graph of %lld rows", (long long)csr->n_rows);
    GNN_TRY(gnn_be_graph_create(be, &shape, &g));
    GNN_TRY(gnn_typed_graph_attach(be, g, csr, etype, src_gid, types));
    ((gnn_typed_graph_t *)gnn_bgraph_attached(g))->shape = shape; /* freed with it */
    *out = g;
    return 0;
fail:
    gnn_be_graph_free(g);
    gnn_csr_free(&shape);
    return rc;
}
