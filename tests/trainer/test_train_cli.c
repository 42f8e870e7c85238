/*
 * gnn-train run as a user runs it, on graph files made by gnn-dataset.
 * argv[1..4]: the gnn-train binary, the gnn-dataset binary, lse.so,
 * gatv2.so; argv[5], the mode:
 *
 *   (none)     small SBM graphs, a few seconds each: gcn and sage learn
 *              them well above chance; every --log-json line is valid JSON
 *              with the documented keys and the summary's mean and standard
 *              deviation agree with its per-run accuracies; a run resumed
 *              after a shorter one, and one killed in its second run and
 *              resumed, end with checkpoints bitwise equal to an
 *              uninterrupted run's; resuming with other settings or on
 *              other data (nodes, training nodes, and with every count the
 *              same other edges or other training nodes), or checkpointing
 *              over an existing file, is refused, and a version 2
 *              checkpoint resumes; the lse.so
 *              plug-in trains end to end; --save-predictions writes node
 *              ids, logits, their arg-max and the last hidden layer, and
 *              the predictions score the reported test accuracy; bad input
 *              fails with one error line and leaves no output: values out
 *              of single precision, --threads beyond 4096, an unknown
 *              --device, non-finite features, empty splits, two options
 *              naming one file, an output in a missing directory (found
 *              before training); a diverging loss fails at its epoch;
 *              --epochs 0 reports null accuracies.
 *              Mini-batch mode: the same batches, losses and checkpoints
 *              for every --sampler-threads and --prefetch (0 included);
 *              the per-epoch counters of the log; on cpu-as-gpu the
 *              batch's rows gathered on the device and the blocks staged
 *              by the sampler threads, bit for bit the CPU's losses for
 *              sage, gcn and gat, and with --sampler device (batches
 *              sampled and prepared by the backend, one ahead on a thread
 *              and in the step, the features also read in place from
 *              host memory with a device cache of the rows read most:
 *              --features-on host --feature-cache) for sage, gcn and gat;
 *              learnable rows and a bad --sampler refused; evaluation independent
 *              of --eval-batch-size; resume with other fanouts refused;
 *              bad mini-batch options rejected.
 *              Learnable input rows (--embed-dim) on a featureless SBM
 *              graph: gcn and sage (mini-batches) learn it from the rows
 *              alone with Adam and Adagrad, and do not with frozen rows;
 *              so does link prediction; cpu-as-gpu trains what cpu
 *              trains bit for bit; --embed all beside features widens the
 *              input; every refusal (a featureless graph without
 *              --embed-dim, --embed-dim on features without --embed all,
 *              the options without --embed-dim, a table larger than
 *              memory, ...) is one line; 3 epochs resumed to 6 end as 6
 *              do (table and optimiser state included); --save-embeddings
 *              writes the rows, initially within +-1/sqrt(D).
 *              R-GCN on a typed graph (hsbm, 6000 nodes): at least 25
 *              points above gcn, which cannot read the labels without the
 *              relations, with a weight per relation, 2 bases and
 *              mini-batches; cpu-as-gpu trains it bit for bit as cpu does
 *              (whole graph and mini-batches); --model rgcn on an untyped
 *              graph and bad --num-bases are refused with one line.
 *   cora       the shared Cora dataset (skipped where absent) with the GCN
 *              paper's settings, 2 runs: mean test accuracy >= 79.5 %; and
 *              GraphSAGE mini-batches with fanouts 10,10 and batches of 64,
 *              5 runs: mean test accuracy >= 78 %, and with lse.so's
 *              aggregator within 2 points of that; GAT with the GAT paper's
 *              settings (8 heads of 8, dropout 0.6 and 0.6, lr 0.005,
 *              300 epochs), 2 runs: >= 81 %, and the same with the
 *              attention of the GATv2 example plug-in (gatv2.so): >= 81 %
 *              (the sanitizer build: one short run each, checked to end).
 *              Link prediction with the graph auto-encoder's settings,
 *              seeds 0 and 1 of split and model: mean test AUC and AP
 *              >= 89 %. Featureless Cora (ogb --no-features) with
 *              --embed-dim 64: GCN over 10 runs >= 64.48 % (the PyTorch
 *              reference minus 1 point); link prediction, seeds 0 and 1:
 *              mean test AUC >= 80 %.
 *   cora-slow  the full-graph settings with 10 runs: gcn >= 80.5 %,
 *              sage >= 79 %, gat >= 82 %; link prediction over seeds 0-9:
 *              mean test AUC >= 90 %, AP >= 91 %; on featureless Cora
 *              with --embed-dim 64, mean test AUC >= 83 %.
 *
 * Every training uses --threads 2 and fixed seeds, so results do not
 * change between runs of the test on one machine.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/graph_file.h"
#include "tests/common/cmdtest.h"
#include "tests/common/h5test.h"
#include "tests/common/jsontest.h"
#include "tests/common/testutil.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <string.h>
#include <time.h>

static char *g_train, *g_dataset, *g_lse, *g_gatv2;

/* The typed graph and the settings R-GCN and gcn are compared with
 * (test_rgcn_beats_gcn); the sanitizer build trains a few epochs only. */
#define HSBM_NODES "6000"
#define HSBM_LR "0.05"
#define HSBM_HIDDEN "32"
#ifdef GNN_TEST_SANITIZED
#define HSBM_EPOCHS "3"
#define SANITIZED 1
#else
#define HSBM_EPOCHS "100"
#define SANITIZED 0
#endif
/* Epochs of the mini-batch runs compared with each other: the sanitizer
 * build runs the code paths, in fewer of them. */
#define CMP_EPOCHS (SANITIZED ? 2 : 4)
#define CMP_EPOCHS_S (SANITIZED ? "2" : "4")

/* Graph files made once by main (default mode). */
static const char *g_sbm;      /* 3000 nodes, 10 classes, 32 features */
static const char *g_sbm16;    /* the same with 16 features */
static const char *g_sbm_easy; /* 4 classes, 8 features, homophily 0.9 (for lse) */
static const char *g_orig;     /* g_sbm with original ids 7 + 3 v */
static const char *g_sbm2k;    /* 2000 nodes, otherwise as g_sbm */
static const char *g_nofeat;   /* 2000 nodes, 4 classes, no features, homophily 0.9 */
static const char *g_hsbm;     /* typed (hsbm): HSBM_NODES nodes, 3 types, 8 classes, seed 1 */
static const char *g_nan, *g_novalid, *g_notest, *g_halftrain; /* write_flawed_graphs */
static const char *g_swapped, *g_othertrain; /* write_other_graphs */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- Running the commands ------------------------------------------------ */

/* Run bin with the arguments that follow (NULL-terminated); fail the test
 * unless it exits 0. Returns the seconds it took. */
static double run_ok(char *bin, ...)
{
    char *argv[TU_MAX_ARGS];
    va_list ap;
    va_start(ap, bin);
    tu_build_argv(argv, bin, ap);
    va_end(ap);
    double t0 = now_s();
    tu_run_t r = tu_run(argv);
    double s = now_s() - t0;
    if (r.status != 0) {
        char cmd[2048] = "";
        for (int i = 0; argv[i]; i++)
            snprintf(cmd + strlen(cmd), sizeof cmd - strlen(cmd), "%s ", argv[i]);
        fail_msg("%s: status %d, stderr:\n%s", cmd, r.status, r.err ? r.err : "");
    }
    tu_run_free(&r);
    return s;
}

#define TRAIN_OK(...) run_ok(g_train, __VA_ARGS__, (char *)NULL)
#define DATASET_OK(...) run_ok(g_dataset, __VA_ARGS__, (char *)NULL)

/* tu_expect_failure for gnn-train with the arguments that follow. */
#define train_fails(out, status, ...) tu_expect_failure_of(g_train, (out), (status), __VA_ARGS__)

/* ---- A small JSON reader for the --log-json lines ------------------------- */

/* The line is exactly one JSON object. */
static int json_line_ok(const char *line)
{
    if (*tu_json_ws(line) != '{') return 0;
    const char *end = tu_json_skip(line);
    return end && *tu_json_ws(end) == '\0';
}

static int json_true(const char *line, const char *key)
{
    const char *v = tu_json_get(line, key);
    return v && !strncmp(v, "true", 4);
}

/* The numbers of array member key (at most max); returns the count. */
static int json_array(const char *line, const char *key, double *out, int max)
{
    const char *v = tu_json_get(line, key);
    if (!v || *v != '[') fail_msg("no array \"%s\" in %s", key, line);
    int n = 0;
    for (v = tu_json_ws(v + 1); *v != ']'; v = tu_json_ws(v)) {
        char *end;
        double d = strtod(v, &end);
        if (end == v || n >= max) fail_msg("bad array \"%s\" in %s", key, line);
        out[n++] = d;
        v = tu_json_ws(end);
        if (*v == ',') v++;
    }
    return n;
}

/* ---- The --log-json file -------------------------------------------------- */

typedef struct {
    double test_acc;      /* the final line's (last run's) */
    double test_acc_mean; /* over the runs; test_acc for one run */
    double epoch_s_mean;
} log_summary_t;

/*
 * Check a --log-json file of runs x epochs (no early stop, no resume): one
 * line per epoch in order, each with the documented keys and values in
 * range, then the final line; with several runs its mean and population
 * standard deviation equal those of run_test_acc, whose last entry is the
 * final test_acc.
 */
static log_summary_t check_log(const char *path, int runs, int epochs)
{
    char *text = tu_read_file(path);
    assert_non_null(text);
    int lines = 0;
    char *last = NULL;
    double now = (double)time(NULL), prev_end = 0.0;
    for (char *line = text, *nl; *line; line = nl + 1) {
        nl = strchr(line, '\n');
        if (!nl) fail_msg("%s: the last line is not terminated", path);
        *nl = '\0';
        if (!json_line_ok(line)) fail_msg("%s: line %d is not one JSON object: %s", path,
                                          lines + 1, line);
        if (lines < runs * epochs) {
            int run = lines / epochs, epoch = lines % epochs + 1;
            if (tu_json_num(line, "run") != run || tu_json_num(line, "epoch") != epoch)
                fail_msg("%s: line %d is not run %d epoch %d: %s", path, lines + 1, run, epoch,
                         line);
            double loss = tu_json_num(line, "loss");
            assert_true(isfinite(loss) && loss > 0.0);
            static const char *const accs[] = {"train_acc", "valid_acc", "test_acc"};
            for (int k = 0; k < 3; k++) {
                double a = tu_json_num(line, accs[k]);
                assert_true(a >= 0.0 && a <= 1.0);
            }
            assert_true(tu_json_num(line, "epoch_s") >= 0.0);
            /* The wall clock at the epoch's end: this run's, in order. */
            double end = tu_json_num(line, "epoch_end_unix");
            if (!(end >= prev_end && end <= now + 1.0 && end > now - 3600.0))
                fail_msg("%s: line %d: epoch_end_unix %.3f is not in order before now (%.0f)",
                         path, lines + 1, end, now);
            prev_end = end;
            assert_true(json_true(line, "evaluated")); /* --eval-every 1 */
            assert_null(tu_json_get(line, "final"));
        }
        last = line;
        lines++;
    }
    if (lines != runs * epochs + 1)
        fail_msg("%s: %d lines, expected %d epochs x %d runs + 1", path, lines, epochs, runs);
    if (!json_true(last, "final")) fail_msg("%s: the last line is not the final one: %s", path,
                                            last);
    log_summary_t s;
    s.test_acc = tu_json_num(last, "test_acc");
    s.epoch_s_mean = tu_json_num(last, "epoch_s_mean");
    double valid = tu_json_num(last, "valid_acc");
    assert_true(s.test_acc >= 0.0 && s.test_acc <= 1.0 && valid >= 0.0 && valid <= 1.0);
    assert_true(tu_json_num(last, "runs") == runs);
    if (runs == 1) {
        assert_null(tu_json_get(last, "test_acc_mean"));
        s.test_acc_mean = s.test_acc;
    } else {
        double acc[64], sum = 0.0, ss = 0.0;
        int n = json_array(last, "run_test_acc", acc, 64);
        assert_int_equal(n, runs);
        for (int i = 0; i < n; i++) sum += acc[i];
        double mean = sum / n;
        for (int i = 0; i < n; i++) ss += (acc[i] - mean) * (acc[i] - mean);
        s.test_acc_mean = tu_json_num(last, "test_acc_mean");
        double sd = tu_json_num(last, "test_acc_std");
        if (fabs(s.test_acc_mean - mean) > 1e-6 || fabs(sd - sqrt(ss / n)) > 1e-6)
            fail_msg("%s: test_acc_mean %g, test_acc_std %g; the runs give %g and %g", path,
                     s.test_acc_mean, sd, mean, sqrt(ss / n));
        assert_true(fabs(s.test_acc - acc[n - 1]) < 1e-9);
        assert_true(tu_json_get(last, "valid_acc_mean") != NULL);
    }
    free(text);
    return s;
}

/* The datasets and position of two checkpoints are bitwise equal. */
static void assert_checkpoints_equal(const char *a, const char *b)
{
    static const char *const sets[] = {"params", "adam_m", "adam_v", "best_params",
                                       "run_test_acc", "run_valid_acc"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        int is_f64 = !strncmp(sets[i], "run_", 4);
        hid_t type = is_f64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT;
        void *va, *vb;
        hsize_t da[2], db[2];
        h5_read(a, sets[i], type, &va, da);
        h5_read(b, sets[i], type, &vb, db);
        if (da[0] != db[0]) fail_msg("%s: %llu entries in %s, %llu in %s", sets[i],
                                     (unsigned long long)da[0], a, (unsigned long long)db[0], b);
        assert_true(da[0] > 0);
        if (memcmp(va, vb, (size_t)da[0] * (is_f64 ? 8 : 4)) != 0)
            fail_msg("dataset %s differs between %s and %s", sets[i], a, b);
        free(va);
        free(vb);
    }
    static const char *const attrs[] = {"run", "epoch", "step", "runs_done", "best_epoch",
                                        "bad_evals"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (h5_attr_i64(a, attrs[i]) != h5_attr_i64(b, attrs[i]))
            fail_msg("attribute %s: %lld in %s, %lld in %s", attrs[i],
                     (long long)h5_attr_i64(a, attrs[i]), a, (long long)h5_attr_i64(b, attrs[i]),
                     b);
}

/* ---- Graph files ---------------------------------------------------------- */

/* g_sbm rewritten with original ids 7 + 3 v, and g_sbm without splits;
 * 0 or -1 (with a message). */
static int write_derived_graphs(const char *orig, const char *nosplit)
{
    gnn_graph_t g;
    if (gnn_graph_load(g_sbm, &g) < 0) return -1;
    int rc = -1;
    g.orig_id = gnn_malloc_array((size_t)g.csr.n_rows, sizeof *g.orig_id);
    if (!g.orig_id) goto done;
    for (gnn_vid_t v = 0; v < g.csr.n_rows; v++) g.orig_id[v] = 7 + 3 * v;
    if (gnn_graph_write(orig, &g, 1) < 0) goto done;
    gnn_free(g.orig_id);
    g.orig_id = NULL;
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        gnn_free(g.split[s]);
        g.split[s] = NULL;
        g.split_size[s] = -1;
    }
    if (gnn_graph_write(nosplit, &g, 1) < 0) goto done;
    rc = 0;
done:
    if (rc < 0) fprintf(stderr, "cannot write the derived graph files\n");
    gnn_graph_free(&g);
    return rc;
}

/*
 * g_sbm rewritten four ways: feature 5 of node 17 NaN (nan), an empty valid
 * split (novalid), an empty test split (notest), and half its training
 * nodes (halftrain); 0 or -1 (with a message).
 */
static int write_flawed_graphs(const char *nan, const char *novalid, const char *notest,
                               const char *halftrain)
{
    gnn_graph_t g;
    if (gnn_graph_load(g_sbm, &g) < 0) return -1;
    int rc = -1;
    float keep = g.feat[17 * g.feat_dim + 5];
    g.feat[17 * g.feat_dim + 5] = NAN;
    if (gnn_graph_write(nan, &g, 1) < 0) goto done;
    g.feat[17 * g.feat_dim + 5] = keep;
    const char *empty[2] = {novalid, notest};
    gnn_split_t which[2] = {GNN_SPLIT_VALID, GNN_SPLIT_TEST};
    for (int k = 0; k < 2; k++) {
        int64_t *idx = g.split[which[k]], n = g.split_size[which[k]];
        g.split[which[k]] = NULL;
        g.split_size[which[k]] = 0;
        int w = gnn_graph_write(empty[k], &g, 1);
        g.split[which[k]] = idx;
        g.split_size[which[k]] = n;
        if (w < 0) goto done;
    }
    g.split_size[GNN_SPLIT_TRAIN] /= 2;
    if (gnn_graph_write(halftrain, &g, 1) < 0) goto done;
    rc = 0;
done:
    if (rc < 0) fprintf(stderr, "cannot write the flawed graph files\n");
    gnn_graph_free(&g);
    return rc;
}

/*
 * g_sbm rewritten two ways that keep every count: nodes 0 and 1 swapped in
 * the edges only (swapped: the same numbers of nodes and edges, other
 * edges), and the first training node swapped with the first validation
 * node (othertrain: as many training nodes, other ones); 0 or -1 (with a
 * message).
 */
static int write_other_graphs(const char *swapped, const char *othertrain)
{
    gnn_graph_t g;
    if (gnn_graph_load(g_sbm, &g) < 0) return -1;
    int rc = -1;
    gnn_csr_t a = {0};
    gnn_eid_t m = g.csr.nnz;
    gnn_vid_t *src = gnn_malloc_array((size_t)m + 1, sizeof *src);
    gnn_vid_t *dst = gnn_malloc_array((size_t)m + 1, sizeof *dst);
    if (!src || !dst) goto done;
    for (gnn_vid_t v = 0; v < g.csr.n_rows; v++)
        for (gnn_eid_t e = g.csr.indptr[v]; e < g.csr.indptr[v + 1]; e++) {
            gnn_vid_t u = g.csr.indices[e];
            src[e] = u < 2 ? 1 - u : u;
            dst[e] = v < 2 ? 1 - v : v;
        }
    if (gnn_csr_from_edges(g.csr.n_rows, m, src, dst, NULL, GNN_BUILD_SORT, &a) < 0) goto done;
    a.flags = g.csr.flags; /* a relabelling keeps every property */
    gnn_csr_t keep = g.csr;
    g.csr = a;
    int w = gnn_graph_write(swapped, &g, 1);
    g.csr = keep;
    if (w < 0) goto done;
    int64_t t = g.split[GNN_SPLIT_TRAIN][0];
    g.split[GNN_SPLIT_TRAIN][0] = g.split[GNN_SPLIT_VALID][0];
    g.split[GNN_SPLIT_VALID][0] = t;
    if (gnn_graph_write(othertrain, &g, 1) < 0) goto done;
    rc = 0;
done:
    if (rc < 0) fprintf(stderr, "cannot write the other graph files\n");
    gnn_free(src);
    gnn_free(dst);
    gnn_csr_free(&a);
    gnn_graph_free(&g);
    return rc;
}

/* ---- Learning ------------------------------------------------------------- */

/* gcn over 3 runs and sage over 1 learn the 10-class SBM graph (chance:
 * 10 %; measured 79.7 % and 78.3 %). */
static void test_gcn_and_sage_learn(void **state)
{
    (void)state;
    const char *log = tu_path("learn.json");
    double s = TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--epochs", "60", "--runs", "3",
                        "--threads", "2", "--log-json", (char *)log, "-q");
    log_summary_t r = check_log(log, 3, 60);
    print_message("gcn on the SBM graph: test accuracy %.4f over 3 runs (%.2f s, %.2f ms per "
                  "epoch)\n", r.test_acc_mean, s, 1e3 * r.epoch_s_mean);
    assert_true(r.test_acc_mean > 0.6);

    s = TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--epochs", "80", "--threads", "2",
                 "--log-json", (char *)log, "-q");
    r = check_log(log, 1, 80);
    print_message("sage on the SBM graph: test accuracy %.4f (%.2f s)\n", r.test_acc, s);
    assert_true(r.test_acc > 0.6);
}

/* ---- Checkpoints ---------------------------------------------------------- */

/* 12 epochs in one go, or 7 and then 5 more with --resume, end with the
 * same checkpoint, dropout on, for gcn and for sage. */
