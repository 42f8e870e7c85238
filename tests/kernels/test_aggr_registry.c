/*
 * Tests of the aggregator registry (kernels/aggr_registry.c), the built-ins
 * run through it (kernels/aggr_builtin.c) and the example plug-in lse.so
 * (kernels/plugins/lse/).
 *
 *   test_aggr_registry LSE.so BAD_ABI.so NO_REGISTER.so DUP_NAME.so
 *                      FAIL_REGISTER.so BAD_DEF.so
 *
 * The registry: built-ins present in order, found by name, unknown names
 * listing what is registered; lse.so loads and is found, with its path as
 * origin; each broken plug-in, a missing file, a bare name (not searched
 * for), a file that is no shared object and a library without the symbols
 * give the documented code and one-line message naming the path, and leave
 * the registry exactly as it was (bad_def.so covers every check of a
 * definition, one per value of GNN_TEST_BAD_DEF); every allocation of create and load made
 * to fail gives GNN_ENOMEM and an unchanged registry.
 *
 * The numbers: lse forward against a double-precision log-mean-exp written
 * here, on random graphs with empty rows, a hub row of thousands of
 * entries, repeated edges and rectangular shapes, at widths 1..130 and
 * inputs large enough to overflow a naive exp; lse backward by central
 * finite differences of sum(y * r) on that reference, and against the
 * analytic double backward on the hub graph. The built-ins sum, mean, gcn
 * and max through their definitions against kernels/ref. Prints its seed;
 * set GNN_TEST_SEED to replay.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/aggr.h"
#include "kernels/ref/spmm_ref.h"
#include "kernels/spmm.h"
#include "tests/common/testutil.h"

#include <dlfcn.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t g_seed;

/* Plug-in paths from the command line. */
enum {
    P_LSE,
    P_BAD_ABI,
    P_NO_REGISTER,
    P_DUP_NAME,
    P_FAIL_REGISTER,
    P_BAD_DEF,
    P_V1_SUM,
    P_COUNT_
};
static const char *g_plugin[P_COUNT_];

static const char *const builtin_names[] = {"sum", "mean", "gcn", "max"};

/* ---- Random data ----------------------------------------------------------- */

static int64_t rng_below(uint64_t *state, int64_t bound)
{
    return (int64_t)(tu_rng_next(state) % (uint64_t)bound);
}

static float rng_float(uint64_t *state) /* in [-1, 1), exact in float */
{
    return (float)((double)(tu_rng_next(state) >> 40) / (double)(1u << 23) - 1.0);
}

/* n pairwise distinct values in [-1, 1) (an affine bijection mod a prime). */
#define DISTINCT_P 1000003u
static void distinct_values(uint64_t *state, size_t n, float *x)
{
    uint64_t a = 1 + (uint64_t)rng_below(state, DISTINCT_P - 1), b = tu_rng_next(state) % DISTINCT_P;
    assert_true(n < DISTINCT_P);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((double)((a * i + b) % DISTINCT_P) * (2.0 / DISTINCT_P) - 1.0);
}

/* ---- Graphs ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    gnn_vid_t n_dst, n_src;
    gnn_eid_t m;
    int weights;
    int hub; /* row 3 takes a third of the edges */
} shape_t;

/*
 * Random in-edge CSR of shape s, rows sorted (as the plug-in interface
 * promises). Rows v with v % 5 == 3 stay empty, except the hub; sources
 * are drawn with replacement, so rows hold repeated edges.
 */
static void make_graph(const shape_t *s, uint64_t *state, gnn_csr_t *a)
{
    memset(a, 0, sizeof *a);
    a->n_rows = s->n_dst;
    a->n_cols = s->n_src;
    a->nnz = s->m;
    gnn_vid_t *src = malloc(((size_t)s->m + 1) * sizeof *src);
    gnn_vid_t *dst = malloc(((size_t)s->m + 1) * sizeof *dst);
    float *w = malloc(((size_t)s->m + 1) * sizeof *w);
    assert_true(src && dst && w);
    for (gnn_eid_t i = 0; i < s->m; i++) {
        gnn_vid_t v;
        if (s->hub && rng_below(state, 3) == 0)
            v = 3;
        else
            do v = rng_below(state, s->n_dst);
            while (v % 5 == 3 && s->n_dst > 5);
        src[i] = rng_below(state, s->n_src);
        dst[i] = v;
        w[i] = rng_float(state);
    }
    a->indptr = gnn_calloc((size_t)s->n_dst + 2, sizeof *a->indptr);
    a->indices = gnn_malloc_array((size_t)s->m + 1, sizeof *a->indices);
    if (s->weights) a->weights = gnn_malloc_array((size_t)s->m + 1, sizeof *a->weights);
    assert_true(a->indptr && a->indices && (!s->weights || a->weights));
    for (gnn_eid_t i = 0; i < s->m; i++) a->indptr[dst[i] + 2]++;
    for (gnn_vid_t v = 0; v < s->n_dst; v++) a->indptr[v + 2] += a->indptr[v + 1];
    for (gnn_eid_t i = 0; i < s->m; i++) {
        gnn_eid_t j = a->indptr[dst[i] + 1]++;
        a->indices[j] = src[i];
        if (a->weights) a->weights[j] = w[i];
    }
    assert_int_equal(gnn_csr_sort_rows(a), 0);
    assert_int_equal(gnn_csr_validate(a), 0);
    free(src);
    free(dst);
    free(w);
}

/* The plug-in's view of a prepared graph: the in-edge CSR and its transpose. */
static gnn_aggr_graph_t graph_view(const gnn_spmm_graph_t *g)
{
    gnn_aggr_graph_t v = {g->n_dst, g->n_src, g->nnz, g->csr->indptr, g->csr->indices,
                          g->csr->weights, g->t.indptr, g->t.indices, g->t.weights};
    return v;
}

