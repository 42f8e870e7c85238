/*
 * gnn-dataset generate, run as a user runs it, with the files checked
 * through the library: R-MAT structure (node count, no self loops,
 * symmetric, deduplicated, flags, degree skew) and determinism; SBM counts,
 * labels, class balance, homophily, mean degree, splits and determinism;
 * the learnability proxies of the default SBM graph (nearest class centroid
 * on raw and on neighbour-averaged features); the typed SBM (hsbm): type
 * sizes, relation names and ends, every edge stored both ways under its
 * reverse relation, labels, splits, features per type, the class rule of
 * each relation measured against --homophily, byte-identical output; and
 * for bad options one error line, exit 2 (or 1) and no file left behind.
 * argv[1] is the path of the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/generate.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"

#include <dirent.h>
#include <math.h>
#include <string.h>

static char *g_bin;

/* Run gnn-dataset with args (NULL-terminated after the binary) and expect
 * success. */
static void run_ok(char *const argv[])
{
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("%s %s %s failed (%d): %s", argv[1], argv[2], argv[3], r.status, r.err);
    tu_run_free(&r);
}

static void load(const char *path, gnn_graph_t *g)
{
    int rc = gnn_graph_load(path, g);
    if (rc != 0) fail_msg("cannot load %s: %d", path, rc);
}

/* True when no file of the test directory starts with name (the output and
 * the writer's temporary "<name>.tmp-PID"). */
static int no_file_named(const char *name)
{
    DIR *d = opendir(tu_tmpdir());
    struct dirent *e;
    int none = 1;
    assert_non_null(d);
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, name, strlen(name))) none = 0;
    closedir(d);
    return none;
}

/* The structure every generated graph promises: valid, symmetric (equal to
 * its transpose), no self loops, no repeated neighbour, undirected. */
static void check_undirected(const gnn_graph_t *g)
{
    const gnn_csr_t *a = &g->csr;
    unsigned want = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC;
    assert_int_equal(a->flags & want, want);
    assert_int_equal(g->directed, 0);
    assert_int_equal(gnn_csr_validate(a), 0);
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            assert_true(a->indices[e] != v);
            if (e > a->indptr[v]) assert_true(a->indices[e - 1] < a->indices[e]);
        }
    gnn_csr_t t;
    assert_int_equal(gnn_csr_transpose(a, &t), 0);
    assert_true(gnn_csr_equal(a, &t));
    gnn_csr_free(&t);
}

static int graphs_equal(const gnn_graph_t *a, const gnn_graph_t *b)
{
    if (!gnn_csr_equal(&a->csr, &b->csr) || a->feat_dim != b->feat_dim ||
        a->num_classes != b->num_classes)
        return 0;
    gnn_vid_t n = a->csr.n_rows;
    if (a->feat_dim && memcmp(a->feat, b->feat, sizeof(float) * (size_t)(n * a->feat_dim)))
        return 0;
    if (!a->label != !b->label) return 0;
    if (a->label && memcmp(a->label, b->label, sizeof(int64_t) * (size_t)n)) return 0;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        if (a->split_size[s] != b->split_size[s]) return 0;
        if (a->split_size[s] > 0 &&
            memcmp(a->split[s], b->split[s], sizeof(int64_t) * (size_t)a->split_size[s]))
            return 0;
    }
    return 1;
}

/* ---- R-MAT -------------------------------------------------------------------- */

static void test_rmat_structure(void **state)
{
    (void)state;
    const char *path = tu_path("rmat10.h5");
    char *argv[] = {g_bin, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--seed",
                    "7", "-o", (char *)path, "-q", NULL};
    run_ok(argv);
    gnn_graph_t g;
    load(path, &g);
    assert_int_equal(g.csr.n_rows, 1024);
    assert_true(g.csr.nnz > 8 * 1024 && g.csr.nnz <= 2 * 8 * 1024);
    check_undirected(&g);
    assert_null(g.label);
    assert_null(g.feat);
    assert_int_equal(g.feat_dim, 0);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) assert_int_equal(g.split_size[s], -1);
    gnn_degree_stats_t st;
    gnn_csr_degree_stats(&g.csr, &st);
    printf("rmat scale 10: %lld stored edges, degree mean %.2f max %lld, %lld isolated\n",
           (long long)g.csr.nnz, st.mean, (long long)st.max, (long long)st.n_zero);
    assert_true((double)st.max > 8 * st.mean); /* skew: hubs */
    assert_true(st.n_zero > 0);                /* and many nodes without edges */
    /* The scramble spreads hubs: the largest is not node 0. */
    assert_true(st.argmax != 0);
    gnn_graph_free(&g);
}

static void test_rmat_deterministic(void **state)
{
    (void)state;
    const char *p1 = tu_path("rmat-a.h5"), *p2 = tu_path("rmat-b.h5"), *p3 = tu_path("rmat-c.h5");
    char *a1[] = {g_bin, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--feat-dim",
                  "5", "--seed", "3", "-o", (char *)p1, "-q", NULL};
    char *a2[] = {g_bin, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--feat-dim",
                  "5", "--seed", "3", "-o", (char *)p2, "-q", NULL};
    char *a3[] = {g_bin, "generate", "rmat", "--scale", "10", "--edge-factor", "8", "--feat-dim",
                  "5", "--seed", "4", "-o", (char *)p3, "-q", NULL};
    run_ok(a1);
    run_ok(a2);
    run_ok(a3);
    gnn_graph_t g1, g2, g3;
    load(p1, &g1);
    load(p2, &g2);
    load(p3, &g3);
    assert_int_equal(g1.feat_dim, 5);
    assert_true(graphs_equal(&g1, &g2));
    assert_false(gnn_csr_equal(&g1.csr, &g3.csr));
    assert_true(memcmp(g1.feat, g3.feat, sizeof(float) * 5 * 1024) != 0);
    /* Features are N(0, 1). */
    double sum = 0, sq = 0;
    for (int i = 0; i < 5 * 1024; i++) {
        sum += g1.feat[i];
        sq += (double)g1.feat[i] * g1.feat[i];
    }
    assert_true(fabs(sum / 5120) < 0.1);
    assert_true(fabs(sq / 5120 - 1) < 0.1);
    gnn_graph_free(&g1);
    gnn_graph_free(&g2);
    gnn_graph_free(&g3);
}

