/*
 * The pieces of writing a partition directory that the one-process writer
 * (partdir.c, the graph in memory) and the writer spread over MPI ranks
 * (partdir_mpi.c, the graph read in slices) share: the temporary directory
 * renamed into place when whole, one part file from its content, meta.h5,
 * and the local split indices of every part. Not part of the public
 * interface.
 */
#ifndef GNN_PARTITION_PARTDIR_IMPL_H
#define GNN_PARTITION_PARTDIR_IMPL_H

#include "graph/graph_file.h"
#include "partition/halo.h"
#include "partition/partdir.h"

#include <stdint.h>

/* One part's figures, as meta.h5 records them. */
typedef struct {
    int64_t nodes, edges, halo, train; /* edges: in-edges of the owned nodes */
    int64_t rows, stored;              /* CSR rows and all in-edges stored */
    int64_t hop[GNN_PARTDIR_MAX_HOPS]; /* halo nodes at hops 1 .. H */
} gnn__part_stats_t;

/* A directory being written: tmp beside dir, renamed to dir when whole. */
typedef struct {
    char *dir; /* without trailing slashes */
    char *tmp; /* "<dir>.tmp-<tag>" */
    char *old; /* "<dir>.old-<tag>": an existing dir while it is replaced */
    int exists, made;
    int clean; /* tmp's handle for removal on a signal, 0: none */
} gnn__partdir_tx_t;

/* Refuse an existing dir without force, then create tmp (tag: the writing
 * process's id). On failure nothing is left behind. */
int gnn__partdir_begin(const char *dir, int force, long tag, gnn__partdir_tx_t *tx);
/* Put tmp in dir's place (the old dir, if any, removed once it is). */
int gnn__partdir_commit(gnn__partdir_tx_t *tx);
/* Remove tmp unless committed; free tx. */
void gnn__partdir_end(gnn__partdir_tx_t *tx);
/* tx's names only, for a rank that writes parts into a tmp another made. */
int gnn__partdir_join(const char *tmp, gnn__partdir_tx_t *tx);

/* What one part file holds. */
typedef struct {
    int num_parts;
    gnn_vid_t first_id;            /* new id of local node 0 */
    const gnn_part_local_t *local; /* the local graph with its halo */
    const float *feat;             /* n_owned x feat_dim, or NULL */
    int64_t feat_dim;
    const int64_t *label; /* n_owned, or NULL */
    int64_t num_classes;
    const int32_t *etype; /* local->csr.nnz relations (a typed graph), or NULL */
    int64_t *split_local[GNN_NUM_SPLITS]; /* local ids, NULL: no such split */
    int64_t split_count[GNN_NUM_SPLITS];
} gnn__part_content_t;

/* Write part-NNNNN.h5 of c into tmp; *st gets its figures. */
int gnn__partdir_write_part(const char *tmp, const gnn__part_content_t *c, gnn__part_stats_t *st);

/* Write tmp/meta.h5 for a graph of n nodes and nnz stored edges, directed
 * or not, whose held-out edges (for link prediction) are those of lk
 * (NULL or lk->link[0] NULL: none). */
int gnn__partdir_write_meta(const char *tmp, gnn_vid_t n, gnn_eid_t nnz, const gnn_part_map_t *m,
                            const gnn_partdir_meta_t *meta, const gnn__part_stats_t *st,
                            int directed, const gnn_graph_t *lk);

/* Every part's local split indices, in the order of the graph's splits. */
typedef struct {
    int k;
    int64_t *local[GNN_NUM_SPLITS]; /* NULL: the graph has no such split */
    int64_t *count, *end;           /* k x GNN_NUM_SPLITS */
} gnn__part_splits_t;

/* From the graph's splits (split[s] NULL when absent, size[s] entries).
 * GNN_EFORMAT, naming graph and the node, for a node a split names twice. */
int gnn__part_splits_build(const char *graph, int64_t *const split[GNN_NUM_SPLITS],
                           const int64_t size[GNN_NUM_SPLITS], const int32_t *part,
                           const gnn_part_map_t *m, gnn__part_splits_t *s);
/* Part p's lists into c->split_local and c->split_count. */
void gnn__part_splits_of(const gnn__part_splits_t *s, int p, gnn__part_content_t *c);
void gnn__part_splits_free(gnn__part_splits_t *s);

#endif
