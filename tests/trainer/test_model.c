/*
 * Tests of the GCN and GraphSAGE models (trainer/model.h) on the CPU
 * backend: every parameter gradient of the backward pass against central
 * finite differences of the training loss (float forward, so tolerances
 * are those of single precision), for GCN in both product orders, SAGE
 * with the mean, max and sum aggregators, one to three layers, with and
 * without dropout (the mask is replayed by resetting the generator);
 * parameter layout and initialisation; configuration errors; a model over
 * ranks on a rank with no rows (an empty part) making every halo exchange;
 * the gradient of the model's input (learnable input rows) likewise;
 * layer 0 on rows of a feature table (dense by index, sparse by
 * gnn_csr_rows) as mini-batches give it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testgraph.h"
#include "tests/common/testrng.h"
#include "graph/base/error.h"
#include "kernels/aggr.h"
#include "kernels/backend.h"
#include "kernels/dense.h"
#include "graph/base/rng.h"
#include "trainer/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

static void expect_error(int rc, int code, const char *want)
{
    assert_int_equal(rc, code);
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

typedef struct {
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    gnn_csr_t a;
    gnn_csr_t xs;          /* x as a sparse matrix */
    gnn_bsparse_t *bxs;
    gnn_bgraph_t *bg;
    int64_t n, classes;
    float *x;
    int64_t labels[64], idx[64], nidx;
} fixture_t;

/* A symmetric random graph of n nodes (node 0 isolated), features, labels. */
static void fixture(fixture_t *t, int64_t n, int64_t f, int64_t classes, uint64_t *s)
{
    memset(t, 0, sizeof *t);
    assert_int_equal(gnn_backend_open("cpu", &t->be), 0);
    assert_int_equal(gnn_aggr_registry_create(&t->reg), 0);
    tu_random_graph(n, 3 * n, s, &t->a);
    assert_int_equal(gnn_be_graph_create(t->be, &t->a, &t->bg), 0);
    t->n = n;
    t->classes = classes;
    float *xh = malloc(n * f * sizeof *xh);
    assert_non_null(xh);
    /* About 60 % zeros, so the sparse-input path has something to skip. */
    for (int64_t i = 0; i < n * f; i++)
        xh[i] = tu_rng_next(s) % 5 < 3 ? 0.0f : (float)((tu_rng_next(s) >> 40) * 0x1p-24) - 0.5f;
    assert_int_equal(gnn_be_alloc(t->be, n * f * sizeof(float), (void **)&t->x), 0);
    assert_int_equal(gnn_be_upload(t->be, t->x, xh, n * f * sizeof(float)), 0);
    /* The same matrix as CSR with values. */
    t->xs.n_rows = n;
    t->xs.n_cols = f;
    t->xs.indptr = calloc(n + 1, sizeof *t->xs.indptr);
    t->xs.indices = malloc((n * f + 1) * sizeof *t->xs.indices);
    t->xs.weights = malloc((n * f + 1) * sizeof *t->xs.weights);
    assert_true(t->xs.indptr && t->xs.indices && t->xs.weights);
    for (int64_t v = 0; v < n; v++) {
        t->xs.indptr[v + 1] = t->xs.indptr[v];
        for (int64_t k = 0; k < f; k++)
            if (xh[v * f + k] != 0.0f) {
                t->xs.indices[t->xs.indptr[v + 1]] = k;
                t->xs.weights[t->xs.indptr[v + 1]++] = xh[v * f + k];
            }
    }
    t->xs.nnz = t->xs.indptr[n];
    t->xs.flags = GNN_CSR_SORTED;
    assert_int_equal(gnn_be_sparse_create(t->be, &t->xs, &t->bxs), 0);
    free(xh);
    assert_true(n <= 64);
    for (int64_t v = 0; v < n; v++) t->labels[v] = (int64_t)(tu_rng_next(s) % (uint64_t)classes);
    t->nidx = 0;
    for (int64_t v = 0; v < n; v += 2) t->idx[t->nidx++] = v;
}

static void fixture_free(fixture_t *t)
{
    gnn_be_sparse_free(t->bxs);
    free(t->xs.indptr), free(t->xs.indices), free(t->xs.weights);
    gnn_be_free(t->be, t->x);
    gnn_be_graph_free(t->bg);
    gnn_csr_free(&t->a);
    gnn_aggr_registry_free(t->reg);
    gnn_backend_close(t->be);
}

/* Training loss of m with the dropout stream reset to (seed, 0). */
static double loss_of(fixture_t *t, gnn_model_t *m, float *dlogits)
{
    gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) gs[l] = t->bg;
    const float *logits;
    gnn_model_set_rng(m, 99, 0);
    assert_int_equal(gnn_model_forward(m, gs, t->x, 1, &logits), 0);
    double loss;
    assert_int_equal(gnn_softmax_xent(t->n, t->classes, logits, t->labels, t->idx, t->nidx,
                                      &loss, dlogits),
                     0);
    return loss;
}

/*
 * The model in double precision, written from the definitions in
 * trainer/model.h: its loss as a function of the parameters, for central
 * differences that stay clear of ReLU and max switches (step 1e-6).
 */
