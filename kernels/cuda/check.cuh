/*
 * Error checks shared by the CUDA sources of the backend (device code
 * only: included from .cu files).
 *
 * Every CUDA, cuBLAS and cuSPARSE call goes through one of these
 * macros, which record a GNN_E* failure with the library's own message and
 * return it from the calling function (or jump to its fail label); every
 * kernel launch is followed by GNN_CUDA_LAUNCHED. Nothing here exits.
 */
#ifndef GNN_KERNELS_CUDA_CHECK_CUH
#define GNN_KERNELS_CUDA_CHECK_CUH

#include "graph/base/error.h"
#include "kernels/cuda/culibs.cuh"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cusparse.h>

/* Return a recorded GNN_ECUDA (GNN_ENOMEM for an allocation failure).
 * The runtime also keeps a failed call's error as this thread's last
 * error; it is cleared here (a sticky error stays), or the next
 * GNN_CUDA_LAUNCHED would report it as a failure of its launch. */
#define GNN_CUDA_RET(call, what)                                                             \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            (void)cudaGetLastError();                                                        \
            return GNN_FAIL(e_ == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,       \
                            "%s: %s", (what), cudaGetErrorString(e_));                       \
        }                                                                                    \
    } while (0)

/* The same, setting rc and jumping to the function's fail label. */
#define GNN_CUDA_GOTO(call, what)                                                            \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            (void)cudaGetLastError();                                                        \
            rc = GNN_FAIL(e_ == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,         \
                          "%s: %s", (what), cudaGetErrorString(e_));                         \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)

/* Return-style forms of GNN_TRY / GNN_CHECK: C++ forbids a goto that
 * jumps over an initialisation, so device sources return directly. */
#define GNN_TRY_RET(call)                                                                    \
    do {                                                                                     \
        int rc_ = (call);                                                                    \
        if (rc_ < 0) return rc_;                                                             \
    } while (0)

#define GNN_CHECK_RET(cond, code, ...)                                                       \
    do {                                                                                     \
        if (!(cond)) return GNN_FAIL((code), __VA_ARGS__);                                   \
    } while (0)

/* Return a recorded GNN_ECUBLAS / GNN_ECUSPARSE (GNN_ENOMEM when the
 * library could not allocate) for a failed cuBLAS or cuSPARSE call. */
#define CUBLAS_RET(call, what)                                                              \
    do {                                                                                    \
        cublasStatus_t s_ = (call);                                                         \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                    \
            return GNN_FAIL(s_ == CUBLAS_STATUS_ALLOC_FAILED ? GNN_ENOMEM : GNN_ECUBLAS,    \
                            "%s: %s", (what), GNN_CU(cublasGetStatusString)(s_));    \
    } while (0)

#define CUSPARSE_RET(call, what)                                                            \
    do {                                                                                    \
        cusparseStatus_t s_ = (call);                                                       \
        if (s_ != CUSPARSE_STATUS_SUCCESS)                                                  \
            return GNN_FAIL(s_ == CUSPARSE_STATUS_ALLOC_FAILED ? GNN_ENOMEM : GNN_ECUSPARSE, \
                            "%s: %s", (what), GNN_CU(cusparseGetErrorString)(s_));  \
    } while (0)

/* After a <<<...>>> launch: a bad configuration or an earlier asynchronous
 * fault shows up here. */
#define GNN_CUDA_LAUNCHED(kernel_name) GNN_CUDA_RET(cudaGetLastError(), "launch of " kernel_name)

/* Blocks of `threads` for n items, capped at the grid limit a grid-stride
 * loop can cover. */
static inline unsigned gnn__cuda_blocks(long long n, int threads)
{
    long long b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    if (b > 1048576) b = 1048576;
    return (unsigned)b;
}

#endif
