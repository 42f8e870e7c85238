/*
 * Device sampling on the CUDA backend (gnn_be_sample, kernels/backend.h):
 * the steps of cpu/sample_cpu.c as kernels on the backend's stream, over
 * the same per-element functions (kernels/sample_steps.h), with CUB's
 * prefix sums and segmented sort:
 *   1. k_count: a row's draws (less a batch's excluded edges, whose table
 *      goes up at the batch's start); ExclusiveSum -> the block's indptr;
 *   2. k_draw: a thread per row draws into gids (global ids);
 *   3. k_first: atomicMin(first[u], e) for every entry of a node not yet
 *      in the node list (loc[u] < 0);
 *   4. k_flag: entry e is the first of a new node; ExclusiveSum -> pos;
 *   5. k_assign: new node u of entry e gets id n_nodes + pos[e];
 *   6. k_relabel: local ids; SortKeys per row (segmented) into the block.
 * Typed draws (R-GCN's) count and draw per relation run of a row, keep
 * each draw's relation beside it, and sort (local id, relation) as one
 * key, split back by k_split.
 * Sampling once, a hop's rows of the hop before keep their draws: their
 * part of the block is copied from that one's, and the steps run over the
 * new rows only (entries numbered from 0 in gids and pos, rptr their
 * offsets; k_indptr then places them after the kept ones).
 * The first entry is the same whatever the order the atomics land in, so
 * a batch is the host sampler's, entry for entry. Two counts are read back
 * a hop (its entries, its new nodes). loc and first live over the graph's
 * nodes for the sampler's life, unset again after each batch.
 *
 * The graph's CSR is copied to the device when it fits in half the free
 * memory (or when asked), else read in place from the host's arrays,
 * pinned and mapped (cudaHostRegister): the draws then read rows over the
 * bus.
 *
 * The sampler has a stream of its own, its own pinned word for the counts
 * and grows the batch's buffers itself, and a call returns once its batch
 * is complete on the device: a thread of the caller's may sample the next
 * batch while the backend's stream trains on the last one.
 */
#include "kernels/cuda/backend_cuda.cuh"
#include "kernels/sample_steps.h"

#include "graph/base/alloc.h"

#include <cub/cub.cuh>

#include <inttypes.h>

#define THREADS 256
#define NONE 0xFFFFFFFFFFFFFFFFull

typedef struct {
    cudaStream_t st;           /* the sampler's own stream */
    int64_t *pinned;           /* a count read back */
    int64_t n;                 /* graph nodes */
    int64_t n_ids;             /* node ids below it: the per-node arrays' length */
    int64_t *indptr, *indices; /* the graph's CSR (device pointers) */
    void *h_indptr, *h_indices; /* the host arrays when mapped in place (else NULL) */
    int32_t *loc;              /* per node: local id in the batch, -1 */
    unsigned long long *first; /* per node: first entry of a hop drawing it, NONE */
    int64_t *cnt, *rptr, *gids, *flag, *pos, *local; /* scratch */
    size_t cnt_cap, rptr_cap, gids_cap, flag_cap, pos_cap, local_cap;
    int64_t *xr, *xo, *xs; /* a batch's excluded edges (kernels/sample_steps.h) */
    size_t xr_cap, xo_cap, xs_cap;
    int32_t *rel; /* typed draws: each draw's relation */
    size_t rel_cap;
    /* Rows held elsewhere (gnn_be_sampler_set_remote): a hop's rows read
     * back (host), and the holders' draws up here (gnn_bremote_t's). */
    int64_t *h_rows;
    size_t h_rows_cap;
    int64_t *ridx, *roff, *rsrc;
    size_t ridx_cap, roff_cap, rsrc_cap;
    int32_t *rrel;
    size_t rrel_cap;
    gnn_bremote_t rm; /* the hop's answers on the host (freed at the next hop) */
    void *temp; /* CUB's */
    size_t temp_bytes;
    int broken; /* loc and first could not be reset after a failure */
} cu_sampler_t;

static void sampler_free(cu_sampler_t *c)
{
    if (!c) return;
    if (c->st) cudaStreamSynchronize(c->st);
    if (c->h_indptr) gnn__cuda_unmap_host(c->h_indptr);
    if (c->h_indices) gnn__cuda_unmap_host(c->h_indices);
    if (!c->h_indptr) cudaFree(c->indptr);
    if (!c->h_indices) cudaFree(c->indices);
    cudaFree(c->loc);
    cudaFree(c->first);
    cudaFree(c->cnt);
    cudaFree(c->rptr);
    cudaFree(c->gids);
    cudaFree(c->flag);
    cudaFree(c->pos);
    cudaFree(c->local);
    cudaFree(c->xr);
    cudaFree(c->xo);
    cudaFree(c->xs);
    cudaFree(c->rel);
    cudaFree(c->ridx);
    cudaFree(c->roff);
    cudaFree(c->rsrc);
    cudaFree(c->rrel);
    gnn_free(c->h_rows);
    gnn__be_remote_done(&c->rm);
    cudaFree(c->temp);
    cudaFreeHost(c->pinned);
    if (c->st) cudaStreamDestroy(c->st);
    gnn_free(c);
}

