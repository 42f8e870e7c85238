/*
 * Tests of cli.c: every option form and type on an example options struct,
 * positionals between options and after "--", each usage error with its
 * exact message, --help (from gnn_cli_help and from the parser, with stdout
 * redirected), the built-in -q/-v, and a table of good and bad sizes.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the example command ------------------------------------------------------ */

typedef struct {
    int epochs;
    int64_t seed;
    double lr;
    const char *out;
    int64_t cache;
    int force;
    const char *name;
} train_opts_t;

static void train_defaults(train_opts_t *o)
{
    *o = (train_opts_t){
        .epochs = 10,
        .seed = 42,
        .lr = 0.01,
        .out = "model.h5",
        .cache = (int64_t)512 << 20,
        .force = 0,
        .name = NULL,
    };
}

static const gnn_opt_t train_table[] = {
    {"epochs", 'e', GNN_OPT_INT, offsetof(train_opts_t, epochs), "N", "number of epochs"},
    {"seed", 0, GNN_OPT_I64, offsetof(train_opts_t, seed), "N", "random seed"},
    {"lr", 0, GNN_OPT_DOUBLE, offsetof(train_opts_t, lr), "X", "learning rate"},
    {"out", 'o', GNN_OPT_STRING, offsetof(train_opts_t, out), "FILE", "where to write the model"},
    {"cache", 'c', GNN_OPT_SIZE, offsetof(train_opts_t, cache), "SIZE", "feature cache size"},
    {"force", 'f', GNN_OPT_FLAG, offsetof(train_opts_t, force), NULL, "overwrite the output"},
    {"name", 0, GNN_OPT_STRING, offsetof(train_opts_t, name), NULL, "run name"},
    {NULL, 0, GNN_OPT_FLAG, 0, NULL, NULL},
};

static const gnn_cli_t train_cli = {
    .prog = "gnn-train",
    .args = "GRAPH [PARTS]",
    .summary = "Train a GNN on a partitioned graph.",
    .opts = train_table,
    .min_positional = 1,
    .max_positional = 2,
};

static const char train_help[] =
    "usage: gnn-train [options] GRAPH [PARTS]\n"
    "Train a GNN on a partitioned graph.\n"
    "\n"
    "options:\n"
    "  -e, --epochs N    number of epochs (default: 10)\n"
    "      --seed N      random seed (default: 42)\n"
    "      --lr X        learning rate (default: 0.01)\n"
    "  -o, --out FILE    where to write the model (default: model.h5)\n"
    "  -c, --cache SIZE  feature cache size (default: 512M)\n"
    "  -f, --force       overwrite the output\n"
    "      --name VALUE  run name\n"
    "  -h, --help        show this help and exit\n"
    "  -q, --quiet       print errors only\n"
    "  -v, --verbose     print debug messages too\n";

#define MAXARG 16

/* The result of one parse: return code, options, positionals. */
typedef struct {
    int rc;
    train_opts_t o;
    char *pos[MAXARG];
    int npos;
} parsed_t;

/* Parse "gnn-train" followed by the NULL-terminated words with cli. */
static parsed_t parse_with(const gnn_cli_t *cli, const char *const *words)
{
    static char *argv[MAXARG + 1];
    parsed_t r;
    int argc = 0;
    argv[argc++] = "gnn-train";
    for (; *words; words++) {
        assert_true(argc < MAXARG);
        argv[argc++] = (char *)*words;
    }
    argv[argc] = NULL;
    train_defaults(&r.o);
    memset(r.pos, 0, sizeof r.pos);
    r.npos = -1;
    gnn_error_clear();
    r.rc = gnn_cli_parse(cli, argc, argv, 1, &r.o, r.pos, &r.npos);
    return r;
}

#define PARSE(...) parse_with(&train_cli, (const char *const[]){__VA_ARGS__, NULL})

static int setup(void **state)
{
    (void)state;
    gnn_log_set_level(GNN_LOG_INFO);
    gnn_error_clear();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    gnn_log_set_level(GNN_LOG_INFO);
    return 0;
}

/* Everything in f, NUL-terminated; free() it. */
static char *slurp(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    assert_true(n >= 0);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    rewind(f);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    return buf;
}

/* ---- forms -------------------------------------------------------------------- */

