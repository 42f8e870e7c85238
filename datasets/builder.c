/*
 * The edge-stream builder (builder.h): in-degree counting while edges
 * arrive, entries sorted into row buckets with bounded buffers spilled as
 * blocks to one unlinked file, and a finish that places each row range's
 * entries by counting sort from its own buckets only.
 *
 * Invariants: count[v + 1] holds the number of entries of row v added so far
 * (the reverse entry included under symmetrisation), so a prefix sum in
 * place turns count into indptr. An entry (row, col) lives in bucket
 * row >> shift (the last bucket also takes rows beyond the expected count).
 * A bucket's entries are, in stream order, its spilled blocks in the order
 * of the block index, then its buffer; placing in that order keeps each row
 * in stream order, which is what makes "keep the first" of dedupe mean the
 * first edge given.
 *
 * Buckets cover disjoint rows, so the finish places and sorts the buckets
 * of a range on all OpenMP threads at once, each with its own read buffer;
 * deduplication, a linear pass, follows on one thread.
 *
 * In threaded mode gnn_builder_add copies each batch into one of two queue
 * slots and a worker thread adds it, so the caller parses the next batch
 * meanwhile. The worker's first failure (code and message) is kept and
 * returned by the next call on the caller's side.
 */
#include "datasets/builder.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <errno.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DEFAULT_BUFFER ((int64_t)64 << 20)
#define MIN_BUFFER ((int64_t)1 << 20) /* a budget's buffers get at least 1/16 of this */
#define MAX_BUCKETS 256
#define ONE_BUCKET_NODES ((gnn_vid_t)1 << 16) /* below this the CSR fits in cache anyway */
#define FIRST_CAP 4096                         /* entries of a new buffer */
#define QUEUE_BATCH 65536                      /* edges a queue slot holds */

typedef struct {
    gnn_vid_t *src, *dst;
    float *w;
    int64_t n;
} batch_t;

/* A bucket's entries: rows and columns as int64, or, in compact form, the
 * row as a 16- or 32-bit offset from the bucket's first row and the column
 * as int32 (6 or 8 bytes an entry instead of 16). */
typedef struct {
    void *row, *col;
    float *w;
    int64_t len, cap;
} bucket_t;

typedef struct {
    int bucket;
    int64_t offset, n; /* n entries at offset: rows, then cols, then weights */
} block_t;

struct gnn_builder {
    gnn_builder_opts_t o;
    gnn_vid_t max_id;     /* largest id added, -1 before any */
    gnn_eid_t *count;     /* count[v + 1] = entries of row v; cap_count entries */
    gnn_vid_t cap_count;
    int nb, shift;        /* buckets; bucket of row r = min(r >> shift, nb - 1) */
    int compact;          /* entries in compact form (node count known, below 2^31) */
    int rsize, csize;     /* bytes of a stored row and column */
    bucket_t *bk;
    int64_t bucket_cap;   /* entries a bucket buffer holds before it spills */
    int spill_fd;
    int64_t spill_end;
    block_t *blocks;
    int64_t nblocks, cap_blocks;
    gnn_eid_t added, offered, entries;
    int64_t cur_bytes;
    gnn_builder_stats_t stats;
    int finished;
    /* Threaded mode: two queue slots, the worker and its first failure. */
    pthread_t th;
    int th_live, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch_t q[2];
    int qhead, qcount;
    int err;
    char errmsg[512];
};

static int add_now(gnn_builder_t *b, const gnn_vid_t *src, const gnn_vid_t *dst, const float *w,
                   int64_t n);

static void account(gnn_builder_t *b, int64_t delta)
{
    b->cur_bytes += delta;
    if (b->cur_bytes > b->stats.peak_bytes) b->stats.peak_bytes = b->cur_bytes;
}

static int64_t spill_entry_bytes(const gnn_builder_t *b)
{
    return b->rsize + b->csize + (b->o.has_weights ? 4 : 0);
}
static int64_t csr_entry_bytes(const gnn_builder_t *b) { return 8 + (b->o.has_weights ? 4 : 0); }

static int bucket_of(const gnn_builder_t *b, gnn_vid_t row)
{
    gnn_vid_t k = row >> b->shift;
    return k < b->nb ? (int)k : b->nb - 1;
}

/* Make count hold at least n + 1 entries, new ones zero: exactly n + 1 when
 * the node count is known, else doubling, but never past the expected
 * count + 1 when n lies within it. n must be below GNN_GRAPH_MAX_COUNT. */
