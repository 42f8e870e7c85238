/*
 * The CSR of a typed edge list (typed.h): a counting sort of the edges by
 * destination, then each row sorted by (source, relation) and its repeats
 * dropped, rows in parallel, then the kept entries packed.
 */
#include "datasets/typed.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <stdlib.h>
#include <string.h>

int gnn_typed_csr_build(gnn_vid_t n, int64_t m, gnn_vid_t **src, gnn_vid_t **dst, int32_t **rel,
                        int drop_loops, gnn_csr_t *out, int32_t **etype, int64_t *dropped)
{
    int rc = 0;
    gnn_eid_t *ip = NULL, *cnt = NULL;
    uint64_t *key = NULL;
    int32_t *et = NULL;
    gnn_vid_t *idx = NULL;
    memset(out, 0, sizeof *out);
    *etype = NULL;
    *dropped = 0;
    gnn_vid_t *s = *src, *d = *dst;
    int32_t *r = *rel;
    GNN_CHECK(n >= 0 && n < ((gnn_vid_t)1 << 55), GNN_EINVAL,
              "%lld nodes: too many for a typed graph", (long long)n);
    ip = gnn_calloc((size_t)n + 2, sizeof *ip);
    cnt = gnn_malloc_array((size_t)n + 1, sizeof *cnt);
    GNN_CHECK(ip && cnt, GNN_ENOMEM, "out of memory building a CSR of %lld nodes", (long long)n);
    for (int64_t i = 0; i < m; i++) {
        GNN_CHECK(s[i] >= 0 && s[i] < n && d[i] >= 0 && d[i] < n, GNN_EINVAL,
                  "edge %lld (%lld -> %lld) has an end outside [0, %lld)", (long long)i,
                  (long long)s[i], (long long)d[i], (long long)n);
        GNN_CHECK(r[i] >= 0 && r[i] < 256, GNN_EINVAL, "edge %lld has relation %d", (long long)i,
                  r[i]);
        ip[d[i] + 2]++;
    }
    for (gnn_vid_t v = 0; v < n; v++) ip[v + 2] += ip[v + 1];
    key = gnn_alloc_large(((size_t)m + 1) * sizeof *key);
    GNN_CHECK(key, GNN_ENOMEM, "out of memory sorting %lld edges", (long long)m);
    for (int64_t i = 0; i < m; i++) key[ip[d[i] + 1]++] = (uint64_t)s[i] << 8 | (uint64_t)r[i];
    gnn_free(*src);
    gnn_free(*dst);
    gnn_free(*rel);
    *src = *dst = NULL;
    *rel = NULL;
    /* ip[v] is row v's start now: sort each row, keep its first entries. */
    int64_t dup_src = 0, loops = 0;
#pragma omp parallel for schedule(dynamic, 4096) reduction(+ : dup_src, loops)
    for (gnn_vid_t v = 0; v < n; v++) {
        uint64_t *row = key + ip[v];
        gnn_eid_t len = ip[v + 1] - ip[v], k = 0;
        gnn_sort_u64(row, len);
        for (gnn_eid_t e = 0; e < len; e++) {
            if ((gnn_vid_t)(row[e] >> 8) == v) {
                if (drop_loops) continue;
                loops++;
            }
            if (k > 0 && row[k - 1] == row[e]) continue;
            if (k > 0 && row[k - 1] >> 8 == row[e] >> 8) dup_src++;
            row[k++] = row[e];
        }
        cnt[v] = k;
    }
    gnn_eid_t nnz = 0;
    for (gnn_vid_t v = 0; v < n; v++) nnz += cnt[v];
    idx = gnn_alloc_large(((size_t)nnz + 1) * sizeof *idx);
    et = gnn_malloc_array((size_t)nnz + 1, sizeof *et);
    GNN_CHECK(idx && et, GNN_ENOMEM, "out of memory for a CSR of %lld edges", (long long)nnz);
    gnn_eid_t at = 0;
    for (gnn_vid_t v = 0; v < n; v++) {
        const uint64_t *row = key + ip[v];
        ip[v] = at;
        for (gnn_eid_t e = 0; e < cnt[v]; e++) {
            idx[at + e] = (gnn_vid_t)(row[e] >> 8);
            et[at + e] = (int32_t)(row[e] & 0xff);
        }
        at += cnt[v];
    }
    ip[n] = at;
    *dropped = m - nnz;
    gnn_free(key);
    gnn_free(cnt);
    out->n_rows = out->n_cols = n;
    out->nnz = nnz;
    out->indptr = ip;
    out->indices = idx;
    out->flags = GNN_CSR_SORTED | (dup_src ? 0u : GNN_CSR_DEDUPED) |
                 (loops ? 0u : GNN_CSR_NO_SELF_LOOPS);
    *etype = et;
    return 0;
fail:
    /* The inputs are consumed whatever the outcome (typed.h), also when a
     * bad edge or a failed allocation stops the build before they were. */
    gnn_free(*src);
    gnn_free(*dst);
    gnn_free(*rel);
    *src = *dst = NULL;
    *rel = NULL;
    gnn_free(ip);
    gnn_free(cnt);
    gnn_free(key);
    gnn_free(et);
    gnn_free(idx);
    return rc;
}
