/*
 * gnn-dataset generate, run as a user runs it, with the files checked
 * through the library: R-MAT structure (node count, no self loops,
 * symmetric, deduplicated, flags, degree skew) and determinism; SBM counts,
 * labels, class balance, homophily, mean degree, splits and determinism;
 * the learnability proxies of the default SBM graph (nearest class centroid
 * on raw and on neighbour-averaged features); and for bad options one error
 * line, exit 2 (or 1) and no file left behind. argv[1] is the path of the
 * gnn-dataset binary.
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
    for (int which = 0; which < 2; which++) {
        const char *name = which ? "alloc-rmat.h5" : "alloc-sbm.h5";
        gnn_output_opts_t out = {.path = tu_path(name), .force = 1};
        int64_t nth = 1;
        for (;; nth++) {
            gnn_alloc_fail_at(nth);
            int rc = which ? gnn_generate_rmat(&ro, &out) : gnn_generate_sbm(&so, &out);
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
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_bad_options),
        cmocka_unit_test(test_unwritable_output),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
