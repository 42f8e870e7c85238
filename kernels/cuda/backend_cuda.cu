/*
 * The CUDA backend's operation table (kernels/backend_impl.h): opening a
 * device, buffers, cuBLAS GEMM, prepared graphs, and aggregation through
 * the registry's definitions.
 *
 * Buffers are cudaMalloc memory (never managed memory). Everything is
 * queued on the backend's one non-blocking stream; downloads and calls that
 * return a host value wait for it. GEMM takes row-major operands by asking
 * cuBLAS (column-major) for C^T = op(B)^T op(A)^T, which is the same
 * memory; it runs in plain FP32 (no TF32), so results stay within float
 * rounding of the CPU's. The built-in aggregators run the SpMM module
 * (spmm_cuda.h); plug-ins run their own CUDA entry points on the same
 * stream, with the device arrays of the prepared graph.
 */
#include "kernels/cuda/backend_cuda.cuh"
#include "kernels/cuda/device.h"

#include "graph/base/alloc.h"
#include "graph/base/log.h"
#include "kernels/aggr_builtin.h"
#include "kernels/dense_check.h"

#include <inttypes.h>
#include <pthread.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define THREADS 256

/* ---- Scratch ----------------------------------------------------------------- */

int gnn__cuda_scratch(gnn_cuda_be_t *cb, size_t bytes, void **out)
{
    if (bytes > cb->scratch_bytes) {
        if (gnn__cuda_capturing(cb)) /* growing means a wait and a free: not in a capture */
            return GNN_FAIL(GNN_ECUDA, "scratch of %zu bytes while capturing a step", bytes);
        /* The old buffer may still be in use by queued work. */
        GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "scratch");
        cudaFree(cb->scratch);
        gnn__be_note_free();
        cb->scratch = NULL;
        cb->scratch_bytes = 0;
        size_t want = bytes < 4096 ? 4096 : bytes + bytes / 2;
        cudaError_t e = gnn__cuda_malloc(&cb->scratch, want);
        if (e == cudaErrorMemoryAllocation && want > bytes) { /* then without slack */
            want = bytes;
            e = gnn__cuda_malloc(&cb->scratch, want);
        }
        if (e != cudaSuccess)
            return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                            "scratch memory (%zu bytes): %s", bytes, cudaGetErrorString(e));
        cb->scratch_bytes = want;
    }
    *out = cb->scratch;
    return 0;
}

int gnn__cuda_pinned(gnn_cuda_be_t *cb, size_t bytes, void **out)
{
    if (bytes > cb->pinned_bytes) {
        if (gnn__cuda_capturing(cb))
            return GNN_FAIL(GNN_ECUDA, "pinned scratch of %zu bytes while capturing a step", bytes);
        GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "pinned scratch");
        cudaFreeHost(cb->pinned);
        gnn__be_note_free();
        cb->pinned = NULL;
        cb->pinned_bytes = 0;
        size_t want = bytes < 4096 ? 4096 : bytes;
        GNN_CUDA_RET(cudaMallocHost(&cb->pinned, want), "pinned host memory");
        cb->pinned_bytes = want;
    }
    *out = cb->pinned;
    return 0;
}

/* ---- Memory ------------------------------------------------------------------ */

cudaError_t gnn__cuda_malloc(void **p, size_t bytes)
{
    cudaError_t e = cudaMalloc(p, bytes ? bytes : 1);
    int dev = 0;
    cudaMemPool_t pool;
    if (e == cudaErrorMemoryAllocation && cudaGetDevice(&dev) == cudaSuccess &&
        cudaDeviceGetDefaultMemPool(&pool, dev) == cudaSuccess) {
        /* What the stream-ordered pool keeps for the next batches is
         * free memory to the driver only once handed back. */
        (void)cudaGetLastError();
        e = cudaDeviceSynchronize(); /* a fault of earlier work: that is the error */
        if (e == cudaSuccess && cudaMemPoolTrimTo(pool, 0) == cudaSuccess)
            e = cudaMalloc(p, bytes ? bytes : 1);
        else if (e == cudaSuccess)
            e = cudaErrorMemoryAllocation;
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
    }
    return e;
}

static int cu_alloc(gnn_backend_t *be, size_t bytes, void **out)
{
    (void)gnn__cuda_be(be); /* its device current */
    cudaError_t e = gnn__cuda_malloc(out, bytes);
    if (e == cudaErrorMemoryAllocation)
        return GNN_FAIL(GNN_ENOMEM, "out of GPU memory (allocating %zu bytes)", bytes);
    if (e != cudaSuccess)
        return GNN_FAIL(GNN_ECUDA, "cudaMalloc of %zu bytes: %s", bytes, cudaGetErrorString(e));
    return 0;
}

/* A free that failed (the device faulted earlier, or a wait before it
 * did): nothing to return it to, so said once, the error not left for
 * the next launch to be blamed for. */
static void free_failed(cudaError_t e)
{
    static int said;
    (void)cudaGetLastError();
    if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        GNN_WARN("CUDA: freeing device memory failed: %s", cudaGetErrorString(e));
}

