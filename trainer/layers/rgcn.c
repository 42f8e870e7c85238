/*
 * R-GCN (Schlichtkrull et al.) on a typed graph:
 *   Z = D[:n_dst] W_self + sum_r mean_{u in N_r(v)} D[u] W_r + b
 * with one weight per relation r, or (bases B > 0) W_r = sum_b a[r][b] V_b
 * over B shared bases. Parameters of a layer: W_self (fin x fout), then
 * W_0 .. W_{R-1} (each fin x fout) or V_0 .. V_{B-1} (each fin x fout)
 * and a (R x B), then b (fout).
 *
 * The products are batched per node type and the aggregation is one SpMM
 * (trainer/typed.h): the weights of the relations are set side by side
 * (Wcat, fin x R fout, relations in the order of their source types), the
 * sources of each type times their block of Wcat give the virtual sources
 * P (one GEMM per type), and the per-relation means are one weighted SpMM
 * of P over the virtual graph (P in the model's backward scratch, which
 * the backward then fills with dP). Backward: dP by the transposed SpMM, then
 * per type dWcat = D^T dP and dD = dP Wcat^T (two GEMMs per type). A type
 * whose nodes start no relation costs nothing.
 *
 * On a block with far fewer destinations than sources (a mini-batch's
 * lower layers) the layer aggregates first where that costs less (the
 * attachment chooses, trainer/typed.h): A = the per-relation means of
 * the input itself, one SpMM over the graph of virtual destinations
 * (nvd x fin, kept for the backward), then per destination type
 * Z_t = A_t [W_r of the relations ending at t] stacked (Wd, R fin x fout,
 * relations in the order of their destination types, in wcat's buffer),
 * so the products run on destination rows only.
 * Backward: per type dWd = A_t^T dZ_t and dA_t = dZ_t Wd_t^T, then dD by
 * the transposed SpMM.
 */
#include "trainer/layer.h"
#include "trainer/typed.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <string.h>

typedef struct {
    int64_t ws_off, w_off, a_off, b_off; /* a_off -1 without bases */
    float *wcat; size_t wcat_bytes;      /* fin x R fout (aggregating first: Wd, R fin x fout) */
    float *wrel; size_t wrel_bytes;      /* bases: R x fin fout */
    float *dp; size_t dp_bytes;          /* the input in type order (when permuted) */
    float *dwcat; size_t dwcat_bytes;    /* fin x R fout (aggregating first: dWd) */
    float *ddp; size_t ddp_bytes;        /* input gradient in type order (permuted) */
    /* aggregating first */
    float *agg; size_t agg_bytes;        /* nvd x fin: the means (forward to backward) */
    float *zt; size_t zt_bytes;          /* n_dst x fout: Z or dZ in type order (permuted) */
} rgcn_t;

/* Whether the layer aggregates first on graph t: as the attachment chose
 * for it (trainer/typed.h), which built the one graph that order reads. */
static int aggr_first(const gnn_typed_graph_t *t) { return t && t->ug; }

static int rgcn_setup(gnn_layer_t *L)
{
    if (!(L->relations >= 1))
        return GNN_FAIL(GNN_EINVAL,
                  "model: rgcn needs the relations of a typed graph (format version 2)");
    if (!(L->bases >= 0 && L->bases <= L->relations))
        return GNN_FAIL(GNN_EINVAL,
                  "model: --num-bases %d outside [0, %d relations]", L->bases, L->relations);
    rgcn_t *c = gnn_calloc(1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "layer %d", L->index);
    int64_t w = L->fin * L->fout, R = L->relations, B = L->bases;
    c->ws_off = 0;
    c->w_off = w;
    if (B > 0) {
        c->a_off = c->w_off + B * w;
        c->b_off = c->a_off + R * B;
    } else {
        c->a_off = -1;
        c->b_off = c->w_off + R * w;
    }
    L->count = c->b_off + L->fout;
    L->state = c;
    return 0;
}

