/*
 * Failure agreement across ranks (mpiutil.h).
 */
#include "graph/base/mpiutil.h"

#include <stdio.h>

/* Written by whichever thread agreed last (gnn-train agrees from its
 * training and its fetch thread): atomic, so a read sees one whole value. */
static _Atomic int reporter = -1;

int gnn_mpi_reporting_rank(void) { return reporter; }

int gnn_mpi_agree_codes(const int *codes, int size, int rank)
{
    int v = 0, r = -1;
    for (int q = 0; q < size; q++)
        if (codes[q] < v) {
            v = codes[q];
            r = q;
        }
    if (v == 0) return 0;
    reporter = r;
    if (codes[rank] >= 0)
        return GNN_FAIL(v, "failed on rank %d (its message names the cause)", r);
    return v; /* a failing rank keeps its own message */
}

int gnn_mpi_agree(MPI_Comm comm, int rc)
{
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    struct {
        int v, r;
    } in = {rc < 0 ? rc : 0, rank}, out;
    if (MPI_Allreduce(&in, &out, 1, MPI_2INT, MPI_MINLOC, comm) != MPI_SUCCESS)
        return GNN_FAIL(GNN_EMPI, "MPI_Allreduce failed");
    if (out.v < 0) reporter = out.r;
    if (out.v < 0 && in.v == 0)
        return GNN_FAIL(out.v, "failed on rank %d (its message names the cause)", out.r);
    return out.v;
}

int gnn_mpi_fail_alone(const char *prog, int rc)
{
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gnn_error_prefix("rank %d of %d", rank, size);
    gnn_error_report(prog, NULL, rc);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return rc;
}

int gnn_mpi_same(MPI_Comm comm, uint64_t v, int *same)
{
    uint64_t m[2] = {v, ~v}; /* the largest, and the complement of the smallest */
    *same = 0;
    if (MPI_Allreduce(MPI_IN_PLACE, m, 2, MPI_UINT64_T, MPI_MAX, comm) != MPI_SUCCESS)
        return GNN_FAIL(GNN_EMPI, "MPI_Allreduce failed");
    *same = m[0] == ~m[1];
    return 0;
}