typedef struct {
    gnn_aggr_graph_t view;
    gnn_aggr_call_t call;
    char msg[256];
    void *ws;
} run_t;

/* A call of def on g at width f, with the workspace def asks for. */
static void run_init(run_t *rn, const gnn_aggr_def_t *def, const gnn_spmm_graph_t *g, int64_t f)
{
    memset(rn, 0, sizeof *rn);
    rn->view = graph_view(g);
    size_t bytes = def->workspace_bytes ? def->workspace_bytes(&rn->view, f, def->user) : 0;
    rn->ws = bytes ? malloc(bytes) : NULL;
    assert_true(!bytes || rn->ws);
    gnn_aggr_call_t c = {.graph = &rn->view,
                         .f = f,
                         .workspace = rn->ws,
                         .workspace_size = bytes,
                         .user = def->user,
                         .msg = rn->msg,
                         .msg_size = sizeof rn->msg,
                         .host_private = g,
                         .heads = 1};
    rn->call = c;
}

static void run_free(run_t *rn)
{
    free(rn->ws);
    rn->ws = NULL;
}

/* ---- Double-precision log-mean-exp ----------------------------------------- */

/* Columns [k0, k1) of y = lse(x) = log(mean exp(x)) on a (n_rows x f);
 * empty rows give 0. */
static void lse_ref(const gnn_csr_t *a, int64_t f, const double *x, double *y, int64_t k0,
                    int64_t k1)
{
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (int64_t k = k0; k < k1; k++) {
            gnn_eid_t beg = a->indptr[v], end = a->indptr[v + 1];
            if (beg == end) {
                y[v * f + k] = 0;
                continue;
            }
            double m = -INFINITY, s = 0;
            for (gnn_eid_t j = beg; j < end; j++) m = fmax(m, x[a->indices[j] * f + k]);
            for (gnn_eid_t j = beg; j < end; j++) s += exp(x[a->indices[j] * f + k] - m);
            y[v * f + k] = m + log(s / (double)(end - beg));
        }
}

/* dx = (dy/dx)^T dy as a scatter over the edges, and mag the same on |dy|. */
static void lse_ref_backward(const gnn_csr_t *a, int64_t f, const double *x, const double *y,
                             const double *dy, double *dx, double *mag)
{
    memset(dx, 0, (size_t)(a->n_cols * f) * sizeof *dx);
    memset(mag, 0, (size_t)(a->n_cols * f) * sizeof *mag);
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
            gnn_vid_t u = a->indices[j];
            double d = (double)(a->indptr[v + 1] - a->indptr[v]);
            for (int64_t k = 0; k < f; k++) {
                double w = exp(x[u * f + k] - y[v * f + k]) / d;
                dx[u * f + k] += dy[v * f + k] * w;
                mag[u * f + k] += fabs(dy[v * f + k]) * w;
            }
        }
}

/* sum_v y[v][k] r[v][k] for column k only (the only one x[.][k] moves). */
static double column_loss(const gnn_csr_t *a, int64_t f, int64_t k, const double *x,
                          const double *r, double *y)
{
    lse_ref(a, f, x, y, k, k + 1);
    double l = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) l += y[v * f + k] * r[v * f + k];
    return l;
}

/* ---- Helpers --------------------------------------------------------------- */

static gnn_aggr_registry_t *new_registry(void)
{
    gnn_aggr_registry_t *r = NULL;
    assert_int_equal(gnn_aggr_registry_create(&r), 0);
    assert_non_null(r);
    return r;
}

/* Load lse.so into r; returns its definition. */
static const gnn_aggr_def_t *load_lse(gnn_aggr_registry_t *r)
{
    const gnn_aggr_def_t *def = NULL;
    if (gnn_aggr_registry_load(r, g_plugin[P_LSE]) != 0)
        fail_msg("loading %s: %s", g_plugin[P_LSE], gnn_error_message());
    assert_int_equal(gnn_aggr_registry_find(r, "lse", &def), 0);
    return def;
}

static void expect_message(const char *want)
{
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
    assert_null(strchr(gnn_error_message(), '\n'));
}

/* What a registry holds: its definitions' addresses and names. */
typedef struct {
    int n;
    const gnn_aggr_def_t *def[16];
    char name[16][GNN_AGGR_NAME_MAX + 1];
} snapshot_t;

static void snapshot(const gnn_aggr_registry_t *r, snapshot_t *s)
{
    s->n = gnn_aggr_registry_count(r);
    assert_true(s->n <= 16);
    for (int i = 0; i < s->n; i++) {
        s->def[i] = gnn_aggr_registry_at(r, i);
        snprintf(s->name[i], sizeof s->name[i], "%s", s->def[i]->name);
    }
}

static void expect_unchanged(const gnn_aggr_registry_t *r, const snapshot_t *s)
{
    assert_int_equal(gnn_aggr_registry_count(r), s->n);
    for (int i = 0; i < s->n; i++) {
        assert_ptr_equal(gnn_aggr_registry_at(r, i), s->def[i]);
        assert_string_equal(gnn_aggr_registry_at(r, i)->name, s->name[i]);
    }
    assert_null(gnn_aggr_registry_at(r, s->n));
}

/* Load path into r expecting failure code and message parts; r unchanged. */
static void expect_refused(gnn_aggr_registry_t *r, const char *path, int code, const char *what)
{
    snapshot_t before;
    snapshot(r, &before);
    gnn_error_clear();
    int rc = gnn_aggr_registry_load(r, path);
    if (rc != code)
        fail_msg("loading %s: got %s (%s), want %s", path, gnn_error_name(rc), gnn_error_message(),
                 gnn_error_name(code));
    assert_int_equal(gnn_error_code(), code);
    expect_message(path);
    expect_message(what);
    expect_unchanged(r, &before);
}

