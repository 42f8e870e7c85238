/*
 * Tests of writing a partition directory across MPI ranks
 * (partition/partdir_mpi.c), run by CTest under mpirun with 1, 2 and 4
 * ranks.
 *
 * Rank 0 writes two graph files into its temporary directory: "full", a
 * directed graph of 3000 nodes with hubs (a few nodes receive and send
 * hundreds of edges), edge weights, 7 features, labels (some -1), and
 * train / valid / test splits; "bare", the same edges with repeats kept
 * and no weights, features, labels or splits. Every rank draws the same
 * assignment of nodes to parts. Rank 0 writes the directory from the
 * graph loaded whole (gnn_partdir_write, the reference), and all ranks
 * write it again from the file with gnn_partdir_write_mpi, with reads in
 * chunks of 4 KiB so that every reader answers over many rounds. The two
 * directories must hold the same files, and in them the same objects,
 * datasets (type, shape and bytes) and attributes (type and bytes); the
 * ranks' directory must pass gnn_partdir_check. Cases: 1, 2 and 3 hops of
 * halo; 1, 3 and 7 parts; a part left empty; one part with two hops (its
 * second hop empty); a memory budget so small that each rank writes its
 * parts one at a time, and budgets that take several parts at once once
 * the first group has shown what a part takes beyond its plan (1 and 2
 * hops).
 *
 * Errors, agreed by every rank with the same code and nothing left behind
 * (no directory, no temporary directory beside it): an existing directory
 * without force (GNN_EEXISTS; with force it is replaced), a missing graph
 * file (GNN_ENOENT), a part outside [0, k) (GNN_EINVAL), 9 hops of halo
 * (GNN_EINVAL).
 *
 * Every check's outcome is agreed across ranks before it can fail the
 * test, so all ranks leave a failing test together.
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
#include "partition/partdir.h"
#include "partition/partdir_mpi.h"
#include "tests/common/graphtest.h"
#include "tests/common/mpitest.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"

#include <dirent.h>
#include <hdf5.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_NODES 3000
#define FEAT_DIM 7
#define N_CLASSES 5
#define MAX_K 8

static int g_rank, g_size;
static unsigned g_seed;
static char g_dir[512];   /* rank 0's temporary directory, on every rank */
static char g_full[640];  /* weights, features, labels, splits */
static char g_bare[640];  /* repeated edges, nothing else */
static gnn_graph_t g_full_g, g_bare_g; /* rank 0: the files loaded whole */


/* ---- The graph files (rank 0) ----------------------------------------------- */

typedef uint64_t tr_rng_t;
static void tr_seed(tr_rng_t *r, uint64_t seed) { *r = seed; }
static uint64_t tr_below(tr_rng_t *r, uint64_t n) { return tu_rng_next(r) % n; }

static int write_graphs(unsigned seed)
{
    tr_rng_t r;
    tr_seed(&r, seed);
    int64_t m = 0, cap = (int64_t)N_NODES * 12;
    gnn_vid_t *src = malloc((size_t)cap * sizeof *src), *dst = malloc((size_t)cap * sizeof *dst);
    float *w = malloc((size_t)cap * sizeof *w);
    int rc = src && dst && w ? 0 : GNN_ENOMEM;
    for (gnn_vid_t v = 0; rc == 0 && v < N_NODES; v++) {
        int d = (int)tr_below(&r, 8); /* 0 .. 7 in-edges, some from hubs 0 .. 9 */
        for (int i = 0; i < d && m < cap; i++) {
            gnn_vid_t u = tr_below(&r, 3) == 0 ? (gnn_vid_t)tr_below(&r, 10)
                                               : (gnn_vid_t)tr_below(&r, N_NODES);
            src[m] = u;
            dst[m] = v;
            w[m++] = (float)tr_below(&r, 1000) / 7.0f;
        }
        if (v % 97 == 0) /* a few nodes receive hundreds of edges */
            for (int i = 0; i < 300 && m < cap; i++) {
                src[m] = (gnn_vid_t)tr_below(&r, N_NODES);
                dst[m] = v;
                w[m++] = 1.0f;
            }
    }
    gnn_graph_t g;
    gnn_graph_init(&g);
    if (rc == 0) rc = tu_graph_directed(&g, N_NODES, m, src, dst, w, FEAT_DIM, N_CLASSES);
    for (gnn_vid_t v = 0; rc == 0 && v < N_NODES; v++) {
        for (int j = 0; j < FEAT_DIM; j++)
            g.feat[v * FEAT_DIM + j] = (float)tr_below(&r, 100000) / 313.0f - 100.0f;
        g.label[v] = tr_below(&r, 10) == 0 ? -1 : (int64_t)tr_below(&r, N_CLASSES);
        int s = (int)tr_below(&r, 5); /* 0, 1: train; 2: valid; 3: test; 4: none */
        s = s < 2 ? GNN_SPLIT_TRAIN : s == 2 ? GNN_SPLIT_VALID : s == 3 ? GNN_SPLIT_TEST : -1;
        if (s >= 0) g.split[s][g.split_size[s]++] = v;
    }
    if (rc == 0) rc = gnn_graph_write(g_full, &g, 1);
    gnn_graph_free(&g);
    gnn_graph_init(&g);
    g.directed = 1;
    if (rc == 0) rc = gnn_csr_from_edges(N_NODES, m, src, dst, NULL, GNN_BUILD_SORT, &g.csr);
    if (rc == 0) rc = gnn_graph_write(g_bare, &g, 1);
    gnn_graph_free(&g);
    free(src);
    free(dst);
    free(w);
    if (rc == 0) rc = gnn_graph_load(g_full, &g_full_g);
    if (rc == 0) rc = gnn_graph_load(g_bare, &g_bare_g);
    return rc;
}

