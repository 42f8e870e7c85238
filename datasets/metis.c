/*
 * The METIS graph-file reader (metis.h): one pass over the text, the
 * adjacency streamed into a builder in batches, every rule of the format
 * checked on the way.
 *
 * Symmetry is checked with a hash set of pending entries. When vertex v
 * lists u > v, the entry (u, v) ("u must list v", with the edge weight) is
 * inserted; when vertex v lists u < v, the entry (v, u) must be there and
 * is removed. Whatever remains at the end was listed by one side only.
 * Inserting an entry that is present means v listed u twice; a missing
 * entry for u < v is either a repeat or an asymmetry, told apart (on that
 * error path only) by looking back over the current line. The set uses
 * linear probing with backward-shift deletion, so it needs no tombstones
 * and its size is the number of edges crossing the current line.
 */
#include "datasets/metis.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/progress.h"

#include <stdio.h>
#include <string.h>

#define EDGE_BATCH 65536                  /* edges per gnn_builder_add */
#define PROGRESS_MIN_BYTES ((int64_t)16 << 20) /* smaller inputs report nothing */
#define PROGRESS_LINES 65535              /* report every 64K lines (mask) */
#define PENDING_MIN_BITS 10

/* ---- The pending set ------------------------------------------------------ */

typedef struct {
    int64_t a, b; /* a must list b; a = -1: empty slot */
    int64_t w;    /* edge weight given by b */
} pending_t;

typedef struct {
    pending_t *slot;
    int bits;
    int64_t n;
} pendset_t;

static inline uint64_t pend_hash(int64_t a, int64_t b, int bits)
{
    uint64_t x = (uint64_t)a * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)b;
    return (x * UINT64_C(0xC2B2AE3D27D4EB4F)) >> (64 - bits);
}

static int pend_init(pendset_t *s, int bits)
{
    size_t cap = (size_t)1 << bits;
    s->bits = bits;
    s->n = 0;
    s->slot = gnn_malloc_array(cap, sizeof *s->slot);
    if (!s->slot)
        return GNN_FAIL(GNN_ENOMEM, "out of memory for the symmetry check (%zu entries)", cap);
    for (size_t i = 0; i < cap; i++) s->slot[i].a = -1;
    return 0;
}

static void pend_free(pendset_t *s)
{
    gnn_free(s->slot);
    s->slot = NULL;
}

static int pend_grow(pendset_t *s)
{
    int rc = 0;
    pendset_t g;
    GNN_CHECK(s->bits < 60, GNN_ENOMEM, "symmetry check set too large");
    GNN_TRY(pend_init(&g, s->bits + 1));
    uint64_t cap = (uint64_t)1 << s->bits, gmask = ((uint64_t)1 << g.bits) - 1;
    for (uint64_t i = 0; i < cap; i++) {
        if (s->slot[i].a < 0) continue;
        uint64_t h = pend_hash(s->slot[i].a, s->slot[i].b, g.bits);
        while (g.slot[h].a >= 0) h = (h + 1) & gmask;
        g.slot[h] = s->slot[i];
    }
    g.n = s->n;
    pend_free(s);
    *s = g;
fail:
    return rc;
}

/* Insert (a, b, w); returns 1 when (a, b) was present already (unchanged). */
static int pend_insert(pendset_t *s, int64_t a, int64_t b, int64_t w)
{
    uint64_t mask = ((uint64_t)1 << s->bits) - 1;
    uint64_t h = pend_hash(a, b, s->bits);
    for (; s->slot[h].a >= 0; h = (h + 1) & mask)
        if (s->slot[h].a == a && s->slot[h].b == b) return 1;
    if ((uint64_t)(s->n + 1) * 10 > (mask + 1) * 7) {
        int rc = pend_grow(s);
        if (rc < 0) return rc;
        mask = ((uint64_t)1 << s->bits) - 1;
        h = pend_hash(a, b, s->bits);
        while (s->slot[h].a >= 0) h = (h + 1) & mask;
    }
    s->slot[h] = (pending_t){a, b, w};
    s->n++;
    return 0;
}

