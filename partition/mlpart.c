/*
 * Multilevel partitioning across ranks (mlpart.h).
 *
 * A level is a graph distributed by contiguous ranges of node ids: rank r
 * owns [dist[r], dist[r+1]) and holds their rows (neighbour ids, edge
 * weights, vertex weights). Once a level is "localized", its neighbour
 * entries are local indices: i < nloc for an owned node, nloc + g for
 * ghost g (a neighbour owned elsewhere; ghosts sorted by global id). The
 * ghost plan records who asks whom for which node, so values of ghosts
 * (cluster ids, parts) come over in one all-to-all.
 *
 * Clusters never cross ranks: a node only joins clusters of neighbours on
 * its own rank. The coarse nodes of a rank are therefore numbered within
 * the rank, a fine node's coarse node is owned by the same rank, and
 * projection needs no communication. Nodes left without a local partner
 * are paired among themselves so that every level shrinks.
 *
 * Every step that can fail on one rank is followed by agree(), an
 * all-reduce of the return codes, before the next collective call: all
 * ranks leave together with the same code, and none waits forever.
 */
#include "partition/mlpart.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"
#include "graph/base/rng.h"
#include "partition/fm.h"
#include "partition/kway.h"
#include "graph/base/mpiutil.h"

#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define CHUNK_EDGES ((int64_t)1 << 22) /* stored edges read per exchange round, at most */
#define CHUNK_BYTES 48                 /* buffer bytes per edge of a round, all ranks' share */

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int ncon;
    const gnn_mlpart_opts_t *o;
    int64_t avail;       /* budget left beside what the process held at the start; 0: none */
    int64_t chunk_edges; /* stored edges per exchange round */
} ctx_t;

typedef struct {
    int64_t n, lo, nloc, entries; /* entries: global adjacency entries */
    int64_t *dist;                /* size + 1 */
    int64_t *xadj, *adj, *adjw;   /* adjw NULL: every weight is 1 */
    int64_t *vwgt;                /* nloc x ncon */
    int localized;
    int64_t nghost, *ghost;       /* remote neighbours, ascending global ids */
    int *gcount, *gdispl;         /* ghosts per owner */
    int64_t nreq, *req;           /* local indices other ranks asked for */
    int *rcount, *rdispl;         /* requests per asking rank */
    int64_t *cmap;                /* coarse node (local index on the next level) */
    int64_t *odist;               /* gathered on rank 0: the ranges before (size + 1) */
    int dropped;                  /* graph freed to stay within the budget: not refined */
} level_t;


int64_t gnn_mlpart_peak_rss(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (int64_t)ru.ru_maxrss * 1024;
}

int gnn_mlpart_reset_peak_rss(void)
{
    malloc_trim(0); /* freed heap back to the system: the new peak starts from what is in use */
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

int64_t gnn_mlpart_rss(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return 0;
    int ok = fscanf(f, "%ld %ld", &pages, &resident) == 2;
    fclose(f);
    return ok ? (int64_t)resident * sysconf(_SC_PAGESIZE) : 0;
}

/* Bytes a level holds on this rank. */
static int64_t level_bytes(const level_t *L, int ncon)
{
    int64_t ne = L->xadj ? L->xadj[L->nloc] : 0;
    return 8 * (L->nloc + 1) + 8 * ne * (L->adjw ? 2 : 1) + 8 * (int64_t)ncon * L->nloc +
           8 * (L->nghost + L->nreq) + (L->cmap ? 8 * L->nloc : 0);
}

/* Drop a level's graph, keeping its map to the next level: it is not
 * refined then. */
static void level_drop_graph(level_t *L)
{
    gnn_free(L->xadj);
    gnn_free(L->adj);
    gnn_free(L->adjw);
    gnn_free(L->ghost);
    gnn_free(L->req);
    L->xadj = L->adj = L->adjw = L->ghost = L->req = NULL;
    L->nghost = L->nreq = 0;
    L->dropped = 1;
}

/* The lowest failing code over all ranks, or 0. A rank that did not fail
 * records which rank did. */
static int agree(const ctx_t *c, int rc) { return gnn_mpi_agree(c->comm, rc); }

static int64_t sum_i64(const ctx_t *c, int64_t x)
{
    int64_t y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT64_T, MPI_SUM, c->comm);
    return y;
}

static int64_t max_i64(const ctx_t *c, int64_t x)
{
    int64_t y = 0;
    MPI_Allreduce(&x, &y, 1, MPI_INT64_T, MPI_MAX, c->comm);
    return y;
}

static int owner_of(const int64_t *dist, int size, int64_t u)
{
    int a = 0, b = size - 1; /* dist[a] <= u < dist[b + 1] */
    while (a < b) {
        int m = (a + b + 1) / 2;
        if (dist[m] <= u)
            a = m;
        else
            b = m - 1;
    }
    return a;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t id, w;
} pair_t;

static int cmp_pair(const void *a, const void *b)
{
    int64_t x = ((const pair_t *)a)->id, y = ((const pair_t *)b)->id;
    return (x > y) - (x < y);
}

static void level_free(level_t *L)
{
    gnn_free(L->dist);
    gnn_free(L->xadj);
    gnn_free(L->adj);
    gnn_free(L->adjw);
    gnn_free(L->vwgt);
    gnn_free(L->ghost);
    gnn_free(L->gcount);
    gnn_free(L->gdispl);
    gnn_free(L->req);
    gnn_free(L->rcount);
    gnn_free(L->rdispl);
    gnn_free(L->cmap);
    gnn_free(L->odist);
    memset(L, 0, sizeof *L);
}

/* Displacements of counts; GNN_ERANGE past an int. */
static int displs(const int *count, int n, int *displ, int64_t *total)
{
    int64_t t = 0;
    for (int i = 0; i < n; i++) {
        displ[i] = (int)t;
        t += count[i];
        if (t > INT_MAX) return GNN_FAIL(GNN_ERANGE, "one exchange of more than 2^31 values");
    }
    *total = t;
    return 0;
}

/* Send send (grouped by destination, scount each) to every rank; *recv is
 * allocated here with *nrecv values, grouped by source. rc_in: this rank's
 * state before it (a failure agreed with the first step's, not apart). */
static int alltoallv_i64(const ctx_t *c, int rc_in, const int64_t *send, const int *scount,
                         int64_t **recv, int64_t *nrecv)
{
    int rc = 0, R = c->size;
    int *sd = gnn_malloc_array((size_t)R, sizeof *sd), *rcnt = gnn_malloc_array((size_t)R, sizeof *rcnt),
        *rd = gnn_malloc_array((size_t)R, sizeof *rd);
    int64_t ns = 0;
    *recv = NULL;
    *nrecv = 0;
    /* A rank's own failure is agreed before each collective step, which
     * its peers would otherwise wait in. */
    rc = rc_in < 0 ? rc_in : sd && rcnt && rd ? 0 : GNN_FAIL(GNN_ENOMEM, "exchange buffers");
    if (rc == 0) rc = displs(scount, R, sd, &ns);
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Alltoall(scount, 1, MPI_INT, rcnt, 1, MPI_INT, c->comm));
    rc = displs(rcnt, R, rd, nrecv);
    if (rc == 0) {
        *recv = gnn_malloc_array((size_t)*nrecv + 1, sizeof **recv);
        if (!*recv) rc = GNN_FAIL(GNN_ENOMEM, "exchange buffers");
    }
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Alltoallv(send, scount, sd, MPI_INT64_T, *recv, rcnt, rd, MPI_INT64_T, c->comm));
fail:
    if (rc < 0) {
        gnn_free(*recv);
        *recv = NULL;
        *nrecv = 0;
    }
    gnn_free(sd);
    gnn_free(rcnt);
    gnn_free(rd);
    return rc;
}

/* ---- The fine level from the graph file --------------------------------- */

/* First row whose indptr reaches target (binary search over the file). */
static int row_at_edge(gnn_graph_file_t *f, gnn_vid_t n, gnn_eid_t target, gnn_vid_t *row)
{
    int rc = 0;
    gnn_vid_t a = 0, b = n; /* indptr[b] >= target */
    while (a < b) {
        gnn_vid_t m = a + (b - a) / 2;
        gnn_eid_t x;
        GNN_TRY(gnn_graph_read_indptr(f, m, 0, &x));
        if (x >= target)
            b = m;
        else
            a = m + 1;
    }
    *row = a;
fail:
    return rc;
}

/* Sort each row, drop repeats, and close the gaps. */
static void sort_dedup_rows(level_t *L)
{
    int64_t *len = L->cmap; /* borrowed scratch, nloc + 1 */
#pragma omp parallel for schedule(dynamic, 1024)
    for (int64_t i = 0; i < L->nloc; i++) {
        int64_t *r = L->adj + L->xadj[i], d = L->xadj[i + 1] - L->xadj[i], m = 0;
        qsort(r, (size_t)d, sizeof *r, cmp_i64);
        for (int64_t j = 0; j < d; j++)
            if (m == 0 || r[j] != r[m - 1]) r[m++] = r[j];
        len[i] = m;
    }
    int64_t out = 0;
    for (int64_t i = 0; i < L->nloc; i++) {
        int64_t s = L->xadj[i];
        L->xadj[i] = out;
        memmove(L->adj + out, L->adj + s, (size_t)len[i] * sizeof *L->adj);
        out += len[i];
    }
    L->xadj[L->nloc] = out;
}

