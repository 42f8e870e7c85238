/*
 * gnn-partition under mpiexec, run as a user runs it: two ranks share the
 * partitioning and the writing of the directory. argv[1..3]: mpiexec, the
 * gnn-partition binary, the gnn-dataset binary; argv[4], the mode:
 *
 *   (none)  an SBM graph of 5000 nodes made by gnn-dataset. Two ranks
 *           without coarsening cut it exactly as one process does (the
 *           same edge cut and parts in --info --json) and the directory
 *           passes --check; with --max-metis-edges a quarter of the edges
 *           they coarsen, pass --check and cut at most 1.3x what one METIS
 *           call cuts. A --mem-budget of 2G changes nothing (and with
 *           coarsening forced keeps the cut within 1.3x); one of 1M
 *           fails with status 1, exactly one error line naming
 *           --mem-budget (one rank reports) and no output directory. A
 *           split naming a node twice, and a missing graph file, fail the
 *           same way before any work, without hanging, as does an -o that
 *           exists on one rank's side only (ranks in their own directories).
 *   cora    the shared Cora dataset (skipped where absent): two ranks with
 *           --max-metis-edges 2000 into 2, 4 and 8 parts pass --check and
 *           cut at most 1.3x what one process's METIS call cuts.
 *
 * mpiexec adds its own lines to standard error when a rank exits non-zero
 * (framed by dashed lines: "Primary job terminated normally, but 1
 * process returned ...", "mpiexec detected that one or more processes
 * exited with non-zero status ...", the failing process's name and exit
 * code). Only those known lines are removed (tu_strip_mpiexec_lines)
 * before the error lines are counted; anything else mpiexec or a rank
 * prints is counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/common/cmdtest.h"
#include "tests/common/h5test.h"
#include "tests/common/jsontest.h"
#include "tests/common/testutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

static char *g_mpiexec, *g_part, *g_dataset;
static char g_sbm[640];   /* 5000 nodes (seed 3) */
static char g_one[640];   /* its METIS partition into 4 parts by one process */
static int64_t g_one_cut; /* and that partition's edge cut */
static int64_t g_edges;   /* stored edges of g_sbm (each edge in both directions) */

/* ---- Running the commands ------------------------------------------------- */

/* argv = {mpiexec, -np, 2, --oversubscribe, gnn-partition, first, the
 * NULL-terminated arguments of ap..., NULL}. */
static void mpi_argv(char **argv, char *first, va_list ap)
{
    int n = 0;
    argv[n++] = g_mpiexec;
    argv[n++] = "-np";
    argv[n++] = "2";
    argv[n++] = "--oversubscribe";
    argv[n++] = g_part;
    argv[n++] = first;
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        assert_true(n < TU_MAX_ARGS - 1);
        argv[n++] = a;
    }
    argv[n] = NULL;
}

/* gnn-partition under mpiexec -np 2 with the arguments that follow
 * (NULL-terminated); the caller judges the outcome and frees it. */
static tu_run_t mpi_run(char *first, ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, first);
    mpi_argv(argv, first, ap);
    va_end(ap);
    return tu_run(argv);
}

/* The same, run quietly (the arguments include -q): it must exit 0 and
 * print nothing, neither a rank nor mpiexec. */
static void mpi_ok(char *first, ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, first);
    mpi_argv(argv, first, ap);
    va_end(ap);
    tu_run_t r = tu_run(argv);
    if (r.status != 0 || (r.err && r.err[0]) || (r.out && r.out[0])) tu_fail_cmd(argv, &r);
    tu_run_free(&r);
}

#define MPI_OK(...) mpi_ok(__VA_ARGS__, (char *)NULL)

/* gnn-partition under mpiexec -np 2 with the arguments that follow must
 * fail: a non-zero status (status itself unless it is -1), nothing on
 * standard output, and, once mpiexec's own lines are removed, exactly one
 * line "gnn-partition: error: ..." containing want; no output at out. */
static void mpi_fails(const char *out, int status, const char *want, char *first, ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, first);
    mpi_argv(argv, first, ap);
    va_end(ap);
    tu_run_t r = tu_run(argv);
    char *raw = strdup(r.err ? r.err : "");
    assert_non_null(raw);
    tu_strip_mpiexec_lines(r.err);
    if (r.status == 0 || (status >= 0 && r.status != status) || tu_count_lines(r.err) != 1 ||
        strncmp(r.err, "gnn-partition: error: ", 22) != 0 || !strstr(r.err, want))
        fail_msg("status %d, stderr '%s'; expected status %d and one error line with '%s'",
                 r.status, raw, status, want);
    assert_string_equal(r.out, "");
    print_message("status %d: %s", r.status, r.err);
    free(raw);
    tu_run_free(&r);
    if (out) tu_assert_no_output(out);
}

