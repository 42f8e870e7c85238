/*
 * Helpers shared by the test programs: a fresh temporary directory per test
 * program, path joining, reading a file into memory, and starting or running
 * a command with its standard output and error sent to files (for the tests
 * of the commands' one-line errors and exit codes). Header-only, test code
 * only.
 */
#ifndef GNN_TESTS_TESTUTIL_H
#define GNN_TESTS_TESTUTIL_H

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The process's temporary directory ("" until made) and its maker. */
static inline char *tu_tmpdir_path_(void)
{
    static char dir[512];
    return dir;
}

static inline pid_t *tu_tmpdir_owner_(void)
{
    static pid_t owner;
    return &owner;
}

static inline int tu_rm_entry_(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path); /* best effort: go on with the rest */
    return 0;
}

/* At exit of the process that made it: the directory and all it holds,
 * unless GNN_TEST_KEEP_TMP is set (to look at a failing test's files). */
static inline void tu_tmpdir_remove_(void)
{
    const char *keep = getenv("GNN_TEST_KEEP_TMP");
    char *dir = tu_tmpdir_path_();
    if (!dir[0] || getpid() != *tu_tmpdir_owner_() || (keep && keep[0])) return;
    nftw(dir, tu_rm_entry_, 16, FTW_DEPTH | FTW_PHYS);
}

/* A new directory under $TMPDIR (or /tmp), created once per process and
 * removed when it exits (tu_tmpdir_remove_). */
static inline const char *tu_tmpdir(void)
{
    char *dir = tu_tmpdir_path_();
    if (!dir[0]) {
        const char *base = getenv("TMPDIR");
        snprintf(dir, 512, "%s/gnn-test-XXXXXX", base && base[0] ? base : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            exit(1);
        }
        *tu_tmpdir_owner_() = getpid();
        atexit(tu_tmpdir_remove_);
    }
    return dir;
}

/* "<tmpdir>/<name>" in a static rotating buffer (64 live results). */
static inline const char *tu_path(const char *name)
{
    static char bufs[64][640];
    static int next;
    char *b = bufs[next++ % 64];
    snprintf(b, sizeof bufs[0], "%s/%s", tu_tmpdir(), name);
    return b;
}

/* Write text to "<tmpdir>/<name>"; returns the path (tu_path's buffer). */
static inline const char *tu_write_file(const char *name, const char *text)
{
    const char *path = tu_path(name);
    FILE *f = fopen(path, "wb");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
    return path;
}

static inline int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* Entries of the test directory whose name contains ".tmp-": temporary
 * outputs left behind (-1 when it cannot be read). */
static inline int tu_temp_files(void)
{
    int n = 0;
    DIR *d = opendir(tu_tmpdir());
    if (!d) return -1;
    for (struct dirent *e; (e = readdir(d));) n += strstr(e->d_name, ".tmp-") != NULL;
    closedir(d);
    return n;
}

/* Whole file as a NUL-terminated string (caller frees); NULL if unreadable. */
static inline char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    return s;
}

/* The exit status of the shell command formatted from fmt (at most 8 KiB;
 * a longer one counts as failing, -1). The project's code does not use
 * asprintf: tests/lsan.supp drops leaks that stop in glibc's vasprintf. */
__attribute__((format(printf, 1, 2))) static inline int tu_sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof cmd) return -1;
    return system(cmd);
}

static inline int tu_count_lines(const char *s)
{
    int n = 0;
    for (; s && *s; s++) n += *s == '\n';
    return n;
}

typedef struct {
    int status; /* exit status, or 128 + signal */
    char *out;  /* captured standard output (caller frees via tu_run_free) */
    char *err;  /* captured standard error */
} tu_run_t;

/* Start argv (NULL-terminated) with standard input from /dev/null and
 * standard output and error into the files out_path and err_path (created
 * or truncated). Returns the child's pid, or -1 when fork fails; a child
 * that cannot open the files exits 126, one that cannot exec argv[0] 127. */
static inline pid_t tu_spawn(char *const argv[], const char *out_path, const char *err_path)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fi = open("/dev/null", O_RDONLY);
        if (fo < 0 || fe < 0 || fi < 0) _exit(126);
        dup2(fi, 0);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    return pid;
}

/* Run argv (NULL-terminated) with stdout and stderr captured. */
static inline tu_run_t tu_run(char *const argv[])
{
    tu_run_t r = {-1, NULL, NULL};
    char out_path[640], err_path[640]; /* not tu_path: callers hold its results */
    snprintf(out_path, sizeof out_path, "%s/run.stdout", tu_tmpdir());
    snprintf(err_path, sizeof err_path, "%s/run.stderr", tu_tmpdir());
    pid_t pid = tu_spawn(argv, out_path, err_path);
    int st = 0;
    if (pid > 0 && waitpid(pid, &st, 0) == pid)
        r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    r.out = tu_read_file(out_path);
    r.err = tu_read_file(err_path);
    return r;
}

static inline void tu_run_free(tu_run_t *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

/* Seed for randomised tests: $GNN_TEST_SEED or a fixed default, printed. */
static inline unsigned tu_seed(void)
{
    const char *s = getenv("GNN_TEST_SEED");
    unsigned seed = s ? (unsigned)strtoul(s, NULL, 10) : 12345u;
    printf("seed %u (set GNN_TEST_SEED to change)\n", seed);
    return seed;
}

/*
 * Path of a shared test dataset (../shared/datasets/NAME beside the clone,
 * or $GNN_SHARED_DATASETS/NAME). When it is absent: under CI=true print why
 * and exit 1 (CI must have it); elsewhere print SKIPPED and exit 77, which
 * CTest reports as skipped.
 */
static inline const char *tu_shared_dataset(const char *name)
{
    static char path[1024];
    const char *base = getenv("GNN_SHARED_DATASETS");
    snprintf(path, sizeof path, "%s/%s", base && base[0] ? base : "../shared/datasets", name);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return path;
    const char *ci = getenv("CI");
    if (ci && !strcmp(ci, "true")) {
        printf("FAILED: shared dataset %s is missing (required under CI=true)\n", path);
        exit(1);
    }
    printf("SKIPPED: shared dataset %s is absent\n", path);
    exit(77);
}

#endif
