/*
 * Tests of the neighbour sampler (sampler/sampler.c).
 *
 * Uniformity is tested by chi-square goodness of fit at significance 0.001
 * on star graphs (many hubs drawn in many (epoch, batch) batches, every
 * (hub, batch) an independent stream): the count of each
 * neighbour with 50 and with 1000 neighbours (the scan and the hash-set
 * paths of Floyd's algorithm), and the count of each 3-subset of 6
 * neighbours (every subset equally likely, not only every neighbour). The
 * draws are deterministic functions of the sampler seed, so a given seed
 * passes or fails every time; the default seed is fixed.
 *
 * Structure: on random graphs with hubs and empty rows, every block of
 * 1-3 hop mini-batches is checked against the graph: gnn_csr_validate,
 * destinations as the prefix of the sources, ids in range and distinct,
 * rows sorted without repeats, exactly min(deg, fanout) entries per row
 * (all neighbours for -1), every edge present in the graph, every new source
 * reached by some edge, and the chaining of blocks. Reproducibility: equal
 * mini-batches for 1, 2 and 4 threads and for batches sampled concurrently,
 * the same draws for a node whatever the rest of the frontier, different
 * draws for another batch, epoch or seed. Errors: bad fanouts and layer
 * counts, repeated and out-of-range seeds; every allocation made to fail
 * gives a clean GNN_ENOMEM (no leak under the sanitizer build). Excluded
 * edges (an edge batch's positives) appear in no block, leave other rows'
 * draws unchanged and the rest of a row uniform. Sampling once keeps a
 * node's draw from the hop that reached it in every later block. A 1M-node
 * graph prints the time of a 1024-seed batch with fanouts 15,10,5.
 * Prints its seed; set GNN_TEST_SEED to replay another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/draw.h"
#include "graph/base/error.h"
#include "sampler/sampler.h"
#include "tests/common/testutil.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

/* ---- Random data and graphs ------------------------------------------------- */

static int64_t rng_below(uint64_t *state, int64_t bound)
{
    return (int64_t)(tu_rng_next(state) % (uint64_t)bound);
}

/* Deduplicated, sorted in-edge CSR of n nodes from m edges src -> dst. */
static void build(gnn_vid_t n, gnn_eid_t m, const gnn_vid_t *src, const gnn_vid_t *dst,
                  gnn_csr_t *g)
{
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL,
                                        GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS, g),
                     0);
    assert_true(g->flags & GNN_CSR_SORTED);
    assert_true(g->flags & GNN_CSR_DEDUPED);
}

/* h stars: star c has hub c * (d + 1) with the d in-neighbours hub + 1 ..
 * hub + d. */
static void stars(gnn_vid_t h, gnn_vid_t d, gnn_csr_t *g)
{
    gnn_eid_t m = h * d;
    gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    assert_true(src && dst);
    for (gnn_vid_t c = 0; c < h; c++)
        for (gnn_vid_t i = 0; i < d; i++) {
            src[c * d + i] = c * (d + 1) + i + 1;
            dst[c * d + i] = c * (d + 1);
        }
    build(h * (d + 1), m, src, dst, g);
    free(src);
    free(dst);
}

/* Star: node 0 has the d in-neighbours 1..d (d + 1 nodes). */
static void star_graph(gnn_vid_t d, gnn_csr_t *g) { stars(1, d, g); }

/*
 * Random graph of n nodes: m uniform edges, none into rows v % 7 == 3 (empty
 * rows), plus `hubs` rows (v = 7i) taking hub_deg extra in-edges each.
 */
static void random_graph(uint64_t *rng, gnn_vid_t n, gnn_eid_t m, int hubs, gnn_eid_t hub_deg,
                         gnn_csr_t *g)
{
    gnn_eid_t total = m + (gnn_eid_t)hubs * hub_deg;
    gnn_vid_t *src = malloc((size_t)total * sizeof *src), *dst = malloc((size_t)total * sizeof *dst);
    assert_true(src && dst);
    gnn_eid_t e = 0;
    for (gnn_eid_t i = 0; i < m; i++, e++) {
        gnn_vid_t v;
        do v = rng_below(rng, n);
        while (v % 7 == 3);
        src[e] = rng_below(rng, n);
        dst[e] = v;
    }
    for (int h = 0; h < hubs; h++)
        for (gnn_eid_t i = 0; i < hub_deg; i++, e++) {
            src[e] = rng_below(rng, n);
            dst[e] = 7 * (gnn_vid_t)h;
        }
    build(n, total, src, dst, g);
    free(src);
    free(dst);
}

