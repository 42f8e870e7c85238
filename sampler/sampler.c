/*
 * Uniform neighbour sampling into per-layer blocks (sampler.h).
 *
 * A batch is built hop by hop around one growing node list (the frontier):
 * it starts as the seeds, and hop h appends the sources its rows draw that
 * the list does not hold yet. Each hop takes three passes:
 *   1. row lengths min(deg, fanout), in parallel, and their prefix sum
 *      (a fanout up to twice the mean degree skips this pass: its rows are
 *      drawn into fanout slots each and packed after pass 2);
 *   2. the draws, in parallel: row i's positions come from the Philox
 *      stream of (key, v, h) by Floyd's algorithm and are turned into global
 *      source ids in place, one row behind the draws so that the random
 *      reads of the graph's rows (prefetched) overlap the arithmetic;
 *   3. local ids, sequentially in row order, so the numbering is the same
 *      for every thread count; then each row is sorted (in parallel; rows
 *      of up to 16 ids below 2^31 by a bitonic network in one AVX-512
 *      register where the CPU has it).
 * Local ids are found through the batch's id map, sized by the batch; a
 * batch whose seeds and fanouts can reach a quarter of the graph's nodes
 * or more uses an array over the graph instead (one int32 a node, up to
 * 2^28 nodes), whose reads hit the cache where the map's miss it. Either
 * way a batch costs O(sampled edges + what it reaches).
 */
#include "sampler/sampler.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"
#include "graph/idmap.h"
#include "graph/base/draw.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

struct gnn_sampler {
    const gnn_csr_t *graph;
    int layers;
    int fanout[GNN_SAMPLER_MAX_LAYERS]; /* by hop, 0 = from the seeds */
    const gnn_vid_t *key_ids;           /* NULL: draws keyed by node id */
    gnn_sampler_remote_t remote;        /* remote.draw NULL: every row held */
    const int32_t *etype;               /* typed draws: relation of each entry */
    int n_rels;                         /* ... of n_rels relations */
    int index;                          /* gnn__sampler_set_index */
    int counted;                        /* gnn__sampler_set_one_pass(s, 0) */
    int once;                           /* gnn_sampler_set_once */
};

/* The edges a batch excludes (sampler.h): per row with any, its excluded
 * sources, sorted (a row's list is src[start[k] .. start[k + 1]) for the
 * row that map sends to k). */
struct gnn_sampler_excl {
    gnn__idmap_t map;
    gnn_eid_t *start;
    gnn_vid_t *src;
    /* A bit per hash of the rows (EXCL_BITS per row, a power of two in
     * all): a clear bit answers "no exclusions" for most rows from an array
     * in the cache, without probing the map. */
    uint64_t *bits;
    uint64_t bmask;
};
#define EXCL_BITS 16
typedef gnn_sampler_excl_t excl_t;

/* What one hop reads: the rows, how draws are keyed, who draws the rest,
 * which edges it leaves out. */
typedef struct {
    const gnn_csr_t *g;
    const gnn_vid_t *key_ids;
    const gnn_sampler_remote_t *remote; /* NULL: every row held */
    const excl_t *ex;                   /* NULL: none */
    const int32_t *etype;               /* typed draws (rows grouped by relation) */
    int counted;                        /* never draw in one pass */
    int n_rels;                         /* typed: relations [0, n_rels) */
} rows_t;

/* Rows drawing at most this many positions find repeats by scanning the
 * draws so far; longer draws use a per-thread hash set. */
#define SCAN_DRAWS 64

/* Fanouts up to this many times the graph's mean degree are drawn in one
 * pass into fanout slots a row (sample_hop). */
#define ONE_PASS_DEGREES 2.0

/* Rows drawn per scheduling unit, and how many rows ahead the offsets of a
 * row are prefetched. */
#define DRAW_CHUNK 64
#define PREFETCH_AHEAD 8

/* How many entries ahead the merge prefetches the id map's slot. */
#define MAP_PREFETCH_AHEAD 16

/* ---- The random stream of (key, v, h): sampler/draw.h ------------------- */

typedef gnn_draw_stream_t stream_t;

static inline void stream_init(stream_t *s, uint64_t key, gnn_vid_t v, int h)
{
    gnn_draw_init(s, key, v, (uint32_t)h);
}

static inline uint64_t stream_below(stream_t *s, uint64_t m) { return gnn_draw_below(s, m); }

/* ---- k of d without replacement (Floyd) -------------------------------------- */

/* k distinct positions of [0, d) into pos, k <= SCAN_DRAWS. */
static void floyd_scan(stream_t *s, gnn_eid_t d, gnn_eid_t k, gnn_vid_t *pos)
{
    gnn_draw_floyd(s, d, k, pos);
}

/* A slot of the per-thread set of positions: live when stamp is the row's. */
typedef struct {
    gnn_vid_t key;
    uint64_t stamp;
} mark_t;

/* Insert t into the set of stamp; 0 when it was there already. */
static inline int mark_put(mark_t *set, uint64_t mask, uint64_t stamp, gnn_vid_t t)
{
    uint64_t i = gnn__idmap_hash(t) & mask;
    for (;;) {
        if (set[i].stamp != stamp) {
            set[i].key = t;
            set[i].stamp = stamp;
            return 1;
        }
        if (set[i].key == t) return 0;
        i = (i + 1) & mask;
    }
}

/* As floyd_scan for any k, with set a table of more than 2k slots whose
 * stamps all differ from stamp. */
static void floyd_set(stream_t *s, gnn_eid_t d, gnn_eid_t k, gnn_vid_t *pos, mark_t *set,
                      uint64_t mask, uint64_t stamp)
{
    gnn_eid_t n = 0;
    for (gnn_eid_t j = d - k; j < d; j++) {
        gnn_vid_t t = (gnn_vid_t)stream_below(s, (uint64_t)j + 1);
        if (!mark_put(set, mask, stamp, t)) {
            t = j;
            (void)mark_put(set, mask, stamp, t);
        }
        pos[n++] = t;
    }
}

/* ---- Rows ------------------------------------------------------------------- */

/* Replace the c positions o of row v by the sources they index. */
static inline void gather_row(const gnn_csr_t *g, gnn_vid_t v, gnn_vid_t *o, gnn_eid_t c)
{
    const gnn_vid_t *row = g->indices + g->indptr[v];
    for (gnn_eid_t q = 0; q < c; q++) o[q] = row[o[q]];
}


/* Rows up to this length, of ids in [0, INT32_MAX], are sorted in a vector
 * register where the CPU has AVX-512: an insertion sort of a row of random
 * ids mispredicts about one branch per entry, the network none. */
#define VECTOR_SORT_MAX 16

#if defined(__x86_64__)
#include <immintrin.h>

/* One step of the bitonic network on 16 lanes: each lane and the lane
 * perm brings to it keep the minimum, or the maximum where hi is set. */
#define SORT_STEP(v, perm, hi)                                                                     \
    do {                                                                                           \
        __m512i p_ = (perm);                                                                       \
        (v) = _mm512_mask_blend_epi32((__mmask16)(hi), _mm512_min_epi32((v), p_),                 \
                                      _mm512_max_epi32((v), p_));                                  \
    } while (0)

/* Sort the n <= 16 ids of a (each in [0, INT32_MAX]) ascending: as 32-bit
 * lanes, the missing ones INT32_MAX (they sort last and are not stored),
 * through the 10 steps of a bitonic network. Lane i's partner in a step
 * of distance j is i ^ j: in-lane shuffles for j = 1, 2, 128-bit swaps for
 * 4, 8; lane i keeps the maximum where (i & j) differs from (i & k) for
 * the step's run length k (ascending runs where i & k is 0). */
__attribute__((target("avx512f"))) static void sort_row16(gnn_vid_t *a, gnn_eid_t n)
{
    const __mmask16 m = (__mmask16)((1u << n) - 1u);
    const __m512i pad = _mm512_set1_epi64(INT32_MAX);
    __m512i lo = _mm512_mask_loadu_epi64(pad, (__mmask8)m, a);
    __m512i hi = _mm512_mask_loadu_epi64(pad, (__mmask8)(m >> 8), a + 8);
    __m512i v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(lo)),
                                   _mm512_cvtepi64_epi32(hi), 1);
#define SWAP1 _mm512_shuffle_epi32(v, _MM_PERM_CDAB)
#define SWAP2 _mm512_shuffle_epi32(v, _MM_PERM_BADC)
#define SWAP4 _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1))
#define SWAP8 _mm512_shuffle_i32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2))
    SORT_STEP(v, SWAP1, 0x6666); /* k 2 */
    SORT_STEP(v, SWAP2, 0x3c3c); /* k 4 */
    SORT_STEP(v, SWAP1, 0x5a5a);
    SORT_STEP(v, SWAP4, 0x0ff0); /* k 8 */
    SORT_STEP(v, SWAP2, 0x33cc);
    SORT_STEP(v, SWAP1, 0x55aa);
    SORT_STEP(v, SWAP8, 0xff00); /* k 16 */
    SORT_STEP(v, SWAP4, 0xf0f0);
    SORT_STEP(v, SWAP2, 0xcccc);
    SORT_STEP(v, SWAP1, 0xaaaa);