/* ---- Comparing two directories (rank 0) ---------------------------------------- */

static char g_diff[1200]; /* the first difference found */

static int same_attrs(hid_t a, hid_t b, const char *where)
{
    H5O_info_t ia, ib;
    if (H5Oget_info2(a, &ia, H5O_INFO_NUM_ATTRS) < 0 || H5Oget_info2(b, &ib, H5O_INFO_NUM_ATTRS) < 0)
        return snprintf(g_diff, sizeof g_diff, "%s: no object info", where), 0;
    if (ia.num_attrs != ib.num_attrs)
        return snprintf(g_diff, sizeof g_diff, "%s: %llu attributes against %llu", where,
                        (unsigned long long)ia.num_attrs, (unsigned long long)ib.num_attrs),
               0;
    for (hsize_t i = 0; i < ia.num_attrs; i++) {
        char name[128];
        hid_t x = H5Aopen_by_idx(a, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT);
        if (x < 0 || H5Aget_name(x, sizeof name, name) < 0) {
            if (x >= 0) H5Aclose(x);
            return snprintf(g_diff, sizeof g_diff, "%s: attribute %llu", where,
                            (unsigned long long)i), 0;
        }
        hid_t y = H5Aopen(b, name, H5P_DEFAULT);
        hid_t tx = H5Aget_type(x), ty = y >= 0 ? H5Aget_type(y) : -1;
        hid_t sx = H5Aget_space(x), sy = y >= 0 ? H5Aget_space(y) : -1;
        int ok = y >= 0 && H5Tequal(tx, ty) > 0 &&
                 H5Sget_simple_extent_npoints(sx) == H5Sget_simple_extent_npoints(sy);
        if (ok) {
            size_t bytes = H5Tget_size(tx) * (size_t)H5Sget_simple_extent_npoints(sx);
            char *bx = calloc(bytes + 1, 1), *by = calloc(bytes + 1, 1);
            ok = bx && by && H5Aread(x, tx, bx) >= 0 && H5Aread(y, ty, by) >= 0 &&
                 !memcmp(bx, by, bytes);
            free(bx);
            free(by);
        }
        if (!ok) snprintf(g_diff, sizeof g_diff, "%s: attribute %s differs", where, name);
        H5Sclose(sx);
        if (sy >= 0) H5Sclose(sy);
        H5Tclose(tx);
        if (ty >= 0) H5Tclose(ty);
        H5Aclose(x);
        if (y >= 0) H5Aclose(y);
        if (!ok) return 0;
    }
    return 1;
}

typedef struct {
    hid_t fb;
    const char *file;
    int ok;
    int64_t objects;
} visit_t;