/* cudaMallocAsync of bytes on st; out of memory, a wait for the device
 * (frees queued on other streams make room only once they have run: rare,
 * a nearly full device) and once more. */
static cudaError_t stream_alloc(cudaStream_t st, void **p, size_t bytes)
{
    cudaError_t e = cudaMallocAsync(p, bytes, st);
    if (e == cudaErrorMemoryAllocation) {
        (void)cudaGetLastError();
        e = cudaDeviceSynchronize();
        if (e == cudaSuccess) e = cudaMallocAsync(p, bytes, st);
    }
    if (e != cudaSuccess) *p = NULL;
    return e;
}

/* *p: room for bytes (contents not kept), in the sampler stream's order:
 * the old buffer goes back to the pool after the work queued on st, with
 * no wait (a cudaFree waits for the whole device, a collective of another
 * stream included, as its first buffers grow). */
static int stream_grow(cudaStream_t st, void **p, size_t bytes, const char *what)
{
    cudaError_t e = *p ? cudaFreeAsync(*p, st) : cudaSuccess;
    *p = NULL;
    if (e == cudaSuccess) e = stream_alloc(st, p, bytes);
    GNN_CUDA_RET(e, what);
    return 0;
}

/* *a: room for n int64 (contents not kept). */
static int grow(cudaStream_t st, int64_t **a, size_t *cap, size_t n, const char *what)
{
    if (*a && n <= *cap) return 0;
    *cap = 0;
    size_t want = n + n / 4 + 64;
    GNN_TRY_RET(stream_grow(st, (void **)a, want * sizeof(int64_t), what));
    *cap = want;
    return 0;
}

/* *a: room for n int32 (contents not kept). */
static int grow32(cudaStream_t st, int32_t **a, size_t *cap, size_t n, const char *what)
{
    if (*a && n <= *cap) return 0;
    *cap = 0;
    size_t want = n + n / 4 + 64;
    GNN_TRY_RET(stream_grow(st, (void **)a, want * sizeof(int32_t), what));
    *cap = want;
    return 0;
}

static int temp_grow(cudaStream_t st, cu_sampler_t *c, size_t bytes)
{
    if (c->temp && bytes <= c->temp_bytes) return 0;
    c->temp_bytes = 0;
    size_t want = bytes + bytes / 4 + 256;
    GNN_TRY_RET(stream_grow(st, &c->temp, want, "device sampler: scratch"));
    c->temp_bytes = want;
    return 0;
}

/* Host array h of bytes pinned and mapped in place: *reg = h once
 * registered (for the unregister), *dev its device address. */
static cudaError_t map_host(const void *h, size_t bytes, void **reg, void **dev)
{
    cudaError_t e = gnn__cuda_map_host((void *)h, bytes, dev);
    if (e == cudaSuccess) *reg = (void *)h;
    return e;
}

void *gnn__cuda_sampler_stream(const gnn_bsampler_t *s)
{
    return (void *)((const cu_sampler_t *)s->impl)->st;
}

int gnn__cuda_batch_release(gnn_backend_t *be, gnn_bbatch_t *b)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    if (!b->fence) {
        cudaEvent_t ev;
        GNN_CUDA_RET(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming),
                     "device batch: its release mark");
        b->fence = (void *)ev;
    }
    GNN_CUDA_RET(cudaEventRecord((cudaEvent_t)b->fence, cb->stream), "device batch: release");
    b->fenced = 1;
    return 0;
}

void gnn__cuda_batch_fence_free(gnn_backend_t *be, void *fence)
{
    (void)gnn__cuda_be(be); /* its device current */
    cudaEventDestroy((cudaEvent_t)fence);
}

