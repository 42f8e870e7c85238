/*
 * Fuzz target for training checkpoints, as `gnn-train --resume` reads them
 * (gnn_checkpoint_load). Structure-aware like fuzz_partdir: once per
 * process a valid checkpoint (3 runs, one finished, 40 parameters, a
 * learnable input table of 6 rows of 2 trained with Adam, its best rows
 * kept) is written into a temporary directory, removed at exit; each input
 * copies it and applies 1 to 4 edits (h5edit.h: values, order, removed or resized
 * datasets, attributes, strings), then loads the copy. Errors are expected
 * and ignored; crashes, leaks and sanitizer reports are not. A checkpoint
 * that loads must be one the trainer can use: the run and its counters
 * within the run count, the data trained on known and consistent (or, from
 * a version 2 file, unknown), the finished runs' arrays and the four tensors
 * present with the sizes given, the table's settings valid and its arrays
 * present with the sizes they imply (none before version 6), strings
 * terminated.
 */
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "tests/fuzz/h5edit.h"
#include "trainer/checkpoint.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NP 40
#define EMBED_ROWS 6
#define EMBED_DIM 2
#define NE (EMBED_ROWS * EMBED_DIM)

static char g_pristine[640], g_work[640];
static int g_ready;

static int set_up(void)
{
    snprintf(g_pristine, sizeof g_pristine, "%s/run.ck", tu_tmpdir());
    snprintf(g_work, sizeof g_work, "%s/work.ck", tu_tmpdir());
    static float params[NP], m[NP], v[NP], best[NP];
    static double test_acc[1] = {0.81}, valid_acc[1] = {0.79};
    for (int i = 0; i < NP; i++) {
        params[i] = (float)i / 9.0f - 2.0f;
        m[i] = (float)i * 1e-3f;
        v[i] = (float)i * 1e-6f;
        best[i] = params[i] * 0.5f;
    }
    static double best_m[4] = {0.9, 0.8, 0.78, 0.6}, run_m[4] = {0.91, 0.81, 0.77, 0.59};
    static float ew[NE], es1[NE], es2[NE], ebest[NE];
    for (int i = 0; i < NE; i++) {
        ew[i] = (float)i / 7.0f - 1.0f;
        es1[i] = (float)i * 2e-3f;
        es2[i] = (float)i * 3e-6f;
        ebest[i] = ew[i] * 0.25f;
    }
    gnn_checkpoint_t c = {.model = "sage", .task = "node", .decoder = "-", .hits = "-",
                          .aggr = "mean", .layers = 2,
                          .in_dim = 5, .hidden = 3, .classes = 4, .dropout = 0.5, .lr = 0.01,
                          .weight_decay = 5e-4, .decay_scope = "all", .init = "fan-in",
                          .mode = "minibatch",
                          .fanouts = "10,5", .batch_size = 64, .seed = 7, .runs = 3,
                          .num_nodes = 50, .parts = 2, .train_nodes = 10, .num_edges = 400,
                          .edge_hash = 0x8000000000000005ull, .train_hash = 11,
                          .train_layout = 13, .run = 1,
                          .epoch = 4, .step = 40, .rng_offset = 1234, .best_epoch = 3,
                          .bad_evals = 1, .best_valid_acc = 0.8, .best_valid_loss = 0.6,
                          .best_test_acc = 0.78, .best_train_acc = 0.9, .min_valid_loss = 0.6,
                          .runs_done = 1, .run_test_acc = test_acc, .run_valid_acc = valid_acc,
                          .n_params = NP, .params = params, .adam_m = m, .adam_v = v,
                          .best_params = best, .n_metrics = 4, .best_metrics = best_m,
                          .run_metrics = run_m, .embed_opt = "adam", .embed_dim = EMBED_DIM,
                          .embed_all = 0, .embed_rows = EMBED_ROWS, .embed_step = 30,
                          .embed_best_kept = 1, .embed_lr = 0.1, .embed_w = ew,
                          .embed_s1 = es1, .embed_s2 = es2, .embed_best = ebest};
    int rc = gnn_checkpoint_save(g_pristine, &c);
    if (rc != 0) fprintf(stderr, "fuzz_checkpoint: set-up failed: %s\n", gnn_error_message());
    return rc;
}

