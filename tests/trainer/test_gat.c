/*
 * Tests of the GAT layer (trainer/layers/gat.c) through the model on the
 * CPU backend: every parameter gradient of the backward against central
 * differences of the training loss (the float forward, the dropout masks
 * replayed by resetting the generator; the scores' LeakyReLU nearly linear,
 * slope 0.9999, so that no switch lies within a step of the point among
 * hundreds of scores: its slope's backward is checked in double precision
 * by tests/kernels/test_attn.c), with concatenated hidden heads
 * (ELU between layers) and averaged output heads, with and without input
 * and attention dropout, one to three layers; the dropped input drawn
 * block by block against one block; and the parameter layout.
 * The same gradient check with the example version 2 plug-in gatv2.so
 * (argv[1]) as the attention function, its score and backward against a
 * double reference at slope 0.2 through the backend, and what the plug-in
 * path refuses. (A GAT model over ranks on a part with no rows:
 * tests/trainer/test_model.c.)
 *
 * A version 2 aggregator with a learnable tensor (the test plug-in
 * scaled_sum.so, argv[2]) in GraphSAGE: gradients, layout, refusal.
 *
 *   test_gat GATV2.so SCALED_SUM.so
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testgraph.h"
#include "tests/common/testrng.h"
#include "graph/base/error.h"
#include "kernels/backend.h"
#include "kernels/dense.h"
#include "trainer/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;
static const char *g_gatv2;  /* path of gatv2.so */
static const char *g_scaled; /* path of the test plug-in scaled_sum.so */

typedef struct {
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    gnn_csr_t a;
    gnn_bgraph_t *bg;
    int64_t n, f, classes;
    float *x;
    int64_t labels[64], idx[64], nidx;
} fixture_t;

/* A symmetric random graph of n nodes (node 0 isolated: only its self
 * loop), features in [-1, 1), labels. */
static void fixture(fixture_t *t, int64_t n, int64_t f, int64_t classes, uint64_t *s)
{
    memset(t, 0, sizeof *t);
    assert_int_equal(gnn_backend_open("cpu", &t->be), 0);
    assert_int_equal(gnn_aggr_registry_create(&t->reg), 0);
    assert_true(n <= 64);
    tu_random_graph(n, 2 * n, s, &t->a);
    assert_int_equal(gnn_be_graph_create(t->be, &t->a, &t->bg), 0);
    t->n = n, t->f = f, t->classes = classes;
    t->x = malloc(n * f * sizeof *t->x);
    assert_non_null(t->x);
    for (int64_t i = 0; i < n * f; i++) t->x[i] = (float)((tu_rng_next(s) >> 40) * 0x1p-23) - 1.0f;
    for (int64_t v = 0; v < n; v++) t->labels[v] = (int64_t)(tu_rng_next(s) % (uint64_t)classes);
    t->nidx = 0;
    for (int64_t v = 0; v < n; v += 2) t->idx[t->nidx++] = v;
}

static void fixture_free(fixture_t *t)
{
    free(t->x);
    gnn_be_graph_free(t->bg);
    gnn_csr_free(&t->a);
    gnn_aggr_registry_free(t->reg);
    gnn_backend_close(t->be);
}

/* The training loss with the dropout stream reset (the same masks). */
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

/* The attention function called name, loading gatv2.so for it. */
static const gnn_aggr_def_t *attention(fixture_t *t, const char *name)
{
    if (!strcmp(name, "gatv2")) assert_int_equal(gnn_aggr_registry_load(t->reg, g_gatv2), 0);
    const gnn_aggr_def_t *d = NULL;
    assert_int_equal(gnn_aggr_registry_find_kind(t->reg, name, GNN_AGGR_KIND_ATTENTION, &d), 0);
    return d;
}

/* The parameter gradients of model cfg on t from layer `from` on against
 * central differences of its float loss; what names the case in messages.
 * (Below a ReLU, a step of the differences may cross a switch of it:
 * checks of a ReLU model start after the last ReLU.) */
