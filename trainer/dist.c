/*
 * One rank's part and the halo exchange (trainer/dist.h).
 *
 * The plan is made once: each rank sends every owner the ids of its halo
 * nodes that owner holds (halo local ids are in ascending global id, and
 * the owners' ranges ascend, so the halo rows from one owner are one
 * contiguous run, in rank order); the owner turns them into its local
 * rows. A forward exchange then packs those rows per destination and
 * receives straight into the halo rows; a backward exchange sends the
 * halo rows back and the owner adds what it receives, rank by rank in
 * order, so the sums do not depend on timing.
 */
#include "trainer/dist.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/mpiutil.h"
#include "partition/partdir.h"
#include "sampler/sampler.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>


static void free_loss_plans(gnn_dist_part_t *d);

int gnn_dist_agree(MPI_Comm comm, int rc) { return gnn_mpi_agree(comm, rc); }

int gnn_dist_reporting_rank(void) { return gnn_mpi_reporting_rank(); }

#define STEP(expr)                                                                       \
    do {                                                                                 \
        rc = gnn_dist_agree(d->comm, (expr));                                            \
        if (rc < 0) goto fail;                                                           \
    } while (0)

static void fetch_scratch_free(gnn_dist_fetch_scratch_t *x)
{
    gnn_free(x->cnt);
    gnn_free(x->req);
    gnn_free(x->asked);
    gnn_free(x->send);
    memset(x, 0, sizeof *x);
}

void gnn_dist_free(gnn_dist_part_t *d)
{
    gnn_sampler_excl_free(d->draw_excl);
    gnn_csr_free(&d->csr);
    gnn_free(d->etype);
    gnn_free(d->full_etype);
    gnn_free(d->types);
    gnn_free(d->gid);
    gnn_free(d->src_deg);
    gnn_free(d->feat);
    gnn_free(d->label);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_free(d->split[s]);
    gnn_free(d->scount);
    gnn_free(d->send_rows);
    gnn_free(d->buf);
    gnn_free(d->rbuf);
    free_loss_plans(d);
    gnn_csr_free(&d->full);
    gnn_free(d->l2g);
    gnn_free(d->p2g);
    gnn_free(d->part_start);
    if (!d->own_feat_lent) gnn_free(d->own_feat);
    gnn_free(d->halo_index);
    fetch_scratch_free(&d->fx);
    if (d->fetch_comm != MPI_COMM_NULL && d->fetch_comm != d->comm)
        MPI_Comm_free(&d->fetch_comm);
    MPI_Comm comm = d->comm;
    int rank = d->rank, size = d->size;
    memset(d, 0, sizeof *d);
    d->comm = comm;
    d->rank = rank;
    d->size = size;
    d->fetch_comm = MPI_COMM_NULL;
}

static int grow(void **buf, size_t *have, size_t bytes)
{
    if (*have >= bytes) return 0;
    gnn_free(*buf);
    *buf = gnn_malloc(bytes + 1);
    *have = *buf ? bytes : 0;
    return *buf ? 0 : GNN_FAIL(GNN_ENOMEM, "halo exchange: %zu bytes", bytes);
}

static int ensure_buf(gnn_dist_part_t *d, size_t bytes)
{
    return grow(&d->buf, &d->buf_bytes, bytes);
}

gnn_dist_plan_t gnn_dist_full_plan(const gnn_dist_part_t *d)
{
    gnn_dist_plan_t p = {.scount = d->scount,
                         .sdispl = d->sdispl,
                         .rcount = d->rcount,
                         .rdispl = d->rdispl,
                         .send_rows = d->send_rows,
                         .n_send = d->n_send,
                         .recv_rows = NULL,
                         .n_recv = d->n_local - d->n_owned};
    return p;
}

const gnn_dist_plan_t *gnn_dist_plan_for(const gnn_dist_part_t *d, int k, int training)
{
    return training && k >= 0 && k < d->n_loss_plans ? &d->loss_plan[k] : NULL;
}

/* A row of f elements of base as one MPI type (counts stay row counts). */
static int row_type(MPI_Datatype base, int64_t f, MPI_Datatype *t)
{
    if (f > INT_MAX) return GNN_FAIL(GNN_ERANGE, "halo exchange: rows of %" PRId64 " values", f);
    if (MPI_Type_contiguous((int)f, base, t) != MPI_SUCCESS || MPI_Type_commit(t) != MPI_SUCCESS)
        return GNN_FAIL(GNN_EMPI, "MPI_Type_contiguous failed");
    return 0;
}

/*
 * Forward for rows of esz-byte elements by plan p: the halo rows (all
 * n_local - n_owned of them, into halo) from their owners; rows p does not
 * receive are set to 0. The rows this rank sends are rows p->send_rows of
 * x, or already packed in that order in send (x NULL). local: this rank's
 * failure so far, agreed with the others' first.
 */