int gnn__cuda_sampler_prepare(gnn_backend_t *be, gnn_bsampler_t *s)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const gnn_csr_t *g = s->graph;
    cu_sampler_t *c = (cu_sampler_t *)gnn_calloc(1, sizeof *c);
    GNN_CHECK_RET(c, GNN_ENOMEM, "device sampler");
    c->n = g->n_rows;
    c->n_ids = s->ids_cap;
    size_t pb = ((size_t)c->n + 1) * sizeof(int64_t), ib = ((size_t)g->nnz + 1) * sizeof(int64_t);
    cudaError_t e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
    if (e == cudaSuccess) e = cudaMallocHost((void **)&c->pinned, sizeof(int64_t));
    /* Where the CSR is read: device memory when it fits in half of what
     * is free (auto), else the host's arrays in place, mapped. */
    int host = s->where == 2;
    if (e == cudaSuccess && s->where == 0) {
        size_t free_b = 0, total = 0;
        e = cudaMemGetInfo(&free_b, &total);
        host = pb + ib > free_b / 2;
    }
    if (e == cudaSuccess && host) {
        e = map_host(g->indptr, pb, &c->h_indptr, (void **)&c->indptr);
        if (e == cudaSuccess && g->nnz > 0)
            e = map_host(g->indices, (size_t)g->nnz * sizeof(int64_t), &c->h_indices,
                         (void **)&c->indices);
        else if (e == cudaSuccess)
            e = gnn__cuda_malloc((void **)&c->indices, sizeof(int64_t)); /* never read */
    }
    if (e == cudaSuccess && !host) e = gnn__cuda_malloc((void **)&c->indptr, pb);
    if (e == cudaSuccess && !host) e = gnn__cuda_malloc((void **)&c->indices, ib);
    if (e == cudaSuccess)
        e = gnn__cuda_malloc((void **)&c->loc, ((size_t)c->n_ids + 1) * sizeof(int32_t));
    if (e == cudaSuccess)
        e = gnn__cuda_malloc((void **)&c->first,
                             ((size_t)c->n_ids + 1) * sizeof(unsigned long long));
    if (e == cudaSuccess && !host)
        e = gnn__cuda_copy_host(c->indptr, g->indptr, ((size_t)c->n + 1) * sizeof(int64_t),
                                cudaMemcpyHostToDevice, c->st, NULL);
    if (e == cudaSuccess && !host && g->nnz > 0)
        e = gnn__cuda_copy_host(c->indices, g->indices, (size_t)g->nnz * sizeof(int64_t),
                                cudaMemcpyHostToDevice, c->st, NULL);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(c->loc, 0xFF, ((size_t)c->n_ids + 1) * sizeof(int32_t), c->st);
    if (e == cudaSuccess)
        e = cudaMemsetAsync(c->first, 0xFF, ((size_t)c->n_ids + 1) * sizeof(unsigned long long),
                            c->st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        sampler_free(c);
        return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                        "device sampler: the graph on the device (%" PRId64 " nodes, %" PRId64
                        " edges): %s",
                        g->n_rows, g->nnz, cudaGetErrorString(e));
    }
    s->impl = c;
    s->at = host ? 2 : 1;
    return 0;
}

int gnn__cuda_sampler_resize(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)gnn__cuda_be(be); /* its device current */
    cu_sampler_t *c = (cu_sampler_t *)s->impl;
    const size_t n = (size_t)s->ids_cap + 1;
    int32_t *loc = NULL;
    unsigned long long *first = NULL;
    cudaError_t e = cudaStreamSynchronize(c->st); /* no batch reading the old ones */
    if (e == cudaSuccess) e = gnn__cuda_malloc((void **)&loc, n * sizeof *loc);
    if (e == cudaSuccess) e = gnn__cuda_malloc((void **)&first, n * sizeof *first);
    if (e == cudaSuccess) e = cudaMemsetAsync(loc, 0xFF, n * sizeof *loc, c->st);
    if (e == cudaSuccess) e = cudaMemsetAsync(first, 0xFF, n * sizeof *first, c->st);
    if (e == cudaSuccess) e = cudaStreamSynchronize(c->st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        cudaFree(loc);
        cudaFree(first);
        return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                        "device sampler: arrays over %" PRId64 " node ids: %s", s->ids_cap,
                        cudaGetErrorString(e));
    }
    cudaFree(c->loc);
    cudaFree(c->first);
    c->loc = loc;
    c->first = first;
    c->n_ids = s->ids_cap;
    return 0;
}

void gnn__cuda_sampler_release(gnn_backend_t *be, gnn_bsampler_t *s)
{
    (void)gnn__cuda_be(be); /* its device current */
    sampler_free((cu_sampler_t *)s->impl);
    s->impl = NULL;
}

/* ---- Kernels ------------------------------------------------------------------ */

__global__ void k_seed(int64_t n, const int64_t *nodes, int32_t *loc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        loc[nodes[i]] = (int32_t)i;
}

__global__ void k_unset(int64_t n, const int64_t *nodes, int32_t *loc)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        loc[nodes[i]] = -1;
}

/* A batch's excluded edges on the device (xm 0: none). */
typedef struct {
    int64_t m;
    const int64_t *rows, *start, *src;
    int sorted; /* the graph's rows ascending */
} dexcl_t;

/* A hop's rows held elsewhere on the device (ridx NULL: none): new row
 * i with ridx[i] = k >= 0 takes the holder's draws src[off[k], off[k + 1])
 * (and their relations rel). */
typedef struct {
    const int64_t *ridx, *off, *src;
    const int32_t *rel;
} dremote_t;

