/*
 * NCCL communicator and float allreduce (kernels/cuda/nccl.h), run by CTest
 * under mpirun: rank 0 makes the unique id, MPI broadcasts it, every rank
 * opens the communicator on the GPU of its local rank, and the sums and
 * averages of buffers of 1, 1000 and 2^20 + 3 floats are checked exactly
 * against their closed form. Bad arguments fail with GNN_EINVAL before
 * NCCL is involved.
 *
 * Without a CUDA device every rank exits 77 after MPI_Finalize, which
 * mpirun passes on and CTest reports as skipped (never as passed). NCCL
 * refuses two ranks on one GPU, so a node with more ranks than devices
 * skips the same way, saying so.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/nccl.h"
#include "tests/common/mpitest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank, g_size, g_dev;

/* Element i on rank r: multiples of 0.5 far below 2^24, so every partial
 * sum is exact in float whatever order NCCL adds them in. */
static float value(int r, size_t i)
{
    return (float)(r + 1) * 0.5f + (float)(i % 7);
}

/* The sum over the ranks of value(r, i). */
static double sum_of(size_t i)
{
    return (double)g_size * (g_size + 1) / 4.0 + (double)g_size * (double)(i % 7);
}

/* A communicator for the whole job on this rank's device; every rank
 * agrees on the outcome. */
static gnn_nccl_t *open_all(void)
{
    unsigned char id[GNN_NCCL_ID_BYTES];
    memset(id, 0, sizeof id);
    int rc = g_rank == 0 ? gnn_nccl_unique_id(id) : 0;
    CHECK_ROOT(rc == 0, "gnn_nccl_unique_id: %s", gnn_error_message());
    MPI_Bcast(id, GNN_NCCL_ID_BYTES, MPI_BYTE, 0, MPI_COMM_WORLD);
    gnn_nccl_t *c = NULL;
    rc = gnn_nccl_open(id, g_rank, g_size, g_dev, &c);
    CHECK_ALL(rc == 0 && c, "gnn_nccl_open on device %d: %s", g_dev, gnn_error_message());
    return c;
}

/* Allreduce n floats of value(rank, i) (average or sum) and compare with
 * the closed form: exactly, or within 1e-6 for an average over a rank
 * count that is not a power of two (NCCL scales each term by 1/P). */
static void check_allreduce(gnn_nccl_t *c, size_t n, int average)
{
    float *h = malloc(n * sizeof *h);
    void *d = NULL;
    int ok = h != NULL;
    if (ok) ok = gnn_cuda_alloc(n * sizeof(float), &d) == 0;
    for (size_t i = 0; ok && i < n; i++) h[i] = value(g_rank, i);
    if (ok) ok = gnn_cuda_copy_to_device(d, h, n * sizeof(float)) == 0;
    CHECK_ALL(ok, "buffers of %zu floats: %s", n, gnn_error_message());
    int rc = gnn_nccl_allreduce_f32(c, d, n, average, NULL);
    CHECK_ALL(rc == 0, "allreduce of %zu floats: %s", n, gnn_error_message());
    memset(h, 0, n * sizeof *h);
    rc = gnn_cuda_copy_to_host(h, d, n * sizeof(float));
    CHECK_ALL(rc == 0, "copy back: %s", gnn_error_message());
    const int exact = !average || (g_size & (g_size - 1)) == 0;
    size_t bad = n;
    for (size_t i = 0; i < n && bad == n; i++) {
        double want = average ? sum_of(i) / g_size : sum_of(i);
        double err = (double)h[i] > want ? (double)h[i] - want : want - (double)h[i];
        if (exact ? err != 0 : err > 1e-6 * want) bad = i;
    }
    CHECK_ALL(bad == n, "%s of %zu floats: element %zu is %.9g, expected %.9g",
              average ? "average" : "sum", n, bad, bad < n ? (double)h[bad] : 0.0,
              bad < n ? (average ? sum_of(bad) / g_size : sum_of(bad)) : 0.0);
    gnn_cuda_free(d);
    free(h);
}

