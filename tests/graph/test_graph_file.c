/*
 * The graph file, format version 1: round trips, row-range reads against
 * slices of a full read, the writer's refusals, every kind of bad file
 * (each a GNN_E* code and a message naming the problem, no crash, no open
 * HDF5 object left behind), and allocation failure injected at every
 * allocation of the reader and writer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/graph_file.h"
#include "tests/common/testutil.h"

#include <hdf5.h>
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

/* ---- Allocation failure ---------------------------------------------- */

static void test_alloc_failures_reader(void **state)
{
    (void)state;
    const char *path = write_good("oom.h5");
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
        assert_int_equal(rc, GNN_ENOMEM);
        assert_null(g.csr.indptr);
        assert_null(g.csr.indices);
        assert_null(g.label);
        assert_int_equal(open_objects(), 0);
        failures++;
    }
    assert_true(failures >= 8); /* handle, path, indptr, indices, weights, feat, labels, ids, splits */

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
    gnn_graph_t g;
    make_graph(&g, 50, 100, 2, g_seed + 3);
    const char *path = tu_path("oom-w.h5");
    unlink(path);
    for (int64_t nth = 1;; nth++) {
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
    gnn_graph_free(&g);
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
        cmocka_unit_test(test_unknown_version),
        cmocka_unit_test(test_truncated_and_wrong_shape),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_alloc_failures_reader),
        cmocka_unit_test(test_alloc_failures_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
