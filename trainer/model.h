/*
 * A GNN model: a stack of layers (trainer/layer.h: GCN, GraphSAGE, ...)
 * with explicit forward and backward passes on a compute backend
 * (kernels/backend.h).
 *
 * Parameters, their gradients and the two Adam moments each live in one
 * flat backend buffer (so a gradient average is one allreduce), laid out
 * layer after layer, each layer's tensors as its kind lays them out:
 *   GCN   W[l] (fin x fout), b[l] (fout)
 *   SAGE  W_neigh[l] (fin x fout), W_self[l] (fin x fout), b[l] (fout)
 *   RGCN  W_self[l] (fin x fout), W_r[l] per relation or bases and their
 *         coefficients (trainer/layers/rgcn.c), b[l] (fout)
 * with fin/fout = in_dim, hidden, ..., classes. Layer l computes, from its
 * input H (n_src x fin), with D = dropout(H) while training:
 *   GCN   Z = A_gcn D W + b     (A_gcn = D^-1/2 (A+I) D^-1/2, the built-in
 *                                gcn aggregator; the product is taken in the
 *                                cheaper order: aggregate the narrower side)
 *   SAGE  Z = D[:n_dst] W_self + aggr(D) W_neigh + b
 * and H' = act(Z) except after the last layer, whose Z are the logits
 * (act: the layer kind's, ReLU for GCN and SAGE, ELU for GAT).
 * The model owns what all layers share: the flat buffers, input dropout,
 * the activation, the halo exchange and the backward's scratch.
 *
 * Dropout masks come from the counter-based generator: each dropout call
 * takes the next n counters of the model's stream (seed, offset), so a run
 * is reproduced exactly from (seed, offset), which checkpoints store.
 *
 * The model runs on one prepared graph per layer (the same graph for every
 * layer in full-graph training; the blocks of a sampled mini-batch).
 */
#ifndef GNN_TRAINER_MODEL_H
#define GNN_TRAINER_MODEL_H

#include "kernels/backend.h"
#include "trainer/layer.h"

#include <stdint.h>

/* A model's kind: the kind of each of its layers (the registry of
 * trainer/layer.h). The built-ins by name: */
typedef const gnn_layer_kind_t *gnn_model_kind_t;
#define GNN_MODEL_GCN (&gnn_layer_gcn)
#define GNN_MODEL_SAGE (&gnn_layer_sage)
#define GNN_MODEL_GAT (&gnn_layer_gat)
#define GNN_MODEL_RGCN (&gnn_layer_rgcn)

/* The kind called name ("gcn", "sage", ...); GNN_EINVAL naming the valid
 * ones otherwise. */
int gnn_model_kind_from_name(const char *name, gnn_model_kind_t *kind);
const char *gnn_model_kind_name(gnn_model_kind_t kind);

#define GNN_MODEL_MAX_LAYERS 16

typedef struct {
    gnn_model_kind_t kind;
    int layers;          /* 1 .. GNN_MODEL_MAX_LAYERS */
    int64_t in_dim;      /* input feature width */
    int64_t hidden;      /* width of every hidden layer */
    int64_t classes;     /* output width */
    float dropout;       /* drop probability on every layer's input, [0, 1) */
    const gnn_aggr_def_t *aggr; /* neighbour aggregator of kinds that take
                                   any (SAGE); the others' own (GCN: the
                                   built-in gcn) is set by gnn_model_create;
                                   none for kinds that aggregate otherwise
                                   (GAT: attention) */
    /* Attention layers (GAT); 0 values take the defaults 1, 1, 0, 0.2 and
     * the built-in attention function gat. */
    int heads;           /* heads of every hidden layer (concatenated) */
    int out_heads;       /* heads of the output layer (averaged) */
    float attn_dropout;  /* drop probability of each attention weight */
    float negative_slope; /* of the score's LeakyReLU */
    const gnn_aggr_def_t *attention; /* the attention function (registry) */
    /* Parameters after the layers' that the model does not use itself (a
     * task's: link prediction's MLP decoder), trained, averaged and
     * checkpointed with the rest; extra_init draws them on the host. */
    int64_t extra;
    void (*extra_init)(void *ctx, float *w, int64_t n, uint64_t seed);
    void *extra_ctx;
    /* Typed layers (R-GCN): the graph's relations and their shared bases
     * (0: one weight per relation). */
    int relations;
    int num_bases;
    /* Weights uniform in +-1/sqrt(fan_in) (torch.nn.Linear's); 0: Glorot,
     * +-sqrt(6/(fan_in+fan_out)). */
    int init_fan_in;
} gnn_model_config_t;

typedef struct gnn_model gnn_model_t;

