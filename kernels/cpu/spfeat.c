/*
 * Sparse input features (kernels/spfeat.h): dropout on the stored entries,
 * the product with a dense weight matrix and its transpose. Rows run in
 * parallel under OpenMP; the transpose is a gather over a by-column index
 * of the entries built once, so no two threads write the same row.
 */
#include "kernels/spfeat.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"

#include <inttypes.h>
#include <string.h>

void gnn_spfeat_free(gnn_spfeat_t *s)
{
    if (!s) return;
    gnn_free(s->t_indptr);
    gnn_free(s->t_entry);
    gnn_free(s->t_row);
    gnn_free(s);
}

int gnn_spfeat_create(const gnn_csr_t *a, gnn_spfeat_t **out)
{
    int rc = 0;
    gnn_spfeat_t *s = NULL;
    GNN_CHECK(out, GNN_EINVAL, "sparse features: NULL output");
    *out = NULL;
    GNN_CHECK(a && a->indptr && a->n_rows >= 0 && a->n_cols >= 0, GNN_EINVAL,
              "sparse features: NULL or malformed matrix");
    GNN_CHECK(a->nnz == 0 || (a->indices && a->weights), GNN_EINVAL,
              "sparse features: the matrix needs its values");
    GNN_TRY(gnn_csr_validate(a));
    s = gnn_calloc(1, sizeof *s);
    GNN_CHECK(s, GNN_ENOMEM, "sparse features");
    s->a = a;
    s->t_indptr = gnn_calloc((size_t)a->n_cols + 2, sizeof *s->t_indptr);
    s->t_entry = gnn_malloc_array((size_t)a->nnz + 1, sizeof *s->t_entry);
    s->t_row = gnn_malloc_array((size_t)a->nnz + 1, sizeof *s->t_row);
    GNN_CHECK(s->t_indptr && s->t_entry && s->t_row, GNN_ENOMEM, "sparse features transpose");
    for (gnn_eid_t j = 0; j < a->nnz; j++) s->t_indptr[a->indices[j] + 2]++;
    for (gnn_vid_t c = 0; c < a->n_cols; c++) s->t_indptr[c + 2] += s->t_indptr[c + 1];
    for (gnn_vid_t r = 0; r < a->n_rows; r++)
        for (gnn_eid_t j = a->indptr[r]; j < a->indptr[r + 1]; j++) {
            gnn_eid_t q = s->t_indptr[a->indices[j] + 1]++;
            s->t_entry[q] = j;
            s->t_row[q] = r;
        }
    *out = s;
    return 0;
fail:
    gnn_spfeat_free(s);
    return rc;
}

int gnn_spfeat_dropout(const gnn_spfeat_t *s, float p, uint64_t seed, uint64_t offset,
                       const int64_t *row_id, float *vals)
{
    if (!s || (!vals && s->a->nnz)) return GNN_FAIL(GNN_EINVAL, "sparse dropout: NULL argument");
    if (!(p >= 0.0f && p < 1.0f))
        return GNN_FAIL(GNN_EINVAL, "sparse dropout: drop probability %g outside [0, 1)",
                        (double)p);
    const gnn_csr_t *a = s->a;
    if (p == 0.0f) {
        memcpy(vals, a->weights, (size_t)a->nnz * sizeof *vals);
        return 0;
    }
    const float scale = (float)(1.0 / (1.0 - (double)p));
    const uint64_t cols = (uint64_t)a->n_cols;
#pragma omp parallel for schedule(static)
    for (gnn_vid_t r = 0; r < a->n_rows; r++)
        for (gnn_eid_t j = a->indptr[r]; j < a->indptr[r + 1]; j++) {
            uint64_t ctr = offset + (uint64_t)(row_id ? row_id[r] : r) * cols +
                           (uint64_t)a->indices[j];
            vals[j] = gnn_rng_keep(seed, ctr, p) ? a->weights[j] * scale : 0.0f;
        }
    return 0;
}

static int check_mm(const gnn_spfeat_t *s, const void *vals, int64_t n, const void *in, int64_t f,
                    const void *out, const char *fn)
{
    if (!s || !in || !out || (!vals && s->a->nnz))
        return GNN_FAIL(GNN_EINVAL, "%s: NULL argument", fn);
    if (f < 1) return GNN_FAIL(GNN_EINVAL, "%s: bad width %" PRId64, fn, f);
    if (n < 0 || n > s->a->n_rows)
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " rows of %" PRId64, fn, n, s->a->n_rows);
    return 0;
}

