/*
 * The edge-list reader (edgelist.h): two passes over the text, the first
 * collecting the set of distinct ids, the second numbering them (when they
 * are renumbered) and streaming the edges into a builder.
 *
 * Lines are parsed in place with pointer arithmetic and the strict number
 * parsers of textio.h; nothing is copied per line.
 *
 * The id set has two forms and moves between them as the ids seen so far
 * demand. Non-negative ids below a bound go into a bitmap (one bit per
 * possible id, a bit test per id: the fast path, and all that dense ids
 * ever need). The bitmap may cover 2^26 ids, or more while it costs at most
 * 64 bits (8 bytes) per distinct id. A negative id or one beyond that moves
 * the set into a hash map: linear probing with Fibonacci hashing (multiply,
 * keep the top bits), 16-byte slots holding the id and its node number, at
 * most 70% full. The map moves back to a bitmap, when the ids allow it, each
 * time the count doubles. Node numbers are handed out in pass 2, in order of
 * first appearance, only when the ids are renumbered: pass 1 just marks ids
 * as seen, so either form can hold its set.
 */
#include "datasets/edgelist.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define EDGE_BATCH 65536                  /* edges per gnn_builder_add */
#define PROGRESS_MIN_BYTES ((int64_t)16 << 20) /* smaller inputs report nothing */
#define PROGRESS_LINES 65535              /* report every 64K lines (mask) */
#define MAP_MIN_BITS 10                   /* smallest hash map: 1024 slots */
#define BITMAP_MIN_BITS ((int64_t)1 << 16)/* smallest bitmap: 8 KiB */
#define BITMAP_FREE_BITS ((int64_t)1 << 26)/* a bitmap this size is always allowed */
#define BITMAP_BITS_PER_ID 64             /* beyond it, at most this many bits per id */
#define ID_LIMIT ((int64_t)1 << 62)       /* ids from here on never go to a bitmap */

/* ---- The id set ----------------------------------------------------------- */

enum { SLOT_EMPTY = 0, SLOT_SEEN = 1 }; /* node field; k + 2 is node k */

typedef struct {
    int64_t key;  /* id as written in the file */
    int64_t node; /* SLOT_EMPTY, SLOT_SEEN or node number + 2 */
} slot_t;

typedef struct {
    uint64_t *word;  /* bitmap of ids [0, nbits), or NULL */
    int64_t nbits;
    slot_t *slot;    /* hash map of 1 << bits slots, or NULL */
    int bits;
    int64_t n;       /* distinct ids */
    int64_t lo, hi;  /* smallest and largest id added */
} idset_t;

static inline uint64_t id_hash(int64_t key, int bits)
{
    return ((uint64_t)key * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits);
}

static void set_free(idset_t *s)
{
    gnn_free(s->word);
    gnn_free(s->slot);
    s->word = NULL;
    s->slot = NULL;
    s->nbits = 0;
}

static int64_t set_bytes(const idset_t *s)
{
    return (s->word ? s->nbits / 8 : 0) +
           (s->slot ? ((int64_t)1 << s->bits) * (int64_t)sizeof(slot_t) : 0);
}

/* Smallest bitmap size (a power of two) that holds id x >= 0. */
static int64_t bitmap_size_for(int64_t x)
{
    int64_t c = BITMAP_MIN_BITS;
    while (c <= x) c <<= 1;
    return c;
}

static int bitmap_allowed(const idset_t *s, int64_t nbits)
{
    return nbits <= BITMAP_FREE_BITS || nbits / BITMAP_BITS_PER_ID <= s->n + 1;
}

/* Place key in a map known not to hold it and to have room. */
static void hash_put(slot_t *slot, int bits, int64_t key, int64_t node)
{
    uint64_t mask = ((uint64_t)1 << bits) - 1, h = id_hash(key, bits);
    while (slot[h].node != SLOT_EMPTY) h = (h + 1) & mask;
    slot[h].key = key;
    slot[h].node = node;
}

/* Move the set into a new hash map of 1 << bits slots. */
static int to_hash(idset_t *s, int bits)
{
    slot_t *slot = gnn_calloc((size_t)1 << bits, sizeof *slot);
    if (!slot)
        return GNN_FAIL(GNN_ENOMEM, "out of memory for the id map (%lld ids)", (long long)s->n);
    if (s->slot) {
        uint64_t cap = (uint64_t)1 << s->bits;
        for (uint64_t i = 0; i < cap; i++)
            if (s->slot[i].node != SLOT_EMPTY)
                hash_put(slot, bits, s->slot[i].key, s->slot[i].node);
    }
    if (s->word) {
        for (int64_t w = 0; w < s->nbits / 64; w++)
            for (uint64_t x = s->word[w]; x; x &= x - 1)
                hash_put(slot, bits, w * 64 + __builtin_ctzll(x), SLOT_SEEN);
    }
    set_free(s);
    s->slot = slot;
    s->bits = bits;
    return 0;
}

