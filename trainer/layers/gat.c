/*
 * GAT (Velickovic et al., "Graph Attention Networks"): per head h of H,
 *   Wh = D W                       (n_src x H*F)
 *   s[u -> v, h] = score(Wh; theta), a self loop added for every
 *   destination (stored ones left out); the score is the layer's attention
 *   function (--attention, from the aggregator registry: the built-in gat,
 *   LeakyReLU(<Wh[u, h], a_l[h]> + <Wh[v, h], a_r[h]>), or a plug-in's)
 *   alpha = softmax of s over each destination's in-edges, then dropped
 *   with probability --attn-dropout while training
 *   y[v, h] = sum_u alpha[u -> v, h] Wh[u, h]
 * A hidden layer concatenates its heads (Z = y + b, H*F wide; the model
 * applies ELU), the output layer averages them (Z = mean_h y[., h] + b).
 * Parameters of a layer: W (fin x H*F), the attention function's tensors
 * theta (for gat: a_l and a_r, H x F each), then b (H*F, or F for the
 * output layer). The softmax, dropout and sum run in the backend's fused
 * attention kernels (kernels/attn.h): memory per edge is O(heads).
 */
#include "trainer/layer.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <string.h>

/* Bytes of a block of D's rows (dropped_gemm). */
#define DROP_BLOCK_BYTES ((int64_t)4 << 20)

typedef struct {
    int64_t H, F;      /* heads, features per head */
    int concat;        /* hidden layer: heads concatenated (else averaged) */
    int64_t th_off, b_off;         /* W at 0, theta, b */
    gnn_aggr_param_t th[GNN_AGGR_MAX_PARAMS]; /* theta's tensors */
    int n_th;
    /* The last forward. */
    float *wh;  size_t wh_bytes;   /* n_src x H*F */
    void *ws;   size_t ws_bytes;   /* the attention function's workspace */
    float *s;   size_t s_bytes;    /* slots x H: scores, alpha, then ds */
    float *y;   size_t y_bytes;    /* n_dst x H*F, the attention's output
                                      (the backward reads it), then dWh
                                      (n_src x H*F) */
    gnn_attn_opts_t o;             /* its dropout counters */
    int64_t drop_br;               /* rows per block of D (L->drop_rows) */
    float *mean; size_t mean_bytes; /* H*F x F: the average over heads */
    /* Backward scratch. */
    float *dy;  size_t dy_bytes;
} gat_t;

static int gat_setup(gnn_layer_t *L)
{
    gat_t *c = gnn_calloc(1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "layer %d", L->index);
    L->state = c;
    c->H = L->heads;
    c->F = L->fout;
    c->concat = !L->last;
    int64_t HF = c->H * c->F, n_th;
    gnn_aggr_dims_t dims = {c->H, c->F};
    if (!gnn_aggr_is_attention(L->attn))
        return GNN_FAIL(GNN_EINVAL, "layer %d: GAT needs an attention function", L->index);
    int rc = gnn_aggr_params(L->attn, &dims, c->th, &c->n_th, &n_th);
    if (rc < 0) return rc;
    c->th_off = L->fin * HF;
    c->b_off = c->th_off + n_th;
    if (c->concat) L->fout = HF;
    L->count = c->b_off + L->fout;
    return 0;
}

static void gat_init(const gnn_layer_t *L, float *w, uint64_t seed)
{
    const gat_t *c = L->state;
    gnn_layer_weights(L, w, 0, L->fin, c->H * c->F, seed);
    gnn_layer_init_declared(L, w, c->th_off, c->th, c->n_th, seed);
}

/* GATConv's names: lin.weight, att_src and att_dst (1 x H x F each) for
 * the built-in attention function, bias; a plug-in's tensors under
 * "attn." and their declared names. */
