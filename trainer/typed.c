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
    gnn_be_graph_free(t->ug);
    gnn_csr_free(&t->ucsr);
    gnn_be_free(t->be, t->dperm);
    gnn_be_free(t->be, t->diperm);
    gnn_csr_free(&t->shape);
    gnn_be_free(t->be, t->perm);
    gnn_be_free(t->be, t->iperm);
    gnn_free(t);
}

/* The R relations grouped by the type at one end (end[r]): order lists
 * them type by type (by id within a type), pos[r] is r's place there,
 * type s's are order[first[s] .. first[s] + k[s]). */
static void by_type(int T, int R, const int *end, int *order, int *pos, int *first, int *k)
{
    int at = 0;
    for (int s = 0; s < T; s++) {
        first[s] = at;
        for (int r = 0; r < R; r++)
            if (end[r] == s) {
                pos[r] = at;
                order[at++] = r;
            }
        k[s] = at - first[s];
    }
}

/* Rows 0 .. n - 1 of types ty[] grouped by type, stably: loc[j] is row
 * j's index among its type's, cnt[s] the rows of type s, start[s] their
 * first place in type order, vbase[s] their first virtual row (each row
 * of type s makes k[s] of them), *nv the virtual rows. Returns whether
 * the rows are in type order already (cnt starts at zero). */
static int group_rows(int T, int64_t n, const int *ty, const int *k, int64_t *loc, int64_t *cnt,
                      int64_t *start, int64_t *vbase, int64_t *nv)
{
    int sorted = 1;
    for (int64_t j = 0; j < n; j++) {
        loc[j] = cnt[ty[j]]++;
        if (j > 0 && ty[j] < ty[j - 1]) sorted = 0;
    }
    for (int s = 0; s < T; s++) {
        start[s] = s ? start[s - 1] + cnt[s - 1] : 0;
        vbase[s] = s ? vbase[s - 1] + cnt[s - 1] * k[s - 1] : 0;
    }
    *nv = vbase[T - 1] + cnt[T - 1] * k[T - 1];
    return sorted;
}

/* The permutation of n rows that groups them by type (ty[j], loc[j]: the
 * row's type and its index among its type's, start: each type's first
 * row) and its inverse, on the backend as *perm and *iperm; trusted as
 * permutations of [0, n) by construction: the layer's gathers by them
 * skip the device's check (on a GPU a wait inside every step). */
static int upload_perm(gnn_backend_t *be, int64_t n, const int *ty, const int64_t *loc,
                       const int64_t *start, int64_t **perm_out, int64_t **iperm_out)
{
    int rc = 0;
    int64_t *perm = gnn_malloc_array((size_t)n + 1, sizeof *perm);
    int64_t *iperm = gnn_malloc_array((size_t)n + 1, sizeof *iperm);
    GNN_CHECK(perm && iperm, GNN_ENOMEM, "typed graph of %lld rows", (long long)n);
    for (int64_t j = 0; j < n; j++) {
        int64_t p = start[ty[j]] + loc[j];
        perm[p] = j;
        iperm[j] = p;
    }
    GNN_TRY(gnn_be_alloc(be, ((size_t)n + 1) * sizeof *perm, (void **)perm_out));
    GNN_TRY(gnn_be_alloc(be, ((size_t)n + 1) * sizeof *iperm, (void **)iperm_out));
    GNN_TRY(gnn_be_upload(be, *perm_out, perm, (size_t)n * sizeof *perm));
    GNN_TRY(gnn_be_upload(be, *iperm_out, iperm, (size_t)n * sizeof *iperm));
    GNN_TRY(gnn_be_trust_buffer(be, *perm_out, n, n, 1));
    GNN_TRY(gnn_be_trust_buffer(be, *iperm_out, n, n, 1));
fail:
    gnn_free(perm);
    gnn_free(iperm);
    return rc;
}

/*
 * The graph of virtual destinations (aggregating first): row
 * dvbase[t] + dloc[v] dk[t] + (dpos[r] - dfirst[t]) for destination v of
 * type t holds v's in-edges of relation r, their sources as they are,
 * weight 1 / (v's in-edges of r). The edges were checked by the caller.
 */
