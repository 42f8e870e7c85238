/*
 * gnn-partition: cut a graph file into K parts with halo nodes and write a
 * partition directory (partdir.h); --check verifies one against its graph,
 * --info summarises one. Every option maps to one field of opts_t; --help
 * lists them with their defaults.
 */
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/partdir.h"

#include "graph/base/alloc.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct {
    int64_t k;
    const char *out;
    const char *method;
    const char *balance;
    int halo_hops;
    int ufactor;
    int64_t seed;
    int force;
    const char *check;
    const char *info;
    int json;
    const char *graph; /* --check: the graph file instead of the one meta.h5 names */
} opts_t;

#define O(field) offsetof(opts_t, field)

static const gnn_opt_t table[] = {
    {"parts", 'k', GNN_OPT_I64, O(k), "K", "number of parts"},
    {"output", 'o', GNN_OPT_STRING, O(out), "DIR", "partition directory to write"},
    {"method", 0, GNN_OPT_STRING, O(method), "M", "metis or random"},
    {"balance", 0, GNN_OPT_STRING, O(balance), "LIST",
     "what METIS balances across parts: any of nodes, edges (in-degree), train "
     "(default: all three, without train when the graph has no training nodes)"},
    {"halo-hops", 0, GNN_OPT_INT, O(halo_hops), "H", "hops of halo nodes kept with each part"},
    {"ufactor", 0, GNN_OPT_INT, O(ufactor), "U", "allowed imbalance in 1/1000 (30 = 3 %)"},
    {"seed", 0, GNN_OPT_I64, O(seed), "S", "METIS and random seed"},
    {"force", 0, GNN_OPT_FLAG, O(force), NULL, "replace an existing output directory"},
    {"check", 0, GNN_OPT_STRING, O(check), "DIR", "verify DIR against its graph file and exit"},
    {"info", 0, GNN_OPT_STRING, O(info), "DIR", "summarise DIR and exit"},
    {"json", 0, GNN_OPT_FLAG, O(json), NULL, "with --info: one JSON object"},
    {"graph", 0, GNN_OPT_STRING, O(graph), "FILE",
     "with --check: the graph file (default: the one the partition names)"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t cli = {
    .prog = "gnn-partition",
    .args = "GRAPH.h5",
    .summary = "Cut a graph file into balanced parts with halo nodes (METIS k-way or random).",
    .opts = table,
    .min_positional = 0,
    .max_positional = 1,
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* --balance "nodes,edges,train" into flags; the canonical spelling in buf. */
static int parse_balance(const char *s, int *nodes, int *edges, int *train, char *buf, size_t len)
{
    *nodes = *edges = *train = 0;
    const char *p = s;
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 5 && !strncmp(p, "nodes", 5))
            *nodes = 1;
        else if (n == 5 && !strncmp(p, "edges", 5))
            *edges = 1;
        else if (n == 5 && !strncmp(p, "train", 5))
            *train = 1;
        else
            return GNN_FAIL(GNN_EUSAGE, "--balance \"%s\": expected a list of nodes, edges, train",
                            s);
        p += n;
        if (*p == ',') p++;
    }
    if (!*nodes && !*edges && !*train)
        return GNN_FAIL(GNN_EUSAGE, "--balance \"%s\": name at least one of nodes, edges, train",
                        s);
    snprintf(buf, len, "%s%s%s%s%s", *nodes ? "nodes" : "", *nodes && (*edges || *train) ? "," : "",
             *edges ? "edges" : "", *edges && *train ? "," : "", *train ? "train" : "");
    return 0;
}

static int partition(const opts_t *o, const char *graph_path)
{
    int rc = 0;
    gnn_graph_t g;
    gnn_graph_init(&g);
    gnn_csr_t sym = {0};
    int32_t *part = NULL;
    int64_t *w = NULL;
    int bn, be, bt;
    char balance[32];
    GNN_CHECK(o->out, GNN_EUSAGE, "-o DIR is required");
    GNN_CHECK(o->k >= 1 && o->k <= (1 << 20), GNN_EUSAGE, "-k %" PRId64 " outside [1, 2^20]",
              o->k);
    GNN_CHECK(!strcmp(o->method, "metis") || !strcmp(o->method, "random"), GNN_EUSAGE,
              "--method \"%s\" (expected metis or random)", o->method);
    GNN_CHECK(o->halo_hops >= 1, GNN_EUSAGE, "--halo-hops %d must be >= 1", o->halo_hops);
    GNN_CHECK(o->halo_hops == 1, GNN_EUNSUPPORTED, "--halo-hops %d: only 1 hop so far",
              o->halo_hops);
    GNN_CHECK(o->ufactor >= 1 && o->ufactor <= 10000, GNN_EUSAGE,
              "--ufactor %d outside [1, 10000]", o->ufactor);
    GNN_CHECK(o->seed >= 0, GNN_EUSAGE, "--seed %" PRId64 " must be >= 0", o->seed);
    GNN_TRY(parse_balance(o->balance ? o->balance : "nodes,edges,train", &bn, &be, &bt, balance,
                          sizeof balance));
    struct stat sb; /* refused before the long work, and again when writing */
    GNN_CHECK(stat(o->out, &sb) != 0 || o->force, GNN_EEXISTS,
              "%s exists (add --force to replace it)", o->out);

    double t0 = now_s();
    GNN_TRY(gnn_graph_load(graph_path, &g));
    gnn_vid_t n = g.csr.n_rows;
    GNN_CHECK(o->k <= n, GNN_EINVAL, "-k %" PRId64 ": %s has only %" GNN_PRIvid " nodes", o->k,
              graph_path, n);
    int k = (int)o->k;
    if (!o->balance && bt && !(g.split[GNN_SPLIT_TRAIN] && g.split_size[GNN_SPLIT_TRAIN] > 0)) {
        bt = 0; /* the default balances training nodes only where there are some */
        snprintf(balance, sizeof balance, "nodes,edges");
    }
    GNN_INFO("%s: %" GNN_PRIvid " nodes, %" GNN_PRIeid " edges (loaded in %.1f s)", graph_path, n,
             g.csr.nnz, now_s() - t0);
    t0 = now_s();
    GNN_TRY(gnn_part_undirected(&g.csr, &sym));
    GNN_INFO("undirected view: %" GNN_PRIeid " adjacency entries (%.1f s)", sym.nnz, now_s() - t0);
    part = gnn_malloc_array((size_t)n, sizeof *part);
    GNN_CHECK(part, GNN_ENOMEM, "parts");
    int64_t cut = 0;
    t0 = now_s();
    if (!strcmp(o->method, "random")) {
        GNN_TRY(gnn_part_random(n, k, (uint64_t)o->seed, part));
        cut = gnn_part_edge_cut(&sym, part);
    } else {
        int ncon = bn + be + bt;
        if (bt)
            GNN_CHECK(g.split[GNN_SPLIT_TRAIN] && g.split_size[GNN_SPLIT_TRAIN] > 0, GNN_EINVAL,
                      "--balance train: %s has no training nodes (use --balance nodes,edges)",
                      graph_path);
        w = gnn_calloc((size_t)n * (size_t)ncon + 1, sizeof *w);
        GNN_CHECK(w, GNN_ENOMEM, "vertex weights");
        for (gnn_vid_t v = 0; v < n; v++) {
            int c = 0;
            if (bn) w[v * ncon + c++] = 1;
            if (be) w[v * ncon + c++] = 1 + (g.csr.indptr[v + 1] - g.csr.indptr[v]);
        }
        if (bt)
            for (int64_t i = 0; i < g.split_size[GNN_SPLIT_TRAIN]; i++)
                w[g.split[GNN_SPLIT_TRAIN][i] * ncon + ncon - 1] = 1;
        gnn_part_opts_t po = {.ncon = ncon, .vwgt = w, .ufactor = o->ufactor,
                              .seed = (uint64_t)o->seed};
        GNN_TRY(gnn_part_metis(&sym, k, &po, part, &cut));
    }
    {
        int64_t *count = gnn_calloc((size_t)k, sizeof *count), empty = 0;
        GNN_CHECK(count, GNN_ENOMEM, "parts");
        for (gnn_vid_t v = 0; v < n; v++) count[part[v]]++;
        for (int p = 0; p < k; p++) empty += count[p] == 0;
        gnn_free(count);
        if (empty)
            GNN_WARN("%" PRId64 " of the %d parts are empty (too many parts for this graph)",
                     empty, k);
    }
    GNN_INFO("%s into %d parts: edge cut %" PRId64 " of %" GNN_PRIeid " (%.1f s)", o->method, k,
             cut, sym.nnz / 2, now_s() - t0);
    gnn_csr_free(&sym);
    t0 = now_s();
    char *abs = realpath(graph_path, NULL); /* --check may run from elsewhere */
    gnn_partdir_meta_t meta = {
        .graph = abs ? abs : graph_path,
        .method = o->method,
        .balance = !strcmp(o->method, "metis") ? balance : "-",
        .ufactor = o->ufactor,
        .seed = (uint64_t)o->seed,
        .halo_hops = o->halo_hops,
        .edge_cut = cut,
    };
    rc = gnn_partdir_write(o->out, &g, part, k, &meta, o->force);
    free(abs);
    if (rc < 0) goto fail;
    GNN_INFO("wrote %s (%.1f s)", o->out, now_s() - t0);
fail:
    gnn_csr_free(&sym);
    gnn_free(part);
    gnn_free(w);
    gnn_graph_free(&g);
    return rc;
}

static int run(void *opts, char **pos, int npos)
{
    const opts_t *o = opts;
    if (o->check) {
        if (npos) return GNN_FAIL(GNN_EUSAGE, "--check DIR takes no graph argument (use --graph)");
        int rc = gnn_partdir_check(o->check, o->graph);
        if (rc == 0) GNN_INFO("%s: ok", o->check);
        return rc;
    }
    if (o->info) {
        if (npos) return GNN_FAIL(GNN_EUSAGE, "--info DIR takes no graph argument");
        return gnn_partdir_info(o->info, o->json, stdout);
    }
    if (npos != 1) return GNN_FAIL(GNN_EUSAGE, "GRAPH.h5 is required (or --check / --info DIR)");
    return partition(o, pos[0]);
}

int main(int argc, char **argv)
{
    gnn_log_set_prog("gnn-partition");
    opts_t o = {
        .k = 0,
        .method = "metis",
        .balance = NULL,
        .halo_hops = 1,
        .ufactor = 30,
        .seed = 0,
    };
    return gnn_error_report("gnn-partition", NULL, gnn_cli_run(&cli, argc, argv, 1, &o, run));
}