/* Remove (a, b), giving its weight; returns 0 when it was absent. */
static int pend_remove(pendset_t *s, int64_t a, int64_t b, int64_t *w)
{
    uint64_t mask = ((uint64_t)1 << s->bits) - 1;
    uint64_t i = pend_hash(a, b, s->bits);
    for (;; i = (i + 1) & mask) {
        if (s->slot[i].a < 0) return 0;
        if (s->slot[i].a == a && s->slot[i].b == b) break;
    }
    *w = s->slot[i].w;
    /* Backward shift: pull later entries of the probe run into the hole when
     * their home slot does not lie cyclically in (hole, j]. */
    for (uint64_t j = (i + 1) & mask; s->slot[j].a >= 0; j = (j + 1) & mask) {
        uint64_t k = pend_hash(s->slot[j].a, s->slot[j].b, s->bits);
        int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            s->slot[i] = s->slot[j];
            i = j;
        }
    }
    s->slot[i].a = -1;
    s->n--;
    return 1;
}

/* ---- Header --------------------------------------------------------------- */

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The token at p quoted for a message, cut at 40 bytes. */
static const char *token_text(const char *p, const char *end, char *buf, size_t len)
{
    while (p < end && is_blank(*p)) p++;
    size_t n = 0;
    while (p + n < end && !is_blank(p[n])) n++;
    if (n > 40)
        snprintf(buf, len, "%.40s...", p);
    else
        snprintf(buf, len, "%.*s", (int)n, p);
    return buf;
}

/* An integer token at *pp: 0, 1 at the end of the line (nothing parsed),
 * or GNN_EFORMAT / GNN_ERANGE (not recorded) for anything else. */
static inline int int_token(const char **pp, const char *end, int64_t *v)
{
    const char *p = *pp;
    while (p < end && is_blank(*p)) p++;
    if (p == end) {
        *pp = p;
        return 1;
    }
    int r = gnn_parse_i64(&p, end, v);
    if (r < 0) return r;
    if (p < end && !is_blank(*p)) return GNN_EFORMAT;
    *pp = p;
    return 0;
}

/* The fmt token: digits 0 and 1 only, at most three after leading zeros. */
static int parse_fmt(const char *p, const char *end, int *vs, int *vw, int *ew)
{
    while (p < end && is_blank(*p)) p++;
    const char *q = p;
    while (q < end && !is_blank(*q)) {
        if (*q != '0' && *q != '1') return -1;
        q++;
    }
    while (p < q && *p == '0') p++;
    if (q - p > 3) return -1;
    char d[3] = {'0', '0', '0'};
    memcpy(d + 3 - (q - p), p, (size_t)(q - p));
    *vs = d[0] == '1';
    *vw = d[1] == '1';
    *ew = d[2] == '1';
    return 0;
}

