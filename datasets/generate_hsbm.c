/*
 * The typed SBM generator (generate.h): a heterogeneous graph whose labels
 * depend on the relation an edge belongs to.
 *
 * Node ids: type t0 first (N - (T - 1) floor(N / T) nodes), then each
 * other type's floor(N / T). The class of the node with index i inside its
 * type is i mod C, so every class of a type is a contiguous residue set
 * and a uniform node of class c is c + C below(count). Edges of relation
 * rK (K >= 1) are made in batches, batch b of relation K from stream
 * (seed, K, b): a uniform t0 node v, then with probability H a tK node of
 * class rule_K(class(v)), else of a uniform class; each edge is stored in
 * both directions (rK in v's row, rev_rK in the other's). Features of row
 * v come from stream (seed, v); centroids are random unit vectors.
 */
#include "datasets/generate.h"
#include "datasets/generate_rng.h"
#include "datasets/typed.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define HSBM_BATCH ((int64_t)1 << 16)

void gnn_hsbm_defaults(gnn_hsbm_opts_t *o)
{
    o->nodes = 30000;
    o->types = 3;
    o->classes = 8;
    o->feat_dim = 32;
    o->featureless = 0;
    o->avg_degree = 5.0;
    o->homophily = 0.8;
    o->seed = 1;
    o->feat_noise = 1.0;
    o->train_frac = 0.1;
    o->valid_frac = 0.1;
}

int gnn_hsbm_check(const gnn_hsbm_opts_t *o)
{
    if (o->types < 2 || o->types > 32)
        return GNN_FAIL(GNN_EUSAGE, "--types must be in [2, 32] (got %d)", o->types);
    if (o->classes < 2 || o->classes > 1 << 20)
        return GNN_FAIL(GNN_EUSAGE, "--classes must be in [2, 2^20] (got %d)", o->classes);
    if (o->nodes < (gnn_vid_t)o->types * o->classes || o->nodes > GNN_GENERATE_MAX_NODES / 4)
        return GNN_FAIL(GNN_EUSAGE,
                        "--nodes must be at least --types x --classes = %lld and at most 2^38 "
                        "(got %lld)",
                        (long long)o->types * o->classes, (long long)o->nodes);
    if (o->feat_dim < 1 || o->feat_dim > 1 << 16)
        return GNN_FAIL(GNN_EUSAGE, "--feat-dim must be in [1, 65536] (got %d)", o->feat_dim);
    if (o->featureless < 0 || o->featureless > o->types - 1)
        return GNN_FAIL(GNN_EUSAGE, "--featureless must be in [0, --types - 1 = %d] (got %d)",
                        o->types - 1, o->featureless);
    if (!(o->avg_degree > 0) || !(o->avg_degree <= 1000))
        return GNN_FAIL(GNN_EUSAGE, "--avg-degree must be in (0, 1000] (got %g)", o->avg_degree);
    if (!(o->homophily >= 0 && o->homophily <= 1))
        return GNN_FAIL(GNN_EUSAGE, "--homophily must be in [0, 1] (got %g)", o->homophily);
    if (!(o->feat_noise >= 0))
        return GNN_FAIL(GNN_EUSAGE, "feature noise must not be negative (got %g)", o->feat_noise);
    if (!(o->train_frac >= 0 && o->valid_frac >= 0 && o->train_frac + o->valid_frac <= 1))
        return GNN_FAIL(GNN_EUSAGE, "split fractions must be in [0, 1] and sum to at most 1");
    return 0;
}

/* Uniform in [0, m) (m < 2^53: the bias is below 2^-11). */
static int64_t below(gnn__rng_t *r, int64_t m) { return (int64_t)(gnn__rng_unit(r) * (double)m); }

/* A uniform node of class c among the n nodes of a type starting at off. */
static gnn_vid_t node_of_class(gnn__rng_t *r, gnn_vid_t off, gnn_vid_t n, int C, int c)
{
    gnn_vid_t count = (n - c + C - 1) / C;
    return off + c + (gnn_vid_t)C * below(r, count);
}

