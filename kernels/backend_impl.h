/*
 * Inside of the backend interface (kernels/backend.h): the operation table
 * each device implements, and the structures the dispatch layer shares
 * with the implementations. Only backend implementations include this.
 */
#ifndef GNN_KERNELS_BACKEND_IMPL_H
#define GNN_KERNELS_BACKEND_IMPL_H

#include "kernels/attn.h"
#include "kernels/backend.h"
#include "kernels/spfeat.h"
#include "kernels/spmm.h"

#include <pthread.h>

typedef struct gnn_bexcl gnn_bexcl_t; /* a batch's excluded edges (below) */

typedef struct {
    int (*alloc)(gnn_backend_t *be, size_t bytes, void **out);
    void (*free)(gnn_backend_t *be, void *p);
    int (*upload)(gnn_backend_t *be, void *dst, const void *src, size_t bytes);
    int (*download)(gnn_backend_t *be, void *dst, const void *src, size_t bytes);
    int (*copy)(gnn_backend_t *be, void *dst, const void *src, size_t bytes);
    int (*zero)(gnn_backend_t *be, void *dst, size_t bytes);
    int (*sync)(gnn_backend_t *be);
    int (*gemm)(gnn_backend_t *be, int ta, int tb, int64_t m, int64_t n, int64_t k, float alpha,
                const float *a, int64_t lda, const float *b, int64_t ldb, float beta, float *c,
                int64_t ldc);
    int (*bias_add)(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias);
    int (*bias_grad)(gnn_backend_t *be, int64_t rows, int64_t cols, const float *dy,
                     float *dbias);
    int (*relu)(gnn_backend_t *be, int64_t n, const float *x, float *y);
    int (*relu_backward)(gnn_backend_t *be, int64_t n, const float *xy, const float *dy,
                         float *dx);
    int (*dropout)(gnn_backend_t *be, int64_t n, float p, uint64_t seed, uint64_t offset,
                   const float *x, float *y);
    int (*dropout_backward)(gnn_backend_t *be, int64_t n, float p, uint64_t seed,
                            uint64_t offset, const float *dy, float *dx);
    int (*dropout_rows)(gnn_backend_t *be, int64_t rows, int64_t f, const int64_t *row_id,
                        float p, uint64_t seed, uint64_t offset, const float *x, float *y);
    int (*axpby)(gnn_backend_t *be, int64_t n, float alpha, const float *x, float beta, float *y);
    int (*gather_rows)(gnn_backend_t *be, int64_t n, int64_t f, const float *src,
                       int64_t src_rows, const int64_t *idx, float *dst);
    int (*softmax_xent)(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                        const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                        float *dlogits);
    int (*adam)(gnn_backend_t *be, int64_t n, float *w, const float *g, float *m, float *v,
                const gnn_adam_opts_t *o, int64_t step);
    int (*count_correct)(gnn_backend_t *be, int64_t rows, int64_t classes, const float *logits,
                         const int64_t *labels, const int64_t *idx, int64_t nidx,
                         int64_t *correct);
    int (*argmax_rows)(gnn_backend_t *be, int64_t rows, int64_t classes, const float *x,
                       int64_t *out);
    /* Fill g->dev (device arrays) and g->impl; g->host is set already. */
    int (*graph_prepare)(gnn_backend_t *be, gnn_bgraph_t *g);
    void (*graph_release)(gnn_backend_t *be, gnn_bgraph_t *g);
    /* The device's entry points of def (NULL when it has none). */
    gnn_aggr_forward_fn (*aggr_forward)(const gnn_aggr_def_t *def);
    gnn_aggr_backward_fn (*aggr_backward)(const gnn_aggr_def_t *def);
    /* Fill the device-specific fields of a call (stream). */
    void (*aggr_call)(gnn_backend_t *be, const gnn_bgraph_t *g, gnn_aggr_call_t *call);
    /* Sparse features: fill s->impl from s->host (prepared on the host). */
    int (*sparse_prepare)(gnn_backend_t *be, gnn_bsparse_t *s);
    void (*sparse_release)(gnn_backend_t *be, gnn_bsparse_t *s);
    int (*sparse_dropout)(gnn_backend_t *be, const gnn_bsparse_t *s, float p, uint64_t seed,
                          uint64_t offset, const int64_t *row_id, float *vals);
    int (*sparse_mm)(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                     const float *w, int64_t f, float *t);
    int (*sparse_mm_t)(gnn_backend_t *be, const gnn_bsparse_t *s, const float *vals, int64_t n,
                       const float *dt, int64_t f, float *dw);
    /* SpMM implementation of the built-ins (NULL: the device has one). */
    int (*set_spmm)(gnn_backend_t *be, gnn_spmm_impl_t impl, int deterministic);
    gnn_spmm_impl_t (*spmm_choice)(gnn_backend_t *be, const gnn_bgraph_t *g, gnn_aggr_t aggr,
                                   int64_t f, int backward);
    void (*close)(gnn_backend_t *be);
    /* Graph attention (NULL: not on this device); a is g's host
     * preparation for the slot layout of o. */
    /* The device's entry points of an attention function (NULL: none). */
    gnn_aggr_score_fn (*attn_score)(const gnn_aggr_def_t *def);
    gnn_aggr_score_backward_fn (*attn_score_backward)(const gnn_aggr_def_t *def);
    int (*attn_forward)(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                        const gnn_attn_opts_t *o, const float *x, float *s, float *y);
    int (*attn_backward)(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a,
                         const gnn_attn_opts_t *o, const float *x, const float *alpha,
                         const float *y, const float *dy, float *dx, float *ds);
    int (*elu)(gnn_backend_t *be, int64_t n, const float *x, float *y);
    int (*elu_backward)(gnn_backend_t *be, int64_t n, const float *y, const float *dy, float *dx);
    int (*sparse_opt_step)(gnn_backend_t *be, const gnn_sparse_opt_t *o, int64_t n, int64_t d,
                           const int64_t *rows, int64_t table_rows, const float *g, int64_t ldg,
                           float *w, float *s1, float *s2, int64_t step);
    int (*copy_rows)(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                     int64_t src_rows, const int64_t *idx, float *dst, int64_t ldd);
    int (*mem_available)(gnn_backend_t *be, size_t *bytes);
    int (*scatter_rows)(gnn_backend_t *be, int64_t n, int64_t f, const float *src, int64_t lds,
                        const int64_t *idx, float *dst, int64_t ldd, int64_t dst_rows);
    /* NULL where the backend has none (gnn_be_gemm_rows) */
    int (*gemm_rows)(gnn_backend_t *be, int ta, int64_t m, int64_t n, int64_t k, float alpha,
                     const float *a, int64_t lda, const int64_t *rows, const float *b,
                     int64_t ldb, float beta, float *c, int64_t ldc);
    /* NULL: gnn_be_gemm_pair makes two products */
    int (*gemm_pair)(gnn_backend_t *be, int ta, int64_t m, int64_t m2, int64_t k, const float *a,
                     int64_t lda, const int64_t *rows, int64_t n1, const float *b1, float *c1,
                     int64_t n2, const float *b2, float *c2);
    /* NULL: the GEMMs have one precision (gnn_be_set_tf32) */
    int (*set_tf32)(gnn_backend_t *be, int on);
    /* NULL: bias_add, then relu or elu (gnn_be_bias_act) */
    int (*bias_act)(gnn_backend_t *be, int64_t rows, int64_t cols, float *y, const float *bias,
                    int act);
    int (*bias_act_drop)(gnn_backend_t *be, int64_t rows, int64_t cols, float *y,
                         const float *bias, int act, float p, uint64_t seed, uint64_t offset,
                         const int64_t *row_id);
    int (*relu_drop_backward)(gnn_backend_t *be, int64_t n, float p, const float *y,
                              const float *dy, float *dx);
    /* Device sampling (gnn_be_sampler_create): fill s->impl from s's host
     * fields; sample the checked, distinct seeds under key into b (whose
     * buffers grow through gnn_be_alloc); NULL: not available. */
    int (*sampler_prepare)(gnn_backend_t *be, gnn_bsampler_t *s);
    void (*sampler_release)(gnn_backend_t *be, gnn_bsampler_t *s);
    int (*sample)(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                  uint64_t key, const gnn_bexcl_t *x, gnn_bbatch_t *b);
    /* The sampler's per-node arrays over s->ids_cap nodes (grown, unset). */
    int (*sampler_resize)(gnn_backend_t *be, gnn_bsampler_t *s);
    /* A graph from a CSR in device buffers (g->host has the sizes, no
     * arrays): fill g->dev and g->impl; NULL: the backend's buffers are
     * host memory, prepared as any host CSR. */
    int (*graph_prepare_dev)(gnn_backend_t *be, gnn_bgraph_t *g, const int64_t *indptr,
                             const int64_t *indices, int attn_layout);
    /* gnn_be_softmax_xent_async; NULL: the checked call, its loss stored */
    int (*softmax_xent_async)(gnn_backend_t *be, int64_t rows, int64_t classes,
                              const float *logits, const int64_t *labels, const int64_t *idx,
                              int64_t nidx, double *loss_dev, float *dlogits);
    /* gnn_be_map_host / gnn_be_unmap_host */
    int (*map_host)(gnn_backend_t *be, void *host, size_t bytes, void **dev);
    void (*unmap_host)(gnn_backend_t *be, void *host);
    int (*gather_rows_cached)(gnn_backend_t *be, int64_t n, int64_t f, const float *cache,
                              const int32_t *slot, const float *src, const int64_t *idx,
                              float *dst);
    /* gnn_be_host_alloc / gnn_be_host_free; NULL: gnn_malloc / gnn_free */
    int (*host_alloc)(gnn_backend_t *be, size_t bytes, void **out);
    void (*host_free)(gnn_backend_t *be, void *p);
    /* graph_prepare_dev on the work queue of sampler s (its thread may
     * call it while another drives be); NULL: graph_prepare_dev there. */
    int (*sampler_graph_prepare_dev)(gnn_backend_t *be, gnn_bsampler_t *s, gnn_bgraph_t *g,
                                     const int64_t *indptr, const int64_t *indices,
                                     int attn_layout);
    /* gnn_be_batch_release: mark the end of the queued work in b->fence
     * (made on first use) and set b->fenced, which the next `sample` into
     * b waits for (and clears); batch_fence_free frees such a mark. NULL:
     * work does not outlive its call. */
    int (*batch_release)(gnn_backend_t *be, gnn_bbatch_t *b);
    void (*batch_fence_free)(gnn_backend_t *be, void *fence);
    /* The attention slots of layout k (0: without, 1: with self loops) of
     * a graph made by graph_prepare_dev, as device arrays in *dev, kept
     * with g (made then when attn_layout asked for them, else now on the
     * backend's stream); NULL with graph_prepare_dev. */
    int (*attn_edges_dev)(gnn_backend_t *be, gnn_bgraph_t *g, int k, gnn_aggr_edges_t *dev);
    /* gnn_be_capture_*; NULL: no capture (GNN_EUNSUPPORTED) */
    int (*capture_begin)(gnn_backend_t *be);
    int (*capture_end)(gnn_backend_t *be, void **graph);
    int (*capture_launch)(gnn_backend_t *be, void *graph);
    void (*capture_free)(gnn_backend_t *be, void *graph);
    /* gnn_be_sampler_download: a copy to host memory on sampler s's work
     * queue; NULL: the backend's download (work done when queued). */
    int (*sampler_download)(gnn_backend_t *be, gnn_bsampler_t *s, void *dst, const void *src,
                            size_t bytes);
    /* gnn_be_sampler_download_n: n such copies, waited for once; NULL: one
     * sampler_download (or download) each. */
    int (*sampler_download_n)(gnn_backend_t *be, gnn_bsampler_t *s, int n, void *const *dst,
                              const void *const *src, const size_t *bytes);
    /* gnn_be_mem_peak; NULL: not known (GNN_EUNSUPPORTED) */
    int (*mem_peak)(gnn_backend_t *be, size_t *bytes);
} gnn_backend_ops_t;

