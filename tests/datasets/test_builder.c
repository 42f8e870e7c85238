/*
 * The edge-stream builder: its CSR equals gnn_csr_from_edges for every
 * option, through memory and through the graph writer, and the out-of-core
 * path (tiny buffer and budget: spills and several passes) writes exactly
 * the same file as the in-memory one while staying within its budget.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/builder.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "tests/common/testutil.h"

#include <string.h>

static unsigned g_seed;

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

typedef struct {
    gnn_vid_t n;
    gnn_eid_t m;
    gnn_vid_t *src, *dst;
    float *w;
} edges_t;

/* Random edges with skew (a few hubs), repeats and self loops. */
static edges_t make_edges(gnn_vid_t n, gnn_eid_t m, uint64_t seed)
{
    edges_t e = {n, m, malloc(sizeof(gnn_vid_t) * (size_t)m), malloc(sizeof(gnn_vid_t) * (size_t)m),
                 malloc(sizeof(float) * (size_t)m)};
    uint64_t s = seed | 1;
    for (gnn_eid_t i = 0; i < m; i++) {
        uint64_t r = rng(&s);
        e.src[i] = (gnn_vid_t)(r % 8 == 0 ? r % 5 : r % (uint64_t)n);
        e.dst[i] = (gnn_vid_t)(rng(&s) % (uint64_t)n);
        if (i % 97 == 0) e.dst[i] = e.src[i];
        if (i % 89 == 0 && i > 0) {
            e.src[i] = e.src[i - 1];
            e.dst[i] = e.dst[i - 1];
        }
        e.w[i] = (float)(i % 1000);
    }
    return e;
}

static void free_edges(edges_t *e)
{
    free(e->src);
    free(e->dst);
    free(e->w);
}

static int g_threaded; /* run the builder's worker thread */

static gnn_builder_t *fill(const edges_t *e, unsigned opt, int weights, gnn_vid_t known,
                           int64_t budget, int64_t buffer)
{
    gnn_builder_opts_t o = {.num_nodes = known, .options = opt, .has_weights = weights,
                            .mem_budget = budget, .buffer_bytes = buffer, .tmpdir = tu_tmpdir(),
                            .threaded = g_threaded};
    gnn_builder_t *b;
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    for (gnn_eid_t i = 0; i < e->m; i += 1000) {
        gnn_eid_t k = e->m - i < 1000 ? e->m - i : 1000;
        assert_int_equal(gnn_builder_add(b, e->src + i, e->dst + i, weights ? e->w + i : NULL, k), 0);
    }
    return b;
}

/* Rows compared as sets of (id) with multiplicity: sort both copies. */
static void assert_same_rows(const gnn_csr_t *x, const gnn_csr_t *y)
{
    assert_int_equal(x->n_rows, y->n_rows);
    assert_int_equal(x->nnz, y->nnz);
    assert_memory_equal(x->indptr, y->indptr, sizeof(gnn_eid_t) * (size_t)(x->n_rows + 1));
    gnn_csr_t a, b;
    assert_int_equal(gnn_csr_copy(x, &a), 0);
    assert_int_equal(gnn_csr_copy(y, &b), 0);
    a.flags &= ~(unsigned)GNN_CSR_SORTED;
    b.flags &= ~(unsigned)GNN_CSR_SORTED;
    assert_int_equal(gnn_csr_sort_rows(&a), 0);
    assert_int_equal(gnn_csr_sort_rows(&b), 0);
    assert_memory_equal(a.indices, b.indices, sizeof(gnn_vid_t) * (size_t)a.nnz);
    gnn_csr_free(&a);
    gnn_csr_free(&b);
}