static void rgcn_init(const gnn_layer_t *L, float *w, uint64_t seed)
{
    const rgcn_t *c = L->state;
    int64_t fw = L->fin * L->fout, n = L->bases > 0 ? L->bases : L->relations;
    gnn_layer_weights(L, w, c->ws_off, L->fin, L->fout, seed);
    for (int64_t i = 0; i < n; i++) gnn_layer_weights(L, w, c->w_off + i * fw, L->fin, L->fout, seed);
    if (c->a_off >= 0) gnn_layer_glorot(L, w, c->a_off, L->relations, L->bases, seed);
}

/* RGCNConv's names: root (fin x fout), weight (R or B x fin x fout),
 * comp (R x B, with bases), bias; stored as PyG stores them. */
static int rgcn_tensors(const gnn_layer_t *L, gnn_layer_tensor_t *t)
{
    const rgcn_t *c = L->state;
    int n = 0;
    int64_t k = L->bases > 0 ? L->bases : L->relations;
    t[n++] = gnn_layer_tensor("root", c->ws_off, L->fin, L->fout, 0);
    gnn_layer_tensor_t w = {.name = "weight", .at = c->w_off, .ndim = 3,
                            .shape = {k, L->fin, L->fout}};
    t[n++] = w;
    if (c->a_off >= 0) t[n++] = gnn_layer_tensor("comp", c->a_off, L->relations, L->bases, 0);
    t[n++] = gnn_layer_tensor("bias", c->b_off, L->fout, 0, 0);
    return n;
}

static int rgcn_sparse_check(const gnn_layer_t *L)
{
    (void)L;
    return GNN_FAIL(GNN_EUNSUPPORTED, "model: rgcn reads dense input rows (--sparse-features off)");
}

static int rgcn_drop_target(gnn_layer_t *L, gnn_layer_env_t *env, float **dst)
{
    *dst = NULL;
    int rc = gnn_layer_ensure(env->be, (void **)&L->drop, &L->drop_bytes,
                              gnn_layer_fbytes(L->n_src, L->fin));
    *dst = L->drop;
    return rc;
}

static int typed_of(const gnn_layer_t *L, gnn_typed_graph_t **out)
{
    gnn_typed_graph_t *t = gnn_bgraph_attached(L->graph);
    *out = t;
    if (!(t && t->n_rels == L->relations && t->n_src == L->n_src && t->n_dst == L->n_dst))
        return GNN_FAIL(GNN_EINVAL, "model: rgcn layer %d: its graph has no relations of %d", L->index,
                  L->relations);
    return 0;
}

/* The relations' weights from the parameters (W_r, or with bases
 * sum_b a[r][b] V_b through wrel), laid out for one order: side by side
 * (stacked 0: Wcat, fin x R fout, W_r at columns pos[r] fout) or stacked
 * (1: Wd, R fin x fout, W_r at rows dpos[r] fin), in c->wcat either way. */
static int assemble(gnn_layer_t *L, gnn_layer_env_t *env, const gnn_typed_graph_t *t,
                    int stacked)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t fin = L->fin, fout = L->fout, fw = fin * fout, R = L->relations, B = L->bases;
    const float *p = env->params + L->off, *src = p + c->w_off;
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->wcat, &c->wcat_bytes,
                             gnn_layer_fbytes(R * fin, fout)));
    if (B > 0) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->wrel, &c->wrel_bytes, gnn_layer_fbytes(R, fw)));
        GNN_TRY(gnn_be_gemm(be, 0, 0, R, fw, B, 1.0f, p + c->a_off, B, p + c->w_off, fw, 0.0f,
                            c->wrel, fw));
        src = c->wrel;
    }
    for (int64_t r = 0; r < R; r++)
        GNN_TRY(gnn_be_copy_rows(be, fin, fout, src + r * fw, fout, fin, NULL,
                                 stacked ? c->wcat + (int64_t)t->dpos[r] * fw
                                         : c->wcat + (int64_t)t->pos[r] * fout,
                                 stacked ? fout : R * fout));