static void check_model_gradients(fixture_t *t, const gnn_model_config_t *cfg, const char *what,
                                  uint64_t *s, int from)
{
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t->be, t->reg, cfg, 5, &m), 0);
    int64_t np = gnn_model_n_params(m);
    float *dl = malloc(t->n * 3 * sizeof(float)), *grad = malloc(np * sizeof(float));
    assert_true(dl && grad);
    float *w = gnn_model_params(m);
    for (int64_t i = 0; i < np; i++) /* biases start at zero */
        if (w[i] == 0.0f) w[i] = 0.1f * ((float)((tu_rng_next(s) >> 40) * 0x1p-24) - 0.5f);
    loss_of(t, m, dl);
    assert_int_equal(gnn_model_backward(m, dl), 0);
    memcpy(grad, gnn_model_grads(m), np * sizeof(float));
    double gmax = 0.0;
    for (int64_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(grad[i]));
    assert_true(gmax > 0.0);
    int bad = 0;
    int64_t first, span;
    gnn_model_layer_span(m, from, &first, &span);
    for (int64_t i = first; i < np; i++) {
        float keep = w[i];
        int ok = 0;
        double fd = 0.0;
        for (int k = 0; k < 2 && !ok; k++) {
            float hh = k ? 2e-3f : 1e-2f;
            w[i] = keep + hh;
            double lp = loss_of(t, m, dl);
            w[i] = keep - hh;
            double lm = loss_of(t, m, dl);
            fd = (lp - lm) / (2.0 * (double)hh);
            ok = fabs(fd - grad[i]) <= 2e-3 * gmax + 2e-2 * fabs(fd);
        }
        w[i] = keep;
        if (!ok && bad++ < 5)
            print_message("%s param %" PRId64 ": backward %.6g, differences %.6g\n", what, i,
                          (double)grad[i], fd);
    }
    if (bad) fail_msg("%s: %d of %" PRId64 " gradients off (seed %" PRIu64 ")", what, bad, np,
                      g_seed);
    free(dl), free(grad);
    gnn_model_free(m);
}

static void check_gradients_with(const char *attn, int layers, int64_t f, int64_t hidden,
                                 int heads, int out_heads, float dropout, float attn_dropout)
{
    uint64_t s = g_seed ^ (uint64_t)(layers * 131 + f * 7 + heads);
    fixture_t t;
    fixture(&t, 20, f, 3, &s);
    gnn_model_config_t cfg = {GNN_MODEL_GAT, layers, f, hidden, 3, dropout, NULL,
                              heads, out_heads, attn_dropout, 0.9999f, attention(&t, attn),
                                  0, NULL, NULL, 0, 0, 0};
    char what[96];
    snprintf(what, sizeof what, "%s L=%d heads %d/%d", attn, layers, heads, out_heads);
    check_model_gradients(&t, &cfg, what, &s, 0);
    fixture_free(&t);
}

static void check_gradients(int layers, int64_t f, int64_t hidden, int heads, int out_heads,
                            float dropout, float attn_dropout)
{
    check_gradients_with("gat", layers, f, hidden, heads, out_heads, dropout, attn_dropout);
}

static void test_gradients(void **state)
{
    (void)state;
    check_gradients(2, 6, 4, 3, 2, 0.0f, 0.0f); /* concatenated, then averaged heads */
    check_gradients(2, 5, 3, 2, 1, 0.3f, 0.3f); /* input and attention dropout */
    check_gradients(3, 4, 2, 2, 1, 0.0f, 0.2f); /* ELU between two hidden layers */
    check_gradients(1, 5, 4, 1, 3, 0.2f, 0.0f); /* the output layer alone */
}

/* Two models of cfg on t, the second changed by vary (k = 1): one
 * training step each (the dropout stream reset), then their logits of a
 * training forward and their gradients agree within rtol of the largest;
 * what and the names a, b say which case failed. */