static int gat_tensors(const gnn_layer_t *L, gnn_layer_tensor_t *t)
{
    const gat_t *c = L->state;
    int n = 0;
    t[n++] = gnn_layer_tensor("lin.weight", 0, c->H * c->F, L->fin, 1);
    if (!strcmp(L->attn->name, "gat") && c->n_th == 2) {
        static const char *const att[2] = {"att_src", "att_dst"};
        for (int i = 0; i < 2; i++) {
            gnn_layer_tensor_t a = {.at = c->th_off + i * c->H * c->F, .ndim = 3,
                                    .shape = {1, c->H, c->F}};
            snprintf(a.name, sizeof a.name, "%s", att[i]);
            t[n++] = a;
        }
    } else {
        n += gnn_layer_tensors_declared("attn.", c->th_off, c->th, c->n_th, t + n);
    }
    t[n++] = gnn_layer_tensor("bias", c->b_off, L->fout, 0, 0);
    return n;
}

/* Layer 0 may read the sparse input: only Wh = D W reads D. */
static int gat_sparse_check(const gnn_layer_t *L)
{
    (void)L;
    return 0;
}

/*
 * With dropout, D = dropout(H) is never formed whole (an n_src x fin copy,
 * the largest buffer of a wide input): Wh = D W and dW = D^T dWh run over
 * blocks of rows of D drawn again from the model's stream (env->drop_rows)
 * into a block of the shared scratch.
 */
static int64_t drop_block_rows(const gnn_layer_t *L, const gnn_layer_env_t *env)
{
    int64_t r = DROP_BLOCK_BYTES / (L->fin * (int64_t)sizeof(float));
    r = r < env->block_rows ? r : env->block_rows;
    r = r < 1 ? 1 : r;
    return r < L->n_src ? r : L->n_src;
}

/* Wh = D W, or dW = D^T dWh (backward), block by block of D's rows. */
static int dropped_gemm(gnn_layer_t *L, gnn_layer_env_t *env, float *blk, int backward,
                        const float *w, float *wh, const float *dwh, float *dw)
{
    int rc = 0;
    const gat_t *c = L->state;
    int64_t HF = c->H * c->F, fin = L->fin, br = c->drop_br;
    if (backward && L->n_src == 0) /* no rows: dW = 0 */
        return gnn_be_gemm(env->be, 1, 0, fin, HF, 0, 1.0f, blk, fin, dwh, HF, 0.0f, dw, HF);
    for (int64_t r0 = 0; r0 < L->n_src; r0 += br) {
        int64_t nr = L->n_src - r0 < br ? L->n_src - r0 : br;
        GNN_TRY(env->drop_rows(env, L, r0, nr, blk));
        if (backward)
            GNN_TRY(gnn_be_gemm(env->be, 1, 0, fin, HF, nr, 1.0f, blk, fin, dwh + r0 * HF, HF,
                                r0 ? 1.0f : 0.0f, dw, HF));
        else
            GNN_TRY(gnn_be_gemm(env->be, 0, 0, nr, HF, fin, 1.0f, blk, fin, w, HF, 0.0f,
                                wh + r0 * HF, HF));
    }
    return 0;
fail:
    return rc;
}

/* The average over heads as a product: M[h*F + k, k] = 1/H. */
static int mean_matrix(gat_t *c, gnn_backend_t *be)
{
    if (c->mean) return 0;
    int64_t HF = c->H * c->F;
    float *h = gnn_calloc((size_t)(HF * c->F) + 1, sizeof *h);
    if (!h) return GNN_FAIL(GNN_ENOMEM, "GAT head average");
    for (int64_t hd = 0; hd < c->H; hd++)
        for (int64_t k = 0; k < c->F; k++) h[(hd * c->F + k) * c->F + k] = 1.0f / (float)c->H;
    int rc = gnn_layer_ensure(be, (void **)&c->mean, &c->mean_bytes, gnn_layer_fbytes(HF, c->F));
    if (rc == 0) rc = gnn_be_upload(be, c->mean, h, gnn_layer_fbytes(HF, c->F));
    gnn_free(h);
    return rc;
}

