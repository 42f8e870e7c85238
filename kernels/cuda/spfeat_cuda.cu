/*
 * Sparse input features on the CUDA backend (kernels/spfeat.h semantics):
 * the matrix's CSR, its values and the by-column index the host prepared
 * are copied to the device once, into arrays of the stream-ordered pool
 * on the backend's stream, which also frees them: a mini-batch's matrix
 * comes and goes without an explicit wait for the device (the copies from
 * pageable memory may still wait to stage); dropout masks the stored entries with the
 * dense matrix's counters, t = D w runs a warp per row and dw = D^T dt a
 * warp per column over the by-column index (a gather: no atomics, the same
 * bits every run). Both skip zero values (the dropped entries) as the CPU
 * does, so an infinite weight next to a dropped entry gives no NaN.
 */
#include "kernels/cuda/backend_cuda.cuh"

#include "graph/base/alloc.h"
#include "graph/base/rng.h"

#include <inttypes.h>

#define THREADS 256
#define WARP 32

typedef struct {
    int64_t rows, cols, nnz;
    int64_t *indptr;   /* rows + 1 */
    int64_t *indices;  /* nnz */
    float *values;     /* nnz, the matrix's own values */
    int64_t *t_indptr; /* cols + 1 */
    int64_t *t_entry;  /* nnz */
    int64_t *t_row;    /* nnz */
} spfeat_dev_t;

/* d's arrays freed after the work queued on st, which reads them. */
static void dev_free(spfeat_dev_t *d, cudaStream_t st)
{
    if (!d) return;
    gnn__be_note_free();
    void *a[6] = {d->indptr, d->indices, d->values, d->t_indptr, d->t_entry, d->t_row};
    for (int i = 0; i < 6; i++)
        if (a[i] && cudaFreeAsync(a[i], st) != cudaSuccess) (void)cudaGetLastError();
    gnn_free(d);
}

/* *d = a device copy of n elements of size bytes each from host h (h free
 * to reuse on return: gnn__cuda_upload). */
static int upload(gnn_cuda_be_t *cb, void **d, const void *h, int64_t n, size_t size)
{
    size_t bytes = (size_t)n * size;
    GNN_CUDA_RET(cudaMallocAsync(d, bytes ? bytes : 1, cb->stream), "sparse features: device copy");
    if (bytes)
        GNN_CUDA_RET(gnn__cuda_upload(*d, h, bytes, cb->stream),
                     "sparse features: copy to device");
    return 0;
}

int gnn__cuda_sparse_prepare(gnn_backend_t *be, gnn_bsparse_t *s)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const gnn_spfeat_t *h = s->host;
    const gnn_csr_t *a = h->a;
    spfeat_dev_t *d = (spfeat_dev_t *)gnn_calloc(1, sizeof *d);
    GNN_CHECK_RET(d, GNN_ENOMEM, "sparse features on the device");
    d->rows = a->n_rows;
    d->cols = a->n_cols;
    d->nnz = a->nnz;
    int rc = upload(cb, (void **)&d->indptr, a->indptr, a->n_rows + 1, sizeof(int64_t));
    if (rc == 0) rc = upload(cb, (void **)&d->indices, a->indices, a->nnz, sizeof(int64_t));
    if (rc == 0) rc = upload(cb, (void **)&d->values, a->weights, a->nnz, sizeof(float));
    if (rc == 0) rc = upload(cb, (void **)&d->t_indptr, h->t_indptr, a->n_cols + 1, sizeof(int64_t));
    if (rc == 0) rc = upload(cb, (void **)&d->t_entry, h->t_entry, a->nnz, sizeof(int64_t));
    if (rc == 0) rc = upload(cb, (void **)&d->t_row, h->t_row, a->nnz, sizeof(int64_t));
    if (rc < 0) {
        dev_free(d, cb->stream);
        return rc;
    }
    s->impl = d;
    return 0;
}

void gnn__cuda_sparse_release(gnn_backend_t *be, gnn_bsparse_t *s)
{
    dev_free((spfeat_dev_t *)s->impl, gnn__cuda_be(be)->stream);
    s->impl = NULL;
}

/* A warp per row: entry j = (r, c) keeps its value when counter
 * offset + id * cols + c is kept, id = row_id[r] or r. */
__global__ void k_spfeat_dropout(int64_t rows, int64_t cols, const int64_t *indptr,
                                 const int64_t *indices, const float *values, float p, float scale,
                                 uint64_t seed, uint64_t offset, const gnn_step_scalars_t *sc,
                                 const int64_t *row_id, float *vals)
{
    if (sc) offset += sc->drop_delta;
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; r < rows;
         r += warps)
        for (int64_t j = indptr[r] + lane; j < indptr[r + 1]; j += WARP) {
            uint64_t id = (uint64_t)(row_id ? row_id[r] : r);
            uint64_t ctr = offset + id * (uint64_t)cols + (uint64_t)indices[j];
            vals[j] = gnn_rng_uniform(seed, ctr) < p ? 0.0f : values[j] * scale;
        }
}

