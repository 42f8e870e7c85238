/*
 * The layer interface: what a kind of GNN layer (GCN, GraphSAGE, ...)
 * implements so that the model (trainer/model.h), a stack of layers over
 * one flat parameter buffer, can run it.
 *
 * A layer maps its input H (n_src x fin, one row per source of its graph)
 * to its output Z (n_dst x fout) on a graph prepared on the backend. The
 * model owns everything around the layer that every kind shares:
 *   - the flat parameter and gradient buffers (the layer's tensors live at
 *     [L->off, L->off + L->count) of both), so one allreduce averages all;
 *   - dropout of the layer input (D = dropout(H) while training, drawn
 *     from the model's counter-based stream, by row ids when the model is
 *     spread over ranks or fed mini-batches);
 *   - the activation after every layer but the last (ReLU) and its
 *     backward;
 *   - the halo exchange around layer outputs when the model is spread over
 *     ranks (the rows the next layer reads of nodes owned elsewhere);
 *   - the backward's scratch buffers, shared by all layers, so memory does
 *     not grow with depth.
 * The layer owns its parameters' shapes and initialisation, its forward,
 * its backward (parameter gradients, and the gradient of its input when
 * asked) and its per-forward buffers.
 *
 * Adding a kind: one file defining a gnn_layer_kind_t, one line in the
 * registry (trainer/layers/registry.c). Contract of each entry below.
 */
#ifndef GNN_TRAINER_LAYER_H
#define GNN_TRAINER_LAYER_H

#include "kernels/backend.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gnn_layer gnn_layer_t;

/* The activation the model applies after a layer that is not the last. */
typedef enum {
    GNN_LAYER_ACT_RELU = 0, /* backward reads the sign pattern: dropout of the
                               next layer's input may overwrite it in place */
    GNN_LAYER_ACT_ELU = 1   /* backward reads the values: kept as they are */
} gnn_layer_act_t;
typedef struct gnn_layer_env gnn_layer_env_t;
typedef struct gnn_layer_kind gnn_layer_kind_t;

/*
 * One of a layer's tensors as PyTorch Geometric's layer of the same kind
 * names and shapes it (GCNConv, SAGEConv, GATConv, RGCNConv), for
 * --save-model (trainer/export.c).
 */
typedef struct {
    char name[48];     /* within the layer: "lin.weight", "bias", ... */
    int64_t at;        /* offset in the layer's span */
    int ndim;          /* 1 .. 3 */
    int64_t shape[3];  /* the shape written */
    int transpose;     /* stored as shape[1] x shape[0] (fin x fout), written
                          transposed: a torch.nn.Linear weight is fout x fin */
} gnn_layer_tensor_t;

/* Most tensors a layer names: its own and an aggregator's. */
#define GNN_LAYER_MAX_TENSORS (6 + GNN_AGGR_MAX_PARAMS)

/* What the backward needs of the model's shared scratch (see scratch). */
typedef struct {
    int uses_t;       /* the backward reads env->dt (even at 0 bytes: a
                         part with no rows) */
    size_t t_bytes;   /* ... of this size */
    int dx_blockwise; /* the input gradient is formed block by block of
                         env->block_rows rows in env->blk and handed to
                         env->input_grad row block by row block (1), or
                         whole in env->dx (0) */
} gnn_layer_scratch_t;

/*
 * One layer of a model. The model fills the fields up to `state` before
 * kind->setup; the forward fields record the last forward (the backward
 * and the model read them).
 */