static void cu_free(gnn_backend_t *be, void *p)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    if (gnn__cuda_capturing(cb)) { /* neither a wait nor a free now: once the capture ends */
        if (cb->n_deferred == cb->cap_deferred) {
            size_t cap = cb->cap_deferred ? 2 * cb->cap_deferred : 8;
            void **d = (void **)gnn_realloc_array(cb->deferred, cap, sizeof *d);
            if (!d) return; /* no room to remember it: it stays allocated (a leak, not a fault) */
            cb->deferred = d;
            cb->cap_deferred = cap;
        }
        cb->deferred[cb->n_deferred++] = p;
        return;
    }
    /* Work queued on the stream may still read p. */
    cudaError_t e = cudaStreamSynchronize(cb->stream);
    if (e == cudaSuccess) e = cudaFree(p);
    if (e != cudaSuccess) free_failed(e);
}

/* The frees deferred by a capture, now that it has ended. */
static void free_deferred(gnn_cuda_be_t *cb)
{
    if (!cb->n_deferred) return;
    cudaError_t e = cudaStreamSynchronize(cb->stream);
    for (size_t i = 0; i < cb->n_deferred; i++) {
        cudaError_t ef = cudaFree(cb->deferred[i]);
        if (e == cudaSuccess) e = ef;
    }
    if (e != cudaSuccess) free_failed(e);
    cb->n_deferred = 0;
}

static int cu_upload(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    /* From pageable memory the caller may reuse src on return; from
     * pinned memory the copy may run later (kernels/backend.h says so). */
    GNN_CUDA_RET(gnn__cuda_upload(dst, src, bytes, cb->stream), "copy to the device");
    return 0;
}

static int cu_host_alloc(gnn_backend_t *be, size_t bytes, void **out)
{
    (void)gnn__cuda_be(be);
    cudaError_t e = cudaMallocHost(out, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *out = NULL;
        return GNN_FAIL(GNN_ENOMEM, "%zu bytes of pinned host memory: %s", bytes,
                        cudaGetErrorString(e));
    }
    return 0;
}

static void cu_host_free(gnn_backend_t *be, void *p)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    /* A queued copy may still read it (a wait: never inside a captured
     * step, which gnn_be_host_free's rule checks on the emulation). */
    cudaError_t e = cudaStreamSynchronize(cb->stream);
    if (e == cudaSuccess) e = cudaFreeHost(p);
    if (e != cudaSuccess) free_failed(e);
}

/* Host memory mapped for the device. cudaHostRegister pins whole pages and
 * refuses a range that shares a page with one registered before
 * (cudaErrorHostMemoryAlreadyRegistered), as two arrays next to each other
 * on the heap do. So what is registered here is kept as page ranges
 * (regions) with counts: a mapping registers only the pages of its range
 * that no region holds yet, and holds one count of every region its
 * range touches; a region is unregistered when its last mapping goes.
 * Regions are registered portable (every device's context sees them), so
 * the table serves every backend of the process. A range another library
 * registered already (an MPI's CUDA transport) is used as it is when the
 * device reads all of it through one address range, and never
 * unregistered here. */
typedef struct {
    uintptr_t lo, hi; /* pages [lo, hi) */
    int count, foreign;
} region_t;
typedef struct {
    void *host;
    size_t bytes;
} mapping_t;
static region_t *g_regions;
static mapping_t *g_mappings;
static size_t g_n_regions, g_cap_regions, g_n_mappings, g_cap_mappings;
static pthread_mutex_t g_map_lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t page_size(void)
{
    const long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uintptr_t)p : 4096;
}

/* The pages [*lo, *hi) of host's bytes (at least one byte). */
static void page_range(const void *host, size_t bytes, uintptr_t *lo, uintptr_t *hi)
{
    const uintptr_t p = page_size(), a = (uintptr_t)host;
    *lo = a & ~(p - 1);
    *hi = (a + (bytes ? bytes : 1) + p - 1) & ~(p - 1);
}

/* Unregister region i (its count 0) and take it out of the table. */
static void region_drop(size_t i)
{
    if (!g_regions[i].foreign && cudaHostUnregister((void *)g_regions[i].lo) != cudaSuccess)
        (void)cudaGetLastError();
    g_regions[i] = g_regions[--g_n_regions];
}

/* One count less of every region [lo, hi) touches; those at 0 go. */
static void regions_release(uintptr_t lo, uintptr_t hi)
{
    for (size_t i = g_n_regions; i-- > 0;)
        if (g_regions[i].lo < hi && lo < g_regions[i].hi && --g_regions[i].count <= 0)
            region_drop(i);
}

cudaError_t gnn__cuda_copy_host(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                                cudaStream_t st, int *pinned)
{
    const uintptr_t h0 = (uintptr_t)(kind == cudaMemcpyHostToDevice ? src : dst);
    const uintptr_t end = h0 + bytes;
    int in_any = 0;
    for (uintptr_t at = h0; at < end;) { /* piece [at, cut) */
        uintptr_t cut = end;
        int in = 0;
        pthread_mutex_lock(&g_map_lock);
        for (size_t i = 0; i < g_n_regions; i++) {
            const region_t *r = &g_regions[i];
            if (r->lo <= at && at < r->hi) {
                in = 1;
                if (r->hi < cut) cut = r->hi;
            } else if (r->lo > at && r->lo < cut) {
                cut = r->lo;
            }
        }
        pthread_mutex_unlock(&g_map_lock);
        const size_t off = at - h0;
        cudaError_t e = cudaMemcpyAsync((char *)dst + off, (const char *)src + off, cut - at,
                                        kind, st);
        if (e != cudaSuccess) {
            if (pinned) *pinned = in_any; /* pieces queued before may still run */
            return e;
        }
        in_any |= in;
        at = cut;
    }
    if (pinned) *pinned = in_any;
    return cudaSuccess;
}

