/*
 * GPU SpMM dispatcher (spmm_cuda.h): the graph on the device, the cuSPARSE
 * path, the choice among cuSPARSE, rowcache (spmm_rowcache.cu) and
 * balanced (spmm_balanced.cu), and auto's timing of them.
 *
 * Graph. The host-prepared graph (kernels/spmm.h) is copied once with
 * cudaMallocAsync + cudaMemcpyAsync on the backend's stream: the CSR, its
 * transpose (unless the CSR is its own), the weights and the three scale
 * arrays; the pageable host side is staged when each copy returns, so
 * the caller may free it, and creation waits for nothing (a batch's block
 * is placed while the step before runs). Everything built later for the graph stays in it until
 * gnn__cuda_graph_free: cuSPARSE descriptors and value arrays, one scratch
 * buffer (cuSPARSE workspace, balanced carries: both used only within a
 * call, in stream order), two timing events and auto's choices.
 *
 * Dispatch. Sum, mean and gcn, forward and backward, are each one scaled
 * CSR product (spmm_kernels.cuh) over the CSR or the transpose, which
 * rowcache and balanced compute directly. Max has its own kernels in both
 * families (forward over the CSR, backward a gather over the transpose);
 * cuSPARSE has no max, so max runs rowcache when cuSPARSE is asked for,
 * and auto times rowcache against balanced only. A graph without edges
 * needs no product: the output is zeroed (max: arg-max -1), or gcn's self
 * term written, directly.
 *
 * cuSPARSE. cusparseSpMM on CSR x row-major dense, opA non-transposed
 * always (the backward multiplies by the transpose's own CSR). The
 * cuSPARSE documentation of cusparseSpMM (docs.nvidia.com/cuda/cusparse,
 * generic API) states: CSR supports 32- and 64-bit indices, so the graph's
 * int64 arrays are used as they are (CUSPARSE_INDEX_64I); CSR_ALG2 is the
 * algorithm intended for row-major dense matrices; cusparseSpMM_preprocess
 * is optional (it only speeds up CSR_ALG1 and CSR_ALG3) and binds its
 * buffer to the matrix, which must then stay unmodified: with one scratch
 * buffer shared by widths and directions it is not called. The same
 * documentation names CSR_ALG3 as giving the same bits in every run, but
 * on an H200 with the cuSPARSE of CUDA 13.0 two CSR_ALG3 products on a
 * power-law graph (longest row 23201 entries, width 33) differed in their
 * first element (tests/cuda/test_backend_cuda.c, 2026-12-04): no cuSPARSE
 * path is relied on for reproducible results. The normalisation is folded
 * into per-entry values built once per (direction, aggregator) on the
 * device (sum uses the weights, or ones, as they are). The output is
 * written first (zeros, or gcn's self term) and the product added with
 * beta = 1: no scaling pass over the output, and garbage (NaN) in it never
 * leaks through beta * C.
 *
 * Auto. The first call for an (aggregator, direction, width) runs each
 * candidate once to warm it up and once between two events, waits for the
 * events, and keeps the fastest; the winner runs last so the output is
 * its own. A cuSPARSE failure (unsupported case, no memory for its
 * workspace) only drops it from the candidates, and a graph that reuses a
 * cuSPARSE choice (made for another graph of its shape) and fails with it
 * runs rowcache instead. Choices carry the backend's generation and are
 * ignored once it changes. Under `deterministic` nothing is timed: the
 * candidates differ from each other by rounding (max forward: not at all,
 * both are exact), and timings may rank them differently from one run to
 * the next, so auto takes balanced for a graph whose longest row is far
 * past the mean and rowcache otherwise, the same in every run (each adds
 * in a fixed order). A forced cusparse under `deterministic` runs that
 * same own kernel too (and gnn__cuda_spmm_choice names it).
 */
#include "kernels/cuda/spmm_cuda.h"

#include "kernels/backend_impl.h"
#include "kernels/cuda/backend_cuda.cuh"

#include "kernels/cuda/spmm_kernels.cuh"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <cub/cub.cuh>
#include <cusparse.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

enum { DIR_FWD = 0, DIR_BWD = 1 };
/* Aggregators with a cuSPARSE value array: sum, mean, gcn. */
#define N_SUMLIKE 3
/* Widths per direction with cached dense descriptors, and cached choices. */
#define N_DENSE 16
#define N_CHOICES 32
#define WS_UNKNOWN SIZE_MAX

/* Dense descriptors of one (direction, width): B (input) and C (output). */
typedef struct {
    int used, dir;
    int64_t f;
    cusparseDnMatDescr_t b, c;
    size_t ws;     /* workspace bytes for CSR_ALG2 (WS_UNKNOWN: not asked) */
    unsigned last; /* use clock, for eviction */
} dense_t;

/* Auto's choice for one (aggregator, direction, width). */
typedef struct {
    int used;
    unsigned generation;
    int aggr, dir;
    int64_t f;
    gnn_spmm_impl_t impl;
} choice_t;

struct gnn_cuda_graph {
    cudaStream_t stream; /* the backend's: free waits for it */
    int pooled;          /* the CSR, transpose and scales from the stream-ordered
                            pool (every graph made here): freed in stream
                            order on `stream`, without a wait */
    int from_dev;        /* made from device arrays (gnn__cuda_graph_create_dev) */
    int64_t n_dst, n_src, nnz;
    int t_shared;
    int64_t *indptr, *indices;
    float *weights;
    int64_t *t_indptr, *t_indices; /* the forward arrays when t_shared */
    float *t_weights;
    float *inv_deg, *gcn_dst, *gcn_src;
    /* Graph attention's slots per layout (0: without, 1: with self loops),
     * one block each: indptr, src, dst, t_indptr, t_slot (the gnn_aggr_
     * edges_t arrays); made on the device for a graph from device arrays
     * (gnn__cuda_graph_attn_edges), from the pool when pooled. */
    int64_t *attn[2];

    cusparseSpMatDescr_t sp[2][N_SUMLIKE]; /* [direction][aggregator] */
    float *vals[2][N_SUMLIKE];             /* value arrays owned here */
    float *ones;                           /* values of unweighted sum */
    dense_t dense[N_DENSE];
    unsigned clock;
    gnn__cuda_buf_t scratch;

    cudaEvent_t ev[2];
    int have_events;
    choice_t choice[N_CHOICES];
    unsigned choice_next;
    uint32_t shape[2]; /* per direction: the key of auto's shared choices */
    gnn_spmm_impl_t det_impl[2]; /* per direction: auto's choice when deterministic */
};

/* ---- Scratch -------------------------------------------------------------- */

/* Whether work queued on s is being captured (a CUDA graph): no
 * allocation may be made then, pooled or not (a pooled one would become
 * the graph's own, which its second launch refuses). */
static int capturing(cudaStream_t s)
{
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(s, &cs) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return cs != cudaStreamCaptureStatusNone;
}

int gnn__cuda_buf_reserve(gnn__cuda_buf_t *b, size_t bytes, cudaStream_t s)
{
    if (bytes <= b->bytes) return 0;
    size_t want = b->bytes + b->bytes / 2; /* grow geometrically */
    if (want < bytes) want = bytes;
    want = (want + 255) & ~(size_t)255;
    if (capturing(s))
        return GNN_FAIL(GNN_ECUDA, "spmm scratch of %zu bytes while capturing a step", bytes);
    if (b->p) {
        /* queued work may still use it: freed after that work */
        cudaError_t e = b->pooled ? cudaSuccess : cudaStreamSynchronize(s);
        cudaError_t ef = b->pooled ? cudaFreeAsync(b->p, s) : cudaFree(b->p);
        gnn__be_note_free();
        b->p = NULL;
        b->bytes = 0;
        if (e == cudaSuccess) e = ef;
        if (e != cudaSuccess) {
            cudaGetLastError(); /* reported here, not by the next launch */
            return GNN_FAIL(GNN_ECUDA, "spmm scratch: %s", cudaGetErrorString(e));
        }
    }
    void *p = NULL;
    cudaError_t e = b->pooled ? cudaMallocAsync(&p, want, s) : cudaMalloc(&p, want);
    if (e == cudaErrorMemoryAllocation && want > bytes) {
        cudaGetLastError(); /* not sticky: clear it, then try the exact size */
        want = bytes;
        e = b->pooled ? cudaMallocAsync(&p, want, s) : cudaMalloc(&p, want);
    }
    if (e != cudaSuccess) {
        cudaGetLastError();
        return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                        "spmm scratch (%zu bytes): %s", bytes, cudaGetErrorString(e));
    }
    b->p = p;
    b->bytes = want;
    return 0;
}