/* ---- Registry -------------------------------------------------------------- */

static void test_builtins(void **state)
{
    (void)state;
    gnn_aggr_registry_t *r = new_registry();
    assert_int_equal(gnn_aggr_registry_count(r), 5); /* 4 aggregators, then gat */
    for (int i = 0; i < 4; i++) {
        const gnn_aggr_def_t *d = gnn_aggr_registry_at(r, i), *found = NULL;
        assert_non_null(d);
        assert_string_equal(d->name, builtin_names[i]);
        assert_int_equal(d->abi_version, GNN_AGGR_ABI_VERSION);
        assert_non_null(d->description);
        assert_true(d->description[0] != '\0');
        assert_non_null(d->cpu_forward);
        assert_non_null(d->cpu_backward);
        assert_null(d->cuda_forward);
        assert_null(d->cuda_backward);
        assert_int_equal(gnn_aggr_registry_find(r, builtin_names[i], &found), 0);
        assert_ptr_equal(found, d);
        assert_string_equal(gnn_aggr_registry_origin(r, d), "built-in");
        assert_true((d->workspace_bytes != NULL) == !strcmp(d->name, "max"));
    }
    assert_null(gnn_aggr_registry_at(r, -1));
    assert_null(gnn_aggr_registry_at(r, 5));

    /* The built-in attention function, registered the same way. */
    const gnn_aggr_def_t *gat = gnn_aggr_registry_at(r, 4), *found = NULL;
    assert_string_equal(gat->name, "gat");
    assert_int_equal(gat->kind, GNN_AGGR_KIND_ATTENTION);
    assert_true(gnn_aggr_is_attention(gat));
    assert_false(gnn_aggr_is_attention(gnn_aggr_registry_at(r, 0)));
    assert_null(gat->cpu_forward);
    assert_non_null(gat->cpu_score);
    assert_non_null(gat->cpu_score_backward);
    assert_string_equal(gnn_aggr_registry_origin(r, gat), "built-in");
    assert_int_equal(gnn_aggr_registry_find_kind(r, "gat", GNN_AGGR_KIND_ATTENTION, &found), 0);
    assert_ptr_equal(found, gat);
    /* Its parameters: a_l and a_r, heads x f each. */
    gnn_aggr_dims_t dims = {3, 5};
    gnn_aggr_param_t ps[GNN_AGGR_MAX_PARAMS];
    int np = -1;
    int64_t count = -1;
    assert_int_equal(gnn_aggr_params(gat, &dims, ps, &np, &count), 0);
    assert_int_equal(np, 2);
    assert_int_equal(count, 30);
    assert_string_equal(ps[0].name, "a_l");
    assert_string_equal(ps[1].name, "a_r");
    assert_int_equal(ps[1].rows, 3);
    assert_int_equal(ps[1].cols, 5);
    assert_int_equal(ps[0].init, GNN_AGGR_INIT_GLOROT);
    /* Aggregators without declared parameters have none. */
    assert_int_equal(gnn_aggr_params(gnn_aggr_registry_at(r, 1), &dims, ps, &np, &count), 0);
    assert_int_equal(np, 0);
    assert_int_equal(count, 0);
    /* One kind asked, the other found; an unknown name lists the kind's. */
    assert_int_equal(gnn_aggr_registry_find_kind(r, "gat", GNN_AGGR_KIND_AGGREGATE, &found),
                     GNN_EINVAL);
    expect_message("\"gat\" is an attention function, not an aggregator");
    assert_int_equal(gnn_aggr_registry_find_kind(r, "mean", GNN_AGGR_KIND_ATTENTION, &found),
                     GNN_EINVAL);
    expect_message("\"mean\" is an aggregator, not an attention function");
    assert_int_equal(gnn_aggr_registry_find_kind(r, "gatv9", GNN_AGGR_KIND_ATTENTION, &found),
                     GNN_EINVAL);
    expect_message("unknown attention function \"gatv9\" (registered: gat)");

    /* The max workspace holds an int32 arg-max per output element. */
    const gnn_aggr_def_t *max = NULL;
    assert_int_equal(gnn_aggr_registry_find(r, "max", &max), 0);
    gnn_aggr_graph_t g = {7, 11, 0, NULL, NULL, NULL, NULL, NULL, NULL};
    assert_int_equal(max->workspace_bytes(&g, 5, max->user), 7 * 5 * sizeof(int32_t));

    const gnn_aggr_def_t *d = (const gnn_aggr_def_t *)(uintptr_t)1;
    assert_int_equal(gnn_aggr_registry_find(r, "lstm", &d), GNN_EINVAL);
    assert_null(d);
    expect_message("unknown aggregator \"lstm\" (registered: sum, mean, gcn, max, gat)");
    assert_int_equal(gnn_aggr_registry_find(r, NULL, &d), GNN_EINVAL);
    assert_int_equal(gnn_aggr_registry_find(NULL, "sum", &d), GNN_EINVAL);

    gnn_aggr_def_t other = *gnn_aggr_registry_at(r, 0);
    assert_string_equal(gnn_aggr_registry_origin(r, &other), "?");
    assert_string_equal(gnn_aggr_registry_origin(r, NULL), "?");
    assert_int_equal(gnn_aggr_registry_count(NULL), 0);
    assert_int_equal(gnn_aggr_registry_create(NULL), GNN_EINVAL);
    assert_int_equal(gnn_aggr_registry_load(NULL, g_plugin[P_LSE]), GNN_EINVAL);
    assert_int_equal(gnn_aggr_registry_load(r, NULL), GNN_EINVAL);
    gnn_aggr_registry_free(r);
    gnn_aggr_registry_free(NULL);
}

