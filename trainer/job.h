/*
 * The state of one gnn-train job, shared by the files of the trainer
 * (internal: nothing outside trainer/ includes it).
 *
 * How the files divide the work (docs/ARCHITECTURE.md):
 *   train.c    gnn_train_run: what --data is, the mode, the order of it all
 *   options.c  defaults, option and path checks, --fanouts
 *   setup.c    backend, aggregators, the graph file and its features
 *   state.c    the loop's state as checkpoints hold it: new, saved, resumed
 *   loop.c     runs and epochs: evaluation schedule, best epoch, early
 *              stop, checkpoint cadence (written once over every mode)
 *   step.c     the end of every step: backward, gradients summed, Adam
 *   input.c    learnable input rows (--embed-dim): the model's input beside
 *              the features, the rows' sparse step, moved between ranks
 *              (the table itself: embed.c)
 *   output.c   the JSON-lines log, the progress lines, predictions, the
 *              final line
 *   modes/     one file per mode (trainer/mode.h); modes/distributed.c
 *              what the two distributed modes share
 *   tasks/     one file per task (trainer/task.h)
 * Fields are grouped by the files that own them; the others only read.
 */
#ifndef GNN_TRAINER_JOB_H
#define GNN_TRAINER_JOB_H

#include "graph/graph_file.h"
#include "kernels/backend.h"
#include "sampler/loader.h"
#include "trainer/checkpoint.h"
#include "trainer/dist.h"
#include "trainer/distdev.h"
#include "trainer/embed.h"
#include "trainer/mode.h"
#include "trainer/model.h"
#include "trainer/task.h"
#include "trainer/train.h"

#include <stdio.h>

/* A training step captured once (replay.c). */
typedef struct {
    int state;                  /* 0 none, 1 captured, -1 off for this run */
    int64_t queued;             /* steps of this run queued without a capture */
    gnn_bcapture_t *cap;        /* the capture (NULL when emulated) */
    gnn_step_scalars_t *scalars; /* backend: the step's scalars */
    uint64_t off0, span;        /* the model's stream at the captured step, and its advance */
    int64_t step0;              /* Adam's step before the captured step */
    uint64_t gen;               /* gnn_be_free_generation at the capture */
    const char *last;           /* how the last step ran: "queued", "captured" (and run),
                                   "replayed" (the log's "step") */
} gnn_replay_t;

/* What the host needs of a device-sampled batch, read back and prepared
 * where the batch was sampled (--sampler device): its node ids, with
 * sparse first-layer input its rows of the sparse feature table (the step
 * takes prep over), with typed draws its blocks (R-GCN's graphs are made
 * from host arrays). */
typedef struct {
    gnn_backend_t *be;       /* ids and the blocks' arrays are its host memory (pinned
                                on a GPU: read back in one wait), once set */
    int64_t *ids;            /* the batch's node ids (host) */
    size_t ids_cap;
    gnn_csr_t rows;          /* the batch's input rows of j->xs */
    gnn_spfeat_t *prep;      /* their preparation (kernels/spfeat.h) */
    int64_t *indptr[GNN_BE_SAMPLE_MAX_LAYERS], *indices[GNN_BE_SAMPLE_MAX_LAYERS];
    int32_t *etype[GNN_BE_SAMPLE_MAX_LAYERS];
    size_t cap_indptr[GNN_BE_SAMPLE_MAX_LAYERS], cap_indices[GNN_BE_SAMPLE_MAX_LAYERS],
        cap_etype[GNN_BE_SAMPLE_MAX_LAYERS];
} gnn_dhost_t;

