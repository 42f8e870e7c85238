/*
 * The CSR core: building from an edge list, transpose, row sorting, copy,
 * statistics and validation (graph/csr.h).
 *
 * Rows are filled by a stable counting sort on the row key (the destination
 * when building, the source when transposing), so entries keep their input
 * order unless a row sort is asked for. Row sorts are stable too (insertion
 * sort for short rows, bottom-up merge sort for long ones), so "the first
 * occurrence" of a repeated edge is the first one in the row's input order.
 *
 * Invariants of every gnn_csr_t this file returns: indptr has n_rows + 1
 * monotone offsets with indptr[0] = 0 and indptr[n_rows] = nnz, every index
 * lies in [0, n_cols), weights is NULL or holds nnz values that follow their
 * entries, and flags claim only properties that were established or
 * verified. Functions build into a local struct and copy it out on success;
 * on failure the output is zeroed and everything allocated is freed.
 */
#include "graph/csr.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <inttypes.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Rows up to this length are sorted by insertion; longer ones by merging
 * runs of this length. */
#define INSERTION_SORT_MAX 32

/* ---- Row sorting ---------------------------------------------------------- */

/* Stable insertion sort of k (id, weight) pairs by id; w may be NULL. */
static void insertion_sort_row(gnn_vid_t *id, float *w, gnn_eid_t k)
{
    for (gnn_eid_t i = 1; i < k; i++) {
        gnn_vid_t x = id[i];
        float xw = w ? w[i] : 0.0f;
        gnn_eid_t j = i;
        while (j > 0 && id[j - 1] > x) {
            id[j] = id[j - 1];
            if (w) w[j] = w[j - 1];
            j--;
        }
        id[j] = x;
        if (w) w[j] = xw;
    }
}

/* Merge the sorted runs [lo, mid) and [mid, hi) of from into to, taking the
 * left entry on ties so the merge is stable. */
static void merge_runs(const gnn_vid_t *from_id, const float *from_w, gnn_vid_t *to_id,
                       float *to_w, gnn_eid_t lo, gnn_eid_t mid, gnn_eid_t hi)
{
    gnn_eid_t i = lo, j = mid, o = lo;
    while (i < mid && j < hi) {
        gnn_eid_t pick = from_id[j] < from_id[i] ? j++ : i++;
        to_id[o] = from_id[pick];
        if (to_w) to_w[o] = from_w[pick];
        o++;
    }
    for (; i < mid; i++, o++) {
        to_id[o] = from_id[i];
        if (to_w) to_w[o] = from_w[i];
    }
    for (; j < hi; j++, o++) {
        to_id[o] = from_id[j];
        if (to_w) to_w[o] = from_w[j];
    }
}

/* Stable bottom-up merge sort of k pairs, O(k log k): insertion-sort runs of
 * INSERTION_SORT_MAX, then merge them pairwise, alternating between the row
 * and the scratch arrays (k entries each; scratch_w only when w). */
static void merge_sort_row(gnn_vid_t *id, float *w, gnn_eid_t k, gnn_vid_t *scratch_id,
                           float *scratch_w)
{
    for (gnn_eid_t lo = 0; lo < k; lo += INSERTION_SORT_MAX) {
        gnn_eid_t len = k - lo < INSERTION_SORT_MAX ? k - lo : INSERTION_SORT_MAX;
        insertion_sort_row(id + lo, w ? w + lo : NULL, len);
    }
    gnn_vid_t *from_id = id, *to_id = scratch_id;
    float *from_w = w, *to_w = w ? scratch_w : NULL;
    for (gnn_eid_t width = INSERTION_SORT_MAX; width < k; width *= 2) {
        for (gnn_eid_t lo = 0; lo < k; lo += 2 * width) {
            gnn_eid_t mid = lo + width < k ? lo + width : k;
            gnn_eid_t hi = mid + width < k ? mid + width : k;
            merge_runs(from_id, from_w, to_id, to_w, lo, mid, hi);
        }
        gnn_vid_t *swap_id = from_id;
        from_id = to_id;
        to_id = swap_id;
        float *swap_w = from_w;
        from_w = to_w;
        to_w = swap_w;
    }
    if (from_id != id) {
        memcpy(id, from_id, (size_t)k * sizeof *id);
        if (w) memcpy(w, from_w, (size_t)k * sizeof *w);
    }
}

static int row_is_sorted(const gnn_vid_t *id, gnn_eid_t k)
{
    for (gnn_eid_t i = 1; i < k; i++)
        if (id[i - 1] > id[i]) return 0;
    return 1;
}