int gnn_generate_hsbm(const gnn_hsbm_opts_t *o, const gnn_output_opts_t *out)
{
    int rc = 0;
    gnn_graph_t g;
    gnn_graph_types_t *t = NULL;
    gnn_vid_t *src = NULL, *dst = NULL;
    int32_t *rel = NULL;
    float *cent = NULL;
    gnn_graph_init(&g);
    GNN_TRY(gnn_hsbm_check(o));
    GNN_TRY(gnn_output_check(out));
    const int T = o->types, C = o->classes, F = o->feat_dim;
    const uint64_t seed = (uint64_t)o->seed;
    t = gnn_calloc(1, sizeof *t);
    GNN_CHECK(t, GNN_ENOMEM, "out of memory");
    gnn_vid_t per = o->nodes / T;
    t->n_ntypes = T;
    t->off[0] = 0;
    t->off[1] = o->nodes - (gnn_vid_t)(T - 1) * per;
    for (int k = 1; k < T; k++) t->off[k + 1] = t->off[k] + per;
    for (int k = 0; k < T; k++) {
        snprintf(t->ntype[k], GNN_TYPE_NAME_MAX, "t%d", k);
        t->feat_dim[k] = k >= T - o->featureless && k > 0 ? 0 : F;
    }
    /* Relations: r0 (t0 -> t0), then rK and rev_rK for each K. */
    t->n_rels = 1 + 2 * (T - 1);
    snprintf(t->rel[0], GNN_TYPE_NAME_MAX, "r0");
    for (int k = 1; k < T; k++) {
        snprintf(t->rel[2 * k - 1], GNN_TYPE_NAME_MAX, "r%d", k);
        t->rel_src[2 * k - 1] = k;
        t->rel_dst[2 * k - 1] = 0;
        snprintf(t->rel[2 * k], GNN_TYPE_NAME_MAX, "rev_r%d", k);
        t->rel_src[2 * k] = 0;
        t->rel_dst[2 * k] = k;
    }
    t->target = 0;
    const gnn_vid_t n0 = t->off[1];

    /* Edges: per relation K, M_K generated edges, each stored both ways. */
    int64_t m_rel[33], m_total = 0;
    for (int k = 0; k < T; k++) {
        m_rel[k] = (int64_t)llround((double)n0 * o->avg_degree * (k == 0 ? 0.5 : 1.0));
        m_total += 2 * m_rel[k];
    }
    src = gnn_alloc_large(((size_t)m_total + 1) * sizeof *src);
    dst = gnn_alloc_large(((size_t)m_total + 1) * sizeof *dst);
    rel = gnn_alloc_large(((size_t)m_total + 1) * sizeof *rel);
    GNN_CHECK(src && dst && rel, GNN_ENOMEM, "out of memory for %lld edges", (long long)m_total);
    int64_t base = 0;
    for (int k = 0; k < T; k++) {
        int64_t mk = m_rel[k];
        gnn_vid_t off = t->off[k], nk = t->off[k + 1] - t->off[k];
        int32_t fwd = k == 0 ? 0 : 2 * k - 1, back = k == 0 ? 0 : 2 * k;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t b = 0; b < (mk + HSBM_BATCH - 1) / HSBM_BATCH; b++) {
            gnn__rng_t r = gnn__rng_at(seed, GNN__RNG_HSBM_EDGES, (uint64_t)k << 40 | (uint64_t)b);
            int64_t e1 = (b + 1) * HSBM_BATCH < mk ? (b + 1) * HSBM_BATCH : mk;
            for (int64_t e = b * HSBM_BATCH; e < e1; e++) {
                gnn_vid_t v = below(&r, n0);
                int c = (int)(v % C);
                int cu = gnn__rng_unit(&r) < o->homophily ? ((k % 2 == 1 || k == 0) ? c : c ^ 1)
                                                          : (int)below(&r, C);
                if (cu >= C) cu = c; /* the partner of the last class of an odd C */
                gnn_vid_t u = node_of_class(&r, off, nk, C, cu);
                int64_t at = base + 2 * e;
                src[at] = u, dst[at] = v, rel[at] = fwd;         /* u -rK-> v */
                src[at + 1] = v, dst[at + 1] = u, rel[at + 1] = back; /* v -rev_rK-> u */
            }
        }
        base += 2 * mk;
    }
    int64_t dropped = 0;
    GNN_TRY(gnn_typed_csr_build(o->nodes, m_total, &src, &dst, &rel, 1, &g.csr, &g.etype,
                                &dropped));
    g.types = t;
    t = NULL;
    g.directed = 0;
    g.csr.flags |= GNN_CSR_SYMMETRIC;

    /* Features: t0 noise, the others their class's centroid plus noise. */
    g.feat_dim = F;
    cent = gnn_malloc_array((size_t)C * (size_t)F, sizeof *cent);
    g.feat = gnn_alloc_large((size_t)o->nodes * (size_t)F * sizeof *g.feat);
    GNN_CHECK(cent && g.feat, GNN_ENOMEM, "out of memory for features");
    for (int c = 0; c < C; c++) {
        gnn__rng_t r = gnn__rng_at(seed, GNN__RNG_HSBM_CENTROID, (uint64_t)c);
        float *x = cent + (size_t)c * F;
        gnn__rng_normal_fill(&r, x, F, 1.0);
        double nrm = 0;
        for (int j = 0; j < F; j++) nrm += (double)x[j] * x[j];
        nrm = nrm > 0 ? 1.0 / sqrt(nrm) : 0.0;
        for (int j = 0; j < F; j++) x[j] = (float)(x[j] * nrm);
    }
