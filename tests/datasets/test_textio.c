/*
 * The text reader and the number parsers: lines of plain, gzip and
 * concatenated-gzip input (CRLF, no final newline, empty lines, lines far
 * longer than a block), truncated and corrupt gzip refused, memory input,
 * and strict parsing that agrees with strtod.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "datasets/textio.h"
#include "graph/base/error.h"
#include "tests/common/testutil.h"

#include <math.h>
#include <string.h>
#include <zlib.h>

static void write_file(const char *path, const char *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, n, f), n);
    fclose(f);
}

static void write_gz(const char *path, const char *mode, const char *data, size_t n)
{
    gzFile z = gzopen(path, mode);
    assert_non_null(z);
    assert_int_equal(gzwrite(z, data, (unsigned)n), (int)n);
    gzclose(z);
}

/* All lines joined with '|'. */
static char *slurp(gnn_text_t *t, int *rc_out)
{
    size_t cap = 1 << 20, used = 0;
    char *s = malloc(cap);
    char *line;
    size_t len;
    int rc;
    while ((rc = gnn_text_next_line(t, &line, &len)) == 1) {
        assert_int_equal(strlen(line), len);
        while (used + len + 2 > cap) s = realloc(s, cap *= 2);
        memcpy(s + used, line, len);
        used += len;
        s[used++] = '|';
    }
    s[used] = '\0';
    *rc_out = rc;
    return s;
}

static void test_lines_plain_and_gzip(void **state)
{
    (void)state;
    const char text[] = "a,b\r\n\n  c \nlast";
    const char *want = "a,b||  c |last|";
    const char *plain = tu_path("t.csv"), *gz = tu_path("t.csv.gz"), *cat = tu_path("cat.gz");
    write_file(plain, text, strlen(text));
    write_gz(gz, "wb", text, strlen(text));
    write_gz(cat, "wb", "first\n", 6);
    write_gz(cat, "ab", "second\nthird", 12); /* a second gzip member */
    const char *paths[] = {plain, gz};
    for (int i = 0; i < 2; i++) {
        gnn_text_t *t;
        int rc;
        assert_int_equal(gnn_text_open(paths[i], &t), 0);
        char *s = slurp(t, &rc);
        assert_int_equal(rc, 0);
        assert_string_equal(s, want);
        assert_int_equal(gnn_text_line(t), 4);
        assert_int_equal(gnn_text_bytes(t), (int64_t)strlen(text));
        free(s);
        gnn_text_close(t);
    }
    gnn_text_t *t;
    int rc;
    assert_int_equal(gnn_text_open(cat, &t), 0);
    char *s = slurp(t, &rc);
    assert_int_equal(rc, 0);
    assert_string_equal(s, "first|second|third|");
    free(s);
    gnn_text_close(t);

    /* Empty input: no line. */
    write_file(plain, "", 0);
    assert_int_equal(gnn_text_open(plain, &t), 0);
    char *line;
    size_t len;
    assert_int_equal(gnn_text_next_line(t, &line, &len), 0);
    gnn_text_close(t);
}

static void test_long_lines_and_blocks(void **state)
{
    (void)state;
    /* Lines around and far beyond the 4 MiB block, compressed. */
    size_t n = 13u << 20;
    char *big = malloc(n);
    size_t at = 0;
    int lines = 0;
    size_t lens[] = {10, (4u << 20) - 1, 1, (6u << 20) + 17, 3, 100000};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        for (size_t i = 0; i < lens[k]; i++) big[at++] = (char)('a' + (i + k) % 26);
        big[at++] = '\n';
        lines++;
    }
    const char *gz = tu_path("big.gz");
    write_gz(gz, "wb1", big, at);
    gnn_text_t *t;
    assert_int_equal(gnn_text_open(gz, &t), 0);
    char *line;
    size_t len;
    size_t off = 0;
    for (int k = 0; k < lines; k++) {
        assert_int_equal(gnn_text_next_line(t, &line, &len), 1);
        assert_int_equal(len, lens[k]);
        assert_memory_equal(line, big + off, len);
        off += len + 1;
    }
    assert_int_equal(gnn_text_next_line(t, &line, &len), 0);
    gnn_text_close(t);
    free(big);
}

