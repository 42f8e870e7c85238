/*
 * Structure-aware edits of HDF5 files for the fuzz targets of this
 * project's own file formats (fuzz_partdir, fuzz_checkpoint): the input is
 * read as a stream of numbers that choose, in a file, a dataset or an
 * attribute and what to do to it:
 *   - one element set to 0, -1, 1, the largest int64, itself plus or minus
 *     one, a word of the input, or itself with one bit flipped (floats: 0,
 *     -1, NaN, infinity, -1e30 or a word);
 *   - two elements swapped;
 *   - the dataset removed;
 *   - the dataset made again one row shorter or longer;
 *   - an attribute of the root or of a dataset set the same way, strings
 *     replaced by one of a list of the formats' own words.
 * Raw bytes are never edited: that would fuzz libhdf5, not this project.
 * Every HDF5 failure here is ignored (the edit is then skipped).
 * FUZZ_H5EDIT_VERBOSE=1 prints each edit. Targets keep their files in
 * tu_tmpdir() (testutil.h), removed at exit.
 */
#ifndef GNN_TESTS_FUZZ_H5EDIT_H
#define GNN_TESTS_FUZZ_H5EDIT_H

#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/common/testutil.h"

#define MAX_NAMES 64

/* ---- The input as a stream of numbers ------------------------------------ */

typedef struct {
    const uint8_t *p;
    size_t n;
} input_t;

static inline uint64_t take(input_t *in, int bytes)
{
    uint64_t x = 0;
    for (int i = 0; i < bytes && in->n > 0; i++, in->p++, in->n--) x |= (uint64_t)*in->p << (8 * i);
    return x;
}

/* ---- Files ---------------------------------------------------------------- */

static inline int copy_file(const char *from, const char *to)
{
    FILE *a = fopen(from, "rb"), *b = a ? fopen(to, "wb") : NULL;
    char buf[65536];
    size_t n;
    int rc = a && b ? 0 : -1;
    while (rc == 0 && (n = fread(buf, 1, sizeof buf, a)) > 0)
        if (fwrite(buf, 1, n, b) != n) rc = -1;
    if (a) fclose(a);
    if (b && fclose(b) != 0) rc = -1;
    return rc;
}

/* ---- Edits ------------------------------------------------------------------- */

typedef struct {
    int n;
    char name[MAX_NAMES][128];
} names_t;

/* Links are visited in name order (HDF5 1.10 and later alike); the ones
 * that open as datasets are kept. */
static inline herr_t add_dataset(hid_t group, const char *name, const H5L_info_t *info, void *op)
{
    (void)info;
    names_t *l = op;
    if (l->n >= MAX_NAMES || strlen(name) >= 128) return 0;
    hid_t d = H5Dopen2(group, name, H5P_DEFAULT);
    if (d >= 0) {
        strcpy(l->name[l->n++], name);
        H5Dclose(d);
    }
    return 0;
}

static inline herr_t add_attr(hid_t obj, const char *name, const H5A_info_t *info, void *op)
{
    (void)obj;
    (void)info;
    names_t *l = op;
    if (l->n < MAX_NAMES && strlen(name) < 128) strcpy(l->name[l->n++], name);
    return 0;
}

static inline int64_t new_int(input_t *in, int64_t v)
{
    switch (take(in, 1) % 8) {
    case 0: return 0;
    case 1: return -1;
    case 2: return 1;
    case 3: return INT64_MAX;
    case 4: return (int64_t)((uint64_t)v + 1); /* wraps */
    case 5: return (int64_t)((uint64_t)v - 1);
    case 6: return (int64_t)take(in, 8);
    default: return (int64_t)((uint64_t)v ^ ((uint64_t)1 << (take(in, 1) % 64)));
    }
}

static inline double new_float(input_t *in)
{
    switch (take(in, 1) % 6) {
    case 0: return 0.0;
    case 1: return -1.0;
    case 2: return NAN;
    case 3: return INFINITY;
    case 4: return -1e30;
    default: return (double)(int64_t)take(in, 8) / 65536.0;
    }
}

/* Values of an object's numeric data (dataset or attribute) edited in
 * place: buf holds n elements of the memory type (int64 or double). */
static inline void edit_values(input_t *in, void *buf, hsize_t n, int is_float, int swap)
{
    if (n == 0) return;
    hsize_t i = take(in, 4) % n;
    if (swap) {
        hsize_t j = take(in, 4) % n;
        if (is_float) {
            double t = ((double *)buf)[i];
            ((double *)buf)[i] = ((double *)buf)[j];
            ((double *)buf)[j] = t;
        } else {
            int64_t t = ((int64_t *)buf)[i];
            ((int64_t *)buf)[i] = ((int64_t *)buf)[j];
            ((int64_t *)buf)[j] = t;
        }
        return;
    }
    if (is_float)
        ((double *)buf)[i] = new_float(in);
    else
        ((int64_t *)buf)[i] = new_int(in, ((int64_t *)buf)[i]);
}

static const char *const g_strings[] = {
    "", "x", "gnn-partition", "gnn-partition-part", "gnn-graph", "gnn-checkpoint", "metis",
    "random", "kway", "rb", "nodes,edges,train", "/nonexistent/graph.h5", "gcn", "sage", "mean",
    "max", "full", "minibatch", "first", "all", "15,10,5", "-"};

