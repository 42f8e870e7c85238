/*
 * Graph convolution: the aggregate-and-multiply core that GCN
 * (trainer/layers/gcn.c) and GraphSAGE (trainer/layers/sage.c) share.
 *
 * With D the (dropped) input, layer parameters W (fin x fout), an optional
 * self weight W_self (fin x fout) and a bias b (fout), it computes
 *   Z = aggr(D) W (+ D[:n_dst] W_self) + b
 * multiplying first (Z = aggr(D W) ...) when the output is narrower and
 * the aggregator is linear (gnn_aggr_linear), which gives the same
 * function for less work. Layer 0 may read a sparse input matrix S
 * instead (then always multiplied first: aggr(S W)).
 *
 * A kind built on it fills a gnn_conv_layout_t in its setup and calls
 * gnn_conv_setup; the other entries of its gnn_layer_kind_t are the
 * gnn_conv_* functions below (GNN_CONV_ENTRIES).
 */
#ifndef GNN_TRAINER_LAYERS_CONV_H
#define GNN_TRAINER_LAYERS_CONV_H

#include "trainer/layer.h"

/* Where the tensors sit in the layer's span (offsets from L->off). */
typedef struct {
    int64_t w_off;   /* W (the neighbours' weight) */
    int64_t ws_off;  /* W_self, or -1: no self term */
    int64_t b_off;   /* b */
    /* Their names in PyTorch Geometric's layer of the kind (--save-model). */
    const char *w_name, *ws_name, *b_name;
} gnn_conv_layout_t;

/* The functions below are the gnn_layer_kind_t entries of the same names
 * (trainer/layer.h states what each must do). */

/* L->state for layout lay (L->count set by the caller); GNN_ENOMEM. */
int gnn_conv_setup(gnn_layer_t *L, const gnn_conv_layout_t *lay);
/* Glorot weights, zero biases (w: the layer's span, zeroed). */
void gnn_conv_init(const gnn_layer_t *L, float *w, uint64_t seed);
int gnn_conv_sparse_check(const gnn_layer_t *L);
int gnn_conv_takes_rows(const gnn_layer_t *L);
int gnn_conv_drop_target(gnn_layer_t *L, gnn_layer_env_t *env, float **dst);
int gnn_conv_forward(gnn_layer_t *L, gnn_layer_env_t *env);
void gnn_conv_scratch(const gnn_layer_t *L, int input_grad, gnn_layer_scratch_t *s);
int gnn_conv_backward(gnn_layer_t *L, gnn_layer_env_t *env, float *dz, float **dx);
int gnn_conv_tensors(const gnn_layer_t *L, gnn_layer_tensor_t *t);
size_t gnn_conv_state_bytes(const gnn_layer_t *L);
void gnn_conv_free(gnn_layer_t *L, gnn_backend_t *be);

/* The entries of a gnn_layer_kind_t that a kind built on the core takes
 * as they are (all but its name, aggregators and setup). */
#define GNN_CONV_ENTRIES                         \
    .init = gnn_conv_init,                       \
    .sparse_check = gnn_conv_sparse_check,       \
    .takes_rows = gnn_conv_takes_rows,           \
    .forward = gnn_conv_forward,                 \
    .drop_target = gnn_conv_drop_target,         \
    .scratch = gnn_conv_scratch,                 \
    .backward = gnn_conv_backward,               \
    .tensors = gnn_conv_tensors,                 \
    .state_bytes = gnn_conv_state_bytes,         \
    .free = gnn_conv_free

#endif