#undef SWAP1
#undef SWAP2
#undef SWAP4
#undef SWAP8
    _mm512_mask_storeu_epi64(a, (__mmask8)m, _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v)));
    _mm512_mask_storeu_epi64(a + 8, (__mmask8)(m >> 8),
                             _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1)));
}
#undef SORT_STEP

static int have_vector_sort(void)
{
    static int v = -1;
    if (v < 0) v = __builtin_cpu_supports("avx512f") ? 1 : 0; /* the same from any thread */
    return v;
}
#else
static void sort_row16(gnn_vid_t *a, gnn_eid_t n)
{
    gnn_draw_sort_ids(a, n);
}

static int have_vector_sort(void)
{
    return 0;
}
#endif

/* Whether rows of ids in [0, max_id] may take the vector network. */
static int vector_sort_ok(gnn_vid_t max_id)
{
    return have_vector_sort() && max_id <= INT32_MAX;
}

/* Sort the n ids of a; vec: vector_sort_ok of their range. */
static inline void sort_ids(gnn_vid_t *a, gnn_eid_t n, int vec)
{
    if (n < 2) return;
    if (vec && n <= VECTOR_SORT_MAX)
        sort_row16(a, n);
    else
        gnn_draw_sort_ids(a, n);
}

void gnn__sampler_sort_ids(gnn_vid_t *a, gnn_eid_t n, gnn_vid_t max_id)
{
    sort_ids(a, n, vector_sort_ok(max_id));
}

/* ---- Excluded edges ----------------------------------------------------------- */

void gnn_sampler_excl_free(gnn_sampler_excl_t *x)
{
    if (!x) return;
    gnn__idmap_free(&x->map);
    gnn_free(x->start);
    gnn_free(x->src);
    gnn_free(x->bits);
    gnn_free(x);
}

int gnn_sampler_excl_create(const gnn_vid_t *pairs, int64_t n, gnn_sampler_excl_t **out)
{
    int rc = 0;
    gnn_vid_t *rowk = NULL;
    excl_t *x = NULL;
    GNN_CHECK(out && (pairs || n == 0) && n >= 0, GNN_EINVAL, "excluded edges: bad arguments");
    *out = NULL;
    for (int64_t i = 0; i < 2 * n; i++)
        GNN_CHECK(pairs[i] >= 0, GNN_EINVAL, "excluded edge %" PRId64 " has end point %" GNN_PRIvid,
                  i / 2, pairs[i]);
    x = gnn_calloc(1, sizeof *x);
    GNN_CHECK(x, GNN_ENOMEM, "sampler: %" PRId64 " excluded edges", n);
    GNN_TRY(gnn__idmap_reserve(&x->map, 2 * n));
    rowk = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *rowk);
    x->start = gnn_calloc((size_t)(2 * n) + 2, sizeof *x->start);
    x->src = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *x->src);
    GNN_CHECK(rowk && x->start && x->src, GNN_ENOMEM, "sampler: %" PRId64 " excluded edges", n);
    gnn_vid_t rows = 0;
    for (int64_t e = 0; e < 2 * n; e++) { /* entry e: row pairs[e ^ 1], source pairs[e] */
        gnn_vid_t k = gnn__idmap_get_or_put(&x->map, pairs[e ^ 1], rows);
        rows += k == rows;
        rowk[e] = k;
        x->start[k + 2]++;
    }
    for (gnn_vid_t k = 0; k < rows; k++) x->start[k + 2] += x->start[k + 1];
    for (int64_t e = 0; e < 2 * n; e++) x->src[x->start[rowk[e] + 1]++] = pairs[e];
    for (gnn_vid_t k = 0; k < rows; k++)
        gnn_draw_sort_ids(x->src + x->start[k], x->start[k + 1] - x->start[k]);
    uint64_t nbits = 64;
    while (nbits < (uint64_t)rows * EXCL_BITS) nbits *= 2;
    x->bits = gnn_calloc((size_t)(nbits / 64), sizeof *x->bits);
    GNN_CHECK(x->bits, GNN_ENOMEM, "sampler: %" PRId64 " excluded edges", n);
    x->bmask = nbits - 1;
    for (int64_t e = 0; e < 2 * n; e++) {
        uint64_t b = gnn__idmap_hash(pairs[e]) & x->bmask;
        x->bits[b >> 6] |= 1ull << (b & 63);
    }
    gnn_free(rowk);
    *out = x;
    return 0;
fail:
    gnn_free(rowk);
    gnn_sampler_excl_free(x);
    return rc;
}

/* Is u among the sorted xs[0 .. nx)? */
static inline int excl_has(const gnn_vid_t *xs, gnn_eid_t nx, gnn_vid_t u)
{
    gnn_eid_t lo = 0, hi = nx;
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (xs[mid] < u)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < nx && xs[lo] == u;
}

/* Row v's excluded sources (*nx of them), or NULL when it has none. */
static inline const gnn_vid_t *excl_row(const excl_t *x, gnn_vid_t v, gnn_eid_t *nx)
{
    if (!x) return NULL;
    uint64_t b = gnn__idmap_hash(v) & x->bmask;
    if (!(x->bits[b >> 6] >> (b & 63) & 1)) return NULL;
    gnn_vid_t k = gnn__idmap_get(&x->map, v);
    if (k < 0) return NULL;
    *nx = x->start[k + 1] - x->start[k];
    return x->src + x->start[k];
}

/* The entries of row (d of them; compared as ids[entry] when ids is set)
 * not among xs, into out (when set); their number. */
static gnn_eid_t excl_filter(const gnn_vid_t *row, gnn_eid_t d, const gnn_vid_t *ids,
                             const gnn_vid_t *xs, gnn_eid_t nx, gnn_vid_t *out)
{
    gnn_eid_t c = 0;
    for (gnn_eid_t q = 0; q < d; q++)
        if (!excl_has(xs, nx, ids ? ids[row[q]] : row[q])) {
            if (out) out[c] = row[q];
            c++;
        }
    return c;
}

gnn_eid_t gnn_sampler_excl_filter(const gnn_sampler_excl_t *x, gnn_vid_t v, const gnn_vid_t *row,
                                  gnn_eid_t d, const gnn_vid_t *ids, gnn_vid_t *out)
{
    gnn_eid_t nx = 0;
    const gnn_vid_t *xs = excl_row(x, v, &nx);
    if (!xs) {
        if (out && d) memcpy(out, row, (size_t)d * sizeof *out);
        return d;
    }
    return excl_filter(row, d, ids, xs, nx, out);
}

int gnn_sampler_excl_has_row(const gnn_sampler_excl_t *x, gnn_vid_t v)
{
    gnn_eid_t nx = 0;
    return excl_row(x, v, &nx) != NULL;
}

/* ---- The batch's node list ---------------------------------------------------- */

/* A batch reaching at least a quarter of the graph's nodes (by the bound
 * of its seeds and fanouts) finds positions through an array over the
 * graph's nodes, at most this many, instead of the id map. */
#define DENSE_MAX_NODES ((gnn_vid_t)1 << 28)

/*
 * The batch's nodes and where each stands in the list: through the id map
 * (memory after the batch), or, when the batch spans much of the graph,
 * through pos, one int32 per graph node (-1: not in the list), whose reads
 * hit the cache where the map's miss it.
 */
typedef struct {
    gnn__idmap_t map;  /* global id -> position in nodes (pos NULL) */
    int32_t *pos;      /* n_pos entries, or NULL */
    gnn_vid_t n_pos;
    gnn_vid_t *nodes;  /* global ids in order of first appearance */
    gnn_vid_t n_nodes, cap;
} frontier_t;

static void frontier_free_index(frontier_t *f)
{
    gnn__idmap_free(&f->map);
    gnn_free(f->pos);
    f->pos = NULL;
}

static void frontier_free(frontier_t *f)
{
    frontier_free_index(f);
    gnn_free(f->nodes);
    memset(f, 0, sizeof *f);
}

/* Whether a batch that may reach `reach` nodes of the graph's n_graph
 * should index them by an array over the graph. */
static int want_dense(gnn_vid_t n_graph, double reach)
{
    return n_graph > 0 && n_graph <= DENSE_MAX_NODES && 4.0 * reach >= (double)n_graph;
}

/* Index by an array over the n_graph nodes (before any node is added). */
static int frontier_dense(frontier_t *f, gnn_vid_t n_graph)
{
    f->pos = gnn_malloc_array((size_t)n_graph + 1, sizeof *f->pos);
    if (!f->pos) return GNN_ENOMEM;
    memset(f->pos, 0xff, ((size_t)n_graph + 1) * sizeof *f->pos);
    f->n_pos = n_graph;
    return 0;
}

/* The position of u, or, when the list does not hold it, u appended. */
static inline gnn_vid_t frontier_get_or_put(frontier_t *f, gnn_vid_t u)
{
    gnn_vid_t l;
    if (f->pos) {
        l = f->pos[u];
        if (l >= 0) return l;
        l = f->n_nodes;
        f->pos[u] = (int32_t)l;
    } else {
        l = gnn__idmap_get_or_put(&f->map, u, f->n_nodes);
        if (l != f->n_nodes) return l;
    }
    f->nodes[f->n_nodes++] = u;
    return l;
}

