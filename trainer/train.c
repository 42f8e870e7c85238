/*
 * Training loop (trainer/train.h), full-graph or mini-batch.
 *
 * Full-graph epoch: a training forward over the whole graph (dropout on),
 * softmax cross-entropy on the training nodes, the backward pass, one Adam
 * step (weight decay on the first layer only or on all, as --decay-scope
 * says). Every --eval-every epochs a forward without dropout gives the
 * training, validation and test accuracies and the validation loss.
 *
 * Mini-batch epoch: the training nodes, shuffled by (seed, epoch), in
 * batches of --batch-size; the loader (sampler/loader.h) samples each
 * batch's blocks and gathers its input features on --sampler-threads
 * threads, --prefetch batches ahead, and on the CPU also prepares the
 * blocks' aggregation graphs there; the trainer runs forward, loss on the
 * seeds, backward and one Adam step per batch. GCN on a block uses the
 * block's own normalisation: s_dst[v] = (deg_block(v) + 1)^-1/2 over the
 * sampled in-edges, s_src[u] = (outdeg_block(u) + 1)^-1/2 over the block's
 * edges, with the self term of the destination (DGL's GraphConv
 * norm="both" on the block with a self loop added). Evaluation is
 * layer-wise inference: layer l for all nodes from layer l - 1's output, in
 * batches of --eval-batch-size nodes with their full neighbourhoods, so at
 * most two layers of activations are held. The reported test
 * accuracy is the one at the epoch of best validation accuracy (ties: lower
 * validation loss); early stopping counts evaluations without a new lowest
 * validation loss. The parameters of the best epoch are kept on the host
 * and are the ones predictions are made with.
 *
 * Distributed (a partition directory, one rank per part, trainer/dist.h):
 * each rank runs the full-graph epoch on its part, the layers exchanging
 * halo rows with their owners (the model's halo hooks), the loss summed
 * over the ranks' training nodes and divided by their total; the
 * gradients, each the rank's share of the whole loss's, are summed with
 * one MPI_Allreduce of the flat buffer, and every rank takes the same Adam
 * step. Dropout is keyed by the graph file's node ids, the gcn sources by
 * their whole-graph out-degrees: P ranks compute what one process computes
 * on the whole graph. Accuracies and the validation loss are summed over
 * the ranks. Rank 0 writes the log and the checkpoints.
 *
 * Checkpoints hold the whole state of the loop (trainer/checkpoint.h), so a
 * resumed run performs exactly the operations the uninterrupted one would
 * have: on the CPU the final parameters are bitwise equal for the same
 * thread count.
 */
#include "trainer/train.h"

#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/json.h"
#include "graph/base/log.h"
#include "graph/base/progress.h"
#include "graph/graph_file.h"
#include "kernels/backend.h"
#include "sampler/loader.h"
#include "trainer/featcache.h"
#include "trainer/checkpoint.h"
#include "trainer/dist.h"
#include "trainer/distdev.h"
#include "trainer/model.h"

#include <mpi.h>

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

void gnn_train_defaults(gnn_train_opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->model = "gcn";
    o->layers = 2;
    o->hidden = 16;
    o->dropout = 0.5;
    o->lr = 0.01;
    o->weight_decay = 5e-4;
    o->epochs = 200;
    o->seed = 0;
    o->runs = 1;
    o->device = "cpu";
    o->spmm = "auto";
    o->eval_every = 1;
    o->checkpoint_every = 10;
    o->sparse_features = "auto";
    o->batch_size = 1024;
    o->sampler_threads = 1;
    o->prefetch = 2;
    o->cache_policy = "sample";
    o->eval_batch_size = 4096;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* ---- State of a training job ---------------------------------------------- */

typedef struct {
    const gnn_train_opts_t *o;
    gnn_model_kind_t kind;
    const char *decay_scope;
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    const gnn_aggr_def_t *aggr;
    gnn_graph_t g;
    gnn_bgraph_t *bg;
    float *x;                         /* features on the backend (dense input) */
    gnn_csr_t xs;                     /* features as CSR (sparse input) */
    gnn_bsparse_t *bxs;               /* ... on the backend, or NULL */
    int64_t *labels;                  /* backend */
    int64_t *split[GNN_NUM_SPLITS];   /* backend */
    int64_t split_n[GNN_NUM_SPLITS];
    float *dlogits;                   /* backend, n x classes */
    float *adam_m, *adam_v;           /* backend, n_params */
    FILE *log;
    gnn_checkpoint_t ck;              /* the loop's whole state (host) */
    gnn_model_t *model;
    double epoch_s_sum;
    int64_t epoch_s_count;
    /* Mini-batch mode. */
    int minibatch;
    int fanout[GNN_MODEL_MAX_LAYERS];
    char fanouts[128];                /* canonical "15,10,5" (fits 16 x 1000000) */
    const float *feat_host;           /* features the loader gathers from */
    gnn_loader_t *ld;
    int64_t *iota;                    /* backend, 0 .. batch_size - 1 */
    float *xb;  size_t xb_bytes;      /* batch input on the backend (not host memory) */
    int64_t *yb; size_t yb_bytes;     /* batch labels on the backend (not host memory) */
    int64_t *nb; size_t nb_bytes;     /* batch node ids on the backend (not host memory) */
    float *hbuf[2]; size_t hbuf_bytes[2]; /* layer-wise inference activations */
    float *ebuf; size_t ebuf_bytes;   /* one inference batch's input rows */
    int64_t *eidx; size_t eidx_bytes; /* ... and their ids */
    int64_t *outdeg;                  /* host: out-degree of every node (gcn inference) */
    gnn_loader_stats_t lst;           /* the last epoch's loader counters */
    double compute_s;                 /* the last epoch's forward/backward/step time */
    /* Distributed: this rank's part of a partition directory. */
    gnn_dist_part_t *dist;
    gnn_dist_dev_t *ddev;             /* its halo exchange and allreduce on the backend */
    int stage;                        /* rows go through host buffers (a device backend) */
    int rank;
    int64_t *row_id;                  /* backend: graph-file id of each local node */
    int64_t grad_bytes;               /* this epoch's gradient bytes into the allreduce */
    double allreduce_s;               /* ... and its time */
    int64_t ep_bytes[3];              /* last epoch over all ranks: halo (or feature),
                                         gradient and remote-draw bytes */
    double ep_fetch_s, ep_allreduce_s; /* ... the slowest rank's exchange and allreduce time */
    double ep_compute_s;              /* ... and step time less both (the slowest rank's) */
    /* Distributed mini-batches. */
    int64_t steps;                    /* per epoch, the same on every rank */
    int64_t *step_seeds;              /* steps: seeds of all ranks at each step */
    int64_t *feat_row;                /* n_all: row of each local node in the loader's
                                         features, -1: fetched per step */
    float *cache_feat;                /* owned rows, then the cached remote rows */
    int64_t n_cache;
    int64_t *cache_out;               /* (sampler id, cache_feat row) of the cached nodes
                                         beyond the part, by id */
    int64_t n_cache_out;
    int64_t ep_remote, ep_hits;       /* last epoch, all ranks: remote input rows, from cache */
    double ep_sample_s;
    int fetch_overlap;                /* fetches ran on their own thread */
    int remote_rows;                  /* parts have fewer halo hops than layers: the
                                         last hops are drawn by the owners, and each
                                         step's batch is sampled in step order */
    gnn_sampler_remote_t remote;      /* ... through this hook */
    gnn_sampler_t *idle;              /* a rank out of batches still draws for others */
    int64_t *batch_pid;               /* host: partition id of each input row of a batch
                                         (dropout by node: the same mask on any rank) */
    int64_t batch_pid_cap;
    double fetch_wait_s;              /* this epoch: time steps waited for their features */
    double ep_fetch_busy_s;           /* last epoch, slowest rank: time fetches took */
} job_t;

/* Metrics of one evaluation. */
typedef struct {
    double acc[GNN_NUM_SPLITS];
    double valid_loss;
} eval_t;

/* ---- Set-up --------------------------------------------------------------- */

#define MAX_THREADS 4096 /* --threads: more than any machine has cores */

/* --device is cpu, cpu-as-gpu, auto, cuda or cuda:N (N in [0, 1023]). */
static int device_name_ok(const char *s)
{
    if (!strcmp(s, "cpu") || !strcmp(s, "cpu-as-gpu") || !strcmp(s, "auto") || !strcmp(s, "cuda"))
        return 1;
    if (strncmp(s, "cuda:", 5) || s[5] < '0' || s[5] > '9') return 0;
    char *end;
    errno = 0;
    long d = strtol(s + 5, &end, 10);
    return !*end && !errno && d <= 1023;
}

static int check_opts(const gnn_train_opts_t *o)
{
    if (!o->data) return GNN_FAIL(GNN_EUSAGE, "--data FILE is required");
    if (o->layers < 1 || o->layers > GNN_MODEL_MAX_LAYERS)
        return GNN_FAIL(GNN_EUSAGE, "--layers %d outside [1, %d]", o->layers, GNN_MODEL_MAX_LAYERS);
    if (o->hidden < 1 || o->hidden > (1 << 20))
        return GNN_FAIL(GNN_EUSAGE, "--hidden %" PRId64 " outside [1, 1048576]", o->hidden);
    /* The model computes in single precision: each value must stay in
     * range once narrowed to a float. */
    if (!(o->dropout >= 0.0 && o->dropout < 1.0))
        return GNN_FAIL(GNN_EUSAGE, "--dropout %g outside [0, 1)", o->dropout);
    if (!((float)o->dropout < 1.0f))
        return GNN_FAIL(GNN_EUSAGE, "--dropout %.12g is 1 in single precision (must be below 1)",
                        o->dropout);
    if (!(o->lr > 0.0 && isfinite(o->lr))) return GNN_FAIL(GNN_EUSAGE, "--lr %g must be > 0", o->lr);
    if (!((float)o->lr > 0.0f && isfinite((float)o->lr)))
        return GNN_FAIL(GNN_EUSAGE, "--lr %g is outside the range of single precision "
                                    "(%g to %g)",
                        o->lr, (double)FLT_TRUE_MIN, (double)FLT_MAX);
    if (!(o->weight_decay >= 0.0 && isfinite(o->weight_decay)))
        return GNN_FAIL(GNN_EUSAGE, "--weight-decay %g must be >= 0", o->weight_decay);
    if (!isfinite((float)o->weight_decay))
        return GNN_FAIL(GNN_EUSAGE, "--weight-decay %g is beyond single precision (at most %g)",
                        o->weight_decay, (double)FLT_MAX);
    if (!o->device || !device_name_ok(o->device))
        return GNN_FAIL(GNN_EUSAGE, "--device %s: expected cpu, cuda, cuda:N, auto or cpu-as-gpu",
                        o->device ? o->device : "");
    if (o->epochs < 0) return GNN_FAIL(GNN_EUSAGE, "--epochs %d must be >= 0", o->epochs);
    if (o->runs < 1 || o->runs > 1000)
        return GNN_FAIL(GNN_EUSAGE, "--runs %d outside [1, 1000]", o->runs);
    if (o->eval_every < 0) return GNN_FAIL(GNN_EUSAGE, "--eval-every %d must be >= 0", o->eval_every);
    if (o->checkpoint_every < 1)
        return GNN_FAIL(GNN_EUSAGE, "--checkpoint-every %d must be >= 1", o->checkpoint_every);
    if (o->early_stop < 0) return GNN_FAIL(GNN_EUSAGE, "--early-stop %d must be >= 0", o->early_stop);
    if (o->threads < 0 || o->threads > MAX_THREADS)
        return GNN_FAIL(GNN_EUSAGE, "--threads %d outside [0, %d]", o->threads, MAX_THREADS);
    if (o->seed < 0) return GNN_FAIL(GNN_EUSAGE, "--seed %" PRId64 " must be >= 0", o->seed);
    if (o->resume && !o->checkpoint)
        return GNN_FAIL(GNN_EUSAGE, "--resume needs --checkpoint FILE");
    if (strcmp(o->sparse_features, "auto") && strcmp(o->sparse_features, "on") &&
        strcmp(o->sparse_features, "off"))
        return GNN_FAIL(GNN_EUSAGE, "--sparse-features \"%s\" (expected auto, on or off)",
                        o->sparse_features);
    if (o->decay_scope && strcmp(o->decay_scope, "first") && strcmp(o->decay_scope, "all"))
        return GNN_FAIL(GNN_EUSAGE, "--decay-scope \"%s\" (expected first or all)", o->decay_scope);
    if (o->mode && strcmp(o->mode, "full") && strcmp(o->mode, "minibatch"))
        return GNN_FAIL(GNN_EUSAGE, "--mode \"%s\" (expected full or minibatch)", o->mode);
    if (!o->cache_policy || (strcmp(o->cache_policy, "sample") && strcmp(o->cache_policy, "rows")))
        return GNN_FAIL(GNN_EUSAGE, "--cache-policy \"%s\" (expected sample or rows)",
                        o->cache_policy ? o->cache_policy : "");
    if (o->batch_size < 1 || o->batch_size > ((int64_t)1 << 30))
        return GNN_FAIL(GNN_EUSAGE, "--batch-size %" PRId64 " outside [1, 2^30]", o->batch_size);
    if (o->sampler_threads < 1 || o->sampler_threads > GNN_LOADER_MAX_THREADS)
        return GNN_FAIL(GNN_EUSAGE, "--sampler-threads %d outside [1, %d]", o->sampler_threads,
                        GNN_LOADER_MAX_THREADS);
    if (o->prefetch < 0 || o->prefetch > GNN_LOADER_MAX_PREFETCH)
        return GNN_FAIL(GNN_EUSAGE, "--prefetch %d outside [0, %d]", o->prefetch,
                        GNN_LOADER_MAX_PREFETCH);
    if (o->eval_batch_size < 1 || o->eval_batch_size > ((int64_t)1 << 30))
        return GNN_FAIL(GNN_EUSAGE, "--eval-batch-size %" PRId64 " outside [1, 2^30]",
                        o->eval_batch_size);
    return 0;
}

/* The directory of path into buf: "." without a slash, "/" for a path in
 * the root. */
static void dir_of(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, size, ".");
    else if (slash == path)
        snprintf(buf, size, "/");
    else
        snprintf(buf, size, "%.*s", (int)(slash - path), path);
}

/* path with its directory resolved to an absolute one, or path as it is
 * where the directory cannot be resolved. */
