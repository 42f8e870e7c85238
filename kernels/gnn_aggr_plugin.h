/*
 * gnn_aggr_plugin.h: the public interface for aggregation plug-ins.
 *
 * A plug-in is a shared object that adds named neighbour aggregators to
 * gnn-train (`--aggr-plugin FILE.so --aggr NAME`). This header is all a
 * plug-in needs: it includes only the C standard headers, and a plug-in
 * links against nothing of this project. Build one with
 *
 *     cc -O2 -fPIC -shared -I<repo>/kernels my_aggr.c -o my_aggr.so
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
 * that cannot be opened, lacks either symbol, reports another ABI version,
 * whose registration fails, or that registers a name already taken (the
 * built-ins sum, mean, gcn and max are taken from the start).
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
 * Versioning: GNN_AGGR_ABI_VERSION changes whenever a structure here
 * changes layout or meaning; a plug-in built against another version is
 * refused rather than run.
 */
#ifndef GNN_AGGR_PLUGIN_H
#define GNN_AGGR_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_AGGR_ABI_VERSION 1u

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
    int64_t n_src;            /* its columns (sources); n_dst <= n_src is not guaranteed */
    int64_t nnz;              /* edges */
    const int64_t *indptr;    /* n_dst + 1 offsets */
    const int64_t *indices;   /* nnz source ids */
    const float *weights;     /* nnz edge weights, or NULL (all 1) */
    const int64_t *t_indptr;  /* transpose: n_src + 1 offsets */
    const int64_t *t_indices; /* nnz destination ids */
    const float *t_weights;   /* weights in transpose order, or NULL */
} gnn_aggr_graph_t;

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
} gnn_aggr_call_t;

typedef int (*gnn_aggr_forward_fn)(const gnn_aggr_call_t *call, const float *x, float *y);
typedef int (*gnn_aggr_backward_fn)(const gnn_aggr_call_t *call, const float *x, const float *y,
                                    const float *dy, float *dx);
/* Bytes of workspace one forward/backward pair needs on graph g at width f;
 * NULL in a definition means none. Called on the host; g's arrays are on
 * the host. */
typedef size_t (*gnn_aggr_workspace_fn)(const gnn_aggr_graph_t *g, int64_t f, void *user);

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
