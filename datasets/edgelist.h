/*
 * Reading edge lists: SNAP-style text, one edge per line, plain or gzip.
 *
 *   # comment            (lines starting with '#' or '%', and blank lines,
 *   % comment             are skipped)
 *   0 1                  src dst
 *   0,2                  columns are separated by blanks (spaces, tabs),
 *   1	2	0.5            a comma, or a comma with blanks around it
 *
 * The first data line decides the layout: 2 columns (src dst) or 3 (src dst
 * weight); every later line must have the same count. Weights are finite
 * float32 numbers.
 *
 * Node ids must be integers (64-bit, may be negative). A token that is not
 * an integer ("user_17", "1.5") is an error naming FILE:LINE and the token:
 * names would need a string map and are rare in edge lists; map them to
 * integers first. With one_based every id must be >= 1 and 1 is
 * subtracted.
 *
 * Reading takes two passes over the text, because how ids become node
 * numbers depends on all of them:
 *
 *   pass 1 (gnn_edgelist_scan) checks every line and collects the set of
 *          distinct ids with their count and range: a bitmap while the ids
 *          are non-negative and not too spread out (at most 8 bytes per
 *          distinct id, or 8 MiB), else an open-addressing hash map (16
 *          bytes per slot, at most 70% full);
 *   pass 2 (gnn_edgelist_feed) hands the edges to a builder in batches of
 *          64K.
 *
 * When the ids (after the one-based shift) are non-negative and dense,
 * max id < 2 * distinct + 1024, they are the node numbers: N = max id + 1
 * and ids that never occur are isolated nodes; the id set is freed after
 * pass 1. Otherwise (negative ids, hashes, sparse ranges) the ids are
 * renumbered 0..N-1 in order of first appearance (src before dst within a
 * line) as pass 2 meets them, N = distinct ids, and the ids as written in
 * the file are kept for the graph file's orig_id dataset; the hash map
 * lives until pass 2 ends. Memory is O(distinct ids), independent of the
 * number of edges.
 */
#ifndef GNN_DATASETS_EDGELIST_H
#define GNN_DATASETS_EDGELIST_H

#include "datasets/builder.h"
#include "datasets/textio.h"
#include "graph/csr.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    int one_based; /* ids in the file start at 1 */
} gnn_edgelist_opts_t;

/* What pass 1 found. */
typedef struct {
    gnn_vid_t num_nodes;   /* N */
    gnn_eid_t num_edges;   /* data lines (= edges handed to the builder) */
    int has_weights;       /* the lines have a third column */
    int remapped;          /* ids renumbered; orig ids available */
    gnn_vid_t distinct;    /* distinct ids */
    int64_t min_id, max_id;/* as written in the file */
    int64_t map_bytes;     /* memory held for the ids (map, orig ids) during pass 2 */
} gnn_edgelist_info_t;

typedef struct gnn_edgelist gnn_edgelist_t;

/*
 * Pass 1 over t (opened at its start): check every line and collect the
 * ids. Returns 0 with *out set; GNN_EFORMAT naming FILE:LINE for a bad line
 * (not an integer, wrong column count, bad weight, id < 1 with one_based),
 * or for an input without any edge; reader errors; GNN_ENOMEM. *out is NULL
 * on failure.
 */
int gnn_edgelist_scan(gnn_text_t *t, const gnn_edgelist_opts_t *o, gnn_edgelist_t **out);

void gnn_edgelist_get_info(const gnn_edgelist_t *el, gnn_edgelist_info_t *info);

/* The ids as written in the file for nodes 0..N-1, once pass 2 has
 * succeeded; NULL before that and when the ids are the node numbers (not
 * remapped). Owned by el. */
const gnn_vid_t *gnn_edgelist_orig_ids(const gnn_edgelist_t *el);

/*
 * Pass 2 over t (the same input, opened again at its start): add every edge
 * to b, which was opened with num_nodes = info.num_nodes and has_weights =
 * info.has_weights. Numbers renumbered ids as they first appear. Frees
 * the id set at the end (the orig ids stay).
 * Returns 0; GNN_EFORMAT when the input differs from pass 1; reader and
 * builder errors. Call once.
 */
int gnn_edgelist_feed(gnn_edgelist_t *el, gnn_text_t *t, gnn_builder_t *b);

/* Free; safe on NULL. */
void gnn_edgelist_free(gnn_edgelist_t *el);

/*
 * Both passes over size bytes at data (plain or gzip; name for messages)
 * into an in-memory CSR built with build_options (GNN_BUILD_*). *orig_ids
 * (may be NULL) receives the original ids when remapped, else NULL; free it
 * with gnn_free. For tests and fuzzing. On failure *out is zeroed and
 * *orig_ids NULL.
 */
int gnn_edgelist_read_mem(const void *data, size_t size, const char *name,
                          const gnn_edgelist_opts_t *o, unsigned build_options, gnn_csr_t *out,
                          gnn_vid_t **orig_ids);

#endif