/* Bring the index's slot of u into the cache. */
static inline void frontier_prefetch(const frontier_t *f, gnn_vid_t u)
{
    __builtin_prefetch(f->pos ? (const void *)&f->pos[u]
                              : (const void *)&f->map.slots[gnn__idmap_hash(u) & f->map.mask]);
}

/* Room for n nodes in all. */
static int frontier_reserve(frontier_t *f, gnn_vid_t n)
{
    int rc = f->pos ? 0 : gnn__idmap_reserve(&f->map, n);
    if (rc < 0) return rc;
    if (n > f->cap || !f->nodes) {
        gnn_vid_t cap = n > 0 ? n : 1;
        gnn_vid_t *p = gnn_realloc_array(f->nodes, (size_t)cap, sizeof *p);
        if (!p) return GNN_ENOMEM;
        f->nodes = p;
        f->cap = cap;
    }
    return 0;
}

/* Start the list with the n ids (what: "seed" or "destination" for the
 * messages): each in [0, n_graph) and none repeated. */
static int frontier_start(frontier_t *f, const gnn_vid_t *ids, int64_t n, gnn_vid_t n_graph,
                          const char *what)
{
    int rc = frontier_reserve(f, n);
    if (rc < 0) return rc;
    for (int64_t i = 0; i < n; i++) {
        gnn_vid_t v = ids[i];
        if (v < 0 || v >= n_graph)
            return GNN_FAIL(GNN_EINVAL,
                            "%s %" GNN_PRIvid " at position %" PRId64
                            " is outside the graph's nodes [0, %" GNN_PRIvid ")",
                            what, v, i, n_graph);
        f->n_nodes = i;
        gnn_vid_t at = frontier_get_or_put(f, v);
        if (at != i)
            return GNN_FAIL(GNN_EINVAL,
                            "%s %" GNN_PRIvid " is repeated (positions %" GNN_PRIvid " and %" PRId64
                            ")",
                            what, v, at, i);
    }
    f->n_nodes = n;
    return 0;
}

/* Per-thread position sets for draws of up to kmax positions (none when
 * kmax is 0: every draw scans): *mcap slots each, more than 2 kmax. */
static int marks_alloc(gnn_eid_t kmax, int nthreads, uint64_t *mcap, mark_t **marks)
{
    *mcap = 0;
    *marks = NULL;
    if (kmax <= 0) return 0;
    uint64_t cap = 16;
    while (cap <= 2 * (uint64_t)kmax) cap *= 2;
    *marks = gnn_calloc((size_t)nthreads * (size_t)cap, sizeof **marks);
    if (!*marks) return GNN_ENOMEM;
    *mcap = cap;
    return 0;
}

/* c < d distinct positions of [0, d) for row v, by the definition's
 * stream of (key, v, h), into o. */
static inline void draw_positions(const rows_t *rs, gnn_vid_t v, gnn_eid_t d, gnn_eid_t c,
                                  uint64_t key, int h, gnn_vid_t *o, mark_t *set, uint64_t mcap,
                                  uint64_t *stamp)
{
    stream_t s;
    stream_init(&s, key, rs->key_ids ? rs->key_ids[v] : v, h);
    if (c <= SCAN_DRAWS)
        floyd_scan(&s, d, c, o);
    else
        floyd_set(&s, d, c, o, set, mcap - 1, ++*stamp);
}

/* Ascending positions in row (d entries) of the entries among the sorted
 * xs (nx of them), into pos (room for d) unless pos is NULL; their number.
 * A sorted row is searched for each of xs, another scanned entry by entry:
 * the same positions. */
static gnn_eid_t excl_positions(const gnn_vid_t *row, gnn_eid_t d, int sorted,
                                const gnn_vid_t *xs, gnn_eid_t nx, gnn_eid_t *pos)
{
    gnn_eid_t n = 0;
    if (!sorted) {
        for (gnn_eid_t q = 0; q < d; q++)
            if (excl_has(xs, nx, row[q])) {
                if (pos) pos[n] = q;
                n++;
            }
        return n;
    }
    gnn_eid_t lo = 0;
    for (gnn_eid_t k = 0; k < nx && lo < d; k++) {
        gnn_eid_t a = lo, b = d;
        while (a < b) {
            gnn_eid_t mid = a + (b - a) / 2;
            if (row[mid] < xs[k])
                a = mid + 1;
            else
                b = mid;
        }
        for (; a < d && row[a] == xs[k]; a++) {
            if (pos) pos[n] = a;
            n++;
        }
        lo = a;
    }
    return n;
}

/* The draws of row v without the nx sources xs into o (global ids), at
 * most cap of them: the positions of the definition over the row without
 * its excluded entries, each turned into its place in the row past the
 * excluded positions before it (found into the thread's buffer *kbuf,
 * *kcap entries, grown as needed). Returns their number, or GNN_ENOMEM. */
static gnn_eid_t filtered_row(const rows_t *rs, gnn_vid_t v, const gnn_vid_t *xs, gnn_eid_t nx,
                              uint64_t key, int h, gnn_eid_t cap, gnn_vid_t *o, mark_t *set,
                              uint64_t mcap, uint64_t *stamp, gnn_eid_t **kbuf, gnn_eid_t *kcap)
{
    const gnn_csr_t *g = rs->g;
    const gnn_vid_t *row = g->indices + g->indptr[v];
    gnn_eid_t d = g->indptr[v + 1] - g->indptr[v];
    if (d > *kcap) {
        gnn_eid_t cap = d > 2 * *kcap ? d : 2 * *kcap;
        gnn_eid_t *p = gnn_realloc_array(*kbuf, (size_t)cap, sizeof *p);
        if (!p) return GNN_ENOMEM;
        *kbuf = p;
        *kcap = cap;
    }
    gnn_eid_t *ex = *kbuf;
    gnn_eid_t ne = excl_positions(row, d, (g->flags & GNN_CSR_SORTED) != 0, xs, nx, ex);
    gnn_eid_t dk = d - ne;
    gnn_eid_t c = dk <= cap ? dk : cap;
    if (c == dk) {
        gnn_eid_t k = 0, w = 0;
        for (gnn_eid_t q = 0; q < d; q++) {
            if (k < ne && ex[k] == q) {
                k++;
                continue;
            }
            o[w++] = row[q];
        }
    } else {
        draw_positions(rs, v, dk, c, key, h, o, set, mcap, stamp);
        for (gnn_eid_t q = 0; q < c; q++) {
            gnn_eid_t p = o[q];
            for (gnn_eid_t k = 0; k < ne && ex[k] <= p; k++) p++;
            o[q] = row[p];
        }
    }
    return c;
}

/* The c draws of row v (d entries, no exclusions) into o: the whole row
 * when c == d, else the positions of the definition, their entries
 * prefetched for gather_row. */
static inline void draw_row(const rows_t *rs, gnn_vid_t v, const gnn_vid_t *row, gnn_eid_t d,
                            gnn_eid_t c, uint64_t key, int h, gnn_vid_t *o, mark_t *set,
                            uint64_t mcap, uint64_t *stamp)
{
    if (c == d) {
        memcpy(o, row, (size_t)c * sizeof *o);
        return;
    }
    draw_positions(rs, v, d, c, key, h, o, set, mcap, stamp);
    for (gnn_eid_t q = 0; q < c; q++) __builtin_prefetch(&row[o[q]]);
}

/*
 * The rows of dst[0 .. n_dst) held elsewhere at hop h (rs->remote set):
 * before remote->first_hop every row must be held here (GNN_EINVAL naming
 * the first that is not); from it on the hook draws them, called once
 * with those rows in frontier order (rel: a typed sampler's relations),
 * and indptr[i + 1] takes row i's count; *src and *rel hold the draws,
 * row after row, for the caller to place and free. *called as
 * draw_counted's.
 */
static int ask_holders(const rows_t *rs, int fanout, uint64_t key, int h, const gnn_vid_t *dst,
                       gnn_vid_t n_dst, gnn_eid_t *indptr, gnn_vid_t **src, int32_t **rel,
                       int *called)
{
    int rc = 0;
    const gnn_vid_t held = rs->remote->n_held;
    gnn_vid_t *rv = NULL;
    gnn_eid_t *rcnt = NULL;
    int64_t nr = 0;
    if (h < rs->remote->first_hop) {
        for (gnn_vid_t i = 0; i < n_dst; i++)
            if (dst[i] >= held)
                return GNN_FAIL(GNN_EINVAL,
                                "sampler: hop %d reaches node %" GNN_PRIvid
                                ", whose row is not held here (remote draws start at hop %d)",
                                h, dst[i], rs->remote->first_hop);
        return 0;
    }
    for (gnn_vid_t i = 0; i < n_dst; i++) nr += dst[i] >= held;
    rv = gnn_malloc_array((size_t)nr + 1, sizeof *rv);
    rcnt = gnn_malloc_array((size_t)nr + 1, sizeof *rcnt);
    if (!rv || !rcnt) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    nr = 0;
    for (gnn_vid_t i = 0; i < n_dst; i++)
        if (dst[i] >= held) rv[nr++] = dst[i];
    *called = 1; /* a failure of the hook itself is every process's */
    rc = rs->remote->draw(rs->remote->ctx, h, fanout, key, rv, nr, rcnt, src, rel);
    if (rc < 0) goto fail;
    *called = 2; /* this hop's exchange is done */
    nr = 0;
    for (gnn_vid_t i = 0; i < n_dst; i++)
        if (dst[i] >= held) indptr[i + 1] = rcnt[nr++];
fail:
    gnn_free(rv);
    gnn_free(rcnt);
    return rc;
}