static void test_resume_after_shorter_run(void **state)
{
    (void)state;
    const char *models[] = {"gcn", "sage"};
    for (int m = 0; m < 2; m++) {
        char *model = (char *)models[m];
        char *a = (char *)tu_path("whole.h5"), *b = (char *)tu_path("parts.h5");
        unlink(a);
        unlink(b);
        TRAIN_OK("--data", (char *)g_sbm, "--model", model, "--dropout", "0.5", "--threads", "2",
                 "--epochs", "12", "--checkpoint", a, "--checkpoint-every", "4", "-q");
        TRAIN_OK("--data", (char *)g_sbm, "--model", model, "--dropout", "0.5", "--threads", "2",
                 "--epochs", "7", "--checkpoint", b, "--checkpoint-every", "3", "-q");
        assert_int_equal(h5_attr_i64(b, "epoch"), 7);
        TRAIN_OK("--data", (char *)g_sbm, "--model", model, "--dropout", "0.5", "--threads", "2",
                 "--epochs", "12", "--checkpoint", b, "--checkpoint-every", "4", "--resume", "-q");
        assert_int_equal(h5_attr_i64(b, "epoch"), 12);
        assert_checkpoints_equal(a, b);
    }
    /* GAT with the plug-in's attention: its parameter a is checkpointed. */
    char *a = (char *)tu_path("whole-gatv2.h5"), *b = (char *)tu_path("parts-gatv2.h5");
    unlink(a);
    unlink(b);
#define GATV2_ARGS                                                                              \
    "--data", (char *)g_sbm, "--model", "gat", "--heads", "2", "--hidden", "4", "--aggr-plugin", \
        g_gatv2, "--attention", "gatv2", "--dropout", "0.5", "--attn-dropout", "0.3",           \
        "--threads", "2"
    TRAIN_OK(GATV2_ARGS, "--epochs", "12", "--checkpoint", a, "--checkpoint-every", "4", "-q");
    TRAIN_OK(GATV2_ARGS, "--epochs", "7", "--checkpoint", b, "--checkpoint-every", "3", "-q");
    TRAIN_OK(GATV2_ARGS, "--epochs", "12", "--checkpoint", b, "--checkpoint-every", "4",
             "--resume", "-q");
    assert_checkpoints_equal(a, b);
    char aggr[64] = "";
    h5_attr_str(b, "aggr", aggr, sizeof aggr);
    assert_string_equal(aggr, "gatv2");
    /* The same job with the built-in attention is another job. */
    train_fails(NULL, 1, "the attention function is gatv2 in the checkpoint but gat now",
                "--data", (char *)g_sbm, "--model", "gat", "--heads", "2", "--hidden", "4",
                "--dropout", "0.5", "--attn-dropout", "0.3", "--threads", "2", "--epochs", "14",
                "--checkpoint", b, "--resume", "-q", (char *)NULL);
#undef GATV2_ARGS
}

/* Does text hold a log line of run 1 at epoch >= 6? */
static int second_run_under_way(const char *text)
{
    for (const char *p = text; (p = strstr(p, "{\"run\": 1, \"epoch\": ")); p++)
        if (atoi(p + 20) >= 6) return 1;
    return 0;
}

/*
 * Two runs of 40 epochs in one go, or killed during the second run and
 * resumed, end with the same checkpoint and summary. The killed process
 * logs to a FIFO with a one-page buffer that the test reads, so it can run
 * at most a page of lines ahead of the test: the kill lands in run 2 after
 * its epoch-4 checkpoint, whatever the machine's speed.
 */
static void test_resume_after_kill_in_second_run(void **state)
{
    (void)state;
    char *a = (char *)tu_path("two.h5"), *b = (char *)tu_path("two-killed.h5");
    char *log_a = (char *)tu_path("two.json"), *log_b = (char *)tu_path("two-resumed.json");
    char *fifo = (char *)tu_path("two.fifo");
    unlink(a);
    unlink(b);
    unlink(fifo);
    TRAIN_OK("--data", (char *)g_sbm, "--runs", "2", "--epochs", "40", "--threads", "2",
             "--checkpoint", a, "--checkpoint-every", "4", "--log-json", log_a, "-q");
    log_summary_t ra = check_log(log_a, 2, 40);

    assert_int_equal(mkfifo(fifo, 0600), 0);
    char *argv[] = {g_train, "--data", (char *)g_sbm, "--runs", "2", "--epochs", "40",
                    "--threads", "2", "--checkpoint", b, "--checkpoint-every", "4",
                    "--log-json", fifo, "-q", NULL};
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fi = open("/dev/null", O_RDWR);
        if (fi < 0) _exit(126);
        dup2(fi, 0);
        dup2(fi, 1);
        execv(argv[0], argv);
        _exit(127);
    }
    /* Non-blocking, so a trainer that fails before opening its log is
     * noticed instead of waited for. */
    int fd = open(fifo, O_RDONLY | O_NONBLOCK);
    assert_true(fd >= 0);
    if (fcntl(fd, F_SETPIPE_SZ, 4096) < 0) fail_msg("F_SETPIPE_SZ: %s", strerror(errno));
    size_t cap = 1 << 20, len = 0;
    char *text = calloc(cap, 1);
    assert_non_null(text);
    while (!second_run_under_way(text)) {
        ssize_t k = read(fd, text + len, cap - 1 - len);
        if (k > 0) {
            len += (size_t)k;
            text[len] = '\0';
            continue;
        }
        if (k < 0 && errno != EAGAIN) fail_msg("reading %s: %s", fifo, strerror(errno));
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            fail_msg("the trainer ended (status %#x) before its second run got under way", st);
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    assert_int_equal(kill(pid, SIGKILL), 0);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    close(fd);
    free(text);
    unlink(fifo);
    /* Interrupted within run 2, after at least one checkpoint in it. */
    assert_int_equal(h5_attr_i64(b, "run"), 1);
    assert_int_equal(h5_attr_i64(b, "runs_done"), 1);
    int64_t at = h5_attr_i64(b, "epoch");
    print_message("killed in run 2; its last checkpoint was at epoch %lld\n", (long long)at);
    assert_true(at >= 4 && at < 40);

    TRAIN_OK("--data", (char *)g_sbm, "--runs", "2", "--epochs", "40", "--threads", "2",
             "--checkpoint", b, "--checkpoint-every", "4", "--log-json", log_b, "--resume", "-q");
    assert_checkpoints_equal(a, b);
    /* The resumed log: run 2's remaining epochs, then the same summary. */
    char *t = tu_read_file(log_b);
    assert_non_null(t);
    int n = tu_count_lines(t);
    assert_int_equal(n, 40 - (int)at + 1);
    char *last = t + strlen(t) - 1;
    *last = '\0';
    last = strrchr(t, '\n') + 1;
    assert_true(json_true(last, "final"));
    double acc_a[2], acc_b[2];
    char *ta = tu_read_file(log_a);
    assert_int_equal(json_array(strrchr(ta, '{'), "run_test_acc", acc_a, 2), 2);
    assert_int_equal(json_array(last, "run_test_acc", acc_b, 2), 2);
    assert_memory_equal(acc_a, acc_b, sizeof acc_a);
    assert_true(tu_json_num(last, "test_acc_mean") == ra.test_acc_mean);
    free(t);
    free(ta);
}

/* Checkpointing over an existing file without --resume, and resuming with
 * another --hidden or on a graph of another feature width, fail with one
 * line and leave the checkpoint as it was. */
static void test_checkpoint_refusals(void **state)
{
    (void)state;
    char *ck = (char *)tu_path("refuse.h5");
    unlink(ck);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "3", "--threads", "2", "--checkpoint", ck, "-q");
    char *before = tu_read_file(ck);
    assert_non_null(before);
    struct stat st0;
    assert_int_equal(stat(ck, &st0), 0);

    train_fails(NULL, 1, "exists (add --resume to continue it, or remove it)", "--data",
                (char *)g_sbm, "--epochs", "3", "--checkpoint", ck, "-q", (char *)NULL);
    train_fails(NULL, 1, "--hidden is 16 in the checkpoint but 8 now", "--data", (char *)g_sbm,
                "--epochs", "6", "--hidden", "8", "--checkpoint", ck, "--resume", "-q",
                (char *)NULL);
    /* gcn's weights are Glorot unless told otherwise; a later run of the
     * checkpoint would draw them otherwise. */
    train_fails(NULL, 1, "--init is glorot in the checkpoint but fan-in now", "--data",
                (char *)g_sbm, "--epochs", "6", "--init", "fan-in", "--checkpoint", ck,
                "--resume", "-q", (char *)NULL);
    char init[16];
    h5_attr_str(ck, "init", init, sizeof init);
    assert_string_equal(init, "glorot");
    /* sage's are fan-in (as PyG's SAGEConv), and --init says otherwise. */
    char *ck_sage = (char *)tu_path("refuse-sage.h5");
    unlink(ck_sage);
    TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--epochs", "1", "--threads", "2",
             "--checkpoint", ck_sage, "-q");
    h5_attr_str(ck_sage, "init", init, sizeof init);
    assert_string_equal(init, "fan-in");
    unlink(ck_sage);
    TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--init", "glorot", "--epochs", "1",
             "--threads", "2", "--checkpoint", ck_sage, "-q");
    h5_attr_str(ck_sage, "init", init, sizeof init);
    assert_string_equal(init, "glorot");
    /* Resumed without --init, it keeps drawing as its checkpoint says. */
    TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--epochs", "2", "--threads", "2",
             "--checkpoint", ck_sage, "--resume", "-q");
    assert_int_equal(h5_attr_i64(ck_sage, "epoch"), 2);
    h5_attr_str(ck_sage, "init", init, sizeof init);
    assert_string_equal(init, "glorot");
    train_fails(NULL, 1, "the feature width is 32 in the checkpoint but 16 now", "--data",
                (char *)g_sbm16, "--epochs", "6", "--checkpoint", ck, "--resume", "-q",
                (char *)NULL);
    /* Another graph of the same widths: other nodes, or other training nodes. */
    train_fails(NULL, 1, "the number of nodes is 3000 in the checkpoint but 2000 now", "--data",
                (char *)g_sbm2k, "--epochs", "6", "--checkpoint", ck, "--resume", "-q",
                (char *)NULL);
    train_fails(NULL, 1, "the number of training nodes is 300 in the checkpoint but 150 now",
                "--data", (char *)g_halftrain, "--epochs", "6", "--checkpoint", ck, "--resume",
                "-q", (char *)NULL);
    /* ... or every count the same but other edges, or other training nodes
     * (the graph's fingerprint: a hash of its edges and of its training
     * nodes by graph-file id). */
    train_fails(NULL, 1, "the checkpoint was trained on another graph (the same numbers of "
                "nodes and edges, other edges)", "--data", (char *)g_swapped, "--epochs", "6",
                "--checkpoint", ck, "--resume", "-q", (char *)NULL);
    train_fails(NULL, 1, "the checkpoint was trained on other training nodes (as many, other "
                "ones)", "--data", (char *)g_othertrain, "--epochs", "6", "--checkpoint", ck,
                "--resume", "-q", (char *)NULL);

    /* More epochs continue a finished run only when it is the only one. */
    char *ck2 = (char *)tu_path("refuse-2.h5");
    unlink(ck2);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "3", "--runs", "2", "--threads", "2",
             "--checkpoint", ck2, "-q");
    train_fails(NULL, 1, "its 2 finished runs ended at epoch 3, --epochs 6 would continue only "
                "the last one", "--data", (char *)g_sbm, "--epochs", "6", "--runs", "2",
                "--checkpoint", ck2, "--resume", "-q", (char *)NULL);

    char *after = tu_read_file(ck);
    struct stat st1;
    assert_int_equal(stat(ck, &st1), 0);
    assert_int_equal(st0.st_size, st1.st_size);
    assert_memory_equal(before, after, (size_t)st0.st_size);
    free(before);
    free(after);

    /* A version 2 checkpoint (no record of the data) still resumes. */
    char *v2 = (char *)tu_path("refuse-v2.h5");
    unlink(v2);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "3", "--threads", "2", "--checkpoint", v2, "-q");
    hid_t f = H5Fopen(v2, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    static const char *const added[] = {"num_nodes", "parts", "train_nodes"};
    for (int i = 0; i < 3; i++) assert_true(H5Adelete(f, added[i]) >= 0);
    hid_t a = H5Aopen(f, "version", H5P_DEFAULT);
    int64_t two = 2;
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &two) >= 0);
    H5Aclose(a);
    H5Fclose(f);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "5", "--threads", "2", "--checkpoint", v2,
             "--resume", "-q");
    assert_int_equal(h5_attr_i64(v2, "version"), 8);
    assert_int_equal(h5_attr_i64(v2, "heads"), 0); /* gcn: no attention settings */
    assert_int_equal(h5_attr_i64(v2, "epoch"), 5);
    assert_int_equal(h5_attr_i64(v2, "num_nodes"), 3000);
    assert_int_equal(h5_attr_i64(v2, "parts"), 0);
    assert_int_equal(h5_attr_i64(v2, "train_nodes"), 300);
    assert_int_equal(h5_attr_i64(v2, "num_edges"), h5_attr_i64(g_sbm, "num_edges"));
}

/* ---- Mini-batches ---------------------------------------------------------- */

/* The per-epoch "loss" values of a log, in order (at most max). */
static int log_losses(const char *path, double *out, int max)
{
    char *text = tu_read_file(path);
    assert_non_null(text);
    int n = 0;
    for (char *line = text, *nl; *line && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        if (tu_json_get(line, "loss") && n < max) out[n++] = tu_json_num(line, "loss");
    }
    free(text);
    return n;
}

/*
 * Mini-batches on sparse input (--sparse-features on: layer 0 takes each
 * batch's rows of the sparse feature table, dropout 0.5 by node id) give
 * the per-epoch losses of the dense rows (off), to rounding, for sage, gcn
 * and gat (2 heads; 4 epochs, 2 under the sanitizers).
 */
static void test_minibatch_sparse_features(void **state)
{
    (void)state;
    const char *models[] = {"sage", "gcn", "gat"};
    const int epochs = CMP_EPOCHS;
    char *ep = (char *)CMP_EPOCHS_S;
    for (int k = 0; k < 3; k++) {
        double loss[2][8];
        for (int sp = 0; sp < 2; sp++) {
            const char *log = tu_path("mb-sparse.json");
            TRAIN_OK("--data", (char *)g_sbm, "--model", (char *)models[k], "--mode", "minibatch",
                     "--epochs", ep, "--batch-size", "64", "--fanouts", "6,4", "--dropout", "0.5",
                     "--heads", "2", "--sparse-features", sp ? "on" : "off", "--threads", "2",
                     "--log-json", (char *)log, "-q");
            assert_int_equal(log_losses(log, loss[sp], 8), epochs);
        }
        for (int e = 0; e < epochs; e++) {
            print_message("%s, epoch %d: loss %.9f dense, %.9f sparse\n", models[k], e + 1,
                          loss[0][e], loss[1][e]);
            assert_true(fabs(loss[1][e] - loss[0][e]) <= 1e-5 * fabs(loss[0][e]));
        }
    }
}

/*
 * sage in mini-batch mode (its default) on the SBM graph: the batches do not
 * depend on how they are made, so one sampler thread, two with a deeper
 * queue, and no prefetch at all give the same per-epoch losses and the same
 * final checkpoint, bit for bit. Every epoch line carries the loader's
 * counters: the 300 training nodes in batches of 64 make 5 batches, whose
 * input rows are at least the seeds and whose sampled edges stay within
 * the fanouts' bound (300 x 6 + 300 x 7 x 4).
 */
static void test_minibatch_same_for_any_loader(void **state)
{
    (void)state;
    const char *cfg[][4] = {{"1", "2"}, {"2", "4"}, {"1", "0"}};
    double loss[3][8];
    char *ck[3];
    for (int c = 0; c < 3; c++) {
        char name[32], lname[32];
        snprintf(name, sizeof name, "mb-%d.h5", c);
        snprintf(lname, sizeof lname, "mb-%d.json", c);
        ck[c] = strdup(tu_path(name));
        const char *log = tu_path(lname);
        unlink(ck[c]);
        TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--epochs", "6", "--batch-size",
                 "64", "--fanouts", "6,4", "--sampler-threads", (char *)cfg[c][0], "--prefetch",
                 (char *)cfg[c][1], "--threads", "2", "--checkpoint", ck[c], "--log-json",
                 (char *)log, "-q");
        check_log(log, 1, 6);
        assert_int_equal(log_losses(log, loss[c], 8), 6);
        if (c > 0) {
            assert_memory_equal(loss[0], loss[c], 6 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[c]);
        }
        char *text = tu_read_file(log);
        char *line = text, *nl = strchr(line, '\n');
        *nl = '\0';
        assert_int_equal((int64_t)tu_json_num(line, "batches"), 5);
        double edges = tu_json_num(line, "sampled_edges");
        double inputs = tu_json_num(line, "input_nodes_mean");
        print_message("sampler threads %s, prefetch %s: %.0f sampled edges, %.1f input nodes per "
                      "batch, sample %.4f s, compute %.4f s, stalls %.0f (%.4f s)\n",
                      cfg[c][0], cfg[c][1], edges, inputs, tu_json_num(line, "sample_s"),
                      tu_json_num(line, "compute_s"), tu_json_num(line, "prefetch_stalls"),
                      tu_json_num(line, "stall_s"));
        assert_true(edges >= 300.0 && edges <= 300.0 * 6 + 300.0 * 7 * 4);
        assert_true(inputs >= 60.0 && inputs <= 3000.0);
        static const char *const times[] = {"sample_s", "gather_s", "prepare_s", "compute_s",
                                            "stall_s"};
        for (int k = 0; k < 5; k++) assert_true(tu_json_num(line, times[k]) >= 0.0);
        assert_true(tu_json_num(line, "compute_s") > 0.0);
        assert_true(tu_json_num(line, "prefetch_stalls") >= 0.0);
        free(text);
    }
    for (int c = 0; c < 3; c++) free(ck[c]);
}

/* The "step" of each epoch line of a log into steps[] (at most max). */
static int log_steps(const char *path, char steps[][16], int max)
{
    char *text = tu_read_file(path);
    assert_non_null(text);
    int n = 0;
    for (char *line = text, *nl; *line && (nl = strchr(line, '\n')); line = nl + 1) {
        *nl = '\0';
        const char *v = tu_json_get(line, "step");
        if (!v || n >= max) continue;
        const char *q = strchr(v + 1, '"');
        assert_true(*v == '"' && q && q - v - 1 < 16);
        snprintf(steps[n], 16, "%.*s", (int)(q - v - 1), v + 1);
        n++;
    }
    free(text);
    return n;
}

/* The last line of a log (a copy; the caller frees). */
static char *last_line(const char *path)
{
    char *text = tu_read_file(path);
    assert_non_null(text);
    size_t n = strlen(text);
    assert_true(n > 0 && text[n - 1] == '\n');
    text[n - 1] = '\0';
    char *nl = strrchr(text, '\n');
    char *line = strdup(nl ? nl + 1 : text);
    free(text);
    assert_non_null(line);
    return line;
}

/* The log's final line names the device memory held at the most
 * (device_peak_mb) on a device, and only there: at least g_sbm's features
 * (3000 x 32 floats, uploaded whole for the full graph), and not more than
 * a few times what the run holds. */
static void expect_device_peak(const char *log, int device)
{
    char *fin = last_line(log);
    assert_non_null(strstr(fin, "{\"final\": true"));
    if (!device) {
        if (tu_json_get(fin, "device_peak_mb")) fail_msg("device_peak_mb on the CPU: %s", fin);
    } else {
        double mb = tu_json_num(fin, "device_peak_mb");
        if (!(mb >= 3000.0 * 32 * 4 / 1048576 && mb < 16.0))
            fail_msg("device_peak_mb %g outside [0.37, 16) MB: %s", mb, fin);
    }
    free(fin);
}

/*
 * The full-graph step captured once and replayed (--cuda-graphs, on by
 * default), emulated on cpu-as-gpu: the step to capture runs under a GPU
 * capture's rules (no wait, allocation or host copy in it, else the log
 * would say queued), each replay queues the step again
 * with the captured step's dropout counters and Adam step, corrected by
 * the epoch's step scalars read from the device. Over 2 runs of 5 epochs
 * (the first step queued and checked, the second captured, the rest
 * replayed, in each run: the log says so), the losses and the checkpoint
 * are the CPU's bit for bit, and --cuda-graphs off's: gcn (dropout 0.5,
 * weight decay on the first layer: two Adam calls a step), sage (decay on
 * all), gat (2 heads) without and with attention dropout (its key per
 * call drawn from the replayed step's stream position), gcn on sparse
 * input (its dropout over the stored entries), and a run resumed from its
 * checkpoint after 3 epochs; a bad value is refused. Under the
 * sanitizers gcn and gat with attention dropout only.
 */
