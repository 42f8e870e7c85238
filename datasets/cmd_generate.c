/*
 * gnn-dataset generate GENERATOR [options]: write a generated graph file.
 *
 * One option table per generator (sbm, rmat), each with the shared output
 * options of convert.h; defaults come from gnn_sbm_defaults /
 * gnn_rmat_defaults, so --help prints the values actually used and
 * `gnn-dataset generate sbm --seed 1 -o FILE` is the demo graph.
 */
#include "datasets/commands.h"
#include "datasets/convert.h"
#include "datasets/generate.h"
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    gnn_sbm_opts_t g;
    gnn_output_opts_t out;
} sbm_cmd_opts_t;

typedef struct {
    gnn_rmat_opts_t g;
    gnn_output_opts_t out;
} rmat_cmd_opts_t;

static const gnn_opt_t sbm_table[] = {
    {"nodes", 'n', GNN_OPT_I64, offsetof(sbm_cmd_opts_t, g.nodes), "N", "number of nodes"},
    {"classes", 'c', GNN_OPT_INT, offsetof(sbm_cmd_opts_t, g.classes), "C",
     "planted communities, the node labels (at least 2)"},
    {"feat-dim", 'f', GNN_OPT_INT, offsetof(sbm_cmd_opts_t, g.feat_dim), "F",
     "features per node: class centroid plus Gaussian noise (0 = none)"},
    {"avg-degree", 'd', GNN_OPT_DOUBLE, offsetof(sbm_cmd_opts_t, g.avg_degree), "D",
     "mean number of neighbours (stored edges / N)"},
    {"homophily", 0, GNN_OPT_DOUBLE, offsetof(sbm_cmd_opts_t, g.homophily), "H",
     "fraction of edges joining two nodes of one class, in [0, 1]"},
    {"seed", 's', GNN_OPT_I64, offsetof(sbm_cmd_opts_t, g.seed), "S",
     "random seed; the graph depends only on the options and the seed"},
    GNN_OUTPUT_OPTIONS(sbm_cmd_opts_t, out),
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t sbm_cli = {
    .prog = "gnn-dataset generate sbm",
    .args = "",
    .summary = "Generate a learnable graph: planted classes with power-law-ish degrees and the "
               "given homophily, features = class centroid + noise, labels, and a random "
               "10% train / 10% valid / 80% test split.",
    .opts = sbm_table,
    .min_positional = 0,
    .max_positional = 0,
};

static const gnn_opt_t rmat_table[] = {
    {"scale", 0, GNN_OPT_INT, offsetof(rmat_cmd_opts_t, g.scale), "S",
     "2^S nodes, S in 1..40"},
    {"edge-factor", 'e', GNN_OPT_I64, offsetof(rmat_cmd_opts_t, g.edge_factor), "E",
     "E * 2^S edges generated, before symmetrising and deduplication"},
    {"feat-dim", 'f', GNN_OPT_INT, offsetof(rmat_cmd_opts_t, g.feat_dim), "F",
     "random N(0, 1) features per node (0 = none)"},
    {"seed", 's', GNN_OPT_I64, offsetof(rmat_cmd_opts_t, g.seed), "S",
     "random seed; the graph depends only on the options and the seed"},
    GNN_OUTPUT_OPTIONS(rmat_cmd_opts_t, out),
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t rmat_cli = {
    .prog = "gnn-dataset generate rmat",
    .args = "",
    .summary = "Generate a Graph500 R-MAT graph (A=0.57, B=C=0.19, D=0.05) with scrambled ids, "
               "stored undirected without duplicates or self loops; no labels.",
    .opts = rmat_table,
    .min_positional = 0,
    .max_positional = 0,
};

typedef struct {
    gnn_hsbm_opts_t g;
    gnn_output_opts_t out;
} hsbm_cmd_opts_t;

static const gnn_opt_t hsbm_table[] = {
    {"nodes", 'n', GNN_OPT_I64, offsetof(hsbm_cmd_opts_t, g.nodes), "N",
     "number of nodes over all types"},
    {"types", 't', GNN_OPT_INT, offsetof(hsbm_cmd_opts_t, g.types), "T",
     "node types t0 .. t(T-1); t0 holds the labels"},
    {"classes", 'c', GNN_OPT_INT, offsetof(hsbm_cmd_opts_t, g.classes), "C",
     "planted classes (the labels of t0)"},
    {"feat-dim", 'f', GNN_OPT_INT, offsetof(hsbm_cmd_opts_t, g.feat_dim), "F",
     "feature width of every type with features"},
    {"featureless", 0, GNN_OPT_INT, offsetof(hsbm_cmd_opts_t, g.featureless), "K",
     "the last K types have no features (learnable rows: gnn-train --embed-dim)"},
    {"avg-degree", 'd', GNN_OPT_DOUBLE, offsetof(hsbm_cmd_opts_t, g.avg_degree), "D",
     "edges of each relation per t0 node (t0 to t0: D / 2)"},
    {"homophily", 0, GNN_OPT_DOUBLE, offsetof(hsbm_cmd_opts_t, g.homophily), "H",
     "fraction of edges that follow their relation's class rule"},
    {"seed", 's', GNN_OPT_I64, offsetof(hsbm_cmd_opts_t, g.seed), "S",
     "random seed; the graph depends only on the options and the seed"},
    GNN_OUTPUT_OPTIONS(hsbm_cmd_opts_t, out),
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t hsbm_cli = {
    .prog = "gnn-dataset generate hsbm",
    .args = "",
    .summary = "Generate a typed graph (format version 2) whose labels are read through its "
               "relations: type t0 holds labels and noise features; relation rK joins a t0 node "
               "of class c to tK nodes of class c (K odd) or of the partner class c ^ 1 (K "
               "even), stored with its reverse rev_rK.",
    .opts = hsbm_table,
    .min_positional = 0,
    .max_positional = 0,
};

static int run_hsbm(void *opts, char **pos, int npos)
{
    hsbm_cmd_opts_t *o = opts;
    (void)pos;
    (void)npos;
    return gnn_generate_hsbm(&o->g, &o->out);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gnn-dataset generate GENERATOR [options] -o FILE\n\n"
            "Write a generated graph file. Generators:\n"
            "  sbm   learnable graph: planted classes, homophily, features, labels, split\n"
            "  rmat  Graph500 R-MAT graph with skewed degrees, optional random features\n"
            "  hsbm  typed graph (node types, relations) whose labels need the relations\n\n"
            "'gnn-dataset generate GENERATOR --help' lists the options of a generator.\n");
}

static int run_sbm(void *opts, char **pos, int npos)
{
    sbm_cmd_opts_t *o = opts;
    (void)pos;
    (void)npos;
    return gnn_generate_sbm(&o->g, &o->out);
}

static int run_rmat(void *opts, char **pos, int npos)
{
    rmat_cmd_opts_t *o = opts;
    (void)pos;
    (void)npos;
    return gnn_generate_rmat(&o->g, &o->out);
}

int gnn_dataset_cmd_generate(int argc, char **argv)
{
    if (argc < 2) return GNN_FAIL(GNN_EUSAGE, "missing generator: sbm, rmat or hsbm");
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "sbm")) {
        sbm_cmd_opts_t o;
        memset(&o, 0, sizeof o);
        gnn_sbm_defaults(&o.g);
        return gnn_cli_run(&sbm_cli, argc, argv, 2, &o, run_sbm);
    }
    if (!strcmp(name, "rmat")) {
        rmat_cmd_opts_t o;
        memset(&o, 0, sizeof o);
        gnn_rmat_defaults(&o.g);
        return gnn_cli_run(&rmat_cli, argc, argv, 2, &o, run_rmat);
    }
    if (!strcmp(name, "hsbm")) {
        hsbm_cmd_opts_t o;
        memset(&o, 0, sizeof o);
        gnn_hsbm_defaults(&o.g);
        return gnn_cli_run(&hsbm_cli, argc, argv, 2, &o, run_hsbm);
    }
    return GNN_FAIL(GNN_EUSAGE, "unknown generator '%s' (expected sbm, rmat or hsbm)", name);
}