/* ---- --info --json --------------------------------------------------------- */

static int64_t json_int(const char *text, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *v = strstr(text, pat);
    if (!v) fail_msg("no \"%s\" in %s", key, text);
    char *e;
    long long x = strtoll(v + strlen(pat), &e, 10);
    if (e == v + strlen(pat)) fail_msg("\"%s\" is not an integer in %s", key, text);
    return x;
}

/* gnn-partition --info dir --json: one JSON object (caller frees). */
static char *info_json(const char *dir)
{
    char *out = tu_run_ok(g_part, "--info", (char *)dir, "--json", (char *)NULL);
    const char *end = tu_json_skip(out);
    if (tu_count_lines(out) != 1 || *tu_json_ws(out) != '{' || !end || *tu_json_ws(end) != '\n')
        fail_msg("--info %s --json: not one JSON object: %s", dir, out);
    return out;
}

static int64_t edge_cut(const char *dir)
{
    char *j = info_json(dir);
    int64_t cut = json_int(j, "edge_cut");
    free(j);
    return cut;
}

static void check_ok(const char *dir)
{
    free(tu_run_ok(g_part, "--check", (char *)dir, "-q", (char *)NULL));
}

/* ---- The SBM graph ---------------------------------------------------------- */

static void test_two_ranks_as_one_process(void **state)
{
    (void)state;
    char *dir = (char *)tu_path("mpi-k4");
    MPI_OK(g_sbm, "-k", "4", "-o", dir, "--force", "-q");
    check_ok(dir);
    char *one = info_json(g_one), *two = info_json(dir);
    int64_t cut = json_int(two, "edge_cut");
    print_message("SBM, k=4: edge cut %" PRId64 " by one process, %" PRId64 " by two ranks\n",
                  g_one_cut, cut);
    assert_int_equal(cut, g_one_cut);
    /* Node, edge, halo and training counts of every part: the same parts. */
    const char *a = strstr(one, "\"parts\":"), *b = strstr(two, "\"parts\":");
    assert_non_null(a);
    assert_non_null(b);
    assert_string_equal(a, b);
    free(one);
    free(two);
}

/* The random baseline under mpiexec: rank 0 deals and writes the parts,
 * and every rank leaves (no rank left waiting in a collective call). */
static void test_two_ranks_random(void **state)
{
    (void)state;
    char *dir = (char *)tu_path("mpi-random");
    MPI_OK(g_sbm, "-k", "3", "--method", "random", "-o", dir, "--force", "-q");
    check_ok(dir);
    char *two = info_json(dir);
    assert_non_null(strstr(two, "\"method\": \"random\""));
    assert_int_equal(json_int(two, "num_parts"), 3);
    free(two);
}

static void test_two_ranks_coarsened(void **state)
{
    (void)state;
    char *dir = (char *)tu_path("mpi-k4-coarse");
    char limit[32];
    /* The SBM graph stores each edge in both directions without loops or
     * repeats, so its undirected view has about as many entries as it has
     * stored edges: a quarter of them forces coarsening. */
    snprintf(limit, sizeof limit, "%" PRId64, g_edges / 4);
    tu_run_t r = mpi_run(g_sbm, "-k", "4", "-o", dir, "--force", "--max-metis-edges", limit,
                         (char *)NULL);
    if (r.status != 0 || !r.err || !strstr(r.err, "coarse level 1:"))
        fail_msg("--max-metis-edges %s: status %d, no coarse level reported:\n%s", limit,
                 r.status, r.err);
    tu_run_free(&r);
    check_ok(dir);
    int64_t cut = edge_cut(dir);
    /* meta.h5 records how the parts were made. */
    char *j = info_json(dir);
    int64_t ranks = json_int(j, "ranks"), levels = json_int(j, "coarse_levels"),
            lim = json_int(j, "max_metis_edges"), budget = json_int(j, "mem_budget");
    free(j);
    assert_int_equal(ranks, 2);
    assert_true(levels >= 1);
    assert_int_equal(lim, g_edges / 4);
    assert_int_equal(budget, 0);
    char *one = info_json(g_one);
    assert_int_equal(json_int(one, "ranks"), 1);
    assert_int_equal(json_int(one, "coarse_levels"), 0);
    free(one);
    print_message("SBM, k=4, --max-metis-edges %s of %" PRId64 " edges: edge cut %" PRId64
                  " by two ranks, %" PRId64 " by one METIS call (ratio %.3f)\n",
                  limit, g_edges, cut, g_one_cut, (double)cut / (double)g_one_cut);
    assert_true(cut > 0);
    if ((double)cut > 1.3 * (double)g_one_cut)
        fail_msg("coarsened cut %" PRId64 " > 1.3 x %" PRId64, cut, g_one_cut);
}