static const char *resolved(const char *path, char *buf, size_t size)
{
    char dir[PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(path, '/');
    dir_of(path, dir, sizeof dir);
    if (!realpath(dir, real)) return path;
    snprintf(buf, size, "%s/%s", real, slash ? slash + 1 : path);
    return buf;
}

/* Do paths a and b name the same file: the same device and inode where
 * both exist, else the same path once their directories are resolved. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    if (ea != eb) return 0;
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    return !strcmp(resolved(a, ra, sizeof ra), resolved(b, rb, sizeof rb));
}

/* Is path one of the files of partition directory data (meta.h5,
 * part-NNNNN.h5), whether or not it exists yet? */
static int partdir_file(const char *data, const char *path)
{
    struct stat sd, sp;
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    int named = !strcmp(base, "meta.h5") ||
                (!strncmp(base, "part-", 5) && len > 8 && !strcmp(base + len - 3, ".h5"));
    dir_of(path, dir, sizeof dir);
    return named && stat(data, &sd) == 0 && S_ISDIR(sd.st_mode) && stat(dir, &sp) == 0 &&
           sd.st_dev == sp.st_dev && sd.st_ino == sp.st_ino;
}

/* The output path of option opt can be written: not a directory, and its
 * directory exists and accepts new files (outputs are written under a
 * temporary name beside them). */
static int check_output(const char *opt, const char *path)
{
    char dir[PATH_MAX];
    struct stat st;
    if (!path[0]) return GNN_FAIL(GNN_EUSAGE, "%s: empty file name", opt);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return GNN_FAIL(GNN_EIO, "%s %s: is a directory", opt, path);
    dir_of(path, dir, sizeof dir);
    if (stat(dir, &st) != 0)
        return GNN_FAIL(errno == ENOENT ? GNN_ENOENT : GNN_EIO, "%s %s: cannot write in %s: %s",
                        opt, path, dir, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return GNN_FAIL(GNN_EIO, "%s %s: %s is not a directory", opt, path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return GNN_FAIL(GNN_EIO, "%s %s: cannot write in %s: %s", opt, path, dir,
                        strerror(errno));
    return 0;
}

/*
 * The files the options name, checked before any work: no two options may
 * name the same file (a log written over the graph, predictions over the
 * checkpoint: GNN_EUSAGE), and each output can be written, so that a run
 * does not fail only after training.
 */
static int check_paths(const gnn_train_opts_t *o)
{
    const char *opt[] = {"--data", "--checkpoint", "--save-predictions", "--log-json"};
    const char *path[] = {o->data, o->checkpoint, o->save_predictions, o->log_json};
    int n = (int)(sizeof path / sizeof path[0]);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (path[a] && path[b] && same_file(path[a], path[b]))
                return GNN_FAIL(GNN_EUSAGE, "%s %s and %s %s name the same file", opt[a],
                                path[a], opt[b], path[b]);
    for (int a = 1; a < n; a++)
        if (path[0] && path[a] && partdir_file(path[0], path[a]))
            return GNN_FAIL(GNN_EUSAGE, "%s %s would overwrite a file of the partition directory "
                                        "--data %s",
                            opt[a], path[a], path[0]);
    for (int a = 1; a < n; a++) {
        int rc = path[a] ? check_output(opt[a], path[a]) : 0;
        if (rc < 0) return rc;
    }
    return 0;
}

/* --fanouts "15,10,5" (one per layer, nearest hop first, -1 = all) into
 * j->fanout and its canonical spelling j->fanouts; default 10 per layer. */
static int parse_fanouts(job_t *j)
{
    const char *s = j->o->fanouts;
    int L = j->o->layers, k = 0;
    if (!s) {
        for (k = 0; k < L; k++) j->fanout[k] = 10;
    } else {
        const char *p = s;
        for (;;) {
            char *end;
            errno = 0;
            long v = strtol(p, &end, 10);
            if (end == p || errno || (v != -1 && v < 1) || v > 1000000)
                return GNN_FAIL(GNN_EUSAGE, "--fanouts \"%s\": each entry must be -1 (all "
                                            "neighbours) or a count from 1 to 1000000",
                                s);
            if (k == L)
                return GNN_FAIL(GNN_EUSAGE, "--fanouts \"%s\" has more entries than --layers %d",
                                s, L);
            j->fanout[k++] = (int)v;
            if (*end == '\0') break;
            if (*end != ',')
                return GNN_FAIL(GNN_EUSAGE, "--fanouts \"%s\": expected numbers separated by "
                                            "commas",
                                s);
            p = end + 1;
        }
        if (k != L)
            return GNN_FAIL(GNN_EUSAGE, "--fanouts \"%s\" has %d entries, --layers is %d (one "
                                        "per layer, nearest hop first)",
                            s, k, L);
    }
    size_t at = 0;
    for (k = 0; k < L; k++)
        at += (size_t)snprintf(j->fanouts + at, sizeof j->fanouts - at, "%s%d", k ? "," : "",
                               j->fanout[k]);
    return 0;
}

/* Every feature of the n x f rows is finite; else GNN_EINVAL naming the
 * first node that has another (its graph-file id: id[row], or the row). */
static int check_finite(const char *path, const float *x, int64_t n, int64_t f, const int64_t *id)
{
    int64_t first = n;
#pragma omp parallel for reduction(min : first) schedule(static)
    for (int64_t v = 0; v < n; v++)
        for (int64_t k = 0; k < f; k++)
            if (!isfinite(x[v * f + k])) {
                first = v < first ? v : first;
                break;
            }
    if (first == n) return 0;
    int64_t k = 0;
    while (isfinite(x[first * f + k])) k++;
    return GNN_FAIL(GNN_EINVAL, "%s: feature %" PRId64 " of node %" PRId64 " is %g (gnn-train "
                                "needs finite features)",
                    path, k, id ? id[first] : first, (double)x[first * f + k]);
}

/* Load the graph file and check it can be trained on. */
static int load_data(job_t *j)
{
    int rc = 0;
    const char *path = j->o->data;
    GNN_TRY(gnn_graph_load(path, &j->g));
    const gnn_graph_t *g = &j->g;
    GNN_CHECK(g->feat && g->feat_dim > 0, GNN_EINVAL,
              "%s has no node features (gnn-train needs features, labels and splits)", path);
    GNN_CHECK(g->label && g->num_classes > 0, GNN_EINVAL,
              "%s has no labels (gnn-train needs features, labels and splits)", path);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        GNN_CHECK(g->split[s] && g->split_size[s] >= 0, GNN_EINVAL,
                  "%s has no %s split (gnn-train needs train, valid and test splits)", path,
                  gnn_split_names[s]);
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        GNN_CHECK(g->split_size[s] > 0, GNN_EINVAL,
                  "%s: the %s split is empty (gnn-train needs train, valid and test nodes)", path,
                  gnn_split_names[s]);
    /* Training and evaluation nodes must be labelled. */
    for (int s = 0; s < GNN_NUM_SPLITS; s++)
        for (int64_t i = 0; i < g->split_size[s]; i++)
            GNN_CHECK(g->label[g->split[s][i]] >= 0, GNN_EINVAL,
                      "%s: node %" PRId64 " of the %s split has no label", path, g->split[s][i],
                      gnn_split_names[s]);
    GNN_TRY(check_finite(path, g->feat, g->csr.n_rows, g->feat_dim, NULL));
    return 0;
fail:
    return rc;
}

/* Divide each feature row by its sum (rows summing to 0 stay as they are). */
static void normalize_rows(float *x, gnn_vid_t n, int64_t f)
{
#pragma omp parallel for schedule(static)
    for (gnn_vid_t v = 0; v < n; v++) {
        float *r = x + v * f;
        double s = 0.0;
        for (int64_t k = 0; k < f; k++) s += r[k];
        if (s != 0.0) {
            float inv = (float)(1.0 / s);
            for (int64_t k = 0; k < f; k++) r[k] *= inv;
        }
    }
}

/* Make *buf a backend buffer of at least bytes (contents not kept). */
static int ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes)
{
    if (*buf && *have >= bytes) return 0;
    gnn_be_free(be, *buf);
    *buf = NULL;
    *have = 0;
    int rc = gnn_be_alloc(be, bytes ? bytes : 1, buf);
    if (rc < 0) return rc;
    *have = bytes;
    return 0;
}

static int upload_new(gnn_backend_t *be, const void *src, size_t bytes, void **dst)
{
    int rc = gnn_be_alloc(be, bytes, dst);
    if (rc < 0) return rc;
    return gnn_be_upload(be, *dst, src, bytes);
}

/*
 * Dense or sparse first-layer input. Sparse needs a model whose first layer
 * can take it (GCN, or SAGE with a linear aggregator); "auto" picks it when
 * at most 10 % of the features are non-zero.
 */
static int setup_features(job_t *j)
{
    int rc = 0;
    gnn_graph_t *g = &j->g;
    gnn_vid_t n = g->csr.n_rows;
    int64_t f = g->feat_dim;
    const char *mode = j->o->sparse_features;
    const char *an = j->aggr->name;
    if (j->minibatch) { /* dense rows, gathered per batch from a host copy */
        if (!strcmp(mode, "on")) {
            rc = GNN_FAIL(GNN_EUSAGE, "--sparse-features on needs --mode full (mini-batches "
                                      "gather dense feature rows)");
            goto fail;
        }
        size_t bytes = (size_t)n * (size_t)f * sizeof(float);
        if (gnn_be_host_memory(j->be)) { /* one copy serves both */
            GNN_TRY(gnn_be_upload_take(j->be, (void **)&g->feat, bytes, (void **)&j->x));
            j->feat_host = j->x;
        } else {
            GNN_TRY(upload_new(j->be, g->feat, bytes, (void **)&j->x));
            j->feat_host = g->feat;
        }
        return 0;
    }
    int able = j->kind == GNN_MODEL_GCN || !strcmp(an, "sum") || !strcmp(an, "mean") ||
               !strcmp(an, "gcn");
    if (!strcmp(mode, "on") && !able) {
        rc = GNN_FAIL(GNN_EUSAGE, "--sparse-features on: the sage first layer can take sparse "
                                  "input only with a linear aggregator (sum, mean, gcn), not %s",
                      an);
        goto fail;
    }
    int64_t nz = 0;
#pragma omp parallel for reduction(+ : nz) schedule(static)
    for (int64_t i = 0; i < (int64_t)n * f; i++) nz += g->feat[i] != 0.0f;
    double density = n && f ? (double)nz / ((double)n * (double)f) : 1.0;
    int use = able && (!strcmp(mode, "on") || (!strcmp(mode, "auto") && density <= 0.10));
    GNN_INFO("features: %.2f %% non-zero, first layer on %s input", 100.0 * density,
             use ? "sparse" : "dense");
    if (!use) /* the host copy is not needed again: hand it over */
        return gnn_be_upload_take(j->be, (void **)&j->g.feat, (size_t)n * (size_t)f * sizeof(float),
                                  (void **)&j->x);
    gnn_csr_t *a = &j->xs;
    a->n_rows = n;
    a->n_cols = f;
    a->nnz = nz;
    a->indptr = gnn_malloc_array((size_t)n + 1, sizeof *a->indptr);
    a->indices = gnn_malloc_array((size_t)nz + 1, sizeof *a->indices);
    a->weights = gnn_malloc_array((size_t)nz + 1, sizeof *a->weights);
    GNN_CHECK(a->indptr && a->indices && a->weights, GNN_ENOMEM, "sparse features");
    a->indptr[0] = 0;
    for (gnn_vid_t v = 0; v < n; v++) {
        gnn_eid_t e = a->indptr[v];
        for (int64_t k = 0; k < f; k++)
            if (g->feat[v * f + k] != 0.0f) {
                a->indices[e] = k;
                a->weights[e++] = g->feat[v * f + k];
            }
        a->indptr[v + 1] = e;
    }
    a->flags = GNN_CSR_SORTED;
    GNN_TRY(gnn_be_sparse_create(j->be, a, &j->bxs));
    if (j->o->layers > 1) { /* the dense copy is read again only by 1-layer predictions */
        gnn_free(g->feat);
        g->feat = NULL;
    }
    return 0;
fail:
    return rc;
}

/* On a host-memory backend the workers also build each block's
 * aggregation graph, off the training thread. */
static int prepare_graphs(void *ctx, gnn_loader_batch_t *b)
{
    job_t *j = ctx;
    for (int l = 0; l < b->mb.layers; l++) {
        int rc = gnn_be_graph_create(j->be, &b->mb.blocks[l].csr, (gnn_bgraph_t **)&b->user[l]);
        if (rc < 0) return rc;
    }
    return 0;
}

static void release_graphs(void *ctx, gnn_loader_batch_t *b)
{
    (void)ctx;
    for (int l = 0; l < GNN_SAMPLER_MAX_LAYERS; l++) {
        gnn_be_graph_free(b->user[l]);
        b->user[l] = NULL;
    }
}

static int setup_minibatch_loader(job_t *j, const gnn_csr_t *graph, const float *feat,
                                  const int64_t *feat_row, const int64_t *labels)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    int64_t *iota = gnn_malloc_array((size_t)o->batch_size, sizeof *iota);
    GNN_CHECK(iota, GNN_ENOMEM, "batch indices");
    for (int64_t i = 0; i < o->batch_size; i++) iota[i] = i;
    rc = upload_new(j->be, iota, (size_t)o->batch_size * sizeof *iota, (void **)&j->iota);
    gnn_free(iota);
    if (rc < 0) goto fail;
    int host = gnn_be_host_memory(j->be);
    gnn_loader_opts_t lo = {
        .graph = graph,
        .layers = o->layers,
        .fanouts = j->fanout,
        .feat = feat,
        .feat_dim = j->g.feat_dim,
        .feat_row = feat_row,
        .labels = labels,
        .key_ids = j->dist ? j->dist->gid : NULL,
        .remote = j->remote_rows ? &j->remote : NULL,
        .threads = o->prefetch > 0 && !j->remote_rows ? o->sampler_threads : 0,
        .prefetch = o->prefetch > 0 ? o->prefetch : 1,
        .prepare = host ? prepare_graphs : NULL,
        .unprepare = host ? release_graphs : NULL,
        .ctx = j,
    };
    GNN_TRY(gnn_loader_create(&lo, &j->ld));
    return 0;
fail:
    return rc;
}

/* The cache row of node v beyond the part (v >= n_all), or -1. */
static int64_t cache_out_row(const job_t *j, int64_t v)
{
    return gnn_dist_pairs_find(j->cache_out, j->n_cache_out, v);
}

/*
 * Mini-batches over a partition directory: sampling runs on the part
 * (its rows reach H - 1 hops of halo, so L <= H layers never leave it);
 * with fewer hops than layers, the nodes whose rows the part lacks are
 * drawn by their owners (gnn_dist_draw_remote), so each step's batch is
 * then sampled in step order by one thread on every rank. The features
 * of remote input nodes come from their owners each step, except those of
 * the --feature-cache: the remote nodes the part's rows name most often
 * (the ones sampling reaches most), fetched once here.
 */
static int setup_dist_minibatch(job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, f = d->feat_dim, remote = d->n_all - n, bytes = 0;
    int64_t *ids = NULL, *counts = NULL;
    int local = 0;
    j->remote_rows = d->hops < o->layers;
    if (j->remote_rows) {
        j->remote = (gnn_sampler_remote_t){.n_held = d->n_held, .first_hop = d->hops,
                                           .draw = gnn_dist_draw_remote, .ctx = d};
        if (d->rank == 0)
            GNN_INFO("%s has %d hop%s of halo for %d layers: hop%s %d to %d of each batch are "
                     "drawn by the nodes' owners",
                     o->data, d->hops, d->hops == 1 ? "" : "s", o->layers,
                     o->layers - d->hops > 1 ? "s" : "", d->hops + 1, o->layers);
        local = gnn_sampler_create(&d->full, o->layers, j->fanout, &j->idle);
        if (local == 0) local = gnn_sampler_set_key_ids(j->idle, d->gid);
        if (local == 0) local = gnn_sampler_set_remote(j->idle, &j->remote);
    }
    if (local == 0 && o->feature_cache) local = gnn_parse_size(o->feature_cache, &bytes);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    /* Steps: every rank takes the same number; a rank out of batches
     * still joins each step's fetch and allreduce, with no seeds. */
    counts = gnn_malloc_array((size_t)d->size + 1, sizeof *counts);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, counts ? 0 : GNN_FAIL(GNN_ENOMEM, "steps")));
    GNN_CHECK(MPI_Allgather(&d->split_n[GNN_SPLIT_TRAIN], 1, MPI_INT64_T, counts, 1, MPI_INT64_T,
                            MPI_COMM_WORLD) == MPI_SUCCESS,
              GNN_EMPI, "MPI_Allgather failed");
    int64_t B = o->batch_size;
    j->steps = 0;
    for (int r = 0; r < d->size; r++) {
        int64_t s = (counts[r] + B - 1) / B;
        j->steps = s > j->steps ? s : j->steps;
    }
    j->step_seeds = gnn_calloc((size_t)j->steps + 1, sizeof *j->step_seeds);
    GNN_CHECK(j->step_seeds, GNN_ENOMEM, "steps");
    for (int64_t s = 0; s < j->steps; s++)
        for (int r = 0; r < d->size; r++) {
            int64_t left = counts[r] - s * B;
            j->step_seeds[s] += left <= 0 ? 0 : left < B ? left : B;
        }
    /* The cache: the remote nodes ranked first, their rows fetched once.
     * Halo nodes are found through feat_row, nodes beyond the part
     * through the sorted cache_out list. */
    /* want is the same on every rank (so is the choice to pre-sample,
     * which is collective); cap is this rank's share of it. */
    int64_t want = f ? bytes / (f * (int64_t)sizeof(float)) : 0;
    int64_t cap = want < d->n_global - n ? want : d->n_global - n; /* every remote node */
    int presample = want > 0 && !strcmp(o->cache_policy, "sample");
    /* Beyond the halo only when owners draw: a cache that large may hold
     * every sampled node. */
    int64_t room = presample && j->remote_rows ? cap : cap < remote ? cap : remote;
    j->feat_row = gnn_malloc_array((size_t)d->n_all + 1, sizeof *j->feat_row);
    ids = gnn_malloc_array((size_t)room + 1, sizeof *ids);
    local = j->feat_row && ids ? 0 : GNN_FAIL(GNN_ENOMEM, "feature cache of %" PRId64 " rows", cap);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    j->n_cache = 0;
    if (presample) {
        gnn_sampler_t *ps = NULL;
        double t0 = now_s();
        local = gnn_sampler_create(&d->full, o->layers, j->fanout, &ps);
        if (local == 0) local = gnn_sampler_set_key_ids(ps, d->gid);
        if (local == 0 && j->remote_rows) local = gnn_sampler_set_remote(ps, &j->remote);
        rc = gnn_dist_agree(MPI_COMM_WORLD, local);
        if (rc < 0) {
            gnn_sampler_free(ps);
            goto fail;
        }
        gnn_featcache_presample_t pre = {
            .sampler = ps,
            .seeds = d->split[GNN_SPLIT_TRAIN],
            .n_seeds = d->split_n[GNN_SPLIT_TRAIN],
            .batch = B,
            .steps = j->steps,
            .seed = ((uint64_t)o->seed + 0x9E3779B97F4A7C15ull * (uint64_t)d->rank) ^
                    0x7072652d73616d70ull,
        };
        local = gnn_featcache_choose(d, &pre, cap, ids, &j->n_cache); /* agreed */
        gnn_sampler_free(ps);
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
        if (d->rank == 0)
            GNN_INFO("feature cache: one epoch pre-sampled in %.2f s", now_s() - t0);
    } else if (want > 0) {
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, gnn_featcache_choose(d, NULL, cap, ids,
                                                                    &j->n_cache)));
    }
    d->sample_bytes = 0;
    d->sample_s = 0.0;
    j->cache_feat = gnn_alloc_large(((size_t)(n + j->n_cache) * (size_t)f + 1) * sizeof(float));
    int64_t n_out = 0;
    for (int64_t c = 0; c < j->n_cache; c++) n_out += ids[c] >= d->n_all;
    j->cache_out = gnn_malloc_array(2 * (size_t)n_out + 2, sizeof *j->cache_out);
    local = j->cache_feat && j->cache_out
                ? 0
                : GNN_FAIL(GNN_ENOMEM, "feature cache of %" PRId64 " rows", j->n_cache);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    for (int64_t v = 0; v < d->n_all; v++) j->feat_row[v] = v < n ? v : -1;
    j->n_cache_out = 0;
    for (int64_t c = 0; c < j->n_cache; c++) {
        if (ids[c] < d->n_all) {
            j->feat_row[ids[c]] = n + c;
            continue;
        }
        j->cache_out[2 * j->n_cache_out] = ids[c];
        j->cache_out[2 * j->n_cache_out++ + 1] = n + c;
    }
    gnn_dist_pairs_sort(j->cache_out, j->n_cache_out);
    memcpy(j->cache_feat, d->own_feat, (size_t)n * (size_t)f * sizeof(float));
    GNN_TRY(gnn_dist_fetch_feat(d, ids, j->n_cache, j->cache_feat + n * f));
    d->fetch_bytes = 0;
    d->fetch_s = 0.0;
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, setup_minibatch_loader(j, &d->full, j->cache_feat,
                                                                  j->feat_row, d->label)));
    int level = 0;
    MPI_Query_thread(&level);
    if (level == MPI_THREAD_MULTIPLE) /* fetches may then run on a thread of their own */
        GNN_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d->fetch_comm) == MPI_SUCCESS, GNN_EMPI,
                  "MPI_Comm_dup failed");
