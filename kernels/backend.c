/*
 * Dispatch layer of the backend interface (kernels/backend.h): opening a
 * backend by name, argument checks shared by every device, the prepared
 * graph, and aggregation through the registry's definitions. The
 * operations themselves are in the device tables (cpu/backend_cpu.c, and
 * the CUDA table when built).
 */
#include "kernels/backend_impl.h"

#include "kernels/adam_step.h"
#include "kernels/aggr_builtin.h"
#include "kernels/sample_steps.h"

#include "graph/base/alloc.h"
#include "graph/base/draw.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* ---- Opening -------------------------------------------------------------- */

/* Device number of "cuda" / "cuda:N" into *dev; 0 when name is not CUDA. */
static int parse_cuda_name(const char *name, int *dev)
{
    if (!strcmp(name, "cuda")) {
        *dev = 0;
        return 1;
    }
    if (strncmp(name, "cuda:", 5) || !name[5]) return 0;
    char *end;
    long d = strtol(name + 5, &end, 10);
    if (*end || d < 0 || d > 1023) return 0;
    *dev = (int)d;
    return 1;
}

static int open_cuda(gnn_backend_t *be, int dev)
{
#ifdef GNN_HAVE_CUDA_BACKEND
    return gnn__backend_cuda_init(be, dev);
#else
    (void)be;
    (void)dev;
    return GNN_FAIL(GNN_ENODEV, "backend cuda: this build has no CUDA support (rebuild with "
                                "the CUDA toolkit and -DGNN_CUDA=ON)");
#endif
}

int gnn_backend_open(const char *name, gnn_backend_t **out)
{
    int rc = 0, dev = 0;
    gnn_backend_t *be = NULL;
    GNN_CHECK(out, GNN_EINVAL, "backend: NULL output");
    *out = NULL;
    GNN_CHECK(name, GNN_EINVAL, "backend: NULL name");
    be = gnn_calloc(1, sizeof *be);
    GNN_CHECK(be, GNN_ENOMEM, "backend");
    if (!strcmp(name, "cpu") || !strcmp(name, "cpu-as-gpu")) {
        GNN_TRY(gnn__backend_cpu_init(be, strcmp(name, "cpu") != 0));
    } else if (parse_cuda_name(name, &dev)) {
        GNN_TRY(open_cuda(be, dev));
    } else if (!strcmp(name, "auto")) {
#ifdef GNN_HAVE_CUDA_BACKEND
        if (gnn__backend_cuda_init(be, 0) < 0) {
            memset(be, 0, sizeof *be);
            GNN_TRY(gnn__backend_cpu_init(be, 0));
        }
#else
        GNN_TRY(gnn__backend_cpu_init(be, 0));
#endif
    } else {
        rc = GNN_FAIL(GNN_EINVAL, "unknown device \"%s\" (expected cpu, cuda, cuda:N, auto or cpu-as-gpu)",
                      name);
        goto fail;
    }
    *out = be;
    return 0;
fail:
    gnn_free(be);
    return rc;
}

/* The backend whose capture rules this thread began (cpu-as-gpu), and
 * whether they are paused on it: held per thread, so that no other
 * thread (a sampler's) reads or changes them. */
static _Thread_local gnn_backend_t *t_rules_be;
static _Thread_local int t_rules_paused;

void gnn_backend_close(gnn_backend_t *be)
{
    if (!be) return;
    if (t_rules_be == be) t_rules_be = NULL; /* a later backend at its address is another */
    if (be->ops && be->ops->close) be->ops->close(be);
    gnn_free(be);
}

gnn_backend_kind_t gnn_backend_kind(const gnn_backend_t *be)
{
    return be->kind;
}

int gnn_be_host_memory(const gnn_backend_t *be)
{
    return be->host_memory;
}

const char *gnn_backend_describe(const gnn_backend_t *be)
{
    return be ? be->desc : "(none)";
}

int gnn_backend_device_count(void)
{
#ifdef GNN_HAVE_CUDA_BACKEND
    return gnn__backend_cuda_count();
#else
    return 0;
#endif
}

int gnn_be_device(const gnn_backend_t *be)
{
    return be && be->kind == GNN_BACKEND_CUDA ? be->device : -1;
}

void *gnn_be_stream(const gnn_backend_t *be)
{
    return be ? be->stream : NULL;
}

/* ---- SpMM implementation ------------------------------------------------- */

static const char *const spmm_impl_names[GNN_SPMM_COUNT_] = {"auto", "cusparse", "rowcache",
                                                             "balanced"};

const char *gnn_spmm_impl_name(gnn_spmm_impl_t impl)
{
    return (unsigned)impl < GNN_SPMM_COUNT_ ? spmm_impl_names[impl] : "?";
}

int gnn_spmm_impl_from_name(const char *name, gnn_spmm_impl_t *out)
{
    if (!name || !out) return GNN_FAIL(GNN_EINVAL, "gnn_spmm_impl_from_name: NULL argument");
    for (int i = 0; i < GNN_SPMM_COUNT_; i++)
        if (!strcmp(name, spmm_impl_names[i])) {
            *out = (gnn_spmm_impl_t)i;
            return 0;
        }
    return GNN_FAIL(GNN_EINVAL, "unknown SpMM \"%s\" (expected auto, cusparse, rowcache or balanced)",
                    name);
}

int gnn_be_set_spmm(gnn_backend_t *be, gnn_spmm_impl_t impl, int deterministic)
{
    if (!be) return GNN_FAIL(GNN_EINVAL, "gnn_be_set_spmm: NULL backend");
    if ((unsigned)impl >= GNN_SPMM_COUNT_)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_set_spmm: bad implementation %d", (int)impl);
    if (be->ops->set_spmm) return be->ops->set_spmm(be, impl, deterministic);
    if (impl != GNN_SPMM_AUTO)
        return GNN_FAIL(GNN_EUNSUPPORTED, "SpMM %s: only on a CUDA device (%s has one SpMM)",
                        gnn_spmm_impl_name(impl), be->desc);
    return 0;
}

int gnn_be_set_tf32(gnn_backend_t *be, int on)
{
    if (!be) return GNN_FAIL(GNN_EINVAL, "gnn_be_set_tf32: NULL backend");
    if (be->ops->set_tf32) return be->ops->set_tf32(be, on != 0);
    if (on)
        return GNN_FAIL(GNN_EUNSUPPORTED, "TF32 GEMMs: only on a CUDA device (not %s)", be->desc);
    return 0;
}

int gnn_be_spmm_choice(gnn_backend_t *be, const gnn_bgraph_t *g, int aggr, int64_t f, int backward,
                       gnn_spmm_impl_t *out)
{
    if (!be || !g || !out) return GNN_FAIL(GNN_EINVAL, "gnn_be_spmm_choice: NULL argument");
    if (aggr < 0 || aggr >= GNN_AGGR_COUNT_)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_spmm_choice: bad aggregator %d", aggr);
    *out = be->ops->spmm_choice ? be->ops->spmm_choice(be, g, (gnn_aggr_t)aggr, f, backward)
                                : GNN_SPMM_AUTO;
    return 0;
}

/* ---- Memory --------------------------------------------------------------- */

#define NEED(cond, fn)                                                                        \
    do {                                                                                      \
        if (!(cond)) return GNN_FAIL(GNN_EINVAL, "%s: NULL argument", fn);                    \
    } while (0)

/* cpu-as-gpu: a pointer argument that is not in one of its buffers is
 * refused, as a GPU would fault on it (the other backends keep no list). */
#define BUF(p, fn)                                                                           \
    do {                                                                                     \
        if ((p) && !gnn__backend_cpu_owns(be, (p)))                                          \
            return GNN_FAIL(GNN_EINVAL, "%s: %s is not a buffer of %s", fn, #p, be->desc);   \
    } while (0)

static int rules_on(const gnn_backend_t *be)
{
    return t_rules_be == be && !t_rules_paused;
}

/* Between gnn_be_capture_rules_begin and _end (cpu-as-gpu), on the thread
 * that began them: an operation that a GPU's capture refuses, the first
 * one noted. */
static void rule(gnn_backend_t *be, const char *what)
{
    if (rules_on(be) && !be->rules_broken[0])
        snprintf(be->rules_broken, sizeof be->rules_broken, "%s", what);
}

/* The same for ids a GPU checks on the device and reads the result back
 * of, unless vouched for (the CUDA backend's first_bad_row). */
static void rule_ids(gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound,
                     const char *what)
{
    if (rules_on(be) && ids && n > 0 && !gnn__be_trusted(be, ids, n, bound)) rule(be, what);
}

int gnn_be_alloc(gnn_backend_t *be, size_t bytes, void **out)
{
    NEED(be && out, "gnn_be_alloc");
    *out = NULL;
    rule(be, "gnn_be_alloc: an allocation");
    return be->ops->alloc(be, bytes, out);
}

/* gnn_be_free_generation's count. */
static uint64_t free_generation;

void gnn__be_note_free(void) { __atomic_add_fetch(&free_generation, 1, __ATOMIC_RELAXED); }

uint64_t gnn_be_free_generation(void) { return __atomic_load_n(&free_generation, __ATOMIC_RELAXED); }

void gnn_be_free(gnn_backend_t *be, void *p)
{
    if (be && p) {
        for (int i = 0; i < GNN__BE_TRUST_BUFFERS; i++) /* its ids no longer vouched for */
            if (be->trust_buf[i].ids == p) be->trust_buf[i].ids = NULL;
        be->ops->free(be, p);
        gnn__be_note_free();
    }
}

int gnn_be_host_alloc(gnn_backend_t *be, size_t bytes, void **out)
{
    NEED(be && out, "gnn_be_host_alloc");
    rule(be, "gnn_be_host_alloc: an allocation of host memory");
    if (be->ops->host_alloc) return be->ops->host_alloc(be, bytes, out);
    *out = gnn_malloc(bytes ? bytes : 1);
    return *out ? 0 : GNN_FAIL(GNN_ENOMEM, "%zu bytes of host memory", bytes);
}

void gnn_be_host_free(gnn_backend_t *be, void *p)
{
    if (!p) return;
    if (be) rule(be, "gnn_be_host_free: a free of host memory (a wait for the device)");
    if (be && be->ops->host_free)
        be->ops->host_free(be, p);
    else
        gnn_free(p);
}

int gnn_be_map_host(gnn_backend_t *be, void *host, size_t bytes, void **dev)
{
    NEED(be && host && dev, "gnn_be_map_host");
    *dev = NULL;
    rule(be, "gnn_be_map_host: host memory mapped");
    if (!be->ops->map_host)
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_map_host: not available on %s", be->desc);
    return be->ops->map_host(be, host, bytes, dev);
}

void gnn_be_unmap_host(gnn_backend_t *be, void *host)
{
    if (!be || !host) return;
    rule(be, "gnn_be_unmap_host: host memory unmapped (a wait for the device)");
    if (be->ops->unmap_host) be->ops->unmap_host(be, host);
}

int gnn_be_upload(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes) return 0;
    NEED(be && dst && src, "gnn_be_upload");
    BUF(dst, "gnn_be_upload");
    rule(be, "gnn_be_upload: a copy from host memory");
    return be->ops->upload(be, dst, src, bytes);
}

int gnn_be_upload_take(gnn_backend_t *be, void **host, size_t bytes, void **out)
{
    NEED(be && host && out, "gnn_be_upload_take");
    *out = NULL;
    if (be->host_memory) {
        if (!*host) return gnn_be_alloc(be, bytes, out);
        *out = *host;
        *host = NULL;
        return 0;
    }
    int rc = gnn_be_alloc(be, bytes, out);
    if (rc == 0 && bytes) rc = gnn_be_upload(be, *out, *host, bytes);
    if (rc == 0) rc = gnn_be_sync(be); /* the copy has read *host before it goes */
    if (rc < 0) {
        gnn_be_free(be, *out);
        *out = NULL;
        return rc;
    }
    gnn_free(*host);
    *host = NULL;
    return 0;
}

