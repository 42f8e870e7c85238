/*
 * Writing, checking and summarising a partition directory (partdir.h).
 *
 * Writing: relabel (halo.h), then one part at a time build its local
 * graph with its H hops of halo, gather its rows of features, labels and
 * splits, and write part-NNNNN.h5 into "<dir>.tmp-<pid>"; meta.h5 last;
 * then rename. Peak memory is the graph, one marker per node shared by
 * the parts, and one part.
 *
 * Checking re-derives everything from the graph file: each row of each
 * part (owned and halo), mapped back through local_to_global and
 * node_map, must be the graph's row as a multiset (so, the owned rows
 * partitioning the nodes, every edge appears exactly once as an owned
 * in-edge); the halo must be, hop by hop, exactly the breadth-first search
 * over the graph's in-edges from the owned nodes; and every stored array
 * must equal the graph's rows. One-hop directories without the hop fields
 * (num_rows, halo_hop_start, part_rows ...) read as one hop.
 */
#include "partition/partdir.h"
#include "partition/partdir_impl.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/tmpclean.h"
#include "graph/base/json.h"
#include "graph/h5util.h"
#include "partition/halo.h"
#include "partition/kway.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const split_names[GNN_NUM_SPLITS] = {"train", "valid", "test"};

/* New ids of node_map written per pass when the map has no old_of_new. */
#define NODE_MAP_BLOCK ((gnn_vid_t)8 << 20)

/* ---- Small HDF5 helpers ------------------------------------------------------ */

static int put_array(hid_t loc, const char *path, const char *name, hid_t ftype, hid_t mtype,
                     int rank, const hsize_t *dims, const void *data)
{
    int rc = 0;
    hid_t sp = -1, d = -1;
    sp = H5Screate_simple(rank, dims, NULL);
    if (sp < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot describe %s", path, name);
        goto fail;
    }
    d = H5Dcreate2(loc, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (d < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create %s", path, name);
        goto fail;
    }
    hsize_t n = 1;
    for (int r = 0; r < rank; r++) n *= dims[r];
    if (n > 0 && H5Dwrite(d, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot write %s", path, name);
fail:
    gnn__h5_close(&d);
    gnn__h5_close(&sp);
    return rc;
}

static int put_i64(hid_t loc, const char *path, const char *name, const int64_t *v, int64_t n)
{
    hsize_t dims[1] = {(hsize_t)n};
    return put_array(loc, path, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 1, dims, v);
}

/* An int64 table of rows x cols entries (row-major). */
static int put_i64_table(hid_t loc, const char *path, const char *name, const int64_t *v,
                         int64_t rows, int64_t cols)
{
    hsize_t dims[2] = {(hsize_t)rows, (hsize_t)cols};
    return put_array(loc, path, name, H5T_STD_I64LE, H5T_NATIVE_INT64, 2, dims, v);
}

/* Read the int64 dataset name of loc of shape (rows,) (cols == 0) or
 * (rows, cols) into *out; absent: *out = NULL and 0 when optional,
 * GNN_EFORMAT otherwise. */
static int get_i64_shaped(hid_t loc, const char *path, const char *name, int64_t rows,
                          int64_t cols, int optional, int64_t **out)
{
    int rc = 0;
    hid_t d = -1;
    hsize_t dims[2] = {0, 0};
    int rank = cols ? 2 : 1;
    *out = NULL;
    GNN_TRY(gnn__h5_open_dataset(loc, path, name, GNN_H5_INT, rank, optional, dims, &d));
    if (d < 0) return 0;
    if ((int64_t)dims[0] != rows || (cols && (int64_t)dims[1] != cols)) {
        if (cols)
            rc = GNN_FAIL(GNN_EFORMAT, "%s: %s is %llu x %llu, expected %" PRId64 " x %" PRId64,
                          path, name, (unsigned long long)dims[0], (unsigned long long)dims[1],
                          rows, cols);
        else
            rc = GNN_FAIL(GNN_EFORMAT, "%s: %s has %llu entries, expected %" PRId64, path, name,
                          (unsigned long long)dims[0], rows);
        goto fail;
    }
    int64_t n = rows * (cols ? cols : 1);
    *out = gnn_malloc_array((size_t)n + 1, sizeof **out);
    GNN_CHECK(*out, GNN_ENOMEM, "%s: %s", path, name);
    if (n > 0)
        GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_INT64, rank, cols ? (hsize_t)cols : 1, 0, rows,
                                  *out));
fail:
    if (rc < 0) {
        gnn_free(*out);
        *out = NULL;
    }
    gnn__h5_close(&d);
    return rc;
}

/* Read the whole int64 dataset name of loc into *out (n entries; shape
 * checked against want when want >= 0). */
static int get_i64(hid_t loc, const char *path, const char *name, int64_t want, int64_t **out,
                   int64_t *n)
{
    int rc = 0;
    hid_t d = -1;
    hsize_t dims[1];
    *out = NULL;
    GNN_TRY(gnn__h5_open_dataset(loc, path, name, GNN_H5_INT, 1, 0, dims, &d));
    if (want >= 0 && (int64_t)dims[0] != want) {
        rc = GNN_FAIL(GNN_EFORMAT, "%s: %s has %llu entries, expected %" PRId64, path, name,
                      (unsigned long long)dims[0], want);
        goto fail;
    }
    *out = gnn_malloc_array((size_t)dims[0] + 1, sizeof **out);
    GNN_CHECK(*out, GNN_ENOMEM, "%s: %s", path, name);
    if (dims[0] > 0) GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_INT64, 1, 1, 0, (int64_t)dims[0], *out));
    *n = (int64_t)dims[0];
fail:
    if (rc < 0) {
        gnn_free(*out);
        *out = NULL;
    }
    gnn__h5_close(&d);
    return rc;
}

static int open_file(const char *path, hid_t *f)
{
    gnn__h5_init();
    struct stat st;
    if (stat(path, &st) != 0) return GNN_FAIL(GNN_ENOENT, "%s: %s", path, strerror(errno));
    *f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*f < 0) return GNN_H5_FAIL(GNN_EFORMAT, "%s: not an HDF5 file", path);
    return 0;
}

/* Attribute reads that name the file on failure. */
static int attr_i64(hid_t f, const char *path, const char *name, int64_t *v)
{
    int rc = gnn__h5_check_attr_single(f, name);
    if (rc == 0) rc = gnn__h5_get_attr_i64(f, name, 0, v);
    if (rc < 0) gnn_error_prefix("%s", path);
    return rc;
}

/* An optional one: *v untouched when absent. */
static int attr_i64_opt(hid_t f, const char *path, const char *name, int64_t *v)
{
    int rc = gnn__h5_check_attr_single(f, name);
    if (rc == 0) rc = gnn__h5_get_attr_i64(f, name, 1, v);
    if (rc < 0) gnn_error_prefix("%s", path);
    return rc;
}

static int attr_str(hid_t f, const char *path, const char *name, char *buf, size_t len)
{
    int rc = gnn__h5_check_attr_single(f, name);
    if (rc == 0) rc = gnn__h5_get_attr_str(f, name, buf, len);
    if (rc < 0) gnn_error_prefix("%s", path);
    return rc;
}

/* An optional string attribute: buf untouched when absent. */
static int attr_str_opt(hid_t f, const char *path, const char *name, char *buf, size_t len)
{
    htri_t e = H5Aexists(f, name);
    if (e < 0) return GNN_FAIL(GNN_EHDF5, "%s: cannot look for attribute %s", path, name);
    return e ? attr_str(f, path, name, buf, len) : 0;
}

static int check_format(hid_t f, const char *path, const char *want)
{
    int rc = 0;
    char fmt[64] = "";
    int64_t version = 0;
    GNN_TRY(attr_str(f, path, "format", fmt, sizeof fmt));
    GNN_CHECK(!strcmp(fmt, want), GNN_EFORMAT, "%s: format \"%s\", expected \"%s\"", path, fmt,
              want);
    GNN_TRY(attr_i64(f, path, "version", &version));
    GNN_CHECK(version == GNN_PARTDIR_VERSION, GNN_EVERSION,
              "%s: partition format version %" PRId64 " is not supported (this build reads %d)",
              path, version, GNN_PARTDIR_VERSION);
fail:
    return rc;
}

/* ---- Directories --------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static char *path_join(const char *dir, const char *name)
{
    size_t len = strlen(dir) + strlen(name) + 2;
    char *p = gnn_malloc(len);
    if (p) snprintf(p, len, "%s/%s", dir, name);
    return p;
}

/* ---- Writing ------------------------------------------------------------------- */

/* Create path (not there yet) with its format and version attributes;
 * *out is the open file, or left alone on failure. */