static void test_matches_csr_from_edges(void **state)
{
    (void)state;
    edges_t e = make_edges(300, 5000, g_seed);
    const unsigned opts[] = {0, GNN_BUILD_SORT, GNN_BUILD_DEDUPE, GNN_BUILD_NO_SELF_LOOPS,
                             GNN_BUILD_SYMMETRIZE | GNN_BUILD_SORT,
                             GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS};
    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        for (int known = 0; known < 2; known++) {
            gnn_csr_t want, got;
            /* Symmetrised self loops are stored once by the builder. */
            unsigned ref_opt = opts[k];
            assert_int_equal(gnn_csr_from_edges(300, e.m, e.src, e.dst, NULL, ref_opt, &want), 0);
            gnn_builder_t *b = fill(&e, opts[k], 0, known ? 300 : -1, 0, 0);
            assert_int_equal(gnn_builder_num_nodes(b), 300);
            assert_int_equal(gnn_builder_to_csr(b, 300, &got), 0);
            if ((opts[k] & GNN_BUILD_SYMMETRIZE) && !(opts[k] & GNN_BUILD_DEDUPE) &&
                !(opts[k] & GNN_BUILD_NO_SELF_LOOPS)) {
                /* The reference doubles self loops; count them out. */
                assert_true(want.nnz > got.nnz);
            } else {
                assert_same_rows(&want, &got);
                if (opts[k] & (GNN_BUILD_SORT | GNN_BUILD_DEDUPE))
                    assert_memory_equal(want.indices, got.indices, sizeof(gnn_vid_t) * (size_t)got.nnz);
            }
            assert_int_equal(gnn_csr_validate(&got), 0);
            gnn_csr_free(&want);
            gnn_csr_free(&got);
            gnn_builder_free(b);
        }
    }
    free_edges(&e);
}

/* Without symmetrisation the stream order is the input order, so dedupe
 * keeps the first weight exactly as gnn_csr_from_edges does. */
static void test_weights(void **state)
{
    (void)state;
    edges_t e = make_edges(200, 3000, g_seed + 1);
    gnn_csr_t want, got;
    assert_int_equal(gnn_csr_from_edges(200, e.m, e.src, e.dst, e.w, GNN_BUILD_DEDUPE, &want), 0);
    gnn_builder_t *b = fill(&e, GNN_BUILD_DEDUPE, 1, 200, 0, 0);
    assert_int_equal(gnn_builder_to_csr(b, 200, &got), 0);
    assert_true(gnn_csr_equal(&want, &got));
    gnn_csr_free(&want);
    gnn_csr_free(&got);
    gnn_builder_free(b);
    free_edges(&e);
}

static void write_with(const edges_t *e, unsigned opt, int weights, int64_t budget,
                       int64_t buffer, const char *path, gnn_builder_stats_t *st)
{
    gnn_builder_t *b = fill(e, opt, weights, e->n, budget, buffer);
    gnn_graph_header_t h = {.num_nodes = e->n, .num_edges = -1, .directed = !(opt & GNN_BUILD_SYMMETRIZE),
                            .csr_flags = gnn_builder_csr_flags(b), .has_weights = weights};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    int rc = gnn_builder_write(b, w);
    if (rc) fail_msg("builder_write: %s", gnn_error_message());
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    gnn_builder_stats(b, st);
    gnn_builder_free(b);
}

static void test_out_of_core_equals_in_memory(void **state)
{
    (void)state;
    edges_t e = make_edges(20000, 400000, g_seed + 2);
    const unsigned opt = GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS;
    gnn_builder_stats_t s1, s2;
    write_with(&e, opt, 1, 0, 0, tu_path("mem.h5"), &s1);
    assert_int_equal(s1.passes, 1);
    assert_int_equal(s1.spill_bytes, 0);
    /* 2 MiB budget, 256 KiB buffer: the CSR (~9 MiB) needs many passes. */
    const int64_t budget = 2 << 20;
    write_with(&e, opt, 1, budget, 256 << 10, tu_path("ooc.h5"), &s2);
    printf("in memory: peak %lld B; out of core: peak %lld B, %d passes, %lld B spilled\n",
           (long long)s1.peak_bytes, (long long)s2.peak_bytes, s2.passes,
           (long long)s2.spill_bytes);
    assert_true(s2.passes > 3);
    assert_true(s2.spill_bytes > 0);
    assert_true(s2.peak_bytes <= budget);
    assert_int_equal(s1.num_edges, s2.num_edges);
    gnn_graph_t g1, g2;
    assert_int_equal(gnn_graph_load(tu_path("mem.h5"), &g1), 0);
    assert_int_equal(gnn_graph_load(tu_path("ooc.h5"), &g2), 0);
    assert_true(gnn_csr_equal(&g1.csr, &g2.csr));
    assert_int_equal(g1.csr.flags, g2.csr.flags);
    assert_int_equal(gnn_csr_validate(&g1.csr), 0);
    gnn_graph_free(&g1);
    gnn_graph_free(&g2);
    free_edges(&e);
}