static void test_defaults_untouched(void **state)
{
    (void)state;
    parsed_t r = PARSE("graph.h5");
    train_opts_t d;
    train_defaults(&d);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 1);
    assert_string_equal(r.pos[0], "graph.h5");
    assert_int_equal(r.o.epochs, d.epochs);
    assert_int_equal(r.o.seed, d.seed);
    assert_true(r.o.lr == d.lr);
    assert_string_equal(r.o.out, d.out);
    assert_int_equal(r.o.cache, d.cache);
    assert_int_equal(r.o.force, 0);
    assert_null(r.o.name);
    assert_int_equal(gnn_log_level(), GNN_LOG_INFO);
}

static void test_long_forms(void **state)
{
    (void)state;
    parsed_t r = PARSE("--epochs", "5", "--lr=0.5", "--seed", "-7", "--out", "m.h5",
                       "--cache=1.5GiB", "--force", "--name=", "graph.h5");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.epochs, 5);
    assert_true(r.o.lr == 0.5);
    assert_int_equal(r.o.seed, -7);
    assert_string_equal(r.o.out, "m.h5");
    assert_int_equal(r.o.cache, (int64_t)3 << 29);
    assert_int_equal(r.o.force, 1);
    assert_string_equal(r.o.name, ""); /* "--name=" gives an empty value */
    assert_int_equal(r.npos, 1);
    assert_string_equal(r.pos[0], "graph.h5");

    r = PARSE("--seed=9223372036854775807", "--epochs=-2147483648", "--lr", "-1e-3", "g");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.seed, INT64_MAX);
    assert_int_equal(r.o.epochs, -2147483647 - 1);
    assert_true(r.o.lr == -1e-3);
}

static void test_short_forms(void **state)
{
    (void)state;
    parsed_t r = PARSE("-e", "3", "-o", "out.h5", "-c", "64K", "-f", "g");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.epochs, 3);
    assert_string_equal(r.o.out, "out.h5");
    assert_int_equal(r.o.cache, 65536);
    assert_int_equal(r.o.force, 1);
    assert_int_equal(r.npos, 1);

    /* Attached values and grouped flags, getopt style. */
    r = PARSE("-e7", "-fq", "-c2G", "g");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.epochs, 7);
    assert_int_equal(r.o.force, 1);
    assert_int_equal(r.o.cache, (int64_t)2 << 30);
    assert_int_equal(gnn_log_level(), GNN_LOG_ERROR);
}

static void test_last_value_wins(void **state)
{
    (void)state;
    parsed_t r = PARSE("-e", "1", "g", "--epochs", "2", "--epochs=3");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.epochs, 3);
}

static void test_positionals_interleaved(void **state)
{
    (void)state;
    parsed_t r = PARSE("a.h5", "--epochs", "2", "parts", "-f");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 2);
    assert_string_equal(r.pos[0], "a.h5");
    assert_string_equal(r.pos[1], "parts");
    assert_int_equal(r.o.epochs, 2);
    assert_int_equal(r.o.force, 1);

    r = PARSE("-", "-f"); /* a lone "-" is a positional (stdin) */
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 1);
    assert_string_equal(r.pos[0], "-");
}

static void test_double_dash_ends_options(void **state)
{
    (void)state;
    parsed_t r = PARSE("-e", "4", "--", "--force", "-x");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.o.epochs, 4);
    assert_int_equal(r.o.force, 0);
    assert_int_equal(r.npos, 2);
    assert_string_equal(r.pos[0], "--force");
    assert_string_equal(r.pos[1], "-x");

    r = PARSE("g", "--", "--");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 2);
    assert_string_equal(r.pos[1], "--");
}

static void test_first_skips_subcommand(void **state)
{
    (void)state;
    char *argv[] = {"gnn-dataset", "info", "--epochs", "6", "g.h5", NULL};
    train_opts_t o;
    char *pos[5];
    int npos;
    train_defaults(&o);
    assert_int_equal(gnn_cli_parse(&train_cli, 5, argv, 2, &o, pos, &npos), 0);
    assert_int_equal(o.epochs, 6);
    assert_int_equal(npos, 1);
    assert_string_equal(pos[0], "g.h5");
}

/* ---- errors ------------------------------------------------------------------- */

static void expect_usage(parsed_t r, const char *msg)
{
    if (r.rc != GNN_EUSAGE || strcmp(gnn_error_message(), msg) != 0)
        fail_msg("rc %d, message '%s'; want GNN_EUSAGE, '%s'", r.rc, gnn_error_message(), msg);
    assert_int_equal(gnn_error_code(), GNN_EUSAGE);
}