/* Sort every row of a stably by source, weights following. Allocates one
 * scratch buffer as long as the longest row that needs a merge sort; on
 * GNN_ENOMEM nothing has been changed. Does not touch flags. */
static int sort_all_rows(gnn_csr_t *a)
{
    int rc = 0;
    gnn_vid_t *scratch_id = NULL;
    float *scratch_w = NULL;

    gnn_eid_t longest = 0; /* longest unsorted row beyond insertion sort */
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t k = a->indptr[v + 1] - a->indptr[v];
        if (k > INSERTION_SORT_MAX && k > longest &&
            !row_is_sorted(a->indices + a->indptr[v], k))
            longest = k;
    }
    if (longest > 0) {
        scratch_id = gnn_malloc_array((size_t)longest, sizeof *scratch_id);
        GNN_CHECK(scratch_id, GNN_ENOMEM, "sorting rows: out of memory");
        if (a->weights) {
            scratch_w = gnn_malloc_array((size_t)longest, sizeof *scratch_w);
            GNN_CHECK(scratch_w, GNN_ENOMEM, "sorting rows: out of memory");
        }
    }

    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t begin = a->indptr[v], k = a->indptr[v + 1] - begin;
        gnn_vid_t *id = a->indices + begin;
        float *w = a->weights ? a->weights + begin : NULL;
        if (row_is_sorted(id, k)) continue;
        if (k <= INSERTION_SORT_MAX)
            insertion_sort_row(id, w, k);
        else
            merge_sort_row(id, w, k, scratch_id, scratch_w);
    }

fail:
    gnn_free(scratch_id);
    gnn_free(scratch_w);
    return rc;
}

/* Remove repeated sources from the sorted rows of a in place, keeping the
 * first entry of each run (and its weight); updates indptr and nnz. */
static void dedupe_sorted_rows(gnn_csr_t *a)
{
    gnn_eid_t kept = 0, begin = 0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t end = a->indptr[v + 1], row_start = kept;
        for (gnn_eid_t j = begin; j < end; j++) {
            if (kept > row_start && a->indices[kept - 1] == a->indices[j]) continue;
            a->indices[kept] = a->indices[j];
            if (a->weights) a->weights[kept] = a->weights[j];
            kept++;
        }
        a->indptr[v + 1] = kept;
        begin = end;
    }
    a->nnz = kept;
}

/* ---- Counting sort helpers -------------------------------------------------- */

/* indptr[v + 1] holds the length of row v: turn the lengths into row starts,
 * indptr[v] = start of row v (indptr[n] = total). */
static void lengths_to_starts(gnn_eid_t *indptr, gnn_vid_t n)
{
    for (gnn_vid_t v = 0; v < n; v++) indptr[v + 1] += indptr[v];
}

/* After entries were placed with cursor indptr[v]++, indptr[v] holds the end
 * of row v, i.e. the start of row v + 1: shift back to row starts. */
static void ends_to_starts(gnn_eid_t *indptr, gnn_vid_t n)
{
    for (gnn_vid_t v = n; v > 0; v--) indptr[v] = indptr[v - 1];
    indptr[0] = 0;
}

/* ---- Building ------------------------------------------------------------- */

/* Check every id of the edge list against [0, n); count the self loops. */
static int check_edge_ids(gnn_vid_t n, gnn_eid_t m, const gnn_vid_t *src, const gnn_vid_t *dst,
                          gnn_eid_t *n_self_loops)
{
    gnn_eid_t loops = 0;
    for (gnn_eid_t i = 0; i < m; i++) {
        if (src[i] < 0 || src[i] >= n)
            return GNN_FAIL(GNN_ERANGE,
                            "edge %" GNN_PRIeid ": source id %" GNN_PRIvid
                            " out of range [0, %" GNN_PRIvid ")",
                            i, src[i], n);
        if (dst[i] < 0 || dst[i] >= n)
            return GNN_FAIL(GNN_ERANGE,
                            "edge %" GNN_PRIeid ": destination id %" GNN_PRIvid
                            " out of range [0, %" GNN_PRIvid ")",
                            i, dst[i], n);
        loops += src[i] == dst[i];
    }
    *n_self_loops = loops;
    return 0;
}