/* n distinct ids of [0, range) in random order (partial Fisher-Yates). */
static gnn_vid_t *random_ids(uint64_t *rng, gnn_vid_t range, int64_t n)
{
    gnn_vid_t *all = malloc((size_t)range * sizeof *all);
    assert_non_null(all);
    for (gnn_vid_t i = 0; i < range; i++) all[i] = i;
    for (int64_t i = 0; i < n; i++) {
        int64_t j = i + rng_below(rng, range - i);
        gnn_vid_t t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    return all; /* the first n */
}

/* Swap v to the front of ids, a permutation of [0, range) from random_ids. */
static void put_first(gnn_vid_t *ids, gnn_vid_t range, gnn_vid_t v)
{
    for (gnn_vid_t j = 0; j < range; j++)
        if (ids[j] == v) {
            ids[j] = ids[0];
            ids[0] = v;
            return;
        }
    fail();
}

static int has_edge(const gnn_csr_t *g, gnn_vid_t u, gnn_vid_t v)
{
    gnn_eid_t lo = g->indptr[v], hi = g->indptr[v + 1];
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (g->indices[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < g->indptr[v + 1] && g->indices[lo] == u;
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* ---- The invariants of a mini-batch --------------------------------------------- */

/* Check mb sampled from g (sorted, deduplicated) for the n seeds with the
 * fanouts by hop. */
static void check_minibatch(const gnn_csr_t *g, int layers, const int *fanouts,
                            const gnn_vid_t *seeds, int64_t n, const gnn_minibatch_t *mb)
{
    assert_int_equal(mb->layers, layers);
    assert_int_equal(mb->n_seeds, n);
    assert_int_equal(mb->blocks[layers - 1].csr.n_rows, n);
    assert_int_equal(mb->blocks[0].csr.n_cols, mb->n_input);
    assert_true(n == 0 || memcmp(mb->nodes, seeds, (size_t)n * sizeof *seeds) == 0);

    /* Input nodes: in range and distinct. */
    gnn_vid_t *sorted = malloc(((size_t)mb->n_input + 1) * sizeof *sorted);
    assert_non_null(sorted);
    memcpy(sorted, mb->nodes, (size_t)mb->n_input * sizeof *sorted);
    qsort(sorted, (size_t)mb->n_input, sizeof *sorted, cmp_vid);
    for (gnn_vid_t i = 0; i < mb->n_input; i++) {
        assert_true(sorted[i] >= 0 && sorted[i] < g->n_rows);
        if (i) assert_true(sorted[i - 1] < sorted[i]);
    }
    free(sorted);

    gnn_eid_t total = 0;
    for (int l = 0; l < layers; l++) {
        const gnn_block_t *b = &mb->blocks[l];
        const gnn_csr_t *c = &b->csr;
        int fanout = fanouts[layers - 1 - l];
        assert_int_equal(gnn_csr_validate(c), 0);
        assert_true(c->flags & GNN_CSR_SORTED);
        assert_true(c->flags & GNN_CSR_DEDUPED);
        assert_null(c->weights);
        assert_true(c->n_rows <= c->n_cols);
        assert_true(c->n_cols <= mb->n_input);
        assert_ptr_equal(b->src_ids, mb->nodes); /* a prefix of the node list */
        if (l > 0) assert_int_equal(mb->blocks[l - 1].csr.n_rows, c->n_cols);
        assert_int_equal(mb->edges[l], c->nnz);
        total += c->nnz;
        char *reached = calloc((size_t)c->n_cols + 1, 1);
        assert_non_null(reached);
        for (gnn_vid_t i = 0; i < c->n_rows; i++) {
            gnn_vid_t v = b->src_ids[i];
            gnn_eid_t d = g->indptr[v + 1] - g->indptr[v];
            gnn_eid_t want = (fanout < 0 || d <= fanout) ? d : fanout;
            assert_int_equal(c->indptr[i + 1] - c->indptr[i], want);
            for (gnn_eid_t e = c->indptr[i]; e < c->indptr[i + 1]; e++) {
                gnn_vid_t j = c->indices[e];
                if (e > c->indptr[i]) assert_true(c->indices[e - 1] < j); /* no repeat */
                assert_true(has_edge(g, b->src_ids[j], v));
                reached[j] = 1;
            }
        }
        for (gnn_vid_t j = c->n_rows; j < c->n_cols; j++) assert_true(reached[j]);
        free(reached);
    }
    assert_int_equal(mb->edges_total, total);
}

static int minibatch_equal(const gnn_minibatch_t *a, const gnn_minibatch_t *b)
{
    if (a->layers != b->layers || a->n_input != b->n_input || a->n_seeds != b->n_seeds ||
        a->edges_total != b->edges_total)
        return 0;
    if (memcmp(a->nodes, b->nodes, (size_t)a->n_input * sizeof *a->nodes)) return 0;
    for (int l = 0; l < a->layers; l++)
        if (!gnn_csr_equal(&a->blocks[l].csr, &b->blocks[l].csr) ||
            a->blocks[l].csr.flags != b->blocks[l].csr.flags)
            return 0;
    return 1;
}

/* The sorted global sources of destination v's row in block l, or -1 when
 * v is not a destination of that block; returns the row length. */
static int64_t row_of(const gnn_minibatch_t *mb, int l, gnn_vid_t v, gnn_vid_t *out)
{
    const gnn_block_t *b = &mb->blocks[l];
    for (gnn_vid_t i = 0; i < b->csr.n_rows; i++)
        if (b->src_ids[i] == v) {
            int64_t n = 0;
            for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++)
                out[n++] = b->src_ids[b->csr.indices[e]];
            qsort(out, (size_t)n, sizeof *out, cmp_vid);
            return n;
        }
    return -1;
}

/* ---- Uniformity ----------------------------------------------------------------- */

/*
 * Upper 0.001 quantiles of the chi-square distribution, computed by
 * bisection on the regularised upper incomplete gamma function Q(df/2, x/2)
 * (and matching the printed tables: 43.820 for 19, 85.351 for 49 degrees of
 * freedom). The test rejects uniformity when the statistic exceeds them.
 */
#define CHI2_999_DF19 43.820
#define CHI2_999_DF49 85.351
#define CHI2_999_DF999 1142.848

/*
 * Draw k of the d neighbours of the hubs of `hubs` stars in `calls`
 * mini-batches (one (epoch, batch) each, all hubs as seeds), and give the
 * counts by neighbour offset 1..d in count (d + 1 entries). Checks every
 * draw: k distinct neighbours of its own hub. The draws of different hubs
 * and batches come from different streams, so they pool into
 * hubs * calls independent draws.
 */
static void draw_stars(gnn_vid_t hubs, gnn_vid_t d, int k, int calls, int64_t *count)
{
    gnn_csr_t g;
    stars(hubs, d, &g);
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 1, &k, &s), 0);
    gnn_vid_t *seeds = malloc((size_t)hubs * sizeof *seeds);
    char *seen = calloc((size_t)d + 1, 1);
    assert_true(seeds && seen);
    for (gnn_vid_t c = 0; c < hubs; c++) seeds[c] = c * (d + 1);
    for (int t = 0; t < calls; t++) {
        gnn_minibatch_t mb;
        assert_int_equal(gnn_sampler_sample(s, seeds, hubs, g_seed, (uint64_t)t / 10,
                                            (uint64_t)t % 10, &mb),
                         0);
        const gnn_block_t *b = &mb.blocks[0];
        assert_int_equal(b->csr.nnz, k * hubs);
        for (gnn_vid_t i = 0; i < hubs; i++) {
            memset(seen, 0, (size_t)d + 1);
            assert_int_equal(b->csr.indptr[i + 1] - b->csr.indptr[i], k);
            for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++) {
                gnn_vid_t off = b->src_ids[b->csr.indices[e]] - seeds[i];
                assert_true(off >= 1 && off <= d);
                assert_false(seen[off]);
                seen[off] = 1;
                count[off]++;
            }
        }
        gnn_minibatch_free(&mb);
    }
    free(seen);
    free(seeds);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/*
 * The Pearson statistic of `draws` draws of k of d neighbours, counted by
 * neighbour, against the uniform expectation E = draws * k / d, divided by
 * (1 - k/d) * d / (d - 1). The division is what makes it chi-square with
 * d - 1 degrees of freedom: one draw's indicator vector X has Var(X_i) =
 * p(1-p) (p = k/d) and, as its sum is fixed at k, covariance matrix
 * p(1-p) d/(d-1) (I - J/d) (rank d - 1); the plain statistic is that scale
 * times chi-square(d - 1) instead of the multinomial's chi-square(d - 1).
 */
static double star_statistic(gnn_vid_t d, int k, gnn_vid_t hubs, int calls)
{
    int64_t *count = calloc((size_t)d + 1, sizeof *count);
    assert_non_null(count);
    draw_stars(hubs, d, k, calls, count);
    double draws = (double)hubs * calls;
    double expect = draws * k / (double)d, x2 = 0;
    for (gnn_vid_t u = 1; u <= d; u++) x2 += (count[u] - expect) * (count[u] - expect) / expect;
    double p = (double)k / (double)d;
    free(count);
    return x2 / ((1 - p) * (double)d / (double)(d - 1));
}

static void test_uniform_neighbours(void **state)
{
    (void)state;
    double t50 = star_statistic(50, 5, 200, 100); /* scan path, 20000 draws, E = 2000 */
    printf("stars d=50 k=5: chi2 %.2f (df 49, critical %.3f at 0.001)\n", t50, CHI2_999_DF49);
    assert_true(t50 < CHI2_999_DF49);
    double t1000 = star_statistic(1000, 100, 20, 200); /* hash-set path, 4000 draws, E = 400 */
    printf("stars d=1000 k=100: chi2 %.2f (df 999, critical %.3f at 0.001)\n", t1000,
           CHI2_999_DF999);
    assert_true(t1000 < CHI2_999_DF999);
}

/* Every 3-subset of 6 neighbours equally likely: 20 cells, a plain
 * multinomial (one subset per draw), chi-square with 19 degrees of freedom. */
static void test_uniform_subsets(void **state)
{
    (void)state;
    gnn_csr_t g;
    const gnn_vid_t hubs = 400, d = 6;
    const int k = 3, calls = 20;
    stars(hubs, d, &g);
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 1, &k, &s), 0);
    int64_t count[64] = {0}; /* by bit mask of the chosen neighbour offsets */
    gnn_vid_t seeds[400];
    for (gnn_vid_t c = 0; c < hubs; c++) seeds[c] = c * (d + 1);
    for (int t = 0; t < calls; t++) {
        gnn_minibatch_t mb;
        assert_int_equal(gnn_sampler_sample(s, seeds, hubs, g_seed, (uint64_t)t, 7, &mb), 0);
        const gnn_block_t *b = &mb.blocks[0];
        for (gnn_vid_t i = 0; i < hubs; i++) {
            unsigned mask = 0;
            for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++)
                mask |= 1u << (b->src_ids[b->csr.indices[e]] - seeds[i] - 1);
            assert_int_equal(__builtin_popcount(mask), 3);
            count[mask]++;
        }
        gnn_minibatch_free(&mb);
    }
    double expect = (double)hubs * calls / 20.0, x2 = 0;
    int cells = 0;
    for (unsigned m = 0; m < 64; m++)
        if (__builtin_popcount(m) == 3) {
            cells++;
            x2 += (count[m] - expect) * (count[m] - expect) / expect;
        }
    assert_int_equal(cells, 20);
    printf("subsets 3 of 6: chi2 %.2f (df 19, critical %.3f at 0.001)\n", x2, CHI2_999_DF19);
    assert_true(x2 < CHI2_999_DF19);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* ---- Structure ----------------------------------------------------------------- */

static void test_all_when_small(void **state)
{
    (void)state;
    gnn_csr_t g;
    star_graph(5, &g);
    gnn_vid_t hub = 0;
    const int fanouts[][1] = {{5}, {6}, {100}, {-1}};
    for (int f = 0; f < 4; f++) {
        gnn_sampler_t *s;
        assert_int_equal(gnn_sampler_create(&g, 1, fanouts[f], &s), 0);
        gnn_minibatch_t mb;
        assert_int_equal(gnn_sampler_sample(s, &hub, 1, 1, 2, 3, &mb), 0);
        check_minibatch(&g, 1, fanouts[f], &hub, 1, &mb);
        assert_int_equal(mb.blocks[0].csr.nnz, 5);
        assert_int_equal(mb.n_input, 6);
        gnn_minibatch_free(&mb);
        gnn_sampler_free(s);
    }
    /* Leaves (no in-edges) give empty rows. */
    gnn_vid_t leaves[] = {3, 1};
    int two[] = {2, 2};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 2, two, &s), 0);
    gnn_minibatch_t mb;
    assert_int_equal(gnn_sampler_sample(s, leaves, 2, 1, 0, 0, &mb), 0);
    check_minibatch(&g, 2, two, leaves, 2, &mb);
    assert_int_equal(mb.edges_total, 0);
    assert_int_equal(mb.n_input, 2);
    gnn_minibatch_free(&mb);
    /* No seeds: empty blocks. */
    assert_int_equal(gnn_sampler_sample(s, NULL, 0, 1, 0, 0, &mb), 0);
    check_minibatch(&g, 2, two, NULL, 0, &mb);
    gnn_minibatch_free(&mb);
    gnn_minibatch_free(&mb); /* zeroed: a no-op */
    gnn_sampler_free(s);
    gnn_sampler_free(NULL);
    gnn_csr_free(&g);
}

static void test_multi_layer(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x1234;
    gnn_csr_t g;
    random_graph(&rng, 3000, 24000, 6, 700, &g);
    const int configs[][3] = {{5, 3, 2}, {10, 10, 10}, {-1, 2, 4}, {100, 70, -1}, {1, 1, 1}};
    const int64_t sizes[] = {1, 7, 64, 256};
    for (int c = 0; c < 5; c++)
        for (int layers = 1; layers <= 3; layers++) {
            gnn_sampler_t *s;
            assert_int_equal(gnn_sampler_create(&g, layers, configs[c], &s), 0);
            assert_int_equal(gnn_sampler_layers(s), layers);
            assert_int_equal(gnn_sampler_fanout(s, 0), configs[c][0]);
            for (int z = 0; z < 4; z++) {
                gnn_vid_t *seeds = random_ids(&rng, g.n_rows, sizes[z]);
                put_first(seeds, g.n_rows, 0); /* a hub */
                gnn_minibatch_t mb;
                assert_int_equal(gnn_sampler_sample(s, seeds, sizes[z], g_seed, 1, (uint64_t)z, &mb), 0);
                check_minibatch(&g, layers, configs[c], seeds, sizes[z], &mb);
                gnn_minibatch_free(&mb);
                free(seeds);
            }
            gnn_sampler_free(s);
        }
    gnn_csr_free(&g);
}

