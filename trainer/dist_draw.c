/*
 * Sampling by owners (trainer/dist.h, gnn_dist_draw_remote): when a part
 * holds fewer hops of halo than the model has layers, the neighbours of
 * nodes whose rows the part lacks are drawn by the nodes' owners. Every
 * rank sends each owner one request per hop (the nodes, the fanout and the
 * batch's key), the owner draws with the same counter-based stream the
 * sampler uses locally, and answers with, per node, its count and then the
 * sources, so the draws are those one process makes on the whole graph.
 * A typed sampler's requests are drawn per relation, and each source of
 * the answer carries its relation in its low 8 bits.
 */
#include "trainer/dist.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/mpiutil.h"
#include "sampler/sampler.h"

#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* A request to one owner: this header, then the partition ids. REQ_TYPED:
 * 1 when a typed sampler asks (draws per relation, answered with them). */
enum { REQ_KEY, REQ_HOP, REQ_FANOUT, REQ_TYPED, REQ_HEAD };

/* Owned row r as drawn for others: its entries (and, typed, their
 * relations), less the current batch's excluded edges when it has any
 * (then copied into kept, kept_rel, of the row's length). Returns the
 * length. */
static gnn_eid_t drawn_row(const gnn_dist_part_t *d, int64_t r, int typed, const gnn_vid_t **row,
                           const int32_t **rel, gnn_vid_t *kept, int32_t *kept_rel)
{
    gnn_eid_t a = d->full.indptr[r], deg = d->full.indptr[r + 1] - a;
    *row = d->full.indices + a;
    *rel = typed ? d->full_etype + a : NULL;
    if (!d->draw_excl || !gnn_sampler_excl_has_row(d->draw_excl, d->gid[r])) return deg;
    if (!*rel) {
        deg = gnn_sampler_excl_filter(d->draw_excl, d->gid[r], *row, deg, d->gid, kept);
        *row = kept;
        return deg;
    }
    gnn_eid_t n = 0; /* typed: the relations follow their entries */
    for (gnn_eid_t q = 0; q < deg; q++)
        if (gnn_sampler_excl_filter(d->draw_excl, d->gid[r], *row + q, 1, d->gid, NULL)) {
            kept[n] = (*row)[q];
            kept_rel[n++] = (*rel)[q];
        }
    *row = kept;
    *rel = kept_rel;
    return n;
}

/* The owner's side: answer the requests asked[rdispl[s] .. + rcount[s])
 * of every rank s with, per node, its count, then all the sources (asked
 * typed: drawn per relation, each with its relation in the low 8 bits). */
