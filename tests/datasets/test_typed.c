/*
 * gnn_typed_csr_build (datasets/typed.h): rows sorted by (source,
 * relation), exact repeats dropped and counted, one pair kept once per
 * relation (and the DEDUPED flag then off), self loops dropped or kept
 * with the NO_SELF_LOOPS flag to match, bad ids and relations refused with
 * their message, the empty graph, a random case against a naive reference,
 * and allocation failure at every allocation. The input arrays are
 * consumed on every outcome.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/typed.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"

#include <string.h>

static unsigned g_seed;

typedef struct {
    gnn_vid_t src, dst;
    int32_t rel;
} tedge_t;

/* What gnn_typed_csr_build returned. */
typedef struct {
    int rc;
    gnn_csr_t csr;
    int32_t *etype;
    int64_t dropped;
} built_t;

/* Build the CSR of the m edges e over n nodes, from fresh copies of the
 * three arrays (the call consumes them: checked here). */
static built_t build(gnn_vid_t n, const tedge_t *e, int64_t m, int drop_loops)
{
    gnn_vid_t *src = malloc(sizeof *src * (size_t)(m + 1));
    gnn_vid_t *dst = malloc(sizeof *dst * (size_t)(m + 1));
    int32_t *rel = malloc(sizeof *rel * (size_t)(m + 1));
    assert_true(src && dst && rel);
    for (int64_t i = 0; i < m; i++) {
        src[i] = e[i].src;
        dst[i] = e[i].dst;
        rel[i] = e[i].rel;
    }
    built_t b;
    b.etype = (int32_t *)0x1;
    b.dropped = -5;
    b.rc = gnn_typed_csr_build(n, m, &src, &dst, &rel, drop_loops, &b.csr, &b.etype, &b.dropped);
    assert_null(src);
    assert_null(dst);
    assert_null(rel);
    if (b.rc != 0) {
        assert_null(b.etype);
        assert_null(b.csr.indptr);
        assert_null(b.csr.indices);
        assert_int_equal(b.csr.nnz, 0);
        assert_int_equal(b.dropped, 0);
    }
    return b;
}

static void built_free(built_t *b)
{
    gnn_csr_free(&b->csr);
    gnn_free(b->etype);
}

/* Row v of b is exactly the n (source, relation) pairs of want. */
static void assert_row(const built_t *b, gnn_vid_t v, const int64_t (*want)[2], int n)
{
    const gnn_csr_t *a = &b->csr;
    gnn_eid_t e0 = a->indptr[v];
    if (a->indptr[v + 1] - e0 != n)
        fail_msg("row %lld has %lld entries, expected %d", (long long)v,
                 (long long)(a->indptr[v + 1] - e0), n);
    for (int i = 0; i < n; i++)
        if (a->indices[e0 + i] != want[i][0] || b->etype[e0 + i] != want[i][1])
            fail_msg("row %lld entry %d is (%lld, %d), expected (%lld, %lld)", (long long)v, i,
                     (long long)a->indices[e0 + i], b->etype[e0 + i], (long long)want[i][0],
                     (long long)want[i][1]);
}

static void test_sorted_and_repeats(void **state)
{
    (void)state;
    /* Row 0 gets sources 2 (two relations), 1 (once, repeated) and 3;
     * row 1 gets 3 with relations 2 (repeated) and 1, and 0. */
    const tedge_t e[] = {{2, 0, 1}, {1, 0, 0}, {3, 0, 4}, {2, 0, 0}, {1, 0, 0}, {3, 1, 2},
                         {0, 1, 0}, {3, 1, 2}, {3, 1, 1}, {1, 0, 0}};
    built_t b = build(4, e, 10, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.n_rows, 4);
    assert_int_equal(b.csr.n_cols, 4);
    assert_int_equal(b.csr.nnz, 7);
    assert_int_equal(b.dropped, 3);
    const int64_t r0[][2] = {{1, 0}, {2, 0}, {2, 1}, {3, 4}}, r1[][2] = {{0, 0}, {3, 1}, {3, 2}};
    assert_row(&b, 0, r0, 4);
    assert_row(&b, 1, r1, 3);
    assert_row(&b, 2, NULL, 0);
    assert_row(&b, 3, NULL, 0);
    assert_int_equal(b.csr.indptr[0], 0);
    assert_int_equal(b.csr.indptr[4], 7);
    /* A row holds source 2 (and 3) twice: not deduplicated. */
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED | GNN_CSR_NO_SELF_LOOPS);
    assert_null(b.csr.weights);
    assert_int_equal(gnn_csr_validate(&b.csr), 0);
    built_free(&b);

    /* Repeats of one relation only: the result is deduplicated. */
    const tedge_t d[] = {{1, 0, 3}, {2, 0, 3}, {1, 0, 3}, {0, 2, 5}, {0, 2, 5}, {0, 2, 5}};
    b = build(3, d, 6, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.nnz, 3);
    assert_int_equal(b.dropped, 3);
    const int64_t d0[][2] = {{1, 3}, {2, 3}}, d2[][2] = {{0, 5}};
    assert_row(&b, 0, d0, 2);
    assert_row(&b, 1, NULL, 0);
    assert_row(&b, 2, d2, 1);
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    built_free(&b);

    /* The largest relation, 255, sorts after the others of its source. */
    const tedge_t h[] = {{1, 0, 255}, {1, 0, 254}, {0, 0, 255}, {1, 0, 0}};
    b = build(2, h, 4, 0);
    assert_int_equal(b.rc, 0);
    const int64_t h0[][2] = {{0, 255}, {1, 0}, {1, 254}, {1, 255}};
    assert_row(&b, 0, h0, 4);
    assert_int_equal(b.dropped, 0);
    /* Row 0 lists itself (0 -> 0 kept): no NO_SELF_LOOPS. */
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED);
    built_free(&b);
}

