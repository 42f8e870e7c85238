/*
 * One Adam step of one parameter, shared by the CPU kernel and the CUDA
 * kernel of gnn_adam (kernels/dense.h) so both apply the same formula in
 * the same order. The per-call constants come from gnn_adam_consts.
 */
#ifndef GNN_KERNELS_ADAM_STEP_H
#define GNN_KERNELS_ADAM_STEP_H

#include "kernels/dense.h"
#include "graph/base/rng.h" /* GNN_HOSTDEV */

#include <math.h>
#include <stdint.h>

/* The constants of one call: bias corrections in double, once. */
typedef struct {
    float b1, b2, eps, wd;
    float step_size; /* lr / (1 - b1^step) */
    float bc2_sqrt;  /* sqrt(1 - b2^step) */
    float shrink;    /* 1 - lr * wd (AdamW) */
    int decoupled;
} gnn_adam_consts_t;

static inline gnn_adam_consts_t gnn_adam_consts(const gnn_adam_opts_t *o, int64_t step)
{
    gnn_adam_consts_t c;
    c.b1 = o->beta1;
    c.b2 = o->beta2;
    c.eps = o->eps;
    c.wd = o->weight_decay;
    c.step_size = (float)((double)o->lr / (1.0 - pow((double)o->beta1, (double)step)));
    c.bc2_sqrt = (float)sqrt(1.0 - pow((double)o->beta2, (double)step));
    c.shrink = (float)(1.0 - (double)o->lr * (double)o->weight_decay);
    c.decoupled = o->decoupled;
    return c;
}

/* gnn_adam over n parameters with the constants c (the CPU kernel; the
 * step's own, or a captured step's: gnn_be_set_step_scalars). */
#ifdef __cplusplus
extern "C" {
#endif
int gnn__adam_apply(int64_t n, float *w, const float *g, float *m, float *v,
                    const gnn_adam_consts_t *c);
#ifdef __cplusplus
}
#endif

/* w, m, v of one parameter after one step with gradient g, with the weight
 * decay decoupled or not (a constant where the caller's loop should not
 * branch). */
static inline GNN_HOSTDEV void gnn_adam_elem_as(const gnn_adam_consts_t *c, int decoupled,
                                                float *w, float g, float *m, float *v)
{
    float wi = *w, gi = g;
    if (decoupled)
        wi *= c->shrink;
    else
        gi += c->wd * wi;
    float mi = c->b1 * *m + (1.0f - c->b1) * gi;
    float vi = c->b2 * *v + (1.0f - c->b2) * gi * gi;
    *m = mi;
    *v = vi;
    *w = wi - c->step_size * mi / (sqrtf(vi) / c->bc2_sqrt + c->eps);
}

/* w, m, v of one parameter after one step with gradient g. */
static inline GNN_HOSTDEV void gnn_adam_elem(const gnn_adam_consts_t *c, float *w, float g,
                                             float *m, float *v)
{
    gnn_adam_elem_as(c, c->decoupled, w, g, m, v);
}

/* The constants of one row-sparse step (gnn_sparse_opt_step). */
typedef struct {
    int adagrad;
    float b1, b2, eps, lr;
    float step_size; /* adam: lr sqrt(1 - b2^step) / (1 - b1^step) */
} gnn_sparse_consts_t;

static inline gnn_sparse_consts_t gnn_sparse_consts(const gnn_sparse_opt_t *o, int64_t step)
{
    gnn_sparse_consts_t c;
    c.adagrad = o->kind == GNN_SPARSE_ADAGRAD;
    c.b1 = o->beta1;
    c.b2 = o->beta2;
    c.eps = o->eps;
    c.lr = o->lr;
    c.step_size = (float)((double)o->lr * sqrt(1.0 - pow((double)o->beta2, (double)step)) /
                          (1.0 - pow((double)o->beta1, (double)step)));
    return c;
}

/* One element of a row-sparse step (s2 unused by adagrad). */
static inline GNN_HOSTDEV void gnn_sparse_elem(const gnn_sparse_consts_t *c, float *w, float g,
                                               float *s1, float *s2)
{
    if (c->adagrad) {
        float s = *s1 + g * g;
        *s1 = s;
        *w -= c->lr * g / (sqrtf(s) + c->eps);
        return;
    }
    float m = c->b1 * *s1 + (1.0f - c->b1) * g;
    float v = c->b2 * *s2 + (1.0f - c->b2) * g * g;
    *s1 = m;
    *s2 = v;
    *w -= c->step_size * m / (sqrtf(v) + c->eps);
}

#endif
