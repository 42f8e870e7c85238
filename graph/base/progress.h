/*
 * Progress of long work (reading edges, sorting, partitioning, epochs).
 *
 * On a terminal: one live line redrawn at most ten times a second with a bar,
 * the count, the rate and the ETA. Elsewhere (log files, CI): one plain line
 * every few seconds (5 by default), so logs stay short but show the job is
 * alive. Nothing is printed when the log level is below info (--quiet).
 * Updates are cheap (an atomic add and a clock read; a line is written only
 * when due) and may come from several threads.
 *
 * All functions accept a NULL handle and do nothing with it, so a failed
 * gnn_progress_start never stops the work it was meant to report.
 */
#ifndef GNN_BASE_PROGRESS_H
#define GNN_BASE_PROGRESS_H

#include <stdint.h>
#include <stdio.h>

typedef struct gnn_progress gnn_progress_t;

typedef enum {
    GNN_PROGRESS_AUTO = 0, /* TTY mode on a terminal, LINES otherwise */
    GNN_PROGRESS_TTY,      /* live redrawn line */
    GNN_PROGRESS_LINES,    /* one line per interval */
    GNN_PROGRESS_OFF
} gnn_progress_mode_t;

/*
 * Global configuration: output stream (NULL = stderr), mode, and the interval
 * between lines in LINES mode in seconds (<= 0 means print on every update,
 * for tests). Defaults: stderr, AUTO, 5 s.
 */
void gnn_progress_configure(FILE *stream, gnn_progress_mode_t mode, double line_interval_s);

/*
 * Start reporting work named label over total units (0 when unknown) of the
 * given unit name ("edges", "rows", "B": bytes are printed as KiB/MiB/GiB).
 * Returns NULL on allocation failure (and records GNN_ENOMEM). Whether and how
 * it prints is fixed here, from the configuration and the log level; a handle
 * that prints nothing is still returned.
 */
gnn_progress_t *gnn_progress_start(const char *label, int64_t total, const char *unit);
/* Set the amount done so far. */
void gnn_progress_set(gnn_progress_t *p, int64_t done);
/* Add to the amount done; safe from several threads. */
void gnn_progress_add(gnn_progress_t *p, int64_t delta);
/* Print the closing line (amount, time, rate) and free the handle. Call it
 * once, after every thread has made its last update. */
void gnn_progress_finish(gnn_progress_t *p);
/* For a function's single exit: finish when rc >= 0; on failure print no
 * closing line (a TTY line is cleared), just free. */
void gnn_progress_end(gnn_progress_t *p, int rc);

/* Format n with an SI suffix ("1.23M") or, for unit "B", a binary one
 * ("1.5 GiB") into buf. Returns buf. */
char *gnn_format_count(char *buf, size_t len, double n, const char *unit);
/* Format seconds as "0.53 s", "1:05", "2:03:04". Returns buf. */
char *gnn_format_duration(char *buf, size_t len, double seconds);

/* Seconds from a monotonic clock. */
double gnn_now(void);

#endif
