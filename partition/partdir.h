/*
 * The partition directory (layout in docs/FORMAT.md): meta.h5 with the
 * ranges of new ids each part owns, the mapping back to the graph file's
 * node ids, how the parts were made and their statistics; part-NNNNN.h5
 * per part with the in-edge CSR over local ids (owned, then the halo hop
 * by hop) of its owned nodes and of its halo nodes short of the last hop,
 * local-to-global ids, where each hop starts, owned features and labels,
 * and local split indices.
 *
 * A directory is written under a temporary name beside its target and
 * renamed into place when whole, so a directory under the final name is
 * always complete. --check reads one back against its graph file.
 */
#ifndef GNN_PARTITION_PARTDIR_H
#define GNN_PARTITION_PARTDIR_H

#include "graph/csr.h"
#include "graph/graph_file.h"

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_PARTDIR_FORMAT "gnn-partition"
#define GNN_PARTDIR_PART_FORMAT "gnn-partition-part"
#define GNN_PARTDIR_VERSION 1
#define GNN_PARTDIR_MAX_HOPS 8 /* halo hops written and read: 1 .. 8 */

/* How the parts were made (recorded in meta.h5). */
typedef struct {
    const char *graph;   /* the graph file (gnn-partition stores its absolute path) */
    const char *method;  /* "metis" | "random" */
    const char *balance; /* "nodes,edges,train" or a subset */
    int ufactor;
    uint64_t seed;
    int halo_hops;       /* 1 .. GNN_PARTDIR_MAX_HOPS */
    int64_t edge_cut;    /* undirected edges between parts */
    int64_t max_metis_edges; /* the largest graph one METIS call was allowed */
    int64_t mem_budget;  /* bytes per rank, 0: none */
    int ranks;           /* MPI ranks that partitioned */
    int coarse_levels;   /* 0: METIS took the graph itself */
    const char *scheme;  /* METIS's scheme that made the parts: "kway" | "rb";
                            NULL or "-": none (random parts, one part) */
} gnn_partdir_meta_t;

/*
 * Write the k parts of g given by part[v] into dir (meta.h5 also takes the
 * graph's held-out edges for link prediction, when it has them, and its
 * directed flag; the MPI writer reads them from the graph file). An existing dir is
 * refused (GNN_EEXISTS) unless force, then replaced only once the new one
 * is whole; meta->halo_hops outside [1, GNN_PARTDIR_MAX_HOPS] is GNN_EINVAL.
 * Returns 0; GNN_EINVAL, GNN_EEXISTS, GNN_EIO, GNN_EHDF5,
 * GNN_ENOMEM with a message naming the path; on failure nothing is left
 * under dir's name that was not there before, and no temporary directory.
 */
int gnn_partdir_write(const char *dir, const gnn_graph_t *g, const int32_t *part, int k,
                      const gnn_partdir_meta_t *meta, int force);

/*
 * Check dir against its graph file (graph: that path, or NULL for the one
 * meta.h5 names): every edge of the graph appears exactly once, as an
 * in-edge of its destination's owner; every halo row holds its node's
 * in-edges; the halo is, hop by hop, exactly the breadth-first search over
 * in-edges from the owned nodes; ranges, ids and statistics are
 * consistent; features, labels and split indices equal the graph's, and
 * so do meta.h5's held-out edges and directed flag.
 * Returns 0, or GNN_EFORMAT naming the file and the first difference
 * (GNN_ENOENT, GNN_EHDF5, GNN_ENOMEM as they come).
 */
int gnn_partdir_check(const char *dir, const char *graph);

/* Print a summary of dir to out: text, or one JSON object with num_parts,
 * num_nodes, num_edges, edge_cut, method, scheme, balance, seed, ufactor,
 * halo_hops and parts (nodes, edges, halo, train, rows, stored_edges and
 * hop_halo, the halo nodes at each hop, each). */
int gnn_partdir_info(const char *dir, int json, FILE *out);

/*
 * What meta.h5 of dir holds for link prediction, as `what` asks
 * (GNN_PARTDIR_LINK_SETS, GNN_PARTDIR_NODE_MAP, or both): the four
 * held-out sets (link[s] n x 2 graph-file ids, gnn_malloc'd, sizes -1 and
 * NULL when the directory has none), negatives per positive, whether the
 * graph is directed (-1: not recorded, an older directory); and node_map
 * (the graph-file index of each partition id, num_nodes entries, checked
 * to be a permutation). Returns 0; GNN_ENOENT, GNN_EFORMAT (an id out of
 * range or repeated, a wrong shape), GNN_EHDF5, GNN_ENOMEM.
 */
#define GNN_PARTDIR_LINK_SETS 1
#define GNN_PARTDIR_NODE_MAP 2
typedef struct {
    int64_t *link[GNN_NUM_LINK_SETS];
    int64_t link_size[GNN_NUM_LINK_SETS];
    int64_t neg_per_pos;
    int directed; /* 1, 0, or -1: not recorded */
    int64_t num_nodes;
    int64_t *node_map;
} gnn_partdir_link_t;
int gnn_partdir_read_link(const char *dir, int what, gnn_partdir_link_t *out);
void gnn_partdir_link_free(gnn_partdir_link_t *l);

/* One part file read back, with what it needs from meta.h5. */
typedef struct {
    int part, num_parts, halo_hops;
    int64_t num_nodes;        /* of the whole graph */
    int64_t n_owned, n_rows, n_local, first_id;
    int64_t *hop_start;       /* halo_hops + 1 */
    int64_t *part_start;      /* num_parts + 1: new-id range of each part */
    gnn_csr_t csr;            /* n_rows x n_local over local ids (weights when stored) */
    int64_t *local_to_global; /* n_local new ids */
    int64_t *orig_id;         /* n_local graph-file ids (meta.h5 node_map) */
    int64_t feat_dim;         /* 0: no features */
    float *feat;              /* n_owned x feat_dim, or NULL */
    int64_t num_classes;
    int64_t *label;           /* n_owned, or NULL */
    int64_t *split[3];        /* local ids of the owned nodes in train, valid, test; NULL: absent */
    int64_t split_n[3];
    gnn_graph_types_t *types; /* a typed graph's types (meta.h5; offsets by graph-file id),
                                 or NULL */
    int32_t *etype;           /* csr.nnz: the relation of each entry (typed), or NULL */
} gnn_part_file_t;

/*
 * Read part p of dir, checked: format and version, its counts against
 * meta.h5, the CSR's structure, local ids, labels and split indices in
 * range, the owned nodes' ids equal to their range. Returns 0; GNN_ENOENT,
 * GNN_EFORMAT naming the file and what is wrong, GNN_EVERSION, GNN_EHDF5,
 * GNN_ENOMEM. *out is zeroed on failure.
 */
int gnn_partdir_read_part(const char *dir, int p, gnn_part_file_t *out);
void gnn_part_file_free(gnn_part_file_t *pf);

#ifdef __cplusplus
}
#endif

#endif
