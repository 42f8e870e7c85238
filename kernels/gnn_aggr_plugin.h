/*
 * gnn_aggr_plugin.h: the public interface for aggregation plug-ins.
 *
 * A plug-in is a shared object that adds named neighbour aggregators
 * (`--aggr-plugin FILE.so --aggr NAME`) and, since version 2, attention
 * functions (`--model gat --attention NAME`) to gnn-train. This header is all a
 * plug-in needs: it includes only the C standard headers, and a plug-in
 * links against nothing of this project. Build one with
 *
 *     cc -O2 -fPIC -shared $(pkg-config --cflags gnn-aggr-plugin) my_aggr.c -o my_aggr.so
 *
 * against an installed gnn (from a clone, -I<repo>/kernels), or with CMake:
 * find_package(gnn) and gnn_add_aggr_plugin(my_aggr SOURCES my_aggr.c).
 *
 * A plug-in exports exactly two functions (C linkage, default visibility;
 * GNN_AGGR_PLUGIN_EXPORT below takes care of both):
 *
 *     uint32_t gnn_aggr_plugin_abi(void);
 *         returns GNN_AGGR_ABI_VERSION as the plug-in was compiled;
 *     int gnn_aggr_plugin_register(gnn_aggr_host_t *host);
 *         calls host->add(host, &def) once per aggregator, returns 0, or
 *         non-zero to refuse loading (host->error explains why).
 *
 * The loader refuses, with one error line naming the file, a shared object
 * that cannot be opened, lacks either symbol, reports an ABI version newer
 * than the host's, whose registration fails, or that registers a name
 * already taken (the built-ins sum, mean, gcn, max and gat are taken from
 * the start).
 *
 * An aggregator maps input rows x (n_src x f) to output rows y (n_dst x f)
 * along the in-edge CSR: row v of the CSR lists the sources u of the edges
 * u -> v. Its backward maps dy (n_dst x f) to dx (n_src x f), overwriting
 * dx, and may read x and y of the matching forward and the workspace the
 * forward wrote (an aggregator that needs state between the two, such as
 * the arg-max of max, keeps it there). Entry points return 0 on success;
 * any other value is a failure, reported with the text the entry point
 * wrote into call->msg (if any).
 *
 * CPU entry points receive host pointers and may use OpenMP (they are
 * called from one thread). CUDA entry points receive device pointers (the
 * graph arrays too) and call->stream, a cudaStream_t on which all their
 * work must be queued; they must not synchronise the device. An aggregator
 * may provide either or both; asking for one it lacks is an error.
 *
 * Version 2 adds learnable parameters and attention functions (below,
 * "Version 2"). A definition says which version it was written for in
 * abi_version; the host reads the fields of that version only, so a
 * version 1 plug-in (built against the version 1 header) still loads and
 * runs unchanged. A plug-in reporting a version newer than the host's is
 * refused rather than run.
 *
 * ---- Version 2 -----------------------------------------------------------
 *
 * Learnable parameters. A definition may declare tensors (def->params):
 * each has a name, a shape that may depend on the layer (dims: heads and
 * features per head) and an initialisation. The trainer keeps them with
 * the layer's own parameters: initialised from the run's seed, averaged
 * over ranks, updated by the optimiser, saved in checkpoints. Entry points
 * read them in call->params (the tensors back to back in declared order,
 * row-major, on the entry point's device) and a backward writes their
 * gradients, overwriting, into call->dparams (same layout).
 *
 * Attention functions (kind GNN_AGGR_KIND_ATTENTION, used by `--model gat
 * --attention NAME`) score edges instead of aggregating rows. The host
 * owns the rest of an attention layer: the projection x = D W (n_src x
 * heads*f, head h of row u at u*heads*f + h*f), the softmax of the scores
 * over each destination's in-edges, attention dropout and the weighted
 * sum of the sources' rows, fused so that nothing per edge is wider than
 * the heads. The function receives the scored edges as call->edges:
 * "slots", one per edge and one added self loop per destination, grouped
 * by destination (edges->indptr), with each slot's source and destination,
 * and the same slots grouped by source (edges->t_indptr, edges->t_slot)
 * for gradients gathered without atomics. Its entry points:
 *   score:          s[slot * heads + h] for every slot and head, from x and
 *                   the parameters (any finite value; the host ignores the
 *                   slot of a stored self loop, which the added one
 *                   replaces);
 *   score_backward: from ds (slots x heads, the gradient of the scores),
 *                   ADD the gradient of x into dx (the host has already
 *                   put the gradient through the weighted sum there) and
 *                   write the parameters' gradients into call->dparams.
 * A workspace (def->workspace_bytes2) is shared by a score call and the
 * backward after it, so a function may keep per-node terms between them.
 * The built-in `gat` attention (GAT's a_l . x_u + a_r . x_v through a
 * LeakyReLU) is registered through this same path.
 */
