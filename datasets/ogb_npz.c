/*
 * The npz layout of OGB node-property datasets (ogbn-papers100M):
 * raw/data.npz with edge_index (2, E), node_feat (N, F), num_nodes_list,
 * num_edges_list and per-node extras such as node_year; raw/node-label.npz
 * with node_label (N,) or (N, 1), NaN or -1 for unlabelled nodes.
 *
 * edge_index is read through two cursors on the same member, one on each
 * row, in lock step, so the 26 GB array of papers100M streams through two
 * batch buffers. Features, labels and extras stream in row blocks too.
 */
#include "datasets/builder.h"
#include "datasets/npz.h"
#include "datasets/ogb_internal.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BATCH ((int64_t)1 << 20)

/* A one-element integer array (num_nodes_list and the like), a count below
 * the graph file's limit; what names it in messages ("node count"). */
static int read_scalar(const gnn_npz_t *z, const char *name, const char *what, int64_t *v)
{
    int rc = 0;
    gnn_npz_array_t *a = NULL;
    GNN_TRY(gnn_npz_array_open(z, name, &a));
    GNN_CHECK(gnn_npz_array_info(a)->count == 1, GNN_EFORMAT,
              "%s: '%s' holds %lld values; node-property datasets have one graph",
              gnn_npz_name(z), name, (long long)gnn_npz_array_info(a)->count);
    GNN_TRY(gnn_npz_array_read_i64(a, v, 1));
    GNN_CHECK(*v >= 0, GNN_EFORMAT, "%s: negative '%s'", gnn_npz_name(z), name);
    GNN_CHECK(*v < GNN_GRAPH_MAX_COUNT, GNN_EFORMAT, "%s: %s %lld in '%s' is beyond the limit 2^62",
              gnn_npz_name(z), what, (long long)*v, name);
fail:
    gnn_npz_array_close(a);
    return rc;
}

static int read_edges(const gnn_npz_t *z, gnn_vid_t n, gnn_eid_t m, gnn_builder_t *b)
{
    int rc = 0;
    gnn_npz_array_t *rs = NULL, *rd = NULL;
    gnn_progress_t *prog = NULL;
    int64_t *src = gnn_malloc_array(BATCH, sizeof *src), *dst = gnn_malloc_array(BATCH, sizeof *dst);
    GNN_CHECK(src && dst, GNN_ENOMEM, "out of memory");
    GNN_TRY(gnn_npz_array_open(z, "edge_index", &rs));
    GNN_TRY(gnn_npz_array_open(z, "edge_index", &rd));
    const gnn_npz_info_t *in = gnn_npz_array_info(rs);
    GNN_CHECK(in->ndim == 2 && in->shape[0] == 2, GNN_EFORMAT,
              "%s: 'edge_index' must have shape (2, E)", gnn_npz_name(z));
    GNN_CHECK(in->shape[1] == m, GNN_EFORMAT,
              "%s: 'edge_index' has %lld edges but num_edges_list says %lld", gnn_npz_name(z),
              (long long)in->shape[1], (long long)m);
    GNN_TRY(gnn_npz_array_seek(rd, m));
    prog = gnn_progress_start("reading edges", m, "edges");
    for (gnn_eid_t e = 0; e < m; e += BATCH) {
        int64_t k = m - e < BATCH ? m - e : BATCH;
        GNN_TRY(gnn_npz_array_read_i64(rs, src, k));
        GNN_TRY(gnn_npz_array_read_i64(rd, dst, k));
        for (int64_t i = 0; i < k; i++)
            if (src[i] < 0 || src[i] >= n || dst[i] < 0 || dst[i] >= n) {
                rc = GNN_FAIL(GNN_EFORMAT, "%s: edge %lld (%lld -> %lld) has a node outside [0, %lld)",
                              gnn_npz_name(z), (long long)(e + i), (long long)src[i],
                              (long long)dst[i], (long long)n);
                goto fail;
            }
        GNN_TRY(gnn_builder_add(b, src, dst, NULL, k));
        gnn_progress_set(prog, e + k);
    }
fail:
    gnn_progress_end(prog, rc);
    gnn_npz_array_close(rs);
    gnn_npz_array_close(rd);
    gnn_free(src);
    gnn_free(dst);
    return rc;
}