static void test_load_lse(void **state)
{
    (void)state;
    gnn_aggr_registry_t *r = new_registry();
    const gnn_aggr_def_t *lse = load_lse(r);
    assert_int_equal(gnn_aggr_registry_count(r), 6);
    assert_ptr_equal(gnn_aggr_registry_at(r, 5), lse);
    assert_string_equal(lse->name, "lse");
    assert_int_equal(lse->abi_version, GNN_AGGR_ABI_VERSION);
    assert_non_null(lse->cpu_forward);
    assert_non_null(lse->cpu_backward);
    assert_null(lse->workspace_bytes);
    assert_string_equal(gnn_aggr_registry_origin(r, lse), g_plugin[P_LSE]);
    for (int i = 0; i < 4; i++)
        assert_string_equal(gnn_aggr_registry_at(r, i)->name, builtin_names[i]);
    const gnn_aggr_def_t *d;
    assert_int_equal(gnn_aggr_registry_find_kind(r, "lstm", GNN_AGGR_KIND_AGGREGATE, &d),
                     GNN_EINVAL);
    expect_message("(registered: sum, mean, gcn, max, lse)");

    /* The same file again: its name is taken, by itself. */
    char want[1024];
    snprintf(want, sizeof want, "aggregator lse already registered (by %s)", g_plugin[P_LSE]);
    expect_refused(r, g_plugin[P_LSE], GNN_EPLUGIN, want);
    assert_string_equal(gnn_aggr_registry_origin(r, lse), g_plugin[P_LSE]);
    gnn_aggr_registry_free(r);
}

/* A bare file name is opened in the current directory, never searched for. */
/* A version 1 plug-in loads (its definition read as version 1 laid it out:
 * the plug-in frees it after add, and AddressSanitizer would catch a read
 * past it), runs, and equals the built-in sum. */
static void test_load_v1(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x7631ull;
    gnn_aggr_registry_t *r = new_registry();
    assert_int_equal(gnn_aggr_registry_load(r, g_plugin[P_V1_SUM]), 0);
    const gnn_aggr_def_t *v1 = NULL, *sum = NULL;
    assert_int_equal(gnn_aggr_registry_find_kind(r, "v1_sum", GNN_AGGR_KIND_AGGREGATE, &v1), 0);
    assert_int_equal(gnn_aggr_registry_find(r, "sum", &sum), 0);
    assert_int_equal(v1->abi_version, 1);
    assert_int_equal(v1->kind, GNN_AGGR_KIND_AGGREGATE);
    assert_null(v1->params);
    assert_null(v1->workspace_bytes2);
    assert_null(v1->cpu_score);
    assert_null(v1->cuda_score_backward);
    assert_string_equal(v1->description, "sum, from a version 1 plug-in");
    gnn_aggr_dims_t dims = {1, 4};
    gnn_aggr_param_t ps[GNN_AGGR_MAX_PARAMS];
    int np = -1;
    int64_t count = -1;
    assert_int_equal(gnn_aggr_params(v1, &dims, ps, &np, &count), 0);
    assert_int_equal(np + count, 0);

    gnn_csr_t a;
    const shape_t shape = {"v1", 30, 30, 120, 0, 1}; /* unweighted: v1_sum ignores weights */
    make_graph(&shape, &s, &a);
    gnn_spmm_graph_t *g;
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    const int64_t f = 3;
    float *x = malloc(30 * f * sizeof *x), *y1 = malloc(30 * f * sizeof *y1),
          *y2 = malloc(30 * f * sizeof *y2);
    assert_true(x && y1 && y2);
    for (int i = 0; i < 30 * f; i++) x[i] = rng_float(&s);
    run_t r1, r2;
    run_init(&r1, v1, g, f);
    run_init(&r2, sum, g, f);
    assert_int_equal(v1->cpu_forward(&r1.call, x, y1), 0);
    assert_int_equal(sum->cpu_forward(&r2.call, x, y2), 0);
    for (int i = 0; i < 30 * f; i++) assert_true(fabsf(y1[i] - y2[i]) <= 1e-5f);
    assert_int_equal(v1->cpu_backward(&r1.call, x, y1, x, y1), 0);
    assert_int_equal(sum->cpu_backward(&r2.call, x, y2, x, y2), 0);
    for (int i = 0; i < 30 * f; i++) assert_true(fabsf(y1[i] - y2[i]) <= 1e-5f);
    run_free(&r1);
    run_free(&r2);
    free(x), free(y1), free(y2);
    gnn_spmm_graph_free(g);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(r);
}

static void test_load_bare_name(void **state)
{
    (void)state;
    char cwd[4096], dir[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    const char *slash = strrchr(g_plugin[P_LSE], '/');
    if (!slash) skip(); /* already a bare name */
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - g_plugin[P_LSE]), g_plugin[P_LSE]);

    gnn_aggr_registry_t *r = new_registry();
    /* In the library search path but not here. */
    expect_refused(r, "libc.so.6", GNN_ENOENT, "libc.so.6");
    assert_int_equal(chdir(dir[0] ? dir : "/"), 0);
    int rc = gnn_aggr_registry_load(r, slash + 1);
    assert_int_equal(chdir(cwd), 0);
    if (rc != 0) fail_msg("loading %s in %s: %s", slash + 1, dir, gnn_error_message());
    const gnn_aggr_def_t *lse = NULL;
    assert_int_equal(gnn_aggr_registry_find(r, "lse", &lse), 0);
    assert_string_equal(gnn_aggr_registry_origin(r, lse), slash + 1);
    gnn_aggr_registry_free(r);
}

