/*
 * NumPy .npz reader: a minimal zip reader (central directory, zip64, STORED
 * and DEFLATED members) and an npy header parser, streaming on zlib.
 *
 * Layout of a handle's read path: the member's compressed bytes come into
 * zs.next_in / zs.avail_in, either as a window of the caller's memory (open
 * from memory) or a 1 MiB buffer filled by pread (open from a file); STORED
 * members are copied out of it (large reads go straight from the file into
 * the caller's buffer), DEFLATED members are inflated into the caller's
 * buffer in 256 KiB pieces whose CRC-32 is taken while they are hot in
 * cache. Reads that convert types go through a 64 KiB staging buffer.
 *
 * Invariants of an array handle:
 *   - upos is the number of uncompressed member bytes produced so far (npy
 *     header included); the element cursor is (upos - hdr) / itemsize;
 *   - loaded counts the compressed bytes brought into the input window, so
 *     loaded - zs.avail_in have been consumed; loaded <= csize;
 *   - crc covers member bytes [0, upos) whenever crc_on is set; a STORED
 *     jump clears crc_on (a seek back to element 0 restores it from the
 *     CRC of the header, crc_hdr);
 *   - every check at the end of the member (exact size, CRC) runs once, when
 *     upos reaches usize;
 *   - failed holds the code of the first error after which the stream state
 *     is unknown; every later call returns it.
 */
#include "datasets/npz.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npz.c hands out little-endian array data as host values"
#endif

enum {
    IN_SIZE = 1 << 20,       /* file input buffer */
    STAGE_SIZE = 1 << 16,    /* conversion / skip / header buffer */
    INFLATE_PIECE = 1 << 18, /* output per inflate call (CRC in cache) */
    DIRECT_PIECE = 8 << 20,  /* STORED reads straight into the caller */
    MAX_HEADER = STAGE_SIZE, /* npy header dict */
    EOCD_SIZE = 22,
    EOCD64_SIZE = 56,
    LOCATOR_SIZE = 20,
    CENTRAL_SIZE = 46,
    LOCAL_SIZE = 30,
    METHOD_STORED = 0,
    METHOD_DEFLATED = 8
};

#define MAX_CENTRAL_DIR ((uint64_t)64 << 20)
#define MEM_PIECE ((uint64_t)1 << 30) /* input window over memory (uInt) */

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u

typedef struct {
    const char *name; /* NUL-terminated, in the archive's pool */
    uint64_t local_off, csize, usize;
    uint32_t crc;
    uint16_t method, flags;
} member_t;

struct gnn_npz {
    int fd;             /* -1 for memory */
    const uint8_t *mem; /* NULL for a file */
    uint64_t size;
    int64_t count;
    member_t *m;
    char *pool;
    char name[]; /* path or caller's name */
};

struct gnn_npz_array {
    gnn_npz_info_t info;
    const char *zname, *mname; /* archive and member names, in names[] */
    int fd;
    const uint8_t *mem;
    uint64_t data_off; /* archive offset of the member's data */
    uint64_t csize, usize;
    uint64_t hdr;    /* npy prefix + header dict bytes */
    uint64_t upos;   /* uncompressed bytes produced */
    uint64_t loaded; /* compressed bytes brought into the window */
    uint32_t crc_want, crc, crc_hdr;
    int crc_on;
    int method;
    int z_init, z_end;
    int failed;
    z_stream zs;
    uint8_t *inbuf; /* IN_SIZE bytes, file only */
    uint8_t *stage; /* STAGE_SIZE bytes */
    char names[];
};

/* ---- Small helpers --------------------------------------------------- */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* Read up to n bytes at off; *got < n only at the end of the file.
 * Returns 0 or an errno value. */
static int pread_full(int fd, void *buf, size_t n, uint64_t off, size_t *got)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            *got = done;
            return errno ? errno : EIO;
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    *got = done;
    return 0;
}

static uLong crc_update(uLong crc, const uint8_t *p, uint64_t n)
{
    while (n > 0) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = crc32(crc, p, k);
        p += k;
        n -= k;
    }
    return crc;
}

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    (void)opaque;
    return gnn_malloc_array(items, size);
}

static void z_free(voidpf opaque, voidpf p)
{
    (void)opaque;
    gnn_free(p);
}

const char *gnn_npz_dtype_name(gnn_npz_dtype_t t)
{
    switch (t) {
    case GNN_NPZ_BOOL: return "bool";
    case GNN_NPZ_I8: return "int8";
    case GNN_NPZ_U8: return "uint8";
    case GNN_NPZ_I16: return "int16";
    case GNN_NPZ_U16: return "uint16";
    case GNN_NPZ_I32: return "int32";
    case GNN_NPZ_U32: return "uint32";
    case GNN_NPZ_I64: return "int64";
    case GNN_NPZ_U64: return "uint64";
    case GNN_NPZ_F32: return "float32";
    case GNN_NPZ_F64: return "float64";
    }
    return "?";
}

/* ---- Archive: central directory ------------------------------------- */

/* Copy bytes [off, off + n) of the archive, which the caller has checked
 * lie in it, into buf. */
static int archive_read(const gnn_npz_t *z, uint64_t off, void *buf, size_t n)
{
    if (z->mem) {
        memcpy(buf, z->mem + off, n);
        return 0;
    }
    size_t got;
    int e = pread_full(z->fd, buf, n, off, &got);
    if (e) return GNN_FAIL(GNN_EIO, "%s: read error: %s", z->name, strerror(e));
    if (got < n)
        return GNN_FAIL(GNN_EFORMAT, "%s: truncated zip archive (file shrank while reading)",
                        z->name);
    return 0;
}

/* Bytes [off, off + n) of the archive, which the caller has checked lie in
 * it: a pointer into memory, or a buffer read from the file that *own
 * holds (caller frees). */
static int archive_bytes(const gnn_npz_t *z, uint64_t off, size_t n, const uint8_t **p,
                         uint8_t **own)
{
    *own = NULL;
    if (z->mem) {
        *p = z->mem + off;
        return 0;
    }
    uint8_t *b = gnn_malloc(n);
    if (!b)
        return GNN_FAIL(GNN_ENOMEM, "%s: out of memory reading %zu bytes of the zip directory",
                        z->name, n);
    int rc = archive_read(z, off, b, n);
    if (rc < 0) {
        gnn_free(b);
        return rc;
    }
    *p = b;
    *own = b;
    return 0;
}

/* Zip64 extended information of a central header: the 64-bit values of the
 * fields saturated in the 32-bit header, in the order the format fixes. */
