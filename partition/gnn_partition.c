/*
 * gnn-partition: cut a graph file into K parts with halo nodes and write a
 * partition directory (partdir.h); --check verifies one against its graph,
 * --info summarises one. Every option maps to one field of opts_t; --help
 * lists them with their defaults.
 */
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/mpiutil.h"
#include "graph/base/progress.h"
#include "graph/base/tmpclean.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/mlpart.h"
#include "partition/partdir_mpi.h"
#include "partition/partdir.h"

#include "graph/base/alloc.h"

#include <inttypes.h>
#include <limits.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    int64_t k;
    const char *out;
    const char *method;
    const char *scheme;
    const char *balance;
    int halo_hops;
    int ufactor;
    int64_t seed;
    int force;
    const char *check;
    const char *info;
    int json;
    const char *graph; /* --check: the graph file instead of the one meta.h5 names */
    int64_t max_metis_edges;
    const char *mem_budget;
} opts_t;

#define O(field) offsetof(opts_t, field)

static const gnn_opt_t table[] = {
    {"parts", 'k', GNN_OPT_I64, O(k), "K", "number of parts"},
    {"output", 'o', GNN_OPT_STRING, O(out), "DIR", "partition directory to write"},
    {"method", 0, GNN_OPT_STRING, O(method), "M", "metis or random"},
    {"scheme", 0, GNN_OPT_STRING, O(scheme), "S",
     "METIS's scheme: kway, rb (recursive bisection), or best (both, keeping the lower edge "
     "cut)"},
    {"balance", 0, GNN_OPT_STRING, O(balance), "LIST",
     "what METIS balances across parts: any of nodes, edges (in-degree), train, ntypes "
     "(each node type's count: a typed graph) (default: nodes,edges,train, without train "
     "when the graph has no training nodes)"},
    {"halo-hops", 0, GNN_OPT_INT, O(halo_hops), "H", "hops of halo nodes kept with each part"},
    {"ufactor", 0, GNN_OPT_INT, O(ufactor), "U", "allowed imbalance in 1/1000 (30 = 3 %)"},
    {"seed", 0, GNN_OPT_I64, O(seed), "S", "METIS and random seed"},
    {"max-metis-edges", 0, GNN_OPT_I64, O(max_metis_edges), "M",
     "coarsen first when the undirected adjacency has more entries than this "
     "(default: 2^31-1, the limit of one 32-bit METIS call)"},
    {"mem-budget", 0, GNN_OPT_STRING, O(mem_budget), "SIZE",
     "memory per rank for partitioning (e.g. 8G); the graph is coarsened until METIS fits "
     "beside the rank's slice (default: no limit)"},
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
    .summary = "Cut a graph file into balanced parts with halo nodes (METIS k-way, coarsened "
               "first when the graph is beyond one METIS call, or random). Under mpirun the "
               "ranks share the partitioning and the writing.",
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
static int parse_balance(const char *s, int *nodes, int *edges, int *train, int *ntypes, char *buf,
                         size_t len)
{
    *nodes = *edges = *train = *ntypes = 0;
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
        else if (n == 6 && !strncmp(p, "ntypes", 6))
            *ntypes = 1;
        else
            return GNN_FAIL(GNN_EUSAGE,
                            "--balance \"%s\": expected a list of nodes, edges, train, ntypes", s);
        p += n;
        if (*p == ',') p++;
    }
    if (!*nodes && !*edges && !*train && !*ntypes)
        return GNN_FAIL(GNN_EUSAGE,
                        "--balance \"%s\": name at least one of nodes, edges, train, ntypes", s);
    snprintf(buf, len, "%s%s%s%s%s%s%s", *nodes ? "nodes" : "", *nodes && (*edges || *train) ? "," : "",
             *edges ? "edges" : "", *edges && *train ? "," : "", *train ? "train" : "",
             *ntypes && (*nodes || *edges || *train) ? "," : "", *ntypes ? "ntypes" : "");
    return 0;
}

