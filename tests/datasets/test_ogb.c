/*
 * gnn-dataset ogb, run as a user runs it. With argument "cora": the shared
 * Cora dataset converts to 2708 nodes, 10556 edges, 1433 features, 7
 * classes and the 140/500/1000 split, and the file's CSR, features, labels
 * and splits equal the csv files read independently here. Without it:
 * small OGB folders written by the test, converted exactly, and every kind
 * of bad input refused with one error line and no output file.
 * argv[1] is the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/ogb.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/npz_writer.h"
#include "tests/common/testutil.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

static char *g_bin;
static const char *g_cora;

static void write_gz(const char *path, const char *text)
{
    gzFile z = gzopen(path, "wb");
    assert_non_null(z);
    assert_int_equal(gzwrite(z, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(z), Z_OK);
}

/* A small dataset folder under the temp dir; returns its path. */
static const char *make_dataset(const char *name)
{
    static char dir[8][640];
    static int next;
    char *d = dir[next++ % 8];
    snprintf(d, sizeof dir[0], "%s", tu_path(name));
    char p[1024];
    mkdir(d, 0755);
    snprintf(p, sizeof p, "%s/raw", d);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/split", d);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/split/time", d);
    mkdir(p, 0755);
    const char *files[][2] = {
        {"raw/num-node-list.csv.gz", "6\n"},
        {"raw/num-edge-list.csv.gz", "7\n"},
        {"raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n4,3\n5,0\n5,0\n"},
        {"raw/node-feat.csv.gz", "0.5,1,-2\n1e-3,2.25,3\n-0.125,0,7\n1,1,1\n2,2,2\n3,3,3\n"},
        {"raw/node-label.csv.gz", "0\n1\n2\n\n1\nnan\n"},
        {"raw/node_year.csv.gz", "2001\n2002\n2003\n2004\n2005\n2006\n"},
        {"split/time/train.csv.gz", "0\n1\n2\n"},
        {"split/time/valid.csv.gz", "3\n"},
        {"split/time/test.csv.gz", "4\n5\n"},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", d, files[i][0]);
        write_gz(p, files[i][1]);
    }
    return d;
}

static void set_file(const char *dir, const char *rel, const char *text)
{
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    write_gz(p, text);
}

static tu_run_t convert(const char *dir, const char *out, const char *extra)
{
    char *argv[] = {g_bin, "ogb", (char *)dir, "-o", (char *)out, "--force", "--quiet",
                    (char *)extra, NULL};
    return tu_run(argv);
}

static void test_small_exact(void **state)
{
    (void)state;
    const char *dir = make_dataset("small");
    const char *out = tu_path("small.h5");
    tu_run_t r = convert(dir, out, NULL);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    assert_int_equal(g.csr.n_rows, 6);
    assert_int_equal(g.csr.nnz, 7); /* the repeated 5 -> 0 is kept: directed, sorted */
    gnn_eid_t ip[] = {0, 3, 4, 5, 6, 7, 7};
    gnn_vid_t ix[] = {2, 5, 5, 0, 1, 4, 3};
    assert_memory_equal(g.csr.indptr, ip, sizeof ip);
    assert_memory_equal(g.csr.indices, ix, sizeof ix);
    assert_int_equal(g.directed, 1);
    assert_int_equal(g.feat_dim, 3);
    float f[] = {0.5f, 1, -2, 1e-3f, 2.25f, 3, -0.125f, 0, 7, 1, 1, 1, 2, 2, 2, 3, 3, 3};
    assert_memory_equal(g.feat, f, sizeof f);
    int64_t lab[] = {0, 1, 2, -1, 1, -1};
    assert_memory_equal(g.label, lab, sizeof lab);
    assert_int_equal(g.num_classes, 3);
    assert_int_equal(g.split_size[0], 3);
    assert_int_equal(g.split_size[1], 1);
    assert_int_equal(g.split_size[2], 2);
    assert_int_equal(g.split[2][1], 5);
    gnn_graph_free(&g);
    gnn_graph_file_t *fh;
    assert_int_equal(gnn_graph_open(out, &fh), 0);
    assert_int_equal(gnn_graph_file_info(fh)->n_node_data, 1);
    assert_string_equal(gnn_graph_file_info(fh)->node_data[0], "year");
    gnn_graph_close(fh);

    /* --symmetrize: undirected, deduplicated, symmetric. */
    r = convert(dir, out, "--symmetrize");
    assert_int_equal(r.status, 0);
    tu_run_free(&r);
    assert_int_equal(gnn_graph_load(out, &g), 0);
    assert_int_equal(g.directed, 0);
    assert_int_equal(g.csr.nnz, 10); /* {0-1, 1-2, 2-0, 3-4, 5-0} both ways */
    assert_true(g.csr.flags & GNN_CSR_SYMMETRIC);
    gnn_csr_t t;
    assert_int_equal(gnn_csr_transpose(&g.csr, &t), 0);
    assert_true(gnn_csr_equal(&t, &g.csr));
    gnn_csr_free(&t);
    gnn_graph_free(&g);
}

