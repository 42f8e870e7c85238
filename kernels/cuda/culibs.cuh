/*
 * cuBLAS and cuSPARSE, loaded when the CUDA backend is first opened.
 *
 * Linking them would make every program load them at start-up, GPU or
 * not: libcublasLt alone maps and relocates about 200 MB, so a CPU run of
 * gnn-train cost 270 MB of RSS and 0.4 s before it read its data. The
 * backend instead calls the few entry points it uses through this table,
 * filled by dlopen/dlsym of the libraries whose major versions the headers
 * name (libcublas.so.N, libcusparse.so.N) the first time a CUDA backend
 * opens. Call sites write GNN_CU(cublasSgemm)(...): the headers' _v2
 * macros still apply.
 */
#ifndef GNN_KERNELS_CUDA_CULIBS_CUH
#define GNN_KERNELS_CUDA_CULIBS_CUH

#include "kernels/cuda/culibs.h"

#include <cublas_v2.h>
#include <cusparse.h>

/* The symbols used, by their exported names. */
#define GNN_CULIBS_CUBLAS(X)                                                                  \
    X(cublasCreate_v2)                                                                        \
    X(cublasDestroy_v2)                                                                       \
    X(cublasSetStream_v2)                                                                     \
    X(cublasSetMathMode)                                                                      \
    X(cublasSetWorkspace_v2)                                                                  \
    X(cublasSgemm_v2)                                                                         \
    X(cublasGetStatusString)
#define GNN_CULIBS_CUSPARSE(X)                                                                \
    X(cusparseCreate)                                                                         \
    X(cusparseDestroy)                                                                        \
    X(cusparseSetStream)                                                                      \
    X(cusparseCreateCsr)                                                                      \
    X(cusparseDestroySpMat)                                                                   \
    X(cusparseCreateDnMat)                                                                    \
    X(cusparseDestroyDnMat)                                                                   \
    X(cusparseDnMatSetValues)                                                                 \
    X(cusparseSpMM_bufferSize)                                                                \
    X(cusparseSpMM)                                                                           \
    X(cusparseGetErrorString)

typedef struct {
#define GNN_CULIBS_MEMBER(name) decltype(&::name) name;
    GNN_CULIBS_CUBLAS(GNN_CULIBS_MEMBER)
    GNN_CULIBS_CUSPARSE(GNN_CULIBS_MEMBER)
#undef GNN_CULIBS_MEMBER
} gnn_culibs_t;

/* Filled by gnn__culibs_load (culibs.h); valid once it has returned 0.
 * A backend that cannot load the libraries does not open. */
extern gnn_culibs_t gnn__culibs;

/* The entry point `fn` (a name as the headers spell it) of the table. */
#define GNN_CU(fn) (gnn__culibs.fn)

#endif /* GNN_KERNELS_CUDA_CULIBS_CUH */