static void test_usage_errors(void **state)
{
    (void)state;
    expect_usage(PARSE("--foo", "g"), "unknown option '--foo'");
    expect_usage(PARSE("g", "--foo=3"), "unknown option '--foo'");
    expect_usage(PARSE("--epoch", "3", "g"), "unknown option '--epoch' (did you mean '--epochs'?)");
    expect_usage(PARSE("--verbsoe", "g"), "unknown option '--verbsoe' (did you mean '--verbose'?)");
    expect_usage(PARSE("-x", "g"), "unknown option '-x'");
    expect_usage(PARSE("-fx", "g"), "unknown option '-x'");
    expect_usage(PARSE("g", "--epochs"), "option '--epochs' needs a value");
    expect_usage(PARSE("g", "-e"), "option '-e' needs a value");
    /* The value left out: the next argument is one of the command's options. */
    expect_usage(PARSE("--cache", "-o", "x.h5", "g"),
                 "option '--cache' needs a value (found the option '-o')");
    expect_usage(PARSE("-o", "--force", "g"), "option '-o' needs a value (found the option '--force')");
    expect_usage(PARSE("--out", "--lr=0.1", "g"),
                 "option '--out' needs a value (found the option '--lr=0.1')");
    /* Values that only start with '-' are still values. */
    {
        parsed_t r = PARSE("--epochs", "-3", "--name", "-x", "--out", "-", "g");
        assert_int_equal(r.rc, 0);
        assert_int_equal(r.o.epochs, -3);
        assert_string_equal(r.o.name, "-x");
        assert_string_equal(r.o.out, "-");
    }
    expect_usage(PARSE("--epochs", "abc", "g"), "option '--epochs': 'abc' is not an integer");
    expect_usage(PARSE("--epochs=", "g"), "option '--epochs': '' is not an integer");
    expect_usage(PARSE("-e", "1e3", "g"), "option '-e': '1e3' is not an integer");
    expect_usage(PARSE("-e", " 5", "g"), "option '-e': ' 5' is not an integer");
    expect_usage(PARSE("-e", "5x", "g"), "option '-e': '5x' is not an integer");
    expect_usage(PARSE("--epochs", "3000000000", "g"),
                 "option '--epochs': '3000000000' is out of range (-2147483648 to 2147483647)");
    expect_usage(PARSE("--seed", "9223372036854775808", "g"),
                 "option '--seed': '9223372036854775808' is out of range "
                 "(-9223372036854775808 to 9223372036854775807)");
    expect_usage(PARSE("--lr", "0,1", "g"), "option '--lr': '0,1' is not a number");
    expect_usage(PARSE("--lr", "nan", "g"), "option '--lr': 'nan' is not a number");
    expect_usage(PARSE("--lr", "-inf", "g"), "option '--lr': '-inf' is not a number");
    expect_usage(PARSE("--lr", "1e999", "g"), "option '--lr': '1e999' is out of range");
    expect_usage(PARSE("--lr", "0x1p3", "g"), "option '--lr': '0x1p3' is not a number");
    expect_usage(PARSE("--cache", "12Q", "g"),
                 "option '--cache': '12Q' is not a size (e.g. 4096, 64K, 512M, 1.5GiB)");
    expect_usage(PARSE("-c", "-1", "g"),
                 "option '-c': '-1' is not a size (sizes cannot be negative)");
    expect_usage(PARSE("--force=1", "g"), "option '--force' takes no value");
    expect_usage(PARSE("--help=yes"), "option '--help' takes no value");
    expect_usage(PARSE("--quiet=1", "g"), "option '--quiet' takes no value");
    expect_usage(PARSE("-f"), "expected 1 to 2 arguments (GRAPH [PARTS]), got 0");
    expect_usage(PARSE("a", "b", "c", "d"), "unexpected argument 'c'");
}