static int grow_counts(gnn_builder_t *b, gnn_vid_t n)
{
    int rc = 0;
    GNN_CHECK(n >= 0 && n < GNN_GRAPH_MAX_COUNT, GNN_ERANGE,
              "building the graph: %lld nodes are beyond the limit 2^62", (long long)n);
    if (n + 1 <= b->cap_count) return 0;
    gnn_vid_t cap;
    if (b->o.num_nodes >= 0) {
        cap = n + 1;
    } else {
        cap = b->cap_count ? b->cap_count : 1024;
        while (cap < n + 1) cap = cap < ((gnn_vid_t)1 << 40) ? cap * 2 : n + 1;
        gnn_vid_t hint = b->o.num_nodes_hint;
        if (hint >= n && cap > hint + 1) cap = hint + 1;
    }
    gnn_eid_t *c = gnn_realloc_array(b->count, (size_t)cap, sizeof *c);
    GNN_CHECK(c, GNN_ENOMEM, "building the graph: out of memory for %lld node counts",
              (long long)cap);
    memset(c + b->cap_count, 0, sizeof *c * (size_t)(cap - b->cap_count));
    account(b, 8 * (int64_t)(cap - b->cap_count));
    b->count = c;
    b->cap_count = cap;
fail:
    return rc;
}

/* ---- The worker (threaded mode) ------------------------------------------ */

static void *worker(void *arg)
{
    gnn_builder_t *b = arg;
    for (;;) {
        pthread_mutex_lock(&b->mu);
        while (b->qcount == 0 && !b->stop) pthread_cond_wait(&b->cv, &b->mu);
        if (b->qcount == 0) { /* stop, and nothing left */
            pthread_mutex_unlock(&b->mu);
            break;
        }
        batch_t *q = &b->q[b->qhead];
        int failed = b->err;
        pthread_mutex_unlock(&b->mu);
        int rc = failed ? 0 : add_now(b, q->src, q->dst, q->w, q->n);
        pthread_mutex_lock(&b->mu);
        if (rc < 0 && !b->err) {
            b->err = rc;
            snprintf(b->errmsg, sizeof b->errmsg, "%s", gnn_error_message());
        }
        b->qhead = (b->qhead + 1) % 2;
        b->qcount--;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
    }
    return NULL;
}

static int start_worker(gnn_builder_t *b)
{
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        b->q[i].src = gnn_malloc_array(QUEUE_BATCH, sizeof *b->q[i].src);
        b->q[i].dst = gnn_malloc_array(QUEUE_BATCH, sizeof *b->q[i].dst);
        GNN_CHECK(b->q[i].src && b->q[i].dst, GNN_ENOMEM, "out of memory for the edge queue");
        if (b->o.has_weights) {
            b->q[i].w = gnn_malloc_array(QUEUE_BATCH, sizeof *b->q[i].w);
            GNN_CHECK(b->q[i].w, GNN_ENOMEM, "out of memory for the edge queue");
        }
    }
    GNN_CHECK(pthread_mutex_init(&b->mu, NULL) == 0, GNN_ENOMEM, "cannot create a mutex");
    if (pthread_cond_init(&b->cv, NULL) != 0) {
        pthread_mutex_destroy(&b->mu);
        rc = GNN_FAIL(GNN_ENOMEM, "cannot create a condition variable");
        goto fail;
    }
    if (pthread_create(&b->th, NULL, worker, b) != 0) {
        pthread_cond_destroy(&b->cv);
        pthread_mutex_destroy(&b->mu);
        rc = GNN_FAIL(GNN_ENOMEM, "cannot start the builder thread");
        goto fail;
    }
    b->th_live = 1;
fail:
    return rc;
}

/* Let the worker finish what is queued, then end it. */
static void stop_worker(gnn_builder_t *b)
{
    if (!b->th_live) return;
    pthread_mutex_lock(&b->mu);
    b->stop = 1;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
    pthread_join(b->th, NULL);
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
    b->th_live = 0;
}

int gnn_builder_flush(gnn_builder_t *b)
{
    if (!b->th_live) return b->err ? GNN_FAIL(b->err, "%s", b->errmsg) : 0;
    pthread_mutex_lock(&b->mu);
    while (b->qcount > 0) pthread_cond_wait(&b->cv, &b->mu);
    int err = b->err;
    pthread_mutex_unlock(&b->mu);
    return err ? GNN_FAIL(err, "%s", b->errmsg) : 0;
}

/* Queue n edges for the worker, in slot-sized pieces. */
static int add_queued(gnn_builder_t *b, const gnn_vid_t *src, const gnn_vid_t *dst,
                      const float *w, int64_t n)
{
    for (int64_t done = 0; done < n;) {
        int64_t k = n - done < QUEUE_BATCH ? n - done : QUEUE_BATCH;
        pthread_mutex_lock(&b->mu);
        while (b->qcount == 2 && !b->err) pthread_cond_wait(&b->cv, &b->mu);
        int err = b->err;
        int slot = (b->qhead + b->qcount) % 2;
        pthread_mutex_unlock(&b->mu);
        if (err) return GNN_FAIL(err, "%s", b->errmsg);
        batch_t *q = &b->q[slot];
        memcpy(q->src, src + done, sizeof *src * (size_t)k);
        memcpy(q->dst, dst + done, sizeof *dst * (size_t)k);
        if (w) memcpy(q->w, w + done, sizeof *w * (size_t)k);
        q->n = k;
        pthread_mutex_lock(&b->mu);
        b->qcount++;
        pthread_cond_broadcast(&b->cv);
        pthread_mutex_unlock(&b->mu);
        done += k;
    }
    return 0;
}

