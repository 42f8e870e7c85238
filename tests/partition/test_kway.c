/*
 * Tests of node-to-part assignment (partition/kway.c).
 *
 * The undirected view: exact rows on a small directed graph with self
 * loops and repeated edges; on random directed graphs it passes
 * gnn_csr_validate with its flags and holds u - v exactly when u -> v or
 * v -> u is stored (u != v). METIS: on a planted graph (k dense clusters
 * joined by few edges) k-way finds a cut no larger than the planted one
 * and far below a random assignment's; parts stay within the imbalance
 * allowed; with a second constraint (a "train" flag on some nodes) no
 * part holds more than its share of either; one part never reaches METIS; the returned cut equals
 * gnn_part_edge_cut. Schemes: k-way, recursive bisection and the better of
 * the two (parts and weighted cut of the lower). Errors: too many parts, a graph that is not a view,
 * a view whose symmetry claim is false (caught before METIS), weights
 * that are negative or all zero. Random parts: sizes differ by at most
 * one, the same for the same seed, different for another.
 * Prints its seed; set GNN_TEST_SEED to replay another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "partition/kway.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;

static int has_entry(const gnn_csr_t *g, gnn_vid_t row, gnn_vid_t col)
{
    for (gnn_eid_t e = g->indptr[row]; e < g->indptr[row + 1]; e++)
        if (g->indices[e] == col) return 1;
    return 0;
}

/* In-edge CSR of n nodes from m edges src -> dst as given (unsorted rows,
 * repeats and loops kept). */
static void raw_graph(gnn_vid_t n, gnn_eid_t m, const gnn_vid_t *src, const gnn_vid_t *dst,
                      gnn_csr_t *g)
{
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL, 0, g), 0);
}

static void test_view_small(void **state)
{
    (void)state;
    /* 0->1, 1->0 (both ways), 2->2 (loop), 3->1 twice, 2->3; node 4 alone. */
    gnn_vid_t src[] = {0, 1, 2, 3, 3, 2}, dst[] = {1, 0, 2, 1, 1, 3};
    gnn_csr_t g, u;
    raw_graph(5, 6, src, dst, &g);
    assert_int_equal(gnn_part_undirected(&g, &u), 0);
    const gnn_eid_t want_ptr[] = {0, 1, 3, 4, 6, 6};
    const gnn_vid_t want_idx[] = {1, 0, 3, 3, 1, 2};
    assert_int_equal(u.nnz, 6);
    assert_memory_equal(u.indptr, want_ptr, sizeof want_ptr);
    assert_memory_equal(u.indices, want_idx, sizeof want_idx);
    assert_int_equal(gnn_csr_validate(&u), 0);
    int32_t part[5] = {0, 1, 1, 0, 1};
    assert_int_equal(gnn_part_edge_cut(&u, part), 3); /* 0-1, 1-3 and 2-3 */
    gnn_csr_free(&u);
    gnn_csr_free(&g);
}

