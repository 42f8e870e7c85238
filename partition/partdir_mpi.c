/*
 * Writing a partition directory across ranks (partdir_mpi.h).
 *
 * Every step that can fail on one rank is followed by agree(), an
 * all-reduce of the return codes, before the next collective call: all
 * ranks leave together with the same code and none waits forever.
 *
 * A writer holds the rows fetched so far (its parts' owned nodes, then the
 * halo hops short of the last) as a CSR over their ascending old ids, from
 * which gnn_part_local_build makes exactly the local graph it makes from
 * the whole graph. Of the whole graph a rank holds only the part array and
 * the relabelling's positions (4 + 4 bytes per node) and its slice of the
 * file's offsets: a writer learns the lengths of the rows it asks for from
 * their readers first.
 */
#include "partition/partdir_mpi.h"
#include "partition/partdir_impl.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "partition/halo.h"
#include "graph/base/mpiutil.h"

#include <inttypes.h>
#include <malloc.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define DEFAULT_CHUNK ((int64_t)64 << 20)
#define MIN_CHUNK ((int64_t)1 << 16)
/* Bytes per owned node of a group besides rows and features: its ids as
 * rows held and by part, its place in the fetch order, its row offset, its
 * label fetched and gathered, a local graph's ids both ways and row
 * offsets. */
#define GROUP_NODE_BYTES 72
/* Bytes per halo node of a part being written: its ids both ways and an
 * id-map entry. */
#define HALO_NODE_BYTES 80

typedef struct {
    MPI_Comm comm;
    int rank, size;
    const char *dir;
    gnn_graph_file_t *f;
    gnn_vid_t n;
    int64_t dim;        /* feature width, 0: none */
    int weights;        /* the graph has edge weights */
    unsigned flags;     /* the file's CSR flags a local graph keeps */
    gnn_vid_t *slice;   /* size + 1: rank r reads rows [slice[r], slice[r+1]) */
    gnn_eid_t *sindptr; /* the file's offsets of this rank's rows, and one more */
    int64_t chunk;      /* bytes a reader answers per round */
} ctx_t;

/* What a writer asks for per row: its length (in-degree), the in-edge
 * sources (and weights), the features, the label. */
enum { DEG, ROWS, FEAT, LABEL };

static int agree(const ctx_t *c, int rc) { return gnn_mpi_agree(c->comm, rc); }

/* Every rank goes on, or every rank leaves with the same code. */
#define STEP(expr)                                                                       \
    do {                                                                                 \
        rc = agree(&c, (expr));                                                          \
        if (rc < 0) goto fail;                                                           \
    } while (0)

/* Values of row v of this rank's slice in the kind's main stream. */
static int64_t row_len(const ctx_t *c, int kind, gnn_vid_t v)
{
    if (kind == ROWS) {
        gnn_vid_t r = v - c->slice[c->rank];
        return c->sindptr[r + 1] - c->sindptr[r];
    }
    return kind == FEAT ? c->dim : 1;
}

static int64_t row_bytes(const ctx_t *c, int kind, gnn_vid_t v)
{
    if (kind == ROWS) return row_len(c, kind, v) * (8 + (c->weights ? 4 : 0));
    return kind == FEAT ? c->dim * 4 : 8;
}

static int to_int(int64_t x, int *out)
{
    if (x > INT_MAX) return GNN_FAIL(GNN_ERANGE, "one message of more than 2^31 values");
    *out = (int)x;
    return 0;
}

/* One round's answer of a reader: rows [lo, hi) of the file read. */
typedef struct {
    gnn_vid_t lo, hi;
    gnn_csr_t rows; /* ROWS */
    void *buf;      /* FEAT, LABEL */
} span_t;

static int span_read(ctx_t *c, int kind, gnn_vid_t lo, gnn_vid_t hi, span_t *s)
{
    int rc = 0;
    s->lo = lo;
    s->hi = hi;
    if (hi <= lo) return 0;
    if (kind == ROWS) {
        GNN_TRY(gnn_graph_read_rows(c->f, lo, hi - lo, &s->rows));
        for (gnn_vid_t v = lo; v < hi; v++)
            GNN_CHECK(s->rows.indptr[v - lo + 1] - s->rows.indptr[v - lo] == row_len(c, ROWS, v),
                      GNN_EFORMAT, "%s: row %" PRId64 " changed while it was read",
                      gnn_graph_file_path(c->f), (int64_t)v);
        return 0;
    }
    s->buf = gnn_malloc_array((size_t)(hi - lo) * (size_t)row_len(c, kind, lo) + 1, 8);
    GNN_CHECK(s->buf, GNN_ENOMEM, "%s: %" PRId64 " rows", c->dir, (int64_t)(hi - lo));
    if (kind == DEG)
        for (gnn_vid_t v = lo; v < hi; v++) ((int64_t *)s->buf)[v - lo] = row_len(c, ROWS, v);
    else if (kind == FEAT)
        rc = gnn_graph_read_feat(c->f, lo, hi - lo, s->buf);
    else
        rc = gnn_graph_read_labels(c->f, lo, hi - lo, s->buf);
fail:
    return rc;
}