static void compare_models(fixture_t *t, const gnn_model_config_t *cfg,
                           void (*vary)(gnn_model_t *m, void *ctx), void *ctx, double rtol,
                           const char *what, const char *a, const char *b)
{
    gnn_model_t *m[2];
    float *lg[2], *gr[2];
    int64_t np = 0;
    for (int k = 0; k < 2; k++) {
        assert_int_equal(gnn_model_create(t->be, t->reg, cfg, 5, &m[k]), 0);
        if (k) vary(m[k], ctx);
        np = gnn_model_n_params(m[k]);
        lg[k] = malloc(t->n * 3 * sizeof(float));
        gr[k] = malloc(np * sizeof(float));
        assert_true(lg[k] && gr[k]);
        loss_of(t, m[k], lg[k]); /* dlogits */
        assert_int_equal(gnn_model_backward(m[k], lg[k]), 0);
        memcpy(gr[k], gnn_model_grads(m[k]), np * sizeof(float));
        gnn_bgraph_t *gs[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < GNN_MODEL_MAX_LAYERS; l++) gs[l] = t->bg;
        const float *logits;
        gnn_model_set_rng(m[k], 99, 0);
        assert_int_equal(gnn_model_forward(m[k], gs, t->x, 1, &logits), 0);
        memcpy(lg[k], logits, t->n * 3 * sizeof(float));
    }
    double lmax = 0.0, gmax = 0.0;
    for (int64_t i = 0; i < t->n * 3; i++) lmax = fmax(lmax, fabs(lg[0][i]));
    for (int64_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(gr[0][i]));
    assert_true(lmax > 0.0 && gmax > 0.0);
    for (int64_t i = 0; i < t->n * 3; i++)
        if (fabs(lg[0][i] - lg[1][i]) > rtol * lmax)
            fail_msg("%s: logit %" PRId64 " %s %.8g, %s %.8g", what, i, a, (double)lg[0][i], b,
                     (double)lg[1][i]);
    for (int64_t i = 0; i < np; i++)
        if (fabs(gr[0][i] - gr[1][i]) > rtol * gmax)
            fail_msg("%s: gradient %" PRId64 " %s %.8g, %s %.8g", what, i, a, (double)gr[0][i],
                     b, (double)gr[1][i]);
    for (int k = 0; k < 2; k++) {
        free(lg[k]), free(gr[k]);
        gnn_model_free(m[k]);
    }
}

static void use_sparse_input(gnn_model_t *m, void *bxs)
{
    assert_int_equal(gnn_model_set_sparse_input(m, bxs), 0);
}

/*
 * Layer 0 on the sparse input (--sparse-features): Wh = S W and dW = S^T
 * dWh, with S = dropout(X) drawn with the dense matrix's counters. The
 * same logits and gradients as on the dense input, within rounding, with
 * input and attention dropout, for concatenated and averaged heads.
 */
static void test_sparse_input(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5a5a;
    fixture_t t;
    fixture(&t, 24, 9, 3, &s);
    for (int64_t i = 0; i < t.n * t.f; i++) /* about 60 % zeros */
        if ((tu_rng_next(&s) >> 40) % 5 < 3) t.x[i] = 0.0f;
    gnn_csr_t xs = {0};
    int64_t nz = 0;
    for (int64_t i = 0; i < t.n * t.f; i++) nz += t.x[i] != 0.0f;
    xs.n_rows = t.n, xs.n_cols = t.f, xs.nnz = nz;
    xs.indptr = malloc((t.n + 1) * sizeof *xs.indptr);
    xs.indices = malloc((nz + 1) * sizeof *xs.indices);
    xs.weights = malloc((nz + 1) * sizeof *xs.weights);
    assert_true(xs.indptr && xs.indices && xs.weights);
    xs.indptr[0] = 0;
    for (int64_t v = 0, e = 0; v < t.n; v++) {
        for (int64_t k = 0; k < t.f; k++)
            if (t.x[v * t.f + k] != 0.0f) xs.indices[e] = k, xs.weights[e++] = t.x[v * t.f + k];
        xs.indptr[v + 1] = e;
    }
    xs.flags = GNN_CSR_SORTED | GNN_CSR_DEDUPED;
    gnn_bsparse_t *bxs;
    assert_int_equal(gnn_be_sparse_create(t.be, &xs, &bxs), 0);
    const int heads[2][2] = {{3, 2}, {2, 1}};
    for (int c = 0; c < 2; c++) {
        gnn_model_config_t cfg = {GNN_MODEL_GAT, 2, t.f, 4, 3, 0.3f, NULL, heads[c][0],
                                  heads[c][1], 0.3f, 0.2f, attention(&t, "gat"), 0, NULL, NULL,
                                  0, 0, 0};
        char what[32];
        snprintf(what, sizeof what, "heads %d/%d", heads[c][0], heads[c][1]);
        compare_models(&t, &cfg, use_sparse_input, bxs, 1e-5, what, "dense", "sparse");
    }
    gnn_be_sparse_free(bxs);
    gnn_csr_free(&xs);
    fixture_free(&t);
}

