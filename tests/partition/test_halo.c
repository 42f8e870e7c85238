/*
 * Tests of relabelling and per-part local graphs (partition/halo.c).
 *
 * On random directed graphs (repeats, self loops, weights, isolated nodes)
 * with random and METIS-like clustered assignments into 1 to 7 parts
 * (some parts empty): the relabelling is a permutation, each part's range
 * holds exactly its nodes in old order; with 1 to 3 hops of halo every
 * part's local graph passes gnn_csr_validate, its first n_owned local ids
 * are its range, each hop of its halo is exactly the breadth-first search
 * over in-edges (recomputed here) in ascending new id, it has rows for the
 * owned nodes and the hops short of the last, and each row maps back to
 * exactly the graph's row (sources and weights, as a multiset), so every
 * edge lands in exactly one part as an owned in-edge, and old_ids are the
 * local nodes' old ids; a shared marker array is left all -1. The same
 * parts built from only the rows they hold (plus random others), with a
 * map made without old_of_new and the owned nodes listed, are identical;
 * a build missing one row it needs names the node. A path and a small
 * directed graph with 1 to 3 hops give exactly the local ids, hop offsets
 * and rows worked out by hand. Errors: a part id out of range, a graph
 * that does not match the map, a bad part number or hop count, no owned
 * list, and every allocation failing in turn (a clean GNN_ENOMEM, the
 * marker restored).
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

/*
 * The halo of part [lo, hi) of the map m, hop by hop, recomputed plainly:
 * want[] receives the local-to-global ids and hs[] the hop offsets
 * (hops + 1 entries). Returns the number of local nodes.
 */
static gnn_vid_t reference_local(const gnn_csr_t *g, const gnn_part_map_t *m, int p, int hops,
                                 gnn_vid_t *want, gnn_vid_t *hs)
{
    gnn_vid_t n = g->n_rows, lo = m->start[p], hi = m->start[p + 1];
    int *hop = malloc(((size_t)n + 1) * sizeof *hop);
    for (gnn_vid_t x = 0; x < n; x++) hop[x] = x >= lo && x < hi ? 0 : -1;
    gnn_vid_t nl = 0;
    for (gnn_vid_t x = lo; x < hi; x++) want[nl++] = x;
    hs[0] = nl;
    gnn_vid_t a = 0, b = nl;
    for (int h = 1; h <= hops; h++) {
        for (gnn_vid_t r = a; r < b; r++) {
            gnn_vid_t v = m->old_of_new[want[r]];
            for (gnn_eid_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
                gnn_vid_t y = gnn_part_new_id(m, g->indices[e]);
                if (hop[y] < 0) {
                    hop[y] = h;
                    want[nl++] = y;
                }
            }
        }
        /* insertion sort of the new hop */
        for (gnn_vid_t i = b + 1; i < nl; i++)
            for (gnn_vid_t j = i; j > b && want[j - 1] > want[j]; j--) {
                gnn_vid_t t = want[j];
                want[j] = want[j - 1];
                want[j - 1] = t;
            }
        hs[h] = nl;
        a = b;
        b = nl;
    }
    free(hop);
    return nl;
}

/* The rows of g for the ascending ids held[0 .. nh), n columns. */
static void sub_rows(const gnn_csr_t *g, const gnn_vid_t *held, gnn_vid_t nh, gnn_csr_t *out)
{
    memset(out, 0, sizeof *out);
    out->n_rows = nh;
    out->n_cols = g->n_cols;
    out->flags = g->flags;
    out->indptr = malloc(((size_t)nh + 1) * sizeof *out->indptr);
    out->indptr[0] = 0;
    for (gnn_vid_t i = 0; i < nh; i++)
        out->indptr[i + 1] = out->indptr[i] + g->indptr[held[i] + 1] - g->indptr[held[i]];
    out->nnz = out->indptr[nh];
    out->indices = malloc(((size_t)out->nnz + 1) * sizeof *out->indices);
    out->weights = g->weights ? malloc(((size_t)out->nnz + 1) * sizeof *out->weights) : NULL;
    for (gnn_vid_t i = 0; i < nh; i++) {
        gnn_eid_t a = g->indptr[held[i]], d = g->indptr[held[i] + 1] - a;
        memcpy(out->indices + out->indptr[i], g->indices + a, (size_t)d * sizeof *out->indices);
        if (g->weights)
            memcpy(out->weights + out->indptr[i], g->weights + a, (size_t)d * sizeof(float));
    }
}

