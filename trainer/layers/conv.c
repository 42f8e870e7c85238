/*
 * Graph convolution forward and backward (trainer/layers/conv.h).
 *
 * The forward keeps what the backward reads: the aggregated matrix T
 * (aggregating first: aggr(D), n_dst x fin; multiplying first: D W,
 * n_src x fout), the output Z (the model applies the activation in place
 * on it) and the aggregator's workspace. The backward forms the input
 * gradient either whole (aggregating first: the transposed aggregation
 * scatters over rows) or, multiplying first, block by block of rows
 * straight into the layer below's output, so no full-size buffer is
 * needed for it.
 */
#include "trainer/layers/conv.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <string.h>

typedef struct {
    gnn_conv_layout_t lay;
    int gemm_first;  /* D W before aggregation */
    /* The aggregator's learnable tensors (version 2), after the layout's. */
    gnn_aggr_param_t th[GNN_AGGR_MAX_PARAMS];
    int n_th;
    int64_t th_off;
    float *t;  size_t t_bytes;
    void *ws;  size_t ws_bytes;
    float *q;  size_t q_bytes; /* self term on sparse input: S W_self */
    float *dd; size_t dd_bytes; /* layer 0 with aggregator parameters: the
                                   input gradient their backward forms */
} conv_t;

int gnn_conv_setup(gnn_layer_t *L, const gnn_conv_layout_t *lay)
{
    conv_t *c = gnn_calloc(1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "layer %d", L->index);
    c->lay = *lay;
    /* Multiply before aggregating when the output is narrower and the
     * aggregator allows it: aggr(D) W = aggr(D W). */
    c->gemm_first = L->fout < L->fin && gnn_aggr_linear(L->aggr);
    L->state = c;
    /* A learnable aggregator aggregates the input rows (it is not linear,
     * so never after the product): its tensors for width fin. */
    gnn_aggr_dims_t dims = {1, L->fin};
    int64_t n_th = 0;
    int rc = gnn_aggr_params(L->aggr, &dims, c->th, &c->n_th, &n_th);
    if (rc < 0) return rc;
    c->th_off = L->count;
    L->count += n_th;
    return 0;
}

void gnn_conv_init(const gnn_layer_t *L, float *w, uint64_t seed)
{
    const conv_t *c = L->state;
    gnn_layer_weights(L, w, c->lay.w_off, L->fin, L->fout, seed);
    if (c->lay.ws_off >= 0) gnn_layer_weights(L, w, c->lay.ws_off, L->fin, L->fout, seed);
    gnn_layer_init_declared(L, w, c->th_off, c->th, c->n_th, seed);
}

int gnn_conv_tensors(const gnn_layer_t *L, gnn_layer_tensor_t *t)
{
    const conv_t *c = L->state;
    int n = 0;
    t[n++] = gnn_layer_tensor(c->lay.w_name, c->lay.w_off, L->fout, L->fin, 1);
    if (c->lay.ws_off >= 0)
        t[n++] = gnn_layer_tensor(c->lay.ws_name, c->lay.ws_off, L->fout, L->fin, 1);
    t[n++] = gnn_layer_tensor(c->lay.b_name, c->lay.b_off, L->fout, 0, 0);
    return n + gnn_layer_tensors_declared("aggr.", c->th_off, c->th, c->n_th, t + n);
}

int gnn_conv_sparse_check(const gnn_layer_t *L)
{
    if (!gnn_aggr_linear(L->aggr))
        return GNN_FAIL(GNN_EUNSUPPORTED,
                        "model: sparse input needs a linear aggregator (sum, mean, gcn), not %s",
                        L->aggr->name);
    return 0;
}

int gnn_conv_takes_rows(const gnn_layer_t *L)
{
    /* Multiplying first, D is read by the products alone (D W, D[:nd]
     * W_self and their weight gradients), each of which can gather rows. */
    const conv_t *c = L->state;
    return c && c->gemm_first && !c->n_th;
}

/* C = D[rows] B over D's first rows (n of them), through L->d_rows when set. */
static int gemm_d(gnn_backend_t *be, const gnn_layer_t *L, int64_t n, int64_t fout,
                  const float *b, float beta, float *c)
{
    if (L->d_rows)
        return gnn_be_gemm_rows(be, 0, n, fout, L->fin, 1.0f, L->d, L->fin, L->d_rows, b, fout,
                                beta, c, fout);
    return gnn_be_gemm(be, 0, 0, n, fout, L->fin, 1.0f, L->d, L->fin, b, fout, beta, c, fout);
}

