/*
 * Tests of the mini-batch loader (sampler/loader.c).
 *
 * Reproducibility: on a random graph with hubs and empty rows, one epoch of
 * 700 seeds in batches of 64 with fanouts 5,3 gives, for 0 threads and for
 * 1, 2 and 4 worker threads with prefetch depths 1 to 5, exactly the
 * mini-batches of gnn_sampler_sample called directly on the seeds permuted
 * by gnn_loader_shuffle (batch b = perm[b*B ..], sampled under
 * (seed, epoch, b)), in index order; so every configuration gives the same
 * sequence. Every batch carries the feature rows of its input nodes and the
 * labels of its seeds; every seed is a seed of exactly one batch per epoch,
 * the last batch holds the remainder, and after the last batch next gives
 * NULL, repeatedly. The counters (batches, sampled edges, input nodes)
 * match the sums over the batches and are reset by gnn_loader_start.
 *
 * The permutation: a permutation, a function of (seed, epoch) only, other
 * for another seed or epoch; the 24 orders of 4 elements equally likely
 * (chi-square at significance 0.001 over 24000 epochs); shuffle off keeps
 * the given order.
 *
 * Hooks: prepare runs after the gather with user[] zeroed, its result is
 * seen by the trainer, unprepare runs once per built batch; no batch is
 * built more than `prefetch` ahead of the last one given back. A prepare
 * hook (or the sampler, on a bad seed) failing on batch 3 ends the epoch
 * with its error and "batch 3 of epoch E" for 0 and 2 threads, with every
 * built batch undone; the loader then starts a new epoch normally. Freeing
 * the loader mid-epoch, with a batch held and others prefetched or being
 * built, undoes them all and does not hang (the sanitizer build checks the
 * leaks). Errors: out-of-range options, bad fanouts, a bad batch size, a
 * start while an epoch runs, a second next before release. Every
 * allocation of create, start and an epoch (0 threads) made to fail in
 * turn gives a clean GNN_ENOMEM, and the loader recovers. Edge batches:
 * the hook's seeds sampled with the batch's own edges left out (none in
 * any block), each edge in one batch, a failing hook ends the epoch.
 * Given batches: their bounds kept, empty ones included.
 * Prints its seed; set GNN_TEST_SEED to replay another.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "tests/common/testrng.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "sampler/loader.h"
#include "tests/common/testutil.h"

#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_seed;

enum { N_NODES = 2000, FEAT_DIM = 7, N_SEEDS = 700, BATCH = 64, LAYERS = 2 };
static const int k_fanouts[LAYERS] = {5, 3};

/* ---- Data: a graph with features and labels ------------------------------------ */

static int64_t rng_below(uint64_t *state, int64_t bound)
{
    return (int64_t)(tu_rng_next(state) % (uint64_t)bound);
}

static float feat_val(gnn_vid_t v, int64_t k) { return (float)(v * 8 + k) + 0.5f; }
static int64_t label_of(gnn_vid_t v) { return 3 * v + 1; }

typedef struct {
    gnn_csr_t g;
    float *feat;            /* N_NODES x FEAT_DIM */
    int64_t *labels;        /* N_NODES */
    gnn_vid_t seeds[N_SEEDS]; /* distinct, hub 0 first, empty rows among them */
    gnn_sampler_t *sampler; /* for the reference batches */
} data_t;

/*
 * N_NODES nodes: 16000 uniform edges, none into rows v % 7 == 3 (empty
 * rows), 4 hubs (v = 0, 7, 14, 21) with 300 extra in-edges each; then
 * deduplicated without self loops.
 */
static void make_data(data_t *d, uint64_t salt)
{
    uint64_t rng = g_seed ^ salt;
    const gnn_eid_t m = 16000, hubs = 4, hub_deg = 300, total = m + hubs * hub_deg;
    gnn_vid_t *src = malloc((size_t)total * sizeof *src);
    gnn_vid_t *dst = malloc((size_t)total * sizeof *dst);
    assert_true(src && dst);
    gnn_eid_t e = 0;
    for (gnn_eid_t i = 0; i < m; i++, e++) {
        gnn_vid_t v;
        do v = rng_below(&rng, N_NODES);
        while (v % 7 == 3);
        src[e] = rng_below(&rng, N_NODES);
        dst[e] = v;
    }
    for (gnn_eid_t h = 0; h < hubs; h++)
        for (gnn_eid_t i = 0; i < hub_deg; i++, e++) {
            src[e] = rng_below(&rng, N_NODES);
            dst[e] = 7 * h;
        }
    assert_int_equal(gnn_csr_from_edges(N_NODES, total, src, dst, NULL,
                                        GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS, &d->g),
                     0);
    free(src);
    free(dst);

    d->feat = malloc((size_t)N_NODES * FEAT_DIM * sizeof *d->feat);
    d->labels = malloc((size_t)N_NODES * sizeof *d->labels);
    assert_true(d->feat && d->labels);
    for (gnn_vid_t v = 0; v < N_NODES; v++) {
        for (int64_t k = 0; k < FEAT_DIM; k++) d->feat[v * FEAT_DIM + k] = feat_val(v, k);
        d->labels[v] = label_of(v);
    }

    /* N_SEEDS distinct ids in random order (partial Fisher-Yates), hub 0 first. */
    gnn_vid_t *all = malloc((size_t)N_NODES * sizeof *all);
    assert_non_null(all);
    for (gnn_vid_t i = 0; i < N_NODES; i++) all[i] = i;
    for (int64_t i = 0; i < N_SEEDS; i++) {
        int64_t j = i + rng_below(&rng, N_NODES - i);
        gnn_vid_t t = all[i];
        all[i] = all[j];
        all[j] = t;
    }
    for (gnn_vid_t j = 0; j < N_NODES; j++)
        if (all[j] == 0) {
            all[j] = all[0];
            all[0] = 0;
            break;
        }
    memcpy(d->seeds, all, sizeof d->seeds);
    free(all);
    int empty = 0;
    for (int i = 0; i < N_SEEDS; i++)
        empty += d->g.indptr[d->seeds[i] + 1] == d->g.indptr[d->seeds[i]];
    assert_true(empty > 0);
    assert_int_equal(gnn_sampler_create(&d->g, LAYERS, k_fanouts, &d->sampler), 0);
}

static void free_data(data_t *d)
{
    gnn_sampler_free(d->sampler);
    free(d->feat);
    free(d->labels);
    gnn_csr_free(&d->g);
}