/* Fails with status and no output; the last line of standard error is the
 * one error line "gnn-dataset: error: ..." containing want (info lines may
 * precede it). */
static void expect_failure(const char *dir, const char *extra, int status, const char *want)
{
    const char *out = tu_path("bad-out.h5");
    unlink(out);
    char *argv[] = {g_bin, "ogb", (char *)dir, "-o", (char *)out, (char *)extra, NULL};
    tu_run_t r = tu_run(argv);
    const char *last = r.err ? r.err : "";
    size_t n = strlen(last);
    if (n > 0) {
        const char *q = last + n - 1; /* the final newline */
        while (q > last && q[-1] != '\n') q--;
        last = q;
    }
    if (r.status != status || strncmp(last, "gnn-dataset: error: ", 20) != 0 ||
        !strstr(last, want) || strstr(r.err, "error:") != last + 13)
        fail_msg("%s: status %d, stderr '%s'; expected %d and a last line with '%s'", dir,
                 r.status, r.err, status, want);
    assert_false(tu_exists(out));
    tu_run_free(&r);
}

static void test_bad_inputs(void **state)
{
    (void)state;
    const char *d;
    d = make_dataset("bad-line");
    set_file(d, "raw/edge.csv.gz", "0,1\n1,2\n2;0\n3,4\n4,3\n5,0\n5,0\n");
    expect_failure(d, NULL, 1, "raw/edge.csv.gz:3: expected two integer node ids 'SRC,DST' (the "
                               "file has no header line), found '2;0'");

    d = make_dataset("bad-id");
    set_file(d, "raw/edge.csv.gz", "0,1\n1,2\n2,0\n3,4\n4,6\n5,0\n5,0\n");
    expect_failure(d, NULL, 1, "raw/edge.csv.gz:5: node id 6 is outside [0, 6)");

    d = make_dataset("bad-count");
    set_file(d, "raw/num-edge-list.csv.gz", "8\n");
    expect_failure(d, NULL, 1, "has 7 edges but num-edge-list says 8");

    d = make_dataset("bad-feat");
    set_file(d, "raw/node-feat.csv.gz", "0,1,2\n0,1\n0,1,2\n0,1,2\n0,1,2\n0,1,2\n");
    expect_failure(d, NULL, 1, "raw/node-feat.csv.gz:2: expected 3 values, found 2");

    d = make_dataset("short-feat");
    set_file(d, "raw/node-feat.csv.gz", "0,1,2\n0,1,2\n");
    expect_failure(d, NULL, 1, "has 2 rows but the graph has 6 nodes");

    d = make_dataset("nan-feat");
    set_file(d, "raw/node-feat.csv.gz", "0,nan,2\n0,1,2\n0,1,inf\n0,1,2\n0,1,2\n0,1,2\n");
    expect_failure(d, NULL, 1, "2 NaN or infinite values (first on line 1); use --allow-nan");
    const char *out = tu_path("nan.h5");
    tu_run_t r = convert(d, out, "--allow-nan");
    assert_int_equal(r.status, 0);
    tu_run_free(&r);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    assert_true(isnan(g.feat[1]) && isinf(g.feat[8]));
    gnn_graph_free(&g);

    /* An optional file that is there but cannot be read (a dangling link,
     * a directory) fails; it is not taken as absent. */
    char p[1024];
    d = make_dataset("dangling-feat");
    snprintf(p, sizeof p, "%s/raw/node-feat.csv.gz", d);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(symlink("/nonexistent/node-feat.csv.gz", p), 0);
    expect_failure(d, NULL, 1, "raw/node-feat.csv.gz: a symbolic link that cannot be followed");
    d = make_dataset("dir-label");
    snprintf(p, sizeof p, "%s/raw/node-label.csv.gz", d);
    assert_int_equal(unlink(p), 0);
    assert_int_equal(mkdir(p, 0755), 0);
    expect_failure(d, NULL, 1, "raw/node-label.csv.gz: not a file");

    d = make_dataset("bad-label");
    set_file(d, "raw/node-label.csv.gz", "0\n1\n2,3\n0\n1\n1\n");
    expect_failure(d, NULL, 1, "raw/node-label.csv.gz:3: expected one class id, found '2,3' "
                               "(multi-label datasets are not supported)");

    d = make_dataset("bad-split");
    set_file(d, "split/time/test.csv.gz", "4\n60\n");
    expect_failure(d, NULL, 1, "split/time/test.csv.gz:2: node id 60 is outside [0, 6)");

    d = make_dataset("two-splits");
    snprintf(p, sizeof p, "%s/split/random", d);
    mkdir(p, 0755);
    expect_failure(d, NULL, 2, "holds several splits (");
    expect_failure(d, "--split=nope", 1, "no such split folder");

    d = make_dataset("missing");
    snprintf(p, sizeof p, "%s/raw/num-node-list.csv.gz", d);
    unlink(p);
    expect_failure(d, NULL, 1, "raw/num-node-list.csv.gz: no such file");
    expect_failure(tu_path("nowhere"), NULL, 1, "no such directory");
    expect_failure(tu_tmpdir(), NULL, 1,
                   "none of raw/edge.csv.gz, raw/data.npz, raw/num-node-dict.csv.gz found");

    /* A gzip stream cut short. */
    d = make_dataset("truncated");
    char big[20000] = "";
    for (int i = 0; i < 1000; i++) strcat(big, "0,1\n1,2\n");
    set_file(d, "raw/edge.csv.gz", big);
    set_file(d, "raw/num-edge-list.csv.gz", "2000\n");
    snprintf(p, sizeof p, "%s/raw/edge.csv.gz", d);
    struct stat st;
    stat(p, &st);
    assert_int_equal(truncate(p, st.st_size - 12), 0);
    expect_failure(d, NULL, 1, "raw/edge.csv.gz: truncated gzip stream");

    /* An existing output is kept without --force. */
    d = make_dataset("exists");
    out = tu_path("exists.h5");
    FILE *fp = fopen(out, "w");
    fputs("keep me", fp);
    fclose(fp);
    char *argv[] = {g_bin, "ogb", (char *)d, "-o", (char *)out, NULL};
    r = tu_run(argv);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "file exists (use --force to replace it)"));
    tu_run_free(&r);
    char *kept = tu_read_file(out);
    assert_string_equal(kept, "keep me");
    free(kept);
    char *argv2[] = {g_bin, "ogb", (char *)d, NULL};
    r = tu_run(argv2);
    assert_int_equal(r.status, 2);
    assert_non_null(strstr(r.err, "missing -o FILE"));
    tu_run_free(&r);
}

