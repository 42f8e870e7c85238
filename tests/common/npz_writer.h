/*
 * Writing .npy arrays and zip (npz) archives in tests, on zlib: STORED or
 * DEFLATED members, plain or zip64 records, and options that corrupt a
 * member on purpose (wrong CRC, cut data, other method...). Test code only;
 * include after <cmocka.h>.
 */
#ifndef GNN_TESTS_NPZ_WRITER_H
#define GNN_TESTS_NPZ_WRITER_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- A growable byte buffer ------------------------------------------ */

typedef struct {
    uint8_t *b;
    size_t len, cap;
} buf_t;

static inline void put(buf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 64;
        b->b = realloc(b->b, b->cap);
        assert_non_null(b->b);
    }
    if (n) memcpy(b->b + b->len, p, n);
    b->len += n;
}
static inline void put16(buf_t *b, uint32_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    put(b, x, 2);
}
static inline void put32(buf_t *b, uint32_t v)
{
    put16(b, v & 0xFFFF);
    put16(b, v >> 16);
}
static inline void put64(buf_t *b, uint64_t v)
{
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

/* ---- npy arrays -------------------------------------------------------- */

/* An npy file: version major.0, the header dict text as given (padded with
 * spaces and '\n' to a multiple of 64), then data. */
static inline buf_t npy_raw(int major, const char *dict, const void *data, size_t nbytes)
{
    buf_t b = {0};
    size_t lenlen = major == 1 ? 2 : 4, dl = strlen(dict);
    size_t total = 8 + lenlen + dl + 1;
    size_t pad = (64 - total % 64) % 64;
    size_t hlen = dl + pad + 1;
    put(&b, "\x93NUMPY", 6);
    uint8_t ver[2] = {(uint8_t)major, 0};
    put(&b, ver, 2);
    if (lenlen == 2)
        put16(&b, (uint32_t)hlen);
    else
        put32(&b, (uint32_t)hlen);
    put(&b, dict, dl);
    for (size_t i = 0; i < pad; i++) put(&b, " ", 1);
    put(&b, "\n", 1);
    put(&b, data, nbytes);
    return b;
}

/* An npy file with the usual dict for descr and shape (e.g. "(2, 3)"). */
static inline buf_t npy(int major, const char *descr, const char *shape, const void *data, size_t nbytes)
{
    char dict[256];
    snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr,
             shape);
    return npy_raw(major, dict, data, nbytes);
}

/* ---- A zip writer ------------------------------------------------------- */

typedef struct {
    int method_field;       /* method written in the headers instead (0 = the real one) */
    uint16_t flags;         /* general purpose flags */
    uint32_t crc_xor;       /* corrupt the stored CRC */
    size_t cut;             /* drop this many bytes of compressed data */
    int64_t usize_delta;    /* declared size = real size + this */
    const char *local_name; /* name in the local header instead */
    int corrupt_at;         /* flip a byte of the compressed data at this offset + 1 */
} zopt_t;

typedef struct {
    buf_t out;
    int zip64;
    int n;
    struct {
        char name[80];
        uint64_t off, csize, usize;
        uint32_t crc;
        uint16_t method, flags;
    } e[64];
} zip_t;

static inline uint8_t *deflate_raw(const uint8_t *p, size_t n, size_t *out_len)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    assert_int_equal(deflateInit2(&s, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&s, (uLong)n) + 16;
    uint8_t *o = malloc(cap);
    assert_non_null(o);
    s.next_in = (Bytef *)(uintptr_t)p;
    s.avail_in = (uInt)n;
    s.next_out = o;
    s.avail_out = (uInt)cap;
    assert_int_equal(deflate(&s, Z_FINISH), Z_STREAM_END);
    *out_len = cap - s.avail_out;
    deflateEnd(&s);
    return o;
}

