/*
 * gnn-train's options (trainer/train.h): the defaults, the checks of the
 * values alone, of the files they name, and the --fanouts list. All run
 * before any data is read, so a bad command line costs nothing.
 */
#include "trainer/job.h"
#include "trainer/typed.h"

#include "graph/base/error.h"
#include "graph/base/tmpclean.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    o->prefetch = "auto";
    o->sampler = "host";
    o->cuda_graphs = "on";
    o->cuda_aware_mpi = "auto";
    o->cache_policy = "sample";
    o->eval_batch_size = 4096;
    o->heads = 8;
    o->out_heads = 1;
    o->attn_dropout = 0.6;
    o->negative_slope = 0.2;
    o->task = "node";
    o->negatives = 1;
    o->hits = "20,50,100";
    o->decoder = "dot";
    o->out_dim = 16;
    o->embed = "featureless";
    o->embed_optimizer = "adam";
    o->embed_on = "auto";
    o->features_on = "auto";
}

#define MAX_THREADS 4096 /* --threads: more than any machine has cores */

/* --prefetch: "auto" (*k = -1) or a count in [0, GNN_LOADER_MAX_PREFETCH]. */
static int prefetch_count(const char *s, int *k)
{
    *k = -1;
    if (!s || !strcmp(s, "auto")) return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno)
        return GNN_FAIL(GNN_EUSAGE, "--prefetch \"%s\" (expected auto or a count in [0, %d])", s,
                        GNN_LOADER_MAX_PREFETCH);
    if (v < 0 || v > GNN_LOADER_MAX_PREFETCH)
        return GNN_FAIL(GNN_EUSAGE, "--prefetch %ld outside [0, %d] (or auto)", v,
                        GNN_LOADER_MAX_PREFETCH);
    *k = (int)v;
    return 0;
}

int gnn__opts_prefetch(const gnn_train_opts_t *o)
{
    int k = -1;
    if (prefetch_count(o->prefetch, &k) < 0) return 0; /* refused by gnn__opts_check */
    if (k >= 0) return k;
    /* A sampler thread sharing a core with the training step's threads
     * stalls them at every barrier while it runs (on 2 cores, 2 compute
     * threads and 1 sampler thread: twice the compute time, the epoch 1.3x
     * that of sampling in the loop); with a core of its own it overlaps. */
    return omp_get_num_procs() >= omp_get_max_threads() + o->sampler_threads ? 2 : 0;
}

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

