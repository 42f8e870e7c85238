/*
 * gnn-dataset split-edges, run as a user runs it, with the files checked
 * through the library, on an undirected graph (sorted, deduplicated,
 * weighted), a directed multigraph with self loops, an undirected graph
 * with unsorted rows and repeated entries, a generated SBM graph and a
 * typed one (whose types and kept edges' relations carry over): the
 * held-out edges are absent from the output in both directions and present
 * in the input; train + valid + test is the input's edge set; the sizes
 * are the fractions'; the output CSR is the input's less exactly the
 * held-out entries, weights following; negatives are non-edges of the
 * input from their positive's source, K per positive; every other dataset
 * is copied; the same seed gives the same bytes and another seed other
 * sets; -q is quiet; info shows the sets. Bad input: one error line, the
 * right exit status and no file left behind; allocation failure at every
 * allocation of the library call. argv[1] is the path of gnn-dataset.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/split_edges.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"

#include <hdf5.h>
#include <math.h>
#include <string.h>

static char *g_bin;
static unsigned g_seed;

enum { UNDIRECTED, DIRECTED, UNSORTED, BOTH_WAYS_DIRECTED };

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Write g with two node data arrays (int "year", float "emb" of 2 columns)
 * through the writer. */
static void write_with_node_data(const char *path, const gnn_graph_t *g)
{
    gnn_vid_t n = g->csr.n_rows;
    gnn_graph_header_t h = {
        .num_nodes = n,
        .num_edges = g->csr.nnz,
        .directed = g->directed,
        .csr_flags = g->csr.flags,
        .feat_dim = g->feat_dim,
        .has_weights = g->csr.weights != NULL,
        .has_labels = 1,
        .num_classes = g->num_classes,
        .has_orig_ids = 1,
    };
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, n + 1, g->csr.indptr), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, g->csr.nnz, g->csr.indices, g->csr.weights), 0);
    assert_int_equal(gnn_graph_writer_put_feat(w, 0, n, g->feat), 0);
    assert_int_equal(gnn_graph_writer_put_labels(w, 0, n, g->label), 0);
    assert_int_equal(gnn_graph_writer_put_orig_ids(w, 0, n, g->orig_id), 0);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        assert_int_equal(gnn_graph_writer_put_split(w, (gnn_split_t)s, g->split[s], g->split_size[s]), 0);
    int64_t *year = malloc(sizeof *year * (size_t)n);
    float *emb = malloc(sizeof *emb * 2 * (size_t)n);
    for (gnn_vid_t v = 0; v < n; v++) {
        year[v] = 1990 + v % 30;
        emb[2 * v] = (float)v / 3.0f;
        emb[2 * v + 1] = -(float)v;
    }
    assert_int_equal(gnn_graph_writer_put_node_data(w, "year", 1, 1, year), 0);
    assert_int_equal(gnn_graph_writer_put_node_data(w, "emb", 0, 2, emb), 0);
    free(year);
    free(emb);
    assert_int_equal(gnn_graph_writer_commit(w), 0);
}

/* A random graph of n nodes and about m edges of the given kind with
 * weights (distinct per direction), features, labels, original ids,
 * splits and node data, written to path. */
