/*
 * Progress reports (progress.h): a live bar on a terminal, a plain line
 * every few seconds elsewhere, and a closing line with amount, time and rate.
 *
 * Updates come from many threads and must stay cheap. The amount done is an
 * atomic counter and the time the next line is due an atomic read without a
 * lock; only an update that finds a line due tries to take the handle's print
 * flag (an atomic_flag used as a try-lock). An update that finds the flag
 * taken skips printing instead of waiting, since another thread is printing
 * an equally fresh line. Lines are built in a buffer and written with one
 * call under the stream lock, which log.c takes too, so they never
 * interleave with log lines; a log line erases a live bar first and the next
 * redraw brings it back.
 *
 * Whether and how to print is decided once, in gnn_progress_start, from the
 * configuration and the log level; a silent handle costs one atomic add per
 * update and no clock read.
 */
#include "graph/base/progress.h"

#include "graph/base/alloc.h"
#include "graph/base/log.h"

#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define GNN__NS 1000000000LL
#define GNN__TTY_STEP_NS (GNN__NS / 10) /* redraw a live line at most 10 times a second */
#define GNN__BAR_WIDTH 24

/* Set by gnn_progress_configure before any work starts; read-only after. */
static FILE *g_out; /* NULL: stderr */
static gnn_progress_mode_t g_mode = GNN_PROGRESS_AUTO;
static double g_interval_s = 5.0;

struct gnn_progress {
    _Atomic int64_t done;
    _Atomic int64_t next_ns; /* monotonic time at which the next line is due */
    atomic_flag printing; /* held by the one thread writing a line */
    int64_t total; /* 0: unknown */
    int64_t start_ns;
    int64_t step_ns; /* between lines; 0: every update */
    FILE *out;
    gnn_progress_mode_t mode; /* TTY, LINES or OFF: AUTO is resolved at start */
    const char *unit; /* points into text */
    char text[]; /* label, NUL, unit, NUL */
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * GNN__NS + ts.tv_nsec;
}

double gnn_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- formatting ---------------------------------------------------------- */

/* x >= 0 with three significant digits and a suffix: "1.23K", "12.3K", "123K". */
static void three_digits(char *buf, size_t len, const char *sign, double x, const char *sfx)
{
    if (x < 9.995)
        snprintf(buf, len, "%s%.2f%s", sign, x, sfx);
    else if (x < 99.95)
        snprintf(buf, len, "%s%.1f%s", sign, x, sfx);
    else
        snprintf(buf, len, "%s%.0f%s", sign, x, sfx);
}

