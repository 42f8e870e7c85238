/*
 * gnn-dataset ogb DIR -o FILE [--split NAME] [--symmetrize | --add-reverse] [--allow-nan]
 * [--no-features] [--force] [--mem-budget SIZE] [--tmpdir DIR]: an OGB
 * node-property dataset folder (csv, npz or typed csv layout) into one
 * graph file (ogb.h).
 */
#include "datasets/commands.h"
#include "datasets/ogb.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"

#include <stddef.h>

typedef struct {
    const char *split;
    int symmetrize;
    int add_reverse;
    int allow_nan;
    int no_features;
    gnn_output_opts_t out;
} ogb_cmd_opts_t;

static const gnn_opt_t ogb_table[] = {
    GNN_OUTPUT_OPTIONS(ogb_cmd_opts_t, out),
    {"split", 0, GNN_OPT_STRING, offsetof(ogb_cmd_opts_t, split), "NAME",
     "split folder under DIR/split (default: the only one)"},
    {"symmetrize", 0, GNN_OPT_FLAG, offsetof(ogb_cmd_opts_t, symmetrize), NULL,
     "add reverse edges and remove duplicates (store undirected; one node type)"},
    {"add-reverse", 0, GNN_OPT_FLAG, offsetof(ogb_cmd_opts_t, add_reverse), NULL,
     "typed datasets (ogbn-mag): store every edge of relation REL reversed too, as relation "
     "rev_REL (store undirected)"},
    {"allow-nan", 0, GNN_OPT_FLAG, offsetof(ogb_cmd_opts_t, allow_nan), NULL,
     "keep NaN or infinite feature values instead of refusing the input"},
    {"no-features", 0, GNN_OPT_FLAG, offsetof(ogb_cmd_opts_t, no_features), NULL,
     "leave the node features out (train with learnable embeddings: gnn-train --embed-dim)"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t ogb_cli = {
    .prog = "gnn-dataset ogb",
    .args = "DIR",
    .summary = "Convert an OGB node-property dataset folder (raw/ in csv or npz layout, or the "
               "typed csv layout of ogbn-mag; split/) into a graph file.",
    .opts = ogb_table,
    .min_positional = 1,
    .max_positional = 1,
};

static int run_ogb(void *opts, char **pos, int npos)
{
    const ogb_cmd_opts_t *o = opts;
    gnn_ogb_opts_t g = {.dir = pos[0], .split = o->split, .symmetrize = o->symmetrize,
                        .add_reverse = o->add_reverse, .allow_nan = o->allow_nan,
                        .no_features = o->no_features, .out = o->out};
    (void)npos;
    return gnn_ogb_convert(&g);
}

int gnn_dataset_cmd_ogb(int argc, char **argv)
{
    ogb_cmd_opts_t o = {0};
    return gnn_cli_run(&ogb_cli, argc, argv, 1, &o, run_ogb);
}
