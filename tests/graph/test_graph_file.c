/*
 * The graph file, format versions 1 and 2: round trips, row-range reads
 * against slices of a full read, the writer's refusals, every kind of bad
 * file (each a GNN_E* code and a message naming the problem, no crash, no
 * open HDF5 object left behind), and allocation failure injected at every
 * allocation of the reader and writer. Typed graphs (version 2) are
 * written whole and streamed, read back whole and by ranges, checked
 * against the documented layout through the HDF5 C API, and edited into
 * each kind of bad typed file.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "graph/h5util.h"
#include "tests/common/h5test.h"
#include "tests/common/testutil.h"

#include <hdf5.h>
#include <math.h>
#include <string.h>

static unsigned g_seed;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A random graph with every optional part: weights, features, labels,
 * original ids and the three splits. */
static void make_graph(gnn_graph_t *g, gnn_vid_t n, gnn_eid_t m, int64_t f, uint64_t seed)
{
    uint64_t s = seed | 1;
    gnn_vid_t *src = malloc(sizeof *src * (size_t)m), *dst = malloc(sizeof *dst * (size_t)m);
    float *w = malloc(sizeof *w * (size_t)m);
    assert_true(src && dst && w);
    for (gnn_eid_t i = 0; i < m; i++) {
        src[i] = (gnn_vid_t)(rng_next(&s) % (uint64_t)n);
        dst[i] = (gnn_vid_t)(rng_next(&s) % (uint64_t)n);
        w[i] = (float)(rng_next(&s) % 1000) / 7.0f;
    }
    gnn_graph_init(g);
    assert_int_equal(gnn_csr_from_edges(n, m, src, dst, w,
                                        GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE |
                                            GNN_BUILD_NO_SELF_LOOPS,
                                        &g->csr),
                     0);
    free(src);
    free(dst);
    free(w);
    g->directed = 0;
    g->feat_dim = f;
    g->feat = malloc(sizeof *g->feat * (size_t)(n * f));
    for (int64_t i = 0; i < n * f; i++) g->feat[i] = (float)(rng_next(&s) % 10000) / 100.0f - 50.0f;
    g->num_classes = 5;
    g->label = malloc(sizeof *g->label * (size_t)n);
    g->orig_id = malloc(sizeof *g->orig_id * (size_t)n);
    for (gnn_vid_t v = 0; v < n; v++) {
        g->label[v] = v % 11 == 0 ? -1 : (int64_t)(rng_next(&s) % 5);
        g->orig_id[v] = 1000000007LL * v + 3;
    }
    int64_t sizes[3] = {n / 2, n / 4, n - n / 2 - n / 4};
    int64_t next = 0;
    for (int k = 0; k < GNN_NUM_SPLITS; k++) {
        g->split[k] = malloc(sizeof(int64_t) * (size_t)(sizes[k] ? sizes[k] : 1));
        g->split_size[k] = sizes[k];
        for (int64_t i = 0; i < sizes[k]; i++) g->split[k][i] = next++;
    }
}

/* The graph library's own arrays come from gnn_malloc; the test's from malloc:
 * both are plain malloc underneath, so gnn_graph_free releases either. */

static int64_t open_objects(void) { return (int64_t)H5Fget_obj_count(H5F_OBJ_ALL, H5F_OBJ_ALL); }

static void assert_graph_equal(const gnn_graph_t *a, const gnn_graph_t *b)
{
    assert_true(gnn_csr_equal(&a->csr, &b->csr));
    assert_int_equal(a->csr.flags, b->csr.flags);
    assert_int_equal(a->directed, b->directed);
    assert_int_equal(a->feat_dim, b->feat_dim);
    gnn_vid_t n = a->csr.n_rows;
    if (a->feat_dim)
        assert_memory_equal(a->feat, b->feat, sizeof(float) * (size_t)(n * a->feat_dim));
    assert_int_equal(a->num_classes, b->num_classes);
    assert_int_equal(!a->label, !b->label);
    if (a->label) assert_memory_equal(a->label, b->label, sizeof(int64_t) * (size_t)n);
    assert_int_equal(!a->orig_id, !b->orig_id);
    if (a->orig_id) assert_memory_equal(a->orig_id, b->orig_id, sizeof(int64_t) * (size_t)n);
    for (int k = 0; k < GNN_NUM_SPLITS; k++) {
        assert_int_equal(a->split_size[k], b->split_size[k]);
        if (a->split_size[k] > 0)
            assert_memory_equal(a->split[k], b->split[k], sizeof(int64_t) * (size_t)a->split_size[k]);
    }
}

static void test_round_trip(void **state)
{
    (void)state;
    gnn_graph_t g, h;
    make_graph(&g, 500, 3000, 13, g_seed);
    const char *path = tu_path("rt.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    assert_int_equal(gnn_graph_load(path, &h), 0);
    assert_graph_equal(&g, &h);
    assert_int_equal(open_objects(), 0);

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    assert_int_equal(in->version, 1);
    assert_int_equal(in->num_nodes, 500);
    assert_int_equal(in->num_edges, g.csr.nnz);
    assert_int_equal(in->feat_dim, 13);
    assert_int_equal(in->num_classes, 5);
    assert_int_equal(in->directed, 0);
    assert_true(in->has_weights && in->has_labels && in->has_orig_ids);
    assert_int_equal(in->split_size[GNN_SPLIT_TRAIN], 250);
    assert_int_equal(in->split_size[GNN_SPLIT_VALID], 125);
    assert_int_equal(in->split_size[GNN_SPLIT_TEST], 125);
    assert_int_equal(in->csr_flags, g.csr.flags);
    gnn_graph_close(f);
    gnn_graph_free(&g);
    gnn_graph_free(&h);
}

static void test_minimal_graph_and_absent_parts(void **state)
{
    (void)state;
    gnn_graph_t g, h;
    gnn_graph_init(&g);
    gnn_vid_t src[] = {0, 1, 2}, dst[] = {1, 2, 0};
    assert_int_equal(gnn_csr_from_edges(4, 3, src, dst, NULL, 0, &g.csr), 0);
    g.directed = 1;
    const char *path = tu_path("min.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    assert_int_equal(gnn_graph_load(path, &h), 0);
    assert_graph_equal(&g, &h);
    assert_null(h.feat);
    assert_null(h.label);
    assert_null(h.csr.weights);
    for (int k = 0; k < GNN_NUM_SPLITS; k++) assert_int_equal(h.split_size[k], -1);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    float x;
    int64_t *sp, n;
    assert_int_equal(gnn_graph_read_feat(f, 0, 1, &x), GNN_EINVAL);
    assert_int_equal(gnn_graph_read_split(f, GNN_SPLIT_TRAIN, &sp, &n), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "no 'train' split"));
    gnn_graph_close(f);
    gnn_graph_free(&g);
    gnn_graph_free(&h);

    /* The empty graph. */
    gnn_graph_init(&g);
    assert_int_equal(gnn_csr_from_edges(0, 0, NULL, NULL, NULL, 0, &g.csr), 0);
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    assert_int_equal(gnn_graph_load(path, &h), 0);
    assert_int_equal(h.csr.n_rows, 0);
    assert_int_equal(h.csr.nnz, 0);
    gnn_graph_free(&g);
    gnn_graph_free(&h);
    assert_int_equal(open_objects(), 0);
}

/* Reads of row ranges equal the same slice of a full read, also across
 * chunk boundaries (the graph has more edges than one 256 Ki chunk). */
static void test_row_ranges(void **state)
{
    (void)state;
    gnn_graph_t g;
    make_graph(&g, 40000, 200000, 3, g_seed + 1);
    assert_true(g.csr.nnz > (1 << 18));
    const char *path = tu_path("ranges.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    gnn_vid_t ranges[][2] = {{0, 0}, {0, 1}, {17, 100}, {12345, 9999}, {39999, 1}, {0, 40000},
                             {40000, 0}};
    for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
        gnn_vid_t r0 = ranges[r][0], nr = ranges[r][1];
        gnn_csr_t part;
        assert_int_equal(gnn_graph_read_rows(f, r0, nr, &part), 0);
        assert_int_equal(part.n_rows, nr);
        assert_int_equal(part.n_cols, 40000);
        gnn_eid_t base = g.csr.indptr[r0];
        assert_int_equal(part.nnz, g.csr.indptr[r0 + nr] - base);
        for (gnn_vid_t i = 0; i <= nr; i++)
            assert_int_equal(part.indptr[i], g.csr.indptr[r0 + i] - base);
        if (part.nnz) {
            assert_memory_equal(part.indices, g.csr.indices + base, sizeof(gnn_vid_t) * (size_t)part.nnz);
            assert_memory_equal(part.weights, g.csr.weights + base, sizeof(float) * (size_t)part.nnz);
        }
        gnn_csr_free(&part);

        float *feat = malloc(sizeof(float) * (size_t)(nr * 3 + 1));
        int64_t *lab = malloc(sizeof(int64_t) * (size_t)(nr + 1));
        assert_int_equal(gnn_graph_read_feat(f, r0, nr, feat), 0);
        assert_int_equal(gnn_graph_read_labels(f, r0, nr, lab), 0);
        if (nr) {
            assert_memory_equal(feat, g.feat + r0 * 3, sizeof(float) * (size_t)(nr * 3));
            assert_memory_equal(lab, g.label + r0, sizeof(int64_t) * (size_t)nr);
        }
        free(feat);
        free(lab);
    }
    gnn_eid_t e0 = (1 << 18) - 5;
    gnn_vid_t ids[10];
    assert_int_equal(gnn_graph_read_indices(f, e0, 10, ids), 0);
    assert_memory_equal(ids, g.csr.indices + e0, sizeof ids);
    /* Out-of-range requests are refused, not clamped. */
    gnn_csr_t bad;
    assert_int_equal(gnn_graph_read_rows(f, 39990, 11, &bad), GNN_ERANGE);
    assert_int_equal(gnn_graph_read_rows(f, -1, 1, &bad), GNN_ERANGE);
    assert_int_equal(gnn_graph_read_indices(f, g.csr.nnz - 1, 2, ids), GNN_ERANGE);
    gnn_graph_close(f);
    gnn_graph_free(&g);
}