int gnn_be_download(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes) return be ? gnn_be_sync(be) : 0;
    NEED(be && dst && src, "gnn_be_download");
    rule(be, "gnn_be_download: a copy to host memory, a wait for the device");
    BUF(src, "gnn_be_download");
    return be->ops->download(be, dst, src, bytes);
}

int gnn_be_copy(gnn_backend_t *be, void *dst, const void *src, size_t bytes)
{
    if (!bytes) return 0;
    NEED(be && dst && src, "gnn_be_copy");
    BUF(dst, "gnn_be_copy");
    BUF(src, "gnn_be_copy");
    return be->ops->copy(be, dst, src, bytes);
}

int gnn_be_zero(gnn_backend_t *be, void *dst, size_t bytes)
{
    if (!bytes) return 0;
    NEED(be && dst, "gnn_be_zero");
    BUF(dst, "gnn_be_zero");
    return be->ops->zero(be, dst, bytes);
}

int gnn_be_sync(gnn_backend_t *be)
{
    NEED(be, "gnn_be_sync");
    rule(be, "gnn_be_sync: a wait for the device");
    return be->ops->sync(be);
}

/* ---- Dense ---------------------------------------------------------------- */

int gnn_be_gemm(gnn_backend_t *be, int trans_a, int trans_b, int64_t m, int64_t n, int64_t k,
                float alpha, const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
                float *c, int64_t ldc)
{
    NEED(be, "gnn_be_gemm");
    BUF(a, "gnn_be_gemm");
    BUF(b, "gnn_be_gemm");
    BUF(c, "gnn_be_gemm");
    return be->ops->gemm(be, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

int gnn_be_has_gemm_rows(const gnn_backend_t *be)
{
    return be && be->host_memory && be->ops->gemm_rows;
}

int gnn_be_gemm_rows(gnn_backend_t *be, int trans_a, int64_t m, int64_t n, int64_t k,
                     float alpha, const float *a, int64_t lda, const int64_t *rows,
                     const float *b, int64_t ldb, float beta, float *c, int64_t ldc)
{
    NEED(be, "gnn_be_gemm_rows");
    if (!gnn_be_has_gemm_rows(be))
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_gemm_rows: not on %s", be->desc);
    return be->ops->gemm_rows(be, trans_a, m, n, k, alpha, a, lda, rows, b, ldb, beta, c, ldc);
}

/* One product of gnn_be_gemm_pair's two. */
static int pair_one(gnn_backend_t *be, int ta, int64_t m, int64_t n, int64_t k, const float *a,
                    int64_t lda, const int64_t *rows, const float *b, float *c)
{
    if (rows) return gnn_be_gemm_rows(be, ta, m, n, k, 1.0f, a, lda, rows, b, n, 0.0f, c, n);
    return gnn_be_gemm(be, ta, 0, m, n, k, 1.0f, a, lda, b, n, 0.0f, c, n);
}

int gnn_be_gemm_pair(gnn_backend_t *be, int trans_a, int64_t m, int64_t m2, int64_t k,
                     const float *a, int64_t lda, const int64_t *rows, int64_t n1,
                     const float *b1, float *c1, int64_t n2, const float *b2, float *c2)
{
    NEED(be, "gnn_be_gemm_pair");
    if (!rows) BUF(a, "gnn_be_gemm_pair");
    BUF(b1, "gnn_be_gemm_pair");
    BUF(c1, "gnn_be_gemm_pair");
    BUF(b2, "gnn_be_gemm_pair");
    BUF(c2, "gnn_be_gemm_pair");
    if (rows && !gnn_be_has_gemm_rows(be))
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_gemm_pair: no rows by index on %s", be->desc);
    if (be->ops->gemm_pair)
        return be->ops->gemm_pair(be, trans_a, m, m2, k, a, lda, rows, n1, b1, c1, n2, b2, c2);
    int rc = pair_one(be, trans_a, m, n1, k, a, lda, rows, b1, c1);
    if (rc < 0) return rc;
    return pair_one(be, trans_a, trans_a ? m : m2, n2, trans_a ? m2 : k, a, lda, rows, b2, c2);
}

int gnn_be_bias_add(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias)
{
    NEED(be, "gnn_be_bias_add");
    BUF(y, "gnn_be_bias_add");
    BUF(bias, "gnn_be_bias_add");
    return be->ops->bias_add(be, rows, cols, y, bias);
}

int gnn_be_bias_act(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias,
                    int act)
{
    NEED(be, "gnn_be_bias_act");
    BUF(y, "gnn_be_bias_act");
    BUF(bias, "gnn_be_bias_act");
    if (act != GNN_ACT_NONE && act != GNN_ACT_RELU && act != GNN_ACT_ELU)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_bias_act: activation %d (0 none, 1 relu, 2 elu)", act);
    if (be->ops->bias_act) return be->ops->bias_act(be, rows, cols, y, bias, act);
    int rc = be->ops->bias_add(be, rows, cols, y, bias);
    if (rc < 0 || act == GNN_ACT_NONE) return rc;
    return act == GNN_ACT_RELU ? gnn_be_relu(be, rows * cols, y, y)
                               : gnn_be_elu(be, rows * cols, y, y);
}

int gnn_be_bias_grad(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy, float *dbias)
{
    NEED(be, "gnn_be_bias_grad");
    BUF(dy, "gnn_be_bias_grad");
    BUF(dbias, "gnn_be_bias_grad");
    return be->ops->bias_grad(be, rows, cols, dy, dbias);
}

int gnn_be_relu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    NEED(be, "gnn_be_relu");
    BUF(x, "gnn_be_relu");
    BUF(y, "gnn_be_relu");
    return be->ops->relu(be, n, x, y);
}

int gnn_be_bias_act_drop(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                         const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                         const int64_t *row_id)
{
    NEED(be, "gnn_be_bias_act_drop");
    BUF(y, "gnn_be_bias_act_drop");
    BUF(bias, "gnn_be_bias_act_drop");
    if (row_id) BUF(row_id, "gnn_be_bias_act_drop");
    return be->ops->bias_act_drop(be, rows, cols, y, bias, act, p, seed, offset, row_id);
}

int gnn_be_relu_drop_backward(gnn_backend_t *be, int64_t n, float p, const float *y,
                              const float *dy, float *dx)
{
    NEED(be, "gnn_be_relu_drop_backward");
    BUF(y, "gnn_be_relu_drop_backward");
    BUF(dy, "gnn_be_relu_drop_backward");
    BUF(dx, "gnn_be_relu_drop_backward");
    return be->ops->relu_drop_backward(be, n, p, y, dy, dx);
}

int gnn_be_relu_backward(gnn_backend_t *be, int64_t n, const float *xy, const float *dy, float *dx)
{
    NEED(be, "gnn_be_relu_backward");
    BUF(xy, "gnn_be_relu_backward");
    BUF(dy, "gnn_be_relu_backward");
    BUF(dx, "gnn_be_relu_backward");
    return be->ops->relu_backward(be, n, xy, dy, dx);
}

int gnn_be_dropout(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                   const float *x, float *y)
{
    NEED(be, "gnn_be_dropout");
    BUF(x, "gnn_be_dropout");
    BUF(y, "gnn_be_dropout");
    return be->ops->dropout(be, n, p, seed, offset, x, y);
}

int gnn_be_dropout_backward(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                            const float *dy, float *dx)
{
    NEED(be, "gnn_be_dropout_backward");
    BUF(dy, "gnn_be_dropout_backward");
    BUF(dx, "gnn_be_dropout_backward");
    return be->ops->dropout_backward(be, n, p, seed, offset, dy, dx);
}

int gnn_be_dropout_rows(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id, float p,
                        uint64_t seed, uint64_t offset, const float *x, float *y)
{
    NEED(be, "gnn_be_dropout_rows");
    if (!be->ops->dropout_rows)
        return GNN_FAIL(GNN_EUNSUPPORTED, "dropout by row ids: not on this backend (%s)",
                        be->desc);
    BUF(row_id, "gnn_be_dropout_rows");
    BUF(x, "gnn_be_dropout_rows");
    BUF(y, "gnn_be_dropout_rows");
    rule_ids(be, row_id, rows, INT64_MAX, "gnn_be_dropout_rows: its row ids checked on the device");
    return be->ops->dropout_rows(be, rows, f, row_id, p, seed, offset, x, y);
}

int gnn_be_axpby(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta, float *y)
{
    NEED(be, "gnn_be_axpby");
    BUF(x, "gnn_be_axpby");
    BUF(y, "gnn_be_axpby");
    return be->ops->axpby(be, n, alpha, x, beta, y);
}

int gnn_be_gather_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t src_rows,
                       const int64_t *idx, float *dst)
{
    NEED(be, "gnn_be_gather_rows");
    BUF(src, "gnn_be_gather_rows");
    BUF(idx, "gnn_be_gather_rows");
    BUF(dst, "gnn_be_gather_rows");
    rule_ids(be, idx, n, src_rows, "gnn_be_gather_rows: its ids checked on the device");
    return be->ops->gather_rows(be, n, f, src, src_rows, idx, dst);
}

int gnn_be_gather_rows_cached(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                              const int32_t *slot, const float *src, const int64_t *idx,
                              float *dst)
{
    NEED(be && slot && src && (idx || n == 0), "gnn_be_gather_rows_cached");
    BUF(cache, "gnn_be_gather_rows_cached");
    BUF(slot, "gnn_be_gather_rows_cached");
    BUF(src, "gnn_be_gather_rows_cached");
    BUF(idx, "gnn_be_gather_rows_cached");
    BUF(dst, "gnn_be_gather_rows_cached");
    return be->ops->gather_rows_cached(be, n, f, cache, slot, src, idx, dst);
}

int gnn_be_softmax_xent(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                        const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                        float *dlogits)
{
    NEED(be && loss, "gnn_be_softmax_xent");
    BUF(logits, "gnn_be_softmax_xent");
    BUF(labels, "gnn_be_softmax_xent");
    BUF(idx, "gnn_be_softmax_xent");
    BUF(dlogits, "gnn_be_softmax_xent");
    rule(be, "gnn_be_softmax_xent: the loss read back");
    return be->ops->softmax_xent(be, rows, classes, logits, labels, idx, nidx, loss, dlogits);
}

int gnn_be_softmax_xent_async(gnn_backend_t *be, int64_t rows, int64_t classes,
                              const float *logits, const int64_t *labels, const int64_t *idx,
                              int64_t nidx, double *loss_dev, float *dlogits)
{
    NEED(be && loss_dev, "gnn_be_softmax_xent_async");
    BUF(logits, "gnn_be_softmax_xent_async");
    BUF(labels, "gnn_be_softmax_xent_async");
    BUF(idx, "gnn_be_softmax_xent_async");
    BUF(loss_dev, "gnn_be_softmax_xent_async");
    BUF(dlogits, "gnn_be_softmax_xent_async");
    if (be->ops->softmax_xent_async)
        return be->ops->softmax_xent_async(be, rows, classes, logits, labels, idx, nidx, loss_dev,
                                           dlogits);
    /* Host memory: the checked call, its loss stored where asked. */
    double loss = 0.0;
    int rc = be->ops->softmax_xent(be, rows, classes, logits, labels, idx, nidx, &loss, dlogits);
    if (rc == 0) *loss_dev = loss;
    return rc;
}