int gnn_builder_open(const gnn_builder_opts_t *o, gnn_builder_t **out)
{
    int rc = 0;
    gnn_builder_t *b = NULL;
    *out = NULL;
    GNN_CHECK(o->num_nodes >= -1 && o->num_nodes_hint >= 0 && o->mem_budget >= 0 &&
                  o->buffer_bytes >= 0,
              GNN_EINVAL, "building the graph: bad options");
    GNN_CHECK(o->num_nodes < GNN_GRAPH_MAX_COUNT && o->num_nodes_hint < GNN_GRAPH_MAX_COUNT,
              GNN_ERANGE, "building the graph: %lld nodes are beyond the limit 2^62",
              (long long)(o->num_nodes > o->num_nodes_hint ? o->num_nodes : o->num_nodes_hint));
    b = gnn_calloc(1, sizeof *b);
    GNN_CHECK(b, GNN_ENOMEM, "out of memory");
    b->o = *o;
    b->max_id = -1;
    b->spill_fd = -1;
    gnn_vid_t expect = o->num_nodes >= 0 ? o->num_nodes : o->num_nodes_hint;
    b->nb = 1;
    b->shift = 62;
    if (expect > ONE_BUCKET_NODES) {
        b->shift = 0;
        while ((expect >> b->shift) >= MAX_BUCKETS) b->shift++;
        b->nb = (int)(expect >> b->shift) + 1;
    }
    /* Buffers (and, once spilled, one block-sized read buffer) take at most
     * a sixteenth of a budget. */
    /* Compact entries need every row to lie within 2^16 of its bucket's
     * first row and every id to fit int32: true when the count is known. */
    b->compact = o->num_nodes >= 0 && o->num_nodes <= INT32_MAX;
    int width = b->nb > 1 ? b->shift : 16; /* one bucket: at most 2^16 nodes */
    b->rsize = !b->compact ? 8 : width <= 16 ? 2 : 4;
    b->csize = b->compact ? 4 : 8;
    int64_t buf = o->buffer_bytes ? o->buffer_bytes : DEFAULT_BUFFER;
    if (!o->buffer_bytes && o->mem_budget && buf > o->mem_budget / 16) {
        buf = o->mem_budget / 16;
        if (buf < MIN_BUFFER / 16) buf = MIN_BUFFER / 16;
    }
    b->bucket_cap = buf / spill_entry_bytes(b) / b->nb;
    if (b->bucket_cap < 16) b->bucket_cap = 16;
    if (o->num_nodes >= 0 && o->mem_budget > 0) {
        /* Node offsets and the bucket buffers stay for the whole build: a
         * budget without room for them is refused before any edge is read. */
        int64_t need = 8 * (o->num_nodes + 1) + b->bucket_cap * b->nb * spill_entry_bytes(b);
        GNN_CHECK(need <= o->mem_budget, GNN_ENOMEM,
                  "memory budget of %lld bytes is too small for %lld nodes: node offsets and "
                  "edge buffers need %lld bytes",
                  (long long)o->mem_budget, (long long)o->num_nodes, (long long)need);
    }
    b->bk = gnn_calloc((size_t)b->nb, sizeof *b->bk);
    GNN_CHECK(b->bk, GNN_ENOMEM, "out of memory");
    if (o->num_nodes >= 0) GNN_TRY(grow_counts(b, o->num_nodes));
    if (o->threaded) GNN_TRY(start_worker(b));
    *out = b;
    return 0;
fail:
    gnn_builder_free(b);
    return rc;
}

void gnn_builder_free(gnn_builder_t *b)
{
    if (!b) return;
    stop_worker(b);
    for (int i = 0; i < 2; i++) {
        gnn_free(b->q[i].src);
        gnn_free(b->q[i].dst);
        gnn_free(b->q[i].w);
    }
    if (b->spill_fd >= 0) close(b->spill_fd);
    for (int i = 0; b->bk && i < b->nb; i++) {
        gnn_free(b->bk[i].row);
        gnn_free(b->bk[i].col);
        gnn_free(b->bk[i].w);
    }
    gnn_free(b->bk);
    gnn_free(b->blocks);
    gnn_free(b->count);
    gnn_free(b);
}

/* ---- Spilling ------------------------------------------------------------- */