static void test_full_step_replay(void **state)
{
    (void)state;
    static char *const cases[5][6] = {
        {"gcn", "--dropout", "0.5", "--sparse-features", "off", NULL},
        {"sage", "--dropout", "0.5", "--sparse-features", "off", NULL},
        {"gat", "--attn-dropout", "0", "--heads", "2", NULL},
        {"gcn", "--dropout", "0.5", "--sparse-features", "on", NULL},
        {"gat", "--attn-dropout", "0.3", "--heads", "2", NULL},
    };
    for (int c = 0; c < 5; c++) {
        if (SANITIZED && c != 0 && c != 4) continue; /* gcn and gat with attention dropout */
        double loss[3][10];
        char *ck[3];
        char steps[10][16];
        for (int d = 0; d < 3; d++) {
            char name[32], lname[32];
            snprintf(name, sizeof name, "replay-%d-%d.h5", c, d);
            snprintf(lname, sizeof lname, "replay-%d-%d.json", c, d);
            ck[d] = strdup(tu_path(name));
            const char *log = tu_path(lname);
            unlink(ck[d]);
            TRAIN_OK("--data", (char *)g_sbm, "--model", cases[c][0], "--mode", "full",
                     cases[c][1], cases[c][2], cases[c][3], cases[c][4], "--epochs", "5",
                     "--runs", "2", "--eval-every", "2", "--hidden", "16", "--threads", "2",
                     "--device", d ? "cpu-as-gpu" : "cpu", "--cuda-graphs", d == 1 ? "off" : "on",
                     "--checkpoint", ck[d], "--log-json", (char *)log, "-q");
            assert_int_equal(log_losses(log, loss[d], 10), 10);
            if (d == 2) assert_int_equal(log_steps(log, steps, 10), 10);
            if (c == 0) expect_device_peak(log, d > 0);
        }
        print_message("%s %s %s: epoch 5 loss %.9g on cpu, %.9g on cpu-as-gpu\n",
                      cases[c][0], cases[c][3], cases[c][4], loss[0][4], loss[2][4]);
        for (int d = 1; d < 3; d++) {
            assert_memory_equal(loss[0], loss[d], 10 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[d]);
        }
        for (int e = 0; e < 10; e++) {
            const char *want = e % 5 == 0 ? "queued" : e % 5 == 1 ? "captured" : "replayed";
            if (strcmp(steps[e], want))
                fail_msg("%s %s: run %d epoch %d's step %s, expected %s", cases[c][0],
                         cases[c][4], e / 5 + 1, e % 5 + 1, steps[e], want);
        }
        for (int d = 0; d < 3; d++) {
            unlink(ck[d]);
            free(ck[d]);
        }
    }
    /* Resumed after 3 epochs of one run: the capture starts again after
     * the resumed run's first (checked) step; the checkpoint is the one of
     * the run trained through, and of the CPU's. */
    char *whole = strdup(tu_path("replay-whole.h5")), *part = strdup(tu_path("replay-part.h5"));
    char *cpu = strdup(tu_path("replay-cpu.h5"));
    unlink(whole), unlink(part), unlink(cpu);
    TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "full", "--epochs", "7",
             "--threads", "2", "--device", "cpu", "--checkpoint", cpu, "-q");
    TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "full", "--epochs", "7",
             "--threads", "2", "--device", "cpu-as-gpu", "--checkpoint", whole, "-q");
    TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "full", "--epochs", "3",
             "--threads", "2", "--device", "cpu-as-gpu", "--checkpoint", part, "-q");
    TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "full", "--epochs", "7",
             "--threads", "2", "--device", "cpu-as-gpu", "--checkpoint", part, "--resume", "-q");
    assert_checkpoints_equal(cpu, whole);
    assert_checkpoints_equal(whole, part);
    unlink(whole), unlink(part), unlink(cpu);
    free(whole), free(part), free(cpu);
    const char *out = tu_path("replay-refused.csv");
    train_fails(out, 2, "--cuda-graphs \"maybe\" (expected on or off)", "--data", (char *)g_sbm,
                "--cuda-graphs", "maybe", "--save-predictions", out, (char *)NULL);
}

/* Mini-batches on a device (cpu-as-gpu: every array in device buffers):
 * the batch's input rows are gathered on the device from its copy of the
 * features (the log says so), the sampler threads stage the blocks' graphs
 * and the training thread places them; the losses and the checkpoint are
 * those of the CPU,
 * bit for bit, for sage, gcn (no dropout: the CPU reads the rows in
 * place) and gat. */
static void test_minibatch_device_path(void **state)
{
    (void)state;
    static const char *const models[3] = {"sage", "gcn", "gat"};
    static const char *const drop[3] = {"0.3", "0", "0.3"};
    static const char *const host_rows[3] = {"loader", "rows", "loader"};
    for (int m = 0; m < 3; m++) {
        double loss[5][8];
        char *ck[5], *line[5];
        /* cpu, cpu-as-gpu, and cpu-as-gpu sampling the batches itself
         * (--sampler device, on its thread one batch ahead and in the
         * step, the features read in place from host memory in the last;
         * gat's attention slots made with each block) */
        const int nd = 5;
        for (int d = 0; d < nd; d++) {
            char name[32], lname[32];
            snprintf(name, sizeof name, "mbdev-%d.h5", d);
            snprintf(lname, sizeof lname, "mbdev-%d.json", d);
            ck[d] = strdup(tu_path(name));
            const char *log = tu_path(lname);
            unlink(ck[d]);
            TRAIN_OK("--data", (char *)g_sbm, "--model", (char *)models[m], "--mode",
                     "minibatch", "--epochs", "3", "--batch-size", "64", "--fanouts", "6,4",
                     "--dropout", (char *)drop[m],
                     "--hidden", "16", "--heads", "2", "--sampler-threads", "1", "--prefetch",
                     d == 3 ? "0" : "2", "--threads", "2", "--device", d ? "cpu-as-gpu" : "cpu",
                     "--sampler", d >= 2 ? "device" : "host", "--features-on",
                     d == 4 ? "host" : "auto", d == 4 ? "--feature-cache" : "--cache-policy",
                     d == 4 ? "20K" : "sample", "--checkpoint", ck[d], "--log-json", (char *)log,
                     "-q");
            assert_int_equal(log_losses(log, loss[d], 8), 3);
            char *text = tu_read_file(log);
            line[d] = text;
            *strchr(text, '\n') = '\0';
        }
        print_message("%s: epoch 3 loss %.9g on cpu, %.9g on cpu-as-gpu\n", models[m],
                      loss[0][2], loss[1][2]);
        for (int d = 1; d < nd; d++) {
            assert_memory_equal(loss[0], loss[d], 3 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[d]);
        }
        for (int d = 2; d < nd; d++)
            if (!strstr(line[d], "\"sampler\": \"device\""))
                fail_msg("%s --sampler device: the log says otherwise: %s", models[m], line[d]);
        char want[64];
        snprintf(want, sizeof want, "\"batch_features\": \"%s\"", host_rows[m]);
        if (!strstr(line[0], want)) fail_msg("cpu %s: no %s in %s", models[m], want, line[0]);
        if (!strstr(line[1], "\"batch_features\": \"device\""))
            fail_msg("cpu-as-gpu %s: features not gathered on the device: %s", models[m], line[1]);
        for (int d = 0; d < nd; d++) {
            unlink(ck[d]);
            free(ck[d]);
            free(line[d]);
        }
    }
    const char *out = tu_path("mbdev-refused.csv");
    train_fails(out, 2, "--sampler \"gpu\" (expected host or device)", "--data", (char *)g_sbm,
                "--model", "sage", "--sampler", "gpu", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2,
                "--features-on host: only for mini-batches on a GPU (--mode minibatch --device "
                "cuda)",
                "--data", (char *)g_sbm, "--model", "sage", "--features-on", "host",
                "--save-predictions", out, "-q", (char *)NULL);
}

/*
 * Sparse first-layer input with mini-batches sampled on the device: on
 * features sparse enough for --sparse-features auto (g_sbm with every
 * value under 2 in magnitude zeroed: about 5 % left) each batch's rows of
 * the sparse table are taken by its node ids read back where it was
 * sampled, so the runs are the host sampler's bit for bit (losses and
 * checkpoint): cpu-as-gpu one batch ahead and in the step, the CPU
 * backend's device sampler; every run says its first layer is sparse.
 */
static void test_device_sampler_sparse_input(void **state)
{
    (void)state;
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(g_sbm, &g), 0);
    for (int64_t i = 0; i < g.csr.n_rows * g.feat_dim; i++)
        if (fabsf(g.feat[i]) < 2.0f) g.feat[i] = 0.0f;
    const char *sparse = tu_path("sbm-sparse.h5");
    assert_int_equal(gnn_graph_write(sparse, &g, 1), 0);
    gnn_graph_free(&g);
    enum { NR = 4 };
    const char *cfg[NR][3] = {{"cpu-as-gpu", "host", "1"},
                              {"cpu-as-gpu", "device", "1"},
                              {"cpu-as-gpu", "device", "0"},
                              {"cpu", "device", "1"}};
    double loss[NR][8];
    char *ck[NR];
    for (int c = 0; c < NR; c++) {
        char name[32];
        snprintf(name, sizeof name, "sparse-dev-%d.h5", c);
        ck[c] = strdup(tu_path(name));
        unlink(ck[c]);
        const char *log = tu_path("sparse-dev.json");
        char *argv[] = {g_train, "--data", (char *)sparse, "--model", "sage", "--mode",
                        "minibatch", "--device", (char *)cfg[c][0], "--sampler",
                        (char *)cfg[c][1], "--prefetch", (char *)cfg[c][2], "--dropout", "0.5",
                        "--fanouts", "5,5", "--batch-size", "256", "--epochs", "3", "--threads",
                        "2", "--checkpoint", ck[c], "--log-json", (char *)log, NULL};
        tu_run_t r = tu_run(argv);
        if (r.status != 0 || !r.err) tu_fail_cmd(argv, &r);
        if (!strstr(r.err, "first layer on sparse input"))
            fail_msg("%s --sampler %s: no \"first layer on sparse input\" in:\n%s", cfg[c][0],
                     cfg[c][1], r.err);
        tu_run_free(&r);
        assert_int_equal(log_losses(log, loss[c], 8), 3);
        if (c > 0) {
            assert_memory_equal(loss[0], loss[c], 3 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[c]);
        }
    }
    print_message("sparse input, epoch 3 loss %.9g with either sampler\n", loss[0][2]);
    for (int c = 0; c < NR; c++) {
        unlink(ck[c]);
        free(ck[c]);
    }
}

/*
 * Steps on device-sampled batches queue without a wait for the device once
 * the first epoch has made the buffers and checked the loss's targets: on
 * cpu-as-gpu each step runs under a GPU capture's rules, and the debug
 * line of each epoch says in how many steps a GPU would have waited. For
 * sage, gcn and gat, sampled in the step and one batch ahead on the
 * sampler's thread: every step of epoch 1 would wait (buffers made, the
 * loss checked), none of epochs 2 and 3. Under the sanitizers gat ahead
 * only.
 */
static void test_device_steps_queue_freely(void **state)
{
    (void)state;
    static const char *const models[3][3] = {{"sage", NULL}, {"gcn", NULL}, {"gat", "--heads", "2"}};
    for (int m = 0; m < 3; m++)
        for (int pf = 0; pf < 2; pf++) {
            if (SANITIZED && (m != 2 || pf != 1)) continue; /* gat, sampled ahead */
            char *argv[32] = {g_train, "--data", (char *)g_sbm, "--mode", "minibatch",
                              "--device", "cpu-as-gpu", "--sampler", "device", "--prefetch",
                              pf ? "1" : "0", "--fanouts", "5,5", "--batch-size", "64",
                              "--epochs", "3", "--threads", "2", "-v", "--model",
                              (char *)models[m][0]};
            int n = 22;
            for (int k = 1; k < 3 && models[m][k]; k++) argv[n++] = (char *)models[m][k];
            argv[n] = NULL;
            tu_run_t r = tu_run(argv);
            if (r.status != 0 || !r.err) tu_fail_cmd(argv, &r);
            for (int e = 1; e <= 3; e++) {
                char key[64];
                snprintf(key, sizeof key, "debug: epoch %d: ", e);
                const char *at = strstr(r.err, key);
                long waits = -1, steps = -1;
                if (!at || sscanf(at + strlen(key), "%ld of %ld steps would wait", &waits, &steps) != 2)
                    fail_msg("%s, prefetch %d: no line for epoch %d in:\n%s", models[m][0], pf, e,
                             r.err);
                if (e == 1 && (steps < 2 || waits != steps))
                    fail_msg("%s, prefetch %d: epoch 1: %ld of %ld steps would wait, expected all "
                             "(the checked loss)", models[m][0], pf, waits, steps);
                if (e > 1 && waits != 0) {
                    const char *nl = strchr(at, '\n');
                    fail_msg("%s, prefetch %d: %.*s", models[m][0], pf,
                             (int)(nl ? nl - at : (long)strlen(at)), at);
                }
            }
            tu_run_free(&r);
        }
}

/* --prefetch auto (the default) prepares batches ahead only where the
 * sampler thread has a core besides the OpenMP threads (as many threads as
 * cores: sampled in the loop; one fewer: 2 ahead), and says which; a count
 * out of range or another word is refused, as --tf32 is on the CPU. */
static void test_prefetch_auto(void **state)
{
    (void)state;
    cpu_set_t set;
    CPU_ZERO(&set);
    int cores = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    for (int k = 0; k < 2; k++) {
        int threads = k == 0 ? cores : cores - 1;
        if (threads < 1) {
            print_message("one core: the case with a core to spare is not run\n");
            continue;
        }
        char tb[16];
        snprintf(tb, sizeof tb, "%d", threads);
        char *argv[] = {g_train,   "--data",       (char *)g_sbm, "--model", "sage",
                        "--epochs", "1",           "--batch-size", "64",     "--fanouts",
                        "6,4",      "--threads",   tb,             NULL};
        tu_run_t r = tu_run(argv);
        const char *want = k == 0 ? "prefetch 0 (auto)" : "prefetch 2 (auto)";
        if (r.status != 0 || !r.err || !strstr(r.err, want))
            fail_msg("%d cores, --threads %d: status %d, want \"%s\" in:\n%s", cores, threads,
                     r.status, want, r.err ? r.err : "");
        tu_run_free(&r);
    }
    const char *out = tu_path("pf-refused.csv");
    /* TF32 products are the GPU's: refused on the CPU, nothing written. */
    train_fails(out, 2, "--tf32: only with --device cuda", "--data", (char *)g_sbm, "--model",
                "sage", "--tf32", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--prefetch 65 outside [0, 64] (or auto)", "--data", (char *)g_sbm,
                "--model", "sage", "--prefetch", "65", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--prefetch \"soon\" (expected auto or a count in [0, 64])", "--data",
                (char *)g_sbm, "--model", "sage", "--prefetch", "soon", "--save-predictions", out,
                (char *)NULL);
}

/* Layer-wise evaluation does not depend on how the nodes are batched: one
 * node at a time and all at once give the same accuracies and validation
 * losses, and it computes the full-graph forward's logits; gcn trains on
 * blocks too. */
static void test_minibatch_eval_batches(void **state)
{
    (void)state;
    const char *sizes[] = {"1", "100000"};
    char *text[2];
    for (int k = 0; k < 2; k++) {
        const char *log = tu_path(k ? "eval-b.json" : "eval-a.json");
        TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "minibatch", "--epochs",
                 "3", "--layers", "3", "--fanouts", "5,5,-1", "--batch-size", "500",
                 "--eval-batch-size", (char *)sizes[k], "--threads", "2", "--log-json",
                 (char *)log, "-q");
        check_log(log, 1, 3);
        text[k] = tu_read_file(log);
    }
    char *a = text[0], *b = text[1];
    for (int e = 0; e < 3; e++) {
        char *na = strchr(a, '\n'), *nb = strchr(b, '\n');
        *na = *nb = '\0';
        static const char *const keys[] = {"loss", "train_acc", "valid_acc", "test_acc"};
        for (int k = 0; k < 4; k++) assert_true(tu_json_num(a, keys[k]) == tu_json_num(b, keys[k]));
        double va = tu_json_num(a, "valid_loss"), vb = tu_json_num(b, "valid_loss");
        assert_true(fabs(va - vb) <= 1e-5 * fabs(va));
        a = na + 1;
        b = nb + 1;
    }
    free(text[0]);
    free(text[1]);

    /* With the initial parameters (no epoch), layer-wise inference in
     * batches of 100 gives the logits of the full-graph forward. */
    for (int m = 0; m < 2; m++) {
        char *model = m ? "sage" : "gcn";
        char *pf = (char *)tu_path("pred-full.h5"), *pm = (char *)tu_path("pred-mb.h5");
        TRAIN_OK("--data", (char *)g_sbm, "--model", model, "--mode", "full", "--epochs", "0",
                 "--layers", "3", "--hidden", "24", "--threads", "2", "--save-predictions", pf,
                 "-q");
        TRAIN_OK("--data", (char *)g_sbm, "--model", model, "--mode", "minibatch", "--epochs",
                 "0", "--layers", "3", "--hidden", "24", "--eval-batch-size", "100", "--threads",
                 "2", "--save-predictions", pm, "-q");
        float *lf = NULL, *lm = NULL;
        hsize_t df[2], dm[2];
        assert_int_equal(h5_read(pf, "logits", H5T_NATIVE_FLOAT, (void **)&lf, df), 2);
        assert_int_equal(h5_read(pm, "logits", H5T_NATIVE_FLOAT, (void **)&lm, dm), 2);
        assert_true(df[0] == 3000 && dm[0] == 3000 && df[1] == dm[1]);
        /* Summation orders differ (a block lists sources by local id): the
         * largest difference relative to the largest logit. */
        double worst = 0.0, top = 0.0;
        for (hsize_t i = 0; i < df[0] * df[1]; i++) {
            double d = fabs((double)lf[i] - (double)lm[i]);
            worst = d > worst ? d : worst;
            top = fabs((double)lf[i]) > top ? fabs((double)lf[i]) : top;
        }
        print_message("%s: layer-wise logits vs full graph: largest difference %.2e of %.2e\n",
                      model, worst, top);
        assert_true(top > 0.0 && worst <= 1e-5 * top);
        free(lf);
        free(lm);
    }

    const char *log = tu_path("gcn-mb.json");
    TRAIN_OK("--data", (char *)g_sbm, "--model", "gcn", "--mode", "minibatch", "--epochs", "40",
             "--batch-size", "128", "--fanouts", "10,10", "--threads", "2", "--log-json",
             (char *)log, "-q");
    log_summary_t r = check_log(log, 1, 40);
    print_message("gcn on sampled blocks: test accuracy %.4f\n", r.test_acc);
    assert_true(r.test_acc > 0.6);
}

/* --eval-every 0 (timing runs): no evaluation, accuracies null, the
 * predictions of the last epoch still written. */
static void test_no_evaluation(void **state)
{
    (void)state;
    const char *log = tu_path("noeval.json");
    char *pred = (char *)tu_path("noeval-pred.h5");
    TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--epochs", "2", "--eval-every", "0",
             "--threads", "2", "--log-json", (char *)log, "--save-predictions", pred, "-q");
    char *text = tu_read_file(log);
    assert_non_null(text);
    int lines = 0;
    for (char *line = text, *nl; *line && (nl = strchr(line, '\n')); line = nl + 1, lines++) {
        *nl = '\0';
        assert_true(json_line_ok(line));
        const char *v = tu_json_get(line, "test_acc");
        assert_non_null(v);
        assert_int_equal(strncmp(v, "null", 4), 0);
        if (lines < 2) {
            assert_false(json_true(line, "evaluated"));
            assert_true(tu_json_num(line, "loss") > 0.0);
        } else {
            assert_true(json_true(line, "final"));
            assert_int_equal((int64_t)tu_json_num(line, "best_epoch"), 2);
        }
    }
    assert_int_equal(lines, 3);
    free(text);
    int64_t *p = NULL;
    hsize_t dims[2];
    assert_int_equal(h5_read(pred, "pred", H5T_NATIVE_INT64, (void **)&p, dims), 1);
    assert_int_equal(dims[0], 3000);
    free(p);
    train_fails(NULL, 2, "--eval-every -1 must be >= 0", "--data", (char *)g_sbm, "--eval-every",
                "-1", (char *)NULL);
    train_fails(NULL, 2,
                "--feature-cache: only for mini-batches (over a partition directory, or in one "
                "process on a GPU)",
                "--data", (char *)g_sbm, "--feature-cache", "64M", (char *)NULL);
    train_fails(NULL, 2,
                "--feature-cache: only for mini-batches over a partition directory, or in one "
                "process on a GPU (the device's cache of a table in host memory)",
                "--data", (char *)g_sbm, "--model", "sage", "--mode", "minibatch",
                "--feature-cache", "64M", "-q", (char *)NULL);
    train_fails(NULL, 2, "--full-halo: only for full-graph training over a partition directory",
                "--data", (char *)g_sbm, "--full-halo", (char *)NULL);
    train_fails(NULL, 2, "--cache-policy \"degree\" (expected sample or rows)", "--data",
                (char *)g_sbm, "--cache-policy", "degree", (char *)NULL);
    train_fails(NULL, 2, "--spmm fastest: expected auto, cusparse, rowcache or balanced",
                "--data", (char *)g_sbm, "--spmm", "fastest", (char *)NULL);
    train_fails(NULL, 2, "--spmm rowcache: only with --device cuda", "--data", (char *)g_sbm,
                "--spmm", "rowcache", (char *)NULL);
}

static void test_minibatch_bad_options(void **state)
{
    (void)state;
    char *out = (char *)tu_path("mb-bad.h5");
    char *d = (char *)g_sbm;
    train_fails(out, 2, "--fanouts \"10\" has 1 entries, --layers is 2", "--data", d, "--model",
                "sage", "--fanouts", "10", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--fanouts \"10,5,5\" has more entries than --layers 2", "--data", d,
                "--model", "sage", "--fanouts", "10,5,5", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "each entry must be -1 (all neighbours) or a count", "--data", d,
                "--model", "sage", "--fanouts", "10,0", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "each entry must be -1", "--data", d, "--model", "sage", "--fanouts",
                "10,x", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "expected numbers separated by commas", "--data", d, "--model", "sage",
                "--fanouts", "10;5", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--mode \"half\" (expected full or minibatch)", "--data", d, "--mode",
                "half", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--init \"xavier\" (expected glorot or fan-in)", "--data", d, "--init",
                "xavier", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--sparse-features on: the sage first layer can take sparse input only "
                "with a linear aggregator (sum, mean, gcn), not max", "--data", d, "--model",
                "sage", "--aggr", "max", "--sparse-features", "on", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "--batch-size 0 outside", "--data", d, "--model", "sage", "--batch-size",
                "0", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--sampler-threads 0 outside", "--data", d, "--model", "sage",
                "--sampler-threads", "0", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--prefetch -1 outside", "--data", d, "--model", "sage", "--prefetch",
                "-1", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--eval-batch-size 0 outside", "--data", d, "--model", "sage",
                "--eval-batch-size", "0", "--save-predictions", out, (char *)NULL);

    /* A checkpoint remembers the sampling settings. */
    char *ck = (char *)tu_path("mb-refuse.h5");
    unlink(ck);
    TRAIN_OK("--data", d, "--model", "sage", "--epochs", "2", "--fanouts", "5,5", "--threads", "2",
             "--checkpoint", ck, "-q");
    train_fails(NULL, 1, "--fanouts is 5,5 in the checkpoint but 10,10 now", "--data", d,
                "--model", "sage", "--epochs", "4", "--fanouts", "10,10", "--checkpoint", ck,
                "--resume", "-q", (char *)NULL);
    train_fails(NULL, 1, "--batch-size is 1024 in the checkpoint but 512 now", "--data", d,
                "--model", "sage", "--epochs", "4", "--fanouts", "5,5", "--batch-size", "512",
                "--checkpoint", ck, "--resume", "-q", (char *)NULL);
    train_fails(NULL, 1, "--mode is minibatch in the checkpoint but full now", "--data", d,
                "--model", "sage", "--mode", "full", "--epochs", "4", "--checkpoint", ck,
                "--resume", "-q", (char *)NULL);
    train_fails(NULL, 1, "--fanouts is 5,5 in the checkpoint but 5,5 once now", "--data", d,
                "--model", "sage", "--epochs", "4", "--fanouts", "5,5", "--sample-once",
                "--checkpoint", ck, "--resume", "-q", (char *)NULL);
    train_fails(out, 2, "--sample-once: only with mini-batches (--mode minibatch)", "--data", d,
                "--model", "gcn", "--mode", "full", "--sample-once", "--save-predictions", out,
                (char *)NULL);
}

