/*
 * Node-to-part assignment (kway.h): the undirected view, METIS k-way, the
 * random baseline and the edge cut.
 *
 * The view merges each row of the in-edge CSR (sources of v) with the same
 * row of its transpose (destinations of v), both sorted, dropping v itself
 * and repeats: two passes over the rows (lengths, then entries), each on
 * OpenMP threads. METIS gets 32-bit copies of the view and the weights,
 * checked against idx_t's range first, and its options by name.
 */
#include "partition/kway.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <metis.h>
#include <string.h>

_Static_assert(sizeof(idx_t) == 4 || sizeof(idx_t) == 8, "METIS idx_t of 32 or 64 bits");

/* Merge sorted a[0..na) and b[0..nb) without v and repeats into out (when
 * not NULL); returns the count. */
static gnn_eid_t merge_row(const gnn_vid_t *a, gnn_eid_t na, const gnn_vid_t *b, gnn_eid_t nb,
                           gnn_vid_t v, gnn_vid_t *out)
{
    gnn_eid_t i = 0, j = 0, k = 0;
    gnn_vid_t last = -1;
    while (i < na || j < nb) {
        gnn_vid_t x;
        if (j >= nb || (i < na && a[i] <= b[j]))
            x = a[i++];
        else
            x = b[j++];
        if (x == v || x == last) continue;
        if (out) out[k] = x;
        k++;
        last = x;
    }
    return k;
}

int gnn_part_undirected(const gnn_csr_t *g, gnn_csr_t *out)
{
    int rc = 0;
    gnn_csr_t sorted = {0}, t = {0}, u = {0};
    memset(out, 0, sizeof *out);
    GNN_CHECK(g && g->n_rows == g->n_cols, GNN_EINVAL,
              "undirected view: the graph must be square");
    const gnn_csr_t *a = g;
    if (!(g->flags & GNN_CSR_SORTED)) {
        GNN_TRY(gnn_csr_copy(g, &sorted));
        GNN_TRY(gnn_csr_sort_rows(&sorted));
        a = &sorted;
    }
    GNN_TRY(gnn_csr_transpose(a, &t));
    gnn_vid_t n = a->n_rows;
    u.n_rows = u.n_cols = n;
    u.indptr = gnn_alloc_large(((size_t)n + 1) * sizeof *u.indptr);
    GNN_CHECK(u.indptr, GNN_ENOMEM, "undirected view");
    u.indptr[0] = 0;
#pragma omp parallel for schedule(dynamic, 4096)
    for (gnn_vid_t v = 0; v < n; v++)
        u.indptr[v + 1] = merge_row(a->indices + a->indptr[v], a->indptr[v + 1] - a->indptr[v],
                                    t.indices + t.indptr[v], t.indptr[v + 1] - t.indptr[v], v,
                                    NULL);
    for (gnn_vid_t v = 0; v < n; v++) u.indptr[v + 1] += u.indptr[v];
    u.nnz = u.indptr[n];
    u.indices = gnn_alloc_large(((size_t)u.nnz + 1) * sizeof *u.indices);
    GNN_CHECK(u.indices, GNN_ENOMEM, "undirected view");
#pragma omp parallel for schedule(dynamic, 4096)
    for (gnn_vid_t v = 0; v < n; v++)
        merge_row(a->indices + a->indptr[v], a->indptr[v + 1] - a->indptr[v],
                  t.indices + t.indptr[v], t.indptr[v + 1] - t.indptr[v], v,
                  u.indices + u.indptr[v]);
    u.flags = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC;
    *out = u;
    u = (gnn_csr_t){0};
fail:
    gnn_csr_free(&u);
    gnn_csr_free(&t);
    gnn_csr_free(&sorted);
    return rc;
}

int64_t gnn_part_edge_cut(const gnn_csr_t *sym, const int32_t *part)
{
    int64_t cut = 0;
#pragma omp parallel for reduction(+ : cut) schedule(dynamic, 4096)
    for (gnn_vid_t v = 0; v < sym->n_rows; v++)
        for (gnn_eid_t e = sym->indptr[v]; e < sym->indptr[v + 1]; e++) {
            gnn_vid_t x = sym->indices[e];
            cut += x > v && part[x] != part[v];
        }
    return cut;
}

int gnn_part_random(int64_t n, int k, uint64_t seed, int32_t *part)
{
    int rc = 0;
    gnn_vid_t *perm = NULL;
    GNN_CHECK(part || n == 0, GNN_EINVAL, "random parts: NULL output");
    GNN_CHECK(k >= 1 && (n == 0 || k <= n), GNN_EINVAL,
              "random parts: %d parts for %" PRId64 " nodes", k, n);
    perm = gnn_malloc_array((size_t)n + 1, sizeof *perm);
    GNN_CHECK(perm, GNN_ENOMEM, "random parts");
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    uint64_t key = gnn_rng_mix64(seed ^ 0x72616e646f6dull), w = 0;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)gnn_rng_below(key, &w, (uint64_t)i + 1);
        gnn_vid_t x = perm[i];
        perm[i] = perm[j];
        perm[j] = x;
    }
    for (int64_t i = 0; i < n; i++) part[perm[i]] = (int32_t)(i % k);
