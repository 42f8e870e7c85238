/*
 * Fuzz target for partition directories, as gnn-train, --check and --info
 * read them. Structure-aware: raw bytes of the HDF5 files are never edited
 * (that would fuzz libhdf5, not this project); the input is a list of edits
 * made through HDF5 to a fresh copy of a valid directory.
 *
 * Once per process, a small graph file (60 nodes, weighted in-edges,
 * features, labels, the three splits, original ids) and its directory (3
 * parts, 2 halo hops) are written into a temporary directory, removed at
 * exit. Each input then copies the directory and applies 1 to 4 edits
 * (h5edit.h: values, order, removed or resized datasets, attributes), each
 * to one file (meta.h5 or a part) chosen by the input.
 * The copy is then read part by part (gnn_partdir_read_part), summarised
 * (gnn_partdir_info, text and JSON) and checked against the graph
 * (gnn_partdir_check). Errors are expected and ignored; crashes, leaks,
 * hangs and sanitizer reports are not. A part that reads must hold a CSR
 * that passes gnn_csr_validate, local ids and split indices in range.
 * FUZZ_PARTDIR_VERBOSE=1 prints what the readers said (FUZZ_H5EDIT_VERBOSE=1
 * each edit).
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "partition/kway.h"
#include "partition/partdir.h"
#include "tests/common/graphtest.h"
#include "tests/fuzz/h5edit.h"

#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N 60
#define K 3

static char g_graph[640], g_pristine[640], g_work[640];
static char g_files[16][64];
static int g_nfiles = -1;

/* ---- Set-up and clean-up ---------------------------------------------------- */

static int cmp_name(const void *a, const void *b) { return strcmp(a, b); }

static int set_up(void)
{
    snprintf(g_graph, sizeof g_graph, "%s/g.h5", tu_tmpdir());
    snprintf(g_pristine, sizeof g_pristine, "%s/parts", tu_tmpdir());
    snprintf(g_work, sizeof g_work, "%s/work", tu_tmpdir());
    gnn_vid_t src[N * 4], dst[N * 4];
    float w[N * 4];
    int64_t m = 0;
    uint64_t r = 0x9e3779b97f4a7c15ull;
    for (gnn_vid_t v = 0; v < N; v++)
        for (int i = 0; i < 1 + (int)(v % 4); i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            gnn_vid_t u = (gnn_vid_t)((r >> 33) % N);
            if (u == v) continue;
            src[m] = u;
            dst[m] = v;
            w[m++] = (float)(1 + (r >> 20) % 7);
        }
    gnn_graph_t g;
    int rc = tu_graph_directed(&g, N, m, src, dst, w, 3, 4);
    g.orig_id = gnn_malloc_array(N, sizeof *g.orig_id);
    if (rc == 0 && !g.orig_id) rc = GNN_ENOMEM;
    int32_t part[N];
    for (gnn_vid_t v = 0; rc == 0 && v < N; v++) {
        for (int j = 0; j < 3; j++) g.feat[v * 3 + j] = (float)(v * 3 + j) / 7.0f;
        g.label[v] = v % 9 == 0 ? -1 : v % 4;
        g.orig_id[v] = 1000 + 7 * v;
        g.split[v % 3][g.split_size[v % 3]++] = v;
        part[v] = (int32_t)((v * 7) % K);
    }
    if (rc == 0) rc = gnn_graph_write(g_graph, &g, 1);
    gnn_csr_t view = {0};
    int64_t cut = 0;
    if (rc == 0) rc = gnn_part_undirected(&g.csr, &view);
    if (rc == 0) cut = gnn_part_edge_cut(&view, part);
    gnn_csr_free(&view);
    gnn_partdir_meta_t meta = {.graph = g_graph, .method = "metis", .balance = "nodes",
                               .ufactor = 30, .halo_hops = 2, .ranks = 1, .scheme = "kway",
                               .edge_cut = cut};
    if (rc == 0) rc = gnn_partdir_write(g_pristine, &g, part, K, &meta, 0);
    gnn_graph_free(&g);
    if (rc != 0) {
        fprintf(stderr, "fuzz_partdir: set-up failed: %s\n", gnn_strerror(rc));
        return -1;
    }
    DIR *d = opendir(g_pristine);
    if (!d) return -1;
    struct dirent *e;
    g_nfiles = 0;
    while ((e = readdir(d)) && g_nfiles < 16)
        if (e->d_name[0] != '.' && strlen(e->d_name) < sizeof g_files[0])
            strcpy(g_files[g_nfiles++], e->d_name);
    closedir(d);
    qsort(g_files, (size_t)g_nfiles, sizeof g_files[0], cmp_name);
    return g_nfiles > 0 ? 0 : -1;
}

static int fresh_copy(void)
{
    /* Edits change files in place and never remove one: copying every
     * file over the last input's is a fresh copy. */
    if (mkdir(g_work, 0700) != 0 && errno != EEXIST) return -1;
    char a[720], b[720];
    for (int i = 0; i < g_nfiles; i++) {
        int na = snprintf(a, sizeof a, "%s/%s", g_pristine, g_files[i]);
        int nb = snprintf(b, sizeof b, "%s/%s", g_work, g_files[i]);
        if (na >= (int)sizeof a || nb >= (int)sizeof b || copy_file(a, b) != 0) return -1;
    }
    return 0;
}

/* ---- Reading back ------------------------------------------------------------ */

static void read_back(void)
{
    const int verbose = getenv("FUZZ_PARTDIR_VERBOSE") != NULL;
    for (int p = 0; p < K; p++) {
        gnn_part_file_t pf;
        int rc = gnn_partdir_read_part(g_work, p, &pf);
        if (verbose) fprintf(stderr, "part %d: %s\n", p, rc ? gnn_error_message() : "read");
        if (rc != 0) continue;
        if (gnn_csr_validate(&pf.csr) != 0 || pf.csr.n_rows != pf.n_rows ||
            pf.csr.n_cols != pf.n_local || pf.n_owned > pf.n_rows || pf.n_rows > pf.n_local)
            abort();
        for (int64_t i = 0; i < pf.n_local; i++)
            if (pf.local_to_global[i] < 0 || pf.local_to_global[i] >= pf.num_nodes) abort();
        for (int s = 0; s < 3; s++)
            for (int64_t i = 0; pf.split[s] && i < pf.split_n[s]; i++)
                if (pf.split[s][i] < 0 || pf.split[s][i] >= pf.n_owned) abort();
        for (int64_t i = 0; pf.label && i < pf.n_owned; i++)
            if (pf.label[i] < -1 || pf.label[i] >= pf.num_classes) abort();
        gnn_part_file_free(&pf);
    }
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        gnn_partdir_info(g_work, 0, null);
        gnn_partdir_info(g_work, 1, null);
        fclose(null);
    }
    int rc = gnn_partdir_check(g_work, g_graph);
    if (verbose) fprintf(stderr, "check: %s\n", rc ? gnn_error_message() : "passed");
    gnn_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    if (g_nfiles < 0 && set_up() != 0) abort();
    if (fresh_copy() != 0) abort();
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    input_t in = {data, size};
    int edits = 1 + (int)(take(&in, 1) % 4);
    char path[720];
    for (int i = 0; i < edits; i++) {
        if (snprintf(path, sizeof path, "%s/%s", g_work,
                     g_files[take(&in, 1) % (uint64_t)g_nfiles]) >= (int)sizeof path)
            abort(); /* the set-up's paths are short */
        h5e_edit_file(&in, path);
    }
    read_back();
    return 0;
}