static void test_full_block(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x777;
    gnn_csr_t g;
    random_graph(&rng, 500, 4000, 3, 300, &g);
    gnn_vid_t *dst = random_ids(&rng, g.n_rows, 120);
    put_first(dst, g.n_rows, 7); /* a hub */
    gnn_block_t b;
    assert_int_equal(gnn_sampler_full_block(&g, dst, 120, &b), 0);
    assert_int_equal(gnn_csr_validate(&b.csr), 0);
    assert_int_equal(b.csr.n_rows, 120);
    assert_memory_equal(b.src_ids, dst, 120 * sizeof *dst);
    for (gnn_vid_t i = 0; i < 120; i++) {
        gnn_vid_t v = dst[i];
        gnn_eid_t d = g.indptr[v + 1] - g.indptr[v];
        assert_int_equal(b.csr.indptr[i + 1] - b.csr.indptr[i], d);
        gnn_vid_t row[1024];
        assert_true(d <= 1024);
        for (gnn_eid_t e = 0; e < d; e++) row[e] = b.src_ids[b.csr.indices[b.csr.indptr[i] + e]];
        qsort(row, (size_t)d, sizeof *row, cmp_vid);
        assert_memory_equal(row, g.indices + g.indptr[v], (size_t)d * sizeof *row);
    }
    gnn_block_free(&b);
    gnn_block_free(&b); /* zeroed: a no-op */
    /* Errors: repeated and out-of-range destinations. */
    gnn_vid_t bad1[] = {1, 2, 1}, bad2[] = {1, 500};
    assert_int_equal(gnn_sampler_full_block(&g, bad1, 3, &b), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "destination 1 is repeated"));
    assert_null(b.src_ids);
    assert_int_equal(gnn_sampler_full_block(&g, bad2, 2, &b), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "destination 500"));
    assert_int_equal(gnn_sampler_full_block(&g, NULL, 2, &b), GNN_EINVAL);
    assert_int_equal(gnn_sampler_full_block(&g, bad2, 0, &b), 0);
    assert_int_equal(b.csr.n_rows, 0);
    gnn_block_free(&b);
    free(dst);
    gnn_csr_free(&g);
}

/* ---- Reproducibility ---------------------------------------------------------- */

static void test_threads_identical(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0xABC;
    gnn_csr_t g;
    random_graph(&rng, 20000, 200000, 8, 3000, &g);
    int fanouts[] = {100, 10, 5}; /* 100 takes the hash-set path on the hubs */
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 3, fanouts, &s), 0);
    gnn_vid_t *seeds = random_ids(&rng, g.n_rows, 500);
    int saved = omp_get_max_threads();
    gnn_minibatch_t ref, mb;
    omp_set_num_threads(1);
    assert_int_equal(gnn_sampler_sample(s, seeds, 500, g_seed, 3, 4, &ref), 0);
    check_minibatch(&g, 3, fanouts, seeds, 500, &ref);
    printf("threads: %" PRId64 " input nodes, %" PRId64 " edges\n", ref.n_input, ref.edges_total);
    for (int t = 2; t <= 4; t *= 2) {
        omp_set_num_threads(t);
        assert_int_equal(gnn_sampler_sample(s, seeds, 500, g_seed, 3, 4, &mb), 0);
        assert_true(minibatch_equal(&ref, &mb));
        gnn_minibatch_free(&mb);
    }
    omp_set_num_threads(saved);

    /* Another batch, epoch or seed draws differently. */
    const uint64_t other[][3] = {{g_seed, 3, 5}, {g_seed, 4, 4}, {g_seed + 1, 3, 4}};
    for (int o = 0; o < 3; o++) {
        assert_int_equal(gnn_sampler_sample(s, seeds, 500, other[o][0], other[o][1], other[o][2], &mb), 0);
        assert_false(minibatch_equal(&ref, &mb));
        /* The node lists differ (local ids alone may coincide: new sources
         * are numbered in order of appearance; and hop 0 takes every
         * neighbour of most seeds with fanout 100). */
        gnn_vid_t n2 = ref.n_input < mb.n_input ? ref.n_input : mb.n_input;
        assert_true(memcmp(ref.nodes, mb.nodes, (size_t)n2 * sizeof *mb.nodes) != 0);
        gnn_minibatch_free(&mb);
    }

    /* Batches sampled concurrently from one sampler equal sequential ones. */
    enum { NB = 8 };
    gnn_minibatch_t seq[NB], par[NB];
    int rcs[NB];
    for (int b = 0; b < NB; b++)
        assert_int_equal(gnn_sampler_sample(s, seeds + 50 * b, 50, g_seed, 9, (uint64_t)b, &seq[b]), 0);
#pragma omp parallel for num_threads(4) schedule(static, 1)
    for (int b = 0; b < NB; b++)
        rcs[b] = gnn_sampler_sample(s, seeds + 50 * b, 50, g_seed, 9, (uint64_t)b, &par[b]);
    for (int b = 0; b < NB; b++) {
        assert_int_equal(rcs[b], 0);
        assert_true(minibatch_equal(&seq[b], &par[b]));
        gnn_minibatch_free(&seq[b]);
        gnn_minibatch_free(&par[b]);
    }
    gnn_minibatch_free(&ref);
    free(seeds);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* Local ids through the id map or through the array over the graph, rows
 * drawn in one pass or counted first: the same blocks, for a batch that
 * reaches much of the graph and one that reaches little of it; and a full
 * block with few destinations (the id map) holds each one's whole row. */
static void test_index_modes(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x1d3;
    gnn_csr_t g;
    random_graph(&rng, 20000, 200000, 8, 3000, &g);
    int fanouts[] = {100, 10, 5};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 3, fanouts, &s), 0);
    assert_int_equal(gnn__sampler_set_index(s, 3), GNN_EINVAL);
    gnn_vid_t *seeds = random_ids(&rng, g.n_rows, 500);
    const int64_t sizes[] = {500, 3};
    for (int k = 0; k < 2; k++) {
        /* every index, drawing in one pass or not (fanouts 10 and 5 are
         * within twice the mean degree, 100 is not) */
        gnn_minibatch_t mb[6];
        for (int mode = 0; mode < 6; mode++) {
            assert_int_equal(gnn__sampler_set_index(s, mode % 3), 0);
            assert_int_equal(gnn__sampler_set_one_pass(s, mode < 3), 0);
            assert_int_equal(gnn_sampler_sample(s, seeds, sizes[k], g_seed, 1, 2, &mb[mode]), 0);
        }
        check_minibatch(&g, 3, fanouts, seeds, sizes[k], &mb[1]);
        for (int mode = 1; mode < 6; mode++) assert_true(minibatch_equal(&mb[0], &mb[mode]));
        for (int mode = 0; mode < 6; mode++) gnn_minibatch_free(&mb[mode]);
        /* the same with excluded edges: a neighbour of each seed with one */
        gnn_vid_t pairs[2 * 500];
        int64_t np = 0;
        for (int64_t i = 0; i < sizes[k]; i++) {
            gnn_vid_t v = seeds[i];
            if (g.indptr[v + 1] == g.indptr[v]) continue;
            pairs[2 * np] = v;
            pairs[2 * np + 1] = g.indices[g.indptr[v] + (g.indptr[v + 1] - g.indptr[v]) / 2];
            np++;
        }
        for (int mode = 0; mode < 6; mode++) {
            assert_int_equal(gnn__sampler_set_index(s, mode % 3), 0);
            assert_int_equal(gnn__sampler_set_one_pass(s, mode < 3), 0);
            assert_int_equal(gnn_sampler_sample_excluding(s, seeds, sizes[k], pairs, np, g_seed,
                                                          1, 2, &mb[mode]),
                             0);
        }
        for (int mode = 1; mode < 6; mode++) assert_true(minibatch_equal(&mb[0], &mb[mode]));
        for (int mode = 0; mode < 6; mode++) gnn_minibatch_free(&mb[mode]);
    }
    gnn_block_t b;
    assert_int_equal(gnn_sampler_full_block(&g, seeds, 4, &b), 0);
    assert_int_equal(gnn_csr_validate(&b.csr), 0);
    for (gnn_vid_t i = 0; i < 4; i++) {
        gnn_vid_t v = seeds[i];
        gnn_eid_t d = g.indptr[v + 1] - g.indptr[v];
        assert_int_equal(b.csr.indptr[i + 1] - b.csr.indptr[i], d);
        gnn_vid_t *row = malloc(((size_t)d + 1) * sizeof *row);
        assert_non_null(row);
        for (gnn_eid_t e = 0; e < d; e++) row[e] = b.src_ids[b.csr.indices[b.csr.indptr[i] + e]];
        qsort(row, (size_t)d, sizeof *row, cmp_vid);
        assert_memory_equal(row, g.indices + g.indptr[v], (size_t)d * sizeof *row);
        free(row);
    }
    gnn_block_free(&b);
    free(seeds);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* The draws for node v at hop h do not depend on the rest of the frontier
 * or its order. */
static void test_frontier_independent(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x55;
    gnn_csr_t g;
    random_graph(&rng, 2000, 30000, 4, 400, &g);
    int fanouts[] = {6, 4};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 2, fanouts, &s), 0);
    gnn_vid_t *ids = random_ids(&rng, g.n_rows, 40);
    put_first(ids, g.n_rows, 0); /* a hub */
    gnn_vid_t a[40], b[20];
    memcpy(a, ids, sizeof a);
    for (int i = 0; i < 20; i++) b[i] = ids[39 - 2 * i]; /* half of them, reversed */
    gnn_minibatch_t ma, mbb;
    assert_int_equal(gnn_sampler_sample(s, a, 40, g_seed, 2, 2, &ma), 0);
    assert_int_equal(gnn_sampler_sample(s, b, 20, g_seed, 2, 2, &mbb), 0);
    gnn_vid_t ra[1024], rb[1024];
    int compared = 0;
    for (int l = 0; l < 2; l++)
        for (gnn_vid_t i = 0; i < mbb.blocks[l].csr.n_rows; i++) {
            gnn_vid_t v = mbb.blocks[l].src_ids[i];
            int64_t na = row_of(&ma, l, v, ra);
            if (na < 0) continue;
            int64_t nb = row_of(&mbb, l, v, rb);
            assert_int_equal(na, nb);
            assert_memory_equal(ra, rb, (size_t)na * sizeof *ra);
            compared++;
        }
    printf("frontier independence: %d rows compared\n", compared);
    assert_true(compared > 20);
    gnn_minibatch_free(&ma);
    gnn_minibatch_free(&mbb);
    free(ids);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* ---- Errors ------------------------------------------------------------------- */

