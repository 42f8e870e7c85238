/*
 * ideal_parts: the partition of a generated SBM graph by its planted
 * blocks, as a partition directory gnn-train reads.
 *
 * The SBM generator joins a fraction (the homophily) of each node's edges
 * to nodes of its own class and the rest to nodes anywhere, so the class
 * is the block, and no partition can cut fewer edges than one that keeps
 * whole classes together. This writes that partition: nodes ordered by
 * (class, id) and cut into K runs of equal size (a class is split only
 * where K does not divide the classes evenly, as a balanced partitioner
 * must). The distributed benchmark trains on it beside METIS's and random
 * parts, to show how far METIS is from the best any partitioner could do
 * on that graph.
 *
 * Usage: ideal_parts GRAPH.h5 K HALO_HOPS OUT_DIR
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/partdir.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

static const int64_t *g_label;

static int by_class(const void *a, const void *b)
{
    int64_t u = *(const int64_t *)a, v = *(const int64_t *)b;
    if (g_label[u] != g_label[v]) return g_label[u] < g_label[v] ? -1 : 1;
    return (u > v) - (u < v);
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: ideal_parts GRAPH.h5 K HALO_HOPS OUT_DIR\n");
        return 2;
    }
    int rc = 0;
    gnn_graph_t g;
    gnn_graph_init(&g);
    gnn_csr_t sym = {0};
    int64_t *order = NULL;
    int32_t *part = NULL;
    long k = strtol(argv[2], NULL, 10), hops = strtol(argv[3], NULL, 10);
    GNN_CHECK(k >= 1 && k <= INT_MAX && hops >= 1, GNN_EINVAL, "bad K %s or hops %s", argv[2],
              argv[3]);
    GNN_TRY(gnn_graph_load(argv[1], &g));
    gnn_vid_t n = g.csr.n_rows;
    GNN_CHECK(g.label, GNN_EINVAL, "%s has no labels (the planted blocks)", argv[1]);
    order = gnn_malloc_array((size_t)n + 1, sizeof *order);
    part = gnn_malloc_array((size_t)n + 1, sizeof *part);
    GNN_CHECK(order && part, GNN_ENOMEM, "%" GNN_PRIvid " nodes", n);
    for (gnn_vid_t v = 0; v < n; v++) order[v] = v;
    g_label = g.label;
    qsort(order, (size_t)n, sizeof *order, by_class);
    for (gnn_vid_t i = 0; i < n; i++) part[order[i]] = (int32_t)(i * k / n);
    GNN_TRY(gnn_part_undirected(&g.csr, &sym));
    int64_t cut = gnn_part_edge_cut(&sym, part);
    gnn_partdir_meta_t meta = {
        .graph = argv[1],
        .method = "planted blocks",
        .balance = "nodes",
        .ufactor = 1,
        .seed = 0,
        .halo_hops = (int)hops,
        .edge_cut = cut,
        .max_metis_edges = 0,
        .mem_budget = 0,
        .ranks = 1,
        .coarse_levels = 0,
    };
    GNN_TRY(gnn_partdir_write(argv[4], &g, part, (int)k, &meta, 1));
    printf("%" PRId64 "\n", cut);
fail:
    if (rc < 0) gnn_error_print(stderr, "ideal_parts", 0);
    gnn_csr_free(&sym);
    gnn_free(order);
    gnn_free(part);
    gnn_graph_free(&g);
    return rc < 0 ? 1 : 0;
}
