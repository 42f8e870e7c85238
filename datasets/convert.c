/*
 * The early output check shared by the converting subcommands (convert.h).
 */
#include "datasets/convert.h"

#include "graph/base/error.h"
#include "graph/base/tmpclean.h"

#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int gnn_output_check(const gnn_output_opts_t *o)
{
    int rc = 0;
    struct stat st;
    if (!o->path || !o->path[0]) return GNN_FAIL(GNN_EUSAGE, "missing -o FILE (the graph file to write)");
    size_t len = strlen(o->path);
    if (o->path[len - 1] == '/')
        return GNN_FAIL(GNN_EINVAL, "%s: names a directory (-o takes the graph file to write)",
                        o->path);
    if (stat(o->path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return GNN_FAIL(GNN_EEXISTS, "%s: is a directory (-o takes the graph file to write)",
                            o->path);
        if (!o->force) return GNN_FAIL(GNN_EEXISTS, "%s: file exists (use --force to replace it)", o->path);
        GNN_TRY(gnn_output_replaceable(NULL, o->path, 0));
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", o->path);
    GNN_TRY(gnn_output_dir_check(o->path, dirname(dir)));
    if (o->tmpdir) GNN_TRY(gnn_output_dir_check("--tmpdir", o->tmpdir));
    if (o->mem_budget < 0) return GNN_FAIL(GNN_EUSAGE, "--mem-budget must not be negative");
fail:
    return rc;
}

int gnn_output_check_input(const gnn_output_opts_t *o, const char *input)
{
    struct stat si; /* an input that is not there fails as such, later */
    if (o->path && input && stat(input, &si) == 0 && gnn_same_file(o->path, input))
        return GNN_FAIL(GNN_EUSAGE, "-o %s names the input file %s: name another file",
                        o->path, input);
    return gnn_output_check(o);
}