int gnn_csr_from_edges(gnn_vid_t n, gnn_eid_t m, const gnn_vid_t *src, const gnn_vid_t *dst,
                       const float *weights, unsigned options, gnn_csr_t *out)
{
    int rc = 0;
    gnn_csr_t g = {0};
    const int symmetrize = (options & GNN_BUILD_SYMMETRIZE) != 0;
    const int dedupe = (options & GNN_BUILD_DEDUPE) != 0;
    const int drop_loops = (options & GNN_BUILD_NO_SELF_LOOPS) != 0;
    const int sort = dedupe || (options & GNN_BUILD_SORT) != 0;

    GNN_CHECK(out, GNN_EINVAL, "building CSR: no output");
    memset(out, 0, sizeof *out);
    GNN_CHECK(n >= 0 && m >= 0, GNN_EINVAL,
              "building CSR: negative count (%" GNN_PRIvid " nodes, %" GNN_PRIeid " edges)", n, m);
    GNN_CHECK(m == 0 || (src && dst), GNN_EINVAL, "building CSR: %" GNN_PRIeid
              " edges but no source or destination array", m);
    GNN_CHECK(!symmetrize || m <= INT64_MAX / 2, GNN_EOVERFLOW,
              "building CSR: symmetrised edge count 2 * %" GNN_PRIeid " overflows", m);

    gnn_eid_t n_loops = 0;
    GNN_TRY(check_edge_ids(n, m, src, dst, &n_loops));
    const gnn_eid_t per_edge = symmetrize ? 2 : 1;
    gnn_eid_t nnz = per_edge * (drop_loops ? m - n_loops : m);

    g.n_rows = n;
    g.n_cols = n;
    g.indptr = gnn_calloc((size_t)n + 1, sizeof *g.indptr);
    GNN_CHECK(g.indptr, GNN_ENOMEM, "building CSR: out of memory");
    g.indices = gnn_malloc_array((size_t)nnz, sizeof *g.indices);
    GNN_CHECK(g.indices, GNN_ENOMEM, "building CSR: out of memory");
    if (weights) {
        g.weights = gnn_malloc_array((size_t)nnz, sizeof *g.weights);
        GNN_CHECK(g.weights, GNN_ENOMEM, "building CSR: out of memory");
    }

    /* Counting sort by destination: count, then place input edges in input
     * order, then (symmetrising) their reverses, so each row lists its input
     * edges first and its reverse edges after them. */
    for (gnn_eid_t i = 0; i < m; i++) {
        if (drop_loops && src[i] == dst[i]) continue;
        g.indptr[dst[i] + 1]++;
        if (symmetrize) g.indptr[src[i] + 1]++;
    }
    lengths_to_starts(g.indptr, n);
    for (gnn_eid_t i = 0; i < m; i++) {
        if (drop_loops && src[i] == dst[i]) continue;
        gnn_eid_t pos = g.indptr[dst[i]]++;
        g.indices[pos] = src[i];
        if (weights) g.weights[pos] = weights[i];
    }
    for (gnn_eid_t i = 0; symmetrize && i < m; i++) {
        if (drop_loops && src[i] == dst[i]) continue;
        gnn_eid_t pos = g.indptr[src[i]]++;
        g.indices[pos] = dst[i];
        if (weights) g.weights[pos] = weights[i];
    }
    ends_to_starts(g.indptr, n);
    g.nnz = nnz;

    if (sort) GNN_TRY(sort_all_rows(&g));
    if (dedupe) {
        dedupe_sorted_rows(&g);
        if (g.nnz < nnz) { /* give back what the duplicates held */
            gnn_vid_t *indices = gnn_realloc_array(g.indices, (size_t)g.nnz, sizeof *indices);
            GNN_CHECK(indices, GNN_ENOMEM, "building CSR: out of memory");
            g.indices = indices;
            if (g.weights) {
                float *w = gnn_realloc_array(g.weights, (size_t)g.nnz, sizeof *w);
                GNN_CHECK(w, GNN_ENOMEM, "building CSR: out of memory");
                g.weights = w;
            }
        }
    }

    if (sort) g.flags |= GNN_CSR_SORTED;
    if (dedupe) g.flags |= GNN_CSR_DEDUPED;
    if (drop_loops || n_loops == 0) g.flags |= GNN_CSR_NO_SELF_LOOPS;
    if (symmetrize) g.flags |= GNN_CSR_SYMMETRIC; /* every entry has its reverse */
    *out = g;
    return 0;

fail:
    gnn_csr_free(&g);
    return rc;
}

/* ---- Transpose, copy, free, sort ------------------------------------------------ */

/* Entries below which a transpose runs on one thread. */
#define TRANSPOSE_PAR_MIN ((gnn_eid_t)1 << 16)

