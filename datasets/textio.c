/*
 * Line reader over plain files, gzip files and memory, and strict fast
 * number parsers (textio.h).
 *
 * The reader keeps one growing buffer of uncompressed text; lines are
 * returned in place by writing a NUL over their newline. gzip input is
 * inflated with zlib directly (not gzread) so that a stream that ends early
 * is told apart from a complete one, and concatenated gzip members (as
 * written by pigz or `cat a.gz b.gz`) are read as one stream.
 *
 * Inflating costs about as much as parsing, so gzip input is inflated by a
 * second thread into two 1 MiB slots that the reading thread copies from:
 * on two cores the two halves of the work overlap. The inflating thread
 * records its failure in its slot (code and message), and the reading
 * thread re-records it as its own when it reaches that slot.
 */
#include "datasets/textio.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TEXT_BLOCK ((size_t)4 << 20)
#define RAW_BLOCK ((size_t)1 << 20)
#define MAX_LINE ((size_t)64 << 20)
#define SLOT_BYTES ((size_t)1 << 20)

/* One block of inflated text handed from the inflating thread. */
typedef struct {
    char *data;
    size_t len;
    int eof;          /* the stream ended after this block */
    int rc;           /* the inflating thread's failure, 0 when none */
    char msg[512];
} slot_t;

struct gnn_text {
    char *name;
    int fd;                /* -1 for memory input */
    const unsigned char *mem;
    size_t mem_size, mem_pos;
    int gzip;
    z_stream zs;
    int zs_live;           /* inflateInit2 done */
    int z_member_done;     /* the current gzip member has ended */
    unsigned char *raw;    /* compressed input block */
    int raw_eof;
    int64_t file_size;
    _Atomic int64_t file_pos; /* advanced by the inflating thread */
    char *buf;             /* text: [start, end) unread, capacity cap */
    size_t cap, start, end;
    int eof;               /* no more text will come */
    int64_t line, bytes;
    /* The inflating thread (gzip input only). */
    pthread_t th;
    int th_live, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    slot_t slot[2];
    int head, count;       /* next slot to consume, slots filled */
};

/* Read up to n raw bytes of the source; 0 at its end. */
static int read_raw(gnn_text_t *t, unsigned char *dst, size_t n, size_t *got)
{
    *got = 0;
    if (t->fd < 0) {
        size_t left = t->mem_size - t->mem_pos;
        *got = n < left ? n : left;
        memcpy(dst, t->mem + t->mem_pos, *got);
        t->mem_pos += *got;
    } else {
        ssize_t r;
        do r = read(t->fd, dst, n);
        while (r < 0 && errno == EINTR);
        if (r < 0) return GNN_FAIL(GNN_EIO, "%s: read error: %s", t->name, strerror(errno));
        *got = (size_t)r;
    }
    t->file_pos += (int64_t)*got;
    return 0;
}

/* Inflate into dst; *got = 0 only at the true end of the gzip input. */
static int read_gzip(gnn_text_t *t, unsigned char *dst, size_t n, size_t *got)
{
    int rc = 0;
    *got = 0;
    t->zs.next_out = dst;
    t->zs.avail_out = (uInt)n;
    while (t->zs.avail_out == n) {
        if (t->zs.avail_in == 0 && !t->raw_eof) {
            size_t r;
            GNN_TRY(read_raw(t, t->raw, RAW_BLOCK, &r));
            t->zs.next_in = t->raw;
            t->zs.avail_in = (uInt)r;
            if (r == 0) t->raw_eof = 1;
        }
        if (t->z_member_done) {
            if (t->zs.avail_in == 0 && t->raw_eof) break; /* clean end */
            /* Another member follows (ignore trailing zero padding). */
            if (t->zs.next_in[0] == 0) {
                t->zs.avail_in = 0;
                continue;
            }
            GNN_CHECK(inflateReset(&t->zs) == Z_OK, GNN_EFORMAT, "%s: corrupt gzip stream", t->name);
            t->z_member_done = 0;
        }
        uInt out_before = t->zs.avail_out;
        int z = inflate(&t->zs, Z_NO_FLUSH);
        if (z == Z_STREAM_END) {
            t->z_member_done = 1;
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            return GNN_FAIL(GNN_EFORMAT, "%s: corrupt gzip stream (%s)", t->name,
                            t->zs.msg ? t->zs.msg : "inflate failed");
        } else if (t->zs.avail_in == 0 && t->raw_eof && t->zs.avail_out == out_before) {
            /* No input left, no output made, and the member has not ended. */
            return GNN_FAIL(GNN_EFORMAT, "%s: truncated gzip stream (ends at byte %lld)",
                            t->name, (long long)t->file_pos);
        }
    }
    *got = n - t->zs.avail_out;
fail:
    return rc;
}