cudaError_t gnn__cuda_upload(void *dst, const void *src, size_t bytes, cudaStream_t st)
{
    int pinned = 0;
    cudaError_t e = gnn__cuda_copy_host(dst, src, bytes, cudaMemcpyHostToDevice, st, &pinned);
    if (pinned) { /* src is the caller's once this returns */
        cudaError_t w = cudaStreamSynchronize(st);
        if (e == cudaSuccess) e = w;
    }
    return e;
}

/* Register pages [lo, hi), none of them in a region of the table. Not
 * read-only for the device: the first and last pages may hold other
 * arrays of the heap, which copies from the device write into. Read-only
 * only where the host itself maps the pages so (plain registration
 * refused). */
static cudaError_t region_add(uintptr_t lo, uintptr_t hi)
{
    const unsigned flags = cudaHostRegisterMapped | cudaHostRegisterPortable;
    int foreign = 0;
    cudaError_t e = cudaHostRegister((void *)lo, hi - lo, flags);
    if (e != cudaSuccess && e != cudaErrorHostMemoryAlreadyRegistered) {
        (void)cudaGetLastError();
        cudaError_t r = cudaHostRegister((void *)lo, hi - lo, flags | cudaHostRegisterReadOnly);
        if (r == cudaSuccess || r == cudaErrorHostMemoryAlreadyRegistered)
            e = r;
        else
            (void)cudaGetLastError();
    }
    if (e == cudaErrorHostMemoryAlreadyRegistered) {
        /* Registered outside this table: usable only if the device reads
         * the whole range at one offset from the host's addresses. */
        (void)cudaGetLastError();
        void *d0 = NULL, *d1 = NULL;
        e = cudaHostGetDevicePointer(&d0, (void *)lo, 0);
        if (e == cudaSuccess) e = cudaHostGetDevicePointer(&d1, (void *)(hi - 1), 0);
        if (e == cudaSuccess && (uintptr_t)d1 - (uintptr_t)d0 != hi - 1 - lo)
            e = cudaErrorHostMemoryAlreadyRegistered;
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return cudaErrorHostMemoryAlreadyRegistered;
        }
        foreign = 1;
    }
    if (e != cudaSuccess) return e;
    g_regions[g_n_regions++] = (region_t){lo, hi, 0, foreign};
    return cudaSuccess;
}

static cudaError_t map_locked(void *host, size_t bytes, void **dev)
{
    *dev = NULL;
    uintptr_t lo, hi;
    page_range(host, bytes, &lo, &hi);
    /* Room first: the new regions are at most the gaps between the old. */
    if (g_n_mappings == g_cap_mappings) {
        size_t cap = g_cap_mappings ? 2 * g_cap_mappings : 8;
        mapping_t *m = (mapping_t *)gnn_realloc_array(g_mappings, cap, sizeof *m);
        if (!m) return cudaErrorMemoryAllocation;
        g_mappings = m;
        g_cap_mappings = cap;
    }
    if (g_cap_regions < 2 * g_n_regions + 1) {
        size_t cap = 2 * g_n_regions + 8;
        region_t *r = (region_t *)gnn_realloc_array(g_regions, cap, sizeof *r);
        if (!r) return cudaErrorMemoryAllocation;
        g_regions = r;
        g_cap_regions = cap;
    }
    /* Register the pages no region holds, gap by gap. */
    const size_t old = g_n_regions;
    cudaError_t e = cudaSuccess;
    for (uintptr_t at = lo; at < hi && e == cudaSuccess;) {
        uintptr_t end = hi;
        int inside = 0;
        for (size_t i = 0; i < g_n_regions && !inside; i++) {
            if (g_regions[i].lo <= at && at < g_regions[i].hi) {
                at = g_regions[i].hi;
                inside = 1;
            } else if (g_regions[i].lo > at && g_regions[i].lo < end) {
                end = g_regions[i].lo;
            }
        }
        if (inside) continue;
        e = region_add(at, end);
        at = end;
    }
    if (e != cudaSuccess) { /* nothing of this call left registered */
        while (g_n_regions > old) region_drop(g_n_regions - 1);
        return e;
    }
    for (size_t i = 0; i < g_n_regions; i++)
        if (g_regions[i].lo < hi && lo < g_regions[i].hi) g_regions[i].count++;
    /* The device's view of the range: one address range (the host's own
     * on every current platform), or the range spans registrations the
     * device sees apart and cannot be read as one array. */
    void *d0 = NULL, *d1 = NULL;
    const size_t b = bytes ? bytes : 1;
    e = cudaHostGetDevicePointer(&d0, host, 0);
    if (e == cudaSuccess) e = cudaHostGetDevicePointer(&d1, (char *)host + (b - 1), 0);
    if (e == cudaSuccess && (uintptr_t)d1 - (uintptr_t)d0 != b - 1) e = cudaErrorInvalidValue;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        regions_release(lo, hi);
        return e;
    }
    g_mappings[g_n_mappings++] = (mapping_t){host, bytes};
    *dev = d0;
    return cudaSuccess;
}

