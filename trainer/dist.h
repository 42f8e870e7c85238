/*
 * One rank's share of distributed training: its part of a partition
 * directory (docs/FORMAT.md) with rank r reading part r, and the halo
 * exchange that full-graph training runs around every layer.
 *
 * The local graph is the part's owned rows (the in-edges of its owned
 * nodes) over local ids: the owned nodes [0, n_owned), then the first hop
 * of halo [n_owned, n_local), the sources owned by other ranks. Halo rows
 * of a layer's input are the owners' rows of the same nodes: the forward
 * exchange sends each owner's boundary rows to the ranks that hold them
 * as halo (one all-to-all per call), and the backward exchange returns
 * the gradients of halo rows to their owners, which add them into their
 * own rows. Node ids in gid are the graph file's, so per-node randomness
 * (dropout) keyed by them is the same whichever rank holds the node.
 */
#ifndef GNN_TRAINER_DIST_H
#define GNN_TRAINER_DIST_H

#include "graph/csr.h"
#include "graph/graph_file.h"

#include <mpi.h>
#include <stdint.h>

/*
 * Which rows one exchange moves: the owned rows each rank sends, grouped by
 * destination, and the halo rows it receives, grouped by owner. The full
 * plan (the fields of gnn_dist_part_t) moves every halo row; a loss plan
 * (gnn_dist_loss_plans) only those a training step's loss depends on.
 */
typedef struct {
    int *scount, *sdispl, *rcount, *rdispl; /* size each (one allocation, at scount) */
    int64_t *send_rows;  /* owned local rows sent, grouped by destination rank */
    int64_t n_send;
    int64_t *recv_rows;  /* halo rows received (0 = local row n_owned), ascending; NULL:
                            all of them (the full plan) */
    int64_t n_recv;
} gnn_dist_plan_t;

#define GNN_DIST_MAX_LAYERS 16

/* A feature fetch's buffers (gnn_dist_fetch_grouped), grown as needed. */
typedef struct {
    int *cnt;                 /* 5 x size counts and displacements */
    int64_t *req, *asked;     /* ids asked of the owners; asked of this rank */
    float *send;              /* the rows this rank serves */
    size_t req_cap, asked_cap, send_cap;
} gnn_dist_fetch_scratch_t;