/* Entries u of row v (sorted rows, global ids) whose reverse v is missing
 * from row u, summed over ranks; remote rows are asked in rounds of
 * c->chunk_edges entries. */
static int verify_symmetric(const ctx_t *c, const level_t *L, int64_t *missing)
{
    int rc = 0, R = c->size;
    int64_t lo = L->lo, nloc = L->nloc, ne = L->xadj[nloc], bad = 0, v = 0;
    int64_t *send = gnn_malloc_array(2 * (size_t)c->chunk_edges + 2, sizeof *send), *recv = NULL;
    int *scount = gnn_calloc((size_t)R, sizeof *scount), *fill = gnn_calloc((size_t)R, sizeof *fill);
    if (!send || !scount || !fill) rc = GNN_FAIL(GNN_ENOMEM, "symmetry check");
    GNN_TRY(agree(c, rc));
    int64_t rounds = max_i64(c, (ne + c->chunk_edges - 1) / c->chunk_edges);
    for (int64_t r = 0; r < rounds; r++) {
        int64_t e0 = r * c->chunk_edges, e1 = e0 + c->chunk_edges < ne ? e0 + c->chunk_edges : ne;
        memset(scount, 0, (size_t)R * sizeof *scount);
        for (int64_t e = e0; e < e1; e++) {
            int64_t u = L->adj[e];
            if (u < lo || u >= lo + nloc) scount[owner_of(L->dist, R, u)] += 2;
        }
        for (int q = 0, t = 0; q < R; t += scount[q++]) fill[q] = t;
        while (v < nloc && L->xadj[v + 1] <= e0) v++;
        for (int64_t e = e0, w = v; e < e1; e++) {
            while (L->xadj[w + 1] <= e) w++;
            int64_t u = L->adj[e];
            if (u >= lo && u < lo + nloc) {
                const int64_t *row = L->adj + L->xadj[u - lo], self = lo + w;
                if (!bsearch(&self, row, (size_t)(L->xadj[u - lo + 1] - L->xadj[u - lo]),
                             sizeof *row, cmp_i64))
                    bad++;
            } else {
                int o = owner_of(L->dist, R, u);
                send[fill[o]++] = u;
                send[fill[o]++] = lo + w;
            }
        }
        int64_t nrecv = 0;
        GNN_TRY(alltoallv_i64(c, 0, send, scount, &recv, &nrecv));
        for (int64_t j = 0; j < nrecv; j += 2) {
            int64_t u = recv[j] - lo;
            const int64_t *row = L->adj + L->xadj[u];
            if (!bsearch(&recv[j + 1], row, (size_t)(L->xadj[u + 1] - L->xadj[u]), sizeof *row,
                         cmp_i64))
                bad++;
        }
        gnn_free(recv);
        recv = NULL;
    }
    *missing = sum_i64(c, bad);
fail:
    gnn_free(send);
    gnn_free(recv);
    gnn_free(scount);
    gnn_free(fill);
    return rc;
}

/*
 * Rows [lo, hi) of this rank, undirected: two passes over the slice in
 * chunks of about c->chunk_edges stored edges; the first counts each row's
 * entries (an upper bound: repeats are dropped later), the second fills
 * them. Entries for rows owned elsewhere go to their owner after each chunk.
 */
static int build_fine(const ctx_t *c, gnn_graph_file_t *f, level_t *L, gnn_progress_t *prog)
{
    int rc = 0, R = c->size;
    const gnn_graph_info_t *info = gnn_graph_file_info(f);
    gnn_vid_t n = info->num_nodes;
    gnn_eid_t E = info->num_edges;
    int64_t *ip = NULL, *buf = NULL, *send = NULL, *recv = NULL, *pos = NULL, *chunk_row = NULL;
    int *scount = gnn_calloc((size_t)R, sizeof *scount);
    int *fill = gnn_calloc((size_t)R, sizeof *fill);
    int64_t nchunks = 0, max_chunks = 0;
    L->n = n;
    L->dist = gnn_malloc_array((size_t)R + 1, sizeof *L->dist);
    GNN_CHECK(scount && fill && L->dist, GNN_ENOMEM, "graph slice");
    gnn_vid_t lo = 0;
    if (c->rank > 0) rc = row_at_edge(f, n, (gnn_eid_t)((__int128)E * c->rank / R), &lo);
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Allgather(&lo, 1, MPI_INT64_T, L->dist, 1, MPI_INT64_T, c->comm));
    L->dist[R] = n;
    L->lo = lo;
    L->nloc = L->dist[c->rank + 1] - lo;
    int64_t nloc = L->nloc;

    ip = gnn_malloc_array((size_t)nloc + 1, sizeof *ip);
    L->xadj = gnn_calloc((size_t)nloc + 1, sizeof *L->xadj);
    L->cmap = gnn_malloc_array((size_t)nloc + 1, sizeof *L->cmap);
    chunk_row = gnn_malloc_array((size_t)nloc + 2, sizeof *chunk_row);
    if (!ip || !L->xadj || !L->cmap || !chunk_row) rc = GNN_FAIL(GNN_ENOMEM, "graph slice");
    if (rc == 0) rc = gnn_graph_read_indptr(f, lo, nloc, ip);
    if (rc == 0) { /* chunks of whole rows, about c->chunk_edges edges each */
        int64_t r = 0;
        while (r < nloc) {
            chunk_row[nchunks++] = r;
            int64_t s = r;
            while (r < nloc && (r == s || ip[r + 1] - ip[s] <= c->chunk_edges)) r++;
        }
        chunk_row[nchunks] = nloc;
        int64_t longest = 0;
        for (int64_t i = 0; i < nchunks; i++) {
            int64_t e = ip[chunk_row[i + 1]] - ip[chunk_row[i]];
            if (e > longest) longest = e;
        }
        buf = gnn_malloc_array((size_t)longest + 1, sizeof *buf);
        send = gnn_malloc_array(2 * (size_t)longest + 1, sizeof *send);
        if (!buf || !send) rc = GNN_FAIL(GNN_ENOMEM, "graph slice buffers");
    }
    GNN_TRY(agree(c, rc));
    max_chunks = max_i64(c, nchunks);

    /* A file that says every edge is stored both ways gives each row's
     * undirected adjacency by itself: trusted only once verified, and built
     * again with the reverse entries otherwise. */
    for (int both = info->directed != 0;; both = 1) {
    for (int pass = 0; pass < 2; pass++) {
        int per = pass == 0 ? 1 : 2; /* values sent per remote entry */
        if (pass == 1) {
            for (int64_t i = 0; i < nloc; i++) L->xadj[i + 1] += L->xadj[i];
            int64_t need = 8 * L->xadj[nloc] + (56 + 8 * (int64_t)c->ncon) * nloc +
                           CHUNK_BYTES * c->chunk_edges;
            if (c->avail > 0 && need > c->avail)
                rc = GNN_FAIL(GNN_ENOMEM,
                              "--mem-budget %" PRId64 " MiB: rank %d needs about %" PRId64
                              " MiB for its slice of the graph (%" PRId64 " adjacency entries) "
                              "beside the %" PRId64 " MiB the process holds already; use more "
                              "ranks or a larger budget",
                              c->o->mem_budget >> 20, c->rank, need >> 20, L->xadj[nloc],
                              (c->o->mem_budget - c->avail) >> 20);
            if (rc == 0) {
                L->adj = gnn_alloc_large(((size_t)L->xadj[nloc] + 1) * sizeof *L->adj);
                pos = gnn_malloc_array((size_t)nloc + 1, sizeof *pos);
                if (!L->adj || !pos) rc = GNN_FAIL(GNN_ENOMEM, "adjacency of the graph slice");
                else memcpy(pos, L->xadj, (size_t)nloc * sizeof *pos);
            }
            GNN_TRY(agree(c, rc));
        }
        for (int64_t ch = 0; ch < max_chunks; ch++) {
            int64_t r0 = ch < nchunks ? chunk_row[ch] : nloc, r1 = ch < nchunks ? chunk_row[ch + 1] : nloc;
            int64_t ne = ip[r1] - ip[r0];
            memset(scount, 0, (size_t)R * sizeof *scount);
            if (ne > 0) rc = gnn_graph_read_indices(f, ip[r0], ne, buf);
            if (rc == 0) {
                /* count per owner, then pack */
                for (int64_t v = r0; v < r1; v++)
                    for (int64_t e = ip[v] - ip[r0]; e < ip[v + 1] - ip[r0]; e++) {
                        int64_t u = buf[e];
                        if (!both || u == lo + v) continue;
                        if (u >= lo && u < lo + nloc) continue;
                        scount[owner_of(L->dist, R, u)] += per;
                    }
                int64_t t = 0;
                for (int r = 0; r < R; r++) {
                    fill[r] = (int)t;
                    t += scount[r];
                }
                for (int64_t v = r0; v < r1; v++)
                    for (int64_t e = ip[v] - ip[r0]; e < ip[v + 1] - ip[r0]; e++) {
                        int64_t u = buf[e];
                        if (u == lo + v) continue; /* self loop */
                        if (!both) {
                            if (pass == 0)
                                L->xadj[v + 1]++;
                            else
                                L->adj[pos[v]++] = u;
                            continue;
                        }
                        if (pass == 0) {
                            L->xadj[v + 1]++;
                            if (u >= lo && u < lo + nloc)
                                L->xadj[u - lo + 1]++;
                            else
                                send[fill[owner_of(L->dist, R, u)]++] = u;
                        } else {
                            L->adj[pos[v]++] = u;
                            if (u >= lo && u < lo + nloc) {
                                L->adj[pos[u - lo]++] = lo + v;
                            } else {
                                int o = owner_of(L->dist, R, u);
                                send[fill[o]++] = u;
                                send[fill[o]++] = lo + v;
                            }
                        }
                    }
            }
            int64_t nrecv = 0;
            GNN_TRY(alltoallv_i64(c, rc, send, scount, &recv, &nrecv));
            for (int64_t j = 0; j < nrecv; j += per) {
                int64_t u = recv[j];
                if (u < lo || u >= lo + nloc) {
                    rc = GNN_FAIL(GNN_EINTERNAL, "node %" PRId64 " sent to the wrong rank", u);
                    break;
                }
                if (pass == 0)
                    L->xadj[u - lo + 1]++;
                else
                    L->adj[pos[u - lo]++] = recv[j + 1];
            }
            gnn_free(recv);
            recv = NULL;
            GNN_TRY(agree(c, rc));
            if (pass == 1) gnn_progress_add(prog, ne);
        }
    }
    sort_dedup_rows(L);
    if (both) break;
    int64_t missing = 0;
    GNN_TRY(verify_symmetric(c, L, &missing));
    if (missing == 0) break;
    if (c->rank == 0)
        GNN_WARN("%s says every edge is stored both ways, but %" PRId64 " are not: adding the "
                 "reverse edges",
                 gnn_graph_file_path(f), missing);
    gnn_free(L->adj);
    L->adj = NULL;
    gnn_free(pos);
    pos = NULL;
    memset(L->xadj, 0, ((size_t)nloc + 1) * sizeof *L->xadj);
    }
    gnn_free(buf);
    buf = NULL;
    gnn_free(send);
    send = NULL;
    int64_t *shrunk = gnn_realloc_array(L->adj, (size_t)L->xadj[nloc] + 1, sizeof *L->adj);
    if (shrunk) L->adj = shrunk;
    L->entries = sum_i64(c, L->xadj[nloc]);

    /* vertex weights: nodes, 1 + in-degree, train */
    int ncon = c->ncon, col = 0;
    L->vwgt = gnn_calloc((size_t)nloc * (size_t)ncon + 1, sizeof *L->vwgt);
    GNN_CHECK(L->vwgt, GNN_ENOMEM, "vertex weights");
    if (c->o->balance_nodes) {
        for (int64_t i = 0; i < nloc; i++) L->vwgt[i * ncon + col] = 1;
        col++;
    }
    if (c->o->balance_edges) {
        for (int64_t i = 0; i < nloc; i++) L->vwgt[i * ncon + col] = 1 + ip[i + 1] - ip[i];
        col++;
    }
    if (c->o->balance_train) {
        int64_t *train = NULL, nt = 0;
        rc = gnn_graph_read_split(f, GNN_SPLIT_TRAIN, &train, &nt);
        for (int64_t j = 0; rc == 0 && j < nt; j++)
            if (train[j] >= lo && train[j] < lo + nloc) L->vwgt[(train[j] - lo) * ncon + col] = 1;
        gnn_free(train);
    }