/* G = D[:n]^T B (fin x fout), through L->d_rows when set. */
static int gemm_dt(gnn_backend_t *be, const gnn_layer_t *L, int64_t n, int64_t fout,
                   const float *b, float *g)
{
    if (L->d_rows)
        return gnn_be_gemm_rows(be, 1, L->fin, fout, n, 1.0f, L->d, L->fin, L->d_rows, b, fout,
                                0.0f, g, fout);
    return gnn_be_gemm(be, 1, 0, L->fin, fout, n, 1.0f, L->d, L->fin, b, fout, 0.0f, g, fout);
}

int gnn_conv_drop_target(gnn_layer_t *L, gnn_layer_env_t *env, float **dst)
{
    conv_t *c = L->state;
    /* Aggregating first without a self term, only the forward reads D (the
     * weight gradient reads aggr(D)): D may live in Z's buffer, which
     * Z = aggr(D) W overwrites only after aggr(D) is formed, and which
     * holds it since aggregating first means fout >= fin. */
    if (c->lay.ws_off < 0 && !c->gemm_first && L->n_src == L->n_dst) {
        int rc = gnn_layer_ensure(env->be, (void **)&L->z, &L->z_bytes,
                                  gnn_layer_fbytes(env->out_rows, L->fout));
        *dst = L->z;
        return rc;
    }
    *dst = NULL;
    int rc = gnn_layer_ensure(env->be, (void **)&L->drop, &L->drop_bytes,
                              gnn_layer_fbytes(L->n_src, L->fin));
    *dst = L->drop;
    return rc;
}

/* Layer 0 on the sparse input S: T = S W and Z = aggr(T) (+ S[:nd] W_self). */
static int sparse_forward(gnn_layer_t *L, gnn_layer_env_t *env)
{
    int rc = 0;
    conv_t *c = L->state;
    gnn_backend_t *be = env->be;
    gnn_bgraph_t *g = L->graph;
    int64_t ns = L->n_src, nd = L->n_dst, fout = L->fout;
    const float *p = env->params + L->off;
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->t, &c->t_bytes, gnn_layer_fbytes(ns, fout)));
    GNN_TRY(gnn_layer_ensure(be, (void **)&L->z, &L->z_bytes, gnn_layer_fbytes(nd, fout)));
    size_t wsb = 0;
    GNN_TRY(gnn_be_aggr_workspace(be, g, L->aggr, fout, &wsb));
    if (wsb) GNN_TRY(gnn_layer_ensure(be, &c->ws, &c->ws_bytes, wsb));
    GNN_TRY(gnn_be_sparse_mm(be, env->sp, env->sp_vals, ns, p + c->lay.w_off, fout, c->t));
    GNN_TRY(gnn_be_aggr_forward(be, g, L->aggr, fout, c->t, L->z, c->ws, c->ws_bytes));
    if (c->lay.ws_off >= 0) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->q, &c->q_bytes, gnn_layer_fbytes(nd, fout)));
        GNN_TRY(gnn_be_sparse_mm(be, env->sp, env->sp_vals, nd, p + c->lay.ws_off, fout, c->q));
        GNN_TRY(gnn_be_axpby(be, nd * fout, 1.0f, c->q, 1.0f, L->z));
    }
    GNN_TRY(gnn_layer_bias_out(L, env, nd, fout, p + c->lay.b_off));
    return 0;
fail:
    return rc;
}

