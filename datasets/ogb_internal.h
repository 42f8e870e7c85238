/*
 * Shared between the two OGB layouts (ogb.c, ogb_npz.c): paths, split
 * reading and the npz-layout converter.
 */
#ifndef GNN_DATASETS_OGB_INTERNAL_H
#define GNN_DATASETS_OGB_INTERNAL_H

#include "datasets/builder.h"
#include "datasets/ogb.h"
#include "graph/graph_file.h"

#include <stddef.h>
#include <stdint.h>

/* buf = dir/rel; GNN_EINVAL when too long. */
int gnn__ogb_path(char *buf, size_t len, const char *dir, const char *rel);
/* A regular file exists at path. */
int gnn__ogb_exists(const char *path);
/* One node id a line, each in [0, n); allocated into *out. */
int gnn__ogb_read_index_csv(const char *path, gnn_vid_t n, int64_t **out, int64_t *count);
/* The split folder (want, or the only one under split/) into buf; "" when
 * the dataset has none. GNN_EUSAGE when several exist and none is chosen. */
int gnn__ogb_split_dir(const char *dir, const char *want, char *buf, size_t len);
/* The paths of the split folder's train, valid and test files (.csv.gz or
 * .csv); all "" when the dataset has no split/ folder. GNN_EUSAGE as
 * above, GNN_ENOENT for a missing folder or file. */
int gnn__ogb_split_files(const char *dir, const char *want, char paths[][4096]);
/* Read the split folder's train/valid/test into the writer. */
int gnn__ogb_write_splits(const char *dir, const char *want, gnn_vid_t n, gnn_graph_writer_t *w);
/* The edge builder both layouts use: n nodes, --symmetrize (reverse edges,
 * no repeats) or rows sorted with repeats kept, the output's memory budget. */
int gnn__ogb_builder_open(const gnn_ogb_opts_t *o, gnn_vid_t n, gnn_builder_t **b);
/* The npz layout (raw/data.npz, raw/node-label.npz). */
int gnn__ogb_convert_npz(const gnn_ogb_opts_t *o);

#endif
