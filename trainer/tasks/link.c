/*
 * Link prediction (trainer/task.h): the model's output rows are node
 * embeddings z; an edge u -> v scores s = <z_u, z_v> (the dot decoder), or
 * s = w2 . ReLU(W1^T (z_u * z_v) + b1) + b2 (the MLP decoder on the
 * element-wise product, W1 D x D, its parameters after the model's in the
 * flat buffer: trained, averaged over ranks and checkpointed with them).
 *
 * Training: every edge of the graph is a positive (an undirected graph's
 * edge once, as u < v; over a partition directory with its destination's
 * owner), with --negatives K negatives (u, w), w uniform
 * over the nodes, drawn afresh each epoch from a counter-based stream
 * keyed by (seed, run, epoch) and the positive's end points (hashed),
 * countered by k: any process holding the edge draws the same negatives. The loss
 * is binary cross-entropy,
 *   L = mean_pos softplus(-s) + mean_neg softplus(s),
 * and its gradient goes to both ends of every pair: gathered per node over
 * the pairs sorted by end point (a counting sort, fixed order), so results
 * do not depend on the thread count. The MLP's parameter gradients are
 * summed in double over fixed blocks of pairs, then over the blocks in
 * order, for the same reason.
 *
 * Edge mini-batches (--mode minibatch): an epoch has ceil(edges /
 * --batch-size) batches, and edge (u, v) falls in the batch a hash of the
 * run, the epoch and (u, v) picks, so that every rank can place the edges
 * it holds and a batch is the same set of edges for any number of ranks
 * (sizes vary around --batch-size). A batch's negatives are the ones the
 * whole graph's epoch draws for its edges, its seeds the distinct ends of
 * its pairs (in order of first appearance), and the sampler leaves the
 * batch's positives out of every sampled neighbourhood in both directions,
 * so no edge is predicted from a message along itself. Over a partition
 * directory each rank takes its share of every batch, gathers the whole
 * batch's edges and leaves them all out, also of the rows it draws for
 * other ranks: P ranks sample what one process samples. The loss is the
 * mean over the batch's pairs (each rank's share of it).
 *
 * Evaluation: the held-out sets of the graph file (gnn-dataset
 * split-edges: valid and test positives, each with its own K' negatives)
 * scored with the embeddings of a forward without dropout; per set AUC
 * (ties count one half), average precision (as scikit-learn computes it:
 * precision at each distinct score, weighted by the recall it adds), MRR
 * (each positive ranked among its own negatives, ties counted half way, as
 * OGB does) and Hits@K for each --hits K (the share of positives scored
 * above the K-th highest negative of the set, as OGB does; 1 with fewer
 * than K negatives); and the validation loss (the training loss on the
 * validation pairs). The best epoch has the highest validation AUC.
 */
#include "trainer/job.h"

#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/base/rng.h"
#include "graph/base/mpiutil.h"
#include "graph/idmap.h"
#include "partition/partdir.h"

#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_HITS 4
#define DEC_BLOCKS 64 /* blocks of pairs summed apart for the MLP's gradients */

/* Metric indices: per held-out set (valid, test) auc, ap, mrr, hits...;
 * then the validation loss. */
enum { M_AUC, M_AP, M_MRR, M_HITS0 };

typedef struct {
    int64_t n;                /* nodes */
    int64_t D;                /* embedding width */
    int64_t K;                /* training negatives per positive */
    int n_hits;
    int64_t hits[MAX_HITS];
    int64_t n_pos;            /* training positives */
    int64_t *pos;             /* n_pos x 2: (u, v) */
    const int64_t *set[GNN_NUM_LINK_SETS]; /* the file's held-out pairs (the graph's) */
    int64_t set_n[GNN_NUM_LINK_SETS];
    int64_t Keval;            /* negatives per held-out positive */
    int mlp;                  /* the MLP decoder (else dot) */
    int64_t n_dec;            /* its parameters: W1 (D x D), b1 (D), w2 (D), b2 */
    float *dec, *ddec;        /* host copies of them and their gradients */
    float *dh;                /* MLP: per pair, g * ds/dh (D floats) */
    double *part;             /* MLP: DEC_BLOCKS x n_dec partial sums */
    int64_t *items;           /* mini-batches: 0 .. n_pos - 1, the loader's items */
    int64_t *ep_items, *ep_starts, *ep_batch; /* this epoch's batches (epoch_batches) */
    int64_t ep_nb;
    /* Over a partition directory: the training edges held here are the
     * owned rows' (pos: graph-file ids), n_pos of the total_pos; ends are
     * found by partition id (g2p: graph-file id -> partition id). */
    int64_t total_pos;
    gnn_partdir_link_t meta;  /* the directory's held-out sets */
    int64_t *g2p;
    int64_t first;            /* partition id of owned node 0 */
    int64_t *gpairs;          /* this step's pairs by graph-file id */
    int64_t *remote;          /* partition ids of the step's far ends held elsewhere */
    int64_t n_remote, remote_cap;
    gnn__idmap_t rmap;        /* partition id -> index into remote */
    gnn_dist_rows_t rows;
    float *zx, *dzx;          /* owned rows, then the far ends' (host) */
    /* Full-graph epochs: the pair ends that do not change from epoch to
     * epoch (both ends of a positive, a negative's first end), by row:
     * ends fx_end[fx_start[v] .. fx_start[v + 1]) over fx_rows rows; the
     * negatives' drawn ends are grouped anew each epoch (rd_*). */
    int64_t *fx_start, *fx_end, fx_rows;
    int64_t *rd_start, *rd_pair;
    size_t rd_cap;
    size_t zx_cap, start_cap;
    /* Per-step scratch (host), for up to max_pairs pairs over max_rows
     * rows (the whole graph's, or a batch's). */
    int64_t max_pairs, max_rows;
    int64_t *pairs;           /* full graph: the epoch's (1 + K) n_pos x 2 */
    float *g;                 /* dL/ds per pair */
    int64_t *order, *start;   /* pair ends sorted by node (dot: the other end's
                                 node; MLP: the end's index); node offsets */
    float *sg;                /* dot: the pair's dL/ds, in the order of order */
    float *zh, *dzh;          /* host copies of z and dz (device backends) */
    double *sc;               /* held-out scores */
} link_t;

static int check_graph(const gnn_graph_t *g, const char *path)
{
    int rc = 0;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++)
        GNN_CHECK(g->link[s] && g->link_size[s] >= 0, GNN_EINVAL,
                  "%s has no held-out edges (--task link needs a graph file from gnn-dataset "
                  "split-edges)",
                  path);
    GNN_CHECK(g->link_size[GNN_LINK_VALID_POS] > 0 && g->link_size[GNN_LINK_TEST_POS] > 0,
              GNN_EINVAL, "%s: no validation or test edges held out", path);
fail:
    return rc;
}

/* The keys: valid_auc ... test_hits@K, valid_loss. */
static int configure(gnn_job_t *j, gnn_task_kind_t *own)
{
    int rc = 0;
    const char *list = j->o->hits ? j->o->hits : "20,50,100";
    int64_t hits[MAX_HITS];
    int nh = 0;
    const char *p = list;
    while (*p) {
        char *end;
        long long v = strtoll(p, &end, 10);
        GNN_CHECK(end != p && v >= 1 && v <= 1000000000 && (*end == ',' || !*end) && nh < MAX_HITS,
                  GNN_EUSAGE, "--hits %s: expected up to %d positive integers separated by commas",
                  list, MAX_HITS);
        for (int q = 0; q < nh; q++)
            GNN_CHECK(hits[q] != v, GNN_EUSAGE, "--hits %s: %lld is listed twice", list, v);
        hits[nh++] = v;
        p = *end ? end + 1 : end;
        GNN_CHECK(*p || !*end, GNN_EUSAGE, "--hits %s: ends with a comma", list);
    }
    GNN_CHECK(nh > 0, GNN_EUSAGE, "--hits: empty list");
    int per = M_HITS0 + nh, k = 0;
    static const char *const set_name[2] = {"valid", "test"};
    static const char *const base[3] = {"auc", "ap", "mrr"};
    for (int s = 0; s < 2; s++)
        for (int m = 0; m < per; m++, k++) {
            if (m < M_HITS0)
                snprintf(j->task_keys[k], sizeof j->task_keys[k], "%s_%s", set_name[s], base[m]);
            else
                snprintf(j->task_keys[k], sizeof j->task_keys[k], "%s_hits@%" PRId64,
                         set_name[s], hits[m - M_HITS0]);
            own->metric_keys[k] = j->task_keys[k];
        }
    snprintf(j->task_keys[k], sizeof j->task_keys[k], "valid_loss");
    own->metric_keys[k] = j->task_keys[k];
    own->n_metrics = k + 1;
    own->select = M_AUC;
    own->train = M_AP;
    own->test = per + M_AUC;
    own->stop = k;
    j->task_hits = nh;
    memcpy(j->task_hit_k, hits, sizeof hits);
fail:
    return rc;
}