/* First row whose entries start at or after target. */
static gnn_vid_t row_at_entry(const gnn_eid_t *indptr, gnn_vid_t n, gnn_eid_t target)
{
    gnn_vid_t lo = 0, hi = n;
    while (lo < hi) {
        gnn_vid_t mid = lo + (hi - lo) / 2;
        if (indptr[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/*
 * The counting sort of the transpose over nt threads: thread q takes the
 * rows of a whose entries are its share, counts its entries per column
 * (cnt, nt x n_cols), and writes them from where the threads before it
 * end in each column. Entry for entry the result is the one-thread scan's.
 */
static void transpose_parallel(const gnn_csr_t *a, gnn_csr_t *r, gnn_eid_t *cnt, int nt)
{
    const gnn_vid_t nc = r->n_rows;
#pragma omp parallel num_threads(nt)
    {
        int q = omp_get_thread_num();
        int nq = omp_get_num_threads();
        gnn_eid_t *mine = cnt + (size_t)q * (size_t)nc;
        gnn_vid_t v0 = row_at_entry(a->indptr, a->n_rows, a->nnz / nq * q + a->nnz % nq * q / nq);
        gnn_vid_t v1 = q == nq - 1 ? a->n_rows
                                   : row_at_entry(a->indptr, a->n_rows,
                                                  a->nnz / nq * (q + 1) +
                                                      a->nnz % nq * (q + 1) / nq);
        for (gnn_eid_t j = a->indptr[v0]; j < a->indptr[v1]; j++) mine[a->indices[j]]++;
#pragma omp barrier
#pragma omp for schedule(static)
        for (gnn_vid_t c = 0; c < nc; c++) {
            gnn_eid_t n = 0;
            for (int k = 0; k < nq; k++) n += cnt[(size_t)k * (size_t)nc + (size_t)c];
            r->indptr[c + 1] = n;
        }
#pragma omp single
        lengths_to_starts(r->indptr, nc);
#pragma omp for schedule(static)
        for (gnn_vid_t c = 0; c < nc; c++) {
            gnn_eid_t at = r->indptr[c];
            for (int k = 0; k < nq; k++) {
                gnn_eid_t *x = cnt + (size_t)k * (size_t)nc + (size_t)c;
                gnn_eid_t n = *x;
                *x = at;
                at += n;
            }
        }
        for (gnn_vid_t v = v0; v < v1; v++)
            for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
                gnn_eid_t pos = mine[a->indices[j]]++;
                r->indices[pos] = v;
                if (a->weights) r->weights[pos] = a->weights[j];
            }
    }
}

int gnn_csr_transpose(const gnn_csr_t *a, gnn_csr_t *t)
{
    int rc = 0;
    gnn_csr_t r = {0};
    gnn_eid_t *cnt = NULL;

    GNN_CHECK(t, GNN_EINVAL, "transposing CSR: no output");
    memset(t, 0, sizeof *t);
    GNN_CHECK(a, GNN_EINVAL, "transposing CSR: no input");

    r.n_rows = a->n_cols;
    r.n_cols = a->n_rows;
    r.nnz = a->nnz;
    r.indptr = gnn_calloc((size_t)r.n_rows + 1, sizeof *r.indptr);
    GNN_CHECK(r.indptr, GNN_ENOMEM, "transposing CSR: out of memory");
    r.indices = gnn_malloc_array((size_t)r.nnz, sizeof *r.indices);
    GNN_CHECK(r.indices, GNN_ENOMEM, "transposing CSR: out of memory");
    if (a->weights) {
        r.weights = gnn_malloc_array((size_t)r.nnz, sizeof *r.weights);
        GNN_CHECK(r.weights, GNN_ENOMEM, "transposing CSR: out of memory");
    }

    /* Threads while their counts (a column count each) take at most half
     * the room of the entries. */
    int nt = omp_get_max_threads();
    while (nt > 1 && (gnn_eid_t)nt * (gnn_eid_t)r.n_rows > r.nnz / 2) nt--;
    if (nt > 1 && r.nnz >= TRANSPOSE_PAR_MIN)
        cnt = gnn_calloc((size_t)nt * (size_t)r.n_rows, sizeof *cnt);
    if (cnt) {
        transpose_parallel(a, &r, cnt, nt);
        gnn_free(cnt);
    } else {
        /* Counting sort by source; scanning a in row order leaves the rows
         * of the result sorted, and repeated entries in their order within
         * a row. */
        for (gnn_eid_t j = 0; j < a->nnz; j++) r.indptr[a->indices[j] + 1]++;
        lengths_to_starts(r.indptr, r.n_rows);
        for (gnn_vid_t v = 0; v < a->n_rows; v++) {
            for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
                gnn_eid_t pos = r.indptr[a->indices[j]]++;
                r.indices[pos] = v;
                if (a->weights) r.weights[pos] = a->weights[j];
            }
        }
        ends_to_starts(r.indptr, r.n_rows);
    }

    /* Repeats, self loops and symmetry are the same seen from either side. */
    r.flags = GNN_CSR_SORTED |
              (a->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS | GNN_CSR_SYMMETRIC));
    *t = r;
    return 0;

fail:
    gnn_csr_free(&r);
    return rc;
}

int gnn_csr_copy(const gnn_csr_t *a, gnn_csr_t *out)
{
    int rc = 0;
    gnn_csr_t c = {0};

    GNN_CHECK(out, GNN_EINVAL, "copying CSR: no output");
    memset(out, 0, sizeof *out);
    GNN_CHECK(a, GNN_EINVAL, "copying CSR: no input");

    c.n_rows = a->n_rows;
    c.n_cols = a->n_cols;
    c.nnz = a->nnz;
    c.flags = a->flags;
    if (a->indptr) { /* a zeroed struct has none */
        c.indptr = gnn_malloc_array((size_t)a->n_rows + 1, sizeof *c.indptr);
        GNN_CHECK(c.indptr, GNN_ENOMEM, "copying CSR: out of memory");
        memcpy(c.indptr, a->indptr, ((size_t)a->n_rows + 1) * sizeof *c.indptr);
    }
    if (a->indices) {
        c.indices = gnn_malloc_array((size_t)a->nnz, sizeof *c.indices);
        GNN_CHECK(c.indices, GNN_ENOMEM, "copying CSR: out of memory");
        memcpy(c.indices, a->indices, (size_t)a->nnz * sizeof *c.indices);
    }
    if (a->weights) {
        c.weights = gnn_malloc_array((size_t)a->nnz, sizeof *c.weights);
        GNN_CHECK(c.weights, GNN_ENOMEM, "copying CSR: out of memory");
        memcpy(c.weights, a->weights, (size_t)a->nnz * sizeof *c.weights);
    }
    *out = c;
    return 0;

fail:
    gnn_csr_free(&c);
    return rc;
}

int gnn_csr_rows(const gnn_csr_t *a, const gnn_vid_t *rows, gnn_vid_t n, gnn_csr_t *out)
{
    int rc = 0;
    gnn_csr_t c = {0};

    GNN_CHECK(out, GNN_EINVAL, "CSR rows: no output");
    memset(out, 0, sizeof *out);
    GNN_CHECK(a && a->indptr && (rows || n == 0) && n >= 0, GNN_EINVAL, "CSR rows: bad argument");
    for (gnn_vid_t i = 0; i < n; i++)
        GNN_CHECK(rows[i] >= 0 && rows[i] < a->n_rows, GNN_ERANGE,
                  "CSR rows: row %" PRId64 " outside [0, %" PRId64 ")", rows[i], a->n_rows);
    c.n_rows = n;
    c.n_cols = a->n_cols;
    c.flags = a->flags & GNN_CSR_SORTED; /* the other flags speak of a square graph */
    c.indptr = gnn_malloc_array((size_t)n + 1, sizeof *c.indptr);
    GNN_CHECK(c.indptr, GNN_ENOMEM, "CSR rows: out of memory");
    c.indptr[0] = 0;
    for (gnn_vid_t i = 0; i < n; i++)
        c.indptr[i + 1] = c.indptr[i] + (a->indptr[rows[i] + 1] - a->indptr[rows[i]]);
    c.nnz = c.indptr[n];
    c.indices = gnn_malloc_array((size_t)c.nnz + 1, sizeof *c.indices);
    GNN_CHECK(c.indices, GNN_ENOMEM, "CSR rows: out of memory");
    if (a->weights) {
        c.weights = gnn_malloc_array((size_t)c.nnz + 1, sizeof *c.weights);
        GNN_CHECK(c.weights, GNN_ENOMEM, "CSR rows: out of memory");
    }
#pragma omp parallel for schedule(static, 256) if (c.nnz > 65536)
    for (gnn_vid_t i = 0; i < n; i++) {
        gnn_eid_t from = a->indptr[rows[i]], len = c.indptr[i + 1] - c.indptr[i];
        memcpy(c.indices + c.indptr[i], a->indices + from, (size_t)len * sizeof *c.indices);
        if (c.weights)
            memcpy(c.weights + c.indptr[i], a->weights + from, (size_t)len * sizeof *c.weights);
    }
    *out = c;
    return 0;

fail:
    gnn_csr_free(&c);
    return rc;
}

void gnn_csr_free(gnn_csr_t *a)
{
    if (!a) return;
    gnn_free(a->indptr);
    gnn_free(a->indices);
    gnn_free(a->weights);
    memset(a, 0, sizeof *a);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void gnn_sort_u64(uint64_t *a, int64_t n)
{
    if (n > 1) qsort(a, (size_t)n, sizeof *a, cmp_u64);
}

int gnn_csr_sort_rows(gnn_csr_t *a)
{
    int rc = 0;
    GNN_CHECK(a, GNN_EINVAL, "sorting CSR rows: no input");
    GNN_TRY(sort_all_rows(a));
    a->flags |= GNN_CSR_SORTED;
    return 0;

fail:
    return rc;
}

int gnn_csr_dedupe(gnn_csr_t *a)
{
    int rc = 0;
    GNN_CHECK(a, GNN_EINVAL, "deduplicating CSR rows: no input");
    if (!(a->flags & GNN_CSR_SORTED)) GNN_TRY(sort_all_rows(a));
    dedupe_sorted_rows(a);
    a->flags |= GNN_CSR_SORTED | GNN_CSR_DEDUPED;
    return 0;

fail:
    return rc;
}

/* ---- Statistics ------------------------------------------------------------- */

/* Number of bits needed for x > 0: the k with x in [2^(k-1), 2^k). */
static int bit_length(gnn_eid_t x)
{
    int k = 0;
    for (uint64_t u = (uint64_t)x; u; u >>= 1) k++;
    return k;
}

/* For a graph without rows all fields stay zero. */
void gnn_csr_degree_stats(const gnn_csr_t *a, gnn_degree_stats_t *s)
{
    memset(s, 0, sizeof *s);
    s->n = a->n_rows;
    if (a->n_rows <= 0) return;

    s->min = s->max = a->indptr[1] - a->indptr[0];
    double sum = 0.0;
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        gnn_eid_t d = a->indptr[v + 1] - a->indptr[v];
        if (d < s->min) s->min = d;
        if (d > s->max) {
            s->max = d;
            s->argmax = v;
        }
        if (d == 0) s->n_zero++;
        s->hist[bit_length(d)]++;
        sum += (double)d;
    }
    s->mean = sum / (double)a->n_rows;
    double sq = 0.0; /* second pass: no cancellation on large graphs */
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        double dev = (double)(a->indptr[v + 1] - a->indptr[v]) - s->mean;
        sq += dev * dev;
    }
    s->stddev = sqrt(sq / (double)a->n_rows);
}

