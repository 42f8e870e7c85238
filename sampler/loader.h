/*
 * The mini-batch loader: the seeds of an epoch, shuffled, cut into batches
 * that worker threads sample (sampler.h) and whose input features and seed
 * labels they gather, handed to the trainer in batch order through a
 * bounded prefetch queue, so that batch i + 1 .. i + K are being prepared
 * while batch i trains.
 *
 * Threads. `threads` workers run for the loader's life; each claims the
 * next batch number not yet taken, builds it on its own (one OpenMP thread
 * inside: the parallelism is across batches) and marks its queue slot
 * ready. Batch i may start only when fewer than `prefetch` batches are
 * waiting or being trained ahead of it (slot i % prefetch is free), which
 * bounds memory at `prefetch` batches. The trainer takes the batches in
 * order with gnn_loader_next (waiting, and counting a stall, when the next
 * one is not ready yet) and gives each back with gnn_loader_release.
 *
 * Reproducibility. Batch b of epoch e holds seeds [b*B, (b+1)*B) of the
 * epoch's permutation, which depends only on (seed, epoch) and the seed
 * list, and is sampled under (seed, epoch, b): the batches are the same for
 * every thread count and prefetch depth, and arrive in the same order.
 *
 * With 0 threads there is no queue: gnn_loader_next builds the batch itself,
 * with the caller's OpenMP threads; the batches are the same. With a
 * prefetch depth of 2 or more the caller may still hold two batches, and
 * build the next one (on a thread of its own) while the current trains.
 * That is the way for a sampler whose remote hook is collective
 * (sampler.h): its batches must be built in order, by one thread.
 *
 * A hook may prepare each batch further on the worker thread (the trainer
 * builds its aggregation graphs there on the CPU) and undo it on release.
 */
#ifndef GNN_SAMPLER_LOADER_H
#define GNN_SAMPLER_LOADER_H

#include "sampler/sampler.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GNN_LOADER_MAX_THREADS 256
#define GNN_LOADER_MAX_PREFETCH 64

/* What an edge batch's hook makes of its items (loader opts.edge_seeds),
 * every array gnn_malloc'd by the hook and freed with the batch. */
typedef struct {
    gnn_vid_t *seeds;    /* the sampler's seeds, distinct */
    int64_t n_seeds;
    gnn_vid_t *excl;     /* n_excl edges (pairs of node ids) the sampler leaves out */
    int64_t n_excl;
    int64_t *pairs;      /* n_pairs pairs of positions into seeds: what the batch scores */
    int64_t n_pairs;
} gnn_loader_edges_t;

/* Free an edge batch's arrays and zero it (NULL ok). */
void gnn_loader_edges_free(gnn_loader_edges_t *e);

/* One prepared batch. Owned by the loader between gnn_loader_next and
 * gnn_loader_release; read-only for the caller except `user`. */
typedef struct {
    int64_t index;       /* batch number within the epoch */
    int64_t n_items;     /* its items: seeds, or an edge batch's edges */
    gnn_loader_edges_t edges; /* edge batches only (zeroed otherwise) */
    gnn_minibatch_t mb;  /* blocks; mb.nodes[0 .. mb.n_seeds) are the seeds */
    float *x;            /* mb.n_input x feat_dim features of mb.nodes (NULL without feat) */
    int64_t *y;          /* mb.n_seeds labels of the seeds (NULL without labels) */
    double sample_s;     /* worker time sampling */
    double gather_s;     /* worker time gathering features and labels */
    double prepare_s;    /* worker time in the prepare hook */
    void *user[GNN_SAMPLER_MAX_LAYERS]; /* for the hook (zeroed before it) */
} gnn_loader_batch_t;

typedef struct {
    const gnn_csr_t *graph;   /* square in-edge CSR, borrowed */
    int layers;
    const int *fanouts;       /* as gnn_sampler_create: nearest hop first */
    int once;                 /* draw each node's neighbours once (gnn_sampler_set_once) */
    const float *feat;        /* num_nodes x feat_dim, borrowed; NULL: no gather */
    int64_t feat_dim;
    const int64_t *feat_row;  /* optional, borrowed (graph->n_cols entries): node v's
                                 features are row feat_row[v] of feat, or zeros where it
                                 is -1 or v is beyond the graph's columns (the caller
                                 fills those rows in: a rank's remote nodes); NULL: row v */
    const int64_t *labels;    /* num_nodes, borrowed; NULL: no labels */
    const gnn_vid_t *key_ids; /* optional, borrowed: draws keyed by these ids
                                 (gnn_sampler_set_key_ids) */
    const int32_t *etype;     /* optional, borrowed: typed draws per relation
                                 (gnn_sampler_set_relations) over n_rels relations */
    int n_rels;
    const gnn_sampler_remote_t *remote; /* optional: rows held elsewhere
                                 (gnn_sampler_set_remote); needs 0 threads */
    int threads;              /* worker threads, 0 .. GNN_LOADER_MAX_THREADS; 0: each
                                 batch is built by gnn_loader_next in the caller's
                                 thread (no overlap: the reference for timing) */
    int prefetch;             /* batches in flight, 1 .. GNN_LOADER_MAX_PREFETCH; with
                                 0 threads, any value: 2 or more lets two be held */
    /* Optional, edge batches: the items of an epoch are then not seeds
     * but what this hook turns into seeds (a link task's training edges,
     * by index). It gets the batch's items (its slice of the epoch's
     * shuffled list) and the epoch's (seed, epoch), and fills *out; the
     * sampler then starts from out->seeds, leaving out out->excl. 0 or a
     * GNN_E code, which ends the epoch with that error. */
    int (*edge_seeds)(void *ctx, const gnn_vid_t *items, int64_t n, uint64_t seed,
                      uint64_t epoch, gnn_loader_edges_t *out);
    /* Optional: run on the worker after the gather (0 or a GNN_E code,
     * which ends the epoch with that error); undo on release. */
    int (*prepare)(void *ctx, gnn_loader_batch_t *b);
    void (*unprepare)(void *ctx, gnn_loader_batch_t *b);
    void *ctx;
} gnn_loader_opts_t;

