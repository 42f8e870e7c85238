/*
 * The npz reader: archives built here with a small zip writer on zlib
 * (STORED and DEFLATED members, npy 1.0 / 2.0 / 3.0 headers, plain and zip64
 * directories) read back exactly in chunks of several sizes, from a file and
 * from memory; two cursors on one member in lock step; seeks; the type
 * conversions and their refusals; every kind of bad archive and bad member
 * (a GNN_E* code and a message naming the problem, never a crash); and
 * allocation failure injected at every allocation of open, array open and
 * read.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/npz.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "tests/common/npz_writer.h"
#include "tests/common/testutil.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <zlib.h>

static unsigned g_seed;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

static void set64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- The reference archive -------------------------------------------- */

enum { E = 1000, N = 100, F = 13 };

typedef struct {
    int64_t edge[2 * E];
    float feat[N * F];
    double label[N];
    int32_t i4[N];
    uint8_t u1[N];
    uint8_t b1[N];
    uint32_t u4[N];
    int16_t i2[N];
    uint16_t u2[N];
    int8_t i1[N];
    uint64_t u8[N];
    int64_t scalar;
} ref_t;

static ref_t g_ref;

static void make_ref(uint64_t seed)
{
    uint64_t s = seed | 1;
    ref_t *r = &g_ref;
    for (int i = 0; i < 2 * E; i++) r->edge[i] = (int64_t)(rng_next(&s) % 5000000000ull) - 7;
    for (int i = 0; i < N * F; i++) r->feat[i] = (float)(rng_next(&s) % 100000) / 64.0f - 500.0f;
    for (int i = 0; i < N; i++) {
        r->label[i] = i % 3 == 0 ? NAN : (double)(rng_next(&s) % 172);
        r->i4[i] = (int32_t)(rng_next(&s) % 4000000) - 2000000;
        r->u1[i] = (uint8_t)rng_next(&s);
        r->b1[i] = (uint8_t)(rng_next(&s) & 1);
        r->u4[i] = (uint32_t)rng_next(&s);
        r->i2[i] = (int16_t)rng_next(&s);
        r->u2[i] = (uint16_t)rng_next(&s);
        r->i1[i] = (int8_t)rng_next(&s);
        r->u8[i] = rng_next(&s) >> 2; /* fits int64 */
    }
    r->scalar = -42;
}

/* The reference archive, plain or zip64. */
static buf_t ref_archive(int zip64)
{
    const ref_t *r = &g_ref;
    zip_t z = {.zip64 = zip64};
    char sh[64];
    snprintf(sh, sizeof sh, "(2, %d)", E);
    zip_add(&z, "edge_index.npy", npy(1, "<i8", sh, r->edge, sizeof r->edge), 8);
    snprintf(sh, sizeof sh, "(%d, %d)", N, F);
    zip_add(&z, "node_feat.npy", npy(2, "<f4", sh, r->feat, sizeof r->feat), 0);
    snprintf(sh, sizeof sh, "(%d,)", N);
    zip_add(&z, "node_label.npy", npy(3, "<f8", sh, r->label, sizeof r->label), 8);
    zip_add(&z, "i4.npy", npy(1, "<i4", sh, r->i4, sizeof r->i4), 0);
    zip_add(&z, "u1.npy", npy(1, "|u1", sh, r->u1, sizeof r->u1), 8);
    zip_add(&z, "b1.npy", npy(1, "|b1", sh, r->b1, sizeof r->b1), 0);
    zip_add(&z, "u4.npy", npy(2, "<u4", sh, r->u4, sizeof r->u4), 8);
    zip_add(&z, "i2.npy", npy(1, "<i2", sh, r->i2, sizeof r->i2), 0);
    zip_add(&z, "u2.npy", npy(1, "<u2", sh, r->u2, sizeof r->u2), 8);
    zip_add(&z, "i1.npy", npy(1, "|i1", sh, r->i1, sizeof r->i1), 0);
    zip_add(&z, "u8.npy", npy(1, "<u8", sh, r->u8, sizeof r->u8), 8);
    zip_add(&z, "scalar.npy", npy(1, "<i8", "()", &r->scalar, 8), 8);
    zip_add(&z, "empty.npy", npy(1, "<f4", "(0,)", NULL, 0), 8);
    zip_add(&z, "empty2d.npy", npy(1, "<i8", "(3, 0)", NULL, 0), 0);
    zip_add(&z, "raw", npy(1, "<i4", "(3,)", r->i4, 12), 0); /* no .npy suffix */
    return zip_finish(&z);
}

/* Reference values of member m as doubles (count elements). */
static double ref_value(const char *m, int64_t i)
{
    const ref_t *r = &g_ref;
    if (!strcmp(m, "edge_index")) return (double)r->edge[i];
    if (!strcmp(m, "node_feat")) return r->feat[i];
    if (!strcmp(m, "node_label")) return r->label[i];
    if (!strcmp(m, "i4") || !strcmp(m, "raw")) return r->i4[i];
    if (!strcmp(m, "u1")) return r->u1[i];
    if (!strcmp(m, "b1")) return r->b1[i];
    if (!strcmp(m, "u4")) return r->u4[i];
    if (!strcmp(m, "i2")) return r->i2[i];
    if (!strcmp(m, "u2")) return r->u2[i];
    if (!strcmp(m, "i1")) return r->i1[i];
    if (!strcmp(m, "u8")) return (double)r->u8[i];
    if (!strcmp(m, "scalar")) return (double)r->scalar;
    fail_msg("no reference for %s", m);
    return 0;
}

static int64_t ref_i64(const char *m, int64_t i)
{
    if (!strcmp(m, "edge_index")) return g_ref.edge[i];
    if (!strcmp(m, "u8")) return (int64_t)g_ref.u8[i];
    return (int64_t)ref_value(m, i);
}