/* A hop's row counts (indptr[i + 1], the rows held here counted) made
 * offsets: refused where a row with excluded edges is held elsewhere
 * (xfail), the rows held elsewhere counted by their holders first
 * (ask_holders, their draws in *src and *rel), then the prefix sum. */
static int counts_to_offsets(const rows_t *rs, int xfail, int fanout, uint64_t key, int h,
                             const gnn_vid_t *dst, gnn_vid_t n_dst, gnn_eid_t *indptr,
                             gnn_vid_t **src, int32_t **rel, int *called)
{
    if (xfail)
        return GNN_FAIL(GNN_EUNSUPPORTED,
                        "sampler: hop %d reaches a node with excluded edges whose row is held "
                        "elsewhere",
                        h);
    if (rs->remote) { /* the rows held elsewhere, drawn by their holders */
        int rc = ask_holders(rs, fanout, key, h, dst, n_dst, indptr, src, rel, called);
        if (rc < 0) return rc;
    }
    for (gnn_vid_t i = 0; i < n_dst; i++) indptr[i + 1] += indptr[i];
    return 0;
}

/* The holders' answers (ask_holders: src, and rel for a typed sampler)
 * into the rows of dst held elsewhere, at indptr's offsets in indices (and
 * rel). A typed answer's relations must lie in [0, n_rels): GNN_EINVAL
 * naming the node otherwise. */
static int place_answers(const rows_t *rs, const gnn_vid_t *dst, gnn_vid_t n_dst,
                         const gnn_eid_t *indptr, const gnn_vid_t *src, const int32_t *ans_rel,
                         gnn_vid_t *indices, int32_t *rel)
{
    gnn_eid_t at = 0;
    for (gnn_vid_t i = 0; i < n_dst; i++) {
        if (dst[i] < rs->remote->n_held) continue;
        gnn_eid_t c = indptr[i + 1] - indptr[i];
        if (rel)
            for (gnn_eid_t k = 0; k < c; k++)
                if (!ans_rel || ans_rel[at + k] < 0 || ans_rel[at + k] >= rs->n_rels)
                    return GNN_FAIL(GNN_EINVAL,
                                    "sampler: the holder of node %" GNN_PRIvid
                                    " answered relation %d of %d",
                                    dst[i], ans_rel ? ans_rel[at + k] : -1, rs->n_rels);
        memcpy(indices + indptr[i], src + at, (size_t)c * sizeof *indices);
        if (rel) memcpy(rel + indptr[i], ans_rel + at, (size_t)c * sizeof *rel);
        at += c;
    }
    return 0;
}

/*
 * The draws of one hop (global ids), two passes: every row's count, their
 * prefix sum, then the draws into place; rows held elsewhere through the
 * remote hook. *indptr_out and *indices_out are the caller's on success.
 */
static int draw_counted(const rows_t *rs, int fanout, uint64_t key, int h, const gnn_vid_t *dst,
                        gnn_vid_t n_dst, gnn_eid_t **indptr_out, gnn_vid_t **indices_out,
                        gnn_eid_t *nnz_out, int *called)
{
    int rc = 0;
    const gnn_csr_t *g = rs->g;
    const gnn_vid_t held = rs->remote ? rs->remote->n_held : g->n_rows;
    gnn_eid_t *indptr = NULL;
    gnn_vid_t *indices = NULL, *rsrc = NULL;
    mark_t *marks = NULL;

    indptr = gnn_malloc_array((size_t)n_dst + 1, sizeof *indptr);
    if (!indptr) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    indptr[0] = 0;
    gnn_eid_t kmax = 0; /* longest draw that needs the hash set */
    int xfail = 0;
#pragma omp parallel for schedule(static) reduction(max : kmax) reduction(+ : xfail)
    for (gnn_vid_t i = 0; i < n_dst; i++) {
        gnn_vid_t v = dst[i];
        if (v >= held) {
            indptr[i + 1] = 0; /* set from the hook's answer below */
            /* held elsewhere: its holder leaves the edges out, or cannot */
            xfail += rs->ex && !rs->remote->excludes && excl_row(rs->ex, v, &(gnn_eid_t){0});
            continue;
        }
        gnn_eid_t d = g->indptr[v + 1] - g->indptr[v], nx = 0;
        const gnn_vid_t *xs = excl_row(rs->ex, v, &nx);
        if (xs)
            d -= excl_positions(g->indices + g->indptr[v], d, (g->flags & GNN_CSR_SORTED) != 0,
                                xs, nx, NULL);
        gnn_eid_t c = (fanout < 0 || d <= fanout) ? d : fanout;
        if (c < d && c > SCAN_DRAWS && c > kmax) kmax = c;
        indptr[i + 1] = c;
    }
    rc = counts_to_offsets(rs, xfail, fanout, key, h, dst, n_dst, indptr, &rsrc, NULL, called);
    if (rc < 0) goto fail;
    const gnn_eid_t nnz = indptr[n_dst];
    *nnz_out = nnz;

    indices = gnn_malloc_array((size_t)nnz, sizeof *indices);
    if (!indices) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    const int nthreads = omp_get_max_threads();
    uint64_t mcap = 0;
    rc = marks_alloc(kmax, nthreads, &mcap, &marks);
    if (rc < 0) goto fail;

    const gnn_vid_t n_chunks = (n_dst + DRAW_CHUNK - 1) / DRAW_CHUNK;
#pragma omp parallel num_threads(nthreads) reduction(+ : xfail)
    {
        mark_t *set = marks ? marks + (size_t)omp_get_thread_num() * (size_t)mcap : NULL;
        uint64_t stamp = 0;
        gnn_eid_t *kbuf = NULL; /* a row's excluded positions */
        gnn_eid_t kcap = 0;
#pragma omp for schedule(dynamic, 1)
        for (gnn_vid_t ch = 0; ch < n_chunks; ch++) {
            gnn_vid_t i0 = ch * DRAW_CHUNK;
            gnn_vid_t i1 = i0 + DRAW_CHUNK < n_dst ? i0 + DRAW_CHUNK : n_dst;
            /* Row i's positions are drawn and their entries prefetched;
             * they are read (gathered) after row i + 1 is drawn, so the
             * cache misses of a row overlap the next row's arithmetic. */
            gnn_vid_t pending = -1;
            for (gnn_vid_t i = i0; i < i1; i++) {
                if (i + PREFETCH_AHEAD < i1 && dst[i + PREFETCH_AHEAD] < held)
                    __builtin_prefetch(&g->indptr[dst[i + PREFETCH_AHEAD]]);
                gnn_vid_t v = dst[i];
                if (v >= held) continue; /* copied from the hook's answer below */
                const gnn_vid_t *row = g->indices + g->indptr[v];
                gnn_eid_t d = g->indptr[v + 1] - g->indptr[v], nx = 0;
                gnn_eid_t c = indptr[i + 1] - indptr[i];
                gnn_vid_t *o = indices + indptr[i];
                const gnn_vid_t *xs = excl_row(rs->ex, v, &nx);
                if (xs) { /* the draws are over the row without its excluded sources */
                    /* c (counted) is the filtered row's length or the fanout */
                    if (filtered_row(rs, v, xs, nx, key, h, c, o, set, mcap, &stamp, &kbuf,
                                     &kcap) < 0)
                        xfail++;
                    continue; /* pending stays: gather_row reads the row behind */
                }
                draw_row(rs, v, row, d, c, key, h, o, set, mcap, &stamp);
                if (pending >= 0) gather_row(g, dst[pending], indices + indptr[pending],
                                             indptr[pending + 1] - indptr[pending]);
                pending = c < d ? i : -1;
            }
            if (pending >= 0) gather_row(g, dst[pending], indices + indptr[pending],
                                         indptr[pending + 1] - indptr[pending]);
        }
        gnn_free(kbuf);
    }
    gnn_free(marks);
    marks = NULL;
    if (xfail) {
        rc = GNN_FAIL(GNN_ENOMEM, "sampler: rows with excluded edges");
        goto fail;
    }
    if (rs->remote) {
        place_answers(rs, dst, n_dst, indptr, rsrc, NULL, indices, NULL);
        gnn_free(rsrc);
        rsrc = NULL;
    }

    *indptr_out = indptr;
    *indices_out = indices;
    return 0;

fail:
    gnn_free(marks);
    gnn_free(indices);
    gnn_free(indptr);
    gnn_free(rsrc);
    return rc;
}