typedef struct {
    const fixture_t *t;
    gnn_model_kind_t kind;
    const char *aggr; /* sage: "mean", "sum" or "max" */
    int layers;
    int64_t dims[GNN_MODEL_MAX_LAYERS + 1];
    float p;
    uint64_t key;
    const double *x; /* the input (n x dims[0]); NULL: the fixture's */
    double *margin;  /* non-NULL: set to the hidden pre-activation nearest 0 (|.|) */
} ref_t;

static double ref_loss(const ref_t *r, const double *w)
{
    const fixture_t *t = r->t;
    const gnn_csr_t *a = &t->a;
    int64_t n = t->n;
    double *h = calloc(n * 64, sizeof *h), *d = calloc(n * 64, sizeof *d);
    double *ag = calloc(n * 64, sizeof *ag), *z = calloc(n * 64, sizeof *z);
    assert_true(h && d && ag && z);
    /* Degrees for gcn (symmetric graph: in = out). */
    double sc[64];
    for (int64_t v = 0; v < n; v++)
        sc[v] = 1.0 / sqrt((double)(a->indptr[v + 1] - a->indptr[v]) + 1.0);
    float *x = t->x;
    for (int64_t i = 0; i < n * r->dims[0]; i++) h[i] = r->x ? r->x[i] : x[i];
    uint64_t off = 0;
    int64_t base = 0;
    if (r->margin) *r->margin = INFINITY;
    for (int l = 0; l < r->layers; l++) {
        int64_t fin = r->dims[l], fout = r->dims[l + 1];
        for (int64_t i = 0; i < n * fin; i++) {
            int keep = r->p == 0.0f || gnn_rng_keep(r->key, off + (uint64_t)i, r->p);
            d[i] = keep ? h[i] * (double)(float)(1.0 / (1.0 - (double)r->p)) : 0.0;
        }
        if (r->p > 0.0f) off += (uint64_t)(n * fin);
        /* ag = aggregation of d. */
        for (int64_t v = 0; v < n; v++) {
            int64_t b = a->indptr[v], e = a->indptr[v + 1];
            for (int64_t k = 0; k < fin; k++) {
                double s = 0.0;
                if (r->kind == GNN_MODEL_GCN) {
                    for (int64_t j = b; j < e; j++) s += sc[a->indices[j]] * d[a->indices[j] * fin + k];
                    s = sc[v] * (s + sc[v] * d[v * fin + k]);
                } else if (!strcmp(r->aggr, "max")) {
                    s = e > b ? -INFINITY : 0.0;
                    for (int64_t j = b; j < e; j++) s = fmax(s, d[a->indices[j] * fin + k]);
                } else {
                    for (int64_t j = b; j < e; j++) s += d[a->indices[j] * fin + k];
                    if (!strcmp(r->aggr, "mean") && e > b) s /= (double)(e - b);
                }
                ag[v * fin + k] = s;
            }
        }
        const double *W = w + base, *Ws = r->kind == GNN_MODEL_SAGE ? W + fin * fout : NULL;
        const double *bias = w + base + (Ws ? 2 : 1) * fin * fout;
        for (int64_t v = 0; v < n; v++)
            for (int64_t o = 0; o < fout; o++) {
                double s = bias[o];
                for (int64_t k = 0; k < fin; k++) {
                    s += ag[v * fin + k] * W[k * fout + o];
                    if (Ws) s += d[v * fin + k] * Ws[k * fout + o];
                }
                if (l < r->layers - 1 && r->margin) *r->margin = fmin(*r->margin, fabs(s));
                z[v * fout + o] = l < r->layers - 1 && s < 0.0 ? 0.0 : s;
            }
        base += (Ws ? 2 : 1) * fin * fout + fout;
        memcpy(h, z, (size_t)(n * fout) * sizeof *h);
    }
    int64_t C = r->dims[r->layers];
    double loss = 0.0;
    for (int64_t j = 0; j < t->nidx; j++) {
        const double *row = h + t->idx[j] * C;
        double mx = row[0], se = 0.0;
        for (int64_t c = 1; c < C; c++) mx = fmax(mx, row[c]);
        for (int64_t c = 0; c < C; c++) se += exp(row[c] - mx);
        loss += mx + log(se) - row[t->labels[t->idx[j]]];
    }
    free(h), free(d), free(ag), free(z);
    return loss / (double)t->nidx;
}

/*
 * Biases start at zero: give them values so ReLU kinks are not hit
 * systematically, and draw them again while a hidden pre-activation of the
 * double-precision model r lies within 1e-4 of 0: there the float model
 * may take the other side of the kink from it, and no difference step
 * agrees with its gradient (about one seed in 200 before this).
 */
static void draw_biases(ref_t *r, float *w, int64_t np, uint64_t *s)
{
    unsigned char *zero = malloc(np);
    double *wd = malloc(np * sizeof *wd);
    assert_true(zero && wd);
    for (int64_t i = 0; i < np; i++) zero[i] = w[i] == 0.0f;
    for (int tries = 0;; tries++) {
        if (tries == 100) fail_msg("no biases clear of the ReLU kinks (seed %" PRIu64 ")", g_seed);
        for (int64_t i = 0; i < np; i++) {
            if (zero[i]) w[i] = 0.05f * ((float)((tu_rng_next(s) >> 40) * 0x1p-24) - 0.5f);
            wd[i] = w[i];
        }
        double margin;
        r->margin = &margin;
        ref_loss(r, wd);
        r->margin = NULL;
        if (margin >= 1e-4) break;
    }
    free(zero), free(wd);
}