fail:
    rc = agree(c, rc);
    gnn_free(ip);
    gnn_free(buf);
    gnn_free(send);
    gnn_free(recv);
    gnn_free(pos);
    gnn_free(chunk_row);
    gnn_free(scount);
    gnn_free(fill);
    gnn_free(L->cmap);
    L->cmap = NULL;
    return rc;
}

/* ---- Ghosts --------------------------------------------------------------- */

/* Turn global neighbour ids into local indices and set up the ghost plan. */
static int localize(const ctx_t *c, level_t *L)
{
    int rc = 0, R = c->size;
    int64_t lo = L->lo, hi = L->lo + L->nloc, ne = L->xadj[L->nloc], ng = 0;
    int64_t *tmp = NULL;
    L->gcount = gnn_calloc((size_t)R, sizeof *L->gcount);
    L->gdispl = gnn_calloc((size_t)R, sizeof *L->gdispl);
    L->rcount = gnn_calloc((size_t)R, sizeof *L->rcount);
    L->rdispl = gnn_calloc((size_t)R, sizeof *L->rdispl);
    if (!L->gcount || !L->gdispl || !L->rcount || !L->rdispl) rc = GNN_FAIL(GNN_ENOMEM, "ghosts");
    int64_t nremote = 0;
    for (int64_t e = 0; rc == 0 && e < ne; e++) nremote += L->adj[e] < lo || L->adj[e] >= hi;
    if (rc == 0) {
        tmp = gnn_malloc_array((size_t)nremote + 1, sizeof *tmp);
        if (!tmp) rc = GNN_FAIL(GNN_ENOMEM, "ghosts");
    }
    if (rc == 0) {
        int64_t t = 0;
        for (int64_t e = 0; e < ne; e++)
            if (L->adj[e] < lo || L->adj[e] >= hi) tmp[t++] = L->adj[e];
        qsort(tmp, (size_t)nremote, sizeof *tmp, cmp_i64);
        for (int64_t j = 0; j < nremote; j++)
            if (ng == 0 || tmp[j] != tmp[ng - 1]) tmp[ng++] = tmp[j];
        L->ghost = gnn_realloc_array(tmp, (size_t)ng + 1, sizeof *tmp);
        if (!L->ghost) L->ghost = tmp; /* keeping the larger block is fine */
        tmp = NULL;
        L->nghost = ng;
        for (int64_t j = 0; j < ng; j++) {
            int o = owner_of(L->dist, R, L->ghost[j]);
            if (L->gcount[o] == INT_MAX) {
                rc = GNN_FAIL(GNN_ERANGE, "more than 2^31 ghost nodes on one rank");
                break;
            }
            L->gcount[o]++;
        }
    }
    int64_t total = 0;
    if (rc == 0) rc = displs(L->gcount, R, L->gdispl, &total);
    int64_t *asked = NULL;
    GNN_TRY(alltoallv_i64(c, rc, L->ghost, L->gcount, &asked, &L->nreq));
    L->req = asked;
    GNN_MPI_TRY(MPI_Alltoall(L->gcount, 1, MPI_INT, L->rcount, 1, MPI_INT, c->comm));
    GNN_TRY(displs(L->rcount, R, L->rdispl, &total));
    for (int64_t j = 0; j < L->nreq; j++) {
        if (L->req[j] < lo || L->req[j] >= hi) {
            rc = GNN_FAIL(GNN_EINTERNAL, "asked for node %" PRId64 " not owned here", L->req[j]);
            break;
        }
        L->req[j] -= lo;
    }
    if (rc == 0) {
#pragma omp parallel for schedule(static)
        for (int64_t e = 0; e < ne; e++) {
            int64_t u = L->adj[e];
            if (u >= lo && u < hi) {
                L->adj[e] = u - lo;
            } else {
                int64_t a = 0, b = ng - 1;
                while (a < b) {
                    int64_t m = (a + b) / 2;
                    if (L->ghost[m] < u)
                        a = m + 1;
                    else
                        b = m;
                }
                L->adj[e] = L->nloc + a;
            }
        }
        L->localized = 1;
    }
fail:
    gnn_free(tmp);
    return agree(c, rc);
}

/* gval[g] = val[ghost g] at its owner. */
static int ghost_values(const ctx_t *c, const level_t *L, const int64_t *val, int64_t *gval)
{
    int rc = 0;
    int64_t *send = gnn_malloc_array((size_t)L->nreq + 1, sizeof *send);
    if (!send) rc = GNN_FAIL(GNN_ENOMEM, "ghost values");
    for (int64_t j = 0; rc == 0 && j < L->nreq; j++) send[j] = val[L->req[j]];
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Alltoallv(send, L->rcount, L->rdispl, MPI_INT64_T, gval, L->gcount, L->gdispl,
                          MPI_INT64_T, c->comm));
fail:
    gnn_free(send);
    return rc;
}

/*
 * Move the whole level (not localized yet) to rank 0: the ranks' ranges
 * are consecutive, so global ids stay as they are. Coarser levels are then
 * built on rank 0 alone, where every neighbour is local; parts found for
 * this level go back through L->odist.
 */