static int read_features(const gnn_npz_t *z, gnn_vid_t n, int allow_nan, gnn_graph_writer_t *w,
                         int64_t f)
{
    int rc = 0;
    gnn_npz_array_t *a = NULL;
    gnn_progress_t *prog = NULL;
    int64_t rows = ((int64_t)4 << 20) / (4 * f) + 1, bad = 0, first_bad = -1;
    float *block = gnn_malloc_array((size_t)(rows * f), sizeof *block);
    GNN_CHECK(block, GNN_ENOMEM, "out of memory");
    GNN_TRY(gnn_npz_array_open(z, "node_feat", &a));
    prog = gnn_progress_start("reading features", n, "rows");
    for (gnn_vid_t r = 0; r < n; r += rows) {
        int64_t k = n - r < rows ? n - r : rows;
        GNN_TRY(gnn_npz_array_read_f32(a, block, k * f));
        for (int64_t i = 0; i < k * f; i++)
            if (!isfinite(block[i])) {
                if (first_bad < 0) first_bad = r + i / f;
                bad++;
            }
        GNN_TRY(gnn_graph_writer_put_feat(w, r, k, block));
        gnn_progress_set(prog, r + k);
    }
    if (bad) {
        GNN_CHECK(allow_nan, GNN_EFORMAT,
                  "%s: 'node_feat' has %lld NaN or infinite values (first in row %lld); use "
                  "--allow-nan to keep them", gnn_npz_name(z), (long long)bad, (long long)first_bad);
        GNN_WARN("%s: kept %lld NaN or infinite feature values", gnn_npz_name(z), (long long)bad);
    }
fail:
    gnn_progress_end(prog, rc);
    gnn_npz_array_close(a);
    gnn_free(block);
    return rc;
}

/* node_label: NaN or -1 = unlabelled (-1), else an integral class. */
static int read_labels(const char *path, gnn_vid_t n, gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_npz_t *z = NULL;
    gnn_npz_array_t *a = NULL;
    double *v = gnn_malloc_array(BATCH, sizeof *v);
    int64_t *lab = gnn_malloc_array(BATCH, sizeof *lab);
    GNN_CHECK(v && lab, GNN_ENOMEM, "out of memory");
    GNN_TRY(gnn_npz_open(path, &z));
    GNN_TRY(gnn_npz_array_open(z, "node_label", &a));
    const gnn_npz_info_t *in = gnn_npz_array_info(a);
    GNN_CHECK(in->count == n && in->shape[0] == n, GNN_EFORMAT,
              "%s: 'node_label' has %lld values; expected one for each of the %lld nodes%s", path,
              (long long)in->count, (long long)n,
              in->ndim == 2 && in->shape[1] > 1 ? " (multi-label datasets are not supported)" : "");
    for (gnn_vid_t r = 0; r < n; r += BATCH) {
        int64_t k = n - r < BATCH ? n - r : BATCH;
        GNN_TRY(gnn_npz_array_read_f64(a, v, k));
        for (int64_t i = 0; i < k; i++) {
            double x = v[i];
            if (isnan(x) || x == -1) {
                lab[i] = -1;
                continue;
            }
            GNN_CHECK(x == floor(x) && x >= 0 && x < 1e9, GNN_EFORMAT,
                      "%s: node_label[%lld] = %g is not a class id (NaN or -1 mark an unlabelled "
                      "node)", path, (long long)(r + i), x);
            lab[i] = (int64_t)x;
        }
        GNN_TRY(gnn_graph_writer_put_labels(w, r, k, lab));
    }
fail:
    gnn_npz_array_close(a);
    gnn_npz_close(z);
    gnn_free(v);
    gnn_free(lab);
    return rc;
}

