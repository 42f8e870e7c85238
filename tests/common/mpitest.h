/*
 * Checks in tests that run under mpirun (include after <cmocka.h> and
 * <mpi.h>; the test defines int g_rank, g_size). Every rank learns
 * whether ok holds on all ranks; where it does not, every rank fails the
 * test here (the ranks where it failed with the message, the others
 * saying so), so they all leave the test together and the collective
 * calls of the next test still match.
 */
#ifndef GNN_TESTS_MPITEST_H
#define GNN_TESTS_MPITEST_H

#define CHECK_ALL(ok, fmt, ...)                                                                  \
    do {                                                                                         \
        int ok_ = (ok) ? 1 : 0, all_ = 0;                                                        \
        MPI_Allreduce(&ok_, &all_, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);                        \
        if (!all_) {                                                                             \
            if (!ok_) fail_msg("rank %d of %d: " fmt, g_rank, g_size, ##__VA_ARGS__);           \
            fail_msg("rank %d of %d: a check failed on another rank", g_rank, g_size);          \
        }                                                                                        \
    } while (0)

/* A check made on rank 0 only. */
#define CHECK_ROOT(ok, fmt, ...) CHECK_ALL(g_rank != 0 || (ok), fmt, ##__VA_ARGS__)

#endif
