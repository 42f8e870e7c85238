/*
 * gatv2.so: the "gatv2" attention function (Brody et al., "How Attentive
 * are Graph Attention Networks?"), and the example of a version 2
 * plug-in: learnable parameters and per-edge scores. It includes only
 * gnn_aggr_plugin.h and links against nothing of this project.
 *
 * With x the layer's projected rows (n_src x heads*f, x = D W, computed
 * by the host) and one learnable vector a[h] (f values) per head:
 *
 *   s[e, h]  = sum_k a[h][k] * LeakyReLU(x[u][h][k] + x[v][h][k])   e = u -> v
 *
 * GAT's score is LeakyReLU(a_l . x_u + a_r . x_v): the non-linearity after
 * the sum makes the ranking of the neighbours the same for every
 * destination ("static" attention). GATv2 applies it inside, before the
 * product with a, so the ranking can depend on the destination. This is
 * the variant whose two ends share one projection (PyG's GATv2Conv with
 * share_weights=True). The host adds the self loops, takes the softmax
 * over each destination's slots, drops weights (--attn-dropout) and sums
 * the sources' rows of x with them.
 *
 * Backward, with g[e, h, k] = ds[e, h] * a[h][k] * LeakyReLU'(z), z =
 * x[u][h][k] + x[v][h][k]:
 *   dx[u] += sum over u's out-slots of g,  dx[v] += sum over v's in-slots of g
 *   da[h][k] = sum_e ds[e, h] * LeakyReLU(z)
 * dx is a gather: each thread owns the rows it adds to, by destination
 * (edges->indptr) and by source (edges->t_slot), no atomics. da is summed
 * in double over fixed blocks of slots into the workspace, then over the
 * blocks in order: the same bits for any thread count.
 *
 * Built with GATV2_WITH_CUDA (and linked with gatv2_cuda.cu), the
 * definition also carries CUDA entry points for the same function.
 */
#include "gnn_aggr_plugin.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__GNUC__)
#define GATV2_HIDDEN __attribute__((visibility("hidden")))
#else
#define GATV2_HIDDEN
#endif

/* Blocks of slots summed apart for da: GATV2_BLOCKS on the CPU,
 * GATV2_CUDA_PARTS on a GPU (gatv2_cuda.cu defines the same value); the
 * workspace holds the larger count. */
#define GATV2_BLOCKS 256
#define GATV2_CUDA_PARTS 1024
#define GATV2_WS_PARTS (GATV2_CUDA_PARTS > GATV2_BLOCKS ? GATV2_CUDA_PARTS : GATV2_BLOCKS)

#ifdef GATV2_WITH_CUDA
GATV2_HIDDEN int gatv2_cuda_score(const gnn_aggr_call_t *call, const float *x, float *s);
GATV2_HIDDEN int gatv2_cuda_score_backward(const gnn_aggr_call_t *call, const float *x,
                                           const float *ds, float *dx);
#endif

/* A one-line reason into call->msg; returns 1 (failure). Shared with
 * gatv2_cuda.cu. */
GATV2_HIDDEN int gatv2_fail(const gnn_aggr_call_t *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
GATV2_HIDDEN int gatv2_fail(const gnn_aggr_call_t *call, const char *fmt, ...)
{
    if (call && call->msg && call->msg_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(call->msg, call->msg_size, fmt, ap);
        va_end(ap);
    }
    return 1;
}

/* The call carries what both devices' entry points need. Shared with
 * gatv2_cuda.cu. */
GATV2_HIDDEN int gatv2_check(const gnn_aggr_call_t *call, const char *what);
GATV2_HIDDEN int gatv2_check(const gnn_aggr_call_t *call, const char *what)
{
    if (!call || !call->edges || !call->params || call->heads < 1 || call->f < 1)
        return gatv2_fail(call, "gatv2 %s: missing edges, parameters or sizes", what);
    if (call->workspace_size < (size_t)GATV2_WS_PARTS * (size_t)(call->heads * call->f) * 8u)
        return gatv2_fail(call, "gatv2 %s: workspace of %zu bytes is too small", what,
                    call->workspace_size);
    return 0;
}

static inline float lrelu(float z, float slope) { return z > 0.0f ? z : z * slope; }

static int gatv2_score(const gnn_aggr_call_t *call, const float *x, float *s)
{
    if (gatv2_check(call, "score")) return 1;
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = call->heads, F = call->f, W = H * F;
    const float *a = call->params, slope = call->negative_slope;
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < e->slots; j++) {
        const float *xu = x + e->src[j] * W, *xv = x + e->dst[j] * W;
        for (int64_t h = 0; h < H; h++) {
            float t = 0.0f;
            for (int64_t k = 0; k < F; k++)
                t += a[h * F + k] * lrelu(xu[h * F + k] + xv[h * F + k], slope);
            s[j * H + h] = t;
        }
    }
    return 0;
}