static const struct {
    const char *name;
    gnn_npz_dtype_t dtype;
    int ndim;
    int64_t shape0, shape1;
    const char *descr;
} g_members[] = {
    {"edge_index", GNN_NPZ_I64, 2, 2, E, "<i8"}, {"node_feat", GNN_NPZ_F32, 2, N, F, "<f4"},
    {"node_label", GNN_NPZ_F64, 1, N, 0, "<f8"}, {"i4", GNN_NPZ_I32, 1, N, 0, "<i4"},
    {"u1", GNN_NPZ_U8, 1, N, 0, "|u1"},          {"b1", GNN_NPZ_BOOL, 1, N, 0, "|b1"},
    {"u4", GNN_NPZ_U32, 1, N, 0, "<u4"},         {"i2", GNN_NPZ_I16, 1, N, 0, "<i2"},
    {"u2", GNN_NPZ_U16, 1, N, 0, "<u2"},         {"i1", GNN_NPZ_I8, 1, N, 0, "|i1"},
    {"u8", GNN_NPZ_U64, 1, N, 0, "<u8"},         {"scalar", GNN_NPZ_I64, 0, 0, 0, "<i8"},
    {"empty", GNN_NPZ_F32, 1, 0, 0, "<f4"},      {"empty2d", GNN_NPZ_I64, 2, 3, 0, "<i8"},
    {"raw", GNN_NPZ_I32, 1, 3, 0, "<i4"},
};
enum { NMEMBERS = sizeof g_members / sizeof g_members[0] };

static void assert_msg(const char *want)
{
    if (!strstr(gnn_error_message(), want))
        fail_msg("message '%s' lacks '%s'", gnn_error_message(), want);
}

/* Open from the file written at path, or from memory. */
static int open_either(int mem, const char *path, const buf_t *b, gnn_npz_t **z)
{
    return mem ? gnn_npz_open_mem(b->b, b->len, path, z) : gnn_npz_open(path, z);
}

/* Read every member in chunks of `chunk` elements as every target type and
 * compare with the reference. */
