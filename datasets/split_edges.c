/*
 * Link-prediction edge splits (split_edges.h).
 *
 * The whole CSR is read into memory (O(E): the in-edge arrays, the
 * candidate pairs, the hold-out requests and, for a directed or unsorted
 * graph, the transpose); node arrays are streamed from the input to the
 * output in blocks. The steps:
 *
 *   1. candidates: row by row, the sources u != v of row v (u < v only for
 *      an undirected graph), sorted and deduplicated within the row unless
 *      the file promises both; in row order, so their order depends only on
 *      the file;
 *   2. hold-out: a partial Fisher-Yates shuffle of the candidates, the
 *      first n_valid + n_test positions drawn with gnn_rng_below from the
 *      stream of key (seed, HOLDOUT); valid takes positions [0, n_valid),
 *      test the next n_test, each in drawn order;
 *   3. negatives: negative j = i * K + k of a set draws from the stream of
 *      key (seed, NEG_VALID or NEG_TEST, j): w uniform on [0, N) until it
 *      is neither u nor an out-neighbour of u (binary search of u's sorted
 *      out-neighbours in the input). After REJECT_TRIES rejections (nodes
 *      adjacent to nearly all others) w is instead the r-th non-neighbour
 *      for r uniform on their count, from the same stream: exactly uniform
 *      either way, and a node with no non-neighbour is an error;
 *   4. removal: the held-out edges as (row, source) requests, sorted, and
 *      one pass over the CSR that compacts it in place dropping every
 *      entry named by a request (on a typed graph, every relation's entry
 *      of that pair, the kept entries' relations compacted alongside).
 *
 * Stream keys: mix(mix(seed ^ mix(purpose)) + index), mix = gnn_rng_mix64.
 */
#include "datasets/split_edges.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/rng.h"
#include "graph/csr.h"
#include "graph/graph_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { PURPOSE_HOLDOUT = 1, PURPOSE_NEG_VALID = 2, PURPOSE_NEG_TEST = 3 };

#define REJECT_TRIES 64
#define COPY_BLOCK_BYTES ((int64_t)16 << 20) /* node rows per copy: 16 MiB */

void gnn_split_edges_defaults(gnn_split_edges_opts_t *o)
{
    o->valid = 0.05;
    o->test = 0.10;
    o->neg_per_pos = 1;
    o->seed = 1;
}

int gnn_split_edges_check(const gnn_split_edges_opts_t *o)
{
    if (!(o->valid > 0 && o->valid < 1))
        return GNN_FAIL(GNN_EUSAGE, "--valid must be in (0, 1) (got %g)", o->valid);
    if (!(o->test > 0 && o->test < 1))
        return GNN_FAIL(GNN_EUSAGE, "--test must be in (0, 1) (got %g)", o->test);
    if (!(o->valid + o->test < 1))
        return GNN_FAIL(GNN_EUSAGE,
                        "--valid + --test must be below 1 to leave training edges (got %g + %g)",
                        o->valid, o->test);
    if (o->neg_per_pos < 1)
        return GNN_FAIL(GNN_EUSAGE, "--neg-per-pos must be at least 1 (got %lld)",
                        (long long)o->neg_per_pos);
    return 0;
}

static uint64_t stream_key(int64_t seed, uint64_t purpose, uint64_t index)
{
    return gnn_rng_mix64(gnn_rng_mix64((uint64_t)seed ^ gnn_rng_mix64(purpose)) + index);
}

static int cmp_vid(const void *a, const void *b)
{
    gnn_vid_t x = *(const gnn_vid_t *)a, y = *(const gnn_vid_t *)b;
    return (x > y) - (x < y);
}

/* Pairs (a, b) ordered by a, then b. */
static int cmp_pair(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return (x[0] > y[0]) - (x[0] < y[0]);
    return (x[1] > y[1]) - (x[1] < y[1]);
}