static int parse_zip64_extra(const gnn_npz_t *z, const uint8_t *x, size_t xlen, member_t *m,
                             uint32_t usize32, uint32_t csize32, uint32_t off32, uint16_t disk16,
                             const char *mname)
{
    int rc = 0;
    size_t q = 0;
    while (q + 4 <= xlen) {
        uint16_t id = rd16(x + q), len = rd16(x + q + 2);
        GNN_CHECK(q + 4 + len <= xlen, GNN_EFORMAT,
                  "%s: member '%s': extra field overruns its central header", z->name, mname);
        if (id == 0x0001) {
            const uint8_t *d = x + q + 4;
            size_t need = 0;
            need += usize32 == 0xFFFFFFFFu ? 8 : 0;
            need += csize32 == 0xFFFFFFFFu ? 8 : 0;
            need += off32 == 0xFFFFFFFFu ? 8 : 0;
            need += disk16 == 0xFFFFu ? 4 : 0;
            GNN_CHECK(len >= need, GNN_EFORMAT,
                      "%s: member '%s': zip64 extra field holds %u bytes, needs %zu", z->name,
                      mname, (unsigned)len, need);
            if (usize32 == 0xFFFFFFFFu) {
                m->usize = rd64(d);
                d += 8;
            }
            if (csize32 == 0xFFFFFFFFu) {
                m->csize = rd64(d);
                d += 8;
            }
            if (off32 == 0xFFFFFFFFu) m->local_off = rd64(d);
            return 0;
        }
        q += 4 + (size_t)len;
    }
    return 0;
fail:
    return rc;
}

/* Parse the n members of the central directory cd[0, cd_size). */
static int parse_central(gnn_npz_t *z, const uint8_t *cd, uint64_t cd_size, uint64_t n)
{
    int rc = 0;
    z->m = gnn_calloc(n ? n : 1, sizeof *z->m);
    GNN_CHECK(z->m, GNN_ENOMEM, "%s: out of memory for %" PRIu64 " zip members", z->name, n);
    z->pool = gnn_malloc(cd_size + 1);
    GNN_CHECK(z->pool, GNN_ENOMEM, "%s: out of memory for the member names", z->name);
    char *names = z->pool;
    uint64_t q = 0;
    for (uint64_t i = 0; i < n; i++) {
        GNN_CHECK(cd_size - q >= CENTRAL_SIZE && rd32(cd + q) == SIG_CENTRAL, GNN_EFORMAT,
                  "%s: corrupt zip central directory (entry %" PRIu64 " of %" PRIu64
                  " is not a central file header)",
                  z->name, i + 1, n);
        const uint8_t *h = cd + q;
        uint16_t nlen = rd16(h + 28), xlen = rd16(h + 30), clen = rd16(h + 32);
        GNN_CHECK(cd_size - q - CENTRAL_SIZE >= (uint64_t)nlen + xlen + clen, GNN_EFORMAT,
                  "%s: corrupt zip central directory (entry %" PRIu64 " overruns it)", z->name,
                  i + 1);
        member_t *m = &z->m[i];
        memcpy(names, h + CENTRAL_SIZE, nlen);
        names[nlen] = '\0';
        m->name = names;
        names += nlen + 1;
        m->flags = rd16(h + 8);
        m->method = rd16(h + 10);
        m->crc = rd32(h + 16);
        m->csize = rd32(h + 20);
        m->usize = rd32(h + 24);
        m->local_off = rd32(h + 42);
        GNN_TRY(parse_zip64_extra(z, h + CENTRAL_SIZE + nlen, xlen, m, rd32(h + 24), rd32(h + 20),
                                  rd32(h + 42), rd16(h + 34), m->name));
        q += CENTRAL_SIZE + (uint64_t)nlen + xlen + clen;
    }
    z->count = (int64_t)n;
    return 0;
fail:
    return rc;
}

/* Find the end-of-central-directory record (and the zip64 one) and parse
 * the central directory. */
static int read_directory(gnn_npz_t *z)
{
    int rc = 0;
    uint8_t *own = NULL, *own_cd = NULL;
    const uint8_t *tail = NULL, *cd = NULL; /* set by archive_bytes (-O3 cannot tell) */
    uint8_t head[4] = {0}, l[LOCATOR_SIZE] = {0}, e64[EOCD64_SIZE];

    if (z->size >= 4) GNN_TRY(archive_read(z, 0, head, 4));
    int looks_zip = rd32(head) == SIG_LOCAL;

    size_t tail_n = z->size < EOCD_SIZE + 0xFFFFu ? (size_t)z->size : EOCD_SIZE + 0xFFFFu;
    GNN_CHECK(tail_n >= EOCD_SIZE, GNN_EFORMAT, "%s: %s", z->name,
              looks_zip ? "truncated zip archive (no end of central directory record)"
                        : "not a zip archive (an npz file is one)");
    uint64_t tail_off = z->size - tail_n;
    GNN_TRY(archive_bytes(z, tail_off, tail_n, &tail, &own));
    size_t at = SIZE_MAX;
    for (size_t i = tail_n - EOCD_SIZE + 1; i-- > 0;) {
        if (rd32(tail + i) == SIG_EOCD && i + EOCD_SIZE + rd16(tail + i + 20) <= tail_n) {
            at = i;
            break;
        }
    }
    GNN_CHECK(at != SIZE_MAX, GNN_EFORMAT, "%s: %s", z->name,
              looks_zip ? "truncated zip archive (no end of central directory record)"
                        : "not a zip archive (an npz file is one)");
    const uint8_t *e = tail + at;
    uint64_t eocd_pos = tail_off + at;
    uint64_t disk = rd16(e + 4), cd_disk = rd16(e + 6);
    uint64_t n_disk = rd16(e + 8), n = rd16(e + 10);
    uint64_t cd_size = rd32(e + 12), cd_off = rd32(e + 16);
    uint64_t cd_limit = eocd_pos; /* the directory ends before this */

    if (eocd_pos >= LOCATOR_SIZE)
        GNN_TRY(archive_read(z, eocd_pos - LOCATOR_SIZE, l, LOCATOR_SIZE));
    if (rd32(l) == SIG_LOCATOR) {
        uint64_t off64 = rd64(l + 8);
        GNN_CHECK(rd32(l + 4) == 0 && rd32(l + 16) <= 1, GNN_EUNSUPPORTED,
                  "%s: multi-disk zip archives are not supported", z->name);
        GNN_CHECK(off64 <= eocd_pos - LOCATOR_SIZE &&
                      eocd_pos - LOCATOR_SIZE - off64 >= EOCD64_SIZE,
                  GNN_EFORMAT, "%s: corrupt zip64 end of central directory locator", z->name);
        GNN_TRY(archive_read(z, off64, e64, EOCD64_SIZE));
        GNN_CHECK(rd32(e64) == SIG_EOCD64, GNN_EFORMAT,
                  "%s: zip64 end of central directory record not found where its locator "
                  "points",
                  z->name);
        disk = rd32(e64 + 16);
        cd_disk = rd32(e64 + 20);
        n_disk = rd64(e64 + 24);
        n = rd64(e64 + 32);
        cd_size = rd64(e64 + 40);
        cd_off = rd64(e64 + 48);
        cd_limit = off64;
    }
    GNN_CHECK(disk == 0 && cd_disk == 0 && n_disk == n, GNN_EUNSUPPORTED,
              "%s: multi-disk zip archives are not supported", z->name);
    GNN_CHECK(cd_off <= cd_limit && cd_size <= cd_limit - cd_off, GNN_EFORMAT,
              "%s: truncated zip archive or corrupt end record (central directory at %" PRIu64
              "+%" PRIu64 " runs past offset %" PRIu64 ")",
              z->name, cd_off, cd_size, cd_limit);
    GNN_CHECK(n <= cd_size / CENTRAL_SIZE, GNN_EFORMAT,
              "%s: corrupt zip end record (%" PRIu64
              " members cannot fit a central directory of %" PRIu64 " bytes)",
              z->name, n, cd_size);
    GNN_CHECK(cd_size <= MAX_CENTRAL_DIR, GNN_EUNSUPPORTED,
              "%s: zip central directory of %" PRIu64 " bytes exceeds the %" PRIu64 " MiB limit",
              z->name, cd_size, MAX_CENTRAL_DIR >> 20);
    if (cd_size > 0)
        GNN_TRY(archive_bytes(z, cd_off, (size_t)cd_size, &cd, &own_cd));
    else
        cd = (const uint8_t *)"";
    GNN_TRY(parse_central(z, cd, cd_size, n));
fail:
    gnn_free(own);
    gnn_free(own_cd);
    return rc;
}