typedef struct gnn_job {
    const gnn_train_opts_t *o;
    const gnn_mode_t *mode;
    const gnn_task_kind_t *task;
    void *task_state;                 /* the task's own (its file) */
    gnn_task_kind_t task_own;         /* the task as configured (keys from options) */
    char task_keys[GNN_TASK_MAX_METRICS][32];
    int task_hits;                    /* link: --hits values */
    int64_t task_hit_k[4];
    int rank;                         /* 0 in one process */
    int node_rank, node_ranks;        /* over a partition directory: this rank among
                                         those on its machine, and their count */
    /* setup.c */
    gnn_model_kind_t kind;
    const char *decay_scope;          /* "first" | "all" */
    const char *init;                 /* "glorot" | "fan-in" */
    gnn_backend_t *be;
    gnn_aggr_registry_t *reg;
    const gnn_aggr_def_t *aggr;
    const gnn_aggr_def_t *attn;       /* attention function (attention kinds) */
    gnn_graph_t g;                    /* one process: the graph file; over a partition
                                         directory only the sizes (feat_dim, csr.n_rows:
                                         owned nodes) */
    int64_t out_dim;                  /* the model's output width (the task's) */
    float *x;                         /* features on the backend (dense input) */
    int x_mapped;                     /* ... the host's g.feat read in place (gnn_be_map_host) */
    float *fc_rows;                   /* mini-batches on a GPU, x mapped: the cached rows
                                         (backend, n_cache x feat_dim) */
    int32_t *fc_slot;                 /* ... every node's row there, -1 (backend) */
    int64_t n_cache;
    gnn_csr_t xs;                     /* features as CSR (sparse input) */
    gnn_bsparse_t *bxs;               /* ... on the backend, or NULL */
    gnn_csr_t xsb;                    /* mini-batches: the batch's rows of xs */
    gnn_bsparse_t *bxsb;              /* ... on the backend, during its step */
    const float *feat_host;           /* features the mini-batch loader gathers from */
    int feat_by_rows;                 /* mini-batches: layer 0 reads the batch's rows of
                                         feat_host by index; the loader gathers none */
    int feat_on_dev;                  /* mini-batches on a device: each batch's rows are
                                         gathered from x there; the loader gathers none */
    gnn_bgraph_t *bg;                 /* the whole (local) graph on the backend */
    float *dlogits;                   /* backend, rows of a step x out_dim */
    double *loss_dev;                 /* backend: a step's loss, read after the step */
    double *loss_slots;               /* backend: each batch's loss of a device-sampled
                                         epoch, read at its end */
    size_t loss_slots_bytes;
    double *loss_host;                /* their copy on the host */
    size_t loss_host_cap;
    size_t dev_peak; /* gnn_be_mem_peak at the last epoch; dev_peak_known: 1 when */
    int dev_peak_known; /* the backend knows it (a device's, not the CPU's) */
    int loss_checked;                 /* the targets passed a checked loss once */
    gnn_replay_t replay;              /* full graph on a GPU: the step captured once */
    size_t dlogits_bytes;             /* mini-batches: what it holds (grown per batch) */
    /* input.c: learnable input rows (--embed-dim) */
    gnn_embed_t *emb;                 /* the table (NULL: none) */
    gnn_backend_t *emb_be;            /* a CPU backend holding it in host memory (--embed-on
                                         host, or auto when the device lacks room), or NULL:
                                         the table is on j->be */
    int64_t in_dim;                   /* the model's input width: features, then the row */
    float *xin; size_t xin_bytes;     /* backend: the input rows a forward reads */
    int64_t emb_n;                    /* rows of the last training input ... */
    const int64_t *emb_rows;          /* ... and their table rows (backend; NULL: 0 .. n - 1) */
    struct gnn_input_dist *emb_dist;  /* over a partition directory: rows moved between
                                         ranks (input.c) */
    /* A typed graph's featureless types (--embed featureless): only their
     * nodes have rows, put in the input's first D columns. */
    int emb_typed;
    int64_t *emb_tab;                 /* host: the table row of each held node (one process:
                                         every node; over ranks: owned, then halo: -1), or
                                         -1 for a node of a type with features */
    int64_t *emb_gid;                 /* host: graph-file id of each table row */
    int64_t emb_n_in;                 /* input rows of the last build */
    int64_t *emb_sel; size_t emb_sel_bytes;   /* backend: its rows holding a table row */
    int64_t *emb_trow; size_t emb_trow_bytes; /* backend: ... and their table rows */
    int64_t *emb_hsel;                /* host copies of both (n_local each, over ranks) */
    int64_t emb_whole, emb_whole_k;   /* they hold the whole graph's n - 1 rows' selection
                                         (k rows); 0: another's */
    int64_t *emb_htrow;
    float *emb_buf; size_t emb_buf_bytes;     /* backend staging, rows x D */
    float *emb_hbuf; size_t emb_hbuf_cap;     /* ... its host side (the table in host memory) */
    /* state.c and loop.c */
    gnn_checkpoint_t ck;              /* the loop's whole state (host) */
    int64_t graph_edges;              /* the whole graph's stored edges, ... */
    uint64_t graph_hash;              /* ... the sum of their hashes, of the training */
    uint64_t train_hash;              /* nodes' and of (training node, rank) pairs */
    uint64_t train_layout;            /* (gnn__state_fingerprint) */
    gnn_model_t *model;
    float *adam_m, *adam_v;           /* backend, n_params */
    double epoch_s_sum;
    int64_t epoch_s_count;
    FILE *log;                        /* rank 0 */
    /* Mini-batch modes (modes/minibatch.c, modes/dist_minibatch.c). */
    int fanout[GNN_MODEL_MAX_LAYERS];
    char fanouts[144];                /* canonical "15,10,5" (fits 16 x 1000000), then
                                         " once" with --sample-once; "-" */
    gnn_loader_t *ld;
    gnn_bsampler_t *ds;               /* --sampler device: the backend's sampler */
    gnn_bbatch_t dsb;                 /* ... its batch (buffers reused) */
    struct gnn_dsq *dsq;              /* ... its thread, sampling one batch ahead */
    int64_t *dperm; size_t dperm_cap; /* ... the epoch's seeds, shuffled (host) */
    int64_t *dstart; size_t dstart_cap; /* ... batch b is dperm[dstart[b], dstart[b + 1]) */
    gnn_loader_edges_t dsb_edges;     /* ... dsb's edge batch (--task link) */
    gnn_dhost_t dsb_host;         /* ... dsb's rows of xs (sparse input) */
    int64_t *dy; size_t dy_cap;       /* ... a batch's targets (host) */
    int64_t *dids; size_t dids_cap;   /* ... a batch's node ids (host; input rows in host memory) */
    int64_t *iota;                    /* backend, 0 .. batch_size - 1 */
    float *xb;  size_t xb_bytes;      /* batch input on the backend (not host memory) */
    int64_t *yb; size_t yb_bytes;     /* batch targets on the backend (not host memory) */
    int64_t *nb; size_t nb_bytes;     /* batch node ids on the backend (not host memory) */
    float *hbuf[2]; size_t hbuf_bytes[2]; /* layer-wise inference activations */
    float *ebuf; size_t ebuf_bytes;   /* one inference batch's input rows */
    int64_t *eidx; size_t eidx_bytes; /* ... and their ids */
    int64_t *outdeg;                  /* host: out-degree of every node (gcn inference) */
    gnn_loader_stats_t lst;           /* the last epoch's loader counters */
    double compute_s;                 /* the last epoch's forward/backward/step time */
    /* Distributed modes (modes/distributed.c): this rank's part. */
    gnn_dist_part_t *dist;
    gnn_dist_dev_t *ddev;             /* its halo exchange and allreduce on the backend */
    int stage;                        /* rows go through host buffers (a device backend) */
    int64_t *row_id;                  /* backend: graph-file id of each local node */
    int64_t grad_bytes;               /* this epoch's gradient bytes into the allreduce */
    double allreduce_s;               /* ... and its time */
    int64_t ep_bytes[3];              /* last epoch over all ranks: halo (or feature),
                                         gradient and remote-draw bytes */
    double ep_fetch_s, ep_allreduce_s; /* ... the slowest rank's exchange and allreduce time */
    double ep_compute_s;              /* ... and step time less both (the slowest rank's) */
    int64_t ep_remote, ep_hits;       /* ... all ranks: remote input rows, from the cache */
    double ep_sample_s;               /* ... the slowest rank's sampling time */
    double ep_fetch_busy_s;           /* ... the slowest rank's time fetches took */
    void *mode_state;                 /* the mode's own (modes/dist_minibatch.c) */
} gnn_job_t;