fail:
    gnn_free(ids);
    gnn_free(counts);
    return rc;
}

/* The model's halo exchange on (full-graph steps and evaluation) or off. */
static int set_halo(job_t *j, int on)
{
    gnn_model_halo_t h = {.ctx = j->ddev,
                          .forward = gnn_dist_dev_halo_forward,
                          .backward = gnn_dist_dev_halo_backward,
                          .n_rows = j->dist->n_local,
                          .row_id = j->row_id,
                          .n_global = j->dist->n_global};
    return gnn_model_set_halo(j->model, on ? &h : NULL);
}

/* This rank's part (collective; every rank calls it once setup agreed). */
static int setup_dist(job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    gnn_backend_t *be = j->be;
    gnn_dist_part_t *d = j->dist;
    GNN_TRY(gnn_dist_load(MPI_COMM_WORLD, o->data, j->minibatch, d));
    int64_t n = d->n_owned, nl = d->n_local, f = d->feat_dim;
    /* What every rank can train on, agreed: the splits (their totals are
     * every rank's), the labels and features of the rank's own nodes (the
     * halo rows are their owners'). */
    int local = 0;
    for (int s = 0; s < GNN_NUM_SPLITS && local == 0; s++)
        if (d->split_total[s] == 0)
            local = GNN_FAIL(GNN_EINVAL, "%s: the %s split is empty (gnn-train needs train, valid "
                                         "and test nodes)",
                             o->data, gnn_split_names[s]);
    for (int s = 0; s < GNN_NUM_SPLITS && local == 0; s++)
        for (int64_t i = 0; i < d->split_n[s] && local == 0; i++)
            if (d->label[d->split[s][i]] < 0)
                local = GNN_FAIL(GNN_EINVAL, "%s: node %" PRId64 " of the %s split has no label",
                                 o->data, d->gid[d->split[s][i]], gnn_split_names[s]);
    if (local == 0) local = check_finite(o->data, d->feat, n, f, d->gid);
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    if (o->normalize_features) {
        normalize_rows(d->feat, nl, f);
        if (d->own_feat) normalize_rows(d->own_feat, n, f); /* what fetches serve */
    }
    j->g.feat_dim = f;
    j->g.num_classes = d->num_classes;
    j->g.csr.n_rows = n;
    j->g.csr.nnz = d->csr.nnz;
    GNN_TRY(gnn_be_upload_take(be, (void **)&d->feat, (size_t)nl * (size_t)f * sizeof(float),
                               (void **)&j->x));
    GNN_TRY(upload_new(be, d->label, (size_t)n * sizeof(int64_t), (void **)&j->labels));
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        j->split_n[s] = d->split_n[s];
        GNN_TRY(upload_new(be, d->split[s], (size_t)d->split_n[s] * sizeof(int64_t),
                           (void **)&j->split[s]));
    }
    GNN_TRY(upload_new(be, d->gid, (size_t)nl * sizeof(int64_t), (void **)&j->row_id));
    int64_t rows = j->minibatch && o->batch_size > n ? o->batch_size : n;
    GNN_TRY(gnn_be_alloc(be, (size_t)rows * (size_t)d->num_classes * sizeof(float) + 1,
                         (void **)&j->dlogits));
    GNN_TRY(gnn_be_graph_create_src_deg(be, &d->csr, d->src_deg, &j->bg));
    const gnn_aggr_def_t *sum = NULL;
    GNN_TRY(gnn_aggr_registry_find(j->reg, "sum", &sum));
    if (!j->minibatch && !o->full_halo) GNN_TRY(gnn_dist_loss_plans(d, o->layers));
    GNN_TRY(gnn_dist_dev_create(d, be, sum, &j->ddev));
    j->stage = gnn_dist_dev_staged(j->ddev);
    if (j->minibatch) GNN_TRY(setup_dist_minibatch(j));
    GNN_INFO("%s: part %d of %d: %" PRId64 " of %" PRId64 " nodes owned, %" PRId64
             " halo, %" PRId64 " in-edges, %" PRId64 " features, %" PRId64
             " classes, train/valid/test %" PRId64 "/%" PRId64 "/%" PRId64 " of %" PRId64
             "/%" PRId64 "/%" PRId64 "; %s, %s, %s, gradients summed with %s",
             o->data, d->rank, d->size, n, d->n_global, nl - n, (int64_t)d->csr.nnz, f,
             d->num_classes, d->split_n[0], d->split_n[1], d->split_n[2], d->split_total[0],
             d->split_total[1], d->split_total[2], o->model,
             j->minibatch ? "mini-batch" : "full graph", gnn_backend_describe(be),
             gnn_dist_dev_allreduce_name(j->ddev));
    if (j->minibatch)
        GNN_INFO("mini-batches of %" PRId64 " seeds per rank, fanouts %s, %" PRId64
                 " steps per epoch; feature cache %" PRId64 " of %" PRId64 " remote nodes",
                 o->batch_size, j->fanouts, j->steps, j->n_cache, d->n_all - n);
    for (int k = 0; d->size > 1 && k < d->n_loss_plans; k++)
        GNN_INFO("training steps: exchange %d receives %" PRId64 " of the %" PRId64
                 " halo rows, those the loss reads (--full-halo: all)",
                 k + 1, d->loss_plan[k].n_recv, nl - n);
fail:
    return rc;
}