static const char *make_input(const char *name, int kind, gnn_vid_t n, gnn_eid_t m, uint64_t seed)
{
    const char *path = tu_path(name);
    uint64_t s = seed * 2654435761u + 1;
    gnn_vid_t *src = malloc(sizeof *src * (size_t)m), *dst = malloc(sizeof *dst * (size_t)m);
    float *w = malloc(sizeof *w * (size_t)m);
    for (gnn_eid_t i = 0; i < m; i++) {
        src[i] = (gnn_vid_t)(rng_next(&s) % (uint64_t)n);
        dst[i] = (gnn_vid_t)(rng_next(&s) % (uint64_t)n);
        if (kind != DIRECTED && src[i] == dst[i]) dst[i] = (dst[i] + 1) % n;
        if (kind == DIRECTED && i % 10 == 0 && i > 0) { /* repeats */
            src[i] = src[i - 1];
            dst[i] = dst[i - 1];
        }
        w[i] = (float)(src[i] * 1000 + dst[i]);
    }
    unsigned opts = kind == UNDIRECTED || kind == BOTH_WAYS_DIRECTED
                        ? GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS
                  : kind == DIRECTED   ? GNN_BUILD_SORT
                                       : GNN_BUILD_SYMMETRIZE;
    gnn_graph_t g;
    gnn_graph_init(&g);
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, w, opts, &g.csr), 0);
    /* Symmetrised only: rows in input order, pairs given twice (or both
     * ways) stored twice. */
    if (kind == UNSORTED) assert_int_equal(g.csr.flags & (GNN_CSR_SORTED | GNN_CSR_DEDUPED), 0);
    free(src);
    free(dst);
    free(w);
    g.directed = kind == DIRECTED || kind == BOTH_WAYS_DIRECTED;
    g.feat_dim = 3;
    g.feat = malloc(sizeof *g.feat * 3 * (size_t)n);
    g.label = malloc(sizeof *g.label * (size_t)n);
    g.orig_id = malloc(sizeof *g.orig_id * (size_t)n);
    g.num_classes = 4;
    for (int k = 0; k < GNN_NUM_SPLITS; k++) {
        g.split[k] = malloc(sizeof(int64_t) * (size_t)n);
        g.split_size[k] = 0;
    }
    for (gnn_vid_t v = 0; v < n; v++) {
        for (int j = 0; j < 3; j++) g.feat[3 * v + j] = (float)(v * 3 + j) / 7.0f;
        g.label[v] = v % 5 == 4 ? -1 : v % 4;
        g.orig_id[v] = 1000 + 3 * v;
        int k = v % 10 < 6 ? 0 : v % 10 < 8 ? 1 : 2;
        g.split[k][g.split_size[k]++] = v;
    }
    write_with_node_data(path, &g);
    gnn_graph_free(&g);
    return path;
}

/* ---- Edge sets ------------------------------------------------------------ */

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The distinct edges (src, dst), src != dst, of g (undirected: (min, max)),
 * sorted; their count in *m. */
static int64_t *edge_set(const gnn_graph_t *g, int64_t *m)
{
    const gnn_csr_t *a = &g->csr;
    int64_t *p = malloc(sizeof *p * 2 * (size_t)(a->nnz + 1)), k = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            gnn_vid_t u = a->indices[e];
            if (u == v) continue;
            p[2 * k] = g->directed ? u : (u < v ? u : v);
            p[2 * k++ + 1] = g->directed ? v : (u < v ? v : u);
        }
    qsort(p, (size_t)k, 2 * sizeof *p, cmp_pair);
    int64_t d = 0;
    for (int64_t i = 0; i < k; i++)
        if (d == 0 || cmp_pair(p + 2 * i, p + 2 * (d - 1)) != 0) {
            p[2 * d] = p[2 * i];
            p[2 * d++ + 1] = p[2 * i + 1];
        }
    *m = d;
    return p;
}

static int pair_in(const int64_t *set, int64_t n, int64_t a, int64_t b)
{
    int64_t key[2] = {a, b};
    return bsearch(key, set, (size_t)n, 2 * sizeof *set, cmp_pair) != NULL;
}

/* u is a source in row v of a (any copy). */
static int row_has(const gnn_csr_t *a, gnn_vid_t v, gnn_vid_t u)
{
    for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++)
        if (a->indices[e] == u) return 1;
    return 0;
}

static void load(const char *path, gnn_graph_t *g)
{
    int rc = gnn_graph_load(path, g);
    if (rc != 0) fail_msg("cannot load %s: %s", path, gnn_error_message());
}

