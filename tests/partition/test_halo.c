/*
 * Tests of relabelling and per-part local graphs (partition/halo.c).
 *
 * On random directed graphs (repeats, self loops, weights, isolated nodes)
 * with random and METIS-like clustered assignments into 1 to 7 parts
 * (some parts empty): the relabelling is a permutation, each part's range
 * holds exactly its nodes in old order; every part's local graph passes
 * gnn_csr_validate, its first n_owned local ids are its range, its halo is
 * sorted, distinct and owned elsewhere, and each owned row maps back to
 * exactly the graph's row (sources and weights, as a multiset), so every
 * edge lands in exactly one part. Errors: a part id out of range, a graph
 * that does not match the map, a bad part number.
 * Prints its seed; set GNN_TEST_SEED to replay another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "partition/halo.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;

typedef struct {
    gnn_vid_t u;
    float w;
} pair_t;

static int cmp_pair(const void *a, const void *b)
{
    const pair_t *x = a, *y = b;
    if (x->u != y->u) return (x->u > y->u) - (x->u < y->u);
    return (x->w > y->w) - (x->w < y->w);
}

static void check_parts(const gnn_csr_t *g, const int32_t *part, int k)
{
    gnn_vid_t n = g->n_rows;
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, n, k, &m), 0);
    assert_int_equal(m.start[0], 0);
    assert_int_equal(m.start[k], n);
    char *seen = calloc((size_t)n + 1, 1);
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_vid_t x = m.new_of_old[v];
        assert_true(x >= 0 && x < n && !seen[x]);
        seen[x] = 1;
        assert_int_equal(m.old_of_new[x], v);
        assert_true(x >= m.start[part[v]] && x < m.start[part[v] + 1]);
        if (v > 0 && part[v - 1] == part[v]) assert_true(m.new_of_old[v - 1] < x);
    }
    free(seen);
    gnn_eid_t total = 0;
    pair_t *a = malloc(((size_t)g->nnz + 1) * sizeof *a), *b = malloc(((size_t)g->nnz + 1) * sizeof *b);
    for (int p = 0; p < k; p++) {
        gnn_part_local_t l;
        assert_int_equal(gnn_part_local_build(g, &m, p, &l), 0);
        assert_int_equal(gnn_csr_validate(&l.csr), 0);
        gnn_vid_t lo = m.start[p], hi = m.start[p + 1];
        assert_int_equal(l.n_owned, hi - lo);
        assert_int_equal(l.csr.n_rows, l.n_owned);
        assert_int_equal(l.csr.n_cols, l.n_local);
        for (gnn_vid_t i = 0; i < l.n_owned; i++) assert_int_equal(l.local_to_global[i], lo + i);
        for (gnn_vid_t i = l.n_owned; i < l.n_local; i++) {
            gnn_vid_t x = l.local_to_global[i];
            assert_true(x >= 0 && x < n && (x < lo || x >= hi));
            if (i > l.n_owned) assert_true(l.local_to_global[i - 1] < x);
        }
        /* Every halo node is used. */
        char *used = calloc((size_t)l.n_local + 1, 1);
        for (gnn_eid_t e = 0; e < l.csr.nnz; e++) used[l.csr.indices[e]] = 1;
        for (gnn_vid_t i = l.n_owned; i < l.n_local; i++) assert_true(used[i]);
        free(used);
        for (gnn_vid_t i = 0; i < l.n_owned; i++) {
            gnn_vid_t v = m.old_of_new[lo + i];
            gnn_eid_t d = g->indptr[v + 1] - g->indptr[v];
            assert_int_equal(l.csr.indptr[i + 1] - l.csr.indptr[i], d);
            for (gnn_eid_t j = 0; j < d; j++) {
                gnn_eid_t s = g->indptr[v] + j, t = l.csr.indptr[i] + j;
                a[j] = (pair_t){g->indices[s], g->weights ? g->weights[s] : 0.0f};
                b[j] = (pair_t){m.old_of_new[l.local_to_global[l.csr.indices[t]]],
                                l.csr.weights ? l.csr.weights[t] : 0.0f};
            }
            qsort(a, (size_t)d, sizeof *a, cmp_pair);
            qsort(b, (size_t)d, sizeof *b, cmp_pair);
            for (gnn_eid_t j = 0; j < d; j++) {
                assert_int_equal(a[j].u, b[j].u);
                assert_true(a[j].w == b[j].w);
            }
        }
        total += l.csr.nnz;
        gnn_part_local_free(&l);
    }
    assert_int_equal(total, g->nnz);
    free(a);
    free(b);
    gnn_part_map_free(&m);
}

static void test_random_graphs(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    for (int round = 0; round < 12; round++) {
        gnn_vid_t n = 1 + (gnn_vid_t)(tu_rng_next(&s) % 400);
        gnn_eid_t m = (gnn_eid_t)(tu_rng_next(&s) % (uint64_t)(4 * n + 1));
        gnn_vid_t *src = malloc(((size_t)m + 1) * sizeof *src);
        gnn_vid_t *dst = malloc(((size_t)m + 1) * sizeof *dst);
        float *w = malloc(((size_t)m + 1) * sizeof *w);
        for (gnn_eid_t e = 0; e < m; e++) {
            src[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
            dst[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
            w[e] = (float)(tu_rng_next(&s) % 1000) / 8.0f;
        }
        gnn_csr_t g;
        assert_int_equal(gnn_csr_from_edges(n, m, src, dst, round % 2 ? w : NULL, 0, &g), 0);
        int k = 1 + (int)(tu_rng_next(&s) % 7);
        int32_t *part = malloc(((size_t)n + 1) * sizeof *part);
        for (gnn_vid_t v = 0; v < n; v++)
            part[v] = round % 3 == 0 ? (int32_t)(v * k / n) /* contiguous clusters */
                                     : (int32_t)(tu_rng_next(&s) % (uint64_t)k);
        check_parts(&g, part, k);
        gnn_csr_free(&g);
        free(part);
        free(src);
        free(dst);
        free(w);
    }
}

static void test_errors(void **state)
{
    (void)state;
    int32_t part[4] = {0, 1, 2, 1};
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, 4, 2, &m), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "node 2 is in part 2 of 2"));
    assert_null(m.start);
    assert_int_equal(gnn_part_relabel(part, 4, 0, &m), GNN_EINVAL);
    assert_int_equal(gnn_part_relabel(part, 4, 3, &m), 0);
    gnn_vid_t src[] = {0, 1}, dst[] = {1, 2};
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(3, 2, src, dst, NULL, 0, &g), 0);
    gnn_part_local_t l;
    assert_int_equal(gnn_part_local_build(&g, &m, 0, &l), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "does not match"));
    gnn_csr_free(&g);
    gnn_vid_t src4[] = {0, 1, 3}, dst4[] = {1, 2, 0};
    assert_int_equal(gnn_csr_from_edges(4, 3, src4, dst4, NULL, 0, &g), 0);
    assert_int_equal(gnn_part_local_build(&g, &m, 3, &l), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "part 3 of 3"));
    check_parts(&g, part, 3);
    gnn_csr_free(&g);
    gnn_part_map_free(&m);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
