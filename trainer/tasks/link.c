/*
 * Link prediction (trainer/task.h): the model's output rows are node
 * embeddings z; an edge u -> v scores s = <z_u, z_v> (the dot decoder), or
 * s = w2 . ReLU(W1^T (z_u * z_v) + b1) + b2 (the MLP decoder on the
 * element-wise product, W1 D x D, its parameters after the model's in the
 * flat buffer: trained, averaged over ranks and checkpointed with them).
 *
 * Training: every edge of the graph is a positive (an undirected graph's
 * edge once, as u < v), with --negatives K negatives (u, w), w uniform
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

#include <inttypes.h>
#include <math.h>
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
    /* Per-epoch scratch (host). */
    int64_t *pairs;           /* (1 + K) n_pos x 2 */
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

static int setup(gnn_job_t *j, int64_t *out_dim)
{
    int rc = 0;
    GNN_CHECK(!j->dist && !j->mode->minibatch, GNN_EUSAGE,
              "--task link trains on the whole graph of one graph file for now (not %s)",
              j->dist ? "over a partition directory" : "in mini-batches");
    link_t *t = gnn_calloc(1, sizeof *t);
    GNN_CHECK(t, GNN_ENOMEM, "link prediction");
    j->task_state = t;
    const gnn_graph_t *g = &j->g;
    const gnn_csr_t *a = &g->csr;
    t->n = a->n_rows;
    t->D = j->o->out_dim > 0 ? j->o->out_dim : 16;
    t->K = j->o->negatives;
    t->n_hits = j->task_hits;
    memcpy(t->hits, j->task_hit_k, sizeof t->hits);
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) {
        t->set[s] = g->link[s];
        t->set_n[s] = g->link_size[s];
    }
    t->Keval = g->link_neg_per_pos;
    /* Positives: the stored edges u -> v (row v lists u), an undirected
     * graph's once (u < v); no self loops. */
    int64_t m = 0;
    for (int64_t v = 0; v < a->n_rows; v++)
        for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            int64_t u = a->indices[e];
            m += u != v && (g->directed || u < v);
        }
    GNN_CHECK(m > 0, GNN_EINVAL, "%s: no training edges", j->o->data);
    t->n_pos = m;
    t->pos = gnn_malloc_array((size_t)m * 2, sizeof *t->pos);
    GNN_CHECK(t->pos, GNN_ENOMEM, "link prediction: %" PRId64 " training edges", m);
    m = 0;
    for (int64_t v = 0; v < a->n_rows; v++)
        for (int64_t e = a->indptr[v]; e < a->indptr[v + 1]; e++) {
            int64_t u = a->indices[e];
            if (u != v && (g->directed || u < v)) {
                t->pos[2 * m] = u;
                t->pos[2 * m + 1] = v;
                m++;
            }
        }
    int64_t np = (1 + t->K) * t->n_pos, ns = 0;
    for (int s = 0; s < GNN_NUM_LINK_SETS; s++) ns = t->set_n[s] > ns ? t->set_n[s] : ns;
    t->pairs = gnn_malloc_array((size_t)np * 2, sizeof *t->pairs);
    t->g = gnn_malloc_array((size_t)np, sizeof *t->g);
    t->order = gnn_malloc_array((size_t)np * 2, sizeof *t->order);
    t->sg = gnn_malloc_array((size_t)np * 2, sizeof *t->sg);
    t->start = gnn_malloc_array((size_t)t->n + 2, sizeof *t->start);
    t->sc = gnn_malloc_array((size_t)ns + 1, sizeof *t->sc);
    GNN_CHECK(t->pairs && t->g && t->order && t->sg && t->start && t->sc, GNN_ENOMEM,
              "link prediction: %" PRId64 " pairs per epoch", np);
    /* The pairs of an epoch: the positives (fixed), then its negatives. */
    memcpy(t->pairs, t->pos, (size_t)t->n_pos * 2 * sizeof *t->pairs);
    t->mlp = !strcmp(j->o->decoder, "mlp");
    if (t->mlp) {
        int64_t D = t->D;
        t->n_dec = D * D + 2 * D + 1;
        t->dec = gnn_malloc_array((size_t)t->n_dec, sizeof *t->dec);
        t->ddec = gnn_malloc_array((size_t)t->n_dec, sizeof *t->ddec);
        t->dh = gnn_malloc_array((size_t)(np * D) + 1, sizeof *t->dh);
        t->part = gnn_malloc_array((size_t)(DEC_BLOCKS * t->n_dec), sizeof *t->part);
        GNN_CHECK(t->dec && t->ddec && t->dh && t->part, GNN_ENOMEM,
                  "link prediction: the MLP decoder over %" PRId64 " pairs", np);
    }
    if (!gnn_be_host_memory(j->be)) {
        t->zh = gnn_malloc_array((size_t)(t->n * t->D) + 1, sizeof *t->zh);
        t->dzh = gnn_malloc_array((size_t)(t->n * t->D) + 1, sizeof *t->dzh);
        GNN_CHECK(t->zh && t->dzh, GNN_ENOMEM, "link prediction: embeddings");
    }
    *out_dim = t->D;
