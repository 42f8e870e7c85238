/*
 * Remote feature fetches over MPI, on the same requests: what gnn-train
 * uses (one all-to-all of ids, then one of rows, the owners copying the
 * rows out), with the rows put in request order (gnn_dist_fetch_feat,
 * its buffers made for each call) or as they arrive, grouped by owner
 * (gnn_dist_fetch_grouped, its buffers kept: a training step's fetch),
 * against one-sided RMA (every
 * rank exposes its owned rows in a window once; a fetch is one MPI_Get
 * per row, or per run of consecutive rows after sorting the requests,
 * under a passive-target lock_all epoch, completed by one flush_all).
 *
 * Each rank loads its part of a partition directory (rank r reads part r)
 * and, for each request size M, picks M distinct halo nodes at random
 * (all of them when the halo is smaller): the rows a step fetches are
 * spread like that over the owners. Every method fetches the same rows;
 * the rows must be bit-identical across methods (checked: "same rows").
 * Each timing is the slowest rank's, the median of REPS repetitions after
 * one warm-up, each started after a barrier.
 *
 * Usage: mpirun -np P fetch_bench DIR [-m M,M,...] [-r REPS] [-s SEED]
 * Result lines start with "RESULT" for scripts:
 *   RESULT P M method median_ms rows_per_s_per_rank MB_per_s_per_rank
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "trainer/dist.h"

#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZES 16
#define MAX_REPS 101

enum { ALLTOALLV, ALLTOALLV_GROUPED, RMA_ROWS, RMA_RUNS, N_METHODS };
static const char *const method_name[N_METHODS] = {"alltoallv", "alltoallv-grouped",
                                                   "rma-get-per-row", "rma-get-per-run"};

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One RMA fetch of the m rows ids (local halo ids) into out; pairs: 2m
 * scratch; runs: merge consecutive rows of one owner into one get. */
static int rma_fetch(const gnn_dist_part_t *d, MPI_Win win, const int64_t *ids, int64_t m,
                     int runs, int64_t *pairs, float *sorted, float *out)
{
    int f = (int)d->feat_dim;
    if (!runs) {
        for (int64_t i = 0; i < m; i++) {
            int64_t pid = d->l2g[ids[i]];
            int q = gnn_dist_owner(d, pid);
            MPI_Aint at = (MPI_Aint)(pid - d->part_start[q]) * f;
            if (MPI_Get(out + i * f, f, MPI_FLOAT, q, at, f, MPI_FLOAT, win) != MPI_SUCCESS)
                return GNN_FAIL(GNN_EMPI, "MPI_Get failed");
        }
        return MPI_Win_flush_all(win) == MPI_SUCCESS ? 0
                                                     : GNN_FAIL(GNN_EMPI, "MPI_Win_flush_all");
    }
    for (int64_t i = 0; i < m; i++) {
        pairs[2 * i] = d->l2g[ids[i]];
        pairs[2 * i + 1] = i;
    }
    gnn_dist_pairs_sort(pairs, m);
    for (int64_t i = 0; i < m;) {
        int64_t pid = pairs[2 * i], k = 1;
        int q = gnn_dist_owner(d, pid);
        while (i + k < m && pairs[2 * (i + k)] == pid + k && pid + k < d->part_start[q + 1] &&
               k < (1 << 20) / f)
            k++;
        MPI_Aint at = (MPI_Aint)(pid - d->part_start[q]) * f;
        if (MPI_Get(sorted + i * f, (int)k * f, MPI_FLOAT, q, at, (int)k * f, MPI_FLOAT, win) !=
            MPI_SUCCESS)
            return GNN_FAIL(GNN_EMPI, "MPI_Get failed");
        i += k;
    }
    if (MPI_Win_flush_all(win) != MPI_SUCCESS) return GNN_FAIL(GNN_EMPI, "MPI_Win_flush_all");
    for (int64_t i = 0; i < m; i++)
        memcpy(out + pairs[2 * i + 1] * f, sorted + i * f, (size_t)f * sizeof *out);
    return 0;
}