int gnn_conv_forward(gnn_layer_t *L, gnn_layer_env_t *env)
{
    int rc = 0;
    if (L->sparse) return sparse_forward(L, env);
    conv_t *c = L->state;
    gnn_backend_t *be = env->be;
    gnn_bgraph_t *g = L->graph;
    const gnn_aggr_def_t *ag = L->aggr;
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout;
    const float *p = env->params + L->off, *w = p + c->lay.w_off;
    GNN_TRY(gnn_layer_ensure(be, (void **)&L->z, &L->z_bytes,
                             gnn_layer_fbytes(env->out_rows, fout)));
    int64_t tw = c->gemm_first ? fout : fin; /* width of T */
    int64_t tr = c->gemm_first ? ns : nd;    /* rows of T */
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->t, &c->t_bytes, gnn_layer_fbytes(tr, tw)));
    size_t wsb = 0;
    GNN_TRY(gnn_be_aggr_workspace(be, g, ag, tw, &wsb));
    if (wsb) GNN_TRY(gnn_layer_ensure(be, &c->ws, &c->ws_bytes, wsb));

    GNN_CHECK(!L->d_rows || c->gemm_first, GNN_EUNSUPPORTED,
              "layer %d: input rows by index need the product first", L->index);
    if (c->gemm_first && c->lay.ws_off >= 0) {
        /* T = D W (ns x fout) and Q = D[:nd] W_self in one pass over D;
         * Z = A T + Q. */
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->q, &c->q_bytes, gnn_layer_fbytes(nd, fout)));
        GNN_TRY(gnn_be_gemm_pair(be, 0, ns, nd, fin, L->d, fin, L->d_rows, fout, w, c->t, fout,
                                 p + c->lay.ws_off, c->q));
        GNN_TRY(gnn_be_aggr_forward(be, g, ag, fout, c->t, L->z, c->ws, c->ws_bytes));
        GNN_TRY(gnn_be_axpby(be, nd * fout, 1.0f, c->q, 1.0f, L->z));
        GNN_TRY(gnn_layer_bias_out(L, env, nd, fout, p + c->lay.b_off));
        return 0;
    }
    if (c->gemm_first) {
        /* T = D W (ns x fout); Z = A T. */
        GNN_TRY(gemm_d(be, L, ns, fout, w, 0.0f, c->t));
        GNN_TRY(gnn_be_aggr_forward(be, g, ag, fout, c->t, L->z, c->ws, c->ws_bytes));
    } else {
        /* T = aggr(D) (nd x fin); Z = T W (+ D[:nd] W_self). */
        GNN_TRY(gnn_be_aggr_forward_p(be, g, ag, fin, c->n_th ? p + c->th_off : NULL, L->d, c->t,
                                      c->ws, c->ws_bytes));
        GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, c->t, fin, w, fout, 0.0f, L->z, fout));
    }
    if (c->lay.ws_off >= 0) GNN_TRY(gemm_d(be, L, nd, fout, p + c->lay.ws_off, 1.0f, L->z));
    GNN_TRY(gnn_layer_bias_out(L, env, nd, fout, p + c->lay.b_off));
    return 0;
fail:
    return rc;
}

void gnn_conv_scratch(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s)
{
    const conv_t *c = L->state;
    memset(s, 0, sizeof *s);
    /* dT: by a layer that multiplied first (or took sparse input), and by
     * one that aggregated first when it forms its input gradient. */
    if (c->gemm_first || L->sparse) {
        s->uses_t = 1;
        s->t_bytes = gnn_layer_fbytes(L->n_src, L->fout);
    } else if (input_grad || c->n_th) {
        s->uses_t = 1;
        s->t_bytes = gnn_layer_fbytes(L->n_dst, L->fin);
    }
    s->dx_blockwise = c->gemm_first;
}

/*
 * Multiplied first: the input gradient block by block of rows, written
 * over the layer below's output (L->in) through env->input_grad:
 *   dD = dT W^T (+ dZ W_self^T on rows < n_dst).
 */
static int dx_blockwise(gnn_layer_t *L, gnn_layer_env_t *env, const float *dz)
{
    int rc = 0;
    const conv_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout, B = env->block_rows;
    const float *p = env->params + L->off;
    float *s = env->blk, *out = (float *)L->in;
    for (int64_t r0 = 0; r0 < ns; r0 += B) {
        int64_t nr = ns - r0 < B ? ns - r0 : B;
        GNN_TRY(gnn_be_gemm(be, 0, 1, nr, fin, fout, 1.0f, env->dt + r0 * fout, fout,
                            p + c->lay.w_off, fout, 0.0f, s, fin));
        if (c->lay.ws_off >= 0 && r0 < nd) {
            int64_t ns_self = nd - r0 < nr ? nd - r0 : nr;
            GNN_TRY(gnn_be_gemm(be, 0, 1, ns_self, fin, fout, 1.0f, dz + r0 * fout, fout,
                                p + c->lay.ws_off, fout, 1.0f, s, fin));
        }
        GNN_TRY(env->input_grad(env, L, r0, nr, s, out + r0 * fin));
    }
    return 0;
fail:
    return rc;
}