/* ---- job.c: buffers and time ------------------------------------------------ */

double gnn__now_s(void);
/* The wall clock, seconds since 1970 (to align a trace taken outside). */
double gnn__wall_s(void);
/* gnn_layer_ensure with at least one byte (a buffer even for no rows). */
int gnn__buf_ensure(gnn_backend_t *be, void **buf, size_t *have, size_t bytes);
/* A new backend buffer holding a copy of bytes of host src. */
int gnn__buf_upload(gnn_backend_t *be, const void *src, size_t bytes, void **dst);
/* Free everything the job holds (mode, task, model, backend, files). */
void gnn__job_free(gnn_job_t *j);

/* ---- options.c --------------------------------------------------------------- */

/* The options alone (GNN_EUSAGE naming the first bad one). */
int gnn__opts_check(const gnn_train_opts_t *o);
/* The batches the loader prepares ahead: --prefetch's count, or for "auto"
 * 2 where omp_get_num_procs() covers the OpenMP threads and the sampler
 * threads, else 0. */
int gnn__opts_prefetch(const gnn_train_opts_t *o);
/* The files the options name: no two the same, outputs writable. */
int gnn__opts_check_paths(const gnn_train_opts_t *o);
/* --fanouts into j->fanout and j->fanouts (default 10 per layer). */
int gnn__opts_fanouts(gnn_job_t *j);