/* ---- Graph ---------------------------------------------------------------- */

/* An array of g freed as it was allocated: in stream order when pooled. */
static void graph_array_free(gnn_cuda_graph_t *g, void *p)
{
    if (!p) return;
    cudaError_t e = g->pooled ? cudaFreeAsync(p, g->stream) : cudaFree(p);
    if (e != cudaSuccess) (void)cudaGetLastError(); /* not the next launch's error */
}

void gnn__cuda_graph_free(gnn_cuda_graph_t *g)
{
    if (!g) return;
    gnn__be_note_free();
    /* What cudaFree frees must be idle first. A pooled graph (a batch's
     * block) has every array from the stream-ordered pool, its scratch and
     * values too, all freed in the order of the stream that used them:
     * no wait; its descriptors and events may go with work still queued. */
    if (!g->pooled) cudaStreamSynchronize(g->stream);
    for (int d = 0; d < 2; d++)
        for (int a = 0; a < N_SUMLIKE; a++) {
            if (g->sp[d][a]) GNN_CU(cusparseDestroySpMat)(g->sp[d][a]);
            graph_array_free(g, g->vals[d][a]);
        }
    for (int i = 0; i < N_DENSE; i++)
        if (g->dense[i].used) {
            GNN_CU(cusparseDestroyDnMat)(g->dense[i].b);
            GNN_CU(cusparseDestroyDnMat)(g->dense[i].c);
        }
    if (g->have_events) {
        cudaEventDestroy(g->ev[0]);
        cudaEventDestroy(g->ev[1]);
    }
    graph_array_free(g, g->ones);
    graph_array_free(g, g->scratch.p);
    graph_array_free(g, g->weights);
    if (!g->t_shared) graph_array_free(g, g->t_weights);
    void *own[9] = {g->indptr,  g->indices, g->t_shared ? NULL : g->t_indptr,
                    g->t_shared ? NULL : g->t_indices, g->inv_deg, g->gcn_dst, g->gcn_src,
                    g->attn[0], g->attn[1]};
    for (int k = 0; k < 9; k++) graph_array_free(g, own[k]);
    (void)cudaGetLastError(); /* a failed free is not the next launch's */
    gnn_free(g);
}

/* *d = a device array of n elements of size bytes (at least one element, so
 * that an empty array is still a valid pointer), holding host h's: from the
 * stream-ordered pool on s, the copy queued there (h free to reuse on
 * return: gnn__cuda_upload). */
static int upload(cudaStream_t s, void **d, const void *h, int64_t n, size_t size,
                  const char *what)
{
    const size_t bytes = (size_t)n * size;
    *d = NULL;
    cudaError_t e = cudaMallocAsync(d, bytes ? bytes : size, s);
    if (e == cudaSuccess && bytes) e = gnn__cuda_upload(*d, h, bytes, s);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                        "spmm graph on the device: %s: %s", what, cudaGetErrorString(e));
    }
    return 0;
}

/* Copy sg's arrays into g (sizes and t_shared set), in the order of g's
 * stream, which is the one that reads them: no wait (a host-sampled
 * batch's block is placed while the step before it runs), unless an array
 * lies on a page pinned by a host mapping (gnn__cuda_upload). */
static int graph_upload(gnn_cuda_graph_t *g, const gnn_spmm_graph_t *sg)
{
    const gnn_csr_t *a = sg->csr;
    cudaStream_t s = g->stream;
    GNN_TRY_RET(upload(s, (void **)&g->indptr, a->indptr, g->n_dst + 1, sizeof(int64_t), "indptr"));
    GNN_TRY_RET(upload(s, (void **)&g->indices, a->indices, g->nnz, sizeof(int64_t), "indices"));
    if (a->weights)
        GNN_TRY_RET(upload(s, (void **)&g->weights, a->weights, g->nnz, sizeof(float), "weights"));
    if (g->t_shared) {
        g->t_indptr = g->indptr;
        g->t_indices = g->indices;
        g->t_weights = g->weights;
    } else {
        GNN_TRY_RET(upload(s, (void **)&g->t_indptr, sg->t.indptr, g->n_src + 1, sizeof(int64_t),
                           "transpose indptr"));
        GNN_TRY_RET(upload(s, (void **)&g->t_indices, sg->t.indices, g->nnz, sizeof(int64_t),
                           "transpose indices"));
        if (sg->t.weights)
            GNN_TRY_RET(upload(s, (void **)&g->t_weights, sg->t.weights, g->nnz, sizeof(float),
                               "transpose weights"));
    }
    GNN_TRY_RET(upload(s, (void **)&g->inv_deg, sg->inv_deg, g->n_dst, sizeof(float), "inv_deg"));
    GNN_TRY_RET(upload(s, (void **)&g->gcn_dst, sg->gcn_dst, g->n_dst, sizeof(float), "gcn_dst"));
    GNN_TRY_RET(upload(s, (void **)&g->gcn_src, sg->gcn_src, g->n_src, sizeof(float), "gcn_src"));
    return 0;
}

static uint32_t lg2(double x)
{
    return x < 1.0 ? 0u : (uint32_t)floor(log2(x)) + 1u;
}

/* Rows longer than this many times the mean (and than DET_SKEW_MIN) make
 * a graph skewed for auto under `deterministic`. */
#define DET_SKEW_RATIO 32.0
#define DET_SKEW_MIN 1024

/*
 * A graph's shape for auto's shared choices: log2 of the nonzeros, of the
 * mean row length and of the longest row against the mean, in a byte
 * each. Graphs alike in all three get the same implementation. *det: what
 * auto runs under `deterministic`, from the shape alone (balanced for a
 * skewed graph, else rowcache).
 */
static uint32_t shape_from(int64_t longest, int64_t rows, int64_t nnz, gnn_spmm_impl_t *det);

static uint32_t shape_of(const int64_t *indptr, int64_t rows, int64_t nnz, gnn_spmm_impl_t *det)
{
    int64_t longest = 0;
    for (int64_t r = 0; r < rows; r++)
        if (indptr[r + 1] - indptr[r] > longest) longest = indptr[r + 1] - indptr[r];
    return shape_from(longest, rows, nnz, det);
}

/* The same from the longest row. */
static uint32_t shape_from(int64_t longest, int64_t rows, int64_t nnz, gnn_spmm_impl_t *det)
{
    double mean = rows > 0 ? (double)nnz / (double)rows : 0.0;
    uint32_t a = lg2((double)nnz), b = lg2(mean * 4.0), c = lg2(mean > 0 ? longest / mean : 0.0);
    *det = longest > DET_SKEW_MIN && (double)longest > DET_SKEW_RATIO * mean ? GNN_SPMM_BALANCED
                                                                            : GNN_SPMM_ROWCACHE;
    return (a & 0xffu) | (b & 0xffu) << 8 | (c & 0xffu) << 16;
}

