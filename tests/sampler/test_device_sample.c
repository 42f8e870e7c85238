/*
 * Tests of sampling on a backend (gnn_be_sample, kernels/backend.h) against
 * the host sampler (sampler/sampler.h): for every backend named on the
 * command line (default: cpu and cpu-as-gpu; "cuda" skips, exit 77,
 * without a device), batches of 0, 1, 100, 1500 and 3000 seeds (a block
 * with many more sources than destinations) on graphs with
 * hubs, empty rows, repeated edges and self loops, with fanouts of 1 to
 * 3 hops (-1, fanouts above the degrees and one past the host's scan limit
 * among them), over several
 * (seed, epoch, batch): the node list, and every block's shape, row
 * offsets and sorted local ids, equal to the host sampler's entry for
 * entry, drawn the usual way and sampling once (a node's draw kept by
 * every later block), with one batch reused throughout (its buffers grow), a GPU
 * reading the graph from its memory and from the host's in place; its blocks
 * prepared on the backend (gnn_be_graph_create_batch) aggregate (sum,
 * mean, gcn; forward and backward) as the host's blocks do, and give
 * graph attention (GAT's, with and without self loops, dropout keyed by
 * the batch's node ids; slots made with the block or at first use) the
 * host blocks' numbers bit for bit. Errors: a
 * seed out of range or repeated (named, the sampler still right
 * afterwards), bad fanouts and layer counts, a non-square graph, a batch
 * of another backend, an excluded edge's end point out of range. Batches
 * that leave out excluded edges (an edge batch's own positives, some
 * repeated, reversed, through the hub or a self loop) equal the host's
 * gnn_sampler_sample_excluding entry for entry too. Prints its seed; set GNN_TEST_SEED to replay another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "kernels/backend.h"
#include "sampler/sampler.h"
#include "tests/common/testutil.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t g_seed;
static const char *g_backends[8];
static int g_nbackends;

static int64_t rng_below(uint64_t *s, int64_t n)
{
    return (int64_t)(tu_rng_next(s) % (uint64_t)n);
}

/* n nodes, m edges: a third into hub 3, nodes v % 7 == 5 with no in-edges,
 * repeats and self loops kept (dedupe: off), rows in input order unless
 * sorted. */
static void make_graph(uint64_t *s, int64_t n, int64_t m, int sorted, gnn_csr_t *g)
{
    int64_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    assert_true(src && dst);
    for (int64_t i = 0; i < m; i++) {
        int64_t v;
        do v = tu_rng_next(s) % 3 == 0 ? 3 : rng_below(s, n);
        while (v % 7 == 5);
        dst[i] = v;
        src[i] = i % 97 == 0 ? v : rng_below(s, n);
        if (i % 89 == 1 && i > 0) src[i] = src[i - 1], dst[i] = dst[i - 1]; /* a repeat */
    }
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, NULL, sorted ? GNN_BUILD_SORT : 0u, g), 0);
    free(src), free(dst);
}

/* Key ids of n nodes, as a part's graph-file ids: any non-negative ids
 * (malloc'd). */
static int64_t *random_keys(uint64_t *s, int64_t n)
{
    int64_t *kid = malloc((size_t)(n + 1) * sizeof *kid);
    assert_non_null(kid);
    for (int64_t v = 0; v < n; v++) kid[v] = (int64_t)(tu_rng_next(s) >> 2);
    return kid;
}

static int64_t *fetch(gnn_backend_t *be, const int64_t *d, int64_t n)
{
    int64_t *h = malloc((size_t)(n + 1) * sizeof *h);
    assert_non_null(h);
    if (n > 0) assert_int_equal(gnn_be_download(be, h, d, (size_t)n * sizeof *h), 0);
    return h;
}

/* The batch b on be equals the host's mb, entry for entry. */
static void expect_same(gnn_backend_t *be, const gnn_bbatch_t *b, const gnn_minibatch_t *mb,
                        const char *what)
{
    if (b->layers != mb->layers || b->n_seeds != mb->n_seeds || b->n_input != mb->n_input)
        fail_msg("%s: %d layers, %" PRId64 " seeds, %" PRId64 " input nodes; the host: %d, %" PRId64
                 ", %" PRId64 " (seed %" PRIu64 ")",
                 what, b->layers, b->n_seeds, b->n_input, mb->layers, mb->n_seeds, mb->n_input,
                 g_seed);
    int64_t *nodes = fetch(be, b->nodes, b->n_input);
    for (int64_t i = 0; i < b->n_input; i++)
        if (nodes[i] != mb->nodes[i])
            fail_msg("%s: node %" PRId64 " is %" PRId64 ", the host's %" PRId64 " (seed %" PRIu64
                     ")",
                     what, i, nodes[i], mb->nodes[i], g_seed);
    free(nodes);
    for (int l = 0; l < b->layers; l++) {
        const gnn_csr_t *a = &mb->blocks[l].csr;
        if (b->n_dst[l] != a->n_rows || b->n_src[l] != a->n_cols || b->nnz[l] != a->nnz)
            fail_msg("%s: block %d is %" PRId64 " x %" PRId64 " with %" PRId64 " entries; the "
                     "host's %" PRId64 " x %" PRId64 " with %" PRId64,
                     what, l, b->n_dst[l], b->n_src[l], b->nnz[l], a->n_rows, a->n_cols, a->nnz);
        int64_t *ip = fetch(be, b->indptr[l], b->n_dst[l] + 1);
        int64_t *ix = fetch(be, b->indices[l], b->nnz[l]);
        for (int64_t i = 0; i <= a->n_rows; i++)
            if (ip[i] != a->indptr[i])
                fail_msg("%s: block %d, indptr[%" PRId64 "] = %" PRId64 ", the host's %" PRId64,
                         what, l, i, ip[i], a->indptr[i]);
        for (int64_t e = 0; e < a->nnz; e++)
            if (ix[e] != a->indices[e])
                fail_msg("%s: block %d, entry %" PRId64 " = %" PRId64 ", the host's %" PRId64, what,
                         l, e, ix[e], a->indices[e]);
        free(ip), free(ix);
        const int32_t *het = mb->blocks[l].etype;
        if (!het != !b->typed)
            fail_msg("%s: block %d has %s relations, the host's %s", what, l,
                     b->typed ? "" : "no", het ? "has" : "not");
        if (!het) continue;
        int32_t *et = malloc((size_t)(a->nnz + 1) * sizeof *et);
        assert_non_null(et);
        if (a->nnz)
            assert_int_equal(gnn_be_download(be, et, b->etype[l], (size_t)a->nnz * sizeof *et), 0);
        for (int64_t e = 0; e < a->nnz; e++)
            if (et[e] != het[e])
                fail_msg("%s: block %d, entry %" PRId64 " of relation %d, the host's %d", what, l,
                         e, et[e], het[e]);
        free(et);
    }
}

/* The blocks of b prepared on be (gnn_be_graph_create_batch; with ds,
 * gnn_be_sampler_graph_create on a thread of their own, as the trainer's
 * sampler thread makes them, on the sampler's stream on a GPU) aggregate
 * as the host blocks of mb prepared the usual way: sum, mean and gcn
 * forward and backward on random features (bit for bit on the CPU, within
 * 1e-5 on a GPU). */
typedef struct {
    gnn_bsampler_t *ds;
    const gnn_bbatch_t *b;
    int l, rc;
    gnn_bgraph_t *g;
} made_t;