typedef struct {
    MPI_Comm comm;
    int rank, size;
    int64_t n_global;     /* nodes of the whole graph */
    int64_t n_owned;      /* rows of the local graph */
    int64_t n_local;      /* owned + one hop of halo: its columns */
    gnn_csr_t csr;        /* n_owned x n_local, local ids */
    int64_t *gid;         /* n_local (n_all with the whole part): graph-file ids */
    int64_t *src_deg;     /* n_local: out-degree in the whole graph */
    int32_t *etype;       /* csr.nnz: the relation of each entry (a typed graph), or NULL */
    int32_t *full_etype;  /* full.nnz: the same for the whole part (mini-batches), rows
                             grouped by relation, each in graph-file id order */
    gnn_graph_types_t *types; /* a typed graph's types (by graph-file id), or NULL */
    int64_t feat_dim, num_classes;
    float *feat;          /* n_local x feat_dim: owned rows from the part, halo fetched */
    int64_t *label;       /* n_owned (-1: none) */
    int64_t *split[GNN_NUM_SPLITS];    /* local ids of the owned nodes in each split */
    int64_t split_n[GNN_NUM_SPLITS];
    int64_t split_total[GNN_NUM_SPLITS]; /* over all ranks */
    /* Exchange plan (rows). */
    int *scount, *sdispl, *rcount, *rdispl; /* size each */
    int64_t *send_rows;   /* owned local rows to send, grouped by destination rank */
    int64_t n_send;       /* rows sent per forward exchange (received per backward) */
    void *buf;            /* packing buffer */
    size_t buf_bytes;
    void *rbuf;           /* rows of a loss plan as they arrive or leave */
    size_t rbuf_bytes;
    gnn_dist_plan_t loss_plan[GNN_DIST_MAX_LAYERS]; /* exchange k of a training step */
    int n_loss_plans;     /* 0: every exchange uses the full plan */
    /* The whole part, for mini-batches (gnn_dist_load with whole set). */
    int hops;             /* halo hops of the partition */
    int64_t n_all;        /* owned nodes and every hop of halo */
    gnn_csr_t full;       /* n_all x n_all in-edge CSR: the part's rows (owned and halo
                             short of the last hop), each in graph-file id order (the
                             graph's own order when its rows are sorted), empty rows
                             for the last hop */
    int64_t n_held;       /* rows of full that hold in-edges: [0, n_held) */
    int64_t *halo_index;  /* n_all - n_owned (partition id, local id) pairs of the halo,
                             by partition id (gnn_dist_pairs_find) */
    int64_t *l2g;         /* n_all partition ids (meta.h5's new ids) */
    int64_t *p2g;         /* n_global: the graph-file id of every partition id (meta.h5's
                             node_map), so that a batch's nodes beyond the part are keyed
                             as one process keys them */
    int64_t *part_start;  /* size + 1: the partition-id range of each rank */
    float *own_feat;      /* n_owned x feat_dim: what this rank serves to fetches */
    int own_feat_lent;    /* own_feat is the first rows of another's array (the job's
                             input rows in host memory): not freed here */
    /* Counters, reset by their users. */
    int64_t bytes_sent;   /* halo exchange: by this rank, both directions */
    double exchange_s;
    int64_t fetch_bytes;  /* feature rows this rank served to fetches */
    double fetch_s;
    int64_t sample_bytes; /* remote draws: requests and answers this rank sent */
    double sample_s;
    gnn_dist_fetch_scratch_t fx; /* gnn_dist_fetch_grouped's, kept between fetches */
    MPI_Comm fetch_comm;  /* fetches run on this one when set (MPI_COMM_NULL: comm), so a
                             thread may fetch while another uses comm */
    struct gnn_sampler_excl *draw_excl; /* edges (graph-file ids) left out of the rows
                             this rank draws for others: the current batch's */
} gnn_dist_part_t;

/*
 * Load part `rank` of dir for the ranks of comm (collective; whole: also
 * keep the whole part for sampling mini-batches and serving fetches): the part
 * count must equal the number of ranks (GNN_EUSAGE naming both
 * otherwise). Fetches the halo features, computes the whole-graph
 * out-degrees and sums the split sizes. Returns the same code on every
 * rank: 0, or the failing rank's code (its message names the cause; the
 * others name that rank). GNN_EINVAL when the parts lack features, labels
 * or splits.
 */
int gnn_dist_load(MPI_Comm comm, const char *dir, int whole, gnn_dist_part_t *d);

/* Feature rows of nodes ids[0 .. n) (sampler ids, below: halo nodes in
 * [n_owned, n_all) or nodes beyond the part) from their owners into out
 * (n x feat_dim), one all-to-all of ids and one of rows. Collective:
 * every rank calls it, with n = 0 when it needs nothing. Needs the whole
 * part. One fetch at a time on a part (its scratch is the part's, freed
 * on return here: for a fetch done once, such as a cache's fill). */
int gnn_dist_fetch_feat(gnn_dist_part_t *d, const int64_t *ids, int64_t n, float *out);
/* The same with the rows as they arrive, grouped by owner, without a
 * copy into request order: row k of out is the one of ids[at[k]] (at: n
 * entries). Its buffers are kept for the next fetch (per step). */
int gnn_dist_fetch_grouped(gnn_dist_part_t *d, const int64_t *ids, int64_t n, float *out,
                           int64_t *at);
void gnn_dist_free(gnn_dist_part_t *d);

