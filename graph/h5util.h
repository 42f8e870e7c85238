/*
 * Internal helpers for the HDF5 files of graph/ (graph file, partition
 * files): library set-up, error capture, typed dataset creation and checked
 * range reads and writes.
 *
 * HDF5 prints its own error stack by default; gnn__h5_init turns that off
 * once, and GNN_H5_FAIL records our error with the innermost HDF5 message
 * appended instead, so a command still prints one line.
 */
#ifndef GNN_GRAPH_H5UTIL_H
#define GNN_GRAPH_H5UTIL_H

#include <hdf5.h>
#include <stdint.h>

/* Silence HDF5's automatic error printing (idempotent). */
void gnn__h5_init(void);

/* Record code with a message, appending the innermost HDF5 error text when
 * HDF5 has one; clears HDF5's error stack. Returns code. */
int gnn__h5_fail(int code, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define GNN_H5_FAIL(code, ...) gnn__h5_fail((code), __FILE__, __LINE__, __VA_ARGS__)

/* Close an HDF5 id of any kind when it is valid (>= 0); sets it to -1. */
void gnn__h5_close(hid_t *id);

/* Class a dataset must have to be read as the given memory type. */
typedef enum { GNN_H5_INT, GNN_H5_FLOAT } gnn_h5_class_t;

/*
 * Open dataset `name` under loc and check class and rank; dims receives its
 * shape (rank entries). Missing dataset: GNN_EFORMAT "missing dataset" unless
 * optional, in which case *out is -1 and 0 is returned. Returns 0 or
 * GNN_EFORMAT / GNN_EHDF5 with a message naming the dataset and file.
 */
int gnn__h5_open_dataset(hid_t loc, const char *path, const char *name, gnn_h5_class_t cls,
                         int rank, int optional, hsize_t *dims, hid_t *out);

/* GNN_EFORMAT (naming path and name) where dataset dset (its type and
 * space given) is compact and holds fewer values than its shape says, or
 * its header cannot be read: HDF5 would read past it. */
int gnn__h5_check_compact(hid_t dset, hid_t type, hid_t space, const char *path,
                          const char *name);

/* Create an extendible chunked dataset of the given memory type and shape;
 * chunk gives the chunk shape. */
int gnn__h5_create_dataset(hid_t loc, const char *name, hid_t type, int rank,
                           const hsize_t *dims, const hsize_t *chunk, hid_t *out);

/* Read or write rows [row0, row0 + nrows) of a rank-1 or rank-2 dataset
 * (all columns) to or from buf of memory type mtype. */
int gnn__h5_read_rows(hid_t dset, hid_t mtype, int rank, hsize_t ncols, int64_t row0,
                      int64_t nrows, void *buf);
int gnn__h5_write_rows(hid_t dset, hid_t mtype, int rank, hsize_t ncols, int64_t row0,
                       int64_t nrows, const void *buf);

/* Scalar int64 attribute: read (missing: GNN_EFORMAT unless optional, then
 * *v untouched and 0 returned) and write. */
int gnn__h5_get_attr_i64(hid_t loc, const char *name, int optional, int64_t *v);
int gnn__h5_set_attr_i64(hid_t loc, const char *name, int64_t v);
/* String attribute (fixed or variable length, of the file's character set,
 * ASCII or UTF-8) into buf, cut to len - 1 bytes. GNN_EFORMAT naming the
 * attribute when it is missing, not one string, or unreadable. */
int gnn__h5_get_attr_str(hid_t loc, const char *name, char *buf, size_t len);
int gnn__h5_set_attr_str(hid_t loc, const char *name, const char *v);

/* 0 when attribute `name` of loc is absent or holds exactly one element
 * (scalar or shape (1,)); GNN_EFORMAT naming it otherwise. The getters
 * above read every element into their buffer, so a reader of outside files
 * calls this first. */
int gnn__h5_check_attr_single(hid_t loc, const char *name);
/* Scalar float64 attribute, checked like the int64 one (any float width is
 * converted; an integer attribute is refused). */
int gnn__h5_get_attr_f64(hid_t loc, const char *name, int optional, double *v);
int gnn__h5_set_attr_f64(hid_t loc, const char *name, double v);
/* Scalar uint64 attribute, written as H5T_STD_U64LE. Read: any unsigned
 * integer, or a signed one that is not negative (else GNN_EFORMAT). */
int gnn__h5_get_attr_u64(hid_t loc, const char *name, int optional, uint64_t *v);
int gnn__h5_set_attr_u64(hid_t loc, const char *name, uint64_t v);

/* The node and edge types of a typed graph (graph_file.h) as attributes
 * node_types, relations, target_type and dataset node_type_offsets of loc
 * (the graph file's root, or a partition's meta.h5): read (checked against
 * num_nodes; GNN_EFORMAT naming path) and written. Implemented in
 * graph_file.c. */
int gnn__h5_read_types(hid_t loc, const char *path, int64_t num_nodes, void *types);
int gnn__h5_write_types(hid_t loc, const char *path, const void *types);

#endif
