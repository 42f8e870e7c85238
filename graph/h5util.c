/*
 * HDF5 helpers shared by the graph and partition file formats: error
 * capture, checked dataset opening, chunked creation and row-range I/O.
 *
 * Every HDF5 call is checked; a failure is recorded as GNN_EHDF5 (or
 * GNN_EFORMAT when the file's layout is wrong) with the innermost message
 * of HDF5's error stack, which is then cleared.
 */
#include "graph/h5util.h"

#include "graph/base/error.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

void gnn__h5_init(void)
{
    static int done;
    if (!done) {
        /* No library teardown at exit: every file is closed by its owner,
         * and HDF5 1.10's teardown crashes on a file whose close failed
         * (a full disk), turning one error line into a segfault. */
        H5dont_atexit();
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        done = 1;
    }
}

typedef struct {
    char desc[1024];
} innermost_t;

/* HDF5's description of a failed system call ("file write failed: time =
 * ..., errno = 28, error message = 'No space left on device', ...") cut to
 * what happened and why: "file write failed: No space left on device". */
static void shorten_syscall(char *desc)
{
    const char *key = "error message = '", *m = strstr(desc, key), *colon = strchr(desc, ':');
    if (!m || !colon || colon > m) return;
    m += strlen(key);
    const char *end = strchr(m, '\'');
    if (!end) return;
    char out[sizeof((innermost_t *)0)->desc];
    snprintf(out, sizeof out, "%.*s: %.*s", (int)(colon - desc), desc, (int)(end - m), m);
    strcpy(desc, out);
}

/* Walked downward (API first): the last frame seen is the innermost. */
static herr_t keep_last(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    innermost_t *in = data;
    if (e->desc && e->desc[0]) snprintf(in->desc, sizeof in->desc, "%s", e->desc);
    return 0;
}

int gnn__h5_fail(int code, const char *file, int line, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    innermost_t in = {{0}};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, keep_last, &in);
    H5Eclear2(H5E_DEFAULT);
    shorten_syscall(in.desc);
    if (in.desc[0]) return gnn__error_set(code, file, line, "%s (HDF5: %s)", msg, in.desc);
    return gnn__error_set(code, file, line, "%s", msg);
}

void gnn__h5_close(hid_t *id)
{
    if (*id < 0) return;
    switch (H5Iget_type(*id)) {
    case H5I_FILE: H5Fclose(*id); break;
    case H5I_GROUP: H5Gclose(*id); break;
    case H5I_DATASET: H5Dclose(*id); break;
    case H5I_DATASPACE: H5Sclose(*id); break;
    case H5I_DATATYPE: H5Tclose(*id); break;
    case H5I_ATTR: H5Aclose(*id); break;
    case H5I_GENPROP_LST: H5Pclose(*id); break;
    default: break;
    }
    *id = -1;
}

int gnn__h5_open_dataset(hid_t loc, const char *path, const char *name, gnn_h5_class_t cls,
                         int rank, int optional, hsize_t *dims, hid_t *out)
{
    int rc = 0;
    hid_t dset = -1, type = -1, space = -1, dapl = -1;
    *out = -1;
    htri_t exists = H5Lexists(loc, name, H5P_DEFAULT);
    if (exists <= 0) {
        H5Eclear2(H5E_DEFAULT);
        if (optional) return 0;
        return GNN_FAIL(GNN_EFORMAT, "%s: missing dataset '%s'", path, name);
    }
    /* A chunk cache larger than the default 1 MiB keeps row-range reads from
     * re-reading a chunk for every small request. */
    dapl = H5Pcreate(H5P_DATASET_ACCESS);
    GNN_CHECK(dapl >= 0, GNN_EHDF5, "%s: cannot create property list", path);
    H5Pset_chunk_cache(dapl, 1021, 16u << 20, 0.75);
    dset = H5Dopen2(loc, name, dapl);
    if (dset < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "%s: '%s' is not a readable dataset", path, name);
        goto fail;
    }
    type = H5Dget_type(dset);
    H5T_class_t tc = type >= 0 ? H5Tget_class(type) : H5T_NO_CLASS;
    if (cls == GNN_H5_INT)
        GNN_CHECK(tc == H5T_INTEGER, GNN_EFORMAT, "%s: dataset '%s' must hold integers", path, name);
    else
        GNN_CHECK(tc == H5T_FLOAT, GNN_EFORMAT, "%s: dataset '%s' must hold floats", path, name);
    space = H5Dget_space(dset);
    int nd = space >= 0 ? H5Sget_simple_extent_ndims(space) : -1;
    GNN_CHECK(nd == rank, GNN_EFORMAT, "%s: dataset '%s' has %d dimensions, expected %d", path,
              name, nd, rank);
    H5Sget_simple_extent_dims(space, dims, NULL);
    GNN_TRY(gnn__h5_check_compact(dset, type, space, path, name));
    gnn__h5_close(&type);
    gnn__h5_close(&space);
    gnn__h5_close(&dapl);
    *out = dset;
    return 0;