static int gather_level(const ctx_t *c, level_t *L)
{
    int rc = 0, R = c->size, ncon = c->ncon;
    int *cnt = gnn_calloc((size_t)R, sizeof *cnt), *dsp = gnn_calloc((size_t)R, sizeof *dsp);
    int64_t *deg = NULL, *xadj = NULL, *adj = NULL, *adjw = NULL, *vwgt = NULL, *dist = NULL;
    int64_t ne = L->xadj[L->nloc], n = L->n;
    deg = gnn_malloc_array((size_t)L->nloc + 1, sizeof *deg);
    dist = gnn_malloc_array((size_t)R + 1, sizeof *dist);
    if (!cnt || !dsp || !deg || !dist) rc = GNN_FAIL(GNN_ENOMEM, "gathering a level");
    if (rc == 0 && c->rank == 0) {
        xadj = gnn_malloc_array((size_t)n + 1, sizeof *xadj);
        adj = gnn_alloc_large(((size_t)L->entries + 1) * sizeof *adj);
        if (L->adjw) adjw = gnn_alloc_large(((size_t)L->entries + 1) * sizeof *adjw);
        vwgt = gnn_malloc_array((size_t)n * (size_t)ncon + 1, sizeof *vwgt);
        if (!xadj || !adj || (L->adjw && !adjw) || !vwgt)
            rc = GNN_FAIL(GNN_ENOMEM, "gathering a level of %" PRId64 " entries", L->entries);
    }
    GNN_TRY(agree(c, rc));
    for (int64_t i = 0; i < L->nloc; i++) deg[i] = L->xadj[i + 1] - L->xadj[i];
    for (int r = 0; r < R; r++) {
        cnt[r] = (int)(L->dist[r + 1] - L->dist[r]);
        dsp[r] = (int)L->dist[r];
    }
    GNN_MPI_TRY(MPI_Gatherv(deg, (int)L->nloc, MPI_INT64_T, xadj ? xadj + 1 : NULL, cnt, dsp,
                        MPI_INT64_T, 0, c->comm));
    for (int r = 0; r < R; r++) {
        cnt[r] *= ncon;
        dsp[r] *= ncon;
    }
    GNN_MPI_TRY(MPI_Gatherv(L->vwgt, (int)(L->nloc * ncon), MPI_INT64_T, vwgt, cnt, dsp,
                        MPI_INT64_T, 0, c->comm));
    int mine = (int)ne;
    GNN_MPI_TRY(MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, c->comm));
    if (c->rank == 0) {
        int64_t t = 0;
        for (int r = 0; r < R; r++) {
            dsp[r] = (int)t;
            t += cnt[r];
        }
    }
    GNN_MPI_TRY(MPI_Gatherv(L->adj, mine, MPI_INT64_T, adj, cnt, dsp, MPI_INT64_T, 0, c->comm));
    if (L->adjw) /* the same on every rank: NULL only on the graph itself */
        GNN_MPI_TRY(MPI_Gatherv(L->adjw, mine, MPI_INT64_T, adjw, cnt, dsp, MPI_INT64_T, 0, c->comm));
    for (int r = 0; r <= R; r++) dist[r] = r == 0 ? 0 : n;
    int had_weights = L->adjw != NULL;
    gnn_free(L->xadj);
    gnn_free(L->adj);
    gnn_free(L->adjw);
    gnn_free(L->vwgt);
    L->odist = L->dist;
    L->dist = dist;
    dist = NULL;
    L->lo = c->rank == 0 ? 0 : n;
    L->nloc = c->rank == 0 ? n : 0;
    if (c->rank == 0) {
        xadj[0] = 0;
        for (int64_t v = 0; v < n; v++) xadj[v + 1] += xadj[v];
        L->xadj = xadj;
        L->adj = adj;
        L->adjw = adjw;
        L->vwgt = vwgt;
        xadj = adj = adjw = vwgt = NULL;
    } else {
        int weighted = had_weights;
        L->xadj = gnn_calloc(1, sizeof *L->xadj);
        L->adj = gnn_malloc(sizeof *L->adj);
        L->adjw = weighted ? gnn_malloc(sizeof *L->adjw) : NULL;
        L->vwgt = gnn_malloc(sizeof *L->vwgt);
        if (!L->xadj || !L->adj || (weighted && !L->adjw) || !L->vwgt)
            rc = GNN_FAIL(GNN_ENOMEM, "level");
    }
fail:
    gnn_free(cnt);
    gnn_free(dsp);
    gnn_free(deg);
    gnn_free(xadj);
    gnn_free(adj);
    gnn_free(adjw);
    gnn_free(vwgt);
    gnn_free(dist);
    return agree(c, rc);
}

/* part (this level's nodes, on rank 0) back to the ranges before the
 * gather; *out is allocated here. */
static int scatter_parts(const ctx_t *c, const level_t *L, const int64_t *part, int64_t **out)
{
    int rc = 0, R = c->size;
    int *cnt = gnn_calloc((size_t)R, sizeof *cnt), *dsp = gnn_calloc((size_t)R, sizeof *dsp);
    int64_t mine = L->odist[c->rank + 1] - L->odist[c->rank];
    *out = gnn_malloc_array((size_t)mine + 1, sizeof **out);
    if (!cnt || !dsp || !*out) rc = GNN_FAIL(GNN_ENOMEM, "parts");
    GNN_TRY(agree(c, rc));
    for (int r = 0; r < R; r++) {
        cnt[r] = (int)(L->odist[r + 1] - L->odist[r]);
        dsp[r] = (int)L->odist[r];
    }
    GNN_MPI_TRY(MPI_Scatterv(part, cnt, dsp, MPI_INT64_T, *out, (int)mine, MPI_INT64_T, 0, c->comm));
fail:
    gnn_free(cnt);
    gnn_free(dsp);
    return rc;
}

/* ---- Coarsening ------------------------------------------------------------ */

static void shuffle(int64_t *order, int64_t n, uint64_t key)
{
    uint64_t w = 0;
    for (int64_t i = 0; i < n; i++) order[i] = i;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)gnn_rng_below(key, &w, (uint64_t)i + 1), x = order[i];
        order[i] = order[j];
        order[j] = x;
    }
}

static int fits(const int64_t *cw, const int64_t *vw, const int64_t *cap, int ncon)
{
    for (int c = 0; c < ncon; c++)
        if (cw[c] + vw[c] > cap[c]) return 0;
    return 1;
}

/* Size-constrained label propagation over local edges; label[i] is a
 * local index naming i's cluster. Returns the number of clusters. */
static int64_t cluster(const ctx_t *c, const level_t *L, const int64_t *cap, uint64_t key,
                       int64_t *label, int64_t *cw, int64_t *conn, int64_t *touched,
                       int64_t *order)
{
    int ncon = c->ncon;
    int64_t nloc = L->nloc;
    memcpy(cw, L->vwgt, (size_t)nloc * (size_t)ncon * sizeof *cw);
    for (int64_t i = 0; i < nloc; i++) {
        label[i] = i;
        conn[i] = 0;
    }
    for (int round = 0; round < 4; round++) {
        shuffle(order, nloc, gnn_rng_mix64(key + (uint64_t)round));
        int64_t moved = 0;
        for (int64_t t = 0; t < nloc; t++) {
            int64_t i = order[t], own = label[i], nt = 0;
            for (int64_t e = L->xadj[i]; e < L->xadj[i + 1]; e++) {
                int64_t j = L->adj[e];
                if (j >= nloc) continue;
                int64_t l = label[j];
                if (conn[l] == 0) touched[nt++] = l;
                conn[l] += L->adjw ? L->adjw[e] : 1;
            }
            int64_t best = own, bestc = conn[own];
            const int64_t *vw = L->vwgt + i * ncon;
            for (int64_t x = 0; x < nt; x++) {
                int64_t l = touched[x];
                if (l != own && conn[l] > bestc && fits(cw + l * ncon, vw, cap, ncon)) {
                    best = l;
                    bestc = conn[l];
                }
            }
            for (int64_t x = 0; x < nt; x++) conn[touched[x]] = 0;
            if (best != own) {
                for (int k = 0; k < ncon; k++) {
                    cw[own * ncon + k] -= vw[k];
                    cw[best * ncon + k] += vw[k];
                }
                label[i] = best;
                moved++;
            }
        }
        if (moved <= nloc / 100) break;
    }
    /* Nodes left alone (every neighbouring cluster full, as happens to
     * the many leaves of one hub) join other lone nodes that favour the same
     * cluster: two hops apart, they tend to land in the same part anyway.
     * Nodes without any neighbour are paired with each other. Nodes whose
     * neighbours all live on other ranks are paired too, but only when the
     * level would otherwise shrink by less than a quarter: unrelated nodes
     * in one cluster cost cut, a level that does not shrink costs more. */
    int64_t *size = conn, *head = touched; /* members per label; lone node per favourite */
    for (int64_t i = 0; i < nloc; i++) {
        size[label[i]]++;
        head[i] = -1;
    }
    int64_t clusters = 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t loose = -1;
        for (int64_t t = 0; t < nloc; t++) {
            int64_t i = order[t];
            if (label[i] != i || size[i] != 1) continue;
            int64_t fav = -1, favc = 0;
            for (int64_t e = L->xadj[i]; e < L->xadj[i + 1]; e++) {
                int64_t j = L->adj[e];
                if (j >= nloc || label[j] == i) continue;
                int64_t w = L->adjw ? L->adjw[e] : 1;
                if (w > favc || (w == favc && label[j] < fav)) { /* heaviest single edge */
                    fav = label[j];
                    favc = w;
                }
            }
            if (fav < 0 && pass == 0 && L->xadj[i + 1] > L->xadj[i]) continue;
            if (fav >= 0 && pass == 1) continue;
            int64_t *slot = fav >= 0 ? &head[fav] : &loose, h = *slot;
            if (h >= 0 && fits(cw + h * ncon, L->vwgt + i * ncon, cap, ncon)) {
                for (int k = 0; k < ncon; k++) cw[h * ncon + k] += L->vwgt[i * ncon + k];
                label[i] = h;
                size[h]++;
                size[i] = 0;
                if (fav < 0) *slot = -1; /* unrelated nodes: pairs only */
            } else {
                *slot = i;
            }
        }
        clusters = 0;
        for (int64_t i = 0; i < nloc; i++) clusters += size[i] > 0;
        if (clusters <= nloc - nloc / 4) break;
    }
    for (int64_t i = 0; i < nloc; i++) conn[i] = 0;
    return clusters;
}

