/*
 * Test plug-in: reports ABI version 999. The loader must refuse it before
 * calling its register function ("ABI version 999, this build needs N").
 */
#include "gnn_aggr_plugin.h"

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return 999u; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    host->error(host, "bad_abi: register must not be called");
    return 1;
}