static void span_free(span_t *s)
{
    gnn_csr_free(&s->rows);
    gnn_free(s->buf);
    memset(s, 0, sizeof *s);
}

/* Copy row v of s (the main stream at *out, weights at *outw) and advance. */
static void span_copy(const ctx_t *c, int kind, const span_t *s, gnn_vid_t v, char **out,
                      float **outw)
{
    gnn_vid_t r = v - s->lo;
    if (kind == ROWS) {
        gnn_eid_t a = s->rows.indptr[r], d = s->rows.indptr[r + 1] - a;
        memcpy(*out, s->rows.indices + a, (size_t)d * sizeof(gnn_vid_t));
        *out += (size_t)d * sizeof(gnn_vid_t);
        if (s->rows.weights) {
            memcpy(*outw, s->rows.weights + a, (size_t)d * sizeof(float));
            *outw += d;
        }
        return;
    }
    size_t b = (size_t)row_len(c, kind, v) * (kind == FEAT ? sizeof(float) : sizeof(int64_t));
    memcpy(*out, (const char *)s->buf + (size_t)r * b, b);
    *out += b;
}

/* The end of the chunk that starts at row a of this rank's slice. */
static gnn_vid_t chunk_end(const ctx_t *c, int kind, gnn_vid_t a)
{
    gnn_vid_t hi = c->slice[c->rank + 1], b = a;
    if (kind != ROWS) {
        int64_t rows = c->chunk / row_bytes(c, kind, a);
        return a + (rows < 1 ? 1 : rows) < hi ? a + (rows < 1 ? 1 : rows) : hi;
    }
    int64_t bytes = 0;
    while (b < hi && (b == a || bytes + row_bytes(c, kind, b) <= c->chunk))
        bytes += row_bytes(c, kind, b++);
    return b;
}

/*
 * The kind's values of rows need[0 .. nn) (ascending old ids) into out,
 * row after row (DEG: int64 lengths; ROWS: the in-edge sources, offs[j+1]
 * - offs[j] of them for need[j], their weights into outw when the graph
 * has them; FEAT: floats; LABEL: int64). Collective; enter it agreed.
 */
