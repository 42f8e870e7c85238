/*
 * Streaming reader of NumPy .npz archives (zip files of .npy arrays).
 *
 * OGB's binary layout keeps whole datasets in .npz files (ogbn-papers100M's
 * raw/data.npz holds a 26 GB edge_index), so nothing here ever reads a
 * member whole: an array is streamed in C order, n elements at a time,
 * through a 1 MiB input buffer, inflating DEFLATED members with zlib (raw
 * DEFLATE) straight into the caller's buffer when no conversion is needed.
 *
 * The zip layer reads only the central directory (zip64 aware: the zip64
 * end record and its locator, zip64 extra fields) and each member's local
 * header. Members may be STORED or DEFLATED; encrypted members and other
 * methods are refused. Each member's CRC-32 is checked when a handle has
 * read it from its start to its end.
 *
 * Array handles are independent of each other and of the archive handle:
 * each has its own file descriptor (positional reads), input buffer and
 * inflate state, so two handles on one member can read two rows of a
 * (2, E) edge_index in lock step, and the archive may be closed before its
 * arrays. Handles are not shared between threads; different handles may be
 * used by different threads.
 *
 * Every failure is a GNN_E* code with a message naming the file and the
 * member. Nothing an input says drives an unbounded allocation: the central
 * directory is capped, member counts are checked against its size, npy
 * headers are capped at 64 KiB.
 */
#ifndef GNN_DATASETS_NPZ_H
#define GNN_DATASETS_NPZ_H

#include <stddef.h>
#include <stdint.h>

#define GNN_NPZ_MAX_DIMS 4

typedef struct gnn_npz gnn_npz_t;
typedef struct gnn_npz_array gnn_npz_array_t;

/* Element types of the arrays this reader accepts (little-endian). */
typedef enum {
    GNN_NPZ_BOOL = 1, /* '|b1' */
    GNN_NPZ_I8,       /* '|i1' */
    GNN_NPZ_U8,       /* '|u1' */
    GNN_NPZ_I16,      /* '<i2' */
    GNN_NPZ_U16,      /* '<u2' */
    GNN_NPZ_I32,      /* '<i4' */
    GNN_NPZ_U32,      /* '<u4' */
    GNN_NPZ_I64,      /* '<i8' */
    GNN_NPZ_U64,      /* '<u8' */
    GNN_NPZ_F32,      /* '<f4' */
    GNN_NPZ_F64       /* '<f8' */
} gnn_npz_dtype_t;

/* What an npy header says about its array. */
typedef struct {
    gnn_npz_dtype_t dtype;
    int itemsize;                    /* bytes per element */
    int ndim;                        /* 0 for a scalar */
    int64_t shape[GNN_NPZ_MAX_DIMS]; /* first ndim entries used */
    int64_t count;                   /* elements: product of shape (1 for a scalar) */
    char descr[8];                   /* as written, e.g. "<i8" */
} gnn_npz_info_t;

/* "bool", "int8", ..., "float64"; "?" for a value outside the enum. */
const char *gnn_npz_dtype_name(gnn_npz_dtype_t t);

/* ---- Archives ---------------------------------------------------------- */

/*
 * Open the zip archive at path and read its central directory. On success
 * *out owns an open descriptor; on failure *out is NULL and: GNN_ENOENT (no
 * such file), GNN_EIO (unreadable, not a regular file), GNN_EFORMAT (not a
 * zip archive, a truncated archive, a corrupt central directory),
 * GNN_EUNSUPPORTED (a multi-disk archive), GNN_ENOMEM.
 */
int gnn_npz_open(const char *path, gnn_npz_t **out);

/* The same over size bytes in memory (not copied: they must outlive the
 * archive and every array opened from it); name is used in messages. */
int gnn_npz_open_mem(const void *data, size_t size, const char *name, gnn_npz_t **out);

/* Release the archive; arrays opened from it stay usable. NULL is a no-op. */
void gnn_npz_close(gnn_npz_t *z);

/* The path or name the archive was opened with. */
const char *gnn_npz_name(const gnn_npz_t *z);

/* Number of members and the stored name of member i ("edge_index.npy");
 * NULL when i is out of range. */