static void test_writer_refusals(void **state)
{
    (void)state;
    const char *path = tu_path("w.h5");
    unlink(path);
    gnn_graph_header_t h = {.num_nodes = 3, .num_edges = 2, .directed = 1, .has_labels = 1};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 0, &w), 0);
    gnn_eid_t ip[] = {0, 1, 1, 2};
    gnn_eid_t bad_ip[] = {0, 2, 1, 2};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, bad_ip), GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), "not monotone"));
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, ip), 0);
    gnn_vid_t bad_ids[] = {0, 3};
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 2, bad_ids, NULL), GNN_EFORMAT);
    gnn_vid_t ids[] = {2, 0};
    float wt[] = {1, 2};
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 2, ids, wt), GNN_EINVAL);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 2, ids, NULL), 0);
    int64_t bad_lab[] = {0, -2, 1};
    assert_int_equal(gnn_graph_writer_put_labels(w, 0, 3, bad_lab), GNN_EINVAL);
    /* Splits that share a node are refused as they are put. */
    int64_t tr[] = {0, 1}, te[] = {2, 1};
    assert_int_equal(gnn_graph_writer_put_split(w, GNN_SPLIT_TRAIN, tr, 2), 0);
    assert_int_equal(gnn_graph_writer_put_split(w, GNN_SPLIT_TEST, te, 2), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "split/test names node 1, which it or another "
                                                "split already names"));
    /* Labels missing: commit refuses and leaves nothing behind. */
    assert_int_equal(gnn_graph_writer_commit(w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "0 of 3 labels written"));
    assert_false(tu_exists(path));

    /* A complete write, then an existing file is not replaced without leave. */
    assert_int_equal(gnn_graph_writer_open(path, &h, 0, &w), 0);
    int64_t lab[] = {0, 2, -1};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 2, ip), 0);
    assert_int_equal(gnn_graph_writer_put_indptr(w, 2, 2, ip + 2), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 1, 1, ids + 1, NULL), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 1, ids, NULL), 0);
    assert_int_equal(gnn_graph_writer_put_labels(w, 0, 3, lab), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    assert_true(tu_exists(path));
    assert_int_equal(gnn_graph_writer_open(path, &h, 0, &w), GNN_EEXISTS);
    assert_non_null(strstr(gnn_error_message(), "file exists"));

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->num_classes, 3);
    gnn_graph_close(f);

    /* Abort removes the temporary file. */
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    gnn_graph_writer_abort(w);
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    assert_false(tu_exists(tmp));
    assert_int_equal(open_objects(), 0);
}

/* num_edges = -1: edges appended in order, the count fixed at commit. */
static void test_writer_append_mode(void **state)
{
    (void)state;
    const char *path = tu_path("append.h5");
    gnn_graph_header_t h = {.num_nodes = 3, .num_edges = -1, .directed = 1, .has_weights = 1};
    gnn_graph_writer_t *w;
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    gnn_vid_t ids[] = {1, 2, 0, 2};
    float wt[] = {0.5f, 1.5f, 2.5f, 3.5f};
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 2, ids, wt), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 3, 1, ids + 2, wt + 2), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "appended in order (at 2, not 3)"));
    assert_int_equal(gnn_graph_writer_put_indices(w, 2, 2, ids + 2, wt + 2), 0);
    gnn_eid_t ip[] = {0, 2, 3, 4};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, ip), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    assert_int_equal(g.csr.nnz, 4);
    assert_memory_equal(g.csr.indices, ids, sizeof ids);
    assert_memory_equal(g.csr.weights, wt, sizeof wt);
    gnn_graph_free(&g);

    /* indptr that disagrees with the edges appended is refused at commit. */
    assert_int_equal(gnn_graph_writer_open(path, &h, 1, &w), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 4, ids, wt), 0);
    gnn_eid_t ip5[] = {0, 2, 3, 5};
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, ip5), 0);
    assert_int_equal(gnn_graph_writer_commit(w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "indptr[num_nodes] = 5 but 4 edges were written"));
    /* The earlier file stays as it was. */
    assert_int_equal(gnn_graph_load(path, &g), 0);
    assert_int_equal(g.csr.nnz, 4);
    gnn_graph_free(&g);

    /* A weight that is not finite is refused where the file is read. */
    const char *nan_path = tu_path("nan-weight.h5");
    float bad[] = {0.5f, 1.5f, NAN, 3.5f};
    assert_int_equal(gnn_graph_writer_open(nan_path, &h, 1, &w), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, 4, ids, bad), 0);
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, 4, ip), 0);
    assert_int_equal(gnn_graph_writer_commit(w), 0);
    assert_int_equal(gnn_graph_load(nan_path, &g), GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), "edge weight 2 is NaN (weights must be finite)"));
    assert_int_equal(open_objects(), 0);
}

/* ---- Bad files -------------------------------------------------------- */

static const char *write_good(const char *name)
{
    gnn_graph_t g;
    make_graph(&g, 60, 200, 4, g_seed + 2);
    const char *path = tu_path(name);
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    return path;
}

/* Open fails with code and a message containing want; nothing stays open. */
static void expect_open_error(const char *path, int code, const char *want)
{
    gnn_graph_file_t *f = (gnn_graph_file_t *)0x1;
    int rc = gnn_graph_open(path, &f);
    if (rc != code || !strstr(gnn_error_message(), want))
        fail_msg("open %s: got %s '%s', expected %s containing '%s'", path, gnn_error_name(rc),
                 gnn_error_message(), gnn_error_name(code), want);
    assert_null(f);
    assert_int_equal(open_objects(), 0);
}

static void expect_load_error(const char *path, int code, const char *want)
{
    gnn_graph_t g;
    int rc = gnn_graph_load(path, &g);
    if (rc != code || !strstr(gnn_error_message(), want))
        fail_msg("load %s: got %s '%s', expected %s containing '%s'", path, gnn_error_name(rc),
                 gnn_error_message(), gnn_error_name(code), want);
    assert_null(g.csr.indptr);
    assert_null(g.feat);
    assert_int_equal(open_objects(), 0);
}

/* Overwrite one int64 element of a dataset in place. */
static void poke_i64(const char *path, const char *dset, hsize_t at, int64_t v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    hid_t fs = H5Dget_space(d);
    hsize_t one = 1;
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, &at, NULL, &one, NULL);
    hid_t ms = H5Screate_simple(1, &one, NULL);
    assert_true(H5Dwrite(d, H5T_NATIVE_INT64, ms, fs, H5P_DEFAULT, &v) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
}

static void set_attr_i64(const char *path, const char *name, int64_t v)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Fclose(f);
}

static void resize(const char *path, const char *dset, int rank, hsize_t d0, hsize_t d1)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    hsize_t dims[2] = {d0, d1};
    (void)rank;
    assert_true(H5Dset_extent(d, dims) >= 0);
    H5Dclose(d);
    H5Fclose(f);
}

static void replace_dataset(const char *path, const char *dset, hid_t type, int rank,
                            const hsize_t *dims)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Ldelete(f, dset, H5P_DEFAULT) >= 0);
    hid_t s = H5Screate_simple(rank, dims, NULL);
    hid_t d = H5Dcreate2(f, dset, type, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
}

static void test_not_hdf5(void **state)
{
    (void)state;
    const char *path = tu_path("text.h5");
    FILE *fp = fopen(path, "w");
    fputs("src,dst\n0,1\n", fp);
    fclose(fp);
    expect_open_error(path, GNN_EFORMAT, "not an HDF5 file");
    expect_load_error(path, GNN_EFORMAT, "not an HDF5 file");
    expect_open_error(tu_path("does-not-exist.h5"), GNN_ENOENT, "No such file");
    expect_open_error(tu_tmpdir(), GNN_EFORMAT, "not a regular file");
}

static void test_other_layout(void **state)
{
    (void)state;
    const char *path = tu_path("other.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t n = 4;
    hid_t s = H5Screate_simple(1, &n, NULL);
    hid_t d = H5Dcreate2(f, "edge_index", H5T_STD_I64LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(f);
    expect_open_error(path, GNN_EFORMAT, "not a graph file (no 'format' attribute)");

    /* The right attribute with another format name. */
    path = write_good("otherformat.h5");
    f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Adelete(f, "format");
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 9);
    s = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "format", t, s, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, "gnn-part");
    H5Aclose(a);
    H5Sclose(s);
    H5Tclose(t);
    H5Fclose(f);
    expect_open_error(path, GNN_EFORMAT, "format is 'gnn-part', expected 'gnn-graph'");
}

/* Replace the root attribute 'format' by one of type t holding data
 * (n elements; n = 0: scalar). */
static void set_format_attr(const char *path, hid_t t, const void *data, hsize_t n)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    assert_true(H5Adelete(f, "format") >= 0);
    hid_t s = n ? H5Screate_simple(1, &n, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, "format", t, s, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, data) >= 0);
    H5Aclose(a);
    H5Sclose(s);
    H5Fclose(f);
}

static void expect_opens(const char *path)
{
    gnn_graph_file_t *f;
    int rc = gnn_graph_open(path, &f);
    if (rc) fail_msg("open %s: %s", path, gnn_error_message());
    assert_int_equal(gnn_graph_file_info(f)->num_nodes, 60);
    gnn_graph_close(f);
    assert_int_equal(open_objects(), 0);
}

/* The 'format' attribute as other writers store strings: h5py's str
 * (variable length, UTF-8), numpy's bytes (fixed length, NULLPAD, no room
 * for a terminator); and a wrong attribute named for what is wrong. */
/* A compact dataset (its values inside its header) whose header says it
 * holds fewer bytes than its shape needs: refused when opened, where HDF5
 * would read past what it holds. The header's size field sits right before
 * the values; it is patched in the file. */