/* Out of core: 131K edges through a 1.5 MB budget (the builder spills to
 * --tmpdir and builds in several passes) give the same file as in memory. */
static void test_rmat_out_of_core(void **state)
{
    (void)state;
    const char *p1 = tu_path("rmat14.h5"), *p2 = tu_path("rmat14-ooc.h5");
    char *a1[] = {g_bin, "generate", "rmat", "--scale", "14", "--edge-factor", "8", "--seed", "2",
                  "-o", (char *)p1, "-q", NULL};
    char *a2[] = {g_bin, "generate", "rmat", "--scale", "14", "--edge-factor", "8", "--seed", "2",
                  "-o", (char *)p2, "--mem-budget", "1536K", "--tmpdir", (char *)tu_tmpdir(),
                  "-v", NULL};
    run_ok(a1);
    tu_run_t r = tu_run(a2);
    if (r.status != 0) fail_msg("out-of-core run failed: %s", r.err);
    printf("%s", r.err);
    tu_run_free(&r);
    gnn_graph_t g1, g2;
    load(p1, &g1);
    load(p2, &g2);
    check_undirected(&g2);
    assert_true(graphs_equal(&g1, &g2));
    gnn_graph_free(&g1);
    gnn_graph_free(&g2);
}

static void test_rmat_scramble_bijective(void **state)
{
    (void)state;
    for (int scale = 1; scale <= 14; scale++) {
        gnn_vid_t n = (gnn_vid_t)1 << scale;
        unsigned char *seen = calloc((size_t)n, 1);
        for (gnn_vid_t v = 0; v < n; v++) {
            gnn_vid_t p = gnn_rmat_scramble(v, scale, 99);
            assert_true(p >= 0 && p < n);
            assert_false(seen[p]);
            seen[p] = 1;
        }
        free(seen);
    }
    /* The seed changes the permutation. */
    int differ = 0;
    for (gnn_vid_t v = 0; v < 64; v++)
        differ += gnn_rmat_scramble(v, 20, 1) != gnn_rmat_scramble(v, 20, 2);
    assert_true(differ > 32);
}

/* ---- SBM ---------------------------------------------------------------------- */

static double homophily(const gnn_graph_t *g)
{
    int64_t same = 0;
    for (gnn_vid_t v = 0; v < g->csr.n_rows; v++)
        for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++)
            same += g->label[v] == g->label[g->csr.indices[e]];
    return (double)same / (double)g->csr.nnz;
}

static void check_sbm_small(const char *h_text, double h)
{
    char name[64];
    snprintf(name, sizeof name, "sbm-small-%s.h5", h_text);
    const char *path = tu_path(name);
    char *argv[] = {g_bin, "generate", "sbm", "--nodes", "2000", "--classes", "4", "--feat-dim",
                    "16", "--avg-degree", "10", "--homophily", (char *)h_text, "--seed", "5",
                    "-o", (char *)path, "-q", NULL};
    run_ok(argv);
    gnn_graph_t g;
    load(path, &g);
    assert_int_equal(g.csr.n_rows, 2000);
    assert_int_equal(g.num_classes, 4);
    assert_int_equal(g.feat_dim, 16);
    assert_non_null(g.label);
    check_undirected(&g);
    int64_t count[4] = {0};
    for (int v = 0; v < 2000; v++) {
        assert_true(g.label[v] >= 0 && g.label[v] < 4);
        count[g.label[v]]++;
    }
    for (int k = 0; k < 4; k++) assert_int_equal(count[k], 500);
    double hom = homophily(&g), deg = (double)g.csr.nnz / 2000;
    printf("sbm N=2000 C=4 D=10 H=%s: homophily %.3f, mean degree %.2f\n", h_text, hom, deg);
    assert_true(fabs(hom - h) <= 0.05);
    assert_true(fabs(deg - 10) <= 1.5);
    /* Splits: 10% / 10% / 80%, ascending, disjoint, covering every node. */
    int64_t want[GNN_NUM_SPLITS] = {200, 200, 1600};
    unsigned char *in = calloc(2000, 1);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        assert_int_equal(g.split_size[s], want[s]);
        for (int64_t i = 0; i < g.split_size[s]; i++) {
            int64_t v = g.split[s][i];
            if (i > 0) assert_true(g.split[s][i - 1] < v);
            assert_false(in[v]);
            in[v] = 1;
        }
    }
    free(in);
    gnn_graph_free(&g);
}

static void test_sbm_small(void **state)
{
    (void)state;
    check_sbm_small("0.7", 0.7);
    check_sbm_small("0.2", 0.2);
}

static void test_sbm_deterministic(void **state)
{
    (void)state;
    const char *p1 = tu_path("sbm-a.h5"), *p2 = tu_path("sbm-b.h5"), *p3 = tu_path("sbm-c.h5");
    char *a1[] = {g_bin, "generate", "sbm", "--nodes", "1500", "--classes", "3", "--feat-dim", "8",
                  "--seed", "11", "-o", (char *)p1, "-q", NULL};
    char *a2[] = {g_bin, "generate", "sbm", "--nodes", "1500", "--classes", "3", "--feat-dim", "8",
                  "--seed", "11", "-o", (char *)p2, "-q", NULL};
    char *a3[] = {g_bin, "generate", "sbm", "--nodes", "1500", "--classes", "3", "--feat-dim", "8",
                  "--seed", "12", "-o", (char *)p3, "-q", NULL};
    run_ok(a1);
    run_ok(a2);
    run_ok(a3);
    gnn_graph_t g1, g2, g3;
    load(p1, &g1);
    load(p2, &g2);
    load(p3, &g3);
    assert_true(graphs_equal(&g1, &g2));
    assert_false(gnn_csr_equal(&g1.csr, &g3.csr));
    assert_true(memcmp(g1.feat, g3.feat, sizeof(float) * 8 * 1500) != 0);
    assert_true(memcmp(g1.label, g3.label, sizeof(int64_t) * 1500) != 0);
    gnn_graph_free(&g1);
    gnn_graph_free(&g2);
    gnn_graph_free(&g3);
}