int64_t gnn_npz_count(const gnn_npz_t *z);
const char *gnn_npz_member(const gnn_npz_t *z, int64_t i);

/* True when the archive has a member called name or name + ".npy". */
int gnn_npz_has(const gnn_npz_t *z, const char *name);

/* ---- Arrays ------------------------------------------------------------ */

/*
 * Open member name (with or without its ".npy" suffix; "name.npy" is tried
 * first) and parse its npy header (format versions 1.0, 2.0 and 3.0). The
 * cursor is left at element 0. On failure *out is NULL and:
 *   GNN_EINVAL       no such member (the message lists those that exist);
 *   GNN_EUNSUPPORTED an encrypted member, a compression method other than
 *                    STORED and DEFLATED, a dtype outside gnn_npz_dtype_t
 *                    (big-endian, object, string, structured, float16...),
 *                    fortran_order True with more than one dimension, more
 *                    than GNN_NPZ_MAX_DIMS dimensions;
 *   GNN_EFORMAT      a bad local header, a truncated member, corrupt deflate
 *                    data, a bad npy magic, a malformed header dict, a shape
 *                    whose size disagrees with the member's size, a header
 *                    over 64 KiB;
 *   GNN_EVERSION     an npy format version other than 1, 2 and 3;
 *   GNN_EIO, GNN_ENOMEM.
 */
int gnn_npz_array_open(const gnn_npz_t *z, const char *name, gnn_npz_array_t **out);

/* Release the handle and its descriptor. NULL is a no-op. */
void gnn_npz_array_close(gnn_npz_array_t *a);

const gnn_npz_info_t *gnn_npz_array_info(const gnn_npz_array_t *a);
/* Stored member name, e.g. "edge_index.npy". */
const char *gnn_npz_array_member(const gnn_npz_array_t *a);
/* Index of the next element the cursor will read (0 .. info.count). */
int64_t gnn_npz_array_tell(const gnn_npz_array_t *a);

/*
 * Read the next n elements (C order) into out, converting from the stored
 * type, and advance the cursor by n. Conversion rules:
 *   - to int64: integers and bools exactly; a uint64 above INT64_MAX is
 *     GNN_ERANGE; floats only when the value is integral and in range (1.5,
 *     NaN or inf is GNN_ERANGE naming the element);
 *   - to float / double: every type, rounded to nearest where the target
 *     cannot hold the value exactly (int64 beyond 2^53, float64 to float;
 *     a float64 beyond float's range becomes +-inf), NaN stays NaN.
 * Asking for more elements than remain is GNN_ERANGE and a negative n is
 * GNN_EINVAL; both read nothing.
 * Reaching the end of the member checks its size and, when this handle has
 * read it from the start, its CRC-32. Errors: GNN_ERANGE, GNN_EFORMAT
 * (truncated member, corrupt data, CRC mismatch), GNN_EIO, GNN_ENOMEM.
 * After any other error the handle only fails (with the same code) until
 * it is closed; what out holds then is unspecified.
 */
int gnn_npz_array_read_i64(gnn_npz_array_t *a, int64_t *out, int64_t n);
int gnn_npz_array_read_f32(gnn_npz_array_t *a, float *out, int64_t n);
int gnn_npz_array_read_f64(gnn_npz_array_t *a, double *out, int64_t n);
/* The next n elements as stored (n * info.itemsize little-endian bytes). */
int gnn_npz_array_read_raw(gnn_npz_array_t *a, void *out, int64_t n);

/*
 * Move the cursor to element index (0 .. info.count). In a STORED member
 * this is a jump; a forward one within the bytes already in the handle's
 * input window (1 MiB from a file, everything from memory) steps over them
 * keeping the CRC, any other jump means this handle no longer checks the
 * CRC (seeking back to element 0 restores the check). In a DEFLATED member a
 * forward seek inflates and discards (CRC kept), a backward one restarts
 * the stream from the member's start. GNN_ERANGE for an index outside the
 * array (not sticky); else the errors of the reads.
 */
int gnn_npz_array_seek(gnn_npz_array_t *a, int64_t index);

#endif