static void test_mem_budget(void **state)
{
    (void)state;
    /* Enough: METIS may take the whole graph, so the cut is one call's. */
    char *dir = (char *)tu_path("mpi-budget");
    MPI_OK(g_sbm, "-k", "4", "-o", dir, "--force", "--mem-budget", "2G", "-q");
    check_ok(dir);
    assert_int_equal(edge_cut(dir), g_one_cut);
    /* And with coarsening forced: within 1.3x of one METIS call. */
    char limit[32];
    snprintf(limit, sizeof limit, "%" PRId64, g_edges / 4);
    MPI_OK(g_sbm, "-k", "4", "-o", dir, "--force", "--mem-budget", "2G", "--max-metis-edges",
           limit, "-q");
    check_ok(dir);
    int64_t cut = edge_cut(dir);
    print_message("SBM, k=4, --mem-budget 2G --max-metis-edges %s: edge cut %" PRId64
                  " (ratio %.3f)\n", limit, cut, (double)cut / (double)g_one_cut);
    if ((double)cut > 1.3 * (double)g_one_cut)
        fail_msg("coarsened cut %" PRId64 " > 1.3 x %" PRId64, cut, g_one_cut);

    /* Far too little: one rank reports, nothing is written. */
    char *never = (char *)tu_path("mpi-budget-1M");
    mpi_fails(never, 1, "--mem-budget", g_sbm, "-k", "4", "-o", never, "--mem-budget", "1M",
              (char *)NULL);
    mpi_fails(never, 1, "--mem-budget", g_sbm, "-k", "4", "-o", never, "--mem-budget", "1M",
              "--max-metis-edges", "1000", (char *)NULL);
}

/* A split that names a node twice is refused before any partitioning:
 * the one error line, with no progress line before it, comes from the rank
 * that checked that split (valid: rank 1 of 2). */
static void test_duplicate_split(void **state)
{
    (void)state;
    char *dup = (char *)tu_path("mpi-dup-split.h5"), *never = (char *)tu_path("mpi-dup-out");
    assert_int_equal(tu_sh("cp '%s' '%s'", g_sbm, dup), 0);
    int64_t n;
    int64_t *valid = h5_read_i64(dup, "split/valid", &n);
    assert_true(n >= 2);
    valid[1] = valid[0];
    h5_write(dup, "split/valid", H5T_NATIVE_INT64, valid);
    char want[1024];
    snprintf(want, sizeof want, "%s: split/valid names node %" PRId64 " twice", dup, valid[0]);
    free(valid);
    mpi_fails(never, 1, want, dup, "-k", "4", "-o", never, (char *)NULL);
}

static void test_missing_graph(void **state)
{
    (void)state;
    char *never = (char *)tu_path("mpi-missing-out");
    char *missing = (char *)tu_path("no-such-graph.h5");
    char want[1024];
    snprintf(want, sizeof want, "%s: No such file or directory", missing);
    mpi_fails(never, -1, want, missing, "-k", "4", "-o", never, (char *)NULL);
    mpi_fails(never, -1, want, missing, "-k", "4", "-o", never, "--max-metis-edges", "1000",
              (char *)NULL);
}

/* Each rank checks the file system itself before the work (its own -o,
 * here an existing directory on rank 0's side only, each rank in its own
 * working directory): the ranks agree on the failure before their first
 * collective step, one line, no output on either side. */
static void test_output_on_one_side(void **state)
{
    (void)state;
    char wa[300], wb[300], in_a[320], in_b[320], part[4096];
    assert_true(strlen(tu_path("side-a")) < sizeof wa);
    snprintf(wa, sizeof wa, "%s", tu_path("side-a"));
    snprintf(wb, sizeof wb, "%s", tu_path("side-b"));
    snprintf(in_a, sizeof in_a, "%s/out", wa);
    snprintf(in_b, sizeof in_b, "%s/out", wb);
    assert_true(mkdir(wa, 0755) == 0 || errno == EEXIST);
    assert_true(mkdir(wb, 0755) == 0 || errno == EEXIST);
    assert_true(mkdir(in_a, 0755) == 0 || errno == EEXIST);
    assert_non_null(realpath(g_part, part));
    char *argv[] = {g_mpiexec, "--oversubscribe", "-np", "1", "-wdir", wa, part, g_sbm, "-k", "4",
                    "-o", "out", ":", "-np", "1", "-wdir", wb, part, g_sbm, "-k", "4", "-o",
                    "out", NULL};
    tu_run_t r = tu_run(argv);
    char *raw = strdup(r.err ? r.err : "");
    assert_non_null(raw);
    tu_strip_mpiexec_lines(r.err);
    if (r.status != 1 || tu_count_lines(r.err) != 1 ||
        strncmp(r.err, "gnn-partition: error: ", 22) != 0 ||
        !strstr(r.err, "out exists (add --force to replace it)"))
        fail_msg("status %d, stderr '%s'; expected status 1 and one line 'out exists'", r.status,
                 raw);
    print_message("-o on one rank's side only: status %d: %s", r.status, r.err);
    free(raw);
    tu_run_free(&r);
    tu_assert_no_output(in_b);
}