static void blocks_of_5(gnn_model_t *m, void *ctx)
{
    (void)ctx;
    gnn_model_set_block_rows(m, 5);
}

/*
 * With input dropout GAT draws D's rows block by block (no n_src x fin
 * copy): the logits and gradients with blocks of 5 rows against one block,
 * within rounding, with attention dropout, two and three layers.
 */
static void test_dropped_input_blocks(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0xb10c;
    fixture_t t;
    fixture(&t, 23, 7, 3, &s);
    for (int layers = 2; layers <= 3; layers++) {
        gnn_model_config_t cfg = {GNN_MODEL_GAT, layers, t.f, 4, 3, 0.4f, NULL, 3, 2, 0.3f,
                                  0.2f, attention(&t, "gat"), 0, NULL, NULL, 0, 0, 0};
        char what[32];
        snprintf(what, sizeof what, "%d layers", layers);
        compare_models(&t, &cfg, blocks_of_5, NULL, 1e-6, what, "one block", "blocks of 5");
    }
    fixture_free(&t);
}

static void test_layout(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    fixture_t t;
    fixture(&t, 10, 5, 3, &s);
    gnn_model_config_t cfg = {GNN_MODEL_GAT, 2, 5, 4, 3, 0.0f, NULL, 8, 2, 0.6f, 0.2f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 1, &m), 0);
    /* Layer 0: W 5 x 32, a_l and a_r 8 x 4, b 32; layer 1: W 32 x 6,
     * a_l and a_r 2 x 3, b 3 (the averaged heads' width). */
    int64_t off, cnt, fin, fout;
    gnn_model_layer_span(m, 0, &off, &cnt);
    assert_int_equal(cnt, 5 * 32 + 2 * 32 + 32);
    gnn_model_layer_width(m, 0, &fin, &fout);
    assert_int_equal(fout, 32);
    gnn_model_layer_span(m, 1, &off, &cnt);
    assert_int_equal(off, 5 * 32 + 2 * 32 + 32);
    assert_int_equal(cnt, 32 * 6 + 2 * 6 + 3);
    gnn_model_layer_width(m, 1, &fin, &fout);
    assert_int_equal(fin, 32);
    assert_int_equal(fout, 3);
    /* Biases zero, attention vectors drawn. */
    const float *w = gnn_model_params(m);
    for (int64_t i = 5 * 32 + 2 * 32; i < 5 * 32 + 3 * 32; i++) assert_true(w[i] == 0.0f);
    assert_true(w[5 * 32] != 0.0f);
    gnn_model_free(m);
    cfg.heads = 65;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 1, &m), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "heads 65 and 2 outside [1, 64]"));
    cfg.heads = 8;
    cfg.attn_dropout = 1.0f;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 1, &m), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "attention dropout 1 outside [0, 1)"));
    fixture_free(&t);
}

static void test_gatv2_gradients(void **state)
{
    (void)state;
    check_gradients_with("gatv2", 2, 6, 4, 3, 2, 0.0f, 0.0f);
    check_gradients_with("gatv2", 2, 5, 3, 2, 1, 0.3f, 0.3f);
    check_gradients_with("gatv2", 1, 5, 4, 1, 3, 0.2f, 0.0f);
}

/* gatv2's score and backward through the backend against the formulas of
 * kernels/plugins/gatv2/gatv2.c in double, at slope 0.2: slots of
 * destination v are its CSR entries then the added self loop. */