/*
 * The draws of one hop in one pass, for a bounded fanout with every row
 * held here: row i is drawn into slots [i fanout, (i + 1) fanout), the
 * slots a short row leaves filled with its node (any id of the graph would
 * do: the caller's look-ahead reads them), and indptr its packed offsets;
 * the caller packs the rows as it reads them (sample_hop). The same draws
 * as draw_counted's.
 */
static int draw_one_pass(const rows_t *rs, int fanout, uint64_t key, int h, const gnn_vid_t *dst,
                         gnn_vid_t n_dst, gnn_eid_t **indptr_out, gnn_vid_t **indices_out,
                         gnn_eid_t *nnz_out)
{
    int rc = 0;
    const gnn_csr_t *g = rs->g;
    gnn_eid_t *indptr = gnn_malloc_array((size_t)n_dst + 1, sizeof *indptr);
    gnn_vid_t *indices = gnn_malloc_array((size_t)n_dst * (size_t)fanout + 1, sizeof *indices);
    mark_t *marks = NULL;
    if (!indptr || !indices) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    const int nthreads = omp_get_max_threads();
    uint64_t mcap = 0;
    rc = marks_alloc(fanout > SCAN_DRAWS ? fanout : 0, nthreads, &mcap, &marks);
    if (rc < 0) goto fail;
    const gnn_vid_t n_chunks = (n_dst + DRAW_CHUNK - 1) / DRAW_CHUNK;
    int xfail = 0;
#pragma omp parallel num_threads(nthreads) reduction(+ : xfail)
    {
        mark_t *set = marks ? marks + (size_t)omp_get_thread_num() * (size_t)mcap : NULL;
        uint64_t stamp = 0;
        gnn_eid_t *kbuf = NULL; /* a row's excluded positions */
        gnn_eid_t kcap = 0;
#pragma omp for schedule(dynamic, 1)
        for (gnn_vid_t ch = 0; ch < n_chunks; ch++) {
            gnn_vid_t i0 = ch * DRAW_CHUNK;
            gnn_vid_t i1 = i0 + DRAW_CHUNK < n_dst ? i0 + DRAW_CHUNK : n_dst;
            /* As in draw_counted: a row's entries are gathered after the
             * next row is drawn. */
            gnn_vid_t pending = -1;
            gnn_eid_t pending_c = 0;
            for (gnn_vid_t i = i0; i < i1; i++) {
                if (i + PREFETCH_AHEAD < i1) __builtin_prefetch(&g->indptr[dst[i + PREFETCH_AHEAD]]);
                gnn_vid_t v = dst[i];
                const gnn_vid_t *row = g->indices + g->indptr[v];
                gnn_eid_t d = g->indptr[v + 1] - g->indptr[v], nx = 0;
                gnn_vid_t *o = indices + (size_t)i * (size_t)fanout;
                const gnn_vid_t *xs = excl_row(rs->ex, v, &nx);
                if (xs) { /* the draws are over the row without its excluded sources */
                    gnn_eid_t c = filtered_row(rs, v, xs, nx, key, h, fanout, o, set, mcap,
                                               &stamp, &kbuf, &kcap);
                    if (c < 0) {
                        xfail++;
                        c = 0;
                    }
                    indptr[i + 1] = c;
                    for (gnn_eid_t q = c; q < fanout; q++) o[q] = v;
                    continue; /* pending stays: gather_row reads the row behind */
                }
                gnn_eid_t c = d <= fanout ? d : fanout;
                indptr[i + 1] = c;
                for (gnn_eid_t q = c; q < fanout; q++) o[q] = v;
                draw_row(rs, v, row, d, c, key, h, o, set, mcap, &stamp);
                if (pending >= 0)
                    gather_row(g, dst[pending], indices + (size_t)pending * (size_t)fanout,
                               pending_c);
                pending = c < d ? i : -1;
                pending_c = c;
            }
            if (pending >= 0)
                gather_row(g, dst[pending], indices + (size_t)pending * (size_t)fanout, pending_c);
        }
        gnn_free(kbuf);
    }
    if (xfail) {
        rc = GNN_FAIL(GNN_ENOMEM, "sampler: rows with excluded edges");
        goto fail;
    }
    indptr[0] = 0;
    for (gnn_vid_t i = 0; i < n_dst; i++) indptr[i + 1] += indptr[i];
    gnn_free(marks);
    *indptr_out = indptr;
    *indices_out = indices;
    *nnz_out = indptr[n_dst];
    return 0;
fail:
    gnn_free(marks);
    gnn_free(indices);
    gnn_free(indptr);
    return rc;
}

/*
 * One hop: the block whose destinations are the current nodes of f, drawing
 * up to fanout in-neighbours of each (-1: all) from the stream of (key, v,
 * h); new sources are appended to f. On failure *out is zeroed and f may
 * have grown its capacity but holds the same nodes.
 */
static int sample_hop(const rows_t *rs, int fanout, uint64_t key, int h, frontier_t *f,
                      gnn_vid_t first, gnn_csr_t *out, int *called)
{
    int rc = 0;
    const gnn_csr_t *g = rs->g;
    const gnn_vid_t n_dst = f->n_nodes - first;
    const gnn_vid_t *dst = f->nodes + first;
    gnn_eid_t *indptr = NULL, nnz = 0;
    gnn_vid_t *indices = NULL;
    memset(out, 0, sizeof *out);
    /* One pass where the slots of full rows waste little: fanouts up to
     * ONE_PASS_DEGREES times the mean degree. Its rows come in slots of
     * `stride` entries, packed below as they are read. */
    double deg = g->n_rows ? (double)g->nnz / (double)g->n_rows : 0.0;
    gnn_eid_t stride = 0;
    if (!rs->remote && !rs->counted && fanout >= 0 &&
        (double)fanout <= ONE_PASS_DEGREES * deg + 1.0) {
        rc = draw_one_pass(rs, fanout, key, h, dst, n_dst, &indptr, &indices, &nnz);
        stride = fanout;
    } else {
        rc = draw_counted(rs, fanout, key, h, dst, n_dst, &indptr, &indices, &nnz, called);
    }
    if (rc < 0) goto fail;

    /* Local ids in row order: sequential, so independent of the threads. */
    gnn_vid_t need = f->n_nodes + nnz;
    if (!rs->remote && need > g->n_rows) need = g->n_rows;
    rc = frontier_reserve(f, need);
    if (rc < 0) goto fail;
    dst = NULL; /* the node list may have moved */
    if (stride) {
        /* Row i's slots from i stride on, packed down to indptr[i]: every
         * write lands at or before the slot just read. */
        const gnn_eid_t slots = (gnn_eid_t)n_dst * stride;
        for (gnn_vid_t i = 0; i < n_dst; i++) {
            const gnn_eid_t s0 = (gnn_eid_t)i * stride, c = indptr[i + 1] - indptr[i];
            gnn_vid_t *o = indices + indptr[i];
            for (gnn_eid_t q = 0; q < c; q++) {
                if (s0 + q + MAP_PREFETCH_AHEAD < slots)
                    frontier_prefetch(f, indices[s0 + q + MAP_PREFETCH_AHEAD]);
                o[q] = frontier_get_or_put(f, indices[s0 + q]);
            }
        }
    } else {
        for (gnn_eid_t e = 0; e < nnz; e++) {
            if (e + MAP_PREFETCH_AHEAD < nnz) frontier_prefetch(f, indices[e + MAP_PREFETCH_AHEAD]);
            indices[e] = frontier_get_or_put(f, indices[e]);
        }
    }
    const int vec = vector_sort_ok(f->n_nodes - 1);
#pragma omp parallel for schedule(dynamic, 256)
    for (gnn_vid_t i = 0; i < n_dst; i++)
        sort_ids(indices + indptr[i], indptr[i + 1] - indptr[i], vec);

    out->n_rows = n_dst;
    out->n_cols = f->n_nodes;
    out->nnz = nnz;
    out->indptr = indptr;
    out->indices = indices;
    out->weights = NULL;
    out->flags = GNN_CSR_SORTED | (g->flags & (GNN_CSR_DEDUPED | GNN_CSR_NO_SELF_LOOPS));
    return 0;

fail:
    gnn_free(indices);
    gnn_free(indptr);
    return rc;
}


/* The end of relation r's entries of a row starting at position a (rows
 * grouped by relation): the first position in [a, b) of another relation. */