static int setup(job_t *j)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    GNN_TRY(check_opts(o));
    if (j->rank == 0) GNN_TRY(check_paths(o)); /* rank 0 writes the outputs */
    if (gnn_model_kind_from_name(o->model, &j->kind) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--model: unknown model \"%s\" (expected gcn or sage)",
                      o->model);
        goto fail;
    }
    j->decay_scope = o->decay_scope ? o->decay_scope : j->kind == GNN_MODEL_GCN ? "first" : "all";
    j->minibatch = o->mode ? !strcmp(o->mode, "minibatch") : j->kind == GNN_MODEL_SAGE;
    if (j->minibatch)
        GNN_TRY(parse_fanouts(j));
    else
        snprintf(j->fanouts, sizeof j->fanouts, "-");
    if (o->threads > 0) {
        omp_set_num_threads(o->threads);
    } else if (j->dist) { /* ranks on one machine share its cores */
        const char *ls = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
        int local = ls ? atoi(ls) : 1, cores = omp_get_num_procs();
        if (local > 1) omp_set_num_threads(cores / local > 1 ? cores / local : 1);
    }
    GNN_CHECK(!o->feature_cache || (j->dist && j->minibatch), GNN_EUSAGE,
              "--feature-cache: only for mini-batches over a partition directory");
    GNN_CHECK(!o->full_halo || (j->dist && !j->minibatch), GNN_EUSAGE,
              "--full-halo: only for full-graph training over a partition directory");
    if (j->dist) {
        GNN_CHECK(strcmp(o->sparse_features, "on"), GNN_EUSAGE,
                  "--sparse-features on: not over a partition directory");
    }

    gnn_spmm_impl_t spmm = GNN_SPMM_AUTO;
    if (gnn_spmm_impl_from_name(o->spmm, &spmm) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--spmm %s: expected auto, cusparse, rowcache or balanced",
                      o->spmm);
        goto fail;
    }
    char devname[32];
    const char *device = o->device;
    if (j->dist && (!strcmp(device, "cuda") || !strcmp(device, "auto"))) {
        /* One GPU per rank: the ranks of a machine take its devices in turn. */
        int local = 0, count = 1, ndev = gnn_backend_device_count();
        GNN_TRY(gnn_dist_local_rank(MPI_COMM_WORLD, &local, &count));
        if (ndev > 0) {
            snprintf(devname, sizeof devname, "cuda:%d", local % ndev);
            device = devname;
            if (count > ndev)
                GNN_WARN("%d ranks on this machine share its %d CUDA device%s", count, ndev,
                         ndev == 1 ? "" : "s");
        }
    }
    GNN_TRY(gnn_backend_open(device, &j->be));
    if (gnn_be_set_spmm(j->be, spmm, o->deterministic) < 0) {
        rc = GNN_FAIL(GNN_EUSAGE, "--spmm %s: only with --device cuda", o->spmm);
        goto fail;
    }
    GNN_TRY(gnn_aggr_registry_create(&j->reg));
    if (o->aggr_plugin) GNN_TRY(gnn_aggr_registry_load(j->reg, o->aggr_plugin));
    const char *aggr = o->aggr ? o->aggr : j->kind == GNN_MODEL_GCN ? "gcn" : "mean";
    if (j->kind == GNN_MODEL_GCN && strcmp(aggr, "gcn")) {
        rc = GNN_FAIL(GNN_EUSAGE, "--aggr %s: the gcn model aggregates with gcn; use --model sage "
                                  "for other aggregators",
                      aggr);
        goto fail;
    }
    GNN_TRY(gnn_aggr_registry_find(j->reg, aggr, &j->aggr));
    if (j->dist) return 0; /* the part is loaded by setup_dist, once every rank got here */

    GNN_TRY(load_data(j));
    gnn_graph_t *g = &j->g;
    gnn_vid_t n = g->csr.n_rows;
    if (o->normalize_features) normalize_rows(g->feat, n, g->feat_dim);
    gnn_backend_t *be = j->be;
    GNN_TRY(setup_features(j));
    GNN_TRY(upload_new(be, g->label, (size_t)n * sizeof(int64_t), (void **)&j->labels));
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        j->split_n[s] = g->split_size[s];
        GNN_TRY(upload_new(be, g->split[s], (size_t)g->split_size[s] * sizeof(int64_t),
                           (void **)&j->split[s]));
    }
    int64_t rows = j->minibatch ? o->batch_size : n;
    GNN_TRY(gnn_be_alloc(be, (size_t)rows * (size_t)g->num_classes * sizeof(float),
                         (void **)&j->dlogits));
    if (j->minibatch)
        GNN_TRY(setup_minibatch_loader(j, &j->g.csr, j->feat_host, NULL, j->g.label));
    else
        GNN_TRY(gnn_be_graph_create(be, &g->csr, &j->bg));
    GNN_INFO("%s: %" GNN_PRIvid " nodes, %" GNN_PRIeid " edges, %" PRId64 " features, %" PRId64
             " classes, train/valid/test %" PRId64 "/%" PRId64 "/%" PRId64 "; %s, %s, %s",
             o->data, n, g->csr.nnz, g->feat_dim, g->num_classes, j->split_n[0], j->split_n[1],
             j->split_n[2], o->model, j->minibatch ? "mini-batch" : "full graph",
             gnn_backend_describe(be));
    if (j->minibatch)
        GNN_INFO("mini-batches of %" PRId64 " seeds, fanouts %s, %d sampler thread%s, prefetch %d",
                 o->batch_size, j->fanouts, o->sampler_threads, o->sampler_threads > 1 ? "s" : "",
                 o->prefetch);
    return 0;
fail:
    return rc;
}

/* ---- Checkpoint state ------------------------------------------------------ */

/* Fill the configuration part of j->ck from the options. */
static void ck_config(job_t *j, gnn_checkpoint_t *c)
{
    const gnn_train_opts_t *o = j->o;
    snprintf(c->model, sizeof c->model, "%s", o->model);
    snprintf(c->aggr, sizeof c->aggr, "%s", j->aggr->name);
    snprintf(c->decay_scope, sizeof c->decay_scope, "%s", j->decay_scope);
    snprintf(c->mode, sizeof c->mode, "%s", j->minibatch ? "minibatch" : "full");
    snprintf(c->fanouts, sizeof c->fanouts, "%s", j->fanouts);
    c->batch_size = j->minibatch ? o->batch_size : 0;
    c->layers = o->layers;
    c->in_dim = j->g.feat_dim;
    c->hidden = o->hidden;
    c->classes = j->g.num_classes;
    c->dropout = o->dropout;
    c->lr = o->lr;
    c->weight_decay = o->weight_decay;
    c->normalize_features = o->normalize_features;
    c->seed = (uint64_t)o->seed;
    c->runs = o->runs;
    c->num_nodes = j->dist ? j->dist->n_global : j->g.csr.n_rows;
    c->parts = j->dist ? j->dist->size : 0;
    c->train_nodes = j->dist ? j->dist->split_total[GNN_SPLIT_TRAIN] : j->split_n[GNN_SPLIT_TRAIN];
}

/* "a graph file" or "a partition directory of N parts" (parts as in
 * gnn_checkpoint_t), for messages about what a run trained on. */
static const char *parts_text(int64_t parts, char *buf, size_t size)
{
    if (parts == 0) return "a graph file";
    snprintf(buf, size, "a partition directory of %" PRId64 " parts", parts);
    return buf;
}

/* A resumed checkpoint must describe the same job. */
static int ck_match(job_t *j, const gnn_checkpoint_t *c)
{
    gnn_checkpoint_t want = {0};
    ck_config(j, &want);
    const char *p = j->o->checkpoint;
#define SAME_I(field, what)                                                                    \
    if (c->field != want.field)                                                                \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %" PRId64 " in the checkpoint but %" PRId64     \
                                    " now",                                                    \
                        p, what, (int64_t)c->field, (int64_t)want.field);
#define SAME_D(field, what)                                                                    \
    if (c->field != want.field)                                                                \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %g in the checkpoint but %g now", p, what,       \
                        c->field, want.field);
#define SAME_S(field, what)                                                                    \
    if (strcmp(c->field, want.field))                                                          \
        return GNN_FAIL(GNN_EINVAL, "%s: %s is %s in the checkpoint but %s now", p, what,       \
                        c->field, want.field);
    SAME_S(model, "the model")
    SAME_S(aggr, "the aggregator")
    SAME_I(in_dim, "the feature width")
    SAME_I(classes, "the number of classes")
    SAME_I(layers, "--layers")
    SAME_I(hidden, "--hidden")
    SAME_D(dropout, "--dropout")
    SAME_D(lr, "--lr")
    SAME_D(weight_decay, "--weight-decay")
    SAME_S(decay_scope, "--decay-scope")
    SAME_S(mode, "--mode")
    SAME_S(fanouts, "--fanouts")
    SAME_I(batch_size, "--batch-size")
    SAME_I(normalize_features, "--normalize-features")
    SAME_I(seed, "--seed")
    if (c->num_nodes >= 0) { /* recorded since version 3 */
        if (c->parts != want.parts) {
            char a[64], b[64];
            return GNN_FAIL(GNN_EINVAL, "%s: the checkpoint was written training on %s, this "
                                        "run trains on %s",
                            p, parts_text(c->parts, a, sizeof a),
                            parts_text(want.parts, b, sizeof b));
        }
        SAME_I(num_nodes, "the number of nodes")
        SAME_I(train_nodes, "the number of training nodes")
    }
#undef SAME_I
#undef SAME_D
#undef SAME_S
    if (c->runs > want.runs || c->runs_done > want.runs)
        return GNN_FAIL(GNN_EINVAL, "%s: %" PRId64 " runs in the checkpoint but --runs %" PRId64,
                        p, c->runs, want.runs);
    return 0;
}

/* Start run r from scratch in j->ck (keeping the finished runs). */
static void ck_new_run(gnn_checkpoint_t *c, int64_t r)
{
    c->run = r;
    c->epoch = 0;
    c->step = 0;
    c->rng_offset = 0;
    c->best_epoch = -1;
    c->bad_evals = 0;
    c->best_valid_acc = -1.0;
    c->best_valid_loss = INFINITY;
    c->best_test_acc = 0.0;
    c->best_train_acc = 0.0;
    c->min_valid_loss = INFINITY;
}

/* Copy the model and optimiser state into j->ck and write it. */
static int save_checkpoint(job_t *j)
{
    int rc = 0;
    if (j->rank > 0) return 0; /* rank 0 writes; every rank holds the same state */
    gnn_checkpoint_t *c = &j->ck;
    size_t bytes = (size_t)c->n_params * sizeof(float);
    if (j->model) {
        c->rng_offset = gnn_model_rng_offset(j->model);
        GNN_TRY(gnn_be_download(j->be, c->params, gnn_model_params(j->model), bytes));
        GNN_TRY(gnn_be_download(j->be, c->adam_m, j->adam_m, bytes));
        GNN_TRY(gnn_be_download(j->be, c->adam_v, j->adam_v, bytes));
    }
    GNN_TRY(gnn_checkpoint_save(j->o->checkpoint, c));
    GNN_DEBUG("checkpoint %s: run %" PRId64 " epoch %" PRId64, j->o->checkpoint, c->run + 1,
              c->epoch);
    return 0;
fail:
    return rc;
}

/* ---- One run --------------------------------------------------------------- */

/*
 * Layer-wise inference over all nodes: layer l for every node from layer
 * l - 1's output (held in hbuf[(l - 1) % 2]), in batches of
 * --eval-batch-size destinations with all their in-neighbours (gcn scaling
 * sources by their whole-graph degree, so the result is what a full-graph
 * forward gives, whatever the batch size). *logits
 * (n x classes) and *hidden (the last layer's input, n x *hidden_cols) are
 * backend buffers of the job (hidden may be the features).
 */
static int infer_layerwise(job_t *j, const float **logits, const float **hidden,
                           int64_t *hidden_cols)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    const gnn_csr_t *csr = &j->g.csr;
    int L = j->o->layers, host = gnn_be_host_memory(be);
    int64_t n = csr->n_rows, eb = j->o->eval_batch_size < n ? j->o->eval_batch_size : n;
    int64_t C = j->g.num_classes, H = j->o->hidden, wmax = H > C ? H : C;
    gnn_block_t blk = {0};
    gnn_bgraph_t *bg = NULL;
    int64_t *sdeg = NULL;
    size_t sdeg_cap = 0;
    gnn_vid_t *dst = gnn_malloc_array((size_t)eb + 1, sizeof *dst);
    GNN_CHECK(dst, GNN_ENOMEM, "inference batch");
    if (!j->outdeg) { /* gcn scales its sources by their degree in the whole graph */
        j->outdeg = gnn_calloc((size_t)n + 1, sizeof *j->outdeg);
        GNN_CHECK(j->outdeg, GNN_ENOMEM, "out-degrees");
        for (gnn_eid_t e = 0; e < csr->nnz; e++) j->outdeg[csr->indices[e]]++;
    }
    for (int k = 0; k < (L > 1 ? 2 : 1); k++)
        GNN_TRY(ensure(be, (void **)&j->hbuf[k], &j->hbuf_bytes[k],
                       (size_t)n * (size_t)wmax * sizeof(float)));
    const float *in = j->x;
    int64_t fin = j->g.feat_dim;
    for (int l = 0; l < L; l++) {
        int64_t fout = l == L - 1 ? C : H;
        float *out = j->hbuf[l % 2];
        for (int64_t b0 = 0; b0 < n; b0 += eb) {
            int64_t nb = n - b0 < eb ? n - b0 : eb;
            for (int64_t i = 0; i < nb; i++) dst[i] = b0 + i;
            GNN_TRY(gnn_sampler_full_block(csr, dst, nb, &blk));
            int64_t nsrc = blk.csr.n_cols;
            const int64_t *idx = blk.src_ids;
            if (!host) {
                GNN_TRY(ensure(be, (void **)&j->eidx, &j->eidx_bytes,
                               (size_t)nsrc * sizeof(int64_t)));
                GNN_TRY(gnn_be_upload(be, j->eidx, blk.src_ids, (size_t)nsrc * sizeof(int64_t)));
                idx = j->eidx;
            }
            GNN_TRY(ensure(be, (void **)&j->ebuf, &j->ebuf_bytes,
                           (size_t)nsrc * (size_t)fin * sizeof(float)));
            GNN_TRY(gnn_be_gather_rows(be, nsrc, fin, in, n, idx, j->ebuf));
            if ((size_t)nsrc + 1 > sdeg_cap) {
                gnn_free(sdeg);
                sdeg_cap = (size_t)nsrc + 1;
                sdeg = gnn_malloc_array(sdeg_cap, sizeof *sdeg);
                GNN_CHECK(sdeg, GNN_ENOMEM, "inference batch degrees");
            }
            for (int64_t k = 0; k < nsrc; k++) sdeg[k] = j->outdeg[blk.src_ids[k]];
            GNN_TRY(gnn_be_graph_create_src_deg(be, &blk.csr, sdeg, &bg));
            const float *z;
            GNN_TRY(gnn_model_layer_infer(j->model, l, bg, j->ebuf, &z));
            GNN_TRY(gnn_be_copy(be, out + b0 * fout, z, (size_t)nb * (size_t)fout * sizeof(float)));
            GNN_TRY(gnn_be_sync(be)); /* bg and blk are freed next */
            gnn_be_graph_free(bg);
            bg = NULL;
            gnn_block_free(&blk);
        }
        if (l == L - 1) {
            *logits = out;
            *hidden = in;
            *hidden_cols = fin;
        }
        in = out;
        fin = fout;
    }
fail:
    gnn_be_graph_free(bg);
    gnn_block_free(&blk);
    gnn_free(sdeg);
    gnn_free(dst);
    return rc;
}

/* The logits of every node under the current parameters, without dropout. */
static int infer(job_t *j, const float **logits)
{
    if (j->dist && j->minibatch) { /* layer by layer over all nodes, halo rows exchanged */
        gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
        for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
        int rc = set_halo(j, 1);
        if (rc == 0) rc = gnn_model_forward(j->model, graphs, j->x, 0, logits);
        int off = set_halo(j, 0);
        return rc < 0 ? rc : off;
    }
    if (j->minibatch) {
        const float *hidden;
        int64_t cols;
        return infer_layerwise(j, logits, &hidden, &cols);
    }
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
    return gnn_model_forward(j->model, graphs, j->x, 0, logits);
}

