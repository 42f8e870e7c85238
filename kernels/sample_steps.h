/*
 * The per-element steps of the device sampler (gnn_be_sample,
 * kernels/backend.h), shared by its CPU and CUDA implementations so that
 * both run the very same arithmetic: a row's count and its draws (those
 * of sampler/sampler.h, through graph/base/draw.h) and the sort of a row.
 */
#ifndef GNN_KERNELS_SAMPLE_STEPS_H
#define GNN_KERNELS_SAMPLE_STEPS_H

#include "graph/base/draw.h"

#include <stdint.h>

/* Entries row v draws at a fanout (-1: all): min(degree, fanout). */
static inline GNN_HOSTDEV int64_t gnn__ds_count(const int64_t *indptr, int64_t v, int fanout)
{
    const int64_t d = indptr[v + 1] - indptr[v];
    return fanout < 0 || d <= fanout ? d : fanout;
}

/* The c draws of row v at hop h under key into out (global ids, in draw
 * order): the whole row when c is its degree, else the positions of the
 * definition turned into the sources they index. The draws of v come
 * from the stream of kid[v] (a part's graph-file ids: sampler/sampler.h's
 * key ids), or of v itself where kid is NULL. */
static inline GNN_HOSTDEV void gnn__ds_draw(const int64_t *indptr, const int64_t *indices,
                                            const int64_t *kid, int64_t v, int64_t c,
                                            uint64_t key, int h, int64_t *out)
{
    const int64_t *row = indices + indptr[v];
    const int64_t d = indptr[v + 1] - indptr[v];
    if (c == d) {
        for (int64_t q = 0; q < c; q++) out[q] = row[q];
        return;
    }
    gnn_draw_stream_t s;
    gnn_draw_init(&s, key, kid ? kid[v] : v, (uint32_t)h);
    gnn_draw_floyd(&s, d, c, out);
    for (int64_t q = 0; q < c; q++) out[q] = row[out[q]];
}

/*
 * Excluded edges (gnn_be_sample_excluding, sampler/sampler.h's
 * gnn_sampler_sample_excluding): a batch's table of the rows with
 * excluded sources, m rows xr ascending, row xr[k]'s sources
 * xsrc[xo[k], xo[k + 1]) ascending. A row with excluded sources draws
 * over the row without every entry equal to one of them: its count is
 * min(fanout, d - excluded), its draws the positions of the definition
 * over those d - excluded entries, each moved past the excluded positions
 * at or before it, in ascending order (as the host sampler's).
 */

/* The first position in row[a, d) whose entry is not below u (an
 * ascending row). */