static void phase_done(const char *what, double t0)
{
    GNN_INFO("%s (%.1f s, peak RSS %.0f MiB)", what, now_s() - t0,
             (double)gnn_mlpart_peak_rss() / 1048576.0);
}

/* The node types that hold nodes: one METIS constraint each under
 * --balance ntypes (an empty type would weigh 0 on every node, which
 * METIS refuses). */
static int typed_constraints(const gnn_graph_t *g)
{
    int c = 0;
    for (int t = 0; t < g->types->n_ntypes; t++) c += g->types->off[t + 1] > g->types->off[t];
    return c;
}

/* Vertex weights for METIS from the loaded graph: nodes, 1 + in-degree,
 * train membership, then one per node type that has nodes (ntypes: 1 on
 * its own type's), in that order, as --balance selects them. */
static int64_t *vertex_weights(const gnn_graph_t *g, int bn, int be, int bt, int nt)
{
    gnn_vid_t n = g->csr.n_rows;
    int T = nt ? g->types->n_ntypes : 0, ncon = bn + be + bt + (nt ? typed_constraints(g) : 0);
    int64_t *w = gnn_calloc((size_t)n * (size_t)ncon + 1, sizeof *w);
    if (!w) return NULL;
    for (gnn_vid_t v = 0; v < n; v++) {
        int c = 0;
        if (bn) w[v * ncon + c++] = 1;
        if (be) w[v * ncon + c++] = 1 + (g->csr.indptr[v + 1] - g->csr.indptr[v]);
    }
    if (bt)
        for (int64_t i = 0; i < g->split_size[GNN_SPLIT_TRAIN]; i++)
            w[g->split[GNN_SPLIT_TRAIN][i] * ncon + bn + be] = 1;
    for (int t = 0, c = bn + be + bt; t < T; t++) {
        if (g->types->off[t + 1] == g->types->off[t]) continue;
        for (gnn_vid_t v = g->types->off[t]; v < g->types->off[t + 1]; v++) w[v * ncon + c] = 1;
        c++;
    }
    return w;
}

/* One METIS call on the loaded graph's undirected view (or random parts).
 * Sets *multilevel instead when the view is beyond --max-metis-edges; g
 * stays loaded for writing either way. */