/* The node data arrays of two files are equal. */
static void check_node_data(const char *a_path, const char *b_path)
{
    gnn_graph_file_t *a, *b;
    assert_int_equal(gnn_graph_open(a_path, &a), 0);
    assert_int_equal(gnn_graph_open(b_path, &b), 0);
    const gnn_graph_info_t *ia = gnn_graph_file_info(a), *ib = gnn_graph_file_info(b);
    assert_int_equal(ia->n_node_data, ib->n_node_data);
    for (int64_t i = 0; i < ia->n_node_data; i++) {
        assert_string_equal(ia->node_data[i], ib->node_data[i]);
        int ia_int, ib_int;
        int64_t ca, cb;
        void *va, *vb;
        assert_int_equal(gnn_graph_read_node_data(a, ia->node_data[i], &ia_int, &ca, &va), 0);
        assert_int_equal(gnn_graph_read_node_data(b, ib->node_data[i], &ib_int, &cb, &vb), 0);
        assert_int_equal(ia_int, ib_int);
        assert_int_equal(ca, cb);
        assert_memory_equal(va, vb, (size_t)(ca * ia->num_nodes) * (ia_int ? 8 : 4));
        gnn_free(va);
        gnn_free(vb);
    }
    gnn_graph_close(a);
    gnn_graph_close(b);
}

/* Everything split-edges promises of out, split from in. */
static void check_split(const char *in_path, const char *out_path, double valid, double test,
                        int64_t k)
{
    gnn_graph_t gi, go;
    load(in_path, &gi);
    load(out_path, &go);
    const gnn_csr_t *ai = &gi.csr, *ao = &go.csr;
    gnn_vid_t n = ai->n_rows;
    int64_t m, mt;
    int64_t *cand = edge_set(&gi, &m), *train = edge_set(&go, &mt);

    /* Sizes. */
    int64_t nv = llround(valid * (double)m), nt = llround(test * (double)m);
    nv = nv < 1 ? 1 : nv;
    nt = nt < 1 ? 1 : nt;
    assert_int_equal(go.link_neg_per_pos, k);
    assert_int_equal(go.link_size[GNN_LINK_VALID_POS], nv);
    assert_int_equal(go.link_size[GNN_LINK_TEST_POS], nt);
    assert_int_equal(go.link_size[GNN_LINK_VALID_NEG], nv * k);
    assert_int_equal(go.link_size[GNN_LINK_TEST_NEG], nt * k);

    /* Held-out positives: input edges, absent from the output both ways. */
    int64_t h = nv + nt;
    int64_t *pos = malloc(sizeof *pos * 2 * (size_t)h);
    memcpy(pos, go.link[GNN_LINK_VALID_POS], sizeof *pos * 2 * (size_t)nv);
    memcpy(pos + 2 * nv, go.link[GNN_LINK_TEST_POS], sizeof *pos * 2 * (size_t)nt);
    for (int64_t i = 0; i < h; i++) {
        gnn_vid_t u = pos[2 * i], v = pos[2 * i + 1];
        assert_true(u != v);
        if (!gi.directed) assert_true(u < v);
        assert_true(pair_in(cand, m, u, v));
        assert_true(row_has(ai, v, u));
        assert_false(row_has(ao, v, u));
        if (!gi.directed) {
            assert_true(row_has(ai, u, v));
            assert_false(row_has(ao, u, v));
        }
    }
    /* train + valid + test = the input's edges, each once. */
    assert_int_equal(mt + h, m);
    int64_t *all = malloc(sizeof *all * 2 * (size_t)m);
    memcpy(all, train, sizeof *all * 2 * (size_t)mt);
    memcpy(all + 2 * mt, pos, sizeof *all * 2 * (size_t)h);
    qsort(all, (size_t)m, 2 * sizeof *all, cmp_pair);
    assert_memory_equal(all, cand, sizeof *all * 2 * (size_t)m);
    free(all);

    /* The output CSR is the input's less exactly the held-out entries. */
    qsort(pos, (size_t)h, 2 * sizeof *pos, cmp_pair);
    gnn_eid_t e_out = 0;
    assert_int_equal(ao->n_rows, n);
    for (gnn_vid_t v = 0; v < n; v++) {
        assert_int_equal(ao->indptr[v], e_out);
        for (gnn_eid_t e = ai->indptr[v]; e < ai->indptr[v + 1]; e++) {
            gnn_vid_t u = ai->indices[e];
            int held = gi.directed ? pair_in(pos, h, u, v)
                                   : pair_in(pos, h, u < v ? u : v, u < v ? v : u);
            if (held) continue;
            assert_int_equal(ao->indices[e_out], u);
            if (ai->weights) assert_true(ao->weights[e_out] == ai->weights[e]);
            e_out++;
        }
    }
    assert_int_equal(ao->nnz, e_out);
    assert_int_equal(!ao->weights, !ai->weights);
    unsigned want = ai->flags & ~(gi.directed ? (unsigned)GNN_CSR_SYMMETRIC : 0u);
    assert_int_equal(ao->flags, want);
    assert_int_equal(gnn_csr_validate(ao), 0);
    assert_int_equal(go.directed, gi.directed);

    /* Negatives: the positive's source, another node, no edge in the input. */
    for (int s = GNN_LINK_VALID_POS; s <= GNN_LINK_TEST_POS; s += 2) {
        const int64_t *p = go.link[s], *q = go.link[s + 1];
        for (int64_t j = 0; j < go.link_size[s + 1]; j++) {
            gnn_vid_t u = q[2 * j], w = q[2 * j + 1];
            assert_int_equal(u, p[2 * (j / k)]);
            assert_true(w >= 0 && w < n && w != u);
            assert_false(row_has(ai, w, u)); /* u -> w */
            if (!gi.directed) assert_false(row_has(ai, u, w));
        }
    }

    /* Every other dataset, copied. */
    assert_int_equal(go.feat_dim, gi.feat_dim);
    if (gi.feat) assert_memory_equal(go.feat, gi.feat, sizeof(float) * (size_t)(n * gi.feat_dim));
    assert_int_equal(!go.label, !gi.label);
    if (gi.label) {
        assert_int_equal(go.num_classes, gi.num_classes);
        assert_memory_equal(go.label, gi.label, sizeof(int64_t) * (size_t)n);
    }
    assert_int_equal(!go.orig_id, !gi.orig_id);
    if (gi.orig_id) assert_memory_equal(go.orig_id, gi.orig_id, sizeof(int64_t) * (size_t)n);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        assert_int_equal(go.split_size[s], gi.split_size[s]);
        if (gi.split_size[s] > 0)
            assert_memory_equal(go.split[s], gi.split[s], sizeof(int64_t) * (size_t)gi.split_size[s]);
    }
    check_node_data(in_path, out_path);
    free(pos);
    free(cand);
    free(train);
    gnn_graph_free(&gi);
    gnn_graph_free(&go);
}