fail:
    return rc;
}

/* Aggregating first: A = the means over ug, Z = per destination type A_t
 * Wd_t (rows in type order, then back to the destinations' order), plus
 * the self term and the bias. */
static int forward_aggr_first(gnn_layer_t *L, gnn_layer_env_t *env, gnn_typed_graph_t *t)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t nd = L->n_dst, fin = L->fin, fout = L->fout;
    const float *p = env->params + L->off;
    GNN_TRY(gnn_layer_ensure(be, (void **)&L->z, &L->z_bytes, gnn_layer_fbytes(env->out_rows, fout)));
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->agg, &c->agg_bytes, gnn_layer_fbytes(t->nvd, fin)));
    GNN_TRY(assemble(L, env, t, 1));
    GNN_TRY(gnn_be_aggr_forward(be, t->ug, L->aggr, fin, L->d, c->agg, NULL, 0));
    float *zt = L->z;
    if (t->dperm) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->zt, &c->zt_bytes, gnn_layer_fbytes(nd, fout)));
        zt = c->zt;
    }
    for (int s = 0; s < t->n_types; s++) {
        if (!t->dcnt[s]) continue;
        float *zs = zt + t->dstart[s] * fout;
        if (!t->dk[s]) {
            GNN_TRY(gnn_be_zero(be, zs, gnn_layer_fbytes(t->dcnt[s], fout)));
            continue;
        }
        int64_t kw = (int64_t)t->dk[s] * fin;
        GNN_TRY(gnn_be_gemm(be, 0, 0, t->dcnt[s], fout, kw, 1.0f, c->agg + t->dvbase[s] * fin, kw,
                            c->wcat + (int64_t)t->dfirst[s] * fin * fout, fout, 0.0f, zs, fout));
    }
    if (t->dperm) GNN_TRY(gnn_be_gather_rows(be, nd, fout, c->zt, nd, t->diperm, L->z));
    GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, L->d, fin, p + c->ws_off, fout, 1.0f, L->z,
                        fout));
    GNN_TRY(gnn_layer_bias_out(L, env, nd, fout, p + c->b_off));
fail:
    return rc;
}

static int rgcn_forward(gnn_layer_t *L, gnn_layer_env_t *env)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    gnn_typed_graph_t *t;
    GNN_TRY(typed_of(L, &t));
    if (aggr_first(t)) return forward_aggr_first(L, env, t);
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout, R = L->relations;
    const float *p = env->params + L->off, *d = L->d;
    GNN_TRY(gnn_layer_ensure(be, (void **)&L->z, &L->z_bytes, gnn_layer_fbytes(env->out_rows, fout)));
    /* P (nv x fout) lives in the model's backward scratch: the backward
     * does not read it (the sum's backward is the transposed SpMM of dZ). */
    float *P = NULL;
    GNN_TRY(env->fwd_scratch(env, gnn_layer_fbytes(t->nv, fout), &P));
    GNN_TRY(assemble(L, env, t, 0));
    if (t->perm) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->dp, &c->dp_bytes, gnn_layer_fbytes(ns, fin)));
        GNN_TRY(gnn_be_gather_rows(be, ns, fin, L->d, ns, t->perm, c->dp));
        d = c->dp;
    }
    for (int s = 0; s < t->n_types; s++) {
        if (!t->cnt[s] || !t->k[s]) continue;
        int64_t kw = (int64_t)t->k[s] * fout;
        GNN_TRY(gnn_be_gemm(be, 0, 0, t->cnt[s], kw, fin, 1.0f, d + t->start[s] * fin, fin,
                            c->wcat + (int64_t)t->first[s] * fout, R * fout, 0.0f,
                            P + t->vbase[s] * fout, kw));
    }
    GNN_TRY(gnn_be_aggr_forward(be, t->vg, L->aggr, fout, P, L->z, NULL, 0));
    GNN_TRY(gnn_be_gemm(be, 0, 0, nd, fout, fin, 1.0f, L->d, fin, p + c->ws_off, fout, 1.0f, L->z,
                        fout));
    GNN_TRY(gnn_layer_bias_out(L, env, nd, fout, p + c->b_off));