static void test_errors(void **state)
{
    (void)state;
    gnn_csr_t g;
    star_graph(10, &g);
    gnn_sampler_t *s = (gnn_sampler_t *)(uintptr_t)1;
    int f[GNN_SAMPLER_MAX_LAYERS + 1];
    for (int i = 0; i <= GNN_SAMPLER_MAX_LAYERS; i++) f[i] = 2;
    int bad[] = {3, 0, 2};
    assert_int_equal(gnn_sampler_create(&g, 3, bad, &s), GNN_EINVAL);
    assert_null(s);
    assert_non_null(strstr(gnn_error_message(), "fanout 0 of hop 1"));
    bad[1] = -2;
    assert_int_equal(gnn_sampler_create(&g, 3, bad, &s), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "fanout -2"));
    assert_int_equal(gnn_sampler_create(&g, 0, f, &s), GNN_EINVAL);
    assert_int_equal(gnn_sampler_create(&g, GNN_SAMPLER_MAX_LAYERS + 1, f, &s), GNN_EINVAL);
    assert_int_equal(gnn_sampler_create(&g, 2, NULL, &s), GNN_EINVAL);
    assert_int_equal(gnn_sampler_create(NULL, 2, f, &s), GNN_EINVAL);
    assert_int_equal(gnn_sampler_create(&g, 2, f, NULL), GNN_EINVAL);
    gnn_csr_t rect = g;
    rect.n_cols = g.n_rows + 1;
    assert_int_equal(gnn_sampler_create(&rect, 2, f, &s), GNN_EINVAL);
    assert_int_equal(gnn_sampler_create(&g, GNN_SAMPLER_MAX_LAYERS, f, &s), 0);
    gnn_sampler_free(s);

    assert_int_equal(gnn_sampler_create(&g, 2, f, &s), 0);
    gnn_minibatch_t mb;
    gnn_vid_t dup[] = {0, 4, 5, 4}, out_hi[] = {0, 11}, out_lo[] = {-1};
    assert_int_equal(gnn_sampler_sample(s, dup, 4, 1, 0, 0, &mb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "seed 4 is repeated (positions 1 and 3)"));
    assert_null(mb.nodes);
    assert_int_equal(mb.layers, 0);
    assert_int_equal(gnn_sampler_sample(s, out_hi, 2, 1, 0, 0, &mb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "seed 11 at position 1"));
    assert_int_equal(gnn_sampler_sample(s, out_lo, 1, 1, 0, 0, &mb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "seed -1"));
    assert_int_equal(gnn_sampler_sample(s, out_lo, -1, 1, 0, 0, &mb), GNN_EINVAL);
    assert_int_equal(gnn_sampler_sample(s, NULL, 3, 1, 0, 0, &mb), GNN_EINVAL);
    assert_int_equal(gnn_sampler_sample(NULL, dup, 1, 1, 0, 0, &mb), GNN_EINVAL);
    assert_int_equal(gnn_sampler_sample(s, dup, 1, 1, 0, 0, NULL), GNN_EINVAL);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* Every allocation made to fail in turn: a clean GNN_ENOMEM, the output
 * zeroed, nothing leaked; then the call succeeds. */
static void test_alloc_failure(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x99;
    gnn_csr_t g;
    random_graph(&rng, 1500, 9000, 3, 400, &g);
    int fanouts[] = {80, 5, 3}; /* 80 > the scan limit on hubs: the set is allocated */
    gnn_vid_t seeds[] = {0, 7, 14, 100, 200, 300, 401, 502};
    int failed_create = 0, failed_sample = 0, failed_full = 0, rc;
    gnn_sampler_t *s = NULL;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        rc = gnn_sampler_create(&g, 3, fanouts, &s);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(s);
        failed_create++;
    }
    gnn_minibatch_t ref, mb;
    assert_int_equal(gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &ref), 0);
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 1000);
        gnn_alloc_fail_at(nth);
        rc = gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &mb);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_int_equal(gnn_error_code(), GNN_ENOMEM);
        assert_null(mb.nodes);
        assert_int_equal(mb.layers, 0);
        assert_null(mb.blocks[0].csr.indptr);
        failed_sample++;
    }
    assert_true(minibatch_equal(&ref, &mb));
    gnn_minibatch_free(&mb);
    gnn_minibatch_free(&ref);
    gnn_block_t b;
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 100);
        gnn_alloc_fail_at(nth);
        rc = gnn_sampler_full_block(&g, seeds, 8, &b);
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (rc == 0) {
            assert_false(failed);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(b.src_ids);
        failed_full++;
    }
    gnn_block_free(&b);
    printf("allocation failures: create %d, sample %d, full block %d\n", failed_create,
           failed_sample, failed_full);
    assert_true(failed_create >= 1);
    assert_true(failed_sample >= 8); /* map, nodes, 3 x (indptr, indices), the set */
    assert_true(failed_full >= 4);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* ---- Rows held elsewhere ------------------------------------------------------- */

/* A stand-in for the holders of the rows a part lacks: draws from the
 * whole graph as gnn_sampler_draw_row does (per relation with
 * gnn_sampler_draw_row_typed when a typed sampler asks), and logs every
 * call. */
typedef struct {
    const gnn_csr_t *whole;
    const int32_t *etype; /* the whole graph's relations (typed) */
    int n_calls;
    int typed_calls;      /* calls that asked for relations */
    int hop[16];
    int64_t n[16]; /* n < 0: a failure passed on */
    int rc[16];    /* what the hook returned */
} holder_t;

static int holder_draw(void *ctx, int h, int fanout, uint64_t key, const gnn_vid_t *v, int64_t n,
                       gnn_eid_t *cnt, gnn_vid_t **src, int32_t **rel)
{
    holder_t *ho = ctx;
    int i = ho->n_calls++;
    assert_true(i < 16);
    ho->hop[i] = h;
    ho->n[i] = n;
    ho->rc[i] = n < 0 ? (int)n : 0;
    ho->typed_calls += rel != NULL;
    assert_true(!rel || ho->etype); /* relations asked of a typed graph only */
    if (n < 0) return (int)n;
    const gnn_csr_t *g = ho->whole;
    gnn_eid_t total = 0;
    for (int64_t k = 0; k < n; k++) {
        gnn_eid_t a = g->indptr[v[k]], d = g->indptr[v[k] + 1] - a;
        total += rel ? gnn_sampler_typed_count(ho->etype + a, d, fanout)
                     : fanout < 0 || d <= fanout ? d : fanout;
    }
    *src = gnn_malloc_array((size_t)total + 1, sizeof **src);
    if (rel) *rel = gnn_malloc_array((size_t)total + 1, sizeof **rel);
    if (!*src || (rel && !*rel)) {
        gnn_free(*src);
        *src = NULL;
        if (rel) {
            gnn_free(*rel);
            *rel = NULL;
        }
        return ho->rc[i] = GNN_ENOMEM;
    }
    gnn_eid_t at = 0;
    for (int64_t k = 0; k < n; k++) {
        gnn_eid_t a = g->indptr[v[k]], d = g->indptr[v[k] + 1] - a;
        int64_t c = rel ? gnn_sampler_draw_row_typed(g->indices + a, ho->etype + a, d, fanout, key,
                                                     v[k], h, *src + at, *rel + at)
                        : gnn_sampler_draw_row(g->indices + a, d, fanout, key, v[k], h,
                                               *src + at);
        if (c < 0) {
            gnn_free(*src);
            *src = NULL;
            if (rel) {
                gnn_free(*rel);
                *rel = NULL;
            }
            return ho->rc[i] = (int)c;
        }
        cnt[k] = c;
        at += c;
    }
    return 0;
}

/*
 * A part holding rows [0, 600) of a 1500-node graph, the rest drawn by a
 * holder through the hook: the batches equal the whole graph's, with the
 * hook called once per hop from first_hop on (0 and 1). Seeds beyond the
 * held rows fail with GNN_EINVAL before the first exchange and pass the
 * failure to the hook there. Under every allocation failure, the hook's
 * calls stay in step: consecutive hops from first_hop, and a failure of
 * the sampler (not the hook's) passed on at the next exchange when one is
 * left (the last hop's exchange done: nothing to pass it to).
 */
static void test_remote_rows(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x7e;
    gnn_csr_t g, part;
    random_graph(&rng, 1500, 9000, 3, 400, &g);
    const gnn_vid_t held = 600;
    assert_int_equal(gnn_csr_copy(&g, &part), 0);
    for (gnn_vid_t v = held; v < part.n_rows; v++) part.indptr[v + 1] = part.indptr[held];
    part.nnz = part.indptr[part.n_rows];
    int fanouts[] = {80, 5, 3};
    gnn_vid_t seeds[] = {0, 7, 14, 100, 200, 300, 401, 502};
    gnn_sampler_t *s, *ref;
    assert_int_equal(gnn_sampler_create(&g, 3, fanouts, &ref), 0);
    gnn_minibatch_t want, mb;
    assert_int_equal(gnn_sampler_sample(ref, seeds, 8, 5, 6, 7, &want), 0);
    holder_t ho = {.whole = &g};
    for (int first = 0; first <= 1; first++) {
        gnn_sampler_remote_t r = {.n_held = held, .first_hop = first, .draw = holder_draw,
                                  .ctx = &ho};
        assert_int_equal(gnn_sampler_create(&part, 3, fanouts, &s), 0);
        assert_int_equal(gnn_sampler_set_remote(s, &r), 0);
        ho.n_calls = 0;
        assert_int_equal(gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &mb), 0);
        assert_true(minibatch_equal(&want, &mb));
        gnn_minibatch_free(&mb);
        assert_int_equal(ho.n_calls, 3 - first);
        for (int i = 0; i < ho.n_calls; i++) assert_int_equal(ho.hop[i], first + i);

        gnn_vid_t far[] = {0, held + 3};
        ho.n_calls = 0;
        int rc = gnn_sampler_sample(s, far, 2, 5, 6, 7, &mb);
        if (first == 1) {
            assert_int_equal(rc, GNN_EINVAL);
            assert_non_null(strstr(gnn_error_message(), "not held here"));
            assert_int_equal(ho.n_calls, 1); /* the failure, at hop 1 */
            assert_true(ho.hop[0] == 1 && ho.n[0] == GNN_EINVAL);
        } else { /* from hop 0 on, the holder draws a seed's row too */
            assert_int_equal(rc, 0);
            gnn_minibatch_t w2;
            assert_int_equal(gnn_sampler_sample(ref, far, 2, 5, 6, 7, &w2), 0);
            assert_true(minibatch_equal(&w2, &mb));
            gnn_minibatch_free(&w2);
            gnn_minibatch_free(&mb);
        }

        int failures = 0, passed_on = 0, after_last = 0, in_hook = 0;
        for (int64_t nth = 1;; nth++) {
            assert_true(nth < 1000);
            ho.n_calls = 0;
            gnn_alloc_fail_at(nth);
            rc = gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &mb);
            gnn_alloc_fail_at(0);
            for (int i = 0; i < ho.n_calls; i++) {
                assert_int_equal(ho.hop[i], first + i); /* in step: consecutive hops */
                if (i + 1 < ho.n_calls) assert_true(ho.n[i] >= 0 && ho.rc[i] == 0);
            }
            if (rc == 0) {
                assert_true(minibatch_equal(&want, &mb));
                assert_int_equal(ho.n_calls, 3 - first);
                gnn_minibatch_free(&mb);
                break;
            }
            assert_int_equal(rc, GNN_ENOMEM);
            assert_null(mb.nodes);
            failures++;
            int last = ho.n_calls - 1;
            if (last >= 0 && ho.n[last] < 0) {
                assert_int_equal(ho.n[last], GNN_ENOMEM);
                passed_on++;
            } else if (last >= 0 && ho.rc[last] < 0) {
                in_hook++;
            } else { /* only after the last exchange may the sampler fail alone */
                assert_int_equal(ho.n_calls, 3 - first);
                after_last++;
            }
        }
        printf("remote rows from hop %d: %d allocation failures: %d passed on to the hook, %d in "
               "it, %d after the last exchange\n",
               first, failures, passed_on, in_hook, after_last);
        assert_true(passed_on >= 3 && in_hook >= 1 && after_last >= 1);
        gnn_sampler_free(s);
    }
    gnn_minibatch_free(&want);
    gnn_sampler_free(ref);
    gnn_csr_free(&part);
    gnn_csr_free(&g);
}