/* ---- Splits --------------------------------------------------------------- */

static void split_ok(const char *in, const char *out, const char *valid, const char *test,
                     const char *k, const char *seed)
{
    char *argv[] = {g_bin, "split-edges", (char *)in, "-o", (char *)out, "--force", "--valid",
                    (char *)valid, "--test", (char *)test, "--neg-per-pos", (char *)k,
                    "--seed", (char *)seed, "-q", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) tu_fail_cmd(argv, &r);
    assert_string_equal(r.err, ""); /* -q: nothing but errors */
    assert_string_equal(r.out, "");
    tu_run_free(&r);
}

static void test_undirected(void **state)
{
    (void)state;
    const char *in = make_input("und.h5", UNDIRECTED, 300, 1500, g_seed);
    const char *out = tu_path("und-split.h5");
    split_ok(in, out, "0.05", "0.1", "1", "7");
    check_split(in, out, 0.05, 0.10, 1);
    split_ok(in, out, "0.2", "0.3", "3", "8");
    check_split(in, out, 0.2, 0.3, 3);
}

/* A graph flagged directed whose every edge is stored both ways (as OGB
 * files of undirected graphs are) is split as undirected: each held-out
 * pair once as (min, max), gone in both directions; the output says so,
 * and is flagged undirected. */
static void test_both_ways_directed(void **state)
{
    (void)state;
    const char *in = make_input("both.h5", BOTH_WAYS_DIRECTED, 200, 900, g_seed + 5);
    const char *out = tu_path("both-split.h5");
    char *argv[] = {g_bin, "split-edges", (char *)in, "-o", (char *)out, "--force", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) tu_fail_cmd(argv, &r);
    assert_non_null(strstr(r.err, "candidate undirected edges held out"));
    tu_run_free(&r);
    gnn_graph_t a, b;
    load(in, &a);
    load(out, &b);
    assert_true(a.directed && !b.directed); /* written as what it is */
    for (int s = 0; s < GNN_NUM_LINK_SETS; s += 2)
        for (int64_t i = 0; i < b.link_size[s]; i++) {
            int64_t u = b.link[s][2 * i], v = b.link[s][2 * i + 1];
            assert_true(u < v);
            assert_true(row_has(&a.csr, v, u) && row_has(&a.csr, u, v));
            assert_false(row_has(&b.csr, v, u) || row_has(&b.csr, u, v));
        }
    gnn_graph_free(&a);
    gnn_graph_free(&b);
}