/* cnt[i] for i < n, and cnt[n] = 0 (the sum's last entry). */
__global__ void k_count(int64_t n, const int64_t *nodes, const int64_t *gindptr,
                        const int64_t *gindices, const int32_t *et, int fanout, dexcl_t x,
                        dremote_t r, int64_t *cnt)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (i == n) {
            cnt[i] = 0;
            continue;
        }
        if (r.ridx && r.ridx[i] >= 0) {
            cnt[i] = r.off[r.ridx[i] + 1] - r.off[r.ridx[i]];
            continue;
        }
        const int64_t *xs;
        const int64_t nx = gnn__ds_excl_row(x.rows, x.start, x.src, x.m, nodes[i], &xs);
        cnt[i] = et ? gnn__ds_count_typed(gindptr, gindices, et, nodes[i], fanout, xs, nx)
                    : gnn__ds_count_excl(gindptr, gindices, x.sorted, nodes[i], fanout, xs, nx);
    }
}

/* indptr[i] = base + rptr[i] for i <= n. */
__global__ void k_indptr(int64_t n, const int64_t *rptr, int64_t base, int64_t *indptr)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i <= n;
         i += (int64_t)gridDim.x * blockDim.x)
        indptr[i] = base + rptr[i];
}

__global__ void k_draw(int64_t n, const int64_t *nodes, const int64_t *gindptr,
                       const int64_t *gindices, const int32_t *et, const int64_t *kid,
                       const int64_t *rptr, int fanout, uint64_t key, int h, dexcl_t x,
                       dremote_t r, int64_t *gids, int32_t *rel)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (r.ridx && r.ridx[i] >= 0) { /* the holder's draws, as they came */
            const int64_t a = r.off[r.ridx[i]], k = r.off[r.ridx[i] + 1] - a;
            for (int64_t q = 0; q < k; q++) gids[rptr[i] + q] = r.src[a + q];
            if (et)
                for (int64_t q = 0; q < k; q++) rel[rptr[i] + q] = r.rel[a + q];
            continue;
        }
        const int64_t *xs;
        const int64_t nx = gnn__ds_excl_row(x.rows, x.start, x.src, x.m, nodes[i], &xs);
        if (et)
            gnn__ds_draw_typed(gindptr, gindices, et, kid, nodes[i], fanout, key, h, xs, nx,
                               gids + rptr[i], rel + rptr[i]);
        else
            gnn__ds_draw_excl(gindptr, gindices, kid, nodes[i], rptr[i + 1] - rptr[i], key, h,
                              x.sorted, xs, nx, gids + rptr[i]);
    }
}

__global__ void k_first(int64_t nnz, const int64_t *gids, const int32_t *loc,
                        unsigned long long *first)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t u = gids[e];
        if (loc[u] < 0) atomicMin(&first[u], (unsigned long long)e);
    }
}

/* flag[e] for e < nnz, flag[nnz] = 0. */
__global__ void k_flag(int64_t nnz, const int64_t *gids, const int32_t *loc,
                       const unsigned long long *first, int64_t *flag)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e <= nnz;
         e += (int64_t)gridDim.x * blockDim.x) {
        int64_t f = 0;
        if (e < nnz) {
            const int64_t u = gids[e];
            f = loc[u] < 0 && first[u] == (unsigned long long)e;
        }
        flag[e] = f;
    }
}

__global__ void k_assign(int64_t nnz, const int64_t *gids, const int64_t *pos, int64_t n_nodes,
                         int32_t *loc, unsigned long long *first, int64_t *nodes)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz;
         e += (int64_t)gridDim.x * blockDim.x)
        if (pos[e + 1] != pos[e]) {
            const int64_t u = gids[e], id = n_nodes + pos[e];
            loc[u] = (int32_t)id;
            nodes[id] = u;
            first[u] = NONE;
        }
}

/* local[e]: entry e's local id (typed: its sort key with the relation). */
__global__ void k_relabel(int64_t nnz, const int64_t *gids, const int32_t *loc, const int32_t *rel,
                          int64_t *local)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz;
         e += (int64_t)gridDim.x * blockDim.x)
        local[e] = rel ? gnn__ds_typed_key(loc[gids[e]], rel[e]) : loc[gids[e]];
}

/* Typed: the sorted keys back into local ids and relations. */
__global__ void k_split(int64_t nnz, int64_t *ids, int32_t *rel)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz;
         e += (int64_t)gridDim.x * blockDim.x)
        gnn__ds_typed_split(ids[e], &ids[e], &rel[e]);
}

/* ---- A batch ------------------------------------------------------------------ */

/* One int64 of device memory at p, through the sampler's pinned word. */
static int read_i64(cu_sampler_t *c, const int64_t *p, int64_t *out)
{
    GNN_CUDA_RET(cudaMemcpyAsync(c->pinned, p, sizeof(int64_t), cudaMemcpyDeviceToHost, c->st),
                 "device sampler: a count");
    GNN_CUDA_RET(cudaStreamSynchronize(c->st), "device sampler: a count");
    *out = *c->pinned;
    return 0;
}

/* A buffer of the batch with room for n elements of size bytes (contents
 * kept when keep is set), in the sampler stream's order: the old one goes
 * back to the pool after the work queued on the stream, which first
 * waited for the batch's last reader (gnn_be_batch_release), or its
 * caller did; gnn_be_batch_free frees the buffers at the end. */