/*
 * Sampling by owners (mini-batches on parts with fewer halo hops than
 * layers). The sampler runs on full with ids that name every node of the
 * graph: local ids [0, n_all) for the part's nodes, n_all + p for a node
 * of partition id p beyond the part. Draws are keyed by graph-file ids
 * (gid), so a node's draws are the same on every rank and in one
 * process. Rows [0, n_held) are drawn here; the others by their owners
 * through gnn_dist_draw_remote.
 */
int64_t gnn_dist_sampler_id(const gnn_dist_part_t *d, int64_t pid);
/* The partition id of sampler id v. */
int64_t gnn_dist_pid(const gnn_dist_part_t *d, int64_t v);
/* Sort n (key, value) pairs of int64 (2n values, interleaved) by key. */
void gnn_dist_pairs_sort(int64_t *pairs, int64_t n);
/* The value of key in n pairs sorted by gnn_dist_pairs_sort, or -1. */
int64_t gnn_dist_pairs_find(const int64_t *pairs, int64_t n, int64_t key);

/* The rank owning partition id pid (in [0, n_global)). */
int gnn_dist_owner(const gnn_dist_part_t *d, int64_t pid);
/*
 * The sampler's remote hook (sampler.h gnn_sampler_remote_t.draw, ctx =
 * d): the n nodes v (sampler ids >= n_held) go to their owners, grouped
 * per owner with this rank's batch key; each owner draws from its row
 * with gnn_sampler_draw_row and answers the sources' partition ids, here
 * turned back into sampler ids. Asked by a typed sampler (rel set; the
 * part must have relations, full_etype), the owners draw per relation
 * (gnn_sampler_draw_row_typed) and answer each source with its relation
 * (partition id << 8 | relation), set into *rel. Collective over fetch_comm (comm when it
 * is unset): every rank calls it once per hop of every step, with n = 0
 * when it needs nothing, or n < 0 (a GNN_E code) when its sampler failed
 * before the hop. Four collective calls: the request counts, the
 * requests, the answers' sizes, the answers; a rank's failure travels in
 * place of its counts or sizes (a bad node, a hop out of step, the draws),
 * so it is agreed and returned on every rank. Running out of memory for
 * what it receives fails this rank alone (the others wait in the next
 * call: the job must end).
 */
int gnn_dist_draw_remote(void *ctx, int h, int fanout, uint64_t key, const int64_t *v, int64_t n,
                         int64_t *cnt, int64_t **src, int32_t **rel);

/* The edges (n pairs of graph-file ids, both directions) the rows this
 * rank draws for others leave out until the next call (n = 0: none): an
 * edge batch's, which every rank samples around in the same step. 0 or
 * GNN_ENOMEM / GNN_EINVAL. Local. */
int gnn_dist_set_excluded(gnn_dist_part_t *d, const int64_t *pairs, int64_t n);

/*
 * Loss plans for the full-graph training steps of a model of `layers`
 * layers (at most GNN_DIST_MAX_LAYERS) whose loss covers the owned training
 * nodes: exchange k (the output of layer k, k < layers - 1) moves only the
 * rows within layers - 1 - k hops (in-edges, and each row itself) of a
 * training node of any rank. The other halo rows only reach rows the loss
 * does not read, and their gradients are exactly zero, so a step's loss
 * and gradients are those of the full exchange. Collective (layers - 1
 * rounds of requests to the owners). Returns the agreed code.
 */
int gnn_dist_loss_plans(gnn_dist_part_t *d, int layers);
/* The plan of exchange k: the loss plan in a training step when made,
 * else NULL, the full plan. */
const gnn_dist_plan_t *gnn_dist_plan_for(const gnn_dist_part_t *d, int k, int training);

/* x: n_local x f host rows, the owned ones set; the halo rows are
 * overwritten with their owners' rows: those plan p receives (p NULL: the
 * full plan, every row), the others set to 0. Collective. */
int gnn_dist_halo_forward(gnn_dist_part_t *d, const gnn_dist_plan_t *p, float *x, int64_t f);
/* g: n_local x f host rows; each halo row plan p receives forward is added
 * into its owner's row (on the owner's rank). The halo rows are left as
 * they were. Collective. */