static void test_positional_count_messages(void **state)
{
    (void)state;
    gnn_cli_t one = {.prog = "gnn-dataset info",
                     .args = "FILE",
                     .opts = train_table,
                     .min_positional = 1,
                     .max_positional = 1};
    gnn_cli_t many = {.prog = "cat",
                      .args = "FILES...",
                      .opts = train_table,
                      .min_positional = 1,
                      .max_positional = -1};
    gnn_cli_t none = {.prog = "list", .opts = NULL, .min_positional = 0, .max_positional = 0};
    gnn_cli_t two = {.prog = "diff", .args = NULL, .min_positional = 2, .max_positional = 2};

    expect_usage(parse_with(&one, (const char *const[]){"-f", NULL}),
                 "expected 1 argument (FILE), got 0");
    expect_usage(parse_with(&one, (const char *const[]){"a", "x", NULL}),
                 "unexpected argument 'x'");
    expect_usage(parse_with(&many, (const char *const[]){NULL}),
                 "expected at least 1 argument (FILES...), got 0");
    expect_usage(parse_with(&none, (const char *const[]){"x", NULL}), "unexpected argument 'x'");
    expect_usage(parse_with(&none, (const char *const[]){"--epochs", "3", NULL}),
                 "unknown option '--epochs'");
    expect_usage(parse_with(&two, (const char *const[]){"a", NULL}), "expected 2 arguments, got 1");

    parsed_t r = parse_with(&many, (const char *const[]){"a", "b", "-f", "c", NULL});
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 3);
    assert_string_equal(r.pos[2], "c");
    r = parse_with(&none, (const char *const[]){NULL});
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.npos, 0);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    char *argv[] = {"x", NULL};
    train_opts_t o;
    int npos = 7;
    assert_int_equal(gnn_cli_parse(NULL, 1, argv, 1, &o, NULL, &npos), GNN_EINVAL);
    assert_int_equal(npos, 0);
    assert_int_equal(gnn_cli_parse(&train_cli, 1, NULL, 0, &o, NULL, &npos), GNN_EINVAL);
}

/* ---- help --------------------------------------------------------------------- */

static void test_help_table(void **state)
{
    (void)state;
    FILE *f = tmpfile();
    assert_non_null(f);
    train_opts_t d;
    train_defaults(&d);
    gnn_cli_help(&train_cli, &d, f);
    char *out = slurp(f);
    assert_string_equal(out, train_help);
    free(out);

    /* Defaults are read from the struct, so they follow it. */
    rewind(f);
    assert_int_equal(ftruncate(fileno(f), 0), 0);
    d.epochs = 3;
    d.cache = 4097;
    d.out = NULL;
    gnn_cli_help(&train_cli, &d, f);
    out = slurp(f);
    assert_non_null(strstr(out, "  -e, --epochs N    number of epochs (default: 3)\n"));
    assert_non_null(strstr(out, "  -c, --cache SIZE  feature cache size (default: 4097)\n"));
    assert_non_null(strstr(out, "  -o, --out FILE    where to write the model\n"));
    free(out);
    fclose(f);
}

static void test_help_minimal(void **state)
{
    (void)state;
    gnn_cli_t bare = {.prog = "gnn-version", .max_positional = 0};
    FILE *f = tmpfile();
    assert_non_null(f);
    gnn_cli_help(&bare, NULL, f);
    char *out = slurp(f);
    assert_string_equal(out, "usage: gnn-version [options]\n"
                             "\n"
                             "options:\n"
                             "  -h, --help     show this help and exit\n"
                             "  -q, --quiet    print errors only\n"
                             "  -v, --verbose  print debug messages too\n");
    free(out);
    fclose(f);
}

/* Parse with stdout sent to a temporary file; returns what was printed. */
static char *parse_capturing_stdout(parsed_t *r, const char *const *words)
{
    FILE *f = tmpfile();
    assert_non_null(f);
    fflush(stdout);
    int saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), STDOUT_FILENO) >= 0);
    *r = parse_with(&train_cli, words);
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    fseek(f, 0, SEEK_END);
    char *out = slurp(f);
    fclose(f);
    return out;
}

