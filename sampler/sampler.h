/*
 * Uniform neighbour sampling of mini-batches into per-layer blocks (the
 * GraphSAGE / DGL NeighborSampler / PyG NeighborLoader scheme).
 *
 * From the seed nodes of a batch, hop h = 0, 1, ..., L-1 draws, for every
 * node v of its frontier, up to fanouts[h] of v's in-neighbours uniformly
 * without replacement (all of them when the in-degree is at most the fanout
 * or the fanout is -1). Hop h fills the block of model layer l = L-1-h, so
 * fanouts[0] (the hop from the seeds) feeds the output layer and
 * fanouts[L-1] the input layer 0: the order of PyG's num_neighbors.
 *
 * A block is a rectangular n_dst x n_src in-edge CSR over local ids whose
 * first n_dst sources are the destinations themselves (kernels/spmm.h), with
 * the global id of every source. Block L-1's destinations are the seeds in
 * the given order; block l-1's destinations are block l's sources. Local ids
 * are handed out in order of first appearance (seeds, then the new sources
 * of hop 0 in frontier and row order, then those of hop 1, ...), so the
 * source list of every block is a prefix of one node list, and the input
 * nodes of the batch (whose features layer 0 reads) are that whole list.
 *
 * Reproducibility: which neighbours of v are drawn at hop h depends only on
 * (seed, epoch, batch, v, h), never on the thread count, the other nodes of
 * the frontier or their order. The definition, exact to the bit:
 *
 *   key = mix(mix(mix(seed) ^ epoch) ^ batch)   (mix: splitmix64's finaliser
 *         applied to x + 0x9E3779B97F4A7C15)
 *   word i of (v, h) = the 64-bit value lo | hi << 32 of the words
 *         (lo, hi) = r[2(i%2)], r[2(i%2)+1] of
 *         r = philox4x32_10(ctr = {lo32(v), hi32(v), h, i/2},
 *                           key = {lo32(key), hi32(key)})   (graph/base/rng.h)
 *   below(m) = the high 64 bits of word * m, drawing the next word again
 *         while the low 64 bits fall under 2^64 mod m (Lemire's method:
 *         exactly uniform on [0, m))
 *   Floyd's algorithm picks k of the d row positions: for j = d-k .. d-1,
 *         t = below(j+1); take t unless taken already, else take j. Every
 *         k-subset is equally likely.
 *
 * The sampled positions index the graph's row (indices[indptr[v] + t]), so
 * a graph with repeated edges yields repeated sources with their
 * multiplicity, as an edge sampler should; on a deduplicated graph no row of
 * a block repeats a source. Edge weights of the graph are not carried into
 * the blocks (csr.weights is NULL).
 *
 * Cost: per batch O(sampled edges) time and memory. The frontier is
 * deduplicated with an open-addressing hash map sized to the batch; a batch
 * whose seeds and fanouts can reach a quarter of the graph's nodes or more
 * (and a graph of at most 2^28 nodes) uses an array over the graph's nodes
 * instead (4 bytes a node, its own per batch), whose reads hit the cache
 * where the map's miss it. Many batches can be sampled at once from one
 * sampler. The per-node draws of a hop run on OpenMP threads; assigning
 * local ids is one sequential pass in frontier order, which keeps the
 * result identical for every thread count.
 */
#ifndef GNN_SAMPLER_SAMPLER_H
#define GNN_SAMPLER_SAMPLER_H

#include "graph/csr.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_SAMPLER_MAX_LAYERS 16

/*
 * One layer's bipartite graph. csr is n_dst x n_src (csr.n_rows x
 * csr.n_cols), rows over local destination ids, indices local source ids,
 * each row sorted ascending; flags: SORTED, plus DEDUPED and NO_SELF_LOOPS
 * when the graph promised them. src_ids[j] is the global id of local source
 * j, and src_ids[i] for i < n_dst is destination i.
 */
typedef struct {
    gnn_csr_t csr;
    gnn_vid_t *src_ids; /* n_src global ids, destinations first */
    int32_t *etype;     /* nnz: the relation of each entry (typed draws), or NULL */
} gnn_block_t;

/*
 * A sampled mini-batch. blocks[0] is the input layer, blocks[layers-1] the
 * output layer (destinations = the seeds). Every block's csr is owned by
 * the mini-batch; every block's src_ids points into `nodes` (a prefix of
 * it), which the mini-batch owns: never free a block of a mini-batch
 * separately, free the mini-batch.
 */
