/*
 * MPI harness check, run by CTest under mpirun with 2 and 4 ranks: the
 * collectives the trainer relies on give exact results. Each check's outcome
 * is agreed across ranks (a failure on any rank fails all), and rank 0
 * prints one line per check.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int rank, size;

/* All ranks agree whether ok holds everywhere; rank 0 reports. */
static int agree(int ok, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0) printf("%s: %s (ranks %d)\n", all ? "PASS" : "FAIL", what, size);
    return all;
}

/* The sum of rank ids is P(P-1)/2 on every rank. */
static int check_rank_sum(void)
{
    int64_t mine = rank, sum = -1;
    int rc = MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return agree(rc == MPI_SUCCESS && sum == (int64_t)size * (size - 1) / 2,
                 "allreduce of rank ids");
}

/* Averaging a gradient-sized float buffer: element i holds rank + i % 7 on
 * each rank, so the mean is (P-1)/2 + i % 7 exactly in float. */
static int check_gradient_average(void)
{
    const int n = 1 << 20;
    float *g = malloc(sizeof *g * n);
    int ok = g != NULL;
    if (ok) {
        for (int i = 0; i < n; i++) g[i] = (float)(rank + i % 7);
        ok = MPI_Allreduce(MPI_IN_PLACE, g, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
        for (int i = 0; ok && i < n; i++)
            ok = g[i] / (float)size == (float)(size - 1) / 2.0f + (float)(i % 7);
    }
    free(g);
    return agree(ok, "allreduce average of a 1M-float buffer");
}

/* Feature-fetch pattern: rank r sends r + 1 values to each peer p, valued
 * 1000 r + p; every received block is checked. */
static int check_alltoallv(void)
{
    int *scount = calloc(size, sizeof(int)), *sdisp = calloc(size, sizeof(int));
    int *rcount = calloc(size, sizeof(int)), *rdisp = calloc(size, sizeof(int));
    int ok = scount && sdisp && rcount && rdisp;
    int64_t *sbuf = NULL, *rbuf = NULL;
    if (ok) {
        int st = 0, rt = 0;
        for (int p = 0; p < size; p++) {
            scount[p] = rank + 1;
            sdisp[p] = st;
            st += scount[p];
            rcount[p] = p + 1;
            rdisp[p] = rt;
            rt += rcount[p];
        }
        sbuf = malloc(sizeof *sbuf * st);
        rbuf = malloc(sizeof *rbuf * rt);
        ok = sbuf && rbuf;
        for (int p = 0; ok && p < size; p++)
            for (int k = 0; k < scount[p]; k++) sbuf[sdisp[p] + k] = 1000 * rank + p;
        if (ok)
            ok = MPI_Alltoallv(sbuf, scount, sdisp, MPI_INT64_T, rbuf, rcount, rdisp, MPI_INT64_T,
                               MPI_COMM_WORLD) == MPI_SUCCESS;
        for (int p = 0; ok && p < size; p++)
            for (int k = 0; ok && k < rcount[p]; k++) ok = rbuf[rdisp[p] + k] == 1000 * p + rank;
    }
    free(scount);
    free(sdisp);
    free(rcount);
    free(rdisp);
    free(sbuf);
    free(rbuf);
    return agree(ok, "alltoallv of per-owner blocks");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int passed = check_rank_sum() + check_gradient_average() + check_alltoallv();
    if (rank == 0) printf("%d passed, %d failed\n", passed, 3 - passed);
    MPI_Finalize();
    return passed == 3 ? 0 : 1;
}