/* Positives of one process: the stored edges u -> v (row v lists u), an
 * undirected graph's once (u < v); no self loops. */
static int positives_graph(gnn_job_t *j, link_t *t)
{
    int rc = 0;
    const gnn_graph_t *g = &j->g;
    const gnn_csr_t *a = &g->csr;
    t->n = a->n_rows;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        t->set[s] = g->link[s];
        t->set_n[s] = g->link_size[s];
    }
    t->Keval = g->link_neg_per_pos;
    int64_t m = 0;
    for (int pass = 0; pass < 2; pass++) {
        m = 0;
        for (int64_t v = 0; v < a->n_rows; v++)
            for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
                int64_t u = a->indices[e];
                if (u == v || (!g->directed && u > v)) continue;
                if (pass) {
                    t->pos[2 * m] = u;
                    t->pos[2 * m + 1] = v;
                }
                m++;
            }
        if (pass) break;
        GNN_CHECK(m > 0, GNN_EINVAL, "%s: no training edges", j->o->data);
        t->pos = gnn_malloc_array((size_t)m * 2, sizeof *t->pos);
        GNN_CHECK(t->pos, GNN_ENOMEM, "link prediction: %" PRId64 " training edges", m);
    }
    t->n_pos = t->total_pos = m;
fail:
    return rc;
}

/*
 * Over a partition directory: the held-out sets of meta.h5, the inverse
 * of its node map, and the training edges of the owned rows, each edge
 * with its destination's owner (an undirected edge once, as graph-file ids
 * u < v: the edges one process takes). This rank's part only; the caller
 * agrees the outcome.
 */
static int positives_part(gnn_job_t *j, link_t *t)
{
    int rc = 0;
    const gnn_dist_part_t *d = j->dist;
    GNN_TRY(gnn_partdir_read_link(j->o->data, GNN_PARTDIR_LINK_SETS | GNN_PARTDIR_NODE_MAP,
                                  &t->meta));
    GNN_CHECK(t->meta.link[0], GNN_EINVAL,
              "%s has no held-out edges (--task link needs a partition of a graph file from "
              "gnn-dataset split-edges)",
              j->o->data);
    GNN_CHECK(t->meta.link_size[GNN_LINK_VALID_POS] > 0 && t->meta.link_size[GNN_LINK_TEST_POS] > 0,
              GNN_EINVAL, "%s: no validation or test edges held out", j->o->data);
    t->n = d->n_global;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        t->set[s] = t->meta.link[s];
        t->set_n[s] = t->meta.link_size[s];
    }
    t->Keval = t->meta.neg_per_pos;
    t->first = d->part_start[d->rank];
    t->g2p = gnn_malloc_array((size_t)t->n + 1, sizeof *t->g2p);
    GNN_CHECK(t->g2p, GNN_ENOMEM, "link prediction: a map of %" PRId64 " nodes", t->n);
    for (int64_t p = 0; p < t->n; p++) t->g2p[t->meta.node_map[p]] = p;
    gnn_free(t->meta.node_map); /* the inverse is what is needed */
    t->meta.node_map = NULL;
    const gnn_csr_t *a = &d->csr;
    const int64_t *gid = d->gid;
    int directed = t->meta.directed > 0;
    int64_t m = 0;
    for (int pass = 0; pass < 2; pass++) {
        m = 0;
        for (int64_t v = 0; v < a->n_rows; v++)
            for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
                int64_t gu = gid[a->indices[e]], gv = gid[v];
                if (gu == gv || (!directed && gu > gv)) continue;
                if (pass) {
                    t->pos[2 * m] = gu;
                    t->pos[2 * m + 1] = gv;
                }
                m++;
            }
        if (pass) break;
        t->pos = gnn_malloc_array((size_t)m * 2 + 1, sizeof *t->pos);
        GNN_CHECK(t->pos, GNN_ENOMEM, "link prediction: %" PRId64 " training edges", m);
    }
    t->n_pos = m;
fail:
    return rc;
}

static int setup(gnn_job_t *j, int64_t *out_dim)
{
    int rc = 0;
    link_t *t = gnn_calloc(1, sizeof *t);
    GNN_CHECK(t, GNN_ENOMEM, "link prediction");
    j->task_state = t;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) t->meta.link_size[s] = -1;
    t->D = j->o->out_dim > 0 ? j->o->out_dim : 16;
    t->K = j->o->negatives;
    t->n_hits = j->task_hits;
    memcpy(t->hits, j->task_hit_k, sizeof t->hits);
    if (j->dist) {
        gnn_dist_part_t *d = j->dist;
        GNN_TRY(gnn_dist_agree(d->comm, positives_part(j, t)));
        GNN_MPI_TRY(MPI_Allreduce(&t->n_pos, &t->total_pos, 1, MPI_INT64_T, MPI_SUM, d->comm));
        GNN_CHECK(t->total_pos > 0, GNN_EINVAL, "%s: no training edges", j->o->data);
    } else {
        GNN_TRY(positives_graph(j, t));
    }
    /* A step scores the epoch's pairs over every node, or a batch's over
     * its seeds (each positive's two ends and its negatives' ends). */
    int mb = j->mode->minibatch, local = 0;
    int64_t steps_pos = mb && j->o->batch_size < t->n_pos ? j->o->batch_size : t->n_pos;
    int64_t np = (1 + t->K) * steps_pos, ns = 0;
    t->max_pairs = np;
    t->max_rows = mb ? (2 + t->K) * steps_pos : j->dist ? j->dist->n_owned : t->n;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) ns = t->set_n[s] > ns ? t->set_n[s] : ns;
    if (!mb) t->pairs = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->pairs);
    if (j->dist) t->gpairs = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->gpairs);
    t->g = gnn_malloc_array((size_t)np + 1, sizeof *t->g);
    if (mb) { /* batches sort their pair ends; full-graph epochs group them (step_loss) */
        t->order = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->order);
        t->sg = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->sg);
    }
    t->start = gnn_malloc_array((size_t)t->max_rows + 2, sizeof *t->start);
    t->start_cap = (size_t)t->max_rows + 2;
    t->sc = gnn_malloc_array((size_t)ns + 1, sizeof *t->sc);
    if (!((mb || t->pairs) && (!j->dist || t->gpairs) && t->g && (!mb || (t->order && t->sg)) &&
          t->start && t->sc))
        local = GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " pairs per step", np);
    if (local == 0 && mb) {
        t->items = gnn_malloc_array((size_t)t->n_pos + 1, sizeof *t->items);
        if (!t->items)
            local = GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " training edges", t->n_pos);
        else
            for (int64_t i = 0; i < t->n_pos; i++) t->items[i] = i;
    } else if (local == 0) { /* the pairs of an epoch: the positives (fixed), then negatives */
        memcpy(j->dist ? t->gpairs : t->pairs, t->pos, (size_t)t->n_pos * 2 * sizeof *t->pairs);
    }
    t->mlp = !strcmp(j->o->decoder, "mlp");
    if (local == 0 && t->mlp) {
        int64_t D = t->D;
        t->n_dec = D * D + 2 * D + 1;
        t->dec = gnn_malloc_array((size_t)t->n_dec, sizeof *t->dec);
        t->ddec = gnn_malloc_array((size_t)t->n_dec, sizeof *t->ddec);
        t->dh = gnn_malloc_array((size_t)(np * D) + 1, sizeof *t->dh);
        t->part = gnn_malloc_array((size_t)(DEC_BLOCKS * t->n_dec), sizeof *t->part);
        if (!(t->dec && t->ddec && t->dh && t->part))
            local = GNN_FAIL(GNN_ENOMEM, "link prediction: the MLP decoder over %" PRId64 " pairs",
                             np);
    }
    if (local == 0 && !gnn_be_host_memory(j->be) && (!j->dist || mb)) {
        int64_t rows = j->dist || t->max_rows > t->n ? t->max_rows : t->n;
        t->zh = gnn_malloc_array((size_t)(rows * t->D) + 1, sizeof *t->zh);
        t->dzh = gnn_malloc_array((size_t)(rows * t->D) + 1, sizeof *t->dzh);
        if (!(t->zh && t->dzh)) local = GNN_FAIL(GNN_ENOMEM, "link prediction: embeddings");
    }
    GNN_TRY(j->dist ? gnn_dist_agree(j->dist->comm, local) : local);
    *out_dim = t->D;
