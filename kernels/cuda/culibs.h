/*
 * cuBLAS and cuSPARSE on demand: the C entry point of culibs.cuh, for
 * code outside the CUDA sources (the tests) that must know whether the
 * libraries of the CUDA backend can be loaded on this machine, GPU or not.
 */
#ifndef GNN_KERNELS_CUDA_CULIBS_H
#define GNN_KERNELS_CUDA_CULIBS_H

#ifdef __cplusplus
extern "C" {
#endif

/* Load libcublas and libcusparse and look up every entry point the
 * backend calls, once per process (thread-safe; later calls return the
 * first result). 0, or GNN_ENODEV with the library, the symbol and the
 * loader's message. Needs no device. */
int gnn__culibs_load(void);

#ifdef __cplusplus
}
#endif

#endif /* GNN_KERNELS_CUDA_CULIBS_H */
