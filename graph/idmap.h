/*
 * A global-id -> local-id map: open addressing with linear probing over a
 * power-of-two table of (key, value) pairs kept at most half full.
 *
 * It is sized to what it holds (a mini-batch's nodes, a part's halo),
 * never to the graph, so its memory follows the batch or the part. Keys
 * are node ids (>= 0); -1 marks an empty slot. Keys are never removed.
 * Internal: the sampler and the partition writer use it.
 */
#ifndef GNN_GRAPH_IDMAP_H
#define GNN_GRAPH_IDMAP_H

#include "graph/base/types.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
    gnn_vid_t key; /* -1: empty */
    gnn_vid_t val;
} gnn__idmap_slot_t;

typedef struct {
    gnn__idmap_slot_t *slots;
    uint64_t mask; /* capacity - 1 */
    gnn_vid_t size;
} gnn__idmap_t;

/* Make room for n keys in all (rehashing what m holds). A zeroed map is an
 * empty one. Returns 0, or GNN_ENOMEM with m unchanged. */
int gnn__idmap_reserve(gnn__idmap_t *m, int64_t n);

/* Free the table and zero m; safe on a zeroed map. */
void gnn__idmap_free(gnn__idmap_t *m);

/* MurmurHash3's 64-bit finaliser: ids that share their low bits (strided
 * ids) still spread over the table. */
static inline uint64_t gnn__idmap_hash(gnn_vid_t key)
{
    uint64_t z = (uint64_t)key;
    z = (z ^ (z >> 33)) * 0xFF51AFD7ED558CCDull;
    z = (z ^ (z >> 33)) * 0xC4CEB9FE1A85EC53ull;
    return z ^ (z >> 33);
}

/*
 * The value of key; when key is absent, insert it with val and return val.
 * The map must have room (gnn__idmap_reserve) for one more key.
 */
static inline gnn_vid_t gnn__idmap_get_or_put(gnn__idmap_t *m, gnn_vid_t key, gnn_vid_t val)
{
    uint64_t i = gnn__idmap_hash(key) & m->mask;
    for (;;) {
        gnn__idmap_slot_t *s = &m->slots[i];
        if (s->key == key) return s->val;
        if (s->key < 0) {
            s->key = key;
            s->val = val;
            m->size++;
            return val;
        }
        i = (i + 1) & m->mask;
    }
}

/* Where the value of key is held (to change it), or NULL when absent. */
static inline gnn_vid_t *gnn__idmap_find(gnn__idmap_t *m, gnn_vid_t key)
{
    if (!m->slots) return NULL;
    uint64_t i = gnn__idmap_hash(key) & m->mask;
    for (;;) {
        gnn__idmap_slot_t *s = &m->slots[i];
        if (s->key == key) return &s->val;
        if (s->key < 0) return NULL;
        i = (i + 1) & m->mask;
    }
}

/* The value of key, or -1 when absent. */
static inline gnn_vid_t gnn__idmap_get(const gnn__idmap_t *m, gnn_vid_t key)
{
    if (!m->slots) return -1;
    uint64_t i = gnn__idmap_hash(key) & m->mask;
    for (;;) {
        const gnn__idmap_slot_t *s = &m->slots[i];
        if (s->key == key) return s->val;
        if (s->key < 0) return -1;
        i = (i + 1) & m->mask;
    }
}

#endif