static int bgrow(cu_sampler_t *c, void **buf, size_t *cap, size_t n, size_t size, int keep)
{
    if (*buf && n <= *cap) return 0;
    size_t want = n + n / 4 + 64;
    void *p = NULL;
    GNN_CUDA_RET(stream_alloc(c->st, &p, want * size), "device sampler: a batch buffer");
    cudaError_t e = cudaSuccess;
    if (keep && *buf && *cap)
        e = cudaMemcpyAsync(p, *buf, *cap * size, cudaMemcpyDeviceToDevice, c->st);
    if (e == cudaSuccess && *buf) e = cudaFreeAsync(*buf, c->st);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaFreeAsync(p, c->st);
        (void)cudaGetLastError();
        return GNN_FAIL(GNN_ECUDA, "device sampler: a batch buffer: %s", cudaGetErrorString(e));
    }
    if (*buf) gnn__be_note_free(); /* a buffer of the backend's gone */
    *buf = p;
    *cap = want;
    return 0;
}

static unsigned blocks_for(int64_t n)
{
    return gnn__cuda_blocks(n > 0 ? n : 1, THREADS);
}

/* Hop h's n new rows (rows, device; hrows their host copy where the
 * caller has one: hop 0's seeds) with rows held elsewhere: read back,
 * handed to gnn__be_remote_hop (hx the batch's excluded edges, host), the
 * holders' draws up into the sampler's buffers, described by *r (zeroed
 * where the hop has none). */
static int remote_rows(gnn_bsampler_t *s, cu_sampler_t *c, int h, uint64_t key,
                       const gnn_bexcl_t *hx, const int64_t *rows, const int64_t *hrows,
                       int64_t n, dremote_t *r)
{
    cudaStream_t st = c->st;
    memset(r, 0, sizeof *r);
    gnn__be_remote_done(&c->rm);
    if (!hrows && n > 0 && (!c->h_rows || (size_t)n > c->h_rows_cap)) {
        gnn_free(c->h_rows);
        c->h_rows_cap = 0;
        c->h_rows = (int64_t *)gnn_malloc_array((size_t)n + (size_t)n / 4 + 64, sizeof(int64_t));
        GNN_CHECK_RET(c->h_rows, GNN_ENOMEM, "device sampler: %" PRId64 " rows read back", n);
        c->h_rows_cap = (size_t)n + (size_t)n / 4 + 64;
    }
    if (!hrows && n > 0) {
        GNN_CUDA_RET(gnn__cuda_copy_host(c->h_rows, rows, (size_t)n * sizeof(int64_t),
                                         cudaMemcpyDeviceToHost, st, NULL),
                     "device sampler: a hop's rows");
        GNN_CUDA_RET(cudaStreamSynchronize(st), "device sampler: a hop's rows");
    }
    gnn_bremote_t *rm = &c->rm;
    GNN_TRY_RET(gnn__be_remote_hop(s, h, key, hx, hrows ? hrows : c->h_rows, n, rm));
    if (!rm->idx) return 0;
    const int64_t ns = rm->off[rm->nr];
    GNN_TRY_RET(grow(st, &c->ridx, &c->ridx_cap, (size_t)n + 1, "device sampler: remote rows"));
    GNN_TRY_RET(grow(st, &c->roff, &c->roff_cap, (size_t)rm->nr + 1,
                     "device sampler: remote rows"));
    GNN_TRY_RET(grow(st, &c->rsrc, &c->rsrc_cap, (size_t)ns + 1, "device sampler: remote draws"));
    if (s->etype)
        GNN_TRY_RET(grow32(st, &c->rrel, &c->rrel_cap, (size_t)ns + 1,
                           "device sampler: remote draws"));
    /* From pageable memory: each returns once its bytes are staged. */
    const struct {
        void *dst;
        const void *src;
        size_t bytes;
    } up[] = {{c->ridx, rm->idx, (size_t)n * sizeof(int64_t)},
              {c->roff, rm->off, (size_t)(rm->nr + 1) * sizeof(int64_t)},
              {c->rsrc, rm->src, (size_t)ns * sizeof(int64_t)},
              {c->rrel, rm->rel, s->etype ? (size_t)ns * sizeof(int32_t) : 0}};
    for (size_t k = 0; k < sizeof up / sizeof up[0]; k++)
        if (up[k].bytes > 0)
            GNN_CUDA_RET(gnn__cuda_upload(up[k].dst, up[k].src, up[k].bytes, st),
                         "device sampler: the holders' draws");
    r->ridx = c->ridx;
    r->off = c->roff;
    r->src = c->rsrc;
    r->rel = s->etype ? c->rrel : NULL;
    return 0;
}

/* The hops of a batch whose seeds (host: seeds) are nodes[0, n) with loc
 * set; *n_nodes counts the nodes with loc set (for the reset). */