/* Map bits for n ids at most half full. */
static int hash_bits_for(int64_t n)
{
    int bits = MAP_MIN_BITS;
    while (((int64_t)1 << bits) < 2 * n && bits < 62) bits++;
    return bits;
}

/* Move the set (in a hash map, ids in [0, nbits)) into a bitmap. */
static int to_bitmap(idset_t *s, int64_t nbits)
{
    uint64_t *word = gnn_calloc((size_t)(nbits / 64), sizeof *word);
    if (!word) return GNN_FAIL(GNN_ENOMEM, "out of memory for the id set (%lld ids)", (long long)nbits);
    uint64_t cap = (uint64_t)1 << s->bits;
    for (uint64_t i = 0; i < cap; i++)
        if (s->slot[i].node != SLOT_EMPTY)
            word[s->slot[i].key >> 6] |= UINT64_C(1) << (s->slot[i].key & 63);
    set_free(s);
    s->word = word;
    s->nbits = nbits;
    return 0;
}

static int set_add_slow(idset_t *s, int64_t x)
{
    int rc = 0;
    if (s->word || !s->slot) {
        /* A bitmap (or nothing yet) and x outside it: grow it if allowed. */
        int64_t need = x >= 0 && x < ID_LIMIT ? bitmap_size_for(x) : 0;
        if (need && bitmap_allowed(s, need)) {
            uint64_t *word = gnn_realloc_array(s->word, (size_t)(need / 64), sizeof *word);
            GNN_CHECK(word, GNN_ENOMEM, "out of memory for the id set (%lld ids)", (long long)need);
            memset(word + s->nbits / 64, 0, (size_t)(need - s->nbits) / 8);
            s->word = word;
            s->nbits = need;
            word[x >> 6] |= UINT64_C(1) << (x & 63);
            s->n++;
            return 0;
        }
        GNN_TRY(to_hash(s, hash_bits_for(s->n + 1)));
    }
    uint64_t mask = ((uint64_t)1 << s->bits) - 1;
    for (uint64_t h = id_hash(x, s->bits); s->slot[h].node != SLOT_EMPTY; h = (h + 1) & mask)
        if (s->slot[h].key == x) return 0;
    if ((uint64_t)(s->n + 1) * 10 > (mask + 1) * 7) {
        GNN_CHECK(s->bits < 62, GNN_ENOMEM, "id map too large");
        GNN_TRY(to_hash(s, s->bits + 1));
    }
    hash_put(s->slot, s->bits, x, SLOT_SEEN);
    s->n++;
    /* Back to a bitmap when the ids have become dense enough. */
    if ((s->n & (s->n - 1)) == 0 && s->lo >= 0 && s->hi < ID_LIMIT) {
        int64_t need = bitmap_size_for(s->hi);
        if (bitmap_allowed(s, need) && need / 8 < set_bytes(s)) GNN_TRY(to_bitmap(s, need));
    }
fail:
    return rc;
}

/* Add id x to the set. */
static inline int set_add(idset_t *s, int64_t x)
{
    if (x < s->lo) s->lo = x;
    if (x > s->hi) s->hi = x;
    if ((uint64_t)x < (uint64_t)s->nbits) {
        uint64_t *w = &s->word[x >> 6], b = UINT64_C(1) << (x & 63);
        s->n += !(*w & b);
        *w |= b;
        return 0;
    }
    return set_add_slow(s, x);
}

/* The slot of x in the hash form, NULL when absent. */
static inline slot_t *set_find(const idset_t *s, int64_t x)
{
    uint64_t mask = ((uint64_t)1 << s->bits) - 1;
    for (uint64_t h = id_hash(x, s->bits); s->slot[h].node != SLOT_EMPTY; h = (h + 1) & mask)
        if (s->slot[h].key == x) return &s->slot[h];
    return NULL;
}

/* ---- Lines ---------------------------------------------------------------- */

struct gnn_edgelist {
    gnn_edgelist_opts_t o;
    gnn_edgelist_info_t info;
    int ncol;              /* columns of every data line: 2 or 3 */
    int64_t first_line;    /* line of the first edge */
    idset_t ids;           /* pass 1; kept as a hash map for pass 2 when renumbering */
    gnn_vid_t *orig;       /* renumbered only: file id of each node, filled in pass 2 */
    gnn_vid_t next;        /* renumbered only: nodes numbered so far */
    int fed;
};