fail:
    return rc;
}

/* The training edges by index (mini-batches: the loader's items). */
static void train_seeds(const gnn_job_t *j, const int64_t **ids, int64_t *n, int64_t *total)
{
    const link_t *t = j->task_state;
    *ids = t ? t->items : NULL;
    *n = t ? t->n_pos : 0;
    *total = t ? t->total_pos : 0;
}

static const int64_t *seed_targets(const gnn_job_t *j)
{
    (void)j;
    return NULL;
}

static inline double dot(const float *a, const float *b, int64_t D)
{
    float s = 0.0f;
    for (int64_t k = 0; k < D; k++) s += a[k] * b[k];
    return s;
}

/* log(1 + e^x) without overflow. */
static inline double softplus(double x) { return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x)); }

static inline double sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + exp(-x)) : exp(x) / (1.0 + exp(x));
}

/* The MLP decoder's parameters within dec: W1 (D x D, row i for input i),
 * b1, w2 (D each), b2. */
#define W1(dec) (dec)
#define B1(dec, D) ((dec) + (D) * (D))
#define W2(dec, D) ((dec) + (D) * (D) + (D))
#define B2(dec, D) ((dec)[(D) * (D) + 2 * (D)])

/* The MLP's score of rows zu, zv; h (the product) and a (the hidden
 * layer, after ReLU) into the caller's D floats each. */
static float mlp_score(int64_t D, const float *dec, const float *zu, const float *zv, float *h,
                       float *a)
{
    const float *w1 = W1(dec), *b1 = B1(dec, D), *w2 = W2(dec, D);
    for (int64_t i = 0; i < D; i++) h[i] = zu[i] * zv[i];
    float s = B2(dec, D);
    for (int64_t k = 0; k < D; k++) a[k] = b1[k];
    for (int64_t i = 0; i < D; i++)
        for (int64_t k = 0; k < D; k++) a[k] += h[i] * w1[i * D + k];
    for (int64_t k = 0; k < D; k++) {
        a[k] = a[k] > 0.0f ? a[k] : 0.0f;
        s += w2[k] * a[k];
    }
    return s;
}

/* The score of the pair (u, v) under the task's decoder. */
static float pair_score(const link_t *t, const float *z, int64_t u, int64_t v, float *h, float *a)
{
    const float *zu = z + u * t->D, *zv = z + v * t->D;
    return t->mlp ? mlp_score(t->D, t->dec, zu, zv, h, a) : (float)dot(zu, zv, t->D);
}

/* The decoder's parameters from the model onto the host (MLP). */
static int fetch_decoder(gnn_job_t *j, link_t *t)
{
    if (!t->mlp) return 0;
    const float *p = gnn_model_params(j->model) + gnn_model_extra_offset(j->model);
    return gnn_be_download(j->be, t->dec, p, (size_t)t->n_dec * sizeof(float));
}

/* The host rows of z (copied from a device backend). */
static int host_z(gnn_job_t *j, link_t *t, const float *z, int64_t rows, const float **zh)
{
    if (!t->zh) {
        *zh = z;
        return 0;
    }
    *zh = t->zh;
    return gnn_be_download(j->be, t->zh, z, (size_t)(rows * t->D) * sizeof(float));
}

/*
 * The MLP decoder over this epoch's pairs: their losses (*lp, *ln: sums
 * over positives and negatives), per pair dh = dL/dh (D floats, h the
 * element-wise product), and the decoder's gradients onto the model's
 * gradient buffer. Pairs go in DEC_BLOCKS fixed blocks, each summed by
 * one thread in double; the blocks are then added in order.
 */
static int mlp_backward(gnn_job_t *j, link_t *t, const float *z, const int64_t *pairs,
                        int64_t NP, int64_t P, double wp, double wn, double *lp, double *ln)
{
    const int64_t D = t->D, nd = t->n_dec, per = (NP + DEC_BLOCKS - 1) / DEC_BLOCKS;
    const float *dec = t->dec, *w1 = W1(dec), *w2 = W2(dec, D);
    double bl[2 * DEC_BLOCKS];
    int fail = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(+ : fail)
    for (int64_t b = 0; b < DEC_BLOCKS; b++) {
        double sp = 0.0, sn = 0.0;
        double *pg = t->part + b * nd;
        memset(pg, 0, (size_t)nd * sizeof *pg);
        float *h = gnn_malloc_array((size_t)(2 * D), sizeof *h);
        if (!h) {
            fail++;
            continue;
        }
        float *a = h + D;
        int64_t end = (b + 1) * per < NP ? (b + 1) * per : NP;
        for (int64_t q = b * per; q < end; q++) {
            const float *zu = z + pairs[2 * q] * D, *zv = z + pairs[2 * q + 1] * D;
            double s = mlp_score(D, dec, zu, zv, h, a), g;
            if (q < P) {
                sp += softplus(-s);
                g = (sigmoid(s) - 1.0) * wp;
            } else {
                sn += softplus(s);
                g = sigmoid(s) * wn;
            }
            t->g[q] = (float)g;
            float *dh = t->dh + q * D;
            for (int64_t i = 0; i < D; i++) dh[i] = 0.0f;
            for (int64_t k = 0; k < D; k++) {
                if (a[k] <= 0.0f) continue;
                double dak = g * (double)w2[k];
                pg[D * D + D + k] += g * (double)a[k]; /* dw2 */
                pg[D * D + k] += dak;                   /* db1 */
                for (int64_t i = 0; i < D; i++) {
                    pg[i * D + k] += (double)h[i] * dak; /* dW1 */
                    dh[i] += (float)(dak * (double)w1[i * D + k]);
                }
            }
            pg[D * D + 2 * D] += g; /* db2 */
        }
        bl[2 * b] = sp;
        bl[2 * b + 1] = sn;
        gnn_free(h);
    }
    if (fail) return GNN_FAIL(GNN_ENOMEM, "link prediction: MLP decoder scratch");
    *lp = *ln = 0.0;
    for (int b = 0; b < DEC_BLOCKS; b++) { /* in order: the same bits for any thread count */
        *lp += bl[2 * b];
        *ln += bl[2 * b + 1];
    }
    for (int64_t c = 0; c < nd; c++) {
        double s = 0.0;
        for (int64_t b = 0; b < DEC_BLOCKS; b++) s += t->part[b * nd + c];
        t->ddec[c] = (float)s;
    }
    float *gr = gnn_model_grads(j->model) + gnn_model_extra_offset(j->model);
    return gnn_be_upload(j->be, gr, t->ddec, (size_t)nd * sizeof(float));
}

/* The key of the negatives of epoch `epoch` of a run whose seed is
 * --seed + run. */
static uint64_t neg_key(uint64_t run_seed, uint64_t epoch)
{
    return gnn_rng_mix64(gnn_rng_mix64(run_seed) ^ (0x6e656773ull + epoch));
}

/* Negatives k0 .. k0 + kn - 1 of the positive (u, v) under key into w:
 * uniform over the n nodes, from the positive's own counter stream. */
static void draw_negatives_from(uint64_t key, int64_t u, int64_t v, int64_t k0, int64_t kn,
                                uint64_t n, int64_t *w)
{
    uint64_t ekey =
        gnn_rng_mix64(key ^ gnn_rng_mix64((uint64_t)u) ^ gnn_rng_mix64((uint64_t)v + 0x5bd1e995ull));
    for (int64_t k = 0; k < kn; k++) {
        uint64_t next = (uint64_t)(k0 + k) << 3;
        w[k] = (int64_t)gnn_rng_below(ekey, &next, n);
    }
}

/* The sampler's id of node x (a graph-file id over a partition directory:
 * its local id in the part, or n_all + its partition id beyond it). */
static inline int64_t sampler_id(const gnn_job_t *j, const link_t *t, int64_t x)
{
    const gnn_dist_part_t *d = j->dist;
    if (!d) return x;
    int64_t pid = t->g2p[x], r = pid - t->first;
    if (r >= 0 && r < d->n_owned) return r;
    int64_t l = gnn_dist_pairs_find(d->halo_index, d->n_all - d->n_owned, pid);
    return l >= 0 ? l : d->n_all + pid;
}

/* The position of node x among the batch's seeds, added when new. */
static inline int64_t seed_of(gnn__idmap_t *map, int64_t x, gnn_loader_edges_t *out)
{
    int64_t at = gnn__idmap_get_or_put(map, x, out->n_seeds);
    if (at == out->n_seeds) out->seeds[out->n_seeds++] = x;
    return at;
}

/* The loss term of a pair scored s (softplus(-s) for a positive,
 * softplus(s) for a negative) and into *dl its derivative by s, from one
 * exponential. */