static int hops(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                uint64_t key, dexcl_t x, const gnn_bexcl_t *hx, gnn_bbatch_t *b,
                int64_t *n_nodes)
{
    (void)be;
    cu_sampler_t *c = (cu_sampler_t *)s->impl;
    cudaStream_t st = c->st;
    const int32_t *et = s->etype;
    *n_nodes = n;
    for (int h = 0; h < s->layers; h++) {
        const int l = s->layers - 1 - h;
        const int64_t n_dst = *n_nodes;
        const int64_t kept = s->once && h > 0 ? b->n_dst[l + 1] : 0;
        const int64_t nnz_kept = kept > 0 ? b->nnz[l + 1] : 0, n_new = n_dst - kept;
        const int64_t *rows = b->nodes + kept;
        /* 0. rows held elsewhere: drawn by their holders (the hook) */
        dremote_t rr;
        memset(&rr, 0, sizeof rr);
        if (s->remote.draw)
            GNN_TRY_RET(remote_rows(s, c, h, key, hx, rows, h == 0 ? seeds : NULL, n_new, &rr));
        /* 1. the new rows' counts and their prefix sum; indptr */
        GNN_TRY_RET(grow(st, &c->cnt, &c->cnt_cap, (size_t)n_new + 1, "device sampler: counts"));
        GNN_TRY_RET(grow(st, &c->rptr, &c->rptr_cap, (size_t)n_new + 1, "device sampler: offsets"));
        GNN_TRY_RET(bgrow(c, (void **)&b->indptr[l], &b->cap_indptr[l], (size_t)n_dst + 1,
                          sizeof(int64_t), 0));
        k_count<<<blocks_for(n_new + 1), THREADS, 0, st>>>(n_new, rows, c->indptr, c->indices, et,
                                                           s->fanout[h], x, rr, c->cnt);
        GNN_CUDA_LAUNCHED("sampler count");
        size_t tb = 0;
        GNN_CUDA_RET(cub::DeviceScan::ExclusiveSum(NULL, tb, c->cnt, c->rptr, n_new + 1, st),
                     "device sampler: prefix sum");
        GNN_TRY_RET(temp_grow(st, c, tb));
        tb = c->temp_bytes;
        GNN_CUDA_RET(cub::DeviceScan::ExclusiveSum(c->temp, tb, c->cnt, c->rptr, n_new + 1, st),
                     "device sampler: prefix sum");
        int64_t nnz_new = 0;
        GNN_TRY_RET(read_i64(c, c->rptr + n_new, &nnz_new));
        const int64_t nnz = nnz_kept + nnz_new;
        if (kept > 0)
            GNN_CUDA_RET(cudaMemcpyAsync(b->indptr[l], b->indptr[l + 1],
                                         (size_t)kept * sizeof(int64_t),
                                         cudaMemcpyDeviceToDevice, st),
                         "device sampler: the kept rows");
        k_indptr<<<blocks_for(n_new + 1), THREADS, 0, st>>>(n_new, c->rptr, nnz_kept,
                                                            b->indptr[l] + kept);
        GNN_CUDA_LAUNCHED("sampler indptr");
        /* 2. the draws */
        GNN_TRY_RET(grow(st, &c->gids, &c->gids_cap, (size_t)nnz_new + 1, "device sampler: draws"));
        GNN_TRY_RET(grow(st, &c->flag, &c->flag_cap, (size_t)nnz_new + 1, "device sampler: flags"));
        GNN_TRY_RET(grow(st, &c->pos, &c->pos_cap, (size_t)nnz_new + 1, "device sampler: new ids"));
        GNN_TRY_RET(grow(st, &c->local, &c->local_cap, (size_t)nnz_new + 1, "device sampler: ids"));
        GNN_TRY_RET(bgrow(c, (void **)&b->indices[l], &b->cap_indices[l], (size_t)nnz + 1,
                          sizeof(int64_t), 0));
        if (et) {
            GNN_TRY_RET(grow32(st, &c->rel, &c->rel_cap, (size_t)nnz_new + 1,
                               "device sampler: relations"));
            GNN_TRY_RET(bgrow(c, (void **)&b->etype[l], &b->cap_etype[l], (size_t)nnz + 1,
                              sizeof(int32_t), 0));
        }
        GNN_TRY_RET(bgrow(c, (void **)&b->nodes, &b->cap_nodes, (size_t)(n_dst + nnz_new),
                          sizeof(int64_t), 1));
        rows = b->nodes + kept;
        k_draw<<<blocks_for(n_new), THREADS, 0, st>>>(n_new, rows, c->indptr, c->indices, et,
                                                      s->key_ids, c->rptr, s->fanout[h], key, h,
                                                      x, rr, c->gids, et ? c->rel : NULL);
        GNN_CUDA_LAUNCHED("sampler draw");
        /* 3, 4. the first entry of each new node; flags and their sum */
        k_first<<<blocks_for(nnz_new), THREADS, 0, st>>>(nnz_new, c->gids, c->loc, c->first);
        GNN_CUDA_LAUNCHED("sampler first");
        k_flag<<<blocks_for(nnz_new + 1), THREADS, 0, st>>>(nnz_new, c->gids, c->loc, c->first,
                                                            c->flag);
        GNN_CUDA_LAUNCHED("sampler flag");
        tb = 0;
        GNN_CUDA_RET(cub::DeviceScan::ExclusiveSum(NULL, tb, c->flag, c->pos, nnz_new + 1, st),
                     "device sampler: prefix sum");
        GNN_TRY_RET(temp_grow(st, c, tb));
        tb = c->temp_bytes;
        GNN_CUDA_RET(cub::DeviceScan::ExclusiveSum(c->temp, tb, c->flag, c->pos, nnz_new + 1, st),
                     "device sampler: prefix sum");
        /* 5. the new ids (first is unset again here) */
        k_assign<<<blocks_for(nnz_new), THREADS, 0, st>>>(nnz_new, c->gids, c->pos, n_dst, c->loc,
                                                          c->first, b->nodes);
        GNN_CUDA_LAUNCHED("sampler assign");
        int64_t fresh = 0;
        GNN_TRY_RET(read_i64(c, c->pos + nnz_new, &fresh));
        *n_nodes = n_dst + fresh;
        /* 6. local ids, each row sorted; the kept rows' block copied */
        k_relabel<<<blocks_for(nnz_new), THREADS, 0, st>>>(nnz_new, c->gids, c->loc,
                                                           et ? c->rel : NULL, c->local);
        GNN_CUDA_LAUNCHED("sampler relabel");
        if (nnz_new > 0) {
            int64_t *out = b->indices[l] + nnz_kept;
            tb = 0;
            GNN_CUDA_RET(cub::DeviceSegmentedSort::SortKeys(NULL, tb, c->local, out, nnz_new,
                                                            n_new, c->rptr, c->rptr + 1, st),
                         "device sampler: row sort");
            GNN_TRY_RET(temp_grow(st, c, tb));
            tb = c->temp_bytes;
            GNN_CUDA_RET(cub::DeviceSegmentedSort::SortKeys(c->temp, tb, c->local, out, nnz_new,
                                                            n_new, c->rptr, c->rptr + 1, st),
                         "device sampler: row sort");
            if (et) {
                k_split<<<blocks_for(nnz_new), THREADS, 0, st>>>(nnz_new, out,
                                                                 b->etype[l] + nnz_kept);
                GNN_CUDA_LAUNCHED("sampler split");
            }
        }
        if (nnz_kept > 0)
            GNN_CUDA_RET(cudaMemcpyAsync(b->indices[l], b->indices[l + 1],
                                         (size_t)nnz_kept * sizeof(int64_t),
                                         cudaMemcpyDeviceToDevice, st),
                         "device sampler: the kept rows");
        if (nnz_kept > 0 && et)
            GNN_CUDA_RET(cudaMemcpyAsync(b->etype[l], b->etype[l + 1],
                                         (size_t)nnz_kept * sizeof(int32_t),
                                         cudaMemcpyDeviceToDevice, st),
                         "device sampler: the kept rows' relations");
        b->n_dst[l] = n_dst;
        b->n_src[l] = *n_nodes;
        b->nnz[l] = nnz;
    }
    return 0;
}