/*
 * The backward's gradients got[i] of the n values v[i] (each a parameter
 * or an input element of the double-precision model r, evaluated at
 * parameters w) against central differences of its loss. Steps 1e-6 and
 * 1e-7: a ReLU or max switch within one step of the point (rare, but 120
 * hidden units make it happen) bends one of the two differences, not
 * both; the backward must match at least one. what names the values in
 * messages. Returns how many are off.
 */
static int fd_mismatches(const ref_t *r, const double *w, double *v, int64_t n,
                         const float *got, double gmax, const char *what)
{
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double keep = v[i], fd[2];
        for (int k = 0; k < 2; k++) {
            double hh = k ? 1e-7 : 1e-6;
            v[i] = keep + hh;
            double lp = ref_loss(r, w);
            v[i] = keep - hh;
            double lm = ref_loss(r, w);
            fd[k] = (lp - lm) / (2.0 * hh);
        }
        v[i] = keep;
        int ok = 0;
        for (int k = 0; k < 2; k++)
            ok |= fabs(fd[k] - got[i]) <= 1e-4 * gmax + (k ? 1e-2 : 1e-3) * fabs(fd[k]);
        if (!ok && bad++ < 5)
            print_message("%s/%s L=%d %s %" PRId64 ": backward %.6g, differences %.6g\n",
                          gnn_model_kind_name(r->kind), r->aggr ? r->aggr : "gcn", r->layers,
                          what, i, (double)got[i], fd[0]);
    }
    return bad;
}