/*
 * The products sum, for each output row, value x row of the dense operand
 * over a list of entries, in entry order; the sums run over blocks of
 * BLOCK columns held in a local array (registers when the width is the
 * constant BLOCK), so each output row is written once.
 */
#define BLOCK 32
#define CLONES __attribute__((target_clones("avx2", "default")))

/* o[k0, k0 + w) = sum over entries j in [q0, q1) whose row (rowof, when
 * given) is below n of vals[ent ? ent[j] : j] x[idx[j]][k0, k0 + w). */
static inline __attribute__((always_inline)) void sum_block(
    gnn_eid_t q0, gnn_eid_t q1, const gnn_vid_t *idx, const gnn_eid_t *ent, const gnn_vid_t *rowof,
    int64_t n, const float *vals, const float *x, int64_t f, int64_t k0, int64_t w,
    float *restrict o)
{
    float acc[BLOCK];
#pragma omp simd
    for (int64_t k = 0; k < w; k++) acc[k] = 0.0f;
    for (gnn_eid_t q = q0; q < q1; q++) {
        if (rowof && rowof[q] >= n) break; /* a column's entries run by row */
        const float v = vals[ent ? ent[q] : q];
        if (v == 0.0f) continue; /* dropped */
        const float *restrict xr = x + idx[q] * f + k0;
#pragma omp simd
        for (int64_t k = 0; k < w; k++) acc[k] += v * xr[k];
    }
#pragma omp simd
    for (int64_t k = 0; k < w; k++) o[k0 + k] = acc[k];
}

/* Output rows [r0, r1). */
CLONES static void sum_range(const gnn_eid_t *ptr, const gnn_vid_t *idx, const gnn_eid_t *ent,
                             const gnn_vid_t *rowof, int64_t n, const float *vals, gnn_vid_t r0,
                             gnn_vid_t r1, const float *x, int64_t f, float *out)
{
    for (gnn_vid_t r = r0; r < r1; r++) {
        float *restrict o = out + r * f;
        int64_t k0 = 0;
        for (; k0 + BLOCK <= f; k0 += BLOCK)
            sum_block(ptr[r], ptr[r + 1], idx, ent, rowof, n, vals, x, f, k0, BLOCK, o);
        if (k0 < f) sum_block(ptr[r], ptr[r + 1], idx, ent, rowof, n, vals, x, f, k0, f - k0, o);
    }
}

/* Every output row, in chunks of 64 rows shared out as threads free up. */
static void sum_rows(const gnn_eid_t *ptr, const gnn_vid_t *idx, const gnn_eid_t *ent,
                     const gnn_vid_t *rowof, int64_t n, const float *vals, int64_t rows,
                     const float *x, int64_t f, float *out)
{
    const int64_t chunks = (rows + 63) / 64;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t c = 0; c < chunks; c++) {
        gnn_vid_t r0 = c * 64, r1 = r0 + 64 < rows ? r0 + 64 : rows;
        sum_range(ptr, idx, ent, rowof, n, vals, r0, r1, x, f, out);
    }
}

int gnn_spfeat_mm(const gnn_spfeat_t *s, const float *vals, int64_t n, const float *w, int64_t f,
                  float *t)
{
    int rc = check_mm(s, vals, n, w, f, t, "gnn_spfeat_mm");
    if (rc < 0) return rc;
    sum_rows(s->a->indptr, s->a->indices, NULL, NULL, n, vals, n, w, f, t);
    return 0;
}

int gnn_spfeat_mm_t(const gnn_spfeat_t *s, const float *vals, int64_t n, const float *dt,
                    int64_t f, float *dw)
{
    int rc = check_mm(s, vals, n, dt, f, dw, "gnn_spfeat_mm_t");
    if (rc < 0) return rc;
    /* dw's row c: the entries of column c, by the by-column index. */
    sum_rows(s->t_indptr, s->t_row, s->t_entry, s->t_row, n, vals, s->a->n_cols, dt, f, dw);
    return 0;
}
