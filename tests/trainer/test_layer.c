/*
 * Tests of the layer interface (trainer/layer.h) and its registry: a kind
 * written here, outside the trainer, in one file's worth of code (a layer
 * of each node alone: Z = D W + b, reading no halo rows) runs through the
 * model's forward and backward, and gives the output and every gradient a
 * double-precision computation of the same two-layer network gives (ReLU
 * between the layers, input gradient through it); over ranks the model
 * makes no halo exchange around such layers, and every exchange around
 * graph layers. The registry finds the built-ins by name, lists them, and
 * names the valid ones for an unknown name.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/error.h"
#include "kernels/backend.h"
#include "trainer/layer.h"
#include "trainer/model.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

/* ---- A kind of its own: Z = D[:n_dst] W + b ------------------------------- */

static int dense_setup(gnn_layer_t *L)
{
    L->count = L->fin * L->fout + L->fout;
    return 0;
}

static void dense_init(const gnn_layer_t *L, float *w, uint64_t seed)
{
    gnn_layer_glorot(L, w, 0, L->fin, L->fout, seed);
}

static int dense_drop_target(gnn_layer_t *L, gnn_layer_env_t *env, float **dst)
{
    *dst = NULL;
    int rc = gnn_layer_ensure(env->be, (void **)&L->drop, &L->drop_bytes,
                              gnn_layer_fbytes(L->n_src, L->fin));
    *dst = L->drop;
    return rc;
}

static int dense_forward(gnn_layer_t *L, gnn_layer_env_t *env)
{
    const float *p = env->params + L->off;
    int rc = gnn_layer_ensure(env->be, (void **)&L->z, &L->z_bytes,
                              gnn_layer_fbytes(env->out_rows, L->fout));
    if (rc == 0)
        rc = gnn_be_gemm(env->be, 0, 0, L->n_dst, L->fout, L->fin, 1.0f, L->d, L->fin, p, L->fout,
                         0.0f, L->z, L->fout);
    if (rc == 0) rc = gnn_be_bias_add(env->be, L->n_dst, L->fout, L->z, p + L->fin * L->fout);
    return rc;
}

static void dense_scratch(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s)
{
    (void)L, (void)input_grad;
    memset(s, 0, sizeof *s);
}

static int dense_backward(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx)
{
    gnn_backend_t *be = env->be;
    const float *w = env->params + L->off;
    float *dw = env->grads + L->off;
    int64_t nd = L->n_dst, ns = L->n_src, fin = L->fin, fout = L->fout;
    int rc = gnn_be_bias_grad(be, nd, fout, dz, dw + fin * fout);
    if (rc == 0) rc = gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->d, fin, dz, fout, 0.0f, dw, fout);
    if (rc < 0 || !dx) return rc;
    float *dd = env->dx;
    rc = gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, w, fout, 0.0f, dd, fin);
    if (rc == 0 && ns > nd) rc = gnn_be_zero(be, dd + nd * fin, gnn_layer_fbytes(ns - nd, fin));
    if (rc == 0) rc = env->input_grad(env, L, 0, ns, dd, dd);
    *dx = dd;
    return rc;
}

static size_t dense_state_bytes(const gnn_layer_t *L)
{
    (void)L;
    return 0;
}

static const gnn_layer_kind_t dense_kind = {
    .name = "dense",
    .default_aggr = "sum", /* not used: the layer reads no graph */
    .any_aggr = 0,
    .square_sources = 1,
    .reads_halo = 0,
    .setup = dense_setup,
    .init = dense_init,
    .forward = dense_forward,
    .drop_target = dense_drop_target,
    .scratch = dense_scratch,
    .backward = dense_backward,
    .state_bytes = dense_state_bytes,
};

/* ---- Fixture ------------------------------------------------------------- */

/* A graph of n nodes with one in-edge each (v - 1 -> v). */
static void chain(gnn_backend_t *be, int64_t n, gnn_csr_t *a, gnn_bgraph_t **bg)
{
    gnn_vid_t src[64], dst[64];
    assert_true(n <= 64);
    for (int64_t v = 1; v < n; v++) src[v - 1] = v - 1, dst[v - 1] = v;
    assert_int_equal(gnn_csr_from_edges(n, n - 1, src, dst, NULL, 0, a), 0);
    assert_int_equal(gnn_be_graph_create(be, a, bg), 0);
}

