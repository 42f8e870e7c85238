/*
 * What the ranks of the commands share when they work together over MPI:
 * checking MPI calls, and agreeing on failures. Every step that can fail
 * on one rank is followed by gnn_mpi_agree, an all-reduce of the return
 * codes, before the next collective call: all ranks leave together with
 * the same code, and none waits forever for a rank that left.
 */
#ifndef GNN_BASE_MPIUTIL_H
#define GNN_BASE_MPIUTIL_H

#include "graph/base/error.h"

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Call an MPI function; on failure set rc to GNN_EMPI (naming the call)
 * and goto fail. */
#define GNN_MPI_TRY(call)                                                                \
    do {                                                                                 \
        int mpi_rc_ = (call);                                                            \
        if (mpi_rc_ != MPI_SUCCESS) {                                                    \
            rc = GNN_FAIL(GNN_EMPI, "%s failed (MPI error %d)", #call, mpi_rc_);         \
            goto fail;                                                                   \
        }                                                                                \
    } while (0)

/*
 * The lowest failing code over the ranks of comm, or 0. A rank that did
 * not fail gets the message "failed on rank R (its message names the
 * cause)"; the failing rank keeps its own. Collective.
 */
int gnn_mpi_agree(MPI_Comm comm, int rc);

/*
 * The same outcome for codes the ranks exchanged with their data (each
 * rank sent its own code, or 0, to every other): codes[r] is rank r's,
 * size entries. Returns the lowest, at the lowest rank that had it, with
 * the message gnn_mpi_agree gives; 0 when none failed. Not collective.
 */
int gnn_mpi_agree_codes(const int *codes, int size, int rank);

/* The rank whose message names the cause of the last failure
 * gnn_mpi_agree agreed on, or -1 when none was agreed: a rank that failed
 * then failed alone, and must end the job (the others may be waiting for
 * it in a collective call). */
int gnn_mpi_reporting_rank(void);

/* FNV-1a of n bytes at p, continuing from h (start with GNN_FNV_BASIS):
 * a fingerprint of state that ranks compare with gnn_mpi_same. */
#define GNN_FNV_BASIS 1469598103934665603ull
static inline uint64_t gnn_fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* *same = 1 when v is the same on every rank of comm, else 0 (on every
 * rank alike). 0 or GNN_EMPI. Collective. */
int gnn_mpi_same(MPI_Comm comm, uint64_t v, int *same);

/*
 * For a failure of this rank alone where its peers may be waiting in a
 * collective call it will not make (between the calls of one exchange, or
 * inside a library's set-up): prints prog's error line for rc, prefixed
 * with this rank, and ends the job with MPI_Abort. Returns rc only if the
 * abort returns.
 */
int gnn_mpi_fail_alone(const char *prog, int rc);

#ifdef __cplusplus
}
#endif

#endif