static inline void edit_attr(input_t *in, hid_t obj)
{
    names_t l = {0};
    H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, NULL, add_attr, &l);
    if (l.n == 0) return;
    const char *name = l.name[take(in, 1) % (uint64_t)l.n];
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0) return;
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if (cls == H5T_STRING) {
        H5Aclose(a);
        H5Adelete(obj, name);
        const char *s = g_strings[take(in, 1) % (sizeof g_strings / sizeof g_strings[0])];
        hid_t st = H5Tcopy(H5T_C_S1), ss = H5Screate(H5S_SCALAR);
        H5Tset_size(st, strlen(s) + 1);
        hid_t na = H5Acreate2(obj, name, st, ss, H5P_DEFAULT, H5P_DEFAULT);
        if (na >= 0) {
            H5Awrite(na, st, s);
            H5Aclose(na);
        }
        H5Tclose(st);
        H5Sclose(ss);
        a = -1;
    } else if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0 && n <= 4096) {
        int is_float = cls == H5T_FLOAT;
        hid_t mt = is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        void *buf = malloc((size_t)n * 8);
        if (buf && H5Aread(a, mt, buf) >= 0) {
            edit_values(in, buf, (hsize_t)n, is_float, 0);
            H5Awrite(a, mt, buf);
        }
        free(buf);
    }
    if (a >= 0) H5Aclose(a);
    H5Tclose(t);
    H5Sclose(sp);
}

/* The dataset made again with its first dimension one shorter or longer
 * (the new row zero), same type, contiguous. */
static inline void remake(input_t *in, hid_t f, const char *name)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    int rank = H5Sget_simple_extent_ndims(sp);
    hsize_t dims[2] = {0, 1};
    H5T_class_t cls = H5Tget_class(t);
    if (rank < 1 || rank > 2 || (cls != H5T_INTEGER && cls != H5T_FLOAT) ||
        H5Sget_simple_extent_dims(sp, dims, NULL) < 0 || dims[0] * (rank == 2 ? dims[1] : 1) > 65536) {
        H5Tclose(t);
        H5Sclose(sp);
        H5Dclose(d);
        return;
    }
    hid_t mt = cls == H5T_FLOAT ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
    size_t row = rank == 2 ? (size_t)dims[1] : 1, old = (size_t)dims[0];
    double *buf = calloc((old + 1) * row + 1, 8);
    if (buf && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
        H5Dclose(d);
        d = -1;
        hsize_t nd[2] = {take(in, 1) % 2 ? (hsize_t)old + 1 : (old > 0 ? (hsize_t)old - 1 : 1),
                         (hsize_t)row};
        H5Ldelete(f, name, H5P_DEFAULT);
        hid_t ns = H5Screate_simple(rank, nd, NULL);
        hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
        H5Pset_create_intermediate_group(lcpl, 1);
        hid_t nd_id = H5Dcreate2(f, name, t, ns, lcpl, H5P_DEFAULT, H5P_DEFAULT);
        if (nd_id >= 0) {
            H5Dwrite(nd_id, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
            H5Dclose(nd_id);
        }
        H5Pclose(lcpl);
        H5Sclose(ns);
    }
    free(buf);
    if (d >= 0) H5Dclose(d);
    H5Tclose(t);
    H5Sclose(sp);
}

static inline void edit_dataset(input_t *in, hid_t f, const char *name, int swap)
{
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return;
    hid_t t = H5Dget_type(d), sp = H5Dget_space(d);
    H5T_class_t cls = H5Tget_class(t);
    hssize_t n = H5Sget_simple_extent_npoints(sp);
    if ((cls == H5T_INTEGER || cls == H5T_FLOAT) && n > 0 && n <= 65536) {
        int is_float = cls == H5T_FLOAT;
        hid_t mt = is_float ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT64;
        void *buf = malloc((size_t)n * 8);
        if (buf && H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0) {
            edit_values(in, buf, (hsize_t)n, is_float, swap);
            H5Dwrite(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
        }
        free(buf);
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(d);
}

/* One edit, drawn from the input, of the HDF5 file at path. */
static inline void h5e_edit_file(input_t *in, const char *path)
{
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    if (f < 0) return;
    names_t l = {0};
    H5Lvisit(f, H5_INDEX_NAME, H5_ITER_INC, add_dataset, &l);
    int what = (int)(take(in, 1) % 6);
    const char *name = l.n ? l.name[take(in, 1) % (uint64_t)l.n] : NULL;
    if (getenv("FUZZ_H5EDIT_VERBOSE"))
        fprintf(stderr, "edit %d of %s in %s\n", what, name ? name : "-", path);
    if (what == 0 && name) {
        edit_dataset(in, f, name, 0);
    } else if (what == 1 && name) {
        edit_dataset(in, f, name, 1);
    } else if (what == 2 && name) {
        H5Ldelete(f, name, H5P_DEFAULT);
    } else if (what == 3 && name) {
        remake(in, f, name);
    } else if (what == 4 && name) {
        hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
        if (d >= 0) {
            edit_attr(in, d);
            H5Dclose(d);
        }
    } else {
        edit_attr(in, f);
    }
    H5Fclose(f);
}

/* A fresh copy of the file at pristine as work, then 1 to 4 edits of it
 * drawn from data; aborts when the copy cannot be made. */
static inline void h5e_edit_copy(const uint8_t *data, size_t size, const char *pristine,
                                 const char *work)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    if (copy_file(pristine, work) != 0) abort();
    input_t in = {data, size};
    int edits = 1 + (int)(take(&in, 1) % 4);
    for (int i = 0; i < edits; i++) h5e_edit_file(&in, work);
}

#endif
