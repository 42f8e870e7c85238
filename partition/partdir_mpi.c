/*
 * Writing a partition directory across ranks (partdir_mpi.h).
 *
 * Every step that can fail on one rank is followed by agree(), an
 * all-reduce of the return codes, before the next collective call: all
 * ranks leave together with the same code and none waits forever.
 *
 * A writer's rows live in a CSR over all n old ids whose rows are empty
 * except for the nodes fetched so far (its parts' owned nodes, then the
 * halo hops short of the last), so gnn_part_local_build makes from it
 * exactly the local graph it makes from the whole graph.
 */
#include "partition/partdir_mpi.h"
#include "partition/partdir_impl.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "partition/halo.h"
#include "partition/mpiutil.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define DEFAULT_CHUNK ((int64_t)64 << 20)
#define MIN_CHUNK ((int64_t)1 << 16)

typedef struct {
    MPI_Comm comm;
    int rank, size;
    const char *dir;
    gnn_graph_file_t *f;
    gnn_vid_t n;
    int64_t dim;       /* feature width, 0: none */
    int weights;       /* the graph has edge weights */
    gnn_eid_t *indptr; /* the file's, n + 1 */
    gnn_vid_t *slice;  /* size + 1: rank r reads rows [slice[r], slice[r+1]) */
    int64_t chunk;     /* bytes a reader answers per round */
} ctx_t;

enum { ROWS, FEAT, LABEL };

static int agree(const ctx_t *c, int rc) { return gnn_mpi_agree(c->comm, rc); }

/* Every rank goes on, or every rank leaves with the same code. */
#define STEP(expr)                                                                       \
    do {                                                                                 \
        rc = agree(&c, (expr));                                                          \
        if (rc < 0) goto fail;                                                           \
    } while (0)

/* Values of row v in the kind's main stream (sources, floats, labels). */
static int64_t row_len(const ctx_t *c, int kind, gnn_vid_t v)
{
    if (kind == ROWS) return c->indptr[v + 1] - c->indptr[v];
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
            GNN_CHECK(s->rows.indptr[v - lo + 1] - s->rows.indptr[v - lo] ==
                          c->indptr[v + 1] - c->indptr[v],
                      GNN_EFORMAT, "%s: row %" PRId64 " changed while it was read",
                      gnn_graph_file_path(c->f), (int64_t)v);
        return 0;
    }
    s->buf = gnn_malloc_array((size_t)(hi - lo) * (size_t)row_len(c, kind, lo) + 1, 8);
    GNN_CHECK(s->buf, GNN_ENOMEM, "%s: %" PRId64 " rows", c->dir, (int64_t)(hi - lo));
    if (kind == FEAT)
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
 * row after row (ROWS: the in-edge sources, their weights into outw when
 * the graph has them; FEAT: floats; LABEL: int64). Collective; enter it
 * agreed.
 */
static int fetch(ctx_t *c, int kind, const gnn_vid_t *need, int64_t nn, void *out, float *outw)
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
        while (j < nn && need[j] < c->slice[r + 1]) elems += row_len(c, kind, need[j++]);
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
    gnn_csr_t g;       /* n x n, rows only for need */
    gnn_vid_t *need;   /* the rows held, ascending */
    int64_t nneed;
    uint8_t *have;     /* n: 1 for the rows held or being fetched */
} rows_t;

/* g.indptr over all n ids from the rows held (indices already in place). */
static void rows_index(const ctx_t *c, rows_t *w)
{
    int64_t j = 0;
    w->g.indptr[0] = 0;
    for (gnn_vid_t v = 0; v < c->n; v++) {
        gnn_eid_t d = 0;
        if (j < w->nneed && w->need[j] == v) {
            d = c->indptr[v + 1] - c->indptr[v];
            j++;
        }
        w->g.indptr[v + 1] = w->g.indptr[v] + d;
    }
    w->g.nnz = w->g.indptr[c->n];
}

static int64_t sum_deg(const ctx_t *c, const gnn_vid_t *v, int64_t n)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; i++) s += c->indptr[v[i] + 1] - c->indptr[v[i]];
    return s;
}