static gnn_loader_opts_t opts_of(const data_t *d, int threads, int prefetch, int with_feat)
{
    gnn_loader_opts_t o = {
        .graph = &d->g,
        .layers = LAYERS,
        .fanouts = k_fanouts,
        .feat = with_feat ? d->feat : NULL,
        .feat_dim = with_feat ? FEAT_DIM : 0,
        .labels = with_feat ? d->labels : NULL,
        .threads = threads,
        .prefetch = prefetch,
    };
    return o;
}

/* ---- The reference epoch: the sampler called directly ---------------------------- */

typedef struct {
    const gnn_vid_t *seeds; /* as given to the loader */
    gnn_vid_t *perm;        /* the epoch's order */
    int64_t n, batch_size, n_batches;
    uint64_t seed, epoch;
    gnn_minibatch_t *mb; /* n_batches */
} ref_t;

static void make_ref(const data_t *d, const gnn_vid_t *seeds, int64_t n, int64_t batch_size,
                     int shuffle, uint64_t seed, uint64_t epoch, ref_t *r)
{
    r->seeds = seeds;
    r->n = n;
    r->batch_size = batch_size;
    r->n_batches = (n + batch_size - 1) / batch_size;
    r->seed = seed;
    r->epoch = epoch;
    r->perm = malloc(((size_t)n + 1) * sizeof *r->perm);
    r->mb = calloc((size_t)r->n_batches + 1, sizeof *r->mb);
    assert_true(r->perm && r->mb);
    if (n) memcpy(r->perm, seeds, (size_t)n * sizeof *seeds);
    if (shuffle) gnn_loader_shuffle(r->perm, n, seed, epoch);
    for (int64_t b = 0; b < r->n_batches; b++) {
        int64_t lo = b * batch_size, cnt = n - lo < batch_size ? n - lo : batch_size;
        assert_int_equal(gnn_sampler_sample(d->sampler, r->perm + lo, cnt, seed, epoch,
                                            (uint64_t)b, &r->mb[b]),
                         0);
    }
}

static void free_ref(ref_t *r)
{
    for (int64_t b = 0; b < r->n_batches; b++) gnn_minibatch_free(&r->mb[b]);
    free(r->mb);
    free(r->perm);
}

/* a equals the reference r: node list, every block's CSR, edge counts. */
static void assert_same_minibatch(const gnn_minibatch_t *a, const gnn_minibatch_t *r)
{
    assert_int_equal(a->layers, r->layers);
    assert_int_equal(a->n_seeds, r->n_seeds);
    assert_int_equal(a->n_input, r->n_input);
    assert_int_equal(a->edges_total, r->edges_total);
    assert_true(a->n_input > 0);
    assert_memory_equal(a->nodes, r->nodes, (size_t)a->n_input * sizeof *a->nodes);
    for (int l = 0; l < a->layers; l++) {
        const gnn_csr_t *x = &a->blocks[l].csr, *y = &r->blocks[l].csr;
        assert_int_equal(x->n_rows, y->n_rows);
        assert_int_equal(x->n_cols, y->n_cols);
        assert_int_equal(x->nnz, y->nnz);
        assert_int_equal(x->flags, y->flags);
        assert_int_equal(a->edges[l], r->edges[l]);
        assert_memory_equal(x->indptr, y->indptr, ((size_t)x->n_rows + 1) * sizeof *x->indptr);
        if (x->nnz)
            assert_memory_equal(x->indices, y->indices, (size_t)x->nnz * sizeof *x->indices);
        assert_ptr_equal(a->blocks[l].src_ids, a->nodes);
    }
}

/* ---- Hooks ------------------------------------------------------------------------- */

/* Shared with the worker threads, which must not assert: they count and
 * flag, the test thread checks. */
typedef struct {
    atomic_int prepared, unprepared, live; /* hook calls; user[0] buffers held */
    atomic_int fail_at;                    /* batch the prepare hook refuses; -1: none */
    int slow_ms;                           /* batches after fail_at take this long */
    atomic_llong released;                 /* batches given back (counted before release) */
    int ahead;                             /* at most this many built ahead of released */
    int with_feat;
    atomic_int bad; /* first problem a hook saw (0: none) */
} hooks_t;

static void hooks_init(hooks_t *h, int ahead, int with_feat)
{
    atomic_init(&h->prepared, 0);
    atomic_init(&h->unprepared, 0);
    atomic_init(&h->live, 0);
    atomic_init(&h->fail_at, -1);
    h->slow_ms = 0;
    atomic_init(&h->released, 0);
    h->ahead = ahead;
    h->with_feat = with_feat;
    atomic_init(&h->bad, 0);
}

static void flag(hooks_t *h, int what)
{
    int zero = 0;
    atomic_compare_exchange_strong(&h->bad, &zero, what);
}

