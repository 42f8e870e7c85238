/*
 * Tests of the GAT layer (trainer/layers/gat.c) through the model on the
 * CPU backend: every parameter gradient of the backward against central
 * differences of the training loss (the float forward, the dropout masks
 * replayed by resetting the generator; the scores' LeakyReLU nearly linear,
 * slope 0.9999, so that no switch lies within a step of the point among
 * hundreds of scores: its slope's backward is checked in double precision
 * by tests/kernels/test_attn.c), with concatenated hidden heads
 * (ELU between layers) and averaged output heads, with and without input
 * and attention dropout, one to three layers; and the parameter layout.
 * (A GAT model over ranks on a part with no rows: tests/trainer/test_model.c.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

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
    int64_t m = 2 * n;
    gnn_vid_t src[128], dst[128];
    assert_true(m <= 128 && n <= 64);
    for (int64_t i = 0; i < m; i++) {
        src[i] = 1 + (gnn_vid_t)(tu_rng_next(s) % (uint64_t)(n - 1));
        dst[i] = 1 + (gnn_vid_t)(tu_rng_next(s) % (uint64_t)(n - 1));
    }
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &t->a),
                     0);
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

static void check_gradients(int layers, int64_t f, int64_t hidden, int heads, int out_heads,
                            float dropout, float attn_dropout)
{
    uint64_t s = g_seed ^ (uint64_t)(layers * 131 + f * 7 + heads);
    fixture_t t;
    fixture(&t, 20, f, 3, &s);
    gnn_model_config_t cfg = {GNN_MODEL_GAT, layers, f, hidden, 3, dropout, NULL,
                              heads, out_heads, attn_dropout, 0.9999f};
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(t.be, t.reg, &cfg, 5, &m), 0);
    int64_t np = gnn_model_n_params(m);
    float *dl = malloc(t.n * 3 * sizeof(float)), *grad = malloc(np * sizeof(float));
    assert_true(dl && grad);
    float *w = gnn_model_params(m);
    for (int64_t i = 0; i < np; i++) /* biases start at zero */
        if (w[i] == 0.0f) w[i] = 0.1f * ((float)((tu_rng_next(&s) >> 40) * 0x1p-24) - 0.5f);
    loss_of(&t, m, dl);
    assert_int_equal(gnn_model_backward(m, dl), 0);
    memcpy(grad, gnn_model_grads(m), np * sizeof(float));
    double gmax = 0.0;
    for (int64_t i = 0; i < np; i++) gmax = fmax(gmax, fabs(grad[i]));
    assert_true(gmax > 0.0);
    int bad = 0;
    for (int64_t i = 0; i < np; i++) {
        float keep = w[i];
        int ok = 0;
        double fd = 0.0;
        for (int k = 0; k < 2 && !ok; k++) {
            float hh = k ? 2e-3f : 1e-2f;
            w[i] = keep + hh;
            double lp = loss_of(&t, m, dl);
            w[i] = keep - hh;
            double lm = loss_of(&t, m, dl);
            fd = (lp - lm) / (2.0 * (double)hh);
            ok = fabs(fd - grad[i]) <= 2e-3 * gmax + 2e-2 * fabs(fd);
        }
        w[i] = keep;
        if (!ok && bad++ < 5)
            print_message("gat L=%d heads %d/%d param %" PRId64 ": backward %.6g, differences "
                          "%.6g\n",
                          layers, heads, out_heads, i, (double)grad[i], fd);
    }
    if (bad) fail_msg("%d of %" PRId64 " gradients off (seed %" PRIu64 ")", bad, np, g_seed);
    free(dl), free(grad);
    gnn_model_free(m);
    fixture_free(&t);
}

static void test_gradients(void **state)
{
    (void)state;
    check_gradients(2, 6, 4, 3, 2, 0.0f, 0.0f); /* concatenated, then averaged heads */
    check_gradients(2, 5, 3, 2, 1, 0.3f, 0.3f); /* input and attention dropout */
    check_gradients(3, 4, 2, 2, 1, 0.0f, 0.2f); /* ELU between two hidden layers */
    check_gradients(1, 5, 4, 1, 3, 0.2f, 0.0f); /* the output layer alone */
}

static void test_layout(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    fixture_t t;
    fixture(&t, 10, 5, 3, &s);
    gnn_model_config_t cfg = {GNN_MODEL_GAT, 2, 5, 4, 3, 0.0f, NULL, 8, 2, 0.6f, 0.2f};
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

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gradients),
        cmocka_unit_test(test_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
