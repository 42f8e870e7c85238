/*
 * OGB node-property datasets (ogbn-arxiv, ogbn-products, ogbn-papers100M,
 * ogbn-mag and the like) into the graph file.
 *
 * Three layouts, told apart by what raw/ holds:
 *   csv: raw/edge.csv.gz ("src,dst", no header), raw/num-node-list.csv.gz,
 *        raw/num-edge-list.csv.gz, optional raw/node-feat.csv.gz (F floats
 *        a row), raw/node-label.csv.gz (one class a row; empty, nan or -1 =
 *        unlabelled), extra raw/node_NAME.csv.gz columns (kept as
 *        node_data/NAME);
 *   npz: raw/data.npz (edge_index int64 (2, E), node_feat (N, F),
 *        num_nodes_list, num_edges_list, node_year, ...) and
 *        raw/node-label.npz (node_label, NaN or -1 = unlabelled);
 *   typed csv (heterogeneous, ogbn-mag): raw/num-node-dict.csv.gz (a line
 *        of node type names, a line of their counts), raw/triplet-type-
 *        list.csv.gz (one "SRC,REL,DST" line a relation), per relation
 *        raw/relations/SRC___REL___DST/{edge,num-edge-list}.csv.gz (local
 *        ids of the two types), per type optional raw/node-feat/TYPE/
 *        node-feat.csv.gz and node_NAME.csv.gz columns, and the labels of
 *        exactly one type, raw/node-label/TYPE/node-label.csv.gz (the
 *        target type). Node i of type t becomes node off[t] + i, types in
 *        num-node-dict's order; the file is format version 2, each stored
 *        edge with its relation (graph_file.h).
 * Splits come from split/NAME/{train,valid,test}.csv.gz (typed: split/NAME/
 * TYPE/..., local ids of the target type), NAME defaulting to the only
 * folder under split/.
 *
 * Edges (src, dst) become in-edges of dst. The homogeneous layouts stream
 * everything: edges through the builder (builder.h), features and labels
 * in row blocks. The typed layout builds its CSR in memory (typed.h) and
 * streams the rest.
 */
#ifndef GNN_DATASETS_OGB_H
#define GNN_DATASETS_OGB_H

#include "datasets/convert.h"

typedef struct {
    const char *dir;       /* the dataset folder (holding raw/ and split/) */
    const char *split;     /* split folder name; NULL = the only one */
    int symmetrize;        /* add reverse edges, remove duplicates (homogeneous layouts) */
    int add_reverse;       /* typed layout: store each relation REL reversed too, as rev_REL */
    int allow_nan;         /* keep NaN / infinite features instead of refusing */
    int no_features;       /* leave the node features out (a featureless graph) */
    gnn_output_opts_t out;
} gnn_ogb_opts_t;

/* Convert; on failure no output file exists. Returns 0 or a GNN_E* code
 * with a message naming the file (and line) at fault. */
int gnn_ogb_convert(const gnn_ogb_opts_t *o);

/* The csv-layout parsers, exposed for the fuzz target: parse one line of
 * each file kind. Return 0 or GNN_EFORMAT / GNN_ERANGE (not recorded). */
int gnn__ogb_parse_edge(const char *line, size_t len, int64_t *src, int64_t *dst);
/* Parse up to cap comma-separated floats into v; *n = how many. On failure
 * *n is the index of the value at fault: GNN_ERANGE with *n = cap for a line
 * of more than cap values, with *n < cap for a value outside the float32
 * range. */
int gnn__ogb_parse_floats(const char *line, size_t len, float *v, int64_t cap, int64_t *n);

#endif