/* The inflating thread: fill slots in turn until the end, a failure or stop. */
static void *inflater(void *arg)
{
    gnn_text_t *t = arg;
    for (;;) {
        pthread_mutex_lock(&t->mu);
        while (t->count == 2 && !t->stop) pthread_cond_wait(&t->cv, &t->mu);
        int stop = t->stop, idx = (t->head + t->count) % 2;
        pthread_mutex_unlock(&t->mu);
        if (stop) break;
        slot_t *s = &t->slot[idx];
        size_t got = 0;
        s->rc = read_gzip(t, (unsigned char *)s->data, SLOT_BYTES, &got);
        s->len = got;
        s->eof = s->rc < 0 || got == 0;
        if (s->rc < 0) snprintf(s->msg, sizeof s->msg, "%s", gnn_error_message());
        pthread_mutex_lock(&t->mu);
        t->count++;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        if (s->eof) break;
    }
    return NULL;
}

static int start_inflater(gnn_text_t *t)
{
    int rc = 0;
    for (int i = 0; i < 2; i++) {
        t->slot[i].data = gnn_malloc(SLOT_BYTES);
        GNN_CHECK(t->slot[i].data, GNN_ENOMEM, "out of memory");
    }
    GNN_CHECK(pthread_mutex_init(&t->mu, NULL) == 0, GNN_ENOMEM, "cannot create a mutex");
    if (pthread_cond_init(&t->cv, NULL) != 0) {
        pthread_mutex_destroy(&t->mu);
        rc = GNN_FAIL(GNN_ENOMEM, "cannot create a condition variable");
        goto fail;
    }
    if (pthread_create(&t->th, NULL, inflater, t) != 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        rc = GNN_FAIL(GNN_ENOMEM, "cannot start the gzip thread");
        goto fail;
    }
    t->th_live = 1;
fail:
    return rc;
}

/* Copy the next inflated slot (at most room bytes: slots are smaller than
 * the room fill guarantees) into dst. */
static int take_slot(gnn_text_t *t, char *dst, size_t room, size_t *got)
{
    int rc = 0;
    *got = 0;
    if (!t->th_live) GNN_TRY(start_inflater(t));
    pthread_mutex_lock(&t->mu);
    while (t->count == 0) pthread_cond_wait(&t->cv, &t->mu);
    slot_t *s = &t->slot[t->head];
    pthread_mutex_unlock(&t->mu);
    if (s->rc < 0) return GNN_FAIL(s->rc, "%s", s->msg); /* the thread has ended */
    GNN_CHECK(s->len < room, GNN_EINTERNAL, "text slot larger than its room");
    memcpy(dst, s->data, s->len);
    *got = s->len;
    int eof = s->eof;
    pthread_mutex_lock(&t->mu);
    if (!eof) { /* keep the final slot: later calls see the end again */
        t->head = (t->head + 1) % 2;
        t->count--;
        pthread_cond_broadcast(&t->cv);
    } else {
        s->len = 0;
    }
    pthread_mutex_unlock(&t->mu);
fail:
    return rc;
}

/* Append more text after t->end, compacting and growing the buffer. */
static int fill(gnn_text_t *t)
{
    int rc = 0;
    if (t->start > 0) {
        memmove(t->buf, t->buf + t->start, t->end - t->start);
        t->end -= t->start;
        t->start = 0;
    }
    if (t->cap - t->end < TEXT_BLOCK / 2) {
        GNN_CHECK(t->cap < MAX_LINE + TEXT_BLOCK, GNN_EFORMAT,
                  "%s:%lld: line longer than %zu MiB", t->name, (long long)t->line + 1,
                  MAX_LINE >> 20);
        char *nb = gnn_realloc_array(t->buf, t->cap * 2, 1);
        GNN_CHECK(nb, GNN_ENOMEM, "%s: out of memory for a long line", t->name);
        t->buf = nb;
        t->cap *= 2;
    }
    size_t got;
    size_t room = t->cap - t->end - 1; /* keep one byte for a final NUL */
    if (t->gzip)
        GNN_TRY(take_slot(t, t->buf + t->end, room, &got));
    else
        GNN_TRY(read_raw(t, (unsigned char *)t->buf + t->end, room, &got));
    if (got == 0) t->eof = 1;
    t->end += got;
fail:
    return rc;
}

