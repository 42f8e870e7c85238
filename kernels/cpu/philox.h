/*
 * Philox-4x32-10 blocks at any counters, batched: the CPU kernels' way to
 * draw many counter blocks at once (kernels/cpu/dense.c; AVX2 where the
 * CPU has it, checked at run time). The words are exactly
 * gnn_rng_block's (graph/base/rng.h).
 */
#ifndef GNN_KERNELS_CPU_PHILOX_H
#define GNN_KERNELS_CPU_PHILOX_H

#include <stdint.h>

/* out[4 k + w] = word w of gnn_rng_block(seed, blocks[k]) for k < n
 * (blocks below 2^62). */
void gnn__philox_blocks(uint64_t seed, const uint64_t *blocks, int64_t n, uint32_t *out);

#endif