/* l and r hold the same local graph. */
static void same_local(const gnn_part_local_t *l, const gnn_part_local_t *r)
{
    assert_int_equal(l->n_local, r->n_local);
    assert_int_equal(l->n_rows, r->n_rows);
    for (int h = 0; h <= l->hops; h++) assert_int_equal(l->hop_start[h], r->hop_start[h]);
    for (gnn_vid_t i = 0; i < l->n_local; i++) {
        assert_int_equal(l->local_to_global[i], r->local_to_global[i]);
        assert_int_equal(l->old_ids[i], r->old_ids[i]);
    }
    for (gnn_vid_t i = 0; i <= l->n_rows; i++) assert_int_equal(l->csr.indptr[i], r->csr.indptr[i]);
    for (gnn_eid_t e = 0; e < l->csr.nnz; e++) {
        assert_int_equal(l->csr.indices[e], r->csr.indices[e]);
        if (l->csr.weights) assert_true(l->csr.weights[e] == r->csr.weights[e]);
    }
}

/*
 * Part p built again from only the rows it needs (and, with extra, about
 * a third of the others), under a map without old_of_new: the same local
 * graph as from the whole graph. Without one needed row it fails naming
 * the node.
 */
static void check_compact(const gnn_csr_t *g, const int32_t *part, const gnn_part_map_t *m,
                          int p, int hops, const gnn_part_local_t *want, uint64_t *rng)
{
    gnn_vid_t n = g->n_rows, nh = 0;
    char *need = calloc((size_t)n + 1, 1);
    for (gnn_vid_t i = 0; i < want->n_rows; i++) need[want->old_ids[i]] = 1;
    gnn_vid_t *held = malloc(((size_t)n + 1) * sizeof *held);
    for (gnn_vid_t v = 0; v < n; v++)
        if (need[v] || tu_rng_next(rng) % 3 == 0) held[nh++] = v;
    gnn_part_map_t mc;
    assert_int_equal(gnn_part_relabel(part, n, m->num_parts, 0, &mc), 0);
    assert_null(mc.old_of_new);
    gnn_csr_t sub;
    sub_rows(g, held, nh, &sub);
    const gnn_vid_t *own = m->old_of_new + m->start[p];
    gnn_part_local_t l;
    gnn_part_rows_t rows = {.g = &sub, .ids = held};
    assert_int_equal(gnn_part_local_build(&rows, &mc, p, own, hops, &l), 0);
    same_local(want, &l);
    gnn_part_local_free(&l);
    /* Owned nodes must be listed when the map has no old_of_new. */
    if (want->n_owned > 0) {
        assert_int_equal(gnn_part_local_build(&rows, &mc, p, NULL, hops, &l), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "are not listed"));
    }
    gnn_csr_free(&sub);
    /* One needed row missing. */
    if (want->n_rows > 0) {
        gnn_vid_t drop = want->old_ids[tu_rng_next(rng) % (uint64_t)want->n_rows], k = 0;
        for (gnn_vid_t i = 0; i < nh; i++)
            if (held[i] != drop) held[k++] = held[i];
        sub_rows(g, held, k, &sub);
        assert_int_equal(gnn_part_local_build(&rows, &mc, p, own, hops, &l), GNN_EINVAL);
        char msg[64];
        snprintf(msg, sizeof msg, "the row of node %" GNN_PRIvid " is not held", drop);
        assert_non_null(strstr(gnn_error_message(), msg));
        assert_null(l.local_to_global);
        gnn_csr_free(&sub);
    }
    gnn_part_map_free(&mc);
    free(held);
    free(need);
}

