/*
 * Reference dense operations (kernels/ref/dense_ref.h): double precision,
 * naive loops, single thread. Written for obviousness, not speed; the tests
 * trust these and compare the real kernels with them.
 */
#include "kernels/ref/dense_ref.h"

#include <inttypes.h>
#include <math.h>

#include "graph/base/error.h"
#include "graph/base/rng.h"

void gnn_ref_gemm(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k, double alpha,
                  const double *a, int64_t lda, const double *b, int64_t ldb, double beta,
                  double *c, int64_t ldc)
{
    for (int64_t i = 0; i < m; i++) {
        for (int64_t j = 0; j < n; j++) {
            double s = 0.0;
            for (int64_t l = 0; l < k; l++) {
                double av = trans_a ? a[l * lda + i] : a[i * lda + l];
                double bv = trans_b ? b[j * ldb + l] : b[l * ldb + j];
                s += av * bv;
            }
            double *cij = &c[i * ldc + j];
            *cij = beta == 0.0 ? alpha * s : alpha * s + beta * *cij;
        }
    }
}

void gnn_ref_bias_add(int64_t rows, int64_t cols, double *y, const double *bias)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < cols; c++) y[r * cols + c] += bias[c];
}

void gnn_ref_bias_grad(int64_t rows, int64_t cols, const double *dy, double *dbias)
{
    for (int64_t c = 0; c < cols; c++) {
        double s = 0.0;
        for (int64_t r = 0; r < rows; r++) s += dy[r * cols + c];
        dbias[c] = s;
    }
}

void gnn_ref_relu(int64_t n, const double *x, double *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.0 ? x[i] : 0.0;
}

void gnn_ref_relu_backward(int64_t n, const double *x, const double *dy, double *dx)
{
    for (int64_t i = 0; i < n; i++) dx[i] = x[i] > 0.0 ? dy[i] : 0.0;
}

void gnn_ref_axpby(int64_t n, double alpha, const double *x, double beta, double *y)
{
    for (int64_t i = 0; i < n; i++) y[i] = alpha * x[i] + (beta == 0.0 ? 0.0 : beta * y[i]);
}

void gnn_ref_gather_rows(int64_t n, int64_t f, const double *src, const int64_t *idx,
                         double *dst)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < f; k++) dst[i * f + k] = src[idx[i] * f + k];
}

void gnn_ref_dropout(int64_t n, float p, uint64_t seed, uint64_t offset, const double *x,
                     double *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = gnn_rng_keep(seed, offset + (uint64_t)i, p) ? x[i] / (1.0 - (double)p) : 0.0;
}

int gnn_ref_softmax_xent(int64_t rows, int64_t classes, const double *logits,
                         const int64_t *labels, const int64_t *idx, int64_t nidx, double *loss,
                         double *dlogits)
{
    for (int64_t j = 0; j < nidx; j++) {
        int64_t r = idx ? idx[j] : j;
        if (labels[r] < 0 || labels[r] >= classes)
            return GNN_FAIL(GNN_EINVAL, "row %" PRId64 ": label %" PRId64 " out of range", r,
                            labels[r]);
    }
    if (dlogits)
        for (int64_t i = 0; i < rows * classes; i++) dlogits[i] = 0.0;
    double total = 0.0;
    for (int64_t j = 0; j < nidx; j++) {
        int64_t r = idx ? idx[j] : j;
        const double *x = logits + r * classes;
        double mx = x[0];
        for (int64_t c = 1; c < classes; c++) mx = x[c] > mx ? x[c] : mx;
        double s = 0.0;
        for (int64_t c = 0; c < classes; c++) s += exp(x[c] - mx);
        total += log(s) + mx - x[labels[r]];
        if (dlogits) {
            for (int64_t c = 0; c < classes; c++)
                dlogits[r * classes + c] = (exp(x[c] - mx) / s - (c == labels[r])) / nidx;
        }
    }
    *loss = nidx > 0 ? total / nidx : 0.0;
    return 0;
}

void gnn_ref_adam(int64_t n, double *w, const double *g, double *m, double *v,
                  const gnn_adam_opts_t *o, int64_t step)
{
    double lr = o->lr, b1 = o->beta1, b2 = o->beta2, eps = o->eps, wd = o->weight_decay;
    double bc1 = 1.0 - pow(b1, (double)step), bc2 = 1.0 - pow(b2, (double)step);
    for (int64_t i = 0; i < n; i++) {
        double gi = g[i];
        if (o->decoupled)
            w[i] *= 1.0 - lr * wd;
        else
            gi += wd * w[i];
        m[i] = b1 * m[i] + (1.0 - b1) * gi;
        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
        double mhat = m[i] / bc1, vhat = v[i] / bc2;
        w[i] -= lr * mhat / (sqrt(vhat) + eps);
    }
}

void gnn_ref_argmax_rows(int64_t rows, int64_t classes, const double *x, int64_t *out)
{
    for (int64_t r = 0; r < rows; r++) {
        int64_t best = 0;
        for (int64_t c = 1; c < classes; c++)
            if (x[r * classes + c] > x[r * classes + best]) best = c;
        out[r] = best;
    }
}
