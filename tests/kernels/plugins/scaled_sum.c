/*
 * Test plug-in (ABI version 2): the aggregator "scaled_sum" with one
 * learnable tensor, a per-column scale s (1 x f, starting at 0.5):
 *
 *   y[v][k]  = s[k] * sum_{u -> v} x[u][k]          (weights ignored)
 *   dx[u][k] = s[k] * sum_{u -> v} dy[v][k]
 *   ds[k]    = sum_v dy[v][k] * sum_{u -> v} x[u][k]
 *
 * The forward keeps the unscaled sums in the workspace (workspace_bytes2:
 * n_dst x f floats), which the backward reads for ds.
 */
#include "gnn_aggr_plugin.h"

#include <string.h>

static int forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f;
    float *sum = call->workspace;
    if (!call->params || (g->n_dst > 0 && !sum)) return 1;
    for (int64_t v = 0; v < g->n_dst; v++) {
        float *sv = sum + v * f;
        memset(sv, 0, (size_t)f * sizeof *sv);
        for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
            for (int64_t k = 0; k < f; k++) sv[k] += x[g->indices[e] * f + k];
        for (int64_t k = 0; k < f; k++) y[v * f + k] = call->params[k] * sv[k];
    }
    return 0;
}

static int backward(const gnn_aggr_call_t *call, const float *x, const float *y, const float *dy,
                    float *dx)
{
    (void)x, (void)y;
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f;
    const float *sum = call->workspace, *s = call->params;
    if (!s || !call->dparams) return 1;
    for (int64_t u = 0; u < g->n_src; u++)
        for (int64_t k = 0; k < f; k++) {
            float t = 0.0f;
            for (int64_t j = g->t_indptr[u]; j < g->t_indptr[u + 1]; j++)
                t += dy[g->t_indices[j] * f + k];
            dx[u * f + k] = s[k] * t;
        }
    for (int64_t k = 0; k < f; k++) {
        double t = 0.0;
        for (int64_t v = 0; v < g->n_dst; v++) t += (double)dy[v * f + k] * sum[v * f + k];
        call->dparams[k] = (float)t;
    }
    return 0;
}

static int params(const gnn_aggr_dims_t *d, gnn_aggr_param_t *out, int max, void *user)
{
    (void)user;
    if (max < 1 || d->heads != 1) return -1;
    out[0] = (gnn_aggr_param_t){"scale", 1, d->f, GNN_AGGR_INIT_CONST, 0.5f};
    return 1;
}

static size_t workspace(const gnn_aggr_graph_t *g, const gnn_aggr_edges_t *e,
                        const gnn_aggr_dims_t *d, void *user)
{
    (void)e, (void)user;
    return (size_t)g->n_dst * (size_t)d->f * sizeof(float);
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    static const gnn_aggr_def_t def = {
        .abi_version = GNN_AGGR_ABI_VERSION,
        .name = "scaled_sum",
        .description = "sum of the in-neighbours' rows times a learnable scale per column",
        .kind = GNN_AGGR_KIND_AGGREGATE,
        .params = params,
        .workspace_bytes2 = workspace,
        .cpu_forward = forward,
        .cpu_backward = backward,
    };
    return host->add(host, &def);
}
