/*
 * Temporary outputs removed on a signal (tmpclean.h).
 *
 * The handler may only make async-signal-safe calls: paths are copied into
 * static slots when registered (no allocation in the handler), and a
 * directory is emptied with open, getdents64, unlinkat and rmdir.
 */
#include "graph/base/tmpclean.h"

#include "graph/base/error.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define N_SLOTS 8
#define PATH_BYTES 4096

typedef struct {
    volatile sig_atomic_t used;
    int is_dir;
    char path[PATH_BYTES];
} slot_t;

static slot_t slots[N_SLOTS];
static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
#define N_SIGS ((int)(sizeof sigs / sizeof sigs[0]))
static struct sigaction previous[N_SIGS];
static int installed;

/* The record getdents64 fills (struct linux_dirent64). */
struct dirent64_rec {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static void remove_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        static char buf[8192];
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
            for (long at = 0; at < n;) {
                struct dirent64_rec *d = (struct dirent64_rec *)(buf + at);
                const char *nm = d->d_name;
                if (strcmp(nm, ".") && strcmp(nm, "..")) unlinkat(fd, nm, 0);
                at += d->d_reclen;
            }
        }
        close(fd);
    }
    rmdir(path);
}

static void on_signal(int sig)
{
    for (int i = 0; i < N_SLOTS; i++) {
        if (!slots[i].used) continue;
        if (slots[i].is_dir)
            remove_dir(slots[i].path);
        else
            unlink(slots[i].path);
        slots[i].used = 0;
    }
    for (int s = 0; s < N_SIGS; s++)
        if (sigs[s] == sig) sigaction(sig, &previous[s], NULL);
    raise(sig);
}

static void install(void)
{
    if (installed) return;
    installed = 1;
    for (int s = 0; s < N_SIGS; s++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        for (int t = 0; t < N_SIGS; t++) sigaddset(&sa.sa_mask, sigs[t]);
        if (sigaction(sigs[s], NULL, &previous[s]) != 0) continue;
        /* A signal ignored by the caller (nohup) stays ignored. */
        if (previous[s].sa_handler == SIG_IGN) continue;
        sigaction(sigs[s], &sa, NULL);
    }
}

int gnn_tmp_register(const char *path, int is_dir)
{
    if (!path || strlen(path) >= PATH_BYTES) return 0;
    install();
    for (int i = 0; i < N_SLOTS; i++) {
        if (slots[i].used) continue;
        snprintf(slots[i].path, sizeof slots[i].path, "%s", path);
        slots[i].is_dir = is_dir;
        slots[i].used = 1;
        return i + 1;
    }
    return 0;
}

void gnn_tmp_unregister(int handle)
{
    if (handle >= 1 && handle <= N_SLOTS) slots[handle - 1].used = 0;
}

int gnn_output_replaceable(const char *opt, const char *path, int is_dir)
{
    struct stat st;
    if (!path || lstat(path, &st) != 0) return 0;
    int link = S_ISLNK(st.st_mode);
    /* A link is replaced by the rename, not its target: harmless for a
     * link to a file of the output's kind or to nothing, not for one such
     * as /dev/stdout. */
    if (link && stat(path, &st) != 0) return 0;
    if (is_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode)) return 0;
    const char *what = S_ISREG(st.st_mode)    ? "a regular file"
                       : S_ISDIR(st.st_mode)  ? "a directory"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISFIFO(st.st_mode) ? "a pipe"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    return GNN_FAIL(GNN_EIO, "%s%s%s is %s%s, which the output would replace (it is written "
                             "whole under a temporary name, then renamed): name a %s",
                    opt ? opt : "", opt ? " " : "", path, link ? "a link to " : "", what,
                    is_dir ? "directory" : "file");
}

int gnn_output_dir_check(const char *what, const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0)
        return errno == ENOENT ? GNN_FAIL(GNN_ENOENT, "%s: directory %s does not exist", what, dir)
                               : GNN_FAIL(GNN_EIO, "%s: cannot write in directory %s: %s", what,
                                          dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return GNN_FAIL(GNN_ENOENT, "%s: %s is not a directory", what, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return GNN_FAIL(GNN_EIO, "%s: cannot write in directory %s: %s", what, dir,
                        strerror(errno));
    return 0;
}

int gnn_path_dir(const char *path, char *buf, size_t size)
{
    size_t end = strlen(path);
    while (end > 1 && path[end - 1] == '/') end--; /* "a/b/" is in "a" */
    while (end > 0 && path[end - 1] != '/') end--;
    while (end > 1 && path[end - 1] == '/') end--; /* "a//b" is in "a" */
    if (end >= size)
        return GNN_FAIL(GNN_EINVAL, "%.80s...: the directory's name is too long (%zu bytes)",
                        path, end);
    if (end == 0)
        snprintf(buf, size, ".");
    else
        snprintf(buf, size, "%.*s", (int)end, path);
    return 0;
}

/* path with its directory resolved to an absolute one, or path as it is
 * where the directory cannot be resolved. Trailing slashes are dropped
 * from the last name as from the directory ("a/b/" is b in a). */
static const char *resolved(const char *path, char *buf, size_t size)
{
    char dir[PATH_MAX], real[PATH_MAX];
    size_t end = strlen(path), start;
    while (end > 1 && path[end - 1] == '/') end--;
    for (start = end; start > 0 && path[start - 1] != '/';) start--;
    if (gnn_path_dir(path, dir, sizeof dir) < 0) {
        gnn_error_clear();
        return path;
    }
    if (!realpath(dir, real)) return path;
    snprintf(buf, size, "%s/%.*s", real, (int)(end - start), path + start);
    return buf;
}

int gnn_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0;
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return !strcmp(resolved(a, ra, sizeof ra), resolved(b, rb, sizeof rb));
}