/* The coarse level C of L given each node's cluster label. */
static int contract(const ctx_t *c, level_t *L, const int64_t *label, level_t *C)
{
    int rc = 0, R = c->size, ncon = c->ncon;
    int64_t nloc = L->nloc, nc = 0;
    int64_t *gid = NULL, *gc = NULL, *mstart = NULL, *members = NULL;
    pair_t *scratch = NULL;
    L->cmap = gnn_malloc_array((size_t)nloc + 1, sizeof *L->cmap);
    gid = gnn_malloc_array((size_t)nloc + 1, sizeof *gid);
    gc = gnn_malloc_array((size_t)L->nghost + 1, sizeof *gc);
    C->dist = gnn_malloc_array((size_t)R + 1, sizeof *C->dist);
    if (!L->cmap || !gid || !gc || !C->dist) rc = GNN_FAIL(GNN_ENOMEM, "coarse level");
    if (rc == 0) {
        int64_t *l2c = gid; /* label -> coarse index, scratch before gid */
        for (int64_t i = 0; i < nloc; i++) l2c[i] = -1;
        for (int64_t i = 0; i < nloc; i++) {
            if (l2c[label[i]] < 0) l2c[label[i]] = nc++;
            L->cmap[i] = l2c[label[i]];
        }
    }
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Allgather(&nc, 1, MPI_INT64_T, C->dist + 1, 1, MPI_INT64_T, c->comm));
    C->dist[0] = 0;
    for (int r = 0; r < R; r++) C->dist[r + 1] += C->dist[r];
    C->n = C->dist[R];
    C->lo = C->dist[c->rank];
    C->nloc = nc;
    for (int64_t i = 0; i < nloc; i++) gid[i] = C->lo + L->cmap[i];
    GNN_TRY(ghost_values(c, L, gid, gc));

    C->xadj = gnn_calloc((size_t)nc + 1, sizeof *C->xadj);
    C->vwgt = gnn_calloc((size_t)nc * (size_t)ncon + 1, sizeof *C->vwgt);
    mstart = gnn_calloc((size_t)nc + 2, sizeof *mstart);
    members = gnn_malloc_array((size_t)nloc + 1, sizeof *members);
    int64_t ne = L->xadj[nloc];
    C->adj = gnn_alloc_large(((size_t)ne + 1) * sizeof *C->adj);
    C->adjw = gnn_alloc_large(((size_t)ne + 1) * sizeof *C->adjw);
    if (!C->xadj || !C->vwgt || !mstart || !members || !C->adj || !C->adjw)
        rc = GNN_FAIL(GNN_ENOMEM, "coarse level");
    int64_t longest = 0;
    if (rc == 0) {
        for (int64_t i = 0; i < nloc; i++) {
            mstart[L->cmap[i] + 2]++;
            for (int k = 0; k < ncon; k++) C->vwgt[L->cmap[i] * ncon + k] += L->vwgt[i * ncon + k];
        }
        for (int64_t x = 0; x < nc; x++) mstart[x + 2] += mstart[x + 1];
        for (int64_t i = 0; i < nloc; i++) members[mstart[L->cmap[i] + 1]++] = i;
        /* mstart[x] .. mstart[x + 1]: members of x */
        for (int64_t x = 0; x < nc; x++) {
            int64_t d = 0;
            for (int64_t m = mstart[x]; m < mstart[x + 1]; m++)
                d += L->xadj[members[m] + 1] - L->xadj[members[m]];
            if (d > longest) longest = d;
        }
        scratch = gnn_malloc_array((size_t)longest + 1, sizeof *scratch);
        if (!scratch) rc = GNN_FAIL(GNN_ENOMEM, "coarse level");
    }
    if (rc == 0) {
        int64_t out = 0;
        for (int64_t x = 0; x < nc; x++) {
            int64_t self = C->lo + x, d = 0;
            for (int64_t m = mstart[x]; m < mstart[x + 1]; m++) {
                int64_t i = members[m];
                for (int64_t e = L->xadj[i]; e < L->xadj[i + 1]; e++) {
                    int64_t j = L->adj[e], cu = j < nloc ? gid[j] : gc[j - nloc];
                    if (cu == self) continue;
                    scratch[d].id = cu;
                    scratch[d++].w = L->adjw ? L->adjw[e] : 1;
                }
            }
            qsort(scratch, (size_t)d, sizeof *scratch, cmp_pair);
            for (int64_t y = 0; y < d; y++) {
                if (out > C->xadj[x] && C->adj[out - 1] == scratch[y].id) {
                    C->adjw[out - 1] += scratch[y].w;
                } else {
                    C->adj[out] = scratch[y].id;
                    C->adjw[out++] = scratch[y].w;
                }
            }
            C->xadj[x + 1] = out;
        }
        int64_t *a = gnn_realloc_array(C->adj, (size_t)out + 1, sizeof *a);
        if (a) C->adj = a;
        int64_t *w = gnn_realloc_array(C->adjw, (size_t)out + 1, sizeof *w);
        if (w) C->adjw = w;
    }
    GNN_TRY(agree(c, rc));
    C->entries = sum_i64(c, C->xadj[nc]);
fail:
    gnn_free(gid);
    gnn_free(gc);
    gnn_free(mstart);
    gnn_free(members);
    gnn_free(scratch);
    return rc;
}

/* ---- METIS on the coarsest level ------------------------------------------ */

/* Gather L (global ids) on rank 0, cut it, and give each rank its nodes'
 * parts. */
static int metis_level(const ctx_t *c, const level_t *L, int64_t *part, int64_t *cut,
                       int *scheme)
{
    int rc = 0, R = c->size, ncon = c->ncon;
    int *cnt = NULL, *dsp = NULL;
    int64_t *deg = NULL, *all_w = NULL, *all_vw = NULL, *mydeg = NULL, *ew = NULL;
    int32_t *p32 = NULL, *mine = NULL;
    gnn_csr_t g = {0};
    int64_t ne = L->xadj[L->nloc];
    cnt = gnn_calloc((size_t)R, sizeof *cnt);
    dsp = gnn_calloc((size_t)R, sizeof *dsp);
    mydeg = gnn_malloc_array((size_t)L->nloc + 1, sizeof *mydeg);
    mine = gnn_malloc_array((size_t)L->nloc + 1, sizeof *mine);
    if (!cnt || !dsp || !mydeg || !mine) rc = GNN_FAIL(GNN_ENOMEM, "METIS input");
    if (c->rank == 0 && rc == 0) {
        g.n_rows = g.n_cols = L->n;
        g.nnz = L->entries;
        g.indptr = gnn_malloc_array((size_t)L->n + 1, sizeof *g.indptr);
        g.indices = gnn_alloc_large(((size_t)L->entries + 1) * sizeof *g.indices);
        all_w = gnn_malloc_array((size_t)L->entries + 1, sizeof *all_w);
        all_vw = gnn_malloc_array((size_t)L->n * (size_t)ncon + 1, sizeof *all_vw);
        p32 = gnn_malloc_array((size_t)L->n + 1, sizeof *p32);
        if (!g.indptr || !g.indices || !all_w || !all_vw || !p32)
            rc = GNN_FAIL(GNN_ENOMEM, "METIS input of %" PRId64 " nodes and %" PRId64 " entries",
                          L->n, L->entries);
    }
    GNN_TRY(agree(c, rc));
    for (int64_t i = 0; i < L->nloc; i++) mydeg[i] = L->xadj[i + 1] - L->xadj[i];
    /* degrees, then entries, weights and vertex weights, each by rank */
    int64_t t = 0;
    for (int r = 0; r < R; r++) {
        cnt[r] = (int)(L->dist[r + 1] - L->dist[r]);
        dsp[r] = (int)t;
        t += cnt[r];
    }
    GNN_MPI_TRY(MPI_Gatherv(mydeg, (int)L->nloc, MPI_INT64_T, c->rank == 0 ? g.indptr + 1 : NULL, cnt,
                        dsp, MPI_INT64_T, 0, c->comm));
    int nei = (int)ne, nvw = (int)(L->nloc * ncon);
    int *ecnt = gnn_malloc_array((size_t)R, sizeof *ecnt), *edsp = gnn_malloc_array((size_t)R, sizeof *edsp);
    if (!ecnt || !edsp) rc = GNN_FAIL(GNN_ENOMEM, "METIS input");
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Gather(&nei, 1, MPI_INT, ecnt, 1, MPI_INT, 0, c->comm));
    if (c->rank == 0) {
        t = 0;
        for (int r = 0; r < R; r++) {
            edsp[r] = (int)t;
            t += ecnt[r];
        }
    }
    GNN_MPI_TRY(MPI_Gatherv(L->adj, nei, MPI_INT64_T, g.indices, ecnt, edsp, MPI_INT64_T, 0, c->comm));
    if (L->adjw) {
        GNN_MPI_TRY(MPI_Gatherv(L->adjw, nei, MPI_INT64_T, all_w, ecnt, edsp, MPI_INT64_T, 0,
                            c->comm));
        ew = all_w;
    }
    GNN_MPI_TRY(MPI_Gather(&nvw, 1, MPI_INT, ecnt, 1, MPI_INT, 0, c->comm));
    if (c->rank == 0) {
        t = 0;
        for (int r = 0; r < R; r++) {
            edsp[r] = (int)t;
            t += ecnt[r];
        }
    }
    GNN_MPI_TRY(MPI_Gatherv(L->vwgt, nvw, MPI_INT64_T, all_vw, ecnt, edsp, MPI_INT64_T, 0, c->comm));
    gnn_free(ecnt);
    gnn_free(edsp);
    if (c->rank == 0) {
        g.indptr[0] = 0;
        for (int64_t v = 0; v < L->n; v++) g.indptr[v + 1] += g.indptr[v];
        g.flags = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC;
        gnn_part_opts_t po = {.ncon = ncon, .vwgt = all_vw, .adjwgt = ew,
                              .ufactor = c->o->ufactor, .seed = c->o->seed,
                              .scheme = c->o->scheme};
        rc = gnn_part_metis(&g, c->o->k, &po, p32, cut, scheme);
        gnn_csr_free(&g);
        gnn_free(all_w);
        all_w = NULL;
        gnn_free(all_vw);
        all_vw = NULL;
    }
    GNN_TRY(agree(c, rc));
    GNN_MPI_TRY(MPI_Bcast(cut, 1, MPI_INT64_T, 0, c->comm));
    GNN_MPI_TRY(MPI_Bcast(scheme, 1, MPI_INT, 0, c->comm));
    GNN_MPI_TRY(MPI_Scatterv(p32, cnt, dsp, MPI_INT32_T, mine, (int)L->nloc, MPI_INT32_T, 0, c->comm));
    for (int64_t i = 0; i < L->nloc; i++) part[i] = mine[i];