/* ---- setup.c ------------------------------------------------------------------ */

/* Options, backend, aggregators, layer kind and mode (j->mode set by the
 * caller), and for a graph file its data and features. */
int gnn__setup(gnn_job_t *j);
/* Every feature of the n x f rows is finite; else GNN_EINVAL naming the
 * first node that has another (its graph-file id: id[row], or the row). */
int gnn__check_finite(const char *path, const float *x, int64_t n, int64_t f, const int64_t *id);
/* Divide each feature row by its sum (rows summing to 0 stay as they are).
 * Returns how many rows hold a negative entry (whose sum may lie near 0). */
int64_t gnn__normalize_rows(float *x, int64_t n, int64_t f);
/* The warning for those rows (signed of n rows normalized), once. */
void gnn__normalize_warn(int64_t signed_rows, int64_t n);

/* ---- input.c ------------------------------------------------------------------ */

/* The learnable input rows of a job on a graph file or a rank's part
 * (rows: the nodes held, gid: their graph-file ids, host, NULL: row = id):
 * checks the options against the features, the memory the table needs
 * against what the backend has, creates the table and sets j->in_dim
 * (without --embed-dim only j->in_dim). */
int gnn__input_setup(gnn_job_t *j, int64_t rows, const int64_t *gid);
/* A run starts: the table redrawn from the run's seed, or restored from
 * the checkpoint (restore); the model asked for its input gradient. */
int gnn__input_start_run(gnn_job_t *j, int restore);
/* The model's input for n rows: feat (backend, n x feat_dim, or NULL
 * without features) beside the table rows rows (backend, NULL: 0 .. n -
 * 1; rows_host: the same ids on the host); *x = feat itself without a
 * table. Records the rows for the step. */
int gnn__input_build(gnn_job_t *j, int64_t n, const float *feat, const int64_t *rows,
                     const int64_t *rows_host, const float **x);
/* Rows idx (backend, n; idx_host: the same on the host) of the whole
 * input into dst (n x in_dim): the features of j->x and the table's rows
 * (inference batches). */
int gnn__input_gather(gnn_job_t *j, int64_t n, const int64_t *idx, const int64_t *idx_host,
                      float *dst);
/* After a backward: the table's step on the rows of the last input (their
 * gradient from the model); n 0 still counts a step. No-op without a
 * table. */
int gnn__input_step(gnn_job_t *j);
/* Over a partition directory (collective, every failure agreed):
 * full-graph input: the owned rows from the table, the halo rows from
 * their owners, beside j->x; after the backward, the halo rows' gradients
 * go back to their owners, which step on every owned row. Inference uses
 * the same input. */
int gnn__input_dist_full(gnn_job_t *j, const float **x);
int gnn__input_dist_full_step(gnn_job_t *j);
/* Mini-batches: the table rows of a step's n input nodes (sampler ids,
 * host; n = 0 and nodes NULL without a batch) fetched from their owners,
 * then the model's input beside feat (backend, n x feat_dim) built from
 * them; after the backward the rows' gradients go to their owners, which
 * step on every row any rank's input read. No row is kept between steps,
 * so none is read stale. */
int gnn__input_dist_fetch(gnn_job_t *j, const int64_t *nodes, int64_t n);
int gnn__input_dist_build(gnn_job_t *j, int64_t n, const float *feat, const float **x);
int gnn__input_dist_step(gnn_job_t *j, int had_batch);
void gnn__input_dist_free(gnn_job_t *j);
void gnn__input_typed_free(gnn_job_t *j);
/* Checkpoints: the table into j->ck, every node's row by graph-file id
 * (over a partition directory gathered on rank 0: collective). */
int gnn__input_save(gnn_job_t *j);
/* Array k of the table (0 the rows, 1 and 2 the optimiser state, 3 the
 * best copy) of every node by graph-file id into dst (N x D; rank 0's,
 * the others pass NULL): collective over a partition directory. */