int gnn_be_adam(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                const gnn_adam_opts_t *o, int64_t step)
{
    NEED(be && o, "gnn_be_adam");
    BUF(w, "gnn_be_adam");
    BUF(g, "gnn_be_adam");
    BUF(m, "gnn_be_adam");
    BUF(v, "gnn_be_adam");
    return be->ops->adam(be, n, w, g, m, v, o, step);
}

int gnn_be_count_correct(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                         const int64_t *labels, const int64_t *idx, int64_t nidx, int64_t *correct)
{
    NEED(be && correct, "gnn_be_count_correct");
    BUF(logits, "gnn_be_count_correct");
    BUF(labels, "gnn_be_count_correct");
    BUF(idx, "gnn_be_count_correct");
    rule(be, "gnn_be_count_correct: the count read back");
    return be->ops->count_correct(be, rows, classes, logits, labels, idx, nidx, correct);
}

int gnn_be_argmax_rows(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                       int64_t *out)
{
    NEED(be, "gnn_be_argmax_rows");
    BUF(x, "gnn_be_argmax_rows");
    BUF(out, "gnn_be_argmax_rows");
    return be->ops->argmax_rows(be, rows, classes, x, out);
}

/* ---- Graphs --------------------------------------------------------------- */

static void attn_edges_free(gnn_backend_t *be, gnn_be_edges_t *e);

void gnn_be_graph_free(gnn_bgraph_t *g)
{
    if (!g) return;
    if (g->be && g->be->ops->graph_release) g->be->ops->graph_release(g->be, g);
    gnn_attn_graph_free(g->attn[0]);
    gnn_attn_graph_free(g->attn[1]);
    attn_edges_free(g->be, g->edges[0]);
    attn_edges_free(g->be, g->edges[1]);
    gnn_spmm_graph_free(g->sg);
    if (g->user_free) g->user_free(g->user); /* last: it may hold the borrowed CSR */
    gnn_free(g);
}

void gnn_be_graph_attach(gnn_bgraph_t *g, void *user, void (*user_free)(void *))
{
    if (g->user_free) g->user_free(g->user);
    g->user = user;
    g->user_free = user_free;
}

void *gnn_bgraph_attached(const gnn_bgraph_t *g) { return g ? g->user : NULL; }

int gnn_be_graph_create(gnn_backend_t *be, const gnn_csr_t *csr, gnn_bgraph_t **out)
{
    return gnn_be_graph_create_src_deg(be, csr, NULL, out);
}

int gnn_be_graph_create_src_deg(gnn_backend_t *be, const gnn_csr_t *csr, const int64_t *src_deg,
                                gnn_bgraph_t **out)
{
    int rc = 0;
    gnn_bgraph_t *g = NULL;
    GNN_CHECK(out, GNN_EINVAL, "gnn_be_graph_create: NULL output");
    *out = NULL;
    GNN_CHECK(be, GNN_EINVAL, "gnn_be_graph_create: NULL argument");
    GNN_TRY(gnn_be_graph_stage(csr, src_deg, -1, &g));
    GNN_TRY(gnn_be_graph_place(be, g));
    *out = g;
    return 0;
fail:
    gnn_be_graph_free(g);
    return rc;
}

int gnn_be_graph_stage(const gnn_csr_t *csr, const int64_t *src_deg, int attn_layout,
                       gnn_bgraph_t **out)
{
    int rc = 0;
    gnn_bgraph_t *g = NULL;
    GNN_CHECK(out, GNN_EINVAL, "gnn_be_graph_create: NULL output");
    *out = NULL;
    GNN_CHECK(csr, GNN_EINVAL, "gnn_be_graph_create: NULL argument");
    GNN_CHECK(attn_layout >= -1 && attn_layout <= 1, GNN_EINVAL,
              "gnn_be_graph_stage: attention layout %d (expected -1, 0 or 1)", attn_layout);
    g = gnn_calloc(1, sizeof *g);
    GNN_CHECK(g, GNN_ENOMEM, "prepared graph");
    GNN_TRY(gnn_spmm_graph_create(csr, &g->sg));
    const gnn_spmm_graph_t *sg = g->sg;
    if (src_deg)
        for (gnn_vid_t u = 0; u < sg->n_src; u++) {
            GNN_CHECK(src_deg[u] >= 0, GNN_EINVAL,
                      "gnn_be_graph_create: source %" GNN_PRIvid " has degree %" PRId64, u,
                      src_deg[u]);
            sg->gcn_src[u] = (float)(1.0 / sqrt((double)src_deg[u] + 1.0));
        }
    g->host = (gnn_aggr_graph_t){
        .n_dst = sg->n_dst,
        .n_src = sg->n_src,
        .nnz = sg->nnz,
        .indptr = csr->indptr,
        .indices = csr->indices,
        .weights = csr->weights,
        .t_indptr = sg->t.indptr,
        .t_indices = sg->t.indices,
        .t_weights = sg->t.weights,
    };
    if (attn_layout >= 0) GNN_TRY(gnn_attn_graph_create(g->sg, attn_layout, &g->attn[attn_layout]));
    *out = g;
    return 0;
fail:
    gnn_be_graph_free(g);
    return rc;
}

int gnn_be_graph_place(gnn_backend_t *be, gnn_bgraph_t *g)
{
    if (!be || !g) return GNN_FAIL(GNN_EINVAL, "gnn_be_graph_place: NULL argument");
    if (g->be == be) return 0;
    if (g->be)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_graph_place: the graph belongs to another backend");
    int rc = be->ops->graph_prepare(be, g);
    if (rc < 0) return rc;
    g->be = be;
    /* On a device, attention slots staged with the graph go there now, not
     * in the step that first reads them (an allocation and a copy that
     * would wait for the work queued before them). */
    for (int k = 0; k < 2 && !be->host_memory; k++) {
        const gnn_be_edges_t *e = NULL;
        if (g->attn[k] && (rc = gnn__be_attn_edges(be, g, g->attn[k], k, &e)) < 0) return rc;
    }
    return 0;
}

/* gnn_be_graph_create_batch, on sampler s's work queue when s is given
 * (fn: the caller's name for messages). */
static int attn_layout(gnn_backend_t *be, gnn_bgraph_t *g, int k, const char *fn,
                       const gnn_attn_graph_t **a);

static int graph_create_batch(gnn_backend_t *be, gnn_bsampler_t *s, const gnn_bbatch_t *b, int l,
                              int attn, gnn_bgraph_t **out, const char *fn)
{
    int rc = 0;
    gnn_bgraph_t *g = NULL;
    gnn_csr_t *view = NULL;
    GNN_CHECK(out, GNN_EINVAL, "%s: NULL output", fn);
    *out = NULL;
    GNN_CHECK(be && b, GNN_EINVAL, "%s: NULL argument", fn);
    GNN_CHECK(b->be == be, GNN_EINVAL, "%s: a batch of another backend", fn);
    GNN_CHECK(l >= 0 && l < b->layers, GNN_EINVAL, "%s: block %d of a batch of %d", fn, l,
              b->layers);
    GNN_CHECK(attn >= -1 && attn <= 1, GNN_EINVAL, "%s: attention layout %d (expected -1, 0 or 1)",
              fn, attn);
    if (!be->ops->graph_prepare_dev) { /* arrays the host reads: the usual way */
        view = gnn_calloc(1, sizeof *view);
        GNN_CHECK(view, GNN_ENOMEM, "prepared graph");
        *view = (gnn_csr_t){.n_rows = b->n_dst[l],
                            .n_cols = b->n_src[l],
                            .nnz = b->nnz[l],
                            .indptr = b->indptr[l],
                            .indices = b->indices[l],
                            .weights = NULL,
                            .flags = b->flags};
        /* Under a capture's rules (cpu-as-gpu), not noted: a GPU makes the
         * block on the device from the stream-ordered pool (below), where
         * this emulation allocates and copies; but made on the backend's
         * stream (no sampler given), it waits for that stream once, to
         * read the block's longest rows. */
        if (!s) rule(be, "a batch's block made on the backend's stream (a wait for it)");
        t_rules_paused++;
        rc = gnn_be_graph_stage(view, NULL, attn, &g);
        if (rc == 0) gnn_be_graph_attach(g, view, gnn_free);
        if (rc == 0) rc = gnn_be_graph_place(be, g);
        t_rules_paused--;
        if (rc < 0) goto fail;
        *out = g;
        return 0;
    }
    g = gnn_calloc(1, sizeof *g);
    GNN_CHECK(g, GNN_ENOMEM, "prepared graph");
    g->host = (gnn_aggr_graph_t){.n_dst = b->n_dst[l], .n_src = b->n_src[l], .nnz = b->nnz[l]};
    if (s && be->ops->sampler_graph_prepare_dev)
        GNN_TRY(be->ops->sampler_graph_prepare_dev(be, s, g, b->indptr[l], b->indices[l], attn));
    else
        GNN_TRY(be->ops->graph_prepare_dev(be, g, b->indptr[l], b->indices[l], attn));
    g->be = be;
    if (attn >= 0) { /* made with the graph: only its record here */
        const gnn_attn_graph_t *a;
        GNN_TRY(attn_layout(be, g, attn, fn, &a));
    }
    *out = g;
    return 0;
fail:
    if (!g || !gnn_bgraph_attached(g)) gnn_free(view);
    gnn_be_graph_free(g);
    return rc;
}

int gnn_be_graph_create_batch(gnn_backend_t *be, const gnn_bbatch_t *b, int l, int attn_layout,
                              gnn_bgraph_t **out)
{
    return graph_create_batch(be, NULL, b, l, attn_layout, out, "gnn_be_graph_create_batch");
}

int gnn_be_sampler_graph_create(gnn_bsampler_t *s, const gnn_bbatch_t *b, int l, int attn_layout,
                                gnn_bgraph_t **out)
{
    if (!s) {
        if (out) *out = NULL;
        return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_graph_create: NULL sampler");
    }
    return graph_create_batch(s->be, s, b, l, attn_layout, out, "gnn_be_sampler_graph_create");
}

int64_t gnn_bgraph_n_dst(const gnn_bgraph_t *g)
{
    return g->host.n_dst;
}

int64_t gnn_bgraph_n_src(const gnn_bgraph_t *g)
{
    return g->host.n_src;
}

int64_t gnn_bgraph_nnz(const gnn_bgraph_t *g)
{
    return g->host.nnz;
}

/* ---- Aggregation ---------------------------------------------------------- */

/* Workspace bytes of aggregator def at width f. */
static size_t aggr_ws(const gnn_bgraph_t *g, const gnn_aggr_def_t *def, int64_t f)
{
    gnn_aggr_dims_t d = {1, f};
    if (def->workspace_bytes2) return def->workspace_bytes2(&g->host, NULL, &d, def->user);
    return def->workspace_bytes ? def->workspace_bytes(&g->host, f, def->user) : 0;
}

int gnn_be_aggr_workspace(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          int64_t f, size_t *bytes)
{
    NEED(be && g && def && bytes, "gnn_be_aggr_workspace");
    if (f < 1) return GNN_FAIL(GNN_EINVAL, "aggregator %s: bad feature width %" PRId64, def->name, f);
    *bytes = aggr_ws(g, def, f);
    return 0;
}

