/*
 * k-way Fiduccia-Mattheyses refinement of one rank's nodes.
 *
 * A pass moves, one at a time, the movable node whose best move gains the
 * most edge weight, even when that gain is negative, and locks it for the
 * rest of the pass; its neighbours' gains are then brought up to date. At the end
 * the pass rolls back to the prefix of moves with the highest total gain,
 * so it never loses cut. Greedy label propagation stops at the first local
 * minimum; a run of losing moves climbs out of it, e.g. a small cluster
 * that only pays once all of its nodes cross a boundary.
 *
 * The graph is one rank's slice of a distributed graph: nodes [0, n) may
 * move, adjacency entries j >= n are other ranks' nodes (ghosts) whose
 * parts stay fixed. Balance is kept by a room per part and constraint: the
 * weight the pass may still add there. A move out of a part returns its
 * weights to that part's room, so every prefix of a pass, and the state
 * it rolls back to, keeps every room >= 0.
 *
 * Bounds: nodes of more than 8 times the mean degree (at least 32) are
 * neither moved nor recomputed (hubs: recomputing one costs its degree, on
 * every move of a neighbour). A pass stops after max(50, min(n/100, 2000))
 * moves without a new best or once it has scanned 4 times the slice's
 * adjacency entries, so it costs a few label propagation rounds.
 */
#ifndef GNN_PARTITION_FM_H
#define GNN_PARTITION_FM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int64_t n;                 /* movable nodes [0, n) */
    int k, ncon;               /* parts, constraints */
    const int64_t *xadj;       /* n + 1 */
    const int64_t *adj;        /* < n: a movable node; >= n: fixed node adj - n */
    const int64_t *adjw;       /* edge weights; NULL: every weight is 1 */
    const int64_t *vwgt;       /* n x ncon */
    int64_t *part;             /* n, in [0, k): updated */
    const int64_t *fixed_part; /* part of fixed node g, in [0, k) */
    int64_t *room;             /* k x ncon: weight a part may still take; updated */
    int64_t *pw;               /* k x ncon: part weights (NULL: not kept); updated */
} gnn_fm_graph_t;

typedef struct gnn_fm gnn_fm_t;

/* Work space for passes over graphs of up to n nodes and k parts
 * (52 bytes per node). Returns 0, or GNN_ENOMEM with *out NULL. */
int gnn_fm_create(int64_t n, int k, gnn_fm_t **out);
void gnn_fm_free(gnn_fm_t *w);

/*
 * One pass over g (g->n and g->k within what w was made for). The moves
 * kept are applied to g->part, g->room and g->pw; returns their total gain
 * (>= 0; the cut, counted with the fixed nodes' parts, falls by exactly
 * that). salt breaks ties between equal gains.
 */
int64_t gnn_fm_pass(gnn_fm_t *w, const gnn_fm_graph_t *g, uint64_t salt);

/* Moves the last pass kept. */
int64_t gnn_fm_moves(const gnn_fm_t *w);

/* Undoes the moves the last pass kept (g as given to it), e.g. when
 * passes on other ranks, which saw this rank's old parts, made the global
 * cut worse. */
void gnn_fm_undo(gnn_fm_t *w, const gnn_fm_graph_t *g);

#ifdef __cplusplus
}
#endif

#endif