static inline double pair_term(double s, int pos, double *dl)
{
    double e = exp(-fabs(s)), l = log1p(e), sig = s >= 0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
    if (pos) {
        *dl = sig - 1.0;
        return l + (s < 0 ? -s : 0.0);
    }
    *dl = sig;
    return l + (s > 0 ? s : 0.0);
}

#define PAIR_PREFETCH 8 /* pairs ahead whose rows are prefetched */

/* d += pair q's gradient at an end whose other end's row is o: g times it
 * (dot), dh times it element-wise (MLP). */
static inline void add_end(const link_t *t, float *d, const float *o, int64_t q)
{
    const int64_t D = t->D;
    if (t->mlp) {
        const float *dh = t->dh + q * D;
        for (int64_t k = 0; k < D; k++) d[k] += dh[k] * o[k];
    } else {
        float gq = t->g[q];
        for (int64_t k = 0; k < D; k++) d[k] += gq * o[k];
    }
}

/* Group the pair ends of a full-graph epoch by row (pairs: the P
 * positives, then K negatives each whose first end is its positive's):
 * the fixed ends once (the first call), the drawn ends every epoch, each
 * group in pair order; threads split the rows. */
static int group_epoch_ends(link_t *t, const int64_t *pairs, int64_t nrows, int64_t NP, int64_t P)
{
    if (!t->fx_start) {
        int64_t rows = 0;
        for (int64_t e = 0; e < 2 * NP; e++)
            if (e < 2 * P || !(e & 1)) rows = pairs[e] + 1 > rows ? pairs[e] + 1 : rows;
        int64_t nf = 2 * P + (NP - P);
        t->fx_start = gnn_calloc((size_t)rows + 2, sizeof *t->fx_start);
        t->fx_end = gnn_malloc_array((size_t)nf + 1, sizeof *t->fx_end);
        if (!t->fx_start || !t->fx_end) return GNN_FAIL(GNN_ENOMEM, "link prediction: pair ends");
        t->fx_rows = rows;
        for (int64_t e = 0; e < 2 * NP; e++)
            if (e < 2 * P || !(e & 1)) t->fx_start[pairs[e] + 2]++;
        for (int64_t v = 0; v < rows; v++) t->fx_start[v + 2] += t->fx_start[v + 1];
        for (int64_t e = 0; e < 2 * NP; e++)
            if (e < 2 * P || !(e & 1)) t->fx_end[t->fx_start[pairs[e] + 1]++] = e;
    }
    if ((size_t)nrows + 2 > t->rd_cap) {
        gnn_free(t->rd_start);
        t->rd_start = gnn_malloc_array((size_t)nrows + 2, sizeof *t->rd_start);
        t->rd_cap = t->rd_start ? (size_t)nrows + 2 : 0;
        if (!t->rd_start) return GNN_FAIL(GNN_ENOMEM, "link prediction: pair ends");
    }
    if (!t->rd_pair) {
        t->rd_pair = gnn_malloc_array((size_t)(NP - P) + 1, sizeof *t->rd_pair);
        if (!t->rd_pair) return GNN_FAIL(GNN_ENOMEM, "link prediction: pair ends");
    }
    int64_t *st = t->rd_start;
    memset(st, 0, ((size_t)nrows + 2) * sizeof *st);
#pragma omp parallel
    { /* each thread counts, then places, the ends of its range of rows */
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t lo = nrows * id / nt, hi = nrows * (id + 1) / nt;
        for (int64_t q = P; q < NP; q++) {
            int64_t w = pairs[2 * q + 1];
            if (w >= lo && w < hi) st[w + 2]++;
        }
#pragma omp barrier
#pragma omp single
        for (int64_t v = 0; v < nrows; v++) st[v + 2] += st[v + 1];
        for (int64_t q = P; q < NP; q++) {
            int64_t w = pairs[2 * q + 1];
            if (w >= lo && w < hi) t->rd_pair[st[w + 1]++] = q;
        }
    }
    return 0;
}

/*
 * The loss of one step over NP pairs (rows of z, nrows of them; the first
 * P positives, then K negatives each) and its gradient dz (nrows x D,
 * host). Over the whole graph the rows are the nodes; over a batch, its
 * seeds. epoch: the pairs are a full-graph epoch's (its fixed ends are
 * grouped once).
 */
static int step_loss(gnn_job_t *j, link_t *t, const float *z, int64_t nrows, const int64_t *pairs,
                     int64_t NP, int64_t P, int64_t Pnorm, int epoch, double *loss, float *dz)
{
    int rc = 0;
    const int64_t D = t->D, K = t->K;
    double lp = 0.0, ln = 0.0;
    const double wp = Pnorm ? 1.0 / (double)Pnorm : 0.0,
                 wn = Pnorm && K ? 1.0 / ((double)Pnorm * (double)K) : 0.0;
    if (!t->mlp) {
        /* The loss summed in fixed blocks of pairs, then the blocks in
         * order: the same bits for any thread count. */
        double bl[2 * DEC_BLOCKS];
        const int64_t per = (NP + DEC_BLOCKS - 1) / DEC_BLOCKS;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t b = 0; b < DEC_BLOCKS; b++) {
            double sp = 0.0, sn = 0.0, dl;
            int64_t end = (b + 1) * per < NP ? (b + 1) * per : NP;
            for (int64_t q = b * per; q < end; q++) {
                if (q + PAIR_PREFETCH < end) {
                    __builtin_prefetch(z + pairs[2 * (q + PAIR_PREFETCH)] * D);
                    __builtin_prefetch(z + pairs[2 * (q + PAIR_PREFETCH) + 1] * D);
                }
                double s = dot(z + pairs[2 * q] * D, z + pairs[2 * q + 1] * D, D);
                if (q < P) {
                    sp += pair_term(s, 1, &dl);
                    t->g[q] = (float)(dl * wp);
                } else {
                    sn += pair_term(s, 0, &dl);
                    t->g[q] = (float)(dl * wn);
                }
            }
            bl[2 * b] = sp;
            bl[2 * b + 1] = sn;
        }
        for (int b = 0; b < DEC_BLOCKS; b++) {
            lp += bl[2 * b];
            ln += bl[2 * b + 1];
        }
    } else {
        GNN_TRY(fetch_decoder(j, t));
        GNN_TRY(mlp_backward(j, t, z, pairs, NP, P, wp, wn, &lp, &ln));
    }
    *loss = lp * wp + ln * wn;
    if (epoch) {
        GNN_TRY(group_epoch_ends(t, pairs, nrows, NP, P));
        /* dz[v] = sum over v's fixed ends, then its drawn ends, of g times
         * the other end's row (MLP: dh times it). */
        const int64_t *fs = t->fx_start, *fe = t->fx_end, *rs = t->rd_start, *rp = t->rd_pair;
        const int64_t nfx = fs[t->fx_rows], nrd = NP - P;
#pragma omp parallel for schedule(dynamic, 256)
        for (int64_t v = 0; v < nrows; v++) {
            float *d = dz + v * D;
            for (int64_t k = 0; k < D; k++) d[k] = 0.0f;
            int64_t f0 = v < t->fx_rows ? fs[v] : 0, f1 = v < t->fx_rows ? fs[v + 1] : 0;
            for (int64_t i = f0; i < f1; i++) {
                /* Three random reads an end (its pair's other end, the
                 * gradient, that row): fetched ahead, across rows. */
                if (i + 2 * PAIR_PREFETCH < nfx) {
                    int64_t e2 = fe[i + 2 * PAIR_PREFETCH];
                    __builtin_prefetch(&pairs[e2 ^ 1]);
                    __builtin_prefetch(&t->g[e2 >> 1]);
                }
                if (i + PAIR_PREFETCH < nfx)
                    __builtin_prefetch(z + pairs[fe[i + PAIR_PREFETCH] ^ 1] * D);
                int64_t e = fe[i];
                add_end(t, d, z + pairs[e ^ 1] * D, e >> 1);
            }
            for (int64_t i = rs[v]; i < rs[v + 1]; i++) {
                if (i + 2 * PAIR_PREFETCH < nrd) {
                    int64_t q2 = rp[i + 2 * PAIR_PREFETCH];
                    __builtin_prefetch(&pairs[2 * q2]);
                    __builtin_prefetch(&t->g[q2]);
                }
                if (i + PAIR_PREFETCH < nrd)
                    __builtin_prefetch(z + pairs[2 * rp[i + PAIR_PREFETCH]] * D);
                add_end(t, d, z + pairs[2 * rp[i]] * D, rp[i]);
            }
        }
        goto fail;
    }
    /* Pair ends by row (counting sort, pair order kept within a row). */
    int64_t *start = t->start;
    memset(start, 0, (size_t)(nrows + 2) * sizeof *start);
    for (int64_t e = 0; e < 2 * NP; e++) start[pairs[e] + 2]++;
    for (int64_t v = 0; v < nrows; v++) start[v + 2] += start[v + 1];
    /* The dot decoder's gather then reads what it needs in order: the
     * other end and the pair's gradient. */
    if (t->mlp) {
        for (int64_t e = 0; e < 2 * NP; e++) t->order[start[pairs[e] + 1]++] = e;
    } else {
        for (int64_t e = 0; e < 2 * NP; e++) {
            int64_t at = start[pairs[e] + 1]++;
            t->order[at] = pairs[e ^ 1];
            t->sg[at] = t->g[e >> 1];
        }
    }
    /* dz[v] = sum over v's pair ends of g * z[other end] (MLP: dh * z). */
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t v = 0; v < nrows; v++) {
        float *d = dz + v * D;
        for (int64_t k = 0; k < D; k++) d[k] = 0.0f;
        if (t->mlp) {
            for (int64_t i = start[v]; i < start[v + 1]; i++) {
                int64_t e = t->order[i];
                const float *o = z + pairs[e ^ 1] * D, *dh = t->dh + (e >> 1) * D;
                for (int64_t k = 0; k < D; k++) d[k] += dh[k] * o[k];
            }
            continue;
        }
        for (int64_t i = start[v]; i < start[v + 1]; i++) {
            const float *o = z + t->order[i] * D;
            float gq = t->sg[i];
            for (int64_t k = 0; k < D; k++) d[k] += gq * o[k];
        }
    }
