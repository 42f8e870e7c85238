/*
 * Graph attention on the CUDA backend, with the semantics of kernels/attn.h:
 * the built-in GAT score (per-node terms el, er; LeakyReLU of their sum per
 * slot) and its backward, the fused softmax and weighted aggregation with
 * attention dropout, its backward, and ELU.
 *
 * Edges come in the slot layout of the plug-in interface (the graph's
 * gnn_be_edges_t on the device): indptr gives each destination's first
 * slot, src and dst each slot's ends, t_indptr / t_slot each source's
 * slots in transposed order (its stored edges, then its added self loop).
 * With self loops added, a stored edge u -> u is left out (weight 0):
 * every slot of v with src == v but the row's last.
 *
 * One thread per output element: a softmax or a score gradient per
 * (destination, head), an output feature per (row, column), each summed
 * over the row's slots in the CPU kernels' order; no atomics, so a result
 * is the same from run to run. The dropout mask of slot (u -> v, h) is the
 * CPU's bit for bit: gnn_rng_uniform(seed, offset + (id(v) n_ids + id(u))
 * H + h) < p drops it, and the forward records it in the sign of alpha as
 * the CPU does. Float sums may differ from the CPU's in rounding (fused
 * multiply-adds, expf), which the CUDA tests bound.
 */
#include "kernels/cuda/backend_cuda.cuh"

#include "graph/base/rng.h"
#include "kernels/aggr_builtin.h"

#include <inttypes.h>
#include <math.h>
#include <stdint.h>

#define THREADS 256
/* Rows of a partial sum of the head terms' parameter gradient (the CPU's
 * DA_BLOCK: the same blocks, summed in the same order). */
#define DA_BLOCK 4096

/* Slot e of destination v is a stored self loop left out. */
__device__ static inline bool left_out(int k, const int64_t *indptr, const int64_t *src,
                                       int64_t e, int64_t v)
{
    return k && src[e] == v && e != indptr[v + 1] - 1;
}

__device__ static inline float lrelu(float z, float slope)
{
    return z > 0.0f ? z : z * slope;
}

/* ---- Per-node terms ------------------------------------------------------------- */

__global__ void k_head_dot(int64_t n, int64_t H, int64_t F, const float *__restrict__ x,
                           const float *__restrict__ a, float *__restrict__ out)
{
    const int64_t W = H * F;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t u = i / H, h = i - u * H;
        const float *xs = x + u * W + h * F, *as = a + h * F;
        float t = 0.0f;
        for (int64_t k = 0; k < F; k++) t += xs[k] * as[k];
        out[i] = t;
    }
}

/* dx[u, c] += dout[u, h] a[c]. */
__global__ void k_head_dot_dx(int64_t n, int64_t H, int64_t F, const float *__restrict__ a,
                              const float *__restrict__ dout, float *__restrict__ dx)
{
    const int64_t W = H * F;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * W;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t u = i / W, c = i - u * W;
        dx[i] += dout[u * H + c / F] * a[c];
    }
}

/* part[b, c] = sum over the rows of block b of dout[u, h] x[u, c], in
 * double, rows in order. */
__global__ void k_head_da_part(int64_t n, int64_t H, int64_t F, const float *__restrict__ x,
                               const float *__restrict__ dout, double *__restrict__ part)
{
    const int64_t W = H * F, b = blockIdx.x;
    const int64_t lo = b * DA_BLOCK, hi = lo + DA_BLOCK < n ? lo + DA_BLOCK : n;
    for (int64_t c = threadIdx.x; c < W; c += blockDim.x) {
        const int64_t h = c / F;
        double t = 0.0;
        for (int64_t u = lo; u < hi; u++) t += (double)dout[u * H + h] * (double)x[u * W + c];
        part[b * W + c] = t;
    }
}

__global__ void k_head_da_sum(int64_t W, int64_t nb, const double *__restrict__ part,
                              float *__restrict__ da)
{
    const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (c >= W) return;
    double t = 0.0;
    for (int64_t b = 0; b < nb; b++) t += part[b * W + c];
    da[c] = (float)t;
}

/* ---- GAT scores ----------------------------------------------------------------- */

__global__ void k_gat_score(int64_t slots, int64_t H, int k, const int64_t *__restrict__ indptr,
                            const int64_t *__restrict__ src, const int64_t *__restrict__ dst,
                            const float *__restrict__ el, const float *__restrict__ er,
                            float slope, float *__restrict__ s)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < slots * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t e = i / H, h = i - e * H, u = src[e], v = dst[e];
        s[i] = left_out(k, indptr, src, e, v) ? 0.0f : lrelu(el[u * H + h] + er[v * H + h], slope);
    }
}

