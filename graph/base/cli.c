/*
 * Command-line parsing and --help from one option table (cli.h).
 *
 * The parser walks argv once, left to right, the way getopt_long does: long
 * options as "--name value" or "--name=value", short ones as "-x value",
 * "-xvalue" or grouped flags ("-qv"); any other word is a positional, and
 * everything after "--" is one. The built-in --help, --quiet and --verbose
 * are looked up before the command's table, so no command can shadow them.
 *
 * Values are converted strictly: the whole text must be a number in the
 * field's range, because a silently truncated "--epochs 1e3" or "--lr 0,1"
 * wastes a training run. Values are stored in place in the caller's struct,
 * which already holds the defaults, and gnn_cli_help prints those same
 * fields, so help and defaults cannot disagree. Every error is GNN_EUSAGE
 * with a one-line message naming the option as the user wrote it; on error
 * the struct may hold the options parsed before the bad one.
 *
 * Nothing here allocates.
 */
#include "graph/base/cli.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The options every command accepts, listed last in --help. */
static const gnn_opt_t g_builtin[] = {
    {"help", 'h', GNN_OPT_FLAG, 0, NULL, "show this help and exit"},
    {"quiet", 'q', GNN_OPT_FLAG, 0, NULL, "print errors only"},
    {"verbose", 'v', GNN_OPT_FLAG, 0, NULL, "print debug messages too"},
    {NULL, 0, GNN_OPT_FLAG, 0, NULL, NULL},
};
#define BUILTIN_HELP (&g_builtin[0])
#define BUILTIN_QUIET (&g_builtin[1])
#define BUILTIN_VERBOSE (&g_builtin[2])

static int is_digit(char c) { return isdigit((unsigned char)c); }

/* ---- lookup ---------------------------------------------------------------- */

static const gnn_opt_t *find_long(const gnn_cli_t *cli, const char *name, size_t len)
{
    for (const gnn_opt_t *o = g_builtin; o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    for (const gnn_opt_t *o = cli->opts; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, name, len) == 0) return o;
    return NULL;
}

static const gnn_opt_t *find_short(const gnn_cli_t *cli, char c)
{
    for (const gnn_opt_t *o = g_builtin; o->name; o++)
        if (o->short_name == c) return o;
    for (const gnn_opt_t *o = cli->opts; o && o->name; o++)
        if (o->short_name && o->short_name == c) return o;
    return NULL;
}

/* Edit distance between a[0..na) and b, for "did you mean"; names are short. */
static size_t edit_distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b);
    size_t row[64];
    if (na >= 64 || nb >= 64) return SIZE_MAX;
    for (size_t j = 0; j <= nb; j++) row[j] = j;
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

/* The long option closest to a mistyped name, or NULL when none is close. */
static const char *suggest(const gnn_cli_t *cli, const char *name, size_t len)
{
    const char *best = NULL;
    size_t best_d = SIZE_MAX;
    for (int pass = 0; pass < 2; pass++) {
        const gnn_opt_t *o = pass == 0 ? cli->opts : g_builtin;
        for (; o && o->name; o++) {
            size_t d = edit_distance(name, len, o->name);
            size_t limit = strlen(o->name) >= 5 ? 2 : 1;
            if (d <= limit && d < best_d) {
                best = o->name;
                best_d = d;
            }
        }
    }
    return best;
}

/* ---- values ------------------------------------------------------------------ */

enum { NUM_OK = 0, NUM_BAD = 1, NUM_RANGE = 2 };

/* A whole decimal integer: optional sign, digits, nothing else. */
static int parse_integer(const char *s, long long *out)
{
    const char *d = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
    if (!is_digit(d[0])) return NUM_BAD;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end) return NUM_BAD;
    if (errno == ERANGE) return NUM_RANGE;
    *out = v;
    return NUM_OK;
}

