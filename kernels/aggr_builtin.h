/*
 * The built-in aggregators (sum, mean, gcn, max), internal to the registry.
 *
 * They are ordinary gnn_aggr_def_t entries over the kernels of
 * kernels/spmm.h; gnn_aggr_registry_create registers them through the same
 * host->add path as a plug-in, so they obey the same validation.
 */
#ifndef GNN_KERNELS_AGGR_BUILTIN_H
#define GNN_KERNELS_AGGR_BUILTIN_H

#include "kernels/attn.h"
#include "kernels/gnn_aggr_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What call->host_private points at in an attention function's calls: the
 * slot layout and options of the layer (the built-in gat reads them; a
 * plug-in never sees them). */
typedef struct {
    const gnn_attn_graph_t *a;
    const gnn_attn_opts_t *o;
    struct gnn_backend *be; /* the backend of the call (its scratch memory) */
} gnn__attn_private_t;

/* Add the built-ins to host in the order sum, mean, gcn, max, gat. Returns 0,
 * or the first non-zero result of host->add. */
int gnn__aggr_builtin_register(gnn_aggr_host_t *host);

/* True when def (the registry's copy or the original) is a built-in: its
 * failures are GNN_E codes with the message recorded. */
int gnn__aggr_builtin_owns(const gnn_aggr_def_t *def);

/* True for the built-in attention function gat. */
int gnn__aggr_builtin_is_gat(const gnn_aggr_def_t *def);

/* The kernels/spmm.h aggregator (gnn_aggr_t value) def stands for when it
 * is a built-in, else -1. Device backends run their own kernels for the
 * built-ins by this. */
int gnn__aggr_builtin_kind(const gnn_aggr_def_t *def);

#ifdef __cplusplus
}
#endif

#endif