static herr_t visit(hid_t fa, const char *name, const H5O_info_t *info, void *op)
{
    visit_t *v = op;
    char where[700];
    snprintf(where, sizeof where, "%s:/%s", v->file, name);
    v->objects++;
    hid_t a = H5Oopen(fa, name, H5P_DEFAULT), b = H5Oopen(v->fb, name, H5P_DEFAULT);
    int ok = a >= 0 && b >= 0;
    if (!ok) snprintf(g_diff, sizeof g_diff, "%s: missing", where);
    if (ok) ok = same_attrs(a, b, where);
    if (ok && info->type == H5O_TYPE_DATASET) {
        hid_t ta = H5Dget_type(a), tb = H5Dget_type(b), sa = H5Dget_space(a), sb = H5Dget_space(b);
        hsize_t da[4] = {0}, db[4] = {0};
        int ra = H5Sget_simple_extent_dims(sa, da, NULL), rb = H5Sget_simple_extent_dims(sb, db, NULL);
        ok = H5Tequal(ta, tb) > 0 && ra == rb && !memcmp(da, db, sizeof da);
        if (!ok) snprintf(g_diff, sizeof g_diff, "%s: type or shape differs", where);
        if (ok) {
            size_t bytes = H5Tget_size(ta) * (size_t)H5Sget_simple_extent_npoints(sa);
            char *bx = calloc(bytes + 1, 1), *by = calloc(bytes + 1, 1);
            ok = bx && by && (bytes == 0 || (H5Dread(a, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, bx) >= 0 &&
                                            H5Dread(b, tb, H5S_ALL, H5S_ALL, H5P_DEFAULT, by) >= 0 &&
                                            !memcmp(bx, by, bytes)));
            if (!ok) snprintf(g_diff, sizeof g_diff, "%s: contents differ", where);
            free(bx);
            free(by);
        }
        H5Tclose(ta);
        H5Tclose(tb);
        H5Sclose(sa);
        H5Sclose(sb);
    }
    if (a >= 0) H5Oclose(a);
    if (b >= 0) H5Oclose(b);
    if (!ok) v->ok = 0;
    return ok ? 0 : 1;
}

static herr_t count_obj(hid_t f, const char *name, const H5O_info_t *info, void *op)
{
    (void)f;
    (void)name;
    (void)info;
    ++*(int64_t *)op;
    return 0;
}

/* The same objects, datasets and attributes in file name of dirs a and b. */
static int same_file(const char *da, const char *db, const char *name)
{
    char pa[800], pb[800];
    snprintf(pa, sizeof pa, "%s/%s", da, name);
    snprintf(pb, sizeof pb, "%s/%s", db, name);
    hid_t fa = H5Fopen(pa, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t fb = H5Fopen(pb, H5F_ACC_RDONLY, H5P_DEFAULT);
    visit_t v = {.fb = fb, .file = name, .ok = fa >= 0 && fb >= 0};
    int64_t nb = 0;
    if (!v.ok) snprintf(g_diff, sizeof g_diff, "%s: cannot open in both", name);
    if (v.ok) H5Ovisit2(fa, H5_INDEX_NAME, H5_ITER_INC, visit, &v, H5O_INFO_BASIC);
    if (v.ok) H5Ovisit2(fb, H5_INDEX_NAME, H5_ITER_INC, count_obj, &nb, H5O_INFO_BASIC);
    if (v.ok && nb != v.objects) {
        snprintf(g_diff, sizeof g_diff, "%s: %" PRId64 " objects against %" PRId64, name,
                 v.objects, nb);
        v.ok = 0;
    }
    if (fa >= 0) H5Fclose(fa);
    if (fb >= 0) H5Fclose(fb);
    return v.ok;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* Entries of g_dir whose name starts with prefix and holds ".tmp-". */
static int leftovers(const char *prefix)
{
    DIR *d = opendir(g_dir);
    int n = 0;
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix)) && strstr(e->d_name, ".tmp-")) n++;
    closedir(d);
    return n;
}

static int same_dirs(const char *da, const char *db, int k)
{
    g_diff[0] = '\0';
    int na = count_entries(da), nb = count_entries(db);
    if (na != k + 1 || nb != k + 1) {
        snprintf(g_diff, sizeof g_diff, "%d and %d files, expected %d", na, nb, k + 1);
        return 0;
    }
    if (!same_file(da, db, "meta.h5")) return 0;
    for (int p = 0; p < k; p++) {
        char name[32];
        snprintf(name, sizeof name, "part-%05d.h5", p);
        if (!same_file(da, db, name)) return 0;
    }
    return 1;
}

/* ---- The cases ------------------------------------------------------------------- */

/* The edge cut of part on g, as meta.h5 records it; -1 on failure. */
static int64_t edge_cut(const gnn_graph_t *g, const int32_t *part)
{
    gnn_csr_t sym = {0};
    if (gnn_part_undirected(&g->csr, &sym) < 0) return -1;
    int64_t cut = gnn_part_edge_cut(&sym, part);
    gnn_csr_free(&sym);
    return cut;
}