static int evaluate(job_t *j, eval_t *ev)
{
    int rc = 0;
    const float *logits;
    int64_t n = j->g.csr.n_rows, C = j->g.num_classes;
    GNN_TRY(infer(j, &logits));
    for (int s = 0; s < GNN_NUM_SPLITS; s++) {
        int64_t correct = 0;
        if (j->split_n[s] > 0)
            GNN_TRY(gnn_be_count_correct(j->be, n, C, logits, j->labels, j->split[s],
                                         j->split_n[s], &correct));
        ev->acc[s] = j->split_n[s] ? (double)correct / (double)j->split_n[s] : 0.0;
    }
    ev->valid_loss = 0.0;
    if (j->split_n[GNN_SPLIT_VALID] > 0)
        GNN_TRY(gnn_be_softmax_xent(j->be, n, C, logits, j->labels, j->split[GNN_SPLIT_VALID],
                                    j->split_n[GNN_SPLIT_VALID], &ev->valid_loss, NULL));
    if (j->dist) { /* sums over the ranks, divided by the totals */
        const gnn_dist_part_t *d = j->dist;
        double v[GNN_NUM_SPLITS + 1];
        for (int s = 0; s < GNN_NUM_SPLITS; s++) v[s] = ev->acc[s] * (double)j->split_n[s];
        v[GNN_NUM_SPLITS] = ev->valid_loss * (double)j->split_n[GNN_SPLIT_VALID];
        GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, v, GNN_NUM_SPLITS + 1, MPI_DOUBLE, MPI_SUM,
                                MPI_COMM_WORLD) == MPI_SUCCESS,
                  GNN_EMPI, "MPI_Allreduce failed");
        for (int s = 0; s < GNN_NUM_SPLITS; s++)
            ev->acc[s] = d->split_total[s] ? floor(v[s] + 0.5) / (double)d->split_total[s] : 0.0;
        ev->valid_loss = d->split_total[GNN_SPLIT_VALID]
                             ? v[GNN_NUM_SPLITS] / (double)d->split_total[GNN_SPLIT_VALID]
                             : 0.0;
    }
    return 0;
fail:
    return rc;
}

/* One Adam step on the gradients, with weight decay on the first layer
 * only or on all. */
static int adam_step(job_t *j)
{
    int rc = 0;
    gnn_adam_opts_t ao = gnn_adam_defaults();
    ao.lr = (float)j->o->lr;
    ao.weight_decay = (float)j->o->weight_decay;
    int64_t step = ++j->ck.step, total = gnn_model_n_params(j->model);
    float *w = gnn_model_params(j->model), *g = gnn_model_grads(j->model);
    if (!strcmp(j->decay_scope, "all")) {
        GNN_TRY(gnn_be_adam(j->be, total, w, g, j->adam_m, j->adam_v, &ao, step));
    } else {
        int64_t off, cnt;
        gnn_model_layer_span(j->model, 0, &off, &cnt);
        GNN_TRY(gnn_be_adam(j->be, cnt, w, g, j->adam_m, j->adam_v, &ao, step));
        ao.weight_decay = 0.0f;
        if (total > cnt)
            GNN_TRY(gnn_be_adam(j->be, total - cnt, w + cnt, g + cnt, j->adam_m + cnt,
                                j->adam_v + cnt, &ao, step));
    }
    return 0;
fail:
    return rc;
}

/* Hash of the parameters (FNV-1a over their bytes). */
/* FNV-1a of the parameters' bytes into *h. */
static int params_hash(job_t *j, uint64_t *h)
{
    size_t n = (size_t)gnn_model_n_params(j->model) * sizeof(float);
    unsigned char *copy = NULL;
    const unsigned char *b = (const unsigned char *)gnn_model_params(j->model);
    if (!gnn_be_host_memory(j->be)) {
        copy = gnn_malloc(n + 1);
        if (!copy) return GNN_FAIL(GNN_ENOMEM, "parameter hash");
        int rc = gnn_be_download(j->be, copy, b, n);
        if (rc < 0) {
            gnn_free(copy);
            return rc;
        }
        b = copy;
    }
    *h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 1099511628211ull;
    gnn_free(copy);
    return 0;
}

/*
 * The rest of a distributed step after the forward: the loss over this
 * rank's training nodes as its share of the mean over all ranks', the
 * backward, the gradients summed over the ranks, Adam. *loss: the mean
 * over all training nodes (the same on every rank).
 */
static int dist_step(job_t *j, const float *logits, double *loss)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, C = d->num_classes, nt = j->split_n[GNN_SPLIT_TRAIN];
    int64_t total = d->split_total[GNN_SPLIT_TRAIN];
    double mine = 0.0;
    if (nt > 0) {
        GNN_TRY(gnn_be_softmax_xent(j->be, n, C, logits, j->labels, j->split[GNN_SPLIT_TRAIN], nt,
                                    &mine, j->dlogits));
        GNN_TRY(gnn_be_axpby(j->be, n * C, (float)((double)nt / (double)total), j->dlogits, 0.0f,
                             j->dlogits));
    } else {
        GNN_TRY(gnn_be_zero(j->be, j->dlogits, (size_t)(n * C) * sizeof(float)));
    }
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    GNN_TRY(gnn_be_sync(j->be)); /* allreduce_s times the sum, not the backward queued before */
    double t0 = now_s(), sum = mine * (double)nt;
    int64_t np = gnn_model_n_params(j->model);
    GNN_TRY(gnn_dist_dev_allreduce(j->ddev, gnn_model_grads(j->model), np));
    GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              GNN_EMPI, "loss allreduce failed");
    j->allreduce_s += now_s() - t0;
    j->grad_bytes += d->size > 1 ? np * (int64_t)sizeof(float) : 0;
    *loss = sum / (double)total;
    GNN_TRY(adam_step(j));
    if (j->o->debug) { /* every rank must now hold the same parameters */
        uint64_t h = 0;
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, params_hash(j, &h)));
        uint64_t lo = h, hi = h;
        GNN_CHECK(MPI_Allreduce(&h, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD) ==
                          MPI_SUCCESS &&
                      MPI_Allreduce(&h, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD) ==
                          MPI_SUCCESS,
                  GNN_EMPI, "parameter hash allreduce failed");
        if (lo != hi)
            rc = GNN_FAIL(GNN_EINVAL, "--debug: the parameters differ across ranks after step %" PRId64
                          " (rank %d hash %016" PRIx64 ")",
                          j->ck.step, d->rank, h);
        rc = gnn_dist_agree(MPI_COMM_WORLD, rc);
    }
fail:
    return rc;
}

static int train_epoch_full(job_t *j, double *loss)
{
    int rc = 0;
    const float *logits;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS];
    for (int l = 0; l < j->o->layers; l++) graphs[l] = j->bg;
    int64_t n = j->g.csr.n_rows, C = j->g.num_classes;
    GNN_TRY(gnn_model_forward(j->model, graphs, j->x, 1, &logits));
    if (j->dist) return dist_step(j, logits, loss);
    GNN_TRY(gnn_be_softmax_xent(j->be, n, C, logits, j->labels, j->split[GNN_SPLIT_TRAIN],
                                j->split_n[GNN_SPLIT_TRAIN], loss, j->dlogits));
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    GNN_TRY(adam_step(j));
    return 0;
fail:
    return rc;
}

/* One step on batch b: forward over its blocks, loss on its seeds,
 * backward, Adam. */
static int train_batch(job_t *j, gnn_loader_batch_t *b, double *loss)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    const gnn_minibatch_t *mb = &b->mb;
    int L = j->o->layers, own = !gnn_be_host_memory(be);
    int64_t F = j->g.feat_dim, C = j->g.num_classes, ns = mb->n_seeds;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    const float *x = b->x, *logits;
    const int64_t *y = b->y;
    for (int l = 0; l < L; l++) {
        if (own)
            GNN_TRY(gnn_be_graph_create(be, &mb->blocks[l].csr, &graphs[l]));
        else
            graphs[l] = b->user[l];
    }
    if (own) { /* the batch's host arrays onto the device */
        size_t xbytes = (size_t)mb->n_input * (size_t)F * sizeof(float);
        GNN_TRY(ensure(be, (void **)&j->xb, &j->xb_bytes, xbytes));
        GNN_TRY(gnn_be_upload(be, j->xb, b->x, xbytes));
        GNN_TRY(ensure(be, (void **)&j->yb, &j->yb_bytes, (size_t)ns * sizeof(int64_t)));
        GNN_TRY(gnn_be_upload(be, j->yb, b->y, (size_t)ns * sizeof(int64_t)));
        x = j->xb;
        y = j->yb;
    }
    if (!j->bxs) { /* dropout by node id, as over a partition directory */
        const int64_t *ids = mb->nodes;
        if (own) {
            size_t ibytes = (size_t)mb->n_input * sizeof(int64_t);
            GNN_TRY(ensure(be, (void **)&j->nb, &j->nb_bytes, ibytes));
            GNN_TRY(gnn_be_upload(be, j->nb, mb->nodes, ibytes));
            ids = j->nb;
        }
        GNN_TRY(gnn_model_set_row_ids(j->model, ids, j->g.csr.n_rows));
    }
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(gnn_be_softmax_xent(be, ns, C, logits, y, j->iota, ns, loss, j->dlogits));
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    GNN_TRY(adam_step(j));
fail:
    if (own)
        for (int l = 0; l < L; l++) gnn_be_graph_free(graphs[l]);
    return rc;
}

/* One epoch of mini-batches; *loss is the mean over the training nodes. */
static int train_epoch_minibatch(job_t *j, double *loss)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run;
    GNN_TRY(gnn_loader_start(j->ld, j->g.split[GNN_SPLIT_TRAIN], j->split_n[GNN_SPLIT_TRAIN],
                             j->o->batch_size, 1, seed, (uint64_t)c->epoch));
    double sum = 0.0, compute = 0.0;
    int64_t count = 0;
    for (;;) {
        gnn_loader_batch_t *b;
        GNN_TRY(gnn_loader_next(j->ld, &b));
        if (!b) break;
        double t0 = now_s(), bl = 0.0;
        int64_t ns = b->mb.n_seeds;
        rc = train_batch(j, b, &bl);
        gnn_loader_release(j->ld, b);
        if (rc < 0) goto fail;
        GNN_TRY(gnn_be_sync(j->be));
        compute += now_s() - t0;
        sum += bl * (double)ns;
        count += ns;
    }
    gnn_loader_stats(j->ld, &j->lst);
    j->compute_s = compute;
    *loss = count ? sum / (double)count : 0.0;
    return 0;
fail:
    return rc;
}

/* Sum the gradients over the ranks, then Adam (every rank the same step). */
static int dist_reduce_step(job_t *j)
{
    int rc = 0;
    GNN_TRY(gnn_be_sync(j->be)); /* allreduce_s times the sum, not the backward queued before */
    double t0 = now_s();
    int64_t np = gnn_model_n_params(j->model);
    GNN_TRY(gnn_dist_dev_allreduce(j->ddev, gnn_model_grads(j->model), np));
    j->allreduce_s += now_s() - t0;
    j->grad_bytes += j->dist->size > 1 ? np * (int64_t)sizeof(float) : 0;
    GNN_TRY(adam_step(j));
fail:
    return rc;
}

/* One step's batch and the remote feature rows it still needs. */
typedef struct {
    gnn_loader_batch_t *b; /* NULL: this rank has no batch at this step */
    int64_t *miss, *pos;   /* local ids of the rows to fetch, and their input rows */
    int64_t nm, cap;
    float *rows;           /* nm x F fetched */
    size_t rows_cap;
    /* The fetch, possibly on a thread of its own, which takes the batch
     * first when sampling is collective (j->remote_rows). */
    job_t *j;
    int has, take;
    int64_t *remote, *hits;
    pthread_t thread;
    int running, rc;
    char msg[512];
} pending_t;

static void pending_free(pending_t *p)
{
    gnn_free(p->miss);
    gnn_free(p->pos);
    gnn_free(p->rows);
}

/* Take the next batch (if this rank has one at this step) and list the
 * remote rows the cache does not hold. Local to this rank. */
static int pending_take(job_t *j, pending_t *p, int has, int64_t *remote, int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    int64_t F = d->feat_dim;
    p->b = NULL;
    p->nm = 0;
    if (!has && j->idle) { /* no batch, but the others' remote draws */
        gnn_minibatch_t mb;
        rc = gnn_sampler_sample(j->idle, NULL, 0, 0, 0, 0, &mb);
        gnn_minibatch_free(&mb);
        return rc;
    }
    if (!has) return 0;
    GNN_TRY(gnn_loader_next(j->ld, &p->b));
    GNN_CHECK(p->b, GNN_EINVAL, "fewer batches than steps");
    const gnn_minibatch_t *mb = &p->b->mb;
    if (mb->n_input > p->cap) {
        gnn_free(p->miss);
        gnn_free(p->pos);
        p->cap = mb->n_input;
        p->miss = gnn_malloc_array((size_t)p->cap, sizeof *p->miss);
        p->pos = gnn_malloc_array((size_t)p->cap, sizeof *p->pos);
        if (!p->miss || !p->pos) p->cap = 0;
        GNN_CHECK(p->cap, GNN_ENOMEM, "batch fetch lists");
    }
    for (gnn_vid_t k = 0; k < mb->n_input; k++) {
        gnn_vid_t v = mb->nodes[k];
        if (v < d->n_owned) continue;
        (*remote)++;
        int64_t row = v < d->n_all ? -1 : cache_out_row(j, v);
        if (row >= 0) /* the loader leaves rows beyond the part to this */
            memcpy(p->b->x + k * F, j->cache_feat + row * F, (size_t)F * sizeof(float));
        if (row >= 0 || (v < d->n_all && j->feat_row[v] >= 0)) {
            (*hits)++;
            continue;
        }
        p->miss[p->nm] = v;
        p->pos[p->nm++] = k;
    }
    if ((size_t)(p->nm * F) + 1 > p->rows_cap) {
        gnn_free(p->rows);
        p->rows_cap = (size_t)(p->nm * F) + 1;
        p->rows = gnn_alloc_large(p->rows_cap * sizeof *p->rows);
        if (!p->rows) p->rows_cap = 0;
        GNN_CHECK(p->rows, GNN_ENOMEM, "fetched features");
    }
fail:
    return rc;
}

/* The collective part of a step's preparation: the batch when sampling
 * is collective, then the fetch. */
static int pending_work(pending_t *p)
{
    gnn_dist_part_t *d = p->j->dist;
    if (p->take) { /* agreed: a rank failing after the last exchange tells the others */
        MPI_Comm comm = d->fetch_comm != MPI_COMM_NULL ? d->fetch_comm : d->comm;
        int rc = gnn_dist_agree(comm, pending_take(p->j, p, p->has, p->remote, p->hits));
        if (rc < 0) return rc;
    }
    return gnn_dist_fetch_feat(d, p->miss, p->nm, p->rows);
}

static void *fetch_thread(void *arg)
{
    pending_t *p = arg;
    omp_set_num_threads(1); /* the training thread's OpenMP team keeps the cores */
    p->rc = pending_work(p);
    if (p->rc < 0) snprintf(p->msg, sizeof p->msg, "%s", gnn_error_message());
    return NULL;
}

/* Prepare the step's batch (has: this rank has one at this step): take it
 * here when sampling is local, then start what is collective (in step
 * order on every rank) on a thread when overlap is on, else do it here and
 * now. */