/*
 * A two-layer network of the test's own kind against the same network in
 * double precision: logits = relu(X W0 + b0) W1 + b1, and for an upstream
 * gradient R, every parameter gradient (dW1 = H^T R, db1 = colsum R,
 * dH = R W1^T masked by H > 0, dW0 = X^T dH, db0 = colsum dH).
 */
static void test_own_kind_through_the_model(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    enum { N = 9, F = 5, H = 4, C = 3 };
    gnn_csr_t a = {0};
    gnn_bgraph_t *bg;
    chain(be, N, &a, &bg);
    float x[N * F], r[N * C];
    for (int i = 0; i < N * F; i++) x[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-24) - 0.5f;
    for (int i = 0; i < N * C; i++) r[i] = (float)((tu_rng_next(&s) >> 40) * 0x1p-24) - 0.5f;
    const gnn_aggr_def_t *sum;
    assert_int_equal(gnn_aggr_registry_find(reg, "sum", &sum), 0);
    gnn_model_config_t cfg = {&dense_kind, 2, F, H, C, 0.0f, sum, 0, 0, 0.0f, 0.0f, NULL,
                              0, NULL, NULL, 0, 0, 0};
    gnn_model_t *m;
    assert_int_equal(gnn_model_create(be, reg, &cfg, 7, &m), 0);
    assert_int_equal(gnn_model_n_params(m), F * H + H + H * C + C);
    int64_t off, cnt;
    gnn_model_layer_span(m, 1, &off, &cnt);
    assert_int_equal(off, F * H + H);
    assert_int_equal(cnt, H * C + C);

    gnn_bgraph_t *gs[2] = {bg, bg};
    const float *logits;
    assert_int_equal(gnn_model_forward(m, gs, x, 1, &logits), 0);
    float dl[N * C];
    memcpy(dl, r, sizeof dl);
    assert_int_equal(gnn_model_backward(m, dl), 0);

    const float *p = gnn_model_params(m), *g = gnn_model_grads(m);
    const float *w0 = p, *b0 = p + F * H, *w1 = p + F * H + H, *b1 = w1 + H * C;
    double h[N * H], z[N * C], dh[N * H];
    for (int v = 0; v < N; v++)
        for (int k = 0; k < H; k++) {
            double t = b0[k];
            for (int i = 0; i < F; i++) t += (double)x[v * F + i] * w0[i * H + k];
            h[v * H + k] = t > 0.0 ? t : 0.0;
        }
    for (int v = 0; v < N; v++)
        for (int c = 0; c < C; c++) {
            double t = b1[c];
            for (int k = 0; k < H; k++) t += h[v * H + k] * w1[k * C + c];
            z[v * C + c] = t;
            assert_float_equal(logits[v * C + c], t, 1e-5);
        }
    for (int v = 0; v < N; v++)
        for (int k = 0; k < H; k++) {
            double t = 0.0;
            for (int c = 0; c < C; c++) t += (double)r[v * C + c] * w1[k * C + c];
            dh[v * H + k] = h[v * H + k] > 0.0 ? t : 0.0;
        }
    const float *gw0 = g, *gb0 = g + F * H, *gw1 = g + F * H + H, *gb1 = gw1 + H * C;
    for (int k = 0; k < H; k++)
        for (int c = 0; c < C; c++) {
            double t = 0.0;
            for (int v = 0; v < N; v++) t += h[v * H + k] * r[v * C + c];
            assert_float_equal(gw1[k * C + c], t, 1e-5);
        }
    for (int c = 0; c < C; c++) {
        double t = 0.0;
        for (int v = 0; v < N; v++) t += r[v * C + c];
        assert_float_equal(gb1[c], t, 1e-5);
    }
    for (int i = 0; i < F; i++)
        for (int k = 0; k < H; k++) {
            double t = 0.0;
            for (int v = 0; v < N; v++) t += (double)x[v * F + i] * dh[v * H + k];
            assert_float_equal(gw0[i * H + k], t, 1e-5);
        }
    for (int k = 0; k < H; k++) {
        double t = 0.0;
        for (int v = 0; v < N; v++) t += dh[v * H + k];
        assert_float_equal(gb0[k], t, 1e-5);
    }
    (void)z;
    /* No sparse input: the kind has no sparse_check. */
    gnn_model_free(m);
    gnn_be_graph_free(bg);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be);
}

/* Halo hooks that count their calls. */
typedef struct {
    int forward, backward;
} calls_t;