static void check_archive(gnn_npz_t *z, int64_t chunk)
{
    for (int k = 0; k < NMEMBERS; k++) {
        const char *m = g_members[k].name;
        for (int to = 0; to < 3; to++) {
            gnn_npz_array_t *a;
            assert_int_equal(gnn_npz_array_open(z, m, &a), 0);
            const gnn_npz_info_t *in = gnn_npz_array_info(a);
            assert_int_equal(in->dtype, g_members[k].dtype);
            assert_int_equal(in->ndim, g_members[k].ndim);
            assert_string_equal(in->descr, g_members[k].descr);
            int64_t count = 1;
            if (in->ndim >= 1) assert_int_equal(in->shape[0], g_members[k].shape0);
            if (in->ndim >= 2) assert_int_equal(in->shape[1], g_members[k].shape1);
            for (int d = 0; d < in->ndim; d++) count *= in->shape[d];
            assert_int_equal(in->count, count);
            int64_t c = chunk > 0 ? chunk : (count ? count : 1);
            int64_t *vi = malloc(sizeof *vi * (size_t)c);
            float *vf = malloc(sizeof *vf * (size_t)c);
            double *vd = malloc(sizeof *vd * (size_t)c);
            for (int64_t i = 0; i < count; i += c) {
                int64_t n = count - i < c ? count - i : c;
                assert_int_equal(gnn_npz_array_tell(a), i);
                if (to == 0) {
                    if (in->dtype == GNN_NPZ_F32 || (in->dtype == GNN_NPZ_F64))
                        break; /* non-integral floats: see test_conversions */
                    assert_int_equal(gnn_npz_array_read_i64(a, vi, n), 0);
                    for (int64_t j = 0; j < n; j++) assert_int_equal(vi[j], ref_i64(m, i + j));
                } else if (to == 1) {
                    assert_int_equal(gnn_npz_array_read_f32(a, vf, n), 0);
                    for (int64_t j = 0; j < n; j++) {
                        /* straight from the stored type: no double rounding */
                        float want = (float)ref_value(m, i + j);
                        if (!strcmp(m, "edge_index")) want = (float)g_ref.edge[i + j];
                        if (!strcmp(m, "u8")) want = (float)g_ref.u8[i + j];
                        if (isnan(want))
                            assert_true(isnan(vf[j]));
                        else
                            assert_true(vf[j] == want);
                    }
                } else {
                    assert_int_equal(gnn_npz_array_read_f64(a, vd, n), 0);
                    for (int64_t j = 0; j < n; j++) {
                        double want = ref_value(m, i + j);
                        if (isnan(want))
                            assert_true(isnan(vd[j]));
                        else
                            assert_true(vd[j] == want);
                    }
                }
            }
            if (to != 0 || (in->dtype != GNN_NPZ_F32 && in->dtype != GNN_NPZ_F64)) {
                assert_int_equal(gnn_npz_array_tell(a), count);
                assert_int_equal(gnn_npz_array_read_f64(a, vd, 1), GNN_ERANGE);
                assert_int_equal(gnn_npz_array_read_f64(a, vd, 0), 0);
            }
            free(vi);
            free(vf);
            free(vd);
            gnn_npz_array_close(a);
        }
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    for (int zip64 = 0; zip64 < 2; zip64++) {
        buf_t b = ref_archive(zip64);
        const char *path = tu_path(zip64 ? "ref64.npz" : "ref.npz");
        write_file(path, &b);
        for (int mem = 0; mem < 2; mem++) {
            gnn_npz_t *z;
            assert_int_equal(open_either(mem, path, &b, &z), 0);
            assert_string_equal(gnn_npz_name(z), path);
            assert_int_equal(gnn_npz_count(z), NMEMBERS);
            assert_string_equal(gnn_npz_member(z, 0), "edge_index.npy");
            assert_string_equal(gnn_npz_member(z, NMEMBERS - 1), "raw");
            assert_null(gnn_npz_member(z, NMEMBERS));
            assert_null(gnn_npz_member(z, -1));
            assert_true(gnn_npz_has(z, "edge_index"));
            assert_true(gnn_npz_has(z, "edge_index.npy"));
            assert_true(gnn_npz_has(z, "raw"));
            assert_false(gnn_npz_has(z, "raw.npy"));
            assert_false(gnn_npz_has(z, "edge"));
            assert_false(gnn_npz_has(z, "node_year"));
            check_archive(z, 1);
            check_archive(z, 7);
            check_archive(z, 0);
            gnn_npz_close(z);
        }
        free(b.b);
    }
}

static void test_raw_and_close_order(void **state)
{
    (void)state;
    buf_t b = ref_archive(0);
    const char *path = tu_path("raw.npz");
    write_file(path, &b);
    gnn_npz_t *z;
    assert_int_equal(gnn_npz_open(path, &z), 0);
    gnn_npz_array_t *a, *f;
    assert_int_equal(gnn_npz_array_open(z, "edge_index.npy", &a), 0);
    assert_int_equal(gnn_npz_array_open(z, "node_feat", &f), 0);
    assert_string_equal(gnn_npz_array_member(a), "edge_index.npy");
    gnn_npz_close(z); /* arrays outlive the archive */
    int64_t *e = malloc(sizeof g_ref.edge);
    assert_int_equal(gnn_npz_array_read_raw(a, e, 2 * E), 0);
    assert_memory_equal(e, g_ref.edge, sizeof g_ref.edge);
    float *x = malloc(sizeof g_ref.feat);
    assert_int_equal(gnn_npz_array_read_raw(f, x, 5), 0);
    assert_int_equal(gnn_npz_array_read_raw(f, x + 5, N * F - 5), 0);
    assert_memory_equal(x, g_ref.feat, sizeof g_ref.feat);
    assert_string_equal(gnn_npz_dtype_name(GNN_NPZ_F32), "float32");
    assert_string_equal(gnn_npz_dtype_name(GNN_NPZ_BOOL), "bool");
    assert_string_equal(gnn_npz_dtype_name((gnn_npz_dtype_t)99), "?");
    free(e);
    free(x);
    gnn_npz_array_close(a);
    gnn_npz_array_close(f);
    gnn_npz_close(NULL);
    gnn_npz_array_close(NULL);
    free(b.b);
}

/* A (2, m) int64 edge_index over several input buffers, stored or deflated. */
static buf_t big_edges(int64_t m, int method, int64_t **vals, int zip64)
{
    uint64_t s = (uint64_t)g_seed * 2654435761u + 99;
    int64_t *v = malloc(sizeof *v * (size_t)(2 * m));
    for (int64_t i = 0; i < 2 * m; i++) v[i] = (int64_t)(rng_next(&s) % 111000000);
    char sh[64];
    snprintf(sh, sizeof sh, "(2, %" PRId64 ")", m);
    zip_t z = {.zip64 = zip64};
    zip_add(&z, "edge_index.npy", npy(1, "<i8", sh, v, sizeof *v * (size_t)(2 * m)), method);
    *vals = v;
    return zip_finish(&z);
}

static void test_lockstep(void **state)
{
    (void)state;
    const int64_t m = 700000; /* 11 MB: several 1 MiB input buffers, one 8 MiB direct read */
    for (int method = 0; method <= 8; method += 8) {
        int64_t *v;
        buf_t b = big_edges(m, method, &v, method == 8);
        const char *path = tu_path("lockstep.npz");
        write_file(path, &b);
        for (int mem = 0; mem < 2; mem++) {
            gnn_npz_t *z;
            assert_int_equal(open_either(mem, path, &b, &z), 0);
            gnn_npz_array_t *r0, *r1;
            assert_int_equal(gnn_npz_array_open(z, "edge_index", &r0), 0);
            assert_int_equal(gnn_npz_array_open(z, "edge_index", &r1), 0);
            assert_int_equal(gnn_npz_array_seek(r1, m), 0);
            assert_int_equal(gnn_npz_array_tell(r1), m);
            enum { C = 4099 };
            static int64_t x[C], y[C];
            for (int64_t i = 0; i < m; i += C) {
                int64_t n = m - i < C ? m - i : C;
                assert_int_equal(gnn_npz_array_read_i64(r0, x, n), 0);
                assert_int_equal(gnn_npz_array_read_i64(r1, y, n), 0);
                assert_memory_equal(x, v + i, sizeof *x * (size_t)n);
                assert_memory_equal(y, v + m + i, sizeof *y * (size_t)n);
            }
            assert_int_equal(gnn_npz_array_tell(r0), m);
            assert_int_equal(gnn_npz_array_tell(r1), 2 * m);
            /* the whole array in one read (8 MiB direct reads for STORED) */
            int64_t *all = malloc(sizeof *all * (size_t)(2 * m));
            assert_int_equal(gnn_npz_array_seek(r0, 0), 0);
            assert_int_equal(gnn_npz_array_read_i64(r0, all, 2 * m), 0);
            assert_memory_equal(all, v, sizeof *all * (size_t)(2 * m));
            /* as doubles, through the staging buffer */
            double *d = malloc(sizeof *d * (size_t)(2 * m));
            assert_int_equal(gnn_npz_array_seek(r1, 0), 0);
            assert_int_equal(gnn_npz_array_read_f64(r1, d, 2 * m), 0);
            for (int64_t i = 0; i < 2 * m; i++) assert_true(d[i] == (double)v[i]);
            free(all);
            free(d);
            gnn_npz_array_close(r0);
            gnn_npz_array_close(r1);
            gnn_npz_close(z);
        }
        free(v);
        free(b.b);
    }
}

static void test_seek(void **state)
{
    (void)state;
    const int64_t m = 200000;
    for (int method = 0; method <= 8; method += 8) {
        int64_t *v;
        buf_t b = big_edges(m, method, &v, 0);
        gnn_npz_t *z;
        assert_int_equal(gnn_npz_open_mem(b.b, b.len, "seek.npz", &z), 0);
        gnn_npz_array_t *a;
        assert_int_equal(gnn_npz_array_open(z, "edge_index", &a), 0);
        int64_t x[5];
        const int64_t at[] = {5, 7, 3, 150000, 399995, 100, 0, 200000, 12};
        for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
            assert_int_equal(gnn_npz_array_seek(a, at[k]), 0);
            assert_int_equal(gnn_npz_array_tell(a), at[k]);
            assert_int_equal(gnn_npz_array_read_i64(a, x, 5), 0);
            assert_memory_equal(x, v + at[k], sizeof x);
        }
        assert_int_equal(gnn_npz_array_seek(a, 2 * m), 0);
        assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_ERANGE);
        assert_int_equal(gnn_npz_array_seek(a, 2 * m + 1), GNN_ERANGE);
        assert_non_null(strstr(gnn_error_message(), "outside [0, 400000]"));
        assert_int_equal(gnn_npz_array_seek(a, -1), GNN_ERANGE);
        assert_int_equal(gnn_npz_array_seek(a, 1), 0); /* not sticky */
        assert_int_equal(gnn_npz_array_read_i64(a, x, 1), 0);
        assert_int_equal(x[0], v[1]);
        gnn_npz_array_close(a);
        gnn_npz_close(z);
        free(v);
        free(b.b);
    }
}