static void check_parts(const gnn_csr_t *g, const int32_t *part, int k, int hops, int shared,
                        uint64_t *rng)
{
    gnn_vid_t n = g->n_rows;
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, n, k, 1, &m), 0);
    assert_int_equal(m.start[0], 0);
    assert_int_equal(m.start[k], n);
    char *seen = calloc((size_t)n + 1, 1);
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_vid_t x = gnn_part_new_id(&m, v);
        assert_true(x >= 0 && x < n && !seen[x]);
        seen[x] = 1;
        assert_int_equal(m.old_of_new[x], v);
        assert_true(x >= m.start[part[v]] && x < m.start[part[v] + 1]);
        if (v > 0 && part[v - 1] == part[v]) assert_true(gnn_part_new_id(&m, v - 1) < x);
    }
    free(seen);
    gnn_part_rows_t rows = {.g = g};
    if (shared) {
        rows.mark = malloc(((size_t)n + 1) * sizeof *rows.mark);
        for (gnn_vid_t x = 0; x < n; x++) rows.mark[x] = -1;
    }
    gnn_vid_t *want = malloc(((size_t)n + 1) * sizeof *want);
    gnn_vid_t hs[16];
    gnn_eid_t total = 0;
    pair_t *a = malloc(((size_t)g->nnz + 1) * sizeof *a), *b = malloc(((size_t)g->nnz + 1) * sizeof *b);
    for (int p = 0; p < k; p++) {
        gnn_part_local_t l;
        assert_int_equal(gnn_part_local_build(&rows, &m, p, NULL, hops, &l), 0);
        if (rows.mark)
            for (gnn_vid_t x = 0; x < n; x++) assert_int_equal(rows.mark[x], -1);
        assert_int_equal(gnn_csr_validate(&l.csr), 0);
        gnn_vid_t lo = m.start[p], hi = m.start[p + 1];
        assert_int_equal(l.part, p);
        assert_int_equal(l.hops, hops);
        assert_int_equal(l.n_owned, hi - lo);
        /* Local ids and hops exactly the breadth-first search's. */
        gnn_vid_t nl = reference_local(g, &m, p, hops, want, hs);
        assert_int_equal(l.n_local, nl);
        for (int h = 0; h <= hops; h++) assert_int_equal(l.hop_start[h], hs[h]);
        for (gnn_vid_t i = 0; i < nl; i++) {
            assert_int_equal(l.local_to_global[i], want[i]);
            assert_int_equal(l.old_ids[i], m.old_of_new[want[i]]);
        }
        assert_int_equal(l.n_rows, hops == 1 ? l.n_owned : hs[hops - 1]);
        assert_int_equal(l.csr.n_rows, l.n_rows);
        assert_int_equal(l.csr.n_cols, l.n_local);
        /* Every halo node is used by a row when there is one hop. */
        if (hops == 1) {
            char *used = calloc((size_t)l.n_local + 1, 1);
            for (gnn_eid_t e = 0; e < l.csr.nnz; e++) used[l.csr.indices[e]] = 1;
            for (gnn_vid_t i = l.n_owned; i < l.n_local; i++) assert_true(used[i]);
            free(used);
        }
        for (gnn_vid_t i = 0; i < l.n_rows; i++) {
            gnn_vid_t v = m.old_of_new[l.local_to_global[i]];
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
        total += l.csr.indptr[l.n_owned];
        check_compact(g, part, &m, p, hops, &l, rng);
        gnn_part_local_free(&l);
    }
    assert_int_equal(total, g->nnz);
    free(a);
    free(b);
    free(want);
    free(rows.mark);
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
        for (int hops = 1; hops <= 3; hops++)
            check_parts(&g, part, k, hops, (round + hops) % 2, &s);
        gnn_csr_free(&g);
        free(part);
        free(src);
        free(dst);
        free(w);
    }
}

/* ---- Small graphs worked out by hand ---------------------------------------- */

/* What part p's local graph must be, exactly (rows sorted by local id). */
typedef struct {
    int p, hops;
    gnn_vid_t n_local, n_rows;
    const gnn_vid_t *l2g, *hop_start, *indptr, *indices;
} expect_t;