typedef struct {
    int layers;
    gnn_block_t blocks[GNN_SAMPLER_MAX_LAYERS];
    gnn_vid_t *nodes;   /* n_input global ids: seeds first, then by hop */
    gnn_vid_t n_seeds;  /* = blocks[layers-1].csr.n_rows */
    gnn_vid_t n_input;  /* input nodes = blocks[0].csr.n_cols */
    gnn_eid_t edges[GNN_SAMPLER_MAX_LAYERS]; /* sampled edges of layer l */
    gnn_eid_t edges_total;                   /* over all layers */
} gnn_minibatch_t;

typedef struct gnn_sampler gnn_sampler_t;

/*
 * A sampler of `layers` (1 .. GNN_SAMPLER_MAX_LAYERS) hops over graph, a
 * square in-edge CSR (borrowed: it must outlive the sampler and stay
 * unchanged; it is trusted to pass gnn_csr_validate). fanouts has one entry
 * per layer, nearest hop first: fanouts[0] is drawn from the seeds (output
 * layer), fanouts[layers-1] last (input layer); -1 takes all neighbours.
 * Returns 0 with *out set; GNN_EINVAL for a NULL argument, a non-square
 * graph, a layer count out of range or a fanout of 0 or below -1 (the
 * message names it); GNN_ENOMEM. *out is NULL on failure.
 */
int gnn_sampler_create(const gnn_csr_t *graph, int layers, const int *fanouts,
                       gnn_sampler_t **out);
/* Release s (not the borrowed graph); NULL is a no-op. */
void gnn_sampler_free(gnn_sampler_t *s);
int gnn_sampler_layers(const gnn_sampler_t *s);
/* The fanout of hop h (0 = from the seeds). */
int gnn_sampler_fanout(const gnn_sampler_t *s, int h);

/*
 * Sample the mini-batch of the n distinct seeds (global ids) under
 * (seed, epoch, batch) into *out (overwritten; free with
 * gnn_minibatch_free). n = 0 gives empty blocks. s is only read, so
 * several threads may sample from one sampler at once; the draws of each
 * call run on the current OpenMP thread count.
 * Returns 0; GNN_EINVAL for a NULL argument, n < 0, a seed outside
 * [0, num_nodes) or a repeated seed (the message names it and its
 * position); GNN_ENOMEM. On failure *out is zeroed and nothing is leaked.
 */
int gnn_sampler_sample(const gnn_sampler_t *s, const gnn_vid_t *seeds, int64_t n, uint64_t seed,
                       uint64_t epoch, uint64_t batch, gnn_minibatch_t *out);

/*
 * As gnn_sampler_sample, leaving out of every hop's draws the n_excl edges
 * excl[2i] - excl[2i + 1] in both directions (source excl[2i] in row
 * excl[2i + 1], and source excl[2i + 1] in row excl[2i]): an edge batch's
 * own positives, so that no sampled neighbourhood holds the edges the batch
 * is trained to predict. A row with excluded sources is drawn as the row
 * without them (every entry equal to an excluded source goes), by the
 * definition above over the remaining positions; every other row draws
 * exactly what gnn_sampler_sample draws. Rows held elsewhere (a remote
 * hook) are drawn by their holders, who must leave the same edges out
 * (remote.excludes); without that, a hop that reaches one with excluded
 * sources fails with GNN_EUNSUPPORTED. Returns as gnn_sampler_sample;
 * GNN_EINVAL also for an end point outside the graph (any id >= 0 with a
 * remote hook).
 */
int gnn_sampler_sample_excluding(const gnn_sampler_t *s, const gnn_vid_t *seeds, int64_t n,
                                 const gnn_vid_t *excl, int64_t n_excl, uint64_t seed,
                                 uint64_t epoch, uint64_t batch, gnn_minibatch_t *out);

/*
 * A set of excluded edges, as gnn_sampler_sample_excluding leaves out (the
 * n pairs, both directions), for a holder drawing rows for others:
 * gnn_sampler_excl_filter copies the d entries of row v that are not
 * excluded sources of v into out (when set; entries compared as ids[entry]
 * when ids is set) and returns their number (all d for a row without
 * exclusions); drawing with gnn_sampler_draw_row over them gives what the
 * sampler draws locally. Create returns 0, GNN_EINVAL (a negative id),
 * GNN_ENOMEM.
 */
typedef struct gnn_sampler_excl gnn_sampler_excl_t;
int gnn_sampler_excl_create(const gnn_vid_t *pairs, int64_t n, gnn_sampler_excl_t **out);
void gnn_sampler_excl_free(gnn_sampler_excl_t *x);
gnn_eid_t gnn_sampler_excl_filter(const gnn_sampler_excl_t *x, gnn_vid_t v, const gnn_vid_t *row,
                                  gnn_eid_t d, const gnn_vid_t *ids, gnn_vid_t *out);