/* ---- Typed draws ---------------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The relation (of R) of the edge u -> v: a hash of the pair. */
static int32_t rel_of(gnn_vid_t u, gnn_vid_t v, int R)
{
    uint64_t h = (uint64_t)u * 0x9E3779B97F4A7C15ull ^ (uint64_t)v * 0xC2B2AE3D27D4EB4Full;
    return (int32_t)((h >> 40) % (uint64_t)R);
}

/* g with relations: *out its copy with every row grouped by (relation,
 * source), *etype the relation of each entry. */
static void typed_copy(const gnn_csr_t *g, int R, gnn_csr_t *out, int32_t **etype)
{
    assert_int_equal(gnn_csr_copy(g, out), 0);
    int32_t *et = malloc(((size_t)g->nnz + 1) * sizeof *et);
    uint64_t *k = malloc(((size_t)g->nnz + 1) * sizeof *k);
    assert_true(et && k);
    for (gnn_vid_t v = 0; v < g->n_rows; v++) {
        gnn_eid_t a = g->indptr[v], n = g->indptr[v + 1] - a;
        for (gnn_eid_t e = 0; e < n; e++)
            k[e] = (uint64_t)rel_of(g->indices[a + e], v, R) << 40 | (uint64_t)g->indices[a + e];
        qsort(k, (size_t)n, sizeof *k, cmp_u64);
        for (gnn_eid_t e = 0; e < n; e++) {
            out->indices[a + e] = (gnn_vid_t)(k[e] & ((1ull << 40) - 1));
            et[a + e] = (int32_t)(k[e] >> 40);
        }
    }
    out->flags &= ~(unsigned)GNN_CSR_SORTED;
    free(k);
    *etype = et;
}

static int typed_equal(const gnn_minibatch_t *a, const gnn_minibatch_t *b)
{
    if (!minibatch_equal(a, b)) return 0;
    for (int l = 0; l < a->layers; l++)
        if (!a->blocks[l].etype || !b->blocks[l].etype ||
            memcmp(a->blocks[l].etype, b->blocks[l].etype,
                   (size_t)a->blocks[l].csr.nnz * sizeof *a->blocks[l].etype))
            return 0;
    return 1;
}

/*
 * Typed draws (gnn_sampler_set_relations) on a graph with hubs, 4
 * relations: every block row holds, per relation, min(the node's
 * in-edges of that relation, the hop's fanout) distinct in-edges of that
 * relation, sorted by (source, relation). A part holding rows [0, 600),
 * the rest drawn through the hook per relation
 * (gnn_sampler_draw_row_typed), gives the whole graph's batches with
 * their relations, drawing anew and sampling once, from hop 0 (a seed
 * beyond the part) and hop 1; the hook is asked for relations at every
 * hop. Under every allocation failure the hook's calls stay in step and
 * a success is the whole graph's batch. Typed draws leaving edges out
 * equal the typed draws of the graph without them; a row held elsewhere
 * with excluded sources fails the batch when its holder cannot leave
 * them out.
 */
static void test_typed_remote_rows(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x7f;
    const int R = 4;
    gnn_csr_t g, gt, part;
    int32_t *et;
    random_graph(&rng, 1500, 9000, 3, 800, &g);
    typed_copy(&g, R, &gt, &et);
    const gnn_vid_t held = 600;
    assert_int_equal(gnn_csr_copy(&gt, &part), 0);
    for (gnn_vid_t v = held; v < part.n_rows; v++) part.indptr[v + 1] = part.indptr[held];
    part.nnz = part.indptr[part.n_rows];
    int fanouts[] = {80, 5, 3};
    gnn_vid_t seeds[] = {0, 7, 14, 100, 200, 300, 401, 502}, far[] = {0, held + 3, 7};
    holder_t ho = {.whole = &gt, .etype = et};
    for (int once = 0; once <= 1; once++) {
        gnn_sampler_t *ref, *s;
        gnn_minibatch_t want, want_far, mb;
        assert_int_equal(gnn_sampler_create(&gt, 3, fanouts, &ref), 0);
        assert_int_equal(gnn_sampler_set_relations(ref, et, R), 0);
        assert_int_equal(gnn_sampler_set_once(ref, once), 0);
        assert_int_equal(gnn_sampler_sample(ref, seeds, 8, 5, 6, 7, &want), 0);
        assert_int_equal(gnn_sampler_sample(ref, far, 3, 5, 6, 7, &want_far), 0);
        /* The draws themselves, per relation. */
        for (int l = 0; l < 3; l++) {
            const gnn_block_t *b = &want.blocks[l];
            int fanout = fanouts[2 - l];
            assert_non_null(b->etype);
            for (gnn_vid_t i = 0; i < b->csr.n_rows; i++) {
                gnn_vid_t v = b->src_ids[i];
                gnn_eid_t per[4] = {0}, whole[4] = {0};
                for (gnn_eid_t e = g.indptr[v]; e < g.indptr[v + 1]; e++)
                    whole[rel_of(g.indices[e], v, R)]++;
                for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++) {
                    gnn_vid_t u = b->src_ids[b->csr.indices[e]];
                    assert_true(has_edge(&g, u, v));
                    assert_int_equal(b->etype[e], rel_of(u, v, R));
                    per[b->etype[e]]++;
                    if (e > b->csr.indptr[i]) /* sorted by (source, relation), no repeat */
                        assert_true(b->csr.indices[e - 1] < b->csr.indices[e] ||
                                    (b->csr.indices[e - 1] == b->csr.indices[e] &&
                                     b->etype[e - 1] < b->etype[e]));
                }
                if (once && l < 2) continue; /* a kept row was drawn at an earlier hop */
                for (int r = 0; r < R; r++)
                    assert_int_equal(per[r], whole[r] <= fanout ? whole[r] : fanout);
            }
        }
        for (int first = 0; first <= 1; first++) {
            gnn_sampler_remote_t r = {.n_held = held, .first_hop = first, .draw = holder_draw,
                                      .ctx = &ho};
            assert_int_equal(gnn_sampler_create(&part, 3, fanouts, &s), 0);
            assert_int_equal(gnn_sampler_set_relations(s, et, R), 0);
            assert_int_equal(gnn_sampler_set_once(s, once), 0);
            assert_int_equal(gnn_sampler_set_remote(s, &r), 0);
            ho.n_calls = ho.typed_calls = 0;
            assert_int_equal(gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &mb), 0);
            assert_true(typed_equal(&want, &mb));
            gnn_minibatch_free(&mb);
            assert_int_equal(ho.n_calls, 3 - first);
            assert_int_equal(ho.typed_calls, 3 - first);
            if (first == 0) { /* the holder draws a seed's row too */
                assert_int_equal(gnn_sampler_sample(s, far, 3, 5, 6, 7, &mb), 0);
                assert_true(typed_equal(&want_far, &mb));
                gnn_minibatch_free(&mb);
            }
            int failures = 0, passed_on = 0;
            for (int64_t nth = 1;; nth++) {
                assert_true(nth < 1000);
                ho.n_calls = 0;
                gnn_alloc_fail_at(nth);
                int rc = gnn_sampler_sample(s, seeds, 8, 5, 6, 7, &mb);
                gnn_alloc_fail_at(0);
                for (int i = 0; i < ho.n_calls; i++) assert_int_equal(ho.hop[i], first + i);
                if (rc == 0) {
                    assert_true(typed_equal(&want, &mb));
                    gnn_minibatch_free(&mb);
                    break;
                }
                assert_int_equal(rc, GNN_ENOMEM);
                assert_null(mb.nodes);
                failures++;
                passed_on += ho.n_calls > 0 && ho.n[ho.n_calls - 1] == GNN_ENOMEM;
            }
            printf("typed remote rows from hop %d%s: %d allocation failures, %d passed on to the "
                   "hook\n",
                   first, once ? ", sampling once" : "", failures, passed_on);
            assert_true(failures >= 8 && passed_on >= 2);
            gnn_sampler_free(s);
        }
        gnn_minibatch_free(&want);
        gnn_minibatch_free(&want_far);
        gnn_sampler_free(ref);
    }
    /* Typed draws with excluded edges: the batch of the graph without
     * them (both directions), relations included; held elsewhere, a row
     * with excluded sources fails the batch unless its holder leaves
     * them out. */
    gnn_vid_t ex[10]; /* an in-edge of each of 5 seeds (hubs among them) */
    const int64_t n_ex = 5;
    for (int64_t k = 0; k < n_ex; k++) {
        gnn_vid_t v = seeds[k];
        assert_true(gt.indptr[v + 1] > gt.indptr[v]);
        ex[2 * k] = gt.indices[gt.indptr[v] + (gt.indptr[v + 1] - gt.indptr[v]) / 2];
        ex[2 * k + 1] = v;
    }
    gnn_csr_t gx;
    int32_t *etx = malloc(((size_t)gt.nnz + 1) * sizeof *etx);
    assert_non_null(etx);
    assert_int_equal(gnn_csr_copy(&gt, &gx), 0);
    gnn_eid_t at = 0, gone = 0;
    for (gnn_vid_t v = 0; v < gt.n_rows; v++) {
        gnn_eid_t a = gt.indptr[v];
        gx.indptr[v] = at;
        for (gnn_eid_t e = a; e < gt.indptr[v + 1]; e++) {
            gnn_vid_t u = gt.indices[e];
            int drop = 0;
            for (int64_t k = 0; k < n_ex; k++)
                drop |= (ex[2 * k] == u && ex[2 * k + 1] == v) ||
                        (ex[2 * k] == v && ex[2 * k + 1] == u);
            gone += drop;
            if (drop) continue;
            gx.indices[at] = u;
            etx[at++] = et[e];
        }
    }
    gx.indptr[gt.n_rows] = at;
    gx.nnz = at;
    assert_true(gone >= n_ex);
    gnn_sampler_t *s, *sx;
    gnn_minibatch_t mb, mx;
    assert_int_equal(gnn_sampler_create(&gt, 3, fanouts, &s), 0);
    assert_int_equal(gnn_sampler_set_relations(s, et, R), 0);
    assert_int_equal(gnn_sampler_create(&gx, 3, fanouts, &sx), 0);
    assert_int_equal(gnn_sampler_set_relations(sx, etx, R), 0);
    assert_int_equal(gnn_sampler_sample_excluding(s, seeds, 8, ex, n_ex, 5, 6, 7, &mb), 0);
    assert_int_equal(gnn_sampler_sample(sx, seeds, 8, 5, 6, 7, &mx), 0);
    assert_true(typed_equal(&mx, &mb));
    gnn_minibatch_free(&mb);
    gnn_minibatch_free(&mx);
    gnn_sampler_free(sx);
    gnn_sampler_free(s);
    gnn_sampler_remote_t r = {.n_held = held, .first_hop = 0, .draw = holder_draw, .ctx = &ho};
    assert_int_equal(gnn_sampler_create(&part, 3, fanouts, &s), 0);
    assert_int_equal(gnn_sampler_set_relations(s, et, R), 0);
    assert_int_equal(gnn_sampler_set_remote(s, &r), 0);
    gnn_vid_t ex_far[] = {0, held + 3};
    ho.n_calls = 0;
    assert_int_equal(gnn_sampler_sample_excluding(s, far, 3, ex_far, 1, 5, 6, 7, &mb),
                     GNN_EUNSUPPORTED);
    assert_non_null(strstr(gnn_error_message(), "excluded edges whose row is held elsewhere"));
    gnn_sampler_free(s);
    gnn_csr_free(&gx);
    free(etx);
    free(et);
    gnn_csr_free(&part);
    gnn_csr_free(&gt);
    gnn_csr_free(&g);
}