void gnn_csr_col_counts(const gnn_csr_t *a, gnn_eid_t *out)
{
    for (gnn_vid_t u = 0; u < a->n_cols; u++) out[u] = 0;
    for (gnn_eid_t j = 0; j < a->nnz; j++) out[a->indices[j]]++;
}

/* ---- Validation --------------------------------------------------------------- */

/* True when the sorted range id[lo, hi) holds x. */
static int sorted_range_contains(const gnn_vid_t *id, gnn_eid_t lo, gnn_eid_t hi, gnn_vid_t x)
{
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (id[mid] < x)
            lo = mid + 1;
        else if (id[mid] > x)
            hi = mid;
        else
            return 1;
    }
    return 0;
}

/* indptr, counts and array presence; after it, every offset is in [0, nnz]. */
static int validate_offsets(const gnn_csr_t *a)
{
    if (a->n_rows < 0 || a->n_cols < 0 || a->nnz < 0)
        return GNN_FAIL(GNN_EFORMAT,
                        "negative count (%" GNN_PRIvid " rows, %" GNN_PRIvid
                        " columns, %" GNN_PRIeid " entries)",
                        a->n_rows, a->n_cols, a->nnz);
    if (!a->indptr) {
        if (a->n_rows > 0 || a->nnz > 0)
            return GNN_FAIL(GNN_EFORMAT, "no indptr for %" GNN_PRIvid " rows", a->n_rows);
        return 0; /* the zeroed, empty graph */
    }
    if (!a->indices && a->nnz > 0)
        return GNN_FAIL(GNN_EFORMAT, "no indices for %" GNN_PRIeid " entries", a->nnz);
    if (a->indptr[0] != 0)
        return GNN_FAIL(GNN_EFORMAT, "indptr[0] = %" GNN_PRIeid ", expected 0", a->indptr[0]);
    for (gnn_vid_t v = 0; v < a->n_rows; v++)
        if (a->indptr[v] > a->indptr[v + 1])
            return GNN_FAIL(GNN_EFORMAT,
                            "indptr not monotone at row %" GNN_PRIvid " (%" GNN_PRIeid
                            " > %" GNN_PRIeid ")",
                            v, a->indptr[v], a->indptr[v + 1]);
    if (a->indptr[a->n_rows] != a->nnz)
        return GNN_FAIL(GNN_EFORMAT,
                        "indptr[%" GNN_PRIvid "] = %" GNN_PRIeid " but nnz = %" GNN_PRIeid,
                        a->n_rows, a->indptr[a->n_rows], a->nnz);
    return 0;
}