static gnn_eid_t rel_end(const int32_t *et, gnn_eid_t a, gnn_eid_t b)
{
    int32_t r = et[a];
    gnn_eid_t lo = a + 1, hi = b;
    while (lo < hi) {
        gnn_eid_t mid = lo + (hi - lo) / 2;
        if (et[mid] == r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static gnn_eid_t typed_count(const int32_t *et, gnn_eid_t a, gnn_eid_t b, int fanout,
                             gnn_eid_t *kmax)
{
    gnn_eid_t c = 0;
    while (a < b) {
        gnn_eid_t e = rel_end(et, a, b), d = e - a;
        gnn_eid_t k = (fanout < 0 || d <= fanout) ? d : fanout;
        if (k < d && k > SCAN_DRAWS && k > *kmax) *kmax = k;
        c += k;
        a = e;
    }
    return c;
}

/* The typed draws of one row (gnn_sampler_draw_row_typed) into o and
 * their relations into ro, with the thread's hash set for long draws. */
static gnn_eid_t typed_row(const gnn_vid_t *row, const int32_t *et, gnn_eid_t n, int fanout,
                           uint64_t key, gnn_vid_t id, int h, gnn_vid_t *o, int32_t *ro,
                           mark_t *set, uint64_t mcap, uint64_t *stamp)
{
    gnn_eid_t a = 0, q = 0;
    while (a < n) {
        gnn_eid_t e = rel_end(et, a, n), d = e - a;
        gnn_eid_t c = (fanout < 0 || d <= fanout) ? d : fanout;
        int32_t r = et[a];
        if (c == d) {
            memcpy(o + q, row + a, (size_t)c * sizeof *o);
        } else {
            stream_t st;
            stream_init(&st, key, id, h | (r + 1) << 16);
            if (c <= SCAN_DRAWS)
                floyd_scan(&st, d, c, o + q);
            else
                floyd_set(&st, d, c, o + q, set, mcap - 1, ++*stamp);
            for (gnn_eid_t k = 0; k < c; k++) o[q + k] = row[a + o[q + k]];
        }
        for (gnn_eid_t k = 0; k < c; k++) ro[q + k] = r;
        q += c;
        a = e;
    }
    return q;
}

/* Row v's entries (and relations) without its nx excluded sources xs into
 * the thread's buffers *fb, *fr (*fcap entries, grown as needed); their
 * number, or GNN_ENOMEM. */
static gnn_eid_t typed_filter(const rows_t *rs, gnn_vid_t v, const gnn_vid_t *xs, gnn_eid_t nx,
                              gnn_vid_t **fb, int32_t **fr, gnn_eid_t *fcap)
{
    const gnn_csr_t *g = rs->g;
    gnn_eid_t a = g->indptr[v], d = g->indptr[v + 1] - a, n = 0;
    if (d > *fcap) {
        gnn_free(*fb);
        gnn_free(*fr);
        *fb = gnn_malloc_array((size_t)d, sizeof **fb);
        *fr = gnn_malloc_array((size_t)d, sizeof **fr);
        *fcap = *fb && *fr ? d : 0;
        if (!*fcap) return GNN_ENOMEM;
    }
    for (gnn_eid_t q = 0; q < d; q++)
        if (!excl_has(xs, nx, g->indices[a + q])) {
            (*fb)[n] = g->indices[a + q];
            (*fr)[n++] = rs->etype[a + q];
        }
    return n;
}

/* The typed draw count of row v less its excluded sources xs (*kmax as
 * typed_count's). */
static gnn_eid_t typed_count_excl(const rows_t *rs, gnn_vid_t v, const gnn_vid_t *xs,
                                  gnn_eid_t nx, int fanout, gnn_eid_t *kmax)
{
    const gnn_csr_t *g = rs->g;
    const int32_t *et = rs->etype;
    gnn_eid_t a = g->indptr[v], b = g->indptr[v + 1], c = 0;
    while (a < b) {
        gnn_eid_t e = rel_end(et, a, b), d = 0;
        for (gnn_eid_t q = a; q < e; q++) d += !excl_has(xs, nx, g->indices[q]);
        gnn_eid_t k = (fanout < 0 || d <= fanout) ? d : fanout;
        if (k < d && k > SCAN_DRAWS && k > *kmax) *kmax = k;
        c += k;
        a = e;
    }
    return c;
}

/*
 * One hop of typed draws (gnn_sampler_set_relations): as sample_hop,
 * drawing per relation, with the relation of every entry into
 * *etype_out; rows held elsewhere drawn by the remote hook with their
 * relations (*called as draw_counted's). Rows come out sorted by (local
 * source, relation).
 */
static int sample_hop_typed(const rows_t *rs, int fanout, uint64_t key, int h, frontier_t *f,
                            gnn_vid_t first, gnn_csr_t *out, int32_t **etype_out, int *called)
{
    int rc = 0;
    const gnn_csr_t *g = rs->g;
    const int32_t *et = rs->etype;
    const gnn_vid_t n_dst = f->n_nodes - first;
    const gnn_vid_t *dst = f->nodes + first;
    const gnn_vid_t held = rs->remote ? rs->remote->n_held : g->n_rows;
    gnn_eid_t *indptr = NULL;
    gnn_vid_t *indices = NULL, *rsrc = NULL;
    int32_t *rel = NULL, *rrel = NULL;
    uint64_t *keys = NULL;
    mark_t *marks = NULL;
    memset(out, 0, sizeof *out);
    *etype_out = NULL;
    indptr = gnn_malloc_array((size_t)n_dst + 1, sizeof *indptr);
    if (!indptr) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    indptr[0] = 0;
    gnn_eid_t kmax = 0;
    int xfail = 0;
#pragma omp parallel for schedule(dynamic, 256) reduction(max : kmax) reduction(+ : xfail)
    for (gnn_vid_t i = 0; i < n_dst; i++) {
        gnn_vid_t v = dst[i];
        gnn_eid_t k = 0, nx = 0;
        const gnn_vid_t *xs = excl_row(rs->ex, v, &nx);
        if (v >= held) { /* the hook's count, below; its holder leaves the edges out, or cannot */
            indptr[i + 1] = 0;
            xfail += xs && !rs->remote->excludes;
            continue;
        }
        indptr[i + 1] = xs ? typed_count_excl(rs, v, xs, nx, fanout, &k)
                           : typed_count(et, g->indptr[v], g->indptr[v + 1], fanout, &k);
        if (k > kmax) kmax = k;
    }
    rc = counts_to_offsets(rs, xfail, fanout, key, h, dst, n_dst, indptr, &rsrc, &rrel, called);
    if (rc < 0) goto fail;
    const gnn_eid_t nnz = indptr[n_dst];
    indices = gnn_malloc_array((size_t)nnz + 1, sizeof *indices);
    rel = gnn_malloc_array((size_t)nnz + 1, sizeof *rel);
    keys = gnn_malloc_array((size_t)nnz + 1, sizeof *keys);
    if (!indices || !rel || !keys) {
        rc = GNN_ENOMEM;
        goto fail;
    }
    const int nthreads = omp_get_max_threads();
    uint64_t mcap = 0;
    rc = marks_alloc(kmax, nthreads, &mcap, &marks);
    if (rc < 0) goto fail;
#pragma omp parallel num_threads(nthreads) reduction(+ : xfail)
    {
        mark_t *set = marks ? marks + (size_t)omp_get_thread_num() * (size_t)mcap : NULL;
        uint64_t stamp = 0;
        gnn_vid_t *fb = NULL; /* a row without its excluded sources */
        int32_t *fr = NULL;
        gnn_eid_t fcap = 0;
#pragma omp for schedule(dynamic, DRAW_CHUNK)
        for (gnn_vid_t i = 0; i < n_dst; i++) {
            gnn_vid_t v = dst[i];
            if (v >= held) continue; /* copied from the hook's answer below */
            gnn_vid_t id = rs->key_ids ? rs->key_ids[v] : v;
            gnn_eid_t a = g->indptr[v], nx = 0;
            const gnn_vid_t *xs = excl_row(rs->ex, v, &nx);
            if (xs) { /* the draws are over the row without its excluded sources */
                gnn_eid_t d = typed_filter(rs, v, xs, nx, &fb, &fr, &fcap);
                if (d < 0) {
                    xfail++;
                    continue;
                }
                typed_row(fb, fr, d, fanout, key, id, h, indices + indptr[i], rel + indptr[i],
                          set, mcap, &stamp);
                continue;
            }
            typed_row(g->indices + a, et + a, g->indptr[v + 1] - a, fanout, key, id, h,
                      indices + indptr[i], rel + indptr[i], set, mcap, &stamp);
        }
        gnn_free(fb);
        gnn_free(fr);
    }
    gnn_free(marks);
    marks = NULL;
    if (xfail) {
        rc = GNN_FAIL(GNN_ENOMEM, "sampler: typed rows with excluded edges");
        goto fail;
    }
    if (rs->remote) {
        rc = place_answers(rs, dst, n_dst, indptr, rsrc, rrel, indices, rel);
        if (rc < 0) goto fail;
        gnn_free(rsrc);
        gnn_free(rrel);
        rsrc = NULL;
        rrel = NULL;
    }
    /* Local ids in row order (sequential: independent of the threads). */
    gnn_vid_t need = f->n_nodes + nnz;
    if (!rs->remote && need > g->n_rows) need = g->n_rows;
    rc = frontier_reserve(f, need);
    if (rc < 0) goto fail;
    dst = NULL;
    for (gnn_eid_t e = 0; e < nnz; e++) {
        gnn_vid_t l = frontier_get_or_put(f, indices[e]);
        keys[e] = (uint64_t)l << 8 | (uint64_t)rel[e];
    }
#pragma omp parallel for schedule(dynamic, 256)
    for (gnn_vid_t i = 0; i < n_dst; i++) {
        uint64_t *k = keys + indptr[i];
        gnn_eid_t len = indptr[i + 1] - indptr[i];
        gnn_sort_u64(k, len);
        for (gnn_eid_t x = 0; x < len; x++) {
            indices[indptr[i] + x] = (gnn_vid_t)(k[x] >> 8);
            rel[indptr[i] + x] = (int32_t)(k[x] & 0xff);
        }
    }
    gnn_free(keys);
    out->n_rows = n_dst;
    out->n_cols = f->n_nodes;
    out->nnz = nnz;
    out->indptr = indptr;
    out->indices = indices;
    out->weights = NULL;
    out->flags = GNN_CSR_SORTED | (g->flags & GNN_CSR_NO_SELF_LOOPS);
    *etype_out = rel;
    return 0;
fail:
    gnn_free(marks);
    gnn_free(keys);
    gnn_free(rel);
    gnn_free(indices);
    gnn_free(indptr);
    gnn_free(rsrc);
    gnn_free(rrel);
    return rc;
}

/* GNN_EINVAL unless g is a square CSR with its arrays. */
static int check_graph(const gnn_csr_t *g)
{
    if (!g) return GNN_FAIL(GNN_EINVAL, "sampler: graph is NULL");
    if (g->n_rows < 0 || g->n_rows != g->n_cols || g->nnz < 0 || !g->indptr ||
        (g->nnz > 0 && !g->indices))
        return GNN_FAIL(GNN_EINVAL,
                        "sampler: the graph must be a square CSR (got %" GNN_PRIvid " x %" GNN_PRIvid
                        ", %" GNN_PRIeid " entries)",
                        g->n_rows, g->n_cols, g->nnz);
    return 0;
}

/* ---- Public API --------------------------------------------------------------- */

int gnn_sampler_create(const gnn_csr_t *graph, int layers, const int *fanouts,
                       gnn_sampler_t **out)
{
    int rc = 0;
    gnn_sampler_t *s = NULL;
    GNN_CHECK(out, GNN_EINVAL, "sampler: out is NULL");
    *out = NULL;
    GNN_TRY(check_graph(graph));
    GNN_CHECK(layers >= 1 && layers <= GNN_SAMPLER_MAX_LAYERS, GNN_EINVAL,
              "sampler: %d layers (must be 1..%d)", layers, GNN_SAMPLER_MAX_LAYERS);
    GNN_CHECK(fanouts, GNN_EINVAL, "sampler: fanouts is NULL");
    for (int h = 0; h < layers; h++)
        GNN_CHECK(fanouts[h] == -1 || fanouts[h] > 0, GNN_EINVAL,
                  "sampler: fanout %d of hop %d (fanouts[%d]) must be positive or -1 (all)",
                  fanouts[h], h, h);
    s = gnn_calloc(1, sizeof *s);
    if (!s) return GNN_ENOMEM;
    s->graph = graph;
    s->layers = layers;
    memcpy(s->fanout, fanouts, (size_t)layers * sizeof *fanouts);
    *out = s;
    return 0;
fail:
    return rc;
}

void gnn_sampler_free(gnn_sampler_t *s) { gnn_free(s); }

int gnn_sampler_set_relations(gnn_sampler_t *s, const int32_t *etype, int n_rels)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "sampler: sampler is NULL");
    if (etype) {
        const gnn_csr_t *g = s->graph;
        if (n_rels < 1 || n_rels > 256)
            return GNN_FAIL(GNN_EINVAL, "sampler: %d relations (1 to 256)", n_rels);
        for (gnn_vid_t v = 0; v < g->n_rows; v++)
            for (gnn_eid_t e = g->indptr[v]; e < g->indptr[v + 1]; e++) {
                if (etype[e] < 0 || etype[e] >= n_rels)
                    return GNN_FAIL(GNN_EINVAL, "sampler: entry %" GNN_PRIeid " has relation %d of %d",
                                    e, etype[e], n_rels);
                if (e > g->indptr[v] && etype[e] < etype[e - 1])
                    return GNN_FAIL(GNN_EINVAL,
                                    "sampler: row %" GNN_PRIvid " is not grouped by relation "
                                    "(typed draws need rows sorted by relation)",
                                    v);
            }
    }
    s->etype = etype;
    s->n_rels = etype ? n_rels : 0;
    return 0;
}

int gnn__sampler_set_index(gnn_sampler_t *s, int mode)
{
    if (!s || mode < 0 || mode > 2)
        return GNN_FAIL(GNN_EINVAL, "sampler: index mode %d (0, 1 or 2)", mode);
    s->index = mode;
    return 0;
}

int gnn__sampler_set_one_pass(gnn_sampler_t *s, int on)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "sampler: sampler is NULL");
    s->counted = !on;
    return 0;
}