/* ---- Scale ---------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_vid_test(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* The global ids of the sources of row i of block b of mb, sorted. */
static gnn_vid_t *row_sources(const gnn_minibatch_t *mb, int l, gnn_vid_t i, gnn_eid_t *n)
{
    const gnn_csr_t *a = &mb->blocks[l].csr;
    *n = a->indptr[i + 1] - a->indptr[i];
    gnn_vid_t *o = malloc((size_t)(*n + 1) * sizeof *o);
    assert_non_null(o);
    for (gnn_eid_t k = 0; k < *n; k++) o[k] = mb->nodes[a->indices[a->indptr[i] + k]];
    gnn_draw_sort_ids(o, *n);
    return o;
}

/*
 * Sampling once (gnn_sampler_set_once): on graphs with hubs and empty
 * rows, fanouts with -1 and 1, 1 to 3 layers: blocks chain and validate;
 * every block's rows for the previous hop's destinations are that hop's
 * rows as they are; each row of node v holds the sources the usual
 * sampler draws for v at the hop that first made v a destination (same
 * key, hop and fanout), so only the nodes new at a hop draw there, and the
 * batch is within the usual one's nodes; the same for 1 and 4 threads
 * and with rows held elsewhere (a holder drawing them from the first hop
 * on); leaving an edge batch's edges out, the same against the usual
 * sampler leaving them out, and none in any block. Off, the sampler
 * draws as before.
 */
static void test_sample_once(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x6f6e6365;
    gnn_csr_t g, part;
    random_graph(&rng, 3000, 24000, 6, 700, &g);
    const gnn_vid_t held = 1200;
    assert_int_equal(gnn_csr_copy(&g, &part), 0);
    for (gnn_vid_t v = held; v < part.n_rows; v++) part.indptr[v + 1] = part.indptr[held];
    part.nnz = part.indptr[part.n_rows];
    gnn_vid_t *where = malloc((size_t)g.n_rows * sizeof *where);
    assert_non_null(where);
    const int configs[][3] = {{5, 3, 2}, {10, 10, 10}, {-1, 2, 4}, {100, 70, -1}, {1, 1, 1}};
    for (int c = 0; c < 10; c++)
        for (int L = 1; L <= 3; L++) {
            /* c >= 5: the same fanouts leaving excluded edges out */
            const int ex = c >= 5;
            const int *fan = configs[c % 5];
            gnn_sampler_t *once, *plain, *remote;
            assert_int_equal(gnn_sampler_create(&g, L, fan, &once), 0);
            assert_int_equal(gnn_sampler_create(&g, L, fan, &plain), 0);
            assert_int_equal(gnn_sampler_set_once(once, 1), 0);
            holder_t ho = {.whole = &g};
            gnn_sampler_remote_t r = {.n_held = held, .first_hop = 0, .draw = holder_draw,
                                      .ctx = &ho};
            assert_int_equal(gnn_sampler_create(&part, L, fan, &remote), 0);
            assert_int_equal(gnn_sampler_set_remote(remote, &r), 0);
            assert_int_equal(gnn_sampler_set_once(remote, 1), 0);
            gnn_vid_t *seeds = random_ids(&rng, g.n_rows, 40);
            put_first(seeds, g.n_rows, 0); /* a hub */
            /* excluded: each seed's edges to its first two in-neighbours */
            gnn_vid_t excl[160];
            int64_t nx = 0;
            for (int q = 0; ex && q < 40; q++)
                for (gnn_eid_t e = g.indptr[seeds[q]]; e < g.indptr[seeds[q] + 1] &&
                                                       e < g.indptr[seeds[q]] + 2;
                     e++) {
                    excl[2 * nx] = g.indices[e];
                    excl[2 * nx + 1] = seeds[q];
                    nx++;
                }
            gnn_minibatch_t mb, ref, mb4, mbr;
            const uint64_t bt = (uint64_t)c;
            assert_int_equal(
                gnn_sampler_sample_excluding(once, seeds, 40, excl, nx, g_seed, 2, bt, &mb), 0);
            assert_int_equal(
                gnn_sampler_sample_excluding(plain, seeds, 40, excl, nx, g_seed, 2, bt, &ref), 0);
            int saved = omp_get_max_threads();
            omp_set_num_threads(4);
            assert_int_equal(
                gnn_sampler_sample_excluding(once, seeds, 40, excl, nx, g_seed, 2, bt, &mb4), 0);
            omp_set_num_threads(1);
            if (!ex) /* the holder here knows no exclusions */
                assert_int_equal(gnn_sampler_sample(remote, seeds, 40, g_seed, 2, bt, &mbr), 0);
            omp_set_num_threads(saved);
            assert_true(minibatch_equal(&mb, &mb4));
            if (!ex) assert_true(minibatch_equal(&mb, &mbr));
            for (int64_t q = 0; q < nx; q++) /* no excluded edge in any block */
                for (int l = 0; l < L; l++) {
                    const gnn_csr_t *a = &mb.blocks[l].csr;
                    for (gnn_vid_t i = 0; i < a->n_rows; i++)
                        for (gnn_eid_t e = a->indptr[i]; e < a->indptr[i + 1]; e++) {
                            const gnn_vid_t u = mb.nodes[a->indices[e]], v = mb.nodes[i];
                            assert_false((u == excl[2 * q] && v == excl[2 * q + 1]) ||
                                         (v == excl[2 * q] && u == excl[2 * q + 1]));
                        }
                }
            assert_true(mb.n_input <= ref.n_input);
            for (gnn_vid_t v = 0; v < g.n_rows; v++) where[v] = -1;
            for (gnn_vid_t i = 0; i < ref.n_input; i++) where[ref.nodes[i]] = i;
            for (int l = L - 1; l >= 0; l--) {
                const gnn_csr_t *a = &mb.blocks[l].csr;
                assert_int_equal(gnn_csr_validate(a), 0);
                if (l < L - 1) {
                    const gnn_csr_t *p = &mb.blocks[l + 1].csr;
                    assert_int_equal(a->n_rows, p->n_cols);
                    for (gnn_vid_t i = 0; i <= p->n_rows; i++)
                        assert_int_equal(a->indptr[i], p->indptr[i]);
                    assert_memory_equal(a->indices, p->indices,
                                        (size_t)p->nnz * sizeof *a->indices);
                } else {
                    assert_int_equal(a->n_rows, 40);
                }
                for (gnn_vid_t i = 0; i < a->n_rows; i++) {
                    int hf = 0; /* the hop whose destinations first hold row i */
                    while (mb.blocks[L - 1 - hf].csr.n_rows <= i) hf++;
                    const int lf = L - 1 - hf;
                    const gnn_vid_t v = mb.nodes[i], j = where[v];
                    assert_true(j >= 0 && j < ref.blocks[lf].csr.n_rows);
                    gnn_eid_t n1, n2;
                    gnn_vid_t *x = row_sources(&mb, l, i, &n1), *y = row_sources(&ref, lf, j, &n2);
                    if (n1 != n2 || memcmp(x, y, (size_t)n1 * sizeof *x))
                        fail_msg("fanouts #%d, %d layers: block %d row %" GNN_PRIvid
                                 " (node %" GNN_PRIvid ", first a destination at hop %d) is not "
                                 "the usual draw of that hop (seed %" PRIu64 ")",
                                 c, L, l, i, v, hf, g_seed);
                    free(x), free(y);
                }
            }
            gnn_minibatch_free(&mb), gnn_minibatch_free(&ref), gnn_minibatch_free(&mb4);
            if (!ex) gnn_minibatch_free(&mbr);
            /* off again: the usual batch */
            assert_int_equal(gnn_sampler_set_once(once, 0), 0);
            assert_int_equal(gnn_sampler_sample(once, seeds, 40, g_seed, 2, (uint64_t)c, &mb), 0);
            assert_int_equal(gnn_sampler_sample(plain, seeds, 40, g_seed, 2, (uint64_t)c, &ref), 0);
            assert_true(minibatch_equal(&mb, &ref));
            gnn_minibatch_free(&mb), gnn_minibatch_free(&ref);
            free(seeds);
            gnn_sampler_free(once), gnn_sampler_free(plain), gnn_sampler_free(remote);
        }
    assert_int_equal(gnn_sampler_set_once(NULL, 1), GNN_EINVAL);
    free(where);
    gnn_csr_free(&g);
    gnn_csr_free(&part);
}

