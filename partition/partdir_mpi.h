/*
 * Writing a partition directory across the ranks of an MPI job, without
 * any rank holding the graph: the same files, byte for byte in content,
 * as gnn_partdir_write (partdir.h) writes from a graph in memory.
 *
 * Rank r reads one slice of the graph file (contiguous rows holding about
 * 1/R of its nodes plus stored edges) and writes parts r, r + R, r + 2R...
 * A writer asks the ranks whose slices hold them for the lengths, then the
 * in-edge rows, of its parts' owned nodes, then for their features and
 * labels, then for the rows (lengths first) of each halo hop short of the
 * last; each reader walks its
 * slice in chunks of a bounded size and answers every request that falls
 * in the chunk, one round per chunk. Rank 0 creates the temporary
 * directory, writes meta.h5 once every part is whole, and renames it.
 *
 * Memory per rank: 8 bytes per node of the whole graph (the part array
 * and each node's position in its part), the file's offsets of the rank's
 * own slice (8 bytes per row), the split indices (8 bytes per entry), a
 * chunk and its packed answers (one chunk more when every row is asked
 * for once, as with one hop of halo; up to one per asking rank for halo
 * rows many parts hold), and the parts written at the same time: their
 * rows (12 bytes per stored in-edge with weights, 8 without) held twice
 * (fetched, and as the local graph), 8 x feature width + 72 bytes per
 * owned node, and up to 80 bytes per halo node (its ids and an id map
 * entry); a reader also holds the ids asked of its slice (8 bytes per row
 * asked). Under a
 * budget a rank writes its parts in groups that fit it, one group at a
 * time. A part is planned at its owned nodes' rows and data; each group
 * then measures what it took (halo rows and nodes included) over its plan,
 * and the next groups are planned at the largest such ratio seen. With
 * more than one hop of halo, whose rows the plan cannot know, the first
 * group is one part.
 */
#ifndef GNN_PARTITION_PARTDIR_MPI_H
#define GNN_PARTITION_PARTDIR_MPI_H

#include "partition/partdir.h"

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int force;           /* replace an existing dir */
    int64_t mem_budget;  /* bytes per rank; 0: every rank's parts at once */
    int64_t chunk_bytes; /* what a reader handles per round; 0: 64 MiB (less under a budget) */
} gnn_partdir_mpi_opts_t;

/* Bytes per node of the whole graph every rank holds while writing. */
#define GNN_PARTDIR_MPI_NODE_BYTES 8

/*
 * Write the k parts given by part[v] (the same array on every rank) of
 * the graph file graph into dir. Collective over comm. Returns 0 on every
 * rank, or the same negative code on every rank (the failing rank holds
 * the message, the others name it): as gnn_partdir_write, and file errors
 * as gnn_graph_open and its readers report them, GNN_EMPI. On failure no
 * temporary directory is left and dir is as it was.
 */
int gnn_partdir_write_mpi(MPI_Comm comm, const char *dir, const char *graph, const int32_t *part,
                          int k, const gnn_partdir_meta_t *meta, const gnn_partdir_mpi_opts_t *o);

#ifdef __cplusplus
}
#endif

#endif
