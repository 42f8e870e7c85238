/*
 * The graph file: one HDF5 file per dataset, format version 1, or 2 for a
 * graph with node and edge types (docs/FORMAT.md describes every dataset
 * and attribute).
 *
 * Readers open a file once (gnn_graph_open), which checks the layout, and
 * then read ranges: a range of CSR rows, of edges, of feature rows. Only the
 * chunks that hold the range are read, so billion-edge files are streamed
 * through bounded buffers. Every range read checks what it returns (offsets
 * monotone and within the edge count, ids within the node count), so a
 * corrupt file fails with GNN_EFORMAT instead of handing bad ids onwards.
 *
 * Writers stream too: gnn_graph_writer_open creates every dataset at its
 * final size under a temporary name; ranges are put in any order; commit
 * checks that every dataset was written whole and renames the file into
 * place. An aborted or failed write leaves no file under the final name.
 */
#ifndef GNN_GRAPH_GRAPH_FILE_H
#define GNN_GRAPH_GRAPH_FILE_H

#include "graph/csr.h"

#include <stdint.h>

#define GNN_GRAPH_FORMAT "gnn-graph"
#define GNN_GRAPH_VERSION 1       /* a graph of one node type and one relation */
#define GNN_GRAPH_VERSION_TYPED 2 /* node types, a relation per stored edge */
/* num_nodes and num_edges of a graph file lie below this: counts + 1 and the
 * byte sizes derived from them cannot overflow int64. */
#define GNN_GRAPH_MAX_COUNT ((int64_t)1 << 62)

typedef enum { GNN_SPLIT_TRAIN = 0, GNN_SPLIT_VALID = 1, GNN_SPLIT_TEST = 2 } gnn_split_t;
#define GNN_NUM_SPLITS 3
extern const char *const gnn_split_names[GNN_NUM_SPLITS]; /* "train", "valid", "test" */

/* Held-out edges for link prediction (gnn-dataset split-edges): pairs
 * (src, dst) of node ids, row-major n x 2. Negatives are grouped by
 * positive: negatives [i * K, (i + 1) * K) of a set belong to positive i
 * of the matching positive set, K = link_neg_per_pos, and each is
 * (src of positive i, w) for a node w with no edge src -> w in the graph
 * before the split (and w != src). */
typedef enum {
    GNN_LINK_VALID_POS = 0,
    GNN_LINK_VALID_NEG = 1,
    GNN_LINK_TEST_POS = 2,
    GNN_LINK_TEST_NEG = 3
} gnn_link_set_t;
#define GNN_NUM_LINK_SETS 4
/* "valid_pos", "valid_neg", "test_pos", "test_neg" */
extern const char *const gnn_link_set_names[GNN_NUM_LINK_SETS];

/*
 * Node and edge types (a heterogeneous graph, format version 2). Node type
 * t holds the contiguous ids [off[t], off[t + 1]); every stored edge has a
 * relation r, which joins a node of type rel_src[r] (the source) to one of
 * type rel_dst[r] (the row it is stored in). Each type has its own feature
 * width (0: featureless); labels and splits are on the target type. Names
 * are 1 to GNN_TYPE_NAME_MAX - 1 characters of [A-Za-z0-9_-].
 */
#define GNN_MAX_NODE_TYPES 64
#define GNN_MAX_RELATIONS 256
#define GNN_TYPE_NAME_MAX 64
typedef struct {
    int n_ntypes;                        /* T >= 1 */
    int n_rels;                          /* R >= 1 */
    int64_t off[GNN_MAX_NODE_TYPES + 1]; /* off[0] = 0, off[T] = num_nodes */
    char ntype[GNN_MAX_NODE_TYPES][GNN_TYPE_NAME_MAX];
    int64_t feat_dim[GNN_MAX_NODE_TYPES]; /* each type's feature width, 0: none */
    int rel_src[GNN_MAX_RELATIONS], rel_dst[GNN_MAX_RELATIONS];
    char rel[GNN_MAX_RELATIONS][GNN_TYPE_NAME_MAX];
    int target;                          /* the labelled type, -1: none */
} gnn_graph_types_t;

/* The type of node v (binary search over off). */
int gnn_graph_types_of(const gnn_graph_types_t *t, int64_t v);
/* Check a types description against num_nodes: counts in range, offsets
 * monotone from 0 to num_nodes, names valid and distinct (relations may
 * share a name if their ends differ), relation ends and target in range.
 * 0 or GNN_EINVAL naming what (prefixed by what). */
