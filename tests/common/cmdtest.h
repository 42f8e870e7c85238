/*
 * Checks of a command run as a user runs it, shared by the command tests:
 * a failure is exactly one line "PROG: error: ..." on standard error
 * (PROG = the binary's name), the expected exit status, nothing on standard
 * output, and no output file left behind, not even a temporary one; and,
 * for commands run under mpiexec, the removal of the lines mpiexec adds
 * before those checks. Include after <cmocka.h>; builds on testutil.h.
 */
#ifndef GNN_TESTS_CMDTEST_H
#define GNN_TESTS_CMDTEST_H

#include "tests/common/testutil.h"

#include <dirent.h>
#include <stdarg.h>
#include <string.h>

#define TU_MAX_ARGS 64

/* argv = {bin, the NULL-terminated strings of ap..., NULL}; argv holds
 * TU_MAX_ARGS entries. */
static inline void tu_build_argv(char **argv, char *bin, va_list ap)
{
    int n = 0;
    argv[n++] = bin;
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        assert_true(n < TU_MAX_ARGS - 1);
        argv[n++] = a;
    }
    argv[n] = NULL;
}

/* Fail the test naming the command line, its status and its stderr (the
 * run is freed first: fail_msg does not return). */
static inline void tu_fail_cmd(char *const *argv, tu_run_t *r)
{
    static char cmd[2048], err[4096];
    cmd[0] = '\0';
    for (int i = 0; argv[i]; i++)
        snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s ", argv[i]);
    snprintf(err, sizeof err, "%s", r->err ? r->err : "");
    int status = r->status;
    tu_run_free(r);
    fail_msg("%s: status %d, stderr:\n%s", cmd, status, err);
}

/* Run argv, which must exit 0; returns its standard output (caller frees). */
static inline char *tu_run_ok_argv(char *const *argv)
{
    tu_run_t r = tu_run(argv);
    if (r.status != 0) tu_fail_cmd(argv, &r);
    char *out = r.out;
    r.out = NULL;
    tu_run_free(&r);
    return out;
}

/* The same for bin and the arguments that follow (NULL-terminated). */
static inline char *tu_run_ok(char *bin, ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, bin);
    tu_build_argv(argv, bin, ap);
    va_end(ap);
    return tu_run_ok_argv(argv);
}

/* Neither out nor any "out.tmp-*" beside it exists. */
static inline void tu_assert_no_output(const char *out)
{
    assert_false(tu_exists(out));
    char dir[640], base[640];
    snprintf(dir, sizeof dir, "%s", out);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        snprintf(dir, sizeof dir, ".");
        snprintf(base, sizeof base, "%s.tmp-", out);
    } else {
        *slash = '\0';
        snprintf(base, sizeof base, "%s.tmp-", slash + 1);
    }
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, base, strlen(base))) fail_msg("temporary file %s left", e->d_name);
    closedir(d);
}

/* Run argv and expect a failure with status, one error line containing
 * want, empty standard output and, when out is given, no output there. */
static inline void tu_expect_failure(char *const argv[], const char *out, int status,
                                     const char *want)
{
    char prefix[256];
    const char *prog = strrchr(argv[0], '/');
    snprintf(prefix, sizeof prefix, "%s: error: ", prog ? prog + 1 : argv[0]);
    tu_run_t r = tu_run(argv);
    if (r.status != status || tu_count_lines(r.err) != 1 ||
        strncmp(r.err, prefix, strlen(prefix)) != 0 || !strstr(r.err, want))
        fail_msg("status %d, stderr '%s'; expected status %d and one line '%s...' with '%s'",
                 r.status, r.err, status, prefix, want);
    assert_string_equal(r.out, "");
    tu_run_free(&r);
    if (out) tu_assert_no_output(out);
}

/* tu_expect_failure for bin and the arguments that follow (NULL-terminated). */
static inline void tu_expect_failure_of(char *bin, const char *out, int status, const char *want,
                                        ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, want);
    tu_build_argv(argv, bin, ap);
    va_end(ap);
    tu_expect_failure(argv, out, status, want);
}

/*
 * Drop from s, in place, the lines mpiexec adds when a rank exits non-zero
 * or calls MPI_Abort: its dashed frames, blank lines, and the known
 * sentences of its "Primary job terminated normally", "mpiexec detected
 * that one or more processes exited with non-zero status" and
 * "MPI_ABORT was invoked" notices. When mpiexec fails to relay that last
 * notice from the aborting rank (seen in about half the runs of the
 * sanitizer build), it prints instead one line of its own, "[host:pid]
 * [[job,0],0] ORTE_ERROR_LOG: <reason> in file .../show_help.c at line
 * N"; that line goes too. Every other line stays, so that what a rank
 * prints is still counted.
 */
static inline void tu_strip_mpiexec_lines(char *s)
{
    static const char *const known[] = {
        "Primary job  terminated normally, but",
        "Primary job terminated normally, but",
        "a non-zero exit code. Per user-direction, the job has been aborted.",
        "mpiexec detected that one or more processes exited with non-zero status",
        "the job to be terminated. The first process to do so was:",
        "Process name: [[",
        "Exit code:",
        "MPI_ABORT was invoked on rank ",
        "with errorcode ",
        "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.",
        "You may or may not see output from other processes, depending on",
        "exactly when Open MPI kills them.",
    };
    char *out = s;
    for (char *line = s; *line;) {
        char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        int drop = *p == '\n' || *p == '\0';
        if (!drop && *p == '-') {
            const char *q = p;
            while (*q == '-') q++;
            drop = q - p >= 20 && (*q == '\n' || *q == '\0');
        }
        for (size_t i = 0; !drop && i < sizeof known / sizeof known[0]; i++)
            drop = !strncmp(p, known[i], strlen(known[i]));
        if (!drop && *p == '[') {
            if (end) *end = '\0';
            const char *log = strstr(p, ",0],0] ORTE_ERROR_LOG: ");
            drop = log && strstr(log, "/show_help.c at line ");
            if (end) *end = '\n';
        }
        if (!drop) {
            memmove(out, line, len);
            out += len;
        }
        line += len;
    }
    *out = '\0';
}

#endif