/* A CRC is checked by a handle that read the member from its start, or
 * stepped over bytes it had loaded; a STORED jump beyond them turns the
 * check off, a seek back to element 0 turns it on again. */
static void test_crc_and_seeks(void **state)
{
    (void)state;
    enum { M = 64 * 4688 }; /* 2.4 MB: more than one input buffer */
    int64_t *v = malloc(sizeof *v * M), x[64];
    for (int i = 0; i < M; i++) v[i] = i * 3;
    const char *path = tu_path("crc.npz");
    for (int method = 0; method <= 8; method += 8) {
        zip_t zz = {0};
        buf_t d = npy(1, "<i8", "(64,)", v, sizeof *v * 64);
        zopt_t o = {.crc_xor = 1};
        zip_add_opt(&zz, "bad.npy", &d, method, &o);
        free(d.b);
        d = npy(1, "<i8", "(300032,)", v, sizeof *v * M);
        zip_add_opt(&zz, "big.npy", &d, method, &o);
        free(d.b);
        buf_t b = zip_finish(&zz);
        write_file(path, &b);
        for (int mem = 0; mem < 2; mem++) {
            gnn_npz_t *z;
            assert_int_equal(open_either(mem, path, &b, &z), 0);
            gnn_npz_array_t *a;
            assert_int_equal(gnn_npz_array_open(z, "bad", &a), 0);
            assert_int_equal(gnn_npz_array_read_i64(a, x, 63), 0);
            assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_EFORMAT);
            assert_msg("crc.npz: member 'bad.npy': CRC-32 mismatch");
            assert_int_equal(gnn_npz_array_read_i64(a, x, 0), GNN_EFORMAT); /* sticky */
            assert_msg("earlier error");
            assert_int_equal(gnn_npz_array_seek(a, 0), GNN_EFORMAT);
            gnn_npz_array_close(a);

            /* a seek within loaded bytes (or inflating) keeps the check */
            assert_int_equal(gnn_npz_array_open(z, "bad", &a), 0);
            assert_int_equal(gnn_npz_array_seek(a, 60), 0);
            assert_int_equal(gnn_npz_array_read_i64(a, x, 4), GNN_EFORMAT);
            gnn_npz_array_close(a);
            assert_int_equal(gnn_npz_array_open(z, "bad", &a), 0);
            assert_int_equal(gnn_npz_array_seek(a, 64), GNN_EFORMAT);
            gnn_npz_array_close(a);

            /* a jump past a file's input buffer does not (STORED) */
            int check = method == 8 || mem;
            assert_int_equal(gnn_npz_array_open(z, "big", &a), 0);
            assert_int_equal(gnn_npz_array_seek(a, M - 64), 0);
            assert_int_equal(gnn_npz_array_read_i64(a, x, 64), check ? GNN_EFORMAT : 0);
            if (!check) {
                assert_memory_equal(x, v + M - 64, sizeof x);
                assert_int_equal(gnn_npz_array_seek(a, 0), 0);
                for (int i = 0; i < M - 64; i += 64)
                    assert_int_equal(gnn_npz_array_read_i64(a, x, 64), 0);
                assert_int_equal(gnn_npz_array_read_i64(a, x, 64), GNN_EFORMAT);
            }
            gnn_npz_array_close(a);
            gnn_npz_close(z);
        }
        free(b.b);
    }
    free(v);
}