int gnn_sampler_set_once(gnn_sampler_t *s, int on)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "sampler: sampler is NULL");
    s->once = on != 0;
    return 0;
}

int gnn_sampler_set_key_ids(gnn_sampler_t *s, const gnn_vid_t *ids)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "sampler: sampler is NULL");
    s->key_ids = ids;
    return 0;
}

int gnn_sampler_set_remote(gnn_sampler_t *s, const gnn_sampler_remote_t *r)
{
    if (!s) return GNN_FAIL(GNN_EINVAL, "sampler: sampler is NULL");
    if (!r) {
        memset(&s->remote, 0, sizeof s->remote);
        return 0;
    }
    if (!r->draw) return GNN_FAIL(GNN_EINVAL, "sampler: remote rows without a hook");
    if (r->n_held < 0 || r->n_held > s->graph->n_rows)
        return GNN_FAIL(GNN_EINVAL,
                        "sampler: %" GNN_PRIvid " rows held of a graph of %" GNN_PRIvid,
                        r->n_held, s->graph->n_rows);
    if (r->first_hop < 0)
        return GNN_FAIL(GNN_EINVAL, "sampler: remote draws from hop %d", r->first_hop);
    s->remote = *r;
    return 0;
}

uint64_t gnn_sampler_key(uint64_t seed, uint64_t epoch, uint64_t batch)
{
    return gnn_draw_key(seed, epoch, batch);
}

int64_t gnn_sampler_draw_row(const gnn_vid_t *row, gnn_eid_t d, int fanout, uint64_t key,
                             gnn_vid_t key_id, int h, gnn_vid_t *out)
{
    gnn_eid_t c = (fanout < 0 || d <= fanout) ? d : fanout;
    if (c == d) {
        if (c) memcpy(out, row, (size_t)c * sizeof *out);
        return c;
    }
    stream_t s;
    stream_init(&s, key, key_id, h);
    if (c <= SCAN_DRAWS) {
        floyd_scan(&s, d, c, out);
    } else {
        uint64_t mcap = 16;
        while (mcap <= 2 * (uint64_t)c) mcap *= 2;
        mark_t *set = gnn_calloc((size_t)mcap, sizeof *set);
        if (!set) return GNN_FAIL(GNN_ENOMEM, "sampler: draws of a row of %" GNN_PRIeid, d);
        floyd_set(&s, d, c, out, set, mcap - 1, 1);
        gnn_free(set);
    }
    for (gnn_eid_t q = 0; q < c; q++) out[q] = row[out[q]];
    return c;
}

int64_t gnn_sampler_typed_count(const int32_t *etype, gnn_eid_t d, int fanout)
{
    gnn_eid_t kmax = 0;
    return d > 0 ? typed_count(etype, 0, d, fanout, &kmax) : 0;
}

int64_t gnn_sampler_draw_row_typed(const gnn_vid_t *row, const int32_t *etype, gnn_eid_t d,
                                   int fanout, uint64_t key, gnn_vid_t key_id, int h,
                                   gnn_vid_t *out, int32_t *rel)
{
    gnn_eid_t kmax = 0;
    if (d > 0) (void)typed_count(etype, 0, d, fanout, &kmax);
    mark_t *set = NULL;
    uint64_t mcap = 16, stamp = 0;
    if (kmax > 0) { /* a relation draws more than SCAN_DRAWS of a longer run */
        while (mcap <= 2 * (uint64_t)kmax) mcap *= 2;
        set = gnn_calloc((size_t)mcap, sizeof *set);
        if (!set) return GNN_FAIL(GNN_ENOMEM, "sampler: draws of a row of %" GNN_PRIeid, d);
    }
    gnn_eid_t c = typed_row(row, etype, d, fanout, key, key_id, h, out, rel, set, mcap, &stamp);
    gnn_free(set);
    return c;
}

int gnn_sampler_layers(const gnn_sampler_t *s) { return s->layers; }

int gnn_sampler_fanout(const gnn_sampler_t *s, int h)
{
    return h >= 0 && h < s->layers ? s->fanout[h] : 0;
}

int gnn_sampler_sample(const gnn_sampler_t *s, const gnn_vid_t *seeds, int64_t n, uint64_t seed,
                       uint64_t epoch, uint64_t batch, gnn_minibatch_t *out)
{
    return gnn_sampler_sample_excluding(s, seeds, n, NULL, 0, seed, epoch, batch, out);
}

/* Sampling once (gnn_sampler_set_once): the block of a hop is the
 * previous hop's rows as they are (their sources already have their local
 * ids) followed by the rows drawn for the nodes new at that hop (drawn,
 * with etype when typed, over n_cols sources). */