static int create_file(const char *path, const char *format, hid_t *out)
{
    int rc = 0;
    hid_t f = H5Fcreate(path, H5F_ACC_EXCL, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return GNN_H5_FAIL(GNN_EIO, "%s: cannot create", path);
    GNN_TRY(gnn__h5_set_attr_str(f, "format", format));
    GNN_TRY(gnn__h5_set_attr_i64(f, "version", GNN_PARTDIR_VERSION));
    *out = f;
    return 0;
fail:
    H5Fclose(f);
    return rc;
}

static int tx_names(const char *dir, long tag, gnn__partdir_tx_t *tx)
{
    memset(tx, 0, sizeof *tx);
    /* "out/" names the directory "out": the temporary one goes beside it. */
    tx->dir = gnn_strdup(dir);
    if (!tx->dir) return GNN_FAIL(GNN_ENOMEM, "partition");
    for (size_t n = strlen(tx->dir); n > 1 && tx->dir[n - 1] == '/'; n--) tx->dir[n - 1] = '\0';
    size_t len = strlen(tx->dir) + 32;
    tx->tmp = gnn_malloc(len);
    tx->old = gnn_malloc(len);
    if (!tx->tmp || !tx->old) return GNN_FAIL(GNN_ENOMEM, "partition");
    snprintf(tx->tmp, len, "%s.tmp-%ld", tx->dir, tag);
    snprintf(tx->old, len, "%s.old-%ld", tx->dir, tag);
    return 0;
}

int gnn__partdir_begin(const char *dir, int force, long tag, gnn__partdir_tx_t *tx)
{
    int rc = 0;
    struct stat sb;
    GNN_TRY(tx_names(dir, tag, tx));
    tx->exists = stat(tx->dir, &sb) == 0;
    GNN_CHECK(!tx->exists || force, GNN_EEXISTS, "%s exists (add --force to replace it)",
              tx->dir);
    GNN_TRY(gnn_output_replaceable(NULL, tx->dir, 1));
    gnn__h5_init();
    rm_tree(tx->tmp);
    GNN_CHECK(mkdir(tx->tmp, 0777) == 0, GNN_EIO, "cannot create %s: %s", tx->tmp,
              strerror(errno));
    tx->made = 1;
    tx->clean = gnn_tmp_register(tx->tmp, 1);
fail:
    return rc;
}

int gnn__partdir_join(const char *tmp, gnn__partdir_tx_t *tx)
{
    int rc = tx_names(tmp, 0, tx);
    if (rc == 0) {
        gnn_free(tx->tmp);
        tx->tmp = gnn_strdup(tmp);
        if (!tx->tmp) rc = GNN_FAIL(GNN_ENOMEM, "partition");
    }
    gnn__h5_init();
    return rc;
}

int gnn__partdir_commit(gnn__partdir_tx_t *tx)
{
    if (tx->exists && rename(tx->dir, tx->old) != 0)
        return GNN_FAIL(GNN_EIO, "cannot move %s aside: %s", tx->dir, strerror(errno));
    if (rename(tx->tmp, tx->dir) != 0) {
        int rc = GNN_FAIL(GNN_EIO, "cannot rename %s to %s: %s", tx->tmp, tx->dir,
                          strerror(errno));
        if (tx->exists) (void)rename(tx->old, tx->dir);
        return rc;
    }
    tx->made = 0;
    gnn_tmp_unregister(tx->clean);
    tx->clean = 0;
    if (tx->exists) rm_tree(tx->old);
    return 0;
}

void gnn__partdir_end(gnn__partdir_tx_t *tx)
{
    if (tx->made) rm_tree(tx->tmp);
    gnn_tmp_unregister(tx->clean);
    gnn_free(tx->dir);
    gnn_free(tx->tmp);
    gnn_free(tx->old);
    memset(tx, 0, sizeof *tx);
}

int gnn__partdir_write_part(const char *tmp, const gnn__part_content_t *c, gnn__part_stats_t *st)
{
    int rc = 0;
    const gnn_part_local_t *l = c->local;
    int p = l->part, hops = l->hops;
    char name[32];
    char *path = NULL;
    hid_t f = -1, grp = -1;
    snprintf(name, sizeof name, "part-%05d.h5", p);
    path = path_join(tmp, name);
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    GNN_TRY(create_file(path, GNN_PARTDIR_PART_FORMAT, &f));
    GNN_TRY(gnn__h5_set_attr_i64(f, "part", p));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_parts", c->num_parts));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_owned", l->n_owned));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_local", l->n_local));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_edges", l->csr.nnz));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_rows", l->n_rows));
    GNN_TRY(gnn__h5_set_attr_i64(f, "halo_hops", hops));
    GNN_TRY(gnn__h5_set_attr_i64(f, "first_id", c->first_id));
    GNN_TRY(put_i64(f, path, "halo_hop_start", l->hop_start, (int64_t)hops + 1));
    GNN_TRY(put_i64(f, path, "indptr", l->csr.indptr, l->n_rows + 1));
    GNN_TRY(put_i64(f, path, "indices", l->csr.indices, l->csr.nnz));
    if (l->csr.weights) {
        hsize_t dims[1] = {(hsize_t)l->csr.nnz};
        GNN_TRY(put_array(f, path, "weights", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 1, dims,
                          l->csr.weights));
    }
    if (c->etype) {
        hsize_t dims[1] = {(hsize_t)l->csr.nnz};
        GNN_TRY(put_array(f, path, "etype", H5T_STD_I32LE, H5T_NATIVE_INT32, 1, dims, c->etype));
    }
    GNN_TRY(put_i64(f, path, "local_to_global", l->local_to_global, l->n_local));
    if (c->feat) {
        hsize_t dims[2] = {(hsize_t)l->n_owned, (hsize_t)c->feat_dim};
        GNN_TRY(put_array(f, path, "feat", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, dims, c->feat));
        GNN_TRY(gnn__h5_set_attr_i64(f, "feat_dim", c->feat_dim));
    }
    if (c->label) {
        GNN_TRY(put_i64(f, path, "label", c->label, l->n_owned));
        GNN_TRY(gnn__h5_set_attr_i64(f, "num_classes", c->num_classes));
    }
    grp = H5Gcreate2(f, "split", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (grp < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create group split", path);
        goto fail;
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        if (c->split_local[s])
            GNN_TRY(put_i64(grp, path, split_names[s], c->split_local[s], c->split_count[s]));
    if (H5Fflush(f, H5F_SCOPE_GLOBAL) < 0) {
        rc = GNN_H5_FAIL(GNN_EIO, "%s: cannot write", path);
        goto fail;
    }
    st->nodes = l->n_owned;
    st->edges = l->csr.indptr[l->n_owned];
    st->halo = l->n_local - l->n_owned;
    st->rows = l->n_rows;
    st->stored = l->csr.nnz;
    for (int h = 0; h < hops; h++) st->hop[h] = l->hop_start[h + 1] - l->hop_start[h];
    st->train = c->split_local[GNN_SPLIT_TRAIN] ? c->split_count[GNN_SPLIT_TRAIN] : 0;
fail:
    gnn__h5_close(&grp);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = GNN_H5_FAIL(GNN_EIO, "%s: cannot close", path);
    gnn_free(path);
    return rc;
}

/*
 * node_map (old id of each new id): from m->old_of_new, or without it in
 * blocks of new ids, one pass over the nodes a block, so that a map of 4
 * bytes per node suffices.
 */
static int put_node_map(hid_t f, const char *path, const gnn_part_map_t *m)
{
    int rc = 0;
    hsize_t dims[1] = {(hsize_t)m->num_nodes};
    hid_t sp = -1, d = -1;
    int64_t *buf = NULL;
    if (m->old_of_new) return put_i64(f, path, "node_map", m->old_of_new, m->num_nodes);
    sp = H5Screate_simple(1, dims, NULL);
    if (sp >= 0) d = H5Dcreate2(f, "node_map", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT,
                                H5P_DEFAULT);
    if (d < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "%s: cannot create node_map", path);
        goto fail;
    }
    gnn_vid_t n = m->num_nodes, block = n < NODE_MAP_BLOCK ? n : NODE_MAP_BLOCK;
    buf = gnn_malloc_array((size_t)block + 1, sizeof *buf);
    GNN_CHECK(buf, GNN_ENOMEM, "%s: node_map", path);
    for (gnn_vid_t x0 = 0; x0 < n; x0 += block) {
        gnn_vid_t x1 = x0 + block < n ? x0 + block : n;
        for (gnn_vid_t v = 0; v < n; v++) {
            gnn_vid_t x = gnn_part_new_id(m, v);
            if (x >= x0 && x < x1) buf[x - x0] = v;
        }
        GNN_TRY(gnn__h5_write_rows(d, H5T_NATIVE_INT64, 1, 1, x0, x1 - x0, buf));
    }
fail:
    gnn__h5_close(&d);
    gnn__h5_close(&sp);
    gnn_free(buf);
    return rc;
}

/* A typed graph's types into meta.h5: the graph file's attributes and
 * node_type_offsets (graph-file ids), node_type_feat_dim (each type's
 * feature width, 0: featureless; the part files' feat rows are padded to
 * the widest), and part_type_nodes (parts x types: owned nodes of each
 * type). */
static int write_types(hid_t f, const char *path, const gnn_graph_types_t *t,
                       const gnn_part_map_t *m)
{
    int rc = 0;
    int64_t *cnt = gnn_calloc((size_t)m->num_parts * (size_t)t->n_ntypes + 1, sizeof *cnt);
    GNN_CHECK(cnt, GNN_ENOMEM, "%s", path);
    GNN_TRY(gnn__h5_write_types(f, path, t));
    GNN_TRY(put_i64(f, path, "node_type_feat_dim", t->feat_dim, t->n_ntypes));
    for (int ty = 0; ty < t->n_ntypes; ty++)
        for (gnn_vid_t v = t->off[ty]; v < t->off[ty + 1]; v++)
            cnt[(size_t)m->part[v] * (size_t)t->n_ntypes + (size_t)ty]++;
    GNN_TRY(put_i64_table(f, path, "part_type_nodes", cnt, m->num_parts, t->n_ntypes));
fail:
    gnn_free(cnt);
    return rc;
}

int gnn__partdir_write_meta(const char *tmp, gnn_vid_t n, gnn_eid_t nnz, const gnn_part_map_t *m,
                            const gnn_partdir_meta_t *meta, const gnn__part_stats_t *st,
                            int directed, const gnn_graph_t *lk)
{
    int rc = 0;
    char *path = path_join(tmp, "meta.h5");
    hid_t f = -1, grp = -1;
    int k = m->num_parts;
    int64_t *col = NULL, *hop = NULL;
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    GNN_TRY(create_file(path, GNN_PARTDIR_FORMAT, &f));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_parts", k));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_nodes", n));
    GNN_TRY(gnn__h5_set_attr_i64(f, "num_edges", nnz));
    GNN_TRY(gnn__h5_set_attr_str(f, "graph", meta->graph));
    GNN_TRY(gnn__h5_set_attr_str(f, "method", meta->method));
    GNN_TRY(gnn__h5_set_attr_str(f, "balance", meta->balance));
    GNN_TRY(gnn__h5_set_attr_i64(f, "ufactor", meta->ufactor));
    GNN_TRY(gnn__h5_set_attr_u64(f, "seed", meta->seed));
    GNN_TRY(gnn__h5_set_attr_i64(f, "halo_hops", meta->halo_hops));
    GNN_TRY(gnn__h5_set_attr_i64(f, "edge_cut", meta->edge_cut));
    GNN_TRY(gnn__h5_set_attr_i64(f, "max_metis_edges", meta->max_metis_edges));
    GNN_TRY(gnn__h5_set_attr_i64(f, "mem_budget", meta->mem_budget));
    GNN_TRY(gnn__h5_set_attr_i64(f, "ranks", meta->ranks));
    GNN_TRY(gnn__h5_set_attr_i64(f, "coarse_levels", meta->coarse_levels));
    GNN_TRY(gnn__h5_set_attr_str(f, "scheme", meta->scheme ? meta->scheme : "-"));
    GNN_TRY(put_i64(f, path, "part_start", m->start, k + 1));
    GNN_TRY(put_node_map(f, path, m));
    col = gnn_malloc_array((size_t)k + 1, sizeof *col);
    GNN_CHECK(col, GNN_ENOMEM, "%s", path);
    static const char *const names[4] = {"part_nodes", "part_edges", "part_halo", "part_train"};
    for (int c = 0; c < 4; c++) {
        for (int p = 0; p < k; p++)
            col[p] = c == 0 ? st[p].nodes : c == 1 ? st[p].edges : c == 2 ? st[p].halo : st[p].train;
        GNN_TRY(put_i64(f, path, names[c], col, k));
    }
    for (int p = 0; p < k; p++) col[p] = st[p].rows;
    GNN_TRY(put_i64(f, path, "part_rows", col, k));
    for (int p = 0; p < k; p++) col[p] = st[p].stored;
    GNN_TRY(put_i64(f, path, "part_stored_edges", col, k));
    int hops = meta->halo_hops;
    hop = gnn_malloc_array((size_t)k * (size_t)hops + 1, sizeof *hop);
    GNN_CHECK(hop, GNN_ENOMEM, "%s", path);
    for (int p = 0; p < k; p++)
        for (int h = 0; h < hops; h++) hop[(size_t)p * (size_t)hops + (size_t)h] = st[p].hop[h];
    GNN_TRY(put_i64_table(f, path, "part_hop_halo", hop, k, hops));
    GNN_TRY(gnn__h5_set_attr_i64(f, "directed", directed ? 1 : 0));
    if (lk && lk->types) GNN_TRY(write_types(f, path, lk->types, m));
    if (lk && lk->link[0]) { /* the held-out edges, as the graph file has them */
        grp = H5Gcreate2(f, "link", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        GNN_CHECK(grp >= 0, GNN_EHDF5, "%s: cannot create the link group", path);
        for (int s = 0; s < GNN_NUM_LINK_SETS; s++)
            GNN_TRY(put_i64_table(grp, path, gnn_link_set_names[s], lk->link[s],
                                  lk->link_size[s], 2));
        GNN_TRY(gnn__h5_set_attr_i64(grp, "neg_per_pos", lk->link_neg_per_pos));
    }
fail:
    if (grp >= 0) H5Gclose(grp);
    if (f >= 0 && H5Fclose(f) < 0 && rc == 0) rc = GNN_H5_FAIL(GNN_EIO, "%s: cannot close", path);
    gnn_free(hop);
    gnn_free(col);
    gnn_free(path);
    return rc;
}