/* ---- Cora ------------------------------------------------------------------- */

static void test_cora(void **state)
{
    (void)state;
    const char *src = tu_shared_dataset("cora");
    char cora[640];
    snprintf(cora, sizeof cora, "%s", tu_path("cora.h5"));
    free(tu_run_ok(g_dataset, "ogb", (char *)src, "-o", cora, "--force", "-q", (char *)NULL));
    static const char *const ks[] = {"2", "4", "8"};
    int bad = 0;
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        char one[640], two[640];
        snprintf(one, sizeof one, "%s-%s", tu_path("cora-one-k"), ks[i]);
        snprintf(two, sizeof two, "%s-%s", tu_path("cora-mpi-k"), ks[i]);
        free(tu_run_ok(g_part, cora, "-k", (char *)ks[i], "-o", one, "--force", "-q", (char *)NULL));
        MPI_OK(cora, "-k", (char *)ks[i], "-o", two, "--force", "--max-metis-edges", "2000",
               "-q");
        check_ok(two);
        int64_t c1 = edge_cut(one), c2 = edge_cut(two);
        print_message("Cora, k=%s: edge cut %" PRId64 " by two ranks with --max-metis-edges "
                      "2000, %" PRId64 " by one METIS call (ratio %.3f)\n",
                      ks[i], c2, c1, (double)c2 / (double)c1);
        bad += (double)c2 > 1.3 * (double)c1;
    }
    if (bad) fail_msg("%d of the coarsened cuts above 1.3x one METIS call's", bad);
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s MPIEXEC GNN-PARTITION GNN-DATASET [cora]\n", argv[0]);
        return 2;
    }
    g_mpiexec = argv[1];
    g_part = argv[2];
    g_dataset = argv[3];
    const char *mode = argc == 5 ? argv[4] : "";
    if (!strcmp(mode, "cora")) {
        tu_shared_dataset("cora"); /* exits 77 (skipped) where it is absent */
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cora)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (mode[0]) {
        fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
        return 2;
    }

    snprintf(g_sbm, sizeof g_sbm, "%s", tu_path("sbm.h5"));
    snprintf(g_one, sizeof g_one, "%s", tu_path("one-k4"));
    char *const cmds[][16] = {
        {g_dataset, "generate", "sbm", "-n", "5000", "-f", "4", "-d", "10", "-s", "3", "-o", g_sbm,
         "-q", NULL},
        {g_part, g_sbm, "-k", "4", "-o", g_one, "-q", NULL},
        {g_part, "--info", g_one, "--json", NULL},
    };
    char *info = NULL;
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        tu_run_t r = tu_run(cmds[i]);
        if (r.status != 0) {
            fprintf(stderr, "%s %s: status %d: %s", cmds[i][0], cmds[i][1], r.status, r.err);
            return 1;
        }
        if (i == 2) {
            info = r.out;
            r.out = NULL;
        }
        tu_run_free(&r);
    }
    const char *cut = strstr(info, "\"edge_cut\":"), *edges = strstr(info, "\"num_edges\":");
    if (!cut || !edges) {
        fprintf(stderr, "--info --json without edge_cut or num_edges: %s", info);
        return 1;
    }
    g_one_cut = strtoll(cut + strlen("\"edge_cut\":"), NULL, 10);
    g_edges = strtoll(edges + strlen("\"num_edges\":"), NULL, 10);
    free(info);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_ranks_as_one_process),
        cmocka_unit_test(test_two_ranks_random),
        cmocka_unit_test(test_two_ranks_coarsened),
        cmocka_unit_test(test_mem_budget),
        cmocka_unit_test(test_duplicate_split),
        cmocka_unit_test(test_missing_graph),
        cmocka_unit_test(test_output_on_one_side),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
