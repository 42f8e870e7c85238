/*
 * lse.so: the "lse" aggregator (log of the mean of exponentials, a smooth
 * maximum normalised by degree), and the example of a plug-in: it includes
 * only gnn_aggr_plugin.h and links against nothing of this project.
 *
 *   y[v][k]  = log((1/d_v) sum_{e=(u->v)} exp(x[u][k]))      (0 for an empty row)
 *   dx[u][k] = sum_{e=(u->v)} dy[v][k] * exp(x[u][k] - y[v][k]) / d_v
 *
 * with d_v the entries of row v. The mean keeps y between the mean and the
 * maximum of the inputs whatever the degree (a plain log-sum-exp adds
 * log d_v, which on small features drowns them and trains to chance).
 *
 * The forward subtracts the row's maximum m[k] before exponentiating,
 * y = m + log(sum exp(x - m)), so no term overflows and the largest is 1
 * (inputs are assumed finite). The backward reuses y from the forward and
 * needs no workspace. Every CSR entry is a term of its own, so a repeated
 * edge counts twice, forward and backward alike. Edge weights are ignored.
 *
 * The forward walks rows of the in-edge CSR; the backward is a gather over
 * the transpose (row u lists the destinations of u's out-edges), so each
 * output row is written by one OpenMP thread, with no atomics, and results
 * do not depend on the thread count. Features go in blocks of BLOCK
 * columns with the per-column maxima and sums (double) on the stack: no
 * allocation, hence no failure beyond bad arguments.
 *
 * Built with LSE_WITH_CUDA (and linked with lse_cuda.cu), the definition
 * also carries the CUDA entry points of lse_cuda.cu: the same aggregation
 * on device pointers, on the stream of the call. That build is lse_cuda.so.
 */
#include "gnn_aggr_plugin.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#define BLOCK 64

#if defined(__GNUC__)
#define LSE_HIDDEN __attribute__((visibility("hidden")))
#else
#define LSE_HIDDEN
#endif

/* Write a one-line reason into call->msg; returns 1 (failure). Also used
 * by lse_cuda.cu. */
LSE_HIDDEN int lse_fail(const gnn_aggr_call_t *call, const char *fmt, ...);

#ifdef LSE_WITH_CUDA
/* lse_cuda.cu: the same forward and backward on the GPU. */
LSE_HIDDEN int lse_cuda_forward(const gnn_aggr_call_t *call, const float *x, float *y);
LSE_HIDDEN int lse_cuda_backward(const gnn_aggr_call_t *call, const float *x, const float *y,
                                 const float *dy, float *dx);
#endif

int lse_fail(const gnn_aggr_call_t *call, const char *fmt, ...)
{
    if (call && call->msg && call->msg_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(call->msg, call->msg_size, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static int lse_forward(const gnn_aggr_call_t *call, const float *x, float *y)
{
    if (!call || !call->graph) return lse_fail(call, "lse forward: no graph");
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f, n = g->n_dst;
    if (f < 1) return lse_fail(call, "lse forward: bad feature width %lld", (long long)f);
    if (n <= 0) return 0;
    if (!x || !y || !g->indptr || (g->nnz > 0 && !g->indices))
        return lse_fail(call, "lse forward: NULL array");
    const int64_t *indptr = g->indptr, *indices = g->indices;

#pragma omp parallel for schedule(dynamic, 32)
    for (int64_t v = 0; v < n; v++) {
        float *yr = y + v * f;
        const int64_t beg = indptr[v], end = indptr[v + 1];
        if (beg == end) {
            for (int64_t k = 0; k < f; k++) yr[k] = 0.0f;
            continue;
        }
        for (int64_t k0 = 0; k0 < f; k0 += BLOCK) {
            const int64_t nk = f - k0 < BLOCK ? f - k0 : BLOCK;
            float m[BLOCK];
            double s[BLOCK];
            const float *x0 = x + indices[beg] * f + k0;
            for (int64_t k = 0; k < nk; k++) {
                m[k] = x0[k];
                s[k] = 0.0;
            }
            for (int64_t j = beg + 1; j < end; j++) {
                const float *xr = x + indices[j] * f + k0;
#pragma omp simd
                for (int64_t k = 0; k < nk; k++) m[k] = xr[k] > m[k] ? xr[k] : m[k];
            }
            for (int64_t j = beg; j < end; j++) {
                const float *xr = x + indices[j] * f + k0;
                for (int64_t k = 0; k < nk; k++) s[k] += (double)expf(xr[k] - m[k]);
            }
            const double d = (double)(end - beg);
            for (int64_t k = 0; k < nk; k++) yr[k0 + k] = (float)((double)m[k] + log(s[k] / d));
        }
    }
    return 0;
}

static int lse_backward(const gnn_aggr_call_t *call, const float *x, const float *y,
                        const float *dy, float *dx)
{
    if (!call || !call->graph) return lse_fail(call, "lse backward: no graph");
    const gnn_aggr_graph_t *g = call->graph;
    const int64_t f = call->f, n = g->n_src;
    if (f < 1) return lse_fail(call, "lse backward: bad feature width %lld", (long long)f);
    if (n <= 0) return 0;
    if (!x || !dx || !g->t_indptr || (g->nnz > 0 && (!y || !dy || !g->t_indices || !g->indptr)))
        return lse_fail(call, "lse backward: NULL array (the transpose is required)");
    const int64_t *t_indptr = g->t_indptr, *t_indices = g->t_indices, *indptr = g->indptr;

#pragma omp parallel for schedule(dynamic, 32)
    for (int64_t u = 0; u < n; u++) {
        float *o = dx + u * f;
        const int64_t beg = t_indptr[u], end = t_indptr[u + 1];
        for (int64_t k0 = 0; k0 < f; k0 += BLOCK) {
            const int64_t nk = f - k0 < BLOCK ? f - k0 : BLOCK;
            const float *xu = x + u * f + k0;
            double acc[BLOCK];
            for (int64_t k = 0; k < nk; k++) acc[k] = 0.0;
            for (int64_t j = beg; j < end; j++) {
                const int64_t v = t_indices[j];
                const float *yr = y + v * f + k0, *gr = dy + v * f + k0;
                const double inv = 1.0 / (double)(indptr[v + 1] - indptr[v]);
                for (int64_t k = 0; k < nk; k++)
                    acc[k] += (double)gr[k] * (double)expf(xu[k] - yr[k]) * inv;
            }
            for (int64_t k = 0; k < nk; k++) o[k0 + k] = (float)acc[k];
        }
    }
    return 0;
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    static const gnn_aggr_def_t lse = {
        .abi_version = GNN_AGGR_ABI_VERSION,
        .name = "lse",
        .description = "log of the mean of exp of the in-neighbours' rows, a smooth max "
                       "(weights ignored)",
        .workspace_bytes = NULL, /* none: the backward reads x and y */
        .cpu_forward = lse_forward,
        .cpu_backward = lse_backward,
#ifdef LSE_WITH_CUDA
        .cuda_forward = lse_cuda_forward,
        .cuda_backward = lse_cuda_backward,
#endif
    };
    return host->add(host, &lse);
}