/*
 * Sampling once (--sample-once: a node's neighbours drawn at the hop that
 * reaches it and kept by every layer): the same losses and checkpoint bit
 * for bit from the host sampler with 1 and 2 threads, with and without
 * prefetching, and from cpu-as-gpu's device sampler (on its thread and in
 * the step); other losses than sampling each layer; the log names the
 * fanouts with "once".
 */
static void test_minibatch_sample_once(void **state)
{
    (void)state;
    static const char *const cfg[5][4] = {
        {"cpu", "host", "1", "2"},        {"cpu", "host", "2", "0"},
        {"cpu-as-gpu", "host", "1", "2"}, {"cpu-as-gpu", "device", "1", "2"},
        {"cpu-as-gpu", "device", "1", "0"},
    };
    double loss[6][8];
    char *ck[6];
    for (int c = 0; c < 6; c++) {
        char name[32], lname[32];
        snprintf(name, sizeof name, "once-%d.h5", c);
        snprintf(lname, sizeof lname, "once-%d.json", c);
        ck[c] = strdup(tu_path(name));
        const char *log = tu_path(lname);
        unlink(ck[c]);
        const int k = c < 5 ? c : 0; /* the last: cpu, each layer drawing anew */
        TRAIN_OK("--data", (char *)g_sbm, "--model", "sage", "--mode", "minibatch", "--layers",
                 "3", "--epochs", "3", "--batch-size", "64", "--fanouts", "6,4,3", "--hidden",
                 "16", "--threads", "2", "--device", (char *)cfg[k][0], "--sampler",
                 (char *)cfg[k][1], "--sampler-threads", (char *)cfg[k][2], "--prefetch",
                 (char *)cfg[k][3], c < 5 ? "--sample-once" : "--deterministic", "--checkpoint",
                 ck[c], "--log-json", (char *)log, "-q");
        assert_int_equal(log_losses(log, loss[c], 8), 3);
        if (c == 0) {
            char *text = tu_read_file(log);
            assert_non_null(text);
            if (!strstr(text, "\"fanouts\": \"6,4,3 once\""))
                fail_msg("no \"fanouts\": \"6,4,3 once\" in the log: %s", text);
            free(text);
        }
    }
    print_message("sage, fanouts 6,4,3: epoch 3 loss %.9g sampling once, %.9g each layer\n",
                  loss[0][2], loss[5][2]);
    for (int c = 1; c < 5; c++) {
        assert_memory_equal(loss[0], loss[c], 3 * sizeof(double));
        assert_checkpoints_equal(ck[0], ck[c]);
    }
    assert_true(loss[0][2] != loss[5][2]);
    for (int c = 0; c < 6; c++) {
        unlink(ck[c]);
        free(ck[c]);
    }
}

/* ---- Plug-in -------------------------------------------------------------- */

/* sage with lse.so's aggregator learns the 4-class SBM graph (chance 25 %;
 * measured 93.3 %), within 5 points of the built-in mean (95.5 %; its log
 * of the mean of exponentials stays between the inputs' mean and maximum;
 * on Cora it is within 2 points, the cora group checks); an unknown
 * aggregator is
 * refused with the registered
 * names, a missing plug-in with its path. (On the 10-class, 32-feature
 * graph the max-like aggregators, max and lse, barely learn in 100 epochs:
 * the maximum of a few noisy features carries little of the class signal.) */
static void test_plugin_end_to_end(void **state)
{
    (void)state;
    const char *log = tu_path("lse.json");
    double s = TRAIN_OK("--data", (char *)g_sbm_easy, "--model", "sage", "--aggr-plugin", g_lse,
                        "--aggr", "lse", "--epochs", "100", "--threads", "2", "--log-json",
                        (char *)log, "-q");
    log_summary_t r = check_log(log, 1, 100);
    const char *mlog = tu_path("lse-mean.json");
    TRAIN_OK("--data", (char *)g_sbm_easy, "--model", "sage", "--aggr", "mean", "--epochs", "100",
             "--threads", "2", "--log-json", (char *)mlog, "-q");
    log_summary_t rm = check_log(mlog, 1, 100);
    print_message("sage + lse.so: test accuracy %.4f (%.2f s); with mean %.4f\n", r.test_acc, s,
                  rm.test_acc);
    assert_true(r.test_acc > 0.6);
    assert_true(r.test_acc >= rm.test_acc - 0.05);

    char *pred = (char *)tu_path("lse-pred.h5");
    train_fails(pred, 1, "unknown aggregator \"nope\" (registered: sum, mean, gcn, max, lse)",
                "--data", (char *)g_sbm, "--model", "sage", "--aggr-plugin", g_lse, "--aggr",
                "nope", "--save-predictions", pred, (char *)NULL);
    train_fails(pred, 1, "unknown aggregator \"lse\" (registered: sum, mean, gcn, max); a plug-in "
                "adds its own with --aggr-plugin FILE.so",
                "--data", (char *)g_sbm, "--model", "sage", "--aggr", "lse", "--save-predictions",
                pred, (char *)NULL);
    /* Attention functions: --attention picks one of its kind only. */
    train_fails(pred, 1, "unknown attention function \"gatv2\" (registered: gat); a plug-in adds "
                "its own with --aggr-plugin FILE.so", "--data",
                (char *)g_sbm, "--model", "gat", "--attention", "gatv2", "--save-predictions",
                pred, (char *)NULL);
    train_fails(pred, 1, "unknown attention function \"nope\" (registered: gat, gatv2)",
                "--data", (char *)g_sbm, "--model", "gat", "--aggr-plugin", g_gatv2,
                "--attention", "nope", "--save-predictions", pred, (char *)NULL);
    train_fails(pred, 1, "\"mean\" is an aggregator, not an attention function", "--data",
                (char *)g_sbm, "--model", "gat", "--attention", "mean", "--save-predictions", pred,
                (char *)NULL);
    train_fails(pred, 1, "\"gatv2\" is an attention function, not an aggregator", "--data",
                (char *)g_sbm, "--model", "sage", "--aggr-plugin", g_gatv2, "--aggr", "gatv2",
                "--save-predictions", pred, (char *)NULL);
    train_fails(pred, 2, "--attention gat: only for --model gat", "--data", (char *)g_sbm,
                "--model", "sage", "--attention", "gat", "--save-predictions", pred,
                (char *)NULL);
    char *missing = (char *)tu_path("no-such-plugin.so");
    train_fails(pred, 1, missing, "--data", (char *)g_sbm, "--model", "sage", "--aggr-plugin",
                missing, "--aggr", "lse", "--save-predictions", pred, (char *)NULL);
}

/* ---- Link prediction -------------------------------------------------------- */

/* g_sbm_easy with 5 % of its edges held out for validation and 10 % for
 * testing (made once). */
static const char *link_graph(void)
{
    static char path[640];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tu_path("sbm-link.h5"));
    char *argv[] = {g_dataset, "split-edges", (char *)g_sbm_easy, "-o", path, "--seed", "3",
                    "--neg-per-pos", "2", "-q", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("split-edges: status %d: %s", r.status, r.err);
    tu_run_free(&r);
    return path;
}

/*
 * --task link learns the held-out edges of the 4-class SBM graph with GCN,
 * GraphSAGE and GAT encoders and the dot decoder, GCN with the MLP
 * decoder, and GraphSAGE in edge mini-batches of 256 (edges mostly join nodes of a class, which the
 * features tell: measured test AUC 0.79-0.82, AP 0.59-0.70 in 60 epochs;
 * chance 0.5 and 1/3); every epoch line
 * and the final line carry every metric, in [0, 1], the final line at the
 * best validation AUC. Under the sanitizers 6 epochs, the metrics' range
 * alone.
 */
static void test_link_learns(void **state)
{
    (void)state;
    const char *data = link_graph();
#ifdef GNN_TEST_SANITIZED
    const char *epochs = "6";
#else
    const char *epochs = "60";
#endif
    static const char *const models[] = {"gcn", "sage", "gat", "gcn", "sage"};
    static const char *const decoder[] = {"dot", "dot", "dot", "mlp", "dot"};
    static const char *const mode[] = {"full", "full", "full", "full", "minibatch"};
    static const char *const keys[] = {"auc", "ap", "mrr", "hits@20", "hits@50", "hits@100"};
    for (int m = 0; m < 5; m++) {
        char *log = (char *)tu_path("link.json");
        TRAIN_OK("--data", (char *)data, "--task", "link", "--model", (char *)models[m],
                 "--decoder", (char *)decoder[m], "--mode", (char *)mode[m], "--hidden", "32",
                 "--heads", "2", "--epochs", (char *)epochs, "--batch-size", "256", "--fanouts",
                 "10,10", "--threads", "2", "--log-json", log, "-q");
        char *text = tu_read_file(log);
        int lines = 0;
        for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1, lines++) {
            *nl = '\0';
            assert_true(json_line_ok(line));
            for (int s = 0; s < 2; s++)
                for (int k = 0; k < 6; k++) {
                    char key[32];
                    snprintf(key, sizeof key, "%s_%s", s ? "test" : "valid", keys[k]);
                    double v = tu_json_num(line, key);
                    if (!(v >= 0.0 && v <= 1.0))
                        fail_msg("%s, line %d: %s = %g", models[m], lines + 1, key, v);
                }
            assert_true(isfinite(tu_json_num(line, "valid_loss")));
        }
        assert_int_equal(lines, atoi(epochs) + 1);
        free(text);
        char *last = last_line(log);
        assert_true(json_true(last, "final"));
        double auc = tu_json_num(last, "test_auc"), ap = tu_json_num(last, "test_ap");
        print_message("link, %s, %s, %s decoder: test AUC %.4f, AP %.4f, MRR %.4f at epoch %g\n",
                      models[m], mode[m], decoder[m], auc, ap, tu_json_num(last, "test_mrr"),
                      tu_json_num(last, "best_epoch"));
#ifndef GNN_TEST_SANITIZED
        assert_true(auc > 0.75);
        assert_true(ap > 0.5); /* chance: 1/3 with 2 negatives per positive */
#else
        assert_true(auc > 0.0 && ap > 0.0);
#endif
        free(last);
    }
}

/*
 * --save-embeddings: one row per node, by original id, of the best epoch's
 * last layer: for link prediction the embeddings the final line's metrics
 * come from (the test MRR recomputed from the file equals the reported
 * one); for node classification the logits --save-predictions writes.
 */
static void test_save_embeddings(void **state)
{
    (void)state;
    const char *data = link_graph();
    char *emb = (char *)tu_path("emb.h5"), *log = (char *)tu_path("emb.json");
    TRAIN_OK("--data", (char *)data, "--task", "link", "--epochs", "15", "--negatives", "2",
             "--threads", "2", "--save-embeddings", emb, "--log-json", log, "-q");
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(data, &g), 0);
    float *z;
    int64_t *ids;
    hsize_t d[2];
    assert_int_equal(h5_read(emb, "embedding", H5T_NATIVE_FLOAT, (void **)&z, d), 2);
    int64_t n = g.csr.n_rows, D = (int64_t)d[1];
    assert_int_equal(d[0], n);
    assert_int_equal(D, 16);
    assert_int_equal(h5_read(emb, "node_id", H5T_NATIVE_INT64, (void **)&ids, d), 1);
    for (int64_t v = 0; v < n; v++) assert_int_equal(ids[v], g.orig_id ? g.orig_id[v] : v);
    int64_t np = g.link_size[GNN_LINK_TEST_POS], K = g.link_neg_per_pos;
    const int64_t *pp = g.link[GNN_LINK_TEST_POS], *pn = g.link[GNN_LINK_TEST_NEG];
    double mrr = 0.0;
    for (int64_t i = 0; i < np; i++) {
        float sp = 0.0f;
        for (int64_t k = 0; k < D; k++) sp += z[pp[2 * i] * D + k] * z[pp[2 * i + 1] * D + k];
        double ge = 0, gt = 0;
        for (int64_t j = 0; j < K; j++) {
            const int64_t *q = pn + 2 * (i * K + j);
            float sn = 0.0f;
            for (int64_t k = 0; k < D; k++) sn += z[q[0] * D + k] * z[q[1] * D + k];
            ge += sn >= sp;
            gt += sn > sp;
        }
        mrr += 1.0 / (0.5 * (ge + gt) + 1.0);
    }
    char *last = last_line(log);
    assert_true(fabs(mrr / (double)np - tu_json_num(last, "test_mrr")) < 1e-8);
    free(last);
    free(z);
    free(ids);
    gnn_graph_free(&g);

    /* Node classification: the logits of the predictions file. */
    char *pred = (char *)tu_path("emb-pred.h5");
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "5", "--threads", "2", "--save-embeddings", emb,
             "--save-predictions", pred, "-q");
    float *a, *b;
    hsize_t da[2], db[2];
    assert_int_equal(h5_read(emb, "embedding", H5T_NATIVE_FLOAT, (void **)&a, da), 2);
    assert_int_equal(h5_read(pred, "logits", H5T_NATIVE_FLOAT, (void **)&b, db), 2);
    assert_true(da[0] == db[0] && da[1] == db[1] && da[1] == 10);
    assert_memory_equal(a, b, (size_t)(da[0] * da[1]) * sizeof(float));
    free(a);
    free(b);
    train_fails(NULL, 2, "--save-embeddings", "--data", (char *)g_sbm, "--save-embeddings",
                (char *)g_sbm, "-q", (char *)NULL);
}

/* Edge mini-batches are the same for any loader: losses and checkpoints
 * equal for 1 and 2 sampler threads and prefetch 0, 2, 4, and sampled on
 * the device (--sampler device, the batch's edges left out of its draws
 * there: the CPU backend's sampler, and cpu-as-gpu's one batch ahead and
 * in the step), with the same sampled edges (dot and MLP decoders; 4
 * epochs, 2 under the sanitizers); an epoch is ceil(training edges /
 * batch) batches. Small batches train on a device backend too. */
static void test_link_minibatch_same_for_any_loader(void **state)
{
    (void)state;
    const char *data = link_graph();
    const int epochs = CMP_EPOCHS;
    char *ep = (char *)CMP_EPOCHS_S;
    enum { NC = 6 };
    const char *cfg[NC][4] = {{"1", "2", "host", "cpu"},        {"2", "4", "host", "cpu"},
                              {"1", "0", "host", "cpu"},        {"1", "1", "device", "cpu"},
                              {"1", "1", "device", "cpu-as-gpu"}, {"1", "0", "device", "cpu-as-gpu"}};
    for (int dec = 0; dec < 2; dec++) {
        double loss[NC][8], edges[NC];
        char *ck[NC];
        for (int c = 0; c < NC; c++) {
            char name[32];
            snprintf(name, sizeof name, "lmb-%d.h5", c);
            ck[c] = strdup(tu_path(name));
            const char *log = tu_path("lmb.json");
            unlink(ck[c]);
            TRAIN_OK("--data", (char *)data, "--task", "link", "--model", "sage", "--mode",
                     "minibatch", "--decoder", dec ? "mlp" : "dot", "--negatives", "2",
                     "--epochs", ep, "--batch-size", "100", "--fanouts", "6,4",
                     "--sampler-threads", (char *)cfg[c][0], "--prefetch", (char *)cfg[c][1],
                     "--sampler", (char *)cfg[c][2], "--device", (char *)cfg[c][3],
                     "--threads", "2", "--checkpoint", ck[c], "--log-json", (char *)log, "-q");
            assert_int_equal(log_losses(log, loss[c], 8), epochs);
            char *last = last_line(log);
            double auc = tu_json_num(last, "test_auc");
            assert_true(auc > 0.5 && auc <= 1.0);
            free(last);
            char *text = tu_read_file(log);
            *strchr(text, '\n') = '\0';
            gnn_graph_t g;
            assert_int_equal(gnn_graph_load(data, &g), 0);
            int64_t m = g.csr.nnz / 2; /* undirected, no self loops */
            gnn_graph_free(&g);
            assert_int_equal((int64_t)tu_json_num(text, "batches"), (m + 99) / 100);
            edges[c] = tu_json_num(text, "sampled_edges");
            free(text);
            if (c > 0) {
                assert_memory_equal(loss[0], loss[c], (size_t)epochs * sizeof(double));
                assert_checkpoints_equal(ck[0], ck[c]);
                if (edges[c] != edges[0])
                    fail_msg("%s sampler on %s: %.0f sampled edges in epoch 1, the host "
                             "loader %.0f", cfg[c][2], cfg[c][3], edges[c], edges[0]);
            }
        }
        for (int c = 0; c < NC; c++) {
            unlink(ck[c]);
            free(ck[c]);
        }
        /* On a device backend (host memory standing in for a GPU), with
         * batches of 40 edges: batches larger than --batch-size grow the
         * host copies, which evaluation reads for every node. */
        const char *log = tu_path("lmb-dev.json");
        TRAIN_OK("--data", (char *)data, "--task", "link", "--model", "sage", "--mode",
                 "minibatch", "--decoder", dec ? "mlp" : "dot", "--negatives", "2", "--epochs",
                 "2", "--batch-size", "40", "--fanouts", "6,4", "--device", "cpu-as-gpu",
                 "--threads", "2", "--log-json", (char *)log, "-q");
        char *last = last_line(log);
        double auc = tu_json_num(last, "test_auc");
        assert_true(auc > 0.5 && auc <= 1.0);
        free(last);
    }
}

/*
 * Edge mini-batches on a device whose features stay in host memory
 * (--features-on host) with --feature-cache: the rows an epoch of edge
 * batches reads most (pre-sampled from the task's batches, their edges
 * left out) kept on the device; the INFO line gives the rows and their
 * share of the reads, and the losses are those of the features in device
 * memory, bit for bit, with the host sampler and the device sampler.
 */
static void test_link_feature_cache(void **state)
{
    (void)state;
    const char *data = link_graph();
    double loss[3][8];
    for (int c = 0; c < 3; c++) {
        const char *log = tu_path("link-cache.json");
        char *argv[] = {g_train, "--data", (char *)data, "--task", "link", "--model", "sage",
                        "--mode", "minibatch", "--batch-size", "100", "--fanouts", "6,4",
                        "--epochs", "2", "--threads", "2", "--device", "cpu-as-gpu",
                        "--features-on", c ? "host" : "device", "--sampler",
                        c == 2 ? "device" : "host", "--feature-cache", "20K", "--log-json",
                        (char *)log, NULL};
        tu_run_t r = tu_run(argv);
        if (r.status != 0 || !r.err) tu_fail_cmd(argv, &r);
        const char *at = r.err ? strstr(r.err, "feature cache: ") : NULL;
        long rows = -1;
        double share = -1.0;
        if (c == 0 && (!at || !strstr(at, "not needed, the features are in device memory")))
            fail_msg("features in device memory: no \"not needed\" line in:\n%s", r.err);
        if (c > 0) {
            const char *pc = at ? strstr(at, "; ") : NULL;
            if (!at || sscanf(at, "feature cache: %ld rows", &rows) != 1 || !pc ||
                sscanf(pc, "; %lf %%", &share) != 1 || rows <= 0 || share <= 0.0)
                fail_msg("--sampler %s: no feature cache line with rows and a share in:\n%s",
                         c == 2 ? "device" : "host", r.err);
            print_message("edge batches, --sampler %s: %ld rows cached, %.1f %% of the reads\n",
                          c == 2 ? "device" : "host", rows, share);
        }
        tu_run_free(&r);
        assert_int_equal(log_losses(log, loss[c], 8), 2);
        if (c > 0) assert_memory_equal(loss[0], loss[c], 2 * sizeof(double));
    }
}

/* A link-prediction run resumed after a shorter one ends with the same
 * checkpoint (its negatives follow the epoch, not the process). */
static void test_link_resume(void **state)
{
    (void)state;
    const char *data = link_graph();
    char *a = (char *)tu_path("link-whole.h5"), *b = (char *)tu_path("link-parts.h5");
    unlink(a);
    unlink(b);
#define LINK_ARGS                                                                                \
    "--data", (char *)data, "--task", "link", "--negatives", "3", "--dropout", "0.3",           \
        "--threads", "2"
    TRAIN_OK(LINK_ARGS, "--epochs", "12", "--checkpoint", a, "--checkpoint-every", "4", "-q");
    TRAIN_OK(LINK_ARGS, "--epochs", "7", "--checkpoint", b, "--checkpoint-every", "3", "-q");
    TRAIN_OK(LINK_ARGS, "--epochs", "12", "--checkpoint", b, "--checkpoint-every", "4",
             "--resume", "-q");
    assert_checkpoints_equal(a, b);
    /* Other link settings are another job. */
    train_fails(NULL, 1, "--negatives is 3 in the checkpoint but 2 now", LINK_ARGS, "--epochs",
                "14", "--negatives", "2", "--checkpoint", b, "--resume", "-q", (char *)NULL);
    train_fails(NULL, 1, "--hits is 20,50,100 in the checkpoint but 10 now", LINK_ARGS,
                "--epochs", "14", "--hits", "10", "--checkpoint", b, "--resume", "-q",
                (char *)NULL);
#undef LINK_ARGS
}