static int archive_new(const char *name, gnn_npz_t **out)
{
    size_t len = strlen(name);
    gnn_npz_t *z = gnn_malloc(sizeof *z + len + 1);
    if (!z) return GNN_FAIL(GNN_ENOMEM, "%s: out of memory opening the archive", name);
    memset(z, 0, sizeof *z);
    z->fd = -1;
    memcpy(z->name, name, len + 1);
    *out = z;
    return 0;
}

int gnn_npz_open(const char *path, gnn_npz_t **out)
{
    int rc = 0;
    gnn_npz_t *z = NULL;
    *out = NULL;
    GNN_CHECK(path, GNN_EINVAL, "gnn_npz_open: no path");
    GNN_TRY(archive_new(path, &z));
    z->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (z->fd < 0) {
        int e = errno;
        GNN_CHECK(e != ENOENT, GNN_ENOENT, "%s: no such file", path);
        GNN_CHECK(0, GNN_EIO, "%s: cannot open: %s", path, strerror(e));
    }
    struct stat st;
    GNN_CHECK(fstat(z->fd, &st) == 0, GNN_EIO, "%s: cannot stat: %s", path, strerror(errno));
    GNN_CHECK(S_ISREG(st.st_mode), GNN_EIO, "%s: not a regular file", path);
    z->size = (uint64_t)st.st_size;
    GNN_TRY(read_directory(z));
    *out = z;
    return 0;
fail:
    gnn_npz_close(z);
    return rc;
}

int gnn_npz_open_mem(const void *data, size_t size, const char *name, gnn_npz_t **out)
{
    int rc = 0;
    gnn_npz_t *z = NULL;
    *out = NULL;
    if (!name) name = "(memory)";
    GNN_CHECK(data || size == 0, GNN_EINVAL, "%s: no data", name);
    GNN_TRY(archive_new(name, &z));
    z->mem = data ? data : (const uint8_t *)"";
    z->size = size;
    GNN_TRY(read_directory(z));
    *out = z;
    return 0;
fail:
    gnn_npz_close(z);
    return rc;
}

void gnn_npz_close(gnn_npz_t *z)
{
    if (!z) return;
    if (z->fd >= 0) close(z->fd);
    gnn_free(z->m);
    gnn_free(z->pool);
    gnn_free(z);
}

const char *gnn_npz_name(const gnn_npz_t *z) { return z->name; }
int64_t gnn_npz_count(const gnn_npz_t *z) { return z->count; }

const char *gnn_npz_member(const gnn_npz_t *z, int64_t i)
{
    return i >= 0 && i < z->count ? z->m[i].name : NULL;
}

/* The member called exactly name + suffix (the last one, as numpy picks). */
static const member_t *find_exact(const gnn_npz_t *z, const char *name, const char *suffix)
{
    size_t nl = strlen(name);
    for (int64_t i = z->count; i-- > 0;) {
        const char *s = z->m[i].name;
        if (strncmp(s, name, nl) == 0 && strcmp(s + nl, suffix) == 0) return &z->m[i];
    }
    return NULL;
}

static const member_t *find_member(const gnn_npz_t *z, const char *name)
{
    const member_t *m = find_exact(z, name, ".npy");
    return m ? m : find_exact(z, name, "");
}

int gnn_npz_has(const gnn_npz_t *z, const char *name) { return find_member(z, name) != NULL; }

/* Record GNN_EINVAL for an absent member, listing those present. */
static int fail_absent(const gnn_npz_t *z, const char *name)
{
    char list[512];
    size_t len = 0;
    list[0] = '\0';
    for (int64_t i = 0; i < z->count; i++) {
        const char *s = z->m[i].name;
        size_t sl = strlen(s);
        if (sl > 4 && strcmp(s + sl - 4, ".npy") == 0) sl -= 4;
        if (len + sl + 8 >= sizeof list) {
            snprintf(list + len, sizeof list - len, "%s...", i ? ", " : "");
            break;
        }
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%.*s", i ? ", " : "", (int)sl, s);
    }
    if (z->count == 0)
        return GNN_FAIL(GNN_EINVAL, "%s: no member '%s' (the archive is empty)", z->name, name);
    return GNN_FAIL(GNN_EINVAL, "%s: no member '%s' (members: %s)", z->name, name, list);
}

/* ---- Array: member stream ------------------------------------------- */

#define AFAIL(a, code, ...) afail((a), (code), __FILE__, __LINE__, __VA_ARGS__)

/* Record code as "ARCHIVE: member 'NAME': message". */
static int afail(const gnn_npz_array_t *a, int code, const char *file, int line, const char *fmt,
                 ...) __attribute__((format(printf, 5, 6)));
static int afail(const gnn_npz_array_t *a, int code, const char *file, int line, const char *fmt,
                 ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return gnn__error_set(code, file, line, "%s: member '%s': %s", a->zname, a->mname, msg);
}