static void test_compact_dataset_damaged(void **state)
{
    (void)state;
    const char *path = tu_path("compact.h5");
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[1] = {4};
    hid_t sp = H5Screate_simple(1, dims, NULL), pl = H5Pcreate(H5P_DATASET_CREATE);
    assert_true(f >= 0 && sp >= 0 && pl >= 0 && H5Pset_layout(pl, H5D_COMPACT) >= 0);
    hid_t d = H5Dcreate2(f, "x", H5T_STD_I64LE, sp, H5P_DEFAULT, pl, H5P_DEFAULT);
    const int64_t v[4] = {0x0102030405060708, 0x1112131415161718, 0x2122232425262728,
                          0x3132333435363738};
    assert_true(d >= 0 && H5Dwrite(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(d);
    H5Pclose(pl);
    H5Sclose(sp);
    assert_true(H5Fclose(f) >= 0);

    hsize_t got[1];
    hid_t ds = -1;
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_int_equal(gnn__h5_open_dataset(f, path, "x", GNN_H5_INT, 1, 0, got, &ds), 0);
    assert_true(got[0] == 4);
    H5Dclose(ds);
    H5Fclose(f);

    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    unsigned char *b = (unsigned char *)tu_read_file(path);
    assert_non_null(b);
    const unsigned char at[] = {32, 0, 8, 7, 6, 5, 4, 3, 2, 1}; /* size 32, then v[0] */
    long hit = -1;
    for (long i = 0; i + (long)sizeof at <= (long)st.st_size && hit < 0; i++)
        if (!memcmp(b + i, at, sizeof at)) hit = i;
    assert_true(hit >= 0);
    b[hit] = 16; /* two of the four values */
    FILE *w = fopen(path, "wb");
    assert_non_null(w);
    assert_int_equal(fwrite(b, 1, (size_t)st.st_size, w), (size_t)st.st_size);
    assert_int_equal(fclose(w), 0);
    free(b);
    f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    assert_true(f >= 0);
    int rc = gnn__h5_open_dataset(f, path, "x", GNN_H5_INT, 1, 0, got, &ds);
    H5Fclose(f);
    assert_int_equal(rc, GNN_EFORMAT);
    /* Later HDF5 releases refuse such a header themselves when opening. */
    const char *m = gnn_error_message();
    assert_true(strstr(m, "'x' holds fewer values than its shape") ||
                strstr(m, "'x' is not a readable dataset"));
}

static void test_format_attr_kinds(void **state)
{
    (void)state;
    const char *path = write_good("fmtkinds.h5");
    const char *name = "gnn-graph";
    for (int utf8 = 0; utf8 < 2; utf8++) {
        hid_t t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, H5T_VARIABLE);
        H5Tset_cset(t, utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
        set_format_attr(path, t, &name, 0);
        H5Tclose(t);
        expect_opens(path);

        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 9);
        H5Tset_strpad(t, H5T_STR_NULLPAD);
        H5Tset_cset(t, utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
        set_format_attr(path, t, name, 0);
        H5Tclose(t);
        expect_opens(path);

        t = H5Tcopy(H5T_C_S1);
        H5Tset_size(t, 16);
        H5Tset_strpad(t, H5T_STR_NULLTERM);
        H5Tset_cset(t, utf8 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
        char padded[16] = "gnn-graph";
        set_format_attr(path, t, padded, 0);
        H5Tclose(t);
        expect_opens(path);
    }
    /* Fixed length without a terminator keeps every character. */
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, 10);
    H5Tset_strpad(t, H5T_STR_NULLPAD);
    set_format_attr(path, t, "gnn-graphs", 0);
    H5Tclose(t);
    expect_open_error(path, GNN_EFORMAT, "format is 'gnn-graphs', expected 'gnn-graph'");

    int64_t one = 1;
    set_format_attr(path, H5T_NATIVE_INT64, &one, 0);
    expect_open_error(path, GNN_EFORMAT, "not a graph file: attribute 'format' must be a string");
    const char *two[] = {"gnn-graph", "gnn-graph"};
    t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, H5T_VARIABLE);
    set_format_attr(path, t, two, 2);
    H5Tclose(t);
    expect_open_error(path, GNN_EFORMAT,
                      "not a graph file: attribute 'format' holds 2 values, expected one");
}

static void test_unknown_version(void **state)
{
    (void)state;
    const char *path = write_good("v2.h5");
    set_attr_i64(path, "version", 3);
    expect_open_error(path, GNN_EVERSION, "format version 3 is not supported");
}

static void test_truncated_and_wrong_shape(void **state)
{
    (void)state;
    const char *path = write_good("short-indices.h5");
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    hsize_t e = (hsize_t)gnn_graph_file_info(f)->num_edges;
    gnn_graph_close(f);
    resize(path, "indices", 1, e - 1, 0);
    expect_open_error(path, GNN_EFORMAT, "dataset 'indices' has");

    path = write_good("short-indptr.h5");
    resize(path, "indptr", 1, 30, 0);
    expect_open_error(path, GNN_EFORMAT, "dataset 'indptr' has 30 entries, expected num_nodes + 1 = 61");

    path = write_good("short-feat.h5");
    resize(path, "feat", 2, 59, 4);
    expect_open_error(path, GNN_EFORMAT, "dataset 'feat' has 59 rows");

    path = write_good("flat-feat.h5");
    hsize_t dims1[1] = {240};
    replace_dataset(path, "feat", H5T_IEEE_F32LE, 1, dims1);
    expect_open_error(path, GNN_EFORMAT, "dataset 'feat' has 1 dimensions, expected 2");

    path = write_good("float-indices.h5");
    hsize_t de[1] = {e};
    replace_dataset(path, "indices", H5T_IEEE_F64LE, 1, de);
    expect_open_error(path, GNN_EFORMAT, "dataset 'indices' must hold integers");

    path = write_good("no-indptr.h5");
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(h, "indptr", H5P_DEFAULT);
    H5Fclose(h);
    expect_open_error(path, GNN_EFORMAT, "missing dataset 'indptr'");

    path = write_good("edges-attr.h5");
    set_attr_i64(path, "num_edges", (int64_t)e + 3);
    expect_open_error(path, GNN_EFORMAT, "dataset 'indices' has");

    /* Counts no file can hold: refused before count + 1 or a size derived
     * from them can overflow. */
    path = write_good("huge-nodes.h5");
    set_attr_i64(path, "num_nodes", INT64_MAX);
    expect_open_error(path, GNN_EFORMAT, "node or edge count of 2^62 or more");
    path = write_good("huge-edges.h5");
    set_attr_i64(path, "num_edges", (int64_t)1 << 62);
    expect_open_error(path, GNN_EFORMAT, "node or edge count of 2^62 or more");
    path = write_good("directed-7.h5");
    set_attr_i64(path, "directed", 7);
    expect_open_error(path, GNN_EFORMAT, "attribute 'directed' is 7, expected 0 or 1");
    path = write_good("huge-classes.h5");
    set_attr_i64(path, "num_classes", (int64_t)1 << 40);
    expect_open_error(path, GNN_EFORMAT, "num_classes 1099511627776 is above the limit of 16777216");

    /* A file cut short on disk. */
    path = write_good("cut.h5");
    char *bytes = tu_read_file(path);
    struct stat st;
    stat(path, &st);
    FILE *fp = fopen(path, "wb");
    fwrite(bytes, 1, (size_t)st.st_size / 2, fp);
    fclose(fp);
    free(bytes);
    gnn_graph_t g;
    int rc = gnn_graph_load(path, &g);
    assert_true(rc == GNN_EFORMAT || rc == GNN_EHDF5);
    assert_true(strlen(gnn_error_message()) > 0);
    assert_int_equal(open_objects(), 0);
}

static void test_bad_values(void **state)
{
    (void)state;
    const char *path = write_good("monotone.h5");
    poke_i64(path, "indptr", 10, 0);
    expect_load_error(path, GNN_EFORMAT, "indptr is not monotone at row");
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    gnn_csr_t part;
    assert_int_equal(gnn_graph_read_rows(f, 5, 10, &part), GNN_EFORMAT);
    assert_null(part.indptr);
    gnn_graph_close(f);

    path = write_good("range.h5");
    poke_i64(path, "indices", 7, 60);
    expect_load_error(path, GNN_EFORMAT, "indices[7] = 60 is outside [0, 60)");
    poke_i64(path, "indices", 7, -1);
    expect_load_error(path, GNN_EFORMAT, "indices[7] = -1 is outside [0, 60)");

    path = write_good("first.h5");
    poke_i64(path, "indptr", 0, 1);
    expect_open_error(path, GNN_EFORMAT, "indptr[0] = 1, expected 0");

    path = write_good("label.h5");
    poke_i64(path, "label", 3, 9);
    expect_load_error(path, GNN_EFORMAT, "label[3] = 9 is outside [-1, 5)");

    path = write_good("split.h5");
    poke_i64(path, "split/valid", 2, 1000);
    expect_load_error(path, GNN_EFORMAT, "valid[2] = 1000 is outside [0, 60)");

    /* A node a split names twice (train is 0 .. 29 in order). */
    path = write_good("dup-split.h5");
    poke_i64(path, "split/train", 7, 3);
    expect_load_error(path, GNN_EFORMAT, "split/train names node 3 twice");
    /* A node in two splits (trained on and tested on). */
    path = write_good("shared-split.h5");
    poke_i64(path, "split/test", 0, 3);
    expect_load_error(path, GNN_EFORMAT,
                      "node 3 is in both split/train and split/test (the splits must not share "
                      "nodes)");

    /* A sorted-flagged row that is not sorted. */
    path = write_good("unsorted.h5");
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    gnn_vid_t row = 0;
    while (g.csr.indptr[row + 1] - g.csr.indptr[row] < 2) row++;
    gnn_eid_t e = g.csr.indptr[row];
    gnn_vid_t a = g.csr.indices[e], b = g.csr.indices[e + 1];
    gnn_graph_free(&g);
    poke_i64(path, "indices", (hsize_t)e, b);
    poke_i64(path, "indices", (hsize_t)e + 1, a);
    char want[128];
    snprintf(want, sizeof want, "row %lld is not sorted although flagged sorted", (long long)row);
    expect_load_error(path, GNN_EFORMAT, want);
}

/* ---- Typed graphs (format version 2) --------------------------------- */

/*
 * The typed graph of these tests: 14 nodes of three types, paper [0, 7)
 * with 5 features (the target), author [7, 11) featureless, venue
 * [11, 14) with 3 features; four relations, two of them between papers.
 */
#define TY_N 14
#define TY_F 5
static const char *const ty_relations = "paper:cites:paper,paper:refs:paper,author:writes:paper,"
                                        "paper:in:venue";

static void make_types(gnn_graph_types_t *t)
{
    memset(t, 0, sizeof *t);
    t->n_ntypes = 3;
    const int64_t off[] = {0, 7, 11, 14}, fd[] = {5, 0, 3};
    const char *names[] = {"paper", "author", "venue"};
    for (int i = 0; i < 3; i++) {
        t->off[i] = off[i];
        snprintf(t->ntype[i], GNN_TYPE_NAME_MAX, "%s", names[i]);
        t->feat_dim[i] = fd[i];
    }
    t->off[3] = off[3];
    t->n_rels = 4;
    const int ends[][2] = {{0, 0}, {0, 0}, {1, 0}, {0, 2}};
    const char *rels[] = {"cites", "refs", "writes", "in"};
    for (int r = 0; r < 4; r++) {
        snprintf(t->rel[r], GNN_TYPE_NAME_MAX, "%s", rels[r]);
        t->rel_src[r] = ends[r][0];
        t->rel_dst[r] = ends[r][1];
    }
    t->target = 0;
}

/* Whether the graph has the edge u -r-> v (r's ends must match the types). */
static int ty_has_edge(const gnn_graph_types_t *t, gnn_vid_t u, gnn_vid_t v, int r)
{
    if (gnn_graph_types_of(t, u) != t->rel_src[r] || gnn_graph_types_of(t, v) != t->rel_dst[r])
        return 0;
    switch (r) {
    case 0: return (u + 2 * v) % 3 == 0;
    case 1: return (u + v) % 2 == 0; /* self loops, and pairs that cite too */
    case 2: return (u + v) % 3 != 0;
    default: return (u + v) % 4 != 1;
    }
}

/* The typed graph in memory: rows sorted by (source, relation), weights,
 * features with junk in the columns a type does not have (the writer drops
 * them), labels on papers, splits of papers. */
static void make_typed(gnn_graph_t *g)
{
    gnn_graph_init(g);
    g->types = malloc(sizeof *g->types);
    make_types(g->types);
    gnn_csr_t *a = &g->csr;
    size_t cap = TY_N * TY_N * 4;
    a->n_rows = a->n_cols = TY_N;
    a->indptr = malloc(sizeof *a->indptr * (TY_N + 1));
    a->indices = malloc(sizeof *a->indices * cap);
    a->weights = malloc(sizeof *a->weights * cap);
    g->etype = malloc(sizeof *g->etype * cap);
    gnn_eid_t m = 0;
    for (gnn_vid_t v = 0; v < TY_N; v++) {
        a->indptr[v] = m;
        for (gnn_vid_t u = 0; u < TY_N; u++)
            for (int r = 0; r < 4; r++)
                if (ty_has_edge(g->types, u, v, r)) {
                    a->indices[m] = u;
                    a->weights[m] = 0.25f * (float)m;
                    g->etype[m++] = r;
                }
    }
    a->indptr[TY_N] = m;
    a->nnz = m;
    a->flags = GNN_CSR_SORTED; /* not deduplicated: a pair cites and refs */
    g->directed = 1;
    g->feat_dim = TY_F;
    g->feat = malloc(sizeof *g->feat * TY_N * TY_F);
    for (int i = 0; i < TY_N * TY_F; i++) g->feat[i] = 0.5f + (float)i;
    g->num_classes = 3;
    g->label = malloc(sizeof *g->label * TY_N);
    for (gnn_vid_t v = 0; v < TY_N; v++) g->label[v] = v < 7 && v != 3 ? v % 3 : -1;
    const int64_t sp[3][3] = {{0, 1, 2}, {4}, {5, 6}}, n[3] = {3, 1, 2};
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        g->split[s] = malloc(sizeof(int64_t) * 3);
        memcpy(g->split[s], sp[s], sizeof(int64_t) * (size_t)n[s]);
        g->split_size[s] = n[s];
    }
}