/* Whether row v has excluded sources. */
int gnn_sampler_excl_has_row(const gnn_sampler_excl_t *x, gnn_vid_t v);

/*
 * Keying and rows held elsewhere (a part of a distributed graph).
 *
 * Key ids: with gnn_sampler_set_key_ids, the draws of node v come from
 * the stream of (key, ids[v], h) instead of (key, v, h). A part whose
 * nodes carry their graph-wide ids, rows in the same order as the
 * graph's, then draws exactly what the whole graph's sampler draws.
 *
 * Remote rows: with gnn_sampler_set_remote, only rows [0, n_held) of the
 * graph are held here; a frontier node v >= n_held (any id, also beyond
 * the graph's columns: ids name nodes the holder of v can resolve) is
 * drawn by the hook. Once per hop from first_hop on, in hop order, the
 * sampler hands it the frontier's remote nodes in frontier order (when
 * sampling once, those new at that hop: the others keep their draws; n = 0
 * included, so a hook may be collective over processes sampling in step);
 * hops before first_hop must find every row held (a part whose rows reach
 * H - 1 hops out from seeds it holds: first_hop = H), else the batch fails
 * with GNN_EINVAL. Seeds may then be any ids >= 0 as well (a node held
 * elsewhere is drawn by the hook from the first hop on). The hook sets cnt[i]
 * to the number of sources drawn for v[i] and *src to all of them, row
 * after row in draw order, in a gnn_malloc'd array the sampler frees.
 * The draws must follow the definition above (gnn_sampler_draw_row does).
 * A typed sampler (gnn_sampler_set_relations) passes rel: the hook then
 * draws per relation (gnn_sampler_draw_row_typed) and sets *rel to the
 * relation of every source, in the same order, gnn_malloc'd (the sampler
 * frees it); rel is NULL otherwise.
 * A hook failure (a GNN_E code) ends the batch with that code. When the
 * batch fails here (a bad seed, out of memory), the hook is still called
 * once at the next exchange (this hop's when its call has not been made,
 * else the next hop's; first_hop when the failure came earlier), with n
 * set to the (negative) code and v and cnt NULL, so that it can tell the
 * others; the batch then ends. A failure after the last hop's call is
 * this process's alone.
 */
typedef struct {
    gnn_vid_t n_held; /* rows held here: [0, n_held) */
    int first_hop;    /* the first hop that calls the hook */
    int excludes;     /* the holders leave the batch's excluded edges out of the
                         rows they draw (gnn_sampler_sample_excluding): they
                         know the set; else such a row fails the batch */
    int (*draw)(void *ctx, int h, int fanout, uint64_t key, const gnn_vid_t *v, int64_t n,
                gnn_eid_t *cnt, gnn_vid_t **src, int32_t **rel);
    void *ctx;
} gnn_sampler_remote_t;

/*
 * Typed draws (a heterogeneous graph): etype[e] is the relation of entry e
 * of the graph (borrowed), every row's entries grouped by relation in
 * ascending order (checked: GNN_EINVAL naming the first row that is not).
 * Each hop then draws, for every node v and every relation r of v's row,
 * up to the hop's fanout of v's in-neighbours of relation r, by the
 * definition above over that relation's entries with the word counters
 * (lo32(v), hi32(v), h | (r + 1) << 16, i / 2) (DGL's per-edge-type
 * fanout); blocks carry the relation of every entry (gnn_block_t.etype)
 * and their rows are sorted by (source, relation). Rows held elsewhere
 * are drawn by the remote hook with their relations. With excluded edges
 * (gnn_sampler_sample_excluding) a row is drawn per relation over its
 * entries less the excluded sources. etype NULL: untyped.
 */
int gnn_sampler_set_relations(gnn_sampler_t *s, const int32_t *etype, int n_rels);

/*
 * Sampling once (PyG NeighborLoader's reading of the fanouts; off by
 * default, DGL's): a node's in-neighbours are drawn once, at the hop that
 * first reaches it as a destination (hop h' with its fanout and the draws
 * of (v, h')), and every later block keeps that draw: block l-1's rows
 * for block l's destinations are block l's rows as they are, and only the
 * nodes new at a hop draw there. Every layer of a node's computation then
 * aggregates the same neighbours, and a hop draws for its new nodes alone.
 * Without it every block draws all its rows anew. Returns 0, or
 * GNN_EINVAL for a NULL sampler.
 */
int gnn_sampler_set_once(gnn_sampler_t *s, int on);

/* Key draws by ids (graph->n_rows entries, borrowed; NULL: by node id).
 * Returns 0, or GNN_EINVAL for a NULL sampler. */