fail:
    return rc;
}

/* This epoch's negatives of the positives held here into pairs (after
 * the n_pos positives: K per positive, in order). */
static void epoch_negatives(const gnn_job_t *j, const link_t *t, int64_t *pairs)
{
    const int64_t P = t->n_pos, K = t->K;
    uint64_t key = neg_key((uint64_t)j->o->seed + (uint64_t)j->ck.run, (uint64_t)j->ck.epoch);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < P; i++) {
        int64_t u = t->pos[2 * i], v = t->pos[2 * i + 1], w[64];
        for (int64_t k0 = 0; k0 < K; k0 += 64) { /* in chunks: K is unbounded */
            int64_t kn = K - k0 < 64 ? K - k0 : 64;
            draw_negatives_from(key, u, v, k0, kn, (uint64_t)t->n, w);
            for (int64_t k = 0; k < kn; k++) {
                int64_t q = P + i * K + k0 + k;
                pairs[2 * q] = u;
                pairs[2 * q + 1] = w[k];
            }
        }
    }
}

/* ---- Over a partition directory ------------------------------------------------ */

/* Start a step's table of rows: the owned ones, then far ends added by
 * step_row, up to `ends` of them. */
static int step_begin(link_t *t, int64_t ends)
{
    if (gnn__idmap_reserve(&t->rmap, ends) < 0)
        return GNN_FAIL(GNN_ENOMEM, "link prediction: a map of %" PRId64 " ends", ends);
    for (uint64_t i = 0; i <= t->rmap.mask; i++) t->rmap.slots[i].key = -1;
    t->rmap.size = 0;
    t->n_remote = 0;
    if (ends > t->remote_cap) {
        gnn_free(t->remote);
        t->remote = gnn_malloc_array((size_t)ends + 1, sizeof *t->remote);
        t->remote_cap = t->remote ? ends : 0;
        if (!t->remote) return GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " ends", ends);
    }
    return 0;
}

/* The row of graph-file node gid in the step's table: its owned row, or
 * n_owned + its place among the far ends (added when new). */
static inline int64_t step_row(link_t *t, int64_t n_owned, int64_t gid)
{
    int64_t pid = t->g2p[gid], r = pid - t->first;
    if (r >= 0 && r < n_owned) return r;
    int64_t at = gnn__idmap_get_or_put(&t->rmap, pid, t->n_remote);
    if (at == t->n_remote) t->remote[t->n_remote++] = pid;
    return n_owned + at;
}

/* The step's table on the host: rows (owned first) of z, the far ends'
 * fetched from their owners (collective; local: this rank's failure so
 * far, agreed first). *zx: owned rows then far ends, D floats each. */
static int step_table(gnn_job_t *j, link_t *t, const float *z, int local)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    const int64_t D = t->D, n = d->n_owned, rows = n + t->n_remote;
    size_t need = ((size_t)rows * (size_t)D + 1) * sizeof(float);
    if (local == 0 && need > t->zx_cap) {
        gnn_free(t->zx);
        gnn_free(t->dzx);
        t->zx = gnn_alloc_large(need);
        t->dzx = gnn_alloc_large(need);
        t->zx_cap = t->zx && t->dzx ? need : 0;
        if (!t->zx_cap) local = GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " rows", rows);
    }
    if (local == 0 && (size_t)rows + 2 > t->start_cap) {
        gnn_free(t->start);
        t->start = gnn_malloc_array((size_t)rows + 2, sizeof *t->start);
        t->start_cap = t->start ? (size_t)rows + 2 : 0;
        if (!t->start) local = GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " rows", rows);
    }
    if (local == 0)
        local = gnn_be_download(j->be, t->zx, z, (size_t)(n * D) * sizeof(float));
    GNN_TRY(gnn_dist_agree(d->comm, local));
    GNN_TRY(gnn_dist_rows_plan(d, t->remote, t->n_remote, &t->rows));
    GNN_TRY(gnn_dist_rows_get(d, &t->rows, t->zx, D, t->zx + n * D));
fail:
    return rc;
}

/*
 * A full-graph step over a partition directory: this rank's training edges
 * with their negatives (drawn as one process draws them, over the whole
 * graph's ids), the far ends' embeddings fetched from their owners, the
 * loss of the pairs held here over all ranks' positives (so the ranks'
 * losses and gradients sum to one process's), and the far ends' gradients
 * added into their owners' rows. *count is the total of positives, which
 * the mode divides by.
 */
static int full_loss_part(gnn_job_t *j, const float *logits, double *loss, float *dlogits,
                          int64_t *count)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    link_t *t = j->task_state;
    const int64_t P = t->n_pos, K = t->K, NP = (1 + K) * P, n = d->n_owned, D = t->D;
    epoch_negatives(j, t, t->gpairs); /* after the positives, copied once at set-up */
    int local = step_begin(t, 2 * NP);
    for (int64_t e = 0; e < 2 * NP && local == 0; e++) t->pairs[e] = step_row(t, n, t->gpairs[e]);
    GNN_TRY(step_table(j, t, logits, local));
    const int64_t rows = n + t->n_remote;
    local = step_loss(j, t, t->zx, rows, t->pairs, NP, P, t->total_pos, 1, loss, t->dzx);
    GNN_TRY(gnn_dist_agree(d->comm, local));
    GNN_TRY(gnn_dist_rows_put(d, &t->rows, t->dzx + n * D, D, t->dzx));
    GNN_TRY(gnn_dist_agree(d->comm,
                           gnn_be_upload(j->be, dlogits, t->dzx, (size_t)(n * D) * sizeof(float))));
    *count = t->total_pos;
fail:
    return rc;
}

static int full_loss(gnn_job_t *j, const float *logits, int64_t n, double *loss, float *dlogits,
                     int64_t *count)
{
    int rc = 0;
    link_t *t = j->task_state;
    const int64_t P = t->n_pos, K = t->K;
    const float *z;
    (void)n;
    if (j->dist) return full_loss_part(j, logits, loss, dlogits, count);
    GNN_TRY(host_z(j, t, logits, t->n, &z));
    float *dz = t->dzh ? t->dzh : dlogits;
    /* This epoch's pairs: the positives (fixed, in place), then K
     * negatives of each. */
    epoch_negatives(j, t, t->pairs);
    GNN_TRY(step_loss(j, t, z, t->n, t->pairs, (1 + K) * P, P, P, 1, loss, dz));
    *count = P;
    if (t->dzh)
        GNN_TRY(gnn_be_upload(j->be, dlogits, t->dzh, (size_t)(t->n * t->D) * sizeof(float)));
fail:
    return rc;
}

/*
 * An edge batch (the loader's hook, on its worker): the positives of the
 * n training edges `items`, each with its K negatives drawn as the whole
 * graph's epoch draws them; the seeds are their distinct ends in order of
 * first appearance, the pairs positions into them (positives first), and
 * the positives are what the sampler leaves out.
 */
/*
 * Every rank's share of the current edge batch (graph-file id pairs),
 * this rank's n mine among them, into *all (*n_all pairs): over a
 * partition directory every rank samples around the whole batch in the
 * same step, so each leaves all of the batch's edges out. local: this
 * rank's failure so far (agreed here). Collective over the sampling's
 * communicator.
 */