/* out[r, h] = sum of ds[e, h] LeakyReLU'(el[src e, h] + er[dst e, h]) over
 * the slots e of row r: slots ptr[r] .. ptr[r + 1] (through slot_of where
 * given), in order. By destination: ptr = indptr, no slot_of (der); by
 * source: ptr = t_indptr, slot_of = t_slot, its added self loop last
 * (del). */
__global__ void k_gat_grad(int64_t n, int64_t H, int k, const int64_t *__restrict__ ptr,
                           const int64_t *__restrict__ slot_of, const int64_t *__restrict__ indptr,
                           const int64_t *__restrict__ src, const int64_t *__restrict__ dst,
                           const float *__restrict__ el, const float *__restrict__ er,
                           const float *__restrict__ ds, float slope, float *__restrict__ out)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / H, h = i - r * H;
        float d = 0.0f;
        for (int64_t t = ptr[r]; t < ptr[r + 1]; t++) {
            const int64_t e = slot_of ? slot_of[t] : t, v = dst[e];
            if (left_out(k, indptr, src, e, v)) continue;
            const float z = el[src[e] * H + h] + er[v * H + h];
            d += ds[e * H + h] * (z > 0.0f ? 1.0f : slope);
        }
        out[i] = d;
    }
}

/* The built-in gat's parts of a call: its layout and options, the device
 * edges and the workspace split as the CPU splits it (el, er, del, der). */
static int gat_parts(const gnn_aggr_call_t *call, const gnn__attn_private_t **p, float **el,
                     float **er, float **del, float **der)
{
    *el = *er = *del = *der = NULL;
    *p = call ? (const gnn__attn_private_t *)call->host_private : NULL;
    if (!*p || !(*p)->a || !(*p)->o || !call->params || !call->edges)
        return GNN_FAIL(GNN_EINVAL, "built-in attention gat (CUDA): no prepared graph, edges or "
                                    "parameters");
    const gnn_aggr_edges_t *g = call->edges; /* its counts */
    const int64_t H = (*p)->o->heads;
    size_t need = (size_t)(g->n_src + g->n_dst) * 2u * (size_t)H * sizeof(float);
    if (need && (!call->workspace || call->workspace_size < need))
        return GNN_FAIL(GNN_EINVAL, "built-in attention gat: workspace of %zu bytes, needs %zu",
                        call->workspace ? call->workspace_size : (size_t)0, need);
    float *w = (float *)call->workspace;
    *el = w;
    *er = w ? w + g->n_src * H : NULL;
    *del = w ? *er + g->n_dst * H : NULL;
    *der = w ? *del + g->n_src * H : NULL;
    return 0;
}

int gnn__cuda_gat_score(const gnn_aggr_call_t *call, const float *x, float *s)
{
    const gnn__attn_private_t *p;
    float *el, *er, *del, *der;
    GNN_TRY_RET(gat_parts(call, &p, &el, &er, &del, &der));
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = p->o->heads, F = p->o->f, ns = e->n_src, nd = e->n_dst;
    cudaStream_t st = (cudaStream_t)call->stream;
    if (!el) return 0; /* no rows */
    if (ns > 0) {
        k_head_dot<<<gnn__cuda_blocks(ns * H, THREADS), THREADS, 0, st>>>(ns, H, F, x, call->params,
                                                                          el);
        GNN_CUDA_LAUNCHED("gat head terms");
    }
    if (nd > 0) {
        k_head_dot<<<gnn__cuda_blocks(nd * H, THREADS), THREADS, 0, st>>>(
            nd, H, F, x, call->params + H * F, er);
        GNN_CUDA_LAUNCHED("gat head terms");
    }
    if (e->slots > 0) {
        k_gat_score<<<gnn__cuda_blocks(e->slots * H, THREADS), THREADS, 0, st>>>(
            e->slots, H, p->o->self_loop != 0, e->indptr, e->src, e->dst, el, er,
            p->o->negative_slope, s);
        GNN_CUDA_LAUNCHED("gat scores");
    }
    return 0;
}

