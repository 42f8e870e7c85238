/*
 * The edge-stream builder: every converter and generator hands its edges to
 * one builder, which turns them into the in-edge CSR of the graph file
 * within a memory budget.
 *
 * Edges arrive in any order through gnn_builder_add. The builder counts
 * in-degrees (8 bytes per node) and sorts each incoming entry (row, source)
 * into one of up to 256 buckets by its row, a contiguous range of node ids;
 * each bucket has a small buffer, and a full buffer is appended as a block
 * to one unlinked spill file. To finish, it turns the counts into row
 * offsets, splits the rows into ranges whose CSR fits the budget, and for
 * each range reads only the blocks of its buckets, places their entries by
 * counting sort (a bucket's rows are a few MiB of the CSR, so the random
 * writes stay in cache), sorts and deduplicates the rows as asked, and
 * streams the range to the graph writer. With no budget (or a budget above
 * the output size) that is one range: memory is the output CSR plus the
 * buffers. With a smaller budget each range still reads its own buckets
 * once:
 *
 *   peak = 8 (N + 1) + buffer + max over ranges of (8 + 4w) E_range
 *
 * (w = 1 with weights). Under symmetrisation an edge u -> v is stored as the
 * entry (v, u) in v's bucket and (u, v) in u's, so the spill holds each
 * stored entry once.
 */
#ifndef GNN_DATASETS_BUILDER_H
#define GNN_DATASETS_BUILDER_H

#include "graph/csr.h"
#include "graph/graph_file.h"

#include <stdint.h>

typedef struct {
    gnn_vid_t num_nodes;  /* node count when known; -1: the largest id added + 1 */
    gnn_vid_t num_nodes_hint; /* with num_nodes = -1: the expected count, used only to size
                                 the buckets (0 = unknown: one bucket) */
    unsigned options;     /* GNN_BUILD_* of csr.h: symmetrize, dedupe, no self loops, sort */
    int has_weights;      /* edges carry a float weight */
    int64_t mem_budget;   /* bytes the build may hold; 0 = no limit */
    int64_t buffer_bytes; /* all bucket buffers together before spilling; 0 = 64 MiB (less
                             under a small budget) */
    const char *tmpdir;   /* directory for the spill file; NULL = $TMPDIR or /tmp */
    int threaded;         /* add edges on a worker thread: gnn_builder_add copies the batch
                             and returns, so parsing and building overlap */
} gnn_builder_opts_t;

typedef struct gnn_builder gnn_builder_t;

/* Returns 0, GNN_EINVAL for bad options, GNN_ENOMEM. */
int gnn_builder_open(const gnn_builder_opts_t *o, gnn_builder_t **out);

/*
 * Add n edges src[i] -> dst[i] (weights: NULL unless has_weights). Self
 * loops are dropped here when asked. Returns 0; GNN_ERANGE for a negative
 * id or one >= num_nodes when that is known (the message gives the edge's
 * position in the stream; callers that know a file and line check first);
 * GNN_EIO when the spill file cannot be written; GNN_ENOMEM. In threaded
 * mode a failure of an earlier batch is returned by a later call (or the
 * flush), with its message.
 */
int gnn_builder_add(gnn_builder_t *b, const gnn_vid_t *src, const gnn_vid_t *dst, const float *w,
                    int64_t n);

/*
 * Wait until every edge given has been added (threaded mode) and return the
 * first failure of the worker, if any. The accessors below and the finish
 * functions flush first.
 */
int gnn_builder_flush(gnn_builder_t *b);

/* Node count: the known one, or the largest id added + 1. */
gnn_vid_t gnn_builder_num_nodes(gnn_builder_t *b);
/* Edges accepted so far (after self-loop removal, before symmetrisation). */
gnn_eid_t gnn_builder_num_added(gnn_builder_t *b);
/* GNN_CSR_* flags the result will have; give them to the writer's header. */
unsigned gnn_builder_csr_flags(const gnn_builder_t *b);

/*
 * Finish into a graph writer opened with num_nodes >= gnn_builder_num_nodes
 * (extra nodes have no in-edges) and num_edges = -1 (decided here, after
 * deduplication). Writes indptr, indices and weights. Returns 0; GNN_ENOMEM
 * when even the node offsets exceed the budget (the message says how much
 * is needed); GNN_EIO; writer errors. The builder can only finish once.
 */
int gnn_builder_write(gnn_builder_t *b, gnn_graph_writer_t *w);

/* Finish into memory instead (num_nodes as above). Ignores the budget. */
int gnn_builder_to_csr(gnn_builder_t *b, gnn_vid_t num_nodes, gnn_csr_t *out);

typedef struct {
    int64_t peak_bytes;   /* largest memory the builder held */
    int64_t spill_bytes;  /* bytes written to the spill file */
    int passes;           /* destination ranges (passes over the edges) */
    gnn_eid_t num_edges;  /* stored entries of the result */
} gnn_builder_stats_t;

void gnn_builder_stats(const gnn_builder_t *b, gnn_builder_stats_t *s);

/* Free; safe on NULL. */
void gnn_builder_free(gnn_builder_t *b);

/* Writes the nb edges of generated batch i into src and dst. */
typedef void (*gnn_builder_make_fn)(void *ctx, int64_t i, int64_t nb, gnn_vid_t *src,
                                    gnn_vid_t *dst);

/*
 * A generator's undirected graph of n nodes: m edges made in batches of at
 * most batch by make (batch i covers edges [i batch, i batch + nb)), each
 * stored both ways, repeats and self loops dropped, within mem_budget
 * (spill files in tmpdir), with a "generating edges" progress line. *out:
 * the builder holding them, for gnn_builder_write; NULL on failure.
 */
int gnn_builder_generate(gnn_vid_t n, int64_t m, int64_t batch, gnn_builder_make_fn make,
                         void *ctx, int64_t mem_budget, const char *tmpdir,
                         gnn_builder_t **out);

#endif
