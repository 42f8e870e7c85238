/*
 * gnn-dataset metis FILE -o OUT [--force] [--mem-budget SIZE] [--tmpdir
 * DIR]: a METIS graph file (metis.h) into one graph file.
 *
 * One pass over FILE checks every rule of the format and feeds the
 * builder; the graph file is written only after the whole input passed,
 * under a temporary name renamed on commit, so a failure leaves no OUT.
 * The graph is stored undirected (both directions, 2m entries) with rows
 * sorted, and flagged deduplicated, symmetric and free of self loops, all
 * three checked while reading. Edge weights (fmt xx1) become the weights
 * dataset; vertex sizes and weights are checked but not stored.
 */
#include "datasets/builder.h"
#include "datasets/commands.h"
#include "datasets/convert.h"
#include "datasets/metis.h"
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"

#include <stddef.h>

typedef struct {
    gnn_output_opts_t out;
} metis_cmd_opts_t;

static const gnn_opt_t metis_table[] = {
    GNN_OUTPUT_OPTIONS(metis_cmd_opts_t, out),
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t metis_cli = {
    .prog = "gnn-dataset metis",
    .args = "FILE",
    .summary = "Convert a METIS graph file (header 'n m [fmt [ncon]]', then one line of "
               "1-based neighbours per vertex; plain or .gz) into an undirected graph file. "
               "Edge weights are kept; vertex sizes and weights are checked, not stored.",
    .opts = metis_table,
    .min_positional = 1,
    .max_positional = 1,
};

static int convert(const char *path, const metis_cmd_opts_t *o)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;
    gnn_metis_header_t mh;
    gnn_metis_opts_t mo = {0};

    GNN_TRY(gnn_output_check_input(&o->out, path));
    GNN_TRY(gnn_text_open(path, &t));
    GNN_TRY(gnn_metis_read_header(t, &mo, &mh));
    gnn_builder_opts_t bo = {
        /* Counts grow with the ids met, not with the header's n: a huge n on
         * a short file fails as "expected n vertex lines", not for memory. */
        .num_nodes = -1,
        .num_nodes_hint = mh.num_nodes,
        .options = GNN_METIS_BUILD_OPTIONS,
        .has_weights = mh.has_edge_weights,
        .mem_budget = o->out.mem_budget,
        .tmpdir = o->out.tmpdir,
        .threaded = 1,
    };
    GNN_TRY(gnn_builder_open(&bo, &b));
    GNN_TRY(gnn_metis_read_adjacency(t, &mh, b));
    gnn_text_close(t);
    t = NULL;

    gnn_graph_header_t h = {
        .num_nodes = mh.num_nodes,
        .num_edges = -1, /* the builder counts */
        .directed = 0,
        .csr_flags = gnn_builder_csr_flags(b) | GNN_METIS_CSR_FLAGS,
        .has_weights = mh.has_edge_weights,
    };
    GNN_TRY(gnn_graph_writer_open(o->out.path, &h, o->out.force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    GNN_TRY(rc);

    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    if (mh.has_vertex_sizes || mh.has_vertex_weights)
        GNN_INFO("%s: vertex %s checked but not stored (the graph file has no place for them)",
                 path, mh.has_vertex_sizes && mh.has_vertex_weights ? "sizes and weights were"
                       : mh.has_vertex_sizes                        ? "sizes were"
                                                                    : "weights were");
    GNN_INFO("wrote %s: %lld nodes, %lld edges stored (%lld undirected)%s", o->out.path,
             (long long)mh.num_nodes, (long long)st.num_edges, (long long)mh.num_edges,
             mh.has_edge_weights ? ", weighted" : "");
fail:
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    gnn_text_close(t);
    return rc;
}

static int run_metis(void *opts, char **pos, int npos)
{
    (void)npos;
    return convert(pos[0], opts);
}

int gnn_dataset_cmd_metis(int argc, char **argv)
{
    metis_cmd_opts_t o = {0};
    return gnn_cli_run(&metis_cli, argc, argv, 1, &o, run_metis);
}