void gnn__part_splits_free(gnn__part_splits_t *s)
{
    for (int i = 0; i < GNN_NUM_SPLITS; i++) gnn_free(s->local[i]);
    gnn_free(s->count);
    gnn_free(s->end);
    memset(s, 0, sizeof *s);
}

int gnn__part_splits_build(const char *graph, int64_t *const split[GNN_NUM_SPLITS],
                           const int64_t size[GNN_NUM_SPLITS], const int32_t *part,
                           const gnn_part_map_t *m, gnn__part_splits_t *s)
{
    int rc = 0, k = m->num_parts;
    unsigned char *seen = NULL;
    memset(s, 0, sizeof *s);
    s->k = k;
    s->count = gnn_calloc((size_t)k * GNN_NUM_SPLITS + 1, sizeof *s->count);
    s->end = gnn_calloc((size_t)k * GNN_NUM_SPLITS + 1, sizeof *s->end);
    GNN_CHECK(s->count && s->end, GNN_ENOMEM, "partition: split indices");
    /* A node named twice in a split would be trained on (or scored) twice,
     * and no reader takes such a part: refused (one bit per node). */
    seen = gnn_calloc((size_t)m->num_nodes / 8 + 1, 1);
    GNN_CHECK(seen, GNN_ENOMEM, "partition: split indices");
    for (int i = 0; i < GNN_NUM_SPLITS; i++) {
        if (!split[i]) continue;
        memset(seen, 0, (size_t)m->num_nodes / 8 + 1);
        for (int64_t j = 0; j < size[i]; j++) {
            gnn_vid_t v = split[i][j];
            GNN_CHECK(!(seen[v >> 3] & (1u << (v & 7))), GNN_EFORMAT,
                      "%s: split/%s names node %" PRId64 " twice", graph, split_names[i],
                      (int64_t)v);
            seen[v >> 3] |= (unsigned char)(1u << (v & 7));
        }
    }
    /* Count per part, then fill in split order: each part's list keeps the
     * order of the graph's. */
    for (int i = 0; i < GNN_NUM_SPLITS; i++) {
        if (!split[i]) continue;
        s->local[i] = gnn_malloc_array((size_t)size[i] + 1, sizeof *s->local[i]);
        GNN_CHECK(s->local[i], GNN_ENOMEM, "partition: split indices");
        for (int64_t j = 0; j < size[i]; j++)
            s->count[(size_t)part[split[i][j]] * GNN_NUM_SPLITS + (size_t)i]++;
    }
    for (int i = 0; i < GNN_NUM_SPLITS; i++) {
        int64_t at = 0;
        for (int p = 0; p < k; p++) {
            s->end[(size_t)p * GNN_NUM_SPLITS + (size_t)i] = at;
            at += s->count[(size_t)p * GNN_NUM_SPLITS + (size_t)i];
        }
        if (!split[i]) continue;
        for (int64_t j = 0; j < size[i]; j++) {
            gnn_vid_t v = split[i][j];
            int p = part[v];
            s->local[i][s->end[(size_t)p * GNN_NUM_SPLITS + (size_t)i]++] =
                (int64_t)m->rank[v];
        }
    }
    gnn_free(seen);
    return 0;
fail:
    gnn_free(seen);
    gnn__part_splits_free(s);
    return rc;
}

void gnn__part_splits_of(const gnn__part_splits_t *s, int p, gnn__part_content_t *c)
{
    for (int i = 0; i < GNN_NUM_SPLITS; i++) {
        size_t ix = (size_t)p * GNN_NUM_SPLITS + (size_t)i;
        c->split_count[i] = s->count[ix];
        c->split_local[i] = s->local[i] ? s->local[i] + (s->end[ix] - s->count[ix]) : NULL;
    }
}

int gnn_partdir_write(const char *dir, const gnn_graph_t *g, const int32_t *part, int k,
                      const gnn_partdir_meta_t *meta, int force)
{
    int rc = 0;
    gnn_part_map_t m = {0};
    gnn__partdir_tx_t tx = {0};
    gnn__part_splits_t sp = {0};
    gnn__part_stats_t *st = NULL;
    gnn_part_local_t l = {0};
    gnn_part_rows_t rows = {.g = &g->csr};
    gnn_csr_t view;
    float *feat = NULL, *relw = NULL;
    int64_t *lab = NULL;
    int32_t *et = NULL;
    GNN_CHECK(dir && g && part && meta, GNN_EINVAL, "partition: NULL argument");
    if (g->types) {
        /* The relations ride through the local graphs as edge weights
         * (exact: relation ids < 2^24), and come out as the part's etype. */
        GNN_CHECK(!g->csr.weights, GNN_EUNSUPPORTED,
                  "partition: a typed graph with edge weights is not supported");
        relw = gnn_alloc_large(((size_t)g->csr.nnz + 1) * sizeof *relw);
        GNN_CHECK(relw, GNN_ENOMEM, "partition: relations");
        for (gnn_eid_t e = 0; e < g->csr.nnz; e++) relw[e] = (float)g->etype[e];
        view = g->csr;
        view.weights = relw;
        rows.g = &view;
    }
    GNN_CHECK(meta->halo_hops >= 1 && meta->halo_hops <= GNN_PARTDIR_MAX_HOPS, GNN_EINVAL,
              "partition: --halo-hops %d outside [1, %d]", meta->halo_hops, GNN_PARTDIR_MAX_HOPS);
    GNN_TRY(gnn__partdir_begin(dir, force, (long)getpid(), &tx));
    GNN_TRY(gnn_part_relabel(part, g->csr.n_rows, k, 1, &m));
    GNN_TRY(gnn__part_splits_build(meta->graph ? meta->graph : "the graph", g->split, g->split_size, part, &m, &sp));
    st = gnn_calloc((size_t)k, sizeof *st);
    rows.mark = gnn_alloc_large(((size_t)m.num_nodes + 1) * sizeof *rows.mark);
    GNN_CHECK(st && rows.mark, GNN_ENOMEM, "partition");
    for (gnn_vid_t x = 0; x < m.num_nodes; x++) rows.mark[x] = -1;
    for (int p = 0; p < k; p++) {
        gnn_vid_t lo = m.start[p], no = m.start[p + 1] - lo;
        gnn__part_content_t c = {.num_parts = k, .first_id = lo, .local = &l};
        GNN_TRY(gnn_part_local_build(&rows, &m, p, NULL, meta->halo_hops, &l));
        if (g->feat) {
            feat = gnn_malloc_array((size_t)no * (size_t)g->feat_dim + 1, sizeof *feat);
            GNN_CHECK(feat, GNN_ENOMEM, "part %d: features", p);
            for (gnn_vid_t i = 0; i < no; i++)
                memcpy(feat + i * g->feat_dim, g->feat + m.old_of_new[lo + i] * g->feat_dim,
                       (size_t)g->feat_dim * sizeof *feat);
            c.feat = feat;
            c.feat_dim = g->feat_dim;
        }
        if (g->label) {
            lab = gnn_malloc_array((size_t)no + 1, sizeof *lab);
            GNN_CHECK(lab, GNN_ENOMEM, "part %d: labels", p);
            for (gnn_vid_t i = 0; i < no; i++) lab[i] = g->label[m.old_of_new[lo + i]];
            c.label = lab;
            c.num_classes = g->num_classes;
        }
        gnn__part_splits_of(&sp, p, &c);
        if (relw) {
            et = gnn_malloc_array((size_t)l.csr.nnz + 1, sizeof *et);
            GNN_CHECK(et, GNN_ENOMEM, "part %d: relations", p);
            for (gnn_eid_t e = 0; e < l.csr.nnz; e++) et[e] = (int32_t)l.csr.weights[e];
            gnn_free(l.csr.weights);
            l.csr.weights = NULL;
            c.etype = et;
        }
        GNN_TRY(gnn__partdir_write_part(tx.tmp, &c, &st[p]));
        gnn_free(et);
        et = NULL;
        gnn_part_local_free(&l);
        gnn_free(feat);
        gnn_free(lab);
        feat = NULL;
        lab = NULL;
    }
    GNN_TRY(gnn__partdir_write_meta(tx.tmp, g->csr.n_rows, g->csr.nnz, &m, meta, st, g->directed,
                                    g));
    GNN_TRY(gnn__partdir_commit(&tx));
fail:
    gnn__partdir_end(&tx);
    gnn_part_local_free(&l);
    gnn_free(feat);
    gnn_free(lab);
    gnn_free(et);
    gnn_free(relw);
    gnn__part_splits_free(&sp);
    gnn_free(st);
    gnn_free(rows.mark);
    gnn_part_map_free(&m);
    return rc;
}

/* ---- Reading back ---------------------------------------------------------------- */