static void check_gradients_in(gnn_model_kind_t kind, const char *aggr, int layers, int64_t f,
                               int64_t hidden, float dropout, int sparse)
{
    uint64_t s = g_seed ^ (uint64_t)(layers * 131 + f * 7 + hidden);
    fixture_t t;
    fixture(&t, 24, f, 3, &s);
    gnn_model_config_t cfg = {kind, layers, f, hidden, 3, dropout, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    if (aggr) assert_int_equal(gnn_aggr_registry_find(t.reg, aggr, &cfg.aggr), 0);
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    if (sparse) assert_int_equal(gnn_model_set_sparse_input(m, t.bxs), 0);
    gnn_model_set_block_rows(m, 5); /* several blocks of a blockwise input gradient */
    int64_t np = gnn_model_n_params(m);
    float *dl = malloc(t.n * 3 * sizeof(float)), *grad = malloc(np * sizeof(float));
    assert_true(dl && grad);
    gnn_model_set_rng(m, 99, 0); /* as loss_of */
    ref_t r = {&t, kind, aggr, layers, {0}, dropout, gnn_model_dropout_key(m), NULL, NULL};
    r.dims[0] = f;
    for (int l = 1; l < layers; l++) r.dims[l] = hidden;
    r.dims[layers] = 3;
    float *w = gnn_model_params(m);
    draw_biases(&r, w, np, &s);
    loss_of(&t, m, dl);
    assert_int_equal(gnn_model_backward(m, dl), 0);
    memcpy(grad, gnn_model_grads(m), np * sizeof(float));
    double gmax = 0.0;
    for (int64_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(grad[i]));
    assert_true(gmax > 0.0);
    /* Central differences of the double-precision model. */
    double *wd = malloc(np * sizeof *wd);
    assert_non_null(wd);
    for (int64_t i = 0; i < np; i++) wd[i] = w[i];
    double l0 = ref_loss(&r, wd), lf = loss_of(&t, m, dl);
    if (fabs(l0 - lf) > 1e-5 * fmax(1.0, fabs(l0)))
        fail_msg("loss %.9g, double-precision model %.9g (seed %" PRIu64 ")", lf, l0, g_seed);
    int bad = fd_mismatches(&r, wd, wd, np, grad, gmax, sparse ? "sparse param" : "param");
    if (bad) fail_msg("%d of %" PRId64 " gradients off (seed %" PRIu64 ")", bad, np, g_seed);
    free(wd);
    free(dl), free(grad);
    gnn_model_free(m);
    fixture_free(&t);
}

/* Each configuration on dense input, and on sparse input where the model
 * allows it (it must compute the same function with the same mask). */
static void check_gradients(gnn_model_kind_t kind, const char *aggr, int layers, int64_t f,
                            int64_t hidden, float dropout)
{
    check_gradients_in(kind, aggr, layers, f, hidden, dropout, 0);
    if (!aggr || strcmp(aggr, "max")) check_gradients_in(kind, aggr, layers, f, hidden, dropout, 1);
}

static void test_gcn_gradients(void **state)
{
    (void)state;
    check_gradients(GNN_MODEL_GCN, NULL, 2, 12, 5, 0.0f);  /* layer 0 multiplies first */
    check_gradients(GNN_MODEL_GCN, NULL, 2, 3, 8, 0.0f);   /* layer 0 aggregates first */
    check_gradients(GNN_MODEL_GCN, NULL, 3, 6, 6, 0.4f);   /* dropout, three layers */
    check_gradients(GNN_MODEL_GCN, NULL, 1, 5, 1, 0.0f);   /* one layer */
}

static void test_sage_gradients(void **state)
{
    (void)state;
    check_gradients(GNN_MODEL_SAGE, "mean", 2, 7, 6, 0.0f);
    check_gradients(GNN_MODEL_SAGE, "mean", 2, 7, 6, 0.3f);
    check_gradients(GNN_MODEL_SAGE, "max", 2, 5, 4, 0.0f);
    check_gradients(GNN_MODEL_SAGE, "sum", 3, 4, 5, 0.2f);
}

/*
 * The gradient of the model's input (learnable input rows, trainer/embed.h)
 * against central differences of the double-precision model in each input
 * element, with the parameter gradients unchanged by asking for it; the
 * input buffer may be overwritten by the backward, so the forward reads a
 * copy.
 */
static void check_input_gradient(gnn_model_kind_t kind, const char *aggr, int layers, int64_t f,
                                 int64_t hidden, float dropout)
{
    uint64_t s = g_seed ^ (uint64_t)(layers * 977 + f * 13 + hidden);
    fixture_t t;
    fixture(&t, 24, f, 3, &s);
    gnn_model_config_t cfg = {kind, layers, f, hidden, 3, dropout, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    if (aggr) assert_int_equal(gnn_aggr_registry_find(t.reg, aggr, &cfg.aggr), 0);
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    gnn_model_set_block_rows(m, 5); /* several blocks of a blockwise input gradient */
    int64_t np = gnn_model_n_params(m), nx = t.n * f;
    gnn_model_set_rng(m, 99, 0); /* as loss_of */
    ref_t r = {&t, kind, aggr, layers, {0}, dropout, gnn_model_dropout_key(m), NULL, NULL};
    r.dims[0] = f;
    for (int l = 1; l < layers; l++) r.dims[l] = hidden;
    r.dims[layers] = 3;
    float *w = gnn_model_params(m);
    draw_biases(&r, w, np, &s);
    float *dl = malloc(t.n * 3 * sizeof(float)), *grad0 = malloc(np * sizeof(float));
    float *keep = malloc(nx * sizeof(float)), *dx = malloc(nx * sizeof(float));
    assert_true(dl && grad0 && keep && dx);
    memcpy(keep, t.x, nx * sizeof(float));
    /* Parameter gradients without the input's. */
    loss_of(&t, m, dl);
    assert_null(gnn_model_input_grad(m));
    assert_int_equal(gnn_model_backward(m, dl), 0);
    memcpy(grad0, gnn_model_grads(m), np * sizeof(float));
    memcpy(t.x, keep, nx * sizeof(float));
    /* With it: the same parameter gradients, and the input's. */
    assert_int_equal(gnn_model_set_input_grad(m, 1), 0);
    loss_of(&t, m, dl);
    assert_int_equal(gnn_model_backward(m, dl), 0);
    const float *g = gnn_model_input_grad(m);
    assert_non_null(g);
    memcpy(dx, g, nx * sizeof(float));
    for (int64_t i = 0; i < np; i++)
        if (fabsf(gnn_model_grads(m)[i] - grad0[i]) > 1e-6f * (1.0f + fabsf(grad0[i])))
            fail_msg("param %" PRId64 ": %g with the input gradient, %g without", i,
                     (double)gnn_model_grads(m)[i], (double)grad0[i]);
    memcpy(t.x, keep, nx * sizeof(float));
    double *xd = malloc(nx * sizeof *xd);
    assert_non_null(xd);
    for (int64_t i = 0; i < nx; i++) xd[i] = keep[i];
    r.x = xd;
    double *wd = malloc(np * sizeof *wd);
    assert_non_null(wd);
    for (int64_t i = 0; i < np; i++) wd[i] = w[i];
    double gmax = 0.0;
    for (int64_t i = 0; i < nx; i++) gmax = fmax(gmax, fabs(dx[i]));
    assert_true(gmax > 0.0);
    int bad = fd_mismatches(&r, wd, xd, nx, dx, gmax, "input");
    if (bad) fail_msg("%d of %" PRId64 " input gradients off (seed %" PRIu64 ")", bad, nx, g_seed);
    free(wd);
    free(xd);
    free(dl), free(grad0), free(keep), free(dx);
    gnn_model_free(m);
    fixture_free(&t);
}

static void test_input_gradients(void **state)
{
    (void)state;
    check_input_gradient(GNN_MODEL_GCN, NULL, 2, 12, 5, 0.0f); /* multiplies first: blockwise */
    check_input_gradient(GNN_MODEL_GCN, NULL, 2, 3, 8, 0.0f);  /* aggregates first */
    check_input_gradient(GNN_MODEL_GCN, NULL, 2, 12, 5, 0.4f); /* with dropout */
    check_input_gradient(GNN_MODEL_GCN, NULL, 1, 5, 1, 0.3f);  /* one layer */
    check_input_gradient(GNN_MODEL_SAGE, "mean", 2, 7, 6, 0.3f);
    /* (max is left out: the inputs tie at 0, where it has no derivative) */
    check_input_gradient(GNN_MODEL_SAGE, "sum", 3, 5, 4, 0.2f);
    /* Not with sparse input: the input is then the features. */
    uint64_t s = g_seed;
    fixture_t t;
    fixture(&t, 16, 4, 3, &s);
    gnn_model_config_t cfg = {GNN_MODEL_GCN, 2, 4, 4, 3, 0.0f, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    assert_int_equal(gnn_model_set_sparse_input(m, t.bxs), 0);
    expect_error(gnn_model_set_input_grad(m, 1), GNN_EUNSUPPORTED, "not with sparse input");
    assert_int_equal(gnn_model_set_sparse_input(m, NULL), 0);
    assert_int_equal(gnn_model_set_input_grad(m, 1), 0);
    expect_error(gnn_model_set_sparse_input(m, t.bxs), GNN_EUNSUPPORTED, "no input gradient");
    gnn_model_free(m);
    fixture_free(&t);
}

/*
 * Layer 0 reading its rows from a larger table by index (mini-batches read
 * the batch's feature rows where they lie): logits and every parameter
 * gradient equal, bit for bit, those on the gathered copy, for GCN and
 * SAGE multiplying first; and where it cannot (aggregating first, input
 * dropout, an input gradient) it says so.
 */
static void check_input_rows(gnn_model_kind_t kind, const char *aggr, int64_t f, int64_t hidden)
{
    uint64_t s = g_seed ^ (uint64_t)(f * 31 + hidden);
    fixture_t t;
    fixture(&t, 24, f, 3, &s);
    const int64_t tr = t.n + 11;
    float *table = malloc((size_t)(tr * f) * sizeof *table);
    int64_t rows[64];
    assert_non_null(table);
    for (int64_t i = 0; i < tr * f; i++) table[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-24) - 0.5f;
    for (int64_t i = 0; i < t.n; i++) { /* out of order, some twice */
        rows[i] = (int64_t)(tu_rng_next(&s) % (uint64_t)tr);
        memcpy(t.x + i * f, table + rows[i] * f, (size_t)f * sizeof(float));
    }
    gnn_model_config_t cfg = {kind, 2, f, hidden, 3, 0.0f, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    if (aggr) assert_int_equal(gnn_aggr_registry_find(t.reg, aggr, &cfg.aggr), 0);
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    assert_true(gnn_model_input_takes_rows(m));
    int64_t np = gnn_model_n_params(m);
    float *dl = malloc(t.n * 3 * sizeof(float)), *g0 = malloc(np * sizeof(float));
    float *l0 = malloc(t.n * 3 * sizeof(float));
    assert_true(dl && g0 && l0);
    gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) gs[l] = t.bg;
    for (int pass = 0; pass < 2; pass++) {
        const float *logits;
        double loss;
        assert_int_equal(gnn_model_set_input_rows(m, pass ? rows : NULL), 0);
        assert_int_equal(gnn_model_forward(m, gs, pass ? table : t.x, 1, &logits), 0);
        assert_int_equal(gnn_softmax_xent(t.n, 3, logits, t.labels, t.idx, t.nidx, &loss, dl), 0);
        if (pass) assert_memory_equal(logits, l0, t.n * 3 * sizeof(float));
        else memcpy(l0, logits, t.n * 3 * sizeof(float));
        assert_int_equal(gnn_model_backward(m, dl), 0);
        if (pass) assert_memory_equal(gnn_model_grads(m), g0, np * sizeof(float));
        else memcpy(g0, gnn_model_grads(m), np * sizeof(float));
    }
    expect_error(gnn_model_set_input_grad(m, 1), GNN_EUNSUPPORTED, "input rows by index");
    assert_int_equal(gnn_model_set_input_rows(m, NULL), 0);
    assert_int_equal(gnn_model_set_input_grad(m, 1), 0);
    expect_error(gnn_model_set_input_rows(m, rows), GNN_EUNSUPPORTED, "cannot read rows");
    gnn_model_free(m);
    /* Aggregating first (the layer wider than its input), or with dropout. */
    gnn_model_config_t wide = cfg, drop = cfg;
    wide.hidden = f + 2;
    drop.dropout = 0.3f;
    assert_int_equal(gnn_model_create(t.be, t.reg, &wide, 5, &m), 0);
    assert_false(gnn_model_input_takes_rows(m));
    expect_error(gnn_model_set_input_rows(m, rows), GNN_EUNSUPPORTED, "cannot read rows");
    gnn_model_free(m);
    assert_int_equal(gnn_model_create(t.be, t.reg, &drop, 5, &m), 0);
    expect_error(gnn_model_set_input_rows(m, rows), GNN_EUNSUPPORTED, "cannot read rows");
    gnn_model_free(m);
    free(dl), free(g0), free(l0), free(table);
    fixture_free(&t);
}

static void test_input_rows(void **state)
{
    (void)state;
    check_input_rows(GNN_MODEL_GCN, NULL, 12, 5);
    check_input_rows(GNN_MODEL_SAGE, "mean", 9, 6);
    check_input_rows(GNN_MODEL_SAGE, "sum", 70, 33);
}

/* Rows [0, nd) of a keeping the sources below ns: a block of nd
 * destinations over ns sources whose first nd are the destinations. */
static void block_of(const gnn_csr_t *a, int64_t nd, int64_t ns, gnn_csr_t *out)
{
    memset(out, 0, sizeof *out);
    out->n_rows = nd;
    out->n_cols = ns;
    out->indptr = calloc((size_t)nd + 1, sizeof *out->indptr);
    out->indices = malloc(((size_t)a->nnz + 1) * sizeof *out->indices);
    assert_true(out->indptr && out->indices);
    for (int64_t v = 0; v < nd; v++) {
        out->indptr[v + 1] = out->indptr[v];
        for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++)
            if (a->indices[e] < ns) out->indices[out->indptr[v + 1]++] = a->indices[e];
    }
    out->nnz = out->indptr[nd];
    out->flags = a->flags & GNN_CSR_SORTED;
}

/*
 * A mini-batch on sparse input: layer 0 takes the batch's rows of a sparse
 * feature table (gnn_csr_rows) over a block with fewer destinations than
 * sources, dropout 0.5 keyed by the rows' ids in the table. Logits and
 * every parameter gradient match the same batch on the dense gathered rows
 * with the same ids (to rounding: the sparse products skip the zeros), and
 * the masks are the ids' (other ids give other logits). A sparse input
 * whose rows are not layer 0's sources is refused.
 */
static void check_sparse_batch(gnn_model_kind_t kind, const char *aggr)
{
    uint64_t s = g_seed ^ (uint64_t)kind * 7;
    fixture_t t;
    const int64_t f = 11, ns = 20, nd = 13, nd2 = 7, tr = 45;
    fixture(&t, ns, f, 3, &s);
    /* The table: tr rows, about 60 % zeros; the batch: ns of its rows. */
    gnn_csr_t table = {0}, batch = {0}, b0, b1;
    float *dense = calloc((size_t)(tr * f), sizeof *dense);
    int64_t rows[64], ids2[64];
    assert_non_null(dense);
    for (int64_t i = 0; i < tr * f; i++)
        if (tu_rng_next(&s) % 5 >= 3) dense[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-24) - 0.5f;
    table.n_rows = tr;
    table.n_cols = f;
    table.indptr = calloc((size_t)tr + 1, sizeof *table.indptr);
    table.indices = malloc((size_t)(tr * f) * sizeof *table.indices);
    table.weights = malloc((size_t)(tr * f) * sizeof *table.weights);
    assert_true(table.indptr && table.indices && table.weights);
    for (int64_t v = 0; v < tr; v++) {
        table.indptr[v + 1] = table.indptr[v];
        for (int64_t k = 0; k < f; k++)
            if (dense[v * f + k] != 0.0f) {
                table.indices[table.indptr[v + 1]] = k;
                table.weights[table.indptr[v + 1]++] = dense[v * f + k];
            }
    }
    table.nnz = table.indptr[tr];
    table.flags = GNN_CSR_SORTED;
    for (int64_t i = 0; i < ns; i++) { /* out of order, some twice */
        rows[i] = (int64_t)(tu_rng_next(&s) % (uint64_t)tr);
        ids2[i] = (rows[i] + 1) % tr;
        memcpy(t.x + i * f, dense + rows[i] * f, (size_t)f * sizeof(float));
    }
    assert_int_equal(gnn_csr_rows(&table, rows, ns, &batch), 0);
    gnn_bsparse_t *bs, *bad;
    assert_int_equal(gnn_be_sparse_create(t.be, &batch, &bs), 0);
    assert_int_equal(gnn_be_sparse_create(t.be, &table, &bad), 0);
    block_of(&t.a, nd, ns, &b0);
    block_of(&t.a, nd2, nd, &b1);
    gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS] = {0};
    assert_int_equal(gnn_be_graph_create(t.be, &b0, &gs[0]), 0);
    assert_int_equal(gnn_be_graph_create(t.be, &b1, &gs[1]), 0);

    gnn_model_config_t cfg = {kind, 2, f, 6, 3, 0.5f, NULL, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    if (aggr) assert_int_equal(gnn_aggr_registry_find(t.reg, aggr, &cfg.aggr), 0);
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    int64_t np = gnn_model_n_params(m), idx[8] = {0, 1, 2, 3, 4, 5, 6};
    float *dl = malloc(nd2 * 3 * sizeof(float)), *g0 = malloc(np * sizeof(float));
    float *l0 = malloc(nd2 * 3 * sizeof(float));
    assert_true(dl && g0 && l0);
    for (int pass = 0; pass < 3; pass++) { /* dense, sparse, sparse with other ids */
        const float *logits;
        double loss;
        assert_int_equal(gnn_model_set_sparse_input(m, pass ? bs : NULL), 0);
        assert_int_equal(gnn_model_set_row_ids(m, pass == 2 ? ids2 : rows, tr), 0);
        gnn_model_set_rng(m, 99, 0);
        assert_int_equal(gnn_model_forward(m, gs, pass ? NULL : t.x, 1, &logits), 0);
        assert_int_equal(gnn_softmax_xent(nd2, 3, logits, t.labels, idx, nd2, &loss, dl), 0);
        if (pass == 0) memcpy(l0, logits, nd2 * 3 * sizeof(float));
        double diff = 0.0;
        for (int64_t i = 0; i < nd2 * 3; i++) diff = fmax(diff, fabs(logits[i] - l0[i]));
        if (pass == 1 && diff > 1e-5) fail_msg("sparse batch: logits %.3g off the dense", diff);
        if (pass == 2 && diff < 1e-3) fail_msg("other row ids, the same masks (%.3g)", diff);
        if (pass == 2) break;
        assert_int_equal(gnn_model_backward(m, dl), 0);
        const float *g = gnn_model_grads(m);
        if (pass == 0) {
            memcpy(g0, g, np * sizeof(float));
            continue;
        }
        for (int64_t i = 0; i < np; i++)
            if (fabsf(g[i] - g0[i]) > 1e-5f * (1.0f + fabsf(g0[i])))
                fail_msg("sparse batch: gradient %" PRId64 " %.8g, dense %.8g", i, (double)g[i],
                         (double)g0[i]);
    }
    /* The whole table is no batch of layer 0's 20 sources. */
    const float *logits;
    assert_int_equal(gnn_model_set_sparse_input(m, bad), 0);
    expect_error(gnn_model_forward(m, gs, NULL, 1, &logits), GNN_EINVAL,
                 "sparse input of 45 rows for a layer of 20 sources");
    gnn_model_free(m);
    gnn_be_graph_free(gs[0]), gnn_be_graph_free(gs[1]);
    gnn_csr_free(&b0), gnn_csr_free(&b1);
    gnn_be_sparse_free(bs), gnn_be_sparse_free(bad);
    gnn_csr_free(&batch), gnn_csr_free(&table);
    free(dl), free(g0), free(l0), free(dense);
    fixture_free(&t);
}

static void test_sparse_batch(void **state)
{
    (void)state;
    check_sparse_batch(GNN_MODEL_GCN, NULL);
    check_sparse_batch(GNN_MODEL_SAGE, "mean");
    check_sparse_batch(GNN_MODEL_SAGE, "sum");
}

static void test_layout_and_errors(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    fixture_t t;
    fixture(&t, 10, 4, 2, &s);
    const gnn_aggr_def_t *mean;
    assert_int_equal(gnn_aggr_registry_find(t.reg, "mean", &mean), 0);
    gnn_model_config_t cfg = {GNN_MODEL_SAGE, 2, 4, 3, 2, 0.5f, mean, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    gnn_model_t *m, *m2;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 1, &m), 0);
    /* SAGE: 2 (4x3) + 3, then 2 (3x2) + 2. */
    assert_int_equal(gnn_model_n_params(m), 2 * 12 + 3 + 2 * 6 + 2);
    int64_t off, cnt;
    gnn_model_layer_span(m, 1, &off, &cnt);
    assert_int_equal(off, 27);
    assert_int_equal(cnt, 14);
    /* Same seed, same parameters; biases zero; weights within the Glorot bound. */
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 1, &m2), 0);
    assert_memory_equal(gnn_model_params(m), gnn_model_params(m2), 41 * sizeof(float));
    float *w = gnn_model_params(m);
    for (int i = 24; i < 27; i++) assert_true(w[i] == 0.0f);
    for (int i = 0; i < 24; i++) assert_true(fabsf(w[i]) <= sqrtf(6.0f / 7.0f));
    gnn_model_free(m2);
    /* Fan-in: the same draws scaled to +-1/sqrt(fin) (4 inputs, then 3),
     * the biases still zero. */
    gnn_model_config_t cf = cfg;
    cf.init_fan_in = 1;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cf, 1, &m2), 0);
    const float *wf = gnn_model_params(m2);
    for (int i = 0; i < 41; i++) {
        int bias = (i >= 24 && i < 27) || i >= 39;
        double fin = i < 27 ? 4.0 : 3.0, fout = i < 27 ? 3.0 : 2.0;
        double want = bias ? 0.0 : w[i] / sqrt(6.0 / (fin + fout)) / sqrt(fin);
        if (fabs(wf[i] - want) > 1e-6) fail_msg("fan-in parameter %d: %g, want %g", i, wf[i], want);
    }
    gnn_model_free(m2);

    /* Backward before a training forward. */
    float dl[20] = {0};
    expect_error(gnn_model_backward(m, dl), GNN_EINVAL, "no training forward");
    gnn_model_free(m);

    gnn_model_config_t bad = cfg;
    bad.layers = 0;
    expect_error(gnn_model_create(t.be, t.reg, &bad, 1, &m), GNN_EINVAL, "layers 0");
    bad = cfg;
    bad.dropout = 1.0f;
    expect_error(gnn_model_create(t.be, t.reg, &bad, 1, &m), GNN_EINVAL, "dropout 1");
    bad = cfg;
    bad.aggr = NULL;
    expect_error(gnn_model_create(t.be, t.reg, &bad, 1, &m), GNN_EINVAL, "needs an aggregator");
    /* Sparse input: not with a non-linear aggregator, nor of the wrong width. */
    const gnn_aggr_def_t *mx;
    assert_int_equal(gnn_aggr_registry_find(t.reg, "max", &mx), 0);
    gnn_model_config_t cm = cfg;
    cm.aggr = mx;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cm, 1, &m), 0);
    expect_error(gnn_model_set_sparse_input(m, t.bxs), GNN_EUNSUPPORTED,
                 "sparse input needs a linear aggregator (sum, mean, gcn), not max");
    gnn_model_free(m);
    cm = cfg;
    cm.in_dim = 5;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cm, 1, &m), 0);
    expect_error(gnn_model_set_sparse_input(m, t.bxs), GNN_EINVAL,
                 "sparse input has 4 columns, the model 5");
    gnn_model_free(m);
    gnn_model_kind_t k;
    expect_error(gnn_model_kind_from_name("gin", &k), GNN_EINVAL,
                 "unknown model \"gin\" (expected gcn, sage, gat or rgcn)");
    fixture_free(&t);
}