static int forward_bytes(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local, const void *x,
                         const void *send, void *halo, int64_t f, size_t esz, MPI_Datatype base)
{
    int rc = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    double t0 = MPI_Wtime();
    size_t row = (size_t)f * esz;
    if (local == 0 && x) local = ensure_buf(d, (size_t)p->n_send * row);
    if (local == 0 && p->recv_rows) local = grow(&d->rbuf, &d->rbuf_bytes, (size_t)p->n_recv * row);
    if (local == 0) local = row_type(base, f, &t);
    STEP(local);
    if (x) {
        char *b = d->buf;
        for (int64_t i = 0; i < p->n_send; i++)
            memcpy(b + (size_t)i * row, (const char *)x + (size_t)p->send_rows[i] * row, row);
        send = d->buf;
    }
    void *into = p->recv_rows ? d->rbuf : halo;
    GNN_MPI_TRY(MPI_Alltoallv(send, p->scount, p->sdispl, t, into, p->rcount, p->rdispl, t,
                              d->comm));
    if (p->recv_rows) { /* into place; the rows the loss does not read are 0 */
        memset(halo, 0, (size_t)(d->n_local - d->n_owned) * row);
        for (int64_t i = 0; i < p->n_recv; i++)
            memcpy((char *)halo + (size_t)p->recv_rows[i] * row, (char *)d->rbuf + (size_t)i * row,
                   row);
    }
    d->bytes_sent += p->n_send * (int64_t)row -
                     (int64_t)p->scount[d->rank] * (int64_t)row; /* not to itself */
fail:
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    d->exchange_s += MPI_Wtime() - t0;
    return rc;
}

int gnn_dist_halo_forward(gnn_dist_part_t *d, const gnn_dist_plan_t *p, float *x, int64_t f)
{
    gnn_dist_plan_t full = gnn_dist_full_plan(d);
    return forward_bytes(d, p ? p : &full, 0, x, NULL, x + d->n_owned * f, f, sizeof(float),
                         MPI_FLOAT);
}

int gnn_dist_halo_forward_packed(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local,
                                 const float *send, float *halo, int64_t f)
{
    gnn_dist_plan_t full = gnn_dist_full_plan(d);
    return forward_bytes(d, p ? p : &full, local, NULL, send, halo, f, sizeof(float), MPI_FLOAT);
}

/* Backward by plan p: the gradients of the halo rows p receives (halo: all
 * n_local - n_owned rows) to their owners, whose p->n_send rows arrive in
 * recv (send_rows order). local: this rank's failure so far, agreed with
 * the others' first. */
static int backward_rows(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local, const float *halo,
                         float *recv, int64_t f)
{
    int rc = 0;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    double t0 = MPI_Wtime();
    size_t row = (size_t)f * sizeof(float);
    if (local == 0 && p->recv_rows) local = grow(&d->rbuf, &d->rbuf_bytes, (size_t)p->n_recv * row);
    if (local == 0) local = row_type(MPI_FLOAT, f, &t);
    STEP(local);
    if (p->recv_rows) {
        float *b = d->rbuf;
        for (int64_t i = 0; i < p->n_recv; i++)
            memcpy(b + i * f, halo + p->recv_rows[i] * f, row);
        halo = b;
    }
    GNN_MPI_TRY(MPI_Alltoallv(halo, p->rcount, p->rdispl, t, recv, p->scount, p->sdispl, t,
                              d->comm));
    d->bytes_sent += (p->n_recv - (int64_t)p->rcount[d->rank]) * (int64_t)row;
fail:
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    d->exchange_s += MPI_Wtime() - t0;
    return rc;
}

int gnn_dist_halo_backward(gnn_dist_part_t *d, const gnn_dist_plan_t *p, float *g, int64_t f)
{
    int rc = 0;
    gnn_dist_plan_t full = gnn_dist_full_plan(d);
    if (!p) p = &full;
    size_t row = (size_t)f * sizeof(float);
    GNN_TRY(backward_rows(d, p, ensure_buf(d, (size_t)p->n_send * row), g + d->n_owned * f,
                          d->buf, f));
    const float *b = d->buf;
    for (int64_t i = 0; i < p->n_send; i++) {
        float *dst = g + p->send_rows[i] * f;
        const float *src = b + i * f;
        for (int64_t k = 0; k < f; k++) dst[k] += src[k];
    }
fail:
    return rc;
}

int gnn_dist_halo_backward_packed(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local,
                                  const float *halo, float *recv, int64_t f)
{
    gnn_dist_plan_t full = gnn_dist_full_plan(d);
    return backward_rows(d, p ? p : &full, local, halo, recv, f);
}

