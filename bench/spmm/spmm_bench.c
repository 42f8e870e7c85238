/*
 * Benchmark of the CPU SpMM kernels (kernels/cpu/spmm.c).
 *
 * Builds two graphs in memory with gnn_csr_from_edges (symmetrised, deduped,
 * no self loops): R-MAT with the Graph500 parameters A=.57 B=C=.19 D=.05
 * (vertex labels randomly permuted, as Graph500 does) and a uniform random
 * graph, both with N nodes and N*deg/2 generated edges (about N*deg stored
 * entries). For each graph it first checks every aggregator, forward and
 * backward, at F=16 against the double reference (the timed kernels are the
 * same code for every F), then times forward and backward of each
 * aggregator for each F: one warm-up call and the best of R calls.
 *
 * Byte model (printed with the results; an honest lower bound on the
 * traffic the kernel cannot avoid, counting each gathered input row once per
 * edge even when a cache would hold it):
 *   per edge: 8 (index) + 4F (gathered row of x, or of dy backward)
 *             + 4F more for max backward (the gathered argmax row)
 *             + 4 for a gathered per-node scale (gcn, mean backward)
 *   per output row: 8 (indptr) + 4F (write)
 *             + 4F for max forward (argmax write), 4F for gcn (self row)
 * Effective GB/s = bytes / time. The reference bandwidth is a STREAM-style
 * copy (a[i] = b[i], 2 x 256 MiB, counted as 8 bytes per element) on the
 * same threads in the same run; the ratio column is effective / copy.
 *
 * The feature matrices are 2 MiB aligned and, unless -p 0, advised to use
 * transparent huge pages (madvise MADV_HUGEPAGE; the system default here
 * is "madvise"): with 4 KiB pages nearly every gathered row costs a TLB
 * miss and a page walk (the matrices are 64 MiB to 1 GiB). The torch
 * script does the same for its input matrix.
 *
 * With -o PREFIX the CSR of each graph is written for bench/spmm/torch_spmm.py
 * as PREFIX.<graph>.csr: int64 n_rows, n_cols, nnz, then int64 indptr and
 * int64 indices. Result lines start with "RESULT" for scripts.
 *
 * Usage: spmm_bench [-n NODES] [-d DEGREE] [-r REPS] [-f F,F,...] [-p 0|1] [-o PREFIX]
 * Threads: OMP_NUM_THREADS.
 */
#include "graph/base/alloc.h"
#include "graph/base/error.h"
#include "graph/csr.h"
#include "kernels/ref/spmm_ref.h"
#include "kernels/spmm.h"

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *state) /* splitmix64 */
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *state) { return (double)(rng_next(state) >> 11) * 0x1p-53; }

/* ---- Feature matrices -------------------------------------------------- */

static int g_huge = 1; /* -p: advise huge pages for the feature matrices */

