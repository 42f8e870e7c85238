/*
 * The aggregator registry: every aggregator a backend can run, by name.
 *
 * A registry starts with the built-ins (the aggregators sum, mean, gcn,
 * max: the kernels of kernels/spmm.h; the attention function gat: those of
 * kernels/attn.h), registered through the same definition structure as
 * plug-ins (kernels/gnn_aggr_plugin.h), and grows by loading plug-ins.
 * Aggregators and attention functions share one name space.
 * Definitions returned here stay valid until the registry is freed, which
 * also unloads its plug-ins.
 *
 * The built-ins' CPU entry points read the prepared graph of kernels/spmm.h
 * (a const gnn_spmm_graph_t *) from call->host_private, which the backend
 * sets on every call (kernels/backend.h); plug-ins never see it. The
 * workspace of max holds the arg-max (n_dst x f int32); the others need
 * none.
 */
#ifndef GNN_KERNELS_AGGR_H
#define GNN_KERNELS_AGGR_H

#include "kernels/gnn_aggr_plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gnn_aggr_registry gnn_aggr_registry_t;

/* A registry holding the built-ins. 0, GNN_EINVAL (NULL out), GNN_ENOMEM. */
int gnn_aggr_registry_create(gnn_aggr_registry_t **out);
/* Free r and dlclose its plug-ins; NULL is a no-op. */
void gnn_aggr_registry_free(gnn_aggr_registry_t *r);

/*
 * Load the plug-in at path (dlopen; a path without '/' is taken relative to
 * the current directory, not searched for) and register its aggregators.
 * All or nothing: on failure no aggregator of the file stays registered.
 * Errors (GNN_EPLUGIN unless noted), each one line naming path:
 *   cannot open (dlerror text), GNN_ENOENT when the file does not exist;
 *   "missing symbol gnn_aggr_plugin_abi" / "gnn_aggr_plugin_register";
 *   "ABI version X, this build reads 1 to Y" (version 1 plug-ins load);
 *   "registration failed: <plug-in's reason>";
 *   "aggregator NAME already registered (by ORIGIN)";
 *   bad definition: invalid name, missing backward for a forward, no entry
 *   point at all, entry points of the other kind, an unknown kind,
 *   abi_version outside 1 .. the plug-in's own;
 *   "registered no aggregator" for a file that adds none;
 *   GNN_ENOMEM; GNN_EINVAL for a NULL registry or path.
 * Loading the same file twice fails with the duplicate-name error.
 */
int gnn_aggr_registry_load(gnn_aggr_registry_t *r, const char *path);

/*
 * The aggregator called name. 0 with *out set, or GNN_EINVAL with the
 * message "unknown aggregator "NAME" (registered: sum, mean, ...)".
 */
int gnn_aggr_registry_find(const gnn_aggr_registry_t *r, const char *name,
                           const gnn_aggr_def_t **out);

/*
 * The same for one kind: kind GNN_AGGR_KIND_AGGREGATE or
 * GNN_AGGR_KIND_ATTENTION, or -1 for any. A name of the other kind fails
 * with GNN_EINVAL "\"NAME\" is an attention function, not an aggregator"
 * (or the reverse); an unknown one lists the names of the kind asked for:
 * "unknown attention function "NAME" (registered: gat, ...)".
 */
int gnn_aggr_registry_find_kind(const gnn_aggr_registry_t *r, const char *name, int kind,
                                const gnn_aggr_def_t **out);

/* 1 when def is an attention function (kind GNN_AGGR_KIND_ATTENTION). */
int gnn_aggr_is_attention(const gnn_aggr_def_t *def);

/*
 * The learnable tensors def declares for a layer of dims d (version 2
 * definitions; none for the others): *n of them into out[0 ..
 * GNN_AGGR_MAX_PARAMS), *count their values in all. 0; GNN_EINVAL when the
 * definition refuses d (its params function returned a negative value);
 * GNN_EPLUGIN for a declaration out of bounds (more than
 * GNN_AGGR_MAX_PARAMS tensors, a side below 1 or a tensor over 2^31
 * values, an invalid name, an unknown initialisation, a non-finite
 * constant). The names in out belong to the definition.
 */
int gnn_aggr_params(const gnn_aggr_def_t *def, const gnn_aggr_dims_t *d, gnn_aggr_param_t *out,
                    int *n, int64_t *count);

/*
 * Does def commute with a product on the right, aggr(X) W = aggr(X W)?
 * 1 for the built-ins sum, mean and gcn, 0 for max and for every plug-in
 * (nothing is assumed of them) and for NULL. A layer may then multiply
 * before aggregating (the cheaper order when its output is narrower) or
 * take sparse input.
 */
int gnn_aggr_linear(const gnn_aggr_def_t *def);

/* Number of registered aggregators and the i-th (registration order:
 * built-ins first); NULL for i out of range. */
int gnn_aggr_registry_count(const gnn_aggr_registry_t *r);
const gnn_aggr_def_t *gnn_aggr_registry_at(const gnn_aggr_registry_t *r, int i);
/* "built-in" or the path of the plug-in that registered def ("?" when def
 * is not in r). */
const char *gnn_aggr_registry_origin(const gnn_aggr_registry_t *r, const gnn_aggr_def_t *def);

#ifdef __cplusplus
}
#endif

#endif