/* The exchange plan from the halo's global ids and the parts' ranges. */
static int make_plan(gnn_dist_part_t *d, const gnn_part_file_t *pf)
{
    int rc = 0, R = d->size;
    int64_t *asked = NULL;
    d->scount = gnn_calloc((size_t)R * 4, sizeof *d->scount);
    int local = d->scount ? 0 : GNN_FAIL(GNN_ENOMEM, "halo plan");
    STEP(local);
    d->sdispl = d->scount + R;
    d->rcount = d->scount + 2 * R;
    d->rdispl = d->scount + 3 * R;
    /* rcount: halo rows this rank receives from each owner. */
    int q = 0;
    for (int64_t r = d->n_owned; r < d->n_local; r++) {
        int64_t g = pf->local_to_global[r];
        while (q < R - 1 && g >= d->part_start[q + 1]) q++;
        if (g < d->part_start[q] || g >= d->part_start[q + 1] || q == d->rank) {
            local = GNN_FAIL(GNN_EFORMAT, "part %d: halo node %" PRId64
                             " out of order or owned by this part", d->rank, g);
            break;
        }
        d->rcount[q]++;
    }
    STEP(local);
    int64_t at = 0;
    for (int r = 0; r < R; r++) {
        d->rdispl[r] = (int)at;
        at += d->rcount[r];
    }
    STEP(at <= INT_MAX ? 0 : GNN_FAIL(GNN_ERANGE, "more than 2^31 halo nodes"));
    GNN_MPI_TRY(MPI_Alltoall(d->rcount, 1, MPI_INT, d->scount, 1, MPI_INT, d->comm));
    at = 0;
    for (int r = 0; r < R; r++) {
        d->sdispl[r] = (int)at;
        at += d->scount[r];
    }
    d->n_send = at;
    asked = gnn_malloc_array((size_t)at + 1, sizeof *asked);
    d->send_rows = gnn_malloc_array((size_t)at + 1, sizeof *d->send_rows);
    local = at > INT_MAX    ? GNN_FAIL(GNN_ERANGE, "more than 2^31 boundary rows")
            : !asked || !d->send_rows ? GNN_FAIL(GNN_ENOMEM, "halo plan")
                                      : 0;
    STEP(local);
    GNN_MPI_TRY(MPI_Alltoallv(pf->local_to_global + d->n_owned, d->rcount, d->rdispl, MPI_INT64_T,
                          asked, d->scount, d->sdispl, MPI_INT64_T, d->comm));
    for (int64_t i = 0; i < at && local == 0; i++) {
        int64_t r = asked[i] - pf->first_id;
        if (r < 0 || r >= d->n_owned)
            local = GNN_FAIL(GNN_EFORMAT, "part %d: asked for node %" PRId64 ", not its own",
                             d->rank, asked[i]);
        else
            d->send_rows[i] = r;
    }
    STEP(local);
fail:
    gnn_free(asked);
    return rc;
}

/* Out-degree of every local node in the whole graph: each edge is an
 * owned row's entry on exactly one rank; halo counts go to the owners,
 * and the totals come back. */
static int out_degrees(gnn_dist_part_t *d)
{
    int rc = 0;
    d->src_deg = gnn_calloc((size_t)d->n_local + 1, sizeof *d->src_deg);
    STEP(d->src_deg ? 0 : GNN_FAIL(GNN_ENOMEM, "out-degrees"));
    for (gnn_eid_t e = 0; e < d->csr.nnz; e++) d->src_deg[d->csr.indices[e]]++;
    {
        MPI_Datatype t = MPI_INT64_T;
        int local = ensure_buf(d, (size_t)d->n_send * sizeof(int64_t));
        STEP(local);
        GNN_MPI_TRY(MPI_Alltoallv(d->src_deg + d->n_owned, d->rcount, d->rdispl, t, d->buf, d->scount,
                              d->sdispl, t, d->comm));
        const int64_t *b = d->buf;
        for (int64_t i = 0; i < d->n_send; i++) d->src_deg[d->send_rows[i]] += b[i];
    }
    gnn_dist_plan_t full = gnn_dist_full_plan(d);
    GNN_TRY(forward_bytes(d, &full, 0, d->src_deg, NULL, d->src_deg + d->n_owned, 1,
                          sizeof(int64_t), MPI_INT64_T));
fail:
    return rc;
}

static int owner_of(const gnn_dist_part_t *d, int64_t g)
{
    int a = 0, b = d->size - 1; /* part_start[a] <= g < part_start[b + 1] */
    while (a < b) {
        int m = (a + b + 1) / 2;
        if (d->part_start[m] <= g)
            a = m;
        else
            b = m - 1;
    }
    return a;
}

int gnn__dist_exchange_counts(const gnn_dist_part_t *d, MPI_Comm comm, int *send, int *recv,
                              int *displ, int *codes, int64_t *sum)
{
    int rc = 0, R = d->size;
    GNN_MPI_TRY(MPI_Alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, comm));
    for (int r = 0; r < R; r++) codes[r] = recv[r] < 0 ? recv[r] : 0;
    GNN_TRY(gnn_mpi_agree_codes(codes, R, d->rank));
    int64_t at = 0;
    for (int r = 0; r < R; r++) {
        displ[r] = at > INT_MAX ? 0 : (int)at; /* the caller refuses a total past INT_MAX */
        at += recv[r];
    }
    *sum = at;