static void test_view_random(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    for (int round = 0; round < 4; round++) {
        gnn_vid_t n = 50 + (gnn_vid_t)(tu_rng_next(&s) % 300);
        gnn_eid_t m = n * (1 + (gnn_eid_t)(tu_rng_next(&s) % 6));
        gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
        for (gnn_eid_t e = 0; e < m; e++) {
            src[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
            dst[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
        }
        gnn_csr_t g, u;
        raw_graph(n, m, src, dst, &g);
        assert_int_equal(gnn_part_undirected(&g, &u), 0);
        assert_int_equal(gnn_csr_validate(&u), 0);
        for (gnn_vid_t v = 0; v < n; v++)
            for (gnn_vid_t x = 0; x < n; x++) {
                int want = x != v && (has_entry(&g, v, x) || has_entry(&g, x, v));
                if (has_entry(&u, v, x) != want)
                    fail_msg("round %d: view entry (%lld, %lld) is %d, expected %d", round,
                             (long long)v, (long long)x, !want, want);
            }
        gnn_csr_free(&u);
        gnn_csr_free(&g);
        free(src);
        free(dst);
    }
}

/* k clusters of size c, each a random graph of degree ~d inside, plus
 * `bridges` random edges between clusters; *planted_cut: bridges that join
 * two clusters (as undirected pairs, after the view). */
static void planted(int k, gnn_vid_t c, int d, gnn_eid_t bridges, uint64_t *s, gnn_csr_t *u,
                    int32_t *truth)
{
    gnn_vid_t n = (gnn_vid_t)k * c;
    gnn_eid_t m = n * d + bridges, e = 0;
    gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    for (gnn_vid_t v = 0; v < n; v++) {
        truth[v] = (int32_t)(v / c);
        for (int j = 0; j < d; j++) {
            src[e] = v;
            dst[e++] = (v / c) * c + (gnn_vid_t)(tu_rng_next(s) % (uint64_t)c);
        }
    }
    for (gnn_eid_t b = 0; b < bridges; b++) {
        src[e] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n);
        dst[e++] = (gnn_vid_t)(tu_rng_next(s) % (uint64_t)n);
    }
    gnn_csr_t g;
    raw_graph(n, m, src, dst, &g);
    assert_int_equal(gnn_part_undirected(&g, u), 0);
    gnn_csr_free(&g);
    free(src);
    free(dst);
}

static void part_sizes(const int32_t *part, gnn_vid_t n, int k, const int64_t *w, int ncon, int con,
                       int64_t *size)
{
    memset(size, 0, (size_t)k * sizeof *size);
    for (gnn_vid_t v = 0; v < n; v++) size[part[v]] += w ? w[v * ncon + con] : 1;
}

static void test_metis_planted(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5151;
    const int k = 8;
    const gnn_vid_t c = 500, n = (gnn_vid_t)k * c;
    int32_t *truth = malloc((size_t)n * sizeof *truth), *part = malloc((size_t)n * sizeof *part),
            *rnd = malloc((size_t)n * sizeof *rnd);
    gnn_csr_t u;
    planted(k, c, 8, 400, &s, &u, truth);
    int64_t planted_cut = gnn_part_edge_cut(&u, truth), cut = -1;
    gnn_part_opts_t o = {.ncon = 0, .vwgt = NULL, .ufactor = 30, .seed = 7};
    assert_int_equal(gnn_part_metis(&u, k, &o, part, &cut, NULL), 0);
    assert_int_equal(cut, gnn_part_edge_cut(&u, part));
    assert_int_equal(gnn_part_random(n, k, 7, rnd), 0);
    int64_t rcut = gnn_part_edge_cut(&u, rnd);
    print_message("planted 8 x 500: planted cut %lld, METIS %lld, random %lld\n",
                  (long long)planted_cut, (long long)cut, (long long)rcut);
    assert_true(cut <= planted_cut);
    assert_true(cut * 10 < rcut);
    int64_t size[8];
    part_sizes(part, n, k, NULL, 0, 0, size);
    for (int p = 0; p < k; p++) assert_true(size[p] <= (int64_t)(1.03 * c) + 1 && size[p] > 0);

    /* Two constraints: every node, and a "train" flag on 10 % of them
     * (all in clusters 0 and 1, so a cluster-following cut would put them
     * in two parts): both balanced. */
    int64_t *w = malloc((size_t)n * 2 * sizeof *w);
    int64_t ntrain = 0;
    for (gnn_vid_t v = 0; v < n; v++) {
        w[2 * v] = 1;
        w[2 * v + 1] = v < 2 * c && v % 2 == 0;
        ntrain += w[2 * v + 1];
    }
    gnn_part_opts_t o2 = {.ncon = 2, .vwgt = w, .ufactor = 50, .seed = 7};
    assert_int_equal(gnn_part_metis(&u, k, &o2, part, &cut, NULL), 0);
    int64_t tsize[8];
    part_sizes(part, n, k, w, 2, 1, tsize);
    part_sizes(part, n, k, w, 2, 0, size);
    print_message("two constraints: cut %lld; train per part", (long long)cut);
    for (int p = 0; p < k; p++) print_message(" %lld", (long long)tsize[p]);
    print_message("\n");
    for (int p = 0; p < k; p++) {
        /* METIS bounds the heaviest part: (1 + ufactor/1000) x the mean. */
        assert_true(tsize[p] <= (int64_t)(1.1 * (double)ntrain / k) + 1);
        assert_true(size[p] <= (int64_t)(1.1 * c));
    }
    free(w);
    gnn_csr_free(&u);
    free(truth);
    free(part);
    free(rnd);
}

static void test_metis_one_part_and_errors(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x77;
    int32_t truth[400], part[400];
    gnn_csr_t u;
    planted(4, 100, 4, 20, &s, &u, truth);
    gnn_part_opts_t o = {.ncon = 0, .ufactor = 30, .seed = 1};
    int64_t cut = -1;
    for (int v = 0; v < 400; v++) part[v] = 9;
    assert_int_equal(gnn_part_metis(&u, 1, &o, part, &cut, NULL), 0);
    assert_int_equal(cut, 0);
    for (int v = 0; v < 400; v++) assert_int_equal(part[v], 0);

    assert_int_equal(gnn_part_metis(&u, 401, &o, part, &cut, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "401 parts for 400 nodes"));
    assert_int_equal(gnn_part_metis(&u, 0, &o, part, &cut, NULL), GNN_EINVAL);
    gnn_part_opts_t bad = o;
    bad.ufactor = 0;
    assert_int_equal(gnn_part_metis(&u, 4, &bad, part, &cut, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "ufactor 0"));

    /* Weights: negative, or all zero for one constraint. */
    int64_t w[400];
    for (int v = 0; v < 400; v++) w[v] = 0;
    gnn_part_opts_t zo = {.ncon = 1, .vwgt = w, .ufactor = 30, .seed = 1};
    assert_int_equal(gnn_part_metis(&u, 4, &zo, part, &cut, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "vertex weight 0 is 0 on every node"));
    w[17] = -2;
    assert_int_equal(gnn_part_metis(&u, 4, &zo, part, &cut, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "weight 0 of node 17 is -2"));

    /* Not a view: a raw CSR, and a view whose symmetry claim is broken. */
    gnn_vid_t src[] = {0, 1, 2}, dst[] = {1, 2, 0};
    gnn_csr_t g;
    raw_graph(3, 3, src, dst, &g);
    assert_int_equal(gnn_part_metis(&g, 2, &o, part, &cut, NULL), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "not an undirected view"));
    gnn_csr_free(&g);
    gnn_csr_t broken;
    assert_int_equal(gnn_csr_copy(&u, &broken), 0);
    broken.indices[broken.indptr[5]] = (broken.indices[broken.indptr[5]] + 1) % 400;
    assert_int_not_equal(gnn_part_metis(&broken, 4, &o, part, &cut, NULL), 0);
    gnn_csr_free(&broken);
    gnn_csr_free(&u);
}