static int direct(const opts_t *o, const char *graph_path, gnn_graph_t *gp, int bn, int be, int bt,
                  int nt, int scheme, int32_t **part_out, int64_t *cut_out, int *used, int *multilevel)
{
    int rc = 0;
    gnn_csr_t sym = {0};
    int32_t *part = NULL;
    int64_t *w = NULL, cut = 0;
    int metis = !strcmp(o->method, "metis");
    double t0 = now_s();
    GNN_TRY(gnn_graph_load(graph_path, gp));
    GNN_CHECK(o->k <= gp->csr.n_rows, GNN_EINVAL,
              "-k %" PRId64 ": %s has only %" GNN_PRIvid " nodes", o->k, graph_path,
              gp->csr.n_rows);
    GNN_CHECK(!bt || (gp->split[GNN_SPLIT_TRAIN] && gp->split_size[GNN_SPLIT_TRAIN] > 0),
              GNN_EINVAL,
              "--balance train: %s has no training nodes (use --balance nodes,edges)",
              graph_path);
    GNN_CHECK(!nt || gp->types, GNN_EINVAL,
              "--balance ntypes: %s has no node types (a format version 2 graph)", graph_path);
    GNN_CHECK(!nt || bn + be + bt + typed_constraints(gp) <= GNN_PART_MAX_CON, GNN_EINVAL,
              "--balance ntypes: %s has %d node types with nodes, which with %d more balance "
              "constraints exceed METIS's %d (balance fewer)",
              graph_path, typed_constraints(gp), bn + be + bt, GNN_PART_MAX_CON);
    phase_done("loaded the graph", t0);
    GNN_INFO("%s: %" GNN_PRIvid " nodes, %" GNN_PRIeid " edges", graph_path, gp->csr.n_rows,
             gp->csr.nnz);
    t0 = now_s();
    GNN_TRY(gnn_part_undirected(&gp->csr, &sym));
    GNN_INFO("undirected view: %" GNN_PRIeid " adjacency entries", sym.nnz);
    phase_done("undirected view", t0);
    part = gnn_malloc_array((size_t)gp->csr.n_rows + 1, sizeof *part);
    GNN_CHECK(part, GNN_ENOMEM, "parts");
    t0 = now_s();
    if (!metis) {
        GNN_TRY(gnn_part_random(gp->csr.n_rows, (int)o->k, (uint64_t)o->seed, part));
        cut = gnn_part_edge_cut(&sym, part);
    } else if (sym.nnz <= o->max_metis_edges) {
        /* Nodes alone are METIS's own unit weights: none are passed then,
         * as gpmetis does. */
        int unit = bn && !be && !bt && !nt;
        w = unit ? NULL : vertex_weights(gp, bn, be, bt, nt);
        GNN_CHECK(unit || w, GNN_ENOMEM, "vertex weights");
        gnn_part_opts_t po = {.ncon = unit ? 0 : bn + be + bt + (nt ? typed_constraints(gp) : 0),
                              .vwgt = w,
                              .ufactor = o->ufactor, .seed = (uint64_t)o->seed, .scheme = scheme};
        GNN_TRY(gnn_part_metis(&sym, (int)o->k, &po, part, &cut, used));
        phase_done(scheme == GNN_PART_BEST ? "METIS k-way and recursive bisection" : "METIS", t0);
    } else {
        GNN_CHECK(!gp->types, GNN_EUNSUPPORTED,
                  "%s has node types and %" GNN_PRIeid " adjacency entries, beyond "
                  "--max-metis-edges %" PRId64 ": typed graphs are cut in one METIS call",
                  graph_path, sym.nnz, o->max_metis_edges);
        GNN_INFO("%" GNN_PRIeid " adjacency entries exceed --max-metis-edges %" PRId64
                 ": coarsening first",
                 sym.nnz, o->max_metis_edges);
        *multilevel = 1;
        gnn_free(part);
        part = NULL;
    }
    gnn_csr_free(&sym);
    *part_out = part;
    *cut_out = cut;
    part = NULL;
fail:
    gnn_csr_free(&sym);
    gnn_free(part);
    gnn_free(w);
    return rc;
}

/* Warn of empty parts (rank 0) and say what was cut. */
static int report_parts(const opts_t *o, gnn_vid_t n, const int32_t *part, int64_t cut, int used)
{
    int rc = 0, k = (int)o->k;
    int64_t *count = gnn_calloc((size_t)k, sizeof *count), empty = 0;
    GNN_CHECK(count, GNN_ENOMEM, "parts");
    for (gnn_vid_t v = 0; v < n; v++) count[part[v]]++;
    for (int p = 0; p < k; p++) empty += count[p] == 0;
    gnn_free(count);
    if (empty)
        GNN_WARN("%" PRId64 " of the %d parts are empty (too many parts for this graph)",
                 empty, k);
    GNN_INFO("%s%s into %d parts: edge cut %" PRId64, o->method,
             used == GNN_PART_KWAY ? " (k-way)" : used == GNN_PART_RB ? " (recursive bisection)" : "",
             k, cut);
fail:
    return rc;
}

/*
 * The partition directory: from the graph in memory on rank 0 (gp, loaded
 * by the direct path), or written by every rank from slices of the file
 * (gp NULL; part on rank 0 only, sent to the others here).
 */
