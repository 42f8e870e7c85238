/*
 * Partitioning past one METIS call, across the ranks of an MPI
 * communicator (one rank works too).
 *
 * Each rank reads one slice of the graph file (a contiguous range of
 * destination rows holding about 1/R of the stored edges) and builds the
 * undirected, deduplicated, self-loop-free rows of the nodes it owns: an
 * edge u -> v adds u to v's row here and v to u's row at u's owner. While
 * the adjacency is larger than one METIS call may take, the graph is
 * coarsened: each rank clusters its own nodes by size-constrained label
 * propagation (a node joins the cluster of the neighbours it is most
 * connected to, unless that would make the cluster heavier than a cap) and
 * contracts the clusters into weighted coarse nodes. The coarsest graph is
 * gathered on rank 0 and cut by METIS k-way with the summed vertex weights
 * and edge weights. Parts are then projected back level by level and
 * refined on each level by balanced label propagation: a node moves to the
 * part it has more edges to when no part grows past the allowed imbalance.
 *
 * Memory per rank, with S the undirected adjacency entries (at most twice
 * the stored edges), n the nodes and c the constraints: 8 S/R + (24 + 8c)
 * n/R bytes for the slice, up to 16 bytes per entry for the ghost plan,
 * two coarse levels at a time of up to 16 S/R + (24 + 8c) n/R each, and
 * on rank 0 the METIS call (GNN_MLPART_METIS_BYTES per entry of the
 * coarsest graph). docs/PARTITION.md has the model and what it means for
 * large graphs.
 */
#ifndef GNN_PARTITION_MLPART_H
#define GNN_PARTITION_MLPART_H

#include <mpi.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes per adjacency entry of the coarsest graph on rank 0: the gathered
 * entries and weights (16), their 32-bit copies for METIS (8) and METIS's
 * own work space (about 35 for Debian's METIS 5.1 k-way, measured with
 * gpmetis on weighted graphs), rounded up. */
#define GNN_MLPART_METIS_BYTES 64

#define GNN_MLPART_MAX_LEVELS 32

typedef struct {
    int k;
    int balance_nodes, balance_edges, balance_train; /* vertex weights, in this order */
    int ufactor;              /* allowed imbalance in 1/1000 */
    uint64_t seed;
    int64_t max_metis_edges;  /* adjacency entries one METIS call may take */
    int64_t mem_budget;       /* bytes per rank; 0: no budget */
    int refine_rounds;        /* label propagation rounds per level (0: default 8) */
    int scheme;               /* METIS's scheme on the coarsest graph (gnn_part_scheme_t) */
} gnn_mlpart_opts_t;

typedef struct {
    int64_t nodes, entries; /* global, per level (0 = the graph itself) */
    int64_t cut;            /* after refinement on this level (weighted) */
    int64_t moves;          /* nodes moved by refinement on this level */
} gnn_mlpart_level_t;

typedef struct {
    int levels;             /* coarse levels built (0: METIS took the graph itself) */
    gnn_mlpart_level_t level[GNN_MLPART_MAX_LEVELS + 1];
    int64_t metis_cut;      /* METIS's cut on the coarsest graph */
    int metis_scheme;       /* the scheme that made it (GNN_PART_KWAY or _RB; -1: k = 1) */
    int64_t edge_cut;       /* undirected edges between parts, final */
    int64_t target_entries; /* the entries METIS was meant to get at most (see above) */
    int64_t est_rank_bytes; /* planned peak per rank (the memory model) */
    double phase_s[4];      /* build, coarsen, metis, refine */
    int64_t phase_rss[4];   /* peak RSS over ranks after each phase, bytes */
} gnn_mlpart_stats_t;

/*
 * Partition the graph file at path into o->k parts. Collective over comm:
 * every rank calls it with the same arguments. On rank 0, *part (allocated
 * here, released with gnn_free) holds the part of each node; other ranks
 * get NULL. st (may be NULL) is filled on every rank. Returns 0 on every
 * rank, or the same negative GNN_E* code on every rank (the rank that
 * failed holds the message; the others say which rank failed): GNN_EINVAL
 * for k outside [1, n] or a bad option, GNN_ENOMEM also when the budget
 * cannot hold this rank's slice (the message says how much it needs),
 * GNN_ERANGE when coarsening cannot bring the graph under one 32-bit METIS
 * call (2^31 - 1 entries), file errors as gnn_graph_open reports them,
 * GNN_EMETIS, GNN_EMPI. Coarsening stops at about 16 k nodes, or when a
 * level no longer shrinks: METIS may then get a graph above
 * o->max_metis_edges (a warning says so; level[levels].entries tells).
 */
int gnn_mlpart_run(MPI_Comm comm, const char *path, const gnn_mlpart_opts_t *o, int32_t **part,
                   gnn_mlpart_stats_t *st);

/* Peak resident set size of this process so far, and now, in bytes. */
int64_t gnn_mlpart_peak_rss(void);
int64_t gnn_mlpart_rss(void);
/* Start the peak over from the present size (Linux's /proc/self/
 * clear_refs, after returning freed heap memory to the system), so that a
 * phase can report its own. Returns 0, or -1 where the system does not
 * allow it (the peak then stays the run's). */
int gnn_mlpart_reset_peak_rss(void);

#ifdef __cplusplus
}
#endif

#endif
