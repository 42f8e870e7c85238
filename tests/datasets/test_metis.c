/*
 * gnn-dataset metis, run as a user runs it: a 15606-vertex, 45878-edge
 * mesh written here (neighbours shuffled, comments between lines; once
 * plain, once gzip with edge weights) converts to 15606 nodes and 91756
 * stored edges, and its CSR equals the adjacency written; small files
 * cover every fmt (vertex sizes, multi-constraint vertex weights, edge
 * weights, leading zeros), isolated vertices (empty lines) and trailing
 * blank lines; every bad input gives exit status 1, exactly one stderr
 * line "gnn-dataset: error: FILE[:LINE]: ..." and no output file. The
 * reader is also run from memory with each allocation failing in turn.
 * argv[1] is the path of the gnn-dataset binary.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/metis.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"

#include <dirent.h>
#include <string.h>
#include <zlib.h>

static char *g_bin;

/* ---- Helpers -------------------------------------------------------------- */




static void convert_ok(const char *in, const char *out)
{
    char *argv[] = {g_bin, "metis", (char *)in, "-o", (char *)out, "--force", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("status %d: %s", r.status, r.err);
    tu_run_free(&r);
}


static void bad_input(const char *name, const char *text, const char *want)
{
    const char *in = tu_write_file(name, text);
    const char *out = tu_path("bad.h5");
    char *argv[] = {g_bin, "metis", (char *)in, "-o", (char *)out, NULL};
    tu_expect_failure(argv, out, 1, want);
}

static void load(const char *path, gnn_graph_t *g)
{
    int rc = gnn_graph_load(path, g);
    if (rc) fail_msg("load %s: %s", path, gnn_error_message());
}

static void assert_csr(const gnn_csr_t *a, gnn_vid_t n, const gnn_eid_t *indptr,
                       const gnn_vid_t *indices, const float *w)
{
    assert_int_equal(a->n_rows, n);
    for (gnn_vid_t v = 0; v <= n; v++)
        if (a->indptr[v] != indptr[v])
            fail_msg("indptr[%lld] = %lld, want %lld", (long long)v, (long long)a->indptr[v],
                     (long long)indptr[v]);
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

/* The graph is undirected, and flagged sorted, deduplicated, symmetric and
 * free of self loops. */
static void assert_metis_flags(const gnn_graph_t *g)
{
    assert_int_equal(g->directed, 0);
    unsigned want = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC | GNN_CSR_NO_SELF_LOOPS;
    assert_int_equal(g->csr.flags & want, want);
}

/* ---- The mesh ------------------------------------------------------------- */

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define MESH_R 102
#define MESH_C 153
#define MESH_N (MESH_R * MESH_C) /* 15606 */
#define MESH_M 45878

typedef struct {
    gnn_vid_t src[MESH_M], dst[MESH_M];
    float w[MESH_M];
} mesh_t;

/* A 102 x 153 grid with the diagonal of the first 14921 cells: 15606
 * vertices and 30957 + 14921 = 45878 edges. */
static mesh_t *make_mesh(void)
{
    mesh_t *m = malloc(sizeof *m);
    int k = 0, diag = MESH_M - (2 * MESH_N - MESH_R - MESH_C);
    for (int i = 0; i < MESH_R; i++)
        for (int j = 0; j < MESH_C; j++) {
            int v = i * MESH_C + j;
            if (j + 1 < MESH_C) m->src[k] = v, m->dst[k++] = v + 1;
            if (i + 1 < MESH_R) m->src[k] = v, m->dst[k++] = v + MESH_C;
            if (i + 1 < MESH_R && j + 1 < MESH_C && diag > 0)
                m->src[k] = v, m->dst[k++] = v + MESH_C + 1, diag--;
        }
    assert_int_equal(k, MESH_M);
    for (int e = 0; e < MESH_M; e++) m->w[e] = (float)(1 + (m->src[e] + 3 * m->dst[e]) % 9);
    return m;
}

/* Write the mesh as a METIS file (edge weights when weighted): each line's
 * neighbours in random order, comments here and there, through gz when
 * gz. */
static void write_mesh(const mesh_t *m, const char *path, int weighted, int gz, uint64_t seed)
{
    gnn_csr_t a;
    assert_int_equal(gnn_csr_from_edges(MESH_N, MESH_M, m->src, m->dst, m->w,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_SORT, &a),
                     0);
    size_t cap = 64u << 20, len = 0;
    char *buf = malloc(cap);
    len += (size_t)snprintf(buf + len, cap - len, "%% a %d x %d mesh\n%d %d%s\n", MESH_R, MESH_C,
                            MESH_N, MESH_M, weighted ? " 001" : "");
    uint64_t s = seed | 1;
    gnn_vid_t row[16];
    float rw[16];
    for (gnn_vid_t v = 0; v < MESH_N; v++) {
        if (v % 1000 == 999) len += (size_t)snprintf(buf + len, cap - len, "%% vertex %lld\n", (long long)v + 2);
        gnn_eid_t d = a.indptr[v + 1] - a.indptr[v];
        assert_true(d <= 16);
        for (gnn_eid_t e = 0; e < d; e++) {
            row[e] = a.indices[a.indptr[v] + e];
            rw[e] = a.weights[a.indptr[v] + e];
        }
        for (gnn_eid_t e = d - 1; e > 0; e--) {
            gnn_eid_t j = (gnn_eid_t)(rng(&s) % (uint64_t)(e + 1));
            gnn_vid_t t = row[e];
            row[e] = row[j];
            row[j] = t;
            float tw = rw[e];
            rw[e] = rw[j];
            rw[j] = tw;
        }
        for (gnn_eid_t e = 0; e < d; e++) {
            len += (size_t)snprintf(buf + len, cap - len, e ? (v % 7 ? " %lld" : "\t%lld") : "%lld",
                                    (long long)row[e] + 1);
            if (weighted) len += (size_t)snprintf(buf + len, cap - len, " %g", rw[e]);
        }
        buf[len++] = '\n';
    }
    gnn_csr_free(&a);
    if (gz) {
        gzFile g = gzopen(path, "wb");
        assert_non_null(g);
        assert_int_equal(gzwrite(g, buf, (unsigned)len), (int)len);
        assert_int_equal(gzclose(g), Z_OK);
    } else {
        FILE *f = fopen(path, "wb");
        assert_int_equal(fwrite(buf, 1, len, f), len);
        fclose(f);
    }
    free(buf);
}

static void check_mesh(const mesh_t *m, const char *out, int weighted)
{
    char *argv[] = {g_bin, "info", (char *)out, "--json", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    const char *want[] = {"\"num_nodes\": 15606,", "\"num_edges\": 91756,",
                          "\"directed\": false", "\"symmetric\": true",
                          "\"deduplicated\": true", "\"no_self_loops\": true",
                          weighted ? "\"has_weights\": true" : "\"has_weights\": false"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(r.out, want[i])) fail_msg("missing %s in %s", want[i], r.out);
    tu_run_free(&r);

    gnn_graph_t g;
    load(out, &g);
    gnn_csr_t a;
    assert_int_equal(gnn_csr_from_edges(MESH_N, MESH_M, m->src, m->dst, weighted ? m->w : NULL,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_SORT, &a),
                     0);
    assert_true(gnn_csr_equal(&a, &g.csr));
    assert_metis_flags(&g);
    assert_int_equal(gnn_csr_validate(&g.csr), 0);
    gnn_csr_free(&a);
    gnn_graph_free(&g);
}

static void test_mesh(void **state)
{
    (void)state;
    mesh_t *m = make_mesh();
    uint64_t seed = tu_seed();
    const char *in = tu_path("mesh.graph"), *out = tu_path("mesh.h5");
    write_mesh(m, in, 0, 0, seed);
    convert_ok(in, out);
    check_mesh(m, out, 0);

    in = tu_path("mesh_w.graph.gz");
    out = tu_path("mesh_w.h5");
    write_mesh(m, in, 1, 1, seed + 1);
    convert_ok(in, out);
    check_mesh(m, out, 1);
    free(m);
}

/* ---- Small files ---------------------------------------------------------- */

static void convert_text(const char *name, const char *text, gnn_graph_t *g)
{
    char out[700];
    const char *in = tu_write_file(name, text);
    snprintf(out, sizeof out, "%s.h5", in);
    convert_ok(in, out);
    load(out, g);
    assert_metis_flags(g);
}

static void test_plain(void **state)
{
    (void)state;
    gnn_graph_t g;
    convert_text("plain.graph", "% comment\n%\n4 4\n2 3\n  1\t3 4 \n1 2\r\n% mid\n2\n", &g);
    const gnn_eid_t ptr[] = {0, 2, 5, 7, 8};
    const gnn_vid_t idx[] = {1, 2, 0, 2, 3, 0, 1, 1};
    assert_csr(&g.csr, 4, ptr, idx, NULL);
    gnn_graph_free(&g);
    /* With a UTF-8 byte-order mark. */
    convert_text("bom.graph", "\xEF\xBB\xBF" "4 4\n2 3\n1 3 4\n1 2\n2\n", &g);
    assert_csr(&g.csr, 4, ptr, idx, NULL);
    gnn_graph_free(&g);
}

/* Vertex 3 and 5 without neighbours (empty lines), blank lines after the
 * last vertex. */
static void test_isolated(void **state)
{
    (void)state;
    gnn_graph_t g;
    convert_text("iso.graph", "5 1\n4\n\n\n1\n\n\n \n", &g);
    const gnn_eid_t ptr[] = {0, 1, 1, 1, 2, 2};
    const gnn_vid_t idx[] = {3, 0};
    assert_csr(&g.csr, 5, ptr, idx, NULL);
    gnn_graph_free(&g);

    convert_text("empty.graph", "% nothing\n0 0\n", &g);
    assert_int_equal(g.csr.n_rows, 0);
    assert_int_equal(g.csr.nnz, 0);
    gnn_graph_free(&g);
}

/* Every fmt: edges 1-2 (weight 7) and 2-3 (weight 2). */
static void test_formats(void **state)
{
    (void)state;
    const gnn_eid_t ptr[] = {0, 1, 3, 4};
    const gnn_vid_t idx[] = {1, 0, 2, 1};
    const float w[] = {7, 7, 2, 2};
    static const struct {
        const char *name, *text;
        int weighted;
    } cases[] = {
        {"f0.graph", "3 2 0\n2\n1 3\n2\n", 0},
        {"f000.graph", "3 2 000\n2\n1 3\n2\n", 0},
        {"f1.graph", "3 2 1\n2 7\n1 7 3 2\n2 2\n", 1},
        {"f001.graph", "3 2 001\n2 7\n1 7 3 2\n2 2\n", 1},
        {"f10.graph", "3 2 10\n5 2\n0 1 3\n1 2\n", 0},
        {"f011.graph", "3 2 011 2\n5 1 2 7\n0 3 1 7 3 2\n1 1 2 2\n", 1},
        {"f100.graph", "3 2 100\n1 2\n4 1 3\n0 2\n", 0},
        {"f110.graph", "3 2 110 3\n1 0 0 0 2\n2 1 1 1 1 3\n3 9 9 9 2\n", 0},
        {"f101.graph", "3 2 101\n1 2 7\n2 1 7 3 2\n1 2 2\n", 1},
        {"f111.graph", "3 2 111\n1 5 2 7\n2 0 1 7 3 2\n1 1 2 2\n", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gnn_graph_t g;
        convert_text(cases[i].name, cases[i].text, &g);
        assert_csr(&g.csr, 3, ptr, idx, cases[i].weighted ? w : NULL);
        gnn_graph_free(&g);
    }
}

/* ---- Errors --------------------------------------------------------------- */

static void test_bad_structure(void **state)
{
    (void)state;
    bad_input("s1.graph", "4 3\n2\n1 3\n", "s1.graph: expected 4 vertex lines, found 2");
    bad_input("s2.graph", "2 1\n2\n1\n1\n", "s2.graph:4: more than 2 vertex lines");
    bad_input("s3.graph", "3 1\n2\n1 4\n\n", "s3.graph:3: vertex 2: neighbour 4 is outside 1..3");
    bad_input("s4.graph", "2 1\n0\n1\n", "s4.graph:2: vertex 1: neighbour 0 is outside 1..2");
    bad_input("s5.graph", "2 1\n2\n1 2\n", "s5.graph:3: vertex 2 lists itself");
    bad_input("s6.graph", "3 2\n2 2\n1 1\n\n", "s6.graph:2: vertex 1 lists 2 twice");
    bad_input("s7.graph", "3 2\n2\n1 1\n\n", "s7.graph:3: vertex 2 lists 1 twice");
    bad_input("s8.graph", "3 2\n2\n1 3\n1 2\n",
              "s8.graph:4: not symmetric: vertex 3 lists 1 but 1 does not list 3");
    bad_input("s9.graph", "3 2\n2 3\n1 3\n\n",
              "s9.graph: not symmetric: vertex 1 lists 3 but 3 does not list 1");
    bad_input("s10.graph", "3 3\n2\n1 3\n2\n",
              "s10.graph: the header says m = 3 edges (6 adjacency entries) but the vertex lines "
              "hold 4 entries");
    bad_input("s11.graph", "2 1\nabc\n1\n", "s11.graph:2: vertex 1: 'abc' is not a vertex number");
    bad_input("s12.graph", "2 1\n2.0\n1\n", "s12.graph:2: vertex 1: '2.0' is not a vertex number");
    bad_input("s13.graph", "2 1\n2,\n1\n", "s13.graph:2: vertex 1: '2,' is not a vertex number");
    bad_input("s14.graph", "2 1\n99999999999999999999\n1\n",
              "s14.graph:2: vertex 1: '99999999999999999999' is not a vertex number");
}

static void test_bad_weights(void **state)
{
    (void)state;
    bad_input("w1.graph", "2 1 1\n2\n1 1\n", "w1.graph:2: vertex 1: neighbour 2 has no edge weight");
    bad_input("w2.graph", "2 1 1\n2 0\n1 0\n",
              "w2.graph:2: vertex 1: edge weight '0' of neighbour 2 is not a positive integer");
    bad_input("w3.graph", "2 1 1\n2 1.5\n1 1.5\n", "w3.graph:2: vertex 1: edge weight '1.5'");
    bad_input("w4.graph", "2 1 1\n2 3\n1 4\n",
              "w4.graph:3: not symmetric: edge 2-1 has weight 4 here but 3 at vertex 1");
    bad_input("w5.graph", "2 1 10\n\n1\n",
              "w5.graph:2: vertex 1: missing vertex weight 1 of 1 (fmt x1x)");
    bad_input("w6.graph", "2 1 10\n-1 2\n1 1\n",
              "w6.graph:2: vertex 1: vertex weight '-1' is not a non-negative integer");
    /* ncon = 2: "1 2" are vertex 1's two weights, not a neighbour. */
    bad_input("w7.graph", "2 1 10 2\n1 2\n1 1 1\n",
              "w7.graph:3: not symmetric: vertex 2 lists 1 but 1 does not list 2");
    bad_input("w8.graph", "2 1 100\n\n1 1\n",
              "w8.graph:2: vertex 1: missing vertex size (fmt 1xx)");
    bad_input("w9.graph", "2 1 100\nx 2\n1 1\n",
              "w9.graph:2: vertex 1: vertex size 'x' is not a non-negative integer");
}

static void test_bad_header(void **state)
{
    (void)state;
    bad_input("h1.graph", "", "h1.graph: no METIS header 'n m [fmt [ncon]]' (the input is empty)");
    bad_input("h2.graph", "% only\n% comments\n", "h2.graph: no METIS header");
    bad_input("h3.graph", "3\n", "h3.graph:1: header '3' needs at least 2 numbers");
    bad_input("h4.graph", "% c\na b\n", "h4.graph:2: header: 'a' is not valid as the vertex count n");
    bad_input("h5.graph", "-3 2\n", "h5.graph:1: header: '-3' is not valid as the vertex count n");
    bad_input("h6.graph", "3 x\n", "h6.graph:1: header: 'x' is not valid as the edge count m");
    bad_input("h7.graph", "3 2 2\n", "h7.graph:1: header: fmt '2' is not valid");
    bad_input("h8.graph", "3 2 1000\n", "h8.graph:1: header: fmt '1000' is not valid");
    bad_input("h9.graph", "3 2 1 2\n", "h9.graph:1: header gives ncon = 2 but fmt has no vertex weights");
    bad_input("h10.graph", "3 2 10 0\n", "h10.graph:1: header: ncon = 0 must be in 1..1000000");
    bad_input("h11.graph", "3 2 11 1 5\n", "h11.graph:1: header has more than 4 numbers");
    bad_input("h12.graph", "3 2 011x\n", "h12.graph:1: header: fmt '011x' is not valid");
}

static void test_bad_usage(void **state)
{
    (void)state;
    const char *in = tu_write_file("u.graph", "2 1\n2\n1\n"), *out = tu_path("u.h5");
    char *a1[] = {g_bin, "metis", "/nonexistent/g.graph", "-o", (char *)out, NULL};
    tu_expect_failure(a1, out, 1, "/nonexistent/g.graph: No such file or directory");
    char *a2[] = {g_bin, "metis", (char *)in, NULL};
    tu_expect_failure(a2, NULL, 2, "missing -o FILE");
    char *a3[] = {g_bin, "metis", (char *)in, (char *)in, "-o", (char *)out, NULL};
    tu_expect_failure(a3, out, 2, "unexpected argument");
    tu_write_file("u.h5", "keep me");
    char *a4[] = {g_bin, "metis", (char *)in, "-o", (char *)out, NULL};
    tu_run_t r = tu_run(a4);
    assert_int_equal(r.status, 1);
    assert_non_null(strstr(r.err, "file exists (use --force to replace it)"));
    tu_run_free(&r);
    char *kept = tu_read_file(out);
    assert_string_equal(kept, "keep me");
    free(kept);
}

static void test_help(void **state)
{
    (void)state;
    char *argv[] = {g_bin, "metis", "--help", NULL};
    tu_run_t r = tu_run(argv);
    assert_int_equal(r.status, 0);
    assert_non_null(strstr(r.out, "usage: gnn-dataset metis"));
    assert_non_null(strstr(r.out, "--mem-budget"));
    tu_run_free(&r);
}

/* ---- Library -------------------------------------------------------------- */

static void test_max_nodes(void **state)
{
    (void)state;
    const char *text = "1000000000 0\n";
    gnn_metis_opts_t o = {.max_nodes = 1000};
    gnn_csr_t a;
    assert_int_equal(gnn_metis_read_mem(text, strlen(text), "big", &o, &a, NULL), GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), "more than the limit 1000"));
    assert_null(a.indptr);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    const char *text = "3 2 011 2\n5 1 2 7\n0 3 1 7 3 2\n1 1 2 2\n";
    for (int64_t nth = 1;; nth++) {
        gnn_csr_t a;
        gnn_metis_header_t h;
        gnn_alloc_fail_at(nth);
        int rc = gnn_metis_read_mem(text, strlen(text), "mem", NULL, &a, &h);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!failed) {
            assert_int_equal(rc, 0);
            const gnn_eid_t ptr[] = {0, 1, 3, 4};
            const gnn_vid_t idx[] = {1, 0, 2, 1};
            const float w[] = {7, 7, 2, 2};
            assert_csr(&a, 3, ptr, idx, w);
            assert_int_equal(h.ncon, 2);
            assert_true(h.has_vertex_weights && h.has_edge_weights && !h.has_vertex_sizes);
            assert_int_equal(gnn_csr_validate(&a), 0);
            gnn_csr_free(&a);
            break;
        }
        if (rc != GNN_ENOMEM)
            fail_msg("allocation %lld failed: rc %d (%s)", (long long)nth, rc, gnn_error_message());
        assert_null(a.indptr);
        assert_true(nth < 1000);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH-TO-gnn-dataset\n", argv[0]);
        return 1;
    }
    g_bin = argv[1];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mesh),          cmocka_unit_test(test_plain),
        cmocka_unit_test(test_isolated),      cmocka_unit_test(test_formats),
        cmocka_unit_test(test_bad_structure), cmocka_unit_test(test_bad_weights),
        cmocka_unit_test(test_bad_header),    cmocka_unit_test(test_bad_usage),
        cmocka_unit_test(test_help),          cmocka_unit_test(test_max_nodes),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
