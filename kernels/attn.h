/*
 * Multi-head graph attention over the in-edge CSR (kernels/spmm.h), CPU.
 *
 * An attention layer weighs each in-edge of a destination by a score,
 * normalises the scores over the destination's in-edges with a softmax,
 * and aggregates its sources' rows with those weights, per head. The work
 * is split where a score function may differ (GAT, GATv2, a plug-in's)
 * and fused everywhere else, so that memory per edge is O(heads): no
 * edges x heads x features tensor is ever built.
 *
 * Edge slots. Destination v owns slots [indptr[v] + v, indptr[v+1] + v + 1)
 * when self loops are added (opts.self_loop): its CSR entries in order,
 * then one slot for the self loop v -> v (source row v: the destinations
 * are the first n_dst sources, as in a sampled block). Entries u -> v with
 * u == v stored in the graph are then left out (weight 0), so every node
 * has exactly one self loop, as PyG's GATConv does. Without self loops
 * the slots are the CSR entries, [indptr[v], indptr[v+1]). Per-edge arrays
 * are slots x heads, row-major: (slot, h) at slot * heads + h.
 *
 * Features: x is n_src x (heads * f), head h of row u at u * heads * f +
 * h * f; y is n_dst x (heads * f) likewise.
 *
 * GAT scores (Velickovic et al.): with per-node terms el (n_src x heads,
 * from the source) and er (n_dst x heads, from the destination),
 *   s[slot(u -> v), h] = LeakyReLU(el[u, h] + er[v, h]; negative_slope).
 *
 * Softmax and aggregation: per destination v and head h,
 *   alpha[e, h] = exp(s[e, h] - m) / sum_e' exp(s[e', h] - m),  m = the max
 *   y[v, h, :] = sum_e keep(e, h) * alpha[e, h] / (1 - p) * x[src(e), h, :]
 * where keep(e, h) = gnn_rng_keep(seed, offset + (id(v) * n_ids + id(u)) *
 * heads + h, p) for the edge u -> v of slot e is the attention dropout
 * (p = 0: every edge kept; graph/base/rng.h). id maps a local row to a
 * global node id (opts.ids, n_ids nodes in all; NULL: the rows themselves,
 * n_ids = n_src), so an edge gets the same mask whichever part or batch
 * holds it. A row without slots gives y = 0.
 *
 * Backward passes overwrite their outputs and gather over the transpose
 * (gnn_attn_graph_t maps each transposed entry to its slot), so results
 * are bitwise identical for any thread count.
 */
#ifndef GNN_KERNELS_ATTN_H
#define GNN_KERNELS_ATTN_H

#include "kernels/spmm.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_ATTN_MAX_HEADS 64

typedef struct {
    int64_t heads;         /* H in [1, GNN_ATTN_MAX_HEADS] */
    int64_t f;             /* features per head, >= 1 */
    int self_loop;         /* add one self loop per destination (see above) */
    float negative_slope;  /* of the GAT score's LeakyReLU */
    float dropout;         /* attention dropout p in [0, 1) */
    uint64_t seed, offset; /* its counter-based stream */
    /* keyed: seed is gnn_rng_key_at(key_base, key_at), the key of a
     * position of the model's stream; while a backend reads the step's
     * scalars (gnn_be_set_step_scalars) it draws with the key of position
     * key_at + drop_delta instead, as the step being replayed would. */
    int keyed;
    uint64_t key_base, key_at;
    const int64_t *ids;    /* n_src global ids of the rows, or NULL (host
                              memory here; a backend buffer for gnn_be_attn_*) */
    int64_t n_ids;         /* nodes the ids range over */
} gnn_attn_opts_t;

/* A graph prepared for attention: the spmm graph (borrowed) and, per entry
 * of its transpose, the slot of that edge. */
typedef struct {
    const gnn_spmm_graph_t *g;
    gnn_eid_t *t_slot; /* nnz: slot of the edge at each transposed position */
    gnn_eid_t slots;   /* nnz + n_dst with self loops, else nnz */
    gnn_eid_t longest; /* slots of the longest row */
    int self_loop;
} gnn_attn_graph_t;

/* GNN_EINVAL (naming what) unless a and o are set, o's heads, width and
 * dropout are in range and a was prepared for o's self loops; else 0.
 * Internal: the CPU and CUDA kernels' argument check. */
int gnn__attn_check(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const char *what);

/* Prepare g (borrowed; must outlive the result) for attention with or
 * without self loops. 0, GNN_EINVAL (NULL, or self loops on a graph with
 * n_dst > n_src), GNN_ENOMEM; *out NULL on failure. */
int gnn_attn_graph_create(const gnn_spmm_graph_t *g, int self_loop, gnn_attn_graph_t **out);
void gnn_attn_graph_free(gnn_attn_graph_t *a);

/* s (slots x heads) = GAT scores from el (n_src x heads) and er (n_dst x
 * heads). 0 or GNN_EINVAL. */
int gnn_attn_gat_score(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *el,
                       const float *er, float *s);
/* From ds (slots x heads, the gradient of the scores): del (n_src x heads)
 * and der (n_dst x heads), overwritten. el and er as in the forward. */
int gnn_attn_gat_score_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o,
                                const float *el, const float *er, const float *ds, float *del,
                                float *der);

/* In place s -> alpha (the softmax, before dropout, with the sign bit set
 * where dropout dropped the weight: |alpha| is the softmax, and the
 * backward reads the mask from the sign instead of drawing it again), and
 * y (n_dst x heads * f) from x (n_src x heads * f) as above. 0 or
 * GNN_EINVAL. */
int gnn_attn_forward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                     float *s, float *y);
/* From dy (n_dst x heads * f): dx (n_src x heads * f) and ds (slots x
 * heads, the gradient of the scores before the softmax; 0 at a stored
 * self loop left out), overwritten. alpha and y are the forward's (the
 * signs of alpha the dropout mask), x its input; the same opts. ds may be
 * alpha: the scores' gradient then replaces the weights, and a layer keeps
 * one slots x heads array, not two. dx may be y (y is read first): a
 * layer's y and dx share one buffer. 0, GNN_EINVAL or GNN_ENOMEM. */
int gnn_attn_backward(const gnn_attn_graph_t *a, const gnn_attn_opts_t *o, const float *x,
                      const float *alpha, const float *y, const float *dy, float *dx,
                      float *ds);

/*
 * Per-node, per-head terms (GAT's el and er): out[u, h] = sum_k x[u, h*f +
 * k] * a[h*f + k] for n rows of x (n x heads * f) and a (heads x f).
 * Backward: dx[u, h*f + k] += dout[u, h] * a[h*f + k] (accumulated, so
 * both terms of one x add up), da[h*f + k] = sum_u dout[u, h] * x[u, h*f +
 * k] (overwritten; summed in double over fixed blocks of rows).
 */
int gnn_attn_head_dot(int64_t n, int64_t heads, int64_t f, const float *x, const float *a,
                      float *out);
int gnn_attn_head_dot_backward(int64_t n, int64_t heads, int64_t f, const float *x,
                               const float *a, const float *dout, float *dx, float *da);

#ifdef __cplusplus
}
#endif

#endif