/* The schemes: kway and rb say so in *used; best's parts and cut are those
 * of the scheme with the lower cut, k-way on a tie, with edge weights
 * counted when given; one part reports no scheme; a bad scheme is refused. */
static void test_metis_schemes(void **state)
{
    (void)state;
    uint64_t s = g_seed ^ 0x5c4e;
    const int k = 4;
    const gnn_vid_t n = 10 * 300; /* 10 clusters into 4 parts, as the SBM benchmark */
    int32_t *truth = malloc((size_t)n * sizeof *truth);
    int32_t *p[3];
    gnn_csr_t u;
    planted(10, 300, 6, 600, &s, &u, truth);
    /* Weights: 1, and 5 on every entry between nodes of one cluster. */
    int64_t *ew = malloc((size_t)u.nnz * sizeof *ew);
    for (gnn_vid_t v = 0; v < n; v++)
        for (gnn_eid_t e = u.indptr[v]; e < u.indptr[v + 1]; e++)
            ew[e] = truth[v] == truth[u.indices[e]] ? 5 : 1;
    for (int weighted = 0; weighted < 2; weighted++) {
        int64_t cut[3];
        int used[3];
        for (int sc = 0; sc < 3; sc++) {
            p[sc] = malloc((size_t)n * sizeof *p[sc]);
            gnn_part_opts_t o = {.ufactor = 30, .seed = 3, .scheme = sc,
                                 .adjwgt = weighted ? ew : NULL};
            used[sc] = 99;
            assert_int_equal(gnn_part_metis(&u, k, &o, p[sc], &cut[sc], &used[sc]), 0);
            int64_t want = 0;
            for (gnn_vid_t v = 0; v < n; v++)
                for (gnn_eid_t e = u.indptr[v]; e < u.indptr[v + 1]; e++)
                    if (u.indices[e] > v && p[sc][u.indices[e]] != p[sc][v])
                        want += weighted ? ew[e] : 1;
            assert_int_equal(cut[sc], want);
            int64_t size[4];
            part_sizes(p[sc], n, k, NULL, 0, 0, size);
            for (int q = 0; q < k; q++) assert_true(size[q] > 0 && size[q] <= (int64_t)(1.04 * n / k));
        }
        assert_int_equal(used[GNN_PART_KWAY], GNN_PART_KWAY);
        assert_int_equal(used[GNN_PART_RB], GNN_PART_RB);
        int win = cut[GNN_PART_RB] < cut[GNN_PART_KWAY] ? GNN_PART_RB : GNN_PART_KWAY;
        print_message("10 clusters into 4 parts%s: k-way cut %lld, recursive bisection %lld\n",
                      weighted ? ", weighted" : "", (long long)cut[0], (long long)cut[1]);
        assert_int_equal(used[GNN_PART_BEST], win);
        assert_int_equal(cut[GNN_PART_BEST], cut[win]);
        assert_memory_equal(p[GNN_PART_BEST], p[win], (size_t)n * sizeof *p[win]);
        for (int sc = 0; sc < 3; sc++) free(p[sc]);
    }
    int used = 7;
    int64_t cut = -1;
    gnn_part_opts_t o = {.ufactor = 30, .seed = 3, .scheme = GNN_PART_BEST};
    assert_int_equal(gnn_part_metis(&u, 1, &o, truth, &cut, &used), 0);
    assert_int_equal(used, -1);
    assert_int_equal(cut, 0);
    o.scheme = 3;
    assert_int_equal(gnn_part_metis(&u, k, &o, truth, &cut, &used), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "scheme 3"));
    assert_string_equal(gnn_part_scheme_name(GNN_PART_RB), "rb");
    assert_int_equal(gnn_part_scheme_from_name("best"), GNN_PART_BEST);
    assert_int_equal(gnn_part_scheme_from_name("kway"), GNN_PART_KWAY);
    assert_int_equal(gnn_part_scheme_from_name("Kway"), -1);
    assert_int_equal(gnn_part_scheme_from_name(NULL), -1);
    free(ew);
    free(truth);
    gnn_csr_free(&u);
}

static void test_random_parts(void **state)
{
    (void)state;
    int32_t a[1003], b[1003], c[1003];
    assert_int_equal(gnn_part_random(1003, 7, 42, a), 0);
    assert_int_equal(gnn_part_random(1003, 7, 42, b), 0);
    assert_int_equal(gnn_part_random(1003, 7, 43, c), 0);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    int64_t size[7];
    part_sizes(a, 1003, 7, NULL, 0, 0, size);
    for (int p = 0; p < 7; p++) assert_true(size[p] == 143 || size[p] == 144);
    assert_int_equal(gnn_part_random(5, 6, 1, a), GNN_EINVAL);
    assert_int_equal(gnn_part_random(5, 0, 1, a), GNN_EINVAL);
    assert_int_equal(gnn_part_random(0, 3, 1, NULL), 0);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_view_small),
        cmocka_unit_test(test_view_random),
        cmocka_unit_test(test_metis_planted),
        cmocka_unit_test(test_metis_one_part_and_errors),
        cmocka_unit_test(test_metis_schemes),
        cmocka_unit_test(test_random_parts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