static void test_bad_gzip(void **state)
{
    (void)state;
    char text[200000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = i % 10 == 9 ? '\n' : (char)('0' + i % 7);
    const char *gz = tu_path("cut.gz");
    write_gz(gz, "wb", text, sizeof text);
    char *raw = tu_read_file(gz);
    struct stat st;
    stat(gz, &st);
    /* Cut: every prefix length class (header, middle, trailer) is refused. */
    size_t cuts[] = {5, (size_t)st.st_size / 2, (size_t)st.st_size - 4, (size_t)st.st_size - 1};
    for (size_t c = 0; c < sizeof cuts / sizeof cuts[0]; c++) {
        write_file(gz, raw, cuts[c]);
        gnn_text_t *t;
        assert_int_equal(gnn_text_open(gz, &t), 0);
        int rc;
        char *s = slurp(t, &rc);
        if (rc != GNN_EFORMAT || !strstr(gnn_error_message(), "truncated gzip stream"))
            fail_msg("cut at %zu: rc %d, %s", cuts[c], rc, gnn_error_message());
        free(s);
        gnn_text_close(t);
    }
    /* Corrupt data. */
    memcpy(text, raw, (size_t)st.st_size);
    for (size_t i = 40; i < 60; i++) text[i] ^= 0x5a;
    gnn_text_t *t;
    assert_int_equal(gnn_text_open_mem(text, (size_t)st.st_size, "mem.gz", &t), 0);
    int rc;
    char *s = slurp(t, &rc);
    assert_int_equal(rc, GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), "mem.gz: "));
    free(s);
    gnn_text_close(t);
    free(raw);
}

static void test_open_errors_and_fail(void **state)
{
    (void)state;
    gnn_text_t *t = (gnn_text_t *)1;
    assert_int_equal(gnn_text_open(tu_path("absent.csv"), &t), GNN_ENOENT);
    assert_null(t);
    assert_int_equal(gnn_text_open(tu_tmpdir(), &t), GNN_EIO);
    assert_non_null(strstr(gnn_error_message(), "is a directory"));
    const char data[] = "1\n2\n";
    assert_int_equal(gnn_text_open_mem(data, 4, "x.csv", &t), 0);
    char *line;
    size_t len;
    gnn_text_next_line(t, &line, &len);
    gnn_text_next_line(t, &line, &len);
    assert_int_equal(gnn_text_fail(t, "bad value %d", 7), GNN_EFORMAT);
    assert_string_equal(gnn_error_message(), "x.csv:2: bad value 7");
    gnn_text_close(t);
}

/* A NUL byte in the text is an error naming its line, plain or gzip, and
 * the reader goes on after it; UTF-16 input fails on its first line. */
static void test_nul_byte(void **state)
{
    (void)state;
    const char data[] = "0,1\n1,\0002\n2,3\n";
    const size_t n = sizeof data - 1;
    const char *plain = tu_path("nul.csv"), *gz = tu_path("nul.csv.gz");
    write_file(plain, data, n);
    write_gz(gz, "wb", data, n);
    const char *paths[] = {plain, gz};
    for (int k = 0; k < 2; k++) {
        gnn_text_t *t;
        assert_int_equal(gnn_text_open(paths[k], &t), 0);
        char *line;
        size_t len;
        assert_int_equal(gnn_text_next_line(t, &line, &len), 1);
        assert_int_equal(gnn_text_next_line(t, &line, &len), GNN_EFORMAT);
        char want[800];
        snprintf(want, sizeof want, "%s:2: a NUL byte (binary or UTF-16 input?)", paths[k]);
        assert_string_equal(gnn_error_message(), want);
        assert_int_equal(gnn_text_next_line(t, &line, &len), 1);
        assert_string_equal(line, "2,3");
        gnn_text_close(t);
    }
    const char utf16[] = "\xff\xfe" "0\0 \0" "1\0\n\0";
    gnn_text_t *t;
    assert_int_equal(gnn_text_open_mem(utf16, sizeof utf16 - 1, "u16.txt", &t), 0);
    char *line;
    size_t len;
    assert_int_equal(gnn_text_next_line(t, &line, &len), GNN_EFORMAT);
    assert_string_equal(gnn_error_message(), "u16.txt:1: a NUL byte (binary or UTF-16 input?)");
    gnn_text_close(t);
}