static int prepend_rows(const gnn_block_t *prev, gnn_csr_t *drawn, int32_t **etype)
{
    const gnn_csr_t *p = &prev->csr;
    const gnn_vid_t rows = p->n_rows + drawn->n_rows;
    const gnn_eid_t nnz = p->nnz + drawn->nnz;
    gnn_eid_t *indptr = gnn_malloc_array((size_t)rows + 1, sizeof *indptr);
    gnn_vid_t *indices = gnn_malloc_array((size_t)nnz + 1, sizeof *indices);
    int32_t *et = *etype ? gnn_malloc_array((size_t)nnz + 1, sizeof *et) : NULL;
    if (!indptr || !indices || (*etype && !et)) {
        gnn_free(indptr), gnn_free(indices), gnn_free(et);
        return GNN_FAIL(GNN_ENOMEM, "sampler: a block of %" GNN_PRIeid " entries", nnz);
    }
    memcpy(indptr, p->indptr, ((size_t)p->n_rows + 1) * sizeof *indptr);
    for (gnn_vid_t i = 1; i <= drawn->n_rows; i++) indptr[p->n_rows + i] = p->nnz + drawn->indptr[i];
    memcpy(indices, p->indices, (size_t)p->nnz * sizeof *indices);
    memcpy(indices + p->nnz, drawn->indices, (size_t)drawn->nnz * sizeof *indices);
    if (et) {
        memcpy(et, prev->etype, (size_t)p->nnz * sizeof *et);
        memcpy(et + p->nnz, *etype, (size_t)drawn->nnz * sizeof *et);
        gnn_free(*etype);
        *etype = et;
    }
    gnn_free(drawn->indptr);
    gnn_free(drawn->indices);
    drawn->n_rows = rows;
    drawn->nnz = nnz;
    drawn->indptr = indptr;
    drawn->indices = indices;
    return 0;
}

int gnn_sampler_sample_excluding(const gnn_sampler_t *s, const gnn_vid_t *seeds, int64_t n,
                                 const gnn_vid_t *excl, int64_t n_excl, uint64_t seed,
                                 uint64_t epoch, uint64_t batch, gnn_minibatch_t *out)
{
    int rc = 0, h = 0, called = 0;
    frontier_t f;
    excl_t *ex = NULL;
    memset(&f, 0, sizeof f);
    if (!out) return GNN_FAIL(GNN_EINVAL, "sampler: out is NULL");
    memset(out, 0, sizeof *out);
    GNN_CHECK(s, GNN_EINVAL, "sampler: sampler is NULL");
    GNN_CHECK(n >= 0 && (seeds || n == 0), GNN_EINVAL, "sampler: bad seeds (%" PRId64 ")", n);
    GNN_CHECK(n_excl >= 0 && (excl || n_excl == 0), GNN_EINVAL,
              "sampler: bad excluded edges (%" PRId64 ")", n_excl);
    const gnn_csr_t *g = s->graph;
    /* With rows held elsewhere a seed may be any node its holder resolves. */
    if (!s->remote.draw) { /* the most nodes the hops can reach */
        double reach = (double)n, per = 1.0;
        double deg = g->n_rows ? (double)g->nnz / (double)g->n_rows : 0.0;
        for (int h = 0; h < s->layers; h++) {
            per *= s->fanout[h] < 0 ? deg : (double)s->fanout[h];
            reach += (double)n * per;
        }
        int dense = s->index == 2 ? want_dense(g->n_rows, (double)g->n_rows)
                    : s->index == 1 ? 0
                                    : want_dense(g->n_rows, reach);
        if (dense) GNN_TRY(frontier_dense(&f, g->n_rows));
    }
    GNN_TRY(frontier_start(&f, seeds, n, s->remote.draw ? INT64_MAX : g->n_rows, "seed"));
    for (int64_t i = 0; i < 2 * n_excl && !s->remote.draw; i++)
        GNN_CHECK(excl[i] >= 0 && excl[i] < g->n_cols, GNN_EINVAL,
                  "excluded edge %" PRId64 " has end point %" GNN_PRIvid
                  " outside the graph's nodes [0, %" GNN_PRIvid ")",
                  i / 2, excl[i], g->n_cols);
    if (n_excl) GNN_TRY(gnn_sampler_excl_create(excl, n_excl, &ex));

    const uint64_t key = gnn_sampler_key(seed, epoch, batch);
    const rows_t rs = {g, s->key_ids, s->remote.draw ? &s->remote : NULL, ex, s->etype,
                       s->counted, s->n_rels};
    const int L = s->layers;
    out->layers = L;
    out->n_seeds = n;
    for (h = 0; h < L; h++) {
        int l = L - 1 - h;
        called = 0;
        /* Once: only the nodes new at this hop draw; the others keep the
         * draws of the hop that reached them (the previous block's rows). */
        const gnn_vid_t first = s->once && h > 0 ? out->blocks[l + 1].csr.n_rows : 0;
        if (s->etype)
            GNN_TRY(sample_hop_typed(&rs, s->fanout[h], key, h, &f, first, &out->blocks[l].csr,
                                     &out->blocks[l].etype, &called));
        else
            GNN_TRY(sample_hop(&rs, s->fanout[h], key, h, &f, first, &out->blocks[l].csr,
                               &called));
        if (first > 0)
            GNN_TRY(prepend_rows(&out->blocks[l + 1], &out->blocks[l].csr, &out->blocks[l].etype));
        out->edges[l] = out->blocks[l].csr.nnz;
        out->edges_total += out->edges[l];
    }
    out->nodes = f.nodes;
    out->n_input = f.n_nodes;
    for (int l = 0; l < L; l++) out->blocks[l].src_ids = f.nodes;
    frontier_free_index(&f);
    gnn_sampler_excl_free(ex);
    return 0;

fail:
    /* A failure of this process (not the hook's): the hook hears of it at
     * the next exchange, this hop's or the next (n < 0), so processes
     * sampling in step stop at the same hop. */
    if (s && s->remote.draw && called != 1) {
        int hh = called == 2 ? h + 1 : h;
        hh = hh > s->remote.first_hop ? hh : s->remote.first_hop;
        if (hh < s->layers) {
            gnn_vid_t *none = NULL;
            int32_t *no_rel = NULL;
            (void)s->remote.draw(s->remote.ctx, hh, s->fanout[hh], 0, NULL, rc, NULL, &none,
                                 s->etype ? &no_rel : NULL);
            gnn_free(none);
            gnn_free(no_rel);
        }
    }
    for (int l = 0; l < GNN_SAMPLER_MAX_LAYERS; l++) {
        gnn_csr_free(&out->blocks[l].csr);
        gnn_free(out->blocks[l].etype);
    }
    memset(out, 0, sizeof *out);
    frontier_free(&f);
    gnn_sampler_excl_free(ex);
    return rc;
}

void gnn_minibatch_free(gnn_minibatch_t *mb)
{
    if (!mb) return;
    for (int l = 0; l < GNN_SAMPLER_MAX_LAYERS; l++) {
        gnn_csr_free(&mb->blocks[l].csr);
        gnn_free(mb->blocks[l].etype);
    }
    gnn_free(mb->nodes);
    memset(mb, 0, sizeof *mb);
}

int gnn_sampler_full_block(const gnn_csr_t *graph, const gnn_vid_t *dst, int64_t n,
                           gnn_block_t *out)
{
    return gnn_sampler_full_block_typed(graph, NULL, dst, n, out);
}

int gnn_sampler_full_block_typed(const gnn_csr_t *graph, const int32_t *etype, const gnn_vid_t *dst,
                                 int64_t n, gnn_block_t *out)
{
    int rc = 0;
    frontier_t f;
    memset(&f, 0, sizeof f);
    if (!out) return GNN_FAIL(GNN_EINVAL, "full block: out is NULL");
    memset(out, 0, sizeof *out);
    GNN_TRY(check_graph(graph));
    GNN_CHECK(n >= 0 && (dst || n == 0), GNN_EINVAL,
              "full block: bad destinations (%" PRId64 ")", n);
    double deg = graph->n_rows ? (double)graph->nnz / (double)graph->n_rows : 0.0;
    if (want_dense(graph->n_rows, (double)n * (1.0 + deg)))
        GNN_TRY(frontier_dense(&f, graph->n_rows));
    GNN_TRY(frontier_start(&f, dst, n, graph->n_rows, "destination"));
    const rows_t rs = {graph, NULL, NULL, NULL, etype, 0, 0};
    int called = 0;
    if (etype)
        GNN_TRY(sample_hop_typed(&rs, -1, 0, 0, &f, 0, &out->csr, &out->etype, &(int){0}));
    else
        GNN_TRY(sample_hop(&rs, -1, 0, 0, &f, 0, &out->csr, &called));
    out->src_ids = f.nodes;
    frontier_free_index(&f);
    return 0;

fail:
    frontier_free(&f);
    memset(out, 0, sizeof *out);
    return rc;
}

void gnn_block_free(gnn_block_t *b)
{
    if (!b) return;
    gnn_csr_free(&b->csr);
    gnn_free(b->src_ids);
    gnn_free(b->etype);
    memset(b, 0, sizeof *b);
}
