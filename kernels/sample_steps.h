/*
 * The per-element steps of the device sampler (gnn_be_sample,
 * kernels/backend.h), shared by its CPU and CUDA implementations so that
 * both run the very same arithmetic: a row's count and its draws (those
 * of sampler/sampler.h, through graph/base/draw.h) and the sort of a row.
 */
#ifndef GNN_KERNELS_SAMPLE_STEPS_H
#define GNN_KERNELS_SAMPLE_STEPS_H

#include "graph/base/draw.h"

#include <stdint.h>

/* Entries row v draws at a fanout (-1: all): min(degree, fanout). */
static inline GNN_HOSTDEV int64_t gnn__ds_count(const int64_t *indptr, int64_t v, int fanout)
{
    const int64_t d = indptr[v + 1] - indptr[v];
    return fanout < 0 || d <= fanout ? d : fanout;
}

/* The c draws of row v at hop h under key into out (global ids, in draw
 * order): the whole row when c is its degree, else the positions of the
 * definition turned into the sources they index. The draws of v come
 * from the stream of kid[v] (a part's graph-file ids: sampler/sampler.h's
 * key ids), or of v itself where kid is NULL. */
static inline GNN_HOSTDEV void gnn__ds_draw(const int64_t *indptr, const int64_t *indices,
                                            const int64_t *kid, int64_t v, int64_t c,
                                            uint64_t key, int h, int64_t *out)
{
    const int64_t *row = indices + indptr[v];
    const int64_t d = indptr[v + 1] - indptr[v];
    if (c == d) {
        for (int64_t q = 0; q < c; q++) out[q] = row[q];
        return;
    }
    gnn_draw_stream_t s;
    gnn_draw_init(&s, key, kid ? kid[v] : v, (uint32_t)h);
    gnn_draw_floyd(&s, d, c, out);
    for (int64_t q = 0; q < c; q++) out[q] = row[out[q]];
}

#endif
