/*
 * Graphs built in memory by tests: the node data arrays of a graph, and a
 * directed graph from edges with room for them.
 */
#ifndef GNN_TESTS_GRAPHTEST_H
#define GNN_TESTS_GRAPHTEST_H

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"

/* Room in g for n nodes' features (f each), labels of `classes` classes
 * and the three splits, each split empty. Returns 0 or GNN_ENOMEM (what
 * was allocated stays in g, for gnn_graph_free). */
static inline int tu_graph_node_data(gnn_graph_t *g, int64_t n, int64_t f, int64_t classes)
{
    g->feat_dim = f;
    g->feat = gnn_malloc_array((size_t)(n * f), sizeof *g->feat);
    g->label = gnn_malloc_array((size_t)n, sizeof *g->label);
    g->num_classes = classes;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        g->split[s] = gnn_malloc_array((size_t)n, sizeof *g->split[s]);
        g->split_size[s] = 0;
    }
    return g->feat && g->label && g->split[0] && g->split[1] && g->split[2] ? 0 : GNN_ENOMEM;
}

/* g: a directed graph of n nodes from the m edges src -> dst (weights w
 * or NULL; repeats merged, rows sorted) with room for node data as
 * tu_graph_node_data makes it. Returns 0 or the first failure's code
 * (what was made stays in g, for gnn_graph_free). */
static inline int tu_graph_directed(gnn_graph_t *g, int64_t n, int64_t m, const gnn_vid_t *src,
                                    const gnn_vid_t *dst, const float *w, int64_t f,
                                    int64_t classes)
{
    gnn_graph_init(g);
    g->directed = 1;
    int rc = gnn_csr_from_edges(n, m, src, dst, w, GNN_BUILD_DEDUPE | GNN_BUILD_SORT, &g->csr);
    return rc == 0 ? tu_graph_node_data(g, n, f, classes) : rc;
}

#endif