static void test_bad_arguments(void **state)
{
    (void)state;
    unsigned char id[GNN_NCCL_ID_BYTES];
    memset(id, 0, sizeof id); /* never reaches NCCL: no valid id needed */
    gnn_nccl_t *c = (gnn_nccl_t *)&c;
    int rc = gnn_nccl_open(id, g_size, g_size, g_dev, &c);
    CHECK_ALL(rc == GNN_EINVAL && c == NULL, "rank == size: rc %d, %s", rc, gnn_error_message());
    c = (gnn_nccl_t *)&c;
    rc = gnn_nccl_open(id, -1, g_size, g_dev, &c);
    CHECK_ALL(rc == GNN_EINVAL && c == NULL, "rank -1: rc %d", rc);
    rc = gnn_nccl_open(id, 0, 0, g_dev, &c);
    CHECK_ALL(rc == GNN_EINVAL && c == NULL, "size 0: rc %d", rc);
    rc = gnn_nccl_open(id, g_rank, g_size, -1, &c);
    CHECK_ALL(rc == GNN_EINVAL && c == NULL, "device -1: rc %d", rc);
    rc = gnn_nccl_open(NULL, g_rank, g_size, g_dev, &c);
    CHECK_ALL(rc == GNN_EINVAL && c == NULL, "NULL id: rc %d", rc);
    rc = gnn_nccl_open(id, g_rank, g_size, g_dev, NULL);
    CHECK_ALL(rc == GNN_EINVAL, "NULL output: rc %d", rc);
    rc = gnn_nccl_unique_id(NULL);
    CHECK_ALL(rc == GNN_EINVAL, "unique id into NULL: rc %d", rc);
    float x = 0;
    rc = gnn_nccl_allreduce_f32(NULL, &x, 1, 0, NULL);
    CHECK_ALL(rc == GNN_EINVAL, "allreduce on NULL: rc %d", rc);
    CHECK_ALL(gnn_nccl_rank(NULL) == -1 && gnn_nccl_size(NULL) == 0, "rank and size of NULL");
    gnn_nccl_close(NULL);
}

static void test_sum_and_average(void **state)
{
    (void)state;
    gnn_nccl_t *c = open_all();
    CHECK_ALL(gnn_nccl_rank(c) == g_rank && gnn_nccl_size(c) == g_size,
              "communicator says rank %d of %d", gnn_nccl_rank(c), gnn_nccl_size(c));
    static const size_t sizes[] = {1, 1000, ((size_t)1 << 20) + 3};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        check_allreduce(c, sizes[k], 0);
        check_allreduce(c, sizes[k], 1);
        if (g_rank == 0) printf("allreduce of %zu floats: sum and average exact\n", sizes[k]);
    }
    /* No floats: nothing queued, not even a check of the buffer. */
    int rc = gnn_nccl_allreduce_f32(c, NULL, 0, 0, NULL);
    CHECK_ALL(rc == 0, "allreduce of 0 floats: %s", gnn_error_message());
    rc = gnn_nccl_allreduce_f32(c, NULL, 1, 0, NULL);
    CHECK_ALL(rc == GNN_EINVAL, "allreduce into NULL: rc %d", rc);
    gnn_nccl_close(c);
}

/* A second communicator after the first is closed works the same. */
static void test_reopen(void **state)
{
    (void)state;
    gnn_nccl_t *c = open_all();
    check_allreduce(c, 4099, 0);
    gnn_nccl_close(c);
}

int main(int argc, char **argv)
{
    unsigned seed = 0;
    char dir[512];
    if (tu_mpi_start(&argc, &argv, &g_rank, &g_size, GNN_LOG_WARN, &seed, dir, sizeof dir))
        return 1;
    /* Devices of this rank, and the ranks sharing its node. */
    int n_dev = 0;
    if (gnn_cuda_device_count(&n_dev) != 0) n_dev = 0;
    MPI_Comm node;
    int local_rank = 0, local_size = 1;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &local_rank);
    MPI_Comm_size(node, &local_size);
    MPI_Comm_free(&node);
    int crowded = local_size > n_dev, min_dev = 0, any_crowded = 0;
    MPI_Allreduce(&n_dev, &min_dev, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&crowded, &any_crowded, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (min_dev == 0 || any_crowded) {
        if (min_dev == 0)
            printf("SKIPPED: no CUDA device\n");
        else
            printf("SKIPPED: %d ranks on a node with %d CUDA device(s); NCCL needs a device per "
                   "rank\n",
                   local_size, n_dev);
        fflush(stdout);
        MPI_Finalize();
        return 77;
    }
    g_dev = local_rank % n_dev;
    char name[256] = "";
    size_t mem = 0;
    if (gnn_cuda_device_info(g_dev, name, sizeof name, &mem) == 0)
        printf("%d ranks; rank 0 on device %d: %s, %.1f GiB\n", g_size, g_dev, name,
               (double)mem / (1u << 30));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_sum_and_average),
        cmocka_unit_test(test_reopen),
    };
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    MPI_Finalize();
    return failed ? 1 : 0;
}