static int prepare_hook(void *ctx, gnn_loader_batch_t *b)
{
    hooks_t *h = ctx;
    atomic_fetch_add(&h->prepared, 1);
    for (int l = 0; l < GNN_SAMPLER_MAX_LAYERS; l++)
        if (b->user[l]) flag(h, 1); /* not zeroed */
    if (b->mb.layers != LAYERS || b->mb.n_seeds < 1) flag(h, 2); /* not sampled yet */
    if (h->with_feat) {
        gnn_vid_t last = b->mb.n_input - 1, v = b->mb.nodes[last];
        if (!b->x || b->x[last * FEAT_DIM + FEAT_DIM - 1] != feat_val(v, FEAT_DIM - 1))
            flag(h, 3); /* not gathered yet */
        if (!b->y || b->y[0] != label_of(b->mb.nodes[0])) flag(h, 4);
    }
    if (h->ahead > 0 && b->index >= atomic_load(&h->released) + h->ahead) flag(h, 5);
    int fail_at = atomic_load(&h->fail_at);
    if (b->index == fail_at) return GNN_FAIL(GNN_EINVAL, "hook refused batch %" PRId64, b->index);
    if (fail_at >= 0 && b->index > fail_at && h->slow_ms > 0) {
        /* Still being built when the trainer meets the failure. */
        struct timespec ts = {0, (long)h->slow_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    int64_t *p = malloc(sizeof *p);
    if (!p) {
        flag(h, 6);
        return GNN_FAIL(GNN_ENOMEM, "hook");
    }
    *p = b->index;
    b->user[0] = p;
    atomic_fetch_add(&h->live, 1);
    return 0;
}

static void unprepare_hook(void *ctx, gnn_loader_batch_t *b)
{
    hooks_t *h = ctx;
    atomic_fetch_add(&h->unprepared, 1);
    int64_t *p = b->user[0];
    if (p) {
        if (*p != b->index) flag(h, 7);
        free(p);
        b->user[0] = NULL;
        atomic_fetch_sub(&h->live, 1);
    }
}

static void with_hooks(gnn_loader_opts_t *o, hooks_t *h)
{
    o->prepare = prepare_hook;
    o->unprepare = unprepare_hook;
    o->ctx = h;
}

/* ---- One epoch, checked ------------------------------------------------------------ */

typedef struct {
    int64_t batches, edges, inputs;
} sums_t;

/* The batch b of the loader against batch i of the reference epoch. */
static void check_batch(const ref_t *r, const gnn_loader_batch_t *b, int64_t i, int with_feat)
{
    assert_int_equal(b->index, i);
    int64_t lo = i * r->batch_size, cnt = r->n - lo < r->batch_size ? r->n - lo : r->batch_size;
    assert_int_equal(b->mb.n_seeds, cnt);
    assert_memory_equal(b->mb.nodes, r->perm + lo, (size_t)cnt * sizeof *r->perm);
    assert_same_minibatch(&b->mb, &r->mb[i]);
    if (with_feat) {
        assert_non_null(b->x);
        assert_non_null(b->y);
        for (gnn_vid_t k = 0; k < b->mb.n_input; k++)
            for (int64_t j = 0; j < FEAT_DIM; j++)
                assert_true(b->x[k * FEAT_DIM + j] == feat_val(b->mb.nodes[k], j));
        for (gnn_vid_t k = 0; k < b->mb.n_seeds; k++)
            assert_int_equal(b->y[k], label_of(b->mb.nodes[k]));
    } else {
        assert_null(b->x);
        assert_null(b->y);
    }
    assert_true(b->sample_s >= 0 && b->gather_s >= 0 && b->prepare_s >= 0);
}

/*
 * Take every batch of the epoch started on ld (the reference r) in order,
 * check each, give it back; then next gives NULL, repeatedly. Every seed
 * of r is a seed exactly once. With hooks h, the hook's mark is there.
 */
static void drain_epoch(const ref_t *r, gnn_loader_t *ld, hooks_t *h, int with_feat, sums_t *s)
{
    memset(s, 0, sizeof *s);
    assert_int_equal(gnn_loader_batches(ld), r->n_batches);
    int *seen = calloc(N_NODES, sizeof *seen);
    assert_non_null(seen);
    int64_t seeds = 0;
    for (int64_t i = 0;; i++) {
        gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        if (!b) {
            assert_int_equal(i, r->n_batches);
            break;
        }
        assert_true(i < r->n_batches);
        check_batch(r, b, i, with_feat);
        if (h) {
            assert_non_null(b->user[0]);
            assert_int_equal(*(int64_t *)b->user[0], i);
        }
        for (gnn_vid_t k = 0; k < b->mb.n_seeds; k++) seen[b->mb.nodes[k]]++;
        seeds += b->mb.n_seeds;
        s->batches++;
        s->edges += b->mb.edges_total;
        s->inputs += b->mb.n_input;
        if (h) atomic_fetch_add(&h->released, 1);
        gnn_loader_release(ld, b);
    }
    for (int k = 0; k < 3; k++) {
        gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        assert_null(b);
    }
    assert_int_equal(seeds, r->n);
    for (int64_t i = 0; i < r->n; i++) assert_int_equal(seen[r->seeds[i]], 1);
    free(seen);
}

static void assert_stats(const gnn_loader_t *ld, const sums_t *s)
{
    gnn_loader_stats_t st;
    gnn_loader_stats(ld, &st);
    assert_int_equal(st.batches, s->batches);
    assert_int_equal(st.sampled_edges, s->edges);
    assert_int_equal(st.input_nodes, s->inputs);
    assert_true(st.stalls >= 0 && st.stalls <= st.batches);
    assert_true(st.stall_s >= 0 && st.sample_s >= 0 && st.gather_s >= 0 && st.prepare_s >= 0);
}

static void assert_stats_zero(const gnn_loader_t *ld)
{
    sums_t zero = {0, 0, 0};
    assert_stats(ld, &zero);
    gnn_loader_stats_t st;
    gnn_loader_stats(ld, &st);
    assert_int_equal(st.stalls, 0);
    assert_true(st.stall_s == 0 && st.sample_s == 0 && st.gather_s == 0 && st.prepare_s == 0);
}

/* ---- Reproducibility ------------------------------------------------------------------ */

static const int k_configs[][2] = {{0, 1}, {1, 1}, {1, 3}, {2, 2}, {4, 5}}; /* threads, prefetch */
enum { N_CONFIGS = sizeof k_configs / sizeof k_configs[0] };

/* Two epochs on each configuration equal the sampler called directly, so
 * all configurations give the same batches; the counters follow. */
static void test_same_batches(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0x10AD);
    ref_t r3, r4;
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, g_seed, 3, &r3);
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, g_seed, 4, &r4);
    assert_int_equal(r3.n_batches, 11); /* 10 of 64 and one of 60 */
    assert_int_equal(r3.mb[10].n_seeds, N_SEEDS % BATCH);
    int64_t edges = 0, inputs = 0;
    for (int c = 0; c < N_CONFIGS; c++) {
        gnn_loader_opts_t o = opts_of(&d, k_configs[c][0], k_configs[c][1], 1);
        gnn_loader_t *ld = NULL;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_non_null(ld);
        const ref_t *refs[] = {&r3, &r4};
        for (int e = 0; e < 2; e++) {
            assert_int_equal(
                gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, refs[e]->epoch), 0);
            assert_stats_zero(ld); /* reset by start */
            sums_t s;
            drain_epoch(refs[e], ld, NULL, 1, &s);
            assert_int_equal(s.batches, 11);
            assert_stats(ld, &s);
            if (k_configs[c][0] == 0) {
                gnn_loader_stats_t st;
                gnn_loader_stats(ld, &st);
                assert_int_equal(st.stalls, 0); /* built on demand, never waited for */
            }
            if (e == 0) {
                if (c == 0) {
                    edges = s.edges;
                    inputs = s.inputs;
                }
                assert_int_equal(s.edges, edges);
                assert_int_equal(s.inputs, inputs);
            }
        }
        printf("threads %d prefetch %d: %" PRId64 " sampled edges, %" PRId64 " input nodes\n",
               k_configs[c][0], k_configs[c][1], edges, inputs);
        gnn_loader_free(ld);
    }
    free_ref(&r3);
    free_ref(&r4);
    free_data(&d);
}