/* Nearest class centroid (centroids from the train nodes) on x: accuracy
 * over the test nodes. */
static double centroid_accuracy(const gnn_graph_t *g, const float *x)
{
    int64_t f = g->feat_dim, c = g->num_classes;
    double *mu = calloc((size_t)(c * f), sizeof *mu);
    int64_t *cnt = calloc((size_t)c, sizeof *cnt), ok = 0;
    for (int64_t i = 0; i < g->split_size[GNN_SPLIT_TRAIN]; i++) {
        int64_t v = g->split[GNN_SPLIT_TRAIN][i], k = g->label[v];
        cnt[k]++;
        for (int64_t j = 0; j < f; j++) mu[k * f + j] += x[v * f + j];
    }
    for (int64_t k = 0; k < c; k++)
        for (int64_t j = 0; j < f; j++) mu[k * f + j] /= cnt[k] ? (double)cnt[k] : 1.0;
    for (int64_t i = 0; i < g->split_size[GNN_SPLIT_TEST]; i++) {
        int64_t v = g->split[GNN_SPLIT_TEST][i], best = -1;
        double bd = INFINITY;
        for (int64_t k = 0; k < c; k++) {
            double d = 0;
            for (int64_t j = 0; j < f; j++) {
                double t = x[v * f + j] - mu[k * f + j];
                d += t * t;
            }
            if (d < bd) {
                bd = d;
                best = k;
            }
        }
        ok += best == g->label[v];
    }
    free(mu);
    free(cnt);
    return (double)ok / (double)g->split_size[GNN_SPLIT_TEST];
}

/* Mean of x over each node and its neighbours (one GCN-like hop). */
static float *mean_hop(const gnn_graph_t *g, const float *x)
{
    int64_t n = g->csr.n_rows, f = g->feat_dim;
    float *y = malloc(sizeof *y * (size_t)(n * f));
    double *acc = malloc(sizeof *acc * (size_t)f);
    for (int64_t v = 0; v < n; v++) {
        for (int64_t j = 0; j < f; j++) acc[j] = x[v * f + j];
        for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++)
            for (int64_t j = 0; j < f; j++) acc[j] += x[g->csr.indices[e] * f + j];
        double d = 1.0 + (double)(g->csr.indptr[v + 1] - g->csr.indptr[v]);
        for (int64_t j = 0; j < f; j++) y[v * f + j] = (float)(acc[j] / d);
    }
    free(acc);
    return y;
}

/* The embedded default (`generate sbm --seed 1`): learnable, not trivial. */
static void test_sbm_default_proxies(void **state)
{
    (void)state;
    const char *path = tu_path("sbm-default.h5");
    char *argv[] = {g_bin, "generate", "sbm", "--seed", "1", "-o", (char *)path, "-q", NULL};
    double t0 = gnn_now();
    run_ok(argv);
    double secs = gnn_now() - t0;
    gnn_graph_t g;
    load(path, &g);
    gnn_sbm_opts_t d;
    gnn_sbm_defaults(&d);
    assert_int_equal(g.csr.n_rows, d.nodes);
    assert_int_equal(g.num_classes, d.classes);
    assert_int_equal(g.feat_dim, d.feat_dim);
    float *h1 = mean_hop(&g, g.feat), *h2 = mean_hop(&g, h1);
    double chance = 1.0 / (double)g.num_classes;
    double a = centroid_accuracy(&g, g.feat), b1 = centroid_accuracy(&g, h1),
           b2 = centroid_accuracy(&g, h2);
    printf("default sbm (%.2f s): %lld nodes, mean degree %.2f, homophily %.3f; nearest centroid "
           "accuracy: raw %.3f, 1 hop %.3f, 2 hops %.3f (chance %.3f)\n",
           secs, (long long)g.csr.n_rows, (double)g.csr.nnz / (double)g.csr.n_rows, homophily(&g),
           a, b1, b2, chance);
    assert_true(a > 2 * chance && a >= 0.35 && a <= 0.7);
    assert_true(b1 > a + 0.15);
    assert_true(b2 > a + 0.2 && b2 >= 0.7 && b2 < 0.97);
    free(h1);
    free(h2);
    gnn_graph_free(&g);
}

static void test_feat_dim_zero(void **state)
{
    (void)state;
    const char *path = tu_path("sbm-nofeat.h5");
    char *argv[] = {g_bin, "generate", "sbm", "--nodes", "300", "--classes", "3", "--feat-dim", "0",
                    "-o", (char *)path, "-q", NULL};
    run_ok(argv);
    gnn_graph_t g;
    load(path, &g);
    assert_int_equal(g.feat_dim, 0);
    assert_null(g.feat);
    assert_non_null(g.label);
    check_undirected(&g);
    gnn_graph_free(&g);
}

/* ---- Typed SBM (hsbm) ------------------------------------------------------------ */

typedef struct {
    const char *nodes, *types, *classes, *feat_dim, *featureless, *avg_degree, *homophily, *seed;
} hsbm_args_t;

/* gnn-dataset generate hsbm with a's options into path. */
static void run_hsbm(const hsbm_args_t *a, const char *path)
{
    char *argv[] = {g_bin, "generate", "hsbm", "--nodes", (char *)a->nodes, "--types",
                    (char *)a->types, "--classes", (char *)a->classes, "--feat-dim",
                    (char *)a->feat_dim, "--featureless", (char *)a->featureless,
                    "--avg-degree", (char *)a->avg_degree, "--homophily", (char *)a->homophily,
                    "--seed", (char *)a->seed, "-o", (char *)path, "--force", "-q", NULL};
    run_ok(argv);
}

/* The relation stored for the other direction: r0 itself, rK <-> rev_rK. */
static int32_t hsbm_reverse(int32_t r) { return r == 0 ? 0 : r % 2 ? r + 1 : r - 1; }

