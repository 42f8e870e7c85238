/*
 * Tests of partitioning past one METIS call across MPI ranks
 * (partition/mlpart.c), run by CTest under mpirun with 1, 2 and 4 ranks.
 *
 * Rank 0 writes the graph files (with the graph writer) into its temporary
 * directory and broadcasts the path; every rank then calls gnn_mlpart_run
 * on them. The main graph is planted: 8 dense clusters of 300 nodes joined
 * by a few bridges, stored directed (most edges in one direction only)
 * with self loops and repeated edges, and a training split skewed towards
 * two clusters. Its clusters are ranges of ids, so each rank's slice holds
 * whole clusters; a second file holds the same graph with its ids shuffled,
 * so every cluster is spread over all ranks, and a third a sparse graph
 * (2 edges per node, 85 % of them within 8 clusters) with shuffled ids.
 * Rank 0 also loads each file whole and cuts its undirected view with
 * gnn_part_metis, the serial reference.
 *
 *   - With max_metis_edges at the undirected entry count no level is built
 *     and the parts equal the serial METIS parts with the same vertex
 *     weights, seed and imbalance (nodes alone, and nodes + edges + train):
 *     the view assembled from the ranks' slices is exactly the serial view.
 *     One entry less forces a coarse level. A large --mem-budget changes
 *     nothing.
 *   - The planted edges in a file that says every edge is stored both
 *     ways (most are not), and stored both ways for real: each gives the
 *     planted view (the claim is checked before it is used) and so the
 *     serial METIS parts.
 *   - Forced coarsening (about an eighth of the entries): every node in
 *     [0, k), no part empty, the heaviest part within 1.10 n / k, the
 *     reported cut equal to the cut recomputed from the serial view and
 *     within 1.3x the serial METIS cut (and of the planted cut for k = 8),
 *     the level statistics consistent. The same on the shuffled ids, on
 *     the sparse graph, and under a 4 GiB --mem-budget, which may drop
 *     coarse levels (every rank the same ones).
 *   - Three constraints (nodes, 1 + in-degree, train), with and without
 *     coarsening: each constraint's heaviest part within 1.15x its mean.
 *   - Errors, the same code on every rank and no hang: a missing file
 *     (GNN_ENOENT), k outside [1, n] (GNN_EINVAL), a 1 MiB --mem-budget
 *     (GNN_ENOMEM, the message names --mem-budget), balancing training
 *     nodes of a file without a training split (GNN_EINVAL); *part is NULL.
 *   - The same options give the same parts, twice over.
 *
 * Every check's outcome is agreed across ranks before it can fail the
 * test, so all ranks leave a failing test at the same point and the
 * collective calls of the next one still match. Rank 0 prints the cuts and
 * imbalances; the other ranks print only failures. Prints its seed; set
 * GNN_TEST_SEED to replay another graph.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/mlpart.h"
#include "tests/common/mpitest.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define K_PLANTED 8
#define CLUSTER 300
#define N_NODES (K_PLANTED * CLUSTER)
#define MAX_K 16
#define UFACTOR 30
#define SEED 7

static int g_rank, g_size;
static char g_dir[512];     /* rank 0's temporary directory, on every rank */
static char g_notrain[640]; /* the planted graph without splits */
static char g_missing[640]; /* no such file */
static char g_liar[640];    /* the planted edges in a file that says every edge is stored both ways */
static char g_both[640];    /* the planted edges stored both ways, and said so */

/* A graph file and, on rank 0, its serial reference. */
typedef struct {
    const char *name;
    char path[640];
    int64_t entries;       /* undirected adjacency entries (on every rank) */
    gnn_graph_t g;         /* rank 0: the file loaded whole */
    gnn_csr_t view;        /* rank 0: its undirected view */
    int32_t truth[N_NODES]; /* rank 0: the planted cluster of each node */
} ref_t;

static ref_t g_planted = {.name = "planted"};  /* clusters are ranges of ids */
static ref_t g_shuffled = {.name = "shuffled"}; /* the same graph, ids shuffled */
static ref_t g_sparse = {.name = "sparse"};     /* weak clusters, ids shuffled */


static int64_t reduce(int64_t x, MPI_Op op)
{
    int64_t y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT64_T, op, MPI_COMM_WORLD);
    return y;
}

/* Arrays a test allocates, released by its teardown whether it passed or
 * a check failed (and left the test early). */
static void *g_held[16];
static int g_nheld;