/* Other per-node members of data.npz (node_year...) as node_data/NAME. */
static int read_extras(const gnn_npz_t *z, gnn_vid_t n, gnn_graph_writer_t *w)
{
    int rc = 0;
    gnn_npz_array_t *a = NULL;
    void *buf = NULL;
    for (int64_t i = 0; i < gnn_npz_count(z); i++) {
        char name[128];
        snprintf(name, sizeof name, "%s", gnn_npz_member(z, i));
        size_t l = strlen(name);
        if (l > 4 && !strcmp(name + l - 4, ".npy")) name[l - 4] = '\0';
        if (!strcmp(name, "edge_index") || !strcmp(name, "node_feat") ||
            !strcmp(name, "num_nodes_list") || !strcmp(name, "num_edges_list"))
            continue;
        GNN_TRY(gnn_npz_array_open(z, name, &a));
        const gnn_npz_info_t *in = gnn_npz_array_info(a);
        if (in->ndim < 1 || in->ndim > 2 || in->shape[0] != n) {
            GNN_WARN("%s: '%s' is not a per-node array; not kept", gnn_npz_name(z), name);
        } else {
            int64_t cols = in->ndim == 2 ? in->shape[1] : 1;
            int is_int = in->dtype != GNN_NPZ_F32 && in->dtype != GNN_NPZ_F64;
            buf = gnn_malloc_array((size_t)(n * cols), is_int ? sizeof(int64_t) : sizeof(float));
            GNN_CHECK(buf, GNN_ENOMEM, "out of memory reading '%s'", name);
            if (is_int)
                GNN_TRY(gnn_npz_array_read_i64(a, buf, n * cols));
            else
                GNN_TRY(gnn_npz_array_read_f32(a, buf, n * cols));
            const char *key = strncmp(name, "node_", 5) == 0 ? name + 5 : name;
            GNN_TRY(gnn_graph_writer_put_node_data(w, key, is_int, cols, buf));
            GNN_INFO("kept '%s' as node_data/%s", name, key);
            gnn_free(buf);
            buf = NULL;
        }
        gnn_npz_array_close(a);
        a = NULL;
    }
fail:
    gnn_npz_array_close(a);
    gnn_free(buf);
    return rc;
}

int gnn__ogb_convert_npz(const gnn_ogb_opts_t *o)
{
    int rc = 0;
    gnn_npz_t *z = NULL;
    gnn_npz_array_t *fa = NULL;
    gnn_builder_t *b = NULL;
    gnn_graph_writer_t *w = NULL;
    char path[4096], label[4096];
    int64_t n, m, f = 0;

    GNN_TRY(gnn__ogb_path(path, sizeof path, o->dir, "raw/data.npz"));
    GNN_TRY(gnn_npz_open(path, &z));
    GNN_TRY(read_scalar(z, "num_nodes_list", "node count", &n));
    GNN_TRY(read_scalar(z, "num_edges_list", "edge count", &m));
    GNN_INFO("%s: %lld nodes, %lld edges (npz layout)", o->dir, (long long)n, (long long)m);
    if (!o->no_features && gnn_npz_has(z, "node_feat")) {
        GNN_TRY(gnn_npz_array_open(z, "node_feat", &fa));
        const gnn_npz_info_t *in = gnn_npz_array_info(fa);
        GNN_CHECK(in->ndim == 2 && in->shape[0] == n, GNN_EFORMAT,
                  "%s: 'node_feat' must have shape (%lld, F)", path, (long long)n);
        f = in->shape[1];
        gnn_npz_array_close(fa);
        fa = NULL;
    }
    GNN_TRY(gnn__ogb_path(label, sizeof label, o->dir, "raw/node-label.npz"));
    int has_labels = gnn__ogb_probe(label);
    GNN_TRY(has_labels < 0 ? has_labels : 0);

    GNN_TRY(gnn__ogb_builder_open(o, n, &b));
    GNN_TRY(read_edges(z, n, m, b));
    gnn_graph_header_t h = {
        .num_nodes = n,
        .num_edges = -1,
        .directed = !o->symmetrize,
        .csr_flags = gnn_builder_csr_flags(b),
        .feat_dim = f,
        .has_labels = has_labels,
    };
    GNN_TRY(gnn_graph_writer_open(o->out.path, &h, o->out.force, &w));
    GNN_TRY(gnn_builder_write(b, w));
    if (f) GNN_TRY(read_features(z, n, o->allow_nan, w, f));
    if (has_labels) GNN_TRY(read_labels(label, n, w));
    GNN_TRY(read_extras(z, n, w));
    GNN_TRY(gnn__ogb_write_splits(o->dir, o->split, NULL, 0, n, w));
    rc = gnn_graph_writer_commit(w);
    w = NULL;
    if (rc == 0) GNN_INFO("wrote %s", o->out.path);
fail:
    gnn_graph_writer_abort(w);
    gnn_builder_free(b);
    gnn_npz_array_close(fa);
    gnn_npz_close(z);
    return rc;
}