static int answer_draws(gnn_dist_part_t *d, int h, int fanout, const int64_t *asked,
                        const int *rcount, const int *rdispl, int **out_cnt, int64_t **out)
{
    int rc = 0, R = d->size;
    int64_t first = d->part_start[d->rank], total = 0;
    int typed = 0; /* any request typed */
    int *acnt = gnn_calloc((size_t)R, sizeof *acnt);
    int64_t *ans = NULL;
    int32_t *rel = NULL, *kept_rel = NULL;
    gnn_vid_t *kept = NULL;
    gnn_eid_t longest = 0;
    GNN_CHECK(acnt, GNN_ENOMEM, "remote draws");
    for (int s = 0; s < R; s++) {
        const int64_t *q = asked + rdispl[s];
        if (rcount[s] == 0) continue;
        GNN_CHECK(rcount[s] >= REQ_HEAD && q[REQ_HOP] == h && q[REQ_FANOUT] == fanout, GNN_EINVAL,
                  "remote draws: rank %d asks for hop %" PRId64 " (fanout %" PRId64
                  ") while rank %d draws hop %d (fanout %d)",
                  s, rcount[s] >= REQ_HEAD ? q[REQ_HOP] : -1,
                  rcount[s] >= REQ_HEAD ? q[REQ_FANOUT] : -1, d->rank, h, fanout);
        GNN_CHECK(!q[REQ_TYPED] || d->full_etype, GNN_EINVAL,
                  "remote draws: rank %d asks for relations of a part without them", s);
        typed |= q[REQ_TYPED] != 0;
        for (int i = REQ_HEAD; i < rcount[s]; i++) {
            int64_t r = q[i] - first;
            GNN_CHECK(r >= 0 && r < d->n_owned, GNN_EINVAL,
                      "remote draws: node %" PRId64 " is not rank %d's", q[i], d->rank);
            gnn_eid_t deg = d->full.indptr[r + 1] - d->full.indptr[r];
            longest = deg > longest ? deg : longest;
        }
    }
    kept = gnn_malloc_array((size_t)longest + 1, sizeof *kept);
    kept_rel = typed ? gnn_malloc_array((size_t)longest + 1, sizeof *kept_rel) : NULL;
    rel = typed ? gnn_malloc_array((size_t)longest + 1, sizeof *rel) : NULL;
    GNN_CHECK(kept && (!typed || (kept_rel && rel)), GNN_ENOMEM,
              "remote draws: a row of %" PRId64, (int64_t)longest);
    for (int s = 0; s < R; s++) {
        const int64_t *q = asked + rdispl[s];
        if (rcount[s] == 0) continue;
        int64_t n = 0;
        for (int i = REQ_HEAD; i < rcount[s]; i++) {
            const gnn_vid_t *row;
            const int32_t *et;
            gnn_eid_t deg = drawn_row(d, q[i] - first, q[REQ_TYPED] != 0, &row, &et, kept,
                                      kept_rel);
            n += 1 + (et ? gnn_sampler_typed_count(et, deg, fanout)
                         : fanout < 0 || deg <= fanout ? deg : fanout);
        }
        GNN_CHECK(n <= INT_MAX, GNN_ERANGE, "remote draws: an answer of %" PRId64 " ids", n);
        acnt[s] = (int)n;
        total += n;
    }
    GNN_CHECK(total <= INT_MAX, GNN_ERANGE, "remote draws: answers of %" PRId64 " ids", total);
    ans = gnn_malloc_array((size_t)total + 1, sizeof *ans);
    GNN_CHECK(ans, GNN_ENOMEM, "remote draws: %" PRId64 " ids", total);
    int64_t at = 0;
    for (int s = 0; s < R; s++) {
        const int64_t *q = asked + rdispl[s];
        if (rcount[s] == 0) continue;
        int64_t nq = rcount[s] - REQ_HEAD, *cnt = ans + at, *src = ans + at + nq;
        for (int64_t i = 0; i < nq; i++) {
            int64_t r = q[REQ_HEAD + i] - first;
            const gnn_vid_t *row;
            const int32_t *et;
            gnn_eid_t deg = drawn_row(d, r, q[REQ_TYPED] != 0, &row, &et, kept, kept_rel);
            int64_t c = et ? gnn_sampler_draw_row_typed(row, et, deg, fanout, (uint64_t)q[REQ_KEY],
                                                        d->gid[r], h, src, rel)
                           : gnn_sampler_draw_row(row, deg, fanout, (uint64_t)q[REQ_KEY],
                                                  d->gid[r], h, src);
            if (c < 0) {
                rc = (int)c;
                goto fail;
            }
            for (int64_t k = 0; k < c; k++)
                src[k] = et ? (int64_t)((uint64_t)d->l2g[src[k]] << 8 | (uint64_t)rel[k])
                            : d->l2g[src[k]];
            cnt[i] = c;
            src += c;
        }
        at += acnt[s];
    }
    gnn_free(rel);
    gnn_free(kept);
    gnn_free(kept_rel);
    *out_cnt = acnt;
    *out = ans;
    return 0;
fail:
    gnn_free(acnt);
    gnn_free(ans);
    gnn_free(rel);
    gnn_free(kept);
    gnn_free(kept_rel);
    return rc;
}

int gnn_dist_set_excluded(gnn_dist_part_t *d, const int64_t *pairs, int64_t n)
{
    gnn_sampler_excl_free(d->draw_excl);
    d->draw_excl = NULL;
    return n > 0 ? gnn_sampler_excl_create(pairs, n, &d->draw_excl) : 0;
}

/* A failure of this rank alone between a hop's collective calls: its
 * peers wait in the next one (or, past the hop, in the caller's next
 * agreement), so the job ends here, with this rank's line. */
static int fail_alone(int rc)
{
    return gnn_mpi_fail_alone("gnn-train", rc);
}

