/*
 * CPU backend: buffers are host memory (64-byte aligned, so rows of the
 * dense matrices start on cache lines; from 2 MiB on transparent huge
 * pages, which the random row gathers of aggregation need: with 4 KiB
 * pages nearly every gathered row misses the TLB), every operation is the OpenMP /
 * OpenBLAS kernel of kernels/dense.h, and aggregation runs the definitions'
 * CPU entry points on the host view of the prepared graph. Nothing is
 * queued: every call has finished when it returns. cpu-as-gpu is the same
 * table with its buffers listed (see below).
 */
#include "kernels/backend_impl.h"
#include "kernels/adam_step.h"
#include "kernels/dense_check.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <omp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>


/*
 * cpu-as-gpu keeps a list of its live buffers, so that the dispatch layer
 * can refuse a pointer that is not one (or inside one): a host array
 * passed where a GPU would need device memory fails there with a message,
 * instead of working on the CPU only.
 */
typedef struct {
    pthread_mutex_t lock;
    struct {
        const char *p;
        size_t bytes;
        int alloc; /* gnn_be_alloc's (not host memory mapped) */
    } *a;
    size_t n, cap;
    size_t held, peak; /* bytes of gnn_be_alloc's buffers: now, and the most */
} tracker_t;

static int track_add(tracker_t *t, const void *p, size_t bytes, int alloc)
{
    int rc = 0;
    pthread_mutex_lock(&t->lock);
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        void *a = gnn_realloc_array(t->a, cap, sizeof *t->a);
        if (!a) {
            rc = GNN_FAIL(GNN_ENOMEM, "cpu-as-gpu: buffer list");
            goto out;
        }
        t->a = a;
        t->cap = cap;
    }
    t->a[t->n].p = p;
    t->a[t->n].alloc = alloc;
    t->a[t->n++].bytes = bytes ? bytes : 1;
    if (alloc) {
        t->held += bytes;
        if (t->held > t->peak) t->peak = t->held;
    }
out:
    pthread_mutex_unlock(&t->lock);
    return rc;
}

static void track_remove(tracker_t *t, const void *p)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n; i++)
        if (t->a[i].p == p) {
            if (t->a[i].alloc) t->held -= t->a[i].bytes;
            t->a[i] = t->a[--t->n];
            break;
        }
    pthread_mutex_unlock(&t->lock);
}

int gnn__backend_cpu_owns(const gnn_backend_t *be, const void *p)
{
    if (be->kind != GNN_BACKEND_CPU || be->host_memory || !be->impl) return 1;
    tracker_t *t = be->impl;
    int found = 0;
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->n && !found; i++)
        found = (const char *)p >= t->a[i].p && (const char *)p < t->a[i].p + t->a[i].bytes;
    pthread_mutex_unlock(&t->lock);
    return found;
}

static int cpu_alloc(gnn_backend_t *be, size_t bytes, void **out)
{
    *out = gnn_alloc_large(bytes); /* 64-byte aligned; huge pages from 2 MiB */
    if (!*out) return GNN_ENOMEM; /* the allocator recorded it */
    int rc = be->impl ? track_add(be->impl, *out, bytes ? bytes : 1, 1) : 0;
    if (rc < 0) {
        gnn_free(*out);
        *out = NULL;
    }
    return rc;
}

static void cpu_free(gnn_backend_t *be, void *p)
{
    if (be->impl) track_remove(be->impl, p);
    gnn_free(p);
}

/* Host memory the device reads in place: itself; cpu-as-gpu lists it
 * among its buffers. */
static int cpu_map_host(gnn_backend_t *be, void *host, size_t bytes, void **dev)
{
    int rc = be->impl ? track_add(be->impl, host, bytes, 0) : 0;
    *dev = rc < 0 ? NULL : host;
    return rc;
}

static void cpu_unmap_host(gnn_backend_t *be, void *host)
{
    if (be->impl) track_remove(be->impl, host);
}

static int cpu_gather_rows_cached(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                                  const int32_t *slot, const float *src, const int64_t *idx,
                                  float *dst)
{
    (void)be;
    return gnn_gather_rows_cached(n, f, cache, slot, src, idx, dst);
}

static void cpu_close(gnn_backend_t *be)
{
    tracker_t *t = be->impl;
    if (!t) return;
    pthread_mutex_destroy(&t->lock);
    gnn_free(t->a);
    gnn_free(t);
    be->impl = NULL;
}

