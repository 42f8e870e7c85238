/*
 * gnn-train: trains GCN or GraphSAGE on a graph file, on the whole graph or
 * on sampled mini-batches (trainer/train.h).
 * Every option maps to one field of gnn_train_opts_t; --help lists them
 * with their defaults.
 */
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/base/mpiutil.h"
#include "trainer/dist.h"
#include "trainer/train.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define O(field) offsetof(gnn_train_opts_t, field)

static const gnn_opt_t train_table[] = {
    {"data", 0, GNN_OPT_STRING, O(data), "PATH",
     "graph file (gnn-dataset output), or a partition directory (gnn-partition output) to "
     "train on under mpirun with one rank per part"},
    {"model", 0, GNN_OPT_STRING, O(model), "NAME", "gcn, sage, gat or rgcn (typed graphs)"},
    {"layers", 0, GNN_OPT_INT, O(layers), "L", "number of layers"},
    {"hidden", 0, GNN_OPT_I64, O(hidden), "H", "width of the hidden layers"},
    {"dropout", 0, GNN_OPT_DOUBLE, O(dropout), "P", "drop probability on every layer's input"},
    {"lr", 0, GNN_OPT_DOUBLE, O(lr), "LR", "Adam learning rate"},
    {"weight-decay", 0, GNN_OPT_DOUBLE, O(weight_decay), "WD", "L2 weight decay (Adam)"},
    {"decay-scope", 0, GNN_OPT_STRING, O(decay_scope), "S",
     "first: decay the first layer only (GCN paper; gcn default), all (sage default)"},
    {"init", 0, GNN_OPT_STRING, O(init), "S",
     "weights drawn uniform in +-sqrt(6/(fan_in+fan_out)) (glorot; gcn, gat, rgcn default) or "
     "+-1/sqrt(fan_in) (fan-in, torch.nn.Linear's; sage default, as PyG's SAGEConv)"},
    {"epochs", 0, GNN_OPT_INT, O(epochs), "E", "training epochs per run"},
    {"seed", 0, GNN_OPT_I64, O(seed), "S", "seed of the first run (run r uses S + r)"},
    {"runs", 0, GNN_OPT_INT, O(runs), "N", "independent runs; mean and std are reported"},
    {"normalize-features", 0, GNN_OPT_FLAG, O(normalize_features), NULL,
     "divide each feature row by its sum"},
    {"aggr", 0, GNN_OPT_STRING, O(aggr), "NAME",
     "sage aggregator: sum, mean, gcn, max or a plug-in's (default mean)"},
    {"aggr-plugin", 0, GNN_OPT_STRING, O(aggr_plugin), "FILE.so",
     "load aggregators and attention functions from FILE.so"},
    {"task", 0, GNN_OPT_STRING, O(task), "TASK",
     "node (classify nodes) or link (predict held-out edges of a split-edges file)"},
    {"decoder", 0, GNN_OPT_STRING, O(decoder), "NAME", "link: edge score from embeddings, dot or mlp (on their product)"},
    {"negatives", 0, GNN_OPT_INT, O(negatives), "K", "link: uniform negatives per training edge"},
    {"hits", 0, GNN_OPT_STRING, O(hits), "LIST", "link: K of the Hits@K metrics"},
    {"out-dim", 0, GNN_OPT_I64, O(out_dim), "D", "link: width of the node embeddings"},
    {"attention", 0, GNN_OPT_STRING, O(attention), "NAME",
     "gat: attention function, gat or a plug-in's (default gat)"},
    {"num-bases", 0, GNN_OPT_INT, O(num_bases), "B",
     "rgcn: each relation's weight a combination of B shared bases (0: a weight per relation)"},
    {"rgcn-order", 0, GNN_OPT_STRING, O(rgcn_order), "S",
     "rgcn: transform-first (each source times its relations' weights, then the means), "
     "aggregate-first (the means of the inputs, then one product per destination), or auto "
     "(aggregate-first on blocks with far fewer destinations than sources, where it costs "
     "less: a mini-batch's lower layers)"},
    {"heads", 0, GNN_OPT_INT, O(heads), "K",
     "gat: attention heads of each hidden layer, concatenated (--hidden features each)"},
    {"out-heads", 0, GNN_OPT_INT, O(out_heads), "K", "gat: attention heads of the output layer, "
     "averaged"},
    {"attn-dropout", 0, GNN_OPT_DOUBLE, O(attn_dropout), "P",
     "gat: drop probability of each attention weight while training"},
    {"negative-slope", 0, GNN_OPT_DOUBLE, O(negative_slope), "S",
     "gat: slope of the attention score's LeakyReLU below 0"},
    {"device", 0, GNN_OPT_STRING, O(device), "DEV", "cpu, cuda, cuda:N or auto"},
    {"spmm", 0, GNN_OPT_STRING, O(spmm), "IMPL",
     "CUDA SpMM of the built-in aggregators: auto (time each once per graph and width, keep "
     "the fastest), cusparse, rowcache or balanced"},
    {"deterministic", 0, GNN_OPT_FLAG, O(deterministic), NULL,
     "CUDA: only kernels whose results are bitwise the same from run to run"},
    {"tf32", 0, GNN_OPT_FLAG, O(tf32), NULL,
     "CUDA: the dense products on TF32 tensor cores (operands rounded to 10-bit mantissas, sums "
     "in FP32; default: full FP32)"},
    {"cuda-graphs", 0, GNN_OPT_STRING, O(cuda_graphs), "MODE",
     "full graph in one process on a GPU: on (the training step captured once as a CUDA graph "
     "and replayed every epoch after; the same results) or off"},
    {"cuda-aware-mpi", 0, GNN_OPT_STRING, O(cuda_aware_mpi), "MODE",
     "over a partition directory on a GPU: halo rows, fetched rows (--sampler device) and "
     "gradients given to MPI in device memory, auto (where the MPI library says it is CUDA-aware), on (required) or off (staged "
     "through pinned host memory)"},
    {"full-halo", 0, GNN_OPT_FLAG, O(full_halo), NULL,
     "over a partition directory, full graph: training steps exchange every halo row (default: "
     "only the rows the loss reads; the same losses, fewer bytes)"},
    {"threads", 0, GNN_OPT_INT, O(threads), "T", "OpenMP threads (0: OMP_NUM_THREADS or all)"},
    {"sparse-features", 0, GNN_OPT_STRING, O(sparse_features), "MODE",
     "auto, on or off: first layer on a sparse copy of the features (auto: <= 10 % non-zero)"},
    {"mode", 0, GNN_OPT_STRING, O(mode), "MODE",
     "full (whole graph per step) or minibatch (sampled neighbours); default: gcn and gat full, "
     "sage minibatch"},
    {"fanouts", 0, GNN_OPT_STRING, O(fanouts), "LIST",
     "neighbours sampled per node and layer, nearest hop first, -1 = all (default: 10 each)"},
    {"batch-size", 0, GNN_OPT_I64, O(batch_size), "B", "training nodes (--task link: edges) per mini-batch"},
    {"sampler-threads", 0, GNN_OPT_INT, O(sampler_threads), "T",
     "threads sampling mini-batches and gathering their features"},
    {"sample-once", 0, GNN_OPT_FLAG, O(sample_once), NULL,
     "mini-batches: each node's neighbours drawn once, at the hop that reaches it, and "
     "aggregated by every layer (PyG's NeighborLoader); default: each layer's block draws its "
     "own (DGL's)"},
    {"sampler", 0, GNN_OPT_STRING, O(sampler), "WHERE",
     "where mini-batches are sampled: host (the sampler threads) or device (on --device, with "
     "the blocks prepared and the features gathered there; the same batches)"},
    {"prefetch", 0, GNN_OPT_STRING, O(prefetch), "K",
     "mini-batches prepared ahead of training (0: sample each when needed; auto: 2 where the "
     "sampler threads have cores besides --threads, else 0)"},
    {"eval-batch-size", 0, GNN_OPT_I64, O(eval_batch_size), "B",
     "nodes per batch of layer-wise inference (mini-batch mode)"},
    {"early-stop", 0, GNN_OPT_INT, O(early_stop), "K",
     "stop after K evaluations without a lower validation loss (0: off)"},
    {"eval-every", 0, GNN_OPT_INT, O(eval_every), "N",
     "evaluate every N epochs and after the last (0: never; predictions use the last epoch)"},
    {"checkpoint", 0, GNN_OPT_STRING, O(checkpoint), "FILE", "write checkpoints to FILE"},
    {"checkpoint-every", 0, GNN_OPT_INT, O(checkpoint_every), "N", "epochs between checkpoints"},
    {"resume", 0, GNN_OPT_FLAG, O(resume), NULL, "continue from --checkpoint FILE"},
    {"save-predictions", 0, GNN_OPT_STRING, O(save_predictions), "FILE",
     "write logits, predicted class and last hidden layer per node (HDF5)"},
    {"save-embeddings", 0, GNN_OPT_STRING, O(save_embeddings), "FILE",
     "write the last layer's output per node (HDF5; link: the node embeddings), and with "
     "--embed-dim the learned input rows"},
    {"save-model", 0, GNN_OPT_STRING, O(save_model), "FILE",
     "write the best parameters and the architecture as safetensors, named as PyTorch "
     "Geometric's layers name them (trainer/python/gnn_pyg loads them)"},
    {"embed-dim", 0, GNN_OPT_I64, O(embed_dim), "D",
     "a learnable D-wide input row per node (required for a graph without features)"},
    {"embed", 0, GNN_OPT_STRING, O(embed), "WHICH",
     "featureless: the nodes without features get one (default); all: every node, beside its "
     "features"},
    {"embed-lr", 0, GNN_OPT_DOUBLE, O(embed_lr), "LR", "learning rate of the rows (default --lr)"},
    {"embed-optimizer", 0, GNN_OPT_STRING, O(embed_optimizer), "NAME",
     "adam (lazy: rows a step does not read keep their moments) or adagrad"},
    {"features-on", 0, GNN_OPT_STRING, O(features_on), "WHERE",
     "mini-batches with a GPU: the feature table in device memory (device), read in place from "
     "host memory over the bus (host), or on the device when it fits in half its free memory "
     "(auto)"},
    {"embed-on", 0, GNN_OPT_STRING, O(embed_on), "WHERE",
     "with a GPU: the rows in device memory (device), in host memory (host), or on the device "
     "when they fit there (auto)"},
    {"log-json", 0, GNN_OPT_STRING, O(log_json), "FILE",
     "write one JSON line per epoch and a final summary line"},
    {"feature-cache", 0, GNN_OPT_STRING, O(feature_cache), "SIZE",
     "over a partition directory, mini-batches: remote features kept on each rank besides its "
     "part's first hop of halo, always held (e.g. 256M; the nodes --cache-policy ranks first), "
     "the rest fetched per step; in one process on a GPU with the features in host memory "
     "(--features-on): the rows read most, kept on the device"},
    {"cache-policy", 0, GNN_OPT_STRING, O(cache_policy), "NAME",
     "which remote nodes --feature-cache keeps: sample (those one epoch of pre-sampled batches "
     "needs most) or rows (the halo nodes past the first hop its part's edges name most)"},
    {"debug", 0, GNN_OPT_FLAG, O(debug), NULL,
     "over a partition directory: check after every step that all ranks hold the same "
     "parameters"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t train_cli = {
    .prog = "gnn-train",
    .args = "",
    .summary = "Train GCN, GraphSAGE, GAT or R-GCN to classify nodes or predict links, on a graph "
               "file in one process or on a partition directory under mpirun (one rank per part), "
               "full graph or mini-batches.",
    .opts = train_table,
    .min_positional = 0,
    .max_positional = 0,
};

static int run(void *opts, char **pos, int npos)
{
    (void)pos;
    (void)npos;
    /* Mini-batches allocate and free their arrays at every step. */
    if (gnn_alloc_keep_freed() < 0)
        GNN_DEBUG("malloc keeps its default thresholds (settings not taken)");
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank > 0 && gnn_log_level() > GNN_LOG_WARN) gnn_log_set_level(GNN_LOG_WARN);
    char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
    if (corename) GNN_DEBUG("OpenBLAS runs its %s kernels", corename());
    return gnn_train_run(opts, NULL);
}

/*
 * OpenBLAS picks its kernels by the CPU's model, and a release older than
 * the CPU (Debian's 0.3.21 on Intel Xeons after Sapphire Rapids) falls
 * back to its generic Prescott (SSE3) kernels, about half as fast on the
 * products gnn-train leaves to it. Where OpenBLAS names such a generic
 * core but the CPU runs AVX-512 (or AVX2 and FMA), gnn-train starts again
 * with OPENBLAS_CORETYPE naming the kernels it can run (SkylakeX, or
 * Haswell), which OpenBLAS reads only as it loads. A set
 * OPENBLAS_CORETYPE is left alone, and so is any other BLAS.
 */
static void blas_kernels(char **argv)
{
    static const char *const generic[] = {"Prescott", "Core2", "Penryn", "Dunnington",
                                          "Nehalem", "Atom", "Katmai", "Coppermine",
                                          "Northwood", "Banias"};
    const char *set = getenv("OPENBLAS_CORETYPE");
    if (set && *set) return;
    char *(*corename)(void) = (char *(*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
    const char *core = corename ? corename() : NULL;
    int weak = 0;
    for (size_t i = 0; core && i < sizeof generic / sizeof generic[0]; i++)
        weak |= !strcasecmp(core, generic[i]);
    if (!weak) return;
    __builtin_cpu_init();
    const char *want = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        want = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        want = "Haswell";
    if (!want || setenv("OPENBLAS_CORETYPE", want, 1) != 0) return;
    execv("/proc/self/exe", argv); /* returns only on failure: go on as we are */
    unsetenv("OPENBLAS_CORETYPE");
}

int main(int argc, char **argv)
{
    blas_kernels(argv);
    gnn_log_set_prog("gnn-train");
    gnn_train_opts_t o;
    gnn_train_defaults(&o);
    /* Started without mpirun: one process needs no Open MPI daemon. */
    if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK")) {
        setenv("OMPI_MCA_ess_singleton_isolated", "1", 0);
        setenv("OMPI_MCA_memory", "^patcher", 0);
    }
    /* Threads: a rank fetches the next mini-batch's features on a thread
     * of its own while it trains the current one (where MPI allows). */
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "gnn-train: error: MPI_Init failed\n");
        return 1;
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = gnn_cli_run(&train_cli, argc, argv, 1, &o, run);
    if (rc < 0 && size > 1) {
        int who = gnn_dist_reporting_rank();
        /* This rank failed alone: the others may wait for it in a
         * collective call, so the job ends here. */
        if (who < 0 && rc != GNN_EUSAGE) gnn_mpi_fail_alone("gnn-train", rc);
        /* Every rank returned the failure: one reports it (a bad option
         * fails the same way everywhere: rank 0). */
        if (rank != (who < 0 ? 0 : who)) {
            MPI_Finalize();
            return rc == GNN_EUSAGE ? 2 : 1;
        }
        gnn_error_prefix("rank %d of %d", rank, size);
    }
    /* Printed before MPI_Finalize: the other ranks leave only after this
     * rank reaches it, so mpirun cannot end the job before the line is out. */
    int status = gnn_error_report("gnn-train", NULL, rc);
    fflush(stderr);
    MPI_Finalize();
    return status;
}