static int text_init(gnn_text_t *t)
{
    int rc = 0;
    t->cap = TEXT_BLOCK;
    t->buf = gnn_malloc(t->cap);
    GNN_CHECK(t->buf, GNN_ENOMEM, "out of memory");
    /* gzip magic: 1f 8b */
    unsigned char magic[2];
    size_t got = 0;
    GNN_TRY(read_raw(t, magic, 2, &got));
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        t->gzip = 1;
        t->raw = gnn_malloc(RAW_BLOCK);
        GNN_CHECK(t->raw, GNN_ENOMEM, "out of memory");
        memcpy(t->raw, magic, 2);
        t->zs.next_in = t->raw;
        t->zs.avail_in = 2;
        GNN_CHECK(inflateInit2(&t->zs, 16 + MAX_WBITS) == Z_OK, GNN_ENOMEM,
                  "%s: cannot start gzip decoding", t->name);
        t->zs_live = 1;
    } else {
        memcpy(t->buf, magic, got);
        t->end = got;
        t->bytes = 0;
    }
fail:
    return rc;
}

int gnn_text_open(const char *path, gnn_text_t **out)
{
    int rc = 0;
    gnn_text_t *t = NULL;
    struct stat st;
    *out = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return GNN_FAIL(errno == ENOENT ? GNN_ENOENT : GNN_EIO, "%s: %s", path, strerror(errno));
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return GNN_FAIL(GNN_EIO, "%s: is a directory", path);
    }
    t = gnn_calloc(1, sizeof *t);
    if (!t) {
        close(fd);
        return GNN_FAIL(GNN_ENOMEM, "out of memory");
    }
    t->fd = fd;
    t->file_size = st.st_size;
    t->name = gnn_strdup(path);
    GNN_CHECK(t->name, GNN_ENOMEM, "out of memory");
    GNN_TRY(text_init(t));
    *out = t;
    return 0;
fail:
    gnn_text_close(t);
    return rc;
}

int gnn_text_open_mem(const void *data, size_t size, const char *name, gnn_text_t **out)
{
    int rc = 0;
    gnn_text_t *t = gnn_calloc(1, sizeof *t);
    *out = NULL;
    GNN_CHECK(t, GNN_ENOMEM, "out of memory");
    t->fd = -1;
    t->mem = data;
    t->mem_size = size;
    t->file_size = (int64_t)size;
    t->name = gnn_strdup(name);
    GNN_CHECK(t->name, GNN_ENOMEM, "out of memory");
    GNN_TRY(text_init(t));
    *out = t;
    return 0;
fail:
    gnn_text_close(t);
    return rc;
}

void gnn_text_close(gnn_text_t *t)
{
    if (!t) return;
    if (t->th_live) {
        pthread_mutex_lock(&t->mu);
        t->stop = 1;
        pthread_cond_broadcast(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL);
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
    }
    gnn_free(t->slot[0].data);
    gnn_free(t->slot[1].data);
    if (t->fd >= 0) close(t->fd);
    if (t->zs_live) inflateEnd(&t->zs);
    gnn_free(t->raw);
    gnn_free(t->buf);
    gnn_free(t->name);
    gnn_free(t);
}

int gnn_text_next_line(gnn_text_t *t, char **line, size_t *len)
{
    int rc = 0;
    for (;;) {
        char *s = t->buf + t->start;
        char *nl = memchr(s, '\n', t->end - t->start);
        if (nl || (t->eof && t->end > t->start)) {
            size_t n = nl ? (size_t)(nl - s) : t->end - t->start;
            t->start += n + (nl ? 1 : 0);
            t->bytes += (int64_t)(n + (nl ? 1 : 0));
            if (n > 0 && s[n - 1] == '\r') n--;
            t->line++;
            if (memchr(s, '\0', n))
                return GNN_FAIL(GNN_EFORMAT, "%s:%lld: a NUL byte (binary or UTF-16 input?)",
                                t->name, (long long)t->line);
            s[n] = '\0'; /* over the newline, or the spare byte at the end */
            *line = s;
            *len = n;
            return 1;
        }
        if (t->eof) return 0;
        GNN_TRY(fill(t));
    }
fail:
    return rc;
}

int64_t gnn_text_line(const gnn_text_t *t) { return t->line; }
const char *gnn_text_name(const gnn_text_t *t) { return t->name; }
int64_t gnn_text_bytes(const gnn_text_t *t) { return t->bytes; }
int64_t gnn_text_file_size(const gnn_text_t *t) { return t->file_size; }
int64_t gnn_text_file_pos(const gnn_text_t *t) { return t->file_pos; }

int gnn_text_fail(const gnn_text_t *t, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return GNN_FAIL(GNN_EFORMAT, "%s:%lld: %s", t->name, (long long)t->line, msg);
}

