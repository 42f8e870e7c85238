/*
 * Graph generators: graph files made from a seed instead of a download.
 *
 *   SBM  - a learnable graph for demos, tests and benchmarks: planted
 *          classes, power-law-ish degrees, a chosen homophily, features that
 *          are a class centroid plus noise, labels and a train/valid/test
 *          split (generate_sbm.c).
 *   R-MAT - the Graph500 Kronecker graph: skewed degrees, no labels,
 *          optional random features (generate_rmat.c).
 *
 * Both stream their edges in fixed batches through the edge-stream builder
 * (builder.h) and their features in row blocks to the graph writer, so the
 * size of a graph is bounded by disk and the builder's --mem-budget, not by
 * the generator. Every random number comes from a stream keyed by (seed,
 * purpose, batch or row) (generate_rng.h), so a graph depends only on the
 * options and the seed, not on --mem-budget: the same options give equal
 * datasets (and, with the same budget, the same file bytes).
 * Graphs are stored undirected: symmetrised, deduplicated, no self loops.
 *
 * Each generator has an options struct, a function filling the defaults, a
 * check of the values (GNN_EUSAGE naming the option), and the function that
 * writes the file. Defaults live only in the *_defaults functions.
 */
#ifndef GNN_DATASETS_GENERATE_H
#define GNN_DATASETS_GENERATE_H

#include "datasets/convert.h"
#include "graph/base/types.h"

#include <stdint.h>

/* Largest node count either generator accepts (2^40, R-MAT scale 40). */
#define GNN_GENERATE_MAX_NODES ((gnn_vid_t)1 << 40)

/* ---- SBM ------------------------------------------------------------------ */

typedef struct {
    /* On the command line. */
    gnn_vid_t nodes;      /* N */
    int classes;          /* C planted communities = the labels */
    int feat_dim;         /* F; 0 = no features */
    double avg_degree;    /* D: stored edges / N that is aimed for */
    double homophily;     /* H: fraction of edges joining nodes of one class */
    int64_t seed;
    /* Library only: the shape of the data (defaults tuned for the demo). */
    double degree_shape;  /* Pareto shape of the degree propensities (> 1) */
    double feat_noise;    /* noise standard deviation per feature dimension;
                             centroids are unit vectors */
    double train_frac;    /* fraction of the nodes in split/train */
    double valid_frac;    /* ... in split/valid; the rest is split/test */
} gnn_sbm_opts_t;

/* The defaults: the graph of `gnn-dataset generate sbm --seed 1`. */
void gnn_sbm_defaults(gnn_sbm_opts_t *o);

/* 0, or GNN_EUSAGE with a message naming the bad option. */
int gnn_sbm_check(const gnn_sbm_opts_t *o);

/*
 * Generate the SBM graph of o into out->path (checked with
 * gnn_output_check first). Returns 0; GNN_EUSAGE for bad options; output,
 * builder and writer errors. On failure no file is left at out->path (an
 * existing file replaced with --force is kept until the commit).
 */
int gnn_generate_sbm(const gnn_sbm_opts_t *o, const gnn_output_opts_t *out);

/* ---- Typed SBM (hsbm) -------------------------------------------------------- */

/*
 * A heterogeneous graph whose labels can only be read through its
 * relations (generate_hsbm.c). Node type t0 is the target: its nodes carry
 * the labels and features of pure noise. Every node of every type has a
 * latent class. Types t1 .. t(T-1) are joined to t0 by a relation rK
 * (tK -> t0) and its reverse rev_rK (t0 -> tK); t0 to itself by r0. An
 * edge of rK joins a t0 node of class c to a tK node of class c when K is
 * odd, and of class c ^ 1 (the partner class) when K is even, except that
 * a fraction 1 - homophily of edges takes a uniform class instead; r0 joins
 * equal classes the same way. Types other than t0 carry features of their
 * class's centroid plus noise (one set of centroids for all of them), or
 * none (the last `featureless` types). A model that ignores relations sees
 * the classes c and c ^ 1 of a t0 node through the same mixture, so it
 * cannot tell partners apart; one per relation can.
 */
typedef struct {
    gnn_vid_t nodes;      /* N, split evenly over the types (t0 takes the rest) */
    int types;            /* T >= 2 */
    int classes;          /* C >= 2 */
    int feat_dim;         /* F >= 1: width of every type's features */
    int featureless;      /* the last K types (not t0) have no features */
    double avg_degree;    /* D: edges of each relation rK per t0 node (r0: D / 2) */
    double homophily;     /* H: fraction of edges following the class rule */
    int64_t seed;
    /* Library only. */
    double feat_noise;    /* noise standard deviation per feature entry */
    double train_frac, valid_frac; /* of the t0 nodes */
} gnn_hsbm_opts_t;

void gnn_hsbm_defaults(gnn_hsbm_opts_t *o);
int gnn_hsbm_check(const gnn_hsbm_opts_t *o);
/* As gnn_generate_sbm (a format version 2 file; built in memory: about
 * 40 bytes per stored edge at the peak). */
int gnn_generate_hsbm(const gnn_hsbm_opts_t *o, const gnn_output_opts_t *out);

/* ---- R-MAT ---------------------------------------------------------------- */

typedef struct {
    int scale;            /* N = 2^scale nodes, 1..40 */
    int64_t edge_factor;  /* edges generated = edge_factor * N (before symmetrising) */
    int feat_dim;         /* F; 0 = no features */
    int64_t seed;
} gnn_rmat_opts_t;

void gnn_rmat_defaults(gnn_rmat_opts_t *o);
int gnn_rmat_check(const gnn_rmat_opts_t *o);
/* As gnn_generate_sbm. */
int gnn_generate_rmat(const gnn_rmat_opts_t *o, const gnn_output_opts_t *out);

/*
 * The vertex scramble of R-MAT: a bijection of [0, 2^scale) chosen by seed
 * (odd multiplies and xor-shifts modulo 2^scale), so hubs land at random
 * ids without an N-sized permutation array. Exposed for tests.
 */
gnn_vid_t gnn_rmat_scramble(gnn_vid_t v, int scale, int64_t seed);

#endif
