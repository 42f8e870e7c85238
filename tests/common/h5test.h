/*
 * Reading HDF5 datasets in tests (include after <cmocka.h>: failures
 * fail the test).
 */
#ifndef GNN_TESTS_H5TEST_H
#define GNN_TESTS_H5TEST_H

#include <hdf5.h>
#include <stdlib.h>

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

#endif