static void *hold(void *p)
{
    if (p && g_nheld < 16) g_held[g_nheld++] = p;
    return p;
}

static int release(void **state)
{
    (void)state;
    for (int i = 0; i < g_nheld; i++) gnn_free(g_held[i]);
    g_nheld = 0;
    return 0;
}

/* ---- The graph files (rank 0) ----------------------------------------------- */

typedef struct {
    gnn_vid_t *src, *dst;
    gnn_eid_t m, cap;
} edges_t;

static int add_edge(edges_t *e, gnn_vid_t u, gnn_vid_t v)
{
    if (e->m == e->cap) {
        gnn_eid_t cap = e->cap ? 2 * e->cap : 4096;
        gnn_vid_t *s = realloc(e->src, (size_t)cap * sizeof *s);
        if (s) e->src = s;
        gnn_vid_t *d = realloc(e->dst, (size_t)cap * sizeof *d);
        if (d) e->dst = d;
        if (!s || !d) return GNN_ENOMEM;
        e->cap = cap;
    }
    e->src[e->m] = u;
    e->dst[e->m++] = v;
    return 0;
}

/* Write the edges (ids renamed by perm) and training nodes as a graph
 * file at path, marked directed unless undirected; no split when train is
 * NULL. */
static int write_file_as(const char *path, const edges_t *e, const gnn_vid_t *perm,
                         const int64_t *train, int64_t nt, int undirected)
{
    gnn_graph_t g;
    gnn_graph_init(&g);
    g.directed = !undirected;
    gnn_vid_t *src = malloc((size_t)e->m * sizeof *src), *dst = malloc((size_t)e->m * sizeof *dst);
    int rc = src && dst ? 0 : GNN_ENOMEM;
    for (gnn_eid_t i = 0; rc == 0 && i < e->m; i++) {
        src[i] = perm[e->src[i]];
        dst[i] = perm[e->dst[i]];
    }
    if (rc == 0) rc = gnn_csr_from_edges(N_NODES, e->m, src, dst, NULL, GNN_BUILD_SORT, &g.csr);
    free(src);
    free(dst);
    if (rc == 0 && train) {
        g.split[GNN_SPLIT_TRAIN] = gnn_malloc_array((size_t)nt, sizeof *train);
        if (!g.split[GNN_SPLIT_TRAIN]) rc = GNN_ENOMEM;
        for (int64_t i = 0; rc == 0 && i < nt; i++) g.split[GNN_SPLIT_TRAIN][i] = perm[train[i]];
        g.split_size[GNN_SPLIT_TRAIN] = nt;
    }
    if (rc == 0) rc = gnn_graph_write(path, &g, 1);
    gnn_graph_free(&g);
    return rc;
}

static int write_file(const char *path, const edges_t *e, const gnn_vid_t *perm,
                      const int64_t *train, int64_t nt)
{
    return write_file_as(path, e, perm, train, nt, 0);
}

/*
 * The planted graph: each node sends 8 edges to random nodes of its own
 * cluster, a quarter of them stored in both directions too, every 40th
 * stored twice; 20 self loops; 120 bridges between random nodes of two
 * different clusters. Training nodes: 30 % of clusters 0 and 1, 6 % of the
 * rest. Written with the split, without it, and with the split and ids
 * shuffled. Returns 0 or a GNN_E* code.
 */