/* The sampler's row sort (gnn__sampler_sort_ids): against qsort for every
 * length around the vector network's 16 lanes, with repeated ids, ids up
 * to INT32_MAX (the network's padding value) and ids past it (scalar). */
static void test_sort_ids(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0x50e7;
    const gnn_vid_t maxes[] = {3, 1000, INT32_MAX, (gnn_vid_t)1 << 40};
    gnn_vid_t a[40] = {0}, want[40];
    for (size_t mi = 0; mi < sizeof maxes / sizeof maxes[0]; mi++)
        for (gnn_eid_t n = 0; n <= 40; n++)
            for (int rep = 0; rep < 20; rep++) {
                gnn_vid_t max = maxes[mi];
                for (gnn_eid_t q = 0; q < n; q++) {
                    a[q] = (gnn_vid_t)(tu_rng_next(&rng) % ((uint64_t)max + 1));
                    if (rep == 1) a[q] = max - q % 3 < 0 ? 0 : max - q % 3; /* near the top */
                }
                memcpy(want, a, (size_t)n * sizeof *a);
                qsort(want, (size_t)n, sizeof *want, cmp_vid_test);
                gnn_vid_t guard = a[n < 40 ? n : 39];
                gnn__sampler_sort_ids(a, n, max);
                assert_memory_equal(a, want, (size_t)n * sizeof *a);
                if (n < 40) assert_int_equal(a[n], guard); /* nothing written past n */
            }
}

/* ---- Excluded edges ----------------------------------------------------------- */

/* Is u -> v (or v -> u) among the n excluded pairs? */
static int excluded(const gnn_vid_t *x, int64_t n, gnn_vid_t u, gnn_vid_t v)
{
    for (int64_t i = 0; i < n; i++)
        if ((x[2 * i] == u && x[2 * i + 1] == v) || (x[2 * i] == v && x[2 * i + 1] == u)) return 1;
    return 0;
}

/*
 * An edge batch's positives left out: on a symmetric random graph, the
 * seeds are the ends of 40 of its edges and those edges are excluded. No
 * block of 1-3 hops holds an excluded edge in either direction, every edge
 * is the graph's, a seed row with no excluded source draws exactly what
 * the plain sampler draws, one with excluded sources takes min(fanout,
 * what is left) of what is left (all of it under -1), and the draws are
 * the same for 1 and 4 threads.
 */
static void test_excluded_edges(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0xE4C1;
    const gnn_vid_t n = 600;
    const gnn_eid_t m = 3000;
    gnn_vid_t *src = malloc(2 * (size_t)m * sizeof *src), *dst = malloc(2 * (size_t)m * sizeof *dst);
    assert_true(src && dst);
    for (gnn_eid_t e = 0; e < m; e++) {
        src[2 * e] = dst[2 * e + 1] = rng_below(&rng, n);
        dst[2 * e] = src[2 * e + 1] = rng_below(&rng, 60); /* hubs among 0..59 */
    }
    gnn_csr_t g;
    build(n, 2 * m, src, dst, &g);
    free(src);
    free(dst);
    const int64_t ne = 40;
    gnn_vid_t excl[2 * 40], seeds[2 * 40];
    int64_t ns = 0;
    for (int64_t i = 0; i < ne; i++) { /* random edges of the graph */
        gnn_vid_t v;
        do v = rng_below(&rng, n);
        while (g.indptr[v + 1] == g.indptr[v]);
        gnn_vid_t u = g.indices[g.indptr[v] + rng_below(&rng, g.indptr[v + 1] - g.indptr[v])];
        excl[2 * i] = u;
        excl[2 * i + 1] = v;
        for (int k = 0; k < 2; k++) {
            gnn_vid_t x = excl[2 * i + k];
            int seen = 0;
            for (int64_t q = 0; q < ns; q++) seen |= seeds[q] == x;
            if (!seen) seeds[ns++] = x;
        }
    }
    const int configs[][3] = {{4, 3, 2}, {-1, -1, -1}, {10, -1, 3}, {1, 1, 1}};
    for (int c = 0; c < 4; c++)
        for (int layers = 1; layers <= 3; layers++) {
            gnn_sampler_t *s;
            assert_int_equal(gnn_sampler_create(&g, layers, configs[c], &s), 0);
            gnn_minibatch_t mb, plain, mb4;
            assert_int_equal(gnn_sampler_sample_excluding(s, seeds, ns, excl, ne, g_seed, 2, 5, &mb),
                             0);
            assert_int_equal(gnn_sampler_sample(s, seeds, ns, g_seed, 2, 5, &plain), 0);
            omp_set_num_threads(4);
            assert_int_equal(
                gnn_sampler_sample_excluding(s, seeds, ns, excl, ne, g_seed, 2, 5, &mb4), 0);
            omp_set_num_threads(1);
            assert_int_equal(mb.n_input, mb4.n_input);
            assert_memory_equal(mb.nodes, mb4.nodes, (size_t)mb.n_input * sizeof *mb.nodes);
            /* Rows not flagged sorted are scanned for their excluded entries
             * instead of searched: the same batch. */
            gnn_csr_t gu = g;
            gu.flags &= ~(unsigned)GNN_CSR_SORTED;
            gnn_sampler_t *su;
            gnn_minibatch_t mbu;
            assert_int_equal(gnn_sampler_create(&gu, layers, configs[c], &su), 0);
            assert_int_equal(
                gnn_sampler_sample_excluding(su, seeds, ns, excl, ne, g_seed, 2, 5, &mbu), 0);
            assert_int_equal(mb.n_input, mbu.n_input);
            assert_memory_equal(mb.nodes, mbu.nodes, (size_t)mb.n_input * sizeof *mb.nodes);
            for (int l = 0; l < layers; l++) {
                assert_int_equal(mb.blocks[l].csr.nnz, mbu.blocks[l].csr.nnz);
                assert_memory_equal(mb.blocks[l].csr.indices, mbu.blocks[l].csr.indices,
                                    (size_t)mb.blocks[l].csr.nnz * sizeof(gnn_vid_t));
            }
            gnn_minibatch_free(&mbu);
            gnn_sampler_free(su);
            int64_t rows_with = 0;
            for (int l = 0; l < layers; l++) {
                const gnn_block_t *b = &mb.blocks[l];
                assert_int_equal(gnn_csr_validate(&b->csr), 0);
                assert_int_equal(b->csr.nnz, mb4.blocks[l].csr.nnz);
                assert_memory_equal(b->csr.indices, mb4.blocks[l].csr.indices,
                                    (size_t)b->csr.nnz * sizeof *b->csr.indices);
                for (gnn_vid_t i = 0; i < b->csr.n_rows; i++) {
                    gnn_vid_t v = b->src_ids[i];
                    for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++) {
                        gnn_vid_t u = b->src_ids[b->csr.indices[e]];
                        assert_false(excluded(excl, ne, u, v));
                        assert_true(has_edge(&g, u, v));
                    }
                }
            }
            /* The seeds' rows (hop 0, the output block) against the plain draws. */
            const gnn_block_t *b = &mb.blocks[layers - 1], *p = &plain.blocks[layers - 1];
            int f = configs[c][0];
            for (gnn_vid_t i = 0; i < ns; i++) {
                gnn_vid_t v = seeds[i];
                gnn_eid_t d = g.indptr[v + 1] - g.indptr[v], left = 0;
                for (gnn_eid_t e = g.indptr[v]; e < g.indptr[v + 1]; e++)
                    left += !excluded(excl, ne, g.indices[e], v);
                gnn_eid_t got = b->csr.indptr[i + 1] - b->csr.indptr[i];
                if (left == d) { /* nothing excluded: the plain draws, as global ids */
                    assert_int_equal(got, p->csr.indptr[i + 1] - p->csr.indptr[i]);
                    for (gnn_eid_t q = 0; q < got; q++)
                        assert_int_equal(b->src_ids[b->csr.indices[b->csr.indptr[i] + q]],
                                         p->src_ids[p->csr.indices[p->csr.indptr[i] + q]]);
                } else {
                    rows_with++;
                    assert_int_equal(got, f < 0 || left <= f ? left : f);
                }
            }
            assert_true(rows_with >= ne); /* every positive's two ends lose one source at least */
            gnn_minibatch_free(&mb);
            gnn_minibatch_free(&mb4);
            gnn_minibatch_free(&plain);
            gnn_sampler_free(s);
        }
    /* Errors: an end point outside the graph, a NULL list. */
    gnn_sampler_t *s;
    int f1[] = {3};
    assert_int_equal(gnn_sampler_create(&g, 1, f1, &s), 0);
    gnn_minibatch_t mb;
    gnn_vid_t bad[2] = {1, n};
    assert_int_equal(gnn_sampler_sample_excluding(s, seeds, ns, bad, 1, 0, 0, 0, &mb), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "outside the graph"));
    assert_int_equal(gnn_sampler_sample_excluding(s, seeds, ns, NULL, 1, 0, 0, 0, &mb), GNN_EINVAL);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* What is left of a row after exclusion is drawn uniformly: 200 stars of
 * 55 neighbours, the first 5 of each excluded, 5 of the other 50 drawn
 * 100 times per star (chi-square with 49 degrees of freedom, scaled as in
 * star_statistic). */