cudaError_t gnn__cuda_map_host(void *host, size_t bytes, void **dev)
{
    pthread_mutex_lock(&g_map_lock);
    cudaError_t e = map_locked(host, bytes, dev);
    pthread_mutex_unlock(&g_map_lock);
    return e;
}

void gnn__cuda_unmap_host(void *host)
{
    pthread_mutex_lock(&g_map_lock);
    for (size_t i = g_n_mappings; i-- > 0;) /* the latest mapping of host */
        if (g_mappings[i].host == host) {
            uintptr_t lo, hi;
            page_range(host, g_mappings[i].bytes, &lo, &hi);
            regions_release(lo, hi);
            g_mappings[i] = g_mappings[--g_n_mappings];
            break;
        }
    pthread_mutex_unlock(&g_map_lock);
}

static int cu_map_host(gnn_backend_t *be, void *host, size_t bytes, void **dev)
{
    (void)gnn__cuda_be(be);
    GNN_CUDA_RET(gnn__cuda_map_host(host, bytes, dev), "host memory mapped for the device");
    return 0;
}

static void cu_unmap_host(gnn_backend_t *be, void *host)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    /* Queued work may still read it. A wait that failed (a fault of
     * earlier work) is not left for the next launch to be blamed for. */
    if (cudaStreamSynchronize(cb->stream) != cudaSuccess) (void)cudaGetLastError();
    gnn__cuda_unmap_host(host);
}

static int cu_download(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(gnn__cuda_copy_host(dst, src, bytes, cudaMemcpyDeviceToHost, cb->stream, NULL),
                 "copy from the device");
    GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "copy from the device");
    return 0;
}

static int cu_copy(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cb->stream),
                 "device copy");
    return 0;
}

static int cu_zero(gnn_backend_t *be, void *dst, size_t bytes)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(cudaMemsetAsync(dst, 0, bytes, cb->stream), "device memset");
    return 0;
}

static int cu_mem_available(gnn_backend_t *be, size_t *bytes)
{
    size_t free_b = 0, total = 0;
    (void)gnn__cuda_be(be); /* its device current on this thread */
    GNN_CUDA_RET(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    *bytes = free_b;
    return 0;
}

/* The device's used memory beyond the backend's start, with what the
 * stream-ordered pool reserved at its most beyond what it reserves now
 * (a peak between two calls); the most of these over the calls. */
static int cu_mem_peak(gnn_backend_t *be, size_t *bytes)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    size_t free_b = 0, total = 0;
    GNN_CUDA_RET(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    size_t used = total - free_b, now = used > cb->mem_base ? used - cb->mem_base : 0;
    cudaMemPool_t pool;
    uint64_t high = 0, cur = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, cb->dev) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &high) == cudaSuccess &&
        cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &cur) == cudaSuccess) {
        if (high > cur) now += (size_t)(high - cur);
    } else {
        (void)cudaGetLastError();
    }
    if (now > cb->mem_peak) cb->mem_peak = now;
    *bytes = cb->mem_peak;
    return 0;
}

static int cu_sync(gnn_backend_t *be)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(cudaStreamSynchronize(cb->stream), "queued device work");
    return 0;
}

/* ---- GEMM -------------------------------------------------------------------- */

/* c[i][j] = beta * c[i][j] (0 when beta == 0, c not read): the k == 0 case. */
__global__ void k_scale_matrix(int64_t m, int64_t n, float beta, float *c, int64_t ldc)
{
    int64_t total = m * n;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t i = e / n, j = e - i * n;
        float *p = c + i * ldc + j;
        *p = beta == 0.0f ? 0.0f : beta * *p;
    }
}

static int cu_gemm(gnn_backend_t *be, int ta, int tb, int64_t m, int64_t n, int64_t k,
                   float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                   float beta, float *c, int64_t ldc)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_TRY_RET(gnn__dense_check_gemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc));
    if (m == 0 || n == 0) return 0;
    if (k == 0) {
        k_scale_matrix<<<gnn__cuda_blocks(m * n, THREADS), THREADS, 0, cb->stream>>>(m, n, beta,
                                                                                   c, ldc);
        GNN_CUDA_LAUNCHED("gemm (k = 0)");
        return 0;
    }
    /* Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. */
    CUBLAS_RET(GNN_CU(cublasSgemm)(cb->cublas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                           ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n, (int)m, (int)k, &alpha, b,
                           (int)ldb, a, (int)lda, &beta, c, (int)ldc),
               "cublasSgemm");
    return 0;
}

/* ---- Graphs and aggregation -------------------------------------------------- */

/* What a prepared graph holds on this backend (gnn_bgraph_t.impl), and what
 * the built-ins find in call->host_private. */
typedef struct {
    gnn_cuda_graph_t *cg;
    const gnn_cuda_spmm_ctx_t *ctx;
} cuda_bgraph_t;

static int cu_graph_prepare(gnn_backend_t *be, gnn_bgraph_t *g)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    cuda_bgraph_t *bg = (cuda_bgraph_t *)gnn_calloc(1, sizeof *bg);
    GNN_CHECK_RET(bg, GNN_ENOMEM, "prepared graph");
    bg->ctx = &cb->spmm;
    int rc = gnn__cuda_graph_create(&cb->spmm, g->sg, &bg->cg, &g->dev);
    if (rc < 0) {
        gnn_free(bg);
        return rc;
    }
    g->impl = bg;
    return 0;
}