int gnn__cuda_graph_create(const gnn_cuda_spmm_ctx_t *ctx, const gnn_spmm_graph_t *sg,
                           gnn_cuda_graph_t **out, gnn_aggr_graph_t *view)
{
    GNN_CHECK_RET(out, GNN_EINVAL, "spmm graph on the device: NULL output");
    *out = NULL;
    GNN_CHECK_RET(ctx && sg && sg->csr && view, GNN_EINVAL,
                  "spmm graph on the device: NULL argument");
    GNN_CHECK_RET(sg->n_dst >= 0 && sg->n_src >= 0 && sg->nnz >= 0 && sg->csr->indptr &&
                      sg->t.indptr,
                  GNN_EINVAL, "spmm graph on the device: graph not prepared");
    gnn_cuda_graph_t *g = (gnn_cuda_graph_t *)gnn_calloc(1, sizeof *g);
    GNN_CHECK_RET(g, GNN_ENOMEM, "spmm graph on the device");
    g->stream = (cudaStream_t)ctx->stream;
    g->pooled = 1; /* every array from the pool on the backend's stream */
    g->scratch.pooled = 1;
    g->n_dst = sg->n_dst;
    g->n_src = sg->n_src;
    g->nnz = sg->nnz;
    g->t_shared = sg->t_shared;
    g->shape[DIR_FWD] = shape_of(sg->csr->indptr, g->n_dst, g->nnz, &g->det_impl[DIR_FWD]);
    g->shape[DIR_BWD] = shape_of(sg->t.indptr, g->n_src, g->nnz, &g->det_impl[DIR_BWD]);
    int rc = graph_upload(g, sg);
    if (rc < 0) {
        gnn__cuda_graph_free(g); /* its arrays freed after the copies already queued */
        return rc;
    }
    view->n_dst = g->n_dst;
    view->n_src = g->n_src;
    view->nnz = g->nnz;
    view->indptr = g->indptr;
    view->indices = g->indices;
    view->weights = g->weights;
    view->t_indptr = g->t_indptr;
    view->t_indices = g->t_indices;
    view->t_weights = g->t_weights;
    *out = g;
    return 0;
}

/* ---- A graph from device arrays ---------------------------------------------- */

/* rowid[e] = the row of entry e. */
__global__ void k_entry_rows(int64_t rows, const int64_t *indptr, int64_t *rowid)
{
    for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
         r += (int64_t)gridDim.x * blockDim.x)
        for (int64_t e = indptr[r]; e < indptr[r + 1]; e++) rowid[e] = r;
}

/* cnt[indices[e]]++ (cnt zeroed, one past the columns for the sum). */
__global__ void k_col_count(int64_t nnz, const int64_t *indices, unsigned long long *cnt)
{
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < nnz;
         e += (int64_t)gridDim.x * blockDim.x)
        atomicAdd(&cnt[indices[e]], 1ull);
}

/* The scale factors of gnn_spmm_graph_create, the same double arithmetic
 * rounded once to float; len[r] the row lengths of both directions. */
__global__ void k_scales(int64_t n_dst, int64_t n_src, const int64_t *indptr,
                         const int64_t *t_indptr, float *inv_deg, float *gcn_dst, float *gcn_src,
                         int64_t *len)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_dst + n_src;
         i += (int64_t)gridDim.x * blockDim.x) {
        if (i < n_dst) {
            const int64_t d = indptr[i + 1] - indptr[i];
            inv_deg[i] = d ? (float)(1.0 / (double)d) : 0.0f;
            gcn_dst[i] = (float)(1.0 / sqrt((double)d + 1.0));
            len[i] = d;
        } else {
            const int64_t u = i - n_dst, d = t_indptr[u + 1] - t_indptr[u];
            gcn_src[u] = (float)(1.0 / sqrt((double)d + 1.0));
            len[i] = d;
        }
    }
}

static int bits_for(int64_t n)
{
    int b = 1;
    while (b < 63 && ((int64_t)1 << b) < n) b++;
    return b;
}

/* ---- Attention slots from device arrays ----------------------------------------- */

__global__ void k_iota(int64_t n, int64_t *v)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        v[i] = i;
}

/* Slots by destination (one thread per row, and one for the end): v's
 * stored entries in CSR order, then with self loops (k) its own. */
__global__ void k_attn_dst_slots(int64_t nd, int k, const int64_t *__restrict__ indptr,
                                 const int64_t *__restrict__ indices, int64_t *__restrict__ sptr,
                                 int64_t *__restrict__ src, int64_t *__restrict__ dst)
{
    for (int64_t v = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; v <= nd;
         v += (int64_t)gridDim.x * blockDim.x) {
        const int64_t lo = indptr[v], first = lo + (k ? v : 0);
        sptr[v] = first;
        if (v == nd) continue;
        const int64_t n = indptr[v + 1] - lo;
        for (int64_t i = 0; i < n; i++) {
            src[first + i] = indices[lo + i];
            dst[first + i] = v;
        }
        if (k) src[first + n] = dst[first + n] = v;
    }
}

/* Slots by source (one thread per source, and one for the end): u's
 * stored edges in transposed order (perm: the CSR entry at each
 * transposed position, rowid: each entry's row), then with self loops its
 * own, which is the last slot of row u. */
__global__ void k_attn_src_slots(int64_t ns, int64_t nd, int k, const int64_t *__restrict__ indptr,
                                 const int64_t *__restrict__ t_indptr,
                                 const int64_t *__restrict__ perm,
                                 const int64_t *__restrict__ rowid, int64_t *__restrict__ tptr,
                                 int64_t *__restrict__ t_slot)
{
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u <= ns;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t first = t_indptr[u] + (k ? (u < nd ? u : nd) : 0);
        tptr[u] = first;
        if (u == ns) continue;
        int64_t o = first;
        for (int64_t t = t_indptr[u]; t < t_indptr[u + 1]; t++) {
            const int64_t e = perm[t];
            t_slot[o++] = e + (k ? rowid[e] : 0);
        }
        if (k && u < nd) t_slot[o] = indptr[u + 1] + u;
    }
}

/* The slot layout k of g (kernels/attn.h; with self loops: k = 1) as the
 * arrays of gnn_aggr_edges_t in one pooled block, queued on st: the
 * entries sorted by column, stably (the transpose's order), give each
 * transposed position its entry and so its slot. */
static cudaError_t queue_attn_edges(gnn_cuda_graph_t *g, cudaStream_t st, int k)
{
    const int64_t nd = g->n_dst, ns = g->n_src, nnz = g->nnz, slots = nnz + (k ? nd : 0);
    const size_t words = (size_t)(nd + 1) + (size_t)(ns + 1) + 3u * (size_t)slots;
    const size_t eb = (size_t)(nnz > 0 ? nnz : 1) * sizeof(int64_t);
    int64_t *blk = NULL, *rowid = NULL, *iota = NULL, *keys = NULL, *perm = NULL;
    void *temp = NULL;
    size_t tb = 0;
    cudaError_t e = cudaMallocAsync((void **)&blk, words * sizeof(int64_t), st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&rowid, eb, st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&iota, eb, st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&keys, eb, st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&perm, eb, st);
    if (e == cudaSuccess)
        e = cub::DeviceRadixSort::SortPairs(NULL, tb, g->indices, keys, iota, perm, nnz, 0,
                                            bits_for(ns + 1), st);
    if (e == cudaSuccess) e = cudaMallocAsync(&temp, tb ? tb : 1, st);
    if (e == cudaSuccess && nnz > 0) {
        k_iota<<<gnn__cuda_blocks(nnz, 256), 256, 0, st>>>(nnz, iota);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && nnz > 0) {
        k_entry_rows<<<gnn__cuda_blocks(nd, 256), 256, 0, st>>>(nd, g->indptr, rowid);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && nnz > 0)
        e = cub::DeviceRadixSort::SortPairs(temp, tb, g->indices, keys, iota, perm, nnz, 0,
                                            bits_for(ns + 1), st);
    int64_t *sptr = blk, *src = blk + nd + 1, *dst = src + slots, *tptr = dst + slots,
            *t_slot = tptr + ns + 1;
    if (e == cudaSuccess) {
        k_attn_dst_slots<<<gnn__cuda_blocks(nd + 1, 256), 256, 0, st>>>(nd, k, g->indptr,
                                                                       g->indices, sptr, src, dst);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
        k_attn_src_slots<<<gnn__cuda_blocks(ns + 1, 256), 256, 0, st>>>(
            ns, nd, k, g->indptr, g->t_indptr, perm, rowid, tptr, t_slot);
        e = cudaGetLastError();
    }
    void *tmp[5] = {rowid, iota, keys, perm, temp};
    for (int i = 0; i < 5; i++) /* a failed free: not the next launch's error */
        if (tmp[i] && cudaFreeAsync(tmp[i], st) != cudaSuccess) (void)cudaGetLastError();
    if (e != cudaSuccess) {
        if (blk && cudaFreeAsync(blk, st) != cudaSuccess) (void)cudaGetLastError();
        return e;
    }
    g->attn[k] = blk;
    return cudaSuccess;
}