/* A batch's excluded edges for the device sampler (host arrays; the
 * table of kernels/sample_steps.h): m rows ascending, row rows[k]'s
 * sources src[start[k], start[k + 1]) ascending and distinct. */
struct gnn_bexcl {
    int64_t m;
    const int64_t *rows, *start, *src;
};

/* A device sampler: the host's view, and the device's (impl). */
struct gnn_bsampler {
    gnn_backend_t *be;
    const gnn_csr_t *graph; /* borrowed */
    int layers;
    int fanout[GNN_BE_SAMPLE_MAX_LAYERS]; /* by hop, 0 = from the seeds */
    unsigned flags; /* what the blocks promise: sorted, and the graph's
                       deduplication and self loops */
    int where;      /* asked: 0 auto, 1 device, 2 host memory */
    int once;       /* gnn_be_sampler_set_once */
    int64_t *key_ids; /* gnn_be_sampler_set_key_ids: a backend buffer, or NULL */
    int32_t *etype;   /* gnn_be_sampler_set_relations: a backend buffer, or NULL */
    const int32_t *etype_mapped; /* ... the host array mapped in place for it (graph read
                                    from host memory on a device), or NULL */
    int n_rels;
    int at;         /* chosen: 1 device, 2 host memory (the implementation sets it) */
    int64_t n_ids;  /* node ids below it: the graph's nodes, or remote.n_ids */
    int64_t ids_cap; /* ... and the most the per-node arrays hold */
    gnn_be_remote_t remote; /* gnn_be_sampler_set_remote (draw NULL: every row held) */
    int hop, called; /* the batch's hop in progress, and whether its hook call was made
                        (1) and done (2), for a failure's hand-over (0: not yet) */
    int64_t *r_rows, *r_idx, *r_off; /* a hop's rows read back, their hook rows, offsets */
    size_t r_rows_cap, r_idx_cap, r_off_cap;
    void *impl;
    /* gnn_be_sample_excluding's table, host memory reused batch to batch */
    int64_t *xpairs, *xrows, *xstart, *xsrc;
    size_t xcap;
};


