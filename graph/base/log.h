/*
 * Levelled logging to stderr for libraries and commands.
 *
 * Every command takes --quiet (errors only) and --verbose (debug); the
 * default level is info. Lines are prefixed with the program name set by
 * gnn_log_set_prog, and errors, warnings and debug lines with their level
 * ("gnn-dataset: warning: ..."). Writing is serialised so lines of different
 * threads never interleave. Set the level, stream and name before starting
 * threads; they are plain globals.
 */
#ifndef GNN_BASE_LOG_H
#define GNN_BASE_LOG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    GNN_LOG_ERROR = 0,
    GNN_LOG_WARN = 1,
    GNN_LOG_INFO = 2,
    GNN_LOG_DEBUG = 3
} gnn_log_level_t;

void gnn_log_set_level(gnn_log_level_t level);
gnn_log_level_t gnn_log_level(void);
/* Stream that log lines go to; NULL restores stderr. */
void gnn_log_set_stream(FILE *stream);
FILE *gnn_log_stream(void);
/* Program name printed before each line ("gnn-dataset"), copied; NULL or ""
 * for none. */
void gnn_log_set_prog(const char *prog);
const char *gnn_log_prog(void);

/* Write one line at level when the current level admits it. A trailing
 * newline in fmt is optional. */
void gnn_log(gnn_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Internal, for progress.c: stream now ends in a live line being redrawn
 * (terminal progress bar), or NULL when none. gnn_log erases that line before
 * writing to the same stream, so a message never lands in the middle of it;
 * the next redraw brings it back. Call with the stream locked (flockfile). */
void gnn__log_set_live(FILE *stream);

#define GNN_LOG_ERROR_(...) gnn_log(GNN_LOG_ERROR, __VA_ARGS__)
#define GNN_WARN(...) gnn_log(GNN_LOG_WARN, __VA_ARGS__)
#define GNN_INFO(...) gnn_log(GNN_LOG_INFO, __VA_ARGS__)
#define GNN_DEBUG(...) gnn_log(GNN_LOG_DEBUG, __VA_ARGS__)

#ifdef __cplusplus
}
#endif

#endif
