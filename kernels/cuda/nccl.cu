/*
 * NCCL for the trainer (kernels/cuda/nccl.h): one blocking communicator
 * per rank and the in-place float allreduce of the gradients.
 *
 * The unique id crosses the API as GNN_NCCL_ID_BYTES plain bytes (checked
 * against ncclUniqueId at compile time), so callers need no NCCL header.
 * Every NCCL call is checked; a failure is GNN_ENCCL with NCCL's reason
 * and, when NCCL left one, its last detailed message (e.g. two ranks on one
 * GPU). A collective also reports the communicator's asynchronous error
 * (a failed peer or network). A communicator whose opening failed holds
 * nothing: NCCL's half-built one is aborted.
 */
#include "kernels/cuda/nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The allocator and the log have C linkage but no C++ guards of their own. */
extern "C" {
#include "graph/base/alloc.h"
#include "graph/base/log.h"
}
#include "graph/base/error.h"
#include "kernels/cuda/check.cuh"

static_assert(sizeof(ncclUniqueId) == GNN_NCCL_ID_BYTES,
              "GNN_NCCL_ID_BYTES must equal sizeof(ncclUniqueId)");

struct gnn_nccl {
    ncclComm_t comm;
    int rank, size, dev;
};

/* NCCL's last detailed message of this thread ("" when none). */
static const char *nccl_detail(void)
{
    const char *s = ncclGetLastError(NULL);
    return s ? s : "";
}

/* Record a failed NCCL result r of what as GNN_ENCCL and evaluate to it. */
#define GNN_NCCL_FAIL(r, what)                                                              \
    GNN_FAIL(GNN_ENCCL, "%s: %s%s%s%s", (what), ncclGetErrorString(r),                      \
             nccl_detail()[0] ? " (" : "", nccl_detail(), nccl_detail()[0] ? ")" : "")

/* Check an NCCL call: return its recorded failure. */
#define GNN_NCCL_RET(call, what)                                                            \
    do {                                                                                    \
        ncclResult_t r_ = (call);                                                           \
        if (r_ != ncclSuccess) return GNN_NCCL_FAIL(r_, what);                              \
    } while (0)

/* The same, setting rc and jumping to the function's fail label. */
#define GNN_NCCL_GOTO(call, what)                                                           \
    do {                                                                                    \
        ncclResult_t r_ = (call);                                                           \
        if (r_ != ncclSuccess) {                                                            \
            rc = GNN_NCCL_FAIL(r_, what);                                                   \
            goto fail;                                                                      \
        }                                                                                   \
    } while (0)

/* The communicator's state once no operation is in progress: its
 * asynchronous error, ncclSuccess when none (into *state). */
static ncclResult_t settled_state(ncclComm_t comm, ncclResult_t *state)
{
    for (;;) {
        ncclResult_t r = ncclCommGetAsyncError(comm, state);
        if (r != ncclSuccess || *state != ncclInProgress) return r;
        sched_yield();
    }
}

int gnn_nccl_unique_id(unsigned char id[GNN_NCCL_ID_BYTES])
{
    if (!id) return GNN_FAIL(GNN_EINVAL, "gnn_nccl_unique_id: NULL id");
    ncclUniqueId u;
    GNN_NCCL_RET(ncclGetUniqueId(&u), "ncclGetUniqueId");
    memcpy(id, &u, sizeof u);
    return 0;
}

int gnn_nccl_open(const unsigned char id[GNN_NCCL_ID_BYTES], int rank, int size, int dev,
                  gnn_nccl_t **out)
{
    int rc = 0;
    gnn_nccl_t *c = NULL;
    ncclUniqueId u;
    if (!out) return GNN_FAIL(GNN_EINVAL, "gnn_nccl_open: NULL output");
    *out = NULL;
    GNN_CHECK(id, GNN_EINVAL, "gnn_nccl_open: NULL id");
    GNN_CHECK(size >= 1 && rank >= 0 && rank < size, GNN_EINVAL,
              "gnn_nccl_open: rank %d outside a communicator of %d ranks", rank, size);
    GNN_CHECK(dev >= 0, GNN_EINVAL, "gnn_nccl_open: bad CUDA device %d", dev);
    c = (gnn_nccl_t *)gnn_calloc(1, sizeof *c);
    GNN_CHECK(c, GNN_ENOMEM, "NCCL communicator");
    GNN_CUDA_GOTO(cudaSetDevice(dev), "cudaSetDevice");
    memcpy(&u, id, sizeof u);
    GNN_NCCL_GOTO(ncclCommInitRank(&c->comm, size, u, rank), "ncclCommInitRank");
    c->rank = rank;
    c->size = size;
    c->dev = dev;
    *out = c;
    return 0;
fail:
    if (c && c->comm) (void)ncclCommAbort(c->comm);
    gnn_free(c);
    return rc;
}

int gnn_nccl_allreduce_f32(gnn_nccl_t *c, float *buf, size_t n, int average, void *stream)
{
    if (!c) return GNN_FAIL(GNN_EINVAL, "gnn_nccl_allreduce_f32: NULL communicator");
    if (n == 0) return 0;
    if (!buf) return GNN_FAIL(GNN_EINVAL, "gnn_nccl_allreduce_f32: NULL buffer");
    ncclResult_t r = ncclAllReduce(buf, buf, n, ncclFloat, average ? ncclAvg : ncclSum, c->comm,
                                   (cudaStream_t)stream);
    ncclResult_t state = ncclSuccess;
    if (r == ncclInProgress) r = settled_state(c->comm, &state);
    GNN_NCCL_RET(r, "ncclAllReduce");
    GNN_NCCL_RET(settled_state(c->comm, &state), "ncclCommGetAsyncError");
    if (state != ncclSuccess)
        return GNN_FAIL(GNN_ENCCL, "ncclAllReduce of %zu floats on rank %d of %d: %s%s%s%s", n,
                        c->rank, c->size, ncclGetErrorString(state), nccl_detail()[0] ? " (" : "",
                        nccl_detail(), nccl_detail()[0] ? ")" : "");
    return 0;
}

int gnn_nccl_rank(const gnn_nccl_t *c)
{
    return c ? c->rank : -1;
}

int gnn_nccl_size(const gnn_nccl_t *c)
{
    return c ? c->size : 0;
}

void gnn_nccl_close(gnn_nccl_t *c)
{
    if (!c) return;
    /* Work queued on the communicator (on any stream of the device) ends
     * before its resources go. Failures cannot be returned: they are
     * logged, and a communicator that cannot finalise is aborted. */
    cudaError_t e = cudaSetDevice(c->dev);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess)
        GNN_WARN("NCCL close on device %d: %s", c->dev, cudaGetErrorString(e));
    ncclResult_t state = ncclSuccess;
    ncclResult_t r = ncclCommFinalize(c->comm);
    if (r == ncclSuccess || r == ncclInProgress) r = settled_state(c->comm, &state);
    if (r == ncclSuccess && state == ncclSuccess) {
        r = ncclCommDestroy(c->comm);
        if (r != ncclSuccess)
            GNN_WARN("ncclCommDestroy: %s", ncclGetErrorString(r));
    } else {
        GNN_WARN("ncclCommFinalize: %s; aborting the communicator",
                 ncclGetErrorString(r != ncclSuccess ? r : state));
        (void)ncclCommAbort(c->comm);
    }
    gnn_free(c);
}

void gnn_nccl_abort(gnn_nccl_t *c)
{
    if (!c) return;
    (void)cudaSetDevice(c->dev);
    (void)ncclCommAbort(c->comm);
    gnn_free(c);
}