#ifndef GNN_AGGR_PLUGIN_H
#define GNN_AGGR_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_AGGR_ABI_VERSION 2u

/* Longest aggregator name, without the terminating NUL. Names use only
 * [a-z0-9_] and start with a letter. */
#define GNN_AGGR_NAME_MAX 31

#if defined(__GNUC__)
#define GNN_AGGR_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define GNN_AGGR_PLUGIN_EXPORT
#endif

/*
 * The graph as an aggregator sees it. All arrays are on the device of the
 * entry point (host memory for CPU entries, GPU memory for CUDA entries)
 * and read-only. Rows of the transpose are sorted by destination id, so
 * repeated edges are adjacent there; rows of the in-edge CSR keep the
 * order of the graph they came from (graph files written by gnn-dataset
 * have them sorted, but an aggregator must not rely on it).
 */
typedef struct {
    int64_t n_dst;            /* rows of the in-edge CSR (destinations) */
    int64_t n_src;            /* its columns (sources); n_dst <= n_src is not guaranteed
                                 (it is for attention: the backend refuses n_dst > n_src) */
    int64_t nnz;              /* edges */
    const int64_t *indptr;    /* n_dst + 1 offsets */
    const int64_t *indices;   /* nnz source ids */
    const float *weights;     /* nnz edge weights, or NULL (all 1) */
    const int64_t *t_indptr;  /* transpose: n_src + 1 offsets */
    const int64_t *t_indices; /* nnz destination ids */
    const float *t_weights;   /* weights in transpose order, or NULL */
} gnn_aggr_graph_t;

/* Version 2: what an attention function scores (see above). All arrays on
 * the entry point's device, read-only. */
typedef struct {
    int64_t n_dst, n_src;
    int64_t slots;            /* scored edges, self loops included */
    const int64_t *indptr;    /* n_dst + 1: destination v owns slots
                                 [indptr[v], indptr[v + 1]) */
    const int64_t *src;       /* slots: the source row of each slot */
    const int64_t *dst;       /* slots: its destination row */
    const int64_t *t_indptr;  /* n_src + 1: source u's slots are ... */
    const int64_t *t_slot;    /* ... t_slot[t_indptr[u] .. t_indptr[u + 1]) */
} gnn_aggr_edges_t;

/* Version 2: the shape parameters of a layer that parameter shapes and
 * workspace sizes may depend on. */
typedef struct {
    int64_t heads; /* attention heads (1 for an aggregator) */
    int64_t f;     /* features per head (an aggregator: the row width) */
} gnn_aggr_dims_t;

/* Version 2: one learnable tensor. */
#define GNN_AGGR_MAX_PARAMS 8
enum {
    GNN_AGGR_INIT_ZEROS = 0,  /* all 0 */
    GNN_AGGR_INIT_CONST = 1,  /* all `value` */
    GNN_AGGR_INIT_GLOROT = 2  /* uniform in +-sqrt(6 / (rows + cols)) */
};
typedef struct {
    const char *name; /* for messages; [a-z][a-z0-9_]* */
    int64_t rows, cols; /* >= 1 each */
    uint32_t init;    /* GNN_AGGR_INIT_* */
    float value;      /* for GNN_AGGR_INIT_CONST */
} gnn_aggr_param_t;

/* One forward or backward call. */
typedef struct {
    const gnn_aggr_graph_t *graph;
    int64_t f;             /* feature width of x, y, dx, dy (>= 1) */
    void *workspace;       /* workspace_bytes(graph, f) bytes (NULL when 0):
                              the same buffer for a forward and its backward */
    size_t workspace_size;
    void *stream;          /* cudaStream_t for CUDA entries, NULL on CPU */
    void *user;            /* the definition's user pointer */
    char *msg;             /* room for a one-line error message */
    size_t msg_size;
    const void *host_private; /* reserved for the built-ins: ignore */
    /* ---- Version 2 (definitions of abi_version >= 2 only) ---- */
    int64_t heads;            /* attention heads; 1 for an aggregator */
    const float *params;      /* the declared tensors, or NULL without */
    float *dparams;           /* backward: their gradients, or NULL */
    const gnn_aggr_edges_t *edges; /* attention: the scored edges */
    float negative_slope;     /* attention: the layer's --negative-slope */
} gnn_aggr_call_t;