static int gat_forward(gnn_layer_t *L, gnn_layer_env_t *env)
{
    int rc = 0;
    gat_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t ns = L->n_src, nd = L->n_dst, H = c->H, F = c->F, HF = H * F;
    const float *p = env->params + L->off;
    int64_t slots = gnn_be_attn_slots(L->graph, 1);
    size_t ws = 0;
    c->o = (gnn_attn_opts_t){.heads = H, .f = F, .self_loop = 1,
                             .negative_slope = L->negative_slope,
                             .ids = env->row_id, .n_ids = env->n_global};
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->wh, &c->wh_bytes, gnn_layer_fbytes(ns, HF)));
    GNN_TRY(gnn_layer_ensure(be, (void **)&c->s, &c->s_bytes, gnn_layer_fbytes(slots, H)));
    GNN_TRY(gnn_be_attn_workspace(be, L->graph, L->attn, &c->o, &ws));
    if (ws) GNN_TRY(gnn_layer_ensure(be, &c->ws, &c->ws_bytes, ws));
    GNN_TRY(gnn_layer_ensure(be, (void **)&L->z, &L->z_bytes,
                             gnn_layer_fbytes(env->out_rows, L->fout)));
    if (L->sparse) { /* layer 0 on the sparse input S: Wh = S W */
        GNN_TRY(gnn_be_sparse_mm(be, env->sp, env->sp_vals, ns, p, HF, c->wh));
    } else if (L->drop_rows) {
        float *blk;
        c->drop_br = drop_block_rows(L, env);
        GNN_TRY(env->fwd_scratch(env, gnn_layer_fbytes(c->drop_br, L->fin), &blk));
        GNN_TRY(dropped_gemm(L, env, blk, 0, p, c->wh, NULL, NULL));
    } else
        GNN_TRY(gnn_be_gemm(be, 0, 0, ns, HF, L->fin, 1.0f, L->d, L->fin, p, HF, 0.0f, c->wh,
                            HF));
    if (L->trained && L->attn_dropout > 0.0f) { /* masks by edge end points */
        c->o.dropout = L->attn_dropout;
        c->o.seed = env->dropout_key(env, &c->o.key_base, &c->o.key_at);
        c->o.keyed = 1; /* a replayed step draws its own key (trainer/replay.c) */
    }
    GNN_TRY(gnn_be_attn_score(be, L->graph, L->attn, &c->o, c->n_th ? p + c->th_off : NULL,
                              c->wh, c->s, c->ws, c->ws_bytes));
    /* A training forward keeps y for the backward, in a buffer that then
     * takes dWh; an evaluation's hidden layer writes y into Z itself. */
    float *y = c->concat && !L->trained ? L->z : NULL;
    if (!y) {
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->y, &c->y_bytes,
                                 gnn_layer_fbytes(ns > nd ? ns : nd, HF)));
        y = c->y;
    }
    GNN_TRY(gnn_be_attn_forward(be, L->graph, &c->o, c->wh, c->s, y));
    if (c->concat) {
        if (y != L->z) GNN_TRY(gnn_be_copy(be, L->z, y, gnn_layer_fbytes(nd, HF)));
    } else {
        GNN_TRY(mean_matrix(c, be));
        GNN_TRY(gnn_be_gemm(be, 0, 0, nd, F, HF, 1.0f, c->y, HF, c->mean, F, 0.0f, L->z, F));
    }
    GNN_TRY(gnn_layer_bias_out(L, env, nd, L->fout, p + c->b_off));
    return 0;
fail:
    return rc;
}

static void gat_scratch(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s)
{
    (void)input_grad;
    const gat_t *c = L->state;
    memset(s, 0, sizeof *s);
    s->uses_t = L->drop_rows; /* a block of D's rows */
    s->t_bytes = L->drop_rows ? gnn_layer_fbytes(c->drop_br, L->fin) : 0;
}

