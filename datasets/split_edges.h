/*
 * Link-prediction edge splits (gnn-dataset split-edges): hold out a random
 * share of a graph file's edges for validation and test, each with K fixed
 * negatives per positive, and write the graph without them plus the four
 * link sets (graph_file.h, docs/FORMAT.md) as a new graph file.
 *
 * The result depends only on the input file and the options: every random
 * number comes from the counter-based generator of graph/base/rng.h, keyed
 * by the seed and a purpose (the hold-out shuffle; the negatives of each
 * set, one stream per negative), never on threads or memory.
 */
#ifndef GNN_DATASETS_SPLIT_EDGES_H
#define GNN_DATASETS_SPLIT_EDGES_H

#include "datasets/convert.h"
#include "graph/base/types.h"

#include <stdint.h>

typedef struct {
    double valid;        /* share of the candidate edges held out for validation, in (0, 1) */
    double test;         /* ... for test, in (0, 1); valid + test < 1 */
    int64_t neg_per_pos; /* K negatives per held-out positive, >= 1 */
    int64_t seed;
} gnn_split_edges_opts_t;

/* What a split did, for the command's closing line and for tests. */
typedef struct {
    gnn_eid_t candidates; /* distinct edges that could be held out (m) */
    int64_t n_valid;      /* positives held out for validation */
    int64_t n_test;       /* ... for test */
    gnn_eid_t edges_in;   /* stored CSR entries before */
    gnn_eid_t edges_out;  /* ... and after the split */
    int undirected;       /* split as undirected: flagged so, or every edge stored both ways */
} gnn_split_edges_stats_t;

/* The defaults: 5 % valid, 10 % test, 1 negative per positive, seed 1. */
void gnn_split_edges_defaults(gnn_split_edges_opts_t *o);

/* 0, or GNN_EUSAGE with a message naming the bad option. */
int gnn_split_edges_check(const gnn_split_edges_opts_t *o);

/*
 * Split the edges of graph file in_path into out->path (checked with
 * gnn_output_check first; --mem-budget and --tmpdir are not used).
 *
 * Candidates are the distinct edges u -> v, u != v, of the stored CSR; for
 * an undirected graph (directed = 0) each unordered pair once, as
 * (min, max). round(valid * m) and round(test * m) of the m candidates, at
 * least one each, are drawn without replacement and removed from the CSR
 * (every copy, and both directions for an undirected graph); at least one
 * candidate must stay. Each held-out (u, v) gets K negatives (u, w): w
 * uniform over the nodes other than u with no edge u -> w in the input.
 * Everything else (features, labels, original ids, splits, node data, the
 * weights of kept edges) is copied unchanged; the CSR flags stay those of
 * the input, less "symmetric" for a directed graph.
 *
 * Returns 0 (stats filled when not NULL); GNN_EUSAGE for bad options,
 * output check errors, the input's open errors, GNN_EINVAL for a graph that
 * already has link sets, too few candidates, or a node with no
 * non-neighbour to draw negatives from; GNN_ENOMEM, GNN_EHDF5, GNN_EIO. On
 * failure no file is left at out->path (an existing file replaced with
 * --force is kept).
 */
int gnn_split_edges(const char *in_path, const gnn_split_edges_opts_t *o,
                    const gnn_output_opts_t *out, gnn_split_edges_stats_t *stats);

#endif