fail:
    gnn__h5_close(&type);
    gnn__h5_close(&space);
    gnn__h5_close(&dapl);
    gnn__h5_close(&dset);
    return rc;
}

int gnn__h5_check_compact(hid_t dset, hid_t type, hid_t space, const char *path,
                          const char *name)
{
    /* A compact dataset holds its values in its header: a damaged one may
     * hold fewer than its shape says, which HDF5 would read past. */
    hid_t dcpl = H5Dget_create_plist(dset);
    H5D_layout_t lay = dcpl >= 0 ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    gnn__h5_close(&dcpl);
    hssize_t np = H5Sget_simple_extent_npoints(space);
    size_t es = H5Tget_size(type);
    if (lay == H5D_LAYOUT_ERROR || np < 0 || es == 0)
        return GNN_FAIL(GNN_EFORMAT, "%s: dataset '%s' has a damaged header", path, name);
    if (lay == H5D_COMPACT && H5Dget_storage_size(dset) < (hsize_t)np * es)
        return GNN_FAIL(GNN_EFORMAT,
                        "%s: dataset '%s' holds fewer values than its shape (a damaged header)",
                        path, name);
    return 0;
}

int gnn__h5_create_dataset(hid_t loc, const char *name, hid_t type, int rank,
                           const hsize_t *dims, const hsize_t *chunk, hid_t *out)
{
    int rc = 0;
    hid_t space = -1, dcpl = -1;
    hsize_t maxdims[2] = {H5S_UNLIMITED, H5S_UNLIMITED};
    *out = -1;
    space = H5Screate_simple(rank, dims, maxdims);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    /* No modification times: the same data gives byte-identical files. */
    if (space < 0 || dcpl < 0 || H5Pset_chunk(dcpl, rank, chunk) < 0 ||
        H5Pset_obj_track_times(dcpl, 0) < 0) {
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot set up dataset '%s'", name);
        goto fail;
    }
    *out = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (*out < 0) rc = GNN_H5_FAIL(GNN_EHDF5, "cannot create dataset '%s'", name);
fail:
    gnn__h5_close(&space);
    gnn__h5_close(&dcpl);
    return rc;
}

/* Select rows [row0, row0+nrows) of dset in file and memory spaces. */
static int select_rows(hid_t dset, int rank, hsize_t ncols, int64_t row0, int64_t nrows,
                       hid_t *fspace, hid_t *mspace)
{
    hsize_t start[2] = {(hsize_t)row0, 0};
    hsize_t count[2] = {(hsize_t)nrows, ncols};
    *fspace = H5Dget_space(dset);
    if (*fspace < 0) return GNN_H5_FAIL(GNN_EHDF5, "cannot get dataspace");
    if (H5Sselect_hyperslab(*fspace, H5S_SELECT_SET, start, NULL, count, NULL) < 0)
        return GNN_H5_FAIL(GNN_EHDF5, "cannot select rows %lld..%lld", (long long)row0,
                           (long long)(row0 + nrows));
    *mspace = H5Screate_simple(rank, count, NULL);
    if (*mspace < 0) return GNN_H5_FAIL(GNN_EHDF5, "cannot create memory dataspace");
    return 0;
}