/* The features a reader returns for g: each type's columns, zeros after. */
static float *ty_padded_feat(const gnn_graph_t *g)
{
    float *x = calloc(TY_N * TY_F, sizeof *x);
    for (gnn_vid_t v = 0; v < TY_N; v++) {
        int64_t w = g->types->feat_dim[gnn_graph_types_of(g->types, v)];
        memcpy(x + v * TY_F, g->feat + v * TY_F, sizeof *x * (size_t)w);
    }
    return x;
}

static void assert_types_equal(const gnn_graph_types_t *a, const gnn_graph_types_t *b)
{
    assert_int_equal(a->n_ntypes, b->n_ntypes);
    assert_int_equal(a->n_rels, b->n_rels);
    assert_int_equal(a->target, b->target);
    for (int i = 0; i < a->n_ntypes; i++) {
        assert_string_equal(a->ntype[i], b->ntype[i]);
        assert_int_equal(a->feat_dim[i], b->feat_dim[i]);
    }
    assert_memory_equal(a->off, b->off, sizeof(int64_t) * (size_t)(a->n_ntypes + 1));
    for (int r = 0; r < a->n_rels; r++) {
        assert_string_equal(a->rel[r], b->rel[r]);
        assert_int_equal(a->rel_src[r], b->rel_src[r]);
        assert_int_equal(a->rel_dst[r], b->rel_dst[r]);
    }
}

/* h, loaded from g's file, holds g with its features padded. */
static void assert_typed_loaded(const gnn_graph_t *g, const gnn_graph_t *h)
{
    assert_true(gnn_csr_equal(&g->csr, &h->csr));
    assert_int_equal(h->csr.flags, GNN_CSR_SORTED);
    assert_int_equal(h->directed, 1);
    assert_non_null(h->types);
    assert_types_equal(g->types, h->types);
    assert_memory_equal(h->etype, g->etype, sizeof(int32_t) * (size_t)g->csr.nnz);
    assert_int_equal(h->feat_dim, TY_F);
    float *want = ty_padded_feat(g);
    assert_memory_equal(h->feat, want, sizeof(float) * TY_N * TY_F);
    free(want);
    assert_int_equal(h->num_classes, 3);
    assert_memory_equal(h->label, g->label, sizeof(int64_t) * TY_N);
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        assert_int_equal(h->split_size[s], g->split_size[s]);
        assert_memory_equal(h->split[s], g->split[s], sizeof(int64_t) * (size_t)g->split_size[s]);
    }
}

/* The root attribute or dataset shape of a typed file as the format
 * documents it, read with the HDF5 C API. */
static void dataset_shape(const char *path, const char *name, hid_t want_type, int want_rank,
                          hsize_t d0, hsize_t d1)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) fail_msg("%s: no dataset %s", path, name);
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    assert_true(H5Tequal(t, want_type) > 0);
    hsize_t dims[2] = {0, 0};
    assert_int_equal(H5Sget_simple_extent_ndims(sp), want_rank);
    H5Sget_simple_extent_dims(sp, dims, NULL);
    assert_int_equal(dims[0], d0);
    if (want_rank == 2) assert_int_equal(dims[1], d1);
    H5Sclose(sp);
    H5Tclose(t);
    H5Dclose(d);
    H5Fclose(f);
}

static void check_typed_layout(const char *path, const gnn_graph_t *g)
{
    char s[512];
    assert_int_equal(h5_attr_i64(path, "version"), 2);
    h5_attr_str(path, "node_types", s, sizeof s);
    assert_string_equal(s, "paper,author,venue");
    h5_attr_str(path, "relations", s, sizeof s);
    assert_string_equal(s, ty_relations);
    h5_attr_str(path, "target_type", s, sizeof s);
    assert_string_equal(s, "paper");
    assert_int_equal(h5_attr_i64(path, "num_classes"), 3);
    int64_t n, *off = h5_read_i64(path, "node_type_offsets", &n);
    assert_int_equal(n, 4);
    assert_int_equal(off[0], 0);
    assert_int_equal(off[1], 7);
    assert_int_equal(off[2], 11);
    assert_int_equal(off[3], 14);
    free(off);
    dataset_shape(path, "node_type_offsets", H5T_STD_I64LE, 1, 4, 0);
    dataset_shape(path, "edge_type", H5T_STD_I32LE, 1, (hsize_t)g->csr.nnz, 0);
    int32_t *et;
    hsize_t dims[2];
    h5_read(path, "edge_type", H5T_NATIVE_INT32, (void **)&et, dims);
    assert_memory_equal(et, g->etype, sizeof(int32_t) * (size_t)g->csr.nnz);
    free(et);
    dataset_shape(path, "node_feat/paper", H5T_IEEE_F32LE, 2, 7, 5);
    dataset_shape(path, "node_feat/venue", H5T_IEEE_F32LE, 2, 3, 3);
    float *x;
    h5_read(path, "node_feat/venue", H5T_NATIVE_FLOAT, (void **)&x, dims);
    for (int r = 0; r < 3; r++) /* compact: each row its type's 3 columns */
        assert_memory_equal(x + r * 3, g->feat + (11 + r) * TY_F, sizeof(float) * 3);
    free(x);
    assert_false(h5_has(path, "node_feat/author"));
    assert_false(h5_has(path, "feat"));
    assert_true(h5_has(path, "indptr") && h5_has(path, "indices") && h5_has(path, "label"));
}