static void test_broken_plugins(void **state)
{
    (void)state;
    gnn_aggr_registry_t *r = new_registry();
    char want[1024];
    snprintf(want, sizeof want, "plug-in %s: ABI version 999, this build reads 1 to %u",
             g_plugin[P_BAD_ABI], (unsigned)GNN_AGGR_ABI_VERSION);
    expect_refused(r, g_plugin[P_BAD_ABI], GNN_EPLUGIN, want);
    expect_refused(r, g_plugin[P_NO_REGISTER], GNN_EPLUGIN,
                   "missing symbol gnn_aggr_plugin_register");
    expect_refused(r, g_plugin[P_DUP_NAME], GNN_EPLUGIN,
                   "aggregator sum already registered (by built-in)");
    expect_refused(r, g_plugin[P_FAIL_REGISTER], GNN_EPLUGIN,
                   "registration failed: fail_register: no licence for this machine");
    expect_refused(r, g_plugin[P_BAD_DEF], GNN_EPLUGIN,
                   "aggregator half has cpu_forward but no cpu_backward");
    /* The other defects of a definition, from the same file. */
    static const char *const defects[][2] = {
        {"name", "invalid aggregator name \"Half\""},
        {"long_name", "invalid aggregator name \"a234567890123456789012345678901x\""},
        {"no_name", "aggregator definition without a name"},
        {"abi", "aggregator definition has abi_version 0, this build reads 1 to"},
        {"abi_future", "aggregator definition has abi_version 3, this build reads 1 to 2"},
        {"kind", "aggregator half has unknown kind 7"},
        {"agg_score", "aggregator half sets attention entry points (score)"},
        {"attn_forward", "attention function half sets aggregator entry points"},
        {"attn_half", "attention function half has one of cpu_score and cpu_score_backward"},
        {"attn_none", "attention function half has no entry point (no score)"},
        {"no_entry", "aggregator half has no entry point"},
        {"backward_only", "aggregator half has cpu_backward but no cpu_forward"},
        {"cuda_half", "aggregator half has cuda_forward but no cuda_backward"},
        {"null", "NULL aggregator definition"},
        {"nothing", "registered no aggregator"},
        {"refuse", "registration failed: (no reason given)"},
    };
    for (size_t i = 0; i < sizeof defects / sizeof defects[0]; i++) {
        assert_int_equal(setenv("GNN_TEST_BAD_DEF", defects[i][0], 1), 0);
        expect_refused(r, g_plugin[P_BAD_DEF], GNN_EPLUGIN, defects[i][1]);
    }
    assert_int_equal(unsetenv("GNN_TEST_BAD_DEF"), 0);
    /* What they added before failing is gone. */
    const char *dropped[] = {"dup_first", "fail_first", "bad_def_ok", "half"};
    for (int i = 0; i < 4; i++) {
        const gnn_aggr_def_t *d;
        assert_int_equal(gnn_aggr_registry_find(r, dropped[i], &d), GNN_EINVAL);
    }

    /* Not there; not a shared object; a library without the symbols. */
    expect_refused(r, tu_path("no-such-plugin.so"), GNN_ENOENT, "cannot open");
    expect_refused(r, tu_write_file("not-elf.so", "not a shared object\n"), GNN_EPLUGIN,
                   "cannot open");
    expect_refused(r, tu_tmpdir(), GNN_EPLUGIN, "cannot open");
    Dl_info info;
    if (dladdr((void *)omp_get_max_threads, &info) && info.dli_fname &&
        strchr(info.dli_fname, '/') && strstr(info.dli_fname, "gomp"))
        expect_refused(r, info.dli_fname, GNN_EPLUGIN, "missing symbol gnn_aggr_plugin_abi");
    else
        printf("note: no OpenMP runtime path, missing-ABI-symbol case not run\n");

    /* After all that, lse still loads, and a later failure keeps it. */
    load_lse(r);
    assert_int_equal(gnn_aggr_registry_count(r), 6);
    expect_refused(r, g_plugin[P_DUP_NAME], GNN_EPLUGIN, "aggregator sum already registered");
    gnn_aggr_registry_free(r);
}

/* Every allocation of create and load made to fail: GNN_ENOMEM, nothing
 * kept, nothing leaked (the sanitizer build checks that). */
static void test_alloc_failure(void **state)
{
    (void)state;
    int n_failed = 0;
    gnn_aggr_registry_t *r = NULL;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        r = (gnn_aggr_registry_t *)(uintptr_t)1;
        int rc = gnn_aggr_registry_create(&r);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(r);
        n_failed++;
    }
    assert_true(n_failed >= 3);
    snapshot_t before;
    snapshot(r, &before);
    n_failed = 0;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        int rc = gnn_aggr_registry_load(r, g_plugin[P_LSE]);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        expect_message(g_plugin[P_LSE]);
        expect_unchanged(r, &before);
        n_failed++;
    }
    assert_true(n_failed >= 3);
    assert_int_equal(gnn_aggr_registry_count(r), 6);
    gnn_aggr_registry_free(r);
}

/* ---- lse ------------------------------------------------------------------- */

static const shape_t lse_shapes[] = {
    {"square", 60, 60, 400, 0, 0},
    {"hub", 3000, 3000, 12000, 1, 1}, /* row 3: about 4000 entries */
    {"rect-wide", 30, 90, 300, 0, 1},
    {"rect-tall", 90, 30, 300, 0, 0},
    {"no-edges", 5, 7, 0, 0, 0},
};
#define N_LSE_SHAPES ((int)(sizeof lse_shapes / sizeof lse_shapes[0]))