static void test_self_loops(void **state)
{
    (void)state;
    /* Loops 1 -> 1 twice with relation 0 and once with 2; 0 -> 0 once. */
    const tedge_t e[] = {{1, 1, 0}, {0, 1, 1}, {1, 1, 0}, {1, 1, 2}, {0, 0, 3}, {1, 0, 3}};
    built_t b = build(2, e, 6, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.nnz, 2);
    assert_int_equal(b.dropped, 4); /* three loops on 1 and one on 0 */
    const int64_t r0[][2] = {{1, 3}}, r1[][2] = {{0, 1}};
    assert_row(&b, 0, r0, 1);
    assert_row(&b, 1, r1, 1);
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    built_free(&b);

    b = build(2, e, 6, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.nnz, 5);
    assert_int_equal(b.dropped, 1); /* the repeated 1 -> 1 of relation 0 */
    const int64_t k0[][2] = {{0, 3}, {1, 3}}, k1[][2] = {{0, 1}, {1, 0}, {1, 2}};
    assert_row(&b, 0, k0, 2);
    assert_row(&b, 1, k1, 3);
    /* Loops kept, and row 1 holds the loop with two relations. */
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED);
    built_free(&b);

    /* Kept loops, each once: deduplicated but not loop-free. */
    const tedge_t l[] = {{0, 0, 1}, {0, 0, 1}, {1, 0, 1}};
    b = build(2, l, 3, 0);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.nnz, 2);
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED);
    built_free(&b);
}

static void expect_refused(gnn_vid_t n, const tedge_t *e, int64_t m, const char *want)
{
    built_t b = build(n, e, m, 1);
    if (b.rc != GNN_EINVAL || !strstr(gnn_error_message(), want))
        fail_msg("got %s '%s', expected GNN_EINVAL with '%s'", gnn_error_name(b.rc),
                 gnn_error_message(), want);
}

static void test_refusals(void **state)
{
    (void)state;
    const tedge_t src_hi[] = {{0, 1, 0}, {1, 2, 0}, {4, 0, 1}};
    expect_refused(4, src_hi, 3, "edge 2 (4 -> 0) has an end outside [0, 4)");
    const tedge_t dst_neg[] = {{0, 1, 0}, {3, -1, 0}};
    expect_refused(4, dst_neg, 2, "edge 1 (3 -> -1) has an end outside [0, 4)");
    const tedge_t dst_hi[] = {{0, 4, 0}};
    expect_refused(4, dst_hi, 1, "edge 0 (0 -> 4) has an end outside [0, 4)");
    const tedge_t src_neg[] = {{-3, 0, 0}};
    expect_refused(4, src_neg, 1, "edge 0 (-3 -> 0) has an end outside [0, 4)");
    const tedge_t rel_hi[] = {{0, 1, 255}, {0, 1, 256}};
    expect_refused(4, rel_hi, 2, "edge 1 has relation 256");
    const tedge_t rel_neg[] = {{0, 1, -1}};
    expect_refused(4, rel_neg, 1, "edge 0 has relation -1");
    expect_refused(0, src_neg, 1, "edge 0 (-3 -> 0) has an end outside [0, 0)");
    expect_refused(-1, NULL, 0, "-1 nodes: too many for a typed graph");
    expect_refused((gnn_vid_t)1 << 55, NULL, 0, "36028797018963968 nodes: too many");
}