static void test_directed(void **state)
{
    (void)state;
    const char *in = make_input("dir.h5", DIRECTED, 200, 1200, g_seed + 1);
    gnn_graph_t g;
    load(in, &g);
    gnn_eid_t loops = 0;
    for (gnn_vid_t v = 0; v < g.csr.n_rows; v++) loops += row_has(&g.csr, v, v);
    assert_true(loops > 0); /* self loops stay, never held out */
    gnn_graph_free(&g);
    const char *out = tu_path("dir-split.h5");
    split_ok(in, out, "0.1", "0.15", "2", "3");
    check_split(in, out, 0.1, 0.15, 2);
}

static void test_unsorted(void **state)
{
    (void)state;
    const char *in = make_input("uns.h5", UNSORTED, 150, 900, g_seed + 2);
    const char *out = tu_path("uns-split.h5");
    split_ok(in, out, "0.1", "0.1", "4", "5");
    check_split(in, out, 0.1, 0.1, 4);
}

static void test_sbm(void **state)
{
    (void)state;
    const char *in = tu_path("sbm.h5"), *out = tu_path("sbm-split.h5");
    free(tu_run_ok(g_bin, "generate", "sbm", "-n", "800", "--seed", "4", "-f", "8", "-o", in,
                   "--force", "-q", NULL));
    free(tu_run_ok(g_bin, "split-edges", in, "-o", out, "-q", NULL)); /* the defaults */
    check_split(in, out, 0.05, 0.10, 1);
}

/* The relation of entry u in row v of g (rows sorted within a relation
 * only: a scan), or -1. */
static int32_t rel_in(const gnn_graph_t *g, gnn_vid_t v, gnn_vid_t u)
{
    for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++)
        if (g->csr.indices[e] == u) return g->etype[e];
    return -1;
}

/* A typed graph (hsbm, 3 types, t2 featureless): the split as any
 * graph's, and the output keeps the types (ranges, feature widths,
 * relations) and every kept edge its relation. */
static void test_typed(void **state)
{
    (void)state;
    const char *in = tu_path("hsbm.h5"), *out = tu_path("hsbm-split.h5");
    free(tu_run_ok(g_bin, "generate", "hsbm", "-n", "900", "--featureless", "1", "--seed", "4",
                   "-o", in, "--force", "-q", NULL));
    free(tu_run_ok(g_bin, "split-edges", in, "-o", out, "-q", NULL));
    check_split(in, out, 0.05, 0.10, 1);
    gnn_graph_t a, b;
    load(in, &a);
    load(out, &b);
    assert_non_null(a.types);
    assert_non_null(b.types);
    assert_non_null(b.etype);
    assert_int_equal(b.types->n_ntypes, a.types->n_ntypes);
    assert_int_equal(b.types->n_rels, a.types->n_rels);
    assert_int_equal(b.types->target, a.types->target);
    for (int t = 0; t < a.types->n_ntypes; t++) {
        assert_string_equal(b.types->ntype[t], a.types->ntype[t]);
        assert_int_equal(b.types->off[t + 1], a.types->off[t + 1]);
        assert_int_equal(b.types->feat_dim[t], a.types->feat_dim[t]);
    }
    for (int r = 0; r < a.types->n_rels; r++) {
        assert_string_equal(b.types->rel[r], a.types->rel[r]);
        assert_int_equal(b.types->rel_src[r], a.types->rel_src[r]);
        assert_int_equal(b.types->rel_dst[r], a.types->rel_dst[r]);
    }
    assert_true(b.csr.nnz < a.csr.nnz);
    for (gnn_vid_t v = 0; v < b.csr.n_rows; v++)
        for (gnn_eid_t e = b.csr.indptr[v]; e < b.csr.indptr[v + 1]; e++)
            assert_int_equal(b.etype[e], rel_in(&a, v, b.csr.indices[e]));
    gnn_graph_free(&a);
    gnn_graph_free(&b);
}