static void attn_view(const gnn_cuda_graph_t *g, int k, gnn_aggr_edges_t *v)
{
    const int64_t nd = g->n_dst, ns = g->n_src, slots = g->nnz + (k ? nd : 0);
    int64_t *b = g->attn[k];
    v->n_dst = nd;
    v->n_src = ns;
    v->slots = slots;
    v->indptr = b;
    v->src = b + nd + 1;
    v->dst = v->src + slots;
    v->t_indptr = v->dst + slots;
    v->t_slot = v->t_indptr + ns + 1;
}

int gnn__cuda_graph_attn_edges(gnn_cuda_graph_t *g, int k, gnn_aggr_edges_t *view)
{
    GNN_CHECK_RET(g && view && (k == 0 || k == 1), GNN_EINVAL,
                  "attention slots on the device: bad argument");
    GNN_CHECK_RET(g->from_dev, GNN_EINVAL,
                  "attention slots on the device: only for a graph made from device arrays");
    GNN_CHECK_RET(!k || g->n_dst <= g->n_src, GNN_EINVAL,
                  "attention slots: self loops need the destinations among the sources (%" PRId64
                  " destinations, %" PRId64 " sources)",
                  g->n_dst, g->n_src);
    if (!g->attn[k]) { /* on the stream that reads them: no wait */
        if (capturing(g->stream))
            return GNN_FAIL(GNN_ECUDA, "attention slots made while capturing a step");
        cudaError_t e = queue_attn_edges(g, g->stream, k);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                            "attention slots of a %" PRId64 " x %" PRId64 " graph on the device: %s",
                            g->n_dst, g->n_src, cudaGetErrorString(e));
        }
    }
    attn_view(g, k, view);
    return 0;
}

int gnn__cuda_graph_create_dev(const gnn_cuda_spmm_ctx_t *ctx, void *stream, int64_t n_dst,
                               int64_t n_src, int64_t nnz, const int64_t *indptr,
                               const int64_t *indices, int attn, gnn_cuda_graph_t **out,
                               gnn_aggr_graph_t *view)
{
    GNN_CHECK_RET(out && ctx && view && indptr && indices, GNN_EINVAL,
                  "spmm graph from device arrays: NULL argument");
    GNN_CHECK_RET(n_dst >= 0 && n_src >= 0 && nnz >= 0, GNN_EINVAL,
                  "spmm graph from device arrays: %" PRId64 " x %" PRId64 " with %" PRId64
                  " entries",
                  n_dst, n_src, nnz);
    GNN_CHECK_RET(attn >= -1 && attn <= 1 && (attn < 1 || n_dst <= n_src), GNN_EINVAL,
                  "spmm graph from device arrays: attention layout %d on %" PRId64
                  " destinations and %" PRId64 " sources",
                  attn, n_dst, n_src);
    *out = NULL;
    gnn_cuda_graph_t *g = (gnn_cuda_graph_t *)gnn_calloc(1, sizeof *g);
    GNN_CHECK_RET(g, GNN_ENOMEM, "spmm graph on the device");
    cudaStream_t st = stream ? (cudaStream_t)stream : (cudaStream_t)ctx->stream;
    g->stream = st;
    g->n_dst = n_dst;
    g->n_src = n_src;
    g->nnz = nnz;
    int64_t *rowid = NULL, *keys = NULL, *len = NULL, *longest = NULL;
    unsigned long long *cnt = NULL;
    void *temp = NULL;
    size_t tb = 0, tb2 = 0;
    int64_t host_max[2] = {0, 0};
    const size_t eb = (size_t)(nnz > 0 ? nnz : 1) * sizeof(int64_t);
    /* The graph's arrays from the stream-ordered pool too: a batch's
     * blocks come and go every step, and neither their allocation nor
     * their free may wait for the device (cudaMalloc and cudaFree do). */
    g->pooled = 1;
    g->from_dev = 1;
    g->scratch.pooled = 1;
    cudaError_t e = cudaMallocAsync((void **)&g->indptr, (size_t)(n_dst + 1) * sizeof(int64_t), st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&g->indices, eb, st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&g->t_indptr, (size_t)(n_src + 1) * sizeof(int64_t), st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&g->t_indices, eb, st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&g->inv_deg, (size_t)(n_dst + 1) * sizeof(float), st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&g->gcn_dst, (size_t)(n_dst + 1) * sizeof(float), st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&g->gcn_src, (size_t)(n_src + 1) * sizeof(float), st);
    /* The temporaries from the stream's pool, freed in stream order: no
     * device-wide wait as cudaFree's (another stream may be sampling). */
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&rowid, eb, st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&keys, eb, st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&cnt, (size_t)(n_src + 1) * sizeof(*cnt), st);
    if (e == cudaSuccess)
        e = cudaMallocAsync((void **)&len, (size_t)(n_dst + n_src + 1) * sizeof(int64_t), st);
    if (e == cudaSuccess) e = cudaMallocAsync((void **)&longest, 2 * sizeof(int64_t), st);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(g->indptr, indptr, (size_t)(n_dst + 1) * sizeof(int64_t),
                            cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess && nnz > 0)
        e = cudaMemcpyAsync(g->indices, indices, (size_t)nnz * sizeof(int64_t),
                            cudaMemcpyDeviceToDevice, st);
    if (e == cudaSuccess) e = cudaMemsetAsync(cnt, 0, (size_t)(n_src + 1) * sizeof(*cnt), st);
    if (e == cudaSuccess) e = cudaMemsetAsync(longest, 0, 2 * sizeof(int64_t), st);
    /* The transpose: entries sorted by column, stably, so each column's
     * rows ascend as gnn_csr_transpose leaves them. */
    if (e == cudaSuccess)
        e = cub::DeviceRadixSort::SortPairs(NULL, tb, g->indices, keys, rowid, g->t_indices, nnz,
                                            0, bits_for(n_src + 1), st);
    if (e == cudaSuccess)
        e = cub::DeviceScan::ExclusiveSum(NULL, tb2, cnt, (unsigned long long *)g->t_indptr,
                                          n_src + 1, st);
    tb = tb > tb2 ? tb : tb2;
    /* Both reductions' needs: each length asks for its own temp size. */
    tb2 = 0;
    if (e == cudaSuccess) e = cub::DeviceReduce::Max(NULL, tb2, len, longest, n_dst, st);
    tb = tb > tb2 ? tb : tb2;
    tb2 = 0;
    if (e == cudaSuccess) e = cub::DeviceReduce::Max(NULL, tb2, len, longest + 1, n_src, st);
    tb = tb > tb2 ? tb : tb2;
    if (e == cudaSuccess) e = cudaMallocAsync(&temp, tb ? tb : 1, st);
    if (e == cudaSuccess && n_dst > 0) {
        k_entry_rows<<<gnn__cuda_blocks(n_dst, 256), 256, 0, st>>>(n_dst, indptr, rowid);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && nnz > 0) {
        size_t t = tb;
        e = cub::DeviceRadixSort::SortPairs(temp, t, g->indices, keys, rowid, g->t_indices, nnz,
                                            0, bits_for(n_src + 1), st);
    }
    if (e == cudaSuccess && nnz > 0) {
        k_col_count<<<gnn__cuda_blocks(nnz, 256), 256, 0, st>>>(nnz, g->indices, cnt);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) {
        size_t t = tb;
        e = cub::DeviceScan::ExclusiveSum(temp, t, cnt, (unsigned long long *)g->t_indptr,
                                          n_src + 1, st);
    }
    if (e == cudaSuccess && n_dst + n_src > 0) {
        k_scales<<<gnn__cuda_blocks(n_dst + n_src, 256), 256, 0, st>>>(
            n_dst, n_src, g->indptr, g->t_indptr, g->inv_deg, g->gcn_dst, g->gcn_src, len);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess && n_dst > 0) {
        size_t t = tb;
        e = cub::DeviceReduce::Max(temp, t, len, longest, n_dst, st);
    }
    if (e == cudaSuccess && n_src > 0) {
        size_t t = tb;
        e = cub::DeviceReduce::Max(temp, t, len + n_dst, longest + 1, n_src, st);
    }
    if (e == cudaSuccess && attn >= 0) e = queue_attn_edges(g, st, attn);
    if (e == cudaSuccess)
        e = cudaMemcpyAsync(host_max, longest, 2 * sizeof(int64_t), cudaMemcpyDeviceToHost, st);
    cudaError_t es = cudaStreamSynchronize(st); /* the temporaries are free to go */
    if (e == cudaSuccess) e = es;
    void *tmp[6] = {rowid, keys, cnt, len, longest, temp};
    for (int k = 0; k < 6; k++) /* a failed free: not the next launch's error */
        if (tmp[k] && cudaFreeAsync(tmp[k], st) != cudaSuccess) (void)cudaGetLastError();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        gnn__cuda_graph_free(g);
        return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                        "spmm graph from device arrays (%" PRId64 " x %" PRId64 ", %" PRId64
                        " entries): %s",
                        n_dst, n_src, nnz, cudaGetErrorString(e));
    }
    /* Made (st is idle): from now on the graph serves ctx's stream, whose
     * work its free waits for. */
    g->stream = (cudaStream_t)ctx->stream;
    g->shape[DIR_FWD] = shape_from(host_max[0], n_dst, nnz, &g->det_impl[DIR_FWD]);
    g->shape[DIR_BWD] = shape_from(host_max[1], n_src, nnz, &g->det_impl[DIR_BWD]);
    view->n_dst = n_dst;
    view->n_src = n_src;
    view->nnz = nnz;
    view->indptr = g->indptr;
    view->indices = g->indices;
    view->weights = NULL;
    view->t_indptr = g->t_indptr;
    view->t_indices = g->t_indices;
    view->t_weights = NULL;
    *out = g;
    return 0;
}

