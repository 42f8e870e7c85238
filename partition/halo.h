/*
 * From an assignment of nodes to parts to what each part holds:
 * relabelling so that part p owns the contiguous range of new ids
 * [start[p], start[p+1]) (nodes of a part keep their relative order), and
 * the local graph of one part with H hops of halo.
 *
 * Local ids: the owned nodes first (local i = new id start[p] + i), then
 * the halo by hop distance: hop 1 is the set of sources of the owned
 * nodes' in-edges owned elsewhere, hop h the sources of the hop-(h-1)
 * nodes' in-edges not already local; each hop in ascending new id. The
 * local graph has rows for the owned nodes and the halo of hops 1 .. H-1,
 * each row holding all the node's in-edges over local ids (all sources of
 * those rows are local by construction), so an H-layer sampler can run on
 * the part alone. With H = 1 the rows are the owned nodes only. Every edge
 * of the graph is an owned row's in-edge in exactly one part: its
 * destination's.
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
    const int32_t *part;   /* num_nodes: the caller's array, borrowed */
    uint32_t *rank;        /* num_nodes: each node's position in its part */
    gnn_vid_t *old_of_new; /* num_nodes, or NULL when relabelled without it */
} gnn_part_map_t;

/* The new id of old id v. */
static inline gnn_vid_t gnn_part_new_id(const gnn_part_map_t *m, gnn_vid_t v)
{
    return m->start[m->part[v]] + (gnn_vid_t)m->rank[v];
}

/*
 * The relabelling of n nodes with part[v] in [0, k); part must outlive m.
 * With with_old, m->old_of_new is filled too (8 more bytes per node);
 * without, the map costs 4 bytes per node beyond part. Returns 0;
 * GNN_EINVAL for k < 1, n < 0 or a part outside [0, k) (the node is
 * named); GNN_ERANGE for a part of 2^32 nodes or more; GNN_ENOMEM. On
 * failure *m is zeroed.
 */
int gnn_part_relabel(const int32_t *part, gnn_vid_t n, int k, int with_old, gnn_part_map_t *m);
void gnn_part_map_free(gnn_part_map_t *m);

typedef struct {
    int part;
    int hops;                   /* H */
    gnn_vid_t n_owned;          /* = start[p+1] - start[p] */
    gnn_vid_t n_rows;           /* owned + halo of hops 1 .. H-1 (= hop_start[H-1]) */
    gnn_vid_t n_local;          /* owned + halo of hops 1 .. H (= hop_start[H]) */
    gnn_vid_t *hop_start;       /* H + 1: hop h is local ids [hop_start[h-1], hop_start[h]) */
    gnn_csr_t csr;              /* n_rows x n_local, rows sorted by local id */
    gnn_vid_t *local_to_global; /* n_local new ids: start[p] .. start[p+1]-1, then halo */
    gnn_vid_t *old_ids;         /* n_local: the same nodes' old ids */
} gnn_part_local_t;

/* The in-edge rows a local graph is made from, over old ids. */
typedef struct {
    const gnn_csr_t *g;   /* the whole graph (ids NULL: square, row v is node v), or some rows */
    const gnn_vid_t *ids; /* NULL, or g->n_rows ascending old ids: row i is node ids[i] */
    gnn_vid_t *mark;      /* NULL, or scratch of the graph's node count, all -1 */
} gnn_part_rows_t;

/*
 * Part p's local graph with hops >= 1 hops of halo under the map m, from
 * rows: the whole graph, or rows holding at least every row the local
 * graph holds (g->n_cols the graph's nodes). owned lists part p's nodes in
 * ascending old id; NULL takes them from m->old_of_new. Edge weights are
 * carried when g has them. rows->mark, when given, is indexed by old id
 * and is all -1 again when the call returns, failed or not, so one array
 * serves every part; without it the build's memory is proportional to the
 * part and its halo. Returns 0; GNN_EINVAL for rows that do not match the
 * map, p out of range, hops < 1, no owned list, or a row that g lacks (the
 * node is named); GNN_ENOMEM. On failure *out is zeroed.
 */
int gnn_part_local_build(const gnn_part_rows_t *rows, const gnn_part_map_t *m, int p,
                         const gnn_vid_t *owned, int hops, gnn_part_local_t *out);
void gnn_part_local_free(gnn_part_local_t *l);

#ifdef __cplusplus
}
#endif

#endif