/* Run def forward (dy == NULL) or backward on g. */
static int aggr_run(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                    int64_t f, const float *params, const float *x, float *y, const float *dy,
                    float *dx, float *dparams, void *ws, size_t ws_bytes, int backward)
{
    const char *dir = backward ? "backward" : "forward";
    NEED(be && g && def, "gnn_be_aggr");
    if (g->be != be)
        return GNN_FAIL(GNN_EINVAL, "aggregator %s %s: graph %s", def->name, dir,
                        g->be ? "prepared on another backend" : "staged, not placed");
    if (f < 1)
        return GNN_FAIL(GNN_EINVAL, "aggregator %s %s: bad feature width %" PRId64, def->name,
                        dir, f);
    if (gnn_aggr_is_attention(def))
        return GNN_FAIL(GNN_EINVAL, "aggregator %s %s: %s is an attention function", def->name,
                        dir, def->name);
    if (def->params && (!params || (backward && !dparams)))
        return GNN_FAIL(GNN_EINVAL, "aggregator %s %s: it has learnable parameters, none given",
                        def->name, dir);
    size_t need = aggr_ws(g, def, f);
    if (need > 0 && (!ws || ws_bytes < need))
        return GNN_FAIL(GNN_EINVAL, "aggregator %s %s: workspace of %zu bytes, needs %zu",
                        def->name, dir, ws ? ws_bytes : 0, need);
    char msg[256] = "";
    gnn_aggr_call_t call = {
        .graph = &g->dev,
        .f = f,
        .workspace = need ? ws : NULL,
        .workspace_size = need ? ws_bytes : 0,
        .user = def->user,
        .msg = msg,
        .msg_size = sizeof msg,
        .host_private = g->sg,
        .heads = 1,
        .params = def->params ? params : NULL,
        .dparams = def->params ? dparams : NULL,
    };
    BUF(call.params, "gnn_be_aggr");
    BUF(call.dparams, "gnn_be_aggr");
    be->ops->aggr_call(be, g, &call);
    int rc;
    if (backward) {
        gnn_aggr_backward_fn fn = be->ops->aggr_backward(def);
        if (!fn)
            return GNN_FAIL(GNN_EUNSUPPORTED, "aggregator %s has no %s backward", def->name,
                            be->kind == GNN_BACKEND_CUDA ? "CUDA" : "CPU");
        if (!x || !y || !dy || !dx)
            return GNN_FAIL(GNN_EINVAL, "aggregator %s backward: NULL argument", def->name);
        BUF(x, "gnn_be_aggr_backward");
        BUF(y, "gnn_be_aggr_backward");
        BUF(dy, "gnn_be_aggr_backward");
        BUF(dx, "gnn_be_aggr_backward");
        BUF(call.workspace, "gnn_be_aggr_backward");
        rc = fn(&call, x, y, dy, dx);
    } else {
        gnn_aggr_forward_fn fn = be->ops->aggr_forward(def);
        if (!fn)
            return GNN_FAIL(GNN_EUNSUPPORTED, "aggregator %s has no %s forward", def->name,
                            be->kind == GNN_BACKEND_CUDA ? "CUDA" : "CPU");
        if (!x || !y) return GNN_FAIL(GNN_EINVAL, "aggregator %s forward: NULL argument", def->name);
        BUF(x, "gnn_be_aggr_forward");
        BUF(y, "gnn_be_aggr_forward");
        BUF(call.workspace, "gnn_be_aggr_forward");
        rc = fn(&call, x, y);
    }
    if (rc == 0) return 0;
    /* The built-ins fail with a GNN_E code and the message recorded; any
     * value from a plug-in is its own and becomes GNN_EPLUGIN. */
    if (gnn__aggr_builtin_owns(def) && rc < 0 && gnn_error_code() == rc) return rc;
    msg[sizeof msg - 1] = '\0';
    if (msg[0]) return GNN_FAIL(GNN_EPLUGIN, "aggregator %s %s: %s", def->name, dir, msg);
    return GNN_FAIL(GNN_EPLUGIN, "aggregator %s %s failed (code %d) without a message",
                    def->name, dir, rc);
}

int gnn_be_aggr_forward(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                        int64_t f, const float *x, float *y, void *ws, size_t ws_bytes)
{
    return aggr_run(be, g, def, f, NULL, x, y, NULL, NULL, NULL, ws, ws_bytes, 0);
}

int gnn_be_aggr_backward(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                         int64_t f, const float *x, const float *y, const float *dy, float *dx,
                         void *ws, size_t ws_bytes)
{
    return aggr_run(be, g, def, f, NULL, x, (float *)y, dy, dx, NULL, ws, ws_bytes, 1);
}

int gnn_be_aggr_forward_p(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          int64_t f, const float *params, const float *x, float *y, void *ws,
                          size_t ws_bytes)
{
    return aggr_run(be, g, def, f, params, x, y, NULL, NULL, NULL, ws, ws_bytes, 0);
}

int gnn_be_aggr_backward_p(gnn_backend_t *be, const gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                           int64_t f, const float *params, const float *x, const float *y,
                           const float *dy, float *dx, float *dparams, void *ws, size_t ws_bytes)
{
    return aggr_run(be, g, def, f, params, x, (float *)y, dy, dx, dparams, ws, ws_bytes, 1);
}

/* ---- Sparse input features ------------------------------------------------- */

void gnn_be_sparse_free(gnn_bsparse_t *s)
{
    if (!s) return;
    if (s->be && s->be->ops->sparse_release) s->be->ops->sparse_release(s->be, s);
    gnn_spfeat_free(s->host);
    gnn_free(s);
}

int gnn_be_sparse_create(gnn_backend_t *be, const gnn_csr_t *a, gnn_bsparse_t **out)
{
    int rc = 0;
    gnn_spfeat_t *h = NULL;
    GNN_CHECK(out, GNN_EINVAL, "gnn_be_sparse_create: NULL output");
    *out = NULL;
    GNN_CHECK(be && a, GNN_EINVAL, "gnn_be_sparse_create: NULL argument");
    GNN_TRY(gnn_spfeat_create(a, &h));
    return gnn_be_sparse_adopt(be, h, out);
fail:
    return rc;
}

int gnn_be_sparse_adopt(gnn_backend_t *be, gnn_spfeat_t *host, gnn_bsparse_t **out)
{
    int rc = 0;
    gnn_bsparse_t *s = NULL;
    if (!out) {
        gnn_spfeat_free(host);
        return GNN_FAIL(GNN_EINVAL, "gnn_be_sparse_adopt: NULL output");
    }
    *out = NULL;
    GNN_CHECK(be && host, GNN_EINVAL, "gnn_be_sparse_adopt: NULL argument");
    s = gnn_calloc(1, sizeof *s);
    GNN_CHECK(s, GNN_ENOMEM, "sparse matrix");
    s->host = host;
    host = NULL;
    GNN_TRY(be->ops->sparse_prepare(be, s));
    s->be = be;
    *out = s;
    return 0;
fail:
    gnn_spfeat_free(host);
    gnn_be_sparse_free(s);
    return rc;
}

int64_t gnn_bsparse_rows(const gnn_bsparse_t *s) { return s->host->a->n_rows; }
int64_t gnn_bsparse_cols(const gnn_bsparse_t *s) { return s->host->a->n_cols; }
int64_t gnn_bsparse_nnz(const gnn_bsparse_t *s) { return s->host->a->nnz; }

static int sparse_check(gnn_backend_t *be, const gnn_bsparse_t *s, const char *fn)
{
    NEED(be && s, fn);
    if (s->be != be) return GNN_FAIL(GNN_EINVAL, "%s: matrix prepared on another backend", fn);
    return 0;
}

int gnn_be_sparse_dropout(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                          uint64_t offset, const int64_t *row_id, float *vals)
{
    int rc = sparse_check(be, s, "gnn_be_sparse_dropout");
    if (rc < 0) return rc;
    BUF(vals, "gnn_be_sparse_dropout");
    return be->ops->sparse_dropout(be, s, p, seed, offset, row_id, vals);
}

/* n rows of s: [0, rows]. */
static int sparse_rows(const gnn_bsparse_t *s, int64_t n, const char *fn)
{
    if (n < 0 || n > gnn_bsparse_rows(s))
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " rows of a %" PRId64 "-row matrix", fn, n,
                        gnn_bsparse_rows(s));
    return 0;
}

int gnn_be_sparse_mm(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                     const float *w, int64_t f, float *t)
{
    int rc = sparse_check(be, s, "gnn_be_sparse_mm");
    if (rc < 0 || (rc = sparse_rows(s, n, "gnn_be_sparse_mm")) < 0) return rc;
    BUF(vals, "gnn_be_sparse_mm");
    BUF(w, "gnn_be_sparse_mm");
    BUF(t, "gnn_be_sparse_mm");
    return be->ops->sparse_mm(be, s, vals, n, w, f, t);
}

int gnn_be_sparse_mm_t(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                       const float *dt, int64_t f, float *dw)
{
    int rc = sparse_check(be, s, "gnn_be_sparse_mm_t");
    if (rc < 0 || (rc = sparse_rows(s, n, "gnn_be_sparse_mm_t")) < 0) return rc;
    BUF(vals, "gnn_be_sparse_mm_t");
    BUF(dt, "gnn_be_sparse_mm_t");
    BUF(dw, "gnn_be_sparse_mm_t");
    return be->ops->sparse_mm_t(be, s, vals, n, dt, f, dw);
}

/* ---- Graph attention ------------------------------------------------------- */

int64_t gnn_be_attn_slots(const gnn_bgraph_t *g, int self_loop)
{
    return g ? g->host.nnz + (self_loop ? g->host.n_dst : 0) : 0;
}

/* The op, and g's slot layout for o (prepared on first use). */
static int attn_prep(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_opts_t *o, void *op,
                     const char *fn, const gnn_attn_graph_t **a)
{
    NEED(be && g && o, fn);
    if (!op)
        return GNN_FAIL(GNN_EUNSUPPORTED, "%s: graph attention is not available on %s", fn,
                        be->desc);
    if (g->be != be)
        return GNN_FAIL(GNN_EINVAL, "%s: the graph %s", fn,
                        g->be ? "belongs to another backend" : "is staged, not placed");
    return attn_layout(be, g, o->self_loop != 0, fn, a);
}

/*
 * g's slot layout k (0: without, 1: with self loops), made on first use
 * and kept: on the host from g's host preparation, or for a graph made on
 * the device by the backend there (attn_edges_dev), which g->edges[k]
 * then holds, with a record of the layout in g->attn[k] (counts only).
 */
static int attn_layout(gnn_backend_t *be, gnn_bgraph_t *g, int k, const char *fn,
                       const gnn_attn_graph_t **a)
{
    int rc = 0;
    gnn_attn_graph_t *rec = NULL;
    gnn_be_edges_t *e = NULL;
    if (!g->attn[k] && g->sg) GNN_TRY(gnn_attn_graph_create(g->sg, k, &g->attn[k]));
    if (!g->attn[k]) {
        GNN_CHECK(be->ops->attn_edges_dev, GNN_EUNSUPPORTED,
                  "%s: no attention on a graph made on the device of %s", fn, be->desc);
        rec = gnn_calloc(1, sizeof *rec);
        e = gnn_calloc(1, sizeof *e);
        GNN_CHECK(rec && e, GNN_ENOMEM, "attention slots");
        GNN_TRY(be->ops->attn_edges_dev(be, g, k, &e->dev));
        e->host = (gnn_aggr_edges_t){.n_dst = e->dev.n_dst, .n_src = e->dev.n_src,
                                     .slots = e->dev.slots};
        rec->self_loop = k;
        rec->slots = e->dev.slots;
        g->attn[k] = rec;
        g->edges[k] = e;
    }
    *a = g->attn[k];
    return 0;
fail:
    gnn_free(rec);
    gnn_free(e);
    return rc;
}

/* g's slots for layout k as a plug-in sees them (kernels/gnn_aggr_plugin.h),
 * made on first use and kept with g. */
