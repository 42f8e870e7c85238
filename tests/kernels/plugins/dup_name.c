/*
 * Test plug-in: registers a valid aggregator "dup_first", then one called
 * "sum", a built-in's name. The loader must refuse the file with "aggregator
 * sum already registered (by built-in)" and drop dup_first too.
 */
#include "gnn_aggr_plugin.h"

static int forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    (void)call;
    (void)x;
    (void)y;
    return 0;
}

static int backward(const gnn_aggr_call_t *call, const float *x, const float *y, const float *dy,
                    float *dx)
{
    (void)call;
    (void)x;
    (void)y;
    (void)dy;
    (void)dx;
    return 0;
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    gnn_aggr_def_t def = {.abi_version = GNN_AGGR_ABI_VERSION,
                          .name = "dup_first",
                          .description = "first of two",
                          .cpu_forward = forward,
                          .cpu_backward = backward};
    if (host->add(host, &def)) return 1;
    def.name = "sum";
    def.description = "takes a built-in's name";
    return host->add(host, &def);
}