static int fail_truncated(const gnn_npz_array_t *a, const char *how)
{
    return gnn__error_set(GNN_EFORMAT, __FILE__, __LINE__, "%s: member '%s' is truncated (%s)",
                          a->zname, a->mname, how);
}

/* Bring the next compressed bytes into the input window (none when the
 * member's compressed data is used up). */
static int refill(gnn_npz_array_t *a)
{
    uint64_t left = a->csize - a->loaded;
    a->zs.avail_in = 0;
    if (left == 0) return 0;
    if (a->mem) {
        uint64_t k = left < MEM_PIECE ? left : MEM_PIECE;
        a->zs.next_in = (Bytef *)(uintptr_t)(a->mem + a->data_off + a->loaded);
        a->zs.avail_in = (uInt)k;
        a->loaded += k;
        return 0;
    }
    size_t k = left < IN_SIZE ? (size_t)left : IN_SIZE, got;
    int e = pread_full(a->fd, a->inbuf, k, a->data_off + a->loaded, &got);
    if (e) return AFAIL(a, GNN_EIO, "read error: %s", strerror(e));
    if (got < k) return fail_truncated(a, "the archive file ends inside it");
    a->zs.next_in = a->inbuf;
    a->zs.avail_in = (uInt)k;
    a->loaded += k;
    return 0;
}

static int inflate_error(const gnn_npz_array_t *a, int zr)
{
    if (zr == Z_MEM_ERROR) return AFAIL(a, GNN_ENOMEM, "out of memory inflating");
    if (zr == Z_DATA_ERROR || zr == Z_NEED_DICT)
        return AFAIL(a, GNN_EFORMAT, "corrupt deflate data (%s)",
                     a->zs.msg ? a->zs.msg : "needs a dictionary");
    return AFAIL(a, GNN_EINTERNAL, "inflate returned %d", zr);
}

/* One inflate step into out[0, cap): *made bytes produced. Truncation (no
 * input left, stream not ended) is an error. */
static int inflate_step(gnn_npz_array_t *a, uint8_t *out, size_t cap, size_t *made)
{
    int rc = 0;
    if (a->zs.avail_in == 0) GNN_TRY(refill(a));
    a->zs.next_out = out;
    a->zs.avail_out = (uInt)cap;
    int zr = inflate(&a->zs, Z_NO_FLUSH);
    *made = cap - a->zs.avail_out;
    if (zr == Z_STREAM_END) {
        a->z_end = 1;
        return 0;
    }
    if (zr == Z_OK && *made > 0) return 0;
    if ((zr == Z_OK || zr == Z_BUF_ERROR) && a->zs.avail_in == 0) {
        if (a->loaded == a->csize) return fail_truncated(a, "its deflate stream is cut short");
        return 0; /* consumed the window without output: refill next time */
    }
    if (zr == Z_OK) return 0;
    return inflate_error(a, zr);
fail:
    return rc;
}

/* Checks once the member has been produced to its declared end: nothing
 * more in the deflate stream, and the CRC-32 when it covers everything. */
static int member_finish(gnn_npz_array_t *a)
{
    int rc = 0;
    while (a->method == METHOD_DEFLATED && !a->z_end) {
        uint8_t extra;
        size_t made;
        GNN_TRY(inflate_step(a, &extra, 1, &made));
        if (made)
            return AFAIL(a, GNN_EFORMAT, "holds more than its declared %" PRIu64 " bytes",
                         a->usize);
    }
    if (a->crc_on && a->crc != a->crc_want)
        return AFAIL(a, GNN_EFORMAT,
                     "CRC-32 mismatch (stored %08" PRIx32 ", computed %08" PRIx32
                     "): the data is corrupt",
                     a->crc_want, a->crc);
    return 0;
fail:
    return rc;
}

/* Produce the next n uncompressed bytes of the member into dst; the caller
 * has checked upos + n <= usize. */
static int member_read(gnn_npz_array_t *a, uint8_t *dst, uint64_t n)
{
    int rc = 0;
    while (n > 0) {
        size_t k;
        if (a->method == METHOD_STORED) {
            if (a->zs.avail_in == 0 && !a->mem && n >= DIRECT_PIECE) {
                k = DIRECT_PIECE;
                size_t got;
                int e = pread_full(a->fd, dst, k, a->data_off + a->loaded, &got);
                if (e) return AFAIL(a, GNN_EIO, "read error: %s", strerror(e));
                if (got < k) return fail_truncated(a, "the archive file ends inside it");
                a->loaded += k;
            } else {
                if (a->zs.avail_in == 0) GNN_TRY(refill(a));
                if (a->zs.avail_in == 0) return fail_truncated(a, "its data ends early");
                k = n < a->zs.avail_in ? (size_t)n : a->zs.avail_in;
                memcpy(dst, a->zs.next_in, k);
                a->zs.next_in += k;
                a->zs.avail_in -= (uInt)k;
            }
        } else {
            if (a->z_end)
                return fail_truncated(a, "its deflate stream ends before the declared size");
            GNN_TRY(inflate_step(a, dst, n < INFLATE_PIECE ? (size_t)n : INFLATE_PIECE, &k));
        }
        if (a->crc_on) a->crc = (uint32_t)crc_update(a->crc, dst, k);
        dst += k;
        n -= k;
        a->upos += k;
    }
    if (a->upos == a->usize) GNN_TRY(member_finish(a));
    return 0;
fail:
    return rc;
}

/* Produce and discard n bytes (CRC kept). */
static int member_skip(gnn_npz_array_t *a, uint64_t n)
{
    int rc = 0;
    while (n > 0) {
        uint64_t k = n < STAGE_SIZE ? n : STAGE_SIZE;
        GNN_TRY(member_read(a, a->stage, k));
        n -= k;
    }
    return 0;
fail:
    return rc;
}

/* Back to the first byte of the member. */
static int member_restart(gnn_npz_array_t *a)
{
    a->upos = 0;
    a->loaded = 0;
    a->zs.avail_in = 0;
    a->crc = 0;
    a->crc_on = 1;
    if (a->method == METHOD_DEFLATED) {
        a->z_end = 0;
        if (inflateReset(&a->zs) != Z_OK) return AFAIL(a, GNN_EINTERNAL, "inflateReset failed");
    }
    return 0;
}

/* ---- Array: npy header ---------------------------------------------- */

typedef struct {
    const char *p, *end;
} cursor_t;