typedef struct {
    int64_t src, dst; /* as written in the file */
    float w;
} edge_t;

static inline int is_blank(char c) { return c == ' ' || c == '\t'; }

/* The token at p (up to a separator) quoted for a message, cut at 40 bytes. */
static const char *token_text(const char *p, const char *end, char *buf, size_t len)
{
    while (p < end && is_blank(*p)) p++;
    size_t n = 0;
    while (p + n < end && !is_blank(p[n]) && p[n] != ',') n++;
    if (n == 0) {
        snprintf(buf, len, "%s", p < end ? "," : "end of line");
        return buf;
    }
    if (n > 40)
        snprintf(buf, len, "%.40s...", p);
    else
        snprintf(buf, len, "%.*s", (int)n, p);
    return buf;
}

/*
 * After a column ending at *pp: 1 when another column follows (*pp at it),
 * 0 at the end of the line, -1 when the token goes on with other characters
 * (*pp unchanged), -2 for an empty column after a comma.
 */
static inline int next_column(const char **pp, const char *end)
{
    const char *p = *pp;
    if (p == end) return 0;
    if (!is_blank(*p) && *p != ',') return -1;
    while (p < end && is_blank(*p)) p++;
    if (p < end && *p == ',') {
        p++;
        while (p < end && is_blank(*p)) p++;
        if (p == end || *p == ',') return -2;
    }
    *pp = p;
    return p < end;
}

/* One id column at *pp. */
static int parse_id(const gnn_text_t *t, const char **pp, const char *end, int hint,
                    int64_t *id)
{
    char tok[64];
    const char *start = *pp;
    int r = gnn_parse_i64(pp, end, id);
    if (r == GNN_ERANGE)
        return gnn_text_fail(t, "node id '%s' is outside the 64-bit integer range",
                             token_text(start, end, tok, sizeof tok));
    if (r == 0 && (*pp == end || is_blank(**pp) || **pp == ',')) return 0;
    return gnn_text_fail(t, "'%s' is not an integer node id%s",
                         token_text(start, end, tok, sizeof tok),
                         hint ? " (lines are 'src dst [weight]'; a header line must start with '#')"
                              : "");
}

/*
 * Parse one line into e. Returns the number of columns (2 or 3), 0 for a
 * comment or blank line, or GNN_EFORMAT (recorded with FILE:LINE).
 */
static int parse_line(const gnn_text_t *t, const char *s, size_t len, int hint, edge_t *e)
{
    const char *p = s, *end = s + len;
    char tok[64];
    int rc = 0, r;
    if (len >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3) && gnn_text_line(t) == 1) p += 3; /* UTF-8 BOM */
    while (p < end && is_blank(*p)) p++;
    if (p == end || *p == '#' || *p == '%') return 0;

    GNN_TRY(parse_id(t, &p, end, hint, &e->src));
    r = next_column(&p, end);
    if (r == 0) return gnn_text_fail(t, "1 column; expected 2 (src dst) or 3 (src dst weight)");
    if (r == -2) return gnn_text_fail(t, "empty column after ','");
    GNN_TRY(parse_id(t, &p, end, hint, &e->dst));
    r = next_column(&p, end);
    if (r == -2) return gnn_text_fail(t, "empty column after ','");
    if (r == 0) return 2;

    const char *start = p;
    r = gnn_parse_f32(&p, end, &e->w);
    if (r == 0 && (p == end || is_blank(*p) || *p == ',')) {
        if (!isfinite(e->w))
            return gnn_text_fail(t, "edge weight '%s' is not a finite number",
                                 token_text(start, end, tok, sizeof tok));
    } else if (r == GNN_ERANGE) {
        return gnn_text_fail(t, "edge weight '%s' is outside the float32 range",
                             token_text(start, end, tok, sizeof tok));
    } else {
        return gnn_text_fail(t, "'%s' is not a number (the third column is the edge weight)",
                             token_text(start, end, tok, sizeof tok));
    }
    r = next_column(&p, end);
    if (r == -2) return gnn_text_fail(t, "empty column after ','");
    if (r != 0)
        return gnn_text_fail(t, "more than 3 columns; expected 2 (src dst) or 3 (src dst weight)");
    return 3;
fail:
    return rc;
}

/* Check a parsed line against the layout of the first one and the
 * one-based rule. */