fail:
    return rc;
}

/* gnn_dist_fetch_grouped, with local: a failure of this rank before the
 * fetch, which travels in the counts' place (every rank returns it). */
static int fetch_grouped(gnn_dist_part_t *d, const int64_t *ids, int64_t n, float *out,
                         int64_t *at, int local)
{
    int rc = 0, R = d->size;
    MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
    double t0 = MPI_Wtime();
    gnn_dist_fetch_scratch_t *x = &d->fx;
    MPI_Datatype t = MPI_DATATYPE_NULL;
    const int64_t f = d->feat_dim;
    if (!x->cnt) {
        x->cnt = gnn_calloc((size_t)R * 5, sizeof *x->cnt);
        if (!x->cnt) { /* no room even to tell the others: this rank fails alone */
            rc = GNN_FAIL(GNN_ENOMEM, "feature fetch of %" PRId64 " rows", n);
            goto fail;
        }
    }
    int *scount = x->cnt, *sdispl = x->cnt + R, *rcount = x->cnt + 2 * R;
    int *rdispl = x->cnt + 3 * R, *codes = x->cnt + 4 * R;
    memset(scount, 0, (size_t)R * sizeof *scount);
    if (local == 0 && gnn_grow((void **)&x->req, &x->req_cap, (size_t)n + 1, sizeof *x->req) < 0)
        local = GNN_FAIL(GNN_ENOMEM, "feature fetch of %" PRId64 " rows", n);
    if (local == 0) local = row_type(MPI_FLOAT, f, &t);
    for (int64_t i = 0; i < n && local == 0; i++)
        if (ids[i] < d->n_owned || gnn_dist_pid(d, ids[i]) >= d->n_global)
            local = GNN_FAIL(GNN_EINVAL, "feature fetch: node %" PRId64 " is not a remote node",
                             ids[i]);
    /* Three collective calls: the request counts (a rank's failure
     * travels in their place, agreed by all), the requests, the rows. A
     * failure after the counts (out of memory for what arrives, a request
     * for a node not owned here) is this rank's alone. */
    /* Requests grouped by owner (a counting sort keeps their order); at[k]:
     * the request at place k. */
    for (int64_t i = 0; i < n && local == 0; i++) scount[owner_of(d, gnn_dist_pid(d, ids[i]))]++;
    int64_t pos = 0;
    for (int r = 0; r < R; r++) {
        sdispl[r] = (int)pos;
        pos += scount[r];
    }
    for (int64_t i = 0; i < n && local == 0; i++) {
        int64_t pid = gnn_dist_pid(d, ids[i]);
        int q = owner_of(d, pid);
        at[sdispl[q]] = i;
        x->req[sdispl[q]++] = pid;
    }
    for (int r = 0; r < R; r++) sdispl[r] -= scount[r];
    if (local < 0)
        for (int r = 0; r < R; r++) scount[r] = local;
    int64_t nr = 0;
    GNN_TRY(gnn__dist_exchange_counts(d, comm, scount, rcount, rdispl, codes, &nr));
    GNN_CHECK(nr <= INT_MAX, GNN_ERANGE, "feature fetch: more than 2^31 rows");
    GNN_CHECK(gnn_grow((void **)&x->asked, &x->asked_cap, (size_t)nr + 1, sizeof *x->asked) == 0 &&
                  gnn_grow((void **)&x->send, &x->send_cap, (size_t)(nr * f) + 1,
                           sizeof *x->send) == 0,
              GNN_ENOMEM, "feature fetch of %" PRId64 " rows", nr);
    GNN_MPI_TRY(MPI_Alltoallv(x->req, scount, sdispl, MPI_INT64_T, x->asked, rcount, rdispl,
                              MPI_INT64_T, comm));
    for (int64_t i = 0; i < nr; i++) {
        int64_t r = x->asked[i] - d->part_start[d->rank];
        GNN_CHECK(r >= 0 && r < d->n_owned, GNN_EINVAL,
                  "feature fetch: node %" PRId64 " is not rank %d's", x->asked[i], d->rank);
        memcpy(x->send + i * f, d->own_feat + r * f, (size_t)f * sizeof *x->send);
    }
    /* Atomic: the training thread's row moves (dist_rows.c) add to it while
     * a fetch runs on its own thread. */
    __atomic_fetch_add(&d->fetch_bytes, (nr - rcount[d->rank]) * f * (int64_t)sizeof(float),
                       __ATOMIC_RELAXED);
    /* The rows come back in request order, grouped by owner: straight into out. */
    GNN_MPI_TRY(MPI_Alltoallv(x->send, rcount, rdispl, t, out, scount, sdispl, t, comm));
fail:
    if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    d->fetch_s += MPI_Wtime() - t0;
    return rc;
}

