/*
 * The built-in aggregators sum, mean, gcn and max, and the attention
 * function gat, as registry definitions.
 *
 * Each CPU entry point is a thin wrapper over gnn_spmm_forward /
 * gnn_spmm_backward (kernels/spmm.h). They ignore call->graph and read the
 * prepared graph (const gnn_spmm_graph_t *) from call->host_private, which
 * the backend sets on every call: it carries the cached transpose and the
 * scale factors the kernels need. max keeps its arg-max (n_dst x f int32)
 * in the workspace between forward and backward; the others need none.
 *
 * A failure returns the negative GNN_E* code of the kernel with its
 * recorded message left in place, and copies that message into call->msg.
 * The definitions carry no CUDA entry points: a device backend recognises
 * a built-in (gnn__aggr_builtin_kind) and runs its own kernels for it.
 */
#include "kernels/aggr_builtin.h"

#include "graph/base/error.h"
#include "kernels/attn.h"
#include "kernels/spmm.h"

#include <stdint.h>
#include <stdio.h>

/* Copy the recorded error message into call->msg (when it has room). */
static void copy_message(const gnn_aggr_call_t *call)
{
    if (call->msg && call->msg_size > 0)
        snprintf(call->msg, call->msg_size, "%s", gnn_error_message());
}

/* The prepared graph of call, or NULL with a recorded GNN_EINVAL. */
static const gnn_spmm_graph_t *prepared_graph(const gnn_aggr_call_t *call, const char *what)
{
    if (!call) {
        GNN_FAIL(GNN_EINVAL, "built-in aggregator %s: NULL call", what);
        return NULL;
    }
    if (call->host_private) return call->host_private;
    GNN_FAIL(GNN_EINVAL, "built-in aggregator %s: no prepared graph (call->host_private is NULL)",
             what);
    copy_message(call);
    return NULL;
}

/*
 * Point *argmax at the arg-max array of a max call: the workspace, checked
 * for size. *argmax stays as it is when there is nothing to hold (no rows,
 * or a width the kernel will refuse on its own).
 */
static int max_workspace(const gnn_aggr_call_t *call, const gnn_spmm_graph_t *g, int32_t **argmax)
{
    if (call->f < 1 || g->n_dst == 0) return 0;
    if ((uint64_t)g->n_dst > SIZE_MAX / sizeof(int32_t) / (uint64_t)call->f) return 0;
    size_t need = (size_t)g->n_dst * (size_t)call->f * sizeof(int32_t);
    if (!call->workspace || call->workspace_size < need) {
        int rc = GNN_FAIL(GNN_EINVAL, "built-in aggregator max: workspace of %zu bytes, needs %zu",
                          call->workspace ? call->workspace_size : (size_t)0, need);
        copy_message(call);
        return rc;
    }
    *argmax = call->workspace;
    return 0;
}

static int forward(const gnn_aggr_call_t *call, gnn_aggr_t aggr, const float *x, float *y)
{
    const gnn_spmm_graph_t *g = prepared_graph(call, gnn_aggr_name(aggr));
    if (!g) return GNN_EINVAL;
    /* max without rows (or with a width the kernel refuses) still needs a
     * non-NULL arg-max pointer; the others take NULL. */
    int32_t none = -1, *argmax = aggr == GNN_AGGR_MAX ? &none : NULL;
    int rc = aggr == GNN_AGGR_MAX ? max_workspace(call, g, &argmax) : 0;
    if (rc < 0) return rc;
    rc = gnn_spmm_forward(g, aggr, call->f, x, y, argmax);
    if (rc < 0) copy_message(call);
    return rc;
}

static int backward(const gnn_aggr_call_t *call, gnn_aggr_t aggr, const float *dy, float *dx)
{
    const gnn_spmm_graph_t *g = prepared_graph(call, gnn_aggr_name(aggr));
    if (!g) return GNN_EINVAL;
    int32_t none = -1, *argmax = aggr == GNN_AGGR_MAX ? &none : NULL;
    int rc = aggr == GNN_AGGR_MAX ? max_workspace(call, g, &argmax) : 0;
    if (rc < 0) return rc;
    rc = gnn_spmm_backward(g, aggr, call->f, dy, argmax, dx);
    if (rc < 0) copy_message(call);
    return rc;
}

