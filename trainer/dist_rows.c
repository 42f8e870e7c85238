/*
 * Rows of any nodes of the graph from their owners (dist.h,
 * gnn_dist_rows_t): what a task needs beyond the halo, such as the
 * embeddings of a link-prediction pair's far end. A plan is made once for
 * a list of partition ids (the requests go to the owners, who keep which
 * of their rows each rank asked for); get then moves those rows of an
 * owned array to the asker, and put adds rows of the asker's into the
 * owners' arrays (gradients going back). Every failure is agreed, so all
 * ranks return the same code.
 */
#include "trainer/dist.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/mpiutil.h"

#include <inttypes.h>
#include <limits.h>
#include <string.h>

#define STEP(expr)                                                                       \
    do {                                                                                 \
        rc = gnn_dist_agree(d->comm, (expr));                                            \
        if (rc < 0) goto fail;                                                           \
    } while (0)

void gnn_dist_rows_free(gnn_dist_rows_t *p)
{
    gnn_free(p->cnt);
    gnn_free(p->order);
    gnn_free(p->serve);
    gnn_free(p->sbuf);
    gnn_free(p->rbuf);
    memset(p, 0, sizeof *p);
}

int gnn_dist_rows_plan(gnn_dist_part_t *d, const int64_t *pids, int64_t n, gnn_dist_rows_t *p)
{
    int rc = 0, R = d->size;
    int64_t *req = NULL, *asked = NULL;
    gnn_dist_rows_free(p);
    p->n_want = n;
    p->cnt = gnn_calloc((size_t)R * 4, sizeof *p->cnt);
    p->order = gnn_malloc_array((size_t)n + 1, sizeof *p->order);
    req = gnn_malloc_array((size_t)n + 1, sizeof *req);
    int local = p->cnt && p->order && req ? 0 : GNN_FAIL(GNN_ENOMEM, "rows of %" PRId64 " nodes", n);
    for (int64_t i = 0; i < n && local == 0; i++)
        if (pids[i] < 0 || pids[i] >= d->n_global)
            local = GNN_FAIL(GNN_EINVAL, "rows: node %" PRId64 " outside the graph", pids[i]);
    STEP(local);
    int *wc = p->cnt, *wd = p->cnt + R, *sc = p->cnt + 2 * R, *sd = p->cnt + 3 * R;
    /* Requests grouped by owner, in list order within an owner. */
    for (int64_t i = 0; i < n; i++) wc[gnn_dist_owner(d, pids[i])]++;
    int64_t at = 0;
    for (int r = 0; r < R; r++) {
        wd[r] = at > INT_MAX ? INT_MAX : (int)at;
        at += wc[r];
    }
    STEP(at <= INT_MAX ? 0 : GNN_FAIL(GNN_ERANGE, "rows: more than 2^31 requests"));
    for (int64_t i = 0; i < n; i++) {
        int q = gnn_dist_owner(d, pids[i]);
        p->order[wd[q]] = i;
        req[wd[q]++] = pids[i];
    }
    for (int r = 0; r < R; r++) wd[r] -= wc[r];
    GNN_MPI_TRY(MPI_Alltoall(wc, 1, MPI_INT, sc, 1, MPI_INT, d->comm));
    at = 0;
    for (int r = 0; r < R; r++) {
        sd[r] = at > INT_MAX ? INT_MAX : (int)at;
        at += sc[r];
    }
    p->n_serve = at;
    STEP(at <= INT_MAX ? 0 : GNN_FAIL(GNN_ERANGE, "rows: more than 2^31 rows asked"));
    asked = gnn_malloc_array((size_t)at + 1, sizeof *asked);
    p->serve = gnn_malloc_array((size_t)at + 1, sizeof *p->serve);
    STEP(asked && p->serve ? 0 : GNN_FAIL(GNN_ENOMEM, "rows: %" PRId64 " asked", at));
    GNN_MPI_TRY(MPI_Alltoallv(req, wc, wd, MPI_INT64_T, asked, sc, sd, MPI_INT64_T, d->comm));
    local = 0;
    for (int64_t i = 0; i < at && local == 0; i++) {
        int64_t r = asked[i] - d->part_start[d->rank];
        if (r < 0 || r >= d->n_owned)
            local = GNN_FAIL(GNN_EINVAL, "rows: node %" PRId64 " is not rank %d's", asked[i],
                             d->rank);
        else
            p->serve[i] = r;
    }
    STEP(local);
fail:
    gnn_free(req);
    gnn_free(asked);
    if (rc < 0) gnn_dist_rows_free(p);
    return rc;
}