typedef struct {
    int k;
    int64_t num_nodes, num_edges, edge_cut, ufactor, halo_hops;
    int64_t max_metis_edges, mem_budget, ranks, coarse_levels; /* -1: not recorded */
    uint64_t seed;
    char graph[4096], method[32], balance[64], scheme[16]; /* scheme: "" when not recorded */
    int64_t *start, *node_map;
    int64_t *stat[4];      /* nodes, edges (owned in-edges), halo, train */
    int64_t *rows, *stored; /* CSR rows, in-edges stored */
    int64_t *hop;          /* K x halo_hops: halo nodes at each hop */
    gnn_graph_types_t *types; /* a typed graph's, or NULL */
    int64_t *type_nodes;   /* K x types: owned nodes of each type */
} meta_t;

static void meta_free(meta_t *m)
{
    gnn_free(m->start);
    gnn_free(m->node_map);
    for (int c = 0; c < 4; c++) gnn_free(m->stat[c]);
    gnn_free(m->rows);
    gnn_free(m->stored);
    gnn_free(m->hop);
    gnn_free(m->types);
    gnn_free(m->type_nodes);
    memset(m, 0, sizeof *m);
}

/* *dst = a copy of the k entries of src unless already read. */
static int default_i64(int64_t **dst, const int64_t *src, int64_t k, const char *path)
{
    if (*dst) return 0;
    *dst = gnn_malloc_array((size_t)k + 1, sizeof **dst);
    if (!*dst) return GNN_FAIL(GNN_ENOMEM, "%s", path);
    memcpy(*dst, src, (size_t)k * sizeof **dst);
    return 0;
}

static int meta_read(const char *dir, meta_t *m, int with_map)
{
    int rc = 0;
    hid_t f = -1;
    int64_t n = 0, k = 0;
    memset(m, 0, sizeof *m);
    char *path = path_join(dir, "meta.h5");
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    struct stat sb;
    GNN_CHECK(stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode), GNN_ENOENT,
              "%s: no partition directory", dir);
    GNN_TRY(open_file(path, &f));
    GNN_TRY(check_format(f, path, GNN_PARTDIR_FORMAT));
    GNN_TRY(attr_i64(f, path, "num_parts", &k));
    GNN_CHECK(k >= 1 && k <= (1 << 20), GNN_EFORMAT, "%s: num_parts %" PRId64, path, k);
    m->k = (int)k;
    GNN_TRY(attr_i64(f, path, "num_nodes", &m->num_nodes));
    GNN_TRY(attr_i64(f, path, "num_edges", &m->num_edges));
    GNN_TRY(attr_i64(f, path, "edge_cut", &m->edge_cut));
    GNN_TRY(attr_i64(f, path, "ufactor", &m->ufactor));
    GNN_TRY(attr_i64(f, path, "halo_hops", &m->halo_hops));
    m->max_metis_edges = m->mem_budget = m->ranks = m->coarse_levels = -1;
    GNN_TRY(attr_i64_opt(f, path, "max_metis_edges", &m->max_metis_edges));
    GNN_TRY(attr_i64_opt(f, path, "mem_budget", &m->mem_budget));
    GNN_TRY(attr_i64_opt(f, path, "ranks", &m->ranks));
    GNN_TRY(attr_i64_opt(f, path, "coarse_levels", &m->coarse_levels));
    GNN_CHECK(m->halo_hops >= 1 && m->halo_hops <= GNN_PARTDIR_MAX_HOPS, GNN_EFORMAT,
              "%s: halo_hops %" PRId64 " outside [1, %d]", path, m->halo_hops,
              GNN_PARTDIR_MAX_HOPS);
    rc = gnn__h5_get_attr_u64(f, "seed", 0, &m->seed);
    if (rc < 0) {
        gnn_error_prefix("%s", path);
        goto fail;
    }
    GNN_TRY(attr_str(f, path, "graph", m->graph, sizeof m->graph));
    GNN_TRY(attr_str(f, path, "method", m->method, sizeof m->method));
    GNN_TRY(attr_str(f, path, "balance", m->balance, sizeof m->balance));
    GNN_TRY(attr_str_opt(f, path, "scheme", m->scheme, sizeof m->scheme));
    GNN_CHECK(m->num_nodes >= k && m->num_edges >= 0, GNN_EFORMAT,
              "%s: %" PRId64 " nodes and %" PRId64 " edges for %" PRId64 " parts", path,
              m->num_nodes, m->num_edges, k);
    GNN_TRY(get_i64(f, path, "part_start", k + 1, &m->start, &n));
    GNN_CHECK(m->start[0] == 0 && m->start[k] == m->num_nodes, GNN_EFORMAT,
              "%s: part_start does not span 0 .. %" PRId64, path, m->num_nodes);
    for (int64_t p = 0; p < k; p++)
        GNN_CHECK(m->start[p] <= m->start[p + 1], GNN_EFORMAT,
                  "%s: part_start decreases at part %" PRId64, path, p);
    static const char *const names[4] = {"part_nodes", "part_edges", "part_halo", "part_train"};
    for (int c = 0; c < 4; c++) GNN_TRY(get_i64(f, path, names[c], k, &m->stat[c], &n));
    /* Optional with one hop: without them rows = owned nodes, stored =
     * owned in-edges, and the one hop is the whole halo. */
    int one = m->halo_hops == 1;
    GNN_TRY(get_i64_shaped(f, path, "part_rows", k, 0, one, &m->rows));
    GNN_TRY(get_i64_shaped(f, path, "part_stored_edges", k, 0, one, &m->stored));
    GNN_TRY(get_i64_shaped(f, path, "part_hop_halo", k, m->halo_hops, one, &m->hop));
    GNN_TRY(default_i64(&m->rows, m->stat[0], k, path));
    GNN_TRY(default_i64(&m->stored, m->stat[1], k, path));
    GNN_TRY(default_i64(&m->hop, m->stat[2], k, path));
    if (with_map) {
        GNN_TRY(get_i64(f, path, "node_map", m->num_nodes, &m->node_map, &n));
        /* A permutation, or ids built from it go astray (rows of one node
         * written twice, another's never). */
        uint8_t *seen = gnn_calloc((size_t)m->num_nodes / 8 + 1, 1);
        GNN_CHECK(seen, GNN_ENOMEM, "%s: node_map", path);
        int64_t bad = -1;
        for (int64_t x = 0; x < m->num_nodes && bad < 0; x++) {
            int64_t v = m->node_map[x];
            if (v < 0 || v >= m->num_nodes || (seen[v >> 3] & (1u << (v & 7))))
                bad = x;
            else
                seen[v >> 3] |= (uint8_t)(1u << (v & 7));
        }
        gnn_free(seen);
        GNN_CHECK(bad < 0, GNN_EFORMAT, "%s: node_map is not a permutation (entry %" PRId64 ")",
                  path, bad);
    }
    if (H5Aexists(f, "node_types") > 0) { /* a typed graph */
        m->types = gnn_malloc(sizeof *m->types);
        GNN_CHECK(m->types, GNN_ENOMEM, "%s", path);
        GNN_TRY(gnn__h5_read_types(f, path, m->num_nodes, m->types));
        int64_t *fd = NULL; /* each type's feature width */
        GNN_TRY(get_i64_shaped(f, path, "node_type_feat_dim", m->types->n_ntypes, 0, 0, &fd));
        for (int t = 0; t < m->types->n_ntypes; t++) {
            if (fd[t] < 0 || fd[t] >= ((int64_t)1 << 31)) {
                rc = GNN_FAIL(GNN_EFORMAT, "%s: node_type_feat_dim of type '%s' is %" PRId64,
                              path, m->types->ntype[t], fd[t]);
                break;
            }
            m->types->feat_dim[t] = fd[t];
        }
        gnn_free(fd);
        if (rc < 0) goto fail;
        GNN_TRY(get_i64_shaped(f, path, "part_type_nodes", k, m->types->n_ntypes, 0,
                               &m->type_nodes));
        for (int64_t p = 0; p < k; p++) {
            int64_t sum = 0;
            for (int t = 0; t < m->types->n_ntypes; t++)
                sum += m->type_nodes[p * m->types->n_ntypes + t];
            GNN_CHECK(sum == m->start[p + 1] - m->start[p], GNN_EFORMAT,
                      "%s: part_type_nodes of part %" PRId64 " sum to %" PRId64 ", it owns %" PRId64,
                      path, p, sum, m->start[p + 1] - m->start[p]);
        }
    }
    H5Eclear2(H5E_DEFAULT);
fail:
    gnn__h5_close(&f);
    gnn_free(path);
    if (rc < 0) meta_free(m);
    return rc;
}

void gnn_partdir_link_free(gnn_partdir_link_t *l)
{
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) gnn_free(l->link[s]);
    gnn_free(l->node_map);
    memset(l, 0, sizeof *l);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) l->link_size[s] = -1;
}

int gnn_partdir_read_link(const char *dir, int what, gnn_partdir_link_t *out)
{
    int rc = 0;
    meta_t m;
    hid_t f = -1, grp = -1;
    char *path = NULL;
    uint8_t *seen = NULL;
    memset(out, 0, sizeof *out);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) out->link_size[s] = -1;
    GNN_TRY(meta_read(dir, &m, (what & GNN_PARTDIR_NODE_MAP) != 0));
    out->num_nodes = m.num_nodes;
    out->node_map = m.node_map;
    m.node_map = NULL;
    meta_free(&m); /* node_map: a permutation (meta_read) */
    if (!(what & GNN_PARTDIR_LINK_SETS)) goto fail; /* rc 0 */
    path = path_join(dir, "meta.h5");
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    GNN_TRY(open_file(path, &f));
    int64_t directed = -1;
    GNN_TRY(attr_i64_opt(f, path, "directed", &directed));
    out->directed = directed < 0 ? -1 : directed != 0;
    htri_t has = H5Lexists(f, "link", H5P_DEFAULT);
    GNN_CHECK(has >= 0, GNN_EHDF5, "%s: cannot look for the link group", path);
    if (!has) goto fail; /* none: rc 0 */
    grp = H5Gopen2(f, "link", H5P_DEFAULT);
    GNN_CHECK(grp >= 0, GNN_EFORMAT, "%s: link is not a group", path);
    GNN_TRY(attr_i64(grp, path, "neg_per_pos", &out->neg_per_pos));
    GNN_CHECK(out->neg_per_pos >= 1, GNN_EFORMAT, "%s: link neg_per_pos %" PRId64, path,
              out->neg_per_pos);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        hid_t d = -1;
        hsize_t dims[2] = {0, 0};
        GNN_TRY(gnn__h5_open_dataset(grp, path, gnn_link_set_names[s], GNN_H5_INT, 2, 0, dims, &d));
        gnn__h5_close(&d);
        GNN_CHECK(dims[1] == 2, GNN_EFORMAT, "%s: link/%s is not n x 2", path,
                  gnn_link_set_names[s]);
        GNN_TRY(get_i64_shaped(grp, path, gnn_link_set_names[s], (int64_t)dims[0], 2, 0,
                               &out->link[s]));
        out->link_size[s] = (int64_t)dims[0];
        for (int64_t i = 0; i < 2 * out->link_size[s]; i++)
            GNN_CHECK(out->link[s][i] >= 0 && out->link[s][i] < out->num_nodes, GNN_EFORMAT,
                      "%s: link/%s names node %" PRId64 ", outside [0, %" PRId64 ")", path,
                      gnn_link_set_names[s], out->link[s][i], out->num_nodes);
    }
    for (int s = 0; s < GNN_NUM_LINK_SETS; s += 2)
        GNN_CHECK(out->link_size[s + 1] == out->neg_per_pos * out->link_size[s], GNN_EFORMAT,
                  "%s: link/%s has %" PRId64 " pairs, expected neg_per_pos x %" PRId64, path,
                  gnn_link_set_names[s + 1], out->link_size[s + 1], out->link_size[s]);