static int gather_batch(gnn_job_t *j, const int64_t *mine, int64_t n, int local, int64_t **all,
                        int64_t *n_all)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
    const int R = d->size;
    int64_t *cnt = gnn_malloc_array((size_t)R + 1, sizeof *cnt);
    int *c = gnn_malloc_array(2 * (size_t)R + 1, sizeof *c);
    if (local == 0 && (!cnt || !c)) local = GNN_FAIL(GNN_ENOMEM, "edge batch");
    /* Every step agreed before the next collective: all ranks go on or
     * all stop here. */
    GNN_TRY(gnn_dist_agree(comm, local));
    GNN_MPI_TRY(MPI_Allgather(&n, 1, MPI_INT64_T, cnt, 1, MPI_INT64_T, comm));
    int64_t total = 0;
    for (int r = 0; r < R; r++) total += 2 * cnt[r];
    GNN_CHECK(total <= INT_MAX, GNN_ERANGE, "an edge batch of %" PRId64 " edges", total / 2);
    for (int r = 0, at = 0; r < R; r++) {
        c[r] = (int)(2 * cnt[r]);
        c[R + r] = at;
        at += c[r];
    }
    *all = gnn_malloc_array((size_t)total + 1, sizeof **all);
    GNN_TRY(gnn_dist_agree(
        comm, *all ? 0 : GNN_FAIL(GNN_ENOMEM, "an edge batch of %" PRId64 " edges", total / 2)));
    GNN_MPI_TRY(MPI_Allgatherv(mine, (int)(2 * n), MPI_INT64_T, *all, c, c + R, MPI_INT64_T, comm));
    *n_all = total / 2;
fail:
    gnn_free(cnt);
    gnn_free(c);
    return rc;
}

/*
 * An edge batch (the loader's hook, on its worker): the positives of the
 * n training edges `items`, each with its K negatives drawn as the whole
 * graph's epoch draws them; the seeds are their distinct ends in order of
 * first appearance, the pairs positions into them (positives first), and
 * the batch's edges (over a partition directory, every rank's share of
 * it) are what the sampler leaves out, here and in the rows this rank
 * draws for others.
 */
static int edge_seeds(void *ctx, const int64_t *items, int64_t n, uint64_t seed, uint64_t epoch,
                      gnn_loader_edges_t *out)
{
    int rc = 0;
    gnn_job_t *j = ctx;
    const link_t *t = j->task_state;
    const int64_t K = t->K, NP = (1 + K) * n;
    gnn__idmap_t map = {0};
    int64_t *w = gnn_malloc_array((size_t)K + 1, sizeof *w), *all = NULL, n_all = n;
    int64_t *mine = gnn_malloc_array((size_t)(2 * n) + 1, sizeof *mine);
    out->seeds = gnn_malloc_array((size_t)(NP + n) + 1, sizeof *out->seeds);
    out->pairs = gnn_malloc_array((size_t)(2 * NP) + 1, sizeof *out->pairs);
    int local = w && mine && out->seeds && out->pairs && gnn__idmap_reserve(&map, NP + n) == 0
                    ? 0
                    : GNN_FAIL(GNN_ENOMEM, "edge batch of %" PRId64 " edges", n);
    for (int64_t i = 0; i < n && local == 0; i++) {
        mine[2 * i] = t->pos[2 * items[i]];
        mine[2 * i + 1] = t->pos[2 * items[i] + 1];
    }
    if (j->dist) {
        GNN_TRY(gather_batch(j, mine, n, local, &all, &n_all));
        local = gnn_dist_set_excluded(j->dist, all, n_all);
    }
    const int64_t *ex = j->dist ? all : mine;
    out->excl = local < 0 ? NULL : gnn_malloc_array((size_t)(2 * n_all) + 1, sizeof *out->excl);
    if (local == 0 && !out->excl)
        local = GNN_FAIL(GNN_ENOMEM, "edge batch of %" PRId64 " edges", n_all);
    /* Over ranks agreed: a failure here must stop every rank before the
     * sampler's collective draws. */
    GNN_TRY(j->dist ? gnn_dist_agree(j->dist->fetch_comm != MPI_COMM_NULL ? j->dist->fetch_comm
                                                                          : j->dist->comm,
                                     local)
                    : local);
    for (int64_t e = 0; e < 2 * n_all; e++) out->excl[e] = sampler_id(j, t, ex[e]);
    out->n_excl = n_all;
    /* The run's key, not the loader's seed (which differs by rank). */
    const uint64_t key = neg_key((uint64_t)j->o->seed + (uint64_t)j->ck.run, (uint64_t)j->ck.epoch);
    (void)seed, (void)epoch;
    for (int64_t i = 0; i < n; i++) {
        out->pairs[2 * i] = seed_of(&map, sampler_id(j, t, mine[2 * i]), out);
        out->pairs[2 * i + 1] = seed_of(&map, sampler_id(j, t, mine[2 * i + 1]), out);
    }
    for (int64_t i = 0; i < n; i++) {
        draw_negatives_from(key, mine[2 * i], mine[2 * i + 1], 0, K, (uint64_t)t->n, w);
        for (int64_t k = 0; k < K; k++) {
            int64_t q = n + i * K + k;
            out->pairs[2 * q] = out->pairs[2 * i];
            out->pairs[2 * q + 1] = seed_of(&map, sampler_id(j, t, w[k]), out);
        }
    }
    out->n_pairs = NP;
fail:
    gnn__idmap_free(&map);
    gnn_free(w);
    gnn_free(mine);
    gnn_free(all);
    return rc;
}

/*
 * This epoch's edge batches, the same for any number of ranks: training
 * edge (u, v) goes to batch below(h, B) of the ceil(edges / --batch-size)
 * batches, h a hash of the run's key, the epoch and the edge's graph-file
 * ids, so each rank can place its own edges; a batch holds its edges in
 * the order they are held here. Batch sizes vary around --batch-size.
 */
static int epoch_batches(gnn_job_t *j, const int64_t **items, const int64_t **starts,
                         int64_t *n_batches)
{
    link_t *t = j->task_state;
    const int64_t B = j->o->batch_size, P = t->n_pos;
    int64_t nb = (t->total_pos + B - 1) / B;
    nb = nb > 0 ? nb : 1;
    if (nb != t->ep_nb || !t->ep_items) {
        gnn_free(t->ep_starts);
        t->ep_starts = gnn_malloc_array((size_t)nb + 2, sizeof *t->ep_starts);
        if (!t->ep_items) t->ep_items = gnn_malloc_array((size_t)P + 1, sizeof *t->ep_items);
        if (!t->ep_batch) t->ep_batch = gnn_malloc_array((size_t)P + 1, sizeof *t->ep_batch);
        if (!t->ep_starts || !t->ep_items || !t->ep_batch)
            return GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " batches", nb);
        t->ep_nb = nb;
    }
    uint64_t key = gnn_rng_mix64(gnn_rng_mix64(((uint64_t)j->o->seed + (uint64_t)j->ck.run) ^
                                               0x6261746368ull) ^
                                 (uint64_t)j->ck.epoch);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < P; i++) {
        uint64_t h = gnn_rng_mix64(key ^ gnn_rng_mix64((uint64_t)t->pos[2 * i]) ^
                                   gnn_rng_mix64((uint64_t)t->pos[2 * i + 1] + 0x5bd1e995ull));
        uint64_t next = 0;
        t->ep_batch[i] = (int64_t)gnn_rng_below(h, &next, (uint64_t)nb);
    }
    int64_t *st = t->ep_starts;
    memset(st, 0, ((size_t)nb + 2) * sizeof *st);
    for (int64_t i = 0; i < P; i++) st[t->ep_batch[i] + 2]++;
    for (int64_t b = 0; b < nb; b++) st[b + 2] += st[b + 1];
    for (int64_t i = 0; i < P; i++) t->ep_items[st[t->ep_batch[i] + 1]++] = i;
    *items = t->ep_items;
    *starts = t->ep_starts;
    *n_batches = nb;
    return 0;
}

/* Room in the step's host scratch for np pairs over rows rows (a batch
 * larger than --batch-size edges). */