/* Epoch shapes: an exact multiple, one batch larger than the seed list,
 * batches of one, no seeds; shuffle off keeps the given order; no features
 * gives NULL x and y. */
static void test_epoch_shape(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0x5A9E);
    const int64_t shapes[][2] = {{640, 64}, {700, 1000}, {5, 1}, {1, 64}};
    const int cfg[][3] = {{0, 1, 0}, {2, 3, 0}, {2, 3, 1}}; /* threads, prefetch, features */
    for (int c = 0; c < 3; c++) {
        int with_feat = cfg[c][2];
        gnn_loader_opts_t o = opts_of(&d, cfg[c][0], cfg[c][1], with_feat);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_batches(ld), 0);
        for (int z = 0; z < 4; z++)
            for (int shuffle = 0; shuffle <= 1; shuffle++) {
                int64_t n = shapes[z][0], bs = shapes[z][1];
                ref_t r;
                make_ref(&d, d.seeds, n, bs, shuffle, g_seed + 7, (uint64_t)z, &r);
                if (!shuffle) assert_memory_equal(r.perm, d.seeds, (size_t)n * sizeof *d.seeds);
                assert_int_equal(
                    gnn_loader_start(ld, d.seeds, n, bs, shuffle, g_seed + 7, (uint64_t)z), 0);
                assert_int_equal(gnn_loader_batches(ld), (n + bs - 1) / bs);
                sums_t s;
                drain_epoch(&r, ld, NULL, with_feat, &s);
                assert_stats(ld, &s);
                free_ref(&r);
            }
        /* No seeds: no batches (seeds may then be NULL). */
        for (int k = 0; k < 2; k++) {
            gnn_vid_t *none = k ? NULL : d.seeds;
            assert_int_equal(gnn_loader_start(ld, none, 0, 64, 1, 1, 1), 0);
            assert_int_equal(gnn_loader_batches(ld), 0);
            gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            assert_null(b);
            assert_stats_zero(ld);
        }
        gnn_loader_free(ld);
    }
    free_data(&d);
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* The 0.999 quantile of chi-square with 23 degrees of freedom. */
#define CHI2_999_DF23 49.728

static void test_shuffle(void **state)
{
    (void)state;
    enum { N = 700 };
    gnn_vid_t base[N], a[N], b[N], sorted[N];
    uint64_t rng = g_seed ^ 0x5407;
    for (int i = 0; i < N; i++) base[i] = 3 * i + (gnn_vid_t)rng_below(&rng, 3); /* distinct */

    /* A permutation, and not the identity. */
    memcpy(a, base, sizeof a);
    gnn_loader_shuffle(a, N, g_seed, 3);
    memcpy(sorted, a, sizeof sorted);
    qsort(sorted, N, sizeof *sorted, cmp_vid);
    assert_memory_equal(sorted, base, sizeof base); /* base is ascending */
    assert_true(memcmp(a, base, sizeof a) != 0);

    /* Deterministic for (seed, epoch), whatever came before. */
    memcpy(b, base, sizeof b);
    gnn_loader_shuffle(b, N, g_seed + 1, 3);
    memcpy(b, base, sizeof b);
    gnn_loader_shuffle(b, N, g_seed, 3);
    assert_memory_equal(a, b, sizeof a);

    /* Another epoch or seed: another order. */
    const uint64_t other[][2] = {
        {g_seed, 4}, {g_seed + 1, 3}, {g_seed ^ (1ull << 63), 3}, {g_seed, 3ull << 32}};
    for (int k = 0; k < 4; k++) {
        memcpy(b, base, sizeof b);
        gnn_loader_shuffle(b, N, other[k][0], other[k][1]);
        assert_true(memcmp(a, b, sizeof a) != 0);
        memcpy(sorted, b, sizeof sorted);
        qsort(sorted, N, sizeof *sorted, cmp_vid);
        assert_memory_equal(sorted, base, sizeof base);
    }

    /* Trivial lengths. */
    gnn_vid_t one = 42;
    gnn_loader_shuffle(&one, 1, g_seed, 0);
    assert_int_equal(one, 42);
    gnn_loader_shuffle(&one, 0, g_seed, 0);
    assert_int_equal(one, 42);
    gnn_loader_shuffle(NULL, 0, g_seed, 0);

    /* All 24 orders of 4 elements equally likely (a plain multinomial). */
    enum { T = 24000 };
    int64_t count[256] = {0};
    for (uint64_t e = 0; e < T; e++) {
        gnn_vid_t p[4] = {0, 1, 2, 3};
        gnn_loader_shuffle(p, 4, g_seed, e);
        count[p[0] * 64 + p[1] * 16 + p[2] * 4 + p[3]]++;
    }
    int cells = 0;
    double expect = T / 24.0, x2 = 0;
    for (int m = 0; m < 256; m++)
        if (count[m]) {
            cells++;
            x2 += (count[m] - expect) * (count[m] - expect) / expect;
        }
    printf("orders of 4: %d seen, chi2 %.2f (df 23, critical %.3f at 0.001)\n", cells, x2,
           CHI2_999_DF23);
    assert_int_equal(cells, 24);
    assert_true(x2 < CHI2_999_DF23);
}

/* ---- Hooks --------------------------------------------------------------------------- */

static void assert_hooks_balanced(hooks_t *h)
{
    assert_int_equal(atomic_load(&h->bad), 0);
    assert_int_equal(atomic_load(&h->unprepared), atomic_load(&h->prepared));
    assert_int_equal(atomic_load(&h->live), 0);
}

/* Take batches until next fails; the epoch has had a failure on batch 3.
 * Returns the batches taken. */
static int64_t take_until_failure(gnn_loader_t *ld, const ref_t *r, hooks_t *h)
{
    int64_t taken = 0;
    for (;;) {
        gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
        int rc = gnn_loader_next(ld, &b);
        if (rc < 0) {
            assert_null(b);
            return rc == GNN_EINVAL ? taken : -1;
        }
        assert_non_null(b); /* the failure comes before the end */
        check_batch(r, b, taken, 1);
        if (h) {
            assert_non_null(b->user[0]);
            assert_int_equal(*(int64_t *)b->user[0], taken);
        }
        taken++;
        if (h) atomic_fetch_add(&h->released, 1);
        gnn_loader_release(ld, b);
    }
}

