/*
 * gnn-dataset info, run as a user runs it: the table and the JSON object
 * (its fixed key names and values) for a file written here, the node types
 * and relations of a typed file (gnn-dataset generate hsbm) with their
 * counts recomputed from the file, and for bad input one line on standard
 * error, a non-zero exit and nothing on standard output. argv[1] is the
 * path of the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/json.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"
#include "tests/common/jsontest.h"

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

/* A version 1 file has no types: null in the JSON, no lines in the table. */
static void test_untyped_has_no_types(void **state)
{
    (void)state;
    const char *path = write_sample();
    char *argv[] = {g_bin, "info", (char *)path, "--json", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(tu_json_skip(r.out));
    assert_non_null(strstr(r.out, ", \"node_types\": null, \"relations\": null, "));
    tu_run_free(&r);
    char *a2[] = {g_bin, "info", (char *)path, NULL};
    r = tu_run(a2);
    assert_int_equal(r.status, 0);
    assert_null(strstr(r.out, "node types"));
    assert_null(strstr(r.out, "relations"));
    tu_run_free(&r);
}

/* The hsbm file of the typed tests, and its stored edges per relation
 * counted here from edge_type. */
static const char *write_typed(int64_t *count)
{
    const char *path = tu_path("typed.h5");
    char *gen[] = {g_bin, "generate", "hsbm", "--nodes", "1003", "--types", "4", "--classes", "3",
                   "--feat-dim", "7", "--featureless", "2", "--seed", "5", "-o", (char *)path,
                   "--force", "-q", NULL};
    char *out = tu_run_ok_argv(gen);
    free(out);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    assert_int_equal(in->types->n_rels, 7);
    int32_t *et = malloc(sizeof *et * (size_t)in->num_edges);
    assert_int_equal(gnn_graph_read_etypes(f, 0, in->num_edges, et), 0);
    memset(count, 0, sizeof(int64_t) * 7);
    for (int64_t e = 0; e < in->num_edges; e++) count[et[e]]++;
    int64_t total = 0;
    for (int r = 0; r < 7; r++) {
        assert_true(count[r] > 0);
        total += count[r];
    }
    assert_int_equal(total, in->num_edges);
    free(et);
    gnn_graph_close(f);
    return path;
}

/* Relation r of the hsbm file: name, source and destination type. */
static void hsbm_relation(int r, char name[32], const char **src, const char **dst)
{
    static const char *const t[] = {"t0", "t1", "t2", "t3"};
    int k = (r + 1) / 2;
    if (r == 0)
        snprintf(name, 32, "r0");
    else
        snprintf(name, 32, "%sr%d", r % 2 ? "" : "rev_", k);
    *src = r % 2 || r == 0 ? t[k] : t[0];
    *dst = r % 2 || r == 0 ? t[0] : t[k];
}

static void test_typed_table(void **state)
{
    (void)state;
    int64_t count[7];
    const char *path = write_typed(count);
    char *argv[] = {g_bin, "info", (char *)path, NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.err, "");
    /* 1003 nodes over 4 types: t0 1003 - 3 x 250 = 253, the others 250;
     * the last two featureless. */
    const char *want[] = {
        "format        gnn-graph version 2\n",
        "nodes         1003\n",
        "node types    t0                   253 nodes [0, 253), 7 features, target (labels)\n"
        "              t1                   250 nodes [253, 503), 7 features\n"
        "              t2                   250 nodes [503, 753), featureless\n"
        "              t3                   250 nodes [753, 1003), featureless\n"
        "relations     t0 -r0-> t0: ",
        "features      per node type, the widest 7 (float32)\n",
        "classes       3\n",
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing '%s' in:\n%s", want[i], r.out);
    for (int k = 0; k < 7; k++) {
        char line[160], name[32];
        const char *src, *dst;
        hsbm_relation(k, name, &src, &dst);
        snprintf(line, sizeof line, "%s %s -%s-> %s: %lld edges\n",
                 k ? "             " : "relations    ", src, name, dst, (long long)count[k]);
        if (!strstr(r.out, line)) fail_msg("missing '%s' in:\n%s", line, r.out);
    }
    tu_run_free(&r);
}

static void test_typed_json(void **state)
{
    (void)state;
    int64_t count[7];
    const char *path = write_typed(count);
    char *argv[] = {g_bin, "info", (char *)path, "--json", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_int_equal(tu_count_lines(r.out), 1);
    const char *end = tu_json_skip(r.out);
    assert_non_null(end);
    assert_string_equal(end, "\n");
    assert_int_equal(tu_json_num(r.out, "version"), 2);
    assert_int_equal(tu_json_num(r.out, "num_nodes"), 1003);
    assert_int_equal(tu_json_num(r.out, "feat_dim"), 7);
    int64_t total = 0;
    for (int k = 0; k < 7; k++) total += count[k];
    assert_int_equal(tu_json_num(r.out, "num_edges"), total);
    const char *types =
        "\"node_types\": [{\"name\": \"t0\", \"nodes\": 253, \"first\": 0, \"feat_dim\": 7, "
        "\"target\": true}, {\"name\": \"t1\", \"nodes\": 250, \"first\": 253, \"feat_dim\": 7, "
        "\"target\": false}, {\"name\": \"t2\", \"nodes\": 250, \"first\": 503, \"feat_dim\": 0, "
        "\"target\": false}, {\"name\": \"t3\", \"nodes\": 250, \"first\": 753, \"feat_dim\": 0, "
        "\"target\": false}], ";
    if (!strstr(r.out, types)) fail_msg("missing %s in %s", types, r.out);
    char rels[2048] = "\"relations\": [";
    for (int k = 0; k < 7; k++) {
        char name[32];
        const char *src, *dst;
        hsbm_relation(k, name, &src, &dst);
        snprintf(rels + strlen(rels), sizeof rels - strlen(rels),
                 "%s{\"name\": \"%s\", \"src\": \"%s\", \"dst\": \"%s\", \"edges\": %lld}",
                 k ? ", " : "", name, src, dst, (long long)count[k]);
    }
    snprintf(rels + strlen(rels), sizeof rels - strlen(rels), "], \"in_degree\": ");
    if (!strstr(r.out, rels)) fail_msg("missing %s in %s", rels, r.out);
    tu_run_free(&r);
}

/* A typed file written here: no target type, no features, a relation
 * without edges (listed with 0). */
static void test_typed_empty_relation(void **state)
{
    (void)state;
    const char *path = tu_path("typed-small.h5");
    gnn_graph_types_t t = {.n_ntypes = 2, .n_rels = 2, .off = {0, 2, 3}, .target = -1};
    snprintf(t.ntype[0], GNN_TYPE_NAME_MAX, "user");
    snprintf(t.ntype[1], GNN_TYPE_NAME_MAX, "item");
    snprintf(t.rel[0], GNN_TYPE_NAME_MAX, "buys");
    t.rel_src[0] = 0, t.rel_dst[0] = 1;
    snprintf(t.rel[1], GNN_TYPE_NAME_MAX, "sold-to");
    t.rel_src[1] = 1, t.rel_dst[1] = 0;
    gnn_graph_header_t h = {.num_nodes = 3, .num_edges = 2, .directed = 1, .types = &t};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    gnn_eid_t ip[] = {0, 0, 0, 2};
    gnn_vid_t idx[] = {0, 1};
    int32_t et[] = {0, 0};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, ip), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 2, idx, NULL), 0);
    assert_int_equal(gnn_graph_writer_put_etypes(w, 0, 2, et), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);

    char *argv[] = {g_bin, "info", (char *)path, NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    const char *want = "node types    user                 2 nodes [0, 2), featureless\n"
                       "              item                 1 nodes [2, 3), featureless\n"
                       "relations     user -buys-> item: 2 edges\n"
                       "              item -sold-to-> user: 0 edges\n"
                       "features      none\n";
    if (!strstr(r.out, want)) fail_msg("missing '%s' in:\n%s", want, r.out);
    tu_run_free(&r);
    char *a2[] = {g_bin, "info", (char *)path, "--json", NULL};
    r = tu_run(a2);
    assert_int_equal(r.status, 0);
    assert_non_null(tu_json_skip(r.out));
    const char *jwant =
        "\"node_types\": [{\"name\": \"user\", \"nodes\": 2, \"first\": 0, \"feat_dim\": 0, "
        "\"target\": false}, {\"name\": \"item\", \"nodes\": 1, \"first\": 2, \"feat_dim\": 0, "
        "\"target\": false}], \"relations\": [{\"name\": \"buys\", \"src\": \"user\", \"dst\": "
        "\"item\", \"edges\": 2}, {\"name\": \"sold-to\", \"src\": \"item\", \"dst\": \"user\", "
        "\"edges\": 0}]";
    if (!strstr(r.out, jwant)) fail_msg("missing %s in %s", jwant, r.out);
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

/* 1 when s is valid UTF-8. */
static int utf8_valid(const unsigned char *s)
{
    while (*s) {
        int n = *s < 0x80 ? 1 : *s >= 0xC2 && *s <= 0xDF ? 2 : *s >= 0xE0 && *s <= 0xEF ? 3
              : *s >= 0xF0 && *s <= 0xF4 ? 4 : 0;
        if (!n) return 0;
        for (int i = 1; i < n; i++)
            if ((s[i] & 0xC0) != 0x80) return 0;
        s += n;
    }
    return 1;
}

/* Every extra node array is listed by its exact name: names with commas,
 * more names than fit a short buffer, and names that are not UTF-8 (the
 * JSON stays valid). */
static void test_node_data_names(void **state)
{
    (void)state;
    const char *path = tu_path("node-data.h5");
    gnn_graph_header_t h = {.num_nodes = 2, .num_edges = 0, .directed = 1};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    gnn_eid_t ip[3] = {0, 0, 0};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 3, ip), 0);
    int64_t col[2] = {7, 8};
    char names[40][64];
    int n = 0;
    snprintf(names[n++], sizeof names[0], "a,b");
    snprintf(names[n++], sizeof names[0], "bad\xff\xfe");
    snprintf(names[n++], sizeof names[0], "ann\xc3\xa9" "e");
    snprintf(names[n++], sizeof names[0], "cut\xe2\x82");
    while (n < 30) {
        snprintf(names[n], sizeof names[0], "column_with_a_long_name_%02d", n);
        n++;
    }
    for (int i = 0; i < n; i++)
        assert_int_equal(gnn_graph_writer_put_node_data(w, names[i], 1, 1, col), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    assert_int_equal(in->n_node_data, n);
    for (int i = 0; i < n; i++) {
        int found = 0;
        for (int64_t j = 0; j < in->n_node_data; j++) found += !strcmp(in->node_data[j], names[i]);
        if (found != 1) fail_msg("'%s' listed %d times", names[i], found);
    }
    gnn_graph_close(f);

    char *argv[] = {g_bin, "info", (char *)path, "--json", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(tu_json_skip(r.out));
    if (!utf8_valid((const unsigned char *)r.out)) fail_msg("not UTF-8: %s", r.out);
    const char *list = strstr(r.out, "\"node_data\": [");
    assert_non_null(list);
    const char *want[] = {"\"a,b\"", "\"bad\\u00ff\\u00fe\"", "\"ann\xc3\xa9" "e\"",
                          "\"column_with_a_long_name_04\"", "\"column_with_a_long_name_29\"",
                          "\"cut\\u00e2\\u0082\"]"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(list, want[i])) fail_msg("missing %s in %s", want[i], list);
    int entries = 1;
    for (const char *p = list; *p && *p != ']'; p++) entries += *p == ',' && p[-1] == '"';
    assert_int_equal(entries, n);
    tu_run_free(&r);
}

/* gnn_json_string: escapes, UTF-8 kept, other high bytes as \u00XX. */
static void test_json_string(void **state)
{
    (void)state;
    const char *cases[][2] = {
        {"plain", "\"plain\""},
        {"q\"b\\n\n\x01", "\"q\\\"b\\\\n\\n\\u0001\""},
        {"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\""},
        {"\xff", "\"\\u00ff\""},
        {"\xc3", "\"\\u00c3\""},
        {"\xc0\xaf", "\"\\u00c0\\u00af\""},             /* overlong '/' */
        {"\xed\xa0\x80", "\"\\u00ed\\u00a0\\u0080\""},  /* a surrogate */
        {"\xf4\x90\x80\x80", "\"\\u00f4\\u0090\\u0080\\u0080\""}, /* past U+10FFFF */
        {"\xe2\x82x", "\"\\u00e2\\u0082x\""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        gnn_json_string(m, cases[i][0]);
        fclose(m);
        if (strcmp(buf, cases[i][1]))
            fail_msg("case %zu: got %s, expected %s", i, buf, cases[i][1]);
        free(buf);
    }
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
        cmocka_unit_test(test_untyped_has_no_types),
        cmocka_unit_test(test_typed_table),
        cmocka_unit_test(test_typed_json),
        cmocka_unit_test(test_typed_empty_relation),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_node_data_names),
        cmocka_unit_test(test_json_string),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