static int write_graphs(uint64_t seed)
{
    uint64_t s = seed;
    edges_t e = {0};
    int rc = 0;
    for (gnn_vid_t v = 0; v < N_NODES && rc == 0; v++) {
        gnn_vid_t base = v / CLUSTER * CLUSTER;
        for (int j = 0; j < 8 && rc == 0; j++) {
            gnn_vid_t w = base + (gnn_vid_t)(tu_rng_next(&s) % CLUSTER);
            rc = add_edge(&e, v, w);
            if (rc == 0 && tu_rng_next(&s) % 4 == 0) rc = add_edge(&e, w, v);
            if (rc == 0 && e.m % 40 == 0) rc = add_edge(&e, v, w);
        }
    }
    for (int i = 0; i < 20 && rc == 0; i++) {
        gnn_vid_t v = (gnn_vid_t)(tu_rng_next(&s) % N_NODES);
        rc = add_edge(&e, v, v);
    }
    for (int i = 0; i < 120 && rc == 0; i++) {
        gnn_vid_t u = (gnn_vid_t)(tu_rng_next(&s) % N_NODES), v;
        do v = (gnn_vid_t)(tu_rng_next(&s) % N_NODES);
        while (v / CLUSTER == u / CLUSTER);
        rc = add_edge(&e, u, v);
    }
    static gnn_vid_t same[N_NODES], shuffle[N_NODES];
    static int64_t train[N_NODES];
    int64_t nt = 0;
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        same[v] = shuffle[v] = v;
        if (tu_rng_next(&s) % 100 < (v < 2 * CLUSTER ? 30u : 6u)) train[nt++] = v;
    }
    for (gnn_vid_t v = N_NODES - 1; v > 0; v--) { /* Fisher-Yates */
        gnn_vid_t j = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)(v + 1)), t = shuffle[v];
        shuffle[v] = shuffle[j];
        shuffle[j] = t;
    }
    if (rc == 0) rc = write_file(g_planted.path, &e, same, train, nt);
    if (rc == 0) rc = write_file(g_notrain, &e, same, NULL, 0);
    if (rc == 0) rc = write_file(g_shuffled.path, &e, shuffle, train, nt);
    if (rc == 0) rc = write_file_as(g_liar, &e, same, NULL, 0, 1);
    int64_t m = e.m;
    for (int64_t i = 0; i < m && rc == 0; i++) rc = add_edge(&e, e.dst[i], e.src[i]);
    if (rc == 0) rc = write_file_as(g_both, &e, same, NULL, 0, 1);
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        g_planted.truth[v] = (int32_t)(v / CLUSTER);
        g_shuffled.truth[shuffle[v]] = (int32_t)(v / CLUSTER);
        g_sparse.truth[shuffle[v]] = (int32_t)(v / CLUSTER);
    }
    /* The sparse graph: 2 edges out of each node, 85 % of them within its
     * cluster, ids shuffled the same way. */
    e.m = 0;
    for (gnn_vid_t v = 0; v < N_NODES && rc == 0; v++)
        for (int j = 0; j < 2 && rc == 0; j++) {
            gnn_vid_t w = tu_rng_next(&s) % 100 < 85
                              ? v / CLUSTER * CLUSTER + (gnn_vid_t)(tu_rng_next(&s) % CLUSTER)
                              : (gnn_vid_t)(tu_rng_next(&s) % N_NODES);
            rc = add_edge(&e, v, w);
        }
    if (rc == 0) rc = write_file(g_sparse.path, &e, shuffle, train, nt);
    free(e.src);
    free(e.dst);
    return rc;
}

/* Rank 0: load a file back and build its serial view. */
static int load_reference(ref_t *r)
{
    int rc = gnn_graph_load(r->path, &r->g);
    if (rc == 0) rc = gnn_part_undirected(&r->g.csr, &r->view);
    r->entries = r->view.nnz;
    return rc;
}

/* ---- The serial reference and part weights (rank 0) --------------------------- */

/* Vertex weights as mlpart forms them: nodes (1), edges (1 + in-degree of
 * the stored rows), train (1 for a training node), in that order. */
static int64_t *vertex_weights(const ref_t *r, int bn, int be, int bt)
{
    int ncon = bn + be + bt;
    const gnn_csr_t *a = &r->g.csr;
    int64_t *w = calloc((size_t)N_NODES * (size_t)ncon, sizeof *w);
    if (!w) return NULL;
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        int c = 0;
        if (bn) w[v * ncon + c++] = 1;
        if (be) w[v * ncon + c++] = 1 + (a->indptr[v + 1] - a->indptr[v]);
    }
    if (bt)
        for (int64_t i = 0; i < r->g.split_size[GNN_SPLIT_TRAIN]; i++)
            w[r->g.split[GNN_SPLIT_TRAIN][i] * ncon + ncon - 1] = 1;
    return w;
}

/* gnn_part_metis on the serial view with the weights and options o names;
 * parts allocated (held) into *part, the cut in *cut. */
static int serial_metis(const ref_t *r, const gnn_mlpart_opts_t *o, int32_t **part, int64_t *cut)
{
    int ncon = o->balance_nodes + o->balance_edges + o->balance_train;
    int64_t *w = vertex_weights(r, o->balance_nodes, o->balance_edges, o->balance_train);
    *part = hold(gnn_malloc_array(N_NODES, sizeof **part));
    int rc = w && *part ? 0 : GNN_ENOMEM;
    gnn_part_opts_t po = {.ncon = ncon, .vwgt = w, .adjwgt = NULL, .ufactor = o->ufactor,
                          .seed = o->seed};
    if (rc == 0) rc = gnn_part_metis(&r->view, o->k, &po, *part, cut, NULL);
    free(w);
    return rc;
}