struct gnn_layer {
    const gnn_layer_kind_t *kind;
    int index;            /* 0 .. layers - 1 */
    int last;             /* the output layer: its Z are the logits */
    int64_t fin, fout;    /* input and output widths (setup may widen
                             fout: a GAT hidden layer's heads x hidden) */
    const gnn_aggr_def_t *aggr; /* the model's aggregator (NULL for kinds
                                   without one) */
    const gnn_aggr_def_t *attn; /* the attention function of attention
                                   kinds (NULL for the others) */
    int64_t heads;        /* attention heads of this layer (>= 1) */
    int relations;        /* relations of the typed graph (typed kinds) */
    int bases;            /* their shared bases (0: a weight per relation) */
    float attn_dropout, negative_slope; /* attention layers */
    int init_fan_in;      /* weights by gnn_layer_weights: fan-in, else Glorot */
    int64_t off, count;   /* span in the flat buffers (set by the model
                             from kind->setup's count) */
    void *state;          /* the kind's own (kind->setup allocates) */
    /* The last forward. */
    gnn_bgraph_t *graph;
    const float *in;      /* H (x for layer 0; NULL on sparse input) */
    int64_t n_src, n_dst;
    const float *d;       /* D: dropout(H), or H itself without dropout
                             and when the layer draws D's rows (drop_rows) */
    int dropped;          /* D was dropped from H ... */
    int drop_rows;        /* ... and is not formed: the layer reads its rows
                             through env->drop_rows (kind->drops_rows) */
    uint64_t drop_off;    /* ... at this offset of the model's stream */
    float *drop;  size_t drop_bytes; /* D's own buffer, when it has one */
    float *z;     size_t z_bytes;    /* Z (activation applied in place) */
    int trained;          /* the last forward was a training one */
    int sparse;           /* layer 0 read the model's sparse input */
    const int64_t *d_rows; /* layer 0: D's row i is L->d + d_rows[i] * fin
                              (gnn_model_set_input_rows; NULL: rows in order) */
    int act_done;         /* the forward applied the activation after its
                             bias (gnn_layer_bias_out): the model does not */
    int drop_done;        /* ... and the next layer's input dropout
                             (env->out_drop_p): Z holds that layer's D */
    uint64_t drop_off_next; /* ... from this offset of the model's stream */
};

/*
 * Services of the model that a layer calls, and the scratch of the
 * backward. Built by the model for each call.
 */
struct gnn_layer_env {
    gnn_backend_t *be;
    const float *params;  /* flat buffers: the layer reads params + L->off */
    float *grads;         /* ... and overwrites its span of grads */
    int64_t out_rows;     /* Z's buffer must hold this many rows (>= n_dst:
                             room for the next layer's halo rows) */
    /* Sparse input of layer 0 (values already through dropout). */
    const gnn_bsparse_t *sp;
    const float *sp_vals;
    /* Backward scratch (as scratch asked). */
    float *dt;            /* t_bytes */
    float *blk;           /* block_rows x fin, for a blockwise input gradient */
    int64_t block_rows;
    float *dx;            /* n_src x fin, for a whole input gradient */
    /*
     * Hand rows [r0, r0 + nr) of the gradient of D (g, nr x fin) to the
     * model, which takes them through dropout's backward and the
     * activation's backward of the layer below into dst (where row r0 of
     * the input gradient goes; g is clobbered, g == dst is allowed). For a
     * blockwise gradient dst is inside L->in itself (the layer below's
     * output, which the backward does not read again), written block by
     * block after each block's activation pattern is read.
     */
    int (*input_grad)(gnn_layer_env_t *env, gnn_layer_t *L, int64_t r0, int64_t nr, float *g,
                      float *dst);
    /* Rows [r0, r0 + nr) of D = dropout(L->in) into dst (nr x fin), the
     * same values the model would have formed: for a layer with
     * L->drop_rows, which reads D block by block of rows. */
    int (*drop_rows)(gnn_layer_env_t *env, gnn_layer_t *L, int64_t r0, int64_t nr, float *dst);
    /* A generator key for dropout inside a layer (attention weights),
     * new at every call: the model's stream advances by one, so
     * checkpoints replay it, and every rank draws the same key. It is
     * gnn_rng_key_at(*base, *at) of the stream position it took (both
     * given where not NULL: gnn_attn_opts_t's keyed draws). */
    uint64_t (*dropout_key)(gnn_layer_env_t *env, uint64_t *base, uint64_t *at);
    /* Global ids of the layer's input rows (backend, n_src) and the nodes
     * they range over, for masks that follow a node or an edge wherever
     * it is computed; NULL: the rows are the graph's nodes themselves. */
    const int64_t *row_id;
    int64_t n_global;
    /* A buffer of at least bytes for what a forward needs only while it
     * runs (valid until the forward returns): the model's backward
     * scratch (dt), so it costs no memory beside it. */
    int (*fwd_scratch)(gnn_layer_env_t *env, size_t bytes, float **out);
    void *model;
    /* The activation the model applies to Z after this layer (gnn_act_t:
     * GNN_ACT_NONE after the last): a layer whose forward ends with its
     * bias adds both in one pass (gnn_layer_bias_out). */
    int out_act;
    /* When out_drop_p > 0, that pass also applies the next layer's input
     * dropout (drop probability out_drop_p, the model's key, counters from
     * out_drop_off, by out_drop_ids when set): the model asks for it where
     * the next layer would drop Z in place. */
    float out_drop_p;
    uint64_t out_drop_seed, out_drop_off;
    const int64_t *out_drop_ids;
};

