/*
 * Id and offset types shared by every module.
 *
 * Global node ids and edge offsets are 64-bit: graphs such as ogbn-papers100M
 * (1.6 B edges, 3.2 B stored entries) overflow 32 bits. Ids local to one part
 * are 32-bit to halve the memory of per-part structures; code that narrows a
 * global count to a local id checks the range first (gnn_lid_fits).
 */
#ifndef GNN_BASE_TYPES_H
#define GNN_BASE_TYPES_H

#include <inttypes.h>
#include <stdint.h>

typedef int64_t gnn_vid_t; /* global node id */
typedef int64_t gnn_eid_t; /* edge offset or edge count */
typedef int32_t gnn_lid_t; /* node id local to one part */

#define GNN_PRIvid PRId64
#define GNN_PRIeid PRId64
#define GNN_PRIlid PRId32

#define GNN_LID_MAX INT32_MAX

/* True when a count of n local nodes can be addressed by gnn_lid_t. */
static inline int gnn_lid_fits(int64_t n) { return n >= 0 && n <= (int64_t)GNN_LID_MAX; }

#endif