static void test_conversions(void **state)
{
    (void)state;
    double f8[] = {1.0, -3.0, 4.5, 2.0, NAN, 1e300, 9223372036854775808.0, -9223372036854775808.0};
    uint64_t u8[] = {1, (uint64_t)INT64_MAX, (uint64_t)INT64_MAX + 1};
    float f4[] = {7.0f, 0.25f};
    zip_t zz = {0};
    zip_add(&zz, "f8.npy", npy(1, "<f8", "(8,)", f8, sizeof f8), 8);
    zip_add(&zz, "u8.npy", npy(1, "<u8", "(3,)", u8, sizeof u8), 0);
    zip_add(&zz, "f4.npy", npy(1, "<f4", "(2,)", f4, sizeof f4), 0);
    buf_t b = zip_finish(&zz);
    gnn_npz_t *z;
    assert_int_equal(gnn_npz_open_mem(b.b, b.len, "conv.npz", &z), 0);
    gnn_npz_array_t *a;
    int64_t x[8];
    float f[8];

    assert_int_equal(gnn_npz_array_open(z, "f8", &a), 0);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 2), 0);
    assert_int_equal(x[0], 1);
    assert_int_equal(x[1], -3);
    assert_int_equal(gnn_npz_array_read_i64(a, x, -1), GNN_EINVAL);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 7), GNN_ERANGE); /* only 6 remain: not sticky */
    assert_non_null(
        strstr(gnn_error_message(), "asked for 7 elements at element 2, only 6 remain"));
    assert_int_equal(gnn_npz_array_read_i64(a, x, 2), GNN_ERANGE);
    assert_non_null(
        strstr(gnn_error_message(), "conv.npz: member 'f8.npy': element 2 (4.5) is not an int64"));
    assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_ERANGE); /* sticky */
    gnn_npz_array_close(a);
    const int64_t bad[] = {4, 5, 6};
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(gnn_npz_array_open(z, "f8", &a), 0);
        assert_int_equal(gnn_npz_array_seek(a, bad[k]), 0);
        assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_ERANGE);
        gnn_npz_array_close(a);
    }
    assert_int_equal(gnn_npz_array_open(z, "f8", &a), 0);
    assert_int_equal(gnn_npz_array_seek(a, 7), 0);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 1), 0);
    assert_true(x[0] == INT64_MIN);
    assert_int_equal(gnn_npz_array_seek(a, 0), 0);
    assert_int_equal(gnn_npz_array_read_f32(a, f, 8), 0);
    assert_true(f[2] == 4.5f && isnan(f[4]) && isinf(f[5]) && f[5] > 0);
    gnn_npz_array_close(a);

    assert_int_equal(gnn_npz_array_open(z, "u8", &a), 0);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 2), 0);
    assert_true(x[1] == INT64_MAX);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_ERANGE);
    assert_non_null(
        strstr(gnn_error_message(), "element 2 (9.2233720368547758e+18) is not an int64"));
    gnn_npz_array_close(a);

    assert_int_equal(gnn_npz_array_open(z, "f4", &a), 0);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 1), 0);
    assert_int_equal(x[0], 7);
    assert_int_equal(gnn_npz_array_read_i64(a, x, 1), GNN_ERANGE);
    assert_non_null(strstr(gnn_error_message(), "element 1 (0.25)"));
    gnn_npz_array_close(a);
    gnn_npz_close(z);
    free(b.b);
}

/* ---- Errors ------------------------------------------------------------- */

/* Opening the archive fails with code and a message containing want, from a
 * file and from memory. */
static void expect_open_error(const buf_t *b, int code, const char *want)
{
    const char *path = tu_path("bad.npz");
    write_file(path, b);
    for (int mem = 0; mem < 2; mem++) {
        gnn_npz_t *z = (gnn_npz_t *)1;
        gnn_error_clear();
        assert_int_equal(open_either(mem, path, b, &z), code);
        assert_null(z);
        assert_msg(want);
        assert_msg(path);
    }
}

/* The archive opens; opening member fails (at_read = 0) or reading it all
 * as doubles in chunks of 3 fails (at_read = 1), from a file and from
 * memory. */
static void expect_member_error(const buf_t *b, const char *member, int at_read, int code,
                                const char *want)
{
    const char *path = tu_path("bad.npz");
    write_file(path, b);
    for (int mem = 0; mem < 2; mem++) {
        gnn_npz_t *z;
        assert_int_equal(open_either(mem, path, b, &z), 0);
        gnn_npz_array_t *a = (gnn_npz_array_t *)1;
        gnn_error_clear();
        int rc = gnn_npz_array_open(z, member, &a);
        if (!at_read) {
            assert_int_equal(rc, code);
            assert_null(a);
        } else {
            assert_int_equal(rc, 0);
            int64_t n = gnn_npz_array_info(a)->count;
            double d[3];
            for (int64_t i = 0; i < n && rc == 0; i += 3)
                rc = gnn_npz_array_read_f64(a, d, n - i < 3 ? n - i : 3);
            assert_int_equal(rc, code);
            gnn_npz_array_close(a);
        }
        assert_msg(want);
        assert_msg(path);
        gnn_npz_close(z);
    }
}

/* An archive with one member name holding data (method, options). */
static buf_t one_member(const char *name, buf_t data, int method, const zopt_t *o)
{
    zip_t z = {0};
    zip_add_opt(&z, name, &data, method, o);
    free(data.b);
    return zip_finish(&z);
}