/*
 * A model on backend be with parameters initialised from seed (Glorot or
 * fan-in uniform weights, zero biases; drawn on the host, so the same seed gives
 * the same parameters on every backend). reg supplies the gcn aggregator.
 * Errors: GNN_EINVAL for a bad configuration (message names the field),
 * GNN_ENOMEM / backend errors.
 */
int gnn_model_create(gnn_backend_t *be, const gnn_aggr_registry_t *reg,
                     const gnn_model_config_t *cfg, uint64_t seed, gnn_model_t **out);
void gnn_model_free(gnn_model_t *m);
const gnn_model_config_t *gnn_model_config(const gnn_model_t *m);

/* Flat parameter count and the backend buffers (n_params floats each). */
int64_t gnn_model_n_params(const gnn_model_t *m);
float *gnn_model_params(gnn_model_t *m);
float *gnn_model_grads(gnn_model_t *m);
/* The extra parameters occupy [offset, offset + cfg.extra) of the flat buffers. */
int64_t gnn_model_extra_offset(const gnn_model_t *m);
/* Parameters of layer l occupy [offset, offset + count) of the flat buffers. */
void gnn_model_layer_span(const gnn_model_t *m, int l, int64_t *offset, int64_t *count);
/* Layer l's tensors as PyTorch Geometric names them (trainer/layer.h),
 * offsets within its span: their count (t holds GNN_LAYER_MAX_TENSORS). */
int gnn_model_layer_tensors(const gnn_model_t *m, int l, gnn_layer_tensor_t *t);
/* Input and output widths of layer l (a GAT hidden layer's output is its
 * heads concatenated). */
void gnn_model_layer_width(const gnn_model_t *m, int l, int64_t *fin, int64_t *fout);

/*
 * Forward pass. graphs[l] is the graph of layer l (n_dst of layer l equals
 * n_src of layer l + 1; full-graph training passes the same graph L
 * times); x is the input (n_src of layer 0 x in_dim, a backend buffer, not
 * modified). training != 0 applies dropout and keeps what backward needs.
 * The logits (n_dst of the last layer x classes) stay valid until the next
 * forward; *logits points at them. Buffers are allocated on first use and
 * reused while the shapes stay the same.
 */
int gnn_model_forward(gnn_model_t *m, gnn_bgraph_t *const *graphs, const float *x, int training,
                      const float **logits);
/*
 * Feed layer 0 from the sparse matrix s (rows: the sources of layer 0's
 * graph, cols: in_dim) instead of a dense x: forward's x is then ignored.
 * Dropout draws the same mask as on the dense matrix (by row id when
 * gnn_model_set_row_ids gave them: a mini-batch's rows of the feature
 * table), so the function computed is the same; the work drops to the
 * stored entries. Needs, for SAGE, a linear aggregator (the built-ins sum,
 * mean, gcn: aggr(D) W = aggr(D W) is what makes the sparse order
 * possible; the layer kind's sparse_check); GNN_EUNSUPPORTED otherwise.
 * A forward whose layer-0 graph has another number of sources than s has
 * rows gives GNN_EINVAL. s NULL returns to dense input. s is borrowed.
 */
int gnn_model_set_sparse_input(gnn_model_t *m, const gnn_bsparse_t *s);

/*
 * Layer l alone, without dropout (layer-wise inference): *out (n_dst of g
 * x the layer's output width, a backend buffer of the model, valid until
 * the next forward or layer call) = layer l of in (n_src of g x the
 * layer's input width), ReLU'd except on the last layer. Layer 0 reads the
 * dense in, never the sparse input. Invalidates the last training forward
 * (a backward must follow a new one). GNN_EINVAL for a bad layer or shape.
 */
int gnn_model_layer_infer(gnn_model_t *m, int l, gnn_bgraph_t *g, const float *in,
                          const float **out);

/* The input of the last layer (its ReLU'd hidden rows, n_src of the last
 * layer x fin) after a forward; for --save-predictions. NULL for a
 * one-layer model fed sparse input (the input is then the features). */
const float *gnn_model_last_hidden(const gnn_model_t *m, int64_t *rows, int64_t *cols);

/*
 * Backward pass after a training forward: dlogits (same shape as the
 * logits, a backend buffer; clobbered) -> gradients of every parameter,
 * overwritten in the flat gradient buffer.
 */
int gnn_model_backward(gnn_model_t *m, float *dlogits);

/*
 * Whether the backward also forms the gradient of the model's input
 * (learnable input rows, trainer/embed.h); off by default. With it on, the
 * input x a training forward read may be overwritten by the backward
 * (the gradient is formed block by block in place where the first layer
 * multiplies first), and after each backward gnn_model_input_grad gives
 * the gradient (n_src of layer 0 x in_dim, a backend buffer: x itself or
 * the model's scratch, valid until the next forward). Not with sparse
 * input (GNN_EUNSUPPORTED).
 */