int gnn_graph_types_check(const gnn_graph_types_t *t, int64_t num_nodes, const char *what);
/* Whether the len characters at s make a valid type or relation name: 1
 * to GNN_TYPE_NAME_MAX - 1 of [A-Za-z0-9_-]. */
int gnn_graph_type_name_ok(const char *s, size_t len);
/* The type called name, or -1. */
int gnn_graph_types_find(const gnn_graph_types_t *t, const char *name);
/* The largest feature width over the types. */
int64_t gnn_graph_types_max_feat(const gnn_graph_types_t *t);

/* The most classes a graph file's num_classes may name (2^24): far above
 * any node-classification dataset, far below an output layer that could
 * not be allocated. */
#define GNN_GRAPH_MAX_CLASSES ((int64_t)1 << 24)

/* What a graph file holds, as read from its attributes and dataset shapes. */
typedef struct {
    int64_t version;
    gnn_vid_t num_nodes;
    gnn_eid_t num_edges;     /* stored CSR entries */
    int directed;            /* 0: every edge is stored in both directions */
    unsigned csr_flags;      /* GNN_CSR_* promised by the writer */
    int64_t feat_dim;        /* 0 when the file has no features */
    int64_t num_classes;     /* 0 when the file has no labels */
    int has_weights;
    int has_labels;
    int has_orig_ids;
    int64_t split_size[GNN_NUM_SPLITS]; /* -1 when the split is absent */
    int64_t n_node_data;     /* arrays under node_data/ */
    char **node_data;        /* their names in name order, NULL when none; owned by the file
                                handle */
    int64_t link_size[GNN_NUM_LINK_SETS]; /* pairs per set, -1 when the file has none */
    int64_t link_neg_per_pos; /* K, 0 when absent */
    gnn_graph_types_t *types; /* version 2: the node and edge types (owned by the file
                                 handle); NULL for version 1. feat_dim is then the
                                 widest type's: feature rows are read padded to it */
} gnn_graph_info_t;

/* A whole graph in memory. Absent parts are NULL (splits and link sets:
 * size -1). */
typedef struct {
    gnn_csr_t csr;
    int directed;
    int64_t feat_dim;
    float *feat;          /* num_nodes x feat_dim, row-major */
    int64_t num_classes;
    int64_t *label;       /* num_nodes, -1 = unlabelled */
    gnn_vid_t *orig_id;   /* num_nodes: id in the source data */
    int64_t *split[GNN_NUM_SPLITS];
    int64_t split_size[GNN_NUM_SPLITS];
    int64_t *link[GNN_NUM_LINK_SETS]; /* link_size x 2, NULL when absent */
    int64_t link_size[GNN_NUM_LINK_SETS]; /* -1 when absent */
    int64_t link_neg_per_pos;             /* K, 0 when absent */
    /* A typed graph (format version 2); NULL for one type and relation. */
    gnn_graph_types_t *types;
    int32_t *etype;       /* nnz: the relation of each stored edge (with types) */
} gnn_graph_t;

/* Set every field to "absent" (NULL, sizes -1, counts 0). */
void gnn_graph_init(gnn_graph_t *g);
/* Free what g holds and re-initialise it. */
void gnn_graph_free(gnn_graph_t *g);

/* ---- Reading ------------------------------------------------------------ */

typedef struct gnn_graph_file gnn_graph_file_t;

/*
 * Open path and check its layout: an HDF5 file, format "gnn-graph", version
 * 1 or 2 (with its types, which must parse and cover the nodes), every
 * dataset of the right class, rank and shape for the counts in its
 * attributes, indptr starting at 0 and ending at num_edges, and link sets
 * (when present) all four, of shape (n, 2), with a neg_per_pos K >= 1 and
 * K times as many negatives as positives. Returns 0;
 * GNN_ENOENT (no such file), GNN_EFORMAT (not HDF5, another layout, a
 * wrong-shaped or truncated dataset), GNN_EVERSION (another format version),
 * GNN_EHDF5, GNN_ENOMEM; messages name the file. *out is NULL on failure.
 */
int gnn_graph_open(const char *path, gnn_graph_file_t **out);
/* Close and free; safe on NULL. */
void gnn_graph_close(gnn_graph_file_t *f);
const gnn_graph_info_t *gnn_graph_file_info(const gnn_graph_file_t *f);
const char *gnn_graph_file_path(const gnn_graph_file_t *f);