/* The most buffers gnn_be_trust_buffer vouches for at once: two per
 * layer's exchange plan over ranks (GNN_DIST_MAX_LAYERS 16), and room for
 * a typed graph's and a mini-batch's besides. */
#define GNN__BE_TRUST_BUFFERS 40

struct gnn_backend {
    const gnn_backend_ops_t *ops;
    gnn_backend_kind_t kind;
    char desc[160];
    int host_memory; /* buffers are host memory that callers may use as such */
    int device;   /* CUDA device number, -1 on the CPU */
    void *stream; /* cudaStream_t of a CUDA backend, NULL on the CPU */
    void *impl;
    /* gnn_be_trust_ids: ids known to lie in [0, trust_bound) */
    const int64_t *trust_ids;
    int64_t trust_n, trust_bound;
    /* gnn_be_trust_buffer: buffers of ids trusted until freed */
    struct {
        const int64_t *ids;
        int64_t n, bound;
        int distinct; /* no id repeats either */
    } trust_buf[GNN__BE_TRUST_BUFFERS];
    /* gnn_be_set_step_scalars: read by the dropout and Adam operations
     * (a backend buffer), or NULL */
    const gnn_step_scalars_t *step_scalars;
    int capturing; /* between gnn_be_capture_begin and _end */
    /* gnn_be_capture_rules_begin (cpu-as-gpu): checking a capture's rules
     * (on the thread that began them; another's calls are not noted), and
     * the first operation that broke them */
    int rules;
    char rules_broken[200];
};