int gnn_metis_read_header(gnn_text_t *t, const gnn_metis_opts_t *o, gnn_metis_header_t *h)
{
    int rc = 0;
    char *line, tok[64];
    size_t len;
    memset(h, 0, sizeof *h);
    for (;;) {
        GNN_TRY(gnn_text_next_line(t, &line, &len));
        GNN_CHECK(rc > 0, GNN_EFORMAT, "%s: no METIS header 'n m [fmt [ncon]]' (the input is %s)",
                  gnn_text_name(t), gnn_text_line(t) ? "only comments" : "empty");
        const char *p = line, *end = line + len;
        if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3) && gnn_text_line(t) == 1) {
            p += 3; /* UTF-8 BOM */
            line += 3;
            len -= 3;
        }
        while (p < end && is_blank(*p)) p++;
        if (p < end && *p != '%') break;
    }
    const char *p = line, *end = line + len;
    static const char *const what[] = {"the vertex count n", "the edge count m", "fmt", "ncon"};
    int64_t v[4] = {0, 0, 0, 0}, x;
    int nv = 0;
    for (;;) {
        const char *start = p;
        int r = int_token(&p, end, &x);
        if (r == 1) break;
        GNN_CHECK(nv < 4, GNN_EFORMAT, "%s:%lld: header has more than 4 numbers (n m fmt ncon)",
                  gnn_text_name(t), (long long)gnn_text_line(t));
        if (nv == 2) { /* fmt: judged as a digit string, whatever int_token made of it */
            const char *q = start;
            while (q < end && is_blank(*q)) q++;
            while (q < end && !is_blank(*q)) q++;
            if (parse_fmt(start, q, &h->has_vertex_sizes, &h->has_vertex_weights,
                          &h->has_edge_weights) != 0) {
                rc = gnn_text_fail(t, "header: fmt '%s' is not valid (up to 3 digits 0 or 1: "
                                   "vertex sizes, vertex weights, edge weights)",
                                   token_text(start, end, tok, sizeof tok));
                goto fail;
            }
            p = q;
            r = 0;
            x = 0;
        }
        if (r < 0 || x < 0) {
            rc = gnn_text_fail(t, "header: '%s' is not valid as %s (a non-negative integer)",
                               token_text(start, end, tok, sizeof tok), what[nv]);
            goto fail;
        }
        v[nv++] = x;
    }
    if (nv < 2) {
        rc = gnn_text_fail(t, "header '%.60s' needs at least 2 numbers: n m [fmt [ncon]]", line);
        goto fail;
    }
    h->num_nodes = v[0];
    h->num_edges = v[1];
    if (nv == 4 && !h->has_vertex_weights) {
        rc = gnn_text_fail(t, "header gives ncon = %lld but fmt has no vertex weights (x1x)",
                           (long long)v[3]);
        goto fail;
    }
    if (nv == 4 && (v[3] < 1 || v[3] > 1000000)) {
        rc = gnn_text_fail(t, "header: ncon = %lld must be in 1..1000000", (long long)v[3]);
        goto fail;
    }
    if (h->has_vertex_weights) h->ncon = nv == 4 ? (int)v[3] : 1;
    if (h->num_edges > INT64_MAX / 2) {
        rc = gnn_text_fail(t, "header: m = %lld edges is too large", (long long)h->num_edges);
        goto fail;
    }
    if (o && o->max_nodes > 0 && h->num_nodes > o->max_nodes) {
        rc = gnn_text_fail(t, "header: n = %lld vertices, more than the limit %lld",
                           (long long)h->num_nodes, (long long)o->max_nodes);
        goto fail;
    }
    return 0;
fail:
    return rc;
}

/* ---- Adjacency ------------------------------------------------------------ */

typedef struct {
    gnn_text_t *t;
    const gnn_metis_header_t *h;
    gnn_builder_t *b;
    pendset_t pend;
    gnn_vid_t *src, *dst;
    float *w;
    int64_t nb;
    int64_t entries;
} reader_t;

static int flush_batch(reader_t *r)
{
    int rc = 0;
    if (r->nb) GNN_TRY(gnn_builder_add(r->b, r->src, r->dst, r->w, r->nb));
    r->nb = 0;
fail:
    return rc;
}

/* True when the neighbour list [p, end) (with weights when ew) names u
 * before the position stop. */
static int listed_before(const char *p, const char *stop, int ew, int64_t u)
{
    int64_t x;
    while (int_token(&p, stop, &x) == 0) {
        if (x == u) return 1;
        if (ew && int_token(&p, stop, &x) != 0) break;
    }
    return 0;
}