/* indptr entries [row0, row0 + nrows] (nrows + 1 values, absolute
 * offsets). GNN_EFORMAT when they decrease or leave [0, num_edges]. */
int gnn_graph_read_indptr(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_eid_t *out);
/* indices [e0, e0 + n); GNN_EFORMAT for an id outside [0, num_nodes). */
int gnn_graph_read_indices(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, gnn_vid_t *out);
/* weights [e0, e0 + n); GNN_EINVAL when the file has none. */
int gnn_graph_read_weights(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, float *out);
/*
 * The CSR of rows [row0, row0 + nrows): out->n_rows = nrows, n_cols =
 * num_nodes, indptr rebased to start at 0, weights when the file has them,
 * flags from the file (checked for the rows read). Allocates out's arrays.
 */
int gnn_graph_read_rows(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_csr_t *out);
/* Relations of edges [e0, e0 + n) of a typed file; GNN_EINVAL for a file
 * without types, GNN_EFORMAT for a relation outside [0, R). */
int gnn_graph_read_etypes(gnn_graph_file_t *f, gnn_eid_t e0, gnn_eid_t n, int32_t *out);
/* Feature rows [row0, row0 + nrows) into out (nrows x feat_dim). In a typed
 * file row v holds its type's features in its first feat_dim[type]
 * columns and zeros after them. */
int gnn_graph_read_feat(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, float *out);
/* Labels of rows [row0, row0 + nrows); GNN_EFORMAT for a label outside
 * [-1, num_classes). */
int gnn_graph_read_labels(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, int64_t *out);
/* Original ids of rows [row0, row0 + nrows). */
int gnn_graph_read_orig_ids(gnn_graph_file_t *f, gnn_vid_t row0, gnn_vid_t nrows, gnn_vid_t *out);
/* A whole split (allocated into *out, size in *n); GNN_EINVAL when absent,
 * GNN_EFORMAT for a node id outside [0, num_nodes) or named twice. */
int gnn_graph_read_split(gnn_graph_file_t *f, gnn_split_t which, int64_t **out, int64_t *n);
/* The splits (split[s] of size[s] ids in [0, n); size < 0 or NULL: absent)
 * name each node at most once over all of them: a node in two splits
 * (trained on and tested on) or twice in one is GNN_EFORMAT, the message
 * starting with where (a file's path) and naming the node as what (e.g.
 * "node", "owned node"). GNN_ENOMEM. */
int gnn_graph_splits_disjoint(const char *where, const char *what, int64_t *const split[],
                              const int64_t size[], int64_t n);

/* A whole link set (allocated into *out, n pairs of (src, dst), 2 * n
 * values); GNN_EINVAL when the file has no link sets, GNN_EFORMAT for an
 * id outside [0, num_nodes). */
int gnn_graph_read_link(gnn_graph_file_t *f, gnn_link_set_t which, int64_t **out, int64_t *n);
/*
 * The whole array node_data/NAME (allocated into *out, num_nodes x *ncols
 * values: int64_t when *is_int, else float). GNN_EINVAL when the file has
 * no such array, GNN_EFORMAT when it is not an integer or float array of
 * num_nodes rows and rank 1 (*ncols = 1) or 2.
 */
int gnn_graph_read_node_data(gnn_graph_file_t *f, const char *name, int *is_int, int64_t *ncols,
                             void **out);

/*
 * Read a whole file into g (initialised by the call) and check it: the CSR
 * structure and the sorted / deduplicated / self-loop flags it claims (the
 * symmetric flag is trusted), labels and splits in range, and link sets
 * with ids in range, each negative's src that of its positive and its dst
 * another node (whether a negative is a non-edge is not checked). Returns
 * 0 or GNN_EFORMAT naming the file for a violation (others as
 * gnn_graph_open). Node data arrays are not loaded. On failure g is left
 * initialised and empty.
 */
int gnn_graph_load(const char *path, gnn_graph_t *g);

/* ---- Writing ------------------------------------------------------------ */