static int fetch(ctx_t *c, int kind, const gnn_vid_t *need, int64_t nn, const gnn_eid_t *offs,
                 void *out, float *outw)
{
    int rc = 0, R = c->size, nrq = 0;
    int *cnt = gnn_calloc((size_t)R * 6, sizeof *cnt);
    int64_t *req = NULL, *at = gnn_calloc((size_t)R * 4 + 2, sizeof *at);
    char *pack = NULL;
    float *packw = NULL;
    size_t pack_cap = 0, packw_cap = 0;
    span_t s = {0};
    MPI_Request *rq = gnn_malloc_array((size_t)R * 4 + 1, sizeof *rq);
    const size_t esz = kind == FEAT ? sizeof(float) : sizeof(int64_t);
    const MPI_Datatype etype = kind == FEAT ? MPI_FLOAT : MPI_INT64_T;
    int local = cnt && at && rq ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: exchange buffers", c->dir);
    rc = agree(c, local);
    if (rc < 0) goto fail;
    int *scount = cnt, *sdispl = cnt + R, *rcount = cnt + 2 * R, *rdispl = cnt + 3 * R,
        *snum = cnt + 4 * R, *rnum = cnt + 5 * R;
    int64_t *base = at, *cursor = at + R + 1, *pos = at + 2 * R + 1, *pend = at + 3 * R + 1;

    /* Requests by reader (need is ascending, so each reader's run is
     * contiguous), and where each reader's answer starts in out. */
    int64_t j = 0, elems = 0, nreq = 0;
    for (int r = 0; r < R; r++) {
        int64_t j0 = j;
        base[r] = elems;
        while (j < nn && need[j] < c->slice[r + 1]) {
            elems += kind == ROWS ? offs[j + 1] - offs[j] : kind == FEAT ? c->dim : 1;
            j++;
        }
        local = to_int(j - j0, &scount[r]);
        if (local < 0) break;
        cursor[r] = base[r];
    }
    base[R] = elems;
    int64_t t = 0;
    for (int r = 0; r < R && local == 0; r++) {
        sdispl[r] = (int)t;
        t += scount[r];
        if (t > INT_MAX) local = GNN_FAIL(GNN_ERANGE, "%s: more than 2^31 rows asked", c->dir);
    }
    rc = agree(c, local);
    if (rc < 0) goto fail;
    GNN_MPI_TRY(MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, c->comm));
    for (int r = 0; r < R; r++) {
        rdispl[r] = (int)nreq;
        nreq += rcount[r];
    }
    req = gnn_malloc_array((size_t)nreq + 1, sizeof *req);
    if (nreq > INT_MAX)
        local = GNN_FAIL(GNN_ERANGE, "%s: more than 2^31 rows asked of one rank", c->dir);
    else if (!req)
        local = GNN_FAIL(GNN_ENOMEM, "%s: requests", c->dir);
    rc = agree(c, local);
    if (rc < 0) goto fail;
    GNN_MPI_TRY(MPI_Alltoallv(need, scount, sdispl, MPI_INT64_T, req, rcount, rdispl, MPI_INT64_T,
                          c->comm));
    for (int q = 0; q < R; q++) pos[q] = rdispl[q];

    /* Rounds: this rank answers the requests in one chunk of its slice. */
    gnn_vid_t lo = c->slice[c->rank], hi = c->slice[c->rank + 1];
    int64_t mine = 0, rounds = 0;
    for (gnn_vid_t a = lo; a < hi; a = chunk_end(c, kind, a)) mine++;
    GNN_MPI_TRY(MPI_Allreduce(&mine, &rounds, 1, MPI_INT64_T, MPI_MAX, c->comm));
    gnn_vid_t a = lo;
    for (int64_t round = 0; round < rounds; round++) {
        gnn_vid_t b = a < hi ? chunk_end(c, kind, a) : hi, slo = b, shi = a;
        int64_t total = 0, totalw = 0;
        local = 0;
        for (int q = 0; q < R; q++) {
            int64_t e = pos[q], n = 0, qend = rdispl[q] + rcount[q];
            while (e < qend && req[e] < b) {
                if (req[e] < a || req[e] >= hi) {
                    local = GNN_FAIL(GNN_EINVAL, "%s: rank %d asked for row %" PRId64
                                     " outside this slice", c->dir, q, req[e]);
                    break;
                }
                n += row_len(c, kind, req[e++]);
            }
            if (e > pos[q]) {
                slo = req[pos[q]] < slo ? req[pos[q]] : slo;
                shi = req[e - 1] + 1 > shi ? req[e - 1] + 1 : shi;
            }
            pend[q] = e;
            if (local == 0) local = to_int(n, &snum[q]);
            total += n;
            if (kind == ROWS && c->weights) totalw += n;
        }
        if (local == 0) local = span_read(c, kind, slo, shi, &s);
        if (local == 0 && (size_t)total * esz + 1 > pack_cap) {
            gnn_free(pack);
            pack_cap = (size_t)total * esz + 1;
            pack = gnn_malloc(pack_cap);
            if (!pack) local = GNN_FAIL(GNN_ENOMEM, "%s: a chunk of %" PRId64 " values",
                                        c->dir, total);
        }
        if (local == 0 && (size_t)totalw + 1 > packw_cap) {
            gnn_free(packw);
            packw_cap = (size_t)totalw + 1;
            packw = gnn_malloc_array(packw_cap, sizeof *packw);
            if (!packw) local = GNN_FAIL(GNN_ENOMEM, "%s: a chunk of %" PRId64 " weights",
                                         c->dir, totalw);
        }
        rc = agree(c, local);
        if (rc < 0) goto fail;
        char *p = pack;
        float *pw = packw;
        for (int q = 0; q < R; q++)
            for (int64_t e = pos[q]; e < pend[q]; e++) span_copy(c, kind, &s, req[e], &p, &pw);
        GNN_MPI_TRY(MPI_Alltoall(snum, 1, MPI_INT, rnum, 1, MPI_INT, c->comm));
        nrq = 0;
        int tagw = kind == ROWS && c->weights;
        for (int r = 0; r < R; r++) {
            if (!rnum[r]) continue;
            if (cursor[r] + rnum[r] > base[r + 1]) {
                /* Only if the file changed between the ranks' reads of its
                 * offsets: the sender is already committed to the send. */
                GNN_LOG_ERROR_("%s: rank %d sent more than asked (the graph file changed while "
                               "it was read?)", c->dir, r);
                MPI_Abort(c->comm, 1);
            }
            GNN_MPI_TRY(MPI_Irecv((char *)out + (size_t)cursor[r] * esz, rnum[r], etype, r, 1,
                              c->comm, &rq[nrq++]));
            if (tagw)
                GNN_MPI_TRY(MPI_Irecv(outw + cursor[r], rnum[r], MPI_FLOAT, r, 2, c->comm,
                                  &rq[nrq++]));
        }
        int64_t off = 0;
        for (int q = 0; q < R; q++) {
            if (snum[q]) {
                GNN_MPI_TRY(MPI_Isend(pack + (size_t)off * esz, snum[q], etype, q, 1, c->comm,
                                  &rq[nrq++]));
                if (tagw)
                    GNN_MPI_TRY(MPI_Isend(packw + off, snum[q], MPI_FLOAT, q, 2, c->comm,
                                      &rq[nrq++]));
            }
            off += snum[q];
            pos[q] = pend[q];
        }
        GNN_MPI_TRY(MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE));
        nrq = 0;
        for (int r = 0; r < R; r++) cursor[r] += rnum[r];
        span_free(&s);
        a = b;
    }
    local = 0;
    for (int r = 0; r < R && local == 0; r++)
        if (cursor[r] != base[r + 1])
            local = GNN_FAIL(GNN_EFORMAT, "%s: rank %d answered %" PRId64 " of %" PRId64
                             " values (the graph file changed while it was read?)",
                             c->dir, r, cursor[r] - base[r], base[r + 1] - base[r]);
    rc = agree(c, local);
fail:
    span_free(&s);
    gnn_free(cnt);
    gnn_free(at);
    gnn_free(req);
    gnn_free(pack);
    gnn_free(packw);
    gnn_free(rq);
    return rc;
}