int gnn__input_gather_array(gnn_job_t *j, int k, float *dst);
/* The best epoch's rows: keep the current ones, or put them back. */
int gnn__input_keep_best(gnn_job_t *j);
int gnn__input_restore_best(gnn_job_t *j);

/* ---- state.c ------------------------------------------------------------------ */

/* The whole graph's fingerprint as a checkpoint records it (j->graph_edges,
 * graph_hash, train_hash, train_layout), from the graph file or, over a partition
 * directory, from every rank's owned rows (collective: every rank calls it,
 * after its part is loaded and before anything frees its edges). Only with
 * --checkpoint (else all 0). */
int gnn__state_fingerprint(gnn_job_t *j);

/* The state to start from: the checkpoint when resuming one (*restore:
 * the run in progress continues), else fresh; the log opened (rank 0). */
int gnn__state_load(gnn_job_t *j, int *restore);
/* Copy the model and optimiser state into j->ck and write it (rank 0). */
int gnn__state_save(gnn_job_t *j);
/* Start run r from scratch in c (keeping the finished runs). */
void gnn__state_new_run(gnn_checkpoint_t *c, int64_t r);
/* Arrays of j->ck for np parameters and the runs' results. */
int gnn__state_alloc(gnn_job_t *j, int64_t np);

/* ---- loop.c ------------------------------------------------------------------- */

/* Create the model and optimiser state of run j->ck.run (restoring them
 * from the checkpoint arrays when restore is set). */
int gnn__start_run(gnn_job_t *j, int restore);
/* The runs from the state loaded, each to its last epoch or early stop;
 * *r: their results. */
int gnn__runs(gnn_job_t *j, int restore, gnn_train_result_t *r);

/* ---- step.c ------------------------------------------------------------------- */

/* One Adam step on the gradients (weight decay on the first layer only or
 * on all, as j->decay_scope says). */
int gnn__adam_step(gnn_job_t *j);
/* Its options (--lr, --weight-decay; the betas and eps of Adam). */
gnn_adam_opts_t gnn__adam_opts(const gnn_job_t *j);
/* Backward from j->dlogits, then Adam: one process. */
int gnn__step(gnn_job_t *j);

/* ---- replay.c: a step captured once and replayed --------------------------- */

/* Whether the job's training steps may be replayed from a capture (a
 * full-graph step in one process on a GPU, or emulated on cpu-as-gpu;
 * not after a failed capture in this run). */
int gnn__replay_usable(const gnn_job_t *j);
/* Why not (a phrase), or NULL when they may. */
const char *gnn__replay_why_not(const gnn_job_t *j);
/* End the capture rules begun around a step (cpu-as-gpu,
 * gnn_be_capture_rules_begin): 1 when the step broke one, its reason in
 * why unless why[0] is set already; the step's own error kept when it
 * failed (step_rc < 0), else the error state cleared. */
int gnn__step_rules_end(gnn_backend_t *be, int step_rc, char *why, size_t n);
/* One training step through the capture: issue queues the step (forward,
 * loss on the device, backward and Adam: what gnn__step ends with); the
 * first call captures it and runs it, later ones replay it with their own
 * dropout counters and Adam step (the model's stream and j->ck.step
 * advance as the step advances them). Errors: issue's, the backend's. */
int gnn__replay_step(gnn_job_t *j, int (*issue)(gnn_job_t *j));
/* Forget the capture (a new run, a new model); _free also its buffer. */
void gnn__replay_drop(gnn_job_t *j);
void gnn__replay_free(gnn_job_t *j);
/* The gradients summed over the ranks (one allreduce of the flat buffer;
 * *sum, when not NULL, summed with them: the step's loss), then Adam; with
 * --debug, the parameters checked equal on every rank. Collective. */
int gnn__step_reduce(gnn_job_t *j, double *sum);

/* ---- output.c ----------------------------------------------------------------- */

/* One epoch's log line (rank 0) and progress line. m: NaN before the
 * first evaluation; end_unix: the wall clock when the training ended. */
void gnn__log_epoch(gnn_job_t *j, int64_t epoch, double loss, const gnn_metrics_t *m,
                    int evaluated, double epoch_s, double eval_s, double end_unix);
/* Predictions of the best parameters of the last run (collective over a
 * partition directory; rank 0 writes). */