int gnn__opts_check(const gnn_train_opts_t *o)
{
    if (!o->data) return GNN_FAIL(GNN_EUSAGE, "--data FILE is required");
    if (!o->data[0]) return GNN_FAIL(GNN_EUSAGE, "--data: empty file name");
    if (o->aggr_plugin && !o->aggr_plugin[0])
        return GNN_FAIL(GNN_EUSAGE, "--aggr-plugin: empty file name");
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
    if (o->init && strcmp(o->init, "glorot") && strcmp(o->init, "fan-in"))
        return GNN_FAIL(GNN_EUSAGE, "--init \"%s\" (expected glorot or fan-in)", o->init);
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
    int prefetch, prc = prefetch_count(o->prefetch, &prefetch);
    if (prc < 0) return prc;
    if (!o->cuda_graphs || (strcmp(o->cuda_graphs, "on") && strcmp(o->cuda_graphs, "off")))
        return GNN_FAIL(GNN_EUSAGE, "--cuda-graphs \"%s\" (expected on or off)",
                        o->cuda_graphs ? o->cuda_graphs : "");
    if (!o->cuda_aware_mpi || (strcmp(o->cuda_aware_mpi, "auto") && strcmp(o->cuda_aware_mpi, "on") &&
                               strcmp(o->cuda_aware_mpi, "off")))
        return GNN_FAIL(GNN_EUSAGE, "--cuda-aware-mpi \"%s\" (expected auto, on or off)",
                        o->cuda_aware_mpi ? o->cuda_aware_mpi : "");
    if (!o->sampler || (strcmp(o->sampler, "host") && strcmp(o->sampler, "device")))
        return GNN_FAIL(GNN_EUSAGE, "--sampler \"%s\" (expected host or device)",
                        o->sampler ? o->sampler : "");
    if (o->embed_dim < 0 || o->embed_dim > ((int64_t)1 << 20))
        return GNN_FAIL(GNN_EUSAGE, "--embed-dim %" PRId64 " outside [1, 2^20] (0: no learnable rows)",
                        o->embed_dim);
    if (!o->embed || (strcmp(o->embed, "featureless") && strcmp(o->embed, "all")))
        return GNN_FAIL(GNN_EUSAGE, "--embed \"%s\" (expected featureless or all)",
                        o->embed ? o->embed : "");
    if (!o->embed_optimizer ||
        (strcmp(o->embed_optimizer, "adam") && strcmp(o->embed_optimizer, "adagrad")))
        return GNN_FAIL(GNN_EUSAGE, "--embed-optimizer \"%s\" (expected adam or adagrad)",
                        o->embed_optimizer ? o->embed_optimizer : "");
    if (!o->features_on || (strcmp(o->features_on, "auto") && strcmp(o->features_on, "device") &&
                            strcmp(o->features_on, "host")))
        return GNN_FAIL(GNN_EUSAGE, "--features-on \"%s\" (expected auto, device or host)",
                        o->features_on ? o->features_on : "");
    if (!o->embed_on ||
        (strcmp(o->embed_on, "auto") && strcmp(o->embed_on, "device") && strcmp(o->embed_on, "host")))
        return GNN_FAIL(GNN_EUSAGE, "--embed-on \"%s\" (expected auto, device or host)",
                        o->embed_on ? o->embed_on : "");
    if (!(o->embed_lr >= 0.0 && o->embed_lr <= 1e6))
        return GNN_FAIL(GNN_EUSAGE, "--embed-lr %g outside (0, 1e6] (0: --lr)", o->embed_lr);
    if (o->embed_lr > 0.0 && !((float)o->embed_lr > 0.0f))
        return GNN_FAIL(GNN_EUSAGE, "--embed-lr %g is outside the range of single precision "
                                    "(%g to %g)",
                        o->embed_lr, (double)FLT_TRUE_MIN, (double)FLT_MAX);
    if (!o->embed_dim && (strcmp(o->embed, "featureless") || o->embed_lr != 0.0 ||
                          strcmp(o->embed_optimizer, "adam") || strcmp(o->embed_on, "auto")))
        return GNN_FAIL(GNN_EUSAGE,
                        "--embed, --embed-lr, --embed-optimizer and --embed-on need --embed-dim D");
    if (!o->task || (strcmp(o->task, "node") && strcmp(o->task, "link")))
        return GNN_FAIL(GNN_EUSAGE, "--task %s: expected node or link", o->task ? o->task : "");
    if (!strcmp(o->task, "link") && o->save_predictions)
        return GNN_FAIL(GNN_EUSAGE, "--save-predictions: class predictions of --task node only "
                                    "(--save-embeddings writes the embeddings)");
    if (o->negatives < 1 || o->negatives > 1000)
        return GNN_FAIL(GNN_EUSAGE, "--negatives %d outside [1, 1000]", o->negatives);
    if (!o->decoder || (strcmp(o->decoder, "dot") && strcmp(o->decoder, "mlp")))
        return GNN_FAIL(GNN_EUSAGE, "--decoder %s: expected dot or mlp",
                        o->decoder ? o->decoder : "");
    if (o->out_dim < 1 || o->out_dim > (1 << 20))
        return GNN_FAIL(GNN_EUSAGE, "--out-dim %" PRId64 " outside [1, 1048576]", o->out_dim);
    if (strcmp(o->task, "link") && (o->negatives != 1 || strcmp(o->decoder, "dot") ||
                                    (o->hits && strcmp(o->hits, "20,50,100")) || o->out_dim != 16))
        return GNN_FAIL(GNN_EUSAGE, "--negatives, --decoder, --hits and --out-dim are for "
                                    "--task link");
    if (o->heads < 1 || o->heads > 64)
        return GNN_FAIL(GNN_EUSAGE, "--heads %d outside [1, 64]", o->heads);
    if (o->num_bases < 0 || o->num_bases > GNN_MAX_RELATIONS)
        return GNN_FAIL(GNN_EUSAGE, "--num-bases %d outside [0, %d]", o->num_bases,
                        GNN_MAX_RELATIONS);
    if (o->num_bases && strcmp(o->model, "rgcn"))
        return GNN_FAIL(GNN_EUSAGE, "--num-bases: only for --model rgcn");
    if (gnn_typed_order_parse(o->rgcn_order) < 0)
        return GNN_FAIL(GNN_EUSAGE,
                        "--rgcn-order \"%s\" (expected auto, transform-first or aggregate-first)",
                        o->rgcn_order);
    if (o->rgcn_order && strcmp(o->rgcn_order, "auto") && strcmp(o->model, "rgcn"))
        return GNN_FAIL(GNN_EUSAGE, "--rgcn-order: only for --model rgcn");
    if (o->out_heads < 1 || o->out_heads > 64)
        return GNN_FAIL(GNN_EUSAGE, "--out-heads %d outside [1, 64]", o->out_heads);
    /* Attention concatenates its heads: the layer is heads x hidden wide. */
    if (!strcmp(o->model, "gat") && o->layers > 1 &&
        (int64_t)o->heads * o->hidden > ((int64_t)1 << 20))
        return GNN_FAIL(GNN_EUSAGE,
                        "--heads %d x --hidden %" PRId64 " is %" PRId64 " columns, above 1048576",
                        o->heads, o->hidden, (int64_t)o->heads * o->hidden);
    if (!(o->attn_dropout >= 0.0 && (float)o->attn_dropout < 1.0f))
        return GNN_FAIL(GNN_EUSAGE, "--attn-dropout %g outside [0, 1)", o->attn_dropout);
    if (!(o->negative_slope >= 0.0 && o->negative_slope < 1.0))
        return GNN_FAIL(GNN_EUSAGE, "--negative-slope %g outside [0, 1)", o->negative_slope);
    if (o->eval_batch_size < 1 || o->eval_batch_size > ((int64_t)1 << 30))
        return GNN_FAIL(GNN_EUSAGE, "--eval-batch-size %" PRId64 " outside [1, 2^30]",
                        o->eval_batch_size);
    return 0;
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
    if (gnn_path_dir(path, dir, sizeof dir) < 0) { /* check_output says so */
        gnn_error_clear();
        return 0;
    }
    return named && stat(data, &sd) == 0 && S_ISDIR(sd.st_mode) && stat(dir, &sp) == 0 &&
           sd.st_dev == sp.st_dev && sd.st_ino == sp.st_ino;
}

