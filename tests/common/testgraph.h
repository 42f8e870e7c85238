/*
 * Small random graphs for the model tests (include after <cmocka.h>).
 */
#ifndef GNN_TESTS_TESTGRAPH_H
#define GNN_TESTS_TESTGRAPH_H

#include "graph/csr.h"
#include "tests/common/testrng.h"

#include <stdlib.h>

/* *a = a symmetric, deduplicated graph of n >= 2 nodes from m random pairs
 * among nodes 1 .. n-1 (node 0 isolated), without self loops; the pairs
 * drawn from *s, source then destination. */
static inline void tu_random_graph(int64_t n, int64_t m, uint64_t *s, gnn_csr_t *a)
{
    gnn_vid_t *src = malloc((size_t)(m + 1) * sizeof *src);
    gnn_vid_t *dst = malloc((size_t)(m + 1) * sizeof *dst);
    assert_true(src && dst);
    for (int64_t i = 0; i < m; i++) {
        src[i] = 1 + (gnn_vid_t)(tu_rng_next(s) % (uint64_t)(n - 1));
        dst[i] = 1 + (gnn_vid_t)(tu_rng_next(s) % (uint64_t)(n - 1));
    }
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        a),
                     0);
    free(src);
    free(dst);
}

#endif