/* What --task link refuses, each with one line. */
static void test_link_bad_input(void **state)
{
    (void)state;
    const char *data = link_graph();
    train_fails(NULL, 1, "has no held-out edges (--task link needs a graph file from gnn-dataset "
                         "split-edges)",
                "--data", (char *)g_sbm, "--task", "link", "-q", (char *)NULL);
    train_fails(NULL, 2, "--task edge: expected node or link", "--data", (char *)data, "--task",
                "edge", "-q", (char *)NULL);
    train_fails(NULL, 2, "--negatives 0 outside [1, 1000]", "--data", (char *)data, "--task",
                "link", "--negatives", "0", "-q", (char *)NULL);
    train_fails(NULL, 2, "--hits 20,0: expected up to 4 positive integers", "--data",
                (char *)data, "--task", "link", "--hits", "20,0", "-q", (char *)NULL);
    train_fails(NULL, 2, "--hits 20,: ends with a comma", "--data", (char *)data, "--task",
                "link", "--hits", "20,", "-q", (char *)NULL);
    train_fails(NULL, 2, "--hits 20,50,20: 20 is listed twice", "--data", (char *)data,
                "--task", "link", "--hits", "20,50,20", "-q", (char *)NULL);
    train_fails(NULL, 2, "--negatives, --decoder, --hits and --out-dim are for --task link",
                "--data", (char *)g_sbm, "--negatives", "3", "-q", (char *)NULL);
    /* A diverged model: its scores are no numbers; the run ends with the
     * validation loss's error, not a hang. */
    train_fails(NULL, 1, "is not finite at epoch", "--data", (char *)data, "--task", "link",
                "--lr", "1e10", "--epochs", "50", "--threads", "2", "-q", (char *)NULL);
    train_fails(NULL, 2, "--decoder cosine: expected dot or mlp", "--data", (char *)data,
                "--task", "link", "--decoder", "cosine", "-q", (char *)NULL);
    char *pred = (char *)tu_path("link-pred.h5");
    train_fails(pred, 2, "--save-predictions: class predictions of --task node only", "--data",
                (char *)data, "--task", "link", "--save-predictions", pred, (char *)NULL);
}

/* ---- Learnable input rows (--embed-dim) ------------------------------------- */

/* g_nofeat with 5 % of its edges held out for validation and 10 % for
 * testing, 2 negatives per positive (made once). */
static const char *nofeat_link_graph(void)
{
    static char path[640];
    if (path[0]) return path;
    snprintf(path, sizeof path, "%s", tu_path("sbm-nofeat-link.h5"));
    char *argv[] = {g_dataset, "split-edges", (char *)g_nofeat, "-o", path, "--seed", "3",
                    "--neg-per-pos", "2", "-q", NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) fail_msg("split-edges: status %d: %s", r.status, r.err);
    tu_run_free(&r);
    return path;
}

/* The float32 dataset name of two files: the same shape and bitwise the
 * same values (an empty one allowed: Adagrad's absent second state). */
static void assert_f32_set_equal(const char *a, const char *b, const char *name)
{
    void *va, *vb;
    hsize_t da[2], db[2];
    int ra = h5_read(a, name, H5T_NATIVE_FLOAT, &va, da);
    int rb = h5_read(b, name, H5T_NATIVE_FLOAT, &vb, db);
    if (ra != rb || da[0] != db[0] || da[1] != db[1])
        fail_msg("dataset %s: %llu x %llu in %s, %llu x %llu in %s", name,
                 (unsigned long long)da[0], (unsigned long long)da[1], a,
                 (unsigned long long)db[0], (unsigned long long)db[1], b);
    if (memcmp(va, vb, (size_t)(da[0] * da[1]) * sizeof(float)) != 0)
        fail_msg("dataset %s differs between %s and %s", name, a, b);
    free(va);
    free(vb);
}

/* The learnable rows of two checkpoints: the table, the optimiser's state,
 * the best epoch's copy and the step count, bitwise equal. */
static void assert_embed_tables_equal(const char *a, const char *b)
{
    static const char *const sets[] = {"embed", "embed_state1", "embed_state2", "embed_best"};
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) assert_f32_set_equal(a, b, sets[i]);
    static const char *const attrs[] = {"embed_dim", "embed_all", "embed_rows", "embed_step",
                                        "embed_best_kept"};
    for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++)
        if (h5_attr_i64(a, attrs[i]) != h5_attr_i64(b, attrs[i]))
            fail_msg("attribute %s: %lld in %s, %lld in %s", attrs[i],
                     (long long)h5_attr_i64(a, attrs[i]), a, (long long)h5_attr_i64(b, attrs[i]),
                     b);
    int64_t n = 0;
    float *w = h5_read_f32(a, "embed", &n);
    assert_true(n > 0 && n == h5_attr_i64(a, "embed_rows") * h5_attr_i64(a, "embed_dim"));
    free(w);
}

/*
 * Nodes without features learn from their learnable rows alone: on the
 * featureless 4-class SBM graph (chance 25 %), GCN on the whole graph (60
 * epochs) and GraphSAGE in mini-batches of 64 (40 epochs), the rows
 * trained by Adam and by Adagrad (lr 0.01). Measured: GCN 95.2 % (Adam)
 * and 93.6 % (Adagrad), GraphSAGE 95.6 % and 92.6 %. The rows must be
 * what learns: kept at their initial values (--embed-lr 1e-20), GCN
 * reaches 37.1 %.
 */
static void test_embed_learns(void **state)
{
    (void)state;
    static const struct {
        char *model, *mode, *opt, *lr, *epochs;
        double lo, hi; /* the test accuracy must lie in [lo, hi) */
    } cases[] = {
        {"gcn", "full", "adam", "0.01", "60", 0.8, 1.01},
        {"gcn", "full", "adagrad", "0.01", "60", 0.8, 1.01},
        {"sage", "minibatch", "adam", "0.01", "40", 0.8, 1.01},
        {"sage", "minibatch", "adagrad", "0.01", "40", 0.8, 1.01},
        {"gcn", "full", "adam", "1e-20", "60", 0.0, 0.6},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *log = tu_path("embed-learn.json");
        double s = TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--model",
                            cases[c].model, "--mode", cases[c].mode, "--embed-optimizer",
                            cases[c].opt, "--embed-lr", cases[c].lr, "--batch-size", "64",
                            "--epochs", cases[c].epochs, "--threads", "2", "--log-json",
                            (char *)log, "-q");
        log_summary_t r = check_log(log, 1, atoi(cases[c].epochs));
        print_message("featureless SBM, %s %s, rows by %s at lr %s: test accuracy %.4f (%.2f s)\n",
                      cases[c].model, cases[c].mode, cases[c].opt, cases[c].lr, r.test_acc, s);
        if (!(r.test_acc >= cases[c].lo && r.test_acc < cases[c].hi))
            fail_msg("test accuracy %.4f outside [%.2f, %.2f)", r.test_acc, cases[c].lo,
                     cases[c].hi);
    }
}

/*
 * --task link on the featureless SBM graph's held-out edges: GCN on the
 * whole graph (60 epochs) and GraphSAGE in edge mini-batches of 512 (30
 * epochs), dot decoder (chance: AUC 0.5). Measured test AUC 0.817 and
 * 0.742; with the rows kept at their initial values (--embed-lr 1e-20)
 * GCN reaches 0.631.
 */
static void test_embed_link_learns(void **state)
{
    (void)state;
    const char *data = nofeat_link_graph();
    static const struct {
        char *model, *mode, *lr, *epochs;
        double lo, hi;
    } cases[] = {
        {"gcn", "full", "0.01", "60", 0.75, 1.01},
        {"sage", "minibatch", "0.01", "30", 0.68, 1.01},
        {"gcn", "full", "1e-20", "60", 0.0, 0.7},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *log = (char *)tu_path("embed-link.json");
        double s = TRAIN_OK("--data", (char *)data, "--task", "link", "--embed-dim", "16",
                            "--model", cases[c].model, "--mode", cases[c].mode, "--embed-lr",
                            cases[c].lr, "--batch-size", "512", "--fanouts", "10,10", "--epochs",
                            cases[c].epochs, "--threads", "2", "--log-json", log, "-q");
        char *last = last_line(log);
        assert_true(json_true(last, "final"));
        double auc = tu_json_num(last, "test_auc");
        print_message("featureless SBM, link, %s %s, rows at lr %s: test AUC %.4f (%.2f s)\n",
                      cases[c].model, cases[c].mode, cases[c].lr, auc, s);
        free(last);
        if (!(auc >= cases[c].lo && auc < cases[c].hi))
            fail_msg("test AUC %.4f outside [%.2f, %.2f)", auc, cases[c].lo, cases[c].hi);
    }
}

/*
 * The device path on the CPU (cpu-as-gpu: every array in device buffers,
 * the rows gathered and stepped there) trains what the CPU trains, bit for
 * bit: the same per-epoch losses and the same checkpoint (model, table and
 * its optimiser state), for GCN on the whole graph (Adam's rows),
 * GraphSAGE mini-batches (Adagrad's) and edge mini-batches (Adam's).
 * GraphSAGE's node mini-batches also sampled on the device (--sampler
 * device, the rows gathered by the batch's ids there; with the table in
 * host memory by a host copy of the ids), sampled in the step and one
 * batch ahead: the same again.
 */
static void test_embed_cpu_as_gpu(void **state)
{
    (void)state;
    const char *link = nofeat_link_graph();
    static const struct {
        char *task, *model, *mode, *opt;
    } cases[] = {
        {"node", "gcn", "full", "adam"},
        {"node", "sage", "minibatch", "adagrad"},
        {"link", "sage", "minibatch", "adam"},
    };
    /* The table on the backend, and on cpu-as-gpu also in host memory
     * apart from the model's device (--embed-on host: rows staged through
     * host buffers, as a GPU without room for the table runs). */
    static char *const devices[6] = {"cpu", "cpu-as-gpu", "cpu-as-gpu",
                                     "cpu-as-gpu", "cpu-as-gpu", "cpu"};
    static char *const places[6] = {"auto", "device", "host", "device", "host", "auto"};
    static char *const samplers[6] = {"host", "host", "host", "device", "device", "device"};
    static char *const prefetch[6] = {"0", "0", "0", "0", "2", "2"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        double loss[6][8];
        char *ck[6];
        /* the device sampler for node mini-batches */
        const int nd = !strcmp(cases[c].task, "node") && !strcmp(cases[c].mode, "minibatch") ? 6 : 3;
        for (int d = 0; d < nd; d++) {
            char name[32], lname[32];
            snprintf(name, sizeof name, "embed-dev-%d.h5", d);
            snprintf(lname, sizeof lname, "embed-dev-%d.json", d);
            ck[d] = strdup(tu_path(name));
            const char *log = tu_path(lname);
            unlink(ck[d]);
            TRAIN_OK("--data", !strcmp(cases[c].task, "link") ? (char *)link : (char *)g_nofeat,
                     "--task", cases[c].task, "--model", cases[c].model, "--mode", cases[c].mode,
                     "--embed-dim", "16", "--embed-optimizer", cases[c].opt, "--batch-size",
                     "256", "--fanouts", "6,4", "--epochs", "5", "--device", devices[d],
                     "--embed-on", places[d], "--threads", "2", "--checkpoint", ck[d],
                     "--log-json", (char *)log, "--sampler", samplers[d], "--prefetch",
                     prefetch[d], "-q");
            assert_int_equal(log_losses(log, loss[d], 8), 5);
        }
        print_message("%s, %s %s, %s rows: epoch 5 loss %.9g on cpu, %.9g on cpu-as-gpu, %.9g "
                      "with the rows in host memory\n",
                      cases[c].task, cases[c].model, cases[c].mode, cases[c].opt, loss[0][4],
                      loss[1][4], loss[2][4]);
        if (nd > 3)
            print_message("  sampled on the device: %.9g (rows on it), %.9g (rows in host "
                          "memory, one batch ahead), %.9g (cpu, one batch ahead)\n",
                          loss[3][4], loss[4][4], loss[5][4]);
        for (int d = 1; d < nd; d++) {
            assert_memory_equal(loss[0], loss[d], 5 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[d]);
            assert_embed_tables_equal(ck[0], ck[d]);
        }
        for (int d = 0; d < nd; d++) free(ck[d]);
    }
}

/*
 * --embed all on a graph with features: each node's input is its 8
 * features followed by its 8-wide learnable row, so the checkpoint records
 * an input width of 16 beside embed_dim 8 and embed_all 1, and a table of
 * 3000 x 8; --save-embeddings writes the rows alone (3000 x 8). It learns
 * the 4-class SBM graph (measured 94.7 %; 93.3 % on the features alone).
 */
static void test_embed_all(void **state)
{
    (void)state;
    char *ck = (char *)tu_path("embed-all.h5"), *emb = (char *)tu_path("embed-all-emb.h5");
    const char *log = tu_path("embed-all.json");
    unlink(ck);
    TRAIN_OK("--data", (char *)g_sbm_easy, "--embed", "all", "--embed-dim", "8", "--epochs", "30",
             "--threads", "2", "--checkpoint", ck, "--save-embeddings", emb, "--log-json",
             (char *)log, "-q");
    log_summary_t r = check_log(log, 1, 30);
    print_message("--embed all on the 4-class SBM graph: test accuracy %.4f\n", r.test_acc);
    assert_true(r.test_acc >= 0.85);
    assert_int_equal(h5_attr_i64(ck, "version"), 8);
    assert_int_equal(h5_attr_i64(ck, "in_dim"), 8 + 8);
    assert_int_equal(h5_attr_i64(ck, "embed_dim"), 8);
    assert_int_equal(h5_attr_i64(ck, "embed_all"), 1);
    assert_int_equal(h5_attr_i64(ck, "embed_rows"), 3000);
    char opt[32] = "";
    h5_attr_str(ck, "embed_opt", opt, sizeof opt);
    assert_string_equal(opt, "adam");
    int64_t n = 0;
    float *w = h5_read_f32(ck, "embed", &n);
    assert_int_equal(n, 3000 * 8);
    free(w);
    float *x = NULL;
    hsize_t d[2];
    assert_int_equal(h5_read(emb, "input_embedding", H5T_NATIVE_FLOAT, (void **)&x, d), 2);
    assert_true(d[0] == 3000 && d[1] == 8);
    free(x);
    assert_int_equal(h5_read(emb, "embedding", H5T_NATIVE_FLOAT, (void **)&x, d), 2);
    assert_true(d[0] == 3000 && d[1] == 4);
    free(x);
    /* Without --embed-dim the same graph has no rows: no such dataset. */
    char *plain = (char *)tu_path("embed-none-emb.h5");
    TRAIN_OK("--data", (char *)g_sbm_easy, "--epochs", "1", "--threads", "2",
             "--save-embeddings", plain, "-q");
    assert_false(h5_has(plain, "input_embedding"));
    /* Features beside rows kept in host memory apart from the device
     * (cpu-as-gpu, --embed-on host), mini-batches with layer-wise
     * inference: the losses and metrics of the CPU. */
    double loss[2][4];
    static char *const devices[2] = {"cpu", "cpu-as-gpu"};
    for (int k = 0; k < 2; k++) {
        char lname[32];
        snprintf(lname, sizeof lname, "embed-all-host-%d.json", k);
        const char *l = tu_path(lname);
        TRAIN_OK("--data", (char *)g_sbm_easy, "--embed", "all", "--embed-dim", "8", "--model",
                 "sage", "--mode", "minibatch", "--fanouts", "4,4", "--epochs", "3", "--threads",
                 "2", "--device", devices[k], "--embed-on", "host", "--log-json", (char *)l,
                 "-q");
        assert_int_equal(log_losses(l, loss[k], 4), 3);
    }
    assert_memory_equal(loss[0], loss[1], 3 * sizeof(double));
}

/*
 * What --embed-dim refuses, each with one line, its status and no output
 * written: a graph without features and no --embed-dim (status 1, pointing
 * to --embed-dim, in both tasks); --embed-dim on a graph with features
 * without --embed all, --embed, --embed-lr or --embed-optimizer without
 * --embed-dim, an unknown optimiser or --embed value, a width out of
 * range, a negative learning rate, and --sparse-features on (status 2); a
 * table larger than the memory there is (status 1, before training, with
 * its size: 30000 rows of 2^20, 4 bytes a value plus Adam's two moments
 * and the best epoch's copy, 468.75 GiB; Adagrad's one sum, 351.56 GiB).
 */
static void test_embed_refusals(void **state)
{
    (void)state;
    char *out = (char *)tu_path("embed-bad.h5");
    char *nf = (char *)g_nofeat, *f = (char *)g_sbm;
    const char *want_dim = "has no node features: give its nodes learnable input rows with "
                           "--embed-dim D";
    train_fails(out, 1, want_dim, "--data", nf, "--save-predictions", out, (char *)NULL);
    train_fails(out, 1, want_dim, "--data", nf, "--model", "sage", "--mode", "minibatch",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 1, want_dim, "--data", (char *)nofeat_link_graph(), "--task", "link",
                "--save-embeddings", out, (char *)NULL);
    /* Default --embed (featureless) on a graph whose every node has features. */
    const char *want_all = "has features, so none is featureless (--embed all gives every node "
                           "a learnable row beside its features)";
    train_fails(out, 2, want_all, "--data", f, "--embed-dim", "8", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, want_all, "--data", f, "--embed-dim", "8", "--embed", "featureless",
                "--model", "sage", "--mode", "minibatch", "--save-predictions", out,
                (char *)NULL);
    const char *want_need =
        "--embed, --embed-lr, --embed-optimizer and --embed-on need --embed-dim D";
    train_fails(out, 2, want_need, "--data", f, "--embed", "all", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, want_need, "--data", nf, "--embed-lr", "0.1", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, want_need, "--data", nf, "--embed-optimizer", "adagrad",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, want_need, "--data", nf, "--embed-on", "host", "--save-predictions",
                out, (char *)NULL);
    train_fails(out, 2, "--embed-on \"disk\" (expected auto, device or host)", "--data", nf,
                "--embed-dim", "8", "--embed-on", "disk", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "--embed-optimizer \"sgd\" (expected adam or adagrad)", "--data", nf,
                "--embed-dim", "8", "--embed-optimizer", "sgd", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "--embed \"some\" (expected featureless or all)", "--data", nf,
                "--embed-dim", "8", "--embed", "some", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--embed-dim -1 outside [1, 2^20]", "--data", nf, "--embed-dim", "-1",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--embed-dim 1048577 outside [1, 2^20]", "--data", nf, "--embed-dim",
                "1048577", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--embed-lr -1 outside", "--data", nf, "--embed-dim", "8", "--embed-lr",
                "-1", "--save-predictions", out, (char *)NULL);
    const char *want_sparse = "--sparse-features on: not with --embed-dim";
    train_fails(out, 2, want_sparse, "--data", nf, "--embed-dim", "8", "--sparse-features", "on",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, want_sparse, "--data", (char *)g_sbm, "--embed", "all", "--embed-dim", "8",
                "--sparse-features", "on", "--save-predictions", out, (char *)NULL);

    /* A table no machine holds, refused with its size before training. */
    char *big = (char *)tu_path("embed-big.h5");
    DATASET_OK("generate", "sbm", "-n", "30000", "-c", "4", "-f", "0", "-d", "4", "-o", big,
               "--force", "-q");
    const char *log = tu_path("embed-big.json");
    unlink(log);
    char *argv[] = {g_train, "--data", big, "--embed-dim", "1048576", "--threads", "2",
                    "--save-predictions", out, "--log-json", (char *)log, NULL};
    double t0 = now_s();
    tu_expect_failure(argv, out, 1,
                      "--embed-dim 1048576: the table of 30000 rows needs 468.75 GiB (16777216 "
                      "bytes a row: values, adam state and the best epoch's copy), cpu");
    double s = now_s() - t0;
    tu_run_t r = tu_run(argv);
    const char *has = strstr(r.err, "GiB available");
    const char *at = has ? strstr(r.err, "), cpu") : NULL;
    double avail = -1.0;
    if (at) {
        const char *p = strstr(at, " has ");
        if (p) avail = strtod(p + 5, NULL);
    }
    print_message("--embed-dim 1048576 on 30000 nodes refused after %.2f s: %s", s, r.err);
    if (!(avail >= 0.0 && avail < 468.75)) fail_msg("no available size below the need: %s", r.err);
    tu_run_free(&r);
    char *text = tu_read_file(log); /* refused before the first epoch */
    assert_true(!text || !strstr(text, "\"epoch\""));
    free(text);
    char *emb = (char *)tu_path("embed-big-emb.h5");
    train_fails(emb, 1, "the table of 30000 rows needs 351.56 GiB (12582912 bytes a row: values, "
                        "adagrad state and the best epoch's copy)",
                "--data", big, "--embed-dim", "1048576", "--embed-optimizer", "adagrad",
                "--model", "sage", "--mode", "minibatch", "--save-embeddings", emb, (char *)NULL);
    /* Without an output or checkpoint there is no best epoch's copy. */
    train_fails(NULL, 1, "the table of 30000 rows needs 234.38 GiB (8388608 bytes a row: values, "
                         "adagrad state)",
                "--data", big, "--embed-dim", "1048576", "--embed-optimizer", "adagrad",
                (char *)NULL);
    unlink(big);
}