/* bytes at a 2 MiB boundary, advised to use huge pages when g_huge; free(). */
static void *feat_alloc(size_t bytes)
{
    const size_t align = (size_t)2 << 20;
    void *p = NULL;
    bytes = (bytes + align - 1) / align * align;
    if (posix_memalign(&p, align, bytes)) return NULL;
    if (g_huge) (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice only */
    return p;
}

/* ---- Graphs ---------------------------------------------------------------- */

static int make_graph(const char *kind, gnn_vid_t n, gnn_eid_t m, uint64_t seed, gnn_csr_t *out)
{
    int rc = 0;
    gnn_vid_t *src = malloc((size_t)m * sizeof *src), *dst = malloc((size_t)m * sizeof *dst);
    gnn_vid_t *perm = malloc((size_t)n * sizeof *perm);
    GNN_CHECK(src && dst && perm, GNN_ENOMEM, "edge list");
    int scale = 0;
    while (((gnn_vid_t)1 << scale) < n) scale++;
#pragma omp parallel
    {
        uint64_t st = seed * 1000003u + (uint64_t)omp_get_thread_num() * 0x9E3779B97F4A7C15ull;
#pragma omp for schedule(static)
        for (gnn_eid_t i = 0; i < m; i++) {
            gnn_vid_t u = 0, v = 0;
            if (!strcmp(kind, "rmat")) {
                do {
                    u = v = 0;
                    for (int b = 0; b < scale; b++) {
                        double p = rng_unit(&st);
                        int iu = p >= 0.57 + 0.19, iv = (p >= 0.57 && p < 0.76) || p >= 0.95;
                        u = (u << 1) | iu;
                        v = (v << 1) | iv;
                    }
                } while (u >= n || v >= n);
            } else {
                u = (gnn_vid_t)(rng_next(&st) % (uint64_t)n);
                v = (gnn_vid_t)(rng_next(&st) % (uint64_t)n);
            }
            src[i] = u;
            dst[i] = v;
        }
    }
    /* Random relabelling, so hubs are not clustered at low ids. */
    uint64_t st = seed ^ 0xabcdef;
    for (gnn_vid_t i = 0; i < n; i++) perm[i] = i;
    for (gnn_vid_t i = n - 1; i > 0; i--) {
        gnn_vid_t j = (gnn_vid_t)(rng_next(&st) % (uint64_t)(i + 1)), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    for (gnn_eid_t i = 0; i < m; i++) {
        src[i] = perm[src[i]];
        dst[i] = perm[dst[i]];
    }
    GNN_TRY(gnn_csr_from_edges(n, m, src, dst, NULL,
                               GNN_BUILD_SYMMETRIZE | GNN_BUILD_DEDUPE | GNN_BUILD_NO_SELF_LOOPS,
                               out));
fail:
    free(src);
    free(dst);
    free(perm);
    return rc;
}

static int write_csr(const char *path, const gnn_csr_t *a)
{
    int rc = 0;
    FILE *fp = fopen(path, "wb");
    GNN_CHECK(fp, GNN_EIO, "cannot create %s", path);
    int64_t head[3] = {a->n_rows, a->n_cols, a->nnz};
    int ok = fwrite(head, sizeof head, 1, fp) == 1 &&
             fwrite(a->indptr, sizeof(gnn_eid_t), (size_t)a->n_rows + 1, fp) == (size_t)a->n_rows + 1 &&
             fwrite(a->indices, sizeof(gnn_vid_t), (size_t)a->nnz, fp) == (size_t)a->nnz;
    ok = (fclose(fp) == 0) && ok;
    GNN_CHECK(ok, GNN_EIO, "cannot write %s", path);
fail:
    return rc;
}

/* ---- Copy bandwidth ------------------------------------------------------ */

static double copy_bandwidth(void)
{
    const size_t n = (size_t)1 << 26; /* 256 MiB per array */
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        a[i] = 0;
        b[i] = (float)i;
    }
    double best = 1e30;
    for (int rep = 0; rep < 6; rep++) {
        double t0 = now();
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i++) a[i] = b[i];
        double t = now() - t0;
        if (rep > 0 && t < best) best = t;
    }
    volatile float sink = a[n / 3];
    (void)sink;
    free(a);
    free(b);
    return 2.0 * (double)n * sizeof(float) / best / 1e9;
}

/* ---- Check against the reference ----------------------------------------- */

/*
 * Inputs are >= 0 and the graph unweighted, so every product is a sum of
 * nonnegative terms and the reference value is its own magnitude. Rows of
 * the benchmark graphs hold thousands of entries, so the tolerance is the
 * worst-case bound of float summation, len * 2^-24 relative, plus 1e-5.
 * rows of a are the output rows (the transpose's for backward: pass t).
 */
static int check_close(const char *what, const char *graph, gnn_aggr_t aggr, const gnn_csr_t *a,
                       int64_t f, const float *got, const double *want)
{
    for (gnn_vid_t r = 0; r < a->n_rows; r++) {
        const double tol = 1e-5 + (double)(a->indptr[r + 1] - a->indptr[r] + 1) * 0x1p-24;
        double mag = 0;
        for (int64_t k = 0; k < f; k++) mag = fmax(mag, fabs(want[r * f + k]));
        for (int64_t k = 0; k < f; k++)
            if (!(fabs((double)got[r * f + k] - want[r * f + k]) <= tol * mag))
                return GNN_FAIL(GNN_EINTERNAL, "%s %s %s: row %" GNN_PRIvid " differs from the reference",
                                graph, gnn_aggr_name(aggr), what, r);
    }
    return 0;
}