/* A copy to host memory on the sampler's own stream, waited for: the call
 * returns with the bytes there (pageable or pinned dst). */
int gnn__cuda_sampler_download(gnn_backend_t *be, gnn_bsampler_t *s, void *dst, const void *src,
                               size_t bytes)
{
    (void)gnn__cuda_be(be); /* its device current on this thread */
    cu_sampler_t *c = (cu_sampler_t *)s->impl;
    GNN_CUDA_RET(gnn__cuda_copy_host(dst, src, bytes, cudaMemcpyDeviceToHost, c->st, NULL),
                 "device sampler: a copy to the host");
    GNN_CUDA_RET(cudaStreamSynchronize(c->st), "device sampler: a copy to the host");
    return 0;
}

/* n copies to host memory on the sampler's own stream, waited for once. */
int gnn__cuda_sampler_download_n(gnn_backend_t *be, gnn_bsampler_t *s, int n, void *const *dst,
                                 const void *const *src, const size_t *bytes)
{
    (void)gnn__cuda_be(be); /* its device current on this thread */
    cu_sampler_t *c = (cu_sampler_t *)s->impl;
    cudaError_t e = cudaSuccess;
    for (int i = 0; i < n && e == cudaSuccess; i++)
        if (bytes[i])
            e = gnn__cuda_copy_host(dst[i], src[i], bytes[i], cudaMemcpyDeviceToHost, c->st, NULL);
    cudaError_t w = cudaStreamSynchronize(c->st); /* also after a failure: nothing left queued */
    if (e == cudaSuccess) e = w;
    GNN_CUDA_RET(e, "device sampler: copies to the host");
    return 0;
}