static void *make_on_thread(void *arg)
{
    made_t *m = arg;
    /* With GAT's attention slots (self loops) made with the graph on the
     * odd blocks; the others make theirs at the first attention call. */
    m->rc = gnn_be_sampler_graph_create(m->ds, m->b, m->l, m->l % 2 ? 1 : -1, &m->g);
    return NULL;
}

static float *random_floats(uint64_t *s, int64_t n)
{
    float *x = malloc((size_t)(n + 1) * sizeof *x);
    assert_non_null(x);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(tu_rng_next(s) >> 40) * 0x1p-23f - 1.0f;
    return x;
}

static float *to_backend(gnn_backend_t *be, const float *h, int64_t n)
{
    float *d = NULL;
    assert_int_equal(gnn_be_alloc(be, (size_t)(n + 1) * sizeof *d, (void **)&d), 0);
    if (n > 0) assert_int_equal(gnn_be_upload(be, d, h, (size_t)n * sizeof *d), 0);
    return d;
}

static float *from_backend(gnn_backend_t *be, const float *d, int64_t n)
{
    float *h = malloc((size_t)(n + 1) * sizeof *h);
    assert_non_null(h);
    if (n > 0) assert_int_equal(gnn_be_download(be, h, d, (size_t)n * sizeof *h), 0);
    return h;
}

/* Graph attention (the built-in gat: scores, softmax with dropout keyed
 * by the batch's node ids, aggregation, and both backwards) on block l
 * prepared from the batch (gd) and from the host's block (gh), with and
 * without self loops: the same numbers bit for bit, the same kernels
 * running over slot layouts that must be equal entry for entry. */
static void expect_same_attention(gnn_backend_t *be, gnn_bgraph_t *gd, gnn_bgraph_t *gh,
                                  const gnn_bbatch_t *b, int l, int64_t n_graph, uint64_t *s,
                                  const gnn_aggr_def_t *gat, const char *what)
{
    const int64_t H = 2, F = 3, W = H * F, nd = b->n_dst[l], ns = b->n_src[l];
    float *hx = random_floats(s, ns * W), *hp = random_floats(s, 2 * W),
          *hdy = random_floats(s, nd * W);
    float *x = to_backend(be, hx, ns * W), *p = to_backend(be, hp, 2 * W),
          *dy = to_backend(be, hdy, nd * W);
    for (int sl = 0; sl < 2; sl++) {
        gnn_attn_opts_t o = {.heads = H, .f = F, .self_loop = sl, .negative_slope = 0.2f,
                             .dropout = 0.3f, .seed = 11, .offset = 5, .ids = b->nodes,
                             .n_ids = n_graph};
        const int64_t slots = gnn_be_attn_slots(gh, sl);
        assert_int_equal(gnn_be_attn_slots(gd, sl), slots);
        float *out[2][4];
        for (int k = 0; k < 2; k++) {
            gnn_bgraph_t *g = k ? gh : gd;
            size_t wsb = 0;
            assert_int_equal(gnn_be_attn_workspace(be, g, gat, &o, &wsb), 0);
            float *sc = NULL, *y = NULL, *dx = NULL, *dp = NULL;
            void *ws = NULL;
            assert_int_equal(gnn_be_alloc(be, (size_t)(slots * H + 1) * 4, (void **)&sc), 0);
            assert_int_equal(gnn_be_alloc(be, (size_t)(nd * W + 1) * 4, (void **)&y), 0);
            assert_int_equal(gnn_be_alloc(be, (size_t)(ns * W + 1) * 4, (void **)&dx), 0);
            assert_int_equal(gnn_be_alloc(be, (size_t)(2 * W) * 4, (void **)&dp), 0);
            assert_int_equal(gnn_be_alloc(be, wsb + 1, &ws), 0);
            assert_int_equal(gnn_be_attn_score(be, g, gat, &o, p, x, sc, ws, wsb), 0);
            assert_int_equal(gnn_be_attn_forward(be, g, &o, x, sc, y), 0);
            out[k][0] = from_backend(be, y, nd * W);
            assert_int_equal(gnn_be_attn_backward(be, g, &o, x, sc, y, dy, dx, sc), 0);
            assert_int_equal(gnn_be_attn_score_backward(be, g, gat, &o, p, x, sc, dx, dp, ws, wsb),
                             0);
            out[k][1] = from_backend(be, sc, slots * H);
            out[k][2] = from_backend(be, dx, ns * W);
            out[k][3] = from_backend(be, dp, 2 * W);
            gnn_be_free(be, sc), gnn_be_free(be, y), gnn_be_free(be, dx), gnn_be_free(be, dp);
            gnn_be_free(be, ws);
        }
        static const char *const part[4] = {"output", "score gradient", "input gradient",
                                            "parameter gradient"};
        const int64_t len[4] = {nd * W, slots * H, ns * W, 2 * W};
        for (int q = 0; q < 4; q++) {
            if (memcmp(out[0][q], out[1][q], (size_t)len[q] * sizeof(float)) != 0)
                for (int64_t i = 0; i < len[q]; i++)
                    if (memcmp(&out[0][q][i], &out[1][q][i], sizeof(float)) != 0)
                        fail_msg("%s: block %d, attention (self loops %d) %s [%" PRId64
                                 "]: %.9g from the batch, %.9g from the host block",
                                 what, l, sl, part[q], i, (double)out[0][q][i],
                                 (double)out[1][q][i]);
            free(out[0][q]), free(out[1][q]);
        }
    }
    gnn_be_free(be, x), gnn_be_free(be, p), gnn_be_free(be, dy);
    free(hx), free(hp), free(hdy);
}

