/*
 * The link sets of the graph file (link/ with valid_pos, valid_neg,
 * test_pos, test_neg and neg_per_pos): a round trip through
 * gnn_graph_write and gnn_graph_load, gnn_graph_read_link and the info of
 * an open file, files without them unchanged, the writer's refusals, and
 * corrupt files (an id out of range, a wrong negative count, a missing set,
 * a bad neg_per_pos, wrong columns, a negative of another source), each
 * GNN_EFORMAT with a message naming the file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/testutil.h"

#include <hdf5.h>
#include <string.h>

#define N 12
#define K 2

/* A directed ring of N nodes with node 0 -> every node, and link sets:
 * valid positives (1, 2), (3, 4); test positive (5, 6); K negatives each
 * from the positive's source. */
static void make_graph(gnn_graph_t *g)
{
    gnn_vid_t src[2 * N], dst[2 * N];
    int64_t m = 0;
    for (gnn_vid_t v = 0; v < N; v++) {
        src[m] = v;
        dst[m++] = (v + 1) % N;
        if (v > 1) {
            src[m] = 0;
            dst[m++] = v;
        }
    }
    gnn_graph_init(g);
    assert_int_equal(gnn_csr_from_edges(N, m, src, dst, NULL, GNN_BUILD_SORT, &g->csr), 0);
    g->directed = 1;
    static const int64_t vp[] = {1, 2, 3, 4}, vn[] = {1, 5, 1, 7, 3, 9, 3, 0},
                         tp[] = {5, 6}, tn[] = {5, 1, 5, 11};
    const int64_t *sets[] = {vp, vn, tp, tn};
    const int64_t n[] = {2, 2 * K, 1, K};
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        g->link[s] = malloc(sizeof(int64_t) * 2 * (size_t)n[s]);
        memcpy(g->link[s], sets[s], sizeof(int64_t) * 2 * (size_t)n[s]);
        g->link_size[s] = n[s];
    }
    g->link_neg_per_pos = K;
}

static const char *write_graph(const char *name)
{
    const char *path = tu_path(name);
    gnn_graph_t g;
    make_graph(&g);
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    return path;
}

static void test_round_trip(void **state)
{
    (void)state;
    const char *path = write_graph("link.h5");
    gnn_graph_t want, got;
    make_graph(&want);
    assert_int_equal(gnn_graph_load(path, &got), 0);
    assert_int_equal(got.link_neg_per_pos, K);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        assert_int_equal(got.link_size[s], want.link_size[s]);
        assert_memory_equal(got.link[s], want.link[s], sizeof(int64_t) * 2 * (size_t)want.link_size[s]);
    }
    assert_true(gnn_csr_equal(&got.csr, &want.csr));

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    assert_int_equal(in->link_neg_per_pos, K);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        assert_int_equal(in->link_size[s], want.link_size[s]);
        int64_t *v, n;
        assert_int_equal(gnn_graph_read_link(f, (gnn_link_set_t)s, &v, &n), 0);
        assert_int_equal(n, want.link_size[s]);
        assert_memory_equal(v, want.link[s], sizeof(int64_t) * 2 * (size_t)n);
        free(v);
    }
    int64_t *v = NULL, n = 7;
    assert_int_equal(gnn_graph_read_link(f, (gnn_link_set_t)4, &v, &n), GNN_EINVAL);
    gnn_graph_close(f);
    assert_string_equal(gnn_link_set_names[GNN_LINK_TEST_NEG], "test_neg");
    gnn_graph_free(&want);
    gnn_graph_free(&got);
}

/* A file without link sets reads as before: sizes -1, K 0, no group. */
static void test_absent(void **state)
{
    (void)state;
    const char *path = tu_path("plain.h5");
    gnn_graph_t g, got;
    make_graph(&g);
    g.link_neg_per_pos = 0;
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    hid_t h = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(h >= 0);
    assert_true(H5Lexists(h, "link", H5P_DEFAULT) == 0);
    H5Fclose(h);
    assert_int_equal(gnn_graph_load(path, &got), 0);
    assert_int_equal(got.link_neg_per_pos, 0);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        assert_int_equal(got.link_size[s], -1);
        assert_null(got.link[s]);
    }
    gnn_graph_free(&got);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->link_neg_per_pos, 0);
    assert_int_equal(gnn_graph_file_info(f)->link_size[GNN_LINK_VALID_POS], -1);
    int64_t *v = NULL, n = 3;
    assert_int_equal(gnn_graph_read_link(f, GNN_LINK_VALID_POS, &v, &n), GNN_EINVAL);
    assert_null(v);
    assert_int_equal(n, 0);
    gnn_graph_close(f);
}

