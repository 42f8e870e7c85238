/*
 * Benchmark of the GPU SpMM implementations on a graph file, through the
 * public backend interface (kernels/backend.h) only: cuSPARSE, rowcache,
 * balanced and auto's choice, forward and backward, for the built-in
 * aggregators at several feature widths, against the device's own copy
 * bandwidth measured in the same run; and GEMM in TFLOP/s, square and in
 * the shapes of a GNN layer. Any backend runs it (--device cpu times the
 * CPU SpMM under "auto", the only implementation it has).
 *
 * Checked before timed: each (width, aggregator, implementation,
 * direction) result is first compared with a double-precision reference
 * computed here straight from the CSR, on a seeded sample of output rows
 * (--check-rows drawn uniformly) plus the longest row. The error is
 * max |got - ref| / max |ref| over the uniform rows and must stay below
 * 1e-5 (below 2^-22 sqrt(L) when the longest of them, L entries, is past
 * about 1700: float sums of long rows spread as sqrt(L)); the longest row
 * of all (a hub) is held to the worst-case float summation bound
 * 1e-5 + len * 2^-24 of its own magnitude. max must
 * match exactly, its arg-max (the workspace of the built-in max holds it,
 * kernels/aggr.h) being the first maximal entry of each sampled row; its
 * backward is checked against that arg-max, downloaded whole. A result
 * that does not match is reported FAILED and not timed, and the program
 * exits 1 at the end. GEMMs are checked the same way on sampled entries.
 *
 * Timing: gnn_be_sync and CLOCK_MONOTONIC around repetitions of the call;
 * one call calibrates, then 5 batches of about --reps-time / 5 seconds
 * each run; the median batch gives the time per call.
 *
 * Figures (the header of the output states them too):
 *   bytes = nnz (8 + 4F) + n_out 4F + 8 (n_out + 1)
 * per stored entry its index and the gathered input row, then the written
 * output rows and the row offsets; n_out = n_dst forward, n_src backward;
 * the same for every aggregator (scale factors and arg-max not counted).
 * GB/s = bytes / time; "%copy" = GB/s over the bandwidth of gnn_be_copy
 * of a --copy-mib buffer, counted as 2 x size (read and write); "vs cuSP"
 * = cuSPARSE's time / this implementation's (above 1: faster than
 * cuSPARSE ALG2; with --deterministic on the cusparse rows run the own
 * kernel the backend substitutes, "ran as" names it). GEMM TFLOP/s =
 * 2 m n k / time.
 *
 * Exit status: 0, 1 when a result did not match or a call failed, 2 for a
 * bad command line or a device that cannot be opened (one error line).
 */
#include "graph/base/alloc.h"
#include "graph/base/cli.h"
#include "graph/base/error.h"
#include "graph/base/log.h"
#include "graph/csr.h"
#include "graph/graph_file.h"
#include "kernels/aggr.h"
#include "kernels/backend.h"
#include "kernels/spmm.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROG "spmm_gpu_bench"
#define MAX_LIST 16
#define BATCHES 5
#define SPMM_TOL 1e-5
#define GEMM_TOL 1e-3
#define GEMM_SAMPLES 64

/* ---- Options --------------------------------------------------------------- */

typedef struct {
    const char *graph;
    const char *widths;
    const char *aggr;
    const char *impls;
    const char *backward;
    const char *deterministic;
    const char *device;
    double reps_time;
    int64_t check_rows;
    int64_t gemm_size;
    int64_t gnn_hidden;
    int64_t copy_mib;
    int64_t seed;
} opts_t;

static void opts_defaults(opts_t *o)
{
    memset(o, 0, sizeof *o);
    o->widths = "32,128,256";
    o->aggr = "sum,mean,gcn";
    o->impls = "cusparse,rowcache,balanced,auto";
    o->backward = "on";
    o->deterministic = "off";
    o->device = "cuda";
    o->reps_time = 0.2;
    o->check_rows = 4096;
    o->gemm_size = 8192;
    o->gnn_hidden = 128;
    o->copy_mib = 1024;
    o->seed = 1;
}

static const gnn_opt_t opt_table[] = {
    {"graph", 'g', GNN_OPT_STRING, offsetof(opts_t, graph), "FILE", "graph file (required)"},
    {"widths", 'f', GNN_OPT_STRING, offsetof(opts_t, widths), "F,F,...", "feature widths"},
    {"aggr", 'a', GNN_OPT_STRING, offsetof(opts_t, aggr), "A,A,...",
     "aggregators among sum, mean, gcn, max"},
    {"impl", 'i', GNN_OPT_STRING, offsetof(opts_t, impls), "I,I,...",
     "SpMM implementations among cusparse, rowcache, balanced, auto"},
    {"backward", 0, GNN_OPT_STRING, offsetof(opts_t, backward), "on|off",
     "also check and time the backward pass"},
    {"deterministic", 0, GNN_OPT_STRING, offsetof(opts_t, deterministic), "on|off",
     "only bitwise-reproducible implementations (cusparse runs an own kernel)"},
    {"device", 'd', GNN_OPT_STRING, offsetof(opts_t, device), "DEV",
     "backend: cuda, cuda:N, cpu"},
    {"reps-time", 'r', GNN_OPT_DOUBLE, offsetof(opts_t, reps_time), "SEC",
     "seconds of repetitions per measurement (5 batches)"},
    {"check-rows", 0, GNN_OPT_I64, offsetof(opts_t, check_rows), "N",
     "output rows sampled for the check, plus the longest row"},
    {"gemm-size", 0, GNN_OPT_I64, offsetof(opts_t, gemm_size), "S",
     "square GEMM m = n = k = S; 0: no GEMM at all"},
    {"gnn-hidden", 0, GNN_OPT_I64, offsetof(opts_t, gnn_hidden), "H",
     "width of the GNN-shaped GEMMs (n_nodes x H times H x H, and its weight gradient)"},
    {"copy-mib", 0, GNN_OPT_I64, offsetof(opts_t, copy_mib), "MIB",
     "buffer of the device copy that gives the reference bandwidth"},
    {"seed", 's', GNN_OPT_I64, offsetof(opts_t, seed), "S", "seed of the inputs and the sample"},
    {NULL, 0, 0, 0, NULL, NULL},
};