fail:
    gnn_free(perm);
    return rc;
}

static int metis_fail(int status)
{
    switch (status) {
    case METIS_ERROR_INPUT: return GNN_FAIL(GNN_EMETIS, "METIS rejected its input");
    case METIS_ERROR_MEMORY: return GNN_FAIL(GNN_EMETIS, "METIS ran out of memory");
    /* METIS 5.1 answers METIS_ERROR both for its own internal errors and
     * for a SIGTERM sent while it runs (it traps the signal to unwind). */
    case METIS_ERROR:
        return GNN_FAIL(GNN_EMETIS, "METIS failed (status %d: an internal error, or the "
                                    "process was sent SIGTERM while METIS ran)", status);
    default: return GNN_FAIL(GNN_EMETIS, "METIS failed (status %d)", status);
    }
}

const char *gnn_part_scheme_name(int scheme)
{
    switch (scheme) {
    case GNN_PART_KWAY: return "kway";
    case GNN_PART_RB: return "rb";
    case GNN_PART_BEST: return "best";
    default: return "-";
    }
}

int gnn_part_scheme_from_name(const char *name)
{
    for (int s = GNN_PART_KWAY; s <= GNN_PART_BEST; s++)
        if (name && !strcmp(name, gnn_part_scheme_name(s))) return s;
    return -1;
}

/* The cut of part on sym: the sum of the cut entries' weights (adjwgt), or
 * their count. */
static int64_t weighted_cut(const gnn_csr_t *sym, const int64_t *adjwgt, const int32_t *part)
{
    if (!adjwgt) return gnn_part_edge_cut(sym, part);
    int64_t c = 0;
    for (gnn_vid_t v = 0; v < sym->n_rows; v++)
        for (gnn_eid_t e = sym->indptr[v]; e < sym->indptr[v + 1]; e++)
            if (sym->indices[e] > v && part[sym->indices[e]] != part[v]) c += adjwgt[e];
    return c;
}

/* Copies METIS's where[] into part after checking every entry. */
static int take_parts(const idx_t *where, gnn_vid_t n, int k, int32_t *part)
{
    for (gnn_vid_t v = 0; v < n; v++) {
        if (where[v] < 0 || where[v] >= k)
            return GNN_FAIL(GNN_EMETIS, "METIS put node %" GNN_PRIvid " in part %lld of %d", v,
                            (long long)where[v], k);
        part[v] = (int32_t)where[v];
    }
    return 0;
}