/* The latent class of node v: its index inside its type mod C. */
static int64_t hsbm_class(const gnn_graph_types_t *t, gnn_vid_t v, int64_t C)
{
    return (v - t->off[gnn_graph_types_of(t, v)]) % C;
}

/* The class rule of relation K (r0 and odd K: the same class, even K: the
 * partner c ^ 1, the last class of an odd C its own partner). */
static int64_t hsbm_rule(int K, int64_t c, int64_t C)
{
    if (K == 0 || K % 2 == 1) return c;
    return (c ^ 1) < C ? c ^ 1 : c;
}

/* Whether row v holds source u with relation r. */
static int has_entry(const gnn_graph_t *g, gnn_vid_t v, gnn_vid_t u, int32_t r)
{
    for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++)
        if (g->csr.indices[e] == u && g->etype[e] == r) return 1;
    return 0;
}

typedef struct {
    int64_t edges[2 * 32 - 1]; /* stored edges per relation */
    double rule[32];           /* per K: fraction of rK edges following the class rule */
    double same[32];           /* per K: fraction of rK edges joining equal classes */
} hsbm_stats_t;

/*
 * Check the file of an hsbm run with N nodes, T types, C classes, F
 * features (the last `featureless` types none), D, H, and gather its
 * per-relation figures: the documented type sizes and names, every edge
 * joining its relation's types and stored both ways, labels by the class
 * rule on t0 only, splits covering t0, features by type.
 */
static void check_hsbm(const char *path, gnn_vid_t N, int T, int64_t C, int64_t F,
                       int featureless, double D, gnn_graph_t *g, hsbm_stats_t *st)
{
    load(path, g);
    const gnn_graph_types_t *t = g->types;
    assert_non_null(t);
    assert_non_null(g->etype);
    /* Types: t0 takes N - (T - 1) floor(N / T), the others floor(N / T). */
    gnn_vid_t per = N / T, n0 = N - (T - 1) * per;
    assert_int_equal(t->n_ntypes, T);
    assert_int_equal(t->target, 0);
    assert_int_equal(t->off[0], 0);
    assert_int_equal(t->off[1], n0);
    char name[32];
    for (int k = 0; k < T; k++) {
        snprintf(name, sizeof name, "t%d", k);
        assert_string_equal(t->ntype[k], name);
        if (k > 0) assert_int_equal(t->off[k + 1] - t->off[k], per);
        assert_int_equal(t->feat_dim[k], k >= T - featureless && k > 0 ? 0 : F);
    }
    /* Relations: r0 (t0 -> t0), then rK (tK -> t0) and rev_rK (t0 -> tK). */
    assert_int_equal(t->n_rels, 1 + 2 * (T - 1));
    assert_string_equal(t->rel[0], "r0");
    assert_true(t->rel_src[0] == 0 && t->rel_dst[0] == 0);
    for (int k = 1; k < T; k++) {
        snprintf(name, sizeof name, "r%d", k);
        assert_string_equal(t->rel[2 * k - 1], name);
        assert_true(t->rel_src[2 * k - 1] == k && t->rel_dst[2 * k - 1] == 0);
        snprintf(name, sizeof name, "rev_r%d", k);
        assert_string_equal(t->rel[2 * k], name);
        assert_true(t->rel_src[2 * k] == 0 && t->rel_dst[2 * k] == k);
    }
    /* Structure: undirected, each edge u -r-> v also stored as v -> u with
     * the reverse relation, and joining the types of its relation. */
    unsigned want = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC;
    assert_int_equal(g->csr.flags, want);
    assert_int_equal(g->directed, 0);
    assert_int_equal(gnn_csr_validate(&g->csr), 0);
    memset(st, 0, sizeof *st);
    int64_t rule[32] = {0}, same[32] = {0};
    for (gnn_vid_t v = 0; v < N; v++)
        for (gnn_eid_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++) {
            gnn_vid_t u = g->csr.indices[e];
            int32_t r = g->etype[e];
            assert_true(r >= 0 && r < t->n_rels);
            int tu = gnn_graph_types_of(t, u), tv = gnn_graph_types_of(t, v);
            if (tu != t->rel_src[r] || tv != t->rel_dst[r])
                fail_msg("edge %lld -> %lld of relation %s joins types %d -> %d", (long long)u,
                         (long long)v, t->rel[r], tu, tv);
            if (!has_entry(g, u, v, hsbm_reverse(r)))
                fail_msg("edge %lld -%s-> %lld has no reverse %s", (long long)u, t->rel[r],
                         (long long)v, t->rel[hsbm_reverse(r)]);
            st->edges[r]++;
            if (r % 2 == 0 && r > 0) continue; /* rev_rK: counted as rK */
            int K = (r + 1) / 2;
            int64_t cv = hsbm_class(t, v, C), cu = hsbm_class(t, u, C); /* v in t0 */
            rule[K] += cu == hsbm_rule(K, cv, C);
            same[K] += cu == cv;
        }
    for (int K = 0; K < T; K++) {
        int32_t r = K == 0 ? 0 : 2 * K - 1;
        st->rule[K] = (double)rule[K] / (double)st->edges[r];
        st->same[K] = (double)same[K] / (double)st->edges[r];
    }
    /* Edge counts: M_K = round(n0 D) generated per rK (r0: round(n0 D / 2),
     * each stored both ways as r0), less repeats. */
    for (int K = 0; K < T; K++) {
        int32_t r = K == 0 ? 0 : 2 * K - 1;
        double m = K == 0 ? 2.0 * (double)llround((double)n0 * D * 0.5)
                          : (double)llround((double)n0 * D);
        if (K > 0) assert_int_equal(st->edges[r], st->edges[r + 1]);
        if (K == 0) assert_int_equal(st->edges[0] % 2, 0);
        if (!(st->edges[r] <= m && st->edges[r] >= 0.9 * m))
            fail_msg("relation %s: %lld stored edges, expected %.0f less a few repeats", t->rel[r],
                     (long long)st->edges[r], m);
    }
    /* Labels: t0 by the class rule, the other types unlabelled. */
    assert_int_equal(g->num_classes, C);
    for (gnn_vid_t v = 0; v < N; v++) assert_int_equal(g->label[v], v < n0 ? v % C : -1);
    /* Splits: each t0 node in exactly one, no other node, about 10/10/80 %. */
    unsigned char *in = calloc((size_t)N, 1);
    int64_t covered = 0;
    const double frac[GNN_NUM_SPLITS] = {0.1, 0.1, 0.8};
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        for (int64_t i = 0; i < g->split_size[s]; i++) {
            int64_t v = g->split[s][i];
            assert_true(v >= 0 && v < n0);
            assert_false(in[v]);
            in[v] = 1;
            covered++;
        }
        assert_true(fabs((double)g->split_size[s] - frac[s] * (double)n0) <= 0.07 * (double)n0);
    }
    assert_int_equal(covered, n0);
    free(in);
    /* Features: the widest type's width; featureless types read as zeros. */
    assert_int_equal(g->feat_dim, F);
    for (int k = T - featureless; k < T; k++)
        for (int64_t i = t->off[k] * F; i < t->off[k + 1] * F; i++) assert_true(g->feat[i] == 0.0f);
}

