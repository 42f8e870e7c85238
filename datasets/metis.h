/*
 * Reading METIS graph files (the input format of gpmetis / ndmetis).
 *
 *   % comment lines start with '%' (anywhere in the file)
 *   n m [fmt [ncon]]          header: vertices, undirected edges
 *   [size] [w1 .. wncon] u1 [e1] u2 [e2] ...    line i: vertex i (1-based)
 *
 * fmt is up to three digits, each 0 or 1 (leading zeros allowed: "001",
 * "11"): 1xx vertex sizes, x1x vertex weights (ncon per vertex, default 1),
 * xx1 edge weights after each neighbour. Line i lists the neighbours of
 * vertex i, 1-based; an empty line is a vertex without neighbours. Numbers
 * are integers separated by blanks, as METIS reads them.
 *
 * Everything METIS itself requires is checked, each failure naming
 * FILE:LINE where a line is to blame: neighbours in 1..n, no self loops, no
 * neighbour listed twice, vertex sizes and weights >= 0, edge weights > 0,
 * exactly n vertex lines (blank lines after the last one are allowed, other
 * lines are not), 2m adjacency entries in all, and symmetry: u lists v
 * exactly when v lists u, with the same edge weight. Symmetry is checked
 * while reading: a neighbour after the current vertex leaves a pending
 * entry "u must list v" in a hash set, which u's line removes; the set
 * holds the edges that cross the current line, small for files in a good
 * order (meshes), at most one entry per edge.
 *
 * The result is the undirected graph with both directions of each edge
 * stored (2m entries), edge weights as float32 weights. Vertex sizes and
 * weights are checked but not stored: the graph file has no place for
 * them.
 */
#ifndef GNN_DATASETS_METIS_H
#define GNN_DATASETS_METIS_H

#include "datasets/builder.h"
#include "datasets/textio.h"
#include "graph/csr.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    gnn_vid_t max_nodes; /* refuse a header with more vertices; 0 = no limit */
} gnn_metis_opts_t;

/* The header line. */
typedef struct {
    gnn_vid_t num_nodes;   /* n */
    int64_t num_edges;     /* m, undirected: the file holds 2m adjacency entries */
    int has_vertex_sizes;  /* fmt 1xx */
    int has_vertex_weights;/* fmt x1x */
    int ncon;              /* vertex weights per vertex (0 without them) */
    int has_edge_weights;  /* fmt xx1 */
} gnn_metis_header_t;

/* Builder options for the adjacency, and the CSR flags the checks
 * establish beyond the builder's own (give both to the writer's header). */
#define GNN_METIS_BUILD_OPTIONS GNN_BUILD_SORT
#define GNN_METIS_CSR_FLAGS (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC)

/*
 * Read the header (the first line that is neither a comment nor blank)
 * from t, opened at its start. Returns 0; GNN_EFORMAT naming FILE:LINE (bad
 * or missing counts, bad fmt, ncon without vertex weights, more than n =
 * max_nodes vertices) or FILE for an input without a header; reader errors.
 */
int gnn_metis_read_header(gnn_text_t *t, const gnn_metis_opts_t *o, gnn_metis_header_t *h);

/*
 * Read the n vertex lines after the header into b, opened with num_nodes =
 * n, options GNN_METIS_BUILD_OPTIONS and has_weights = has_edge_weights:
 * each neighbour u of vertex v is the edge u -> v, so row v of the result
 * lists v's neighbours. Checks everything listed above. Returns 0;
 * GNN_EFORMAT with the failure (FILE:LINE: ... or FILE: ...); reader and
 * builder errors; GNN_ENOMEM.
 */
int gnn_metis_read_adjacency(gnn_text_t *t, const gnn_metis_header_t *h, gnn_builder_t *b);

/*
 * Header and adjacency from size bytes at data (plain or gzip; name for
 * messages) into an in-memory CSR with flags set as promised. h may be
 * NULL. For tests and fuzzing. On failure *out is zeroed.
 */
int gnn_metis_read_mem(const void *data, size_t size, const char *name, const gnn_metis_opts_t *o,
                       gnn_csr_t *out, gnn_metis_header_t *h);

#endif