static int build_ug(gnn_backend_t *be, gnn_typed_graph_t *t, const gnn_csr_t *csr,
                    const int32_t *etype, const int *ty, const int64_t *dloc)
{
    int rc = 0;
    const int R = t->n_rels;
    const int64_t nd = t->n_dst;
    gnn_csr_t *a = &t->ucsr;
    a->n_rows = t->nvd;
    a->n_cols = t->n_src;
    a->nnz = csr->nnz;
    a->indptr = gnn_calloc((size_t)t->nvd + 1, sizeof *a->indptr);
    a->indices = gnn_alloc_large(((size_t)csr->nnz + 1) * sizeof *a->indices);
    a->weights = gnn_alloc_large(((size_t)csr->nnz + 1) * sizeof *a->weights);
    GNN_CHECK(a->indptr && a->indices && a->weights, GNN_ENOMEM, "typed graph of %lld edges",
              (long long)csr->nnz);
    /* Row sizes, then their offsets; each destination fills its own rows. */
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t v = 0; v < nd; v++) {
        int s = ty[v];
        int64_t row0 = t->dvbase[s] + dloc[v] * t->dk[s] - t->dfirst[s];
        for (gnn_eid_t e = csr->indptr[v]; e < csr->indptr[v + 1]; e++)
            a->indptr[row0 + t->dpos[etype[e]] + 1]++;
    }
    for (int64_t i = 0; i < t->nvd; i++) a->indptr[i + 1] += a->indptr[i];
#pragma omp parallel
    {
        int64_t fill[GNN_MAX_RELATIONS];
#pragma omp for schedule(dynamic, 1024)
        for (int64_t v = 0; v < nd; v++) {
            int s = ty[v];
            int64_t row0 = t->dvbase[s] + dloc[v] * t->dk[s] - t->dfirst[s];
            for (int r = 0; r < R; r++) fill[r] = 0;
            for (gnn_eid_t e = csr->indptr[v]; e < csr->indptr[v + 1]; e++) {
                int64_t row = row0 + t->dpos[etype[e]];
                gnn_eid_t at = a->indptr[row] + fill[etype[e]]++;
                a->indices[at] = csr->indices[e];
            }
            for (int r = 0; r < R; r++) {
                if (!fill[r]) continue;
                int64_t row = row0 + t->dpos[r];
                for (gnn_eid_t e = a->indptr[row]; e < a->indptr[row + 1]; e++)
                    a->weights[e] = 1.0f / (float)fill[r];
            }
        }
    }
    a->flags = 0;
    GNN_TRY(gnn_be_graph_create(be, a, &t->ug));
fail:
    return rc;
}

/* GNN_EINVAL naming the first edge whose relation is out of range, does
 * not start at its source's type or does not end at its destination's
 * (the destinations are the first sources: ty[v] is row v's type). */
static int check_edges(const gnn_csr_t *csr, const int32_t *etype, const int *ty,
                       const gnn_graph_types_t *types)
{
    int rc = 0;
    const int R = types->n_rels;
    for (gnn_eid_t e = 0; e < csr->nnz; e++)
        GNN_CHECK(etype[e] >= 0 && etype[e] < R, GNN_EINVAL,
                  "typed graph: edge %lld has relation %d of %d", (long long)e, etype[e], R);
    int64_t bad_e = csr->nnz;
#pragma omp parallel for schedule(dynamic, 1024) reduction(min : bad_e)
    for (int64_t v = 0; v < csr->n_rows; v++)
        for (gnn_eid_t e = csr->indptr[v]; e < csr->indptr[v + 1] && e < bad_e; e++) {
            int r = etype[e];
            if (types->rel_src[r] != ty[csr->indices[e]] || types->rel_dst[r] != ty[v]) bad_e = e;
        }
    if (bad_e < csr->nnz) {
        int r = etype[bad_e];
        int64_t v = 0;
        while (csr->indptr[v + 1] <= bad_e) v++;
        int s = ty[csr->indices[bad_e]];
        GNN_CHECK(types->rel_src[r] == s, GNN_EINVAL,
                  "typed graph: edge %lld has relation '%s', which starts at type '%s', but its "
                  "source is of type '%s'",
                  (long long)bad_e, types->rel[r], types->ntype[types->rel_src[r]],
                  types->ntype[s]);
        GNN_CHECK(0, GNN_EINVAL,
                  "typed graph: edge %lld has relation '%s', which ends at type '%s', but its "
                  "destination is of type '%s'",
                  (long long)bad_e, types->rel[r], types->ntype[types->rel_dst[r]],
                  types->ntype[ty[v]]);
    }
fail:
    return rc;
}

/* Relative cost of one SpMM element (a gathered multiply-add, bound by
 * memory) against one GEMM flop, for choosing the order. */
#define SPMM_ELEM_COST 16.0

/*
 * Whether a layer of widths fin -> fout aggregates first on t: as forced,
 * or (auto, widths known, destinations present) where that costs less:
 * products on nvd rows plus an SpMM fin wide, against products on nv rows
 * plus an SpMM fout wide.
 */
static int aggregate_first(const gnn_typed_graph_t *t, int64_t nnz, gnn_typed_order_t order,
                           int64_t fin, int64_t fout)
{
    if (order != GNN_TYPED_AUTO) return order == GNN_TYPED_AGGREGATE_FIRST;
    if (fin <= 0 || fout <= 0 || t->n_dst == 0) return 0;
    double e = (double)nnz, wi = (double)fin, wo = (double)fout;
    double agg = 2.0 * (double)t->nvd * wi * wo + SPMM_ELEM_COST * e * wi;
    double mul = 2.0 * (double)t->nv * wi * wo + SPMM_ELEM_COST * e * wo;
    return agg < mul;
}