static int check_graph(const char *name, const gnn_csr_t *a, const gnn_spmm_graph_t *g)
{
    int rc = 0;
    const int64_t f = 16;
    size_t nx = (size_t)(a->n_cols * f), ny = (size_t)(a->n_rows * f);
    float *x = malloc(nx * 4), *y = malloc(ny * 4), *dx = malloc(nx * 4);
    double *xd = malloc(nx * 8), *yd = malloc(ny * 8), *dyd = malloc(ny * 8), *dxd = malloc(nx * 8);
    int32_t *am = malloc(ny * 4), *am_ref = malloc(ny * 4);
    GNN_CHECK(x && y && dx && xd && yd && dyd && dxd && am && am_ref, GNN_ENOMEM, "check buffers");
    uint64_t st = 99;
    for (size_t i = 0; i < nx; i++) xd[i] = x[i] = (float)rng_unit(&st);
    for (gnn_aggr_t aggr = 0; aggr < GNN_AGGR_COUNT_; aggr++) {
        GNN_TRY(gnn_spmm_forward(g, aggr, f, x, y, am));
        GNN_TRY(gnn_spmm_ref_forward(a, aggr, f, xd, yd, am_ref));
        if (aggr == GNN_AGGR_MAX) {
            for (size_t i = 0; i < ny; i++)
                GNN_CHECK((double)y[i] == yd[i] && (am[i] < 0 ? y[i] == 0 : x[am[i] * f + (int64_t)(i % (size_t)f)] == y[i]),
                          GNN_EINTERNAL, "%s max forward: element %zu differs from the reference", name, i);
        } else {
            GNN_TRY(check_close("forward", name, aggr, a, f, y, yd));
        }
        /* backward with dy = y (nonnegative) */
        for (size_t i = 0; i < ny; i++) dyd[i] = y[i];
        GNN_TRY(gnn_spmm_backward(g, aggr, f, y, am, dx));
        GNN_TRY(gnn_spmm_ref_backward(a, aggr, f, dyd, am, dxd));
        GNN_TRY(check_close("backward", name, aggr, &g->t, f, dx, dxd));
    }
fail:
    free(x);
    free(y);
    free(dx);
    free(xd);
    free(yd);
    free(dyd);
    free(dxd);
    free(am);
    free(am_ref);
    return rc;
}

/* ---- Timing ---------------------------------------------------------------- */

static double model_bytes(const gnn_spmm_graph_t *g, gnn_aggr_t aggr, int backward, int64_t f)
{
    double nnz = (double)g->nnz, rows = (double)(backward ? g->n_src : g->n_dst);
    double per_edge = 8 + 4.0 * (double)f, per_row = 8 + 4.0 * (double)f;
    if (aggr == GNN_AGGR_MAX && backward) per_edge += 4.0 * (double)f;
    if (aggr == GNN_AGGR_GCN || (aggr == GNN_AGGR_MEAN && backward)) per_edge += 4;
    if (aggr == GNN_AGGR_MAX && !backward) per_row += 4.0 * (double)f;
    if (aggr == GNN_AGGR_GCN) per_row += 4.0 * (double)f;
    return nnz * per_edge + rows * per_row;
}

static int bench_graph(const char *name, const gnn_csr_t *a, int reps, const int64_t *fs, int n_f,
                       double copy_gbs)
{
    int rc = 0;
    gnn_spmm_graph_t *g = NULL;
    float *x = NULL, *y = NULL, *dx = NULL;
    int32_t *am = NULL;
    gnn_degree_stats_t ds;
    gnn_csr_degree_stats(a, &ds);
    double t0 = now();
    GNN_TRY(gnn_spmm_graph_create(a, &g));
    printf("graph %s: n=%" GNN_PRIvid " nnz=%" GNN_PRIeid " max degree %" GNN_PRIeid
           " empty rows %" GNN_PRIvid "; prepare %.3f s\n",
           name, a->n_rows, a->nnz, ds.max, ds.n_zero, now() - t0);
    t0 = now();
    GNN_TRY(check_graph(name, a, g));
    printf("graph %s: all aggregators match the reference at F=16 (%.1f s)\n", name, now() - t0);
    printf("%-6s %-5s %-8s %5s %10s %9s %9s\n", "graph", "aggr", "pass", "F", "ms/call", "GB/s",
           "vs copy");
    for (int fi = 0; fi < n_f; fi++) {
        const int64_t f = fs[fi];
        size_t n = (size_t)(a->n_rows * f);
        x = feat_alloc(n * 4);
        y = feat_alloc(n * 4);
        dx = feat_alloc(n * 4);
        am = feat_alloc(n * 4);
        GNN_CHECK(x && y && dx && am, GNN_ENOMEM, "feature buffers for F=%lld", (long long)f);
#pragma omp parallel
        {
            uint64_t st = 7 + (uint64_t)omp_get_thread_num();
#pragma omp for schedule(static)
            for (size_t i = 0; i < n; i++) {
                x[i] = (float)rng_unit(&st);
                y[i] = dx[i] = 0;
                am[i] = 0;
            }
        }
        for (gnn_aggr_t aggr = 0; aggr < GNN_AGGR_COUNT_; aggr++)
            for (int bw = 0; bw < 2; bw++) {
                double best = 1e30;
                for (int rep = 0; rep <= reps; rep++) {
                    double ts = now();
                    if (bw)
                        GNN_TRY(gnn_spmm_backward(g, aggr, f, y, am, dx));
                    else
                        GNN_TRY(gnn_spmm_forward(g, aggr, f, x, y, am));
                    double t = now() - ts;
                    if (rep > 0 && t < best) best = t;
                }
                double gbs = model_bytes(g, aggr, bw, f) / best / 1e9;
                printf("%-6s %-5s %-8s %5lld %10.2f %9.2f %8.0f%%\n", name, gnn_aggr_name(aggr),
                       bw ? "backward" : "forward", (long long)f, best * 1e3, gbs,
                       100 * gbs / copy_gbs);
                printf("RESULT %s %s %s %lld %.6f %.3f %.4f\n", name, gnn_aggr_name(aggr),
                       bw ? "backward" : "forward", (long long)f, best, gbs, gbs / copy_gbs);
                fflush(stdout);
            }
        free(x);
        free(y);
        free(dx);
        free(am);
        x = y = dx = NULL;
        am = NULL;
    }
fail:
    free(x);
    free(y);
    free(dx);
    free(am);
    gnn_spmm_graph_free(g);
    return rc;
}