static void skip_ws(cursor_t *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

/* A quoted Python string literal (no escapes); [*s, *s + *len). */
static int parse_str(cursor_t *c, const char **s, size_t *len)
{
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
    char q = *c->p++;
    const char *b = c->p;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return -1;
        c->p++;
    }
    if (c->p >= c->end) return -1;
    *s = b;
    *len = (size_t)(c->p - b);
    c->p++;
    return 0;
}

static int parse_word(cursor_t *c, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0) return -1;
    c->p += n;
    return 0;
}

/* Map a descr string to a dtype; 0 on success, else the GNN_E* code with
 * the reason in why. */
static int parse_descr(const char *s, size_t len, gnn_npz_info_t *in, const char **why)
{
    static const struct {
        char kind;
        int size;
        gnn_npz_dtype_t t;
    } map[] = {{'b', 1, GNN_NPZ_BOOL}, {'i', 1, GNN_NPZ_I8},  {'u', 1, GNN_NPZ_U8},
               {'i', 2, GNN_NPZ_I16},  {'u', 2, GNN_NPZ_U16}, {'i', 4, GNN_NPZ_I32},
               {'u', 4, GNN_NPZ_U32},  {'i', 8, GNN_NPZ_I64}, {'u', 8, GNN_NPZ_U64},
               {'f', 4, GNN_NPZ_F32},  {'f', 8, GNN_NPZ_F64}};
    *why = "is not supported (supported: bool, int8-64, uint8-64, float32, float64)";
    if (len < 3 || len > 4) return GNN_EUNSUPPORTED;
    char order = s[0], kind = s[1];
    int size = 0;
    for (size_t i = 2; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return GNN_EUNSUPPORTED;
        size = size * 10 + (s[i] - '0');
    }
    if (order != '<' && order != '>' && order != '|' && order != '=') return GNN_EUNSUPPORTED;
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (map[i].kind != kind || map[i].size != size) continue;
        if (size > 1 && order == '>') {
            *why = "is big-endian (only little-endian arrays are supported)";
            return GNN_EUNSUPPORTED;
        }
        if (size > 1 && order == '|') {
            *why = "has no byte order for a multi-byte type";
            return GNN_EUNSUPPORTED;
        }
        in->dtype = map[i].t;
        in->itemsize = size;
        memcpy(in->descr, s, len);
        in->descr[len] = '\0';
        return 0;
    }
    if (kind == 'O') *why = "is an object array (pickled Python objects are not supported)";
    return GNN_EUNSUPPORTED;
}

/* A shape tuple: "()", "(5,)", "(2, 3)", "(2, 3,)"; Python 2's "3L" too. */
static int parse_shape(gnn_npz_array_t *a, cursor_t *c)
{
    gnn_npz_info_t *in = &a->info;
    if (c->p >= c->end || *c->p != '(')
        return AFAIL(a, GNN_EFORMAT, "malformed npy header: 'shape' is not a tuple");
    c->p++;
    skip_ws(c);
    in->ndim = 0;
    int commas = 0;
    while (c->p < c->end && *c->p != ')') {
        if (*c->p < '0' || *c->p > '9')
            return AFAIL(a, GNN_EFORMAT, "malformed npy header: bad dimension in 'shape'");
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return AFAIL(a, GNN_EFORMAT, "malformed npy header: dimension too large");
            v = v * 10 + (*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') c->p++;
        if (in->ndim == GNN_NPZ_MAX_DIMS)
            return AFAIL(a, GNN_EUNSUPPORTED, "arrays of more than %d dimensions are not supported",
                         GNN_NPZ_MAX_DIMS);
        in->shape[in->ndim++] = v;
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') {
            commas++;
            c->p++;
            skip_ws(c);
        } else if (c->p < c->end && *c->p != ')') {
            return AFAIL(a, GNN_EFORMAT, "malformed npy header: bad 'shape' tuple");
        }
    }
    if (c->p >= c->end)
        return AFAIL(a, GNN_EFORMAT, "malformed npy header: unterminated 'shape' tuple");
    c->p++;
    if (in->ndim == 1 && commas == 0)
        return AFAIL(a, GNN_EFORMAT, "malformed npy header: 'shape' is not a tuple");
    return 0;
}

/* The header dict: {'descr': '<i8', 'fortran_order': False, 'shape': (2, 3), } */
static int parse_dict(gnn_npz_array_t *a, const char *text, size_t len)
{
    int rc = 0;
    cursor_t c = {text, text + len};
    int seen_descr = 0, seen_fortran = 0, seen_shape = 0, fortran = 0;
    skip_ws(&c);
    GNN_CHECK(c.p < c.end && *c.p == '{', GNN_EFORMAT, "%s: member '%s': %s", a->zname, a->mname,
              "malformed npy header: not a dict");
    c.p++;
    for (;;) {
        skip_ws(&c);
        if (c.p < c.end && *c.p == '}') break;
        const char *k;
        size_t kl;
        GNN_CHECK(parse_str(&c, &k, &kl) == 0, GNN_EFORMAT, "%s: member '%s': %s", a->zname,
                  a->mname, "malformed npy header: expected a quoted key");
        skip_ws(&c);
        GNN_CHECK(c.p < c.end && *c.p == ':', GNN_EFORMAT, "%s: member '%s': %s", a->zname,
                  a->mname, "malformed npy header: expected ':'");
        c.p++;
        skip_ws(&c);
        if (kl == 5 && memcmp(k, "descr", 5) == 0 && !seen_descr) {
            const char *s;
            size_t sl;
            const char *why;
            GNN_CHECK(c.p >= c.end || *c.p != '[', GNN_EUNSUPPORTED, "%s: member '%s': %s",
                      a->zname, a->mname, "structured dtypes are not supported");
            GNN_CHECK(parse_str(&c, &s, &sl) == 0, GNN_EFORMAT, "%s: member '%s': %s", a->zname,
                      a->mname, "malformed npy header: 'descr' is not a string");
            rc = parse_descr(s, sl, &a->info, &why);
            GNN_CHECK(rc == 0, rc, "%s: member '%s': dtype '%.*s' %s", a->zname, a->mname,
                      (int)(sl < 32 ? sl : 32), s, why);
            seen_descr = 1;
        } else if (kl == 13 && memcmp(k, "fortran_order", 13) == 0 && !seen_fortran) {
            if (parse_word(&c, "True") == 0)
                fortran = 1;
            else
                GNN_CHECK(parse_word(&c, "False") == 0, GNN_EFORMAT, "%s: member '%s': %s",
                          a->zname, a->mname,
                          "malformed npy header: 'fortran_order' is not True or False");
            seen_fortran = 1;
        } else if (kl == 5 && memcmp(k, "shape", 5) == 0 && !seen_shape) {
            GNN_TRY(parse_shape(a, &c));
            seen_shape = 1;
        } else {
            GNN_CHECK(0, GNN_EFORMAT, "%s: member '%s': malformed npy header: %s key '%.*s'",
                      a->zname, a->mname,
                      (kl == 5 && (!memcmp(k, "descr", 5) || !memcmp(k, "shape", 5))) ||
                              (kl == 13 && !memcmp(k, "fortran_order", 13))
                          ? "repeated"
                          : "unexpected",
                      (int)(kl < 32 ? kl : 32), k);
        }
        skip_ws(&c);
        if (c.p < c.end && *c.p == ',') {
            c.p++;
            continue;
        }
        GNN_CHECK(c.p < c.end && *c.p == '}', GNN_EFORMAT, "%s: member '%s': %s", a->zname,
                  a->mname, "malformed npy header: expected ',' or '}'");
        break;
    }
    c.p++;
    skip_ws(&c);
    while (c.p < c.end && *c.p == '\0') c.p++; /* some writers pad with NULs */
    GNN_CHECK(c.p == c.end, GNN_EFORMAT, "%s: member '%s': %s", a->zname, a->mname,
              "malformed npy header: text after the dict");
    GNN_CHECK(seen_descr && seen_fortran && seen_shape, GNN_EFORMAT,
              "%s: member '%s': malformed npy header: no '%s' key", a->zname, a->mname,
              !seen_descr     ? "descr"
              : !seen_fortran ? "fortran_order"
                              : "shape");
    GNN_CHECK(!fortran || a->info.ndim <= 1, GNN_EUNSUPPORTED, "%s: member '%s': %s", a->zname,
              a->mname, "fortran_order True is not supported (store the array in C order)");
    return 0;
fail:
    return rc;
}