static void test_excluded_uniform(void **state)
{
    (void)state;
    const gnn_vid_t hubs = 200, d = 55, x = 5;
    const int k = 5, calls = 100;
    gnn_csr_t g;
    stars(hubs, d, &g);
    gnn_vid_t *seeds = malloc((size_t)hubs * sizeof *seeds);
    gnn_vid_t *excl = malloc(2 * (size_t)(hubs * x) * sizeof *excl);
    int64_t *count = calloc((size_t)d + 1, sizeof *count);
    assert_true(seeds && excl && count);
    for (gnn_vid_t c = 0; c < hubs; c++) {
        seeds[c] = c * (d + 1);
        for (gnn_vid_t i = 0; i < x; i++) {
            excl[2 * (c * x + i)] = seeds[c];
            excl[2 * (c * x + i) + 1] = seeds[c] + 1 + i;
        }
    }
    int fan[] = {k};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 1, fan, &s), 0);
    for (int t = 0; t < calls; t++) {
        gnn_minibatch_t mb;
        assert_int_equal(gnn_sampler_sample_excluding(s, seeds, hubs, excl, hubs * x, g_seed,
                                                      (uint64_t)t, 0, &mb),
                         0);
        const gnn_block_t *b = &mb.blocks[0];
        assert_int_equal(b->csr.nnz, (gnn_eid_t)k * hubs);
        for (gnn_vid_t i = 0; i < hubs; i++)
            for (gnn_eid_t e = b->csr.indptr[i]; e < b->csr.indptr[i + 1]; e++) {
                gnn_vid_t off = b->src_ids[b->csr.indices[e]] - seeds[i];
                assert_true(off > x && off <= d);
                count[off]++;
            }
        gnn_minibatch_free(&mb);
    }
    const gnn_vid_t left = d - x;
    double expect = (double)hubs * calls * k / (double)left, x2 = 0, p = (double)k / (double)left;
    for (gnn_vid_t u = x + 1; u <= d; u++) x2 += (count[u] - expect) * (count[u] - expect) / expect;
    x2 /= (1 - p) * (double)left / (double)(left - 1);
    printf("stars d=55, 5 excluded, k=5: chi2 %.2f (df 49, critical %.3f at 0.001)\n", x2,
           CHI2_999_DF49);
    assert_true(x2 < CHI2_999_DF49);
    free(seeds);
    free(excl);
    free(count);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/*
 * The exclusion set a holder applies to rows it draws for others
 * (gnn_sampler_excl_*): a row's excluded sources go, compared through an
 * id map when one is given, both directions of every pair; a row without
 * exclusions is copied whole; drawing over the filtered row gives what
 * the sampler draws locally for the same node.
 */
static void test_excl_set(void **state)
{
    (void)state;
    const gnn_vid_t pairs[] = {100, 7, 7, 105, 3, 100}; /* 100-7, 7-105, 3-100 */
    gnn_sampler_excl_t *x;
    assert_int_equal(gnn_sampler_excl_create(pairs, 3, &x), 0);
    assert_true(gnn_sampler_excl_has_row(x, 7));
    assert_true(gnn_sampler_excl_has_row(x, 100));
    assert_false(gnn_sampler_excl_has_row(x, 4));
    /* Row of node 7 in local ids 0..5, whose graph ids are ids[]. */
    const gnn_vid_t ids[] = {100, 101, 102, 103, 104, 105}, row[] = {0, 1, 2, 3, 4, 5};
    gnn_vid_t out[6];
    gnn_eid_t c = gnn_sampler_excl_filter(x, 7, row, 6, ids, out);
    assert_int_equal(c, 4);
    const gnn_vid_t want[] = {1, 2, 3, 4};
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(gnn_sampler_excl_filter(x, 4, row, 6, ids, NULL), 6);
    gnn_vid_t grow[] = {3, 7, 9, 100};
    assert_int_equal(gnn_sampler_excl_filter(x, 100, grow, 4, NULL, out), 2); /* 3 and 7 go */
    assert_int_equal(out[0], 9);
    assert_int_equal(out[1], 100);
    gnn_sampler_excl_free(x);
    gnn_vid_t bad[] = {1, -2};
    assert_int_equal(gnn_sampler_excl_create(bad, 1, &x), GNN_EINVAL);
    assert_null(x);
    /* A star's hub with 5 of its 50 neighbours excluded: the holder's draw
     * over the filtered row equals the local sampler's. */
    gnn_csr_t g;
    star_graph(50, &g);
    gnn_vid_t ex[10];
    for (int i = 0; i < 5; i++) {
        ex[2 * i] = 0;
        ex[2 * i + 1] = 1 + 3 * i;
    }
    int fan[] = {7};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 1, fan, &s), 0);
    gnn_vid_t seed0 = 0;
    gnn_minibatch_t mb;
    assert_int_equal(gnn_sampler_sample_excluding(s, &seed0, 1, ex, 5, g_seed, 1, 2, &mb), 0);
    assert_int_equal(gnn_sampler_excl_create(ex, 5, &x), 0);
    gnn_vid_t kept[50], drawn[50];
    gnn_eid_t dk = gnn_sampler_excl_filter(x, 0, g.indices, 50, NULL, kept);
    assert_int_equal(dk, 45);
    int64_t cd = gnn_sampler_draw_row(kept, dk, 7, gnn_sampler_key(g_seed, 1, 2), 0, 0, drawn);
    assert_int_equal(cd, 7);
    const gnn_block_t *b = &mb.blocks[0];
    assert_int_equal(b->csr.nnz, 7);
    gnn_vid_t local[7];
    for (int q = 0; q < 7; q++) local[q] = b->src_ids[b->csr.indices[q]];
    qsort(drawn, 7, sizeof *drawn, cmp_vid_test);
    qsort(local, 7, sizeof *local, cmp_vid_test);
    assert_memory_equal(drawn, local, sizeof local);
    gnn_minibatch_free(&mb);
    gnn_sampler_excl_free(x);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

/* A 1M-node graph (degrees uniform in 0..20, 16 hubs of 20000): one batch
 * of 1024 seeds with fanouts 15,10,5 costs O(batch), not O(N). The time is
 * printed, not asserted. */
static void test_large_graph(void **state)
{
    (void)state;
    uint64_t rng = g_seed ^ 0xBEEF;
    const gnn_vid_t n = 1 << 20;
    gnn_csr_t g;
    memset(&g, 0, sizeof g);
    g.n_rows = g.n_cols = n;
    g.indptr = gnn_malloc_array((size_t)n + 1, sizeof *g.indptr);
    assert_non_null(g.indptr);
    g.indptr[0] = 0;
    for (gnn_vid_t v = 0; v < n; v++)
        g.indptr[v + 1] = g.indptr[v] + (v % 65536 == 1 ? 20000 : rng_below(&rng, 21));
    g.nnz = g.indptr[n];
    g.indices = gnn_malloc_array((size_t)g.nnz, sizeof *g.indices);
    assert_non_null(g.indices);
    for (gnn_eid_t e = 0; e < g.nnz; e++) g.indices[e] = rng_below(&rng, n);
    int fanouts[] = {15, 10, 5};
    gnn_sampler_t *s;
    assert_int_equal(gnn_sampler_create(&g, 3, fanouts, &s), 0);
    gnn_vid_t *seeds = random_ids(&rng, n, 1024);
    put_first(seeds, n, 1); /* a hub */
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        gnn_minibatch_t mb;
        double t0 = now();
        assert_int_equal(gnn_sampler_sample(s, seeds, 1024, g_seed, 0, (uint64_t)rep, &mb), 0);
        double t = now() - t0;
        if (t < best) best = t;
        if (rep == 0) {
            for (int l = 0; l < 3; l++) assert_int_equal(gnn_csr_validate(&mb.blocks[l].csr), 0);
            printf("1M-node graph (%" PRId64 " edges), 1024 seeds, fanouts 15,10,5: %" PRId64
                   " input nodes, edges by layer %" PRId64 " %" PRId64 " %" PRId64 "\n",
                   g.nnz, mb.n_input, mb.edges[0], mb.edges[1], mb.edges[2]);
        }
        gnn_minibatch_free(&mb);
    }
    printf("1M-node graph: best of 5 batches %.2f ms on %d threads\n", best * 1e3,
           omp_get_max_threads());
    free(seeds);
    gnn_sampler_free(s);
    gnn_csr_free(&g);
}

int main(void)
{
    g_seed = tu_seed();
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uniform_neighbours),
        cmocka_unit_test(test_uniform_subsets),
        cmocka_unit_test(test_all_when_small),
        cmocka_unit_test(test_multi_layer),
        cmocka_unit_test(test_full_block),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_index_modes),
        cmocka_unit_test(test_frontier_independent),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_remote_rows),
        cmocka_unit_test(test_typed_remote_rows),
        cmocka_unit_test(test_excluded_edges),
        cmocka_unit_test(test_excluded_uniform),
        cmocka_unit_test(test_excl_set),
        cmocka_unit_test(test_sort_ids),
        cmocka_unit_test(test_sample_once),
        cmocka_unit_test(test_large_graph),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