int gnn_model_set_input_grad(gnn_model_t *m, int on);
float *gnn_model_input_grad(gnn_model_t *m);

/*
 * A model spread over ranks, each holding part of the graph (full-graph
 * distributed training, trainer/dist.h). Every layer's graph then has the
 * rank's n_dst owned nodes as destinations and n_rows sources: the owned
 * nodes first, then halo nodes owned elsewhere. After each layer but the
 * last (whose next layer reads halo rows: every GCN and SAGE layer),
 * forward fills the halo rows of its output (rows [n_dst, n_rows),
 * width f) from their owners; in the backward pass, backward adds the
 * gradients of those rows into their owners' rows (the owners' part of
 * the sum). Dropout draws element (r, j) of a layer input from counter
 * offset + row_id[r] * fin + j and advances by n_global * fin per layer,
 * as one process holding all n_global rows does, so every rank draws the
 * same mask for a node and the ranks together compute what one process
 * computes. row_id: backend int64 array of n_rows ids in [0, n_global).
 * Not with sparse input (GNN_EUNSUPPORTED). Both callbacks return 0 or a
 * GNN_E code; the pointers they get are backend buffers. Every exchange is
 * made once per forward and once per backward, also on a rank with no rows
 * (n_rows 0: an empty part), since the others wait for it.
 */
typedef struct {
    void *ctx;
    /* Exchange k: around the output of layer k (k < layers - 1); training:
     * a training step's forward, which may move only the rows its loss
     * reads (the others are then set to 0). */
    int (*forward)(void *ctx, int k, int training, float *x, int64_t f);
    int (*backward)(void *ctx, int k, float *g, int64_t f);
    int64_t n_rows;
    const int64_t *row_id;
    int64_t n_global;
} gnn_model_halo_t;

/* Set (h copied) or clear (h NULL) the halo exchange. */
int gnn_model_set_halo(gnn_model_t *m, const gnn_model_halo_t *h);

/*
 * Dropout by row ids without a halo exchange (a mini-batch whose rows are
 * nodes of a graph of n_global): the masks are drawn as with the halo,
 * from offset + row_id[r] * fin + j, advancing n_global * fin per layer,
 * so a node gets the same mask whichever rank's batch holds it. row_id:
 * backend int64, one id per row of the layer-0 input (every layer's input
 * rows are a prefix of them), in [0, n_global); NULL clears it. The halo,
 * when set, takes precedence.
 */
int gnn_model_set_row_ids(gnn_model_t *m, const int64_t *row_id, int64_t n_global);

/*
 * Layer 0 reads its input rows from a table where they lie: forward's x is
 * then the table (in_dim wide, host memory) and input row i is x + rows[i] *
 * in_dim (rows borrowed, one per source of layer 0's graph; NULL: x is the
 * input itself). The same results as on the gathered rows, without forming
 * them. Only where gnn_model_input_takes_rows says so (a gcn or sage layer
 * 0 that multiplies before aggregating, on a host backend with
 * gnn_be_gemm_rows, without input dropout, sparse input or input
 * gradient); GNN_EUNSUPPORTED otherwise. Layer-wise inference ignores it.
 */
int gnn_model_input_takes_rows(const gnn_model_t *m);
int gnn_model_set_input_rows(gnn_model_t *m, const int64_t *rows);
/* How far one training forward advances the dropout stream with row ids
 * over n_global nodes: n_global times the input widths of the layers that
 * drop, plus the keys of dropout inside layers (attention; 0 without any
 * dropout). */
uint64_t gnn_model_dropout_span(const gnn_model_t *m, int64_t n_global);

/* Dropout stream position (for checkpoints). */
uint64_t gnn_model_rng_offset(const gnn_model_t *m);
void gnn_model_set_rng(gnn_model_t *m, uint64_t seed, uint64_t offset);
/* Move the stream to offset, the seed kept. */
void gnn_model_set_rng_offset(gnn_model_t *m, uint64_t offset);
/* The generator key the dropout masks are drawn with (derived from the
 * seed): element i of a dropout call at offset o is kept when
 * gnn_rng_keep(key, o + i, p). Layer l's call follows layer l - 1's. */
uint64_t gnn_model_dropout_key(const gnn_model_t *m);

/* Rows per block when the backward forms an input gradient block by block,
 * and at most per block of a dropped input a layer reads by rows (GAT)
 * (default 16384, and on a GPU as many rows as the input gradient's
 * scratch holds, up to 1 GiB and an eighth of the free memory: usually all
 * of them; the result does not depend on
 * it beyond rounding). For tests: fixes the count on every device. */
void gnn_model_set_block_rows(gnn_model_t *m, int64_t rows);

/* Bytes held on the backend by activations and workspaces (not params). */
size_t gnn_model_activation_bytes(const gnn_model_t *m);

#endif
