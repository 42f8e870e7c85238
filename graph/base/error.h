/*
 * The error contract of every library function in the project.
 *
 * Functions return int: 0 on success, a negative GNN_E* code on failure. The
 * codes, their names and their messages come from one table (GNN_ERROR_TABLE)
 * so they cannot drift apart. The first failure records where it happened
 * (file, line) and a formatted message in a per-thread slot; callers that only
 * pass the failure up use GNN_TRY, which keeps that record untouched, and may
 * prepend context with gnn_error_prefix(). Commands print the record as one
 * line (gnn_error_print) and exit non-zero. Library code never exits.
 */
#ifndef GNN_BASE_ERROR_H
#define GNN_BASE_ERROR_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/*     name         value  message */
#define GNN_ERROR_TABLE(X)                                                   \
    X(OK,           0,  "success")                                           \
    X(NOMEM,       -1,  "out of memory")                                     \
    X(INVAL,       -2,  "invalid argument")                                  \
    X(NOENT,       -3,  "no such file or directory")                         \
    X(IO,          -4,  "input/output error")                                \
    X(FORMAT,      -5,  "malformed input")                                   \
    X(VERSION,     -6,  "unsupported format version")                        \
    X(RANGE,       -7,  "value out of range")                                \
    X(OVERFLOW,    -8,  "integer overflow")                                  \
    X(EXISTS,      -9,  "output already exists")                             \
    X(UNSUPPORTED, -10, "not supported")                                     \
    X(HDF5,        -11, "HDF5 library error")                                \
    X(MPI,         -12, "MPI error")                                         \
    X(METIS,       -13, "METIS error")                                       \
    X(BLAS,        -14, "BLAS error")                                        \
    X(CUDA,        -15, "CUDA error")                                        \
    X(CUBLAS,      -16, "cuBLAS error")                                      \
    X(CUSPARSE,    -17, "cuSPARSE error")                                    \
    X(NCCL,        -18, "NCCL error")                                        \
    X(NODEV,       -19, "no CUDA device")                                    \
    X(PLUGIN,      -20, "plug-in error")                                     \
    X(USAGE,       -21, "bad command line")                                  \
    X(INTERNAL,    -22, "internal error")

enum gnn_error_code {
#define GNN__ERR_ENUM(name, value, msg) GNN_E##name = (value),
    GNN_ERROR_TABLE(GNN__ERR_ENUM)
#undef GNN__ERR_ENUM
    GNN_OK = GNN_EOK,
    GNN_ERROR_COUNT_ = 23 /* number of entries in the table */
};

/* Static message for a code ("unknown error" for a code not in the table). */
const char *gnn_strerror(int code);
/* Name of a code, e.g. "GNN_EFORMAT"; "GNN_E?" when unknown. */
const char *gnn_error_name(int code);

/*
 * Record a failure: code, where, and a printf-style message. Returns code so
 * it can be used as `return gnn__error_set(...)`. Use the GNN_FAIL macro.
 */
int gnn__error_set(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prepend "context: " to the recorded message; file and line stay. */
void gnn_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The last recorded failure of this thread. */
int gnn_error_code(void);
const char *gnn_error_message(void); /* "" when none */
const char *gnn_error_file(void);    /* source file, "" when none */
int gnn_error_line(void);
void gnn_error_clear(void);

/*
 * Print the recorded failure as one line on stream: "PROG: error: MESSAGE".
 * With verbose, the code name and source location are appended.
 */
void gnn_error_print(FILE *stream, const char *prog, int verbose);

/*
 * For a command's main: turn the result of its work into an exit status.
 * 0 stays 0; a failure prints the recorded error as one line prefixed by
 * prog (with the source location when the log level is debug) and gives 1,
 * or 2 for GNN_EUSAGE, whose line also points at "HELP --help" (help NULL:
 * prog).
 */
int gnn_error_report(const char *prog, const char *help, int rc);

/* Record code at this line with a message; evaluates to code. */
#define GNN_FAIL(code, ...) gnn__error_set((code), __FILE__, __LINE__, __VA_ARGS__)

/* Evaluate a call returning int; on a negative result jump to `fail` with
 * rc set. The callee has recorded the failure already. Needs `int rc`. */
#define GNN_TRY(call)                                                        \
    do {                                                                     \
        rc = (call);                                                         \
        if (rc < 0) goto fail;                                               \
    } while (0)

/* Check a condition; when false record code with a message and jump to fail. */
#define GNN_CHECK(cond, code, ...)                                           \
    do {                                                                     \
        if (!(cond)) {                                                       \
            rc = GNN_FAIL((code), __VA_ARGS__);                              \
            goto fail;                                                       \
        }                                                                    \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