/* Read and check the npy prefix and header; leaves the cursor at element 0. */
static int read_npy_header(gnn_npz_array_t *a)
{
    int rc = 0;
    uint8_t pre[12];
    GNN_CHECK(a->usize >= 10, GNN_EFORMAT, "%s: member '%s': %s", a->zname, a->mname,
              "not an npy array (too short for an npy header)");
    GNN_TRY(member_read(a, pre, 8));
    GNN_CHECK(memcmp(pre, "\x93NUMPY", 6) == 0, GNN_EFORMAT, "%s: member '%s': %s", a->zname,
              a->mname, "not an npy array (bad magic)");
    int major = pre[6], minor = pre[7];
    GNN_CHECK(major >= 1 && major <= 3, GNN_EVERSION,
              "%s: member '%s': npy format version %d.%d is not supported (1.0, 2.0, 3.0 are)",
              a->zname, a->mname, major, minor);
    size_t lenlen = major == 1 ? 2 : 4;
    GNN_CHECK(a->usize - 8 >= lenlen, GNN_EFORMAT, "%s: member '%s': %s", a->zname, a->mname,
              "not an npy array (too short for an npy header)");
    GNN_TRY(member_read(a, pre + 8, lenlen));
    uint64_t hlen = lenlen == 2 ? rd16(pre + 8) : rd32(pre + 8);
    GNN_CHECK(hlen <= MAX_HEADER, GNN_EFORMAT,
              "%s: member '%s': npy header of %" PRIu64 " bytes exceeds the %d KiB limit", a->zname,
              a->mname, hlen, MAX_HEADER >> 10);
    GNN_CHECK(hlen <= a->usize - a->upos, GNN_EFORMAT,
              "%s: member '%s': npy header of %" PRIu64 " bytes is longer than the member",
              a->zname, a->mname, hlen);
    GNN_TRY(member_read(a, a->stage, hlen));
    a->hdr = a->upos;
    a->crc_hdr = a->crc;
    GNN_TRY(parse_dict(a, (const char *)a->stage, (size_t)hlen));

    gnn_npz_info_t *in = &a->info;
    int64_t count = 1, bytes;
    int over = 0;
    for (int d = 0; d < in->ndim; d++) over |= __builtin_mul_overflow(count, in->shape[d], &count);
    over |= __builtin_mul_overflow(count, (int64_t)in->itemsize, &bytes);
    char shape[128];
    size_t sl = (size_t)snprintf(shape, sizeof shape, "(");
    for (int d = 0; d < in->ndim; d++)
        sl += (size_t)snprintf(shape + sl, sizeof shape - sl, "%s%" PRId64, d ? ", " : "",
                               in->shape[d]);
    snprintf(shape + sl, sizeof shape - sl, "%s)", in->ndim == 1 ? "," : "");
    GNN_CHECK(!over && (uint64_t)bytes == a->usize - a->hdr, GNN_EFORMAT,
              "%s: member '%s': shape %s of '%s' needs %s%" PRId64
              " data bytes but the member holds %" PRIu64,
              a->zname, a->mname, shape, in->descr, over ? "more than " : "",
              over ? INT64_MAX : bytes, a->usize - a->hdr);
    in->count = count;
    return 0;
fail:
    return rc;
}

/* ---- Array: open, read, seek ---------------------------------------- */

