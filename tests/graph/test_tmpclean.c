/*
 * Tests of tmpclean.c: a process ended by SIGTERM, SIGINT or SIGHUP removes
 * the temporary file and directory (with its files) it registered and
 * still dies of that signal; an unregistered path stays; a signal the
 * parent ignored stays ignored (the process goes on, the paths stay).
 *
 * Each case runs in a child process that creates its paths, registers
 * them and signals itself; the parent checks how it ended and what is left.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/tmpclean.h"
#include "graph/base/error.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char g_dir[256];

static int exists(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0;
}

static void touch(const char *p)
{
    FILE *f = fopen(p, "w");
    if (!f) _exit(3);
    fputs("data\n", f);
    fclose(f);
}

/* The child: a file, a directory with three files, and a kept file; it
 * registers the first two (and the kept one, then forgets it) and raises
 * sig. Exit 0 if it survives the signal. */
static void child(int sig, const char *file, const char *dir, const char *kept)
{
    char p[1024];
    touch(file);
    if (mkdir(dir, 0777) != 0) _exit(3);
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/part-%d.h5", dir, i);
        touch(p);
    }
    touch(kept);
    if (gnn_tmp_register(file, 0) <= 0 || gnn_tmp_register(dir, 1) <= 0) _exit(4);
    int h = gnn_tmp_register(kept, 0);
    if (h <= 0) _exit(4);
    gnn_tmp_unregister(h);
    gnn_tmp_unregister(0); /* no handle: ignored */
    raise(sig);
    _exit(0);
}

static void run_case(int sig, int ignored)
{
    char file[512], dir[512], kept[512];
    snprintf(file, sizeof file, "%s/out.h5.tmp-1", g_dir);
    snprintf(dir, sizeof dir, "%s/parts.tmp-1", g_dir);
    snprintf(kept, sizeof kept, "%s/kept", g_dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (ignored) signal(sig, SIG_IGN);
        child(sig, file, dir, kept);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (ignored) {
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
        assert_true(exists(file));
        assert_true(exists(dir));
        char cmd[1200];
        snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", file, dir);
        assert_int_equal(system(cmd), 0);
    } else {
        if (!WIFSIGNALED(st) || WTERMSIG(st) != sig)
            fail_msg("child: status %#x, expected death by signal %d", st, sig);
        assert_false(exists(file));
        assert_false(exists(dir));
    }
    assert_true(exists(kept));
    unlink(kept);
}

static void test_sigterm(void **state)
{
    (void)state;
    run_case(SIGTERM, 0);
}

static void test_sigint_and_sighup(void **state)
{
    (void)state;
    run_case(SIGINT, 0);
    run_case(SIGHUP, 0);
}

static void test_ignored_signal_stays_ignored(void **state)
{
    (void)state;
    run_case(SIGHUP, 1);
}

/* Too long a path, and more than the slots: 0, and nothing else breaks. */
static void test_refusals(void **state)
{
    (void)state;
    char *longp = malloc(5000);
    assert_non_null(longp);
    memset(longp, 'a', 4999);
    longp[4999] = '\0';
    assert_int_equal(gnn_tmp_register(longp, 0), 0);
    free(longp);
    int h[9];
    for (int i = 0; i < 8; i++) assert_true((h[i] = gnn_tmp_register("/nonexistent/x", 0)) > 0);
    assert_int_equal(gnn_tmp_register("/nonexistent/y", 0), 0);
    for (int i = 0; i < 8; i++) gnn_tmp_unregister(h[i]);
    assert_true((h[8] = gnn_tmp_register("/nonexistent/z", 0)) > 0);
    gnn_tmp_unregister(h[8]);
}

/* The directory of a path, as dirname(3) has it, the input untouched. */
static void test_path_dir(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"a", "."},    {"a/b", "a"},   {"a/b/", "a"}, {"/a", "/"},  {"//a", "/"},
        {"/", "/"},    {"a//b", "a"},  {"a/b//", "a"}, {"///", "/"}, {"./x", "."},
        {"", "."},     {"/x/y/z.h5", "/x/y"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        assert_int_equal(gnn_path_dir(cases[i][0], buf, sizeof buf), 0);
        if (strcmp(buf, cases[i][1]))
            fail_msg("directory of \"%s\": \"%s\", expected \"%s\"", cases[i][0], buf,
                     cases[i][1]);
    }
    char small[4];
    assert_int_equal(gnn_path_dir("abcd/e", small, sizeof small), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "too long"));
    assert_int_equal(gnn_path_dir("abc/e", small, sizeof small), 0);
    assert_string_equal(small, "abc");
}