/* A finite decimal number, the whole text. */
static int parse_double(const char *s, double *out)
{
    const char *d = (s[0] == '-' || s[0] == '+') ? s + 1 : s;
    if (!is_digit(d[0]) && !(d[0] == '.' && is_digit(d[1]))) return NUM_BAD;
    if (strpbrk(s, "xX")) return NUM_BAD; /* strtod would read hex floats */
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end) return NUM_BAD;
    if (errno == ERANGE && fabs(v) == HUGE_VAL) return NUM_RANGE;
    if (!isfinite(v)) return NUM_BAD;
    *out = v;
    return NUM_OK;
}

/* Store value v of option o (written by the user as shown) into opts. */
static int set_value(const gnn_opt_t *o, const char *shown, const char *v, void *opts)
{
    char *field = (char *)opts + o->offset;
    long long x;
    double d;
    int st;
    switch (o->type) {
    case GNN_OPT_INT:
        st = parse_integer(v, &x);
        if (st == NUM_BAD)
            return GNN_FAIL(GNN_EUSAGE, "option '%s': '%s' is not an integer", shown, v);
        if (st == NUM_RANGE || x < INT_MIN || x > INT_MAX)
            return GNN_FAIL(GNN_EUSAGE, "option '%s': '%s' is out of range (%d to %d)", shown, v,
                            INT_MIN, INT_MAX);
        *(int *)field = (int)x;
        return 0;
    case GNN_OPT_I64:
        st = parse_integer(v, &x);
        if (st == NUM_BAD)
            return GNN_FAIL(GNN_EUSAGE, "option '%s': '%s' is not an integer", shown, v);
        if (st == NUM_RANGE)
            return GNN_FAIL(GNN_EUSAGE,
                            "option '%s': '%s' is out of range (%" PRId64 " to %" PRId64 ")", shown,
                            v, INT64_MIN, INT64_MAX);
        *(int64_t *)field = (int64_t)x;
        return 0;
    case GNN_OPT_DOUBLE:
        st = parse_double(v, &d);
        if (st == NUM_BAD)
            return GNN_FAIL(GNN_EUSAGE, "option '%s': '%s' is not a number", shown, v);
        if (st == NUM_RANGE)
            return GNN_FAIL(GNN_EUSAGE, "option '%s': '%s' is out of range", shown, v);
        *(double *)field = d;
        return 0;
    case GNN_OPT_STRING:
        *(const char **)field = v;
        return 0;
    case GNN_OPT_SIZE: {
        int64_t bytes;
        if (gnn_parse_size(v, &bytes) < 0) {
            gnn_error_prefix("option '%s'", shown);
            return GNN_EUSAGE;
        }
        *(int64_t *)field = bytes;
        return 0;
    }
    case GNN_OPT_FLAG:
        *(int *)field = 1;
        return 0;
    }
    return GNN_FAIL(GNN_EINVAL, "option '%s': unknown option type %d", shown, (int)o->type);
}

/* A flag was given: built-ins act at once (1 for --help), others set 1. */
static int set_flag(const gnn_cli_t *cli, const gnn_opt_t *o, const char *shown, void *opts)
{
    if (o == BUILTIN_HELP) {
        gnn_cli_help(cli, opts, stdout);
        fflush(stdout);
        return 1;
    }
    if (o == BUILTIN_QUIET) {
        gnn_log_set_level(GNN_LOG_ERROR);
        return 0;
    }
    if (o == BUILTIN_VERBOSE) {
        gnn_log_set_level(GNN_LOG_DEBUG);
        return 0;
    }
    if (!opts) return GNN_FAIL(GNN_EINVAL, "option '%s': no options struct to store it in", shown);
    return set_value(o, shown, NULL, opts);
}

/* Whether v, the argument after an option that needs a value, is rather
 * one of this command's own options ("--mem-budget -o x.h5": the value was
 * left out). Negative numbers and other text starting with '-' are values. */
static int is_own_option(const gnn_cli_t *cli, const char *v)
{
    if (v[0] != '-') return 0;
    if (v[1] == '-' && v[2]) {
        const char *eq = strchr(v + 2, '=');
        size_t len = eq ? (size_t)(eq - (v + 2)) : strlen(v + 2);
        return find_long(cli, v + 2, len) != NULL;
    }
    return v[1] && !v[2] && find_short(cli, v[1]) != NULL;
}

