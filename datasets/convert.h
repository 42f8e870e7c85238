/*
 * What every converting subcommand of gnn-dataset shares: the output
 * options (-o, --force, --mem-budget, --tmpdir) declared once for each
 * command's option table, and the early check of the output path, so a
 * conversion that will not be allowed to write fails before it reads.
 */
#ifndef GNN_DATASETS_CONVERT_H
#define GNN_DATASETS_CONVERT_H

#include "graph/base/cli.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *path;   /* -o FILE */
    int force;          /* replace an existing file */
    int64_t mem_budget; /* bytes; 0 = no limit */
    const char *tmpdir; /* spill directory */
} gnn_output_opts_t;

/* Option-table entries for a gnn_output_opts_t member named field of the
 * command's options struct type T. */
#define GNN_OUTPUT_OPTIONS(T, field)                                                       \
    {"output", 'o', GNN_OPT_STRING, offsetof(T, field.path), "FILE",                       \
     "graph file to write (required)"},                                                    \
    {"force", 0, GNN_OPT_FLAG, offsetof(T, field.force), NULL,                              \
     "replace FILE if it exists"},                                                         \
    {"mem-budget", 0, GNN_OPT_SIZE, offsetof(T, field.mem_budget), "SIZE",                 \
     "memory for building the CSR, e.g. 4G; beyond it work out of core (0 = no limit)"},   \
    {"tmpdir", 0, GNN_OPT_STRING, offsetof(T, field.tmpdir), "DIR",                         \
     "directory for out-of-core spill files (default $TMPDIR or /tmp)"}

/* -o given and naming a file (no trailing '/', not a directory), its
 * directory exists and is writable, FILE is absent or --force is set, and
 * --tmpdir, when given, is a writable directory. Returns 0, GNN_EUSAGE (no
 * -o), GNN_EINVAL (a trailing '/'), GNN_EEXISTS, GNN_ENOENT (a missing
 * directory), GNN_EIO (a directory that cannot be written). */
int gnn_output_check(const gnn_output_opts_t *o);

/* gnn_output_check, and -o must not name the input file (by any name,
 * --force or not): GNN_EUSAGE. */
int gnn_output_check_input(const gnn_output_opts_t *o, const char *input);

#endif