int gnn_dist_fetch_grouped(gnn_dist_part_t *d, const int64_t *ids, int64_t n, float *out,
                           int64_t *at)
{
    return fetch_grouped(d, ids, n, out, at, 0);
}

int gnn_dist_fetch_feat(gnn_dist_part_t *d, const int64_t *ids, int64_t n, float *out)
{
    const int64_t f = d->feat_dim;
    int64_t *at = gnn_malloc_array((size_t)n + 1, sizeof *at);
    float *rows = gnn_alloc_large(((size_t)n * (size_t)f + 1) * sizeof *rows);
    /* Out of memory here is told to every rank in the exchange (n 0 asks
     * nothing). */
    int ok = at && rows;
    int rc = fetch_grouped(d, ids, ok ? n : 0, rows, at,
                           ok ? 0 : GNN_FAIL(GNN_ENOMEM, "feature fetch of %" PRId64 " rows", n));
    for (int64_t k = 0; k < n && rc == 0; k++)
        memcpy(out + at[k] * f, rows + k * f, (size_t)f * sizeof *out);
    gnn_free(at);
    gnn_free(rows);
    /* A fetch done once (a cache's fill) keeps no buffers its size. */
    fetch_scratch_free(&d->fx);
    return rc;
}
#undef STEP
#define STEP(expr)                                                                       \
    do {                                                                                 \
        rc = gnn_dist_agree(d->comm, (expr));                                            \
        if (rc < 0) goto fail;                                                           \
    } while (0)

static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

void gnn_dist_pairs_sort(int64_t *pairs, int64_t n)
{
    qsort(pairs, (size_t)n, 2 * sizeof *pairs, cmp_pair);
}

int64_t gnn_dist_pairs_find(const int64_t *pairs, int64_t n, int64_t key)
{
    int64_t a = 0, b = n; /* keys before a are below key; from b on, not */
    while (a < b) {
        int64_t m = a + (b - a) / 2;
        if (pairs[2 * m] < key)
            a = m + 1;
        else
            b = m;
    }
    return a < n && pairs[2 * a] == key ? pairs[2 * a + 1] : -1;
}

/* Each held row of d->full in graph-file id order of its sources, and the
 * halo's partition ids indexed. */
static int order_rows(gnn_dist_part_t *d)
{
    int rc = 0;
    gnn_csr_t *g = &d->full;
    gnn_eid_t dmax = 0;
    for (int64_t r = 0; r < d->n_held; r++)
        if (g->indptr[r + 1] - g->indptr[r] > dmax) dmax = g->indptr[r + 1] - g->indptr[r];
    int64_t nh = d->n_all - d->n_owned;
    size_t cap = (size_t)(dmax > nh ? dmax : nh) + 1;
    int64_t *pair = gnn_malloc_array(2 * cap, sizeof *pair);
    d->halo_index = gnn_malloc_array(2 * (size_t)nh + 2, sizeof *d->halo_index);
    GNN_CHECK(pair && d->halo_index, GNN_ENOMEM, "part %d: rows", d->rank);
    /* Typed: by (relation, graph-file id), as one process groups its rows
     * for typed draws (relations < 256, ids < 2^55). */
    const int32_t *et = d->full_etype;
    for (int64_t r = 0; r < d->n_held; r++) {
        gnn_vid_t *row = g->indices + g->indptr[r];
        int32_t *rel = et ? d->full_etype + g->indptr[r] : NULL;
        gnn_eid_t n = g->indptr[r + 1] - g->indptr[r];
        for (gnn_eid_t e = 0; e < n; e++) {
            pair[2 * e] = rel ? (int64_t)((uint64_t)rel[e] << 55 | (uint64_t)d->gid[row[e]])
                              : d->gid[row[e]];
            pair[2 * e + 1] = row[e];
        }
        gnn_dist_pairs_sort(pair, n);
        for (gnn_eid_t e = 0; e < n; e++) {
            row[e] = pair[2 * e + 1];
            if (rel) rel[e] = (int32_t)((uint64_t)pair[2 * e] >> 55);
        }
    }
    g->flags &= ~(unsigned)GNN_CSR_SORTED;
    for (int64_t i = 0; i < nh; i++) {
        d->halo_index[2 * i] = d->l2g[d->n_owned + i];
        d->halo_index[2 * i + 1] = d->n_owned + i;
    }
    gnn_dist_pairs_sort(d->halo_index, nh);
fail:
    gnn_free(pair);
    return rc;
}