/* The graph of virtual sources: each in-edge (u, r) of v becomes virtual
 * source vbase[type u] + loc[u] k + (pos[r] - first[type u]), weight
 * 1 / (v's in-edges of relation r). The edges were checked. */
static int build_vg(gnn_backend_t *be, gnn_typed_graph_t *t, const gnn_csr_t *csr,
                    const int32_t *etype, const int *ty, const int64_t *loc)
{
    int rc = 0;
    const int R = t->n_rels;
    const int64_t nd = t->n_dst;
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
#pragma omp parallel
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
                a->indices[e] = t->vbase[s] + loc[u] * t->k[s] + (t->pos[r] - t->first[s]);
                a->weights[e] = 1.0f / (float)deg[r];
            }
        }
    }
    a->flags = 0;
    GNN_TRY(gnn_be_graph_create(be, a, &t->vg));
fail:
    return rc;
}

int gnn_typed_graph_attach(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_csr_t *csr,
                           const int32_t *etype, const int64_t *src_gid,
                           const gnn_graph_types_t *types, gnn_typed_order_t order,
                           int64_t fin, int64_t fout)
{
    int rc = 0;
    gnn_typed_graph_t *t = gnn_calloc(1, sizeof *t);
    int64_t *loc = NULL, *dloc = NULL;
    int *ty = NULL;
    GNN_CHECK(t, GNN_ENOMEM, "typed graph");
    t->be = be;
    t->order_mode = order;
    const int T = types->n_ntypes, R = types->n_rels;
    const int64_t ns = csr->n_cols, nd = csr->n_rows;
    t->n_types = T;
    t->n_rels = R;
    t->n_src = ns;
    t->n_dst = nd;
    by_type(T, R, types->rel_src, t->order, t->pos, t->first, t->k);
    by_type(T, R, types->rel_dst, t->dorder, t->dpos, t->dfirst, t->dk);
    /* Sources by type, stably. */
    loc = gnn_malloc_array((size_t)ns + 1, sizeof *loc);
    ty = gnn_malloc_array((size_t)ns + 1, sizeof *ty);
    GNN_CHECK(loc && ty, GNN_ENOMEM, "typed graph of %lld sources", (long long)ns);
    for (int64_t j = 0; j < ns; j++) ty[j] = gnn_graph_types_of(types, src_gid ? src_gid[j] : j);
    int sorted = group_rows(T, ns, ty, t->k, loc, t->cnt, t->start, t->vbase, &t->nv);
    /* The destinations (the first nd sources) by type, likewise. */
    GNN_CHECK(nd <= ns, GNN_EINVAL, "typed graph: %lld destinations of %lld sources",
              (long long)nd, (long long)ns);
    dloc = gnn_malloc_array((size_t)nd + 1, sizeof *dloc);
    GNN_CHECK(dloc, GNN_ENOMEM, "typed graph of %lld destinations", (long long)nd);
    int dsorted = group_rows(T, nd, ty, t->dk, dloc, t->dcnt, t->dstart, t->dvbase, &t->nvd);
    GNN_TRY(check_edges(csr, etype, ty, types));
    if (aggregate_first(t, csr->nnz, order, fin, fout)) {
        if (!dsorted) GNN_TRY(upload_perm(be, nd, ty, dloc, t->dstart, &t->dperm, &t->diperm));
        GNN_TRY(build_ug(be, t, csr, etype, ty, dloc));
    } else {
        if (!sorted) GNN_TRY(upload_perm(be, ns, ty, loc, t->start, &t->perm, &t->iperm));
        GNN_TRY(build_vg(be, t, csr, etype, ty, loc));
    }
    gnn_be_graph_attach(g, t, typed_free);
    t = NULL;
fail:
    gnn_free(loc);
    gnn_free(dloc);
    gnn_free(ty);
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
                           gnn_typed_order_t order, int64_t fin, int64_t fout,
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
    GNN_TRY(gnn_typed_graph_attach(be, g, csr, etype, src_gid, types, order, fin, fout));
    ((gnn_typed_graph_t *)gnn_bgraph_attached(g))->shape = shape; /* freed with it */
    *out = g;
    return 0;
fail:
    gnn_be_graph_free(g);
    gnn_csr_free(&shape);
    return rc;
}

int gnn_typed_order_parse(const char *s)
{
    if (!s || !strcmp(s, "auto")) return GNN_TYPED_AUTO;
    if (!strcmp(s, "transform-first")) return GNN_TYPED_TRANSFORM_FIRST;
    if (!strcmp(s, "aggregate-first")) return GNN_TYPED_AGGREGATE_FIRST;
    return -1;
}