static void test_archive_errors(void **state)
{
    (void)state;
    gnn_npz_t *z = (gnn_npz_t *)1;
    assert_int_equal(gnn_npz_open(tu_path("absent.npz"), &z), GNN_ENOENT);
    assert_null(z);
    assert_msg("absent.npz: no such file");
    assert_int_equal(gnn_npz_open(tu_tmpdir(), &z), GNN_EIO);
    assert_msg("not a regular file");

    buf_t t = {0};
    put(&t, "edge_index,label\n0,1\n", 21);
    expect_open_error(&t, GNN_EFORMAT, "not a zip archive");
    t.len = 0;
    expect_open_error(&t, GNN_EFORMAT, "not a zip archive");
    free(t.b);

    buf_t b = ref_archive(0);
    buf_t h = b;
    h.len = b.len / 2;
    expect_open_error(&h, GNN_EFORMAT, "truncated zip archive (no end of central directory");
    h.len = 4;
    expect_open_error(&h, GNN_EFORMAT, "truncated zip archive");

    /* the end record points the directory past itself */
    size_t eocd = b.len - 22 - 7;
    buf_t c = {0};
    put(&c, b.b, b.len);
    c.b[eocd + 19] = 0x10;
    expect_open_error(&c, GNN_EFORMAT, "runs past offset");
    /* more members than the directory can hold */
    memcpy(c.b, b.b, b.len);
    c.b[eocd + 10] = 0xFF;
    c.b[eocd + 8] = 0xFF;
    expect_open_error(&c, GNN_EFORMAT, "members cannot fit a central directory");
    /* multi-disk */
    memcpy(c.b, b.b, b.len);
    c.b[eocd + 4] = 1;
    expect_open_error(&c, GNN_EUNSUPPORTED, "multi-disk");
    /* a central header signature broken */
    memcpy(c.b, b.b, b.len);
    size_t cd_off =
        (size_t)c.b[eocd + 16] | (size_t)c.b[eocd + 17] << 8 | (size_t)c.b[eocd + 18] << 16;
    c.b[cd_off + 1] = 'X';
    expect_open_error(&c, GNN_EFORMAT, "entry 1 of 15 is not a central file header");
    /* a name overrunning the directory */
    memcpy(c.b, b.b, b.len);
    c.b[cd_off + 29] = 0xF0;
    expect_open_error(&c, GNN_EFORMAT, "overruns it");
    free(c.b);
    free(b.b);

    /* zip64: locator pointing nowhere, record missing */
    b = ref_archive(1);
    c = (buf_t){0};
    put(&c, b.b, b.len);
    size_t loc = b.len - 22 - 7 - 20;
    set64(c.b + loc + 8, get64(c.b + loc + 8) - 8);
    expect_open_error(&c, GNN_EFORMAT, "zip64 end of central directory record not found");
    memcpy(c.b, b.b, b.len);
    c.b[loc + 14] = 0x7F;
    expect_open_error(&c, GNN_EFORMAT, "corrupt zip64 end of central directory locator");
    memcpy(c.b, b.b, b.len);
    c.b[loc + 16] = 3;
    expect_open_error(&c, GNN_EUNSUPPORTED, "multi-disk");
    /* extra fields of the first central header: a timestamp, then zip64 */
    size_t x = (size_t)get64(b.b + (size_t)get64(b.b + loc + 8) + 48) + 46 + 14;
    memcpy(c.b, b.b, b.len);
    c.b[x + 11] = 8;
    expect_open_error(&c, GNN_EFORMAT,
                      "member 'edge_index.npy': zip64 extra field holds 8 bytes, needs 24");
    memcpy(c.b, b.b, b.len);
    c.b[x + 2] = 200;
    expect_open_error(&c, GNN_EFORMAT, "extra field overruns its central header");
    free(c.b);
    free(b.b);

    /* an empty archive is fine */
    zip_t e = {0};
    b = zip_finish(&e);
    assert_int_equal(gnn_npz_open_mem(b.b, b.len, "empty.npz", &z), 0);
    assert_int_equal(gnn_npz_count(z), 0);
    gnn_npz_array_t *a = (gnn_npz_array_t *)1;
    assert_int_equal(gnn_npz_array_open(z, "x", &a), GNN_EINVAL);
    assert_null(a);
    assert_msg("empty.npz: no member 'x' (the archive is empty)");
    gnn_npz_close(z);
    free(b.b);
}