int gnn__cuda_gat_score_backward(const gnn_aggr_call_t *call, const float *x, const float *ds,
                                 float *dx)
{
    const gnn__attn_private_t *p;
    float *el, *er, *del, *der;
    GNN_TRY_RET(gat_parts(call, &p, &el, &er, &del, &der));
    if (!call->dparams)
        return GNN_FAIL(GNN_EINVAL, "built-in attention gat: no parameter gradients");
    if (!p->be) return GNN_FAIL(GNN_EINVAL, "built-in attention gat (CUDA): no backend");
    const gnn_aggr_edges_t *e = call->edges;
    const int64_t H = p->o->heads, F = p->o->f, W = H * F, ns = e->n_src, nd = e->n_dst;
    const int k = p->o->self_loop != 0;
    const float slope = p->o->negative_slope;
    gnn_cuda_be_t *cb = gnn__cuda_be(p->be);
    cudaStream_t st = cb->stream;
    if (!el) { /* no rows: no gradient */
        GNN_CUDA_RET(cudaMemsetAsync(call->dparams, 0, (size_t)(2 * W) * sizeof(float), st),
                     "gat parameter gradient");
        return 0;
    }
    if (nd > 0) {
        k_gat_grad<<<gnn__cuda_blocks(nd * H, THREADS), THREADS, 0, st>>>(
            nd, H, k, e->indptr, NULL, e->indptr, e->src, e->dst, el, er, ds, slope, der);
        GNN_CUDA_LAUNCHED("gat score backward (destinations)");
    }
    if (ns > 0) {
        k_gat_grad<<<gnn__cuda_blocks(ns * H, THREADS), THREADS, 0, st>>>(
            ns, H, k, e->t_indptr, e->t_slot, e->indptr, e->src, e->dst, el, er, ds, slope, del);
        GNN_CUDA_LAUNCHED("gat score backward (sources)");
    }
    /* The two terms' backward: dx += del a_l (sources), der a_r
     * (destinations); d a_l, d a_r in double over fixed blocks of rows. */
    const int64_t rows[2] = {ns, nd};
    const float *dout[2] = {del, der};
    for (int t = 0; t < 2; t++) {
        const int64_t n = rows[t];
        const float *a = call->params + t * W;
        float *da = call->dparams + t * W;
        if (n == 0) {
            GNN_CUDA_RET(cudaMemsetAsync(da, 0, (size_t)W * sizeof(float), st),
                         "gat parameter gradient");
            continue;
        }
        k_head_dot_dx<<<gnn__cuda_blocks(n * W, THREADS), THREADS, 0, st>>>(n, H, F, a, dout[t],
                                                                            dx);
        GNN_CUDA_LAUNCHED("gat head terms backward");
        const int64_t nb = (n + DA_BLOCK - 1) / DA_BLOCK;
        void *part = NULL;
        GNN_TRY_RET(gnn__cuda_scratch(cb, (size_t)(nb * W) * sizeof(double), &part));
        k_head_da_part<<<(unsigned)nb, THREADS, 0, st>>>(n, H, F, x, dout[t], (double *)part);
        GNN_CUDA_LAUNCHED("gat head terms backward");
        k_head_da_sum<<<gnn__cuda_blocks(W, THREADS), THREADS, 0, st>>>(W, nb,
                                                                       (const double *)part, da);
        GNN_CUDA_LAUNCHED("gat head terms backward");
    }
    return 0;
}

/* ---- Softmax and aggregation ---------------------------------------------------- */

/* The dropout key's position (gnn_attn_opts_t's keyed draws), for a step
 * replayed with the step's scalars. */
typedef struct {
    int keyed;
    uint64_t base, at;
} gnn_attn_key_t;

/* s -> alpha in place per (v, h): the softmax over v's slots (stored self
 * loops left out: 0), then the sign bit set where dropout drops the slot. */
__global__ void k_attn_softmax(int64_t nd, int64_t H, int k, const int64_t *__restrict__ indptr,
                               const int64_t *__restrict__ src, const int64_t *__restrict__ ids,
                               uint64_t n_ids, float p, uint64_t seed, uint64_t offset,
                               gnn_attn_key_t key, const gnn_step_scalars_t *sc,
                               float *__restrict__ s)
{
    if (sc && key.keyed) seed = gnn_rng_key_at(key.base, key.at + sc->drop_delta);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nd * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t v = i / H, h = i - v * H, lo = indptr[v], hi = indptr[v + 1];
        float m = -INFINITY, sum = 0.0f;
        for (int64_t e = lo; e < hi; e++)
            if (!left_out(k, indptr, src, e, v)) m = fmaxf(m, s[e * H + h]);
        for (int64_t e = lo; e < hi; e++) {
            const float x = left_out(k, indptr, src, e, v) ? 0.0f : expf(s[e * H + h] - m);
            s[e * H + h] = x;
            sum += x;
        }
        const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
        const uint64_t gv = ids ? (uint64_t)ids[v] : (uint64_t)v;
        for (int64_t e = lo; e < hi; e++) {
            float a = s[e * H + h] * inv;
            if (p > 0.0f && !left_out(k, indptr, src, e, v)) {
                const uint64_t gu = ids ? (uint64_t)ids[src[e]] : (uint64_t)src[e];
                const uint64_t j = offset + (gv * n_ids + gu) * (uint64_t)H + (uint64_t)h;
                if (gnn_rng_uniform(seed, j) < p) a = -a; /* dropped: sign set */
            }
            s[e * H + h] = a;
        }
    }
}