static void test_hooks(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0x400C);
    ref_t r5, r6;
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, g_seed, 5, &r5);
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, g_seed, 6, &r6);

    /* Every configuration: prepare and unprepare once per batch, the bound
     * on batches built ahead kept. */
    for (int c = 0; c < N_CONFIGS; c++) {
        hooks_t h;
        int threads = k_configs[c][0], prefetch = threads ? k_configs[c][1] : 1;
        hooks_init(&h, prefetch, 1);
        gnn_loader_opts_t o = opts_of(&d, threads, k_configs[c][1], 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        sums_t s;
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 5), 0);
        drain_epoch(&r5, ld, &h, 1, &s);
        assert_hooks_balanced(&h);
        assert_int_equal(atomic_load(&h.prepared), r5.n_batches);
        gnn_loader_stats_t st;
        gnn_loader_stats(ld, &st);
        assert_true(st.prepare_s >= 0);
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
        assert_int_equal(atomic_load(&h.prepared), r5.n_batches);
    }

    /* The hook refuses batch 3: the epoch ends with its error, everything
     * built is undone; the next epoch is whole. */
    const int cfg[][2] = {{0, 1}, {2, 3}, {2, 1}, {4, 8}};
    for (int c = 0; c < 4; c++) {
        hooks_t h;
        hooks_init(&h, cfg[c][0] ? cfg[c][1] : 1, 1);
        atomic_store(&h.fail_at, 3);
        h.slow_ms = 40;
        gnn_loader_opts_t o = opts_of(&d, cfg[c][0], cfg[c][1], 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 5), 0);
        int64_t taken = take_until_failure(ld, &r5, &h);
        printf("threads %d prefetch %d: hook failure after %" PRId64 " batches: %s\n", cfg[c][0],
               cfg[c][1], taken, gnn_error_message());
        assert_true(taken >= 0 && taken <= 3);
        if (cfg[c][0] == 0) assert_int_equal(taken, 3);
        assert_int_equal(gnn_error_code(), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "batch 3 of epoch 5"));
        assert_non_null(strstr(gnn_error_message(), "hook refused batch 3"));
        assert_hooks_balanced(&h); /* nothing built is left behind */
        gnn_loader_stats_t st;
        gnn_loader_stats(ld, &st);
        assert_int_equal(st.batches, taken);
        /* The epoch is over. */
        for (int k = 0; k < 2; k++) {
            gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            assert_null(b);
        }
        /* A new epoch with the hook content. */
        atomic_store(&h.fail_at, -1);
        atomic_store(&h.released, 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 6), 0);
        sums_t s;
        drain_epoch(&r6, ld, &h, 1, &s);
        assert_stats(ld, &s);
        assert_hooks_balanced(&h);
        /* The same failure again, then freed with the epoch over. */
        atomic_store(&h.fail_at, 3);
        atomic_store(&h.released, 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 5), 0);
        assert_true(take_until_failure(ld, &r5, &h) >= 0);
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
    }
    free_ref(&r5);
    free_ref(&r6);
    free_data(&d);
}

/* A sampler failure (a seed out of range, a repeated seed) in batch 2 is
 * reported like a hook's. */
static void test_bad_seed(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0xBAD5);
    gnn_vid_t seeds[N_SEEDS];
    ref_t good;
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, 9, 2, &good);
    for (int kind = 0; kind < 2; kind++) {
        memcpy(seeds, d.seeds, sizeof seeds);
        if (kind == 0)
            seeds[2 * BATCH + 5] = N_NODES;
        else
            seeds[2 * BATCH + 5] = seeds[2 * BATCH + 1];
        ref_t r;
        make_ref(&d, d.seeds, 2 * BATCH, BATCH, 0, 9, 1, &r); /* the two good batches */
        for (int c = 0; c < 2; c++) {
            gnn_loader_opts_t o = opts_of(&d, c ? 2 : 0, 2, 1);
            gnn_loader_t *ld;
            assert_int_equal(gnn_loader_create(&o, &ld), 0);
            assert_int_equal(gnn_loader_start(ld, seeds, N_SEEDS, BATCH, 0, 9, 1), 0);
            int64_t taken = take_until_failure(ld, &r, NULL);
            assert_true(taken >= 0 && taken <= 2);
            if (!c) assert_int_equal(taken, 2);
            assert_non_null(strstr(gnn_error_message(), "batch 2 of epoch 1"));
            if (kind == 0)
                assert_non_null(strstr(gnn_error_message(), "seed 2000 at position 5"));
            else
                assert_non_null(strstr(gnn_error_message(), "positions 1 and 5"));
            gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            assert_null(b);
            /* Good seeds again: a whole epoch. */
            assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 9, 2), 0);
            sums_t s;
            drain_epoch(&good, ld, NULL, 1, &s);
            gnn_loader_free(ld);
        }
        free_ref(&r);
    }
    free_ref(&good);
    free_data(&d);
}

/* ---- Freeing mid-epoch --------------------------------------------------------------- */

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Wait up to 20 s for the prepare hook to have run `want` times. */
static void wait_prepared(hooks_t *h, int want)
{
    for (int t = 0; t < 20000 && atomic_load(&h->prepared) < want; t++) sleep_ms(1);
    assert_int_equal(atomic_load(&h->prepared), want);
}

static void test_free_mid_epoch(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0xF4EE);
    ref_t r;
    make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, g_seed, 1, &r);

    /* A batch held, prefetch 4: batches 0..3 are built and no more. */
    {
        hooks_t h;
        hooks_init(&h, 4, 1);
        gnn_loader_opts_t o = opts_of(&d, 2, 4, 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 1), 0);
        gnn_loader_batch_t *b;
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        check_batch(&r, b, 0, 1);
        wait_prepared(&h, 4);
        sleep_ms(30);
        assert_int_equal(atomic_load(&h.prepared), 4); /* the held batch's slot is not reused */
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
    }
    /* Some batches taken and given back, one held, the rest being built. */
    {
        hooks_t h;
        hooks_init(&h, 3, 1);
        gnn_loader_opts_t o = opts_of(&d, 4, 3, 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 1), 0);
        gnn_loader_batch_t *b;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            check_batch(&r, b, i, 1);
            atomic_fetch_add(&h.released, 1);
            gnn_loader_release(ld, b);
        }
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        check_batch(&r, b, 3, 1);
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
        assert_true(atomic_load(&h.prepared) >= 4);
    }
    /* Freed right after start (workers busy), and with nothing started. */
    for (int k = 0; k < 2; k++) {
        hooks_t h;
        hooks_init(&h, 8, 1);
        gnn_loader_opts_t o = opts_of(&d, 4, 8, 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        if (k == 0)
            assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 1), 0);
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
        if (k == 1) assert_int_equal(atomic_load(&h.prepared), 0);
    }
    /* 0 threads, a batch held. */
    {
        hooks_t h;
        hooks_init(&h, 1, 1);
        gnn_loader_opts_t o = opts_of(&d, 0, 1, 1);
        with_hooks(&o, &h);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, g_seed, 1), 0);
        gnn_loader_batch_t *b;
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        check_batch(&r, b, 0, 1);
        assert_int_equal(atomic_load(&h.prepared), 1);
        gnn_loader_free(ld);
        assert_hooks_balanced(&h);
        assert_int_equal(atomic_load(&h.unprepared), 1);
    }
    gnn_loader_free(NULL);
    free_ref(&r);
    free_data(&d);
}