static int pending_start(job_t *j, pending_t *p, int has, int overlap, int64_t *remote,
                         int64_t *hits)
{
    int rc = 0;
    p->j = j;
    p->has = has;
    p->take = j->remote_rows;
    p->remote = remote;
    p->hits = hits;
    p->rc = 0;
    if (!p->take) GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, pending_take(j, p, has, remote, hits)));
    if (overlap && pthread_create(&p->thread, NULL, fetch_thread, p) == 0) {
        p->running = 1;
        return 0;
    }
    if (overlap) /* no thread: every rank must still take part, so work here */
        GNN_WARN("cannot start a fetch thread: fetching in the training thread");
    return pending_work(p);
fail:
    return rc;
}

/* Wait for the fetch and put its rows into the batch's input. */
static int pending_finish(pending_t *p, int64_t F)
{
    if (p->running) {
        pthread_join(p->thread, NULL);
        p->running = 0;
        if (p->rc < 0) return GNN_FAIL(p->rc, "%s", p->msg);
    }
    if (p->b)
        for (int64_t i = 0; i < p->nm; i++)
            memcpy(p->b->x + p->pos[i] * F, p->rows + i * F, (size_t)F * sizeof(float));
    return 0;
}

/* Forward, loss as this rank's share of the step's mean, backward; zero
 * gradients without a batch. The batch is released. */
static int dist_batch_grads(job_t *j, pending_t *p, int64_t step, double *sum)
{
    int rc = 0;
    gnn_backend_t *be = j->be;
    int L = j->o->layers, own = !gnn_be_host_memory(be);
    int64_t C = j->dist->num_classes;
    if (!p->b)
        return gnn_be_zero(be, gnn_model_grads(j->model),
                           (size_t)gnn_model_n_params(j->model) * sizeof(float));
    const gnn_minibatch_t *mb = &p->b->mb;
    int64_t ns = mb->n_seeds;
    gnn_bgraph_t *graphs[GNN_MODEL_MAX_LAYERS] = {0};
    const float *logits;
    double bl = 0.0;
    for (int l = 0; l < L; l++) {
        if (own)
            GNN_TRY(gnn_be_graph_create(be, &mb->blocks[l].csr, &graphs[l]));
        else
            graphs[l] = p->b->user[l];
    }
    if (mb->n_input > j->batch_pid_cap) {
        gnn_free(j->batch_pid);
        j->batch_pid_cap = mb->n_input;
        j->batch_pid = gnn_malloc_array((size_t)j->batch_pid_cap, sizeof *j->batch_pid);
        if (!j->batch_pid) j->batch_pid_cap = 0;
        GNN_CHECK(j->batch_pid, GNN_ENOMEM, "batch ids");
    }
    for (gnn_vid_t k = 0; k < mb->n_input; k++)
        j->batch_pid[k] = gnn_dist_pid(j->dist, mb->nodes[k]);
    const float *x = p->b->x;
    const int64_t *y = p->b->y, *pid = j->batch_pid;
    if (j->stage) { /* the batch's host arrays onto the backend */
        size_t xbytes = (size_t)mb->n_input * (size_t)j->dist->feat_dim * sizeof(float);
        size_t ibytes = (size_t)mb->n_input * sizeof(int64_t);
        GNN_TRY(ensure(be, (void **)&j->xb, &j->xb_bytes, xbytes));
        GNN_TRY(gnn_be_upload(be, j->xb, x, xbytes));
        GNN_TRY(ensure(be, (void **)&j->yb, &j->yb_bytes, (size_t)ns * sizeof(int64_t)));
        GNN_TRY(gnn_be_upload(be, j->yb, y, (size_t)ns * sizeof(int64_t)));
        GNN_TRY(ensure(be, (void **)&j->nb, &j->nb_bytes, ibytes));
        GNN_TRY(gnn_be_upload(be, j->nb, pid, ibytes));
        x = j->xb;
        y = j->yb;
        pid = j->nb;
    }
    GNN_TRY(gnn_model_set_row_ids(j->model, pid, j->dist->n_global));
    GNN_TRY(gnn_model_forward(j->model, graphs, x, 1, &logits));
    GNN_TRY(gnn_be_softmax_xent(be, ns, C, logits, y, j->iota, ns, &bl, j->dlogits));
    GNN_TRY(gnn_be_axpby(be, ns * C, (float)((double)ns / (double)j->step_seeds[step]),
                         j->dlogits, 0.0f, j->dlogits));
    GNN_TRY(gnn_model_backward(j->model, j->dlogits));
    *sum += bl * (double)ns;
fail:
    if (own)
        for (int l = 0; l < L; l++) gnn_be_graph_free(graphs[l]);
    gnn_loader_release(j->ld, p->b);
    p->b = NULL;
    return rc;
}

/*
 * One epoch of distributed mini-batches: every rank takes j->steps steps;
 * in each, its next batch of its own training nodes (none once its batches
 * are done), the features of remote input nodes not cached fetched from
 * their owners, the loss as its share of the mean over all ranks' seeds of
 * the step, gradients summed, one Adam step. With overlap (MPI allows
 * threads, and the loader hands out two batches at once), step s + 1's
 * batch is taken and its fetch runs on a thread, over its own
 * communicator, while step s trains. *remote, *hits: this rank's remote
 * input rows and those the cache held.
 */
static int train_epoch_dist_minibatch(job_t *j, double *loss, int64_t *remote, int64_t *hits)
{
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    gnn_checkpoint_t *c = &j->ck;
    int64_t F = d->feat_dim, nt = d->split_n[GNN_SPLIT_TRAIN];
    pending_t pend[2];
    memset(pend, 0, sizeof pend);
    j->fetch_wait_s = 0.0;
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run + 0x9E3779B97F4A7C15ull * (uint64_t)d->rank;
    double sum = 0.0, compute = 0.0, wait = 0.0;
    int level = 0;
    MPI_Query_thread(&level);
    int overlap = level == MPI_THREAD_MULTIPLE && d->fetch_comm != MPI_COMM_NULL &&
                  gnn_loader_max_held(j->ld) >= 2;
    j->fetch_overlap = overlap;
    int local = nt > 0 ? gnn_loader_start(j->ld, d->split[GNN_SPLIT_TRAIN], nt, j->o->batch_size,
                                          1, seed, (uint64_t)c->epoch)
                       : 0;
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    int64_t mine = nt > 0 ? gnn_loader_batches(j->ld) : 0;
    /* Dropout by node over the whole graph: every rank's stream advances
     * by the same span per step, with or without a batch, so a
     * checkpoint's offset (rank 0's) is every rank's. */
    uint64_t off0 = gnn_model_rng_offset(j->model);
    uint64_t span = gnn_model_dropout_span(j->model, d->n_global);
    if (j->steps > 0) GNN_TRY(pending_start(j, &pend[0], 0 < mine, overlap, remote, hits));
    for (int64_t s = 0; s < j->steps; s++) {
        pending_t *cur = &pend[s % 2], *next = &pend[(s + 1) % 2];
        double t0 = now_s();
        GNN_TRY(pending_finish(cur, F));
        wait += now_s() - t0;
        if (overlap && s + 1 < j->steps) /* step s + 1's batch, fetched while s trains */
            GNN_TRY(pending_start(j, next, s + 1 < mine, 1, remote, hits));
        t0 = now_s();
        rc = dist_batch_grads(j, cur, s, &sum);
        if (rc < 0) goto fail; /* a failure of this rank alone: the job ends */
        gnn_model_set_rng_offset(j->model, off0 + (uint64_t)(s + 1) * span);
        compute += now_s() - t0;
        GNN_TRY(dist_reduce_step(j));
        if (!overlap && s + 1 < j->steps) {
            t0 = now_s();
            GNN_TRY(pending_start(j, next, s + 1 < mine, 0, remote, hits));
            wait += now_s() - t0;
        }
    }
    if (nt > 0) { /* the loader's end of epoch */
        gnn_loader_batch_t *b = NULL;
        GNN_TRY(gnn_loader_next(j->ld, &b));
        GNN_CHECK(!b, GNN_EINVAL, "more batches than steps");
        gnn_loader_stats(j->ld, &j->lst);
    } else {
        memset(&j->lst, 0, sizeof j->lst);
    }
    j->compute_s = compute;
    j->fetch_wait_s = wait;
    GNN_CHECK(MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) ==
                  MPI_SUCCESS,
              GNN_EMPI, "MPI_Allreduce failed");
    *loss = sum / (double)d->split_total[GNN_SPLIT_TRAIN];
fail:
    for (int i = 0; i < 2; i++)
        if (pend[i].running) pthread_join(pend[i].thread, NULL);
    /* Batches go back in the order they were taken (the loader's slots
     * are reused in that order). */
    int first = pend[0].b && pend[1].b && pend[1].b->index < pend[0].b->index ? 1 : 0;
    for (int i = 0; i < 2; i++) {
        pending_t *p = &pend[(first + i) % 2];
        if (p->b) gnn_loader_release(j->ld, p->b);
        pending_free(p);
    }
    return rc;
}

static int train_epoch(job_t *j, double *loss)
{
    if (!j->dist) return j->minibatch ? train_epoch_minibatch(j, loss) : train_epoch_full(j, loss);
    int rc = 0;
    gnn_dist_part_t *d = j->dist;
    d->bytes_sent = d->fetch_bytes = d->sample_bytes = j->grad_bytes = 0;
    d->exchange_s = d->fetch_s = d->sample_s = j->allreduce_s = 0.0;
    int64_t remote = 0, hits = 0;
    double t_start = now_s();
    if (j->minibatch)
        GNN_TRY(train_epoch_dist_minibatch(j, loss, &remote, &hits));
    else
        GNN_TRY(train_epoch_full(j, loss));
    /* This rank's step time less its own waits: the slowest is logged. */
    double waits = j->minibatch ? j->fetch_wait_s : d->exchange_s;
    double comp = now_s() - t_start - waits - j->allreduce_s;
    int64_t b[5] = {d->bytes_sent + d->fetch_bytes, j->grad_bytes, remote, hits, d->sample_bytes};
    double t[4] = {waits, j->allreduce_s, comp, d->fetch_s + d->sample_s};
    double ts = j->lst.sample_s, tsmax = 0.0;
    int64_t ball[5];
    GNN_CHECK(MPI_Allreduce(b, ball, 5, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Allreduce(MPI_IN_PLACE, t, 4, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) ==
                      MPI_SUCCESS &&
                  MPI_Allreduce(&ts, &tsmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
              GNN_EMPI, "MPI_Allreduce failed");
    j->ep_bytes[0] = ball[0];
    j->ep_bytes[1] = ball[1];
    j->ep_bytes[2] = ball[4];
    j->ep_remote = ball[2];
    j->ep_hits = ball[3];
    j->ep_sample_s = j->minibatch ? tsmax : 0.0;
    j->ep_fetch_s = t[0];
    j->ep_allreduce_s = t[1];
    j->ep_compute_s = t[2] > 0.0 ? t[2] : 0.0;
    j->ep_fetch_busy_s = t[3];
fail:
    return rc;
}

static void log_epoch(job_t *j, int64_t epoch, double loss, const eval_t *ev, int evaluated,
                      double epoch_s, double eval_s)
{
    gnn_checkpoint_t *c = &j->ck;
    if (j->log) {
        FILE *f = j->log;
        fprintf(f, "{\"run\": %" PRId64 ", \"epoch\": %" PRId64 ", \"loss\": ", c->run, epoch);
        gnn_json_number(f, loss);
        fprintf(f, ", \"train_acc\": ");
        gnn_json_number(f, ev->acc[GNN_SPLIT_TRAIN]);
        fprintf(f, ", \"valid_acc\": ");
        gnn_json_number(f, ev->acc[GNN_SPLIT_VALID]);
        fprintf(f, ", \"test_acc\": ");
        gnn_json_number(f, ev->acc[GNN_SPLIT_TEST]);
        fprintf(f, ", \"valid_loss\": ");
        gnn_json_number(f, ev->valid_loss);
        fprintf(f, ", \"evaluated\": %s, \"epoch_s\": ", evaluated ? "true" : "false");
        gnn_json_number(f, epoch_s);
        fprintf(f, ", \"eval_s\": ");
        gnn_json_number(f, eval_s);
        if (j->minibatch) {
            const gnn_loader_stats_t *st = &j->lst;
            fprintf(f, ", \"batches\": %" PRId64 ", \"sampled_edges\": %" PRId64
                       ", \"input_nodes_mean\": ",
                    st->batches, st->sampled_edges);
            gnn_json_number(f, st->batches ? (double)st->input_nodes / (double)st->batches : 0.0);
            fprintf(f, ", \"sample_s\": ");
            gnn_json_number(f, st->sample_s);
            fprintf(f, ", \"gather_s\": ");
            gnn_json_number(f, st->gather_s);
            fprintf(f, ", \"prepare_s\": ");
            gnn_json_number(f, st->prepare_s);
            fprintf(f, ", \"compute_s\": ");
            gnn_json_number(f, j->compute_s);
            fprintf(f, ", \"stall_s\": ");
            gnn_json_number(f, st->stall_s);
            fprintf(f, ", \"prefetch_stalls\": %" PRId64, st->stalls);
        }
        if (j->dist) { /* bytes: sent by all ranks; times: the slowest rank's */
            fprintf(f, ", \"ranks\": %d, \"feat_bytes\": %" PRId64 ", \"sample_bytes\": %" PRId64
                       ", \"grad_bytes\": %" PRId64,
                    j->dist->size, j->ep_bytes[0], j->ep_bytes[2], j->ep_bytes[1]);
            if (!j->minibatch) {
                fprintf(f, ", \"sample_s\": 0, \"compute_s\": ");
                gnn_json_number(f, j->ep_compute_s);
            } else {
                fprintf(f, ", \"steps\": %" PRId64 ", \"remote_inputs\": %" PRId64
                           ", \"cache_hits\": %" PRId64 ", \"cache_hit_rate\": ",
                        j->steps, j->ep_remote, j->ep_hits);
                gnn_json_number(f, j->ep_remote ? (double)j->ep_hits / (double)j->ep_remote : 0.0);
                fprintf(f, ", \"sample_s_max\": ");
                gnn_json_number(f, j->ep_sample_s);
                fprintf(f, ", \"fetch_busy_s\": ");
                gnn_json_number(f, j->ep_fetch_busy_s);
                fprintf(f, ", \"fetch_overlap\": %s", j->fetch_overlap ? "true" : "false");
            }
            fprintf(f, ", \"fetch_s\": ");
            gnn_json_number(f, j->ep_fetch_s);
            fprintf(f, ", \"allreduce_s\": ");
            gnn_json_number(f, j->ep_allreduce_s);
        }
        fprintf(f, "}\n");
        fflush(f);
    }
    char line[256];
    if (isnan(ev->acc[GNN_SPLIT_TEST])) /* nothing evaluated yet */
        snprintf(line, sizeof line, "run %" PRId64 "/%d epoch %4" PRId64 "/%d  loss %.4f  %.1f ms",
                 c->run + 1, j->o->runs, epoch, j->o->epochs, loss, 1e3 * epoch_s);
    else
        snprintf(line, sizeof line,
                 "run %" PRId64 "/%d epoch %4" PRId64 "/%d  loss %.4f  train %.4f  valid %.4f  "
                 "test %.4f  %.1f ms",
                 c->run + 1, j->o->runs, epoch, j->o->epochs, loss, ev->acc[GNN_SPLIT_TRAIN],
                 ev->acc[GNN_SPLIT_VALID], ev->acc[GNN_SPLIT_TEST], 1e3 * epoch_s);
    if (j->o->runs == 1)
        GNN_INFO("%s", line);
    else
        GNN_DEBUG("%s", line);
}

/* Run j->ck.run from its current position; model and Adam state set. */
static int run_epochs(job_t *j)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    const gnn_train_opts_t *o = j->o;
    size_t pbytes = (size_t)c->n_params * sizeof(float);
    eval_t ev = {{NAN, NAN, NAN}, NAN}; /* null in the log until the first evaluation */
    gnn_progress_t *prog = gnn_progress_start("epochs", o->epochs, "epochs");
    gnn_progress_set(prog, c->epoch);
    while (c->epoch < o->epochs) {
        double t0 = now_s(), loss;
        GNN_TRY(train_epoch(j, &loss));
        GNN_TRY(gnn_be_sync(j->be));
        double epoch_s = now_s() - t0;
        if (c->epoch > 0 || o->epochs == 1) { /* the first epoch also faults in every buffer */
            j->epoch_s_sum += epoch_s;
            j->epoch_s_count++;
        }
        c->epoch++;
        int evaluated = o->eval_every > 0 && (c->epoch % o->eval_every == 0 || c->epoch == o->epochs);
        double eval_s = 0.0;
        int stop = 0;
        if (evaluated) {
            double t1 = now_s();
            GNN_TRY(evaluate(j, &ev));
            eval_s = now_s() - t1;
            double va = ev.acc[GNN_SPLIT_VALID];
            if (isnan(c->best_valid_acc) || va > c->best_valid_acc ||
                (va == c->best_valid_acc && ev.valid_loss < c->best_valid_loss)) {
                c->best_valid_acc = va;
                c->best_valid_loss = ev.valid_loss;
                c->best_test_acc = ev.acc[GNN_SPLIT_TEST];
                c->best_train_acc = ev.acc[GNN_SPLIT_TRAIN];
                c->best_epoch = c->epoch;
                GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), pbytes));
            }
            if (ev.valid_loss < c->min_valid_loss) {
                c->min_valid_loss = ev.valid_loss;
                c->bad_evals = 0;
            } else {
                c->bad_evals++;
            }
            stop = o->early_stop > 0 && c->bad_evals >= o->early_stop;
        }
        /* Diverged. Both losses are reduced over the ranks, so every rank
         * decides alike; the agreement names one reporting rank. */
        int local = 0;
        if (!isfinite(loss))
            local = GNN_FAIL(GNN_ERANGE, "loss is not finite at epoch %" PRId64 " (lower --lr?)",
                             c->epoch);
        else if (evaluated && !isfinite(ev.valid_loss))
            local = GNN_FAIL(GNN_ERANGE, "validation loss is not finite at epoch %" PRId64
                                         " (lower --lr?)",
                             c->epoch);
        GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, local) : local);
        log_epoch(j, c->epoch, loss, &ev, evaluated, epoch_s, eval_s);
        gnn_progress_set(prog, c->epoch);
        if (stop) {
            GNN_INFO("run %" PRId64 ": early stop at epoch %" PRId64 " (validation loss not "
                     "lower for %d evaluations)",
                     c->run + 1, c->epoch, o->early_stop);
            break;
        }
        if (o->checkpoint && c->epoch % o->checkpoint_every == 0 && c->epoch < o->epochs)
            GNN_TRY(save_checkpoint(j));
    }
    gnn_progress_finish(prog);
    if (c->best_epoch < 0 || o->eval_every == 0) {
        /* Never evaluated (--eval-every 0, or no epoch to train): the last
         * parameters stand, accuracies unknown. */
        c->best_epoch = c->epoch;
        c->best_valid_acc = c->best_test_acc = c->best_train_acc = NAN;
        GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), pbytes));
    }
    return 0;
