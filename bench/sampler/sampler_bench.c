/*
 * Benchmark of the neighbour sampler (sampler/sampler.c): sampled edges per
 * second and mini-batches per second on a graph file.
 *
 * The seeds are the file's training split when it has one, else every
 * node, shuffled once from the seed; consecutive batches of B seeds are
 * sampled with fanouts F (nearest hop first, as sampler.h) for
 * (seed, epoch 0, batch i). Two modes on the same batches:
 *   batch       one mini-batch at a time, its per-node draws on the OpenMP
 *               threads (latency of one batch);
 *   concurrent  the batches spread over the OpenMP threads, each sampled on
 *               one thread (throughput of a prefetching loader).
 * One warm-up batch precedes each mode. Edges are the sampled edges of all
 * layers. Result lines start with "RESULT" for scripts.
 *
 * Like gnn-train, it keeps freed memory for the next batches
 * (gnn_alloc_keep_freed), and says so.
 *
 * Usage: sampler_bench GRAPH.h5 [-b BATCH] [-f F,F,...] [-n BATCHES] [-s SEED]
 * Threads: OMP_NUM_THREADS.
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "sampler/sampler.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int usage(const char *prog)
{
    fprintf(stderr, "usage: %s GRAPH.h5 [-b BATCH] [-f F,F,...] [-n BATCHES] [-s SEED]\n", prog);
    return 2;
}

typedef struct {
    double seconds;
    int64_t edges, inputs;
} run_t;

/* Sample batches [0, nb) of seeds (b each) in the given mode. */
static int run(const gnn_sampler_t *s, const gnn_vid_t *seeds, int64_t b, int64_t nb,
               uint64_t seed, int concurrent, run_t *r)
{
    gnn_minibatch_t mb;
    int rc = gnn_sampler_sample(s, seeds, b, seed, 1, 0, &mb); /* warm-up */
    if (rc < 0) return rc;
    gnn_minibatch_free(&mb);
    int64_t edges = 0, inputs = 0;
    int failed = 0;
    double t0 = now();
    if (concurrent) {
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : edges, inputs, failed)
        for (int64_t i = 0; i < nb; i++) {
            gnn_minibatch_t m;
            if (gnn_sampler_sample(s, seeds + i * b, b, seed, 0, (uint64_t)i, &m) < 0) {
                failed++;
                continue;
            }
            edges += m.edges_total;
            inputs += m.n_input;
            gnn_minibatch_free(&m);
        }
    } else {
        for (int64_t i = 0; i < nb && !failed; i++) {
            gnn_minibatch_t m;
            if (gnn_sampler_sample(s, seeds + i * b, b, seed, 0, (uint64_t)i, &m) < 0) {
                failed = 1;
                break;
            }
            edges += m.edges_total;
            inputs += m.n_input;
            gnn_minibatch_free(&m);
        }
    }
    r->seconds = now() - t0;
    r->edges = edges;
    r->inputs = inputs;
    return failed ? GNN_FAIL(GNN_EINTERNAL, "a batch failed") : 0;
}

int main(int argc, char **argv)
{
    /* As gnn-train does: freed batches' memory kept for the next batch. */
    const int kept = gnn_alloc_keep_freed() == 0;
    int64_t b = 1024, nb = 50;
    uint64_t seed = 1;
    const char *fanout_arg = "15,10,5";
    int opt;
    while ((opt = getopt(argc, argv, "b:f:n:s:h")) != -1) {
        switch (opt) {
        case 'b': b = strtoll(optarg, NULL, 10); break;
        case 'f': fanout_arg = optarg; break;
        case 'n': nb = strtoll(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        default: return usage(argv[0]);
        }
    }
    if (optind + 1 != argc || b < 1 || nb < 1) return usage(argv[0]);
    const char *path = argv[optind];

    int fanouts[GNN_SAMPLER_MAX_LAYERS], layers = 0;
    for (const char *p = fanout_arg; *p && layers < GNN_SAMPLER_MAX_LAYERS;) {
        char *end;
        fanouts[layers++] = (int)strtol(p, &end, 10);
        if (end == p) return usage(argv[0]);
        p = *end == ',' ? end + 1 : end;
    }

    int rc = 0;
    gnn_graph_file_t *f = NULL;
    gnn_csr_t g;
    memset(&g, 0, sizeof g);
    gnn_sampler_t *s = NULL;
    int64_t *ids = NULL, n_ids = -1;
    double t0 = now();
    GNN_TRY(gnn_graph_open(path, &f));
    const gnn_graph_info_t *info = gnn_graph_file_info(f);
    GNN_TRY(gnn_graph_read_rows(f, 0, info->num_nodes, &g));
    if (info->split_size[GNN_SPLIT_TRAIN] > 0) GNN_TRY(gnn_graph_read_split(f, GNN_SPLIT_TRAIN, &ids, &n_ids));
    double t_load = now() - t0;
    if (!ids) {
        n_ids = g.n_rows;
        ids = gnn_malloc_array((size_t)n_ids, sizeof *ids);
        GNN_CHECK(ids, GNN_ENOMEM, "seeds");
        for (int64_t i = 0; i < n_ids; i++) ids[i] = i;
    }
    uint64_t st = seed;
    for (int64_t i = n_ids - 1; i > 0; i--) {
        int64_t j = (int64_t)(rng_next(&st) % (uint64_t)(i + 1));
        int64_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
    if (nb * b > n_ids) nb = n_ids / b;
    GNN_CHECK(nb >= 1, GNN_EINVAL, "%" PRId64 " seeds make no batch of %" PRId64, n_ids, b);
    GNN_TRY(gnn_sampler_create(&g, layers, fanouts, &s));

    printf("graph %s: %" PRId64 " nodes, %" PRId64 " entries (loaded in %.1f s); %" PRId64
           " seeds; batch %" PRId64 ", fanouts %s, %d threads; freed memory %s\n",
           path, g.n_rows, g.nnz, t_load, n_ids, b, fanout_arg, omp_get_max_threads(),
           kept ? "kept (gnn_alloc_keep_freed)" : "returned (malloc's defaults)");
    for (int concurrent = 0; concurrent <= 1; concurrent++) {
        run_t r;
        GNN_TRY(run(s, ids, b, nb, seed, concurrent, &r));
        printf("RESULT mode=%s threads=%d batch=%" PRId64 " fanouts=%s batches=%" PRId64
               " seconds=%.3f batches_per_s=%.1f edges_per_s=%.3e ms_per_batch=%.2f"
               " edges_per_batch=%.0f inputs_per_batch=%.0f\n",
               concurrent ? "concurrent" : "batch", omp_get_max_threads(), b, fanout_arg, nb,
               r.seconds, (double)nb / r.seconds, (double)r.edges / r.seconds,
               1e3 * r.seconds / (double)nb, (double)r.edges / (double)nb,
               (double)r.inputs / (double)nb);
    }
fail:
    gnn_sampler_free(s);
    gnn_free(ids);
    gnn_csr_free(&g);
    gnn_graph_close(f);
    return gnn_error_report("sampler_bench", NULL, rc);
}
