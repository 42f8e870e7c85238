/*
 * Typed graphs in memory (format version 2): the in-edge CSR of a list of
 * typed edges, for the importers and generators of heterogeneous graphs
 * (OGB's ogbn-mag layout, the hsbm generator).
 */
#ifndef GNN_DATASETS_TYPED_H
#define GNN_DATASETS_TYPED_H

#include "graph/csr.h"

#include <stdint.h>

/*
 * The in-edge CSR of n nodes from the m edges src[i] -> dst[i] of relation
 * rel[i]: each row sorted by (source, relation), an edge repeated with the
 * same relation kept once, self loops dropped when drop_loops is set.
 * out's flags: SORTED, plus DEDUPED when no row holds a source twice (two
 * relations between one pair do) and NO_SELF_LOOPS when none is left.
 * *etype (gnn_malloc'd, out->nnz entries) is the relation of each stored
 * edge. *dropped counts the repeats and loops left out. The three input
 * arrays are consumed (freed, set to NULL) to keep the peak low. 0,
 * GNN_EINVAL (an id outside [0, n)), GNN_ENOMEM.
 */
int gnn_typed_csr_build(gnn_vid_t n, int64_t m, gnn_vid_t **src, gnn_vid_t **dst, int32_t **rel,
                        int drop_loops, gnn_csr_t *out, int32_t **etype, int64_t *dropped);

#endif