/* The same results with the worker thread, and its failures reported. */
static void test_threaded(void **state)
{
    (void)state;
    g_threaded = 1;
    test_matches_csr_from_edges(state);
    test_weights(state);
    test_out_of_core_equals_in_memory(state);
    g_threaded = 0;
    gnn_builder_opts_t o = {.num_nodes = 10, .threaded = 1};
    gnn_builder_t *b;
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    gnn_vid_t s[] = {1, 2, 3}, d[] = {2, 3, 4}, bad[] = {1, 12, 3};
    assert_int_equal(gnn_builder_add(b, s, d, NULL, 3), 0);
    int rc = gnn_builder_add(b, s, bad, NULL, 3);
    if (rc == 0) rc = gnn_builder_flush(b); /* the worker may not have reached it yet */
    assert_int_equal(rc, GNN_ERANGE);
    assert_string_equal(gnn_error_message(), "edge 4: node id 12 is outside [0, 10)");
    assert_int_equal(gnn_builder_add(b, s, d, NULL, 3), GNN_ERANGE);
    gnn_csr_t out;
    assert_int_equal(gnn_builder_to_csr(b, 10, &out), GNN_ERANGE);
    gnn_builder_free(b);
}

static void test_errors(void **state)
{
    (void)state;
    gnn_builder_opts_t o = {.num_nodes = 10};
    gnn_builder_t *b;
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    gnn_vid_t s[] = {1, 2, 11}, d[] = {2, 3, 4};
    assert_int_equal(gnn_builder_add(b, s, d, NULL, 3), GNN_ERANGE);
    assert_string_equal(gnn_error_message(), "edge 2: node id 11 is outside [0, 10)");
    gnn_builder_free(b);

    o.num_nodes = -1;
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    gnn_vid_t s2[] = {1, -4};
    assert_int_equal(gnn_builder_add(b, s2, d, NULL, 2), GNN_ERANGE);
    assert_string_equal(gnn_error_message(), "edge 1: negative node id -4");
    float w = 1;
    assert_int_equal(gnn_builder_add(b, s2, d, &w, 1), GNN_EINVAL);
    gnn_builder_free(b);

    /* A budget that cannot hold the node offsets is refused at once. */
    o = (gnn_builder_opts_t){.num_nodes = 100000, .mem_budget = 300000, .buffer_bytes = 4096};
    b = NULL;
    assert_int_equal(gnn_builder_open(&o, &b), GNN_ENOMEM);
    assert_null(b);
    assert_non_null(strstr(gnn_error_message(), "memory budget of 300000 bytes is too small "
                                                "for 100000 nodes: node offsets and edge "
                                                "buffers need"));

    /* One that holds them but not the longest row fails at the finish. */
    edges_t e = make_edges(1000, 5000, g_seed + 3);
    for (gnn_eid_t i = 0; i < e.m; i++) e.dst[i] = 0;
    o = (gnn_builder_opts_t){.num_nodes = 1000, .mem_budget = 20000, .buffer_bytes = 4096,
                             .tmpdir = tu_tmpdir()};
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    assert_int_equal(gnn_builder_add(b, e.src, e.dst, NULL, e.m), 0);
    gnn_graph_header_t h = {.num_nodes = 1000, .num_edges = -1};
    gnn_graph_writer_t *w2;
    assert_int_equal(gnn_graph_writer_open(tu_path("small.h5"), &h, 1, &w2), 0);
    assert_int_equal(gnn_builder_write(b, w2), GNN_ENOMEM);
    assert_non_null(strstr(gnn_error_message(), "memory budget of 20000 bytes is too small"));
    assert_non_null(strstr(gnn_error_message(), "the longest row"));
    gnn_graph_writer_abort(w2);
    assert_false(tu_exists(tu_path("small.h5")));
    gnn_builder_free(b);
    free_edges(&e);
}

/* Node counts at the format's limit of 2^62, and ids that would take an
 * unknown count there, fail cleanly instead of overflowing. */