static void test_lse_forward(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x15e;
    gnn_aggr_registry_t *r = new_registry();
    const gnn_aggr_def_t *lse = load_lse(r);
    static const int64_t widths[] = {1, 7, 64, 130};
    /* 200: exp overflows float; a naive sum would give inf. */
    static const double scales[] = {1.0, 200.0};
    const int saved = omp_get_max_threads();
    for (int si = 0; si < N_LSE_SHAPES; si++) {
        const shape_t *s = &lse_shapes[si];
        gnn_csr_t a;
        make_graph(s, &rng, &a);
        gnn_spmm_graph_t *g;
        assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
        for (int wi = 0; wi < 4; wi++)
            for (int ci = 0; ci < 2; ci++) {
                const int64_t f = widths[wi];
                size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
                float *x = malloc((nx + 1) * sizeof *x), *y = malloc((ny + 1) * sizeof *y);
                float *y1 = malloc((ny + 1) * sizeof *y1);
                double *xd = malloc((nx + 1) * sizeof *xd), *yd = malloc((ny + 1) * sizeof *yd);
                assert_true(x && y && y1 && xd && yd);
                for (size_t i = 0; i < nx; i++) {
                    x[i] = (float)(rng_float(&rng) * scales[ci]);
                    xd[i] = x[i];
                }
                run_t rn;
                run_init(&rn, lse, g, f);
                memset(y, 0xff, ny * sizeof *y); /* NaN: every element must be written */
                if (lse->cpu_forward(&rn.call, x, y) != 0)
                    fail_msg("lse forward %s f=%lld: %s", s->name, (long long)f, rn.msg);
                lse_ref(&a, f, xd, yd, 0, f);
                for (size_t i = 0; i < ny; i++)
                    if (!(fabs((double)y[i] - yd[i]) <= 1e-5 * (1.0 + fabs(yd[i]))))
                        fail_msg("lse forward %s f=%lld scale %g y[%zu]: got %.9g want %.9g "
                                 "(seed %llu)",
                                 s->name, (long long)f, scales[ci], i, (double)y[i], yd[i],
                                 (unsigned long long)g_seed);
                /* One thread gives the same bits. */
                omp_set_num_threads(1);
                assert_int_equal(lse->cpu_forward(&rn.call, x, y1), 0);
                omp_set_num_threads(saved);
                assert_memory_equal(y, y1, ny * sizeof *y);
                run_free(&rn);
                free(x);
                free(y);
                free(y1);
                free(xd);
                free(yd);
            }
        gnn_spmm_graph_free(g);
        gnn_csr_free(&a);
    }
    gnn_aggr_registry_free(r);
}

/* lse backward of the plug-in on g: dx for dy = r, with its forward's y. */
static void lse_backward_of(const gnn_aggr_def_t *lse, const gnn_spmm_graph_t *g, int64_t f,
                            const float *x, const float *r, float *dx)
{
    run_t rn;
    run_init(&rn, lse, g, f);
    float *y = malloc(((size_t)(g->n_dst * f) + 1) * sizeof *y);
    assert_non_null(y);
    if (lse->cpu_forward(&rn.call, x, y) != 0) fail_msg("lse forward: %s", rn.msg);
    memset(dx, 0xff, (size_t)(g->n_src * f) * sizeof *dx);
    if (lse->cpu_backward(&rn.call, x, y, r, dx) != 0) fail_msg("lse backward: %s", rn.msg);
    free(y);
    run_free(&rn);
}

static void test_lse_backward(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0xbac4;
    gnn_aggr_registry_t *r = new_registry();
    const gnn_aggr_def_t *lse = load_lse(r);
    static const shape_t small[] = {
        {"fd-square", 12, 12, 40, 0, 1},
        {"fd-rect-wide", 9, 20, 45, 0, 1},
        {"fd-rect-tall", 20, 9, 45, 0, 0},
    };
    static const int64_t fd_widths[] = {1, 3, 7};
    const double h = 1e-6;

    /* Every element of small graphs by central differences. */
    for (int si = 0; si < 3; si++) {
        const shape_t *s = &small[si];
        gnn_csr_t a;
        make_graph(s, &rng, &a);
        gnn_spmm_graph_t *g;
        assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
        for (int wi = 0; wi < 3; wi++) {
            const int64_t f = fd_widths[wi];
            size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
            float *x = malloc(nx * sizeof *x), *rr = malloc(ny * sizeof *rr);
            float *dx = malloc(nx * sizeof *dx);
            double *xd = malloc(nx * sizeof *xd), *rd = malloc(ny * sizeof *rd);
            double *yd = malloc(ny * sizeof *yd);
            assert_true(x && rr && dx && xd && rd && yd);
            for (size_t i = 0; i < nx; i++) xd[i] = x[i] = 3.0f * rng_float(&rng);
            for (size_t i = 0; i < ny; i++) rd[i] = rr[i] = rng_float(&rng);
            lse_backward_of(lse, g, f, x, rr, dx);
            for (size_t i = 0; i < nx; i++) {
                const int64_t k = (int64_t)i % f;
                const double x0 = xd[i];
                xd[i] = x0 + h;
                double lp = column_loss(&a, f, k, xd, rd, yd);
                xd[i] = x0 - h;
                double lm = column_loss(&a, f, k, xd, rd, yd);
                xd[i] = x0;
                double fd = (lp - lm) / (2 * h);
                if (!(fabs(fd - (double)dx[i]) <= 1e-4 * (1.0 + fabs(fd))))
                    fail_msg("lse finite differences %s f=%lld x[%zu]: plug-in %.9g fd %.9g "
                             "(seed %llu)",
                             s->name, (long long)f, i, (double)dx[i], fd,
                             (unsigned long long)g_seed);
            }
            free(x);
            free(rr);
            free(dx);
            free(xd);
            free(rd);
            free(yd);
        }
        gnn_spmm_graph_free(g);
        gnn_csr_free(&a);
    }

    /* The hub graph: every element against the analytic double backward,
     * sampled elements by central differences. */
    const shape_t *s = &lse_shapes[1];
    gnn_csr_t a;
    make_graph(s, &rng, &a);
    gnn_spmm_graph_t *g;
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    static const int64_t hub_widths[] = {1, 7, 64};
    for (int wi = 0; wi < 3; wi++) {
        const int64_t f = hub_widths[wi];
        size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
        float *x = malloc(nx * sizeof *x), *rr = malloc(ny * sizeof *rr);
        float *dx = malloc(nx * sizeof *dx);
        double *xd = malloc(nx * sizeof *xd), *rd = malloc(ny * sizeof *rd);
        double *yd = malloc(ny * sizeof *yd);
        double *dxd = malloc(nx * sizeof *dxd), *mag = malloc(nx * sizeof *mag);
        assert_true(x && rr && dx && xd && rd && yd && dxd && mag);
        for (size_t i = 0; i < nx; i++) xd[i] = x[i] = 3.0f * rng_float(&rng);
        for (size_t i = 0; i < ny; i++) rd[i] = rr[i] = rng_float(&rng);
        lse_backward_of(lse, g, f, x, rr, dx);
        lse_ref(&a, f, xd, yd, 0, f);
        lse_ref_backward(&a, f, xd, yd, rd, dxd, mag);
        for (size_t i = 0; i < nx; i++)
            if (!(fabs((double)dx[i] - dxd[i]) <= 1e-5 * (1.0 + mag[i])))
                fail_msg("lse backward hub f=%lld dx[%zu]: got %.9g want %.9g (seed %llu)",
                         (long long)f, i, (double)dx[i], dxd[i], (unsigned long long)g_seed);
        for (int t = 0; t < 40; t++) {
            /* Half of the samples among the hub row's sources. */
            size_t i;
            if (t % 2 == 0) {
                gnn_eid_t j = a.indptr[3] + rng_below(&rng, a.indptr[4] - a.indptr[3]);
                i = (size_t)(a.indices[j] * f + rng_below(&rng, f));
            } else {
                i = (size_t)rng_below(&rng, (int64_t)nx);
            }
            const int64_t k = (int64_t)i % f;
            const double x0 = xd[i];
            xd[i] = x0 + h;
            double lp = column_loss(&a, f, k, xd, rd, yd);
            xd[i] = x0 - h;
            double lm = column_loss(&a, f, k, xd, rd, yd);
            xd[i] = x0;
            double fd = (lp - lm) / (2 * h);
            if (!(fabs(fd - (double)dx[i]) <= 1e-4 * (1.0 + fabs(fd))))
                fail_msg("lse finite differences hub f=%lld x[%zu]: plug-in %.9g fd %.9g "
                         "(seed %llu)",
                         (long long)f, i, (double)dx[i], fd, (unsigned long long)g_seed);
        }
        free(x);
        free(rr);
        free(dx);
        free(xd);
        free(rd);
        free(yd);
        free(dxd);
        free(mag);
    }
    gnn_spmm_graph_free(g);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(r);
}