/* 1 when x is in the sorted array v[0..n). */
static int sorted_has(const gnn_vid_t *v, gnn_eid_t n, gnn_vid_t x)
{
    gnn_eid_t lo = 0, hi = n;
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (v[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && v[lo] == x;
}

/*
 * Step 1: the candidate pairs (src, dst) into *out (2 * *m values). a's
 * rows are sorted and deduplicated here unless flags promise both.
 */
/* *directed = 0 when every edge u -> v of a has v -> u (the distinct
 * sources of each row equal the distinct destinations of its node), else
 * left as it is. */
static int stored_both_ways(const gnn_csr_t *a, int *directed)
{
    int rc = 0;
    gnn_csr_t t = {0};
    gnn_vid_t *x = NULL, *y = NULL;
    GNN_TRY(gnn_csr_transpose(a, &t));
    gnn_eid_t most = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t d1 = a->indptr[v + 1] - a->indptr[v], d2 = t.indptr[v + 1] - t.indptr[v];
        most = d1 > most ? d1 : most;
        most = d2 > most ? d2 : most;
    }
    x = gnn_malloc_array((size_t)most + 1, sizeof *x);
    y = gnn_malloc_array((size_t)most + 1, sizeof *y);
    GNN_CHECK(x && y, GNN_ENOMEM, "out of memory comparing the graph with its transpose");
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t n1 = a->indptr[v + 1] - a->indptr[v], n2 = t.indptr[v + 1] - t.indptr[v];
        memcpy(x, a->indices + a->indptr[v], (size_t)n1 * sizeof *x);
        memcpy(y, t.indices + t.indptr[v], (size_t)n2 * sizeof *y);
        qsort(x, (size_t)n1, sizeof *x, cmp_vid);
        qsort(y, (size_t)n2, sizeof *y, cmp_vid);
        gnn_eid_t i = 0, j = 0;
        while (i < n1 || j < n2) { /* distinct values in step */
            if (i >= n1 || j >= n2 || x[i] != y[j]) goto done;
            gnn_vid_t c = x[i];
            while (i < n1 && x[i] == c) i++;
            while (j < n2 && y[j] == c) j++;
        }
    }
    *directed = 0;
done:
fail:
    gnn_free(x);
    gnn_free(y);
    gnn_csr_free(&t);
    return rc;
}

static int collect_candidates(const gnn_csr_t *a, unsigned flags, int directed, int64_t **out,
                              gnn_eid_t *m)
{
    int rc = 0;
    int64_t *c = NULL;
    gnn_vid_t *row = NULL;
    int clean = (flags & GNN_CSR_SORTED) && (flags & GNN_CSR_DEDUPED);
    gnn_eid_t k = 0, longest = 0;
    *out = NULL;
    *m = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            gnn_vid_t u = a->indices[e];
            if (u != v && (directed || u < v)) k++;
        }
    c = gnn_malloc_array((size_t)k * 2 + 1, sizeof *c);
    GNN_CHECK(c, GNN_ENOMEM, "out of memory for %lld candidate edges", (long long)k);
    if (!clean) {
        for (gnn_vid_t v = 0; v < a->n_rows; v++)
            if (a->indptr[v + 1] - a->indptr[v] > longest) longest = a->indptr[v + 1] - a->indptr[v];
        row = gnn_malloc_array((size_t)longest + 1, sizeof *row);
        GNN_CHECK(row, GNN_ENOMEM, "out of memory");
    }
    k = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t d = 0;
        for (gnn_eid_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            gnn_vid_t u = a->indices[e];
            if (u == v || (!directed && u > v)) continue;
            if (clean) {
                c[2 * k] = u;
                c[2 * k++ + 1] = v;
            } else {
                row[d++] = u;
            }
        }
        if (clean || d == 0) continue;
        qsort(row, (size_t)d, sizeof *row, cmp_vid);
        for (gnn_eid_t i = 0; i < d; i++) {
            if (i > 0 && row[i] == row[i - 1]) continue;
            c[2 * k] = row[i];
            c[2 * k++ + 1] = v;
        }
    }
    *out = c;
    *m = k;
    c = NULL;
fail:
    gnn_free(row);
    gnn_free(c);
    return rc;
}