struct gnn_layer_kind {
    const char *name;          /* --model NAME */
    const char *default_aggr;  /* aggregator when --aggr is not given; NULL:
                                  the kind takes none (attention) */
    int any_aggr;              /* takes any registered aggregator (0: only
                                  default_aggr) */
    int square_sources;        /* needs n_dst <= n_src with the destinations
                                  first among the sources (a self term) */
    gnn_layer_act_t act;       /* activation after the layer (not the last) */
    int attention;             /* reads heads, attn_dropout and negative_slope
                                  (checkpoints record them) */
    int dropout_keys;          /* env->dropout_key calls of a training forward
                                  when the layer's attn_dropout > 0 */
    int typed;                 /* reads the relations of its graph (trainer/typed.h),
                                  so needs a typed graph (R-GCN) */
    int drops_rows;            /* reads D only by blocks of rows through
                                  env->drop_rows: with dropout on an input
                                  the model may not overwrite, it forms no
                                  n_src x fin copy of D (drop_target unused) */
    int reads_halo;            /* reads input rows of sources beyond its
                                  destinations: spread over ranks, the model
                                  exchanges the halo rows of its input before
                                  it (and their gradients back after its
                                  backward); 0 for a layer of each node alone */
    /*
     * Set L->count (parameters of the layer from its widths and aggregator)
     * and allocate L->state. 0, or GNN_ENOMEM / GNN_EINVAL.
     */
    int (*setup)(gnn_layer_t *L);
    /* Initial parameters into w (the layer's span of a host copy of the
     * flat buffer), drawn from the counter-based generator with key seed
     * at counters L->off + (offset within the span): the same seed gives
     * the same parameters on every backend and at every depth. */
    void (*init)(const gnn_layer_t *L, float *w, uint64_t seed);
    /* Can layer 0 read a sparse input matrix instead of dense rows? 0, or
     * GNN_EUNSUPPORTED with a message saying why not. */
    int (*sparse_check)(const gnn_layer_t *L);
    /* Can layer 0 (set up) read D's rows where they lie, through L->d_rows,
     * forward and backward, forming no input gradient? NULL: no. */
    int (*takes_rows)(const gnn_layer_t *L);
    /*
     * Z = layer(D) on graph L->graph, bias included, no activation: D is
     * L->d (or, with L->sparse, env->sp with values env->sp_vals), shapes in
     * L. Z goes to L->z, sized by the layer to env->out_rows x fout. Keeps
     * what backward reads. Called by the model after it set the forward
     * fields of L and dropped the input; drop_target is asked first.
     */
    int (*forward)(gnn_layer_t *L, gnn_layer_env_t *env);
    /*
     * Where D goes when the input of layer 0 is dropped: the layer's own
     * buffer sized n_src x fin (L->drop) or, when only the forward reads D,
     * another of the layer's buffers it overwrites after reading D. Above
     * layer 0 the model drops in place (H is the layer below's output).
     */
    int (*drop_target)(gnn_layer_t *L, gnn_layer_env_t *env, float **dst);
    /* What backward needs of env's scratch; input_grad: whether it will be
     * asked for its input gradient (not for layer 0). */
    void (*scratch)(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s);
    /*
     * After a training forward: dz (n_dst x fout, the gradient of Z with
     * the activation's backward applied; may be clobbered) -> the gradients
     * of the layer's parameters (overwriting its span of env->grads) and,
     * when dx is not NULL, the gradient of the layer's input H through
     * env->input_grad, *dx set to the buffer holding it (n_src x fin).
     */
    int (*backward)(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx);
    /* The layer's tensors (at most GNN_LAYER_MAX_TENSORS) into t, covering
     * its span: their count. */
    int (*tensors)(const gnn_layer_t *L, gnn_layer_tensor_t *t);
    /* Bytes of the backend buffers in L->state. */
    size_t (*state_bytes)(const gnn_layer_t *L);
    /* Free L->state's buffers and L->state (backend be). */
    void (*free)(gnn_layer_t *L, gnn_backend_t *be);
};