int main(int argc, char **argv)
{
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    int rank = 0, size = 1, rc = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *dir = NULL;
    int64_t sizes[MAX_SIZES] = {1000, 10000, 100000};
    int n_sizes = 3, reps = 11;
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-m") && i + 1 < argc) {
            n_sizes = 0;
            for (char *p = argv[++i]; *p && n_sizes < MAX_SIZES;) {
                sizes[n_sizes++] = strtoll(p, &p, 10);
                if (*p == ',') p++;
            }
        } else if (!strcmp(argv[i], "-r") && i + 1 < argc) {
            reps = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
            seed = strtoull(argv[++i], NULL, 10);
        } else if (!dir) {
            dir = argv[i];
        } else {
            dir = NULL;
            break;
        }
    }
    if (!dir || reps < 1 || reps > MAX_REPS) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np P %s DIR [-m M,M,...] [-r REPS (1..%d)] [-s SEED]\n",
                    argv[0], MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    gnn_dist_part_t d;
    memset(&d, 0, sizeof d);
    rc = gnn_dist_load(MPI_COMM_WORLD, dir, 1, &d);
    if (rc < 0) {
        if (gnn_dist_reporting_rank() == rank)
            fprintf(stderr, "fetch_bench: %s\n", gnn_error_message());
        MPI_Finalize();
        return 1;
    }
    int64_t f = d.feat_dim, nh = d.n_all - d.n_owned, mmax = 0;
    for (int s = 0; s < n_sizes; s++) mmax = sizes[s] > mmax ? sizes[s] : mmax;
    mmax = mmax < nh ? mmax : nh;
    int64_t *ids = gnn_malloc_array((size_t)nh + 1, sizeof *ids);
    int64_t *pairs = gnn_malloc_array(2 * (size_t)mmax + 2, sizeof *pairs);
    float *out[N_METHODS], *sorted = gnn_alloc_large(((size_t)(mmax * f) + 1) * sizeof(float));
    int64_t *at = gnn_malloc_array((size_t)mmax + 1, sizeof *at);
    int local = ids && pairs && sorted && at ? 0 : 1, any = 0;
    for (int k = 0; k < N_METHODS; k++) {
        out[k] = gnn_alloc_large(((size_t)(mmax * f) + 1) * sizeof(float));
        if (!out[k]) local = 1;
    }
    MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any) {
        if (rank == 0) fprintf(stderr, "fetch_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win win;
    if (MPI_Win_create(d.own_feat, (MPI_Aint)(d.n_owned * f) * (MPI_Aint)sizeof(float),
                       sizeof(float), MPI_INFO_NULL, MPI_COMM_WORLD, &win) != MPI_SUCCESS ||
        MPI_Win_lock_all(0, win) != MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "fetch_bench: MPI_Win_create failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("# %d ranks, %s: %" PRId64 " features per row; rank 0 owns %" PRId64
               " nodes and has %" PRId64 " halo nodes; median of %d after a warm-up\n",
               size, dir, f, d.n_owned, nh, reps);
    uint64_t rs = seed * 0x100000001B3ull + (uint64_t)rank;
    for (int s = 0; s < n_sizes; s++) {
        int64_t m = sizes[s] < nh ? sizes[s] : nh;
        for (int64_t i = 0; i < nh; i++) ids[i] = d.n_owned + i;
        for (int64_t i = 0; i < m; i++) { /* a partial shuffle: m distinct halo nodes */
            int64_t j = i + (int64_t)(rng_next(&rs) % (uint64_t)(nh - i));
            int64_t t = ids[i];
            ids[i] = ids[j];
            ids[j] = t;
        }
        double t[N_METHODS][MAX_REPS];
        for (int k = 0; k < N_METHODS; k++)
            for (int r = -1; r < reps; r++) {
                MPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                if (k == ALLTOALLV)
                    rc = gnn_dist_fetch_feat(&d, ids, m, out[k]);
                else if (k == ALLTOALLV_GROUPED)
                    rc = gnn_dist_fetch_grouped(&d, ids, m, out[k], at);
                else
                    rc = rma_fetch(&d, win, ids, m, k == RMA_RUNS, pairs, sorted, out[k]);
                double dt = MPI_Wtime() - t0, worst = 0.0;
                if (rc < 0) {
                    fprintf(stderr, "fetch_bench: rank %d: %s\n", rank, gnn_error_message());
                    MPI_Abort(MPI_COMM_WORLD, 1);
                }
                MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                if (r >= 0) t[k][r] = worst;
            }
        /* The grouped rows in request order (in sorted, free now), then
         * every method's rows against the first's. */
        for (int64_t i = 0; i < m; i++)
            memcpy(sorted + at[i] * f, out[ALLTOALLV_GROUPED] + i * f, (size_t)f * sizeof(float));
        memcpy(out[ALLTOALLV_GROUPED], sorted, (size_t)(m * f) * sizeof(float));
        local = 0;
        for (int k = 1; k < N_METHODS; k++)
            local |= memcmp(out[0], out[k], (size_t)(m * f) * sizeof(float)) != 0;
        MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (int k = 0; k < N_METHODS; k++) {
            qsort(t[k], (size_t)reps, sizeof t[k][0], cmp_double);
            double med = t[k][reps / 2];
            if (rank == 0)
                printf("RESULT %d %" PRId64 " %s %.3f %.0f %.1f\n", size, m, method_name[k],
                       1e3 * med, (double)m / med, (double)(m * f) * 4.0 / med / 1e6);
        }
        if (rank == 0) printf("# %" PRId64 " rows: %s\n", m, any ? "ROWS DIFFER" : "same rows");
        if (any) rc = 1;
    }
    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    for (int k = 0; k < N_METHODS; k++) gnn_free(out[k]);
    gnn_free(sorted);
    gnn_free(at);
    gnn_free(pairs);
    gnn_free(ids);
    gnn_dist_free(&d);
    MPI_Finalize();
    return rc ? 1 : 0;
}