fail:
    if (grp >= 0) H5Gclose(grp);
    gnn__h5_close(&f);
    gnn_free(path);
    gnn_free(seen);
    if (rc < 0) gnn_partdir_link_free(out);
    return rc;
}

void gnn_part_file_free(gnn_part_file_t *pf)
{
    gnn_free(pf->hop_start);
    gnn_free(pf->part_start);
    gnn_csr_free(&pf->csr);
    gnn_free(pf->local_to_global);
    gnn_free(pf->orig_id);
    gnn_free(pf->feat);
    gnn_free(pf->label);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_free(pf->split[s]);
    gnn_free(pf->types);
    gnn_free(pf->etype);
    memset(pf, 0, sizeof *pf);
}

int gnn_partdir_read_part(const char *dir, int p, gnn_part_file_t *out)
{
    int rc = 0;
    meta_t m;
    gnn_part_file_t pf = {0};
    char name[32];
    char *path = NULL;
    hid_t f = -1, d = -1, grp = -1;
    int64_t n = 0, nr = 0, ne = 0, fh = 1;
    memset(out, 0, sizeof *out);
    GNN_TRY(meta_read(dir, &m, 1));
    GNN_CHECK(p >= 0 && p < m.k, GNN_EINVAL, "%s has %d parts, no part %d", dir, m.k, p);
    snprintf(name, sizeof name, "part-%05d.h5", p);
    path = path_join(dir, name);
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    GNN_TRY(open_file(path, &f));
    GNN_TRY(check_format(f, path, GNN_PARTDIR_PART_FORMAT));
    pf.part = p;
    pf.num_parts = m.k;
    pf.num_nodes = m.num_nodes;
    pf.halo_hops = (int)m.halo_hops;
    int64_t part = -1;
    GNN_TRY(attr_i64(f, path, "part", &part));
    GNN_TRY(attr_i64(f, path, "num_owned", &pf.n_owned));
    GNN_TRY(attr_i64(f, path, "num_local", &pf.n_local));
    GNN_TRY(attr_i64(f, path, "num_edges", &ne));
    nr = pf.n_owned;
    GNN_TRY(attr_i64_opt(f, path, "num_rows", &nr));
    GNN_TRY(attr_i64_opt(f, path, "halo_hops", &fh));
    pf.n_rows = nr;
    pf.first_id = m.start[p];
    GNN_CHECK(part == p && pf.n_owned == m.start[p + 1] - m.start[p] && fh == m.halo_hops &&
                  nr >= pf.n_owned && pf.n_local >= nr && pf.n_local <= m.num_nodes && ne >= 0,
              GNN_EFORMAT, "%s: its counts do not match meta.h5", path);
    GNN_TRY(get_i64_shaped(f, path, "halo_hop_start", m.halo_hops + 1, 0, m.halo_hops == 1,
                           &pf.hop_start));
    if (!pf.hop_start) {
        pf.hop_start = gnn_malloc_array(2, sizeof *pf.hop_start);
        GNN_CHECK(pf.hop_start, GNN_ENOMEM, "%s", path);
        pf.hop_start[0] = pf.n_owned;
        pf.hop_start[1] = pf.n_local;
    }
    int ok = pf.hop_start[0] == pf.n_owned && pf.hop_start[m.halo_hops] == pf.n_local &&
             pf.hop_start[m.halo_hops - 1] == nr;
    for (int64_t h = 0; h < m.halo_hops; h++) ok = ok && pf.hop_start[h] <= pf.hop_start[h + 1];
    GNN_CHECK(ok, GNN_EFORMAT, "%s: halo_hop_start does not match the counts", path);
    pf.csr.n_rows = nr;
    pf.csr.n_cols = pf.n_local;
    pf.csr.nnz = ne;
    GNN_TRY(get_i64(f, path, "indptr", nr + 1, &pf.csr.indptr, &n));
    GNN_TRY(get_i64(f, path, "indices", ne, &pf.csr.indices, &n));
    GNN_TRY(gnn__h5_open_dataset(f, path, "weights", GNN_H5_FLOAT, 1, 1, (hsize_t[1]){0}, &d));
    if (d >= 0) {
        pf.csr.weights = gnn_malloc_array((size_t)ne + 1, sizeof *pf.csr.weights);
        GNN_CHECK(pf.csr.weights, GNN_ENOMEM, "%s: weights", path);
        if (ne) GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_FLOAT, 1, 1, 0, ne, pf.csr.weights));
        gnn__h5_close(&d);
        for (int64_t e = 0; e < ne; e++)
            GNN_CHECK(isfinite(pf.csr.weights[e]), GNN_EFORMAT,
                      "%s: edge weight %" PRId64 " is not finite", path, e);
    }
    rc = gnn_csr_validate(&pf.csr);
    if (rc < 0) {
        gnn_error_prefix("%s", path);
        goto fail;
    }
    if (m.types) { /* a typed graph: the relation of every entry */
        hsize_t dims[1] = {0};
        GNN_TRY(gnn__h5_open_dataset(f, path, "etype", GNN_H5_INT, 1, 0, dims, &d));
        GNN_CHECK((int64_t)dims[0] == ne, GNN_EFORMAT,
                  "%s: etype has %llu entries, expected %" PRId64, path,
                  (unsigned long long)dims[0], ne);
        pf.etype = gnn_malloc_array((size_t)ne + 1, sizeof *pf.etype);
        GNN_CHECK(pf.etype, GNN_ENOMEM, "%s: relations", path);
        if (ne) GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_INT32, 1, 1, 0, ne, pf.etype));
        gnn__h5_close(&d);
        for (int64_t e = 0; e < ne; e++)
            GNN_CHECK(pf.etype[e] >= 0 && pf.etype[e] < m.types->n_rels, GNN_EFORMAT,
                      "%s: etype[%" PRId64 "] = %d is outside [0, %d)", path, e, pf.etype[e],
                      m.types->n_rels);
        pf.types = m.types;
        m.types = NULL;
    }
    GNN_TRY(get_i64(f, path, "local_to_global", pf.n_local, &pf.local_to_global, &n));
    pf.orig_id = gnn_malloc_array((size_t)pf.n_local + 1, sizeof *pf.orig_id);
    GNN_CHECK(pf.orig_id, GNN_ENOMEM, "%s", path);
    for (int64_t i = 0; i < pf.n_local; i++) {
        int64_t g = pf.local_to_global[i];
        GNN_CHECK(i < pf.n_owned ? g == pf.first_id + i : g >= 0 && g < m.num_nodes, GNN_EFORMAT,
                  "%s: local node %" PRId64 " is global %" PRId64, path, i, g);
        pf.orig_id[i] = m.node_map[g];
    }
    GNN_TRY(attr_i64_opt(f, path, "feat_dim", &pf.feat_dim));
    GNN_TRY(gnn__h5_open_dataset(f, path, "feat", GNN_H5_FLOAT, 2, 1, (hsize_t[2]){0, 0}, &d));
    if (d >= 0) {
        hsize_t dims[2];
        hid_t sp = H5Dget_space(d);
        int r = sp >= 0 ? H5Sget_simple_extent_dims(sp, dims, NULL) : -1;
        if (sp >= 0) H5Sclose(sp);
        GNN_CHECK(r == 2 && (int64_t)dims[0] == pf.n_owned && (int64_t)dims[1] == pf.feat_dim &&
                      pf.feat_dim > 0,
                  GNN_EFORMAT, "%s: feat is not %" PRId64 " x feat_dim", path, pf.n_owned);
        pf.feat = gnn_alloc_large(((size_t)pf.n_owned * (size_t)pf.feat_dim + 1) * sizeof(float));
        GNN_CHECK(pf.feat, GNN_ENOMEM, "%s: features", path);
        if (pf.n_owned)
            GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_FLOAT, 2, (hsize_t)pf.feat_dim, 0, pf.n_owned,
                                      pf.feat));
        gnn__h5_close(&d);
    } else {
        pf.feat_dim = 0;
    }
    GNN_CHECK(!pf.types || gnn_graph_types_max_feat(pf.types) == pf.feat_dim, GNN_EFORMAT,
              "%s: feat_dim %" PRId64 ", but the widest node type of meta.h5 has %" PRId64
              " features", path, pf.feat_dim, pf.types ? gnn_graph_types_max_feat(pf.types) : 0);
    GNN_TRY(get_i64_shaped(f, path, "label", pf.n_owned, 0, 1, &pf.label));
    if (pf.label) {
        GNN_TRY(attr_i64(f, path, "num_classes", &pf.num_classes));
        GNN_CHECK(pf.num_classes <= GNN_GRAPH_MAX_CLASSES, GNN_EFORMAT,
                  "%s: num_classes %" PRId64 " is above the limit of %" PRId64, path,
                  pf.num_classes, GNN_GRAPH_MAX_CLASSES);
        for (int64_t i = 0; i < pf.n_owned; i++)
            GNN_CHECK(pf.label[i] >= -1 && pf.label[i] < pf.num_classes, GNN_EFORMAT,
                      "%s: label %" PRId64 " of local node %" PRId64 " outside [-1, %" PRId64 ")",
                      path, pf.label[i], i, pf.num_classes);
    }
    grp = H5Gopen2(f, "split", H5P_DEFAULT);
    GNN_CHECK(grp >= 0, GNN_EFORMAT, "%s: no split group", path);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        pf.split_n[s] = -1;
        htri_t has = H5Lexists(grp, split_names[s], H5P_DEFAULT);
        if (has <= 0) continue;
        GNN_TRY(get_i64(grp, path, split_names[s], -1, &pf.split[s], &pf.split_n[s]));
        for (int64_t i = 0; i < pf.split_n[s]; i++)
            GNN_CHECK(pf.split[s][i] >= 0 && pf.split[s][i] < pf.n_owned, GNN_EFORMAT,
                      "%s: %s split entry %" PRId64 " is not an owned node", path,
                      split_names[s], pf.split[s][i]);
    }
    GNN_TRY(gnn_graph_splits_disjoint(path, "owned node", pf.split, pf.split_n, pf.n_owned));
    pf.part_start = m.start;
    m.start = NULL;
    *out = pf;
    memset(&pf, 0, sizeof pf);