static int cpu_copy(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    (void)be;
    memcpy(dst, src, bytes);
    return 0;
}

static int cpu_zero(gnn_backend_t *be, void *dst, size_t bytes)
{
    (void)be;
    memset(dst, 0, bytes);
    return 0;
}

static int cpu_sync(gnn_backend_t *be)
{
    (void)be;
    return 0;
}

static int cpu_gemm(gnn_backend_t *be, int ta, int tb, int64_t m, int64_t n, int64_t k,
                    float alpha, const float *a, int64_t lda, const float *b, int64_t ldb,
                    float beta, float *c, int64_t ldc)
{
    (void)be;
    return gnn_gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static int cpu_gemm_rows(gnn_backend_t *be, int ta, int64_t m, int64_t n, int64_t k,
                         float alpha, const float *a, int64_t lda, const int64_t *rows,
                         const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    (void)be;
    return gnn_gemm_rows(ta, m, n, k, alpha, a, lda, rows, b, ldb, beta, c, ldc);
}

static int cpu_gemm_pair(gnn_backend_t *be, int ta, int64_t m, int64_t m2, int64_t k,
                         const float *a, int64_t lda, const int64_t *rows, int64_t n1,
                         const float *b1, float *c1, int64_t n2, const float *b2, float *c2)
{
    (void)be;
    return gnn_gemm_pair(ta, m, m2, k, a, lda, rows, n1, b1, c1, n2, b2, c2);
}

static int cpu_bias_add(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                        const float *bias)
{
    (void)be;
    return gnn_bias_add(rows, cols, y, bias);
}

static int cpu_bias_grad(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy,
                         float *dbias)
{
    (void)be;
    return gnn_bias_grad(rows, cols, dy, dbias);
}

static int cpu_bias_act(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                        const float *bias, int act)
{
    (void)be;
    return gnn_bias_act(rows, cols, y, bias, act);
}

/* The step's dropout offset: the caller's, plus the delta of the step's
 * scalars when set (gnn_be_set_step_scalars; host memory here). */
static uint64_t step_offset(const gnn_backend_t *be, uint64_t offset)
{
    return be->step_scalars ? offset + be->step_scalars->drop_delta : offset;
}

static int cpu_bias_act_drop(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                             const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                             const int64_t *row_id)
{
    return gnn_bias_act_drop(rows, cols, y, bias, act, p, seed, step_offset(be, offset), row_id);
}

static int cpu_relu_drop_backward(gnn_backend_t *be, int64_t n, float p, const float *y,
                                  const float *dy, float *dx)
{
    (void)be;
    return gnn_relu_drop_backward(n, p, y, dy, dx);
}

static int cpu_relu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    (void)be;
    return gnn_relu(n, x, y);
}

static int cpu_relu_backward(gnn_backend_t *be, int64_t n, const float *xy, const float *dy,
                             float *dx)
{
    (void)be;
    return gnn_relu_backward(n, xy, dy, dx);
}

static int cpu_dropout(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                       const float *x, float *y)
{
    return gnn_dropout(n, p, seed, step_offset(be, offset), x, y);
}

static int cpu_dropout_rows(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id,
                            float p, uint64_t seed, uint64_t offset, const float *x, float *y)
{
    return gnn_dropout_rows(rows, f, row_id, p, seed, step_offset(be, offset), x, y);
}

static int cpu_dropout_backward(gnn_backend_t *be, int64_t n, float p, uint64_t seed,
                                uint64_t offset, const float *dy, float *dx)
{
    return gnn_dropout_backward(n, p, seed, step_offset(be, offset), dy, dx);
}

static int cpu_axpby(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta,
                     float *y)
{
    (void)be;
    return gnn_axpby(n, alpha, x, beta, y);
}

static int cpu_gather_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src,
                           int64_t src_rows, const int64_t *idx, float *dst)
{
    (void)be;
    return gnn_gather_rows(n, f, src, src_rows, idx, dst);
}

static int cpu_softmax_xent(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                            const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                            float *dlogits)
{
    (void)be;
    return gnn_softmax_xent(rows, classes, logits, labels, idx, nidx, loss, dlogits);
}