/*
 * 6 epochs in one go, or 3 and then --resume to 6, give the same losses
 * for epochs 4-6 and end with the same checkpoint, bit for bit: model,
 * Adam's moments, the table, its optimiser's state (Adam's two moments or
 * Adagrad's sums) and step count and the best epoch's rows; for GCN on the
 * whole graph and GraphSAGE mini-batches, each with both optimisers.
 * Resuming with another width, optimiser or learning rate of the rows, or
 * with rows that the checkpoint's job had not, is refused.
 */
static void test_embed_resume(void **state)
{
    (void)state;
    static char *const models[2][4] = {{"gcn", "full", "1024", "10,10"},
                                       {"sage", "minibatch", "64", "6,4"}};
    static char *const opts[2] = {"adam", "adagrad"};
    char *a = (char *)tu_path("embed-whole.h5"), *b = (char *)tu_path("embed-parts.h5");
    char *la = (char *)tu_path("embed-whole.json"), *lb = (char *)tu_path("embed-parts.json");
    for (int m = 0; m < 2; m++)
        for (int o = 0; o < 2; o++) {
            unlink(a);
            unlink(b);
            unlink(la);
            unlink(lb);
#define EMBED_RESUME_ARGS                                                                        \
    "--data", (char *)g_nofeat, "--embed-dim", "16", "--embed-optimizer", opts[o], "--model",   \
        models[m][0], "--mode", models[m][1], "--batch-size", models[m][2], "--fanouts",        \
        models[m][3], "--threads", "2"
            TRAIN_OK(EMBED_RESUME_ARGS, "--epochs", "6", "--checkpoint", a, "--log-json", la,
                     "-q");
            TRAIN_OK(EMBED_RESUME_ARGS, "--epochs", "3", "--checkpoint", b, "-q");
            assert_int_equal(h5_attr_i64(b, "epoch"), 3);
            TRAIN_OK(EMBED_RESUME_ARGS, "--epochs", "6", "--checkpoint", b, "--resume",
                     "--log-json", lb, "-q");
#undef EMBED_RESUME_ARGS
            double whole[8], rest[8];
            assert_int_equal(log_losses(la, whole, 8), 6);
            assert_int_equal(log_losses(lb, rest, 8), 3);
            print_message("%s %s, %s rows: epoch 6 loss %.9g in one go, %.9g resumed at 3\n",
                          models[m][0], models[m][1], opts[o], whole[5], rest[2]);
            assert_memory_equal(whole + 3, rest, 3 * sizeof(double));
            assert_int_equal(h5_attr_i64(b, "epoch"), 6);
            assert_checkpoints_equal(a, b);
            assert_embed_tables_equal(a, b);
            char opt[32] = "";
            h5_attr_str(b, "embed_opt", opt, sizeof opt);
            assert_string_equal(opt, opts[o]);
            assert_int_equal(h5_attr_i64(b, "embed_dim"), 16);
            assert_int_equal(h5_attr_i64(b, "embed_rows"), 2000);
            assert_true(h5_attr_i64(b, "embed_step") > 0);
            int64_t n = 0;
            float *s2 = h5_read_f32(b, "embed_state2", &n);
            assert_int_equal(n, o == 0 ? 2000 * 16 : 0); /* Adagrad keeps one array */
            free(s2);
        }
    /* Another job's rows (b: GraphSAGE mini-batches, Adagrad). */
    char *d = (char *)g_nofeat;
#define EMBED_REFUSE_ARGS                                                                        \
    "--data", d, "--model", "sage", "--mode", "minibatch", "--batch-size", "64", "--fanouts",  \
        "6,4", "--epochs", "8", "--checkpoint", b, "--resume", "-q"
    train_fails(NULL, 1, "--embed-dim is 16 in the checkpoint but 8 now", EMBED_REFUSE_ARGS,
                "--embed-dim", "8", "--embed-optimizer", "adagrad", (char *)NULL);
    train_fails(NULL, 1, "--embed-optimizer is adagrad in the checkpoint but adam now",
                EMBED_REFUSE_ARGS, "--embed-dim", "16", (char *)NULL);
    train_fails(NULL, 1, "--embed-lr is 0.01 in the checkpoint but 0.1 now", EMBED_REFUSE_ARGS,
                "--embed-dim", "16", "--embed-optimizer", "adagrad", "--embed-lr", "0.1",
                (char *)NULL);
#undef EMBED_REFUSE_ARGS
    char *plain = (char *)tu_path("embed-plain.h5");
    unlink(plain);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "2", "--threads", "2", "--checkpoint", plain,
             "-q");
    train_fails(NULL, 1, "--embed-dim is 0 in the checkpoint but 4 now", "--data",
                (char *)g_sbm, "--embed", "all", "--embed-dim", "4", "--epochs", "4",
                "--checkpoint", plain, "--resume", "-q", (char *)NULL);
}

/*
 * --save-embeddings with learnable rows: beside the last layer's output
 * ("embedding", nodes x classes) and node_id, "input_embedding" holds
 * every node's row (nodes x D) of the best epoch. With --epochs 0 these
 * are the initial rows: uniform in [-1/sqrt(D), 1/sqrt(D)] (D = 16:
 * 0.25), drawn from the seed (the same seed draws the same rows, another
 * seed others). After 8 epochs most rows have moved (measured: 94.8 %;
 * nodes whose rows no training node's loss reads keep theirs), and they
 * are the checkpoint's copy of the best epoch's rows. A finished job
 * resumed writes the same file.
 */
static void test_embed_save(void **state)
{
    (void)state;
    const int64_t D = 16;
    const float bound = 0.25f;
    char *e0 = (char *)tu_path("emb-in-0.h5"), *e0b = (char *)tu_path("emb-in-0b.h5");
    char *e1 = (char *)tu_path("emb-in-seed1.h5"), *e8 = (char *)tu_path("emb-in-8.h5");
    char *e8b = (char *)tu_path("emb-in-8b.h5"), *ck = (char *)tu_path("emb-in-8.h5.ck");
    unlink(ck);
    TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--epochs", "0", "--threads", "2",
             "--save-embeddings", e0, "-q");
    TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--epochs", "0", "--threads", "2",
             "--save-embeddings", e0b, "-q");
    TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--epochs", "0", "--seed", "1",
             "--threads", "2", "--save-embeddings", e1, "-q");
    TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--epochs", "8", "--threads", "2",
             "--checkpoint", ck, "--save-embeddings", e8, "-q");

    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(g_nofeat, &g), 0);
    int64_t n = g.csr.n_rows;
    assert_int_equal(n, 2000);
    float *x0, *x1, *x8, *z;
    int64_t *ids;
    hsize_t d[2];
    assert_int_equal(h5_read(e0, "input_embedding", H5T_NATIVE_FLOAT, (void **)&x0, d), 2);
    assert_true((int64_t)d[0] == n && (int64_t)d[1] == D);
    assert_int_equal(h5_read(e0, "embedding", H5T_NATIVE_FLOAT, (void **)&z, d), 2);
    assert_true((int64_t)d[0] == n && d[1] == 4);
    free(z);
    assert_int_equal(h5_read(e0, "node_id", H5T_NATIVE_INT64, (void **)&ids, d), 1);
    assert_true((int64_t)d[0] == n);
    for (int64_t v = 0; v < n; v++) assert_int_equal(ids[v], g.orig_id ? g.orig_id[v] : v);
    free(ids);
    double lo = 1.0, hi = -1.0, sum = 0.0;
    for (int64_t i = 0; i < n * D; i++) {
        if (!(x0[i] >= -bound && x0[i] <= bound))
            fail_msg("initial row %lld, element %lld: %g outside [-%g, %g]", (long long)(i / D),
                     (long long)(i % D), (double)x0[i], (double)bound, (double)bound);
        lo = x0[i] < lo ? x0[i] : lo;
        hi = x0[i] > hi ? x0[i] : hi;
        sum += x0[i];
    }
    print_message("initial rows: %lld values in [%.5f, %.5f], mean %.5f\n", (long long)(n * D), lo,
                  hi, sum / (double)(n * D));
    /* Uniform over the whole range (32000 draws). */
    assert_true(lo < -0.24 && hi > 0.24 && fabs(sum / (double)(n * D)) < 0.01);
    assert_f32_set_equal(e0, e0b, "input_embedding");
    assert_int_equal(h5_read(e1, "input_embedding", H5T_NATIVE_FLOAT, (void **)&x1, d), 2);
    int64_t same = 0;
    for (int64_t i = 0; i < n * D; i++) same += x0[i] == x1[i];
    assert_true(same < n * D / 100);
    free(x1);

    assert_int_equal(h5_read(e8, "input_embedding", H5T_NATIVE_FLOAT, (void **)&x8, d), 2);
    assert_true((int64_t)d[0] == n && (int64_t)d[1] == D);
    int64_t moved = 0;
    for (int64_t v = 0; v < n; v++) moved += memcmp(x0 + v * D, x8 + v * D, D * sizeof(float)) != 0;
    print_message("after 8 epochs %lld of %lld rows moved (best epoch %lld)\n", (long long)moved,
                  (long long)n, (long long)h5_attr_i64(ck, "best_epoch"));
    assert_true(moved >= n * 8 / 10);
    int64_t m = 0;
    float *best = h5_read_f32(ck, "embed_best", &m);
    assert_int_equal(m, n * D);
    assert_memory_equal(best, x8, (size_t)(n * D) * sizeof(float));
    free(best);
    assert_int_equal(h5_read(e8, "node_id", H5T_NATIVE_INT64, (void **)&ids, d), 1);
    for (int64_t v = 0; v < n; v++) assert_int_equal(ids[v], g.orig_id ? g.orig_id[v] : v);
    free(ids);
    free(x0);
    free(x8);
    gnn_graph_free(&g);

    TRAIN_OK("--data", (char *)g_nofeat, "--embed-dim", "16", "--epochs", "8", "--threads", "2",
             "--checkpoint", ck, "--resume", "--save-embeddings", e8b, "-q");
    assert_f32_set_equal(e8, e8b, "input_embedding");
    assert_f32_set_equal(e8, e8b, "embedding");
}

/* ---- R-GCN on a typed graph ------------------------------------------------ */

/*
 * The test accuracy (--eval-every E: evaluated once, after the last
 * epoch) of gnn-train on g_hsbm with the arguments that follow
 * (NULL-terminated), for E epochs; prints it with what and
 * the time taken.
 */
static double hsbm_accuracy(const char *what, char *epochs, ...)
{
    char *argv[TU_MAX_ARGS];
    const char *log = tu_path("hsbm-acc.json");
    int n = 0;
    char *head[] = {g_train, "--data", (char *)g_hsbm, "--epochs", epochs, "--eval-every", epochs,
                    "--lr", HSBM_LR, "--hidden", HSBM_HIDDEN, "--threads", "2", "--log-json",
                    (char *)log, "-q"};
    for (size_t i = 0; i < sizeof head / sizeof head[0]; i++) argv[n++] = head[i];
    va_list ap;
    va_start(ap, epochs);
    for (char *a; (a = va_arg(ap, char *)) != NULL;) {
        assert_true(n < TU_MAX_ARGS - 1);
        argv[n++] = a;
    }
    va_end(ap);
    argv[n] = NULL;
    double t0 = now_s();
    free(tu_run_ok_argv(argv));
    double s = now_s() - t0;
    char *last = last_line(log);
    assert_true(json_true(last, "final"));
    double acc = tu_json_num(last, "test_acc");
    free(last);
    assert_true(acc >= 0.0 && acc <= 1.0);
    print_message("hsbm, %s: test accuracy %.4f after %s epochs (%.2f s)\n", what, acc, epochs, s);
    return acc;
}

/*
 * The typed graph's labels (node type t0) can be read only through its
 * relations: gcn, which ignores them, cannot tell a class from its
 * partner and reaches 49.4 % (47.3-55.7 % over the generator's seeds 1-10
 * with these settings), while R-GCN must beat it by at least 25 points
 * with a weight per relation, with 2 bases, and on mini-batches with 10
 * neighbours per relation and hop (measured 88.4 %, 87.7 % and 89.4 %;
 * the smallest margins over seeds 1-10: 33.2, 31.9 and 33.3 points). The
 * sanitizer build trains 3 epochs of each and checks that they end.
 */
static void test_rgcn_beats_gcn(void **state)
{
    (void)state;
    double gcn = hsbm_accuracy("gcn", HSBM_EPOCHS, "--model", "gcn", (char *)NULL);
    static const struct {
        const char *what;
        char *args[10];
    } cases[] = {
        {"rgcn", {"--model", "rgcn", NULL}},
        {"rgcn, 2 bases", {"--model", "rgcn", "--num-bases", "2", NULL}},
        {"rgcn, mini-batches", {"--model", "rgcn", "--mode", "minibatch", "--fanouts", "10,10",
                                "--batch-size", "256", NULL}},
    };
    int bad = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char *const *a = cases[c].args;
        double acc = hsbm_accuracy(cases[c].what, HSBM_EPOCHS, a[0], a[1], a[2], a[3], a[4], a[5],
                                   a[6], a[7], a[8], a[9]);
        if (!SANITIZED && !(acc >= gcn + 0.25)) {
            print_message("%s: test accuracy %.4f, less than gcn's %.4f + 25 points\n",
                          cases[c].what, acc, gcn);
            bad++;
        }
    }
    if (bad) fail_msg("%d R-GCN runs less than 25 points above gcn", bad);
}

/*
 * The device path on the CPU (cpu-as-gpu) trains R-GCN as the CPU does,
 * bit for bit: the same per-epoch losses and checkpoints on the whole
 * graph and on mini-batches (fanouts per relation), with 2 bases, the
 * mini-batches also sampled on the device (--sampler device: typed draws
 * there, one batch ahead on cpu-as-gpu, in the step on the CPU backend);
 * the whole graph's step is captured (under a GPU capture's rules) and
 * replayed from epoch 3.
 */
static void test_rgcn_cpu_as_gpu(void **state)
{
    (void)state;
    static char *const modes[2] = {"full", "minibatch"};
    static char *const devices[4][3] = {{"cpu", "host", "1"},
                                        {"cpu-as-gpu", "host", "1"},
                                        {"cpu-as-gpu", "device", "1"},
                                        {"cpu", "device", "0"}};
    for (int m = 0; m < 2; m++) {
        double loss[4][8];
        char *ck[4];
        const int nd = m ? 4 : 2;
        for (int d = 0; d < nd; d++) {
            char name[32], lname[32];
            snprintf(name, sizeof name, "rgcn-dev-%d.h5", d);
            snprintf(lname, sizeof lname, "rgcn-dev-%d.json", d);
            ck[d] = strdup(tu_path(name));
            const char *log = tu_path(lname);
            unlink(ck[d]);
            TRAIN_OK("--data", (char *)g_hsbm, "--model", "rgcn", "--num-bases", "2", "--mode",
                     modes[m], "--fanouts", "5,5", "--batch-size", "256", "--epochs", "5",
                     "--device", devices[d][0], "--sampler", devices[d][1], "--prefetch",
                     devices[d][2], "--threads", "2", "--checkpoint", ck[d], "--log-json",
                     (char *)log, "-q");
            assert_int_equal(log_losses(log, loss[d], 8), 5);
            if (m == 0 && d == 1) { /* the whole graph's step captured under a GPU's rules */
                char steps[5][16];
                assert_int_equal(log_steps(log, steps, 5), 5);
                for (int e = 0; e < 5; e++) {
                    const char *want = e == 0 ? "queued" : e == 1 ? "captured" : "replayed";
                    if (strcmp(steps[e], want))
                        fail_msg("rgcn on cpu-as-gpu: epoch %d's step %s, expected %s", e + 1,
                                 steps[e], want);
                }
            }
        }
        print_message("rgcn, %s: epoch 5 loss %.9g on cpu, %.9g on cpu-as-gpu\n", modes[m],
                      loss[0][4], loss[1][4]);
        for (int d = 1; d < nd; d++) {
            assert_memory_equal(loss[0], loss[d], 5 * sizeof(double));
            assert_checkpoints_equal(ck[0], ck[d]);
        }
        for (int d = 0; d < nd; d++) free(ck[d]);
    }
}

/*
 * --rgcn-order: R-GCN's two orders of the same sums (the products first,
 * or the per-relation means first) train alike: per-epoch losses within
 * 1e-5 relative of each other and of auto's, on mini-batches (where auto
 * aggregates first on the blocks it pays on) and on the whole graph; the
 * device path (cpu-as-gpu) aggregating first gives the CPU's losses bit
 * for bit.
 */
static void test_rgcn_orders(void **state)
{
    (void)state;
    static char *const modes[2] = {"minibatch", "full"};
    static char *const orders[3] = {"auto", "transform-first", "aggregate-first"};
    for (int m = 0; m < 2; m++) {
        double loss[4][8];
        for (int o = 0; o < 4; o++) {
            char lname[48];
            snprintf(lname, sizeof lname, "rgcn-order-%d.json", o);
            const char *log = tu_path(lname);
            TRAIN_OK("--data", (char *)g_hsbm, "--model", "rgcn", "--mode", modes[m], "--fanouts",
                     "5,5", "--batch-size", "256", "--epochs", "5", "--rgcn-order",
                     orders[o < 3 ? o : 2], "--device", o < 3 ? "cpu" : "cpu-as-gpu",
                     "--threads", "2", "--log-json", (char *)log, "-q");
            assert_int_equal(log_losses(log, loss[o], 8), 5);
        }
        print_message("rgcn, %s, epoch 5 loss: auto %.9g, transform-first %.9g, aggregate-first "
                      "%.9g (cpu-as-gpu %.9g)\n",
                      modes[m], loss[0][4], loss[1][4], loss[2][4], loss[3][4]);
        for (int o = 1; o < 3; o++)
            for (int e = 0; e < 5; e++)
                if (!(fabs(loss[o][e] - loss[0][e]) <= 1e-5 * fabs(loss[0][e])))
                    fail_msg("rgcn, %s, --rgcn-order %s: epoch %d loss %.9g, auto's %.9g", modes[m],
                             orders[o], e + 1, loss[o][e], loss[0][e]);
        assert_memory_equal(loss[2], loss[3], 5 * sizeof(double));
        /* auto aggregates first on this graph's mini-batch blocks: its
         * losses are rounded as aggregate-first's, not transform-first's */
        if (m == 0 && !memcmp(loss[0], loss[1], 5 * sizeof(double)))
            fail_msg("rgcn, mini-batches: --rgcn-order auto gave transform-first's losses bit "
                     "for bit (it never aggregated first)");
    }
}

/*
 * R-GCN's refusals, one line each and no output: a graph without types
 * (naming format version 2, status 1), more bases than the graph's 5
 * relations, bases for another model, a basis count out of range, an
 * unknown --rgcn-order and one for another model (status 2).
 */
static void test_rgcn_refusals(void **state)
{
    (void)state;
    char *out = (char *)tu_path("rgcn-bad.h5"), want[1024];
    snprintf(want, sizeof want, "%s: --model rgcn needs a graph with node types and relations "
                                "(format version 2", g_sbm);
    train_fails(out, 1, want, "--data", (char *)g_sbm, "--model", "rgcn", "--save-predictions",
                out, (char *)NULL);
    train_fails(out, 1, want, "--data", (char *)g_sbm, "--model", "rgcn", "--mode", "minibatch",
                "--save-predictions", out, (char *)NULL);
    snprintf(want, sizeof want, "--num-bases 6: %s has only 5 relations", g_hsbm);
    train_fails(out, 2, want, "--data", (char *)g_hsbm, "--model", "rgcn", "--num-bases", "6",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--num-bases: only for --model rgcn", "--data", (char *)g_hsbm,
                "--model", "gcn", "--num-bases", "2", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--num-bases 257 outside [0, 256]", "--data", (char *)g_hsbm, "--model",
                "rgcn", "--num-bases", "257", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2,
                "--rgcn-order \"sum-first\" (expected auto, transform-first or aggregate-first)",
                "--data", (char *)g_hsbm, "--model", "rgcn", "--rgcn-order", "sum-first",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--rgcn-order: only for --model rgcn", "--data", (char *)g_hsbm,
                "--model", "gcn", "--rgcn-order", "aggregate-first", "--save-predictions", out,
                (char *)NULL);
}

/*
 * Learnable rows for the featureless type of a typed graph (hsbm with
 * --featureless 1: t2, whose features carry the partner classes, has
 * none): refused without --embed-dim (naming the type); with it, R-GCN
 * learns the rows: at least 8 points above the same run with the rows
 * frozen (--embed-lr 1e-20); mini-batches with every neighbour give the
 * full graph's per-epoch losses (dropout by node id), cpu-as-gpu the
 * CPU's bit for bit (also sampled on the device, and with the table in
 * host memory beside the device: --embed-on host), a resumed run the
 * uninterrupted one's checkpoint;
 * --save-embeddings holds the learned rows of t2's nodes and zeros for the
 * others. Sanitized: a few epochs, the equalities only.
 */