static int check_edge(const gnn_edgelist_t *el, const gnn_text_t *t, int ncol, const edge_t *e)
{
    if (ncol != el->ncol)
        return gnn_text_fail(t, "%d columns, but the first edge (line %lld) has %d", ncol,
                             (long long)el->first_line, el->ncol);
    if (el->o.one_based && (e->src < 1 || e->dst < 1))
        return gnn_text_fail(t, "node id %lld with --one-based (ids must be >= 1)",
                             (long long)(e->src < 1 ? e->src : e->dst));
    return 0;
}

static gnn_progress_t *start_progress(const gnn_text_t *t, const char *what)
{
    int64_t size = gnn_text_file_size(t);
    if (size < PROGRESS_MIN_BYTES) return NULL;
    char label[256];
    snprintf(label, sizeof label, "%s (%s)", gnn_text_name(t), what);
    return gnn_progress_start(label, size, "B");
}

/* ---- Pass 1 --------------------------------------------------------------- */

int gnn_edgelist_scan(gnn_text_t *t, const gnn_edgelist_opts_t *o, gnn_edgelist_t **out)
{
    int rc = 0;
    gnn_edgelist_t *el = NULL;
    gnn_progress_t *prog = NULL;
    char *line;
    size_t len;
    int64_t nlines = 0;
    *out = NULL;

    el = gnn_calloc(1, sizeof *el);
    GNN_CHECK(el, GNN_ENOMEM, "out of memory");
    el->o = *o;
    el->ids.lo = INT64_MAX;
    el->ids.hi = INT64_MIN;
    gnn_edgelist_info_t *in = &el->info;
    prog = start_progress(t, "pass 1 of 2: ids");

    while ((rc = gnn_text_next_line(t, &line, &len)) > 0) {
        edge_t e;
        if ((++nlines & PROGRESS_LINES) == 0) gnn_progress_set(prog, gnn_text_file_pos(t));
        int ncol = parse_line(t, line, len, in->num_edges == 0, &e);
        if (ncol == 0) continue;
        GNN_TRY(ncol);
        if (in->num_edges == 0) {
            el->ncol = ncol;
            el->first_line = gnn_text_line(t);
        }
        GNN_TRY(check_edge(el, t, ncol, &e));
        GNN_TRY(set_add(&el->ids, e.src));
        GNN_TRY(set_add(&el->ids, e.dst));
        in->num_edges++;
    }
    GNN_TRY(rc);
    GNN_CHECK(in->num_edges > 0, GNN_EFORMAT, "%s: no edges (only comments and blank lines)",
              gnn_text_name(t));

    in->has_weights = el->ncol == 3;
    in->distinct = el->ids.n;
    in->min_id = el->ids.lo;
    in->max_id = el->ids.hi;
    int64_t shift = o->one_based ? 1 : 0;
    /* Dense: non-negative ids covering a range not much larger than their count
     * (max < 2 * distinct + 1024; no overflow: distinct < 2^62). */
    if (in->min_id - shift >= 0 && in->max_id - shift < 2 * in->distinct + 1024) {
        in->num_nodes = in->max_id - shift + 1;
        set_free(&el->ids);
    } else {
        in->remapped = 1;
        in->num_nodes = in->distinct;
        if (!el->ids.slot) GNN_TRY(to_hash(&el->ids, hash_bits_for(el->ids.n)));
        el->orig = gnn_malloc_array((size_t)in->num_nodes, sizeof *el->orig);
        GNN_CHECK(el->orig, GNN_ENOMEM, "out of memory for %lld original ids",
                  (long long)in->num_nodes);
    }
    in->map_bytes = set_bytes(&el->ids) + (el->orig ? in->num_nodes * (int64_t)sizeof *el->orig : 0);
    gnn_progress_set(prog, gnn_text_file_pos(t));
    gnn_progress_end(prog, rc);
    *out = el;
    return 0;
fail:
    gnn_progress_end(prog, rc);
    gnn_edgelist_free(el);
    return rc;
}

void gnn_edgelist_get_info(const gnn_edgelist_t *el, gnn_edgelist_info_t *info)
{
    *info = el->info;
}

const gnn_vid_t *gnn_edgelist_orig_ids(const gnn_edgelist_t *el)
{
    return el->fed && el->next == el->info.num_nodes ? el->orig : NULL;
}

void gnn_edgelist_free(gnn_edgelist_t *el)
{
    if (!el) return;
    set_free(&el->ids);
    gnn_free(el->orig);
    gnn_free(el);
}

/* ---- Pass 2 --------------------------------------------------------------- */

/* Node number of a file id: the id shifted, or when renumbering its number,
 * handed out now if this is its first appearance. -1 when pass 1 did not
 * see the id. */