/* ---- Operations ----------------------------------------------------------- */

/* The scaled-CSR product of a sum-like aggregator in one direction. */
static gnn__scsr_t scsr_for(const gnn_cuda_graph_t *g, gnn_aggr_t aggr, int dir)
{
    gnn__scsr_t p;
    memset(&p, 0, sizeof p);
    const bool fwd = dir == DIR_FWD;
    p.indptr = fwd ? g->indptr : g->t_indptr;
    p.indices = fwd ? g->indices : g->t_indices;
    p.n_rows = fwd ? g->n_dst : g->n_src;
    p.n_cols = fwd ? g->n_src : g->n_dst;
    p.nnz = g->nnz;
    switch (aggr) {
    case GNN_AGGR_SUM:
        p.weights = fwd ? g->weights : g->t_weights;
        break;
    case GNN_AGGR_MEAN: /* 1/deg of the destination: row scale forward, column scale back */
        p.weights = fwd ? g->weights : g->t_weights;
        if (fwd)
            p.row_scale = g->inv_deg;
        else
            p.col_scale = g->inv_deg;
        break;
    default: /* gcn: weights ignored; the self term reads row v of the input */
        p.col_scale = fwd ? g->gcn_src : g->gcn_dst;
        p.row_scale = fwd ? g->gcn_dst : g->gcn_src;
        p.diag_scale = fwd ? g->gcn_src : g->gcn_dst;
        p.n_diag = g->n_dst;
        break;
    }
    return p;
}

/*
 * out[r] = post[r] * (self[r] * in[r]) for r < n_diag, 0 for the other rows
 * below n_rows (post NULL: 1). Lane groups of L = 2^lg lanes per row, 32 / L
 * rows per warp, grid-stride.
 */
template <int VEC>
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_diag(const int64_t n_rows, const int64_t n_diag, const int64_t f, const int lg,
           const float *__restrict__ post, const float *__restrict__ self,
           const float *__restrict__ in, float *__restrict__ out)
{
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int L = 1 << lg, G = 32 >> lg, grp = lane >> lg, sub = lane & (L - 1);
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;
    for (int64_t rb = ((int64_t)blockIdx.x * GNN_SPMM_WPB + wib) * G; rb < n_rows;
         rb += nwarps * G) {
        const int64_t r = rb + grp;
        if (r >= n_rows) continue;
        const bool d = r < n_diag;
        const float ps = d && post ? post[r] : 1.0f, ss = d ? self[r] : 0.0f;
        for (int64_t col = (int64_t)sub * VEC; col < f; col += (int64_t)L * VEC) {
            float v[VEC];
            if (d) {
                gnn__ldf<VEC>(in + r * f + col, v);
#pragma unroll
                for (int j = 0; j < VEC; j++) v[j] = ps * (ss * v[j]);
            } else {
#pragma unroll
                for (int j = 0; j < VEC; j++) v[j] = 0.0f;
            }
            gnn__stf<VEC>(out + r * f + col, v);
        }
    }
}

/* Launch k_diag for out (n_rows x f) on s; nothing for no rows. */
static int launch_diag(int64_t n_rows, int64_t n_diag, int64_t f, const float *post,
                       const float *self, const float *in, float *out, cudaStream_t s)
{
    if (n_rows == 0) return 0;
    const gnn__spmm_shape_t sh = gnn__spmm_shape(f, (uintptr_t)in | (uintptr_t)out);
    const int64_t groups = (32 >> sh.lg);
    const unsigned blocks = gnn__cuda_blocks((n_rows + groups - 1) / groups, GNN_SPMM_WPB);
    if (sh.vec == 4)
        k_diag<4><<<blocks, GNN_SPMM_THREADS, 0, s>>>(n_rows, n_diag, f, sh.lg, post, self, in, out);
    else if (sh.vec == 2)
        k_diag<2><<<blocks, GNN_SPMM_THREADS, 0, s>>>(n_rows, n_diag, f, sh.lg, post, self, in, out);
    else
        k_diag<1><<<blocks, GNN_SPMM_THREADS, 0, s>>>(n_rows, n_diag, f, sh.lg, post, self, in, out);
    GNN_CUDA_LAUNCHED("spmm self term");
    return 0;
}

/* vals[e] = w_e * row_scale[r] * col_scale[c_e] over p's entries (NULL
 * factors are 1; the diagonal is not an entry). A warp per row. */