static void draw_parts(int32_t *part, int k, int empty, unsigned salt)
{
    tr_rng_t r;
    tr_seed(&r, g_seed * 31u + salt);
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        int p = (int)tr_below(&r, (uint64_t)k);
        if (empty && p == k - 1) p = 0;
        part[v] = p;
    }
}

typedef struct {
    const char *graph; /* "full" or "bare" */
    int k, hops, empty;
    int64_t budget;
} write_case_t;

static const write_case_t g_cases[] = {
    {"full", 1, 1, 0, 0}, {"full", 3, 1, 0, 0},        {"full", 7, 2, 0, 0},
    {"full", 4, 3, 0, 0}, {"full", 5, 2, 1, 0},        {"full", 7, 2, 0, 1},
    {"bare", 3, 1, 0, 0}, {"bare", 6, 2, 0, 1 << 20}, {"full", 1, 2, 0, 0},
    {"full", 9, 2, 0, 1 << 20}, {"full", 9, 1, 0, 300 << 10},
};
#define N_CASES (sizeof g_cases / sizeof g_cases[0])

static void test_same_as_serial(void **state)
{
    const write_case_t *c = *state;
    int32_t part[N_NODES];
    static unsigned salt;
    draw_parts(part, c->k, c->empty, ++salt);
    const char *path = !strcmp(c->graph, "full") ? g_full : g_bare;
    char ref[700], out[700];
    snprintf(ref, sizeof ref, "%s/ref-%s-%d-%d-%u", g_dir, c->graph, c->k, c->hops, salt);
    snprintf(out, sizeof out, "%s/out-%s-%d-%d-%u", g_dir, c->graph, c->k, c->hops, salt);
    int64_t cut = g_rank == 0 ? edge_cut(!strcmp(c->graph, "full") ? &g_full_g : &g_bare_g, part)
                              : 0;
    MPI_Bcast(&cut, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    CHECK_ALL(cut >= 0, "edge cut: %s", gnn_error_message());
    gnn_partdir_meta_t meta = {.graph = path, .method = "random", .balance = "-", .ufactor = 30,
                               .seed = 5, .halo_hops = c->hops, .edge_cut = cut,
                               .max_metis_edges = 1000, .mem_budget = c->budget,
                               .ranks = g_size, .coarse_levels = 2};
    int rc = 0;
    if (g_rank == 0)
        rc = gnn_partdir_write(ref, !strcmp(c->graph, "full") ? &g_full_g : &g_bare_g, part, c->k,
                               &meta, 0);
    CHECK_ROOT(rc == 0, "reference: %s", gnn_error_message());
    gnn_partdir_mpi_opts_t o = {.chunk_bytes = 4096, .mem_budget = c->budget};
    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, out, path, part, c->k, &meta, &o);
    CHECK_ALL(rc == 0, "write_mpi: %s: %s", gnn_error_name(rc), gnn_error_message());
    int same = g_rank != 0 || same_dirs(ref, out, c->k);
    CHECK_ROOT(same, "%s k=%d hops=%d: %s", c->graph, c->k, c->hops, g_diff);
    rc = g_rank == 0 ? gnn_partdir_check(out, NULL) : 0;
    CHECK_ROOT(rc == 0, "check: %s", gnn_error_message());
    CHECK_ROOT(leftovers("out-") == 0, "a temporary directory was left");
    if (g_rank == 0) printf("%s k=%d hops=%d%s%s: same files as one process\n", c->graph, c->k,
                            c->hops, c->empty ? " (a part empty)" : "",
                            c->budget ? " under a budget" : "");
}

/* rc must be want on every rank, dir absent (or, exists, still holding
 * parts files) and no temporary directory left. */
static void expect_error(int rc, int want, const char *dir, int dir_exists, const char *what)
{
    CHECK_ALL(rc == want, "%s: %s (%s), expected %s", what, gnn_error_name(rc),
              gnn_error_message(), gnn_error_name(want));
    CHECK_ROOT(tu_exists(dir) == dir_exists, "%s: %s %s", what, dir,
               dir_exists ? "vanished" : "was created");
    CHECK_ROOT(leftovers("err") == 0, "%s: a temporary directory was left", what);
}