fail:
    gnn_progress_end(prog, rc);
    return rc;
}

static int ck_alloc(job_t *j, int64_t np);

/* Create the model and optimiser state of run c->run (restoring them from
 * the checkpoint arrays when restore is set). */
static int start_run(job_t *j, int restore)
{
    int rc = 0;
    gnn_checkpoint_t *c = &j->ck;
    gnn_model_config_t mc = {
        .kind = j->kind,
        .layers = j->o->layers,
        .in_dim = j->g.feat_dim,
        .hidden = j->o->hidden,
        .classes = j->g.num_classes,
        .dropout = (float)j->o->dropout,
        .aggr = j->aggr,
    };
    uint64_t seed = (uint64_t)j->o->seed + (uint64_t)c->run;
    gnn_model_free(j->model);
    j->model = NULL;
    GNN_TRY(gnn_model_create(j->be, j->reg, &mc, seed, &j->model));
    if (j->bxs) GNN_TRY(gnn_model_set_sparse_input(j->model, j->bxs));
    if (j->dist && !j->minibatch) GNN_TRY(set_halo(j, 1));
    int64_t np = gnn_model_n_params(j->model);
    size_t bytes = (size_t)np * sizeof(float);
    if (!c->params) GNN_TRY(ck_alloc(j, np));
    if (!j->adam_m) {
        GNN_TRY(gnn_be_alloc(j->be, bytes, (void **)&j->adam_m));
        GNN_TRY(gnn_be_alloc(j->be, bytes, (void **)&j->adam_v));
    }
    if (restore) {
        GNN_CHECK(c->n_params == np, GNN_EINVAL,
                  "%s: %" PRId64 " parameters in the checkpoint, the model has %" PRId64,
                  j->o->checkpoint, c->n_params, np);
        GNN_TRY(gnn_be_upload(j->be, gnn_model_params(j->model), c->params, bytes));
        GNN_TRY(gnn_be_upload(j->be, j->adam_m, c->adam_m, bytes));
        GNN_TRY(gnn_be_upload(j->be, j->adam_v, c->adam_v, bytes));
        gnn_model_set_rng(j->model, seed, c->rng_offset);
    } else {
        GNN_TRY(gnn_be_zero(j->be, j->adam_m, bytes));
        GNN_TRY(gnn_be_zero(j->be, j->adam_v, bytes));
        ck_new_run(c, c->run);
        GNN_TRY(gnn_be_download(j->be, c->best_params, gnn_model_params(j->model), bytes));
    }
    return 0;
fail:
    return rc;
}

/* Arrays of j->ck for np parameters and runs results. */
static int ck_alloc(job_t *j, int64_t np)
{
    gnn_checkpoint_t *c = &j->ck;
    c->n_params = np;
    c->params = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->adam_m = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->adam_v = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->best_params = gnn_malloc_array((size_t)np + 1, sizeof(float));
    c->run_test_acc = gnn_calloc((size_t)j->o->runs + 1, sizeof(double));
    c->run_valid_acc = gnn_calloc((size_t)j->o->runs + 1, sizeof(double));
    if (!c->params || !c->adam_m || !c->adam_v || !c->best_params || !c->run_test_acc ||
        !c->run_valid_acc)
        return GNN_ENOMEM; /* recorded by the allocator */
    return 0;
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/*
 * Over a partition directory: every rank's rows (its owned nodes) to rank
 * 0, placed by graph-file id, so the file is the one a single process
 * writes. Collective; rank 0 writes.
 */
static int gather_predictions(job_t *j, const float *logits, const int64_t *pred,
                              const float *hidden, int64_t hc)
{
    int rc = 0, R = j->dist->size, rank = j->dist->rank;
    gnn_dist_part_t *d = j->dist;
    int64_t n = d->n_owned, N = d->n_global, C = d->num_classes;
    int *cnt = gnn_calloc((size_t)R * 2, sizeof *cnt);
    int64_t *ids = NULL, *all_pred = NULL, *all_ids = NULL;
    float *all_logits = NULL, *all_hidden = NULL, *lo = NULL, *hi = NULL;
    int64_t *pr = NULL;
    MPI_Datatype tl = MPI_DATATYPE_NULL, th = MPI_DATATYPE_NULL;
    int local = cnt && n <= INT_MAX && C <= INT_MAX && hc <= INT_MAX && hc > 0
                    ? 0
                    : GNN_FAIL(GNN_ENOMEM, "predictions");
    if (rank == 0 && local == 0) {
        all_ids = gnn_malloc_array((size_t)N + 1, sizeof *all_ids);
        all_pred = gnn_malloc_array((size_t)N + 1, sizeof *all_pred);
        all_logits = gnn_alloc_large(((size_t)N * (size_t)C + 1) * sizeof(float));
        all_hidden = gnn_alloc_large(((size_t)N * (size_t)hc + 1) * sizeof(float));
        lo = gnn_alloc_large(((size_t)N * (size_t)C + 1) * sizeof(float));
        hi = gnn_alloc_large(((size_t)N * (size_t)hc + 1) * sizeof(float));
        pr = gnn_malloc_array((size_t)N + 1, sizeof *pr);
        ids = gnn_malloc_array((size_t)N + 1, sizeof *ids);
        if (!all_ids || !all_pred || !all_logits || !all_hidden || !lo || !hi || !pr || !ids)
            local = GNN_FAIL(GNN_ENOMEM, "predictions of %" PRId64 " nodes", N);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
    int mine = (int)n, *displ = cnt + R;
    GNN_CHECK(MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Type_contiguous((int)C, MPI_FLOAT, &tl) == MPI_SUCCESS &&
                  MPI_Type_commit(&tl) == MPI_SUCCESS &&
                  MPI_Type_contiguous((int)hc, MPI_FLOAT, &th) == MPI_SUCCESS &&
                  MPI_Type_commit(&th) == MPI_SUCCESS,
              GNN_EMPI, "gathering predictions failed");
    int64_t at = 0;
    for (int r = 0; rank == 0 && r < R; r++) {
        displ[r] = (int)at;
        at += cnt[r];
    }
    GNN_CHECK(MPI_Gatherv(d->gid, mine, MPI_INT64_T, ids, cnt, displ, MPI_INT64_T, 0,
                          MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Gatherv(pred, mine, MPI_INT64_T, pr, cnt, displ, MPI_INT64_T, 0,
                              MPI_COMM_WORLD) == MPI_SUCCESS &&
                  MPI_Gatherv(logits, mine, tl, lo, cnt, displ, tl, 0, MPI_COMM_WORLD) ==
                      MPI_SUCCESS &&
                  MPI_Gatherv(hidden, mine, th, hi, cnt, displ, th, 0, MPI_COMM_WORLD) ==
                      MPI_SUCCESS,
              GNN_EMPI, "gathering predictions failed");
    local = 0;
    if (rank == 0) { /* row of graph-file node v at v */
        for (int64_t i = 0; i < at && local == 0; i++) {
            int64_t v = ids[i];
            if (v < 0 || v >= N) {
                local = GNN_FAIL(GNN_EINVAL, "predictions: node %" PRId64 " out of range", v);
                break;
            }
            all_ids[v] = v;
            all_pred[v] = pr[i];
            memcpy(all_logits + v * C, lo + i * C, (size_t)C * sizeof(float));
            memcpy(all_hidden + v * hc, hi + i * hc, (size_t)hc * sizeof(float));
        }
        if (local == 0 && at != N)
            local = GNN_FAIL(GNN_EINVAL, "predictions: %" PRId64 " rows for %" PRId64 " nodes",
                             at, N);
        if (local == 0)
            local = gnn_predictions_write(j->o->save_predictions, N, all_ids, C, all_logits,
                                          all_pred, hc, all_hidden);
        if (local == 0)
            GNN_INFO("predictions of %" PRId64 " nodes written to %s", N,
                     j->o->save_predictions);
    }
    GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, local));
fail:
    if (tl != MPI_DATATYPE_NULL) MPI_Type_free(&tl);
    if (th != MPI_DATATYPE_NULL) MPI_Type_free(&th);
    gnn_free(cnt);
    gnn_free(ids);
    gnn_free(all_ids);
    gnn_free(all_pred);
    gnn_free(all_logits);
    gnn_free(all_hidden);
    gnn_free(lo);
    gnn_free(hi);
    gnn_free(pr);
    return rc;
}

/* Predictions of the best parameters of the last run. */
static int write_predictions(job_t *j)
{
    int rc = 0;
    int64_t n = j->g.csr.n_rows, C = j->g.num_classes, hr, hc;
    float *logits_h = NULL, *hidden_h = NULL;
    int64_t *pred_d = NULL, *pred_h = NULL, *ids = NULL;
    const float *logits, *hidden;
    size_t pbytes = (size_t)j->ck.n_params * sizeof(float);
    GNN_TRY(gnn_be_upload(j->be, gnn_model_params(j->model), j->ck.best_params, pbytes));
    if (j->dist) { /* the full-graph forward over the parts */
        GNN_TRY(infer(j, &logits));
        hidden = gnn_model_last_hidden(j->model, &hr, &hc); /* owned rows first */
        GNN_CHECK(hidden, GNN_EINVAL, "predictions: no hidden rows");
        pred_h = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
        GNN_CHECK(pred_h, GNN_ENOMEM, "predictions");
        if (gnn_be_host_memory(j->be)) {
            GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_h));
            rc = gather_predictions(j, logits, pred_h, hidden, hc);
            goto fail;
        }
        /* The owned rows to host memory, for MPI. */
        logits_h = gnn_malloc_array((size_t)(n * C) + 1, sizeof(float));
        hidden_h = gnn_malloc_array((size_t)(n * hc) + 1, sizeof(float));
        GNN_CHECK(logits_h && hidden_h, GNN_ENOMEM, "predictions");
        GNN_TRY(gnn_be_alloc(j->be, (size_t)n * sizeof(int64_t), (void **)&pred_d));
        GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_d));
        GNN_TRY(gnn_be_download(j->be, pred_h, pred_d, (size_t)n * sizeof(int64_t)));
        GNN_TRY(gnn_be_download(j->be, logits_h, logits, (size_t)(n * C) * sizeof(float)));
        GNN_TRY(gnn_be_download(j->be, hidden_h, hidden, (size_t)(n * hc) * sizeof(float)));
        rc = gather_predictions(j, logits_h, pred_h, hidden_h, hc);
        goto fail;
    }
    if (j->minibatch) {
        GNN_TRY(infer_layerwise(j, &logits, &hidden, &hc));
        hr = n;
    } else {
        GNN_TRY(infer(j, &logits));
        hidden = gnn_model_last_hidden(j->model, &hr, &hc);
    }
    int hidden_on_host = 0;
    if (!hidden) { /* one layer on sparse input: its input is the features */
        hidden = j->g.feat;
        hr = n;
        hc = j->g.feat_dim;
        hidden_on_host = 1;
    }
    logits_h = gnn_malloc_array((size_t)(n * C) + 1, sizeof(float));
    hidden_h = gnn_malloc_array((size_t)(hr * hc) + 1, sizeof(float));
    pred_h = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
    ids = gnn_malloc_array((size_t)n + 1, sizeof(int64_t));
    GNN_CHECK(logits_h && hidden_h && pred_h && ids, GNN_ENOMEM, "predictions");
    GNN_TRY(gnn_be_alloc(j->be, (size_t)n * sizeof(int64_t), (void **)&pred_d));
    GNN_TRY(gnn_be_argmax_rows(j->be, n, C, logits, pred_d));
    GNN_TRY(gnn_be_download(j->be, pred_h, pred_d, (size_t)n * sizeof(int64_t)));
    GNN_TRY(gnn_be_download(j->be, logits_h, logits, (size_t)(n * C) * sizeof(float)));
    if (hidden_on_host)
        memcpy(hidden_h, hidden, (size_t)(hr * hc) * sizeof(float));
    else
        GNN_TRY(gnn_be_download(j->be, hidden_h, hidden, (size_t)(hr * hc) * sizeof(float)));
    for (int64_t v = 0; v < n; v++) ids[v] = j->g.orig_id ? j->g.orig_id[v] : v;
    GNN_TRY(gnn_predictions_write(j->o->save_predictions, n, ids, C, logits_h, pred_h, hc,
                                  hidden_h));
    GNN_INFO("predictions of %" PRId64 " nodes written to %s", n, j->o->save_predictions);
