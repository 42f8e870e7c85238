/*
 * Test plug-in: exports gnn_aggr_plugin_abi only. The loader must refuse it
 * with "missing symbol gnn_aggr_plugin_register".
 */
#include "gnn_aggr_plugin.h"

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }
