/*
 * The relations of a layer's graph, as R-GCN (trainer/layers/rgcn.c)
 * reads them: attached to the prepared graph (gnn_be_graph_attach) by the
 * mode that makes the graph.
 *
 * R-GCN multiplies each source's row by the weight of every relation the
 * source's node type starts, one GEMM per node type for all its relations
 * at once: the sources of type t (cnt[t] rows, grouped by type in the
 * order perm gives) times [W_r for the relations r of type t] side by
 * side gives P_t, cnt[t] x k[t] fout. Read as cnt[t] k[t] rows of width
 * fout, row (i k[t] + j) of P_t is source i times the weight of the type's
 * j-th relation: a "virtual source". The per-relation mean is then one
 * weighted SpMM over the virtual graph vg: destination v sums the virtual
 * sources of its in-edges (source u, relation r) with weight
 * 1 / (in-edges of v of relation r). So the products are batched per
 * type, the aggregation is one call, and its backward is the transposed
 * SpMM that every backend has.
 *
 * Aggregating first (a block with far fewer destinations than sources, as
 * a mini-batch's lower layers are) is the mirror image: the destinations
 * grouped by type (dcnt[t] rows, in the order dperm gives), each with one
 * "virtual destination" per relation its type ends (dk[t] of them), and
 * the graph ug of nvd virtual destinations x n_src sources: row
 * dvbase[t] + i dk[t] + j sums, with weight 1 / (in-edges of relation),
 * the sources of the i-th destination of type t over the type's j-th
 * relation. ug times the input is, per type, a dcnt[t] x dk[t] fin matrix
 * whose product with [W_r for the relations r ending at t] stacked gives
 * the relations' sum: the products run on destination rows only. Both
 * orders compute the same sums, rounded in another order.
 */
#ifndef GNN_TRAINER_TYPED_H
#define GNN_TRAINER_TYPED_H

#include "graph/graph_file.h"
#include "kernels/backend.h"

/* Which of the two orders a typed graph offers its layers. */
typedef enum {
    GNN_TYPED_AUTO = 0,          /* aggregating first where it costs less for the widths of
                                    the layer the graph is for (given to the attachment) */
    GNN_TYPED_TRANSFORM_FIRST,   /* the products first, always (ug never built) */
    GNN_TYPED_AGGREGATE_FIRST    /* aggregating first, always (ug built for any block) */
} gnn_typed_order_t;

typedef struct {
    int n_types, n_rels;
    gnn_typed_order_t order_mode;
    int order[GNN_MAX_RELATIONS]; /* relations by (source type, id) */
    int pos[GNN_MAX_RELATIONS];   /* position of relation r in order */
    int first[GNN_MAX_NODE_TYPES], k[GNN_MAX_NODE_TYPES]; /* type t's relations:
                                     order[first[t] .. first[t] + k[t]) */
    int64_t cnt[GNN_MAX_NODE_TYPES];   /* sources of type t */
    int64_t start[GNN_MAX_NODE_TYPES]; /* their first row in perm order */
    int64_t vbase[GNN_MAX_NODE_TYPES]; /* their first virtual source */
    int64_t n_src, n_dst, nv;          /* nv: virtual sources */
    int64_t *perm;                     /* backend, n_src: source row of each row in
                                          type order; NULL: the rows are in type order */
    int64_t *iperm;                    /* backend, n_src: the inverse */
    gnn_csr_t vcsr;                    /* host: n_dst x nv, weights */
    gnn_bgraph_t *vg;                  /* ... prepared; NULL aggregating first (ug) */
    /* Aggregating first: the same by destination type. */
    int dorder[GNN_MAX_RELATIONS];     /* relations by (destination type, id) */
    int dpos[GNN_MAX_RELATIONS];       /* position of relation r in dorder */
    int dfirst[GNN_MAX_NODE_TYPES], dk[GNN_MAX_NODE_TYPES]; /* type t's relations:
                                     dorder[dfirst[t] .. dfirst[t] + dk[t]) */
    int64_t dcnt[GNN_MAX_NODE_TYPES];   /* destinations of type t */
    int64_t dstart[GNN_MAX_NODE_TYPES]; /* their first row in dperm order */
    int64_t dvbase[GNN_MAX_NODE_TYPES]; /* their first virtual destination */
    int64_t nvd;                        /* virtual destinations */
    int64_t *dperm, *diperm;            /* backend, n_dst, as perm and iperm; NULL: the
                                           destinations are in type order */
    gnn_csr_t ucsr;                     /* host: nvd x n_src, weights */
    gnn_bgraph_t *ug;                   /* ... prepared; NULL multiplying first (vg): a
                                           graph offers its layer one order */
    gnn_csr_t shape;                   /* n_dst x n_src without entries: what the graph
                                          made by gnn_typed_graph_create was prepared from */
    gnn_backend_t *be;
} gnn_typed_graph_t;

/*
 * Attach to g (prepared from csr) the relation layout of csr, whose edge e
 * has relation etype[e] and whose source j is the node src_gid[j] of the
 * typed graph types (NULL: source j is node j; the destinations are the
 * first n_dst sources), in the order `order` chooses for a layer of
 * widths fin -> fout (0, 0: not known, as for a graph every layer reads:
 * auto multiplies first). GNN_EINVAL when an edge's relation does not
 * start at its source's type or end at its destination's; GNN_ENOMEM,
 * backend errors; nothing attached then.
 */
int gnn_typed_graph_attach(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_csr_t *csr,
                           const int32_t *etype, const int64_t *src_gid,
                           const gnn_graph_types_t *types, gnn_typed_order_t order,
                           int64_t fin, int64_t fout);

/* Sort every row of csr (with its relations etype and weights) by
 * (relation, source), as typed draws need (gnn_sampler_set_relations);
 * the SORTED flag goes (sources ascend only within a relation). */
int gnn_typed_group_rows(gnn_csr_t *csr, int32_t *etype);

/* A prepared graph for the block csr whose entry e has relation etype[e]
 * and whose source j is node src_gid[j] (NULL: j) of a graph typed by
 * types, with the relation layout attached. The graph itself is prepared
 * from the shape of csr alone (n_dst x n_src, no entries): a typed layer
 * aggregates over the attached virtual graph only, so the transposes of
 * csr are never built. */
int gnn_typed_graph_create(gnn_backend_t *be, const gnn_csr_t *csr, const int32_t *etype,
                           const int64_t *src_gid, const gnn_graph_types_t *types,
                           gnn_typed_order_t order, int64_t fin, int64_t fout,
                           gnn_bgraph_t **out);

/* GNN_TYPED_* of a --rgcn-order value (auto, transform-first,
 * aggregate-first); -1 for any other. */
int gnn_typed_order_parse(const char *s);

#endif