/* A graph from device arrays, made on `stream` (NULL: the backend's). */
static int graph_prepare_dev_on(gnn_backend_t *be, void *stream, gnn_bgraph_t *g,
                                const int64_t *indptr, const int64_t *indices, int attn)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    cuda_bgraph_t *bg = (cuda_bgraph_t *)gnn_calloc(1, sizeof *bg);
    GNN_CHECK_RET(bg, GNN_ENOMEM, "prepared graph");
    bg->ctx = &cb->spmm;
    int rc = gnn__cuda_graph_create_dev(&cb->spmm, stream, g->host.n_dst, g->host.n_src,
                                        g->host.nnz, indptr, indices, attn, &bg->cg,
                                        &g->dev);
    if (rc < 0) {
        gnn_free(bg);
        return rc;
    }
    g->impl = bg;
    return 0;
}

static int cu_graph_prepare_dev(gnn_backend_t *be, gnn_bgraph_t *g, const int64_t *indptr,
                                const int64_t *indices, int attn)
{
    return graph_prepare_dev_on(be, NULL, g, indptr, indices, attn);
}

/* The same on the sampler's stream, from its thread, while the backend's
 * stream trains. */
static int cu_sampler_graph_prepare_dev(gnn_backend_t *be, gnn_bsampler_t *s, gnn_bgraph_t *g,
                                        const int64_t *indptr, const int64_t *indices, int attn)
{
    return graph_prepare_dev_on(be, gnn__cuda_sampler_stream(s), g, indptr, indices, attn);
}

/* ---- Captured work (CUDA graphs) ------------------------------------------------- */

/* Thread-local mode: a call of this thread that is unsafe while capturing
 * (an allocation, a wait for the device) fails the capture, so that a
 * step that is not yet in its steady state is never captured half. */
static int cu_capture_begin(gnn_backend_t *be)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(cudaStreamBeginCapture(cb->stream, cudaStreamCaptureModeThreadLocal),
                 "stream capture");
    return 0;
}

static int cu_capture_end(gnn_backend_t *be, void **out)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    cudaGraph_t g = NULL;
    cudaGraphExec_t x = NULL;
    *out = NULL;
    cudaError_t e = cudaStreamEndCapture(cb->stream, &g);
    free_deferred(cb);
    if (e == cudaSuccess && !g) e = cudaErrorStreamCaptureInvalidated;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (g) cudaGraphDestroy(g);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* reported here, not by the next call */
        return GNN_FAIL(GNN_ECUDA, "captured step: %s", cudaGetErrorString(e));
    }
    *out = (void *)x;
    return 0;
}

static int cu_capture_launch(gnn_backend_t *be, void *graph)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    GNN_CUDA_RET(cudaGraphLaunch((cudaGraphExec_t)graph, cb->stream), "launch of a captured step");
    return 0;
}

/* In flight, it is freed once it has run. */
static void cu_capture_free(gnn_backend_t *be, void *graph)
{
    (void)gnn__cuda_be(be); /* its device current */
    cudaError_t e = graph ? cudaGraphExecDestroy((cudaGraphExec_t)graph) : cudaSuccess;
    if (e != cudaSuccess) free_failed(e);
}

/* The attention slots of a graph made from device arrays. */
static int cu_attn_edges_dev(gnn_backend_t *be, gnn_bgraph_t *g, int k, gnn_aggr_edges_t *dev)
{
    cuda_bgraph_t *bg = (cuda_bgraph_t *)g->impl;
    (void)gnn__cuda_be(be); /* its device current */
    return gnn__cuda_graph_attn_edges(bg->cg, k, dev);
}

static void cu_graph_release(gnn_backend_t *be, gnn_bgraph_t *g)
{
    cuda_bgraph_t *bg = (cuda_bgraph_t *)g->impl;
    if (!bg) return;
    (void)gnn__cuda_be(be); /* its device current */
    gnn__cuda_graph_free(bg->cg); /* waits for the stream where it must */
    gnn_free(bg);
    g->impl = NULL;
}

/* Copy the recorded error message into call->msg. */
static void copy_message(const gnn_aggr_call_t *call)
{
    if (call->msg && call->msg_size > 0)
        snprintf(call->msg, call->msg_size, "%s", gnn_error_message());
}

/* The arg-max of a max call: its workspace, checked for size. */
static int max_argmax(const gnn_aggr_call_t *call, int32_t **argmax)
{
    static int32_t none; /* never read: there are no rows */
    const gnn_aggr_graph_t *g = call->graph;
    *argmax = &none;
    if (g->n_dst == 0 || call->f < 1) return 0;
    if ((uint64_t)g->n_dst > SIZE_MAX / sizeof(int32_t) / (uint64_t)call->f)
        return GNN_FAIL(GNN_EINVAL, "built-in aggregator max: %" PRId64 " x %" PRId64
                                    " arg-max does not fit in memory",
                        g->n_dst, call->f);
    size_t need = (size_t)g->n_dst * (size_t)call->f * sizeof(int32_t);
    if (!call->workspace || call->workspace_size < need)
        return GNN_FAIL(GNN_EINVAL, "built-in aggregator max: workspace of %zu bytes, needs %zu",
                        call->workspace ? call->workspace_size : (size_t)0, need);
    *argmax = (int32_t *)call->workspace;
    return 0;
}