static int step_room(link_t *t, int64_t np, int64_t rows, int j_dist)
{
    if (np > t->max_pairs) {
        int64_t D = t->D;
        gnn_free(t->g);
        gnn_free(t->order);
        gnn_free(t->sg);
        t->g = gnn_malloc_array((size_t)np + 1, sizeof *t->g);
        t->order = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->order);
        t->sg = gnn_malloc_array((size_t)np * 2 + 1, sizeof *t->sg);
        int ok = t->g && t->order && t->sg;
        if (t->mlp) {
            gnn_free(t->dh);
            t->dh = gnn_malloc_array((size_t)(np * D) + 1, sizeof *t->dh);
            ok = ok && t->dh;
        }
        t->max_pairs = ok ? np : 0;
        if (!ok) return GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " pairs", np);
    }
    if (rows > t->max_rows) {
        int64_t D = t->D;
        gnn_free(t->start);
        t->start = gnn_malloc_array((size_t)rows + 2, sizeof *t->start);
        t->start_cap = t->start ? (size_t)rows + 2 : 0;
        int ok = t->start != NULL;
        if (t->zh) { /* evaluation reads every node's row through it too */
            int64_t zr = rows > t->n || j_dist ? rows : t->n;
            gnn_free(t->zh);
            gnn_free(t->dzh);
            t->zh = gnn_malloc_array((size_t)(zr * D) + 1, sizeof *t->zh);
            t->dzh = gnn_malloc_array((size_t)(zr * D) + 1, sizeof *t->dzh);
            ok = ok && t->zh && t->dzh;
        }
        t->max_rows = ok ? rows : 0;
        if (!ok) return GNN_FAIL(GNN_ENOMEM, "link prediction: %" PRId64 " rows", rows);
    }
    return 0;
}

/* The loss of an edge batch over its seeds' rows. */
static int batch_loss(gnn_job_t *j, const float *logits, const gnn_loader_batch_t *b,
                      const int64_t *y, int64_t ns, double *loss, float *dlogits)
{
    int rc = 0;
    link_t *t = j->task_state;
    const float *z;
    (void)y;
    GNN_CHECK((b->edges.pairs || b->n_items == 0) && b->edges.n_seeds == ns, GNN_EINVAL,
              "link prediction: batch %" PRId64 " is not an edge batch", b->index);
    GNN_TRY(step_room(t, b->edges.n_pairs, ns, j->dist != NULL));
    GNN_TRY(host_z(j, t, logits, ns, &z));
    float *dz = t->dzh ? t->dzh : dlogits;
    GNN_TRY(step_loss(j, t, z, ns, b->edges.pairs, b->edges.n_pairs, b->n_items, b->n_items, 0,
                      loss, dz));
    if (t->dzh) GNN_TRY(gnn_be_upload(j->be, dlogits, t->dzh, (size_t)(ns * t->D) * sizeof(float)));
fail:
    return rc;
}

/* Rows of a batch's output: every seed of a full batch. */
static int64_t batch_rows(const gnn_job_t *j)
{
    const link_t *t = j->task_state;
    return t->max_rows;
}

/* ---- Metrics ---------------------------------------------------------------- */

typedef struct {
    double s;
    int pos;
} scored_t;

static int by_score_desc(const void *a, const void *b)
{
    double x = ((const scored_t *)a)->s, y = ((const scored_t *)b)->s;
    return x > y ? -1 : x < y ? 1 : 0;
}

/* AUC and AP of np positive and nn negative scores. */
static int auc_ap(const double *ps, int64_t np, const double *ns, int64_t nn, double *auc,
                  double *ap)
{
    scored_t *a = gnn_malloc_array((size_t)(np + nn) + 1, sizeof *a);
    if (!a) return GNN_FAIL(GNN_ENOMEM, "link metrics");
    for (int64_t i = 0; i < np; i++) a[i] = (scored_t){ps[i], 1};
    for (int64_t i = 0; i < nn; i++) a[np + i] = (scored_t){ns[i], 0};
    qsort(a, (size_t)(np + nn), sizeof *a, by_score_desc);
    /* Down the ranking, one group of equal scores at a time. */
    double tp = 0, fp = 0, pairs = 0, sum_ap = 0, prev_recall = 0;
    for (int64_t i = 0; i < np + nn;) {
        int64_t j = i;
        double gp = 0, gn = 0;
        do { /* element i always: the scores are finite (score_set checks) */
            gp += a[j].pos;
            gn += !a[j].pos;
            j++;
        } while (j < np + nn && a[j].s == a[i].s);
        /* Positives of the group beat the negatives below (fp so far are
         * above): each pairs with the negatives after it, ties half. */
        pairs += gp * ((double)nn - fp - gn) + 0.5 * gp * gn;
        tp += gp;
        fp += gn;
        double recall = tp / (double)np;
        sum_ap += (recall - prev_recall) * (tp / (tp + fp));
        prev_recall = recall;
        i = j;
    }
    *auc = np && nn ? pairs / ((double)np * (double)nn) : NAN;
    *ap = np ? sum_ap : NAN;
    gnn_free(a);
    return 0;
}

static int by_double_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y ? 1 : 0;
}

/*
 * The scores of held-out set ps and its negatives over a partition
 * directory (logits: the owned rows, on the backend): rank r scores the
 * r-th of R equal slices of the positives, with their negatives, fetching
 * the ends held elsewhere; every rank then gathers all the scores in set
 * order, so the metrics are computed from what one process scores.
 * Collective.
 */
static int score_set_part(gnn_job_t *j, link_t *t, const float *logits, int ps, double *spos,
                          double *sneg)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    const int R = d->size, r = d->rank;
    const int64_t np = t->set_n[ps], K = t->Keval, D = t->D, n = d->n_owned;
    const int64_t lo = np * r / R, hi = np * (r + 1) / R, m = hi - lo;
    const int64_t *pp = t->set[ps], *pn = t->set[ps + 1];
    int *cnt = gnn_calloc((size_t)R * 4, sizeof *cnt);
    int64_t *ends = gnn_malloc_array((size_t)(2 * m * (1 + K)) + 1, sizeof *ends);
    double *mine = gnn_malloc_array((size_t)(m * (1 + K)) + 1, sizeof *mine);
    int local = cnt && ends && mine ? 0 : GNN_FAIL(GNN_ENOMEM, "link metrics: %" PRId64 " pairs", m);
    if (local == 0) local = step_begin(t, 2 * m * (1 + K));
    for (int64_t i = 0; i < m && local == 0; i++) {
        ends[2 * i] = step_row(t, n, pp[2 * (lo + i)]);
        ends[2 * i + 1] = step_row(t, n, pp[2 * (lo + i) + 1]);
    }
    for (int64_t i = 0; i < m * K && local == 0; i++) {
        ends[2 * (m + i)] = step_row(t, n, pn[2 * (lo * K + i)]);
        ends[2 * (m + i) + 1] = step_row(t, n, pn[2 * (lo * K + i) + 1]);
    }
    GNN_TRY(step_table(j, t, logits, local));
    local = 0;
#pragma omp parallel reduction(+ : local)
    {
        float *h = gnn_malloc_array((size_t)(2 * D), sizeof *h);
        if (!h) local++;
#pragma omp for schedule(static)
        for (int64_t i = 0; i < m * (1 + K); i++)
            if (h) mine[i] = pair_score(t, t->zx, ends[2 * i], ends[2 * i + 1], h, h + D);
        gnn_free(h);
    }
    GNN_TRY(gnn_dist_agree(d->comm, local ? GNN_FAIL(GNN_ENOMEM, "link metrics") : 0));
    /* Every rank's slice in set order: positives, then negatives. */
    int *pc = cnt, *pd = cnt + R, *nc = cnt + 2 * R, *nd = cnt + 3 * R;
    for (int q = 0; q < R; q++) {
        int64_t a = np * q / R, b = np * (q + 1) / R;
        GNN_CHECK(b * K <= INT_MAX, GNN_ERANGE, "link metrics: more than 2^31 held-out pairs");
        pc[q] = (int)(b - a);
        pd[q] = (int)a;
        nc[q] = (int)((b - a) * K);
        nd[q] = (int)(a * K);
    }
    GNN_MPI_TRY(MPI_Allgatherv(mine, pc[r], MPI_DOUBLE, spos, pc, pd, MPI_DOUBLE, d->comm));
    GNN_MPI_TRY(MPI_Allgatherv(mine + m, nc[r], MPI_DOUBLE, sneg, nc, nd, MPI_DOUBLE, d->comm));
fail:
    gnn_free(cnt);
    gnn_free(ends);
    gnn_free(mine);
    return rc;
}