int gnn__write_predictions(gnn_job_t *j);
int gnn__write_embeddings(gnn_job_t *j);
/* --save-model (trainer/export.c); collective over ranks. */
int gnn__write_model(gnn_job_t *j);
/* The log's final line and the summary. */
void gnn__write_final(gnn_job_t *j, const gnn_train_result_t *r);

/* ---- modes/minibatch.c (used by modes/dist_minibatch.c too) ------------------- */

/* The loader over graph (feat rows by feat_row, or row = id; labels per
 * node), with the batch indices uploaded. */
int gnn__loader_setup(gnn_job_t *j, const gnn_csr_t *graph, const float *feat,
                      const int64_t *feat_row, const int64_t *labels, const int64_t *key_ids,
                      const gnn_sampler_remote_t *remote);
/* The model's graphs for a batch's blocks: the loader's when its workers
 * built them (whole on a host-memory backend, staged on a device and
 * placed here), else made here (*own set: free them with
 * gnn__batch_graphs_free). */
int gnn__batch_graphs(gnn_job_t *j, gnn_loader_batch_t *b, gnn_bgraph_t **graphs, int *own);
void gnn__batch_graphs_free(gnn_job_t *j, gnn_bgraph_t **graphs, int own);
/* Stop the device sampler's thread and free its batches (NULL ok). */
void gnn__dsq_free(gnn_job_t *j);
/* The epoch's batches under (seed, epoch), as the loader takes them: the
 * task's given batches (edge batches, of the epoch to come), or the
 * training seeds (this rank's over a partition directory) shuffled and
 * cut into runs of --batch-size. Batch b is (*perm)[(*start)[b],
 * (*start)[b + 1]) of *nb; *n items in all (the arrays grow as needed). */
int gnn__plan_epoch(gnn_job_t *j, uint64_t seed, uint64_t epoch, int64_t **perm,
                    size_t *perm_cap, int64_t **start, size_t *start_cap, int64_t *nb, int64_t *n);
/* Free a device batch's host copies and zero them. */
void gnn__dhost_clear(gnn_dhost_t *sp);
/* Batch b's node ids into ids (unless NULL) and, for typed draws, its
 * blocks into sp's arrays (unless NULL), read back on the sampler's queue
 * in one wait. */
int gnn__dhost_down(gnn_job_t *j, const gnn_bbatch_t *b, int64_t *ids, gnn_dhost_t *sp);
/* Block l's R-GCN graph from those host copies, its sources' ids
 * src_ids (host; over a partition directory keyed by their graph-file
 * ids). */
int gnn__dhost_typed_graph(gnn_job_t *j, const gnn_bbatch_t *b, const gnn_dhost_t *sp,
                           const int64_t *src_ids, int l, gnn_bgraph_t **out);
/* The mini-batch modes' keys of the log (loader counters). */
void gnn__log_loader(const gnn_job_t *j, FILE *f);

/* ---- modes/distributed.c ------------------------------------------------------ */

/* Load this rank's part and set up what both distributed modes use
 * (collective). */
int gnn__dist_setup(gnn_job_t *j);
/* The halo exchange and gradient allreduce on the backend, for the part
 * and its loss plans as they are now (the modes' setup calls it once the
 * plans are made). Collective. */
int gnn__dist_open_exchange(gnn_job_t *j);
/* The model's halo exchange on (full-graph steps and inference) or off. */
int gnn__dist_set_halo(gnn_job_t *j, int on);
/* An epoch of a distributed mode: counters zeroed, epoch(j, loss, waits,
 * remote, hits) run, then the ranks' byte counts summed and the slowest
 * rank's times kept for the log. Collective. */
int gnn__dist_epoch(gnn_job_t *j, double *loss,
                    int (*epoch)(gnn_job_t *j, double *loss, double *waits, int64_t *remote,
                                 int64_t *hits));
/* Full-graph inference over the parts, the halo exchanged (collective). */
int gnn__dist_infer(gnn_job_t *j, gnn_infer_t *out);
/* Every rank's owned rows (mine: host, n_owned x f, in local order) into
 * dst on rank 0 (N x f, row v for graph-file id v; the others pass NULL).
 * Collective, failures agreed. */
int gnn__dist_gather_rows(gnn_job_t *j, const float *mine, int64_t f, float *dst);
/* The distributed modes' keys of the log; between the first and the last
 * the mode's own (mode_keys). */
void gnn__log_dist(const gnn_job_t *j, FILE *f, void (*mode_keys)(const gnn_job_t *, FILE *));

#endif