int gnn_sampler_set_key_ids(gnn_sampler_t *s, const gnn_vid_t *ids);
/* Draw rows from n_held on through r (copied; NULL: every row is held).
 * Returns 0, or GNN_EINVAL for a NULL sampler or hook or n_held outside
 * [0, graph->n_rows]. */
int gnn_sampler_set_remote(gnn_sampler_t *s, const gnn_sampler_remote_t *r);

/* How a batch finds its nodes' local ids: 0 (the default) chooses by the
 * batch's reach (an array over the graph when the seeds and fanouts can
 * reach a quarter of its nodes, else the id map), 1 always the id map, 2
 * the array whenever the graph has at most 2^28 nodes. The blocks are the
 * same either way; internal, for tests and benchmarks. Returns 0, or
 * GNN_EINVAL for a NULL sampler or another mode. */
int gnn__sampler_set_index(gnn_sampler_t *s, int mode);
/* Whether a hop with a fanout up to twice the graph's mean degree draws in
 * one pass (1, the default) or counts its rows first (0), as other hops
 * do. The blocks are the same either way; internal, for tests. Returns 0,
 * or GNN_EINVAL for a NULL sampler. */
int gnn__sampler_set_one_pass(gnn_sampler_t *s, int on);

/* Sort the n ids of a, each in [0, max_id], ascending, as the sampler
 * sorts its blocks' rows (a vector network for short rows of ids below
 * 2^31 where the CPU has AVX-512); internal, for tests. */
void gnn__sampler_sort_ids(gnn_vid_t *a, gnn_eid_t n, gnn_vid_t max_id);

/* The key of batch (seed, epoch, batch): mix(mix(mix(seed) ^ epoch) ^ batch). */
uint64_t gnn_sampler_key(uint64_t seed, uint64_t epoch, uint64_t batch);

/*
 * The draws of one row at hop h under key: out[0 .. c) (c returned, c =
 * min(d, fanout), all d when fanout is -1) are the sources row[t] at the
 * positions t the definition above picks for the node keyed key_id, in
 * draw order. What a holder of a row answers to a remote draw. Returns c,
 * or GNN_ENOMEM (drawing more than 64 of a longer row needs a table).
 */
int64_t gnn_sampler_draw_row(const gnn_vid_t *row, gnn_eid_t d, int fanout, uint64_t key,
                             gnn_vid_t key_id, int h, gnn_vid_t *out);

/*
 * The typed draws of one row (entries grouped by relation, etype[t] the
 * relation of row[t]) at hop h under key: per relation, the draws of the
 * definition above over its entries with the relation's counters (see
 * gnn_sampler_set_relations), out[0 .. c) the sources and rel[0 .. c)
 * their relations, relation after relation. Returns c, the sum over the
 * relations of min(entries, fanout); GNN_ENOMEM.
 */
int64_t gnn_sampler_draw_row_typed(const gnn_vid_t *row, const int32_t *etype, gnn_eid_t d,
                                   int fanout, uint64_t key, gnn_vid_t key_id, int h,
                                   gnn_vid_t *out, int32_t *rel);
/* The number of sources gnn_sampler_draw_row_typed draws from the row. */
int64_t gnn_sampler_typed_count(const int32_t *etype, gnn_eid_t d, int fanout);

/* Free what mb holds and zero it; safe on a zeroed mini-batch. */
void gnn_minibatch_free(gnn_minibatch_t *mb);

/*
 * The block of ALL in-neighbours of the n distinct destinations dst of
 * graph (layer-wise inference): rows sorted, src_ids owned by the block
 * (free with gnn_block_free). Same numbering as a sampled block: the
 * destinations first, then new sources in row order. Returns 0;
 * GNN_EINVAL for a NULL argument, a non-square graph, n < 0, an id out of
 * range or repeated (named); GNN_ENOMEM. On failure *out is zeroed.
 */
int gnn_sampler_full_block(const gnn_csr_t *graph, const gnn_vid_t *dst, int64_t n,
                           gnn_block_t *out);
/* The same carrying the relation of every entry (etype as
 * gnn_sampler_set_relations; NULL: none), rows sorted by (source,
 * relation). */
int gnn_sampler_full_block_typed(const gnn_csr_t *graph, const int32_t *etype, const gnn_vid_t *dst,
                                 int64_t n, gnn_block_t *out);

/* Free a block from gnn_sampler_full_block and zero it (never a block of a
 * mini-batch); safe on a zeroed block. */
void gnn_block_free(gnn_block_t *b);

#ifdef __cplusplus
}
#endif

#endif