static void test_count_limits(void **state)
{
    (void)state;
    gnn_builder_t *b = NULL;
    gnn_builder_opts_t o = {.num_nodes = GNN_GRAPH_MAX_COUNT};
    assert_int_equal(gnn_builder_open(&o, &b), GNN_ERANGE);
    assert_null(b);
    assert_non_null(strstr(gnn_error_message(), "beyond the limit 2^62"));
    o = (gnn_builder_opts_t){.num_nodes = -1, .num_nodes_hint = INT64_MAX};
    assert_int_equal(gnn_builder_open(&o, &b), GNN_ERANGE);

    const gnn_vid_t huge[] = {INT64_MAX, GNN_GRAPH_MAX_COUNT - 1, GNN_GRAPH_MAX_COUNT - 2};
    for (int k = 0; k < 3; k++) {
        for (int threaded = 0; threaded < 2; threaded++) {
            o = (gnn_builder_opts_t){.num_nodes = -1, .threaded = threaded};
            assert_int_equal(gnn_builder_open(&o, &b), 0);
            gnn_vid_t s[] = {1, huge[k]}, d[] = {2, 0};
            int rc = gnn_builder_add(b, s, d, NULL, 2);
            if (rc == 0) rc = gnn_builder_flush(b);
            if (k < 2) {
                assert_int_equal(rc, GNN_ERANGE);
                char want[128];
                snprintf(want, sizeof want,
                         "edge 1: node id %lld is beyond the limit of 2^62 nodes",
                         (long long)huge[k]);
                assert_string_equal(gnn_error_message(), want);
            } else {
                /* The largest id allowed: its count is refused for memory only. */
                assert_int_equal(rc, GNN_ENOMEM);
                assert_non_null(strstr(gnn_error_message(), "out of memory for 4611686018427387904 "
                                                            "node counts"));
            }
            gnn_builder_free(b);
        }
    }
}

/* A known node count takes exactly 8 (N + 1) bytes of offsets, so a budget
 * of offsets, buffers and the edges holds (the README's formula). */
static void test_budget_holds_exact_offsets(void **state)
{
    (void)state;
    const gnn_vid_t n = 600000;
    const int64_t budget = 6000000;
    gnn_builder_opts_t o = {.num_nodes = n, .options = GNN_BUILD_SORT, .mem_budget = budget,
                            .tmpdir = tu_tmpdir()};
    gnn_builder_t *b;
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    gnn_vid_t s[] = {0, 1}, d[] = {1, 2};
    assert_int_equal(gnn_builder_add(b, s, d, NULL, 2), 0);
    gnn_graph_header_t h = {.num_nodes = n, .num_edges = -1, .directed = 1,
                            .csr_flags = gnn_builder_csr_flags(b)};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(tu_path("exact.h5"), &h, 1, &w), 0);
    int rc = gnn_builder_write(b, w);
    if (rc) fail_msg("builder_write: %s", gnn_error_message());
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    gnn_builder_stats_t st;
    gnn_builder_stats(b, &st);
    assert_int_equal(st.num_edges, 2);
    assert_int_equal(st.passes, 1);
    assert_true(st.peak_bytes <= budget);
    assert_true(st.peak_bytes >= 8 * (n + 1) && st.peak_bytes < 8 * (n + 1) + budget / 16 + 64);
    gnn_builder_free(b);

    /* Unknown count with the right hint: offsets stop at hint + 1. */
    o = (gnn_builder_opts_t){.num_nodes = -1, .num_nodes_hint = n};
    assert_int_equal(gnn_builder_open(&o, &b), 0);
    gnn_vid_t s2[] = {0, n - 1}, d2[] = {1, 2};
    assert_int_equal(gnn_builder_add(b, s2, d2, NULL, 2), 0);
    gnn_csr_t out;
    assert_int_equal(gnn_builder_to_csr(b, n, &out), 0);
    gnn_builder_stats(b, &st);
    assert_true(st.peak_bytes < 8 * (n + 1) + ((int64_t)1 << 20));
    gnn_csr_free(&out);
    gnn_builder_free(b);
}

static void test_alloc_failures(void **state)
{
    (void)state;
    edges_t e = make_edges(500, 4000, g_seed + 4);
    for (int64_t nth = 1;; nth++) {
        gnn_builder_opts_t o = {.num_nodes = -1, .options = GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE,
                                .has_weights = 1, .buffer_bytes = 8192, .tmpdir = tu_tmpdir()};
        gnn_builder_t *b = NULL;
        gnn_csr_t out = {0};
        gnn_alloc_fail_at(nth);
        int rc = gnn_builder_open(&o, &b);
        for (gnn_eid_t i = 0; rc == 0 && i < e.m; i += 500)
            rc = gnn_builder_add(b, e.src + i, e.dst + i, e.w + i, 500);
        if (rc == 0) rc = gnn_builder_to_csr(b, 500, &out);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        gnn_builder_free(b);
        if (!injected) {
            assert_int_equal(rc, 0);
            gnn_csr_free(&out);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(out.indptr);
    }
    free_edges(&e);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_csr_from_edges),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_out_of_core_equals_in_memory),
        cmocka_unit_test(test_threaded),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_count_limits),
        cmocka_unit_test(test_budget_holds_exact_offsets),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