static void expect_same_graphs(gnn_backend_t *be, gnn_bsampler_t *ds, const gnn_bbatch_t *b,
                               const gnn_minibatch_t *mb, int64_t n_graph, uint64_t *s,
                               const char *what)
{
    gnn_aggr_registry_t *reg;
    assert_int_equal(gnn_aggr_registry_create(&reg), 0);
    const int64_t f = 5;
    const int exact = gnn_backend_kind(be) == GNN_BACKEND_CPU;
    for (int l = 0; l < b->layers; l++) {
        gnn_bgraph_t *gd = NULL, *gh = NULL;
        if (ds) {
            made_t m = {ds, b, l, -1, NULL};
            pthread_t th;
            assert_int_equal(pthread_create(&th, NULL, make_on_thread, &m), 0);
            assert_int_equal(pthread_join(th, NULL), 0);
            assert_int_equal(m.rc, 0);
            gd = m.g;
        } else {
            assert_int_equal(gnn_be_graph_create_batch(be, b, l, l % 2 ? -1 : 1, &gd), 0);
        }
        assert_int_equal(gnn_be_graph_create(be, &mb->blocks[l].csr, &gh), 0);
        int64_t nd = b->n_dst[l], ns = b->n_src[l];
        float *x = malloc((size_t)(ns * f + 1) * sizeof *x),
              *dy = malloc((size_t)(nd * f + 1) * sizeof *dy);
        float *out[2][2];
        assert_true(x && dy);
        for (int64_t i = 0; i < ns * f; i++) x[i] = (float)(tu_rng_next(s) >> 40) * 0x1p-23f - 1.0f;
        for (int64_t i = 0; i < nd * f; i++)
            dy[i] = (float)(tu_rng_next(s) >> 40) * 0x1p-23f - 1.0f;
        float *dx = NULL, *ddy = NULL, *yd = NULL, *dxd = NULL;
        assert_int_equal(gnn_be_alloc(be, (size_t)(ns * f + 1) * sizeof(float), (void **)&dx), 0);
        assert_int_equal(gnn_be_alloc(be, (size_t)(nd * f + 1) * sizeof(float), (void **)&ddy), 0);
        assert_int_equal(gnn_be_alloc(be, (size_t)(nd * f + 1) * sizeof(float), (void **)&yd), 0);
        assert_int_equal(gnn_be_alloc(be, (size_t)(ns * f + 1) * sizeof(float), (void **)&dxd), 0);
        assert_int_equal(gnn_be_upload(be, dx, x, (size_t)(ns * f) * sizeof(float)), 0);
        assert_int_equal(gnn_be_upload(be, ddy, dy, (size_t)(nd * f) * sizeof(float)), 0);
        static const char *const names[3] = {"sum", "mean", "gcn"};
        for (int a = 0; a < 3; a++) {
            const gnn_aggr_def_t *def;
            assert_int_equal(gnn_aggr_registry_find(reg, names[a], &def), 0);
            for (int k = 0; k < 2; k++) {
                gnn_bgraph_t *g = k ? gh : gd;
                out[k][0] = malloc((size_t)(nd * f + 1) * sizeof(float));
                out[k][1] = malloc((size_t)(ns * f + 1) * sizeof(float));
                assert_int_equal(gnn_be_aggr_forward(be, g, def, f, dx, yd, NULL, 0), 0);
                assert_int_equal(gnn_be_aggr_backward(be, g, def, f, dx, yd, ddy, dxd, NULL, 0), 0);
                assert_int_equal(
                    gnn_be_download(be, out[k][0], yd, (size_t)(nd * f) * sizeof(float)), 0);
                assert_int_equal(
                    gnn_be_download(be, out[k][1], dxd, (size_t)(ns * f) * sizeof(float)), 0);
            }
            for (int d = 0; d < 2; d++) {
                int64_t n = d ? ns * f : nd * f;
                for (int64_t i = 0; i < n; i++) {
                    float u = out[0][d][i], v = out[1][d][i];
                    if (exact ? memcmp(&u, &v, sizeof u) != 0
                              : !(fabsf(u - v) <= 1e-5f * (1.0f + fabsf(v))))
                        fail_msg("%s: block %d, %s %s [%" PRId64 "]: %.9g from the batch, %.9g "
                                 "from the host block",
                                 what, l, names[a], d ? "backward" : "forward", i, (double)u,
                                 (double)v);
                }
            }
            for (int k = 0; k < 2; k++) free(out[k][0]), free(out[k][1]);
        }
        const gnn_aggr_def_t *gat;
        assert_int_equal(gnn_aggr_registry_find(reg, "gat", &gat), 0);
        expect_same_attention(be, gd, gh, b, l, n_graph, s, gat, what);
        gnn_be_free(be, dx), gnn_be_free(be, ddy), gnn_be_free(be, yd), gnn_be_free(be, dxd);
        free(x), free(dy);
        gnn_be_graph_free(gd);
        gnn_be_graph_free(gh);
    }
    gnn_aggr_registry_free(reg);
}

/* Distinct random seeds. */
static int64_t *pick_seeds(uint64_t *s, int64_t n_graph, int64_t k)
{
    int64_t *perm = malloc((size_t)n_graph * sizeof *perm);
    assert_non_null(perm);
    for (int64_t i = 0; i < n_graph; i++) perm[i] = i;
    for (int64_t i = 0; i < k; i++) {
        int64_t j = i + rng_below(s, n_graph - i), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    return perm;
}

/*
 * Excluded edges for a batch of n seeds, as an edge batch leaves out its
 * own positives: for each seed an edge of its row (a repeated edge or a
 * self loop among them; hub 3's rows often), reversed for every third,
 * every fifth given twice, and an edge of no row now and then. *n_excl
 * pairs (a malloc'd array).
 */
static int64_t *pick_excluded(uint64_t *s, const gnn_csr_t *g, const int64_t *seeds, int64_t n,
                              int64_t *n_excl)
{
    int64_t *x = malloc((size_t)(4 * n + 2) * sizeof *x), m = 0;
    assert_non_null(x);
    for (int64_t i = 0; i < n; i++) {
        const int64_t v = seeds[i], d = g->indptr[v + 1] - g->indptr[v];
        int64_t u = d > 0 ? g->indices[g->indptr[v] + rng_below(s, d)] : rng_below(s, g->n_rows);
        if (i % 7 == 3) u = 3; /* the hub */
        x[2 * m] = i % 3 == 0 ? u : v;
        x[2 * m + 1] = i % 3 == 0 ? v : u;
        m++;
        if (i % 5 == 0) {
            x[2 * m] = x[2 * m - 2];
            x[2 * m + 1] = x[2 * m - 1];
            m++;
        }
    }
    *n_excl = m;
    return x;
}

static gnn_backend_t *open_or_skip(const char *name)
{
    gnn_backend_t *be = NULL;
    int rc = gnn_backend_open(name, &be);
    if (rc == GNN_ENODEV) {
        print_message("%s: no device (%s): skipped\n", name, gnn_error_message());
        return NULL;
    }
    assert_int_equal(rc, 0);
    return be;
}

static void test_same_batches(void **state)
{
    (void)state;
    static const int fan[][4] = {{2, 5, 3}, {2, -1, 2},    {3, 25, 10, 5},
                                 {1, 1},    {3, 3, 40, 2}, {2, 100, 3}};
    static const int64_t sizes[] = {0, 1, 100, 1500, 3000};
    for (int k = 0; k < g_nbackends; k++) {
        gnn_backend_t *be = open_or_skip(g_backends[k]);
        if (!be) continue;
        uint64_t s = g_seed ^ 0x6473616d;
        gnn_bbatch_t b;
        memset(&b, 0, sizeof b);
        int64_t changed = 0;
        for (int gi = 0; gi < 2; gi++) {
            gnn_csr_t g;
            make_graph(&s, gi ? 6000 : 900, gi ? 60000 : 20000, gi, &g);
            int64_t *kid = random_keys(&s, g.n_rows);
            for (size_t f = 0; f < 2 * sizeof fan / sizeof fan[0]; f++) {
                /* each fanout list drawn the usual way, then sampling once */
                const int once = f >= sizeof fan / sizeof fan[0];
                const size_t fi = f % (sizeof fan / sizeof fan[0]);
                const int layers = fan[fi][0];
                gnn_sampler_t *hs;
                gnn_bsampler_t *ds;
                assert_int_equal(gnn_sampler_create(&g, layers, fan[fi] + 1, &hs), 0);
                assert_int_equal(gnn_sampler_set_once(hs, once), 0);
                /* Every other fanout list with draws keyed by kid. */
                const int keyed = f % 2 == 1;
                if (keyed) assert_int_equal(gnn_sampler_set_key_ids(hs, kid), 0);
                /* A GPU reads the graph from its memory, then from the
                 * host's in place (alternately); the CPU from the host's. */
                const int gpu = gnn_backend_kind(be) == GNN_BACKEND_CUDA;
                const int where = gpu ? 1 + (int)(f % 2) : 0;
                assert_int_equal(gnn_be_sampler_create_at(be, &g, layers, fan[fi] + 1, where, &ds),
                                 0);
                assert_int_equal(gnn_be_sampler_set_once(ds, once), 0);
                if (keyed) assert_int_equal(gnn_be_sampler_set_key_ids(ds, kid), 0);
                assert_int_equal(gnn_be_sampler_graph_at(ds), gpu ? where : 2);
                for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                    int64_t n = sizes[z] < g.n_rows ? sizes[z] : g.n_rows;
                    int64_t *seeds = pick_seeds(&s, g.n_rows, n);
                    uint64_t sd = tu_rng_next(&s), ep = z, bt = f * 7 + z;
                    gnn_minibatch_t mb;
                    assert_int_equal(gnn_sampler_sample(hs, seeds, n, sd, ep, bt, &mb), 0);
                    assert_int_equal(gnn_be_sample(ds, seeds, n, sd, ep, bt, &b), 0);
                    char what[160];
                    snprintf(what, sizeof what, "%s, graph %d, fanouts #%zu%s%s, %" PRId64 " seeds",
                             g_backends[k], gi, fi, once ? " sampled once" : "",
                             keyed ? ", keyed" : "", n);
                    expect_same(be, &b, &mb, what);
                    if (n == 100 || n == 3000)
                        expect_same_graphs(be, n == 3000 ? ds : NULL, &b, &mb, g.n_rows, &s,
                                           what);
                    /* ... and leaving out excluded edges (an edge batch's) */
                    if (n == 100 || n == 1500) {
                        int64_t ne = 0, *ex = pick_excluded(&s, &g, seeds, n, &ne);
                        gnn_minibatch_t mx;
                        assert_int_equal(gnn_sampler_sample_excluding(hs, seeds, n, ex, ne, sd, ep,
                                                                      bt, &mx),
                                         0);
                        assert_int_equal(gnn_be_sample_excluding(ds, seeds, n, ex, ne, sd, ep, bt,
                                                                 &b),
                                         0);
                        snprintf(what, sizeof what,
                                 "%s, graph %d, fanouts #%zu%s%s, %" PRId64 " seeds, %" PRId64
                                 " excluded edges",
                                 g_backends[k], gi, fi, once ? " sampled once" : "",
                                 keyed ? ", keyed" : "", n, ne);
                        expect_same(be, &b, &mx, what);
                        changed += mx.edges_total != mb.edges_total;
                        gnn_minibatch_free(&mx);
                        free(ex);
                    }
                    gnn_minibatch_free(&mb);
                    free(seeds);
                }
                gnn_be_sampler_free(ds);
                gnn_sampler_free(hs);
            }
            free(kid);
            gnn_csr_free(&g);
        }
        gnn_be_batch_free(&b);
        gnn_backend_close(be);
        /* The exclusions changed blocks (their edges were drawn otherwise). */
        print_message("%s: %" PRId64 " batches changed by excluded edges\n", g_backends[k],
                      changed);
        assert_true(changed > 0);
    }
}