static __global__ void __launch_bounds__(GNN_SPMM_THREADS)
    k_values(const gnn__scsr_t p, float *__restrict__ vals)
{
    const int lane = (int)(threadIdx.x & 31u), wib = (int)(threadIdx.x >> 5);
    const int64_t nwarps = (int64_t)gridDim.x * GNN_SPMM_WPB;
    for (int64_t r = (int64_t)blockIdx.x * GNN_SPMM_WPB + wib; r < p.n_rows; r += nwarps) {
        const float rs = p.row_scale ? p.row_scale[r] : 1.0f;
        for (int64_t e = p.indptr[r] + lane; e < p.indptr[r + 1]; e += 32) {
            float v = (p.weights ? p.weights[e] : 1.0f) * rs;
            if (p.col_scale) v *= p.col_scale[p.indices[e]];
            vals[e] = v;
        }
    }
}

/* ---- cuSPARSE ----------------------------------------------------------- */

/* The CSR descriptor of aggregator aggr in direction dir, with its values
 * (built on first use). */
static int sparse_descr(gnn_cuda_graph_t *g, gnn_aggr_t aggr, int dir, cudaStream_t s,
                        cusparseSpMatDescr_t *out)
{
    if (g->sp[dir][aggr]) {
        *out = g->sp[dir][aggr];
        return 0;
    }
    gnn__scsr_t p = scsr_for(g, aggr, dir);
    float *vals;
    if (aggr == GNN_AGGR_SUM && p.weights) {
        vals = (float *)p.weights; /* the weights are the values */
    } else {
        float **slot = aggr == GNN_AGGR_SUM ? &g->ones : &g->vals[dir][aggr];
        if (!*slot) {
            if (capturing(s))
                return GNN_FAIL(GNN_ECUDA, "cuSPARSE values while capturing a step");
            const size_t vb = (size_t)g->nnz * sizeof(float);
            cudaError_t e = g->pooled ? cudaMallocAsync((void **)slot, vb, s)
                                      : cudaMalloc((void **)slot, vb);
            if (e != cudaSuccess) {
                cudaGetLastError();
                *slot = NULL;
                return GNN_FAIL(e == cudaErrorMemoryAllocation ? GNN_ENOMEM : GNN_ECUDA,
                                "cuSPARSE values: %s", cudaGetErrorString(e));
            }
            k_values<<<gnn__cuda_blocks(p.n_rows, GNN_SPMM_WPB), GNN_SPMM_THREADS, 0, s>>>(p,
                                                                                         *slot);
            e = cudaGetLastError();
            if (e != cudaSuccess) { /* not filled: a later call must not take it as built */
                graph_array_free(g, *slot);
                *slot = NULL;
                return GNN_FAIL(GNN_ECUDA, "launch of spmm values: %s", cudaGetErrorString(e));
            }
        }
        vals = *slot;
    }
    CUSPARSE_RET(GNN_CU(cusparseCreateCsr)(&g->sp[dir][aggr], p.n_rows, p.n_cols, p.nnz,
                                   (void *)p.indptr, (void *)p.indices, vals, CUSPARSE_INDEX_64I,
                                   CUSPARSE_INDEX_64I, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F),
                 "cusparseCreateCsr");
    *out = g->sp[dir][aggr];
    return 0;
}

/* The dense descriptors of (dir, f), pointed at in and out. */
static int dense_descr(gnn_cuda_graph_t *g, int dir, int64_t f, const float *in, float *out,
                       dense_t **res)
{
    const int64_t rows_in = dir == DIR_FWD ? g->n_src : g->n_dst;
    const int64_t rows_out = dir == DIR_FWD ? g->n_dst : g->n_src;
    dense_t *d = NULL;
    for (int i = 0; i < N_DENSE && !d; i++)
        if (g->dense[i].used && g->dense[i].dir == dir && g->dense[i].f == f) d = &g->dense[i];
    if (d) {
        CUSPARSE_RET(GNN_CU(cusparseDnMatSetValues)(d->b, (void *)in), "cusparseDnMatSetValues");
        CUSPARSE_RET(GNN_CU(cusparseDnMatSetValues)(d->c, out), "cusparseDnMatSetValues");
    } else {
        d = &g->dense[0]; /* a free slot, else the least recently used */
        for (int i = 0; i < N_DENSE; i++) {
            if (!g->dense[i].used) {
                d = &g->dense[i];
                break;
            }
            if (g->dense[i].last < d->last) d = &g->dense[i];
        }
        if (d->used) {
            GNN_CU(cusparseDestroyDnMat)(d->b);
            GNN_CU(cusparseDestroyDnMat)(d->c);
            d->used = 0;
        }
        CUSPARSE_RET(GNN_CU(cusparseCreateDnMat)(&d->b, rows_in, f, f, (void *)in, CUDA_R_32F,
                                         CUSPARSE_ORDER_ROW),
                     "cusparseCreateDnMat");
        cusparseStatus_t st =
            GNN_CU(cusparseCreateDnMat)(&d->c, rows_out, f, f, out, CUDA_R_32F, CUSPARSE_ORDER_ROW);
        if (st != CUSPARSE_STATUS_SUCCESS) {
            GNN_CU(cusparseDestroyDnMat)(d->b);
            return GNN_FAIL(GNN_ECUSPARSE, "cusparseCreateDnMat: %s", GNN_CU(cusparseGetErrorString)(st));
        }
        d->used = 1;
        d->dir = dir;
        d->f = f;
        d->ws = WS_UNKNOWN;
    }
    d->last = ++g->clock;
    *res = d;
    return 0;
}

/* out = the product of aggr in direction dir by cusparseSpMM (nnz > 0). */
static int cusparse_run(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                        int dir, int64_t f, const float *in, float *out)
{
    cudaStream_t s = (cudaStream_t)ctx->stream;
    cusparseHandle_t h = (cusparseHandle_t)ctx->cusparse;
    GNN_CHECK_RET(h, GNN_EINVAL, "spmm: no cuSPARSE handle");
    const gnn__scsr_t p = scsr_for(g, aggr, dir);
    cusparseSpMatDescr_t a = NULL;
    dense_t *d = NULL;
    GNN_TRY_RET(sparse_descr(g, aggr, dir, s, &a));
    GNN_TRY_RET(dense_descr(g, dir, f, in, out, &d));
    if (p.diag_scale)
        GNN_TRY_RET(launch_diag(p.n_rows, p.n_diag, f, p.row_scale, p.diag_scale, in, out, s));
    else
        GNN_CUDA_RET(cudaMemsetAsync(out, 0, (size_t)p.n_rows * (size_t)f * sizeof(float), s),
                     "spmm: zero the output");
    const float one = 1.0f;
    const cusparseSpMMAlg_t alg = CUSPARSE_SPMM_CSR_ALG2;
    if (d->ws == WS_UNKNOWN) {
        size_t bytes = 0;
        CUSPARSE_RET(GNN_CU(cusparseSpMM_bufferSize)(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                             CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, d->b,
                                             &one, d->c, CUDA_R_32F, alg, &bytes),
                     "cusparseSpMM_bufferSize");
        d->ws = bytes;
    }
    GNN_TRY_RET(gnn__cuda_buf_reserve(&g->scratch, d->ws, s));
    CUSPARSE_RET(GNN_CU(cusparseSpMM)(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
                              CUSPARSE_OPERATION_NON_TRANSPOSE, &one, a, d->b, &one, d->c,
                              CUDA_R_32F, alg, d->ws ? g->scratch.p : NULL),
                 "cusparseSpMM");
    return 0;
}

/* ---- Dispatch ------------------------------------------------------------- */

/* The implementation that runs aggr when impl is asked for (not auto):
 * max has no cuSPARSE version and runs rowcache instead. */
static gnn_spmm_impl_t impl_for(gnn_aggr_t aggr, gnn_spmm_impl_t impl)
{
    return aggr == GNN_AGGR_MAX && impl == GNN_SPMM_CUSPARSE ? GNN_SPMM_ROWCACHE : impl;
}