static void expect_part(const gnn_csr_t *g, const gnn_part_map_t *m, const expect_t *x)
{
    gnn_part_local_t l;
    gnn_part_rows_t rows = {.g = g};
    assert_int_equal(gnn_part_local_build(&rows, m, x->p, NULL, x->hops, &l), 0);
    assert_int_equal(gnn_csr_validate(&l.csr), 0);
    assert_int_equal(l.n_owned, m->start[x->p + 1] - m->start[x->p]);
    assert_int_equal(l.n_local, x->n_local);
    assert_int_equal(l.n_rows, x->n_rows);
    assert_int_equal(l.csr.n_rows, x->n_rows);
    assert_int_equal(l.csr.n_cols, x->n_local);
    for (int h = 0; h <= x->hops; h++) assert_int_equal(l.hop_start[h], x->hop_start[h]);
    for (gnn_vid_t i = 0; i < x->n_local; i++) assert_int_equal(l.local_to_global[i], x->l2g[i]);
    for (gnn_vid_t i = 0; i <= x->n_rows; i++) assert_int_equal(l.csr.indptr[i], x->indptr[i]);
    for (gnn_eid_t e = 0; e < l.csr.nnz; e++) assert_int_equal(l.csr.indices[e], x->indices[e]);
    gnn_part_local_free(&l);
}

/*
 * The undirected path 0 - 1 - ... - 7 (both directions stored), part 0 =
 * {2, 3, 4} (new ids 0, 1, 2), part 1 = {0, 1, 5, 6, 7} (new 3 .. 7).
 * Part 0: hop 1 = old {1, 5} (new 4, 5), hop 2 = old {0, 6} (new 3, 6),
 * hop 3 = old {7} (new 7). Part 1: hop 1 = old {2, 4} (new 0, 2), hop 2 =
 * old {3} (new 1), hop 3 empty.
 */
static void test_path(void **state)
{
    (void)state;
    gnn_vid_t src[14], dst[14];
    for (int i = 0; i < 7; i++) {
        src[2 * i] = i, dst[2 * i] = i + 1;
        src[2 * i + 1] = i + 1, dst[2 * i + 1] = i;
    }
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(8, 14, src, dst, NULL, 0, &g), 0);
    int32_t part[8] = {1, 1, 0, 0, 0, 1, 1, 1};
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, 8, 2, 1, &m), 0);

    /* One hop: the layout of before, rows for the owned nodes only. */
    static const gnn_vid_t l2g1[] = {0, 1, 2, 4, 5}, hs1[] = {3, 5};
    static const gnn_vid_t ip1[] = {0, 2, 4, 6}, ix1[] = {1, 3, 0, 2, 1, 4};
    expect_part(&g, &m, &(expect_t){0, 1, 5, 3, l2g1, hs1, ip1, ix1});

    static const gnn_vid_t l2g2[] = {0, 1, 2, 4, 5, 3, 6}, hs2[] = {3, 5, 7};
    static const gnn_vid_t ip2[] = {0, 2, 4, 6, 8, 10}, ix2[] = {1, 3, 0, 2, 1, 4, 0, 5, 2, 6};
    expect_part(&g, &m, &(expect_t){0, 2, 7, 5, l2g2, hs2, ip2, ix2});

    static const gnn_vid_t l2g3[] = {0, 1, 2, 4, 5, 3, 6, 7}, hs3[] = {3, 5, 7, 8};
    static const gnn_vid_t ip3[] = {0, 2, 4, 6, 8, 10, 11, 13};
    static const gnn_vid_t ix3[] = {1, 3, 0, 2, 1, 4, 0, 5, 2, 6, 3, 4, 7};
    expect_part(&g, &m, &(expect_t){0, 3, 8, 7, l2g3, hs3, ip3, ix3});

    static const gnn_vid_t q2[] = {3, 4, 5, 6, 7, 0, 2, 1}, qs2[] = {5, 7, 8};
    static const gnn_vid_t qp2[] = {0, 1, 3, 5, 7, 8, 10, 12};
    static const gnn_vid_t qx2[] = {1, 0, 5, 3, 6, 2, 4, 3, 1, 7, 2, 7};
    expect_part(&g, &m, &(expect_t){1, 2, 8, 7, q2, qs2, qp2, qx2});

    /* Hop 3 is empty: every local node has its row. */
    static const gnn_vid_t qs3[] = {5, 7, 8, 8};
    static const gnn_vid_t qp3[] = {0, 1, 3, 5, 7, 8, 10, 12, 14};
    static const gnn_vid_t qx3[] = {1, 0, 5, 3, 6, 2, 4, 3, 1, 7, 2, 7, 5, 6};
    expect_part(&g, &m, &(expect_t){1, 3, 8, 8, q2, qs3, qp3, qx3});

    gnn_part_map_free(&m);
    gnn_csr_free(&g);
}