static int builtin_run(const gnn_aggr_call_t *call, gnn_aggr_t aggr, const float *in, float *out,
                       int backward)
{
    const cuda_bgraph_t *bg = (const cuda_bgraph_t *)call->host_private;
    if (!bg) return GNN_FAIL(GNN_EINVAL, "built-in aggregator %s: no prepared graph",
                             gnn_aggr_name(aggr));
    int32_t *argmax = NULL;
    int rc = aggr == GNN_AGGR_MAX ? max_argmax(call, &argmax) : 0;
    if (rc == 0)
        rc = backward ? gnn__cuda_spmm_backward(bg->ctx, bg->cg, aggr, call->f, in, argmax, out)
                      : gnn__cuda_spmm_forward(bg->ctx, bg->cg, aggr, call->f, in, out, argmax);
    if (rc < 0) copy_message(call);
    return rc;
}

#define CUDA_BUILTIN(lower, upper)                                                          \
    static int lower##_fwd(const gnn_aggr_call_t *call, const float *x, float *y)           \
    {                                                                                       \
        return builtin_run(call, GNN_AGGR_##upper, x, y, 0);                                \
    }                                                                                       \
    static int lower##_bwd(const gnn_aggr_call_t *call, const float *x, const float *y,     \
                           const float *dy, float *dx)                                      \
    {                                                                                       \
        (void)x;                                                                            \
        (void)y;                                                                            \
        return builtin_run(call, GNN_AGGR_##upper, dy, dx, 1);                              \
    }
CUDA_BUILTIN(sum, SUM)
CUDA_BUILTIN(mean, MEAN)
CUDA_BUILTIN(gcn, GCN)
CUDA_BUILTIN(max, MAX)
#undef CUDA_BUILTIN

static const gnn_aggr_forward_fn builtin_fwd[GNN_AGGR_COUNT_] = {sum_fwd, mean_fwd, gcn_fwd,
                                                                 max_fwd};
static const gnn_aggr_backward_fn builtin_bwd[GNN_AGGR_COUNT_] = {sum_bwd, mean_bwd, gcn_bwd,
                                                                  max_bwd};

static gnn_aggr_forward_fn cu_aggr_forward(const gnn_aggr_def_t *def)
{
    int kind = gnn__aggr_builtin_kind(def);
    return kind >= 0 ? builtin_fwd[kind] : def->cuda_forward;
}

static gnn_aggr_backward_fn cu_aggr_backward(const gnn_aggr_def_t *def)
{
    int kind = gnn__aggr_builtin_kind(def);
    return kind >= 0 ? builtin_bwd[kind] : def->cuda_backward;
}

static gnn_aggr_score_fn cu_attn_score(const gnn_aggr_def_t *def)
{
    return gnn__aggr_builtin_is_gat(def) ? gnn__cuda_gat_score : def->cuda_score;
}

static gnn_aggr_score_backward_fn cu_attn_score_backward(const gnn_aggr_def_t *def)
{
    return gnn__aggr_builtin_is_gat(def) ? gnn__cuda_gat_score_backward : def->cuda_score_backward;
}

static void cu_aggr_call(gnn_backend_t *be, const gnn_bgraph_t *g, gnn_aggr_call_t *call)
{
    call->stream = (void *)gnn__cuda_be(be)->stream;
    call->host_private = g->impl;
}

static int cu_set_spmm(gnn_backend_t *be, gnn_spmm_impl_t impl, int deterministic)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    cb->spmm.impl = impl;
    cb->spmm.deterministic = deterministic != 0;
    cb->spmm.generation++;
    return 0;
}

static int cu_set_tf32(gnn_backend_t *be, int on)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    CUBLAS_RET(GNN_CU(cublasSetMathMode)(cb->cublas,
                                         on ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH),
               "cublasSetMathMode");
    return 0;
}

static gnn_spmm_impl_t cu_spmm_choice(gnn_backend_t *be, const gnn_bgraph_t *g, gnn_aggr_t aggr,
                                      int64_t f, int backward)
{
    const cuda_bgraph_t *bg = (const cuda_bgraph_t *)g->impl;
    if (!bg || g->be != be) return GNN_SPMM_AUTO; /* a graph of another backend */
    return gnn__cuda_spmm_choice(&gnn__cuda_be(be)->spmm, bg->cg, aggr, f, backward);
}

/* ---- Opening and closing ----------------------------------------------------- */

static void cu_close(gnn_backend_t *be)
{
    gnn_cuda_be_t *cb = (gnn_cuda_be_t *)be->impl;
    if (!cb) return;
    cudaSetDevice(cb->dev);
    if (cb->stream) cudaStreamSynchronize(cb->stream);
    if (cb->cusparse) GNN_CU(cusparseDestroy)(cb->cusparse);
    if (cb->cublas) GNN_CU(cublasDestroy)(cb->cublas);
    free_deferred(cb);
    gnn_free(cb->deferred);
    cudaFree(cb->scratch);
    cudaFree(cb->blas_ws);
    cudaFreeHost(cb->pinned);
    if (cb->stream) cudaStreamDestroy(cb->stream);
    gnn_free(cb);
    be->impl = NULL;
}