int gnn_part_metis(const gnn_csr_t *sym, int k, const gnn_part_opts_t *o, int32_t *part,
                   int64_t *edge_cut, int *used)
{
    int rc = 0;
    idx_t *xadj = NULL, *adjncy = NULL, *vw = NULL, *ew = NULL, *where = NULL;
    int32_t *other = NULL;
    if (used) *used = -1;
    GNN_CHECK(sym && o && part && edge_cut, GNN_EINVAL, "METIS: NULL argument");
    GNN_CHECK(o->scheme >= GNN_PART_KWAY && o->scheme <= GNN_PART_BEST, GNN_EINVAL,
              "METIS: scheme %d", o->scheme);
    gnn_vid_t n = sym->n_rows;
    GNN_CHECK(sym->n_rows == sym->n_cols, GNN_EINVAL, "METIS: the graph must be square");
    GNN_CHECK(k >= 1, GNN_EINVAL, "METIS: %d parts", k);
    GNN_CHECK(n > 0 && k <= n, GNN_EINVAL, "METIS: %d parts for %" GNN_PRIvid " nodes", k, n);
    GNN_CHECK(o->ncon >= 0 && o->ncon <= GNN_PART_MAX_CON && (o->ncon == 0 || o->vwgt),
              GNN_EINVAL, "METIS: %d vertex weights per node", o->ncon);
    GNN_CHECK(o->ufactor >= 1 && o->ufactor <= 10000, GNN_EINVAL,
              "METIS: ufactor %d outside [1, 10000]", o->ufactor);
    /* Debian's METIS trusts its input: only a verified view goes in. */
    unsigned need = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC;
    GNN_CHECK((sym->flags & need) == need, GNN_EINVAL,
              "METIS: the graph is not an undirected view (gnn_part_undirected)");
    GNN_TRY(gnn_csr_validate(sym));
    if (k == 1) { /* METIS 5.1 crashes on one part */
        memset(part, 0, (size_t)n * sizeof *part);
        *edge_cut = 0;
        return 0;
    }
    const int64_t lim = sizeof(idx_t) == 4 ? INT32_MAX : INT64_MAX;
    GNN_CHECK(n <= lim && sym->nnz <= lim, GNN_ERANGE,
              "METIS: %" GNN_PRIvid " nodes and %" GNN_PRIeid " adjacency entries exceed one "
              "%zu-bit METIS call",
              n, sym->nnz, 8 * sizeof(idx_t));
    int ncon = o->ncon ? o->ncon : 1;
    if (o->ncon) {
        int64_t total[GNN_PART_MAX_CON] = {0};
        for (gnn_vid_t v = 0; v < n; v++)
            for (int c = 0; c < ncon; c++) {
                int64_t x = o->vwgt[v * ncon + c];
                GNN_CHECK(x >= 0, GNN_EINVAL, "METIS: weight %d of node %" GNN_PRIvid " is %" PRId64,
                          c, v, x);
                total[c] += x;
                GNN_CHECK(total[c] <= lim, GNN_ERANGE,
                          "METIS: vertex weight %d sums past one METIS call", c);
            }
        for (int c = 0; c < ncon; c++)
            GNN_CHECK(total[c] > 0, GNN_EINVAL, "METIS: vertex weight %d is 0 on every node", c);
    }
    xadj = gnn_malloc_array((size_t)n + 1, sizeof *xadj);
    adjncy = gnn_malloc_array((size_t)sym->nnz + 1, sizeof *adjncy);
    where = gnn_malloc_array((size_t)n, sizeof *where);
    GNN_CHECK(xadj && adjncy && where, GNN_ENOMEM, "METIS input");
    for (gnn_vid_t v = 0; v <= n; v++) xadj[v] = (idx_t)sym->indptr[v];
#pragma omp parallel for schedule(static)
    for (gnn_eid_t e = 0; e < sym->nnz; e++) adjncy[e] = (idx_t)sym->indices[e];
    if (o->ncon) {
        vw = gnn_malloc_array((size_t)n * (size_t)ncon, sizeof *vw);
        GNN_CHECK(vw, GNN_ENOMEM, "METIS weights");
        for (int64_t i = 0; i < n * ncon; i++) vw[i] = (idx_t)o->vwgt[i];
    }
    if (o->adjwgt) {
        ew = gnn_malloc_array((size_t)sym->nnz + 1, sizeof *ew);
        GNN_CHECK(ew, GNN_ENOMEM, "METIS edge weights");
        for (gnn_eid_t e = 0; e < sym->nnz; e++) {
            GNN_CHECK(o->adjwgt[e] >= 1 && o->adjwgt[e] <= lim, GNN_EINVAL,
                      "METIS: edge weight %" PRId64 " of entry %" GNN_PRIeid, o->adjwgt[e], e);
            ew[e] = (idx_t)o->adjwgt[e];
        }
    }
    idx_t opts[METIS_NOPTIONS];
    METIS_SetDefaultOptions(opts);
    opts[METIS_OPTION_UFACTOR] = o->ufactor;
    opts[METIS_OPTION_SEED] = (idx_t)(o->seed & 0x7fffffff);
    opts[METIS_OPTION_NUMBERING] = 0;
    idx_t nv = (idx_t)n, nc = (idx_t)ncon, np = k, cut = 0;
    /* METIS reads the arrays and leaves them as they were: both schemes
     * run on the same input. */
    int64_t best = -1;
    for (int s = GNN_PART_KWAY; s <= GNN_PART_RB; s++) {
        if (o->scheme != GNN_PART_BEST && o->scheme != s) continue;
        int status = s == GNN_PART_KWAY
                         ? METIS_PartGraphKway(&nv, &nc, xadj, adjncy, vw, NULL, ew, &np, NULL,
                                               NULL, opts, &cut, where)
                         : METIS_PartGraphRecursive(&nv, &nc, xadj, adjncy, vw, NULL, ew, &np,
                                                    NULL, NULL, opts, &cut, where);
        if (status != METIS_OK && best >= 0) { /* the k-way parts stand */
            GNN_WARN("METIS recursive bisection failed (status %d): keeping the k-way parts",
                     status);
            break;
        }
        if (status != METIS_OK) {
            rc = metis_fail(status);
            goto fail;
        }
        if (best < 0) { /* the first scheme: straight into part */
            GNN_TRY(take_parts(where, n, k, part));
            best = weighted_cut(sym, o->adjwgt, part);
            if (used) *used = s;
            continue;
        }
        other = gnn_malloc_array((size_t)n, sizeof *other);
        GNN_CHECK(other, GNN_ENOMEM, "METIS parts");
        GNN_TRY(take_parts(where, n, k, other));
        int64_t c = weighted_cut(sym, o->adjwgt, other);
        GNN_DEBUG("METIS: k-way cut %" PRId64 ", recursive bisection cut %" PRId64, best, c);
        if (c < best) {
            memcpy(part, other, (size_t)n * sizeof *part);
            best = c;
            if (used) *used = s;
        }
    }
    *edge_cut = best;
fail:
    gnn_free(other);
    gnn_free(ew);
    gnn_free(xadj);
    gnn_free(adjncy);
    gnn_free(vw);
    gnn_free(where);
    return rc;
}
