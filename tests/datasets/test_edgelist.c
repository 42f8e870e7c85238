/*
 * gnn-dataset edgelist, run as a user runs it: the exact CSR of small
 * hand-made inputs (comments, blank lines, commas, tabs, CRLF, weights,
 * gzip, one-based ids, dense ids used as they are, sparse ids renumbered
 * with orig_id kept, symmetrisation, repeated edges), a larger random input
 * checked against gnn_csr_from_edges, the out-of-core path against the
 * in-memory one, and for every bad input exit status 1, exactly one stderr
 * line "gnn-dataset: error: FILE:LINE: ..." and no output file, not even a
 * temporary one. The reader is also run from memory with each allocation
 * failing in turn. argv[1] is the path of the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/edgelist.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"

#include <dirent.h>
#include <string.h>
#include <zlib.h>

static char *g_bin;

/* ---- Helpers -------------------------------------------------------------- */



static const char *write_gz(const char *name, const char *text)
{
    const char *path = tu_path(name);
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(g), Z_OK);
    return path;
}


/* Run "gnn-dataset edgelist IN -o OUT [extra...]"; expect success. */
static void convert_ok(const char *in, const char *out, const char *x1, const char *x2)
{
    char *argv[] = {g_bin, "edgelist", (char *)in, "-o", (char *)out, "--force",
                    (char *)x1, (char *)x2, NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
}


/* Convert text (from a file named name) and expect failure naming want. */
static void bad_input(const char *name, const char *text, const char *opt, const char *want)
{
    const char *in = tu_write_file(name, text);
    const char *out = tu_path("bad.h5");
    char *argv[] = {g_bin, "edgelist", (char *)in, "-o", (char *)out, (char *)opt, NULL};
    tu_expect_failure(argv, out, 1, want);
}

static void load(const char *path, gnn_graph_t *g)
{
    int rc = gnn_graph_load(path, g);
    if (rc) fail_msg("load %s: %s", path, gnn_error_message());
}

/* The CSR has exactly these rows (and weights when w is not NULL). */
static void assert_csr(const gnn_csr_t *a, gnn_vid_t n, const gnn_eid_t *indptr,
                       const gnn_vid_t *indices, const float *w)
{
    assert_int_equal(a->n_rows, n);
    assert_int_equal(a->n_cols, n);
    for (gnn_vid_t v = 0; v <= n; v++)
        if (a->indptr[v] != indptr[v])
            fail_msg("indptr[%lld] = %lld, want %lld", (long long)v, (long long)a->indptr[v],
                     (long long)indptr[v]);
    assert_int_equal(a->nnz, indptr[n]);
    for (gnn_eid_t e = 0; e < a->nnz; e++)
        if (a->indices[e] != indices[e])
            fail_msg("indices[%lld] = %lld, want %lld", (long long)e, (long long)a->indices[e],
                     (long long)indices[e]);
    if (!w) {
        assert_null(a->weights);
        return;
    }
    assert_non_null(a->weights);
    for (gnn_eid_t e = 0; e < a->nnz; e++)
        if (a->weights[e] != w[e])
            fail_msg("weights[%lld] = %g, want %g", (long long)e, a->weights[e], w[e]);
}

/* ---- Layouts -------------------------------------------------------------- */

/* Comments ('#', '%', indented), blank lines, blanks-only lines, commas
 * with and without blanks, tabs, CRLF, a last line without newline. */
static const char *k_mixed = "# Directed graph (each unordered pair of nodes is saved once)\n"
                             "% FromNodeId\tToNodeId\n"
                             "0 1\n"
                             "\n"
                             "0,2\n"
                             "  # indented comment\n"
                             "1\t2\r\n"
                             " \t \n"
                             "  2 , 3  \n"
                             "3\t 0";
/* 0->1 0->2 1->2 2->3 3->0; rows list in-neighbours, sorted. */
static const gnn_eid_t k_mixed_ptr[] = {0, 1, 2, 4, 5};
static const gnn_vid_t k_mixed_idx[] = {3, 0, 0, 1, 2};

static void test_layout(void **state)
{
    (void)state;
    const char *in = tu_write_file("mixed.txt", k_mixed), *out = tu_path("mixed.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    assert_csr(&g.csr, 4, k_mixed_ptr, k_mixed_idx, NULL);
    assert_int_equal(g.directed, 1);
    assert_null(g.orig_id);
    assert_true(g.csr.flags & GNN_CSR_SORTED);
    gnn_graph_free(&g);
}

/* A UTF-8 byte-order mark before the first line is skipped. */
static void test_bom(void **state)
{
    (void)state;
    const char *in = tu_write_file("bom.txt", "\xEF\xBB\xBF" "0 1\n1 2\n"), *out = tu_path("bom.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    const gnn_eid_t ptr[] = {0, 0, 1, 2};
    const gnn_vid_t idx[] = {0, 1};
    assert_csr(&g.csr, 3, ptr, idx, NULL);
    gnn_graph_free(&g);
}

static void test_gzip(void **state)
{
    (void)state;
    const char *in = write_gz("mixed.txt.gz", k_mixed), *out = tu_path("mixed_gz.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    assert_csr(&g.csr, 4, k_mixed_ptr, k_mixed_idx, NULL);
    gnn_graph_free(&g);
}

static void test_weights(void **state)
{
    (void)state;
    const char *in = tu_write_file("w.txt", "# src dst weight\n0 1 0.5\n1,0,2\n2\t1\t-1.25e0\n0 2 3\n");
    const char *out = tu_path("w.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    /* row 0: 1 (2); row 1: 0 (0.5), 2 (-1.25); row 2: 0 (3) */
    const gnn_eid_t ptr[] = {0, 1, 3, 4};
    const gnn_vid_t idx[] = {1, 0, 2, 0};
    const float w[] = {2, 0.5f, -1.25f, 3};
    assert_csr(&g.csr, 3, ptr, idx, w);
    gnn_graph_free(&g);
}

static void test_one_based(void **state)
{
    (void)state;
    const char *in = tu_write_file("one.txt", "1 2\n2 3\n3 1\n3 5\n");
    const char *out = tu_path("one.h5");
    convert_ok(in, out, "--one-based", NULL);
    gnn_graph_t g;
    load(out, &g);
    /* 0->1 1->2 2->0 2->4: node 3 exists (id 4 never appears) */
    const gnn_eid_t ptr[] = {0, 1, 2, 3, 3, 4};
    const gnn_vid_t idx[] = {2, 0, 1, 2};
    assert_csr(&g.csr, 5, ptr, idx, NULL);
    assert_null(g.orig_id);
    gnn_graph_free(&g);
}

/* Repeated edges and self loops stay without --symmetrize. */
static void test_multigraph(void **state)
{
    (void)state;
    const char *in = tu_write_file("multi.txt", "0 1\n0 1\n1 1\n2 1\n1 0\n");
    const char *out = tu_path("multi.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    const gnn_eid_t ptr[] = {0, 1, 5, 5};
    const gnn_vid_t idx[] = {1, 0, 0, 1, 2};
    assert_csr(&g.csr, 3, ptr, idx, NULL);
    assert_int_equal(g.directed, 1);
    gnn_graph_free(&g);
}

static void test_symmetrize(void **state)
{
    (void)state;
    const char *in = tu_write_file("sym.txt", "0 1 1\n1 0 1\n0 1 1\n1 2 2\n2 2 4\n");
    const char *out = tu_path("sym.h5");
    convert_ok(in, out, "--symmetrize", NULL);
    gnn_graph_t g;
    load(out, &g);
    /* Every edge both ways, repeats removed, the self loop kept once. */
    const gnn_eid_t ptr[] = {0, 1, 3, 5};
    const gnn_vid_t idx[] = {1, 0, 2, 1, 2};
    const float w[] = {1, 1, 2, 2, 4};
    assert_csr(&g.csr, 3, ptr, idx, w);
    assert_int_equal(g.directed, 0);
    assert_true(g.csr.flags & GNN_CSR_SYMMETRIC);
    assert_true(g.csr.flags & GNN_CSR_DEDUPED);
    gnn_graph_free(&g);
}

/* ---- Ids ------------------------------------------------------------------ */

/* Gaps within the bound: ids are node numbers, absent ids isolated nodes. */
static void test_dense_ids(void **state)
{
    (void)state;
    const char *in = tu_write_file("dense.txt", "0 5\n5 10\n"), *out = tu_path("dense.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    assert_int_equal(g.csr.n_rows, 11);
    assert_null(g.orig_id);
    assert_int_equal(g.csr.indptr[6] - g.csr.indptr[5], 1);
    gnn_graph_free(&g);
}

/* The bound: max id < 2 * distinct + 1024 (2 distinct ids: max 1027). */
static void test_dense_bound(void **state)
{
    (void)state;
    const char *in = tu_write_file("b1.txt", "0 1027\n"), *out = tu_path("b1.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    assert_int_equal(g.csr.n_rows, 1028);
    assert_null(g.orig_id);
    gnn_graph_free(&g);

    in = tu_write_file("b2.txt", "0 1028\n");
    out = tu_path("b2.h5");
    convert_ok(in, out, NULL, NULL);
    load(out, &g);
    assert_int_equal(g.csr.n_rows, 2);
    assert_non_null(g.orig_id);
    assert_int_equal(g.orig_id[0], 0);
    assert_int_equal(g.orig_id[1], 1028);
    gnn_graph_free(&g);
}

/* Huge and negative ids: renumbered in order of first appearance. */
static void test_sparse_ids(void **state)
{
    (void)state;
    const char *in = tu_write_file("sparse.txt", "1000000000000 7\n"
                                              "7,-3\n"
                                              "-3 1000000000000\n"
                                              "9223372036854775807 7\n"
                                              "-9223372036854775808 -3\n");
    const char *out = tu_path("sparse.h5");
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    /* nodes: 1e12 -> 0, 7 -> 1, -3 -> 2, INT64_MAX -> 3, INT64_MIN -> 4;
     * edges 0->1 1->2 2->0 3->1 4->2 */
    const gnn_eid_t ptr[] = {0, 1, 3, 5, 5, 5};
    const gnn_vid_t idx[] = {2, 0, 3, 1, 4};
    assert_csr(&g.csr, 5, ptr, idx, NULL);
    assert_non_null(g.orig_id);
    const gnn_vid_t want[] = {1000000000000, 7, -3, INT64_MAX, INT64_MIN};
    for (int i = 0; i < 5; i++) assert_int_equal(g.orig_id[i], want[i]);
    gnn_graph_free(&g);

    /* One-based and sparse: orig_id holds the ids as written. */
    in = tu_write_file("sparse1.txt", "5000 1\n1 99999\n");
    out = tu_path("sparse1.h5");
    convert_ok(in, out, "--one-based", NULL);
    load(out, &g);
    assert_int_equal(g.csr.n_rows, 3);
    assert_non_null(g.orig_id);
    assert_int_equal(g.orig_id[0], 5000);
    assert_int_equal(g.orig_id[1], 1);
    assert_int_equal(g.orig_id[2], 99999);
    gnn_graph_free(&g);
}

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Node of id through orig_id sorted as (id, node) pairs. */
static gnn_vid_t lookup(const int64_t *pairs, gnn_vid_t n, int64_t id)
{
    int64_t key[2] = {id, 0};
    const int64_t *p = bsearch(key, pairs, (size_t)n, 2 * sizeof(int64_t), cmp_pair);
    assert_non_null(p);
    return p[1];
}

/* 50K edges over 20K random 64-bit ids (the map grows many times): the CSR
 * equals gnn_csr_from_edges on the ids mapped through orig_id, and node
 * numbers are handed out in order of first appearance. */
static void test_random_sparse(void **state)
{
    (void)state;
    uint64_t s = tu_seed() | 1;
    const int nid = 20000, m = 50000;
    int64_t *ids = malloc(sizeof(int64_t) * nid), *es = malloc(sizeof(int64_t) * 2 * m);
    for (int i = 0; i < nid; i++) ids[i] = (int64_t)rng(&s);
    const char *in = tu_path("rand.txt"), *out = tu_path("rand.h5");
    FILE *f = fopen(in, "w");
    for (int i = 0; i < m; i++) {
        es[2 * i] = ids[rng(&s) % nid];
        es[2 * i + 1] = ids[rng(&s) % nid];
        fprintf(f, "%lld%s%lld\n", (long long)es[2 * i], i % 3 ? "\t" : ",",
                (long long)es[2 * i + 1]);
    }
    fclose(f);
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    gnn_vid_t n = g.csr.n_rows;
    assert_non_null(g.orig_id);
    int64_t *pairs = malloc(sizeof(int64_t) * 2 * (size_t)n);
    for (gnn_vid_t v = 0; v < n; v++) {
        pairs[2 * v] = g.orig_id[v];
        pairs[2 * v + 1] = v;
    }
    qsort(pairs, (size_t)n, 2 * sizeof(int64_t), cmp_pair);
    for (gnn_vid_t v = 1; v < n; v++) assert_true(pairs[2 * v] != pairs[2 * v - 2]);
    gnn_vid_t *src = malloc(sizeof(gnn_vid_t) * m), *dst = malloc(sizeof(gnn_vid_t) * m);
    gnn_vid_t next = 0;
    for (int i = 0; i < m; i++) {
        src[i] = lookup(pairs, n, es[2 * i]);
        dst[i] = lookup(pairs, n, es[2 * i + 1]);
        for (int k = 0; k < 2; k++) {
            gnn_vid_t x = k ? dst[i] : src[i];
            assert_true(x <= next);
            if (x == next) next++;
        }
    }
    assert_int_equal(next, n);
    gnn_csr_t want;
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL, GNN_BUILD_SORT, &want), 0);
    assert_true(gnn_csr_equal(&want, &g.csr));
    gnn_csr_free(&want);
    gnn_graph_free(&g);
    free(ids);
    free(es);
    free(pairs);
    free(src);
    free(dst);
}

/* A budget far below the CSR forces spills and several passes: the same
 * graph as without one. */
static void test_out_of_core(void **state)
{
    (void)state;
    uint64_t s = 99;
    const char *in = tu_path("big.txt");
    FILE *f = fopen(in, "w");
    for (int i = 0; i < 200000; i++)
        fprintf(f, "%llu %llu %u\n", (unsigned long long)(rng(&s) % 5000),
                (unsigned long long)(rng(&s) % 5000), (unsigned)(i % 100));
    fclose(f);
    const char *a = tu_path("big_mem.h5"), *b = tu_path("big_ooc.h5");
    convert_ok(in, a, "--symmetrize", NULL);
    char *argv[] = {g_bin, "edgelist", (char *)in, "-o", (char *)b, "--force", "--symmetrize",
                    "--mem-budget", "3M", "--tmpdir", (char *)tu_tmpdir(), NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    gnn_graph_t g1, g2;
    load(a, &g1);
    load(b, &g2);
    assert_true(gnn_csr_equal(&g1.csr, &g2.csr));
    assert_true(g1.csr.nnz > 300000);
    gnn_graph_free(&g1);
    gnn_graph_free(&g2);
}

/* ---- Errors --------------------------------------------------------------- */

static void test_bad_lines(void **state)
{
    (void)state;
    bad_input("e1.txt", "0 1\nuser_17 3\n", NULL, "e1.txt:2: 'user_17' is not an integer node id");
    bad_input("e2.txt", "src,dst\n0,1\n", NULL,
              "e2.txt:1: 'src' is not an integer node id (lines are 'src dst [weight]'; "
              "a header line must start with '#')");
    bad_input("e3.txt", "0 1\n\n1 1.5\n", NULL, "e3.txt:3: '1.5' is not an integer node id");
    bad_input("e4.txt", "0 1\n1 2 0.5\n", NULL,
              "e4.txt:2: 3 columns, but the first edge (line 1) has 2");
    bad_input("e5.txt", "# x\n0 1 1\n1 2\n", NULL,
              "e5.txt:3: 2 columns, but the first edge (line 2) has 3");
    bad_input("e6.txt", "0 1\n5\n", NULL, "e6.txt:2: 1 column; expected 2");
    bad_input("e7.txt", "0 1 2 3\n", NULL, "e7.txt:1: more than 3 columns");
    bad_input("e8.txt", "0 1 abc\n", NULL, "e8.txt:1: 'abc' is not a number");
    bad_input("e9.txt", "0 1 1\n1 0 nan\n", NULL, "e9.txt:2: edge weight 'nan' is not a finite");
    bad_input("e10.txt", "0 1 1e39\n", NULL, "e10.txt:1: edge weight '1e39' is outside");
    bad_input("e11.txt", "1 2\n0 1\n", "--one-based",
              "e11.txt:2: node id 0 with --one-based (ids must be >= 1)");
    bad_input("e12.txt", "1 -2\n", "--one-based", "e12.txt:1: node id -2 with --one-based");
    bad_input("e13.txt", "99999999999999999999 1\n", NULL,
              "e13.txt:1: node id '99999999999999999999' is outside the 64-bit integer range");
    bad_input("e14.txt", "0,,1\n", NULL, "e14.txt:1: empty column after ','");
    bad_input("e15.txt", "0 1,\n", NULL, "e15.txt:1: empty column after ','");
    bad_input("e16.txt", "# nothing\n\n% here\n", NULL, "e16.txt: no edges");
    bad_input("e17.txt", "", NULL, "e17.txt: no edges");
    bad_input("e18.txt", "0 1\n1 2;\n", NULL, "e18.txt:2: '2;' is not an integer node id");
    bad_input("e19.txt", "0 1\n1 0x2\n", NULL, "e19.txt:2: '0x2' is not an integer node id");
    bad_input("e20.txt", "0 1 2.5x\n", NULL, "e20.txt:1: '2.5x' is not a number");
    bad_input("e21.txt", "0 1\n1 2 # comment\n", NULL, "e21.txt:2: '#' is not a number");
    bad_input("e22.txt", "0\xff 1\n", NULL, "e22.txt:1:");
    bad_input("e23.txt", "0 1\n1 a\xc3\xa9\n", NULL, "e23.txt:2: 'a\xc3\xa9' is not an integer");
}

static void test_bad_gzip(void **state)
{
    (void)state;
    /* A gzip stream cut short. */
    const char *gz = write_gz("cut.txt.gz", k_mixed);
    char *data = tu_read_file(gz);
    FILE *f = fopen(gz, "rb");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    f = fopen(gz, "wb");
    fwrite(data, 1, (size_t)n - 12, f);
    fclose(f);
    free(data);
    const char *out = tu_path("cut.h5");
    char *argv[] = {g_bin, "edgelist", (char *)gz, "-o", (char *)out, NULL};
    tu_expect_failure(argv, out, 1, "cut.txt.gz: truncated gzip stream");
}

/* The edge list is read twice: a pipe is refused before the first read. */
static void test_pipe_refused(void **state)
{
    (void)state;
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    assert_int_equal(write(fd[1], "0 1\n", 4), 4);
    close(fd[1]);
    char in[64], want[256];
    snprintf(in, sizeof in, "/dev/fd/%d", fd[0]);
    snprintf(want, sizeof want, "%s: not a regular file (the edge list is read twice; give a "
                                "file, not a pipe)", in);
    const char *out = tu_path("pipe.h5");
    char *argv[] = {g_bin, "edgelist", in, "-o", (char *)out, NULL};
    tu_expect_failure(argv, out, 1, want);
    close(fd[0]);
}

static void test_bad_usage(void **state)
{
    (void)state;
    const char *in = tu_write_file("ok.txt", "0 1\n"), *out = tu_path("exists.h5");
    char *a1[] = {g_bin, "edgelist", "/nonexistent/e.txt", "-o", (char *)out, NULL};
    tu_expect_failure(a1, out, 1, "/nonexistent/e.txt: No such file or directory");
    char *a2[] = {g_bin, "edgelist", (char *)in, NULL};
    tu_expect_failure(a2, NULL, 2, "missing -o FILE");
    char *a3[] = {g_bin, "edgelist", (char *)in, "-o", "/nonexistent/dir/x.h5", NULL};
    tu_expect_failure(a3, NULL, 1, "directory /nonexistent/dir does not exist");
    char *a4[] = {g_bin, "edgelist", (char *)in, "-o", (char *)out, "--symetrize", NULL};
    tu_expect_failure(a4, out, 2, "unknown option '--symetrize'");

    /* An existing OUT is kept without --force, replaced with it. */
    tu_write_file("exists.h5", "keep me");
    char *a5[] = {g_bin, "edgelist", (char *)in, "-o", (char *)out, NULL};
    tu_run_t r = tu_run(a5);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "file exists (use --force to replace it)"));
    tu_run_free(&r);
    char *kept = tu_read_file(out);
    assert_string_equal(kept, "keep me");
    free(kept);
    /* A failing conversion with --force leaves the old file alone. */
    const char *bad = tu_write_file("bad_force.txt", "0 1\nx y\n");
    char *a6[] = {g_bin, "edgelist", (char *)bad, "-o", (char *)out, "--force", NULL};
    r = tu_run(a6);
    assert_int_equal(r.status, 1);
    assert_int_equal(tu_count_lines(r.err), 1);
    tu_run_free(&r);
    kept = tu_read_file(out);
    assert_string_equal(kept, "keep me");
    free(kept);
    convert_ok(in, out, NULL, NULL);
    gnn_graph_t g;
    load(out, &g);
    assert_int_equal(g.csr.n_rows, 2);
    gnn_graph_free(&g);
}

/* A budget too small for renumbering, or for building after it. */
static void test_budget_too_small(void **state)
{
    (void)state;
    uint64_t s = 7;
    const char *in = tu_path("budget.txt"), *out = tu_path("budget.h5");
    FILE *f = fopen(in, "w");
    for (int i = 0; i < 10000; i++)
        fprintf(f, "%lld %lld\n", (long long)(rng(&s) >> 1), (long long)(rng(&s) >> 1));
    fclose(f);
    char *argv[] = {g_bin, "edgelist", (char *)in, "-o", (char *)out, "--mem-budget", "800K", NULL};
    /* The set fits, but what is left is too small for the builder. */
    tu_expect_failure(argv, out, 1, "budget.txt: after 668 KiB of --mem-budget for renumbering ids: ");
    f = fopen(in, "w");
    for (int i = 0; i < 20000; i++)
        fprintf(f, "%lld %lld\n", (long long)(rng(&s) >> 1), (long long)(rng(&s) >> 1));
    fclose(f);
    tu_expect_failure(argv, out, 1, "budget.txt: renumbering its 40000 distinct ids needs 1.3 MiB, "
                                 "more than --mem-budget 800 KiB");
}

static void test_help(void **state)
{
    (void)state;
    char *argv[] = {g_bin, "edgelist", "--help", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: gnn-dataset edgelist"));
    assert_non_null(strstr(r.out, "--one-based"));
    assert_non_null(strstr(r.out, "--symmetrize"));
    tu_run_free(&r);
}

/* ---- Library -------------------------------------------------------------- */

/* From memory, with the Nth allocation failing for N = 1, 2, ...: a clean
 * GNN_ENOMEM each time (leaks show under ASan), then the right graph. */
static void test_alloc_failures(void **state)
{
    (void)state;
    const char *text = "100 7 1\n7 -3 2\n-3 100 3\n";
    gnn_edgelist_opts_t o = {0};
    for (int64_t nth = 1;; nth++) {
        gnn_csr_t a;
        gnn_vid_t *orig;
        gnn_alloc_fail_at(nth);
        int rc = gnn_edgelist_read_mem(text, strlen(text), "mem", &o, GNN_BUILD_SORT, &a, &orig);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!failed) {
            assert_int_equal(rc, 0);
            const gnn_eid_t ptr[] = {0, 1, 2, 3};
            const gnn_vid_t idx[] = {2, 0, 1};
            const float w[] = {3, 1, 2};
            assert_csr(&a, 3, ptr, idx, w);
            assert_int_equal(orig[0], 100);
            assert_int_equal(orig[2], -3);
            gnn_csr_free(&a);
            gnn_free(orig);
            break;
        }
        if (rc != GNN_ENOMEM)
            fail_msg("allocation %lld failed: rc %d (%s)", (long long)nth, rc, gnn_error_message());
        assert_null(a.indptr);
        assert_null(orig);
        assert_true(nth < 1000);
    }
}

/* Ids that start far apart (a hash map) and then fill a range densely
 * enough for a bitmap, yet stay too sparse to be node numbers: renumbered
 * in order of first appearance all the same. */
static void test_id_set_forms(void **state)
{
    (void)state;
    const int64_t half = 1050000, big = 100000000;
    size_t cap = (size_t)half * 24 + 64, len = 0;
    char *text = malloc(cap);
    len += (size_t)snprintf(text, cap, "%lld 0\n", (long long)big);
    for (int64_t i = 0; i < half; i++)
        len += (size_t)snprintf(text + len, cap - len, "%lld %lld\n", (long long)i,
                                (long long)(i + half));
    gnn_edgelist_opts_t o = {0};
    gnn_csr_t a;
    gnn_vid_t *orig;
    assert_int_equal(gnn_edgelist_read_mem(text, len, "forms", &o, GNN_BUILD_SORT, &a, &orig), 0);
    assert_int_equal(a.n_rows, 2 * half + 1);
    assert_int_equal(a.nnz, half + 1);
    assert_non_null(orig);
    assert_int_equal(orig[0], big);
    for (int64_t i = 0; i < half; i++) {
        if (orig[1 + 2 * i] != i || orig[2 + 2 * i] != i + half)
            fail_msg("orig ids at %lld: %lld %lld", (long long)i, (long long)orig[1 + 2 * i],
                     (long long)orig[2 + 2 * i]);
    }
    /* node 1 (id 0) has the in-edge from node 0 (id big) */
    assert_int_equal(a.indptr[2] - a.indptr[1], 1);
    assert_int_equal(a.indices[a.indptr[1]], 0);
    gnn_csr_free(&a);
    gnn_free(orig);
    free(text);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout),        cmocka_unit_test(test_gzip),
        cmocka_unit_test(test_weights),       cmocka_unit_test(test_one_based),
        cmocka_unit_test(test_multigraph),    cmocka_unit_test(test_symmetrize),
        cmocka_unit_test(test_dense_ids),     cmocka_unit_test(test_dense_bound),
        cmocka_unit_test(test_sparse_ids),    cmocka_unit_test(test_random_sparse),
        cmocka_unit_test(test_out_of_core),   cmocka_unit_test(test_bad_lines),
        cmocka_unit_test(test_bad_gzip),      cmocka_unit_test(test_bad_usage),
        cmocka_unit_test(test_help),          cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_id_set_forms),  cmocka_unit_test(test_bom),
        cmocka_unit_test(test_budget_too_small), cmocka_unit_test(test_pipe_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