static void test_typed_round_trip(void **state)
{
    (void)state;
    gnn_graph_t g, h;
    make_typed(&g);
    /* The graph has what the test is about: two relations joining one pair
     * of papers, and self loops. */
    int both = 0, loops = 0;
    for (gnn_vid_t v = 0; v < 7; v++)
        for (gnn_vid_t u = 0; u < 7; u++) {
            both += ty_has_edge(g.types, u, v, 0) && ty_has_edge(g.types, u, v, 1);
            loops += u == v && ty_has_edge(g.types, u, v, 1);
        }
    assert_true(both > 0 && loops > 0);
    printf("typed graph: %lld edges, %d pairs with two relations\n", (long long)g.csr.nnz, both);

    const char *path = tu_path("typed.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    check_typed_layout(path, &g);
    assert_int_equal(gnn_graph_load(path, &h), 0);
    assert_typed_loaded(&g, &h);
    gnn_graph_free(&h);
    assert_int_equal(open_objects(), 0);

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    const gnn_graph_info_t *in = gnn_graph_file_info(f);
    assert_int_equal(in->version, 2);
    assert_int_equal(in->num_nodes, TY_N);
    assert_int_equal(in->num_edges, g.csr.nnz);
    assert_int_equal(in->feat_dim, TY_F);
    assert_int_equal(in->num_classes, 3);
    assert_true(in->has_labels && in->has_weights && !in->has_orig_ids);
    assert_non_null(in->types);
    assert_types_equal(g.types, in->types);

    /* Feature ranges: inside one type, across one and two type boundaries,
     * inside the featureless type (all zeros), single rows, empty. */
    float *want = ty_padded_feat(&g), got[TY_N * TY_F + 1];
    const gnn_vid_t ranges[][2] = {{0, 14}, {5, 8}, {6, 2}, {8, 2}, {7, 4}, {10, 2},
                                   {12, 2}, {13, 1}, {0, 1}, {9, 0}};
    for (size_t i = 0; i < sizeof ranges / sizeof ranges[0]; i++) {
        gnn_vid_t r0 = ranges[i][0], nr = ranges[i][1];
        for (int k = 0; k < TY_N * TY_F + 1; k++) got[k] = -7.0f; /* no stale zeros */
        assert_int_equal(gnn_graph_read_feat(f, r0, nr, got), 0);
        if (nr) assert_memory_equal(got, want + r0 * TY_F, sizeof(float) * (size_t)(nr * TY_F));
        assert_true(got[nr * TY_F] == -7.0f); /* nothing written past the range */
    }
    for (int j = 0; j < TY_F; j++) assert_true(want[8 * TY_F + j] == 0.0f); /* an author */
    assert_true(want[12 * TY_F + 2] == 0.5f + 12 * TY_F + 2 && want[12 * TY_F + 3] == 0.0f);
    free(want);
    assert_int_equal(gnn_graph_read_feat(f, 10, 5, got), GNN_ERANGE);

    /* Relation ranges. */
    int32_t et[TY_N * TY_N * 4];
    gnn_eid_t m = g.csr.nnz;
    const gnn_eid_t eranges[][2] = {{0, m}, {0, 1}, {3, 17}, {m - 1, 1}, {m, 0}};
    for (size_t i = 0; i < sizeof eranges / sizeof eranges[0]; i++) {
        gnn_eid_t e0 = eranges[i][0], n = eranges[i][1];
        assert_int_equal(gnn_graph_read_etypes(f, e0, n, et), 0);
        if (n) assert_memory_equal(et, g.etype + e0, sizeof(int32_t) * (size_t)n);
    }
    assert_int_equal(gnn_graph_read_etypes(f, m - 1, 2, et), GNN_ERANGE);
    assert_non_null(strstr(gnn_error_message(), "edge range"));
    gnn_graph_close(f);
    assert_int_equal(open_objects(), 0);
    gnn_graph_free(&g);
}

/* The streaming writer: features in blocks across type boundaries, edges
 * and relations appended (num_edges = -1) in pieces, or put in any order
 * with a known count. Both give the file gnn_graph_write gives. */
static void test_typed_streaming_writer(void **state)
{
    (void)state;
    gnn_graph_t g, h;
    make_typed(&g);
    gnn_eid_t m = g.csr.nnz;
    for (int append = 0; append < 2; append++) {
        const char *path = tu_path(append ? "typed-append.h5" : "typed-stream.h5");
        gnn_graph_header_t hd = {.num_nodes = TY_N, .num_edges = append ? -1 : m,
                                 .directed = 1, .csr_flags = GNN_CSR_SORTED, .feat_dim = TY_F,
                                 .has_weights = 1, .has_labels = 1, .types = g.types};
        gnn_graph_writer_t *w;
        assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), 0);
        /* The writer keeps its own copy of the types. */
        assert_ptr_not_equal(gnn_graph_writer_header(w)->types, g.types);
        const gnn_eid_t cut[] = {0, 5, 6, 30, m};
        if (append) {
            for (int i = 0; i < 4; i++) {
                gnn_eid_t e0 = cut[i], n = cut[i + 1] - cut[i];
                assert_int_equal(gnn_graph_writer_put_indices(w, e0, n, g.csr.indices + e0,
                                                              g.csr.weights + e0), 0);
                if (i == 1) { /* relations may lag behind the indices, in order */
                    assert_int_equal(gnn_graph_writer_put_etypes(w, 6, 2, g.etype + 6),
                                     GNN_EINVAL);
                    assert_non_null(strstr(gnn_error_message(),
                                           "edge types must be appended in order (at 0, not 6)"));
                    assert_int_equal(gnn_graph_writer_put_etypes(w, 0, 6, g.etype), 0);
                }
            }
            assert_int_equal(gnn_graph_writer_put_etypes(w, 6, m - 6, g.etype + 6), 0);
        } else {
            for (int i = 3; i >= 0; i--) { /* backwards */
                gnn_eid_t e0 = cut[i], n = cut[i + 1] - cut[i];
                assert_int_equal(gnn_graph_writer_put_etypes(w, e0, n, g.etype + e0), 0);
                assert_int_equal(gnn_graph_writer_put_indices(w, e0, n, g.csr.indices + e0,
                                                              g.csr.weights + e0), 0);
            }
            assert_int_equal(gnn_graph_writer_put_etypes(w, m - 1, 2, g.etype), GNN_ERANGE);
        }
        assert_int_equal(gnn_graph_writer_put_indptr(w, 0, TY_N + 1, g.csr.indptr), 0);
        /* Blocks [0, 5) [5, 9) [9, 13) [13, 14): across paper/author (7) and
         * author/venue (11). */
        const gnn_vid_t rows[] = {0, 5, 9, 13, 14};
        for (int i = 3; i >= 0; i--)
            assert_int_equal(gnn_graph_writer_put_feat(w, rows[i], rows[i + 1] - rows[i],
                                                       g.feat + rows[i] * TY_F), 0);
        assert_int_equal(gnn_graph_writer_put_labels(w, 0, TY_N, g.label), 0);
        for (int s = 0; s < GNN_NUM_SPLITS; s++)
            assert_int_equal(gnn_graph_writer_put_split(w, (gnn_split_t)s, g.split[s],
                                                        g.split_size[s]), 0);
        assert_int_equal(gnn_graph_writer_commit(w), 0);
        check_typed_layout(path, &g);
        assert_int_equal(h5_attr_i64(path, "num_edges"), m);
        assert_int_equal(gnn_graph_load(path, &h), 0);
        assert_typed_loaded(&g, &h);
        assert_memory_equal(h.csr.weights, g.csr.weights, sizeof(float) * (size_t)m);
        gnn_graph_free(&h);
    }
    assert_int_equal(open_objects(), 0);
    gnn_graph_free(&g);
}

/* A typed graph without features: no node_feat group, feat_dim 0. */
static void test_typed_featureless(void **state)
{
    (void)state;
    gnn_graph_t g, h;
    make_typed(&g);
    for (int i = 0; i < 3; i++) g.types->feat_dim[i] = 0;
    free(g.feat);
    g.feat = NULL;
    g.feat_dim = 0;
    const char *path = tu_path("typed-nofeat.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    assert_false(h5_has(path, "node_feat"));
    assert_int_equal(gnn_graph_load(path, &h), 0);
    assert_int_equal(h.feat_dim, 0);
    assert_null(h.feat);
    assert_types_equal(g.types, h.types);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    float x;
    assert_int_equal(gnn_graph_read_feat(f, 0, 1, &x), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "the graph has no node features"));
    gnn_graph_close(f);
    gnn_graph_free(&h);
    gnn_graph_free(&g);
}

/* A version 1 file reads with no types; relations are refused. */
static void test_version1_has_no_types(void **state)
{
    (void)state;
    const char *path = write_good("v1.h5");
    assert_int_equal(h5_attr_i64(path, "version"), 1);
    assert_false(h5_has(path, "edge_type") || h5_has(path, "node_type_offsets"));
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->version, 1);
    assert_null(gnn_graph_file_info(f)->types);
    assert_int_equal(gnn_graph_file_info(f)->feat_dim, 4);
    int32_t r;
    assert_int_equal(gnn_graph_read_etypes(f, 0, 1, &r), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "the graph has no edge types"));
    gnn_graph_close(f);
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    assert_null(g.types);
    assert_null(g.etype);
    assert_int_equal(g.feat_dim, 4);
    gnn_graph_free(&g);
}

static void test_types_helpers(void **state)
{
    (void)state;
    gnn_graph_types_t t;
    make_types(&t);
    const int want[TY_N] = {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2};
    for (gnn_vid_t v = 0; v < TY_N; v++) assert_int_equal(gnn_graph_types_of(&t, v), want[v]);
    assert_int_equal(gnn_graph_types_find(&t, "venue"), 2);
    assert_int_equal(gnn_graph_types_find(&t, "paper"), 0);
    assert_int_equal(gnn_graph_types_find(&t, "cites"), -1);
    assert_int_equal(gnn_graph_types_find(&t, "Paper"), -1);
    assert_int_equal(gnn_graph_types_max_feat(&t), 5);
    assert_int_equal(gnn_graph_types_check(&t, TY_N, "t"), 0);
    /* Empty types (first, middle, last) own no id. */
    gnn_graph_types_t e = t;
    e.n_ntypes = 5;
    const int64_t off[] = {0, 0, 7, 7, 14, 14};
    memcpy(e.off, off, sizeof off);
    snprintf(e.ntype[3], GNN_TYPE_NAME_MAX, "a");
    snprintf(e.ntype[4], GNN_TYPE_NAME_MAX, "b");
    assert_int_equal(gnn_graph_types_check(&e, 14, "t"), 0);
    for (gnn_vid_t v = 0; v < TY_N; v++) assert_int_equal(gnn_graph_types_of(&e, v), v < 7 ? 1 : 3);
}

/* The most types and relations, every name at its longest: the lists
 * written to the attributes and read back are whole. */
