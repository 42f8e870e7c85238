/*
 * Tests of sampling mini-batches by owners over a partition directory
 * (trainer/dist.h: gnn_dist_draw_remote and the sampler ids; sampler/
 * sampler.h: draws keyed by ids, rows held elsewhere), run by CTest under
 * mpirun with 1, 2 and 4 ranks.
 *
 * Rank 0 writes a graph file into its temporary directory: a directed
 * graph of 2500 nodes, rows sorted and deduplicated, with hubs (in-degree
 * above 100, so that a fanout of 70 takes the long-draw path, and many
 * out-edges, so that hubs reach the frontier), nodes of in-degree 0, 4
 * features, labels and train / valid / test splits. Every rank draws the
 * same random assignment of the nodes to one part per rank; rank 0 writes
 * the partition directory with 1, 2 and 3 hops of halo (gnn_partdir_write)
 * and every rank loads its part whole (gnn_dist_load).
 *
 * Each rank samples 3-layer batches with fanouts {4, 70, -1} and
 * {2, 3, 5} over its part, draws keyed by graph-file ids, the rows beyond
 * its held rows drawn by their owners when the halo has fewer hops than
 * the layers. Seeds are some of its owned nodes (in one batch in reverse
 * order, in another none on the last rank, which still takes part in every
 * hop's exchange). Every batch must equal exactly what the single-process
 * sampler draws on the whole graph file from the same seeds (their
 * graph-file ids) under the same (seed, epoch, batch): seed and input
 * counts, edges per layer, the graph-file id of every input node in order
 * (sampler ids beyond the part mapped through meta.h5's node_map), every
 * block's indptr and indices. With several ranks and fewer hops than
 * layers, remote draws must have happened (sample_bytes > 0 on some rank,
 * hubs drawn 70 of their in-edges by their owners); with enough hops, or
 * one rank, none (sample_bytes exactly 0, no frontier node beyond the held
 * rows).
 *
 * The hook called directly: an owner's draw of 70 of a hub's in-edges equals
 * gnn_sampler_draw_row on the whole graph's row. Errors, agreed by every
 * rank with the same code (the hook is collective): a node held here, owned
 * or a held halo node, asked of the hook by one rank (GNN_EINVAL on every
 * rank, "held here" in the message of the rank that asked, the others
 * naming it); ranks drawing different hops (GNN_EINVAL on every rank, not a
 * hang); a batch whose seeds repeat on the last rank only (that sampler
 * fails before the first exchange and passes its failure to the hook at
 * the first hop that calls it, so every rank's batch fails with
 * GNN_EINVAL). Feature fetches by sampler id (a halo hub, a node beyond
 * the part) return the graph file's rows; fetching an owned node fails on
 * every rank with GNN_EINVAL, and so does running out of memory on one
 * rank before a fetch (GNN_ENOMEM); every halo row fetched as the rows
 * arrive (gnn_dist_fetch_grouped, twice) is the file's, grouped by owner. Sampling still equals one process's
 * afterwards. Half the
 * cases call the hook from the first hop that can need it (the halo's
 * hop count), half from hop 0.
 *
 * Typed draws: the same graph written as format version 2 (one node type,
 * 3 relations by a hash of each edge's ends), its rows grouped by
 * relation; with 1 and 2 hops of halo the part's typed sampler (each row
 * drawn per relation, the owners answering every source's relation)
 * draws exactly the whole graph's typed batches, relations included, and
 * owners draw 70 of a longer relation's in-edges of hubs; an untyped
 * sampler on the typed part (an untyped model's) gets untyped draws from
 * the owners: the whole graph's untyped batches.
 *
 * The device sampler (gnn_be_sample on the CPU backend, and on it as a
 * GPU: cpu-as-gpu) over the same part with the same owners' hook samples
 * every batch of every case entry for entry as the host sampler does,
 * and hands a repeated seed's failure to the hook as it does.
 *
 * Every check's outcome is agreed across ranks before it can fail the
 * test, so all ranks leave a failing test together.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/graph_file.h"
#include "kernels/backend.h"
#include "partition/kway.h"
#include "partition/partdir.h"
#include "sampler/sampler.h"
#include "tests/common/graphtest.h"
#include "tests/common/mpitest.h"
#include "tests/common/testrng.h"
#include "tests/common/testutil.h"
#include "trainer/dist.h"
#include "trainer/typed.h"

#include <hdf5.h>
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_NODES 2500
#define HUB_EVERY 83 /* nodes 0, 83, 166, ... are hubs */
#define N_HUBS ((N_NODES + HUB_EVERY - 1) / HUB_EVERY)
#define FEAT_DIM 4
#define N_CLASSES 3
#define LAYERS 3
#define N_BATCHES 4
#define MAX_SEEDS 40
#define MAX_HOPS 3
#define LONG_FANOUT 70 /* above the sampler's 64 draws found by scanning */
#define N_RELS 3       /* the typed graph's relations */

static int g_rank, g_size;
static unsigned g_seed;
static char g_dir[512];   /* rank 0's temporary directory, on every rank */
static char g_graph[640]; /* the graph file */
static char g_typed_graph[640]; /* the same graph with relations (format version 2) */
static gnn_graph_t g_whole; /* every rank: the graph file loaded whole */
static gnn_graph_t g_typed; /* ... and the typed one, rows grouped by relation */
static int g_written[2][MAX_HOPS + 1]; /* the partition directory of H hops exists (typed) */
static char g_diff[1024];           /* the first difference found */

static const int g_fanouts[2][LAYERS] = {{4, LONG_FANOUT, -1}, {2, 3, 5}};

/* ---- The graph file (rank 0) ------------------------------------------------- */

static uint64_t below(uint64_t *r, uint64_t n) { return tu_rng_next(r) % n; }

/* The relation of the edge u -> v in the typed graph. */
static int32_t rel_of(gnn_vid_t u, gnn_vid_t v)
{
    uint64_t h = (uint64_t)u * 0x9E3779B97F4A7C15ull ^ (uint64_t)v * 0xC2B2AE3D27D4EB4Full;
    return (int32_t)((h >> 40) % N_RELS);
}