/* Halo hooks that count their calls per exchange. */
typedef struct {
    int forward[GNN_MODEL_MAX_LAYERS], backward[GNN_MODEL_MAX_LAYERS];
} halo_calls_t;

static int count_forward(void *ctx, int k, int training, float *x, int64_t f)
{
    (void)training, (void)x, (void)f;
    ((halo_calls_t *)ctx)->forward[k]++;
    return 0;
}

static int count_backward(void *ctx, int k, float *g, int64_t f)
{
    (void)g, (void)f;
    ((halo_calls_t *)ctx)->backward[k]++;
    return 0;
}

/*
 * A model spread over ranks on a rank that owns no row (an empty part):
 * a training forward and the backward succeed, every exchange is made in
 * both directions (the others wait for it), and the gradients are zero.
 * GCN in both product orders, SAGE with a linear and a non-linear
 * aggregator, GAT (2 heads, attention dropout), with dropout.
 */
static void test_empty_rows_with_halo(void **state)
{
    (void)state;
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    gnn_csr_t a = {0};
    int64_t indptr[1] = {0}, indices[1] = {0};
    a.indptr = indptr;
    a.indices = indices;
    gnn_bgraph_t *bg;
    assert_int_equal(gnn_be_graph_create(be, &a, &bg), 0);
    float *x, *dlogits;
    int64_t *ids;
    assert_int_equal(gnn_be_alloc(be, 0, (void **)&x), 0);
    assert_int_equal(gnn_be_alloc(be, 0, (void **)&dlogits), 0);
    assert_int_equal(gnn_be_alloc(be, 0, (void **)&ids), 0);
    struct {
        gnn_model_kind_t kind;
        const char *aggr;
        int layers;
        int64_t in, hidden;
        int heads;
    } cases[] = {
        {GNN_MODEL_GCN, "gcn", 2, 8, 4, 0},  {GNN_MODEL_GCN, "gcn", 3, 4, 8, 0},
        {GNN_MODEL_SAGE, "max", 2, 8, 4, 0}, {GNN_MODEL_SAGE, "mean", 3, 8, 4, 0},
        {GNN_MODEL_SAGE, "mean", 3, 4, 8, 0}, {GNN_MODEL_GAT, NULL, 3, 6, 4, 2},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const gnn_aggr_def_t *ag = NULL;
        if (cases[c].aggr) assert_int_equal(gnn_aggr_registry_find(reg, cases[c].aggr, &ag), 0);
        gnn_model_config_t cfg = {cases[c].kind, cases[c].layers, cases[c].in, cases[c].hidden,
                                  3, 0.5f, ag, cases[c].heads, 1, 0.5f, 0.2f, NULL, 0, NULL, NULL, 0, 0, 0};
        const char *an = cases[c].aggr ? cases[c].aggr : "attention";
        gnn_model_t *m;
        assert_int_equal(gnn_model_create(be, reg, &cfg, 1, &m), 0);
        halo_calls_t calls = {{0}, {0}};
        gnn_model_halo_t h = {.ctx = &calls, .forward = count_forward,
                              .backward = count_backward, .n_rows = 0, .row_id = ids,
                              .n_global = 30};
        assert_int_equal(gnn_model_set_halo(m, &h), 0);
        gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < cfg.layers; l++) gs[l] = bg;
        const float *logits;
        int rc = gnn_model_forward(m, gs, x, 1, &logits);
        if (rc == 0) rc = gnn_model_backward(m, dlogits);
        if (rc != 0)
            fail_msg("%s/%s, %d layers: %s", gnn_model_kind_name(cfg.kind), an, cfg.layers,
                     gnn_error_message());
        for (int k = 0; k < cfg.layers - 1; k++)
            if (calls.forward[k] != 1 || calls.backward[k] != 1)
                fail_msg("%s/%s, %d layers: exchange %d made %d times forward, %d backward",
                         gnn_model_kind_name(cfg.kind), an, cfg.layers, k,
                         calls.forward[k], calls.backward[k]);
        const float *g = gnn_model_grads(m);
        for (int64_t i = 0; i < gnn_model_n_params(m); i++) assert_true(g[i] == 0.0f);
        gnn_model_free(m);
    }
    gnn_be_free(be, x);
    gnn_be_free(be, dlogits);
    gnn_be_free(be, ids);
    gnn_be_graph_free(bg);
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be);
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcn_gradients),
        cmocka_unit_test(test_sage_gradients),
        cmocka_unit_test(test_input_gradients),
        cmocka_unit_test(test_input_rows),
        cmocka_unit_test(test_sparse_batch),
        cmocka_unit_test(test_layout_and_errors),
        cmocka_unit_test(test_empty_rows_with_halo),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