fail:
    return rc;
}

static void train_seeds(const gnn_job_t *j, const int64_t **ids, int64_t *n, int64_t *total)
{
    const link_t *t = j->task_state;
    *ids = NULL;
    *n = *total = t ? t->n_pos : 0;
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
static int host_z(gnn_job_t *j, link_t *t, const float *z, const float **zh)
{
    if (!t->zh) {
        *zh = z;
        return 0;
    }
    *zh = t->zh;
    return gnn_be_download(j->be, t->zh, z, (size_t)(t->n * t->D) * sizeof(float));
}

/*
 * The MLP decoder over this epoch's pairs: their losses (*lp, *ln: sums
 * over positives and negatives), per pair dh = dL/dh (D floats, h the
 * element-wise product), and the decoder's gradients onto the model's
 * gradient buffer. Pairs go in DEC_BLOCKS fixed blocks, each summed by
 * one thread in double; the blocks are then added in order.
 */
static int mlp_backward(gnn_job_t *j, link_t *t, const float *z, int64_t NP, int64_t P,
                        double wp, double wn, double *lp, double *ln)
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
            const float *zu = z + t->pairs[2 * q] * D, *zv = z + t->pairs[2 * q + 1] * D;
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

static int full_loss(gnn_job_t *j, const float *logits, int64_t n, double *loss, float *dlogits,
                     int64_t *count)
{
    int rc = 0;
    link_t *t = j->task_state;
    const int64_t D = t->D, P = t->n_pos, K = t->K, NP = (1 + K) * P;
    const float *z;
    (void)n;
    GNN_TRY(host_z(j, t, logits, &z));
    float *dz = t->dzh ? t->dzh : dlogits;
    /* This epoch's pairs: the positives, then K negatives of each. */
    uint64_t key = gnn_rng_mix64(gnn_rng_mix64((uint64_t)j->o->seed + (uint64_t)j->ck.run) ^
                                 (0x6e656773ull + (uint64_t)j->ck.epoch));
    uint64_t nn = (uint64_t)t->n;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < P; i++) {
        int64_t u = t->pos[2 * i], v = t->pos[2 * i + 1];
        uint64_t ekey = gnn_rng_mix64(key ^ gnn_rng_mix64((uint64_t)u) ^
                                      gnn_rng_mix64((uint64_t)v + 0x5bd1e995ull));
        for (int64_t k = 0; k < K; k++) {
            uint64_t next = (uint64_t)k << 3;
            int64_t q = P + i * K + k;
            t->pairs[2 * q] = u;
            t->pairs[2 * q + 1] = (int64_t)gnn_rng_below(ekey, &next, nn);
        }
    }
    double lp = 0.0, ln = 0.0;
    const double wp = 1.0 / (double)P, wn = 1.0 / ((double)P * (double)K);
    if (!t->mlp) {
        /* The loss summed in fixed blocks of pairs, then the blocks in
         * order: the same bits for any thread count. */
        double bl[2 * DEC_BLOCKS];
        const int64_t per = (NP + DEC_BLOCKS - 1) / DEC_BLOCKS;
#pragma omp parallel for schedule(dynamic, 1)
        for (int64_t b = 0; b < DEC_BLOCKS; b++) {
            double sp = 0.0, sn = 0.0;
            int64_t end = (b + 1) * per < NP ? (b + 1) * per : NP;
            for (int64_t q = b * per; q < end; q++) {
                double s = dot(z + t->pairs[2 * q] * D, z + t->pairs[2 * q + 1] * D, D);
                if (q < P) {
                    sp += softplus(-s);
                    t->g[q] = (float)((sigmoid(s) - 1.0) * wp);
                } else {
                    sn += softplus(s);
                    t->g[q] = (float)(sigmoid(s) * wn);
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
        GNN_TRY(mlp_backward(j, t, z, NP, P, wp, wn, &lp, &ln));
    }
    *loss = lp * wp + (K ? ln * wn : 0.0);
    *count = P;
    /* Pair ends by node (counting sort, pair order kept within a node). */
    int64_t *start = t->start;
    memset(start, 0, (size_t)(t->n + 2) * sizeof *start);
    for (int64_t e = 0; e < 2 * NP; e++) start[t->pairs[e] + 2]++;
    for (int64_t v = 0; v < t->n; v++) start[v + 2] += start[v + 1];
    /* The dot decoder's gather then reads what it needs in order: the
     * other end and the pair's gradient. */
    if (t->mlp) {
        for (int64_t e = 0; e < 2 * NP; e++) t->order[start[t->pairs[e] + 1]++] = e;
    } else {
        for (int64_t e = 0; e < 2 * NP; e++) {
            int64_t at = start[t->pairs[e] + 1]++;
            t->order[at] = t->pairs[e ^ 1];
            t->sg[at] = t->g[e >> 1];
        }
    }
    /* dz[v] = sum over v's pair ends of g * z[other end] (MLP: dh * z). */
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t v = 0; v < t->n; v++) {
        float *d = dz + v * D;
        for (int64_t k = 0; k < D; k++) d[k] = 0.0f;
        if (t->mlp) {
            for (int64_t i = start[v]; i < start[v + 1]; i++) {
                int64_t e = t->order[i];
                const float *o = z + t->pairs[e ^ 1] * D, *dh = t->dh + (e >> 1) * D;
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
    if (t->dzh)
        GNN_TRY(gnn_be_upload(j->be, dlogits, t->dzh, (size_t)(t->n * D) * sizeof(float)));
fail:
    return rc;
}

static int batch_loss(gnn_job_t *j, const float *logits, const int64_t *y, int64_t ns,
                      double *loss, float *dlogits)
{
    (void)logits, (void)y, (void)ns, (void)loss, (void)dlogits;
    return GNN_FAIL(GNN_EUNSUPPORTED, "--task link: no mini-batches yet (%s)", j->o->data);
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

/* Metrics of one held-out set pair (positives pos, negatives neg) into m. */
static int score_set(gnn_job_t *j, link_t *t, const float *z, int ps, double *m)
{
    int rc = 0;
    const int64_t D = t->D, np = t->set_n[ps], nn = t->set_n[ps + 1], K = t->Keval;
    const int64_t *pp = t->set[ps], *pn = t->set[ps + 1];
    double *spos = gnn_malloc_array((size_t)np + 1, sizeof *spos);
    double *sneg = gnn_malloc_array((size_t)nn + 1, sizeof *sneg);
    float *scr = gnn_malloc_array((size_t)(2 * D * (np + nn)) + 1, sizeof *scr);
    GNN_CHECK(spos && sneg && scr, GNN_ENOMEM, "link metrics");
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < np; i++)
        spos[i] = pair_score(t, z, pp[2 * i], pp[2 * i + 1], scr + 2 * D * i, scr + 2 * D * i + D);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < nn; i++)
        sneg[i] = pair_score(t, z, pn[2 * i], pn[2 * i + 1], scr + 2 * D * (np + i),
                             scr + 2 * D * (np + i) + D);
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
    GNN_TRY(host_z(j, t, logits, &z));
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
    .configure = configure,
    .extra_params = extra_params,
    .extra_init = extra_init,
    .check_graph = check_graph,
    .setup = setup,
    .train_seeds = train_seeds,
    .seed_targets = seed_targets,
    .full_loss = full_loss,
    .batch_loss = batch_loss,
    .evaluate = evaluate,
    .describe = describe,
    .free = task_free,
};