/* "--name", "--name=value" or "--name value" at argv[*i]. */
static int parse_long(const gnn_cli_t *cli, int argc, char **argv, int *i, void *opts)
{
    const char *name = argv[*i] + 2;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    char shown[128];
    snprintf(shown, sizeof shown, "--%.*s", (int)(len < 100 ? len : 100), name);

    const gnn_opt_t *o = find_long(cli, name, len);
    if (!o) {
        const char *near = suggest(cli, name, len);
        if (near)
            return GNN_FAIL(GNN_EUSAGE, "unknown option '%s' (did you mean '--%s'?)", shown, near);
        return GNN_FAIL(GNN_EUSAGE, "unknown option '%s'", shown);
    }
    if (o->type == GNN_OPT_FLAG) {
        if (eq) return GNN_FAIL(GNN_EUSAGE, "option '%s' takes no value", shown);
        return set_flag(cli, o, shown, opts);
    }
    const char *v = eq ? eq + 1 : NULL;
    if (!v) {
        if (*i + 1 >= argc) return GNN_FAIL(GNN_EUSAGE, "option '%s' needs a value", shown);
        v = argv[++*i];
        if (is_own_option(cli, v))
            return GNN_FAIL(GNN_EUSAGE, "option '%s' needs a value (found the option '%s')",
                            shown, v);
    }
    if (!opts) return GNN_FAIL(GNN_EINVAL, "option '%s': no options struct to store it in", shown);
    return set_value(o, shown, v, opts);
}

/* "-x", "-x value", "-xvalue" or grouped flags "-qv" at argv[*i]. */
static int parse_short(const gnn_cli_t *cli, int argc, char **argv, int *i, void *opts)
{
    for (const char *c = argv[*i] + 1; *c; c++) {
        char shown[3] = {'-', *c, '\0'};
        const gnn_opt_t *o = find_short(cli, *c);
        if (!o) return GNN_FAIL(GNN_EUSAGE, "unknown option '%s'", shown);
        if (o->type == GNN_OPT_FLAG) {
            int rc = set_flag(cli, o, shown, opts);
            if (rc != 0) return rc;
            continue;
        }
        const char *v = c[1] ? c + 1 : NULL;
        if (!v) {
            if (*i + 1 >= argc) return GNN_FAIL(GNN_EUSAGE, "option '%s' needs a value", shown);
            v = argv[++*i];
            if (is_own_option(cli, v))
                return GNN_FAIL(GNN_EUSAGE, "option '%s' needs a value (found the option '%s')",
                                shown, v);
        }
        if (!opts)
            return GNN_FAIL(GNN_EINVAL, "option '%s': no options struct to store it in", shown);
        return set_value(o, shown, v, opts);
    }
    return 0;
}

/* The positional count is wrong: say what was expected. */
static int wrong_count(const gnn_cli_t *cli, int n, const char *extra)
{
    int lo = cli->min_positional, hi = cli->max_positional;
    if (hi >= 0 && n > hi) return GNN_FAIL(GNN_EUSAGE, "unexpected argument '%s'", extra);
    char what[256] = "";
    if (cli->args && cli->args[0]) snprintf(what, sizeof what, " (%s)", cli->args);
    if (hi < 0)
        return GNN_FAIL(GNN_EUSAGE, "expected at least %d argument%s%s, got %d", lo,
                        lo == 1 ? "" : "s", what, n);
    if (hi == lo)
        return GNN_FAIL(GNN_EUSAGE, "expected %d argument%s%s, got %d", lo, lo == 1 ? "" : "s",
                        what, n);
    return GNN_FAIL(GNN_EUSAGE, "expected %d to %d arguments%s, got %d", lo, hi, what, n);
}