static void expect_error(int rc, int code, const char *want)
{
    assert_int_equal(rc, code);
    if (!strstr(gnn_error_message(), want))
        fail_msg("message \"%s\" lacks \"%s\"", gnn_error_message(), want);
}

/* Relations of g's entries (R of them: a hash of the edge), each row's
 * entries then grouped by relation (a stable counting sort, as a typed
 * graph's rows are grouped): *et (malloc'd); g's rows are no longer
 * sorted by source. */
static int32_t *make_relations(gnn_csr_t *g, int R)
{
    int32_t *et = malloc((size_t)(g->nnz + 1) * sizeof *et), *rt = malloc((size_t)(g->nnz + 1) * sizeof *rt);
    int64_t *tmp = malloc((size_t)(g->nnz + 1) * sizeof *tmp);
    assert_true(et && rt && tmp);
    for (int64_t v = 0; v < g->n_rows; v++) {
        const int64_t a = g->indptr[v], b = g->indptr[v + 1];
        for (int64_t e = a; e < b; e++)
            rt[e] = (int32_t)(((uint64_t)g->indices[e] * 2654435761u + (uint64_t)v * 40503u) %
                              (uint64_t)R);
        int64_t w = a;
        for (int r = 0; r < R; r++)
            for (int64_t e = a; e < b; e++)
                if (rt[e] == r) {
                    tmp[w] = g->indices[e];
                    et[w++] = r;
                }
        memcpy(g->indices + a, tmp + a, (size_t)(b - a) * sizeof *tmp);
    }
    g->flags &= ~(unsigned)GNN_CSR_SORTED;
    free(rt);
    free(tmp);
    return et;
}

/*
 * Typed draws (R-GCN's): per relation of a row, keyed by the relation;
 * blocks carry each entry's relation, rows sorted by (source, relation).
 * Against the host sampler with the same relations, entry for entry, with
 * 3 and 5 relations, 1 to 3 hops, drawn the usual way and sampling once,
 * keyed by graph-file ids and not, and leaving out excluded edges.
 */
static void test_typed_batches(void **state)
{
    (void)state;
    static const int fan[][4] = {{2, 4, 2}, {1, 2}, {3, 3, -1, 2}, {2, 30, 5}};
    static const int64_t sizes[] = {0, 1, 100, 700};
    for (int k = 0; k < g_nbackends; k++) {
        gnn_backend_t *be = open_or_skip(g_backends[k]);
        if (!be) continue;
        uint64_t s = g_seed ^ 0x7479706564;
        gnn_bbatch_t b;
        memset(&b, 0, sizeof b);
        for (int gi = 0; gi < 2; gi++) {
            gnn_csr_t g;
            make_graph(&s, gi ? 3000 : 700, gi ? 30000 : 9000, gi, &g);
            const int R = gi ? 5 : 3;
            int32_t *et = make_relations(&g, R);
            int64_t *kid = random_keys(&s, g.n_rows);
            for (size_t f = 0; f < 2 * sizeof fan / sizeof fan[0]; f++) {
                const int once = f >= sizeof fan / sizeof fan[0];
                const size_t fi = f % (sizeof fan / sizeof fan[0]);
                const int layers = fan[fi][0], keyed = f % 2 == 1;
                gnn_sampler_t *hs;
                gnn_bsampler_t *ds;
                assert_int_equal(gnn_sampler_create(&g, layers, fan[fi] + 1, &hs), 0);
                assert_int_equal(gnn_sampler_set_once(hs, once), 0);
                assert_int_equal(gnn_sampler_set_relations(hs, et, R), 0);
                assert_int_equal(gnn_be_sampler_create(be, &g, layers, fan[fi] + 1, &ds), 0);
                assert_int_equal(gnn_be_sampler_set_once(ds, once), 0);
                assert_int_equal(gnn_be_sampler_set_relations(ds, et, R), 0);
                if (keyed) {
                    assert_int_equal(gnn_sampler_set_key_ids(hs, kid), 0);
                    assert_int_equal(gnn_be_sampler_set_key_ids(ds, kid), 0);
                }
                for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
                    const int64_t n = sizes[z];
                    int64_t *seeds = pick_seeds(&s, g.n_rows, n);
                    uint64_t sd = tu_rng_next(&s), ep = z, bt = f * 5 + z;
                    char what[160];
                    snprintf(what, sizeof what, "%s, typed graph %d, fanouts #%zu%s%s, %" PRId64
                             " seeds", g_backends[k], gi, fi, once ? " sampled once" : "",
                             keyed ? ", keyed" : "", n);
                    gnn_minibatch_t mb;
                    assert_int_equal(gnn_sampler_sample(hs, seeds, n, sd, ep, bt, &mb), 0);
                    assert_int_equal(gnn_be_sample(ds, seeds, n, sd, ep, bt, &b), 0);
                    expect_same(be, &b, &mb, what);
                    gnn_minibatch_free(&mb);
                    if (n == 100) { /* an edge batch's own edges left out */
                        int64_t ne = 0, *ex = pick_excluded(&s, &g, seeds, n, &ne);
                        assert_int_equal(gnn_sampler_sample_excluding(hs, seeds, n, ex, ne, sd, ep,
                                                                      bt, &mb), 0);
                        assert_int_equal(gnn_be_sample_excluding(ds, seeds, n, ex, ne, sd, ep, bt,
                                                                 &b), 0);
                        strncat(what, ", excluded edges", sizeof what - strlen(what) - 1);
                        expect_same(be, &b, &mb, what);
                        gnn_minibatch_free(&mb);
                        free(ex);
                    }
                    free(seeds);
                }
                /* Untyped again: no relations in the blocks. */
                assert_int_equal(gnn_be_sampler_set_relations(ds, NULL, 0), 0);
                int64_t one = 7;
                assert_int_equal(gnn_be_sample(ds, &one, 1, 1, 0, 0, &b), 0);
                assert_false(b.typed);
                gnn_be_sampler_free(ds);
                gnn_sampler_free(hs);
            }
            /* A row not grouped by relation, a relation out of range. */
            gnn_bsampler_t *ds;
            const int f1[1] = {2};
            assert_int_equal(gnn_be_sampler_create(be, &g, 1, f1, &ds), 0);
            int64_t row = 3; /* the hub: entries of several relations */
            int64_t a = g.indptr[row];
            int32_t keep = et[a];
            et[a] = R - 1;
            char want[160];
            snprintf(want, sizeof want, "row %" PRId64 " is not grouped by relation", row);
            expect_error(gnn_be_sampler_set_relations(ds, et, R), GNN_EINVAL, want);
            et[a] = keep;
            expect_error(gnn_be_sampler_set_relations(ds, et, 1), GNN_EINVAL,
                         "has relation 1 of 1");
            expect_error(gnn_be_sampler_set_relations(ds, et, 257), GNN_EINVAL,
                         "257 relations (1 to 256)");
            gnn_be_sampler_free(ds);
            free(kid);
            free(et);
            gnn_csr_free(&g);
        }
        gnn_be_batch_free(&b);
        gnn_backend_close(be);
    }
}