int gnn_npz_array_open(const gnn_npz_t *z, const char *name, gnn_npz_array_t **out)
{
    int rc = 0;
    gnn_npz_array_t *a = NULL;
    *out = NULL;
    GNN_CHECK(z && name, GNN_EINVAL, "gnn_npz_array_open: no archive or name");
    const member_t *m = find_member(z, name);
    if (!m) return fail_absent(z, name);

    size_t zl = strlen(z->name), ml = strlen(m->name);
    a = gnn_malloc(sizeof *a + zl + ml + 2);
    GNN_CHECK(a, GNN_ENOMEM, "%s: out of memory opening member '%s'", z->name, m->name);
    memset(a, 0, sizeof *a);
    a->fd = -1;
    memcpy(a->names, z->name, zl + 1);
    memcpy(a->names + zl + 1, m->name, ml + 1);
    a->zname = a->names;
    a->mname = a->names + zl + 1;
    a->mem = z->mem;
    a->csize = m->csize;
    a->usize = m->usize;
    a->crc_want = m->crc;
    a->crc_on = 1;
    a->method = m->method;

    GNN_CHECK(!(m->flags & 0x41), GNN_EUNSUPPORTED,
              "%s: member '%s' is encrypted (encrypted archives are not supported)", a->zname,
              a->mname);
    GNN_CHECK(m->method == METHOD_STORED || m->method == METHOD_DEFLATED, GNN_EUNSUPPORTED,
              "%s: member '%s': compression method %u is not supported (only STORED and "
              "DEFLATED are)",
              a->zname, a->mname, (unsigned)m->method);
    GNN_CHECK(m->method != METHOD_STORED || m->csize == m->usize, GNN_EFORMAT,
              "%s: member '%s': stored member with compressed size %" PRIu64 " and size %" PRIu64,
              a->zname, a->mname, m->csize, m->usize);

    a->stage = gnn_malloc(z->mem ? STAGE_SIZE : (size_t)STAGE_SIZE + IN_SIZE);
    GNN_CHECK(a->stage, GNN_ENOMEM, "%s: out of memory opening member '%s'", z->name, m->name);
    if (!z->mem) {
        a->inbuf = a->stage + STAGE_SIZE;
        a->fd = fcntl(z->fd, F_DUPFD_CLOEXEC, 0);
        GNN_CHECK(a->fd >= 0, GNN_EIO, "%s: cannot duplicate the file descriptor: %s", z->name,
                  strerror(errno));
    }

    /* Local header: its own name and extra field lengths place the data. */
    GNN_CHECK(m->local_off <= z->size && z->size - m->local_off >= LOCAL_SIZE, GNN_EFORMAT,
              "%s: member '%s' is truncated (its local header lies past the end of the "
              "archive)",
              a->zname, a->mname);
    const uint8_t *lh;
    if (z->mem) {
        lh = z->mem + m->local_off;
    } else {
        size_t got;
        int e = pread_full(a->fd, a->stage, LOCAL_SIZE, m->local_off, &got);
        GNN_CHECK(!e, GNN_EIO, "%s: read error: %s", a->zname, strerror(e));
        GNN_CHECK(got == LOCAL_SIZE, GNN_EFORMAT, "%s: member '%s' is truncated (%s)", a->zname,
                  a->mname, "the archive file ends inside its local header");
        lh = a->stage;
    }
    GNN_CHECK(rd32(lh) == SIG_LOCAL, GNN_EFORMAT, "%s: member '%s': %s", a->zname, a->mname,
              "no local file header where the central directory points");
    uint64_t nlen = rd16(lh + 26), xlen = rd16(lh + 28);
    a->data_off = m->local_off + LOCAL_SIZE + nlen + xlen;
    GNN_CHECK(a->data_off <= z->size && z->size - a->data_off >= a->csize, GNN_EFORMAT,
              "%s: member '%s' is truncated (its %" PRIu64
              " bytes of data run past the end of the archive)",
              a->zname, a->mname, a->csize);
    const uint8_t *lname;
    if (z->mem) {
        lname = z->mem + m->local_off + LOCAL_SIZE;
    } else {
        size_t got;
        int e = pread_full(a->fd, a->stage, (size_t)nlen, m->local_off + LOCAL_SIZE, &got);
        GNN_CHECK(!e, GNN_EIO, "%s: read error: %s", a->zname, strerror(e));
        GNN_CHECK(got == nlen, GNN_EFORMAT, "%s: member '%s' is truncated (%s)", a->zname, a->mname,
                  "the archive file ends inside its local header");
        lname = a->stage;
    }
    GNN_CHECK(nlen == ml && memcmp(lname, a->mname, ml) == 0, GNN_EFORMAT, "%s: member '%s': %s",
              a->zname, a->mname,
              "its local header names a different file than the central directory");

    if (a->method == METHOD_DEFLATED) {
        a->zs.zalloc = z_alloc;
        a->zs.zfree = z_free;
        int zr = inflateInit2(&a->zs, -MAX_WBITS);
        GNN_CHECK(zr == Z_OK, zr == Z_MEM_ERROR ? GNN_ENOMEM : GNN_EINTERNAL,
                  "%s: member '%s': inflateInit2 failed (%d)", a->zname, a->mname, zr);
        a->z_init = 1;
    }
    GNN_TRY(read_npy_header(a));
    *out = a;
    return 0;
fail:
    gnn_npz_array_close(a);
    return rc;
}

void gnn_npz_array_close(gnn_npz_array_t *a)
{
    if (!a) return;
    if (a->z_init) inflateEnd(&a->zs);
    if (a->fd >= 0) close(a->fd);
    gnn_free(a->stage);
    gnn_free(a);
}

const gnn_npz_info_t *gnn_npz_array_info(const gnn_npz_array_t *a) { return &a->info; }
const char *gnn_npz_array_member(const gnn_npz_array_t *a) { return a->mname; }

int64_t gnn_npz_array_tell(const gnn_npz_array_t *a)
{
    return (int64_t)((a->upos - a->hdr) / (uint64_t)a->info.itemsize);
}

enum { TO_RAW, TO_I64, TO_F32, TO_F64 };

/* load_T(src, i): element i of src as type T, whatever src's alignment. */
#define DEFINE_LOAD(T)                                                                             \
    static inline T load_##T(const uint8_t *src, size_t i)                                         \
    {                                                                                              \
        T v;                                                                                       \
        memcpy(&v, src + i * sizeof v, sizeof v);                                                  \
        return v;                                                                                  \
    }
DEFINE_LOAD(int8_t)
DEFINE_LOAD(uint8_t)
DEFINE_LOAD(int16_t)
DEFINE_LOAD(uint16_t)
DEFINE_LOAD(int32_t)
DEFINE_LOAD(uint32_t)
DEFINE_LOAD(int64_t)
DEFINE_LOAD(uint64_t)
DEFINE_LOAD(float)
DEFINE_LOAD(double)
#define LOAD(T, src, i) load_##T((src), (i))

/* name(t, src, o, k): convert k stored elements at src to OUT (float or
 * double), each straight from its stored type (rounded once). */
#define DEFINE_TO_REAL(name, OUT)                                                                  \
    static void name(gnn_npz_dtype_t t, const uint8_t *src, OUT *o, size_t k)                      \
    {                                                                                              \
        switch (t) {                                                                               \
            TO_REAL_CASE(GNN_NPZ_I8, int8_t, OUT)                                                  \
            TO_REAL_CASE(GNN_NPZ_U8, uint8_t, OUT)                                                 \
            TO_REAL_CASE(GNN_NPZ_I16, int16_t, OUT)                                                \
            TO_REAL_CASE(GNN_NPZ_U16, uint16_t, OUT)                                               \
            TO_REAL_CASE(GNN_NPZ_I32, int32_t, OUT)                                                \
            TO_REAL_CASE(GNN_NPZ_U32, uint32_t, OUT)                                               \
            TO_REAL_CASE(GNN_NPZ_I64, int64_t, OUT)                                                \
            TO_REAL_CASE(GNN_NPZ_U64, uint64_t, OUT)                                               \
            TO_REAL_CASE(GNN_NPZ_F32, float, OUT)                                                  \
            TO_REAL_CASE(GNN_NPZ_F64, double, OUT)                                                 \
        case GNN_NPZ_BOOL:                                                                         \
            for (size_t i = 0; i < k; i++) o[i] = src[i] != 0;                                     \
            break;                                                                                 \
        }                                                                                          \
    }