static const gnn_cli_t cli = {
    .prog = PROG,
    .args = "",
    .summary = "Check, then time, the SpMM implementations of a backend on a graph file "
               "(forward and backward per aggregator and width), GEMM, and the device copy "
               "bandwidth; prints a table.",
    .opts = opt_table,
    .min_positional = 0,
    .max_positional = 0,
};

/* ---- Small helpers --------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix64(uint64_t z) /* splitmix64 finaliser */
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Element i of the stream of seed: a float with 24 random bits in [lo, lo + 1). */
static float rand_float(uint64_t seed, uint64_t i, float lo)
{
    return lo + (float)(mix64(seed * 0xD1B54A32D192ED03ull ^ mix64(i)) >> 40) * 0x1p-24f;
}

/* n random floats in [lo, lo + 1) from stream seed, on all threads. */
static void fill_random(float *a, size_t n, uint64_t seed, float lo)
{
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) a[i] = rand_float(seed, i, lo);
}

static int on_off(const char *s, const char *opt, int *out)
{
    if (!strcmp(s, "on")) *out = 1;
    else if (!strcmp(s, "off")) *out = 0;
    else return GNN_FAIL(GNN_EUSAGE, "option '--%s': expected on or off, not \"%s\"", opt, s);
    return 0;
}