int gnn__cuda_sparse_dropout(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                             uint64_t offset, const int64_t *row_id, float *vals)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const spfeat_dev_t *d = (const spfeat_dev_t *)s->impl;
    GNN_CHECK_RET(vals || d->nnz == 0, GNN_EINVAL, "sparse dropout: NULL argument");
    GNN_CHECK_RET(p >= 0.0f && p < 1.0f, GNN_EINVAL,
                  "sparse dropout: drop probability %g outside [0, 1)", (double)p);
    if (d->nnz == 0) return 0;
    if (p == 0.0f) {
        GNN_CUDA_RET(cudaMemcpyAsync(vals, d->values, (size_t)d->nnz * sizeof(float),
                                     cudaMemcpyDeviceToDevice, cb->stream),
                     "gnn_spfeat_dropout");
        return 0;
    }
    float scale = (float)(1.0 / (1.0 - (double)p));
    k_spfeat_dropout<<<gnn__cuda_blocks(d->rows * WARP, THREADS), THREADS, 0, cb->stream>>>(
        d->rows, d->cols, d->indptr, d->indices, d->values, p, scale, seed, offset,
        be->step_scalars, row_id, vals);
    GNN_CUDA_LAUNCHED("sparse dropout");
    return 0;
}

/* t[r] = sum_j vals[j] w[indices[j]], a warp per row, lanes over columns. */
__global__ void k_spfeat_mm(int64_t rows, int64_t f, const int64_t *indptr,
                            const int64_t *indices, const float *vals, const float *w, float *t)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t r = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; r < rows;
         r += warps) {
        int64_t j0 = indptr[r], j1 = indptr[r + 1];
        for (int64_t k = lane; k < f; k += WARP) {
            float acc = 0.0f;
            for (int64_t j = j0; j < j1; j++) {
                const float v = vals[j];
                if (v != 0.0f) acc += v * w[indices[j] * f + k];
            }
            t[r * f + k] = acc;
        }
    }
}

int gnn__cuda_sparse_mm(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                        const float *w, int64_t f, float *t)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const spfeat_dev_t *d = (const spfeat_dev_t *)s->impl;
    GNN_CHECK_RET(w && t && (d->nnz == 0 || vals), GNN_EINVAL, "gnn_spfeat_mm: NULL argument");
    GNN_CHECK_RET(f >= 1, GNN_EINVAL, "gnn_spfeat_mm: bad width %" PRId64, f);
    if (n == 0) return 0;
    k_spfeat_mm<<<gnn__cuda_blocks(n * WARP, THREADS), THREADS, 0, cb->stream>>>(
        n, f, d->indptr, d->indices, vals, w, t);
    GNN_CUDA_LAUNCHED("sparse mm");
    return 0;
}

/* dw[c] = sum over the entries e of column c in rows below n of
 * vals[t_entry[e]] dt[t_row[e]] (a column's entries run by row). */
__global__ void k_spfeat_mm_t(int64_t cols, int64_t n, int64_t f, const int64_t *t_indptr,
                              const int64_t *t_entry, const int64_t *t_row, const float *vals,
                              const float *dt, float *dw)
{
    int64_t warps = (int64_t)gridDim.x * (blockDim.x / WARP);
    int lane = threadIdx.x % WARP;
    for (int64_t c = blockIdx.x * (int64_t)(blockDim.x / WARP) + threadIdx.x / WARP; c < cols;
         c += warps) {
        int64_t e0 = t_indptr[c], e1 = t_indptr[c + 1];
        for (int64_t k = lane; k < f; k += WARP) {
            float acc = 0.0f;
            for (int64_t e = e0; e < e1 && t_row[e] < n; e++) {
                const float v = vals[t_entry[e]];
                if (v != 0.0f) acc += v * dt[t_row[e] * f + k];
            }
            dw[c * f + k] = acc;
        }
    }
}

int gnn__cuda_sparse_mm_t(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals,
                          int64_t n, const float *dt, int64_t f, float *dw)
{
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const spfeat_dev_t *d = (const spfeat_dev_t *)s->impl;
    GNN_CHECK_RET(dt && dw && (d->nnz == 0 || vals), GNN_EINVAL,
                  "gnn_spfeat_mm_t: NULL argument");
    GNN_CHECK_RET(f >= 1, GNN_EINVAL, "gnn_spfeat_mm_t: bad width %" PRId64, f);
    if (d->cols == 0) return 0;
    k_spfeat_mm_t<<<gnn__cuda_blocks(d->cols * WARP, THREADS), THREADS, 0, cb->stream>>>(
        d->cols, n, f, d->t_indptr, d->t_entry, d->t_row, vals, dt, dw);
    GNN_CUDA_LAUNCHED("sparse mm_t");
    return 0;
}