char *gnn_format_count(char *buf, size_t len, double n, const char *unit)
{
    const char *sign = "";
    if (!buf || len == 0) return buf;
    if (isnan(n)) {
        snprintf(buf, len, "?");
        return buf;
    }
    if (n < 0) {
        sign = "-";
        n = -n;
    }
    if (unit && strcmp(unit, "B") == 0) {
        static const char *const sfx[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int i = 0;
        while (i < 6 && n >= 1023.5) {
            n /= 1024;
            i++;
        }
        if (i == 0)
            snprintf(buf, len, "%s%.0f B", sign, n);
        else if (n < 99.95)
            snprintf(buf, len, "%s%.1f %s", sign, n, sfx[i]);
        else
            snprintf(buf, len, "%s%.0f %s", sign, n, sfx[i]);
        return buf;
    }
    static const char *const sfx[] = {"", "K", "M", "G", "T", "P", "E"};
    if (n < 999.5 && n == floor(n)) { /* a plain count */
        snprintf(buf, len, "%s%.0f", sign, n);
        return buf;
    }
    int i = 0;
    while (i < 6 && n >= 999.5) {
        n /= 1000;
        i++;
    }
    three_digits(buf, len, sign, n, sfx[i]);
    return buf;
}

/* Clock-style time: "0:03", "12:34", "2:03:04"; "?" when not representable. */
static char *format_clock(char *buf, size_t len, double seconds)
{
    if (!(seconds >= 0) || seconds > 3.6e9) {
        snprintf(buf, len, "?");
        return buf;
    }
    long long s = (long long)(seconds + 0.5);
    if (s >= 3600)
        snprintf(buf, len, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, len, "%lld:%02lld", s / 60, s % 60);
    return buf;
}

char *gnn_format_duration(char *buf, size_t len, double seconds)
{
    if (!buf || len == 0) return buf;
    if (!(seconds >= 0)) seconds = 0; /* negative or NaN */
    if (seconds < 9.995)
        snprintf(buf, len, "%.2f s", seconds);
    else if (seconds < 59.95)
        snprintf(buf, len, "%.1f s", seconds);
    else
        format_clock(buf, len, seconds);
    return buf;
}

/* An amount with its unit: "1.23M edges", "1.5 GiB" (bytes carry their own). */
static char *format_amount(char *buf, size_t len, double n, const char *unit)
{
    char num[32];
    gnn_format_count(num, sizeof num, n, unit);
    if (unit[0] && strcmp(unit, "B") != 0)
        snprintf(buf, len, "%s %s", num, unit);
    else
        snprintf(buf, len, "%s", num);
    return buf;
}

/* ---- reporting ------------------------------------------------------------ */

void gnn_progress_configure(FILE *stream, gnn_progress_mode_t mode, double line_interval_s)
{
    g_out = stream;
    g_mode = mode;
    g_interval_s = line_interval_s;
}

gnn_progress_t *gnn_progress_start(const char *label, int64_t total, const char *unit)
{
    if (!label) label = "";
    if (!unit) unit = "";
    size_t nlabel = strlen(label) + 1, nunit = strlen(unit) + 1;
    gnn_progress_t *p = gnn_malloc(sizeof *p + nlabel + nunit);
    if (!p) return NULL;
    memcpy(p->text, label, nlabel);
    memcpy(p->text + nlabel, unit, nunit);
    p->unit = p->text + nlabel;
    p->total = total > 0 ? total : 0;
    p->out = g_out ? g_out : stderr;
    p->mode = g_mode;
    if (p->mode == GNN_PROGRESS_AUTO)
        p->mode = isatty(fileno(p->out)) ? GNN_PROGRESS_TTY : GNN_PROGRESS_LINES;
    if (gnn_log_level() < GNN_LOG_INFO) p->mode = GNN_PROGRESS_OFF;
    if (p->mode == GNN_PROGRESS_TTY)
        p->step_ns = GNN__TTY_STEP_NS;
    else if (g_interval_s > 0)
        p->step_ns = (int64_t)(fmin(g_interval_s, 1e6) * 1e9);
    else
        p->step_ns = 0;
    atomic_init(&p->done, 0);
    atomic_flag_clear(&p->printing);
    p->start_ns = now_ns();
    atomic_init(&p->next_ns, p->start_ns + p->step_ns);
    return p;
}

/* Write one line; live when it is a TTY line that later ones redraw. */
static void write_line(gnn_progress_t *p, const char *line, int live)
{
    flockfile(p->out);
    fputs(line, p->out);
    fflush(p->out);
    if (p->mode == GNN_PROGRESS_TTY) gnn__log_set_live(live ? p->out : NULL);
    funlockfile(p->out);
}

/* Print the line due at now: the live TTY line or one LINES line. */
static void report(gnn_progress_t *p, int64_t now)
{
    int64_t done = atomic_load(&p->done);
    double elapsed = (double)(now - p->start_ns) * 1e-9;
    double rate = elapsed > 0 ? (double)done / elapsed : 0;
    int tty = p->mode == GNN_PROGRESS_TTY;
    const char *label = p->text;
    const char *sep = label[0] ? ": " : "";
    char sdone[48], srate[48], stime[32], line[512];

    format_amount(srate, sizeof srate, rate, p->unit);
    if (p->total == 0) {
        format_amount(sdone, sizeof sdone, (double)done, p->unit);
        format_clock(stime, sizeof stime, elapsed);
        snprintf(line, sizeof line, "%s%s%s%s, %s/s, %s elapsed%s", tty ? "\r" : "", label, sep,
                 sdone, srate, stime, tty ? "\033[K" : "\n");
        write_line(p, line, tty);
        return;
    }

    char stotal[48];
    gnn_format_count(sdone, sizeof sdone, (double)done, p->unit);
    format_amount(stotal, sizeof stotal, (double)p->total, p->unit);
    double frac = done <= 0 ? 0 : done >= p->total ? 1 : (double)done / (double)p->total;
    int pct = (int)(frac * 100);
    if (done >= p->total)
        format_clock(stime, sizeof stime, 0);
    else if (rate > 0)
        format_clock(stime, sizeof stime, (double)(p->total - done) / rate);
    else
        snprintf(stime, sizeof stime, "?");

    if (tty) {
        char bar[GNN__BAR_WIDTH + 1];
        int fill = (int)(frac * GNN__BAR_WIDTH);
        for (int i = 0; i < GNN__BAR_WIDTH; i++) bar[i] = i < fill ? '#' : '-';
        bar[GNN__BAR_WIDTH] = '\0';
        snprintf(line, sizeof line, "\r%s%s[%s] %3d%% %s/%s, %s/s, ETA %s\033[K", label,
                 label[0] ? " " : "", bar, pct, sdone, stotal, srate, stime);
    } else {
        snprintf(line, sizeof line, "%s%s%d%% (%s/%s), %s/s, ETA %s\n", label, sep, pct, sdone,
                 stotal, srate, stime);
    }
    write_line(p, line, tty);
}

/* Print a line when one is due and no other thread is printing. */
static void maybe_report(gnn_progress_t *p)
{
    if (p->mode == GNN_PROGRESS_OFF) return;
    int64_t now = now_ns();
    if (now < atomic_load_explicit(&p->next_ns, memory_order_relaxed)) return;
    if (atomic_flag_test_and_set_explicit(&p->printing, memory_order_acquire)) return;
    if (now >= atomic_load_explicit(&p->next_ns, memory_order_relaxed)) {
        atomic_store_explicit(&p->next_ns, now + p->step_ns, memory_order_relaxed);
        report(p, now);
    }
    atomic_flag_clear_explicit(&p->printing, memory_order_release);
}

void gnn_progress_set(gnn_progress_t *p, int64_t done)
{
    if (!p) return;
    atomic_store(&p->done, done);
    maybe_report(p);
}

void gnn_progress_add(gnn_progress_t *p, int64_t delta)
{
    if (!p) return;
    atomic_fetch_add(&p->done, delta);
    maybe_report(p);
}

void gnn_progress_end(gnn_progress_t *p, int rc)
{
    if (rc >= 0) {
        gnn_progress_finish(p);
        return;
    }
    if (!p) return;
    if (p->mode == GNN_PROGRESS_TTY) {
        /* Clear the live line so the error that follows stands alone. */
        while (atomic_flag_test_and_set_explicit(&p->printing, memory_order_acquire)) sched_yield();
        write_line(p, "\r\033[K", 0);
    }
    gnn_free(p);
}

void gnn_progress_finish(gnn_progress_t *p)
{
    if (!p) return;
    if (p->mode != GNN_PROGRESS_OFF) {
        /* Wait for a thread still printing a line, so the closing line is last. */
        while (atomic_flag_test_and_set_explicit(&p->printing, memory_order_acquire)) sched_yield();
        int64_t done = atomic_load(&p->done);
        double elapsed = (double)(now_ns() - p->start_ns) * 1e-9;
        int tty = p->mode == GNN_PROGRESS_TTY;
        char sdone[48], stime[32], srate[48] = "", line[512];
        format_amount(sdone, sizeof sdone, (double)done, p->unit);
        gnn_format_duration(stime, sizeof stime, elapsed);
        if (elapsed > 0) format_amount(srate, sizeof srate, (double)done / elapsed, p->unit);
        snprintf(line, sizeof line, "%s%s%sdone, %s in %s%s%s%s%s\n", tty ? "\r" : "", p->text,
                 p->text[0] ? ": " : "", sdone, stime, elapsed > 0 ? " (" : "",
                 elapsed > 0 ? srate : "", elapsed > 0 ? "/s)" : "", tty ? "\033[K" : "");
        write_line(p, line, 0);
    }
    gnn_free(p);
}