/* Split a comma-separated list into at most MAX_LIST words (in buf). */
static int split_list(const char *s, const char *opt, char *buf, size_t len, char **words, int *n)
{
    if (snprintf(buf, len, "%s", s) >= (int)len)
        return GNN_FAIL(GNN_EUSAGE, "option '--%s': list too long", opt);
    *n = 0;
    for (char *p = buf; *p;) {
        char *end = strchr(p, ',');
        if (end) *end = '\0';
        if (!*p || *n == MAX_LIST)
            return GNN_FAIL(GNN_EUSAGE, "option '--%s': empty item or more than %d items", opt,
                            MAX_LIST);
        words[(*n)++] = p;
        if (!end) break;
        p = end + 1;
        if (!*p) return GNN_FAIL(GNN_EUSAGE, "option '--%s': empty item", opt);
    }
    if (*n == 0) return GNN_FAIL(GNN_EUSAGE, "option '--%s': empty list", opt);
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ---- Timing ---------------------------------------------------------------- */

typedef int (*call_fn)(void *ctx);

/* Seconds per call of fn(ctx): one calibrating call, then BATCHES batches
 * of repetitions lasting about total / BATCHES each; the median batch. */
static int time_calls(gnn_backend_t *be, call_fn fn, void *ctx, double total, double *sec)
{
    int rc = 0;
    double t[BATCHES];
    GNN_TRY(gnn_be_sync(be));
    double t0 = now();
    GNN_TRY(fn(ctx));
    GNN_TRY(gnn_be_sync(be));
    double one = now() - t0, per_batch = total / BATCHES;
    int64_t reps = one > 0 ? (int64_t)(per_batch / one) + 1 : 1000;
    if (reps > 1000000) reps = 1000000;
    for (int b = 0; b < BATCHES; b++) {
        t0 = now();
        for (int64_t r = 0; r < reps; r++) GNN_TRY(fn(ctx));
        GNN_TRY(gnn_be_sync(be));
        t[b] = (now() - t0) / (double)reps;
    }
    qsort(t, BATCHES, sizeof t[0], cmp_double);
    *sec = t[BATCHES / 2];
fail:
    return rc;
}

/* ---- Device copy bandwidth -------------------------------------------------- */

typedef struct {
    gnn_backend_t *be;
    void *dst, *src;
    size_t bytes;
} copy_call_t;

static int run_copy(void *p)
{
    copy_call_t *c = p;
    return gnn_be_copy(c->be, c->dst, c->src, c->bytes);
}

/* GB/s of gnn_be_copy of mib MiB, counted as 2 x size. */
static int copy_bandwidth(gnn_backend_t *be, int64_t mib, double reps_time, double *gbs)
{
    int rc = 0;
    copy_call_t c = {be, NULL, NULL, (size_t)mib << 20};
    GNN_TRY(gnn_be_alloc(be, c.bytes, &c.src));
    GNN_TRY(gnn_be_alloc(be, c.bytes, &c.dst));
    GNN_TRY(gnn_be_zero(be, c.src, c.bytes));
    GNN_TRY(run_copy(&c)); /* first touch */
    double sec = 0;
    GNN_TRY(time_calls(be, run_copy, &c, reps_time, &sec));
    *gbs = 2.0 * (double)c.bytes / sec / 1e9;
    printf("copy: gnn_be_copy of %" PRId64 " MiB: %.3f ms, %.1f GB/s (bytes = 2 x size: read "
           "and write)\n",
           mib, sec * 1e3, *gbs);
fail:
    gnn_be_free(be, c.src);
    gnn_be_free(be, c.dst);
    return rc;
}

/* ---- GEMM ------------------------------------------------------------------ */

typedef struct {
    gnn_backend_t *be;
    int ta;
    int64_t m, n, k;
    const float *a, *b;
    float *c;
} gemm_call_t;

static int run_gemm(void *p)
{
    gemm_call_t *g = p;
    int64_t lda = g->ta ? g->m : g->k;
    return gnn_be_gemm(g->be, g->ta, 0, g->m, g->n, g->k, 1.0f, g->a, lda, g->b, g->n, 0.0f, g->c,
                       g->n);
}

/*
 * C = op(A) B with A, B random in [-0.5, 0.5): checked on GEMM_SAMPLES
 * entries against double sums, then timed. Adds to *failed when the check
 * fails (then not timed).
 */
static int bench_gemm(gnn_backend_t *be, const char *what, int ta, int64_t m, int64_t n, int64_t k,
                      const opts_t *o, int *failed)
{
    int rc = 0;
    const size_t na = (size_t)(m * k), nb = (size_t)(k * n), nc = (size_t)(m * n);
    float *ha = gnn_alloc_large(na * sizeof(float)), *hb = gnn_malloc_array(nb, sizeof(float));
    float *hc = gnn_malloc_array(n, sizeof(float));
    gemm_call_t g = {be, ta, m, n, k, NULL, NULL, NULL};
    void *da = NULL, *db = NULL, *dc = NULL;
    GNN_CHECK(ha && hb && hc, GNN_ENOMEM, "GEMM host matrices");
    fill_random(ha, na, (uint64_t)o->seed + 101, -0.5f);
    fill_random(hb, nb, (uint64_t)o->seed + 102, -0.5f);
    GNN_TRY(gnn_be_alloc(be, na * sizeof(float), &da));
    GNN_TRY(gnn_be_alloc(be, nb * sizeof(float), &db));
    GNN_TRY(gnn_be_alloc(be, nc * sizeof(float), &dc));
    GNN_TRY(gnn_be_upload(be, da, ha, na * sizeof(float)));
    GNN_TRY(gnn_be_upload(be, db, hb, nb * sizeof(float)));
    g.a = da;
    g.b = db;
    g.c = dc;
    GNN_TRY(run_gemm(&g));
    int64_t si[GEMM_SAMPLES], sj[GEMM_SAMPLES];
    float got[GEMM_SAMPLES];
    double want[GEMM_SAMPLES];
    for (int s = 0; s < GEMM_SAMPLES; s++) {
        si[s] = (int64_t)(mix64((uint64_t)o->seed * 31 + (uint64_t)s) % (uint64_t)m);
        sj[s] = (int64_t)(mix64((uint64_t)o->seed * 37 + (uint64_t)s) % (uint64_t)n);
        GNN_TRY(gnn_be_download(be, hc, (const float *)dc + si[s] * n, (size_t)n * sizeof(float)));
        got[s] = hc[sj[s]];
    }
    /* One pass over the rows l of A (k x m when transposed) and of B, all
     * sampled entries at once: with k = n_nodes, a pass per entry would
     * miss the cache twice per row. */
    for (int s = 0; s < GEMM_SAMPLES; s++) want[s] = 0;
#pragma omp parallel
    {
        double part[GEMM_SAMPLES] = {0};
#pragma omp for schedule(static)
        for (int64_t l = 0; l < k; l++)
            for (int s = 0; s < GEMM_SAMPLES; s++)
                part[s] += (double)(ta ? ha[l * m + si[s]] : ha[si[s] * k + l]) *
                           (double)hb[l * n + sj[s]];
#pragma omp critical
        for (int s = 0; s < GEMM_SAMPLES; s++) want[s] += part[s];
    }
    double maxdiff = 0, maxref = 0;
    int nan = 0;
    for (int s = 0; s < GEMM_SAMPLES; s++) {
        double d = fabs((double)got[s] - want[s]);
        if (d != d) nan = 1;
        if (d > maxdiff) maxdiff = d;
        if (fabs(want[s]) > maxref) maxref = fabs(want[s]);
    }
    double err = maxref > 0 ? maxdiff / maxref : (maxdiff > 0 ? INFINITY : 0);
    if (nan || !(err < GEMM_TOL)) {
        printf("GEMM %-14s m=%-8" PRId64 " n=%-8" PRId64 " k=%-8" PRId64
               " FAILED: sampled error %.2e (tolerance %.0e), not timed\n",
               what, m, n, k, nan ? NAN : err, GEMM_TOL);
        (*failed)++;
        goto fail;
    }
    double sec = 0;
    GNN_TRY(time_calls(be, run_gemm, &g, o->reps_time, &sec));
    printf("GEMM %-14s m=%-8" PRId64 " n=%-8" PRId64 " k=%-8" PRId64
           " %9.3f ms %8.2f TFLOP/s  (sampled error %.1e)\n",
           what, m, n, k, sec * 1e3, 2.0 * (double)m * (double)n * (double)k / sec / 1e12, err);
fail:
    gnn_be_free(be, da);
    gnn_be_free(be, db);
    gnn_be_free(be, dc);
    gnn_free(ha);
    gnn_free(hb);
    gnn_free(hc);
    return rc;
}

/* ---- The reference, on sampled rows ------------------------------------------ */

/* The graph as the reference reads it. */
typedef struct {
    const gnn_csr_t *a; /* in-edge CSR: n_dst rows over n_src columns */
    const gnn_csr_t *t; /* its transpose (a itself when a promises symmetry) */
} refgraph_t;

static int64_t indeg(const refgraph_t *r, int64_t v)
{
    return r->a->indptr[v + 1] - r->a->indptr[v];
}

static int64_t outdeg(const refgraph_t *r, int64_t u)
{
    return r->t->indptr[u + 1] - r->t->indptr[u];
}

/* Row v of aggr(x) in double (kernels/spmm.h); for max also its arg-max,
 * the first maximal entry of the row (-1 and 0 for an empty row). */
static void ref_forward_row(const refgraph_t *r, gnn_aggr_t aggr, int64_t f, const float *x,
                            int64_t v, double *out, int32_t *am)
{
    const gnn_csr_t *a = r->a;
    const gnn_eid_t b = a->indptr[v], e = a->indptr[v + 1];
    const double dv = (double)(e - b);
    for (int64_t k = 0; k < f; k++) out[k] = 0;
    if (aggr == GNN_AGGR_MAX) {
        for (int64_t k = 0; k < f; k++) am[k] = -1;
        for (gnn_eid_t j = b; j < e; j++) {
            const float *xu = x + a->indices[j] * f;
            for (int64_t k = 0; k < f; k++)
                if (j == b || (double)xu[k] > out[k]) {
                    out[k] = xu[k];
                    am[k] = (int32_t)a->indices[j];
                }
        }
        return;
    }
    for (gnn_eid_t j = b; j < e; j++) {
        const gnn_vid_t u = a->indices[j];
        const double w = a->weights ? (double)a->weights[j] : 1.0;
        const double gcn = 1.0 / sqrt((dv + 1.0) * ((double)outdeg(r, u) + 1.0));
        const double c = aggr == GNN_AGGR_SUM ? w : aggr == GNN_AGGR_MEAN ? w / dv : gcn;
        const float *xu = x + u * f;
        for (int64_t k = 0; k < f; k++) out[k] += c * (double)xu[k];
    }
    if (aggr == GNN_AGGR_GCN) { /* the implicit self loop */
        const double c = 1.0 / sqrt((dv + 1.0) * ((double)outdeg(r, v) + 1.0));
        for (int64_t k = 0; k < f; k++) out[k] += c * (double)x[v * f + k];
    }
}

/* Row u of the backward dx from dy, in double. For max, am_all is the
 * forward's whole arg-max (n_dst x f); each destination counts once even
 * when the edge is repeated (rows of the transpose are sorted). */
static void ref_backward_row(const refgraph_t *r, gnn_aggr_t aggr, int64_t f, const float *dy,
                             const int32_t *am_all, int64_t u, double *out)
{
    const gnn_csr_t *t = r->t;
    const gnn_eid_t b = t->indptr[u], e = t->indptr[u + 1];
    for (int64_t k = 0; k < f; k++) out[k] = 0;
    for (gnn_eid_t j = b; j < e; j++) {
        const gnn_vid_t v = t->indices[j];
        const float *g = dy + v * f;
        if (aggr == GNN_AGGR_MAX) {
            if (j > b && t->indices[j - 1] == v) continue;
            for (int64_t k = 0; k < f; k++)
                if (am_all[v * f + k] == (int32_t)u) out[k] += (double)g[k];
            continue;
        }
        const double w = t->weights ? (double)t->weights[j] : 1.0, dv = (double)indeg(r, v);
        const double gcn = 1.0 / sqrt((dv + 1.0) * ((double)(e - b) + 1.0));
        const double c = aggr == GNN_AGGR_SUM ? w : aggr == GNN_AGGR_MEAN ? w / dv : gcn;
        for (int64_t k = 0; k < f; k++) out[k] += c * (double)g[k];
    }
    if (aggr == GNN_AGGR_GCN && u < r->a->n_rows) {
        const double c = 1.0 / sqrt(((double)indeg(r, u) + 1.0) * ((double)(e - b) + 1.0));
        for (int64_t k = 0; k < f; k++) out[k] += c * (double)dy[u * f + k];
    }
}

/* Rows checked in one direction: n_uniform drawn rows, then the longest. */
typedef struct {
    int64_t *rows;
    int64_t *dev; /* the same ids in a backend buffer, for one gather per check */
    int64_t n_uniform;
    int64_t n; /* n_uniform + 1 (0 for a graph without rows) */
    int64_t longest_len;
    int64_t uniform_len; /* the most entries of a uniform row */
} sample_t;

/* Tolerance of the uniform rows: 1e-5, or for rows longer than about 1700
 * entries the spread of float sums, which grows as sqrt(len) (measured:
 * below 2^-24 sqrt(len) over thousands of rows; 4x that allowed). */
static double uniform_tol(const sample_t *s)
{
    double t = 0x1p-22 * sqrt((double)s->uniform_len);
    return t > SPMM_TOL ? t : SPMM_TOL;
}

/* want distinct rows of [0, n_rows) drawn from seed (all rows when want >=
 * n_rows), sorted, without the longest row (the most entries by indptr),
 * which follows them. */
static int sample_rows(int64_t n_rows, const gnn_eid_t *indptr, int64_t want, uint64_t seed,
                       sample_t *s)
{
    int rc = 0;
    memset(s, 0, sizeof *s);
    if (want > n_rows) want = n_rows;
    s->rows = gnn_malloc_array((size_t)want + 1, sizeof(int64_t));
    GNN_CHECK(s->rows, GNN_ENOMEM, "sampled rows");
    if (want == n_rows) {
        for (int64_t i = 0; i < n_rows; i++) s->rows[i] = i;
    } else {
        int64_t have = 0;
        for (uint64_t draw = 0; have < want; draw++) { /* draws until enough distinct */
            s->rows[have++] = (int64_t)(mix64(seed ^ mix64(draw)) % (uint64_t)n_rows);
            if (have == want) {
                qsort(s->rows, (size_t)have, sizeof(int64_t), cmp_i64);
                int64_t m = 0;
                for (int64_t i = 0; i < have; i++)
                    if (m == 0 || s->rows[i] != s->rows[m - 1]) s->rows[m++] = s->rows[i];
                have = m;
            }
        }
    }
    s->n_uniform = s->n = want;
    if (n_rows > 0) { /* the longest row goes last, out of the uniform rows */
        int64_t longest = 0, m = 0;
        for (int64_t i = 1; i < n_rows; i++)
            if (indptr[i + 1] - indptr[i] > indptr[longest + 1] - indptr[longest]) longest = i;
        for (int64_t i = 0; i < want; i++)
            if (s->rows[i] != longest) {
                const int64_t r = s->rows[i], len = indptr[r + 1] - indptr[r];
                if (len > s->uniform_len) s->uniform_len = len;
                s->rows[m++] = r;
            }
        s->n_uniform = m;
        s->rows[m] = longest;
        s->n = m + 1;
        s->longest_len = indptr[longest + 1] - indptr[longest];
    }
fail:
    return rc;
}

/* Outcome of comparing sampled rows with the reference. */
typedef struct {
    int ok;
    double err;       /* over the uniform rows */
    char why[200];    /* when not ok */
} check_t;

/* Rows s->rows of the n_rows x f backend matrix dev into host (s->n x f),
 * through one gather into the backend buffer picked and one download: a
 * download per row would wait for the device thousands of times per check. */
static int fetch_rows(gnn_backend_t *be, const float *dev, int64_t n_rows, int64_t f,
                      const sample_t *s, float *picked, float *host)
{
    int rc = 0;
    if (s->n == 0) return 0;
    GNN_TRY(gnn_be_gather_rows(be, s->n, f, dev, n_rows, s->dev, picked));
    GNN_TRY(gnn_be_download(be, host, picked, (size_t)(s->n * f) * sizeof(float)));
fail:
    return rc;
}

/*
 * Compare rows s->rows of the n_rows x f device matrix dev with ref (s->n x
 * f, in sample order). exact: bitwise (max). The uniform rows give err; the
 * longest row is held to 1e-5 + len 2^-24 of its own magnitude. picked: a
 * backend buffer of s->n x f floats; got: host room for as many.
 */
static int compare_rows(gnn_backend_t *be, const float *dev, int64_t n_rows, int64_t f,
                        const sample_t *s, const double *ref, int exact, float *picked,
                        float *got, check_t *out)
{
    int rc = 0;
    double maxdiff = 0, maxref = 0, hub_diff = 0, hub_ref = 0;
    int nan = 0;
    out->ok = 1;
    out->why[0] = '\0';
    GNN_TRY(fetch_rows(be, dev, n_rows, f, s, picked, got));
    for (int64_t i = 0; i < s->n; i++) {
        const float *row = got + i * f;
        const double *want = ref + i * f;
        for (int64_t k = 0; k < f; k++) {
            double d = fabs((double)row[k] - want[k]);
            if (d != d) nan = 1;
            if (i < s->n_uniform) {
                if (d > maxdiff) maxdiff = d;
                if (fabs(want[k]) > maxref) maxref = fabs(want[k]);
            } else {
                if (d > hub_diff) hub_diff = d;
                if (fabs(want[k]) > hub_ref) hub_ref = fabs(want[k]);
            }
            if (exact && out->ok && (double)row[k] != want[k]) {
                out->ok = 0;
                snprintf(out->why, sizeof out->why, "row %" PRId64 " column %" PRId64
                         ": %.9g, expected %.9g", s->rows[i], k, (double)row[k], want[k]);
            }
        }
    }
    out->err = maxref > 0 ? maxdiff / maxref : (maxdiff > 0 ? INFINITY : 0);
    double hub_err = hub_ref > 0 ? hub_diff / hub_ref : (hub_diff > 0 ? INFINITY : 0);
    double hub_tol = SPMM_TOL + (double)s->longest_len * 0x1p-24;
    if (nan) {
        out->ok = 0;
        snprintf(out->why, sizeof out->why, "NaN in the result");
    } else if (out->ok && !(out->err < uniform_tol(s))) {
        out->ok = 0;
        snprintf(out->why, sizeof out->why,
                 "error %.2e over %" PRId64 " sampled rows (tolerance %.1e)", out->err,
                 s->n_uniform, uniform_tol(s));
    } else if (out->ok && !(hub_err < hub_tol)) {
        out->ok = 0;
        snprintf(out->why, sizeof out->why,
                 "longest row %" PRId64 " (%" PRId64 " entries): error %.2e (tolerance %.1e)",
                 s->rows[s->n - 1], s->longest_len, hub_err, hub_tol);
    }
fail:
    return rc;
}

/* The arg-max rows of the sample (device workspace am, n_rows x f) against
 * the reference's; a mismatch clears out->ok. The int32 rows travel as
 * floats of the same size (copied, never computed on: the bits stay). */
static int compare_argmax(gnn_backend_t *be, const int32_t *am, int64_t n_rows, int64_t f,
                          const sample_t *s, const int32_t *ref, float *picked, int32_t *got,
                          check_t *out)
{
    int rc = 0;
    GNN_TRY(fetch_rows(be, (const float *)am, n_rows, f, s, picked, (float *)got));
    for (int64_t i = 0; i < s->n && out->ok; i++) {
        const int32_t *row = got + i * f;
        for (int64_t k = 0; k < f; k++)
            if (row[k] != ref[i * f + k]) {
                out->ok = 0;
                snprintf(out->why, sizeof out->why,
                         "arg-max of row %" PRId64 " column %" PRId64 ": %" PRId32
                         ", expected %" PRId32 " (the first maximal entry)",
                         s->rows[i], k, row[k], ref[i * f + k]);
                break;
            }
    }
fail:
    return rc;
}

/* ---- SpMM ------------------------------------------------------------------ */

typedef struct {
    gnn_backend_t *be;
    const gnn_bgraph_t *g;
    const gnn_aggr_def_t *def;
    int64_t f;
    const float *x, *dy;
    float *y, *dx;
    void *ws;
    size_t ws_bytes;
    int backward;
} spmm_call_t;

static int run_spmm(void *p)
{
    spmm_call_t *c = p;
    if (c->backward)
        return gnn_be_aggr_backward(c->be, c->g, c->def, c->f, c->x, c->y, c->dy, c->dx, c->ws,
                                    c->ws_bytes);
    return gnn_be_aggr_forward(c->be, c->g, c->def, c->f, c->x, c->y, c->ws, c->ws_bytes);
}

/* One table row. */
typedef struct {
    int state; /* 0 not run, 1 timed, -1 FAILED, -2 not on this backend */
    double sec, err;
    gnn_spmm_impl_t ran_as;
    char why[240];
} result_t;

/* Everything one graph's SpMM runs share. */
typedef struct {
    gnn_backend_t *be;
    const opts_t *o;
    const gnn_bgraph_t *g;
    const refgraph_t *ref;
    const sample_t *fwd, *bwd; /* rows checked: destinations, sources */
    float *picked;             /* backend, the sampled rows of one check */
    double copy_gbs;
    int backward, deterministic;
    gnn_spmm_impl_t impls[MAX_LIST];
    int n_impls;
    int failed, checked;
} spmm_ctx_t;

static double model_bytes(const gnn_bgraph_t *g, int backward, int64_t f)
{
    double nnz = (double)gnn_bgraph_nnz(g);
    double rows = (double)(backward ? gnn_bgraph_n_src(g) : gnn_bgraph_n_dst(g));
    return nnz * (8.0 + 4.0 * (double)f) + rows * 4.0 * (double)f + 8.0 * (rows + 1.0);
}

static void print_rows(const spmm_ctx_t *cx, int64_t f, const char *aggr_name, int backward,
                       const result_t *res)
{
    double cusparse = 0;
    for (int i = 0; i < cx->n_impls; i++)
        if (cx->impls[i] == GNN_SPMM_CUSPARSE && res[i].state == 1) cusparse = res[i].sec;
    for (int i = 0; i < cx->n_impls; i++) {
        const result_t *r = &res[i];
        printf("%5" PRId64 " %-5s %-8s %-9s", f, aggr_name, backward ? "backward" : "forward",
               gnn_spmm_impl_name(cx->impls[i]));
        if (r->state == -2) {
            printf("  not on this backend\n");
            continue;
        }
        if (r->state != 1) {
            printf("  FAILED: %s\n", r->why);
            continue;
        }
        double gbs = model_bytes(cx->g, backward, f) / r->sec / 1e9;
        printf(" %10.3f %9.1f %6.1f%%", r->sec * 1e3, gbs, 100.0 * gbs / cx->copy_gbs);
        if (cusparse > 0)
            printf(" %7.2fx", cusparse / r->sec);
        else
            printf(" %8s", "-");
        printf("  %8.1e  %s\n", r->err, gnn_spmm_impl_name(r->ran_as));
    }
    fflush(stdout);
}

/* One implementation, one direction: check, then time when it matched. */
static int spmm_one(spmm_ctx_t *cx, spmm_call_t *call, gnn_aggr_t aggr, const double *ref,
                    const int32_t *am_ref, float *got, int32_t *igot, result_t *r)
{
    int rc = 0;
    const int bw = call->backward;
    const int64_t n_dst = gnn_bgraph_n_dst(call->g), n_src = gnn_bgraph_n_src(call->g);
    check_t ck = {1, 0, ""};
    rc = run_spmm(call);
    if (rc == 0) rc = gnn_be_sync(cx->be);
    if (rc < 0) {
        /* A failed call is this row's failure; a device that no longer
         * synchronises ends the run. */
        snprintf(r->why, sizeof r->why, "%s", gnn_error_message());
        r->state = -1;
        cx->failed++;
        cx->checked++;
        return gnn_be_sync(cx->be);
    }
    /* max forward selects inputs: exact; its backward adds them up. */
    GNN_TRY(compare_rows(cx->be, bw ? call->dx : call->y, bw ? n_src : n_dst, call->f,
                         bw ? cx->bwd : cx->fwd, ref, aggr == GNN_AGGR_MAX && !bw, cx->picked,
                         got, &ck));
    if (ck.ok && aggr == GNN_AGGR_MAX && !bw)
        GNN_TRY(compare_argmax(cx->be, call->ws, n_dst, call->f, cx->fwd, am_ref, cx->picked,
                               igot, &ck));
    cx->checked++;
    GNN_TRY(gnn_be_spmm_choice(cx->be, call->g, (int)aggr, call->f, bw, &r->ran_as));
    r->err = ck.err;
    if (!ck.ok) {
        snprintf(r->why, sizeof r->why, "%s; not timed (ran as %s)", ck.why,
                 gnn_spmm_impl_name(r->ran_as));
        r->state = -1;
        cx->failed++;
        return 0;
    }
    GNN_TRY(time_calls(cx->be, run_spmm, call, cx->o->reps_time, &r->sec));
    GNN_TRY(gnn_be_spmm_choice(cx->be, call->g, (int)aggr, call->f, bw, &r->ran_as));
    r->state = 1;
fail:
    return rc;
}

/* Every implementation of one aggregator at width f; x, dy uploaded. */
static int spmm_aggr(spmm_ctx_t *cx, const gnn_aggr_def_t *def, gnn_aggr_t aggr, int64_t f,
                     const float *hx, const float *hdy, spmm_call_t *call)
{
    int rc = 0;
    const sample_t *sf = cx->fwd, *sb = cx->bwd;
    const int64_t n_dst = gnn_bgraph_n_dst(cx->g);
    double *ref_f = gnn_malloc_array((size_t)(sf->n * f), sizeof(double));
    double *ref_b = gnn_malloc_array((size_t)(sb->n * f), sizeof(double));
    int32_t *am_ref = gnn_malloc_array((size_t)(sf->n * f), sizeof(int32_t));
    int32_t *am_all = NULL;
    const int64_t n_most = sf->n > sb->n ? sf->n : sb->n;
    float *got = gnn_malloc_array((size_t)(n_most * f) + 1, sizeof(float));
    int32_t *igot = gnn_malloc_array((size_t)(n_most * f) + 1, sizeof(int32_t));
    result_t res[2][MAX_LIST];
    memset(res, 0, sizeof res);
    GNN_CHECK(ref_f && ref_b && am_ref && got && igot, GNN_ENOMEM, "reference rows");
    if (aggr == GNN_AGGR_MAX && cx->backward) {
        am_all = gnn_alloc_large((size_t)(n_dst * f) * sizeof(int32_t));
        GNN_CHECK(am_all, GNN_ENOMEM, "arg-max copy");
    }
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < sf->n; i++)
        ref_forward_row(cx->ref, aggr, f, hx, sf->rows[i], ref_f + i * f, am_ref + i * f);
    if (aggr != GNN_AGGR_MAX && cx->backward) {
#pragma omp parallel for schedule(dynamic, 16)
        for (int64_t i = 0; i < sb->n; i++)
            ref_backward_row(cx->ref, aggr, f, hdy, NULL, sb->rows[i], ref_b + i * f);
    }
    call->def = def;
    for (int m = 0; m < cx->n_impls; m++) {
        rc = gnn_be_set_spmm(cx->be, cx->impls[m], cx->deterministic);
        if (rc == GNN_EUNSUPPORTED) {
            res[0][m].state = res[1][m].state = -2;
            rc = 0;
            continue;
        }
        if (rc < 0) goto fail;
        call->backward = 0;
        GNN_TRY(spmm_one(cx, call, aggr, ref_f, am_ref, got, igot, &res[0][m]));
        if (!cx->backward) continue;
        if (res[0][m].state != 1) {
            snprintf(res[1][m].why, sizeof res[1][m].why, "its forward failed; not run");
            res[1][m].state = -1;
            continue;
        }
        if (aggr == GNN_AGGR_MAX) { /* the reference follows this forward's arg-max */
            GNN_TRY(gnn_be_download(cx->be, am_all, call->ws,
                                    (size_t)(n_dst * f) * sizeof(int32_t)));
#pragma omp parallel for schedule(dynamic, 16)
            for (int64_t i = 0; i < sb->n; i++)
                ref_backward_row(cx->ref, aggr, f, hdy, am_all, sb->rows[i], ref_b + i * f);
        }
        call->backward = 1;
        GNN_TRY(spmm_one(cx, call, aggr, ref_b, NULL, got, igot, &res[1][m]));
    }
    print_rows(cx, f, def->name, 0, res[0]);
    if (cx->backward) print_rows(cx, f, def->name, 1, res[1]);
fail:
    gnn_free(ref_f);
    gnn_free(ref_b);
    gnn_free(am_ref);
    gnn_free(am_all);
    gnn_free(got);
    gnn_free(igot);
    return rc;
}