/* The graph into path; typed: as format version 2, one node type and
 * N_RELS relations. */
static int write_graph(unsigned seed, const char *path, int typed)
{
    uint64_t r = seed;
    int64_t m = 0, cap = (int64_t)N_NODES * 8 + (int64_t)N_HUBS * 300;
    gnn_vid_t *src = malloc((size_t)cap * sizeof *src), *dst = malloc((size_t)cap * sizeof *dst);
    int rc = src && dst ? 0 : GNN_ENOMEM;
    for (gnn_vid_t v = 0; rc == 0 && v < N_NODES; v++) {
        int d = (int)below(&r, 8); /* 0 .. 7 in-edges, a quarter of them from hubs */
        for (int i = 0; i < d; i++) {
            src[m] = below(&r, 4) == 0 ? (gnn_vid_t)below(&r, N_HUBS) * HUB_EVERY
                                       : (gnn_vid_t)below(&r, N_NODES);
            dst[m++] = v;
        }
        if (v % HUB_EVERY == 0) { /* a hub: 150 .. 299 more in-edges */
            int extra = 150 + (int)below(&r, 150);
            for (int i = 0; i < extra; i++) {
                src[m] = (gnn_vid_t)below(&r, N_NODES);
                dst[m++] = v;
            }
        }
    }
    gnn_graph_t g;
    gnn_graph_init(&g);
    if (rc == 0) rc = tu_graph_directed(&g, N_NODES, m, src, dst, NULL, FEAT_DIM, N_CLASSES);
    free(src);
    free(dst);
    for (gnn_vid_t v = 0; rc == 0 && v < N_NODES; v++) {
        for (int j = 0; j < FEAT_DIM; j++)
            g.feat[v * FEAT_DIM + j] = (float)below(&r, 10000) / 77.0f - 60.0f;
        g.label[v] = (int64_t)below(&r, N_CLASSES);
        int s = (int)below(&r, 4); /* 0, 1: train; 2: valid; 3: test */
        s = s < 2 ? GNN_SPLIT_TRAIN : s == 2 ? GNN_SPLIT_VALID : GNN_SPLIT_TEST;
        g.split[s][g.split_size[s]++] = v;
    }
    gnn_graph_types_t types = {.n_ntypes = 1, .n_rels = N_RELS, .target = 0};
    if (rc == 0 && typed) {
        types.off[1] = N_NODES;
        snprintf(types.ntype[0], sizeof types.ntype[0], "t0");
        types.feat_dim[0] = FEAT_DIM;
        for (int r = 0; r < N_RELS; r++) {
            snprintf(types.rel[r], sizeof types.rel[r], "r%d", r);
            types.rel_src[r] = types.rel_dst[r] = 0;
        }
        g.etype = malloc(((size_t)g.csr.nnz + 1) * sizeof *g.etype);
        if (!g.etype) rc = GNN_ENOMEM;
        for (gnn_vid_t v = 0; rc == 0 && v < N_NODES; v++)
            for (gnn_eid_t e = g.csr.indptr[v]; e < g.csr.indptr[v + 1]; e++)
                g.etype[e] = rel_of(g.csr.indices[e], v);
        g.types = &types;
    }
    if (rc == 0) rc = gnn_graph_write(path, &g, 1);
    g.types = NULL;
    free(g.etype);
    g.etype = NULL;
    gnn_graph_free(&g);
    return rc;
}

/* ---- The partition directories ---------------------------------------------- */

static const char *part_dir(int hops, int typed)
{
    static char dirs[2][MAX_HOPS + 1][700];
    snprintf(dirs[typed][hops], sizeof dirs[typed][hops], "%s/parts%s-h%d", g_dir,
             typed ? "-typed" : "", hops);
    return dirs[typed][hops];
}

/* The directory of `hops` hops of the graph (typed: the typed graph), one
 * part per rank, written by rank 0 the first time it is asked for. The
 * same code on every rank. */
static int ensure_dir(int hops, int typed)
{
    if (g_written[typed][hops]) return 0;
    const gnn_graph_t *gw = typed ? &g_typed : &g_whole;
    int32_t *part = malloc(N_NODES * sizeof *part);
    uint64_t r = (uint64_t)g_seed * 31u + 7u; /* the same on every rank */
    for (gnn_vid_t v = 0; part && v < N_NODES; v++) part[v] = (int32_t)below(&r, (uint64_t)g_size);
    int rc = part ? 0 : GNN_ENOMEM;
    if (rc == 0 && g_rank == 0) {
        gnn_csr_t sym = {0};
        int64_t cut = 0;
        rc = gnn_part_undirected(&gw->csr, &sym);
        if (rc >= 0) {
            rc = 0;
            cut = gnn_part_edge_cut(&sym, part);
        }
        gnn_csr_free(&sym);
        gnn_partdir_meta_t meta = {.graph = typed ? g_typed_graph : g_graph,
                                   .method = "random", .balance = "-",
                                   .ufactor = 30, .seed = g_seed, .halo_hops = hops,
                                   .edge_cut = cut, .max_metis_edges = 1000, .ranks = 1};
        if (rc == 0) rc = gnn_partdir_write(part_dir(hops, typed), gw, part, g_size, &meta, 0);
    }
    free(part);
    int all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (all == 0) g_written[typed][hops] = 1;
    return all;
}

/* meta.h5's node_map (partition id -> graph-file id) of dir into map. */
static int read_node_map(const char *dir, int64_t *map)
{
    char path[800];
    snprintf(path, sizeof path, "%s/meta.h5", dir);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = f >= 0 ? H5Dopen2(f, "node_map", H5P_DEFAULT) : -1;
    hid_t sp = ds >= 0 ? H5Dget_space(ds) : -1;
    int ok = sp >= 0 && H5Sget_simple_extent_npoints(sp) == N_NODES &&
             H5Dread(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, map) >= 0;
    if (sp >= 0) H5Sclose(sp);
    if (ds >= 0) H5Dclose(ds);
    if (f >= 0) H5Fclose(f);
    return ok ? 0 : -1;
}