/* Ranges and the per-row flags, first offending row first. seen is NULL
 * unless the graph claims DEDUPED without SORTED; then it has n_cols
 * entries, all -1, and records the last row each source was seen in. */
static int validate_rows(const gnn_csr_t *a, gnn_vid_t *seen)
{
    const int sorted = (a->flags & GNN_CSR_SORTED) != 0;
    const int deduped = (a->flags & GNN_CSR_DEDUPED) != 0;
    const int no_loops = (a->flags & GNN_CSR_NO_SELF_LOOPS) != 0;

    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
            gnn_vid_t u = a->indices[j];
            if (u < 0 || u >= a->n_cols)
                return GNN_FAIL(GNN_EFORMAT,
                                "row %" GNN_PRIvid ": index %" GNN_PRIvid
                                " out of range [0, %" GNN_PRIvid ")",
                                v, u, a->n_cols);
            if (sorted && j > a->indptr[v] && a->indices[j - 1] > u)
                return GNN_FAIL(GNN_EFORMAT,
                                "row %" GNN_PRIvid " not sorted although flagged sorted", v);
            int repeated = 0;
            if (deduped && sorted)
                repeated = j > a->indptr[v] && a->indices[j - 1] == u;
            else if (deduped) {
                repeated = seen[u] == v;
                seen[u] = v;
            }
            if (repeated)
                return GNN_FAIL(GNN_EFORMAT,
                                "row %" GNN_PRIvid ": duplicate source %" GNN_PRIvid
                                " although flagged deduped",
                                v, u);
            if (no_loops && u == v)
                return GNN_FAIL(GNN_EFORMAT,
                                "row %" GNN_PRIvid " has a self loop although flagged free of them",
                                v);
        }
    }
    return 0;
}

