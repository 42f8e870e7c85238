/*
 * Which remote nodes a rank keeps the features of (gnn-train
 * --feature-cache over a partition directory) besides the part's first
 * hop of halo, whose rows it holds anyway (fetched at load for inference):
 * the ones its mini-batches are most likely to need.
 *
 * Two rankings:
 *   - rows: the halo nodes beyond the first hop that the part's rows
 *     name most often, a count of edges with no sampling; it never ranks
 *     a node beyond the halo (so none over a part of one hop).
 *   - sample (pre-sampling): one epoch of this rank's batches is sampled
 *     ahead, with the training sampler and its own seeds, and each remote
 *     input node counted once per batch it appears in. The counts follow
 *     the fanouts (a neighbour of a node with many in-edges is drawn less
 *     often than one of a node with few) and reach every hop, including
 *     nodes beyond the part when their owners draw the last hops. Ties,
 *     and slots left after every node sampled is ranked, go by the rows
 *     ranking.
 * Nodes are named by sampler ids (trainer/dist.h): halo local ids
 * [n_local, n_all) beyond the first hop, or n_all + p for partition id p
 * beyond the part.
 */
#ifndef GNN_TRAINER_FEATCACHE_H
#define GNN_TRAINER_FEATCACHE_H

#include "sampler/sampler.h"
#include "trainer/dist.h"

#include <stdint.h>

/* Pre-sampling: batches of `batch` of the n_seeds seeds (owned local ids,
 * shuffled by seed), `steps` of them (the same number on every rank when
 * the sampler's hook is collective; steps past this rank's seeds sample
 * none), sampled under (seed, 0, step). */
typedef struct {
    const gnn_sampler_t *sampler;
    const int64_t *seeds;
    int64_t n_seeds, batch, steps;
    uint64_t seed;
} gnn_featcache_presample_t;

/*
 * The cap remote nodes to keep, best first, into ids (room for cap),
 * with *n the count (min(cap, the candidates): every halo node beyond the
 * first hop, and with ps the nodes beyond the part that were sampled). ps NULL: the rows
 * ranking alone. With ps, collective over d->comm (every rank calls it,
 * also with cap 0), and a failure is agreed: every rank returns it.
 * Returns 0; GNN_ENOMEM, or the sampler's failure.
 */
int gnn_featcache_choose(const gnn_dist_part_t *d, const gnn_featcache_presample_t *ps,
                         int64_t cap, int64_t *ids, int64_t *n);

#endif