/* The heaviest part of constraint c over its mean, for ncon constraints
 * of weights w (NULL: one weight of 1 per node); parts must be valid. */
static double heaviest(const int32_t *part, int k, const int64_t *w, int ncon, int c)
{
    int64_t size[MAX_K] = {0}, total = 0, top = 0;
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        int64_t x = w ? w[v * ncon + c] : 1;
        size[part[v]] += x;
        total += x;
    }
    for (int p = 0; p < k; p++) top = size[p] > top ? size[p] : top;
    return (double)top / ((double)total / k);
}

/* Every node in [0, k) and no part empty; else why says what is wrong. */
static int parts_valid(const int32_t *part, int k, char *why, size_t len)
{
    int64_t size[MAX_K] = {0};
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        if (part[v] < 0 || part[v] >= k) {
            snprintf(why, len, "node %" PRId64 " in part %d, outside [0, %d)", (int64_t)v,
                     part[v], k);
            return 0;
        }
        size[part[v]]++;
    }
    for (int p = 0; p < k; p++)
        if (size[p] == 0) {
            snprintf(why, len, "part %d of %d is empty", p, k);
            return 0;
        }
    return 1;
}

/* ---- Running the partitioner ------------------------------------------------- */

static gnn_mlpart_opts_t opts(int k, int bn, int be, int bt, int64_t max_metis_edges)
{
    gnn_mlpart_opts_t o = {.k = k, .balance_nodes = bn, .balance_edges = be, .balance_train = bt,
                           .ufactor = UFACTOR, .seed = SEED, .max_metis_edges = max_metis_edges};
    return o;
}

/* gnn_mlpart_run on every rank, which must succeed everywhere: parts on
 * rank 0 only, the same statistics on every rank. Returns rank 0's parts
 * (held). */
static int32_t *run_ok(const char *path, const gnn_mlpart_opts_t *o, gnn_mlpart_stats_t *st)
{
    int32_t *part = NULL;
    int rc = gnn_mlpart_run(MPI_COMM_WORLD, path, o, &part, st);
    hold(part);
    CHECK_ALL(rc == 0, "gnn_mlpart_run(%s, k=%d) returned %s: %s", path, o->k,
              gnn_error_name(rc), gnn_error_message());
    CHECK_ALL(g_rank == 0 ? part != NULL : part == NULL, "parts %s on rank %d",
              part ? "given" : "missing", g_rank);
    int64_t cut_lo = reduce(st->edge_cut, MPI_MIN), cut_hi = reduce(st->edge_cut, MPI_MAX);
    int64_t lev_lo = reduce(st->levels, MPI_MIN), lev_hi = reduce(st->levels, MPI_MAX);
    CHECK_ALL(cut_lo == cut_hi && lev_lo == lev_hi,
              "statistics differ across ranks: cut %" PRId64 "..%" PRId64 ", levels %" PRId64
              "..%" PRId64, cut_lo, cut_hi, lev_lo, lev_hi);
    return part;
}

/* gnn_mlpart_run on every rank, which must fail everywhere with want and
 * leave *part NULL; at least one rank's message names the cause, the
 * others say which rank failed. */
static void run_fails(const char *path, const gnn_mlpart_opts_t *o, int want, const char *cause)
{
    int32_t dummy = 0, *part = &dummy;
    gnn_mlpart_stats_t st;
    int rc = gnn_mlpart_run(MPI_COMM_WORLD, path, o, &part, &st);
    const char *m = gnn_error_message();
    CHECK_ALL(rc == want && part == NULL,
              "gnn_mlpart_run(%s, k=%d): %s (%s), parts %s; expected %s", path, o->k,
              gnn_error_name(rc), m, part ? "left" : "NULL", gnn_error_name(want));
    int names = strstr(m, cause) != NULL;
    CHECK_ALL(names || strstr(m, "failed on rank"), "message '%s' neither names '%s' nor the rank",
              m, cause);
    CHECK_ALL(reduce(names, MPI_MAX), "no rank's message names '%s' (this rank: '%s')", cause, m);
    if (g_rank == 0) print_message("%s: %s\n", gnn_error_name(rc), m);
}

/* ---- The view assembled from slices is the serial view ------------------------- */