/* Add member name holding data; method 0 (STORED) or 8 (DEFLATED). */
static inline void zip_add_opt(zip_t *z, const char *name, const buf_t *data, int method, const zopt_t *o)
{
    static const zopt_t none = {0};
    if (!o) o = &none;
    size_t clen;
    uint8_t *comp;
    if (method == 8) {
        comp = deflate_raw(data->b, data->len, &clen);
    } else {
        clen = data->len;
        comp = malloc(clen ? clen : 1);
        memcpy(comp, data->b, clen);
    }
    clen -= o->cut;
    if (o->corrupt_at) comp[o->corrupt_at - 1] ^= 0x5A;
    uint32_t crc = (uint32_t)crc32(0, data->b, (uInt)data->len) ^ o->crc_xor;
    uint64_t usize = (uint64_t)((int64_t)data->len + o->usize_delta);
    uint16_t m = (uint16_t)(o->method_field ? o->method_field : method);
    const char *lname = o->local_name ? o->local_name : name;

    assert_true(z->n < 64);
    snprintf(z->e[z->n].name, sizeof z->e[0].name, "%s", name);
    z->e[z->n].off = z->out.len;
    z->e[z->n].csize = clen;
    z->e[z->n].usize = usize;
    z->e[z->n].crc = crc;
    z->e[z->n].method = m;
    z->e[z->n].flags = o->flags;
    z->n++;

    buf_t *b = &z->out;
    put32(b, 0x04034b50);
    put16(b, z->zip64 ? 45 : 20);
    put16(b, o->flags);
    put16(b, m);
    put16(b, 0);
    put16(b, 0x21);
    put32(b, crc);
    put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)clen);
    put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)usize);
    put16(b, (uint32_t)strlen(lname));
    put16(b, z->zip64 ? 20 : 0);
    put(b, lname, strlen(lname));
    if (z->zip64) {
        put16(b, 1);
        put16(b, 16);
        put64(b, usize);
        put64(b, clen);
    }
    put(b, comp, clen);
    free(comp);
}

static inline void zip_add(zip_t *z, const char *name, buf_t data, int method)
{
    zip_add_opt(z, name, &data, method, NULL);
    free(data.b);
}

/* Write the central directory and end records; returns the archive. */
static inline buf_t zip_finish(zip_t *z)
{
    buf_t *b = &z->out;
    uint64_t cd_off = b->len;
    for (int i = 0; i < z->n; i++) {
        const size_t nl = strlen(z->e[i].name);
        put32(b, 0x02014b50);
        put16(b, 0x031e);
        put16(b, z->zip64 ? 45 : 20);
        put16(b, z->e[i].flags);
        put16(b, z->e[i].method);
        put16(b, 0);
        put16(b, 0x21);
        put32(b, z->e[i].crc);
        put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)z->e[i].csize);
        put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)z->e[i].usize);
        put16(b, (uint32_t)nl);
        put16(b, z->zip64 ? 9 + 28 : 0);
        put16(b, 0);
        put16(b, 0);
        put16(b, 0);
        put32(b, 0x81a40000u);
        put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)z->e[i].off);
        put(b, z->e[i].name, nl);
        if (z->zip64) {
            /* an unrelated extra field first (extended timestamp), then zip64 */
            put16(b, 0x5455);
            put16(b, 5);
            put(b, "\x01\x00\x00\x00\x00", 5);
            put16(b, 1);
            put16(b, 24);
            put64(b, z->e[i].usize);
            put64(b, z->e[i].csize);
            put64(b, z->e[i].off);
        }
    }
    uint64_t cd_size = b->len - cd_off;
    if (z->zip64) {
        uint64_t e64 = b->len;
        put32(b, 0x06064b50);
        put64(b, 44);
        put16(b, 0x031e);
        put16(b, 45);
        put32(b, 0);
        put32(b, 0);
        put64(b, (uint64_t)z->n);
        put64(b, (uint64_t)z->n);
        put64(b, cd_size);
        put64(b, cd_off);
        put32(b, 0x07064b50);
        put32(b, 0);
        put64(b, e64);
        put32(b, 1);
    }
    put32(b, 0x06054b50);
    put16(b, 0);
    put16(b, 0);
    put16(b, z->zip64 ? 0xFFFF : (uint32_t)z->n);
    put16(b, z->zip64 ? 0xFFFF : (uint32_t)z->n);
    put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)cd_size);
    put32(b, z->zip64 ? 0xFFFFFFFFu : (uint32_t)cd_off);
    put16(b, 7);
    put(b, "comment", 7);
    buf_t r = *b;
    memset(b, 0, sizeof *b);
    return r;
}

static inline void write_file(const char *path, const buf_t *b)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b->b, 1, b->len, f), b->len);
    assert_int_equal(fclose(f), 0);
}


#endif