static void test_errors(void **state)
{
    (void)state;
    for (int k = 0; k < g_nbackends; k++) {
        gnn_backend_t *be = open_or_skip(g_backends[k]), *other = NULL;
        if (!be) continue;
        assert_int_equal(gnn_backend_open("cpu", &other), 0);
        uint64_t s = g_seed ^ 0x657272;
        gnn_csr_t g;
        make_graph(&s, 300, 3000, 1, &g);
        const int fan[2] = {4, 3}, bad[2] = {4, 0};
        gnn_bsampler_t *ds = NULL, *ds2 = NULL;
        expect_error(gnn_be_sampler_create(be, &g, 2, bad, &ds), GNN_EINVAL, "fanout 0 of hop 1");
        expect_error(gnn_be_sampler_create(be, &g, 0, fan, &ds), GNN_EINVAL, "0 layers");
        g.n_cols = 299;
        expect_error(gnn_be_sampler_create(be, &g, 2, fan, &ds), GNN_EINVAL,
                     "must be a square CSR (got 300 x 299, 3000 entries)");
        g.n_cols = 300;
        gnn_vid_t *indices = g.indices;
        g.indices = NULL;
        expect_error(gnn_be_sampler_create(be, &g, 2, fan, &ds), GNN_EINVAL,
                     "must be a square CSR (got 300 x 300, 3000 entries)");
        g.indices = indices;
        assert_null(ds);
        assert_int_equal(gnn_be_sampler_create(be, &g, 2, fan, &ds), 0);
        gnn_bbatch_t b;
        memset(&b, 0, sizeof b);
        int64_t seeds[4] = {5, 17, 300, 2};
        expect_error(gnn_be_sample(ds, seeds, 4, 1, 0, 0, &b), GNN_EINVAL,
                     "seed 300 at position 2 outside [0, 300)");
        assert_int_equal(b.n_input, 0);
        seeds[2] = 17;
        expect_error(gnn_be_sample(ds, seeds, 4, 1, 0, 0, &b), GNN_EINVAL,
                     "seed 17 repeated at position 2");
        seeds[2] = 40;
        const int64_t ex[4] = {5, 17, 2, 300};
        expect_error(gnn_be_sample_excluding(ds, seeds, 4, ex, 2, 1, 0, 0, &b), GNN_EINVAL,
                     "excluded edge 1 has end point 300 outside [0, 300)");
        assert_int_equal(b.n_input, 0);
        expect_error(gnn_be_sample_excluding(ds, seeds, 4, ex, -1, 1, 0, 0, &b), GNN_EINVAL,
                     "-1 excluded edges");
        /* Still right afterwards. */
        seeds[2] = 40;
        gnn_sampler_t *hs;
        gnn_minibatch_t mb;
        assert_int_equal(gnn_sampler_create(&g, 2, fan, &hs), 0);
        assert_int_equal(gnn_sampler_sample(hs, seeds, 4, 9, 1, 2, &mb), 0);
        assert_int_equal(gnn_be_sample(ds, seeds, 4, 9, 1, 2, &b), 0);
        expect_same(be, &b, &mb, "after the refusals");
        /* A negative key id is refused (named) and leaves the draws
         * keyed as they were; NULL keys by node id again. */
        int64_t *kid = malloc(300 * sizeof *kid);
        assert_non_null(kid);
        for (int64_t v = 0; v < 300; v++) kid[v] = v;
        kid[123] = -4;
        expect_error(gnn_be_sampler_set_key_ids(ds, kid), GNN_EINVAL,
                     "key id -4 of node 123 is negative");
        expect_error(gnn_be_sampler_set_key_ids(NULL, kid), GNN_EINVAL, "NULL sampler");
        assert_int_equal(gnn_be_sample(ds, seeds, 4, 9, 1, 2, &b), 0);
        expect_same(be, &b, &mb, "after a refused key id");
        kid[123] = 123; /* the node ids themselves: the same draws */
        assert_int_equal(gnn_be_sampler_set_key_ids(ds, kid), 0);
        assert_int_equal(gnn_be_sample(ds, seeds, 4, 9, 1, 2, &b), 0);
        expect_same(be, &b, &mb, "keyed by the node ids themselves");
        assert_int_equal(gnn_be_sampler_set_key_ids(ds, NULL), 0);
        free(kid);
        /* The node ids read back on the sampler's queue: the batch's. */
        int64_t back[256]; /* at most 4 + 4 x 4 + 20 x 3 nodes */
        assert_true(b.n_input <= 256);
        assert_int_equal(gnn_be_sampler_download(ds, back, b.nodes,
                                                 (size_t)b.n_input * sizeof(int64_t)),
                         0);
        for (int64_t i = 0; i < b.n_input; i++) assert_int_equal(back[i], mb.nodes[i]);
        expect_error(gnn_be_sampler_download(NULL, back, b.nodes, 8), GNN_EINVAL,
                     "gnn_be_sampler_download: NULL sampler");
        expect_error(gnn_be_sampler_download(ds, NULL, b.nodes, 8), GNN_EINVAL,
                     "gnn_be_sampler_download: NULL argument");
        /* Several pieces in one wait: the ids, block 0's offsets, nothing. */
        int64_t ids2[256], ip0[256];
        assert_true(b.n_dst[0] + 1 <= 256);
        void *const dsts[3] = {ids2, ip0, NULL};
        const void *const srcs[3] = {b.nodes, b.indptr[0], NULL};
        const size_t nbytes[3] = {(size_t)b.n_input * sizeof(int64_t),
                                  (size_t)(b.n_dst[0] + 1) * sizeof(int64_t), 0};
        assert_int_equal(gnn_be_sampler_download_n(ds, 3, dsts, srcs, nbytes), 0);
        for (int64_t i = 0; i < b.n_input; i++) assert_int_equal(ids2[i], mb.nodes[i]);
        for (int64_t i = 0; i <= b.n_dst[0]; i++)
            assert_int_equal(ip0[i], mb.blocks[0].csr.indptr[i]);
        expect_error(gnn_be_sampler_download_n(ds, -1, dsts, srcs, nbytes), GNN_EINVAL,
                     "-1 copies");
        expect_error(gnn_be_sampler_download_n(ds, 2, dsts, NULL, nbytes), GNN_EINVAL,
                     "NULL argument");
        assert_int_equal(gnn_be_sampler_download_n(ds, 0, NULL, NULL, NULL), 0);
        /* Released (a GPU's next fill waits for the work queued so far on
         * the device), then filled again: the same batch. */
        assert_int_equal(gnn_be_batch_release(&b), 0);
        assert_int_equal(gnn_be_sample(ds, seeds, 4, 9, 1, 2, &b), 0);
        expect_same(be, &b, &mb, "filled again after its release");
        expect_error(gnn_be_batch_release(NULL), GNN_EINVAL, "gnn_be_batch_release");
        /* Blocks made by the sampler's side: a block out of range, none. */
        gnn_bgraph_t *bg = NULL;
        expect_error(gnn_be_sampler_graph_create(ds, &b, 2, -1, &bg), GNN_EINVAL,
                     "gnn_be_sampler_graph_create: block 2 of a batch of 2");
        assert_null(bg);
        expect_error(gnn_be_sampler_graph_create(NULL, &b, 0, -1, &bg), GNN_EINVAL,
                     "gnn_be_sampler_graph_create: NULL sampler");
        expect_error(gnn_be_sampler_graph_create(ds, &b, 0, 2, &bg), GNN_EINVAL,
                     "attention layout 2 (expected -1, 0 or 1)");
        assert_null(bg);
        expect_error(gnn_be_graph_create_batch(be, &b, 1, -2, &bg), GNN_EINVAL,
                     "gnn_be_graph_create_batch: attention layout -2");
        assert_null(bg);
        /* A batch holding another backend's buffers. */
        assert_int_equal(gnn_be_sampler_create(other, &g, 2, fan, &ds2), 0);
        if (other != be && strcmp(g_backends[k], "cpu") != 0)
            expect_error(gnn_be_sample(ds2, seeds, 4, 9, 1, 2, &b), GNN_EINVAL,
                         "buffers of another backend");
        gnn_minibatch_free(&mb);
        gnn_sampler_free(hs);
        gnn_be_batch_free(&b);
        gnn_be_sampler_free(ds2);
        gnn_be_sampler_free(ds);
        gnn_csr_free(&g);
        gnn_backend_close(other);
        gnn_backend_close(be);
    }
}