fail:
    gnn__h5_close(&d);
    gnn__h5_close(&grp);
    gnn__h5_close(&f);
    gnn_free(path);
    meta_free(&m);
    gnn_part_file_free(&pf);
    return rc;
}

int gnn_partdir_info(const char *dir, int json, FILE *out)
{
    int rc = 0;
    meta_t m;
    GNN_TRY(meta_read(dir, &m, 0));
    if (json) {
        fprintf(out, "{\"num_parts\": %d, \"num_nodes\": %" PRId64 ", \"num_edges\": %" PRId64
                     ", \"edge_cut\": %" PRId64 ", \"method\": ",
                m.k, m.num_nodes, m.num_edges, m.edge_cut);
        gnn_json_string(out, m.method);
        fprintf(out, ", \"scheme\": ");
        if (m.scheme[0])
            gnn_json_string(out, m.scheme);
        else
            fprintf(out, "null");
        fprintf(out, ", \"balance\": ");
        gnn_json_string(out, m.balance);
        fprintf(out, ", \"seed\": %" PRIu64 ", \"ufactor\": %" PRId64 ", \"halo_hops\": %" PRId64,
                m.seed, m.ufactor, m.halo_hops);
        /* null where an older directory did not record them */
        const char *const extra[4] = {"max_metis_edges", "mem_budget", "ranks", "coarse_levels"};
        const int64_t xv[4] = {m.max_metis_edges, m.mem_budget, m.ranks, m.coarse_levels};
        for (int x = 0; x < 4; x++) {
            if (xv[x] < 0)
                fprintf(out, ", \"%s\": null", extra[x]);
            else
                fprintf(out, ", \"%s\": %" PRId64, extra[x], xv[x]);
        }
        fprintf(out, ", \"graph\": ");
        gnn_json_string(out, m.graph);
        fprintf(out, ", \"parts\": [");
        for (int p = 0; p < m.k; p++) {
            fprintf(out, "%s{\"nodes\": %" PRId64 ", \"edges\": %" PRId64 ", \"halo\": %" PRId64
                         ", \"train\": %" PRId64 ", \"rows\": %" PRId64
                         ", \"stored_edges\": %" PRId64 ", \"hop_halo\": [",
                    p ? ", " : "", m.stat[0][p], m.stat[1][p], m.stat[2][p], m.stat[3][p],
                    m.rows[p], m.stored[p]);
            for (int64_t h = 0; h < m.halo_hops; h++)
                fprintf(out, "%s%" PRId64, h ? ", " : "", m.hop[p * m.halo_hops + h]);
            fprintf(out, "]");
            if (m.types) { /* owned nodes of each type */
                fprintf(out, ", \"type_nodes\": [");
                for (int t = 0; t < m.types->n_ntypes; t++)
                    fprintf(out, "%s%" PRId64, t ? ", " : "",
                            m.type_nodes[(int64_t)p * m.types->n_ntypes + t]);
                fprintf(out, "]");
            }
            fprintf(out, "}");
        }
        fprintf(out, "]");
        if (m.types) {
            fprintf(out, ", \"node_types\": [");
            for (int t = 0; t < m.types->n_ntypes; t++) {
                if (t) fprintf(out, ", ");
                gnn_json_string(out, m.types->ntype[t]);
            }
            fprintf(out, "], \"relations\": [");
            for (int r = 0; r < m.types->n_rels; r++) {
                fprintf(out, "%s{\"name\": ", r ? ", " : "");
                gnn_json_string(out, m.types->rel[r]);
                fprintf(out, ", \"src\": ");
                gnn_json_string(out, m.types->ntype[m.types->rel_src[r]]);
                fprintf(out, ", \"dst\": ");
                gnn_json_string(out, m.types->ntype[m.types->rel_dst[r]]);
                fprintf(out, "}");
            }
            fprintf(out, "]");
        } else {
            fprintf(out, ", \"node_types\": null, \"relations\": null");
        }
        fprintf(out, "}\n");
    } else {
        fprintf(out, "partition     %s\ngraph         %s\n", dir, m.graph);
        const char *how = !strcmp(m.scheme, "kway") ? " k-way"
                          : !strcmp(m.scheme, "rb") ? " recursive bisection"
                                                    : "";
        fprintf(out, "parts         %d (%s%s, balance %s, ufactor %" PRId64 ", seed %" PRIu64
                     ", halo %" PRId64 " hop%s)\n",
                m.k, m.method, how, m.balance, m.ufactor, m.seed, m.halo_hops,
                m.halo_hops > 1 ? "s" : "");
        if (m.ranks >= 0) {
            char budget[32] = "none";
            if (m.mem_budget > 0) snprintf(budget, sizeof budget, "%" PRId64 " MiB", m.mem_budget >> 20);
            fprintf(out, "made by       %" PRId64 " rank%s, %" PRId64 " coarse level%s (METIS "
                         "limit %" PRId64 " entries, --mem-budget %s)\n",
                    m.ranks, m.ranks == 1 ? "" : "s", m.coarse_levels,
                    m.coarse_levels == 1 ? "" : "s", m.max_metis_edges, budget);
        }
        fprintf(out, "nodes         %" PRId64 "\nedges         %" PRId64 " stored\n",
                m.num_nodes, m.num_edges);
        fprintf(out, "edge cut      %" PRId64 " undirected edges between parts\n", m.edge_cut);
        /* Past one hop: the CSR rows, the in-edges stored (owned and halo
         * rows) and the halo of each hop. */
        int more = m.halo_hops > 1;
        fprintf(out, "part       nodes       edges        halo       train%s\n",
                more ? "        rows      stored  halo by hop" : "");
        for (int p = 0; p < m.k; p++) {
            fprintf(out, "%4d %11" PRId64 " %11" PRId64 " %11" PRId64 " %11" PRId64, p,
                    m.stat[0][p], m.stat[1][p], m.stat[2][p], m.stat[3][p]);
            if (more) {
                fprintf(out, " %11" PRId64 " %11" PRId64 " ", m.rows[p], m.stored[p]);
                for (int64_t h = 0; h < m.halo_hops; h++)
                    fprintf(out, " %" PRId64, m.hop[p * m.halo_hops + h]);
            }
            fprintf(out, "\n");
        }
        if (m.types) { /* owned nodes of each type by part, and the relations */
            const gnn_graph_types_t *t = m.types;
            fprintf(out, "types         %d node types, %d relations\n", t->n_ntypes, t->n_rels);
            fprintf(out, "part");
            for (int i = 0; i < t->n_ntypes; i++) fprintf(out, " %11.11s", t->ntype[i]);
            fprintf(out, "\n");
            for (int p = 0; p < m.k; p++) {
                fprintf(out, "%4d", p);
                for (int i = 0; i < t->n_ntypes; i++)
                    fprintf(out, " %11" PRId64, m.type_nodes[(int64_t)p * t->n_ntypes + i]);
                fprintf(out, "\n");
            }
            for (int r = 0; r < t->n_rels; r++)
                fprintf(out, "relation      %s -%s-> %s\n", t->ntype[t->rel_src[r]], t->rel[r],
                        t->ntype[t->rel_dst[r]]);
        }
    }
    meta_free(&m);
fail:
    return rc;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct {
    int64_t id;
    float w;
} wpair_t;

static int cmp_wpair(const void *a, const void *b)
{
    const wpair_t *x = a, *y = b;
    if (x->id != y->id) return (x->id > y->id) - (x->id < y->id);
    return (x->w > y->w) - (x->w < y->w);
}

/* "row i (graph node v)" for an owned row, "row i (hop-h halo, graph node
 * v)" for a halo row, into buf. */
static const char *row_name(char *buf, size_t len, int64_t i, int64_t v, const int64_t *hs,
                            int64_t hops)
{
    int64_t h = 0;
    while (h < hops && i >= hs[h]) h++;
    if (h == 0)
        snprintf(buf, len, "row %" PRId64 " (graph node %" PRId64 ")", i, v);
    else
        snprintf(buf, len, "row %" PRId64 " (hop-%" PRId64 " halo, graph node %" PRId64 ")", i,
                 h, v);
    return buf;
}

/*
 * One part file against the graph; marks its nodes' split membership.
 * loc: one entry per new id, all -1, used for the local id of each halo
 * node and all -1 again on return.
 */
static int check_part(const char *dir, const meta_t *m, const gnn_graph_t *g, int p,
                      const int64_t *new_of_old, int64_t *loc, unsigned char *split_seen)
{
    int rc = 0;
    char name[32], row[128];
    snprintf(name, sizeof name, "part-%05d.h5", p);
    char *path = path_join(dir, name);
    hid_t f = -1, d = -1;
    int64_t *indptr = NULL, *indices = NULL, *l2g = NULL, *lab = NULL, *a = NULL, *b = NULL;
    int64_t *sp = NULL, *hs = NULL;
    float *feat = NULL, *wt = NULL;
    unsigned char *used = NULL;
    wpair_t *pa = NULL, *pb = NULL;
    int64_t marked0 = 0, marked1 = 0; /* l2g[marked0 .. marked1) are marked in loc */
    int64_t part = -1, no = -1, nl = -1, ne = -1, n;
    int64_t hops = m->halo_hops;
    GNN_CHECK(path, GNN_ENOMEM, "partition");
    GNN_TRY(open_file(path, &f));
    GNN_TRY(check_format(f, path, GNN_PARTDIR_PART_FORMAT));
    GNN_TRY(attr_i64(f, path, "part", &part));
    GNN_TRY(attr_i64(f, path, "num_owned", &no));
    GNN_TRY(attr_i64(f, path, "num_local", &nl));
    GNN_TRY(attr_i64(f, path, "num_edges", &ne));
    /* Absent from one-hop files written before the hop layout. */
    int64_t nr = no, fh = 1;
    GNN_TRY(attr_i64_opt(f, path, "num_rows", &nr));
    GNN_TRY(attr_i64_opt(f, path, "halo_hops", &fh));
    int64_t lo = m->start[p], hi = m->start[p + 1];
    GNN_CHECK(part == p && no == hi - lo && nl >= no && nl <= m->num_nodes && ne >= 0,
              GNN_EFORMAT, "%s: part %" PRId64 " with %" PRId64 " owned and %" PRId64
                           " local nodes does not match meta.h5 (part %d owns %" PRId64 ")",
              path, part, no, nl, p, hi - lo);
    GNN_CHECK(fh == hops, GNN_EFORMAT, "%s: halo_hops %" PRId64 ", meta.h5 says %" PRId64, path,
              fh, hops);
    /* What a reader takes from the part's own attributes. */
    int64_t fk = -1, first = -1, fdim = 0, ncls = -1;
    GNN_TRY(attr_i64(f, path, "num_parts", &fk));
    GNN_TRY(attr_i64(f, path, "first_id", &first));
    GNN_CHECK(fk == m->k && first == lo, GNN_EFORMAT,
              "%s: num_parts %" PRId64 " and first_id %" PRId64 ", meta.h5 says %d and %" PRId64,
              path, fk, first, m->k, lo);
    GNN_TRY(attr_i64_opt(f, path, "feat_dim", &fdim));
    GNN_CHECK(fdim == (g->feat ? g->feat_dim : 0), GNN_EFORMAT,
              "%s: feat_dim %" PRId64 ", the graph's features are %" PRId64 " wide", path, fdim,
              g->feat ? g->feat_dim : 0);
    if (g->label) {
        GNN_TRY(attr_i64(f, path, "num_classes", &ncls));
        GNN_CHECK(ncls == g->num_classes, GNN_EFORMAT,
                  "%s: num_classes %" PRId64 ", the graph has %" PRId64, path, ncls,
                  g->num_classes);
    }
    GNN_CHECK(nr >= no && nr <= nl, GNN_EFORMAT,
              "%s: num_rows %" PRId64 " outside [%" PRId64 ", %" PRId64 "]", path, nr, no, nl);
    GNN_TRY(get_i64_shaped(f, path, "halo_hop_start", hops + 1, 0, hops == 1, &hs));
    if (!hs) { /* one hop: the halo follows the owned nodes */
        hs = gnn_malloc_array(2, sizeof *hs);
        GNN_CHECK(hs, GNN_ENOMEM, "%s", path);
        hs[0] = no;
        hs[1] = nl;
    }
    int hs_ok = hs[0] == no && hs[hops] == nl && hs[hops - 1] == nr;
    for (int64_t h = 0; h < hops; h++) hs_ok = hs_ok && hs[h] <= hs[h + 1];
    GNN_CHECK(hs_ok, GNN_EFORMAT,
              "%s: halo_hop_start does not run from num_owned %" PRId64 " through num_rows %" PRId64
              " to num_local %" PRId64,
              path, no, nr, nl);
    GNN_TRY(get_i64(f, path, "indptr", nr + 1, &indptr, &n));
    GNN_TRY(get_i64(f, path, "indices", ne, &indices, &n));
    GNN_TRY(get_i64(f, path, "local_to_global", nl, &l2g, &n));
    GNN_CHECK(indptr[0] == 0 && indptr[nr] == ne, GNN_EFORMAT,
              "%s: indptr does not span 0 .. %" PRId64, path, ne);
    for (int64_t i = 0; i < nr; i++)
        GNN_CHECK(indptr[i] <= indptr[i + 1], GNN_EFORMAT, "%s: indptr decreases at row %" PRId64,
                  path, i);
    for (int64_t i = 0; i < no; i++)
        GNN_CHECK(l2g[i] == lo + i, GNN_EFORMAT, "%s: local node %" PRId64 " is global %" PRId64
                                                 ", expected %" PRId64,
                  path, i, l2g[i], lo + i);
    /* The halo: hop by hop ascending, owned elsewhere, each node once. */
    marked0 = marked1 = no;
    for (int64_t h = 1; h <= hops; h++)
        for (int64_t i = hs[h - 1]; i < hs[h]; i++) {
            GNN_CHECK(l2g[i] >= 0 && l2g[i] < m->num_nodes && (l2g[i] < lo || l2g[i] >= hi) &&
                          (i == hs[h - 1] || l2g[i - 1] < l2g[i]),
                      GNN_EFORMAT, "%s: halo node %" PRId64 " (global %" PRId64 ") is owned here, "
                                   "out of range or out of order",
                      path, i, l2g[i]);
            GNN_CHECK(loc[l2g[i]] < 0, GNN_EFORMAT,
                      "%s: global node %" PRId64 " is halo node %" PRId64 " and %" PRId64, path,
                      l2g[i], loc[l2g[i]], i);
            loc[l2g[i]] = i;
            marked1 = i + 1;
        }
    const char *wname = g->types ? "etype" : "weights"; /* relations: compared as weights */
    if (g->csr.weights) {
        hsize_t dims[1];
        GNN_TRY(gnn__h5_open_dataset(f, path, wname, g->types ? GNN_H5_INT : GNN_H5_FLOAT, 1, 0,
                                     dims, &d));
        GNN_CHECK((int64_t)dims[0] == ne, GNN_EFORMAT, "%s: %s has %llu entries, expected %" PRId64,
                  path, wname, (unsigned long long)dims[0], ne);
        wt = gnn_malloc_array((size_t)ne + 1, sizeof *wt);
        GNN_CHECK(wt, GNN_ENOMEM, "%s", path);
        if (ne) GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_FLOAT, 1, 1, 0, ne, wt));
        gnn__h5_close(&d);
    }
    /* Rows, owned and halo: the graph's, as multisets of graph node ids
     * (and weights). */
    a = gnn_malloc_array(1, sizeof *a);
    for (int64_t i = 0; i < nr; i++) {
        int64_t v = m->node_map[l2g[i]];
        int64_t d0 = indptr[i + 1] - indptr[i], dg = g->csr.indptr[v + 1] - g->csr.indptr[v];
        GNN_CHECK(d0 == dg, GNN_EFORMAT, "%s: %s has %" PRId64 " in-edges, the graph %" PRId64,
                  path, row_name(row, sizeof row, i, v, hs, hops), d0, dg);
        gnn_free(a);
        gnn_free(b);
        a = gnn_malloc_array((size_t)d0 + 1, sizeof *a);
        b = gnn_malloc_array((size_t)d0 + 1, sizeof *b);
        GNN_CHECK(a && b, GNN_ENOMEM, "%s", path);
        for (int64_t j = 0; j < d0; j++) {
            int64_t x = indices[indptr[i] + j];
            GNN_CHECK(x >= 0 && x < nl, GNN_EFORMAT, "%s: row %" PRId64 " lists local node %" PRId64
                                                     " of %" PRId64,
                      path, i, x, nl);
            a[j] = m->node_map[l2g[x]];
            b[j] = g->csr.indices[g->csr.indptr[v] + j];
        }
        qsort(a, (size_t)d0, sizeof *a, cmp_i64);
        qsort(b, (size_t)d0, sizeof *b, cmp_i64);
        GNN_CHECK(!d0 || !memcmp(a, b, (size_t)d0 * sizeof *a), GNN_EFORMAT,
                  "%s: the in-edges of %s differ from the graph's", path,
                  row_name(row, sizeof row, i, v, hs, hops));
        if (wt) { /* the same as (source, weight) pairs */
            gnn_free(pa);
            gnn_free(pb);
            pa = gnn_malloc_array((size_t)d0 + 1, sizeof *pa);
            pb = gnn_malloc_array((size_t)d0 + 1, sizeof *pb);
            GNN_CHECK(pa && pb, GNN_ENOMEM, "%s", path);
            for (int64_t j = 0; j < d0; j++) {
                int64_t e = indptr[i] + j, ge = g->csr.indptr[v] + j;
                pa[j] = (wpair_t){m->node_map[l2g[indices[e]]], wt[e]};
                pb[j] = (wpair_t){g->csr.indices[ge], g->csr.weights[ge]};
            }
            qsort(pa, (size_t)d0, sizeof *pa, cmp_wpair);
            qsort(pb, (size_t)d0, sizeof *pb, cmp_wpair);
            for (int64_t j = 0; j < d0; j++)
                GNN_CHECK(pa[j].id == pb[j].id && !memcmp(&pa[j].w, &pb[j].w, sizeof pa[j].w),
                          GNN_EFORMAT,
                          "%s: the %s of %s differ from the graph's", path,
                          g->types ? "relations" : "weights", row_name(row, sizeof row, i, v, hs, hops));
        }
    }
    /* The hops, re-derived from the graph: hop h holds exactly the sources
     * of the hop-(h-1) nodes' in-edges (hop 0: the owned nodes) that are
     * neither owned nor at an earlier hop. */
    used = gnn_calloc((size_t)nl + 1, 1);
    GNN_CHECK(used, GNN_ENOMEM, "%s", path);
    for (int64_t h = 1; h <= hops; h++) {
        int64_t r0 = h == 1 ? 0 : hs[h - 2], r1 = hs[h - 1];
        for (int64_t r = r0; r < r1; r++) {
            int64_t v = m->node_map[l2g[r]];
            for (int64_t e = g->csr.indptr[v]; e < g->csr.indptr[v + 1]; e++) {
                int64_t u = g->csr.indices[e], y = new_of_old[u];
                if (y >= lo && y < hi) continue;
                int64_t x = loc[y];
                GNN_CHECK(x >= 0 && x < hs[h], GNN_EFORMAT,
                          "%s: graph node %" PRId64 " (global %" PRId64 "), a source of local node "
                          "%" PRId64 " (graph node %" PRId64 "), is missing from the hop-%" PRId64
                          " halo",
                          path, u, y, r, v, h);
                if (x >= hs[h - 1]) used[x] = 1;
            }
        }
        for (int64_t x = hs[h - 1]; x < hs[h]; x++)
            GNN_CHECK(used[x], GNN_EFORMAT, "%s: halo node %" PRId64 " (global %" PRId64
                                            ") is the source of no in-edge of the %s",
                      path, x, l2g[x], h == 1 ? "owned nodes" : "previous hop");
    }
    if (g->feat) {
        hsize_t dims[2];
        GNN_TRY(gnn__h5_open_dataset(f, path, "feat", GNN_H5_FLOAT, 2, 0, dims, &d));
        GNN_CHECK((int64_t)dims[0] == no && (int64_t)dims[1] == g->feat_dim, GNN_EFORMAT,
                  "%s: feat is %llu x %llu, expected %" PRId64 " x %" PRId64, path,
                  (unsigned long long)dims[0], (unsigned long long)dims[1], no, g->feat_dim);
        feat = gnn_malloc_array((size_t)no * (size_t)g->feat_dim + 1, sizeof *feat);
        GNN_CHECK(feat, GNN_ENOMEM, "%s", path);
        if (no) GNN_TRY(gnn__h5_read_rows(d, H5T_NATIVE_FLOAT, 2, dims[1], 0, no, feat));
        for (int64_t i = 0; i < no; i++)
            GNN_CHECK(!memcmp(feat + i * g->feat_dim, g->feat + m->node_map[lo + i] * g->feat_dim,
                              (size_t)g->feat_dim * sizeof *feat),
                      GNN_EFORMAT, "%s: features of row %" PRId64 " (graph node %" PRId64
                                   ") differ from the graph's",
                      path, i, m->node_map[lo + i]);
    }
    if (g->label) {
        GNN_TRY(get_i64(f, path, "label", no, &lab, &n));
        for (int64_t i = 0; i < no; i++)
            GNN_CHECK(lab[i] == g->label[m->node_map[lo + i]], GNN_EFORMAT,
                      "%s: label of row %" PRId64 " (graph node %" PRId64 ") is %" PRId64
                      ", the graph's %" PRId64,
                      path, i, m->node_map[lo + i], lab[i], g->label[m->node_map[lo + i]]);
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        if (!g->split[s]) continue;
        char sname[32];
        snprintf(sname, sizeof sname, "split/%s", split_names[s]);
        GNN_TRY(get_i64(f, path, sname, -1, &sp, &n));
        for (int64_t i = 0; i < n; i++) {
            GNN_CHECK(sp[i] >= 0 && sp[i] < no, GNN_EFORMAT,
                      "%s: %s entry %" PRId64 " is local node %" PRId64 " of %" PRId64 " owned",
                      path, sname, i, sp[i], no);
            int64_t v = m->node_map[lo + sp[i]];
            GNN_CHECK(!(split_seen[v] & (1u << s)), GNN_EFORMAT,
                      "%s: graph node %" PRId64 " appears twice in %s", path, v, sname);
            split_seen[v] |= (unsigned char)(1u << s);
        }
        if (s == GNN_SPLIT_TRAIN)
            GNN_CHECK(m->stat[3][p] == n, GNN_EFORMAT,
                      "%s: the statistics of meta.h5 disagree with part %d (train)", dir, p);
        gnn_free(sp);
        sp = NULL;
    }
    int stats_ok = m->stat[0][p] == no && m->stat[1][p] == indptr[no] &&
                   m->stat[2][p] == nl - no && m->rows[p] == nr && m->stored[p] == ne;
    for (int64_t h = 0; h < hops; h++)
        stats_ok = stats_ok && m->hop[p * hops + h] == hs[h + 1] - hs[h];
    GNN_CHECK(stats_ok, GNN_EFORMAT, "%s: the statistics of meta.h5 disagree with part %d", dir, p);
