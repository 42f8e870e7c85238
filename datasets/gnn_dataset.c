/*
 * gnn-dataset: turns what users have into one graph file, holds out edges
 * of a graph file for link prediction, and describes graph files. Dispatches to one subcommand per source or action; each has
 * its own options table and --help.
 */
#include "datasets/commands.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    const char *summary;
    int (*run)(int argc, char **argv);
} subcommand_t;

static const subcommand_t subcommands[] = {
    {"ogb", "convert an OGB node-property dataset (csv or npz layout)", gnn_dataset_cmd_ogb},
    {"edgelist", "convert an edge list (pairs of ids, optional weights)", gnn_dataset_cmd_edgelist},
    {"metis", "convert a METIS graph file", gnn_dataset_cmd_metis},
    {"generate", "generate a graph: sbm (learnable, with features), rmat, or hsbm (typed)", gnn_dataset_cmd_generate},
    {"split-edges", "hold out edges of a graph file for link prediction (with negatives)",
     gnn_dataset_cmd_split_edges},
    {"info", "describe a graph file (counts, features, classes, splits)", gnn_dataset_cmd_info},
};
#define N_SUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: gnn-dataset COMMAND [options] ...\n\ncommands:\n");
    for (size_t i = 0; i < N_SUBCOMMANDS; i++)
        fprintf(out, "  %-11s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(out, "\n'gnn-dataset COMMAND --help' lists the options of a command.\n");
}

int main(int argc, char **argv)
{
    gnn_log_set_prog("gnn-dataset");
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < N_SUBCOMMANDS; i++)
        if (!strcmp(argv[1], subcommands[i].name)) {
            char help[64];
            snprintf(help, sizeof help, "gnn-dataset %s", subcommands[i].name);
            /* A generator has its own options and help. */
            if (!strcmp(argv[1], "generate") && argc > 2 &&
                (!strcmp(argv[2], "sbm") || !strcmp(argv[2], "rmat") || !strcmp(argv[2], "hsbm")))
                snprintf(help, sizeof help, "gnn-dataset generate %s", argv[2]);
            return gnn_error_report("gnn-dataset", help, subcommands[i].run(argc - 1, argv + 1));
        }
    fprintf(stderr, "gnn-dataset: error: unknown command '%s' (see gnn-dataset --help)\n", argv[1]);
    return 2;
}