/* A directory that can take new files, and the three ways one cannot:
 * each its error code and a message naming what and the directory. */
static void test_output_dir_check(void **state)
{
    (void)state;
    char sub[512], file[512], want[1200];
    assert_int_equal(gnn_output_dir_check("-o x", g_dir), 0);
    snprintf(sub, sizeof sub, "%s/missing", g_dir);
    assert_int_equal(gnn_output_dir_check("-o x", sub), GNN_ENOENT);
    snprintf(want, sizeof want, "-o x: directory %s does not exist", sub);
    assert_non_null(strstr(gnn_error_message(), want));
    snprintf(file, sizeof file, "%s/plain", g_dir);
    touch(file);
    assert_int_equal(gnn_output_dir_check("--tmpdir", file), GNN_ENOENT);
    snprintf(want, sizeof want, "--tmpdir: %s is not a directory", file);
    assert_non_null(strstr(gnn_error_message(), want));
    snprintf(sub, sizeof sub, "%s/ro", g_dir);
    assert_int_equal(mkdir(sub, 0500), 0);
    if (access(sub, W_OK) == 0) { /* root writes anywhere: nothing to refuse */
        assert_int_equal(gnn_output_dir_check("-o x", sub), 0);
    } else {
        assert_int_equal(gnn_output_dir_check("-o x", sub), GNN_EIO);
        snprintf(want, sizeof want, "-o x: cannot write in directory %s: ", sub);
        assert_non_null(strstr(gnn_error_message(), want));
    }
    rmdir(sub);
    unlink(file);
}

/* Two names of one file (a link, a path through "..") are the same file;
 * two names of files that do not exist yet are the same once their
 * directories are resolved; different files are not. */
static void test_same_file(void **state)
{
    (void)state;
    char a[512], b[512], link[512], dotted[512], na[512], nb[512];
    snprintf(a, sizeof a, "%s/a", g_dir);
    snprintf(b, sizeof b, "%s/b", g_dir);
    snprintf(link, sizeof link, "%s/l", g_dir);
    snprintf(dotted, sizeof dotted, "%s/../%s/a", g_dir, strrchr(g_dir, '/') + 1);
    touch(a);
    touch(b);
    assert_int_equal(symlink(a, link), 0);
    assert_true(gnn_same_file(a, a));
    assert_true(gnn_same_file(a, link));
    assert_true(gnn_same_file(dotted, a));
    assert_false(gnn_same_file(a, b));
    snprintf(na, sizeof na, "%s/new.h5", g_dir);
    snprintf(nb, sizeof nb, "%s/../%s/new.h5", g_dir, strrchr(g_dir, '/') + 1);
    assert_true(gnn_same_file(na, nb));  /* neither exists: the same path */
    assert_false(gnn_same_file(na, a));  /* one exists, the other not */
    snprintf(na, sizeof na, "%s/x/", g_dir);
    snprintf(nb, sizeof nb, "%s/y/", g_dir);
    assert_false(gnn_same_file(na, nb)); /* trailing slashes: x and y, not "" twice */
    unlink(link);
    unlink(a);
    unlink(b);
}

int main(void)
{
    snprintf(g_dir, sizeof g_dir, "%s/gnn-tmpclean-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(g_dir)) return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm),
        cmocka_unit_test(test_sigint_and_sighup),
        cmocka_unit_test(test_ignored_signal_stays_ignored),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_path_dir),
        cmocka_unit_test(test_output_dir_check),
        cmocka_unit_test(test_same_file),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(g_dir);
    return rc;
}
