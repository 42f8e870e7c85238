/*
 * Assigning nodes to parts: the undirected view METIS needs, METIS k-way
 * with multi-constraint vertex weights, a random baseline, and the edge cut.
 *
 * METIS partitions an undirected graph given as a symmetric adjacency
 * without self loops or repeated entries; Debian's METIS 5.1 does not check
 * any of this (an asymmetric input corrupts its memory) and crashes when
 * asked for one part. So the view is always built here, whatever the graph
 * file promises, and one part never reaches METIS. Its idx_t is 32-bit:
 * one call takes at most 2^31 - 1 adjacency entries and nodes.
 */
#ifndef GNN_PARTITION_KWAY_H
#define GNN_PARTITION_KWAY_H

#include "graph/csr.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_PART_MAX_CON 8 /* vertex weights per node */

/*
 * The undirected view of the square CSR g: u - v for every stored entry
 * u -> v or v -> u with u != v, each pair once in both rows, rows sorted,
 * no weights; flags SORTED | DEDUPED | NO_SELF_LOOPS | SYMMETRIC. Built
 * even when g claims to be symmetric (the claim is not trusted). Returns 0;
 * GNN_EINVAL for a non-square CSR; GNN_ENOMEM. *out is zeroed on failure.
 */
int gnn_part_undirected(const gnn_csr_t *g, gnn_csr_t *out);

/* How METIS cuts: its k-way scheme (gpmetis -ptype=kway), recursive
 * bisection (-ptype=rb), or both with the lower edge cut kept. Neither
 * wins everywhere: on a graph of 10 planted communities cut into 4 parts,
 * recursive bisection cut 16 % fewer edges than k-way. */
typedef enum {
    GNN_PART_KWAY = 0,
    GNN_PART_RB = 1,
    GNN_PART_BEST = 2, /* both; the lower (weighted) cut, k-way on a tie */
} gnn_part_scheme_t;

/* "kway", "rb", "best"; "-" for anything else. */
const char *gnn_part_scheme_name(int scheme);
/* The scheme a name spells, or -1. */
int gnn_part_scheme_from_name(const char *name);

typedef struct {
    int ncon;              /* vertex weights per node, 0 (unit weights) .. GNN_PART_MAX_CON */
    const int64_t *vwgt;   /* n x ncon, each >= 0, or NULL when ncon is 0 */
    const int64_t *adjwgt; /* sym->nnz edge weights, each >= 1 and equal in both
                              directions, or NULL (unit weights) */
    int ufactor;           /* allowed imbalance in 1/1000 (METIS -ufactor; 30 = 3 %) */
    uint64_t seed;
    int scheme;            /* gnn_part_scheme_t; 0 is k-way */
} gnn_part_opts_t;

/*
 * METIS on sym (an undirected view from gnn_part_undirected) by o->scheme:
 * part[v] in [0, k) for each node, *edge_cut the undirected edges between
 * parts as METIS counts them (recomputed, not taken from METIS; the sum of
 * their weights when o->adjwgt is given), *used (may be NULL) the scheme
 * whose parts these are (GNN_PART_KWAY or GNN_PART_RB; -1 for k = 1). k = 1
 * puts every node in part 0 without calling METIS. Returns 0; GNN_EINVAL
 * for k < 1, k above the node count, an asymmetric or looped sym, a bad
 * weight or option (message names it); GNN_ERANGE when the graph is beyond
 * one 32-bit METIS call (nodes or adjacency entries above 2^31 - 1, or a
 * weight sum above it); GNN_ENOMEM; GNN_EMETIS for METIS's own failure.
 */
int gnn_part_metis(const gnn_csr_t *sym, int k, const gnn_part_opts_t *o, int32_t *part,
                   int64_t *edge_cut, int *used);

/*
 * A balanced random assignment of n nodes to k parts (a seeded
 * permutation dealt round robin: part sizes differ by at most one).
 * Returns 0; GNN_EINVAL for k < 1 or k > n (n > 0).
 */
int gnn_part_random(int64_t n, int k, uint64_t seed, int32_t *part);

/* Undirected edges of sym whose ends lie in different parts. */
int64_t gnn_part_edge_cut(const gnn_csr_t *sym, const int32_t *part);

#ifdef __cplusplus
}
#endif

#endif
