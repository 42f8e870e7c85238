/*
 * Error codes, names and messages generated from GNN_ERROR_TABLE, and the
 * per-thread record of the last failure (code, file, line, message).
 *
 * The record is thread-local so that sampler threads and OpenMP workers
 * cannot overwrite each other's failures; each thread reports its own.
 */
#include "graph/base/error.h"

#include "graph/base/log.h"

#include <stdarg.h>
#include <string.h>

#define GNN__MSG_MAX 1024

typedef struct {
    int code;
    int line;
    const char *file;
    char msg[GNN__MSG_MAX];
} gnn__error_record_t;

static _Thread_local gnn__error_record_t g_err;

const char *gnn_strerror(int code)
{
    switch (code) {
#define GNN__ERR_MSG(name, value, msg) case (value): return (msg);
        GNN_ERROR_TABLE(GNN__ERR_MSG)
#undef GNN__ERR_MSG
    }
    return "unknown error";
}

const char *gnn_error_name(int code)
{
    switch (code) {
#define GNN__ERR_NAME(name, value, msg) case (value): return "GNN_E" #name;
        GNN_ERROR_TABLE(GNN__ERR_NAME)
#undef GNN__ERR_NAME
    }
    return "GNN_E?";
}

int gnn__error_set(int code, const char *file, int line, const char *fmt, ...)
{
    g_err.code = code;
    g_err.file = file ? file : ""; /* relative: the build maps the source root away */
    g_err.line = line;
    g_err.msg[0] = '\0';
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_err.msg, sizeof g_err.msg, fmt, ap);
        va_end(ap);
    }
    if (!g_err.msg[0]) snprintf(g_err.msg, sizeof g_err.msg, "%s", gnn_strerror(code));
    return code;
}

void gnn_error_prefix(const char *fmt, ...)
{
    char head[GNN__MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    size_t cap = sizeof g_err.msg - 1;
    size_t hl = strlen(head), ol = strlen(g_err.msg);
    if (hl > cap - 2) hl = cap - 2;
    size_t sep = ol ? 2 : 0;
    size_t keep = ol < cap - hl - sep ? ol : cap - hl - sep;
    memmove(g_err.msg + hl + sep, g_err.msg, keep); /* old message moves right */
    memcpy(g_err.msg, head, hl);
    if (sep) memcpy(g_err.msg + hl, ": ", 2);
    g_err.msg[hl + sep + keep] = '\0';
}

int gnn_error_code(void) { return g_err.code; }
const char *gnn_error_message(void) { return g_err.msg; }
const char *gnn_error_file(void) { return g_err.file ? g_err.file : ""; }
int gnn_error_line(void) { return g_err.line; }

void gnn_error_clear(void)
{
    g_err.code = 0;
    g_err.file = NULL;
    g_err.line = 0;
    g_err.msg[0] = '\0';
}

void gnn_error_print(FILE *stream, const char *prog, int verbose)
{
    const char *msg = g_err.msg[0] ? g_err.msg : gnn_strerror(g_err.code);
    /* One line: replace any newline a message may carry. */
    char line[GNN__MSG_MAX];
    snprintf(line, sizeof line, "%s", msg);
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r') *p = ' ';
    if (verbose && g_err.line > 0)
        fprintf(stream, "%s: error: %s [%s at %s:%d]\n", prog, line, gnn_error_name(g_err.code),
                g_err.file, g_err.line);
    else
        fprintf(stream, "%s: error: %s\n", prog, line);
    fflush(stream);
}

int gnn_error_report(const char *prog, const char *help, int rc)
{
    if (rc >= 0) return 0;
    if (g_err.code == 0) gnn__error_set(rc, NULL, 0, NULL);
    if (rc == GNN_EUSAGE) {
        fprintf(stderr, "%s: error: %s (see %s --help)\n", prog, g_err.msg, help ? help : prog);
        fflush(stderr);
        return 2;
    }
    gnn_error_print(stderr, prog, gnn_log_level() >= GNN_LOG_DEBUG);
    return 1;
}