static void test_lse_bad_call(void **state)
{
    (void)state;
    gnn_aggr_registry_t *r = new_registry();
    const gnn_aggr_def_t *lse = load_lse(r);
    char msg[128] = "";
    gnn_aggr_call_t call = {.f = 4, .msg = msg, .msg_size = sizeof msg, .heads = 1};
    float x[4] = {0}, y[4];
    assert_int_not_equal(lse->cpu_forward(&call, x, y), 0);
    assert_non_null(strstr(msg, "lse forward"));
    gnn_aggr_registry_free(r);
}

/* ---- Built-ins through the registry --------------------------------------- */

static double *to_double(const float *x, size_t n, int absolute)
{
    double *d = malloc((n + 1) * sizeof *d);
    assert_non_null(d);
    for (size_t i = 0; i < n; i++) d[i] = absolute ? fabs((double)x[i]) : (double)x[i];
    return d;
}

/* got within tol * mag + 1e-30 of want, element by element. */
static void expect_close(const char *what, const char *name, int64_t f, size_t n, const float *got,
                         const double *want, const double *mag)
{
    for (size_t i = 0; i < n; i++)
        if (!(fabs((double)got[i] - want[i]) <= 1e-5 * (mag[i] + 1e-6)))
            fail_msg("%s %s f=%lld [%zu]: got %.9g want %.9g (seed %llu)", what, name, (long long)f,
                     i, (double)got[i], want[i], (unsigned long long)g_seed);
}