int gnn__h5_read_rows(hid_t dset, hid_t mtype, int rank, hsize_t ncols, int64_t row0,
                      int64_t nrows, void *buf)
{
    int rc = 0;
    hid_t fspace = -1, mspace = -1;
    if (nrows == 0 || (rank == 2 && ncols == 0)) return 0;
    GNN_TRY(select_rows(dset, rank, ncols, row0, nrows, &fspace, &mspace));
    if (H5Dread(dset, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot read rows %lld..%lld", (long long)row0,
                         (long long)(row0 + nrows));
fail:
    gnn__h5_close(&fspace);
    gnn__h5_close(&mspace);
    return rc;
}

int gnn__h5_write_rows(hid_t dset, hid_t mtype, int rank, hsize_t ncols, int64_t row0,
                       int64_t nrows, const void *buf)
{
    int rc = 0;
    hid_t fspace = -1, mspace = -1;
    if (nrows == 0 || (rank == 2 && ncols == 0)) return 0;
    GNN_TRY(select_rows(dset, rank, ncols, row0, nrows, &fspace, &mspace));
    if (H5Dwrite(dset, mtype, mspace, fspace, H5P_DEFAULT, buf) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot write rows %lld..%lld", (long long)row0,
                         (long long)(row0 + nrows));
fail:
    gnn__h5_close(&fspace);
    gnn__h5_close(&mspace);
    return rc;
}

/* Open attribute name of loc holding one value of class cls; *attr and
 * *type receive it and its file type. Missing: 1 when optional, else
 * GNN_EFORMAT. */
static int open_single_attr(hid_t loc, const char *name, H5T_class_t cls, const char *what,
                            int optional, hid_t *attr, hid_t *type)
{
    int rc = 0;
    *attr = *type = -1;
    htri_t exists = H5Aexists(loc, name);
    if (exists <= 0) {
        H5Eclear2(H5E_DEFAULT);
        if (optional) return 1;
        return GNN_FAIL(GNN_EFORMAT, "missing attribute '%s'", name);
    }
    GNN_TRY(gnn__h5_check_attr_single(loc, name));
    *attr = H5Aopen(loc, name, H5P_DEFAULT);
    *type = *attr >= 0 ? H5Aget_type(*attr) : -1;
    GNN_CHECK(*type >= 0 && H5Tget_class(*type) == cls, GNN_EFORMAT,
              "attribute '%s' must be %s", name, what);
    return 0;
fail:
    H5Eclear2(H5E_DEFAULT);
    gnn__h5_close(type);
    gnn__h5_close(attr);
    return rc;
}

/* The one value of attribute name of class cls (what: its kind, for
 * messages) into *v as mtype; missing and optional: 0, *v untouched. */
static int get_scalar_attr(hid_t loc, const char *name, H5T_class_t cls, const char *what,
                           hid_t mtype, int optional, void *v)
{
    hid_t attr = -1, type = -1;
    int rc = open_single_attr(loc, name, cls, what, optional, &attr, &type);
    if (rc != 0) return rc < 0 ? rc : 0;
    if (H5Aread(attr, mtype, v) < 0)
        rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read attribute '%s'", name);
    gnn__h5_close(&type);
    gnn__h5_close(&attr);
    return rc;
}

int gnn__h5_get_attr_i64(hid_t loc, const char *name, int optional, int64_t *v)
{
    return get_scalar_attr(loc, name, H5T_INTEGER, "an integer", H5T_NATIVE_INT64, optional, v);
}

/* A scalar attribute name of file type ftype written from *v (mtype). */
static int set_scalar_attr(hid_t loc, const char *name, hid_t ftype, hid_t mtype, const void *v)
{
    int rc = 0;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space >= 0 ? H5Acreate2(loc, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT) : -1;
    if (attr < 0 || H5Awrite(attr, mtype, v) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot write attribute '%s'", name);
    gnn__h5_close(&attr);
    gnn__h5_close(&space);
    return rc;
}

int gnn__h5_set_attr_i64(hid_t loc, const char *name, int64_t v)
{
    return set_scalar_attr(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &v);
}

int gnn__h5_get_attr_str(hid_t loc, const char *name, char *buf, size_t len)
{
    int rc = 0;
    hid_t attr = -1, type = -1, mtype = -1;
    char *tmp = NULL;
    buf[0] = '\0';
    htri_t exists = H5Aexists(loc, name);
    if (exists <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return GNN_FAIL(GNN_EFORMAT, "missing attribute '%s'", name);
    }
    GNN_TRY(gnn__h5_check_attr_single(loc, name));
    attr = H5Aopen(loc, name, H5P_DEFAULT);
    type = attr >= 0 ? H5Aget_type(attr) : -1;
    GNN_CHECK(type >= 0 && H5Tget_class(type) == H5T_STRING, GNN_EFORMAT,
              "attribute '%s' must be a string", name);
    /* The memory type keeps the file's character set (h5py writes str as
     * UTF-8; HDF5 does not convert between character sets). */
    H5T_cset_t cset = H5Tget_cset(type);
    mtype = H5Tcopy(H5T_C_S1);
    GNN_CHECK(cset >= 0 && mtype >= 0 && H5Tset_cset(mtype, cset) >= 0, GNN_EFORMAT,
              "attribute '%s': unknown string character set", name);
    if (H5Tis_variable_str(type) > 0) {
        char *str = NULL;
        H5Tset_size(mtype, H5T_VARIABLE);
        if (H5Aread(attr, mtype, &str) < 0) {
            rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read attribute '%s'", name);
            goto fail;
        }
        size_t got = str ? strlen(str) : 0;
        if (got < len) snprintf(buf, len, "%s", str ? str : "");
        H5free_memory(str);
        GNN_CHECK(got < len, GNN_EFORMAT, "attribute '%s' holds %zu characters, more than %zu",
                  name, got, len - 1);
    } else {
        /* n characters, padded or not: read with room for a terminator. */
        size_t n = H5Tget_size(type);
        GNN_CHECK(n > 0 && n < len, GNN_EFORMAT,
                  "attribute '%s' holds %zu characters, more than %zu", name, n, len - 1);
        tmp = calloc(n + 1, 1);
        GNN_CHECK(tmp, GNN_ENOMEM, "attribute '%s'", name);
        H5Tset_size(mtype, n + 1);
        H5Tset_strpad(mtype, H5T_STR_NULLTERM);
        if (H5Aread(attr, mtype, tmp) < 0) {
            rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read attribute '%s'", name);
            goto fail;
        }
        snprintf(buf, len, "%.*s", (int)n, tmp);
    }
fail:
    free(tmp);
    gnn__h5_close(&mtype);
    gnn__h5_close(&type);
    gnn__h5_close(&attr);
    return rc;
}

int gnn__h5_set_attr_str(hid_t loc, const char *name, const char *v)
{
    int rc = 0;
    hid_t type = H5Tcopy(H5T_C_S1), space = H5Screate(H5S_SCALAR), attr = -1;
    GNN_CHECK(type >= 0 && space >= 0 && H5Tset_size(type, strlen(v) + 1) >= 0 &&
                  H5Tset_strpad(type, H5T_STR_NULLTERM) >= 0,
              GNN_EHDF5, "cannot set up attribute '%s'", name);
    attr = H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, type, v) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot write attribute '%s'", name);
fail:
    gnn__h5_close(&attr);
    gnn__h5_close(&space);
    gnn__h5_close(&type);
    return rc;
}

int gnn__h5_check_attr_single(hid_t loc, const char *name)
{
    int rc = 0;
    hid_t attr = -1, space = -1;
    htri_t exists = H5Aexists(loc, name);
    if (exists <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return 0;
    }
    attr = H5Aopen(loc, name, H5P_DEFAULT);
    space = attr >= 0 ? H5Aget_space(attr) : -1;
    hssize_t n = space >= 0 ? H5Sget_simple_extent_npoints(space) : -1;
    if (n < 0) {
        rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read the shape of attribute '%s'", name);
        goto fail;
    }
    GNN_CHECK(n == 1, GNN_EFORMAT, "attribute '%s' holds %lld values, expected one", name,
              (long long)n);
fail:
    gnn__h5_close(&space);
    gnn__h5_close(&attr);
    return rc;
}

int gnn__h5_get_attr_f64(hid_t loc, const char *name, int optional, double *v)
{
    return get_scalar_attr(loc, name, H5T_FLOAT, "a float", H5T_NATIVE_DOUBLE, optional, v);
}

int gnn__h5_set_attr_f64(hid_t loc, const char *name, double v)
{
    return set_scalar_attr(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &v);
}

int gnn__h5_get_attr_u64(hid_t loc, const char *name, int optional, uint64_t *v)
{
    int rc = 0;
    hid_t attr = -1, type = -1;
    rc = open_single_attr(loc, name, H5T_INTEGER, "an integer", optional, &attr, &type);
    if (rc != 0) return rc < 0 ? rc : 0;
    H5T_sign_t sign = H5Tget_sign(type);
    if (sign == H5T_SGN_NONE) {
        if (H5Aread(attr, H5T_NATIVE_UINT64, v) < 0)
            rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read attribute '%s'", name);
    } else {
        int64_t s = 0;
        if (sign == H5T_SGN_ERROR || H5Aread(attr, H5T_NATIVE_INT64, &s) < 0)
            rc = GNN_H5_FAIL(GNN_EFORMAT, "cannot read attribute '%s'", name);
        else if (s < 0)
            rc = GNN_FAIL(GNN_EFORMAT, "attribute '%s' = %lld must not be negative", name,
                          (long long)s);
        else
            *v = (uint64_t)s;
    }
    gnn__h5_close(&type);
    gnn__h5_close(&attr);
    return rc;
}

int gnn__h5_set_attr_u64(hid_t loc, const char *name, uint64_t v)
{
    int rc = 0;
    hid_t space = H5Screate(H5S_SCALAR);
    hid_t attr = space >= 0 ? H5Acreate2(loc, name, H5T_STD_U64LE, space, H5P_DEFAULT, H5P_DEFAULT)
                            : -1;
    if (attr < 0 || H5Awrite(attr, H5T_NATIVE_UINT64, &v) < 0)
        rc = GNN_H5_FAIL(GNN_EHDF5, "cannot write attribute '%s'", name);
    gnn__h5_close(&attr);
    gnn__h5_close(&space);
    return rc;
}