/*
 * Symmetry of a sorted, deduplicated CSR in one pass with a cursor per
 * row: rows are
 * read in order v = 0, 1, ...; entry u of row v (the edge u -> v) needs
 * its reverse, entry v of row u, and row u's entries below v were used
 * up by the rows before v, so that reverse must be row u's next unused
 * entry. Every entry is used once: O(nnz) time, n cursors of memory, two
 * random reads per entry (prefetched ahead), where a binary search per
 * entry would take log(degree) of them.
 */
#define SYM_AHEAD 16
static int validate_symmetric_sorted(const gnn_csr_t *a)
{
    int rc = 0;
    gnn_vid_t n = a->n_rows;
    const gnn_vid_t *idx = a->indices;
    gnn_eid_t *cur = gnn_malloc_array((size_t)n + 1, sizeof *cur);
    GNN_CHECK(cur, GNN_ENOMEM, "validating CSR: out of memory");
    memcpy(cur, a->indptr, (size_t)n * sizeof *cur);
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_eid_t e1 = a->indptr[v + 1];
        for (gnn_eid_t j = a->indptr[v]; j < e1; j++) {
            if (j + SYM_AHEAD < a->nnz) __builtin_prefetch(&cur[idx[j + SYM_AHEAD]], 1);
            if (j + SYM_AHEAD / 2 < a->nnz) __builtin_prefetch(&idx[cur[idx[j + SYM_AHEAD / 2]]]);
            gnn_vid_t u = idx[j];
            gnn_eid_t c = cur[u];
            gnn_vid_t w = c < a->indptr[u + 1] ? idx[c] : n; /* row u's next: n when used up */
            if (w != v) { /* w < v: row w lacked u; w > v: row u lacks v */
                rc = w < v ? GNN_FAIL(GNN_EFORMAT,
                                      "not symmetric: edge %" GNN_PRIvid " -> %" GNN_PRIvid
                                      " has no reverse",
                                      w, u)
                           : GNN_FAIL(GNN_EFORMAT,
                                      "not symmetric: edge %" GNN_PRIvid " -> %" GNN_PRIvid
                                      " has no reverse",
                                      u, v);
                goto fail;
            }
            cur[u] = c + 1;
        }
    }