fail:
    gnn_be_free(j->be, pred_d);
    gnn_free(logits_h);
    gnn_free(hidden_h);
    gnn_free(pred_h);
    gnn_free(ids);
    return rc;
}

static void write_final(job_t *j, const gnn_train_result_t *r)
{
    const gnn_checkpoint_t *c = &j->ck;
    if (j->log) {
        FILE *f = j->log;
        fprintf(f, "{\"final\": true, \"runs\": %d, \"test_acc\": ", r->runs);
        gnn_json_number(f, r->test_acc);
        fprintf(f, ", \"valid_acc\": ");
        gnn_json_number(f, r->valid_acc);
        fprintf(f, ", \"best_epoch\": %" PRId64 ", \"epoch_s_mean\": ", r->best_epoch);
        gnn_json_number(f, r->epoch_s_mean);
        if (r->runs > 1) {
            fprintf(f, ", \"test_acc_mean\": ");
            gnn_json_number(f, r->test_acc_mean);
            fprintf(f, ", \"test_acc_std\": ");
            gnn_json_number(f, r->test_acc_std);
            fprintf(f, ", \"valid_acc_mean\": ");
            gnn_json_number(f, r->valid_acc_mean);
            fprintf(f, ", \"run_test_acc\": [");
            for (int64_t i = 0; i < c->runs_done; i++) {
                if (i) fprintf(f, ", ");
                gnn_json_number(f, c->run_test_acc[i]);
            }
            fprintf(f, "]");
        }
        fprintf(f, "}\n");
        fflush(f);
    }
    if (isnan(r->runs > 1 ? r->test_acc_mean : r->test_acc))
        GNN_INFO("%d run%s without evaluation (%s), %.2f ms per epoch", r->runs,
                 r->runs > 1 ? "s" : "",
                 j->o->eval_every == 0 ? "--eval-every 0" : "no epoch trained",
                 1e3 * r->epoch_s_mean);
    else if (r->runs > 1)
        GNN_INFO("test accuracy %.2f %% +- %.2f over %d runs (valid %.2f %%), %.2f ms per epoch",
                 100.0 * r->test_acc_mean, 100.0 * r->test_acc_std, r->runs,
                 100.0 * r->valid_acc_mean, 1e3 * r->epoch_s_mean);
    else
        GNN_INFO("test accuracy %.2f %% at epoch %" PRId64 " (best validation %.2f %%), %.2f ms "
                 "per epoch",
                 100.0 * r->test_acc, r->best_epoch, 100.0 * r->valid_acc, 1e3 * r->epoch_s_mean);
}

static void job_free(job_t *j)
{
    gnn_model_free(j->model);
    if (j->be) {
        gnn_be_free(j->be, j->x);
        gnn_be_free(j->be, j->labels);
        for (int s = 0; s < GNN_NUM_SPLITS; s++) gnn_be_free(j->be, j->split[s]);
        gnn_be_free(j->be, j->dlogits);
        gnn_be_free(j->be, j->adam_m);
        gnn_be_free(j->be, j->adam_v);
        gnn_be_free(j->be, j->iota);
        gnn_be_free(j->be, j->xb);
        gnn_be_free(j->be, j->yb);
        gnn_be_free(j->be, j->nb);
        gnn_be_free(j->be, j->hbuf[0]);
        gnn_be_free(j->be, j->hbuf[1]);
        gnn_be_free(j->be, j->ebuf);
        gnn_be_free(j->be, j->eidx);
        gnn_be_free(j->be, j->row_id);
    }
    gnn_loader_free(j->ld); /* before the graph it samples and the backend */
    gnn_sampler_free(j->idle);
    gnn_free(j->outdeg);
    gnn_be_graph_free(j->bg);
    gnn_be_sparse_free(j->bxs);
    gnn_csr_free(&j->xs);
    gnn_graph_free(&j->g);
    gnn_aggr_registry_free(j->reg);
    gnn_dist_dev_free(j->ddev); /* before the backend it uses */
    gnn_backend_close(j->be);
    gnn_checkpoint_free(&j->ck);
    if (j->log) fclose(j->log);
    if (j->dist) gnn_dist_free(j->dist);
    gnn_free(j->step_seeds);
    gnn_free(j->feat_row);
    gnn_free(j->cache_feat);
    gnn_free(j->cache_out);
    gnn_free(j->batch_pid);
}

/* The state to start from: the checkpoint when resuming one (*restore:
 * the run in progress continues), else fresh; and the log opened (rank 0). */
static int load_state(job_t *j, int *restore)
{
    int rc = 0;
    const gnn_train_opts_t *o = j->o;
    *restore = 0;
    if (o->checkpoint && file_exists(o->checkpoint)) {
        if (!o->resume) {
            rc = GNN_FAIL(GNN_EEXISTS, "checkpoint %s exists (add --resume to continue it, or "
                                       "remove it)",
                          o->checkpoint);
            goto fail;
        }
        gnn_checkpoint_t loaded;
        GNN_TRY(gnn_checkpoint_load(o->checkpoint, &loaded));
        rc = ck_match(j, &loaded);
        if (rc < 0) {
            gnn_checkpoint_free(&loaded);
            goto fail;
        }
        GNN_TRY(ck_alloc(j, loaded.n_params));
        gnn_checkpoint_t *c = &j->ck;
        float *keep[4] = {c->params, c->adam_m, c->adam_v, c->best_params};
        double *kr[2] = {c->run_test_acc, c->run_valid_acc};
        size_t pb = (size_t)loaded.n_params * sizeof(float);
        memcpy(keep[0], loaded.params, pb);
        memcpy(keep[1], loaded.adam_m, pb);
        memcpy(keep[2], loaded.adam_v, pb);
        memcpy(keep[3], loaded.best_params, pb);
        memcpy(kr[0], loaded.run_test_acc, (size_t)loaded.runs_done * sizeof(double));
        memcpy(kr[1], loaded.run_valid_acc, (size_t)loaded.runs_done * sizeof(double));
        float *la[4] = {loaded.params, loaded.adam_m, loaded.adam_v, loaded.best_params};
        double *lr[2] = {loaded.run_test_acc, loaded.run_valid_acc};
        *c = loaded;
        c->params = keep[0], c->adam_m = keep[1], c->adam_v = keep[2], c->best_params = keep[3];
        c->run_test_acc = kr[0], c->run_valid_acc = kr[1];
        loaded.params = la[0], loaded.adam_m = la[1], loaded.adam_v = la[2];
        loaded.best_params = la[3], loaded.run_test_acc = lr[0], loaded.run_valid_acc = lr[1];
        gnn_checkpoint_free(&loaded);
        c->runs = o->runs;
        /* A run that ended at its last epoch (not stopped early) is
         * continued when --epochs now asks for more: the checkpoint holds
         * its final state. Earlier finished runs cannot be, so a checkpoint
         * with several is refused rather than silently left short. */
        if (c->runs_done > 0 && c->run == c->runs_done - 1 && c->epoch < o->epochs &&
            !(o->early_stop > 0 && c->bad_evals >= o->early_stop)) {
            if (c->runs_done > 1) {
                rc = GNN_FAIL(GNN_EINVAL,
                              "%s: its %" PRId64 " finished runs ended at epoch %" PRId64
                              ", --epochs %d would continue only the last one",
                              o->checkpoint, c->runs_done, c->epoch, o->epochs);
                goto fail;
            }
            c->runs_done--;
        }
        *restore = c->runs_done < o->runs && c->run == c->runs_done;
        GNN_INFO("resuming %s: run %" PRId64 "/%d after epoch %" PRId64, o->checkpoint,
                 c->run + 1, o->runs, c->epoch);
    } else if (o->resume) {
        GNN_WARN("no checkpoint at %s: starting from scratch", o->checkpoint);
    }
    ck_config(j, &j->ck);

    if (o->log_json && j->rank == 0) {
        j->log = fopen(o->log_json, *restore || j->ck.runs_done > 0 ? "a" : "w");
        GNN_CHECK(j->log, GNN_EIO, "cannot write the log %s: %s", o->log_json, strerror(errno));
    }
    return 0;
fail:
    return rc;
}

int gnn_train_run(const gnn_train_opts_t *o, gnn_train_result_t *res)
{
    int rc = 0;
    job_t job = {0}, *j = &job;
    j->o = o;
    gnn_graph_init(&j->g);
    gnn_dist_part_t dist;
    struct stat sb;
    int size = 1;
    /* What --data is: a directory, and the errno of its stat (0: it exists). */
    int kind[2] = {0, 0}, init = 0;
    if (o->data) {
        int st = stat(o->data, &sb);
        kind[0] = st == 0 && S_ISDIR(sb.st_mode);
        kind[1] = st == 0 ? 0 : errno;
    }
    MPI_Initialized(&init);
    if (init) MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 1) /* rank 0 decides, so every rank takes the same path */
        MPI_Bcast(kind, 2, MPI_INT, 0, MPI_COMM_WORLD);
    int is_dir = kind[0];
    if (!is_dir && size > 1) {
        /* Every rank is here and fails the same way; rank 0 reports. */
        int local = check_opts(o);
        if (local == 0 && kind[1])
            local = GNN_FAIL(kind[1] == ENOENT ? GNN_ENOENT : GNN_EIO, "%s: %s", o->data,
                             strerror(kind[1]));
        if (local == 0)
            local = GNN_FAIL(GNN_EUSAGE,
                             "%s is a graph file, which one process trains on; for %d ranks, "
                             "partition it with gnn-partition -k %d and train on the directory",
                             o->data, size, size);
        rc = gnn_dist_agree(MPI_COMM_WORLD, local);
        goto fail;
    }
    if (is_dir) {
        /* A partition directory: one rank per part. Settings are agreed
         * before the collective load. */
        memset(&dist, 0, sizeof dist);
        dist.fetch_comm = MPI_COMM_NULL;
        j->dist = &dist;
        MPI_Comm_rank(MPI_COMM_WORLD, &j->rank);
        rc = setup(j);
        GNN_TRY(gnn_dist_agree(MPI_COMM_WORLD, rc));
        GNN_TRY(setup_dist(j));
    } else {
        GNN_TRY(setup(j));
    }

    /* The state: from the checkpoint when resuming one, else fresh
     * (every rank reads it, and fails or goes on with the others). */
    int restore = 0;
    rc = load_state(j, &restore);
    GNN_TRY(j->dist ? gnn_dist_agree(MPI_COMM_WORLD, rc) : rc);

    int64_t first = j->ck.runs_done;
    for (int64_t r = first; r < o->runs; r++) {
        int cont = restore && r == first;
        if (!cont) j->ck.run = r;
        GNN_TRY(start_run(j, cont));
        GNN_TRY(run_epochs(j));
        gnn_checkpoint_t *c = &j->ck;
        c->run_test_acc[c->runs_done] = c->best_test_acc;
        c->run_valid_acc[c->runs_done] = c->best_valid_acc;
        c->runs_done++;
        if (!isnan(c->best_test_acc))
            GNN_INFO("run %" PRId64 "/%d: test accuracy %.2f %% at epoch %" PRId64
                     " (validation %.2f %%)",
                     r + 1, o->runs, 100.0 * c->best_test_acc, c->best_epoch,
                     100.0 * c->best_valid_acc);
        if (o->checkpoint) GNN_TRY(save_checkpoint(j));
    }

    gnn_train_result_t r = {0};
    gnn_checkpoint_t *c = &j->ck;
    r.runs = (int)c->runs_done;
    r.test_acc = c->best_test_acc;
    r.valid_acc = c->best_valid_acc;
    r.best_epoch = c->best_epoch;
    double s = 0.0, s2 = 0.0, sv = 0.0;
    for (int64_t i = 0; i < c->runs_done; i++) {
        s += c->run_test_acc[i];
        sv += c->run_valid_acc[i];
    }
    r.test_acc_mean = c->runs_done ? s / (double)c->runs_done : 0.0;
    r.valid_acc_mean = c->runs_done ? sv / (double)c->runs_done : 0.0;
    for (int64_t i = 0; i < c->runs_done; i++)
        s2 += (c->run_test_acc[i] - r.test_acc_mean) * (c->run_test_acc[i] - r.test_acc_mean);
    r.test_acc_std = c->runs_done ? sqrt(s2 / (double)c->runs_done) : 0.0;
    r.epoch_s_mean = j->epoch_s_count ? j->epoch_s_sum / (double)j->epoch_s_count : 0.0;
    if (o->save_predictions) {
        if (!j->model) GNN_TRY(start_run(j, 1));
        GNN_TRY(write_predictions(j));
    }
    write_final(j, &r); /* the log's last line says every output is written */
    if (res) *res = r;
fail:
    job_free(j);
    return rc;
}
