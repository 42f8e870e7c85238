/*
 * Fuzz target for the edge-list reader: the bytes are read from memory
 * (plain or gzip) through both passes into a builder and an in-memory CSR,
 * once with the defaults and once one-based and symmetrised. Errors are
 * expected and ignored; crashes, leaks and sanitizer reports are not. Every
 * CSR that comes out must pass gnn_csr_validate.
 */
#include "datasets/edgelist.h"
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(const uint8_t *data, size_t size, int one_based, unsigned build)
{
    gnn_edgelist_opts_t o = {.one_based = one_based};
    gnn_csr_t a;
    gnn_vid_t *orig = NULL;
    if (gnn_edgelist_read_mem(data, size, "fuzz", &o, build, &a, &orig) == 0) {
        if (gnn_csr_validate(&a) != 0) abort();
        gnn_csr_free(&a);
        gnn_free(orig);
    }
    gnn_error_clear();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gnn_log_set_level(GNN_LOG_ERROR);
    run(data, size, 0, GNN_BUILD_SORT);
    run(data, size, 1, GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE);
    return 0;
}