static void test_rgcn_featureless(void **state)
{
    (void)state;
    char *g = (char *)tu_path("hsbm-featureless.h5");
    run_ok(g_dataset, "generate", "hsbm", "-n", HSBM_NODES, "--featureless", "1", "-s", "2", "-o",
           g, "--force", "-q", (char *)NULL);
    char want[512];
    snprintf(want, sizeof want, "%s: node type t2 has no features: give it learnable input rows "
                                "with --embed-dim D", g);
    train_fails(NULL, 1, want, "--data", g, "--model", "rgcn", "--epochs", "1", (char *)NULL);
    /* Learned against frozen. */
    if (!SANITIZED) {
        double acc[2];
        for (int frozen = 0; frozen < 2; frozen++) {
            const char *log = tu_path("featureless.json");
            TRAIN_OK("--data", g, "--model", "rgcn", "--embed-dim", "16", "--epochs", "100",
                     "--lr", HSBM_LR, "--hidden", HSBM_HIDDEN, "--threads", "2", "--embed-lr",
                     frozen ? "1e-20" : "0.05", "--log-json", (char *)log, "-q");
            char *last = last_line(log);
            acc[frozen] = tu_json_num(last, "test_acc");
            free(last);
        }
        print_message("hsbm, t2 featureless: rgcn %.4f with learned rows, %.4f frozen\n", acc[0],
                      acc[1]);
        if (!(acc[0] >= acc[1] + 0.08))
            fail_msg("learned rows %.4f, not 8 points above frozen %.4f", acc[0], acc[1]);
    }
    /* Full graph, mini-batches with every neighbour, cpu-as-gpu, resume. */
    static const struct {
        char *mode, *device, *sampler, *embed_on;
    } runs[6] = {{"full", "cpu", "host", "auto"},
                 {"minibatch", "cpu", "host", "auto"},
                 {"full", "cpu-as-gpu", "host", "auto"},
                 {"minibatch", "cpu-as-gpu", "device", "auto"},
                 {"full", "cpu-as-gpu", "host", "host"},
                 {"minibatch", "cpu-as-gpu", "device", "host"}};
    double loss[6][8];
    char *ck[6];
    for (int r = 0; r < 6; r++) {
        char name[32], lname[32];
        snprintf(name, sizeof name, "fl-ck-%d.h5", r);
        snprintf(lname, sizeof lname, "fl-%d.json", r);
        ck[r] = strdup(tu_path(name));
        unlink(ck[r]);
        TRAIN_OK("--data", g, "--model", "rgcn", "--embed-dim", "16", "--mode", runs[r].mode,
                 "--fanouts", "-1,-1", "--batch-size", "100000", "--device", runs[r].device,
                 "--sampler", runs[r].sampler, "--embed-on", runs[r].embed_on, "--epochs", "6",
                 "--threads", "2",
                 "--checkpoint", ck[r], "--log-json",
                 (char *)tu_path(lname), "-q");
        assert_int_equal(log_losses(tu_path(lname), loss[r], 8), 6);
    }
    for (int e = 0; e < 6; e++)
        if (fabs(loss[1][e] - loss[0][e]) > 1e-5 * fabs(loss[0][e]))
            fail_msg("epoch %d: mini-batch loss %.9g, full graph %.9g", e + 1, loss[1][e],
                     loss[0][e]);
    assert_memory_equal(loss[0], loss[2], 6 * sizeof(double));
    assert_checkpoints_equal(ck[0], ck[2]);
    /* the mini-batches sampled on the device: the host sampler's */
    assert_memory_equal(loss[1], loss[3], 6 * sizeof(double));
    assert_checkpoints_equal(ck[1], ck[3]);
    /* the table in host memory beside the device (--embed-on host): the same */
    assert_memory_equal(loss[0], loss[4], 6 * sizeof(double));
    assert_checkpoints_equal(ck[0], ck[4]);
    assert_memory_equal(loss[1], loss[5], 6 * sizeof(double));
    assert_checkpoints_equal(ck[1], ck[5]);
    char *b = (char *)tu_path("fl-resumed.h5");
    unlink(b);
    TRAIN_OK("--data", g, "--model", "rgcn", "--embed-dim", "16", "--epochs", "4", "--threads",
             "2", "--checkpoint", b, "-q");
    TRAIN_OK("--data", g, "--model", "rgcn", "--embed-dim", "16", "--epochs", "6", "--threads",
             "2", "--checkpoint", b, "--resume", "-q");
    assert_checkpoints_equal(ck[0], b);
    /* The learned rows by node: t2's nonzero, the others zero. */
    char *emb = (char *)tu_path("fl-emb.h5");
    unlink(emb);
    TRAIN_OK("--data", g, "--model", "rgcn", "--embed-dim", "16", "--epochs", "3", "--threads",
             "2", "--save-embeddings", emb, "-q");
    gnn_graph_t gr;
    assert_int_equal(gnn_graph_load(g, &gr), 0);
    float *x;
    hsize_t d[2];
    assert_int_equal(h5_read(emb, "input_embedding", H5T_NATIVE_FLOAT, (void **)&x, d), 2);
    assert_int_equal(d[0], gr.csr.n_rows);
    assert_int_equal(d[1], 16);
    for (int64_t v = 0; v < gr.csr.n_rows; v++) {
        int t = gnn_graph_types_of(gr.types, v);
        double norm = 0;
        for (int k = 0; k < 16; k++) norm += fabs(x[v * 16 + k]);
        if (t == 2 ? !(norm > 0) : norm != 0)
            fail_msg("node %" PRId64 " of type t%d: input row of norm %g", v, t, norm);
    }
    free(x);
    gnn_graph_free(&gr);
    for (int r = 0; r < 6; r++) free(ck[r]);
}

/* ---- Predictions ---------------------------------------------------------- */

/* Train on graph and check the --save-predictions file: shapes, node ids
 * (the graph's original ids, else 0..n-1), pred = arg-max of the logits,
 * and the accuracy of pred on the test split = the reported test accuracy
 * (both come from the best-validation parameters). */
static void check_predictions(const char *graph, char *model, char *layers, char *hidden)
{
    char *out = (char *)tu_path("pred.h5"), *log = (char *)tu_path("pred.json");
    unlink(out);
    TRAIN_OK("--data", (char *)graph, "--model", model, "--layers", layers, "--hidden", hidden,
             "--epochs", "30", "--threads", "2", "--save-predictions", out, "--log-json", log,
             "-q");
    log_summary_t r = check_log(log, 1, 30);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(graph, &g), 0);
    int64_t n = g.csr.n_rows, C = g.num_classes, H = atoi(hidden);

    int64_t *ids, *pred;
    float *logits, *hid;
    hsize_t d[2];
    assert_int_equal(h5_read(out, "node_id", H5T_NATIVE_INT64, (void **)&ids, d), 1);
    assert_int_equal(d[0], n);
    assert_int_equal(h5_read(out, "pred", H5T_NATIVE_INT64, (void **)&pred, d), 1);
    assert_int_equal(d[0], n);
    assert_int_equal(h5_read(out, "logits", H5T_NATIVE_FLOAT, (void **)&logits, d), 2);
    assert_int_equal(d[0], n);
    assert_int_equal(d[1], C);
    assert_int_equal(h5_read(out, "hidden", H5T_NATIVE_FLOAT, (void **)&hid, d), 2);
    assert_int_equal(d[0], n);
    assert_int_equal(d[1], H);

    for (int64_t v = 0; v < n; v++) {
        assert_int_equal(ids[v], g.orig_id ? g.orig_id[v] : v);
        assert_true(pred[v] >= 0 && pred[v] < C);
        const float *row = logits + v * C;
        for (int64_t c = 0; c < C; c++) {
            assert_true(isfinite(row[c]));
            if (row[c] > row[pred[v]]) fail_msg("node %lld: pred %lld but logit %lld is larger",
                                                (long long)v, (long long)pred[v], (long long)c);
        }
    }
    int nonzero = 0;
    for (int64_t i = 0; i < n * H; i++) {
        assert_true(isfinite(hid[i]) && hid[i] >= 0.0f); /* after ReLU */
        nonzero += hid[i] != 0.0f;
    }
    assert_true(nonzero > 0);
    int64_t right = 0, nt = g.split_size[GNN_SPLIT_TEST];
    for (int64_t i = 0; i < nt; i++) {
        int64_t v = g.split[GNN_SPLIT_TEST][i];
        right += pred[v] == g.label[v];
    }
    if (fabs((double)right / (double)nt - r.test_acc) > 1e-6)
        fail_msg("predictions score %lld / %lld on the test split; the log says %g",
                 (long long)right, (long long)nt, r.test_acc);
    free(ids);
    free(pred);
    free(logits);
    free(hid);
    gnn_graph_free(&g);
}

static void test_save_predictions(void **state)
{
    (void)state;
    check_predictions(g_orig, "gcn", "2", "16");
    check_predictions(g_sbm, "sage", "3", "24");
}

/* ---- Bad input ------------------------------------------------------------ */

