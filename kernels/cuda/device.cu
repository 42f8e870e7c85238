/*
 * CUDA device discovery, device buffers and a fill kernel (device.h).
 *
 * The fill kernel is the first device code of the backend: it proves the
 * nvcc path in every build and gives tests a way to poison buffers.
 */
#include "kernels/cuda/device.h"

#include "graph/base/error.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

/* A failed call's error is also kept as this thread's last error; it is
 * cleared here (a sticky one stays), or the next launch check would report
 * it as its own. */
#define CUDA_TRY(call, what)                                                       \
    do {                                                                           \
        cudaError_t e_ = (call);                                                   \
        if (e_ != cudaSuccess) {                                                   \
            (void)cudaGetLastError();                                              \
            return GNN_FAIL(GNN_ECUDA, "%s: %s", (what), cudaGetErrorString(e_)); \
        }                                                                          \
    } while (0)

int gnn_cuda_device_count(int *n)
{
    *n = 0;
    cudaError_t e = cudaGetDeviceCount(n);
    /* No driver at all reads as too old a driver (cudaDriverGetVersion
     * gives 0 then): no device. A driver that is there but older than the
     * runtime needs is an error to name, not a machine without a GPU. */
    int drv = 0;
    if (e == cudaErrorInsufficientDriver &&
        (cudaDriverGetVersion(&drv) != cudaSuccess || drv <= 0 || drv >= CUDART_VERSION))
        drv = 0;
    if (e == cudaErrorInsufficientDriver && drv > 0) {
        cudaGetLastError();
        *n = 0;
        return GNN_FAIL(GNN_ECUDA, "the NVIDIA driver supports CUDA %d.%d, older than this "
                                   "build's runtime (CUDA %d.%d)",
                        drv / 1000, drv % 1000 / 10, CUDART_VERSION / 1000,
                        CUDART_VERSION % 1000 / 10);
    }
    if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
        cudaGetLastError(); /* clear the sticky error */
        *n = 0;
        return 0;
    }
    if (e != cudaSuccess) {
        *n = 0;
        return GNN_FAIL(GNN_ECUDA, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
    }
    return 0;
}

int gnn_cuda_device_info(int dev, char *name, size_t len, size_t *total_mem)
{
    cudaDeviceProp p;
    CUDA_TRY(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    if (name && len) snprintf(name, len, "%s", p.name);
    if (total_mem) *total_mem = p.totalGlobalMem;
    return 0;
}

int gnn_cuda_device_uuid(int dev, unsigned char uuid[16])
{
    cudaDeviceProp p;
    CUDA_TRY(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
    memcpy(uuid, p.uuid.bytes, 16);
    return 0;
}

int gnn_cuda_set_device(int dev)
{
    CUDA_TRY(cudaSetDevice(dev), "cudaSetDevice");
    return 0;
}

int gnn_cuda_alloc(size_t bytes, void **d)
{
    *d = NULL;
    cudaError_t e = cudaMalloc(d, bytes ? bytes : 1);
    if (e == cudaSuccess) return 0;
    (void)cudaGetLastError();
    *d = NULL;
    if (e == cudaErrorMemoryAllocation)
        return GNN_FAIL(GNN_ENOMEM, "out of GPU memory (allocating %zu bytes)", bytes);
    return GNN_FAIL(GNN_ECUDA, "cudaMalloc: %s", cudaGetErrorString(e));
}

void gnn_cuda_free(void *d)
{
    if (d) cudaFree(d);
}

int gnn_cuda_copy_to_device(void *d, const void *h, size_t bytes)
{
    CUDA_TRY(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "copy to device");
    return 0;
}

int gnn_cuda_copy_to_host(void *h, const void *d, size_t bytes)
{
    CUDA_TRY(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "copy to host");
    return 0;
}

__global__ void fill_f32(float *d, size_t n, float v)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        d[i] = v;
}

int gnn_cuda_fill_f32(float *d, size_t n, float v)
{
    if (n == 0) return 0;
    size_t blocks = (n + 255) / 256;
    if (blocks > 65535) blocks = 65535;
    fill_f32<<<(unsigned)blocks, 256>>>(d, n, v);
    CUDA_TRY(cudaGetLastError(), "fill kernel launch");
    CUDA_TRY(cudaDeviceSynchronize(), "fill kernel");
    return 0;
}