/* ---- One group of parts on one rank -------------------------------------------- */

typedef struct {
    gnn_csr_t g;     /* a row per node of need, n columns */
    gnn_vid_t *need; /* the rows held, ascending old ids */
} rows_t;

static void rows_clear(rows_t *w)
{
    gnn_csr_free(&w->g);
    gnn_free(w->need);
    w->need = NULL;
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/*
 * The in-edge rows of ids[0 .. n) (ascending) into *r, which takes ids:
 * their lengths from the readers, then the rows. Collective; enter it
 * agreed. On failure r holds what it has (rows_clear frees it).
 */
static int fetch_rows(ctx_t *c, gnn_vid_t *ids, int64_t n, rows_t *r)
{
    int rc = 0, local = 0;
    memset(r, 0, sizeof *r);
    r->need = ids;
    r->g.n_rows = n;
    r->g.n_cols = c->n;
    r->g.flags = c->flags;
    r->g.indptr = gnn_malloc_array((size_t)n + 1, sizeof *r->g.indptr);
    rc = agree(c, r->g.indptr ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: %" PRId64 " rows", c->dir, n));
    if (rc < 0) return rc;
    /* The lengths into place, then their running sum. */
    rc = fetch(c, DEG, ids, n, NULL, r->g.indptr + 1, NULL);
    if (rc < 0) return rc;
    r->g.indptr[0] = 0;
    for (int64_t i = 0; i < n; i++) r->g.indptr[i + 1] += r->g.indptr[i];
    r->g.nnz = r->g.indptr[n];
    r->g.indices = gnn_alloc_large(((size_t)r->g.nnz + 1) * sizeof *r->g.indices);
    if (c->weights) r->g.weights = gnn_alloc_large(((size_t)r->g.nnz + 1) * sizeof(float));
    if (!r->g.indices || (c->weights && !r->g.weights))
        local = GNN_FAIL(GNN_ENOMEM, "out of memory for %" PRId64 " edges of %" PRId64 " rows",
                         (int64_t)r->g.nnz, n);
    rc = agree(c, local);
    if (rc < 0) return rc;
    return fetch(c, ROWS, ids, n, r->g.indptr, r->g.indices, r->g.weights);
}

/* The rows of w and add in one set (ascending ids); add is freed. */
static int rows_merge(const ctx_t *c, rows_t *w, rows_t *add)
{
    int rc = 0;
    int64_t n = w->g.n_rows + add->g.n_rows;
    gnn_eid_t nnz = w->g.nnz + add->g.nnz;
    rows_t r = {.g = {.n_rows = n, .n_cols = c->n, .nnz = nnz, .flags = c->flags}};
    r.need = gnn_malloc_array((size_t)n + 1, sizeof *r.need);
    r.g.indptr = gnn_malloc_array((size_t)n + 1, sizeof *r.g.indptr);
    r.g.indices = gnn_alloc_large(((size_t)nnz + 1) * sizeof *r.g.indices);
    if (c->weights) r.g.weights = gnn_alloc_large(((size_t)nnz + 1) * sizeof *r.g.weights);
    GNN_CHECK(r.need && r.g.indptr && r.g.indices && (!c->weights || r.g.weights), GNN_ENOMEM,
              "%s: halo rows", c->dir);
    int64_t i = 0, j = 0;
    r.g.indptr[0] = 0;
    for (int64_t k = 0; k < n; k++) {
        int old = j >= add->g.n_rows || (i < w->g.n_rows && w->need[i] < add->need[j]);
        const rows_t *s = old ? w : add;
        int64_t x = old ? i++ : j++;
        gnn_eid_t a = s->g.indptr[x], d = s->g.indptr[x + 1] - a, e = r.g.indptr[k];
        r.need[k] = s->need[x];
        memcpy(r.g.indices + e, s->g.indices + a, (size_t)d * sizeof *r.g.indices);
        if (r.g.weights) memcpy(r.g.weights + e, s->g.weights + a, (size_t)d * sizeof(float));
        r.g.indptr[k + 1] = e + d;
    }
    rows_clear(w);
    rows_clear(add);
    *w = r;
    return 0;
fail:
    rows_clear(&r);
    return rc;
}

/* The group's parts: parts[i]'s owned nodes are own[off[i] .. off[i+1]),
 * ascending old ids; at[] gives each one's place among all the group's
 * owned nodes in ascending old id (the order features and labels come in),
 * NULL when the graph has neither. */
typedef struct {
    const int *parts;
    int np;
    gnn_vid_t *own;
    int64_t *off, *at;
} group_t;

/* The hop-h nodes of the group's parts whose rows w does not hold,
 * ascending, without repeats. */
static int next_hop(const ctx_t *c, const rows_t *w, const gnn_part_map_t *m, const group_t *gr,
                    int h, gnn_vid_t **add, int64_t *nadd)
{
    int rc = 0;
    gnn_part_local_t l = {0};
    int64_t cap = 0, na = 0;
    gnn_vid_t *a = NULL;
    for (int i = 0; i < gr->np; i++) {
        GNN_TRY(gnn_part_local_build(&(gnn_part_rows_t){.g = &w->g, .ids = w->need}, m,
                                     gr->parts[i], gr->own + gr->off[i], h, &l));
        gnn_vid_t h0 = l.hop_start[h - 1], h1 = l.hop_start[h];
        if (h1 == h0) { /* nothing new at this hop (one part, or a closed halo) */
            gnn_part_local_free(&l);
            continue;
        }
        if (na + (h1 - h0) > cap) {
            cap = 2 * (na + (h1 - h0)) + 1024;
            gnn_vid_t *b = gnn_realloc_array(a, (size_t)cap, sizeof *a);
            GNN_CHECK(b, GNN_ENOMEM, "%s: halo of part %d", c->dir, gr->parts[i]);
            a = b;
        }
        memcpy(a + na, l.old_ids + h0, (size_t)(h1 - h0) * sizeof *a);
        na += h1 - h0;
        gnn_part_local_free(&l);
    }
    if (na > 1) qsort(a, (size_t)na, sizeof *a, cmp_vid);
    /* Drop repeats and the rows held (w->need is ascending too). */
    int64_t k = 0, i = 0;
    for (int64_t j = 0; j < na; j++) {
        if (k > 0 && a[j] == a[k - 1]) continue;
        while (i < w->g.n_rows && w->need[i] < a[j]) i++;
        if (i < w->g.n_rows && w->need[i] == a[j]) continue;
        a[k++] = a[j];
    }
    *add = a;
    *nadd = k;
    return 0;
fail:
    gnn_part_local_free(&l);
    gnn_free(a);
    return rc;
}

/* Write the group's parts from the rows, features and labels fetched
 * (feat and lab in ascending old id of the group's owned nodes). */
static int write_group(const ctx_t *c, const rows_t *w, const gnn_part_map_t *m,
                       const gnn__part_splits_t *sp, const group_t *gr, const float *feat,
                       const int64_t *lab, int64_t num_classes, int hops, const char *tmp,
                       gnn__part_stats_t *st, int64_t *halo)
{
    int rc = 0;
    gnn_part_local_t l = {0};
    float *pf = NULL;
    int64_t *pl = NULL;
    for (int i = 0; i < gr->np; i++) {
        int p = gr->parts[i];
        gnn_vid_t no = m->start[p + 1] - m->start[p];
        gnn__part_content_t cont = {.num_parts = m->num_parts, .first_id = m->start[p],
                                    .local = &l};
        GNN_TRY(gnn_part_local_build(&(gnn_part_rows_t){.g = &w->g, .ids = w->need}, m, p,
                                     gr->own + gr->off[i], hops, &l));
        *halo += l.n_local - l.n_owned;
        pf = feat ? gnn_alloc_large(((size_t)no * (size_t)c->dim + 1) * sizeof *pf) : NULL;
        pl = lab ? gnn_malloc_array((size_t)no + 1, sizeof *pl) : NULL;
        GNN_CHECK((!feat || pf) && (!lab || pl), GNN_ENOMEM, "part %d: features and labels", p);
        for (gnn_vid_t x = 0; gr->at && x < no; x++) {
            int64_t j = gr->at[gr->off[i] + x];
            if (pf)
                memcpy(pf + (size_t)x * (size_t)c->dim, feat + j * c->dim,
                       (size_t)c->dim * sizeof *pf);
            if (pl) pl[x] = lab[j];
        }
        if (pf) {
            cont.feat = pf;
            cont.feat_dim = c->dim;
        }
        if (pl) {
            cont.label = pl;
            cont.num_classes = num_classes;
        }
        gnn__part_splits_of(sp, p, &cont);
        GNN_TRY(gnn__partdir_write_part(tmp, &cont, &st[p]));
        gnn_part_local_free(&l);
        gnn_free(pf);
        gnn_free(pl);
        pf = NULL;
        pl = NULL;
    }
fail:
    gnn_part_local_free(&l);
    gnn_free(pf);
    gnn_free(pl);
    return rc;
}

/* ---- The whole directory ------------------------------------------------------- */

/* What part p is planned at before any of it is fetched: its owned nodes'
 * rows, fetched and built into a local graph, and their ids, features and
 * labels. Halo rows and nodes come on top: the writer scales the plan by
 * what earlier groups took over theirs. */
static int64_t part_plan(const ctx_t *c, const gnn_part_map_t *m, const int64_t *pedges, int p)
{
    return 2 * pedges[p] * (8 + (c->weights ? 4 : 0)) +
           (int64_t)(m->start[p + 1] - m->start[p]) * (GROUP_NODE_BYTES + 8 * c->dim);
}

/*
 * The end of the group of parts that starts at parts[g0]: every part left
 * without a budget (avail 0); otherwise the parts whose plans, times grow,
 * fit avail together, at least one; only parts[g0] while grow is not known
 * (0: no group written yet, and halo rows beyond the first hop to come).
 */
static int next_group(const ctx_t *c, const gnn_part_map_t *m, const int64_t *pedges,
                      const int *parts, int np, int g0, int64_t avail, double grow, int *warned)
{
    if (avail <= 0) return np;
    int64_t used = 0;
    int g1 = g0;
    while (g1 < np) {
        int p = parts[g1];
        int64_t est = (int64_t)((grow > 0 ? grow : 1.0) * (double)part_plan(c, m, pedges, p));
        if (g1 > g0 && used + est > avail) break;
        if (g1 == g0 && est > avail && !*warned) {
            GNN_WARN("%s: part %d needs about %.0f MiB to write, more than the budget leaves "
                     "(%.0f MiB); it is written alone",
                     c->dir, p, (double)est / 1048576.0, (double)avail / 1048576.0);
            *warned = 1;
        }
        used += est;
        g1++;
        if (grow <= 0) break;
    }
    return g1;
}

static int check_args(const char *dir, const char *graph, const int32_t *part, int k,
                      const gnn_partdir_meta_t *meta, const gnn_partdir_mpi_opts_t *o)
{
    int rc = 0;
    GNN_CHECK(dir && graph && part && meta && o && k >= 1, GNN_EINVAL, "partition: bad argument");
    GNN_CHECK(meta->halo_hops >= 1 && meta->halo_hops <= GNN_PARTDIR_MAX_HOPS, GNN_EINVAL,
              "partition: --halo-hops %d outside [1, %d]", meta->halo_hops, GNN_PARTDIR_MAX_HOPS);
    GNN_CHECK(o->mem_budget >= 0 && o->chunk_bytes >= 0, GNN_EINVAL,
              "partition: negative budget or chunk");
fail:
    return rc;
}

/* Rank 0 makes the temporary directory; the others learn its name. */
static int open_tmp(ctx_t *cp, const char *dir, int force, gnn__partdir_tx_t *tx)
{
    ctx_t c = *cp;
    int rc = 0, len = 0;
    char *name = NULL;
    if (c.rank == 0) {
        rc = gnn__partdir_begin(dir, force, (long)getpid(), tx);
        if (rc == 0) len = (int)strlen(tx->tmp) + 1;
    }
    STEP(rc);
    GNN_MPI_TRY(MPI_Bcast(&len, 1, MPI_INT, 0, c.comm));
    name = gnn_malloc((size_t)len);
    STEP(name ? 0 : GNN_FAIL(GNN_ENOMEM, "partition"));
    if (c.rank == 0) memcpy(name, tx->tmp, (size_t)len);
    GNN_MPI_TRY(MPI_Bcast(name, len, MPI_CHAR, 0, c.comm));
    STEP(c.rank == 0 ? 0 : gnn__partdir_join(name, tx));
fail:
    gnn_free(name);
    return rc;
}

/*
 * Rows [slice[r], slice[r+1]) hold about 1/R of the nodes plus edges:
 * rank r finds slice[r], the first v with indptr[v] + v at least r/R of
 * the total, by bisection over the file's offsets, and the ranks share
 * theirs. Then each reads the offsets of its own rows.
 */
static int make_slices(ctx_t *c, gnn_eid_t ne)
{
    int rc = 0, local = 0;
    gnn_vid_t a = 0, b = c->rank == 0 ? 0 : c->n;
    int64_t target = (int64_t)((double)(ne + c->n) * c->rank / c->size);
    while (a < b && local == 0) {
        gnn_vid_t mid = a + (b - a) / 2;
        gnn_eid_t off = 0;
        local = gnn_graph_read_indptr(c->f, mid, 0, &off);
        if (off + mid >= target)
            b = mid;
        else
            a = mid + 1;
    }
    rc = agree(c, local);
    if (rc < 0) return rc;
    GNN_MPI_TRY(MPI_Allgather(&a, 1, MPI_INT64_T, c->slice, 1, MPI_INT64_T, c->comm));
    c->slice[c->size] = c->n;
    for (int r = 0; r < c->size && local == 0; r++) /* the same verdict on every rank */
        if (c->slice[r] > c->slice[r + 1])
            local = GNN_FAIL(GNN_EFORMAT, "%s: indptr is not ascending (rows %" PRId64
                             " and %" PRId64 ")", gnn_graph_file_path(c->f),
                             (int64_t)c->slice[r + 1], (int64_t)c->slice[r]);
    if (local < 0) return local;
    gnn_vid_t lo = c->slice[c->rank], hi = c->slice[c->rank + 1];
    c->sindptr = gnn_alloc_large(((size_t)(hi - lo) + 1) * sizeof *c->sindptr);
    local = c->sindptr ? gnn_graph_read_indptr(c->f, lo, hi - lo, c->sindptr)
                       : GNN_FAIL(GNN_ENOMEM, "%s: the offsets of %" PRId64 " rows", c->dir,
                                  (int64_t)(hi - lo));
    rc = agree(c, local);
fail:
    return rc;
}

/* In-edges of each part's owned nodes, summed over the ranks' slices. */
static int part_edges(const ctx_t *c, const int32_t *part, int k, int64_t *pe)
{
    int rc = 0;
    for (gnn_vid_t v = c->slice[c->rank]; v < c->slice[c->rank + 1]; v++)
        pe[part[v]] += row_len(c, ROWS, v);
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, pe, k, MPI_INT64_T, MPI_SUM, c->comm));
fail:
    return rc;
}