#define TO_REAL_CASE(E, T, OUT)                                                                    \
    case E:                                                                                        \
        for (size_t i = 0; i < k; i++) o[i] = (OUT)LOAD(T, src, i);                                \
        break;
DEFINE_TO_REAL(to_f64, double)
DEFINE_TO_REAL(to_f32, float)
#undef TO_REAL_CASE
#undef DEFINE_TO_REAL

/* Convert to int64; *bad is the index of the first element that does not
 * fit (k when all do). */
static void to_i64(gnn_npz_dtype_t t, const uint8_t *src, int64_t *o, size_t k, size_t *bad)
{
    *bad = k;
    switch (t) {
#define CASE(E, T)                                                                                 \
    case E:                                                                                        \
        for (size_t i = 0; i < k; i++) o[i] = (int64_t)LOAD(T, src, i);                            \
        break;
        CASE(GNN_NPZ_I8, int8_t)
        CASE(GNN_NPZ_U8, uint8_t)
        CASE(GNN_NPZ_I16, int16_t)
        CASE(GNN_NPZ_U16, uint16_t)
        CASE(GNN_NPZ_I32, int32_t)
        CASE(GNN_NPZ_U32, uint32_t)
        CASE(GNN_NPZ_I64, int64_t)
#undef CASE
    case GNN_NPZ_BOOL:
        for (size_t i = 0; i < k; i++) o[i] = src[i] != 0;
        break;
    case GNN_NPZ_U64:
        for (size_t i = 0; i < k; i++) {
            uint64_t v = LOAD(uint64_t, src, i);
            if (v > (uint64_t)INT64_MAX) {
                *bad = i;
                return;
            }
            o[i] = (int64_t)v;
        }
        break;
    case GNN_NPZ_F32:
    case GNN_NPZ_F64:
        for (size_t i = 0; i < k; i++) {
            double v = t == GNN_NPZ_F32 ? (double)LOAD(float, src, i) : LOAD(double, src, i);
            /* NaN fails both comparisons; 2^63 is exact in double */
            if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0) ||
                (double)(int64_t)v != v) {
                *bad = i;
                return;
            }
            o[i] = (int64_t)v;
        }
        break;
    }
}

static int read_as(gnn_npz_array_t *a, void *out, int64_t n, int to)
{
    int rc = 0;
    if (a->failed)
        return AFAIL(a, a->failed, "unusable after an earlier error (%s)", gnn_strerror(a->failed));
    int64_t pos = gnn_npz_array_tell(a), left = a->info.count - pos;
    if (n < 0) return AFAIL(a, GNN_EINVAL, "negative element count %" PRId64, n);
    if (n > left)
        return AFAIL(a, GNN_ERANGE,
                     "asked for %" PRId64 " elements at element %" PRId64 ", only %" PRId64
                     " remain",
                     n, pos, left);
    if (n == 0) return 0;
    gnn_npz_dtype_t t = a->info.dtype;
    size_t isz = (size_t)a->info.itemsize;
    if (to == TO_RAW || (to == TO_I64 && t == GNN_NPZ_I64) || (to == TO_F32 && t == GNN_NPZ_F32) ||
        (to == TO_F64 && t == GNN_NPZ_F64)) {
        GNN_TRY(member_read(a, out, (uint64_t)n * isz));
        return 0;
    }
    size_t per = STAGE_SIZE / isz;
    for (int64_t done = 0; done < n;) {
        size_t k = (uint64_t)(n - done) < per ? (size_t)(n - done) : per;
        GNN_TRY(member_read(a, a->stage, k * isz));
        if (to == TO_F64) {
            to_f64(t, a->stage, (double *)out + done, k);
        } else if (to == TO_F32) {
            to_f32(t, a->stage, (float *)out + done, k);
        } else {
            size_t bad;
            to_i64(t, a->stage, (int64_t *)out + done, k, &bad);
            if (bad < k) {
                double v = t == GNN_NPZ_U64   ? (double)LOAD(uint64_t, a->stage, bad)
                           : t == GNN_NPZ_F32 ? (double)LOAD(float, a->stage, bad)
                                              : LOAD(double, a->stage, bad);
                rc = AFAIL(a, GNN_ERANGE, "element %" PRId64 " (%.17g) is not an int64 value",
                           pos + done + (int64_t)bad, v);
                goto fail;
            }
        }
        done += (int64_t)k;
    }
    return 0;
fail:
    a->failed = rc;
    return rc;
}

int gnn_npz_array_read_i64(gnn_npz_array_t *a, int64_t *out, int64_t n)
{
    return read_as(a, out, n, TO_I64);
}

int gnn_npz_array_read_f32(gnn_npz_array_t *a, float *out, int64_t n)
{
    return read_as(a, out, n, TO_F32);
}

int gnn_npz_array_read_f64(gnn_npz_array_t *a, double *out, int64_t n)
{
    return read_as(a, out, n, TO_F64);
}

int gnn_npz_array_read_raw(gnn_npz_array_t *a, void *out, int64_t n)
{
    return read_as(a, out, n, TO_RAW);
}

int gnn_npz_array_seek(gnn_npz_array_t *a, int64_t index)
{
    int rc = 0;
    if (a->failed)
        return AFAIL(a, a->failed, "unusable after an earlier error (%s)", gnn_strerror(a->failed));
    if (index < 0 || index > a->info.count)
        return AFAIL(a, GNN_ERANGE, "seek to element %" PRId64 " outside [0, %" PRId64 "]", index,
                     a->info.count);
    uint64_t target = a->hdr + (uint64_t)index * (uint64_t)a->info.itemsize;
    if (target == a->upos) return 0;
    if (a->method == METHOD_STORED) {
        if (target > a->upos && target - a->upos <= a->zs.avail_in) {
            /* inside the input window: step over it, keeping the CRC */
            uInt k = (uInt)(target - a->upos);
            if (a->crc_on) a->crc = (uint32_t)crc_update(a->crc, a->zs.next_in, k);
            a->zs.next_in += k;
            a->zs.avail_in -= k;
            a->upos = target;
            if (a->upos == a->usize) GNN_TRY(member_finish(a));
            return 0;
        }
        a->zs.avail_in = 0;
        a->loaded = target;
        a->upos = target;
        a->crc_on = target == a->hdr;
        a->crc = a->crc_hdr;
        return 0;
    }
    if (target < a->upos) {
        GNN_TRY(member_restart(a));
        GNN_TRY(member_skip(a, a->hdr));
    }
    GNN_TRY(member_skip(a, target - a->upos));
    return 0;
fail:
    a->failed = rc;
    return rc;
}