#define BUILTIN_ENTRIES(lower, upper)                                                              \
    static int lower##_forward(const gnn_aggr_call_t *call, const float *x, float *y)              \
    {                                                                                              \
        return forward(call, GNN_AGGR_##upper, x, y);                                              \
    }                                                                                              \
    static int lower##_backward(const gnn_aggr_call_t *call, const float *x, const float *y,       \
                                const float *dy, float *dx)                                        \
    {                                                                                              \
        (void)x;                                                                                   \
        (void)y;                                                                                   \
        return backward(call, GNN_AGGR_##upper, dy, dx);                                           \
    }
BUILTIN_ENTRIES(sum, SUM)
BUILTIN_ENTRIES(mean, MEAN)
BUILTIN_ENTRIES(gcn, GCN)
BUILTIN_ENTRIES(max, MAX)
#undef BUILTIN_ENTRIES

/* n_dst * f * sizeof(int32_t), SIZE_MAX when that does not fit (the
 * allocation then fails instead of coming out short). */
static size_t max_workspace_bytes(const gnn_aggr_graph_t *g, int64_t f, void *user)
{
    (void)user;
    if (!g || g->n_dst <= 0 || f <= 0) return 0;
    if ((uint64_t)g->n_dst > SIZE_MAX / sizeof(int32_t) / (uint64_t)f) return SIZE_MAX;
    return (size_t)g->n_dst * (size_t)f * sizeof(int32_t);
}

/* ---- The gat attention function ------------------------------------------ */

/* GAT's score (kernels/attn.h): per-node terms el = x . a_l (sources) and
 * er = x . a_r (destinations) per head, s = LeakyReLU(el[u] + er[v]).
 * Parameters a_l, a_r (heads x f, Glorot). The workspace keeps el and er
 * from the score for its backward, and room for their gradients:
 * 2 (n_src + n_dst) heads floats. */

static int gat_params(const gnn_aggr_dims_t *d, gnn_aggr_param_t *out, int max, void *user)
{
    (void)user;
    if (max < 2) return -1;
    out[0] = (gnn_aggr_param_t){"a_l", d->heads, d->f, GNN_AGGR_INIT_GLOROT, 0.0f};
    out[1] = (gnn_aggr_param_t){"a_r", d->heads, d->f, GNN_AGGR_INIT_GLOROT, 0.0f};
    return 2;
}

static size_t gat_workspace(const gnn_aggr_graph_t *g, const gnn_aggr_edges_t *e,
                            const gnn_aggr_dims_t *d, void *user)
{
    (void)e, (void)user;
    uint64_t n = (uint64_t)(g->n_src + g->n_dst) * 2u;
    if (n && (uint64_t)d->heads > SIZE_MAX / sizeof(float) / n) return SIZE_MAX;
    return (size_t)(n * (uint64_t)d->heads) * sizeof(float);
}

/* The call's preparation, and its workspace split into el, er, del, der;
 * NULL with the message copied when something is missing. */
static const gnn__attn_private_t *gat_parts(const gnn_aggr_call_t *call, float **el, float **er,
                                            float **del, float **der)
{
    const gnn__attn_private_t *p = call ? call->host_private : NULL;
    if (!p || !p->a || !p->o || !call->params) {
        GNN_FAIL(GNN_EINVAL, "built-in attention gat: no prepared graph or parameters");
        if (call) copy_message(call);
        return NULL;
    }
    const gnn_spmm_graph_t *g = p->a->g;
    int64_t H = p->o->heads;
    size_t need = (size_t)(g->n_src + g->n_dst) * 2u * (size_t)H * sizeof(float);
    if (need && (!call->workspace || call->workspace_size < need)) {
        GNN_FAIL(GNN_EINVAL, "built-in attention gat: workspace of %zu bytes, needs %zu",
                 call->workspace ? call->workspace_size : (size_t)0, need);
        copy_message(call);
        return NULL;
    }
    float *w = call->workspace;
    *el = w;
    *er = w ? w + g->n_src * H : NULL;
    *del = w ? *er + g->n_dst * H : NULL;
    *der = w ? *del + g->n_src * H : NULL;
    return p;
}

static int gat_score(const gnn_aggr_call_t *call, const float *x, float *s)
{
    float *el, *er, *del, *der;
    const gnn__attn_private_t *p = gat_parts(call, &el, &er, &del, &der);
    if (!p) return GNN_EINVAL;
    const gnn_spmm_graph_t *g = p->a->g;
    if (!el) return 0; /* no rows */
    int64_t H = p->o->heads, F = p->o->f;
    int rc = gnn_attn_head_dot(g->n_src, H, F, x, call->params, el);
    if (rc == 0) rc = gnn_attn_head_dot(g->n_dst, H, F, x, call->params + H * F, er);
    if (rc == 0) rc = gnn_attn_gat_score(p->a, p->o, el, er, s);
    if (rc < 0) copy_message(call);
    return rc;
}

static int gat_score_backward(const gnn_aggr_call_t *call, const float *x, const float *ds,
                              float *dx)
{
    float *el, *er, *del, *der;
    const gnn__attn_private_t *p = gat_parts(call, &el, &er, &del, &der);
    if (!p) return GNN_EINVAL;
    if (!call->dparams) {
        int rc = GNN_FAIL(GNN_EINVAL, "built-in attention gat: no parameter gradients");
        copy_message(call);
        return rc;
    }
    const gnn_spmm_graph_t *g = p->a->g;
    int64_t H = p->o->heads, F = p->o->f;
    if (!el) { /* no rows: no gradient */
        for (int64_t i = 0; i < 2 * H * F; i++) call->dparams[i] = 0.0f;
        return 0;
    }
    const float *al = call->params, *ar = call->params + H * F;
    int rc = gnn_attn_gat_score_backward(p->a, p->o, el, er, ds, del, der);
    if (rc == 0) rc = gnn_attn_head_dot_backward(g->n_src, H, F, x, al, del, dx, call->dparams);
    if (rc == 0)
        rc = gnn_attn_head_dot_backward(g->n_dst, H, F, x, ar, der, dx, call->dparams + H * F);
    if (rc < 0) copy_message(call);
    return rc;
}

static const gnn_aggr_def_t builtins[] = {
#define AGGREGATOR(nm, desc, ws, lower)                                                           \
    {.abi_version = GNN_AGGR_ABI_VERSION,                                                          \
     .name = nm,                                                                                   \
     .description = desc,                                                                          \
     .workspace_bytes = ws,                                                                        \
     .cpu_forward = lower##_forward,                                                               \
     .cpu_backward = lower##_backward,                                                             \
     .kind = GNN_AGGR_KIND_AGGREGATE}
    AGGREGATOR("sum", "sum of the in-neighbours' rows, times the edge weights", NULL, sum),
    AGGREGATOR("mean", "mean of the in-neighbours' rows (weighted sum / in-degree)", NULL, mean),
    AGGREGATOR("gcn",
               "GCN normalisation D^-1/2 (A+I) D^-1/2 with an implicit self loop (weights "
               "ignored)",
               NULL, gcn),
    AGGREGATOR("max", "element-wise maximum of the in-neighbours' rows (weights ignored)",
               max_workspace_bytes, max),
#undef AGGREGATOR
    {.abi_version = GNN_AGGR_ABI_VERSION,
     .name = "gat",
     .description = "GAT attention: LeakyReLU(a_l . x_u + a_r . x_v) per head",
     .kind = GNN_AGGR_KIND_ATTENTION,
     .params = gat_params,
     .workspace_bytes2 = gat_workspace,
     .cpu_score = gat_score,
     .cpu_score_backward = gat_score_backward},
};

int gnn__aggr_builtin_register(gnn_aggr_host_t *host)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        int rc = host->add(host, &builtins[i]);
        if (rc != 0) return rc;
    }
    return 0;
}

int gnn__aggr_builtin_kind(const gnn_aggr_def_t *def)
{
    static const gnn_aggr_t kind[] = {GNN_AGGR_SUM, GNN_AGGR_MEAN, GNN_AGGR_GCN, GNN_AGGR_MAX};
    for (size_t i = 0; def && def->cpu_forward && i < sizeof kind / sizeof kind[0]; i++)
        if (def->cpu_forward == builtins[i].cpu_forward) return (int)kind[i];
    return -1;
}

int gnn__aggr_builtin_is_gat(const gnn_aggr_def_t *def)
{
    return def && def->cpu_score == gat_score;
}

int gnn__aggr_builtin_owns(const gnn_aggr_def_t *def)
{
    return gnn__aggr_builtin_kind(def) >= 0 || gnn__aggr_builtin_is_gat(def);
}