/* y[v, c] = sum over v's kept slots of alpha / (1 - p) x[src, c]. */
__global__ void k_attn_aggregate(int64_t nd, int64_t H, int64_t F, int k,
                                 const int64_t *__restrict__ indptr,
                                 const int64_t *__restrict__ src, float scale,
                                 const float *__restrict__ x, const float *__restrict__ alpha,
                                 float *__restrict__ y)
{
    const int64_t W = H * F;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nd * W;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t v = i / W, c = i - v * W, h = c / F;
        float acc = 0.0f;
        for (int64_t e = indptr[v]; e < indptr[v + 1]; e++) {
            if (left_out(k, indptr, src, e, v)) continue;
            const float al = alpha[e * H + h];
            const float w = signbit(al) ? 0.0f : al * scale;
            acc += w * x[src[e] * W + c];
        }
        y[i] = acc;
    }
}

/* dx[u, c] = sum over u's slots (transposed order) of the kept weight
 * times dy[dst, c]. */
__global__ void k_attn_dx(int64_t ns, int64_t H, int64_t F, int k,
                          const int64_t *__restrict__ indptr, const int64_t *__restrict__ src,
                          const int64_t *__restrict__ dst, const int64_t *__restrict__ t_indptr,
                          const int64_t *__restrict__ t_slot, float scale, const float *alpha,
                          const float *__restrict__ dy, float *__restrict__ dx)
{
    const int64_t W = H * F;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < ns * W;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t u = i / W, c = i - u * W, h = c / F;
        float acc = 0.0f;
        for (int64_t t = t_indptr[u]; t < t_indptr[u + 1]; t++) {
            const int64_t e = t_slot[t], v = dst[e];
            if (left_out(k, indptr, src, e, v)) continue;
            const float al = alpha[e * H + h];
            acc += (signbit(al) ? 0.0f : al * scale) * dy[v * W + c];
        }
        dx[i] = acc;
    }
}

/* The gradient of a slot's weight before the softmax (0 where dropped or
 * left out). */
__device__ static inline float slot_grad(int out, float al, float scale, const float *dyv,
                                         const float *xu, int64_t F)
{
    if (out || signbit(al)) return 0.0f;
    float t = 0.0f;
    for (int64_t k = 0; k < F; k++) t += dyv[k] * xu[k];
    return scale * t;
}

/* ds per (v, h): the softmax's backward |alpha| (d alpha - sum |alpha| d
 * alpha). ds may be alpha: each thread reads its slots' weights before it
 * writes them, and no other thread touches them. */
__global__ void k_attn_ds(int64_t nd, int64_t H, int64_t F, int k,
                          const int64_t *__restrict__ indptr, const int64_t *__restrict__ src,
                          float scale, const float *__restrict__ x, const float *__restrict__ dy,
                          const float *alpha, float *ds)
{
    const int64_t W = H * F;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < nd * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t v = i / H, h = i - v * H, lo = indptr[v], hi = indptr[v + 1];
        const float *dyv = dy + v * W + h * F;
        float c = 0.0f;
        for (int64_t e = lo; e < hi; e++) {
            const float al = alpha[e * H + h];
            const float d = slot_grad(left_out(k, indptr, src, e, v), al, scale, dyv,
                                      x + src[e] * W + h * F, F);
            c += fabsf(al) * d;
        }
        for (int64_t e = lo; e < hi; e++) {
            const float al = alpha[e * H + h];
            const int out = left_out(k, indptr, src, e, v);
            const float d = slot_grad(out, al, scale, dyv, x + src[e] * W + h * F, F);
            ds[e * H + h] = out ? 0.0f : fabsf(al) * (d - c); /* as the CPU: +0, never NaN */
        }
    }
}

static float dropout_scale(float p)
{
    return (float)(1.0 / (1.0 - (double)p));
}