static int terminated(const char *s, size_t n) { return memchr(s, '\0', n) != NULL; }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    if (!g_ready) {
        if (set_up() != 0) abort();
        g_ready = 1;
    }
    h5e_edit_copy(data, size, g_pristine, g_work);
    gnn_checkpoint_t c;
    int rc = gnn_checkpoint_load(g_work, &c);
    if (getenv("FUZZ_CHECKPOINT_VERBOSE"))
        fprintf(stderr, "load: %s\n", rc ? gnn_error_message() : "loaded");
    if (rc == 0) {
        if (!terminated(c.model, sizeof c.model) || !terminated(c.aggr, sizeof c.aggr) ||
            !terminated(c.decay_scope, sizeof c.decay_scope) ||
            !terminated(c.init, sizeof c.init) ||
            !terminated(c.mode, sizeof c.mode) || !terminated(c.fanouts, sizeof c.fanouts) ||
            !terminated(c.task, sizeof c.task) || !terminated(c.decoder, sizeof c.decoder) ||
            !terminated(c.hits, sizeof c.hits) || !terminated(c.embed_opt, sizeof c.embed_opt))
            abort();
        if (c.runs < 1 || c.run < 0 || c.runs_done < 0 || c.runs_done > c.runs ||
            c.epoch < 0 || c.step < 0 || c.n_params < 0)
            abort();
        int unknown = c.num_nodes == -1 && c.parts == -1 && c.train_nodes == -1; /* version 2 */
        if (!unknown && (c.num_nodes < 1 || c.parts < 0 || c.train_nodes < 1 ||
                         (c.train_nodes > c.num_nodes && strcmp(c.task, "link"))))
            abort();
        if (c.num_edges < -1) abort(); /* -1: before version 7 */
        if (c.runs_done > 0 && (!c.run_test_acc || !c.run_valid_acc)) abort();
        if (c.n_params > 0 && (!c.params || !c.adam_m || !c.adam_v || !c.best_params)) abort();
        /* The table: in range; with rows, adam or adagrad at a positive rate
         * and the arrays that optimiser keeps. */
        if (c.embed_dim < 0 || c.embed_dim > ((int64_t)1 << 20) || c.embed_rows < 0 ||
            c.embed_step < 0 || (c.embed_all != 0 && c.embed_all != 1) ||
            (c.embed_best_kept != 0 && c.embed_best_kept != 1))
            abort();
        int adam = !strcmp(c.embed_opt, "adam");
        if (c.embed_dim > 0 && ((!adam && strcmp(c.embed_opt, "adagrad")) || !(c.embed_lr > 0)))
            abort();
        int64_t ne = c.embed_dim > 0 ? c.embed_rows * c.embed_dim : 0;
        if (ne > 0 && (!c.embed_w || !c.embed_s1 || (adam && !c.embed_s2) ||
                       (c.embed_best_kept && !c.embed_best)))
            abort();
        if ((!adam && c.embed_s2) || (!c.embed_best_kept && c.embed_best)) abort();
        /* Touch every element, so a short array is caught by the sanitizers. */
        double sum = 0;
        for (int64_t i = 0; i < c.runs_done; i++) sum += c.run_test_acc[i] + c.run_valid_acc[i];
        for (int64_t i = 0; i < c.n_params; i++)
            sum += (double)c.params[i] + c.adam_m[i] + c.adam_v[i] + c.best_params[i];
        for (int64_t i = 0; i < ne; i++)
            sum += (double)c.embed_w[i] + c.embed_s1[i] + (adam ? c.embed_s2[i] : 0.0f) +
                   (c.embed_best_kept ? c.embed_best[i] : 0.0f);
        if (sum == 12345.678) fprintf(stderr, "%g\n", sum);
        gnn_checkpoint_free(&c);
    }
    gnn_error_clear();
    return 0;
}