int gnn__be_attn_edges(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a, int k,
                       const gnn_be_edges_t **out)
{
    int rc = 0;
    if (g->edges[k]) {
        *out = g->edges[k];
        return 0;
    }
    if (!g->sg || !a->t_slot)
        return GNN_FAIL(GNN_EINVAL, "attention edges: the graph has no host preparation");
    const gnn_spmm_graph_t *sg = g->sg;
    const gnn_csr_t *c = sg->csr;
    int64_t nd = sg->n_dst, ns = sg->n_src, slots = a->slots;
    size_t words = (size_t)(nd + 1) + (size_t)(ns + 1) + 3u * (size_t)slots;
    gnn_be_edges_t *e = gnn_calloc(1, sizeof *e);
    GNN_CHECK(e, GNN_ENOMEM, "attention edges");
    e->hbuf = gnn_malloc_array(words, sizeof *e->hbuf);
    GNN_CHECK(e->hbuf, GNN_ENOMEM, "attention edges of %" PRId64 " slots", slots);
    int64_t *indptr = e->hbuf, *src = indptr + nd + 1, *dst = src + slots,
            *t_indptr = dst + slots, *t_slot = t_indptr + ns + 1;
    for (int64_t v = 0; v < nd; v++) {
        int64_t first = c->indptr[v] + (k ? v : 0), deg = c->indptr[v + 1] - c->indptr[v];
        indptr[v] = first;
        for (int64_t i = 0; i < deg; i++) {
            src[first + i] = c->indices[c->indptr[v] + i];
            dst[first + i] = v;
        }
        if (k) src[first + deg] = dst[first + deg] = v;
    }
    indptr[nd] = slots;
    /* By source: its stored edges in transposed order, then its self loop. */
    for (int64_t u = 0; u <= ns; u++) t_indptr[u] = sg->t.indptr[u] + (k ? (u < nd ? u : nd) : 0);
    for (int64_t u = 0; u < ns; u++) {
        int64_t o = t_indptr[u];
        for (int64_t t = sg->t.indptr[u]; t < sg->t.indptr[u + 1]; t++) t_slot[o++] = a->t_slot[t];
        if (k && u < nd) t_slot[o] = c->indptr[u + 1] + u;
    }
    e->host = (gnn_aggr_edges_t){nd, ns, slots, indptr, src, dst, t_indptr, t_slot};
    e->dev = e->host;
    if (!be->host_memory) {
        size_t bytes = words * sizeof(int64_t);
        GNN_TRY(gnn_be_alloc(be, bytes, &e->dbuf));
        GNN_TRY(gnn_be_upload(be, e->dbuf, e->hbuf, bytes));
        int64_t *d = e->dbuf;
        e->dev = (gnn_aggr_edges_t){nd,          ns,          slots,
                                    d,           d + (src - e->hbuf),
                                    d + (dst - e->hbuf),      d + (t_indptr - e->hbuf),
                                    d + (t_slot - e->hbuf)};
    }
    g->edges[k] = e;
    *out = e;
    return 0;
fail:
    if (e) {
        gnn_be_free(be, e->dbuf);
        gnn_free(e->hbuf);
        gnn_free(e);
    }
    return rc;
}

static void attn_edges_free(gnn_backend_t *be, gnn_be_edges_t *e)
{
    if (!e) return;
    if (be) gnn_be_free(be, e->dbuf);
    gnn_free(e->hbuf);
    gnn_free(e);
}

/* What a score call of def needs: the layout, and the edges when def is a
 * plug-in (the built-in reads the layout). */
static int score_prep(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                      const gnn_attn_opts_t *o, const char *fn, const gnn_attn_graph_t **a,
                      const gnn_be_edges_t **e)
{
    NEED(be && g && def && o, fn);
    if (!gnn_aggr_is_attention(def))
        return GNN_FAIL(GNN_EINVAL, "%s: %s is not an attention function", fn, def->name);
    if (g->be != be)
        return GNN_FAIL(GNN_EINVAL, "%s: the graph %s", fn,
                        g->be ? "belongs to another backend" : "is staged, not placed");
    if (o->heads < 1 || o->heads > GNN_ATTN_MAX_HEADS || o->f < 1)
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " heads of %" PRId64 " features", fn,
                        o->heads, o->f);
    if (g->host.n_dst > g->host.n_src) /* the scores read x[v] for destination v */
        return GNN_FAIL(GNN_EINVAL,
                        "%s: %" PRId64 " destinations but %" PRId64 " sources (an attention score "
                        "reads each destination's own row among the sources, the first n_dst)",
                        fn, g->host.n_dst, g->host.n_src);
    int k = o->self_loop != 0;
    int rc = attn_layout(be, g, k, fn, a);
    if (rc < 0) return rc;
    *e = NULL;
    /* A plug-in reads the edges; so does a device's built-in gat. */
    if (!gnn__aggr_builtin_owns(def) || !be->host_memory)
        return gnn__be_attn_edges(be, g, *a, k, e);
    return 0;
}

static size_t score_ws(const gnn_bgraph_t *g, const gnn_aggr_def_t *def, const gnn_attn_opts_t *o,
                       const gnn_be_edges_t *e)
{
    gnn_aggr_dims_t d = {o->heads, o->f};
    if (def->workspace_bytes2)
        return def->workspace_bytes2(&g->host, e ? &e->host : NULL, &d, def->user);
    return def->workspace_bytes ? def->workspace_bytes(&g->host, o->heads * o->f, def->user) : 0;
}

int gnn_be_attn_workspace(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                          const gnn_attn_opts_t *o, size_t *bytes)
{
    const gnn_attn_graph_t *a = NULL;
    const gnn_be_edges_t *e;
    NEED(bytes, "gnn_be_attn_workspace");
    int rc = score_prep(be, g, def, o, "gnn_be_attn_workspace", &a, &e);
    if (rc < 0) return rc;
    *bytes = score_ws(g, def, o, e);
    return 0;
}

/* Run def's score (ds == NULL) or its backward. */
static int score_run(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                     const gnn_attn_opts_t *o, const float *params, const float *x, float *s,
                     const float *ds, float *dx, float *dparams, void *ws, size_t ws_bytes,
                     int backward)
{
    const char *dir = backward ? "score backward" : "score";
    const gnn_attn_graph_t *a = NULL;
    const gnn_be_edges_t *e;
    int rc = score_prep(be, g, def, o, "gnn_be_attn_score", &a, &e);
    if (rc < 0) return rc;
    size_t need = score_ws(g, def, o, e);
    if (need > 0 && (!ws || ws_bytes < need))
        return GNN_FAIL(GNN_EINVAL, "attention function %s %s: workspace of %zu bytes, needs %zu",
                        def->name, dir, ws ? ws_bytes : 0, need);
    char msg[256] = "";
    gnn__attn_private_t priv = {a, o, be};
    gnn_aggr_call_t call = {
        .graph = &g->dev,
        .f = o->f,
        .workspace = need ? ws : NULL,
        .workspace_size = need ? ws_bytes : 0,
        .user = def->user,
        .msg = msg,
        .msg_size = sizeof msg,
        .heads = o->heads,
        .params = params,
        .dparams = dparams,
        .edges = e ? &e->dev : NULL,
        .negative_slope = o->negative_slope,
    };
    be->ops->aggr_call(be, g, &call);
    call.host_private = &priv;
    const char *devname = be->kind == GNN_BACKEND_CUDA ? "CUDA" : "CPU";
    BUF(params, "gnn_be_attn_score");
    BUF(x, "gnn_be_attn_score");
    BUF(call.workspace, "gnn_be_attn_score");
    if (backward) {
        gnn_aggr_score_backward_fn fn =
            be->ops->attn_score_backward ? be->ops->attn_score_backward(def) : NULL;
        if (!fn)
            return GNN_FAIL(GNN_EUNSUPPORTED, "attention function %s has no %s score backward",
                            def->name, devname);
        if (!x || !ds || !dx)
            return GNN_FAIL(GNN_EINVAL, "attention function %s score backward: NULL argument",
                            def->name);
        BUF(ds, "gnn_be_attn_score_backward");
        BUF(dx, "gnn_be_attn_score_backward");
        BUF(dparams, "gnn_be_attn_score_backward");
        rc = fn(&call, x, ds, dx);
    } else {
        gnn_aggr_score_fn fn = be->ops->attn_score ? be->ops->attn_score(def) : NULL;
        if (!fn)
            return GNN_FAIL(GNN_EUNSUPPORTED, "attention function %s has no %s score", def->name,
                            devname);
        if (!x || !s)
            return GNN_FAIL(GNN_EINVAL, "attention function %s score: NULL argument", def->name);
        BUF(s, "gnn_be_attn_score");
        rc = fn(&call, x, s);
    }
    if (rc == 0) return 0;
    if (gnn__aggr_builtin_owns(def) && rc < 0 && gnn_error_code() == rc) return rc;
    msg[sizeof msg - 1] = '\0';
    if (msg[0]) return GNN_FAIL(GNN_EPLUGIN, "attention function %s %s: %s", def->name, dir, msg);
    return GNN_FAIL(GNN_EPLUGIN, "attention function %s %s failed (code %d) without a message",
                    def->name, dir, rc);
}

int gnn_be_aggr_runs(gnn_backend_t *be, const gnn_aggr_def_t *def)
{
    NEED(be && def, "gnn_be_aggr_runs");
    const char *devname = be->kind == GNN_BACKEND_CUDA ? "CUDA" : "CPU";
    if (def->kind == GNN_AGGR_KIND_ATTENTION) {
        if (!be->ops->attn_score || !be->ops->attn_score(def) || !be->ops->attn_score_backward ||
            !be->ops->attn_score_backward(def))
            return GNN_FAIL(GNN_EUNSUPPORTED, "attention function %s has no %s score and score "
                                              "backward",
                            def->name, devname);
        return 0;
    }
    if (!be->ops->aggr_forward(def) || !be->ops->aggr_backward(def))
        return GNN_FAIL(GNN_EUNSUPPORTED, "aggregator %s has no %s forward and backward",
                        def->name, devname);
    return 0;
}

int gnn_be_attn_score(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                      const gnn_attn_opts_t *o, const float *params, const float *x, float *s,
                      void *ws, size_t ws_bytes)
{
    return score_run(be, g, def, o, params, x, s, NULL, NULL, NULL, ws, ws_bytes, 0);
}

int gnn_be_attn_score_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_aggr_def_t *def,
                               const gnn_attn_opts_t *o, const float *params, const float *x,
                               const float *ds, float *dx, float *dparams, void *ws,
                               size_t ws_bytes)
{
    return score_run(be, g, def, o, params, x, NULL, ds, dx, dparams, ws, ws_bytes, 1);
}

int gnn_be_attn_forward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_opts_t *o,
                        const float *x, float *s, float *y)
{
    const gnn_attn_graph_t *a = NULL;
    int rc = attn_prep(be, g, o, be ? (void *)be->ops->attn_forward : NULL, "gnn_be_attn_forward",
                       &a);
    if (rc < 0) return rc;
    BUF(x, "gnn_be_attn_forward");
    BUF(s, "gnn_be_attn_forward");
    BUF(y, "gnn_be_attn_forward");
    BUF(o->ids, "gnn_be_attn_forward");
    return be->ops->attn_forward(be, g, a, o, x, s, y);
}

int gnn_be_attn_backward(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_opts_t *o,
                         const float *x, const float *alpha, const float *y, const float *dy,
                         float *dx, float *ds)
{
    const gnn_attn_graph_t *a = NULL;
    int rc = attn_prep(be, g, o, be ? (void *)be->ops->attn_backward : NULL,
                       "gnn_be_attn_backward", &a);
    if (rc < 0) return rc;
    BUF(x, "gnn_be_attn_backward");
    BUF(alpha, "gnn_be_attn_backward");
    BUF(y, "gnn_be_attn_backward");
    BUF(dy, "gnn_be_attn_backward");
    BUF(dx, "gnn_be_attn_backward");
    BUF(ds, "gnn_be_attn_backward");
    return be->ops->attn_backward(be, g, a, o, x, alpha, y, dy, dx, ds);
}