/* ---- Errors ---------------------------------------------------------------------------- */

static void expect_create_error(const gnn_loader_opts_t *o, const char *msg)
{
    gnn_loader_t *ld = (gnn_loader_t *)(uintptr_t)1;
    assert_int_equal(gnn_loader_create(o, &ld), GNN_EINVAL);
    assert_null(ld);
    if (!strstr(gnn_error_message(), msg)) {
        printf("expected \"%s\" in \"%s\"\n", msg, gnn_error_message());
        fail();
    }
}

static void test_errors(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0xE440);
    gnn_loader_opts_t o;

    o = opts_of(&d, -1, 2, 1);
    expect_create_error(&o, "-1 sampler threads");
    o = opts_of(&d, GNN_LOADER_MAX_THREADS + 1, 2, 1);
    expect_create_error(&o, "257 sampler threads");
    o = opts_of(&d, 1, 0, 1);
    expect_create_error(&o, "prefetch 0");
    o = opts_of(&d, 2, GNN_LOADER_MAX_PREFETCH + 1, 1);
    expect_create_error(&o, "prefetch 65");
    o = opts_of(&d, 1, 1, 1);
    o.graph = NULL;
    expect_create_error(&o, "NULL argument");
    o = opts_of(&d, 1, 1, 1);
    o.fanouts = NULL;
    expect_create_error(&o, "NULL argument");
    expect_create_error(NULL, "NULL argument");
    o = opts_of(&d, 1, 1, 1);
    o.feat_dim = 0;
    expect_create_error(&o, "feature width 0");
    int bad[] = {5, 0};
    o = opts_of(&d, 1, 1, 1);
    o.fanouts = bad;
    expect_create_error(&o, "fanout 0 of hop 1");
    o = opts_of(&d, 0, 1, 1);
    o.layers = 0;
    expect_create_error(&o, "0 layers");
    o = opts_of(&d, 0, 1, 1);
    assert_int_equal(gnn_loader_create(&o, NULL), GNN_EINVAL);

    /* Labels without features are fine; prefetch is ignored with 0 threads
     * (even an absurd one). */
    o = opts_of(&d, 0, 0, 0);
    o.prefetch = INT_MAX;
    o.labels = d.labels;
    gnn_loader_t *ld;
    assert_int_equal(gnn_loader_create(&o, &ld), 0);
    assert_int_equal(gnn_loader_start(ld, d.seeds, 100, 64, 1, 1, 1), 0);
    gnn_loader_batch_t *b;
    assert_int_equal(gnn_loader_next(ld, &b), 0);
    assert_null(b->x);
    assert_non_null(b->y);
    for (gnn_vid_t k = 0; k < b->mb.n_seeds; k++)
        assert_int_equal(b->y[k], label_of(b->mb.nodes[k]));
    gnn_loader_release(ld, b);
    assert_int_equal(gnn_loader_next(ld, &b), 0);
    gnn_loader_release(ld, b);
    assert_int_equal(gnn_loader_next(ld, &b), 0);
    assert_null(b);
    gnn_loader_free(ld);

    for (int c = 0; c < 2; c++) {
        o = opts_of(&d, c ? 2 : 0, 2, 1);
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        /* Bad arguments to start. */
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, 0, 1, 1, 1), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "batch size 0"));
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, -3, 1, 1, 1), GNN_EINVAL);
        assert_int_equal(gnn_loader_start(ld, d.seeds, -1, 64, 1, 1, 1), GNN_EINVAL);
        assert_int_equal(gnn_loader_start(ld, NULL, 5, 64, 1, 1, 1), GNN_EINVAL);
        assert_int_equal(gnn_loader_start(NULL, d.seeds, 5, 64, 1, 1, 1), GNN_EINVAL);
        assert_int_equal(gnn_loader_next(ld, NULL), GNN_EINVAL);
        assert_int_equal(gnn_loader_next(NULL, &b), GNN_EINVAL);
        gnn_loader_release(ld, NULL);
        gnn_loader_release(NULL, NULL);

        ref_t r;
        make_ref(&d, d.seeds, N_SEEDS, BATCH, 1, 77, 1, &r);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 77, 1), 0);
        /* Still running: with a batch held, and after giving it back. */
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        check_batch(&r, b, 0, 1);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 77, 2), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "still running"));
        /* One batch too many before a release: the third (prefetch 2: two
         * may be held, built by workers or on demand). */
        int held = gnn_loader_max_held(ld);
        assert_int_equal(held, 2);
        gnn_loader_batch_t *b1 = NULL, *b2 = (gnn_loader_batch_t *)(uintptr_t)1;
        if (held == 2) {
            assert_int_equal(gnn_loader_next(ld, &b1), 0);
            check_batch(&r, b1, 1, 1);
            check_batch(&r, b, 0, 1); /* the first is still whole */
        }
        assert_int_equal(gnn_loader_next(ld, &b2), GNN_EINVAL);
        assert_null(b2);
        assert_non_null(strstr(gnn_error_message(), "not released"));
        gnn_loader_release(ld, b);
        if (b1) gnn_loader_release(ld, b1);
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 77, 2), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "still running"));
        /* The refusals changed nothing: the epoch goes on from the next
         * batch. While the last batch is held, the epoch is still running. */
        for (int64_t i = held; i < r.n_batches; i++) {
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            check_batch(&r, b, i, 1);
            if (i == r.n_batches - 1) {
                assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 77, 2),
                                 GNN_EINVAL);
                assert_non_null(strstr(gnn_error_message(), "still running"));
            }
            gnn_loader_release(ld, b);
        }
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        assert_null(b);
        gnn_loader_stats_t st;
        gnn_loader_stats(ld, &st);
        assert_int_equal(st.batches, r.n_batches);
        /* Consumed: a new epoch may start. */
        assert_int_equal(gnn_loader_start(ld, d.seeds, N_SEEDS, BATCH, 1, 77, 2), 0);
        assert_int_equal(gnn_loader_next(ld, &b), 0);
        assert_int_equal(b->index, 0);
        gnn_loader_release(ld, b);
        gnn_loader_free(ld);
        free_ref(&r);
    }
    free_data(&d);
}