/* The whole part: square CSR over all local nodes, ids, owned features. */
static int keep_whole(gnn_dist_part_t *d, gnn_part_file_t *pf, const char *dir)
{
    int rc = 0;
    gnn_partdir_link_t lk;
    GNN_TRY(gnn_partdir_read_link(dir, GNN_PARTDIR_NODE_MAP, &lk));
    d->p2g = lk.node_map;
    lk.node_map = NULL;
    gnn_partdir_link_free(&lk);
    d->hops = pf->halo_hops;
    d->n_all = pf->n_local;
    d->n_held = pf->csr.n_rows;
    d->full = pf->csr;
    memset(&pf->csr, 0, sizeof pf->csr);
    d->full_etype = pf->etype; /* a typed graph's relations, ordered with the rows */
    pf->etype = NULL;
    gnn_eid_t *ip = gnn_realloc_array(d->full.indptr, (size_t)d->n_all + 1, sizeof *ip);
    GNN_CHECK(ip, GNN_ENOMEM, "part %d: rows", d->rank);
    d->full.indptr = ip;
    for (int64_t r = d->full.n_rows; r < d->n_all; r++) ip[r + 1] = ip[r];
    d->full.n_rows = d->n_all;
    gnn_free(d->full.weights); /* the sampler does not read them */
    d->full.weights = NULL;
    d->l2g = pf->local_to_global;
    pf->local_to_global = NULL;
    if (pf->feat) { /* the file's owned rows, taken (d->feat has its copy) */
        d->own_feat = pf->feat;
        pf->feat = NULL;
    } else {
        d->own_feat = gnn_calloc(1, sizeof(float));
        GNN_CHECK(d->own_feat, GNN_ENOMEM, "part %d: features", d->rank);
    }
    int64_t *gid = gnn_realloc_array(d->gid, (size_t)d->n_all + 1, sizeof *gid);
    GNN_CHECK(gid, GNN_ENOMEM, "part %d: ids", d->rank);
    d->gid = gid;
    memcpy(d->gid, pf->orig_id, (size_t)d->n_all * sizeof *d->gid);
    GNN_TRY(order_rows(d));
fail:
    return rc;
}

