/*
 * From an assignment of nodes to parts to what each part holds:
 * relabelling so that part p owns the contiguous range of new ids
 * [start[p], start[p+1]) (nodes of a part keep their relative order), and
 * the local graph of one part: the in-edges of its owned nodes over local
 * ids, owned nodes first (local i = new id start[p] + i), then its halo
 * nodes (the sources of those edges owned elsewhere, in ascending new id).
 * Every edge of the graph lands in exactly one part: its destination's.
 */
#ifndef GNN_PARTITION_HALO_H
#define GNN_PARTITION_HALO_H

#include "graph/csr.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int num_parts;
    gnn_vid_t num_nodes;
    gnn_vid_t *start;      /* num_parts + 1 */
    gnn_vid_t *new_of_old; /* num_nodes */
    gnn_vid_t *old_of_new; /* num_nodes */
} gnn_part_map_t;

/*
 * The relabelling of n nodes with part[v] in [0, k). Returns 0; GNN_EINVAL
 * for k < 1, n < 0 or a part outside [0, k) (the node is named); GNN_ENOMEM.
 * On failure *m is zeroed.
 */
int gnn_part_relabel(const int32_t *part, gnn_vid_t n, int k, gnn_part_map_t *m);
void gnn_part_map_free(gnn_part_map_t *m);

typedef struct {
    int part;
    gnn_vid_t n_owned;          /* = start[p+1] - start[p] */
    gnn_vid_t n_local;          /* owned + halo */
    gnn_csr_t csr;              /* n_owned x n_local, rows sorted by local id */
    gnn_vid_t *local_to_global; /* n_local new ids: start[p] .. start[p+1]-1, then halo */
} gnn_part_local_t;

/*
 * Part p's local graph from g, the square in-edge CSR over old ids, and the
 * map m (halo of one hop). Edge weights are carried when g has them.
 * Returns 0; GNN_EINVAL for a graph that does not match the map or p out
 * of range; GNN_ENOMEM. On failure *out is zeroed.
 */
int gnn_part_local_build(const gnn_csr_t *g, const gnn_part_map_t *m, int p, gnn_part_local_t *out);
void gnn_part_local_free(gnn_part_local_t *l);

#ifdef __cplusplus
}
#endif

#endif