static const gnn_backend_ops_t cuda_ops = {
    /* .alloc = */ cu_alloc,
    /* .free = */ cu_free,
    /* .upload = */ cu_upload,
    /* .download = */ cu_download,
    /* .copy = */ cu_copy,
    /* .zero = */ cu_zero,
    /* .sync = */ cu_sync,
    /* .gemm = */ cu_gemm,
    /* .bias_add = */ gnn__cuda_bias_add,
    /* .bias_grad = */ gnn__cuda_bias_grad,
    /* .relu = */ gnn__cuda_relu,
    /* .relu_backward = */ gnn__cuda_relu_backward,
    /* .dropout = */ gnn__cuda_dropout,
    /* .dropout_backward = */ gnn__cuda_dropout_backward,
    /* .dropout_rows = */ gnn__cuda_dropout_rows,
    /* .axpby = */ gnn__cuda_axpby,
    /* .gather_rows = */ gnn__cuda_gather_rows,
    /* .softmax_xent = */ gnn__cuda_softmax_xent,
    /* .adam = */ gnn__cuda_adam,
    /* .count_correct = */ gnn__cuda_count_correct,
    /* .argmax_rows = */ gnn__cuda_argmax_rows,
    /* .graph_prepare = */ cu_graph_prepare,
    /* .graph_release = */ cu_graph_release,
    /* .aggr_forward = */ cu_aggr_forward,
    /* .aggr_backward = */ cu_aggr_backward,
    /* .aggr_call = */ cu_aggr_call,
    /* .sparse_prepare = */ gnn__cuda_sparse_prepare,
    /* .sparse_release = */ gnn__cuda_sparse_release,
    /* .sparse_dropout = */ gnn__cuda_sparse_dropout,
    /* .sparse_mm = */ gnn__cuda_sparse_mm,
    /* .sparse_mm_t = */ gnn__cuda_sparse_mm_t,
    /* .set_spmm = */ cu_set_spmm,
    /* .spmm_choice = */ cu_spmm_choice,
    /* .close = */ cu_close,
    /* Attention functions: the built-in gat's kernels (attn_cuda.cu), a
     * plug-in's CUDA entry points. */
    /* .attn_score = */ cu_attn_score,
    /* .attn_score_backward = */ cu_attn_score_backward,
    /* .attn_forward = */ gnn__cuda_attn_forward,
    /* .attn_backward = */ gnn__cuda_attn_backward,
    /* .elu = */ gnn__cuda_elu,
    /* .elu_backward = */ gnn__cuda_elu_backward,
    /* .sparse_opt_step = */ gnn__cuda_sparse_opt_step,
    /* .copy_rows = */ gnn__cuda_copy_rows,
    /* .mem_available = */ cu_mem_available,
    /* .scatter_rows = */ gnn__cuda_scatter_rows,
    /* .gemm_rows = */ NULL, /* device buffers are gathered by copy_rows */
    /* .gemm_pair = */ NULL, /* two cuBLAS products */
    /* .set_tf32 = */ cu_set_tf32,
    /* .bias_act = */ gnn__cuda_bias_act,
    /* .bias_act_drop = */ gnn__cuda_bias_act_drop,
    /* .relu_drop_backward = */ gnn__cuda_relu_drop_backward,
    /* .sampler_prepare = */ gnn__cuda_sampler_prepare,
    /* .sampler_release = */ gnn__cuda_sampler_release,
    /* .sample = */ gnn__cuda_sample,
    /* .sampler_resize = */ gnn__cuda_sampler_resize,
    /* .graph_prepare_dev = */ cu_graph_prepare_dev,
    /* .softmax_xent_async = */ gnn__cuda_softmax_xent_async,
    /* .map_host = */ cu_map_host,
    /* .unmap_host = */ cu_unmap_host,
    /* .gather_rows_cached = */ gnn__cuda_gather_rows_cached,
    /* .host_alloc = */ cu_host_alloc,
    /* .host_free = */ cu_host_free,
    /* .sampler_graph_prepare_dev = */ cu_sampler_graph_prepare_dev,
    /* .batch_release = */ gnn__cuda_batch_release,
    /* .batch_fence_free = */ gnn__cuda_batch_fence_free,
    /* .attn_edges_dev = */ cu_attn_edges_dev,
    /* .capture_begin = */ cu_capture_begin,
    /* .capture_end = */ cu_capture_end,
    /* .capture_launch = */ cu_capture_launch,
    /* .capture_free = */ cu_capture_free,
    /* .sampler_download = */ gnn__cuda_sampler_download,
    /* .sampler_download_n = */ gnn__cuda_sampler_download_n,
    /* .mem_peak = */ cu_mem_peak,
};

/* A kernel of this build: whether the GPU runs the build's code. */
__global__ void k_probe(void) {}