static void test_help_option(void **state)
{
    (void)state;
    parsed_t r;
    char *out = parse_capturing_stdout(&r, (const char *const[]){"--help", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(out, train_help);
    free(out);

    /* -h wins over a missing positional, and stops parsing there. */
    out = parse_capturing_stdout(&r, (const char *const[]){"-h", "--bogus", NULL});
    assert_int_equal(r.rc, 1);
    assert_string_equal(out, train_help);
    free(out);

    /* An error before it is still an error. */
    out = parse_capturing_stdout(&r, (const char *const[]){"--bogus", "--help", NULL});
    assert_int_equal(r.rc, GNN_EUSAGE);
    assert_string_equal(out, "");
    free(out);
}

/* ---- built-in log options -------------------------------------------------------- */

static void test_quiet_verbose(void **state)
{
    (void)state;
    assert_int_equal(PARSE("-q", "g").rc, 0);
    assert_int_equal(gnn_log_level(), GNN_LOG_ERROR);
    assert_int_equal(PARSE("g", "--verbose").rc, 0);
    assert_int_equal(gnn_log_level(), GNN_LOG_DEBUG);
    assert_int_equal(PARSE("--quiet", "g").rc, 0);
    assert_int_equal(gnn_log_level(), GNN_LOG_ERROR);
    assert_int_equal(PARSE("-v", "g").rc, 0);
    assert_int_equal(gnn_log_level(), GNN_LOG_DEBUG);
    assert_int_equal(PARSE("-vq", "g").rc, 0); /* the last one wins */
    assert_int_equal(gnn_log_level(), GNN_LOG_ERROR);
}

/* ---- sizes ------------------------------------------------------------------------ */

static void test_parse_size_good(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        int64_t want;
    } cases[] = {
        {"0", 0},
        {"4096", 4096},
        {"100B", 100},
        {"64K", 65536},
        {"64k", 65536},
        {"8KiB", 8192},
        {"8KB", 8192},
        {"512M", (int64_t)512 << 20},
        {"2G", (int64_t)2 << 30},
        {"1T", (int64_t)1 << 40},
        {"1.5GiB", (int64_t)3 << 29},
        {"1.5G", (int64_t)3 << 29},
        {"0.5K", 512},
        {"0.25M", 262144},
        {"007", 7},
        {"9223372036854775807", INT64_MAX},
        {"8589934591G", INT64_MAX - ((int64_t)1 << 30) + 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t got = -1;
        int rc = gnn_parse_size(cases[i].s, &got);
        if (rc != 0 || got != cases[i].want)
            fail_msg("'%s': rc %d, got %lld, want %lld (%s)", cases[i].s, rc, (long long)got,
                     (long long)cases[i].want, gnn_error_message());
    }
}

static void test_parse_size_bad(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "-1",
        "+5",
        " 5",
        "abc",
        "12Q",
        "1.5",
        "1.",
        ".5K",
        "1 K",
        "1Ki",
        "1iB",
        "5M junk",
        "5MB ",
        "1KK",
        "1.5.5K",
        "0x10",
        "1e3",
        "8589934592G",
        "9223372036854775808",
        "99999999999999999999999",
        "8388608T",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t got = 123;
        int rc = gnn_parse_size(bad[i], &got);
        if (rc != GNN_EUSAGE) fail_msg("'%s' accepted as %lld", bad[i], (long long)got);
        assert_int_equal(got, 123); /* untouched on failure */
    }
    int64_t b;
    assert_int_equal(gnn_parse_size("12Q", &b), GNN_EUSAGE);
    assert_string_equal(gnn_error_message(), "'12Q' is not a size (e.g. 4096, 64K, 512M, 1.5GiB)");
    assert_int_equal(gnn_parse_size("-1M", &b), GNN_EUSAGE);
    assert_string_equal(gnn_error_message(), "'-1M' is not a size (sizes cannot be negative)");
    assert_int_equal(gnn_parse_size("8589934592G", &b), GNN_EUSAGE);
    assert_string_equal(gnn_error_message(), "size '8589934592G' is too large");
    assert_int_equal(gnn_parse_size("1.5", &b), GNN_EUSAGE);
    assert_string_equal(gnn_error_message(), "'1.5' is not a whole number of bytes");
    assert_int_equal(gnn_parse_size(NULL, &b), GNN_EINVAL);
    assert_int_equal(gnn_parse_size("1", NULL), GNN_EINVAL);
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_defaults_untouched),
        T(test_long_forms),
        T(test_short_forms),
        T(test_last_value_wins),
        T(test_positionals_interleaved),
        T(test_double_dash_ends_options),
        T(test_first_skips_subcommand),
        T(test_usage_errors),
        T(test_positional_count_messages),
        T(test_invalid_arguments),
        T(test_help_table),
        T(test_help_minimal),
        T(test_help_option),
        T(test_quiet_verbose),
        T(test_parse_size_good),
        T(test_parse_size_bad),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