int gnn_dist_draw_remote(void *ctx, int h, int fanout, uint64_t key, const int64_t *v, int64_t n,
                         int64_t *cnt, int64_t **src, int32_t **rel)
{
    gnn_dist_part_t *d = ctx;
    int rc = 0, R = d->size;
    MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
    double t0 = MPI_Wtime();
    const int typed = rel != NULL; /* a typed sampler asks */
    int32_t *out_rel = NULL;
    *src = NULL;
    if (rel) *rel = NULL;
    int64_t nn = n > 0 ? n : 0; /* n < 0: a failure to pass on, nothing asked */
    int *c = gnn_calloc((size_t)R * 7, sizeof *c), *acnt = NULL;
    int64_t *grp = gnn_calloc((size_t)R * 3, sizeof *grp);
    int64_t *order = gnn_malloc_array((size_t)nn + 1, sizeof *order);
    int64_t *off = gnn_malloc_array((size_t)nn + 1, sizeof *off);
    int64_t *req = gnn_malloc_array((size_t)nn + (size_t)R * REQ_HEAD, sizeof *req);
    int64_t *asked = NULL, *ans = NULL, *back = NULL, *out = NULL;
    int local = n < 0  /* the sampler failed before this hop: tell the others */
                    ? (int)n
                : c && grp && order && off && req
                    ? 0
                    : GNN_FAIL(GNN_ENOMEM, "remote draws of %" PRId64 " rows", n);
    for (int64_t i = 0; i < n && local == 0; i++) {
        int64_t p = gnn_dist_pid(d, v[i]);
        if (v[i] < d->n_held || p < 0 || p >= d->n_global || gnn_dist_owner(d, p) == d->rank)
            local = GNN_FAIL(GNN_EINVAL, "remote draws: node %" PRId64 " is held here", v[i]);
    }
    if (local == 0 && n + (int64_t)R * REQ_HEAD > INT_MAX)
        local = GNN_FAIL(GNN_ERANGE, "remote draws: %" PRId64 " rows in one hop", n);
    if (!c) /* no room even to tell the others: this rank fails alone */
        return fail_alone(local < 0 ? local : GNN_FAIL(GNN_ENOMEM, "remote draws"));
    /* Failures travel with the counts: a rank that failed sends its code
     * (negative) as every count, so each hop takes four collective calls. */
    int *scount = c, *sdispl = c + R, *rcount = c + 2 * R, *rdispl = c + 3 * R;
    int *bcount = c + 4 * R, *bdispl = c + 5 * R, *codes = c + 6 * R;
    int64_t *nreq = grp, *first = grp + R, *fill = grp + 2 * R;
    int64_t at = 0;
    if (local == 0) {
        /* nreq[r]: requests to owner r; first[r]: where they start in
         * order (a counting sort: the frontier's order within each
         * owner's group). */
        int64_t k0 = 0;
        for (int64_t i = 0; i < n; i++) nreq[gnn_dist_owner(d, gnn_dist_pid(d, v[i]))]++;
        for (int r = 0; r < R; r++) {
            first[r] = fill[r] = k0;
            k0 += nreq[r];
            scount[r] = nreq[r] ? (int)nreq[r] + REQ_HEAD : 0;
            sdispl[r] = (int)at;
            if (scount[r]) { /* each group is led by the header */
                req[at + REQ_KEY] = (int64_t)key;
                req[at + REQ_HOP] = h;
                req[at + REQ_FANOUT] = fanout;
                req[at + REQ_TYPED] = typed;
            }
            at += scount[r];
        }
        for (int64_t i = 0; i < n; i++) {
            int64_t p = gnn_dist_pid(d, v[i]);
            int q = gnn_dist_owner(d, p);
            int64_t k = fill[q]++;
            order[k] = i;
            req[sdispl[q] + REQ_HEAD + (k - first[q])] = p;
        }
    } else {
        for (int r = 0; r < R; r++) scount[r] = local;
    }
    int64_t nr = 0;
    GNN_TRY(gnn__dist_exchange_counts(d, comm, scount, rcount, rdispl, codes, &nr));
    asked = gnn_malloc_array((size_t)nr + 1, sizeof *asked);
    /* Failures from here to the answers' sizes are this rank's alone: the
     * others wait in the next call, so the job ends. */
    if (nr > INT_MAX)
        return fail_alone(GNN_FAIL(GNN_ERANGE, "remote draws: more than 2^31 requests"));
    if (!asked)
        return fail_alone(GNN_FAIL(GNN_ENOMEM, "remote draws: %" PRId64 " requests", nr));
    GNN_MPI_TRY(MPI_Alltoallv(req, scount, sdispl, MPI_INT64_T, asked, rcount, rdispl, MPI_INT64_T,
                              comm));
    local = answer_draws(d, h, fanout, asked, rcount, rdispl, &acnt, &ans);
    /* The answers' sizes (or this rank's failure), then the answers: per
     * request its count, then all the sources, in the order asked. */
    int *asize = local < 0 ? codes : acnt;
    if (local < 0)
        for (int r = 0; r < R; r++) codes[r] = local;
    int64_t nb = 0, sent = 0;
    GNN_TRY(gnn__dist_exchange_counts(d, comm, asize, bcount, bdispl, codes, &nb));
    for (int r = 0; r < R; r++)
        if (r != d->rank) sent += (int64_t)acnt[r] + scount[r];
    int *adispl = rdispl; /* the answers leave in the order the requests came */
    at = 0;
    for (int r = 0; r < R; r++) {
        adispl[r] = (int)at;
        at += acnt[r];
    }
    back = gnn_malloc_array((size_t)nb + 1, sizeof *back);
    if (nb > INT_MAX)
        return fail_alone(GNN_FAIL(GNN_ERANGE, "remote draws: more than 2^31 ids"));
    if (!back) return fail_alone(GNN_FAIL(GNN_ENOMEM, "remote draws: %" PRId64 " ids", nb));
    GNN_MPI_TRY(MPI_Alltoallv(ans, acnt, adispl, MPI_INT64_T, back, bcount, bdispl, MPI_INT64_T,
                              comm));
    d->sample_bytes += sent * (int64_t)sizeof(int64_t);
    /* Back into the frontier's order. */
    int64_t total = 0;
    local = 0;
    for (int r = 0; r < R && local == 0; r++) {
        const int64_t *bc = back + bdispl[r];
        int64_t got = nreq[r];
        for (int64_t k = 0; k < nreq[r] && got <= bcount[r]; k++) {
            int64_t i = order[first[r] + k];
            cnt[i] = bc[k];
            got += bc[k] < 0 ? bcount[r] + 1 : bc[k];
        }
        if (got != bcount[r])
            local = GNN_FAIL(GNN_EINVAL, "remote draws: rank %d answered %d ids for %" PRId64
                                         " rows",
                             r, bcount[r], nreq[r]);
    }
    for (int64_t i = 0; i < n && local == 0; i++) {
        off[i] = total;
        total += cnt[i];
    }
    if (local == 0) {
        out = gnn_malloc_array((size_t)total + 1, sizeof *out);
        if (typed) out_rel = gnn_malloc_array((size_t)total + 1, sizeof *out_rel);
        if (!out || (typed && !out_rel))
            local = GNN_FAIL(GNN_ENOMEM, "remote draws: %" PRId64 " sources", total);
    }
    if (local < 0) return fail_alone(local); /* this rank's alone */
    for (int r = 0; r < R; r++) {
        const int64_t *bs = back + bdispl[r] + nreq[r];
        for (int64_t k = 0; k < nreq[r]; k++) {
            int64_t i = order[first[r] + k];
            for (int64_t e = 0; e < cnt[i]; e++) {
                int64_t p = typed ? (int64_t)((uint64_t)bs[e] >> 8) : bs[e];
                out[off[i] + e] = gnn_dist_sampler_id(d, p);
                if (out_rel) out_rel[off[i] + e] = (int32_t)(bs[e] & 0xff);
            }
            bs += cnt[i];
        }
    }
    *src = out;
    out = NULL;
    if (rel) *rel = out_rel;
    out_rel = NULL;
fail:
    gnn_free(c);
    gnn_free(grp);
    gnn_free(acnt);
    gnn_free(ans);
    gnn_free(asked);
    gnn_free(back);
    gnn_free(order);
    gnn_free(off);
    gnn_free(req);
    gnn_free(out);
    gnn_free(out_rel);
    d->sample_s += MPI_Wtime() - t0;
    return rc;
}
