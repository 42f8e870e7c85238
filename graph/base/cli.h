/*
 * Command-line options from one table.
 *
 * Each command (and each subcommand) declares its options struct, a function
 * filling its defaults, and a table of gnn_opt_t naming fields by offsetof.
 * gnn_cli_parse parses argv into the struct and collects positionals;
 * gnn_cli_help prints --help from the same table, with the defaults read
 * from the struct, so help, defaults and parsing cannot drift apart.
 *
 * Every command also accepts --help/-h, --quiet/-q (errors only) and
 * --verbose/-v (debug); the parser applies the last two to the log level.
 */
#ifndef GNN_BASE_CLI_H
#define GNN_BASE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    GNN_OPT_FLAG,   /* int field set to 1; takes no value */
    GNN_OPT_INT,    /* int */
    GNN_OPT_I64,    /* int64_t */
    GNN_OPT_DOUBLE, /* double */
    GNN_OPT_STRING, /* const char *, points into argv */
    GNN_OPT_SIZE    /* int64_t bytes; accepts 4096, 64K, 512M, 2G, 1.5GiB, 1T */
} gnn_opt_type_t;

typedef struct {
    const char *name;   /* long name without "--"; NULL ends the table */
    char short_name;    /* single-letter alias, 0 for none */
    gnn_opt_type_t type;
    size_t offset;      /* offsetof(options struct, field) */
    const char *metavar;/* shown in help: "N", "FILE" */
    const char *help;   /* one line */
} gnn_opt_t;

typedef struct {
    const char *prog;       /* "gnn-dataset info" */
    const char *args;       /* positional synopsis: "FILE" */
    const char *summary;    /* one sentence shown under the usage line */
    const gnn_opt_t *opts;  /* table ended by an entry with name NULL */
    int min_positional;
    int max_positional;     /* -1 for no limit */
} gnn_cli_t;

/*
 * Parse argv[first..argc) into opts (already filled with defaults).
 * Positionals are stored in order into pos (capacity argc) and counted in
 * *npos; they may appear between options, and "--" ends option parsing.
 * Short options also take "-xVALUE", and flags group ("-qv"). The built-in
 * options are looked up first: a table entry reusing their names or letters
 * is never reached. Returns 0, or 1 when --help was given (help already
 * printed to stdout, parsing stopped there), or GNN_EUSAGE with a message
 * naming the option: unknown option, missing or malformed value, wrong
 * number of positionals. On error opts may hold the options parsed before
 * the bad one; *npos is set in every case.
 */
int gnn_cli_parse(const gnn_cli_t *cli, int argc, char **argv, int first, void *opts,
                  char **pos, int *npos);

/*
 * A command's whole front: parse argv[first..argc) into opts (filled with
 * defaults) and, unless --help was given (then 0 is returned), call
 * run(opts, positionals, count). Returns what run returns, or the parse
 * error.
 */
int gnn_cli_run(const gnn_cli_t *cli, int argc, char **argv, int first, void *opts,
                int (*run)(void *opts, char **pos, int npos));

/* Print usage, summary and one line per option with its default (none for
 * flags and NULL strings; opts may be NULL), then the built-in options. */
void gnn_cli_help(const gnn_cli_t *cli, const void *opts, FILE *out);

/* Parse a size such as "512M" or "1.5GiB" into bytes. Returns 0 or GNN_EUSAGE. */
int gnn_parse_size(const char *s, int64_t *bytes);

#endif