static void test_empty(void **state)
{
    (void)state;
    built_t b = build(0, NULL, 0, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.n_rows, 0);
    assert_int_equal(b.csr.nnz, 0);
    assert_int_equal(b.csr.indptr[0], 0);
    assert_int_equal(b.dropped, 0);
    assert_non_null(b.etype);
    assert_int_equal(b.csr.flags, GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    built_free(&b);

    /* Nodes without edges; and edges that all drop out. */
    b = build(5, NULL, 0, 0);
    assert_int_equal(b.rc, 0);
    for (int v = 0; v <= 5; v++) assert_int_equal(b.csr.indptr[v], 0);
    assert_int_equal(gnn_csr_validate(&b.csr), 0);
    built_free(&b);
    const tedge_t loops[] = {{2, 2, 0}, {2, 2, 1}, {0, 0, 0}};
    b = build(3, loops, 3, 1);
    assert_int_equal(b.rc, 0);
    assert_int_equal(b.csr.nnz, 0);
    assert_int_equal(b.dropped, 3);
    for (int v = 0; v <= 3; v++) assert_int_equal(b.csr.indptr[v], 0);
    built_free(&b);
}

static int cmp_tedge(const void *pa, const void *pb)
{
    const tedge_t *a = pa, *b = pb;
    if (a->dst != b->dst) return a->dst < b->dst ? -1 : 1;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    return (a->rel > b->rel) - (a->rel < b->rel);
}

/* Many rows, skewed sources, repeats, loops, 40 relations: the result
 * equals the sorted set of distinct (dst, src, rel) triples, and the flags
 * and drop count follow from it. */
static void test_random_against_reference(void **state)
{
    (void)state;
    const gnn_vid_t n = 700;
    const int64_t m = 30000;
    uint64_t s = g_seed * 0x9E3779B97F4A7C15ull + 1;
    tedge_t *e = malloc(sizeof *e * (size_t)m), *ref = malloc(sizeof *ref * (size_t)m);
    for (int64_t i = 0; i < m; i++) {
        uint64_t r = tu_rng_next(&s);
        e[i].dst = (gnn_vid_t)(r % (uint64_t)n);
        e[i].src = (gnn_vid_t)(r % 5 == 0 ? (r >> 8) % 7 : (r >> 8) % (uint64_t)n);
        e[i].rel = (int32_t)((r >> 40) % 40);
        if (i % 53 == 0) e[i].src = e[i].dst;
        if (i % 31 == 0 && i > 0) e[i] = e[i - 1];
        if (i % 41 == 0 && i > 0) { /* the previous pair with another relation */
            e[i] = e[i - 1];
            e[i].rel = (e[i].rel + 1) % 40;
        }
    }
    for (int drop_loops = 0; drop_loops < 2; drop_loops++) {
        int64_t k = 0;
        for (int64_t i = 0; i < m; i++)
            if (!drop_loops || e[i].src != e[i].dst) ref[k++] = e[i];
        qsort(ref, (size_t)k, sizeof *ref, cmp_tedge);
        int64_t u = 0;
        int dup_src = 0, loops = 0;
        for (int64_t i = 0; i < k; i++) {
            if (u > 0 && !cmp_tedge(&ref[u - 1], &ref[i])) continue;
            if (u > 0 && ref[u - 1].dst == ref[i].dst && ref[u - 1].src == ref[i].src) dup_src = 1;
            loops |= ref[i].src == ref[i].dst;
            ref[u++] = ref[i];
        }
        built_t b = build(n, e, m, drop_loops);
        assert_int_equal(b.rc, 0);
        assert_int_equal(b.csr.nnz, u);
        assert_int_equal(b.dropped, m - u);
        for (int64_t i = 0; i < u; i++) {
            gnn_vid_t v = ref[i].dst;
            if (i < b.csr.indptr[v] || i >= b.csr.indptr[v + 1] || b.csr.indices[i] != ref[i].src ||
                b.etype[i] != ref[i].rel)
                fail_msg("seed %u, entry %lld: got (row [%lld, %lld), %lld, %d), expected "
                         "(row %lld, %lld, %d)",
                         g_seed, (long long)i, (long long)b.csr.indptr[v],
                         (long long)b.csr.indptr[v + 1], (long long)b.csr.indices[i], b.etype[i],
                         (long long)v, (long long)ref[i].src, ref[i].rel);
        }
        unsigned want = GNN_CSR_SORTED | (dup_src ? 0u : GNN_CSR_DEDUPED) |
                        (loops ? 0u : GNN_CSR_NO_SELF_LOOPS);
        assert_int_equal(b.csr.flags, want);
        assert_true(dup_src); /* the case has pairs with two relations */
        assert_int_equal(loops, !drop_loops);
        assert_int_equal(gnn_csr_validate(&b.csr), 0);
        printf("n %lld, m %lld, drop_loops %d: %lld kept, %lld dropped\n", (long long)n,
               (long long)m, drop_loops, (long long)u, (long long)b.dropped);
        built_free(&b);
    }
    free(e);
    free(ref);
}

/* Fail each allocation in turn: GNN_ENOMEM, nothing returned, the inputs
 * consumed (and, in the sanitizer build, nothing leaked). */
static void test_alloc_failures(void **state)
{
    (void)state;
    const tedge_t e[] = {{2, 0, 1}, {1, 0, 0}, {2, 0, 0}, {1, 0, 0}, {3, 1, 2}, {1, 1, 0}};
    int64_t nth = 1;
    for (;; nth++) {
        gnn_alloc_fail_at(nth);
        built_t b = build(4, e, 6, 1);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(b.rc, 0);
            assert_int_equal(b.csr.nnz, 4);
            built_free(&b);
            break;
        }
        assert_int_equal(b.rc, GNN_ENOMEM);
    }
    assert_true(nth - 1 >= 5); /* offsets, counts, keys, ids, relations */
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sorted_and_repeats),
        cmocka_unit_test(test_self_loops),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_random_against_reference),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