static void test_builtins_against_reference(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0xb1;
    gnn_aggr_registry_t *r = new_registry();
    static const shape_t shapes[] = {
        {"square-weighted", 80, 80, 600, 1, 0},
        {"hub-weighted", 500, 500, 4000, 1, 1},
        {"rect-wide", 40, 100, 400, 0, 1},
    };
    static const int64_t widths[] = {1, 7, 64};
    for (int si = 0; si < 3; si++) {
        const shape_t *s = &shapes[si];
        gnn_csr_t a, a_abs;
        make_graph(s, &rng, &a);
        assert_int_equal(gnn_csr_copy(&a, &a_abs), 0);
        if (a_abs.weights)
            for (gnn_eid_t j = 0; j < a_abs.nnz; j++) a_abs.weights[j] = fabsf(a_abs.weights[j]);
        gnn_spmm_graph_t *g;
        assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
        for (int wi = 0; wi < 3; wi++) {
            const int64_t f = widths[wi];
            size_t nx = (size_t)(s->n_src * f), ny = (size_t)(s->n_dst * f);
            float *x = malloc(nx * sizeof *x), *y = malloc(ny * sizeof *y);
            float *dy = malloc(ny * sizeof *dy), *dx = malloc(nx * sizeof *dx);
            double *y_ref = malloc(ny * sizeof *y_ref), *y_mag = malloc(ny * sizeof *y_mag);
            double *dx_ref = malloc(nx * sizeof *dx_ref), *dx_mag = malloc(nx * sizeof *dx_mag);
            int32_t *am_ref = malloc(ny * sizeof *am_ref);
            assert_true(x && y && dy && dx && y_ref && y_mag && dx_ref && dx_mag && am_ref);
            distinct_values(&rng, nx, x);
            for (size_t i = 0; i < ny; i++) dy[i] = rng_float(&rng);
            double *xd = to_double(x, nx, 0), *xa = to_double(x, nx, 1);
            double *dyd = to_double(dy, ny, 0), *dya = to_double(dy, ny, 1);
            for (int ai = 0; ai < GNN_AGGR_COUNT_; ai++) {
                gnn_aggr_t aggr = (gnn_aggr_t)ai;
                const gnn_aggr_def_t *def = NULL;
                assert_int_equal(gnn_aggr_registry_find(r, gnn_aggr_name(aggr), &def), 0);
                run_t rn;
                run_init(&rn, def, g, f);
                memset(y, 0xff, ny * sizeof *y);
                memset(dx, 0xff, nx * sizeof *dx);
                if (def->cpu_forward(&rn.call, x, y) != 0)
                    fail_msg("%s forward: %s", def->name, rn.msg);
                if (def->cpu_backward(&rn.call, x, y, dy, dx) != 0)
                    fail_msg("%s backward: %s", def->name, rn.msg);
                assert_int_equal(gnn_spmm_ref_forward(&a, aggr, f, xd, y_ref, am_ref), 0);
                assert_int_equal(gnn_spmm_ref_backward(&a, aggr, f, dyd, am_ref, dx_ref), 0);
                assert_int_equal(gnn_spmm_ref_backward(&a_abs, aggr, f, dya, am_ref, dx_mag), 0);
                if (aggr == GNN_AGGR_MAX) {
                    assert_int_equal(rn.call.workspace_size, ny * sizeof(int32_t));
                    assert_memory_equal(rn.ws, am_ref, ny * sizeof(int32_t));
                    for (size_t i = 0; i < ny; i++) assert_true((double)y[i] == y_ref[i]);
                } else {
                    assert_int_equal(gnn_spmm_ref_forward(&a_abs, aggr, f, xa, y_mag, NULL), 0);
                    expect_close("forward", def->name, f, ny, y, y_ref, y_mag);
                }
                expect_close("backward", def->name, f, nx, dx, dx_ref, dx_mag);
                run_free(&rn);
            }
            free(xd);
            free(xa);
            free(dyd);
            free(dya);
            free(x);
            free(y);
            free(dy);
            free(dx);
            free(y_ref);
            free(y_mag);
            free(dx_ref);
            free(dx_mag);
            free(am_ref);
        }
        gnn_spmm_graph_free(g);
        gnn_csr_free(&a);
        gnn_csr_free(&a_abs);
    }
    gnn_aggr_registry_free(r);
}

/* Failures of the built-ins: a clean negative code and a message. */
static void test_builtin_errors(void **state)
{
    (void)state;
    uint64_t rng = g_seed;
    gnn_aggr_registry_t *r = new_registry();
    const shape_t s = {"wide", 10, 4, 20, 0, 0}; /* n_dst > n_src: no gcn */
    gnn_csr_t a;
    make_graph(&s, &rng, &a);
    gnn_spmm_graph_t *g;
    assert_int_equal(gnn_spmm_graph_create(&a, &g), 0);
    const gnn_aggr_def_t *gcn, *max;
    assert_int_equal(gnn_aggr_registry_find(r, "gcn", &gcn), 0);
    assert_int_equal(gnn_aggr_registry_find(r, "max", &max), 0);
    float x[4 * 3] = {0}, y[10 * 3], dx[4 * 3];

    run_t rn;
    run_init(&rn, gcn, g, 3);
    gnn_error_clear();
    assert_int_equal(gcn->cpu_forward(&rn.call, x, y), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "gcn"));
    assert_non_null(strstr(rn.msg, "gcn"));
    assert_int_equal(gcn->cpu_backward(&rn.call, x, y, y, dx), GNN_EINVAL);

    rn.call.host_private = NULL; /* not prepared by a backend */
    rn.msg[0] = '\0';
    assert_int_equal(gcn->cpu_forward(&rn.call, x, y), GNN_EINVAL);
    assert_non_null(strstr(rn.msg, "host_private"));
    run_free(&rn);

    run_init(&rn, max, g, 3);
    assert_int_equal(max->cpu_forward(&rn.call, x, y), 0);
    rn.call.workspace_size--; /* too small for the arg-max */
    assert_int_equal(max->cpu_forward(&rn.call, x, y), GNN_EINVAL);
    assert_non_null(strstr(rn.msg, "workspace"));
    rn.call.f = 0; /* refused by the kernel */
    assert_int_equal(max->cpu_backward(&rn.call, x, y, y, dx), GNN_EINVAL);
    run_free(&rn);

    gnn_spmm_graph_free(g);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(r);
}

int main(int argc, char **argv)
{
    if (argc != 1 + P_COUNT_) {
        fprintf(stderr,
                "usage: %s LSE.so BAD_ABI.so NO_REGISTER.so DUP_NAME.so FAIL_REGISTER.so "
                "BAD_DEF.so V1_SUM.so\n",
                argv[0]);
        return 1;
    }
    for (int i = 0; i < P_COUNT_; i++) g_plugin[i] = argv[1 + i];
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("test_aggr_registry: seed %llu (GNN_TEST_SEED=%llu to replay)\n",
           (unsigned long long)g_seed, (unsigned long long)g_seed);
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtins),
        cmocka_unit_test(test_load_lse),
        cmocka_unit_test(test_load_v1),
        cmocka_unit_test(test_load_bare_name),
        cmocka_unit_test(test_broken_plugins),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_lse_forward),
        cmocka_unit_test(test_lse_backward),
        cmocka_unit_test(test_lse_bad_call),
        cmocka_unit_test(test_builtins_against_reference),
        cmocka_unit_test(test_builtin_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