/* The built-in kinds (trainer/layers/gcn.c, sage.c, gat.c, rgcn.c). */
extern const gnn_layer_kind_t gnn_layer_gcn;
extern const gnn_layer_kind_t gnn_layer_sage;
extern const gnn_layer_kind_t gnn_layer_gat;
extern const gnn_layer_kind_t gnn_layer_rgcn;

/* The registered kinds (trainer/layers/registry.c), by --model name: 0 with *out,
 * or GNN_EINVAL "unknown model "NAME" (expected gcn, sage or gat)". */
int gnn_layer_kind_find(const char *name, const gnn_layer_kind_t **out);
/* The kinds' names as a list for messages: "gcn or sage". */
void gnn_layer_kind_list(char *buf, size_t size);
/* Number of registered kinds and the i-th (NULL out of range). */
int gnn_layer_kind_count(void);
const gnn_layer_kind_t *gnn_layer_kind_at(int i);

/* Make *buf a backend buffer of at least bytes (contents not kept; kept
 * as is when already large enough). A buffer that has to grow again gets
 * a quarter more than asked (mini-batches of varying size reallocate a
 * few times, not at every new largest batch: on a GPU each reallocation
 * waits for the device). For layers and the model. */
int gnn_layer_ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes);

/* The end of a forward: Z (nd x fout) += b and the activation the model
 * applies after the layer (env->out_act), and the next layer's input
 * dropout where the model asks for it (env->out_drop_p), in one pass over
 * Z; marks them done (L->act_done, L->drop_done) so that the model leaves
 * Z as it is. The same values as the bias, then the model's activation,
 * then its dropout. */
static inline int gnn_layer_bias_out(gnn_layer_t *L, gnn_layer_env_t *env, int64_t nd,
                                     int64_t fout, const float *b)
{
    int rc = env->out_drop_p > 0.0f
                 ? gnn_be_bias_act_drop(env->be, nd, fout, L->z, b, env->out_act,
                                        env->out_drop_p, env->out_drop_seed, env->out_drop_off,
                                        env->out_drop_ids)
                 : gnn_be_bias_act(env->be, nd, fout, L->z, b, env->out_act);
    if (rc == 0) {
        L->act_done = env->out_act != GNN_ACT_NONE;
        L->drop_done = env->out_drop_p > 0.0f;
    }
    return rc;
}

/* Tensor t as a matrix (ndim 2) or vector (cols 0: ndim 1) at offset at
 * of the layer's span, shape as written (transposed when transpose). */
gnn_layer_tensor_t gnn_layer_tensor(const char *name, int64_t at, int64_t rows, int64_t cols,
                                    int transpose);

/* The n tensors an aggregator declares, from offset at, named
 * prefix + their declared names ("aggr.theta"), into t: how many. */
int gnn_layer_tensors_declared(const char *prefix, int64_t at, const gnn_aggr_param_t *ps,
                               int n, gnn_layer_tensor_t *t);

/* Bytes of a rows x cols float matrix. */
static inline size_t gnn_layer_fbytes(int64_t rows, int64_t cols)
{
    return (size_t)rows * (size_t)cols * sizeof(float);
}

/* Glorot-uniform fill of the fin x fout matrix w at offset `at` of the
 * layer's span (counters L->off + at ...): uniform in
 * +-sqrt(6 / (fin + fout)). */
void gnn_layer_glorot(const gnn_layer_t *L, float *w, int64_t at, int64_t fin, int64_t fout,
                      uint64_t seed);
/* A weight matrix's fill as the model asks (L->init_fan_in): uniform in
 * +-1/sqrt(fin), torch.nn.Linear's default, or Glorot; the same counters
 * either way. */
void gnn_layer_weights(const gnn_layer_t *L, float *w, int64_t at, int64_t fin, int64_t fout,
                       uint64_t seed);

/* The n tensors an aggregator or attention function declares
 * (gnn_aggr_params), back to back from offset `at` of the layer's span,
 * initialised as each asks (w zeroed before). */
void gnn_layer_init_declared(const gnn_layer_t *L, float *w, int64_t at,
                             const gnn_aggr_param_t *ps, int n, uint64_t seed);

#endif