/* All aggregators at width f: inputs made, uploaded, run, freed. */
static int spmm_width(spmm_ctx_t *cx, const gnn_aggr_def_t *const *defs, const gnn_aggr_t *kinds,
                      int n_aggr, int64_t f)
{
    int rc = 0;
    gnn_backend_t *be = cx->be;
    const size_t nx = (size_t)(gnn_bgraph_n_src(cx->g) * f);
    const size_t ny = (size_t)(gnn_bgraph_n_dst(cx->g) * f);
    float *hx = gnn_alloc_large(nx * sizeof(float)), *hdy = gnn_alloc_large(ny * sizeof(float));
    spmm_call_t call = {be, cx->g, NULL, f, NULL, NULL, NULL, NULL, NULL, 0, 0};
    void *x = NULL, *y = NULL, *dy = NULL, *dx = NULL, *ws = NULL, *picked = NULL;
    const int64_t n_most = cx->fwd->n > cx->bwd->n ? cx->fwd->n : cx->bwd->n;
    GNN_CHECK(hx && hdy, GNN_ENOMEM, "input features of width %" PRId64, f);
    fill_random(hx, nx, (uint64_t)cx->o->seed * 1000 + (uint64_t)f, 0.0f);
    fill_random(hdy, ny, (uint64_t)cx->o->seed * 1000 + (uint64_t)f + 500, 0.0f);
    size_t ws_bytes = 0;
    for (int a = 0; a < n_aggr; a++) {
        size_t b = 0;
        GNN_TRY(gnn_be_aggr_workspace(be, cx->g, defs[a], f, &b));
        if (b > ws_bytes) ws_bytes = b;
    }
    GNN_TRY(gnn_be_alloc(be, nx * sizeof(float), &x));
    GNN_TRY(gnn_be_alloc(be, ny * sizeof(float), &y));
    GNN_TRY(gnn_be_alloc(be, ny * sizeof(float), &dy));
    GNN_TRY(gnn_be_alloc(be, nx * sizeof(float), &dx));
    if (ws_bytes) GNN_TRY(gnn_be_alloc(be, ws_bytes, &ws));
    GNN_TRY(gnn_be_alloc(be, (size_t)(n_most * f) * sizeof(float), &picked));
    cx->picked = picked;
    GNN_TRY(gnn_be_upload(be, x, hx, nx * sizeof(float)));
    GNN_TRY(gnn_be_upload(be, dy, hdy, ny * sizeof(float)));
    call.x = x;
    call.y = y;
    call.dy = dy;
    call.dx = dx;
    call.ws = ws;
    call.ws_bytes = ws_bytes;
    for (int a = 0; a < n_aggr; a++) GNN_TRY(spmm_aggr(cx, defs[a], kinds[a], f, hx, hdy, &call));
fail:
    cx->picked = NULL;
    gnn_be_free(be, picked);
    gnn_be_free(be, x);
    gnn_be_free(be, y);
    gnn_be_free(be, dy);
    gnn_be_free(be, dx);
    gnn_be_free(be, ws);
    gnn_free(hx);
    gnn_free(hdy);
    return rc;
}