static void test_gatv2_reference(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x9a72ull;
    fixture_t t;
    fixture(&t, 24, 1, 2, &s);
    const gnn_aggr_def_t *d = attention(&t, "gatv2");
    const int64_t H = 3, F = 5, W = H * F, n = t.n;
    const float slope = 0.2f;
    gnn_attn_opts_t o = {.heads = H, .f = F, .self_loop = 1, .negative_slope = slope};
    int64_t slots = gnn_be_attn_slots(t.bg, 1), nnz = t.a.nnz;
    assert_int_equal(slots, nnz + n);
    float *x = malloc(n * W * sizeof *x), *a = malloc(W * sizeof *a), *sc = malloc(slots * H * 4),
          *ds = malloc(slots * H * 4), *dx = malloc(n * W * 4), *dx0 = malloc(n * W * 4),
          *da = malloc(W * 4);
    double *rdx = calloc(n * W, sizeof *rdx), *rda = calloc(W, sizeof *rda);
    assert_true(x && a && sc && ds && dx && dx0 && da && rdx && rda);
    for (int64_t i = 0; i < n * W; i++) x[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-23) - 1.0f;
    for (int64_t i = 0; i < W; i++) a[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-23) - 1.0f;
    for (int64_t i = 0; i < slots * H; i++)
        ds[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-23) - 1.0f;
    for (int64_t i = 0; i < n * W; i++) dx0[i] = dx[i] = (float)(i % 7) * 0.25f;
    size_t wsb = 0;
    assert_int_equal(gnn_be_attn_workspace(t.be, t.bg, d, &o, &wsb), 0);
    void *ws = malloc(wsb ? wsb : 1);
    assert_non_null(ws);
    assert_int_equal(gnn_be_attn_score(t.be, t.bg, d, &o, a, x, sc, ws, wsb), 0);
    assert_int_equal(gnn_be_attn_score_backward(t.be, t.bg, d, &o, a, x, ds, dx, da, ws, wsb), 0);
    double worst = 0.0;
    for (int64_t v = 0; v < n; v++) {
        int64_t first = t.a.indptr[v] + v, deg = t.a.indptr[v + 1] - t.a.indptr[v];
        for (int64_t i = 0; i <= deg; i++) {
            int64_t u = i < deg ? t.a.indices[t.a.indptr[v] + i] : v, j = first + i;
            for (int64_t h = 0; h < H; h++) {
                double r = 0.0, dsj = ds[j * H + h];
                for (int64_t k = 0; k < F; k++) {
                    int64_t c = h * F + k;
                    double z = (double)x[u * W + c] + (double)x[v * W + c];
                    r += (double)a[c] * (z > 0 ? z : z * slope);
                    double g = dsj * (double)a[c] * (z > 0 ? 1.0 : (double)slope);
                    rdx[u * W + c] += g;
                    rdx[v * W + c] += g;
                    rda[c] += dsj * (z > 0 ? z : z * slope);
                }
                worst = fmax(worst, fabs(r - (double)sc[j * H + h]) / (1.0 + fabs(r)));
            }
        }
    }
    assert_true(worst < 1e-5);
    for (int64_t i = 0; i < n * W; i++)
        assert_true(fabs((double)dx[i] - ((double)dx0[i] + rdx[i])) <= 1e-4 * (1.0 + fabs(rdx[i])));
    for (int64_t c = 0; c < W; c++)
        assert_true(fabs((double)da[c] - rda[c]) <= 1e-4 * (1.0 + fabs(rda[c])));

    /* What the path refuses: an aggregator in an attention call, a small
     * workspace (the plug-in's own message), a CUDA-only entry. */
    const gnn_aggr_def_t *mean = NULL;
    assert_int_equal(gnn_aggr_registry_find(t.reg, "mean", &mean), 0);
    assert_int_equal(gnn_be_attn_score(t.be, t.bg, mean, &o, a, x, sc, ws, wsb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "mean is not an attention function"));
    assert_int_equal(gnn_be_attn_score(t.be, t.bg, d, &o, a, x, sc, ws, wsb - 8), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "workspace of"));
    gnn_aggr_def_t gpu_only = *d;
    gpu_only.cpu_score = NULL;
    gpu_only.cpu_score_backward = NULL;
    assert_int_equal(gnn_be_attn_score(t.be, t.bg, &gpu_only, &o, a, x, sc, ws, wsb),
                     GNN_EUNSUPPORTED);
    assert_non_null(strstr(gnn_error_message(), "attention function gatv2 has no CPU score"));
    /* A block with more destinations than sources: a score reads each
     * destination's own row among the sources, which are too few. */
    gnn_eid_t tall_ptr[] = {0, 1, 2, 2};
    gnn_vid_t tall_idx[] = {1, 0};
    gnn_csr_t tall = {.n_rows = 3, .n_cols = 2, .nnz = 2, .indptr = tall_ptr,
                      .indices = tall_idx};
    gnn_bgraph_t *tg = NULL;
    assert_int_equal(gnn_be_graph_create(t.be, &tall, &tg), 0);
    gnn_attn_opts_t to = o;
    to.self_loop = 0;
    assert_int_equal(gnn_be_attn_score(t.be, tg, d, &to, a, x, sc, ws, wsb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "3 destinations but 2 sources"));
    gnn_be_graph_free(tg);
    free(ws), free(x), free(a), free(sc), free(ds), free(dx), free(dx0), free(da), free(rdx),
        free(rda);
    fixture_free(&t);
}