int gnn_be_elu(gnn_backend_t *be, int64_t n, const float *x, float *y)
{
    NEED(be, "gnn_be_elu");
    if (!be->ops->elu) return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_elu: not available on %s", be->desc);
    BUF(x, "gnn_be_elu");
    BUF(y, "gnn_be_elu");
    return be->ops->elu(be, n, x, y);
}

int gnn_be_elu_backward(gnn_backend_t *be, int64_t n, const float *y, const float *dy, float *dx)
{
    NEED(be, "gnn_be_elu_backward");
    if (!be->ops->elu_backward)
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_elu_backward: not available on %s", be->desc);
    BUF(y, "gnn_be_elu_backward");
    BUF(dy, "gnn_be_elu_backward");
    BUF(dx, "gnn_be_elu_backward");
    return be->ops->elu_backward(be, n, y, dy, dx);
}

int gnn_be_sparse_opt_step(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                           const int64_t *rows, int64_t table_rows, const float *g, int64_t ldg,
                           float *w, float *s1, float *s2, int64_t step)
{
    NEED(be && o && g && w && s1, "gnn_be_sparse_opt_step");
    NEED(o->kind != GNN_SPARSE_ADAM || s2, "gnn_be_sparse_opt_step");
    BUF(rows, "gnn_be_sparse_opt_step");
    BUF(g, "gnn_be_sparse_opt_step");
    BUF(w, "gnn_be_sparse_opt_step");
    BUF(s1, "gnn_be_sparse_opt_step");
    BUF(s2, "gnn_be_sparse_opt_step");
    rule_ids(be, rows, n, table_rows, "gnn_be_sparse_opt_step: its row ids checked on the device");
    return be->ops->sparse_opt_step(be, o, n, d, rows, table_rows, g, ldg, w, s1, s2, step);
}

int gnn_be_copy_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                     int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd)
{
    NEED(be && src && dst, "gnn_be_copy_rows");
    BUF(src, "gnn_be_copy_rows");
    BUF(idx, "gnn_be_copy_rows");
    BUF(dst, "gnn_be_copy_rows");
    rule_ids(be, idx, n, src_rows, "gnn_be_copy_rows: its ids checked on the device");
    return be->ops->copy_rows(be, n, f, src, lds, src_rows, idx, dst, ldd);
}

int gnn_be_scatter_rows(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                        const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows)
{
    NEED(be && src && dst && (idx || n == 0), "gnn_be_scatter_rows");
    BUF(src, "gnn_be_scatter_rows");
    BUF(idx, "gnn_be_scatter_rows");
    BUF(dst, "gnn_be_scatter_rows");
    if (!be->ops->scatter_rows)
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_scatter_rows: not on %s", be->desc);
    if (n > 0 && !gnn__be_trusted_distinct(be, idx, n, dst_rows))
        rule(be, "gnn_be_scatter_rows: its check of repeats read back");
    return be->ops->scatter_rows(be, n, f, src, lds, idx, dst, ldd, dst_rows);
}

int gnn_be_mem_peak(gnn_backend_t *be, size_t *bytes)
{
    NEED(be && bytes, "gnn_be_mem_peak");
    *bytes = 0;
    if (!be->ops->mem_peak)
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_mem_peak: not known on %s", be->desc);
    return be->ops->mem_peak(be, bytes);
}

int gnn_be_mem_available(gnn_backend_t *be, size_t *bytes)
{
    NEED(be && bytes, "gnn_be_mem_available");
    return be->ops->mem_available(be, bytes);
}

/* ---- Sampling on the device ----------------------------------------------- */

int gnn_be_sampler_create(gnn_backend_t *be, const gnn_csr_t *graph, int layers,
                          const int *fanouts, gnn_bsampler_t **out)
{
    return gnn_be_sampler_create_at(be, graph, layers, fanouts, 0, out);
}

int gnn_be_sampler_graph_at(const gnn_bsampler_t *s) { return s ? s->at : 0; }

int gnn_be_sampler_set_once(gnn_bsampler_t *s, int on)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_once: NULL sampler");
    s->once = on != 0;
    return 0;
}

int gnn_be_sampler_create_at(gnn_backend_t *be, const gnn_csr_t *graph, int layers,
                             const int *fanouts, int where, gnn_bsampler_t **out)
{
    int rc = 0;
    gnn_bsampler_t *s = NULL;
    GNN_CHECK(out, GNN_EINVAL, "gnn_be_sampler_create: NULL output");
    *out = NULL;
    GNN_CHECK(be && graph && fanouts, GNN_EINVAL, "gnn_be_sampler_create: NULL argument");
    if (!be->ops->sample)
        return GNN_FAIL(GNN_EUNSUPPORTED, "sampling on the device is not available on %s",
                        be->desc);
    GNN_CHECK(graph->n_rows >= 0 && graph->n_rows == graph->n_cols && graph->nnz >= 0 &&
                  graph->indptr && (graph->nnz == 0 || graph->indices),
              GNN_EINVAL,
              "gnn_be_sampler_create: the graph must be a square CSR (got %" PRId64 " x %" PRId64
              ", %" PRId64 " entries)",
              graph->n_rows, graph->n_cols, graph->nnz);
    GNN_CHECK(graph->n_rows < INT32_MAX, GNN_EINVAL,
              "gnn_be_sampler_create: %" PRId64 " nodes (at most 2^31 - 2 on the device)",
              graph->n_rows);
    GNN_CHECK(layers >= 1 && layers <= GNN_BE_SAMPLE_MAX_LAYERS, GNN_EINVAL,
              "gnn_be_sampler_create: %d layers outside [1, %d]", layers,
              GNN_BE_SAMPLE_MAX_LAYERS);
    for (int h = 0; h < layers; h++)
        GNN_CHECK(fanouts[h] >= 1 || fanouts[h] == -1, GNN_EINVAL,
                  "gnn_be_sampler_create: fanout %d of hop %d (expected >= 1, or -1 for all)",
                  fanouts[h], h);
    s = gnn_calloc(1, sizeof *s);
    GNN_CHECK(s, GNN_ENOMEM, "device sampler");
    GNN_CHECK(where >= 0 && where <= 2, GNN_EINVAL,
              "gnn_be_sampler_create_at: where %d (0 auto, 1 device, 2 host memory)", where);
    s->graph = graph;
    s->layers = layers;
    s->flags = GNN_CSR_SORTED | (graph->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS));
    s->where = where;
    s->at = 2; /* host memory, unless the implementation copies it */
    s->n_ids = s->ids_cap = graph->n_rows;
    memcpy(s->fanout, fanouts, (size_t)layers * sizeof *fanouts);
    GNN_TRY(be->ops->sampler_prepare(be, s));
    s->be = be;
    *out = s;
    return 0;
fail:
    gnn_free(s);
    return rc;
}

int gnn_be_sampler_download(gnn_bsampler_t *s, void *dst, const void *src, size_t bytes)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_download: NULL sampler");
    if (!bytes) return 0;
    NEED(dst && src, "gnn_be_sampler_download");
    gnn_backend_t *be = s->be;
    BUF(src, "gnn_be_sampler_download");
    if (be->ops->sampler_download) return be->ops->sampler_download(be, s, dst, src, bytes);
    return be->ops->download(be, dst, src, bytes);
}

int gnn_be_sampler_download_n(gnn_bsampler_t *s, int n, void *const *dst, const void *const *src,
                              const size_t *bytes)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_download_n: NULL sampler");
    if (n < 0 || (n > 0 && (!dst || !src || !bytes)))
        return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_download_n: %d copies, NULL argument", n);
    gnn_backend_t *be = s->be;
    for (int i = 0; i < n; i++) {
        if (!bytes[i]) continue;
        NEED(dst[i] && src[i], "gnn_be_sampler_download_n");
        BUF(src[i], "gnn_be_sampler_download_n");
    }
    if (be->ops->sampler_download_n) return be->ops->sampler_download_n(be, s, n, dst, src, bytes);
    for (int i = 0; i < n; i++) {
        int rc = bytes[i] ? gnn_be_sampler_download(s, dst[i], src[i], bytes[i]) : 0;
        if (rc < 0) return rc;
    }
    return 0;
}

int gnn_be_sampler_set_key_ids(gnn_bsampler_t *s, const int64_t *ids)
{
    int rc = 0;
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_key_ids: NULL sampler");
    const int64_t n = s->graph->n_rows;
    int64_t *buf = NULL;
    if (ids) {
        for (int64_t v = 0; v < n; v++)
            GNN_CHECK(ids[v] >= 0, GNN_EINVAL,
                      "gnn_be_sampler_set_key_ids: key id %" PRId64 " of node %" PRId64
                      " is negative",
                      ids[v], v);
        GNN_TRY(gnn_be_alloc(s->be, (size_t)(n + 1) * sizeof *buf, (void **)&buf));
        if (n) GNN_TRY(gnn_be_upload(s->be, buf, ids, (size_t)n * sizeof *buf));
        /* The sampler's own stream reads it: the copy done first. */
        GNN_TRY(gnn_be_sync(s->be));
    }
    if (s->key_ids) {
        GNN_TRY(gnn_be_sync(s->be)); /* no batch of the backend's still reading them */
        gnn_be_free(s->be, s->key_ids);
    }
    s->key_ids = buf;
    return 0;
fail:
    gnn_be_free(s->be, buf);
    return rc;
}

/* The sampler's relations let go: unmapped, or freed. */
static void sampler_etype_free(gnn_bsampler_t *s)
{
    if (s->etype_mapped)
        gnn_be_unmap_host(s->be, (void *)s->etype_mapped);
    else
        gnn_be_free(s->be, s->etype);
    s->etype = NULL;
    s->etype_mapped = NULL;
}

int gnn_be_sampler_set_relations(gnn_bsampler_t *s, const int32_t *etype, int n_rels)
{
    int rc = 0;
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_relations: NULL sampler");
    const gnn_csr_t *g = s->graph;
    int32_t *buf = NULL;
    int in_place = 0;
    if (etype) {
        GNN_CHECK(n_rels >= 1 && n_rels <= 256, GNN_EINVAL,
                  "gnn_be_sampler_set_relations: %d relations (1 to 256)", n_rels);
        for (int64_t v = 0; v < g->n_rows; v++)
            for (int64_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
                GNN_CHECK(etype[e] >= 0 && etype[e] < n_rels, GNN_EINVAL,
                          "gnn_be_sampler_set_relations: entry %" PRId64 " has relation %d of %d",
                          e, etype[e], n_rels);
                GNN_CHECK(e == g->indptr[v] || etype[e] >= etype[e - 1], GNN_EINVAL,
                          "gnn_be_sampler_set_relations: row %" PRId64 " is not grouped by "
                          "relation (typed draws need rows sorted by relation)",
                          v);
            }
    }
    /* Where the sampler reads the graph: in place from host memory on a
     * device that lacked room for it, else a copy where it runs. */
    in_place = etype && g->nnz > 0 && s->at == 2 && !gnn_be_host_memory(s->be);
    if (in_place) {
        GNN_TRY(gnn_be_map_host(s->be, (void *)etype, (size_t)g->nnz * sizeof *etype,
                                (void **)&buf));
    } else if (etype) {
        GNN_TRY(gnn_be_alloc(s->be, (size_t)(g->nnz + 1) * sizeof *buf, (void **)&buf));
        if (g->nnz) GNN_TRY(gnn_be_upload(s->be, buf, etype, (size_t)g->nnz * sizeof *buf));
        GNN_TRY(gnn_be_sync(s->be)); /* the sampler's own stream reads it */
    }
    if (s->etype) {
        GNN_TRY(gnn_be_sync(s->be));
        sampler_etype_free(s);
    }
    s->etype = buf;
    s->etype_mapped = in_place ? etype : NULL;
    s->n_rels = etype ? n_rels : 0;
    return 0;
fail:
    if (in_place && buf)
        gnn_be_unmap_host(s->be, (void *)etype);
    else
        gnn_be_free(s->be, buf);
    return rc;
}

