/*
 * Fuzz target for graph files (the gnn-graph HDF5 layout), as every command
 * reads them: gnn_graph_open and its checks, streamed reads of rows,
 * features, labels and a split, and gnn_graph_load of the whole file.
 * Structure-aware like fuzz_partdir: once per process a valid file (50
 * nodes, weighted in-edges, features, labels, the three splits, original
 * ids) is written into a temporary directory, removed at exit; each input
 * copies it and applies 1 to 4 edits (h5edit.h: values, order, removed or
 * resized datasets, attributes, strings), then reads the copy. Errors are
 * expected and ignored; crashes, leaks and sanitizer reports are not. What
 * reads must be what the readers promise: rows within the node count,
 * labels within [-1, classes), split ids within the nodes, and a loaded
 * CSR that passes gnn_csr_validate for every flag it claims but symmetry
 * (trusted on load, checked by the SpMM before it relies on it).
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "tests/common/graphtest.h"
#include "tests/fuzz/h5edit.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N 50

static char g_pristine[640], g_work[640];
static int g_ready;

static int set_up(void)
{
    snprintf(g_pristine, sizeof g_pristine, "%s/g.h5", tu_tmpdir());
    snprintf(g_work, sizeof g_work, "%s/work.h5", tu_tmpdir());
    gnn_vid_t src[N * 3], dst[N * 3];
    float w[N * 3];
    int64_t m = 0;
    for (gnn_vid_t v = 0; v < N; v++)
        for (int i = 1; i <= 1 + (int)(v % 3); i++) {
            src[m] = (v * 7 + i * 11) % N;
            dst[m] = v;
            w[m++] = (float)i;
        }
    gnn_graph_t g;
    int rc = tu_graph_directed(&g, N, m, src, dst, w, 2, 3);
    g.orig_id = gnn_malloc_array(N, sizeof *g.orig_id);
    if (rc == 0 && !g.orig_id) rc = GNN_ENOMEM;
    for (gnn_vid_t v = 0; rc == 0 && v < N; v++) {
        g.feat[2 * v] = (float)v;
        g.feat[2 * v + 1] = -(float)v / 3.0f;
        g.label[v] = v % 7 == 0 ? -1 : v % 3;
        g.orig_id[v] = 500 + v;
        g.split[v % 3][g.split_size[v % 3]++] = v;
    }
    if (rc == 0) rc = gnn_graph_write(g_pristine, &g, 1);
    gnn_graph_free(&g);
    if (rc != 0) fprintf(stderr, "fuzz_graph_file: set-up failed: %s\n", gnn_error_message());
    return rc;
}

/* Streamed reads, as gnn-partition and gnn-train make them. */
static void read_streamed(void)
{
    gnn_graph_file_t *f = NULL;
    if (gnn_graph_open(g_work, &f) != 0) return;
    const gnn_graph_info_t *h = gnn_graph_file_info(f);
    gnn_vid_t n = h->num_nodes;
    if (n > 0 && n <= 4096) {
        gnn_csr_t rows = {0};
        if (gnn_graph_read_rows(f, 0, n, &rows) == 0) {
            for (gnn_eid_t e = 0; e < rows.nnz; e++)
                if (rows.indices[e] < 0 || rows.indices[e] >= n) abort();
            gnn_csr_free(&rows);
        }
        if (h->feat_dim > 0 && h->feat_dim <= 64) {
            float *x = gnn_malloc_array((size_t)(n * h->feat_dim), sizeof *x);
            if (x) gnn_graph_read_feat(f, 0, n, x);
            gnn_free(x);
        }
        if (h->has_labels) {
            int64_t *y = gnn_malloc_array((size_t)n, sizeof *y);
            if (y && gnn_graph_read_labels(f, 0, n, y) == 0)
                for (gnn_vid_t v = 0; v < n; v++)
                    if (y[v] < -1 || y[v] >= h->num_classes) abort();
            gnn_free(y);
        }
    }
    int64_t *sp = NULL, ns = 0;
    if (h->split_size[GNN_SPLIT_TRAIN] >= 0 &&
        gnn_graph_read_split(f, GNN_SPLIT_TRAIN, &sp, &ns) == 0) {
        for (int64_t i = 0; i < ns; i++)
            if (sp[i] < 0 || sp[i] >= n) abort();
        gnn_free(sp);
    }
    gnn_graph_close(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    if (!g_ready) {
        if (set_up() != 0) abort();
        g_ready = 1;
    }
    h5e_edit_copy(data, size, g_pristine, g_work);
    read_streamed();
    gnn_graph_t g;
    int rc = gnn_graph_load(g_work, &g);
    if (getenv("FUZZ_GRAPH_VERBOSE"))
        fprintf(stderr, "load: %s\n", rc ? gnn_error_message() : "loaded");
    if (rc == 0) {
        /* The symmetric flag is trusted on load (as documented); the SpMM
         * checks it before it uses a graph as its own transpose. */
        g.csr.flags &= ~(unsigned)GNN_CSR_SYMMETRIC;
        if (gnn_csr_validate(&g.csr) != 0) {
            fprintf(stderr, "fuzz_graph_file: loaded graph fails validation: %s\n",
                    gnn_error_message());
            abort();
        }
        for (int s = 0; s < GNN_NUM_SPLITS; s++)
            for (int64_t i = 0; g.split[s] && i < g.split_size[s]; i++)
                if (g.split[s][i] < 0 || g.split[s][i] >= g.csr.n_rows) abort();
        gnn_graph_free(&g);
    }
    gnn_error_clear();
    return 0;
}