static int pwrite_all(gnn_builder_t *b, const void *p, size_t n, int64_t off)
{
    const char *c = p;
    while (n > 0) {
        ssize_t r = pwrite(b->spill_fd, c, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return GNN_FAIL(GNN_EIO, "writing the spill file in %s: %s",
                            b->o.tmpdir ? b->o.tmpdir : "the temporary directory",
                            r < 0 ? strerror(errno) : "disk full");
        c += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

static int pread_all(gnn_builder_t *b, void *p, size_t n, int64_t off)
{
    char *c = p;
    while (n > 0) {
        ssize_t r = pread(b->spill_fd, c, n, off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
            return GNN_FAIL(GNN_EIO, "reading the spill file back: %s",
                            r < 0 ? strerror(errno) : "file shorter than written");
        c += r;
        n -= (size_t)r;
        off += r;
    }
    return 0;
}

/* Append bucket k's buffer as a block of the spill file (created on first
 * use) and empty it. */
static int spill(gnn_builder_t *b, int k)
{
    int rc = 0;
    bucket_t *q = &b->bk[k];
    if (q->len == 0) return 0;
    if (b->spill_fd < 0) {
        const char *dir = b->o.tmpdir ? b->o.tmpdir : getenv("TMPDIR");
        if (!dir || !dir[0]) dir = "/tmp";
        char path[4096];
        snprintf(path, sizeof path, "%s/gnn-spill-XXXXXX", dir);
        b->spill_fd = mkstemp(path);
        GNN_CHECK(b->spill_fd >= 0, GNN_EIO, "cannot create a spill file in %s: %s", dir,
                  strerror(errno));
        unlink(path); /* gone with the process, whatever happens */
        GNN_DEBUG("spilling edges to a temporary file in %s", dir);
    }
    if (b->nblocks == b->cap_blocks) {
        int64_t cap = b->cap_blocks ? b->cap_blocks * 2 : 256;
        block_t *nbk = gnn_realloc_array(b->blocks, (size_t)cap, sizeof *nbk);
        GNN_CHECK(nbk, GNN_ENOMEM, "out of memory for the spill index");
        account(b, (cap - b->cap_blocks) * (int64_t)sizeof *nbk);
        b->blocks = nbk;
        b->cap_blocks = cap;
    }
    int64_t n = q->len, off = b->spill_end;
    GNN_TRY(pwrite_all(b, q->row, (size_t)(b->rsize * n), off));
    GNN_TRY(pwrite_all(b, q->col, (size_t)(b->csize * n), off + b->rsize * n));
    if (q->w) GNN_TRY(pwrite_all(b, q->w, sizeof *q->w * (size_t)n, off + (b->rsize + b->csize) * n));
    b->blocks[b->nblocks++] = (block_t){k, off, n};
    b->spill_end += n * spill_entry_bytes(b);
    b->stats.spill_bytes += n * spill_entry_bytes(b);
    q->len = 0;
fail:
    return rc;
}

/* Room for one more entry in bucket k: grow its buffer up to bucket_cap,
 * then spill it. */
static int make_room(gnn_builder_t *b, int k)
{
    int rc = 0;
    bucket_t *q = &b->bk[k];
    if (q->cap == b->bucket_cap) return spill(b, k);
    int64_t cap = q->cap ? q->cap * 2 : (b->nb == 1 ? FIRST_CAP : b->bucket_cap);
    if (cap > b->bucket_cap) cap = b->bucket_cap;
    void *r = gnn_realloc_array(q->row, (size_t)cap, (size_t)b->rsize);
    GNN_CHECK(r, GNN_ENOMEM, "out of memory for the edge buffer");
    q->row = r;
    void *c = gnn_realloc_array(q->col, (size_t)cap, (size_t)b->csize);
    GNN_CHECK(c, GNN_ENOMEM, "out of memory for the edge buffer");
    q->col = c;
    if (b->o.has_weights) {
        float *w = gnn_realloc_array(q->w, (size_t)cap, sizeof *w);
        GNN_CHECK(w, GNN_ENOMEM, "out of memory for the edge buffer");
        q->w = w;
    }
    account(b, (cap - q->cap) * spill_entry_bytes(b));
    q->cap = cap;
fail:
    return rc;
}

/* ---- Adding --------------------------------------------------------------- */

static inline int push(gnn_builder_t *b, gnn_vid_t row, gnn_vid_t col, const float *w)
{
    int k = bucket_of(b, row);
    bucket_t *q = &b->bk[k];
    if (q->len == q->cap) {
        int rc = make_room(b, k);
        if (rc < 0) return rc;
    }
    if (b->compact) {
        gnn_vid_t off = row - ((gnn_vid_t)k << (b->nb > 1 ? b->shift : 0));
        if (b->rsize == 2)
            ((uint16_t *)q->row)[q->len] = (uint16_t)off;
        else
            ((uint32_t *)q->row)[q->len] = (uint32_t)off;
        ((int32_t *)q->col)[q->len] = (int32_t)col;
    } else {
        ((gnn_vid_t *)q->row)[q->len] = row;
        ((gnn_vid_t *)q->col)[q->len] = col;
    }
    if (w) q->w[q->len] = *w;
    q->len++;
    b->count[row + 1]++;
    b->entries++;
    return 0;
}

int gnn_builder_add(gnn_builder_t *b, const gnn_vid_t *src, const gnn_vid_t *dst, const float *w,
                    int64_t n)
{
    int rc = 0;
    GNN_CHECK(!b->finished, GNN_EINVAL, "building the graph: edges added after the finish");
    GNN_CHECK(!b->o.has_weights == !w, GNN_EINVAL,
              "building the graph: weights must be given exactly when declared");
    return b->th_live ? add_queued(b, src, dst, w, n) : add_now(b, src, dst, w, n);
fail:
    return rc;
}

static int add_now(gnn_builder_t *b, const gnn_vid_t *src, const gnn_vid_t *dst, const float *w,
                   int64_t n)
{
    int rc = 0;
    const int drop_loops = (b->o.options & GNN_BUILD_NO_SELF_LOOPS) != 0;
    const int sym = (b->o.options & GNN_BUILD_SYMMETRIZE) != 0;
    const gnn_vid_t n_known = b->o.num_nodes;
    for (int64_t i = 0; i < n; i++) {
        gnn_vid_t s = src[i], d = dst[i];
        if (s < 0 || d < 0 || (n_known >= 0 && (s >= n_known || d >= n_known))) {
            gnn_vid_t bad = (s < 0 || (n_known >= 0 && s >= n_known)) ? s : d;
            if (n_known >= 0)
                rc = GNN_FAIL(GNN_ERANGE, "edge %lld: node id %lld is outside [0, %lld)",
                              (long long)(b->offered + i), (long long)bad, (long long)n_known);
            else
                rc = GNN_FAIL(GNN_ERANGE, "edge %lld: negative node id %lld",
                              (long long)(b->offered + i), (long long)bad);
            goto fail;
        }
        if (s == d && drop_loops) continue;
        gnn_vid_t hi = s > d ? s : d;
        if (hi > b->max_id) {
            if (hi >= GNN_GRAPH_MAX_COUNT - 1) {
                rc = GNN_FAIL(GNN_ERANGE,
                              "edge %lld: node id %lld is beyond the limit of 2^62 nodes",
                              (long long)(b->offered + i), (long long)hi);
                goto fail;
            }
            b->max_id = hi;
            if (hi + 1 >= b->cap_count) GNN_TRY(grow_counts(b, hi + 1));
        }
        GNN_TRY(push(b, d, s, w ? &w[i] : NULL));
        if (sym && s != d) GNN_TRY(push(b, s, d, w ? &w[i] : NULL));
        b->added++;
    }
    b->offered += n;
fail:
    return rc;
}

gnn_vid_t gnn_builder_num_nodes(gnn_builder_t *b)
{
    gnn_builder_flush(b);
    return b->o.num_nodes >= 0 ? b->o.num_nodes : b->max_id + 1;
}

gnn_eid_t gnn_builder_num_added(gnn_builder_t *b)
{
    gnn_builder_flush(b);
    return b->added;
}

unsigned gnn_builder_csr_flags(const gnn_builder_t *b)
{
    unsigned f = 0, o = b->o.options;
    if (o & (GNN_BUILD_SORT | GNN_BUILD_DEDUPE)) f |= GNN_CSR_SORTED;
    if (o & GNN_BUILD_DEDUPE) f |= GNN_CSR_DEDUPED;
    if (o & GNN_BUILD_NO_SELF_LOOPS) f |= GNN_CSR_NO_SELF_LOOPS;
    if (o & GNN_BUILD_SYMMETRIZE) f |= GNN_CSR_SYMMETRIC;
    return f;
}

void gnn_builder_stats(const gnn_builder_t *b, gnn_builder_stats_t *s) { *s = b->stats; }

/* ---- Finishing ------------------------------------------------------------ */

typedef struct {
    gnn_vid_t a, e;       /* rows [a, e) */
    gnn_eid_t base;       /* indptr[a] before placing */
    gnn_vid_t *indices;   /* the range's entries */
    float *weights;
    gnn_eid_t *indptr;    /* the whole offsets array; rows [a, e] are cursors */
    bucket_t *rd;         /* one buffer per thread for reading spilled blocks */
    int nrd;
} range_t;

/* Place n entries of bucket k (rows, columns and weights as stored). */
static void place(const gnn_builder_t *b, range_t *r, int k, const void *rows, const void *cols,
                  const float *w, int64_t n)
{
    gnn_eid_t *ip = r->indptr;
    if (b->compact) {
        const uint16_t *r16 = rows;
        const uint32_t *r32 = rows;
        const int32_t *co = cols;
        const gnn_vid_t first = (gnn_vid_t)k << (b->nb > 1 ? b->shift : 0);
        for (int64_t i = 0; i < n; i++) {
            gnn_vid_t v = first + (b->rsize == 2 ? r16[i] : r32[i]);
            if (v < r->a || v >= r->e) continue;
            gnn_eid_t at = ip[v]++ - r->base;
            r->indices[at] = co[i];
            if (w) r->weights[at] = w[i];
        }
        return;
    }
    const gnn_vid_t *row = rows, *col = cols;
    for (int64_t i = 0; i < n; i++) {
        gnn_vid_t v = row[i];
        if (v < r->a || v >= r->e) continue;
        gnn_eid_t at = ip[v]++ - r->base;
        r->indices[at] = col[i];
        if (w) r->weights[at] = w[i];
    }
}

/* Place the entries of rows [a, e) that bucket k holds: its blocks, then
 * its buffer, read into rd. */
static int place_bucket(gnn_builder_t *b, range_t *r, int k, bucket_t *rd, gnn_progress_t *prog)
{
    int rc = 0;
    for (int64_t j = 0; j < b->nblocks; j++) {
        const block_t *blk = &b->blocks[j];
        if (blk->bucket != k) continue;
        int64_t n = blk->n;
        GNN_TRY(pread_all(b, rd->row, (size_t)(b->rsize * n), blk->offset));
        GNN_TRY(pread_all(b, rd->col, (size_t)(b->csize * n), blk->offset + b->rsize * n));
        if (rd->w)
            GNN_TRY(pread_all(b, rd->w, sizeof *rd->w * (size_t)n,
                              blk->offset + (b->rsize + b->csize) * n));
        place(b, r, k, rd->row, rd->col, rd->w, n);
        gnn_progress_add(prog, n);
    }
    const bucket_t *q = &b->bk[k];
    place(b, r, k, q->row, q->col, q->w, q->len);
    gnn_progress_add(prog, q->len);
fail:
    return rc;
}

/* Sort rows [v0, v1) in place once placed; start0 is row v0's offset from
 * before placing. */
static int sort_rows(range_t *r, gnn_vid_t v0, gnn_vid_t v1, gnn_eid_t start0)
{
    gnn_eid_t *ip = r->indptr;
    gnn_eid_t lo = start0 - r->base;
    /* Placing left each row's cursor at its end; the view needs starts. */
    gnn_eid_t *starts = gnn_malloc_array((size_t)(v1 - v0 + 1), sizeof *starts);
    if (!starts) return GNN_FAIL(GNN_ENOMEM, "out of memory sorting rows");
    starts[0] = 0;
    for (gnn_vid_t v = v0; v < v1; v++) starts[v - v0 + 1] = ip[v] - r->base - lo;
    gnn_csr_t view = {.n_rows = v1 - v0, .n_cols = INT64_MAX, .nnz = starts[v1 - v0],
                      .indptr = starts, .indices = r->indices + lo,
                      .weights = r->weights ? r->weights + lo : NULL};
    int rc = gnn_csr_sort_rows(&view);
    gnn_free(starts);
    return rc;
}

/* Place (and, when asked, sort) rows [a, e) bucket by bucket on all threads. */
static int place_range(gnn_builder_t *b, range_t *r, gnn_progress_t *prog)
{
    int lo = bucket_of(b, r->a), hi = bucket_of(b, r->e - 1);
    const int sort = (b->o.options & (GNN_BUILD_SORT | GNN_BUILD_DEDUPE)) != 0;
    int err = 0;
    char msg[512] = "";
    #pragma omp parallel for schedule(dynamic, 1) num_threads(r->nrd)
    for (int k = lo; k <= hi; k++) {
        int t = omp_get_thread_num();
        gnn_vid_t v0 = b->nb == 1 ? r->a : (gnn_vid_t)k << b->shift;
        gnn_vid_t v1 = k == b->nb - 1 ? r->e : v0 + ((gnn_vid_t)1 << b->shift);
        if (v0 < r->a) v0 = r->a;
        if (v1 > r->e) v1 = r->e;
        gnn_eid_t start0 = r->indptr[v0]; /* only this thread moves row v0's cursor */
        int rc = place_bucket(b, r, k, &r->rd[t], prog);
        if (rc == 0 && sort && v1 > v0) rc = sort_rows(r, v0, v1, start0);
        if (rc < 0) {
            #pragma omp critical(gnn_builder_error)
            if (!err) {
                err = rc;
                snprintf(msg, sizeof msg, "%s", gnn_error_message());
            }
        }
    }
    return err ? GNN_FAIL(err, "%s", msg) : 0;
}

/* Turn the counts into offsets for n nodes (count[v + 1] -> indptr). */
static int counts_to_offsets(gnn_builder_t *b, gnn_vid_t n)
{
    int rc = 0;
    GNN_CHECK(n >= gnn_builder_num_nodes(b), GNN_EINVAL,
              "building the graph: %lld nodes asked for, but ids up to %lld were added",
              (long long)n, (long long)b->max_id);
    GNN_TRY(grow_counts(b, n));
    b->count[0] = 0;
    for (gnn_vid_t v = 0; v < n; v++) b->count[v + 1] += b->count[v];
fail:
    return rc;
}

/*
 * Build rows [a, e) into r, sort / dedupe them, and leave their final
 * offsets (shifted by out_base) in indptr[a .. e]; *nnz = the range's
 * entries. The caller restores indptr[e] when another range follows.
 */
static int build_range(gnn_builder_t *b, range_t *r, gnn_eid_t out_base, gnn_eid_t *nnz,
                       gnn_progress_t *prog)
{
    int rc = 0;
    gnn_eid_t *ip = r->indptr;
    r->base = ip[r->a];
    gnn_eid_t next = ip[r->e];
    GNN_TRY(place_range(b, r, prog));
    /* Placing advanced each cursor to its row's end: shift back by one row. */
    for (gnn_vid_t v = r->e - 1; v > r->a; v--) ip[v] = ip[v - 1];
    ip[r->a] = r->base;
    for (gnn_vid_t v = r->a; v <= r->e; v++) ip[v] -= r->base;
    gnn_csr_t view = {.n_rows = r->e - r->a, .n_cols = INT64_MAX, .nnz = next - r->base,
                      .indptr = ip + r->a, .indices = r->indices, .weights = r->weights,
                      .flags = GNN_CSR_SORTED}; /* place_range sorted the rows when asked */
    if (b->o.options & GNN_BUILD_DEDUPE) GNN_TRY(gnn_csr_dedupe(&view));
    *nnz = view.indptr[view.n_rows];
    for (gnn_vid_t v = r->a; v <= r->e; v++) ip[v] += out_base;
fail:
    return rc;
}

/* Allocate the range's arrays (cap entries) and the block read buffer. */
static int range_alloc(gnn_builder_t *b, range_t *r, gnn_eid_t cap)
{
    int rc = 0;
    size_t c = (size_t)(cap ? cap : 1);
    r->indices = gnn_malloc_array(c, sizeof *r->indices);
    GNN_CHECK(r->indices, GNN_ENOMEM, "out of memory for %lld edges", (long long)cap);
    if (b->o.has_weights) {
        r->weights = gnn_malloc_array(c, sizeof *r->weights);
        GNN_CHECK(r->weights, GNN_ENOMEM, "out of memory for %lld weights", (long long)cap);
    }
    account(b, cap * csr_entry_bytes(b));
    r->nrd = b->nb > 1 ? omp_get_max_threads() : 1;
    if (r->nrd > b->nb) r->nrd = b->nb;
    r->rd = gnn_calloc((size_t)r->nrd, sizeof *r->rd);
    GNN_CHECK(r->rd, GNN_ENOMEM, "out of memory");
    for (int t = 0; b->nblocks > 0 && t < r->nrd; t++) {
        size_t m = (size_t)b->bucket_cap;
        bucket_t *rd = &r->rd[t];
        rd->row = gnn_malloc_array(m, (size_t)b->rsize);
        rd->col = gnn_malloc_array(m, (size_t)b->csize);
        GNN_CHECK(rd->row && rd->col, GNN_ENOMEM, "out of memory for reading back edges");
        if (b->o.has_weights) {
            rd->w = gnn_malloc_array(m, sizeof *rd->w);
            GNN_CHECK(rd->w, GNN_ENOMEM, "out of memory for reading back edges");
        }
        account(b, b->bucket_cap * spill_entry_bytes(b));
    }
fail:
    return rc;
}

static void range_free(range_t *r)
{
    gnn_free(r->indices);
    gnn_free(r->weights);
    for (int t = 0; r->rd && t < r->nrd; t++) {
        gnn_free(r->rd[t].row);
        gnn_free(r->rd[t].col);
        gnn_free(r->rd[t].w);
    }
    gnn_free(r->rd);
}

int gnn_builder_to_csr(gnn_builder_t *b, gnn_vid_t num_nodes, gnn_csr_t *out)
{
    int rc = 0;
    range_t r = {0};
    memset(out, 0, sizeof *out);
    GNN_CHECK(!b->finished, GNN_EINVAL, "building the graph: already finished");
    GNN_TRY(gnn_builder_flush(b));
    stop_worker(b);
    b->finished = 1;
    GNN_TRY(counts_to_offsets(b, num_nodes));
    gnn_eid_t total = b->count[num_nodes];
    GNN_TRY(range_alloc(b, &r, total));
    r.a = 0;
    r.e = num_nodes;
    r.indptr = b->count;
    gnn_eid_t nnz = 0;
    if (num_nodes > 0) GNN_TRY(build_range(b, &r, 0, &nnz, NULL));
    out->n_rows = out->n_cols = num_nodes;
    out->nnz = nnz;
    out->indptr = b->count; /* the offsets array becomes the result's */
    out->indices = r.indices;
    out->weights = r.weights;
    out->flags = gnn_builder_csr_flags(b);
    r.indices = NULL;
    r.weights = NULL;
    b->count = NULL;
    b->cap_count = 0;
    b->stats.passes = 1;
    b->stats.num_edges = nnz;
fail:
    range_free(&r);
    return rc;
}

int gnn_builder_write(gnn_builder_t *b, gnn_graph_writer_t *w)
{
    int rc = 0;
    range_t r = {0};
    gnn_progress_t *prog = NULL;
    GNN_CHECK(!b->finished, GNN_EINVAL, "building the graph: already finished");
    GNN_TRY(gnn_builder_flush(b));
    stop_worker(b);
    b->finished = 1;
    gnn_vid_t n = gnn_graph_writer_header(w)->num_nodes; /* nodes past the ids have no edges */
    GNN_TRY(counts_to_offsets(b, n));
    gnn_eid_t *ip = b->count;
    gnn_eid_t total = ip[n];

    /* Room for one range: the budget less what is held already. */
    int64_t room = INT64_MAX;
    if (b->o.mem_budget > 0) {
        int threads = b->nb > 1 ? omp_get_max_threads() : 1;
        room = b->o.mem_budget - b->cur_bytes -
               (b->nblocks ? threads * b->bucket_cap * spill_entry_bytes(b) : 0);
        gnn_eid_t longest = 0;
        for (gnn_vid_t v = 0; v < n; v++)
            if (ip[v + 1] - ip[v] > longest) longest = ip[v + 1] - ip[v];
        GNN_CHECK(room >= longest * csr_entry_bytes(b), GNN_ENOMEM,
                  "memory budget of %lld bytes is too small: node offsets and edge buffers "
                  "need %lld bytes and the longest row %lld more",
                  (long long)b->o.mem_budget, (long long)(b->o.mem_budget - room),
                  (long long)(longest * csr_entry_bytes(b)));
    }
    gnn_eid_t cap = total;
    if (room / csr_entry_bytes(b) < cap) cap = room / csr_entry_bytes(b);
    GNN_TRY(range_alloc(b, &r, cap));
    r.indptr = ip;

    int passes = 0;
    for (gnn_vid_t a = 0; a < n; passes++) {
        gnn_vid_t e = a;
        while (e < n && ip[e + 1] - ip[a] <= cap) e++;
        a = e;
    }
    if (b->entries > ((gnn_eid_t)1 << 22))
        prog = gnn_progress_start("building CSR", b->entries, "edges");
    if (passes > 1) GNN_INFO("building the CSR out of core in %d passes", passes);
    gnn_eid_t out_base = 0;
    for (gnn_vid_t a = 0; a < n;) {
        gnn_vid_t e = a;
        while (e < n && ip[e + 1] - ip[a] <= cap) e++;
        r.a = a;
        r.e = e;
        gnn_eid_t next = ip[e], nnz;
        GNN_TRY(build_range(b, &r, out_base, &nnz, prog));
        GNN_TRY(gnn_graph_writer_put_indptr(w, a, e - a, ip + a));
        GNN_TRY(gnn_graph_writer_put_indices(w, out_base, nnz, r.indices, r.weights));
        out_base += nnz;
        ip[e] = next;
        a = e;
    }
    GNN_TRY(gnn_graph_writer_put_indptr(w, n, 1, &out_base));
    b->stats.passes = passes;
    b->stats.num_edges = out_base;
fail:
    gnn_progress_end(prog, rc);
    range_free(&r);
    return rc;
}

int gnn_builder_generate(gnn_vid_t n, int64_t m, int64_t batch, gnn_builder_make_fn make,
                         void *ctx, int64_t mem_budget, const char *tmpdir,
                         gnn_builder_t **out)
{
    int rc = 0;
    gnn_builder_t *b = NULL;
    gnn_vid_t *src = NULL, *dst = NULL;
    gnn_progress_t *prog = NULL;
    *out = NULL;
    gnn_builder_opts_t bo = {
        .num_nodes = n,
        .options = GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS,
        .mem_budget = mem_budget,
        .tmpdir = tmpdir,
        .threaded = 1,
    };
    GNN_TRY(gnn_builder_open(&bo, &b));
    const int64_t cap = m < batch ? m : batch;
    src = gnn_malloc_array((size_t)cap, sizeof *src);
    dst = gnn_malloc_array((size_t)cap, sizeof *dst);
    GNN_CHECK(src && dst, GNN_ENOMEM, "out of memory for a batch of %lld edges", (long long)cap);
    prog = gnn_progress_start("generating edges", m, "edges");
    for (int64_t i = 0; i * batch < m; i++) {
        const int64_t nb = m - i * batch < batch ? m - i * batch : batch;
        make(ctx, i, nb, src, dst);
        GNN_TRY(gnn_builder_add(b, src, dst, NULL, nb));
        gnn_progress_add(prog, nb);
    }
    *out = b;
    b = NULL;
fail:
    gnn_progress_finish(prog);
    gnn_builder_free(b);
    gnn_free(src);
    gnn_free(dst);
    return rc;
}
