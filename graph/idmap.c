/*
 * Growth of the id map (idmap.h): a new table of twice the
 * needed keys, rounded up to a power of two, with every key re-inserted.
 */
#include "graph/idmap.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"

#include <string.h>

int gnn__idmap_reserve(gnn__idmap_t *m, int64_t n)
{
    if (n < 0) return GNN_FAIL(GNN_EINVAL, "id map: negative size %" PRId64, n);
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n) {
        if (cap > UINT64_MAX / 4) return GNN_FAIL(GNN_EOVERFLOW, "id map: %" PRId64 " keys", n);
        cap *= 2;
    }
    if (m->slots && cap <= m->mask + 1) return 0;
    gnn__idmap_slot_t *slots = gnn_malloc_array(cap, sizeof *slots);
    if (!slots) return GNN_ENOMEM;
    for (uint64_t i = 0; i < cap; i++) slots[i].key = -1;
    gnn__idmap_t next = {slots, cap - 1, 0};
    if (m->slots) {
        for (uint64_t i = 0; i <= m->mask; i++)
            if (m->slots[i].key >= 0)
                (void)gnn__idmap_get_or_put(&next, m->slots[i].key, m->slots[i].val);
        gnn_free(m->slots);
    }
    *m = next;
    return 0;
}

void gnn__idmap_free(gnn__idmap_t *m)
{
    gnn_free(m->slots);
    memset(m, 0, sizeof *m);
}