typedef struct {
    gnn_vid_t num_nodes;
    gnn_eid_t num_edges;  /* -1: not known yet; edges are then appended in order and
                             the count is fixed by commit */
    int directed;
    unsigned csr_flags;
    int64_t feat_dim;     /* 0: no features */
    int has_weights;
    int has_labels;
    int64_t num_classes;  /* 0: max label + 1, computed from the labels put */
    int has_orig_ids;
    /* Node and edge types (version 2; copied by open), or NULL. feat_dim
     * must then be the widest type's (put_feat takes rows padded to it;
     * each type's first feat_dim[type] columns are kept), num_classes the
     * target type's classes; edges need their relations (put_etypes). */
    const gnn_graph_types_t *types;
} gnn_graph_header_t;

typedef struct gnn_graph_writer gnn_graph_writer_t;

/*
 * Start writing path (under a temporary name beside it). An existing path is
 * refused with GNN_EEXISTS unless overwrite is set.
 */
int gnn_graph_writer_open(const char *path, const gnn_graph_header_t *h, int overwrite,
                          gnn_graph_writer_t **out);
/* The header the writer was opened with. */
const gnn_graph_header_t *gnn_graph_writer_header(const gnn_graph_writer_t *w);
/* indptr entries [first, first + n) (n values; the whole array has
 * num_nodes + 1). Values must be monotone within the call and in
 * [0, num_edges]. */
int gnn_graph_writer_put_indptr(gnn_graph_writer_t *w, gnn_vid_t first, gnn_vid_t n,
                                const gnn_eid_t *v);
/* indices (and weights when the header has them, else NULL) [e0, e0 + n);
 * ids must be in [0, num_nodes). With num_edges = -1 in the header, e0 must
 * be the number of edges put so far (appending). */
int gnn_graph_writer_put_indices(gnn_graph_writer_t *w, gnn_eid_t e0, gnn_eid_t n,
                                 const gnn_vid_t *v, const float *weights);
int gnn_graph_writer_put_feat(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                              const float *v);
/* Relations of edges [e0, e0 + n) of a typed graph, each in [0, R); with
 * num_edges = -1, appended in order like the indices. */
int gnn_graph_writer_put_etypes(gnn_graph_writer_t *w, gnn_eid_t e0, gnn_eid_t n,
                                const int32_t *v);
/* Labels must be >= -1. */
int gnn_graph_writer_put_labels(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                                const int64_t *v);
int gnn_graph_writer_put_orig_ids(gnn_graph_writer_t *w, gnn_vid_t row0, gnn_vid_t nrows,
                                  const gnn_vid_t *v);
/*
 * An extra per-node array kept from the source (e.g. OGB's node_year), as
 * node_data/NAME: num_nodes x ncols, int64 when is_int (v is int64_t *)
 * else float32 (v is float *), written whole in one call.
 */
int gnn_graph_writer_put_node_data(gnn_graph_writer_t *w, const char *name, int is_int,
                                   int64_t ncols, const void *v);
/* A whole split; ids must be in [0, num_nodes). */
int gnn_graph_writer_put_split(gnn_graph_writer_t *w, gnn_split_t which, const int64_t *idx,
                               int64_t n);
/*
 * The four link sets of gnn_link_set_t, written whole in one call (at most
 * once per file): sets[s] holds n[s] pairs (src, dst), row-major. K =
 * neg_per_pos >= 1, n[*_NEG] = K * n[*_POS], and negative i * K + k of a
 * set has the src of positive i and a dst other than that src (GNN_EINVAL
 * otherwise); ids in [0, num_nodes) (GNN_EFORMAT otherwise, as for the
 * other puts). Nothing is written on failure; the file is committed with
 * the sets or not at all.
 */
int gnn_graph_writer_put_link(gnn_graph_writer_t *w, int64_t neg_per_pos,
                              const int64_t *const sets[GNN_NUM_LINK_SETS],
                              const int64_t n[GNN_NUM_LINK_SETS]);
/*
 * Check that every dataset was written whole (each range is meant to be put
 * once), write the closing attributes, close, and rename into place. Frees
 * w whatever the outcome; on failure the temporary file is removed.
 */
int gnn_graph_writer_commit(gnn_graph_writer_t *w);
/* Discard: close, remove the temporary file, free. Safe on NULL. */
void gnn_graph_writer_abort(gnn_graph_writer_t *w);

/* Write a whole in-memory graph (convenience over the writer); its link
 * sets when link_neg_per_pos > 0. */
int gnn_graph_write(const char *path, const gnn_graph_t *g, int overwrite);

#endif
