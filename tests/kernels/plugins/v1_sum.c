/*
 * Test plug-in built as a version 1 plug-in was: ABI version 1 and the
 * version 1 layouts of the definition and the call, written out here as
 * the version 1 header had them (the current header's structures are
 * longer). The definition lives in a heap block of exactly the version 1
 * size, so a host that read version 2's fields from it would read past the
 * block (AddressSanitizer reports it). Registers "v1_sum": the sum of the
 * in-neighbours' rows (weights ignored), backward over the transpose.
 */
#include "gnn_aggr_plugin.h"

#include <stdlib.h>
#include <string.h>

/* Version 1's gnn_aggr_call_t. */
typedef struct {
    const gnn_aggr_graph_t *graph;
    int64_t f;
    void *workspace;
    size_t workspace_size;
    void *stream;
    void *user;
    char *msg;
    size_t msg_size;
    const void *host_private;
} v1_call_t;

typedef int (*v1_forward_fn)(const v1_call_t *call, const float *x, float *y);
typedef int (*v1_backward_fn)(const v1_call_t *call, const float *x, const float *y,
                              const float *dy, float *dx);

/* Version 1's gnn_aggr_def_t. */
typedef struct {
    uint32_t abi_version;
    const char *name;
    const char *description;
    gnn_aggr_workspace_fn workspace_bytes;
    v1_forward_fn cpu_forward;
    v1_backward_fn cpu_backward;
    v1_forward_fn cuda_forward;
    v1_backward_fn cuda_backward;
    void *user;
} v1_def_t;

static int forward(const v1_call_t *call, const float *x, float *y)
{
    const gnn_aggr_graph_t *g = call->graph;
    int64_t f = call->f;
    for (int64_t v = 0; v < g->n_dst; v++) {
        float *yv = y + v * f;
        memset(yv, 0, (size_t)f * sizeof *yv);
        for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++)
            for (int64_t k = 0; k < f; k++) yv[k] += x[g->indices[e] * f + k];
    }
    return 0;
}

static int backward(const v1_call_t *call, const float *x, const float *y, const float *dy,
                    float *dx)
{
    (void)x, (void)y;
    const gnn_aggr_graph_t *g = call->graph;
    int64_t f = call->f;
    for (int64_t u = 0; u < g->n_src; u++) {
        float *du = dx + u * f;
        memset(du, 0, (size_t)f * sizeof *du);
        for (int64_t t = g->t_indptr[u]; t < g->t_indptr[u + 1]; t++)
            for (int64_t k = 0; k < f; k++) du[k] += dy[g->t_indices[t] * f + k];
    }
    return 0;
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return 1u; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    v1_def_t *def = malloc(sizeof *def);
    if (!def) return 1;
    *def = (v1_def_t){1u, "v1_sum", "sum, from a version 1 plug-in", NULL, forward, backward,
                      NULL, NULL, NULL};
    int rc = host->add(host, (const gnn_aggr_def_t *)(const void *)def);
    free(def);
    return rc;
}