/* The graph-file id of sampler id v of d; -1 when v names no node. */
static int64_t file_id(const gnn_dist_part_t *d, const int64_t *node_map, int64_t v)
{
    if (v >= 0 && v < d->n_all) return d->gid[v];
    if (v >= d->n_all && v - d->n_all < N_NODES) return node_map[v - d->n_all];
    return -1;
}

/* d loaded from dir, with node_map read and checked against its ids. */
static void load_part(const char *dir, gnn_dist_part_t *d, int64_t **node_map)
{
    int rc = gnn_dist_load(MPI_COMM_WORLD, dir, 1, d);
    CHECK_ALL(rc == 0, "load %s: %s: %s", dir, gnn_error_name(rc), gnn_error_message());
    int64_t *map = malloc(N_NODES * sizeof *map);
    int ok = map && read_node_map(dir, map) == 0;
    int64_t bad = -1;
    for (int64_t v = 0; ok && v < d->n_all; v++)
        if (d->l2g[v] < 0 || d->l2g[v] >= N_NODES || map[d->l2g[v]] != d->gid[v]) {
            bad = v;
            ok = 0;
        }
    ok = ok && d->n_global == N_NODES && d->n_owned <= d->n_held && d->n_held <= d->n_all &&
         d->full.n_rows == d->n_all && d->full.n_cols == d->n_all;
    if (!ok) {
        free(map);
        map = NULL;
        gnn_dist_free(d);
    }
    CHECK_ALL(ok, "%s: node_map unreadable or not the part's ids (local node %" PRId64
              "), or counts wrong", dir, bad);
    *node_map = map;
}

/* ---- One batch against one process ---------------------------------------------- */

static int same_batch(const gnn_dist_part_t *d, const int64_t *node_map, const gnn_minibatch_t *a,
                      const gnn_minibatch_t *b)
{
#define DIFF(...) return snprintf(g_diff, sizeof g_diff, __VA_ARGS__), 0
    if (a->layers != b->layers || a->n_seeds != b->n_seeds || a->n_input != b->n_input ||
        a->edges_total != b->edges_total)
        DIFF("layers %d, %" PRId64 " seeds, %" PRId64 " input nodes, %" PRId64
             " edges against %d, %" PRId64 ", %" PRId64 ", %" PRId64,
             a->layers, (int64_t)a->n_seeds, (int64_t)a->n_input, (int64_t)a->edges_total,
             b->layers, (int64_t)b->n_seeds, (int64_t)b->n_input, (int64_t)b->edges_total);
    for (int l = 0; l < a->layers; l++)
        if (a->edges[l] != b->edges[l])
            DIFF("layer %d: %" PRId64 " edges against %" PRId64, l, (int64_t)a->edges[l],
                 (int64_t)b->edges[l]);
    for (int64_t k = 0; k < a->n_input; k++) {
        int64_t f = file_id(d, node_map, a->nodes[k]);
        if (f != b->nodes[k])
            DIFF("input node %" PRId64 ": sampler id %" PRId64 " is graph node %" PRId64
                 ", one process has %" PRId64,
                 k, (int64_t)a->nodes[k], f, (int64_t)b->nodes[k]);
    }
    for (int l = 0; l < a->layers; l++) {
        const gnn_csr_t *x = &a->blocks[l].csr, *y = &b->blocks[l].csr;
        if (x->n_rows != y->n_rows || x->n_cols != y->n_cols || x->nnz != y->nnz)
            DIFF("block %d: %" PRId64 " x %" PRId64 " with %" PRId64 " entries against %" PRId64
                 " x %" PRId64 " with %" PRId64,
                 l, (int64_t)x->n_rows, (int64_t)x->n_cols, (int64_t)x->nnz, (int64_t)y->n_rows,
                 (int64_t)y->n_cols, (int64_t)y->nnz);
        if (a->blocks[l].src_ids != a->nodes)
            DIFF("block %d: src_ids is not the batch's node list", l);
        for (int64_t i = 0; i <= x->n_rows; i++)
            if (x->indptr[i] != y->indptr[i])
                DIFF("block %d: indptr[%" PRId64 "] = %" PRId64 " against %" PRId64, l, i,
                     (int64_t)x->indptr[i], (int64_t)y->indptr[i]);
        for (int64_t e = 0; e < x->nnz; e++)
            if (x->indices[e] != y->indices[e])
                DIFF("block %d: indices[%" PRId64 "] = %" PRId64 " against %" PRId64, l, e,
                     (int64_t)x->indices[e], (int64_t)y->indices[e]);
        const int32_t *rx = a->blocks[l].etype, *ry = b->blocks[l].etype;
        if (!rx != !ry) DIFF("block %d: relations on one side only", l);
        for (int64_t e = 0; rx && e < x->nnz; e++)
            if (rx[e] != ry[e])
                DIFF("block %d: relation of entry %" PRId64 " %d against %d", l, e, rx[e], ry[e]);
    }
    return 1;
#undef DIFF
}

/* Seeds of batch b: up to MAX_SEEDS owned nodes, strided; none on the last
 * rank in batch 2, reversed in batch 3. */
static int64_t pick_seeds(const gnn_dist_part_t *d, int b, gnn_vid_t *seeds)
{
    if (b == 2 && g_rank == g_size - 1) return 0;
    int64_t stride = d->n_owned / MAX_SEEDS, n = 0;
    if (stride < 1) stride = 1;
    for (int64_t v = (b * 3 + g_rank) % stride; v < d->n_owned && n < MAX_SEEDS; v += stride)
        seeds[n++] = v;
    if (b == 3)
        for (int64_t i = 0; i < n / 2; i++) {
            gnn_vid_t t = seeds[i];
            seeds[i] = seeds[n - 1 - i];
            seeds[n - 1 - i] = t;
        }
    return n;
}

/* What the batches exercised, summed over batches. */
typedef struct {
    int64_t long_draws;  /* rows drawn LONG_FANOUT of more in-edges */
    int64_t long_remote; /* ... of them rows held elsewhere */
    int64_t remote_rows; /* frontier nodes beyond the held rows */
    int64_t edges;
} stats_t;