/* The implementation that runs aggr in direction dir when ctx forces one
 * (not auto): a cusparse under `deterministic` runs the own kernel auto
 * would (no cuSPARSE path gives the same bits in every run). */
static gnn_spmm_impl_t forced_impl(const gnn_cuda_spmm_ctx_t *ctx, const gnn_cuda_graph_t *g,
                                   gnn_aggr_t aggr, int dir)
{
    if (ctx->impl == GNN_SPMM_CUSPARSE && ctx->deterministic) return g->det_impl[dir];
    return impl_for(aggr, ctx->impl);
}

/*
 * out = aggr in direction dir with impl (nnz > 0; impl is not auto). Max
 * forward writes argmax_out, max backward reads argmax_in.
 */
static int run_impl(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_spmm_impl_t impl,
                    gnn_aggr_t aggr, int dir, int64_t f, const float *in, float *out,
                    int32_t *argmax_out, const int32_t *argmax_in)
{
    cudaStream_t s = (cudaStream_t)ctx->stream;
    impl = impl_for(aggr, impl);
    if (aggr == GNN_AGGR_MAX) {
        const bool bal = impl == GNN_SPMM_BALANCED;
        if (dir == DIR_FWD)
            return bal ? gnn__balanced_max_forward(g->indptr, g->indices, g->n_dst, g->nnz, f, in,
                                                   out, argmax_out, &g->scratch, ctx->sm_count, s)
                       : gnn__rowcache_max_forward(g->indptr, g->indices, g->n_dst, f, in, out,
                                                   argmax_out, s);
        return bal ? gnn__balanced_max_backward(g->t_indptr, g->t_indices, g->n_src, g->n_dst,
                                                g->nnz, f, in, argmax_in, out, &g->scratch,
                                                ctx->sm_count, s)
                   : gnn__rowcache_max_backward(g->t_indptr, g->t_indices, g->n_src, f, in,
                                                argmax_in, out, s);
    }
    const gnn__scsr_t p = scsr_for(g, aggr, dir);
    switch (impl) {
    case GNN_SPMM_CUSPARSE:
        return cusparse_run(ctx, g, aggr, dir, f, in, out);
    case GNN_SPMM_BALANCED:
        return gnn__balanced_scaled(&p, f, in, out, &g->scratch, ctx->sm_count, s);
    default:
        return gnn__rowcache_scaled(&p, f, in, out, s);
    }
}

/* Whether rc is a cuSPARSE failure that another implementation may not
 * have (unsupported case, no memory for its workspace or values). */
static bool cusparse_only_failure(int rc)
{
    return rc == GNN_ECUSPARSE || rc == GNN_ENOMEM;
}

static choice_t *choice_find(gnn_cuda_graph_t *g, unsigned generation, gnn_aggr_t aggr, int dir,
                             int64_t f)
{
    for (int i = 0; i < N_CHOICES; i++) {
        choice_t *c = &g->choice[i];
        if (c->used && c->generation == generation && c->aggr == (int)aggr && c->dir == dir &&
            c->f == f)
            return c;
    }
    return NULL;
}

/* Record auto's choice: in the key's slot, else a stale one, else round robin. */
static void choice_put(gnn_cuda_graph_t *g, unsigned generation, gnn_aggr_t aggr, int dir,
                       int64_t f, gnn_spmm_impl_t impl)
{
    choice_t *slot = NULL;
    for (int i = 0; i < N_CHOICES && !slot; i++) {
        choice_t *c = &g->choice[i];
        if (c->used && c->aggr == (int)aggr && c->dir == dir && c->f == f) slot = c;
    }
    for (int i = 0; i < N_CHOICES && !slot; i++)
        if (!g->choice[i].used || g->choice[i].generation != generation) slot = &g->choice[i];
    if (!slot) slot = &g->choice[g->choice_next++ % N_CHOICES];
    slot->used = 1;
    slot->generation = generation;
    slot->aggr = (int)aggr;
    slot->dir = dir;
    slot->f = f;
    slot->impl = impl;
}

/* The backend's choice for graphs shaped like g, or NULL. */
static const gnn_cuda_shape_choice_t *shape_find(const gnn_cuda_spmm_ctx_t *ctx,
                                                 const gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                                                 int dir, int64_t f)
{
    for (int i = 0; i < GNN_CUDA_SHAPE_CHOICES; i++) {
        const gnn_cuda_shape_choice_t *c = &ctx->shape_choice[i];
        if (c->used && c->generation == ctx->generation && c->aggr == (int)aggr &&
            c->dir == dir && c->f == f && c->shape == g->shape[dir])
            return c;
    }
    return NULL;
}

static void shape_put(const gnn_cuda_spmm_ctx_t *cctx, const gnn_cuda_graph_t *g,
                      gnn_aggr_t aggr, int dir, int64_t f, gnn_spmm_impl_t impl)
{
    /* The table is the backend's own (spmm_cuda.h): written here only. */
    gnn_cuda_spmm_ctx_t *ctx = (gnn_cuda_spmm_ctx_t *)cctx;
    gnn_cuda_shape_choice_t *slot = NULL;
    for (int i = 0; i < GNN_CUDA_SHAPE_CHOICES && !slot; i++)
        if (!ctx->shape_choice[i].used || ctx->shape_choice[i].generation != ctx->generation)
            slot = &ctx->shape_choice[i];
    if (!slot) slot = &ctx->shape_choice[ctx->shape_next++ % GNN_CUDA_SHAPE_CHOICES];
    slot->used = 1;
    slot->generation = ctx->generation;
    slot->aggr = (int)aggr;
    slot->dir = dir;
    slot->f = f;
    slot->shape = g->shape[dir];
    slot->impl = impl;
}

/*
 * Time every candidate for (aggr, dir, f) on the stream and leave the
 * fastest one's output (and arg-max) in out; *best = it.
 */
static int choose(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr, int dir,
                  int64_t f, const float *in, float *out, int32_t *argmax_out,
                  const int32_t *argmax_in, gnn_spmm_impl_t *best)
{
    static const gnn_spmm_impl_t cand[] = {GNN_SPMM_CUSPARSE, GNN_SPMM_ROWCACHE,
                                           GNN_SPMM_BALANCED};
    cudaStream_t s = (cudaStream_t)ctx->stream;
    if (!g->have_events) {
        GNN_CUDA_RET(cudaEventCreate(&g->ev[0]), "spmm timing events");
        cudaError_t e = cudaEventCreate(&g->ev[1]);
        if (e != cudaSuccess) {
            cudaGetLastError();
            cudaEventDestroy(g->ev[0]);
            return GNN_FAIL(GNN_ECUDA, "spmm timing events: %s", cudaGetErrorString(e));
        }
        g->have_events = 1;
    }
    float best_ms = INFINITY;
    gnn_spmm_impl_t last = GNN_SPMM_AUTO;
    *best = GNN_SPMM_ROWCACHE;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        if (cand[i] == GNN_SPMM_CUSPARSE && (!ctx->cusparse || aggr == GNN_AGGR_MAX)) continue;
        int rc = run_impl(ctx, g, cand[i], aggr, dir, f, in, out, argmax_out, argmax_in);
        if (rc < 0 && cand[i] == GNN_SPMM_CUSPARSE && cusparse_only_failure(rc)) {
            gnn_error_clear(); /* not a candidate here; the others decide */
            cudaGetLastError(); /* nor a failure of the next launch */
            continue;
        }
        if (rc < 0) return rc; /* the warm-up failed */
        GNN_CUDA_RET(cudaEventRecord(g->ev[0], s), "spmm timing");
        GNN_TRY_RET(run_impl(ctx, g, cand[i], aggr, dir, f, in, out, argmax_out, argmax_in));
        GNN_CUDA_RET(cudaEventRecord(g->ev[1], s), "spmm timing");
        GNN_CUDA_RET(cudaEventSynchronize(g->ev[1]), "spmm timing");
        float ms = 0.0f;
        GNN_CUDA_RET(cudaEventElapsedTime(&ms, g->ev[0], g->ev[1]), "spmm timing");
        last = cand[i];
        if (ms < best_ms) {
            best_ms = ms;
            *best = cand[i];
        }
    }
    if (*best != last)
        GNN_TRY_RET(run_impl(ctx, g, *best, aggr, dir, f, in, out, argmax_out, argmax_in));
    return 0;
}