/* ---- Determinism ------------------------------------------------------- */

static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    assert_true(fa && fb);
    int same = 1, ca, cb;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        if (ca != cb) same = 0;
    } while (same && ca != EOF);
    fclose(fa);
    fclose(fb);
    return same;
}

static void test_deterministic(void **state)
{
    (void)state;
    const char *in = make_input("det.h5", UNDIRECTED, 300, 1500, g_seed + 3);
    const char *a = tu_path("det-a.h5"), *b = tu_path("det-b.h5"), *c = tu_path("det-c.h5");
    split_ok(in, a, "0.1", "0.1", "2", "11");
    split_ok(in, b, "0.1", "0.1", "2", "11");
    split_ok(in, c, "0.1", "0.1", "2", "12");
    assert_true(same_bytes(a, b));
    assert_false(same_bytes(a, c));
    gnn_graph_t ga, gc;
    load(a, &ga);
    load(c, &gc);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        assert_int_equal(ga.link_size[s], gc.link_size[s]);
        assert_true(memcmp(ga.link[s], gc.link[s], sizeof(int64_t) * 2 * (size_t)ga.link_size[s]));
    }
    gnn_graph_free(&ga);
    gnn_graph_free(&gc);
}

/* ---- info ----------------------------------------------------------------- */

static void test_info(void **state)
{
    (void)state;
    const char *in = make_input("info.h5", UNDIRECTED, 100, 400, g_seed + 4);
    const char *out = tu_path("info-split.h5");
    split_ok(in, out, "0.1", "0.2", "2", "1");
    gnn_graph_t g;
    load(out, &g);
    char want[256], json[256];
    snprintf(want, sizeof want,
             "link sets     valid_pos %lld, valid_neg %lld, test_pos %lld, test_neg %lld "
             "(2 negatives per positive)\n",
             (long long)g.link_size[0], (long long)g.link_size[1], (long long)g.link_size[2],
             (long long)g.link_size[3]);
    snprintf(json, sizeof json,
             "\"link\": {\"neg_per_pos\": 2, \"valid_pos\": %lld, \"valid_neg\": %lld, "
             "\"test_pos\": %lld, \"test_neg\": %lld}",
             (long long)g.link_size[0], (long long)g.link_size[1], (long long)g.link_size[2],
             (long long)g.link_size[3]);
    gnn_graph_free(&g);
    char *text = tu_run_ok(g_bin, "info", out, NULL);
    if (!strstr(text, want)) fail_msg("missing '%s' in:\n%s", want, text);
    free(text);
    text = tu_run_ok(g_bin, "info", out, "--json", NULL);
    if (!strstr(text, json)) fail_msg("missing '%s' in:\n%s", json, text);
    free(text);
    text = tu_run_ok(g_bin, "info", in, NULL);
    assert_non_null(strstr(text, "link sets     none\n"));
    free(text);
    text = tu_run_ok(g_bin, "info", in, "--json", NULL);
    assert_non_null(strstr(text, "\"link\": null"));
    free(text);
}

/* ---- Bad input ------------------------------------------------------------ */

/* An undirected graph of n nodes from the given pairs, no node arrays. */
static const char *write_pairs(const char *name, gnn_vid_t n, int64_t m, const gnn_vid_t *src,
                               const gnn_vid_t *dst)
{
    const char *path = tu_path(name);
    gnn_graph_t g;
    gnn_graph_init(&g);
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &g.csr),
                     0);
    g.csr.flags |= GNN_CSR_SYMMETRIC;
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    return path;
}