int gnn_cli_parse(const gnn_cli_t *cli, int argc, char **argv, int first, void *opts, char **pos,
                  int *npos)
{
    int n = 0, only_pos = 0;
    const char *extra = NULL; /* the first positional beyond max_positional */
    if (npos) *npos = 0;
    if (!cli || argc < 0 || (argc > 0 && !argv) || first < 0)
        return GNN_FAIL(GNN_EINVAL, "gnn_cli_parse: invalid arguments");

    for (int i = first; i < argc; i++) {
        char *arg = argv[i];
        int rc = 0;
        if (only_pos || arg[0] != '-' || arg[1] == '\0') { /* "-" alone names stdin */
            if (cli->max_positional >= 0 && n >= cli->max_positional && !extra) extra = arg;
            if (pos) pos[n] = arg;
            n++;
        } else if (strcmp(arg, "--") == 0) {
            only_pos = 1;
        } else if (arg[1] == '-') {
            rc = parse_long(cli, argc, argv, &i, opts);
        } else {
            rc = parse_short(cli, argc, argv, &i, opts);
        }
        if (rc != 0) {
            if (npos) *npos = n;
            return rc;
        }
    }
    if (npos) *npos = n;
    if (n < cli->min_positional || (cli->max_positional >= 0 && n > cli->max_positional))
        return wrong_count(cli, n, extra);
    return 0;
}

/* ---- help ---------------------------------------------------------------------- */

/* Bytes as the shortest exact size gnn_parse_size reads back: "512M", "4096". */
static void format_size_exact(char *buf, size_t len, int64_t bytes)
{
    static const char sfx[] = "TGMK";
    for (int i = 0; i < 4 && bytes != 0; i++) {
        int shift = 40 - 10 * i;
        int64_t unit = (int64_t)1 << shift;
        if (bytes % unit == 0) {
            snprintf(buf, len, "%" PRId64 "%c", bytes / unit, sfx[i]);
            return;
        }
    }
    snprintf(buf, len, "%" PRId64, bytes);
}

/* The default of o as found in opts, or "" for none (flags, unset strings). */
static void format_default(char *buf, size_t len, const gnn_opt_t *o, const void *opts)
{
    buf[0] = '\0';
    if (!opts) return;
    const char *field = (const char *)opts + o->offset;
    switch (o->type) {
    case GNN_OPT_INT:
        snprintf(buf, len, "%d", *(const int *)field);
        break;
    case GNN_OPT_I64:
        snprintf(buf, len, "%" PRId64, *(const int64_t *)field);
        break;
    case GNN_OPT_DOUBLE:
        snprintf(buf, len, "%g", *(const double *)field);
        break;
    case GNN_OPT_STRING: {
        const char *s = *(const char *const *)field;
        if (s && s[0]) snprintf(buf, len, "%s", s);
        break;
    }
    case GNN_OPT_SIZE:
        format_size_exact(buf, len, *(const int64_t *)field);
        break;
    case GNN_OPT_FLAG:
        break;
    }
}

static const char *metavar(const gnn_opt_t *o)
{
    if (o->metavar) return o->metavar;
    switch (o->type) {
    case GNN_OPT_INT:
    case GNN_OPT_I64:
        return "N";
    case GNN_OPT_DOUBLE:
        return "X";
    case GNN_OPT_SIZE:
        return "SIZE";
    case GNN_OPT_STRING:
        return "VALUE";
    case GNN_OPT_FLAG:
        break;
    }
    return "";
}

/* The left column: "-e, --epochs N" or "    --lr X". */
static void format_names(char *buf, size_t len, const gnn_opt_t *o)
{
    const char *mv = metavar(o);
    if (o->short_name)
        snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->name, mv[0] ? " " : "", mv);
    else
        snprintf(buf, len, "    --%s%s%s", o->name, mv[0] ? " " : "", mv);
}

static void print_option(FILE *out, const gnn_opt_t *o, const void *opts, int width)
{
    char names[160], def[160];
    const char *help = o->help ? o->help : "";
    format_names(names, sizeof names, o);
    format_default(def, sizeof def, o, opts);
    if (!help[0] && !def[0]) {
        fprintf(out, "  %s\n", names);
        return;
    }
    fprintf(out, "  %-*s  %s", width, names, help);
    if (def[0]) fprintf(out, "%s(default: %s)", help[0] ? " " : "", def);
    fputc('\n', out);
}