/* Parse the line of vertex v (0-based). */
static int read_vertex(reader_t *r, gnn_vid_t v, const char *line, size_t len)
{
    const gnn_metis_header_t *h = r->h;
    gnn_text_t *t = r->t;
    const char *p = line, *end = line + len, *start;
    const gnn_vid_t n = h->num_nodes;
    const long long vv = (long long)v + 1;
    char tok[64];
    int64_t x;
    int k;

    if (h->has_vertex_sizes) {
        start = p;
        k = int_token(&p, end, &x);
        if (k == 1) return gnn_text_fail(t, "vertex %lld: missing vertex size (fmt 1xx)", vv);
        if (k < 0 || x < 0)
            return gnn_text_fail(t, "vertex %lld: vertex size '%s' is not a non-negative integer",
                                 vv, token_text(start, end, tok, sizeof tok));
    }
    for (int c = 0; c < h->ncon; c++) {
        start = p;
        k = int_token(&p, end, &x);
        if (k == 1)
            return gnn_text_fail(t, "vertex %lld: missing vertex weight %d of %d (fmt x1x)", vv,
                                 c + 1, h->ncon);
        if (k < 0 || x < 0)
            return gnn_text_fail(t, "vertex %lld: vertex weight '%s' is not a non-negative integer",
                                 vv, token_text(start, end, tok, sizeof tok));
    }
    const char *adj = p;
    for (;;) {
        int64_t u, ew = 1;
        start = p;
        k = int_token(&p, end, &u);
        if (k == 1) break;
        if (k < 0)
            return gnn_text_fail(t, "vertex %lld: '%s' is not a vertex number", vv,
                                 token_text(start, end, tok, sizeof tok));
        if (u < 1 || u > n)
            return gnn_text_fail(t, "vertex %lld: neighbour %lld is outside 1..%lld", vv,
                                 (long long)u, (long long)n);
        if (u - 1 == v)
            return gnn_text_fail(t, "vertex %lld lists itself (METIS graphs have no self loops)",
                                 vv);
        if (h->has_edge_weights) {
            const char *ws = p;
            k = int_token(&p, end, &ew);
            if (k == 1)
                return gnn_text_fail(t, "vertex %lld: neighbour %lld has no edge weight (fmt xx1)",
                                     vv, (long long)u);
            if (k < 0 || ew <= 0)
                return gnn_text_fail(t,
                                     "vertex %lld: edge weight '%s' of neighbour %lld is not a "
                                     "positive integer",
                                     vv, token_text(ws, end, tok, sizeof tok), (long long)u);
        }
        u--; /* 0-based from here */
        if (u > v) {
            k = pend_insert(&r->pend, u, v, ew);
            if (k < 0) return k;
            if (k == 1)
                return gnn_text_fail(t, "vertex %lld lists %lld twice", vv, (long long)u + 1);
        } else {
            int64_t w_other;
            if (!pend_remove(&r->pend, v, u, &w_other)) {
                if (listed_before(adj, start, h->has_edge_weights, u + 1))
                    return gnn_text_fail(t, "vertex %lld lists %lld twice", vv, (long long)u + 1);
                return gnn_text_fail(t, "not symmetric: vertex %lld lists %lld but %lld does not "
                                     "list %lld",
                                     vv, (long long)u + 1, (long long)u + 1, vv);
            }
            if (w_other != ew)
                return gnn_text_fail(t, "not symmetric: edge %lld-%lld has weight %lld here but "
                                     "%lld at vertex %lld",
                                     vv, (long long)u + 1, (long long)ew, (long long)w_other,
                                     (long long)u + 1);
        }
        r->src[r->nb] = u;
        r->dst[r->nb] = v;
        if (r->w) r->w[r->nb] = (float)ew;
        r->entries++;
        if (++r->nb == EDGE_BATCH) {
            int rc = flush_batch(r);
            if (rc < 0) return rc;
        }
    }
    return 0;
}