static void test_no_coarsening_is_serial_metis(void **state)
{
    (void)state;
    const ref_t *r = &g_planted;
    static const int bal[2][3] = {{1, 0, 0}, {1, 1, 1}};
    for (int b = 0; b < 2; b++) {
        gnn_mlpart_opts_t o = opts(K_PLANTED, bal[b][0], bal[b][1], bal[b][2], r->entries);
        gnn_mlpart_stats_t st;
        int32_t *part = run_ok(r->path, &o, &st), *want = NULL;
        int64_t cut = -1;
        int rc = g_rank == 0 ? serial_metis(r, &o, &want, &cut) : 0;
        CHECK_ROOT(rc == 0, "serial METIS: %s", gnn_error_message());
        MPI_Bcast(&cut, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
        CHECK_ALL(st.levels == 0, "%d coarse levels with max_metis_edges = entries", st.levels);
        CHECK_ALL(st.level[0].nodes == N_NODES && st.level[0].entries == r->entries,
                  "level 0: %" PRId64 " nodes, %" PRId64 " entries; the view has %d, %" PRId64,
                  st.level[0].nodes, st.level[0].entries, N_NODES, r->entries);
        int64_t at = -1;
        if (g_rank == 0)
            for (gnn_vid_t v = 0; v < N_NODES && at < 0; v++)
                if (part[v] != want[v]) at = v;
        CHECK_ROOT(at < 0, "balance %d,%d,%d: node %" PRId64 " in part %d, serial METIS says %d",
                   bal[b][0], bal[b][1], bal[b][2], at, part[at], want[at]);
        CHECK_ALL(st.edge_cut == cut && st.metis_cut == cut,
                  "cut %" PRId64 " (METIS %" PRId64 "), serial METIS %" PRId64, st.edge_cut,
                  st.metis_cut, cut);
        if (g_rank == 0)
            print_message("%d rank(s), balance %d,%d,%d, no coarsening: cut %" PRId64
                          " = serial METIS; planted cut %" PRId64 "\n",
                          g_size, bal[b][0], bal[b][1], bal[b][2], st.edge_cut,
                          gnn_part_edge_cut(&r->view, r->truth));

        /* A budget far above what the graph needs changes nothing. */
        o.mem_budget = (int64_t)4 << 30;
        int32_t *again = run_ok(r->path, &o, &st);
        CHECK_ALL(st.levels == 0, "%d coarse levels under a 4 GiB budget", st.levels);
        CHECK_ROOT(!memcmp(again, want, N_NODES * sizeof *want),
                   "with --mem-budget 4G the parts differ from serial METIS");
    }

    /* One entry fewer than the view holds: coarsened. */
    gnn_mlpart_opts_t o = opts(K_PLANTED, 1, 0, 0, r->entries - 1);
    gnn_mlpart_stats_t st;
    run_ok(r->path, &o, &st);
    CHECK_ALL(st.levels >= 1 && st.level[st.levels].entries <= r->entries - 1,
              "max_metis_edges = entries - 1: %d levels, METIS on %" PRId64 " entries", st.levels,
              st.level[st.levels].entries);
}

/* A file that says every edge is stored both ways is taken as it is only
 * once that is verified: the liar (most edges stored one way) and the
 * honest file both give the planted graph's view, hence serial METIS's
 * parts on it. */
static void test_stored_both_ways(void **state)
{
    (void)state;
    const ref_t *r = &g_planted;
    gnn_mlpart_opts_t o = opts(K_PLANTED, 1, 0, 0, r->entries);
    int32_t *want = NULL;
    int64_t cut = -1;
    int rc = g_rank == 0 ? serial_metis(r, &o, &want, &cut) : 0;
    CHECK_ROOT(rc == 0, "serial METIS: %s", gnn_error_message());
    const char *files[2] = {g_liar, g_both};
    for (int f = 0; f < 2; f++) {
        gnn_mlpart_stats_t st;
        int32_t *part = run_ok(files[f], &o, &st);
        CHECK_ALL(st.level[0].entries == r->entries,
                  "%s: %" PRId64 " undirected entries, the planted view has %" PRId64,
                  f ? "stored both ways" : "claims both ways", st.level[0].entries, r->entries);
        CHECK_ROOT(!memcmp(part, want, N_NODES * sizeof *want),
                   "%s: the parts differ from serial METIS on the planted view",
                   f ? "stored both ways" : "claims both ways");
    }
}

/* ---- Forced coarsening -------------------------------------------------------- */

/* Partition r into k parts (node weights) with METIS allowed 1/div of its
 * entries, under mem_budget (0: none), and check the result. */
static void coarsened(const ref_t *r, int k, int div, int64_t mem_budget)
{
    int64_t limit = r->entries / div;
    gnn_mlpart_opts_t o = opts(k, 1, 0, 0, limit);
    o.mem_budget = mem_budget;
    gnn_mlpart_stats_t st;
    int32_t *part = run_ok(r->path, &o, &st), *direct = NULL;
    int64_t direct_cut = -1, cut = -1, planted = -1;
    double imb = 99.0;
    char why[128] = "";
    int valid = 1, rc = 0;
    if (g_rank == 0) {
        rc = serial_metis(r, &o, &direct, &direct_cut);
        valid = parts_valid(part, k, why, sizeof why);
        if (valid) imb = heaviest(part, k, NULL, 1, 0);
        cut = gnn_part_edge_cut(&r->view, part);
        planted = gnn_part_edge_cut(&r->view, r->truth);
        print_message("%d rank(s), %s, k=%d, max_metis_edges %" PRId64 " (1/%d)%s: %d levels, "
                      "METIS on %" PRId64 " nodes / %" PRId64 " entries (cut %" PRId64 "); cut %"
                      PRId64 ", serial METIS %" PRId64 " (ratio %.3f), planted %" PRId64
                      "; heaviest part %.3f x n/k\n",
                      g_size, r->name, k, limit, div, mem_budget ? ", 4 GiB budget" : "",
                      st.levels, st.level[st.levels].nodes, st.level[st.levels].entries,
                      st.metis_cut, st.edge_cut, direct_cut,
                      (double)st.edge_cut / (double)direct_cut, planted, imb);
    }
    CHECK_ROOT(rc == 0, "serial METIS: %s", gnn_error_message());
    CHECK_ALL(st.levels >= 1, "max_metis_edges %" PRId64 " of %" PRId64 " entries: no coarsening",
              limit, r->entries);
    CHECK_ROOT(valid, "%s", why);
    CHECK_ROOT(st.edge_cut == cut, "reported cut %" PRId64 ", recomputed %" PRId64, st.edge_cut,
               cut);
    CHECK_ROOT(imb <= 1.10, "heaviest part %.3f x n/k (bound 1.10)", imb);
    CHECK_ROOT((double)cut <= 1.3 * (double)direct_cut,
               "%s, k=%d: cut %" PRId64 " > 1.3 x serial METIS %" PRId64, r->name, k, cut,
               direct_cut);
    if (k == K_PLANTED)
        CHECK_ROOT((double)cut <= 1.3 * (double)planted,
                   "%s: cut %" PRId64 " > 1.3 x planted %" PRId64, r->name, cut, planted);
    /* The levels: the graph itself first, each smaller, the last within
     * the limit, refinement ending at the reported cut. */
    int consistent = st.level[0].nodes == N_NODES && st.level[0].entries == r->entries &&
                     st.target_entries == limit && st.level[st.levels].entries <= limit &&
                     st.level[st.levels].cut == st.metis_cut && st.level[0].cut == st.edge_cut;
    for (int l = 1; l <= st.levels; l++)
        consistent = consistent && st.level[l].nodes < st.level[l - 1].nodes &&
                     st.level[l].nodes >= k;
    CHECK_ALL(consistent, "level statistics: %d levels, target %" PRId64 ", the last %" PRId64
              " nodes / %" PRId64 " entries", st.levels, st.target_entries,
              st.level[st.levels].nodes, st.level[st.levels].entries);
}

/* One coarsening case: a graph, k, METIS allowed 1/div of its entries,
 * a budget (0: none). Each is a test of its own, so every case reports. */
typedef struct {
    const ref_t *graph;
    int k, div;
    int64_t mem_budget;
} coarse_case_t;

static void test_coarsened(void **state)
{
    const coarse_case_t *c = *state;
    coarsened(c->graph, c->k, c->div, c->mem_budget);
}

#define BUDGET ((int64_t)4 << 30)
/* The planted graph (whole clusters on each rank), the same with shuffled
 * ids (clusters spread over every rank), the sparse graph (weak clusters
 * spread over every rank: clustering within a slice finds little to
 * merge), then under a budget that holds everything, where coarse levels
 * past the reserve may be dropped (and then not refined) on every rank
 * alike; last, since ranks that disagree on which levels they dropped
 * abort the whole program. */
static const coarse_case_t g_cases[] = {
    {&g_planted, K_PLANTED, 8, 0},
    {&g_planted, 4, 8, 0},
    {&g_planted, 5, 6, 0},
    {&g_shuffled, K_PLANTED, 8, 0},
    {&g_shuffled, 4, 8, 0},
    {&g_sparse, 4, 4, 0},
    {&g_sparse, 2, 8, 0},
    {&g_planted, K_PLANTED, 8, BUDGET},
    {&g_shuffled, K_PLANTED, 8, BUDGET},
    {&g_sparse, 4, 4, BUDGET},
    {&g_sparse, 2, 8, BUDGET},
};
#define N_CASES (sizeof g_cases / sizeof g_cases[0])

/* ---- Three constraints ---------------------------------------------------------- */

static void test_three_constraints(void **state)
{
    (void)state;
    const ref_t *r = &g_planted;
    const int64_t limits[2] = {r->entries, r->entries / 8};
    static const char *const names[3] = {"nodes", "edges", "train"};
    for (int i = 0; i < 2; i++) {
        gnn_mlpart_opts_t o = opts(K_PLANTED, 1, 1, 1, limits[i]);
        gnn_mlpart_stats_t st;
        int32_t *part = run_ok(r->path, &o, &st);
        double imb[3] = {99.0, 99.0, 99.0};
        char why[128] = "";
        int valid = 1;
        int64_t cut = -1;
        if (g_rank == 0) {
            int64_t *w = vertex_weights(r, 1, 1, 1);
            valid = parts_valid(part, K_PLANTED, why, sizeof why);
            for (int c = 0; c < 3 && w && valid; c++) imb[c] = heaviest(part, K_PLANTED, w, 3, c);
            free(w);
            cut = gnn_part_edge_cut(&r->view, part);
            print_message("%d rank(s), nodes,edges,train, %d levels: cut %" PRId64 "; heaviest "
                          "part / mean: nodes %.3f, edges %.3f, train %.3f\n",
                          g_size, st.levels, st.edge_cut, imb[0], imb[1], imb[2]);
        }
        CHECK_ALL((i == 0) == (st.levels == 0), "max_metis_edges %" PRId64 ": %d levels",
                  limits[i], st.levels);
        CHECK_ROOT(valid, "%s", why);
        CHECK_ROOT(st.edge_cut == cut, "reported cut %" PRId64 ", recomputed %" PRId64,
                   st.edge_cut, cut);
        for (int c = 0; c < 3; c++)
            CHECK_ROOT(imb[c] <= 1.15, "%s: heaviest part %.3f x the mean (bound 1.15), %d levels",
                       names[c], imb[c], st.levels);
    }
}

/* ---- Errors ------------------------------------------------------------------ */

static void test_errors(void **state)
{
    (void)state;
    const int64_t limit = g_planted.entries / 8;
    gnn_mlpart_opts_t o = opts(K_PLANTED, 1, 0, 0, limit);
    run_fails(g_missing, &o, GNN_ENOENT, g_missing);

    gnn_mlpart_opts_t many = opts(N_NODES + 1, 1, 0, 0, limit);
    run_fails(g_planted.path, &many, GNN_EINVAL, "-k 2401");
    gnn_mlpart_opts_t none = opts(0, 1, 0, 0, limit);
    run_fails(g_planted.path, &none, GNN_EINVAL, "-k 0");

    gnn_mlpart_opts_t tiny = opts(K_PLANTED, 1, 0, 0, limit);
    tiny.mem_budget = (int64_t)1 << 20;
    run_fails(g_planted.path, &tiny, GNN_ENOMEM, "--mem-budget");

    gnn_mlpart_opts_t train = opts(K_PLANTED, 1, 0, 1, limit);
    run_fails(g_notrain, &train, GNN_EINVAL, "--balance train");

    /* And the next call works as before. */
    gnn_mlpart_stats_t st;
    run_ok(g_notrain, &o, &st);
}

/* ---- Determinism ---------------------------------------------------------------- */

static void test_same_options_same_parts(void **state)
{
    (void)state;
    gnn_mlpart_opts_t o = opts(K_PLANTED, 1, 1, 0, g_shuffled.entries / 8);
    gnn_mlpart_stats_t a, b;
    int32_t *pa = run_ok(g_shuffled.path, &o, &a);
    int32_t *pb = run_ok(g_shuffled.path, &o, &b);
    CHECK_ROOT(!memcmp(pa, pb, N_NODES * sizeof *pa), "two runs with seed %d differ", SEED);
    CHECK_ALL(a.edge_cut == b.edge_cut && a.levels == b.levels && a.metis_cut == b.metis_cut,
              "two runs: cut %" PRId64 " / %" PRId64 ", levels %d / %d", a.edge_cut, b.edge_cut,
              a.levels, b.levels);
}

/* ---- Setup ----------------------------------------------------------------------- */

static void remove_files(void)
{
    if (g_rank != 0) return;
    unlink(g_planted.path);
    unlink(g_shuffled.path);
    unlink(g_sparse.path);
    unlink(g_notrain);
    unlink(g_liar);
    unlink(g_both);
    rmdir(g_dir);
}

int main(int argc, char **argv)
{
    unsigned seed = 0;
    if (tu_mpi_start(&argc, &argv, &g_rank, &g_size, GNN_LOG_WARN, &seed, g_dir, sizeof g_dir)) return 1;
    gnn_graph_init(&g_planted.g);
    gnn_graph_init(&g_shuffled.g);
    gnn_graph_init(&g_sparse.g);
    int rc = 0;
    snprintf(g_planted.path, sizeof g_planted.path, "%s/planted.h5", g_dir);
    snprintf(g_shuffled.path, sizeof g_shuffled.path, "%s/shuffled.h5", g_dir);
    snprintf(g_sparse.path, sizeof g_sparse.path, "%s/sparse.h5", g_dir);
    snprintf(g_notrain, sizeof g_notrain, "%s/notrain.h5", g_dir);
    snprintf(g_missing, sizeof g_missing, "%s/missing.h5", g_dir);
    snprintf(g_liar, sizeof g_liar, "%s/liar.h5", g_dir);
    snprintf(g_both, sizeof g_both, "%s/both.h5", g_dir);
    if (g_rank == 0) {
        rc = write_graphs(seed);
        if (rc == 0) rc = load_reference(&g_planted);
        if (rc == 0) rc = load_reference(&g_shuffled);
        if (rc == 0) rc = load_reference(&g_sparse);
        if (rc < 0)
            fprintf(stderr, "setup: %s: %s\n", gnn_error_name(rc), gnn_error_message());
        else
            printf("planted graph: %d nodes, %" PRId64 " stored edges, %" PRId64
                   " undirected entries, %" PRId64 " training nodes\n",
                   N_NODES, (int64_t)g_planted.g.csr.nnz, g_planted.entries,
                   g_planted.g.split_size[GNN_SPLIT_TRAIN]);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(&g_planted.entries, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(&g_shuffled.entries, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Bcast(&g_sparse.entries, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);

    int failed = 1;
    if (rc == 0) {
        static char names[N_CASES][96];
        struct CMUnitTest tests[5 + N_CASES];
        size_t nt = 0;
        tests[nt++] = (struct CMUnitTest)cmocka_unit_test_teardown(
            test_no_coarsening_is_serial_metis, release);
        tests[nt++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_stored_both_ways, release);
        tests[nt++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_three_constraints, release);
        tests[nt++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_errors, release);
        tests[nt++] = (struct CMUnitTest)cmocka_unit_test_teardown(test_same_options_same_parts,
                                                                   release);
        for (size_t i = 0; i < N_CASES; i++) {
            const coarse_case_t *c = &g_cases[i];
            snprintf(names[i], sizeof names[i], "coarsened %s k=%d 1/%d%s", c->graph->name, c->k,
                     c->div, c->mem_budget ? " budget 4G" : "");
            tests[nt++] = (struct CMUnitTest){.name = names[i], .test_func = test_coarsened,
                                              .teardown_func = release,
                                              .initial_state = (void *)c};
        }
        failed = cmocka_run_group_tests(tests, NULL, NULL);
    }
    /* Every rank ran every test; the verdict is the worst of them. */
    failed = (int)reduce(failed, MPI_MAX);
    gnn_csr_free(&g_planted.view);
    gnn_csr_free(&g_shuffled.view);
    gnn_csr_free(&g_sparse.view);
    gnn_graph_free(&g_sparse.g);
    gnn_graph_free(&g_planted.g);
    gnn_graph_free(&g_shuffled.g);
    MPI_Barrier(MPI_COMM_WORLD);
    remove_files();
    MPI_Finalize();
    return failed ? 1 : 0;
}