static void test_typed_limits(void **state)
{
    (void)state;
    gnn_graph_types_t *t = calloc(1, sizeof *t);
    t->n_ntypes = GNN_MAX_NODE_TYPES;
    t->n_rels = GNN_MAX_RELATIONS;
    t->target = GNN_MAX_NODE_TYPES - 1;
    for (int i = 0; i < GNN_MAX_NODE_TYPES; i++) {
        memset(t->ntype[i], 'n', GNN_TYPE_NAME_MAX - 1);
        snprintf(t->ntype[i], 3, "%02u", (unsigned)i % 100u); /* cuts the fill: restore it */
        memset(t->ntype[i] + 2, 'n', GNN_TYPE_NAME_MAX - 3);
        t->off[i + 1] = i + 1;
        t->feat_dim[i] = i % 3;
    }
    for (int r = 0; r < GNN_MAX_RELATIONS; r++) {
        snprintf(t->rel[r], 4, "%03u", (unsigned)r % 1000u);
        memset(t->rel[r] + 3, 'r', GNN_TYPE_NAME_MAX - 4);
        t->rel_src[r] = r % GNN_MAX_NODE_TYPES;
        t->rel_dst[r] = (r * 7) % GNN_MAX_NODE_TYPES;
    }
    assert_int_equal(strlen(t->ntype[5]), GNN_TYPE_NAME_MAX - 1);
    assert_int_equal(strlen(t->rel[255]), GNN_TYPE_NAME_MAX - 1);
    gnn_graph_t g;
    gnn_graph_init(&g);
    g.types = t;
    assert_int_equal(gnn_csr_from_edges(GNN_MAX_NODE_TYPES, 0, NULL, NULL, NULL, 0, &g.csr), 0);
    g.etype = malloc(sizeof *g.etype);
    g.feat_dim = 2;
    g.feat = calloc(GNN_MAX_NODE_TYPES * 2, sizeof *g.feat);
    const char *path = tu_path("typed-limits.h5");
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_t h;
    int rc = gnn_graph_load(path, &h);
    if (rc) fail_msg("load %s: %s", path, gnn_error_message());
    assert_types_equal(t, h.types);
    gnn_graph_free(&h);
    char *rels = malloc(GNN_MAX_RELATIONS * 3 * GNN_TYPE_NAME_MAX);
    h5_attr_str(path, "relations", rels, GNN_MAX_RELATIONS * 3 * GNN_TYPE_NAME_MAX);
    /* 256 entries of 3 names of 63 characters, two colons, a comma between. */
    assert_int_equal(strlen(rels), GNN_MAX_RELATIONS * (3 * 63 + 2) + GNN_MAX_RELATIONS - 1);
    free(rels);
    gnn_graph_free(&g);
}

/* gnn_graph_types_check refuses t for num_nodes with GNN_EINVAL and a
 * message "what: ..." containing want. */
static void expect_types_bad(const gnn_graph_types_t *t, int64_t num_nodes, const char *want)
{
    int rc = gnn_graph_types_check(t, num_nodes, "the types");
    if (rc != GNN_EINVAL || strncmp(gnn_error_message(), "the types: ", 11) ||
        !strstr(gnn_error_message(), want))
        fail_msg("types check: got %s '%s', expected GNN_EINVAL with '%s'", gnn_error_name(rc),
                 gnn_error_message(), want);
}

static void test_types_check(void **state)
{
    (void)state;
    gnn_graph_types_t t;
    make_types(&t);
    expect_types_bad(&t, 15, "node types cover [0, 14), expected [0, num_nodes = 15)");
    t.off[0] = 1;
    expect_types_bad(&t, 14, "node types cover [1, 14)");
    make_types(&t);
    t.off[2] = 6;
    expect_types_bad(&t, 14, "node type 1 ends (6) before it starts (7)");
    make_types(&t);
    t.n_ntypes = 0;
    expect_types_bad(&t, 0, "0 node types, expected 1 to 64");
    make_types(&t);
    t.n_ntypes = GNN_MAX_NODE_TYPES + 1;
    expect_types_bad(&t, 14, "65 node types, expected 1 to 64");
    make_types(&t);
    t.n_rels = 0;
    expect_types_bad(&t, 14, "0 relations, expected 1 to 256");
    make_types(&t);
    t.n_rels = GNN_MAX_RELATIONS + 1;
    expect_types_bad(&t, 14, "257 relations, expected 1 to 256");

    /* Names: 1 to 63 characters of [A-Za-z0-9_-], distinct. */
    const char *bad[] = {"", "a,b", "a:b", "a b", "caf\xc3\xa9", "a/b"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[128];
        make_types(&t);
        snprintf(t.ntype[1], GNN_TYPE_NAME_MAX, "%s", bad[i]);
        snprintf(want, sizeof want, "node type 1 has the name '%s' (expected 1 to 63 characters",
                 bad[i]);
        expect_types_bad(&t, 14, want);
        make_types(&t);
        snprintf(t.rel[2], GNN_TYPE_NAME_MAX, "%s", bad[i]);
        snprintf(want, sizeof want, "relation 2 has the name '%s' (expected", bad[i]);
        expect_types_bad(&t, 14, want);
    }
    make_types(&t);
    memset(t.ntype[2], 'v', GNN_TYPE_NAME_MAX); /* no terminator inside the name */
    char want63[GNN_TYPE_NAME_MAX + 64];
    snprintf(want63, sizeof want63, "node type 2 has the name '%.63s' (", t.ntype[2]);
    expect_types_bad(&t, 14, want63); /* the first 63 characters shown */
    make_types(&t);
    memset(t.ntype[2], 'v', GNN_TYPE_NAME_MAX - 1); /* 63 characters: fine */
    t.ntype[2][GNN_TYPE_NAME_MAX - 1] = '\0';
    assert_int_equal(gnn_graph_types_check(&t, 14, "the types"), 0);
    make_types(&t);
    snprintf(t.ntype[2], GNN_TYPE_NAME_MAX, "paper");
    expect_types_bad(&t, 14, "two node types are called 'paper'");
    make_types(&t);
    snprintf(t.rel[1], GNN_TYPE_NAME_MAX, "cites");
    expect_types_bad(&t, 14, "relation paper -cites-> paper is named twice");
    /* One name for relations with other ends is fine. */
    make_types(&t);
    snprintf(t.rel[3], GNN_TYPE_NAME_MAX, "cites");
    snprintf(t.rel[2], GNN_TYPE_NAME_MAX, "cites");
    assert_int_equal(gnn_graph_types_check(&t, 14, "the types"), 0);

    /* Relation ends, target, feature widths. */
    make_types(&t);
    t.rel_dst[3] = 3;
    expect_types_bad(&t, 14, "relation 'in' joins node types 0 and 3 of 3");
    make_types(&t);
    t.rel_src[2] = -1;
    expect_types_bad(&t, 14, "relation 'writes' joins node types -1 and 0 of 3");
    make_types(&t);
    t.target = 3;
    expect_types_bad(&t, 14, "target type 3 of 3");
    make_types(&t);
    t.target = -2;
    expect_types_bad(&t, 14, "target type -2 of 3");
    make_types(&t);
    t.target = -1; /* no labelled type */
    assert_int_equal(gnn_graph_types_check(&t, 14, "the types"), 0);
    make_types(&t);
    t.feat_dim[1] = -1;
    expect_types_bad(&t, 14, "node type 'author' has a feature width of -1");
    make_types(&t);
    t.feat_dim[0] = (int64_t)1 << 31;
    expect_types_bad(&t, 14, "node type 'paper' has a feature width of 2147483648");
}

/* The writer refuses a bad typed header, mismatched widths, labels without
 * a target, relations out of range, and commits no file without every
 * edge's relation. */
static void test_typed_writer_refusals(void **state)
{
    (void)state;
    gnn_graph_t g;
    make_typed(&g);
    gnn_eid_t m = g.csr.nnz;
    const char *path = tu_path("typed-w.h5");
    unlink(path);
    gnn_graph_types_t t = *g.types;
    gnn_graph_header_t hd = {.num_nodes = TY_N, .num_edges = m, .directed = 1,
                             .csr_flags = GNN_CSR_SORTED, .feat_dim = TY_F, .has_labels = 1,
                             .types = &t};
    gnn_graph_writer_t *w = (gnn_graph_writer_t *)0x1;
    char want[700];

    snprintf(t.ntype[1], GNN_TYPE_NAME_MAX, "two words");
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    snprintf(want, sizeof want, "%s: node type 1 has the name 'two words'", path);
    assert_non_null(strstr(gnn_error_message(), want));
    assert_null(w);
    t = *g.types;
    snprintf(t.ntype[1], GNN_TYPE_NAME_MAX, "venue");
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "two node types are called 'venue'"));
    t = *g.types;
    t.rel_src[0] = 7;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "relation 'cites' joins node types 7 and 0 of 3"));
    t = *g.types;
    hd.num_nodes = 13;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "expected [0, num_nodes = 13)"));
    hd.num_nodes = TY_N;
    hd.feat_dim = 3;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    snprintf(want, sizeof want, "%s: feature width 3 in the header, the widest node type has 5",
             path);
    assert_non_null(strstr(gnn_error_message(), want));
    hd.feat_dim = 0;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "feature width 0 in the header"));
    hd.feat_dim = TY_F;
    t.target = -1;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "labels of a typed graph need a target type"));
    t.target = 0;
    assert_false(tu_exists(path));

    /* Relations: in range, only in a typed writer; and all of them at commit. */
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), 0);
    int32_t bad_r[] = {0, 4}, neg_r[] = {-1};
    assert_int_equal(gnn_graph_writer_put_etypes(w, 0, 2, bad_r), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "edge 1 has relation 4, outside [0, 4)"));
    assert_int_equal(gnn_graph_writer_put_etypes(w, 5, 1, neg_r), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "edge 5 has relation -1, outside [0, 4)"));
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, TY_N + 1, g.csr.indptr), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, m, g.csr.indices, NULL), 0);
    assert_int_equal(gnn_graph_writer_put_feat(w, 0, TY_N, g.feat), 0);
    assert_int_equal(gnn_graph_writer_put_labels(w, 0, TY_N, g.label), 0);
    assert_int_equal(gnn_graph_writer_put_etypes(w, 0, m - 1, g.etype), 0);
    assert_int_equal(gnn_graph_writer_commit(w), GNN_EINVAL);
    snprintf(want, sizeof want, "%s: %lld of %lld edge types written", path, (long long)m - 1,
             (long long)m);
    assert_non_null(strstr(gnn_error_message(), want));
    assert_false(tu_exists(path));

    /* Append mode: relations must keep up with the edges. */
    hd.num_edges = -1;
    assert_int_equal(gnn_graph_writer_open(path, &hd, 1, &w), 0);
    assert_int_equal(gnn_graph_writer_put_indptr(w, 0, TY_N + 1, g.csr.indptr), 0);
    assert_int_equal(gnn_graph_writer_put_indices(w, 0, m, g.csr.indices, NULL), 0);
    assert_int_equal(gnn_graph_writer_put_feat(w, 0, TY_N, g.feat), 0);
    assert_int_equal(gnn_graph_writer_put_labels(w, 0, TY_N, g.label), 0);
    assert_int_equal(gnn_graph_writer_commit(w), GNN_EINVAL);
    snprintf(want, sizeof want, "0 of %lld edge types written", (long long)m);
    assert_non_null(strstr(gnn_error_message(), want));
    assert_false(tu_exists(path));
    hd.num_edges = m;

    /* An untyped writer has no relations to put. */
    gnn_graph_header_t plain = {.num_nodes = 2, .num_edges = 1, .directed = 1};
    assert_int_equal(gnn_graph_writer_open(path, &plain, 1, &w), 0);
    assert_int_equal(gnn_graph_writer_put_etypes(w, 0, 1, neg_r + 0), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "the header declares no types"));
    gnn_graph_writer_abort(w);

    /* gnn_graph_write: types and relations go together. */
    int32_t *et = g.etype;
    g.etype = NULL;
    assert_int_equal(gnn_graph_write(path, &g, 1), GNN_EINVAL);
    assert_non_null(strstr(gnn_error_message(), "a typed graph needs its edge types"));
    g.etype = et;
    g.feat_dim = 4;
    assert_int_equal(gnn_graph_write(path, &g, 1), GNN_EINVAL);
    assert_non_null(
        strstr(gnn_error_message(), "feature width 4 in the header, the widest node type has 5"));
    g.feat_dim = TY_F;
    assert_false(tu_exists(path));
    assert_int_equal(open_objects(), 0);
    gnn_graph_free(&g);
}