/* Mean feature row of the nodes of type k and class c (into mu, F values). */
static void class_mean(const gnn_graph_t *g, int k, int64_t c, int64_t C, double *mu)
{
    const gnn_graph_types_t *t = g->types;
    int64_t F = g->feat_dim, n = 0;
    for (int64_t j = 0; j < F; j++) mu[j] = 0;
    for (gnn_vid_t v = t->off[k] + c; v < t->off[k + 1]; v += C, n++)
        for (int64_t j = 0; j < F; j++) mu[j] += g->feat[v * F + j];
    for (int64_t j = 0; j < F; j++) mu[j] /= (double)n;
}

static double norm_diff(const double *a, const double *b, int64_t n)
{
    double s = 0;
    for (int64_t j = 0; j < n; j++) s += (a[j] - (b ? b[j] : 0)) * (a[j] - (b ? b[j] : 0));
    return sqrt(s);
}

static void test_hsbm_structure(void **state)
{
    (void)state;
    const char *path = tu_path("hsbm.h5");
    hsbm_args_t a = {"2003", "4", "4", "6", "1", "6", "0.75", "9"};
    run_hsbm(&a, path);
    gnn_graph_t g;
    hsbm_stats_t st;
    check_hsbm(path, 2003, 4, 4, 6, 1, 6.0, &g, &st);
    /* The class rule holds for H + (1 - H) / C of each relation's edges
     * (a uniform class can follow it too); for even K that is the partner
     * rule, so equal classes are only the uniform share. */
    const double H = 0.75, C = 4, want = H + (1 - H) / C;
    for (int K = 0; K < 4; K++) {
        printf("hsbm H=0.75 C=4: relation r%d: %lld edges, rule %.3f (expected %.3f), equal "
               "classes %.3f\n",
               K, (long long)st.edges[K ? 2 * K - 1 : 0], st.rule[K], want, st.same[K]);
        assert_true(fabs(st.rule[K] - want) <= 0.03);
        if (K == 2) assert_true(fabs(st.same[K] - (1 - H) / C) <= 0.03);
        else assert_true(st.same[K] == st.rule[K]);
    }
    /* Features: t0 pure noise around 0; t1 and t2 their class's unit
     * centroid (one set of centroids for all types) plus noise. */
    double mu0[6], mu1[6], mu2[6];
    for (int64_t c = 0; c < 4; c++) {
        class_mean(&g, 0, c, 4, mu0);
        class_mean(&g, 1, c, 4, mu1);
        class_mean(&g, 2, c, 4, mu2);
        printf("class %lld: |mean t0| %.3f, |mean t1| %.3f, |mean t2| %.3f, |t1 - t2| %.3f\n",
               (long long)c, norm_diff(mu0, NULL, 6), norm_diff(mu1, NULL, 6),
               norm_diff(mu2, NULL, 6), norm_diff(mu1, mu2, 6));
        assert_true(norm_diff(mu0, NULL, 6) < 0.5);
        assert_true(fabs(norm_diff(mu1, NULL, 6) - 1) < 0.4);
        assert_true(fabs(norm_diff(mu2, NULL, 6) - 1) < 0.4);
        assert_true(norm_diff(mu1, mu2, 6) < 0.5);
    }
    gnn_graph_free(&g);
}

/* H = 1: every edge follows its relation's rule, including the last class
 * of an odd C, its own partner; H = 0: classes are uniform. */
static void test_hsbm_class_rule(void **state)
{
    (void)state;
    const char *path = tu_path("hsbm-h1.h5");
    hsbm_args_t a = {"905", "3", "3", "2", "0", "4", "1", "2"};
    run_hsbm(&a, path);
    gnn_graph_t g;
    hsbm_stats_t st;
    check_hsbm(path, 905, 3, 3, 2, 0, 4.0, &g, &st);
    for (int K = 0; K < 3; K++) assert_true(st.rule[K] == 1.0);
    /* r2: classes 0 and 1 swap, class 2 stays. */
    int64_t to[3][3] = {{0}};
    for (gnn_vid_t v = 0; v < g.types->off[1]; v++)
        for (gnn_eid_t e = g.csr.indptr[v]; e < g.csr.indptr[v + 1]; e++)
            if (g.etype[e] == 3) to[v % 3][hsbm_class(g.types, g.csr.indices[e], 3)]++;
    printf("r2 with H=1, C=3: class 0 -> %lld, %lld, %lld; 1 -> %lld, %lld, %lld; 2 -> %lld, "
           "%lld, %lld\n",
           (long long)to[0][0], (long long)to[0][1], (long long)to[0][2], (long long)to[1][0],
           (long long)to[1][1], (long long)to[1][2], (long long)to[2][0], (long long)to[2][1],
           (long long)to[2][2]);
    assert_true(to[0][1] > 0 && to[1][0] > 0 && to[2][2] > 0);
    assert_int_equal(to[0][0] + to[0][2] + to[1][1] + to[1][2] + to[2][0] + to[2][1], 0);
    gnn_graph_free(&g);

    path = tu_path("hsbm-h0.h5");
    hsbm_args_t b = {"2000", "2", "5", "3", "1", "8", "0", "4"};
    run_hsbm(&b, path);
    check_hsbm(path, 2000, 2, 5, 3, 1, 8.0, &g, &st);
    printf("hsbm H=0 C=5: rule r0 %.3f, r1 %.3f (expected 0.2)\n", st.rule[0], st.rule[1]);
    assert_true(fabs(st.rule[0] - 0.2) <= 0.03 && fabs(st.rule[1] - 0.2) <= 0.03);
    assert_int_equal(g.types->feat_dim[1], 0); /* --featureless 1 */
    gnn_graph_free(&g);
}