static inline GNN_HOSTDEV int64_t gnn__ds_lower(const int64_t *row, int64_t a, int64_t d,
                                                int64_t u)
{
    int64_t b = d;
    while (a < b) {
        const int64_t mid = a + (b - a) / 2;
        if (row[mid] < u)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* Is u among the ascending xs[0, nx)? */
static inline GNN_HOSTDEV int gnn__ds_among(const int64_t *xs, int64_t nx, int64_t u)
{
    const int64_t lo = gnn__ds_lower(xs, 0, nx, u);
    return lo < nx && xs[lo] == u;
}

/* Row v's excluded sources in the table (*xs; NULL and 0 where none),
 * their number. */
static inline GNN_HOSTDEV int64_t gnn__ds_excl_row(const int64_t *xr, const int64_t *xo,
                                                   const int64_t *xsrc, int64_t m, int64_t v,
                                                   const int64_t **xs)
{
    const int64_t lo = gnn__ds_lower(xr, 0, m, v);
    if (lo == m || xr[lo] != v) {
        *xs = 0;
        return 0;
    }
    *xs = xsrc + xo[lo];
    return xo[lo + 1] - xo[lo];
}


/* The entries of row (d of them) among xs: an ascending row searched for
 * each of xs, another scanned. */
static inline GNN_HOSTDEV int64_t gnn__ds_excluded(const int64_t *row, int64_t d, int sorted,
                                                   const int64_t *xs, int64_t nx)
{
    int64_t n = 0;
    if (!sorted) {
        for (int64_t q = 0; q < d; q++) n += gnn__ds_among(xs, nx, row[q]);
        return n;
    }
    for (int64_t k = 0, lo = 0; k < nx && lo < d; k++) {
        int64_t a = gnn__ds_lower(row, lo, d, xs[k]);
        for (lo = a; lo < d && row[lo] == xs[k]; lo++) n++;
    }
    return n;
}

/* gnn__ds_count of row v less its nx excluded sources xs. */
static inline GNN_HOSTDEV int64_t gnn__ds_count_excl(const int64_t *indptr, const int64_t *indices,
                                                     int sorted, int64_t v, int fanout,
                                                     const int64_t *xs, int64_t nx)
{
    if (nx == 0) return gnn__ds_count(indptr, v, fanout);
    const int64_t d = indptr[v + 1] - indptr[v];
    const int64_t dk = d - gnn__ds_excluded(indices + indptr[v], d, sorted, xs, nx);
    return fanout < 0 || dk <= fanout ? dk : fanout;
}

/* gnn__ds_draw of row v less its nx excluded sources xs: the c draws
 * (gnn__ds_count_excl's) over the row without them. */
static inline GNN_HOSTDEV void gnn__ds_draw_excl(const int64_t *indptr, const int64_t *indices,
                                                 const int64_t *kid, int64_t v, int64_t c,
                                                 uint64_t key, int h, int sorted,
                                                 const int64_t *xs, int64_t nx, int64_t *out)
{
    if (nx == 0) {
        gnn__ds_draw(indptr, indices, kid, v, c, key, h, out);
        return;
    }
    const int64_t *row = indices + indptr[v];
    const int64_t d = indptr[v + 1] - indptr[v];
    const int64_t dk = d - gnn__ds_excluded(row, d, sorted, xs, nx);
    if (c == dk) { /* the whole row less its excluded entries, in order */
        for (int64_t q = 0, w = 0; q < d; q++)
            if (!gnn__ds_among(xs, nx, row[q])) out[w++] = row[q];
        return;
    }
    gnn_draw_stream_t s;
    gnn_draw_init(&s, key, kid ? kid[v] : v, (uint32_t)h);
    gnn_draw_floyd(&s, dk, c, out);
    /* Each position past the excluded ones at or before it, ascending: a
     * run [a, b) of one excluded source moves a position at or past a by
     * its length. */
    if (sorted) {
        for (int64_t k = 0, lo = 0; k < nx && lo < d; k++) {
            const int64_t a = gnn__ds_lower(row, lo, d, xs[k]);
            for (lo = a; lo < d && row[lo] == xs[k]; lo++) {
            }
            if (lo > a)
                for (int64_t q = 0; q < c; q++) out[q] += out[q] >= a ? lo - a : 0;
        }
    } else {
        for (int64_t e = 0; e < d; e++)
            if (gnn__ds_among(xs, nx, row[e]))
                for (int64_t q = 0; q < c; q++) out[q] += out[q] >= e;
    }
    for (int64_t q = 0; q < c; q++) out[q] = row[out[q]];
}

/*
 * Typed draws (gnn_be_sampler_set_relations, sampler/sampler.h's
 * gnn_sampler_set_relations): et[e] the relation of entry e, every row's
 * entries grouped by relation. A row draws per relation run: min(fanout,
 * its entries) of it, keyed by (id, h | (r + 1) << 16); with excluded
 * sources, over the run's entries less them. Each draw's relation goes
 * to rout.
 */

/* A typed entry's sort key: local id, then relation (8 bits, as the host
 * sampler's), and back. */
static inline GNN_HOSTDEV int64_t gnn__ds_typed_key(int64_t local, int32_t rel)
{
    return (int64_t)((uint64_t)local << 8 | (uint64_t)rel);
}

static inline GNN_HOSTDEV void gnn__ds_typed_split(int64_t key, int64_t *local, int32_t *rel)
{
    *local = (int64_t)((uint64_t)key >> 8);
    *rel = (int32_t)((uint64_t)key & 0xff);
}

/* The end of the run of relation et[a] in [a, b). */
static inline GNN_HOSTDEV int64_t gnn__ds_rel_end(const int32_t *et, int64_t a, int64_t b)
{
    const int32_t r = et[a];
    int64_t lo = a + 1, hi = b;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (et[mid] == r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Entries of row[a, e) not among xs (all e - a without xs). */
static inline GNN_HOSTDEV int64_t gnn__ds_kept(const int64_t *row, int64_t a, int64_t e,
                                               const int64_t *xs, int64_t nx)
{
    if (nx == 0) return e - a;
    int64_t d = 0;
    for (int64_t q = a; q < e; q++) d += !gnn__ds_among(xs, nx, row[q]);
    return d;
}

/* The typed draws of row v at a fanout, less its nx excluded sources xs. */
static inline GNN_HOSTDEV int64_t gnn__ds_count_typed(const int64_t *indptr,
                                                      const int64_t *indices, const int32_t *et,
                                                      int64_t v, int fanout, const int64_t *xs,
                                                      int64_t nx)
{
    int64_t a = indptr[v], c = 0;
    const int64_t b = indptr[v + 1];
    while (a < b) {
        const int64_t e = gnn__ds_rel_end(et, a, b), d = gnn__ds_kept(indices, a, e, xs, nx);
        c += fanout < 0 || d <= fanout ? d : fanout;
        a = e;
    }
    return c;
}

/* The typed draws of row v (gnn__ds_count_typed's) at hop h under key
 * into out (global ids) and their relations into rout. */
static inline GNN_HOSTDEV void gnn__ds_draw_typed(const int64_t *indptr, const int64_t *indices,
                                                  const int32_t *et, const int64_t *kid,
                                                  int64_t v, int fanout, uint64_t key, int h,
                                                  const int64_t *xs, int64_t nx, int64_t *out,
                                                  int32_t *rout)
{
    int64_t a = indptr[v], q = 0;
    const int64_t b = indptr[v + 1];
    while (a < b) {
        const int64_t e = gnn__ds_rel_end(et, a, b), d = gnn__ds_kept(indices, a, e, xs, nx);
        const int64_t c = fanout < 0 || d <= fanout ? d : fanout;
        const int32_t r = et[a];
        int64_t *o = out + q;
        if (c == d) { /* the run less its excluded entries, in order */
            for (int64_t p = a, w = 0; p < e; p++)
                if (nx == 0 || !gnn__ds_among(xs, nx, indices[p])) o[w++] = indices[p];
        } else {
            gnn_draw_stream_t s;
            gnn_draw_init(&s, key, kid ? kid[v] : v, (uint32_t)h | (uint32_t)(r + 1) << 16);
            gnn_draw_floyd(&s, d, c, o);
            /* positions over the kept entries moved past the excluded ones */
            for (int64_t p = a; nx > 0 && p < e; p++)
                if (gnn__ds_among(xs, nx, indices[p]))
                    for (int64_t k = 0; k < c; k++) o[k] += o[k] >= p - a;
            for (int64_t k = 0; k < c; k++) o[k] = indices[a + o[k]];
        }
        for (int64_t k = 0; k < c; k++) rout[q + k] = r;
        q += c;
        a = e;
    }
}

#endif