/* Whether row i of block b drew LONG_FANOUT of more in-edges of node f
 * (typed: of one relation's). */
static int long_draw(const gnn_block_t *b, int64_t i, int64_t f)
{
    const gnn_csr_t *c = &b->csr;
    if (!b->etype) {
        int64_t deg = g_whole.csr.indptr[f + 1] - g_whole.csr.indptr[f];
        return deg > LONG_FANOUT && c->indptr[i + 1] - c->indptr[i] == LONG_FANOUT;
    }
    int64_t got[N_RELS] = {0}, deg[N_RELS] = {0};
    for (gnn_eid_t e = c->indptr[i]; e < c->indptr[i + 1]; e++) got[b->etype[e]]++;
    for (gnn_eid_t e = g_typed.csr.indptr[f]; e < g_typed.csr.indptr[f + 1]; e++)
        deg[g_typed.etype[e]]++;
    for (int r = 0; r < N_RELS; r++)
        if (deg[r] > LONG_FANOUT && got[r] == LONG_FANOUT) return 1;
    return 0;
}

static void count_batch(const gnn_dist_part_t *d, const int64_t *node_map, const int *fanouts,
                        const gnn_minibatch_t *mb, stats_t *st)
{
    st->edges += mb->edges_total;
    for (int h = 0; h < mb->layers; h++) {
        const gnn_block_t *b = &mb->blocks[mb->layers - 1 - h];
        for (int64_t i = 0; i < b->csr.n_rows; i++) {
            int64_t v = mb->nodes[i], f = file_id(d, node_map, v);
            st->remote_rows += v >= d->n_held;
            if (fanouts[h] == LONG_FANOUT && long_draw(b, i, f)) {
                st->long_draws++;
                st->long_remote += v >= d->n_held;
            }
        }
    }
}

/* The device sampler's batch bb (its backend's buffers) is the host
 * sampler's mb over the same part, entry for entry. */
static int same_device_batch(gnn_backend_t *be, const gnn_bbatch_t *bb, const gnn_minibatch_t *mb)
{
#define DIFF(...) return snprintf(g_diff, sizeof g_diff, "device sampler: " __VA_ARGS__), 0
    if (bb->layers != mb->layers || bb->n_seeds != mb->n_seeds || bb->n_input != mb->n_input)
        DIFF("%d layers, %" PRId64 " seeds, %" PRId64 " input nodes against %d, %" PRId64
             ", %" PRId64,
             bb->layers, bb->n_seeds, bb->n_input, mb->layers, (int64_t)mb->n_seeds,
             (int64_t)mb->n_input);
    int64_t most = bb->n_input;
    for (int l = 0; l < bb->layers; l++) {
        most = bb->nnz[l] > most ? bb->nnz[l] : most;
        most = bb->n_dst[l] + 1 > most ? bb->n_dst[l] + 1 : most;
    }
    int64_t *h = malloc(((size_t)most + 1) * sizeof *h);
    int32_t *r = malloc(((size_t)most + 1) * sizeof *r);
    int ok = h && r;
    if (ok && bb->n_input)
        ok = gnn_be_download(be, h, bb->nodes, (size_t)bb->n_input * sizeof *h) == 0;
    for (int64_t k = 0; ok && k < bb->n_input; k++)
        if (h[k] != mb->nodes[k]) {
            snprintf(g_diff, sizeof g_diff,
                     "device sampler: input node %" PRId64 " is %" PRId64 ", the host's %" PRId64,
                     k, h[k], (int64_t)mb->nodes[k]);
            ok = 0;
        }
    for (int l = 0; ok && l < bb->layers; l++) {
        const gnn_csr_t *x = &mb->blocks[l].csr;
        if (bb->n_dst[l] != x->n_rows || bb->n_src[l] != x->n_cols || bb->nnz[l] != x->nnz) {
            snprintf(g_diff, sizeof g_diff,
                     "device sampler: block %d is %" PRId64 " x %" PRId64 " with %" PRId64
                     " entries, the host's %" PRId64 " x %" PRId64 " with %" PRId64,
                     l, bb->n_dst[l], bb->n_src[l], bb->nnz[l], (int64_t)x->n_rows,
                     (int64_t)x->n_cols, (int64_t)x->nnz);
            ok = 0;
            break;
        }
        ok = gnn_be_download(be, h, bb->indptr[l], (size_t)(x->n_rows + 1) * sizeof *h) == 0 &&
             !memcmp(h, x->indptr, (size_t)(x->n_rows + 1) * sizeof *h);
        if (ok && x->nnz)
            ok = gnn_be_download(be, h, bb->indices[l], (size_t)x->nnz * sizeof *h) == 0 &&
                 !memcmp(h, x->indices, (size_t)x->nnz * sizeof *h);
        if (ok && !bb->typed != !mb->blocks[l].etype) ok = 0;
        if (ok && bb->typed && x->nnz)
            ok = gnn_be_download(be, r, bb->etype[l], (size_t)x->nnz * sizeof *r) == 0 &&
                 !memcmp(r, mb->blocks[l].etype, (size_t)x->nnz * sizeof *r);
        if (!ok) snprintf(g_diff, sizeof g_diff, "device sampler: block %d differs", l);
    }
    free(h);
    free(r);
    return ok;
#undef DIFF
}

/* The backend and device sampler of a case (NULL: none). */
static gnn_backend_t *g_be;
static gnn_bsampler_t *g_ds;
static gnn_bbatch_t g_bb;

/* Batch b by s on d and by ref on the whole graph: the same batch; and
 * by the device sampler g_ds (when set) over the part: the same again. */
