/*
 * Writing tensors in the safetensors format, which PyTorch and the
 * `safetensors` package read (docs/FORMAT.md, "Model file"):
 *   8 bytes   N, the header's length (little-endian unsigned)
 *   N bytes   a JSON object: "__metadata__" (string to string) and, per
 *             tensor, {"dtype": "F32", "shape": [...], "data_offsets":
 *             [begin, end]} with offsets into the data after the header;
 *             padded with spaces to a multiple of 8 bytes
 *   data      the tensors back to back, row-major, little-endian float32
 */
#ifndef GNN_TRAINER_SAFETENSORS_H
#define GNN_TRAINER_SAFETENSORS_H

#include <stdint.h>

typedef struct {
    const char *name;   /* unique, non-empty, printable ASCII, not "__metadata__" */
    int ndim;           /* 1 .. 3 */
    int64_t shape[3];   /* >= 1 each: the shape written */
    const float *data;  /* the elements row-major in that shape; with
                           transpose (ndim 2), the transpose's instead:
                           shape[1] x shape[0] row-major */
    int transpose;
} gnn_st_tensor_t;

/*
 * Write n tensors, in this order, and n_meta key/value pairs of metadata
 * (meta[2 i], meta[2 i + 1]: UTF-8 strings, escaped as JSON) to path,
 * atomically: under "<path>.tmp-<pid>", synced and renamed, so no file
 * under path is ever partial; an existing file is replaced. GNN_EINVAL for
 * a bad name or shape (nothing written), GNN_EIO naming path when writing
 * fails (no file left under either name), GNN_ENOMEM.
 */
int gnn_safetensors_write(const char *path, const gnn_st_tensor_t *t, int64_t n,
                          const char *const *meta, int64_t n_meta);

#endif