/* ---- Allocation failures --------------------------------------------------------------- */

/*
 * Every allocation of create, start and one epoch of 4 batches (0 threads,
 * so the order of allocations is fixed) made to fail in turn: each step
 * succeeds or returns GNN_ENOMEM, the batches before the failure are
 * right, the epoch ends there, and the loader then runs a whole epoch.
 */
static void test_alloc_failure(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0xA110);
    enum { N = 200 }; /* batches 64, 64, 64, 8 */
    ref_t r;
    make_ref(&d, d.seeds, N, BATCH, 1, g_seed, 2, &r);
    int failed_create = 0, failed_start = 0, failed_next = 0;
    gnn_loader_opts_t o = opts_of(&d, 0, 1, 1);
    for (int64_t nth = 1;; nth++) {
        assert_true(nth < 400);
        gnn_alloc_fail_at(nth);
        gnn_loader_t *ld = (gnn_loader_t *)(uintptr_t)1;
        int rc = gnn_loader_create(&o, &ld), step = 0;
        if (rc == 0) {
            step = 1;
            rc = gnn_loader_start(ld, d.seeds, N, BATCH, 1, g_seed, 2);
        }
        int64_t taken = 0;
        if (rc == 0) {
            step = 2;
            for (;;) {
                gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
                rc = gnn_loader_next(ld, &b);
                if (rc < 0) {
                    assert_null(b);
                    break;
                }
                if (!b) break;
                check_batch(&r, b, taken, 1);
                taken++;
                gnn_loader_release(ld, b);
            }
        }
        int failed = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!failed) {
            assert_int_equal(rc, 0);
            assert_int_equal(taken, r.n_batches);
            gnn_loader_free(ld);
            printf("allocation failures: create %d, start %d, next %d (%" PRId64
                   " allocations in all)\n",
                   failed_create, failed_start, failed_next, nth - 1);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM); /* the failure is never swallowed */
        assert_int_equal(gnn_error_code(), GNN_ENOMEM);
        if (step == 0) {
            assert_null(ld);
            failed_create++;
            continue;
        }
        if (step == 1) {
            failed_start++;
        } else {
            failed_next++;
            char want[64];
            snprintf(want, sizeof want, "batch %" PRId64 " of epoch 2", taken);
            assert_non_null(strstr(gnn_error_message(), want));
            gnn_loader_batch_t *b = (gnn_loader_batch_t *)(uintptr_t)1;
            assert_int_equal(gnn_loader_next(ld, &b), 0); /* the epoch is over */
            assert_null(b);
        }
        /* The loader recovers. */
        assert_int_equal(gnn_loader_start(ld, d.seeds, N, BATCH, 1, g_seed, 2), 0);
        sums_t s;
        drain_epoch(&r, ld, NULL, 1, &s);
        assert_stats(ld, &s);
        gnn_loader_free(ld);
    }
    assert_true(failed_create >= 3); /* the loader, the sampler, the slots */
    assert_true(failed_start >= 1);  /* the seed list */
    assert_true(failed_next >= 4 * 3 + 2); /* sampling 4 batches, the feature and label buffers */
    free_ref(&r);
    free_data(&d);
}

/* ---- Edge batches ---------------------------------------------------------------- */

enum { N_EDGES = 300 };

typedef struct {
    gnn_vid_t pos[2 * N_EDGES]; /* item i: the edge pos[2i] -> pos[2i + 1] of the graph */
    atomic_int fail_at;         /* batch (by first item's position) the hook refuses; -1 */
    atomic_int calls;
} edges_ctx_t;

/* The seeds of a batch of edges: their ends, distinct, in order; every
 * edge excluded; the pairs as positions. */
static int edge_hook(void *ctx, const gnn_vid_t *items, int64_t n, uint64_t seed, uint64_t epoch,
                     gnn_loader_edges_t *out)
{
    edges_ctx_t *c = ctx;
    (void)seed, (void)epoch;
    atomic_fetch_add(&c->calls, 1);
    if (atomic_load(&c->fail_at) >= 0 && items[0] == atomic_load(&c->fail_at))
        return GNN_FAIL(GNN_EINVAL, "edge hook refuses item %" PRId64, (int64_t)items[0]);
    out->seeds = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *out->seeds);
    out->excl = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *out->excl);
    out->pairs = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *out->pairs);
    if (!out->seeds || !out->excl || !out->pairs) return GNN_ENOMEM;
    for (int64_t i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            gnn_vid_t x = c->pos[2 * items[i] + k];
            int64_t at = -1;
            for (int64_t q = 0; q < out->n_seeds && at < 0; q++)
                if (out->seeds[q] == x) at = q;
            if (at < 0) {
                at = out->n_seeds;
                out->seeds[out->n_seeds++] = x;
            }
            out->excl[2 * i + k] = x;
            out->pairs[2 * i + k] = at;
        }
    out->n_excl = out->n_pairs = n;
    return 0;
}

/*
 * Edge batches: 300 edges of the graph in batches of 64, for 0 and 2
 * threads. Each batch holds its items (the shuffled edge indices), starts
 * from the hook's seeds, equals gnn_sampler_sample_excluding on them, and
 * holds none of its own edges in any block; every edge is an item of one
 * batch. A failing hook ends the epoch with its error.
 */