static void test_bad_input(void **state)
{
    (void)state;
    char *el = (char *)tu_path("el.h5"), *rmat = (char *)tu_path("rmat.h5");
    char *nofeat = (char *)tu_path("nofeat.h5"), *nosplit = (char *)tu_path("nosplit.h5");
    char *out = (char *)tu_path("bad-pred.h5");
    const char *edges = tu_write_file("edges.txt", "10 20\n20 30\n30 10\n40 10\n");
    DATASET_OK("edgelist", (char *)edges, "-o", el, "--force", "-q");
    DATASET_OK("generate", "rmat", "--scale", "8", "-f", "8", "-o", rmat, "--force", "-q");
    DATASET_OK("generate", "sbm", "-n", "500", "-f", "0", "-o", nofeat, "--force", "-q");

    train_fails(out, 1, "has no labels", "--data", el, "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 1, "has no labels", "--data", rmat, "--save-predictions", out, (char *)NULL);
    train_fails(out, 1, "has no node features: give its nodes learnable input rows with "
                        "--embed-dim D",
                "--data", nofeat, "--save-predictions", out, (char *)NULL);
    train_fails(out, 1, "has no train split", "--data", nosplit, "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "unknown model \"gin\" (expected gcn, sage, gat or rgcn)", "--data",
                (char *)g_sbm, "--model", "gin",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--dropout 1.5 outside [0, 1)", "--data", (char *)g_sbm, "--dropout",
                "1.5", "--save-predictions", out, (char *)NULL);
    char *missing = (char *)tu_path("missing.h5");
    train_fails(out, 1, missing, "--data", missing, "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--resume needs --checkpoint FILE", "--data", (char *)g_sbm, "--resume",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--data FILE is required", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--data: empty file name", "--data", "", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "--aggr-plugin: empty file name", "--data", (char *)g_sbm,
                "--aggr-plugin", "", "--save-predictions", out, (char *)NULL);

    /* Options the run would not use, set to other than their defaults: a
     * warning each, and the run goes on. */
    char *warned[] = {g_train,          "--data", (char *)g_sbm, "--epochs", "1", "--fanouts",
                      "5,5",            "--heads", "4", "--checkpoint-every", "3", "--threads",
                      "1",              NULL};
    tu_run_t w = tu_run(warned);
    assert_int_equal(w.status, 0);
    const char *wants[] = {"warning: --fanouts and --batch-size: ignored by full-graph training",
                           "warning: --heads, --out-heads and --attn-dropout: ignored by --model "
                           "gcn",
                           "warning: --checkpoint-every: ignored without --checkpoint"};
    for (int k = 0; k < 3; k++)
        if (!w.err || !strstr(w.err, wants[k])) fail_msg("no '%s' in: %s", wants[k], w.err);
    if (strstr(w.err, "--normalize-features")) fail_msg("a normalization warning: %s", w.err);
    tu_run_free(&w);
    /* --normalize-features on signed features (g_sbm's: centroid plus
     * Gaussian noise): named, and the run goes on. */
    char *norm[] = {g_train, "--data", (char *)g_sbm, "--epochs", "1", "--threads", "1",
                    "--normalize-features", NULL};
    w = tu_run(norm);
    assert_int_equal(w.status, 0);
    const char *nw = "warning: --normalize-features divides each feature row by its sum, for "
                     "features that are not negative (word counts); 3000 of 3000 rows here have "
                     "negative entries";
    if (!w.err || !strstr(w.err, nw)) fail_msg("no '%s' in: %s", nw, w.err);
    tu_run_free(&w);

    /* --device cuda: refused where there is no GPU (or no CUDA in the
     * build), naming CUDA; where it runs, there is nothing to check. */
    char *argv[] = {g_train, "--data", (char *)g_sbm, "--device", "cuda", "--epochs", "1",
                    "--save-predictions", out, "-q", NULL};
    tu_run_t r = tu_run(argv);
    int ran = r.status == 0;
    tu_run_free(&r);
    if (ran) {
        print_message("--device cuda runs here: not checked\n");
        unlink(out);
    } else {
        tu_expect_failure(argv, out, 1, "CUDA");
    }
}

/* Values the command line holds as doubles but the model as floats, and
 * bounds of --threads and --device: bad command lines (status 2). */
static void test_option_ranges(void **state)
{
    (void)state;
    char *out = (char *)tu_path("range-pred.h5");
    train_fails(out, 2, "--threads 100000 outside [0, 4096]", "--data", (char *)g_sbm,
                "--threads", "100000", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--device gpu: expected cpu, cuda, cuda:N, auto or cpu-as-gpu", "--data",
                (char *)g_sbm, "--device", "gpu", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--device cuda:x", "--data", (char *)g_sbm, "--device", "cuda:x",
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--lr 1e+308 is outside the range of single precision", "--data",
                (char *)g_sbm, "--lr", "1e308", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--lr 1e-50 is outside the range of single precision", "--data",
                (char *)g_sbm, "--lr", "1e-50", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--weight-decay 1e+308 is beyond single precision", "--data",
                (char *)g_sbm, "--weight-decay", "1e308", "--save-predictions", out,
                (char *)NULL);
    train_fails(out, 2, "is 1 in single precision (must be below 1)", "--data", (char *)g_sbm,
                "--dropout", "0.9999999999", "--save-predictions", out, (char *)NULL);
    train_fails(out, 2, "--heads 64 x --hidden 1048576 is 67108864 columns, above 1048576",
                "--data", (char *)g_sbm, "--model", "gat", "--heads", "64", "--hidden",
                "1048576", "--save-predictions", out, (char *)NULL);
}

/* A training that diverges fails at the first epoch whose loss is not
 * finite, writing no predictions; features that are not finite are
 * refused at load, naming the node. */
static void test_not_finite(void **state)
{
    (void)state;
    char *out = (char *)tu_path("nan-pred.h5");
    const char *log = tu_path("nan.json");
    train_fails(out, 1, "loss is not finite at epoch 2 (lower --lr?)", "--data", (char *)g_sbm,
                "--lr", "1e30", "--eval-every", "0", "--epochs", "5", "--threads", "2",
                "--save-predictions", out, "--log-json", (char *)log, "-q", (char *)NULL);
    char *text = tu_read_file(log);
    assert_non_null(text);
    assert_null(strstr(text, "\"final\""));
    assert_null(strstr(text, "nan"));
    free(text);
    train_fails(out, 1, "loss is not finite at epoch", "--data", (char *)g_sbm, "--lr", "1e30",
                "--epochs", "5", "--threads", "2", "--save-predictions", out, "-q",
                (char *)NULL);
    train_fails(out, 1, "feature 5 of node 17 is nan", "--data", (char *)g_nan, "--epochs", "2",
                "--save-predictions", out, (char *)NULL);
}

/* --epochs 0 evaluates nothing: accuracies null, as with --eval-every 0,
 * and no accuracy printed. */
static void test_no_epochs(void **state)
{
    (void)state;
    const char *log = tu_path("zero.json");
    char *argv[] = {g_train, "--data", (char *)g_sbm, "--epochs", "0", "--runs", "2",
                    "--threads", "2", "--log-json", (char *)log, NULL};
    tu_run_t r = tu_run(argv);
    if (r.status != 0) tu_fail_cmd(argv, &r);
    if (strstr(r.err, "accuracy") || !strstr(r.err, "2 runs without evaluation"))
        fail_msg("--epochs 0 printed: %s", r.err);
    tu_run_free(&r);
    char *text = tu_read_file(log);
    assert_non_null(text);
    assert_int_equal(tu_count_lines(text), 1);
    assert_true(json_true(text, "final"));
    static const char *const keys[] = {"test_acc", "valid_acc", "test_acc_mean", "test_acc_std",
                                       "valid_acc_mean"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *v = tu_json_get(text, keys[k]);
        if (!v || strncmp(v, "null", 4)) fail_msg("%s is not null: %s", keys[k], text);
    }
    free(text);
}

/* A graph file with an empty valid or test split is refused, as one
 * without the split is. */
static void test_empty_splits(void **state)
{
    (void)state;
    char *out = (char *)tu_path("split-pred.h5");
    train_fails(out, 1, "the valid split is empty", "--data", (char *)g_novalid,
                "--save-predictions", out, (char *)NULL);
    train_fails(out, 1, "the test split is empty", "--data", (char *)g_notest,
                "--save-predictions", out, (char *)NULL);
}

/* No two options may name one file (status 2, every file as it was), and
 * an output in a directory that does not exist fails at once. */
static void test_output_paths(void **state)
{
    (void)state;
    char *ck = (char *)tu_path("paths-ck.h5");
    unlink(ck);
    TRAIN_OK("--data", (char *)g_sbm, "--epochs", "1", "--threads", "2", "--checkpoint", ck, "-q");
    struct stat g0, c0, g1, c1;
    assert_int_equal(stat(g_sbm, &g0), 0);
    assert_int_equal(stat(ck, &c0), 0);
    char dotted[700];
    snprintf(dotted, sizeof dotted, "%s/./%s", tu_tmpdir(), strrchr(g_sbm, '/') + 1);
    train_fails(NULL, 2, "--data", "--data", (char *)g_sbm, "--log-json", (char *)g_sbm,
                (char *)NULL);
    train_fails(NULL, 2, "name the same file", "--data", (char *)g_sbm, "--save-predictions",
                dotted, (char *)NULL);
    train_fails(NULL, 2, "--checkpoint", "--data", (char *)g_sbm, "--checkpoint", ck,
                "--resume", "--save-predictions", ck, (char *)NULL);
    char *fresh = (char *)tu_path("paths-new.h5");
    unlink(fresh);
    train_fails(fresh, 2, "name the same file", "--data", (char *)g_sbm, "--checkpoint", fresh,
                "--log-json", fresh, (char *)NULL);
    assert_int_equal(stat(g_sbm, &g1), 0);
    assert_int_equal(stat(ck, &c1), 0);
    assert_true(g0.st_size == g1.st_size && g0.st_mtime == g1.st_mtime);
    assert_true(c0.st_size == c1.st_size && c0.st_mtime == c1.st_mtime);

    char nodir[700];
    snprintf(nodir, sizeof nodir, "%s/nodir/p.h5", tu_tmpdir());
    const char *log = tu_path("paths.json");
    train_fails(NULL, 1, "--save-predictions", "--data", (char *)g_sbm, "--save-predictions",
                nodir, "--log-json", (char *)log, (char *)NULL);
    char *text = tu_read_file(log);
    assert_true(!text || !strstr(text, "\"final\""));
    free(text);
    char nodir_msg[1500];
    snprintf(nodir_msg, sizeof nodir_msg, "--checkpoint %s: directory %s/nodir does not exist",
             nodir, tu_tmpdir());
    train_fails(NULL, 1, nodir_msg, "--data", (char *)g_sbm, "--checkpoint", nodir, (char *)NULL);
    train_fails(NULL, 1, "does not exist", "--data", (char *)g_sbm, "--log-json", nodir,
                (char *)NULL);
    train_fails(NULL, 1, "is a directory", "--data", (char *)g_sbm, "--save-predictions",
                (char *)tu_tmpdir(), (char *)NULL);
    char slashed[720]; /* a directory that is not there yet, named as one */
    snprintf(slashed, sizeof slashed, "%s/preds/", tu_tmpdir());
    train_fails(NULL, 1, "ends in '/'", "--data", (char *)g_sbm, "--save-predictions", slashed,
                (char *)NULL);
    /* An output renamed into place over a pipe (or a device such as
     * /dev/null) would replace it: refused, the pipe left. */
    char fifo[700];
    snprintf(fifo, sizeof fifo, "%s", tu_path("out-fifo"));
    (void)unlink(fifo);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    const char *renamed[] = {"--save-predictions", "--save-model", "--checkpoint"};
    for (int k = 0; k < 3; k++) {
        char want[800];
        snprintf(want, sizeof want, "%s %s is a pipe, which the output would replace", renamed[k],
                 fifo);
        train_fails(NULL, 1, want, "--data", (char *)g_sbm, renamed[k], fifo, (char *)NULL);
        struct stat fs;
        assert_true(lstat(fifo, &fs) == 0 && S_ISFIFO(fs.st_mode));
    }
    (void)unlink(fifo);

    /* Predictions that fail only once written (a name whose temporary name
     * is too long): the log has its epochs but not the final line. */
    char longname[700];
    int at = snprintf(longname, sizeof longname, "%s/", tu_tmpdir());
    memset(longname + at, 'p', 250);
    longname[at + 250] = '\0';
    train_fails(longname, 1, "cannot create the temporary file", "--data", (char *)g_sbm,
                "--epochs", "2", "--threads", "2", "--save-predictions", longname, "--log-json",
                (char *)log, "-q", (char *)NULL);
    text = tu_read_file(log);
    assert_non_null(text);
    assert_int_equal(tu_count_lines(text), 2);
    assert_null(strstr(text, "\"final\""));
    free(text);
}

/* ---- Cora ----------------------------------------------------------------- */

static const char *cora_file(void)
{
    static char out[640];
    if (!out[0]) {
        const char *dir = tu_shared_dataset("cora");
        snprintf(out, sizeof out, "%s", tu_path("cora.h5"));
        DATASET_OK("ogb", (char *)dir, "-o", out, "--force", "-q");
    }
    return out;
}

/* The GCN paper's settings over runs; returns the mean test accuracy. */
static double cora_mean(char *model, int runs)
{
    char runs_s[16];
    snprintf(runs_s, sizeof runs_s, "%d", runs);
    const char *log = tu_path("cora.json");
    double s = TRAIN_OK("--data", (char *)cora_file(), "--model", model, "--mode", "full", "--layers", "2",
                        "--hidden", "16", "--dropout", "0.5", "--lr", "0.01", "--weight-decay",
                        "5e-4", "--epochs", "200", "--normalize-features", "--runs", runs_s,
                        "--threads", "2", "--log-json", (char *)log, "-q");
    log_summary_t r = check_log(log, runs, 200);
    print_message("Cora, %s: test accuracy %.4f over %d runs (%.1f s, %.2f ms per epoch)\n", model,
                  r.test_acc_mean, runs, s, 1e3 * r.epoch_s_mean);
    return r.test_acc_mean;
}

/* Measured: 81.45 % (runs 1-2), 81.7 % over 10 runs. */
static void test_cora_gcn_2_runs(void **state)
{
    (void)state;
    assert_true(cora_mean("gcn", 2) >= 0.795);
}

/* GraphSAGE mini-batches with aggregator aggr (plug-in lse.so loaded), 5
 * runs: the mean test accuracy. */
static double cora_sage_minibatch(const char *aggr)
{
    char name[64];
    snprintf(name, sizeof name, "cora-mb-%s.json", aggr);
    const char *log = tu_path(name);
    /* Under the sanitizers one short run, checked to end. */
    const char *epochs = SANITIZED ? "10" : "50", *runs = SANITIZED ? "1" : "5";
    double s = TRAIN_OK("--data", (char *)cora_file(), "--model", "sage", "--mode", "minibatch",
                        "--aggr-plugin", g_lse, "--aggr", (char *)aggr, "--layers", "2",
                        "--hidden", "64", "--fanouts", "10,10", "--batch-size", "64", "--dropout",
                        "0.5", "--lr", "0.01", "--weight-decay", "5e-4", "--epochs",
                        (char *)epochs, "--normalize-features", "--runs", (char *)runs,
                        "--threads", "2", "--log-json", (char *)log, "-q");
    log_summary_t r = check_log(log, atoi(runs), atoi(epochs));
    print_message("Cora, sage mini-batch, %s: test accuracy %.4f over %s runs (%.1f s, %.2f ms "
                  "per epoch)\n", aggr, r.test_acc_mean, runs, s, 1e3 * r.epoch_s_mean);
    return r.test_acc_mean;
}

/* The mini-batch check, with exactly these settings (measured: 80.8 %),
 * and the example plug-in's lse within 2 points of it (normal build only:
 * the sanitizer build runs the plug-in in test_plugin_end_to_end). */
static void test_cora_sage_minibatch(void **state)
{
    (void)state;
    double mean = cora_sage_minibatch("mean");
    assert_true(mean >= (SANITIZED ? 0.0 : 0.78));
#ifndef GNN_TEST_SANITIZED
    double lse = cora_sage_minibatch("lse");
    assert_true(lse >= mean - 0.02);
#endif
}

/* GAT with the GAT paper's settings over runs, with the attention
 * function attn (gatv2: the plug-in's): the mean test accuracy. Under the
 * sanitizers one short run, checked to end. */
static double cora_gat_mean(const char *attn, int runs)
{
#ifdef GNN_TEST_SANITIZED
    runs = 1;
    const char *epochs = "20";
#else
    const char *epochs = "300";
#endif
    char runs_s[16];
    snprintf(runs_s, sizeof runs_s, "%d", runs);
    const char *log = tu_path("cora-gat.json");
    double s = TRAIN_OK("--data", (char *)cora_file(), "--model", "gat", "--heads", "8",
                        "--hidden", "8", "--dropout", "0.6", "--attn-dropout", "0.6", "--lr",
                        "0.005", "--weight-decay", "5e-4", "--epochs", (char *)epochs,
                        "--normalize-features", "--runs", runs_s, "--threads", "2", "--log-json",
                        (char *)log, "--aggr-plugin", g_gatv2, "--attention", (char *)attn, "-q");
    log_summary_t r = check_log(log, runs, atoi(epochs));
    print_message("Cora, gat (attention %s): test accuracy %.4f over %d runs (%.1f s, %.2f ms "
                  "per epoch)\n",
                  attn, r.test_acc_mean, runs, s, 1e3 * r.epoch_s_mean);
    return r.test_acc_mean;
}

/* Measured: 82.4 % (runs 1-2; 82.49 % over 10 runs). */
static void test_cora_gat_2_runs(void **state)
{
    (void)state;
    double acc = cora_gat_mean("gat", 2);
#ifndef GNN_TEST_SANITIZED
    assert_true(acc >= 0.81);
#else
    assert_true(acc > 0.0);
#endif
}

/* The GATv2 example plug-in. Measured: 82.7 % over 4 runs. */
static void test_cora_gatv2_2_runs(void **state)
{
    (void)state;
    double acc = cora_gat_mean("gatv2", 2);
#ifndef GNN_TEST_SANITIZED
    assert_true(acc >= 0.81);
#else
    assert_true(acc > 0.0);
#endif
}

/* Link prediction with the graph auto-encoder's settings (GCN 32 -> 16,
 * no dropout, dot decoder, one negative per edge, lr 0.01, 200 epochs),
 * each seed s its own split (split-edges --seed s) and model (--seed s):
 * the mean test AUC and AP over seeds 0 .. n - 1. Under the sanitizers one
 * seed, 10 epochs, checked to end. */
static void cora_link_mean(int n, double *auc, double *ap)
{
#ifdef GNN_TEST_SANITIZED
    n = 1;
    const char *epochs = "10";
#else
    const char *epochs = "200";
#endif
    double sa = 0.0, sp = 0.0;
    for (int s = 0; s < n; s++) {
        char seed[16], split[64];
        snprintf(seed, sizeof seed, "%d", s);
        snprintf(split, sizeof split, "cora-link-%d.h5", s);
        char *data = (char *)tu_path(split), *log = (char *)tu_path("cora-link.json");
        DATASET_OK("split-edges", (char *)cora_file(), "-o", data, "--seed", seed, "--force",
                   "-q");
        TRAIN_OK("--data", data, "--task", "link", "--model", "gcn", "--layers", "2", "--hidden",
                 "32", "--out-dim", "16", "--dropout", "0", "--decoder", "dot", "--negatives", "1",
                 "--lr", "0.01", "--epochs", (char *)epochs, "--seed", seed, "--threads", "2",
                 "--log-json", log, "-q");
        char *last = last_line(log);
        sa += tu_json_num(last, "test_auc");
        sp += tu_json_num(last, "test_ap");
        free(last);
    }
    *auc = sa / n;
    *ap = sp / n;
    print_message("Cora, link (GAE settings): test AUC %.4f, AP %.4f over %d seeds\n", *auc, *ap,
                  n);
}

/* Measured: AUC 91.85 %, AP 91.19 % over seeds 0-9. */
static void test_cora_link_2_seeds(void **state)
{
    (void)state;
    double auc, ap;
    cora_link_mean(2, &auc, &ap);
#ifndef GNN_TEST_SANITIZED
    assert_true(auc >= 0.89);
    assert_true(ap >= 0.89);
#else
    assert_true(auc > 0.0 && ap > 0.0);
#endif
}

/* Link prediction in edge mini-batches (GraphSAGE 32 -> 16, batches of
 * 512 edges, fanouts 10,10, 50 epochs) against the whole graph (200
 * epochs), seeds 0 and 1 each their own split: the mean test AUC within 2
 * points. Measured over seeds 0-4: 89.93 % mini-batch, 89.31 % full. */
static void test_cora_link_sage_minibatch(void **state)
{
    (void)state;
#ifdef GNN_TEST_SANITIZED
    const int n = 1;
    const char *ep[2] = {"4", "2"};
#else
    const int n = 2;
    const char *ep[2] = {"200", "50"};
#endif
    double auc[2] = {0, 0};
    for (int s = 0; s < n; s++) {
        char seed[16], split[64];
        snprintf(seed, sizeof seed, "%d", s);
        snprintf(split, sizeof split, "cora-link-%d.h5", s);
        char *data = (char *)tu_path(split), *log = (char *)tu_path("cora-link-mb.json");
        DATASET_OK("split-edges", (char *)cora_file(), "-o", data, "--seed", seed, "--force",
                   "-q");
        for (int mb = 0; mb < 2; mb++) {
            TRAIN_OK("--data", data, "--task", "link", "--model", "sage", "--mode",
                     mb ? "minibatch" : "full", "--layers", "2", "--hidden", "32", "--out-dim",
                     "16", "--batch-size", "512", "--fanouts", "10,10", "--lr", "0.01",
                     "--epochs", (char *)ep[mb], "--seed", seed, "--threads", "2", "--log-json",
                     log, "-q");
            char *last = last_line(log);
            auc[mb] += tu_json_num(last, "test_auc") / n;
            free(last);
        }
    }
    print_message("Cora, link, GraphSAGE: test AUC %.4f full graph, %.4f edge mini-batches\n",
                  auc[0], auc[1]);
#ifndef GNN_TEST_SANITIZED
    assert_true(auc[0] >= 0.85);
    assert_true(auc[1] >= auc[0] - 0.02);
#else
    assert_true(auc[0] > 0.0 && auc[1] > 0.0);
#endif
}

/* Cora without its features (gnn-dataset ogb --no-features), made once. */
static const char *cora_nofeat_file(void)
{
    static char out[640];
    if (!out[0]) {
        const char *dir = tu_shared_dataset("cora");
        snprintf(out, sizeof out, "%s", tu_path("cora-nofeat.h5"));
        DATASET_OK("ogb", (char *)dir, "-o", out, "--no-features", "--force", "-q");
    }
    return out;
}

/*
 * Featureless Cora, each node's input its learnable row (--embed-dim 64,
 * rows by lazy Adam at --lr), GCN with the GCN paper's other settings
 * (hidden 16, dropout 0.5, lr 0.01, weight decay 5e-4, 200 epochs), 10
 * runs. The PyTorch reference of the same model (nn.Embedding trained by
 * SparseAdam), on this machine:
 *   bench/reference/embed_torch.py cora-nofeat.h5 --embed-dim 64 --runs 10
 * 65.48 % mean test accuracy; required: at least that minus 1 point
 * (measured: 65.50 %, about 3 s). Under the sanitizers one short run.
 */
static void test_cora_embed_gcn_10_runs(void **state)
{
    (void)state;
    const char *log = tu_path("cora-embed.json");
    /* Under the sanitizers one short run, checked to end. */
    const char *epochs = SANITIZED ? "20" : "200", *runs = SANITIZED ? "1" : "10";
    double s = TRAIN_OK("--data", (char *)cora_nofeat_file(), "--embed-dim", "64", "--model",
                        "gcn", "--mode", "full", "--layers", "2", "--hidden", "16", "--dropout",
                        "0.5", "--lr", "0.01", "--weight-decay", "5e-4", "--epochs",
                        (char *)epochs, "--runs", (char *)runs, "--threads", "2", "--log-json",
                        (char *)log, "-q");
    log_summary_t r = check_log(log, atoi(runs), atoi(epochs));
    print_message("featureless Cora, gcn, --embed-dim 64: test accuracy %.4f over %s runs (%.1f s, "
                  "%.2f ms per epoch)\n", r.test_acc_mean, runs, s, 1e3 * r.epoch_s_mean);
    assert_true(r.test_acc_mean >= (SANITIZED ? 0.0 : 0.6448));
}

/* Link prediction on featureless Cora (GCN 32 -> 16, no dropout, dot
 * decoder, 5 negatives per edge, lr 0.01, 200 epochs, --embed-dim 64),
 * each seed s its own split (split-edges --seed s) and model (--seed s):
 * the mean test AUC over seeds 0 .. n - 1. Under the sanitizers one seed,
 * 10 epochs, checked to end. */
static double cora_embed_link_mean(int n)
{
#ifdef GNN_TEST_SANITIZED
    n = 1;
    const char *epochs = "10";
#else
    const char *epochs = "200";
#endif
    double sum = 0.0;
    for (int s = 0; s < n; s++) {
        char seed[16], split[64];
        snprintf(seed, sizeof seed, "%d", s);
        snprintf(split, sizeof split, "cora-nofeat-link-%d.h5", s);
        char *data = (char *)tu_path(split), *log = (char *)tu_path("cora-embed-link.json");
        DATASET_OK("split-edges", (char *)cora_nofeat_file(), "-o", data, "--seed", seed,
                   "--force", "-q");
        double t = TRAIN_OK("--data", data, "--task", "link", "--model", "gcn", "--layers", "2",
                            "--hidden", "32", "--out-dim", "16", "--dropout", "0", "--lr", "0.01",
                            "--epochs", (char *)epochs, "--negatives", "5", "--embed-dim", "64",
                            "--seed", seed, "--threads", "2", "--log-json", log, "-q");
        char *last = last_line(log);
        double auc = tu_json_num(last, "test_auc");
        free(last);
        print_message("featureless Cora, link, seed %d: test AUC %.4f (%.1f s)\n", s, auc, t);
        sum += auc;
        unlink(data);
    }
    print_message("featureless Cora, link, --embed-dim 64: test AUC %.4f over %d seeds\n",
                  sum / n, n);
    return sum / n;
}

/* Measured over seeds 0-9: 84.09, 84.06, 81.05, 83.37, 85.13, 82.27,
 * 83.24, 81.63, 86.42, 85.08; mean 83.63 %. */
static void test_cora_embed_link(void **state)
{
    (void)state;
    double auc = cora_embed_link_mean(2);
#ifndef GNN_TEST_SANITIZED
    assert_true(auc >= 0.80);
#else
    assert_true(auc > 0.0);
#endif
}

static void test_cora_embed_link_10_seeds(void **state)
{
    (void)state;
    /* The sanitizer build trains fewer epochs and seeds: it checks that
     * the runs end cleanly, not the accuracy. */
    double auc = cora_embed_link_mean(10);
    assert_true(auc >= (SANITIZED ? 0.0 : 0.83));
}

static void test_cora_link_10_seeds(void **state)
{
    (void)state;
    double auc, ap;
    cora_link_mean(10, &auc, &ap);
    assert_true(auc >= (SANITIZED ? 0.0 : 0.90)); /* fewer seeds there: see above */
    assert_true(ap >= (SANITIZED ? 0.0 : 0.91));
}

static void test_cora_gat_10_runs(void **state)
{
    (void)state;
    assert_true(cora_gat_mean("gat", 10) >= (SANITIZED ? 0.0 : 0.82)); /* fewer runs there */
}

static void test_cora_gcn_10_runs(void **state)
{
    (void)state;
    assert_true(cora_mean("gcn", 10) >= 0.805);
}

static void test_cora_sage_10_runs(void **state)
{
    (void)state;
    assert_true(cora_mean("sage", 10) >= 0.79);
}

/* tu_path's result in storage of its own, for the paths the whole run
 * uses: tu_path's ring of buffers is reused after 64 calls. */
static const char *kept_path(const char *name)
{
    char *p = strdup(tu_path(name));
    assert_non_null(p);
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: %s GNN-TRAIN GNN-DATASET LSE.so GATV2.so [cora|cora-slow]\n",
                argv[0]);
        return 2;
    }
    g_train = argv[1];
    g_dataset = argv[2];
    g_lse = argv[3];
    g_gatv2 = argv[4];
    const char *mode = argc == 6 ? argv[5] : "";
    if (!strcmp(mode, "cora") || !strcmp(mode, "cora-slow"))
        tu_shared_dataset("cora"); /* exits 77 (skipped) where it is absent */
    if (!strcmp(mode, "cora")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cora_gcn_2_runs),
                                           cmocka_unit_test(test_cora_sage_minibatch),
                                           cmocka_unit_test(test_cora_gat_2_runs),
                                           cmocka_unit_test(test_cora_gatv2_2_runs),
                                           cmocka_unit_test(test_cora_link_2_seeds),
                                           cmocka_unit_test(test_cora_link_sage_minibatch),
                                           cmocka_unit_test(test_cora_embed_gcn_10_runs),
                                           cmocka_unit_test(test_cora_embed_link)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (!strcmp(mode, "cora-slow")) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(test_cora_gcn_10_runs),
                                           cmocka_unit_test(test_cora_sage_10_runs),
                                           cmocka_unit_test(test_cora_gat_10_runs),
                                           cmocka_unit_test(test_cora_link_10_seeds),
                                           cmocka_unit_test(test_cora_embed_link_10_seeds)};
        return cmocka_run_group_tests(tests, NULL, NULL);
    }
    if (mode[0]) {
        fprintf(stderr, "%s: unknown mode %s\n", argv[0], mode);
        return 2;
    }

    g_sbm = kept_path("sbm.h5");
    g_sbm16 = kept_path("sbm16.h5");
    g_sbm_easy = kept_path("sbm-easy.h5");
    g_orig = kept_path("sbm-orig.h5");
    g_sbm2k = kept_path("sbm2k.h5");
    g_nofeat = kept_path("sbm-nofeat.h5");
    g_hsbm = kept_path("hsbm.h5");
    g_nan = kept_path("sbm-nan.h5");
    g_novalid = kept_path("sbm-novalid.h5");
    g_notest = kept_path("sbm-notest.h5");
    g_halftrain = kept_path("sbm-halftrain.h5");
    g_swapped = kept_path("sbm-swapped.h5");
    g_othertrain = kept_path("sbm-othertrain.h5");
    char *const gens[][24] = {
        {g_dataset, "generate", "sbm", "-n", "3000", "-f", "32", "-d", "8", "-s", "1", "-o",
         (char *)g_sbm, "-q", NULL},
        {g_dataset, "generate", "sbm", "-n", "3000", "-f", "16", "-d", "8", "-s", "1", "-o",
         (char *)g_sbm16, "-q", NULL},
        {g_dataset, "generate", "sbm", "-n", "3000", "-c", "4", "-f", "8", "-d", "8",
         "--homophily", "0.9", "-s", "1", "-o", (char *)g_sbm_easy, "-q", NULL},
        {g_dataset, "generate", "sbm", "-n", "2000", "-f", "32", "-d", "8", "-s", "1", "-o",
         (char *)g_sbm2k, "-q", NULL},
        {g_dataset, "generate", "sbm", "-n", "2000", "-c", "4", "-f", "0", "-d", "8",
         "--homophily", "0.9", "-s", "1", "-o", (char *)g_nofeat, "-q", NULL},
        {g_dataset, "generate", "hsbm", "-n", HSBM_NODES, "-s", "1", "-o", (char *)g_hsbm, "-q",
         NULL},
    };
    for (size_t i = 0; i < sizeof gens / sizeof gens[0]; i++) {
        tu_run_t r = tu_run(gens[i]);
        if (r.status != 0) {
            fprintf(stderr, "%s generate: status %d: %s", g_dataset, r.status, r.err);
            return 1;
        }
        tu_run_free(&r);
    }
    if (write_derived_graphs(g_orig, tu_path("nosplit.h5")) < 0) return 1;
    if (write_flawed_graphs(g_nan, g_novalid, g_notest, g_halftrain) < 0) return 1;
    if (write_other_graphs(g_swapped, g_othertrain) < 0) return 1;

    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gcn_and_sage_learn),
        cmocka_unit_test(test_resume_after_shorter_run),
        cmocka_unit_test(test_resume_after_kill_in_second_run),
        cmocka_unit_test(test_checkpoint_refusals),
        cmocka_unit_test(test_minibatch_same_for_any_loader),
        cmocka_unit_test(test_prefetch_auto),
        cmocka_unit_test(test_minibatch_device_path),
        cmocka_unit_test(test_device_steps_queue_freely),
        cmocka_unit_test(test_minibatch_sample_once),
        cmocka_unit_test(test_full_step_replay),
        cmocka_unit_test(test_minibatch_sparse_features),
        cmocka_unit_test(test_device_sampler_sparse_input),
        cmocka_unit_test(test_link_feature_cache),
        cmocka_unit_test(test_minibatch_eval_batches),
        cmocka_unit_test(test_minibatch_bad_options),
        cmocka_unit_test(test_no_evaluation),
        cmocka_unit_test(test_plugin_end_to_end),
        cmocka_unit_test(test_link_learns),
        cmocka_unit_test(test_link_minibatch_same_for_any_loader),
        cmocka_unit_test(test_link_resume),
        cmocka_unit_test(test_save_embeddings),
        cmocka_unit_test(test_link_bad_input),
        cmocka_unit_test(test_embed_learns),
        cmocka_unit_test(test_embed_link_learns),
        cmocka_unit_test(test_embed_cpu_as_gpu),
        cmocka_unit_test(test_embed_all),
        cmocka_unit_test(test_embed_refusals),
        cmocka_unit_test(test_embed_resume),
        cmocka_unit_test(test_embed_save),
        cmocka_unit_test(test_rgcn_beats_gcn),
        cmocka_unit_test(test_rgcn_orders),
        cmocka_unit_test(test_rgcn_cpu_as_gpu),
        cmocka_unit_test(test_rgcn_refusals),
        cmocka_unit_test(test_rgcn_featureless),
        cmocka_unit_test(test_save_predictions),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_option_ranges),
        cmocka_unit_test(test_not_finite),
        cmocka_unit_test(test_no_epochs),
        cmocka_unit_test(test_empty_splits),
        cmocka_unit_test(test_output_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
