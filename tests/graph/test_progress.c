/*
 * Tests of log.c and progress.c: level filtering and line prefixes, the
 * progress lines of each mode, the closing line, number and time formats,
 * concurrent updates, and NULL handles.
 *
 * Output goes to a tmpfile (gnn_log_set_stream, gnn_progress_configure) and
 * is read back and compared exactly where the text is deterministic; where
 * it holds a rate or a time, its shape is checked with a POSIX regex.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static FILE *g_tmp;

static int setup(void **state)
{
    (void)state;
    g_tmp = tmpfile();
    if (!g_tmp) return -1;
    gnn_log_set_level(GNN_LOG_INFO);
    gnn_log_set_prog(NULL);
    gnn_log_set_stream(g_tmp);
    gnn_progress_configure(g_tmp, GNN_PROGRESS_LINES, 0);
    gnn_error_clear();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gnn_log_set_level(GNN_LOG_INFO);
    gnn_log_set_prog(NULL);
    gnn_log_set_stream(NULL);
    gnn_progress_configure(NULL, GNN_PROGRESS_AUTO, 5);
    gnn_alloc_fail_at(0);
    fclose(g_tmp);
    g_tmp = NULL;
    return 0;
}

/* Everything written to g_tmp so far, NUL-terminated; free() it. */
static char *slurp(void)
{
    fflush(g_tmp);
    long n = ftell(g_tmp);
    assert_true(n >= 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    rewind(g_tmp);
    assert_int_equal(fread(buf, 1, (size_t)n, g_tmp), (size_t)n);
    buf[n] = '\0';
    return buf;
}

/* True when all of s matches the extended regex re. */
static int matches(const char *s, const char *re)
{
    regex_t rx;
    if (regcomp(&rx, re, REG_EXTENDED | REG_NOSUB) != 0) fail_msg("bad regex %s", re);
    int ok = regexec(&rx, s, 0, NULL, 0) == 0;
    regfree(&rx);
    if (!ok) print_message("'%s' does not match /%s/\n", s, re);
    return ok;
}

/* The n-th line (0-based) of text without its newline, into buf. */
static const char *line_of(const char *text, int n, char *buf, size_t len)
{
    const char *p = text;
    for (int i = 0; i < n && p; i++) {
        p = strchr(p, '\n');
        if (p) p++;
    }
    if (!p || !*p) return NULL;
    size_t k = strcspn(p, "\n");
    if (k >= len) k = len - 1;
    memcpy(buf, p, k);
    buf[k] = '\0';
    return buf;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* ---- log ------------------------------------------------------------------- */

static void test_log_levels_filter(void **state)
{
    (void)state;
    gnn_log_set_prog("gnn-test");
    GNN_DEBUG("not shown at info");
    GNN_INFO("loaded %d rows", 5);
    GNN_WARN("odd value %s\n", "x"); /* newline already there: not doubled */
    GNN_LOG_ERROR_("bad");
    gnn_log_set_level(GNN_LOG_DEBUG);
    GNN_DEBUG("shown at debug");
    gnn_log_set_level(GNN_LOG_WARN);
    GNN_INFO("not shown at warn");
    GNN_WARN("still shown");
    char *out = slurp();
    assert_string_equal(out, "gnn-test: loaded 5 rows\n"
                             "gnn-test: warning: odd value x\n"
                             "gnn-test: error: bad\n"
                             "gnn-test: debug: shown at debug\n"
                             "gnn-test: warning: still shown\n");
    free(out);
}

static void test_log_without_prog(void **state)
{
    (void)state;
    GNN_INFO("plain");
    GNN_WARN("careful");
    gnn_log(GNN_LOG_ERROR, "%s", "");
    char *out = slurp();
    assert_string_equal(out, "plain\nwarning: careful\nerror: \n");
    free(out);
}

static void test_log_settings(void **state)
{
    (void)state;
    assert_int_equal(gnn_log_level(), GNN_LOG_INFO);
    assert_ptr_equal(gnn_log_stream(), g_tmp);
    gnn_log_set_stream(NULL);
    assert_ptr_equal(gnn_log_stream(), stderr);
    assert_null(gnn_log_prog());
    char name[] = "gnn-dataset info";
    gnn_log_set_prog(name);
    name[0] = 'X'; /* the name is copied */
    assert_string_equal(gnn_log_prog(), "gnn-dataset info");
    gnn_log_set_prog("");
    assert_null(gnn_log_prog());
    gnn_log_set_level((gnn_log_level_t)7);
    assert_int_equal(gnn_log_level(), GNN_LOG_DEBUG);
}

static void test_log_long_line(void **state)
{
    (void)state;
    char big[5001];
    memset(big, 'a', 5000);
    big[5000] = '\0';
    gnn_log_set_prog("p");
    GNN_INFO("%s", big);
    char *out = slurp();
    assert_int_equal(strlen(out), 3 + 5000 + 1);
    assert_memory_equal(out, "p: aaa", 6);
    assert_string_equal(out + 3 + 5000, "\n");
    free(out);
}

static void test_quiet_hides_info_and_progress(void **state)
{
    (void)state;
    gnn_log_set_level(GNN_LOG_ERROR); /* what --quiet does */
    GNN_INFO("hidden");
    GNN_WARN("hidden");
    gnn_progress_t *p = gnn_progress_start("reading", 100, "rows");
    assert_non_null(p);
    gnn_progress_add(p, 50);
    gnn_progress_finish(p);
    GNN_LOG_ERROR_("shown");
    char *out = slurp();
    assert_string_equal(out, "error: shown\n");
    free(out);
}

/* ---- progress lines ---------------------------------------------------------- */

static void test_progress_lines(void **state)
{
    (void)state;
    gnn_progress_t *p = gnn_progress_start("reading", 2720000, "edges");
    assert_non_null(p);
    gnn_progress_set(p, 1230000);
    gnn_progress_add(p, 1490000);
    gnn_progress_finish(p);
    char *out = slurp(), line[256];
    assert_non_null(line_of(out, 0, line, sizeof line));
    assert_true(matches(line, "^reading: 45% \\(1\\.23M/2\\.72M edges\\), "
                              "[0-9.]+[KMGTPE]? edges/s, ETA [0-9]+:[0-9]{2}$"));
    assert_non_null(line_of(out, 1, line, sizeof line));
    assert_true(matches(line, "^reading: 100% \\(2\\.72M/2\\.72M edges\\), "
                              "[0-9.]+[KMGTPE]? edges/s, ETA 0:00$"));
    assert_non_null(line_of(out, 2, line, sizeof line));
    assert_true(matches(line, "^reading: done, 2\\.72M edges in [0-9]\\.[0-9]{2} s "
                              "\\([0-9.]+[KMGTPE]? edges/s\\)$"));
    assert_null(line_of(out, 3, line, sizeof line));
    assert_int_equal(out[strlen(out) - 1], '\n');
    free(out);
}

static void test_progress_eta(void **state)
{
    (void)state;
    /* A quarter done after 0.2 s: the rest takes about 0.6 s more. */
    gnn_progress_t *p = gnn_progress_start("sort", 400, "rows");
    sleep_s(0.2);
    gnn_progress_set(p, 100);
    gnn_progress_finish(p);
    char *out = slurp(), line[256];
    assert_non_null(line_of(out, 0, line, sizeof line));
    assert_true(matches(line, "^sort: 25% \\(100/400 rows\\), [0-9.]+ rows/s, ETA 0:0[01]$"));
    assert_non_null(line_of(out, 1, line, sizeof line));
    assert_true(matches(line, "^sort: done, 100 rows in 0\\.[2-9][0-9] s \\([0-9.]+ rows/s\\)$"));
    free(out);
}

static void test_progress_unknown_total(void **state)
{
    (void)state;
    gnn_progress_t *p = gnn_progress_start("scan", 0, "rows");
    gnn_progress_add(p, 1500);
    gnn_progress_finish(p);
    char *out = slurp(), line[256];
    assert_non_null(line_of(out, 0, line, sizeof line));
    assert_true(matches(line, "^scan: 1\\.50K rows, [0-9.]+[KMGTPE]? rows/s, 0:00 elapsed$"));
    assert_non_null(line_of(out, 1, line, sizeof line));
    assert_true(
        matches(line, "^scan: done, 1\\.50K rows in [0-9.]+ s \\([0-9.]+[KMGTPE]? rows/s\\)$"));
    free(out);
}

static void test_progress_bytes(void **state)
{
    (void)state;
    gnn_progress_t *p = gnn_progress_start("copy", (int64_t)3 << 30, "B");
    gnn_progress_set(p, (int64_t)3 << 29);
    gnn_progress_finish(p);
    char *out = slurp(), line[256];
    assert_non_null(line_of(out, 0, line, sizeof line));
    assert_true(
        matches(line, "^copy: 50% \\(1\\.5 GiB/3\\.0 GiB\\), [0-9.]+ [KMGTPE]iB/s, ETA [0-9:]+$"));
    assert_non_null(line_of(out, 1, line, sizeof line));
    assert_true(matches(line, "^copy: done, 1\\.5 GiB in [0-9.]+ s \\([0-9.]+ [KMGTPE]iB/s\\)$"));
    free(out);
}

static void test_progress_interval_limits_lines(void **state)
{
    (void)state;
    gnn_progress_configure(g_tmp, GNN_PROGRESS_LINES, 1000);
    gnn_progress_t *p = gnn_progress_start("epochs", 10, NULL);
    for (int i = 0; i < 10; i++) gnn_progress_add(p, 1);
    gnn_progress_finish(p);
    char *out = slurp();
    assert_true(matches(out, "^epochs: done, 10 in [0-9.]+ s \\([0-9.]+[KMGTPE]?/s\\)\n$"));
    free(out);
}

static void test_progress_off_and_auto(void **state)
{
    (void)state;
    gnn_progress_configure(g_tmp, GNN_PROGRESS_OFF, 0);
    gnn_progress_t *p = gnn_progress_start("quiet", 10, "rows");
    assert_non_null(p);
    gnn_progress_add(p, 10);
    gnn_progress_finish(p);
    char *out = slurp();
    assert_string_equal(out, "");
    free(out);

    /* A tmpfile is not a terminal: AUTO writes plain lines. */
    gnn_progress_configure(g_tmp, GNN_PROGRESS_AUTO, 0);
    p = gnn_progress_start("auto", 10, "rows");
    gnn_progress_add(p, 5);
    gnn_progress_finish(p);
    out = slurp();
    assert_true(
        matches(out, "^auto: 50% \\(5/10 rows\\), [^\n]*\nauto: done, 5 rows in [^\n]*\n$"));
    assert_null(strchr(out, '\r'));
    free(out);
}

static void test_progress_tty(void **state)
{
    (void)state;
    gnn_progress_configure(g_tmp, GNN_PROGRESS_TTY, 5); /* TTY redraws every 0.1 s regardless */
    gnn_progress_t *p = gnn_progress_start("load", 200, "rows");
    gnn_progress_set(p, 10); /* too soon after start: not drawn */
    sleep_s(0.15);
    gnn_progress_set(p, 100);
    gnn_progress_set(p, 150); /* too soon after the last draw */
    GNN_WARN("midway"); /* erases the live line first */
    gnn_progress_finish(p);
    GNN_WARN("after"); /* nothing live to erase */
    char *out = slurp();
    assert_true(matches(out,
                        "^\rload \\[############------------\\]  50% 100/200 rows, "
                        "[0-9.]+ rows/s, ETA 0:0[0-9]\033\\[K"
                        "\r\033\\[Kwarning: midway\n"
                        "\rload: done, 150 rows in 0\\.[0-9]{2} s \\([0-9.]+ rows/s\\)\033\\[K\n"
                        "warning: after\n$"));
    free(out);
}

static void test_progress_tty_unknown_total(void **state)
{
    (void)state;
    gnn_progress_configure(g_tmp, GNN_PROGRESS_TTY, 0);
    gnn_progress_t *p = gnn_progress_start("scan", 0, "B");
    sleep_s(0.15);
    gnn_progress_add(p, 2048);
    gnn_progress_finish(p);
    char *out = slurp();
    assert_true(matches(out, "^\rscan: 2\\.0 KiB, [0-9.]+ [KMGTPE]?i?B/s, 0:00 elapsed\033\\[K"
                             "\rscan: done, 2\\.0 KiB in [0-9.]+ s \\([^)]*\\)\033\\[K\n$"));
    free(out);
}

/* ---- threads ------------------------------------------------------------------- */

#define PER_THREAD 20000

static void *add_ones(void *arg)
{
    gnn_progress_t *p = arg;
    for (int i = 0; i < PER_THREAD; i++) gnn_progress_add(p, 1);
    return NULL;
}

static void test_progress_two_threads(void **state)
{
    (void)state;
    /* Interval 0: every update wants to print, so the threads contend for
     * the print flag as well as the counter. */
    gnn_progress_t *p = gnn_progress_start("work", 2 * PER_THREAD, "items");
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, add_ones, p), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    /* Counts print with three significant digits; bring the total down to
     * 999, where a single lost update would show as 998. */
    gnn_progress_add(p, 999 - 2 * PER_THREAD);
    gnn_progress_finish(p);
    char *out = slurp();
    /* Every line is whole (no two threads wrote into one line), and the
     * closing line is the last. */
    regex_t rx;
    assert_int_equal(regcomp(&rx,
                             "^work: ([0-9]+% \\([0-9.KM]+/40\\.0K items\\), [^,]+ items/s, "
                             "ETA [0-9:?]+|done, 999 items in [0-9.]+ s \\([^)]+\\))$",
                             REG_EXTENDED | REG_NOSUB),
                     0);
    int nlines = 0, done_seen = 0;
    for (char *s = out, *nl; (nl = strchr(s, '\n')); s = nl + 1, nlines++) {
        *nl = '\0';
        if (regexec(&rx, s, 0, NULL, 0) != 0) fail_msg("malformed line '%s'", s);
        if (strncmp(s, "work: done", 10) == 0) {
            done_seen = 1;
            assert_null(strchr(nl + 1, '\n'));
        }
    }
    regfree(&rx);
    assert_true(nlines >= 2);
    assert_true(done_seen);
    free(out);
}

/* ---- NULL and failures ------------------------------------------------------------ */

static void test_progress_null_handle(void **state)
{
    (void)state;
    gnn_progress_set(NULL, 5);
    gnn_progress_add(NULL, 5);
    gnn_progress_finish(NULL);

    gnn_alloc_fail_at(1);
    gnn_progress_t *p = gnn_progress_start("oom", 10, "rows");
    assert_null(p);
    assert_true(gnn_alloc_failed());
    assert_int_equal(gnn_error_code(), GNN_ENOMEM);
    gnn_alloc_fail_at(0);
    gnn_progress_add(p, 1); /* the work goes on without a report */
    gnn_progress_finish(p);

    p = gnn_progress_start(NULL, 3, NULL); /* no label, no unit */
    gnn_progress_add(p, 3);
    gnn_progress_finish(p);
    char *out = slurp();
    assert_true(matches(out, "^100% \\(3/3\\), [^\n]*\ndone, 3 in [0-9.]+ s \\([^)]+/s\\)\n$"));
    free(out);
}

/* ---- formats ------------------------------------------------------------------------ */

static void test_format_count(void **state)
{
    (void)state;
    static const struct {
        double n;
        const char *unit, *want;
    } cases[] = {
        {0, "edges", "0"},
        {950, "edges", "950"},
        {999, NULL, "999"},
        {1000, NULL, "1.00K"},
        {1234, NULL, "1.23K"},
        {12345, NULL, "12.3K"},
        {123456, NULL, "123K"},
        {999499, NULL, "999K"},
        {999999, NULL, "1.00M"},
        {4.56e6, NULL, "4.56M"},
        {2.72e6, NULL, "2.72M"},
        {7.89e9, NULL, "7.89G"},
        {1e12, NULL, "1.00T"},
        {0.5, "rows", "0.50"},
        {12.5, NULL, "12.5"},
        {-1500, NULL, "-1.50K"},
        {0, "B", "0 B"},
        {512, "B", "512 B"},
        {1023, "B", "1023 B"},
        {1024, "B", "1.0 KiB"},
        {1536, "B", "1.5 KiB"},
        {3.2 * 1048576, "B", "3.2 MiB"},
        {1.1 * 1073741824.0, "B", "1.1 GiB"},
        {100.0 * 1048576, "B", "100 MiB"},
        {1099511627776.0, "B", "1.0 TiB"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_ptr_equal(gnn_format_count(buf, sizeof buf, cases[i].n, cases[i].unit), buf);
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("%g %s: got '%s', want '%s'", cases[i].n, cases[i].unit ? cases[i].unit : "-",
                     buf, cases[i].want);
    }
    char small[4];
    gnn_format_count(small, sizeof small, 1234, NULL);
    assert_string_equal(small, "1.2"); /* truncated, still terminated */
}

static void test_format_duration(void **state)
{
    (void)state;
    static const struct {
        double s;
        const char *want;
    } cases[] = {
        {0, "0.00 s"},    {0.53, "0.53 s"},  {9.99, "9.99 s"},  {12.3, "12.3 s"},
        {59.9, "59.9 s"}, {59.97, "1:00"},   {65, "1:05"},      {600, "10:00"},
        {3599, "59:59"},  {3600, "1:00:00"}, {7384, "2:03:04"}, {-1, "0.00 s"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_ptr_equal(gnn_format_duration(buf, sizeof buf, cases[i].s), buf);
        if (strcmp(buf, cases[i].want) != 0)
            fail_msg("%g s: got '%s', want '%s'", cases[i].s, buf, cases[i].want);
    }
}

static void test_now_is_monotonic(void **state)
{
    (void)state;
    double a = gnn_now();
    sleep_s(0.01);
    double b = gnn_now();
    assert_true(a > 0);
    assert_true(b - a >= 0.009);
    assert_true(b - a < 5);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_log_levels_filter),
        T(test_log_without_prog),
        T(test_log_settings),
        T(test_log_long_line),
        T(test_quiet_hides_info_and_progress),
        T(test_progress_lines),
        T(test_progress_eta),
        T(test_progress_unknown_total),
        T(test_progress_bytes),
        T(test_progress_interval_limits_lines),
        T(test_progress_off_and_auto),
        T(test_progress_tty),
        T(test_progress_tty_unknown_total),
        T(test_progress_two_threads),
        T(test_progress_null_handle),
        T(test_format_count),
        T(test_format_duration),
        T(test_now_is_monotonic),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