/* Step 2: move the h drawn candidates of c[0..m) to its front. */
static void draw_holdout(int64_t *c, gnn_eid_t m, int64_t h, int64_t seed)
{
    uint64_t key = stream_key(seed, PURPOSE_HOLDOUT, 0), next = 0;
    for (int64_t i = 0; i < h; i++) {
        int64_t j = i + (int64_t)gnn_rng_below(key, &next, (uint64_t)(m - i));
        int64_t s = c[2 * i], d = c[2 * i + 1];
        c[2 * i] = c[2 * j];
        c[2 * i + 1] = c[2 * j + 1];
        c[2 * j] = s;
        c[2 * j + 1] = d;
    }
}

/* Walk to the excluded value x in ascending order: when the r-th free node
 * lies before it, put it in *w and return 1; else skip the gap. */
static int pass_excluded(gnn_vid_t x, gnn_vid_t *prev, uint64_t *r, gnn_vid_t *w)
{
    if (x <= *prev) return 0;
    uint64_t gap = (uint64_t)(x - *prev - 1);
    if (*r < gap) {
        *w = *prev + 1 + (gnn_vid_t)*r;
        return 1;
    }
    *r -= gap;
    *prev = x;
    return 0;
}

/*
 * Step 3, one negative: w for source u whose sorted out-neighbours (repeats
 * allowed) are nb[0..d), drawn from key's stream among n nodes. Returns 0,
 * or GNN_EINVAL when u is adjacent to every other node.
 */
static int draw_negative(uint64_t key, gnn_vid_t n, gnn_vid_t u, const gnn_vid_t *nb, gnn_eid_t d,
                         gnn_vid_t *w)
{
    uint64_t next = 0;
    for (int t = 0; t < REJECT_TRIES; t++) {
        gnn_vid_t x = (gnn_vid_t)gnn_rng_below(key, &next, (uint64_t)n);
        if (x != u && !sorted_has(nb, d, x)) {
            *w = x;
            return 0;
        }
    }
    gnn_vid_t distinct = 0;
    for (gnn_eid_t e = 0; e < d; e++)
        if (nb[e] != u && (e == 0 || nb[e] != nb[e - 1])) distinct++;
    if (distinct >= n - 1)
        return GNN_FAIL(GNN_EINVAL,
                        "node %lld has no non-neighbour to draw negatives from (it is adjacent to "
                        "all %lld other nodes)",
                        (long long)u, (long long)(n - 1));
    uint64_t r = gnn_rng_below(key, &next, (uint64_t)(n - 1 - distinct));
    gnn_vid_t prev = -1;
    int u_passed = 0;
    for (gnn_eid_t e = 0; e < d; e++) {
        if (!u_passed && u <= nb[e]) {
            u_passed = 1;
            if (pass_excluded(u, &prev, &r, w)) return 0;
        }
        if (pass_excluded(nb[e], &prev, &r, w)) return 0;
    }
    if (!u_passed && pass_excluded(u, &prev, &r, w)) return 0;
    *w = prev + 1 + (gnn_vid_t)r;
    return 0;
}

/* Step 3: K negatives for each of the np positives of pos into neg, the
 * out-neighbours of node u being row u of nb (rows sorted). */
static int draw_negatives(const gnn_csr_t *nb, const int64_t *pos, int64_t np, int64_t k,
                          int64_t seed, uint64_t purpose, int64_t *neg)
{
    int rc = 0;
    int64_t bad = INT64_MAX;
    gnn_vid_t n = nb->n_rows;
#pragma omp parallel for schedule(dynamic, 1024) reduction(min : bad)
    for (int64_t j = 0; j < np * k; j++) {
        gnn_vid_t u = pos[2 * (j / k)], w = 0;
        const gnn_vid_t *row = nb->indices + nb->indptr[u];
        gnn_eid_t d = nb->indptr[u + 1] - nb->indptr[u];
        if (bad < j) continue; /* a smaller j failed on this thread already */
        if (draw_negative(stream_key(seed, purpose, (uint64_t)j), n, u, row, d, &w) < 0) {
            bad = j;
            continue;
        }
        neg[2 * j] = u;
        neg[2 * j + 1] = w;
    }
    /* The first failing negative's error, on this thread. */
    if (bad != INT64_MAX) {
        gnn_vid_t u = pos[2 * (bad / k)], w;
        rc = draw_negative(stream_key(seed, purpose, (uint64_t)bad), n, u,
                           nb->indices + nb->indptr[u], nb->indptr[u + 1] - nb->indptr[u], &w);
        if (rc == 0) rc = GNN_FAIL(GNN_EINTERNAL, "negative %lld failed once only", (long long)bad);
    }
    return rc;
}