/* ---- Numbers ---------------------------------------------------------------- */

static const char *skip_blank(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

int gnn_parse_i64(const char **pp, const char *end, int64_t *v)
{
    const char *p = skip_blank(*pp, end);
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    const char *digits = p;
    uint64_t x = 0;
    while (p < end && (unsigned)(*p - '0') < 10) {
        unsigned d = (unsigned)(*p - '0');
        if (x > (UINT64_MAX - d) / 10) return GNN_ERANGE;
        x = x * 10 + d;
        p++;
    }
    if (p == digits) return GNN_EFORMAT;
    if (x > (uint64_t)INT64_MAX + (uint64_t)neg) return GNN_ERANGE;
    *v = neg ? (int64_t)(0 - x) : (int64_t)x;
    *pp = p;
    return 0;
}

static const double pow10_exact[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The common case of OGB-style files, "-0.123456": at most 15 digits, no
 * exponent. Returns the end of the number, or NULL to leave the input to
 * the general parser. */
static inline const char *parse_plain_decimal(const char *p, const char *end, double *v)
{
    int neg = p < end && *p == '-';
    p += neg;
    const char *s = p;
    uint64_t m = 0;
    while (p < end && (unsigned)(*p - '0') < 10) m = m * 10 + (unsigned)(*p++ - '0');
    int digits = (int)(p - s), frac = 0;
    if (p < end && *p == '.') {
        const char *f = ++p;
        while (p < end && (unsigned)(*p - '0') < 10) m = m * 10 + (unsigned)(*p++ - '0');
        frac = (int)(p - f);
        digits += frac;
    }
    if (digits == 0 || digits > 15 || (p < end && (*p == 'e' || *p == 'E'))) return NULL;
    double x = (double)m; /* exact: m < 10^15 < 2^53 */
    if (frac) x /= pow10_exact[frac]; /* one correctly rounded division, as strtod */
    *v = neg ? -x : x;
    return p;
}

int gnn_parse_f64(const char **pp, const char *end, double *v)
{
    const char *p = skip_blank(*pp, end);
    const char *q = parse_plain_decimal(p, end, v);
    if (q) {
        *pp = q;
        return 0;
    }
    const char *tok = p;
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) neg = *p++ == '-';
    uint64_t m = 0;
    int ndig = 0, exp10 = 0, any = 0;
    while (p < end && (unsigned)(*p - '0') < 10) {
        if (ndig < 19) {
            m = m * 10 + (unsigned)(*p - '0');
            if (m) ndig++;
        } else {
            exp10++;
        }
        any = 1;
        p++;
    }
    if (p < end && *p == '.') {
        p++;
        while (p < end && (unsigned)(*p - '0') < 10) {
            if (ndig < 19) {
                m = m * 10 + (unsigned)(*p - '0');
                if (m) ndig++;
                exp10--;
            }
            any = 1;
            p++;
        }
    }
    if (any && p < end && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1;
        int eneg = 0, e = 0, edig = 0;
        if (q < end && (*q == '-' || *q == '+')) eneg = *q++ == '-';
        while (q < end && (unsigned)(*q - '0') < 10) {
            if (e < 100000) e = e * 10 + (*q - '0');
            q++;
            edig++;
        }
        if (!edig) return GNN_EFORMAT;
        exp10 += eneg ? -e : e;
        p = q;
    }
    if (any && m < ((uint64_t)1 << 53) && exp10 >= -22 && exp10 <= 22) {
        /* Exact operands: one correctly rounded operation, as strtod. */
        double x = (double)m;
        x = exp10 < 0 ? x / pow10_exact[-exp10] : x * pow10_exact[exp10];
        *v = neg ? -x : x;
        *pp = p;
        return 0;
    }
    /* Long mantissas, large exponents, nan, inf: the C library. */
    char tmp[128];
    size_t n = (size_t)(end - tok) < sizeof tmp - 1 ? (size_t)(end - tok) : sizeof tmp - 1;
    memcpy(tmp, tok, n);
    tmp[n] = '\0';
    char *stop;
    errno = 0;
    double x = strtod(tmp, &stop);
    if (stop == tmp) return GNN_EFORMAT;
    if (errno == ERANGE && isinf(x)) return GNN_ERANGE;
    *v = x;
    *pp = tok + (stop - tmp);
    return 0;
}

int gnn_parse_f32(const char **pp, const char *end, float *v)
{
    double x;
    int rc = gnn_parse_f64(pp, end, &x);
    if (rc) return rc;
    if (isfinite(x) && fabs(x) > 3.4028234663852886e38) return GNN_ERANGE;
    *v = (float)x;
    return 0;
}