static int gat_backward(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx)
{
    int rc = 0;
    gat_t *c = L->state;
    gnn_backend_t *be = env->be;
    int64_t ns = L->n_src, nd = L->n_dst, H = c->H, F = c->F, HF = H * F, fin = L->fin;
    const float *p = env->params + L->off;
    float *g = env->grads + L->off;
    float *dwh = c->y; /* after the attention's backward has read y */
    GNN_TRY(gnn_be_bias_grad(be, nd, L->fout, dz, g + c->b_off));
    const float *dy = dz;
    if (!c->concat) { /* dy[v, h, k] = dz[v, k] / H */
        GNN_TRY(gnn_layer_ensure(be, (void **)&c->dy, &c->dy_bytes, gnn_layer_fbytes(nd, HF)));
        GNN_TRY(gnn_be_gemm(be, 0, 1, nd, HF, F, 1.0f, dz, F, c->mean, F, 0.0f, c->dy, HF));
        dy = c->dy;
    }
    /* The scores' gradient replaces alpha (ds = s): one slots x H array;
     * dWh replaces y. */
    GNN_TRY(gnn_be_attn_backward(be, L->graph, &c->o, c->wh, c->s, c->y, dy, dwh, c->s));
    GNN_TRY(gnn_be_attn_score_backward(be, L->graph, L->attn, &c->o,
                                       c->n_th ? p + c->th_off : NULL, c->wh, c->s, dwh,
                                       c->n_th ? g + c->th_off : NULL, c->ws, c->ws_bytes));
    if (L->sparse) { /* dW = S^T dWh; layer 0: no input gradient */
        GNN_TRY(gnn_be_sparse_mm_t(be, env->sp, env->sp_vals, L->n_src, dwh, HF, g));
        return 0;
    }
    if (L->drop_rows)
        GNN_TRY(dropped_gemm(L, env, env->dt, 1, NULL, NULL, dwh, g));
    else
        GNN_TRY(gnn_be_gemm(be, 1, 0, fin, HF, ns, 1.0f, L->d, fin, dwh, HF, 0.0f, g, HF));
    if (!dx) return 0;
    float *dd = env->dx;
    GNN_TRY(gnn_be_gemm(be, 0, 1, ns, fin, HF, 1.0f, dwh, HF, p, HF, 0.0f, dd, fin));
    GNN_TRY(env->input_grad(env, L, 0, ns, dd, dd));
    *dx = dd;
    return 0;
fail:
    return rc;
}

static size_t gat_state_bytes(const gnn_layer_t *L)
{
    const gat_t *c = L->state;
    return c ? c->wh_bytes + c->ws_bytes + c->s_bytes + c->y_bytes + c->mean_bytes +
                   c->dy_bytes
             : 0;
}

static void gat_free(gnn_layer_t *L, gnn_backend_t *be)
{
    gat_t *c = L->state;
    if (!c) return;
    void *bufs[] = {c->wh, c->ws, c->s, c->y, c->mean, c->dy};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) gnn_be_free(be, bufs[i]);
    gnn_free(c);
    L->state = NULL;
}

const gnn_layer_kind_t gnn_layer_gat = {
    .name = "gat",
    .default_aggr = NULL,
    .any_aggr = 0,
    .square_sources = 1,
    .act = GNN_LAYER_ACT_ELU,
    .attention = 1,
    .dropout_keys = 1,
    .drops_rows = 1,
    .reads_halo = 1,
    .setup = gat_setup,
    .init = gat_init,
    .sparse_check = gat_sparse_check,
    .forward = gat_forward,
    .scratch = gat_scratch,
    .backward = gat_backward,
    .tensors = gat_tensors,
    .state_bytes = gat_state_bytes,
    .free = gat_free,
};