static void test_errors(void **state)
{
    (void)state;
    int32_t part[N_NODES];
    draw_parts(part, 3, 0, 1000);
    char dir[700], missing[700];
    snprintf(dir, sizeof dir, "%s/err-out", g_dir);
    snprintf(missing, sizeof missing, "%s/err-missing.h5", g_dir);
    gnn_partdir_meta_t meta = {.graph = g_full, .method = "random", .balance = "-",
                               .ufactor = 30, .halo_hops = 1, .ranks = g_size};
    gnn_partdir_mpi_opts_t o = {.chunk_bytes = 4096};

    int rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, missing, part, 3, &meta, &o);
    expect_error(rc, GNN_ENOENT, dir, 0, "missing graph");
    part[17] = 3;
    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, g_full, part, 3, &meta, &o);
    expect_error(rc, GNN_EINVAL, dir, 0, "part out of range");
    part[17] = 0;
    meta.halo_hops = 9;
    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, g_full, part, 3, &meta, &o);
    expect_error(rc, GNN_EINVAL, dir, 0, "9 hops");
    meta.halo_hops = 1;

    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, g_full, part, 3, &meta, &o);
    CHECK_ALL(rc == 0, "first write: %s", gnn_error_message());
    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, g_full, part, 3, &meta, &o);
    expect_error(rc, GNN_EEXISTS, dir, 1, "existing dir");
    CHECK_ROOT(strstr(gnn_error_message(), "--force") != NULL, "message: %s",
               gnn_error_message());
    CHECK_ROOT(count_entries(dir) == 4, "the existing dir was touched");
    draw_parts(part, 2, 0, 1001);
    meta.edge_cut = g_rank == 0 ? edge_cut(&g_full_g, part) : 0;
    MPI_Bcast(&meta.edge_cut, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
    o.force = 1;
    rc = gnn_partdir_write_mpi(MPI_COMM_WORLD, dir, g_full, part, 2, &meta, &o);
    CHECK_ALL(rc == 0, "forced write: %s", gnn_error_message());
    CHECK_ROOT(count_entries(dir) == 3 && gnn_partdir_check(dir, NULL) == 0,
               "the forced write did not replace the dir: %s", gnn_error_message());
    CHECK_ROOT(leftovers("err") == 0, "a temporary directory was left");

    /* The comparison sees a difference: one node moved to another part. */
    char ref[700];
    snprintf(ref, sizeof ref, "%s/err-ref", g_dir);
    part[0] = 1 - part[0];
    rc = g_rank == 0 ? gnn_partdir_write(ref, &g_full_g, part, 2, &meta, 0) : 0;
    CHECK_ROOT(rc == 0, "reference: %s", gnn_error_message());
    CHECK_ROOT(!same_dirs(ref, dir, 2), "a moved node went unnoticed");
}

int main(int argc, char **argv)
{
    if (tu_mpi_start(&argc, &argv, &g_rank, &g_size, GNN_LOG_ERROR, &g_seed, g_dir, sizeof g_dir)) return 1;
    gnn_graph_init(&g_full_g);
    gnn_graph_init(&g_bare_g);
    int rc = 0;
    snprintf(g_full, sizeof g_full, "%s/full.h5", g_dir);
    snprintf(g_bare, sizeof g_bare, "%s/bare.h5", g_dir);
    if (g_rank == 0) {
        rc = write_graphs(g_seed);
        if (rc < 0) fprintf(stderr, "setup: %s: %s\n", gnn_error_name(rc), gnn_error_message());
        else
            printf("graph: %d nodes, %" PRId64 " stored edges (%" PRId64 " with repeats)\n",
                   N_NODES, (int64_t)g_full_g.csr.nnz, (int64_t)g_bare_g.csr.nnz);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int failed = 1;
    if (rc == 0) {
        struct CMUnitTest tests[N_CASES + 1];
        static char names[N_CASES][80];
        for (size_t i = 0; i < N_CASES; i++) {
            const write_case_t *c = &g_cases[i];
            snprintf(names[i], sizeof names[i], "same as one process: %s k=%d hops=%d%s%s",
                     c->graph, c->k, c->hops, c->empty ? " empty part" : "",
                     c->budget ? " budget" : "");
            tests[i] = (struct CMUnitTest){.name = names[i], .test_func = test_same_as_serial,
                                           .initial_state = (void *)c};
        }
        tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(test_errors);
        failed = _cmocka_run_group_tests("partdir_mpi", tests, N_CASES + 1, NULL, NULL);
    }
    gnn_graph_free(&g_full_g);
    gnn_graph_free(&g_bare_g);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return rc != 0 || any != 0;
}