/* Metrics of one held-out set pair (positives pos, negatives neg) into m. */
static int score_set(gnn_job_t *j, link_t *t, const float *z, int ps, double *m)
{
    int rc = 0;
    const int64_t D = t->D, np = t->set_n[ps], nn = t->set_n[ps + 1], K = t->Keval;
    const int64_t *pp = t->set[ps], *pn = t->set[ps + 1];
    double *spos = gnn_malloc_array((size_t)np + 1, sizeof *spos);
    double *sneg = gnn_malloc_array((size_t)nn + 1, sizeof *sneg);
    float *scr = j->dist ? NULL : gnn_malloc_array((size_t)(2 * D * (np + nn)) + 1, sizeof *scr);
    int local = spos && sneg && (j->dist || scr) ? 0 : GNN_FAIL(GNN_ENOMEM, "link metrics");
    GNN_TRY(j->dist ? gnn_dist_agree(j->dist->comm, local) : local);
    if (j->dist) {
        GNN_TRY(score_set_part(j, t, z, ps, spos, sneg));
    } else {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < np; i++)
            spos[i] =
                pair_score(t, z, pp[2 * i], pp[2 * i + 1], scr + 2 * D * i, scr + 2 * D * i + D);
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < nn; i++)
            sneg[i] = pair_score(t, z, pn[2 * i], pn[2 * i + 1], scr + 2 * D * (np + i),
                                 scr + 2 * D * (np + i) + D);
    }
    /* A diverged model's scores are not numbers: every metric is then
     * NaN, and so the validation loss, which ends the run. */
    int finite = 1;
    for (int64_t i = 0; i < np && finite; i++) finite = isfinite(spos[i]);
    for (int64_t i = 0; i < nn && finite; i++) finite = isfinite(sneg[i]);
    if (!finite) {
        for (int q = 0; q <= M_HITS0 + t->n_hits; q++) m[q] = NAN;
        goto fail;
    }
    GNN_TRY(auc_ap(spos, np, sneg, nn, &m[M_AUC], &m[M_AP]));
    double mrr = 0.0;
    for (int64_t i = 0; i < np; i++) {
        double ge = 0, gt = 0;
        for (int64_t k = 0; k < K; k++) {
            ge += sneg[i * K + k] >= spos[i];
            gt += sneg[i * K + k] > spos[i];
        }
        mrr += 1.0 / (0.5 * (ge + gt) + 1.0);
    }
    m[M_MRR] = np ? mrr / (double)np : NAN;
    qsort(sneg, (size_t)nn, sizeof *sneg, by_double_desc);
    for (int h = 0; h < t->n_hits; h++) {
        int64_t kk = t->hits[h];
        if (nn < kk) {
            m[M_HITS0 + h] = 1.0;
            continue;
        }
        double kth = sneg[kk - 1], above = 0;
        for (int64_t i = 0; i < np; i++) above += spos[i] > kth;
        m[M_HITS0 + h] = np ? above / (double)np : NAN;
    }
    /* The loss of the training objective on these pairs. */
    if (ps == GNN_LINK_VALID_POS) {
        double lp = 0, ln = 0;
        for (int64_t i = 0; i < np; i++) lp += softplus(-spos[i]);
        for (int64_t i = 0; i < nn; i++) ln += softplus(sneg[i]);
        m[M_HITS0 + t->n_hits] = lp / (double)np + (nn ? ln / (double)nn : 0.0);
    }
    (void)j;
fail:
    gnn_free(spos);
    gnn_free(sneg);
    gnn_free(scr);
    return rc;
}

static int evaluate(gnn_job_t *j, const float *logits, int64_t n, gnn_metrics_t *out)
{
    int rc = 0;
    link_t *t = j->task_state;
    const float *z;
    (void)n;
    if (j->dist) /* the part's rows stay where they are: scoring fetches what it needs */
        z = logits;
    else
        GNN_TRY(host_z(j, t, logits, t->n, &z));
    GNN_TRY(fetch_decoder(j, t));
    int per = M_HITS0 + t->n_hits;
    double mv[M_HITS0 + MAX_HITS + 1], mt[M_HITS0 + MAX_HITS + 1];
    GNN_TRY(score_set(j, t, z, GNN_LINK_VALID_POS, mv));
    GNN_TRY(score_set(j, t, z, GNN_LINK_TEST_POS, mt));
    for (int k = 0; k < per; k++) {
        out->v[k] = mv[k];
        out->v[per + k] = mt[k];
    }
    out->v[2 * per] = mv[per];
fail:
    return rc;
}

/* The MLP decoder's parameters, after the model's. */
static int64_t extra_params(const gnn_job_t *j)
{
    const link_t *t = j->task_state;
    return t && t->mlp ? t->n_dec : 0;
}

/* Glorot-uniform W1 (D x D) and w2 (D x 1), zero biases, from the model's
 * stream (counters past the layers', by position). */
static void extra_init(void *ctx, float *w, int64_t n, uint64_t seed)
{
    const gnn_job_t *j = ctx;
    const link_t *t = j->task_state;
    int64_t D = t->D;
    uint64_t key = gnn_rng_mix64(seed ^ 0x6d6c70ull);
    double l1 = sqrt(6.0 / (double)(2 * D)), l2 = sqrt(6.0 / (double)(D + 1));
    memset(w, 0, (size_t)n * sizeof *w);
    for (int64_t i = 0; i < D * D; i++)
        W1(w)[i] = (float)((2.0 * gnn_rng_uniform(key, (uint64_t)i) - 1.0) * l1);
    for (int64_t k = 0; k < D; k++)
        W2(w, D)[k] = (float)((2.0 * gnn_rng_uniform(key, (uint64_t)(D * D + k)) - 1.0) * l2);
}

/* The MLP decoder as torch.nn.Linear layers: lin1 (W1 transposed, b1)
 * and lin2 (w2 as a 1 x D weight, b2); score = lin2(ReLU(lin1(z_u z_v))). */
static int extra_tensors(const gnn_job_t *j, gnn_layer_tensor_t *out)
{
    const link_t *t = j->task_state;
    if (!t || !t->mlp) return 0;
    int64_t D = t->D; /* offsets as W1, B1, W2 and B2 place them */
    out[0] = gnn_layer_tensor("decoder.lin1.weight", 0, D, D, 1);
    out[1] = gnn_layer_tensor("decoder.lin1.bias", D * D, D, 0, 0);
    out[2] = gnn_layer_tensor("decoder.lin2.weight", D * D + D, 1, D, 0);
    out[3] = gnn_layer_tensor("decoder.lin2.bias", D * D + 2 * D, 1, 0, 0);
    return 4;
}

static void describe(const gnn_job_t *j, char *buf, size_t size)
{
    const link_t *t = j->task_state;
    snprintf(buf, size,
             "link prediction: %" PRId64 " training edges x %" PRId64 " negatives, valid/test "
             "%" PRId64 "/%" PRId64 " held out with %" PRId64 " negatives each, %" PRId64
             "-wide embeddings, %s decoder",
             t->n_pos, t->K, t->set_n[GNN_LINK_VALID_POS], t->set_n[GNN_LINK_TEST_POS], t->Keval,
             t->D, t->mlp ? "MLP" : "dot");
}

static void task_free(gnn_job_t *j)
{
    link_t *t = j->task_state;
    if (!t) return;
    gnn_free(t->pos);
    gnn_free(t->items);
    gnn_free(t->ep_items);
    gnn_free(t->ep_starts);
    gnn_free(t->ep_batch);
    gnn_partdir_link_free(&t->meta);
    gnn_free(t->g2p);
    gnn_free(t->gpairs);
    gnn_free(t->remote);
    gnn__idmap_free(&t->rmap);
    gnn_dist_rows_free(&t->rows);
    gnn_free(t->zx);
    gnn_free(t->dzx);
    gnn_free(t->fx_start);
    gnn_free(t->fx_end);
    gnn_free(t->rd_start);
    gnn_free(t->rd_pair);
    gnn_free(t->pairs);
    gnn_free(t->g);
    gnn_free(t->order);
    gnn_free(t->sg);
    gnn_free(t->start);
    gnn_free(t->zh);
    gnn_free(t->dzh);
    gnn_free(t->sc);
    gnn_free(t->dec);
    gnn_free(t->ddec);
    gnn_free(t->dh);
    gnn_free(t->part);
    gnn_free(t);
    j->task_state = NULL;
}

const gnn_task_kind_t gnn_task_link = {
    .name = "link",
    .train_label = "valid AP",
    .select_label = "valid AUC",
    .test_label = "test AUC",
    .metric_name = "AUC",
    .loss_reads_all = 1,
    .configure = configure,
    .extra_params = extra_params,
    .extra_init = extra_init,
    .extra_tensors = extra_tensors,
    .check_graph = check_graph,
    .setup = setup,
    .train_seeds = train_seeds,
    .seed_targets = seed_targets,
    .full_loss = full_loss,
    .batch_loss = batch_loss,
    .edge_seeds = edge_seeds,
    .batch_rows = batch_rows,
    .epoch_batches = epoch_batches,
    .evaluate = evaluate,
    .describe = describe,
    .free = task_free,
};
