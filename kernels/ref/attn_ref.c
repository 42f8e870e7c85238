/*
 * Reference graph attention (kernels/ref/attn_ref.h).
 */
#include "kernels/ref/attn_ref.h"

#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <math.h>
#include <string.h>

/* Slots of row v: [*first, *first + *n), the added self loop last. */
static void row(const gnn_csr_t *c, const gnn_attn_opts_t *o, gnn_vid_t v, gnn_eid_t *first,
                gnn_eid_t *n)
{
    *first = c->indptr[v] + (o->self_loop ? v : 0);
    *n = c->indptr[v + 1] - c->indptr[v] + (o->self_loop ? 1 : 0);
}

/* Source of slot i of row v; -1 for a stored self loop left out. */
static gnn_vid_t src(const gnn_csr_t *c, const gnn_attn_opts_t *o, gnn_vid_t v, gnn_eid_t i,
                     gnn_eid_t n)
{
    if (o->self_loop && i == n - 1) return v;
    gnn_vid_t u = c->indices[c->indptr[v] + i];
    return o->self_loop && u == v ? -1 : u;
}

static double keep(const gnn_csr_t *c, const gnn_attn_opts_t *o, gnn_vid_t u, gnn_vid_t v,
                   int64_t h)
{
    if (!(o->dropout > 0.0f) || u < 0) return 1.0;
    uint64_t n = o->ids ? (uint64_t)o->n_ids : (uint64_t)c->n_cols;
    uint64_t gu = o->ids ? (uint64_t)o->ids[u] : (uint64_t)u;
    uint64_t gv = o->ids ? (uint64_t)o->ids[v] : (uint64_t)v;
    int k = gnn_rng_keep(o->seed, o->offset + (gv * n + gu) * (uint64_t)o->heads + (uint64_t)h,
                         o->dropout);
    return k ? 1.0 / (1.0 - (double)o->dropout) : 0.0;
}

int gnn_attn_ref_gat_score(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *el,
                           const double *er, double *s)
{
    int64_t H = o->heads;
    for (gnn_vid_t v = 0; v < c->n_rows; v++) {
        gnn_eid_t first, n;
        row(c, o, v, &first, &n);
        for (gnn_eid_t i = 0; i < n; i++) {
            gnn_vid_t u = src(c, o, v, i, n);
            for (int64_t h = 0; h < H; h++) {
                double z = u < 0 ? 0.0 : el[u * H + h] + er[v * H + h];
                s[(first + i) * H + h] = z > 0.0 ? z : z * (double)o->negative_slope;
            }
        }
    }
    return 0;
}

int gnn_attn_ref_forward(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *x,
                         const double *s, double *alpha, double *y)
{
    int64_t H = o->heads, F = o->f, W = H * F;
    memset(y, 0, (size_t)(c->n_rows * W) * sizeof *y);
    for (gnn_vid_t v = 0; v < c->n_rows; v++) {
        gnn_eid_t first, n;
        row(c, o, v, &first, &n);
        for (int64_t h = 0; h < H; h++) {
            double m = -INFINITY, sum = 0.0;
            for (gnn_eid_t i = 0; i < n; i++)
                if (src(c, o, v, i, n) >= 0) m = fmax(m, s[(first + i) * H + h]);
            for (gnn_eid_t i = 0; i < n; i++)
                if (src(c, o, v, i, n) >= 0) sum += exp(s[(first + i) * H + h] - m);
            for (gnn_eid_t i = 0; i < n; i++) {
                gnn_vid_t u = src(c, o, v, i, n);
                double a = u < 0 ? 0.0 : exp(s[(first + i) * H + h] - m) / sum;
                alpha[(first + i) * H + h] = a;
                if (u < 0) continue;
                double w = a * keep(c, o, u, v, h);
                for (int64_t k = 0; k < F; k++) y[v * W + h * F + k] += w * x[u * W + h * F + k];
            }
        }
    }
    return 0;
}

int gnn_attn_ref_backward(const gnn_csr_t *c, const gnn_attn_opts_t *o, const double *x,
                          const double *alpha, const double *dy, double *dx, double *ds)
{
    int64_t H = o->heads, F = o->f, W = H * F;
    memset(dx, 0, (size_t)(c->n_cols * W) * sizeof *dx);
    for (gnn_vid_t v = 0; v < c->n_rows; v++) {
        gnn_eid_t first, n;
        row(c, o, v, &first, &n);
        for (int64_t h = 0; h < H; h++) {
            double sum = 0.0;
            for (gnn_eid_t i = 0; i < n; i++) {
                gnn_vid_t u = src(c, o, v, i, n);
                double da = 0.0, a = alpha[(first + i) * H + h], kp = keep(c, o, u, v, h);
                if (u >= 0)
                    for (int64_t k = 0; k < F; k++) {
                        da += dy[v * W + h * F + k] * x[u * W + h * F + k];
                        dx[u * W + h * F + k] += a * kp * dy[v * W + h * F + k];
                    }
                ds[(first + i) * H + h] = kp * da;
                sum += a * kp * da;
            }
            for (gnn_eid_t i = 0; i < n; i++) {
                double a = alpha[(first + i) * H + h];
                ds[(first + i) * H + h] = a * (ds[(first + i) * H + h] - sum);
            }
        }
    }
    return 0;
}

int gnn_attn_ref_gat_score_backward(const gnn_csr_t *c, const gnn_attn_opts_t *o,
                                    const double *el, const double *er, const double *ds,
                                    double *del, double *der)
{
    int64_t H = o->heads;
    memset(del, 0, (size_t)(c->n_cols * H) * sizeof *del);
    memset(der, 0, (size_t)(c->n_rows * H) * sizeof *der);
    for (gnn_vid_t v = 0; v < c->n_rows; v++) {
        gnn_eid_t first, n;
        row(c, o, v, &first, &n);
        for (gnn_eid_t i = 0; i < n; i++) {
            gnn_vid_t u = src(c, o, v, i, n);
            if (u < 0) continue;
            for (int64_t h = 0; h < H; h++) {
                double z = el[u * H + h] + er[v * H + h];
                double d = ds[(first + i) * H + h] * (z > 0.0 ? 1.0 : (double)o->negative_slope);
                del[u * H + h] += d;
                der[v * H + h] += d;
            }
        }
    }
    return 0;
}