/* ---- The run ----------------------------------------------------------------- */

typedef struct {
    int64_t widths[MAX_LIST];
    int n_widths;
    const gnn_aggr_def_t *defs[MAX_LIST];
    gnn_aggr_t kinds[MAX_LIST];
    int n_aggr;
    gnn_spmm_impl_t impls[MAX_LIST];
    int n_impls;
    int backward, deterministic;
} plan_t;

static int make_plan(const opts_t *o, const gnn_aggr_registry_t *reg, plan_t *p)
{
    int rc = 0;
    char buf[512], *w[MAX_LIST];
    int n = 0;
    memset(p, 0, sizeof *p);
    GNN_CHECK(o->graph, GNN_EUSAGE, "missing --graph FILE");
    GNN_CHECK(o->reps_time > 0 && o->check_rows >= 1 && o->copy_mib >= 1 && o->gemm_size >= 0 &&
                  o->gnn_hidden >= 1,
              GNN_EUSAGE,
              "--reps-time, --check-rows, --copy-mib and --gnn-hidden must be positive, "
              "--gemm-size not negative");
    GNN_TRY(on_off(o->backward, "backward", &p->backward));
    GNN_TRY(on_off(o->deterministic, "deterministic", &p->deterministic));
    GNN_TRY(split_list(o->widths, "widths", buf, sizeof buf, w, &n));
    for (int i = 0; i < n; i++) {
        char *end;
        long long v = strtoll(w[i], &end, 10);
        GNN_CHECK(*end == '\0' && v >= 1 && v <= 65536, GNN_EUSAGE,
                  "option '--widths': bad width \"%s\"", w[i]);
        p->widths[p->n_widths++] = v;
    }
    GNN_TRY(split_list(o->aggr, "aggr", buf, sizeof buf, w, &n));
    for (int i = 0; i < n; i++) {
        rc = gnn_aggr_from_name(w[i], &p->kinds[i]);
        if (rc == 0) rc = gnn_aggr_registry_find(reg, w[i], &p->defs[i]);
        if (rc < 0) {
            rc = GNN_FAIL(GNN_EUSAGE, "option '--aggr': %s", gnn_error_message());
            goto fail;
        }
        p->n_aggr++;
    }
    GNN_TRY(split_list(o->impls, "impl", buf, sizeof buf, w, &n));
    for (int i = 0; i < n; i++) {
        if (gnn_spmm_impl_from_name(w[i], &p->impls[i]) < 0) {
            rc = GNN_FAIL(GNN_EUSAGE, "option '--impl': %s", gnn_error_message());
            goto fail;
        }
        p->n_impls++;
    }
fail:
    return rc;
}