/* dx[w] += sum over the slots in list[lo, hi) (slot ids, or the slots
 * themselves when list is NULL) of g, where w is one end and the other end
 * is other[slot]. */
static void gather(const gnn_aggr_call_t *call, const float *x, const float *ds, int64_t w,
                   const int64_t *list, int64_t lo, int64_t hi, const int64_t *other, float *dxw)
{
    const int64_t H = call->heads, F = call->f, W = H * F;
    const float *a = call->params, slope = call->negative_slope, *xw = x + w * W;
    for (int64_t i = lo; i < hi; i++) {
        int64_t j = list ? list[i] : i;
        const float *xo = x + other[j] * W;
        for (int64_t h = 0; h < H; h++) {
            float d = ds[j * H + h];
            if (d == 0.0f) continue;
            for (int64_t k = 0; k < F; k++) {
                int64_t c = h * F + k;
                float z = xw[c] + xo[c];
                dxw[c] += d * a[c] * (z > 0.0f ? 1.0f : slope);
            }
        }
    }
}

static int gatv2_score_backward(const gnn_aggr_call_t *call, const float *x, const float *ds,
                                float *dx)
{
    if (gatv2_check(call, "score backward")) return 1;
    if (!call->dparams) return gatv2_fail(call, "gatv2 score backward: no parameter gradients");
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = call->heads, F = call->f, W = H * F;
    const float slope = call->negative_slope;
    /* dx: every row as a destination (its slots), then as a source. */
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t w = 0; w < e->n_src; w++) {
        float *dxw = dx + w * W;
        if (w < e->n_dst) gather(call, x, ds, w, NULL, e->indptr[w], e->indptr[w + 1], e->src, dxw);
        gather(call, x, ds, w, e->t_slot, e->t_indptr[w], e->t_indptr[w + 1], e->dst, dxw);
    }
    /* da: block b sums slots [b * per, (b + 1) * per) into part[b]. */
    double *part = call->workspace;
    int64_t per = (e->slots + GATV2_BLOCKS - 1) / GATV2_BLOCKS;
#pragma omp parallel for schedule(static)
    for (int64_t b = 0; b < GATV2_BLOCKS; b++) {
        double *p = part + b * W;
        memset(p, 0, (size_t)W * sizeof *p);
        int64_t end = (b + 1) * per < e->slots ? (b + 1) * per : e->slots;
        for (int64_t j = b * per; j < end; j++) {
            const float *xu = x + e->src[j] * W, *xv = x + e->dst[j] * W;
            for (int64_t h = 0; h < H; h++) {
                double d = ds[j * H + h];
                if (d == 0.0) continue;
                for (int64_t k = 0; k < F; k++)
                    p[h * F + k] += d * lrelu(xu[h * F + k] + xv[h * F + k], slope);
            }
        }
    }
    for (int64_t c = 0; c < W; c++) {
        double t = 0.0;
        for (int64_t b = 0; b < GATV2_BLOCKS; b++) t += part[b * W + c];
        call->dparams[c] = (float)t;
    }
    return 0;
}

/* One tensor a: heads x f, Glorot-initialised as GAT's a_l and a_r. */
static int gatv2_params(const gnn_aggr_dims_t *d, gnn_aggr_param_t *out, int max, void *user)
{
    (void)user;
    if (max < 1) return -1;
    out[0] = (gnn_aggr_param_t){"a", d->heads, d->f, GNN_AGGR_INIT_GLOROT, 0.0f};
    return 1;
}

/* The partial sums of da: GATV2_BLOCKS x heads*f doubles on the CPU,
 * GATV2_CUDA_PARTS x heads*f on a GPU (gatv2_cuda.cu). */
static size_t gatv2_workspace(const gnn_aggr_graph_t *g, const gnn_aggr_edges_t *e,
                              const gnn_aggr_dims_t *d, void *user)
{
    (void)g, (void)e, (void)user;
    return (size_t)GATV2_WS_PARTS * (size_t)(d->heads * d->f) * sizeof(double);
}

GNN_AGGR_PLUGIN_EXPORT uint32_t gnn_aggr_plugin_abi(void) { return GNN_AGGR_ABI_VERSION; }

GNN_AGGR_PLUGIN_EXPORT int gnn_aggr_plugin_register(gnn_aggr_host_t *host)
{
    static const gnn_aggr_def_t gatv2 = {
        .abi_version = GNN_AGGR_ABI_VERSION,
        .name = "gatv2",
        .description = "GATv2 attention: a . LeakyReLU(x_u + x_v) per head (shared projection)",
        .kind = GNN_AGGR_KIND_ATTENTION,
        .params = gatv2_params,
        .workspace_bytes2 = gatv2_workspace,
        .cpu_score = gatv2_score,
        .cpu_score_backward = gatv2_score_backward,
#ifdef GATV2_WITH_CUDA
        .cuda_score = gatv2_cuda_score,
        .cuda_score_backward = gatv2_cuda_score_backward,
#endif
    };
    return host->add(host, &gatv2);
}