fail:
    gnn_free(cur);
    return rc;
}

/* u in row v iff v in row u. Sorted and deduplicated rows: one pass
 * (above). Sorted rows with repeats (whose multiplicities need not match):
 * each reverse entry found by binary search in a itself; otherwise in the
 * (sorted) transpose, whose row v lists exactly the u that have v in
 * their row. */
static int validate_symmetric(const gnn_csr_t *a)
{
    int rc = 0;
    gnn_csr_t t = {0};
    const gnn_csr_t *lookup = a;

    GNN_CHECK(a->n_rows == a->n_cols, GNN_EFORMAT,
              "flagged symmetric but not square (%" GNN_PRIvid " x %" GNN_PRIvid ")", a->n_rows,
              a->n_cols);
    if ((a->flags & GNN_CSR_SORTED) && (a->flags & GNN_CSR_DEDUPED))
        return validate_symmetric_sorted(a);
    if (!(a->flags & GNN_CSR_SORTED)) {
        gnn_csr_t structure = *a;
        structure.weights = NULL; /* only the pattern is needed */
        GNN_TRY(gnn_csr_transpose(&structure, &t));
        lookup = &t;
    }
    for (gnn_vid_t v = 0; v < a->n_rows; v++) {
        for (gnn_eid_t j = a->indptr[v]; j < a->indptr[v + 1]; j++) {
            gnn_vid_t u = a->indices[j];
            /* entry u of row v is the edge u -> v; its reverse v -> u is
             * entry v of row u, i.e. entry u of row v of the transpose */
            int found = lookup == a ? sorted_range_contains(a->indices, a->indptr[u],
                                                            a->indptr[u + 1], v)
                                    : sorted_range_contains(t.indices, t.indptr[v],
                                                            t.indptr[v + 1], u);
            GNN_CHECK(found, GNN_EFORMAT,
                      "not symmetric: edge %" GNN_PRIvid " -> %" GNN_PRIvid " has no reverse", u,
                      v);
        }
    }

fail:
    gnn_csr_free(&t);
    return rc;
}

int gnn_csr_validate(const gnn_csr_t *a)
{
    int rc = 0;
    gnn_vid_t *seen = NULL;

    GNN_CHECK(a, GNN_EINVAL, "validating CSR: no input");
    GNN_TRY(validate_offsets(a));
    if (!a->indptr) return 0;

    if ((a->flags & GNN_CSR_DEDUPED) && !(a->flags & GNN_CSR_SORTED)) {
        seen = gnn_malloc_array((size_t)a->n_cols, sizeof *seen);
        GNN_CHECK(seen, GNN_ENOMEM, "validating CSR: out of memory");
        for (gnn_vid_t u = 0; u < a->n_cols; u++) seen[u] = -1;
    }
    GNN_TRY(validate_rows(a, seen));
    if (a->flags & GNN_CSR_SYMMETRIC) GNN_TRY(validate_symmetric(a));

fail:
    gnn_free(seen);
    return rc;
}

int gnn_csr_equal(const gnn_csr_t *a, const gnn_csr_t *b)
{
    if (a->n_rows != b->n_rows || a->n_cols != b->n_cols || a->nnz != b->nnz) return 0;
    for (gnn_vid_t v = 0; v <= a->n_rows; v++) { /* a missing indptr reads as zeros */
        gnn_eid_t oa = a->indptr ? a->indptr[v] : 0, ob = b->indptr ? b->indptr[v] : 0;
        if (oa != ob) return 0;
    }
    if (a->nnz > 0) {
        if (!a->indices || !b->indices) return 0; /* malformed */
        if (memcmp(a->indices, b->indices, (size_t)a->nnz * sizeof *a->indices) != 0) return 0;
    }
    if ((a->weights == NULL) != (b->weights == NULL)) return 0;
    /* weights compare bitwise, so a copy equals its original even with NaN */
    if (a->weights && a->nnz > 0 &&
        memcmp(a->weights, b->weights, (size_t)a->nnz * sizeof *a->weights) != 0)
        return 0;
    return 1;
}