int main(int argc, char **argv)
{
    gnn_vid_t n = (gnn_vid_t)1 << 20;
    double deg = 16;
    int reps = 2, n_f = 4;
    int64_t fs[16] = {16, 64, 128, 256};
    const char *prefix = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) goto usage;
        if (!strcmp(argv[i], "-n"))
            n = strtoll(v, NULL, 10);
        else if (!strcmp(argv[i], "-d"))
            deg = strtod(v, NULL);
        else if (!strcmp(argv[i], "-r"))
            reps = atoi(v);
        else if (!strcmp(argv[i], "-p"))
            g_huge = atoi(v) != 0;
        else if (!strcmp(argv[i], "-o"))
            prefix = v;
        else if (!strcmp(argv[i], "-f")) {
            char *s = (char *)v, *end;
            for (n_f = 0; n_f < 16 && *s; n_f++) {
                fs[n_f] = strtoll(s, &end, 10);
                if (end == s || fs[n_f] < 1) goto usage;
                s = *end == ',' ? end + 1 : end;
            }
        } else
            goto usage;
        i++;
    }
    if (n < 2 || deg <= 0 || reps < 1) goto usage;

    int rc = 0;
    double copy_gbs = copy_bandwidth();
    printf("spmm_bench: %d threads, copy bandwidth %.2f GB/s (STREAM copy, 2 x 256 MiB); "
           "feature matrices %s\n",
           omp_get_max_threads(), copy_gbs, g_huge ? "on huge pages (advised)" : "on 4 KiB pages");
    printf("COPY %.3f\n", copy_gbs);
    printf("byte model: per edge 8 + 4F (+4F max backward, +4 gcn / mean backward); per output "
           "row 8 + 4F (+4F max forward, +4F gcn); best of %d calls after one warm-up\n",
           reps);
    static const char *const kinds[] = {"rmat", "uniform"};
    for (int k = 0; k < 2; k++) {
        gnn_csr_t a = {0};
        double t0 = now();
        rc = make_graph(kinds[k], n, (gnn_eid_t)((double)n * deg / 2), 42 + (uint64_t)k, &a);
        if (rc == 0) printf("graph %s: generated in %.1f s\n", kinds[k], now() - t0);
        if (rc == 0 && prefix) {
            char path[1024];
            snprintf(path, sizeof path, "%s.%s.csr", prefix, kinds[k]);
            rc = write_csr(path, &a);
        }
        if (rc == 0) rc = bench_graph(kinds[k], &a, reps, fs, n_f, copy_gbs);
        gnn_csr_free(&a);
        if (rc < 0) break;
    }
    return gnn_error_report("spmm_bench", NULL, rc);
usage:
    fprintf(stderr, "usage: spmm_bench [-n NODES] [-d DEGREE] [-r REPS] [-f F,F,...] [-p 0|1] "
                    "[-o PREFIX]\n");
    return 2;
}