static void test_member_errors(void **state)
{
    (void)state;
    int64_t v[6] = {1, 2, 3, 4, 5, 6};
    buf_t b = ref_archive(0);
    expect_member_error(&b, "node_year", 0, GNN_EINVAL,
                        "no member 'node_year' (members: edge_index, node_feat, node_label, i4");
    free(b.b);

    zopt_t o = {.flags = 1};
    b = one_member("x.npy", npy(1, "<i8", "(6,)", v, sizeof v), 8, &o);
    expect_member_error(&b, "x", 0, GNN_EUNSUPPORTED, "member 'x.npy' is encrypted");
    free(b.b);
    o = (zopt_t){.method_field = 12};
    b = one_member("x.npy", npy(1, "<i8", "(6,)", v, sizeof v), 0, &o);
    expect_member_error(&b, "x", 0, GNN_EUNSUPPORTED, "compression method 12 is not supported");
    free(b.b);

    /* deflate stream cut short: caught at open (header) or at read */
    o = (zopt_t){.cut = 20};
    int64_t big[400];
    for (int i = 0; i < 400; i++) big[i] = i * 7919 % 1000;
    b = one_member("edge_index.npy", npy(1, "<i8", "(400,)", big, sizeof big), 8, &o);
    expect_member_error(&b, "edge_index", 1, GNN_EFORMAT, "member 'edge_index.npy' is truncated");
    free(b.b);
    /* the data of a member run past the end of the file */
    {
        zip_t z = {0};
        buf_t d = npy(1, "<i8", "(400,)", big, sizeof big);
        zip_add_opt(&z, "edge_index.npy", &d, 0, NULL);
        free(d.b);
        buf_t full = zip_finish(&z);
        /* declare the data 1000 bytes longer than the file holds */
        size_t cd = full.len - 22 - 7 - 46 - 14;
        uint32_t cs = (uint32_t)full.b[cd + 20] | (uint32_t)full.b[cd + 21] << 8;
        cs += 1000;
        full.b[cd + 20] = (uint8_t)cs;
        full.b[cd + 21] = (uint8_t)(cs >> 8);
        full.b[cd + 24] = (uint8_t)cs;
        full.b[cd + 25] = (uint8_t)(cs >> 8);
        expect_member_error(
            &full, "edge_index", 0, GNN_EFORMAT,
            "member 'edge_index.npy' is truncated (its 4328 bytes of data run past");
        /* a local header offset past the end */
        full.b[cd + 44] = 0x7F;
        expect_member_error(&full, "edge_index", 0, GNN_EFORMAT, "local header lies past the end");
        free(full.b);
    }

    /* CRC mismatch, found at the end of the read */
    o = (zopt_t){.crc_xor = 0x100};
    for (int method = 0; method <= 8; method += 8) {
        b = one_member("x.npy", npy(1, "<i8", "(6,)", v, sizeof v), method, &o);
        expect_member_error(&b, "x", 1, GNN_EFORMAT, "member 'x.npy': CRC-32 mismatch");
        free(b.b);
    }
    /* corrupt deflate data */
    o = (zopt_t){.corrupt_at = 1};
    b = one_member("x.npy", npy(1, "<i8", "(400,)", big, sizeof big), 8, &o);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "corrupt deflate data");
    free(b.b);
    /* the deflate stream holds more, or less, than declared */
    o = (zopt_t){.usize_delta = -8};
    b = one_member("x.npy", npy(1, "<i8", "(5,)", v, sizeof v), 8, &o);
    expect_member_error(&b, "x", 1, GNN_EFORMAT, "holds more than its declared");
    free(b.b);
    o = (zopt_t){.usize_delta = 8};
    b = one_member("x.npy", npy(1, "<i8", "(7,)", v, sizeof v), 8, &o);
    expect_member_error(&b, "x", 1, GNN_EFORMAT,
                        "is truncated (its deflate stream ends before the declared size)");
    free(b.b);
    /* a stored member whose sizes disagree */
    o = (zopt_t){.usize_delta = 8};
    b = one_member("x.npy", npy(1, "<i8", "(7,)", v, sizeof v), 0, &o);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "stored member with compressed size");
    free(b.b);
    /* local header disagrees with the directory */
    o = (zopt_t){.local_name = "y.npy"};
    b = one_member("x.npy", npy(1, "<i8", "(6,)", v, sizeof v), 0, &o);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "local header names a different file");
    b.b[0] = 'Q';
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "no local file header where");
    free(b.b);

    /* npy level */
    buf_t d = npy(1, "<i8", "(6,)", v, sizeof v);
    d.b[1] = 'M';
    b = one_member("x.npy", d, 8, NULL);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "member 'x.npy': not an npy array (bad magic)");
    free(b.b);
    d = (buf_t){0};
    put(&d, "\x93NUM", 4);
    b = one_member("x.npy", d, 0, NULL);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "too short for an npy header");
    free(b.b);
    d = npy(1, "<i8", "(6,)", v, sizeof v);
    d.b[6] = 4;
    b = one_member("x.npy", d, 0, NULL);
    expect_member_error(&b, "x", 0, GNN_EVERSION, "npy format version 4.0 is not supported");
    free(b.b);
    d = npy(2, "<i8", "(6,)", v, sizeof v);
    d.b[10] = 0x01; /* header length 65536 + ... */
    b = one_member("x.npy", d, 0, NULL);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "exceeds the 64 KiB limit");
    free(b.b);
    d = npy(1, "<i8", "(6,)", v, sizeof v);
    d.b[9] = 0x10; /* header length 4096 + 64, longer than the member */
    b = one_member("x.npy", d, 8, NULL);
    expect_member_error(&b, "x", 0, GNN_EFORMAT, "is longer than the member");
    free(b.b);

    static const struct {
        const char *dict;
        int code;
        const char *want;
    } dicts[] = {
        {"('descr': '<i8')", GNN_EFORMAT, "malformed npy header: not a dict"},
        {"{'descr': '<i8', 'fortran_order': False}", GNN_EFORMAT, "no 'shape' key"},
        {"{'fortran_order': False, 'shape': (6,)}", GNN_EFORMAT, "no 'descr' key"},
        {"{'descr': '<i8', 'shape': (6,)}", GNN_EFORMAT, "no 'fortran_order' key"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,), 'shape': (6,)}", GNN_EFORMAT,
         "repeated key 'shape'"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,), 'extra': 1}", GNN_EFORMAT,
         "unexpected key 'extra'"},
        {"{'descr': '<i8', 'fortran_order': 0, 'shape': (6,)}", GNN_EFORMAT,
         "'fortran_order' is not True or False"},
        {"{'descr': <i8, 'fortran_order': False, 'shape': (6,)}", GNN_EFORMAT,
         "'descr' is not a string"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': [6]}", GNN_EFORMAT,
         "'shape' is not a tuple"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6)}", GNN_EFORMAT,
         "'shape' is not a tuple"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,-1)}", GNN_EFORMAT,
         "bad dimension in 'shape'"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6 7)}", GNN_EFORMAT,
         "bad 'shape' tuple"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,", GNN_EFORMAT,
         "unterminated 'shape' tuple"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (99999999999999999999,)}", GNN_EFORMAT,
         "dimension too large"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (6,)} x", GNN_EFORMAT,
         "text after the dict"},
        {"{'descr': '<i8' 'fortran_order': False, 'shape': (6,)}", GNN_EFORMAT,
         "expected ',' or '}'"},
        {"{'descr' '<i8'}", GNN_EFORMAT, "expected ':'"},
        {"{descr: '<i8'}", GNN_EFORMAT, "expected a quoted key"},
        {"{'descr': '<i\\8'}", GNN_EFORMAT, "'descr' is not a string"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (5,)}", GNN_EFORMAT,
         "shape (5,) of '<i8' needs 40 data bytes but the member holds 48"},
        {"{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3)}", GNN_EFORMAT,
         "shape (2, 3) of '<i4' needs 24 data bytes but the member holds 48"},
        {"{'descr': '<i8', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", GNN_EFORMAT,
         "needs more than"},
        {"{'descr': '>i8', 'fortran_order': False, 'shape': (6,)}", GNN_EUNSUPPORTED,
         "dtype '>i8' is big-endian"},
        {"{'descr': '|O', 'fortran_order': False, 'shape': (6,)}", GNN_EUNSUPPORTED,
         "dtype '|O' is not supported"},
        {"{'descr': '|O8', 'fortran_order': False, 'shape': (6,)}", GNN_EUNSUPPORTED,
         "is an object array"},
        {"{'descr': '<c16', 'fortran_order': False, 'shape': (3,)}", GNN_EUNSUPPORTED,
         "dtype '<c16' is not supported"},
        {"{'descr': '<f2', 'fortran_order': False, 'shape': (24,)}", GNN_EUNSUPPORTED,
         "dtype '<f2' is not supported"},
        {"{'descr': '|i8', 'fortran_order': False, 'shape': (6,)}", GNN_EUNSUPPORTED,
         "no byte order"},
        {"{'descr': [('a', '<i8')], 'fortran_order': False, 'shape': (6,)}", GNN_EUNSUPPORTED,
         "structured dtypes"},
        {"{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3)}", GNN_EUNSUPPORTED,
         "fortran_order True is not supported"},
        {"{'descr': '<i1', 'fortran_order': False, 'shape': (1, 2, 3, 4, 2)}", GNN_EUNSUPPORTED,
         "more than 4 dimensions"},
    };
    for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; k++) {
        for (int method = 0; method <= 8; method += 8) {
            b = one_member("x.npy", npy_raw(1 + (int)(k % 3), dicts[k].dict, v, sizeof v), method,
                           NULL);
            expect_member_error(&b, "x", 0, dicts[k].code, dicts[k].want);
            free(b.b);
        }
    }

    /* accepted variants: Fortran order in 1-D, Python 2 longs, double
     * quotes, native order, no trailing comma, key order */
    static const char *ok[] = {
        "{'descr': '<i8', 'fortran_order': True, 'shape': (6,), }",
        "{'shape': (6L,), 'fortran_order': False, 'descr': '<i8'}",
        "{\"descr\": \"=i8\", \"fortran_order\": False, \"shape\": (2, 3)}",
        "{'descr': '<i8', 'fortran_order': False, 'shape': ( 3 , 2 , ), }",
        "{'descr':'<i8','fortran_order':False,'shape':(1,1,6,1)}",
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        b = one_member("x.npy", npy_raw(1, ok[k], v, sizeof v), 8, NULL);
        gnn_npz_t *z;
        gnn_npz_array_t *a;
        int64_t x[6];
        assert_int_equal(gnn_npz_open_mem(b.b, b.len, "ok.npz", &z), 0);
        int rc = gnn_npz_array_open(z, "x", &a);
        if (rc) fail_msg("%s: %s", ok[k], gnn_error_message());
        assert_int_equal(gnn_npz_array_read_i64(a, x, 6), 0);
        assert_memory_equal(x, v, sizeof v);
        gnn_npz_array_close(a);
        gnn_npz_close(z);
        free(b.b);
    }
}

