/*
 * Levelled logging (log.h): one line per call on one stream, with the
 * program name and, for errors, warnings and debug lines, the level in front.
 *
 * The level, stream and program name are plain globals: commands set them
 * while parsing options, before any thread starts, and only read them later.
 * Each line is formatted into a stack buffer and written under the stream's
 * lock (flockfile), which progress.c takes too, so lines of different threads
 * and progress lines never interleave; a live progress bar on the same
 * terminal is erased first (gnn__log_set_live). Nothing here allocates, so
 * logging still works when memory has run out and never overwrites the
 * failure recorded by error.c.
 */
#include "graph/base/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>

static gnn_log_level_t g_level = GNN_LOG_INFO;
static FILE *g_stream; /* NULL: stderr */
static char g_prog[128]; /* "" when none */
static _Atomic(FILE *) g_live; /* stream ending in a live progress line */

void gnn_log_set_level(gnn_log_level_t level)
{
    int v = (int)level;
    if (v < (int)GNN_LOG_ERROR) v = GNN_LOG_ERROR;
    if (v > (int)GNN_LOG_DEBUG) v = GNN_LOG_DEBUG;
    g_level = (gnn_log_level_t)v;
}

gnn_log_level_t gnn_log_level(void) { return g_level; }

void gnn_log_set_stream(FILE *stream) { g_stream = stream; }

FILE *gnn_log_stream(void) { return g_stream ? g_stream : stderr; }

void gnn_log_set_prog(const char *prog)
{
    /* Copied, so the caller's string need not outlive the program. */
    snprintf(g_prog, sizeof g_prog, "%s", prog ? prog : "");
}

const char *gnn_log_prog(void) { return g_prog[0] ? g_prog : NULL; }

void gnn__log_set_live(FILE *stream) { atomic_store(&g_live, stream); }

void gnn_log(gnn_log_level_t level, const char *fmt, ...)
{
    static const char *const tag[] = {"error: ", "warning: ", "", "debug: "};
    int lv = (int)level;
    if (lv < (int)GNN_LOG_ERROR) lv = GNN_LOG_ERROR;
    if (lv > (int)GNN_LOG_DEBUG) lv = GNN_LOG_DEBUG;
    if (lv > (int)g_level || !fmt) return;

    char line[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;

    FILE *out = gnn_log_stream();
    int newline;
    flockfile(out);
    if (atomic_load(&g_live) == out) { /* erase the progress bar; it is redrawn later */
        fputs("\r\033[K", out);
        atomic_store(&g_live, NULL);
    }
    if (g_prog[0]) {
        fputs(g_prog, out);
        fputs(": ", out);
    }
    fputs(tag[lv], out);
    if ((size_t)n < sizeof line) {
        fputs(line, out);
        newline = n == 0 || line[n - 1] != '\n';
    } else {
        /* Too long for the buffer: print it directly rather than allocate.
         * Only the format tells whether it ends the line itself. */
        size_t len = strlen(fmt);
        va_start(ap, fmt);
        vfprintf(out, fmt, ap);
        va_end(ap);
        newline = len == 0 || fmt[len - 1] != '\n';
    }
    if (newline) fputc('\n', out);
    fflush(out);
    funlockfile(out);
}