static void run_batch(const gnn_dist_part_t *d, const int64_t *node_map, const gnn_sampler_t *s,
                      const gnn_sampler_t *ref, const int *fanouts, int b, stats_t *st)
{
    gnn_vid_t seeds[MAX_SEEDS], ref_seeds[MAX_SEEDS];
    int64_t n = pick_seeds(d, b, seeds);
    for (int64_t i = 0; i < n; i++) ref_seeds[i] = d->gid[seeds[i]];
    uint64_t seed = (uint64_t)g_seed + 101u, epoch = 1 + (uint64_t)b / 2, batch = (uint64_t)b;
    gnn_minibatch_t mb, rb;
    int rc = gnn_sampler_sample(s, seeds, n, seed, epoch, batch, &mb);
    CHECK_ALL(rc == 0, "batch %d: sampling over the part: %s: %s", b, gnn_error_name(rc),
              gnn_error_message());
    rc = gnn_sampler_sample(ref, ref_seeds, n, seed, epoch, batch, &rb);
    int ok = rc == 0 && same_batch(d, node_map, &mb, &rb);
    if (ok) count_batch(d, node_map, fanouts, &mb, st);
    if (g_ds) { /* collective too: every rank samples on its backend */
        int drc = gnn_be_sample(g_ds, seeds, n, seed, epoch, batch, &g_bb);
        if (ok && drc < 0) snprintf(g_diff, sizeof g_diff, "device sampler: %s", gnn_error_message());
        ok = ok && drc == 0 && same_device_batch(g_be, &g_bb, &mb);
    }
    gnn_minibatch_free(&mb);
    gnn_minibatch_free(&rb);
    CHECK_ALL(ok, "batch %d (%" PRId64 " seeds): %s", b, n,
              rc ? gnn_error_message() : g_diff);
}

/* A sampler over d's part (keyed by graph-file ids, remote rows drawn by
 * their owners when the halo is short of the layers, the hook called from
 * hop first_hop on) and one over the whole graph. */
static int make_samplers(gnn_dist_part_t *d, const int *fanouts, int first_hop, int typed,
                         gnn_sampler_t **s, gnn_sampler_t **ref)
{
    *s = *ref = NULL;
    const gnn_csr_t *whole = d->full_etype ? &g_typed.csr : &g_whole.csr;
    int rc = gnn_sampler_create(&d->full, LAYERS, fanouts, s);
    if (rc == 0) rc = gnn_sampler_set_key_ids(*s, d->gid);
    if (rc == 0 && typed) rc = gnn_sampler_set_relations(*s, d->full_etype, N_RELS);
    if (rc == 0 && d->hops < LAYERS)
        rc = gnn_sampler_set_remote(*s, &(gnn_sampler_remote_t){.n_held = d->n_held,
                                                                 .first_hop = first_hop,
                                                                 .draw = gnn_dist_draw_remote,
                                                                 .ctx = d});
    if (rc == 0) rc = gnn_sampler_create(whole, LAYERS, fanouts, ref);
    if (rc == 0 && typed) rc = gnn_sampler_set_relations(*ref, g_typed.etype, N_RELS);
    if (rc < 0) {
        gnn_sampler_free(*s);
        gnn_sampler_free(*ref);
        *s = *ref = NULL;
    }
    return rc;
}

/* The device sampler of backend `backend` over d's part as make_samplers
 * makes the host's (g_be, g_ds). */
static int make_device_sampler(const char *backend, gnn_dist_part_t *d, const int *fanouts,
                               int first_hop, int typed)
{
    int rc = gnn_backend_open(backend, &g_be);
    if (rc == 0) rc = gnn_be_sampler_create(g_be, &d->full, LAYERS, fanouts, &g_ds);
    if (rc == 0) rc = gnn_be_sampler_set_key_ids(g_ds, d->gid);
    if (rc == 0 && typed) rc = gnn_be_sampler_set_relations(g_ds, d->full_etype, N_RELS);
    if (rc == 0 && d->hops < LAYERS)
        rc = gnn_be_sampler_set_remote(g_ds, &(gnn_be_remote_t){.n_held = d->n_held,
                                                              .n_ids = d->n_all + d->n_global,
                                                              .first_hop = first_hop,
                                                              .draw = gnn_dist_draw_remote,
                                                              .ctx = d});
    return rc;
}

static void free_device_sampler(void)
{
    gnn_be_batch_free(&g_bb);
    gnn_be_sampler_free(g_ds);
    gnn_backend_close(g_be);
    g_ds = NULL;
    g_be = NULL;
}

/* ---- The cases -------------------------------------------------------------------- */

typedef struct {
    int hops, fan; /* halo hops; fanouts g_fanouts[fan] */
    int typed;     /* the typed graph: 1 drawn per relation, 2 by an untyped sampler */
} sample_case_t;

static const sample_case_t g_cases[] = {{1, 0, 0}, {1, 1, 0}, {2, 0, 0}, {2, 1, 0}, {3, 0, 0},
                                        {3, 1, 0}, {1, 0, 1}, {1, 1, 1}, {2, 0, 1}, {1, 0, 2}};
#define N_CASES (sizeof g_cases / sizeof g_cases[0])