/* ---- Rows held elsewhere ------------------------------------------------------ */

/* The holder of every row (the remote hook): draws from the whole graph,
 * per relation when asked, keyed by kid, less the batch's excluded edges
 * (ex); records each call's hop and row count. */
typedef struct {
    const gnn_csr_t *whole;
    const int32_t *etype; /* whole's relations, or NULL */
    const int64_t *kid;   /* whole's key ids, or NULL */
    gnn_sampler_excl_t *ex;
    int calls, hop[32];
    int64_t n[32];
} holder_t;

static int holder_draw(void *ctx, int h, int fanout, uint64_t key, const int64_t *v, int64_t n,
                       int64_t *cnt, int64_t **src, int32_t **rel)
{
    holder_t *ho = ctx;
    assert_true(ho->calls < 32);
    ho->hop[ho->calls] = h;
    ho->n[ho->calls++] = n;
    assert_true(!rel || ho->etype);
    if (n < 0) return (int)n;
    const gnn_csr_t *g = ho->whole;
    int64_t total = 0, longest = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t d = g->indptr[v[k] + 1] - g->indptr[v[k]];
        total += d;
        longest = d > longest ? d : longest;
    }
    *src = gnn_malloc_array((size_t)total + 1, sizeof **src);
    if (rel) *rel = gnn_malloc_array((size_t)total + 1, sizeof **rel);
    int64_t *kept = malloc((size_t)(longest + 1) * sizeof *kept);
    int32_t *krel = malloc((size_t)(longest + 1) * sizeof *krel);
    assert_true(*src && (!rel || *rel) && kept && krel);
    int64_t at = 0;
    for (int64_t k = 0; k < n; k++) {
        const int64_t a = g->indptr[v[k]];
        int64_t d = g->indptr[v[k] + 1] - a;
        const int64_t *row = g->indices + a;
        const int32_t *et = ho->etype ? ho->etype + a : NULL;
        if (ho->ex && gnn_sampler_excl_has_row(ho->ex, v[k])) { /* less the excluded */
            int64_t w = 0;
            for (int64_t q = 0; q < d; q++)
                if (gnn_sampler_excl_filter(ho->ex, v[k], row + q, 1, NULL, NULL)) {
                    kept[w] = row[q];
                    if (et) krel[w] = et[q];
                    w++;
                }
            d = w;
            row = kept;
            et = et ? krel : NULL;
        }
        const int64_t id = ho->kid ? ho->kid[v[k]] : v[k];
        const int64_t c = rel ? gnn_sampler_draw_row_typed(row, et, d, fanout, key, id, h,
                                                           *src + at, *rel + at)
                              : gnn_sampler_draw_row(row, d, fanout, key, id, h, *src + at);
        assert_true(c >= 0);
        cnt[k] = c;
        at += c;
    }
    free(kept);
    free(krel);
    return 0;
}

/*
 * A part of a graph of N = 2400 nodes: its graph holds nodes [0, 1500),
 * rows [0, 900) (their sources all within it), the rest drawn by the
 * holder through the hook, node ids up to N (gnn_be_sampler_set_remote).
 * Against the host sampler over the same part with the same hook, and
 * against the whole graph's sampler: the same batches entry for entry,
 * the hook called at the same hops with the same rows, from hop 0 (seeds
 * beyond the part's graph) and from hop 1, drawn anew and sampling once,
 * keyed by ids and not, typed (3 relations) and not, leaving out an edge
 * batch's edges (the holder leaves them out of its rows). Errors: a seed
 * beyond the rows held before the first remote hop, a seed beyond the ids
 * (also after they shrink), a NULL seed array, a row held elsewhere with
 * excluded edges its holder cannot leave out (checked first, as the host
 * sampler does); each handed to the hook at the next exchange as the host
 * sampler hands it; bad settings named. The sampler is right afterwards.
 */