int gnn_be_sampler_set_remote(gnn_bsampler_t *s, const gnn_be_remote_t *r)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_remote: NULL sampler");
    const int64_t n = s->graph->n_rows;
    if (!r) {
        memset(&s->remote, 0, sizeof s->remote);
        s->n_ids = n;
        return 0;
    }
    if (!r->draw)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_remote: remote rows without a hook");
    if (r->n_held < 0 || r->n_held > n)
        return GNN_FAIL(GNN_EINVAL,
                        "gnn_be_sampler_set_remote: %" PRId64 " rows held of a graph of %" PRId64
                        " nodes",
                        r->n_held, n);
    if (r->n_ids < n || r->n_ids >= INT32_MAX)
        return GNN_FAIL(GNN_EINVAL,
                        "gnn_be_sampler_set_remote: node ids below %" PRId64 " (at least the "
                        "graph's %" PRId64 ", at most 2^31 - 2 on the device)",
                        r->n_ids, n);
    if (r->first_hop < 0)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_sampler_set_remote: remote draws from hop %d",
                        r->first_hop);
    if (r->n_ids > s->ids_cap) { /* the per-node arrays grow (never shrink) */
        const int64_t was = s->ids_cap;
        s->ids_cap = r->n_ids;
        int rc = s->be->ops->sampler_resize(s->be, s);
        if (rc < 0) {
            s->ids_cap = was;
            return rc;
        }
    }
    s->n_ids = r->n_ids;
    s->remote = *r;
    return 0;
}

/* Room for n int64 in the host array *a of capacity *cap. */
static int host_room(int64_t **a, size_t *cap, int64_t n)
{
    if (*a && (size_t)n <= *cap) return 0;
    gnn_free(*a);
    *cap = 0;
    *a = gnn_malloc_array((size_t)n + (size_t)n / 4 + 64, sizeof **a);
    if (!*a) return GNN_FAIL(GNN_ENOMEM, "device sampler: remote rows of %" PRId64, n);
    *cap = (size_t)n + (size_t)n / 4 + 64;
    return 0;
}

void gnn__be_remote_done(gnn_bremote_t *r)
{
    gnn_free(r->src);
    gnn_free(r->rel);
    memset(r, 0, sizeof *r);
}

int gnn__be_remote_hop(gnn_bsampler_t *s, int h, uint64_t key, const gnn_bexcl_t *x,
                       const int64_t *rows, int64_t n, gnn_bremote_t *r)
{
    int rc = 0;
    const gnn_be_remote_t *rm = &s->remote;
    const int64_t held = rm->n_held;
    memset(r, 0, sizeof *r);
    s->hop = h; /* the hop in progress, its hook not called yet */
    s->called = 0;
    /* (in the host sampler's order: excluded edges first) */
    int64_t nr = 0;
    for (int64_t i = 0; i < n; i++) {
        if (rows[i] < held) continue;
        const int64_t *xs;
        if (x && !rm->excludes && gnn__ds_excl_row(x->rows, x->start, x->src, x->m, rows[i], &xs))
            return GNN_FAIL(GNN_EUNSUPPORTED,
                            "device sampler: hop %d reaches a node with excluded edges whose row "
                            "is held elsewhere",
                            h);
        nr++;
    }
    if (h < rm->first_hop) {
        for (int64_t i = 0; i < n; i++)
            if (rows[i] >= held)
                return GNN_FAIL(GNN_EINVAL,
                                "device sampler: hop %d reaches node %" PRId64
                                ", whose row is not held here (remote draws start at hop %d)",
                                h, rows[i], rm->first_hop);
        return 0;
    }
    if ((rc = host_room(&s->r_idx, &s->r_idx_cap, n + 1)) < 0 ||
        (rc = host_room(&s->r_rows, &s->r_rows_cap, nr + 1)) < 0 ||
        (rc = host_room(&s->r_off, &s->r_off_cap, nr + 1)) < 0)
        return rc;
    int64_t *idx = s->r_idx, *rv = s->r_rows, *off = s->r_off, k = 0;
    for (int64_t i = 0; i < n; i++) {
        idx[i] = rows[i] >= held ? k : -1;
        if (rows[i] >= held) rv[k++] = rows[i];
    }
    /* off[1, nr] take the counts, then their prefix sum. */
    s->called = 1; /* a failure of the hook itself is every process's */
    GNN_TRY(rm->draw(rm->ctx, h, s->fanout[h], key, rv, nr, off + 1, &r->src,
                     s->etype ? &r->rel : NULL));
    s->called = 2; /* this hop's exchange is done */
    off[0] = 0;
    const int64_t most = (int64_t)s->fanout[h] * (s->etype ? s->n_rels : 1); /* a row's */
    for (k = 0; k < nr; k++) {
        const int64_t c = off[k + 1];
        GNN_CHECK(c >= 0 && (s->fanout[h] < 0 || c <= most), GNN_EINVAL,
                  "device sampler: the holder of node %" PRId64 " drew %" PRId64
                  " sources at fanout %d",
                  rv[k], c, s->fanout[h]);
        off[k + 1] = off[k] + c;
    }
    GNN_CHECK(off[nr] == 0 || r->src, GNN_EINVAL, "device sampler: the holders drew no sources");
    for (int64_t e = 0; e < off[nr]; e++)
        GNN_CHECK(r->src[e] >= 0 && r->src[e] < s->n_ids, GNN_EINVAL,
                  "device sampler: a holder drew node %" PRId64 " outside [0, %" PRId64 ")",
                  r->src[e], s->n_ids);
    if (s->etype) {
        for (k = 0; k < nr; k++)
            for (int64_t e = off[k]; e < off[k + 1]; e++)
                GNN_CHECK(r->rel && r->rel[e] >= 0 && r->rel[e] < s->n_rels, GNN_EINVAL,
                          "device sampler: the holder of node %" PRId64
                          " answered relation %d of %d",
                          rv[k], r->rel ? r->rel[e] : -1, s->n_rels);
    }
    r->nr = nr;
    r->idx = idx;
    r->off = off;
    return 0;
fail:
    gnn__be_remote_done(r);
    return rc;
}

/* A failure rc of this batch handed to the remote hook at its next
 * exchange (this hop's when its call has not been made, else the next
 * hop's; first_hop at the earliest), as the host sampler hands it, so
 * that processes sampling in step stop at the same hop; none after the
 * last hop's exchange, nor when the hook itself failed. */
static void remote_fail(gnn_bsampler_t *s, int rc)
{
    if (!s->remote.draw || s->called == 1) return;
    int hh = s->called == 2 ? s->hop + 1 : s->hop;
    hh = hh > s->remote.first_hop ? hh : s->remote.first_hop;
    if (hh >= s->layers) return;
    int64_t *none = NULL;
    int32_t *no_rel = NULL;
    (void)s->remote.draw(s->remote.ctx, hh, s->fanout[hh], 0, NULL, rc, NULL, &none,
                         s->etype ? &no_rel : NULL);
    gnn_free(none);
    gnn_free(no_rel);
}

void gnn_be_sampler_free(gnn_bsampler_t *s)
{
    if (!s) return;
    gnn_free(s->r_rows);
    gnn_free(s->r_idx);
    gnn_free(s->r_off);
    if (s->be && s->be->ops->sampler_release) s->be->ops->sampler_release(s->be, s);
    if (s->key_ids) gnn_be_free(s->be, s->key_ids);
    if (s->etype) sampler_etype_free(s);
    gnn_free(s->xpairs);
    gnn_free(s->xrows);
    gnn_free(s->xstart);
    gnn_free(s->xsrc);
    gnn_free(s);
}

/* A batch's buffer freed: never one gnn_be_trust_buffer vouches for, so
 * the trust table is not read (a sampler thread grows batches while the
 * training thread trusts buffers). */
static void batch_buf_free(gnn_backend_t *be, void *p)
{
    if (!p) return;
    be->ops->free(be, p);
    gnn__be_note_free();
}

int gnn__be_batch_grow(gnn_backend_t *be, void **buf, size_t *cap, size_t n, size_t size,
                       int keep)
{
    if (*buf && n <= *cap) return 0;
    size_t want = n + n / 4 + 64;
    void *p = NULL;
    int rc = gnn_be_alloc(be, want * size, &p);
    if (rc < 0) return rc;
    if (keep && *buf && *cap) rc = gnn_be_copy(be, p, *buf, *cap * size);
    if (rc < 0) {
        batch_buf_free(be, p);
        return rc;
    }
    batch_buf_free(be, *buf);
    *buf = p;
    *cap = want;
    return 0;
}

/* Seeds in range and distinct; the message names the first bad one. */
static int check_seeds(const int64_t *seeds, int64_t n, int64_t n_graph)
{
    for (int64_t i = 0; i < n; i++)
        if (seeds[i] < 0 || seeds[i] >= n_graph)
            return GNN_FAIL(GNN_EINVAL,
                            "gnn_be_sample: seed %" PRId64 " at position %" PRId64
                            " outside [0, %" PRId64 ")",
                            seeds[i], i, n_graph);
    int64_t *c = gnn_malloc_array((size_t)n + 1, sizeof *c);
    if (!c) return GNN_FAIL(GNN_ENOMEM, "gnn_be_sample: %" PRId64 " seeds", n);
    memcpy(c, seeds, (size_t)n * sizeof *c);
    gnn_draw_sort_ids(c, n);
    int64_t dup = -1;
    for (int64_t i = 1; i < n && dup < 0; i++)
        if (c[i] == c[i - 1]) dup = c[i];
    gnn_free(c);
    if (dup < 0) return 0;
    int64_t at = 0;
    for (int64_t i = 0, seen = 0; i < n; i++)
        if (seeds[i] == dup && seen++ == 1) at = i;
    return GNN_FAIL(GNN_EINVAL, "gnn_be_sample: seed %" PRId64 " repeated at position %" PRId64,
                    dup, at);
}

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The table of the n excluded edges pairs (both directions) into s's
 * host arrays, *x set to it. */
static int excl_table(gnn_bsampler_t *s, const int64_t *pairs, int64_t n, gnn_bexcl_t *x)
{
    const int64_t n_graph = s->remote.draw ? s->n_ids : s->graph->n_rows;
    for (int64_t i = 0; i < 2 * n; i++)
        if (pairs[i] < 0 || pairs[i] >= n_graph)
            return GNN_FAIL(GNN_EINVAL,
                            "gnn_be_sample_excluding: excluded edge %" PRId64
                            " has end point %" PRId64 " outside [0, %" PRId64 ")",
                            i / 2, pairs[i], n_graph);
    if ((size_t)(2 * n) + 1 > s->xcap) {
        const size_t cap = (size_t)(2 * n) + 1;
        int64_t **a[] = {&s->xpairs, &s->xrows, &s->xstart, &s->xsrc};
        s->xcap = 0;
        for (size_t k = 0; k < sizeof a / sizeof a[0]; k++) {
            gnn_free(*a[k]);
            *a[k] = gnn_malloc_array(k == 0 ? 2 * cap : cap + 1, sizeof(int64_t));
            if (!*a[k])
                return GNN_FAIL(GNN_ENOMEM, "gnn_be_sample_excluding: %" PRId64 " edges", n);
        }
        s->xcap = cap;
    }
    int64_t *p = s->xpairs; /* (row, source) of each direction */
    for (int64_t e = 0; e < 2 * n; e++) {
        p[2 * e] = pairs[e ^ 1];
        p[2 * e + 1] = pairs[e];
    }
    qsort(p, (size_t)(2 * n), 2 * sizeof *p, cmp_pair);
    int64_t m = 0, ns = 0;
    for (int64_t e = 0; e < 2 * n; e++) {
        if (e > 0 && p[2 * e] == p[2 * e - 2] && p[2 * e + 1] == p[2 * e - 1]) continue;
        if (m == 0 || s->xrows[m - 1] != p[2 * e]) {
            s->xrows[m] = p[2 * e];
            s->xstart[m++] = ns;
        }
        s->xsrc[ns++] = p[2 * e + 1];
    }
    s->xstart[m] = ns;
    *x = (gnn_bexcl_t){.m = m, .rows = s->xrows, .start = s->xstart, .src = s->xsrc};
    return 0;
}

