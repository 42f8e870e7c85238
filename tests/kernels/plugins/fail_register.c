/*
 * Test plug-in: registers a valid aggregator "fail_first", then refuses to
 * load (host->error, returns 1). The loader must report "registration
 * failed: fail_register: no licence for this machine" and drop fail_first.
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
    const gnn_aggr_def_t def = {.abi_version = GNN_AGGR_ABI_VERSION,
                                .name = "fail_first",
                                .description = "registered, then dropped",
                                .cpu_forward = forward,
                                .cpu_backward = backward};
    if (host->add(host, &def)) return 1;
    host->error(host, "fail_register: no licence for this machine");
    return 1;
}