/* The whole CSR of the file, and its transpose for the reference. */
static int load_graph(const char *path, gnn_csr_t *a, gnn_csr_t *t, const gnn_csr_t **tp)
{
    int rc = 0;
    gnn_graph_file_t *file = NULL;
    double t0 = now();
    GNN_TRY(gnn_graph_open(path, &file));
    const gnn_graph_info_t *info = gnn_graph_file_info(file);
    GNN_TRY(gnn_graph_read_rows(file, 0, info->num_nodes, a));
    /* The file's promise: a range of rows read never carries the symmetric
     * flag (the rows alone are not), all of them are the whole matrix. */
    const unsigned shared = GNN_CSR_SORTED | GNN_CSR_DEDUPED | GNN_CSR_SYMMETRIC;
    if (a->n_rows == a->n_cols && !a->weights && (info->csr_flags & shared) == shared) {
        *tp = a;
    } else {
        GNN_TRY(gnn_csr_transpose(a, t));
        *tp = t;
    }
    gnn_degree_stats_t ds;
    gnn_csr_degree_stats(a, &ds);
    printf("graph %s: %" PRId64 " nodes, %" PRId64 " stored edges%s; in-degree mean %.2f, max %"
           PRId64 ", %" PRId64 " rows empty; read in %.1f s\n",
           path, (int64_t)a->n_rows, (int64_t)a->nnz, a->weights ? " (weighted)" : "", ds.mean,
           (int64_t)ds.max, (int64_t)ds.n_zero, now() - t0);
fail:
    gnn_graph_close(file);
    return rc;
}