fail:
    return rc;
}

static void rgcn_scratch(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s)
{
    const gnn_typed_graph_t *t = gnn_bgraph_attached(L->graph);
    memset(s, 0, sizeof *s);
    s->uses_t = 1;
    if (aggr_first(t)) {
        /* dA in dt (only for an input gradient); that gradient whole, by
         * the transposed SpMM */
        s->uses_t = input_grad;
        s->t_bytes = input_grad ? gnn_layer_fbytes(t->nvd, L->fin) : 0;
        return;
    }
    s->t_bytes = gnn_layer_fbytes(t ? t->nv : 0, L->fout);
    /* Sources in type order (the whole graph): the input gradient block by
     * block, into the layer below's output. */
    s->dx_blockwise = t && !t->perm;
}

/* The input gradient, sources in type order: rows r0 .. r0 + nr of type
 * s's block at a time, dP's rows of them times the type's weights, plus
 * dZ W_self on destination rows, through env->input_grad into L->in. */
static int dx_blockwise(gnn_layer_t *L, gnn_layer_env_t *env, const gnn_typed_graph_t *t,
                        const float *dz, const float *dP)
{
    int rc = 0;
    const rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t nd = L->n_dst, fin = L->fin, fout = L->fout, R = L->relations, B = env->block_rows;
    const float *p = env->params + L->off;
    float *blk = env->blk, *out = (float *)L->in;
    for (int s = 0; s < t->n_types; s++) {
        int64_t kw = (int64_t)t->k[s] * fout;
        for (int64_t i0 = 0; i0 < t->cnt[s]; i0 += B) {
            int64_t nr = t->cnt[s] - i0 < B ? t->cnt[s] - i0 : B, r0 = t->start[s] + i0;
            if (t->k[s])
                GNN_TRY(gnn_be_gemm(be, 0, 1, nr, fin, kw, 1.0f,
                                    dP + (t->vbase[s] + i0 * t->k[s]) * fout, kw,
                                    c->wcat + (int64_t)t->first[s] * fout, R * fout, 0.0f, blk,
                                    fin));
            else
                GNN_TRY(gnn_be_zero(be, blk, gnn_layer_fbytes(nr, fin)));
            if (r0 < nd) {
                int64_t ns = nd - r0 < nr ? nd - r0 : nr;
                GNN_TRY(gnn_be_gemm(be, 0, 1, ns, fin, fout, 1.0f, dz + r0 * fout, fout,
                                    p + c->ws_off, fout, 1.0f, blk, fin));
            }
            GNN_TRY(env->input_grad(env, L, r0, nr, blk, out + r0 * fin));
        }
    }
fail:
    return rc;
}

/* The relations' weight gradients from dW stacked in the order pos gives
 * (rows pos[r] of fin x fout blocks, ld ldw): into the parameters' or,
 * with bases, through them. */
static int weight_grads(gnn_layer_t *L, gnn_layer_env_t *env, const float *dw, const int *pos,
                        int64_t blk, int64_t ldw)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t fin = L->fin, fout = L->fout, fw = fin * fout, R = L->relations, B = L->bases;
    const float *p = env->params + L->off;
    float *gr = env->grads + L->off;
    float *dwr = B > 0 ? c->wrel : gr + c->w_off; /* wrel is free again after the forward */
    for (int64_t r = 0; r < R; r++)
        GNN_TRY(gnn_be_copy_rows(be, fin, fout, dw + (int64_t)pos[r] * blk, ldw, fin, NULL,
                                 dwr + r * fw, fout));
    if (B > 0) {
        GNN_TRY(gnn_be_gemm(be, 1, 0, B, fw, R, 1.0f, p + c->a_off, B, dwr, fw, 0.0f,
                            gr + c->w_off, fw));
        GNN_TRY(gnn_be_gemm(be, 0, 1, R, B, fw, 1.0f, dwr, fw, p + c->w_off, fw, 0.0f,
                            gr + c->a_off, B));
    }