/*
 * A directed graph of 6 nodes: 1->0, 2->1, 3->2, 4->3, 0->4, 5->2, 0->5;
 * part 0 = {0, 2} (new 0, 1), part 1 = {1, 3, 4, 5} (new 2 .. 5). Only
 * in-edges lead to the halo: part 0 reaches old 4 at hop 2 through 4->3,
 * and nothing through its out-edge 0->4; part 1's hop 2 is empty.
 */
static void test_directed(void **state)
{
    (void)state;
    gnn_vid_t src[] = {1, 2, 3, 4, 0, 5, 0}, dst[] = {0, 1, 2, 3, 4, 2, 5};
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(6, 7, src, dst, NULL, 0, &g), 0);
    int32_t part[6] = {0, 1, 0, 1, 1, 1};
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, 6, 2, 1, &m), 0);

    static const gnn_vid_t l2g1[] = {0, 1, 2, 3, 5}, hs1[] = {2, 5};
    static const gnn_vid_t ip1[] = {0, 1, 3}, ix1[] = {2, 3, 4};
    expect_part(&g, &m, &(expect_t){0, 1, 5, 2, l2g1, hs1, ip1, ix1});

    static const gnn_vid_t l2g2[] = {0, 1, 2, 3, 5, 4}, hs2[] = {2, 5, 6};
    static const gnn_vid_t ip2[] = {0, 1, 3, 4, 5, 6}, ix2[] = {2, 3, 4, 1, 5, 0};
    expect_part(&g, &m, &(expect_t){0, 2, 6, 5, l2g2, hs2, ip2, ix2});

    static const gnn_vid_t hs3[] = {2, 5, 6, 6};
    static const gnn_vid_t ip3[] = {0, 1, 3, 4, 5, 6, 7}, ix3[] = {2, 3, 4, 1, 5, 0, 0};
    expect_part(&g, &m, &(expect_t){0, 3, 6, 6, l2g2, hs3, ip3, ix3});

    static const gnn_vid_t q[] = {2, 3, 4, 5, 0, 1}, qs2[] = {4, 6, 6};
    static const gnn_vid_t qp2[] = {0, 1, 2, 3, 4, 5, 7}, qx2[] = {5, 2, 4, 4, 0, 1, 3};
    expect_part(&g, &m, &(expect_t){1, 2, 6, 6, q, qs2, qp2, qx2});

    static const gnn_vid_t qs3[] = {4, 6, 6, 6};
    expect_part(&g, &m, &(expect_t){1, 3, 6, 6, q, qs3, qp2, qx2});

    gnn_part_map_free(&m);
    gnn_csr_free(&g);
}

/* Every allocation of the relabelling, then of a three-hop build with and
 * without a marker array, failing in turn: GNN_ENOMEM, *out zeroed, the
 * marker all -1; then it succeeds. */