static int write_dir(const opts_t *o, const char *graph_path, const gnn_graph_t *gp,
                     int32_t **part, int64_t cut, const char *balance, int used, int64_t budget,
                     int ranks, int levels)
{
    int rc = 0, rank = 0, logged = 0;
    double t0 = now_s();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *abs = realpath(graph_path, NULL); /* --check may run from elsewhere */
    gnn_partdir_meta_t meta = {
        .graph = abs ? abs : graph_path,
        .method = o->method,
        .balance = balance,
        .ufactor = o->ufactor,
        .seed = (uint64_t)o->seed,
        .halo_hops = o->halo_hops,
        .edge_cut = cut,
        .max_metis_edges = o->max_metis_edges,
        .mem_budget = budget,
        .ranks = ranks,
        .coarse_levels = levels,
        .scheme = gnn_part_scheme_name(used),
    };
    if (gp) {
        GNN_TRY(report_parts(o, gp->csr.n_rows, *part, cut, used));
        GNN_TRY(gnn_partdir_write(o->out, gp, *part, (int)o->k, &meta, o->force));
    } else {
        int64_t n = 0;
        gnn_graph_file_t *f = NULL;
        if (rank == 0) { /* mlpart read this file already: it opens */
            rc = gnn_graph_open(graph_path, &f);
            n = rc == 0 ? gnn_graph_file_info(f)->num_nodes : -1;
            gnn_graph_close(f);
            if (rc == 0) rc = report_parts(o, n, *part, cut, used);
            if (rc < 0) n = -1;
        }
        if (MPI_Bcast(&n, 1, MPI_INT64_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
            rc = GNN_FAIL(GNN_EMPI, "MPI_Bcast failed");
        if (rank > 0 && n < 0) rc = GNN_FAIL(GNN_EIO, "rank 0 failed to write %s", o->out);
        GNN_TRY(rc);
        if (rank > 0) {
            *part = gnn_alloc_large(((size_t)n + 1) * sizeof **part);
            /* Without the array this rank cannot take part: nothing else can stop the job. */
            if (!*part) {
                GNN_LOG_ERROR_("rank %d: out of memory for the parts of %" PRId64 " nodes", rank,
                               n);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        for (int64_t at = 0; at < n; at += 1 << 30) {
            int len = (int)(n - at < (1 << 30) ? n - at : (1 << 30));
            if (MPI_Bcast(*part + at, len, MPI_INT32_T, 0, MPI_COMM_WORLD) != MPI_SUCCESS) {
                rc = GNN_FAIL(GNN_EMPI, "MPI_Bcast failed");
                goto fail;
            }
        }
        /* The writing's own peak on every rank, beside the run's. */
        int64_t run_peak = gnn_mlpart_peak_rss(), w[2];
        int reset = gnn_mlpart_reset_peak_rss() == 0;
        gnn_partdir_mpi_opts_t wo = {.force = o->force, .mem_budget = budget};
        GNN_TRY(gnn_partdir_write_mpi(MPI_COMM_WORLD, o->out, graph_path, *part, (int)o->k, &meta,
                                      &wo));
        w[0] = gnn_mlpart_peak_rss();
        w[1] = w[0] > run_peak ? w[0] : run_peak;
        GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, &reset, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) ==
                          MPI_SUCCESS &&
                      MPI_Allreduce(MPI_IN_PLACE, w, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD) ==
                          MPI_SUCCESS,
                  GNN_EMPI, "MPI_Allreduce failed");
        if (rank == 0 && reset)
            GNN_INFO("wrote the partition directory (%.1f s, peak RSS %.0f MiB; while writing "
                     "at most %.0f MiB on a rank)",
                     now_s() - t0, (double)w[1] / 1048576.0, (double)w[0] / 1048576.0);
        logged = reset;
    }
    if (rank == 0 && !logged) phase_done("wrote the partition directory", t0);
fail:
    free(abs);
    return rc;
}

/*
 * Single rank without a budget: load the graph and cut its undirected view
 * with one METIS call when it fits, as gpmetis would. Under mpirun, with
 * --mem-budget, or when the view is beyond one call: the multilevel path
 * (mlpart.h), every rank working on its slice of the file.
 */
/* --force would replace the graph itself, or a directory that holds it:
 * refused, as the partition could never be read again. */
static int check_not_input(const char *out, const char *graph_path)
{
    char *o = realpath(out, NULL), *g = realpath(graph_path, NULL);
    int rc = 0;
    if (o && g) {
        size_t n = strlen(o);
        if (!strcmp(o, g))
            rc = GNN_FAIL(GNN_EUSAGE, "-o %s is the graph file: the partition would replace it",
                          out);
        else if (!strncmp(o, g, n) && (n == 1 || g[n] == '/'))
            rc = GNN_FAIL(GNN_EUSAGE,
                          "-o %s holds the graph file %s: the partition would replace it", out,
                          graph_path);
    }
    free(o);
    free(g);
    return rc;
}

/* What partition() takes from the options and the graph file's header,
 * checked before the long work. */
typedef struct {
    int64_t budget; /* --mem-budget bytes, 0: none */
    int bn, be, bt, nt, scheme;
    char balance[32];
} plan_t;

static int plan(const opts_t *o, const char *graph_path, int size, plan_t *p)
{
    int rc = 0;
    GNN_CHECK(o->out, GNN_EUSAGE, "-o DIR is required");
    GNN_CHECK(o->out[0], GNN_EUSAGE, "-o DIR is empty");
    GNN_CHECK(o->k >= 1 && o->k <= (1 << 20), GNN_EUSAGE, "-k %" PRId64 " outside [1, 2^20]",
              o->k);
    GNN_CHECK(!strcmp(o->method, "metis") || !strcmp(o->method, "random"), GNN_EUSAGE,
              "--method \"%s\" (expected metis or random)", o->method);
    p->scheme = gnn_part_scheme_from_name(o->scheme);
    GNN_CHECK(p->scheme >= 0, GNN_EUSAGE, "--scheme \"%s\" (expected kway, rb or best)", o->scheme);
    GNN_CHECK(o->halo_hops >= 1 && o->halo_hops <= GNN_PARTDIR_MAX_HOPS, GNN_EUSAGE,
              "--halo-hops %d outside [1, %d]", o->halo_hops, GNN_PARTDIR_MAX_HOPS);
    GNN_CHECK(o->ufactor >= 1 && o->ufactor <= 10000, GNN_EUSAGE,
              "--ufactor %d outside [1, 10000]", o->ufactor);
    GNN_CHECK(o->seed >= 0, GNN_EUSAGE, "--seed %" PRId64 " must be >= 0", o->seed);
    GNN_CHECK(o->max_metis_edges >= 1, GNN_EUSAGE, "--max-metis-edges %" PRId64 " must be >= 1",
              o->max_metis_edges);
    if (o->mem_budget) {
        GNN_TRY(gnn_parse_size(o->mem_budget, &p->budget));
        GNN_CHECK(p->budget > 0, GNN_EUSAGE, "--mem-budget \"%s\" must be positive", o->mem_budget);
    }
    GNN_TRY(parse_balance(o->balance ? o->balance : "nodes,edges,train", &p->bn, &p->be, &p->bt, &p->nt,
                          p->balance, sizeof p->balance));
    struct stat sb; /* refused before the long work, and again when writing */
    GNN_CHECK(stat(o->out, &sb) != 0 || o->force, GNN_EEXISTS,
              "%s exists (add --force to replace it)", o->out);
    GNN_TRY(check_not_input(o->out, graph_path));
    GNN_TRY(gnn_output_replaceable("-o", o->out, 1));
    { /* the directory -o goes in: there and writable, before the long work */
        char dir[PATH_MAX], what[PATH_MAX + 8];
        GNN_TRY(gnn_path_dir(o->out, dir, sizeof dir));
        snprintf(what, sizeof what, "-o %s", o->out);
        GNN_TRY(gnn_output_dir_check(what, dir));
    }
    if (!o->balance && p->bt) { /* the default balances training nodes only where there are some */
        gnn_graph_file_t *f = NULL;
        GNN_TRY(gnn_graph_open(graph_path, &f));
        if (gnn_graph_file_info(f)->split_size[GNN_SPLIT_TRAIN] <= 0) {
            p->bt = 0;
            snprintf(p->balance, sizeof p->balance, "nodes,edges");
        }
        gnn_graph_close(f);
    }
    { /* a typed graph is cut by one process, in one METIS call, for now */
        gnn_graph_file_t *f = NULL;
        GNN_TRY(gnn_graph_open(graph_path, &f));
        int typed = gnn_graph_file_info(f)->types != NULL;
        gnn_graph_close(f);
        GNN_CHECK(!typed || (size == 1 && !p->budget), GNN_EUNSUPPORTED,
                  "%s has node types: it is partitioned by one process without --mem-budget "
                  "(run gnn-partition without mpirun)",
                  graph_path);
    }
fail:
    return rc;
}

static int partition(const opts_t *o, const char *graph_path)
{
    int rc = 0, rank = 0, size = 1;
    gnn_graph_t g;
    gnn_graph_init(&g);
    int32_t *part = NULL;
    int64_t cut = 0;
    int multilevel = 0, levels = 0, used = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* Checked on every rank (each reads the file system itself: a node's
     * own -o, or a graph file only some see), then agreed, before the
     * first collective step. */
    plan_t pl;
    memset(&pl, 0, sizeof pl);
    rc = plan(o, graph_path, size, &pl);
    if (size > 1) rc = gnn_mpi_agree(MPI_COMM_WORLD, rc);
    GNN_TRY(rc);
    int metis = !strcmp(o->method, "metis");
    multilevel = metis && (size > 1 || pl.budget > 0);
    if (!metis) { /* nothing to balance: the checks of --balance do not apply */
        if (rank == 0 && (o->balance || strcmp(o->scheme, "best")))
            GNN_WARN("--scheme and --balance: ignored by --method random (every part gets a "
                     "share of nodes at random)");
        pl.bt = pl.nt = 0;
    }
    double t0 = now_s();
    if (rank == 0 && !multilevel)
        rc = direct(o, graph_path, &g, pl.bn, pl.be, pl.bt, pl.nt, pl.scheme, &part, &cut, &used,
                    &multilevel);
    if (size > 1) { /* rank 0's outcome, and whether it needs the multilevel path */
        int v[2] = {rc, multilevel};
        MPI_Bcast(v, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (v[0] < 0) {
            if (rank > 0) rc = GNN_FAIL(v[0], "rank 0 failed");
            goto fail;
        }
        multilevel = v[1];
    }
    GNN_TRY(rc);
    if (multilevel) {
        gnn_mlpart_opts_t mo = {
            .k = (int)o->k,
            .balance_nodes = pl.bn,
            .balance_edges = pl.be,
            .balance_train = pl.bt,
            .ufactor = o->ufactor,
            .seed = (uint64_t)o->seed,
            .max_metis_edges = o->max_metis_edges,
            .mem_budget = pl.budget,
            .scheme = pl.scheme,
        };
        gnn_mlpart_stats_t st;
        t0 = now_s();
        GNN_TRY(gnn_mlpart_run(MPI_COMM_WORLD, graph_path, &mo, &part, &st));
        cut = st.edge_cut;
        levels = st.levels;
        used = st.metis_scheme;
        if (rank == 0) {
            GNN_INFO("multilevel: %d coarse level%s, METIS on %" PRId64 " adjacency entries "
                     "(limit %" PRId64 "), cut %" PRId64 " after refinement",
                     levels, levels == 1 ? "" : "s", st.level[levels].entries,
                     st.target_entries, cut);
            phase_done("partitioned", t0);
            if (pl.budget > 0 && st.phase_rss[3] > pl.budget)
                GNN_WARN("peak RSS %.0f MiB passed --mem-budget %s",
                         (double)st.phase_rss[3] / 1048576.0, o->mem_budget);
        }
    }
    /* The graph is in memory only where the direct path loaded it, on a
     * single rank: it is written from there; otherwise every rank writes. */
    int spread = !g.csr.indptr;
    if (size > 1) { /* every rank: 0 when rank 0 holds the graph (direct path) */
        int all = 0;
        MPI_Allreduce(&spread, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        spread = all;
    }
    if (spread)
        rc = write_dir(o, graph_path, NULL, &part, cut, pl.balance, used, pl.budget, size, levels);
    else if (rank == 0)
        rc = write_dir(o, graph_path, &g, &part, cut, metis ? pl.balance : "-", used, pl.budget,
                       size, levels);
    if (!spread && size > 1) { /* every rank leaves with rank 0's verdict */
        int r0 = rc;
        MPI_Bcast(&r0, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (rank > 0 && r0 < 0) rc = GNN_FAIL(r0, "rank 0 failed to write %s", o->out);
    }
fail:
    gnn_free(part);
    gnn_graph_free(&g);
    return rc;
}

static int quiet;         /* this rank leaves the failure's report to another */
static int status = -1;   /* the exit status, once the report is printed */

static int entered;       /* run() was reached: the command line parsed */

static int run(void *opts, char **pos, int npos)
{
    const opts_t *o = opts;
    entered = 1;
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
    int rank = 0;
    /* Started without mpirun: one process needs no Open MPI daemon (quicker
     * to start, and no helper threads left at exit), nor the memory hooks
     * kept for network registration, which slow METIS's many allocations
     * (measured: 2 s of 31 s on an SBM graph of 1 M nodes). */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
        setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
        setenv("OMPI_MCA_memory", "^patcher", 0);
    }
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS) return GNN_FAIL(GNN_EMPI, "MPI_Init failed");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank > 0 && gnn_log_level() > GNN_LOG_WARN) gnn_log_set_level(GNN_LOG_WARN);
    int rc = partition(o, pos[0]);
    /* One rank reports a failure: the lowest one where it arose (the
     * others only learnt of it). */
    const char *m = gnn_error_message();
    int mine = rc < 0 && !strstr(m, "failed on rank") && strncmp(m, "rank 0 failed", 13) ? rank
                                                                                      : INT_MAX,
        first = INT_MAX;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (rc < 0 && first != INT_MAX && rank != first) quiet = 1;
    /* Printed before MPI_Finalize, which the other ranks wait in: mpirun
     * cannot end the job on their exit before the line is out. */
    if (rc < 0 && !quiet) {
        status = gnn_error_report("gnn-partition", NULL, rc);
        fflush(stderr);
    }
    MPI_Finalize();
    return rc;
}

int main(int argc, char **argv)
{
    gnn_log_set_prog("gnn-partition");
    opts_t o = {
        .k = 0,
        .method = "metis",
        .scheme = "best",
        .balance = NULL,
        .halo_hops = 1,
        .ufactor = 30,
        .seed = 0,
        .max_metis_edges = INT32_MAX,
    };
    int rc = gnn_cli_run(&cli, argc, argv, 1, &o, run);
    /* A command line that does not parse is refused before MPI starts: under
     * mpirun, rank 0 alone says so (every rank exits 2). */
    const char *wrank = getenv("OMPI_COMM_WORLD_RANK");
    if (!wrank) wrank = getenv("PMIX_RANK");
    if (rc < 0 && !entered && wrank && atoi(wrank) > 0) quiet = 1;
    if (quiet) return rc == GNN_EUSAGE ? 2 : 1;
    if (status >= 0) return status;
    return gnn_error_report("gnn-partition", NULL, rc);
}
