/*
 * Training of GCN, GraphSAGE and GAT in one process: what gnn-train runs. Loads
 * a graph file, trains for a number of epochs (repeated over consecutive
 * seeds with runs > 1) on the whole graph or on sampled mini-batches,
 * evaluates, stops early on the validation loss, checkpoints and resumes,
 * and writes predictions and a JSON-lines log. The options mirror the
 * command line one to one.
 */
#ifndef GNN_TRAINER_TRAIN_H
#define GNN_TRAINER_TRAIN_H

#include <stdint.h>

typedef struct {
    const char *data;          /* graph file */
    const char *model;         /* "gcn" | "sage" | "gat" */
    int layers;
    int64_t hidden;
    double dropout;
    double lr;
    double weight_decay;
    const char *decay_scope;   /* "first" | "all" | NULL (model's default) */
    const char *init;          /* weights: "glorot" | "fan-in" | NULL (model's default) */
    int epochs;
    int64_t seed;
    int runs;
    int normalize_features;
    const char *aggr;          /* NULL: model default (gcn: gcn, sage: mean) */
    const char *aggr_plugin;   /* shared object to load first, or NULL */
    const char *attention;     /* gat: attention function; NULL: gat */
    const char *task;          /* "node" (default) | "link" */
    int negatives;             /* link: negatives per training edge */
    const char *hits;          /* link: Hits@K list, "20,50,100" */
    const char *decoder;       /* link: "dot" */
    int64_t out_dim;           /* link: embedding width (0: 16) */
    const char *save_embeddings; /* HDF5 of the last layer's output per node, or NULL */
    const char *save_model;    /* safetensors of the best parameters for PyTorch, or NULL */
    int num_bases;             /* rgcn: shared bases of the relation weights (0: none) */
    const char *rgcn_order;    /* rgcn: "auto" | "transform-first" | "aggregate-first"
                                  (NULL: auto; trainer/typed.h) */
    int heads;                 /* gat: heads of each hidden layer (concatenated) */
    int out_heads;             /* gat: heads of the output layer (averaged) */
    double attn_dropout;       /* gat: drop probability of attention weights */
    double negative_slope;     /* gat: LeakyReLU slope of the scores */
    const char *device;        /* "cpu" | "cuda" | "cuda:N" | "auto" */
    const char *spmm;          /* CUDA SpMM of the built-in aggregators: "auto" |
                                  "cusparse" | "rowcache" | "balanced" */
    int deterministic;         /* only bitwise-reproducible kernels (CUDA) */
    int tf32;                  /* CUDA GEMMs on TF32 tensor cores */
    const char *cuda_graphs;   /* "on": a full-graph step on a GPU captured once and
                                  replayed (trainer/replay.c); "off" */
    const char *cuda_aware_mpi; /* over a partition directory on a device: MPI given the
                                   device's buffers, "auto" (where it is CUDA-aware),
                                   "on" or "off" (staged through host memory) */
    int full_halo;             /* distributed full graph: training steps exchange every halo
                                  row, not only those the loss reads */
    int early_stop;            /* evaluations without a lower validation loss; 0 = off */
    int eval_every;            /* epochs between evaluations; 0: none (accuracies NaN) */
    const char *checkpoint;    /* file, or NULL */
    int checkpoint_every;      /* epochs between checkpoints */
    int resume;
    const char *save_predictions;
    const char *log_json;
    int threads;               /* OpenMP threads; 0 = library default */
    const char *sparse_features; /* "auto" | "on" | "off": first layer on a sparse copy of
                                    the features (auto: when at most 10 % are non-zero;
                                    full mode only) */
    const char *mode;          /* "full" | "minibatch" | NULL (gcn: full, sage: minibatch) */
    const char *fanouts;       /* "15,10,5": one per layer, nearest hop first; -1 = all;
                                  NULL: 10 per layer */
    int64_t batch_size;        /* seeds per mini-batch */
    int sampler_threads;       /* threads building batches */
    const char *sampler;       /* "host" (the loader's threads) or "device" (gnn_be_sample) */
    int sample_once;           /* a node's neighbours drawn once, at the hop that reaches it,
                                  and kept by every layer (gnn_sampler_set_once) */
    const char *prefetch;      /* batches prepared ahead: a count K in [0, 64] (0: none,
                                  each sampled when needed) or "auto" (2 where the
                                  process has a core for each sampler thread besides
                                  its OpenMP threads, else 0) */
    int64_t eval_batch_size;   /* nodes per batch of layer-wise inference (mini-batch mode) */
    int debug;                 /* distributed: compare a parameter hash across ranks each epoch */
    const char *feature_cache; /* distributed mini-batches: bytes of remote features kept
                                  locally, e.g. "64M" (NULL or "0": none) */
    const char *cache_policy;  /* which remote nodes it keeps: "sample" (pre-sampling one
                                  epoch) or "rows" (named most by the part's rows) */
    int64_t embed_dim;         /* learnable input rows of this width; 0: none */
    const char *embed;         /* which nodes get one: "featureless" (default) | "all" */
    double embed_lr;           /* their optimiser's learning rate; 0: --lr */
    const char *embed_optimizer; /* "adam" (lazy, as torch.optim.SparseAdam) | "adagrad" */
    const char *embed_on;      /* where the table lives on a device backend: "auto" (the
                                  device when it fits, else host memory) | "device" | "host" */
    const char *features_on;   /* where a device backend reads the features in one-process
                                  mini-batches: "auto" | "device" | "host" (mapped) */
} gnn_train_opts_t;

/* The defaults of gnn-train. */
void gnn_train_defaults(gnn_train_opts_t *o);

typedef struct {
    int runs;                 /* runs finished */
    double test_acc, valid_acc; /* last run, at its best-validation epoch */
    double test_acc_mean, test_acc_std; /* over the runs (std: population) */
    double valid_acc_mean;
    double epoch_s_mean;      /* mean training time per epoch (forward, backward, step;
                                 mini-batch: with sampling waits) */
    int64_t best_epoch;       /* of the last run, 1-based */
} gnn_train_result_t;

/* Run the training o describes. 0, or a GNN_E code with a one-line message
 * (bad options give GNN_EUSAGE). res may be NULL. With o->data a partition
 * directory (gnn-partition), MPI must be initialised: rank r of
 * MPI_COMM_WORLD trains on part r (full graph) and the ranks average
 * their gradients every step; the call is then collective. */
int gnn_train_run(const gnn_train_opts_t *o, gnn_train_result_t *res);

#endif