fail:
    gnn_csr_free(&g);
    gnn_free(cnt);
    gnn_free(dsp);
    gnn_free(deg);
    gnn_free(all_w);
    gnn_free(all_vw);
    gnn_free(mydeg);
    gnn_free(p32);
    gnn_free(mine);
    return rc;
}

/* ---- Refinement ------------------------------------------------------------ */

/* Weighted cut of part over L (localized), with gpart the ghosts' parts. */
static int64_t level_cut(const ctx_t *c, const level_t *L, const int64_t *part,
                         const int64_t *gpart)
{
    int64_t x = 0;
    for (int64_t i = 0; i < L->nloc; i++)
        for (int64_t e = L->xadj[i]; e < L->xadj[i + 1]; e++) {
            int64_t j = L->adj[e], q = j < L->nloc ? part[j] : gpart[j - L->nloc];
            if (q != part[i]) x += L->adjw ? L->adjw[e] : 1;
        }
    return sum_i64(c, x) / 2;
}

/*
 * Each part's room for this rank: 1/R of what the part may still take
 * under maxw (per constraint), from this rank's part weights pw summed
 * over the ranks into all. Collective.
 */
static int rooms(const ctx_t *c, const int64_t *pw, const int64_t *maxw, int64_t *all,
                 int64_t *room)
{
    int rc = 0, K = c->o->k, ncon = c->ncon;
    GNN_MPI_TRY(MPI_Allreduce(pw, all, K * ncon, MPI_INT64_T, MPI_SUM, c->comm));
    for (int64_t x = 0; x < (int64_t)K * ncon; x++) {
        int64_t r = maxw[x % ncon] - all[x];
        room[x] = r > 0 ? r / c->size : 0;
    }
fail:
    return rc;
}

#define FM_PASSES 4 /* FM passes per level, at most */
#define FM_STOP 200 /* a pass that wins less than 1/FM_STOP of the cut is the last */

/*
 * Balanced label propagation: in random order a node moves to the part it
 * has the most edge weight to, when that beats its own part and the move
 * keeps every constraint of the target within maxw; on a tie, half the
 * nodes move to a lighter part (no cut lost). Each round a rank may
 * add to a part at most 1/R of the room the part had at the round's start
 * (plus what it moved out of it), so parallel moves never overfill a part.
 *
 * Then passes of FM (fm.h) on each rank's nodes, ghosts fixed, with the
 * same rooms. Each rank's pass saw the other ranks' old parts, so a pass
 * is kept only when the global cut went down; otherwise every rank undoes
 * it and refinement of the level ends.
 */
static int refine(const ctx_t *c, const level_t *L, int64_t *part, const int64_t *maxw, int rounds,
                  uint64_t key, gnn_mlpart_level_t *out)
{
    int rc = 0, K = c->o->k, ncon = c->ncon;
    int64_t nloc = L->nloc, moves = 0;
    int64_t *gpart = gnn_malloc_array((size_t)L->nghost + 1, sizeof *gpart);
    int64_t *pw = gnn_calloc((size_t)K * (size_t)ncon, sizeof *pw);
    int64_t *all = gnn_calloc((size_t)K * (size_t)ncon, sizeof *all);
    int64_t *room = gnn_calloc((size_t)K * (size_t)ncon, sizeof *room);
    int64_t *conn = gnn_calloc((size_t)K, sizeof *conn);
    int64_t *touched = gnn_malloc_array((size_t)K, sizeof *touched);
    int64_t *order = gnn_malloc_array((size_t)nloc + 1, sizeof *order);
    gnn_fm_t *fm = NULL;
    if (!gpart || !pw || !all || !room || !conn || !touched || !order)
        rc = GNN_FAIL(GNN_ENOMEM, "refinement");
    else
        rc = gnn_fm_create(nloc, K, &fm);
    GNN_TRY(agree(c, rc));
    for (int64_t i = 0; i < nloc; i++)
        for (int k = 0; k < ncon; k++) pw[part[i] * ncon + k] += L->vwgt[i * ncon + k];
    for (int round = 0; round < rounds; round++) {
        GNN_TRY(rooms(c, pw, maxw, all, room));
        GNN_TRY(ghost_values(c, L, part, gpart));
        shuffle(order, nloc, gnn_rng_mix64(key + (uint64_t)round));
        int64_t moved = 0;
        for (int64_t t = 0; t < nloc; t++) {
            int64_t i = order[t], own = part[i], nt = 0;
            for (int64_t e = L->xadj[i]; e < L->xadj[i + 1]; e++) {
                int64_t j = L->adj[e], q = j < nloc ? part[j] : gpart[j - nloc];
                if (conn[q] == 0) touched[nt++] = q;
                conn[q] += L->adjw ? L->adjw[e] : 1;
            }
            int64_t best = own, gain = 0;
            const int64_t *vw = L->vwgt + i * ncon;
            /* Half the nodes, drawn anew each round, may also move without
             * gain to a lighter part: boundaries drift off plateaus (sparse
             * graphs have many) and later moves find gains. */
            int drift = gnn_rng_word64(key ^ 0x6472696674ull, (uint64_t)i * 64 + (uint64_t)round) & 1;
            for (int64_t x = 0; x < nt; x++) {
                int64_t q = touched[x], g = conn[q] - conn[own];
                if (q == own || g < gain) continue;
                if (g == gain && !(drift && g == 0 && best == own && room[q * ncon] > room[own * ncon]))
                    continue;
                int ok = 1;
                for (int k = 0; k < ncon && ok; k++) ok = vw[k] <= room[q * ncon + k];
                if (ok) {
                    best = q;
                    gain = g;
                }
            }
            for (int64_t x = 0; x < nt; x++) conn[touched[x]] = 0;
            if (best != own) {
                for (int k = 0; k < ncon; k++) {
                    room[best * ncon + k] -= vw[k];
                    room[own * ncon + k] += vw[k];
                    pw[best * ncon + k] += vw[k];
                    pw[own * ncon + k] -= vw[k];
                }
                part[i] = best;
                moved++;
            }
        }
        int64_t total = sum_i64(c, moved);
        moves += total;
        if (total <= L->n / 2000) break;
    }
    GNN_TRY(ghost_values(c, L, part, gpart));
    int64_t cut = level_cut(c, L, part, gpart);
    const gnn_fm_graph_t g = {.n = nloc, .k = K, .ncon = ncon, .xadj = L->xadj, .adj = L->adj,
                              .adjw = L->adjw, .vwgt = L->vwgt, .part = part,
                              .fixed_part = gpart, .room = room, .pw = pw};
    for (int pass = 0; pass < FM_PASSES && cut > 0; pass++) {
        GNN_TRY(rooms(c, pw, maxw, all, room));
        uint64_t salt = gnn_rng_mix64(key ^ 0x666d ^ ((uint64_t)pass << 32));
        int64_t gain = gnn_fm_pass(fm, &g, salt);
        if (sum_i64(c, gain) <= 0) break;
        GNN_TRY(ghost_values(c, L, part, gpart));
        int64_t now = level_cut(c, L, part, gpart);
        if (now >= cut) { /* ranks' moves undid each other: back to before the pass */
            gnn_fm_undo(fm, &g);
            GNN_TRY(ghost_values(c, L, part, gpart));
            break;
        }
        moves += sum_i64(c, gnn_fm_moves(fm));
        int64_t won = cut - now;
        cut = now;
        if (won <= cut / FM_STOP) break;
    }
    out->cut = cut;
    out->moves = moves;
fail:
    gnn_free(gpart);
    gnn_free(pw);
    gnn_free(all);
    gnn_free(room);
    gnn_free(conn);
    gnn_free(touched);
    gnn_free(order);
    gnn_fm_free(fm);
    return rc;
}