static int run(void *opts, char **pos, int npos)
{
    (void)pos;
    (void)npos;
    const opts_t *o = opts;
    int rc = 0, failed = 0;
    gnn_aggr_registry_t *reg = NULL;
    gnn_backend_t *be = NULL;
    gnn_bgraph_t *g = NULL;
    gnn_csr_t a = {0}, t = {0};
    const gnn_csr_t *tp = NULL;
    sample_t sf = {0}, sb = {0};
    plan_t p;
    GNN_TRY(gnn_aggr_registry_create(&reg));
    GNN_TRY(make_plan(o, reg, &p));
    rc = gnn_backend_open(o->device, &be);
    if (rc < 0) {
        /* No device (or no CUDA in this build) is not a failure of the
         * code measured: one line, and the status of a bad command line. */
        gnn_error_print(stderr, PROG, gnn_log_level() >= GNN_LOG_DEBUG);
        rc = 0;
        failed = -1;
        goto fail;
    }
    printf("%s: device %s\n", PROG, gnn_backend_describe(be));
    double copy_gbs = 0;
    GNN_TRY(copy_bandwidth(be, o->copy_mib, o->reps_time, &copy_gbs));

    GNN_TRY(load_graph(o->graph, &a, &t, &tp));
    refgraph_t ref = {&a, tp};
    double t0 = now();
    GNN_TRY(gnn_be_graph_create(be, &a, &g));
    GNN_TRY(gnn_be_sync(be));
    printf("graph prepared on the device in %.2f s\n", now() - t0);

    if (o->gemm_size > 0) {
        const int64_t s = o->gemm_size, h = o->gnn_hidden, n = a.n_rows;
        GNN_TRY(bench_gemm(be, "square", 0, s, s, s, o, &failed));
        GNN_TRY(bench_gemm(be, "Y = X W", 0, n, h, h, o, &failed));
        GNN_TRY(bench_gemm(be, "dW = X^T dY", 1, h, h, n, o, &failed));
    }

    GNN_TRY(sample_rows(a.n_rows, a.indptr, o->check_rows, (uint64_t)o->seed * 7 + 1, &sf));
    GNN_TRY(sample_rows(tp->n_rows, tp->indptr, o->check_rows, (uint64_t)o->seed * 7 + 2, &sb));
    GNN_TRY(gnn_be_alloc(be, (size_t)sf.n * sizeof(int64_t), (void **)&sf.dev));
    GNN_TRY(gnn_be_alloc(be, (size_t)sb.n * sizeof(int64_t), (void **)&sb.dev));
    GNN_TRY(gnn_be_upload(be, sf.dev, sf.rows, (size_t)sf.n * sizeof(int64_t)));
    GNN_TRY(gnn_be_upload(be, sb.dev, sb.rows, (size_t)sb.n * sizeof(int64_t)));
    spmm_ctx_t cx = {
        .be = be, .o = o, .g = g, .ref = &ref, .fwd = &sf, .bwd = &sb, .copy_gbs = copy_gbs,
        .backward = p.backward, .deterministic = p.deterministic, .n_impls = p.n_impls,
    };
    memcpy(cx.impls, p.impls, sizeof p.impls);
    printf("byte model: bytes = nnz*(8 + 4F) + n_out*4F + 8*(n_out + 1), n_out = n_dst forward, "
           "n_src backward; GB/s = bytes / time; %%copy = GB/s / copy GB/s; vs cuSP = cuSPARSE "
           "time / time (%s)\n",
           p.deterministic ? "deterministic: the cusparse rows run an own kernel" : "ALG2");
    printf("check: %" PRId64 " random output rows against a double reference, error = "
           "max|got - ref| / max|ref| < max(1e-5, 2^-22 sqrt(L)) = %.1e forward, %.1e backward "
           "(L = longest of those rows: %" PRId64 ", %" PRId64 "); the longest row of all (%" PRId64
           ", %" PRId64 " entries) < 1e-5 + len 2^-24 of its own; max exact\n",
           sf.n_uniform, uniform_tol(&sf), uniform_tol(&sb), sf.uniform_len, sb.uniform_len,
           sf.longest_len, sb.longest_len);
    printf("timing: median of %d batches of repetitions, %.2f s in all, gnn_be_sync + "
           "CLOCK_MONOTONIC; \"ran as\": gnn_be_spmm_choice after the calls\n",
           BATCHES, o->reps_time);
    printf("\n%5s %-5s %-8s %-9s %10s %9s %7s %8s  %8s  %s\n", "F", "aggr", "pass", "impl",
           "ms/call", "GB/s", "%copy", "vs cuSP", "error", "ran as");
    for (int i = 0; i < p.n_widths; i++)
        GNN_TRY(spmm_width(&cx, p.defs, p.kinds, p.n_aggr, p.widths[i]));
    failed += cx.failed;
    printf("\n%d SpMM results checked, %d FAILED\n", cx.checked, cx.failed);
fail:
    gnn_be_free(be, sf.dev);
    gnn_be_free(be, sb.dev);
    gnn_be_graph_free(g);
    gnn_backend_close(be);
    gnn_aggr_registry_free(reg);
    gnn_free(sf.rows);
    gnn_free(sb.rows);
    gnn_csr_free(&a);
    gnn_csr_free(&t);
    if (rc < 0) return rc;
    if (failed < 0) return 2; /* the device could not be opened, reported */
    if (failed > 0)
        return GNN_FAIL(GNN_EINTERNAL, "%d results did not match the reference", failed);
    return 0;
}

int main(int argc, char **argv)
{
    gnn_log_set_prog(PROG);
    opts_t o;
    opts_defaults(&o);
    int rc = gnn_cli_run(&cli, argc, argv, 1, &o, run);
    if (rc == 2) return 2;
    return gnn_error_report(PROG, NULL, rc);
}