fail:
    return rc;
}

/* The backward of forward_aggr_first (bias and self weight done). */
static int backward_aggr_first(gnn_layer_t *L, gnn_layer_env_t *env, gnn_typed_graph_t *t,
                               const float *dz, float **dx)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout, R = L->relations;
    const float *p = env->params + L->off;
    float *dA = env->dt;
    const float *dzt = dz;
    if (t->dperm) {
        GNN_TRY(gnn_be_gather_rows(be, nd, fout, dz, nd, t->dperm, c->zt));
        dzt = c->zt;
    }
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->dwcat, &c->dwcat_bytes,
                             gnn_layer_fbytes(R * fin, fout)));
    GNN_TRY(gnn_be_zero(be, c->dwcat, gnn_layer_fbytes(R * fin, fout)));
    for (int s = 0; s < t->n_types; s++) {
        if (!t->dcnt[s] || !t->dk[s]) continue;
        int64_t kw = (int64_t)t->dk[s] * fin;
        const float *as = c->agg + t->dvbase[s] * fin, *dzs = dzt + t->dstart[s] * fout;
        const float *ws = c->wcat + (int64_t)t->dfirst[s] * fin * fout;
        GNN_TRY(gnn_be_gemm(be, 1, 0, kw, fout, t->dcnt[s], 1.0f, as, kw, dzs, fout, 0.0f,
                            c->dwcat + (int64_t)t->dfirst[s] * fin * fout, fout));
        if (dx)
            GNN_TRY(gnn_be_gemm(be, 0, 1, t->dcnt[s], kw, fout, 1.0f, dzs, fout, ws, fout, 0.0f,
                                dA + t->dvbase[s] * fin, kw));
    }
    GNN_TRY(weight_grads(L, env, c->dwcat, t->dpos, fin * fout, fout));
    if (!dx) return 0;
    /* dD = ug^T dA (the sum reads neither x nor y), + dZ W_self^T on the
     * destinations' rows. */
    GNN_TRY(gnn_be_aggr_backward(be, t->ug, L->aggr, fin, L->d, c->agg, dA, env->dx, NULL, 0));
    GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, p + c->ws_off, fout, 1.0f,
                        env->dx, fin));
    GNN_TRY(env->input_grad(env, L, 0, ns, env->dx, env->dx));
    *dx = env->dx;
fail:
    return rc;
}