int gnn_dist_halo_backward(gnn_dist_part_t *d, const gnn_dist_plan_t *p, float *g, int64_t f);
/*
 * The same exchanges for rows kept elsewhere (device memory), by plan p
 * (NULL: the full plan): forward sends the p->n_send rows packed in send
 * (host, in send_rows order: row i is owned row p->send_rows[i]) and
 * writes the n_local - n_owned halo rows into halo (host; rows p does not
 * receive are set to 0); backward sends the gradients of the halo rows p
 * receives (halo, host, all n_local - n_owned rows) and receives
 * p->n_send rows into recv (host), row i to be added by the caller into
 * owned row p->send_rows[i]. local is this rank's failure in getting its
 * rows ready (0: none): it is agreed first, so every rank returns the
 * first failure and none is left waiting. Collective.
 */
int gnn_dist_halo_forward_packed(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local,
                                 const float *send, float *halo, int64_t f);
int gnn_dist_halo_backward_packed(gnn_dist_part_t *d, const gnn_dist_plan_t *p, int local,
                                  const float *halo, float *recv, int64_t f);
/* The full plan of d as a plan (views of d's fields). */
gnn_dist_plan_t gnn_dist_full_plan(const gnn_dist_part_t *d);

/*
 * Rows of any nodes from their owners (trainer/dist_rows.c): a plan for
 * the n partition ids pids (collective: every rank calls it, n = 0 when it
 * needs nothing), then get copies row pids[i] of each owner's own array
 * (n_owned x f, owned local ids) into row i of out, and put adds row i of
 * rows into the owner's row of own (summed in a fixed order: by asking
 * rank, then request order). All collective; every failure agreed.
 */
typedef struct {
    int *cnt;            /* 4 x size: want counts, displacements; serve counts, displacements */
    int64_t n_want;
    int64_t *order;      /* request k (grouped by owner) is list entry order[k] */
    int64_t n_serve;
    int64_t *serve;      /* owned local rows others asked for, grouped by asker */
    float *sbuf, *rbuf;
    size_t buf_bytes;
} gnn_dist_rows_t;
int gnn_dist_rows_plan(gnn_dist_part_t *d, const int64_t *pids, int64_t n, gnn_dist_rows_t *p);
int gnn_dist_rows_get(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *own, int64_t f,
                      float *out);
int gnn_dist_rows_put(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *rows, int64_t f,
                      float *own);
/* The same moves with the owner's side packed: get_packed serves row i of
 * src for request i of p->serve (packed; 0: row p->serve[i] of src, as
 * get); put_packed leaves the p->n_serve rows received in *got (valid
 * until the next move of p), row i for owned row p->serve[i], for the
 * caller to add. */
int gnn_dist_rows_get_packed(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *src, int packed,
                             int64_t f, float *out);
int gnn_dist_rows_put_packed(gnn_dist_part_t *d, gnn_dist_rows_t *p, const float *rows, int64_t f,
                             const float **got);
void gnn_dist_rows_free(gnn_dist_rows_t *p);

/* The lowest failing code over the ranks of comm, or 0; a rank that did
 * not fail records which rank did ("... failed on rank R"). */
int gnn_dist_agree(MPI_Comm comm, int rc);
/* After a failure agreed by gnn_dist_agree: the rank whose message names
 * the cause (every rank returns the failure; that one reports it). -1
 * when no failure was agreed: a failing rank must then end the job. */
int gnn_dist_reporting_rank(void);

/* Internal to dist.c and dist_draw.c: one count to and from every rank
 * (send[r] < 0: the sender's failure, the same to all), failures agreed
 * from them; then where each rank's part starts in what comes next
 * (displ) and its total (*sum). */
int gnn__dist_exchange_counts(const gnn_dist_part_t *d, MPI_Comm comm, int *send, int *recv,
                              int *displ, int *codes, int64_t *sum);

#endif
