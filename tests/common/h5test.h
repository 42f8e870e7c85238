/*
 * Reading and editing HDF5 files in tests (include after <cmocka.h>:
 * failures fail the test).
 */
#ifndef GNN_TESTS_H5TEST_H
#define GNN_TESTS_H5TEST_H

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A whole dataset of path (any shape) as native type, allocated; its
 * dimensions in dims (rank at most 2, the rank returned). */
static inline int h5_read(const char *path, const char *name, hid_t type, void **out, hsize_t dims[2])
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s", path);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) fail_msg("%s: no dataset %s", path, name);
    hid_t sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    assert_true(rank >= 1 && rank <= 2);
    dims[1] = 1;
    H5Sget_simple_extent_dims(sp, dims, NULL);
    size_t n = (size_t)dims[0] * (rank == 2 ? (size_t)dims[1] : 1);
    *out = malloc(n * H5Tget_size(type) + 1);
    assert_non_null(*out);
    if (n > 0) assert_true(H5Dread(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) >= 0);
    H5Sclose(sp);
    H5Dclose(d);
    H5Fclose(f);
    return rank;
}

/* A whole one-dimensional int64 dataset, allocated; its entry count in *n. */
static inline int64_t *h5_read_i64(const char *path, const char *name, int64_t *n)
{
    void *v = NULL;
    hsize_t dims[2];
    assert_int_equal(h5_read(path, name, H5T_NATIVE_INT64, &v, dims), 1);
    *n = (int64_t)dims[0];
    return v;
}

/* Whether path holds the dataset (or group) name. */
static inline int h5_has(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s", path);
    int yes = 1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", name);
    for (char *s = buf; yes; s++) { /* each prefix must exist */
        char c = *s;
        if (c != '/' && c != '\0') continue;
        *s = '\0';
        yes = H5Lexists(f, buf, H5P_DEFAULT) > 0;
        *s = c;
        if (!c) break;
    }
    H5Fclose(f);
    return yes;
}

/* Overwrite the whole dataset name of path with data (native type). */
static inline void h5_write(const char *path, const char *name, hid_t type, const void *data)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s for writing", path);
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) fail_msg("%s: no dataset %s", path, name);
    assert_true(H5Dwrite(d, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(d);
    assert_true(H5Fclose(f) >= 0);
}

static inline int64_t h5_attr_i64(const char *path, const char *name)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s", path);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0) fail_msg("%s: no attribute %s", path, name);
    int64_t v = 0;
    assert_true(H5Aread(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Fclose(f);
    return v;
}

/* The root string attribute name of path (fixed or variable length) into
 * out (size bytes, NUL-terminated, cut short when longer). */
static inline void h5_attr_str(const char *path, const char *name, char *out, size_t size)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s", path);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    if (a < 0) fail_msg("%s: no attribute %s", path, name);
    hid_t ft = H5Aget_type(a);
    assert_true(ft >= 0 && H5Tget_class(ft) == H5T_STRING);
    hid_t mt = H5Tcopy(H5T_C_S1);
    if (H5Tis_variable_str(ft) > 0) {
        char *v = NULL;
        H5Tset_size(mt, H5T_VARIABLE);
        assert_true(H5Aread(a, mt, &v) >= 0);
        snprintf(out, size, "%s", v ? v : "");
        H5free_memory(v);
    } else {
        size_t n = H5Tget_size(ft);
        char *buf = calloc(n + 1, 1);
        assert_non_null(buf);
        H5Tset_size(mt, n);
        assert_true(H5Aread(a, mt, buf) >= 0);
        snprintf(out, size, "%s", buf);
        free(buf);
    }
    H5Tclose(mt);
    H5Tclose(ft);
    H5Aclose(a);
    H5Fclose(f);
}

/* Replace the root attribute name of path by a fixed-length string. */
static inline void h5_set_attr_str(const char *path, const char *name, const char *value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s for writing", path);
    assert_true(H5Adelete(f, name) >= 0);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, value) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    assert_true(H5Fclose(f) >= 0);
}

/* Replace the root integer attribute name of path. */
static inline void h5_set_attr_i64(const char *path, const char *name, int64_t value)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) fail_msg("cannot open %s for writing", path);
    hid_t a = H5Aopen(f, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &value) >= 0);
    H5Aclose(a);
    assert_true(H5Fclose(f) >= 0);
}

/* A whole one-dimensional float32 dataset, allocated; its entry count in *n. */
static inline float *h5_read_f32(const char *path, const char *name, int64_t *n)
{
    void *v = NULL;
    hsize_t dims[2];
    assert_int_equal(h5_read(path, name, H5T_NATIVE_FLOAT, &v, dims), 1);
    *n = (int64_t)dims[0];
    return v;
}

#endif