/* put_link refuses what a reader would refuse, and only once per file. */
static void test_writer_refusals(void **state)
{
    (void)state;
    const char *path = tu_path("refused.h5");
    gnn_graph_header_t h = {.num_nodes = N, .num_edges = 0, .directed = 1};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    int64_t vp[] = {1, 2}, vn[] = {1, 3, 1, 4}, tp[] = {5, 6}, tn[] = {5, 7, 5, 8};
    const int64_t *sets[] = {vp, vn, tp, tn};
    int64_t n[] = {1, 2, 1, 2};
    assert_int_equal(gnn_graph_writer_put_link(w, 0, sets, n), GNN_EINVAL);
    assert_int_equal(gnn_graph_writer_put_link(w, 1, sets, n), GNN_EINVAL); /* 2 != 1 x 1 */
    vn[3] = N;
    assert_int_equal(gnn_graph_writer_put_link(w, 2, sets, n), GNN_EFORMAT); /* id out of range */
    vn[3] = 1;
    assert_int_equal(gnn_graph_writer_put_link(w, 2, sets, n), GNN_EINVAL); /* (1, 1) */
    vn[3] = 4;
    tn[2] = 6;
    assert_int_equal(gnn_graph_writer_put_link(w, 2, sets, n), GNN_EINVAL); /* other source */
    assert_non_null(strstr(gnn_error_message(), "link/test_neg[1] has src 6"));
    tn[2] = 5;
    assert_int_equal(gnn_graph_writer_put_link(w, 2, sets, n), 0);
    assert_int_equal(gnn_graph_writer_put_link(w, 2, sets, n), GNN_EINVAL);
    gnn_eid_t ip[N + 1] = {0};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, N + 1, ip), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    assert_int_equal(g.link_size[GNN_LINK_TEST_NEG], 2);
    assert_int_equal(g.link[GNN_LINK_TEST_NEG][3], 8);
    gnn_graph_free(&g);
}

/* ---- Corrupt files ------------------------------------------------------ */

static hid_t open_rw(const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

/* Replace dataset name of path by an int64 one of rows x cols from v. */
static void remake(const char *path, const char *name, hsize_t rows, hsize_t cols, const int64_t *v)
{
    hid_t f = open_rw(path);
    assert_true(H5Ldelete(f, name, H5P_DEFAULT) >= 0);
    hsize_t dims[2] = {rows, cols};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t d = H5Dcreate2(f, name, H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    if (rows * cols > 0) assert_true(H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Sclose(sp);
    assert_true(H5Fclose(f) >= 0);
}

static void set_k(const char *path, int64_t k)
{
    hid_t f = open_rw(path);
    hid_t g = H5Gopen2(f, "link", H5P_DEFAULT);
    hid_t a = H5Aopen(g, "neg_per_pos", H5P_DEFAULT);
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &k) >= 0);
    H5Aclose(a);
    H5Gclose(g);
    assert_true(H5Fclose(f) >= 0);
}

/* gnn_graph_load of path fails with GNN_EFORMAT and a message naming the
 * file and holding want. */
static void expect_corrupt(const char *path, const char *want)
{
    gnn_graph_t g;
    int rc = gnn_graph_load(path, &g);
    if (rc != GNN_EFORMAT || !strstr(gnn_error_message(), path) ||
        !strstr(gnn_error_message(), want))
        fail_msg("load: %d '%s', expected GNN_EFORMAT with '%s'", rc, gnn_error_message(), want);
    assert_null(g.link[0]);
    assert_int_equal(g.link_size[0], -1);
}

static void test_corrupt(void **state)
{
    (void)state;
    const char *path = tu_path("corrupt.h5");
    int64_t vn[2 * 2 * K] = {1, 5, 1, 7, 3, 9, 3, 0};

    /* An id out of range: load and read_link refuse it. */
    write_graph("corrupt.h5");
    vn[5] = N;
    remake(path, "link/valid_neg", 2 * K, 2, vn);
    expect_corrupt(path, "link/valid_neg[5] = 12 is outside [0, 12)");
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    int64_t *v = NULL, n;
    assert_int_equal(gnn_graph_read_link(f, GNN_LINK_VALID_NEG, &v, &n), GNN_EFORMAT);
    assert_null(v);
    gnn_graph_close(f);
    vn[5] = -1;
    remake(path, "link/valid_neg", 2 * K, 2, vn);
    expect_corrupt(path, "is outside [0, 12)");
    vn[5] = 9;

    /* A wrong negative count: open refuses it too. */
    write_graph("corrupt.h5");
    remake(path, "link/valid_neg", 2 * K - 1, 2, vn);
    expect_corrupt(path, "'link/valid_neg' has 3 pairs, expected neg_per_pos x 2");
    assert_int_equal(gnn_graph_open(path, &f), GNN_EFORMAT);
    write_graph("corrupt.h5");
    set_k(path, 1);
    expect_corrupt(path, "'link/valid_neg' has 4 pairs");
    set_k(path, 0);
    expect_corrupt(path, "neg_per_pos = 0");

    /* One set missing, another of three columns, another of rank 1. */
    write_graph("corrupt.h5");
    hid_t h = open_rw(path);
    assert_true(H5Ldelete(h, "link/test_pos", H5P_DEFAULT) >= 0);
    H5Fclose(h);
    expect_corrupt(path, "missing dataset 'link/test_pos'");
    write_graph("corrupt.h5");
    int64_t three[3] = {5, 6, 7};
    remake(path, "link/test_pos", 1, 3, three);
    expect_corrupt(path, "'link/test_pos' has 3 columns");
    write_graph("corrupt.h5");
    h = open_rw(path);
    assert_true(H5Adelete_by_name(h, "link", "neg_per_pos", H5P_DEFAULT) >= 0);
    H5Fclose(h);
    expect_corrupt(path, "neg_per_pos");

    /* A negative of another source, or of its own source as target. */
    write_graph("corrupt.h5");
    int64_t tn[2 * K] = {5, 1, 4, 11};
    remake(path, "link/test_neg", K, 2, tn);
    expect_corrupt(path, "link/test_neg[1] has src 4, not the src 5 of its positive 0");
    tn[2] = 5;
    tn[3] = 5;
    remake(path, "link/test_neg", K, 2, tn);
    expect_corrupt(path, "link/test_neg[1] pairs node 5 with itself");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_absent),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_corrupt),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
