/*
 * The early output check shared by the converting subcommands (convert.h).
 */
#include "datasets/convert.h"

#include "graph/base/error.h"

#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int gnn_output_check(const gnn_output_opts_t *o)
{
    struct stat st;
    if (!o->path || !o->path[0]) return GNN_FAIL(GNN_EUSAGE, "missing -o FILE (the graph file to write)");
    if (stat(o->path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return GNN_FAIL(GNN_EEXISTS, "%s: is a directory", o->path);
        if (!o->force) return GNN_FAIL(GNN_EEXISTS, "%s: file exists (use --force to replace it)", o->path);
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", o->path);
    const char *d = dirname(dir);
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode))
        return GNN_FAIL(GNN_ENOENT, "%s: directory %s does not exist", o->path, d);
    if (o->mem_budget < 0) return GNN_FAIL(GNN_EUSAGE, "--mem-budget must not be negative");
    return 0;
}