/* The argument checks of gnn_spmm_forward / gnn_spmm_backward. */
static int check_args(const gnn_cuda_spmm_ctx_t *ctx, const gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                      int64_t f, const void *in, const void *out, const int32_t *argmax,
                      const char *what)
{
    if (!ctx || !g || !in || !out) return GNN_FAIL(GNN_EINVAL, "spmm %s: NULL argument", what);
    if ((unsigned)aggr >= GNN_AGGR_COUNT_)
        return GNN_FAIL(GNN_EINVAL, "spmm %s: unknown aggregator %d", what, (int)aggr);
    const int64_t n = g->n_dst > g->n_src ? g->n_dst : g->n_src;
    if (f < 1 || (n > 0 && f > INT64_MAX / (int64_t)sizeof(float) / n))
        return GNN_FAIL(GNN_EINVAL, "spmm %s: bad feature width %" PRId64, what, f);
    if (aggr == GNN_AGGR_GCN && g->n_dst > g->n_src)
        return GNN_FAIL(GNN_EINVAL,
                        "spmm %s: gcn needs n_dst <= n_src (got %" PRId64 " > %" PRId64 ")", what,
                        g->n_dst, g->n_src);
    if (aggr == GNN_AGGR_MAX) {
        if (!argmax) return GNN_FAIL(GNN_EINVAL, "spmm %s: max needs an argmax array", what);
        if (g->n_src > INT32_MAX)
            return GNN_FAIL(GNN_ERANGE, "spmm %s: max needs n_src <= 2^31-1 (got %" PRId64 ")",
                            what, g->n_src);
    }
    return 0;
}

/* A graph without edges: every row empty (gcn keeps its self term). */
static int run_empty(const gnn_cuda_spmm_ctx_t *ctx, const gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                     int dir, int64_t f, const float *in, float *out, int32_t *argmax)
{
    cudaStream_t s = (cudaStream_t)ctx->stream;
    const int64_t rows = dir == DIR_FWD ? g->n_dst : g->n_src;
    const size_t elems = (size_t)rows * (size_t)f;
    if (aggr == GNN_AGGR_GCN) {
        const gnn__scsr_t p = scsr_for(g, aggr, dir);
        return launch_diag(p.n_rows, p.n_diag, f, p.row_scale, p.diag_scale, in, out, s);
    }
    GNN_CUDA_RET(cudaMemsetAsync(out, 0, elems * sizeof(float), s), "spmm: zero the output");
    if (aggr == GNN_AGGR_MAX && dir == DIR_FWD) /* all bits set: -1 */
        GNN_CUDA_RET(cudaMemsetAsync(argmax, 0xff, elems * sizeof(int32_t), s),
                     "spmm: arg-max of empty rows");
    return 0;
}

/* out = aggr in direction dir with auto's impl for g, recorded for g; a
 * cuSPARSE choice that fails here is replaced by rowcache. */
static int run_auto(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_spmm_impl_t impl,
                    gnn_aggr_t aggr, int dir, int64_t f, const float *in, float *out,
                    int32_t *argmax_out, const int32_t *argmax_in)
{
    int rc = run_impl(ctx, g, impl, aggr, dir, f, in, out, argmax_out, argmax_in);
    if (rc < 0 && impl == GNN_SPMM_CUSPARSE && cusparse_only_failure(rc)) {
        gnn_error_clear();
        cudaGetLastError();
        impl = GNN_SPMM_ROWCACHE;
        rc = run_impl(ctx, g, impl, aggr, dir, f, in, out, argmax_out, argmax_in);
    }
    if (rc == 0) choice_put(g, ctx->generation, aggr, dir, f, impl);
    return rc;
}

/* out = aggr in direction dir with the implementation ctx asks for (auto:
 * the cached choice, or a timed choice made now). */
static int run(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr, int dir,
               int64_t f, const float *in, float *out, int32_t *argmax_out,
               const int32_t *argmax_in)
{
    const int64_t rows = dir == DIR_FWD ? g->n_dst : g->n_src;
    const bool autosel = ctx->impl == GNN_SPMM_AUTO;
    if (rows == 0) return 0;
    if (g->nnz == 0) {
        int rc = run_empty(ctx, g, aggr, dir, f, in, out, argmax_out);
        if (rc == 0 && autosel) choice_put(g, ctx->generation, aggr, dir, f, GNN_SPMM_ROWCACHE);
        return rc;
    }
    if (!autosel)
        return run_impl(ctx, g, forced_impl(ctx, g, aggr, dir), aggr, dir, f, in, out, argmax_out,
                        argmax_in);
    if (ctx->deterministic) {
        /* Timings rank close candidates differently from one process to the
         * next, and the candidates differ by rounding: the shape decides. */
        const gnn_spmm_impl_t impl = g->det_impl[dir];
        int rc = run_impl(ctx, g, impl, aggr, dir, f, in, out, argmax_out, argmax_in);
        if (rc == 0) choice_put(g, ctx->generation, aggr, dir, f, impl);
        return rc;
    }
    const choice_t *c = choice_find(g, ctx->generation, aggr, dir, f);
    if (c) return run_auto(ctx, g, c->impl, aggr, dir, f, in, out, argmax_out, argmax_in);
    const gnn_cuda_shape_choice_t *sc = shape_find(ctx, g, aggr, dir, f);
    if (sc) return run_auto(ctx, g, sc->impl, aggr, dir, f, in, out, argmax_out, argmax_in);
    gnn_spmm_impl_t best = GNN_SPMM_ROWCACHE;
    GNN_TRY_RET(choose(ctx, g, aggr, dir, f, in, out, argmax_out, argmax_in, &best));
    choice_put(g, ctx->generation, aggr, dir, f, best);
    shape_put(ctx, g, aggr, dir, f, best);
    return 0;
}

int gnn__cuda_spmm_forward(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                           int64_t f, const float *x, float *y, int32_t *argmax)
{
    GNN_TRY_RET(check_args(ctx, g, aggr, f, x, y, argmax, "forward"));
    return run(ctx, g, aggr, DIR_FWD, f, x, y, argmax, NULL);
}

int gnn__cuda_spmm_backward(const gnn_cuda_spmm_ctx_t *ctx, gnn_cuda_graph_t *g, gnn_aggr_t aggr,
                            int64_t f, const float *dy, const int32_t *argmax, float *dx)
{
    GNN_TRY_RET(check_args(ctx, g, aggr, f, dy, dx, argmax, "backward"));
    return run(ctx, g, aggr, DIR_BWD, f, dy, dx, NULL, argmax);
}

gnn_spmm_impl_t gnn__cuda_spmm_choice(const gnn_cuda_spmm_ctx_t *ctx, const gnn_cuda_graph_t *g,
                                      gnn_aggr_t aggr, int64_t f, int backward)
{
    if (!ctx || !g) return GNN_SPMM_AUTO;
    int dir = backward ? DIR_BWD : DIR_FWD;
    if (ctx->impl != GNN_SPMM_AUTO) return forced_impl(ctx, g, aggr, dir);
    const choice_t *c = choice_find((gnn_cuda_graph_t *)g, ctx->generation, aggr, dir, f);
    if (c) return c->impl;
    const gnn_cuda_shape_choice_t *sc = shape_find(ctx, g, aggr, dir, f);
    return sc ? sc->impl : GNN_SPMM_AUTO;
}