/* ---- The whole run ---------------------------------------------------------- */

static double wtime(void) { return MPI_Wtime(); }

static void phase_end(const ctx_t *c, gnn_mlpart_stats_t *st, int ph, double t0)
{
    st->phase_s[ph] = wtime() - t0;
    st->phase_rss[ph] = max_i64(c, gnn_mlpart_peak_rss());
}

int gnn_mlpart_run(MPI_Comm comm, const char *path, const gnn_mlpart_opts_t *o, int32_t **part_out,
                   gnn_mlpart_stats_t *st_out)
{
    int rc = 0;
    ctx_t c = {.comm = comm, .o = o};
    level_t lv[GNN_MLPART_MAX_LEVELS + 1];
    memset(lv, 0, sizeof lv);
    int nlev = 0; /* levels in use beyond lv[0] */
    gnn_graph_file_t *f = NULL;
    int64_t *part = NULL, *next = NULL, *label = NULL, *cw = NULL, *conn = NULL, *touched = NULL,
            *order = NULL;
    int32_t *p32 = NULL, *all = NULL;
    int *cnt = NULL, *dsp = NULL;
    gnn_mlpart_stats_t st;
    memset(&st, 0, sizeof st);
    if (part_out) *part_out = NULL;
    MPI_Comm_rank(comm, &c.rank);
    MPI_Comm_size(comm, &c.size);
    GNN_CHECK(o && path && part_out, GNN_EINVAL, "partition: NULL argument");
    c.ncon = o->balance_nodes + o->balance_edges + o->balance_train;
    GNN_CHECK(c.ncon >= 1, GNN_EINVAL, "partition: no vertex weight to balance");
    GNN_CHECK(o->max_metis_edges >= 1, GNN_EINVAL, "--max-metis-edges %" PRId64 " must be >= 1",
              o->max_metis_edges);
    GNN_CHECK(o->mem_budget >= 0, GNN_EINVAL, "--mem-budget must be >= 0");
    GNN_CHECK(o->scheme >= GNN_PART_KWAY && o->scheme <= GNN_PART_BEST, GNN_EINVAL,
              "partition: METIS scheme %d", o->scheme);
    int rounds = o->refine_rounds > 0 ? o->refine_rounds : 8;
    double t0 = wtime();
    c.chunk_edges = CHUNK_EDGES;
    if (o->mem_budget > 0) {
        int64_t base = max_i64(&c, gnn_mlpart_rss());
        c.avail = o->mem_budget - base;
        GNN_CHECK(c.avail > 0, GNN_ENOMEM,
                  "--mem-budget of %.1f MiB: the process holds %.1f MiB already",
                  (double)o->mem_budget / 1048576.0, (double)base / 1048576.0);
        c.chunk_edges = c.avail / 8 / CHUNK_BYTES;
        if (c.chunk_edges > CHUNK_EDGES) c.chunk_edges = CHUNK_EDGES;
        if (c.chunk_edges < 65536) c.chunk_edges = 65536;
    }

    rc = gnn_graph_open(path, &f);
    GNN_TRY(agree(&c, rc));
    const gnn_graph_info_t *info = gnn_graph_file_info(f);
    GNN_CHECK(o->k >= 1 && o->k <= info->num_nodes, GNN_EINVAL,
              "-k %d: %s has %" PRId64 " nodes", o->k, path, info->num_nodes);
    GNN_CHECK(!o->balance_train || info->split_size[GNN_SPLIT_TRAIN] > 0, GNN_EINVAL,
              "--balance train: %s has no training nodes (use --balance nodes,edges)", path);
    /* The splits are checked now (ids in range, none named twice), one
     * split per rank, rather than found bad by the writer at the end. */
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        if (info->split_size[s] < 0 || s % c.size != c.rank) continue;
        int64_t *ids = NULL, nids = 0;
        rc = gnn_graph_read_split(f, (gnn_split_t)s, &ids, &nids);
        gnn_free(ids);
        if (rc < 0) break;
    }
    GNN_TRY(agree(&c, rc));
    gnn_progress_t *prog = gnn_progress_start("undirected view (rank 0's slice)",
                                              c.rank == 0 ? info->num_edges / c.size : 0, "edges");
    rc = build_fine(&c, f, &lv[0], c.rank == 0 ? prog : NULL);
    gnn_progress_end(prog, rc);
    GNN_TRY(rc);
    gnn_graph_close(f);
    f = NULL;
    phase_end(&c, &st, 0, t0);
    st.level[0].nodes = lv[0].n;
    st.level[0].entries = lv[0].entries;
    if (c.rank == 0)
        GNN_INFO("undirected view: %" PRId64 " nodes, %" PRId64 " adjacency entries on %d rank%s "
                 "(%.1f s, peak %.0f MiB per rank)",
                 lv[0].n, lv[0].entries, c.size, c.size == 1 ? "" : "s", st.phase_s[0],
                 (double)st.phase_rss[0] / 1048576.0);

    /*
     * Memory per rank: the fine level, two coarse levels at a time (the one
     * being contracted and the new one; older ones are dropped past that
     * reserve and not refined), and on rank 0 the METIS call. A coarse
     * level holds at most the fine level's entries, with weights (16 bytes
     * each). Under a budget, METIS gets what rank 0 has left.
     */
    int64_t target = o->max_metis_edges, reserve = INT64_MAX;
    if (target > INT_MAX) target = INT_MAX;
    int64_t ne0 = lv[0].xadj[lv[0].nloc], remote = lv[0].n - lv[0].nloc;
    /* beside the level itself: its ghost plan, the parts and the visiting
     * order of label propagation (16 per node), FM's work space (52) */
    int64_t fine = level_bytes(&lv[0], c.ncon) + 16 * (ne0 < remote ? ne0 : remote) +
                   68 * lv[0].nloc;
    int64_t coarse = 16 * ne0 + (24 + 8 * (int64_t)c.ncon) * lv[0].nloc;
    int64_t fixed = max_i64(&c, fine + 2 * coarse);
    st.est_rank_bytes = fixed + (o->mem_budget > 0 ? o->mem_budget - c.avail : 0);
    if (c.avail > 0) {
        int64_t left = c.avail - fine - 2 * coarse;
        GNN_MPI_TRY(MPI_Bcast(&left, 1, MPI_INT64_T, 0, comm));
        int64_t fit = left / GNN_MLPART_METIS_BYTES, least = 64 * (int64_t)o->k;
        GNN_CHECK(fit >= least, GNN_ENOMEM,
                  "--mem-budget %" PRId64 " MiB is too small: partitioning needs at least %" PRId64
                  " MiB per rank here (%" PRId64 " MiB held at the start, %" PRId64 " MiB for "
                  "the slice, %" PRId64 " MiB for coarse levels); use more ranks or a larger "
                  "budget",
                  o->mem_budget >> 20,
                  (o->mem_budget - c.avail + fixed + least * GNN_MLPART_METIS_BYTES) >> 20,
                  (o->mem_budget - c.avail) >> 20, fine >> 20, (2 * coarse) >> 20);
        if (fit < target) target = fit;
        reserve = 2 * max_i64(&c, coarse) + (left - target * GNN_MLPART_METIS_BYTES);
        if (c.rank == 0)
            GNN_INFO("--mem-budget: %.0f MiB held at the start, %.0f MiB for the slice, %.0f MiB "
                     "for coarse levels, METIS up to %" PRId64 " entries",
                     (double)(o->mem_budget - c.avail) / 1048576.0, (double)fine / 1048576.0,
                     (double)reserve / 1048576.0, target);
    }
    st.target_entries = target;
    /* A level this small moves to rank 0, where clusters may take any
     * neighbour: at most 8 times what METIS may take, and under a budget
     * what two levels at 24 bytes an entry leave of the reserve. */
    int64_t gather_limit = 8 * target < INT_MAX ? 8 * target : INT_MAX;
    if (reserve != INT64_MAX && reserve / 48 < gather_limit) gather_limit = reserve / 48;

    /* Coarsen while the graph is too large for one METIS call. */
    t0 = wtime();
    int64_t W[GNN_PART_MAX_CON] = {0}, maxv[GNN_PART_MAX_CON] = {0}, cap[GNN_PART_MAX_CON];
    for (int64_t i = 0; i < lv[0].nloc; i++)
        for (int k = 0; k < c.ncon; k++) {
            W[k] += lv[0].vwgt[i * c.ncon + k];
            if (lv[0].vwgt[i * c.ncon + k] > maxv[k]) maxv[k] = lv[0].vwgt[i * c.ncon + k];
        }
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, W, c.ncon, MPI_INT64_T, MPI_SUM, comm));
    GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, maxv, c.ncon, MPI_INT64_T, MPI_MAX, comm));
    while (lv[nlev].entries > target && lv[nlev].n > 16 * (int64_t)o->k &&
           nlev < GNN_MLPART_MAX_LEVELS) {
        level_t *L = &lv[nlev];
        if (c.size > 1 && L->dist[1] < L->n && L->entries <= gather_limit) {
            GNN_TRY(gather_level(&c, L));
            if (c.rank == 0)
                GNN_INFO("coarse level %d gathered on rank 0: coarsening goes on there", nlev);
        }
        GNN_TRY(localize(&c, L));
        double ratio = 0.9 * (double)target / (double)L->entries;
        if (ratio < 0.1) ratio = 0.1;
        if (ratio > 0.5) ratio = 0.5;
        double want = (double)L->n * ratio;
        if (want < 16.0 * o->k) want = 16.0 * o->k;
        for (int k = 0; k < c.ncon; k++) {
            int64_t avg = (int64_t)(1.5 * (double)W[k] / want) + 1;
            cap[k] = avg > maxv[k] ? avg : maxv[k];
        }
        gnn_free(label);
        gnn_free(cw);
        gnn_free(conn);
        gnn_free(touched);
        gnn_free(order);
        size_t m = (size_t)L->nloc + 1;
        label = gnn_malloc_array(m, sizeof *label);
        cw = gnn_malloc_array(m * (size_t)c.ncon, sizeof *cw);
        conn = gnn_calloc(m, sizeof *conn);
        touched = gnn_malloc_array(m, sizeof *touched);
        order = gnn_malloc_array(m, sizeof *order);
        rc = label && cw && conn && touched && order ? 0 : GNN_FAIL(GNN_ENOMEM, "clustering");
        GNN_TRY(agree(&c, rc));
        uint64_t key = gnn_rng_mix64(o->seed ^ ((uint64_t)nlev << 32) ^ (uint64_t)c.rank * 0x9e3779b97f4a7c15ull);
        cluster(&c, L, cap, key, label, cw, conn, touched, order);
        GNN_TRY(contract(&c, L, label, &lv[nlev + 1]));
        nlev++;
        if (reserve != INT64_MAX) { /* drop the oldest coarse graphs past the reserve */
            int64_t lb[GNN_MLPART_MAX_LEVELS + 1] = {0}, held = 0;
            for (int l = 1; l <= nlev; l++) lb[l] = level_bytes(&lv[l], c.ncon);
            GNN_MPI_TRY(MPI_Allreduce(MPI_IN_PLACE, lb, nlev + 1, MPI_INT64_T, MPI_MAX, comm));
            for (int l = 1; l <= nlev; l++) held += lv[l].dropped ? 0 : lb[l];
            for (int l = 1; l < nlev && held > reserve; l++)
                if (!lv[l].dropped) {
                    held -= lb[l];
                    level_drop_graph(&lv[l]);
                }
        }
        st.level[nlev].nodes = lv[nlev].n;
        st.level[nlev].entries = lv[nlev].entries;
        if (c.rank == 0)
            GNN_INFO("coarse level %d: %" PRId64 " nodes, %" PRId64 " adjacency entries "
                     "(%.1f s so far)",
                     nlev, lv[nlev].n, lv[nlev].entries, wtime() - t0);
        if (lv[nlev].n > L->n - L->n / 20) break; /* no longer shrinking */
    }
    GNN_CHECK(lv[nlev].entries <= INT_MAX, GNN_ERANGE,
              "coarsening stopped at %" PRId64 " nodes and %" PRId64 " adjacency entries, "
              "beyond one METIS call",
              lv[nlev].n, lv[nlev].entries);
    if (lv[nlev].entries > target && c.rank == 0)
        GNN_WARN("the coarsest graph has %" PRId64 " adjacency entries, above the %" PRId64
                 " asked for: %d parts need about %d coarse nodes",
                 lv[nlev].entries, target, o->k, 16 * o->k);
    gnn_free(label);
    gnn_free(cw);
    gnn_free(conn);
    gnn_free(touched);
    gnn_free(order);
    label = cw = conn = touched = order = NULL;
    phase_end(&c, &st, 1, t0);
    st.levels = nlev;

    t0 = wtime();
    part = gnn_malloc_array((size_t)lv[nlev].nloc + 1, sizeof *part);
    rc = part ? 0 : GNN_FAIL(GNN_ENOMEM, "parts");
    GNN_TRY(agree(&c, rc));
    GNN_TRY(metis_level(&c, &lv[nlev], part, &st.metis_cut, &st.metis_scheme));
    phase_end(&c, &st, 2, t0);
    st.level[nlev].cut = st.metis_cut;
    if (c.rank == 0)
        GNN_INFO("METIS on %" PRId64 " nodes, %" PRId64 " entries: cut %" PRId64
                 " (%.1f s, peak %.0f MiB per rank)",
                 lv[nlev].n, lv[nlev].entries, st.metis_cut, st.phase_s[2],
                 (double)st.phase_rss[2] / 1048576.0);

    /* Project and refine, coarsest to finest. */
    t0 = wtime();
    int64_t maxw[GNN_PART_MAX_CON];
    for (int k = 0; k < c.ncon; k++)
        maxw[k] = (int64_t)((double)W[k] / o->k * (1.0 + o->ufactor / 1000.0)) + 1;
    for (int l = nlev - 1; l >= 0; l--) {
        level_t *L = &lv[l];
        next = gnn_malloc_array((size_t)L->nloc + 1, sizeof *next);
        rc = next ? 0 : GNN_FAIL(GNN_ENOMEM, "parts");
        GNN_TRY(agree(&c, rc));
        if (lv[l + 1].odist) { /* parts of a gathered level back to its ranks */
            int64_t *back = NULL;
            GNN_TRY(scatter_parts(&c, &lv[l + 1], part, &back));
            gnn_free(part);
            part = back;
        }
        for (int64_t i = 0; i < L->nloc; i++) next[i] = part[L->cmap[i]];
        gnn_free(part);
        part = next;
        next = NULL;
        uint64_t key = gnn_rng_mix64(o->seed ^ 0x726566696e65ull ^ ((uint64_t)l << 40) ^
                                     (uint64_t)c.rank * 0x9e3779b97f4a7c15ull);
        if (L->dropped) { /* dropped to stay within the budget */
            level_free(&lv[l + 1]);
            continue;
        }
        GNN_TRY(refine(&c, L, part, maxw, rounds, key, &st.level[l]));
        if (c.rank == 0)
            GNN_INFO("refined level %d: cut %" PRId64 ", %" PRId64 " moves (%.1f s so far)", l,
                     st.level[l].cut, st.level[l].moves, wtime() - t0);
        level_free(&lv[l + 1]);
    }
    phase_end(&c, &st, 3, t0);
    st.edge_cut = nlev > 0 ? st.level[0].cut : st.metis_cut;

    /* Every node's part on rank 0. */
    int R = c.size;
    p32 = gnn_malloc_array((size_t)lv[0].nloc + 1, sizeof *p32);
    cnt = gnn_calloc((size_t)R, sizeof *cnt);
    dsp = gnn_calloc((size_t)R, sizeof *dsp);
    if (c.rank == 0) all = gnn_malloc_array((size_t)lv[0].n + 1, sizeof *all);
    rc = p32 && cnt && dsp && (c.rank != 0 || all) ? 0 : GNN_FAIL(GNN_ENOMEM, "parts");
    GNN_TRY(agree(&c, rc));
    for (int64_t i = 0; i < lv[0].nloc; i++) p32[i] = (int32_t)part[i];
    for (int r = 0; r < R; r++) {
        cnt[r] = (int)(lv[0].dist[r + 1] - lv[0].dist[r]);
        dsp[r] = (int)lv[0].dist[r];
    }
    GNN_MPI_TRY(MPI_Gatherv(p32, (int)lv[0].nloc, MPI_INT32_T, all, cnt, dsp, MPI_INT32_T, 0, comm));
    *part_out = all;
    all = NULL;
fail:
    rc = agree(&c, rc);
    if (rc < 0 && part_out) {
        gnn_free(*part_out);
        *part_out = NULL;
    }
    gnn_graph_close(f);
    for (int l = 0; l <= GNN_MLPART_MAX_LEVELS; l++) level_free(&lv[l]);
    gnn_free(part);
    gnn_free(next);
    gnn_free(label);
    gnn_free(cw);
    gnn_free(conn);
    gnn_free(touched);
    gnn_free(order);
    gnn_free(p32);
    gnn_free(all);
    gnn_free(cnt);
    gnn_free(dsp);
    if (st_out) *st_out = st;
    return rc;
}