/* Step 4: remove from a every entry src in row named by the np (row, src)
 * requests of req (sorted); weights follow. */
static void remove_requests(gnn_csr_t *a, int32_t *etype, const int64_t *req, int64_t np)
{
    gnn_eid_t out = 0, lo = 0;
    int64_t ri = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t hi = a->indptr[v + 1];
        int64_t r0 = ri;
        while (ri < np && req[2 * ri] == v) ri++;
        for (gnn_eid_t e = lo; e < hi; e++) {
            gnn_vid_t x = a->indices[e];
            if (ri > r0) {
                /* Binary search of x among the requests' sources. */
                int64_t l = r0, h = ri;
                while (l < h) {
                    int64_t mid = l + (h - l) / 2;
                    if (req[2 * mid + 1] < x)
                        l = mid + 1;
                    else
                        h = mid;
                }
                if (l < ri && req[2 * l + 1] == x) continue;
            }
            a->indices[out] = x;
            if (a->weights) a->weights[out] = a->weights[e];
            if (etype) etype[out] = etype[e];
            out++;
        }
        a->indptr[v + 1] = out;
        lo = hi;
    }
    a->nnz = out;
}

/* Copy every node array of f but the CSR to w, in blocks of rows. */
static int copy_node_arrays(gnn_graph_file_t *f, gnn_graph_writer_t *w)
{
    int rc = 0;
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    gnn_vid_t n = in->num_nodes;
    void *buf = NULL;
    int64_t *split = NULL;
    if (in->feat_dim > 0) {
        gnn_vid_t rows = COPY_BLOCK_BYTES / (4 * in->feat_dim);
        if (rows < 1) rows = 1;
        if (rows > n) rows = n;
        buf = gnn_malloc_array((size_t)rows * (size_t)in->feat_dim + 1, sizeof(float));
        GNN_CHECK(buf, GNN_ENOMEM, "out of memory copying features");
        for (gnn_vid_t r = 0; r < n; r += rows) {
            gnn_vid_t k = n - r < rows ? n - r : rows;
            GNN_TRY(gnn_graph_read_feat(f, r, k, buf));
            GNN_TRY(gnn_graph_writer_put_feat(w, r, k, buf));
        }
        gnn_free(buf);
        buf = NULL;
    }
    if (in->has_labels || in->has_orig_ids) {
        gnn_vid_t rows = COPY_BLOCK_BYTES / 8;
        if (rows > n) rows = n;
        buf = gnn_malloc_array((size_t)rows + 1, sizeof(int64_t));
        GNN_CHECK(buf, GNN_ENOMEM, "out of memory copying node arrays");
        for (gnn_vid_t r = 0; r < n; r += rows) {
            gnn_vid_t k = n - r < rows ? n - r : rows;
            if (in->has_labels) {
                GNN_TRY(gnn_graph_read_labels(f, r, k, buf));
                GNN_TRY(gnn_graph_writer_put_labels(w, r, k, buf));
            }
            if (in->has_orig_ids) {
                GNN_TRY(gnn_graph_read_orig_ids(f, r, k, buf));
                GNN_TRY(gnn_graph_writer_put_orig_ids(w, r, k, buf));
            }
        }
        gnn_free(buf);
        buf = NULL;
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        int64_t len;
        if (in->split_size[s] < 0) continue;
        GNN_TRY(gnn_graph_read_split(f, (gnn_split_t)s, &split, &len));
        GNN_TRY(gnn_graph_writer_put_split(w, (gnn_split_t)s, split, len));
        gnn_free(split);
        split = NULL;
    }
    for (int64_t i = 0; i < in->n_node_data; i++) {
        int is_int;
        int64_t ncols;
        GNN_TRY(gnn_graph_read_node_data(f, in->node_data[i], &is_int, &ncols, &buf));
        GNN_TRY(gnn_graph_writer_put_node_data(w, in->node_data[i], is_int, ncols, buf));
        gnn_free(buf);
        buf = NULL;
    }
fail:
    gnn_free(split);
    gnn_free(buf);
    return rc;
}