static int sample_batch(gnn_bsampler_t *s, const int64_t *seeds, int64_t n, const int64_t *excl,
                        int64_t n_excl, uint64_t seed, uint64_t epoch, uint64_t batch,
                        gnn_bbatch_t *b);

int gnn_be_sample(gnn_bsampler_t *s, const int64_t *seeds, int64_t n, uint64_t seed,
                  uint64_t epoch, uint64_t batch, gnn_bbatch_t *b)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sample: NULL sampler");
    return sample_batch(s, seeds, n, NULL, 0, seed, epoch, batch, b);
}

int gnn_be_sample_excluding(gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                            const int64_t *excl, int64_t n_excl, uint64_t seed, uint64_t epoch,
                            uint64_t batch, gnn_bbatch_t *b)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "gnn_be_sample_excluding: NULL sampler");
    return sample_batch(s, seeds, n, excl, n_excl, seed, epoch, batch, b);
}

/* A bad call's failure, handed to the remote hook as any other. */
static int refused(gnn_bsampler_t *s, int rc)
{
    s->hop = 0;
    s->called = 0;
    remote_fail(s, rc);
    return rc;
}

static int sample_batch(gnn_bsampler_t *s, const int64_t *seeds, int64_t n, const int64_t *excl,
                        int64_t n_excl, uint64_t seed, uint64_t epoch, uint64_t batch,
                        gnn_bbatch_t *b)
{
    if (!b || (!seeds && n > 0) || (!excl && n_excl > 0))
        return refused(s, GNN_FAIL(GNN_EINVAL, "gnn_be_sample: NULL argument"));
    if (n < 0 || n_excl < 0)
        return refused(s, GNN_FAIL(GNN_EINVAL,
                                   "gnn_be_sample: %" PRId64 " seeds, %" PRId64 " excluded edges",
                                   n, n_excl));
    if (b->be && b->be != s->be)
        return refused(s, GNN_FAIL(GNN_EINVAL,
                                   "gnn_be_sample: the batch holds buffers of another backend"));
    b->be = s->be;
    b->layers = 0;
    b->typed = 0;
    b->n_seeds = b->n_input = 0;
    memset(b->n_dst, 0, sizeof b->n_dst);
    memset(b->n_src, 0, sizeof b->n_src);
    memset(b->nnz, 0, sizeof b->nnz);
    s->hop = 0;
    s->called = 0;
    /* With rows held elsewhere, seeds are any node ids. */
    int rc = check_seeds(seeds, n, s->remote.draw ? s->n_ids : s->graph->n_rows);
    gnn_bexcl_t x = {0};
    if (rc == 0 && n_excl > 0) rc = excl_table(s, excl, n_excl, &x);
    if (rc == 0)
        rc = s->be->ops->sample(s->be, s, seeds, n, gnn_draw_key(seed, epoch, batch),
                                x.m > 0 ? &x : NULL, b);
    if (rc < 0) {
        remote_fail(s, rc);
        b->layers = 0;
        b->n_seeds = b->n_input = 0;
        memset(b->n_dst, 0, sizeof b->n_dst);
        memset(b->n_src, 0, sizeof b->n_src);
        memset(b->nnz, 0, sizeof b->nnz);
        return rc;
    }
    b->layers = s->layers;
    b->n_seeds = n;
    b->flags = s->flags;
    b->typed = s->etype != NULL;
    return 0;
}

int gnn_be_trust_ids(gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound)
{
    NEED(be, "gnn_be_trust_ids");
    if (n < 0 || bound < 0 || (n > 0 && !ids))
        return GNN_FAIL(GNN_EINVAL, "gnn_be_trust_ids: %" PRId64 " ids below %" PRId64, n, bound);
    be->trust_ids = n > 0 ? ids : NULL;
    be->trust_n = n > 0 ? n : 0;
    be->trust_bound = bound;
    return 0;
}

int gnn_be_trust_buffer(gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound,
                        int distinct)
{
    NEED(be && ids, "gnn_be_trust_buffer");
    if (n < 0 || bound < 0)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_trust_buffer: %" PRId64 " ids below %" PRId64, n,
                        bound);
    /* Host memory checks ids on the host, and its graphs may be made on
     * several threads at once: nothing to note (the table stays empty). */
    if (be->host_memory) return 0;
    int slot = -1;
    for (int i = 0; i < GNN__BE_TRUST_BUFFERS; i++)
        if (be->trust_buf[i].ids == ids || (slot < 0 && !be->trust_buf[i].ids)) slot = i;
    if (slot >= 0 && n > 0) {
        be->trust_buf[slot].ids = ids;
        be->trust_buf[slot].n = n;
        be->trust_buf[slot].bound = bound;
        be->trust_buf[slot].distinct = distinct != 0;
    } else if (slot >= 0 && be->trust_buf[slot].ids == ids) {
        be->trust_buf[slot].ids = NULL;
    }
    return 0;
}

/* ids[0, n) within the n_range ids at range, all below range_bound <= bound. */
static int within(const int64_t *range, int64_t n_range, int64_t range_bound, const int64_t *ids,
                  int64_t n, int64_t bound)
{
    if (!range || range_bound > bound) return 0;
    uintptr_t a = (uintptr_t)range, b = (uintptr_t)ids;
    return b >= a && (b - a) % sizeof(int64_t) == 0 &&
           (int64_t)((b - a) / sizeof(int64_t)) + n <= n_range;
}

/* ids[0, n) within one of the buffers gnn_be_trust_buffer vouched for
 * (and as distinct, where asked). */
static int in_trusted_buffer(const gnn_backend_t *be, const int64_t *ids, int64_t n,
                             int64_t bound, int distinct)
{
    for (int i = 0; i < GNN__BE_TRUST_BUFFERS; i++)
        if ((!distinct || be->trust_buf[i].distinct) &&
            within(be->trust_buf[i].ids, be->trust_buf[i].n, be->trust_buf[i].bound, ids, n,
                   bound))
            return 1;
    return 0;
}

int gnn__be_trusted(const gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound)
{
    if (!ids || n < 0) return 0;
    return within(be->trust_ids, be->trust_n, be->trust_bound, ids, n, bound) ||
           in_trusted_buffer(be, ids, n, bound, 0);
}

int gnn__be_trusted_distinct(const gnn_backend_t *be, const int64_t *ids, int64_t n,
                             int64_t bound)
{
    return ids && n >= 0 && in_trusted_buffer(be, ids, n, bound, 1);
}

int gnn_be_batch_release(gnn_bbatch_t *b)
{
    NEED(b, "gnn_be_batch_release");
    if (!b->be || !b->be->ops->batch_release) return 0;
    return b->be->ops->batch_release(b->be, b);
}

void gnn_be_batch_free(gnn_bbatch_t *b)
{
    if (!b) return;
    if (b->be && b->fence && b->be->ops->batch_fence_free)
        b->be->ops->batch_fence_free(b->be, b->fence);
    if (b->be) {
        gnn_be_free(b->be, b->nodes);
        for (int l = 0; l < GNN_BE_SAMPLE_MAX_LAYERS; l++) {
            gnn_be_free(b->be, b->indptr[l]);
            gnn_be_free(b->be, b->indices[l]);
            gnn_be_free(b->be, b->etype[l]);
        }
    }
    memset(b, 0, sizeof *b);
}

/* ---- A step captured once and replayed ------------------------------------ */

int gnn_be_set_step_scalars(gnn_backend_t *be, const gnn_step_scalars_t *buf)
{
    NEED(be, "gnn_be_set_step_scalars");
    BUF(buf, "gnn_be_set_step_scalars");
    be->step_scalars = buf;
    return 0;
}

void gnn_step_scalars_adam(gnn_step_scalars_t *s, const gnn_adam_opts_t *o, int64_t step)
{
    const gnn_adam_consts_t c = gnn_adam_consts(o, step);
    s->adam_step_size = c.step_size;
    s->adam_bc2_sqrt = c.bc2_sqrt;
}

int gnn_be_capture_begin(gnn_backend_t *be)
{
    NEED(be, "gnn_be_capture_begin");
    if (!be->ops->capture_begin)
        return GNN_FAIL(GNN_EUNSUPPORTED, "gnn_be_capture_begin: no captured work on %s",
                        be->desc);
    if (be->capturing) return GNN_FAIL(GNN_EINVAL, "gnn_be_capture_begin: already capturing");
    int rc = be->ops->capture_begin(be);
    if (rc == 0) be->capturing = 1;
    return rc;
}

int gnn_be_capture_end(gnn_backend_t *be, gnn_bcapture_t **out)
{
    int rc = 0;
    void *graph = NULL;
    gnn_bcapture_t *c = NULL;
    GNN_CHECK(out, GNN_EINVAL, "gnn_be_capture_end: NULL output");
    *out = NULL;
    GNN_CHECK(be && be->capturing, GNN_EINVAL, "gnn_be_capture_end: not capturing");
    be->capturing = 0;
    GNN_TRY(be->ops->capture_end(be, &graph));
    c = gnn_calloc(1, sizeof *c);
    GNN_CHECK(c, GNN_ENOMEM, "captured work");
    c->be = be;
    c->graph = graph;
    *out = c;
    return 0;
fail:
    if (graph) be->ops->capture_free(be, graph);
    return rc;
}

int gnn_be_capture_rules_begin(gnn_backend_t *be)
{
    NEED(be, "gnn_be_capture_rules_begin");
    if (be->kind != GNN_BACKEND_CPU || be->host_memory)
        return GNN_FAIL(GNN_EUNSUPPORTED,
                        "gnn_be_capture_rules_begin: only where a GPU is emulated, not on %s",
                        be->desc);
    if (be->rules || t_rules_be)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_capture_rules_begin: already begun");
    be->rules_broken[0] = '\0';
    be->rules = 1;
    t_rules_be = be;
    t_rules_paused = 0;
    return 0;
}

int gnn_be_capture_rules_end(gnn_backend_t *be)
{
    NEED(be, "gnn_be_capture_rules_end");
    if (!be->rules || t_rules_be != be)
        return GNN_FAIL(GNN_EINVAL, "gnn_be_capture_rules_end: not begun on this thread");
    be->rules = 0;
    t_rules_be = NULL;
    if (!be->rules_broken[0]) return 0;
    return GNN_FAIL(GNN_ECUDA, "%s inside captured work", be->rules_broken);
}

int gnn_be_capture_launch(gnn_backend_t *be, gnn_bcapture_t *c)
{
    NEED(be && c, "gnn_be_capture_launch");
    if (c->be != be) return GNN_FAIL(GNN_EINVAL, "gnn_be_capture_launch: captured on another backend");
    return be->ops->capture_launch(be, c->graph);
}

void gnn_be_capture_free(gnn_bcapture_t *c)
{
    if (!c) return;
    c->be->ops->capture_free(c->be, c->graph);
    gnn_free(c);
}