static void test_remote_rows(void **state)
{
    (void)state;
    const int64_t N = 2400, M = 1500, held = 900, m = 30000;
    static const int fan[][4] = {{2, 5, 3}, {3, 4, 10, 3}, {2, -1, 2}};
    for (int k = 0; k < g_nbackends; k++) {
        gnn_backend_t *be = open_or_skip(g_backends[k]);
        if (!be) continue;
        uint64_t s = g_seed ^ 0x72656d6f7465;
        /* The whole graph (its held rows' sources below M) and the part. */
        int64_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
        assert_true(src && dst);
        int64_t mp = 0;
        for (int64_t i = 0; i < m; i++) {
            const int64_t v = tu_rng_next(&s) % 4 == 0 ? 3 : rng_below(&s, N);
            dst[i] = v;
            src[i] = rng_below(&s, v < held ? M : N);
            mp += v < held;
        }
        gnn_csr_t g, part;
        assert_int_equal(gnn_csr_from_edges(N, m, src, dst, NULL, GNN_BUILD_SORT, &g), 0);
        int64_t *psrc = malloc((size_t)(mp + 1) * sizeof *psrc),
                *pdst = malloc((size_t)(mp + 1) * sizeof *pdst);
        assert_true(psrc && pdst);
        for (int64_t i = 0, w = 0; i < m; i++)
            if (dst[i] < held) psrc[w] = src[i], pdst[w++] = dst[i];
        assert_int_equal(gnn_csr_from_edges(M, mp, psrc, pdst, NULL, GNN_BUILD_SORT, &part), 0);
        free(src), free(dst), free(psrc), free(pdst);
        const int R = 3;
        int32_t *wet = make_relations(&g, R); /* rows regrouped: the part from it again */
        int32_t *pet = malloc((size_t)(part.nnz + 1) * sizeof *pet);
        assert_non_null(pet);
        for (int64_t v = 0; v < held; v++) {
            assert_int_equal(part.indptr[v + 1] - part.indptr[v], g.indptr[v + 1] - g.indptr[v]);
            memcpy(part.indices + part.indptr[v], g.indices + g.indptr[v],
                   (size_t)(g.indptr[v + 1] - g.indptr[v]) * sizeof *part.indices);
            memcpy(pet + part.indptr[v], wet + g.indptr[v],
                   (size_t)(g.indptr[v + 1] - g.indptr[v]) * sizeof *pet);
        }
        part.flags &= ~(unsigned)GNN_CSR_SORTED;
        int64_t *kid = random_keys(&s, N);
        gnn_bbatch_t b;
        memset(&b, 0, sizeof b);
        int cases = 0;
        for (size_t f = 0; f < sizeof fan / sizeof fan[0]; f++)
            for (int variant = 0; variant < 16; variant++) {
                const int first = variant & 1, once = variant >> 1 & 1, keyed = variant >> 2 & 1,
                          typed = variant >> 3 & 1, L = fan[f][0];
                holder_t hh = {.whole = &g, .etype = typed ? wet : NULL,
                               .kid = keyed ? kid : NULL},
                         hd = hh;
                gnn_sampler_t *hs, *ws;
                gnn_bsampler_t *ds;
                gnn_sampler_remote_t hr = {.n_held = held, .first_hop = first, .excludes = 1,
                                           .draw = holder_draw, .ctx = &hh};
                gnn_be_remote_t dr = {.n_held = held, .n_ids = N, .first_hop = first,
                                      .excludes = 1, .draw = holder_draw, .ctx = &hd};
                assert_int_equal(gnn_sampler_create(&part, L, fan[f] + 1, &hs), 0);
                assert_int_equal(gnn_sampler_create(&g, L, fan[f] + 1, &ws), 0);
                assert_int_equal(gnn_be_sampler_create(be, &part, L, fan[f] + 1, &ds), 0);
                assert_int_equal(gnn_sampler_set_remote(hs, &hr), 0);
                assert_int_equal(gnn_be_sampler_set_remote(ds, &dr), 0);
                assert_int_equal(gnn_sampler_set_once(hs, once), 0);
                assert_int_equal(gnn_sampler_set_once(ws, once), 0);
                assert_int_equal(gnn_be_sampler_set_once(ds, once), 0);
                if (keyed) {
                    assert_int_equal(gnn_sampler_set_key_ids(hs, kid), 0);
                    assert_int_equal(gnn_sampler_set_key_ids(ws, kid), 0);
                    assert_int_equal(gnn_be_sampler_set_key_ids(ds, kid), 0);
                }
                if (typed) {
                    assert_int_equal(gnn_sampler_set_relations(hs, pet, R), 0);
                    assert_int_equal(gnn_sampler_set_relations(ws, wet, R), 0);
                    assert_int_equal(gnn_be_sampler_set_relations(ds, pet, R), 0);
                }
                for (int z = 0; z < 3; z++) {
                    /* 0, 1 and 120 seeds: from hop 0 anywhere, else held */
                    const int64_t n = z == 0 ? 0 : z == 1 ? 1 : 120;
                    int64_t *seeds = pick_seeds(&s, first ? held : N, n);
                    uint64_t sd = tu_rng_next(&s), ep = (uint64_t)z, bt = f * 16 + variant;
                    int64_t ne = 0, *ex = NULL;
                    if (z == 2 && variant % 3 == 0) ex = pick_excluded(&s, &g, seeds, n, &ne);
                    char what[200];
                    snprintf(what, sizeof what,
                             "%s, remote rows from hop %d, fanouts #%zu%s%s%s, %" PRId64
                             " seeds, %" PRId64 " excluded edges",
                             g_backends[k], first, f, once ? ", once" : "", keyed ? ", keyed" : "",
                             typed ? ", typed" : "", n, ne);
                    gnn_minibatch_t mh, mw;
                    if (ne) {
                        assert_int_equal(gnn_sampler_excl_create(ex, ne, &hh.ex), 0);
                        assert_int_equal(gnn_sampler_excl_create(ex, ne, &hd.ex), 0);
                    }
                    hh.calls = hd.calls = 0;
                    assert_int_equal(
                        gnn_sampler_sample_excluding(hs, seeds, n, ex, ne, sd, ep, bt, &mh), 0);
                    assert_int_equal(
                        gnn_be_sample_excluding(ds, seeds, n, ex, ne, sd, ep, bt, &b), 0);
                    expect_same(be, &b, &mh, what);
                    assert_int_equal(hd.calls, hh.calls);
                    assert_int_equal(hd.calls, L - first);
                    for (int c = 0; c < hd.calls; c++) {
                        assert_int_equal(hd.hop[c], hh.hop[c]);
                        assert_int_equal(hd.n[c], hh.n[c]);
                    }
                    /* ... which is the whole graph's batch */
                    assert_int_equal(
                        gnn_sampler_sample_excluding(ws, seeds, n, ex, ne, sd, ep, bt, &mw), 0);
                    expect_same(be, &b, &mw, what);
                    cases += n > 0;
                    gnn_minibatch_free(&mh);
                    gnn_minibatch_free(&mw);
                    gnn_sampler_excl_free(hh.ex), gnn_sampler_excl_free(hd.ex);
                    hh.ex = hd.ex = NULL;
                    free(ex);
                    free(seeds);
                }
                if (variant == 0 || variant == 1) {
                    /* A seed beyond the rows held (from hop 1: refused at
                     * hop 0, handed to the hook at hop 1), beyond the ids;
                     * an excluded edge at a row held elsewhere whose
                     * holder cannot leave it out. */
                    int64_t bad[3] = {4, held + 7, 11};
                    hd.calls = 0;
                    int rc = gnn_be_sample(ds, bad, 3, 1, 2, 3, &b);
                    if (first) {
                        expect_error(rc, GNN_EINVAL, "whose row is not held here (remote draws "
                                                     "start at hop 1)");
                        assert_int_equal(hd.calls, 1);
                        assert_true(hd.hop[0] == 1 && hd.n[0] == GNN_EINVAL);
                    } else {
                        assert_int_equal(rc, 0);
                    }
                    bad[1] = N;
                    hd.calls = 0;
                    char want[120];
                    snprintf(want, sizeof want, "seed %" PRId64 " at position 1 outside [0, %" PRId64
                             ")", N, N);
                    expect_error(gnn_be_sample(ds, bad, 3, 1, 2, 3, &b), GNN_EINVAL, want);
                    assert_true(hd.calls == 1 && hd.hop[0] == first && hd.n[0] == GNN_EINVAL);
                    /* A bad call (a NULL seed array): handed over alike. */
                    hd.calls = 0;
                    expect_error(gnn_be_sample(ds, NULL, 3, 1, 2, 3, &b), GNN_EINVAL,
                                 "NULL argument");
                    assert_true(hd.calls == 1 && hd.hop[0] == first && hd.n[0] == GNN_EINVAL);
                    /* Excluded edges at a row held elsewhere (checked first,
                     * as the host sampler checks them, before first_hop too). */
                    gnn_be_remote_t nx = dr;
                    nx.excludes = 0;
                    assert_int_equal(gnn_be_sampler_set_remote(ds, &nx), 0);
                    int64_t far[2] = {5, held + 30}, xe[2] = {held + 30, 5};
                    hd.calls = 0;
                    expect_error(gnn_be_sample_excluding(ds, far, 2, xe, 1, 1, 2, 3, &b),
                                 GNN_EUNSUPPORTED,
                                 "hop 0 reaches a node with excluded edges whose row is "
                                 "held elsewhere");
                    assert_true(hd.calls == 1 && hd.hop[0] == first &&
                                hd.n[0] == GNN_EUNSUPPORTED);
                    /* Fewer node ids: seeds checked against them. */
                    nx = dr;
                    nx.n_ids = M + 10;
                    assert_int_equal(gnn_be_sampler_set_remote(ds, &nx), 0);
                    int64_t beyond[2] = {5, M + 10};
                    expect_error(gnn_be_sample(ds, beyond, 2, 1, 2, 3, &b), GNN_EINVAL,
                                 "seed 1510 at position 1 outside [0, 1510)");
                    assert_int_equal(gnn_be_sampler_set_remote(ds, &dr), 0);
                    /* Right afterwards. */
                    int64_t ok[2] = {6, 12};
                    gnn_minibatch_t mh;
                    hh.calls = hd.calls = 0;
                    assert_int_equal(gnn_sampler_sample(hs, ok, 2, 4, 5, 6, &mh), 0);
                    assert_int_equal(gnn_be_sample(ds, ok, 2, 4, 5, 6, &b), 0);
                    expect_same(be, &b, &mh, "after the refusals");
                    gnn_minibatch_free(&mh);
                    /* Bad settings, named; the sampler keeps its own. */
                    gnn_be_remote_t br = dr;
                    br.n_held = M + 1;
                    expect_error(gnn_be_sampler_set_remote(ds, &br), GNN_EINVAL,
                                 "1501 rows held of a graph of 1500 nodes");
                    br = dr;
                    br.n_ids = M - 1;
                    expect_error(gnn_be_sampler_set_remote(ds, &br), GNN_EINVAL,
                                 "node ids below 1499 (at least the graph's 1500");
                    br = dr;
                    br.draw = NULL;
                    expect_error(gnn_be_sampler_set_remote(ds, &br), GNN_EINVAL,
                                 "remote rows without a hook");
                    expect_error(gnn_be_sampler_set_remote(NULL, &dr), GNN_EINVAL,
                                 "NULL sampler");
                }
                gnn_be_sampler_free(ds);
                gnn_sampler_free(hs);
                gnn_sampler_free(ws);
            }
        print_message("%s: %d batches with rows held elsewhere\n", g_backends[k], cases);
        gnn_be_batch_free(&b);
        free(kid);
        free(wet);
        free(pet);
        gnn_csr_free(&part);
        gnn_csr_free(&g);
        gnn_backend_close(be);
    }
}