static void test_same_as_one_process(void **state)
{
    const sample_case_t *c = *state;
    const int *fanouts = g_fanouts[c->fan];
    int rc = ensure_dir(c->hops, c->typed != 0);
    CHECK_ALL(rc == 0, "partition directory of %d hops: %s", c->hops, gnn_error_message());
    gnn_dist_part_t d;
    int64_t *node_map = NULL;
    load_part(part_dir(c->hops, c->typed != 0), &d, &node_map);
    CHECK_ALL(d.hops == c->hops, "the part has %d hops of halo, expected %d", d.hops, c->hops);
    CHECK_ALL(!d.full_etype == !c->typed, "the part %s relations", c->typed ? "lacks" : "has");
    gnn_sampler_t *s, *ref;
    /* The hook from the first hop that can need it, or from hop 0. */
    rc = make_samplers(&d, fanouts, c->fan == 0 ? d.hops : 0, c->typed == 1, &s, &ref);
    CHECK_ALL(rc == 0, "samplers: %s", gnn_error_message());
    /* ... and the device sampler (the CPU backend's, alternately as a GPU). */
    const char *backend = (c - g_cases) % 2 ? "cpu-as-gpu" : "cpu";
    rc = make_device_sampler(backend, &d, fanouts, c->fan == 0 ? d.hops : 0, c->typed == 1);
    CHECK_ALL(rc == 0, "device sampler: %s", gnn_error_message());
    stats_t st = {0};
    for (int b = 0; b < N_BATCHES; b++) run_batch(&d, node_map, s, ref, fanouts, b, &st);
    d.sample_bytes /= 2; /* both samplers drew alike */
    free_device_sampler();

    int64_t mine[5] = {st.long_draws, st.long_remote, st.remote_rows, d.sample_bytes, st.edges};
    int64_t sum[5];
    MPI_Allreduce(mine, sum, 5, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int remote = g_size > 1 && c->hops < LAYERS;
    if (g_rank == 0)
        printf("%s%d hops, fanouts {%d, %d, %d}: %d batches, %" PRId64 " edges; %" PRId64
               " rows drawn from beyond the held rows, %" PRId64 " long draws (%" PRId64
               " by owners), %" PRId64 " bytes of remote draws: same as one process, and the "
               "%s device sampler's\n",
               c->typed == 1 ? "typed, " : c->typed ? "typed graph, untyped draws, " : "",
               c->hops, fanouts[0], fanouts[1], fanouts[2], N_BATCHES,
               sum[4], sum[2], sum[0],
               sum[1], sum[3], backend);
    int64_t bytes = d.sample_bytes, rows = st.remote_rows;
    gnn_sampler_free(s);
    gnn_sampler_free(ref);
    gnn_dist_free(&d);
    free(node_map);
    if (fanouts[1] == LONG_FANOUT)
        CHECK_ALL(sum[0] > 0, "no row of more than %d in-edges was drawn at hop 1", LONG_FANOUT);
    if (remote) {
        CHECK_ALL(sum[2] > 0, "no frontier node lay beyond the held rows");
        CHECK_ALL(sum[3] > 0, "sample_bytes is 0 on every rank after remote draws");
        if (c->hops == 1 && fanouts[1] == LONG_FANOUT)
            CHECK_ALL(sum[1] > 0, "no owner drew %d of a longer row", LONG_FANOUT);
    } else {
        CHECK_ALL(bytes == 0, "%" PRId64 " bytes of remote draws with %d hops on %d ranks", bytes,
                  c->hops, g_size);
        CHECK_ALL(rows == 0, "%" PRId64 " frontier nodes beyond the held rows with %d hops", rows,
                  c->hops);
    }
}

/* The hook called directly: a draw equal to the whole graph's, and errors
 * agreed on every rank. */
static void test_remote_errors(void **state)
{
    (void)state;
    const int *fanouts = g_fanouts[0];
    int rc = ensure_dir(1, 0);
    if (rc == 0) rc = ensure_dir(2, 0);
    CHECK_ALL(rc == 0, "partition directories: %s", gnn_error_message());
    gnn_dist_part_t d;
    int64_t *node_map = NULL;
    load_part(part_dir(1, 0), &d, &node_map);
    CHECK_ALL(d.n_owned > 0, "rank %d owns no node", g_rank);
    uint64_t key = gnn_sampler_key(g_seed, 9, 4);
    int64_t v[1], cnt[1], junk = 0, *src;
    int last = g_rank == g_size - 1;
    const char *msg;

    /* An owned node, asked for by the last rank only. */
    v[0] = 0;
    src = &junk;
    rc = gnn_dist_draw_remote(&d, 0, 4, key, v, last ? 1 : 0, cnt, &src, NULL);
    msg = gnn_error_message();
    CHECK_ALL(rc == GNN_EINVAL, "an owned node: %s (%s), expected GNN_EINVAL", gnn_error_name(rc),
              msg);
    CHECK_ALL(src == NULL, "an owned node: *src was not reset");
    CHECK_ALL(!last || strstr(msg, "held here"), "an owned node: message \"%s\"", msg);
    CHECK_ALL(last || strstr(msg, "failed on rank"), "an owned node: message \"%s\"", msg);
    CHECK_ALL(gnn_dist_reporting_rank() == g_size - 1, "reporting rank %d, expected %d",
              gnn_dist_reporting_rank(), g_size - 1);

    if (g_size > 1) {
        /* The node of most in-edges of the next rank (a hub: none is held
         * here with one hop). */
        int q = (g_rank + 1) % g_size;
        int64_t target = -1, f = -1;
        gnn_eid_t deg = -1;
        for (int64_t p = d.part_start[q]; p < d.part_start[q + 1]; p++) {
            int64_t sid = gnn_dist_sampler_id(&d, p), fp = node_map[p];
            gnn_eid_t dp = g_whole.csr.indptr[fp + 1] - g_whole.csr.indptr[fp];
            if (sid >= d.n_held && dp > deg) {
                target = sid;
                f = fp;
                deg = dp;
            }
        }
        CHECK_ALL(target >= 0 && deg > LONG_FANOUT,
                  "rank %d: no node of rank %d beyond the held rows with more than %d in-edges",
                  g_rank, q, LONG_FANOUT);
        CHECK_ALL(gnn_dist_pid(&d, target) >= d.part_start[q] &&
                      gnn_dist_pid(&d, target) < d.part_start[q + 1] &&
                      file_id(&d, node_map, target) == f,
                  "sampler id %" PRId64 " does not map back", target);

        /* Drawn by its owner: what the whole graph's row draws. */
        int h = 1, fanout = LONG_FANOUT;
        v[0] = target;
        rc = gnn_dist_draw_remote(&d, h, fanout, key, v, 1, cnt, &src, NULL);
        CHECK_ALL(rc == 0, "a remote draw: %s: %s", gnn_error_name(rc), gnn_error_message());
        const gnn_vid_t *row = g_whole.csr.indices + g_whole.csr.indptr[f];
        gnn_vid_t want[LONG_FANOUT];
        int64_t c = gnn_sampler_draw_row(row, deg, fanout, key, f, h, want);
        int64_t at = c == LONG_FANOUT && cnt[0] == c ? 0 : -1;
        while (at >= 0 && at < c && file_id(&d, node_map, src[at]) == want[at]) at++;
        gnn_free(src);
        CHECK_ALL(at == c, "a remote draw of graph node %" PRId64 " (%" PRId64
                  " in-edges): %" PRId64 " sources against the whole graph row's %" PRId64
                  ", the first differing at %" PRId64, f, (int64_t)deg, cnt[0], c, at);

        /* Rank 0 draws hop 1 while the others draw hop 0. */
        src = &junk;
        rc = gnn_dist_draw_remote(&d, g_rank == 0 ? 1 : 0, fanout, key, v, 1, cnt, &src, NULL);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_EINVAL && src == NULL, "different hops: %s (%s), expected GNN_EINVAL",
                  gnn_error_name(rc), msg);
        int rep = gnn_dist_reporting_rank();
        CHECK_ALL(rep >= 0 && rep < g_size, "different hops: reporting rank %d", rep);
        CHECK_ALL(g_rank != rep || strstr(msg, "hop"), "different hops: message \"%s\"", msg);

        /* Feature fetches by sampler id: the hub, and a node of rank q
         * beyond the part (when there is one), get the graph file's rows. */
        int64_t ids[2] = {target, -1};
        for (int64_t p = d.part_start[q]; p < d.part_start[q + 1] && ids[1] < 0; p++)
            if (gnn_dist_sampler_id(&d, p) >= d.n_all) ids[1] = gnn_dist_sampler_id(&d, p);
        int nf = ids[1] >= 0 ? 2 : 1;
        float rows[2 * FEAT_DIM];
        rc = gnn_dist_fetch_feat(&d, ids, nf, rows);
        CHECK_ALL(rc == 0, "a fetch: %s: %s", gnn_error_name(rc), gnn_error_message());
        int same = 1;
        for (int i = 0; i < nf; i++) {
            const float *w = g_whole.feat + file_id(&d, node_map, ids[i]) * FEAT_DIM;
            same = same && !memcmp(rows + i * FEAT_DIM, w, sizeof(float) * FEAT_DIM);
        }
        CHECK_ALL(same, "fetched rows differ from the graph file's");
        /* An owned node asked for by the last rank: agreed everywhere. */
        int64_t own = 0;
        rc = gnn_dist_fetch_feat(&d, &own, last ? 1 : 0, rows);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_EINVAL, "fetching an owned node: %s (%s)", gnn_error_name(rc), msg);
        CHECK_ALL(!last || strstr(msg, "not a remote node"), "fetch: message \"%s\"", msg);
        CHECK_ALL(last || strstr(msg, "failed on rank"), "fetch: message \"%s\"", msg);
        /* The rows as they arrive (a step's fetch): every halo node's, in
         * reverse order, twice (its buffers kept between the calls): row k
         * is the file's row of hids[pos[k]], pos a permutation, the rows
         * grouped by owner in rank order. */
        int64_t nh = d.n_all - d.n_owned;
        int64_t *hids = malloc(((size_t)nh + 1) * sizeof *hids);
        int64_t *pos = malloc(((size_t)nh + 1) * sizeof *pos);
        float *got = malloc(((size_t)nh * FEAT_DIM + 1) * sizeof *got);
        char *seen = calloc((size_t)nh + 1, 1);
        CHECK_ALL(hids && pos && got && seen, "out of memory");
        for (int64_t i = 0; i < nh; i++) hids[i] = d.n_all - 1 - i;
        for (int call = 0; call < 2; call++) {
            rc = gnn_dist_fetch_grouped(&d, hids, nh, got, pos);
            CHECK_ALL(rc == 0, "a grouped fetch: %s: %s", gnn_error_name(rc), gnn_error_message());
            int ok = 1, prev = -1;
            memset(seen, 0, (size_t)nh + 1);
            for (int64_t k = 0; k < nh && ok; k++) {
                int64_t i = pos[k];
                ok = i >= 0 && i < nh && !seen[i];
                if (!ok) break;
                seen[i] = 1;
                int owner = gnn_dist_owner(&d, gnn_dist_pid(&d, hids[i]));
                ok = owner >= prev && owner != g_rank &&
                     !memcmp(got + k * FEAT_DIM,
                             g_whole.feat + file_id(&d, node_map, hids[i]) * FEAT_DIM,
                             sizeof(float) * FEAT_DIM);
                prev = owner;
            }
            CHECK_ALL(ok, "grouped fetch %d of %" PRId64 " halo rows: row, order or owner wrong",
                      call + 1, nh);
        }
        free(hids);
        free(pos);
        free(got);
        free(seen);
        /* Out of memory on the last rank before a fetch in request order
         * (a cache's fill): every rank fails with it, none waits. */
        if (last) gnn_alloc_fail_at(1);
        rc = gnn_dist_fetch_feat(&d, ids, nf, rows);
        gnn_alloc_fail_at(0);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_ENOMEM, "a fetch out of memory on the last rank: %s (%s)",
                  gnn_error_name(rc), msg);
        CHECK_ALL(last || strstr(msg, "failed on rank"), "fetch: message \"%s\"", msg);
        rc = gnn_dist_fetch_feat(&d, ids, nf, rows);
        CHECK_ALL(rc == 0, "a fetch after one out of memory: %s: %s", gnn_error_name(rc),
                  gnn_error_message());
    }
    gnn_dist_free(&d);
    free(node_map);

    /* With 2 hops: a held halo node (hop 1), asked for by rank 0 only. */
    load_part(part_dir(2, 0), &d, &node_map);
    if (g_size > 1) {
        CHECK_ROOT(d.n_held > d.n_owned, "rank 0 holds no halo row");
        v[0] = d.n_owned;
        src = &junk;
        rc = gnn_dist_draw_remote(&d, 0, 4, key, v, g_rank == 0 ? 1 : 0, cnt, &src, NULL);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_EINVAL && src == NULL, "a held halo node: %s (%s)",
                  gnn_error_name(rc), msg);
        CHECK_ROOT(strstr(msg, "held here") != NULL, "a held halo node: message \"%s\"", msg);
        CHECK_ALL(gnn_dist_reporting_rank() == 0, "reporting rank %d, expected 0",
                  gnn_dist_reporting_rank());
    }

    /* A repeated seed on the last rank: its sampler fails before the first
     * exchange (hop 2 of this 2-hop part) and tells the others through the
     * hook there. */
    gnn_sampler_t *s, *ref;
    rc = make_samplers(&d, fanouts, d.hops, 0, &s, &ref);
    CHECK_ALL(rc == 0, "samplers: %s", gnn_error_message());
    {
        gnn_vid_t twice[2] = {0, 0};
        gnn_minibatch_t mb;
        rc = gnn_sampler_sample(s, twice, last ? 2 : 1, g_seed, 9, 5, &mb);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_EINVAL && mb.nodes == NULL, "a repeated seed on rank %d: %s (%s)",
                  g_size - 1, gnn_error_name(rc), msg);
        CHECK_ALL(!last || strstr(msg, "repeated"), "a repeated seed: message \"%s\"", msg);
        CHECK_ALL(g_size == 1 || last || strstr(msg, "failed on rank"),
                  "a repeated seed: message \"%s\"", msg);
    }
    /* The same with the device sampler: it fails before the first
     * exchange and hands its failure to the hook there. */
    rc = make_device_sampler("cpu-as-gpu", &d, fanouts, d.hops, 0);
    CHECK_ALL(rc == 0, "device sampler: %s", gnn_error_message());
    {
        int64_t twice[2] = {0, 0};
        rc = gnn_be_sample(g_ds, twice, last ? 2 : 1, g_seed, 9, 5, &g_bb);
        msg = gnn_error_message();
        CHECK_ALL(rc == GNN_EINVAL && g_bb.n_input == 0,
                  "a repeated seed on rank %d, device sampler: %s (%s)", g_size - 1,
                  gnn_error_name(rc), msg);
        CHECK_ALL(!last || strstr(msg, "repeated"), "a repeated seed: message \"%s\"", msg);
        CHECK_ALL(g_size == 1 || last || strstr(msg, "failed on rank"),
                  "a repeated seed, device sampler: message \"%s\"", msg);
    }
    stats_t st = {0};
    for (int b = 0; b < 2; b++) run_batch(&d, node_map, s, ref, fanouts, b, &st);
    free_device_sampler();
    gnn_sampler_free(s);
    gnn_sampler_free(ref);
    gnn_dist_free(&d);
    free(node_map);
    if (g_rank == 0) printf("errors agreed on every rank; sampling as one process after them\n");
}