int gnn_dist_load(MPI_Comm comm, const char *dir, int whole, gnn_dist_part_t *dd)
{
    int rc = 0;
    gnn_dist_part_t *d = dd;
    gnn_part_file_t pf = {0};
    memset(d, 0, sizeof *d);
    d->comm = comm;
    d->fetch_comm = MPI_COMM_NULL;
    MPI_Comm_rank(comm, &d->rank);
    MPI_Comm_size(comm, &d->size);
    int local = gnn_partdir_read_part(dir, d->rank, &pf);
    if (local == 0 && pf.num_parts != d->size)
        local = GNN_FAIL(GNN_EUSAGE, "%s has %d parts but %d ranks were started (mpirun -np "
                         "must equal the part count)", dir, pf.num_parts, d->size);
    if (local == 0 && !pf.label) /* features are optional: learnable rows (input.c) */
        local = GNN_FAIL(GNN_EINVAL, "%s: the parts have no labels (node classification needs "
                         "labels and splits)", dir);
    for (int s = 0; s < GNN_NUM_SPLITS && local == 0; s++)
        if (!pf.split[s])
            local = GNN_FAIL(GNN_EINVAL, "%s: the parts have no %s split", dir,
                             gnn_split_names[s]);
    STEP(local);
    { /* Each rank read its own part: they must describe one graph alike. */
        static const char *const what[5] = {"num_nodes", "feat_dim", "num_classes",
                                            "node types", "edge weights"};
        int64_t mine[5] = {pf.num_nodes, pf.feat_dim, pf.num_classes, pf.types != NULL,
                           pf.csr.weights != NULL},
                first[5];
        memcpy(first, mine, sizeof first);
        GNN_MPI_TRY(MPI_Bcast(first, 5, MPI_INT64_T, 0, comm));
        for (int k = 0; k < 5 && local == 0; k++)
            if (mine[k] != first[k])
                local = GNN_FAIL(GNN_EFORMAT,
                                 "%s: parts 0 and %d differ in %s (%" PRId64 " and %" PRId64
                                 "): not one partition of one graph (gnn-partition --check %s)",
                                 dir, d->rank, what[k], first[k], mine[k], dir);
        STEP(local);
    }
    d->n_global = pf.num_nodes;
    d->n_owned = pf.n_owned;
    d->n_local = pf.hop_start[1]; /* owned + the first hop */
    d->feat_dim = pf.feat_dim;
    d->num_classes = pf.num_classes;
    /* The owned rows over owned + hop-1 columns (later hops are never
     * sources of an owned row). */
    d->csr.n_rows = d->n_owned;
    d->csr.n_cols = d->n_local;
    d->csr.nnz = pf.csr.indptr[d->n_owned];
    d->csr.indptr = gnn_malloc_array((size_t)d->n_owned + 1, sizeof *d->csr.indptr);
    d->csr.indices = gnn_malloc_array((size_t)d->csr.nnz + 1, sizeof *d->csr.indices);
    d->gid = gnn_malloc_array((size_t)d->n_local + 1, sizeof *d->gid);
    d->feat = gnn_alloc_large(((size_t)d->n_local * (size_t)d->feat_dim + 1) * sizeof *d->feat);
    local = d->csr.indptr && d->csr.indices && d->gid && d->feat
                ? 0
                : GNN_FAIL(GNN_ENOMEM, "part %d: %" PRId64 " local nodes", d->rank, d->n_local);
    if (local == 0) {
        memcpy(d->csr.indptr, pf.csr.indptr, ((size_t)d->n_owned + 1) * sizeof *d->csr.indptr);
        memcpy(d->csr.indices, pf.csr.indices, (size_t)d->csr.nnz * sizeof *d->csr.indices);
        /* Weighted aggregation on the whole graph, as one process's; a
         * mini-batch (whole) reads none, as one process's sampled blocks. */
        if (pf.csr.weights && !whole) {
            d->csr.weights = gnn_malloc_array((size_t)d->csr.nnz + 1, sizeof *d->csr.weights);
            if (!d->csr.weights)
                local = GNN_FAIL(GNN_ENOMEM, "part %d: edge weights", d->rank);
            else
                memcpy(d->csr.weights, pf.csr.weights,
                       (size_t)d->csr.nnz * sizeof *d->csr.weights);
        }
        d->csr.flags = pf.csr.flags;
        if (pf.etype && local == 0) { /* a typed graph: the owned rows' relations */
            d->etype = gnn_malloc_array((size_t)d->csr.nnz + 1, sizeof *d->etype);
            if (!d->etype)
                local = GNN_FAIL(GNN_ENOMEM, "part %d: relations", d->rank);
            else
                memcpy(d->etype, pf.etype, (size_t)d->csr.nnz * sizeof *d->etype);
            d->types = pf.types;
            pf.types = NULL;
        }
        memcpy(d->gid, pf.orig_id, (size_t)d->n_local * sizeof *d->gid);
        if (d->feat_dim > 0)
            memcpy(d->feat, pf.feat, (size_t)d->n_owned * (size_t)d->feat_dim * sizeof *d->feat);
        for (gnn_eid_t e = 0; e < d->csr.nnz && local == 0; e++)
            if (d->csr.indices[e] >= d->n_local)
                local = GNN_FAIL(GNN_EFORMAT, "part %d: an owned row names local node %" PRId64
                                 " beyond the first hop", d->rank, d->csr.indices[e]);
        d->label = pf.label;
        pf.label = NULL;
        for (int s = 0; s < GNN_NUM_SPLITS; s++) {
            d->split[s] = pf.split[s];
            d->split_n[s] = pf.split_n[s];
            pf.split[s] = NULL;
        }
    }
    STEP(local);
    d->part_start = pf.part_start;
    pf.part_start = NULL;
    GNN_MPI_TRY(MPI_Allreduce(d->split_n, d->split_total, GNN_NUM_SPLITS, MPI_INT64_T, MPI_SUM, comm));
    GNN_TRY(make_plan(d, &pf));
    if (whole) STEP(keep_whole(d, &pf, dir));
    GNN_TRY(out_degrees(d));
    GNN_TRY(gnn_dist_halo_forward(d, NULL, d->feat, d->feat_dim));
    d->bytes_sent = 0;
    d->exchange_s = 0.0;
fail:
    gnn_part_file_free(&pf);
    if (rc < 0) gnn_dist_free(d);
    return rc;
}

/* ---- Loss plans ----------------------------------------------------------------- */

static void free_loss_plans(gnn_dist_part_t *d)
{
    for (int k = 0; k < GNN_DIST_MAX_LAYERS; k++) {
        gnn_free(d->loss_plan[k].scount);
        gnn_free(d->loss_plan[k].send_rows);
        gnn_free(d->loss_plan[k].recv_rows);
        memset(&d->loss_plan[k], 0, sizeof d->loss_plan[k]);
    }
    d->n_loss_plans = 0;
}

/*
 * From the last layer down: rows[v] marks the owned rows whose output of
 * layer j the loss reads (layer L - 1: the training nodes). Layer j reads
 * its input at those rows and at their in-edges' sources (need[]). The
 * halo rows among them are plan j - 1's receives, asked of their owners by
 * position in the full plan's block from that owner; the owned rows among
 * them and the rows others ask for are what layer j - 1 must get right.
 */