static int count_forward(void *ctx, int k, int training, float *x, int64_t f)
{
    (void)k, (void)training, (void)x, (void)f;
    ((calls_t *)ctx)->forward++;
    return 0;
}

static int count_backward(void *ctx, int k, float *g, int64_t f)
{
    (void)k, (void)g, (void)f;
    ((calls_t *)ctx)->backward++;
    return 0;
}

/* Over ranks: exchanges only before layers that read halo rows. */
static void test_halo_only_where_read(void **state)
{
    (void)state;
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_backend_open("cpu", &be), 0);
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    enum { N = 6, F = 3 };
    gnn_csr_t a = {0};
    gnn_bgraph_t *bg;
    chain(be, N, &a, &bg);
    float x[N * F] = {0}, dl[N * 2] = {0};
    int64_t ids[N];
    for (int v = 0; v < N; v++) ids[v] = v;
    const gnn_aggr_def_t *mean;
    assert_int_equal(gnn_aggr_registry_find(reg, "mean", &mean), 0);
    const gnn_layer_kind_t *kinds[] = {&dense_kind, &gnn_layer_sage};
    int want[] = {0, 2}; /* exchanges around a 3-layer model's outputs */
    for (int c = 0; c < 2; c++) {
        gnn_model_config_t cfg = {kinds[c], 3, F, 4, 2, 0.5f, mean, 0, 0, 0.0f, 0.0f, NULL,
                                  0, NULL, NULL, 0, 0, 0};
        gnn_model_t *m;
        assert_int_equal(gnn_model_create(be, reg, &cfg, 1, &m), 0);
        calls_t calls = {0, 0};
        gnn_model_halo_t h = {.ctx = &calls, .forward = count_forward, .backward = count_backward,
                              .n_rows = N, .row_id = ids, .n_global = N};
        assert_int_equal(gnn_model_set_halo(m, &h), 0);
        gnn_bgraph_t *gs[3] = {bg, bg, bg};
        const float *logits;
        assert_int_equal(gnn_model_forward(m, gs, x, 1, &logits), 0);
        assert_int_equal(gnn_model_backward(m, dl), 0);
        assert_int_equal(calls.forward, want[c]);
        assert_int_equal(calls.backward, want[c]);
        gnn_model_free(m);
    }
    gnn_be_graph_free(bg);
    gnn_csr_free(&a);
    gnn_aggr_registry_free(reg);
    gnn_backend_close(be);
}

static void test_registry(void **state)
{
    (void)state;
    const gnn_layer_kind_t *k;
    assert_int_equal(gnn_layer_kind_find("gcn", &k), 0);
    assert_ptr_equal(k, &gnn_layer_gcn);
    assert_string_equal(k->default_aggr, "gcn");
    assert_int_equal(gnn_layer_kind_find("sage", &k), 0);
    assert_ptr_equal(k, &gnn_layer_sage);
    assert_true(k->any_aggr);
    assert_int_equal(gnn_layer_kind_find("gat", &k), 0);
    assert_ptr_equal(k, &gnn_layer_gat);
    assert_null(k->default_aggr); /* attention, no aggregator */
    assert_int_equal(k->act, GNN_LAYER_ACT_ELU);
    assert_int_equal(gnn_layer_kind_find("rgcn", &k), 0);
    assert_ptr_equal(k, &gnn_layer_rgcn);
    assert_true(k->typed);
    assert_string_equal(k->default_aggr, "sum");
    assert_int_equal(gnn_layer_kind_count(), 4);
    assert_ptr_equal(gnn_layer_kind_at(0), &gnn_layer_gcn);
    assert_ptr_equal(gnn_layer_kind_at(3), &gnn_layer_rgcn);
    assert_null(gnn_layer_kind_at(4));
    char list[64];
    gnn_layer_kind_list(list, sizeof list);
    assert_string_equal(list, "gcn, sage, gat or rgcn");
    assert_int_equal(gnn_layer_kind_find("dense", &k), GNN_EINVAL);
    assert_string_equal(gnn_error_message(),
                        "unknown model \"dense\" (expected gcn, sage, gat or rgcn)");
}

int main(void)
{
    const char *env = getenv("GNN_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
    printf("# seed %" PRIu64 " (GNN_TEST_SEED replays it)\n", g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_kind_through_the_model),
        cmocka_unit_test(test_halo_only_where_read),
        cmocka_unit_test(test_registry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