void gnn_cli_help(const gnn_cli_t *cli, const void *opts, FILE *out)
{
    if (!cli) return;
    if (!out) out = stdout;
    int width = 0;
    char names[160];
    for (int pass = 0; pass < 2; pass++) {
        for (const gnn_opt_t *o = pass == 0 ? cli->opts : g_builtin; o && o->name; o++) {
            format_names(names, sizeof names, o);
            int w = (int)strlen(names);
            if (w > width) width = w;
        }
    }
    const char *args = cli->args ? cli->args : "";
    fprintf(out, "usage: %s [options]%s%s\n", cli->prog ? cli->prog : "", args[0] ? " " : "", args);
    if (cli->summary && cli->summary[0]) fprintf(out, "%s\n", cli->summary);
    fputs("\noptions:\n", out);
    for (const gnn_opt_t *o = cli->opts; o && o->name; o++) print_option(out, o, opts, width);
    for (const gnn_opt_t *o = g_builtin; o->name; o++) print_option(out, o, NULL, width);
}

/* ---- sizes ------------------------------------------------------------------------ */

int gnn_parse_size(const char *s, int64_t *bytes)
{
    if (!s || !bytes) return GNN_FAIL(GNN_EINVAL, "gnn_parse_size: NULL argument");
    const char *p = s;
    if (*p == '-') return GNN_FAIL(GNN_EUSAGE, "'%s' is not a size (sizes cannot be negative)", s);
    if (!is_digit(*p))
        return GNN_FAIL(GNN_EUSAGE, "'%s' is not a size (e.g. 4096, 64K, 512M, 1.5GiB)", s);

    uint64_t whole = 0;
    for (; is_digit(*p); p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - digit) / 10)
            return GNN_FAIL(GNN_EUSAGE, "size '%s' is too large", s);
        whole = whole * 10 + digit;
    }
    double frac = 0; /* the digits after a '.' */
    int has_frac = 0;
    if (*p == '.') {
        double scale = 0.1;
        p++;
        if (!is_digit(*p))
            return GNN_FAIL(GNN_EUSAGE, "'%s' is not a size (e.g. 4096, 64K, 512M, 1.5GiB)", s);
        for (; is_digit(*p); p++, scale /= 10) frac += (*p - '0') * scale;
        has_frac = 1;
    }
    static const char units[] = "KMGT"; /* powers of 1024 */
    const char *unit = *p ? strchr(units, toupper((unsigned char)*p)) : NULL;
    int shift = unit ? 10 * (int)(unit - units + 1) : 0;
    if (shift) p++;
    if (shift && p[0] == 'i' && p[1] == 'B')
        p += 2;
    else if (*p == 'B')
        p++;
    if (*p) return GNN_FAIL(GNN_EUSAGE, "'%s' is not a size (e.g. 4096, 64K, 512M, 1.5GiB)", s);
    if (has_frac && shift == 0)
        return GNN_FAIL(GNN_EUSAGE, "'%s' is not a whole number of bytes", s);

    if (whole > ((uint64_t)INT64_MAX >> shift))
        return GNN_FAIL(GNN_EUSAGE, "size '%s' is too large", s);
    uint64_t v = whole << shift;
    if (has_frac) {
        uint64_t part = (uint64_t)llround(frac * (double)((uint64_t)1 << shift));
        if (part > (uint64_t)INT64_MAX - v)
            return GNN_FAIL(GNN_EUSAGE, "size '%s' is too large", s);
        v += part;
    }
    *bytes = (int64_t)v;
    return 0;
}

int gnn_cli_run(const gnn_cli_t *cli, int argc, char **argv, int first, void *opts,
                int (*run)(void *opts, char **pos, int npos))
{
    int rc = 0, npos = 0;
    char **pos = gnn_malloc_array((size_t)(argc > 0 ? argc : 1), sizeof *pos);
    GNN_CHECK(pos, GNN_ENOMEM, "out of memory");
    rc = gnn_cli_parse(cli, argc, argv, first, opts, pos, &npos);
    if (rc == 0)
        rc = run(opts, pos, npos);
    else if (rc > 0)
        rc = 0; /* --help was printed */
fail:
    gnn_free(pos);
    return rc;
}