/* A step captured on a backend. */
struct gnn_bcapture {
    gnn_backend_t *be;
    void *graph; /* the backend's (a cudaGraphExec_t) */
};

/* A graph's attention slots as gnn_aggr_edges_t, on the host and on the
 * device (the same arrays where the device reads host memory). */
typedef struct {
    gnn_aggr_edges_t host, dev;
    int64_t *hbuf; /* the host arrays, one block */
    void *dbuf;    /* the device's copy (NULL: dev uses hbuf) */
} gnn_be_edges_t;

struct gnn_bgraph {
    gnn_backend_t *be;
    gnn_spmm_graph_t *sg;  /* host preparation: transpose, scale factors */
    gnn_aggr_graph_t host; /* view of sg on the host */
    gnn_aggr_graph_t dev;  /* the same arrays on the device */
    gnn_attn_graph_t *attn[2]; /* attention slots without / with self loops
                                  (made on first use); for a graph made on
                                  the device only a record of the layout
                                  (g and t_slot NULL): edges[k] holds its
                                  device arrays, with counts on the host */
    gnn_be_edges_t *edges[2];  /* the same slots as an attention plug-in
                                  sees them (made on first use by one) */
    void *user;                /* what a caller attached (gnn_be_graph_attach) */
    void (*user_free)(void *);
    void *impl;
};