static void test_numbers(void **state)
{
    (void)state;
    struct {
        const char *s;
        int rc;
        int64_t v;
        const char *rest;
    } ints[] = {{"0", 0, 0, ""},
                {"  42,", 0, 42, ","},
                {"-17 ", 0, -17, " "},
                {"+5", 0, 5, ""},
                {"9223372036854775807", 0, INT64_MAX, ""},
                {"-9223372036854775808", 0, INT64_MIN, ""},
                {"9223372036854775808", GNN_ERANGE, 0, NULL},
                {"99999999999999999999", GNN_ERANGE, 0, NULL},
                {"", GNN_EFORMAT, 0, NULL},
                {"-", GNN_EFORMAT, 0, NULL},
                {"x1", GNN_EFORMAT, 0, NULL},
                {"1.5", 0, 1, ".5"}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        const char *p = ints[i].s, *end = p + strlen(p);
        int64_t v = -999;
        int rc = gnn_parse_i64(&p, end, &v);
        assert_int_equal(rc, ints[i].rc);
        if (rc == 0) {
            assert_true(v == ints[i].v);
            assert_string_equal(p, ints[i].rest);
        }
    }
    const char *floats[] = {"0", "1", "-0.5", "3.14159", "1e10", "1E-5", "-2.5e+3", ".25", "5.",
                            "0.1", "0.30000000000000004", "123456789012345678901234", "1e-320",
                            "4.9406564584124654e-324", "1.7976931348623157e308", "nan", "-inf",
                            "0.000000000000000000000000001", "7e22", "7e23"};
    for (size_t i = 0; i < sizeof floats / sizeof floats[0]; i++) {
        const char *p = floats[i], *end = p + strlen(p);
        double v;
        assert_int_equal(gnn_parse_f64(&p, end, &v), 0);
        double want = strtod(floats[i], NULL);
        if (!(v == want || (isnan(v) && isnan(want))))
            fail_msg("%s: %.17g != %.17g", floats[i], v, want);
        assert_true(p == end);
        float f;
        p = floats[i];
        if (fabs(want) < 3.4e38 || isnan(want) || isinf(want)) {
            assert_int_equal(gnn_parse_f32(&p, end, &f), 0);
            assert_true(f == (float)want || (isnan(f) && isnan(want)));
        }
    }
    const char *bad[] = {"", "e5", "1e", "1e+", "abc", "-", "."};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *p = bad[i];
        double v;
        if (gnn_parse_f64(&p, p + strlen(p), &v) != GNN_EFORMAT) fail_msg("'%s' accepted", bad[i]);
    }
    const char *p = "1e39";
    float f;
    assert_int_equal(gnn_parse_f32(&p, p + 4, &f), GNN_ERANGE);
    /* Random decimals: the fast path equals strtod bit for bit. */
    unsigned seed = tu_seed();
    srand(seed);
    for (int i = 0; i < 200000; i++) {
        char buf[64];
        int digits = rand() % 9;
        snprintf(buf, sizeof buf, "%s%d.%0*d%s", rand() % 2 ? "-" : "", rand() % 100000, digits,
                 digits ? rand() % 1000000000 % (int)pow(10, digits) : 0, rand() % 4 ? "" : "e-3");
        const char *q = buf;
        double v;
        assert_int_equal(gnn_parse_f64(&q, q + strlen(q), &v), 0);
        if (v != strtod(buf, NULL)) fail_msg("%s: %.17g vs %.17g", buf, v, strtod(buf, NULL));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_plain_and_gzip),
        cmocka_unit_test(test_long_lines_and_blocks),
        cmocka_unit_test(test_bad_gzip),
        cmocka_unit_test(test_open_errors_and_fail),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_nul_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