typedef int (*gnn_aggr_forward_fn)(const gnn_aggr_call_t *call, const float *x, float *y);
typedef int (*gnn_aggr_backward_fn)(const gnn_aggr_call_t *call, const float *x, const float *y,
                                    const float *dy, float *dx);
/* Bytes of workspace one forward/backward pair needs on graph g at width f;
 * NULL in a definition means none. Called on the host; g's arrays are on
 * the host, or NULL (the counts alone) for a graph made on the GPU (a
 * mini-batch block sampled there: --sampler device). */
typedef size_t (*gnn_aggr_workspace_fn)(const gnn_aggr_graph_t *g, int64_t f, void *user);

/* Version 2. Parameters: fill out[0 .. n) (n <= max = GNN_AGGR_MAX_PARAMS)
 * for a layer of dims d and return n (0: none), or a negative value when
 * the definition cannot serve those dims. */
typedef int (*gnn_aggr_params_fn)(const gnn_aggr_dims_t *d, gnn_aggr_param_t *out, int max,
                                  void *user);
/* Version 2. Workspace bytes for graph g (host arrays), edges e (NULL for
 * an aggregator; host arrays) and dims d; replaces workspace_bytes when
 * set. For a graph made on the GPU the arrays of g and e are NULL: size
 * the workspace from their counts. */
typedef size_t (*gnn_aggr_workspace2_fn)(const gnn_aggr_graph_t *g, const gnn_aggr_edges_t *e,
                                         const gnn_aggr_dims_t *d, void *user);
/* Version 2, attention: s (slots x heads) from x (n_src x heads * f). */
typedef int (*gnn_aggr_score_fn)(const gnn_aggr_call_t *call, const float *x, float *s);
/* ... and its backward: dx += d(s)/dx . ds; call->dparams overwritten. */
typedef int (*gnn_aggr_score_backward_fn)(const gnn_aggr_call_t *call, const float *x,
                                          const float *ds, float *dx);

#define GNN_AGGR_KIND_AGGREGATE 0u /* rows -> rows (version 1's only kind) */
#define GNN_AGGR_KIND_ATTENTION 1u /* edge scores for --model gat */

/* One aggregator. The host copies the structure and the strings. */
typedef struct {
    uint32_t abi_version;           /* GNN_AGGR_ABI_VERSION */
    const char *name;               /* unique, see GNN_AGGR_NAME_MAX */
    const char *description;        /* one line, for --help listings */
    gnn_aggr_workspace_fn workspace_bytes;
    gnn_aggr_forward_fn cpu_forward;   /* NULL when CPU is not supported */
    gnn_aggr_backward_fn cpu_backward; /* required with cpu_forward */
    gnn_aggr_forward_fn cuda_forward;  /* NULL when CUDA is not supported */
    gnn_aggr_backward_fn cuda_backward;
    void *user;                     /* passed back in every call */
    /* ---- Version 2 (read only when abi_version >= 2) ---- */
    uint32_t kind;                  /* GNN_AGGR_KIND_* */
    gnn_aggr_params_fn params;      /* learnable tensors, or NULL for none */
    gnn_aggr_workspace2_fn workspace_bytes2; /* or NULL */
    /* Attention entry points (kind GNN_AGGR_KIND_ATTENTION only, which
     * leaves the four forward/backward pointers above NULL). */
    gnn_aggr_score_fn cpu_score;
    gnn_aggr_score_backward_fn cpu_score_backward;
    gnn_aggr_score_fn cuda_score;
    gnn_aggr_score_backward_fn cuda_score_backward;
} gnn_aggr_def_t;

/* What the host hands to gnn_aggr_plugin_register. */
typedef struct gnn_aggr_host {
    uint32_t abi_version; /* the host's GNN_AGGR_ABI_VERSION */
    /* Register one aggregator: 0, or non-zero for a bad or duplicate
     * definition (the host records the reason). */
    int (*add)(struct gnn_aggr_host *host, const gnn_aggr_def_t *def);
    /* Record why registration fails, for the loader's error line. */
    void (*error)(struct gnn_aggr_host *host, const char *msg);
    void *host_data; /* the host's own: do not touch */
} gnn_aggr_host_t;

/* The two symbols a plug-in defines. */
GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void);
GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host);

#ifdef __cplusplus
}
#endif

#endif