static inline gnn_vid_t node_of(gnn_edgelist_t *el, int64_t id)
{
    if (!el->info.remapped) {
        int64_t v = id - (el->o.one_based ? 1 : 0);
        return v >= 0 && v < el->info.num_nodes ? v : -1;
    }
    slot_t *s = set_find(&el->ids, id);
    if (!s) return -1;
    if (s->node == SLOT_SEEN) {
        if (el->next == el->info.num_nodes) return -1;
        el->orig[el->next] = id;
        s->node = el->next++ + 2;
    }
    return s->node - 2;
}

int gnn_edgelist_feed(gnn_edgelist_t *el, gnn_text_t *t, gnn_builder_t *b)
{
    int rc = 0;
    gnn_vid_t *src = NULL, *dst = NULL;
    float *w = NULL;
    gnn_progress_t *prog = NULL;
    char *line;
    size_t len;
    int64_t nlines = 0, nb = 0;
    gnn_eid_t seen = 0;
    const int weighted = el->info.has_weights;

    GNN_CHECK(!el->fed, GNN_EINVAL, "gnn_edgelist_feed called twice");
    el->fed = 1;
    src = gnn_malloc_array(EDGE_BATCH, sizeof *src);
    dst = gnn_malloc_array(EDGE_BATCH, sizeof *dst);
    if (weighted) w = gnn_malloc_array(EDGE_BATCH, sizeof *w);
    GNN_CHECK(src && dst && (w || !weighted), GNN_ENOMEM, "out of memory");
    prog = start_progress(t, "pass 2 of 2: edges");

    while ((rc = gnn_text_next_line(t, &line, &len)) > 0) {
        edge_t e;
        if ((++nlines & PROGRESS_LINES) == 0) gnn_progress_set(prog, gnn_text_file_pos(t));
        int ncol = parse_line(t, line, len, 0, &e);
        if (ncol == 0) continue;
        GNN_TRY(ncol);
        GNN_TRY(check_edge(el, t, ncol, &e));
        gnn_vid_t u = node_of(el, e.src), v = node_of(el, e.dst);
        if (u < 0 || v < 0 || seen >= el->info.num_edges) {
            rc = gnn_text_fail(t, "the input changed between the two passes over it");
            goto fail;
        }
        src[nb] = u;
        dst[nb] = v;
        if (weighted) w[nb] = e.w;
        seen++;
        if (++nb == EDGE_BATCH) {
            GNN_TRY(gnn_builder_add(b, src, dst, w, nb));
            nb = 0;
        }
    }
    GNN_TRY(rc);
    if (nb) GNN_TRY(gnn_builder_add(b, src, dst, w, nb));
    GNN_CHECK(seen == el->info.num_edges && (!el->info.remapped || el->next == el->info.num_nodes),
              GNN_EFORMAT, "%s: the input changed between the two passes over it",
              gnn_text_name(t));
    gnn_progress_set(prog, gnn_text_file_pos(t));
fail:
    gnn_progress_end(prog, rc);
    set_free(&el->ids);
    gnn_free(src);
    gnn_free(dst);
    gnn_free(w);
    return rc;
}

/* ---- From memory ---------------------------------------------------------- */

int gnn_edgelist_read_mem(const void *data, size_t size, const char *name,
                          const gnn_edgelist_opts_t *o, unsigned build_options, gnn_csr_t *out,
                          gnn_vid_t **orig_ids)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    gnn_edgelist_t *el = NULL;
    gnn_builder_t *b = NULL;
    gnn_edgelist_info_t in;
    memset(out, 0, sizeof *out);
    if (orig_ids) *orig_ids = NULL;

    GNN_TRY(gnn_text_open_mem(data, size, name, &t));
    GNN_TRY(gnn_edgelist_scan(t, o, &el));
    gnn_text_close(t);
    t = NULL;
    gnn_edgelist_get_info(el, &in);
    gnn_builder_opts_t bo = {
        .num_nodes = in.num_nodes,
        .options = build_options,
        .has_weights = in.has_weights,
    };
    GNN_TRY(gnn_builder_open(&bo, &b));
    GNN_TRY(gnn_text_open_mem(data, size, name, &t));
    GNN_TRY(gnn_edgelist_feed(el, t, b));
    GNN_TRY(gnn_builder_to_csr(b, in.num_nodes, out));
    if (orig_ids && gnn_edgelist_orig_ids(el)) {
        *orig_ids = el->orig;
        el->orig = NULL;
    }
fail:
    gnn_builder_free(b);
    gnn_text_close(t);
    gnn_edgelist_free(el);
    return rc;
}