/* Room for the packed rows of both directions (f floats a row). */
static int rows_bufs(gnn_dist_rows_t *p, int64_t f)
{
    size_t need = ((size_t)(p->n_serve > p->n_want ? p->n_serve : p->n_want) * (size_t)f + 1) *
                  sizeof(float);
    if (p->buf_bytes >= need) return 0;
    gnn_free(p->sbuf);
    gnn_free(p->rbuf);
    p->sbuf = gnn_alloc_large(need);
    p->rbuf = gnn_alloc_large(need);
    p->buf_bytes = p->sbuf && p->rbuf ? need : 0;
    return p->buf_bytes ? 0 : GNN_FAIL(GNN_ENOMEM, "rows: %zu bytes", need);
}

/* Buffers and the MPI type of a row of f floats, before a move. */
static int rows_begin(gnn_dist_rows_t *p, int64_t f, MPI_Datatype *t)
{
    int rc = rows_bufs(p, f);
    if (rc == 0 && (f > INT_MAX || MPI_Type_contiguous((int)f, MPI_FLOAT, t) != MPI_SUCCESS ||
                    MPI_Type_commit(t) != MPI_SUCCESS))
        rc = GNN_FAIL(GNN_EMPI, "rows: a row type of %" PRId64 " floats", f);
    return rc;
}

int gnn_dist_rows_get(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *own, int64_t f,
                      float *out)
{
    return gnn_dist_rows_get_packed(d, p, own, 0, f, out);
}

int gnn_dist_rows_get_packed(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *src, int packed,
                             int64_t f, float *out)
{
    int rc = 0, R = d->size;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    STEP(rows_begin(p, f, &t));
    for (int64_t i = 0; i < p->n_serve; i++)
        memcpy(p->sbuf + i * f, src + (packed ? i : p->serve[i]) * f, (size_t)f * sizeof(float));
    int *wc = p->cnt, *wd = p->cnt + R, *sc = p->cnt + 2 * R, *sd = p->cnt + 3 * R;
    GNN_MPI_TRY(MPI_Alltoallv(p->sbuf, sc, sd, t, p->rbuf, wc, wd, t, d->comm));
    for (int64_t i = 0; i < p->n_want; i++)
        memcpy(out + p->order[i] * f, p->rbuf + i * f, (size_t)f * sizeof(float));
    __atomic_fetch_add(&d->fetch_bytes, (p->n_serve - sc[d->rank]) * f * (int64_t)sizeof(float),
                       __ATOMIC_RELAXED); /* a fetch thread may add too (dist.c) */
fail:
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    return rc;
}

int gnn_dist_rows_put(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *rows, int64_t f,
                      float *own)
{
    const float *got = NULL;
    int rc = gnn_dist_rows_put_packed(d, p, rows, f, &got);
    /* Added in a fixed order: by asking rank, then its request order. */
    for (int64_t i = 0; rc == 0 && i < p->n_serve; i++) {
        float *o = own + p->serve[i] * f;
        const float *x = got + i * f;
        for (int64_t k = 0; k < f; k++) o[k] += x[k];
    }
    return rc;
}

int gnn_dist_rows_put_packed(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *rows, int64_t f,
                             const float **got)
{
    int rc = 0, R = d->size;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    STEP(rows_begin(p, f, &t));
    for (int64_t i = 0; i < p->n_want; i++)
        memcpy(p->sbuf + i * f, rows + p->order[i] * f, (size_t)f * sizeof(float));
    int *wc = p->cnt, *wd = p->cnt + R, *sc = p->cnt + 2 * R, *sd = p->cnt + 3 * R;
    GNN_MPI_TRY(MPI_Alltoallv(p->sbuf, wc, wd, t, p->rbuf, sc, sd, t, d->comm));
    *got = p->rbuf;
    __atomic_fetch_add(&d->fetch_bytes, (p->n_want - wc[d->rank]) * f * (int64_t)sizeof(float),
                       __ATOMIC_RELAXED);
fail:
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    return rc;
}