/* ---- Allocation failure ----------------------------------------------- */

/* Open the archive, open each of the listed members and read it whole as
 * doubles (several chunks); 0 or the first error. */
static int open_and_read(int mem, const char *path, const buf_t *b)
{
    static const char *names[] = {"edge_index", "node_feat", "u1"};
    gnn_npz_t *z = (gnn_npz_t *)1;
    int rc = open_either(mem, path, b, &z);
    if (rc) {
        assert_null(z);
        return rc;
    }
    for (size_t k = 0; k < 3 && rc == 0; k++) {
        gnn_npz_array_t *a = (gnn_npz_array_t *)1;
        rc = gnn_npz_array_open(z, names[k], &a);
        if (rc) {
            assert_null(a);
            break;
        }
        int64_t n = gnn_npz_array_info(a)->count;
        double d[300];
        for (int64_t i = 0; i < n && rc == 0; i += 300)
            rc = gnn_npz_array_read_f64(a, d, n - i < 300 ? n - i : 300);
        if (rc == 0) rc = gnn_npz_array_seek(a, 1);
        gnn_npz_array_close(a);
    }
    gnn_npz_close(z);
    return rc;
}

static void test_alloc_failures(void **state)
{
    (void)state;
    for (int zip64 = 0; zip64 < 2; zip64++) {
        buf_t b = ref_archive(zip64);
        const char *path = tu_path("oom.npz");
        write_file(path, &b);
        for (int mem = 0; mem < 2; mem++) {
            int failures = 0;
            for (int64_t nth = 1;; nth++) {
                gnn_alloc_fail_at(nth);
                int rc = open_and_read(mem, path, &b);
                int injected = gnn_alloc_failed();
                gnn_alloc_fail_at(0);
                if (!injected) {
                    assert_int_equal(rc, 0);
                    break;
                }
                assert_int_equal(rc, GNN_ENOMEM);
                failures++;
            }
            /* archive, members, names (+ directory copy for a file); per
             * array handle, buffers, inflate state and window */
            assert_true(failures >= 10);
        }
        free(b.b);
    }
}

int main(void)
{
    g_seed = tu_seed();
    make_ref(g_seed);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),     cmocka_unit_test(test_raw_and_close_order),
        cmocka_unit_test(test_lockstep),       cmocka_unit_test(test_seek),
        cmocka_unit_test(test_crc_and_seeks),  cmocka_unit_test(test_conversions),
        cmocka_unit_test(test_archive_errors), cmocka_unit_test(test_member_errors),
        cmocka_unit_test(test_alloc_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