/* ---- Bad typed files ---------------------------------------------------- */

static const char *write_typed(const char *name)
{
    gnn_graph_t g;
    make_typed(&g);
    const char *path = tu_path(name);
    assert_int_equal(gnn_graph_write(path, &g, 1), 0);
    gnn_graph_free(&g);
    return path;
}

/* path opens as the typed graph of make_typed. */
static void expect_opens_typed(const char *path)
{
    gnn_graph_file_t *f;
    int rc = gnn_graph_open(path, &f);
    if (rc) fail_msg("open %s: %s", path, gnn_error_message());
    assert_int_equal(gnn_graph_file_info(f)->num_nodes, TY_N);
    assert_non_null(gnn_graph_file_info(f)->types);
    gnn_graph_close(f);
    assert_int_equal(open_objects(), 0);
}

static void delete_attr(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(H5Adelete(f, name) >= 0);
    H5Fclose(f);
}

/* The file's edges as (row, source, relation) triples, row-major. */
static gnn_eid_t typed_edges(const char *path, gnn_vid_t *row, gnn_vid_t *src, int32_t *rel)
{
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    for (gnn_vid_t v = 0; v < g.csr.n_rows; v++)
        for (gnn_eid_t e = g.csr.indptr[v]; e < g.csr.indptr[v + 1]; e++) {
            row[e] = v;
            src[e] = g.csr.indices[e];
            rel[e] = g.etype[e];
        }
    gnn_eid_t m = g.csr.nnz;
    gnn_graph_free(&g);
    return m;
}