fail:
    for (int64_t i = marked0; i < marked1; i++) loc[l2g[i]] = -1;
    gnn__h5_close(&d);
    gnn__h5_close(&f);
    gnn_free(indptr);
    gnn_free(indices);
    gnn_free(l2g);
    gnn_free(hs);
    gnn_free(lab);
    gnn_free(a);
    gnn_free(b);
    gnn_free(sp);
    gnn_free(feat);
    gnn_free(wt);
    gnn_free(used);
    gnn_free(pa);
    gnn_free(pb);
    gnn_free(path);
    return rc;
}

int gnn_partdir_check(const char *dir, const char *graph)
{
    int rc = 0;
    meta_t m;
    gnn_graph_t g;
    gnn_graph_init(&g);
    int64_t *new_of_old = NULL, *loc = NULL;
    unsigned char *seen = NULL;
    int32_t *part = NULL;
    gnn_csr_t sym = {0};
    gnn_partdir_link_t lk = {0};
    GNN_TRY(meta_read(dir, &m, 1));
    const char *gpath = graph ? graph : m.graph;
    GNN_TRY(gnn_graph_load(gpath, &g));
    GNN_CHECK(!m.types == !g.types, GNN_EFORMAT, "%s: meta.h5 %s node types, %s %s", dir,
              m.types ? "has" : "has no", gpath, g.types ? "has" : "has none");
    if (g.types) { /* the same types, and the relations compared as edge weights */
        const gnn_graph_types_t *a = m.types, *b = g.types;
        int same = a->n_ntypes == b->n_ntypes && a->n_rels == b->n_rels && a->target == b->target;
        for (int t = 0; same && t <= a->n_ntypes; t++) same = a->off[t] == b->off[t];
        for (int t = 0; same && t < a->n_ntypes; t++)
            same = !strcmp(a->ntype[t], b->ntype[t]) && a->feat_dim[t] == b->feat_dim[t];
        for (int r = 0; same && r < a->n_rels; r++)
            same = !strcmp(a->rel[r], b->rel[r]) && a->rel_src[r] == b->rel_src[r] &&
                   a->rel_dst[r] == b->rel_dst[r];
        GNN_CHECK(same, GNN_EFORMAT, "%s: meta.h5's node types and relations differ from %s's",
                  dir, gpath);
        GNN_CHECK(!g.csr.weights, GNN_EFORMAT, "%s: a typed graph with edge weights", gpath);
        g.csr.weights = gnn_alloc_large(((size_t)g.csr.nnz + 1) * sizeof *g.csr.weights);
        GNN_CHECK(g.csr.weights, GNN_ENOMEM, "%s", dir);
        for (gnn_eid_t e = 0; e < g.csr.nnz; e++) g.csr.weights[e] = (float)g.etype[e];
        for (int p = 0; p < m.k; p++) /* each part's nodes of each type, and in type order */
            for (int t = 0; t < a->n_ntypes; t++) {
                int64_t c = 0;
                for (int64_t x = m.start[p]; x < m.start[p + 1]; x++)
                    c += gnn_graph_types_of(a, m.node_map[x]) == t;
                GNN_CHECK(c == m.type_nodes[(int64_t)p * a->n_ntypes + t], GNN_EFORMAT,
                          "%s: part %d owns %" PRId64 " nodes of type '%s', meta.h5 says %" PRId64,
                          dir, p, c, a->ntype[t], m.type_nodes[(int64_t)p * a->n_ntypes + t]);
            }
        for (int p = 0; p < m.k; p++)
            for (int64_t x = m.start[p] + 1; x < m.start[p + 1]; x++)
                GNN_CHECK(gnn_graph_types_of(a, m.node_map[x]) >=
                              gnn_graph_types_of(a, m.node_map[x - 1]),
                          GNN_EFORMAT, "%s: part %d does not keep its node types contiguous (at "
                          "new id %" PRId64 ")", dir, p, x);
    }
    GNN_CHECK(g.csr.n_rows == m.num_nodes && g.csr.nnz == m.num_edges, GNN_EFORMAT,
              "%s: %" PRId64 " nodes and %" PRId64 " edges, but %s has %" GNN_PRIvid " and %" GNN_PRIeid,
              dir, m.num_nodes, m.num_edges, gpath, g.csr.n_rows, g.csr.nnz);
    new_of_old = gnn_malloc_array((size_t)m.num_nodes + 1, sizeof *new_of_old);
    loc = gnn_malloc_array((size_t)m.num_nodes + 1, sizeof *loc);
    seen = gnn_calloc((size_t)m.num_nodes + 1, 1);
    GNN_CHECK(new_of_old && loc && seen, GNN_ENOMEM, "%s", dir);
    for (int64_t i = 0; i < m.num_nodes; i++) new_of_old[i] = loc[i] = -1;
    for (int64_t x = 0; x < m.num_nodes; x++) /* a permutation: meta_read checked it */
        new_of_old[m.node_map[x]] = x;
    int64_t edges = 0;
    for (int p = 0; p < m.k; p++) {
        GNN_TRY(check_part(dir, &m, &g, p, new_of_old, loc, seen));
        edges += m.stat[1][p];
    }
    GNN_CHECK(edges == g.csr.nnz, GNN_EFORMAT, "%s: %" PRId64 " edges in the parts, %" GNN_PRIeid
                                               " in the graph",
              dir, edges, g.csr.nnz);
    { /* the recorded edge cut, recomputed from the ranges */
        part = gnn_malloc_array((size_t)m.num_nodes + 1, sizeof *part);
        GNN_CHECK(part, GNN_ENOMEM, "%s", dir);
        for (int p = 0; p < m.k; p++)
            for (int64_t x = m.start[p]; x < m.start[p + 1]; x++) part[m.node_map[x]] = p;
        GNN_TRY(gnn_part_undirected(&g.csr, &sym));
        int64_t cut = gnn_part_edge_cut(&sym, part);
        GNN_CHECK(cut == m.edge_cut, GNN_EFORMAT,
                  "%s: meta.h5 records an edge cut of %" PRId64 ", the parts cut %" PRId64, dir,
                  m.edge_cut, cut);
    }
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        if (!g.split[s]) continue;
        int64_t want = 0, have = 0;
        for (int64_t i = 0; i < g.split_size[s]; i++) {
            GNN_CHECK(seen[g.split[s][i]] & (1u << s), GNN_EFORMAT,
                      "%s: graph node %" PRId64 " of the %s split is in no part's split", dir,
                      g.split[s][i], split_names[s]);
            want++;
        }
        for (int64_t v = 0; v < m.num_nodes; v++) have += (seen[v] >> s) & 1u;
        GNN_CHECK(have == want, GNN_EFORMAT, "%s: %" PRId64 " nodes in the parts' %s splits, %" PRId64
                                             " in the graph's",
                  dir, have, split_names[s], want);
    }
    /* The held-out edges and the directed flag: the graph's, as they are. */
    GNN_TRY(gnn_partdir_read_link(dir, GNN_PARTDIR_LINK_SETS, &lk));
    GNN_CHECK(lk.directed < 0 || lk.directed == (g.directed != 0), GNN_EFORMAT,
              "%s: meta.h5 says the graph is %sdirected, %s says it is %sdirected", dir,
              lk.directed ? "" : "un", gpath, g.directed ? "" : "un");
    GNN_CHECK(!lk.link[0] == !g.link[0], GNN_EFORMAT, "%s: meta.h5 %s held-out edges, %s %s",
              dir, lk.link[0] ? "has" : "has no", gpath, g.link[0] ? "has" : "has none");
    for (int s = 0; s < GNN_NUM_LINK_SETS && g.link[0]; s++)
        GNN_CHECK(lk.link_size[s] == g.link_size[s] && lk.neg_per_pos == g.link_neg_per_pos &&
                      !memcmp(lk.link[s], g.link[s], (size_t)(2 * g.link_size[s]) * sizeof(int64_t)),
                  GNN_EFORMAT, "%s: meta.h5's link/%s differs from %s's", dir,
                  gnn_link_set_names[s], gpath);
fail:
    gnn_partdir_link_free(&lk);
    gnn_free(part);
    gnn_csr_free(&sym);
    gnn_free(new_of_old);
    gnn_free(loc);
    gnn_free(seen);
    gnn_graph_free(&g);
    meta_free(&m);
    return rc;
}