int gnn_metis_read_adjacency(gnn_text_t *t, const gnn_metis_header_t *h, gnn_builder_t *b)
{
    int rc = 0;
    reader_t r = {.t = t, .h = h, .b = b};
    gnn_progress_t *prog = NULL;
    char *line;
    size_t len;
    gnn_vid_t v = 0;
    int64_t nlines = 0;

    GNN_TRY(pend_init(&r.pend, PENDING_MIN_BITS));
    r.src = gnn_malloc_array(EDGE_BATCH, sizeof *r.src);
    r.dst = gnn_malloc_array(EDGE_BATCH, sizeof *r.dst);
    if (h->has_edge_weights) r.w = gnn_malloc_array(EDGE_BATCH, sizeof *r.w);
    GNN_CHECK(r.src && r.dst && (r.w || !h->has_edge_weights), GNN_ENOMEM, "out of memory");
    if (gnn_text_file_size(t) >= PROGRESS_MIN_BYTES) {
        char label[256];
        snprintf(label, sizeof label, "%s (adjacency)", gnn_text_name(t));
        prog = gnn_progress_start(label, gnn_text_file_size(t), "B");
    }

    while ((rc = gnn_text_next_line(t, &line, &len)) > 0) {
        if ((++nlines & PROGRESS_LINES) == 0) gnn_progress_set(prog, gnn_text_file_pos(t));
        const char *p = line, *end = line + len;
        while (p < end && is_blank(*p)) p++;
        if (p < end && *p == '%') continue;
        if (v == h->num_nodes) {
            if (p == end) continue; /* blank lines after the last vertex */
            rc = gnn_text_fail(t, "more than %lld vertex lines (the header says n = %lld)",
                               (long long)h->num_nodes, (long long)h->num_nodes);
            goto fail;
        }
        GNN_TRY(read_vertex(&r, v, line, len));
        v++;
    }
    GNN_TRY(rc);
    GNN_TRY(flush_batch(&r));
    GNN_CHECK(v == h->num_nodes, GNN_EFORMAT, "%s: expected %lld vertex lines, found %lld",
              gnn_text_name(t), (long long)h->num_nodes, (long long)v);
    GNN_CHECK(r.entries == 2 * h->num_edges, GNN_EFORMAT,
              "%s: the header says m = %lld edges (%lld adjacency entries) but the vertex lines "
              "hold %lld entries",
              gnn_text_name(t), (long long)h->num_edges, (long long)(2 * h->num_edges),
              (long long)r.entries);
    if (r.pend.n > 0) {
        /* Report the first vertex (then neighbour) left unanswered. */
        const pending_t *best = NULL;
        uint64_t cap = (uint64_t)1 << r.pend.bits;
        for (uint64_t i = 0; i < cap; i++) {
            const pending_t *e = &r.pend.slot[i];
            if (e->a >= 0 && (!best || e->b < best->b || (e->b == best->b && e->a < best->a)))
                best = e;
        }
        rc = GNN_FAIL(GNN_EFORMAT, "%s: not symmetric: vertex %lld lists %lld but %lld does not "
                      "list %lld",
                      gnn_text_name(t), (long long)best->b + 1, (long long)best->a + 1,
                      (long long)best->a + 1, (long long)best->b + 1);
        goto fail;
    }
    gnn_progress_set(prog, gnn_text_file_pos(t));
fail:
    gnn_progress_end(prog, rc);
    pend_free(&r.pend);
    gnn_free(r.src);
    gnn_free(r.dst);
    gnn_free(r.w);
    return rc;
}

int gnn_metis_read_mem(const void *data, size_t size, const char *name, const gnn_metis_opts_t *o,
                       gnn_csr_t *out, gnn_metis_header_t *hout)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_builder_t *b = NULL;
    gnn_metis_header_t h;
    memset(out, 0, sizeof *out);

    GNN_TRY(gnn_text_open_mem(data, size, name, &t));
    GNN_TRY(gnn_metis_read_header(t, o, &h));
    gnn_builder_opts_t bo = {
        .num_nodes = -1, /* grows with the ids met (see cmd_metis.c) */
        .num_nodes_hint = h.num_nodes,
        .options = GNN_METIS_BUILD_OPTIONS,
        .has_weights = h.has_edge_weights,
    };
    GNN_TRY(gnn_builder_open(&bo, &b));
    GNN_TRY(gnn_metis_read_adjacency(t, &h, b));
    GNN_TRY(gnn_builder_to_csr(b, h.num_nodes, out));
    out->flags |= GNN_METIS_CSR_FLAGS;
    if (hout) *hout = h;
fail:
    gnn_builder_free(b);
    gnn_text_close(t);
    return rc;
}