/* Another thread's calls while this one checks a capture's rules: a wait
 * and an emulated block build, neither noted; nor may it end the rules. */
typedef struct {
    gnn_backend_t *be;
    const gnn_bbatch_t *b;
    int rc_sync, rc_make, rc_end;
    char end_msg[256];
} other_thread_t;

static void *other_thread(void *arg)
{
    other_thread_t *o = arg;
    gnn_bgraph_t *g = NULL;
    o->rc_sync = gnn_be_sync(o->be);
    o->rc_make = gnn_be_graph_create_batch(o->be, o->b, 0, -1, &g);
    gnn_be_graph_free(g);
    o->rc_end = gnn_be_capture_rules_end(o->be);
    snprintf(o->end_msg, sizeof o->end_msg, "%s", gnn_error_message());
    return NULL;
}

/*
 * A batch's blocks under a GPU capture's rules (cpu-as-gpu): made on the
 * sampler's work queue (gnn_be_sampler_graph_create), no wait for the
 * steps queued before; made on the backend's (gnn_be_graph_create_batch),
 * one, named. The rules are the thread's that began them.
 */
static void test_block_rules(void **state)
{
    (void)state;
    gnn_backend_t *be = NULL;
    assert_int_equal(gnn_backend_open("cpu-as-gpu", &be), 0);
    uint64_t s = g_seed ^ 0x72756c;
    gnn_csr_t g;
    make_graph(&s, 400, 4000, 1, &g);
    const int fan[2] = {5, 3};
    gnn_bsampler_t *ds = NULL;
    assert_int_equal(gnn_be_sampler_create(be, &g, 2, fan, &ds), 0);
    int64_t *seeds = pick_seeds(&s, 400, 32);
    gnn_bbatch_t b;
    memset(&b, 0, sizeof b);
    assert_int_equal(gnn_be_sample(ds, seeds, 32, 3, 0, 0, &b), 0);
    for (int l = 0; l < 2; l++) {
        gnn_bgraph_t *bg = NULL;
        assert_int_equal(gnn_be_capture_rules_begin(be), 0);
        assert_int_equal(gnn_be_sampler_graph_create(ds, &b, l, l ? 1 : -1, &bg), 0);
        assert_int_equal(gnn_be_capture_rules_end(be), 0);
        gnn_be_graph_free(bg);
        bg = NULL;
        assert_int_equal(gnn_be_capture_rules_begin(be), 0);
        assert_int_equal(gnn_be_graph_create_batch(be, &b, l, l ? 1 : -1, &bg), 0);
        assert_non_null(bg);
        expect_error(gnn_be_capture_rules_end(be), GNN_ECUDA,
                     "a batch's block made on the backend's stream (a wait for it) inside "
                     "captured work");
        gnn_be_graph_free(bg);
    }
    assert_int_equal(gnn_be_capture_rules_begin(be), 0);
    other_thread_t o = {.be = be, .b = &b};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &o), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(o.rc_sync, 0);
    assert_int_equal(o.rc_make, 0);
    assert_int_equal(o.rc_end, GNN_EINVAL);
    if (!strstr(o.end_msg, "not begun on this thread"))
        fail_msg("the other thread's end: \"%s\"", o.end_msg);
    assert_int_equal(gnn_be_capture_rules_end(be), 0);
    free(seeds);
    gnn_be_batch_free(&b);
    gnn_be_sampler_free(ds);
    gnn_csr_free(&g);
    gnn_backend_close(be);
}

int main(int argc, char **argv)
{
    g_seed = tu_seed();
    for (int i = 1; i < argc && g_nbackends < 8; i++) g_backends[g_nbackends++] = argv[i];
    if (!g_nbackends) {
        g_backends[g_nbackends++] = "cpu";
        g_backends[g_nbackends++] = "cpu-as-gpu";
    }
    if (g_nbackends == 1 && !strcmp(g_backends[0], "cuda") && gnn_backend_device_count() == 0) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_batches),
        cmocka_unit_test(test_typed_batches),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_remote_rows),
        cmocka_unit_test(test_block_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
