/*
 * Fuzz target of the npz reader: the input is an archive in memory. Every
 * member is opened and read to its end in chunks (floats as doubles, the
 * rest as int64), and a second handle seeks to the middle, reads on, and
 * seeks back; errors are expected and ignored. A crash, a sanitizer report
 * or a leak is a bug.
 */
#include "datasets/npz.h"
#include "graph/base/error.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { CHUNK = 1000 };

static void read_all(gnn_npz_array_t *a, int64_t from)
{
    static union {
        double d[CHUNK];
        int64_t i[CHUNK];
    } buf;
    const gnn_npz_info_t *in = gnn_npz_array_info(a);
    int as_float = in->dtype == GNN_NPZ_F32 || in->dtype == GNN_NPZ_F64;
    for (int64_t i = from; i < in->count;) {
        int64_t n = in->count - i < CHUNK ? in->count - i : CHUNK;
        if (i == from && n > 7) n = 7; /* an odd first chunk */
        int rc =
            as_float ? gnn_npz_array_read_f64(a, buf.d, n) : gnn_npz_array_read_i64(a, buf.i, n);
        if (rc < 0) return;
        i += n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_npz_t *z;
    if (gnn_npz_open_mem(data, size, "fuzz.npz", &z) < 0) return 0;
    for (int64_t k = 0; k < gnn_npz_count(z) && k < 16; k++) {
        const char *name = gnn_npz_member(z, k);
        gnn_npz_array_t *a, *b;
        if (gnn_npz_array_open(z, name, &a) < 0) continue;
        if (gnn_npz_array_open(z, name, &b) == 0) {
            int64_t mid = gnn_npz_array_info(b)->count / 2;
            if (gnn_npz_array_seek(b, mid) == 0) read_all(b, mid);
            if (gnn_npz_array_seek(b, 0) == 0) read_all(b, 0);
            gnn_npz_array_close(b);
        }
        read_all(a, 0);
        (void)gnn_npz_array_tell(a);
        gnn_npz_array_close(a);
    }
    gnn_npz_close(z);
    gnn_error_clear();
    return 0;
}