static int cpu_adam(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                    const gnn_adam_opts_t *o, int64_t step)
{
    if (!be->step_scalars) return gnn_adam(n, w, g, m, v, o, step);
    int rc = gnn__dense_check_adam(o, step);
    if (rc < 0) return rc;
    gnn_adam_consts_t c = gnn_adam_consts(o, step);
    c.step_size = be->step_scalars->adam_step_size;
    c.bc2_sqrt = be->step_scalars->adam_bc2_sqrt;
    return gnn__adam_apply(n, w, g, m, v, &c);
}

static int cpu_count_correct(gnn_backend_t *be, int64_t rows, int64_t classes,
                             const float *logits, const int64_t *labels, const int64_t *idx,
                             int64_t nidx, int64_t *correct)
{
    (void)be;
    return gnn_count_correct(rows, classes, logits, labels, idx, nidx, correct);
}

static int cpu_argmax_rows(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                           int64_t *out)
{
    (void)be;
    return gnn_argmax_rows(rows, classes, x, out);
}

/* The device view is the host view: nothing to copy. */
static int cpu_graph_prepare(gnn_backend_t *be, gnn_bgraph_t *g)
{
    (void)be;
    g->dev = g->host;
    return 0;
}

static gnn_aggr_forward_fn cpu_aggr_forward(const gnn_aggr_def_t *def)
{
    return def->cpu_forward;
}

static gnn_aggr_backward_fn cpu_aggr_backward(const gnn_aggr_def_t *def)
{
    return def->cpu_backward;
}

static void cpu_aggr_call(gnn_backend_t *be, const gnn_bgraph_t *g, gnn_aggr_call_t *call)
{
    (void)be;
    (void)g;
    call->stream = NULL;
}

static int cpu_sparse_prepare(gnn_backend_t *be, gnn_bsparse_t *s)
{
    (void)be;
    (void)s;
    return 0;
}

static int cpu_sparse_dropout(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                              uint64_t offset, const int64_t *row_id, float *vals)
{
    return gnn_spfeat_dropout(s->host, p, seed, step_offset(be, offset), row_id, vals);
}

static int cpu_sparse_mm(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals,
                         int64_t n, const float *w, int64_t f, float *t)
{
    (void)be;
    return gnn_spfeat_mm(s->host, vals, n, w, f, t);
}

static int cpu_sparse_mm_t(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals,
                           int64_t n, const float *dt, int64_t f, float *dw)
{
    (void)be;
    return gnn_spfeat_mm_t(s->host, vals, n, dt, f, dw);
}

static gnn_aggr_score_fn cpu_attn_score(const gnn_aggr_def_t *def)
{
    return def->cpu_score;
}

static gnn_aggr_score_backward_fn cpu_attn_score_backward(const gnn_aggr_def_t *def)
{
    return def->cpu_score_backward;
}

static int cpu_attn_forward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                            const gnn_attn_opts_t *o, const float *x, float *s, float *y)
{
    (void)g;
    if (!be->step_scalars || !o->keyed) return gnn_attn_forward(a, o, x, s, y);
    gnn_attn_opts_t k = *o; /* the key of the replayed step's position */
    k.seed = gnn_rng_key_at(o->key_base, o->key_at + be->step_scalars->drop_delta);
    return gnn_attn_forward(a, &k, x, s, y);
}

static int cpu_attn_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                             const gnn_attn_opts_t *o, const float *x, const float *alpha,
                             const float *y, const float *dy, float *dx, float *ds)
{
    (void)be, (void)g;
    return gnn_attn_backward(a, o, x, alpha, y, dy, dx, ds);
}

static int cpu_elu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    (void)be;
    return gnn_elu(n, x, y);
}

static int cpu_elu_backward(gnn_backend_t *be, int64_t n, const float *y, const float *dy,
                            float *dx)
{
    (void)be;
    return gnn_elu_backward(n, y, dy, dx);
}

static int cpu_sparse_opt_step(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n,
                               int64_t d, const int64_t *rows, int64_t table_rows, const float *g,
                               int64_t ldg, float *w, float *s1, float *s2, int64_t step)
{
    (void)be;
    return gnn_sparse_opt_step(o, n, d, rows, table_rows, g, ldg, w, s1, s2, step);
}

static int cpu_copy_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                         int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd)
{
    (void)be;
    return gnn_copy_rows(n, f, src, lds, src_rows, idx, dst, ldd);
}