int gnn_dist_loss_plans(gnn_dist_part_t *d, int layers)
{
    int rc = 0, R = d->size;
    int64_t no = d->n_owned, nl = d->n_local;
    unsigned char *need = NULL, *rows = NULL;
    int64_t *req = NULL, *got = NULL;
    free_loss_plans(d);
    int local = layers >= 1 && layers <= GNN_DIST_MAX_LAYERS
                    ? 0
                    : GNN_FAIL(GNN_EINVAL, "loss plans: %d layers", layers);
    STEP(local);
    need = gnn_calloc((size_t)nl + 1, 1);
    rows = gnn_calloc((size_t)no + 1, 1);
    STEP(need && rows ? 0 : GNN_FAIL(GNN_ENOMEM, "loss plans"));
    for (int64_t i = 0; i < d->split_n[GNN_SPLIT_TRAIN]; i++) rows[d->split[GNN_SPLIT_TRAIN][i]] = 1;
    d->n_loss_plans = layers - 1; /* freed whole on failure */
    for (int j = layers - 1; j >= 1; j--) {
        gnn_dist_plan_t *p = &d->loss_plan[j - 1];
        memset(need, 0, (size_t)nl);
        for (int64_t v = 0; v < no; v++) {
            if (!rows[v]) continue;
            need[v] = 1;
            for (gnn_eid_t e = d->csr.indptr[v]; e < d->csr.indptr[v + 1]; e++)
                need[d->csr.indices[e]] = 1;
        }
        int64_t nr = 0;
        for (int64_t r = no; r < nl; r++) nr += need[r];
        p->scount = gnn_calloc((size_t)R * 4, sizeof *p->scount);
        p->recv_rows = gnn_malloc_array((size_t)nr + 1, sizeof *p->recv_rows);
        gnn_free(req);
        req = gnn_malloc_array((size_t)nr + 1, sizeof *req);
        STEP(p->scount && p->recv_rows && req ? 0 : GNN_FAIL(GNN_ENOMEM, "loss plans"));
        p->sdispl = p->scount + R;
        p->rcount = p->scount + 2 * R;
        p->rdispl = p->scount + 3 * R;
        int64_t at = 0;
        for (int q = 0; q < R; q++) { /* the full plan's block from q, in order */
            p->rdispl[q] = (int)at;
            for (int64_t h = d->rdispl[q]; h < (int64_t)d->rdispl[q] + d->rcount[q]; h++)
                if (need[no + h]) {
                    p->recv_rows[at] = h;
                    req[at++] = h - d->rdispl[q];
                    p->rcount[q]++;
                }
        }
        p->n_recv = at;
        GNN_MPI_TRY(MPI_Alltoall(p->rcount, 1, MPI_INT, p->scount, 1, MPI_INT, d->comm));
        at = 0;
        for (int q = 0; q < R; q++) {
            p->sdispl[q] = (int)at;
            at += p->scount[q];
        }
        p->n_send = at;
        p->send_rows = gnn_malloc_array((size_t)at + 1, sizeof *p->send_rows);
        gnn_free(got);
        got = gnn_malloc_array((size_t)at + 1, sizeof *got);
        STEP(p->send_rows && got ? 0 : GNN_FAIL(GNN_ENOMEM, "loss plans"));
        GNN_MPI_TRY(MPI_Alltoallv(req, p->rcount, p->rdispl, MPI_INT64_T, got, p->scount,
                                  p->sdispl, MPI_INT64_T, d->comm));
        for (int q = 0; q < R && local == 0; q++)
            for (int64_t i = p->sdispl[q]; i < (int64_t)p->sdispl[q] + p->scount[q]; i++) {
                int64_t pos = got[i];
                if (pos < 0 || pos >= d->scount[q] || p->scount[q] > d->scount[q]) {
                    local = GNN_FAIL(GNN_EINVAL, "loss plans: rank %d asked for row %" PRId64
                                     " of the %d it receives from rank %d", q, pos,
                                     d->scount[q], d->rank);
                    break;
                }
                p->send_rows[i] = d->send_rows[d->sdispl[q] + pos];
            }
        STEP(local);
        memcpy(rows, need, (size_t)no);
        for (int64_t i = 0; i < p->n_send; i++) rows[p->send_rows[i]] = 1;
    }
fail:
    if (rc < 0) free_loss_plans(d);
    gnn_free(need);
    gnn_free(rows);
    gnn_free(req);
    gnn_free(got);
    return rc;
}

/* ---- Sampling by owners ------------------------------------------------------- */

int64_t gnn_dist_sampler_id(const gnn_dist_part_t *d, int64_t pid)
{
    int64_t first = d->part_start[d->rank];
    if (pid >= first && pid < first + d->n_owned) return pid - first;
    int64_t l = gnn_dist_pairs_find(d->halo_index, d->n_all - d->n_owned, pid);
    return l >= 0 ? l : d->n_all + pid;
}

int64_t gnn_dist_pid(const gnn_dist_part_t *d, int64_t v)
{
    return v < d->n_all ? d->l2g[v] : v - d->n_all;
}

int gnn_dist_owner(const gnn_dist_part_t *d, int64_t pid) { return owner_of(d, pid); }
