/*
 * Checks in tests that run under mpirun (include after <cmocka.h>; the
 * test defines int g_rank, g_size). Every rank learns
 * whether ok holds on all ranks; where it does not, every rank fails the
 * test here (the ranks where it failed with the message, the others
 * saying so), so they all leave the test together and the collective
 * calls of the next test still match.
 */
#ifndef GNN_TESTS_MPITEST_H
#define GNN_TESTS_MPITEST_H

#include "graph/base/log.h"
#include "tests/common/testutil.h"

#include <mpi.h>
#include <stdio.h>

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

/*
 * The start of a test program under mpirun: MPI started, *rank and *size
 * set (the test's g_rank and g_size), the library's log at
 * level, stdout of ranks other than 0 discarded (rank 0 reports; the
 * others print only failures, on stderr), and rank 0's test seed and
 * temporary directory (dir, len bytes) given to every rank. Returns 0, or
 * 1 when stdout cannot be redirected.
 */
static inline int tu_mpi_start(int *argc, char ***argv, int *rank, int *size, int level,
                               unsigned *seed, char *dir, size_t len)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    gnn_log_set_level(level);
    if (*rank > 0 && !freopen("/dev/null", "w", stdout)) return 1;
    if (*rank == 0) {
        *seed = tu_seed();
        snprintf(dir, len, "%s", tu_tmpdir());
    }
    MPI_Bcast(seed, 1, MPI_UNSIGNED, 0, MPI_COMM_WORLD);
    MPI_Bcast(dir, (int)len, MPI_CHAR, 0, MPI_COMM_WORLD);
    return 0;
}

#endif