int gnn__cuda_attn_forward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                           const gnn_attn_opts_t *o, const float *x, float *s, float *y)
{
    GNN_TRY_RET(gnn__attn_check(a, o, "attention"));
    const gnn_be_edges_t *ed = NULL;
    GNN_TRY_RET(gnn__be_attn_edges(be, g, a, o->self_loop != 0, &ed));
    const gnn_aggr_edges_t *e = &ed->dev;
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const int64_t H = o->heads, F = o->f, nd = e->n_dst, ns = e->n_src;
    const int k = o->self_loop != 0;
    if (nd == 0) return 0;
    /* The rows' global ids, for the dropout counters: a device buffer. */
    const int64_t *ids = o->dropout > 0.0f ? o->ids : NULL;
    const uint64_t n_ids = o->ids ? (uint64_t)o->n_ids : (uint64_t)ns;
    const gnn_attn_key_t key = {o->keyed, o->key_base, o->key_at};
    k_attn_softmax<<<gnn__cuda_blocks(nd * H, THREADS), THREADS, 0, cb->stream>>>(
        nd, H, k, e->indptr, e->src, ids, n_ids, o->dropout, o->seed, o->offset, key,
        be->step_scalars, s);
    GNN_CUDA_LAUNCHED("attention softmax");
    k_attn_aggregate<<<gnn__cuda_blocks(nd * H * F, THREADS), THREADS, 0, cb->stream>>>(
        nd, H, F, k, e->indptr, e->src, dropout_scale(o->dropout), x, s, y);
    GNN_CUDA_LAUNCHED("attention aggregation");
    return 0;
}

int gnn__cuda_attn_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                            const gnn_attn_opts_t *o, const float *x, const float *alpha,
                            const float *y, const float *dy, float *dx, float *ds)
{
    (void)y; /* the weights' kernel sums each row itself (dx may be y) */
    GNN_TRY_RET(gnn__attn_check(a, o, "attention backward"));
    const gnn_be_edges_t *ed = NULL;
    GNN_TRY_RET(gnn__be_attn_edges(be, g, a, o->self_loop != 0, &ed));
    const gnn_aggr_edges_t *e = &ed->dev;
    gnn_cuda_be_t *cb = gnn__cuda_be(be);
    const int64_t H = o->heads, F = o->f, nd = e->n_dst, ns = e->n_src;
    const int k = o->self_loop != 0;
    const float scale = dropout_scale(o->dropout);
    /* Sources first: they read alpha, which ds may overwrite. */
    if (ns > 0) {
        k_attn_dx<<<gnn__cuda_blocks(ns * H * F, THREADS), THREADS, 0, cb->stream>>>(
            ns, H, F, k, e->indptr, e->src, e->dst, e->t_indptr, e->t_slot, scale, alpha, dy, dx);
        GNN_CUDA_LAUNCHED("attention backward (sources)");
    }
    if (nd > 0) {
        k_attn_ds<<<gnn__cuda_blocks(nd * H, THREADS), THREADS, 0, cb->stream>>>(
            nd, H, F, k, e->indptr, e->src, scale, x, dy, alpha, ds);
        GNN_CUDA_LAUNCHED("attention backward (weights)");
    }
    return 0;
}

/* ---- ELU -------------------------------------------------------------------------- */

__global__ void k_elu(int64_t n, const float *x, float *y)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        y[i] = v > 0.0f ? v : expm1f(v);
    }
}

__global__ void k_elu_backward(int64_t n, const float *y, const float *dy, float *dx)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const float g = dy[i], v = y[i];
        dx[i] = v > 0.0f ? g : g * (v + 1.0f);
    }
}

int gnn__cuda_elu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    if (n < 0) return GNN_FAIL(GNN_EINVAL, "gnn_elu: %" PRId64 " elements", n);
    if (n == 0) return 0;
    k_elu<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(n, x, y);
    GNN_CUDA_LAUNCHED("elu");
    return 0;
}

int gnn__cuda_elu_backward(gnn_backend_t *be, int64_t n, const float *y, const float *dy,
                           float *dx)
{
    if (n < 0) return GNN_FAIL(GNN_EINVAL, "gnn_elu_backward: %" PRId64 " elements", n);
    if (n == 0) return 0;
    k_elu_backward<<<gnn__cuda_blocks(n, THREADS), THREADS, 0, gnn__cuda_be(be)->stream>>>(n, y,
                                                                                         dy, dx);
    GNN_CUDA_LAUNCHED("elu backward");
    return 0;
}