static int rgcn_backward(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx)
{
    int rc = 0;
    rgcn_t *c = L->state;
    gnn_backend_t *be = env->be;
    gnn_typed_graph_t *t;
    GNN_TRY(typed_of(L, &t));
    int64_t ns = L->n_src, nd = L->n_dst, fin = L->fin, fout = L->fout, R = L->relations;
    const float *p = env->params + L->off, *d = t->perm ? c->dp : L->d;
    float *gr = env->grads + L->off, *dP = env->dt;

    GNN_TRY(gnn_be_bias_grad(be, nd, fout, dz, gr + c->b_off));
    GNN_TRY(gnn_be_gemm(be, 1, 0, fin, fout, nd, 1.0f, L->d, fin, dz, fout, 0.0f, gr + c->ws_off,
                        fout));
    if (aggr_first(t)) return backward_aggr_first(L, env, t, dz, dx);
    /* (the sum reads neither x nor y: dP stands in for P, which is gone) */
    GNN_TRY(gnn_be_aggr_backward(be, t->vg, L->aggr, fout, dP, L->z, dz, dP, NULL, 0));
    /* dWcat, block by block of types; blocks of types without sources stay 0. */
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->dwcat, &c->dwcat_bytes,
                             gnn_layer_fbytes(fin, R * fout)));
    GNN_TRY(gnn_be_zero(be, c->dwcat, gnn_layer_fbytes(fin, R * fout)));
    for (int s = 0; s < t->n_types; s++) {
        if (!t->cnt[s] || !t->k[s]) continue;
        int64_t kw = (int64_t)t->k[s] * fout;
        GNN_TRY(gnn_be_gemm(be, 1, 0, fin, kw, t->cnt[s], 1.0f, d + t->start[s] * fin, fin,
                            dP + t->vbase[s] * fout, kw, 0.0f,
                            c->dwcat + (int64_t)t->first[s] * fout, R * fout));
    }
    /* Back to the relations' weights, or through the bases. */
    GNN_TRY(weight_grads(L, env, c->dwcat, t->pos, fout, R * fout));
    if (!dx) return 0;
    if (!t->perm) {
        GNN_TRY(dx_blockwise(L, env, t, dz, dP));
        *dx = (float *)L->in;
        return 0;
    }
    /* dD = dP Wcat^T per type (in type order), then dZ W_self^T on the
     * destinations' rows. */
    float *g = env->dx;
    if (t->perm) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->ddp, &c->ddp_bytes, gnn_layer_fbytes(ns, fin)));
        g = c->ddp;
    }
    int gaps = 0;
    for (int s = 0; s < t->n_types; s++) gaps |= t->cnt[s] && !t->k[s];
    if (gaps) GNN_TRY(gnn_be_zero(be, g, gnn_layer_fbytes(ns, fin)));
    for (int s = 0; s < t->n_types; s++) {
        if (!t->cnt[s] || !t->k[s]) continue;
        int64_t kw = (int64_t)t->k[s] * fout;
        GNN_TRY(gnn_be_gemm(be, 0, 1, t->cnt[s], fin, kw, 1.0f, dP + t->vbase[s] * fout, kw,
                            c->wcat + (int64_t)t->first[s] * fout, R * fout, 0.0f,
                            g + t->start[s] * fin, fin));
    }
    if (t->perm) GNN_TRY(gnn_be_gather_rows(be, ns, fin, c->ddp, ns, t->iperm, env->dx));
    GNN_TRY(gnn_be_gemm(be, 0, 1, nd, fin, fout, 1.0f, dz, fout, p + c->ws_off, fout, 1.0f,
                        env->dx, fin));
    GNN_TRY(env->input_grad(env, L, 0, ns, env->dx, env->dx));
    *dx = env->dx;
fail:
    return rc;
}

static size_t rgcn_state_bytes(const gnn_layer_t *L)
{
    const rgcn_t *c = L->state;
    return c ? c->wcat_bytes + c->wrel_bytes + c->dp_bytes + c->dwcat_bytes + c->ddp_bytes +
                   c->agg_bytes + c->zt_bytes
             : 0;
}

static void rgcn_free(gnn_layer_t *L, gnn_backend_t *be)
{
    rgcn_t *c = L->state;
    if (!c) return;
    gnn_be_free(be, c->wcat);
    gnn_be_free(be, c->wrel);
    gnn_be_free(be, c->dp);
    gnn_be_free(be, c->dwcat);
    gnn_be_free(be, c->ddp);
    gnn_be_free(be, c->agg);
    gnn_be_free(be, c->zt);
    gnn_free(c);
    L->state = NULL;
}

const gnn_layer_kind_t gnn_layer_rgcn = {
    .name = "rgcn",
    .default_aggr = "sum",
    .any_aggr = 0,
    .square_sources = 1,
    .reads_halo = 1,
    .typed = 1,
    .setup = rgcn_setup,
    .init = rgcn_init,
    .sparse_check = rgcn_sparse_check,
    .forward = rgcn_forward,
    .drop_target = rgcn_drop_target,
    .scratch = rgcn_scratch,
    .backward = rgcn_backward,
    .tensors = rgcn_tensors,
    .state_bytes = rgcn_state_bytes,
    .free = rgcn_free,
};
