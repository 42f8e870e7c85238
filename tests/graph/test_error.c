/*
 * The error contract: codes, names and messages from one table, the
 * recorded failure with its source location, context prefixes, and the
 * one-line report with the exit status a command returns.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/error.h"
#include "graph/base/log.h"
#include "tests/common/testutil.h"

#include <string.h>

static void test_table(void **state)
{
    (void)state;
    assert_string_equal(gnn_strerror(GNN_OK), "success");
    assert_string_equal(gnn_strerror(GNN_ENOMEM), "out of memory");
    assert_string_equal(gnn_strerror(GNN_EVERSION), "unsupported format version");
    assert_string_equal(gnn_strerror(12345), "unknown error");
    assert_string_equal(gnn_error_name(GNN_EFORMAT), "GNN_EFORMAT");
    assert_string_equal(gnn_error_name(GNN_EHDF5), "GNN_EHDF5");
    assert_string_equal(gnn_error_name(-999), "GNN_E?");
    /* Codes are distinct and negative; every one has a name and a message. */
    for (int c = -1; c > -GNN_ERROR_COUNT_; c--) {
        assert_string_not_equal(gnn_error_name(c), "GNN_E?");
        assert_string_not_equal(gnn_strerror(c), "unknown error");
    }
    assert_string_equal(gnn_error_name(-GNN_ERROR_COUNT_), "GNN_E?");
}

static int fails_at_depth(int depth)
{
    int rc = 0;
    if (depth == 0) return GNN_FAIL(GNN_ERANGE, "id %d out of range", 42);
    GNN_TRY(fails_at_depth(depth - 1));
fail:
    return rc;
}

static void test_record_keeps_first_failure(void **state)
{
    (void)state;
    gnn_error_clear();
    assert_int_equal(gnn_error_code(), 0);
    assert_string_equal(gnn_error_message(), "");
    int rc = fails_at_depth(3);
    assert_int_equal(rc, GNN_ERANGE);
    assert_int_equal(gnn_error_code(), GNN_ERANGE);
    assert_string_equal(gnn_error_message(), "id 42 out of range");
    assert_string_equal(gnn_error_file(), "tests/graph/test_error.c");
    assert_true(gnn_error_line() > 0);
    gnn_error_prefix("reading %s", "graph.h5");
    assert_string_equal(gnn_error_message(), "reading graph.h5: id 42 out of range");
    assert_int_equal(gnn_error_code(), GNN_ERANGE);
}

static void test_empty_message_uses_table(void **state)
{
    (void)state;
    GNN_FAIL(GNN_EIO, "%s", "");
    assert_string_equal(gnn_error_message(), "input/output error");
}

static void test_long_prefix_is_truncated_safely(void **state)
{
    (void)state;
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    GNN_FAIL(GNN_EIO, "%s", big);
    gnn_error_prefix("%s", big);
    assert_true(strlen(gnn_error_message()) < 1024);
}

static void test_check_macro(void **state)
{
    (void)state;
    int rc = 0;
    int x = 5;
    GNN_CHECK(x < 3, GNN_EINVAL, "x = %d is too large", x);
    fail_msg("GNN_CHECK did not jump");
fail:
    assert_int_equal(rc, GNN_EINVAL);
    assert_string_equal(gnn_error_message(), "x = 5 is too large");
}

static void test_report_one_line(void **state)
{
    (void)state;
    FILE *saved = stderr;
    const char *path = tu_path("report.txt");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    stderr = f;
    GNN_FAIL(GNN_EFORMAT, "bad.h5: line 3\nhas two lines");
    int st = gnn_error_report("gnn-x", NULL, GNN_EFORMAT);
    GNN_FAIL(GNN_EUSAGE, "unknown option '--foo'");
    int st2 = gnn_error_report("gnn-x", "gnn-x sub", GNN_EUSAGE);
    int st0 = gnn_error_report("gnn-x", NULL, 0);
    stderr = saved;
    fclose(f);
    assert_int_equal(st, 1);
    assert_int_equal(st2, 2);
    assert_int_equal(st0, 0);
    char *s = tu_read_file(path);
    assert_string_equal(s, "gnn-x: error: bad.h5: line 3 has two lines\n"
                           "gnn-x: error: unknown option '--foo' (see gnn-x sub --help)\n");
    free(s);
}

static void test_verbose_report_has_location(void **state)
{
    (void)state;
    const char *path = tu_path("verbose.txt");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    int line = __LINE__ + 1;
    GNN_FAIL(GNN_ENOENT, "x.h5: missing");
    gnn_error_print(f, "prog", 1);
    fclose(f);
    char want[256];
    snprintf(want, sizeof want, "prog: error: x.h5: missing [GNN_ENOENT at tests/graph/test_error.c:%d]\n",
             line);
    char *s = tu_read_file(path);
    assert_string_equal(s, want);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_record_keeps_first_failure),
        cmocka_unit_test(test_empty_message_uses_table),
        cmocka_unit_test(test_long_prefix_is_truncated_safely),
        cmocka_unit_test(test_check_macro),
        cmocka_unit_test(test_report_one_line),
        cmocka_unit_test(test_verbose_report_has_location),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