int gnn_conv_backward(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx)
{
    int rc = 0;
    conv_t *c = L->state;
    gnn_backend_t *be = env->be;
    gnn_bgraph_t *g = L->graph;
    const gnn_aggr_def_t *ag = L->aggr;
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout;
    const float *p = env->params + L->off, *w = p + c->lay.w_off;
    float *gr = env->grads + L->off, *dw = gr + c->lay.w_off, *dt = env->dt;
    float *dws = c->lay.ws_off >= 0 ? gr + c->lay.ws_off : NULL;

    GNN_TRY(gnn_be_bias_grad(be, nd, fout, dz, gr + c->lay.b_off));
    if (L->sparse) {
        /* dT = aggr^T(dZ); dW = S^T dT (+ dW_self = S[:nd]^T dZ). Layer 0: no dD. */
        GNN_TRY(gnn_be_aggr_backward(be, g, ag, fout, c->t, L->z, dz, dt, c->ws, c->ws_bytes));
        GNN_TRY(gnn_be_sparse_mm_t(be, env->sp, env->sp_vals, ns, dt, fout, dw));
        if (dws) GNN_TRY(gnn_be_sparse_mm_t(be, env->sp, env->sp_vals, nd, dz, fout, dws));
        return 0;
    }
    if (c->gemm_first) {
        /* dT = A^T dZ; dW = D^T dT (+ dW_self = D[:nd]^T dZ); then dD
         * block by block into the layer below's output. */
        GNN_TRY(gnn_be_aggr_backward(be, g, ag, fout, c->t, L->z, dz, dt, c->ws, c->ws_bytes));
        if (dws) /* both weight gradients in one pass over D */
            GNN_TRY(gnn_be_gemm_pair(be, 1, fin, nd, ns, L->d, fin, L->d_rows, fout, dt, dw, fout,
                                     dz, dws));
        else
            GNN_TRY(gemm_dt(be, L, ns, fout, dt, dw));
        if (!dx) return 0;
        GNN_CHECK(!L->d_rows, GNN_EUNSUPPORTED,
                  "layer %d: no input gradient of rows read by index", L->index);
        GNN_TRY(dx_blockwise(L, env, dz));
        *dx = (float *)L->in;
        return 0;
    }
    /* dW = T^T dZ; dT = dZ W^T; dD = aggr^T(dT) (+ dZ W_self^T on the first rows). */
    GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, c->t, fin, dz, fout, 0.0f, dw, fout));
    if (dws)
        GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->d, fin, dz, fout, 0.0f, dws, fout));
    if (!dx && !c->n_th) return 0;
    /* The aggregator's backward also gives its parameters' gradients: run
     * it without an input gradient to hand on too (layer 0). */
    float *dd = env->dx;
    if (!dx) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->dd, &c->dd_bytes, gnn_layer_fbytes(ns, fin)));
        dd = c->dd;
    }
    GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, w, fout, 0.0f, dt, fin));
    GNN_TRY(gnn_be_aggr_backward_p(be, g, ag, fin, c->n_th ? p + c->th_off : NULL, L->d, c->t, dt,
                                   dd, c->n_th ? gr + c->th_off : NULL, c->ws, c->ws_bytes));
    if (!dx) return 0;
    if (dws)
        GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, p + c->lay.ws_off, fout, 1.0f,
                            dd, fin));
    GNN_TRY(env->input_grad(env, L, 0, ns, dd, dd));
    *dx = dd;
    return 0;
fail:
    return rc;
}

size_t gnn_conv_state_bytes(const gnn_layer_t *L)
{
    const conv_t *c = L->state;
    return c ? c->t_bytes + c->ws_bytes + c->q_bytes + c->dd_bytes : 0;
}

void gnn_conv_free(gnn_layer_t *L, gnn_backend_t *be)
{
    conv_t *c = L->state;
    if (!c) return;
    gnn_be_free(be, c->t);
    gnn_be_free(be, c->ws);
    gnn_be_free(be, c->q);
    gnn_be_free(be, c->dd);
    gnn_free(c);
    L->state = NULL;
}