static void test_alloc_failures(void **state)
{
    (void)state;
    uint64_t s = g_seed;
    gnn_vid_t n = 300;
    gnn_eid_t ne = 600; /* sparse enough that three hops from a part do not reach every node */
    gnn_vid_t *src = malloc((size_t)ne * sizeof *src), *dst = malloc((size_t)ne * sizeof *dst);
    float *w = malloc((size_t)ne * sizeof *w);
    for (gnn_eid_t e = 0; e < ne; e++) {
        src[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
        dst[e] = (gnn_vid_t)(tu_rng_next(&s) % (uint64_t)n);
        w[e] = 1.0f;
    }
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(n, ne, src, dst, w, 0, &g), 0);
    int32_t *part = malloc((size_t)n * sizeof *part);
    for (gnn_vid_t v = 0; v < n; v++) part[v] = (int32_t)(v % 5);
    gnn_part_map_t m;
    for (int64_t nth = 1;; nth++) {
        gnn_alloc_fail_at(nth);
        int rc = gnn_part_relabel(part, n, 5, 1, &m);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!failed) {
            assert_int_equal(rc, 0);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(m.start);
        assert_null(m.rank);
        assert_null(m.old_of_new);
    }
    gnn_vid_t *mark = malloc((size_t)n * sizeof *mark);
    for (gnn_vid_t v = 0; v < n; v++) mark[v] = -1;
    int done = 0;
    for (int64_t nth = 1; !done; nth++) {
        for (int shared = 0; shared < 2; shared++) {
            gnn_part_local_t l;
            gnn_part_rows_t rows = {.g = &g, .mark = shared ? mark : NULL};
            gnn_alloc_fail_at(nth);
            int rc = gnn_part_local_build(&rows, &m, 2, NULL, 3, &l);
            int failed = gnn_alloc_failed();
            gnn_alloc_fail_at(0);
            for (gnn_vid_t v = 0; v < n; v++) assert_int_equal(mark[v], -1);
            if (failed) {
                assert_int_equal(rc, GNN_ENOMEM);
                assert_null(l.local_to_global);
                assert_null(l.old_ids);
                assert_null(l.hop_start);
                assert_null(l.csr.indptr);
            } else {
                assert_int_equal(rc, 0);
                assert_true(l.n_local > l.n_rows && l.n_rows > l.n_owned);
                gnn_part_local_free(&l);
                done = shared;
            }
        }
        assert_true(nth < 1000);
    }
    gnn_part_map_free(&m);
    gnn_csr_free(&g);
    free(mark);
    free(part);
    free(src);
    free(dst);
    free(w);
}

static void test_errors(void **state)
{
    (void)state;
    int32_t part[4] = {0, 1, 2, 1};
    gnn_part_map_t m;
    assert_int_equal(gnn_part_relabel(part, 4, 2, 1, &m), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "node 2 is in part 2 of 2"));
    assert_null(m.start);
    assert_int_equal(gnn_part_relabel(part, 4, 0, 1, &m), GNN_EINVAL);
    assert_int_equal(gnn_part_relabel(part, 4, 3, 1, &m), 0);
    gnn_vid_t src[] = {0, 1}, dst[] = {1, 2};
    gnn_csr_t g;
    assert_int_equal(gnn_csr_from_edges(3, 2, src, dst, NULL, 0, &g), 0);
    gnn_part_local_t l;
    gnn_part_rows_t rows = {.g = &g};
    assert_int_equal(gnn_part_local_build(&rows, &m, 0, NULL, 1, &l), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "does not match"));
    gnn_csr_free(&g);
    gnn_vid_t src4[] = {0, 1, 3}, dst4[] = {1, 2, 0};
    assert_int_equal(gnn_csr_from_edges(4, 3, src4, dst4, NULL, 0, &g), 0);
    assert_int_equal(gnn_part_local_build(&rows, &m, 3, NULL, 1, &l), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "part 3 of 3"));
    assert_int_equal(gnn_part_local_build(&rows, &m, 1, NULL, 0, &l), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "0 hops of halo"));
    uint64_t s = g_seed;
    check_parts(&g, part, 3, 1, 0, &s);
    gnn_csr_free(&g);
    gnn_part_map_free(&m);
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_graphs),
        cmocka_unit_test(test_path),
        cmocka_unit_test(test_directed),
        cmocka_unit_test(test_alloc_failures),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