#pragma omp parallel for schedule(static)
    for (gnn_vid_t v = 0; v < o->nodes; v++) {
        int ty = gnn_graph_types_of(g.types, v);
        float *x = g.feat + (size_t)v * F;
        if (g.types->feat_dim[ty] == 0) {
            memset(x, 0, (size_t)F * sizeof *x);
            continue;
        }
        gnn__rng_t r = gnn__rng_at(seed, GNN__RNG_HSBM_FEAT, (uint64_t)v);
        gnn__rng_normal_fill(&r, x, F, o->feat_noise);
        if (ty > 0) {
            const float *cx = cent + (size_t)((v - g.types->off[ty]) % C) * F;
            for (int j = 0; j < F; j++) x[j] += cx[j];
        }
    }
    /* Labels and splits on t0. */
    g.num_classes = C;
    g.label = gnn_malloc_array((size_t)o->nodes, sizeof *g.label);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        g.split[s] = gnn_malloc_array((size_t)n0 + 1, sizeof *g.split[s]);
    GNN_CHECK(g.label && g.split[0] && g.split[1] && g.split[2], GNN_ENOMEM, "out of memory");
    for (int s = 0; s < GNN_NUM_SPLITS; s++) g.split_size[s] = 0;
    for (gnn_vid_t v = 0; v < o->nodes; v++) g.label[v] = v < n0 ? v % C : -1;
    for (gnn_vid_t v = 0; v < n0; v++) {
        gnn__rng_t r = gnn__rng_at(seed, GNN__RNG_HSBM_SPLIT, (uint64_t)v);
        double u = gnn__rng_unit(&r);
        int s = u < o->train_frac ? 0 : u < o->train_frac + o->valid_frac ? 1 : 2;
        g.split[s][g.split_size[s]++] = v;
    }
    GNN_TRY(gnn_graph_write(out->path, &g, out->force));
    GNN_INFO("%s: typed SBM of %lld nodes (%d types, %d relations), %d classes: %lld stored "
             "edges (%lld repeats dropped)",
             out->path, (long long)o->nodes, T, g.types->n_rels, C, (long long)g.csr.nnz,
             (long long)dropped);
fail:
    gnn_free(t);
    gnn_free(src);
    gnn_free(dst);
    gnn_free(rel);
    gnn_free(cent);
    gnn_graph_free(&g);
    return rc;
}