/* The output path of option opt can be written: not a directory, and its
 * directory exists and accepts new files (outputs are written under a
 * temporary name beside them). */
static int check_output(const char *opt, const char *path)
{
    char dir[PATH_MAX], what[PATH_MAX + 64];
    struct stat st;
    if (!path[0]) return GNN_FAIL(GNN_EUSAGE, "%s: empty file name", opt);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return GNN_FAIL(GNN_EIO, "%s %s: is a directory", opt, path);
    if (path[strlen(path) - 1] == '/')
        return GNN_FAIL(GNN_EIO, "%s %s: ends in '/' (give the name of a file)", opt, path);
    int rc = gnn_path_dir(path, dir, sizeof dir);
    if (rc < 0) return rc;
    snprintf(what, sizeof what, "%s %s", opt, path);
    rc = gnn_output_dir_check(what, dir);
    if (rc < 0) return rc;
    /* The log is appended to in place; the others are renamed into place. */
    return strcmp(opt, "--log-json") ? gnn_output_replaceable(opt, path, 0) : 0;
}

/*
 * The files the options name, checked before any work: no two options may
 * name the same file (a log written over the graph, predictions over the
 * checkpoint: GNN_EUSAGE), and each output can be written, so that a run
 * does not fail only after training.
 */
int gnn__opts_check_paths(const gnn_train_opts_t *o)
{
    const char *opt[] = {"--data", "--checkpoint", "--save-predictions", "--log-json",
                         "--save-embeddings", "--save-model"};
    const char *path[] = {o->data, o->checkpoint, o->save_predictions, o->log_json,
                          o->save_embeddings, o->save_model};
    int n = (int)(sizeof path / sizeof path[0]);
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++)
            if (path[a] && path[b] && gnn_same_file(path[a], path[b]))
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
int gnn__opts_fanouts(gnn_job_t *j)
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
    if (j->o->sample_once) snprintf(j->fanouts + at, sizeof j->fanouts - at, " once");
    return 0;
}
