/*
 * Reference SpMM in plain C with double accumulation (see spmm_ref.h).
 *
 * Each aggregator is the formula of kernels/spmm.h, edge by edge: the
 * forward walks the rows of the in-edge CSR, the backward scatters
 * coef(e) * dy[v] into dx[u] for every edge e = (u -> v), and max scatters
 * dy[v][k] into dx[argmax[v][k]][k]. Degrees are counted here from the CSR.
 */
#include "kernels/ref/spmm_ref.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <math.h>
#include <string.h>

/* In-degree of each row and out-degree of each column (caller frees). */
static int degrees(const gnn_csr_t *a, gnn_eid_t **in_deg, gnn_eid_t **out_deg)
{
    int rc = 0;
    *in_deg = gnn_calloc((size_t)a->n_rows + 1, sizeof(gnn_eid_t));
    *out_deg = gnn_calloc((size_t)a->n_cols + 1, sizeof(gnn_eid_t));
    GNN_CHECK(*in_deg && *out_deg, GNN_ENOMEM, "reference degrees");
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        (*in_deg)[v] = a->indptr[v + 1] - a->indptr[v];
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) (*out_deg)[a->indices[j]]++;
    }
    return 0;
fail:
    gnn_free(*in_deg);
    gnn_free(*out_deg);
    *in_deg = *out_deg = NULL;
    return rc;
}

static int check(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const int32_t *argmax)
{
    if (!a || f < 1 || (unsigned)aggr >= GNN_AGGR_COUNT_)
        return GNN_FAIL(GNN_EINVAL, "reference spmm: bad argument");
    if (aggr == GNN_AGGR_GCN && a->n_rows > a->n_cols)
        return GNN_FAIL(GNN_EINVAL, "reference spmm: gcn needs n_rows <= n_cols");
    if (aggr == GNN_AGGR_MAX && !argmax)
        return GNN_FAIL(GNN_EINVAL, "reference spmm: max needs argmax");
    return 0;
}

/* Coefficient of edge j = (u -> v) in y[v] (not max). */
static double coef(const gnn_csr_t *a, gnn_aggr_t aggr, const gnn_eid_t *in_deg,
                   const gnn_eid_t *out_deg, gnn_vid_t v, gnn_eid_t j)
{
    double w = a->weights ? (double)a->weights[j] : 1.0;
    gnn_vid_t u = a->indices[j];
    switch (aggr) {
    case GNN_AGGR_SUM: return w;
    case GNN_AGGR_MEAN: return w / (double)in_deg[v];
    default: return 1.0 / sqrt(((double)in_deg[v] + 1.0) * ((double)out_deg[u] + 1.0));
    }
}

int gnn_spmm_ref_forward(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const double *x,
                         double *y, int32_t *argmax)
{
    int rc = check(a, aggr, f, argmax);
    if (rc < 0) return rc;
    gnn_eid_t *in_deg, *out_deg;
    GNN_TRY(degrees(a, &in_deg, &out_deg));
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        double *yr = y + v * f;
        for (int64_t k = 0; k < f; k++) yr[k] = 0.0;
        if (aggr == GNN_AGGR_MAX) {
            for (int64_t k = 0; k < f; k++) {
                argmax[v * f + k] = -1;
                for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
                    gnn_vid_t u = a->indices[j];
                    if (j == a->indptr[v] || x[u * f + k] > yr[k]) {
                        yr[k] = x[u * f + k];
                        argmax[v * f + k] = (int32_t)u;
                    }
                }
            }
            continue;
        }
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
            double c = coef(a, aggr, in_deg, out_deg, v, j);
            const double *xr = x + a->indices[j] * f;
            for (int64_t k = 0; k < f; k++) yr[k] += c * xr[k];
        }
        if (aggr == GNN_AGGR_GCN) { /* implicit self loop v -> v */
            double c = 1.0 / sqrt(((double)in_deg[v] + 1.0) * ((double)out_deg[v] + 1.0));
            for (int64_t k = 0; k < f; k++) yr[k] += c * x[v * f + k];
        }
    }
    gnn_free(in_deg);
    gnn_free(out_deg);
    return 0;
fail:
    return rc;
}

int gnn_spmm_ref_backward(const gnn_csr_t *a, gnn_aggr_t aggr, int64_t f, const double *dy,
                          const int32_t *argmax, double *dx)
{
    int rc = check(a, aggr, f, argmax);
    if (rc < 0) return rc;
    gnn_eid_t *in_deg, *out_deg;
    GNN_TRY(degrees(a, &in_deg, &out_deg));
    for (int64_t i = 0; i < a->n_cols * f; i++) dx[i] = 0.0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        const double *g = dy + v * f;
        if (aggr == GNN_AGGR_MAX) {
            for (int64_t k = 0; k < f; k++)
                if (argmax[v * f + k] >= 0) dx[(int64_t)argmax[v * f + k] * f + k] += g[k];
            continue;
        }
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
            double c = coef(a, aggr, in_deg, out_deg, v, j);
            double *o = dx + a->indices[j] * f;
            for (int64_t k = 0; k < f; k++) o[k] += c * g[k];
        }
        if (aggr == GNN_AGGR_GCN) {
            double c = 1.0 / sqrt(((double)in_deg[v] + 1.0) * ((double)out_deg[v] + 1.0));
            for (int64_t k = 0; k < f; k++) dx[v * f + k] += c * g[k];
        }
    }
    gnn_free(in_deg);
    gnn_free(out_deg);
    return 0;
fail:
    return rc;
}