int gnn_split_edges(const char *in_path, const gnn_split_edges_opts_t *o,
                    const gnn_output_opts_t *out, gnn_split_edges_stats_t *stats)
{
    int rc = 0;
    gnn_graph_file_t *f = NULL;
    gnn_graph_writer_t *w = NULL;
    gnn_csr_t a = {0}, t = {0};
    int64_t *cand = NULL, *req = NULL;
    int64_t *set[GNN_NUM_LINK_SETS] = {NULL, NULL, NULL, NULL};
    int64_t size[GNN_NUM_LINK_SETS] = {0, 0, 0, 0};
    gnn_eid_t m = 0;
    int32_t *etype = NULL;

    GNN_TRY(gnn_split_edges_check(o));
    GNN_TRY(gnn_output_check_input(out, in_path));
    GNN_TRY(gnn_graph_open(in_path, &f));
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    GNN_CHECK(in->link_neg_per_pos == 0, GNN_EINVAL,
              "%s: the graph already has link sets (split the graph they were drawn from)",
              in_path);
    gnn_vid_t n = in->num_nodes;
    GNN_TRY(gnn_graph_read_rows(f, 0, n, &a));
    if (in->types) { /* a typed graph keeps its types and the kept edges' relations */
        etype = gnn_alloc_large(((size_t)a.nnz + 1) * sizeof *etype);
        GNN_CHECK(etype, GNN_ENOMEM, "out of memory for the relations of %lld edges",
                  (long long)a.nnz);
        GNN_TRY(gnn_graph_read_etypes(f, 0, a.nnz, etype));
    }
    /* A graph flagged directed whose every edge is stored both ways (as
     * OGB's undirected graphs are) is split as undirected: holding out one
     * direction of an edge would leave the other in the training graph. */
    int directed = in->directed;
    if (directed) GNN_TRY(stored_both_ways(&a, &directed));
    GNN_TRY(collect_candidates(&a, in->csr_flags, directed, &cand, &m));

    int64_t nv = (int64_t)llround(o->valid * (double)m);
    int64_t nt = (int64_t)llround(o->test * (double)m);
    if (nv < 1) nv = 1;
    if (nt < 1) nt = 1;
    GNN_CHECK(nv + nt < m, GNN_EINVAL,
              "%s: %lld candidate edges are too few to hold out %lld for validation and %lld for "
              "test and keep one for training",
              in_path, (long long)m, (long long)nv, (long long)nt);
    int64_t k = o->neg_per_pos;
    GNN_CHECK(k <= INT64_MAX / 4 / (nv + nt), GNN_ENOMEM,
              "--neg-per-pos %lld: too many negatives for %lld positives", (long long)k,
              (long long)(nv + nt));
    draw_holdout(cand, m, nv + nt, o->seed);

    size[GNN_LINK_VALID_POS] = nv;
    size[GNN_LINK_TEST_POS] = nt;
    size[GNN_LINK_VALID_NEG] = nv * k;
    size[GNN_LINK_TEST_NEG] = nt * k;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        set[s] = gnn_malloc_array((size_t)size[s] * 2 + 1, sizeof *set[s]);
        GNN_CHECK(set[s], GNN_ENOMEM, "out of memory for %lld link pairs", (long long)size[s]);
    }
    memcpy(set[GNN_LINK_VALID_POS], cand, sizeof *cand * 2 * (size_t)nv);
    memcpy(set[GNN_LINK_TEST_POS], cand + 2 * nv, sizeof *cand * 2 * (size_t)nt);
    gnn_free(cand);
    cand = NULL;

    /* Out-neighbours with sorted rows: the in-edge rows themselves for a
     * sorted undirected graph, else the transpose. */
    const gnn_csr_t *nb = &a;
    if (directed || !(in->csr_flags & GNN_CSR_SORTED)) {
        GNN_TRY(gnn_csr_transpose(&a, &t));
        nb = &t;
    }
    GNN_TRY(draw_negatives(nb, set[GNN_LINK_VALID_POS], nv, k, o->seed, PURPOSE_NEG_VALID,
                           set[GNN_LINK_VALID_NEG]));
    GNN_TRY(draw_negatives(nb, set[GNN_LINK_TEST_POS], nt, k, o->seed, PURPOSE_NEG_TEST,
                           set[GNN_LINK_TEST_NEG]));
    gnn_csr_free(&t);

    /* Removal requests (row, source): u in row v, and v in row u when
     * undirected. */
    int64_t h = nv + nt, nreq = directed ? h : 2 * h;
    req = gnn_malloc_array((size_t)nreq * 2, sizeof *req);
    GNN_CHECK(req, GNN_ENOMEM, "out of memory for %lld held-out edges", (long long)h);
    for (int64_t i = 0, r = 0; i < h; i++) {
        const int64_t *p = i < nv ? set[GNN_LINK_VALID_POS] + 2 * i
                                  : set[GNN_LINK_TEST_POS] + 2 * (i - nv);
        req[2 * r] = p[1];
        req[2 * r++ + 1] = p[0];
        if (!directed) {
            req[2 * r] = p[0];
            req[2 * r++ + 1] = p[1];
        }
    }
    qsort(req, (size_t)nreq, 2 * sizeof *req, cmp_pair);
    remove_requests(&a, etype, req, nreq);
    gnn_free(req);
    req = NULL;

    gnn_graph_header_t hd = {
        .num_nodes = n,
        .num_edges = a.nnz,
        /* A graph split as undirected is written so (every kept edge is
         * still stored both ways), so the trainer takes each edge once. */
        .directed = directed,
        .csr_flags = directed ? in->csr_flags & ~(unsigned)GNN_CSR_SYMMETRIC
                              : in->csr_flags | (unsigned)GNN_CSR_SYMMETRIC,
        .feat_dim = in->feat_dim,
        .has_weights = in->has_weights,
        .has_labels = in->has_labels,
        .num_classes = in->has_labels ? in->num_classes : 0,
        .has_orig_ids = in->has_orig_ids,
        .types = in->types,
    };
    GNN_TRY(gnn_graph_writer_open(out->path, &hd, out->force, &w));
    GNN_TRY(gnn_graph_writer_put_indptr(w, 0, n + 1, a.indptr));
    GNN_TRY(gnn_graph_writer_put_indices(w, 0, a.nnz, a.indices, a.weights));
    if (etype) GNN_TRY(gnn_graph_writer_put_etypes(w, 0, a.nnz, etype));
    GNN_TRY(copy_node_arrays(f, w));
    const int64_t *const csets[GNN_NUM_LINK_SETS] = {set[0], set[1], set[2], set[3]};
    GNN_TRY(gnn_graph_writer_put_link(w, k, csets, size));
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    GNN_TRY(rc);
    if (stats) {
        stats->candidates = m;
        stats->n_valid = nv;
        stats->n_test = nt;
        stats->edges_in = in->num_edges;
        stats->edges_out = a.nnz;
        stats->undirected = !directed;
    }
fail:
    gnn_graph_writer_abort(w);
    gnn_free(etype);
    gnn_csr_free(&a);
    gnn_csr_free(&t);
    gnn_free(cand);
    gnn_free(req);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) gnn_free(set[s]);
    gnn_graph_close(f);
    return rc;
}
