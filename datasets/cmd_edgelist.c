/*
 * gnn-dataset edgelist FILE -o OUT [--symmetrize] [--one-based] [--force]
 * [--mem-budget SIZE] [--tmpdir DIR]: an edge list (edgelist.h) into one
 * graph file.
 *
 * Two passes over FILE (ids, then edges) feed the builder; the graph file
 * is written only after both passes succeed, under a temporary name that
 * is renamed on commit, so a failure leaves no OUT behind.
 *
 * Without --symmetrize the graph is stored directed, rows sorted, and
 * repeated edges and self loops are kept as they are in the file (multi-
 * graphs stay multigraphs, as DGL keeps them). With --symmetrize every edge
 * is stored both ways and repeats are removed, self loops kept once; for an
 * edge given more than once with different weights the builder keeps one
 * (the first it meets), so give each edge once to control its weight. The
 * id set kept for renumbering counts against --mem-budget; the builder
 * gets the rest.
 */
#include "datasets/builder.h"
#include "datasets/commands.h"
#include "datasets/convert.h"
#include "datasets/edgelist.h"
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"

#include <stddef.h>
#include <sys/stat.h>

typedef struct {
    int symmetrize;
    int one_based;
    gnn_output_opts_t out;
} edgelist_cmd_opts_t;

static const gnn_opt_t edgelist_table[] = {
    GNN_OUTPUT_OPTIONS(edgelist_cmd_opts_t, out),
    {"symmetrize", 0, GNN_OPT_FLAG, offsetof(edgelist_cmd_opts_t, symmetrize), NULL,
     "add reverse edges and remove duplicates (store undirected)"},
    {"one-based", 0, GNN_OPT_FLAG, offsetof(edgelist_cmd_opts_t, one_based), NULL,
     "ids in FILE start at 1 (1 is subtracted; an id below 1 is an error)"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t edgelist_cli = {
    .prog = "gnn-dataset edgelist",
    .args = "FILE",
    .summary = "Convert an edge list ('src dst [weight]' per line, blanks or a comma between "
               "columns, '#' or '%' comments, plain or .gz) into a graph file. Integer ids are "
               "used as node ids when dense, else renumbered in order of appearance with the "
               "original ids kept.",
    .opts = edgelist_table,
    .min_positional = 1,
    .max_positional = 1,
};

static int convert(const char *path, const edgelist_cmd_opts_t *o)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_edgelist_t *el = NULL;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;
    gnn_edgelist_info_t in = {0};
    int reduced = 0; /* the builder's budget is less the id set's */
    gnn_edgelist_opts_t eo = {.one_based = o->one_based};

    GNN_TRY(gnn_output_check_input(&o->out, path));
    struct stat fst;
    GNN_CHECK(stat(path, &fst) != 0 || S_ISREG(fst.st_mode) || S_ISDIR(fst.st_mode), GNN_EINVAL,
              "%s: not a regular file (the edge list is read twice; give a file, not a pipe)",
              path);
    GNN_TRY(gnn_text_open(path, &t));
    GNN_TRY(gnn_edgelist_scan(t, &eo, &el));
    gnn_text_close(t);
    t = NULL;
    gnn_edgelist_get_info(el, &in);

    int64_t budget = o->out.mem_budget;
    if (budget > 0) {
        char need[32], have[32];
        GNN_CHECK(in.map_bytes < budget, GNN_ENOMEM,
                  "%s: renumbering its %lld distinct ids needs %s, more than --mem-budget %s",
                  path, (long long)in.distinct,
                  gnn_format_count(need, sizeof need, (double)in.map_bytes, "B"),
                  gnn_format_count(have, sizeof have, (double)budget, "B"));
        budget -= in.map_bytes;
    }
    gnn_builder_opts_t bo = {
        .num_nodes = in.num_nodes,
        .options = o->symmetrize ? GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE : GNN_BUILD_SORT,
        .has_weights = in.has_weights,
        .mem_budget = budget,
        .tmpdir = o->out.tmpdir,
        .threaded = 1,
    };
    reduced = budget < o->out.mem_budget;
    GNN_TRY(gnn_builder_open(&bo, &b));
    GNN_TRY(gnn_text_open(path, &t));
    GNN_TRY(gnn_edgelist_feed(el, t, b));
    gnn_text_close(t);
    t = NULL;

    gnn_graph_header_t h = {
        .num_nodes = in.num_nodes,
        .num_edges = -1, /* the builder decides, after deduplication */
        .directed = !o->symmetrize,
        .csr_flags = gnn_builder_csr_flags(b) | (o->symmetrize ? GNN_CSR_SYMMETRIC : 0u),
        .has_weights = in.has_weights,
        .has_orig_ids = in.remapped,
    };
    GNN_TRY(gnn_graph_writer_open(o->out.path, &h, o->out.force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    if (in.remapped)
        GNN_TRY(gnn_graph_writer_put_orig_ids(w, 0, in.num_nodes, gnn_edgelist_orig_ids(el)));
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    GNN_TRY(rc);

    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    if (in.remapped)
        GNN_INFO("%s: %lld distinct ids in [%lld, %lld] renumbered 0..%lld in order of "
                 "appearance; original ids kept in orig_id",
                 path, (long long)in.distinct, (long long)in.min_id, (long long)in.max_id,
                 (long long)in.num_nodes - 1);
    GNN_INFO("wrote %s: %lld nodes, %lld edges stored (%s)%s", o->out.path,
             (long long)in.num_nodes, (long long)st.num_edges,
             o->symmetrize ? "undirected" : "directed", in.has_weights ? ", weighted" : "");
fail:
    if (rc == GNN_ENOMEM && reduced) {
        /* The builder names the budget it was given: say where the rest went. */
        char used[32];
        gnn_error_prefix("%s: after %s of --mem-budget for renumbering ids", path,
                         gnn_format_count(used, sizeof used, (double)in.map_bytes, "B"));
    }
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    gnn_text_close(t);
    gnn_edgelist_free(el);
    return rc;
}

static int run_edgelist(void *opts, char **pos, int npos)
{
    (void)npos;
    return convert(pos[0], opts);
}

int gnn_dataset_cmd_edgelist(int argc, char **argv)
{
    edgelist_cmd_opts_t o = {0};
    return gnn_cli_run(&edgelist_cli, argc, argv, 1, &o, run_edgelist);
}