int main(int argc, char **argv)
{
    if (tu_mpi_start(&argc, &argv, &g_rank, &g_size, GNN_LOG_ERROR, &g_seed, g_dir, sizeof g_dir)) return 1;
    gnn_graph_init(&g_whole);
    gnn_graph_init(&g_typed);
    int rc = 0;
    snprintf(g_graph, sizeof g_graph, "%s/graph.h5", g_dir);
    snprintf(g_typed_graph, sizeof g_typed_graph, "%s/graph-typed.h5", g_dir);
    if (g_rank == 0) {
        rc = write_graph(g_seed, g_graph, 0);
        if (rc == 0) rc = write_graph(g_seed, g_typed_graph, 1);
        if (rc < 0) fprintf(stderr, "setup: %s: %s\n", gnn_error_name(rc), gnn_error_message());
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rc == 0) { /* the typed graph's rows grouped by relation, as one process's */
        rc = gnn_graph_load(g_typed_graph, &g_typed);
        if (rc == 0 && (!g_typed.types || !g_typed.etype)) rc = GNN_FAIL(GNN_EINVAL, "no types");
        if (rc == 0) rc = gnn_typed_group_rows(&g_typed.csr, g_typed.etype);
        if (rc < 0)
            fprintf(stderr, "rank %d: typed %s: %s\n", g_rank, g_typed_graph, gnn_error_message());
    }
    if (rc == 0) {
        rc = gnn_graph_load(g_graph, &g_whole);
        if (rc < 0)
            fprintf(stderr, "rank %d: load %s: %s\n", g_rank, g_graph, gnn_error_message());
        /* What the cases rely on: sorted rows, hubs, nodes without in-edges. */
        int64_t zero = 0, hubs = 0;
        for (gnn_vid_t v = 0; rc == 0 && v < g_whole.csr.n_rows; v++) {
            gnn_eid_t deg = g_whole.csr.indptr[v + 1] - g_whole.csr.indptr[v];
            zero += deg == 0;
            hubs += deg > 100;
        }
        if (rc == 0 && (g_whole.csr.n_rows != N_NODES || zero == 0 || hubs == 0 ||
                        !(g_whole.csr.flags & GNN_CSR_SORTED))) {
            fprintf(stderr, "setup: %" PRId64 " nodes without in-edges, %" PRId64
                    " hubs, flags %u\n", zero, hubs, g_whole.csr.flags);
            rc = -1;
        } else if (rc == 0) {
            printf("graph: %d nodes, %" PRId64 " edges, %" PRId64 " hubs, %" PRId64
                   " nodes without in-edges; %d ranks\n",
                   N_NODES, (int64_t)g_whole.csr.nnz, hubs, zero, g_size);
        }
    }
    int all = 0;
    MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    int failed = 1;
    if (all == 0) {
        struct CMUnitTest tests[N_CASES + 1];
        static char names[N_CASES][96];
        for (size_t i = 0; i < N_CASES; i++) {
            const sample_case_t *c = &g_cases[i];
            const int *f = g_fanouts[c->fan];
            snprintf(names[i], sizeof names[i], "same as one process: %s%d hops, fanouts %d,%d,%d",
                     c->typed == 1 ? "typed, " : c->typed ? "typed graph, untyped draws, " : "",
                     c->hops, f[0], f[1], f[2]);
            tests[i] = (struct CMUnitTest){.name = names[i],
                                           .test_func = test_same_as_one_process,
                                           .initial_state = (void *)c};
        }
        tests[N_CASES] = (struct CMUnitTest)cmocka_unit_test(test_remote_errors);
        failed = _cmocka_run_group_tests("dist_sample", tests, N_CASES + 1, NULL, NULL);
    }
    gnn_graph_free(&g_whole);
    gnn_graph_free(&g_typed);
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return all != 0 || any != 0;
}