/* The same options give the same file bytes, whatever the thread count; a
 * different seed another graph of the same shape. */
static void test_hsbm_deterministic(void **state)
{
    (void)state;
    const char *p1 = tu_path("hsbm-a.h5"), *p2 = tu_path("hsbm-b.h5"), *p3 = tu_path("hsbm-c.h5");
    hsbm_args_t a = {"1500", "3", "4", "5", "1", "5", "0.8", "11"};
    run_hsbm(&a, p1);
    setenv("OMP_NUM_THREADS", "1", 1);
    run_hsbm(&a, p2);
    unsetenv("OMP_NUM_THREADS");
    a.seed = "12";
    run_hsbm(&a, p3);
    struct stat s1, s2;
    assert_int_equal(stat(p1, &s1), 0);
    assert_int_equal(stat(p2, &s2), 0);
    assert_int_equal(s1.st_size, s2.st_size);
    char *b1 = tu_read_file(p1), *b2 = tu_read_file(p2);
    assert_memory_equal(b1, b2, (size_t)s1.st_size);
    free(b1);
    free(b2);
    gnn_graph_t g1, g3;
    load(p1, &g1);
    load(p3, &g3);
    assert_int_equal(g1.types->n_rels, g3.types->n_rels);
    assert_memory_equal(g1.types->off, g3.types->off, sizeof(int64_t) * 4);
    assert_false(gnn_csr_equal(&g1.csr, &g3.csr));
    assert_true(memcmp(g1.feat, g3.feat, sizeof(float) * 5 * 500) != 0);
    assert_memory_equal(g1.label, g3.label, sizeof(int64_t) * 1500); /* the rule, not the seed */
    gnn_graph_free(&g1);
    gnn_graph_free(&g3);
}

/* gnn_hsbm_check: each bad option is GNN_EUSAGE naming it. */
static void test_hsbm_check(void **state)
{
    (void)state;
    gnn_hsbm_opts_t d, o;
    gnn_hsbm_defaults(&d);
    assert_int_equal(gnn_hsbm_check(&d), 0);
    struct {
        const char *want;
        int field;
        double v;
    } cases[] = {
        {"--types must be in [2, 32] (got 1)", 0, 1},
        {"--types must be in [2, 32] (got 33)", 0, 33},
        {"--classes must be in [2, 2^20] (got 1)", 1, 1},
        {"--classes must be in [2, 2^20] (got 1048577)", 1, 1048577},
        {"--nodes must be at least --types x --classes = 24 and at most 2^38 (got 23)", 2, 23},
        {"--nodes must be at least --types x --classes = 24 and at most 2^38 (got 274877906945)",
         2, 274877906945.0},
        {"--feat-dim must be in [1, 65536] (got 0)", 3, 0},
        {"--feat-dim must be in [1, 65536] (got 65537)", 3, 65537},
        {"--featureless must be in [0, --types - 1 = 2] (got 3)", 4, 3},
        {"--featureless must be in [0, --types - 1 = 2] (got -1)", 4, -1},
        {"--avg-degree must be in (0, 1000] (got 0)", 5, 0},
        {"--avg-degree must be in (0, 1000] (got 1000.5)", 5, 1000.5},
        {"--avg-degree must be in (0, 1000] (got nan)", 5, NAN},
        {"--homophily must be in [0, 1] (got -0.1)", 6, -0.1},
        {"--homophily must be in [0, 1] (got 1.5)", 6, 1.5},
        {"--homophily must be in [0, 1] (got nan)", 6, NAN},
        {"feature noise must not be negative (got -1)", 7, -1},
        {"split fractions must be in [0, 1] and sum to at most 1", 8, 0.95},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o = d;
        double v = cases[i].v;
        switch (cases[i].field) {
        case 0: o.types = (int)v; break;
        case 1: o.classes = (int)v; break;
        case 2: o.nodes = (gnn_vid_t)v; break;
        case 3: o.feat_dim = (int)v; break;
        case 4: o.featureless = (int)v; break;
        case 5: o.avg_degree = v; break;
        case 6: o.homophily = v; break;
        case 7: o.feat_noise = v; break;
        default: o.train_frac = v; break; /* with valid_frac 0.1: over 1 */
        }
        int rc = gnn_hsbm_check(&o);
        if (rc != GNN_EUSAGE || strcmp(gnn_error_message(), cases[i].want))
            fail_msg("case %zu: got %d '%s', expected GNN_EUSAGE '%s'", i, rc,
                     gnn_error_message(), cases[i].want);
    }
    /* The edges of the range are accepted. */
    o = d;
    o.types = 32;
    o.classes = 2;
    o.nodes = 64;
    o.featureless = 31;
    o.homophily = 0;
    o.avg_degree = 1000;
    assert_int_equal(gnn_hsbm_check(&o), 0);
    /* The generator checks first and writes nothing. */
    o = d;
    o.homophily = 2;
    gnn_output_opts_t out = {.path = tu_path("hsbm-bad.h5"), .force = 1};
    assert_int_equal(gnn_generate_hsbm(&o, &out), GNN_EUSAGE);
    assert_true(no_file_named("hsbm-bad.h5"));
}

/* ---- Failure paths ------------------------------------------------------------- */