static void test_edge_batches(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0xED6E);
    static edges_ctx_t c;
    atomic_store(&c.fail_at, -1);
    uint64_t rng = g_seed ^ 0xED6F;
    gnn_vid_t items[N_EDGES];
    for (int64_t i = 0; i < N_EDGES; i++) {
        gnn_vid_t v;
        do v = rng_below(&rng, N_NODES);
        while (d.g.indptr[v + 1] == d.g.indptr[v]);
        c.pos[2 * i] = d.g.indices[d.g.indptr[v] + rng_below(&rng, d.g.indptr[v + 1] - d.g.indptr[v])];
        c.pos[2 * i + 1] = v;
        items[i] = i;
    }
    const int threads[] = {0, 2};
    for (int t = 0; t < 2; t++) {
        gnn_loader_opts_t o = opts_of(&d, threads[t], 3, 1);
        o.labels = NULL;
        o.edge_seeds = edge_hook;
        o.ctx = &c;
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start(ld, items, N_EDGES, BATCH, 1, g_seed, 4), 0);
        gnn_vid_t perm[N_EDGES];
        memcpy(perm, items, sizeof perm);
        gnn_loader_shuffle(perm, N_EDGES, g_seed, 4);
        int seen[N_EDGES] = {0};
        int64_t nb = 0;
        for (;;) {
            gnn_loader_batch_t *b;
            assert_int_equal(gnn_loader_next(ld, &b), 0);
            if (!b) break;
            int64_t lo = b->index * BATCH, cnt = N_EDGES - lo < BATCH ? N_EDGES - lo : BATCH;
            assert_int_equal(b->n_items, cnt);
            gnn_loader_edges_t ref = {0};
            assert_int_equal(edge_hook(&c, perm + lo, cnt, g_seed, 4, &ref), 0);
            assert_int_equal(b->edges.n_seeds, ref.n_seeds);
            assert_memory_equal(b->edges.seeds, ref.seeds, (size_t)ref.n_seeds * sizeof *ref.seeds);
            assert_memory_equal(b->edges.pairs, ref.pairs, (size_t)(2 * cnt) * sizeof *ref.pairs);
            gnn_minibatch_t mb;
            assert_int_equal(gnn_sampler_sample_excluding(d.sampler, ref.seeds, ref.n_seeds, ref.excl,
                                                          cnt, g_seed, 4, (uint64_t)b->index, &mb),
                             0);
            assert_same_minibatch(&b->mb, &mb);
            gnn_minibatch_free(&mb);
            for (int64_t i = 0; i < cnt; i++) seen[perm[lo + i]]++;
            for (int l = 0; l < LAYERS; l++) {
                const gnn_block_t *blk = &b->mb.blocks[l];
                for (gnn_vid_t r = 0; r < blk->csr.n_rows; r++)
                    for (gnn_eid_t e = blk->csr.indptr[r]; e < blk->csr.indptr[r + 1]; e++) {
                        gnn_vid_t u = blk->src_ids[blk->csr.indices[e]], v = blk->src_ids[r];
                        for (int64_t i = 0; i < cnt; i++) {
                            gnn_vid_t a = ref.excl[2 * i], z = ref.excl[2 * i + 1];
                            assert_false((u == a && v == z) || (u == z && v == a));
                        }
                    }
            }
            gnn_free(ref.seeds);
            gnn_free(ref.excl);
            gnn_free(ref.pairs);
            gnn_loader_release(ld, b);
            nb++;
        }
        assert_int_equal(nb, (N_EDGES + BATCH - 1) / BATCH);
        for (int64_t i = 0; i < N_EDGES; i++) assert_int_equal(seen[i], 1);
        /* A failing hook: the epoch ends with its error. */
        atomic_store(&c.fail_at, (int)perm[2 * BATCH]);
        assert_int_equal(gnn_loader_start(ld, items, N_EDGES, BATCH, 1, g_seed, 4), 0);
        int rc = 0;
        for (;;) {
            gnn_loader_batch_t *b;
            rc = gnn_loader_next(ld, &b);
            if (rc < 0 || !b) break;
            gnn_loader_release(ld, b);
        }
        assert_int_equal(rc, GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "batch 2 of epoch 4"));
        assert_non_null(strstr(gnn_error_message(), "edge hook refuses"));
        atomic_store(&c.fail_at, -1);
        gnn_loader_free(ld);
    }
    free_data(&d);
}

/*
 * Given batches (gnn_loader_start_batches): bounds 0, 3, 3, 10, 11 over 11
 * items give batches of 3, 0, 7 and 1 items, in that order, each sampled
 * as gnn_sampler_sample on its items under (seed, epoch, b), for 0 and 2
 * threads; an empty batch has no seeds. Bounds that do not start at 0 or
 * decrease are refused.
 */
static void test_given_batches(void **state)
{
    (void)state;
    data_t d;
    make_data(&d, 0x61BE);
    const int64_t starts[] = {0, 3, 3, 10, 11}, nb = 4;
    const int threads[] = {0, 2};
    for (int t = 0; t < 2; t++) {
        gnn_loader_opts_t o = opts_of(&d, threads[t], 2, 1);
        gnn_loader_t *ld;
        assert_int_equal(gnn_loader_create(&o, &ld), 0);
        assert_int_equal(gnn_loader_start_batches(ld, d.seeds, starts, nb, g_seed, 3), 0);
        assert_int_equal(gnn_loader_batches(ld), nb);
        for (int64_t b = 0; b < nb; b++) {
            gnn_loader_batch_t *x;
            assert_int_equal(gnn_loader_next(ld, &x), 0);
            assert_non_null(x);
            assert_int_equal(x->index, b);
            assert_int_equal(x->n_items, starts[b + 1] - starts[b]);
            assert_int_equal(x->mb.n_seeds, x->n_items);
            gnn_minibatch_t ref;
            assert_int_equal(gnn_sampler_sample(d.sampler, d.seeds + starts[b], x->n_items,
                                                g_seed, 3, (uint64_t)b, &ref),
                             0);
            if (x->n_items)
                assert_same_minibatch(&x->mb, &ref);
            else
                assert_int_equal(x->mb.n_input, 0);
            gnn_minibatch_free(&ref);
            gnn_loader_release(ld, x);
        }
        gnn_loader_batch_t *end;
        assert_int_equal(gnn_loader_next(ld, &end), 0);
        assert_null(end);
        const int64_t bad0[] = {1, 3}, bad1[] = {0, 5, 4};
        assert_int_equal(gnn_loader_start_batches(ld, d.seeds, bad0, 1, 0, 0), GNN_EINVAL);
        assert_int_equal(gnn_loader_start_batches(ld, d.seeds, bad1, 2, 0, 0), GNN_EINVAL);
        assert_non_null(strstr(gnn_error_message(), "ends before it starts"));
        gnn_loader_free(ld);
    }
    free_data(&d);
}

int main(void)
{
    g_seed = tu_seed();
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_batches),
        cmocka_unit_test(test_epoch_shape),
        cmocka_unit_test(test_shuffle),
        cmocka_unit_test(test_hooks),
        cmocka_unit_test(test_bad_seed),
        cmocka_unit_test(test_free_mid_epoch),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_alloc_failure),
        cmocka_unit_test(test_edge_batches),
        cmocka_unit_test(test_given_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
