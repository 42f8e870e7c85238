/*
 * CUDA device discovery and device buffers for the CUDA backend.
 *
 * A machine without a GPU (or without a driver) is not an error here:
 * gnn_cuda_device_count reports 0 so callers can fall back or skip. Every
 * CUDA call is checked; failures are recorded as GNN_ECUDA with CUDA's own
 * message, and no function exits.
 */
#ifndef GNN_KERNELS_CUDA_DEVICE_H
#define GNN_KERNELS_CUDA_DEVICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices into *n (0 when no device or driver).
 * Returns 0, or GNN_ECUDA for any other CUDA failure. */
int gnn_cuda_device_count(int *n);
/* Name and memory of device dev ("NVIDIA H200", bytes). */
int gnn_cuda_device_info(int dev, char *name, size_t len, size_t *total_mem);
/* Make dev current for this thread. */
int gnn_cuda_set_device(int dev);
/* The 16-byte UUID of device dev: the same GPU gives the same UUID in
 * every process, whatever CUDA_VISIBLE_DEVICES numbers it. */
int gnn_cuda_device_uuid(int dev, unsigned char uuid[16]);

/* Device memory (cudaMalloc, never managed memory). */
int gnn_cuda_alloc(size_t bytes, void **d);
void gnn_cuda_free(void *d);
int gnn_cuda_copy_to_device(void *d, const void *h, size_t bytes);
int gnn_cuda_copy_to_host(void *h, const void *d, size_t bytes);
/* d[0..n) = v, by a kernel on the default stream, then synchronised. */
int gnn_cuda_fill_f32(float *d, size_t n, float v);

#ifdef __cplusplus
}
#endif

#endif