/* The excluded edges' table up on the sampler's stream (the host arrays
 * stay as they are until the stream has been waited for: at the end of
 * the batch, or here on failure). */
static int excl_up(cu_sampler_t *c, const gnn_bsampler_t *s, const gnn_bexcl_t *hx, dexcl_t *x)
{
    memset(x, 0, sizeof *x);
    x->sorted = (s->graph->flags & GNN_CSR_SORTED) != 0;
    if (!hx || hx->m == 0) return 0;
    const int64_t m = hx->m, ns = hx->start[m];
    GNN_TRY_RET(grow(c->st, &c->xr, &c->xr_cap, (size_t)m, "device sampler: excluded edges"));
    GNN_TRY_RET(grow(c->st, &c->xo, &c->xo_cap, (size_t)m + 1, "device sampler: excluded edges"));
    GNN_TRY_RET(grow(c->st, &c->xs, &c->xs_cap, (size_t)ns, "device sampler: excluded edges"));
    const struct {
        int64_t *dst;
        const int64_t *src;
        int64_t n;
    } up[] = {{c->xr, hx->rows, m}, {c->xo, hx->start, m + 1}, {c->xs, hx->src, ns}};
    for (size_t k = 0; k < sizeof up / sizeof up[0]; k++)
        GNN_CUDA_RET(gnn__cuda_copy_host(up[k].dst, up[k].src, (size_t)up[k].n * sizeof(int64_t),
                                         cudaMemcpyHostToDevice, c->st, NULL),
                     "device sampler: excluded edges");
    x->m = m;
    x->rows = c->xr;
    x->start = c->xo;
    x->src = c->xs;
    return 0;
}

int gnn__cuda_sample(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                     uint64_t key, const gnn_bexcl_t *hx, gnn_bbatch_t *b)
{
    (void)gnn__cuda_be(be); /* its device current on this thread */
    cu_sampler_t *c = (cu_sampler_t *)s->impl;
    cudaStream_t st = c->st;
    GNN_CHECK_RET(!c->broken, GNN_ECUDA,
                  "device sampler: not reset after an earlier failure; create it again");
    if (b->fenced) { /* the last step that read b first (gnn_be_batch_release) */
        GNN_CUDA_RET(cudaStreamWaitEvent(st, (cudaEvent_t)b->fence, 0),
                     "device sampler: waiting for the batch's last reader");
        b->fenced = 0;
    }
    dexcl_t x;
    int rc = excl_up(c, s, hx, &x);
    if (rc == 0) rc = bgrow(c, (void **)&b->nodes, &b->cap_nodes, (size_t)n, sizeof(int64_t), 0);
    /* The seeds from the caller's memory: a pageable copy returns once
     * the bytes are staged (a pinned one later: the stream is waited for
     * before this call returns), and the stream orders the rest after it. */
    if (rc == 0 && n > 0) {
        cudaError_t e = gnn__cuda_copy_host(b->nodes, seeds, (size_t)n * sizeof(int64_t),
                                            cudaMemcpyHostToDevice, st, NULL);
        if (e != cudaSuccess)
            rc = GNN_FAIL(GNN_ECUDA, "device sampler: seeds: %s", cudaGetErrorString(e));
    }
    if (rc < 0) { /* copies from host memory may be queued: done before it changes */
        (void)cudaStreamSynchronize(st);
        (void)cudaGetLastError();
        return rc;
    }
    k_seed<<<blocks_for(n), THREADS, 0, st>>>(n, b->nodes, c->loc);
    GNN_CUDA_LAUNCHED("sampler seeds");
    int64_t n_nodes = n;
    rc = hops(be, s, seeds, n, key, x, hx, b, &n_nodes);
    if (rc == 0) { /* loc unset for the next batch (first is unset by the hops) */
        k_unset<<<blocks_for(n_nodes), THREADS, 0, st>>>(n_nodes, b->nodes, c->loc);
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaStreamSynchronize(st); /* the batch complete */
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            rc = GNN_FAIL(GNN_ECUDA, "device sampler: %s", cudaGetErrorString(e));
        }
    }
    if (rc < 0) { /* loc and first may be set anywhere: unset both whole */
        cudaError_t e =
            cudaMemsetAsync(c->loc, 0xFF, ((size_t)c->n_ids + 1) * sizeof(int32_t), st);
        if (e == cudaSuccess)
            e = cudaMemsetAsync(c->first, 0xFF,
                                ((size_t)c->n_ids + 1) * sizeof(unsigned long long), st);
        if (e == cudaSuccess) e = cudaStreamSynchronize(st);
        if (e != cudaSuccess) { /* later batches would be wrong: refused instead */
            (void)cudaStreamSynchronize(st);
            (void)cudaGetLastError();
            c->broken = 1;
        }
        gnn__be_remote_done(&c->rm); /* the stream waited for: no copy reads it */
        return rc;
    }
    gnn__be_remote_done(&c->rm); /* (likewise) */
    b->n_input = n_nodes;
    return 0;
}
