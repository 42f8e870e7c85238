/*
 * Fuzz target for the METIS reader: the bytes are read from memory (plain
 * or gzip) into a builder and an in-memory CSR. Headers above 65536 vertices
 * are refused (max_nodes) so a tiny input cannot ask for gigabytes of node
 * offsets. Errors are expected and ignored; crashes, leaks and sanitizer
 * reports are not. A CSR that comes out must pass gnn_csr_validate with the
 * flags the reader promises (sorted, deduplicated, no self loops,
 * symmetric).
 */
#include "datasets/metis.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    gnn_metis_opts_t o = {.max_nodes = 1 << 16};
    gnn_csr_t a;
    if (gnn_metis_read_mem(data, size, "fuzz", &o, &a, NULL) == 0) {
        if (gnn_csr_validate(&a) != 0) abort();
        gnn_csr_free(&a);
    }
    gnn_error_clear();
    return 0;
}