/* Counters of the current (or last) epoch. */
typedef struct {
    int64_t batches;         /* handed out */
    int64_t sampled_edges;   /* over all layers of those batches */
    int64_t input_nodes;     /* sum of n_input */
    int64_t stalls;          /* gnn_loader_next calls that had to wait */
    double stall_s;          /* time those calls waited */
    double sample_s, gather_s, prepare_s; /* worker time, summed over workers */
} gnn_loader_stats_t;

typedef struct gnn_loader gnn_loader_t;

/*
 * A loader with its worker threads started (idle until gnn_loader_start).
 * Returns 0; GNN_EINVAL for a NULL or out-of-range option (named) or a bad
 * fanout (as gnn_sampler_create); GNN_ENOMEM; GNN_EIO when a thread cannot
 * be started. *out is NULL on failure.
 */
int gnn_loader_create(const gnn_loader_opts_t *o, gnn_loader_t **out);

/*
 * Begin an epoch over the n distinct seeds (copied; with edge_seeds, n
 * items of the hook's), in batches of
 * batch_size (the last one may be smaller), shuffled by (seed, epoch) when
 * shuffle is set, sampled under (seed, epoch, batch). The previous epoch
 * must have been consumed to its end (or the loader just created).
 * Returns 0; GNN_EINVAL for a bad argument or an epoch still running;
 * GNN_ENOMEM.
 */
int gnn_loader_start(gnn_loader_t *ld, const gnn_vid_t *seeds, int64_t n, int64_t batch_size,
                     int shuffle, uint64_t seed, uint64_t epoch);

/*
 * Begin an epoch of n_batches batches given by their bounds: batch b holds
 * items[starts[b] .. starts[b + 1]) (copied, in that order; a batch may be
 * empty), sampled under (seed, epoch, b). Returns as gnn_loader_start;
 * GNN_EINVAL also for bounds that do not start at 0 or decrease.
 */
int gnn_loader_start_batches(gnn_loader_t *ld, const gnn_vid_t *items, const int64_t *starts,
                             int64_t n_batches, uint64_t seed, uint64_t epoch);

/* Batches in the current epoch. */
int64_t gnn_loader_batches(const gnn_loader_t *ld);

/*
 * The next batch of the epoch in order, waiting for it if needed: 0 with
 * *out set, or 0 with *out NULL after the last batch. A worker's failure
 * (bad seed, out of memory, the hook's error) is returned here with its
 * message, and the epoch is over. At most gnn_loader_max_held batches are
 * held at a time (taken and not yet released); release them in the order
 * they were taken.
 */
int gnn_loader_next(gnn_loader_t *ld, gnn_loader_batch_t **out);
/* Batches that may be held at once: 2 with a prefetch depth of 2 or more
 * (the next batch can be worked on while the current one trains), else 1. */
int gnn_loader_max_held(const gnn_loader_t *ld);

/* Give back the batch from gnn_loader_next (its slot is refilled). */
void gnn_loader_release(gnn_loader_t *ld, gnn_loader_batch_t *b);

/* Counters since the last gnn_loader_start. */
void gnn_loader_stats(const gnn_loader_t *ld, gnn_loader_stats_t *st);

/* Stop the workers (waiting for batches being built), free everything.
 * Safe mid-epoch and on NULL. */
void gnn_loader_free(gnn_loader_t *ld);

/*
 * The permutation of the loader: shuffle a[0..n) in place by (seed, epoch)
 * (Fisher-Yates over Philox draws; the same on every machine).
 */
void gnn_loader_shuffle(gnn_vid_t *a, int64_t n, uint64_t seed, uint64_t epoch);

#ifdef __cplusplus
}
#endif

#endif