static int cpu_scatter_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                            const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows)
{
    (void)be;
    return gnn_scatter_rows(n, f, src, lds, idx, dst, ldd, dst_rows);
}

/* cpu-as-gpu: the most its buffers held (gnn_be_alloc's). */
static int cpu_mem_peak(gnn_backend_t *be, size_t *bytes)
{
    tracker_t *t = be->impl;
    if (!t) return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_mem_peak: not known on %s", be->desc);
    pthread_mutex_lock(&t->lock);
    *bytes = t->peak;
    pthread_mutex_unlock(&t->lock);
    return 0;
}

/* MemAvailable of /proc/meminfo; free physical pages where there is none. */
static int cpu_mem_available(gnn_backend_t *be, size_t *bytes)
{
    (void)be;
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    unsigned long long kb = 0;
    int found = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) {
            found = 1;
            break;
        }
    if (f) fclose(f);
    if (found) {
        *bytes = (size_t)kb * 1024u;
        return 0;
    }
    long pages = sysconf(_SC_AVPHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    *bytes = pages > 0 && size > 0 ? (size_t)pages * (size_t)size : SIZE_MAX;
    return 0;
}

static const gnn_backend_ops_t cpu_ops = {
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .gemm = cpu_gemm,
    .bias_add = cpu_bias_add,
    .bias_grad = cpu_bias_grad,
    .relu = cpu_relu,
    .relu_backward = cpu_relu_backward,
    .dropout = cpu_dropout,
    .dropout_backward = cpu_dropout_backward,
    .dropout_rows = cpu_dropout_rows,
    .axpby = cpu_axpby,
    .gather_rows = cpu_gather_rows,
    .softmax_xent = cpu_softmax_xent,
    .adam = cpu_adam,
    .count_correct = cpu_count_correct,
    .argmax_rows = cpu_argmax_rows,
    .graph_prepare = cpu_graph_prepare,
    .graph_release = NULL,
    .aggr_forward = cpu_aggr_forward,
    .aggr_backward = cpu_aggr_backward,
    .aggr_call = cpu_aggr_call,
    .sparse_prepare = cpu_sparse_prepare,
    .sparse_release = NULL,
    .sparse_dropout = cpu_sparse_dropout,
    .sparse_mm = cpu_sparse_mm,
    .sparse_mm_t = cpu_sparse_mm_t,
    .close = cpu_close,
    .attn_score = cpu_attn_score,
    .attn_score_backward = cpu_attn_score_backward,
    .attn_forward = cpu_attn_forward,
    .attn_backward = cpu_attn_backward,
    .elu = cpu_elu,
    .elu_backward = cpu_elu_backward,
    .sparse_opt_step = cpu_sparse_opt_step,
    .copy_rows = cpu_copy_rows,
    .mem_available = cpu_mem_available,
    .scatter_rows = cpu_scatter_rows,
    .gemm_rows = cpu_gemm_rows,
    .gemm_pair = cpu_gemm_pair,
    .bias_act = cpu_bias_act,
    .bias_act_drop = cpu_bias_act_drop,
    .relu_drop_backward = cpu_relu_drop_backward,
    .sampler_prepare = gnn__cpu_sampler_prepare,
    .sampler_release = gnn__cpu_sampler_release,
    .sampler_resize = gnn__cpu_sampler_resize,
    .sample = gnn__cpu_sample,
    .map_host = cpu_map_host,
    .unmap_host = cpu_unmap_host,
    .gather_rows_cached = cpu_gather_rows_cached,
    .mem_peak = cpu_mem_peak,
};

int gnn__backend_cpu_init(gnn_backend_t *be, int as_gpu)
{
    be->ops = &cpu_ops;
    be->kind = GNN_BACKEND_CPU;
    be->host_memory = !as_gpu;
    if (as_gpu) {
        tracker_t *t = gnn_calloc(1, sizeof *t);
        if (!t || pthread_mutex_init(&t->lock, NULL) != 0) {
            gnn_free(t);
            return GNN_FAIL(GNN_ENOMEM, "cpu-as-gpu: buffer list");
        }
        be->impl = t;
    }
    be->device = -1;
    be->stream = NULL;
    snprintf(be->desc, sizeof be->desc, "%s (%d OpenMP threads)", as_gpu ? "cpu-as-gpu" : "cpu",
             omp_get_max_threads());
    return 0;
}