static void test_bad_input(void **state)
{
    (void)state;
    const char *in = make_input("bad-in.h5", UNDIRECTED, 60, 200, g_seed + 5);
    const char *out = tu_path("bad-out.h5");
    char *o = (char *)out, *i = (char *)in;
    struct {
        const char *flag, *value, *want;
    } opts[] = {
        {"--valid", "0", "--valid must be in (0, 1) (got 0)"},
        {"--valid", "1", "--valid must be in (0, 1)"},
        {"--valid", "-0.1", "--valid must be in (0, 1)"},
        {"--valid", "nan", "'nan' is not a number"},
        {"--test", "0", "--test must be in (0, 1)"},
        {"--test", "1.5", "--test must be in (0, 1)"},
        {"--neg-per-pos", "0", "--neg-per-pos must be at least 1 (got 0)"},
        {"--neg-per-pos", "-3", "--neg-per-pos must be at least 1"},
        {"--valid", "abc", "--valid"},
    };
    for (size_t j = 0; j < sizeof opts / sizeof opts[0]; j++)
        tu_expect_failure_of(g_bin, out, 2, opts[j].want, "split-edges", i, "-o", o, opts[j].flag,
                             opts[j].value, NULL);
    tu_expect_failure_of(g_bin, out, 2, "--valid + --test must be below 1", "split-edges", i, "-o",
                         o, "--valid", "0.5", "--test", "0.5", NULL);
    tu_expect_failure_of(g_bin, out, 2, "--valid + --test must be below 1", "split-edges", i, "-o",
                         o, "--test", "0.95", NULL); /* with the default --valid 0.05 */
    tu_expect_failure_of(g_bin, out, 2, "missing -o", "split-edges", i, NULL);
    tu_expect_failure_of(g_bin, out, 2, "expected 1 argument", "split-edges", "-o", o, NULL);

    /* Input missing, not HDF5, HDF5 but not a graph file. */
    tu_expect_failure_of(g_bin, out, 1, "/nonexistent/g.h5: No such file or directory",
                         "split-edges", "/nonexistent/g.h5", "-o", o, NULL);
    const char *text = tu_write_file("edges.txt", "0 1\n1 2\n");
    tu_expect_failure_of(g_bin, out, 1, "not an HDF5 file", "split-edges", (char *)text, "-o", o,
                         NULL);
    const char *other = tu_path("other.h5");
    hid_t h = H5Fcreate(other, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(h >= 0);
    H5Fclose(h);
    tu_expect_failure_of(g_bin, out, 1, "not a graph file", "split-edges", (char *)other, "-o", o,
                         NULL);

    /* The output exists: kept as it was without --force. */
    const char *taken = tu_write_file("taken.h5", "keep me");
    tu_expect_failure_of(g_bin, NULL, 1, "file exists (use --force to replace it)",
                         "split-edges", i, "-o", (char *)taken, NULL);
    char *kept = tu_read_file(taken);
    assert_string_equal(kept, "keep me");
    free(kept);

    /* The output is the input, by its name or another (a symbolic link):
     * refused even with --force, the input kept. */
    struct stat before, after;
    assert_int_equal(stat(in, &before), 0);
    tu_expect_failure_of(g_bin, NULL, 2, "names the input file", "split-edges", i, "-o", i,
                         "--force", NULL);
    const char *link = tu_path("in-link.h5");
    (void)unlink(link);
    assert_int_equal(symlink(in, link), 0);
    tu_expect_failure_of(g_bin, NULL, 2, "name another file", "split-edges", i, "-o",
                         (char *)link, "--force", NULL);
    assert_int_equal(stat(in, &after), 0);
    assert_true(after.st_ino == before.st_ino && after.st_size == before.st_size &&
                after.st_mtime == before.st_mtime);

    /* Too few edges to keep one for training: 2 candidates, or a graph
     * whose fractions round to all of its edges. */
    gnn_vid_t s2[] = {0, 1}, d2[] = {1, 2};
    const char *tiny = write_pairs("tiny.h5", 3, 2, s2, d2);
    tu_expect_failure_of(g_bin, out, 1, "2 candidate edges are too few to hold out 1 for validation and 1 for test",
                         "split-edges", (char *)tiny, "-o", o, NULL);
    gnn_vid_t s3[] = {0, 1, 2, 3}, d3[] = {1, 2, 3, 4};
    const char *four = write_pairs("four.h5", 5, 4, s3, d3);
    tu_expect_failure_of(g_bin, out, 1, "4 candidate edges are too few", "split-edges",
                         (char *)four, "-o", o, "--valid", "0.5", "--test", "0.45", NULL);
    /* ... and with 3 candidates and room for one, it splits. */
    gnn_vid_t s4[] = {0, 1, 2}, d4[] = {1, 2, 3};
    const char *three = write_pairs("three.h5", 6, 3, s4, d4);
    free(tu_run_ok(g_bin, "split-edges", (char *)three, "-o", o, "-q", NULL));
    check_split(three, out, 0.05, 0.10, 1);
    remove(out);

    /* A complete graph: no node has a non-neighbour. */
    gnn_vid_t sk[10], dk[10];
    int m = 0;
    for (int a = 0; a < 5; a++)
        for (int b = a + 1; b < 5; b++) {
            sk[m] = a;
            dk[m++] = b;
        }
    const char *complete = write_pairs("complete.h5", 5, m, sk, dk);
    tu_expect_failure_of(g_bin, out, 1, "has no non-neighbour to draw negatives from",
                         "split-edges", (char *)complete, "-o", o, NULL);

    /* A graph already split. */
    const char *split = tu_path("already.h5");
    free(tu_run_ok(g_bin, "split-edges", i, "-o", (char *)split, "-q", NULL));
    tu_expect_failure_of(g_bin, out, 1, "already has link sets", "split-edges", (char *)split, "-o",
                         o, NULL);
}

/* A node adjacent to all but one other: its negatives all name that one
 * (drawn past the rejection limit, by rank). */
static void test_dense_node(void **state)
{
    (void)state;
    enum { NN = 300 };
    gnn_vid_t src[NN + 4], dst[NN + 4];
    int m = 0;
    for (gnn_vid_t v = 1; v < NN; v++)
        if (v != 137) {
            src[m] = 0;
            dst[m++] = v;
        }
    src[m] = 137;
    dst[m++] = 138;
    const char *in = write_pairs("dense.h5", NN, m, src, dst), *out = tu_path("dense-split.h5");
    free(tu_run_ok(g_bin, "split-edges", (char *)in, "-o", (char *)out, "--valid", "0.3", "--test",
                   "0.3", "-k", "5", "-q", NULL));
    check_split(in, out, 0.3, 0.3, 5);
    gnn_graph_t g;
    load(out, &g);
    int hub = 0;
    for (int s = GNN_LINK_VALID_NEG; s <= GNN_LINK_TEST_NEG; s += 2)
        for (int64_t j = 0; j < g.link_size[s]; j++)
            if (g.link[s][2 * j] == 0) {
                assert_int_equal(g.link[s][2 * j + 1], 137);
                hub++;
            }
    assert_true(hub > 0);
    gnn_graph_free(&g);
}

/* Every allocation of the library call failing in turn: GNN_ENOMEM and no
 * file left behind, then success. */
static void test_alloc_failure(void **state)
{
    (void)state;
    const char *in = make_input("alloc.h5", DIRECTED, 80, 300, g_seed + 6);
    const char *out = tu_path("alloc-split.h5");
    gnn_split_edges_opts_t o;
    gnn_split_edges_defaults(&o);
    gnn_output_opts_t oo = {.path = out};
    gnn_log_set_level(GNN_LOG_ERROR);
    int rc = -1, nth;
    for (nth = 1; nth < 10000 && rc != 0; nth++) {
        gnn_alloc_fail_at(nth);
        rc = gnn_split_edges(in, &o, &oo, NULL);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        if (rc != GNN_ENOMEM) fail_msg("allocation %d: %d %s", nth, rc, gnn_error_message());
        tu_assert_no_output(out);
    }
    assert_int_equal(rc, 0);
    assert_true(nth > 10);
    check_split(in, out, 0.05, 0.10, 1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 2;
    }
    g_bin = argv[1];
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_undirected),
        cmocka_unit_test(test_directed),
        cmocka_unit_test(test_both_ways_directed),
        cmocka_unit_test(test_unsorted),
        cmocka_unit_test(test_sbm),
        cmocka_unit_test(test_typed),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_info),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_dense_node),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