static void test_parsers(void **state)
{
    (void)state;
    int64_t s, d;
    assert_int_equal(gnn__ogb_parse_edge("12,34", 5, &s, &d), 0);
    assert_true(s == 12 && d == 34);
    assert_int_equal(gnn__ogb_parse_edge(" 1 , 2 ", 7, &s, &d), 0);
    assert_int_equal(gnn__ogb_parse_edge("1,2,3", 5, &s, &d), GNN_EFORMAT);
    assert_int_equal(gnn__ogb_parse_edge("1", 1, &s, &d), GNN_EFORMAT);
    assert_int_equal(gnn__ogb_parse_edge("99999999999999999999,1", 22, &s, &d), GNN_ERANGE);
    float v[4];
    int64_t n;
    assert_int_equal(gnn__ogb_parse_floats("1.5,-2e3,0.1", 12, v, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_true(v[0] == 1.5f && v[1] == -2000.0f && v[2] == (float)strtod("0.1", NULL));
    assert_int_equal(gnn__ogb_parse_floats("1,2,3,4,5", 9, v, 4, &n), GNN_ERANGE);
    assert_int_equal(n, 4);
    assert_int_equal(gnn__ogb_parse_floats("1,,2", 4, v, 4, &n), GNN_EFORMAT);
    /* A value beyond float32: its index, not the count of values. */
    assert_int_equal(gnn__ogb_parse_floats("1,1e39,2", 8, v, 4, &n), GNN_ERANGE);
    assert_int_equal(n, 1);
    assert_int_equal(gnn__ogb_parse_floats("1e400", 5, v, 4, &n), GNN_ERANGE);
    assert_int_equal(n, 0);
    /* Fast path and strtod agree on awkward decimals. */
    const char *cases[] = {"0.1", "-0.057943", "3.4028234e38", "1e-45", "123456789.123456789",
                           "0.30000000000000004", "7e22", "1.17549435e-38", "2.5e-7"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(gnn__ogb_parse_floats(cases[i], strlen(cases[i]), v, 1, &n), 0);
        if (v[0] != (float)strtod(cases[i], NULL)) fail_msg("%s parsed as %.9g", cases[i], v[0]);
    }
}

/* The small dataset of make_dataset in the npz layout. */
static const char *make_npz_dataset(const char *name)
{
    const char *d = make_dataset(name);
    char p[1024];
    const char *csv[] = {"edge", "node-feat", "node-label", "node_year", "num-node-list",
                         "num-edge-list"};
    for (size_t i = 0; i < sizeof csv / sizeof csv[0]; i++) {
        snprintf(p, sizeof p, "%s/raw/%s.csv.gz", d, csv[i]);
        unlink(p);
    }
    int64_t edge[2][7] = {{0, 1, 2, 3, 4, 5, 5}, {1, 2, 0, 4, 3, 0, 0}};
    float feat[18] = {0.5f, 1, -2, 1e-3f, 2.25f, 3, -0.125f, 0, 7, 1, 1, 1, 2, 2, 2, 3, 3, 3};
    int64_t nn = 6, ne = 7, year[6] = {2001, 2002, 2003, 2004, 2005, 2006};
    zip_t z = {0};
    zip_add(&z, "edge_index.npy", npy(1, "<i8", "(2, 7)", edge, sizeof edge), 8);
    zip_add(&z, "node_feat.npy", npy(1, "<f4", "(6, 3)", feat, sizeof feat), 8);
    zip_add(&z, "num_nodes_list.npy", npy(1, "<i8", "(1,)", &nn, 8), 0);
    zip_add(&z, "num_edges_list.npy", npy(1, "<i8", "(1,)", &ne, 8), 0);
    zip_add(&z, "node_year.npy", npy(1, "<i8", "(6, 1)", year, sizeof year), 8);
    buf_t a = zip_finish(&z);
    snprintf(p, sizeof p, "%s/raw/data.npz", d);
    write_file(p, &a);
    free(a.b);
    double lab[6] = {0, 1, 2, NAN, 1, NAN};
    zip_t zl = {.zip64 = 1};
    zip_add(&zl, "node_label.npy", npy(1, "<f8", "(6, 1)", lab, sizeof lab), 8);
    a = zip_finish(&zl);
    snprintf(p, sizeof p, "%s/raw/node-label.npz", d);
    write_file(p, &a);
    free(a.b);
    return d;
}

/* The same data in csv and npz layouts gives byte-identical graph files. */
static void test_npz_layout_equals_csv(void **state)
{
    (void)state;
    const char *csv = make_dataset("same-csv"), *npz = make_npz_dataset("same-npz");
    const char *o1 = tu_path("same-csv.h5"), *o2 = tu_path("same-npz.h5");
    const char *flags[] = {NULL, "--symmetrize"};
    for (int k = 0; k < 2; k++) {
        tu_run_t r = convert(csv, o1, flags[k]);
        assert_int_equal(r.status, 0);
        tu_run_free(&r);
        r = convert(npz, o2, flags[k]);
        if (r.status != 0) fail_msg("npz: %s", r.err);
        tu_run_free(&r);
        struct stat s1, s2;
        stat(o1, &s1);
        stat(o2, &s2);
        char *b1 = tu_read_file(o1), *b2 = tu_read_file(o2);
        assert_int_equal(s1.st_size, s2.st_size);
        assert_memory_equal(b1, b2, (size_t)s1.st_size);
        free(b1);
        free(b2);
    }
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(o2, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->n_node_data, 1);
    assert_string_equal(gnn_graph_file_info(f)->node_data[0], "year");
    gnn_graph_close(f);

    /* npz errors: wrong edge count, ids out of range, NaN features. */
    char p[1024];
    snprintf(p, sizeof p, "%s/raw/data.npz", npz);
    int64_t edge[2][7] = {{0, 1, 2, 3, 4, 5, 5}, {1, 2, 0, 4, 9, 0, 0}};
    float feat[18] = {NAN};
    int64_t nn = 6, ne = 7;
    zip_t z = {0};
    zip_add(&z, "edge_index.npy", npy(1, "<i8", "(2, 7)", edge, sizeof edge), 8);
    zip_add(&z, "node_feat.npy", npy(1, "<f4", "(6, 3)", feat, sizeof feat), 0);
    zip_add(&z, "num_nodes_list.npy", npy(1, "<i8", "(1,)", &nn, 8), 0);
    zip_add(&z, "num_edges_list.npy", npy(1, "<i8", "(1,)", &ne, 8), 0);
    buf_t a = zip_finish(&z);
    write_file(p, &a);
    free(a.b);
    expect_failure(npz, NULL, 1, "edge 4 (4 -> 9) has a node outside [0, 6)");
    /* A cut archive. */
    char *bytes = tu_read_file(p);
    FILE *fp = fopen(p, "wb");
    fwrite(bytes, 1, 100, fp);
    fclose(fp);
    free(bytes);
    expect_failure(npz, NULL, 1, "data.npz");
}

/* Counts beyond the format's limit of 2^62 are refused where they are read. */
static void test_count_limits(void **state)
{
    (void)state;
    const char *d = make_dataset("huge-nodes");
    set_file(d, "raw/num-node-list.csv.gz", "9223372036854775807\n");
    expect_failure(d, NULL, 1, "raw/num-node-list.csv.gz:1: node count 9223372036854775807 is "
                               "beyond the limit 2^62");
    set_file(d, "raw/num-node-list.csv.gz", "4611686018427387904\n");
    expect_failure(d, NULL, 1, "node count 4611686018427387904 is beyond the limit 2^62");
    d = make_dataset("huge-edges");
    set_file(d, "raw/num-edge-list.csv.gz", "\n9223372036854775807\n");
    expect_failure(d, NULL, 1, "raw/num-edge-list.csv.gz:2: edge count 9223372036854775807 is "
                               "beyond the limit 2^62");

    /* The npz layout's num_nodes_list. */
    d = make_dataset("huge-npz");
    char p[1024];
    const char *csv[] = {"edge", "num-node-list", "num-edge-list"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/raw/%s.csv.gz", d, csv[i]);
        unlink(p);
    }
    int64_t edge[2][1] = {{0}, {1}}, nn = INT64_MAX, ne = 1;
    zip_t z = {0};
    zip_add(&z, "edge_index.npy", npy(1, "<i8", "(2, 1)", edge, sizeof edge), 0);
    zip_add(&z, "num_nodes_list.npy", npy(1, "<i8", "(1,)", &nn, 8), 0);
    zip_add(&z, "num_edges_list.npy", npy(1, "<i8", "(1,)", &ne, 8), 0);
    buf_t a = zip_finish(&z);
    snprintf(p, sizeof p, "%s/raw/data.npz", d);
    write_file(p, &a);
    free(a.b);
    expect_failure(d, NULL, 1, "data.npz: node count 9223372036854775807 in 'num_nodes_list' is "
                               "beyond the limit 2^62");
}

/* A dataset of n nodes and two edges, without features, labels or split. */
static const char *make_sparse_dataset(const char *name, const char *n, const char *edges)
{
    static char dir[2][640];
    static int next;
    char *d = dir[next++ % 2];
    snprintf(d, sizeof dir[0], "%s", tu_path(name));
    char p[1024];
    mkdir(d, 0755);
    snprintf(p, sizeof p, "%s/raw", d);
    mkdir(p, 0755);
    set_file(d, "raw/edge.csv.gz", edges);
    set_file(d, "raw/num-node-list.csv.gz", n);
    set_file(d, "raw/num-edge-list.csv.gz", "2\n");
    return d;
}

/* --mem-budget takes what the README's formula asks: 8 (N + 1) bytes of
 * offsets, the buffers and the edges; a budget below the offsets is
 * refused before the edges are read. */
static void test_mem_budget(void **state)
{
    (void)state;
    const char *d = make_sparse_dataset("budget", "600000\n", "0,1\n1,2\n");
    const char *out = tu_path("budget.h5");
    tu_run_t r = convert(d, out, "--mem-budget=6M");
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    assert_int_equal(g.csr.n_rows, 600000);
    assert_int_equal(g.csr.nnz, 2);
    gnn_graph_free(&g);

    d = make_sparse_dataset("budget-bad-edges", "600000\n", "0,1\n1;2\n");
    expect_failure(d, "--mem-budget=1M", 1,
                   "memory budget of 1048576 bytes is too small for 600000 nodes");
}

/* What is read last (the split) is checked before the edges. */
static void test_split_checked_first(void **state)
{
    (void)state;
    const char *bad_edges = "0,1\n1,2\n2;0\n3,4\n4,3\n5,0\n5,0\n";
    const char *d = make_dataset("split-first-two");
    set_file(d, "raw/edge.csv.gz", bad_edges);
    char p[1024];
    snprintf(p, sizeof p, "%s/split/random", d);
    mkdir(p, 0755);
    expect_failure(d, NULL, 2, "holds several splits (");
    expect_failure(d, "--split=nope", 1, "split/nope: no such split folder (found: ");

    d = make_dataset("split-first-missing");
    set_file(d, "raw/edge.csv.gz", bad_edges);
    snprintf(p, sizeof p, "%s/split/time/valid.csv.gz", d);
    unlink(p);
    expect_failure(d, NULL, 1, "split/time/valid.csv.gz: no such file");

    d = make_npz_dataset("split-first-npz");
    snprintf(p, sizeof p, "%s/split/time/test.csv.gz", d);
    unlink(p);
    expect_failure(d, NULL, 1, "split/time/test.csv.gz: no such file");
    /* A plain .csv split file is taken too. */
    snprintf(p, sizeof p, "%s/split/time/test.csv", d);
    FILE *fp = fopen(p, "w");
    fputs("4\n5\n", fp);
    fclose(fp);
    tu_run_t r = convert(d, tu_path("split-csv.h5"), NULL);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
}

/* A split file that lists a node twice is refused at that line. */
static void test_split_duplicate(void **state)
{
    (void)state;
    const char *d = make_dataset("split-dup");
    set_file(d, "split/time/train.csv.gz", "0\n2\n0\n");
    expect_failure(d, NULL, 1, "split/time/train.csv.gz:3: node 0 is listed twice");
}

/* A feature value beyond float32 is named as such. */
static void test_feature_range(void **state)
{
    (void)state;
    const char *d = make_dataset("feat-range");
    const char *bad[][2] = {{"1e39", ":2: value '1e39' is outside the float32 range"},
                            {"-5e300", ":2: value '-5e300' is outside the float32 range"},
                            {" 1e400 ", ":2: value '1e400' is outside the float32 range"}};
    for (int k = 0; k < 3; k++) {
        char text[256];
        snprintf(text, sizeof text, "0,1,2\n0,%s,2\n0,1,2\n0,1,2\n0,1,2\n0,1,2\n", bad[k][0]);
        set_file(d, "raw/node-feat.csv.gz", text);
        expect_failure(d, NULL, 1, bad[k][1]);
    }
    set_file(d, "raw/node-feat.csv.gz", "0,1,2\n0,1,2,3\n0,1,2\n0,1,2\n0,1,2\n0,1,2\n");
    expect_failure(d, NULL, 1, ":2: more than 3 values (the first row has 3)");
}

/* A header line in edge.csv is named as such. */
static void test_edge_header(void **state)
{
    (void)state;
    const char *d = make_dataset("edge-header");
    set_file(d, "raw/edge.csv.gz", "src,dst\n0,1\n1,2\n2,0\n3,4\n4,3\n5,0\n5,0\n");
    expect_failure(d, NULL, 1, "raw/edge.csv.gz:1: expected two integer node ids 'SRC,DST' (the "
                               "file has no header line), found 'src,dst'");
}

/* Labels: blank lines after the last row are skipped, -1 is unlabelled,
 * other negative values are refused. */
static void test_label_values(void **state)
{
    (void)state;
    const char *d = make_dataset("labels");
    set_file(d, "raw/node-label.csv.gz", "0\n1\n2\n\n-1\nnan\n\n\n");
    const char *out = tu_path("labels.h5");
    tu_run_t r = convert(d, out, NULL);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    int64_t lab[] = {0, 1, 2, -1, -1, -1};
    assert_memory_equal(g.label, lab, sizeof lab);
    gnn_graph_free(&g);
    set_file(d, "raw/node-label.csv.gz", "0\n1\n2\n\n1\nnan\n\n7\n");
    expect_failure(d, NULL, 1, "raw/node-label.csv.gz:8: more labels than the 6 nodes");
    set_file(d, "raw/node-label.csv.gz", "0\n1\n-2\n\n1\nnan\n");
    expect_failure(d, NULL, 1, "raw/node-label.csv.gz:3: class id -2 is not a non-negative "
                               "integer (empty, nan or -1 mark an unlabelled node)");

    /* The npz layout: -1 unlabelled, -3 refused. */
    d = make_npz_dataset("labels-npz");
    char p[1024];
    double nl[6] = {0, 1, -1, NAN, 1, -3};
    zip_t zl = {0};
    zip_add(&zl, "node_label.npy", npy(1, "<f8", "(6,)", nl, sizeof nl), 0);
    buf_t a = zip_finish(&zl);
    snprintf(p, sizeof p, "%s/raw/node-label.npz", d);
    write_file(p, &a);
    free(a.b);
    expect_failure(d, NULL, 1, "node_label[5] = -3 is not a class id");
    nl[5] = -1;
    zl = (zip_t){0};
    zip_add(&zl, "node_label.npy", npy(1, "<f8", "(6,)", nl, sizeof nl), 0);
    a = zip_finish(&zl);
    write_file(p, &a);
    free(a.b);
    r = convert(d, out, NULL);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
    assert_int_equal(gnn_graph_load(out, &g), 0);
    int64_t lab2[] = {0, 1, -1, -1, 1, -1};
    assert_memory_equal(g.label, lab2, sizeof lab2);
    gnn_graph_free(&g);
    /* A label file that is there but cannot be read is not taken as
     * absent (no labels). */
    assert_int_equal(unlink(p), 0);
    assert_int_equal(symlink("/nonexistent/node-label.npz", p), 0);
    expect_failure(d, NULL, 1, "raw/node-label.npz: a symbolic link that cannot be followed");
}

/* ---- Cora ---------------------------------------------------------------- */

/* The lines of a gzip csv, each split by commas into at most cap numbers. */
static int64_t read_csv_rows(const char *path, double *vals, int64_t cap_rows, int cols)
{
    gzFile z = gzopen(path, "rb");
    assert_non_null(z);
    static char line[1 << 16];
    int64_t r = 0;
    while (gzgets(z, line, sizeof line)) {
        char *p = line;
        for (int c = 0; c < cols; c++) {
            if (r < cap_rows) vals[r * cols + c] = strtod(p, &p);
            if (*p == ',') p++;
        }
        r++;
    }
    gzclose(z);
    return r;
}

static void test_cora(void **state)
{
    (void)state;
    const char *out = tu_path("cora.h5");
    tu_run_t r = convert(g_cora, out, NULL);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);

    char *argv[] = {g_bin, "info", (char *)out, "--json", NULL};
    r = tu_run(argv);
    assert_int_equal(r.status, 0);
    const char *want[] = {"\"num_nodes\": 2708,", "\"num_edges\": 10556,", "\"feat_dim\": 1433,",
                          "\"num_classes\": 7,", "\"train\": 140,", "\"valid\": 500,",
                          "\"test\": 1000,"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing %s in %s", want[i], r.out);
    tu_run_free(&r);

    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(out, &g), 0);
    char p[1024];
    /* Edges: the file's CSR equals the csv's edges sorted by destination. */
    static double e[10556 * 2];
    snprintf(p, sizeof p, "%s/raw/edge.csv.gz", g_cora);
    assert_int_equal(read_csv_rows(p, e, 10556, 2), 10556);
    gnn_vid_t *src = malloc(sizeof *src * 10556), *dst = malloc(sizeof *dst * 10556);
    for (int i = 0; i < 10556; i++) {
        src[i] = (gnn_vid_t)e[2 * i];
        dst[i] = (gnn_vid_t)e[2 * i + 1];
    }
    gnn_csr_t ref;
    assert_int_equal(gnn_csr_from_edges(2708, 10556, src, dst, NULL, GNN_BUILD_SORT, &ref), 0);
    assert_true(gnn_csr_equal(&ref, &g.csr));
    gnn_csr_free(&ref);
    free(src);
    free(dst);
    /* Features: rows 0, 1354 and 2707 spot-checked, plus the total sum. */
    double *f = malloc(sizeof(double) * 2708 * 1433);
    snprintf(p, sizeof p, "%s/raw/node-feat.csv.gz", g_cora);
    assert_int_equal(read_csv_rows(p, f, 2708, 1433), 2708);
    int64_t rows[] = {0, 1354, 2707};
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 1433; j++)
            assert_true(g.feat[rows[k] * 1433 + j] == (float)f[rows[k] * 1433 + j]);
    double sum_csv = 0, sum_h5 = 0;
    for (int64_t i = 0; i < 2708 * 1433; i++) {
        sum_csv += f[i];
        sum_h5 += g.feat[i];
    }
    assert_true(sum_csv == sum_h5 && sum_csv > 1000);
    free(f);
    /* Labels and splits exactly. */
    static double lab[2708], sp[1000];
    snprintf(p, sizeof p, "%s/raw/node-label.csv.gz", g_cora);
    assert_int_equal(read_csv_rows(p, lab, 2708, 1), 2708);
    for (int i = 0; i < 2708; i++) assert_int_equal(g.label[i], (int64_t)lab[i]);
    const char *names[] = {"train", "valid", "test"};
    for (int s = 0; s < 3; s++) {
        snprintf(p, sizeof p, "%s/split/planetoid/%s.csv.gz", g_cora, names[s]);
        int64_t n = read_csv_rows(p, sp, 1000, 1);
        assert_int_equal(n, g.split_size[s]);
        for (int64_t i = 0; i < n; i++) assert_int_equal(g.split[s][i], (int64_t)sp[i]);
    }
    gnn_graph_free(&g);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset [cora]\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    if (argc > 2 && !strcmp(argv[2], "cora")) {
        g_cora = tu_shared_dataset("cora");
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cora)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parsers),
        cmocka_unit_test(test_small_exact),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_npz_layout_equals_csv),
        cmocka_unit_test(test_count_limits),
        cmocka_unit_test(test_mem_budget),
        cmocka_unit_test(test_split_checked_first),
        cmocka_unit_test(test_split_duplicate),
        cmocka_unit_test(test_feature_range),
        cmocka_unit_test(test_edge_header),
        cmocka_unit_test(test_label_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
