/*
 * Shared between the three OGB layouts (ogb.c, ogb_npz.c, ogb_hetero.c):
 * paths, counts, the per-node csv files (features, labels, extra columns),
 * split reading, the layout converters gnn_ogb_convert dispatches to, and
 * the typed layout's line parsers (for tests/fuzz/fuzz_ogb_hetero.c).
 */
#ifndef GNN_DATASETS_OGB_INTERNAL_H
#define GNN_DATASETS_OGB_INTERNAL_H

#include "datasets/builder.h"
#include "datasets/ogb.h"
#include "datasets/textio.h"
#include "graph/graph_file.h"

#include <stddef.h>
#include <stdint.h>

/* buf = dir/rel; GNN_EINVAL when too long. */
int gnn__ogb_path(char *buf, size_t len, const char *dir, const char *rel);
/* A regular file exists at path. */
int gnn__ogb_exists(const char *path);
/* An optional input file: 1 when path is a file to read (or a link to
 * one), 0 when nothing is there; an error (recorded) when something is
 * there that is not a file to read (a dangling link, a directory) or the
 * path cannot be looked up (a folder without search permission). */
int gnn__ogb_probe(const char *path);
/* dir/raw/<base>.csv.gz, else dir/raw/<base>.csv, into buf; "" when
 * neither exists (base may name a subfolder: "relations/a___b___c/edge").
 * GNN_EINVAL when too long. */
int gnn__ogb_find_csv(char *buf, size_t len, const char *dir, const char *base);
/* The count in a num-*-list file: exactly one integer line, below the
 * graph file's limit; what names it in messages ("node count"). */
int gnn__ogb_read_count(const char *path, const char *what, int64_t *v);

/* Where the rows of a per-node file go: graph rows [row0, row0 + n); scope
 * ends the messages about their number ("" for the whole graph, " of type
 * 'paper'" for one node type). */
typedef struct {
    gnn_vid_t row0, n;
    const char *scope;
} gnn__ogb_rows_t;

/* Number of comma-separated fields of the first non-empty line of a
 * feature file; GNN_EFORMAT when it has none. */
int gnn__ogb_feature_width(const char *path, int64_t *f);
/* Feature rows (f floats each) into the writer's rows, each padded with
 * zeros to width >= f; exactly rows->n of them. NaN and infinities are
 * refused unless allow_nan. Errors name the file and line. */
int gnn__ogb_read_features_csv(const char *path, const gnn__ogb_rows_t *rows, int64_t f,
                               int64_t width, int allow_nan, gnn_graph_writer_t *w);
/* One class a row (empty, nan or -1 = unlabelled) into the writer's rows;
 * exactly rows->n of them (blank lines after the last are skipped). */
int gnn__ogb_read_labels_csv(const char *path, const gnn__ogb_rows_t *rows,
                             gnn_graph_writer_t *w);
/* An extra per-node file (node_year...): n rows of k numbers, allocated
 * into *out (n x k, NULL when n = 0); *integral when every value is an
 * integer. */
int gnn__ogb_read_column(const char *path, gnn_vid_t n, double **out, int64_t *ncols,
                         int *integral);
/* Store num_nodes x ncols values as node_data/NAME, int64 when integral,
 * else float32. */
int gnn__ogb_put_column(gnn_graph_writer_t *w, const char *name, int64_t ncols, int integral,
                        const double *v);
/* 1 and NAME into name when file is "node_NAME.csv.gz" or "node_NAME.csv",
 * else 0. */
int gnn__ogb_column_name(const char *file, char *name, size_t len);

/* One node id a line, each in [0, n); allocated into *out. */
int gnn__ogb_read_index_csv(const char *path, gnn_vid_t n, int64_t **out, int64_t *count);
/* The split folder (want, or the only one under split/) into buf; "" when
 * the dataset has none. GNN_EUSAGE when several exist and none is chosen. */
int gnn__ogb_split_dir(const char *dir, const char *want, char *buf, size_t len);
/* The paths of the split folder's train, valid and test files (.csv.gz or
 * .csv), in its subfolder sub when not NULL (the typed layout's
 * split/NAME/TYPE); all "" when the dataset has no split/ folder.
 * GNN_EUSAGE as above, GNN_ENOENT for a missing folder or file. */
int gnn__ogb_split_files(const char *dir, const char *want, const char *sub, char paths[][4096]);
/* Read the split files (as gnn__ogb_split_files finds them), ids in
 * [0, n), into the writer's splits as off + id. */
int gnn__ogb_write_splits(const char *dir, const char *want, const char *sub, gnn_vid_t off,
                          gnn_vid_t n, gnn_graph_writer_t *w);
/* The edge builder both homogeneous layouts use: n nodes, --symmetrize
 * (reverse edges, no repeats) or rows sorted with repeats kept, the
 * output's memory budget. */
int gnn__ogb_builder_open(const gnn_ogb_opts_t *o, gnn_vid_t n, gnn_builder_t **b);
/* The npz layout (raw/data.npz, raw/node-label.npz). */
int gnn__ogb_convert_npz(const gnn_ogb_opts_t *o);
/* The typed csv layout (raw/num-node-dict.csv.gz, ogbn-mag). */
int gnn__ogb_convert_hetero(const gnn_ogb_opts_t *o);

/* The typed layout's parsers (ogb_hetero.c), exposed for the fuzz target.
 * Both record GNN_EFORMAT naming the reader's FILE:LINE (or pass the
 * reader's own error on); on failure t may hold part of what was read. */
/* num-node-dict, read to its end: a line of 1 to GNN_MAX_NODE_TYPES
 * distinct type names, then a line of as many non-negative counts (blank
 * lines skipped), into t->n_ntypes, t->ntype and t->off (off[0] = 0,
 * off[n_ntypes] below GNN_GRAPH_MAX_COUNT). */
int gnn__ogb_parse_node_dict(gnn_text_t *tx, gnn_graph_types_t *t);
/* One non-empty "SRC,REL,DST" line of triplet-type-list (the reader's
 * current line), against the node types of t: appended as relation
 * t->n_rels, which grows by one. Refused: not three fields, an unknown
 * type, a relation name outside [A-Za-z0-9_-] or too long to take the
 * "rev_" prefix when add_reverse, a relation listed twice, more than
 * GNN_MAX_RELATIONS (half of them with add_reverse). */
int gnn__ogb_parse_triplet(gnn_text_t *tx, const char *line, size_t len, int add_reverse,
                           gnn_graph_types_t *t);

#endif