static void test_bad_typed_attributes(void **state)
{
    (void)state;
    char want[700];
    const char *path = write_typed("bad-rel-type.h5");
    h5_set_attr_str(path, "relations",
                    "paper:cites:paper,paper:refs:paper,author:writes:paper,paper:in:place");
    snprintf(want, sizeof want,
             "%s: relation 'in' names an unknown node type ('paper' or 'place')", path);
    expect_open_error(path, GNN_EFORMAT, want);
    expect_load_error(path, GNN_EFORMAT, want);
    h5_set_attr_str(path, "relations", "paper:cites:paper,paper:refs,author:writes:paper");
    expect_open_error(path, GNN_EFORMAT, "relation 'paper:refs' is not SRC:NAME:DST");
    h5_set_attr_str(path, "relations", "paper:cites:paper:venue");
    expect_open_error(path, GNN_EFORMAT, "relation 'paper:cites:paper:venue' is not SRC:NAME:DST");
    h5_set_attr_str(path, "relations", "");
    expect_open_error(path, GNN_EFORMAT, "attribute 'relations' is empty");
    h5_set_attr_str(path, "relations", "paper::paper");
    expect_open_error(path, GNN_EFORMAT, "relation 0 has the name ''");
    h5_set_attr_str(path, "relations", "paper:cites:paper,paper:cites:paper");
    expect_open_error(path, GNN_EFORMAT, "relation paper -cites-> paper is named twice");
    delete_attr(path, "relations");
    snprintf(want, sizeof want, "%s: missing attribute 'relations'", path);
    expect_open_error(path, GNN_EFORMAT, want);
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(h, "relations", H5T_STD_I64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    int64_t one = 1;
    assert_true(a >= 0 && H5Awrite(a, H5T_NATIVE_INT64, &one) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Fclose(h);
    snprintf(want, sizeof want, "%s: attribute 'relations' must be a string", path);
    expect_open_error(path, GNN_EFORMAT, want);

    path = write_typed("bad-ntypes.h5");
    h5_set_attr_str(path, "node_types", "paper,author,venue,extra");
    expect_open_error(path, GNN_EFORMAT,
                      "dataset 'node_type_offsets' has 4 entries, expected 4 node types + 1");
    h5_set_attr_str(path, "node_types", "paper,author");
    expect_open_error(path, GNN_EFORMAT,
                      "relation 'in' names an unknown node type ('paper' or 'venue')");
    /* The names themselves (with one relation that names no other type). */
    h5_set_attr_str(path, "relations", "paper:cites:paper");
    h5_set_attr_str(path, "node_types", "paper,,venue");
    expect_open_error(path, GNN_EFORMAT, "node type 1 has the name ''");
    h5_set_attr_str(path, "node_types", "paper,paper,venue");
    expect_open_error(path, GNN_EFORMAT, "two node types are called 'paper'");
    h5_set_attr_str(path, "node_types", "");
    expect_open_error(path, GNN_EFORMAT, "attribute 'node_types' is empty");
    char list[1024] = "paper";
    for (int i = 1; i <= GNN_MAX_NODE_TYPES; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), ",t%d", i);
    h5_set_attr_str(path, "node_types", list); /* 65 names */
    expect_open_error(path, GNN_EFORMAT, "attribute 'node_types' lists more than 64 entries");
    char longname[GNN_TYPE_NAME_MAX + 1];
    memset(longname, 'x', GNN_TYPE_NAME_MAX);
    longname[GNN_TYPE_NAME_MAX] = '\0';
    snprintf(list, sizeof list, "paper,%s,venue", longname);
    h5_set_attr_str(path, "node_types", list);
    snprintf(want, sizeof want, "node type name '%s' is longer than 63 characters", longname);
    expect_open_error(path, GNN_EFORMAT, want);
    delete_attr(path, "node_types");
    snprintf(want, sizeof want, "%s: missing attribute 'node_types'", path);
    expect_open_error(path, GNN_EFORMAT, want);

    path = write_typed("bad-target.h5");
    h5_set_attr_str(path, "target_type", "venues");
    snprintf(want, sizeof want, "%s: target_type 'venues' is not a node type", path);
    expect_open_error(path, GNN_EFORMAT, want);
    /* Labels without a target type. */
    delete_attr(path, "target_type");
    snprintf(want, sizeof want, "%s: a typed graph with labels needs a target_type", path);
    expect_open_error(path, GNN_EFORMAT, want);
}

static void test_bad_typed_offsets(void **state)
{
    (void)state;
    char want[700];
    const char *path = write_typed("bad-off.h5");
    poke_i64(path, "node_type_offsets", 1, 12);
    snprintf(want, sizeof want, "%s: node type 1 ends (11) before it starts (12)", path);
    expect_open_error(path, GNN_EFORMAT, want);
    expect_load_error(path, GNN_EFORMAT, want);
    poke_i64(path, "node_type_offsets", 1, 7);
    poke_i64(path, "node_type_offsets", 3, 13);
    expect_open_error(path, GNN_EFORMAT, "node types cover [0, 13), expected [0, num_nodes = 14)");
    poke_i64(path, "node_type_offsets", 3, 15);
    expect_open_error(path, GNN_EFORMAT, "node types cover [0, 15), expected [0, num_nodes = 14)");
    poke_i64(path, "node_type_offsets", 3, 14);
    poke_i64(path, "node_type_offsets", 0, -1);
    expect_open_error(path, GNN_EFORMAT, "node types cover [-1, 14)");
    poke_i64(path, "node_type_offsets", 0, 0);
    expect_opens_typed(path);
    resize(path, "node_type_offsets", 1, 3, 0);
    expect_open_error(path, GNN_EFORMAT,
                      "dataset 'node_type_offsets' has 3 entries, expected 3 node types + 1");
    hsize_t d4[1] = {4};
    replace_dataset(path, "node_type_offsets", H5T_IEEE_F64LE, 1, d4);
    expect_open_error(path, GNN_EFORMAT, "dataset 'node_type_offsets' must hold integers");
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(h, "node_type_offsets", H5P_DEFAULT);
    H5Fclose(h);
    expect_open_error(path, GNN_EFORMAT, "missing dataset 'node_type_offsets'");
}

static void test_bad_typed_edges(void **state)
{
    (void)state;
    char want[700];
    gnn_vid_t row[TY_N * TY_N * 4], src[TY_N * TY_N * 4];
    int32_t rel[TY_N * TY_N * 4];
    const char *path = write_typed("bad-etype.h5");
    gnn_eid_t m = typed_edges(path, row, src, rel);

    poke_i64(path, "edge_type", 9, 4);
    expect_opens_typed(path); /* values are checked when read */
    snprintf(want, sizeof want, "%s: edge_type[9] = 4 is outside [0, 4)", path);
    expect_load_error(path, GNN_EFORMAT, want);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    int32_t et[16];
    assert_int_equal(gnn_graph_read_etypes(f, 8, 3, et), GNN_EFORMAT);
    assert_non_null(strstr(gnn_error_message(), "edge_type[9] = 4 is outside [0, 4)"));
    assert_int_equal(gnn_graph_read_etypes(f, 0, 9, et), 0);
    gnn_graph_close(f);
    poke_i64(path, "edge_type", 9, -1);
    expect_load_error(path, GNN_EFORMAT, "edge_type[9] = -1 is outside [0, 4)");
    poke_i64(path, "edge_type", 9, rel[9]);
    resize(path, "edge_type", 1, (hsize_t)m - 1, 0);
    snprintf(want, sizeof want, "dataset 'edge_type' has %lld entries, expected num_edges = %lld",
             (long long)m - 1, (long long)m);
    expect_open_error(path, GNN_EFORMAT, want);
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(h, "edge_type", H5P_DEFAULT);
    H5Fclose(h);
    expect_open_error(path, GNN_EFORMAT, "missing dataset 'edge_type'");

    /* A valid relation whose ends are not the edge's: each kind of swap.
     * The first edge of a venue row made 'cites' (paper -> paper); the
     * first 'writes' edge made 'cites' (its source is an author); a
     * 'cites' edge made 'writes'. */
    const int32_t to[] = {0, 0, 2};
    for (int k = 0; k < 3; k++) {
        gnn_eid_t e = 0;
        if (k == 0) while (row[e] < 11) e++;
        if (k == 1) while (rel[e] != 2) e++;
        if (k == 2) while (rel[e] != 0) e++;
        path = write_typed("bad-ends.h5");
        poke_i64(path, "edge_type", (hsize_t)e, to[k]);
        const char *tn[] = {"paper", "author", "venue"};
        int tu = src[e] < 7 ? 0 : src[e] < 11 ? 1 : 2, tv = row[e] < 7 ? 0 : row[e] < 11 ? 1 : 2;
        const char *rs = to[k] == 2 ? "author" : "paper";
        snprintf(want, sizeof want,
                 "%s: edge %lld (%lld -> %lld) is a %s -> %s edge, but its relation '%s' joins "
                 "%s -> paper",
                 path, (long long)e, (long long)src[e], (long long)row[e], tn[tu], tn[tv],
                 to[k] == 2 ? "writes" : "cites", rs);
        expect_opens_typed(path);
        expect_load_error(path, GNN_EFORMAT, want);
    }
}

static void test_bad_typed_labels_and_splits(void **state)
{
    (void)state;
    char want[700];
    const char *path = write_typed("bad-label.h5");
    poke_i64(path, "label", 8, 1);
    snprintf(want, sizeof want,
             "%s: node 8 of type 'author' has a label, but the target type is 'paper'", path);
    expect_load_error(path, GNN_EFORMAT, want);
    poke_i64(path, "label", 8, -1);
    poke_i64(path, "label", 13, 0);
    expect_load_error(path, GNN_EFORMAT, "node 13 of type 'venue' has a label");
    poke_i64(path, "label", 13, -1);
    poke_i64(path, "label", 3, 2); /* unlabelled paper 3 gets a label: fine */
    gnn_graph_t g;
    assert_int_equal(gnn_graph_load(path, &g), 0);
    assert_int_equal(g.label[3], 2);
    gnn_graph_free(&g);

    path = write_typed("bad-split.h5");
    poke_i64(path, "split/valid", 0, 7);
    snprintf(want, sizeof want,
             "%s: split/valid[0] = 7 is a node of type 'author', not of the target type paper",
             path);
    expect_load_error(path, GNN_EFORMAT, want);
    poke_i64(path, "split/valid", 0, 4);
    poke_i64(path, "split/test", 1, 13);
    expect_load_error(path, GNN_EFORMAT,
                      "split/test[1] = 13 is a node of type 'venue', not of the target type paper");
    poke_i64(path, "split/test", 1, 3); /* another paper: fine */
    assert_int_equal(gnn_graph_load(path, &g), 0);
    gnn_graph_free(&g);

    /* Splits without any target type (and no labels). */
    path = write_typed("bad-split-notarget.h5");
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(h, "label", H5P_DEFAULT);
    H5Adelete(h, "target_type");
    H5Adelete(h, "num_classes");
    H5Fclose(h);
    expect_opens_typed(path);
    expect_load_error(path, GNN_EFORMAT,
                      "split/train[0] = 0 is a node of type 'paper', not of the target type");
}

static void test_bad_typed_features(void **state)
{
    (void)state;
    char want[700];
    /* A 'feat' dataset beside the per-type ones. */
    const char *path = write_typed("bad-feat.h5");
    hsize_t fd[2] = {TY_N, TY_F};
    hid_t h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t s = H5Screate_simple(2, fd, NULL);
    hid_t d = H5Dcreate2(h, "feat", H5T_IEEE_F32LE, s, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(d >= 0);
    H5Dclose(d);
    H5Sclose(s);
    H5Fclose(h);
    snprintf(want, sizeof want,
             "%s: a typed graph keeps its features per node type (node_feat/TYPE), not in 'feat'",
             path);
    expect_open_error(path, GNN_EFORMAT, want);

    path = write_typed("bad-node-feat.h5");
    resize(path, "node_feat/venue", 2, 4, 3);
    snprintf(want, sizeof want, "%s: dataset 'node_feat/venue' has shape (4, 3), expected 3 rows",
             path);
    expect_open_error(path, GNN_EFORMAT, want);
    resize(path, "node_feat/venue", 2, 2, 3);
    expect_open_error(path, GNN_EFORMAT,
                      "dataset 'node_feat/venue' has shape (2, 3), expected 3 rows");
    hsize_t d1[1] = {3};
    replace_dataset(path, "node_feat/venue", H5T_IEEE_F32LE, 1, d1);
    expect_open_error(path, GNN_EFORMAT, "dataset 'node_feat/venue' has 1 dimensions, expected 2");
    hsize_t d2[2] = {3, 3};
    replace_dataset(path, "node_feat/venue", H5T_STD_I32LE, 2, d2);
    expect_open_error(path, GNN_EFORMAT, "dataset 'node_feat/venue' must hold floats");

    /* A type's features may be absent: that type is then featureless. */
    path = write_typed("no-venue-feat.h5");
    h = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    H5Ldelete(h, "node_feat/venue", H5P_DEFAULT);
    H5Fclose(h);
    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    assert_int_equal(gnn_graph_file_info(f)->types->feat_dim[2], 0);
    assert_int_equal(gnn_graph_file_info(f)->feat_dim, 5);
    gnn_graph_close(f);
}

/* ---- Allocation failure ---------------------------------------------- */

/* Fail each allocation of gnn_graph_load of path in turn: GNN_ENOMEM, g
 * empty, nothing open. Returns the number of allocations. */
static int load_under_alloc_failure(const char *path)
{
    int failures = 0;
    for (int64_t nth = 1;; nth++) {
        gnn_graph_t g;
        gnn_alloc_fail_at(nth);
        int rc = gnn_graph_load(path, &g);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(rc, 0);
            gnn_graph_free(&g);
            break;
        }
        if (rc != GNN_ENOMEM)
            fail_msg("%s, allocation %lld failed: %s '%s'", path, (long long)nth,
                     gnn_error_name(rc), gnn_error_message());
        assert_null(g.csr.indptr);
        assert_null(g.csr.indices);
        assert_null(g.label);
        assert_null(g.types);
        assert_null(g.etype);
        assert_int_equal(open_objects(), 0);
        failures++;
    }
    return failures;
}

static void test_alloc_failures_reader(void **state)
{
    (void)state;
    const char *path = write_good("oom.h5");
    /* handle, path, indptr, indices, weights, feat, labels, ids, splits */
    assert_true(load_under_alloc_failure(path) >= 8);
    /* A typed file adds the type list, its buffer, and on load the types
     * and the relations. */
    int typed = load_under_alloc_failure(write_typed("oom-typed.h5"));
    printf("typed file: %d allocations of gnn_graph_load, each failure handled\n", typed);
    assert_true(typed >= 12);

    gnn_graph_file_t *f;
    assert_int_equal(gnn_graph_open(path, &f), 0);
    for (int64_t nth = 1;; nth++) {
        gnn_csr_t part;
        gnn_alloc_fail_at(nth);
        int rc = gnn_graph_read_rows(f, 3, 40, &part);
        int injected = gnn_alloc_failed();
        gnn_alloc_fail_at(0);
        if (!injected) {
            assert_int_equal(rc, 0);
            gnn_csr_free(&part);
            break;
        }
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(part.indptr);
    }
    gnn_graph_close(f);
}

static void test_alloc_failures_writer(void **state)
{
    (void)state;
    for (int typed = 0; typed < 2; typed++) {
        gnn_graph_t g;
        if (typed)
            make_typed(&g);
        else
            make_graph(&g, 50, 100, 2, g_seed + 3);
        const char *path = tu_path(typed ? "oom-w-typed.h5" : "oom-w.h5");
        unlink(path);
        int64_t nth = 1;
        for (;; nth++) {
            gnn_alloc_fail_at(nth);
            int rc = gnn_graph_write(path, &g, 0);
            int injected = gnn_alloc_failed();
            gnn_alloc_fail_at(0);
            if (!injected) {
                assert_int_equal(rc, 0);
                break;
            }
            assert_int_equal(rc, GNN_ENOMEM);
            assert_false(tu_exists(path));
            assert_int_equal(open_objects(), 0);
        }
        assert_true(tu_exists(path));
        /* The typed writer allocates the type lists and a feature block. */
        if (typed) assert_true(nth - 1 >= 4);
        gnn_graph_free(&g);
    }
}

int main(void)
{
    g_seed = tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_minimal_graph_and_absent_parts),
        cmocka_unit_test(test_row_ranges),
        cmocka_unit_test(test_writer_refusals),
        cmocka_unit_test(test_writer_append_mode),
        cmocka_unit_test(test_not_hdf5),
        cmocka_unit_test(test_other_layout),
        cmocka_unit_test(test_format_attr_kinds),
        cmocka_unit_test(test_compact_dataset_damaged),
        cmocka_unit_test(test_unknown_version),
        cmocka_unit_test(test_truncated_and_wrong_shape),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_types_helpers),
        cmocka_unit_test(test_types_check),
        cmocka_unit_test(test_typed_limits),
        cmocka_unit_test(test_typed_round_trip),
        cmocka_unit_test(test_typed_streaming_writer),
        cmocka_unit_test(test_typed_featureless),
        cmocka_unit_test(test_version1_has_no_types),
        cmocka_unit_test(test_typed_writer_refusals),
        cmocka_unit_test(test_bad_typed_attributes),
        cmocka_unit_test(test_bad_typed_offsets),
        cmocka_unit_test(test_bad_typed_edges),
        cmocka_unit_test(test_bad_typed_labels_and_splits),
        cmocka_unit_test(test_bad_typed_features),
        cmocka_unit_test(test_alloc_failures_reader),
        cmocka_unit_test(test_alloc_failures_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
