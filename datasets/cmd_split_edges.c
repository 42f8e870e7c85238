/*
 * gnn-dataset split-edges GRAPH -o OUT [--valid F] [--test F]
 * [--neg-per-pos K] [--seed S] [--force]: a copy of a graph file with a
 * share of its edges held out for link prediction (split_edges.h).
 * Defaults come from gnn_split_edges_defaults, so --help prints the values
 * actually used.
 */
#include "datasets/commands.h"
#include "datasets/convert.h"
#include "datasets/split_edges.h"
#include "graph/base/cli.h"
#include "graph/base/log.h"

#include <stddef.h>

typedef struct {
    gnn_split_edges_opts_t s;
    gnn_output_opts_t out;
} split_cmd_opts_t;

static const gnn_opt_t split_table[] = {
    {"output", 'o', GNN_OPT_STRING, offsetof(split_cmd_opts_t, out.path), "FILE",
     "graph file to write (required)"},
    {"force", 0, GNN_OPT_FLAG, offsetof(split_cmd_opts_t, out.force), NULL,
     "replace FILE if it exists"},
    {"valid", 0, GNN_OPT_DOUBLE, offsetof(split_cmd_opts_t, s.valid), "F",
     "share of the edges held out for validation, in (0, 1)"},
    {"test", 0, GNN_OPT_DOUBLE, offsetof(split_cmd_opts_t, s.test), "F",
     "share of the edges held out for test, in (0, 1); --valid + --test < 1"},
    {"neg-per-pos", 'k', GNN_OPT_I64, offsetof(split_cmd_opts_t, s.neg_per_pos), "K",
     "negatives drawn per held-out edge (non-edges from its source), at least 1"},
    {"seed", 's', GNN_OPT_I64, offsetof(split_cmd_opts_t, s.seed), "S",
     "random seed; the split depends only on the input and the options"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t split_cli = {
    .prog = "gnn-dataset split-edges",
    .args = "GRAPH",
    .summary = "Hold out edges of GRAPH for link prediction: remove a random share of its "
               "edges (both directions of an undirected edge) for validation and test, draw "
               "fixed negatives for each, and write the rest of the graph with the four link "
               "sets (link/valid_pos, valid_neg, test_pos, test_neg) to FILE.",
    .opts = split_table,
    .min_positional = 1,
    .max_positional = 1,
};

static int run_split(void *opts, char **pos, int npos)
{
    const split_cmd_opts_t *o = opts;
    gnn_split_edges_stats_t st;
    (void)npos;
    int rc = gnn_split_edges(pos[0], &o->s, &o->out, &st);
    if (rc < 0) return rc;
    GNN_INFO("wrote %s: %lld of %lld candidate %s edges held out (%lld valid, %lld test) with "
             "%lld negative%s each; %lld of %lld stored edges kept",
             o->out.path, (long long)(st.n_valid + st.n_test), (long long)st.candidates,
             st.undirected ? "undirected" : "directed", (long long)st.n_valid,
             (long long)st.n_test, (long long)o->s.neg_per_pos, o->s.neg_per_pos == 1 ? "" : "s",
             (long long)st.edges_out, (long long)st.edges_in);
    return 0;
}

int gnn_dataset_cmd_split_edges(int argc, char **argv)
{
    split_cmd_opts_t o = {0};
    gnn_split_edges_defaults(&o.s);
    return gnn_cli_run(&split_cli, argc, argv, 1, &o, run_split);
}