int gnn_partdir_write_mpi(MPI_Comm comm, const char *dir, const char *graph, const int32_t *part,
                          int k, const gnn_partdir_meta_t *meta, const gnn_partdir_mpi_opts_t *o)
{
    int rc = 0;
    ctx_t c = {.comm = comm, .dir = dir ? dir : "partition"};
    gnn__partdir_tx_t tx = {0};
    gnn_part_map_t m = {0};
    gnn__part_splits_t sp = {0};
    gnn__part_stats_t *st = NULL;
    int64_t *split[GNN_NUM_SPLITS] = {0}, ssize[GNN_NUM_SPLITS], split_bytes = 0;
    int64_t *pedges = NULL, *off = NULL, *at = NULL;
    gnn_vid_t *pown = NULL, *ids = NULL, *add = NULL;
    float *feat = NULL;
    int64_t *lab = NULL;
    int *parts = NULL, *gidx = NULL, np = 0;
    rows_t w = {0}, more = {0};
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);

    STEP(check_args(dir, graph, part, k, meta, o));
    STEP(open_tmp(&c, dir, o->force, &tx));

    STEP(gnn_graph_open(graph, &c.f));
    const gnn_graph_info_t *info = gnn_graph_file_info(c.f);
    c.n = info->num_nodes;
    c.dim = info->feat_dim;
    c.weights = info->has_weights;
    c.flags = info->csr_flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);
    c.chunk = o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK;
    if (!o->chunk_bytes && o->mem_budget && o->mem_budget / 16 < c.chunk)
        c.chunk = o->mem_budget / 16 > MIN_CHUNK ? o->mem_budget / 16 : MIN_CHUNK;
    c.slice = gnn_malloc_array((size_t)c.size + 1, sizeof *c.slice);
    STEP(c.slice ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: slices", c.dir));
    STEP(make_slices(&c, info->num_edges));
    STEP(gnn_part_relabel(part, c.n, k, 0, &m));
    rc = 0;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        ssize[s] = -1;
        if (rc == 0 && info->split_size[s] >= 0) {
            rc = gnn_graph_read_split(c.f, (gnn_split_t)s, &split[s], &ssize[s]);
            split_bytes += 8 * (ssize[s] > 0 ? ssize[s] : 0);
        }
    }
    STEP(rc);
    STEP(gnn__part_splits_build(graph, split, ssize, part, &m, &sp));
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        gnn_free(split[s]);
        split[s] = NULL;
    }
    st = gnn_calloc((size_t)k, sizeof *st);
    pedges = gnn_calloc((size_t)k, sizeof *pedges);
    gidx = gnn_malloc_array((size_t)k, sizeof *gidx);
    STEP(st && pedges && gidx ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: %d parts", c.dir, k));
    for (int p = 0; p < k; p++) gidx[p] = -1;
    STEP(part_edges(&c, part, k, pedges));

    int64_t avail = 0;
    if (o->mem_budget) {
        int64_t fixed = (int64_t)c.n * GNN_PARTDIR_MPI_NODE_BYTES +
                        8 * (c.slice[c.rank + 1] - c.slice[c.rank]) + split_bytes;
        avail = o->mem_budget - fixed - 3 * c.chunk;
        if (avail <= 0) {
            if (c.rank == 0)
                GNN_WARN("%s: --mem-budget leaves nothing for the parts after %.0f MiB of "
                         "per-node arrays; each part is written alone",
                         c.dir, (double)fixed / 1048576.0);
            avail = 1;
        }
    }
    /* This rank's parts, p = rank, rank + R, ..., written in groups that
     * fit the budget. Every rank takes part in every group's fetches (with
     * no parts once its own are written) until all are written. */
    np = c.rank < k ? (k - 1 - c.rank) / c.size + 1 : 0;
    parts = gnn_malloc_array((size_t)np + 1, sizeof *parts);
    STEP(parts ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: parts", c.dir));
    for (int i = 0; i < np; i++) parts[i] = c.rank + i * c.size;
    /* What a group took over its plan, the most so far: 1 to begin with
     * when the halo is one hop (its rows are the owned ones; only the halo
     * nodes come on top), unknown (0) with more. */
    double grow = meta->halo_hops > 1 ? 0 : 1;
    int warned = 0;
    for (int g0 = 0;;) {
        int left = np - g0, any = 0;
        GNN_MPI_TRY(MPI_Allreduce(&left, &any, 1, MPI_INT, MPI_MAX, comm));
        if (any == 0) break;
        int g1 = g0 < np ? next_group(&c, &m, pedges, parts, np, g0, avail, grow, &warned) : np;
        group_t gr = {.parts = parts + g0, .np = g1 - g0};
        int64_t nown = 0, planned = 0, halo = 0;
        /* The owned nodes of the group: ascending, and by part. */
        for (int i = 0; i < gr.np; i++) {
            gidx[gr.parts[i]] = i;
            nown += m.start[gr.parts[i] + 1] - m.start[gr.parts[i]];
            planned += part_plan(&c, &m, pedges, gr.parts[i]);
        }
        int carried = c.dim || info->has_labels;
        ids = gnn_alloc_large(((size_t)nown + 1) * sizeof *ids);
        gr.own = pown = gnn_alloc_large(((size_t)nown + 1) * sizeof *pown);
        gr.off = off = gnn_malloc_array((size_t)gr.np + 1, sizeof *off);
        gr.at = at = carried ? gnn_alloc_large(((size_t)nown + 1) * sizeof *at) : NULL;
        rc = ids && pown && off && (at || !carried)
                 ? 0
                 : GNN_FAIL(GNN_ENOMEM, "%s: %" PRId64 " owned nodes", c.dir, nown);
        if (rc == 0) {
            off[0] = 0;
            for (int i = 0; i < gr.np; i++)
                off[i + 1] = off[i] + m.start[gr.parts[i] + 1] - m.start[gr.parts[i]];
            int64_t j = 0;
            for (gnn_vid_t v = 0; v < c.n; v++) {
                int i = gidx[part[v]];
                if (i < 0) continue;
                pown[off[i] + m.rank[v]] = v;
                if (at) at[off[i] + m.rank[v]] = j;
                ids[j++] = v;
            }
        }
        STEP(rc);
        rc = fetch_rows(&c, ids, nown, &w);
        ids = NULL; /* w holds it */
        STEP(rc);
        /* Features and labels while the rows held are the owned ones. */
        rc = 0;
        if (c.dim) {
            feat = gnn_alloc_large(((size_t)nown * (size_t)c.dim + 1) * sizeof *feat);
            if (!feat) rc = GNN_FAIL(GNN_ENOMEM, "%s: features of %" PRId64 " nodes", c.dir, nown);
        }
        if (info->has_labels) {
            lab = gnn_malloc_array((size_t)nown + 1, sizeof *lab);
            if (!lab) rc = GNN_FAIL(GNN_ENOMEM, "%s: labels of %" PRId64 " nodes", c.dir, nown);
        }
        STEP(rc);
        if (c.dim) STEP(fetch(&c, FEAT, w.need, nown, NULL, feat, NULL));
        if (info->has_labels) STEP(fetch(&c, LABEL, w.need, nown, NULL, lab, NULL));
        for (int h = 1; h < meta->halo_hops; h++) {
            int64_t na = 0;
            STEP(next_hop(&c, &w, &m, &gr, h, &add, &na));
            rc = fetch_rows(&c, add, na, &more);
            add = NULL; /* more holds it */
            STEP(rc);
            STEP(rows_merge(&c, &w, &more));
        }
        STEP(write_group(&c, &w, &m, &sp, &gr, feat, lab, info->num_classes, meta->halo_hops,
                         tx.tmp, st, &halo));
        /* What the group took: the rows held (halo hops short of the last
         * included), owned nodes' data, halo nodes; the next groups are
         * planned at the largest ratio to the plan seen. */
        if (planned > 0) {
            int64_t took = 2 * (int64_t)w.g.nnz * (8 + (c.weights ? 4 : 0)) +
                           nown * (GROUP_NODE_BYTES + 8 * c.dim) + halo * HALO_NODE_BYTES;
            double r = (double)took / (double)planned;
            if (r > grow) grow = r;
        }
        g0 = g1;
        for (int i = 0; i < gr.np; i++) gidx[gr.parts[i]] = -1;
        rows_clear(&w);
        gnn_free(pown);
        gnn_free(off);
        gnn_free(at);
        gnn_free(feat);
        gnn_free(lab);
        pown = NULL;
        off = at = NULL;
        feat = NULL;
        lab = NULL;
        malloc_trim(0);
    }

    /* Every part's figures to rank 0, which finishes the directory. */
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, st, (int)((size_t)k * sizeof *st / sizeof(int64_t)),
                          MPI_INT64_T, MPI_SUM, comm));
    rc = 0;
    if (c.rank == 0) { /* with the graph file's held-out edges, when it has them */
        gnn_graph_t lk;
        gnn_graph_init(&lk);
        for (int q = 0; q < GNN_NUM_LINK_SETS && info->link_size[0] >= 0 && rc == 0; q++)
            rc = gnn_graph_read_link(c.f, (gnn_link_set_t)q, &lk.link[q], &lk.link_size[q]);
        lk.link_neg_per_pos = info->link_neg_per_pos;
        if (rc == 0)
            rc = gnn__partdir_write_meta(tx.tmp, c.n, info->num_edges, &m, meta, st,
                                         info->directed, &lk);
        gnn_graph_free(&lk);
        if (rc == 0) rc = gnn__partdir_commit(&tx);
    }
    STEP(rc);
fail:
    gnn__partdir_end(&tx);
    gnn_graph_close(c.f);
    gnn_free(c.slice);
    gnn_free(c.sindptr);
    gnn_part_map_free(&m);
    gnn__part_splits_free(&sp);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_free(split[s]);
    gnn_free(st);
    gnn_free(pedges);
    gnn_free(pown);
    gnn_free(at);
    gnn_free(ids);
    gnn_free(add);
    gnn_free(off);
    gnn_free(feat);
    gnn_free(lab);
    gnn_free(parts);
    gnn_free(gidx);
    rows_clear(&w);
    rows_clear(&more);
    return rc;
}
