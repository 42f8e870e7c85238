/*
 * gnn-dataset info, run as a user runs it: the table and the JSON object
 * (its fixed key names and values) for a file written here, and for bad
 * input one line on standard error, a non-zero exit and nothing on
 * standard output. argv[1] is the path of the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"

#include <string.h>

static char *g_bin;

static const char *write_sample(void)
{
    static char path[640];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tu_path("sample \"q\".h5"));
    gnn_graph_t g;
    gnn_graph_init(&g);
    /* 6 nodes, a directed cycle plus one chord; node 5 has no in-edge. */
    gnn_vid_t src[] = {0, 1, 2, 3, 4, 0}, dst[] = {1, 2, 3, 4, 0, 2};
    assert_int_equal(gnn_csr_from_edges(6, 6, src, dst, NULL, GNN_BUILD_SORT, &g.csr), 0);
    g.directed = 1;
    g.feat_dim = 3;
    g.feat = calloc(18, sizeof(float));
    int64_t labels[] = {0, 1, 2, 3, -1, 1};
    g.label = malloc(sizeof labels);
    memcpy(g.label, labels, sizeof labels);
    g.num_classes = 4;
    int64_t tr[] = {0, 1, 2}, va[] = {3}, te[] = {4, 5};
    int64_t *sp[] = {tr, va, te};
    int64_t n[] = {3, 1, 2};
    for (int k = 0; k < 3; k++) {
        g.split[k] = malloc(sizeof(int64_t) * (size_t)n[k]);
        memcpy(g.split[k], sp[k], sizeof(int64_t) * (size_t)n[k]);
        g.split_size[k] = n[k];
    }
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    return path;
}

static void test_json(void **state)
{
    (void)state;
    const char *path = write_sample();
    char *argv[] = {g_bin, "info", (char *)path, "--json", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    assert_int_equal(tu_count_lines(r.out), 1);
    const char *want[] = {"\"num_nodes\": 6,", "\"num_edges\": 6,", "\"feat_dim\": 3,",
                          "\"num_classes\": 4,", "\"train\": 3,", "\"valid\": 1,", "\"test\": 2,",
                          "\"directed\": true", "\"version\": 1", "\"sorted\": true",
                          "\"in_degree\": {\"min\": 0, \"max\": 2, \"mean\": 1, \"zero\": 1}",
                          "\"file\": \"", "sample \\\"q\\\".h5\""};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing %s in %s", want[i], r.out);
    assert_true(r.out[0] == '{');
    tu_run_free(&r);
}

static void test_table(void **state)
{
    (void)state;
    const char *path = write_sample();
    char *argv[] = {g_bin, "info", (char *)path, NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    const char *want[] = {"nodes         6\n", "edges         6 stored (directed)\n",
                          "features      3 per node", "classes       4\n",
                          "split         train 3, valid 1, test 2\n"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing '%s' in:\n%s", want[i], r.out);
    tu_run_free(&r);
}


static void test_bad_input(void **state)
{
    (void)state;
    const char *text = tu_path("edges.txt");
    FILE *f = fopen(text, "w");
    fputs("0 1\n", f);
    fclose(f);
    char *a1[] = {g_bin, "info", (char *)text, NULL};
    tu_expect_failure(a1, NULL, 1, "not an HDF5 file");
    char *a2[] = {g_bin, "info", "/nonexistent/x.h5", NULL};
    tu_expect_failure(a2, NULL, 1, "/nonexistent/x.h5: No such file or directory");
    char *a3[] = {g_bin, "info", NULL};
    tu_expect_failure(a3, NULL, 2, "expected 1 argument");
    char *a4[] = {g_bin, "info", (char *)write_sample(), "--jsn", NULL};
    tu_expect_failure(a4, NULL, 2, "unknown option '--jsn' (did you mean '--json'?) (see gnn-dataset info --help)");
    char *a5[] = {g_bin, "frobnicate", NULL};
    tu_expect_failure(a5, NULL, 2, "unknown command 'frobnicate'");
    char *a6[] = {g_bin, "info", (char *)write_sample(), "extra", NULL};
    tu_expect_failure(a6, NULL, 2, "extra");
}

static void test_help(void **state)
{
    (void)state;
    char *argv[] = {g_bin, "info", "--help", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: gnn-dataset info"));
    assert_non_null(strstr(r.out, "--json"));
    tu_run_free(&r);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