/* Fail the 1st, 2nd, ... allocation of a whole generation until it
 * succeeds: each failure is GNN_ENOMEM with no file left (and, under the
 * sanitizer build, nothing leaked), except for the progress reporter's,
 * which is allowed to fail without stopping the work. */
static void test_alloc_failure(void **state)
{
    (void)state;
    gnn_log_set_level(GNN_LOG_ERROR);
    gnn_sbm_opts_t so;
    gnn_sbm_defaults(&so);
    so.nodes = 300;
    so.classes = 3;
    so.feat_dim = 4;
    gnn_rmat_opts_t ro;
    gnn_rmat_defaults(&ro);
    ro.scale = 6;
    ro.feat_dim = 3;
    gnn_hsbm_opts_t ho;
    gnn_hsbm_defaults(&ho);
    ho.nodes = 120;
    ho.classes = 3;
    ho.feat_dim = 4;
    ho.featureless = 1;
    const char *names[] = {"alloc-sbm.h5", "alloc-rmat.h5", "alloc-hsbm.h5"};
    for (int which = 0; which < 3; which++) {
        const char *name = names[which];
        gnn_output_opts_t out = {.path = tu_path(name), .force = 1};
        int64_t nth = 1;
        for (;; nth++) {
            gnn_alloc_fail_at(nth);
            int rc = which == 2   ? gnn_generate_hsbm(&ho, &out)
                     : which == 1 ? gnn_generate_rmat(&ro, &out)
                                  : gnn_generate_sbm(&so, &out);
            int failed = gnn_alloc_failed();
            gnn_alloc_fail_at(0);
            if (rc == 0 && !failed) break;
            if (rc == 0) { /* an optional allocation (a progress line) */
                assert_true(tu_exists(out.path));
                unlink(out.path);
                continue;
            }
            if (rc != GNN_ENOMEM)
                fail_msg("%s, allocation %lld failed: rc %d (%s)", name, (long long)nth, rc,
                         gnn_error_message());
            assert_true(no_file_named(name));
        }
        assert_true(tu_exists(out.path));
        printf("%s: %lld allocations, each failure handled\n", name, (long long)nth - 1);
    }
    gnn_log_set_level(GNN_LOG_INFO);
}

/* ---- Command line --------------------------------------------------------------- */


#define BAD(status, want, ...)                                                              \
    do {                                                                                    \
        char *argv_[] = {g_bin, "generate", __VA_ARGS__, "-o", (char *)tu_path("bad.h5"), NULL}; \
        tu_expect_failure(argv_, tu_path("bad.h5"), status, want);                                      \
    } while (0)