/* A version 2 aggregator with a learnable tensor (scaled_sum.so) in
 * GraphSAGE: the last layer's gradients, its tensor's among them, at every
 * depth (layer 0 alone too, which forms no input gradient otherwise; the
 * layers below a ReLU are left to tests/trainer/test_model.c's double
 * model for the built-ins), its tensor laid out after the layer's own and
 * initialised as declared; a plain aggregator call refuses it. */
static void test_learnable_aggregator(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5ca1ull;
    fixture_t t;
    fixture(&t, 20, 5, 3, &s);
    assert_int_equal(gnn_aggr_registry_load(t.reg, g_scaled), 0);
    const gnn_aggr_def_t *d = NULL;
    assert_int_equal(gnn_aggr_registry_find_kind(t.reg, "scaled_sum", GNN_AGGR_KIND_AGGREGATE, &d),
                     0);
    for (int layers = 1; layers <= 3; layers++) {
        gnn_model_config_t cfg = {GNN_MODEL_SAGE, layers, 5, 4, 3, layers == 2 ? 0.3f : 0.0f, d,
                                  0, 0, 0.0f, 0.0f, NULL, 0, NULL, NULL, 0, 0, 0};
        char what[64];
        snprintf(what, sizeof what, "sage/scaled_sum L=%d", layers);
        check_model_gradients(&t, &cfg, what, &s, layers - 1);
    }
    /* Layer 0 of a 2-layer model: W_neigh 5x4, W_self 5x4, b 4, scale 5. */
    gnn_model_config_t cfg = {GNN_MODEL_SAGE, 2, 5, 4, 3, 0.0f, d, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    int64_t off, cnt;
    gnn_model_layer_span(m, 0, &off, &cnt);
    assert_int_equal(cnt, 2 * 20 + 4 + 5);
    const float *w = gnn_model_params(m);
    for (int k = 0; k < 5; k++) assert_true(w[44 + k] == 0.5f);
    gnn_model_layer_span(m, 1, &off, &cnt);
    assert_int_equal(cnt, 2 * 12 + 3 + 4);
    gnn_model_free(m);
    float x[20 * 5] = {0}, y[20 * 5];
    assert_int_equal(gnn_be_aggr_forward(t.be, t.bg, d, 5, x, y, NULL, 0), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "it has learnable parameters, none given"));
    fixture_free(&t);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s GATV2.so SCALED_SUM.so\n", argv[0]);
        return 2;
    }
    g_gatv2 = argv[1];
    g_scaled = argv[2];
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_layout),
        cmocka_unit_test(test_sparse_input),
        cmocka_unit_test(test_dropped_input_blocks),
        cmocka_unit_test(test_gatv2_gradients),
        cmocka_unit_test(test_gatv2_reference),
        cmocka_unit_test(test_learnable_aggregator),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