struct gnn_bsparse {
    gnn_backend_t *be;
    gnn_spfeat_t *host; /* host preparation (by-column index) */
    void *impl;
};

#ifdef __cplusplus
extern "C" {
#endif

/* A backend buffer was freed or moved (gnn_be_free_generation). */
void gnn__be_note_free(void);

/* ids[0, n) lie within the range gnn_be_trust_ids declared, whose ids
 * are below bound: a device-side check of them may be skipped. */
int gnn__be_trusted(const gnn_backend_t *be, const int64_t *ids, int64_t n, int64_t bound);
/* The same within a buffer gnn_be_trust_buffer vouched for as distinct:
 * no id of ids[0, n) repeats either. */
int gnn__be_trusted_distinct(const gnn_backend_t *be, const int64_t *ids, int64_t n,
                             int64_t bound);

/* Make *buf (a buffer of a device batch) a backend buffer of at least n
 * elements of size bytes (contents kept when keep is set), its capacity
 * in elements in *cap. */
int gnn__be_batch_grow(gnn_backend_t *be, void **buf, size_t *cap, size_t n, size_t size,
                       int keep);

/* A hop's rows held elsewhere (gnn_be_sampler_set_remote), on the host:
 * idx[i] the position k of new row i among the hook's rows (-1: held
 * here), its draws src[off[k], off[k + 1]) (and rel, typed), n_rows of
 * them; the arrays are the sampler's (idx, off) and the hook's (src,
 * rel, freed by gnn__be_remote_done). */
typedef struct {
    int64_t nr;
    const int64_t *idx, *off;
    int64_t *src;
    int32_t *rel;
} gnn_bremote_t;
/* Hop h over its n new rows (host ids, frontier order) of a sampler with
 * remote rows, the first thing of each hop (s->hop set): checked (before first_hop, every row held; a row held
 * elsewhere with excluded edges in x, GNN_EUNSUPPORTED unless the holders
 * exclude them), the hook called from first_hop on (s->called kept), its
 * answers checked and laid out in *r (zeroed first; nr 0 and idx NULL
 * before first_hop). */
int gnn__be_remote_hop(gnn_bsampler_t *s, int h, uint64_t key, const gnn_bexcl_t *x,
                       const int64_t *rows, int64_t n, gnn_bremote_t *r);
void gnn__be_remote_done(gnn_bremote_t *r);

/* Device sampling on the CPU backend (cpu/sample_cpu.c). */
int gnn__cpu_sampler_prepare(gnn_backend_t *be, gnn_bsampler_t *s);
void gnn__cpu_sampler_release(gnn_backend_t *be, gnn_bsampler_t *s);
int gnn__cpu_sample(gnn_backend_t *be, gnn_bsampler_t *s, const int64_t *seeds, int64_t n,
                    uint64_t key, const gnn_bexcl_t *x, gnn_bbatch_t *b);
int gnn__cpu_sampler_resize(gnn_backend_t *be, gnn_bsampler_t *s);

/* Open the CPU backend into be (ops, kind, desc). as_gpu: callers are
 * told its buffers are not host memory (gnn_be_host_memory 0), so they
 * take the paths they take for a GPU. */
int gnn__backend_cpu_init(gnn_backend_t *be, int as_gpu);
/* Open CUDA device dev into be; GNN_ENODEV when there is none (CUDA
 * builds only). */
int gnn__backend_cuda_init(gnn_backend_t *be, int dev);
/* Usable CUDA devices (0 when none or no driver; CUDA builds only). */
int gnn__backend_cuda_count(void);
/* 1 when p lies in a live buffer of the cpu-as-gpu backend be (always 1
 * for the other backends, which keep no list). */
int gnn__backend_cpu_owns(const gnn_backend_t *be, const void *p);
/* g's attention slots for layout k (0: without, 1: with self loops) as
 * gnn_aggr_edges_t on the host and the device, a being g's preparation
 * for that layout: made on first use and kept with g. */
int gnn__be_attn_edges(gnn_backend_t *be, gnn_bgraph_t *g, const gnn_attn_graph_t *a, int k,
                       const gnn_be_edges_t **out);

#ifdef __cplusplus
}
#endif

#endif