static void test_bad_options(void **state)
{
    (void)state;
    BAD(2, "--nodes must be at least --classes", "sbm", "--nodes", "3", "--classes", "4");
    BAD(2, "--classes must be at least 2", "sbm", "--classes", "1");
    BAD(2, "--homophily must be in [0, 1]", "sbm", "--homophily", "1.5");
    BAD(2, "--homophily must be in [0, 1]", "sbm", "--homophily", "-0.1");
    BAD(2, "--avg-degree must be in (0, --nodes)", "sbm", "--avg-degree", "0");
    BAD(2, "--avg-degree must be in (0, --nodes)", "sbm", "--nodes", "100", "--avg-degree", "100");
    BAD(2, "--feat-dim must not be negative", "sbm", "--feat-dim", "-1");
    BAD(2, "--nodes 2199023255553 is beyond the limit", "sbm", "--nodes", "2199023255553");
    BAD(2, "--scale must be in 1..40", "rmat", "--scale", "0");
    BAD(2, "--scale must be in 1..40", "rmat", "--scale", "41");
    BAD(2, "--edge-factor must be positive", "rmat", "--edge-factor", "0");
    BAD(2, "too many edges", "rmat", "--scale", "40", "--edge-factor", "4194304");
    BAD(2, "--feat-dim must not be negative", "rmat", "--feat-dim", "-3");
    BAD(2, "unknown generator 'ba'", "ba");
    BAD(2, "unknown option '--nodes'", "rmat", "--nodes", "5");
    BAD(2, "--classes", "sbm", "--classes", "two");
    /* Usage errors of a generator point at its own help. */
    BAD(2, "(see gnn-dataset generate sbm --help)", "sbm", "--classes", "1");
    BAD(2, "(see gnn-dataset generate rmat --help)", "rmat", "--nodes", "5");
    BAD(2, "(see gnn-dataset generate --help)", "ba");
    BAD(2, "--types must be in [2, 32] (got 1)", "hsbm", "--types", "1");
    BAD(2, "--classes must be in [2, 2^20] (got 1)", "hsbm", "--classes", "1");
    BAD(2, "--nodes must be at least --types x --classes = 24 and at most 2^38 (got 23)", "hsbm",
        "--nodes", "23");
    BAD(2, "--feat-dim must be in [1, 65536] (got 0)", "hsbm", "--feat-dim", "0");
    BAD(2, "--featureless must be in [0, --types - 1 = 2] (got 3)", "hsbm", "--featureless", "3");
    BAD(2, "--avg-degree must be in (0, 1000] (got 0)", "hsbm", "--avg-degree", "0");
    BAD(2, "--homophily must be in [0, 1] (got 1.5)", "hsbm", "--homophily", "1.5");
    BAD(2, "unknown option '--scale'", "hsbm", "--scale", "3");
    BAD(2, "--types", "hsbm", "--types", "two");

    char *a1[] = {g_bin, "generate", NULL};
    tu_expect_failure(a1, NULL, 2, "missing generator");
    char *a2[] = {g_bin, "generate", "sbm", "--nodes", "100", NULL};
    tu_expect_failure(a2, NULL, 2, "missing -o FILE");
    char *a3[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", "/nonexistent/dir/x.h5", NULL};
    tu_expect_failure(a3, NULL, 1, "does not exist");
    char *a4[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", (char *)tu_path("bad.h5"),
                  "extra", NULL};
    tu_expect_failure(a4, tu_path("bad.h5"), 2, "extra");

    /* An existing file is kept without --force and replaced with it. */
    const char *exist = tu_path("exists.h5");
    FILE *f = fopen(exist, "w");
    fputs("keep", f);
    fclose(f);
    char *a5[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", (char *)exist, NULL};
    tu_expect_failure(a5, NULL, 1, "file exists (use --force");
    char *kept = tu_read_file(exist);
    assert_string_equal(kept, "keep");
    free(kept);
    char *a6[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", (char *)exist, "--force", "-q",
                  NULL};
    run_ok(a6);
    gnn_graph_t g;
    load(exist, &g);
    assert_int_equal(g.csr.n_rows, 16);
    gnn_graph_free(&g);
}

/* An output that cannot be written is refused before any work. */
static void test_unwritable_output(void **state)
{
    (void)state;
    char out[700];
    snprintf(out, sizeof out, "%s/", tu_path("newdir"));
    char *a1[] = {g_bin, "generate", "sbm", "--nodes", "1000", "-o", out, NULL};
    tu_expect_failure(a1, NULL, 1, "newdir/: names a directory (-o takes the graph file to write)");
    assert_false(tu_exists(tu_path("newdir")));
    snprintf(out, sizeof out, "%s/", tu_path("out.h5"));
    tu_expect_failure(a1, NULL, 1, "out.h5/: names a directory");
    assert_false(tu_exists(tu_path("out.h5")));
    char *a2[] = {g_bin, "generate", "sbm", "--nodes", "1000", "-o", (char *)tu_tmpdir(), NULL};
    tu_expect_failure(a2, NULL, 1, "is a directory (-o takes the graph file to write)");
    /* A pipe (or a device such as /dev/null) at -o, even with --force: the
     * file renamed into place would replace it. */
    char fifo[700];
    snprintf(fifo, sizeof fifo, "%s", tu_path("out-fifo"));
    (void)unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    char *af[] = {g_bin, "generate", "sbm", "--nodes", "1000", "-o", fifo, "--force", NULL};
    tu_expect_failure(af, NULL, 1, "is a pipe, which the output would replace");
    struct stat fs;
    assert_true(lstat(fifo, &fs) == 0 && S_ISFIFO(fs.st_mode));
    (void)unlink(fifo);

    /* A directory without write permission (root passes permission checks,
     * so it then takes a read-only file system where there is one). */
    char ro[640];
    snprintf(ro, sizeof ro, "%s", tu_path("ro"));
    mkdir(ro, 0755);
    assert_int_equal(chmod(ro, 0555), 0);
    if (access(ro, W_OK) == 0) snprintf(ro, sizeof ro, "/proc/sys");
    if (access(ro, W_OK) == 0) {
        printf("no unwritable directory here: that check is skipped\n");
    } else {
        snprintf(out, sizeof out, "%s/x.h5", ro);
        char *a3[] = {g_bin, "generate", "sbm", "--nodes", "200000", "-o", out, NULL};
        char want[1500];
        snprintf(want, sizeof want, "%s: cannot write in directory %s: ", out, ro);
        tu_expect_failure(a3, NULL, 1, want);
    }
    chmod(tu_path("ro"), 0755);

    /* --tmpdir must be a writable directory. */
    char *a4[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", (char *)tu_path("t.h5"),
                  "--tmpdir", "/nonexistent/tmp", NULL};
    tu_expect_failure(a4, tu_path("t.h5"), 1,
                      "--tmpdir: directory /nonexistent/tmp does not exist");
    const char *file = tu_path("plain-file");
    FILE *f = fopen(file, "w");
    fclose(f);
    char *a5[] = {g_bin, "generate", "rmat", "--scale", "4", "-o", (char *)tu_path("t.h5"),
                  "--tmpdir", (char *)file, NULL};
    tu_expect_failure(a5, tu_path("t.h5"), 1, "plain-file is not a directory");
}

static void test_help(void **state)
{
    (void)state;
    char *a1[] = {g_bin, "generate", "--help", NULL};
    tu_run_t r = tu_run(a1);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "sbm"));
    assert_non_null(strstr(r.out, "rmat"));
    tu_run_free(&r);
    char *a2[] = {g_bin, "generate", "sbm", "--help", NULL};
    r = tu_run(a2);
    assert_int_equal(r.status, 0);
    const char *want[] = {"usage: gnn-dataset generate sbm", "--nodes", "--classes", "--feat-dim",
                          "--avg-degree", "--homophily", "--seed", "--mem-budget", "--tmpdir",
                          "--force", "20000"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing '%s' in:\n%s", want[i], r.out);
    tu_run_free(&r);
    char *a3[] = {g_bin, "generate", "rmat", "--help", NULL};
    r = tu_run(a3);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "--scale"));
    assert_non_null(strstr(r.out, "--edge-factor"));
    tu_run_free(&r);
    char *a4[] = {g_bin, "generate", "hsbm", "--help", NULL};
    r = tu_run(a4);
    assert_int_equal(r.status, 0);
    const char *hwant[] = {"usage: gnn-dataset generate hsbm", "--nodes", "--types", "--classes",
                           "--feat-dim", "--featureless", "--avg-degree", "--homophily", "--seed",
                           "(default: 30000)", "(default: 0.8)"};
    for (size_t i = 0; i < sizeof hwant / sizeof hwant[0]; i++)
        if (!strstr(r.out, hwant[i])) fail_msg("missing '%s' in:\n%s", hwant[i], r.out);
    tu_run_free(&r);
    r = tu_run(a1);
    assert_non_null(strstr(r.out, "hsbm"));
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rmat_structure),
        cmocka_unit_test(test_rmat_deterministic),
        cmocka_unit_test(test_rmat_out_of_core),
        cmocka_unit_test(test_rmat_scramble_bijective),
        cmocka_unit_test(test_sbm_small),
        cmocka_unit_test(test_sbm_deterministic),
        cmocka_unit_test(test_sbm_default_proxies),
        cmocka_unit_test(test_feat_dim_zero),
        cmocka_unit_test(test_hsbm_structure),
        cmocka_unit_test(test_hsbm_class_rule),
        cmocka_unit_test(test_hsbm_deterministic),
        cmocka_unit_test(test_hsbm_check),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_unwritable_output),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