/* Allocate the sources (and weights) of the rows of v[0 .. n). */
static int rows_alloc(const ctx_t *c, const gnn_vid_t *v, int64_t n, gnn_vid_t **idx, float **w)
{
    int64_t e = sum_deg(c, v, n);
    *idx = gnn_alloc_large(((size_t)e + 1) * sizeof **idx);
    *w = c->weights ? gnn_alloc_large(((size_t)e + 1) * sizeof **w) : NULL;
    if (!*idx || (c->weights && !*w)) {
        gnn_free(*idx);
        gnn_free(*w);
        *idx = NULL;
        *w = NULL;
        return GNN_FAIL(GNN_ENOMEM, "out of memory for %" PRId64 " edges of %" PRId64 " rows", e,
                        n);
    }
    return 0;
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* The hop-h nodes of the group's parts not held yet, ascending. */
static int next_hop(const ctx_t *c, rows_t *w, const gnn_part_map_t *m, const int *parts,
                    int np, int h, gnn_vid_t *mark, gnn_vid_t **add, int64_t *nadd)
{
    int rc = 0;
    gnn_part_local_t l = {0};
    int64_t cap = 0, na = 0;
    gnn_vid_t *a = NULL;
    for (int i = 0; i < np; i++) {
        GNN_TRY(gnn_part_local_build(&w->g, m, parts[i], h, mark, &l));
        for (gnn_vid_t r = l.hop_start[h - 1]; r < l.hop_start[h]; r++) {
            gnn_vid_t v = m->old_of_new[l.local_to_global[r]];
            if (w->have[v]) continue;
            if (na == cap) {
                cap = cap ? 2 * cap : 1024;
                gnn_vid_t *b = gnn_realloc_array(a, (size_t)cap, sizeof *a);
                GNN_CHECK(b, GNN_ENOMEM, "%s: halo of part %d", c->dir, parts[i]);
                a = b;
            }
            w->have[v] = 1;
            a[na++] = v;
        }
        gnn_part_local_free(&l);
    }
    if (na > 1) qsort(a, (size_t)na, sizeof *a, cmp_vid);
    *add = a;
    *nadd = na;
    return 0;
fail:
    gnn_part_local_free(&l);
    gnn_free(a);
    return rc;
}

/* Merge rows add[0 .. na) (sources aidx, weights aw) into w. */
static int rows_merge(const ctx_t *c, rows_t *w, const gnn_vid_t *add, int64_t na,
                      const gnn_vid_t *aidx, const float *aw)
{
    int rc = 0;
    gnn_vid_t *need = gnn_malloc_array((size_t)(w->nneed + na) + 1, sizeof *need), *idx = NULL;
    float *wt = NULL;
    GNN_CHECK(need, GNN_ENOMEM, "%s: halo rows", c->dir);
    int64_t i = 0, j = 0, k = 0;
    while (i < w->nneed || j < na)
        need[k++] = j >= na || (i < w->nneed && w->need[i] < add[j]) ? w->need[i++] : add[j++];
    GNN_TRY(rows_alloc(c, need, k, &idx, &wt));
    gnn_eid_t e = 0, ei = 0, ej = 0;
    i = j = 0;
    for (int64_t r = 0; r < k; r++) {
        gnn_vid_t v = need[r];
        gnn_eid_t d = c->indptr[v + 1] - c->indptr[v];
        int old = i < w->nneed && w->need[i] == v;
        const gnn_vid_t *src = old ? w->g.indices + ei : aidx + ej;
        const float *srcw = old ? (wt ? w->g.weights + ei : NULL) : (wt ? aw + ej : NULL);
        memcpy(idx + e, src, (size_t)d * sizeof *idx);
        if (wt) memcpy(wt + e, srcw, (size_t)d * sizeof *wt);
        if (old) {
            i++;
            ei += d;
        } else {
            j++;
            ej += d;
        }
        e += d;
    }
    gnn_free(w->need);
    gnn_free(w->g.indices);
    gnn_free(w->g.weights);
    w->need = need;
    w->nneed = k;
    w->g.indices = idx;
    w->g.weights = wt;
    rows_index(c, w);
    return 0;
fail:
    gnn_free(need);
    gnn_free(idx);
    gnn_free(wt);
    return rc;
}

static void rows_clear(rows_t *w)
{
    for (int64_t i = 0; w->have && i < w->nneed; i++) w->have[w->need[i]] = 0;
    gnn_free(w->need);
    gnn_free(w->g.indices);
    gnn_free(w->g.weights);
    w->need = NULL;
    w->g.indices = NULL;
    w->g.weights = NULL;
    w->nneed = 0;
}

/* Write the group's parts from the rows, features and labels fetched. */
static int write_group(const ctx_t *c, const rows_t *w, const gnn_part_map_t *m,
                       const gnn__part_splits_t *sp, const int32_t *part, const int *parts,
                       int np, const gnn_vid_t *own, int64_t nown, const float *feat,
                       const int64_t *lab, int64_t num_classes, int hops, gnn_vid_t *mark,
                       const char *tmp, gnn__part_stats_t *st)
{
    int rc = 0;
    gnn_part_local_t l = {0};
    float *pf = NULL;
    int64_t *pl = NULL;
    for (int i = 0; i < np; i++) {
        int p = parts[i];
        gnn_vid_t no = m->start[p + 1] - m->start[p], x = 0;
        gnn__part_content_t cont = {.num_parts = m->num_parts, .first_id = m->start[p],
                                    .local = &l};
        GNN_TRY(gnn_part_local_build(&w->g, m, p, hops, mark, &l));
        pf = feat ? gnn_alloc_large(((size_t)no * (size_t)c->dim + 1) * sizeof *pf) : NULL;
        pl = lab ? gnn_malloc_array((size_t)no + 1, sizeof *pl) : NULL;
        GNN_CHECK((!feat || pf) && (!lab || pl), GNN_ENOMEM, "part %d: features and labels", p);
        /* A part's nodes keep their relative order, so its owned nodes in
         * new-id order are its entries of own (ascending old ids). */
        for (int64_t j = 0; j < nown; j++) {
            if (part[own[j]] != p) continue;
            if (pf) memcpy(pf + x * c->dim, feat + j * c->dim, (size_t)c->dim * sizeof *pf);
            if (pl) pl[x] = lab[j];
            x++;
        }
        GNN_CHECK(x == no, GNN_EINVAL, "part %d: %" PRId64 " of %" PRId64 " owned nodes", p,
                  (int64_t)x, (int64_t)no);
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

/* This rank's parts (p = rank, rank + R, ...) in groups that fit the
 * budget: group g is parts[gend[g-1] .. gend[g]). */
static int plan_groups(const ctx_t *c, const gnn_part_map_t *m, int k, int64_t avail,
                       int **parts, int *np, int **gend, int *ng)
{
    int n = c->rank < k ? (k - 1 - c->rank) / c->size + 1 : 0, g = 0;
    *parts = gnn_malloc_array((size_t)n + 1, sizeof **parts);
    *gend = gnn_malloc_array((size_t)n + 1, sizeof **gend);
    if (!*parts || !*gend) return GNN_FAIL(GNN_ENOMEM, "%s: parts", c->dir);
    int64_t used = 0;
    int warned = 0;
    for (int i = 0; i < n; i++) {
        int p = c->rank + i * c->size;
        (*parts)[i] = p;
        if (avail <= 0) { /* no budget: every part of this rank at once */
            (*gend)[0] = i + 1;
            g = 1;
            continue;
        }
        gnn_eid_t e = 0;
        for (gnn_vid_t x = m->start[p]; x < m->start[p + 1]; x++) {
            gnn_vid_t v = m->old_of_new[x];
            e += c->indptr[v + 1] - c->indptr[v];
        }
        int64_t est = 2 * e * (8 + (c->weights ? 4 : 0)) +
                      (int64_t)(m->start[p + 1] - m->start[p]) * (4 * c->dim + 24);
        if (est > avail && !warned) {
            GNN_WARN("%s: part %d needs about %.0f MiB to write, more than the budget leaves "
                     "(%.0f MiB); it is written alone",
                     c->dir, p, (double)est / 1048576.0, (double)avail / 1048576.0);
            warned = 1;
        }
        if (g > 0 && used + est <= avail) {
            (*gend)[g - 1] = i + 1;
            used += est;
        } else {
            (*gend)[g++] = i + 1;
            used = est;
        }
    }
    *np = n;
    *ng = g;
    return 0;
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

/* Rows [slice[r], slice[r+1]) hold about 1/R of the nodes plus edges. */
static void make_slices(ctx_t *c)
{
    gnn_vid_t n = c->n;
    int64_t total = c->indptr[n] + n;
    c->slice[0] = 0;
    for (int r = 1; r < c->size; r++) {
        int64_t target = (int64_t)((double)total * r / c->size);
        gnn_vid_t a = c->slice[r - 1], b = n; /* first v with indptr[v] + v >= target */
        while (a < b) {
            gnn_vid_t mid = a + (b - a) / 2;
            if (c->indptr[mid] + mid >= target)
                b = mid;
            else
                a = mid + 1;
        }
        c->slice[r] = a;
    }
    c->slice[c->size] = n;
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
    gnn_vid_t *mark = NULL, *own = NULL, *add = NULL, *aidx = NULL;
    float *aw = NULL, *feat = NULL;
    int64_t *lab = NULL;
    int *parts = NULL, *gend = NULL, np = 0, ng = 0;
    uint8_t *ingroup = NULL;
    rows_t w = {0};
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);

    STEP(check_args(dir, graph, part, k, meta, o));
    STEP(open_tmp(&c, dir, o->force, &tx));

    STEP(gnn_graph_open(graph, &c.f));
    const gnn_graph_info_t *info = gnn_graph_file_info(c.f);
    c.n = info->num_nodes;
    c.dim = info->feat_dim;
    c.weights = info->has_weights;
    c.chunk = o->chunk_bytes ? o->chunk_bytes : DEFAULT_CHUNK;
    if (!o->chunk_bytes && o->mem_budget && o->mem_budget / 16 < c.chunk)
        c.chunk = o->mem_budget / 16 > MIN_CHUNK ? o->mem_budget / 16 : MIN_CHUNK;
    c.indptr = gnn_alloc_large(((size_t)c.n + 1) * sizeof *c.indptr);
    c.slice = gnn_malloc_array((size_t)c.size + 1, sizeof *c.slice);
    STEP(c.indptr && c.slice ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: the graph's offsets", c.dir));
    STEP(gnn_graph_read_indptr(c.f, 0, c.n, c.indptr));
    make_slices(&c);
    STEP(gnn_part_relabel(part, c.n, k, &m));
    rc = 0;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        ssize[s] = -1;
        if (rc == 0 && info->split_size[s] >= 0) {
            rc = gnn_graph_read_split(c.f, (gnn_split_t)s, &split[s], &ssize[s]);
            split_bytes += 8 * (ssize[s] > 0 ? ssize[s] : 0);
        }
    }
    STEP(rc);
    STEP(gnn__part_splits_build(split, ssize, part, &m, &sp));
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        gnn_free(split[s]);
        split[s] = NULL;
    }
    st = gnn_calloc((size_t)k, sizeof *st);
    mark = gnn_alloc_large(((size_t)c.n + 1) * sizeof *mark);
    w.have = gnn_calloc((size_t)c.n + 1, 1);
    w.g.indptr = gnn_alloc_large(((size_t)c.n + 1) * sizeof *w.g.indptr);
    ingroup = gnn_calloc((size_t)k, 1);
    STEP(st && mark && w.have && w.g.indptr && ingroup
             ? 0
             : GNN_FAIL(GNN_ENOMEM, "%s: %" PRId64 " nodes", c.dir, (int64_t)c.n));
    for (gnn_vid_t x = 0; x < c.n; x++) mark[x] = -1;
    w.g.n_rows = w.g.n_cols = c.n;
    w.g.flags = info->csr_flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS);

    int64_t avail = 0;
    if (o->mem_budget) {
        avail = o->mem_budget - (int64_t)c.n * GNN_PARTDIR_MPI_NODE_BYTES - split_bytes -
                3 * c.chunk;
        if (avail <= 0) {
            if (c.rank == 0)
                GNN_WARN("%s: --mem-budget leaves nothing for the parts after %.0f MiB of "
                         "per-node arrays; each part is written alone",
                         c.dir, (double)(c.n * GNN_PARTDIR_MPI_NODE_BYTES) / 1048576.0);
            avail = 1;
        }
    }
    STEP(plan_groups(&c, &m, k, avail, &parts, &np, &gend, &ng));
    int groups = 0;
    GNN_MPI_TRY(MPI_Allreduce(&ng, &groups, 1, MPI_INT, MPI_MAX, comm));

    for (int g = 0; g < groups; g++) {
        int g0 = g == 0 ? 0 : g < ng ? gend[g - 1] : np, g1 = g < ng ? gend[g] : np;
        const int *gp = parts + g0;
        int gn = g1 - g0;
        int64_t nown = 0;
        /* The owned nodes of the group, ascending old ids. */
        for (int i = 0; i < gn; i++) {
            ingroup[gp[i]] = 1;
            nown += m.start[gp[i] + 1] - m.start[gp[i]];
        }
        own = gnn_alloc_large(((size_t)nown + 1) * sizeof *own);
        rc = own ? 0 : GNN_FAIL(GNN_ENOMEM, "%s: %" PRId64 " owned nodes", c.dir, nown);
        if (own) {
            int64_t j = 0;
            for (gnn_vid_t v = 0; v < c.n; v++)
                if (ingroup[part[v]]) own[j++] = v;
            w.need = gnn_malloc_array((size_t)nown + 1, sizeof *w.need);
            if (!w.need) rc = GNN_FAIL(GNN_ENOMEM, "%s: owned rows", c.dir);
        }
        if (rc == 0) {
            memcpy(w.need, own, (size_t)nown * sizeof *own);
            w.nneed = nown;
            rc = rows_alloc(&c, own, nown, &w.g.indices, &w.g.weights);
        }
        STEP(rc);
        STEP(fetch(&c, ROWS, own, nown, w.g.indices, w.g.weights));
        for (int64_t i = 0; i < nown; i++) w.have[own[i]] = 1;
        rows_index(&c, &w);
        for (int h = 1; h < meta->halo_hops; h++) {
            int64_t na = 0;
            rc = next_hop(&c, &w, &m, gp, gn, h, mark, &add, &na);
            if (rc == 0) rc = rows_alloc(&c, add, na, &aidx, &aw);
            STEP(rc);
            STEP(fetch(&c, ROWS, add, na, aidx, aw));
            STEP(rows_merge(&c, &w, add, na, aidx, aw));
            gnn_free(add);
            gnn_free(aidx);
            gnn_free(aw);
            add = aidx = NULL;
            aw = NULL;
        }
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
        if (c.dim) STEP(fetch(&c, FEAT, own, nown, feat, NULL));
        if (info->has_labels) STEP(fetch(&c, LABEL, own, nown, lab, NULL));
        STEP(write_group(&c, &w, &m, &sp, part, gp, gn, own, nown, feat, lab, info->num_classes,
                         meta->halo_hops, mark, tx.tmp, st));
        for (int i = 0; i < gn; i++) ingroup[gp[i]] = 0;
        rows_clear(&w);
        gnn_free(own);
        gnn_free(feat);
        gnn_free(lab);
        own = NULL;
        feat = NULL;
        lab = NULL;
    }

    /* Every part's figures to rank 0, which finishes the directory. */
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, st, (int)((size_t)k * sizeof *st / sizeof(int64_t)),
                          MPI_INT64_T, MPI_SUM, comm));
    rc = 0;
    if (c.rank == 0) {
        rc = gnn__partdir_write_meta(tx.tmp, c.n, info->num_edges, &m, meta, st);
        if (rc == 0) rc = gnn__partdir_commit(&tx);
    }
    STEP(rc);
fail:
    gnn__partdir_end(&tx);
    gnn_graph_close(c.f);
    gnn_free(c.indptr);
    gnn_free(c.slice);
    gnn_part_map_free(&m);
    gnn__part_splits_free(&sp);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_free(split[s]);
    gnn_free(st);
    gnn_free(mark);
    gnn_free(own);
    gnn_free(add);
    gnn_free(aidx);
    gnn_free(aw);
    gnn_free(feat);
    gnn_free(lab);
    gnn_free(parts);
    gnn_free(gend);
    gnn_free(ingroup);
    rows_clear(&w);
    gnn_free(w.have);
    gnn_free(w.g.indptr);
    return rc;
}