/* Handles and stream of cb on its device; on failure the caller closes. */
static int open_device(gnn_cuda_be_t *cb)
{
    GNN_CUDA_RET(cudaSetDevice(cb->dev), "cudaSetDevice");
    cudaDeviceProp prop;
    GNN_CUDA_RET(cudaGetDeviceProperties(&prop, cb->dev), "cudaGetDeviceProperties");
    cudaFuncAttributes fa;
    cudaError_t e = cudaFuncGetAttributes(&fa, k_probe);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return GNN_FAIL(GNN_ECUDA,
                        "GPU %d (%s, compute capability %d.%d) runs no code of this build "
                        "(CUDA architectures %s): configure with -DCMAKE_CUDA_ARCHITECTURES=%d%d "
                        "(%s)",
                        cb->dev, prop.name, prop.major, prop.minor, GNN_CUDA_ARCHS, prop.major,
                        prop.minor, cudaGetErrorString(e));
    }
    GNN_CUDA_RET(cudaStreamCreateWithFlags(&cb->stream, cudaStreamNonBlocking),
                 "cudaStreamCreate");
    CUBLAS_RET(GNN_CU(cublasCreate)(&cb->cublas), "cublasCreate");
    CUBLAS_RET(GNN_CU(cublasSetStream)(cb->cublas, cb->stream), "cublasSetStream");
    /* Plain FP32: no TF32 tensor-core rounding of the operands. */
    CUBLAS_RET(GNN_CU(cublasSetMathMode)(cb->cublas, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
    /* After cublasSetStream, which resets it to cuBLAS's pool. */
    GNN_CUDA_RET(gnn__cuda_malloc(&cb->blas_ws, CUBLAS_WS_BYTES), "cuBLAS workspace");
    CUBLAS_RET(GNN_CU(cublasSetWorkspace)(cb->cublas, cb->blas_ws, CUBLAS_WS_BYTES),
               "cublasSetWorkspace");
    CUSPARSE_RET(GNN_CU(cusparseCreate)(&cb->cusparse), "cusparseCreate");
    CUSPARSE_RET(GNN_CU(cusparseSetStream)(cb->cusparse, cb->stream), "cusparseSetStream");
    /* The stream-ordered pool (a mini-batch's blocks and temporaries) keeps
     * up to 1 GiB of what is freed for the next batch, instead of handing
     * it back to the driver at every synchronisation (its default
     * threshold, 0); a batch's blocks take tens of MB. */
    /* Nor may an allocation on one stream take a block whose free is still
     * queued on another by making its stream wait for that one (the
     * pool's internal dependencies): the device sampler's stream would
     * then wait for the training step whose blocks it reuses, and the next
     * batch be ready only after it. Blocks whose free has run are reused
     * all the same. */
    /* Graphs, batches and the device sampler allocate from the pool: a
     * device without one (some virtualised GPUs) is refused here rather
     * than at its first graph. The two settings are best effort. */
    int pools = 0, no = 0;
    if (cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, cb->dev) != cudaSuccess)
        (void)cudaGetLastError();
    if (!pools)
        return GNN_FAIL(GNN_EUNSUPPORTED,
                        "GPU %d (%s) has no stream-ordered memory pool "
                        "(cudaDevAttrMemoryPoolsSupported is 0), which the CUDA backend needs",
                        cb->dev, prop.name);
    cudaMemPool_t pool;
    uint64_t keep = (uint64_t)1 << 30;
    if (cudaDeviceGetDefaultMemPool(&pool, cb->dev) != cudaSuccess ||
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess ||
        cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no) !=
            cudaSuccess)
        (void)cudaGetLastError();
    cb->spmm.stream = (void *)cb->stream;
    cb->spmm.cusparse = (void *)cb->cusparse;
    cb->spmm.impl = GNN_SPMM_AUTO;
    cb->spmm.deterministic = 0;
    cb->spmm.generation = 1;
    cb->spmm.sm_count = prop.multiProcessorCount;
    /* What the device holds now (the context, the handles, the cuBLAS
     * workspace): gnn_be_mem_peak counts from here, the pool's high-water
     * mark too (an earlier backend of the process may have raised it). */
    size_t free_b = 0, total = 0;
    GNN_CUDA_RET(cudaMemGetInfo(&free_b, &total), "cudaMemGetInfo");
    cb->mem_base = total - free_b;
    uint64_t zero = 0;
    if (cudaDeviceGetDefaultMemPool(&pool, cb->dev) != cudaSuccess ||
        cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReservedMemHigh, &zero) != cudaSuccess)
        (void)cudaGetLastError();
    return 0;
}

int gnn__backend_cuda_count(void)
{
    int n = 0;
    return gnn_cuda_device_count(&n) == 0 ? n : 0;
}

int gnn__backend_cuda_init(gnn_backend_t *be, int dev)
{
    int n = 0;
    GNN_TRY_RET(gnn_cuda_device_count(&n)); /* a driver too old for the runtime, named */
    if (n == 0) return GNN_FAIL(GNN_ENODEV, "backend cuda: no CUDA device on this machine");
    if (dev >= n)
        return GNN_FAIL(GNN_ENODEV, "backend cuda:%d: this machine has %d CUDA device%s", dev, n,
                        n == 1 ? "" : "s");
    GNN_TRY_RET(gnn__culibs_load());
    gnn_cuda_be_t *cb = (gnn_cuda_be_t *)gnn_calloc(1, sizeof *cb);
    GNN_CHECK_RET(cb, GNN_ENOMEM, "CUDA backend");
    cb->dev = dev;
    be->impl = cb;
    int rc = open_device(cb);
    if (rc < 0) {
        cu_close(be);
        return rc;
    }
    cudaDeviceProp prop;
    if (cudaGetDeviceProperties(&prop, dev) != cudaSuccess) prop.name[0] = '\0';
    be->ops = &cuda_ops;
    be->kind = GNN_BACKEND_CUDA;
    be->host_memory = 0;
    be->device = dev;
    be->stream = (void *)cb->stream;
    snprintf(be->desc, sizeof be->desc, "cuda:%d (%.100s, %.0f GiB)", dev, prop.name,
             (double)prop.totalGlobalMem / (double)(1ull << 30));
    return 0;
}
